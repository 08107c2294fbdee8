/* libtandem's local engine (tandem.h part 5, client/local.c) against a real tandemd and
 * against the brute-force arm oracle: the generated arm of tests/arm_fixture.h (box,
 * cylinder and a scaled OBJ-mesh element, revolute and prismatic joints, an SRDF) in its
 * three planning scenes, and tests/arm_oracle.h's two-joint arm.
 *
 *   ids_equal_tandemds           the local robot's and scenes' ids (stored and ephemeral)
 *                                are the ids tandemd gives the same files
 *   answers_equal_tandemds       3 x 1500 random configurations, bool and contacts
 *                                (tandemd's limit and a cap of 2): colliding, contacts,
 *                                truncated and the first pair equal tandemd's, answer for
 *                                answer; bool mode's pair is one of the scene's objects
 *   answers_equal_the_oracle     the oracle arm: 2000 configurations, one at a time and in
 *                                batches, every answer the oracle's
 *   bad_input_changes_nothing    missing files, a missing mesh, a bad world, the wrong
 *                                joint count, a NaN, NULLs: the error names the file, line
 *                                or query; nothing is answered; the engine answers after
 *   engines_on_threads           4 threads, an engine each, share one robot, each makes
 *                                its own scene of it and the shared one: answers equal
 *                                one engine's */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <tandem/tandem.h>

#include "arm_fixture.h"
#include "arm_oracle.h"
#include "daemon_util.h"
#include "gen.h"

static uint64_t seed;
static dmn D;

static void write_file(const char *name, const char *text) { dmn_write(&D, name, text); }

#define N_J 3 /* the fixture arm's joints */

static const char *const worlds[] = {"scene.yaml", "world1.yaml", "world2.yaml"};
#define N_WORLDS 3

static void suite_init(void)
{
    seed = gen_seed(0x10ca1e9ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    dmn_init(&D, "local");
    char meshes[600];
    snprintf(meshes, sizeof meshes, "%s/meshes", D.root);
    cr_assert_eq(mkdir(meshes, 0700), 0, "%s", strerror(errno));
    arm_fixture_write(write_file);
    write_file("oracle.urdf", arm_urdf_text);
    write_file("oracle.srdf", arm_srdf_text);
    write_file("oracle.yaml", arm_scene_text);
}

static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(local, .init = suite_init, .fini = suite_fini, .timeout = 240);

static tdm_client *start_and_connect(void)
{
    const char *const flags[] = {"--engine", "cpu", NULL};
    dmn_start(&D, flags);
    tdm_client *c = tdm_client_connect(D.unix_addr, 10000);
    cr_assert(c && !tdm_client_err(c), "connect: %s", c ? tdm_client_errstr(c) : "");
    return c;
}

/* the fixture arm, loaded locally; l's error on failure */
static tdm_local_robot *load_arm(tdm_local *l)
{
    tdm_local_robot *r = NULL;
    cr_assert_eq(tdm_local_robot_load(l, dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), &r), 0, "%s",
                 tdm_local_errstr(l));
    cr_assert_not_null(r);
    cr_assert_eq(tdm_local_robot_joints(r), N_J);
    return r;
}

static tdm_local_scene *local_scene(tdm_local *l, const tdm_local_robot *r, const char *file)
{
    tdm_local_scene *s = NULL;
    cr_assert_eq(tdm_local_scene_create_file(l, r, dmn_path(&D, file), &s), 0, "%s: %s", file, tdm_local_errstr(l));
    return s;
}

