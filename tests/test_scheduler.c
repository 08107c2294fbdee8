/* workpile/sched.h: the scheduler over whole scenes, on every engine.
 *
 *  - the CPU engine's per-query answers are those of tdm_collide run on each
 *    checked pair directly (first colliding pair, summed and capped contacts,
 *    listed pairs in checked-pair order);
 *  - with a GPU, the GPU-resident, hybrid and automatic (calibrated dispatch)
 *    engines give exactly the CPU engine's answers, pairs included, and their
 *    stats say which engine ran the work;
 *  - a scene whose trees are not resident runs on the CPU engine, and so does one
 *    whose trees were removed; an upload over the memory budget fails with
 *    TDM_EGPUMEM and changes nothing else;
 *  - several threads running at once on one engine (its lanes, and one thread
 *    more than it has) get the answers of runs one at a time, on every engine;
 *  - without a GPU, asking for a GPU engine fails with TDM_ENODEV and a reason,
 *    and AUTO falls back to the CPU engine and says why;
 *  - device lists (tdm_sched_devices_parse) are read exactly and bad ones named;
 *    a list with gpu_device, or a device that does not exist, is refused; the
 *    CPU engine ignores the list; the registry keeps one copy per device and
 *    frees the removed ones device by device (tests/test_gpu.c runs two GPU
 *    engines on one GPU);
 *  - removed trees' device memory is given back with no run after it: by
 *    tdm_sched_reclaim, and by a pooler's sleeping thread, which the removal
 *    wakes. */
#include <pthread.h>
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "geom/bvh.h"
#include "gpu/gpu_geom.h"
#include "workpile/cpu_engine.h"
#include "workpile/pooler.h"
#include "workpile/registry.h"
#include "workpile/sched.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x5c4ed01e5ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(scheduler, .init = suite_init);

static int have_gpu(const char **why)
{
    return tdm_gpu_available(why);
}

enum { N_MESHES = 5, N_QUERIES = 3000, MAX_PAIRS = 8 };

typedef struct world {
    tdm_bvh *bvh[N_MESHES];
    tdm_scene *scene;
    tdm_xform *poses; /* N_QUERIES x scene->n_movable */
} world;

static tdm_bvh *tree(tdm_mesh *m)
{
    cr_assert(m, "generating a mesh");
    tdm_bvh *b = NULL;
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    tdm_mesh_free(m);
    return b;
}

/* Two fixed objects (a torus at the origin, a pile beside it) and three movable
 * ones (a sphere, a box, a small torus), one pair of them allowed to touch. */
static void world_make(world *w, gen_rng *r)
{
    w->bvh[0] = tree(gen_torus(1.5, 0.5, 32, 16));
    w->bvh[1] = tree(gen_pile(r, 60, 0.8, 0.25));
    w->bvh[2] = tree(gen_sphere(0.5, 16));
    w->bvh[3] = tree(gen_box(0.3, 0.2, 0.6));
    w->bvh[4] = tree(gen_torus(0.5, 0.15, 24, 12));
    tdm_scene_obj objs[N_MESHES] = {
        {10, w->bvh[0], 0, tdm_xform_identity()},
        {20, w->bvh[1], 0, tdm_xform_from_pose(tdm_d3(2.5, 0, 0), gen_rotation(r))},
        {30, w->bvh[2], 1, tdm_xform_identity()},
        {40, w->bvh[3], 1, tdm_xform_identity()},
        {50, w->bvh[4], 1, tdm_xform_identity()},
    };
    tdm_id_pair allowed[1] = {{40, 30}};
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(objs, N_MESHES, allowed, 1, &w->scene, &err), TDM_OK, "%s", err.msg);
    w->poses = malloc(sizeof *w->poses * N_QUERIES * w->scene->n_movable);
    cr_assert(w->poses);
    for (size_t i = 0; i < (size_t)N_QUERIES * w->scene->n_movable; i++) {
        gen_pose p = gen_pose_in_ball(r, tdm_d3(1, 0, 0), 2.5);
        w->poses[i] = tdm_xform_from_pose(p.t, p.q);
    }
}

static void world_free(world *w)
{
    tdm_scene_destroy(w->scene);
    for (int i = 0; i < N_MESHES; i++) tdm_bvh_free(w->bvh[i]);
    free(w->poses);
}

typedef struct answers {
    tdm_sched_result res[N_QUERIES];
    tdm_sched_contact pairs[N_QUERIES][MAX_PAIRS];
} answers;

/* mode 0: bool; 1: contacts, counts only; 2: contacts capped at MAX_PAIRS, with pairs. */
static int run(tdm_sched *e, const world *w, int mode, answers *a)
{
    static tdm_sched_query q[N_QUERIES];
    memset(a, 0, sizeof *a);
    for (int i = 0; i < N_QUERIES; i++)
        q[i] = (tdm_sched_query){w->scene, &w->poses[(size_t)i * w->scene->n_movable],
                           mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, mode == 2 ? MAX_PAIRS : 1000000,
                           mode == 2 ? a->pairs[i] : NULL, NULL};
    return tdm_sched_run(e, q, N_QUERIES, a->res);
}

static void expect_same(const answers *got, const answers *want, int mode, const char *what)
{
    for (int i = 0; i < N_QUERIES; i++) {
        const tdm_sched_result *g = &got->res[i], *x = &want->res[i];
        cr_assert_eq(g->colliding, x->colliding, "%s, mode %d, query %d: colliding", what, mode, i);
        cr_assert_eq(g->contacts, x->contacts, "%s, mode %d, query %d: contacts", what, mode, i);
        cr_assert_eq(g->truncated, x->truncated, "%s, mode %d, query %d: truncated", what, mode, i);
        cr_assert_eq(g->n_pairs, x->n_pairs, "%s, mode %d, query %d: n_pairs", what, mode, i);
        if (g->colliding) {
            cr_assert(g->object_a == x->object_a && g->object_b == x->object_b,
                      "%s, mode %d, query %d: colliding pair (%u, %u), want (%u, %u)", what, mode, i, g->object_a,
                      g->object_b, x->object_a, x->object_b);
        }
        cr_assert(memcmp(got->pairs[i], want->pairs[i], g->n_pairs * sizeof(tdm_sched_contact)) == 0,
                  "%s, mode %d, query %d: listed pairs differ", what, mode, i);
    }
}

static tdm_sched *engine(tdm_backend_kind kind, int calibrate)
{
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = kind;
    c.calibrate = calibrate;
    tdm_sched *e = NULL;
    char why[256];
    int rc = tdm_sched_create(&c, &e, why, sizeof why);
    cr_assert_eq(rc, TDM_OK, "creating the %s engine: %s", tdm_backend_name(kind), why);
    return e;
}

static answers want[3], got;

/* The CPU engine's answers for the three modes, checked against tdm_collide on
 * each checked pair. */
