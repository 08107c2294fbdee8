/* workpile/cpu_engine.h: tdm_collide and the thread pool against the all-pairs
 * brute force of brute.h, on generated meshes at thousands of poses.
 *
 * Meshes and poses are chosen so that roughly half the poses collide, including
 * families where contacts are exact (grid coordinates and half-turn rotations:
 * faces, edges and vertices that touch exactly, zero-area triangles), and one far
 * from the origin, where float box rounding is largest. Every mode is checked:
 * bool against "any pair", contacts against the exact set of pairs, a small cap
 * against truncation. Zero disagreements allowed. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "brute.h"
#include "check.h"
#include "gen.h"
#include "workpile/cpu_engine.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0xe9e1e5eedull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(engine, .init = suite_init);

/* ---- scenarios ------------------------------------------------------------------ */

typedef enum { POSE_BALL, POSE_GRID } pose_kind;

typedef struct scenario {
    const char *name;
    tdm_mesh *env, *robot;
    pose_kind kind;
    tdm_dvec3 center; /* POSE_BALL: translations uniform in this ball, rotations uniform */
    double radius;
    double step;      /* POSE_GRID: translations on this grid within +-steps, half-turn rotations */
    int steps;
    int n_poses;
} scenario;

/* Half-turns about the axes: rotation matrices with entries 0 and +-1, exactly. */
static const tdm_quat half_turns[4] = {{0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};

static tdm_xform scenario_pose(const scenario *s, gen_rng *r, int i)
{
    if (s->kind == POSE_GRID && i % 4 != 3) { /* one pose in four is random, even here */
        tdm_dvec3 t = tdm_d3((double)gen_int(r, -s->steps, s->steps) * s->step,
                             (double)gen_int(r, -s->steps, s->steps) * s->step,
                             (double)gen_int(r, -s->steps, s->steps) * s->step);
        return tdm_xform_from_pose(tdm_d3_add(s->center, t), half_turns[gen_int(r, 0, 3)]);
    }
    gen_pose p = gen_pose_in_ball(r, s->center, s->radius);
    return tdm_xform_from_pose(p.t, p.q);
}

enum { N_SCENARIOS = 8 };

static void make_scenarios(scenario *s, gen_rng *r)
{
    memset(s, 0, sizeof *s * N_SCENARIOS);
    s[0] = (scenario){"sphere vs torus", gen_torus(1.5, 0.5, 32, 16), gen_sphere(0.6, 16), POSE_BALL,
                      {0, 0, 0}, 2.3, 0, 0, 2000};
    s[1] = (scenario){"box vs slivers", gen_slivers(r, 40, 1, 0.8, 1e-3), gen_box(0.15, 0.1, 0.2), POSE_BALL,
                      {0, 0, 0}, 1.4, 0, 0, 2000};
    s[2] = (scenario){"pile vs pile", gen_pile(r, 60, 1, 0.25), gen_pile(r, 30, 0.3, 0.15), POSE_BALL,
                      {0, 0, 0}, 1.5, 0, 0, 2000};
    s[3] = (scenario){"zero-area vs zero-area", gen_zero_area(r, 120, 16, 0.0625), gen_zero_area(r, 40, 4, 0.0625),
                      POSE_GRID, {0, 0, 0}, 1.3, 0.0625, 20, 1200};
    s[4] = (scenario){"zero-area vs sphere", gen_zero_area(r, 60, 16, 0.0625), gen_sphere(0.35, 12), POSE_BALL,
                      {0, 0, 0}, 1.4, 0, 0, 1200};
    s[5] = (scenario){"box vs box, exact contacts", gen_box(0.5, 0.5, 0.5), gen_box(0.25, 0.5, 0.125), POSE_GRID,
                      {0, 0, 0}, 1.0, 0.125, 7, 1200};
    s[6] = (scenario){"grid pile vs grid pile, exact contacts", gen_grid_pile(r, 40, 8, 2, 0.125),
                      gen_grid_pile(r, 15, 3, 2, 0.125), POSE_GRID, {0, 0, 0}, 1.4, 0.125, 10, 1200};
    tdm_mesh *torus = gen_torus(1.5, 0.5, 32, 16);
    s[7] = (scenario){"torus far from the origin", gen_translated(torus, 500, -300, 200), gen_sphere(0.6, 16),
                      POSE_BALL, {500, -300, 200}, 2.3, 0, 0, 1000};
    tdm_mesh_free(torus);
    for (int i = 0; i < N_SCENARIOS; i++) cr_assert(s[i].env && s[i].robot, "generating %s", s[i].name);
}

static void free_scenarios(scenario *s)
{
    for (int i = 0; i < N_SCENARIOS; i++) {
        tdm_mesh_free(s[i].env);
        tdm_mesh_free(s[i].robot);
    }
}

static int pairs_distinct(tdm_pair *p, uint32_t n)
{
    qsort(p, n, sizeof *p, brute_pair_cmp);
    for (uint32_t i = 1; i < n; i++)
        if (brute_pair_cmp(&p[i - 1], &p[i]) == 0) return 0;
    return 1;
}

/* Checks one pose of a scenario in every mode against the brute force. */
static void check_pose(const scenario *s, const tdm_bvh *A, const tdm_bvh *B, brute *bf, const tdm_xform *x, int pose,
                       tdm_pair *buf, uint32_t buf_cap)
{
    size_t expect = brute_run(bf, x);
    const char *name = s->name;
    unsigned long long sd = (unsigned long long)seed;
#define POSE_FMT "seed=%llu %s pose %d (t = %.17g %.17g %.17g)"
#define POSE_ARGS sd, name, pose, x->t.x, x->t.y, x->t.z
    tdm_collide_result res;

    /* bool */
    tdm_task t = {A, B, NULL, NULL, *x, TDM_MODE_BOOL, 1, NULL, NULL, 0};
    tdm_collide(&t, &res);
    CHECK(res.colliding == (expect > 0), POSE_FMT ": bool mode says %u, brute force finds %zu pairs", POSE_ARGS,
          res.colliding, expect);
    CHECK(res.n_pairs == res.colliding, POSE_FMT ": bool mode n_pairs %u", POSE_ARGS, res.n_pairs);
    CHECK(res.truncated == 0, POSE_FMT ": bool mode truncated", POSE_ARGS);
    if (res.colliding)
        CHECK(brute_has(bf, res.first), POSE_FMT ": bool mode's first pair (%u, %u) does not intersect", POSE_ARGS,
              res.first.a_tri, res.first.b_tri);

    /* contacts, room for every pair */
    t.mode = TDM_MODE_CONTACTS;
    t.max_pairs = buf_cap;
    t.pairs = buf;
    tdm_collide(&t, &res);
    CHECK(res.n_pairs == expect, POSE_FMT ": contacts mode finds %u pairs, brute force %zu", POSE_ARGS, res.n_pairs,
          expect);
    CHECK(res.colliding == (expect > 0) && res.truncated == 0, POSE_FMT ": colliding %u truncated %u with %zu pairs",
          POSE_ARGS, res.colliding, res.truncated, expect);
    if (res.n_pairs == expect && expect > 0) {
        CHECK(brute_has(bf, res.first), POSE_FMT ": first pair (%u, %u) does not intersect", POSE_ARGS, res.first.a_tri,
              res.first.b_tri);
        qsort(buf, expect, sizeof *buf, brute_pair_cmp);
        for (size_t i = 0; i < expect; i++)
            CHECK(brute_pair_cmp(&buf[i], &bf->pairs[i]) == 0,
                  POSE_FMT ": sorted pair %zu is (%u, %u), brute force has (%u, %u)", POSE_ARGS, i, buf[i].a_tri,
                  buf[i].b_tri, bf->pairs[i].a_tri, bf->pairs[i].b_tri);
    }

    /* contacts with no pair buffer: the count alone */
    t.pairs = NULL;
    tdm_collide(&t, &res);
    CHECK(res.n_pairs == expect, POSE_FMT ": contacts mode without a buffer counts %u, brute force %zu", POSE_ARGS,
          res.n_pairs, expect);

    /* a small cap */
    uint32_t cap = 1 + (uint32_t)(pose % 4);
    t.max_pairs = cap;
    t.pairs = buf;
    tdm_collide(&t, &res);
    uint32_t want = expect < cap ? (uint32_t)expect : cap;
    CHECK(res.n_pairs == want, POSE_FMT ": cap %u, %zu pairs exist, n_pairs %u", POSE_ARGS, cap, expect, res.n_pairs);
    CHECK(res.truncated == (expect > cap), POSE_FMT ": cap %u, %zu pairs exist, truncated %u", POSE_ARGS, cap, expect,
          res.truncated);
    CHECK(res.colliding == (expect > 0), POSE_FMT ": cap %u: colliding %u", POSE_ARGS, cap, res.colliding);
    for (uint32_t i = 0; i < res.n_pairs && i < cap; i++)
        CHECK(brute_has(bf, buf[i]), POSE_FMT ": cap %u: reported pair (%u, %u) does not intersect", POSE_ARGS, cap,
              buf[i].a_tri, buf[i].b_tri);
    CHECK(pairs_distinct(buf, res.n_pairs < cap ? res.n_pairs : cap), POSE_FMT ": cap %u: a pair reported twice",
          POSE_ARGS, cap);
#undef POSE_FMT
#undef POSE_ARGS
}

Test(engine, collide_matches_brute_force, .timeout = 240)
{
    gen_rng r = {seed};
    scenario s[N_SCENARIOS];
    make_scenarios(s, &r);
    long total = 0;
    for (int k = 0; k < N_SCENARIOS; k++) {
        tdm_bvh *A, *B;
        cr_assert_eq(tdm_bvh_build(s[k].env, &A), TDM_OK);
        cr_assert_eq(tdm_bvh_build(s[k].robot, &B), TDM_OK);
        brute bf;
        cr_assert_eq(brute_init(&bf, s[k].env, s[k].robot), 0);
        uint32_t cap = s[k].env->n_tris * s[k].robot->n_tris;
        tdm_pair *buf = malloc(sizeof *buf * cap);
        cr_assert_not_null(buf);
        int colliding = 0;
        size_t pairs = 0;
        for (int i = 0; i < s[k].n_poses; i++) {
            tdm_xform x = scenario_pose(&s[k], &r, i);
            check_pose(&s[k], A, B, &bf, &x, i, buf, cap);
            colliding += bf.n > 0;
            pairs += bf.n;
        }
        total += s[k].n_poses;
        cr_log_info("%-40s %4d poses, %4d colliding, %7zu intersecting pairs", s[k].name, s[k].n_poses, colliding,
                    pairs);
        CHECK(colliding > s[k].n_poses / 10 && colliding < s[k].n_poses * 9 / 10,
                  "%s: %d of %d poses collide; the scenario should mix both", s[k].name, colliding, s[k].n_poses);
        free(buf);
        brute_free(&bf);
        tdm_bvh_free(A);
        tdm_bvh_free(B);
    }
    cr_log_info("%ld poses checked", total);
    free_scenarios(s);
}

/* ---- parallel sheets a hair apart (issue 14) ---------------------------------------- */

/* `copies` copies of one triangle patch (`patch` triangles in the plane through
 * o spanned by u and v), each moved by k * step along n, k = 0, 1, ...: a stack
 * of parallel sheets, or one sheet repeated when step is 0. */
static tdm_mesh *sheet_stack(gen_rng *r, tdm_dvec3 o, tdm_dvec3 u, tdm_dvec3 v, tdm_dvec3 n, int patch, int copies,
                             double offset, double step)
{
    uint32_t nt = (uint32_t)(patch * copies);
    float *verts = malloc(sizeof(float) * 9 * nt);
    uint32_t *tris = malloc(sizeof(uint32_t) * 3 * nt);
    double uv[16][3][2];
    for (int t = 0; t < patch && t < 16; t++)
        for (int c = 0; c < 3; c++) {
            uv[t][c][0] = gen_range(r, -0.5, 0.5);
            uv[t][c][1] = gen_range(r, -0.5, 0.5);
        }
    for (int k = 0; k < copies; k++)
        for (int t = 0; t < patch; t++) {
            uint32_t i = (uint32_t)(k * patch + t);
            for (int c = 0; c < 3; c++) {
                double h = offset + k * step;
                tdm_dvec3 p = tdm_d3_add(o, tdm_d3_add(tdm_d3_scale(u, uv[t % 16][c][0]),
                                                       tdm_d3_add(tdm_d3_scale(v, uv[t % 16][c][1]), tdm_d3_scale(n, h))));
                verts[9 * i + 3 * c] = (float)p.x;
                verts[9 * i + 3 * c + 1] = (float)p.y;
                verts[9 * i + 3 * c + 2] = (float)p.z;
                tris[3 * i + c] = 3 * i + (uint32_t)c;
            }
        }
    tdm_mesh *m = NULL;
    char err[128];
    tdm_mesh_create(verts, 3 * nt, tris, nt, NULL, &m, err, sizeof err);
    free(verts);
    free(tris);
    return m;
}

static tdm_dvec3 random_unit(gen_rng *r)
{
    for (;;) {
        tdm_dvec3 d = tdm_d3(gen_range(r, -1, 1), gen_range(r, -1, 1), gen_range(r, -1, 1));
        double l = tdm_d3_len(d);
        if (l > 0.1 && l < 1) return tdm_d3_scale(d, 1 / l);
    }
}

/* Sheets from 1e-6 apart to touching and crossing, axis-aligned and tilted,
 * at poses that move them by up to 1e-6: every answer as the brute force's.
 * The exact box stage (bv.h) separates what the float test's slack cannot, so
 * it must never separate what touches. */
Test(engine, near_parallel_sheets_match_brute_force, .timeout = 240)
{
    gen_rng r = {seed ^ 0x5eedu};
    static const double gaps[] = {-1e-6, -1e-7, -1e-9, 0, 1e-9, 1e-8, 1e-7, 1e-6};
    int colliding = 0, total = 0;
    for (int trial = 0; trial < 24; trial++) {
        tdm_dvec3 n = trial % 3 == 0 ? tdm_d3(0, 0, 1) : random_unit(&r);
        tdm_dvec3 u = tdm_d3_cross(n, fabs(n.x) < 0.6 ? tdm_d3(1, 0, 0) : tdm_d3(0, 1, 0));
        u = tdm_d3_scale(u, 1 / tdm_d3_len(u));
        tdm_dvec3 v = tdm_d3_cross(n, u);
        tdm_dvec3 o = trial % 4 == 1 ? tdm_d3(40, -25, 12) : tdm_d3(gen_range(&r, -1, 1), 0, 0);
        gen_rng pr = r; /* both stacks from the same patch */
        double gap = gaps[trial % 8], step = trial % 2 ? 0 : 3e-7;
        tdm_mesh *env = sheet_stack(&pr, o, u, v, n, 4, 12, 0, step);
        pr = r;
        tdm_mesh *robot = sheet_stack(&pr, o, u, v, n, 4, 12, gap + step / 2, step);
        gen_uniform(&r);
        cr_assert(env && robot);
        tdm_bvh *A, *B;
        cr_assert_eq(tdm_bvh_build(env, &A), TDM_OK);
        cr_assert_eq(tdm_bvh_build(robot, &B), TDM_OK);
        brute bf;
        cr_assert_eq(brute_init(&bf, env, robot), 0);
        uint32_t cap = env->n_tris * robot->n_tris;
        tdm_pair *buf = malloc(sizeof *buf * cap);
        scenario sc = {"near-parallel sheets", env, robot, POSE_BALL, {0, 0, 0}, 0, 0, 0, 0};
        for (int i = 0; i < 40; i++) {
            tdm_xform x = tdm_xform_identity();
            if (i % 4 == 1) x.t = tdm_d3_scale(n, gen_range(&r, -1e-6, 1e-6));
            if (i % 4 >= 2) { /* a tiny rotation about a point of the sheet */
                tdm_dvec3 ax = random_unit(&r);
                double ang = gen_range(&r, -1e-6, 1e-6);
                tdm_quat q = {ax.x * sin(ang / 2), ax.y * sin(ang / 2), ax.z * sin(ang / 2), cos(ang / 2)};
                tdm_xform rot = tdm_xform_from_pose(tdm_d3(0, 0, 0), q);
                tdm_dvec3 c = tdm_d3_sub(o, tdm_xform_apply(&rot, o));
                x = tdm_xform_from_pose(c, q);
            }
            check_pose(&sc, A, B, &bf, &x, trial * 100 + i, buf, cap);
            colliding += bf.n > 0;
            total++;
        }
        free(buf);
        brute_free(&bf);
        tdm_bvh_free(A);
        tdm_bvh_free(B);
        tdm_mesh_free(env);
        tdm_mesh_free(robot);
    }
    cr_log_info("near-parallel sheets: %d of %d poses collide", colliding, total);
    CHECK(colliding > total / 10 && colliding < total * 9 / 10, "%d of %d poses collide: both kinds should occur",
          colliding, total);
}

/* The attack of issue 14: two meshes of one triangle repeated 4 000 times,
 * 1e-7 apart (inside the float test's slack), at identity. Without the exact
 * stage every leaf pair is tested (16 million triangle pairs); with it, once a
 * traversal is past its first 16 384 box tests (cpu_engine.c's CAREFUL_AFTER),
 * what is left of it is pruned near the roots. Checked by the work counted,
 * not by time. */
Test(engine, parallel_sheets_cost_no_more_than_a_few_box_tests)
{
    gen_rng r = {seed ^ 0xa77ac4u};
    for (int tilted = 0; tilted < 2; tilted++) {
        tdm_dvec3 n = tilted ? random_unit(&r) : tdm_d3(0, 0, 1);
        tdm_dvec3 u = tdm_d3_cross(n, fabs(n.x) < 0.6 ? tdm_d3(1, 0, 0) : tdm_d3(0, 1, 0));
        u = tdm_d3_scale(u, 1 / tdm_d3_len(u));
        tdm_dvec3 v = tdm_d3_cross(n, u);
        gen_rng pr = r;
        tdm_mesh *env = sheet_stack(&pr, tdm_d3(0.5, 0.5, 0), u, v, n, 1, 4000, 0, 0);
        pr = r;
        tdm_mesh *robot = sheet_stack(&pr, tdm_d3(0.5, 0.5, 0), u, v, n, 1, 4000, tilted ? 1e-6 : 1e-7, 0);
        cr_assert(env && robot);
        tdm_bvh *A, *B;
        cr_assert_eq(tdm_bvh_build(env, &A), TDM_OK);
        cr_assert_eq(tdm_bvh_build(robot, &B), TDM_OK);
        for (int mode = 0; mode < 2; mode++) {
            tdm_task t = {A, B, NULL, NULL, tdm_xform_identity(), mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000, NULL, NULL, 0};
            tdm_collide_result res;
            tdm_collide(&t, &res);
            CHECK(res.colliding == 0, "%s sheets 1e-7 apart reported colliding", tilted ? "tilted" : "flat");
            CHECK(res.box_tests + res.tri_tests <= 4 * 16384,
                  "%s sheets, %s mode: %u box tests and %u triangle tests, expected 65 536 at most together",
                  tilted ? "tilted" : "flat", mode ? "contacts" : "bool", res.box_tests, res.tri_tests);
        }
        tdm_bvh_free(A);
        tdm_bvh_free(B);
        tdm_mesh_free(env);
        tdm_mesh_free(robot);
    }
}

/* Robot and environment swapped: the engine must not care which is which. */
Test(engine, roles_swapped, .timeout = 60)
{
    gen_rng r = {seed ^ 1};
    tdm_mesh *a = gen_pile(&r, 100, 0.5, 0.2), *b = gen_slivers(&r, 30, 0.5, 0.6, 1e-3);
    tdm_bvh *A, *B;
    cr_assert_eq(tdm_bvh_build(a, &A), TDM_OK);
    cr_assert_eq(tdm_bvh_build(b, &B), TDM_OK);
    brute b1, b2;
    cr_assert_eq(brute_init(&b1, a, b), 0);
    cr_assert_eq(brute_init(&b2, b, a), 0);
    int both = 0;
    for (int i = 0; i < 300; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(0, 0, 0), 1.6);
        tdm_xform x = tdm_xform_from_pose(p.t, p.q);
        /* inverse transform, in double */
        tdm_xform inv;
        inv.r = tdm_dm3_transpose(&x.r);
        inv.t = tdm_d3_scale(tdm_dm3_mulv(&inv.r, x.t), -1);
        tdm_task t1 = {A, B, NULL, NULL, x, TDM_MODE_BOOL, 1, NULL, NULL, 0}, t2 = {B, A, NULL, NULL, inv, TDM_MODE_BOOL, 1, NULL, NULL, 0};
        tdm_collide_result r1, r2;
        tdm_collide(&t1, &r1);
        tdm_collide(&t2, &r2);
        /* the two transforms are not exact inverses in floating point: each
         * is checked against its own brute force */
        size_t n1 = brute_run(&b1, &x), n2 = brute_run(&b2, &inv);
        CHECK(r1.colliding == (n1 > 0), "seed=%llu pose %d: A-B says %u, brute force %zu", (unsigned long long)seed, i,
              r1.colliding, n1);
        CHECK(r2.colliding == (n2 > 0), "seed=%llu pose %d: B-A says %u, brute force %zu", (unsigned long long)seed, i,
              r2.colliding, n2);
        both += n1 > 0;
    }
    cr_log_info("%d of 300 poses collide", both);
    cr_assert(both > 30 && both < 270, "%d of 300 poses collide", both);
    brute_free(&b1);
    brute_free(&b2);
    tdm_bvh_free(A);
    tdm_bvh_free(B);
    tdm_mesh_free(a);
    tdm_mesh_free(b);
}

