/* gpu/ and the GPU engines of workpile/ that drive it (gpu_engine.h,
 * hybrid_engine.h): the device build of the shared geometry and both GPU
 * engines, against the host on the same inputs. Every test skips, with the reason, on a
 * machine without a usable GPU (or in a build without CUDA).
 *
 *  - the exact triangle test on the device gives the host's answer on inputs
 *    built to be near-degenerate in double (coplanar within rounding);
 *  - the engine gives the CPU engine's bool answers and contact counts on
 *    generated scenes (zero differences allowed: both are exact);
 *  - a frontier far too small for the batch is detected and re-run, never
 *    truncated, and still gives the same answers;
 *  - every traversal (TDM_GPU_TRAVERSE_PAIRS, _BLOCKS and _WIDE) does all of
 *    that, and an unknown one is refused;
 *  - an upload over the device-memory budget fails cleanly and leaves the
 *    engine usable;
 *  - the hybrid engine (host traversal, device tests) gives the CPU engine's
 *    answers on the same scenes, with large and with tiny workpiles, and its
 *    `first` pair really intersects; its buffers are charged to the budget and
 *    given back;
 *  - a scheduler on the device list {0, 0} (two independent GPU-resident engines
 *    on one GPU, the multi-GPU path as far as one GPU shows it) holds a copy of
 *    every tree per engine, gives the CPU engine's (and a one-engine
 *    scheduler's) answers to many threads at once, spreads their runs over both
 *    engines and one caller's runs in turn; meshes removed while other meshes
 *    are in use leave the others' answers alone and are freed on both engines;
 *    an upload that one engine cannot hold leaves nothing on either. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "geom/tri.h"
#include "gpu/gpu.h"
#include "gpu/gpu_geom.h"
#include "gpu/hybrid.h"
#include "gpu/internal.h"
#include "workpile/cpu_engine.h"
#include "workpile/gpu_engine.h"
#include "workpile/hybrid_engine.h"
#include "workpile/sched.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x9e0d1ce5ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(gpu, .init = suite_init);

static void require_gpu(void)
{
    const char *why = NULL;
    if (!tdm_gpu_available(&why)) cr_skip_test("no GPU: %s", why ? why : "unknown");
}

Test(gpu, tri_tri_matches_host_on_near_degenerate_inputs)
{
    require_gpu();
    gen_rng r = {seed};
    size_t n = 1u << 18;
    double *p = malloc(72 * n), *q = malloc(72 * n);
    uint8_t *out = malloc(n);
    cr_assert(p && q && out);
    for (size_t i = 0; i < n; i++) {
        double *a = &p[9 * i], *b = &q[9 * i];
        for (int k = 0; k < 9; k++) {
            a[k] = (float)gen_range(&r, -1, 1);
            b[k] = (float)gen_range(&r, -1, 1);
        }
        switch (i % 4) {
        case 1: /* a shared vertex */
            memcpy(b, a + 3, 3 * sizeof(double));
            break;
        case 2: /* exactly coplanar (z = 0), then both rotated: coplanar within rounding */
            for (int v = 0; v < 3; v++) a[3 * v + 2] = b[3 * v + 2] = 0;
            if (i & 4) {
                double c = cos(gen_range(&r, 0, 6)), s = sin(gen_range(&r, 0, 6));
                for (int v = 0; v < 6; v++) {
                    double *x = v < 3 ? &a[3 * v] : &b[3 * (v - 3)];
                    double y = c * x[1] - s * x[2], z = s * x[1] + c * x[2];
                    x[1] = y;
                    x[2] = z;
                }
            }
            break;
        case 3: /* b's vertices on a's plane up to rounding, full double mantissas */
            for (int v = 0; v < 3; v++) {
                double s1 = gen_range(&r, -0.5, 1.5), s2 = gen_range(&r, -0.5, 1.5);
                for (int k = 0; k < 3; k++)
                    b[3 * v + k] = a[k] + s1 * (a[3 + k] - a[k]) + s2 * (a[6 + k] - a[k]);
            }
            break;
        }
    }
    cr_assert_eq(tdm_gpu_tri_tri_batch(p, q, n, out), TDM_OK);
    size_t bad = 0, hits = 0;
    for (size_t i = 0; i < n; i++) {
        tdm_dvec3 a[3], b[3];
        for (int k = 0; k < 3; k++) {
            a[k] = tdm_d3(p[9 * i + 3 * k], p[9 * i + 3 * k + 1], p[9 * i + 3 * k + 2]);
            b[k] = tdm_d3(q[9 * i + 3 * k], q[9 * i + 3 * k + 1], q[9 * i + 3 * k + 2]);
        }
        int h = tdm_tri_tri_intersect(a, b);
        hits += (size_t)h;
        if (h != out[i] && bad++ < 5) cr_log_error("case %zu (kind %zu): host %d device %d", i, i % 4, h, out[i]);
    }
    cr_log_info("%zu cases, %zu intersecting", n, hits);
    cr_assert_eq(bad, 0, "%zu of %zu host/device answers differ (seed %llu)", bad, n, (unsigned long long)seed);
    free(p);
    free(q);
    free(out);
}

/* ---- the engine against the CPU engine --------------------------------------------- */

typedef struct scene {
    tdm_bvh *a, *b;
    gen_pose *poses;
    size_t n;
} scene;

static void scene_make(scene *s, tdm_mesh *env, tdm_mesh *robot, double spread, size_t n, gen_rng *r)
{
    cr_assert_eq(tdm_bvh_build(env, &s->a), TDM_OK);
    cr_assert_eq(tdm_bvh_build(robot, &s->b), TDM_OK);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
    s->n = n;
    s->poses = malloc(n * sizeof *s->poses);
    cr_assert(s->poses);
    for (size_t i = 0; i < n; i++) s->poses[i] = gen_pose_in_ball(r, tdm_d3(0, 0, 0), spread);
}

static void scene_free(scene *s)
{
    tdm_bvh_free(s->a);
    tdm_bvh_free(s->b);
    free(s->poses);
}

/* Runs every pose of s in `mode` on both engines and counts differences. */
/* The tasks of every pose of s, with the engine's copies of both trees. */
static tdm_task *scene_tasks(const scene *s, void *ga, void *gb, tdm_mode mode, uint32_t cap)
{
    tdm_task *t = malloc(s->n * sizeof *t);
    cr_assert(t);
    for (size_t i = 0; i < s->n; i++)
        t[i] = (tdm_task){.a = s->a, .b = s->b, .ga = ga, .gb = gb,
                          .b_in_a = tdm_xform_from_pose(s->poses[i].t, s->poses[i].q), .mode = mode,
                          .max_pairs = cap, .pairs = NULL};
    return t;
}

static size_t compare(tdm_backend *g, const scene *s, tdm_mode mode, uint32_t cap, size_t *colliding)
{
    void *ga, *gb;
    cr_assert_eq(g->ops->mesh_add(g, 0, s->a, &ga), TDM_OK);
    cr_assert_eq(g->ops->mesh_add(g, 0, s->b, &gb), TDM_OK);
    tdm_task *gt = scene_tasks(s, ga, gb, mode, cap);
    tdm_collide_result *gr = malloc(s->n * sizeof *gr);
    cr_assert(gr);
    tdm_task_list list = tdm_task_list_array(gt, s->n);
    cr_assert_eq(g->ops->run(g, 0, &list, gr), TDM_OK);
    size_t diff = 0;
    *colliding = 0;
    for (size_t i = 0; i < s->n; i++) {
        tdm_task t = gt[i];
        tdm_collide_result c;
        tdm_collide(&t, &c);
        *colliding += c.colliding;
        int same = c.colliding == gr[i].colliding && c.n_pairs == gr[i].n_pairs && c.truncated == gr[i].truncated;
        if (!same && diff++ < 5)
            cr_log_error("pose %zu: cpu %u/%u/%u gpu %u/%u/%u (colliding/pairs/truncated)", i, c.colliding, c.n_pairs,
                         c.truncated, gr[i].colliding, gr[i].n_pairs, gr[i].truncated);
    }
    g->ops->mesh_free(g, 0, ga);
    g->ops->mesh_free(g, 0, gb);
    free(gt);
    free(gr);
    return diff;
}

/* A GPU-resident engine with one lane on a pool of four threads. */
static tdm_backend *gpu_engine(const tdm_gpu_config *cfg, tdm_pool **pool)
{
    cr_assert_eq(tdm_pool_create(4, "test", pool), TDM_OK);
    tdm_gpu_engine_config ec = tdm_gpu_engine_config_default();
    if (cfg) ec.gpu = *cfg;
    tdm_backend *g = NULL;
    cr_assert_eq(tdm_gpu_engine_create(&ec, *pool, 1, &g, NULL), TDM_OK);
    return g;
}

