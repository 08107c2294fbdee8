/* Robots through tandemd (issue 13): a real tandemd per test (daemon_util.h), talked
 * to through libtandem and the `tandem` CLI, on a generated arm (URDF with box,
 * cylinder and a scaled OBJ-mesh link, revolute and prismatic joints, an SRDF) in a
 * generated MoveIt planning scene, the files written by the suite.
 *
 *   store_list_delete_persist  RobotPut / RobotList / RobotDelete, meshes and robots
 *                              pinned (MESH_IN_USE, ROBOT_IN_USE), everything back
 *                              after a restart, answers unchanged
 *   bad_robot_stores_nothing   unknown link or joint, a mesh filename missing from
 *                              the table, an unknown mesh id, a cycle, an unused
 *                              table entry, a bad SRDF, a bad planning scene: the
 *                              documented Error naming line and element; nothing
 *                              stored (lists and the data directory stay empty)
 *   configs_equal_offline      1200 random configurations, bool and contacts:
 *                              tdm_query_configs equals the offline robot scene run
 *                              through tdm_sched (what `tandem check --urdf` runs)
 *                              answer for answer; bad configurations get the error
 *                              naming the field and index
 *   cli_robot_and_query        `tandem robot put|list|rm`, and `tandem query --urdf`
 *                              writes exactly `tandem check --urdf`'s --out file
 *   motions_equal_reference    MotionCheck (tdm_motion_check) against a reference that
 *                              runs each state alone offline: the first colliding k,
 *                              the state count and the last free state, exactly; bad
 *                              motions refused (field, index); max_motion_states; and
 *                              `tandem motions --server` writes `tandem motions`' file
 *   async_calls_equal_blocking the async robot calls (libuv adapter) chained from
 *                              connect to list, answers equal the blocking calls'
 *   attached_objects_answer_as_the_oracle  tests/arm_oracle.h's arm holding two boxes
 *                              on link2 (robot_state.attached_collision_objects):
 *                              the reply's objects say which ids are the held
 *                              shapes (movable 2), the world's come after them;
 *                              1000 configurations answer as arm_oracle_holding,
 *                              link1 checked and then a touch link; a link_name
 *                              of no link refused naming the object, nothing stored
 *   concurrent_scene_puts_store_each_once  9 connections (both listeners) put 3
 *                              worlds and a bad one at once, twice: each world
 *                              stored once, each put told its id, one told it
 *                              created it (a second put answered on another I/O
 *                              thread before the first was listed got BUSY until
 *                              2026-11-28); the bad one fails alone naming its line */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <tandem/adapters/libuv.h>
#include <tandem/tandem.h>

#include "daemon_util.h"
#include "gen.h"
#include "geom/primitive.h"
#include "robot/robot_scene.h"
#include "spawn.h"
#include "tools/io.h"
#include "workpile/sched.h"
#include "arm_fixture.h"
#include "arm_oracle.h"

#ifndef TANDEM_BIN
#error "TANDEM_BIN must be defined by the build"
#endif

static uint64_t seed;
static dmn D;

static void write_file(const char *name, const char *text) { dmn_write(&D, name, text); }

/* ---- the arm: tests/arm_fixture.h ---- */

#define N_J 3
#define N_EL 6
#define N_OBJ 8

static void suite_init(void)
{
    seed = gen_seed(0x70b07dull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    dmn_init(&D, "robotd");
    char meshes[600];
    snprintf(meshes, sizeof meshes, "%s/meshes", D.root);
    cr_assert_eq(mkdir(meshes, 0700), 0, "%s", strerror(errno));
    arm_fixture_write(write_file);
}

static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(robotd, .init = suite_init, .fini = suite_fini, .timeout = 120);

static tdm_client *lib_connect(const char *addr)
{
    tdm_connect_opts o = {.addr = addr, .timeout_ms = 5000, .io_timeout_ms = 30000, .client_name = "test_robotd"};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert_not_null(c);
    cr_assert_eq(tdm_client_err(c), 0, "connecting to %s: %s", addr, tdm_client_errstr(c));
    return c;
}

/* The bar mesh as the file helper uploads it, and its id. */
static void put_bar(tdm_client *c, uint8_t id[32])
{
    tdm_mesh *m;
    char err[256];
    cr_assert_eq(tdm_mesh_load_file(dmn_path(&D, "meshes/bar.obj"), TDM_ORIGIN_RAW, &m, err, sizeof err), TDM_OK, "%s",
                 err);
    cr_assert_eq(tdm_mesh_put(c, "bar", m->verts, m->n_verts, m->tris, m->n_tris, id, NULL), 0, "%s",
                 tdm_client_errstr(c));
    tdm_mesh_free(m);
}

static void expect_server_error(tdm_client *c, int rc, const char *what, int code, const char *field, int64_t index,
                                const char *needle)
{
    cr_assert_eq(rc, TDM_CLIENT_ESERVER, "%s: rc %d (%s), expected a server error", what, rc, tdm_client_errstr(c));
    const tdm_server_error *e = tdm_client_server_error(c);
    cr_assert_not_null(e, "%s", what);
    cr_assert_eq(e->code, code, "%s: code %d (%s: %s), expected %d", what, e->code, e->field, e->message, code);
    cr_assert_str_eq(e->field, field, "%s: field '%s' (%s), expected '%s'", what, e->field, e->message, field);
    if (index != INT64_MIN) cr_assert_eq(e->index, index, "%s: index %lld, expected %lld", what, (long long)e->index,
                                         (long long)index);
    if (needle)
        cr_assert(strstr(e->message, needle) != NULL, "%s: message '%s' does not say '%s'", what, e->message, needle);
    cr_assert_eq(tdm_client_err(c), 0, "%s: the connection must stay usable", what);
}

/* ---- the offline reference: what `tandem check --urdf` runs ---- */

static int file_loader(void *ctx, const char *p, tdm_mesh **out, char *err, size_t errlen)
{
    (void)ctx;
    return tdm_mesh_load_file(p, TDM_ORIGIN_RAW, out, err, errlen);
}

typedef struct offline {
    tdm_robot *robot;
    tdm_planning_scene *ps;
    tdm_robot_scene *rs;
    tdm_sched *sched;
} offline;

/* The arm in the world of file `world` (in the daemon's root). */
static void offline_open_world(offline *o, const char *world)
{
    char err[512];
    cr_assert_eq(tdm_robot_load(dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), &o->robot, err, sizeof err), TDM_OK,
                 "%s", err);
    cr_assert_eq(tdm_planning_scene_read(dmn_path(&D, world), &o->ps, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_scene_create(o->robot, o->ps, file_loader, NULL, TDM_PRIMITIVE_TOLERANCE, &o->rs, err,
                                        sizeof err),
                 TDM_OK, "%s", err);
    tdm_sched_config sc = tdm_sched_config_default();
    sc.kind = TDM_BACKEND_CPU;
    sc.threads = 2;
    sc.calibrate = 0;
    sc.lanes = 1;
    cr_assert_eq(tdm_sched_create(&sc, &o->sched, err, sizeof err), TDM_OK, "%s", err);
    for (uint32_t i = 0; i < o->rs->n_objects; i++) cr_assert_eq(tdm_sched_mesh_add(o->sched, o->rs->bvhs[i]), TDM_OK);
}

static void offline_open(offline *o) { offline_open_world(o, "scene.yaml"); }

static void offline_close(offline *o)
{
    for (uint32_t i = 0; i < o->rs->n_objects; i++) tdm_sched_mesh_remove(o->sched, o->rs->bvhs[i]);
    tdm_sched_destroy(o->sched);
    tdm_robot_scene_destroy(o->rs);
    tdm_planning_scene_free(o->ps);
    tdm_robot_free(o->robot);
}

/* Runs n configurations offline; pairs (optional, contacts mode) receive up to cap pairs each. */
static void offline_run(offline *o, const double *q, size_t n, tdm_mode mode, uint32_t max_contacts,
                        tdm_sched_result *res, tdm_sched_contact *pairs)
{
    tdm_xform *x = malloc(sizeof *x * n * N_EL), links[8];
    tdm_sched_query *qs = calloc(n, sizeof *qs);
    cr_assert(x && qs);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(tdm_robot_scene_poses(o->rs, q + i * N_J, N_J, links, x + i * N_EL), TDM_OK);
        qs[i] = (tdm_sched_query){o->rs->scene, x + i * N_EL, mode, max_contacts,
                                  pairs ? pairs + i * max_contacts : NULL, NULL};
    }
    cr_assert_eq(tdm_sched_run(o->sched, qs, n, res), TDM_OK);
    free(qs);
    free(x);
}

/* ---- tests ---- */

/* The test arm (arm.urdf, arm.srdf) stored through c: its id in rid. */
static void put_arm(tdm_client *c, uint8_t rid[32])
{
    cr_assert_eq(tdm_robot_put_files(c, NULL, dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), rid, NULL, NULL), 0,
                 "%s", tdm_client_errstr(c));
}

/* ... and its world scene.yaml: the robot scene's id in sid. */
static void put_arm_scene(tdm_client *c, uint8_t rid[32], uint8_t sid[32])
{
    put_arm(c, rid);
    cr_assert_eq(tdm_robot_scene_put_file(c, NULL, rid, dmn_path(&D, "scene.yaml"), sid, NULL, NULL), 0, "%s",
                 tdm_client_errstr(c));
}

Test(robotd, store_list_delete_persist)
{
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    const tdm_server_info *si = tdm_client_server_info(c);
    cr_assert_eq(si->limits.max_robots, 1024, "HelloReply.limits.max_robots");
    cr_assert_eq(si->limits.max_robot_text_bytes, 16u << 20, "HelloReply.limits.max_robot_text_bytes");

    uint8_t rid[32], rid2[32], sid[32], bar[32];
    int created = -1;
    tdm_robot_info *ri = NULL;
    cr_assert_eq(tdm_robot_put_files(c, NULL, dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), rid, &created, &ri),
                 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(created, 1);
    cr_assert_eq(ri->n_joints, 3);
    static const char *const jn[3] = {"j1", "j2", "j3"};
    static const double lo[3] = {-3.14, -2.6, 0}, hi[3] = {3.14, 2.6, 0.1};
    for (int k = 0; k < 3; k++) {
        cr_assert_str_eq(ri->joints[k].name, jn[k]);
        cr_assert_eq(ri->joints[k].lower, lo[k]);
        cr_assert_eq(ri->joints[k].upper, hi[k]);
    }
    cr_assert_eq(ri->n_links, 4);
    cr_assert_eq(ri->n_elements, N_EL);
    tdm_robot_info_free(ri);

    /* the same texts and table again, through the text call: the same id, not created */
    put_bar(c, bar);
    tdm_robot_mesh_ref ref = {"meshes/bar.obj", {0}};
    memcpy(ref.mesh_id, bar, 32);
    cr_assert_eq(tdm_robot_put(c, "again", urdf_text, srdf_text, &ref, 1, rid2, &created, NULL), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(created, 0);
    cr_assert(!memcmp(rid, rid2, 32), "the same robot got two ids");
    /* without the SRDF it is another robot */
    cr_assert_eq(tdm_robot_put(c, "no srdf", urdf_text, NULL, &ref, 1, rid2, &created, NULL), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(created, 1);
    cr_assert(memcmp(rid, rid2, 32) != 0);

    tdm_robot_info *list;
    size_t n;
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 2);
    cr_assert(!memcmp(list[0].robot_id, rid, 32));
    cr_assert_str_eq(list[0].name, "arm");
    cr_assert_str_eq(list[1].name, "no srdf");
    cr_assert_eq(list[0].n_joints, 3);
    cr_assert_str_eq(list[0].joints[2].name, "j3");
    cr_assert_eq(list[0].scenes, 0);
    tdm_robot_info_free(list);
    cr_assert_eq(dmn_count_files(&D, "robots"), 2);

    /* the mesh is pinned by the robots */
    expect_server_error(c, tdm_mesh_delete(c, bar), "MeshDelete of a robot's mesh", TDM_SERVER_MESH_IN_USE,
                        "mesh_id", -1, "robot");
    tdm_mesh_info *ml;
    cr_assert_eq(tdm_mesh_list(c, &ml, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(ml[0].robots, 2);
    tdm_mesh_list_free(ml);

    /* a robot scene, and the robot pinned by it */
    tdm_robot_scene_info *rsi = NULL;
    cr_assert_eq(tdm_robot_scene_put_file(c, "arm in test", rid, dmn_path(&D, "scene.yaml"), sid, &created, &rsi), 0,
                 "%s", tdm_client_errstr(c));
    cr_assert_eq(created, 1);
    cr_assert(!memcmp(rsi->robot_id, rid, 32));
    cr_assert_eq(rsi->n_joints, 3);
    cr_assert_eq(rsi->n_objects, N_OBJ);
    static const char *const links[N_EL] = {"base_link", "link1", "link1", "link2", "link2", "link3"};
    static const uint32_t elem[N_EL] = {0, 0, 1, 0, 1, 0};
    for (int i = 0; i < N_EL; i++) {
        cr_assert_eq(rsi->objects[i].object_id, (uint32_t)i);
        cr_assert_eq(rsi->objects[i].movable, 1);
        cr_assert_str_eq(rsi->objects[i].link, links[i]);
        cr_assert_eq(rsi->objects[i].element, elem[i]);
    }
    cr_assert_eq(rsi->objects[6].movable, 0);
    cr_assert_str_eq(rsi->objects[6].world_object, "obs_box");
    cr_assert_str_eq(rsi->objects[7].world_object, "obs_cyl");
    cr_assert_eq(rsi->objects[7].shape, 0);
    uint32_t n_checks = rsi->n_checks;
    tdm_robot_scene_info_free(rsi);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 1);
    expect_server_error(c, tdm_robot_delete(c, rid), "RobotDelete of a used robot", TDM_SERVER_ROBOT_IN_USE,
                        "robot_id", -1, "1 robot scene");

    /* answers before the restart */
    enum { NQ = 64 };
    gen_rng g = {seed ^ 0x11};
    double q[NQ * N_J];
    for (int i = 0; i < NQ; i++) arm_fixture_random_config(&g, q + i * N_J);
    tdm_query_result before[NQ], after[NQ];
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q, N_J, NQ, 0, before, NULL), 0, "%s",
                 tdm_client_errstr(c));
    tdm_client_free(c);

    /* everything is back after a restart */
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
    dmn_start(&D, NULL);
    c = lib_connect(D.tcp_addr);
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 2);
    int found = 0;
    for (size_t i = 0; i < n; i++)
        if (!memcmp(list[i].robot_id, rid, 32)) {
            found = 1;
            cr_assert_eq(list[i].scenes, 1);
            cr_assert_str_eq(list[i].name, "arm");
        }
    cr_assert(found, "the robot is gone after a restart");
    tdm_robot_info_free(list);
    tdm_scene_info *sl;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert(!memcmp(sl[0].scene_id, sid, 32));
    cr_assert_eq(sl[0].is_robot_scene, 1);
    cr_assert(!memcmp(sl[0].robot_id, rid, 32));
    cr_assert_eq(sl[0].n_movable, N_EL);
    tdm_scene_list_free(sl);
    /* putting the scene again: the same id, not created, the same checked pairs */
    cr_assert_eq(tdm_robot_scene_put_file(c, "again", rid, dmn_path(&D, "scene.yaml"), sid, &created, &rsi), 0);
    cr_assert_eq(created, 0);
    cr_assert_eq(rsi->n_checks, n_checks);
    tdm_robot_scene_info_free(rsi);
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q, N_J, NQ, 0, after, NULL), 0, "%s",
                 tdm_client_errstr(c));
    for (int i = 0; i < NQ; i++) {
        cr_assert_eq(after[i].colliding, before[i].colliding, "configuration %d", i);
        cr_assert_eq(after[i].contacts, before[i].contacts, "configuration %d", i);
        cr_assert_eq(after[i].object_a, before[i].object_a, "configuration %d", i);
        cr_assert_eq(after[i].object_b, before[i].object_b, "configuration %d", i);
    }

    /* deleting, in order: the scene, then the robots, then the mesh */
    cr_assert_eq(tdm_scene_delete(c, sid), 0, "%s", tdm_client_errstr(c));
    expect_server_error(c, tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, 1, 0, after, NULL),
                        "Query on a deleted scene", TDM_SERVER_UNKNOWN_SCENE, "scene_id", -1, NULL);
    cr_assert_eq(tdm_robot_delete(c, rid), 0, "%s", tdm_client_errstr(c));
    expect_server_error(c, tdm_robot_delete(c, rid), "RobotDelete twice", TDM_SERVER_UNKNOWN_ROBOT, "robot_id", -1,
                        NULL);
    cr_assert_eq(tdm_robot_delete(c, rid2), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_mesh_delete(c, bar), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(dmn_count_files(&D, "robots"), 0);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 0);
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0);
    cr_assert_eq(n, 0);
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
}

