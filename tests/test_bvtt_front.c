/* workpile/bvtt_front.h: a front carried along smooth sequences of transforms
 * must answer every state exactly as tdm_collide does from the roots, and as the
 * all-pairs brute force (brute.h) where the meshes are small enough.
 *
 * Sequences move B between two random poses (translation along a line plus a
 * bend, rotation by slerp) in 20 to 120 steps, in and out of contact, so the
 * front sprouts, prunes and goes on after colliding states (bool mode stops at
 * the first intersecting pair and leaves the rest of the front untested). Grid
 * sequences step a half-turned B along a grid line, so that faces, edges and
 * vertices touch exactly at some states. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "brute.h"
#include "check.h"
#include "gen.h"
#include "workpile/bvtt_front.h"
#include "workpile/cpu_engine.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0xf12a7e5ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(bvtt_front, .init = suite_init);

typedef enum { SEQ_SMOOTH, SEQ_GRID } seq_kind;

typedef struct scenario {
    const char *name;
    tdm_mesh *env, *robot;
    seq_kind kind;
    tdm_dvec3 center; /* SEQ_SMOOTH: end poses uniform in this ball */
    double radius;
    double step;      /* SEQ_GRID: translations on this grid within +-steps */
    int steps;
    int n_seqs;
} scenario;

