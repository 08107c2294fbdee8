/* robot/: URDF and SRDF reading (robot/urdf.h), forward kinematics
 * (robot/kinematics.h) and `tandem robot joints`, on robots written by the tests
 * into a temporary folder (URDF text, small OBJ meshes).
 *
 * Forward kinematics is checked against an oracle that works from the numbers the
 * test wrote into the URDF: 4x4 homogeneous matrices composed from elementary
 * rotations (origin = T(xyz) Rz(yaw) Ry(pitch) Rx(roll); a rotation about an axis
 * as B Rz(q) B^T for an orthonormal basis B whose third column is the axis), over
 * the test's own tree, on random trees and random joint values. */
#define _XOPEN_SOURCE 700 /* nftw, realpath */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "spawn.h"
#include "robot/kinematics.h"
#include "robot/urdf.h"

#ifndef TANDEM_BIN
#error "TANDEM_BIN (the path of the tandem executable) must be defined by the build"
#endif


static uint64_t seed;
static char dir[256];

static void suite_init(void)
{
    seed = gen_seed(0x13ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tandem-robot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void suite_fini(void) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(robot, .init = suite_init, .fini = suite_fini, .timeout = 120);

/* ---- files ---- */

/* dir/rel, in a buffer that stays valid until the next 16 calls. */
static const char *path(const char *rel)
{
    static char buf[16][PATH_MAX];
    static int k;
    char *p = buf[k++ % 16];
    int n = snprintf(p, PATH_MAX, "%s/%s", dir, rel);
    cr_assert(n > 0 && n < PATH_MAX);
    return p;
}

/* Writes text to dir/rel, making the folders on the way. */
static void write_file(const char *rel, const char *text)
{
    char p[PATH_MAX];
    memcpy(p, path(rel), PATH_MAX);
    for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
        *s = 0;
        cr_assert(mkdir(p, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "cannot write %s: %s", p, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

static const char tetra_obj[] = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";

/* A growing string. */
typedef struct sb { char *s; size_t n, cap; } sb;

static void sb_printf(sb *b, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        cr_assert(k >= 0);
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        b->cap = (b->cap + (size_t)k + 1) * 2;
        b->s = realloc(b->s, b->cap);
        cr_assert_not_null(b->s);
    }
}

/* Loads dir/rel (written from urdf) and the optional SRDF text (written next to it). */
static int load_text(const char *rel, const char *urdf, const char *srdf, tdm_robot **r, char *err, size_t errlen)
{
    write_file(rel, urdf);
    char srel[PATH_MAX], up[PATH_MAX], sp[PATH_MAX];
    int n = snprintf(srel, sizeof srel, "%s.srdf", rel);
    cr_assert(n > 0 && n < (int)sizeof srel);
    if (srdf) write_file(srel, srdf);
    memcpy(up, path(rel), sizeof up);
    memcpy(sp, path(srel), sizeof sp);
    return tdm_robot_load(up, srdf ? sp : NULL, r, err, errlen);
}

static tdm_robot *load_ok(const char *rel, const char *urdf, const char *srdf)
{
    char err[1024];
    tdm_robot *r = (tdm_robot *)0x1;
    int rc = load_text(rel, urdf, srdf, &r, err, sizeof err);
    cr_assert_eq(rc, TDM_OK, "loading %s: %s (%d)\n%s", rel, err, rc, urdf);
    cr_assert_not_null(r);
    return r;
}

static const char *active_name(const tdm_robot *r, uint32_t i) { return r->joints[r->active[i]].name; }

/* Checks the depth-first storage invariants of urdf.h. */
static void check_layout(const tdm_robot *r)
{
    cr_assert_eq(r->n_joints + 1, r->n_links);
    cr_assert_eq(r->links[0].parent_joint, -1);
    for (uint32_t k = 0; k < r->n_joints; k++) {
        const tdm_robot_joint *j = &r->joints[k];
        cr_assert_eq(j->child, k + 1, "joint %s: child %u", j->name, j->child);
        cr_assert_lt(j->parent, j->child, "joint %s", j->name);
        cr_assert_eq(r->links[j->child].parent_joint, (int32_t)k);
    }
    uint32_t na = 0;
    for (uint32_t k = 0; k < r->n_joints; k++) {
        const tdm_robot_joint *j = &r->joints[k];
        int active = j->type != TDM_JOINT_FIXED && j->mimic_joint < 0;
        cr_assert_eq(j->active, active ? (int32_t)na : -1, "joint %s", j->name);
        if (active) cr_assert_eq(r->active[na++], k);
    }
    cr_assert_eq(na, r->n_active);
    uint32_t c = 0;
    for (uint32_t l = 0; l < r->n_links; l++) {
        cr_assert_eq(r->links[l].first_collision, c);
        for (uint32_t i = 0; i < r->links[l].n_collisions; i++) cr_assert_eq(r->collisions[c + i].link, l);
        c += r->links[l].n_collisions;
    }
    cr_assert_eq(c, r->n_collisions);
}

/* ---- the 4x4 oracle ---- */

typedef struct m4 { double m[4][4]; } m4;

static m4 m4_id(void)
{
    m4 a = {{{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}}};
    return a;
}

static m4 m4_mul(m4 a, m4 b)
{
    m4 c;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double s = 0;
            for (int k = 0; k < 4; k++) s += a.m[i][k] * b.m[k][j];
            c.m[i][j] = s;
        }
    return c;
}

static m4 m4_trans(double x, double y, double z)
{
    m4 a = m4_id();
    a.m[0][3] = x;
    a.m[1][3] = y;
    a.m[2][3] = z;
    return a;
}

/* Rotation about coordinate axis i (0 x, 1 y, 2 z). */
static m4 m4_rot(int i, double t)
{
    m4 a = m4_id();
    int u = (i + 1) % 3, v = (i + 2) % 3;
    a.m[u][u] = cos(t);
    a.m[u][v] = -sin(t);
    a.m[v][u] = sin(t);
    a.m[v][v] = cos(t);
    return a;
}

static m4 m4_origin(const double xyz[3], const double rpy[3])
{
    m4 a = m4_trans(xyz[0], xyz[1], xyz[2]);
    a = m4_mul(a, m4_rot(2, rpy[2]));
    a = m4_mul(a, m4_rot(1, rpy[1]));
    return m4_mul(a, m4_rot(0, rpy[0]));
}

/* Rotation by t about the unit axis k: B Rz(t) B^T, B = [e1 e2 k] orthonormal. */
static m4 m4_axis_rot(const double k[3], double t)
{
    double h[3] = {1, 0, 0};
    if (fabs(k[0]) > 0.8) h[0] = 0, h[1] = 1;
    double d = h[0] * k[0] + h[1] * k[1] + h[2] * k[2];
    double e1[3] = {h[0] - d * k[0], h[1] - d * k[1], h[2] - d * k[2]};
    double n = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    for (int i = 0; i < 3; i++) e1[i] /= n;
    double e2[3] = {k[1] * e1[2] - k[2] * e1[1], k[2] * e1[0] - k[0] * e1[2], k[0] * e1[1] - k[1] * e1[0]};
    m4 b = m4_id(), bt = m4_id();
    for (int i = 0; i < 3; i++) {
        b.m[i][0] = e1[i];
        b.m[i][1] = e2[i];
        b.m[i][2] = k[i];
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) bt.m[i][j] = b.m[j][i];
    return m4_mul(m4_mul(b, m4_rot(2, t)), bt);
}

static double xform_err(const tdm_xform *x, const m4 *a)
{
    double e = 0;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) e = fmax(e, fabs(x->r.m[i][j] - a->m[i][j]));
        e = fmax(e, fabs(tdm_d3_get(x->t, i) - a->m[i][3]));
    }
    return e;
}

/* ---- the depth-first order ---- */

/* A branching tree whose joints (and links) are listed out of order in the file:
 * base's child joints appear as ja, jb, jm; b's as jd, je. */
static const char branching_urdf[] =
    "<?xml version=\"1.0\"?>\n"
    "<robot name=\"branchy\">\n"
    "  <link name=\"c\"/>\n"
    "  <joint name=\"jd\" type=\"continuous\"><parent link=\"b\"/><child link=\"d\"/><axis xyz=\"0 0 1\"/></joint>\n"
    "  <link name=\"b\"/>\n"
    "  <joint name=\"jf\" type=\"revolute\"><parent link=\"e\"/><child link=\"f\"/>\n"
    "    <limit lower=\"-0.1\" upper=\"0.2\" effort=\"1\" velocity=\"1\"/></joint>\n"
    "  <joint name=\"ja\" type=\"revolute\"><parent link=\"base\"/><child link=\"a\"/>\n"
    "    <limit lower=\"-1\" upper=\"1\"/></joint>\n"
    "  <link name=\"base\"/>\n"
    "  <joint name=\"jb\" type=\"revolute\"><parent link=\"base\"/><child link=\"b\"/>\n"
    "    <limit lower=\"-2.5\" upper=\"2.5\"/></joint>\n"
    "  <link name=\"a\"/>\n"
    "  <joint name=\"jc\" type=\"prismatic\"><parent link=\"a\"/><child link=\"c\"/>\n"
    "    <axis xyz=\"0 2 0\"/><limit lower=\"0\" upper=\"0.5\"/></joint>\n"
    "  <joint name=\"je\" type=\"fixed\"><parent link=\"b\"/><child link=\"e\"/><axis xyz=\"0 0 0\"/></joint>\n"
    "  <joint name=\"jm\" type=\"revolute\"><parent link=\"base\"/><child link=\"g\"/>\n"
    "    <limit lower=\"-1\" upper=\"1\"/><mimic joint=\"ja\" multiplier=\"-2\" offset=\"0.25\"/></joint>\n"
    "  <link name=\"d\"/><link name=\"e\"/><link name=\"f\"/><link name=\"g\"/>\n"
    "  <material name=\"ignored\"/>\n"
    "</robot>\n";

Test(robot, depth_first_order)
{
    tdm_robot *r = load_ok("branchy.urdf", branching_urdf, NULL);
    check_layout(r);
    cr_assert_str_eq(r->name, "branchy");
    static const char *const links[] = {"base", "a", "c", "b", "d", "e", "f", "g"};
    static const char *const joints[] = {"ja", "jc", "jb", "jd", "je", "jf", "jm"};
    static const char *const active[] = {"ja", "jc", "jb", "jd", "jf"};
    cr_assert_eq(r->n_links, 8);
    for (uint32_t i = 0; i < 8; i++) cr_assert_str_eq(r->links[i].name, links[i], "link %u", i);
    for (uint32_t i = 0; i < 7; i++) cr_assert_str_eq(r->joints[i].name, joints[i], "joint %u", i);
    cr_assert_eq(r->n_active, 5);
    for (uint32_t i = 0; i < 5; i++) cr_assert_str_eq(active_name(r, i), active[i], "active %u", i);
    const tdm_robot_joint *jc = &r->joints[tdm_robot_find_joint(r, "jc")];
    cr_assert_eq(jc->type, TDM_JOINT_PRISMATIC);
    cr_assert(jc->axis.x == 0 && jc->axis.y == 1 && jc->axis.z == 0, "axis normalised");
    const tdm_robot_joint *jd = &r->joints[tdm_robot_find_joint(r, "jd")];
    cr_assert(jd->lower == -3.141592653589793 && jd->upper == 3.141592653589793);
    const tdm_robot_joint *jm = &r->joints[tdm_robot_find_joint(r, "jm")];
    cr_assert_eq(jm->active, -1);
    cr_assert_eq(jm->mimic_joint, tdm_robot_find_joint(r, "ja"));
    cr_assert_eq(jm->mimic_source, 0);
    cr_assert(jm->mimic_multiplier == -2 && jm->mimic_offset == 0.25);
    cr_assert_eq(r->joints[tdm_robot_find_joint(r, "ja")].line, 8);
    cr_assert_eq(r->links[tdm_robot_find_link(r, "base")].line, 10);
    cr_assert_eq(tdm_robot_find_link(r, "nope"), -1);
    tdm_robot_free(r);
}

/* Mimic chains, a mimic of a fixed joint, prismatic joints, and the joint values. */
Test(robot, mimic_and_prismatic)
{
    const char *urdf =
        "<robot name=\"m\">\n"
        "  <link name=\"l0\"/><link name=\"l1\"/><link name=\"l2\"/><link name=\"l3\"/><link name=\"l4\"/>\n"
        "  <link name=\"l5\"/>\n"
        "  <joint name=\"slide\" type=\"prismatic\"><parent link=\"l0\"/><child link=\"l1\"/>\n"
        "    <origin xyz=\"0.1 0 0\"/><axis xyz=\"1 1 0\"/><limit lower=\"-0.5\" upper=\"0.75\"/></joint>\n"
        /* m2 mimics m1, which mimics slide: declared before m1 */
        "  <joint name=\"m2\" type=\"prismatic\"><parent link=\"l1\"/><child link=\"l2\"/>\n"
        "    <axis xyz=\"0 0 1\"/><limit lower=\"-1\" upper=\"1\"/>\n"
        "    <mimic joint=\"m1\" multiplier=\"3\" offset=\"-0.5\"/></joint>\n"
        "  <joint name=\"m1\" type=\"continuous\"><parent link=\"l0\"/><child link=\"l3\"/>\n"
        "    <mimic joint=\"slide\" multiplier=\"0.5\"/></joint>\n"
        "  <joint name=\"fx\" type=\"fixed\"><parent link=\"l3\"/><child link=\"l4\"/>\n"
        "    <mimic joint=\"slide\"/></joint>\n"
        "  <joint name=\"mf\" type=\"revolute\"><parent link=\"l4\"/><child link=\"l5\"/>\n"
        "    <limit lower=\"-1\" upper=\"1\"/><mimic joint=\"fx\" multiplier=\"7\" offset=\"0.125\"/></joint>\n"
        "</robot>\n";
    tdm_robot *r = load_ok("mimic.urdf", urdf, NULL);
    check_layout(r);
    cr_assert_eq(r->n_active, 1);
    cr_assert_str_eq(active_name(r, 0), "slide");
    const tdm_robot_joint *m2 = &r->joints[tdm_robot_find_joint(r, "m2")];
    const tdm_robot_joint *m1 = &r->joints[tdm_robot_find_joint(r, "m1")];
    const tdm_robot_joint *mf = &r->joints[tdm_robot_find_joint(r, "mf")];
    cr_assert_eq(m1->mimic_source, 0);
    cr_assert_eq(m2->mimic_source, 0);
    cr_assert_eq(mf->mimic_source, -1, "a mimic of a fixed joint follows 0");
    double q = 0.3, v[5];
    cr_assert_eq(tdm_robot_joint_values(r, &q, 1, v), TDM_OK);
    cr_assert_float_eq(v[tdm_robot_find_joint(r, "slide")], 0.3, 1e-15);
    cr_assert_float_eq(v[tdm_robot_find_joint(r, "m1")], 0.15, 1e-15);
    cr_assert_float_eq(v[tdm_robot_find_joint(r, "m2")], 3 * 0.15 - 0.5, 1e-15);
    cr_assert_eq(v[tdm_robot_find_joint(r, "fx")], 0);
    cr_assert_eq(v[tdm_robot_find_joint(r, "mf")], 0.125);

    tdm_xform w[6];
    cr_assert_eq(tdm_robot_fk(r, &q, 1, NULL, w), TDM_OK);
    const double s = 0.3 / sqrt(2);
    tdm_dvec3 p1 = w[tdm_robot_find_link(r, "l1")].t, p2 = w[tdm_robot_find_link(r, "l2")].t;
    cr_assert(fabs(p1.x - (0.1 + s)) < 1e-15 && fabs(p1.y - s) < 1e-15 && p1.z == 0, "l1 at %g %g %g", p1.x, p1.y,
              p1.z);
    cr_assert(fabs(p2.x - p1.x) < 1e-15 && fabs(p2.y - p1.y) < 1e-15 && fabs(p2.z - (3 * 0.15 - 0.5)) < 1e-15);
    /* m1 rotates l3 by 0.15 about x */
    const tdm_xform *l3 = &w[tdm_robot_find_link(r, "l3")];
    cr_assert_float_eq(l3->r.m[1][1], cos(0.15), 1e-15);
    cr_assert_float_eq(l3->r.m[2][1], sin(0.15), 1e-15);
    /* mf at its offset (0.125) about x, composed after l3 */
    const tdm_xform *l5 = &w[tdm_robot_find_link(r, "l5")];
    cr_assert_float_eq(l5->r.m[2][1], sin(0.275), 1e-15);

    double bad = NAN;
    cr_assert_eq(tdm_robot_fk(r, &bad, 1, NULL, w), TDM_ENONFINITE);
    cr_assert_eq(tdm_robot_fk(r, &q, 2, NULL, w), TDM_EINVAL);
    tdm_robot_free(r);
}

/* ---- collision elements and mesh files ---- */

Test(robot, collision_elements)
{
    /* ws/mypkg/urdf/robot.urdf, meshes under ws/mypkg/meshes, and a Panda-style
     * "package://meshes/..." folder next to the URDF. */
    write_file("ws/mypkg/meshes/arm.obj", tetra_obj);
    write_file("ws/mypkg/meshes/hand.obj", tetra_obj);
    write_file("ws/mypkg/urdf/meshes/local.obj", tetra_obj);
    write_file("ws/mypkg/urdf/parts/rel.obj", tetra_obj);
    /* both urdf/shadow/meshes/s.obj and urdf/meshes/s.obj: the first wins */
    write_file("ws/mypkg/urdf/shadow/meshes/s.obj", tetra_obj);
    write_file("ws/mypkg/urdf/meshes/s.obj", tetra_obj);
    const char *urdf =
        "<robot name=\"shapes\">\n"
        "  <link name=\"base\">\n"
        "    <visual><geometry><mesh filename=\"package://mypkg/meshes/missing_visual.obj\"/></geometry></visual>\n"
        "    <collision><origin xyz=\"1 2 3\" rpy=\"0 0 1.5707963267948966\"/>\n"
        "      <geometry><box size=\"0.1 0.2 0.3\"/></geometry></collision>\n"
        "    <collision><geometry><cylinder radius=\"0.05\" length=\"0.4\"/></geometry></collision>\n"
        "    <collision><geometry><sphere radius=\"0.07\"/></geometry></collision>\n"
        "    <collision><geometry><capsule radius=\"0.02\" length=\"0.3\"/></geometry></collision>\n"
        "  </link>\n"
        "  <link name=\"arm\">\n"
        "    <collision><geometry><mesh filename=\"package://mypkg/meshes/arm.obj\" scale=\"0.001 0.002 "
        "0.003\"/></geometry></collision>\n"
        "    <collision><geometry><mesh filename=\"package://renamed/meshes/hand.obj\" scale=\"2\"/></geometry>"
        "</collision>\n"
        "    <collision><geometry><mesh filename=\"package://meshes/local.obj\"/></geometry></collision>\n"
        "    <collision><geometry><mesh filename=\"parts/rel.obj\"/></geometry></collision>\n"
        "    <collision><geometry><mesh filename=\"../meshes/arm.obj\"/></geometry></collision>\n"
        "    <collision><geometry><mesh filename=\"package://shadow/meshes/s.obj\"/></geometry></collision>\n"
        "  </link>\n"
        "  <link name=\"bare\"/>\n"
        "  <joint name=\"j\" type=\"revolute\"><parent link=\"base\"/><child link=\"arm\"/>\n"
        "    <limit lower=\"-1\" upper=\"1\"/></joint>\n"
        "  <joint name=\"k\" type=\"fixed\"><parent link=\"base\"/><child link=\"bare\"/></joint>\n"
        "</robot>\n";
    tdm_robot *r = load_ok("ws/mypkg/urdf/robot.urdf", urdf, NULL);
    check_layout(r);
    cr_assert_eq(r->n_collisions, 10);
    const tdm_robot_link *base = &r->links[0], *arm = &r->links[1], *bare = &r->links[2];
    cr_assert_str_eq(arm->name, "arm");
    cr_assert_eq(base->n_collisions, 4);
    cr_assert_eq(arm->n_collisions, 6);
    cr_assert_eq(bare->n_collisions, 0);
    const tdm_robot_collision *c = r->collisions;
    cr_assert_eq(c[0].shape, TDM_SHAPE_BOX);
    cr_assert(c[0].size[0] == 0.1 && c[0].size[1] == 0.2 && c[0].size[2] == 0.3);
    cr_assert(c[0].origin.t.x == 1 && c[0].origin.t.y == 2 && c[0].origin.t.z == 3);
    cr_assert_float_eq(c[0].origin.r.m[1][0], 1.0, 1e-15, "yaw of pi/2 maps x to y");
    cr_assert_eq(c[0].line, 4);
    cr_assert_eq(c[1].shape, TDM_SHAPE_CYLINDER);
    cr_assert(c[1].size[0] == 0.05 && c[1].size[1] == 0.4);
    cr_assert_eq(c[2].shape, TDM_SHAPE_SPHERE);
    cr_assert(c[2].size[0] == 0.07);
    cr_assert_eq(c[3].shape, TDM_SHAPE_CAPSULE);
    cr_assert(c[3].size[0] == 0.02 && c[3].size[1] == 0.3);
    for (int i = 0; i < 4; i++) cr_assert_null(c[i].mesh_path);

    char want[PATH_MAX];
    static const char *const files[] = {"ws/mypkg/meshes/arm.obj",        "ws/mypkg/meshes/hand.obj",
                                        "ws/mypkg/urdf/meshes/local.obj", "ws/mypkg/urdf/parts/rel.obj",
                                        "ws/mypkg/meshes/arm.obj",        "ws/mypkg/urdf/shadow/meshes/s.obj"};
    for (int i = 0; i < 6; i++) {
        const tdm_robot_collision *m = &c[4 + i];
        cr_assert_eq(m->shape, TDM_SHAPE_MESH);
        cr_assert_not_null(m->mesh_path);
        cr_assert_eq(m->mesh_path[0], '/', "resolved paths are absolute: %s", m->mesh_path);
        char got[PATH_MAX];
        cr_assert_not_null(realpath(path(files[i]), want));
        cr_assert_not_null(realpath(m->mesh_path, got));
        cr_assert_str_eq(got, want, "mesh %d (%s)", i, m->mesh_uri);
    }
    cr_assert_str_eq(c[4].mesh_uri, "package://mypkg/meshes/arm.obj");
    cr_assert(c[4].scale.x == 0.001 && c[4].scale.y == 0.002 && c[4].scale.z == 0.003);
    cr_assert(c[5].scale.x == 2 && c[5].scale.y == 2 && c[5].scale.z == 2);
    cr_assert(c[6].scale.x == 1 && c[6].scale.y == 1 && c[6].scale.z == 1);

    /* collision world transforms: link world times origin */
    double q = 0.7;
    tdm_xform lw[3], cw[10];
    tdm_xform base_pose = tdm_xform_from_pose(tdm_d3(0.5, -1, 2), (tdm_quat){0, 0, sin(0.2), cos(0.2)});
    cr_assert_eq(tdm_robot_fk(r, &q, 1, &base_pose, lw), TDM_OK);
    tdm_robot_collision_world(r, lw, cw);
    m4 b = m4_mul(m4_trans(0.5, -1, 2), m4_rot(2, 0.4));
    double o[3] = {1, 2, 3}, rpy[3] = {0, 0, 1.5707963267948966};
    m4 box = m4_mul(b, m4_origin(o, rpy));
    cr_assert_lt(xform_err(&cw[0], &box), 1e-14);
    m4 armw = m4_mul(b, m4_rot(0, 0.7));
    for (int i = 4; i < 10; i++) cr_assert_lt(xform_err(&cw[i], &armw), 1e-14, "collision %d", i);
    tdm_robot_free(r);
}

/* ---- forward kinematics against the oracle on random trees ---- */

enum { FK_LINKS = 14 };

typedef struct tjoint {
    int parent;  /* test link index; this joint's child is its own index */
    int type;    /* tdm_joint_type */
    double xyz[3], rpy[3], axis[3];
    int mimic;   /* test joint index or -1 */
    double mult, off;
    int file_pos; /* position among the joints in the file */
} tjoint;

typedef struct tcoll { int link; double xyz[3], rpy[3]; } tcoll;

/* Test joint values, recursively (the oracle's own mimic rule). */
static double oracle_value(const tjoint *t, int j, const double *qa, const int *active_of)
{
    if (t[j].type == TDM_JOINT_FIXED) return 0;
    if (t[j].mimic >= 0) return t[j].mult * oracle_value(t, t[j].mimic, qa, active_of) + t[j].off;
    return qa[active_of[j]];
}

static void dfs(const tjoint *t, int link, int *order, int *n)
{
    /* children of `link` in file order of their joints */
    for (int pos = 0; pos < FK_LINKS - 1; pos++)
        for (int j = 1; j < FK_LINKS; j++)
            if (t[j].file_pos == pos && t[j].parent == link) {
                order[(*n)++] = j;
                dfs(t, j, order, n);
            }
}

Test(robot, fk_against_matrices)
{
    gen_rng g = {seed};
    char what[64];
    for (int round = 0; round < 30; round++) {
        snprintf(what, sizeof what, "seed %llu round %d", (unsigned long long)seed, round);
        tjoint t[FK_LINKS];
        memset(t, 0, sizeof t);
        int perm[FK_LINKS];
        for (int i = 0; i < FK_LINKS; i++) perm[i] = i;
        for (int i = FK_LINKS - 1; i > 1; i--) { /* the file order of joints 1.. */
            int k = (int)gen_int(&g, 1, i);
            int tmp = perm[i];
            perm[i] = perm[k];
            perm[k] = tmp;
        }
        for (int pos = 1; pos < FK_LINKS; pos++) t[perm[pos]].file_pos = pos - 1;
        for (int j = 1; j < FK_LINKS; j++) {
            tjoint *x = &t[j];
            x->parent = (int)gen_int(&g, 0, j - 1);
            x->type = (int)gen_int(&g, 0, 3);
            for (int k = 0; k < 3; k++) {
                x->xyz[k] = gen_range(&g, -0.5, 0.5);
                x->rpy[k] = gen_range(&g, -3.2, 3.2);
                x->axis[k] = gen_range(&g, -1, 1);
            }
            x->mimic = -1;
            if (x->type != TDM_JOINT_FIXED && j > 1 && gen_int(&g, 0, 3) == 0) {
                x->mimic = (int)gen_int(&g, 1, j - 1);
                x->mult = gen_range(&g, -2, 2);
                x->off = gen_range(&g, -1, 1);
            }
        }
        int ncoll = 0;
        tcoll coll[2 * FK_LINKS];
        for (int l = 0; l < FK_LINKS; l++)
            for (int k = (int)gen_int(&g, 0, 2); k > 0; k--) {
                coll[ncoll].link = l;
                for (int i = 0; i < 3; i++) {
                    coll[ncoll].xyz[i] = gen_range(&g, -1, 1);
                    coll[ncoll].rpy[i] = gen_range(&g, -3.2, 3.2);
                }
                ncoll++;
            }

        /* The URDF: links in a random order (their collisions in order), joints in theirs. */
        sb b = {0};
        sb_printf(&b, "<robot name=\"rnd\">\n");
        int lperm[FK_LINKS];
        for (int i = 0; i < FK_LINKS; i++) lperm[i] = i;
        for (int i = FK_LINKS - 1; i > 0; i--) {
            int k = (int)gen_int(&g, 0, i), tmp = lperm[i];
            lperm[i] = lperm[k];
            lperm[k] = tmp;
        }
        for (int i = 0; i < FK_LINKS; i++) {
            int l = lperm[i];
            sb_printf(&b, "<link name=\"L%d\">\n", l);
            for (int c = 0; c < ncoll; c++)
                if (coll[c].link == l)
                    sb_printf(&b,
                              "<collision><origin xyz=\"%.17g %.17g %.17g\" rpy=\"%.17g %.17g %.17g\"/>"
                              "<geometry><box size=\"1 1 1\"/></geometry></collision>\n",
                              coll[c].xyz[0], coll[c].xyz[1], coll[c].xyz[2], coll[c].rpy[0], coll[c].rpy[1],
                              coll[c].rpy[2]);
            sb_printf(&b, "</link>\n");
        }
        static const char *const tname[] = {"fixed", "revolute", "continuous", "prismatic"};
        for (int pos = 0; pos < FK_LINKS - 1; pos++)
            for (int j = 1; j < FK_LINKS; j++) {
                if (t[j].file_pos != pos) continue;
                const tjoint *x = &t[j];
                sb_printf(&b, "<joint name=\"J%d\" type=\"%s\"><parent link=\"L%d\"/><child link=\"L%d\"/>\n", j,
                          tname[x->type], x->parent, j);
                sb_printf(&b, "<origin xyz=\"%.17g %.17g %.17g\" rpy=\"%.17g %.17g %.17g\"/>\n", x->xyz[0], x->xyz[1],
                          x->xyz[2], x->rpy[0], x->rpy[1], x->rpy[2]);
                sb_printf(&b, "<axis xyz=\"%.17g %.17g %.17g\"/>\n", x->axis[0], x->axis[1], x->axis[2]);
                if (x->type == TDM_JOINT_REVOLUTE || x->type == TDM_JOINT_PRISMATIC)
                    sb_printf(&b, "<limit lower=\"-1\" upper=\"1\"/>\n");
                if (x->mimic >= 0)
                    sb_printf(&b, "<mimic joint=\"J%d\" multiplier=\"%.17g\" offset=\"%.17g\"/>\n", x->mimic, x->mult,
                              x->off);
                sb_printf(&b, "</joint>\n");
            }
        sb_printf(&b, "</robot>\n");
        tdm_robot *r = load_ok("rnd.urdf", b.s, NULL);
        free(b.s);
        check_layout(r);

        /* The oracle's own depth-first order and active joints. */
        int order[FK_LINKS], n = 0, active_of[FK_LINKS], na = 0;
        dfs(t, 0, order, &n);
        cr_assert_eq(n, FK_LINKS - 1);
        for (int i = 0; i < n; i++) {
            int j = order[i];
            char name[16];
            snprintf(name, sizeof name, "J%d", j);
            cr_assert_str_eq(r->joints[i].name, name, "%s: joint %d", what, i);
            active_of[j] = -1;
            if (t[j].type != TDM_JOINT_FIXED && t[j].mimic < 0) {
                cr_assert_str_eq(active_name(r, (uint32_t)na), name, "%s: active joint %d", what, na);
                active_of[j] = na++;
            }
        }
        cr_assert_eq((int)r->n_active, na, "%s", what);

        for (int trial = 0; trial < 20; trial++) {
            double qa[FK_LINKS];
            for (int i = 0; i < na; i++) qa[i] = gen_range(&g, -3.5, 3.5);
            tdm_xform lw[FK_LINKS], cw[2 * FK_LINKS];
            tdm_xform *base = NULL, bx;
            m4 world[FK_LINKS];
            world[0] = m4_id();
            if (trial % 2) {
                double o[3] = {gen_range(&g, -2, 2), gen_range(&g, -2, 2), gen_range(&g, -2, 2)};
                double rpy[3] = {gen_range(&g, -3, 3), gen_range(&g, -3, 3), gen_range(&g, -3, 3)};
                world[0] = m4_origin(o, rpy);
                bx.t = tdm_d3(o[0], o[1], o[2]);
                for (int i = 0; i < 3; i++)
                    for (int k = 0; k < 3; k++) bx.r.m[i][k] = world[0].m[i][k];
                base = &bx;
            }
            cr_assert_eq(tdm_robot_fk(r, qa, (size_t)na, base, lw), TDM_OK);
            tdm_robot_collision_world(r, lw, cw);
            for (int i = 0; i < n; i++) {
                int j = order[i];
                const tjoint *x = &t[j];
                double v = oracle_value(t, j, qa, active_of);
                double len = sqrt(x->axis[0] * x->axis[0] + x->axis[1] * x->axis[1] + x->axis[2] * x->axis[2]);
                double k[3] = {x->axis[0] / len, x->axis[1] / len, x->axis[2] / len};
                m4 motion = m4_id();
                if (x->type == TDM_JOINT_REVOLUTE || x->type == TDM_JOINT_CONTINUOUS) motion = m4_axis_rot(k, v);
                else if (x->type == TDM_JOINT_PRISMATIC) motion = m4_trans(v * k[0], v * k[1], v * k[2]);
                world[j] = m4_mul(m4_mul(world[x->parent], m4_origin(x->xyz, x->rpy)), motion);
            }
            for (int l = 0; l < FK_LINKS; l++) {
                char name[16];
                snprintf(name, sizeof name, "L%d", l);
                int32_t li = tdm_robot_find_link(r, name);
                cr_assert_geq(li, 0);
                double e = xform_err(&lw[li], &world[l]);
                cr_assert_lt(e, 1e-12, "%s trial %d: link %s off by %g", what, trial, name, e);
            }
            /* collisions: in link order, each link's in file order */
            for (uint32_t c = 0, seen[FK_LINKS] = {0}; c < r->n_collisions; c++) {
                int l = atoi(r->links[r->collisions[c].link].name + 1), nth = (int)seen[l]++, idx = -1;
                for (int i = 0; i < ncoll && idx < 0; i++)
                    if (coll[i].link == l && nth-- == 0) idx = i;
                cr_assert_geq(idx, 0);
                m4 want = m4_mul(world[l], m4_origin(coll[idx].xyz, coll[idx].rpy));
                double e = xform_err(&cw[c], &want);
                cr_assert_lt(e, 1e-12, "%s trial %d: collision %u of link L%d off by %g", what, trial, c, l, e);
            }
        }
        tdm_robot_free(r);
    }
}

/* ---- SRDF ---- */

Test(robot, srdf_pairs)
{
    const char *srdf = "<?xml version=\"1.0\"?>\n<robot name=\"branchy\">\n"
                       "  <group name=\"arm\"><chain base_link=\"base\" tip_link=\"f\"/></group>\n"
                       "  <disable_collisions link1=\"a\" link2=\"base\" reason=\"Adjacent\"/>\n"
                       "  <disable_collisions link1=\"base\" link2=\"a\" reason=\"again\"/>\n"
                       "  <disable_collisions link1=\"f\" link2=\"d\" reason=\"Never\"/>\n"
                       "  <disable_collisions link1=\"g\" link2=\"g\"/>\n"
                       "</robot>\n";
    tdm_robot *r = load_ok("branchy.urdf", branching_urdf, srdf);
    cr_assert_eq(r->n_disabled, 2);
    int32_t a = tdm_robot_find_link(r, "a"), base = tdm_robot_find_link(r, "base"), d = tdm_robot_find_link(r, "d"),
            f = tdm_robot_find_link(r, "f"), g = tdm_robot_find_link(r, "g");
    cr_assert(tdm_robot_pair_disabled(r, (uint32_t)a, (uint32_t)base));
    cr_assert(tdm_robot_pair_disabled(r, (uint32_t)base, (uint32_t)a));
    cr_assert(tdm_robot_pair_disabled(r, (uint32_t)d, (uint32_t)f));
    cr_assert(!tdm_robot_pair_disabled(r, (uint32_t)a, (uint32_t)f));
    cr_assert(!tdm_robot_pair_disabled(r, (uint32_t)g, (uint32_t)base));
    for (uint32_t i = 0; i < r->n_disabled; i++) cr_assert_lt(r->disabled[i][0], r->disabled[i][1]);

    /* A bad SRDF leaves the robot as it was. */
    write_file("bad.srdf", "<robot><disable_collisions link1=\"a\" link2=\"e\"/>\n"
                           "<disable_collisions link1=\"a\" link2=\"zz\"/></robot>\n");
    char err[512];
    cr_assert_eq(tdm_robot_load_srdf(r, path("bad.srdf"), err, sizeof err), TDM_EFORMAT);
    cr_assert_not_null(strstr(err, "bad.srdf:2:"), "%s", err);
    cr_assert_not_null(strstr(err, "link2=\"zz\""), "%s", err);
    cr_assert_eq(r->n_disabled, 2);
    tdm_robot_free(r);

    /* Through tdm_robot_load: nothing is returned. */
    r = (tdm_robot *)0x1;
    cr_assert_eq(load_text("branchy2.urdf", branching_urdf, "<robot><disable_collisions link1=\"a\"/></robot>", &r,
                           err, sizeof err),
                 TDM_EFORMAT);
    cr_assert_null(r);
    cr_assert_not_null(strstr(err, "branchy2.urdf.srdf:1: <disable_collisions> has no link2"), "%s", err);
}

/* ---- errors ---- */

typedef struct bad_case {
    const char *name;
    const char *body;        /* inside <robot> */
    int code;
    const char *want[3];     /* substrings of the message besides the file name */
} bad_case;

#define J_REV(n, p, c) "<joint name=\"" n "\" type=\"revolute\"><parent link=\"" p "\"/><child link=\"" c "\"/>" \
                       "<limit lower=\"-1\" upper=\"1\"/></joint>\n"

static const bad_case bad_cases[] = {
    {"unknown parent", "<link name=\"a\"/><link name=\"b\"/>\n" J_REV("j1", "x", "b"), TDM_EFORMAT,
     {":2:", "joint 'j1'", "parent link 'x'"}},
    {"unknown child", "<link name=\"a\"/><link name=\"b\"/>\n" J_REV("j1", "a", "bb"), TDM_EFORMAT,
     {":2:", "joint 'j1'", "child link 'bb'"}},
    {"two parents", "<link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>\n" J_REV("j1", "a", "c") J_REV("j2", "b", "c"),
     TDM_EFORMAT, {":3:", "joint 'j2'", "link 'c' already has a parent joint, 'j1'"}},
    {"disconnected", "<link name=\"a\"/><link name=\"b\"/>\n<link name=\"c\"/>\n" J_REV("j1", "a", "b"), TDM_EFORMAT,
     {":2:", "link 'c'", "second root link"}},
    {"cycle, no root", "<link name=\"a\"/><link name=\"b\"/>\n" J_REV("j1", "a", "b") J_REV("j2", "b", "a"),
     TDM_EFORMAT, {"cycle", "'j1'", "'j2'"}},
    {"cycle beside the root",
     "<link name=\"r\"/><link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>\n" J_REV("j0", "r", "c")
         J_REV("j1", "a", "b") J_REV("j2", "b", "a"),
     TDM_EFORMAT, {"cycle", "'j1'", "'j2'"}},
    {"self loop", "<link name=\"r\"/><link name=\"a\"/>\n" J_REV("j1", "a", "a"), TDM_EFORMAT,
     {":2:", "joint 'j1'", "cycle"}},
    {"mimic of an unknown joint",
     "<link name=\"a\"/><link name=\"b\"/>\n"
     "<joint name=\"j1\" type=\"continuous\"><parent link=\"a\"/><child link=\"b\"/>\n<mimic joint=\"ghost\"/></joint>",
     TDM_EFORMAT, {":3:", "joint 'j1'", "'ghost'"}},
    {"mimic loop",
     "<link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>\n"
     "<joint name=\"j1\" type=\"continuous\"><parent link=\"a\"/><child link=\"b\"/><mimic joint=\"j2\"/></joint>\n"
     "<joint name=\"j2\" type=\"continuous\"><parent link=\"a\"/><child link=\"c\"/><mimic joint=\"j1\"/></joint>\n",
     TDM_EFORMAT, {"joint 'j1'", "loops", ":2:"}},
    {"duplicate link", "<link name=\"a\"/>\n<link name=\"a\"/>", TDM_EFORMAT, {":2:", "link 'a'", "line 1"}},
    {"duplicate joint",
     "<link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>\n" J_REV("j", "a", "b") J_REV("j", "a", "c"),
     TDM_EFORMAT, {":3:", "joint 'j'", "line 2"}},
    {"link without name", "<link/>", TDM_EFORMAT, {":1:", "link", "name"}},
    {"no links", "<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/><child link=\"b\"/></joint>", TDM_EFORMAT,
     {"no <link>", "", ""}},
    {"limit without upper",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child "
     "link=\"b\"/>\n<limit lower=\"-1\"/></joint>",
     TDM_EFORMAT, {":3:", "joint 'j'", "upper"}},
    {"no limit", "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"prismatic\"><parent link=\"a\"/>"
                 "<child link=\"b\"/></joint>",
     TDM_EFORMAT, {":2:", "joint 'j'", "<limit"}},
    {"limits reversed",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child "
     "link=\"b\"/>\n<limit lower=\"1\" upper=\"-1\"/></joint>",
     TDM_EFORMAT, {":3:", "joint 'j'", "lower"}},
    {"NaN origin",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/><child "
     "link=\"b\"/>\n<origin xyz=\"0 nan 0\"/></joint>",
     TDM_ENONFINITE, {":3:", "joint 'j'", "finite"}},
    {"infinite axis",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"continuous\"><parent link=\"a\"/><child "
     "link=\"b\"/>\n\n<axis xyz=\"0 0 inf\"/></joint>",
     TDM_ENONFINITE, {":4:", "joint 'j'", "finite"}},
    {"short xyz",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/><child "
     "link=\"b\"/><origin xyz=\"1 2\"/></joint>",
     TDM_EFORMAT, {":2:", "joint 'j'", "3 numbers"}},
    {"garbage rpy",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/><child "
     "link=\"b\"/><origin rpy=\"1 2 3x\"/></joint>",
     TDM_EFORMAT, {":2:", "joint 'j'", "rpy"}},
    {"zero axis",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"continuous\"><parent link=\"a\"/><child "
     "link=\"b\"/>\n<axis xyz=\"0 0 0\"/></joint>",
     TDM_EFORMAT, {":3:", "joint 'j'", "axis"}},
    {"floating joint",
     "<link name=\"a\"/><link name=\"b\"/>\n<joint name=\"j\" type=\"floating\"><parent link=\"a\"/><child "
     "link=\"b\"/></joint>",
     TDM_EFORMAT, {":2:", "joint 'j'", "unsupported joint type 'floating'"}},
    {"no child", "<link name=\"a\"/>\n<joint name=\"j\" type=\"fixed\"><parent link=\"a\"/></joint>", TDM_EFORMAT,
     {":2:", "joint 'j'", "<child>"}},
    {"negative box", "<link name=\"a\">\n<collision><geometry>\n<box size=\"1 -1 1\"/></geometry></collision></link>",
     TDM_EFORMAT, {":3:", "link 'a'", "negative"}},
    {"zero sphere", "<link name=\"a\">\n<collision><geometry><sphere radius=\"0\"/></geometry></collision></link>",
     TDM_EFORMAT, {":2:", "link 'a'", "radius"}},
    {"negative cylinder",
     "<link name=\"a\">\n<collision><geometry><cylinder radius=\"1\" length=\"-2\"/></geometry></collision></link>",
     TDM_EFORMAT, {":2:", "link 'a'", "length"}},
    {"cylinder without length",
     "<link name=\"a\">\n<collision><geometry><cylinder radius=\"1\"/></geometry></collision></link>", TDM_EFORMAT,
     {":2:", "link 'a'", "length"}},
    {"NaN sphere", "<link name=\"a\">\n<collision><geometry><sphere radius=\"NaN\"/></geometry></collision></link>",
     TDM_ENONFINITE, {":2:", "link 'a'", "finite"}},
    {"no geometry", "<link name=\"a\">\n<collision><origin/></collision></link>", TDM_EFORMAT,
     {":2:", "link 'a'", "<geometry>"}},
    {"unknown shape", "<link name=\"a\">\n<collision><geometry><cone/></geometry></collision></link>", TDM_EFORMAT,
     {":2:", "link 'a'", "<cone>"}},
    {"missing mesh",
     "<link name=\"a\">\n<collision><geometry>\n<mesh filename=\"package://pkg/meshes/none.stl\"/></geometry>"
     "</collision></link>",
     TDM_EIO, {":3:", "link 'a'", "/pkg/meshes/none.stl"}},
    {"missing relative mesh",
     "<link name=\"a\">\n<collision><geometry><mesh filename=\"sub/none.obj\"/></geometry></collision></link>",
     TDM_EIO, {":2:", "link 'a'", "/sub/none.obj"}},
    {"zero scale",
     "<link name=\"a\">\n<collision><geometry><mesh filename=\"t.obj\" scale=\"1 0 1\"/></geometry></collision></link>",
     TDM_EFORMAT, {":2:", "link 'a'", "scale"}},
    {"http mesh",
     "<link name=\"a\">\n<collision><geometry><mesh filename=\"http://x/t.obj\"/></geometry></collision></link>",
     TDM_EFORMAT, {":2:", "link 'a'", "http://x/t.obj"}},
};

Test(robot, errors_name_the_element)
{
    write_file("err/t.obj", tetra_obj);
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *c = &bad_cases[i];
        char rel[64], text[4096], err[1024];
        snprintf(rel, sizeof rel, "err/case%zu.urdf", i);
        /* the body starts on line 1 */
        snprintf(text, sizeof text, "<robot name=\"bad\">%s\n</robot>\n", c->body);
        tdm_robot *r = (tdm_robot *)0x1;
        int rc = load_text(rel, text, NULL, &r, err, sizeof err);
        cr_assert_eq(rc, c->code, "%s: returned %d (%s), expected %d", c->name, rc, err, c->code);
        cr_assert_null(r, "%s: a robot was returned", c->name);
        cr_assert_not_null(strstr(err, path(rel)), "%s: '%s' does not name the file", c->name, err);
        for (int k = 0; k < 3; k++)
            cr_assert_not_null(strstr(err, c->want[k]), "%s: '%s' does not say '%s'", c->name, err, c->want[k]);
    }
}