/* ---- placements far apart (tdm_bounds_apart) ------------------------------------ */

/* Translations past float's range (a pose or a joint value of 1e200 sent by a
 * client): answered "apart" by one test, in every mode. Before, the float box
 * tests turned them into inf and NaN, never apart, and every leaf pair was
 * tested (the fuzzer's daemon_requests spent ~99% of its time there). */
Test(engine, far_placements_take_one_test)
{
    gen_rng r = {seed ^ 0xfa2};
    tdm_mesh *a = gen_torus(1.5, 0.5, 32, 16), *b = gen_sphere(0.6, 16);
    tdm_bvh *A, *B;
    cr_assert_eq(tdm_bvh_build(a, &A), TDM_OK);
    cr_assert_eq(tdm_bvh_build(b, &B), TDM_OK);
    static const double far[] = {3.5e38, 1e39, 1e100, 1e154, 1e200, 1.7e308};
    tdm_pair buf[64];
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++)
        for (int d = 0; d < 8; d++) {
            /* along each axis, either sign, and along random directions */
            tdm_dvec3 u = d < 6 ? tdm_d3(d / 2 == 0, d / 2 == 1, d / 2 == 2) : random_unit(&r);
            double m = d < 6 && (d & 1) ? -far[i] : far[i];
            tdm_xform x = tdm_xform_from_pose(tdm_d3(u.x * m, u.y * m, u.z * m), gen_rotation(&r));
            for (int mode = 0; mode < 3; mode++) {
                tdm_task t = {A, B, NULL, NULL, x, mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 64, mode == 1 ? buf : NULL,
                              NULL, 0};
                tdm_collide_result res;
                tdm_collide(&t, &res);
                CHECK(!res.colliding && !res.n_pairs && !res.truncated && res.box_tests == 1 && res.tri_tests == 0,
                      "t = %.17g %.17g %.17g, mode %d: colliding %u, %u pairs, %u box tests, %u triangle tests", x.t.x,
                      x.t.y, x.t.z, mode, res.colliding, res.n_pairs, res.box_tests, res.tri_tests);
            }
        }
    tdm_bvh_free(A);
    tdm_bvh_free(B);
    tdm_mesh_free(a);
    tdm_mesh_free(b);
}