static void reference(const world *w)
{
    tdm_sched *e = engine(TDM_BACKEND_CPU, 0);
    const tdm_scene *s = w->scene;
    for (int mode = 0; mode < 3; mode++) {
        cr_assert_eq(run(e, w, mode, &want[mode]), TDM_OK);
        size_t colliding = 0;
        for (int i = 0; i < N_QUERIES; i++) {
            const tdm_xform *poses = &w->poses[(size_t)i * s->n_movable];
            uint64_t sum = 0;
            uint32_t listed = 0, first_lo = 0, first_hi = 0, any = 0;
            tdm_sched_contact expect_pairs[MAX_PAIRS];
            for (uint32_t k = 0; k < s->n_checks; k++) {
                const tdm_scene_check *c = &s->checks[k];
                const tdm_scene_obj *oa = &s->objects[c->a], *ob = &s->objects[c->b];
                tdm_xform xa = oa->movable ? poses[s->slot[c->a]] : oa->pose;
                tdm_xform xb = ob->movable ? poses[s->slot[c->b]] : ob->pose;
                tdm_pair buf[MAX_PAIRS];
                uint32_t room = MAX_PAIRS - listed;
                tdm_task t = {oa->bvh, ob->bvh, NULL, NULL, tdm_xform_rel(&xa, &xb), mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL,
                              mode == 2 ? (room ? room : 1) : 1000000, NULL, NULL, 0};
                tdm_collide_result r;
                tdm_collide(&t, &r);
                if (!r.colliding) continue;
                if (!any) {
                    any = 1;
                    first_lo = s->objects[c->lo].id;
                    first_hi = s->objects[c->hi].id;
                }
                if (mode == 0) break;
                /* the count: run uncapped for the true number */
                tdm_task full = t;
                full.max_pairs = 1000000;
                tdm_collide_result rf;
                tdm_collide(&full, &rf);
                sum += rf.n_pairs;
                if (mode == 2 && room) {
                    t.max_pairs = room;
                    t.pairs = buf;
                    tdm_collide(&t, &r);
                    int swapped = c->a != c->lo;
                    for (uint32_t p = 0; p < r.n_pairs; p++)
                        expect_pairs[listed++] = (tdm_sched_contact){s->objects[c->lo].id,
                                                               swapped ? buf[p].b_tri : buf[p].a_tri,
                                                               s->objects[c->hi].id,
                                                               swapped ? buf[p].a_tri : buf[p].b_tri};
                }
            }
            const tdm_sched_result *g = &want[mode].res[i];
            colliding += any;
            cr_assert_eq(g->colliding, any, "mode %d, query %d", mode, i);
            if (!any) continue;
            cr_assert(g->object_a == first_lo && g->object_b == first_hi, "mode %d, query %d: first pair", mode, i);
            if (mode == 0) continue;
            uint32_t cap = mode == 2 ? MAX_PAIRS : 1000000;
            cr_assert_eq(g->contacts, sum > cap ? cap : sum, "mode %d, query %d: contacts", mode, i);
            cr_assert_eq(g->truncated, sum > cap, "mode %d, query %d: truncated", mode, i);
            if (mode == 2) {
                cr_assert_eq(g->n_pairs, listed, "query %d: pairs listed", i);
                cr_assert(memcmp(want[mode].pairs[i], expect_pairs, listed * sizeof(tdm_sched_contact)) == 0,
                          "query %d: listed pairs", i);
            }
        }
        /* the poses must exercise both answers */
        cr_assert(colliding > N_QUERIES / 10 && colliding < N_QUERIES - N_QUERIES / 10,
                  "mode %d: %zu of %d colliding", mode, colliding, N_QUERIES);
    }
    tdm_sched_destroy(e);
}

static void require_gpu(void)
{
    const char *why = NULL;
    if (!have_gpu(&why)) cr_skip_test("no GPU: %s", why ? why : "unknown");
}

/* The world of the seed, and the CPU engine's answers in one mode. */
static void world_and_cpu_answers(world *w, int mode)
{
    gen_rng r = {seed};
    world_make(w, &r);
    tdm_sched *cpu = engine(TDM_BACKEND_CPU, 0);
    cr_assert_eq(run(cpu, w, mode, &want[mode]), TDM_OK);
    tdm_sched_destroy(cpu);
}

Test(scheduler, cpu_engine_matches_collide_per_pair, .timeout = 120)
{
    gen_rng r = {seed};
    world w;
    world_make(&w, &r);
    reference(&w);
    world_free(&w);
}

Test(scheduler, gpu_engines_match_cpu_engine, .timeout = 240)
{
    require_gpu();
    gen_rng r = {seed};
    world w;
    world_make(&w, &r);
    reference(&w);
    const tdm_backend_kind kinds[3] = {TDM_BACKEND_GPU, TDM_BACKEND_HYBRID, TDM_BACKEND_AUTO};
    for (int k = 0; k < 3; k++) {
        tdm_sched *e = engine(kinds[k], 1);
        cr_log_info("%s: %s", tdm_backend_name(kinds[k]), tdm_sched_detail(e));
        for (int i = 0; i < N_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
        for (int mode = 0; mode < 3; mode++) {
            cr_assert_eq(run(e, &w, mode, &got), TDM_OK);
            expect_same(&got, &want[mode], mode, tdm_backend_name(kinds[k]));
        }
        tdm_sched_stats st;
        tdm_sched_get_stats(e, &st);
        cr_log_info("%s: cpu/gpu/hybrid tasks %llu/%llu/%llu, workpiles %llu of mean %.0f pairs, threshold %llu",
                    tdm_backend_name(kinds[k]), (unsigned long long)st.cpu_tasks,
                    (unsigned long long)st.gpu_tasks, (unsigned long long)st.hybrid_tasks,
                    (unsigned long long)st.gpu_iterations,
                    st.gpu_iterations ? (double)st.gpu_pairs / (double)st.gpu_iterations : 0.0,
                    (unsigned long long)st.dispatch_threshold);
        cr_assert_eq(st.queries, 3 * N_QUERIES);
        cr_assert_eq(st.device_meshes, N_MESHES);
        if (kinds[k] == TDM_BACKEND_GPU) {
            cr_assert_eq(st.gpu_queries, 3 * N_QUERIES, "every query ran on the GPU");
            cr_assert_eq(st.hybrid_tasks, 0);
        }
        if (kinds[k] == TDM_BACKEND_HYBRID) {
            cr_assert_eq(st.hybrid_queries, 3 * N_QUERIES, "every query ran on the hybrid engine");
            cr_assert_eq(st.gpu_tasks, 0);
        }
        cr_assert_eq(st.cpu_queries + st.gpu_queries + st.hybrid_queries, 3 * N_QUERIES);
        if (kinds[k] != TDM_BACKEND_AUTO) cr_assert(st.gpu_iterations > 0 && st.gpu_pairs >= st.gpu_iterations);
        for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
        tdm_sched_destroy(e);
    }
    world_free(&w);
}

/* One checked pair per query, and batches of many chunks: the GPU engine's host
 * threads build the tasks of neighbouring ranges at once (tdm_gpu_run_fed), and
 * runs of tasks on one mesh pair cross their boundaries. */
Test(scheduler, gpu_one_pair_scene_large_batches, .timeout = 240)
{
    require_gpu();
    enum { NQ = 40000 };
    gen_rng r = {seed ^ 0x0e9a1};
    tdm_bvh *env = tree(gen_torus(1.5, 0.5, 48, 24)), *robot = tree(gen_sphere(0.6, 12));
    tdm_scene_obj objs[2] = {{1, env, 0, tdm_xform_identity()}, {2, robot, 1, tdm_xform_identity()}};
    tdm_scene *scene = NULL;
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(objs, 2, NULL, 0, &scene, &err), TDM_OK, "%s", err.msg);
    tdm_xform *poses = malloc(sizeof *poses * NQ);
    tdm_sched_query *q = malloc(sizeof *q * NQ);
    tdm_sched_result *want = malloc(sizeof *want * NQ), *res = malloc(sizeof *res * NQ);
    cr_assert(poses && q && want && res);
    for (int i = 0; i < NQ; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(1.5, 0, 0), 1.5);
        poses[i] = tdm_xform_from_pose(p.t, p.q);
    }
    tdm_sched *cpu = engine(TDM_BACKEND_CPU, 0), *gpu = engine(TDM_BACKEND_GPU, 1);
    cr_assert_eq(tdm_sched_mesh_add(gpu, env), TDM_OK);
    cr_assert_eq(tdm_sched_mesh_add(gpu, robot), TDM_OK);
    for (int mode = 0; mode < 2; mode++) {
        for (int i = 0; i < NQ; i++)
            q[i] = (tdm_sched_query){scene, &poses[i], mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000000, NULL, NULL};
        cr_assert_eq(tdm_sched_run(cpu, q, NQ, want), TDM_OK);
        cr_assert_eq(tdm_sched_run(gpu, q, NQ, res), TDM_OK);
        size_t colliding = 0;
        for (int i = 0; i < NQ; i++) {
            colliding += want[i].colliding;
            cr_assert(res[i].colliding == want[i].colliding && res[i].contacts == want[i].contacts,
                      "mode %d, query %d: colliding %u contacts %u, the CPU engine %u %u", mode, i, res[i].colliding,
                      res[i].contacts, want[i].colliding, want[i].contacts);
        }
        cr_assert(colliding > NQ / 20 && colliding < NQ - NQ / 20, "mode %d: %zu of %d colliding", mode, colliding, NQ);
    }
    tdm_sched_stats st;
    tdm_sched_get_stats(gpu, &st);
    cr_assert_eq(st.gpu_queries, 2 * NQ, "every query ran on the GPU (%llu did)", (unsigned long long)st.gpu_queries);
    tdm_sched_mesh_remove(gpu, env);
    tdm_sched_mesh_remove(gpu, robot);
    tdm_sched_destroy(cpu);
    tdm_sched_destroy(gpu);
    tdm_scene_destroy(scene);
    tdm_bvh_free(env);
    tdm_bvh_free(robot);
    free(poses);
    free(q);
    free(want);
    free(res);
}