Test(local, ids_equal_tandemds)
{
    tdm_client *c = start_and_connect();
    tdm_local *l = tdm_local_create();
    cr_assert_not_null(l);
    tdm_local_robot *r = load_arm(l);
    uint8_t rid[TDM_ID_BYTES], lid[TDM_ID_BYTES], sid[TDM_ID_BYTES];
    cr_assert_eq(tdm_robot_put_files(c, "arm", dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), rid, NULL, NULL), 0,
                 "%s", tdm_client_errstr(c));
    tdm_local_robot_id(r, lid);
    cr_assert_arr_eq(lid, rid, TDM_ID_BYTES, "the local robot's id is tandemd's");
    for (int ephemeral = 0; ephemeral < 2; ephemeral++) {
        tdm_client_set_ephemeral_scenes(c, ephemeral);
        for (int w = 0; w < N_WORLDS; w++) {
            cr_assert_eq(tdm_robot_scene_put_file(c, NULL, rid, dmn_path(&D, worlds[w]), sid, NULL, NULL), 0, "%s",
                         tdm_client_errstr(c));
            tdm_local_scene *s = local_scene(l, r, worlds[w]);
            tdm_local_scene_id(s, ephemeral, lid);
            cr_assert_arr_eq(lid, sid, TDM_ID_BYTES, "%s (ephemeral %d): the local scene's id is tandemd's",
                             worlds[w], ephemeral);
            tdm_local_scene_id(s, !ephemeral, lid);
            cr_assert_arr_neq(lid, sid, TDM_ID_BYTES);
            tdm_local_scene_free(s);
        }
    }
    /* the same world from text: the same id as from its file */
    tdm_local_scene *s = NULL;
    cr_assert_eq(tdm_local_scene_create(l, r, scene_text, &s), 0, "%s", tdm_local_errstr(l));
    uint8_t from_file[TDM_ID_BYTES];
    tdm_local_scene *sf = local_scene(l, r, "scene.yaml");
    tdm_local_scene_id(s, 0, lid);
    tdm_local_scene_id(sf, 0, from_file);
    cr_assert_arr_eq(lid, from_file, TDM_ID_BYTES);
    tdm_local_scene_free(s);
    tdm_local_scene_free(sf);
    tdm_local_robot_free(r);
    tdm_local_free(l);
    tdm_client_free(c);
}

/* n answers of tandemd and the local engine, equal field for field (object ids compared
 * where the mode defines them) */
static void expect_equal(const tdm_query_result *t, const tdm_query_result *lo, size_t n, int contacts,
                         const char *what, const double *q)
{
    for (size_t i = 0; i < n; i++) {
        const double *c = q + i * N_J;
        cr_assert_eq(lo[i].colliding, t[i].colliding,
                     "%s seed=%llu query %zu (%.17g %.17g %.17g): local %u, tandemd %u", what, (unsigned long long)seed,
                     i, c[0], c[1], c[2], lo[i].colliding, t[i].colliding);
        cr_assert_eq(lo[i].contacts, t[i].contacts, "%s query %zu: contacts local %u, tandemd %u", what, i,
                     lo[i].contacts, t[i].contacts);
        cr_assert_eq(lo[i].truncated, t[i].truncated, "%s query %zu", what, i);
        cr_assert_eq(lo[i].n_pairs, 0);
        if (contacts && t[i].colliding) {
            cr_assert_eq(lo[i].object_a, t[i].object_a, "%s query %zu: first pair (%u, %u), tandemd's (%u, %u)", what,
                         i, lo[i].object_a, lo[i].object_b, t[i].object_a, t[i].object_b);
            cr_assert_eq(lo[i].object_b, t[i].object_b, "%s query %zu", what, i);
        }
    }
}