Test(robot, file_errors)
{
    char err[512];
    tdm_robot *r = (tdm_robot *)0x1;
    cr_assert_eq(tdm_robot_load(path("nowhere.urdf"), NULL, &r, err, sizeof err), TDM_EIO);
    cr_assert_null(r);
    cr_assert_not_null(strstr(err, "nowhere.urdf"), "%s", err);

    cr_assert_eq(load_text("malformed.urdf", "<robot>\n<link name=\"a\">\n</robot>\n", NULL, &r, err, sizeof err),
                 TDM_EFORMAT);
    cr_assert_null(r);
    cr_assert_not_null(strstr(err, "malformed.urdf:3:"), "%s", err);

    cr_assert_eq(load_text("notrobot.urdf", "<sdf><link name=\"a\"/></sdf>", NULL, &r, err, sizeof err), TDM_EFORMAT);
    cr_assert_not_null(strstr(err, "<sdf>"), "%s", err);

    /* One link over the limit. */
    sb b = {0};
    sb_printf(&b, "<robot>\n<link name=\"l0\"/>\n");
    for (int i = 1; i <= TDM_ROBOT_MAX_LINKS; i++)
        sb_printf(&b, "<link name=\"l%d\"/><joint name=\"j%d\" type=\"fixed\"><parent link=\"l%d\"/>"
                      "<child link=\"l%d\"/></joint>\n",
                  i, i, i - 1, i);
    sb_printf(&b, "</robot>\n");
    cr_assert_eq(load_text("big.urdf", b.s, NULL, &r, err, sizeof err), TDM_ERANGE);
    cr_assert_null(r);
    cr_assert_not_null(strstr(err, "more than 1024 links"), "%s", err);
    free(b.s);

    /* At the limit: a chain 1023 joints deep loads, depth first without recursion. */
    b = (sb){0};
    sb_printf(&b, "<robot>\n<link name=\"l0\"/>\n");
    for (int i = 1; i < TDM_ROBOT_MAX_LINKS; i++)
        sb_printf(&b, "<link name=\"l%d\"/><joint name=\"j%d\" type=\"continuous\"><parent link=\"l%d\"/>"
                      "<child link=\"l%d\"/></joint>\n",
                  i, i, i - 1, i);
    sb_printf(&b, "</robot>\n");
    r = load_ok("long.urdf", b.s, NULL);
    free(b.s);
    cr_assert_eq(r->n_links, TDM_ROBOT_MAX_LINKS);
    cr_assert_eq(r->n_active, TDM_ROBOT_MAX_LINKS - 1);
    check_layout(r);
    tdm_robot_free(r);
}