/* ---- several runs at once ---------------------------------------------------- */

enum { CONC_THREADS = 4, CONC_LANES = 3, CONC_ROUNDS = 2 };

typedef struct conc_arg {
    tdm_sched *e;
    const world *w;
    int k;           /* which thread: its modes go in a rotated order */
    int rc;          /* the first failed run's code, else 0 */
    int bad_mode;    /* -1, or the mode of the first answer that differs */
    int bad_query;
    answers *a;
    tdm_sched_query *q;
} conc_arg;

/* The first query whose answer differs, or -1. */
static int first_difference(const answers *g, const answers *x)
{
    for (int i = 0; i < N_QUERIES; i++) {
        const tdm_sched_result *a = &g->res[i], *b = &x->res[i];
        if (a->colliding != b->colliding || a->contacts != b->contacts || a->truncated != b->truncated ||
            a->n_pairs != b->n_pairs || (a->colliding && (a->object_a != b->object_a || a->object_b != b->object_b)) ||
            memcmp(g->pairs[i], x->pairs[i], a->n_pairs * sizeof(tdm_sched_contact)) != 0)
            return i;
    }
    return -1;
}

static void *conc_main(void *p)
{
    conc_arg *c = p;
    const world *w = c->w;
    for (int round = 0; round < CONC_ROUNDS && !c->rc && c->bad_mode < 0; round++)
        for (int j = 0; j < 3; j++) {
            int mode = (j + c->k + round) % 3;
            memset(c->a, 0, sizeof *c->a);
            for (int i = 0; i < N_QUERIES; i++)
                c->q[i] = (tdm_sched_query){w->scene, &w->poses[(size_t)i * w->scene->n_movable],
                                      mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, mode == 2 ? MAX_PAIRS : 1000000,
                                      mode == 2 ? c->a->pairs[i] : NULL, NULL};
            c->rc = tdm_sched_run(c->e, c->q, N_QUERIES, c->a->res);
            if (c->rc) return NULL;
            int bad = first_difference(c->a, &want[mode]);
            if (bad >= 0) {
                c->bad_mode = mode;
                c->bad_query = bad;
                return NULL;
            }
        }
    return NULL;
}

/* CONC_THREADS threads, each running every mode CONC_ROUNDS times on e. */
static void run_concurrently(tdm_sched *e, const world *w, const char *what)
{
    pthread_t th[CONC_THREADS];
    conc_arg args[CONC_THREADS];
    tdm_sched_stats before, after;
    tdm_sched_get_stats(e, &before);
    for (int k = 0; k < CONC_THREADS; k++) {
        args[k] = (conc_arg){e, w, k, 0, -1, -1, malloc(sizeof(answers)), malloc(sizeof(tdm_sched_query) * N_QUERIES)};
        cr_assert(args[k].a && args[k].q);
        cr_assert_eq(pthread_create(&th[k], NULL, conc_main, &args[k]), 0);
    }
    for (int k = 0; k < CONC_THREADS; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < CONC_THREADS; k++) {
        cr_assert_eq(args[k].rc, TDM_OK, "%s, thread %d: run failed: %s", what, k, tdm_strerror(args[k].rc));
        cr_assert_eq(args[k].bad_mode, -1, "%s, thread %d: mode %d, query %d differs from the CPU engine run alone",
                     what, k, args[k].bad_mode, args[k].bad_query);
        free(args[k].a);
        free(args[k].q);
    }
    tdm_sched_get_stats(e, &after);
    cr_assert_eq(after.runs - before.runs, (uint64_t)CONC_THREADS * CONC_ROUNDS * 3,
                 "%s: runs counted", what);
    cr_assert_eq(after.queries - before.queries, (uint64_t)CONC_THREADS * CONC_ROUNDS * 3 * N_QUERIES,
                 "%s: queries counted", what);
}

Test(scheduler, concurrent_runs_match_runs_one_at_a_time, .timeout = 480)
{
    gen_rng r = {seed};
    world w;
    world_make(&w, &r);
    reference(&w); /* want[] for the three modes, checked against tdm_collide */
    const char *why = NULL;
    int gpu = have_gpu(&why);
    tdm_backend_kind kinds[3] = {TDM_BACKEND_CPU, TDM_BACKEND_GPU, TDM_BACKEND_AUTO};
    for (int k = 0; k < (gpu ? 3 : 1); k++) {
        tdm_sched_config c = tdm_sched_config_default();
        c.kind = kinds[k];
        c.lanes = CONC_LANES;
        tdm_sched *e = NULL;
        char msg[256];
        cr_assert_eq(tdm_sched_create(&c, &e, msg, sizeof msg), TDM_OK, "%s", msg);
        int engines = tdm_sched_gpu_engines(e); /* a host with several GPUs: every one, by default */
        cr_assert_eq(tdm_sched_lanes(e), CONC_LANES * (engines > 1 ? engines : 1), "%d lanes on %d GPU engines",
                     tdm_sched_lanes(e), engines);
        for (int i = 0; i < N_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
        run_concurrently(e, &w, tdm_backend_name(kinds[k]));
        if (kinds[k] == TDM_BACKEND_GPU) {
            tdm_sched_stats st;
            tdm_sched_get_stats(e, &st);
            cr_assert_eq(st.gpu_queries, (uint64_t)CONC_THREADS * CONC_ROUNDS * 3 * N_QUERIES,
                         "gpu: every query ran on the GPU (%llu did)", (unsigned long long)st.gpu_queries);
        }
        for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
        tdm_sched_destroy(e);
    }
    if (!gpu) cr_log_info("GPU engines not run concurrently: no GPU (%s)", why ? why : "unknown");
    world_free(&w);
}

Test(scheduler, trees_not_resident_run_on_cpu, .timeout = 240)
{
    require_gpu();
    world w;
    world_and_cpu_answers(&w, 1);

    tdm_sched *e = engine(TDM_BACKEND_GPU, 0);
    tdm_sched_stats st;
    /* one tree missing: the whole run stays on the CPU */
    for (int i = 0; i < N_MESHES - 1; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
    cr_assert_eq(run(e, &w, 1, &got), TDM_OK);
    expect_same(&got, &want[1], 1, "one tree missing");
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.gpu_tasks, 0);
    cr_assert_eq(st.cpu_queries, N_QUERIES);
    /* all resident (one added twice: two references) */
    cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[N_MESHES - 1]), TDM_OK);
    cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[0]), TDM_OK);
    cr_assert_eq(run(e, &w, 1, &got), TDM_OK);
    expect_same(&got, &want[1], 1, "all resident");
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.gpu_queries, N_QUERIES);
    cr_assert_eq(st.device_meshes, N_MESHES);
    uint64_t gpu_tasks = st.gpu_tasks;
    /* one reference of the doubly added tree dropped: still resident */
    tdm_sched_mesh_remove(e, w.bvh[0]);
    cr_assert_eq(run(e, &w, 1, &got), TDM_OK);
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.gpu_tasks, 2 * gpu_tasks);
    /* removed: back on the CPU, same answers, device memory given back (each engine frees its
       copies on its next run: one run per engine, which the lanes' round robin spreads) */
    for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
    for (int k = 0; k < tdm_sched_gpu_engines(e); k++) {
        cr_assert_eq(run(e, &w, 1, &got), TDM_OK);
        expect_same(&got, &want[1], 1, "all removed");
    }
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.gpu_tasks, 2 * gpu_tasks);
    cr_assert_eq(st.device_meshes, 0);
    cr_assert_eq(st.mesh_bytes, 0);
    tdm_sched_destroy(e);
    world_free(&w);
}