/* What the GPU engines do with such a task (tdm_bounds_placement): a placement
 * whose root boxes the float test separates, on meshes off their origins and
 * thin ones, at random far placements; and any placement that is not apart
 * for certain is kept as it is. */
Test(engine, far_placements_root_boxes_apart)
{
    gen_rng r = {seed ^ 0xb0c5};
    tdm_mesh *torus = gen_torus(1.5, 0.5, 32, 16);
    tdm_mesh *m[4] = {gen_translated(torus, 500, -300, 200), gen_sphere(0.6, 16), gen_slivers(&r, 40, 1, 0.8, 1e-3),
                      gen_translated(torus, -0.2, 3, -40)};
    tdm_mesh_free(torus);
    tdm_bvh *T[4];
    for (int i = 0; i < 4; i++) {
        cr_assert(m[i]);
        cr_assert_eq(tdm_bvh_build(m[i], &T[i]), TDM_OK);
    }
    int kept = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 200; k++) {
                double mag = k % 2 ? pow(10, gen_range(&r, 0, 308)) : gen_range(&r, 0, 2000);
                tdm_dvec3 u = random_unit(&r);
                tdm_xform x = tdm_xform_from_pose(tdm_d3(u.x * mag, u.y * mag, u.z * mag), gen_rotation(&r));
                tdm_xform p = tdm_bounds_placement(&x, T[i]->radius, T[j]->radius);
                if (!tdm_bounds_apart(&x, T[i]->radius, T[j]->radius)) {
                    CHECK(memcmp(&p, &x, sizeof x) == 0, "meshes %d, %d, pose %d: a placement not apart was changed",
                          i, j, k);
                    kept++;
                    continue;
                }
                tdm_fxform fx = tdm_fxform_of(&p);
                float tol = tdm_obb_tolerance(T[i]->radius, T[j]->radius, (float)tdm_d3_len(p.t));
                CHECK(isfinite(fx.t[0]) && !tdm_obb_overlap(&T[i]->nodes[0], &T[j]->nodes[0], &fx, tol),
                      "meshes %d, %d, pose %d (|t| %g): the root boxes of the far placement overlap", i, j, k, mag);
            }
    cr_assert(kept > 200 && kept < 16 * 200 - 200, "%d of %d placements not apart: the test needs both", kept,
              16 * 200);
    for (int i = 0; i < 4; i++) {
        tdm_bvh_free(T[i]);
        tdm_mesh_free(m[i]);
    }
}