static void check_scenes(const tdm_gpu_config *cfg)
{
    tdm_pool *pool;
    tdm_backend *g = gpu_engine(cfg, &pool);
    gen_rng r = {seed};
    scene sc[4];
    scene_make(&sc[0], gen_torus(2.0, 0.5, 64, 32), gen_sphere(0.6, 32), 3.0, 4000, &r);
    scene_make(&sc[1], gen_pile(&r, 3000, 2.0, 0.3), gen_pile(&r, 800, 0.8, 0.3), 2.5, 3000, &r);
    scene_make(&sc[2], gen_box(1, 1, 1), gen_slivers(&r, 500, 0.8, 1.0, 50.0), 2.0, 3000, &r);
    scene_make(&sc[3], gen_zero_area(&r, 2000, 40, 0.05), gen_zero_area(&r, 500, 20, 0.05), 2.0, 3000, &r);
    for (int k = 0; k < 4; k++) {
        size_t col;
        size_t d = compare(g, &sc[k], TDM_MODE_BOOL, 1, &col);
        cr_log_info("scene %d bool: %zu poses, %zu colliding, %zu differences", k, sc[k].n, col, d);
        cr_expect_eq(d, 0, "scene %d bool: %zu differences (seed %llu)", k, d, (unsigned long long)seed);
        d = compare(g, &sc[k], TDM_MODE_CONTACTS, 1000000, &col);
        cr_expect_eq(d, 0, "scene %d contacts: %zu differences (seed %llu)", k, d, (unsigned long long)seed);
        d = compare(g, &sc[k], TDM_MODE_CONTACTS, 3, &col);
        cr_expect_eq(d, 0, "scene %d contacts capped at 3: %zu differences (seed %llu)", k, d,
                     (unsigned long long)seed);
        scene_free(&sc[k]);
    }
    tdm_gpu_stats st;
    tdm_gpu_get_stats(tdm_gpu_engine_lane(g, 0), &st);
    cr_log_info("chunks %llu, levels %llu, re-runs after overflow %llu", (unsigned long long)st.runs,
                (unsigned long long)st.iterations, (unsigned long long)st.reruns);
    if (cfg && cfg->frontier_pairs <= 1024) cr_expect_gt(st.reruns, 0, "a 1024-pair frontier never overflowed");
    cr_log_info("small runs %llu, of them handing pairs over %llu", (unsigned long long)st.small_runs,
                (unsigned long long)st.small_handovers);
    if (cfg && cfg->small_tasks >= 4000 && cfg->traversal == TDM_GPU_TRAVERSE_PAIRS) cr_expect_gt(st.small_runs, 0, "no run went depth first");
    if (cfg && cfg->small_tasks >= 4000 && cfg->traversal == TDM_GPU_TRAVERSE_PAIRS && cfg->small_budget <= 3)
        cr_expect_gt(st.small_handovers, 0, "no depth-first run handed pairs over");
    if (cfg && cfg->small_tasks == 0) cr_expect_eq(st.small_runs, 0, "small_tasks 0, yet runs went depth first");
    g->ops->destroy(g);
    tdm_pool_destroy(pool);
}

Test(gpu, engine_matches_cpu_engine)
{
    require_gpu();
    check_scenes(NULL);
}

Test(gpu, frontier_overflow_is_rerun_not_truncated)
{
    require_gpu();
    /* a 1024-pair frontier inside a 64 MiB budget: batches overflow, grow to the
     * budget, then split; answers must not change */
    tdm_gpu_config cfg = tdm_gpu_config_default();
    cfg.frontier_pairs = 1024;
    cfg.memory_budget = 64u << 20;
    check_scenes(&cfg);
}

/* The other traversals on the generated scenes; with a small frontier, also
 * through overflow, growth to the budget and splitting. */
static void check_traversal(int traversal, int small_frontier)
{
    require_gpu();
    tdm_gpu_config cfg = tdm_gpu_config_default();
    cfg.traversal = traversal;
    if (small_frontier) {
        cfg.frontier_pairs = 1024;
        cfg.memory_budget = 64u << 20;
    }
    check_scenes(&cfg);
}

/* Small runs (gpu.h's small_tasks): every run depth first, with the default
 * budget, with a budget so small that most tasks are handed over to the levels
 * part way, with none (every task handed over untested), through overflowing
 * hand-overs; and no run depth first. The same answers as the CPU engine. */
static void check_small(uint32_t small_tasks, uint32_t budget, int small_frontier)
{
    require_gpu();
    tdm_gpu_config cfg = tdm_gpu_config_default();
    cfg.small_tasks = small_tasks;
    cfg.small_budget = budget;
    if (small_frontier) {
        cfg.frontier_pairs = 1024;
        cfg.memory_budget = 64u << 20;
    }
    check_scenes(&cfg);
}

Test(gpu, small_runs_match_cpu_engine) { check_small(1u << 20, TDM_GPU_SMALL_BUDGET, 0); }
Test(gpu, small_runs_handing_over_match_cpu_engine) { check_small(1u << 20, 3, 0); }
Test(gpu, small_runs_handing_everything_over_match_cpu_engine) { check_small(1u << 20, 0, 0); }
Test(gpu, small_runs_overflowing_hand_overs_are_rerun) { check_small(1u << 20, 2, 1); }
Test(gpu, levels_only_match_cpu_engine) { check_small(0, TDM_GPU_SMALL_BUDGET, 0); }

Test(gpu, blocks_traversal_matches_cpu_engine) { check_traversal(TDM_GPU_TRAVERSE_BLOCKS, 0); }
Test(gpu, blocks_traversal_frontier_overflow_is_rerun) { check_traversal(TDM_GPU_TRAVERSE_BLOCKS, 1); }
Test(gpu, wide_traversal_matches_cpu_engine) { check_traversal(TDM_GPU_TRAVERSE_WIDE, 0); }
Test(gpu, wide_traversal_frontier_overflow_is_rerun) { check_traversal(TDM_GPU_TRAVERSE_WIDE, 1); }

/* Placements past float's range (a client's pose of 1e200) among ordinary ones:
 * answered "apart", as the CPU engine answers them, by every traversal and the
 * hybrid engine (tdm_bounds_placement: the root box test separates them). Their
 * float boxes were inf and NaN before: never apart, every leaf pair tested in
 * overflowing predicates. */
static void far_scene(scene *s, gen_rng *r)
{
    scene_make(s, gen_torus(2.0, 0.5, 64, 32), gen_sphere(0.6, 32), 3.0, 2000, r);
    static const double far[] = {3.5e38, 1e39, 1e100, 1e200, 1e300, 1.7e308};
    for (size_t i = 1; i < s->n; i += 2) {
        double m = far[(i / 2) % 6] * ((i / 12) % 2 ? -1 : 1);
        int axis = (int)((i / 2) % 3);
        s->poses[i].t = tdm_d3(axis == 0 ? m : 0.5, axis == 1 ? m : 0.5, axis == 2 ? m : 0.5);
    }
}

static void expect_far_apart(tdm_backend *b, const scene *s, const char *what)
{
    for (int mode = 0; mode < 2; mode++) {
        void *ga, *gb;
        cr_assert_eq(b->ops->mesh_add(b, 0, s->a, &ga), TDM_OK);
        cr_assert_eq(b->ops->mesh_add(b, 0, s->b, &gb), TDM_OK);
        tdm_task *t = scene_tasks(s, ga, gb, mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, mode ? 1000000 : 1);
        tdm_collide_result *res = malloc(s->n * sizeof *res);
        cr_assert(res);
        tdm_task_list list = tdm_task_list_array(t, s->n);
        cr_assert_eq(b->ops->run(b, 0, &list, res), TDM_OK);
        size_t diff = 0, colliding = 0;
        for (size_t i = 0; i < s->n; i++) {
            tdm_collide_result c;
            tdm_collide(&t[i], &c);
            colliding += c.colliding;
            if (i % 2) cr_assert(!c.colliding, "%s: the CPU engine says pose %zu collides", what, i);
            diff += c.colliding != res[i].colliding || c.n_pairs != res[i].n_pairs || c.truncated != res[i].truncated;
        }
        cr_assert(colliding > 0, "%s: the near poses should collide sometimes", what);
        cr_expect_eq(diff, 0, "%s, mode %d: %zu answers differ from the CPU engine's", what, mode, diff);
        b->ops->mesh_free(b, 0, ga);
        b->ops->mesh_free(b, 0, gb);
        free(t);
        free(res);
    }
}