static void count_removed(void *data) { (*(int *)data)++; }

static void pooler_finished(tdm_pooler_job *job, void *data)
{
    (void)job;
    (void)data;
}

static uint64_t mesh_bytes(tdm_sched *e)
{
    tdm_sched_stats st;
    tdm_sched_get_stats(e, &st);
    return st.mesh_bytes;
}

/* Trees removed once the engine has nothing more to run: their device memory comes back anyway,
 * without a run or an upload after the removal (before, each engine held it, and showed it in its
 * stats, until its next one). */
Test(scheduler, removed_trees_are_freed_with_no_run_after, .timeout = 240)
{
    require_gpu();
    world w;
    world_and_cpu_answers(&w, 1);
    tdm_sched *e = engine(TDM_BACKEND_GPU, 0);
    int left = 0;
    tdm_sched_on_removed(e, count_removed, &left);
    for (int i = 0; i < N_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
    cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[0]), TDM_OK); /* two references */
    cr_assert_eq(run(e, &w, 1, &got), TDM_OK);
    expect_same(&got, &want[1], 1, "resident");
    uint64_t held = mesh_bytes(e);
    cr_assert(held > 0, "no mesh bytes on the device after %d uploads", N_MESHES);
    cr_assert_eq(tdm_sched_reclaim_due(e), 0);
    cr_assert_eq(tdm_sched_reclaim(e), 0);

    /* one reference of two dropped: nothing leaves, no hook */
    tdm_sched_mesh_remove(e, w.bvh[0]);
    cr_assert_eq(left, 0, "the hook was called for a tree still referenced");
    cr_assert_eq(tdm_sched_reclaim_due(e), 0);
    for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
    cr_assert_eq(left, N_MESHES, "the hook was called %d times for %d trees that left", left, N_MESHES);
    /* no run since: still on the device, until a reclaim */
    cr_assert_eq(mesh_bytes(e), held, "mesh bytes %llu, %llu before: freed by what?",
                 (unsigned long long)mesh_bytes(e), (unsigned long long)held);
    cr_assert_eq(tdm_sched_reclaim_due(e), 1);
    cr_assert_eq(tdm_sched_reclaim(e), 0, "an engine kept removed trees with every lane free");
    cr_assert_eq(mesh_bytes(e), 0, "%llu mesh bytes left after the reclaim", (unsigned long long)mesh_bytes(e));
    cr_assert_eq(tdm_sched_reclaim_due(e), 0);
    cr_assert_eq(run(e, &w, 1, &got), TDM_OK); /* back on the CPU engine, same answers */
    expect_same(&got, &want[1], 1, "removed");

    /* a pooler's threads, asleep for want of jobs, are woken by the removal and free them */
    tdm_sched_on_removed(e, NULL, NULL);
    for (int i = 0; i < N_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
    cr_assert_eq(run(e, &w, 1, &got), TDM_OK);
    held = mesh_bytes(e);
    cr_assert(held > 0);
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, pooler_finished, NULL, NULL, &pl), TDM_OK);
    struct timespec pause = {0, 50 * 1000000L}; /* the threads asleep (past their polling) */
    nanosleep(&pause, NULL);
    for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
    int waited_ms = 0;
    while (mesh_bytes(e) != 0 && waited_ms < 5000) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
        waited_ms++;
    }
    cr_assert_eq(mesh_bytes(e), 0, "the pooler left %llu of %llu mesh bytes on the device for 5 s",
                 (unsigned long long)mesh_bytes(e), (unsigned long long)held);
    cr_log_info("the pooler gave %llu mesh bytes back within %d ms", (unsigned long long)held, waited_ms);
    tdm_pooler_destroy(pl);
    tdm_sched_destroy(e);
    world_free(&w);
}

/* Many trees at once (a planning scene's): one already resident, one listed twice;
 * each counts a reference per listing, the runs go to the GPU with the CPU
 * engine's answers, and removing every listing frees them. */
Test(scheduler, meshes_added_together, .timeout = 240)
{
    require_gpu();
    world w;
    world_and_cpu_answers(&w, 1);
    tdm_sched *e = engine(TDM_BACKEND_GPU, 0);
    cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[2]), TDM_OK);
    const tdm_bvh *list[N_MESHES + 1] = {w.bvh[0], w.bvh[1], w.bvh[2], w.bvh[3], w.bvh[1], w.bvh[4]};
    size_t added = 99;
    cr_assert_eq(tdm_sched_meshes_add(e, list, N_MESHES + 1, &added), TDM_OK);
    cr_assert_eq(added, N_MESHES + 1);
    tdm_sched_stats st;
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.device_meshes, N_MESHES);
    cr_assert_eq(run(e, &w, 1, &got), TDM_OK);
    expect_same(&got, &want[1], 1, "trees added together");
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.gpu_queries, N_QUERIES);
    /* the listing's references and the single add's: tree 1 twice, tree 2 twice (once alone) */
    for (int i = 0; i < N_MESHES + 1; i++) tdm_sched_mesh_remove(e, list[i]);
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.device_meshes, 1, "tree 2 keeps its first reference");
    tdm_sched_mesh_remove(e, w.bvh[2]);
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.device_meshes, 0);
    /* the CPU engine: nothing to do, every tree counts as added */
    tdm_sched *cpu = engine(TDM_BACKEND_CPU, 0);
    added = 0;
    cr_assert_eq(tdm_sched_meshes_add(cpu, list, N_MESHES + 1, &added), TDM_OK);
    cr_assert_eq(added, N_MESHES + 1);
    tdm_sched_destroy(cpu);
    tdm_sched_destroy(e);
    world_free(&w);
}

/* After a failed upload: the device holds what it held `before`, and a run answers
 * as the CPU engine did (bool mode). */
static void expect_upload_undone(tdm_sched *e, const world *w, const tdm_sched_stats *before, const char *what)
{
    tdm_sched_stats after;
    tdm_sched_get_stats(e, &after);
    cr_assert_eq(after.device_meshes, before->device_meshes, "%s", what);
    cr_assert_eq(after.mesh_bytes, before->mesh_bytes, "%s", what);
    cr_assert_eq(run(e, w, 0, &got), TDM_OK);
    expect_same(&got, &want[0], 0, what);
}