/* The id an ephemeral scene gets (proto/README.md, "Ephemeral scenes"), computed here apart from
 * the server's code: SHA-256 of "tandem-ephemeral-v1", a zero byte and the stored scene's id. */
static void ephemeral_id_of(const uint8_t stored[32], uint8_t out[32])
{
    static const char magic[] = "tandem-ephemeral-v1";
    uint8_t buf[sizeof magic + 32];
    memcpy(buf, magic, sizeof magic);
    memcpy(buf + sizeof magic, stored, 32);
    unsigned int n = 0;
    cr_assert(EVP_Digest(buf, sizeof buf, out, &n, EVP_sha256(), NULL) && n == 32);
}

/* Ephemeral robot scenes (a planner's per-request scenes): answered as the stored one, under an id
 * of their own, never written to the data directory (no file on put, nothing to remove on
 * delete), and gone after a restart, while the stored scene of the same YAML stays. */
Test(robotd, ephemeral_scenes_are_never_written)
{
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[32], eid[32], eid2[32], want[32];
    int created = -1;
    cr_assert_eq(tdm_robot_put_files(c, NULL, dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), rid, &created, NULL),
                 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_robot_scene_put_file(c, "stored", rid, dmn_path(&D, "scene.yaml"), sid, &created, NULL), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(created, 1);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 1);

    tdm_client_set_ephemeral_scenes(c, 1);
    tdm_robot_scene_info *rsi = NULL;
    cr_assert_eq(tdm_robot_scene_put_file(c, "ephemeral", rid, dmn_path(&D, "scene.yaml"), eid, &created, &rsi), 0,
                 "%s", tdm_client_errstr(c));
    cr_assert_eq(created, 1, "the ephemeral scene is another scene than the stored one");
    ephemeral_id_of(sid, want);
    cr_assert(!memcmp(eid, want, 32), "the ephemeral scene's id is not SHA-256(magic, 0, stored id)");
    cr_assert_eq(rsi->n_objects, N_OBJ);
    tdm_robot_scene_info_free(rsi);
    cr_assert_eq(tdm_robot_scene_put_file(c, "again", rid, dmn_path(&D, "scene.yaml"), eid2, &created, NULL), 0);
    cr_assert_eq(created, 0);
    cr_assert(!memcmp(eid, eid2, 32));
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 1, "an ephemeral scene was written");
    tdm_client_set_ephemeral_scenes(c, 0);
    /* SceneList says which is which */
    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    Tandem__V1__SceneList list_rq = TANDEM__V1__SCENE_LIST__INIT;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = 2;
    rq.body_case = TANDEM__V1__REQUEST__BODY_SCENE_LIST;
    rq.scene_list = &list_rq;
    Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_SCENE_LIST);
    cr_assert_eq(rep->scene_list->n_scenes, 2);
    for (size_t i = 0; i < rep->scene_list->n_scenes; i++) {
        const Tandem__V1__SceneInfo *si = rep->scene_list->scenes[i];
        cr_assert_eq(si->scene_id.len, 32);
        int is_eph = !memcmp(si->scene_id.data, eid, 32);
        cr_assert(is_eph || !memcmp(si->scene_id.data, sid, 32));
        cr_assert_eq(si->ephemeral, is_eph, "SceneInfo.ephemeral %d for the %s scene", si->ephemeral,
                     is_eph ? "ephemeral" : "stored");
    }
    tandem__v1__reply__free_unpacked(rep, NULL);
    close(fd);

    /* the same answers as the stored scene's */
    enum { NQ = 64 };
    gen_rng g = {seed ^ 0xe9};
    double q[NQ * N_J];
    for (int i = 0; i < NQ; i++) arm_fixture_random_config(&g, q + i * N_J);
    tdm_query_result a[NQ], b[NQ];
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q, N_J, NQ, 0, a, NULL), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_query_configs(c, eid, TDM_QUERY_CONTACTS, q, N_J, NQ, 0, b, NULL), 0, "%s", tdm_client_errstr(c));
    int colliding = 0;
    for (int i = 0; i < NQ; i++) {
        cr_assert(a[i].colliding == b[i].colliding && a[i].contacts == b[i].contacts &&
                      a[i].object_a == b[i].object_a && a[i].object_b == b[i].object_b,
                  "configuration %d: the ephemeral scene answers otherwise", i);
        colliding += a[i].colliding;
    }
    cr_assert(colliding > 0 && colliding < NQ, "%d of %d colliding: the comparison proves little", colliding, NQ);
    tdm_robot_info *rl;
    size_t n;
    cr_assert_eq(tdm_robot_list(c, &rl, &n), 0);
    cr_assert(n == 1 && rl[0].scenes == 2, "the robot counts %u scenes", n ? rl[0].scenes : 0);
    tdm_robot_info_free(rl);

    /* deleted: refused from then on, no file touched, and put again as new */
    cr_assert_eq(tdm_scene_delete(c, eid), 0, "%s", tdm_client_errstr(c));
    expect_server_error(c, tdm_query_configs(c, eid, TDM_QUERY_BOOL, q, N_J, 1, 0, b, NULL),
                        "Query on a deleted ephemeral scene", TDM_SERVER_UNKNOWN_SCENE, "scene_id", -1, NULL);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 1);
    tdm_client_set_ephemeral_scenes(c, 1);
    cr_assert_eq(tdm_robot_scene_put_file(c, "back", rid, dmn_path(&D, "scene.yaml"), eid2, &created, NULL), 0);
    cr_assert(created == 1 && !memcmp(eid, eid2, 32));
    tdm_client_free(c);

    /* a restart: the stored scene is back, the ephemeral one is not */
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
    dmn_start(&D, NULL);
    c = lib_connect(D.unix_addr);
    tdm_scene_info *sl;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0);
    cr_assert(n == 1 && !memcmp(sl[0].scene_id, sid, 32), "%zu scenes after the restart", n);
    tdm_scene_list_free(sl);
    expect_server_error(c, tdm_query_configs(c, eid, TDM_QUERY_BOOL, q, N_J, 1, 0, b, NULL),
                        "Query on an ephemeral scene after a restart", TDM_SERVER_UNKNOWN_SCENE, "scene_id", -1, NULL);
    cr_assert_eq(tdm_robot_list(c, &rl, &n), 0);
    cr_assert(n == 1 && rl[0].scenes == 1, "the robot counts %u scenes after the restart", n ? rl[0].scenes : 0);
    tdm_robot_info_free(rl);
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q, N_J, NQ, 0, b, NULL), 0, "%s", tdm_client_errstr(c));
    for (int i = 0; i < NQ; i++) cr_assert_eq(b[i].contacts, a[i].contacts, "configuration %d after the restart", i);
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

/* A URDF with one element replaced: `from` (which must occur in urdf_text) by `to`. */
static char *urdf_with(const char *from, const char *to)
{
    const char *p = strstr(urdf_text, from);
    cr_assert_not_null(p, "'%s' is not in the URDF", from);
    size_t a = (size_t)(p - urdf_text), lf = strlen(from), lt = strlen(to), n = strlen(urdf_text);
    char *s = malloc(n - lf + lt + 1);
    memcpy(s, urdf_text, a);
    memcpy(s + a, to, lt);
    memcpy(s + a + lt, p + lf, n - a - lf + 1);
    return s;
}

Test(robotd, bad_robot_stores_nothing)
{
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t bar[32], rid[32], sid[32], nowhere[32];
    put_bar(c, bar);
    memset(nowhere, 0xab, 32);
    tdm_robot_mesh_ref ref = {"meshes/bar.obj", {0}};
    memcpy(ref.mesh_id, bar, 32);

    /* a joint naming an unknown parent link (line 4 holds joint j1) */
    char *u = urdf_with("<parent link='base_link'/>", "<parent link='nope'/>");
    expect_server_error(c, tdm_robot_put(c, "x", u, NULL, &ref, 1, rid, NULL, NULL), "unknown link",
                        TDM_SERVER_BAD_ROBOT, "urdf", -1, "urdf:4: joint 'j1'");
    cr_assert(strstr(tdm_client_server_error(c)->message, "nope") != NULL, "%s", tdm_client_server_error(c)->message);
    free(u);
    /* a mimic of an unknown joint */
    u = urdf_with("<limit lower='-2.6' upper='2.6'/>", "<limit lower='-2.6' upper='2.6'/><mimic joint='jx'/>");
    expect_server_error(c, tdm_robot_put(c, "x", u, NULL, &ref, 1, rid, NULL, NULL), "mimic of an unknown joint",
                        TDM_SERVER_BAD_ROBOT, "urdf", -1, "joint 'j2'");
    cr_assert(strstr(tdm_client_server_error(c)->message, "jx") != NULL, "%s", tdm_client_server_error(c)->message);
    free(u);
    /* a cycle: link1's joint made a child of link3 */
    u = urdf_with("<parent link='base_link'/><child link='link1'/>", "<parent link='link3'/><child link='link1'/>");
    expect_server_error(c, tdm_robot_put(c, "x", u, NULL, &ref, 1, rid, NULL, NULL), "a cycle", TDM_SERVER_BAD_ROBOT,
                        "urdf", -1, "urdf:");
    cr_assert(strstr(tdm_client_server_error(c)->message, "cycle") || strstr(tdm_client_server_error(c)->message,
                                                                             "root"),
              "%s", tdm_client_server_error(c)->message);
    free(u);
    /* a mesh filename missing from the table (line 11 holds link2's mesh collision) */
    expect_server_error(c, tdm_robot_put(c, "x", urdf_text, NULL, NULL, 0, rid, NULL, NULL), "no table entry",
                        TDM_SERVER_UNKNOWN_MESH, "meshes", -1,
                        "urdf:11: link 'link2' <collision>: mesh 'meshes/bar.obj'");
    /* a table entry naming a mesh id not stored */
    tdm_robot_mesh_ref bad = {"meshes/bar.obj", {0}};
    memcpy(bad.mesh_id, nowhere, 32);
    expect_server_error(c, tdm_robot_put(c, "x", urdf_text, NULL, &bad, 1, rid, NULL, NULL), "unknown mesh id",
                        TDM_SERVER_UNKNOWN_MESH, "meshes", 0, "no stored mesh");
    /* a table entry the URDF does not use */
    tdm_robot_mesh_ref two[2] = {{"meshes/bar.obj", {0}}, {"meshes/other.stl", {0}}};
    memcpy(two[0].mesh_id, bar, 32);
    memcpy(two[1].mesh_id, bar, 32);
    expect_server_error(c, tdm_robot_put(c, "x", urdf_text, NULL, two, 2, rid, NULL, NULL), "unused entry",
                        TDM_SERVER_BAD_REQUEST, "meshes", 1, "not used by the URDF");
    /* an SRDF naming an unknown link */
    expect_server_error(c,
                        tdm_robot_put(c, "x", urdf_text,
                                      "<robot name='arm'>\n<disable_collisions link1='link1' link2='zzz'/></robot>",
                                      &ref, 1, rid, NULL, NULL),
                        "bad SRDF", TDM_SERVER_BAD_ROBOT, "srdf", -1, "srdf:2:");
    /* malformed XML */
    expect_server_error(c, tdm_robot_put(c, "x", "<robot name='a'><link name='l'></robot>", NULL, NULL, 0, rid, NULL,
                                         NULL),
                        "malformed XML", TDM_SERVER_BAD_ROBOT, "urdf", -1, "malformed XML");
    /* nothing was stored, and the mesh is free to go */
    tdm_robot_info *list;
    size_t n;
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0);
    cr_assert_eq(n, 0, "%zu robots stored after refused puts", n);
    cr_assert_eq(dmn_count_files(&D, "robots"), 0);

    /* robot scenes: an unknown robot, a bad planning scene */
    expect_server_error(c, tdm_robot_scene_put(c, "x", nowhere, scene_text, sid, NULL, NULL), "unknown robot",
                        TDM_SERVER_UNKNOWN_ROBOT, "robot_id", -1, NULL);
    cr_assert_eq(tdm_robot_put(c, "arm", urdf_text, srdf_text, &ref, 1, rid, NULL, NULL), 0, "%s",
                 tdm_client_errstr(c));
    expect_server_error(c, tdm_robot_scene_put(c, "x", rid, "world:\n  collision_objects:\n    - id: a\n"
                                                            "      primitives: [{type: box, dimensions: [1, 2]}]\n"
                                                            "      primitive_poses: [{position: [0, 0, 0], "
                                                            "orientation: [0, 0, 0, 1]}]\n",
                                               sid, NULL, NULL),
                        "bad planning scene", TDM_SERVER_BAD_ROBOT, "world", -1, "world:4:");
    /* an object in a frame the scene and the robot lack (robot/robot_scene.h, "Frames") */
    expect_server_error(c, tdm_robot_scene_put(c, "x", rid, "world:\n  collision_objects:\n    - id: a\n"
                                                            "      header: {frame_id: lnk1}\n"
                                                            "      primitives: [{type: box, dimensions: [1, 2, 3]}]\n"
                                                            "      primitive_poses: [{position: [0, 0, 0], "
                                                            "orientation: [0, 0, 0, 1]}]\n",
                                               sid, NULL, NULL),
                        "unknown frame", TDM_SERVER_BAD_ROBOT, "world", -1,
                        "world object 'a': header frame 'lnk1' is unknown");
    tdm_scene_info *sl;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0);
    cr_assert_eq(n, 0);
    tdm_scene_list_free(sl);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 0);
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(list[0].scenes, 0, "a refused scene must not keep its count on the robot");
    tdm_robot_info_free(list);
    cr_assert_eq(tdm_robot_delete(c, rid), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_mesh_delete(c, bar), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
}

/* A URDF with a comment of `pad` bytes on its <robot> tag's line (its lines keep their numbers). */
static char *padded(const char *urdf, size_t pad)
{
    const char *tag = strstr(urdf, "<robot");
    const char *end = tag ? strchr(tag, '>') : NULL;
    cr_assert(end);
    size_t head = (size_t)(end + 1 - urdf), n = strlen(urdf);
    char *s = malloc(n + pad + 8);
    cr_assert(s);
    memcpy(s, urdf, head);
    memcpy(s + head, "<!--", 4);
    memset(s + head + 4, 'x', pad);
    memcpy(s + head + 4 + pad, "-->", 3);
    memcpy(s + head + 7 + pad, end + 1, n - head + 1);
    return s;
}