Test(gpu, far_placements_are_apart)
{
    require_gpu();
    gen_rng r = {seed ^ 0xfa2};
    scene s;
    far_scene(&s, &r);
    static const int traversals[] = {TDM_GPU_TRAVERSE_PAIRS, TDM_GPU_TRAVERSE_BLOCKS, TDM_GPU_TRAVERSE_WIDE};
    for (int k = 0; k < 3; k++) {
        tdm_gpu_config cfg = tdm_gpu_config_default();
        cfg.traversal = traversals[k];
        tdm_pool *pool;
        tdm_backend *g = gpu_engine(&cfg, &pool);
        expect_far_apart(g, &s, k == 0 ? "pairs traversal" : k == 1 ? "blocks traversal" : "wide traversal");
        if (k == 0) {
            tdm_hybrid_config hc = tdm_hybrid_config_default();
            hc.workers = 4;
            tdm_backend *h;
            cr_assert_eq(tdm_hybrid_engine_create(g, pool, &hc, &h), TDM_OK);
            expect_far_apart(h, &s, "hybrid");
            h->ops->destroy(h);
        }
        g->ops->destroy(g);
        tdm_pool_destroy(pool);
    }
    scene_free(&s);
}

Test(gpu, unknown_traversal_is_refused)
{
    require_gpu();
    tdm_gpu_config cfg = tdm_gpu_config_default();
    cfg.traversal = 7;
    tdm_gpu *g = NULL;
    cr_assert_eq(tdm_gpu_create(&cfg, &g, NULL), TDM_EINVAL);
    cr_assert_null(g);
}

Test(gpu, upload_over_budget_fails_cleanly)
{
    require_gpu();
    tdm_gpu_config cfg = tdm_gpu_config_default();
    cfg.frontier_pairs = 1024;
    cfg.memory_budget = 1u << 20; /* 1 MiB: scratch fits, a big mesh does not */
    tdm_pool *pool;
    tdm_backend *g = gpu_engine(&cfg, &pool);
    tdm_mesh *big = gen_sphere(1.0, 256), *small = gen_box(1, 1, 1);
    tdm_bvh *bb, *bs;
    cr_assert_eq(tdm_bvh_build(big, &bb), TDM_OK);
    cr_assert_eq(tdm_bvh_build(small, &bs), TDM_OK);
    void *m = (void *)1;
    cr_assert_eq(g->ops->mesh_add(g, 0, bb, &m), TDM_EGPUMEM);
    cr_assert_null(m);
    tdm_backend_stats st;
    g->ops->get_stats(g, 0, &st);
    cr_assert_eq(st.mesh_bytes, 0, "a failed upload holds no memory");
    /* the engine still works */
    void *ga, *gb;
    cr_assert_eq(g->ops->mesh_add(g, 0, bs, &ga), TDM_OK);
    cr_assert_eq(g->ops->mesh_add(g, 0, bs, &gb), TDM_OK);
    tdm_task t[2] = {{.a = bs, .b = bs, .ga = ga, .gb = gb, .b_in_a = tdm_xform_identity(), .mode = TDM_MODE_BOOL,
                      .max_pairs = 1},
                     {.a = bs, .b = bs, .ga = ga, .gb = gb,
                      .b_in_a = tdm_xform_from_pose(tdm_d3(5, 0, 0), (tdm_quat){0, 0, 0, 1}), .mode = TDM_MODE_BOOL,
                      .max_pairs = 1}};
    tdm_collide_result res[2];
    tdm_task_list list = tdm_task_list_array(t, 2);
    cr_assert_eq(g->ops->run(g, 0, &list, res), TDM_OK);
    cr_assert_eq(res[0].colliding, 1, "a box touches itself");
    cr_assert_eq(res[1].colliding, 0, "boxes 5 apart do not touch");
    g->ops->mesh_free(g, 0, ga);
    g->ops->mesh_free(g, 0, gb);
    g->ops->destroy(g);
    tdm_pool_destroy(pool);
    tdm_bvh_free(bb);
    tdm_bvh_free(bs);
    tdm_mesh_free(big);
    tdm_mesh_free(small);
}

/* The trees' arena (gpu/resident.h): with chunks of 256 KiB, trees of several sizes (some larger
 * than half a chunk, which get chunks of their own) are placed, freed and placed again in the
 * places others left, while other trees stay resident; every run matches the CPU engine, the
 * resident trees too after the others came and went, and once no tree is left the chunks and
 * their bytes are given back. */
Test(gpu, tree_arena_reuses_places_and_gives_memory_back, .timeout = 300)
{
    require_gpu();
    cr_assert_eq(setenv("TDM_GPU_MESH_CHUNK_KB", "256", 1), 0);
    tdm_pool *pool;
    tdm_backend *g = gpu_engine(NULL, &pool);
    tdm_gpu *lane = tdm_gpu_engine_lane(g, 0);
    tdm_gpu_stats before, st;
    tdm_gpu_get_stats(lane, &before);
    cr_assert_eq(before.arena_chunks, 0);
    gen_rng r = {seed};
    /* resident throughout: a small pair and a large one */
    scene keep[2];
    scene_make(&keep[0], gen_sphere(0.7, 12), gen_box(0.5, 0.5, 0.5), 1.5, 500, &r);
    scene_make(&keep[1], gen_pile(&r, 3000, 2.0, 0.3), gen_torus(0.8, 0.2, 24, 12), 2.5, 500, &r);
    void *kg[2][2];
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(g->ops->mesh_add(g, 0, keep[k].a, &kg[k][0]), TDM_OK);
        cr_assert_eq(g->ops->mesh_add(g, 0, keep[k].b, &kg[k][1]), TDM_OK);
    }
    tdm_gpu_get_stats(lane, &st);
    cr_assert_geq(st.arena_chunks, 2, "a small chunk and the large tree's own: %llu chunks",
                  (unsigned long long)st.arena_chunks);
    size_t chunks_most = 0;
    for (int round = 0; round < 6; round++) {
        /* others come and go: each compare uploads its two trees, runs and frees them */
        scene sc;
        if (round % 3 == 0) scene_make(&sc, gen_sphere(0.6, 8 + 4 * round), gen_box(0.3, 0.4, 0.5), 1.5, 400, &r);
        else if (round % 3 == 1) scene_make(&sc, gen_pile(&r, 500 * round, 1.5, 0.3), gen_sphere(0.4, 10), 2.0, 400, &r);
        else scene_make(&sc, gen_torus(1.0, 0.3, 16 * round, 8 * round), gen_pile(&r, 200, 0.6, 0.2), 2.0, 400, &r);
        size_t col;
        cr_expect_eq(compare(g, &sc, TDM_MODE_BOOL, 1, &col), 0, "round %d: differences (seed %llu)", round,
                     (unsigned long long)seed);
        cr_expect_eq(compare(g, &sc, TDM_MODE_CONTACTS, 1000000, &col), 0, "round %d contacts: differences", round);
        scene_free(&sc);
        tdm_gpu_get_stats(lane, &st);
        if (st.arena_chunks > chunks_most) chunks_most = st.arena_chunks;
        /* the resident trees still answer as the CPU engine does */
        for (int k = 0; k < 2; k++) {
            tdm_task *t = scene_tasks(&keep[k], kg[k][0], kg[k][1], TDM_MODE_CONTACTS, 1000000);
            tdm_collide_result *res = malloc(keep[k].n * sizeof *res);
            cr_assert(res);
            tdm_task_list list = tdm_task_list_array(t, keep[k].n);
            cr_assert_eq(g->ops->run(g, 0, &list, res), TDM_OK);
            size_t diff = 0;
            for (size_t i = 0; i < keep[k].n; i++) {
                tdm_collide_result c;
                tdm_collide(&t[i], &c);
                diff += c.colliding != res[i].colliding || c.n_pairs != res[i].n_pairs;
            }
            cr_expect_eq(diff, 0, "round %d: resident pair %d: %zu differences", round, k, diff);
            free(t);
            free(res);
        }
    }
    /* the freed places were used again: three chunks resident, two at most for a round's trees
       larger than half a chunk and one spare, against a new one for each of the 12 uploads */
    cr_log_info("%zu chunks at most", chunks_most);
    cr_expect_leq(chunks_most, 7, "%zu chunks at most", chunks_most);
    tdm_gpu_get_stats(lane, &st);
    cr_assert_gt(st.mesh_bytes, 0);
    cr_assert_geq(st.device_bytes, before.device_bytes + st.mesh_bytes + st.arena_bytes,
                  "the trees and the chunks' other bytes count in device_bytes");
    for (int k = 0; k < 2; k++) {
        g->ops->mesh_free(g, 0, kg[k][0]);
        g->ops->mesh_free(g, 0, kg[k][1]);
        scene_free(&keep[k]);
    }
    tdm_gpu_get_stats(lane, &st);
    cr_assert_eq(st.mesh_bytes, 0);
    cr_assert_eq(st.arena_chunks, 0, "no tree left, yet %llu chunks held", (unsigned long long)st.arena_chunks);
    cr_assert_eq(st.arena_bytes, 0, "no chunk, yet %llu arena bytes", (unsigned long long)st.arena_bytes);
    g->ops->destroy(g);
    tdm_pool_destroy(pool);
}