/* At the edge of that test: cubes whose faces touch exactly (|t_i| = radius_a +
 * radius_b, half-turn rotations) or are apart by 1e-15 to 1e-6 of it, and
 * random rotations at the same distances, all against the brute force: the
 * test says "apart" only where no pair intersects, and takes over from the
 * traversal from ~1e-9 of the distance on. */
Test(engine, far_placements_edge_matches_brute_force, .timeout = 60)
{
    gen_rng r = {seed ^ 0xed9e};
    scenario s = {"boxes at the edge of tdm_bounds_apart", gen_box(1, 1, 1), gen_box(0.5, 0.5, 0.5), POSE_BALL,
                  {0, 0, 0}, 0, 0, 0, 0};
    cr_assert(s.env && s.robot);
    tdm_bvh *A, *B;
    cr_assert_eq(tdm_bvh_build(s.env, &A), TDM_OK);
    cr_assert_eq(tdm_bvh_build(s.robot, &B), TDM_OK);
    cr_assert(A->radius == 1 && B->radius == 0.5f, "radii %g and %g", A->radius, B->radius);
    brute bf;
    cr_assert_eq(brute_init(&bf, s.env, s.robot), 0);
    static const double gap[] = {-1e-6, -1e-12, 0, 1e-15, 1e-12, 1e-10, 1e-9, 2e-9, 1e-8, 1e-6};
    tdm_pair buf[256];
    int pose = 0, touching = 0, at_once = 0;
    for (size_t g = 0; g < sizeof gap / sizeof gap[0]; g++)
        for (int axis = 0; axis < 3; axis++)
            for (int sign = -1; sign <= 1; sign += 2)
                for (int k = 0; k < 8; k++, pose++) {
                    /* the other two coordinates small: the boxes' faces overlap in projection */
                    double c[3] = {gen_range(&r, -0.2, 0.2), gen_range(&r, -0.2, 0.2), gen_range(&r, -0.2, 0.2)};
                    c[axis] = sign * 1.5 * (1 + gap[g]);
                    tdm_quat q = k < 4 ? half_turns[k] : gen_rotation(&r);
                    tdm_xform x = tdm_xform_from_pose(tdm_d3(c[0], c[1], c[2]), q);
                    check_pose(&s, A, B, &bf, &x, pose, buf, 256);
                    tdm_task t = {A, B, NULL, NULL, x, TDM_MODE_BOOL, 1, NULL, NULL, 0};
                    tdm_collide_result res;
                    tdm_collide(&t, &res);
                    touching += k < 4 && res.colliding;
                    at_once += res.box_tests == 1 && !res.colliding;
                    if (k < 4 && gap[g] >= 1e-8)
                        CHECK(res.box_tests == 1, "gap %g, pose %d: %u box tests, expected the one test", gap[g], pose,
                              res.box_tests);
                }
    /* half-turn poses touch or overlap for every gap <= 0 (3 gaps, 6 sides, 4 rotations) */
    cr_assert(touching == 3 * 6 * 4, "%d half-turn poses collide, expected %d", touching, 3 * 6 * 4);
    cr_log_info("%d poses, %d answered by the one test", pose, at_once);
    brute_free(&bf);
    tdm_bvh_free(A);
    tdm_bvh_free(B);
    tdm_mesh_free(s.env);
    tdm_mesh_free(s.robot);
}