Test(local, answers_equal_tandemds)
{
    tdm_client *c = start_and_connect();
    tdm_local *l = tdm_local_create();
    tdm_local_robot *r = load_arm(l);
    uint8_t rid[TDM_ID_BYTES], sid[TDM_ID_BYTES];
    cr_assert_eq(tdm_robot_put_files(c, "arm", dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), rid, NULL, NULL), 0,
                 "%s", tdm_client_errstr(c));
    gen_rng g = {seed};
    const size_t n = 1500;
    double *q = malloc(n * N_J * sizeof *q);
    tdm_query_result *t = malloc(n * sizeof *t), *lo = malloc(n * sizeof *lo);
    for (int w = 0; w < N_WORLDS; w++) {
        tdm_robot_scene_info *info = NULL;
        cr_assert_eq(tdm_robot_scene_put_file(c, NULL, rid, dmn_path(&D, worlds[w]), sid, NULL, &info), 0, "%s",
                     tdm_client_errstr(c));
        tdm_local_scene *s = local_scene(l, r, worlds[w]);
        for (size_t i = 0; i < n; i++) arm_fixture_random_config(&g, q + i * N_J);
        /* bool: the local engine one configuration at a time (a planner's), tandemd in one batch */
        cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, n, 0, t, NULL), 0, "%s", tdm_client_errstr(c));
        memset(lo, 0xab, n * sizeof *lo);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(tdm_local_query_configs(l, s, TDM_QUERY_BOOL, q + i * N_J, N_J, 1, 0, lo + i), 0, "%s",
                         tdm_local_errstr(l));
        expect_equal(t, lo, n, 0, worlds[w], q);
        size_t colliding = 0;
        for (size_t i = 0; i < n; i++) {
            colliding += lo[i].colliding;
            if (lo[i].colliding)
                cr_assert(lo[i].object_a < lo[i].object_b && lo[i].object_b < info->n_objects,
                          "bool mode's pair (%u, %u) is a pair of the scene's %u objects", lo[i].object_a,
                          lo[i].object_b, info->n_objects);
        }
        cr_assert(colliding > n / 20 && colliding < n - n / 20, "%s: a test that means something: %zu of %zu colliding",
                  worlds[w], colliding, n);
        /* contacts, at tandemd's limit and capped at 2, in one batch each */
        for (uint32_t cap = 0; cap <= 2; cap += 2) {
            cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q, N_J, n, cap, t, NULL), 0, "%s",
                         tdm_client_errstr(c));
            cr_assert_eq(tdm_local_query_configs(l, s, TDM_QUERY_CONTACTS, q, N_J, n, cap, lo), 0, "%s",
                         tdm_local_errstr(l));
            expect_equal(t, lo, n, 1, worlds[w], q);
        }
        size_t truncated = 0;
        for (size_t i = 0; i < n; i++) truncated += lo[i].truncated;
        cr_log_info("%s: %zu of %zu colliding, %zu over 2 contacts", worlds[w], colliding, n, truncated);
        cr_assert(truncated > 0, "%s: the cap of 2 contacts is reached by some configuration", worlds[w]);
        tdm_robot_scene_info_free(info);
        tdm_local_scene_free(s);
    }
    free(q);
    free(t);
    free(lo);
    tdm_local_robot_free(r);
    tdm_local_free(l);
    tdm_client_free(c);
}

Test(local, answers_equal_the_oracle)
{
    tdm_local *l = tdm_local_create();
    tdm_local_robot *r = NULL;
    tdm_local_scene *s = NULL;
    cr_assert_eq(tdm_local_robot_load(l, dmn_path(&D, "oracle.urdf"), dmn_path(&D, "oracle.srdf"), &r), 0, "%s",
                 tdm_local_errstr(l));
    cr_assert_eq(tdm_local_robot_joints(r), 2);
    cr_assert_eq(tdm_local_scene_create(l, r, arm_scene_text, &s), 0, "%s", tdm_local_errstr(l));
    gen_rng g = {seed ^ 0x0dac1eull};
    const size_t n = 2000;
    double *q = malloc(2 * n * sizeof *q);
    tdm_query_result *res = malloc(n * sizeof *res);
    for (size_t i = 0; i < n; i++) {
        q[2 * i] = gen_range(&g, -3.14, 3.14);
        q[2 * i + 1] = gen_range(&g, -2.6, 2.6);
    }
    /* one at a time for the first half, batches of 1..7 for the rest */
    size_t lo = 0;
    for (; lo < n / 2; lo++)
        cr_assert_eq(tdm_local_query_configs(l, s, TDM_QUERY_BOOL, q + 2 * lo, 2, 1, 0, res + lo), 0, "%s",
                     tdm_local_errstr(l));
    for (size_t k = 0; lo < n; k++) {
        size_t m = k % 7 + 1 < n - lo ? k % 7 + 1 : n - lo;
        cr_assert_eq(tdm_local_query_configs(l, s, TDM_QUERY_BOOL, q + 2 * lo, 2, m, 0, res + lo), 0, "%s",
                     tdm_local_errstr(l));
        lo += m;
    }
    size_t colliding = 0;
    for (size_t i = 0; i < n; i++) {
        int want = arm_oracle_collides(q + 2 * i);
        colliding += (size_t)want;
        cr_assert_eq((int)res[i].colliding, want, "seed=%llu config %zu (%.17g %.17g): local %u, oracle %d",
                     (unsigned long long)seed, i, q[2 * i], q[2 * i + 1], res[i].colliding, want);
    }
    cr_assert(colliding > n / 20 && colliding < n - n / 20, "a test that means something: %zu of %zu colliding",
              colliding, n);
    free(q);
    free(res);
    tdm_local_scene_free(s);
    tdm_local_robot_free(r);
    tdm_local_free(l);
}