/* Large trees (over half a chunk, chunks of their own) that come and go while another tree stays:
 * once the first of them has come, their chunks are kept as spares and taken again, with no chunk
 * made or given back to the device (a release is a cudaFree, which waits for the device and stalls
 * every other thread's runs); trees of about one size take each other's places. Every run matches
 * the CPU engine. When the budget needs the room (another engine's scratch), the spares give way:
 * the growth that needs them is granted, and one that the spares cannot cover is refused. */
Test(gpu, large_trees_that_come_and_go_reuse_spare_chunks_the_budget_can_take_back, .timeout = 300)
{
    require_gpu();
    cr_assert_eq(setenv("TDM_GPU_MESH_CHUNK_KB", "256", 1), 0);
    tdm_pool *pool;
    tdm_backend *g = gpu_engine(NULL, &pool);
    tdm_gpu *lane = tdm_gpu_engine_lane(g, 0);
    gen_rng r = {seed};
    scene keep;
    scene_make(&keep, gen_sphere(0.7, 12), gen_box(0.5, 0.5, 0.5), 1.5, 200, &r);
    void *kg[2];
    cr_assert_eq(g->ops->mesh_add(g, 0, keep.a, &kg[0]), TDM_OK);
    cr_assert_eq(g->ops->mesh_add(g, 0, keep.b, &kg[1]), TDM_OK);
    /* three large trees of about one size (piles of 2400-2600 triangles: ~0.2-0.3 MiB each) and a
       small one beside each */
    scene big[3];
    for (int k = 0; k < 3; k++)
        scene_make(&big[k], gen_pile(&r, 2400 + 100 * k, 2.0, 0.3), gen_sphere(0.4, 10), 2.5, 300, &r);
    tdm_gpu_stats st, first;
    for (int round = 0; round < 12; round++) {
        size_t col;
        cr_expect_eq(compare(g, &big[round % 3], TDM_MODE_BOOL, 1, &col), 0, "round %d: differences (seed %llu)",
                     round, (unsigned long long)seed);
        if (round == 2) tdm_gpu_get_stats(lane, &first);
    }
    tdm_gpu_get_stats(lane, &st);
    cr_log_info("large trees: %llu chunks made and %llu released in the first three rounds, %llu and %llu in the "
                "nine after; %llu held",
                (unsigned long long)first.arena_made, (unsigned long long)first.arena_released,
                (unsigned long long)(st.arena_made - first.arena_made),
                (unsigned long long)(st.arena_released - first.arena_released), (unsigned long long)st.arena_chunks);
    cr_expect_eq(st.arena_made, first.arena_made, "large trees that came back made %llu new chunks",
                 (unsigned long long)(st.arena_made - first.arena_made));
    cr_expect_eq(st.arena_released, first.arena_released, "large trees that left released %llu chunks",
                 (unsigned long long)(st.arena_released - first.arena_released));
    cr_assert_geq(st.arena_chunks, 2, "the resident trees' chunk and a spare");
    cr_assert_gt(st.arena_bytes, 0, "spare chunks: bytes no tree holds");
    /* the budget needs the spares' room: a growth past what is free but within it with the empty
       chunks' bytes (all the arena's bytes no tree holds but the resident trees' chunk's, at most a
       chunk) is granted, and they are given back */
    cr_assert_gt(st.arena_bytes, 256u << 10, "two large spares: %llu bytes", (unsigned long long)st.arena_bytes);
    uint64_t free_b = st.budget_bytes - st.device_bytes;
    int64_t want = (int64_t)(free_b + st.arena_bytes - (256u << 10));
    cr_assert_eq(tdm_gpu_account(lane, want), TDM_OK, "a growth the spares make room for");
    tdm_gpu_stats after;
    tdm_gpu_get_stats(lane, &after);
    cr_expect_gt(after.arena_released, st.arena_released, "the spares given back");
    cr_expect_lt(after.arena_chunks, st.arena_chunks);
    cr_expect_geq(after.arena_chunks, 1, "the resident trees' chunk stays");
    cr_expect_leq(after.device_bytes, after.budget_bytes);
    tdm_gpu_account(lane, -want);
    /* more than the free bytes and every spare: refused, nothing taken */
    tdm_gpu_get_stats(lane, &st);
    cr_expect_eq(tdm_gpu_account(lane, (int64_t)(st.budget_bytes - st.device_bytes + st.arena_bytes) + (1 << 20)),
                 TDM_EGPUMEM);
    tdm_gpu_get_stats(lane, &after);
    cr_expect_eq(after.device_bytes, st.device_bytes - (st.arena_bytes - after.arena_bytes),
                 "a refused growth took nothing (the spares it released aside)");
    /* the resident trees still answer as the CPU engine does, and a large tree still comes */
    tdm_task *t = scene_tasks(&keep, kg[0], kg[1], TDM_MODE_CONTACTS, 1000000);
    tdm_collide_result *res = malloc(keep.n * sizeof *res);
    cr_assert(res);
    tdm_task_list list = tdm_task_list_array(t, keep.n);
    cr_assert_eq(g->ops->run(g, 0, &list, res), TDM_OK);
    size_t diff = 0;
    for (size_t i = 0; i < keep.n; i++) {
        tdm_collide_result c;
        tdm_collide(&t[i], &c);
        diff += c.colliding != res[i].colliding || c.n_pairs != res[i].n_pairs;
    }
    cr_expect_eq(diff, 0, "the resident pair: %zu differences", diff);
    free(t);
    free(res);
    size_t col;
    cr_expect_eq(compare(g, &big[0], TDM_MODE_CONTACTS, 1000000, &col), 0, "a large tree after the trim");
    g->ops->mesh_free(g, 0, kg[0]);
    g->ops->mesh_free(g, 0, kg[1]);
    tdm_gpu_get_stats(lane, &st);
    cr_assert_eq(st.arena_chunks, 0, "no tree left, yet %llu chunks held", (unsigned long long)st.arena_chunks);
    cr_assert_eq(st.arena_bytes, 0);
    scene_free(&keep);
    for (int k = 0; k < 3; k++) scene_free(&big[k]);
    g->ops->destroy(g);
    tdm_pool_destroy(pool);
}

/* TDM_GPU_MESH_ARENA=0 (A/B runs): an allocation per array, as before the arena */
Test(gpu, without_the_tree_arena_trees_are_allocated_each)
{
    require_gpu();
    cr_assert_eq(setenv("TDM_GPU_MESH_ARENA", "0", 1), 0);
    tdm_pool *pool;
    tdm_backend *g = gpu_engine(NULL, &pool);
    gen_rng r = {seed};
    scene sc;
    scene_make(&sc, gen_torus(2.0, 0.5, 32, 16), gen_sphere(0.6, 16), 3.0, 1000, &r);
    size_t col;
    cr_expect_eq(compare(g, &sc, TDM_MODE_BOOL, 1, &col), 0);
    void *ga;
    cr_assert_eq(g->ops->mesh_add(g, 0, sc.a, &ga), TDM_OK);
    tdm_gpu_stats st;
    tdm_gpu_get_stats(tdm_gpu_engine_lane(g, 0), &st);
    cr_expect_eq(st.arena_chunks, 0, "an arena chunk without the arena");
    cr_expect_gt(st.mesh_bytes, 0);
    g->ops->mesh_free(g, 0, ga);
    scene_free(&sc);
    g->ops->destroy(g);
    tdm_pool_destroy(pool);
}

/* ---- the hybrid engine against the CPU engine ----------------------------------------- */

/* Does the pair named by mesh triangle ids (a_tri in s->a, b_tri in s->b) intersect
 * with B placed by x? The trees keep the ids of their leaf-order slots. */