/* ---- the thread pool ----------------------------------------------------------- */

typedef struct batch {
    tdm_bvh *A[3], *B[3];
    tdm_mesh *meshes[6];
    tdm_task *tasks;
    tdm_pair *bufs;   /* 64 per task */
    tdm_collide_result *want;
    tdm_pair *want_pairs;
    size_t n;
} batch;

enum { BATCH_CAP = 64 };

static void batch_make(batch *b, gen_rng *r, size_t n)
{
    memset(b, 0, sizeof *b);
    b->meshes[0] = gen_torus(1.5, 0.5, 32, 16);
    b->meshes[1] = gen_sphere(0.6, 16);
    b->meshes[2] = gen_pile(r, 300, 1, 0.2);
    b->meshes[3] = gen_pile(r, 100, 0.4, 0.15);
    b->meshes[4] = gen_zero_area(r, 300, 16, 0.0625);
    b->meshes[5] = gen_box(0.3, 0.2, 0.4);
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(tdm_bvh_build(b->meshes[2 * k], &b->A[k]), TDM_OK);
        cr_assert_eq(tdm_bvh_build(b->meshes[2 * k + 1], &b->B[k]), TDM_OK);
    }
    b->n = n;
    b->tasks = calloc(n, sizeof *b->tasks);
    b->bufs = calloc(n * BATCH_CAP, sizeof *b->bufs);
    b->want = calloc(n, sizeof *b->want);
    b->want_pairs = calloc(n * BATCH_CAP, sizeof *b->want_pairs);
    cr_assert(b->tasks && b->bufs && b->want && b->want_pairs);
    for (size_t i = 0; i < n; i++) {
        int k = (int)(i % 3);
        gen_pose p = gen_pose_in_ball(r, tdm_d3(0, 0, 0), k == 0 ? 2.3 : 1.8);
        tdm_task t = {b->A[k], b->B[k], NULL, NULL, tdm_xform_from_pose(p.t, p.q), i % 2 ? TDM_MODE_CONTACTS : TDM_MODE_BOOL,
                      i % 2 ? (uint32_t)(1 + i % BATCH_CAP) : 1, NULL, NULL, 0};
        /* the reference: the same task on this thread */
        t.pairs = i % 2 ? &b->want_pairs[i * BATCH_CAP] : NULL;
        tdm_collide(&t, &b->want[i]);
        t.pairs = i % 2 ? &b->bufs[i * BATCH_CAP] : NULL;
        b->tasks[i] = t;
    }
}