/* RobotPuts of 256 KiB of URDF or more are parsed on libuv's pool, not on the loop (request_robot.c):
 * the answers are those of the loop's parse. A URDF padded with a 300 KB comment (its lines keep
 * their numbers) is refused with the same code, field, index and line as bad_robot_stores_nothing's
 * for an unknown link, a missing table entry, an unknown mesh id, an unused entry (its index the
 * request's, not the sorted table's) and malformed XML; a sound one is stored with the same joints,
 * links and elements as the unpadded robot, and a second put of it finds it. With TDM_DECODE_APART=0
 * (parsed on the loop) the same. */
static void large_urdfs(void)
{
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t bar[32], rid[32], rid_small[32], nowhere[32];
    put_bar(c, bar);
    memset(nowhere, 0xab, 32);
    tdm_robot_mesh_ref ref = {"meshes/bar.obj", {0}};
    memcpy(ref.mesh_id, bar, 32);
    enum { PAD = 300000 };
    char *u0 = urdf_with("<parent link='base_link'/>", "<parent link='nope'/>"), *u = padded(u0, PAD);
    expect_server_error(c, tdm_robot_put(c, "x", u, NULL, &ref, 1, rid, NULL, NULL), "large: unknown link",
                        TDM_SERVER_BAD_ROBOT, "urdf", -1, "urdf:4: joint 'j1'");
    free(u);
    free(u0);
    char *big = padded(urdf_text, PAD);
    expect_server_error(c, tdm_robot_put(c, "x", big, NULL, NULL, 0, rid, NULL, NULL), "large: no table entry",
                        TDM_SERVER_UNKNOWN_MESH, "meshes", -1,
                        "urdf:11: link 'link2' <collision>: mesh 'meshes/bar.obj'");
    tdm_robot_mesh_ref bad = {"meshes/bar.obj", {0}};
    memcpy(bad.mesh_id, nowhere, 32);
    expect_server_error(c, tdm_robot_put(c, "x", big, NULL, &bad, 1, rid, NULL, NULL), "large: unknown mesh id",
                        TDM_SERVER_UNKNOWN_MESH, "meshes", 0, "no stored mesh");
    /* the unused entry first in the request, last in the sorted table */
    tdm_robot_mesh_ref two[2] = {{"meshes/zz_other.stl", {0}}, {"meshes/bar.obj", {0}}};
    memcpy(two[0].mesh_id, bar, 32);
    memcpy(two[1].mesh_id, bar, 32);
    expect_server_error(c, tdm_robot_put(c, "x", big, NULL, two, 2, rid, NULL, NULL), "large: unused entry",
                        TDM_SERVER_BAD_REQUEST, "meshes", 0, "not used by the URDF");
    u = padded("<robot name='a'><link name='l'></robot>", PAD);
    expect_server_error(c, tdm_robot_put(c, "x", u, NULL, NULL, 0, rid, NULL, NULL), "large: malformed XML",
                        TDM_SERVER_BAD_ROBOT, "urdf", -1, "malformed XML");
    free(u);
    /* not UTF-8: a byte 0xff in the URDF's comment, then in the SRDF's (checked apart too) */
    char *nu = padded(urdf_text, PAD);
    nu[strstr(nu, "<!--") - nu + 10] = (char)0xff;
    expect_server_error(c, tdm_robot_put(c, "x", nu, srdf_text, &ref, 1, rid, NULL, NULL), "large: URDF not UTF-8",
                        TDM_SERVER_BAD_REQUEST, "urdf", -1, "urdf is not valid UTF-8");
    char *ns = malloc(strlen(srdf_text) + 9);
    cr_assert(ns);
    sprintf(ns, "%s<!--\xff-->", srdf_text);
    expect_server_error(c, tdm_robot_put(c, "x", big, ns, &ref, 1, rid, NULL, NULL), "large: SRDF not UTF-8",
                        TDM_SERVER_BAD_REQUEST, "srdf", -1, "srdf is not valid UTF-8");
    free(ns);
    free(nu);
    tdm_robot_info *list;
    size_t n;
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0);
    cr_assert_eq(n, 0, "%zu robots stored after refused puts", n);
    tdm_robot_info_free(list);
    /* sound: the same robot as the unpadded one */
    tdm_robot_info *small = NULL, *large = NULL;
    int created = -1;
    cr_assert_eq(tdm_robot_put(c, "small", urdf_text, srdf_text, &ref, 1, rid_small, NULL, &small), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(tdm_robot_put(c, "large", big, srdf_text, &ref, 1, rid, &created, &large), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(created, 1);
    cr_assert(memcmp(rid, rid_small, 32) != 0, "the padded text is other content");
    cr_assert(large->n_joints == small->n_joints && large->n_links == small->n_links &&
                  large->n_elements == small->n_elements,
              "large: %zu joints, %u links, %u elements; small: %zu, %u, %u", large->n_joints, large->n_links,
              large->n_elements, small->n_joints, small->n_links, small->n_elements);
    for (size_t i = 0; i < small->n_joints; i++)
        cr_assert_str_eq(large->joints[i].name, small->joints[i].name);
    tdm_robot_info_free(small);
    tdm_robot_info_free(large);
    uint8_t again[32];
    cr_assert_eq(tdm_robot_put(c, "large", big, srdf_text, &ref, 1, again, &created, NULL), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert(created == 0 && !memcmp(again, rid, 32), "the second put finds it");
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0);
    cr_assert_eq(n, 2);
    tdm_robot_info_free(list);
    free(big);
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
}

Test(robotd, large_urdfs_parsed_apart_answer_as_on_the_loop) { large_urdfs(); }

Test(robotd, large_urdfs_parsed_on_the_loop)
{
    cr_assert_eq(setenv("TDM_DECODE_APART", "0", 1), 0);
    large_urdfs();
}

#define N_CFG 1200

Test(robotd, configs_equal_offline)
{
    offline o;
    offline_open(&o);
    gen_rng g = {seed ^ 0x22};
    double *q = malloc(sizeof *q * N_CFG * N_J);
    for (int i = 0; i < N_CFG; i++) arm_fixture_random_config(&g, q + i * N_J);
    tdm_sched_result *want = calloc(N_CFG, sizeof *want);
    tdm_query_result *got = calloc(N_CFG, sizeof *got);
    cr_assert(q && want && got);

    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.tcp_addr);
    uint8_t rid[32], sid[32];
    put_arm(c, rid);
    tdm_robot_scene_info *si;
    cr_assert_eq(tdm_robot_scene_put_file(c, NULL, rid, dmn_path(&D, "scene.yaml"), sid, NULL, &si), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(si->n_checks, o.rs->scene->n_checks, "checked pairs: server %u, offline %u", si->n_checks,
                 o.rs->scene->n_checks);
    tdm_robot_scene_info_free(si);

    /* contacts mode: every field equal (the first pair is the smallest colliding one) */
    offline_run(&o, q, N_CFG, TDM_MODE_CONTACTS, 1000000, want, NULL);
    /* in two requests: one under the offload threshold (FK on the loop), one over it */
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q, N_J, 10, 0, got, NULL), 0, "%s",
                 tdm_client_errstr(c));
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q + 10 * N_J, N_J, N_CFG - 10, 0, got + 10, NULL), 0,
                 "%s", tdm_client_errstr(c));
    size_t colliding = 0;
    for (int i = 0; i < N_CFG; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding, "contacts, configuration %d", i);
        cr_assert_eq(got[i].contacts, want[i].contacts, "contacts, configuration %d: %u, offline %u", i,
                     got[i].contacts, want[i].contacts);
        cr_assert_eq(got[i].truncated, want[i].truncated, "configuration %d", i);
        if (want[i].colliding) {
            cr_assert_eq(got[i].object_a, want[i].object_a, "configuration %d", i);
            cr_assert_eq(got[i].object_b, want[i].object_b, "configuration %d", i);
        }
        colliding += want[i].colliding != 0;
    }
    cr_assert(colliding > N_CFG / 10 && colliding < N_CFG - N_CFG / 10, "%zu of %d colliding: the test needs both",
              colliding, N_CFG);

    /* bool mode: the same verdicts; the pair named is a checked pair that collides */
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, N_CFG, 0, got, NULL), 0, "%s",
                 tdm_client_errstr(c));
    enum { CAP = 4096 };
    tdm_sched_contact *pairs = malloc(sizeof *pairs * CAP);
    for (int i = 0; i < N_CFG; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding != 0, "bool, configuration %d", i);
        if (!got[i].colliding) continue;
        cr_assert(got[i].object_a < got[i].object_b && got[i].object_b < N_OBJ);
        cr_assert_eq(tdm_robot_scene_allowed(o.rs, got[i].object_a, got[i].object_b), 0,
                     "configuration %d: pair (%u, %u) is not checked", i, got[i].object_a, got[i].object_b);
        tdm_sched_result one;
        offline_run(&o, q + i * N_J, 1, TDM_MODE_CONTACTS, CAP, &one, pairs);
        int seen = 0;
        for (uint32_t k = 0; k < one.n_pairs && !seen; k++)
            seen = pairs[k].object_a == got[i].object_a && pairs[k].object_b == got[i].object_b;
        cr_assert(seen || one.truncated, "configuration %d: (%u, %u) does not collide offline", i, got[i].object_a,
                  got[i].object_b);
    }
    free(pairs);

    /* bad configurations: the field and the index of the number */
    q[5 * N_J + 2] = NAN;
    expect_server_error(c, tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, 8, 0, got, NULL), "NaN (on the loop)",
                        TDM_SERVER_NON_FINITE, "configs", 17, "joint 'j3'");
    q[5 * N_J + 2] = 0.05;
    q[100 * N_J] = INFINITY;
    expect_server_error(c, tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, 200, 0, got, NULL),
                        "Inf (converted off the loop)", TDM_SERVER_NON_FINITE, "configs", 300, "query 100");
    q[100 * N_J] = 0;
    q[300 * N_J + 1] = NAN;
    expect_server_error(c, tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, 400, 0, got, NULL),
                        "NaN (a batch run as configurations)", TDM_SERVER_NON_FINITE, "configs", 901, "query 300");
    q[300 * N_J + 1] = 0;
    expect_server_error(c, tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, 2, 4, 0, got, NULL), "wrong joint count",
                        TDM_SERVER_BAD_REQUEST, "configs", -1, "multiple of 3");
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
    free(q);
    free(want);
    free(got);
    offline_close(&o);
}

/* Answers of scene sid equal the offline reference's (contacts mode). */
static void expect_offline(tdm_client *c, const uint8_t *sid, const double *q, int n, const tdm_sched_result *want,
                           const char *what)
{
    tdm_query_result *got = calloc((size_t)n, sizeof *got);
    cr_assert_not_null(got);
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_CONTACTS, q, N_J, (size_t)n, 0, got, NULL), 0, "%s: %s", what,
                 tdm_client_errstr(c));
    for (int i = 0; i < n; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding, "%s, configuration %d", what, i);
        cr_assert_eq(got[i].contacts, want[i].contacts, "%s, configuration %d: %u, offline %u", what, i,
                     got[i].contacts, want[i].contacts);
        if (want[i].colliding) {
            cr_assert_eq(got[i].object_a, want[i].object_a, "%s, configuration %d", what, i);
            cr_assert_eq(got[i].object_b, want[i].object_b, "%s, configuration %d", what, i);
        }
    }
    free(got);
}

/* The robot scenes of one robot share its element trees (built by the first scene,
 * kept with the robot): a scene answers right after another one of the robot is
 * deleted, a scene put again after that too, and both after a restart (the
 * loader builds them the same way). */
/* The offline engine opened, n random configurations (the suite's seed ^ salt) and its
 * contacts-mode answers for them (both malloc'd). */
static void offline_random(offline *o, uint64_t salt, int n, double **q, tdm_sched_result **want)
{
    offline_open(o);
    gen_rng g = {seed ^ salt};
    *q = malloc(sizeof **q * (size_t)n * N_J);
    *want = calloc((size_t)n, sizeof **want);
    cr_assert(*q && *want);
    for (int i = 0; i < n; i++) arm_fixture_random_config(&g, *q + i * N_J);
    offline_run(o, *q, n, TDM_MODE_CONTACTS, 1000000, *want, NULL);
}

/* A world with a YAML comment of `pad` bytes after it (its lines keep their numbers). */
static char *padded_world(const char *world, size_t pad)
{
    size_t n = strlen(world);
    char *s = malloc(n + pad + 5);
    cr_assert(s);
    memcpy(s, world, n);
    memcpy(s + n, "\n# ", 3);
    memset(s + n + 3, 'x', pad);
    memcpy(s + n + 3 + pad, "\n", 2);
    return s;
}

/* RobotScenePuts of 256 KiB of world or more have their canonical content made and hashed on libuv's
 * pool (request_robot.c): the answers are those of the loop's. A world padded with a 300 KB comment
 * is refused for an unknown robot and for a bad planning scene with the same code, field and line
 * as bad_robot_stores_nothing's; a sound one is stored, answers as the offline engine, and a second
 * put of it finds it; nothing is left of the refused ones. With TDM_DECODE_APART=0 the same. */
static void large_worlds(void)
{
    enum { N = 200, PAD = 300000 };
    offline o;
    double *q;
    tdm_sched_result *want;
    offline_random(&o, 0x34, N, &q, &want);
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], nowhere[32], sid[32], again[32];
    memset(nowhere, 0xab, 32);
    char *big = padded_world(scene_text, PAD);
    expect_server_error(c, tdm_robot_scene_put(c, "x", nowhere, big, sid, NULL, NULL), "large: unknown robot",
                        TDM_SERVER_UNKNOWN_ROBOT, "robot_id", -1, NULL);
    put_arm(c, rid);
    char *bad = padded_world("world:\n  collision_objects:\n    - id: a\n"
                             "      primitives: [{type: box, dimensions: [1, 2]}]\n"
                             "      primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n",
                             PAD);
    expect_server_error(c, tdm_robot_scene_put(c, "x", rid, bad, sid, NULL, NULL), "large: bad planning scene",
                        TDM_SERVER_BAD_ROBOT, "world", -1, "world:4:");
    free(bad);
    tdm_scene_info *sl;
    size_t n;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0);
    cr_assert_eq(n, 0, "%zu scenes after refused puts", n);
    tdm_scene_list_free(sl);
    int created = -1;
    cr_assert_eq(tdm_robot_scene_put(c, "large", rid, big, sid, &created, NULL), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(created, 1);
    expect_offline(c, sid, q, N, want, "the large world");
    cr_assert_eq(tdm_robot_scene_put(c, "large", rid, big, again, &created, NULL), 0, "%s", tdm_client_errstr(c));
    cr_assert(created == 0 && !memcmp(again, sid, 32), "the second put finds it");
    cr_assert_eq(tdm_scene_delete(c, sid), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_robot_delete(c, rid), 0, "%s", tdm_client_errstr(c));
    free(big);
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
    free(q);
    free(want);
    offline_close(&o);
}

Test(robotd, large_worlds_made_apart_answer_as_on_the_loop) { large_worlds(); }

Test(robotd, large_worlds_made_on_the_loop)
{
    cr_assert_eq(setenv("TDM_DECODE_APART", "0", 1), 0);
    large_worlds();
}

