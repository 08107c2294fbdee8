/* robot/planning_scene.h: MoveIt planning scenes and motion-planning requests read
 * from YAML files that the tests write, every field checked by value, and every
 * bad input refused with its file, line and YAML path. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "robot/planning_scene.h"

static char dir[256];
static const char *const files[] = {"scene.yaml", "request.yaml", "big.yaml"};

static void suite_init(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tandem-ps-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void suite_fini(void)
{
    char p[512];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

TestSuite(planning_scene, .init = suite_init, .fini = suite_fini, .timeout = 60);

#define SENTINEL_SCENE ((tdm_planning_scene *)(uintptr_t)0x1)
#define SENTINEL_REQUEST ((tdm_motion_request *)(uintptr_t)0x1)
#define EPS 1e-12
#define S2 0.7071067811865476 /* sin and cos of 45 degrees: a quarter turn's quaternion */

/* Writes `text` to dir/name; the path in a static buffer. */
static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    cr_assert_eq(fclose(f), 0);
    return path;
}

static tdm_planning_scene *scene_ok(const char *text)
{
    const char *path = write_file("scene.yaml", text);
    tdm_planning_scene *s = SENTINEL_SCENE;
    char err[512] = "";
    int rc = tdm_planning_scene_read(path, &s, err, sizeof err);
    cr_assert_eq(rc, TDM_OK, "valid scene refused (%d): %s\n%s", rc, err, text);
    cr_assert_not_null(s);
    return s;
}

static tdm_motion_request *request_ok(const char *text)
{
    const char *path = write_file("request.yaml", text);
    tdm_motion_request *r = SENTINEL_REQUEST;
    char err[512] = "";
    int rc = tdm_motion_request_read(path, &r, err, sizeof err);
    cr_assert_eq(rc, TDM_OK, "valid request refused (%d): %s\n%s", rc, err, text);
    cr_assert_not_null(r);
    return r;
}

/* The error must be `code`, nothing returned, and the message must start with
 * "FILE:LINE: PATH: " (no path: "FILE:LINE: ") and contain `what`. */
static void check_message(const char *file, int rc, int code, const char *err, int line, const char *path,
                          const char *what, const char *text)
{
    cr_assert_eq(rc, code, "got %d (%s), want %d (%s); input:\n%s", rc, err, code, tdm_strerror(code), text);
    char want[700];
    if (path) snprintf(want, sizeof want, "%s:%d: %s: ", file, line, path);
    else snprintf(want, sizeof want, "%s:%d: ", file, line);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "message '%s' does not start with '%s'", err, want);
    cr_assert_not_null(strstr(err, what), "message '%s' does not say '%s'", err, what);
}

static void scene_error(const char *text, int code, int line, const char *path, const char *what)
{
    const char *file = write_file("scene.yaml", text);
    tdm_planning_scene *s = SENTINEL_SCENE;
    char err[512] = "";
    int rc = tdm_planning_scene_read(file, &s, err, sizeof err);
    cr_assert_null(s, "a scene was returned with error %d", rc);
    check_message(file, rc, code, err, line, path, what, text);
}

static void request_error(const char *text, int code, int line, const char *path, const char *what)
{
    const char *file = write_file("request.yaml", text);
    tdm_motion_request *r = SENTINEL_REQUEST;
    char err[512] = "";
    int rc = tdm_motion_request_read(file, &r, err, sizeof err);
    cr_assert_null(r, "a request was returned with error %d", rc);
    check_message(file, rc, code, err, line, path, what, text);
}

/* An MBM-style scene; the error tests edit its lines (numbered from 1 as here). */
static const char *const base[] = {
    NULL,
    /*  1 */ "robot_state:",
    /*  2 */ "  joint_state:",
    /*  3 */ "    name: [j1, j2, j3]",
    /*  4 */ "    position: [0.5, -1.25, 2]",
    /*  5 */ "  multi_dof_joint_state:",
    /*  6 */ "    joint_names: [virtual_joint]",
    /*  7 */ "    transforms: [{translation: [1, 2, 3], rotation: [0, 0, 0.7071067811865476, 0.7071067811865476]}]",
    /*  8 */ "allowed_collision_matrix:",
    /*  9 */ "  entry_names: [a, b, c]",
    /* 10 */ "  entry_values:",
    /* 11 */ "    - [false, true, false]",
    /* 12 */ "    - [true, false, false]",
    /* 13 */ "    - [false, false, true]",
    /* 14 */ "world:",
    /* 15 */ "  collision_objects:",
    /* 16 */ "    - id: table",
    /* 17 */ "      primitives:",
    /* 18 */ "        - type: box",
    /* 19 */ "          dimensions: [1.5, 0.8, 0.04]",
    /* 20 */ "        - type: cylinder",
    /* 21 */ "          dimensions: [0.7, 0.02]",
    /* 22 */ "      primitive_poses:",
    /* 23 */ "        - position: [0.5, 0, -0.02]",
    /* 24 */ "          orientation: [0, 0, 0, 1]",
    /* 25 */ "        - position: [0.1, 0.2, -0.4]",
    /* 26 */ "          orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]",
    /* 27 */ "    - primitive_poses:",
    /* 28 */ "        - orientation: [0, 0, 0, 1]",
    /* 29 */ "          position: [-1, 0.25, 1e-3]",
    /* 30 */ "      id: ball",
    /* 31 */ "      primitives:",
    /* 32 */ "        - dimensions: [0.125]",
    /* 33 */ "          type: sphere",
    /* 34 */ "robot_model_name: panda",
    /* 35 */ "name: test scene",
};
#define BASE_LINES 35

/* The base scene with lines replaced: pairs (line, text), ended by 0. A text may
 * hold several lines. The result is static. */
