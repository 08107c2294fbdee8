/* Tenants (issue 14, point 4): a real tandemd started with --tenants-file
 * (daemon_util.h), talked to through libtandem and raw frames.
 *
 *   two_tenants_*          no cross-tenant listing, use or deletion; identical content
 *                          put by both is stored once (one file) and a delete by one
 *                          leaves it to the other; a foreign id gets exactly the
 *                          error of an unknown one
 *   ownership_survives_*   ownership of meshes, scenes and robots after a restart, and
 *                          a data directory written without tenants (no owner
 *                          records) belonging to the default tenant
 *   bad_tenants_files_*    each malformed tenants file stops start-up with its line
 *   unix_peer_uid_*        a Unix-socket client without a token is the tenant uid:N
 *                          of its user (SO_PEERCRED). The test runs as one user, so
 *                          only the positive path is checked: that another uid gets
 *                          another namespace follows from the name, and that a TCP
 *                          client without a token is refused is checked
 *   wrong_tokens_block_*   wrong tokens from one address block its Hellos for
 *                          --auth-fail-block seconds, another address unaffected
 *   shared_robot_*         a robot and its robot scene put by both tenants: stored once,
 *                          deleted for one only; a second Hello cannot change tenant
 *   refusals_and_closes_*  point 5: refused requests and client closes at their level,
 *                          rate-limited with the count held back
 *   orphan_and_*           owner records after crashes: an orphan removed, an unreadable
 *                          one keeping its object unloaded (for nobody)
 *   put_racing_a_delete_*  a MeshPut answered "exists" by the writer while a delete
 *                          pipelined after it unlists the mesh: stored again
 *
 * Meshes are cubes made here; robots are tests/arm_fixture.h's arm. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tandem/tandem.h>

#include "arm_fixture.h"
#include "daemon_util.h"
#include "tools/io.h"

static dmn D;

#define ALICE "alice-token-0123456789abcdef"
#define BOB "bob-token-0123456789abcdef-xyz"
#define DFLT "default-token-0123456789abcdef"

static void suite_init(void) { dmn_init(&D, "tenants"); }
static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(tenants, .init = suite_init, .fini = suite_fini, .timeout = 120);

static const char *write_file(const char *name, const char *text)
{
    dmn_write(&D, name, text);
    const char *path = dmn_path(&D, name);
    chmod(path, 0600);
    return path;
}

static const char *tenants_file(void)
{
    return write_file("tenants", "# who may connect\n\nalice " ALICE "\n  bob\t" BOB "  \ndefault " DFLT "\n");
}

static tdm_client *connect_as(const char *addr, const char *token)
{
    tdm_connect_opts o = {.addr = addr, .timeout_ms = 5000, .io_timeout_ms = 30000, .auth_token = token,
                          .client_name = "test_tenants"};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert_not_null(c);
    cr_assert_eq(tdm_client_err(c), 0, "connecting to %s: %s", addr, tdm_client_errstr(c));
    return c;
}

/* An axis-aligned cube of side `side` centred at the origin. */
static void put_cube(tdm_client *c, const char *name, float side, uint8_t id[32], int *created)
{
    float h = side / 2, v[24];
    for (int i = 0; i < 8; i++) {
        v[3 * i] = i & 1 ? h : -h;
        v[3 * i + 1] = i & 2 ? h : -h;
        v[3 * i + 2] = i & 4 ? h : -h;
    }
    static const uint32_t t[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                                   2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
    cr_assert_eq(tdm_mesh_put(c, name, v, 8, t, 12, id, created), 0, "put %s: %s", name, tdm_client_errstr(c));
}

/* A scene: mesh `fixed` at the identity (object 1) and mesh `moving` movable (object 2). */
static void put_scene(tdm_client *c, const char *name, const uint8_t fixed[32], const uint8_t moving[32],
                      uint8_t sid[32], int *created)
{
    tdm_scene_object o[2] = {{.object_id = 1}, {.object_id = 2, .movable = 1}};
    memcpy(o[0].mesh_id, fixed, 32);
    memcpy(o[1].mesh_id, moving, 32);
    cr_assert_eq(tdm_scene_put(c, name, o, 2, NULL, 0, sid, created, NULL, 0, NULL), 0, "put scene %s: %s", name,
                 tdm_client_errstr(c));
}

/* One query with the movable object at x: 1 when it collides. Asserts success. */
static int query_at(tdm_client *c, const uint8_t sid[32], double x)
{
    double pose[7] = {x, 0, 0, 0, 0, 0, 1};
    tdm_query_result r;
    cr_assert_eq(tdm_query(c, sid, TDM_QUERY_BOOL, pose, 1, 1, 0, &r, NULL), 0, "query: %s", tdm_client_errstr(c));
    return (int)r.colliding;
}

static void expect_server_error(tdm_client *c, int rc, const char *what, int code, const char *field,
                                const char *message)
{
    cr_assert_eq(rc, TDM_CLIENT_ESERVER, "%s: rc %d (%s), expected a server error", what, rc, tdm_client_errstr(c));
    const tdm_server_error *e = tdm_client_server_error(c);
    cr_assert_not_null(e, "%s", what);
    cr_assert_eq(e->code, code, "%s: code %d (%s: %s), expected %d", what, e->code, e->field, e->message, code);
    cr_assert_str_eq(e->field, field, "%s", what);
    cr_assert_str_eq(e->message, message, "%s: the message", what);
    cr_assert_eq(tdm_client_err(c), 0, "%s: the connection must stay usable", what);
}

static void hex(const uint8_t id[32], char out[65])
{
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", id[i]);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The names c lists for its meshes, sorted (a restart loads files in directory order),
 * joined by ','. */
static char *mesh_names(tdm_client *c, size_t *n)
{
    tdm_mesh_info *l;
    cr_assert_eq(tdm_mesh_list(c, &l, n), 0, "%s", tdm_client_errstr(c));
    const char *v[16];
    cr_assert(*n <= 16);
    for (size_t i = 0; i < *n; i++) v[i] = l[i].name;
    qsort(v, *n, sizeof *v, cmp_str);
    char *s = calloc(1, 4096);
    for (size_t i = 0; i < *n; i++) {
        if (i) strcat(s, ",");
        strncat(s, v[i], 200);
    }
    tdm_mesh_list_free(l);
    return s;
}

/* MeshInfo.scenes of mesh id as c lists it (asserts it is listed). */
static uint32_t scenes_using(tdm_client *c, const uint8_t id[32])
{
    tdm_mesh_info *l;
    size_t n;
    cr_assert_eq(tdm_mesh_list(c, &l, &n), 0, "%s", tdm_client_errstr(c));
    uint32_t k = UINT32_MAX;
    for (size_t i = 0; i < n; i++)
        if (!memcmp(l[i].mesh_id, id, 32)) k = l[i].scenes;
    tdm_mesh_list_free(l);
    cr_assert_neq(k, UINT32_MAX, "the mesh is not listed");
    return k;
}

static size_t n_scenes(tdm_client *c)
{
    tdm_scene_info *l;
    size_t n;
    cr_assert_eq(tdm_scene_list(c, &l, &n), 0, "%s", tdm_client_errstr(c));
    tdm_scene_list_free(l);
    return n;
}

Test(tenants, two_tenants_are_apart)
{
    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *a = connect_as(D.tcp_addr, ALICE), *b = connect_as(D.tcp_addr, BOB);
    uint8_t cube[32], cube_b[32], big[32], only_a[32];
    int created;
    put_cube(a, "a-cube", 1.0f, cube, &created);
    cr_assert_eq(created, 1);
    put_cube(a, "a-only", 3.0f, only_a, &created);
    cr_assert_eq(created, 1);
    put_cube(b, "b-cube", 1.0f, cube_b, &created);
    cr_assert_eq(memcmp(cube, cube_b, 32), 0, "the same content has the same id");
    cr_assert_eq(created, 1, "new to bob (that alice stored it is not his to learn)");
    put_cube(b, "b-cube-again", 1.0f, cube_b, &created);
    cr_assert_eq(created, 0, "bob's own cube again");
    put_cube(b, "b-big", 2.0f, big, &created);
    cr_assert_eq(created, 1);
    cr_assert_eq(dmn_count_files(&D, "meshes"), 3, "the shared cube is stored once: 3 mesh files");

    /* listing: each its own, under its own names */
    size_t n;
    char *names = mesh_names(a, &n);
    cr_assert_str_eq(names, "a-cube,a-only");
    free(names);
    names = mesh_names(b, &n);
    cr_assert_str_eq(names, "b-big,b-cube");
    free(names);

    /* use: alice's scene on her own mesh; bob cannot see it, use it, or build on her mesh */
    uint8_t sa[32], shared[32], shared_b[32];
    put_scene(a, "a-scene", only_a, cube, sa, &created);
    cr_assert_eq(n_scenes(b), 0, "bob lists none of alice's scenes");
    double pose[7] = {0, 0, 0, 0, 0, 0, 1};
    tdm_query_result r;
    uint8_t unknown[32];
    memset(unknown, 0x5a, 32);
    expect_server_error(b, tdm_query(b, unknown, TDM_QUERY_BOOL, pose, 1, 1, 0, &r, NULL), "query, unknown scene",
                        TDM_SERVER_UNKNOWN_SCENE, "scene_id", "no stored scene has this id");
    expect_server_error(b, tdm_query(b, sa, TDM_QUERY_BOOL, pose, 1, 1, 0, &r, NULL), "query, alice's scene",
                        TDM_SERVER_UNKNOWN_SCENE, "scene_id", "no stored scene has this id");
    expect_server_error(b, tdm_scene_delete(b, unknown), "delete, unknown scene", TDM_SERVER_UNKNOWN_SCENE, "scene_id",
                        "no stored scene has this id");
    expect_server_error(b, tdm_scene_delete(b, sa), "delete, alice's scene", TDM_SERVER_UNKNOWN_SCENE, "scene_id",
                        "no stored scene has this id");
    expect_server_error(b, tdm_mesh_delete(b, unknown), "delete, unknown mesh", TDM_SERVER_UNKNOWN_MESH, "mesh_id",
                        "no stored mesh has this id");
    expect_server_error(b, tdm_mesh_delete(b, only_a), "delete, alice's mesh", TDM_SERVER_UNKNOWN_MESH, "mesh_id",
                        "no stored mesh has this id");
    char msg[200], h[65];
    tdm_scene_object o[2] = {{.object_id = 1}, {.object_id = 2, .movable = 1}};
    memcpy(o[1].mesh_id, cube, 32);
    memcpy(o[0].mesh_id, unknown, 32);
    hex(unknown, h);
    snprintf(msg, sizeof msg, "object 0: no stored mesh has id %s", h);
    expect_server_error(b, tdm_scene_put(b, "x", o, 2, NULL, 0, shared, NULL, NULL, 0, NULL),
                        "scene on an unknown mesh", TDM_SERVER_UNKNOWN_MESH, "objects", msg);
    memcpy(o[0].mesh_id, only_a, 32);
    hex(only_a, h);
    snprintf(msg, sizeof msg, "object 0: no stored mesh has id %s", h);
    expect_server_error(b, tdm_scene_put(b, "x", o, 2, NULL, 0, shared, NULL, NULL, 0, NULL), "scene on alice's mesh",
                        TDM_SERVER_UNKNOWN_MESH, "objects", msg);
    cr_assert_eq(query_at(a, sa, 1.8), 1, "alice's own scene answers (the unit cube across the big one's face)");
    cr_assert_eq(query_at(a, sa, 0.0), 0, "(the unit cube inside the big one touches no face)");

    /* a scene both put: stored once; deleted by alice, still bob's */
    put_scene(a, "shared-a", cube, cube, shared, &created);
    cr_assert_eq(created, 1);
    put_scene(b, "shared-b", cube_b, cube_b, shared_b, &created);
    cr_assert_eq(created, 1, "new to bob");
    cr_assert_eq(memcmp(shared, shared_b, 32), 0);
    cr_assert_eq(dmn_count_files(&D, "scenes"), 2, "alice's scene and the shared one");
    /* MeshList's counts are the tenant's own scenes */
    cr_assert_eq(scenes_using(a, cube), 2, "alice: a-scene and the shared scene use the cube");
    cr_assert_eq(scenes_using(a, only_a), 1);
    cr_assert_eq(scenes_using(b, cube), 1, "bob: only the shared scene is his");
    cr_assert_eq(scenes_using(b, big), 0);
    cr_assert_eq(tdm_scene_delete(a, shared), 0, "%s", tdm_client_errstr(a));
    expect_server_error(a, tdm_query(a, shared, TDM_QUERY_BOOL, pose, 1, 1, 0, &r, NULL), "alice's deleted scene",
                        TDM_SERVER_UNKNOWN_SCENE, "scene_id", "no stored scene has this id");
    cr_assert_eq(query_at(b, shared, 0.5), 1, "bob's copy of the shared scene still answers");
    cr_assert_eq(query_at(b, shared, 5.0), 0);
    cr_assert_eq(dmn_count_files(&D, "scenes"), 2, "the shared scene's file stays for bob");

    /* alice's cube: in use by her own scene, then deleted for her; bob keeps it */
    expect_server_error(a, tdm_mesh_delete(a, cube), "alice's cube in her scene", TDM_SERVER_MESH_IN_USE, "mesh_id",
                        "the mesh is used by 1 scene");
    cr_assert_eq(tdm_scene_delete(a, sa), 0, "%s", tdm_client_errstr(a));
    cr_assert_eq(tdm_mesh_delete(a, cube), 0, "%s", tdm_client_errstr(a));
    names = mesh_names(a, &n);
    cr_assert_str_eq(names, "a-only");
    free(names);
    names = mesh_names(b, &n);
    cr_assert_str_eq(names, "b-big,b-cube");
    free(names);
    cr_assert_eq(query_at(b, shared, 0.5), 1, "bob's scene on the cube still answers");
    cr_assert_eq(dmn_count_files(&D, "meshes"), 3, "the cube's file stays for bob");
    expect_server_error(a, tdm_mesh_delete(a, cube), "alice deletes the cube again", TDM_SERVER_UNKNOWN_MESH,
                        "mesh_id", "no stored mesh has this id");

    /* bob lets go too: the files go */
    expect_server_error(b, tdm_mesh_delete(b, cube), "bob's cube in his scene", TDM_SERVER_MESH_IN_USE, "mesh_id",
                        "the mesh is used by 1 scene");
    cr_assert_eq(tdm_scene_delete(b, shared), 0, "%s", tdm_client_errstr(b));
    cr_assert_eq(tdm_mesh_delete(b, cube), 0, "%s", tdm_client_errstr(b));
    cr_assert_eq(dmn_count_files(&D, "scenes"), 0);
    cr_assert_eq(dmn_count_files(&D, "meshes"), 2, "alice's a-only and bob's b-big");
    cr_assert_eq(dmn_count_files(&D, "owners"), 2, "one owner record each for a-only and b-big");
    tdm_client_free(a);
    tdm_client_free(b);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* The arm's bar mesh (its vertices as the robot scene reads them back), put by c. */
static void put_bar(tdm_client *c, const char *name, uint8_t id[32])
{
    const char *path = write_file("bar.obj", bar_obj);
    tdm_mesh *m;
    char err[256];
    cr_assert_eq(tdm_mesh_load_file(path, TDM_ORIGIN_RAW, &m, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_mesh_put(c, name, m->verts, m->n_verts, m->tris, m->n_tris, id, NULL), 0, "%s",
                 tdm_client_errstr(c));
    tdm_mesh_free(m);
}

static size_t n_robots(tdm_client *c)
{
    tdm_robot_info *l;
    size_t n;
    cr_assert_eq(tdm_robot_list(c, &l, &n), 0, "%s", tdm_client_errstr(c));
    tdm_robot_info_free(l);
    return n;
}

/* An ephemeral scene put by two tenants: held once, each tenant's own (one's delete leaves it to the
 * other), and no owner record or scene file is ever written for it, nor removed; gone after a
 * restart, while the meshes (stored) and their records stay. */
Test(tenants, ephemeral_scenes_of_two_tenants_write_no_records)
{
    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *a = connect_as(D.tcp_addr, ALICE), *b = connect_as(D.tcp_addr, BOB);
    uint8_t cube[32], big[32], big_b[32], sa[32], sb[32], stored[32];
    int created;
    put_cube(a, "a-cube", 1.0f, cube, &created);
    put_cube(a, "a-big", 2.0f, big, &created);
    put_cube(b, "b-big", 2.0f, big_b, &created);
    put_cube(b, "b-cube", 1.0f, cube, &created);
    int records = dmn_count_files(&D, "owners");
    cr_assert_eq(records, 2, "the two shared meshes' owner records");

    tdm_client_set_ephemeral_scenes(a, 1);
    tdm_client_set_ephemeral_scenes(b, 1);
    put_scene(a, "a-eph", big, cube, sa, &created);
    cr_assert_eq(created, 1);
    put_scene(b, "b-eph", big_b, cube, sb, &created);
    cr_assert_eq(created, 1, "new to bob");
    cr_assert(!memcmp(sa, sb, 32), "one content, one ephemeral id");
    cr_assert_eq(dmn_count_files(&D, "scenes"), 0, "an ephemeral scene was written");
    cr_assert_eq(dmn_count_files(&D, "owners"), records, "an ephemeral scene's owners were written");
    tdm_client_set_ephemeral_scenes(a, 0);
    put_scene(a, "a-stored", big, cube, stored, &created);
    cr_assert(created == 1 && memcmp(stored, sa, 32) != 0, "the stored scene of the same content is another");
    cr_assert_eq(dmn_count_files(&D, "scenes"), 1);
    cr_assert_eq(dmn_count_files(&D, "owners"), records + 1, "a stored scene of a tenant has its owner record");
    records++;

    /* alice lets go: bob's still answers; no record changes */
    cr_assert_eq(tdm_scene_delete(a, sa), 0, "%s", tdm_client_errstr(a));
    cr_assert_eq(query_at(b, sb, 1.4), 1);
    cr_assert_eq(query_at(b, sb, 0.0), 0);
    cr_assert_eq(dmn_count_files(&D, "owners"), records);
    expect_server_error(a, tdm_scene_delete(a, sa), "alice deletes it again", TDM_SERVER_UNKNOWN_SCENE, "scene_id",
                        "no stored scene has this id");
    /* alice takes it again, then bob lets go: still alice's */
    tdm_client_set_ephemeral_scenes(a, 1);
    put_scene(a, "a-eph-again", big, cube, sa, &created);
    cr_assert_eq(created, 1);
    cr_assert_eq(tdm_scene_delete(b, sb), 0, "%s", tdm_client_errstr(b));
    cr_assert_eq(query_at(a, sa, 1.4), 1);
    cr_assert_eq(dmn_count_files(&D, "owners"), records);
    cr_assert_eq(dmn_count_files(&D, "scenes"), 1);
    tdm_client_free(a);
    tdm_client_free(b);

    /* a restart: the stored scene and the meshes are back, the ephemeral scene is not */
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
    dmn_start(&D, flags);
    a = connect_as(D.tcp_addr, ALICE);
    cr_assert_eq(n_scenes(a), 1);
    cr_assert_eq(query_at(a, stored, 1.4), 1);
    double pose[7] = {1.4, 0, 0, 0, 0, 0, 1};
    tdm_query_result r;
    expect_server_error(a, tdm_query(a, sa, TDM_QUERY_BOOL, pose, 1, 1, 0, &r, NULL),
                        "the ephemeral scene after a restart", TDM_SERVER_UNKNOWN_SCENE, "scene_id",
                        "no stored scene has this id");
    tdm_client_free(a);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

/* Polls a query of sid on c until it answers UNKNOWN_SCENE (the server notices a closed connection in
 * its own time): 1 when it did within 5 s, 0 while it still answers. */
static int gone_within(tdm_client *c, const uint8_t sid[32])
{
    double pose[7] = {0, 0, 0, 0, 0, 0, 1};
    tdm_query_result r;
    for (int i = 0; i < 500; i++) {
        int rc = tdm_query(c, sid, TDM_QUERY_BOOL, pose, 1, 1, 0, &r, NULL);
        if (rc == TDM_CLIENT_ESERVER && tdm_client_server_error(c)->code == TDM_SERVER_UNKNOWN_SCENE) return 1;
        cr_assert_eq(rc, 0, "query: %s", tdm_client_errstr(c));
        struct timespec ms10 = {0, 10 * 1000000L};
        nanosleep(&ms10, NULL);
    }
    return 0;
}

/* An ephemeral scene lives while a connection that put it is open (each put holds it, for the putting
 * connection): it outlives its first holder's close while another holds it, goes with the last one for
 * every tenant (a client that dies leaves none behind), and a connection that deleted it and put it
 * again holds it once. Another connection that only uses it does not hold it. */
Test(tenants, ephemeral_scenes_go_with_the_connections_that_put_them)
{
    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *a1 = connect_as(D.tcp_addr, ALICE), *a2 = connect_as(D.unix_addr, ALICE);
    tdm_client *watch = connect_as(D.tcp_addr, ALICE), *b = connect_as(D.tcp_addr, BOB);
    uint8_t cube[32], big[32], s[32], s2[32], s3[32];
    int created;
    put_cube(a1, "cube", 1.0f, cube, &created);
    put_cube(a1, "big", 2.0f, big, &created);
    tdm_client_set_ephemeral_scenes(a1, 1);
    tdm_client_set_ephemeral_scenes(a2, 1);
    put_scene(a1, "eph", big, cube, s, &created);
    cr_assert_eq(created, 1);
    put_scene(a2, "eph again", big, cube, s2, &created);
    cr_assert(created == 0 && !memcmp(s, s2, 32));
    cr_assert_eq(query_at(watch, s, 1.4), 1, "the tenant's other connection uses it");

    /* a1 goes: a2 still holds it */
    tdm_client_free(a1);
    struct timespec settle = {0, 200 * 1000000L};
    nanosleep(&settle, NULL);
    cr_assert_eq(query_at(watch, s, 1.4), 1, "the scene went with its first holder");
    cr_assert_eq(query_at(watch, s, 0.0), 0);
    /* a2 goes: nobody holds it, and it is gone; its meshes are free to delete */
    tdm_client_free(a2);
    cr_assert(gone_within(watch, s), "the ephemeral scene outlived every connection that put it");
    expect_server_error(watch, tdm_scene_delete(watch, s), "SceneDelete of a dropped scene", TDM_SERVER_UNKNOWN_SCENE,
                        "scene_id", "no stored scene has this id");
    cr_assert_eq(tdm_mesh_delete(watch, big), 0, "%s", tdm_client_errstr(watch));
    put_cube(watch, "big", 2.0f, big, &created);

    /* two tenants: held by each one's connection; gone with the last, for both */
    uint8_t cube_b[32], big_b[32];
    put_cube(b, "b-cube", 1.0f, cube_b, &created);
    put_cube(b, "b-big", 2.0f, big_b, &created);
    tdm_client_set_ephemeral_scenes(b, 1);
    tdm_client *a3 = connect_as(D.tcp_addr, ALICE), *b_watch = connect_as(D.tcp_addr, BOB);
    tdm_client_set_ephemeral_scenes(a3, 1);
    put_scene(b, "b-eph", big_b, cube_b, s2, &created);
    put_scene(a3, "a-eph", big, cube, s3, &created);
    cr_assert(!memcmp(s2, s3, 32), "one content, one ephemeral id");
    tdm_client_free(b);
    nanosleep(&settle, NULL);
    cr_assert_eq(query_at(b_watch, s2, 1.4), 1, "bob still owns it while alice's connection holds it");
    tdm_client_free(a3);
    cr_assert(gone_within(b_watch, s2), "the shared ephemeral scene outlived its holders (bob's view)");
    cr_assert(gone_within(watch, s2), "the shared ephemeral scene outlived its holders (alice's view)");

    /* deleted and put again on one connection: held once, gone with it */
    tdm_client *a4 = connect_as(D.unix_addr, ALICE);
    tdm_client_set_ephemeral_scenes(a4, 1);
    put_scene(a4, "eph", big, cube, s3, &created);
    cr_assert_eq(tdm_scene_delete(a4, s3), 0, "%s", tdm_client_errstr(a4));
    for (int i = 0; i < 3; i++) { /* put twice on one connection: one hold */
        put_scene(a4, "eph", big, cube, s3, &created);
        cr_assert_eq(created, i == 0);
    }
    tdm_client_free(a4);
    cr_assert(gone_within(watch, s3), "the scene put again outlived its connection");
    cr_assert_eq(n_scenes(watch), 0);
    cr_assert(dmn_running(&D));
    tdm_client_free(watch);
    tdm_client_free(b_watch);
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

/* Scene k: mesh `fixed` as object 1, mesh `moving` movable as object k + 2 (so each k is another
 * content). Returns tdm_scene_put's rc. */
static int put_scene_k(tdm_client *c, const uint8_t fixed[32], const uint8_t moving[32], uint32_t k, uint8_t sid[32],
                       int *created)
{
    tdm_scene_object o[2] = {{.object_id = 1}, {.object_id = k + 2, .movable = 1}};
    memcpy(o[0].mesh_id, fixed, 32);
    memcpy(o[1].mesh_id, moving, 32);
    return tdm_scene_put(c, "k", o, 2, NULL, 0, sid, created, NULL, 0, NULL);
}

/* --max-ephemeral-scenes bounds the ephemeral scenes one connection holds: one more is refused
 * (ERROR_LIMIT, field "ephemeral"), one it holds may be put again, a delete makes room, another
 * connection has room of its own, and holds of scenes another connection deleted do not count; many
 * puts and deletes on one connection keep working (its table of holds reused). */
Test(tenants, ephemeral_scenes_per_connection_are_limited)
{
    const char *flags[] = {"--tenants-file", tenants_file(), "--max-ephemeral-scenes", "3", NULL};
    dmn_start(&D, flags);
    tdm_client *a = connect_as(D.tcp_addr, ALICE), *a2 = connect_as(D.tcp_addr, ALICE);
    uint8_t cube[32], big[32], sid[8][32];
    int created;
    put_cube(a, "cube", 1.0f, cube, &created);
    put_cube(a, "big", 2.0f, big, &created);
    tdm_client_set_ephemeral_scenes(a, 1);
    tdm_client_set_ephemeral_scenes(a2, 1);
    for (uint32_t k = 0; k < 3; k++)
        cr_assert_eq(put_scene_k(a, big, cube, k, sid[k], &created), 0, "%s", tdm_client_errstr(a));
    expect_server_error(a, put_scene_k(a, big, cube, 3, sid[3], &created), "a fourth ephemeral scene",
                        TDM_SERVER_LIMIT, "ephemeral",
                        "this connection holds 3 ephemeral scenes, max-ephemeral-scenes 3: delete some first");
    cr_assert_eq(put_scene_k(a, big, cube, 1, sid[1], &created), 0, "one it holds, again: %s", tdm_client_errstr(a));
    cr_assert_eq(created, 0);
    tdm_client_set_ephemeral_scenes(a, 0); /* stored scenes are not counted */
    cr_assert_eq(put_scene_k(a, big, cube, 3, sid[3], &created), 0, "%s", tdm_client_errstr(a));
    tdm_client_set_ephemeral_scenes(a, 1);
    cr_assert_eq(put_scene_k(a2, big, cube, 4, sid[4], &created), 0, "another connection: %s", tdm_client_errstr(a2));
    cr_assert_eq(tdm_scene_delete(a, sid[0]), 0, "%s", tdm_client_errstr(a));
    cr_assert_eq(put_scene_k(a, big, cube, 5, sid[5], &created), 0, "after a delete: %s", tdm_client_errstr(a));
    /* a2 deletes a's three (the tenant's deletes): a's holds of them no longer count */
    const int mine[3] = {1, 2, 5};
    for (int i = 0; i < 3; i++) cr_assert_eq(tdm_scene_delete(a2, sid[mine[i]]), 0, "%s", tdm_client_errstr(a2));
    for (uint32_t k = 6; k < 9; k++)
        cr_assert_eq(put_scene_k(a, big, cube, k, sid[k - 6], &created), 0, "scene %u after a2's deletes: %s", k,
                     tdm_client_errstr(a));
    /* many puts and deletes on one connection */
    for (uint32_t k = 0; k < 3; k++) cr_assert_eq(tdm_scene_delete(a, sid[k]), 0, "%s", tdm_client_errstr(a));
    for (uint32_t k = 100; k < 400; k++) {
        cr_assert_eq(put_scene_k(a, big, cube, k, sid[0], &created), 0, "scene %u: %s", k, tdm_client_errstr(a));
        cr_assert_eq(created, 1);
        cr_assert_eq(tdm_scene_delete(a, sid[0]), 0, "scene %u: %s", k, tdm_client_errstr(a));
    }
    cr_assert_eq(n_scenes(a), 2, "the stored scene and a2's");
    tdm_client_free(a);
    tdm_client_free(a2);
    cr_assert(dmn_running(&D));
    cr_assert_eq(WEXITSTATUS(dmn_stop(&D, SIGTERM)), 0);
}

Test(tenants, ownership_survives_a_restart)
{
    /* first without tenants: what it stores has no owner record, and is the default tenant's */
    dmn_start(&D, NULL);
    tdm_client *d = connect_as(D.tcp_addr, NULL);
    uint8_t legacy[32], cube[32], bar[32], rid[32], rsid[32];
    int created;
    put_cube(d, "legacy", 1.5f, legacy, &created);
    tdm_client_free(d);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    cr_assert_eq(dmn_count_files(&D, "owners"), 0, "a single-tenant server writes no owner records");

    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *a = connect_as(D.tcp_addr, ALICE), *b = connect_as(D.tcp_addr, BOB);
    d = connect_as(D.tcp_addr, DFLT);
    size_t n;
    char *names = mesh_names(d, &n);
    cr_assert_str_eq(names, "legacy", "the default tenant owns what was stored without tenants");
    free(names);
    names = mesh_names(a, &n);
    cr_assert_str_eq(names, "");
    free(names);

    put_cube(a, "a-cube", 1.0f, cube, &created);
    put_cube(b, "b-cube", 1.0f, cube, &created);
    cr_assert_eq(created, 1);
    put_bar(a, "a-bar", bar);
    tdm_robot_mesh_ref ref = {"meshes/bar.obj", {0}};
    memcpy(ref.mesh_id, bar, 32);
    /* bob cannot build a robot on alice's mesh: as an unknown one */
    char msg[300], h[65];
    hex(bar, h);
    snprintf(msg, sizeof msg, "mesh 'meshes/bar.obj': no stored mesh has id %s", h);
    expect_server_error(b, tdm_robot_put(b, "arm", urdf_text, srdf_text, &ref, 1, rid, NULL, NULL),
                        "robot on alice's mesh", TDM_SERVER_UNKNOWN_MESH, "meshes", msg);
    cr_assert_eq(tdm_robot_put(a, "a-arm", urdf_text, srdf_text, &ref, 1, rid, &created, NULL), 0, "%s",
                 tdm_client_errstr(a));
    cr_assert_eq(tdm_robot_scene_put(a, "a-world", rid, scene_text, rsid, &created, NULL), 0, "%s",
                 tdm_client_errstr(a));
    cr_assert_eq(n_robots(b), 0);
    expect_server_error(b, tdm_robot_delete(b, rid), "delete alice's robot", TDM_SERVER_UNKNOWN_ROBOT, "robot_id",
                        "no stored robot has this id");
    expect_server_error(b, tdm_robot_scene_put(b, "w", rid, scene_text, rsid, NULL, NULL), "scene on alice's robot",
                        TDM_SERVER_UNKNOWN_ROBOT, "robot_id", "no stored robot has this id");
    double cfg[3] = {0, 0, 0};
    tdm_query_result r;
    expect_server_error(b, tdm_query_configs(b, rsid, TDM_QUERY_BOOL, cfg, 3, 1, 0, &r, NULL),
                        "query alice's robot scene", TDM_SERVER_UNKNOWN_SCENE, "scene_id",
                        "no stored scene has this id");
    cr_assert_eq(tdm_query_configs(a, rsid, TDM_QUERY_BOOL, cfg, 3, 1, 0, &r, NULL), 0, "%s", tdm_client_errstr(a));
    tdm_client_free(a);
    tdm_client_free(b);
    tdm_client_free(d);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);

    dmn_start(&D, flags);
    a = connect_as(D.tcp_addr, ALICE);
    b = connect_as(D.tcp_addr, BOB);
    d = connect_as(D.tcp_addr, DFLT);
    names = mesh_names(a, &n);
    cr_assert_str_eq(names, "a-bar,a-cube");
    free(names);
    names = mesh_names(b, &n);
    cr_assert_str_eq(names, "b-cube");
    free(names);
    names = mesh_names(d, &n);
    cr_assert_str_eq(names, "legacy");
    free(names);
    cr_assert_eq(n_robots(a), 1);
    cr_assert_eq(n_robots(b), 0);
    cr_assert_eq(n_scenes(a), 1);
    cr_assert_eq(n_scenes(b), 0);
    expect_server_error(b, tdm_robot_delete(b, rid), "after the restart", TDM_SERVER_UNKNOWN_ROBOT, "robot_id",
                        "no stored robot has this id");
    cr_assert_eq(tdm_query_configs(a, rsid, TDM_QUERY_BOOL, cfg, 3, 1, 0, &r, NULL), 0, "%s", tdm_client_errstr(a));
    /* alice lets the cube go; after a kill -9 (acknowledged means durable) it is bob's alone */
    cr_assert_eq(tdm_mesh_delete(a, cube), 0, "%s", tdm_client_errstr(a));
    int st = dmn_stop(&D, SIGKILL);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    tdm_client_free(a);
    tdm_client_free(b);
    tdm_client_free(d);
    dmn_start(&D, flags);
    a = connect_as(D.tcp_addr, ALICE);
    b = connect_as(D.tcp_addr, BOB);
    names = mesh_names(a, &n);
    cr_assert_str_eq(names, "a-bar");
    free(names);
    names = mesh_names(b, &n);
    cr_assert_str_eq(names, "b-cube");
    free(names);
    tdm_client_free(a);
    tdm_client_free(b);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* Start-up with this tenants file text fails, and the log says `needle`. */
static void expect_bad_file(const char *text, const char *needle)
{
    const char *path = write_file("bad-tenants", text);
    const char *flags[] = {"--tenants-file", path, NULL};
    int st;
    cr_assert_eq(dmn_try_start(&D, flags, &st), -1, "tandemd started with a bad tenants file:\n%s", text);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "it should exit with an error");
    char *log = dmn_log(&D);
    char want[700];
    snprintf(want, sizeof want, "tenants file %s%s", path, needle);
    cr_assert(strstr(log, want), "the log does not say '%s':\n%s", want, log);
    free(log);
}

Test(tenants, bad_tenants_files_are_rejected)
{
    expect_bad_file("alice " ALICE "\nbob short-token\n",
                    ", line 2: tenant bob's token has 11 characters: at least 22 are needed");
    expect_bad_file("# x\nalice " ALICE "\n\nalice " BOB "\n", ", line 4: tenant alice is already on line 2");
    expect_bad_file("alice " ALICE "\nbob " ALICE "\n",
                    ", line 2: tenant bob has the same token as tenant alice (line 1)");
    expect_bad_file("al/ice " ALICE "\n", ", line 1: the name has the character '/' at 3");
    expect_bad_file("alice " ALICE " extra\n", ", line 1: more than two fields");
    expect_bad_file("alice\n", ", line 1: a tenant's name and no token");
    expect_bad_file("# nobody\n\n", ": no tenant");
    /* a tenants file and an auth token: which one would the default tenant use? */
    const char *flags[] = {"--tenants-file", tenants_file(), "--auth-token", ALICE, NULL};
    int st;
    cr_assert_eq(dmn_try_start(&D, flags, &st), -1);
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "an auth token (auth-token, auth-token-file or $TANDEMD_AUTH_TOKEN) and a tenants file"),
              "%s", log);
    free(log);
}

Test(tenants, unix_peer_uid_namespace)
{
    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *u = connect_as(D.unix_addr, NULL);
    uint8_t id[32];
    int created;
    put_cube(u, "mine", 1.0f, id, &created);
    size_t n;
    char *names = mesh_names(u, &n);
    cr_assert_str_eq(names, "mine");
    free(names);
    /* the same user again: the same namespace */
    tdm_client *u2 = connect_as(D.unix_addr, NULL);
    names = mesh_names(u2, &n);
    cr_assert_str_eq(names, "mine");
    free(names);
    /* a token over the Unix socket selects its tenant instead */
    tdm_client *a = connect_as(D.unix_addr, ALICE);
    names = mesh_names(a, &n);
    cr_assert_str_eq(names, "", "alice does not see uid:%d's mesh", (int)getuid());
    free(names);
    /* TCP without a token: refused */
    tdm_connect_opts o = {.addr = D.tcp_addr, .timeout_ms = 5000};
    tdm_client *t = tdm_client_connect_with(&o);
    cr_assert(t && tdm_client_err(t) != 0, "a TCP client without a token must be refused");
    tdm_client_free(t);
    tdm_client_free(u);
    tdm_client_free(u2);
    tdm_client_free(a);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    char *log = dmn_log(&D);
    char want[64];
    snprintf(want, sizeof want, "tenant uid:%d", (int)getuid());
    cr_assert(strstr(log, want), "the log names the tenant '%s':\n%s", want, log);
    free(log);
    /* and after a restart */
    dmn_start(&D, flags);
    u = connect_as(D.unix_addr, NULL);
    names = mesh_names(u, &n);
    cr_assert_str_eq(names, "mine");
    free(names);
    tdm_client_free(u);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

/* A raw TCP connection to the daemon from the local address `from` (any 127/8 one). */
static int connect_from(const char *from)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_in me = {.sin_family = AF_INET}, to = {.sin_family = AF_INET, .sin_port = htons(D.port)};
    inet_pton(AF_INET, from, &me.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    cr_assert_eq(bind(fd, (struct sockaddr *)&me, sizeof me), 0, "bind %s: %s", from, strerror(errno));
    cr_assert_eq(connect(fd, (struct sockaddr *)&to, sizeof to), 0, "%s", strerror(errno));
    return fd;
}

/* Hello with token from `from`: the reply (freed by the caller). */
static Tandem__V1__Reply *hello_from(const char *from, const char *token)
{
    int fd = connect_from(from);
    Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
    h.protocol_version = 1;
    h.auth_token = (char *)token;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = 7;
    rq.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
    rq.hello = &h;
    Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
    close(fd);
    return rep;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

Test(tenants, wrong_tokens_block_the_address)
{
    const char *flags[] = {"--tenants-file", tenants_file(), "--auth-fail-max", "3", "--auth-fail-window", "60",
                           "--auth-fail-block", "3", NULL};
    dmn_start(&D, flags);
    for (int i = 0; i < 3; i++) {
        Tandem__V1__Reply *rep = hello_from("127.0.0.1", "a-wrong-guess-of-enough-length");
        expect_error(rep, "a wrong token", 7, 3 /* UNAUTHENTICATED */, "auth_token", -1);
        cr_assert_str_eq(rep->error->message, "wrong or missing auth token");
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    double blocked_at = mono_s();
    /* blocked: even the right token */
    Tandem__V1__Reply *rep = hello_from("127.0.0.1", ALICE);
    expect_error(rep, "blocked, the right token", 7, 3 /* UNAUTHENTICATED */, "auth_token", -1);
    cr_assert(strstr(rep->error->message, "too many wrong auth tokens from this address"), "'%s'",
              rep->error->message);
    tandem__v1__reply__free_unpacked(rep, NULL);
    /* another address is not */
    rep = hello_from("127.0.0.2", ALICE);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_HELLO, "127.0.0.2 must be served");
    tandem__v1__reply__free_unpacked(rep, NULL);
    /* and the block ends */
    while (mono_s() - blocked_at < 3.2) nanosleep(&(struct timespec){0, 100000000L}, NULL);
    rep = hello_from("127.0.0.1", ALICE);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_HELLO, "the block should be over: %s",
                 rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? rep->error->message : "");
    tandem__v1__reply__free_unpacked(rep, NULL);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    char *log = dmn_log(&D);
    cr_assert(strstr(log, "127.0.0.1:"), "%s", log);
    cr_assert(strstr(log, "3 wrong auth tokens within 60 s (auth-fail-max): its Hellos are refused for 3 s"), "%s",
              log);
    free(log);
}

/* A robot and its robot scene put by both tenants: stored once, each tenant's own until
 * it deletes them, and a connection cannot change tenant by saying Hello again. */
Test(tenants, shared_robot_and_robot_scene)
{
    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *a = connect_as(D.tcp_addr, ALICE), *b = connect_as(D.tcp_addr, BOB);
    uint8_t bar[32], bar_b[32], rid[32], rid_b[32], rsid[32], rsid_b[32];
    int created;
    put_bar(a, "a-bar", bar);
    put_bar(b, "b-bar", bar_b);
    cr_assert_eq(memcmp(bar, bar_b, 32), 0);
    tdm_robot_mesh_ref ref = {"meshes/bar.obj", {0}};
    memcpy(ref.mesh_id, bar, 32);
    cr_assert_eq(tdm_robot_put(a, "a-arm", urdf_text, srdf_text, &ref, 1, rid, &created, NULL), 0, "%s",
                 tdm_client_errstr(a));
    cr_assert_eq(created, 1);
    cr_assert_eq(tdm_robot_put(b, "b-arm", urdf_text, srdf_text, &ref, 1, rid_b, &created, NULL), 0, "%s",
                 tdm_client_errstr(b));
    cr_assert_eq(created, 1, "the same robot: new to bob");
    cr_assert_eq(memcmp(rid, rid_b, 32), 0);
    cr_assert_eq(tdm_robot_scene_put(a, "a-world", rid, scene_text, rsid, &created, NULL), 0, "%s",
                 tdm_client_errstr(a));
    cr_assert_eq(created, 1);
    cr_assert_eq(tdm_robot_scene_put(b, "b-world", rid, scene_text, rsid_b, &created, NULL), 0, "%s",
                 tdm_client_errstr(b));
    cr_assert_eq(created, 1);
    cr_assert_eq(memcmp(rsid, rsid_b, 32), 0);
    cr_assert_eq(dmn_count_files(&D, "robots"), 1);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 1);
    tdm_robot_info *l;
    size_t n;
    cr_assert_eq(tdm_robot_list(b, &l, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(l[0].name, "b-arm", "bob's name for the robot");
    cr_assert_eq(l[0].scenes, 1, "bob's robot scene on it");
    tdm_robot_info_free(l);

    /* alice: the robot is in use by her scene; she deletes the scene, then the robot */
    expect_server_error(a, tdm_robot_delete(a, rid), "alice's robot in her scene", TDM_SERVER_ROBOT_IN_USE, "robot_id",
                        "the robot is used by 1 robot scene");
    cr_assert_eq(tdm_scene_delete(a, rsid), 0, "%s", tdm_client_errstr(a));
    cr_assert_eq(tdm_robot_delete(a, rid), 0, "%s", tdm_client_errstr(a));
    cr_assert_eq(tdm_mesh_delete(a, bar), 0, "%s", tdm_client_errstr(a));
    cr_assert_eq(n_robots(a), 0);
    cr_assert_eq(n_scenes(a), 0);
    double cfg[3] = {0.3, 0.2, 0.05};
    tdm_query_result r;
    expect_server_error(a, tdm_query_configs(a, rsid, TDM_QUERY_BOOL, cfg, 3, 1, 0, &r, NULL), "alice's deleted scene",
                        TDM_SERVER_UNKNOWN_SCENE, "scene_id", "no stored scene has this id");
    /* bob: everything still there and answering */
    cr_assert_eq(tdm_query_configs(b, rsid, TDM_QUERY_BOOL, cfg, 3, 1, 0, &r, NULL), 0, "%s", tdm_client_errstr(b));
    cr_assert_eq(n_robots(b), 1);
    cr_assert_eq(dmn_count_files(&D, "robots"), 1);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 1);
    cr_assert_eq(dmn_count_files(&D, "meshes"), 1);

    /* a second Hello with alice's token on bob's connection: refused, still bob */
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
    h.protocol_version = 1;
    h.auth_token = BOB;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = 1;
    rq.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
    rq.hello = &h;
    Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_HELLO);
    tandem__v1__reply__free_unpacked(rep, NULL);
    h.auth_token = ALICE;
    rq.id = 2;
    rep = raw_call_or_fail(fd, &rq);
    expect_error(rep, "a second Hello as alice", 2, 1 /* BAD_REQUEST */, "auth_token", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    Tandem__V1__RobotList rl = TANDEM__V1__ROBOT_LIST__INIT;
    rq.id = 3;
    rq.body_case = TANDEM__V1__REQUEST__BODY_ROBOT_LIST;
    rq.robot_list = &rl;
    rep = raw_call_or_fail(fd, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_ROBOT_LIST);
    cr_assert_eq(rep->robot_list->n_robots, 1, "still bob: his robot");
    cr_assert_str_eq(rep->robot_list->robots[0]->name, "b-arm");
    tandem__v1__reply__free_unpacked(rep, NULL);
    close(fd);

    /* bob lets go: the files go */
    cr_assert_eq(tdm_scene_delete(b, rsid), 0, "%s", tdm_client_errstr(b));
    cr_assert_eq(tdm_robot_delete(b, rid), 0, "%s", tdm_client_errstr(b));
    cr_assert_eq(tdm_mesh_delete(b, bar), 0, "%s", tdm_client_errstr(b));
    cr_assert_eq(dmn_count_files(&D, "robots"), 0);
    cr_assert_eq(dmn_count_files(&D, "robot-scenes"), 0);
    cr_assert_eq(dmn_count_files(&D, "meshes"), 0);
    cr_assert_eq(dmn_count_files(&D, "owners"), 0);
    tdm_client_free(a);
    tdm_client_free(b);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}

static int count_in(const char *log, const char *needle)
{
    int n = 0;
    for (const char *p = log; (p = strstr(p, needle)); p++) n++;
    return n;
}

/* Point 5: a protocol error is a warn line with its reason, at most one a second with the
 * count held back; a client's close is an info line once it said Hello, a debug one before. */
Test(tenants, refusals_and_closes_are_logged_at_their_level)
{
    dmn_start(&D, NULL);
    double t0 = mono_s();
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    enum { GARBAGE = 40 };
    static const uint8_t junk[3] = {0xff, 0xff, 0xff}; /* not a Request */
    for (int i = 0; i < GARBAGE; i++) cr_assert_eq(raw_send_frame(fd, junk, sizeof junk), 0);
    for (int i = 0; i < GARBAGE; i++) {
        Tandem__V1__Reply *rep = NULL;
        char err[256];
        cr_assert_eq(raw_recv(fd, 5000, &rep, err, sizeof err), RAW_REPLY, "%s", err);
        expect_error(rep, "garbage", 0, 1 /* BAD_REQUEST */, "frame", -1);
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    /* a second later, one more: its line counts the ones held back */
    nanosleep(&(struct timespec){1, 100000000L}, NULL);
    cr_assert_eq(raw_send_frame(fd, junk, sizeof junk), 0);
    Tandem__V1__Reply *rep = NULL;
    char err[256];
    cr_assert_eq(raw_recv(fd, 5000, &rep, err, sizeof err), RAW_REPLY, "%s", err);
    tandem__v1__reply__free_unpacked(rep, NULL);
    close(fd);
    int silent = raw_connect(D.tcp_addr); /* closes before its Hello */
    cr_assert(silent >= 0);
    close(silent);
    nanosleep(&(struct timespec){0, 300000000L}, NULL);
    /* the closes are seen in the server's own time: the first one's line is awaited (a close the
       server has not seen by the SIGTERM would be its own, and not logged as the client's) */
    cr_assert(dmn_log_has(&D, "the client closed the connection", 30000), "the client's close was not logged in 30 s");
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    double secs = mono_s() - t0;
    char *log = dmn_log(&D);
    int warns = count_in(log, "warn  conn ");
    int refusals = count_in(log, "refused: ERROR_BAD_REQUEST (frame[-1])");
    cr_assert(refusals >= 1 && refusals <= (int)secs + 2, "%d refusal lines in %.1f s for %d bad frames:\n%s", refusals,
              secs, GARBAGE, log);
    cr_assert_eq(warns, refusals, "every refusal line is a warn line:\n%s", log);
    char want[120];
    snprintf(want, sizeof want, "(and %d more refusals at this level since the last such line)",
             GARBAGE + 1 - refusals);
    cr_assert(strstr(log, want), "the lines held back are counted ('%s'):\n%s", want, log);
    cr_assert_eq(count_in(log, "the client closed the connection"), 1, "the silent one's close is debug:\n%s", log);
    const char *close_line = strstr(log, "the client closed the connection");
    while (close_line > log && close_line[-1] != '\n') close_line--;
    cr_assert(strstr(close_line, " info  conn ") == strstr(close_line, " "), "the close is an info line:\n%s", log);
    free(log);
}

/* Owner records and crashes: a record whose object is gone (a crash between the two) is
 * removed at start-up; an object whose record cannot be read is not loaded, for nobody
 * (not the default tenant either), and both files stay. */
Test(tenants, orphan_and_unreadable_owner_records)
{
    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *a = connect_as(D.tcp_addr, ALICE);
    uint8_t x[32], y[32];
    int created;
    put_cube(a, "x", 1.0f, x, &created);
    put_cube(a, "y", 2.0f, y, &created);
    tdm_client_free(a);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    cr_assert_eq(dmn_count_files(&D, "owners"), 2);
    char hx[65], hy[65], path[700];
    hex(x, hx);
    hex(y, hy);
    snprintf(path, sizeof path, "%s/meshes/%s.mesh", D.data_dir, hx);
    cr_assert_eq(unlink(path), 0, "%s: %s", path, strerror(errno)); /* x's record is now an orphan */
    snprintf(path, sizeof path, "%s/owners/%s.owners", D.data_dir, hy);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    cr_assert_eq(fseek(f, 70, SEEK_SET), 0);
    int ch = fgetc(f);
    cr_assert_eq(fseek(f, 70, SEEK_SET), 0);
    fputc(ch ^ 0x20, f); /* the checksum no longer matches */
    cr_assert_eq(fclose(f), 0);

    dmn_start(&D, flags);
    a = connect_as(D.tcp_addr, ALICE);
    tdm_client *d = connect_as(D.tcp_addr, DFLT);
    size_t n;
    char *names = mesh_names(a, &n);
    cr_assert_str_eq(names, "", "x is gone and y is not loaded");
    free(names);
    names = mesh_names(d, &n);
    cr_assert_str_eq(names, "", "y is not the default tenant's either");
    free(names);
    tdm_client_free(a);
    tdm_client_free(d);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    char *log = dmn_log(&D);
    char want[200];
    snprintf(want, sizeof want, "removed the owner record %s: its object is not stored", hx);
    cr_assert(strstr(log, want), "%s", log);
    snprintf(want, sizeof want, "meshes/%s.mesh: its owner record could not be read", hy);
    cr_assert(strstr(log, want), "%s", log);
    free(log);
    cr_assert_eq(dmn_count_files(&D, "owners"), 1, "y's record stays");
    cr_assert_eq(dmn_count_files(&D, "meshes"), 1, "y's mesh stays");
}

/* Appends rq, framed, to buf at *len. */
static void frame_into(uint8_t *buf, size_t cap, size_t *len, const Tandem__V1__Request *rq)
{
    size_t n;
    uint8_t *b = raw_pack(rq, &n);
    cr_assert(b && *len + 4 + n <= cap);
    buf[*len] = (uint8_t)(n >> 24);
    buf[*len + 1] = (uint8_t)(n >> 16);
    buf[*len + 2] = (uint8_t)(n >> 8);
    buf[*len + 3] = (uint8_t)n;
    memcpy(buf + *len + 4, b, n);
    *len += 4 + n;
    free(b);
}

/* A MeshPut of a stored mesh pipelined with a MeshDelete of it, in one write: the put
 * reaches the writer first and finds the file, the delete unlists the mesh and removes
 * the file after. The put must not answer for a mesh about to vanish: it is stored
 * again, and listed once both are answered. */
Test(tenants, put_racing_a_delete_is_stored_again)
{
    const char *flags[] = {"--tenants-file", tenants_file(), NULL};
    dmn_start(&D, flags);
    tdm_client *a = connect_as(D.tcp_addr, ALICE);
    uint8_t id[32];
    int created;
    put_cube(a, "cube", 1.0f, id, &created);
    tdm_mesh_info *l;
    size_t n;

    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
    h.protocol_version = 1;
    h.auth_token = ALICE;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = 1;
    rq.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
    rq.hello = &h;
    Tandem__V1__Reply *rep = raw_call_or_fail(fd, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_HELLO);
    tandem__v1__reply__free_unpacked(rep, NULL);

    float v[24];
    for (int i = 0; i < 8; i++) {
        v[3 * i] = i & 1 ? 0.5f : -0.5f;
        v[3 * i + 1] = i & 2 ? 0.5f : -0.5f;
        v[3 * i + 2] = i & 4 ? 0.5f : -0.5f;
    }
    uint32_t t[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                      2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
    Tandem__V1__MeshPut mp = TANDEM__V1__MESH_PUT__INIT;
    mp.name = "cube";
    mp.n_vertices = 24;
    mp.vertices = v;
    mp.n_triangles = 36;
    mp.triangles = t;
    Tandem__V1__MeshDelete md = TANDEM__V1__MESH_DELETE__INIT;
    md.mesh_id.data = id;
    md.mesh_id.len = 32;
    uint8_t buf[4096];
    size_t len = 0;
    Tandem__V1__Request put = TANDEM__V1__REQUEST__INIT, del = TANDEM__V1__REQUEST__INIT;
    put.id = 10;
    put.body_case = TANDEM__V1__REQUEST__BODY_MESH_PUT;
    put.mesh_put = &mp;
    del.id = 11;
    del.body_case = TANDEM__V1__REQUEST__BODY_MESH_DELETE;
    del.mesh_delete = &md;
    frame_into(buf, sizeof buf, &len, &put);
    frame_into(buf, sizeof buf, &len, &del);
    cr_assert_eq(raw_write_all(fd, buf, len), 0);
    int got_put = 0, got_del = 0;
    for (int i = 0; i < 2; i++) {
        char err[256];
        cr_assert_eq(raw_recv(fd, 10000, &rep, err, sizeof err), RAW_REPLY, "%s", err);
        if (rep->id == 10) {
            cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_MESH_PUT, "the put: %s",
                         rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? rep->error->message : "");
            cr_assert_eq(rep->mesh_put->created, 1, "stored again after the delete");
            got_put = 1;
        } else {
            cr_assert_eq(rep->id, 11);
            cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_MESH_DELETE);
            got_del = 1;
        }
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    cr_assert(got_put && got_del);
    close(fd);
    cr_assert_eq(tdm_mesh_list(a, &l, &n), 0);
    cr_assert_eq(n, 1, "the put came last: the mesh is stored");
    tdm_mesh_list_free(l);
    cr_assert_eq(dmn_count_files(&D, "meshes"), 1);
    tdm_client_free(a);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
    dmn_start(&D, flags); /* and it is on disk */
    a = connect_as(D.tcp_addr, ALICE);
    cr_assert_eq(tdm_mesh_list(a, &l, &n), 0);
    cr_assert_eq(n, 1);
    tdm_mesh_list_free(l);
    tdm_client_free(a);
    cr_assert_eq(dmn_stop(&D, SIGTERM), 0);
}