static int pair_intersects(const scene *s, tdm_pair p, const tdm_xform *x)
{
    uint32_t sa = 0, sb = 0;
    while (sa < s->a->n_tris && s->a->tri_ids[sa] != p.a_tri) sa++;
    while (sb < s->b->n_tris && s->b->tri_ids[sb] != p.b_tri) sb++;
    if (sa == s->a->n_tris || sb == s->b->n_tris) return 0;
    tdm_dvec3 ta[3], tb[3];
    for (int k = 0; k < 3; k++) {
        const float *va = &s->a->tri_verts[9 * (size_t)sa + 3 * k], *vb = &s->b->tri_verts[9 * (size_t)sb + 3 * k];
        ta[k] = tdm_d3(va[0], va[1], va[2]);
        tb[k] = tdm_xform_apply(x, tdm_d3(vb[0], vb[1], vb[2]));
    }
    return tdm_tri_tri_intersect(ta, tb);
}

/* Runs every pose of s in `mode` on the hybrid and the CPU engine and counts
 * differences in colliding, n_pairs and truncated, and `first` pairs that do not
 * intersect. */
static size_t compare_hybrid(tdm_backend *h, const scene *s, tdm_mode mode, uint32_t cap, size_t *colliding)
{
    void *ga, *gb;
    cr_assert_eq(h->ops->mesh_add(h, 0, s->a, &ga), TDM_OK);
    cr_assert_eq(h->ops->mesh_add(h, 0, s->b, &gb), TDM_OK);
    tdm_task *ht = scene_tasks(s, ga, gb, mode, cap);
    tdm_collide_result *hr = malloc(s->n * sizeof *hr);
    cr_assert(hr);
    tdm_task_list list = tdm_task_list_array(ht, s->n);
    cr_assert_eq(h->ops->run(h, 0, &list, hr), TDM_OK);
    size_t diff = 0, bad_first = 0, no_boxes = 0;
    *colliding = 0;
    for (size_t i = 0; i < s->n; i++) {
        tdm_task t = ht[i];
        tdm_collide_result c;
        tdm_collide(&t, &c);
        *colliding += c.colliding;
        int same = c.colliding == hr[i].colliding && c.n_pairs == hr[i].n_pairs && c.truncated == hr[i].truncated;
        if (!same && diff++ < 5)
            cr_log_error("pose %zu: cpu %u/%u/%u hybrid %u/%u/%u (colliding/pairs/truncated)", i, c.colliding,
                         c.n_pairs, c.truncated, hr[i].colliding, hr[i].n_pairs, hr[i].truncated);
        if (hr[i].colliding && !pair_intersects(s, hr[i].first, &ht[i].b_in_a) && bad_first++ < 5)
            cr_log_error("pose %zu: first pair (%u, %u) does not intersect", i, hr[i].first.a_tri, hr[i].first.b_tri);
        no_boxes += hr[i].box_tests == 0 || (hr[i].colliding && hr[i].tri_tests == 0);
    }
    cr_expect_eq(bad_first, 0, "%zu first pairs do not intersect", bad_first);
    cr_expect_eq(no_boxes, 0, "%zu results count no work", no_boxes);
    h->ops->mesh_free(h, 0, ga);
    h->ops->mesh_free(h, 0, gb);
    free(ht);
    free(hr);
    return diff;
}

static void check_hybrid_scenes(const tdm_hybrid_config *cfg)
{
    tdm_pool *pool;
    tdm_backend *g = gpu_engine(NULL, &pool), *h;
    cr_assert_eq(tdm_hybrid_engine_create(g, pool, cfg, &h), TDM_OK);
    gen_rng r = {seed};
    scene sc[4];
    scene_make(&sc[0], gen_torus(2.0, 0.5, 64, 32), gen_sphere(0.6, 32), 3.0, 4000, &r);
    scene_make(&sc[1], gen_pile(&r, 3000, 2.0, 0.3), gen_pile(&r, 800, 0.8, 0.3), 2.5, 3000, &r);
    scene_make(&sc[2], gen_box(1, 1, 1), gen_slivers(&r, 500, 0.8, 1.0, 50.0), 2.0, 3000, &r);
    scene_make(&sc[3], gen_zero_area(&r, 2000, 40, 0.05), gen_zero_area(&r, 500, 20, 0.05), 2.0, 3000, &r);
    for (int k = 0; k < 4; k++) {
        size_t col;
        size_t d = compare_hybrid(h, &sc[k], TDM_MODE_BOOL, 1, &col);
        cr_log_info("scene %d bool: %zu poses, %zu colliding, %zu differences", k, sc[k].n, col, d);
        cr_expect_eq(d, 0, "scene %d bool: %zu differences (seed %llu)", k, d, (unsigned long long)seed);
        d = compare_hybrid(h, &sc[k], TDM_MODE_CONTACTS, 1000000, &col);
        cr_expect_eq(d, 0, "scene %d contacts: %zu differences (seed %llu)", k, d, (unsigned long long)seed);
        d = compare_hybrid(h, &sc[k], TDM_MODE_CONTACTS, 3, &col);
        cr_expect_eq(d, 0, "scene %d contacts capped at 3: %zu differences (seed %llu)", k, d,
                     (unsigned long long)seed);
        scene_free(&sc[k]);
    }
    tdm_hybrid_stats st;
    tdm_hybrid_get_stats(tdm_hybrid_engine_hybrid(h), &st);
    cr_assert_eq(st.runs, 12);
    cr_assert(st.workpiles > 0 && st.box_entries > 0 && st.tri_entries > 0);
    cr_log_info("hybrid: %llu workpiles, %.0f entries each on average, %.3f s, %.3f s in kernels",
                (unsigned long long)st.workpiles, (double)(st.box_entries + st.tri_entries) / (double)st.workpiles,
                st.seconds, st.gpu_seconds);
    h->ops->destroy(h);
    g->ops->destroy(g);
    tdm_pool_destroy(pool);
}

Test(gpu, hybrid_matches_cpu_engine)
{
    require_gpu();
    tdm_hybrid_config cfg = tdm_hybrid_config_default();
    cfg.workers = 4;
    check_hybrid_scenes(&cfg);
}

Test(gpu, hybrid_with_tiny_workpiles_matches_cpu_engine)
{
    require_gpu();
    /* 1021 entries per workpile, three threads on one stream: many workpiles (about
     * 200 000), pending pairs far beyond one workpile, leaf pairs crowding out box
     * pairs. (97 entries took 70 s on an H100; this takes a tenth of that.) The
     * pool has four threads: one worker's share waits for a free thread. */
    tdm_hybrid_config cfg = tdm_hybrid_config_default();
    cfg.workers = 3;
    cfg.streams = 1;
    cfg.workpile_pairs = 1021;
    check_hybrid_scenes(&cfg);
}

Test(gpu, hybrid_buffers_are_charged_to_the_budget)
{
    require_gpu();
    tdm_gpu_config gc = tdm_gpu_config_default();
    gc.frontier_pairs = 1024;
    gc.memory_budget = 64u << 20;
    tdm_gpu *g;
    cr_assert_eq(tdm_gpu_create(&gc, &g, NULL), TDM_OK);
    tdm_gpu_stats before, during, after;
    tdm_gpu_get_stats(g, &before);
    tdm_hybrid_config cfg = tdm_hybrid_config_default();
    cfg.workers = 64;
    cfg.workpile_pairs = 1u << 20; /* 64 workers x 2 workpiles x 13 MiB: far over 64 MiB */
    tdm_hybrid *h = (tdm_hybrid *)1;
    cr_assert_eq(tdm_hybrid_create(g, &cfg, &h), TDM_EGPUMEM);
    cr_assert_null(h);
    tdm_gpu_get_stats(g, &after);
    cr_assert_eq(after.device_bytes, before.device_bytes, "a failed create holds no memory");
    cfg.workers = 2;
    cfg.workpile_pairs = 4096;
    cr_assert_eq(tdm_hybrid_create(g, &cfg, &h), TDM_OK);
    tdm_gpu_get_stats(g, &during);
    cr_assert_geq(during.device_bytes, before.device_bytes + 2 * 2 * 4096 * 13, "workpile buffers are accounted");
    /* the engine works */
    tdm_mesh *box = gen_box(1, 1, 1);
    tdm_bvh *bs;
    cr_assert_eq(tdm_bvh_build(box, &bs), TDM_OK);
    tdm_gpu_mesh *ga, *gb;
    cr_assert_eq(tdm_gpu_mesh_upload(g, bs, &ga), TDM_OK);
    cr_assert_eq(tdm_gpu_mesh_upload(g, bs, &gb), TDM_OK);
    tdm_task t[3] = {
        {.a = bs, .b = bs, .ga = ga, .gb = gb, .b_in_a = tdm_xform_identity(), .mode = TDM_MODE_BOOL, .max_pairs = 1},
        {.a = bs, .b = bs, .ga = ga, .gb = gb, .b_in_a = tdm_xform_from_pose(tdm_d3(5, 0, 0), (tdm_quat){0, 0, 0, 1}),
         .mode = TDM_MODE_BOOL, .max_pairs = 1},
        {.a = bs, .b = bs, .ga = ga, .gb = gb, .b_in_a = tdm_xform_from_pose(tdm_d3(2, 0, 0), (tdm_quat){0, 0, 0, 1}),
         .mode = TDM_MODE_CONTACTS, .max_pairs = 1000}};
    tdm_collide_result res[3];
    cr_assert_eq(tdm_hybrid_begin(h, t, 3, res), TDM_OK);
    for (int k = 0; k < tdm_hybrid_workers(h); k++) tdm_hybrid_work(h, k); /* one after another: a valid schedule */
    cr_assert_eq(tdm_hybrid_end(h), TDM_OK);
    cr_assert_eq(res[0].colliding, 1, "a box touches itself");
    cr_assert_eq(res[1].colliding, 0, "boxes 5 apart do not touch");
    tdm_task c = t[2];
    tdm_collide_result cr;
    tdm_collide(&c, &cr);
    cr_assert_eq(res[2].n_pairs, cr.n_pairs, "boxes sharing a face: %u pairs, the CPU engine %u", res[2].n_pairs,
                 cr.n_pairs);
    cr_assert_gt(cr.n_pairs, 0);
    tdm_gpu_mesh_free(g, ga);
    tdm_gpu_mesh_free(g, gb);
    tdm_hybrid_destroy(h);
    tdm_gpu_get_stats(g, &after);
    cr_assert_eq(after.device_bytes, before.device_bytes, "destroy gives the buffers back");
    tdm_gpu_destroy(g);
    tdm_bvh_free(bs);
    tdm_mesh_free(box);
}