Test(robotd, scenes_of_one_robot_share_its_trees)
{
    enum { N = 300 };
    offline o;
    double *q;
    tdm_sched_result *want;
    offline_random(&o, 0x33, N, &q, &want);
    size_t colliding = 0;
    for (int i = 0; i < N; i++) colliding += want[i].colliding != 0;
    cr_assert(colliding > 0 && colliding < N, "%zu of %d colliding: the test needs both", colliding, N);

    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.tcp_addr);
    uint8_t rid[32], a[32], b[32];
    put_arm(c, rid);
    /* the same world in two texts: two scenes */
    size_t len = strlen(scene_text);
    char *other = malloc(len + 32);
    cr_assert_not_null(other);
    snprintf(other, len + 32, "%s\n# the same world again\n", scene_text);
    cr_assert_eq(tdm_robot_scene_put(c, "a", rid, scene_text, a, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_robot_scene_put(c, "b", rid, other, b, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    cr_assert_neq(memcmp(a, b, 32), 0, "two texts, two scenes");
    expect_offline(c, a, q, N, want, "scene a");
    expect_offline(c, b, q, N, want, "scene b");
    cr_assert_eq(tdm_scene_delete(c, a), 0, "%s", tdm_client_errstr(c));
    expect_offline(c, b, q, N, want, "scene b after a's delete");
    cr_assert_eq(tdm_robot_scene_put(c, "a", rid, scene_text, a, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    expect_offline(c, a, q, N, want, "scene a put again");
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);

    dmn_start(&D, NULL); /* both loaded from the data directory */
    c = lib_connect(D.tcp_addr);
    expect_offline(c, a, q, N, want, "scene a after a restart");
    expect_offline(c, b, q, N, want, "scene b after a restart");
    cr_assert_eq(tdm_scene_delete(c, b), 0, "%s", tdm_client_errstr(c));
    expect_offline(c, a, q, N, want, "scene a after b's delete");
    cr_assert_eq(tdm_scene_delete(c, a), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_robot_delete(c, rid), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
    free(other);
    free(q);
    free(want);
    offline_close(&o);
}

/* ---- objects held by the arm (tests/arm_oracle.h) ---- */

#define HELD arm_held_boxes

/* arm_held_scene's object attached to link `link`, in link2's frame, touch_links `touch`. */
static char *held_world(const char *link, const char *touch)
{
    char *t = arm_held_scene(link, "link2", "", touch, "");
    cr_assert_not_null(t);
    return t;
}

/* Ids of the held scenes: 0 base_link, 1 link1, 2 link2, 3 and 4 the held shapes, 5 the post.
 * Is (a, b), a < b, never checked? The SRDF's pairs, the held shapes against link2 (their link)
 * and each other, and against link1 when it is a touch link. */
static int held_never_checked(uint32_t a, uint32_t b, int link1_touch)
{
    if ((a == 0 && b == 1) || (a == 1 && b == 2)) return 1;
    if (b == 3 || b == 4) return a == 2 || a == 3 || (a == 1 && link1_touch);
    return 0;
}

/* An object attached to link2 through tandemd: RobotScenePutReply's objects say which ids are its
 * shapes (movable 2, link2, the object's id, the shape's index) and the post's id comes after
 * them; 1000 random configurations, bool mode, answer as arm_oracle_holding (those within 1e-7 of
 * touching set aside), with link1 checked against the held shapes and then a touch link; some
 * configurations collide only because of the held object (their answers name a held shape), some
 * only because the hanger meets link1; a named pair is never one that is not checked. An attached
 * object whose link_name names no link of the robot: BAD_ROBOT naming the object, nothing stored. */
Test(robotd, attached_objects_answer_as_the_oracle)
{
    enum { N = 1000 };
    gen_rng g = {seed ^ 0xa77ull};
    double *q = malloc(sizeof *q * 2 * N);
    tdm_query_result *got = calloc(N, sizeof *got);
    cr_assert(q && got);
    for (int i = 0; i < N; i++) {
        q[2 * i] = gen_range(&g, -3.14, 3.14);
        q[2 * i + 1] = gen_range(&g, -2.6, 2.6);
    }
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[2][32];
    cr_assert_eq(tdm_robot_put(c, "arm2", arm_urdf_text, arm_srdf_text, NULL, 0, rid, NULL, NULL), 0, "%s",
                 tdm_client_errstr(c));
    static const struct {
        const char *touch;
        int link1_touch;
        uint32_t n_checks; /* movable pairs (0, 2), (0, 3), (0, 4), (1, 3), (1, 4) less the touch
                              link's, and the five movable objects against the post */
    } v[2] = {{"[]", 0, 10}, {"[link1]", 1, 8}};
    for (int k = 0; k < 2; k++) {
        char *yaml = held_world("link2", v[k].touch);
        tdm_robot_scene_info *si = NULL;
        int created = -1;
        cr_assert_eq(tdm_robot_scene_put(c, "held", rid, yaml, sid[k], &created, &si), 0, "touch_links %s: %s",
                     v[k].touch, tdm_client_errstr(c));
        free(yaml);
        cr_assert_eq(created, 1);
        cr_assert_eq(si->n_joints, 2);
        cr_assert_eq(si->n_objects, 6, "three elements, the held object's two boxes, the post");
        static const char *const links[3] = {"base_link", "link1", "link2"};
        for (uint32_t i = 0; i < 3; i++) {
            cr_assert_eq(si->objects[i].object_id, i);
            cr_assert_eq(si->objects[i].movable, 1, "object %u: an element", i);
            cr_assert_str_eq(si->objects[i].link, links[i]);
            cr_assert_eq(si->objects[i].element, 0);
            cr_assert_str_eq(si->objects[i].world_object, "");
        }
        for (uint32_t i = 3; i < 5; i++) {
            cr_assert_eq(si->objects[i].object_id, i);
            cr_assert_eq(si->objects[i].movable, 2, "object %u: movable %d, not an attached shape", i,
                         si->objects[i].movable);
            cr_assert_str_eq(si->objects[i].link, "link2");
            cr_assert_str_eq(si->objects[i].world_object, "held");
            cr_assert_eq(si->objects[i].shape, i - 3);
            cr_assert_eq(si->objects[i].element, 0);
        }
        cr_assert_eq(si->objects[5].object_id, 5);
        cr_assert_eq(si->objects[5].movable, 0);
        cr_assert_str_eq(si->objects[5].world_object, "post");
        cr_assert_eq(si->objects[5].shape, 0);
        cr_assert_str_eq(si->objects[5].link, "");
        cr_assert_eq(si->n_checks, v[k].n_checks, "touch_links %s: %u checked pairs", v[k].touch, si->n_checks);
        tdm_robot_scene_info_free(si);

        cr_assert_eq(tdm_query_configs(c, sid[k], TDM_QUERY_BOOL, q, 2, N, 0, got, NULL), 0, "%s",
                     tdm_client_errstr(c));
        size_t colliding = 0, held_only = 0, link1_only = 0, near = 0;
        for (int i = 0; i < N; i++) {
            const double *qi = q + 2 * i;
            int lo = arm_oracle_holding(qi, HELD, 2, !v[k].link1_touch, 1, -1e-7),
                hi = arm_oracle_holding(qi, HELD, 2, !v[k].link1_touch, 1, 1e-7);
            if (lo != hi) { /* within 1e-7 of touching: float rounding may go either way */
                near++;
                continue;
            }
            cr_assert_eq(got[i].colliding, lo, "seed=%llu touch_links %s, configuration %d (%.17g, %.17g): got %u, "
                         "oracle %d", (unsigned long long)seed, v[k].touch, i, qi[0], qi[1], got[i].colliding, lo);
            if (!lo) continue;
            uint32_t a = got[i].object_a, b = got[i].object_b;
            cr_assert(a < b && b < 6, "configuration %d: pair (%u, %u)", i, a, b);
            cr_assert(!held_never_checked(a, b, v[k].link1_touch), "touch_links %s, configuration %d: (%u, %u) is "
                      "never checked", v[k].touch, i, a, b);
            colliding++;
            if (!arm_oracle_holding(qi, HELD, 0, 0, 0, 1e-7)) { /* the arm alone is clear: the held object collides */
                held_only++;
                cr_assert(a == 3 || a == 4 || b == 3 || b == 4, "touch_links %s, configuration %d: only the held "
                          "object collides, the answer names (%u, %u)", v[k].touch, i, a, b);
            }
            /* colliding only because link1 is checked: free when it is a touch link */
            link1_only += !v[k].link1_touch && !arm_oracle_holding(qi, HELD, 2, 0, 1, -1e-7) &&
                          !arm_oracle_holding(qi, HELD, 2, 0, 1, 1e-7);
        }
        cr_log_info("touch_links %s: %zu of %d colliding, %zu by the held boxes alone, %zu by link1 alone, %zu within "
                    "1e-7 of touching", v[k].touch, colliding, N, held_only, link1_only, near);
        cr_assert(near < N / 50, "%zu configurations within 1e-7 of touching", near);
        cr_assert(colliding > N / 10 && colliding < N - N / 10, "%zu of %d colliding: the test needs both", colliding,
                  N);
        cr_assert(held_only > 0, "touch_links %s: no configuration collides only because of the held object",
                  v[k].touch);
        if (!v[k].link1_touch) cr_assert(link1_only > 0, "the hanger never meets link1 alone: touch_links untested");
    }

    /* link_name naming no link: refused, naming the object; nothing stored */
    tdm_scene_info *sl;
    size_t n;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 2);
    tdm_scene_list_free(sl);
    int files = dmn_count_files(&D, "robot-scenes");
    cr_assert_eq(files, 2);
    char *yaml = held_world("hand2", "[link1]");
    uint8_t bad[32];
    expect_server_error(c, tdm_robot_scene_put(c, "bad", rid, yaml, bad, NULL, NULL), "link_name of no link",
                        TDM_SERVER_BAD_ROBOT, "world", -1, "attached object 'held'");
    cr_assert(strstr(tdm_client_server_error(c)->message, "hand2") != NULL, "%s", tdm_client_server_error(c)->message);
    free(yaml);
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 2, "%zu scenes after a refused put", n);
    for (size_t i = 0; i < n; i++)
        cr_assert(!memcmp(sl[i].scene_id, sid[0], 32) || !memcmp(sl[i].scene_id, sid[1], 32));
    tdm_scene_list_free(sl);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), files);
    tdm_robot_info *rl;
    cr_assert_eq(tdm_robot_list(c, &rl, &n), 0);
    cr_assert(n == 1 && rl[0].scenes == 2, "the robot counts %u scenes", n ? rl[0].scenes : 0);
    tdm_robot_info_free(rl);
    for (int k = 0; k < 2; k++) cr_assert_eq(tdm_scene_delete(c, sid[k]), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_robot_delete(c, rid), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
    free(q);
    free(got);
}

/* ---- the CLI ---- */

static tdm_run_result run(const char *const *args)
{
    tdm_run_result r;
    int rc = tdm_run_capture(TANDEM_BIN, args, dmn_path(&D, "stdout"), dmn_path(&D, "stderr"), &r);
    cr_assert_eq(rc, 0, "cannot run %s: %s", TANDEM_BIN, strerror(rc));
    return r;
}

/* `tandem query` (args, writing --out to out): 300 queries, the summary's tail
 * (from "colliding=") as check's, and the --out text equal to check's `want`. */
static void expect_as_check(const char *const *args, const char *out, const char *check_tail, const char *want,
                            const char *what, const char *mode)
{
    tdm_run_result r = run(args);
    cr_assert_eq(r.status, 0, "%s: %s", what, r.err);
    cr_assert(strstr(r.out, "queries=300 seconds=") == r.out, "%s", r.out);
    cr_assert_str_eq(strrchr(r.out, 'c'), check_tail, "summary: %s", r.out);
    free(r.out);
    free(r.err);
    char *b = gen_read_file(dmn_path(&D, out), NULL);
    cr_assert_not_null(b);
    cr_assert_str_eq(b, want, "%s: %s's --out differs from tandem check --urdf's", mode, what);
    free(b);
}

/* tandem query --urdf against a tandemd whose max_query_tasks holds only a few configurations
 * a request: the tool cuts its batches by it (HelloReply's limit and the scene's checked
 * pairs) and says so, and answers as tandem check --urdf does, where a batch of them all
 * is refused. */
Test(robotd, cli_query_batches_follow_max_query_tasks)
{
    gen_rng g = {seed ^ 0x7a5c};
    FILE *f = fopen(dmn_path(&D, "configs.txt"), "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 300; i++) {
        double q[N_J];
        arm_fixture_random_config(&g, q);
        fprintf(f, "%.17g %.17g %.17g\n", q[0], q[1], q[2]);
    }
    fclose(f);
    const char *flags[] = {"--max-query-tasks", "100", NULL};
    dmn_start(&D, flags);
    const char *check[] = {"check", "--urdf", dmn_path(&D, "arm.urdf"), "--srdf", dmn_path(&D, "arm.srdf"), "--world",
                           dmn_path(&D, "scene.yaml"), "--configs", dmn_path(&D, "configs.txt"), "--mode", "bool",
                           "--out", dmn_path(&D, "check_out.txt"), NULL};
    tdm_run_result r = run(check);
    cr_assert_eq(r.status, 0, "check --urdf: %s", r.err);
    char check_tail[64];
    snprintf(check_tail, sizeof check_tail, "%s", strrchr(r.out, 'c'));
    free(r.out);
    free(r.err);
    char *want = gen_read_file(dmn_path(&D, "check_out.txt"), NULL);
    cr_assert_not_null(want);
    const char *query[] = {"query", "--server", D.unix_addr, "--urdf", dmn_path(&D, "arm.urdf"), "--srdf",
                           dmn_path(&D, "arm.srdf"), "--world", dmn_path(&D, "scene.yaml"), "--configs",
                           dmn_path(&D, "configs.txt"), "--mode", "bool", "--out", dmn_path(&D, "query_out.txt"),
                           "--batch", "300", NULL};
    r = run(query);
    cr_assert_eq(r.status, 0, "query: %s", r.err);
    cr_assert(strstr(r.err, "over the server's max_query_tasks; using "), "no note of the cut: %s", r.err);
    cr_assert_str_eq(strrchr(r.out, 'c'), check_tail, "summary: %s", r.out);
    free(r.out);
    free(r.err);
    char *got = gen_read_file(dmn_path(&D, "query_out.txt"), NULL);
    cr_assert_not_null(got);
    cr_assert_str_eq(got, want, "tandem query's --out differs from tandem check --urdf's");
    free(got);
    free(want);
    /* the cut is what makes it work: one request of 300 is over the limit */
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t robot_id[TDM_ID_BYTES], scene_id[TDM_ID_BYTES];
    tdm_robot_scene_info *info = NULL;
    cr_assert_eq(tdm_robot_put_files(c, NULL, dmn_path(&D, "arm.urdf"), dmn_path(&D, "arm.srdf"), robot_id, NULL, NULL),
                 0);
    cr_assert_eq(tdm_robot_scene_put_file(c, NULL, robot_id, dmn_path(&D, "scene.yaml"), scene_id, NULL, &info), 0);
    cr_assert(info->n_checks > 1 && 300u * info->n_checks > 100u, "%u checked pairs", info->n_checks);
    tdm_robot_scene_info_free(info);
    double q[300 * N_J] = {0};
    tdm_query_result res[300];
    cr_assert_neq(tdm_query_configs(c, scene_id, TDM_QUERY_BOOL, q, N_J, 300, 0, res, NULL), 0);
    cr_assert_eq(tdm_client_server_error(c)->code, TDM_SERVER_LIMIT, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
}

Test(robotd, cli_robot_and_query)
{
    gen_rng g = {seed ^ 0x33};
    FILE *f = fopen(dmn_path(&D, "configs.txt"), "w");
    cr_assert_not_null(f);
    fprintf(f, "# j1 j2 j3\n");
    for (int i = 0; i < 300; i++) {
        double q[N_J];
        arm_fixture_random_config(&g, q);
        fprintf(f, "%.17g %.17g %.17g\n", q[0], q[1], q[2]);
    }
    fclose(f);
    dmn_start(&D, NULL);
    const char *server = D.unix_addr;

    const char *put[] = {
        "robot",    "put",  "--urdf", dmn_path(&D, "arm.urdf"), "--srdf", dmn_path(&D, "arm.srdf"), "--name", "cli arm",
        "--server", server, NULL};
    tdm_run_result r = run(put);
    cr_assert_eq(r.status, 0, "robot put: %s", r.err);
    char id[65];
    cr_assert_eq(sscanf(r.out, "%64s", id), 1);
    cr_assert_eq(strlen(id), 64);
    free(r.out);
    free(r.err);
    const char *list[] = {"robot", "list", "--server", server, NULL};
    r = run(list);
    cr_assert_eq(r.status, 0, "robot list: %s", r.err);
    char want[200];
    snprintf(want, sizeof want, "%s joints=3 links=4 elements=6 scenes=0 name=cli arm\n", id);
    cr_assert_str_eq(r.out, want);
    free(r.out);
    free(r.err);

    static const char *const modes[2] = {"bool", "contacts"};
    for (int m = 0; m < 2; m++) {
        const char *check[] = {"check", "--urdf", dmn_path(&D, "arm.urdf"), "--srdf", dmn_path(&D, "arm.srdf"),
                               "--world", dmn_path(&D, "scene.yaml"), "--configs", dmn_path(&D, "configs.txt"),
                               "--mode", modes[m], "--threads", "2", "--out", dmn_path(&D, "check_out.txt"), NULL};
        r = run(check);
        cr_assert_eq(r.status, 0, "check --urdf: %s", r.err);
        char *check_last = strrchr(r.out, 'c'); /* "colliding=C\n" */
        char check_tail[64];
        snprintf(check_tail, sizeof check_tail, "%s", check_last);
        free(r.out);
        free(r.err);
        const char *query[] = {"query", "--server", server, "--urdf", dmn_path(&D, "arm.urdf"), "--srdf",
                               dmn_path(&D, "arm.srdf"), "--world", dmn_path(&D, "scene.yaml"), "--configs",
                               dmn_path(&D, "configs.txt"), "--mode", modes[m], "--out", dmn_path(&D, "query_out.txt"),
                               "--batch", "37", "--connections", "2", NULL};
        char *a = gen_read_file(dmn_path(&D, "check_out.txt"), NULL);
        cr_assert_not_null(a);
        /* --ephemeral 1 (first: no stored scene of this world yet): the same answers, and its scene is not
           written (it goes with the command) */
        int files = dmn_count_files(&D, "robot-scenes");
        const char *eph[] = {"query", "--server", server, "--urdf", dmn_path(&D, "arm.urdf"), "--srdf",
                             dmn_path(&D, "arm.srdf"), "--world", dmn_path(&D, "scene.yaml"), "--configs",
                             dmn_path(&D, "configs.txt"), "--mode", modes[m], "--out", dmn_path(&D, "eph_out.txt"),
                             "--ephemeral", "1", NULL};
        expect_as_check(eph, "eph_out.txt", check_tail, a, "tandem query --urdf --ephemeral 1", modes[m]);
        cr_assert_eq(dmn_count_files(&D, "robot-scenes"), files, "tandem query --ephemeral 1 wrote its scene");
        expect_as_check(query, "query_out.txt", check_tail, a, "tandem query --urdf", modes[m]);
        /* several servers (tdm_multi): the same daemon over its two listeners */
        char servers[600];
        snprintf(servers, sizeof servers, "%s,%s", D.unix_addr, D.tcp_addr);
        const char *multi[] = {"query", "--server", servers, "--urdf", dmn_path(&D, "arm.urdf"), "--srdf",
                               dmn_path(&D, "arm.srdf"), "--world", dmn_path(&D, "scene.yaml"), "--configs",
                               dmn_path(&D, "configs.txt"), "--mode", modes[m], "--out", dmn_path(&D, "multi_out.txt"),
                               "--batch", "37", NULL};
        expect_as_check(multi, "multi_out.txt", check_tail, a, "tandem query --urdf --server A,B", modes[m]);
        free(a);
    }
    {
        tdm_client *lc = lib_connect(D.unix_addr);
        size_t n_sc = 0;
        tdm_scene_info *sl = NULL;
        for (int i = 0; i < 500; i++) { /* the ephemeral scenes go as tandemd notices the commands' closes */
            cr_assert_eq(tdm_scene_list(lc, &sl, &n_sc), 0, "%s", tdm_client_errstr(lc));
            tdm_scene_list_free(sl);
            if (n_sc == (size_t)dmn_count_files(&D, "robot-scenes")) break;
            struct timespec ms10 = {0, 10 * 1000000L};
            nanosleep(&ms10, NULL);
        }
        cr_assert_eq(n_sc, (size_t)dmn_count_files(&D, "robot-scenes"),
                     "%zu scenes listed, %d stored: an ephemeral one outlived its command", n_sc,
                     dmn_count_files(&D, "robot-scenes"));
        tdm_client_free(lc);
    }
    /* a configuration line with a wrong count: check's message */
    write_file("bad.txt", "0 0 0\n0.1 0.2\n");
    const char *bad[] = {"query", "--server", server, "--urdf", dmn_path(&D, "arm.urdf"), "--world",
                         dmn_path(&D, "scene.yaml"), "--configs", dmn_path(&D, "bad.txt"), "--mode", "bool", NULL};
    r = run(bad);
    cr_assert_neq(r.status, 0);
    cr_assert(strstr(r.err, "bad.txt:2: 2 values, the robot has 3 active joints") != NULL, "%s", r.err);
    free(r.out);
    free(r.err);

    /* rm is refused while the query's scene uses the robot */
    const char *rm[] = {"robot", "rm", id, "--server", server, NULL};
    r = run(rm);
    cr_assert_neq(r.status, 0);
    cr_assert(strstr(r.err, "robot in use") != NULL, "%s", r.err);
    free(r.out);
    free(r.err);
    dmn_stop(&D, SIGTERM);
}

/* A Query of 1 MiB of numbers or more keeps them in the decoded request's arena, its job taking
 * it (request_query.c): 44 000 configurations (1.06 MB) refused for a non-finite number deep in
 * them with the small path's code, field, index and message; answered, every configuration as the
 * reference; with TDM_DECODE_APART=0 (copied on the loop) the same. */
static void large_queries(void)
{
    enum { N = 44000 };
    offline o;
    offline_open(&o);
    gen_rng g = {seed ^ 0x46};
    double *q = malloc(sizeof *q * N * N_J);
    tdm_sched_result *want = calloc(N, sizeof *want);
    tdm_query_result *got = calloc(N, sizeof *got);
    cr_assert(q && want && got);
    for (int i = 0; i < N; i++) arm_fixture_random_config(&g, q + i * N_J);
    offline_run(&o, q, N, TDM_MODE_BOOL, 1, want, NULL);
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[32];
    put_arm_scene(c, rid, sid);
    double keep = q[120001];
    q[120001] = INFINITY;
    expect_server_error(c, tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, N, 0, got, NULL), "large: not finite",
                        TDM_SERVER_NON_FINITE, "configs", 120001, "configs[120001] (query 40000, joint");
    q[120001] = keep;
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, N_J, N, 0, got, NULL), 0, "%s", tdm_client_errstr(c));
    size_t colliding = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding, "configuration %d", i);
        colliding += want[i].colliding != 0;
    }
    cr_assert(colliding > N / 10 && colliding < N - N / 10, "%zu of %d colliding: the test needs both", colliding, N);
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
    free(q);
    free(want);
    free(got);
    offline_close(&o);
}

