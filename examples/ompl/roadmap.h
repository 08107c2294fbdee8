/* A probabilistic roadmap (PRM, Kavraki et al.) built in large batches, the way a
 * batched collision service wants to be asked: each round samples `samples`
 * configurations uniformly within the joint limits and checks them all in one
 * states() batch; every new free configuration is joined to its k nearest
 * roadmap nodes (Euclidean in joint space, exact, ties broken by the smaller node
 * index: knn.h's kd-tree, built once per round over every node and queried for the
 * round's new nodes on nn_threads threads), and all
 * the round's candidate edges are checked in one motions() batch (many motions
 * per request; yes/no answers). Rounds go on until start and goal (nodes of the
 * first round, checked with its samples) are in one component of the free edges,
 * or the time limit passes; the path is then the shortest one through the
 * roadmap (Dijkstra, Euclidean edge lengths).
 *
 * build_s times the first round alone (sampling, the state batch, the neighbour
 * search and the edge batch): the roadmap build time of the benchmark. */
#ifndef TDM_OMPL_ROADMAP_H
#define TDM_OMPL_ROADMAP_H

#include <stdint.h>

#include <vector>

#include "checker.h"

struct roadmap_opts {
    size_t samples = 2000;    /* configurations sampled per round */
    size_t k = 10;            /* neighbours per new node */
    double resolution = 0.05; /* motion check resolution (radians) */
    double time_limit = 10;   /* seconds, all rounds */
    uint64_t seed = 1;
    unsigned nn_threads = 0;  /* threads of the neighbour search (0: std::thread::hardware_concurrency()) */
};

struct roadmap_result {
    bool solved = false;
    std::vector<double> path; /* J values per state, start first */
    double build_s = 0;       /* the first round */
    double states_s = 0, neighbours_s = 0, motions_s = 0; /* ... of it: the state batch's check, the
                                                             neighbour search, the motion batch's check */
    double seconds = 0;       /* all rounds and the path search */
    size_t nodes = 0, edges = 0, candidate_edges = 0, rounds = 0;
};

/* lo, hi: joint limits; start, goal: J values each. Returns 0, or -1 when the
 * checker failed (its error()). */
int roadmap_solve(plan_checker *c, const std::vector<double> &lo, const std::vector<double> &hi,
                  const std::vector<double> &start, const std::vector<double> &goal, const roadmap_opts &o,
                  roadmap_result *out);

#endif