/* ---- several GPU engines in one scheduler (issue 14, point 9) ----------------------
 *
 * The scheduler's device list {0, 0}: two GPU-resident engines on one GPU, each with
 * its own lanes (streams, buffers) and its own copy of every tree, which is what a
 * two-GPU host gets, minus the second GPU's speed. */

enum { MG_MESHES = 4, MG_POSES = 6000, MG_THREADS = 8, MG_ROUNDS = 6, MG_BATCH = 1500 };

typedef struct mg_world {
    tdm_bvh *bvh[MG_MESHES];
    tdm_scene *scene;
    tdm_xform *poses;                     /* MG_POSES x scene->n_movable */
    tdm_sched_result want[2][MG_POSES];   /* the CPU engine's answers: bool, contacts (counted) */
} mg_world;

static tdm_bvh *mg_tree(tdm_mesh *m)
{
    cr_assert(m, "generating a mesh");
    tdm_bvh *b = NULL;
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    tdm_mesh_free(m);
    return b;
}

static tdm_sched *mg_sched(const int *devices, int n, int lanes, uint64_t memory)
{
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = n ? TDM_BACKEND_GPU : TDM_BACKEND_CPU;
    c.calibrate = 0;
    c.lanes = lanes;
    c.gpu_memory = memory;
    for (int k = 0; k < n; k++) c.gpu_devices[k] = devices[k];
    c.n_gpu_devices = n;
    tdm_sched *e = NULL;
    char why[300];
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_OK, "creating the scheduler: %s", why);
    return e;
}

/* queries [lo, lo + n) of poses (n_movable each) on scene s, in `mode` (0 bool, 1 contacts). */
static int mg_run_on(tdm_sched *e, const tdm_scene *s, const tdm_xform *poses, size_t lo, size_t n, int mode,
                     tdm_sched_result *out)
{
    tdm_sched_query *q = malloc(n * sizeof *q);
    cr_assert(q);
    for (size_t i = 0; i < n; i++)
        q[i] = (tdm_sched_query){s, &poses[(lo + i) * s->n_movable], mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL,
                                 1000000, NULL, NULL};
    int rc = tdm_sched_run(e, q, n, out);
    free(q);
    return rc;
}

static int mg_run(tdm_sched *e, const mg_world *w, size_t lo, size_t n, int mode, tdm_sched_result *out)
{
    return mg_run_on(e, w->scene, w->poses, lo, n, mode, out);
}

/* Answers that differ from want[0 .. n); the first one's index in *first. */
static size_t mg_differences(const tdm_sched_result *got, const tdm_sched_result *want, size_t n, size_t *first)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        const tdm_sched_result *g = &got[i], *x = &want[i];
        int same = g->colliding == x->colliding && g->contacts == x->contacts && g->truncated == x->truncated &&
                   (!g->colliding || (g->object_a == x->object_a && g->object_b == x->object_b));
        if (!same && d++ == 0 && first) *first = i;
    }
    return d;
}

/* Two fixed objects (a torus at the origin, a pile beside it) and two movable ones (a
 * sphere, a box); the CPU engine's answers for every pose in both modes. */
static mg_world *mg_world_make(uint64_t salt)
{
    mg_world *w = calloc(1, sizeof *w);
    cr_assert(w);
    gen_rng r = {seed ^ salt};
    w->bvh[0] = mg_tree(gen_torus(1.5, 0.5, 48, 24));
    w->bvh[1] = mg_tree(gen_pile(&r, 400, 0.8, 0.25));
    w->bvh[2] = mg_tree(gen_sphere(0.5, 24));
    w->bvh[3] = mg_tree(gen_box(0.3, 0.2, 0.6));
    tdm_scene_obj objs[MG_MESHES] = {
        {10, w->bvh[0], 0, tdm_xform_identity()},
        {20, w->bvh[1], 0, tdm_xform_from_pose(tdm_d3(2.5, 0, 0), gen_rotation(&r))},
        {30, w->bvh[2], 1, tdm_xform_identity()},
        {40, w->bvh[3], 1, tdm_xform_identity()},
    };
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(objs, MG_MESHES, NULL, 0, &w->scene, &err), TDM_OK, "%s", err.msg);
    w->poses = malloc(sizeof *w->poses * MG_POSES * w->scene->n_movable);
    cr_assert(w->poses);
    for (size_t i = 0; i < (size_t)MG_POSES * w->scene->n_movable; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(1, 0, 0), 2.5);
        w->poses[i] = tdm_xform_from_pose(p.t, p.q);
    }
    tdm_sched *cpu = mg_sched(NULL, 0, 1, 0);
    for (int mode = 0; mode < 2; mode++) {
        cr_assert_eq(mg_run(cpu, w, 0, MG_POSES, mode, w->want[mode]), TDM_OK);
        size_t colliding = 0;
        for (size_t i = 0; i < MG_POSES; i++) colliding += w->want[mode][i].colliding;
        cr_assert(colliding > MG_POSES / 10 && colliding < MG_POSES - MG_POSES / 10,
                  "the poses should exercise both answers: %zu of %d colliding", colliding, MG_POSES);
    }
    tdm_sched_destroy(cpu);
    return w;
}

static void mg_world_free(mg_world *w)
{
    tdm_scene_destroy(w->scene);
    for (int i = 0; i < MG_MESHES; i++) tdm_bvh_free(w->bvh[i]);
    free(w->poses);
    free(w);
}

typedef struct mg_thread {
    tdm_sched *e;
    const mg_world *w;
    int index, rounds;
    int rc;
    size_t queries, diffs, first_lo, first_at;
    int first_mode;
} mg_thread;

/* rounds batches of MG_BATCH queries, alternating modes, from windows of its own;
 * every answer checked against the CPU engine's. */
static void *mg_worker(void *arg)
{
    mg_thread *t = arg;
    tdm_sched_result *res = malloc(MG_BATCH * sizeof *res);
    if (!res) {
        t->rc = TDM_ENOMEM;
        return NULL;
    }
    for (int r = 0; r < t->rounds && t->rc == TDM_OK; r++) {
        int mode = (t->index + r) % 2;
        size_t lo = ((size_t)(t->index * t->rounds + r) * 997) % (MG_POSES - MG_BATCH);
        t->rc = mg_run(t->e, t->w, lo, MG_BATCH, mode, res);
        if (t->rc != TDM_OK) break;
        size_t at = 0, d = mg_differences(res, t->w->want[mode] + lo, MG_BATCH, &at);
        if (d && !t->diffs) {
            t->first_lo = lo;
            t->first_at = at;
            t->first_mode = mode;
        }
        t->diffs += d;
        t->queries += MG_BATCH;
    }
    free(res);
    return NULL;
}

static void mg_threads(mg_thread *t, int n, tdm_sched *e, const mg_world *w, int rounds, pthread_t *th)
{
    for (int k = 0; k < n; k++) {
        t[k] = (mg_thread){e, w, k, rounds, TDM_OK, 0, 0, 0, 0, 0};
        cr_assert_eq(pthread_create(&th[k], NULL, mg_worker, &t[k]), 0);
    }
}

