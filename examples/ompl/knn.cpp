/* Exact k nearest neighbours over a static kd-tree (knn.h). Compiled with
 * -ffp-contract=off (CMakeLists.txt): distances and bounds are the plain sums of
 * squares knn.h describes. */
#include "knn.h"

#include <math.h>

#include <algorithm>
#include <atomic>
#include <thread>

namespace {

typedef std::pair<double, size_t> cand; /* (squared distance, index): compared as a pair */

/* The heap keeps the m best candidates with the worst on top (std::less on pairs:
 * a larger distance, or the same distance and a larger index, is worse). */
inline void offer(std::vector<cand> &heap, size_t m, double d, size_t idx)
{
    if (heap.size() < m) {
        heap.emplace_back(d, idx);
        std::push_heap(heap.begin(), heap.end());
    } else if (cand(d, idx) < heap.front()) {
        std::pop_heap(heap.begin(), heap.end());
        heap.back() = cand(d, idx);
        std::push_heap(heap.begin(), heap.end());
    }
}

} // namespace

void knn_tree::build(const double *pts, size_t n, size_t dim, size_t leaf)
{
    n_ = n;
    dim_ = dim;
    perm_.resize(n);
    for (size_t i = 0; i < n; i++) perm_[i] = i;
    nodes_.clear();
    if (leaf < 1) leaf = 1;
    if (n) build_node(pts, 0, n, leaf);
    pts_.resize(n * dim);
    place_.resize(n);
    for (size_t i = 0; i < n; i++) {
        place_[perm_[i]] = i;
        std::copy(pts + perm_[i] * dim, pts + (perm_[i] + 1) * dim, pts_.begin() + i * dim);
    }
}

size_t knn_tree::build_node(const double *pts, size_t lo, size_t hi, size_t leaf)
{
    size_t id = nodes_.size();
    nodes_.push_back(node{lo, hi, 0, 0, 0, 0});
    if (hi - lo <= leaf) return id;
    /* split the widest coordinate at its median */
    size_t best = 0;
    double spread = -1;
    for (size_t x = 0; x < dim_; x++) {
        double mn = INFINITY, mx = -INFINITY;
        for (size_t i = lo; i < hi; i++) {
            double v = pts[perm_[i] * dim_ + x];
            mn = std::min(mn, v);
            mx = std::max(mx, v);
        }
        if (mx - mn > spread) {
            spread = mx - mn;
            best = x;
        }
    }
    if (!(spread > 0)) return id; /* every point at one place (or NaN): a leaf */
    size_t mid = lo + (hi - lo) / 2;
    const size_t d = dim_;
    std::nth_element(perm_.begin() + lo, perm_.begin() + mid, perm_.begin() + hi,
                     [pts, d, best](size_t a, size_t b) { return pts[a * d + best] < pts[b * d + best]; });
    double split = pts[perm_[mid] * d + best];
    size_t l = build_node(pts, lo, mid, leaf);
    size_t r = build_node(pts, mid, hi, leaf);
    nodes_[id].left = l;
    nodes_[id].right = r;
    nodes_[id].dim = best;
    nodes_[id].split = split;
    return id;
}

/* off[x]: a lower bound of |q_x - p_x| for every point p of nd (as computed, signed);
 * the bound of the whole node is the sum of their squares in coordinate order. */
void knn_tree::search(size_t nd, const double *q, size_t self, size_t m, double *off,
                      std::vector<cand> &heap) const
{
    const node &N = nodes_[nd];
    if (N.left == 0) {
        for (size_t i = N.lo; i < N.hi; i++) {
            const size_t idx = perm_[i];
            const double *p = &pts_[i * dim_];
            double s = 0;
            for (size_t x = 0; x < dim_; x++) {
                double t = q[x] - p[x];
                s += t * t;
            }
            if (idx != self && (heap.size() < m || !(s > heap.front().first))) offer(heap, m, s, idx);
        }
        return;
    }
    const double diff = q[N.dim] - N.split;
    /* the near side first; the far side's points are at least |diff| away along N.dim */
    size_t near = diff <= 0 ? N.left : N.right, far = diff <= 0 ? N.right : N.left;
    search(near, q, self, m, off, heap);
    const double old = off[N.dim];
    off[N.dim] = diff;
    double bound = 0;
    for (size_t x = 0; x < dim_; x++) bound += off[x] * off[x];
    if (heap.size() < m || !(bound > heap.front().first)) search(far, q, self, m, off, heap);
    off[N.dim] = old;
}

size_t knn_tree::nearest(size_t self, size_t k, size_t *out, std::vector<cand> &heap) const
{
    const size_t m = std::min(k, n_ ? n_ - 1 : 0);
    heap.clear();
    if (m == 0) return 0;
    heap.reserve(m);
    double buf[32];
    std::vector<double> big;
    double *off = buf;
    if (dim_ > 32) {
        big.resize(dim_);
        off = big.data();
    }
    std::fill(off, off + dim_, 0.0);
    search(0, &pts_[place_[self] * dim_], self, m, off, heap);
    std::sort_heap(heap.begin(), heap.end()); /* ascending: nearest first, ties by index */
    for (size_t i = 0; i < m; i++) out[i] = heap[i].second;
    return m;
}

size_t knn_batch(const double *pts, size_t n, size_t dim, const size_t *queries, size_t nq, size_t k,
                 unsigned threads, std::vector<size_t> *out)
{
    const size_t m = std::min(k, n ? n - 1 : 0);
    out->assign(nq * m, 0);
    if (m == 0 || nq == 0) return m;
    knn_tree t;
    t.build(pts, n, dim);
    /* the queries in the tree's order (neighbouring queries visit the same leaves),
     * each answer in its own slot */
    std::vector<size_t> order(nq);
    for (size_t i = 0; i < nq; i++) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return t.place(queries[a]) < t.place(queries[b]); });
    const size_t chunk = 64;
    std::atomic<size_t> next(0);
    auto work = [&]() {
        std::vector<cand> heap;
        for (;;) {
            size_t b = next.fetch_add(chunk);
            if (b >= nq) break;
            for (size_t i = b; i < std::min(nq, b + chunk); i++)
                t.nearest(queries[order[i]], k, out->data() + order[i] * m, heap);
        }
    };
    size_t nt = std::min<size_t>(threads ? threads : 1, (nq + chunk - 1) / chunk);
    std::vector<std::thread> ts;
    for (size_t i = 1; i < nt; i++) ts.emplace_back(work);
    work();
    for (auto &th : ts) th.join();
    return m;
}