/* ---- `tandem robot joints` ---- */

typedef tdm_run_result run_result;

static run_result run(const char *const *args)
{
    char o[PATH_MAX], e[PATH_MAX];
    snprintf(o, sizeof o, "%s", path("stdout"));
    snprintf(e, sizeof e, "%s", path("stderr"));
    run_result r;
    int rc = tdm_run_capture(TANDEM_BIN, args, o, e, &r);
    cr_assert_eq(rc, 0, "cannot run %s: %s", TANDEM_BIN, strerror(rc));
    return r;
}

Test(robot, cli_joints)
{
    write_file("cli/branchy.urdf", branching_urdf);
    char up[PATH_MAX];
    memcpy(up, path("cli/branchy.urdf"), PATH_MAX);
    run_result r = run((const char *[]){"robot", "joints", "--urdf", up, NULL});
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    /* exactly: the shortest text that reads back as each limit */
    cr_assert_str_eq(r.out, "ja -1 1\njc 0 0.5\njb -2.5 2.5\njd -3.141592653589793 3.141592653589793\njf -0.1 0.2\n");
    cr_assert_str_eq(r.err, "");
    free(r.out);
    free(r.err);

    /* bad input: exit 1, the message names the file and the element */
    write_file("cli/bad.urdf", "<robot>\n<link name=\"a\"/>\n" J_REV("jx", "a", "nolink") "</robot>\n");
    memcpy(up, path("cli/bad.urdf"), PATH_MAX);
    r = run((const char *[]){"robot", "joints", "--urdf", up, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert_str_eq(r.out, "");
    cr_assert_not_null(strstr(r.err, up), "%s", r.err);
    cr_assert_not_null(strstr(r.err, ":3: joint 'jx': child link 'nolink'"), "%s", r.err);
    free(r.out);
    free(r.err);

    /* usage errors: exit 2 */
    const char *const *usage[] = {
        (const char *[]){"robot", "joints", NULL},
        (const char *[]){"robot", "joints", "--urdf", NULL},
        (const char *[]){"robot", "joints", "--mesh", "x", NULL},
        (const char *[]){"robot", "put", NULL},
        (const char *[]){"robot", NULL},
    };
    for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
        r = run(usage[i]);
        cr_assert_eq(r.status, 2, "usage case %zu: exit %d, stderr %s", i, r.status, r.err);
        cr_assert_neq(r.err[0], 0);
        free(r.out);
        free(r.err);
    }
}