static void batch_free(batch *b)
{
    for (int k = 0; k < 3; k++) {
        tdm_bvh_free(b->A[k]);
        tdm_bvh_free(b->B[k]);
    }
    for (int k = 0; k < 6; k++) tdm_mesh_free(b->meshes[k]);
    free(b->tasks);
    free(b->bufs);
    free(b->want);
    free(b->want_pairs);
}

/* Results of a run equal the single-threaded reference, task by task. */
static void batch_check(const batch *b, const tdm_collide_result *got, const char *what)
{
    for (size_t i = 0; i < b->n; i++) {
        const tdm_collide_result *w = &b->want[i], *g = &got[i];
        CHECK(g->colliding == w->colliding && g->truncated == w->truncated && g->n_pairs == w->n_pairs,
              "seed=%llu %s task %zu: colliding/truncated/n_pairs %u/%u/%u, tdm_collide gives %u/%u/%u",
              (unsigned long long)seed, what, i, g->colliding, g->truncated, g->n_pairs, w->colliding, w->truncated,
              w->n_pairs);
        if (w->colliding)
            CHECK(g->first.a_tri == w->first.a_tri && g->first.b_tri == w->first.b_tri,
                  "seed=%llu %s task %zu: first pair differs", (unsigned long long)seed, what, i);
        if (b->tasks[i].mode == TDM_MODE_CONTACTS) {
            uint32_t n = w->n_pairs < b->tasks[i].max_pairs ? w->n_pairs : b->tasks[i].max_pairs;
            CHECK(memcmp(&b->bufs[i * BATCH_CAP], &b->want_pairs[i * BATCH_CAP], n * sizeof(tdm_pair)) == 0,
                  "seed=%llu %s task %zu: pairs differ", (unsigned long long)seed, what, i);
        }
    }
}