Test(scheduler, upload_over_budget_changes_nothing, .timeout = 240)
{
    require_gpu();
    world w;
    world_and_cpu_answers(&w, 0);

    tdm_sched_config c = tdm_sched_config_default();
    c.kind = TDM_BACKEND_GPU;
    c.gpu_memory = 96ull << 20;
    tdm_sched *e = NULL;
    char msg[256];
    cr_assert_eq(tdm_sched_create(&c, &e, msg, sizeof msg), TDM_OK, "%s", msg);
    for (int i = 0; i < N_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
    tdm_sched_stats before, after;
    tdm_sched_get_stats(e, &before);
    tdm_bvh *big = tree(gen_sphere(1, 800)); /* ~1.3M triangles: ~150 MB on the device */
    cr_assert_eq(tdm_sched_mesh_add(e, big), TDM_EGPUMEM);
    expect_upload_undone(e, &w, &before, "after a failed upload");
    tdm_sched_get_stats(e, &after);
    cr_assert_eq(after.gpu_queries, N_QUERIES);
    /* the same tree among others added together: those before it added (the caller removes
       them), none after, nothing held of it */
    const tdm_bvh *list[4] = {w.bvh[0], w.bvh[1], big, w.bvh[2]};
    size_t added = 99;
    cr_assert_eq(tdm_sched_meshes_add(e, list, 4, &added), TDM_EGPUMEM);
    cr_assert_eq(added, 2);
    tdm_sched_mesh_remove(e, w.bvh[0]);
    tdm_sched_mesh_remove(e, w.bvh[1]);
    expect_upload_undone(e, &w, &before, "after a failed upload of several");
    tdm_sched_get_stats(e, &after);
    cr_assert_eq(after.gpu_queries, 2 * N_QUERIES, "every tree still resident once");
    /* and each tree has exactly its one reference left */
    for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
    tdm_sched_get_stats(e, &after);
    cr_assert_eq(after.device_meshes, 0);
    for (int i = 0; i < N_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
    tdm_sched_mesh_remove(e, big); /* never added: nothing happens */
    tdm_bvh_free(big);
    for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
    tdm_sched_destroy(e);
    world_free(&w);
}

Test(scheduler, no_gpu_says_why)
{
    const char *why = NULL;
    if (have_gpu(&why)) cr_skip_test("this machine has a GPU");
    const tdm_backend_kind kinds[2] = {TDM_BACKEND_GPU, TDM_BACKEND_HYBRID};
    for (int k = 0; k < 2; k++) {
        tdm_sched_config c = tdm_sched_config_default();
        c.kind = kinds[k];
        tdm_sched *e = (tdm_sched *)1;
        char msg[256] = "";
        cr_assert_eq(tdm_sched_create(&c, &e, msg, sizeof msg), TDM_ENODEV);
        cr_assert_null(e);
        /* what is missing, in words: the build's CUDA support, the driver, or a device */
        cr_assert(strstr(msg, "no CUDA support") || strstr(msg, "NVIDIA driver") || strstr(msg, "CUDA device"),
                  "the reason should say what is missing: '%s'", msg);
    }
    tdm_sched *e = engine(TDM_BACKEND_AUTO, 1);
    cr_assert_eq(tdm_sched_backend(e), TDM_BACKEND_CPU);
    cr_assert(strstr(tdm_sched_detail(e), "no GPU"), "detail: %s", tdm_sched_detail(e));
    gen_rng r = {seed};
    tdm_bvh *b = tree(gen_sphere(1, 8));
    cr_assert_eq(tdm_sched_mesh_add(e, b), TDM_OK); /* a no-op on the CPU engine */
    tdm_sched_mesh_remove(e, b);
    tdm_bvh_free(b);
    (void)r;
    tdm_sched_destroy(e);
}

/* tdm_sched_run_poses (one scene, poses side by side) answers as tdm_sched_run
 * over the same queries: in one chunk and in pieces (a chunk smaller than the
 * batch), on the CPU engine and, with a GPU, the GPU-resident one. */
Test(scheduler, run_poses_matches_run, .timeout = 240)
{
    gen_rng r = {seed ^ 0x9053};
    world w;
    world_make(&w, &r);
    const char *why = NULL;
    int gpu = have_gpu(&why);
    const tdm_backend_kind kinds[2] = {TDM_BACKEND_CPU, TDM_BACKEND_GPU};
    const uint32_t chunks[2] = {262144, 1000};
    static answers poses_got;
    for (int k = 0; k < 1 + gpu; k++)
        for (int c = 0; c < 2; c++) {
            tdm_sched_config cfg = tdm_sched_config_default();
            cfg.kind = kinds[k];
            cfg.calibrate = 0;
            cfg.chunk_tasks = chunks[c];
            tdm_sched *e = NULL;
            char msg[256];
            cr_assert_eq(tdm_sched_create(&cfg, &e, msg, sizeof msg), TDM_OK, "%s", msg);
            for (int i = 0; i < N_MESHES; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
            for (int mode = 0; mode < 2; mode++) {
                cr_assert_eq(run(e, &w, mode, &got), TDM_OK);
                memset(&poses_got, 0, sizeof poses_got);
                tdm_sched_query proto = {w.scene, w.poses, mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000000, NULL, NULL};
                cr_assert_eq(tdm_sched_run_poses(e, &proto, N_QUERIES, poses_got.res), TDM_OK);
                char what[64];
                snprintf(what, sizeof what, "run_poses on %s, chunk %u", tdm_backend_name(kinds[k]), chunks[c]);
                expect_same(&poses_got, &got, mode, what);
            }
            /* a shared pair list is refused, and so is a query without a scene */
            tdm_sched_query bad = {w.scene, w.poses, TDM_MODE_CONTACTS, 4, poses_got.pairs[0], NULL};
            cr_assert_eq(tdm_sched_run_poses(e, &bad, 2, poses_got.res), TDM_EINVAL);
            bad = (tdm_sched_query){NULL, w.poses, TDM_MODE_BOOL, 1, NULL, NULL};
            cr_assert_eq(tdm_sched_run_poses(e, &bad, 2, poses_got.res), TDM_EINVAL);
            for (int i = 0; i < N_MESHES; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
            tdm_sched_destroy(e);
        }
    if (!gpu) cr_log_info("GPU half skipped: %s", why ? why : "no GPU");
    world_free(&w);
}

/* Culling (sched.c): checks whose bounding spheres are apart get no task. With it
 * (the default) and without it (TDM_ENGINE_CULL=0) every answer is the same, in
 * both modes, through tdm_sched_run and tdm_sched_run_poses, in one chunk and in
 * windows of a small chunk; and it does skip tasks: in contacts mode (no early
 * exit) the full expansion runs every check of every query, culling far fewer. */
Test(scheduler, culling_changes_no_answer, .timeout = 240)
{
    gen_rng r = {seed ^ 0xc011};
    world w;
    world_make(&w, &r);
    static answers full, culled;
    const uint32_t chunks[2] = {262144, 1000};
    for (int c = 0; c < 2; c++)
        for (int mode = 0; mode < 2; mode++) {
            uint64_t tasks[2];
            for (int cull = 0; cull < 2; cull++) {
                if (!cull) setenv("TDM_ENGINE_CULL", "0", 1);
                tdm_sched_config cfg = tdm_sched_config_default();
                cfg.kind = TDM_BACKEND_CPU;
                cfg.calibrate = 0;
                cfg.chunk_tasks = chunks[c];
                tdm_sched *e = NULL;
                char msg[256];
                cr_assert_eq(tdm_sched_create(&cfg, &e, msg, sizeof msg), TDM_OK, "%s", msg);
                unsetenv("TDM_ENGINE_CULL");
                answers *a = cull ? &culled : &full;
                cr_assert_eq(run(e, &w, mode, a), TDM_OK);
                tdm_sched_stats st;
                tdm_sched_get_stats(e, &st);
                tasks[cull] = st.tasks;
                cr_assert_eq(st.cpu_queries, N_QUERIES, "every query counted once, on the CPU engine");
                static answers poses_got;
                memset(&poses_got, 0, sizeof poses_got);
                tdm_sched_query proto = {w.scene, w.poses, mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000000, NULL, NULL};
                cr_assert_eq(tdm_sched_run_poses(e, &proto, N_QUERIES, poses_got.res), TDM_OK);
                expect_same(&poses_got, a, mode, cull ? "run_poses, culled" : "run_poses, full");
                tdm_sched_destroy(e);
            }
            expect_same(&culled, &full, mode, chunks[c] == 1000 ? "culled, chunk 1000" : "culled");
            if (mode == 1) {
                cr_assert_eq(tasks[0], (uint64_t)N_QUERIES * w.scene->n_checks, "the full expansion's tasks");
                cr_assert(tasks[1] < tasks[0] * 3 / 4, "culling kept %llu of %llu tasks", (unsigned long long)tasks[1],
                          (unsigned long long)tasks[0]);
            }
        }
    world_free(&w);
}

/* Culling over a batch of two scenes with different check counts (more than 64
 * apart, so a query's kept-check bits take different numbers of words): after a
 * run of the larger scene alone, a mixed run (queries of both, interleaved) must
 * answer as the full expansion does. A query of the smaller scene once read the
 * larger run's stale bits and made tasks of checks its scene does not have
 * (tandemd crashed with 64 OMPL planners on different MBM scenes). */
Test(scheduler, culling_mixed_scenes, .timeout = 240)
{
    gen_rng r = {seed ^ 0x3ced};
    enum { BIG_FIXED = 12, BIG_MOVING = 8, NQ = 20000 }; /* enough for several shares of the listing */
    tdm_bvh *ball = tree(gen_sphere(0.3, 8)), *brick = tree(gen_box(0.4, 0.2, 0.3));
    tdm_scene_obj big[BIG_FIXED + BIG_MOVING], small[3];
    for (int i = 0; i < BIG_FIXED; i++)
        big[i] = (tdm_scene_obj){(uint32_t)i, ball, 0,
                                 tdm_xform_from_pose(tdm_d3(0.8 * (i % 4), 0.8 * (i / 4), 0), gen_rotation(&r))};
    for (int i = 0; i < BIG_MOVING; i++) big[BIG_FIXED + i] = (tdm_scene_obj){(uint32_t)(100 + i), brick, 1, tdm_xform_identity()};
    small[0] = (tdm_scene_obj){1, ball, 0, tdm_xform_identity()};
    small[1] = (tdm_scene_obj){2, ball, 0, tdm_xform_from_pose(tdm_d3(1.6, 0.8, 0), gen_rotation(&r))};
    small[2] = (tdm_scene_obj){3, brick, 1, tdm_xform_identity()}; /* two checks: culled like a robot scene */
    tdm_scene *sb = NULL, *ss = NULL;
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(big, BIG_FIXED + BIG_MOVING, NULL, 0, &sb, &err), TDM_OK, "%s", err.msg);
    cr_assert_eq(tdm_scene_create(small, 3, NULL, 0, &ss, &err), TDM_OK, "%s", err.msg);
    cr_assert(sb->n_checks > ss->n_checks + 64, "%u and %u checks", sb->n_checks, ss->n_checks);
    cr_assert(sb->serial && ss->serial > sb->serial, "serials %llu, %llu: a new scene gets a new one",
              (unsigned long long)sb->serial, (unsigned long long)ss->serial);
    tdm_xform *poses = malloc(sizeof *poses * NQ * BIG_MOVING);
    cr_assert(poses);
    for (size_t i = 0; i < (size_t)NQ * BIG_MOVING; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(1.2, 0.8, 0), 1.6);
        poses[i] = tdm_xform_from_pose(p.t, p.q);
    }
    static tdm_sched_query q[NQ];
    static tdm_sched_result got[NQ], want[NQ], got_first[NQ];
    for (int mode = 0; mode < 2; mode++) {
        for (int cull = 1; cull >= 0; cull--) {
            if (!cull) setenv("TDM_ENGINE_CULL", "0", 1);
            tdm_sched_config cfg = tdm_sched_config_default();
            cfg.kind = TDM_BACKEND_CPU;
            cfg.calibrate = 0;
            cfg.threads = 8; /* several shares list refs at once, as on a large host */
            tdm_sched *e = NULL;
            char msg[256];
            cr_assert_eq(tdm_sched_create(&cfg, &e, msg, sizeof msg), TDM_OK, "%s", msg);
            unsetenv("TDM_ENGINE_CULL");
            tdm_sched_result *res = cull ? got : want;
            for (int round = 0; round < (cull ? 8 : 1); round++) {
                /* the larger scene alone first: every query's bits use all their words */
                for (int i = 0; i < NQ; i++)
                    q[i] = (tdm_sched_query){sb, &poses[(size_t)i * BIG_MOVING],
                                             mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000000, NULL, NULL};
                cr_assert_eq(tdm_sched_run(e, q, NQ, res), TDM_OK);
                /* then both, interleaved */
                for (int i = 0; i < NQ; i++)
                    q[i] = (tdm_sched_query){i % 3 ? ss : sb, &poses[(size_t)i * BIG_MOVING],
                                             mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000000, NULL, NULL};
                memset(res, 0, sizeof got);
                cr_assert_eq(tdm_sched_run(e, q, NQ, res), TDM_OK);
                if (cull && round > 0) /* every round the same answers */
                    cr_assert(memcmp(res, got_first, sizeof got) == 0, "mode %d: round %d differs", mode, round);
                if (cull && round == 0) memcpy(got_first, res, sizeof got);
            }
            tdm_sched_destroy(e);
        }
        size_t colliding = 0;
        for (int i = 0; i < NQ; i++) {
            cr_assert(got[i].colliding == want[i].colliding && got[i].contacts == want[i].contacts &&
                          got[i].object_a == want[i].object_a && got[i].object_b == want[i].object_b,
                      "mode %d, query %d (%s scene): culled (%u, %u, %u-%u) against full (%u, %u, %u-%u)", mode, i,
                      i % 3 ? "small" : "big", got[i].colliding, got[i].contacts, got[i].object_a, got[i].object_b,
                      want[i].colliding, want[i].contacts, want[i].object_a, want[i].object_b);
            colliding += got[i].colliding;
        }
        cr_assert(colliding > NQ / 10 && colliding < NQ - NQ / 10, "mode %d: %zu of %d colliding", mode, colliding, NQ);
    }
    free(poses);
    tdm_scene_destroy(sb);
    tdm_scene_destroy(ss);
    tdm_bvh_free(ball);
    tdm_bvh_free(brick);
}

/* Culling with a movable object placed absurdly far (a client's pose of 1e200):
 * the squared distance and reach overflow to inf past 1e154, and inf <= inf
 * kept every such check for the engine. Now they are dropped, and the runs
 * answer "not colliding" with culling on or off. */
Test(scheduler, culling_far_placements)
{
    gen_rng r = {seed ^ 0xfa2};
    tdm_bvh *ball = tree(gen_sphere(0.3, 8)), *brick = tree(gen_box(0.4, 0.2, 0.3));
    tdm_scene_obj objs[3] = {{1, ball, 0, tdm_xform_identity()},
                             {2, ball, 0, tdm_xform_from_pose(tdm_d3(1.6, 0.8, 0), gen_rotation(&r))},
                             {3, brick, 1, tdm_xform_identity()}};
    tdm_scene *sc = NULL;
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(objs, 3, NULL, 0, &sc, &err), TDM_OK, "%s", err.msg);
    cr_assert_eq(sc->n_checks, 2);
    double C[3][4];
    uint64_t bits[1];
    tdm_scene_cull_fixed(sc, C);
    tdm_xform near = tdm_xform_from_pose(tdm_d3(0.25, 0, 0), gen_rotation(&r));
    cr_assert_eq(tdm_scene_cull(sc, &near, C, bits), 1, "the brick at 0.25 from the first ball");
    cr_assert_eq(bits[0], 1u);
    static const double far[] = {1e100, 1e155, 1e160, 1e200, 1e300, 1.7e308};
    tdm_xform poses[2 * 6];
    for (int i = 0; i < 6; i++) {
        tdm_dvec3 t = i % 2 ? tdm_d3(-far[i], 0.3, 0) : tdm_d3(far[i], far[i], -far[i]);
        poses[i] = tdm_xform_from_pose(t, gen_rotation(&r));
        cr_assert_eq(tdm_scene_cull(sc, &poses[i], C, bits), 0, "brick at %g: %#llx kept", far[i],
                     (unsigned long long)bits[0]);
        poses[6 + i] = near;
    }
    for (int cull = 1; cull >= 0; cull--) {
        if (!cull) setenv("TDM_ENGINE_CULL", "0", 1);
        tdm_sched_config cfg = tdm_sched_config_default();
        cfg.kind = TDM_BACKEND_CPU;
        cfg.calibrate = 0;
        cfg.threads = 2;
        tdm_sched *e = NULL;
        char msg[256];
        cr_assert_eq(tdm_sched_create(&cfg, &e, msg, sizeof msg), TDM_OK, "%s", msg);
        unsetenv("TDM_ENGINE_CULL");
        for (int mode = 0; mode < 2; mode++) {
            tdm_sched_query q[12];
            tdm_sched_result res[12];
            for (int i = 0; i < 12; i++)
                q[i] = (tdm_sched_query){sc, &poses[i], mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000, NULL, NULL};
            cr_assert_eq(tdm_sched_run(e, q, 12, res), TDM_OK);
            for (int i = 0; i < 12; i++)
                cr_assert_eq(res[i].colliding, i >= 6, "cull %d, mode %d, query %d: colliding %u", cull, mode, i,
                             res[i].colliding);
        }
        tdm_sched_destroy(e);
    }
    tdm_scene_destroy(sc);
    tdm_bvh_free(ball);
    tdm_bvh_free(brick);
}

/* ---- device lists (issue 14, point 9) ---------------------------------------------- */

Test(scheduler, device_lists_parse_exactly)
{
    int d[TDM_SCHED_MAX_GPUS], n = -1;
    char why[256];
    cr_assert_eq(tdm_sched_devices_parse("all", d, &n, why, sizeof why), TDM_OK);
    cr_assert_eq(n, 0, "all: every device (0 entries)");
    static const struct { const char *text; int n, dev[TDM_SCHED_MAX_GPUS]; } good[] = {
        {"0", 1, {0}}, {"0,1", 2, {0, 1}}, {"0,0", 2, {0, 0}}, {"3,1,3", 3, {3, 1, 3}},
        {"1024", 1, {1024}}, {"0,1,2,3,4,5,6,7", 8, {0, 1, 2, 3, 4, 5, 6, 7}},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        cr_assert_eq(tdm_sched_devices_parse(good[i].text, d, &n, why, sizeof why), TDM_OK, "%s: %s", good[i].text,
                     why);
        cr_assert_eq(n, good[i].n, "%s: %d entries", good[i].text, n);
        for (int k = 0; k < n; k++) cr_assert_eq(d[k], good[i].dev[k], "%s: entry %d", good[i].text, k);
    }
    static const struct { const char *text, *says; } bad[] = {
        {"", "entry 1 (\"\")"},       {"x", "entry 1 (\"x\")"},        {"0,", "entry 2 (\"\")"},
        {",0", "entry 1 (\"\")"},     {"0,,1", "entry 2 (\"\")"},      {"-1", "entry 1 (\"-1\")"},
        {"1025", "entry 1 (\"1025\")"}, {"0, 1", "entry 2 (\" 1\")"},  {"ALL", "entry 1 (\"ALL\")"},
        {"0,1,2,3,4,5,6,7,8", "more than 8 devices"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        n = 5;
        cr_assert_eq(tdm_sched_devices_parse(bad[i].text, d, &n, why, sizeof why), TDM_EINVAL, "\"%s\" was accepted",
                     bad[i].text);
        cr_assert_eq(n, 0);
        cr_assert(strstr(why, bad[i].says), "\"%s\": the reason should say %s: %s", bad[i].text, bad[i].says, why);
    }
}

Test(scheduler, device_list_is_checked_and_ignored_by_the_cpu_engine)
{
    char why[300];
    tdm_sched *e = (tdm_sched *)1;
    /* gpu_device with a list */
    tdm_sched_config c = tdm_sched_config_default();
    cr_assert_eq(c.gpu_device, -1, "by default gpu_devices decides");
    cr_assert_eq(c.n_gpu_devices, 0, "by default every device");
    c.gpu_device = 0;
    c.n_gpu_devices = 1;
    c.gpu_devices[0] = 1;
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_EINVAL);
    cr_assert_null(e);
    cr_assert(strstr(why, "not together with gpu_device"), "why: %s", why);
    /* too many, or a negative index */
    c = tdm_sched_config_default();
    c.n_gpu_devices = TDM_SCHED_MAX_GPUS + 1;
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_EINVAL);
    c.n_gpu_devices = 2;
    c.gpu_devices[0] = 0;
    c.gpu_devices[1] = -1;
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_EINVAL);
    /* the CPU engine ignores the list: its lanes are cfg.lanes, no GPU engine */
    c = tdm_sched_config_default();
    c.kind = TDM_BACKEND_CPU;
    c.lanes = 3;
    c.n_gpu_devices = 2;
    c.gpu_devices[0] = c.gpu_devices[1] = 0;
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_OK, "%s", why);
    cr_assert_eq(tdm_sched_lanes(e), 3);
    cr_assert_eq(tdm_sched_gpu_engines(e), 0);
    tdm_sched_stats st;
    tdm_sched_get_stats(e, &st);
    cr_assert(st.gpu_engines == 0 && st.device_budget == 0 && st.gpu_broken == 0);
    tdm_sched_destroy(e);
    /* a device that does not exist: a GPU engine is refused, naming it (without a GPU,
       the first entry already fails); AUTO runs on the CPU engine and says why */
    c = tdm_sched_config_default();
    c.kind = TDM_BACKEND_GPU;
    c.n_gpu_devices = 2;
    c.gpu_devices[0] = 0;
    c.gpu_devices[1] = 1000;
    e = (tdm_sched *)1;
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_ENODEV, "%s", why);
    cr_assert_null(e);
    const char *gpu_why = NULL;
    if (have_gpu(&gpu_why))
        cr_assert(strstr(why, "CUDA device 1000 (entry 2 of the device list)"), "why: %s", why);
    else
        cr_assert(strstr(why, "CUDA device 0 (entry 1 of the device list)"), "why: %s", why);
    c.kind = TDM_BACKEND_AUTO;
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_OK, "%s", why);
    cr_assert_eq(tdm_sched_backend(e), TDM_BACKEND_CPU);
    cr_assert_eq(tdm_sched_lanes(e), c.lanes, "no GPU engine: cfg.lanes lanes");
    cr_assert(strstr(tdm_sched_detail(e), "no GPU engine: CUDA device"), "detail: %s", tdm_sched_detail(e));
    tdm_sched_destroy(e);
}