Test(robotd, large_queries_keep_their_numbers_answer_as_copied) { large_queries(); }

Test(robotd, large_queries_copied_on_the_loop)
{
    cr_assert_eq(setenv("TDM_DECODE_APART", "0", 1), 0);
    large_queries();
}

/* ---- motions ---- */

/* The reference: n and q_k from the issue's formula, each state run alone offline. */
static long motion_reference(offline *o, const double *a, const double *b, double res, uint64_t *n_out,
                             double last[N_J])
{
    double d = 0;
    for (int j = 0; j < N_J; j++) d = fmax(d, fabs(b[j] - a[j]));
    double cnt = ceil(d / res) + 1;
    uint64_t n = cnt < 2 ? 2 : (uint64_t)cnt;
    *n_out = n;
    for (uint64_t k = 0; k < n; k++) {
        double q[N_J];
        for (int j = 0; j < N_J; j++) q[j] = a[j] + (double)k / (double)(n - 1) * (b[j] - a[j]);
        tdm_sched_result r;
        offline_run(o, q, 1, TDM_MODE_BOOL, 1, &r, NULL);
        if (r.colliding) return (long)k;
        memcpy(last, q, sizeof q);
    }
    return -1;
}

#define N_MOT 200

/* MotionChecks of 1 MiB of numbers or more are validated and planned on libuv's pool
 * (request_motion.c): the answers are those of the loop's. 22 000 motions (1.06 MB): refused for a
 * non-finite number deep in them and for too many states with the small path's code, field, index
 * and message; answered, every 97th motion as the reference; with TDM_DECODE_APART=0 the same. */