static void expect_err(tdm_local *l, int rc, int want, const char *needle)
{
    cr_assert_eq(rc, want, "rc %d (%s), want %d", rc, tdm_local_errstr(l), want);
    cr_assert(strstr(tdm_local_errstr(l), needle), "error \"%s\" names \"%s\"", tdm_local_errstr(l), needle);
}

Test(local, bad_input_changes_nothing)
{
    tdm_local *l = tdm_local_create();
    tdm_local_robot *r = NULL, *bad = (tdm_local_robot *)&r; /* a non-NULL value a failure must reset */
    /* files */
    expect_err(l, tdm_local_robot_load(l, dmn_path(&D, "none.urdf"), NULL, &bad), TDM_CLIENT_EINVAL, "none.urdf");
    cr_assert_null(bad);
    expect_err(l, tdm_local_robot_load(l, dmn_path(&D, "arm.urdf"), dmn_path(&D, "none.srdf"), &bad), TDM_CLIENT_EINVAL,
               "none.srdf");
    char *nomesh = strdup(urdf_text);
    char *at = strstr(nomesh, "meshes/bar.obj");
    cr_assert_not_null(at);
    memcpy(at, "meshes/baz", 10);
    write_file("nomesh.urdf", nomesh);
    free(nomesh);
    expect_err(l, tdm_local_robot_load(l, dmn_path(&D, "nomesh.urdf"), NULL, &bad), TDM_CLIENT_EINVAL, "nomesh.urdf:");
    cr_assert(strstr(tdm_local_errstr(l), "baz"), "%s", tdm_local_errstr(l));
    write_file("cycle.urdf", "<robot name='c'><link name='a'/><link name='b'/>"
                             "<joint name='j' type='fixed'><parent link='a'/><child link='b'/></joint>"
                             "<joint name='k' type='fixed'><parent link='b'/><child link='a'/></joint></robot>\n");
    expect_err(l, tdm_local_robot_load(l, dmn_path(&D, "cycle.urdf"), NULL, &bad), TDM_CLIENT_EINVAL, "cycle.urdf");
    expect_err(l, tdm_local_robot_load(l, NULL, NULL, &bad), TDM_CLIENT_EINVAL, "NULL");
    cr_assert_eq(tdm_local_robot_load(NULL, dmn_path(&D, "arm.urdf"), NULL, &bad), TDM_CLIENT_EINVAL);
    /* worlds */
    r = load_arm(l);
    tdm_local_scene *s = NULL, *sbad = (tdm_local_scene *)&s;
    expect_err(l, tdm_local_scene_create(l, r, "world:\n  collision_objects:\n    - id: x\n      primitives: "
                                               "[{type: box, dimensions: [1, 2]}]\n", &sbad),
               TDM_CLIENT_EINVAL, "world:");
    cr_assert_null(sbad);
    expect_err(l, tdm_local_scene_create_file(l, r, dmn_path(&D, "none.yaml"), &sbad), TDM_CLIENT_EINVAL, "none.yaml");
    expect_err(l, tdm_local_scene_create(l, r, NULL, &sbad), TDM_CLIENT_EINVAL, "NULL");
    s = local_scene(l, r, "scene.yaml");
    cr_assert_str_empty(tdm_local_errstr(l), "a success clears the message");
    /* queries: nothing answered */
    gen_rng g = {seed ^ 0xbadull};
    double q[5 * N_J];
    for (int i = 0; i < 5; i++) arm_fixture_random_config(&g, q + i * N_J);
    tdm_query_result res[5], want[5];
    memset(res, 0x5a, sizeof res);
    tdm_query_result untouched = res[0];
    expect_err(l, tdm_local_query_configs(l, s, TDM_QUERY_BOOL, q, 2, 5, 0, res), TDM_CLIENT_EINVAL,
               "3 active joints");
    double keep = q[3 * N_J + 1];
    q[3 * N_J + 1] = NAN;
    expect_err(l, tdm_local_query_configs(l, s, TDM_QUERY_BOOL, q, N_J, 5, 0, res), TDM_CLIENT_EINVAL,
               "query 3: joint 'j2'");
    q[3 * N_J + 1] = -INFINITY;
    expect_err(l, tdm_local_query_configs(l, s, TDM_QUERY_CONTACTS, q, N_J, 5, 0, res), TDM_CLIENT_EINVAL,
               "query 3");
    q[3 * N_J + 1] = keep;
    expect_err(l, tdm_local_query_configs(l, s, (tdm_query_mode)7, q, N_J, 5, 0, res), TDM_CLIENT_EINVAL, "mode");
    expect_err(l, tdm_local_query_configs(l, s, TDM_QUERY_BOOL, NULL, N_J, 5, 0, res), TDM_CLIENT_EINVAL, "NULL");
    for (int i = 0; i < 5; i++) cr_assert_arr_eq(&res[i], &untouched, sizeof untouched, "query %d answered", i);
    cr_assert_eq(tdm_local_query_configs(l, s, TDM_QUERY_BOOL, q, N_J, 0, 0, NULL), 0, "no queries: nothing to do");
    /* and then it answers as a fresh engine does */
    tdm_local *fresh = tdm_local_create();
    cr_assert_eq(tdm_local_query_configs(l, s, TDM_QUERY_CONTACTS, q, N_J, 5, 0, res), 0, "%s", tdm_local_errstr(l));
    cr_assert_eq(tdm_local_query_configs(fresh, s, TDM_QUERY_CONTACTS, q, N_J, 5, 0, want), 0, "%s",
                 tdm_local_errstr(fresh));
    cr_assert_arr_eq(res, want, sizeof res);
    tdm_local_free(fresh);
    tdm_local_scene_free(s);
    tdm_local_robot_free(r);
    tdm_local_free(l);
    tdm_local_free(NULL);
    tdm_local_scene_free(NULL);
    tdm_local_robot_free(NULL);
}