Test(engine, thread_pool_matches_collide, .timeout = 120)
{
    gen_rng r = {seed ^ 2};
    batch b;
    batch_make(&b, &r, 3000);
    size_t colliding = 0;
    for (size_t i = 0; i < b.n; i++) colliding += b.want[i].colliding;
    cr_log_info("%zu of %zu tasks collide", colliding, b.n);
    cr_assert(colliding > b.n / 10 && colliding < b.n * 9 / 10);
    const int threads[] = {1, 2, 3, 8, 0};
    tdm_collide_result *got = malloc(sizeof *got * b.n);
    cr_assert_not_null(got);
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        tdm_cpu_engine *e = NULL;
        tdm_pool *pool = NULL;
        cr_assert_eq(tdm_pool_create(threads[k], "test", &pool), TDM_OK, "%d threads", threads[k]);
        cr_assert_eq(tdm_cpu_engine_create(pool, &e), TDM_OK, "%d threads", threads[k]);
        cr_assert_not_null(e);
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        int expect_threads = threads[k] ? threads[k] : (int)(cores > 0 ? cores : 1);
        cr_assert_eq(tdm_cpu_engine_threads(e), expect_threads, "asked for %d threads", threads[k]);
        char what[32];
        snprintf(what, sizeof what, "%d threads", threads[k]);
        for (int rep = 0; rep < 2; rep++) { /* the pool is reused across runs */
            memset(got, 0xab, sizeof *got * b.n);
            memset(b.bufs, 0xcd, sizeof *b.bufs * b.n * BATCH_CAP);
            cr_assert_eq(tdm_cpu_engine_run(e, b.tasks, b.n, got), TDM_OK);
            batch_check(&b, got, what);
        }
        /* batches smaller than the pool, and empty ones */
        memset(got, 0xab, sizeof *got * b.n);
        cr_assert_eq(tdm_cpu_engine_run(e, b.tasks, 1, got), TDM_OK);
        CHECK(got[0].colliding == b.want[0].colliding && got[0].n_pairs == b.want[0].n_pairs, "%s: batch of one", what);
        cr_assert_eq(tdm_cpu_engine_run(e, b.tasks, 0, got), TDM_OK);
        tdm_cpu_engine_destroy(e);
        tdm_pool_destroy(pool);
    }
    free(got);
    batch_free(&b);
}

