/* daemon/: a real tandemd, started per test on loopback TCP and a Unix socket in a
 * fresh data directory (daemon_util.h), talked to through libtandem, the `tandem`
 * CLI and raw frames written by hand.
 *
 *   results_*        answers equal brute force and `tandem check`, both modes, both
 *                    socket kinds, through libtandem and through `tandem query`
 *   concurrent_*     64 connections at once, pipelined, raw and libtandem: every
 *                    request answered exactly once, correctly
 *   kill9_*          SIGKILL, then a restart on the same directory: every
 *                    acknowledged mesh and scene is back; corrupted files are skipped
 *   malformed_*      broken frames and invalid requests (raw, and through libtandem)
 *                    get the documented Error (or a clean close) while another client
 *                    keeps being served, and change nothing
 *   slow_reader_*    a client that stops reading is paused, not dropped
 *   auth_token_*     a wrong token is refused and closed; max_connections is enforced
 *   mesh_deleted_*   a scene and its meshes deleted while large batches on it are in
 *                    flight (--engine auto: the GPU engine where there is one): every
 *                    accepted batch is answered right, later ones get UNKNOWN_SCENE, a
 *                    bystander is unaffected
 *   engine_gpu_*     --engine gpu|hybrid without a GPU fails start-up, saying why
 *   mesh_over_*      (GPU only) a MeshPut over the device budget is refused and leaves
 *                    nothing; a restart with less room keeps the meshes, answered on the CPU
 *
 * Poses are drawn so that their quaternion is a fixed point of normalisation (q / |q|
 * gives q again, bit for bit): the server, `tandem check` and the reference then all
 * use the very same rotation, and answers must agree exactly. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include <tandem/tandem.h>

#include "brute.h"
#include "check.h"
#include "daemon_util.h"
#include "gen.h"
#include "wire_pose.h"
#include "tools/io.h"
#include "workpile/cpu_engine.h"

#ifndef TANDEM_BIN
#error "TANDEM_BIN (the path of the tandem executable) must be defined by the build"
#endif

extern char **environ;

static uint64_t seed;
static dmn D;

static void suite_init(void)
{
    seed = gen_seed(0xdae3011ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    dmn_init(&D, "test");
}

static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(daemon, .init = suite_init, .fini = suite_fini, .timeout = 90);

/* ---- shared helpers ------------------------------------------------------------------- */

static const char *in_root(const char *name)
{
    static char names[32][32], paths[32][320];
    static int n;
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return paths[i];
    cr_assert(n < 32 && strlen(name) < 32);
    snprintf(names[n], sizeof names[n], "%s", name);
    snprintf(paths[n], sizeof paths[n], "%s/%s", D.root, name);
    return paths[n++];
}

static tdm_bvh *bvh_of(const tdm_mesh *m)
{
    tdm_bvh *b = NULL;
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    return b;
}

/* The CPU engine's count of intersecting pairs of B (at b_in_a) against A, uncapped. */
static uint32_t engine_pairs(const tdm_bvh *a, const tdm_bvh *b, const tdm_xform *b_in_a)
{
    tdm_task t = {.a = a, .b = b, .b_in_a = *b_in_a, .mode = TDM_MODE_CONTACTS, .max_pairs = UINT32_MAX - 1};
    tdm_collide_result r;
    tdm_collide(&t, &r);
    return r.n_pairs;
}

static tdm_client *lib_connect(const char *addr)
{
    tdm_connect_opts o = {.addr = addr, .timeout_ms = 5000, .io_timeout_ms = 30000, .client_name = "test_daemon"};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert_not_null(c);
    cr_assert_eq(tdm_client_err(c), 0, "connecting to %s: %s", addr, tdm_client_errstr(c));
    return c;
}

static void lib_put_mesh(tdm_client *c, const char *name, const tdm_mesh *m, uint8_t id[32], int want_created)
{
    int created = -1;
    int rc = tdm_mesh_put(c, name, m->verts, m->n_verts, m->tris, m->n_tris, id, &created);
    cr_assert_eq(rc, 0, "MeshPut %s: %s", name, tdm_client_errstr(c));
    uint8_t want[32];
    canon_mesh_id(m->verts, m->n_verts, m->tris, m->n_tris, want);
    char a[TDM_ID_HEX], b[TDM_ID_HEX];
    cr_assert(!memcmp(id, want, 32), "mesh %s: server id %s, the README's canonical SHA-256 is %s", name,
              tdm_id_to_hex(id, a), tdm_id_to_hex(want, b));
    if (want_created >= 0) cr_assert_eq(created, want_created, "mesh %s: created=%d", name, created);
}

static int has_id(const uint8_t (*ids)[32], size_t n, const uint8_t id[32])
{
    for (size_t i = 0; i < n; i++)
        if (!memcmp(ids[i], id, 32)) return 1;
    return 0;
}

typedef struct run_result { int status; char *out, *err; } run_result;

/* Runs `tandem args...` with stdout and stderr captured; status is the exit code (or
 * 128 + signal). */