static const char *edit(int line, ...)
{
    static char buf[8192];
    const char *repl[BASE_LINES + 1] = {0};
    va_list ap;
    va_start(ap, line);
    for (int l = line; l != 0; l = va_arg(ap, int)) repl[l] = va_arg(ap, const char *);
    va_end(ap);
    size_t n = 0;
    for (int l = 1; l <= BASE_LINES; l++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\n", repl[l] ? repl[l] : base[l]);
    cr_assert_lt(n, sizeof buf);
    return buf;
}

static void assert_mat(const tdm_dmat3 *m, const double want[9], const char *what)
{
    for (int i = 0; i < 9; i++)
        cr_assert_float_eq(m->m[i / 3][i % 3], want[i], EPS, "%s: r[%d][%d] = %.17g, want %.17g", what, i / 3, i % 3,
                           m->m[i / 3][i % 3], want[i]);
}
static void assert_vec(tdm_dvec3 v, double x, double y, double z, const char *what)
{
    cr_assert_float_eq(v.x, x, EPS, "%s: x = %.17g, want %.17g", what, v.x, x);
    cr_assert_float_eq(v.y, y, EPS, "%s: y = %.17g, want %.17g", what, v.y, y);
    cr_assert_float_eq(v.z, z, EPS, "%s: z = %.17g, want %.17g", what, v.z, z);
}
static const double IDENTITY[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
static const double RZ90[9] = {0, -1, 0, 1, 0, 0, 0, 0, 1}; /* a quarter turn about z */

/* ---- what is read ---------------------------------------------------------------- */

Test(planning_scene, mbm_scene_reads_back_every_field)
{
    tdm_planning_scene *s = scene_ok(edit(0));
    cr_assert_str_eq(s->name, "test scene");
    cr_assert_str_eq(s->robot_model_name, "panda");
    cr_assert_eq(s->n_objects, 2);

    const tdm_ps_object *t = &s->objects[0];
    cr_assert_str_eq(t->id, "table");
    cr_assert_null(t->frame_id);
    cr_assert_eq(t->has_pose, 0);
    assert_mat(&t->pose.r, IDENTITY, "table pose");
    cr_assert_eq(t->n_primitives, 2);
    cr_assert_eq(t->n_meshes, 0);
    cr_assert_null(t->meshes);
    const tdm_ps_primitive *box = &t->primitives[0], *cyl = &t->primitives[1];
    cr_assert_eq(box->type, TDM_PS_BOX);
    cr_assert_eq(box->n_dims, 3);
    cr_assert_eq(box->dims[0], 1.5);
    cr_assert_eq(box->dims[1], 0.8);
    cr_assert_eq(box->dims[2], 0.04);
    assert_mat(&box->pose.r, IDENTITY, "box");
    assert_vec(box->pose.t, 0.5, 0, -0.02, "box");
    cr_assert_eq(cyl->type, TDM_PS_CYLINDER);
    cr_assert_eq(cyl->n_dims, 2);
    cr_assert_eq(cyl->dims[0], 0.7, "cylinder height first");
    cr_assert_eq(cyl->dims[1], 0.02, "cylinder radius second");
    assert_mat(&cyl->pose.r, RZ90, "cylinder");
    assert_vec(cyl->pose.t, 0.1, 0.2, -0.4, "cylinder");

    const tdm_ps_object *b = &s->objects[1];
    cr_assert_str_eq(b->id, "ball", "keys in any order");
    cr_assert_eq(b->n_primitives, 1);
    cr_assert_eq(b->primitives[0].type, TDM_PS_SPHERE);
    cr_assert_eq(b->primitives[0].n_dims, 1);
    cr_assert_eq(b->primitives[0].dims[0], 0.125);
    assert_vec(b->primitives[0].pose.t, -1, 0.25, 1e-3, "sphere");

    /* the ACM: symmetric, true = never checked; the diagonal is ignored */
    cr_assert_eq(s->acm.n, 3);
    cr_assert_str_eq(s->acm.names[2], "c");
    cr_assert_eq(s->acm.allowed[0 * 3 + 1], 1);
    cr_assert_eq(s->acm.allowed[1 * 3 + 0], 1);
    cr_assert_eq(s->acm.allowed[0 * 3 + 2], 0);
    cr_assert_eq(s->acm.allowed[2 * 3 + 2], 0, "the diagonal is ignored, as MoveIt does");
    cr_assert_eq(tdm_ps_acm_allowed(&s->acm, "a", "b"), 1);
    cr_assert_eq(tdm_ps_acm_allowed(&s->acm, "b", "a"), 1);
    cr_assert_eq(tdm_ps_acm_allowed(&s->acm, "a", "c"), 0);
    cr_assert_eq(tdm_ps_acm_allowed(&s->acm, "a", "zz"), 0, "an unknown name is checked");
    cr_assert_eq(s->acm.n_defaults, 0);

    /* joint defaults and the root's virtual joint */
    const tdm_ps_robot_state *st = &s->robot_state;
    cr_assert_eq(st->n_joints, 3);
    cr_assert_str_eq(st->joint_names[1], "j2");
    cr_assert_eq(st->positions[1], -1.25);
    double v = 99;
    cr_assert_eq(tdm_ps_robot_state_position(st, "j3", &v), 1);
    cr_assert_eq(v, 2.0);
    cr_assert_eq(tdm_ps_robot_state_position(st, "j4", &v), 0);
    cr_assert_eq(v, 2.0, "untouched when the joint is absent");
    cr_assert_eq(st->n_multi_dof, 1);
    cr_assert_str_eq(st->multi_dof_names[0], "virtual_joint");
    tdm_xform root = tdm_ps_robot_state_root(st, "virtual_joint");
    assert_mat(&root.r, RZ90, "root");
    assert_vec(root.t, 1, 2, 3, "root");
    root = tdm_ps_robot_state_root(st, NULL);
    assert_vec(root.t, 1, 2, 3, "the only multi-DOF joint");
    root = tdm_ps_robot_state_root(st, "other");
    assert_mat(&root.r, IDENTITY, "unknown joint");
    assert_vec(root.t, 0, 0, 0, "unknown joint");
    tdm_planning_scene_free(s);
    tdm_planning_scene_free(NULL);
}

/* ROS's spelling: mappings for vectors, SolidPrimitive numbers, AllowedCollisionEntry
 * rows, header frames, operation ADD; and newer MoveIt's object pose, composed. */
Test(planning_scene, ros_style_fields_and_object_pose)
{
    tdm_planning_scene *s = scene_ok("world:\n"
                                     "  collision_objects:\n"
                                     "    - header: {frame_id: base_link, stamp: {sec: 0}}\n"
                                     "      id: shelf\n"
                                     "      operation: 0\n"
                                     "      type: {key: '', db: ''}\n"
                                     "      pose:\n"
                                     "        position: {x: 1, y: 2, z: 3}\n"
                                     "        orientation: {x: 0, y: 0, z: 0.7071067811865476, w: 0.7071067811865476}\n"
                                     "      primitives:\n"
                                     "        - {type: 1, dimensions: [1, 2, 3]}\n"
                                     "        - {type: 2, dimensions: [0.5]}\n"
                                     "        - {type: 3, dimensions: [2, 0.25]}\n"
                                     "        - {type: 4, dimensions: [0.5, 0.125]}\n"
                                     "      primitive_poses:\n"
                                     "        - position: {x: 1, y: 0, z: 0}\n"
                                     "          orientation: {x: 0.7071067811865476, y: 0, z: 0, w: 0.7071067811865476}\n"
                                     "        - {position: {x: 0, y: 0, z: 0}, orientation: {x: 0, y: 0, z: 0, w: 1}}\n"
                                     "        - {position: {x: 0, y: 1, z: 0}, orientation: {x: 0, y: 0, z: 0, w: 1}}\n"
                                     "        - {position: {x: 0, y: 0, z: 0}, orientation: {x: 0, y: 0, z: 0, w: 1}}\n"
                                     "      planes: []\n"
                                     "      operation_note: ignored\n"
                                     "    - header: {frame_id: ''}\n"
                                     "      id: plain\n"
                                     "      operation: ADD\n"
                                     "      primitives: [{type: BOX, dimensions: [0, 1, 1]}]\n"
                                     "      primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n"
                                     "  octomap: {octomap: {data: []}}\n"
                                     "allowed_collision_matrix:\n"
                                     "  entry_names: [l1, l2]\n"
                                     "  entry_values:\n"
                                     "    - enabled: [false, true]\n"
                                     "    - enabled: [true, false]\n"
                                     "robot_state:\n"
                                     "  joint_state: {header: {frame_id: ''}, name: [q], position: [0.25], velocity: []}\n"
                                     "  multi_dof_joint_state:\n"
                                     "    joint_names: [virtual_joint]\n"
                                     "    transforms:\n"
                                     "      - translation: {x: -1, y: 0, z: 0.5}\n"
                                     "        rotation: {x: 0, y: 0, z: 0, w: 1}\n"
                                     "  attached_collision_objects: []\n"
                                     "  is_diff: false\n"
                                     "is_diff: false\n");
    cr_assert_eq(s->n_objects, 2);
    const tdm_ps_object *o = &s->objects[0];
    cr_assert_str_eq(o->frame_id, "base_link");
    cr_assert_eq(o->has_pose, 1);
    assert_mat(&o->pose.r, RZ90, "object pose");
    assert_vec(o->pose.t, 1, 2, 3, "object pose");
    cr_assert_eq(o->n_primitives, 4);
    cr_assert_eq(o->primitives[0].type, TDM_PS_BOX);
    cr_assert_eq(o->primitives[1].type, TDM_PS_SPHERE);
    cr_assert_eq(o->primitives[2].type, TDM_PS_CYLINDER);
    cr_assert_eq(o->primitives[2].dims[1], 0.25);
    cr_assert_eq(o->primitives[3].type, TDM_PS_CONE);
    cr_assert_eq(o->primitives[3].n_dims, 2);
    cr_assert_eq(o->primitives[3].dims[0], 0.5);
    cr_assert_eq(o->primitives[3].dims[1], 0.125);
    /* object pose then primitive pose: Rz90 (1, 0, 0) + (1, 2, 3) = (1, 3, 3); R = Rz90 Rx90 */
    const double rzrx[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    assert_mat(&o->primitives[0].pose.r, rzrx, "composed rotation");
    assert_vec(o->primitives[0].pose.t, 1, 3, 3, "composed translation");
    assert_mat(&o->primitives[1].pose.r, RZ90, "identity primitive pose");
    assert_vec(o->primitives[1].pose.t, 1, 2, 3, "identity primitive pose");
    assert_vec(o->primitives[2].pose.t, 0, 2, 3, "Rz90 (0, 1, 0) + (1, 2, 3)");
    cr_assert_null(s->objects[1].frame_id, "an empty frame id is no frame id");
    cr_assert_eq(s->objects[1].primitives[0].dims[0], 0.0, "a zero edge is allowed");
    cr_assert_eq(tdm_ps_acm_allowed(&s->acm, "l2", "l1"), 1);
    cr_assert_eq(s->robot_state.positions[0], 0.25);
    tdm_xform root = tdm_ps_robot_state_root(&s->robot_state, "virtual_joint");
    assert_mat(&root.r, IDENTITY, "root");
    assert_vec(root.t, -1, 0, 0.5, "root");
    cr_assert_str_eq(s->name, "", "absent names are empty strings");
    tdm_planning_scene_free(s);
}

Test(planning_scene, near_unit_quaternions_are_normalised)
{
    /* norm 1.0009: inside the 1e-3 tolerance, so normalised to the identity */
    tdm_planning_scene *s = scene_ok(edit(24, "          orientation: [0, 0, 0, 1.0009]", 0));
    assert_mat(&s->objects[0].primitives[0].pose.r, IDENTITY, "normalised");
    tdm_planning_scene_free(s);
    /* a quarter turn written with 4 digits */
    s = scene_ok(edit(26, "          orientation: [0, 0, 0.7071, 0.7071]", 0));
    assert_mat(&s->objects[0].primitives[1].pose.r, RZ90, "normalised quarter turn");
    tdm_planning_scene_free(s);
}

Test(planning_scene, acm_defaults_follow_moveit)
{
    tdm_planning_scene *s = scene_ok("allowed_collision_matrix:\n"
                                     "  entry_names: [a, b, c]\n"
                                     "  entry_values: [[false, true, false], [true, false, false], [false, false, false]]\n"
                                     "  default_entry_names: [a, d, e, f]\n"
                                     "  default_entry_values: [true, true, false, true]\n");
    const tdm_ps_acm *acm = &s->acm;
    cr_assert_eq(acm->n_defaults, 4);
    cr_assert_str_eq(acm->default_names[1], "d");
    cr_assert_eq(acm->default_allowed[2], 0);
    cr_assert_eq(tdm_ps_acm_allowed(acm, "a", "c"), 0, "an entry (false) wins over a's default (true)");
    cr_assert_eq(tdm_ps_acm_allowed(acm, "a", "b"), 1, "an entry (true)");
    cr_assert_eq(tdm_ps_acm_allowed(acm, "a", "x"), 1, "no entry: a's default");
    cr_assert_eq(tdm_ps_acm_allowed(acm, "x", "e"), 0, "no entry: e's default");
    cr_assert_eq(tdm_ps_acm_allowed(acm, "d", "f"), 1, "both defaults allow");
    cr_assert_eq(tdm_ps_acm_allowed(acm, "d", "e"), 0, "one default checks");
    cr_assert_eq(tdm_ps_acm_allowed(acm, "a", "a"), 1, "the diagonal has no entry: the default decides");
    cr_assert_eq(tdm_ps_acm_allowed(acm, "x", "y"), 0, "nothing known: checked");
    tdm_planning_scene_free(s);
}

/* Many names in no order (the lookups go through a sorted index): every pair, names
 * absent included, as a linear reading of the matrix and the defaults says. */
Test(planning_scene, acm_lookups_of_many_names)
{
    enum { N = 61, D = 23, NAMES = N + 9 };
    char names[NAMES][16];
    uint64_t g = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < NAMES; i++) { /* distinct, in no sorted order: a scrambled number */
        g = g * 6364136223846793005ull + 1442695040888963407ull;
        snprintf(names[i], sizeof names[i], "n%08x_%d", (unsigned)(g >> 33), i);
    }
    uint8_t m[N][N], def[D];
    size_t cap = 64 * N * N + 4096, len = 0;
    char *t = malloc(cap);
    cr_assert_not_null(t);
    len += (size_t)snprintf(t + len, cap - len, "allowed_collision_matrix:\n  entry_names: [");
    for (int i = 0; i < N; i++) len += (size_t)snprintf(t + len, cap - len, "%s%s", i ? ", " : "", names[i]);
    len += (size_t)snprintf(t + len, cap - len, "]\n  entry_values:\n");
    for (int i = 0; i < N; i++)
        for (int j = 0; j <= i; j++) {
            g = g * 6364136223846793005ull + 1442695040888963407ull;
            m[i][j] = m[j][i] = (uint8_t)((g >> 40) & 1);
        }
    for (int i = 0; i < N; i++) {
        len += (size_t)snprintf(t + len, cap - len, "    - [");
        for (int j = 0; j < N; j++)
            len += (size_t)snprintf(t + len, cap - len, "%s%s", j ? ", " : "", m[i][j] ? "true" : "false");
        len += (size_t)snprintf(t + len, cap - len, "]\n");
    }
    /* defaults for the last D names: some entries, some not */
    len += (size_t)snprintf(t + len, cap - len, "  default_entry_names: [");
    for (int k = 0; k < D; k++)
        len += (size_t)snprintf(t + len, cap - len, "%s%s", k ? ", " : "", names[NAMES - D + k]);
    len += (size_t)snprintf(t + len, cap - len, "]\n  default_entry_values: [");
    for (int k = 0; k < D; k++) {
        g = g * 6364136223846793005ull + 1442695040888963407ull;
        def[k] = (uint8_t)((g >> 40) & 1);
        len += (size_t)snprintf(t + len, cap - len, "%s%s", k ? ", " : "", def[k] ? "true" : "false");
    }
    snprintf(t + len, cap - len, "]\n");
    tdm_planning_scene *s = scene_ok(t);
    for (int a = 0; a < NAMES; a++)
        for (int b = 0; b < NAMES; b++) {
            int da = a >= NAMES - D ? def[a - (NAMES - D)] : -1, db = b >= NAMES - D ? def[b - (NAMES - D)] : -1;
            int want = a < N && b < N && a != b ? m[a][b]
                       : da >= 0 && db >= 0    ? da && db
                       : da >= 0               ? da
                       : db >= 0               ? db
                                               : 0;
            cr_assert_eq(tdm_ps_acm_allowed(&s->acm, names[a], names[b]), want, "(%s, %s)", names[a], names[b]);
        }
    cr_assert_eq(tdm_ps_acm_allowed(&s->acm, "absent", names[0]), 0);
    tdm_planning_scene_free(s);
    free(t);
}

Test(planning_scene, inline_meshes)
{
    tdm_planning_scene *s = scene_ok("world:\n"
                                     "  collision_objects:\n"
                                     "    - id: tri\n"
                                     "      pose: {position: [0, 0, 1], orientation: [0, 0, 0, 1]}\n"
                                     "      meshes:\n"
                                     "        - vertices: [[0, 0, 0], [1, 0, 0], {x: 0, y: 1, z: 0.5}, [1, 1, 1]]\n"
                                     "          triangles: [[0, 1, 2], {vertex_indices: [1, 3, 2]}]\n"
                                     "      mesh_poses: [{position: [1, 0, 0], orientation: [0, 0, 0.7071067811865476, "
                                     "0.7071067811865476]}]\n"
                                     "      primitives: [{type: sphere, dimensions: [1]}]\n"
                                     "      primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n");
    const tdm_ps_object *o = &s->objects[0];
    cr_assert_eq(o->n_meshes, 1);
    cr_assert_eq(o->n_primitives, 1);
    const tdm_ps_mesh *m = &o->meshes[0];
    cr_assert_eq(m->n_verts, 4);
    cr_assert_eq(m->n_tris, 2);
    const double verts[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0.5, 1, 1, 1};
    const uint32_t tris[6] = {0, 1, 2, 1, 3, 2};
    for (int i = 0; i < 12; i++) cr_assert_eq(m->verts[i], verts[i], "vertex coordinate %d", i);
    for (int i = 0; i < 6; i++) cr_assert_eq(m->tris[i], tris[i], "index %d", i);
    assert_mat(&m->pose.r, RZ90, "mesh pose");
    assert_vec(m->pose.t, 1, 0, 1, "mesh pose after the object's");
    assert_vec(o->primitives[0].pose.t, 0, 0, 1, "primitive pose after the object's");
    tdm_planning_scene_free(s);
}

Test(planning_scene, a_scene_of_nothing_but_a_name)
{
    tdm_planning_scene *s = scene_ok("name: empty\nfixed_frame_transforms: [{child_frame_id: world}]\n");
    cr_assert_str_eq(s->name, "empty");
    cr_assert_str_eq(s->robot_model_name, "");
    cr_assert_eq(s->n_objects, 0);
    cr_assert_eq(s->acm.n, 0);
    cr_assert_eq(s->robot_state.n_joints, 0);
    tdm_xform root = tdm_ps_robot_state_root(&s->robot_state, NULL);
    assert_mat(&root.r, IDENTITY, "no multi-DOF joint");
    assert_vec(root.t, 0, 0, 0, "no multi-DOF joint");
    cr_assert_eq(tdm_ps_acm_allowed(&s->acm, "a", "b"), 0);
    tdm_planning_scene_free(s);
}

Test(planning_scene, parse_from_memory_names_the_source)
{
    const char *text = edit(0);
    tdm_planning_scene *s = SENTINEL_SCENE;
    char err[512];
    cr_assert_eq(tdm_planning_scene_parse(text, strlen(text), "upload", &s, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(s->n_objects, 2);
    tdm_planning_scene_free(s);
    text = edit(19, "          dimensions: [1.5, 0.8]", 0);
    s = SENTINEL_SCENE;
    cr_assert_eq(tdm_planning_scene_parse(text, strlen(text), "upload", &s, err, sizeof err), TDM_EFORMAT);
    cr_assert_null(s);
    cr_assert(strncmp(err, "upload:19: world.collision_objects[0].primitives[0].dimensions: ", 64) == 0, "%s", err);
}

static const char *const request_text =
    "workspace_parameters: {min_corner: [-1, -1, -1], max_corner: [1, 1, 1]}\n"
    "planner_id: RRTConnect\n"
    "group_name: panda_arm\n"
    "goal_constraints:\n"
    "  - joint_constraints:\n"
    "      - joint_name: j1\n"
    "        position: 0.4534448383669427\n"
    "      - position: -1.5\n"
    "        joint_name: j2\n"
    "        tolerance_above: 0.001\n"
    "    position_constraints: []\n"
    "  - joint_constraints: [{joint_name: other, position: 9}]\n"
    "start_state:\n"
    "  joint_state:\n"
    "    position: [0, -0.785, 0.065]\n"
    "    name: [j1, j2, finger]\n"
    "  multi_dof_joint_state:\n"
    "    transforms: [{rotation: [0, 0, 0, 1], translation: [0, 0, 0.25]}]\n"
    "    joint_names: [virtual_joint]\n";

Test(planning_scene, request_reads_back)
{
    tdm_motion_request *r = request_ok(request_text);
    cr_assert_str_eq(r->group_name, "panda_arm");
    cr_assert_eq(r->start.n_joints, 3);
    cr_assert_str_eq(r->start.joint_names[2], "finger");
    cr_assert_eq(r->start.positions[1], -0.785);
    double v;
    cr_assert_eq(tdm_ps_robot_state_position(&r->start, "finger", &v), 1);
    cr_assert_eq(v, 0.065);
    assert_vec(tdm_ps_robot_state_root(&r->start, "virtual_joint").t, 0, 0, 0.25, "start root");
    cr_assert_eq(r->n_goal, 2, "only the first constraint set is read");
    cr_assert_str_eq(r->goal_names[0], "j1");
    cr_assert_eq(r->goal_positions[0], 0.4534448383669427);
    cr_assert_str_eq(r->goal_names[1], "j2");
    cr_assert_eq(r->goal_positions[1], -1.5);
    tdm_motion_request_free(r);
    tdm_motion_request_free(NULL);
}

/* ---- what is refused ---------------------------------------------------------------- */

#define OBJ0 "world.collision_objects[0]"
#define OBJ1 "world.collision_objects[1]"

Test(planning_scene, wrong_number_of_dimensions)
{
    scene_error(edit(19, "          dimensions: [1.5, 0.8]", 0), TDM_EFORMAT, 19, OBJ0 ".primitives[0].dimensions",
                "a box needs 3 dimensions [x, y, z], got 2");
    scene_error(edit(32, "        - dimensions: [0.125, 1]", 0), TDM_EFORMAT, 32, OBJ1 ".primitives[0].dimensions",
                "a sphere needs 1 dimension [radius], got 2");
    scene_error(edit(21, "          dimensions: [0.7, 0.02, 1]", 0), TDM_EFORMAT, 21, OBJ0 ".primitives[1].dimensions",
                "a cylinder needs 2 dimensions [height, radius], got 3");
    scene_error(edit(19, "          dimensions: []", 0), TDM_EFORMAT, 19, OBJ0 ".primitives[0].dimensions", "got 0");
    scene_error(edit(19, "          dimensions: 1.5", 0), TDM_EFORMAT, 19, OBJ0 ".primitives[0].dimensions",
                "expected a list, got a scalar");
    scene_error(edit(19, "          dims: [1, 1, 1]", 0), TDM_EFORMAT, 18, OBJ0 ".primitives[0]", "no dimensions");
}

Test(planning_scene, negative_and_non_finite_numbers)
{
    scene_error(edit(21, "          dimensions: [0.7, -0.02]", 0), TDM_ERANGE, 21, OBJ0 ".primitives[1].dimensions[1]",
                "the cylinder's radius is negative");
    scene_error(edit(19, "          dimensions: [1.5, .nan, 0.04]", 0), TDM_ENONFINITE, 19,
                OBJ0 ".primitives[0].dimensions[1]", "not a finite number");
    scene_error(edit(23, "        - position: [0.5, 0, 1e999]", 0), TDM_ENONFINITE, 23,
                OBJ0 ".primitive_poses[0].position[2]", "not a finite number");
    scene_error(edit(29, "          position: [-1, abc, 1e-3]", 0), TDM_EFORMAT, 29, OBJ1 ".primitive_poses[0].position[1]",
                "expected a number, got 'abc'");
    scene_error(edit(4, "    position: [0.5, inf, 2]", 0), TDM_ENONFINITE, 4, "robot_state.joint_state.position[1]",
                "not a finite number");
    scene_error(edit(23, "        - position: [0.5, 0]", 0), TDM_EFORMAT, 23, OBJ0 ".primitive_poses[0].position",
                "expected 3 numbers (xyz), got 2");
    scene_error(edit(23, "        - position: {x: 0.5, y: 0}", 0), TDM_EFORMAT, 23, OBJ0 ".primitive_poses[0].position",
                "no z");
}

Test(planning_scene, quaternions_not_unit)
{
    scene_error(edit(24, "          orientation: [0, 0, 0, 2]", 0), TDM_ERANGE, 24, OBJ0 ".primitive_poses[0].orientation",
                "quaternion norm 2 is not 1");
    scene_error(edit(24, "          orientation: [0, 0, 0, 0]", 0), TDM_ERANGE, 24, OBJ0 ".primitive_poses[0].orientation",
                "quaternion norm 0 is not 1");
    scene_error(edit(7, "    transforms: [{translation: [0, 0, 0], rotation: [0, 0, 1, 1]}]", 0), TDM_ERANGE, 7,
                "robot_state.multi_dof_joint_state.transforms[0].rotation", "not 1");
    scene_error(edit(24, "#", 0), TDM_EFORMAT, 23, OBJ0 ".primitive_poses[0]", "no orientation");
}

Test(planning_scene, mismatched_lengths)
{
    scene_error(edit(25, "#", 26, "#", 0), TDM_EFORMAT, 22, OBJ0 ".primitive_poses", "1 primitive_poses for 2 primitives");
    scene_error(edit(22, "      primitive_pose:", 0), TDM_EFORMAT, 17, OBJ0 ".primitives", "0 primitive_poses for 2 primitives");
    scene_error(edit(4, "    position: [0.5, -1.25]", 0), TDM_EFORMAT, 4, "robot_state.joint_state.position",
                "2 positions for 3 names");
    scene_error(edit(6, "    joint_names: [virtual_joint, other]", 0), TDM_EFORMAT, 7,
                "robot_state.multi_dof_joint_state.transforms", "1 transforms for 2 joint_names");
    scene_error(edit(13, "    - [false, false]", 0), TDM_EFORMAT, 13, "allowed_collision_matrix.entry_values[2]",
                "2 values for 3 entry_names");
    scene_error(edit(9, "  entry_names: [a, b, c, d]", 0), TDM_EFORMAT, 10, "allowed_collision_matrix.entry_values",
                "3 rows for 4 entry_names");
    scene_error(edit(13, "    - [false, false, true]\n  default_entry_names: [x, y]\n  default_entry_values: [true]", 0),
                TDM_EFORMAT, 15, "allowed_collision_matrix.default_entry_values", "1 values for 2 default_entry_names");
}

Test(planning_scene, acm_values)
{
    scene_error(edit(13, "    - [false, true, true]", 0), TDM_EFORMAT, 13, "allowed_collision_matrix.entry_values[2][1]",
                "not symmetric");
    scene_error(edit(12, "    - [true, maybe, false]", 0), TDM_EFORMAT, 12, "allowed_collision_matrix.entry_values[1][1]",
                "expected true or false, got 'maybe'");
    scene_error(edit(9, "  entry_names: [a, b, a]", 0), TDM_EFORMAT, 9, "allowed_collision_matrix.entry_names[2]",
                "'a' is named twice");
}

Test(planning_scene, types_and_operations_refused)
{
    scene_error(edit(18, "        - type: torus", 0), TDM_EFORMAT, 18, OBJ0 ".primitives[0].type",
                "unknown primitive type 'torus'");
    scene_error(edit(18, "        - type: cone", 0), TDM_EFORMAT, 19, OBJ0 ".primitives[0].dimensions",
                "a cone needs 2 dimensions [height, radius], got 3");
    scene_error(edit(18, "        - type: 5", 0), TDM_EFORMAT, 18, OBJ0 ".primitives[0].type",
                "prism primitives are not supported");
    scene_error(edit(16, "    - id: table\n      operation: 1", 0), TDM_EFORMAT, 17, OBJ0 ".operation",
                "operation REMOVE (1) is not supported");
    scene_error(edit(16, "    - id: table\n      operation: move", 0), TDM_EFORMAT, 17, OBJ0 ".operation",
                "operation MOVE (3) is not supported");
    scene_error(edit(16, "    - id: table\n      planes: [{coef: [0, 0, 1, 0]}]", 0), TDM_EFORMAT, 17, OBJ0 ".planes",
                "0 plane_poses for 1 planes");
    scene_error(edit(16, "    - id: table\n      planes: [{coef: [0, 0, 0, 1]}]\n      plane_poses: [{position: [0, 0, 0], "
                         "orientation: [0, 0, 0, 1]}]", 0),
                TDM_ERANGE, 17, OBJ0 ".planes[0].coef", "the plane's normal (a, b, c) is zero");
    scene_error(edit(16, "    - id: table\n      planes: [{coef: [0, 0, 1]}]", 0), TDM_EFORMAT, 17, OBJ0 ".planes[0].coef",
                "numbers (a, b, c, d)");
    scene_error(edit(14, "world:\n  octomap: {octomap: {data: [1, 2]}}", 0), TDM_EFORMAT, 15, "world.octomap.octomap.data",
                "not supported: octomaps");
}

/* Attached objects: every field read back, shape poses composed with the object's pose
 * as a world object's are, a world object of the same id allowed (MoveIt keeps both in a
 * complete scene); the rest of an AttachedCollisionObject skipped. */
Test(planning_scene, attached_objects_read_back)
{
    tdm_planning_scene *s = scene_ok("robot_state:\n"
                                     "  joint_state: {name: [j1], position: [0.5]}\n"
                                     "  attached_collision_objects:\n"
                                     "    - link_name: hand\n"
                                     "      object:\n"
                                     "        id: cup\n"
                                     "        header: {frame_id: hand}\n"
                                     "        pose: {position: [0, 0, 0.1], orientation: [0, 0, 0, 1]}\n"
                                     "        primitives: [{type: cylinder, dimensions: [0.1, 0.03]}, {type: box, dimensions: [1, 2, 3]}]\n"
                                     "        primitive_poses:\n"
                                     "          - {position: [1, 0, 0], orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]}\n"
                                     "          - {position: [0, 2, 0], orientation: [0, 0, 0, 1]}\n"
                                     "      touch_links: [finger1, finger2]\n"
                                     "      detach_posture: {joint_names: [f], points: []}\n"
                                     "      weight: 0.2\n"
                                     "    - link_name: forearm\n"
                                     "      object:\n"
                                     "        id: strap\n"
                                     "        header: {frame_id: world}\n"
                                     "        meshes: [{vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0]], triangles: [[0, 1, 2]]}]\n"
                                     "        mesh_poses: [{position: [0, 0, 3], orientation: [0, 0, 0, 1]}]\n"
                                     "world:\n"
                                     "  collision_objects:\n"
                                     "    - id: cup\n"
                                     "      primitives: [{type: sphere, dimensions: [1]}]\n"
                                     "      primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n");
    cr_assert_eq(s->n_attached, 2);
    cr_assert_eq(s->n_objects, 1);
    cr_assert_str_eq(s->objects[0].id, "cup");
    const tdm_ps_attached *a = &s->attached[0], *b = &s->attached[1];
    cr_assert_str_eq(a->link_name, "hand");
    cr_assert_str_eq(a->object.id, "cup");
    cr_assert_str_eq(a->object.frame_id, "hand");
    cr_assert_eq(a->n_touch, 2);
    cr_assert_str_eq(a->touch_links[0], "finger1");
    cr_assert_str_eq(a->touch_links[1], "finger2");
    cr_assert_eq(a->object.n_primitives, 2);
    cr_assert_eq(a->object.n_meshes, 0);
    cr_assert_eq(a->object.primitives[0].type, TDM_PS_CYLINDER);
    cr_assert_eq(a->object.has_pose, 1);
    assert_vec(a->object.primitives[0].pose.t, 1, 0, 0.1, "first primitive, object pose applied");
    assert_mat(&a->object.primitives[0].pose.r, RZ90, "first primitive's rotation");
    assert_vec(a->object.primitives[1].pose.t, 0, 2, 0.1, "second primitive");
    cr_assert_str_eq(b->link_name, "forearm");
    cr_assert_str_eq(b->object.id, "strap");
    cr_assert_str_eq(b->object.frame_id, "world");
    cr_assert_eq(b->n_touch, 0);
    cr_assert_eq(b->object.n_meshes, 1);
    cr_assert_eq(b->object.meshes[0].n_tris, 1);
    assert_vec(b->object.meshes[0].pose.t, 0, 0, 3, "the mesh");
    double v = 0;
    cr_assert_eq(tdm_ps_robot_state_position(&s->robot_state, "j1", &v), 1);
    cr_assert_float_eq(v, 0.5, 0);
    tdm_planning_scene_free(s);
}

/* MoveIt's link padding and scale: the neutral values a dumped scene carries for every
 * link are accepted; others would change the problem, and are refused naming the link. */
Test(planning_scene, link_padding_and_scale)
{
    tdm_planning_scene *s = scene_ok("link_padding: [{link_name: a, padding: 0}, {link_name: b, padding: 0.0}]\n"
                                     "link_scale:\n  - {link_name: a, scale: 1}\n  - link_name: b\n    scale: 1.0\n");
    cr_assert_eq(s->n_objects, 0);
    tdm_planning_scene_free(s);
    scene_error("link_padding:\n  - {link_name: a, padding: 0}\n  - {link_name: hand, padding: 0.01}\n", TDM_EFORMAT, 3,
                "link_padding[1].padding", "a padding of 0.01 for link 'hand' is not supported");
    scene_error("link_scale: [{link_name: arm, scale: 1.1}]\n", TDM_EFORMAT, 1, "link_scale[0].scale",
                "a scale of 1.1 for link 'arm' is not supported");
    scene_error("link_padding: [{link_name: a, padding: .nan}]\n", TDM_ENONFINITE, 1, "link_padding[0].padding",
                "not a finite number");
    scene_error("link_padding: [0.1]\n", TDM_EFORMAT, 1, "link_padding[0]", "expected a mapping");
}

/* fixed_frame_transforms: each child frame's pose read back (the identity without a
 * transform); a frame given twice, or without its name, refused. */
Test(planning_scene, fixed_frames)
{
    tdm_planning_scene *s = scene_ok("fixed_frame_transforms:\n"
                                     "  - header: {frame_id: world}\n"
                                     "    child_frame_id: table\n"
                                     "    transform: {translation: [1, 2, 3], rotation: [0, 0, 0.7071067811865476, "
                                     "0.7071067811865476]}\n"
                                     "  - {child_frame_id: world, transform: {translation: [0, 0, 0], rotation: [0, 0, 0, 1]}}\n");
    cr_assert_eq(s->n_frames, 2);
    tdm_xform x;
    cr_assert_eq(tdm_ps_fixed_frame(s, "table", &x), 1);
    assert_vec(x.t, 1, 2, 3, "table's translation");
    assert_mat(&x.r, RZ90, "table's rotation");
    cr_assert_eq(tdm_ps_fixed_frame(s, "world", &x), 1);
    assert_mat(&x.r, IDENTITY, "world's rotation");
    cr_assert_eq(tdm_ps_fixed_frame(s, "shelf", &x), 0);
    tdm_planning_scene_free(s);
    static const char id1[] = "{translation: [0, 0, 0], rotation: [0, 0, 0, 1]}";
    char t[512];
    snprintf(t, sizeof t, "fixed_frame_transforms:\n  - {child_frame_id: a, transform: %s}\n"
             "  - {child_frame_id: a, transform: %s}\n", id1, id1);
    scene_error(t, TDM_EFORMAT, 3, "fixed_frame_transforms[1].child_frame_id", "frame 'a' is given twice");
    snprintf(t, sizeof t, "fixed_frame_transforms:\n  - {transform: %s}\n", id1);
    scene_error(t, TDM_EFORMAT, 2, "fixed_frame_transforms[0]", "no child_frame_id");
    s = scene_ok("fixed_frame_transforms:\n  - {child_frame_id: a}\n");
    cr_assert_eq(tdm_ps_fixed_frame(s, "a", &x), 1);
    assert_vec(x.t, 0, 0, 0, "no transform: the identity");
    assert_mat(&x.r, IDENTITY, "no transform: the identity");
    tdm_planning_scene_free(s);
    scene_error("fixed_frame_transforms:\n  - {child_frame_id: a, transform: {translation: [0, 0, 0], rotation: [0, 0, "
                "0, 2]}}\n", TDM_ERANGE, 2, "fixed_frame_transforms[0].transform.rotation", "quaternion norm 2");
}

/* Subframes (subframe_names, subframe_poses): read back in the object's own frame (its pose not
 * applied to them) and found by name; unequal lengths, a repeated or empty name refused. */
Test(planning_scene, subframes)
{
    static const char obj[] = "world:\n"
                              "  collision_objects:\n"
                              "    - id: mug\n"
                              "      pose: {position: [5, 5, 5], orientation: [0, 0, 0, 1]}\n"
                              "      primitives: [{type: box, dimensions: [1, 1, 1]}]\n"
                              "      primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n";
    char t[2048];
    snprintf(t, sizeof t,
             "%s      subframe_names: [rim, handle, base]\n"
             "      subframe_poses:\n"
             "        - {position: [0, 0, 1], orientation: [0, 0, 0, 1]}\n"
             "        - {position: [1, 2, 3], orientation: [0, 0, 0.7071067811865476, 0.7071067811865476]}\n"
             "        - {position: [0, 0, -1], orientation: [0, 0, 0, 1]}\n",
             obj);
    tdm_planning_scene *s = scene_ok(t);
    const tdm_ps_object *o = &s->objects[0];
    cr_assert_eq(o->n_subframes, 3);
    int32_t k = tdm_ps_name_find(o->subframe_names, o->subframes_by_name, 3, "handle");
    cr_assert_eq(k, 1);
    assert_vec(o->subframe_poses[k].t, 1, 2, 3, "handle's position, in the object's frame");
    assert_mat(&o->subframe_poses[k].r, RZ90, "handle's rotation");
    cr_assert_eq(tdm_ps_name_find(o->subframe_names, o->subframes_by_name, 3, "base"), 2);
    cr_assert_eq(tdm_ps_name_find(o->subframe_names, o->subframes_by_name, 3, "lid"), -1);
    tdm_planning_scene_free(s);
    s = scene_ok(obj);
    cr_assert_eq(s->objects[0].n_subframes, 0);
    tdm_planning_scene_free(s);
    snprintf(t, sizeof t, "%s      subframe_names: [rim, handle]\n"
             "      subframe_poses: [{position: [0, 0, 1], orientation: [0, 0, 0, 1]}]\n", obj);
    scene_error(t, TDM_EFORMAT, 8, "world.collision_objects[0].subframe_poses", "1 subframe_poses for 2 subframe_names");
    snprintf(t, sizeof t, "%s      subframe_names: [rim, rim]\n"
             "      subframe_poses: [{position: [0, 0, 1], orientation: [0, 0, 0, 1]}, {position: [0, 0, 1], "
             "orientation: [0, 0, 0, 1]}]\n", obj);
    scene_error(t, TDM_EFORMAT, 7, "world.collision_objects[0].subframe_names[1]", "'rim' is named twice");
    snprintf(t, sizeof t, "%s      subframe_names: ['']\n"
             "      subframe_poses: [{position: [0, 0, 1], orientation: [0, 0, 0, 1]}]\n", obj);
    scene_error(t, TDM_EFORMAT, 7, "world.collision_objects[0].subframe_names[0]", "an empty subframe name");
}

/* Planes (shape_msgs/Plane): coefficients read back, the object's pose composed with
 * each plane_pose, shapes counted with the primitives and meshes. */
Test(planning_scene, planes_read_back)
{
    tdm_planning_scene *s = scene_ok("world:\n  collision_objects:\n    - id: floor\n"
                                     "      pose: {position: [0, 0, 1], orientation: [0, 0, 0, 1]}\n"
                                     "      planes: [{coef: [0, 0, 2, -1]}, {coef: [1, 0, 0, 0.5]}]\n"
                                     "      plane_poses:\n"
                                     "        - {position: [0, 0, 0], orientation: [0, 0, 0, 1]}\n"
                                     "        - {position: [1, 2, 3], orientation: [0, 0, 0.7071067811865476, "
                                     "0.7071067811865476]}\n");
    cr_assert_eq(s->n_objects, 1);
    const tdm_ps_object *o = &s->objects[0];
    cr_assert_eq(o->n_planes, 2);
    cr_assert_eq(o->n_primitives + o->n_meshes, 0);
    cr_assert_float_eq(o->planes[0].coef[2], 2, 0);
    cr_assert_float_eq(o->planes[0].coef[3], -1, 0);
    cr_assert_float_eq(o->planes[1].coef[0], 1, 0);
    assert_vec(o->planes[0].pose.t, 0, 0, 1, "the first plane, the object's pose applied");
    assert_vec(o->planes[1].pose.t, 1, 2, 4, "the second plane");
    assert_mat(&o->planes[1].pose.r, RZ90, "the second plane's rotation");
    tdm_planning_scene_free(s);
}

#define ATT "robot_state.attached_collision_objects"

Test(planning_scene, attached_objects_refused)
{
    static const char one_box[] = "primitives: [{type: box, dimensions: [1, 1, 1]}], "
                                  "primitive_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]";
    char t[1024];
    snprintf(t, sizeof t, "robot_state:\n  attached_collision_objects:\n    - object: {id: a, %s}\n", one_box);
    scene_error(t, TDM_EFORMAT, 3, ATT "[0]", "no link_name");
    snprintf(t, sizeof t, "robot_state:\n  attached_collision_objects:\n    - {link_name: '', object: {id: a, %s}}\n",
             one_box);
    scene_error(t, TDM_EFORMAT, 3, ATT "[0]", "no link_name");
    scene_error("robot_state:\n  attached_collision_objects:\n    - link_name: hand\n", TDM_EFORMAT, 3, ATT "[0]",
                "no object");
    scene_error("robot_state:\n  attached_collision_objects:\n    - link_name: hand\n      object: {id: a}\n",
                TDM_EEMPTY, 4, ATT "[0].object", "an object without primitives, meshes or planes");
    snprintf(t, sizeof t,
             "robot_state:\n  attached_collision_objects:\n    - link_name: hand\n      object: {id: a, operation: 1, %s}\n",
             one_box);
    scene_error(t, TDM_EFORMAT, 4, ATT "[0].object.operation", "operation REMOVE (1) is not supported");
    snprintf(t, sizeof t,
             "robot_state:\n  attached_collision_objects:\n"
             "    - {link_name: hand, object: {id: a, %s}}\n"
             "    - {link_name: arm, object: {id: a, %s}}\n",
             one_box, one_box);
    scene_error(t, TDM_EFORMAT, 4, ATT "[1].object.id", "duplicate id 'a' (also " ATT "[0])");
    snprintf(t, sizeof t,
             "robot_state:\n  attached_collision_objects:\n    - {link_name: hand, touch_links: x, object: {id: a, %s}}\n",
             one_box);
    scene_error(t, TDM_EFORMAT, 3, ATT "[0].touch_links", "expected a list");
    snprintf(t, sizeof t, "robot_state:\n  attached_collision_objects:\n    - {link_name: hand, object: {id: a, %s, "
                          "planes: [{coef: [0, 0, 1, 0]}], plane_poses: [{position: [0, 0, 0], orientation: [0, 0, "
                          "0, 1]}]}}\n", one_box);
    scene_error(t, TDM_EFORMAT, 3, ATT "[0].object", "an attached object with planes is not supported");
    /* a request's start state may not bring attached objects: they would be dropped */
    request_error("start_state:\n  attached_collision_objects: [{link_name: hand}]\n"
                  "goal_constraints: [{joint_constraints: [{joint_name: a, position: 1}]}]\n",
                  TDM_EFORMAT, 2, "start_state.attached_collision_objects", "not supported: attached collision objects");
}

Test(planning_scene, objects_and_names)
{
    scene_error(edit(30, "      id: table", 0), TDM_EFORMAT, 30, OBJ1 ".id",
                "duplicate id 'table' (also world.collision_objects[0])");
    scene_error(edit(30, "      idx: ball", 0), TDM_EFORMAT, 27, OBJ1, "no id");
    scene_error(edit(30, "      id: ''", 0), TDM_EFORMAT, 30, OBJ1 ".id", "empty id");
    scene_error(edit(27, "    - primitive_poses: []", 28, "#", 29, "#", 31, "      primitives: []", 32, "#", 33, "#", 0),
                TDM_EEMPTY, 27, OBJ1, "an object without primitives, meshes or planes");
    scene_error(edit(3, "    name: [j1, j2, j1]", 0), TDM_EFORMAT, 3, "robot_state.joint_state.name[2]",
                "'j1' is named twice");
    char long_name[TDM_PS_MAX_NAME + 32];
    memset(long_name, 0, sizeof long_name);
    strcpy(long_name, "      id: ");
    memset(long_name + strlen(long_name), 'n', TDM_PS_MAX_NAME + 1);
    scene_error(edit(30, long_name, 0), TDM_ERANGE, 30, OBJ1 ".id", "longer than 1024 bytes");
}

Test(planning_scene, meshes_refused)
{
    const char *head = "world:\n  collision_objects:\n    - id: m\n      meshes:\n";
    char text[1024];
    snprintf(text, sizeof text, "%s%s", head,
             "        - vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0]]\n"
             "          triangles: [[0, 1, 2], [0, 2, 3]]\n"
             "      mesh_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n");
    scene_error(text, TDM_EINDEX, 6, OBJ0 ".meshes[0].triangles[1]", "vertex index 3 is past the 3 vertices");
    snprintf(text, sizeof text, "%s%s", head,
             "        - vertices: [[0, 0, 0]]\n"
             "          triangles: []\n"
             "      mesh_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]\n");
    scene_error(text, TDM_EEMPTY, 5, OBJ0 ".meshes[0]", "a mesh without triangles");
    snprintf(text, sizeof text, "%s%s", head,
             "        - vertices: [[0, 0, 0], [1, 0, 0], [0, 1, .inf]]\n"
             "          triangles: [[0, 1, 2]]\n");
    scene_error(text, TDM_ENONFINITE, 5, OBJ0 ".meshes[0].vertices[2][2]", "not a finite number");
    snprintf(text, sizeof text, "%s%s", head,
             "        - vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0]]\n"
             "          triangles: [[0, 1, 2]]\n");
    scene_error(text, TDM_EFORMAT, 4, OBJ0 ".meshes", "0 mesh_poses for 1 meshes");
    snprintf(text, sizeof text, "%s%s", head,
             "        - vertices: [[0, 0, 0], [1, 0, 0], [0, 1, 0]]\n"
             "          triangles: [[0, 1, -2]]\n");
    scene_error(text, TDM_EFORMAT, 6, OBJ0 ".meshes[0].triangles[0][2]", "expected an integer");
}

Test(planning_scene, malformed_yaml_and_documents)
{
    const char *file = write_file("scene.yaml", edit(19, "          dimensions: [1.5, 0.8, 0.04]]", 0));
    tdm_planning_scene *s = SENTINEL_SCENE;
    char err[512], want[600];
    cr_assert_eq(tdm_planning_scene_read(file, &s, err, sizeof err), TDM_EFORMAT);
    cr_assert_null(s);
    snprintf(want, sizeof want, "%s:19:", file);
    cr_assert(strncmp(err, want, strlen(want)) == 0, "'%s' should start with '%s'", err, want);
    cr_assert_not_null(strstr(err, "malformed YAML"), "%s", err);

    scene_error(edit(21, "          dimensions: *d", 19, "          dimensions: &d [1.5, 0.8, 0.04]", 0), TDM_EFORMAT, 21,
                OBJ0 ".primitives[1].dimensions", "YAML aliases are not supported");
    scene_error(edit(19, "          dimensions: [1.5, 0.8, 0.04]\n          dimensions: [1, 1, 1]", 0), TDM_EFORMAT, 20,
                OBJ0 ".primitives[0].dimensions", "the key appears twice");
    scene_error("- a\n- b\n", TDM_EFORMAT, 1, NULL, "expected a mapping (moveit_msgs/PlanningScene), got a list");
    scene_error("", TDM_EFORMAT, 1, NULL, "no YAML document");
    scene_error("name: a\n---\nname: b\n", TDM_EFORMAT, 2, NULL, "a second YAML document");
    scene_error("world: [1, 2]\n", TDM_EFORMAT, 1, "world", "expected a mapping, got a list");
}

Test(planning_scene, limits)
{
    /* nesting, even under a key the reader skips */
    static char text[64 * 1024];
    size_t n = (size_t)snprintf(text, sizeof text, "world:\n  skipped: ");
    for (int i = 0; i < 100; i++) text[n++] = '[';
    for (int i = 0; i < 100; i++) text[n++] = ']';
    strcpy(text + n, "\n");
    scene_error(text, TDM_ERANGE, 2, "world", "nested deeper than 64 levels");
    /* one name more than TDM_PS_MAX_JOINTS */
    n = (size_t)snprintf(text, sizeof text, "robot_state:\n  joint_state:\n    name: [");
    for (unsigned i = 0; i <= TDM_PS_MAX_JOINTS; i++) n += (size_t)snprintf(text + n, sizeof text - n, "j%u, ", i);
    snprintf(text + n - 2, sizeof text - n + 2, "]\n");
    char path[64];
    snprintf(path, sizeof path, "robot_state.joint_state.name[%u]", TDM_PS_MAX_JOINTS);
    scene_error(text, TDM_ERANGE, 3, path, "more than 4096 joints");
}

Test(planning_scene, files_missing_or_too_big)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/absent.yaml", dir);
    tdm_planning_scene *s = SENTINEL_SCENE;
    cr_assert_eq(tdm_planning_scene_read(path, &s, err, sizeof err), TDM_EIO);
    cr_assert_null(s);
    cr_assert(strncmp(err, path, strlen(path)) == 0, "%s", err);

    const char *big = write_file("big.yaml", "name: big\n");
    cr_assert_eq(truncate(big, (off_t)TDM_PS_MAX_FILE_BYTES + 1), 0, "%s", strerror(errno));
    s = SENTINEL_SCENE;
    cr_assert_eq(tdm_planning_scene_read(big, &s, err, sizeof err), TDM_ERANGE);
    cr_assert_null(s);
    cr_assert_not_null(strstr(err, "TDM_PS_MAX_FILE_BYTES"), "%s", err);
    tdm_motion_request *r = SENTINEL_REQUEST;
    cr_assert_eq(tdm_motion_request_read(big, &r, err, sizeof err), TDM_ERANGE);
    cr_assert_null(r);
}

Test(planning_scene, requests_refused)
{
    request_error("group_name: arm\n", TDM_EFORMAT, 1, NULL, "no goal_constraints");
    request_error("group_name: arm\ngoal_constraints: []\n", TDM_EFORMAT, 2, "goal_constraints", "the list is empty");
    request_error("goal_constraints:\n  - position_constraints: [{link_name: hand}]\n", TDM_EFORMAT, 2,
                  "goal_constraints[0].position_constraints", "not supported: Cartesian goal constraints");
    request_error("goal_constraints:\n  - joint_constraints: []\n", TDM_EFORMAT, 2, "goal_constraints[0]",
                  "no joint_constraints");
    request_error("goal_constraints:\n  - joint_constraints:\n      - joint_name: j1\n", TDM_EFORMAT, 3,
                  "goal_constraints[0].joint_constraints[0]", "no position");
    request_error("goal_constraints:\n  - joint_constraints:\n      - {joint_name: j1, position: .NaN}\n", TDM_ENONFINITE,
                  3, "goal_constraints[0].joint_constraints[0].position", "not a finite number");
    request_error("goal_constraints:\n  - joint_constraints: [{joint_name: j1, position: 1}, {joint_name: j1, position: 2}]\n",
                  TDM_EFORMAT, 2, "goal_constraints[0].joint_constraints[1]", "'j1' is named twice");
    request_error("start_state:\n  joint_state: {name: [a, b], position: [1]}\n"
                  "goal_constraints: [{joint_constraints: [{joint_name: a, position: 1}]}]\n",
                  TDM_EFORMAT, 2, "start_state.joint_state.position", "1 positions for 2 names");
    request_error("[1, 2]\n", TDM_EFORMAT, 1, NULL, "expected a mapping (moveit_msgs/MotionPlanRequest)");
}
