/* gpu/: the device build of the shared geometry and the GPU-resident engine,
 * against the host on the same inputs. Every test skips, with the reason, on a
 * machine without a usable GPU (or in a build without CUDA).
 *
 *  - the exact triangle test on the device gives the host's answer on inputs
 *    built to be near-degenerate in double (coplanar within rounding);
 *  - the engine gives the CPU engine's bool answers and contact counts on
 *    generated scenes (zero differences allowed: both are exact);
 *  - a frontier far too small for the batch is detected and re-run, never
 *    truncated, and still gives the same answers;
 *  - an upload over the device-memory budget fails cleanly and leaves the
 *    engine usable. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "geom/tri.h"
#include "gpu/gpu.h"
#include "gpu/gpu_geom.h"
#include "workpile/cpu_engine.h"

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
static size_t compare(tdm_gpu *g, const scene *s, tdm_mode mode, uint32_t cap, size_t *colliding)
{
    tdm_gpu_mesh *ga, *gb;
    cr_assert_eq(tdm_gpu_mesh_upload(g, s->a, &ga), TDM_OK);
    cr_assert_eq(tdm_gpu_mesh_upload(g, s->b, &gb), TDM_OK);
    tdm_gpu_task *gt = malloc(s->n * sizeof *gt);
    tdm_collide_result *gr = malloc(s->n * sizeof *gr);
    cr_assert(gt && gr);
    for (size_t i = 0; i < s->n; i++)
        gt[i] = (tdm_gpu_task){ga, gb, tdm_xform_from_pose(s->poses[i].t, s->poses[i].q), mode, cap};
    cr_assert_eq(tdm_gpu_run(g, gt, s->n, gr), TDM_OK);
    size_t diff = 0;
    *colliding = 0;
    for (size_t i = 0; i < s->n; i++) {
        tdm_task t = {s->a, s->b, gt[i].b_in_a, mode, cap, NULL};
        tdm_collide_result c;
        tdm_collide(&t, &c);
        *colliding += c.colliding;
        int same = c.colliding == gr[i].colliding && c.n_pairs == gr[i].n_pairs && c.truncated == gr[i].truncated;
        if (!same && diff++ < 5)
            cr_log_error("pose %zu: cpu %u/%u/%u gpu %u/%u/%u (colliding/pairs/truncated)", i, c.colliding, c.n_pairs,
                         c.truncated, gr[i].colliding, gr[i].n_pairs, gr[i].truncated);
    }
    tdm_gpu_mesh_free(g, ga);
    tdm_gpu_mesh_free(g, gb);
    free(gt);
    free(gr);
    return diff;
}

static void check_scenes(const tdm_gpu_config *cfg)
{
    tdm_gpu *g;
    cr_assert_eq(tdm_gpu_create(cfg, &g, NULL), TDM_OK);
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
    tdm_gpu_get_stats(g, &st);
    cr_log_info("runs %llu, re-runs after overflow %llu", (unsigned long long)st.runs, (unsigned long long)st.reruns);
    tdm_gpu_destroy(g);
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

Test(gpu, upload_over_budget_fails_cleanly)
{
    require_gpu();
    tdm_gpu_config cfg = tdm_gpu_config_default();
    cfg.frontier_pairs = 1024;
    cfg.memory_budget = 1u << 20; /* 1 MiB: scratch fits, a big mesh does not */
    tdm_gpu *g;
    cr_assert_eq(tdm_gpu_create(&cfg, &g, NULL), TDM_OK);
    tdm_mesh *big = gen_sphere(1.0, 256), *small = gen_box(1, 1, 1);
    tdm_bvh *bb, *bs;
    cr_assert_eq(tdm_bvh_build(big, &bb), TDM_OK);
    cr_assert_eq(tdm_bvh_build(small, &bs), TDM_OK);
    tdm_gpu_mesh *m = (tdm_gpu_mesh *)1;
    cr_assert_eq(tdm_gpu_mesh_upload(g, bb, &m), TDM_EGPUMEM);
    cr_assert_null(m);
    tdm_gpu_stats st;
    tdm_gpu_get_stats(g, &st);
    cr_assert_eq(st.mesh_bytes, 0, "a failed upload holds no memory");
    /* the engine still works */
    tdm_gpu_mesh *ga, *gb;
    cr_assert_eq(tdm_gpu_mesh_upload(g, bs, &ga), TDM_OK);
    cr_assert_eq(tdm_gpu_mesh_upload(g, bs, &gb), TDM_OK);
    tdm_gpu_task t[2] = {{ga, gb, tdm_xform_identity(), TDM_MODE_BOOL, 1},
                         {ga, gb, tdm_xform_from_pose(tdm_d3(5, 0, 0), (tdm_quat){0, 0, 0, 1}), TDM_MODE_BOOL, 1}};
    tdm_collide_result res[2];
    cr_assert_eq(tdm_gpu_run(g, t, 2, res), TDM_OK);
    cr_assert_eq(res[0].colliding, 1, "a box touches itself");
    cr_assert_eq(res[1].colliding, 0, "boxes 5 apart do not touch");
    tdm_gpu_mesh_free(g, ga);
    tdm_gpu_mesh_free(g, gb);
    tdm_gpu_destroy(g);
    tdm_bvh_free(bb);
    tdm_bvh_free(bs);
    tdm_mesh_free(big);
    tdm_mesh_free(small);
}