Test(engine, create_needs_a_pool)
{
    tdm_cpu_engine *e = (tdm_cpu_engine *)(uintptr_t)1;
    cr_assert_eq(tdm_cpu_engine_create(NULL, &e), TDM_EINVAL);
    cr_assert_null(e, "*out must be NULL on failure");
    tdm_cpu_engine_destroy(NULL);
}

/* Two threads run batches on one engine (one pool) at the same time: each must
 * get its own right answers. */
typedef struct caller { tdm_cpu_engine *e; batch *b; size_t lo, n; tdm_collide_result *got; int rc; } caller;

static void *caller_main(void *arg)
{
    caller *c = arg;
    for (int rep = 0; rep < 5 && c->rc == 0; rep++) c->rc = tdm_cpu_engine_run(c->e, c->b->tasks + c->lo, c->n, c->got);
    return NULL;
}

Test(engine, concurrent_callers, .timeout = 120)
{
    gen_rng r = {seed ^ 3};
    batch b;
    batch_make(&b, &r, 1200);
    tdm_cpu_engine *e;
    tdm_pool *pool;
    cr_assert_eq(tdm_pool_create(2, "test", &pool), TDM_OK);
    cr_assert_eq(tdm_cpu_engine_create(pool, &e), TDM_OK);
    caller c[2] = {{e, &b, 0, 600, malloc(sizeof(tdm_collide_result) * 600), 0},
                   {e, &b, 600, 600, malloc(sizeof(tdm_collide_result) * 600), 0}};
    pthread_t th[2];
    for (int k = 0; k < 2; k++) cr_assert_eq(pthread_create(&th[k], NULL, caller_main, &c[k]), 0);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(c[k].rc, TDM_OK);
        for (size_t i = 0; i < c[k].n; i++) {
            const tdm_collide_result *w = &b.want[c[k].lo + i], *g = &c[k].got[i];
            CHECK(g->colliding == w->colliding && g->n_pairs == w->n_pairs && g->truncated == w->truncated,
                  "caller %d task %zu: %u/%u/%u, expected %u/%u/%u", k, c[k].lo + i, g->colliding, g->n_pairs,
                  g->truncated, w->colliding, w->n_pairs, w->truncated);
        }
        free(c[k].got);
    }
    tdm_cpu_engine_destroy(e);
    tdm_pool_destroy(pool);
    batch_free(&b);
}