static run_result run_tandem(const char *const *args)
{
    const char *argv[40];
    int n = 0;
    argv[n++] = TANDEM_BIN;
    while (*args) argv[n++] = *args++;
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, in_root("stdout"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addopen(&fa, 2, in_root("stderr"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid;
    int rc = posix_spawn(&pid, TANDEM_BIN, &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert_eq(rc, 0, "cannot start %s: %s", TANDEM_BIN, strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0) cr_assert_eq(errno, EINTR);
    run_result r;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = gen_read_file(in_root("stdout"), NULL);
    r.err = gen_read_file(in_root("stderr"), NULL);
    cr_assert(r.out && r.err);
    return r;
}

static void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
}


/* The last stdout line must be exactly queries=N seconds=S qps=Q colliding=C. */
static void check_summary(const char *stdout_text, size_t n, size_t colliding, const char *what)
{
    char *copy = strdup(stdout_text), **v;
    size_t k = gen_split_lines(copy, &v);
    cr_assert(k >= 1, "%s: nothing on stdout", what);
    const char *last = v[k - 1];
    regex_t re;
    cr_assert_eq(regcomp(&re, "^queries=[0-9]+ seconds=[0-9.e+-]+ qps=[0-9.e+-]+ colliding=[0-9]+$",
                         REG_EXTENDED | REG_NOSUB), 0);
    int m = regexec(&re, last, 0, NULL, 0);
    regfree(&re);
    cr_assert_eq(m, 0, "%s: the last stdout line is not the summary: '%s'", what, last);
    unsigned long long q, c;
    double sec, qps;
    cr_assert_eq(sscanf(last, "queries=%llu seconds=%lf qps=%lf colliding=%llu", &q, &sec, &qps, &c), 4);
    cr_assert_eq(q, n, "%s: queries=%llu for %zu poses", what, q, n);
    cr_assert_eq(c, colliding, "%s: colliding=%llu, brute force says %zu", what, c, colliding);
    cr_assert(sec >= 0 && qps >= 0, "%s: seconds %g qps %g", what, sec, qps);
    free(v);
    free(copy);
}

/* ==== 1. results equal brute force and `tandem check` ===================================== */

typedef struct scene1 {
    tdm_mesh *env, *robot; /* as read back from the OBJ files: what every path sends */
    size_t n;
    double *wire;          /* 7 per pose */
    size_t *npairs;        /* brute force, per pose */
    tdm_pair **pairs;      /* brute force, per pose, sorted by (env triangle, robot triangle) */
    size_t colliding, over3;
} scene1;

static void make_scene1(scene1 *s, tdm_mesh *env, tdm_mesh *robot, double radius, size_t n, uint64_t sd)
{
    gen_rng r = {sd};
    cr_assert(env && robot);
    cr_assert_eq(gen_write_obj(in_root("env.obj"), env), 0);
    cr_assert_eq(gen_write_obj(in_root("robot.obj"), robot), 0);
    gen_pose *poses = malloc(sizeof *poses * n);
    for (size_t i = 0; i < n; i++) poses[i] = wire_stable_pose(&r, tdm_d3(0, 0, 0), radius);
    cr_assert_eq(gen_write_poses(in_root("poses.txt"), poses, n), 0);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);

    char err[512];
    cr_assert_eq(tdm_mesh_load_file(in_root("env.obj"), TDM_ORIGIN_RAW, &s->env, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_mesh_load_file(in_root("robot.obj"), TDM_ORIGIN_RAW, &s->robot, err, sizeof err), TDM_OK, "%s",
                 err);
    tdm_pose *rp;
    size_t rn;
    cr_assert_eq(tdm_poses_read(in_root("poses.txt"), &rp, &rn, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(rn, n);
    s->n = n;
    s->wire = malloc(sizeof *s->wire * 7 * n);
    s->npairs = malloc(sizeof *s->npairs * n);
    s->pairs = malloc(sizeof *s->pairs * n);
    s->colliding = s->over3 = 0;
    brute bf;
    cr_assert_eq(brute_init(&bf, s->env, s->robot), 0);
    for (size_t i = 0; i < n; i++) {
        /* what `tandem check` reads is what the server gets */
        cr_assert(!memcmp(&rp[i].t, &poses[i].t, sizeof rp[i].t) && wire_same_quat(rp[i].q, poses[i].q),
                  "pose %zu does not read back bit for bit", i);
        wire_pose(&poses[i], s->wire + 7 * i);
        tdm_xform x = wire_xform(s->wire + 7 * i);
        size_t k = brute_run(&bf, &x);
        cr_assert(k != (size_t)-1);
        s->npairs[i] = k;
        s->pairs[i] = malloc(sizeof(tdm_pair) * (k ? k : 1));
        memcpy(s->pairs[i], bf.pairs, sizeof(tdm_pair) * k);
        s->colliding += k > 0;
        s->over3 += k > 3;
    }
    brute_free(&bf);
    free(rp);
    free(poses);
    cr_log_info("%zu poses, %zu colliding, %zu with more than 3 pairs", n, s->colliding, s->over3);
    cr_assert(s->colliding > n / 10 && s->colliding < 9 * n / 10, "the scene should mix colliding and free poses "
              "(%zu of %zu collide)", s->colliding, n);
    cr_assert(s->over3 > 0, "some poses should have more than 3 pairs");
}

static void free_scene1(scene1 *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->pairs[i]);
    free(s->pairs);
    free(s->npairs);
    free(s->wire);
    tdm_mesh_free(s->env);
    tdm_mesh_free(s->robot);
}

static int cmp_contact(const void *x, const void *y)
{
    const tdm_contact *a = x, *b = y;
    if (a->triangle_a != b->triangle_a) return a->triangle_a < b->triangle_a ? -1 : 1;
    return a->triangle_b < b->triangle_b ? -1 : a->triangle_b > b->triangle_b;
}

/* Every query of the scene through libtandem on one address, in every mode. */
static void lib_results(const scene1 *s, const char *addr, int first, uint8_t scene_id[32])
{
    tdm_client *c = lib_connect(addr);
    const tdm_server_info *info = tdm_client_server_info(c);
    cr_assert_eq(info->protocol_version, 1);
    cr_assert(info->engine == TDM_ENGINE_CPU || info->engine == TDM_ENGINE_GPU || info->engine == TDM_ENGINE_HYBRID,
              "engine %d", info->engine);
    cr_assert_eq(info->limits.max_frame_bytes, 67108864u, "default max_frame_bytes: %u", info->limits.max_frame_bytes);
    cr_assert_eq(info->limits.max_queries, 65536u);
    cr_assert_eq(info->limits.max_contacts, 1000000u);
    cr_assert_eq(info->limits.max_pipelined, 1024u);
    cr_assert_eq(info->limits.max_objects, 1024u);

    /* ids are the README's hashes; a second upload (other socket) is not "created" */
    uint8_t env_id[32], robot_id[32];
    lib_put_mesh(c, "env", s->env, env_id, first);
    lib_put_mesh(c, "robot", s->robot, robot_id, first);
    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, env_id, 32);
    memcpy(objs[1].mesh_id, robot_id, 32);
    uint32_t movable[2];
    size_t n_movable = 0;
    int created = -1;
    cr_assert_eq(tdm_scene_put(c, "torus", objs, 2, NULL, 0, scene_id, &created, movable, 2, &n_movable), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(created, first);
    cr_assert(n_movable == 1 && movable[0] == 1, "movable: %zu objects", n_movable);
    canon_object co[2] = {{.id = 0, .movable = 0, .pose = {0, 0, 0, 0, 0, 0, 1}}, {.id = 1, .movable = 1}};
    memcpy(co[0].mesh_id, env_id, 32);
    memcpy(co[1].mesh_id, robot_id, 32);
    uint8_t want[32];
    canon_scene_id(co, 2, NULL, 0, want);
    cr_assert(!memcmp(want, scene_id, 32), "the scene id is not the README's canonical SHA-256");

    tdm_query_result *res = calloc(s->n, sizeof *res);
    const size_t batch = 128;
    /* bool, contacts uncapped, contacts capped at 3 */
    for (int pass = 0; pass < 3; pass++) {
        tdm_query_mode mode = pass == 0 ? TDM_QUERY_BOOL : TDM_QUERY_CONTACTS;
        uint32_t cap = pass == 2 ? 3 : 0;
        for (size_t lo = 0; lo < s->n; lo += batch) {
            size_t k = s->n - lo < batch ? s->n - lo : batch;
            int rc = tdm_query(c, scene_id, mode, s->wire + 7 * lo, 1, k, cap, res + lo, NULL);
            cr_assert_eq(rc, 0, "%s: query pass %d at %zu: %s", addr, pass, lo, tdm_client_errstr(c));
        }
        for (size_t i = 0; i < s->n; i++) {
            const tdm_query_result *q = &res[i];
            size_t p = s->npairs[i];
            uint32_t want_contacts = pass == 0 ? (p > 0) : pass == 1 ? (uint32_t)p : (uint32_t)(p < 3 ? p : 3);
            CHECK(q->colliding == (p > 0) && q->contacts == want_contacts && q->truncated == (pass == 2 && p > 3),
                  "%s pass %d pose %zu: colliding=%u contacts=%u truncated=%u; brute force: %zu pairs", addr, pass, i,
                  q->colliding, q->contacts, q->truncated, p);
            if (p > 0)
                CHECK(q->object_a == 0 && q->object_b == 1, "%s pass %d pose %zu: colliding pair (%u, %u)", addr, pass,
                      i, q->object_a, q->object_b);
        }
    }

    /* a request of 1 MiB of numbers or more: its job keeps them in the decoded request's arena
       (request_query.c), with the same answers and the same error for a bad pose deep in it */
    size_t big = (1u << 20) / (7 * sizeof(double)) + 100;
    double *tiled = malloc(sizeof *tiled * 7 * big);
    tdm_query_result *bres = calloc(big, sizeof *bres);
    cr_assert(tiled && bres);
    for (size_t i = 0; i < big; i++) memcpy(tiled + 7 * i, s->wire + 7 * (i % s->n), 7 * sizeof(double));
    double keep_w = tiled[7 * (big - 50) + 6];
    tiled[7 * (big - 50) + 6] = 2.5; /* a quaternion far from unit */
    cr_assert_eq(tdm_query(c, scene_id, TDM_QUERY_BOOL, tiled, 1, big, 0, bres, NULL), TDM_CLIENT_ESERVER,
                 "%s: a large request with a bad pose: %s", addr, tdm_client_errstr(c));
    const tdm_server_error *e = tdm_client_server_error(c);
    cr_assert(e && e->code == TDM_SERVER_NOT_UNIT && !strcmp(e->field, "poses") && e->index == (int64_t)(big - 50),
              "%s: the large request's error: %d '%s' %lld: %s", addr, e ? e->code : -1, e ? e->field : "",
              e ? (long long)e->index : -1, e ? e->message : "");
    tiled[7 * (big - 50) + 6] = keep_w;
    cr_assert_eq(tdm_query(c, scene_id, TDM_QUERY_BOOL, tiled, 1, big, 0, bres, NULL), 0, "%s: large: %s", addr,
                 tdm_client_errstr(c));
    for (size_t i = 0; i < big; i++)
        CHECK(bres[i].colliding == (s->npairs[i % s->n] > 0), "%s: large request, pose %zu: colliding=%u; brute "
              "force: %zu pairs", addr, i, bres[i].colliding, s->npairs[i % s->n]);
    free(bres);
    free(tiled);

    /* want_pairs: the very pairs brute force finds */
    size_t np = 40 < s->n ? 40 : s->n, total = 0;
    for (size_t i = 0; i < np; i++) total += s->npairs[i];
    tdm_pairs pairs = {.data = malloc(sizeof(tdm_contact) * (total + 1)), .cap = total + 1};
    int rc = tdm_query(c, scene_id, TDM_QUERY_CONTACTS, s->wire, 1, np, 20000, res, &pairs);
    cr_assert_eq(rc, 0, "%s: want_pairs: %s", addr, tdm_client_errstr(c));
    cr_assert_eq(pairs.count, total, "%s: %zu pairs sent back, brute force finds %zu", addr, pairs.count, total);
    for (size_t i = 0; i < np; i++) {
        cr_assert_eq(res[i].n_pairs, s->npairs[i], "%s: pose %zu: %u pairs, brute force %zu", addr, i, res[i].n_pairs,
                     s->npairs[i]);
        tdm_contact *ct = pairs.data + res[i].first_pair;
        qsort(ct, res[i].n_pairs, sizeof *ct, cmp_contact);
        for (uint32_t k = 0; k < res[i].n_pairs; k++)
            CHECK(ct[k].object_a == 0 && ct[k].object_b == 1 && ct[k].triangle_a == s->pairs[i][k].a_tri &&
                      ct[k].triangle_b == s->pairs[i][k].b_tri,
                  "%s: pose %zu pair %u: (%u:%u, %u:%u), brute force (0:%u, 1:%u)", addr, i, k, ct[k].object_a,
                  ct[k].triangle_a, ct[k].object_b, ct[k].triangle_b, s->pairs[i][k].a_tri, s->pairs[i][k].b_tri);
    }
    free(pairs.data);
    free(res);
    tdm_client_free(c);
}

/* Compares an --out file with the expected lines of another (or with brute force when
 * ref is NULL). */
static void compare_out(const scene1 *s, const char *path, const char *ref_path, int contacts, const char *what)
{
    char *text = gen_read_file(path, NULL), **v;
    cr_assert_not_null(text, "%s: no --out file", what);
    size_t k = gen_split_lines(text, &v);
    cr_assert_eq(k, s->n, "%s: %zu lines for %zu poses", what, k, s->n);
    char *rtext = NULL, **rv = NULL;
    if (ref_path) {
        rtext = gen_read_file(ref_path, NULL);
        cr_assert_eq(gen_split_lines(rtext, &rv), s->n);
    }
    for (size_t i = 0; i < k; i++) {
        char exp[32];
        snprintf(exp, sizeof exp, "%zu", contacts ? s->npairs[i] : (size_t)(s->npairs[i] > 0));
        CHECK(!strcmp(v[i], exp), "%s line %zu: '%s', brute force %s", what, i + 1, v[i], exp);
        if (rv) CHECK(!strcmp(v[i], rv[i]), "%s line %zu: '%s', tandem check wrote '%s'", what, i + 1, v[i], rv[i]);
    }
    free(v);
    free(rv);
    free(text);
    free(rtext);
}

static void cli_results(const scene1 *s)
{
    static const char *const modes[2] = {"bool", "contacts"};
    const char *check_out[2] = {in_root("check_bool.txt"), in_root("check_contacts.txt")};
    for (int m = 0; m < 2; m++) {
        const char *args[] = {"check", "--env", in_root("env.obj"), "--robot", in_root("robot.obj"), "--poses",
                              in_root("poses.txt"), "--mode", modes[m], "--out", check_out[m], NULL};
        run_result r = run_tandem(args);
        cr_assert_eq(r.status, 0, "tandem check --mode %s exited %d: %s", modes[m], r.status, r.err);
        check_summary(r.out, s->n, s->colliding, "tandem check");
        run_free(&r);
        compare_out(s, check_out[m], NULL, m, "tandem check --out");
    }
    for (int sock = 0; sock < 2; sock++)
        for (int m = 0; m < 2; m++) {
            const char *server = sock == 0 ? D.tcp_addr : D.unix_addr;
            char what[400];
            snprintf(what, sizeof what, "tandem query --server %s --mode %s", server, modes[m]);
            /* over TCP, several connections with small batches in flight; over the socket the defaults */
            const char *args[] = {"query", "--server", server, "--env", in_root("env.obj"), "--robot",
                                  in_root("robot.obj"), "--poses", in_root("poses.txt"), "--mode", modes[m], "--out",
                                  in_root("query_out.txt"), "--connections", "3", "--inflight", "3", "--batch", "17",
                                  NULL};
            if (sock == 1) args[13] = NULL;
            run_result r = run_tandem(args);
            cr_assert_eq(r.status, 0, "%s exited %d: %s", what, r.status, r.err);
            check_summary(r.out, s->n, s->colliding, what);
            run_free(&r);
            compare_out(s, in_root("query_out.txt"), check_out[m], m, what);
        }
}

static void results_test(scene1 *s)
{
    dmn_start(&D, NULL);
    uint8_t sid_tcp[32], sid_unix[32];
    lib_results(s, D.tcp_addr, 1, sid_tcp);
    lib_results(s, D.unix_addr, 0, sid_unix);
    cr_assert(!memcmp(sid_tcp, sid_unix, 32), "the same scene got two ids");
    cli_results(s);

    /* the CLI uploaded the same meshes (same files, same ids) and the same scene */
    tdm_client *c = lib_connect(D.unix_addr);
    tdm_mesh_info *ml;
    size_t nm;
    cr_assert_eq(tdm_mesh_list(c, &ml, &nm), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(nm, 2, "%zu meshes stored after the CLI runs, expected the same 2", nm);
    uint8_t env_id[32];
    canon_mesh_id(s->env->verts, s->env->n_verts, s->env->tris, s->env->n_tris, env_id);
    for (size_t i = 0; i < nm; i++) {
        int is_env = !memcmp(ml[i].mesh_id, env_id, 32);
        const tdm_mesh *m = is_env ? s->env : s->robot;
        cr_assert_str_eq(ml[i].name, is_env ? "env" : "robot", "the first name stored is kept: '%s'", ml[i].name);
        cr_assert(ml[i].n_vertices == m->n_verts && ml[i].n_triangles == m->n_tris && ml[i].scenes == 1,
                  "mesh %zu: %u vertices %u triangles %u scenes", i, ml[i].n_vertices, ml[i].n_triangles,
                  ml[i].scenes);
    }
    tdm_mesh_list_free(ml);
    tdm_scene_info *sl;
    size_t ns;
    cr_assert_eq(tdm_scene_list(c, &sl, &ns), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(ns, 1, "%zu scenes stored, expected 1", ns);
    cr_assert(!memcmp(sl[0].scene_id, sid_tcp, 32) && sl[0].n_objects == 2 && sl[0].n_movable == 1 &&
              sl[0].movable[0] == 1);
    tdm_scene_list_free(sl);
    tdm_client_free(c);
}

Test(daemon, results_torus_vs_sphere)
{
    scene1 s;
    make_scene1(&s, gen_torus(1.5, 0.5, 32, 16), gen_sphere(0.6, 16), 2.3, 300, seed);
    results_test(&s);
    free_scene1(&s);
}

Test(daemon, results_pile_vs_pile)
{
    gen_rng r = {seed ^ 0x9113};
    tdm_mesh *env = gen_pile(&r, 60, 1, 0.25), *robot = gen_pile(&r, 30, 0.3, 0.15);
    scene1 s;
    make_scene1(&s, env, robot, 1.3, 300, seed ^ 0x5eed);
    results_test(&s);
    free_scene1(&s);
}

/* ==== 2. 64 concurrent pipelined clients ================================================= */

enum { POOL = 256, CLIENTS = 64, REQUESTS = 24, WINDOW = 6, MAXK = 12 };

typedef struct pool {
    double wire[POOL * 7];
    uint32_t pairs[POOL]; /* CPU engine, uncapped */
    uint8_t scene_id[32];
    pthread_barrier_t start;
} pool;

typedef struct slot {
    uint64_t id;
    int kind; /* 0 query, 1 MeshList, 2 Stats */
    int mode;
    uint32_t first, k;
    int sent, done;
    tdm_query_result res[MAXK];
} slot;

typedef struct worker {
    pool *p;
    int idx;
    const char *addr;
    int lib; /* libtandem's pipelined API rather than raw frames */
    uint64_t seed;
    size_t poses; /* answered */
    char err[512];
    pthread_t thread;
} worker;

static void plan(worker *w, slot *s, int raw)
{
    gen_rng r = {w->seed};
    for (int j = 0; j < REQUESTS; j++) {
        memset(&s[j], 0, sizeof s[j]);
        for (;;) { /* full 64-bit ids, distinct, never 0 */
            s[j].id = gen_next(&r) | 1u;
            int dup = 0;
            for (int i = 0; i < j; i++) dup |= s[i].id == s[j].id;
            if (!dup) break;
        }
        s[j].kind = raw && j % 6 == 5 ? (j % 12 == 5 ? 1 : 2) : 0;
        s[j].mode = (int)gen_int(&r, 0, 1);
        s[j].k = (uint32_t)gen_int(&r, 1, MAXK);
        s[j].first = (uint32_t)gen_int(&r, 0, POOL - s[j].k);
    }
}

/* Checks one query's answers; 0, or -1 with w->err set. */
static int check_answers(worker *w, const slot *s, const tdm_query_result *res)
{
    for (uint32_t i = 0; i < s->k; i++) {
        uint32_t p = w->p->pairs[s->first + i];
        uint32_t want = s->mode ? p : (p > 0);
        const tdm_query_result *q = &res[i];
        if (q->colliding != (p > 0) || q->contacts != want || q->truncated ||
            (p > 0 && (q->object_a != 0 || q->object_b != 1))) {
            snprintf(w->err, sizeof w->err,
                     "client %d request %llx pose %u (pool %u, %s): colliding=%u contacts=%u truncated=%u pair (%u, "
                     "%u); the CPU engine finds %u pairs",
                     w->idx, (unsigned long long)s->id, i, s->first + i, s->mode ? "contacts" : "bool", q->colliding,
                     q->contacts, q->truncated, q->object_a, q->object_b, p);
            return -1;
        }
    }
    return 0;
}

static void raw_worker(worker *w, int fd)
{
    slot s[REQUESTS];
    plan(w, s, 1);
    int sent = 0, answered = 0;
    char err[256];
    while (answered < REQUESTS) {
        while (sent < REQUESTS && sent - answered < WINDOW) {
            slot *q = &s[sent];
            Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
            rq.id = q->id;
            Tandem__V1__Query qq = TANDEM__V1__QUERY__INIT;
            Tandem__V1__MeshList ml = TANDEM__V1__MESH_LIST__INIT;
            Tandem__V1__StatsRequest st = TANDEM__V1__STATS_REQUEST__INIT;
            if (q->kind == 0) {
                qq.scene_id.data = w->p->scene_id;
                qq.scene_id.len = 32;
                qq.mode = q->mode ? TANDEM__V1__MODE__MODE_CONTACTS : TANDEM__V1__MODE__MODE_BOOL;
                qq.n_poses = 7 * (size_t)q->k;
                qq.poses = w->p->wire + 7 * (size_t)q->first;
                rq.body_case = TANDEM__V1__REQUEST__BODY_QUERY;
                rq.query = &qq;
            } else if (q->kind == 1) {
                rq.body_case = TANDEM__V1__REQUEST__BODY_MESH_LIST;
                rq.mesh_list = &ml;
            } else {
                rq.body_case = TANDEM__V1__REQUEST__BODY_STATS;
                rq.stats = &st;
            }
            if (raw_send(fd, &rq) != 0) {
                snprintf(w->err, sizeof w->err, "client %d: sending request %d: %s", w->idx, sent, strerror(errno));
                return;
            }
            q->sent = 1;
            sent++;
        }
        Tandem__V1__Reply *rep = NULL;
        int rc = raw_recv(fd, 30000, &rep, err, sizeof err);
        if (rc != RAW_REPLY) {
            snprintf(w->err, sizeof w->err, "client %d: %d of %d answered, then: %s", w->idx, answered, REQUESTS,
                     rc == RAW_EOF ? "the server closed the connection" : err);
            return;
        }
        slot *q = NULL;
        for (int j = 0; j < sent; j++)
            if (s[j].id == rep->id) q = &s[j];
        if (!q || q->done) {
            snprintf(w->err, sizeof w->err, "client %d: a reply with id %llx %s", w->idx, (unsigned long long)rep->id,
                     q ? "answered a second time" : "that no request in flight has");
            tandem__v1__reply__free_unpacked(rep, NULL);
            return;
        }
        q->done = 1;
        answered++;
        int want_body = q->kind == 0 ? TANDEM__V1__REPLY__BODY_QUERY
                        : q->kind == 1 ? TANDEM__V1__REPLY__BODY_MESH_LIST : TANDEM__V1__REPLY__BODY_STATS;
        int bad = 0;
        if ((int)rep->body_case != want_body) {
            snprintf(w->err, sizeof w->err, "client %d request %llx: reply body %d, expected %d%s%s", w->idx,
                     (unsigned long long)q->id, (int)rep->body_case, want_body,
                     rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? ": " : "",
                     rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? rep->error->message : "");
            bad = 1;
        } else if (q->kind == 0) {
            if (rep->query->n_results != q->k) {
                snprintf(w->err, sizeof w->err, "client %d request %llx: %zu results for %u queries", w->idx,
                         (unsigned long long)q->id, rep->query->n_results, q->k);
                bad = 1;
            } else {
                for (uint32_t i = 0; i < q->k; i++) {
                    const Tandem__V1__QueryResult *x = rep->query->results[i];
                    q->res[i] = (tdm_query_result){.colliding = x->colliding, .truncated = x->truncated,
                                                   .contacts = x->contacts, .object_a = x->object_a,
                                                   .object_b = x->object_b};
                }
                bad = check_answers(w, q, q->res) != 0;
                if (!bad) w->poses += q->k;
            }
        } else if (q->kind == 1 && rep->mesh_list->n_meshes != 2) {
            snprintf(w->err, sizeof w->err, "client %d: MeshList lists %zu meshes, expected 2", w->idx,
                     rep->mesh_list->n_meshes);
            bad = 1;
        }
        tandem__v1__reply__free_unpacked(rep, NULL);
        if (bad) return;
    }
    /* exactly once: nothing more may come */
    Tandem__V1__Reply *extra = NULL;
    int rc = raw_recv(fd, 150, &extra, err, sizeof err);
    if (rc == RAW_REPLY) {
        snprintf(w->err, sizeof w->err, "client %d: an extra reply (id %llx) after every request was answered", w->idx,
                 (unsigned long long)extra->id);
        tandem__v1__reply__free_unpacked(extra, NULL);
    } else if (rc != RAW_TIMEOUT) {
        snprintf(w->err, sizeof w->err, "client %d: the connection ended after the last reply: %s", w->idx,
                 rc == RAW_EOF ? "closed" : err);
    }
}

static void lib_worker(worker *w, tdm_client *c)
{
    slot s[REQUESTS];
    plan(w, s, 0);
    int sent = 0, answered = 0;
    while (answered < REQUESTS) {
        while (sent < REQUESTS && sent - answered < WINDOW) {
            slot *q = &s[sent];
            uint64_t id = 0;
            int rc = tdm_query_send(c, w->p->scene_id, q->mode ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL,
                                    w->p->wire + 7 * (size_t)q->first, 1, q->k, 0, q->res, NULL, &id);
            if (rc) {
                snprintf(w->err, sizeof w->err, "client %d: tdm_query_send %d: %s", w->idx, sent,
                         tdm_client_errstr(c));
                return;
            }
            for (int j = 0; j < sent; j++)
                if (s[j].id == id && !s[j].done) {
                    snprintf(w->err, sizeof w->err, "client %d: tdm_query_send reused id %llu while in flight", w->idx,
                             (unsigned long long)id);
                    return;
                }
            q->id = id;
            q->sent = 1;
            sent++;
        }
        uint64_t id = 0;
        int status = 0;
        if (tdm_query_wait(c, &id, &status) != 0) {
            snprintf(w->err, sizeof w->err, "client %d: tdm_query_wait with %d outstanding: %s", w->idx,
                     sent - answered, tdm_client_errstr(c));
            return;
        }
        slot *q = NULL;
        for (int j = 0; j < sent; j++)
            if (s[j].id == id && !s[j].done) q = &s[j];
        if (!q) {
            snprintf(w->err, sizeof w->err, "client %d: tdm_query_wait handed back id %llu, not in flight", w->idx,
                     (unsigned long long)id);
            return;
        }
        q->done = 1;
        answered++;
        if (status != 0) {
            snprintf(w->err, sizeof w->err, "client %d: query %llu failed: %s", w->idx, (unsigned long long)id,
                     tdm_client_errstr(c));
            return;
        }
        if (check_answers(w, q, q->res) != 0) return;
        w->poses += q->k;
    }
    if (tdm_query_outstanding(c) != 0)
        snprintf(w->err, sizeof w->err, "client %d: %zu queries still outstanding", w->idx, tdm_query_outstanding(c));
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    int fd = -1;
    tdm_client *c = NULL;
    char err[256];
    /* connect and say hello first, so that all 64 connections are open at once */
    if (w->lib) {
        tdm_connect_opts o = {.addr = w->addr, .timeout_ms = 10000, .io_timeout_ms = 30000, .client_name = "worker"};
        c = tdm_client_connect_with(&o);
        if (!c || tdm_client_err(c))
            snprintf(w->err, sizeof w->err, "client %d: connecting to %s: %s", w->idx, w->addr,
                     c ? tdm_client_errstr(c) : "out of memory");
    } else {
        fd = raw_connect(w->addr);
        if (fd < 0) {
            snprintf(w->err, sizeof w->err, "client %d: cannot connect to %s: %s", w->idx, w->addr, strerror(errno));
        } else {
            Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
            h.protocol_version = 1;
            Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
            rq.id = 0;
            rq.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
            rq.hello = &h;
            Tandem__V1__Reply *rep = NULL;
            int rc = raw_send(fd, &rq) == 0 ? raw_recv(fd, 10000, &rep, err, sizeof err) : RAW_ERROR;
            if (rc != RAW_REPLY || rep->body_case != TANDEM__V1__REPLY__BODY_HELLO)
                snprintf(w->err, sizeof w->err, "client %d: Hello failed (%d): %s", w->idx, rc,
                         rc == RAW_REPLY ? "not a HelloReply" : err);
            if (rep) tandem__v1__reply__free_unpacked(rep, NULL);
        }
    }
    pthread_barrier_wait(&w->p->start);
    if (!w->err[0]) {
        if (w->lib) lib_worker(w, c);
        else raw_worker(w, fd);
    }
    if (fd >= 0) close(fd);
    tdm_client_free(c);
    return NULL;
}

Test(daemon, concurrent_pipelined_clients)
{
    gen_rng r = {seed ^ 0xc0c0};
    tdm_mesh *env = gen_torus(1.5, 0.5, 24, 12), *robot = gen_sphere(0.6, 12);
    cr_assert(env && robot);
    pool *p = calloc(1, sizeof *p);
    tdm_bvh *be = bvh_of(env), *bb = bvh_of(robot);
    size_t colliding = 0;
    for (int i = 0; i < POOL; i++) {
        gen_pose g = wire_stable_pose(&r, tdm_d3(0, 0, 0), 2.3);
        wire_pose(&g, p->wire + 7 * i);
        tdm_xform x = wire_xform(p->wire + 7 * i);
        p->pairs[i] = engine_pairs(be, bb, &x);
        colliding += p->pairs[i] > 0;
    }
    cr_assert(colliding > POOL / 5 && colliding < 4 * POOL / 5, "%zu of %d poses collide", colliding, POOL);

    /* fewer requests in flight than the clients keep (the server stops reading and
     * resumes), and engine runs smaller than some requests (split in pieces) */
    const char *flags[] = {"--max-pipelined", "4", "--max-batch-tasks", "10", NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    cr_assert_eq(tdm_client_server_info(c)->limits.max_pipelined, 4u);
    uint8_t env_id[32], robot_id[32];
    lib_put_mesh(c, "env", env, env_id, 1);
    lib_put_mesh(c, "robot", robot, robot_id, 1);
    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, env_id, 32);
    memcpy(objs[1].mesh_id, robot_id, 32);
    cr_assert_eq(tdm_scene_put(c, "pool", objs, 2, NULL, 0, p->scene_id, NULL, NULL, 0, NULL), 0, "%s",
                 tdm_client_errstr(c));

    cr_assert_eq(pthread_barrier_init(&p->start, NULL, CLIENTS), 0);
    worker *w = calloc(CLIENTS, sizeof *w);
    for (int i = 0; i < CLIENTS; i++) {
        w[i].p = p;
        w[i].idx = i;
        w[i].addr = i % 2 ? D.unix_addr : D.tcp_addr;
        w[i].lib = i % 4 >= 2;
        w[i].seed = seed + 1000003ull * (uint64_t)(i + 1);
        cr_assert_eq(pthread_create(&w[i].thread, NULL, worker_main, &w[i]), 0);
    }
    size_t poses = 0;
    for (int i = 0; i < CLIENTS; i++) pthread_join(w[i].thread, NULL);
    for (int i = 0; i < CLIENTS; i++) {
        cr_assert(!w[i].err[0], "%s", w[i].err);
        poses += w[i].poses;
    }
    pthread_barrier_destroy(&p->start);
    cr_log_info("%d clients answered %zu poses", CLIENTS, poses);

    /* the server counted exactly those poses, and no error */
    tdm_stats st;
    cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(st.queries, poses, "stats: %llu queries answered, the clients got %zu", (unsigned long long)st.queries,
                 poses);
    cr_assert_eq(st.errors, 0, "stats: %llu errors", (unsigned long long)st.errors);
    cr_assert(dmn_running(&D));
    tdm_client_free(c);
    free(w);
    free(p);
    tdm_bvh_free(be);
    tdm_bvh_free(bb);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
}

/* ==== 3. SIGKILL and restart ============================================================== */

enum { BURST = 16, BURST_ACKED = 6, BURST_TRIS = 2000, P3 = 48 };

typedef struct stored {
    const char *name;
    tdm_mesh *m;
    uint8_t id[32];
    uint32_t scenes; /* scenes using it */
} stored;

typedef struct answers { tdm_query_result r[2][P3]; } answers; /* [bool, contacts] */

static void query_both(tdm_client *c, const uint8_t sid[32], const double *wire, uint32_t m, answers *a)
{
    for (int mode = 0; mode < 2; mode++) {
        int rc = tdm_query(c, sid, mode ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, wire, m, P3, 0, a->r[mode], NULL);
        cr_assert_eq(rc, 0, "query: %s", tdm_client_errstr(c));
    }
}

static void same_answers(const answers *a, const answers *b, const char *what)
{
    for (int mode = 0; mode < 2; mode++)
        for (int i = 0; i < P3; i++) {
            const tdm_query_result *x = &a->r[mode][i], *y = &b->r[mode][i];
            cr_assert(x->colliding == y->colliding && x->contacts == y->contacts && x->truncated == y->truncated &&
                          (!x->colliding || (x->object_a == y->object_a && x->object_b == y->object_b)),
                      "%s, %s query %d: (%u, %u, pair %u-%u) before, (%u, %u, pair %u-%u) now", what,
                      mode ? "contacts" : "bool", i, x->colliding, x->contacts, x->object_a, x->object_b,
                      y->colliding, y->contacts, y->object_a, y->object_b);
        }
}

/* Scene two: robot (2) and box (9) movable, env (5) fixed at `env_pose`, (9, 5) allowed.
 * Checked: (2, 5) with env as A, and (2, 9) with the robot as A. */
static void reference_two(const tdm_bvh *env, const tdm_bvh *robot, const tdm_bvh *box, const double env_pose[7],
                          const double *wire, answers *a)
{
    tdm_xform xe = wire_xform(env_pose);
    for (int i = 0; i < P3; i++) {
        tdm_xform xr = wire_xform(wire + 14 * i), xb = wire_xform(wire + 14 * i + 7);
        tdm_xform r_in_e = tdm_xform_rel(&xe, &xr), b_in_r = tdm_xform_rel(&xr, &xb);
        uint32_t p25 = engine_pairs(env, robot, &r_in_e), p29 = engine_pairs(robot, box, &b_in_r);
        for (int mode = 0; mode < 2; mode++) {
            tdm_query_result *q = &a->r[mode][i];
            memset(q, 0, sizeof *q);
            q->colliding = p25 + p29 > 0;
            q->contacts = mode ? p25 + p29 : q->colliding;
            if (p25 || p29) {
                q->object_a = 2;
                q->object_b = p25 ? 5 : 9;
            }
        }
    }
}

static void reference_one(const tdm_bvh *env, const tdm_bvh *robot, const double *wire, answers *a)
{
    for (int i = 0; i < P3; i++) {
        tdm_xform x = wire_xform(wire + 7 * i);
        uint32_t p = engine_pairs(env, robot, &x);
        for (int mode = 0; mode < 2; mode++) {
            tdm_query_result *q = &a->r[mode][i];
            memset(q, 0, sizeof *q);
            q->colliding = p > 0;
            q->contacts = mode ? p : (p > 0);
            if (p) q->object_b = 1;
        }
    }
}

/* Every mesh listed is expected (or one of the `maybe` ones, complete), and every
 * expected one is listed with its name, counts and scene count. */
static void check_mesh_list(tdm_client *c, const stored *st, size_t n, const uint8_t (*acked)[32], size_t n_acked,
                            const uint8_t (*maybe)[32], size_t n_maybe, uint32_t burst_tris, const char *what)
{
    tdm_mesh_info *ml;
    size_t nm;
    cr_assert_eq(tdm_mesh_list(c, &ml, &nm), 0, "%s", tdm_client_errstr(c));
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < nm && memcmp(ml[k].mesh_id, st[i].id, 32)) k++;
        cr_assert(k < nm, "%s: mesh '%s' is not listed", what, st[i].name);
        cr_assert_str_eq(ml[k].name, st[i].name, "%s", what);
        cr_assert(ml[k].n_vertices == st[i].m->n_verts && ml[k].n_triangles == st[i].m->n_tris,
                  "%s: mesh '%s' listed with %u vertices, %u triangles", what, st[i].name, ml[k].n_vertices,
                  ml[k].n_triangles);
        cr_assert_eq(ml[k].scenes, st[i].scenes, "%s: mesh '%s' is used by %u scenes, expected %u", what, st[i].name,
                     ml[k].scenes, st[i].scenes);
    }
    size_t found_acked = 0;
    for (size_t k = 0; k < nm; k++) {
        int known = 0;
        for (size_t i = 0; i < n; i++) known |= !memcmp(ml[k].mesh_id, st[i].id, 32);
        if (has_id(acked, n_acked, ml[k].mesh_id)) {
            found_acked++;
            known = 1;
        } else if (has_id(maybe, n_maybe, ml[k].mesh_id)) {
            known = 1;
        }
        char hex[TDM_ID_HEX];
        cr_assert(known, "%s: mesh %s ('%s') is listed but was never stored, or was deleted", what,
                  tdm_id_to_hex(ml[k].mesh_id, hex), ml[k].name);
        if (!strncmp(ml[k].name, "burst", 5))
            cr_assert(ml[k].n_triangles == burst_tris && ml[k].scenes == 0, "%s: burst mesh with %u triangles", what,
                      ml[k].n_triangles);
    }
    cr_assert_eq(found_acked, n_acked, "%s: %zu of %zu acknowledged burst meshes are listed", what, found_acked,
                 n_acked);
    tdm_mesh_list_free(ml);
}

static void check_scene_list(tdm_client *c, const uint8_t (*ids)[32], const char *const *names, const uint32_t *nobj,
                             const uint32_t (*movable)[2], const size_t *nmov, size_t n, const char *what)
{
    tdm_scene_info *sl;
    size_t ns;
    cr_assert_eq(tdm_scene_list(c, &sl, &ns), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(ns, n, "%s: %zu scenes listed, expected %zu", what, ns, n);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < ns && memcmp(sl[k].scene_id, ids[i], 32)) k++;
        cr_assert(k < ns, "%s: scene '%s' is not listed", what, names[i]);
        cr_assert_str_eq(sl[k].name, names[i], "%s", what);
        cr_assert_eq(sl[k].n_objects, nobj[i], "%s: scene '%s'", what, names[i]);
        cr_assert_eq(sl[k].n_movable, nmov[i], "%s: scene '%s'", what, names[i]);
        for (size_t j = 0; j < nmov[i]; j++)
            cr_assert_eq(sl[k].movable[j], movable[i][j], "%s: scene '%s' movable %zu", what, names[i], j);
    }
    tdm_scene_list_free(sl);
}

/* Files in a data subfolder: every name is 64 hex digits and the suffix (no temporary
 * leftovers). Returns their number. */
static size_t check_files(const char *sub, const char *suffix)
{
    char dir[400];
    snprintf(dir, sizeof dir, "%s/%s", D.data_dir, sub);
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, ".."))) continue;
        size_t len = strlen(e->d_name);
        int ok = len == 64 + strlen(suffix) && !strcmp(e->d_name + 64, suffix);
        for (size_t i = 0; ok && i < 64; i++) ok = strchr("0123456789abcdef", e->d_name[i]) != NULL;
        cr_assert(ok, "%s holds '%s', not <64 hex digits>%s", dir, e->d_name, suffix);
        n++;
    }
    closedir(d);
    return n;
}

