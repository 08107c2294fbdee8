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
 *    given back. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "geom/tri.h"
#include "gpu/gpu.h"
#include "gpu/gpu_geom.h"
#include "gpu/hybrid.h"
#include "workpile/cpu_engine.h"
#include "workpile/gpu_engine.h"
#include "workpile/hybrid_engine.h"

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

Test(gpu, blocks_traversal_matches_cpu_engine) { check_traversal(TDM_GPU_TRAVERSE_BLOCKS, 0); }
Test(gpu, blocks_traversal_frontier_overflow_is_rerun) { check_traversal(TDM_GPU_TRAVERSE_BLOCKS, 1); }
Test(gpu, wide_traversal_matches_cpu_engine) { check_traversal(TDM_GPU_TRAVERSE_WIDE, 0); }
Test(gpu, wide_traversal_frontier_overflow_is_rerun) { check_traversal(TDM_GPU_TRAVERSE_WIDE, 1); }

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