/* The registry behind the device copies: one copy per device, one reference count,
 * removed copies freed device by device; its epoch counts the trees that left (what a
 * lane's resident robot scene programs are valid for), and find_n reports it. */
typedef struct freed_log { int n; int device[8]; void *copy[8]; } freed_log;

static void log_free(void *ctx, int device, void *copy)
{
    freed_log *f = ctx;
    cr_assert_lt(f->n, 8);
    f->device[f->n] = device;
    f->copy[f->n++] = copy;
}

Test(scheduler, registry_keeps_a_copy_per_device)
{
    tdm_registry *r = NULL;
    cr_assert_eq(tdm_registry_create(0, &r), TDM_EINVAL);
    cr_assert_eq(tdm_registry_create(2, &r), TDM_OK);
    cr_assert_eq(tdm_registry_devices(r), 2);
    int a_key, b_key; /* the trees are only keys here */
    const tdm_bvh *a = (const tdm_bvh *)&a_key, *b = (const tdm_bvh *)&b_key;
    int copies[4];
    void *ca[2] = {&copies[0], &copies[1]}, *cb[2] = {&copies[2], &copies[3]};
    cr_assert_eq(tdm_registry_insert(r, a, ca), TDM_OK);
    cr_assert_eq(tdm_registry_insert(r, b, cb), TDM_OK);
    cr_assert_eq(tdm_registry_count(r), 2);
    void *x, *y;
    tdm_registry_find2(r, 1, a, b, &x, &y);
    cr_assert(x == ca[1] && y == cb[1], "device 1's copies");
    cr_assert_eq(tdm_registry_find(r, 0, b), cb[0]);
    uint64_t e0 = tdm_registry_epoch(r);
    const tdm_bvh *both[2] = {a, b};
    void *found[2];
    cr_assert_eq(tdm_registry_find_n(r, 1, both, 2, found), e0);
    cr_assert(found[0] == ca[1] && found[1] == cb[1]);
    cr_assert_eq(tdm_registry_ref(r, a), 1);
    tdm_registry_unref(r, a);
    cr_assert_eq(tdm_registry_find(r, 0, a), ca[0], "one reference left");
    cr_assert_eq(tdm_registry_epoch(r), e0, "no tree left: the same epoch");
    tdm_registry_unref(r, a);
    cr_assert_null(tdm_registry_find(r, 0, a));
    cr_assert_eq(tdm_registry_epoch(r), e0 + 1, "a tree left");
    cr_assert_eq(tdm_registry_find_n(r, 0, both, 2, found), e0 + 1);
    cr_assert(found[0] == NULL && found[1] == cb[0]);
    cr_assert_null(tdm_registry_find(r, 1, a));
    cr_assert_eq(tdm_registry_count(r), 1);
    cr_assert(tdm_registry_removed(r, 0) == 1 && tdm_registry_removed(r, 1) == 1);
    freed_log f = {0};
    tdm_registry_free_removed(r, 1, log_free, &f);
    cr_assert(f.n == 1 && f.device[0] == 1 && f.copy[0] == ca[1], "device 1's copy alone");
    cr_assert(tdm_registry_removed(r, 0) == 1 && tdm_registry_removed(r, 1) == 0);
    tdm_registry_free_removed(r, 1, log_free, &f);
    cr_assert_eq(f.n, 1, "nothing more on device 1");
    tdm_registry_free_removed(r, 0, log_free, &f);
    cr_assert(f.n == 2 && f.device[1] == 0 && f.copy[1] == ca[0]);
    cr_assert_eq(tdm_registry_removed(r, 0), 0);
    /* a device without a copy (NULL: it had failed) */
    int c_key;
    const tdm_bvh *c = (const tdm_bvh *)&c_key;
    void *cc[2] = {NULL, &copies[0]};
    cr_assert_eq(tdm_registry_insert(r, c, cc), TDM_OK);
    cr_assert_eq(tdm_registry_epoch(r), e0 + 1, "a tree arriving leaves the epoch");
    cr_assert_null(tdm_registry_find(r, 0, c));
    tdm_registry_unref(r, c);
    cr_assert_eq(tdm_registry_epoch(r), e0 + 2);
    cr_assert(tdm_registry_removed(r, 0) == 0 && tdm_registry_removed(r, 1) == 1);
    /* destroy frees what is left, registered or removed, by device */
    f.n = 0;
    tdm_registry_destroy(r, log_free, &f);
    cr_assert_eq(f.n, 3, "b's two copies and c's one: %d freed", f.n);
}