static size_t mg_join(mg_thread *t, int n, pthread_t *th, const char *what)
{
    size_t queries = 0;
    for (int k = 0; k < n; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < n; k++) {
        cr_assert_eq(t[k].rc, TDM_OK, "%s, thread %d: a run failed: %s", what, k, tdm_strerror(t[k].rc));
        cr_assert_eq(t[k].diffs, 0,
                     "%s, thread %d: %zu answers differ from the CPU engine's, the first: query %zu, mode %d (seed "
                     "%llu)", what, k, t[k].diffs, t[k].first_lo + t[k].first_at, t[k].first_mode,
                     (unsigned long long)seed);
        queries += t[k].queries;
    }
    return queries;
}

static const int one_gpu[1] = {0}, two_on_one[2] = {0, 0};

Test(gpu, two_engines_on_one_gpu_match_cpu_engine, .timeout = 300)
{
    require_gpu();
    mg_world *w = mg_world_make(0x2e9);
    tdm_sched *single = mg_sched(one_gpu, 1, 2, 1ull << 30);
    tdm_sched *dual = mg_sched(two_on_one, 2, 2, 1ull << 30);
    cr_assert_eq(tdm_sched_gpu_engines(single), 1);
    cr_assert_eq(tdm_sched_gpu_engines(dual), 2);
    cr_assert_eq(tdm_sched_lanes(dual), 4, "2 lanes x 2 engines: %d lanes", tdm_sched_lanes(dual));
    cr_assert(strstr(tdm_sched_detail(dual), "CUDA devices 0, 0"), "detail: %s", tdm_sched_detail(dual));
    cr_log_info("%s", tdm_sched_detail(dual));
    for (int i = 0; i < MG_MESHES; i++) {
        cr_assert_eq(tdm_sched_mesh_add(single, w->bvh[i]), TDM_OK);
        cr_assert_eq(tdm_sched_mesh_add(dual, w->bvh[i]), TDM_OK);
    }
    tdm_sched_stats s1, s2;
    tdm_sched_get_stats(single, &s1);
    tdm_sched_get_stats(dual, &s2);
    cr_assert_eq(s2.gpu_engines, 2);
    cr_assert(s2.gpu_engine_device[0] == 0 && s2.gpu_engine_device[1] == 0);
    cr_assert_eq(s2.device_meshes, MG_MESHES, "%u trees resident on each engine", s2.device_meshes);
    cr_assert_gt(s1.mesh_bytes, 0);
    cr_assert_eq(s2.mesh_bytes, 2 * s1.mesh_bytes, "each engine holds its own copies: %llu bytes, one engine %llu",
                 (unsigned long long)s2.mesh_bytes, (unsigned long long)s1.mesh_bytes);
    cr_assert_eq(s2.device_budget, 2ull << 30, "gpu-memory applies per engine");
    cr_assert_eq(s2.gpu_engine_bytes[0] + s2.gpu_engine_bytes[1], s2.device_bytes);

    /* the one-engine scheduler, a whole batch at a time: the CPU engine's answers */
    tdm_sched_result *res = malloc(MG_POSES * sizeof *res);
    cr_assert(res);
    for (int mode = 0; mode < 2; mode++) {
        cr_assert_eq(mg_run(single, w, 0, MG_POSES, mode, res), TDM_OK);
        size_t at = 0, d = mg_differences(res, w->want[mode], MG_POSES, &at);
        cr_assert_eq(d, 0, "one engine, mode %d: %zu answers differ, the first query %zu", mode, d, at);
    }

    /* one caller: its runs take turns on the two engines */
    for (int r = 0; r < 2; r++) {
        tdm_sched_stats before, after;
        tdm_sched_get_stats(dual, &before);
        cr_assert_eq(mg_run(dual, w, 0, MG_POSES, r, res), TDM_OK);
        size_t at = 0, d = mg_differences(res, w->want[r], MG_POSES, &at);
        cr_assert_eq(d, 0, "two engines, one caller, mode %d: %zu answers differ, the first query %zu", r, d, at);
        tdm_sched_get_stats(dual, &after);
        uint64_t d0 = after.gpu_engine_tasks[0] - before.gpu_engine_tasks[0],
                 d1 = after.gpu_engine_tasks[1] - before.gpu_engine_tasks[1];
        cr_assert_eq(d0 + d1, after.gpu_tasks - before.gpu_tasks);
        cr_assert(r == 0 ? d0 > 0 && d1 == 0 : d0 == 0 && d1 > 0,
                  "run %d of one caller should go to engine %d: tasks %llu and %llu", r, r, (unsigned long long)d0,
                  (unsigned long long)d1);
        cr_assert_eq(after.gpu_engine_runs[r] - before.gpu_engine_runs[r], 1);
    }

    /* MG_THREADS threads at once, more than the lanes */
    tdm_sched_stats before, after;
    tdm_sched_get_stats(dual, &before);
    mg_thread t[MG_THREADS];
    pthread_t th[MG_THREADS];
    mg_threads(t, MG_THREADS, dual, w, MG_ROUNDS, th);
    size_t queries = mg_join(t, MG_THREADS, th, "two engines, threads");
    tdm_sched_get_stats(dual, &after);
    uint64_t d0 = after.gpu_engine_tasks[0] - before.gpu_engine_tasks[0],
             d1 = after.gpu_engine_tasks[1] - before.gpu_engine_tasks[1];
    cr_log_info("%zu queries from %d threads: engine 0 ran %llu tasks in %llu runs, engine 1 %llu in %llu", queries,
                MG_THREADS, (unsigned long long)d0,
                (unsigned long long)(after.gpu_engine_runs[0] - before.gpu_engine_runs[0]), (unsigned long long)d1,
                (unsigned long long)(after.gpu_engine_runs[1] - before.gpu_engine_runs[1]));
    cr_assert_eq(after.queries - before.queries, queries);
    cr_assert_eq(after.gpu_queries - before.gpu_queries, queries, "every query ran on a GPU engine");
    cr_assert_eq(after.cpu_tasks, 0, "nothing ran on the CPU engine");
    cr_assert_eq(d0 + d1, after.gpu_tasks - before.gpu_tasks);
    cr_assert(d0 > 0 && d1 > 0, "both engines should have run tasks: %llu and %llu", (unsigned long long)d0,
              (unsigned long long)d1);
    cr_assert_eq(after.gpu_engine_runs[0] + after.gpu_engine_runs[1], after.runs);
    cr_assert_eq(after.gpu_broken, 0);
    cr_assert_eq(after.gpu_engines_broken, 0);

    for (int i = 0; i < MG_MESHES; i++) {
        tdm_sched_mesh_remove(single, w->bvh[i]);
        tdm_sched_mesh_remove(dual, w->bvh[i]);
    }
    free(res);
    tdm_sched_destroy(single);
    tdm_sched_destroy(dual);
    mg_world_free(w);
}

/* Meshes added and removed again and again while other threads run queries on other
 * meshes: every answer right (the removed scene's on the CPU engine), and once every
 * engine has started a run, the removed trees' memory is given back on both. */
