/* examples/ompl's exact k nearest neighbours (knn.h, the batched roadmap's neighbour
 * search) against a brute-force scan: every point's distance to the query, sorted
 * by (squared distance, index), the query itself left out, the first min(k, n - 1)
 * kept. Random points in 7-D (the Panda's joint space) of several sizes, k = 1, 10
 * and more than the points; points added in rounds and only the new ones queried
 * (the roadmap's use); points on a coarse grid with duplicates (many equal
 * distances: the ties must go to the smaller index); one and several threads, and
 * trees of other leaf sizes. The seed printed. Compiled without floating-point
 * contraction, as knn.cpp is, so that both sum the same squares the same way. Built
 * only when OMPL is present (with ompl_plan). */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include "gen.h"
}
#include "knn.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x6b6e6e37ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(ompl_knn, .init = suite_init, .timeout = 120);

static const size_t DIM = 7;

/* The brute-force answer for point q among pts[0..n). */
static std::vector<size_t> brute(const std::vector<double> &pts, size_t n, size_t q, size_t k)
{
    std::vector<std::pair<double, size_t>> all;
    for (size_t i = 0; i < n; i++) {
        if (i == q) continue;
        double s = 0;
        for (size_t x = 0; x < DIM; x++) {
            double t = pts[q * DIM + x] - pts[i * DIM + x];
            s += t * t;
        }
        all.emplace_back(s, i);
    }
    std::sort(all.begin(), all.end());
    std::vector<size_t> out;
    for (size_t i = 0; i < std::min(k, all.size()); i++) out.push_back(all[i].second);
    return out;
}

static std::string list(const size_t *v, size_t m)
{
    std::string s;
    for (size_t i = 0; i < m; i++) s += (i ? " " : "") + std::to_string(v[i]);
    return s;
}

/* knn_batch over pts[0..n) for the queries, on `threads` threads, against brute force. */
static void check_batch(const std::vector<double> &pts, size_t n, const std::vector<size_t> &queries, size_t k,
                        unsigned threads, const char *what)
{
    std::vector<size_t> out(3, 12345);
    size_t m = knn_batch(pts.data(), n, DIM, queries.data(), queries.size(), k, threads, &out);
    cr_assert_eq(m, std::min(k, n ? n - 1 : 0), "%s: n %zu k %zu: m %zu", what, n, k, m);
    cr_assert_eq(out.size(), queries.size() * m, "%s: n %zu k %zu", what, n, k);
    for (size_t i = 0; i < queries.size(); i++) {
        std::vector<size_t> want = brute(pts, n, queries[i], k);
        cr_assert_eq(want.size(), m);
        cr_assert(std::equal(want.begin(), want.end(), out.begin() + i * m),
                  "%s: n %zu k %zu threads %u, point %zu: kd-tree [%s], brute force [%s]", what, n, k, threads,
                  queries[i], list(out.data() + i * m, m).c_str(), list(want.data(), m).c_str());
    }
}

static std::vector<double> random_points(gen_rng *g, size_t n)
{
    std::vector<double> p(n * DIM);
    for (double &v : p) v = gen_range(g, -2.9, 2.9);
    return p;
}

Test(ompl_knn, random_points_equal_brute_force)
{
    gen_rng g = {seed};
    const size_t sizes[] = {1, 2, 3, 9, 10, 11, 100, 1000, 4000};
    const size_t ks[] = {1, 10, 5000};
    for (size_t n : sizes) {
        std::vector<double> pts = random_points(&g, n);
        std::vector<size_t> all(n);
        for (size_t i = 0; i < n; i++) all[i] = i;
        for (size_t k : ks) {
            check_batch(pts, n, all, k, 1, "random, one thread");
            check_batch(pts, n, all, k, 3, "random, three threads");
        }
    }
}

Test(ompl_knn, rounds_query_only_the_new_points)
{
    /* the roadmap's use: each round appends points and asks for the new ones' neighbours
     * among all, old and new */
    gen_rng g = {seed ^ 0x5151};
    std::vector<double> pts;
    size_t n = 0;
    const size_t per_round[] = {2, 500, 700, 1, 1200};
    for (size_t add : per_round) {
        std::vector<double> more = random_points(&g, add);
        pts.insert(pts.end(), more.begin(), more.end());
        std::vector<size_t> fresh;
        for (size_t i = 0; i < add; i++) fresh.push_back(n + i);
        n += add;
        check_batch(pts, n, fresh, 10, 2, "rounds, k 10");
        check_batch(pts, n, fresh, 1, 2, "rounds, k 1");
    }
}

Test(ompl_knn, ties_go_to_the_smaller_index)
{
    /* coordinates in {0, 1, 2}: 3^7 places for 3000 points, so duplicates (distance 0)
     * and a great many equal distances */
    gen_rng g = {seed ^ 0x7e5};
    const size_t n = 3000;
    std::vector<double> pts(n * DIM);
    for (double &v : pts) v = (double)gen_int(&g, 0, 2);
    std::vector<size_t> all(n);
    for (size_t i = 0; i < n; i++) all[i] = i;
    check_batch(pts, n, all, 10, 2, "grid");
    check_batch(pts, n, all, 1, 1, "grid");
    check_batch(pts, n, all, 40, 3, "grid");
    /* every point at one place: the answer is the smallest other indices */
    std::vector<double> same(50 * DIM, 0.25);
    std::vector<size_t> q = {0, 7, 49};
    check_batch(same, 50, q, 10, 1, "one place");
    std::vector<size_t> out;
    knn_batch(same.data(), 50, DIM, q.data(), q.size(), 3, 1, &out);
    const size_t want[9] = {1, 2, 3, 0, 1, 2, 0, 1, 2};
    cr_assert(std::equal(out.begin(), out.end(), want), "one place: [%s]", list(out.data(), out.size()).c_str());
}

Test(ompl_knn, leaf_sizes)
{
    gen_rng g = {seed ^ 0x1eaf};
    const size_t n = 800;
    std::vector<double> pts = random_points(&g, n);
    for (size_t v = 0; v < 200; v++) pts[(n - 1 - v) * DIM + v % DIM] = 0.5; /* some shared coordinates */
    const size_t leaves[] = {1, 2, 8, 64, 1000};
    std::vector<std::pair<double, size_t>> heap;
    std::vector<size_t> out(12);
    for (size_t leaf : leaves) {
        knn_tree t;
        t.build(pts.data(), n, DIM, leaf);
        cr_assert_eq(t.size(), n);
        for (size_t q = 0; q < n; q++) {
            size_t m = t.nearest(q, 12, out.data(), heap);
            std::vector<size_t> want = brute(pts, n, q, 12);
            cr_assert_eq(m, 12);
            cr_assert(std::equal(want.begin(), want.end(), out.begin()), "leaf %zu, point %zu: [%s] vs [%s]", leaf, q,
                      list(out.data(), m).c_str(), list(want.data(), m).c_str());
        }
    }
    /* no points, or no query */
    std::vector<size_t> none;
    cr_assert_eq(knn_batch(pts.data(), 0, DIM, none.data(), 0, 10, 2, &out), 0);
    cr_assert(out.empty());
    cr_assert_eq(knn_batch(pts.data(), n, DIM, none.data(), 0, 10, 2, &out), 10);
    cr_assert(out.empty());
}
