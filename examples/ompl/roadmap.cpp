/* A probabilistic roadmap built in large batches (roadmap.h). */
#include "roadmap.h"

#include <math.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <numeric>
#include <queue>
#include <random>
#include <thread>

#include "knn.h"

static double now()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {
struct dsu {
    std::vector<size_t> p;
    size_t find(size_t x)
    {
        while (p[x] != x) x = p[x] = p[p[x]];
        return x;
    }
    void join(size_t a, size_t b) { p[find(a)] = find(b); }
};
} // namespace

int roadmap_solve(plan_checker *c, const std::vector<double> &lo, const std::vector<double> &hi,
                  const std::vector<double> &start, const std::vector<double> &goal, const roadmap_opts &o,
                  roadmap_result *out)
{
    const size_t j = start.size();
    const double t0 = now();
    std::mt19937_64 rng(o.seed);
    std::vector<double> nodes; /* j values per node; 0 start, 1 goal */
    std::vector<std::vector<std::pair<size_t, double>>> adj;
    dsu comp;
    auto dist = [&](size_t a, size_t b) {
        double s = 0;
        for (size_t x = 0; x < j; x++) {
            double d = nodes[a * j + x] - nodes[b * j + x];
            s += d * d;
        }
        return sqrt(s);
    };
    const unsigned nn_threads = o.nn_threads ? o.nn_threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<size_t> near;
    roadmap_result r;
    bool start_ok = false, goal_ok = false;
    for (size_t round = 0;; round++) {
        if (round > 0 && now() - t0 > o.time_limit) break;
        /* sample and check a batch of configurations (the first round leads with start and goal) */
        std::vector<double> batch;
        if (round == 0) {
            batch.insert(batch.end(), start.begin(), start.end());
            batch.insert(batch.end(), goal.begin(), goal.end());
        }
        for (size_t s = 0; s < o.samples; s++)
            for (size_t x = 0; x < j; x++) batch.push_back(std::uniform_real_distribution<double>(lo[x], hi[x])(rng));
        size_t nb = batch.size() / j;
        std::vector<uint8_t> valid(nb);
        double t_states = now();
        if (c->states(batch.data(), nb, valid.data()) < 0) return -1;
        if (round == 0) r.states_s = now() - t_states;
        double t_nn = now();
        if (round == 0) {
            start_ok = valid[0];
            goal_ok = valid[1];
            if (!start_ok || !goal_ok) break; /* no path can start or end there */
        }
        const size_t first_fresh = nodes.size() / j; /* this round's nodes: first_fresh, first_fresh + 1, ... */
        std::vector<size_t> fresh;
        for (size_t i = 0; i < nb; i++) {
            if (!valid[i]) continue;
            size_t id = nodes.size() / j;
            nodes.insert(nodes.end(), batch.begin() + i * j, batch.begin() + (i + 1) * j);
            adj.emplace_back();
            comp.p.push_back(id);
            fresh.push_back(id);
        }
        /* candidate edges: each new node to its k nearest among all nodes (knn.h: exact,
         * nearest first, ties by the smaller index), over a tree built for this round */
        const size_t m = knn_batch(nodes.data(), nodes.size() / j, j, fresh.data(), fresh.size(), o.k, nn_threads,
                                   &near);
        std::vector<std::pair<size_t, size_t>> cand;
        for (size_t f = 0; f < fresh.size(); f++) {
            const size_t id = fresh[f];
            for (size_t t = 0; t < m; t++) {
                const size_t nb_id = near[f * m + t];
                /* every edge has a new node, so no earlier round tried it; within this round
                 * an edge between two new nodes was listed already when the smaller one
                 * (listed first) had the larger among its neighbours */
                if (nb_id >= first_fresh && nb_id < id) {
                    const size_t *other = &near[(nb_id - first_fresh) * m];
                    if (std::find(other, other + m, id) != other + m) continue;
                }
                cand.emplace_back(std::min(id, nb_id), std::max(id, nb_id));
            }
        }
        if (round == 0) r.neighbours_s = now() - t_nn;
        std::vector<double> ab(cand.size() * 2 * j);
        for (size_t e = 0; e < cand.size(); e++) {
            std::copy(nodes.begin() + cand[e].first * j, nodes.begin() + (cand[e].first + 1) * j, ab.begin() + e * 2 * j);
            std::copy(nodes.begin() + cand[e].second * j, nodes.begin() + (cand[e].second + 1) * j,
                      ab.begin() + e * 2 * j + j);
        }
        std::vector<int64_t> first(cand.size());
        double t_motions = now();
        if (!cand.empty() && c->motions(ab.data(), cand.size(), o.resolution, false, first.data(), NULL) < 0) return -1;
        if (round == 0) r.motions_s = now() - t_motions;
        for (size_t e = 0; e < cand.size(); e++) {
            if (first[e] >= 0) continue;
            double w = dist(cand[e].first, cand[e].second);
            adj[cand[e].first].push_back({cand[e].second, w});
            adj[cand[e].second].push_back({cand[e].first, w});
            comp.join(cand[e].first, cand[e].second);
            r.edges++;
        }
        r.candidate_edges += cand.size();
        r.rounds = round + 1;
        if (round == 0) r.build_s = now() - t0;
        if (comp.find(0) == comp.find(1)) break;
    }
    r.nodes = nodes.size() / j;
    if (start_ok && goal_ok && comp.find(0) == comp.find(1)) {
        /* Dijkstra from the start (node 0) to the goal (node 1) */
        std::vector<double> d(r.nodes, INFINITY);
        std::vector<size_t> prev(r.nodes, SIZE_MAX);
        typedef std::pair<double, size_t> item;
        std::priority_queue<item, std::vector<item>, std::greater<item>> pq;
        d[0] = 0;
        pq.push({0, 0});
        while (!pq.empty()) {
            auto [du, u] = pq.top();
            pq.pop();
            if (du > d[u]) continue;
            if (u == 1) break;
            for (auto [v, w] : adj[u])
                if (du + w < d[v]) {
                    d[v] = du + w;
                    prev[v] = u;
                    pq.push({d[v], v});
                }
        }
        std::vector<size_t> chain;
        for (size_t v = 1; v != SIZE_MAX; v = prev[v]) chain.push_back(v);
        for (size_t i = chain.size(); i-- > 0;)
            r.path.insert(r.path.end(), nodes.begin() + chain[i] * j, nodes.begin() + (chain[i] + 1) * j);
        r.solved = true;
    }
    r.seconds = now() - t0;
    *out = std::move(r);
    return 0;
}