/* A batch pooled from several clients holds several scenes, in blocks (one
 * request each), and the GPU engine looks each scene's device copies up once per
 * chunk (or, for a chunk of fewer tasks than its scenes have checks, task by
 * task): the same answers as the CPU engine, in both modes, for batches large
 * and small. */
Test(scheduler, gpu_mixed_scenes_match_cpu_engine, .timeout = 240)
{
    require_gpu();
    gen_rng r = {seed ^ 0x5ce7e5};
    enum { SCENES = 5, FIXED = 6, MOVING = 3, NQ = 6000 };
    tdm_bvh *ball = tree(gen_sphere(0.3, 8)), *brick = tree(gen_box(0.4, 0.2, 0.3)), *ring = tree(gen_torus(0.4, 0.1, 16, 8));
    tdm_bvh *trees[3] = {ball, brick, ring};
    tdm_scene *sc[SCENES];
    for (int s = 0; s < SCENES; s++) {
        tdm_scene_obj o[FIXED + MOVING];
        for (int i = 0; i < FIXED; i++)
            o[i] = (tdm_scene_obj){(uint32_t)(10 * s + i), trees[(s + i) % 3], 0,
                                   tdm_xform_from_pose(tdm_d3(0.7 * (i % 3), 0.7 * (i / 3), 0.1 * s), gen_rotation(&r))};
        for (int i = 0; i < MOVING; i++)
            o[FIXED + i] = (tdm_scene_obj){(uint32_t)(100 + i), trees[(s + i + 1) % 3], 1, tdm_xform_identity()};
        tdm_scene_error err;
        cr_assert_eq(tdm_scene_create(o, FIXED + MOVING, NULL, 0, &sc[s], &err), TDM_OK, "%s", err.msg);
    }
    tdm_xform *poses = malloc(sizeof *poses * NQ * MOVING);
    cr_assert(poses);
    for (size_t i = 0; i < (size_t)NQ * MOVING; i++) {
        gen_pose p = gen_pose_in_ball(&r, tdm_d3(0.7, 0.35, 0), 2.5);
        poses[i] = tdm_xform_from_pose(p.t, p.q);
    }
    tdm_sched *cpu = engine(TDM_BACKEND_CPU, 0), *gpu = engine(TDM_BACKEND_GPU, 0);
    cr_assert_eq(tdm_sched_mesh_add(gpu, ball), TDM_OK);
    cr_assert_eq(tdm_sched_mesh_add(gpu, brick), TDM_OK);
    cr_assert_eq(tdm_sched_mesh_add(gpu, ring), TDM_OK);
    static tdm_sched_query q[NQ];
    static tdm_sched_result got[NQ], want[NQ];
    size_t sizes[3] = {NQ, 40, 3}; /* many tasks a scene; about as many as checks; fewer */
    for (int mode = 0; mode < 2; mode++)
        for (int z = 0; z < 3; z++) {
            size_t n = sizes[z], colliding = 0;
            for (size_t i = 0; i < n; i++) /* requests of 1 to 25 queries, each of one scene */
                q[i] = (tdm_sched_query){sc[(i / (1 + i % 25)) % SCENES], &poses[i * MOVING],
                                         mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000000, NULL, NULL};
            memset(got, 0, sizeof got);
            memset(want, 0, sizeof want);
            cr_assert_eq(tdm_sched_run(cpu, q, n, want), TDM_OK);
            cr_assert_eq(tdm_sched_run(gpu, q, n, got), TDM_OK);
            for (size_t i = 0; i < n; i++) {
                cr_assert(got[i].colliding == want[i].colliding && got[i].contacts == want[i].contacts &&
                              got[i].truncated == want[i].truncated && got[i].object_a == want[i].object_a &&
                              got[i].object_b == want[i].object_b,
                          "mode %d, %zu queries, query %zu: GPU (%u, %u, %u-%u) against CPU (%u, %u, %u-%u)", mode,
                          n, i, got[i].colliding, got[i].contacts, got[i].object_a, got[i].object_b,
                          want[i].colliding, want[i].contacts, want[i].object_a, want[i].object_b);
                colliding += got[i].colliding;
            }
            if (n == NQ)
                cr_assert(colliding > n / 10 && colliding < n - n / 10, "mode %d: %zu of %zu colliding", mode, colliding, n);
        }
    tdm_sched_destroy(cpu);
    tdm_sched_destroy(gpu);
    free(poses);
    for (int s = 0; s < SCENES; s++) tdm_scene_destroy(sc[s]);
    tdm_bvh_free(ball);
    tdm_bvh_free(brick);
    tdm_bvh_free(ring);
}