Test(gpu, two_engines_mesh_removal_while_others_run, .timeout = 300)
{
    require_gpu();
    mg_world *w = mg_world_make(0x7e3);
    gen_rng r = {seed ^ 0x51};
    /* scene B: its own two trees, a pile fixed at the origin and a torus posed per query */
    tdm_bvh *b0 = mg_tree(gen_pile(&r, 300, 0.7, 0.2)), *b1 = mg_tree(gen_torus(0.5, 0.15, 32, 16));
    tdm_scene_obj objs[2] = {{100, b0, 0, tdm_xform_identity()}, {110, b1, 1, tdm_xform_identity()}};
    tdm_scene *sb;
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(objs, 2, NULL, 0, &sb, &err), TDM_OK, "%s", err.msg);
    tdm_xform *pb = malloc(MG_BATCH * sizeof *pb);
    cr_assert(pb);
    for (int i = 0; i < MG_BATCH; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(0, 0, 0), 1.5);
        pb[i] = tdm_xform_from_pose(p.t, p.q);
    }
    tdm_sched_result *want_b = malloc(MG_BATCH * sizeof *want_b), *got = malloc(MG_BATCH * sizeof *got);
    cr_assert(want_b && got);
    tdm_sched *cpu = mg_sched(NULL, 0, 1, 0);
    cr_assert_eq(mg_run_on(cpu, sb, pb, 0, MG_BATCH, 1, want_b), TDM_OK);
    tdm_sched_destroy(cpu);

    tdm_sched *dual = mg_sched(two_on_one, 2, 2, 1ull << 30);
    for (int i = 0; i < MG_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(dual, w->bvh[i]), TDM_OK);
    tdm_sched_stats s0;
    tdm_sched_get_stats(dual, &s0); /* the world's trees alone */

    mg_thread t[MG_THREADS / 2];
    pthread_t th[MG_THREADS / 2];
    mg_threads(t, MG_THREADS / 2, dual, w, 2 * MG_ROUNDS, th);
    for (int it = 0; it < 6; it++) {
        cr_assert_eq(tdm_sched_mesh_add(dual, b0), TDM_OK);
        cr_assert_eq(tdm_sched_mesh_add(dual, b1), TDM_OK);
        cr_assert_eq(mg_run_on(dual, sb, pb, 0, MG_BATCH, 1, got), TDM_OK);
        size_t at = 0, d = mg_differences(got, want_b, MG_BATCH, &at);
        cr_assert_eq(d, 0, "round %d, scene B resident: %zu answers differ, the first query %zu", it, d, at);
        tdm_sched_stats s;
        tdm_sched_get_stats(dual, &s);
        cr_assert_eq(s.device_meshes, MG_MESHES + 2);
        tdm_sched_mesh_remove(dual, b0);
        tdm_sched_mesh_remove(dual, b1);
        tdm_sched_get_stats(dual, &s);
        cr_assert_eq(s.device_meshes, MG_MESHES);
        cr_assert_eq(mg_run_on(dual, sb, pb, 0, MG_BATCH, 1, got), TDM_OK);
        d = mg_differences(got, want_b, MG_BATCH, &at);
        cr_assert_eq(d, 0, "round %d, scene B removed: %zu answers differ, the first query %zu", it, d, at);
    }
    mg_join(t, MG_THREADS / 2, th, "threads on the world while scene B comes and goes");
    /* two runs one after the other: one on each engine, each freeing its removed copies first */
    for (int k = 0; k < 2; k++) cr_assert_eq(mg_run(dual, w, 0, MG_BATCH, 0, got), TDM_OK);
    tdm_sched_stats s;
    tdm_sched_get_stats(dual, &s);
    cr_assert_eq(s.device_meshes, MG_MESHES);
    cr_assert_eq(s.mesh_bytes, s0.mesh_bytes, "removed trees still held: %llu bytes of trees, %llu before scene B",
                 (unsigned long long)s.mesh_bytes, (unsigned long long)s0.mesh_bytes);
    for (int i = 0; i < MG_MESHES; i++) tdm_sched_mesh_remove(dual, w->bvh[i]);
    tdm_sched_destroy(dual);
    tdm_scene_destroy(sb);
    tdm_bvh_free(b0);
    tdm_bvh_free(b1);
    free(pb);
    free(want_b);
    free(got);
    mg_world_free(w);
}

/* All or nothing: engine 1's buffers grown by a large run, a tree that engine 0 can hold
 * and engine 1 cannot is refused with TDM_EGPUMEM, and engine 0's copy is freed again:
 * nothing is left on either engine, and both still answer. */
Test(gpu, two_engines_upload_is_all_or_nothing, .timeout = 300)
{
    require_gpu();
    enum { BIG = 200000 };
    const uint64_t budget = 256ull << 20;
    gen_rng r = {seed ^ 0xa11};
    tdm_bvh *env = mg_tree(gen_torus(1.5, 0.5, 48, 24)), *rob = mg_tree(gen_sphere(0.5, 24));
    tdm_scene_obj objs[2] = {{1, env, 0, tdm_xform_identity()}, {2, rob, 1, tdm_xform_identity()}};
    tdm_scene *sc;
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(objs, 2, NULL, 0, &sc, &err), TDM_OK, "%s", err.msg);
    tdm_xform *poses = malloc(BIG * sizeof *poses);
    tdm_sched_result *res = malloc(BIG * sizeof *res), *want = malloc(100 * sizeof *want);
    cr_assert(poses && res && want);
    for (int i = 0; i < BIG; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(0, 0, 0), 2.5);
        poses[i] = tdm_xform_from_pose(p.t, p.q);
    }
    tdm_sched *cpu = mg_sched(NULL, 0, 1, 0);
    cr_assert_eq(mg_run_on(cpu, sc, poses, 0, 100, 0, want), TDM_OK);
    tdm_sched_destroy(cpu);

    tdm_sched *dual = mg_sched(two_on_one, 2, 1, budget);
    cr_assert_eq(tdm_sched_mesh_add(dual, env), TDM_OK);
    cr_assert_eq(tdm_sched_mesh_add(dual, rob), TDM_OK);
    /* a small run (engine 0, the round robin's first), then a large one (engine 1) */
    cr_assert_eq(mg_run_on(dual, sc, poses, 0, 100, 0, res), TDM_OK);
    cr_assert_eq(mg_run_on(dual, sc, poses, 0, BIG, 0, res), TDM_OK);
    tdm_sched_stats s;
    tdm_sched_get_stats(dual, &s);
    cr_assert(s.gpu_engine_tasks[0] == 100 && s.gpu_engine_tasks[1] == BIG,
              "the runs should have gone to engines 0 and 1 in turn: %llu and %llu tasks",
              (unsigned long long)s.gpu_engine_tasks[0], (unsigned long long)s.gpu_engine_tasks[1]);
    uint64_t free0 = budget - s.gpu_engine_bytes[0], free1 = budget - s.gpu_engine_bytes[1];
    cr_log_info("engine 0 holds %llu bytes, engine 1 %llu, of %llu each", (unsigned long long)s.gpu_engine_bytes[0],
                (unsigned long long)s.gpu_engine_bytes[1], (unsigned long long)budget);
    cr_assert(free0 > free1 + (1u << 20), "engine 1's buffers should have grown past engine 0's: %llu and %llu free",
              (unsigned long long)free0, (unsigned long long)free1);

    /* a sphere whose tree takes more than engine 1 has free and no more than engine 0 has:
     * sizes measured on a scheduler of its own */
    tdm_sched *probe = mg_sched(one_gpu, 1, 1, 4ull << 30);
    int lo = 4, hi = 1400;
    tdm_bvh *fit = NULL;
    uint64_t fit_bytes = 0;
    while (lo <= hi && !fit) {
        int k = (lo + hi) / 2;
        tdm_bvh *b = mg_tree(gen_sphere(1.0, k));
        cr_assert_eq(tdm_sched_mesh_add(probe, b), TDM_OK);
        tdm_sched_stats ps;
        tdm_sched_get_stats(probe, &ps); /* the only tree held: the last one's copy was freed by this upload */
        tdm_sched_mesh_remove(probe, b);
        uint64_t m = ps.mesh_bytes;
        if (m <= free1) lo = k + 1;
        else if (m > free0) hi = k - 1;
        else {
            fit = b;
            fit_bytes = m;
            continue;
        }
        tdm_bvh_free(b);
    }
    cr_assert(fit, "no sphere's tree takes between %llu and %llu bytes", (unsigned long long)free1,
              (unsigned long long)free0);
    tdm_sched_stats before, after;
    tdm_sched_get_stats(dual, &before);
    int rc = tdm_sched_mesh_add(dual, fit);
    cr_assert_eq(rc, TDM_EGPUMEM, "a %llu-byte tree with %llu and %llu bytes free: %s", (unsigned long long)fit_bytes,
                 (unsigned long long)free0, (unsigned long long)free1, tdm_strerror(rc));
    tdm_sched_get_stats(dual, &after);
    cr_assert_eq(after.device_meshes, before.device_meshes);
    cr_assert_eq(after.mesh_bytes, before.mesh_bytes, "nothing left on any engine");
    cr_assert_eq(after.gpu_engine_bytes[0], before.gpu_engine_bytes[0], "engine 0's copy freed again");
    cr_assert_eq(after.gpu_engine_bytes[1], before.gpu_engine_bytes[1]);
    tdm_sched_mesh_remove(dual, fit); /* never added: nothing happens */
    /* both engines still answer */
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(mg_run_on(dual, sc, poses, 0, 100, 0, res), TDM_OK);
        size_t at = 0, d = mg_differences(res, want, 100, &at);
        cr_assert_eq(d, 0, "run %d after the refused upload: %zu answers differ, the first query %zu", k, d, at);
    }
    tdm_sched_get_stats(dual, &after);
    cr_assert_eq(after.gpu_queries, 2 * 100 + BIG + 100);
    tdm_sched_destroy(probe);
    tdm_sched_destroy(dual);
    tdm_bvh_free(fit);
    tdm_scene_destroy(sc);
    tdm_bvh_free(env);
    tdm_bvh_free(rob);
    free(poses);
    free(res);
    free(want);
}