/* ---- threads ---- */

typedef struct worker {
    const tdm_local_robot *r;
    const tdm_local_scene *shared;
    const double *q;
    size_t n;
    tdm_query_result *own, *on_shared; /* n answers each */
    int rc;
    char err[512];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    tdm_local *l = tdm_local_create();
    tdm_local_scene *s = NULL;
    w->rc = !l ? -1 : tdm_local_scene_create(l, w->r, world_variants[1], &s);
    for (size_t i = 0; w->rc == 0 && i < w->n; i++)
        w->rc = tdm_local_query_configs(l, s, TDM_QUERY_BOOL, w->q + i * N_J, N_J, 1, 0, w->own + i) ||
                tdm_local_query_configs(l, w->shared, TDM_QUERY_CONTACTS, w->q + i * N_J, N_J, 1, 0,
                                        w->on_shared + i);
    if (w->rc && l) snprintf(w->err, sizeof w->err, "%s", tdm_local_errstr(l));
    tdm_local_scene_free(s);
    tdm_local_free(l);
    return NULL;
}

Test(local, engines_on_threads)
{
    tdm_local *l = tdm_local_create();
    tdm_local_robot *r = load_arm(l);
    tdm_local_scene *shared = local_scene(l, r, "scene.yaml"), *own = local_scene(l, r, "world2.yaml");
    gen_rng g = {seed ^ 0x7437ull};
    const size_t n = 400;
    double *q = malloc(n * N_J * sizeof *q);
    for (size_t i = 0; i < n; i++) arm_fixture_random_config(&g, q + i * N_J);
    tdm_query_result *want_own = malloc(n * sizeof *want_own), *want_shared = malloc(n * sizeof *want_shared);
    cr_assert_eq(tdm_local_query_configs(l, own, TDM_QUERY_BOOL, q, N_J, n, 0, want_own), 0);
    cr_assert_eq(tdm_local_query_configs(l, shared, TDM_QUERY_CONTACTS, q, N_J, n, 0, want_shared), 0);
    enum { T = 4 };
    worker w[T];
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        w[t] = (worker){r, shared, q, n, calloc(n, sizeof(tdm_query_result)), calloc(n, sizeof(tdm_query_result)), 0,
                        ""};
        cr_assert_eq(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    for (int t = 0; t < T; t++) cr_assert_eq(pthread_join(th[t], NULL), 0);
    for (int t = 0; t < T; t++) {
        cr_assert_eq(w[t].rc, 0, "thread %d: %s", t, w[t].err);
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(w[t].own[i].colliding, want_own[i].colliding, "thread %d query %zu", t, i);
            cr_assert_arr_eq(&w[t].on_shared[i], &want_shared[i], sizeof want_shared[i], "thread %d query %zu", t, i);
        }
        free(w[t].own);
        free(w[t].on_shared);
    }
    free(q);
    free(want_own);
    free(want_shared);
    tdm_local_scene_free(shared);
    tdm_local_scene_free(own);
    tdm_local_robot_free(r);
    tdm_local_free(l);
}