static const tdm_quat half_turns[4] = {{0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};

/* The states of one sequence, into x[0..n) (n returned, at most cap). */
static int make_sequence(const scenario *s, gen_rng *r, tdm_xform *x, int cap)
{
    if (s->kind == SEQ_GRID) { /* along one axis, one grid step a state, a fixed half-turn */
        int axis = (int)gen_int(r, 0, 2), n = 2 * s->steps + 1;
        if (n > cap) n = cap;
        double at[3];
        for (int k = 0; k < 3; k++) at[k] = (double)gen_int(r, -s->steps, s->steps) * s->step;
        tdm_quat q = half_turns[gen_int(r, 0, 3)];
        for (int i = 0; i < n; i++) {
            at[axis] = (double)(i - s->steps) * s->step;
            x[i] = tdm_xform_from_pose(tdm_d3_add(s->center, tdm_d3(at[0], at[1], at[2])), q);
        }
        return n;
    }
    int n = (int)gen_int(r, 20, 120);
    if (n > cap) n = cap;
    gen_pose p0 = gen_pose_in_ball(r, s->center, s->radius), p1 = gen_pose_in_ball(r, s->center, s->radius);
    tdm_dvec3 bend = gen_in_ball(r, tdm_d3(0, 0, 0), s->radius * 0.5);
    for (int i = 0; i < n; i++) {
        double u = (double)i / (n - 1), w = sin(3.14159265358979323846 * u);
        tdm_dvec3 t = tdm_d3(p0.t.x + u * (p1.t.x - p0.t.x) + w * bend.x, p0.t.y + u * (p1.t.y - p0.t.y) + w * bend.y,
                             p0.t.z + u * (p1.t.z - p0.t.z) + w * bend.z);
        x[i] = tdm_xform_from_pose(t, tdm_quat_slerp(p0.q, p1.q, u));
    }
    return n;
}

enum { N_SCENARIOS = 7, MAX_STATES = 128 };

static void make_scenarios(scenario *s, gen_rng *r)
{
    memset(s, 0, sizeof *s * N_SCENARIOS);
    s[0] = (scenario){"sphere vs torus", gen_torus(1.5, 0.5, 32, 16), gen_sphere(0.6, 16), SEQ_SMOOTH,
                      {0, 0, 0}, 2.3, 0, 0, 40};
    s[1] = (scenario){"pile vs pile", gen_pile(r, 60, 1, 0.25), gen_pile(r, 30, 0.3, 0.15), SEQ_SMOOTH,
                      {0, 0, 0}, 1.5, 0, 0, 40};
    s[2] = (scenario){"box vs slivers", gen_slivers(r, 40, 1, 0.8, 1e-3), gen_box(0.15, 0.1, 0.2), SEQ_SMOOTH,
                      {0, 0, 0}, 1.4, 0, 0, 40};
    s[3] = (scenario){"zero-area vs sphere", gen_zero_area(r, 60, 16, 0.0625), gen_sphere(0.35, 12), SEQ_SMOOTH,
                      {0, 0, 0}, 1.4, 0, 0, 30};
    s[4] = (scenario){"box vs box, exact contacts", gen_box(0.5, 0.5, 0.5), gen_box(0.25, 0.5, 0.125), SEQ_GRID,
                      {0, 0, 0}, 0, 0.125, 7, 100};
    s[5] = (scenario){"grid pile vs grid pile, exact contacts", gen_grid_pile(r, 40, 8, 2, 0.125),
                      gen_grid_pile(r, 15, 3, 2, 0.125), SEQ_GRID, {0, 0, 0}, 0, 0.125, 10, 80};
    tdm_mesh *torus = gen_torus(1.5, 0.5, 48, 24);
    s[6] = (scenario){"torus far from the origin", gen_translated(torus, 500, -300, 200), gen_sphere(0.6, 16),
                      SEQ_SMOOTH, {500, -300, 200}, 2.3, 0, 0, 30};
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

/* Runs every scenario's sequences through one front per sequence (prune_every
 * as given), each state against tdm_collide and, for small meshes, the brute
 * force. */
static void run_scenarios(uint32_t prune_every)
{
    gen_rng r = {seed ^ prune_every};
    scenario s[N_SCENARIOS];
    make_scenarios(s, &r);
    tdm_xform x[MAX_STATES];
    long total = 0;
    for (int k = 0; k < N_SCENARIOS; k++) {
        tdm_bvh *A, *B;
        cr_assert_eq(tdm_bvh_build(s[k].env, &A), TDM_OK);
        cr_assert_eq(tdm_bvh_build(s[k].robot, &B), TDM_OK);
        int use_brute = (size_t)s[k].env->n_tris * s[k].robot->n_tris <= 20000;
        brute bf;
        cr_assert_eq(brute_init(&bf, s[k].env, s[k].robot), 0);
        tdm_front f;
        tdm_front_init(&f);
        f.prune_every = prune_every;
        long states = 0, colliding = 0, changes = 0, box_front = 0, box_roots = 0;
        for (int q = 0; q < s[k].n_seqs; q++) {
            int n = make_sequence(&s[k], &r, x, MAX_STATES);
            tdm_front_reset(&f);
            uint32_t prev = 2;
            for (int i = 0; i < n; i++) {
                tdm_task t = {A, B, NULL, NULL, x[i], TDM_MODE_BOOL, 1, NULL, NULL, 0};
                tdm_collide_result want, got;
                tdm_collide(&t, &want);
                CHECK(tdm_front_collide(&f, &t, &got) == TDM_OK, "seed=%llu %s seq %d state %d: front failed",
                      (unsigned long long)seed, s[k].name, q, i);
                CHECK(got.colliding == want.colliding,
                      "seed=%llu %s seq %d state %d (t = %.17g %.17g %.17g): front says %u, tdm_collide %u",
                      (unsigned long long)seed, s[k].name, q, i, x[i].t.x, x[i].t.y, x[i].t.z, got.colliding,
                      want.colliding);
                CHECK(got.n_pairs == got.colliding && got.truncated == 0, "%s seq %d state %d: n_pairs %u",
                      s[k].name, q, i, got.n_pairs);
                CHECK(!got.colliding || (got.first.a_tri == want.first.a_tri && got.first.b_tri == want.first.b_tri),
                      "%s seq %d state %d: first pair (%u, %u), tdm_collide's (%u, %u)", s[k].name, q, i,
                      got.first.a_tri, got.first.b_tri, want.first.a_tri, want.first.b_tri);
                if (use_brute) {
                    size_t expect = brute_run(&bf, &x[i]);
                    CHECK(got.colliding == (expect > 0), "seed=%llu %s seq %d state %d: front says %u, brute force %zu",
                          (unsigned long long)seed, s[k].name, q, i, got.colliding, expect);
                    if (got.colliding)
                        CHECK(brute_has(&bf, got.first), "%s seq %d state %d: first pair (%u, %u) does not intersect",
                              s[k].name, q, i, got.first.a_tri, got.first.b_tri);
                }
                CHECK(f.n >= 1, "%s seq %d state %d: empty front", s[k].name, q, i);
                changes += prev != 2 && prev != got.colliding;
                prev = got.colliding;
                colliding += got.colliding;
                box_front += got.box_tests;
                box_roots += want.box_tests;
                states++;
            }
        }
        cr_log_info("%-40s prune_every %u: %5ld states, %5ld colliding, %4ld changes; box tests %ld front, %ld roots",
                    s[k].name, prune_every, states, colliding, changes, box_front, box_roots);
        CHECK(colliding > states / 10 && colliding < states * 9 / 10,
              "%s: %ld of %ld states collide; the sequences should mix both", s[k].name, colliding, states);
        CHECK(changes >= s[k].n_seqs / 4, "%s: only %ld changes between free and colliding", s[k].name, changes);
        total += states;
        tdm_front_fini(&f);
        brute_free(&bf);
        tdm_bvh_free(A);
        tdm_bvh_free(B);
    }
    cr_log_info("%ld states", total);
    free_scenarios(s);
}

Test(bvtt_front, matches_tdm_collide_and_brute_force, .timeout = 240) { run_scenarios(1); }

/* Pruning only now and then, and never, must not change an answer either. */
Test(bvtt_front, answers_do_not_depend_on_pruning, .timeout = 240)
{
    run_scenarios(3);
    run_scenarios(0);
}

/* A sphere leaving a torus's hole for far away: the front prunes back to the
 * root pair (one box test a state), and coming back it sprouts again. */
Test(bvtt_front, prunes_back_to_the_roots)
{
    tdm_mesh *ma = gen_torus(1.5, 0.5, 32, 16), *mb = gen_sphere(0.6, 16);
    cr_assert(ma && mb);
    tdm_bvh *A, *B;
    cr_assert_eq(tdm_bvh_build(ma, &A), TDM_OK);
    cr_assert_eq(tdm_bvh_build(mb, &B), TDM_OK);
    tdm_front f;
    tdm_front_init(&f);
    tdm_quat q = {0, 0, 0, 1};
    uint32_t most = 0, n0 = 0;
    for (int i = 0; i <= 60; i++) { /* along x from the hole (free, close to every inner face) to x = 12 */
        double u = i <= 40 ? i / 40.0 : 1.0;
        tdm_task t = {A, B, NULL, NULL, tdm_xform_from_pose(tdm_d3(12 * u, 0.05, 0), q), TDM_MODE_BOOL, 1, NULL, NULL, 0};
        tdm_collide_result want, got;
        tdm_collide(&t, &want);
        cr_assert_eq(tdm_front_collide(&f, &t, &got), TDM_OK);
        cr_assert_eq(got.colliding, want.colliding, "state %d", i);
        if (f.n > most) most = f.n;
        if (i == 0) n0 = f.n;
        if (i >= 45) {
            cr_assert_eq(f.n, 1, "state %d: front of %u pairs far from the torus", i, f.n);
            cr_assert_eq(got.box_tests, 1, "state %d", i);
        }
    }
    cr_assert_gt(most, 4, "the front never grew (%u pairs)", most);
    /* and back to the first state */
    tdm_task t = {A, B, NULL, NULL, tdm_xform_from_pose(tdm_d3(0, 0.05, 0), q), TDM_MODE_BOOL, 1, NULL, NULL, 0};
    tdm_collide_result want, got;
    tdm_collide(&t, &want);
    cr_assert_eq(tdm_front_collide(&f, &t, &got), TDM_OK);
    cr_assert_eq(got.colliding, want.colliding);
    cr_assert_eq(got.box_tests, want.box_tests, "from the root pair the descent is tdm_collide's");
    cr_assert_eq(f.n, n0);
    tdm_front_fini(&f);
    tdm_bvh_free(A);
    tdm_bvh_free(B);
    tdm_mesh_free(ma);
    tdm_mesh_free(mb);
}

/* The same free state twice: the front is where the first descent stopped, so the
 * second check tests no more boxes than a descent from the roots, and the front
 * stays the same. */
Test(bvtt_front, a_repeated_state_costs_no_more_than_the_roots)
{
    gen_rng r = {seed};
    tdm_mesh *ma = gen_torus(1.5, 0.5, 32, 16), *mb = gen_sphere(0.6, 16);
    cr_assert(ma && mb);
    tdm_bvh *A, *B;
    cr_assert_eq(tdm_bvh_build(ma, &A), TDM_OK);
    cr_assert_eq(tdm_bvh_build(mb, &B), TDM_OK);
    tdm_front f;
    tdm_front_init(&f);
    int tried = 0;
    for (int i = 0; i < 400; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(0, 0, 0), 2.3);
        tdm_task t = {A, B, NULL, NULL, tdm_xform_from_pose(p.t, p.q), TDM_MODE_BOOL, 1, NULL, NULL, 0};
        tdm_collide_result want, first, again;
        tdm_collide(&t, &want);
        if (want.colliding) continue;
        tdm_front_reset(&f);
        cr_assert_eq(tdm_front_collide(&f, &t, &first), TDM_OK);
        CHECK(first.box_tests == want.box_tests && first.colliding == 0, "pose %d: first check %u box tests, roots %u",
              i, first.box_tests, want.box_tests);
        uint32_t n = f.n;
        cr_assert_eq(tdm_front_collide(&f, &t, &again), TDM_OK);
        CHECK(again.colliding == 0 && again.box_tests <= want.box_tests && f.n == n,
              "pose %d: again %u box tests (roots %u), front %u -> %u pairs", i, again.box_tests, want.box_tests, n,
              f.n);
        tried++;
    }
    cr_assert_gt(tried, 50);
    tdm_front_fini(&f);
    tdm_bvh_free(A);
    tdm_bvh_free(B);
    tdm_mesh_free(ma);
    tdm_mesh_free(mb);
}

/* Another pair of trees starts from the roots; contacts mode is refused. */
Test(bvtt_front, other_trees_and_contacts_mode)
{
    tdm_mesh *ma = gen_box(0.5, 0.5, 0.5), *mb = gen_sphere(0.3, 12), *mc = gen_torus(1, 0.25, 16, 8);
    cr_assert(ma && mb && mc);
    tdm_bvh *A, *B, *C;
    cr_assert_eq(tdm_bvh_build(ma, &A), TDM_OK);
    cr_assert_eq(tdm_bvh_build(mb, &B), TDM_OK);
    cr_assert_eq(tdm_bvh_build(mc, &C), TDM_OK);
    tdm_front f;
    tdm_front_init(&f);
    tdm_quat q = {0, 0, 0, 1};
    tdm_collide_result want, got;
    tdm_task t = {A, B, NULL, NULL, tdm_xform_from_pose(tdm_d3(0.7, 0, 0), q), TDM_MODE_BOOL, 1, NULL, NULL, 0};
    cr_assert_eq(tdm_front_collide(&f, &t, &got), TDM_OK);
    cr_assert_eq(got.colliding, 1);
    tdm_task u = {C, B, NULL, NULL, tdm_xform_from_pose(tdm_d3(0.7, 0, 0), q), TDM_MODE_BOOL, 1, NULL, NULL, 0};
    tdm_collide(&u, &want);
    cr_assert_eq(tdm_front_collide(&f, &u, &got), TDM_OK);
    cr_assert_eq(got.colliding, want.colliding);
    cr_assert_eq(got.box_tests, want.box_tests);
    cr_assert(f.a == C && f.b == B);
    uint32_t n = f.n;
    tdm_task c = u;
    c.mode = TDM_MODE_CONTACTS;
    memset(&got, 0xab, sizeof got);
    cr_assert_eq(tdm_front_collide(&f, &c, &got), TDM_EINVAL);
    cr_assert_eq(got.colliding, 0xabababab, "res written in contacts mode");
    cr_assert_eq(f.n, n);
    tdm_front_fini(&f);
    cr_assert_null(f.pairs);
    tdm_bvh_free(A);
    tdm_bvh_free(B);
    tdm_bvh_free(C);
    tdm_mesh_free(ma);
    tdm_mesh_free(mb);
    tdm_mesh_free(mc);
}