static void large_motion_checks(void)
{
    enum { N = 22000 };
    offline o;
    offline_open(&o);
    gen_rng g = {seed ^ 0x45};
    double *m = malloc(sizeof *m * N * 2 * N_J), *last = malloc(sizeof *last * N * N_J);
    int64_t *first = malloc(sizeof *first * N);
    uint64_t *states = malloc(sizeof *states * N);
    cr_assert(m && last && first && states);
    for (int i = 0; i < 2 * N; i++) arm_fixture_random_config(&g, m + i * N_J);
    const char *flags[] = {"--max-motion-states", "1000000", NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[32];
    put_arm_scene(c, rid, sid);
    double keep = m[100000];
    m[100000] = NAN;
    expect_server_error(c, tdm_motion_check(c, sid, 1.0, m, N_J, N, first, states, last), "large: not finite",
                        TDM_SERVER_NON_FINITE, "motions", 100000, "motions[100000] (point 33333, joint");
    m[100000] = keep;
    expect_server_error(c, tdm_motion_check(c, sid, 0.01, m, N_J, N, first, states, last), "large: too many states",
                        TDM_SERVER_LIMIT, "motions", -1, "over max_motion_states 1000000");
    cr_assert_eq(tdm_motion_check(c, sid, 1.0, m, N_J, N, first, states, last), 0, "%s", tdm_client_errstr(c));
    int checked = 0;
    for (int i = 0; i < N; i += 97, checked++) {
        uint64_t n;
        double want_last[N_J];
        long want = motion_reference(&o, m + i * 2 * N_J, m + i * 2 * N_J + N_J, 1.0, &n, want_last);
        cr_assert_eq(first[i], want, "motion %d: %lld, reference %ld", i, (long long)first[i], want);
        cr_assert_eq(states[i], n, "motion %d: %llu states, reference %llu", i, (unsigned long long)states[i],
                     (unsigned long long)n);
    }
    cr_log_info("22 000 motions at once: %d checked against the reference", checked);
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
    free(m);
    free(last);
    free(first);
    free(states);
    offline_close(&o);
}

Test(robotd, large_motion_checks_prepared_apart_answer_as_on_the_loop) { large_motion_checks(); }

Test(robotd, large_motion_checks_prepared_on_the_loop)
{
    cr_assert_eq(setenv("TDM_DECODE_APART", "0", 1), 0);
    large_motion_checks();
}

Test(robotd, motions_equal_reference)
{
    offline o;
    offline_open(&o);
    gen_rng g = {seed ^ 0x44};
    double *m = malloc(sizeof *m * N_MOT * 2 * N_J), *last = malloc(sizeof *last * N_MOT * N_J);
    int64_t *first = malloc(sizeof *first * N_MOT);
    uint64_t *states = malloc(sizeof *states * N_MOT);
    cr_assert(m && last && first && states);
    for (int i = 0; i < N_MOT; i++) {
        arm_fixture_random_config(&g, m + i * 2 * N_J);
        if (i % 10 == 3) { /* short motions, and one that does not move */
            for (int j = 0; j < N_J; j++) m[i * 2 * N_J + N_J + j] = m[i * 2 * N_J + j] + (i == 3 ? 0 : 0.01);
        } else {
            arm_fixture_random_config(&g, m + i * 2 * N_J + N_J);
        }
    }
    for (int i = 0; i < N_MOT * N_J; i++) last[i] = -99;
    const char *flags[] = {"--max-motion-states", "100000", NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    cr_assert_eq(tdm_client_server_info(c)->limits.max_motion_states, 100000);
    uint8_t rid[32], sid[32];
    put_arm_scene(c, rid, sid);
    const double res = 0.05;
    cr_assert_eq(tdm_motion_check(c, sid, res, m, N_J, N_MOT, first, states, last), 0, "%s", tdm_client_errstr(c));
    int colliding = 0, free_ = 0, at_start = 0;
    for (int i = 0; i < N_MOT; i++) {
        uint64_t n;
        double want_last[N_J];
        long want = motion_reference(&o, m + i * 2 * N_J, m + i * 2 * N_J + N_J, res, &n, want_last);
        cr_assert_eq(first[i], want, "motion %d: %lld, reference %ld", i, (long long)first[i], want);
        cr_assert_eq(states[i], n, "motion %d: %llu states, reference %llu", i, (unsigned long long)states[i],
                     (unsigned long long)n);
        if (want != 0)
            for (int j = 0; j < N_J; j++)
                cr_assert_eq(last[i * N_J + j], want_last[j], "motion %d: last free state, joint %d", i, j);
        else
            for (int j = 0; j < N_J; j++) cr_assert_eq(last[i * N_J + j], -99, "motion %d: no free state", i);
        colliding += want > 0;
        free_ += want < 0;
        at_start += want == 0;
    }
    cr_assert(colliding > 10 && free_ > 10 && at_start > 0, "colliding %d, free %d, at the start %d", colliding, free_,
              at_start);

    /* any_state: the same motions free, a colliding one answered with a colliding state (at or
       after the first), no last free state for it; the end for a free one */
    {
        int64_t *any = malloc(sizeof *any * N_MOT);
        uint64_t *any_states = malloc(sizeof *any_states * N_MOT);
        double *any_last = malloc(sizeof *any_last * N_MOT * N_J);
        cr_assert(any && any_states && any_last);
        for (int i = 0; i < N_MOT * N_J; i++) any_last[i] = -99;
        cr_assert_eq(tdm_motion_check_flags(c, sid, res, m, N_J, NULL, N_MOT, TDM_MOTION_ANY_STATE, any, any_states,
                                            any_last),
                     0, "%s", tdm_client_errstr(c));
        int later = 0;
        for (int i = 0; i < N_MOT; i++) {
            cr_assert_eq(any_states[i], states[i]);
            if (first[i] < 0) {
                cr_assert_eq(any[i], -1, "free motion %d answered %lld", i, (long long)any[i]);
                for (int j = 0; j < N_J; j++) cr_assert_eq(any_last[i * N_J + j], last[i * N_J + j]);
                continue;
            }
            cr_assert(any[i] >= first[i] && (uint64_t)any[i] < states[i], "motion %d: %lld, the first %lld", i,
                      (long long)any[i], (long long)first[i]);
            double q[N_J];
            for (int j = 0; j < N_J; j++)
                q[j] = m[i * 2 * N_J + j] +
                       (double)any[i] / (double)(states[i] - 1) * (m[i * 2 * N_J + N_J + j] - m[i * 2 * N_J + j]);
            tdm_sched_result r;
            offline_run(&o, q, 1, TDM_MODE_BOOL, 1, &r, NULL);
            cr_assert(r.colliding, "motion %d: state %lld answered, which is free", i, (long long)any[i]);
            for (int j = 0; j < N_J; j++) cr_assert_eq(any_last[i * N_J + j], -99, "motion %d: no last free state", i);
            later += any[i] > first[i];
        }
        cr_assert(later > 0, "no colliding motion answered past its first collision: the probes never ran");
        cr_assert_eq(tdm_motion_check_flags(c, sid, res, m, N_J, NULL, N_MOT, 2, any, NULL, NULL), TDM_CLIENT_EINVAL);
        free(any);
        free(any_states);
        free(any_last);
    }

    /* bad requests: the field and index named, nothing run */
    m[7 * 2 * N_J + 4] = NAN;
    expect_server_error(c, tdm_motion_check(c, sid, res, m, N_J, N_MOT, first, NULL, NULL), "NaN in a motion",
                        TDM_SERVER_NON_FINITE, "motions", 7 * 2 * N_J + 4, "point 15, joint 'j2'");
    m[7 * 2 * N_J + 4] = 0;
    expect_server_error(c, tdm_motion_check(c, sid, 0, m, N_J, 4, first, NULL, NULL), "resolution 0",
                        TDM_SERVER_BAD_REQUEST, "resolution", -1, NULL);
    expect_server_error(c, tdm_motion_check(c, sid, 1e-5, m, N_J, 4, first, NULL, NULL), "over max_motion_states",
                        TDM_SERVER_LIMIT, "motions", -1, "max_motion_states");

    /* paths: 2 to 5 configurations each, checked segment by segment, states numbered along
     * the path with each shared point counted once */
    enum { NP = 40 };
    uint32_t np[NP];
    size_t total = 0;
    for (int i = 0; i < NP; i++) total += np[i] = (uint32_t)gen_int(&g, 2, 5);
    double *pts = malloc(sizeof *pts * total * N_J), *plast = malloc(sizeof *plast * NP * N_J);
    for (size_t i = 0; i < total; i++) arm_fixture_random_config(&g, pts + i * N_J);
    for (int i = 0; i < NP * N_J; i++) plast[i] = -99;
    cr_assert_eq(tdm_motion_check_paths(c, sid, 0.1, pts, N_J, np, NP, first, states, plast), 0, "%s",
                 tdm_client_errstr(c));
    size_t at = 0;
    int multi = 0;
    for (int i = 0; i < NP; i++) {
        long want = -1;
        uint64_t base = 0, n_total = 0;
        double want_last[N_J];
        for (uint32_t s = 0; s + 1 < np[i]; s++) {
            const double *a = pts + (at + s) * N_J, *b = a + N_J;
            double d = 0;
            for (int j = 0; j < N_J; j++) d = fmax(d, fabs(b[j] - a[j]));
            double cnt = ceil(d / 0.1) + 1;
            uint64_t n = cnt < 2 ? 2 : (uint64_t)cnt;
            for (uint64_t k = s ? 1 : 0; want < 0 && k < n; k++) {
                double q[N_J];
                for (int j = 0; j < N_J; j++) q[j] = a[j] + (double)k / (double)(n - 1) * (b[j] - a[j]);
                tdm_sched_result r;
                offline_run(&o, q, 1, TDM_MODE_BOOL, 1, &r, NULL);
                if (r.colliding) want = (long)(base + k);
                else memcpy(want_last, q, sizeof q);
            }
            n_total += s ? n - 1 : n;
            base += n - 1;
        }
        at += np[i];
        cr_assert_eq(states[i], n_total, "path %d: %llu states, reference %llu", i, (unsigned long long)states[i],
                     (unsigned long long)n_total);
        cr_assert_eq(first[i], want, "path %d (%u points): %lld, reference %ld", i, np[i], (long long)first[i], want);
        if (want != 0)
            for (int j = 0; j < N_J; j++)
                cr_assert_eq(plast[i * N_J + j], want_last[j], "path %d: last free state, joint %d", i, j);
        multi += np[i] > 2 && (want < 0 || (uint64_t)want >= n_total / 2);
    }
    cr_assert(multi > 0, "no path got past its first segment");
    /* a 1-point path: refused by libtandem before sending, and by the server (raw frame) */
    np[3] = 1;
    cr_assert_eq(tdm_motion_check_paths(c, sid, 0.1, pts, N_J, np, NP, first, NULL, NULL), TDM_CLIENT_EINVAL);
    int fd = raw_connect(D.unix_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    Tandem__V1__MotionCheck mcq = TANDEM__V1__MOTION_CHECK__INIT;
    mcq.scene_id.data = sid;
    mcq.scene_id.len = 32;
    mcq.resolution = 0.1;
    mcq.n_motions = total * N_J;
    mcq.motions = pts;
    mcq.n_points = NP;
    mcq.points = np;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = 9;
    rq.body_case = TANDEM__V1__REQUEST__BODY_MOTION_CHECK;
    rq.motion_check = &mcq;
    Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
    expect_error(rep, "a 1-point path", 9, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST, "points", 3);
    tandem__v1__reply__free_unpacked(rep, NULL);
    close(fd);
    free(pts);
    free(plast);
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);

    /* the CLI: tandem motions --server writes what tandem motions writes */
    FILE *f = fopen(dmn_path(&D, "motions.txt"), "w");
    cr_assert_not_null(f);
    for (int i = 0; i < 60; i++) {
        for (int j = 0; j < 2 * N_J; j++) fprintf(f, "%.17g ", m[i * 2 * N_J + j]);
        fprintf(f, "\n");
    }
    fclose(f);
    dmn_start(&D, NULL);
    const char *off[] = {"motions", "--urdf", dmn_path(&D, "arm.urdf"), "--srdf", dmn_path(&D, "arm.srdf"), "--world",
                         dmn_path(&D, "scene.yaml"), "--motions", dmn_path(&D, "motions.txt"), "--resolution", "0.05",
                         "--out", dmn_path(&D, "m_off.txt"), NULL};
    tdm_run_result r = run(off);
    cr_assert_eq(r.status, 0, "motions: %s", r.err);
    char tail[64];
    snprintf(tail, sizeof tail, "%s", strrchr(r.out, 'c'));
    free(r.out);
    free(r.err);
    char *a = gen_read_file(dmn_path(&D, "m_off.txt"), NULL);
    cr_assert_not_null(a);
    /* one server, and several (tdm_multi: the same daemon over its two listeners) */
    char servers[600];
    snprintf(servers, sizeof servers, "%s,%s", D.unix_addr, D.tcp_addr);
    const char *const server_of[2] = {D.tcp_addr, servers};
    for (int k = 0; k < 2; k++) {
        const char *on[] = {"motions", "--server", server_of[k], "--urdf", dmn_path(&D, "arm.urdf"), "--srdf",
                            dmn_path(&D, "arm.srdf"), "--world", dmn_path(&D, "scene.yaml"), "--motions",
                            dmn_path(&D, "motions.txt"), "--resolution", "0.05", "--out", dmn_path(&D, "m_srv.txt"),
                            NULL};
        r = run(on);
        cr_assert_eq(r.status, 0, "motions --server %s: %s", server_of[k], r.err);
        cr_assert(strstr(r.out, "queries=60 seconds=") == r.out, "%s", r.out);
        cr_assert_str_eq(strrchr(r.out, 'c'), tail);
        free(r.out);
        free(r.err);
        char *b = gen_read_file(dmn_path(&D, "m_srv.txt"), NULL);
        cr_assert_not_null(b);
        cr_assert_str_eq(b, a, "tandem motions --server %s: --out differs from tandem motions'", server_of[k]);
        free(b);
    }
    /* --any-state 1: the same motions colliding, each at a colliding state no earlier than its
       first; offline and through the servers alike (both check the same 4 probes first, and
       otherwise answer the smallest colliding state) */
    const char *off_any[] = {"motions", "--urdf", dmn_path(&D, "arm.urdf"), "--srdf", dmn_path(&D, "arm.srdf"),
                             "--world", dmn_path(&D, "scene.yaml"), "--motions", dmn_path(&D, "motions.txt"),
                             "--resolution", "0.05", "--any-state", "1", "--out", dmn_path(&D, "m_any.txt"), NULL};
    r = run(off_any);
    cr_assert_eq(r.status, 0, "motions --any-state 1: %s", r.err);
    cr_assert_str_eq(strrchr(r.out, 'c'), tail, "the same motions collide");
    free(r.out);
    free(r.err);
    char *any = gen_read_file(dmn_path(&D, "m_any.txt"), NULL);
    cr_assert_not_null(any);
    int moved = 0, lines = 0;
    for (const char *pa = a, *pb = any;; lines++) {
        char *ea, *eb;
        long ka = strtol(pa, &ea, 10), kb = strtol(pb, &eb, 10);
        cr_assert((ea == pa) == (eb == pb), "the two files have different numbers of lines");
        if (ea == pa) break;
        cr_assert((ka < 0) == (kb < 0) && kb >= ka, "motion answered %ld first, %ld with any state", ka, kb);
        moved += kb != ka;
        pa = ea, pb = eb;
    }
    cr_assert_eq(lines, 60);
    cr_log_info("%d of 60 motions answered at a later colliding state with any state", moved);
    for (int k = 0; k < 2; k++) {
        const char *on[] = {"motions", "--server", server_of[k], "--urdf", dmn_path(&D, "arm.urdf"), "--srdf",
                            dmn_path(&D, "arm.srdf"), "--world", dmn_path(&D, "scene.yaml"), "--motions",
                            dmn_path(&D, "motions.txt"), "--resolution", "0.05", "--any-state", "1", "--out",
                            dmn_path(&D, "m_srv.txt"), NULL};
        r = run(on);
        cr_assert_eq(r.status, 0, "motions --server %s --any-state 1: %s", server_of[k], r.err);
        free(r.out);
        free(r.err);
        char *b = gen_read_file(dmn_path(&D, "m_srv.txt"), NULL);
        cr_assert_not_null(b);
        cr_assert_str_eq(b, any, "tandem motions --server %s --any-state 1: --out differs from offline", server_of[k]);
        free(b);
    }
    free(any);
    free(a);
    dmn_stop(&D, SIGTERM);
    free(m);
    free(last);
    free(first);
    free(states);
    offline_close(&o);
}

/* ---- the async API ---- */

enum { AQ = 64, AM = 20 };

typedef struct async_app {
    uint8_t bar[32], rid[32], sid[32];
    double q[AQ * N_J], m[AM * 2 * N_J];
    tdm_query_result res[AQ];
    int64_t first[AM];
    uint64_t states[AM];
    int answered, listed, failed;
    char why[256];
} async_app;

static int async_ok(tdm_async *ac, const tdm_reply *r, const char *what)
{
    async_app *a = tdm_async_data(ac);
    if (r->status == 0) return 1;
    snprintf(a->why, sizeof a->why, "%s: %s", what,
             r->status == TDM_CLIENT_ESERVER ? r->error.message : tdm_client_strerror(r->status));
    a->failed = 1;
    tdm_async_disconnect(ac);
    return 0;
}

static void on_list(tdm_async *ac, const tdm_reply *r, void *p)
{
    (void)p;
    async_app *a = tdm_async_data(ac);
    if (!async_ok(ac, r, "robot list")) return;
    a->listed = (int)r->u.robot_list.n;
    if (r->u.robot_list.n != 1 || memcmp(r->u.robot_list.robots[0].robot_id, a->rid, 32) ||
        r->u.robot_list.robots[0].scenes != 1 || strcmp(r->u.robot_list.robots[0].joints[1].name, "j2")) {
        snprintf(a->why, sizeof a->why, "robot list: not the one robot with one scene");
        a->failed = 1;
    }
    tdm_async_disconnect(ac);
}

static void answered(tdm_async *ac)
{
    async_app *a = tdm_async_data(ac);
    if (++a->answered == 2 && tdm_async_robot_list(ac, on_list, NULL, NULL)) tdm_async_disconnect(ac);
}

static void on_configs(tdm_async *ac, const tdm_reply *r, void *p)
{
    (void)p;
    async_app *a = tdm_async_data(ac);
    if (!async_ok(ac, r, "query configs")) return;
    for (size_t i = 0; i < r->u.query.n && i < AQ; i++) a->res[i] = r->u.query.results[i];
    answered(ac);
}

static void on_motions(tdm_async *ac, const tdm_reply *r, void *p)
{
    (void)p;
    async_app *a = tdm_async_data(ac);
    if (!async_ok(ac, r, "motion check")) return;
    for (size_t i = 0; i < r->u.motion_check.n && i < AM; i++) {
        a->first[i] = r->u.motion_check.results[i].first_colliding;
        a->states[i] = r->u.motion_check.results[i].n_states;
    }
    answered(ac);
}

static void on_rscene(tdm_async *ac, const tdm_reply *r, void *p)
{
    (void)p;
    async_app *a = tdm_async_data(ac);
    if (!async_ok(ac, r, "robot scene put")) return;
    const tdm_robot_scene_info *si = &r->u.robot_scene_put;
    if (si->n_objects != N_OBJ || strcmp(si->objects[6].world_object, "obs_box") || si->n_joints != N_J) {
        snprintf(a->why, sizeof a->why, "robot scene put: wrong objects or joints");
        a->failed = 1;
        tdm_async_disconnect(ac);
        return;
    }
    memcpy(a->sid, si->scene_id, 32);
    if (tdm_async_query_configs(ac, on_configs, NULL, a->sid, TDM_QUERY_CONTACTS, a->q, N_J, AQ, 0, 0, NULL) ||
        tdm_async_motion_check(ac, on_motions, NULL, a->sid, 0.05, a->m, N_J, AM, NULL))
        tdm_async_disconnect(ac);
}

static void on_robot(tdm_async *ac, const tdm_reply *r, void *p)
{
    (void)p;
    async_app *a = tdm_async_data(ac);
    if (!async_ok(ac, r, "robot put")) return;
    if (r->u.robot_put.n_joints != N_J || strcmp(r->u.robot_put.joints[2].name, "j3") ||
        r->u.robot_put.n_elements != N_EL) {
        snprintf(a->why, sizeof a->why, "robot put: wrong joints");
        a->failed = 1;
        tdm_async_disconnect(ac);
        return;
    }
    memcpy(a->rid, r->u.robot_put.robot_id, 32);
    if (tdm_async_robot_scene_put(ac, on_rscene, NULL, "async", a->rid, scene_text, NULL)) tdm_async_disconnect(ac);
}

static void on_bar(tdm_async *ac, const tdm_reply *r, void *p)
{
    (void)p;
    async_app *a = tdm_async_data(ac);
    if (!async_ok(ac, r, "mesh put")) return;
    memcpy(a->bar, r->u.mesh_put.mesh_id, 32);
    tdm_robot_mesh_ref ref = {"meshes/bar.obj", {0}};
    memcpy(ref.mesh_id, a->bar, 32);
    if (tdm_async_robot_put(ac, on_robot, NULL, "async arm", urdf_text, srdf_text, &ref, 1, NULL))
        tdm_async_disconnect(ac);
}

static tdm_mesh *bar_mesh;

static void on_async_connect(tdm_async *ac, int status)
{
    async_app *a = tdm_async_data(ac);
    if (status) {
        snprintf(a->why, sizeof a->why, "connect: %s", tdm_async_errstr(ac));
        a->failed = 1;
        return;
    }
    if (tdm_async_mesh_put(ac, on_bar, NULL, "bar", bar_mesh->verts, bar_mesh->n_verts, bar_mesh->tris,
                           bar_mesh->n_tris, NULL))
        tdm_async_disconnect(ac);
}

static void on_async_disconnect(tdm_async *ac, int status)
{
    (void)ac;
    (void)status;
}

/* A MotionCheck holds (and is admitted for) buffers of its own states, not of a
 * whole batch: under a memory budget of 1 MiB, where a 65 536-state batch's
 * buffers (2 MiB and more for this arm) would be refused with ERROR_BUSY, a
 * planner's motion is answered, and as the reference answers it. */
Test(robotd, small_motion_checks_hold_little)
{
    offline o;
    offline_open(&o);
    const char *flags[] = {"--max-memory", "1M", NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[32];
    put_arm_scene(c, rid, sid);
    gen_rng g = {seed ^ 0x5a11};
    for (int k = 0; k < 20; k++) {
        double m[2 * N_J];
        arm_fixture_random_config(&g, m);
        arm_fixture_random_config(&g, m + N_J);
        int64_t first = -2;
        uint64_t states = 0;
        cr_assert_eq(tdm_motion_check(c, sid, 0.05, m, N_J, 1, &first, &states, NULL), 0, "motion %d: %s", k,
                     tdm_client_errstr(c));
        uint64_t n;
        double last[N_J];
        long want = motion_reference(&o, m, m + N_J, 0.05, &n, last);
        cr_assert_eq(first, want, "motion %d: %lld, reference %ld", k, (long long)first, want);
        cr_assert_eq(states, n);
    }
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
    offline_close(&o);
}

/* ---- planners on several worlds at once ---- */

#define N_PLANNERS 6
#define N_ROUNDS 25
#define MOST_STATES 5
#define MOST_MOTIONS 2

/* One planner: its connection, its scene, and per round a few states and one or two
 * motions, with the server's answers (checked against the reference afterwards, on the
 * test's thread). */
typedef struct planner {
    const char *addr;
    uint8_t sid[32];
    double q[N_ROUNDS][MOST_STATES * N_J];
    size_t nq[N_ROUNDS];
    double m[N_ROUNDS][MOST_MOTIONS * 2 * N_J];
    size_t nm[N_ROUNDS];
    tdm_query_result got[N_ROUNDS][MOST_STATES];
    int64_t first[N_ROUNDS][MOST_MOTIONS];
    uint64_t states[N_ROUNDS][MOST_MOTIONS];
    double last[N_ROUNDS][MOST_MOTIONS * N_J];
    int rc;
    char err[300];
} planner;

#define PLANNER_RES 0.05

static void *planner_run(void *arg)
{
    planner *p = arg;
    tdm_connect_opts o = {.addr = p->addr, .timeout_ms = 5000, .io_timeout_ms = 30000, .client_name = "planner"};
    tdm_client *c = tdm_client_connect_with(&o);
    if (!c || tdm_client_err(c)) {
        p->rc = -1;
        snprintf(p->err, sizeof p->err, "connect: %s", c ? tdm_client_errstr(c) : "no memory");
        tdm_client_free(c);
        return NULL;
    }
    for (int r = 0; r < N_ROUNDS && !p->rc; r++) {
        p->rc = tdm_query_configs(c, p->sid, TDM_QUERY_BOOL, p->q[r], N_J, p->nq[r], 0, p->got[r], NULL);
        if (!p->rc)
            p->rc = tdm_motion_check(c, p->sid, PLANNER_RES, p->m[r], N_J, p->nm[r], p->first[r], p->states[r],
                                     p->last[r]);
        if (p->rc) snprintf(p->err, sizeof p->err, "round %d: %s", r, tdm_client_errstr(c));
    }
    tdm_client_free(c);
    return NULL;
}

/* Planners on three worlds at once, each on its own connection with a planner's small
 * requests (one to five states, one or two motions): every answer as the reference's for
 * its own world. With a GPU engine (and --device-configs-small, the default) the requests
 * of every scene go as configurations and pool into device runs of several robot scenes. */
/* Many planners at once on three worlds, each asking states and motions over its own
 * connection; tandemd started with `extra`. */
static void planners_on_several_worlds(const char *const *extra)
{
    static const char *const worlds[3] = {"scene.yaml", "world1.yaml", "world2.yaml"};
    offline o[3];
    for (int w = 0; w < 3; w++) offline_open_world(&o[w], worlds[w]);
    dmn_start(&D, extra);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sids[3][32];
    put_arm(c, rid);
    for (int w = 0; w < 3; w++) {
        tdm_robot_scene_info *si;
        cr_assert_eq(tdm_robot_scene_put_file(c, NULL, rid, dmn_path(&D, worlds[w]), sids[w], NULL, &si), 0, "%s",
                     tdm_client_errstr(c));
        cr_assert_eq(si->n_checks, o[w].rs->scene->n_checks, "world %d: checked pairs", w);
        tdm_robot_scene_info_free(si);
    }
    planner *ps = calloc(N_PLANNERS, sizeof *ps);
    cr_assert_not_null(ps);
    gen_rng g = {seed ^ 0x9a};
    for (int k = 0; k < N_PLANNERS; k++) {
        planner *p = &ps[k];
        p->addr = k % 2 ? D.unix_addr : D.tcp_addr;
        memcpy(p->sid, sids[k % 3], 32);
        for (int r = 0; r < N_ROUNDS; r++) {
            p->nq[r] = 1 + (size_t)((k + r) % MOST_STATES);
            p->nm[r] = 1 + (size_t)(r % MOST_MOTIONS);
            for (size_t i = 0; i < p->nq[r]; i++) arm_fixture_random_config(&g, p->q[r] + i * N_J);
            for (size_t i = 0; i < 2 * p->nm[r]; i++) arm_fixture_random_config(&g, p->m[r] + i * N_J);
        }
    }
    pthread_t th[N_PLANNERS];
    for (int k = 0; k < N_PLANNERS; k++) cr_assert_eq(pthread_create(&th[k], NULL, planner_run, &ps[k]), 0);
    for (int k = 0; k < N_PLANNERS; k++) pthread_join(th[k], NULL);
    size_t colliding = 0, states = 0, motions_hit = 0, motions = 0;
    for (int k = 0; k < N_PLANNERS; k++) {
        planner *p = &ps[k];
        offline *ref = &o[k % 3];
        cr_assert_eq(p->rc, 0, "planner %d: %s", k, p->err);
        for (int r = 0; r < N_ROUNDS; r++) {
            tdm_sched_result want[MOST_STATES];
            offline_run(ref, p->q[r], p->nq[r], TDM_MODE_BOOL, 1, want, NULL);
            for (size_t i = 0; i < p->nq[r]; i++) {
                cr_assert_eq(p->got[r][i].colliding, want[i].colliding != 0,
                             "planner %d (world %d), round %d, state %zu", k, k % 3, r, i);
                colliding += want[i].colliding != 0;
                states++;
            }
            for (size_t i = 0; i < p->nm[r]; i++) {
                uint64_t n;
                double want_last[N_J];
                const double *a = p->m[r] + 2 * i * N_J;
                long first = motion_reference(ref, a, a + N_J, PLANNER_RES, &n, want_last);
                cr_assert_eq(p->first[r][i], first, "planner %d (world %d), round %d, motion %zu: %lld, reference %ld",
                             k, k % 3, r, i, (long long)p->first[r][i], first);
                cr_assert_eq(p->states[r][i], n);
                motions_hit += first >= 0;
                motions++;
            }
        }
    }
    cr_log_info("%zu of %zu states colliding, %zu of %zu motions", colliding, states, motions_hit, motions);
    cr_assert(colliding > 0 && colliding < states, "the states need both answers");
    cr_assert(motions_hit > 0 && motions_hit < motions, "the motions need both answers");
    free(ps);
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
    for (int w = 0; w < 3; w++) offline_close(&o[w]);
}

Test(robotd, planners_on_several_worlds_answer_as_reference) { planners_on_several_worlds(NULL); }

/* The same through the GPU's express ring (every request of at most 256 configurations that no
 * host lane takes: none here; a motion's rounds too), whatever its scene's learned cost, polled by
 * its own thread; without a GPU engine tandemd says so and answers the usual way. */
Test(robotd, planners_through_the_express_ring_answer_as_reference)
{
    setenv("TDM_EXPRESS_ANY_COST", "1", 1); /* tandemd's, started below */
    setenv("TDM_EXPRESS_ON_LOOP", "0", 1);
    static const char *const extra[] = {"--express-configs", "256", "--host-lanes", "0", NULL};
    planners_on_several_worlds(extra);
}

/* The same with the ring polled by the loops (the default), which finish their own requests there
 * (a motion's next rounds published again from the loop) and write their replies. */
Test(robotd, planners_through_the_ring_polled_by_the_loops_answer_as_reference)
{
    setenv("TDM_EXPRESS_ANY_COST", "1", 1);
    static const char *const extra[] = {"--express-configs", "256", "--host-lanes", "0", "--io-threads", "2", NULL};
    planners_on_several_worlds(extra);
}

/* Clients that pipeline many single states (with a GPU engine, what the express ring takes, polled
 * by the loops) and hang up with their answers in flight: tandemd lets every job go, a client
 * after them is answered as the reference, and it stops cleanly (it would wait forever on a job
 * left behind). */
#define HANGUPS 4
#define HANGUP_STATES 300

Test(robotd, clients_hanging_up_with_states_in_flight_leave_nothing_behind)
{
    offline o;
    offline_open(&o);
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[32];
    put_arm_scene(c, rid, sid);
    gen_rng g = {seed ^ 0x4a96};
    double *q = malloc(sizeof *q * HANGUP_STATES * N_J);
    tdm_query_result *res = calloc(HANGUP_STATES, sizeof *res);
    cr_assert(q && res);
    for (int i = 0; i < HANGUP_STATES; i++) arm_fixture_random_config(&g, q + i * N_J);
    for (int h = 0; h < HANGUPS; h++) {
        tdm_client *x = lib_connect(h % 2 ? D.tcp_addr : D.unix_addr);
        for (int i = 0; i < HANGUP_STATES; i++) {
            uint64_t id;
            cr_assert_eq(tdm_query_configs_send(x, sid, TDM_QUERY_BOOL, q + i * N_J, N_J, 1, 0, &res[i], NULL, &id), 0,
                         "client %d, state %d: %s", h, i, tdm_client_errstr(x));
        }
        tdm_client_free(x); /* its answers in flight */
    }
    tdm_sched_result want[HANGUP_STATES];
    offline_run(&o, q, HANGUP_STATES, TDM_MODE_BOOL, 1, want, NULL);
    size_t colliding = 0;
    for (int i = 0; i < HANGUP_STATES; i++) {
        tdm_query_result r;
        cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q + i * N_J, N_J, 1, 0, &r, NULL), 0, "state %d: %s", i,
                     tdm_client_errstr(c));
        cr_assert_eq(r.colliding, want[i].colliding != 0, "state %d", i);
        colliding += r.colliding != 0;
    }
    cr_assert(colliding > 0 && colliding < HANGUP_STATES, "the states need both answers (%zu colliding)", colliding);
    /* the hung-up connections are gone once their jobs are: this one alone is left */
    tdm_stats st;
    for (int k = 0; k < 500; k++) {
        cr_assert_eq(tdm_stats_get(c, &st), 0, "%s", tdm_client_errstr(c));
        if (st.connections == 1) break;
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_eq(st.connections, 1, "connections still open: %u", st.connections);
    free(q);
    free(res);
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
    offline_close(&o);
}

Test(robotd, async_calls_equal_blocking)
{
    char err[256];
    cr_assert_eq(tdm_mesh_load_file(dmn_path(&D, "meshes/bar.obj"), TDM_ORIGIN_RAW, &bar_mesh, err, sizeof err),
                 TDM_OK);
    async_app *a = calloc(1, sizeof *a);
    gen_rng g = {seed ^ 0x55};
    for (int i = 0; i < AQ; i++) arm_fixture_random_config(&g, a->q + i * N_J);
    for (int i = 0; i < AM; i++) {
        arm_fixture_random_config(&g, a->m + i * 2 * N_J);
        arm_fixture_random_config(&g, a->m + i * 2 * N_J + N_J);
    }
    dmn_start(&D, NULL);
    uv_loop_t loop;
    uv_loop_init(&loop);
    tdm_connect_opts o = {.addr = D.unix_addr, .timeout_ms = 5000, .client_name = "test_robotd async"};
    tdm_async *ac = tdm_async_connect(&o);
    cr_assert_not_null(ac);
    tdm_async_set_data(ac, a);
    cr_assert_eq(tdm_async_err(ac), 0, "%s", tdm_async_errstr(ac));
    tdm_async_set_connect_cb(ac, on_async_connect);
    tdm_async_set_disconnect_cb(ac, on_async_disconnect);
    cr_assert_eq(tdm_libuv_attach(ac, &loop), 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    cr_assert_eq(a->failed, 0, "%s", a->why);
    cr_assert_eq(a->listed, 1);

    /* the blocking calls answer the same */
    tdm_client *c = lib_connect(D.tcp_addr);
    tdm_query_result res[AQ];
    int64_t first[AM];
    uint64_t states[AM];
    cr_assert_eq(tdm_query_configs(c, a->sid, TDM_QUERY_CONTACTS, a->q, N_J, AQ, 0, res, NULL), 0);
    cr_assert_eq(tdm_motion_check(c, a->sid, 0.05, a->m, N_J, AM, first, states, NULL), 0);
    for (int i = 0; i < AQ; i++) {
        cr_assert_eq(res[i].colliding, a->res[i].colliding, "configuration %d", i);
        cr_assert_eq(res[i].contacts, a->res[i].contacts, "configuration %d", i);
    }
    for (int i = 0; i < AM; i++) {
        cr_assert_eq(first[i], a->first[i], "motion %d", i);
        cr_assert_eq(states[i], a->states[i], "motion %d", i);
    }
    tdm_client_free(c);
    dmn_stop(&D, SIGTERM);
    tdm_mesh_free(bar_mesh);
    free(a);
}

/* Robot scene puts from many connections at once (each built on tandemd's pool before the
 * writer stores it): the same world from several clients is stored once, each client told
 * its id, exactly one told it created it; a bad world among them fails alone, naming its
 * line; a world deleted and put again is built again. */
#define N_PUTTERS 9

typedef struct putter {
    const char *addr;
    const uint8_t *rid;
    const char *path; /* NULL: the bad world */
    pthread_barrier_t *go;
    uint8_t sid[32];
    int created, rc, code;
    char err[300];
} putter;

static const char bad_world[] = "world:\n  collision_objects:\n    - id: a\n"
                                "      primitives: [{type: box, dimensions: [1, 2]}]\n"
                                "      primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n";

static void *putter_run(void *arg)
{
    putter *p = arg;
    tdm_connect_opts o = {.addr = p->addr, .timeout_ms = 5000, .io_timeout_ms = 30000, .client_name = "putter"};
    tdm_client *c = tdm_client_connect_with(&o);
    pthread_barrier_wait(p->go);
    if (!c || tdm_client_err(c)) {
        p->rc = -1;
        snprintf(p->err, sizeof p->err, "connect: %s", c ? tdm_client_errstr(c) : "no memory");
    } else {
        p->rc = p->path ? tdm_robot_scene_put_file(c, NULL, p->rid, p->path, p->sid, &p->created, NULL)
                        : tdm_robot_scene_put(c, "bad", p->rid, bad_world, p->sid, &p->created, NULL);
        const tdm_server_error *e = tdm_client_server_error(c);
        p->code = e ? e->code : 0;
        snprintf(p->err, sizeof p->err, "%s (field '%s', message '%s')", tdm_client_errstr(c), e ? e->field : "",
                 e ? e->message : "");
    }
    tdm_client_free(c);
    return NULL;
}

/* Attached shapes count against max_objects with the robot's elements and the world's
 * shapes, and a put over it is refused once its YAML is read, before anything is built:
 * the limit bounds what a hostile put of thousands of attached shapes costs (their pairs
 * are listed, quadratic in the shapes, only for a scene within the limit). */
Test(robotd, attached_shapes_count_against_max_objects)
{
    const char *flags[] = {"--max-objects", "6", NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[32];
    cr_assert_eq(tdm_robot_put(c, "arm2", arm_urdf_text, arm_srdf_text, NULL, 0, rid, NULL, NULL), 0, "%s",
                 tdm_client_errstr(c));
    char *yaml = held_world("link2", "[]"); /* 3 elements, 2 held boxes, the post: 6 */
    cr_assert_eq(tdm_robot_scene_put(c, "held", rid, yaml, sid, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    free(yaml);
    /* 8 000 objects of two boxes attached to one link: 16 003 objects, 1.3e8 pairs never checked */
    size_t cap = 8000 * 260 + 4096, len = 0;
    char *big = malloc(cap);
    cr_assert_not_null(big);
    len += (size_t)snprintf(big + len, cap - len, "robot_state:\n  attached_collision_objects:\n");
    for (int i = 0; i < 8000; i++)
        len +=
            (size_t)snprintf(big + len, cap - len,
                             "    - {link_name: link2, object: {id: o%d, primitives: [{type: box, dimensions: [0.01, "
                             "0.01, 0.01]}, {type: sphere, dimensions: [0.01]}], primitive_poses: [{position: [0, 0, "
                             "0], orientation: [0, 0, 0, 1]}, {position: [0, 0, 0], orientation: [0, 0, 0, 1]}]}}\n",
                             i);
    cr_assert(len < cap);
    uint8_t bad[32];
    expect_server_error(c, tdm_robot_scene_put(c, "many", rid, big, bad, NULL, NULL), "16 000 attached shapes",
                        TDM_SERVER_LIMIT, "world", -1, "the robot scene has 16003 objects");
    cr_assert(strstr(tdm_client_server_error(c)->message, "over max_objects 6") != NULL, "%s",
              tdm_client_server_error(c)->message);
    free(big);
    /* the scene within the limit still stored and answering */
    tdm_scene_info *sl;
    size_t n;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 1, "%zu scenes: only the one within the limit", n);
    tdm_scene_list_free(sl);
    double q[2] = {0, 0};
    tdm_query_result r;
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, 2, 1, 0, &r, NULL), 0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

/* --max-scene-triangles: a put whose world shapes are over it is refused with LIMIT,
 * naming the limit, and leaves nothing stored; the fixture's world (a box and a
 * cylinder) is within it, and its scene answers. */
Test(robotd, scene_triangles_count_against_max_scene_triangles)
{
    const char *flags[] = {"--max-scene-triangles", "20000", NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32], sid[32], bad[32];
    cr_assert_eq(tdm_robot_put(c, "arm2", arm_urdf_text, arm_srdf_text, NULL, 0, rid, NULL, NULL), 0, "%s",
                 tdm_client_errstr(c));
    static const char ball[] = "world:\n  collision_objects:\n    - id: ball\n"
                               "      primitives: [{type: sphere, dimensions: [1.0]}]\n"
                               "      primitive_poses: [{position: [3, 0, 0], orientation: [0, 0, 0, 1]}]\n";
    expect_server_error(c, tdm_robot_scene_put(c, "ball", rid, ball, bad, NULL, NULL), "a sphere of ~70 000 triangles",
                        TDM_SERVER_LIMIT, "world", -1, "more than 20000 triangles");
    cr_assert(strstr(tdm_client_server_error(c)->message, "over max_scene_triangles") != NULL, "%s",
              tdm_client_server_error(c)->message);
    tdm_scene_info *sl;
    size_t n;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 0, "%zu scenes stored after a refused put", n);
    tdm_scene_list_free(sl);
    cr_assert_eq(tdm_robot_scene_put(c, "post", rid, arm_scene_text, sid, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    const double q[3][2] = {{0, 0}, {0.6, -0.4}, {-1.2, 0.9}};
    for (int k = 0; k < 3; k++) {
        tdm_query_result r;
        cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q[k], 2, 1, 0, &r, NULL), 0, "%s", tdm_client_errstr(c));
        cr_assert_eq((int)r.colliding, arm_oracle_collides(q[k]), "configuration %d", k);
    }
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

/* --max-robot-triangles: a robot's elements are built by its first scene, one tree per
 * distinct shape (three spheres of one radius: one tree), counted against the limit; a
 * robot over it stays stored, each scene put of it is refused with LIMIT naming the element
 * and the limit (the later ones at once, with the first one's message), and nothing else
 * changes. */
static char *spheres_urdf(const char *name, double r1, double r2, double r3)
{
    char *t = malloc(1024);
    cr_assert_not_null(t);
    snprintf(t, 1024,
             "<robot name='%s'><link name='base'>"
             "<collision><geometry><sphere radius='%.4f'/></geometry></collision>"
             "<collision><origin xyz='1 0 0'/><geometry><sphere radius='%.4f'/></geometry></collision>"
             "<collision><origin xyz='2 0 0'/><geometry><sphere radius='%.4f'/></geometry></collision>"
             "</link><joint name='j' type='revolute'><parent link='base'/><child link='far'/>"
             "<origin xyz='0 5 0'/><axis xyz='0 0 1'/><limit lower='-1' upper='1' effort='1' velocity='1'/></joint>"
             "<link name='far'><collision><geometry><box size='0.1 0.1 0.1'/></geometry></collision></link></robot>",
             name, r1, r2, r3);
    return t;
}

Test(robotd, robot_triangles_count_against_max_robot_triangles)
{
    tdm_primitive ball = tdm_primitive_sphere(0.5);
    tdm_mesh *m;
    cr_assert_eq(tdm_primitive_mesh(&ball, TDM_PRIMITIVE_TOLERANCE, &m, NULL, NULL, 0), TDM_OK);
    uint32_t t = m->n_tris;
    tdm_mesh_free(m);
    char limit[32];
    snprintf(limit, sizeof limit, "%u", t + t / 2); /* one sphere's tree, not two */
    const char *flags[] = {"--max-robot-triangles", limit, NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    static const char world[] = "world:\n  collision_objects:\n    - id: box\n"
                                "      primitives: [{type: box, dimensions: [0.2, 0.2, 0.2]}]\n"
                                "      primitive_poses: [{position: [1, 0, 0], orientation: [0, 0, 0, 1]}]\n";
    uint8_t same[32], other[32], sid[32], bad[32];
    char *u = spheres_urdf("same", 0.5, 0.5, 0.5);
    cr_assert_eq(tdm_robot_put(c, "same", u, NULL, NULL, 0, same, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    free(u);
    cr_assert_eq(tdm_robot_scene_put(c, "same", same, world, sid, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    tdm_query_result r;
    const double q0[1] = {0};
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q0, 1, 1, 0, &r, NULL), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(r.colliding, 1, "the middle sphere holds the box");
    u = spheres_urdf("other", 0.5, 0.5001, 0.5);
    cr_assert_eq(tdm_robot_put(c, "other", u, NULL, NULL, 0, other, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    free(u);
    for (int k = 0; k < 2; k++) { /* the second refused with the first refusal's message */
        expect_server_error(c, tdm_robot_scene_put(c, "other", other, world, bad, NULL, NULL),
                            "two sphere trees over the limit", TDM_SERVER_LIMIT, "world", -1,
                            "link 'base' collision 1: the robot's collision elements have more than");
        cr_assert(strstr(tdm_client_server_error(c)->message, "over max_robot_triangles") != NULL, "%s",
                  tdm_client_server_error(c)->message);
    }
    tdm_scene_info *sl;
    size_t n;
    cr_assert_eq(tdm_scene_list(c, &sl, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 1, "%zu scenes: the refused robot's none", n);
    tdm_scene_list_free(sl);
    cr_assert_eq(tdm_query_configs(c, sid, TDM_QUERY_BOOL, q0, 1, 1, 0, &r, NULL), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(r.colliding, 1);
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

/* A URDF of one link with a mesh element per scale in `scales` (a scale of 0: the mesh under
 * its second filename, scale 1). */
static char *bar_urdf(const double *scales, int n)
{
    char *t = malloc(4096);
    cr_assert_not_null(t);
    int k = snprintf(t, 4096, "<robot name='bars'><link name='base'>");
    for (int i = 0; i < n; i++)
        k += snprintf(t + k, 4096 - (size_t)k,
                      "<collision><origin xyz='%d 0 0'/><geometry><mesh filename='%s' scale='%g %g %g'/></geometry>"
                      "</collision>",
                      i, scales[i] ? "meshes/bar.obj" : "meshes/bar2.obj", scales[i] ? scales[i] : 1,
                      scales[i] ? scales[i] : 1, scales[i] ? scales[i] : 1);
    snprintf(t + k, 4096 - (size_t)k, "</link></robot>");
    return t;
}

/* RobotPut counts the robot's distinct meshes (a stored mesh at a scale once, whatever its
 * filename) against max_robot_triangles before storing it: one sure to be over is refused and
 * nothing is stored; one within is stored, and its scenes build. */
Test(robotd, robot_put_counts_distinct_meshes_against_max_robot_triangles)
{
    tdm_mesh *m;
    char err[256];
    cr_assert_eq(tdm_mesh_load_file(dmn_path(&D, "meshes/bar.obj"), TDM_ORIGIN_RAW, &m, err, sizeof err), TDM_OK, "%s",
                 err);
    uint32_t t = m->n_tris;
    tdm_mesh_free(m);
    char limit[32];
    snprintf(limit, sizeof limit, "%u", 2 * t); /* two distinct meshes and scales, not three */
    const char *flags[] = {"--max-robot-triangles", limit, NULL};
    dmn_start(&D, flags);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t bar[32], rid[32], sid[32];
    put_bar(c, bar);
    tdm_robot_mesh_ref refs[2] = {{"meshes/bar.obj", {0}}, {"meshes/bar2.obj", {0}}};
    memcpy(refs[0].mesh_id, bar, 32);
    memcpy(refs[1].mesh_id, bar, 32);
    /* bar at 1 (three times, once under its second name) and at 2: two trees, 2t triangles */
    const double ok_scales[5] = {1, 1, 0, 2, 2};
    char *u = bar_urdf(ok_scales, 5);
    cr_assert_eq(tdm_robot_put(c, "within", u, NULL, refs, 2, rid, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    free(u);
    static const char world[] = "world:\n  collision_objects:\n    - id: box\n"
                                "      primitives: [{type: box, dimensions: [0.2, 0.2, 0.2]}]\n"
                                "      primitive_poses: [{position: [0, 5, 0], orientation: [0, 0, 0, 1]}]\n";
    cr_assert_eq(tdm_robot_scene_put(c, "within", rid, world, sid, NULL, NULL), 0, "%s", tdm_client_errstr(c));
    /* bar at 1, 2 and 3: three trees, 3t */
    const double over_scales[4] = {1, 2, 0, 3};
    u = bar_urdf(over_scales, 4);
    uint8_t rid2[32];
    expect_server_error(c, tdm_robot_put(c, "over", u, NULL, refs, 2, rid2, NULL, NULL), "three distinct bar trees",
                        TDM_SERVER_LIMIT, "meshes", -1, "over max_robot_triangles");
    char want[160];
    snprintf(want, sizeof want, "have %u triangles (3 distinct meshes and scales", 3 * t);
    cr_assert(strstr(tdm_client_server_error(c)->message, want), "%s", tdm_client_server_error(c)->message);
    free(u);
    tdm_robot_info *list;
    size_t n;
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 1, "%zu robots: the refused one is stored", n);
    cr_assert_str_eq(list[0].name, "within");
    tdm_robot_info_free(list);
    cr_assert_eq(dmn_count_files(&D, "robots"), 1);
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

/* tdm_robot_put_files with a mesh file that exists but cannot be read, after one that could: the
 * error names the file, and no robot is stored (until 2026-11-30 the first upload's success was
 * returned, with no robot stored and robot_id left as it was). */
Test(robotd, put_files_refuses_an_unreadable_later_mesh)
{
    write_file("meshes/junk.obj", "this is not a mesh\n");
    char *u = urdf_with("<link name='link3'><collision><geometry><cylinder radius='0.03' length='0.1'/>",
                        "<link name='link3'><collision><geometry><mesh filename='meshes/junk.obj'/>");
    write_file("junk.urdf", u);
    free(u);
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32];
    memset(rid, 0xcd, sizeof rid);
    int rc = tdm_robot_put_files(c, "junk", dmn_path(&D, "junk.urdf"), NULL, rid, NULL, NULL);
    cr_assert_eq(rc, TDM_CLIENT_EINVAL, "rc %d: %s", rc, tdm_client_errstr(c));
    cr_assert(strstr(tdm_client_errstr(c), "junk.urdf:") && strstr(tdm_client_errstr(c), "junk.obj"), "%s",
              tdm_client_errstr(c));
    tdm_robot_info *list;
    size_t n;
    cr_assert_eq(tdm_robot_list(c, &list, &n), 0, "%s", tdm_client_errstr(c));
    cr_assert_eq(n, 0, "%zu robots stored", n);
    tdm_robot_info_free(list);
    tdm_client_free(c);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

Test(robotd, concurrent_scene_puts_store_each_once)
{
    static const char *const worlds[3] = {"scene.yaml", "world1.yaml", "world2.yaml"};
    dmn_start(&D, NULL);
    tdm_client *c = lib_connect(D.unix_addr);
    uint8_t rid[32];
    put_arm(c, rid);
    for (int round = 0; round < 2; round++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, N_PUTTERS);
        putter ps[N_PUTTERS];
        memset(ps, 0, sizeof ps);
        pthread_t th[N_PUTTERS];
        for (int k = 0; k < N_PUTTERS; k++) {
            ps[k] = (putter){.addr = k % 2 ? D.unix_addr : D.tcp_addr, .rid = rid,
                             .path = k == N_PUTTERS - 1 ? NULL : dmn_path(&D, worlds[k % 3]), .go = &go};
            cr_assert_eq(pthread_create(&th[k], NULL, putter_run, &ps[k]), 0);
        }
        for (int k = 0; k < N_PUTTERS; k++) pthread_join(th[k], NULL);
        pthread_barrier_destroy(&go);
        int created[3] = {0, 0, 0};
        for (int k = 0; k < N_PUTTERS - 1; k++) {
            cr_assert_eq(ps[k].rc, 0, "round %d, put %d (%s): %s", round, k, worlds[k % 3], ps[k].err);
            cr_assert_eq(memcmp(ps[k].sid, ps[k % 3].sid, 32), 0, "round %d: put %d's id is not its world's", round, k);
            created[k % 3] += ps[k].created;
        }
        for (int w = 0; w < 3; w++)
            cr_assert_eq(created[w], 1, "round %d, %s: %d puts told they created it", round, worlds[w], created[w]);
        cr_assert_neq(memcmp(ps[0].sid, ps[1].sid, 32), 0);
        cr_assert_neq(memcmp(ps[1].sid, ps[2].sid, 32), 0);
        putter *b = &ps[N_PUTTERS - 1];
        cr_assert_eq(b->rc, TDM_CLIENT_ESERVER, "round %d: the bad world: %s", round, b->err);
        cr_assert_eq(b->code, TDM_SERVER_BAD_ROBOT, "round %d: %s", round, b->err);
        cr_assert(strstr(b->err, "world:4:") != NULL, "round %d: %s", round, b->err);
        tdm_scene_info *sl;
        size_t n;
        cr_assert_eq(tdm_scene_list(c, &sl, &n), 0, "%s", tdm_client_errstr(c));
        cr_assert_eq(n, 3, "round %d: %zu scenes stored", round, n);
        tdm_scene_list_free(sl);
        cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 3, "round %d: scene files", round);
        for (int w = 0; w < 3; w++) cr_assert_eq(tdm_scene_delete(c, ps[w].sid), 0, "%s", tdm_client_errstr(c));
        cr_assert_eq(tdm_scene_list(c, &sl, &n), 0);
        cr_assert_eq(n, 0, "round %d: %zu scenes left after the deletes", round, n);
        tdm_scene_list_free(sl);
    }
    tdm_client_free(c);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}