static void flip_byte(const char *path, long off)
{
    int fd = open(path, O_RDWR);
    cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
    struct stat stt;
    cr_assert_eq(fstat(fd, &stt), 0);
    if (off < 0) off = (long)stt.st_size / 2;
    cr_assert(off < (long)stt.st_size, "%s has only %lld bytes", path, (long long)stt.st_size);
    uint8_t b;
    cr_assert_eq(pread(fd, &b, 1, off), 1);
    b ^= 0x5a;
    cr_assert_eq(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static const char *data_file(const char *sub, const uint8_t id[32], const char *suffix)
{
    static char p[2][400];
    static int k;
    char hex[TDM_ID_HEX];
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s/%s%s", D.data_dir, sub, tdm_id_to_hex(id, hex), suffix);
    return p[k];
}

Test(daemon, kill9_restart_keeps_acknowledged_state)
{
    gen_rng r = {seed ^ 0x4b11};
    enum { ENV, ROBOT, BOX, PILE, N_STORED };
    stored st[N_STORED] = {{"env", gen_torus(1.5, 0.5, 16, 8), {0}, 2},
                           {"robot", gen_sphere(0.6, 10), {0}, 2},
                           {"box", gen_box(0.3, 0.2, 0.1), {0}, 1},
                           {"pile", gen_pile(&r, 40, 1, 0.2), {0}, 0}};
    for (int i = 0; i < N_STORED; i++) cr_assert_not_null(st[i].m);
    tdm_bvh *be = bvh_of(st[ENV].m), *br = bvh_of(st[ROBOT].m), *bx = bvh_of(st[BOX].m);

    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    for (int i = 0; i < N_STORED; i++) lib_put_mesh(c, st[i].name, st[i].m, st[i].id, 1);
    /* a mesh deleted (acknowledged) must stay deleted */
    tdm_mesh *doomed = gen_box(1, 2, 3);
    uint8_t doomed_id[32];
    lib_put_mesh(c, "doomed", doomed, doomed_id, 1);
    cr_assert_eq(tdm_mesh_delete(c, doomed_id), 0, "%s", tdm_client_errstr(c));

    /* scene one: env fixed at the identity, robot movable */
    uint8_t sids[3][32];
    tdm_scene_object o1[2] = {{.object_id = 0}, {.object_id = 1, .movable = 1}};
    memcpy(o1[0].mesh_id, st[ENV].id, 32);
    memcpy(o1[1].mesh_id, st[ROBOT].id, 32);
    cr_assert_eq(tdm_scene_put(c, "one", o1, 2, NULL, 0, sids[0], NULL, NULL, 0, NULL), 0, "%s", tdm_client_errstr(c));
    /* scene two: env fixed at a pose, robot and box movable, box-env allowed */
    const double env_pose[7] = {0.2, -0.1, 0.05, 0, 0, 0.25881904510252074, 0.96592582628906831};
    tdm_scene_object o2[3] = {{.object_id = 9, .movable = 1}, {.object_id = 5, .has_pose = 1}, {.object_id = 2, .movable = 1}};
    memcpy(o2[0].mesh_id, st[BOX].id, 32);
    memcpy(o2[1].mesh_id, st[ENV].id, 32);
    memcpy(o2[1].pose, env_pose, sizeof env_pose);
    memcpy(o2[2].mesh_id, st[ROBOT].id, 32);
    tdm_object_pair allowed[2] = {{9, 5}, {5, 9}};
    uint32_t mv[3];
    size_t nmv = 0;
    cr_assert_eq(tdm_scene_put(c, "two", o2, 3, allowed, 2, sids[1], NULL, mv, 3, &nmv), 0, "%s", tdm_client_errstr(c));
    cr_assert(nmv == 2 && mv[0] == 2 && mv[1] == 9, "scene two: movable order");
    canon_object co[3] = {{.id = 9, .movable = 1}, {.id = 5}, {.id = 2, .movable = 1}};
    for (int i = 0; i < 3; i++) memcpy(co[i].mesh_id, o2[i].mesh_id, 32);
    memcpy(co[1].pose, env_pose, sizeof env_pose);
    const uint32_t ap[2][2] = {{9, 5}, {5, 9}};
    uint8_t want[32];
    canon_scene_id(co, 3, ap, 2, want);
    cr_assert(!memcmp(want, sids[1], 32), "scene two: the id is not the README's canonical SHA-256");
    /* scene three, deleted (acknowledged): must stay deleted */
    tdm_scene_object o3[2] = {{.object_id = 1}, {.object_id = 0, .movable = 1}};
    memcpy(o3[0].mesh_id, st[BOX].id, 32);
    memcpy(o3[1].mesh_id, st[PILE].id, 32);
    cr_assert_eq(tdm_scene_put(c, "three", o3, 2, NULL, 0, sids[2], NULL, NULL, 0, NULL), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(tdm_scene_delete(c, sids[2]), 0, "%s", tdm_client_errstr(c));

    /* answers before the crash, checked against the CPU engine */
    double w1[P3 * 7], w2[P3 * 14];
    for (int i = 0; i < P3; i++) {
        gen_pose g = wire_stable_pose(&r, tdm_d3(0, 0, 0), 2.3);
        wire_pose(&g, w1 + 7 * i);
        g = wire_stable_pose(&r, tdm_d3(0.2, 0, 0), 2.2);
        wire_pose(&g, w2 + 14 * i);
        g = wire_stable_pose(&r, tdm_d3(0.2, 0, 0), 1.2);
        wire_pose(&g, w2 + 14 * i + 7);
    }
    answers *before1 = calloc(1, sizeof *before1), *before2 = calloc(1, sizeof *before2);
    answers *ref = calloc(1, sizeof *ref), *now = calloc(1, sizeof *now);
    query_both(c, sids[0], w1, 1, before1);
    reference_one(be, br, w1, ref);
    same_answers(ref, before1, "scene one vs the CPU engine");
    query_both(c, sids[1], w2, 2, before2);
    reference_two(be, br, bx, env_pose, w2, ref);
    same_answers(ref, before2, "scene two vs the CPU engine");
    tdm_client_free(c);

    /* a burst of pipelined MeshPuts; SIGKILL right after the 6th acknowledgement */
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    uint8_t burst_ids[BURST][32], acked[BURST][32];
    size_t n_acked = 0;
    tdm_mesh *burst[BURST];
    for (int i = 0; i < BURST; i++) {
        burst[i] = gen_pile(&r, BURST_TRIS, 1, 0.2); /* big enough that writes are still going on */
        cr_assert_not_null(burst[i]);
        canon_mesh_id(burst[i]->verts, burst[i]->n_verts, burst[i]->tris, burst[i]->n_tris, burst_ids[i]);
        char name[32];
        snprintf(name, sizeof name, "burst%d", i);
        Tandem__V1__MeshPut mp = TANDEM__V1__MESH_PUT__INIT;
        mp.name = name;
        mp.n_vertices = 3 * (size_t)burst[i]->n_verts;
        mp.vertices = burst[i]->verts;
        mp.n_triangles = 3 * (size_t)burst[i]->n_tris;
        mp.triangles = burst[i]->tris;
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 100 + (uint64_t)i;
        rq.body_case = TANDEM__V1__REQUEST__BODY_MESH_PUT;
        rq.mesh_put = &mp;
        cr_assert_eq(raw_send(fd, &rq), 0);
    }
    char err[256];
    while (n_acked < BURST_ACKED) {
        Tandem__V1__Reply *rep = NULL;
        int rc = raw_recv(fd, 10000, &rep, err, sizeof err);
        cr_assert_eq(rc, RAW_REPLY, "burst: %s", err);
        cr_assert(rep->id >= 100 && rep->id < 100 + BURST && rep->body_case == TANDEM__V1__REPLY__BODY_MESH_PUT,
                  "burst: reply %llu body %d", (unsigned long long)rep->id, (int)rep->body_case);
        cr_assert(rep->mesh_put->mesh_id.len == 32 && !memcmp(rep->mesh_put->mesh_id.data, burst_ids[rep->id - 100], 32),
                  "burst: wrong id for mesh %llu", (unsigned long long)rep->id - 100);
        memcpy(acked[n_acked++], burst_ids[rep->id - 100], 32);
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    int status = dmn_stop(&D, SIGKILL);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "tandemd was not killed by SIGKILL: %d", status);
    close(fd);

    /* restart on the same directory */
    dmn_start(&D, NULL);
    c = lib_connect(D.unix_addr);
    check_mesh_list(c, st, N_STORED, acked, n_acked, burst_ids, BURST, BURST_TRIS, "after SIGKILL");
    const char *names[2] = {"one", "two"};
    const uint32_t nobj[2] = {2, 3}, movable[2][2] = {{1, 0}, {2, 9}};
    const size_t nmov[2] = {1, 2};
    check_scene_list(c, sids, names, nobj, movable, nmov, 2, "after SIGKILL");
    query_both(c, sids[0], w1, 1, now);
    same_answers(before1, now, "scene one after SIGKILL");
    query_both(c, sids[1], w2, 2, now);
    same_answers(before2, now, "scene two after SIGKILL");
    uint8_t again[32];
    lib_put_mesh(c, "env", st[ENV].m, again, 0); /* still known to be on disk: not rebuilt */
    cr_assert(!memcmp(again, st[ENV].id, 32));
    tdm_client_free(c);
    /* no temporary leftovers, and one file per listed mesh and scene */
    size_t mesh_files = check_files("meshes", ".mesh"), scene_files = check_files("scenes", ".scene");
    cr_assert(mesh_files >= N_STORED + n_acked && mesh_files <= N_STORED + BURST, "%zu mesh files", mesh_files);
    cr_log_info("after SIGKILL: %zu of %d burst meshes stored, %zu acknowledged", mesh_files - N_STORED, BURST, n_acked);
    cr_assert_eq(scene_files, 2, "%zu scene files", scene_files);
    struct stat sst;
    cr_assert_neq(stat(data_file("meshes", doomed_id, ".mesh"), &sst), 0, "the deleted mesh's file is back");

    /* corrupt the pile (a payload byte) and scene two (a checksum byte); restart */
    cr_assert_eq(dmn_stop(&D, SIGKILL) & 0x7f, SIGKILL);
    const char *pile_path = data_file("meshes", st[PILE].id, ".mesh");
    const char *two_path = data_file("scenes", sids[1], ".scene");
    char pile_copy[400], two_copy[400];
    snprintf(pile_copy, sizeof pile_copy, "%s", pile_path);
    snprintf(two_copy, sizeof two_copy, "%s", two_path);
    flip_byte(pile_copy, -1);
    flip_byte(two_copy, 40);
    size_t log_before = 0;
    free(gen_read_file(D.log_path, &log_before));
    dmn_start(&D, NULL);
    char *log = dmn_log(&D);
    cr_assert(strstr(log + log_before, pile_copy) && strstr(log + log_before, two_copy),
              "the log should name both skipped files:\n%s", log + log_before);
    free(log);
    c = lib_connect(D.unix_addr);
    st[ENV].scenes = st[ROBOT].scenes = 1;
    st[BOX].scenes = 0; /* scene two is gone */
    tdm_mesh_info *ml;
    size_t nm;
    cr_assert_eq(tdm_mesh_list(c, &ml, &nm), 0);
    for (size_t k = 0; k < nm; k++) cr_assert(memcmp(ml[k].mesh_id, st[PILE].id, 32), "the corrupted pile is listed");
    tdm_mesh_list_free(ml);
    check_mesh_list(c, st, PILE, acked, n_acked, burst_ids, BURST, BURST_TRIS, "after corruption");
    check_scene_list(c, sids, names, nobj, movable, nmov, 1, "after corruption");
    query_both(c, sids[0], w1, 1, now);
    same_answers(before1, now, "scene one after corruption");
    /* both come back when sent again, with the same ids and answers */
    lib_put_mesh(c, "pile", st[PILE].m, again, 1);
    int created = -1;
    cr_assert_eq(tdm_scene_put(c, "two", o2, 3, allowed, 2, again, &created, NULL, 0, NULL), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert(created == 1 && !memcmp(again, sids[1], 32), "scene two put again: created=%d", created);
    query_both(c, sids[1], w2, 2, now);
    same_answers(before2, now, "scene two put again");
    tdm_client_free(c);

    for (int i = 0; i < BURST; i++) tdm_mesh_free(burst[i]);
    for (int i = 0; i < N_STORED; i++) tdm_mesh_free(st[i].m);
    tdm_mesh_free(doomed);
    tdm_bvh_free(be);
    tdm_bvh_free(br);
    tdm_bvh_free(bx);
    free(before1);
    free(before2);
    free(ref);
    free(now);
}

/* ==== 4. malformed input ====================================================================== */

enum { MAX_FRAME = 4096, NW = 8 };

typedef struct witness {
    tdm_client *c;
    uint8_t scene_id[32];
    double wire[NW * 7];
    uint32_t pairs[NW];
    size_t queries; /* poses it has had answered */
} witness;

/* Connects the witness (to addr) and stores its scene: env fixed at the origin (object 0),
 * robot movable (object 1); the two mesh ids into env_id and robot_id. */
static void witness_scene(witness *w, const char *addr, const tdm_mesh *env, const tdm_mesh *robot,
                          uint8_t env_id[32], uint8_t robot_id[32])
{
    w->c = lib_connect(addr);
    lib_put_mesh(w->c, "env", env, env_id, 1);
    lib_put_mesh(w->c, "robot", robot, robot_id, 1);
    tdm_scene_object objs[2] = {{.object_id = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, env_id, 32);
    memcpy(objs[1].mesh_id, robot_id, 32);
    cr_assert_eq(tdm_scene_put(w->c, "w", objs, 2, NULL, 0, w->scene_id, NULL, NULL, 0, NULL), 0, "%s",
                 tdm_client_errstr(w->c));
}

/* The witness, connected since the start, must still be served, correctly. */
static void witness_ok(witness *w, const char *after)
{
    tdm_query_result res[NW];
    for (int mode = 0; mode < 2; mode++) {
        int rc = tdm_query(w->c, w->scene_id, mode ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, w->wire, 1, NW, 0, res, NULL);
        cr_assert_eq(rc, 0, "after %s: the other client's query failed: %s", after, tdm_client_errstr(w->c));
        for (int i = 0; i < NW; i++)
            cr_assert(res[i].colliding == (w->pairs[i] > 0) && res[i].contacts == (mode ? w->pairs[i] : (w->pairs[i] > 0)),
                      "after %s: the other client's pose %d: colliding=%u contacts=%u, expected %u pairs", after, i,
                      res[i].colliding, res[i].contacts, w->pairs[i]);
        w->queries += NW;
    }
    cr_assert(dmn_running(&D), "after %s: tandemd is gone", after);
}

static int fresh(const char *addr, int hello)
{
    int fd = raw_connect(addr);
    cr_assert(fd >= 0, "connect %s: %s", addr, strerror(errno));
    if (hello) raw_hello_or_fail(fd, 1);
    return fd;
}

static void send_raw_bytes(int fd, const void *p, size_t n) { cr_assert_eq(raw_write_all(fd, p, n), 0); }

/* A broken frame header: the documented Error (id 0, field "frame"), then the close. */
static void broken_frame_case(witness *w, const char *addr, int hello, uint32_t len, int code, const char *what)
{
    int fd = fresh(addr, hello);
    uint8_t hdr[4] = {(uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len};
    send_raw_bytes(fd, hdr, 4);
    Tandem__V1__Reply *rep = NULL;
    char err[256];
    int rc = raw_recv(fd, 5000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "%s: expected an Error before the close, got %s", what,
                 rc == RAW_EOF ? "a close" : err);
    expect_error(rep, what, 0, code, "frame", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    cr_assert_eq(raw_wait_eof(fd, 5000), RAW_EOF, "%s: the server should close the connection after the Error", what);
    close(fd);
    witness_ok(w, what);
}

/* Sends one request and checks the documented Error comes back with its id. */
static void error_case(witness *w, int fd, Tandem__V1__Request *rq, int code, const char *field, int64_t index,
                       const char *what)
{
    Tandem__V1__Reply *rep = raw_call_or_fail(fd, rq);
    expect_error(rep, what, rq->id, code, field, index);
    tandem__v1__reply__free_unpacked(rep, NULL);
    witness_ok(w, what);
}

static Tandem__V1__Request query_req(uint64_t id, Tandem__V1__Query *q, const uint8_t *sid, size_t sid_len,
                                     double *poses, size_t n_numbers, int mode)
{
    Tandem__V1__Query z = TANDEM__V1__QUERY__INIT;
    *q = z;
    q->scene_id.data = (uint8_t *)sid;
    q->scene_id.len = sid_len;
    q->mode = mode ? TANDEM__V1__MODE__MODE_CONTACTS : TANDEM__V1__MODE__MODE_BOOL;
    q->n_poses = n_numbers;
    q->poses = poses;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_QUERY;
    rq.query = q;
    return rq;
}

static Tandem__V1__Request mesh_req(uint64_t id, Tandem__V1__MeshPut *m, float *v, size_t nv_numbers, uint32_t *t,
                                    size_t nt_numbers)
{
    Tandem__V1__MeshPut z = TANDEM__V1__MESH_PUT__INIT;
    *m = z;
    m->name = "bad";
    m->n_vertices = nv_numbers;
    m->vertices = v;
    m->n_triangles = nt_numbers;
    m->triangles = t;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_MESH_PUT;
    rq.mesh_put = m;
    return rq;
}

Test(daemon, malformed_input_gets_documented_errors)
{
    gen_rng r = {seed ^ 0xbad};
    tdm_mesh *env = gen_torus(1.5, 0.5, 12, 6), *robot = gen_sphere(0.6, 8);
    cr_assert(env && robot);
    tdm_bvh *be = bvh_of(env), *bb = bvh_of(robot);
    char maxf[16];
    snprintf(maxf, sizeof maxf, "%d", MAX_FRAME);
    const char *flags[] = {"--max-frame-bytes", maxf, "--max-queries", "64", "--max-triangles", "150",
                           "--max-objects", "4", NULL};
    dmn_start(&D, flags);

    witness w = {0};
    uint8_t env_id[32], robot_id[32];
    witness_scene(&w, D.tcp_addr, env, robot, env_id, robot_id);
    cr_assert_eq(tdm_client_server_info(w.c)->limits.max_frame_bytes, (uint32_t)MAX_FRAME);
    /* half of the witness's poses collide, half do not */
    for (int i = 0, hits = 0, misses = 0; i < NW;) {
        gen_pose g = wire_stable_pose(&r, tdm_d3(0, 0, 0), 2.3);
        wire_pose(&g, w.wire + 7 * i);
        tdm_xform x = wire_xform(w.wire + 7 * i);
        w.pairs[i] = engine_pairs(be, bb, &x);
        if (w.pairs[i] > 0 ? hits < NW / 2 : misses < NW / 2) {
            hits += w.pairs[i] > 0;
            misses += w.pairs[i] == 0;
            i++;
        }
    }
    witness_ok(&w, "setting up");
    size_t accepted = 0; /* poses of accepted raw queries */

    /* ---- broken frames: Error then close ---- */
    broken_frame_case(&w, D.tcp_addr, 1, 0, 1 /* BAD_REQUEST */, "frame length 0");
    broken_frame_case(&w, D.unix_addr, 0, 0xFFFFFFFFu, 4 /* LIMIT */, "frame length 0xFFFFFFFF");
    broken_frame_case(&w, D.tcp_addr, 1, MAX_FRAME + 1, 4, "frame length max_frame_bytes + 1");
    broken_frame_case(&w, D.tcp_addr, 0, MAX_FRAME + 1, 4, "frame length max_frame_bytes + 1 before Hello");

    /* a frame of exactly max_frame_bytes is accepted: MeshList padded with an unknown field */
    {
        int fd = fresh(D.unix_addr, 1);
        Tandem__V1__MeshList ml = TANDEM__V1__MESH_LIST__INIT;
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 77;
        rq.body_case = TANDEM__V1__REQUEST__BODY_MESH_LIST;
        rq.mesh_list = &ml;
        size_t n;
        uint8_t *b = raw_pack(&rq, &n);
        uint8_t *frame = calloc(1, MAX_FRAME);
        memcpy(frame, b, n);
        size_t pad = MAX_FRAME - n - 4; /* tag (2 bytes), length (2 bytes), then pad bytes */
        cr_assert(pad >= 128 && pad < 16384);
        frame[n] = 0xa2; /* field 100, length-delimited */
        frame[n + 1] = 0x06;
        frame[n + 2] = (uint8_t)(0x80 | (pad & 0x7f));
        frame[n + 3] = (uint8_t)(pad >> 7);
        cr_assert_eq(raw_send_frame(fd, frame, MAX_FRAME), 0);
        Tandem__V1__Reply *rep = NULL;
        char err[256];
        cr_assert_eq(raw_recv(fd, 5000, &rep, err, sizeof err), RAW_REPLY, "a frame of max_frame_bytes: %s", err);
        cr_assert(rep->id == 77 && rep->body_case == TANDEM__V1__REPLY__BODY_MESH_LIST && rep->mesh_list->n_meshes == 2,
                  "a frame of exactly max_frame_bytes (with an unknown field) should be answered: id %llu body %d",
                  (unsigned long long)rep->id, (int)rep->body_case);
        tandem__v1__reply__free_unpacked(rep, NULL);
        free(frame);
        free(b);
        close(fd);
        witness_ok(&w, "a frame of exactly max_frame_bytes");
    }

    /* ---- frames cut short: a clean close, no reply ---- */
    {
        int fd = fresh(D.tcp_addr, 1);
        uint8_t part[4 + 50] = {0, 0, 0, 100};
        memset(part + 4, 0x08, 50);
        send_raw_bytes(fd, part, sizeof part);
        cr_assert_eq(shutdown(fd, SHUT_WR), 0);
        cr_assert_eq(raw_wait_eof(fd, 5000), RAW_EOF, "a frame cut short then closed: expected a close, no reply");
        close(fd);
        witness_ok(&w, "a frame cut short");

        fd = fresh(D.unix_addr, 0);
        send_raw_bytes(fd, part, 2); /* half a length prefix */
        cr_assert_eq(shutdown(fd, SHUT_WR), 0);
        cr_assert_eq(raw_wait_eof(fd, 5000), RAW_EOF, "half a length prefix then closed: expected a close, no reply");
        close(fd);
        witness_ok(&w, "half a length prefix");

        fd = fresh(D.tcp_addr, 1);
        send_raw_bytes(fd, part, sizeof part);
        close(fd); /* abrupt, mid-frame */
        witness_ok(&w, "a frame cut short by close()");
    }

    /* ---- undecodable bytes: an Error, and the connection stays usable ---- */
    int fd = fresh(D.tcp_addr, 0);
    {
        static const uint8_t garbage[][6] = {{0x0f, 0x01, 0x02}, {0x08, 0xff, 0xff}, {0x52, 0x40, 0x08}};
        static const size_t glen[] = {3, 3, 3};
        static const char *const gwhat[] = {"garbage: wire type 7", "garbage: a varint cut short",
                                            "garbage: a Hello of 64 bytes in 1"};
        for (int g = 0; g < 3; g++) {
            cr_assert_eq(raw_send_frame(fd, garbage[g], (uint32_t)glen[g]), 0);
            Tandem__V1__Reply *rep = NULL;
            char err[256];
            int rc = raw_recv(fd, 5000, &rep, err, sizeof err);
            cr_assert_eq(rc, RAW_REPLY, "%s: %s", gwhat[g], rc == RAW_EOF ? "the server closed the connection" : err);
            expect_error(rep, gwhat[g], 0, 1, "frame", -1);
            tandem__v1__reply__free_unpacked(rep, NULL);
            witness_ok(&w, gwhat[g]);
        }
        /* a Request with no body */
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 12;
        error_case(&w, fd, &rq, 1, "body", -1, "a Request without a body");
    }

    /* ---- request before Hello, wrong version, then Hello on the same connection ---- */
    {
        Tandem__V1__Query q;
        Tandem__V1__Request rq = query_req(21, &q, w.scene_id, 32, w.wire, 7, 0);
        error_case(&w, fd, &rq, 3 /* UNAUTHENTICATED */, "hello", -1, "a Query before Hello");
        Tandem__V1__StatsRequest sr = TANDEM__V1__STATS_REQUEST__INIT;
        Tandem__V1__Request rs = TANDEM__V1__REQUEST__INIT;
        rs.id = 22;
        rs.body_case = TANDEM__V1__REQUEST__BODY_STATS;
        rs.stats = &sr;
        error_case(&w, fd, &rs, 3, "hello", -1, "Stats before Hello");
        Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
        h.protocol_version = 2;
        Tandem__V1__Request rh = TANDEM__V1__REQUEST__INIT;
        rh.id = 23;
        rh.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
        rh.hello = &h;
        error_case(&w, fd, &rh, 2 /* UNSUPPORTED_VERSION */, "protocol_version", -1, "Hello with version 2");
        error_case(&w, fd, &rq, 3, "hello", -1, "a Query after a refused Hello");
        raw_hello_or_fail(fd, 24);
        rq.id = 25;
        Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
        cr_assert(rep->body_case == TANDEM__V1__REPLY__BODY_QUERY && rep->query->n_results == 1 &&
                  rep->query->results[0]->colliding == (w.pairs[0] > 0), "the Query after Hello: body %d",
                  (int)rep->body_case);
        tandem__v1__reply__free_unpacked(rep, NULL);
        accepted += 1;
    }

    /* ---- bad poses ---- */
    {
        double p[3 * 7];
        memcpy(p, w.wire, sizeof p);
        Tandem__V1__Query q;
        p[7 + 0] = NAN;
        Tandem__V1__Request rq = query_req(31, &q, w.scene_id, 32, p, 21, 0);
        error_case(&w, fd, &rq, 5 /* NON_FINITE */, "poses", 1, "NaN in query 1's x");
        memcpy(p, w.wire, sizeof p);
        p[14 + 6] = INFINITY;
        rq = query_req(32, &q, w.scene_id, 32, p, 21, 1);
        error_case(&w, fd, &rq, 5, "poses", 2, "+Inf in query 2's qw");
        memcpy(p, w.wire, sizeof p);
        p[2] = -INFINITY;
        rq = query_req(33, &q, w.scene_id, 32, p, 21, 0);
        error_case(&w, fd, &rq, 5, "poses", 0, "-Inf in query 0's z");
        memcpy(p, w.wire, sizeof p);
        p[7 + 3] = 0, p[7 + 4] = 0, p[7 + 5] = 0, p[7 + 6] = 2;
        rq = query_req(34, &q, w.scene_id, 32, p, 21, 1);
        error_case(&w, fd, &rq, 7 /* NOT_UNIT */, "poses", 1, "quaternion of norm 2 in query 1");
        memcpy(p, w.wire, sizeof p);
        for (int k = 3; k < 7; k++) p[14 + k] *= 1.0015;
        rq = query_req(35, &q, w.scene_id, 32, p, 21, 1);
        error_case(&w, fd, &rq, 7, "poses", 2, "quaternion of norm 1.0015 in query 2");
        memset(p, 0, sizeof p);
        rq = query_req(36, &q, w.scene_id, 32, p, 7, 0);
        error_case(&w, fd, &rq, 7, "poses", 0, "quaternion of norm 0");
        /* within 1e-3: accepted and normalised */
        memcpy(p, w.wire, sizeof p);
        for (int k = 3; k < 7; k++) p[7 + k] *= 1.0008;
        rq = query_req(37, &q, w.scene_id, 32, p, 21, 1);
        Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
        cr_assert(rep->body_case == TANDEM__V1__REPLY__BODY_QUERY && rep->query->n_results == 3,
                  "a quaternion of norm 1.0008 is within 1e-3: body %d", (int)rep->body_case);
        for (int i = 0; i < 3; i++) {
            tdm_xform x = wire_xform(p + 7 * i);
            uint32_t want = engine_pairs(be, bb, &x);
            cr_assert_eq(rep->query->results[i]->contacts, want, "norm 1.0008: query %d: %u contacts, expected %u", i,
                         rep->query->results[i]->contacts, want);
        }
        tandem__v1__reply__free_unpacked(rep, NULL);
        accepted += 3;
        /* 64 queries: converted and answered on libuv's thread pool, not the loop (OFFLOAD_QUERIES in
         * request_query.c), with the same errors and answers */
        double big[64 * 7];
        for (int i = 0; i < 64; i++) memcpy(big + 7 * i, w.wire + 7 * (i % NW), 7 * sizeof(double));
        big[7 * 50 + 1] = NAN;
        rq = query_req(131, &q, w.scene_id, 32, big, 64 * 7, 0);
        error_case(&w, fd, &rq, 5, "poses", 50, "NaN in query 50 of 64");
        memcpy(big + 7 * 50, w.wire + 7 * (50 % NW), 7 * sizeof(double));
        for (int k = 3; k < 7; k++) big[7 * 63 + k] *= 1.01;
        rq = query_req(132, &q, w.scene_id, 32, big, 64 * 7, 1);
        error_case(&w, fd, &rq, 7, "poses", 63, "quaternion of norm 1.01 in query 63 of 64");
        memcpy(big + 7 * 63, w.wire + 7 * (63 % NW), 7 * sizeof(double));
        rq = query_req(133, &q, w.scene_id, 32, big, 64 * 7, 1);
        rep = raw_call_or_fail(fd, &rq);
        cr_assert(rep->body_case == TANDEM__V1__REPLY__BODY_QUERY && rep->id == 133 && rep->query->n_results == 64,
                  "64 queries: body %d", (int)rep->body_case);
        for (int i = 0; i < 64; i++)
            cr_assert_eq(rep->query->results[i]->contacts, w.pairs[i % NW], "64 queries: query %d: %u contacts, expected %u",
                         i, rep->query->results[i]->contacts, w.pairs[i % NW]);
        tandem__v1__reply__free_unpacked(rep, NULL);
        accepted += 64;
        rq = query_req(38, &q, w.scene_id, 32, p, 20, 0);
        error_case(&w, fd, &rq, 1, "poses", -1, "20 pose numbers (not a multiple of 7)");
        rq = query_req(39, &q, w.scene_id, 32, p, 0, 0);
        error_case(&w, fd, &rq, 1, "poses", -1, "no poses");
        rq = query_req(40, &q, w.scene_id, 32, p, 7, 1);
        q.max_contacts = 1000001;
        error_case(&w, fd, &rq, 4, "max_contacts", -1, "max_contacts over the server's");
    }

    /* ---- unknown and malformed ids ---- */
    uint8_t bogus[32];
    for (int i = 0; i < 32; i++) bogus[i] = (uint8_t)gen_next(&r);
    {
        Tandem__V1__Query q;
        Tandem__V1__Request rq = query_req(41, &q, bogus, 32, w.wire, 7, 0);
        error_case(&w, fd, &rq, 10 /* UNKNOWN_SCENE */, "scene_id", -1, "a Query on an unknown scene");
        rq = query_req(42, &q, w.scene_id, 31, w.wire, 7, 0);
        error_case(&w, fd, &rq, 1, "scene_id", -1, "a scene id of 31 bytes");
        Tandem__V1__SceneDelete sd = TANDEM__V1__SCENE_DELETE__INIT;
        sd.scene_id.data = bogus;
        sd.scene_id.len = 32;
        Tandem__V1__Request rd = TANDEM__V1__REQUEST__INIT;
        rd.id = 43;
        rd.body_case = TANDEM__V1__REQUEST__BODY_SCENE_DELETE;
        rd.scene_delete = &sd;
        error_case(&w, fd, &rd, 10, "scene_id", -1, "SceneDelete of an unknown scene");
        Tandem__V1__MeshDelete md = TANDEM__V1__MESH_DELETE__INIT;
        md.mesh_id.data = bogus;
        md.mesh_id.len = 32;
        rd.id = 44;
        rd.body_case = TANDEM__V1__REQUEST__BODY_MESH_DELETE;
        rd.mesh_delete = &md;
        error_case(&w, fd, &rd, 9 /* UNKNOWN_MESH */, "mesh_id", -1, "MeshDelete of an unknown mesh");
        md.mesh_id.data = env_id;
        rd.id = 45;
        error_case(&w, fd, &rd, 11 /* MESH_IN_USE */, "mesh_id", -1, "MeshDelete of a mesh a scene uses");
        uint8_t id33[33] = {0}; /* a readable 33rd byte (ASan: env_id holds 32) */
        memcpy(id33, env_id, 32);
        md.mesh_id.data = id33;
        md.mesh_id.len = 33;
        rd.id = 145;
        error_case(&w, fd, &rd, 1, "mesh_id", -1, "a mesh id of 33 bytes");

        /* ScenePut: unknown mesh (object 1), duplicate object id (the later one), no movable object */
        Tandem__V1__SceneObject so[3] = {TANDEM__V1__SCENE_OBJECT__INIT, TANDEM__V1__SCENE_OBJECT__INIT,
                                         TANDEM__V1__SCENE_OBJECT__INIT};
        Tandem__V1__SceneObject *sp[3] = {&so[0], &so[1], &so[2]};
        so[0].object_id = 3;
        so[0].mesh_id.data = env_id;
        so[0].mesh_id.len = 32;
        so[1].object_id = 4;
        so[1].mesh_id.data = bogus;
        so[1].mesh_id.len = 32;
        so[1].movable = 1;
        Tandem__V1__ScenePut scp = TANDEM__V1__SCENE_PUT__INIT;
        scp.name = "bad";
        scp.n_objects = 2;
        scp.objects = sp;
        Tandem__V1__Request rp = TANDEM__V1__REQUEST__INIT;
        rp.id = 46;
        rp.body_case = TANDEM__V1__REQUEST__BODY_SCENE_PUT;
        rp.scene_put = &scp;
        error_case(&w, fd, &rp, 9, "objects", 1, "ScenePut naming an unknown mesh (object 1)");
        so[1].mesh_id.data = robot_id;
        so[2] = so[1];
        so[2].object_id = 3;
        scp.n_objects = 3;
        rp.id = 47;
        error_case(&w, fd, &rp, 6 /* BAD_INDEX */, "objects", 2, "ScenePut with object id 3 twice");
        so[1].movable = 0;
        scp.n_objects = 2;
        rp.id = 48;
        error_case(&w, fd, &rp, 8 /* EMPTY */, "objects", -1, "ScenePut without a movable object");
        so[1].movable = 1;
        Tandem__V1__ObjectPair ap[2] = {TANDEM__V1__OBJECT_PAIR__INIT, TANDEM__V1__OBJECT_PAIR__INIT};
        Tandem__V1__ObjectPair *app[2] = {&ap[0], &ap[1]};
        ap[0].a = 4;
        ap[0].b = 3;
        ap[1].a = 3;
        ap[1].b = 99;
        scp.n_allowed = 2;
        scp.allowed = app;
        rp.id = 148;
        error_case(&w, fd, &rp, 6, "allowed", 1, "an allowed pair naming object 99, which is not in the scene");
        scp.n_allowed = 0;
        Tandem__V1__Pose bad_pose = TANDEM__V1__POSE__INIT;
        bad_pose.qw = NAN;
        so[0].pose = &bad_pose;
        rp.id = 49;
        error_case(&w, fd, &rp, 5, "objects", 0, "ScenePut with a NaN fixed pose");
        bad_pose.qw = 0.9;
        rp.id = 50;
        error_case(&w, fd, &rp, 7, "objects", 0, "ScenePut with a fixed pose of norm 0.9");
    }

    /* ---- over the limits ---- */
    {
        double p[65 * 7];
        for (int i = 0; i < 65; i++) memcpy(p + 7 * i, w.wire + 7 * (i % NW), 7 * sizeof(double));
        Tandem__V1__Query q;
        Tandem__V1__Request rq = query_req(51, &q, w.scene_id, 32, p, 65 * 7, 0);
        error_case(&w, fd, &rq, 4 /* LIMIT */, "poses", -1, "65 queries, max_queries 64");
        rq = query_req(52, &q, w.scene_id, 32, p, 64 * 7, 0);
        Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
        cr_assert(rep->body_case == TANDEM__V1__REPLY__BODY_QUERY && rep->query->n_results == 64,
                  "64 queries (max_queries) should be answered: body %d", (int)rep->body_case);
        for (int i = 0; i < 64; i++)
            CHECK(rep->query->results[i]->colliding == (w.pairs[i % NW] > 0), "64 queries: query %d", i);
        tandem__v1__reply__free_unpacked(rep, NULL);
        accepted += 64;
        /* want_pairs: 2 queries x the server's 1 000 000 contacts is over max_reply_pairs */
        rq = query_req(53, &q, w.scene_id, 32, p, 2 * 7, 1);
        q.want_pairs = 1;
        error_case(&w, fd, &rq, 4, "want_pairs", -1, "want_pairs with 2 queries and max_contacts 0");

        float v[4 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
        uint32_t t[151 * 3];
        for (int i = 0; i < 151 * 3; i++) t[i] = (uint32_t)(i % 4);
        Tandem__V1__MeshPut m;
        rq = mesh_req(54, &m, v, 12, t, 151 * 3);
        error_case(&w, fd, &rq, 4, "triangles", -1, "151 triangles, max_triangles 150");

        Tandem__V1__SceneObject so[5];
        Tandem__V1__SceneObject *sp[5];
        for (int i = 0; i < 5; i++) {
            Tandem__V1__SceneObject z = TANDEM__V1__SCENE_OBJECT__INIT;
            so[i] = z;
            so[i].object_id = (uint32_t)i;
            so[i].mesh_id.data = robot_id;
            so[i].mesh_id.len = 32;
            so[i].movable = 1;
            sp[i] = &so[i];
        }
        Tandem__V1__ScenePut scp = TANDEM__V1__SCENE_PUT__INIT;
        scp.n_objects = 5;
        scp.objects = sp;
        Tandem__V1__Request rp = TANDEM__V1__REQUEST__INIT;
        rp.id = 55;
        rp.body_case = TANDEM__V1__REQUEST__BODY_SCENE_PUT;
        rp.scene_put = &scp;
        error_case(&w, fd, &rp, 4, "objects", -1, "5 objects, max_objects 4");
    }

    /* ---- the same refusals through libtandem: the server's code, field and index, and
     * the connection stays usable ---- */
    {
        tdm_client *c = lib_connect(D.unix_addr);
        double p[3 * 7];
        memcpy(p, w.wire, sizeof p);
        p[14 + 1] = NAN;
        tdm_query_result res[NW];
        cr_assert_eq(tdm_query(c, w.scene_id, TDM_QUERY_BOOL, p, 1, 3, 0, res, NULL), TDM_CLIENT_ESERVER);
        const tdm_server_error *e = tdm_client_server_error(c);
        cr_assert(e && e->code == TDM_SERVER_NON_FINITE && !strcmp(e->field, "poses") && e->index == 2,
                  "libtandem: NaN in query 2: code %d field '%s' index %lld", e ? e->code : -1, e ? e->field : "",
                  e ? (long long)e->index : -2);
        cr_assert_eq(tdm_client_err(c), 0, "a server Error must not close the connection");
        cr_assert_eq(tdm_query(c, bogus, TDM_QUERY_BOOL, w.wire, 1, 1, 0, res, NULL), TDM_CLIENT_ESERVER);
        e = tdm_client_server_error(c);
        cr_assert(e && e->code == TDM_SERVER_UNKNOWN_SCENE && !strcmp(e->field, "scene_id"));
        float v[4 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
        uint32_t t[6] = {0, 1, 2, 0, 1, 4};
        uint8_t mid[32];
        cr_assert_eq(tdm_mesh_put(c, "bad", v, 4, t, 2, mid, NULL), TDM_CLIENT_ESERVER);
        e = tdm_client_server_error(c);
        cr_assert(e && e->code == TDM_SERVER_BAD_INDEX && !strcmp(e->field, "triangles") && e->index == 1,
                  "libtandem: bad index: code %d field '%s' index %lld", e ? e->code : -1, e ? e->field : "",
                  e ? (long long)e->index : -2);
        tdm_scene_object objs[2] = {{.object_id = 0}, {.object_id = 1, .movable = 1}};
        memcpy(objs[0].mesh_id, env_id, 32);
        memcpy(objs[1].mesh_id, bogus, 32);
        uint8_t sid[32];
        cr_assert_eq(tdm_scene_put(c, "bad", objs, 2, NULL, 0, sid, NULL, NULL, 0, NULL), TDM_CLIENT_ESERVER);
        e = tdm_client_server_error(c);
        cr_assert(e && e->code == TDM_SERVER_UNKNOWN_MESH && !strcmp(e->field, "objects") && e->index == 1);
        /* over the server's limits: refused before sending, the connection kept */
        tdm_mesh *big = gen_torus(1.5, 0.5, 32, 16);
        int rc = tdm_mesh_put(c, "big", big->verts, big->n_verts, big->tris, big->n_tris, mid, NULL);
        cr_assert_eq(rc, TDM_CLIENT_ELIMIT, "a mesh over max_triangles / max_frame_bytes: %d (%s)", rc,
                     tdm_client_errstr(c));
        tdm_mesh_free(big);
        cr_assert_eq(tdm_client_err(c), 0);
        cr_assert_eq(tdm_query(c, w.scene_id, TDM_QUERY_CONTACTS, w.wire, 1, NW, 0, res, NULL), 0, "%s",
                     tdm_client_errstr(c));
        for (int i = 0; i < NW; i++) cr_assert_eq(res[i].contacts, w.pairs[i], "libtandem after errors, pose %d", i);
        accepted += NW;
        tdm_client_free(c);
        witness_ok(&w, "libtandem's refused requests");
    }

    /* ---- bad meshes ---- */
    {
        float v[5 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1};
        uint32_t t[3 * 3] = {0, 1, 2, 1, 2, 3, 0, 3, 5};
        Tandem__V1__MeshPut m;
        Tandem__V1__Request rq = mesh_req(61, &m, v, 15, t, 9);
        error_case(&w, fd, &rq, 6 /* BAD_INDEX */, "triangles", 2, "triangle 2 refers to vertex 5 of 5");
        t[8] = 4;
        t[4] = 0xFFFFFFFFu;
        rq = mesh_req(62, &m, v, 15, t, 9);
        error_case(&w, fd, &rq, 6, "triangles", 1, "triangle 1 refers to vertex 2^32-1");
        t[4] = 2;
        v[3 * 3 + 1] = NAN;
        rq = mesh_req(63, &m, v, 15, t, 9);
        error_case(&w, fd, &rq, 5 /* NON_FINITE */, "vertices", 3, "vertex 3 has a NaN");
        v[3 * 3 + 1] = 0;
        v[4 * 3 + 2] = -INFINITY;
        rq = mesh_req(64, &m, v, 15, t, 9);
        error_case(&w, fd, &rq, 5, "vertices", 4, "vertex 4 has -Inf");
        v[4 * 3 + 2] = 1;
        rq = mesh_req(65, &m, v, 15, t, 0);
        error_case(&w, fd, &rq, 8 /* EMPTY */, "triangles", -1, "a mesh without triangles");
        rq = mesh_req(66, &m, v, 14, t, 9);
        error_case(&w, fd, &rq, 1, "vertices", -1, "14 vertex numbers");
        rq = mesh_req(67, &m, v, 15, t, 8);
        error_case(&w, fd, &rq, 1, "triangles", -1, "8 triangle indices");
    }

    /* nothing of that changed the server: still 2 meshes, 1 scene, and only accepted
     * queries were computed */
    {
        tdm_stats st;
        cr_assert_eq(tdm_stats_get(w.c, &st), 0, "%s", tdm_client_errstr(w.c));
        cr_assert_eq(st.meshes, 2, "stats: %u meshes after the bad requests", st.meshes);
        cr_assert_eq(st.scenes, 1, "stats: %u scenes after the bad requests", st.scenes);
        cr_assert_eq(st.queries, w.queries + accepted, "stats: %llu queries computed, %zu were accepted",
                     (unsigned long long)st.queries, w.queries + accepted);
    }
    /* the abused connection itself still works */
    {
        Tandem__V1__Query q;
        Tandem__V1__Request rq = query_req(90, &q, w.scene_id, 32, w.wire, 7 * NW, 1);
        Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
        cr_assert(rep->body_case == TANDEM__V1__REPLY__BODY_QUERY && rep->query->n_results == NW);
        for (int i = 0; i < NW; i++)
            cr_assert_eq(rep->query->results[i]->contacts, w.pairs[i], "the abused connection, pose %d", i);
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    close(fd);
    witness_ok(&w, "everything");
    tdm_client_free(w.c);
    tdm_bvh_free(be);
    tdm_bvh_free(bb);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
}

/* ==== 5. a client that does not read its replies ============================================ */

enum { SLOW_REQUESTS = 300, SLOW_K = 12 };

typedef struct slow_sender {
    int fd;
    const double *wire; /* poses: request j takes k of them from wire + 7 * (j % step) */
    const uint8_t *scene_id;
    int requests, k, step; /* 0: SLOW_REQUESTS, SLOW_K, 4 */
    int sent, err;
} slow_sender;

/* Sends the pipelined Query requests (ids 1000, 1001, ...) without reading; stops at
 * the first failed send (the server closed: some tests expect that). */
static void *slow_send(void *arg)
{
    slow_sender *s = arg;
    int requests = s->requests ? s->requests : SLOW_REQUESTS, k = s->k ? s->k : SLOW_K, step = s->step ? s->step : 4;
    for (int j = 0; j < requests; j++) {
        Tandem__V1__Query q = TANDEM__V1__QUERY__INIT;
        q.scene_id.data = (uint8_t *)s->scene_id;
        q.scene_id.len = 32;
        q.mode = TANDEM__V1__MODE__MODE_CONTACTS;
        q.n_poses = 7 * (size_t)k;
        q.poses = (double *)s->wire + 7 * (j % step);
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 1000 + (uint64_t)j;
        rq.body_case = TANDEM__V1__REQUEST__BODY_QUERY;
        rq.query = &q;
        if (raw_send(s->fd, &rq) != 0) {
            s->err = errno;
            return NULL;
        }
        s->sent++;
    }
    return NULL;
}

Test(daemon, slow_reader_is_paused_not_dropped)
{
    gen_rng r = {seed ^ 0x510e};
    tdm_mesh *env = gen_torus(1.5, 0.5, 16, 8), *robot = gen_sphere(0.6, 10);
    tdm_bvh *be = bvh_of(env), *bb = bvh_of(robot);
    const char *flags[] = {"--max-output-bytes", "4096", NULL};
    dmn_start(&D, flags);
    witness w = {0};
    uint8_t env_id[32], robot_id[32];
    witness_scene(&w, D.unix_addr, env, robot, env_id, robot_id);
    double wire[(SLOW_K + 4) * 7];
    uint32_t pairs[SLOW_K + 4];
    for (int i = 0; i < SLOW_K + 4; i++) {
        gen_pose g = wire_stable_pose(&r, tdm_d3(0, 0, 0), 2.3);
        wire_pose(&g, wire + 7 * i);
        tdm_xform x = wire_xform(wire + 7 * i);
        pairs[i] = engine_pairs(be, bb, &x);
    }
    memcpy(w.wire, wire, sizeof w.wire);
    memcpy(w.pairs, pairs, sizeof w.pairs);

    /* 300 pipelined queries whose replies (about 60 KB) are far over the 4 KB bound */
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    slow_sender s = {.fd = fd, .wire = wire, .scene_id = w.scene_id};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, slow_send, &s), 0);
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    witness_ok(&w, "a client stopped reading"); /* others are served meanwhile */

    int seen[SLOW_REQUESTS] = {0};
    char err[256];
    for (int got = 0; got < SLOW_REQUESTS; got++) {
        Tandem__V1__Reply *rep = NULL;
        int rc = raw_recv(fd, 20000, &rep, err, sizeof err);
        cr_assert_eq(rc, RAW_REPLY, "slow reader: %d of %d replies, then %s", got, SLOW_REQUESTS,
                     rc == RAW_EOF ? "a close" : err);
        cr_assert(rep->id >= 1000 && rep->id < 1000 + SLOW_REQUESTS && !seen[rep->id - 1000],
                  "slow reader: reply id %llu unexpected or repeated", (unsigned long long)rep->id);
        int j = (int)(rep->id - 1000);
        seen[j] = 1;
        cr_assert(rep->body_case == TANDEM__V1__REPLY__BODY_QUERY && rep->query->n_results == SLOW_K,
                  "slow reader: request %d answered with body %d", j, (int)rep->body_case);
        for (int i = 0; i < SLOW_K; i++)
            CHECK(rep->query->results[i]->contacts == pairs[j % 4 + i], "slow reader: request %d pose %d: %u contacts, "
                  "expected %u", j, i, rep->query->results[i]->contacts, pairs[j % 4 + i]);
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    pthread_join(th, NULL);
    cr_assert_eq(s.err, 0, "slow reader: sending failed: %s", strerror(s.err));
    cr_assert_eq(s.sent, SLOW_REQUESTS);
    Tandem__V1__Reply *extra = NULL;
    cr_assert_eq(raw_recv(fd, 150, &extra, err, sizeof err), RAW_TIMEOUT, "slow reader: a reply too many");
    close(fd);
    witness_ok(&w, "the slow reader caught up");
    tdm_client_free(w.c);
    tdm_bvh_free(be);
    tdm_bvh_free(bb);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
}

/* ==== 6. auth token and max_connections ===================================================== */

static int is_busy(const Tandem__V1__Reply *rep)
{
    return rep->id == 0 && rep->body_case == TANDEM__V1__REPLY__BODY_ERROR &&
           rep->error->code == TANDEM__V1__ERROR_CODE__ERROR_BUSY;
}

/* Connects and says Hello with a token; returns the reply (asserted to come). While the
 * server has not yet seen earlier connections close (dmn_start's probes included), it
 * may refuse with BUSY: then this retries, for up to 10 s. */
static Tandem__V1__Reply *hello_with(int *fd, const char *addr, const char *token)
{
    for (int attempt = 0;; attempt++) {
        *fd = raw_connect(addr);
        cr_assert(*fd >= 0, "connect %s", addr);
        Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
        h.protocol_version = 1;
        h.auth_token = (char *)token;
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 5;
        rq.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
        rq.hello = &h;
        cr_assert_eq(raw_send(*fd, &rq), 0);
        Tandem__V1__Reply *rep = NULL;
        char err[256];
        int rc = raw_recv(*fd, 5000, &rep, err, sizeof err);
        cr_assert_eq(rc, RAW_REPLY, "Hello with token '%s': %s", token, rc == RAW_EOF ? "closed" : err);
        if (!is_busy(rep) || attempt >= 500) return rep;
        tandem__v1__reply__free_unpacked(rep, NULL);
        close(*fd);
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

Test(daemon, auth_token_and_max_connections)
{
    const char *token_file = in_root("token");
    FILE *f = fopen(token_file, "w");
    cr_assert_not_null(f);
    fputs("s3cret-t0ken-long-enough-128\n", f);
    cr_assert_eq(fclose(f), 0);
    const char *flags[] = {"--auth-token-file", token_file, "--max-connections", "3", NULL};
    dmn_start(&D, flags);

    /* a wrong or missing token: UNAUTHENTICATED, then the close */
    const char *wrong[] = {"wrong", "", "s3cret-t0ken-long-enough-128\n", "s3cret-t0ken-long-enough-12"};
    for (int i = 0; i < 4; i++) {
        int fd;
        Tandem__V1__Reply *rep = hello_with(&fd, i % 2 ? D.unix_addr : D.tcp_addr, wrong[i]);
        char what[64];
        snprintf(what, sizeof what, "Hello with token '%s'", wrong[i]);
        expect_error(rep, what, 5, 3 /* UNAUTHENTICATED */, "auth_token", -1);
        tandem__v1__reply__free_unpacked(rep, NULL);
        cr_assert_eq(raw_wait_eof(fd, 5000), RAW_EOF, "%s: the connection should be closed", what);
        close(fd);
    }
    tdm_connect_opts o = {.addr = D.tcp_addr, .timeout_ms = 5000, .auth_token = "nope"};
    tdm_client *bad = tdm_client_connect_with(&o);
    cr_assert(bad && tdm_client_err(bad) != 0, "libtandem with a wrong token should fail to connect");
    tdm_client_free(bad);

    /* the right token; three connections at most (closed ones must stop counting: retry
     * while the server has not yet seen the previous closes) */
    int fds[3];
    for (int i = 0; i < 3; i++) {
        Tandem__V1__Reply *rep = hello_with(&fds[i], i % 2 ? D.unix_addr : D.tcp_addr, "s3cret-t0ken-long-enough-128");
        cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_HELLO, "connection %d: Hello with the right token: "
                     "body %d", i, (int)rep->body_case);
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    int extra = raw_connect(D.tcp_addr);
    cr_assert(extra >= 0);
    Tandem__V1__Reply *rep = NULL;
    char err[256];
    cr_assert_eq(raw_recv(extra, 5000, &rep, err, sizeof err), RAW_REPLY, "a 4th connection: %s", err);
    expect_error(rep, "a 4th connection (max_connections 3)", 0, 14 /* BUSY */, "connections", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    cr_assert_eq(raw_wait_eof(extra, 5000), RAW_EOF, "the 4th connection should be closed");
    close(extra);
    /* the three are still served */
    for (int i = 0; i < 3; i++) {
        Tandem__V1__StatsRequest sr = TANDEM__V1__STATS_REQUEST__INIT;
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 40 + (uint64_t)i;
        rq.body_case = TANDEM__V1__REQUEST__BODY_STATS;
        rq.stats = &sr;
        rep = raw_call_or_fail(fds[i], &rq);
        cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_STATS, "connection %d after the refusal", i);
        cr_assert_eq(rep->stats->connections, 3, "stats: %u connections", rep->stats->connections);
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    /* one closes: a new one gets in (once the server has seen the close) */
    close(fds[0]);
    o.auth_token = "s3cret-t0ken-long-enough-128";
    tdm_client *c = NULL;
    for (int attempt = 0; attempt < 500; attempt++) { /* 10 s at most */
        c = tdm_client_connect_with(&o);
        if (c && !tdm_client_err(c)) break;
        tdm_client_free(c);
        c = NULL;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_not_null(c, "no connection was let in after one of three closed");
    tdm_stats st;
    cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(st.connections, 3, "stats: %u connections", st.connections);
    tdm_client_free(c);
    close(fds[1]);
    close(fds[2]);
}

/* ==== 7. meshes deleted under queries in flight; the engine flags ======================== */

enum { DEL_POOL = 512, DEL_CLIENTS = 4, DEL_WINDOW = 4, DEL_BATCH = 2048, DEL_MAX_REQ = 200, BY_POOL = 64 };

typedef struct del_shared {
    double wire[DEL_POOL * 7];
    uint32_t pairs[DEL_POOL]; /* CPU engine, uncapped */
    uint8_t scene_id[32];
    double by_wire[BY_POOL * 7];
    uint32_t by_pairs[BY_POOL];
    uint8_t by_scene_id[32];
    pthread_barrier_t start;
    pthread_mutex_t lock;
    int replies; /* Query replies the doomed scene's clients got (lock) */
    int stop;    /* the bystander may stop (lock) */
} del_shared;

typedef struct del_req {
    uint64_t id;
    uint32_t first; /* query j is pool pose (first + j) % DEL_POOL */
    int mode;
    int done, ok;   /* ok: answered; else refused with UNKNOWN_SCENE */
    double t;       /* when the reply came (CLOCK_MONOTONIC) */
    tdm_query_result *res;
} del_req;

typedef struct del_worker {
    del_shared *sh;
    int idx;
    const char *addr;
    uint64_t seed;
    del_req req[DEL_MAX_REQ];
    int n_req;
    size_t poses, refused, rounds;
    char err[512];
    pthread_t thread;
} del_worker;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int del_check(del_worker *w, const del_req *q)
{
    for (uint32_t j = 0; j < DEL_BATCH; j++) {
        uint32_t p = w->sh->pairs[(q->first + j) % DEL_POOL];
        const tdm_query_result *r = &q->res[j];
        uint32_t want = q->mode ? p : (p > 0);
        if (r->colliding != (p > 0) || r->contacts != want || r->truncated ||
            (p > 0 && (r->object_a != 0 || r->object_b != 1))) {
            snprintf(w->err, sizeof w->err,
                     "client %d request %d query %u (pool %u, %s): colliding=%u contacts=%u truncated=%u pair (%u, "
                     "%u); the CPU engine finds %u pairs",
                     w->idx, (int)(q - w->req), j, (q->first + j) % DEL_POOL, q->mode ? "contacts" : "bool",
                     r->colliding, r->contacts, r->truncated, r->object_a, r->object_b, p);
            return -1;
        }
    }
    return 0;
}

/* Keeps DEL_WINDOW large batches in flight on the doomed scene until the server says it
 * is gone, then collects what is still in flight. */
static void *del_worker_main(void *arg)
{
    del_worker *w = arg;
    del_shared *sh = w->sh;
    tdm_connect_opts o = {.addr = w->addr, .timeout_ms = 10000, .io_timeout_ms = 60000, .client_name = "doomed"};
    tdm_client *c = tdm_client_connect_with(&o);
    if (!c || tdm_client_err(c))
        snprintf(w->err, sizeof w->err, "client %d: connecting to %s: %s", w->idx, w->addr,
                 c ? tdm_client_errstr(c) : "out of memory");
    double *wire = malloc(sizeof *wire * 7 * DEL_BATCH);
    pthread_barrier_wait(&sh->start);
    gen_rng r = {w->seed};
    int outstanding = 0, stop_sending = 0;
    while (!w->err[0] && wire) {
        while (!stop_sending && outstanding < DEL_WINDOW && w->n_req < DEL_MAX_REQ) {
            del_req *q = &w->req[w->n_req];
            q->first = (uint32_t)gen_int(&r, 0, DEL_POOL - 1);
            q->mode = (int)gen_int(&r, 0, 1);
            q->res = malloc(sizeof *q->res * DEL_BATCH);
            if (!q->res) {
                snprintf(w->err, sizeof w->err, "out of memory");
                break;
            }
            for (uint32_t j = 0; j < DEL_BATCH; j++)
                memcpy(wire + 7 * j, sh->wire + 7 * ((q->first + j) % DEL_POOL), 7 * sizeof *wire);
            if (tdm_query_send(c, sh->scene_id, q->mode ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, wire, 1, DEL_BATCH, 0,
                               q->res, NULL, &q->id) != 0) {
                snprintf(w->err, sizeof w->err, "client %d: tdm_query_send %d: %s", w->idx, w->n_req,
                         tdm_client_errstr(c));
                free(q->res);
                q->res = NULL;
                break;
            }
            w->n_req++;
            outstanding++;
        }
        if (w->err[0] || outstanding == 0) break;
        uint64_t id = 0;
        int status = 0;
        if (tdm_query_wait(c, &id, &status) != 0) {
            snprintf(w->err, sizeof w->err, "client %d: tdm_query_wait: %s", w->idx, tdm_client_errstr(c));
            break;
        }
        outstanding--;
        del_req *q = NULL;
        for (int j = 0; j < w->n_req; j++)
            if (w->req[j].id == id && !w->req[j].done) q = &w->req[j];
        if (!q) {
            snprintf(w->err, sizeof w->err, "client %d: tdm_query_wait handed back id %llu, not in flight", w->idx,
                     (unsigned long long)id);
            break;
        }
        q->done = 1;
        q->t = mono_s();
        const tdm_server_error *e = status == TDM_CLIENT_ESERVER ? tdm_client_server_error(c) : NULL;
        if (status == 0) {
            if (del_check(w, q) != 0) break;
            q->ok = 1;
            w->poses += DEL_BATCH;
            pthread_mutex_lock(&sh->lock);
            sh->replies++;
            pthread_mutex_unlock(&sh->lock);
        } else if (e && e->code == TDM_SERVER_UNKNOWN_SCENE && !strcmp(e->field, "scene_id")) {
            w->refused++;
            stop_sending = 1; /* the scene is gone, and stays gone */
        } else {
            snprintf(w->err, sizeof w->err, "client %d request %d: %s (server code %d)", w->idx, (int)(q - w->req),
                     tdm_client_errstr(c), e ? e->code : 0);
            break;
        }
        free(q->res);
        q->res = NULL;
    }
    if (!w->err[0] && !stop_sending)
        snprintf(w->err, sizeof w->err, "client %d: %d requests answered and the scene never went away", w->idx,
                 w->n_req);
    for (int j = 0; j < w->n_req; j++) free(w->req[j].res);
    free(wire);
    tdm_client_free(c);
    return NULL;
}

/* Another scene, other meshes, small batches all along: nothing may change for it. */
static void *del_bystander_main(void *arg)
{
    del_worker *w = arg;
    del_shared *sh = w->sh;
    tdm_connect_opts o = {.addr = w->addr, .timeout_ms = 10000, .io_timeout_ms = 60000, .client_name = "bystander"};
    tdm_client *c = tdm_client_connect_with(&o);
    if (!c || tdm_client_err(c))
        snprintf(w->err, sizeof w->err, "bystander: connecting to %s: %s", w->addr,
                 c ? tdm_client_errstr(c) : "out of memory");
    pthread_barrier_wait(&sh->start);
    tdm_query_result res[16];
    for (int stop = 0; !w->err[0] && !stop; w->rounds++) {
        uint32_t first = (uint32_t)(w->rounds * 16 % BY_POOL);
        int mode = (int)(w->rounds & 1);
        if (tdm_query(c, sh->by_scene_id, mode ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, sh->by_wire + 7 * first, 1, 16,
                      0, res, NULL) != 0) {
            snprintf(w->err, sizeof w->err, "bystander round %zu: %s", w->rounds, tdm_client_errstr(c));
            break;
        }
        for (uint32_t j = 0; j < 16 && !w->err[0]; j++) {
            uint32_t p = sh->by_pairs[first + j];
            if (res[j].colliding != (p > 0) || res[j].contacts != (mode ? p : (p > 0)) || res[j].truncated)
                snprintf(w->err, sizeof w->err, "bystander round %zu query %u: colliding=%u contacts=%u; the CPU "
                         "engine finds %u pairs", w->rounds, j, res[j].colliding, res[j].contacts, p);
        }
        w->poses += 16;
        pthread_mutex_lock(&sh->lock);
        stop = sh->stop;
        pthread_mutex_unlock(&sh->lock);
    }
    tdm_client_free(c);
    return NULL;
}

static void put_pair_scene(tdm_client *c, const char *name, const tdm_mesh *env, const tdm_mesh *robot,
                           uint8_t env_id[32], uint8_t robot_id[32], uint8_t scene_id[32])
{
    char label[64];
    snprintf(label, sizeof label, "%s-env", name);
    lib_put_mesh(c, label, env, env_id, 1);
    snprintf(label, sizeof label, "%s-robot", name);
    lib_put_mesh(c, label, robot, robot_id, 1);
    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, env_id, 32);
    memcpy(objs[1].mesh_id, robot_id, 32);
    cr_assert_eq(tdm_scene_put(c, name, objs, 2, NULL, 0, scene_id, NULL, NULL, 0, NULL), 0, "%s",
                 tdm_client_errstr(c));
}

static void pose_pool(gen_rng *r, const tdm_mesh *env, const tdm_mesh *robot, double radius, double *wire,
                      uint32_t *pairs, int n)
{
    tdm_bvh *be = bvh_of(env), *bb = bvh_of(robot);
    int colliding = 0;
    for (int i = 0; i < n; i++) {
        gen_pose g = wire_stable_pose(r, tdm_d3(0, 0, 0), radius);
        wire_pose(&g, wire + 7 * i);
        tdm_xform x = wire_xform(wire + 7 * i);
        pairs[i] = engine_pairs(be, bb, &x);
        colliding += pairs[i] > 0;
    }
    cr_assert(colliding > n / 10 && colliding < 9 * n / 10, "%d of %d poses collide", colliding, n);
    tdm_bvh_free(be);
    tdm_bvh_free(bb);
}

Test(daemon, mesh_deleted_while_queries_in_flight)
{
    gen_rng r = {seed ^ 0xde1e7e};
    tdm_mesh *env = gen_torus(1.5, 0.5, 48, 24), *robot = gen_sphere(0.6, 24);
    tdm_mesh *by_env = gen_box(1, 0.7, 0.5), *by_robot = gen_sphere(0.5, 10);
    cr_assert(env && robot && by_env && by_robot);
    del_shared *sh = calloc(1, sizeof *sh);
    pose_pool(&r, env, robot, 2.3, sh->wire, sh->pairs, DEL_POOL);
    pose_pool(&r, by_env, by_robot, 2.0, sh->by_wire, sh->by_pairs, BY_POOL);

    /* auto: the GPU engine where there is one (no calibration, to start at once); runs
     * of a few requests, so that several runs are queued when the deletes come */
    const char *flags[] = {"--engine", "auto", "--engine-calibrate", "0", "--max-batch-tasks", "8192", NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    int engine = tdm_client_server_info(c)->engine;
    uint8_t env_id[32], robot_id[32], by_env_id[32], by_robot_id[32];
    put_pair_scene(c, "doomed", env, robot, env_id, robot_id, sh->scene_id);
    put_pair_scene(c, "bystander", by_env, by_robot, by_env_id, by_robot_id, sh->by_scene_id);
    tdm_stats st;
    cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(st.engine, engine, "HelloReply says engine %d, StatsReply %d", engine, st.engine);
    cr_log_info("engine %s: %s", tdm_engine_name(engine), st.engine_detail);
    if (engine == TDM_ENGINE_CPU)
        cr_assert(st.device_meshes == 0 && st.gpu_queries == 0 && st.gpu_tasks == 0 && st.device_bytes == 0,
                  "a CPU engine holds %u meshes, %llu bytes on a device", st.device_meshes,
                  (unsigned long long)st.device_bytes);
    else
        cr_assert_eq(st.device_meshes, 4, "%u meshes resident on the device after 4 MeshPuts", st.device_meshes);

    cr_assert_eq(pthread_barrier_init(&sh->start, NULL, DEL_CLIENTS + 2), 0);
    cr_assert_eq(pthread_mutex_init(&sh->lock, NULL), 0);
    del_worker *w = calloc(DEL_CLIENTS + 1, sizeof *w);
    for (int i = 0; i <= DEL_CLIENTS; i++) {
        w[i].sh = sh;
        w[i].idx = i;
        w[i].addr = i % 2 ? D.unix_addr : D.tcp_addr;
        w[i].seed = seed + 7919ull * (uint64_t)(i + 1);
        cr_assert_eq(pthread_create(&w[i].thread, NULL, i < DEL_CLIENTS ? del_worker_main : del_bystander_main, &w[i]),
                     0);
    }
    del_worker *by = &w[DEL_CLIENTS];
    pthread_barrier_wait(&sh->start);

    /* once every pipeline is full and running: the scene, then its meshes, go */
    double t0 = mono_s();
    for (;;) {
        pthread_mutex_lock(&sh->lock);
        int n = sh->replies;
        pthread_mutex_unlock(&sh->lock);
        if (n >= 2 * DEL_CLIENTS) break;
        cr_assert(mono_s() - t0 < 60, "only %d batches answered in 60 s", n);
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(tdm_scene_delete(c, sh->scene_id), 0, "SceneDelete: %s", tdm_client_errstr(c));
    cr_assert_eq(tdm_mesh_delete(c, env_id), 0, "MeshDelete env: %s", tdm_client_errstr(c));
    cr_assert_eq(tdm_mesh_delete(c, robot_id), 0, "MeshDelete robot: %s", tdm_client_errstr(c));
    double t_deleted = mono_s();

    size_t answered = 0, refused = 0, late = 0;
    for (int i = 0; i < DEL_CLIENTS; i++) {
        pthread_join(w[i].thread, NULL);
        cr_assert(!w[i].err[0], "%s", w[i].err);
        /* one connection's requests are taken in order: once one is refused, every later one is */
        int first_refused = -1;
        for (int j = 0; j < w[i].n_req; j++) {
            const del_req *q = &w[i].req[j];
            cr_assert(q->done, "client %d request %d was never answered", i, j);
            if (!q->ok && first_refused < 0) first_refused = j;
            cr_assert(q->ok || first_refused >= 0);
            cr_assert(!(q->ok && first_refused >= 0), "client %d: request %d was answered after request %d was "
                      "refused (UNKNOWN_SCENE)", i, j, first_refused);
            if (q->ok && q->t > t_deleted) late++;
        }
        answered += w[i].poses;
        refused += w[i].refused;
    }
    cr_log_info("%zu poses answered, %zu requests refused after the delete, %zu batches answered after both meshes "
                "were deleted", answered, refused, late);
    /* on the CPU engine runs are slow enough that batches accepted before the delete are
     * still running when it is acknowledged; a GPU may have finished them already */
    if (engine == TDM_ENGINE_CPU)
        cr_assert(late > 0, "no batch was still in flight when the meshes were deleted: the test proves nothing");

    /* gone for good: the documented errors */
    tdm_query_result one;
    cr_assert_eq(tdm_query(c, sh->scene_id, TDM_QUERY_BOOL, sh->wire, 1, 1, 0, &one, NULL), TDM_CLIENT_ESERVER);
    const tdm_server_error *e = tdm_client_server_error(c);
    cr_assert(e && e->code == TDM_SERVER_UNKNOWN_SCENE && !strcmp(e->field, "scene_id"),
              "a query on the deleted scene: code %d field '%s'", e ? e->code : -1, e ? e->field : "");
    cr_assert_eq(tdm_mesh_delete(c, env_id), TDM_CLIENT_ESERVER);
    e = tdm_client_server_error(c);
    cr_assert(e && e->code == TDM_SERVER_UNKNOWN_MESH, "deleting the deleted mesh again: code %d", e ? e->code : -1);
    tdm_mesh_info *ml;
    size_t nm;
    cr_assert_eq(tdm_mesh_list(c, &ml, &nm), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(nm, 2, "%zu meshes listed, only the bystander's 2 are left", nm);
    for (size_t i = 0; i < nm; i++)
        cr_assert(!memcmp(ml[i].mesh_id, by_env_id, 32) || !memcmp(ml[i].mesh_id, by_robot_id, 32),
                  "mesh '%s' is still listed", ml[i].name);
    tdm_mesh_list_free(ml);
    cr_assert_eq(check_files("meshes", ".mesh"), 2, "mesh files left in the data directory");
    cr_assert_eq(check_files("scenes", ".scene"), 1, "scene files left in the data directory");

    /* the bystander was served all along, correctly */
    pthread_mutex_lock(&sh->lock);
    sh->stop = 1;
    pthread_mutex_unlock(&sh->lock);
    pthread_join(by->thread, NULL);
    cr_assert(!by->err[0], "%s", by->err);
    cr_assert(by->rounds > 0);
    cr_assert(dmn_running(&D), "tandemd is gone");
    cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(st.queries, answered + by->poses, "stats: %llu queries answered, the clients got %zu",
                 (unsigned long long)st.queries, answered + by->poses);
    cr_assert_eq(st.errors, refused + 2, "stats: %llu errors; %zu refused queries and 2 checks",
                 (unsigned long long)st.errors, refused);
    cr_assert_eq(st.cpu_queries + st.gpu_queries + st.hybrid_queries, st.queries,
                 "stats: %llu CPU + %llu GPU + %llu hybrid queries, %llu answered", (unsigned long long)st.cpu_queries,
                 (unsigned long long)st.gpu_queries, (unsigned long long)st.hybrid_queries,
                 (unsigned long long)st.queries);
    cr_log_info("stats: %llu CPU / %llu GPU / %llu hybrid queries, %llu GPU workpiles of %.1f pairs, %u meshes "
                "resident, %llu device bytes", (unsigned long long)st.cpu_queries, (unsigned long long)st.gpu_queries,
                (unsigned long long)st.hybrid_queries, (unsigned long long)st.gpu_iterations, st.mean_workpile_pairs,
                st.device_meshes, (unsigned long long)st.device_bytes);
    /* `tandem stats`: the old lines, then the engine's */
    const char *args[] = {"stats", "--server", D.tcp_addr, NULL};
    run_result rr = run_tandem(args);
    cr_assert_eq(rr.status, 0, "tandem stats exited %d: %s", rr.status, rr.err);
    static const char *const keys[] = {"server_version=", "engine=", "queries=", "cpu_queries=", "gpu_queries=",
                                       "gpu_seconds=", "engine_detail=", "hybrid_queries=", "cpu_tasks=",
                                       "gpu_tasks=", "hybrid_tasks=", "gpu_iterations=", "mean_workpile_pairs=",
                                       "device_bytes=", "device_meshes=", "dispatch_threshold="};
    const char *at = rr.out;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "\n%s", keys[i]);
        const char *hit = i == 0 ? (strncmp(at, keys[0], strlen(keys[0])) ? NULL : at) : strstr(at, want);
        cr_assert(hit, "tandem stats: no line %s... in order; it printed:\n%s", keys[i], rr.out);
        at = hit + 1;
    }
    char qline[64];
    snprintf(qline, sizeof qline, "\nqueries=%llu\n", (unsigned long long)st.queries);
    cr_assert(strstr(rr.out, qline), "tandem stats: %s", rr.out);
    run_free(&rr);

    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0, "tandemd did not shut down cleanly");

    pthread_barrier_destroy(&sh->start);
    pthread_mutex_destroy(&sh->lock);
    free(w);
    free(sh);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
    tdm_mesh_free(by_env);
    tdm_mesh_free(by_robot);
}

/* --engine gpu (or hybrid) where the build or the machine has no GPU: start-up fails,
 * saying why and what to do instead, before it listens or touches the data. */
Test(daemon, engine_gpu_without_gpu_fails_startup)
{
    static const char *const kinds[] = {"gpu", "hybrid"};
    for (int k = 0; k < 2; k++) {
        const char *flags[] = {"--engine", kinds[k], NULL};
        int st = 0;
        if (dmn_try_start(&D, flags, &st) == 0) {
            dmn_stop(&D, SIGTERM);
            cr_skip_test("--engine %s starts on this machine (it has a GPU): nothing to refuse", kinds[k]);
        }
        char *log = dmn_log(&D);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "--engine %s: exit status %d (wait status %d); log:\n%s",
                  kinds[k], WIFEXITED(st) ? WEXITSTATUS(st) : -1, st, log);
        char want[64];
        snprintf(want, sizeof want, "error engine %s: ", kinds[k]);
        cr_assert(strstr(log, want) && strstr(log, "--engine auto") && strstr(log, "tandemd failed to start"),
                  "--engine %s: the log should say why and suggest --engine auto:\n%s", kinds[k], log);
        free(log);
    }
    /* and auto on the same machine starts */
    const char *flags[] = {"--engine", "auto", "--engine-calibrate", "false", NULL};
    dmn_start(&D, flags);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* --cpu-latency-us: while tandemd runs it holds the value in the host's PM QoS file
 * ($TDM_CPU_LATENCY_FILE: a file of the test's in place of /dev/cpu_dma_latency), a 32-bit
 * integer in microseconds; a file it cannot open stops the start-up, naming the file; a value
 * that is not a number is refused. */
Test(daemon, cpu_latency_is_held_or_the_start_fails)
{
    char path[300];
    snprintf(path, sizeof path, "%s.latency", D.data_dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    setenv("TDM_CPU_LATENCY_FILE", path, 1);
    const char *flags[] = {"--cpu-latency-us", "7", NULL};
    dmn_start(&D, flags);
    f = fopen(path, "rb");
    cr_assert_not_null(f);
    int32_t v = -1;
    size_t got = fread(&v, 1, sizeof v + 1, f);
    fclose(f);
    cr_assert_eq(got, sizeof v, "the file holds %zu bytes, not one 32-bit value", got);
    cr_assert_eq(v, 7);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    unlink(path);

    setenv("TDM_CPU_LATENCY_FILE", "/nonexistent-tandem-dir/cpu_dma_latency", 1);
    int st = 0;
    cr_assert_neq(dmn_try_start(&D, flags, &st), 0, "tandemd started without its latency file");
    char *log = dmn_log(&D);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "exit status %d; log:\n%s", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
              log);
    cr_assert(strstr(log, "cpu-latency-us: /nonexistent-tandem-dir/cpu_dma_latency: ") &&
                  strstr(log, "tandemd failed to start"),
              "the log should name the file:\n%s", log);
    free(log);
    unsetenv("TDM_CPU_LATENCY_FILE");

    const char *bad[] = {"--cpu-latency-us", "soon", NULL};
    cr_assert_neq(dmn_try_start(&D, bad, &st), 0);
    log = dmn_log(&D);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(log, "cpu-latency-us must be an integer"),
              "exit status %d; log:\n%s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, log);
    free(log);
}

/* A GPU engine with a small device budget: a MeshPut whose tree does not fit is refused
 * with NO_MEMORY and leaves nothing behind; on a restart with an even smaller budget the
 * stored meshes that do not fit are kept, and their scene is answered (by the CPU
 * engine). Skipped where --engine gpu cannot start. */
Test(daemon, mesh_over_device_budget_is_refused)
{
    const char *flags[] = {"--engine", "gpu", "--gpu-memory", "64M", NULL};
    int st = 0;
    if (dmn_try_start(&D, flags, &st) != 0) {
        char *log = dmn_log(&D);
        const char *why = strstr(log, "error engine gpu: ");
        char line[300];
        snprintf(line, sizeof line, "%s", why ? why + 6 : "see the daemon's log");
        line[strcspn(line, "\n")] = 0;
        free(log);
        cr_skip_test("no GPU engine here (%s)", line);
    }
    gen_rng r = {seed ^ 0xb0d9e7};
    tdm_mesh *env = gen_torus(1.5, 0.5, 24, 12), *robot = gen_sphere(0.6, 12);
    enum { NP = 64 };
    double wire[NP * 7];
    uint32_t pairs[NP];
    pose_pool(&r, env, robot, 2.3, wire, pairs, NP);
    tdm_client *c = lib_connect(D.unix_addr);
    cr_assert_eq(tdm_client_server_info(c)->engine, TDM_ENGINE_GPU);
    uint8_t env_id[32], robot_id[32], sid[32];
    put_pair_scene(c, "small", env, robot, env_id, robot_id, sid);

    /* larger and larger spheres (~170 bytes of tree per triangle) until one does not fit */
    int refused = -1, accepted = 0;
    uint8_t big_ids[4][32];
    for (int k = 0; k < 4 && refused < 0; k++) {
        tdm_mesh *big = gen_sphere(1 + k, 640 + 160 * k);
        uint8_t id[32];
        int rc = tdm_mesh_put(c, "big", big->verts, big->n_verts, big->tris, big->n_tris, id, NULL);
        if (rc == 0) {
            memcpy(big_ids[accepted++], id, 32);
        } else {
            const tdm_server_error *e = tdm_client_server_error(c);
            cr_assert(rc == TDM_CLIENT_ESERVER && e && e->code == TDM_SERVER_NO_MEMORY &&
                          strstr(e->message, "device memory"),
                      "MeshPut of %u triangles over the device budget: %s", big->n_tris, tdm_client_errstr(c));
            canon_mesh_id(big->verts, big->n_verts, big->tris, big->n_tris, id);
            memcpy(big_ids[3], id, 32);
            refused = k;
        }
        tdm_mesh_free(big);
    }
    cr_assert(refused >= 0, "a 64 MiB device budget took %d spheres of 400k+ triangles", accepted);
    /* nothing of the refused mesh: not listed, no file; the rest still answers */
    tdm_mesh_info *ml;
    size_t nm;
    cr_assert_eq(tdm_mesh_list(c, &ml, &nm), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(nm, 2 + (size_t)accepted, "%zu meshes listed", nm);
    for (size_t i = 0; i < nm; i++) cr_assert(memcmp(ml[i].mesh_id, big_ids[3], 32), "the refused mesh is listed");
    tdm_mesh_list_free(ml);
    cr_assert_eq(check_files("meshes", ".mesh"), 2 + (size_t)accepted, "mesh files in the data directory");
    tdm_stats s;
    cr_assert_eq(tdm_stats_get(c, &s), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(s.device_meshes, 2 + (uint32_t)accepted, "%u meshes resident", s.device_meshes);
    cr_assert_eq(s.errors, 1);
    tdm_query_result res[NP];
    for (int mode = 0; mode < 2; mode++) {
        cr_assert_eq(tdm_query(c, sid, mode ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, wire, 1, NP, 0, res, NULL), 0, "%s",
                     tdm_client_errstr(c));
        for (int i = 0; i < NP; i++)
            cr_assert(res[i].colliding == (pairs[i] > 0) && res[i].contacts == (mode ? pairs[i] : (pairs[i] > 0)),
                      "query %d: contacts %u, the CPU engine finds %u", i, res[i].contacts, pairs[i]);
    }
    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);

    /* a restart with less room: what does not fit stays stored, and is answered on the CPU */
    const char *small[] = {"--engine", "gpu", "--gpu-memory", "4M", NULL};
    if (dmn_try_start(&D, small, &st) != 0) {
        cr_log_warn("the GPU engine does not start with a 4 MiB budget: start-up path not checked");
    } else {
        c = lib_connect(D.unix_addr);
        cr_assert_eq(tdm_mesh_list(c, &ml, &nm), 0, "%s", tdm_client_errstr(c));
        cr_assert_eq(nm, 2 + (size_t)accepted, "%zu meshes after the restart", nm);
        tdm_mesh_list_free(ml);
        cr_assert_eq(tdm_stats_get(c, &s), 0, "%s", tdm_client_errstr(c));
        char *log = dmn_log(&D);
        if (s.device_meshes < nm)
            cr_assert(strstr(log, "cannot hold its tree on the device"), "%u of %zu meshes resident and no warning",
                      s.device_meshes, nm);
        free(log);
        for (int mode = 0; mode < 2; mode++) {
            cr_assert_eq(tdm_query(c, sid, mode ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, wire, 1, NP, 0, res, NULL), 0,
                         "%s", tdm_client_errstr(c));
            for (int i = 0; i < NP; i++)
                cr_assert(res[i].colliding == (pairs[i] > 0) && res[i].contacts == (mode ? pairs[i] : (pairs[i] > 0)),
                          "after the restart, query %d: contacts %u, the CPU engine finds %u", i, res[i].contacts,
                          pairs[i]);
        }
        tdm_client_free(c);
    }
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
}

/* A name with a newline (or any byte outside printable ASCII) cannot write a line of
 * its own into the log (issue 14, "Forge log lines"): the stored-mesh line shows it
 * escaped, and no log line starts with the forged text. */
Test(daemon, names_cannot_forge_log_lines)
{
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    tdm_mesh *m = gen_box(0.1, 0.2, 0.3);
    cr_assert_not_null(m);
    const char *name = "evil\n2026-01-01T00:00:00.000000Z error forged line";
    uint8_t id[32];
    lib_put_mesh(c, name, m, id, 1);
    tdm_client_free(c);
    tdm_mesh_free(m);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "\"evil\\x0a2026-01-01T00:00:00.000000Z error forged line\"") != NULL,
              "the stored mesh's line should show the name escaped:\n%s", log);
    for (const char *l = log; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        cr_assert(strncmp(l, "2026-01-01T00:00:00.000000Z", 27) != 0, "a forged line in the log:\n%s", log);
    free(log);
}

/* The Unix socket is created 0600 whatever the umask (issue 14: it followed the
 * umask, 0777 under umask 000), and 0660 with --unix-socket-group 1. */
Test(daemon, unix_socket_mode_ignores_the_umask)
{
    const char *const group[] = {"--unix-socket-group", "1", NULL};
    const mode_t want[2] = {0600, 0660};
    for (int g = 0; g < 2; g++) {
        mode_t old = umask(0); /* the daemon inherits it */
        dmn_start(&D, g ? group : NULL);
        umask(old);
        struct stat st;
        cr_assert_eq(stat(D.sock_path, &st), 0, "stat %s: %s", D.sock_path, strerror(errno));
        cr_assert(S_ISSOCK(st.st_mode), "%s is not a socket", D.sock_path);
        cr_assert_eq(st.st_mode & 0777, want[g], "socket mode %o, want %o (--unix-socket-group %d)",
                     (unsigned)(st.st_mode & 0777), (unsigned)want[g], g);
        tdm_client *c = lib_connect(D.unix_addr); /* and the owner still connects */
        tdm_client_free(c);
        cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    }
}

/* Deadlines (issue 14, point 3): a socket that never says Hello is closed after
 * --hello-timeout (the "1 024 silent sockets hold every slot" attack), an
 * authenticated client that sends nothing for --idle-timeout is closed, and one
 * that keeps sending is not. */
Test(daemon, hello_and_idle_timeouts)
{
    const char *const flags[] = {"--hello-timeout", "1", "--idle-timeout", "2", NULL};
    dmn_start(&D, flags);
    /* silent: closed after about a second */
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0, "connect %s", D.tcp_addr);
    double t0 = mono_s();
    cr_assert_eq(raw_wait_eof(fd, 5000), RAW_EOF, "a connection without Hello should be closed");
    double dt = mono_s() - t0;
    cr_assert(dt > 0.8 && dt < 4, "closed after %.2f s, want about 1 s", dt);
    close(fd);
    /* said Hello: the hello deadline no longer applies; requests keep it open */
    tdm_client *c = lib_connect(D.unix_addr);
    tdm_stats st;
    for (int i = 0; i < 3; i++) { /* 3 x 1.2 s of use: past both deadlines in all */
        struct timespec ts = {1, 200000000};
        nanosleep(&ts, NULL);
        cr_assert_eq(tdm_stats_get(c, &st), 0, "a client that keeps sending was closed: %s", tdm_client_errstr(c));
    }
    /* idle: closed after the idle deadline (2 s; the close is logged as it is made: awaited, since
       a loaded machine may get to it late) */
    struct timespec ts = {3, 500000000};
    nanosleep(&ts, NULL);
    cr_assert(dmn_log_has(&D, "(idle-timeout): closing", 10000),
              "an idle connection was not closed 11.5 s after its idle deadline");
    cr_assert_neq(tdm_stats_get(c, &st), 0, "an idle connection should have been closed");
    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "(hello-timeout): closing") && strstr(log, "(idle-timeout): closing"),
              "both closes should be logged:\n%s", log);
    free(log);
}

/* Starts tandemd with flags, which must fail start-up with exit status want (1: a
 * start-up failure, 2: a usage error); returns its log (the caller frees it). */
static char *start_must_fail(const char *const *flags, const char *what, int want)
{
    int st = 0;
    cr_assert_neq(dmn_try_start(&D, flags, &st), 0, "%s: tandemd started", what);
    char *log = dmn_log(&D);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == want, "%s: exit status %d (wait status %d), want %d; log:\n%s",
              what, WIFEXITED(st) ? WEXITSTATUS(st) : -1, st, want, log);
    return log;
}

/* A TCP listen address beyond loopback without an auth token is refused at start-up
 * (issue 14: `--listen 0.0.0.0` without a token started silently), unless
 * --insecure-listen 1 accepts it or a token is set. */
Test(daemon, open_listen_needs_a_token)
{
    const char *open_flags[] = {"--listen", "0.0.0.0:0", NULL};
    char *log = start_must_fail(open_flags, "0.0.0.0 without a token", 1);
    int st = 0;
    cr_assert(strstr(log, "listen 0.0.0.0:0: not a loopback address, and no auth token") &&
                  strstr(log, "--insecure-listen 1"),
              "the log should say why and how to accept it:\n%s", log);
    free(log);
    const char *accepted[] = {"--listen", "0.0.0.0:0", "--insecure-listen", "1", NULL};
    dmn_start(&D, accepted);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    const char *loopback6[] = {"--listen", "[::1]:0", NULL}; /* loopback needs nothing (where IPv6 is there) */
    if (dmn_try_start(&D, loopback6, &st) == 0) {
        cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    } else {
        log = dmn_log(&D);
        cr_assert(!strstr(log, "not a loopback address"), "[::1] was refused as not loopback:\n%s", log);
        free(log);
    }
}

/* Auth tokens (issue 14, point 4): shorter than 128 bits' worth (22 characters) is
 * refused at start-up, naming the rule; $TANDEMD_AUTH_TOKEN is used when no flag or
 * file gives one, and a client must then present it. */
Test(daemon, auth_token_length_and_environment)
{
    const char *short_flags[] = {"--auth-token", "only-21-characters-xx", NULL};
    char *log = start_must_fail(short_flags, "a 21-character token", 2);
    cr_assert(strstr(log, "the auth token has 21 characters: at least 22 are needed"), "log:\n%s", log);
    free(log);

    const char *token = "from-the-environment-0123456789";
    setenv("TANDEMD_AUTH_TOKEN", token, 1); /* the daemon inherits it */
    dmn_start(&D, NULL);
    unsetenv("TANDEMD_AUTH_TOKEN");
    int fd;
    Tandem__V1__Reply *rep = hello_with(&fd, D.tcp_addr, "");
    expect_error(rep, "no token", 5, 3 /* UNAUTHENTICATED */, "auth_token", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    close(fd);
    tdm_connect_opts o = {.addr = D.tcp_addr, .timeout_ms = 5000, .auth_token = token};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert(c && tdm_client_err(c) == 0, "the environment's token was refused: %s", c ? tdm_client_errstr(c) : "");
    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* A client that pipelines queries and never reads (issue 14, "Exhaust memory"): reading
 * stops once its queued replies and the bounds of those being computed pass
 * --max-output-bytes (tests/test_limits.c measures that), and once its replies have waited
 * --output-stall-timeout seconds with none taken the connection is closed, the unsent
 * replies freed, and the warning names the limit; another client is served. */
enum { HARD_REQUESTS = 1000, HARD_K = 256 };

Test(daemon, a_client_that_stops_reading_is_closed_at_the_stall_timeout)
{
    gen_rng r = {seed ^ 0x4a7d};
    tdm_mesh *env = gen_torus(1.5, 0.5, 16, 8), *robot = gen_sphere(0.6, 10);
    const char *flags[] = {"--max-output-bytes", "4096", "--output-stall-timeout", "2", NULL};
    dmn_start(&D, flags);
    witness w = {0};
    uint8_t env_id[32], robot_id[32];
    witness_scene(&w, D.unix_addr, env, robot, env_id, robot_id);
    tdm_bvh *be = bvh_of(env), *bb = bvh_of(robot);
    for (int i = 0; i < NW; i++) { /* the witness's queries, checked against the engine */
        gen_pose g = wire_stable_pose(&r, tdm_d3(0, 0, 0), 2.3);
        wire_pose(&g, w.wire + 7 * i);
        tdm_xform x = wire_xform(w.wire + 7 * i);
        w.pairs[i] = engine_pairs(be, bb, &x);
    }
    static double wire[HARD_K * 7];
    for (int i = 0; i < HARD_K; i++) {
        gen_pose g = wire_stable_pose(&r, tdm_d3(0, 0, 0), 2.3);
        wire_pose(&g, wire + 7 * i);
    }
    /* 1 000 queries of 256 poses: about 1 KB of reply each, never read */
    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    slow_sender s = {.fd = fd, .wire = wire, .scene_id = w.scene_id, .requests = HARD_REQUESTS, .k = HARD_K, .step = 1};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, slow_send, &s), 0);
    char *log = NULL;
    for (int t = 0; t < 200; t++) { /* up to 20 s for the warning */
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
        free(log);
        log = dmn_log(&D);
        if (strstr(log, "none taken for 2 s (output-stall-timeout): closing")) break;
    }
    cr_assert(strstr(log, "none taken for 2 s (output-stall-timeout): closing") != NULL,
              "no close at the stall timeout:\n%s", log);
    free(log);
    shutdown(fd, SHUT_RDWR); /* unblocks the sender if it still writes */
    pthread_join(th, NULL);
    close(fd);
    witness_ok(&w, "a client that stopped reading was closed"); /* others are served */
    tdm_client_free(w.c);
    tdm_bvh_free(be);
    tdm_bvh_free(bb);
    tdm_mesh_free(env);
    tdm_mesh_free(robot);
}

/* Before Hello a frame may not be larger than the 64 KiB staging buffer (issue 14:
 * 20 connections each sending a 60 MiB partial frame before Hello held 1.2 GB): the
 * announced length alone gets UNAUTHENTICATED (field "frame") and the close, before
 * anything is allocated for it. After Hello, a large frame is read as before. */
Test(daemon, large_frame_before_hello_is_refused)
{
    dmn_start(&D, NULL);
    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0);
    const uint8_t head[8] = {0x03, 0xc0, 0x00, 0x00, 1, 2, 3, 4}; /* 60 MiB announced, 4 bytes sent */
    cr_assert_eq(raw_write_all(fd, head, sizeof head), 0);
    Tandem__V1__Reply *rep = NULL;
    char err[256];
    int rc = raw_recv(fd, 5000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "a 60 MiB frame before Hello: %s", rc == RAW_EOF ? "closed without an Error" : err);
    expect_error(rep, "a 60 MiB frame before Hello", 0, 3 /* UNAUTHENTICATED */, "frame", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    cr_assert_eq(raw_wait_eof(fd, 5000), RAW_EOF, "the connection should be closed");
    close(fd);
    /* after Hello, a frame over 64 KiB is still fine: a 100 000-triangle mesh */
    tdm_client *c = lib_connect(D.unix_addr);
    tdm_mesh *m = gen_sphere(1.0, 220);
    cr_assert(m && m->n_tris * 12u > 65536u, "the mesh should need a frame over 64 KiB");
    uint8_t id[32];
    lib_put_mesh(c, "big", m, id, 1);
    tdm_mesh_free(m);
    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* Wrong tokens are slow and quiet (issue 14: 47 463 guesses in 5 s, one warn line
 * each): each refusal comes after a second, the warning is written at most once a
 * second with a count of the others, and a guesser that hangs up during the delay
 * leaves no connection behind. */
Test(daemon, wrong_tokens_are_delayed_and_logged_once_a_second)
{
    const char *token_file = in_root("token");
    FILE *f = fopen(token_file, "w");
    cr_assert_not_null(f);
    fputs("the-right-token-of-enough-length\n", f);
    cr_assert_eq(fclose(f), 0);
    /* 30 guesses from one user would block it (auth-fail-max, test_tenants.c tests that) */
    const char *flags[] = {"--auth-token-file", token_file, "--auth-fail-max", "0", NULL};
    dmn_start(&D, flags);
    enum { GUESSES = 30 };
    int fds[GUESSES];
    double t0 = mono_s();
    for (int i = 0; i < GUESSES; i++) {
        fds[i] = raw_connect(D.unix_addr);
        cr_assert(fds[i] >= 0);
        Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
        h.protocol_version = 1;
        h.auth_token = "a-wrong-guess-of-enough-length";
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 5;
        rq.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
        rq.hello = &h;
        cr_assert_eq(raw_send(fds[i], &rq), 0);
    }
    close(fds[0]); /* hangs up during its delay */
    for (int i = 1; i < GUESSES; i++) {
        Tandem__V1__Reply *rep = NULL;
        char err[256];
        int rc = raw_recv(fds[i], 10000, &rep, err, sizeof err);
        cr_assert_eq(rc, RAW_REPLY, "guess %d: %s", i, rc == RAW_EOF ? "closed without an Error" : err);
        double dt = mono_s() - t0;
        cr_assert(dt >= 0.9, "guess %d refused after %.3f s, want at least about 1 s", i, dt);
        expect_error(rep, "a wrong token", 5, 3 /* UNAUTHENTICATED */, "auth_token", -1);
        tandem__v1__reply__free_unpacked(rep, NULL);
        cr_assert_eq(raw_wait_eof(fds[i], 5000), RAW_EOF, "guess %d: the connection should be closed", i);
        close(fds[i]);
    }
    tdm_connect_opts o = {.addr = D.unix_addr, .timeout_ms = 5000, .auth_token = "the-right-token-of-enough-length"};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert(c && tdm_client_err(c) == 0, "the right token: %s", c ? tdm_client_errstr(c) : "");
    /* each guesser's close is seen by the loop its connection lives on (with --io-threads, not
       always the one answering the stats): wait for them, a few seconds at most */
    tdm_stats st;
    for (double t1 = mono_s();;) {
        cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
        if (st.connections == 1 || mono_s() - t1 > 5) break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    cr_assert_eq(st.connections, 1, "%u connections open: the guessers' should all be gone", st.connections);
    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    char *log = dmn_log(&D);
    int lines = 0;
    for (const char *p = log; (p = strstr(p, "wrong auth token; closing")); p++) lines++;
    double secs = mono_s() - t0;
    cr_assert(lines >= 1 && lines <= (int)secs + 1, "%d warning lines in %.1f s for %d guesses:\n%s", lines, secs,
              GUESSES, log);
    free(log);
}

/* Until the server counts `want` connections (Stats through watch), 30 s at most. */
static void await_connections(tdm_client *watch, uint32_t want)
{
    tdm_stats st;
    for (int i = 0;; i++) {
        cr_assert_eq(tdm_stats_get(watch, &st), 0, "%s", tdm_client_errstr(watch));
        if (st.connections == want) return;
        cr_assert(i < 1500, "%u connections open, expected %u, after 30 s", st.connections, want);
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
}

/* Slots (issue 14, point 3): connections that have not said Hello have a cap of their
 * own (--max-unauthenticated), so silent sockets cannot take every slot; a client that
 * says Hello frees its place; and one TCP address gets at most
 * --max-connections-per-address connections, Unix-socket clients not counted. */
Test(daemon, unauthenticated_and_per_address_caps)
{
    const char *flags[] = {"--max-unauthenticated", "2", "--max-connections-per-address", "3", "--hello-timeout", "0",
                           NULL};
    dmn_start(&D, flags);
    struct timespec ts = {0, 200 * 1000000L};
    for (int t = 0;; t++) { /* dmn_start's probe connections are gone first (until then: BUSY) */
        cr_assert(t < 50, "dmn_start's probe connections are still open");
        tdm_connect_opts po = {.addr = D.unix_addr, .timeout_ms = 5000};
        tdm_client *probe = tdm_client_connect_with(&po);
        tdm_stats ps;
        int ok = probe && tdm_client_err(probe) == 0 && tdm_stats_get(probe, &ps) == 0 && ps.connections == 1;
        tdm_client_free(probe);
        if (ok) break;
        nanosleep(&ts, NULL);
    }
    nanosleep(&ts, NULL); /* and this one too */
    /* a watcher (past its Hello: not in the cap) counts the connections the server has: itself alone
       (the probe's close seen), then with the two silent ones (each accepted on its I/O thread, in
       its own time) */
    tdm_client *watch = lib_connect(D.unix_addr);
    await_connections(watch, 1);
    char err[256];
    int silent[2];
    for (int i = 0; i < 2; i++) {
        silent[i] = raw_connect(D.unix_addr);
        cr_assert(silent[i] >= 0);
    }
    await_connections(watch, 3);
    tdm_client_free(watch);
    /* a third silent one: ERROR_BUSY, then the close */
    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0);
    Tandem__V1__Reply *rep = NULL;
    int rc = raw_recv(fd, 5000, &rep, err, sizeof err);
    if (rc != RAW_REPLY) {
        char *log = dmn_log(&D);
        cr_assert_fail("a third unauthenticated connection: %s; log:\n%s", rc == RAW_EOF ? "closed, no Error" : err,
                       log);
    }
    expect_error(rep, "over max_unauthenticated", 0, 14 /* BUSY */, "connections", -1);
    cr_assert(strstr(rep->error->message, "max_unauthenticated"), "'%s'", rep->error->message);
    tandem__v1__reply__free_unpacked(rep, NULL);
    close(fd);
    /* one of the silent ones says Hello: its place frees, and a client gets in */
    raw_hello_or_fail(silent[0], 1);
    tdm_client *c = lib_connect(D.unix_addr);
    tdm_stats st;
    cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    close(silent[0]);
    close(silent[1]);
    nanosleep(&ts, NULL);
    /* per address: three TCP clients from 127.0.0.1 get in, a fourth is refused */
    tdm_client *t[3];
    for (int i = 0; i < 3; i++) t[i] = lib_connect(D.tcp_addr);
    fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    rc = raw_recv(fd, 5000, &rep, err, sizeof err);
    cr_assert_eq(rc, RAW_REPLY, "a fourth TCP connection: %s", rc == RAW_EOF ? "closed, no Error" : err);
    expect_error(rep, "over max_connections_per_address", 0, 14 /* BUSY */, "connections", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    close(fd);
    c = lib_connect(D.unix_addr); /* not counted: still served */
    cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    for (int i = 0; i < 3; i++) tdm_client_free(t[i]);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* --gpu-devices (issue 14, point 9): a list that is not "all" or device indices is a
 * usage error naming the bad entry, as is one given with --gpu-device; the CPU engine
 * starts with any valid list and runs no GPU engine. */
Test(daemon, gpu_devices_flag_is_checked_and_the_cpu_engine_ignores_it)
{
    static const struct { const char *value, *says; } bad[] = {
        {"x", "gpu-devices: device list \"x\": entry 1 (\"x\") is not a device index 0..1024"},
        {"0,,1", "gpu-devices: device list \"0,,1\": entry 2 (\"\") is not a device index"},
        {"0,1,2,3,4,5,6,7,8", "gpu-devices: device list \"0,1,2,3,4,5,6,7,8\": more than 8 devices"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *flags[] = {"--gpu-devices", bad[i].value, NULL};
        char *log = start_must_fail(flags, bad[i].value, 2);
        cr_assert(strstr(log, bad[i].says), "--gpu-devices %s: the log should say '%s':\n%s", bad[i].value,
                  bad[i].says, log);
        free(log);
    }
    const char *both[] = {"--gpu-device", "1", "--gpu-devices", "0,1", NULL};
    char *log = start_must_fail(both, "--gpu-device with --gpu-devices", 2);
    cr_assert(strstr(log, "gpu-device (1) and gpu-devices (0,1) were both given: give the one device as --gpu-devices 1"),
              "log:\n%s", log);
    free(log);
    /* --gpu-device alone, and "all" with it, are fine; the CPU engine ignores both */
    const char *cpu[] = {"--engine", "cpu", "--gpu-devices", "0,0", NULL};
    dmn_start(&D, cpu);
    tdm_client *c = tdm_client_connect(D.unix_addr, 5000);
    cr_assert(c && tdm_client_err(c) == 0, "connect: %s", c ? tdm_client_errstr(c) : "");
    tdm_stats st;
    cr_assert_eq(tdm_stats_get(c, &st), 0, "stats: %s", tdm_client_errstr(c));
    cr_assert_eq(st.engine, TDM_ENGINE_CPU);
    cr_assert(strstr(st.engine_detail, "CPU engine") && strstr(st.engine_detail, "(chosen by configuration)"),
              "engine: %s", st.engine_detail);
    cr_assert(st.device_meshes == 0 && st.device_bytes == 0, "the CPU engine holds nothing on a device");
    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    const char *one[] = {"--engine", "cpu", "--gpu-device", "0", "--gpu-devices", "all", NULL};
    dmn_start(&D, one);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* An integer flag that also takes auto: each bad value is a usage error naming the flag and its
 * range ("FLAG must be an integer from LO to HI"); with each good value tandemd starts on the CPU
 * engine, answers, and stops; then check_log (if any) reads its log. */
static void int_flag_is_checked(const char *flag, const char *range, const char *const *bad, size_t n_bad,
                                const char *const *good, size_t n_good,
                                void (*check_log)(size_t i, const char *value, const char *log))
{
    char want[128];
    snprintf(want, sizeof want, "%s must be an integer from %s", flag + 2, range);
    for (size_t i = 0; i < n_bad; i++) {
        const char *flags[] = {flag, bad[i], NULL};
        char *log = start_must_fail(flags, bad[i], 2);
        cr_assert(strstr(log, want), "%s %s: the log should name the flag and its range:\n%s", flag, bad[i], log);
        free(log);
    }
    for (size_t i = 0; i < n_good; i++) {
        const char *flags[] = {"--engine", "cpu", flag, good[i], NULL};
        dmn_start(&D, flags);
        tdm_client *c = tdm_client_connect(D.unix_addr, 5000);
        cr_assert(c && tdm_client_err(c) == 0, "%s %s: connect: %s", flag, good[i], c ? tdm_client_errstr(c) : "");
        tdm_stats st;
        cr_assert_eq(tdm_stats_get(c, &st), 0, "stats: %s", tdm_client_errstr(c));
        tdm_client_free(c);
        cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
        if (check_log) {
            char *log = dmn_log(&D);
            check_log(i, good[i], log);
            free(log);
        }
    }
}

/* --dispatch-poll-us: auto or 0..1000000 µs; anything else is a usage error naming the flag. */
Test(daemon, dispatch_poll_flag_is_checked)
{
    static const char *const bad[] = {"x", "-5", "1000001", "autox"};
    static const char *const good[] = {"auto", "0", "500"};
    int_flag_is_checked("--dispatch-poll-us", "0 to 1000000", bad, 4, good, 3, NULL);
}

/* --express-configs: auto or 0..256; anything else is a usage error naming the flag. On the CPU
 * engine the ring cannot start: auto (the default) and 0 say nothing about it, a number asks for it
 * and gets a warning saying why; tandemd answers either way. */
static void express_log(size_t i, const char *value, const char *log)
{
    int warned = strstr(log, "express-configs 1: the express ring did not start (it needs a GPU engine)") != NULL;
    cr_assert_eq(warned, i == 2, "--express-configs %s on the CPU engine: %s:\n%s", value,
                 i == 2 ? "the log should say the ring needs a GPU engine" : "the log should not warn", log);
    cr_assert(!strstr(log, "express ring: requests of at most"), "no ring on the CPU engine:\n%s", log);
}

Test(daemon, express_configs_flag_is_checked_and_auto_is_quiet_without_a_gpu)
{
    static const char *const bad[] = {"x", "-1", "257", "autox"};
    static const char *const good[] = {"auto", "0", "1"};
    int_flag_is_checked("--express-configs", "0 to 256", bad, 4, good, 3, express_log);
}
