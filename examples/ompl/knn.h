/* Exact k nearest neighbours for the batched roadmap (roadmap.h): a static kd-tree
 * built once over every point, queried for many points at once on several threads.
 *
 * Distance: the squared Euclidean distance summed over the coordinates in order,
 * s = 0; s += (a_x - b_x)^2 for x = 0..dim-1 (knn.cpp is compiled without
 * floating-point contraction, so it is this sum bit for bit). Order: by that value,
 * ties broken by the smaller point index; a query point never counts as its own
 * neighbour (another point at the same place does, at distance 0). The answer is
 * therefore exactly that of a brute-force scan sorted by (distance, index), whatever
 * the tree's shape or the number of threads: the tree prunes a subtree only when a
 * lower bound of every distance in it (the query's offsets from the splitting
 * planes, summed in the same order and rounded the same way, so never above the
 * computed distance) is strictly greater than the k-th best so far.
 *
 * Threads: build and then query from any number of threads at once (queries only
 * read the tree); knn_batch spreads its queries over `threads` std::threads. */
#ifndef TDM_OMPL_KNN_H
#define TDM_OMPL_KNN_H

#include <stddef.h>

#include <utility>
#include <vector>

class knn_tree {
public:
    /* Builds the tree over n points of dim coordinates each, point i at pts[i * dim]
     * (copied). leaf: the most points in a leaf. */
    void build(const double *pts, size_t n, size_t dim, size_t leaf = 32);
    size_t size() const { return n_; }
    /* Point i's place in the tree's order (points of one leaf are consecutive): asking
     * for points in this order keeps the tree's nearby parts in cache. */
    size_t place(size_t i) const { return place_[i]; }
    /* The m = min(k, n - 1) nearest points to point self (an index below n), itself
     * excluded, nearest first (ties: smaller index first), into out[0..m). heap:
     * the caller's scratch (one per thread). Returns m. */
    size_t nearest(size_t self, size_t k, size_t *out, std::vector<std::pair<double, size_t>> &heap) const;

private:
    struct node {
        size_t lo, hi;        /* its points: perm_[lo..hi) */
        size_t left, right;   /* children (0: a leaf) */
        size_t dim;           /* the splitting coordinate */
        double split;         /* left's points have it <= split, right's >= split */
    };
    size_t build_node(const double *pts, size_t lo, size_t hi, size_t leaf);
    void search(size_t nd, const double *q, size_t self, size_t m, double *off,
                std::vector<std::pair<double, size_t>> &heap) const;
    size_t n_ = 0, dim_ = 0;
    std::vector<double> pts_;   /* the points in tree order (a leaf's points contiguous) */
    std::vector<size_t> perm_;  /* perm_[i]: the index of the i-th point in tree order */
    std::vector<size_t> place_; /* its inverse */
    std::vector<node> nodes_;   /* nodes_[0]: the root */
};

/* For each of the nq points queries[i] (indices below n): its m = min(k, n - 1) nearest
 * among the n points (knn_tree::nearest's order) into (*out)[i * m ..], over a tree built
 * once, the queries spread over `threads` threads (0 or 1: this one). Returns m. */
size_t knn_batch(const double *pts, size_t n, size_t dim, const size_t *queries, size_t nq, size_t k,
                 unsigned threads, std::vector<size_t> *out);

#endif
