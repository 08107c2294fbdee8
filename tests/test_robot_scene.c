/* robot/robot_scene.h and `tandem check --urdf`: a generated arm (URDF with box,
 * cylinder and OBJ-mesh links, revolute and prismatic joints, an SRDF) in a
 * generated MoveIt planning scene (a rotated box and a cylinder, an ACM with a
 * link-link and a link-object entry, a root transform), checked against a
 * brute-force oracle on random configurations.
 *
 * The oracle is independent of robot/: forward kinematics from the numbers this
 * file writes into the URDF (elementary rotation matrices composed by hand), the
 * checked pairs from this file's own rule, and every triangle pair of every checked
 * pair tested with tdm_tri_tri_intersect in world coordinates (double), and, as
 * primitives are solids (workpile/solid.h, as in FCL), every vertex of one object
 * against the true shape of the other when that is a primitive
 * (tdm_primitive_contains, exact). It shares
 * the element meshes only: geom/primitive.h's tessellations (tested on their own)
 * and the OBJ as tdm_mesh_load_file reads it, scaled here. Configurations are
 * random, so no contact is exactly grazing and the rounding of the engines' own
 * transform chain cannot change an answer. */
#define _XOPEN_SOURCE 700
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gen.h"
#include "spawn.h"
#include "geom/primitive.h"
#include "geom/tri.h"
#include "robot/robot_scene.h"
#include "robot/shape_cache.h"
#include "tools/io.h"
#include "workpile/pooler.h"
#include "workpile/sched.h"
#include "arm_fixture.h"

#ifndef TANDEM_BIN
#error "TANDEM_BIN (the path of the tandem executable) must be defined by the build"
#endif

static uint64_t seed;
static char dir[256];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static const char *path(const char *name)
{
    static char buf[16][512];
    static int k;
    char *p = buf[k++ % 16];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

static void write_file(const char *name, const char *text)
{
    FILE *f = fopen(path(name), "w");
    cr_assert_not_null(f, "cannot write %s", path(name));
    fputs(text, f);
    fclose(f);
}

/* ---- the robot and the world ---- */

/* Links: base_link (0), link1 (1), link2 (2), link3 (3). Elements, in URDF order:
 * 0 base box; 1 link1 cylinder, 2 link1 box; 3 link2 mesh, 4 link2 box; 5 link3 cylinder. */
#define N_EL 6
#define N_OBS 2
static const int el_link[N_EL] = {0, 1, 1, 2, 2, 3};

/* A bar x 0.1..1, y and z -0.05..0.05: 0.05..0.5 and +-0.025 at scale 0.5 (all exact). */
/* Root at T(0.05, -0.02, 0.01) Rz(0.2); obs_box rotated Rz(0.3). */
typedef struct m4 { double r[3][3], t[3]; } m4;

static m4 m_mul(const m4 *a, const m4 *b)
{
    m4 c;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) c.r[i][j] = a->r[i][0] * b->r[0][j] + a->r[i][1] * b->r[1][j] + a->r[i][2] * b->r[2][j];
        c.t[i] = a->r[i][0] * b->t[0] + a->r[i][1] * b->t[1] + a->r[i][2] * b->t[2] + a->t[i];
    }
    return c;
}
static m4 m_t(double x, double y, double z) { return (m4){{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {x, y, z}}; }
static m4 m_rz(double a) { return (m4){{{cos(a), -sin(a), 0}, {sin(a), cos(a), 0}, {0, 0, 1}}, {0, 0, 0}}; }
static m4 m_ry(double a) { return (m4){{{cos(a), 0, sin(a)}, {0, 1, 0}, {-sin(a), 0, cos(a)}}, {0, 0, 0}}; }
static m4 m_then(m4 a, m4 b) { return m_mul(&a, &b); }

/* The oracle's element poses for q = (j1, j2, j3), and the obstacles'. */
static void oracle_poses(const double q[3], m4 el[N_EL], m4 obs[N_OBS])
{
    m4 base = m_then(m_t(0.05, -0.02, 0.01), m_rz(0.2));
    m4 l1 = m_then(m_then(base, m_t(0, 0, 0.1)), m_rz(q[0]));
    m4 l2 = m_then(m_then(l1, m_t(0, 0, 0.4)), m_ry(q[1]));
    m4 l3 = m_then(l2, m_t(0.55 + q[2], 0, 0));
    el[0] = m_then(base, m_t(0, 0, 0.05));
    el[1] = m_then(l1, m_t(0, 0, 0.2));
    el[2] = m_then(l1, m_t(0.1, 0, 0.3));
    el[3] = l2;
    el[4] = m_then(l2, m_t(0.3, 0, 0));
    el[5] = l3;
    obs[0] = m_then(m_t(0.3, 0.15, 0.55), m_rz(0.3));
    obs[1] = m_t(-0.25, -0.25, 0.55);
}

/* Object o (elements 0..5, obstacles 6..7) as the oracle sees pairs: checked or not. */
static int oracle_checked(int a, int b)
{
    if (a > b) { int t = a; a = b; b = t; }
    if (a == b || a >= N_EL) return 0;
    int la = el_link[a];
    if (b < N_EL) {
        int lb = el_link[b];
        if (la == lb) return 0;                      /* same link */
        if (la == 1 && lb == 2) return 0;            /* SRDF */
        if (la == 0 && lb == 2) return 0;            /* ACM base_link-link2 */
        return 1;
    }
    if (la == 3 && b == N_EL + 1) return 0;          /* ACM link3-obs_cyl */
    return 1;
}

/* ---- the oracle's meshes and brute force ---- */

/* (one more slot: the cone of cone_obstacle_answers_as_the_oracle) */
static tdm_mesh *meshes[N_EL + N_OBS + 1];
static tdm_primitive prims[N_EL + N_OBS + 1]; /* each object's true shape; type 0 for the mesh element */

static int loader(void *ctx, const char *p, tdm_mesh **out, char *err, size_t errlen)
{
    (*(int *)ctx)++;
    return tdm_mesh_load_file(p, TDM_ORIGIN_RAW, out, err, errlen);
}

/* Object i's primitive: its true shape, and its mesh. */
static tdm_mesh *prim(int i, tdm_primitive p)
{
    prims[i] = p;
    tdm_mesh *m;
    char err[256];
    cr_assert_eq(tdm_primitive_mesh(&p, TDM_PRIMITIVE_TOLERANCE, &m, NULL, err, sizeof err), TDM_OK, "%s", err);
    return m;
}

static tdm_robot *robot;
static tdm_planning_scene *ps;

static void suite_init(void)
{
    seed = gen_seed(0x5ce7eull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tandem-robot-scene-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
    cr_assert_eq(mkdir(path("meshes"), 0700), 0);
    write_file("arm.urdf", urdf_text);
    write_file("arm.srdf", srdf_text);
    write_file("meshes/bar.obj", bar_obj);
    write_file("scene.yaml", scene_text);
    char err[512];
    cr_assert_eq(tdm_robot_load(path("arm.urdf"), path("arm.srdf"), &robot, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_planning_scene_read(path("scene.yaml"), &ps, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(robot->n_collisions, N_EL);
    cr_assert_eq(robot->n_active, 3);

    meshes[0] = prim(0, tdm_primitive_box(0.4, 0.4, 0.1));
    meshes[1] = prim(1, tdm_primitive_cylinder(0.3, 0.04));
    meshes[2] = prim(2, tdm_primitive_box(0.3, 0.04, 0.04));
    cr_assert_eq(tdm_mesh_load_file(path("meshes/bar.obj"), TDM_ORIGIN_RAW, &meshes[3], err, sizeof err), TDM_OK,
                 "%s", err);
    for (uint32_t i = 0; i < 3 * meshes[3]->n_verts; i++) meshes[3]->verts[i] *= 0.5f;
    meshes[4] = prim(4, tdm_primitive_box(0.1, 0.06, 0.06));
    meshes[5] = prim(5, tdm_primitive_cylinder(0.1, 0.03));
    meshes[6] = prim(6, tdm_primitive_box(0.25, 0.25, 0.8));
    meshes[7] = prim(7, tdm_primitive_cylinder(0.8, 0.12));
}

static void suite_fini(void)
{
    for (int i = 0; i < N_EL + N_OBS; i++) tdm_mesh_free(meshes[i]);
    tdm_planning_scene_free(ps);
    tdm_robot_free(robot);
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(robot_scene, .init = suite_init, .fini = suite_fini, .timeout = 240);

typedef struct wtri { tdm_dvec3 v[3]; double lo[3], hi[3]; } wtri;

/* Mesh i's triangles in world coordinates at pose x. */
static wtri *world_tris(int i, const m4 *x)
{
    const tdm_mesh *m = meshes[i];
    wtri *w = malloc(m->n_tris * sizeof *w);
    cr_assert_not_null(w);
    for (uint32_t t = 0; t < m->n_tris; t++) {
        for (int k = 0; k < 3; k++) {
            const float *p = &m->verts[3 * m->tris[3 * t + k]];
            double c[3];
            for (int d = 0; d < 3; d++) c[d] = x->r[d][0] * p[0] + x->r[d][1] * p[1] + x->r[d][2] * p[2] + x->t[d];
            w[t].v[k] = tdm_d3(c[0], c[1], c[2]);
            for (int d = 0; d < 3; d++) {
                if (k == 0 || c[d] < w[t].lo[d]) w[t].lo[d] = c[d];
                if (k == 0 || c[d] > w[t].hi[d]) w[t].hi[d] = c[d];
            }
        }
    }
    return w;
}

#define N_OBJ (N_EL + N_OBS)

/* Some vertex of object o (triangles w, world) inside the true shape of object p
 * at pose x. */
static int vertex_in(int o, const wtri *w, int p, const m4 *x)
{
    if (prims[p].type == 0) return 0;
    for (uint32_t t = 0; t < meshes[o]->n_tris; t++)
        for (int k = 0; k < 3; k++) {
            double d[3] = {w[t].v[k].x - x->t[0], w[t].v[k].y - x->t[1], w[t].v[k].z - x->t[2]}, l[3];
            for (int i = 0; i < 3; i++) l[i] = x->r[0][i] * d[0] + x->r[1][i] * d[1] + x->r[2][i] * d[2];
            if (tdm_primitive_contains(&prims[p], tdm_d3(l[0], l[1], l[2])) == 1) return 1;
        }
    return 0;
}

/* The triangle pairs of a (na, world) and b (nb) that intersect. */
static uint32_t tri_pairs(const wtri *a, uint32_t na, const wtri *b, uint32_t nb)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < na; i++)
        for (uint32_t j = 0; j < nb; j++) {
            const wtri *s = &a[i], *t = &b[j];
            if (s->hi[0] < t->lo[0] || t->hi[0] < s->lo[0] || s->hi[1] < t->lo[1] || t->hi[1] < s->lo[1] ||
                s->hi[2] < t->lo[2] || t->hi[2] < s->lo[2])
                continue;
            n += (uint32_t)tdm_tri_tri_intersect(s->v, t->v);
        }
    return n;
}

/* The oracle for configuration q: per object pair (a < b), the number of
 * intersecting triangle pairs, into count[a][b] (every pair, checked or not),
 * and whether no triangles meet but one lies inside the other's solid shape,
 * into inside[a][b]. */
static void oracle(const double q[3], uint32_t count[N_OBJ][N_OBJ], uint8_t inside[N_OBJ][N_OBJ])
{
    m4 el[N_EL], obs[N_OBS], x[N_OBJ];
    oracle_poses(q, el, obs);
    memcpy(x, el, sizeof el);
    memcpy(x + N_EL, obs, sizeof obs);
    wtri *w[N_OBJ];
    for (int i = 0; i < N_OBJ; i++) w[i] = world_tris(i, &x[i]);
    memset(count, 0, sizeof(uint32_t) * N_OBJ * N_OBJ);
    memset(inside, 0, N_OBJ * N_OBJ);
    for (int a = 0; a < N_OBJ; a++)
        for (int b = a + 1; b < N_OBJ; b++) {
            if (a >= N_EL) continue; /* two obstacles: never checked, not needed */
            count[a][b] = tri_pairs(w[a], meshes[a]->n_tris, w[b], meshes[b]->n_tris);
            inside[a][b] = !count[a][b] && (vertex_in(a, w[a], b, &x[b]) || vertex_in(b, w[b], a, &x[a]));
        }
    for (int i = 0; i < N_OBJ; i++) free(w[i]);
}

/* The oracle's answer for q over the checked pairs: the triangle pairs that meet, and
 * whether a pair with none is held by containment. */
static void oracle_totals(const double q[3], uint32_t *total, int *contained)
{
    uint32_t count[N_OBJ][N_OBJ];
    uint8_t inside[N_OBJ][N_OBJ];
    oracle(q, count, inside);
    *total = 0;
    *contained = 0;
    for (int a = 0; a < N_EL; a++)
        for (int b = a + 1; b < N_OBJ; b++)
            if (oracle_checked(a, b)) *total += count[a][b], *contained |= inside[a][b];
}

/* ---- tests ---- */

static tdm_robot_scene *make_scene(void)
{
    tdm_robot_scene *rs;
    char err[512];
    int loads = 0;
    cr_assert_eq(tdm_robot_scene_create(robot, ps, loader, &loads, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err),
                 TDM_OK, "%s", err);
    cr_assert_eq(loads, 1, "one mesh element, one load");
    return rs;
}

Test(robot_scene, objects_and_allowed_pairs)
{
    tdm_robot_scene *rs = make_scene();
    cr_assert_eq(rs->n_movable, N_EL);
    cr_assert_eq(rs->n_objects, N_OBJ);
    cr_assert_eq(rs->scene->n_movable, N_EL);
    for (uint32_t i = 0; i < N_OBJ; i++) {
        cr_assert_eq(rs->objs[i].movable, i < N_EL);
        cr_assert_eq(rs->bvhs[i] != NULL, 1);
    }
    cr_assert_eq(rs->objs[N_EL].index, 0);
    cr_assert_eq(rs->objs[N_EL + 1].index, 1);
    size_t checked = 0;
    for (int a = 0; a < N_OBJ; a++)
        for (int b = 0; b < N_OBJ; b++) {
            cr_assert_eq(!tdm_robot_scene_allowed(rs, (uint32_t)a, (uint32_t)b), oracle_checked(a, b), "pair %d %d", a,
                         b);
            checked += a < b && oracle_checked(a, b);
        }
    cr_assert_eq(rs->scene->n_checks, checked);
    /* The fixed objects' poses. */
    m4 el[N_EL], obs[N_OBS];
    double q[3] = {0, 0, 0};
    oracle_poses(q, el, obs);
    for (int k = 0; k < N_OBS; k++) {
        int64_t i = tdm_scene_find(rs->scene, N_EL + (uint32_t)k);
        cr_assert(i >= 0);
        const tdm_xform *p = &rs->scene->objects[i].pose;
        for (int r = 0; r < 3; r++) {
            cr_assert_float_eq(tdm_d3_get(p->t, r), obs[k].t[r], 1e-12);
            for (int c = 0; c < 3; c++) cr_assert_float_eq(p->r.m[r][c], obs[k].r[r][c], 1e-12);
        }
    }
    tdm_robot_scene_destroy(rs);
}

Test(robot_scene, poses_match_the_oracle)
{
    tdm_robot_scene *rs = make_scene();
    gen_rng g = {seed};
    tdm_xform links[4], poses[N_EL];
    for (int it = 0; it < 100; it++) {
        double q[3];
        arm_fixture_random_config(&g, q);
        m4 el[N_EL], obs[N_OBS];
        oracle_poses(q, el, obs);
        cr_assert_eq(tdm_robot_scene_poses(rs, q, 3, links, poses), TDM_OK);
        for (int e = 0; e < N_EL; e++)
            for (int r = 0; r < 3; r++) {
                cr_assert_float_eq(tdm_d3_get(poses[e].t, r), el[e].t[r], 1e-12, "element %d", e);
                for (int c = 0; c < 3; c++) cr_assert_float_eq(poses[e].r.m[r][c], el[e].r[r][c], 1e-12);
            }
    }
    double bad[3] = {0, NAN, 0};
    cr_assert_eq(tdm_robot_scene_poses(rs, bad, 3, links, poses), TDM_ENONFINITE);
    cr_assert_eq(tdm_robot_scene_poses(rs, bad, 2, links, poses), TDM_EINVAL);
    tdm_robot_scene_destroy(rs);
}

#define N_CFG 1000
#define MAXC 100000

/* A scheduler of two threads without calibration; NULL when this build or machine has no
 * such engine (why says why). */
/* An engine of `lanes` lanes (0: the default) and host_lanes host lanes whose GPU lanes keep
 * program_cache bytes of robot scene programs; NULL without a GPU for a GPU kind. */
static tdm_sched *sched_with(tdm_backend_kind kind, int lanes, int host_lanes, uint64_t program_cache, char *why,
                             size_t whylen)
{
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = kind;
    c.threads = 2;
    c.calibrate = 0;
    if (lanes) c.lanes = lanes;
    /* one lane means one in all, also on a host with several GPUs (engines per device by default):
       the tests of a lane's program cache and slots count on it */
    if (lanes == 1) c.gpu_device = 0;
    c.host_lanes = host_lanes;
    c.gpu_program_cache = program_cache;
    /* criterion runs the tests at once, each its own engine: not 80% of the device each */
    c.gpu_memory = 2ull << 30;
    tdm_sched *e = NULL;
    int rc = tdm_sched_create(&c, &e, why, whylen);
    if (rc == TDM_ENODEV) return NULL;
    cr_assert_eq(rc, TDM_OK, "%s", why);
    return e;
}

static tdm_sched *sched_of(tdm_backend_kind kind, char *why, size_t whylen)
{
    return sched_with(kind, 0, 0, tdm_sched_config_default().gpu_program_cache, why, whylen);
}

Test(robot_scene, engine_matches_brute_force)
{
    tdm_robot_scene *rs = make_scene();
    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    gen_rng g = {seed ^ 0x9e3779b97f4a7c15ull};
    tdm_xform links[4], poses[N_EL];
    tdm_sched_contact *pairs = malloc(MAXC * sizeof *pairs);
    cr_assert_not_null(pairs);
    /* Configurations where a pair of each kind touches: checked world, checked self,
     * allowed same link, SRDF, ACM link-link, ACM link-object. */
    size_t colliding = 0, n_contained = 0, hits[6] = {0};
    for (int it = 0; it < N_CFG; it++) {
        double q[3];
        arm_fixture_random_config(&g, q);
        uint32_t count[N_OBJ][N_OBJ];
        uint8_t inside[N_OBJ][N_OBJ];
        oracle(q, count, inside);
        uint32_t total = 0, per[N_OBJ][N_OBJ] = {{0}};
        int kind[6] = {0}, contained = 0;
        for (int a = 0; a < N_EL; a++)
            for (int b = a + 1; b < N_OBJ; b++) {
                if (oracle_checked(a, b)) total += count[a][b], contained |= inside[a][b];
                if (!count[a][b]) continue;
                int la = el_link[a], lb = b < N_EL ? el_link[b] : -1;
                kind[oracle_checked(a, b) ? (b >= N_EL ? 0 : 1)
                     : lb < 0         ? 5
                     : la == lb       ? 2
                     : la == 1        ? 3
                                      : 4] = 1;
            }
        for (int k = 0; k < 6; k++) hits[k] += (size_t)kind[k];
        colliding += total > 0 || contained;
        n_contained += contained && total == 0;
        cr_assert_eq(tdm_robot_scene_poses(rs, q, 3, links, poses), TDM_OK);
        tdm_sched_query qs[2] = {{rs->scene, poses, TDM_MODE_BOOL, 1, NULL, NULL},
                                 {rs->scene, poses, TDM_MODE_CONTACTS, MAXC, pairs, NULL}};
        tdm_sched_result res[2];
        cr_assert_eq(tdm_sched_run(e, &qs[0], 1, &res[0]), TDM_OK);
        cr_assert_eq(tdm_sched_run(e, &qs[1], 1, &res[1]), TDM_OK);
        cr_assert_eq(res[0].colliding, total > 0 || contained,
                     "seed=%llu config %d (%.17g %.17g %.17g): bool %u, oracle %u pairs, contained %d",
                     (unsigned long long)seed, it, q[0], q[1], q[2], res[0].colliding, total, contained);
        cr_assert_eq(res[1].colliding, res[0].colliding);
        if (res[0].colliding)
            cr_assert(oracle_checked((int)res[0].object_a, (int)res[0].object_b), "bool reported an allowed pair");
        cr_assert_eq(res[1].contacts, total, "seed=%llu config %d: contacts %u, oracle %u", (unsigned long long)seed,
                     it, res[1].contacts, total);
        cr_assert_eq(res[1].n_pairs, total);
        for (uint32_t k = 0; k < res[1].n_pairs; k++) {
            uint32_t a = pairs[k].object_a, b = pairs[k].object_b;
            cr_assert(a < b && b < N_OBJ && oracle_checked((int)a, (int)b), "reported pair %u %u", a, b);
            per[a][b]++;
        }
        for (int a = 0; a < N_OBJ; a++)
            for (int b = a + 1; b < N_OBJ; b++)
                if (oracle_checked(a, b)) cr_assert_eq(per[a][b], count[a][b], "config %d pair %d %d", it, a, b);
    }
    cr_log_info("%d configurations, %zu colliding (%zu by containment alone); touching: world %zu, self %zu, same link %zu, SRDF %zu, "
                "ACM link-link %zu, ACM link-object %zu", N_CFG, colliding, n_contained, hits[0], hits[1], hits[2], hits[3],
                hits[4], hits[5]);
    /* The test means something only if each kind happens. */
    cr_assert(colliding > 0 && colliding < N_CFG);
    for (int k = 0; k < 6; k++) cr_assert(hits[k] > 0, "no configuration touches a pair of kind %d", k);
    free(pairs);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
}

/* A cone in the world (MoveIt's SolidPrimitive 4), tilted: the CPU engine answers as the
 * oracle, with the cone's true shape for containment and its tessellation for triangles. */
Test(robot_scene, cone_obstacle_answers_as_the_oracle)
{
    /* the fixture's world and a cone (height 0.5, radius 0.2) turned by pi/4 about x */
    static const char cone_text[] =
        "    - id: obs_cone\n"
        "      primitives: [{type: cone, dimensions: [0.5, 0.2]}]\n"
        "      primitive_poses: [{position: [0.0, 0.38, 0.5], orientation: [0.38268343236508978, 0, 0, "
        "0.92387953251128674]}]\n";
    size_t n = strlen(scene_text) + sizeof cone_text;
    char *text = malloc(n), err[512];
    cr_assert_not_null(text);
    snprintf(text, n, "%s%s", scene_text, cone_text);
    tdm_planning_scene *cps;
    cr_assert_eq(tdm_planning_scene_parse(text, strlen(text), "cone", &cps, err, sizeof err), TDM_OK, "%s", err);
    free(text);
    tdm_robot_scene *rs;
    int loads = 0;
    cr_assert_eq(tdm_robot_scene_create(robot, cps, loader, &loads, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err),
                 TDM_OK, "%s", err);
    const int C = N_OBJ; /* the cone's object id */
    cr_assert_eq(rs->n_objects, N_OBJ + 1);
    meshes[C] = prim(C, tdm_primitive_cone(0.5, 0.2));
    const double c = cos(0.78539816339744831), sn = sin(0.78539816339744831);
    m4 cone_pose = {{{1, 0, 0}, {0, c, -sn}, {0, sn, c}}, {0.0, 0.38, 0.5}};
    wtri *wc = world_tris(C, &cone_pose);

    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    gen_rng g = {seed ^ 0xc0e5ull};
    tdm_xform links[4], poses[N_EL];
    size_t colliding = 0, with_cone = 0, cone_inside = 0;
    for (int it = 0; it < N_CFG; it++) {
        double q[3];
        arm_fixture_random_config(&g, q);
        uint32_t total, cone_tris = 0;
        int contained, cone_in = 0;
        oracle_totals(q, &total, &contained);
        /* every element against the cone: no ACM entry names it */
        m4 el[N_EL], obs[N_OBS];
        oracle_poses(q, el, obs);
        for (int a = 0; a < N_EL; a++) {
            wtri *w = world_tris(a, &el[a]);
            uint32_t k = tri_pairs(w, meshes[a]->n_tris, wc, meshes[C]->n_tris);
            cone_tris += k;
            if (!k && (vertex_in(a, w, C, &cone_pose) || vertex_in(C, wc, a, &el[a]))) cone_in = 1;
            free(w);
        }
        total += cone_tris;
        contained |= cone_in;
        with_cone += cone_tris > 0 || cone_in;
        cone_inside += cone_in && !cone_tris;
        cr_assert_eq(tdm_robot_scene_poses(rs, q, 3, links, poses), TDM_OK);
        tdm_sched_query qs[2] = {{rs->scene, poses, TDM_MODE_BOOL, 1, NULL, NULL},
                                 {rs->scene, poses, TDM_MODE_CONTACTS, MAXC, NULL, NULL}};
        tdm_sched_result res[2];
        cr_assert_eq(tdm_sched_run(e, qs, 2, res), TDM_OK);
        cr_assert_eq(res[0].colliding, total > 0 || contained,
                     "seed=%llu config %d (%.17g %.17g %.17g): bool %u, oracle %u pairs (%u with the cone), contained %d",
                     (unsigned long long)seed, it, q[0], q[1], q[2], res[0].colliding, total, cone_tris, contained);
        cr_assert_eq(res[1].contacts, total, "seed=%llu config %d: contacts %u, oracle %u", (unsigned long long)seed, it,
                     res[1].contacts, total);
        colliding += res[0].colliding;
    }
    cr_log_info("cone: %d configurations, %zu colliding, %zu touching the cone (%zu by containment alone)", N_CFG,
                colliding, with_cone, cone_inside);
    cr_assert(with_cone > 20 && colliding < N_CFG, "the cone must be met, and not always");
    free(wc);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
    tdm_planning_scene_free(cps);
    tdm_mesh_free(meshes[C]);
    meshes[C] = NULL;
    prims[C] = (tdm_primitive){0};
}

/* A budget of triangles for the attached and world shapes (tdm_robot_scene_create_limited):
 * the fixture's world within it builds as without one; one triangle less is refused
 * naming the count, and so is a world of large spheres, long before all are built. */
/* A URDF naming one mesh (path and scale) or one primitive in several elements: the
 * elements share one tree (tdm_robot_elems.owner), the scene answers as the same robot
 * with every element its own copy of the mesh, and the triangle budget counts each tree
 * once (tdm_robot_elems_create_limited). */
static char *repeat_urdf(const char *m1, const char *m2, const char *m3)
{
    static const char fmt[] =
        "<robot name='rep'>\n"
        "<link name='base'><collision><geometry><box size='0.2 0.2 0.1'/></geometry></collision></link>\n"
        "<joint name='j1' type='revolute'><parent link='base'/><child link='l1'/><origin xyz='0 0 0.1'/>"
        "<axis xyz='0 0 1'/><limit lower='-3.14' upper='3.14' effort='1' velocity='1'/></joint>\n"
        "<link name='l1'>\n"
        "<collision><origin xyz='0 0 0.2'/><geometry><mesh filename='%s' scale='0.5 0.5 0.5'/></geometry></collision>\n"
        "<collision><origin xyz='0 0.1 0.3' rpy='0 0 1.2'/><geometry><mesh filename='%s' scale='0.5 0.5 0.5'/>"
        "</geometry></collision>\n"
        "<collision><origin xyz='0 -0.25 0.1'/><geometry><box size='0.2 0.2 0.1'/></geometry></collision>\n"
        "</link>\n"
        "<joint name='j2' type='revolute'><parent link='l1'/><child link='l2'/><origin xyz='0 0 0.75'/>"
        "<axis xyz='0 1 0'/><limit lower='-2.6' upper='2.6' effort='1' velocity='1'/></joint>\n"
        "<link name='l2'>\n"
        "<collision><geometry><mesh filename='%s' scale='0.5 0.5 0.5'/></geometry></collision>\n"
        "<collision><origin xyz='0 0 0.1'/><geometry><mesh filename='%s' scale='0.5 0.5 0.25'/></geometry></collision>\n"
        "</link>\n</robot>\n";
    size_t n = sizeof fmt + 4 * 64;
    char *t = malloc(n);
    cr_assert_not_null(t);
    snprintf(t, n, fmt, m1, m2, m3, m1);
    return t;
}

/* The two robots of the tests below, their element trees and their scenes in one world. */
typedef struct rep_world {
    tdm_planning_scene *wps;
    tdm_robot *shared, *apart; /* every mesh element of one file, or each its own copy */
    tdm_robot_elems *el, *ea;
    tdm_robot_scene *rs, *ra;
    uint64_t tris_shared, tris_apart; /* their distinct trees' triangles */
} rep_world;

static void rep_make(rep_world *w)
{
    write_file("meshes/bar2.obj", bar_obj);
    write_file("meshes/bar3.obj", bar_obj);
    char *u = repeat_urdf("meshes/bar.obj", "meshes/bar.obj", "meshes/bar.obj");
    write_file("rep_shared.urdf", u);
    free(u);
    u = repeat_urdf("meshes/bar.obj", "meshes/bar2.obj", "meshes/bar3.obj");
    write_file("rep_apart.urdf", u);
    free(u);
    static const char world[] = "world:\n  collision_objects:\n"
                                "    - id: wall\n      primitives: [{type: box, dimensions: [0.1, 0.3, 0.3]}]\n"
                                "      primitive_poses: [{position: [0.35, 0, 0.35], orientation: [0, 0, 0, 1]}]\n"
                                "    - id: post\n      primitives: [{type: cylinder, dimensions: [1.2, 0.06]}]\n"
                                "      primitive_poses: [{position: [-0.3, -0.2, 0.6], orientation: [0, 0, 0, 1]}]\n";
    char err[512];
    memset(w, 0, sizeof *w);
    cr_assert_eq(tdm_planning_scene_parse(world, strlen(world), "rep", &w->wps, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_load(path("rep_shared.urdf"), NULL, &w->shared, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_load(path("rep_apart.urdf"), NULL, &w->apart, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(w->shared->n_collisions, 6);
    int loads = 0;
    cr_assert_eq(tdm_robot_elems_create(w->shared, loader, &loads, TDM_PRIMITIVE_TOLERANCE, &w->el, err, sizeof err),
                 TDM_OK, "%s", err);
    cr_assert_eq(loads, 2, "two distinct meshes loaded, not four");
    loads = 0;
    cr_assert_eq(tdm_robot_elems_create(w->apart, loader, &loads, TDM_PRIMITIVE_TOLERANCE, &w->ea, err, sizeof err),
                 TDM_OK, "%s", err);
    cr_assert_eq(loads, 4);
    for (uint32_t e = 0; e < 6; e++) {
        if (w->el->owner[e] == e) w->tris_shared += w->el->bvhs[e]->n_tris;
        if (w->ea->owner[e] == e) w->tris_apart += w->ea->bvhs[e]->n_tris;
    }
    cr_assert_eq(tdm_robot_scene_create_shared(w->el, w->wps, &w->rs, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_scene_create_shared(w->ea, w->wps, &w->ra, err, sizeof err), TDM_OK, "%s", err);
}

static void rep_free(rep_world *w)
{
    tdm_robot_scene_destroy(w->rs);
    tdm_robot_scene_destroy(w->ra);
    tdm_robot_elems_destroy(w->el);
    tdm_robot_elems_destroy(w->ea);
    tdm_robot_free(w->shared);
    tdm_robot_free(w->apart);
    tdm_planning_scene_free(w->wps);
}

enum { N_REP = 2000 };

/* N_REP random configurations into q (2 each), and the CPU engine's contacts answers for
 * the shared robot into cpu, each checked equal to the other robot's; returns how many
 * collide. */
static size_t rep_cpu(const rep_world *w, double *q, tdm_sched_result *cpu)
{
    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    gen_rng g = {seed ^ 0x5ea7ull};
    size_t colliding = 0;
    for (int it = 0; it < N_REP; it++) {
        double *qi = q + 2 * it;
        qi[0] = gen_range(&g, -3.14, 3.14), qi[1] = gen_range(&g, -2.6, 2.6);
        tdm_xform links[3], ps_[6], pa[6];
        cr_assert_eq(tdm_robot_scene_poses(w->rs, qi, 2, links, ps_), TDM_OK);
        cr_assert_eq(tdm_robot_scene_poses(w->ra, qi, 2, links, pa), TDM_OK);
        tdm_sched_query qs[2] = {{w->rs->scene, ps_, TDM_MODE_CONTACTS, MAXC, NULL, NULL},
                                 {w->ra->scene, pa, TDM_MODE_CONTACTS, MAXC, NULL, NULL}};
        tdm_sched_result res[2];
        cr_assert_eq(tdm_sched_run(e, qs, 2, res), TDM_OK);
        cr_assert_eq(res[0].colliding, res[1].colliding, "config %d", it);
        cr_assert_eq(res[0].contacts, res[1].contacts, "config %d", it);
        cpu[it] = res[0];
        colliding += res[0].colliding;
    }
    tdm_sched_destroy(e);
    return colliding;
}

Test(robot_scene, repeated_element_shapes_share_a_tree)
{
    rep_world w;
    rep_make(&w);
    /* elements 1, 2 and 4 are one mesh at one scale, 5 the mesh at another; 0 and 3 one box */
    const uint32_t want_owner[6] = {0, 1, 1, 0, 1, 5};
    for (uint32_t e = 0; e < 6; e++) {
        cr_assert_eq(w.el->owner[e], want_owner[e], "element %u", e);
        cr_assert(w.el->bvhs[e] == w.el->bvhs[want_owner[e]], "element %u shares its tree", e);
        cr_assert_eq(w.ea->owner[e], e == 3 ? 0 : e, "apart: element %u", e);
    }
    cr_assert_gt(w.tris_apart, w.tris_shared);
    /* the same answers, configuration by configuration */
    double *q = malloc(N_REP * 2 * sizeof *q);
    tdm_sched_result *cpu = malloc(N_REP * sizeof *cpu);
    cr_assert(q && cpu);
    size_t colliding = rep_cpu(&w, q, cpu);
    cr_log_info("repeated shapes: %zu of %d colliding, %llu triangles shared against %llu apart", colliding, N_REP,
                (unsigned long long)w.tris_shared, (unsigned long long)w.tris_apart);
    cr_assert(colliding > 100 && colliding < N_REP - 100);
    free(q);
    free(cpu);
    uint64_t tris_shared = w.tris_shared;
    const tdm_robot *shared = w.shared;
    char err[512];
    int loads = 0;
    /* the budget counts each tree once, and names the element that crosses it */
    tdm_robot_elems *lim = (tdm_robot_elems *)1;
    cr_assert_eq(tdm_robot_elems_create_limited(shared, loader, &loads, TDM_PRIMITIVE_TOLERANCE, tris_shared, NULL, &lim, err,
                                                sizeof err),
                 TDM_OK, "%s", err);
    tdm_robot_elems_destroy(lim);
    lim = (tdm_robot_elems *)1;
    cr_assert_eq(tdm_robot_elems_create_limited(shared, loader, &loads, TDM_PRIMITIVE_TOLERANCE, tris_shared - 1, NULL, &lim,
                                                err, sizeof err),
                 TDM_ERANGE);
    cr_assert_null(lim);
    char want[96];
    snprintf(want, sizeof want, "link 'l2' collision 1: the robot's collision elements have more than %llu triangles",
             (unsigned long long)(tris_shared - 1));
    cr_assert(strstr(err, want) != NULL, "'%s' does not say '%s'", err, want);

    /* tdm_robot_scene_create keeps the shared trees with the scene, and frees each once */
    tdm_robot_scene *rs;
    cr_assert_eq(tdm_robot_scene_create(shared, w.wps, loader, &loads, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err),
                 TDM_OK, "%s", err);
    cr_assert(rs->bvhs[1] == rs->bvhs[4] && rs->bvhs[0] == rs->bvhs[3]);
    tdm_robot_scene_destroy(rs);
    rep_free(&w);
}

/* tdm_robot_elem_owners (sorted, O(E log E)) against its definition, tdm_robot_elem_first_same
 * (each element against every earlier one), on random elements drawn from few shapes: every
 * type, sizes and scales with -0 and 0 among them, three mesh paths. */
Test(robot_scene, element_owners_equal_first_same)
{
    gen_rng g = {seed ^ 0x0e1e};
    static const char *const paths[3] = {"a.stl", "b.stl", "a.stl "};
    static const double vals[4] = {0.5, 1.0, 0.0, -0.0};
    for (int round = 0; round < 20; round++) {
        uint32_t n = 1 + (uint32_t)gen_range(&g, 0, 3000);
        tdm_robot r = {0};
        r.n_collisions = n;
        r.collisions = calloc(n, sizeof *r.collisions);
        uint32_t *owner = malloc(n * sizeof *owner);
        cr_assert(r.collisions && owner);
        for (uint32_t e = 0; e < n; e++) {
            tdm_robot_collision *c = &r.collisions[e];
            c->shape = (tdm_shape_type)(int)gen_range(&g, 0, 4.999);
            for (int k = 0; k < 3; k++) c->size[k] = vals[(int)gen_range(&g, 0, 3.999)];
            c->scale = (tdm_dvec3){vals[(int)gen_range(&g, 0, 3.999)], vals[(int)gen_range(&g, 0, 1.999)], 1};
            if (c->shape == TDM_SHAPE_MESH) c->mesh_path = (char *)paths[(int)gen_range(&g, 0, 2.999)];
        }
        cr_assert_eq(tdm_robot_elem_owners(&r, owner), TDM_OK);
        size_t shared = 0;
        for (uint32_t e = 0; e < n; e++) {
            cr_assert_eq(owner[e], tdm_robot_elem_first_same(&r, e), "round %d, element %u of %u", round, e, n);
            shared += owner[e] != e;
        }
        cr_assert(n < 1000 || shared > n / 2, "a test that means something: %zu of %u share", shared, n);
        free(owner);
        free(r.collisions);
    }
}

/* The device's kinematics and checks over the shared trees (each added once per object
 * that uses it): the GPU engine's answers equal the CPU engine's. */
Test(robot_scene, repeated_element_shapes_on_gpu_match_cpu_engine)
{
    char why[320];
    tdm_sched *eg = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    if (!eg) cr_skip_test("no GPU engine: %s", why);
    rep_world w;
    rep_make(&w);
    double *q = malloc(N_REP * 2 * sizeof *q);
    tdm_sched_result *cpu = malloc(N_REP * sizeof *cpu), *gpu = malloc(N_REP * sizeof *gpu);
    cr_assert(q && cpu && gpu);
    rep_cpu(&w, q, cpu);
    for (uint32_t i = 0; i < w.rs->n_objects; i++) cr_assert_eq(tdm_sched_mesh_add(eg, w.rs->bvhs[i]), TDM_OK);
    tdm_sched_stats before, after;
    tdm_sched_get_stats(eg, &before);
    tdm_sched_query proto = {w.rs->scene, NULL, TDM_MODE_CONTACTS, MAXC, NULL, NULL};
    cr_assert_eq(tdm_sched_run_configs(eg, &proto, &w.rs->kin, q, N_REP, gpu), TDM_OK);
    tdm_sched_get_stats(eg, &after);
    cr_assert_eq(after.gpu_queries - before.gpu_queries, N_REP, "every configuration on the GPU engine");
    for (int it = 0; it < N_REP; it++) {
        cr_assert_eq(gpu[it].colliding, cpu[it].colliding, "config %d", it);
        cr_assert_eq(gpu[it].contacts, cpu[it].contacts, "config %d", it);
    }
    for (uint32_t i = 0; i < w.rs->n_objects; i++) tdm_sched_mesh_remove(eg, w.rs->bvhs[i]);
    tdm_sched_destroy(eg);
    free(q);
    free(cpu);
    free(gpu);
    rep_free(&w);
}

/* The fixture robot's element trees; *loads (may be NULL) counts the mesh loads. */
static tdm_robot_elems *fixture_elems(int *loads)
{
    char err[512];
    int n = 0;
    tdm_robot_elems *el;
    cr_assert_eq(tdm_robot_elems_create(robot, loader, &n, TDM_PRIMITIVE_TOLERANCE, &el, err, sizeof err), TDM_OK,
                 "%s", err);
    if (loads) *loads = n;
    return el;
}

Test(robot_scene, shape_triangles_are_limited)
{
    char err[512];
    tdm_robot_elems *el = fixture_elems(NULL);
    tdm_robot_scene *rs;
    cr_assert_eq(tdm_robot_scene_create_limited(el, ps, 0, NULL, &rs, err, sizeof err), TDM_OK, "%s", err);
    uint64_t tris = 0;
    for (uint32_t i = rs->n_movable; i < rs->n_objects; i++) tris += rs->bvhs[i]->n_tris;
    cr_assert_gt(tris, 100);
    uint32_t checks = rs->scene->n_checks;
    tdm_robot_scene_destroy(rs);
    cr_assert_eq(tdm_robot_scene_create_limited(el, ps, tris, NULL, &rs, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(rs->scene->n_checks, checks);
    tdm_robot_scene_destroy(rs);
    rs = (tdm_robot_scene *)1;
    cr_assert_eq(tdm_robot_scene_create_limited(el, ps, tris - 1, NULL, &rs, err, sizeof err), TDM_ERANGE);
    cr_assert_null(rs);
    char want[128];
    snprintf(want, sizeof want, "more than %llu triangles: %llu with world object 'obs_cyl' shape 0",
             (unsigned long long)(tris - 1), (unsigned long long)tris);
    cr_assert(strstr(err, want) != NULL, "'%s' does not say '%s'", err, want);

    /* 200 spheres of 2 m, each ~100 000 triangles at 0.1 mm: refused at the second */
    size_t cap = 200 * 200 + 64, len = 0;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    len += (size_t)snprintf(text + len, cap - len, "world:\n  collision_objects:\n");
    for (int i = 0; i < 200; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "    - {id: s%d, primitives: [{type: sphere, dimensions: [%.4f]}], primitive_poses: "
                                "[{position: [%d, 0, 0], orientation: [0, 0, 0, 1]}]}\n",
                                i, 2 + 0.001 * i, 10 + i);
    cr_assert(len < cap);
    tdm_planning_scene *big;
    cr_assert_eq(tdm_planning_scene_parse(text, len, "spheres", &big, err, sizeof err), TDM_OK, "%s", err);
    free(text);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(tdm_robot_scene_create_limited(el, big, 150000, NULL, &rs, err, sizeof err), TDM_ERANGE);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_assert(strstr(err, "more than 150000 triangles") != NULL && strstr(err, "world object 's1' shape 0") != NULL,
              "%s", err);
    cr_log_info("200 large spheres refused over 150 000 triangles in %.2f s: %s",
                (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), err);
    cr_assert_eq(tdm_shape_cache_count(el->shapes), 0, "nothing of the refused scene is kept");
    tdm_planning_scene_free(big);
    tdm_robot_elems_destroy(el);
}

/* Scenes made from one set of element trees (tdm_robot_elems, what tandemd keeps per
 * robot): the elements are loaded and built once, every scene borrows the same trees
 * and builds only its world's, and answers as the oracle says. */
Test(robot_scene, shared_elements_answer_as_the_oracle)
{
    char err[512];
    int loads = 0;
    tdm_robot_elems *el = fixture_elems(&loads);
    cr_assert_eq(el->n, N_EL);
    tdm_robot_scene *a, *b;
    cr_assert_eq(tdm_robot_scene_create_shared(el, ps, &a, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_scene_create_shared(el, ps, &b, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(loads, 1, "one mesh element, loaded once for both scenes");
    cr_assert_eq(a->n_objects, N_OBJ);
    cr_assert_eq(b->n_objects, N_OBJ);
    for (uint32_t i = 0; i < N_OBJ; i++) {
        if (i < N_EL) {
            cr_assert(a->bvhs[i] == el->bvhs[i] && b->bvhs[i] == el->bvhs[i], "element %u's tree is shared", i);
        } else if (a->objs[i].cached) { /* a primitive: one tree for both, from the shape cache */
            cr_assert(b->objs[i].cached && a->bvhs[i] && a->bvhs[i] == b->bvhs[i], "world primitive %u is shared", i);
        } else { /* a mesh */
            cr_assert(a->bvhs[i] && b->bvhs[i] && a->bvhs[i] != b->bvhs[i], "world mesh %u is each scene's own", i);
            cr_assert_eq(a->bvhs[i]->n_tris, b->bvhs[i]->n_tris);
        }
    }
    size_t shapes = tdm_shape_cache_count(el->shapes);
    cr_assert(shapes > 0, "the world's primitives are in the shape cache");
    tdm_robot_scene *own = make_scene();
    cr_assert_eq(a->scene->n_checks, own->scene->n_checks);
    tdm_robot_scene_destroy(own);
    tdm_robot_scene_destroy(b); /* the shared trees stay: a still uses them */
    cr_assert_eq(tdm_shape_cache_count(el->shapes), shapes);

    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    gen_rng g = {seed ^ 0x5bd1e995ull};
    tdm_xform links[4], poses[N_EL];
    size_t colliding = 0;
    for (int it = 0; it < N_CFG; it++) {
        double q[3];
        arm_fixture_random_config(&g, q);
        uint32_t total;
        int contained;
        oracle_totals(q, &total, &contained);
        cr_assert_eq(tdm_robot_scene_poses(a, q, 3, links, poses), TDM_OK);
        tdm_sched_query qs[2] = {{a->scene, poses, TDM_MODE_BOOL, 1, NULL, NULL},
                                 {a->scene, poses, TDM_MODE_CONTACTS, MAXC, NULL, NULL}};
        tdm_sched_result res[2];
        cr_assert_eq(tdm_sched_run(e, qs, 2, res), TDM_OK);
        cr_assert_eq(res[0].colliding, total > 0 || contained, "seed=%llu config %d: bool %u, oracle %u pairs, contained %d",
                     (unsigned long long)seed, it, res[0].colliding, total, contained);
        cr_assert_eq(res[1].contacts, total, "seed=%llu config %d: contacts %u, oracle %u", (unsigned long long)seed, it,
                     res[1].contacts, total);
        colliding += res[0].colliding;
    }
    cr_assert(colliding > 0 && colliding < N_CFG);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(a);
    cr_assert_eq(tdm_shape_cache_count(el->shapes), 0, "the last scene gone, its shapes are freed");
    tdm_robot_elems_destroy(el);
}

/* Repeated primitives (two boxes of one size in two objects, two cylinders of one
 * size in one object) share one tree from the elements' shape cache, and the scene
 * answers exactly as the same scene with a tree of its own per shape. */
Test(robot_scene, repeated_primitives_share_one_tree)
{
    static const char yaml[] =
        "world:\n"
        "  collision_objects:\n"
        "    - id: box_a\n"
        "      primitives: [{type: box, dimensions: [0.25, 0.25, 0.8]}]\n"
        "      primitive_poses: [{position: [0.3, 0.15, 0.55], orientation: [0, 0, 0, 1]}]\n"
        "    - id: box_b\n"
        "      primitives: [{type: box, dimensions: [0.25, 0.25, 0.8]}]\n"
        "      primitive_poses: [{position: [-0.35, 0.25, 0.6], orientation: [0, 0, 0, 1]}]\n"
        "    - id: posts\n"
        "      primitives: [{type: cylinder, dimensions: [0.8, 0.05]}, {type: cylinder, dimensions: [0.8, 0.05]},\n"
        "                   {type: sphere, dimensions: [0.1]}]\n"
        "      primitive_poses: [{position: [0.0, -0.3, 0.6], orientation: [0, 0, 0, 1]},\n"
        "                        {position: [0.2, -0.35, 0.6], orientation: [0, 0, 0, 1]},\n"
        "                        {position: [-0.2, 0.3, 0.6], orientation: [0, 0, 0, 1]}]\n";
    char err[512];
    tdm_planning_scene *world = NULL;
    cr_assert_eq(tdm_planning_scene_parse(yaml, sizeof yaml - 1, "world", &world, err, sizeof err), TDM_OK, "%s", err);
    int loads = 0;
    tdm_robot_elems *el;
    cr_assert_eq(tdm_robot_elems_create(robot, loader, &loads, TDM_PRIMITIVE_TOLERANCE, &el, err, sizeof err), TDM_OK,
                 "%s", err);
    tdm_robot_scene *shared, *own;
    cr_assert_eq(tdm_robot_scene_create_shared(el, world, &shared, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_robot_scene_create(robot, world, loader, &loads, TDM_PRIMITIVE_TOLERANCE, &own, err, sizeof err),
                 TDM_OK, "%s", err);
    cr_assert_eq(shared->n_objects, N_EL + 5);
    tdm_bvh **t = shared->bvhs + N_EL; /* box_a, box_b, post, post, sphere */
    cr_assert(t[0] == t[1], "the two boxes of one size share a tree");
    cr_assert(t[2] == t[3], "the two cylinders of one size share a tree");
    cr_assert(t[0] != t[2] && t[2] != t[4] && t[0] != t[4]);
    cr_assert_eq(tdm_shape_cache_count(el->shapes), 3);
    for (int i = 0; i < 5; i++) cr_assert(own->bvhs[N_EL + i] != t[i], "the scene of its own trees owns them");

    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    gen_rng g = {seed ^ 0x5a3e7ull};
    tdm_xform links[4], pa[N_EL], pb[N_EL];
    size_t colliding = 0;
    for (int it = 0; it < N_CFG; it++) {
        double q[3];
        arm_fixture_random_config(&g, q);
        cr_assert_eq(tdm_robot_scene_poses(shared, q, 3, links, pa), TDM_OK);
        cr_assert_eq(tdm_robot_scene_poses(own, q, 3, links, pb), TDM_OK);
        tdm_sched_query qs[4] = {{shared->scene, pa, TDM_MODE_BOOL, 1, NULL, NULL},
                                 {own->scene, pb, TDM_MODE_BOOL, 1, NULL, NULL},
                                 {shared->scene, pa, TDM_MODE_CONTACTS, MAXC, NULL, NULL},
                                 {own->scene, pb, TDM_MODE_CONTACTS, MAXC, NULL, NULL}};
        tdm_sched_result r[4];
        cr_assert_eq(tdm_sched_run(e, qs, 4, r), TDM_OK);
        for (int m = 0; m < 4; m += 2)
            cr_assert(r[m].colliding == r[m + 1].colliding && r[m].contacts == r[m + 1].contacts &&
                          r[m].object_a == r[m + 1].object_a && r[m].object_b == r[m + 1].object_b,
                      "seed=%llu config %d, mode %d: shared trees (%u, %u, %u-%u), own (%u, %u, %u-%u)",
                      (unsigned long long)seed, it, m / 2, r[m].colliding, r[m].contacts, r[m].object_a,
                      r[m].object_b, r[m + 1].colliding, r[m + 1].contacts, r[m + 1].object_a, r[m + 1].object_b);
        colliding += r[0].colliding;
    }
    cr_assert(colliding > 0 && colliding < N_CFG, "%zu of %d colliding", colliding, N_CFG);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(own);
    tdm_bvh *box = t[0];
    tdm_robot_scene_destroy(shared);
    cr_assert_eq(tdm_shape_cache_count(el->shapes), 0);
    /* kept idle for the next scene, which takes them again */
    cr_assert_eq(tdm_shape_cache_idle(el->shapes), 3);
    cr_assert_eq(tdm_robot_scene_create_shared(el, world, &shared, err, sizeof err), TDM_OK, "%s", err);
    cr_assert(shared->bvhs[N_EL] == box, "the idle box's tree is taken again");
    cr_assert_eq(tdm_shape_cache_idle(el->shapes), 0);
    cr_assert_eq(tdm_shape_cache_count(el->shapes), 3);
    tdm_robot_scene_destroy(shared);
    tdm_shape_cache_trim(el->shapes);
    cr_assert_eq(tdm_shape_cache_idle(el->shapes), 0);
    tdm_robot_elems_destroy(el);
    tdm_planning_scene_free(world);
}

/* The shape cache on its own: one tree per shape and tolerance, shared while held,
 * kept idle within its bounds once released (the oldest freed first). */
Test(robot_scene, shape_cache_holds_and_bounds)
{
    tdm_shape_cache *c;
    cr_assert_eq(tdm_shape_cache_create(&c), TDM_OK);
    char why[256];
    double dev, dev2;
    tdm_bvh *a, *b, *d;
    tdm_primitive s1 = tdm_primitive_sphere(0.1), s2 = tdm_primitive_sphere(0.2);
    cr_assert_eq(tdm_shape_cache_get(c, &s1, TDM_PRIMITIVE_TOLERANCE, &a, &dev, why, sizeof why), TDM_OK, "%s", why);
    cr_assert_eq(tdm_shape_cache_get(c, &s1, TDM_PRIMITIVE_TOLERANCE, &b, &dev2, why, sizeof why), TDM_OK, "%s", why);
    cr_assert(a == b && dev == dev2, "one shape, one tree");
    cr_assert_eq(tdm_shape_cache_get(c, &s1, 2 * TDM_PRIMITIVE_TOLERANCE, &d, &dev2, why, sizeof why), TDM_OK);
    cr_assert(d != a, "another tolerance, another tree");
    cr_assert_eq(tdm_shape_cache_get(c, &s2, TDM_PRIMITIVE_TOLERANCE, &b, &dev2, why, sizeof why), TDM_OK);
    cr_assert(b != a);
    cr_assert_eq(tdm_shape_cache_count(c), 3);
    tdm_shape_cache_release(c, &s1, TDM_PRIMITIVE_TOLERANCE);
    cr_assert_eq(tdm_shape_cache_count(c), 3, "s1 is still held once");
    tdm_shape_cache_release(c, &s1, TDM_PRIMITIVE_TOLERANCE);
    tdm_shape_cache_release(c, &s1, 2 * TDM_PRIMITIVE_TOLERANCE);
    tdm_shape_cache_release(c, &s2, TDM_PRIMITIVE_TOLERANCE);
    cr_assert_eq(tdm_shape_cache_count(c), 0);
    cr_assert_eq(tdm_shape_cache_idle(c), 3);
    /* a bad shape: its error, nothing held */
    tdm_primitive bad = tdm_primitive_sphere(-1);
    cr_assert_neq(tdm_shape_cache_get(c, &bad, TDM_PRIMITIVE_TOLERANCE, &d, &dev, why, sizeof why), TDM_OK);
    cr_assert_null(d);
    cr_assert_eq(tdm_shape_cache_count(c) + tdm_shape_cache_idle(c), 3);
    /* 300 more shapes released: at most 256 idle */
    for (int i = 0; i < 300; i++) {
        tdm_primitive p = tdm_primitive_box(0.01 * (i + 1), 0.02, 0.03);
        cr_assert_eq(tdm_shape_cache_get(c, &p, TDM_PRIMITIVE_TOLERANCE, &d, &dev, why, sizeof why), TDM_OK, "%s", why);
        tdm_shape_cache_release(c, &p, TDM_PRIMITIVE_TOLERANCE);
    }
    cr_assert_eq(tdm_shape_cache_idle(c), 256);
    cr_assert_eq(tdm_shape_cache_count(c), 0);
    tdm_shape_cache_trim(c);
    cr_assert_eq(tdm_shape_cache_idle(c), 0);
    tdm_shape_cache_destroy(c);
}

/* ---- batches of configurations (tdm_sched_run_configs) ---- */

#define N_BATCH 4000

/* n random configurations and the CPU engine's answers for them, from poses
 * computed one configuration at a time (tdm_robot_scene_poses). */
static double *batch(const tdm_robot_scene *rs, size_t n, uint64_t salt, tdm_mode mode, uint32_t cap,
                     tdm_sched_result *want)
{
    gen_rng g = {seed ^ salt};
    double *q = malloc(n * 3 * sizeof *q);
    tdm_xform *x = malloc(n * N_EL * sizeof *x), links[4];
    cr_assert(q && x);
    for (size_t i = 0; i < n; i++) {
        arm_fixture_random_config(&g, q + 3 * i);
        cr_assert_eq(tdm_robot_scene_poses(rs, q + 3 * i, 3, links, x + i * N_EL), TDM_OK);
    }
    char why[320];
    tdm_sched *cpu = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    tdm_sched_query proto = {rs->scene, x, mode, cap, NULL, NULL};
    cr_assert_eq(tdm_sched_run_poses(cpu, &proto, n, want), TDM_OK);
    tdm_sched_destroy(cpu);
    free(x);
    return q;
}

static size_t differences(const tdm_sched_result *got, const tdm_sched_result *want, size_t n, size_t *first)
{
    size_t d = 0;
    *first = n;
    for (size_t i = 0; i < n; i++)
        if (got[i].colliding != want[i].colliding || got[i].object_a != want[i].object_a ||
            got[i].object_b != want[i].object_b || got[i].contacts != want[i].contacts ||
            got[i].truncated != want[i].truncated) {
            if (!d) *first = i;
            d++;
        }
    return d;
}

/* The answers of tdm_sched_run_configs on engine e equal the CPU engine's on the
 * poses, in bool mode and in contacts mode with a cap some configurations pass;
 * on a GPU engine every configuration is answered by it. */
static void check_configs(tdm_sched *e, const tdm_robot_scene *rs, size_t n, int on_gpu)
{
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    tdm_sched_result *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    cr_assert(want && got);
    for (int m = 0; m < 2; m++) {
        double *q = batch(rs, n, 0xc0f1ull + (uint64_t)m, modes[m], caps[m], want);
        tdm_sched_stats before, after;
        tdm_sched_get_stats(e, &before);
        tdm_sched_query proto = {rs->scene, NULL, modes[m], caps[m], NULL, NULL};
        memset(got, 0xab, n * sizeof *got);
        cr_assert_eq(tdm_sched_run_configs(e, &proto, &rs->kin, q, n, got), TDM_OK);
        tdm_sched_get_stats(e, &after);
        size_t first, d = differences(got, want, n, &first);
        size_t colliding = 0, truncated = 0;
        for (size_t i = 0; i < n; i++) colliding += want[i].colliding, truncated += want[i].truncated;
        cr_log_info("%s, %zu configurations: %zu colliding, %zu truncated; %zu differences", m ? "contacts" : "bool", n,
                    colliding, truncated, d);
        cr_assert_eq(d, 0, "seed=%llu %s: %zu of %zu differ, first %zu: got %u (%u,%u) %u/%u, want %u (%u,%u) %u/%u",
                     (unsigned long long)seed, m ? "contacts" : "bool", d, n, first, got[first].colliding,
                     got[first].object_a, got[first].object_b, got[first].contacts, got[first].truncated,
                     want[first].colliding, want[first].object_a, want[first].object_b, want[first].contacts,
                     want[first].truncated);
        cr_assert(colliding > 0 && colliding < n, "the batch needs both answers");
        if (m) cr_assert(truncated > 0, "the cap must be passed somewhere");
        if (on_gpu) {
            cr_assert_eq(after.gpu_queries - before.gpu_queries, n, "every configuration on the GPU engine");
            cr_assert_eq(after.cpu_queries, before.cpu_queries);
        }
        free(q);
    }
    free(want);
    free(got);
}

Test(robot_scene, configs_match_poses_on_cpu_engine)
{
    tdm_robot_scene *rs = make_scene();
    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    check_configs(e, rs, N_BATCH, 0);
    /* bad input: nothing computed */
    double q[6] = {0.1, 0.2, 0.03, 0.1, NAN, 0.0};
    tdm_sched_result r[2];
    tdm_sched_query proto = {rs->scene, NULL, TDM_MODE_BOOL, 1, NULL, NULL};
    cr_assert_eq(tdm_sched_run_configs(e, &proto, &rs->kin, q, 2, r), TDM_ENONFINITE);
    tdm_kin wrong = rs->kin;
    wrong.n_elems--;
    cr_assert_eq(tdm_sched_run_configs(e, &proto, &wrong, q, 1, r), TDM_EINVAL);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
}

/* On the GPU engine, from end to end on the device; with TDM_GPU_CONFIG_ROOM a run
 * lists at most that many tasks, so most runs leave configurations for the next. */
static void configs_on_gpu(const char *room, size_t n)
{
    if (room) setenv("TDM_GPU_CONFIG_ROOM", room, 1);
    char why[320] = "";
    tdm_sched *e = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    if (room) unsetenv("TDM_GPU_CONFIG_ROOM");
    if (!e) cr_skip_test("no GPU engine: %s", why);
    tdm_robot_scene *rs = make_scene();
    for (uint32_t i = 0; i < rs->n_objects; i++) cr_assert_eq(tdm_sched_mesh_add(e, rs->bvhs[i]), TDM_OK);
    check_configs(e, rs, n, 1);
    for (uint32_t i = 0; i < rs->n_objects; i++) tdm_sched_mesh_remove(e, rs->bvhs[i]);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
}

Test(robot_scene, configs_on_gpu_match_cpu_engine) { configs_on_gpu(NULL, 50000); }
Test(robot_scene, configs_on_gpu_with_a_small_room) { configs_on_gpu("40", N_BATCH); }

/* A robot of more links than a warp has lanes: the GPU engine chains such kinematics
 * through memory, shorter ones in registers (gpu/configs.cu, fk_warp). A chain of `joints`
 * revolute joints with a fixed side branch (a parent that is not the link before) and a
 * mimic joint, in a world of two boxes: every answer the CPU engine's. 40 joints make ~900
 * checks, which a fused run takes (gpu/configs.cu, fused_kernel: at most 1 024), 50 make
 * more, which go as graph runs of six launches. */
static char *chain_urdf(int joints)
{
    size_t cap = 64 * 1024, at = 0;
    char *u = malloc(cap);
    cr_assert_not_null(u);
    at += (size_t)snprintf(u + at, cap - at, "<?xml version='1.0'?>\n<robot name='chain'>\n"
                                              "<link name='l0'><collision><geometry><box size='0.1 0.1 0.04'/>"
                                              "</geometry></collision></link>\n");
    for (int j = 1; j <= joints; j++) {
        const char *axis = j % 3 == 0 ? "1 0 0" : j % 3 == 1 ? "0 0 1" : "0 1 0";
        if (j == 7) /* follows joint 3 */
            at += (size_t)snprintf(u + at, cap - at,
                                   "<joint name='j%d' type='revolute'><parent link='l%d'/><child link='l%d'/>"
                                   "<origin xyz='0 0 0.05'/><axis xyz='%s'/><limit lower='-1' upper='1'/>"
                                   "<mimic joint='j3' multiplier='-0.5' offset='0.1'/></joint>\n",
                                   j, j - 1, j, axis);
        else
            at += (size_t)snprintf(u + at, cap - at,
                                   "<joint name='j%d' type='revolute'><parent link='l%d'/><child link='l%d'/>"
                                   "<origin xyz='0 0 0.05' rpy='0 0 0.1'/><axis xyz='%s'/>"
                                   "<limit lower='-0.6' upper='0.6'/></joint>\n",
                                   j, j - 1, j, axis);
        at += (size_t)snprintf(u + at, cap - at,
                               "<link name='l%d'><collision><origin xyz='0 0 0.025'/><geometry>"
                               "<box size='0.03 0.03 0.02'/></geometry></collision></link>\n",
                               j);
        if (j == 5) /* a fixed side branch off l5: the next link's parent is not the link before */
            at += (size_t)snprintf(u + at, cap - at,
                                   "<joint name='side' type='fixed'><parent link='l5'/><child link='side'/>"
                                   "<origin xyz='0.06 0 0'/></joint>\n<link name='side'><collision><geometry>"
                                   "<cylinder radius='0.02' length='0.08'/></geometry></collision></link>\n");
    }
    snprintf(u + at, cap - at, "</robot>\n");
    return u;
}

static const char *chain_world = "name: chain\n"
                                 "world:\n"
                                 "  collision_objects:\n"
                                 "    - id: post\n"
                                 "      primitives: [{type: box, dimensions: [0.2, 0.2, 2.5]}]\n"
                                 "      primitive_poses: [{position: [0.45, 0.1, 1.0], orientation: [0, 0, 0, 1]}]\n"
                                 "    - id: shelf\n"
                                 "      primitives: [{type: box, dimensions: [0.5, 0.5, 0.05]}]\n"
                                 "      primitive_poses: [{position: [-0.3, 0.0, 1.7], orientation: [0, 0, 0, 1]}]\n";

static void long_chain_on_gpu(int joints, int fused)
{
    char why[320] = "", err[512];
    char *u = chain_urdf(joints);
    write_file("chain.urdf", u);
    free(u);
    tdm_robot *r;
    cr_assert_eq(tdm_robot_load(path("chain.urdf"), NULL, &r, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_gt(r->n_links, 32, "more links than a warp's lanes");
    tdm_planning_scene *w;
    cr_assert_eq(tdm_planning_scene_parse(chain_world, strlen(chain_world), "chain", &w, err, sizeof err), TDM_OK, "%s",
                 err);
    tdm_robot_scene *rs;
    cr_assert_eq(tdm_robot_scene_create(r, w, NULL, NULL, TDM_PRIMITIVE_TOLERANCE, &rs, err, sizeof err), TDM_OK, "%s",
                 err);
    uint32_t checks = rs->scene->n_checks;
    if (fused) cr_assert(checks > 512 && checks <= 1024, "%d joints: %u checks, not a fused run's most", joints, checks);
    else cr_assert_gt(checks, 1024, "%d joints: %u checks, few enough for a fused run", joints, checks);
    tdm_sched *e = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    if (!e) {
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(w);
        tdm_robot_free(r);
        cr_skip_test("no GPU engine: %s", why);
    }
    tdm_sched_stats before, after;
    tdm_sched_get_stats(e, &before);
    for (uint32_t i = 0; i < rs->n_objects; i++) cr_assert_eq(tdm_sched_mesh_add(e, rs->bvhs[i]), TDM_OK);
    const size_t n = 3000, nq = r->n_active;
    double *q = malloc(n * nq * sizeof *q);
    tdm_xform *x = malloc(n * rs->n_movable * sizeof *x), *links = malloc(r->n_links * sizeof *links);
    tdm_sched_result *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    cr_assert(q && x && links && want && got);
    gen_rng g = {seed ^ 0xc4a1ull};
    for (size_t i = 0; i < n; i++) {
        for (size_t a = 0; a < nq; a++) {
            const tdm_robot_joint *jt = &r->joints[r->active[a]];
            q[i * nq + a] = gen_range(&g, jt->lower, jt->upper);
        }
        cr_assert_eq(tdm_robot_scene_poses(rs, q + i * nq, nq, links, x + i * rs->n_movable), TDM_OK);
    }
    tdm_sched *cpu = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    for (int m = 0; m < 2; m++) {
        tdm_sched_query pq = {rs->scene, x, modes[m], caps[m], NULL, NULL};
        cr_assert_eq(tdm_sched_run_poses(cpu, &pq, n, want), TDM_OK);
        /* in runs of a planner's size (one launch each) and in one of all of them */
        for (size_t run = 0; run < 2; run++) {
            size_t step = run ? n : 40;
            memset(got, 0xab, n * sizeof *got);
            for (size_t at = 0; at < n; at += step) {
                size_t k = n - at < step ? n - at : step;
                tdm_sched_query proto = {rs->scene, NULL, modes[m], caps[m], NULL, NULL};
                cr_assert_eq(tdm_sched_run_configs(e, &proto, &rs->kin, q + at * nq, k, got + at), TDM_OK);
            }
            size_t first, d = differences(got, want, n, &first), colliding = 0;
            for (size_t i = 0; i < n; i++) colliding += want[i].colliding;
            cr_log_info("%s, runs of %zu: %zu of %zu colliding, %zu differ", m ? "contacts" : "bool", step, colliding,
                        n, d);
            cr_assert(colliding > n / 20 && colliding < n - n / 20, "both answers, often: %zu of %zu colliding",
                      colliding, n);
            cr_assert_eq(d, 0, "seed=%llu %s, runs of %zu: %zu of %zu differ, first %zu: got %u (%u,%u) %u, want %u "
                         "(%u,%u) %u", (unsigned long long)seed, m ? "contacts" : "bool", step, d, n, first,
                         got[first].colliding, got[first].object_a, got[first].object_b, got[first].contacts,
                         want[first].colliding, want[first].object_a, want[first].object_b, want[first].contacts);
        }
    }
    tdm_sched_destroy(cpu);
    tdm_sched_get_stats(e, &after);
    uint64_t fused_runs = after.gpu_fused_runs - before.gpu_fused_runs;
    if (fused) cr_assert_gt(fused_runs, 0, "%d joints: no run in one kernel", joints);
    else cr_assert_eq(fused_runs, 0, "%d joints (%u checks): runs in one kernel", joints, checks);
    for (uint32_t i = 0; i < rs->n_objects; i++) tdm_sched_mesh_remove(e, rs->bvhs[i]);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
    tdm_planning_scene_free(w);
    tdm_robot_free(r);
    free(q);
    free(x);
    free(links);
    free(want);
    free(got);
}

Test(robot_scene, configs_of_a_long_chain_on_gpu_match_cpu_engine) { long_chain_on_gpu(40, 1); }
Test(robot_scene, configs_of_a_longer_chain_past_a_fused_run_match_cpu_engine) { long_chain_on_gpu(50, 0); }

/* Small batches (a planner's states) on the GPU engine, one run each: with few
 * (configuration, check) entries a run goes in one launch, in block runs (each block
 * its tasks' levels), handing what outgrows a block's room over to the levels; every
 * answer equal to the CPU engine's whatever the room, and with block runs off. `env`
 * ("VAR=VALUE ...") is set while the engine is made. expect_fused: 1, some runs went in
 * one kernel; 0, none; -1, either. */
static void configs_in_small_runs(const char *env, int expect_small, int expect_handovers, int expect_fused)
{
    char vars[4][64];
    int n_vars = 0;
    for (const char *p = env; p && *p && n_vars < 4;) {
        size_t len = strcspn(p, " ");
        snprintf(vars[n_vars], sizeof vars[n_vars], "%.*s", (int)len, p);
        char *eq = strchr(vars[n_vars], '=');
        cr_assert_not_null(eq);
        *eq = 0;
        setenv(vars[n_vars], eq + 1, 1);
        n_vars++;
        p += len;
        p += strspn(p, " ");
    }
    char why[320] = "";
    tdm_sched *e = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    for (int k = 0; k < n_vars; k++) unsetenv(vars[k]);
    if (!e) cr_skip_test("no GPU engine: %s", why);
    tdm_robot_scene *rs = make_scene();
    for (uint32_t i = 0; i < rs->n_objects; i++) cr_assert_eq(tdm_sched_mesh_add(e, rs->bvhs[i]), TDM_OK);
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    enum { N = 1500 };
    tdm_sched_result *want = malloc(N * sizeof *want), *got = malloc(N * sizeof *got);
    cr_assert(want && got);
    tdm_sched_stats before, after;
    tdm_sched_get_stats(e, &before);
    for (int m = 0; m < 2; m++) {
        double *q = batch(rs, N, 0x5a11ull + (uint64_t)m, modes[m], caps[m], want);
        tdm_sched_query proto = {rs->scene, NULL, modes[m], caps[m], NULL, NULL};
        memset(got, 0xab, N * sizeof *got);
        for (size_t lo = 0, k = 0; lo < N; k++) { /* runs of 1 to 12 configurations, and of 100 */
            size_t n = k % 13 == 12 ? 100 : 1 + k % 13;
            if (n > N - lo) n = N - lo;
            cr_assert_eq(tdm_sched_run_configs_device(e, &proto, &rs->kin, q + 3 * lo, n, got + lo), TDM_OK);
            lo += n;
        }
        size_t first, d = differences(got, want, N, &first);
        cr_assert_eq(d, 0, "seed=%llu [%s] %s: %zu of %d differ, first %zu: got %u (%u,%u) %u, want %u (%u,%u) %u",
                     (unsigned long long)seed, env ? env : "", m ? "contacts" : "bool", d, N, first,
                     got[first].colliding, got[first].object_a, got[first].object_b, got[first].contacts,
                     want[first].colliding, want[first].object_a, want[first].object_b, want[first].contacts);
        free(q);
    }
    tdm_sched_get_stats(e, &after);
    uint64_t small = after.gpu_small_runs - before.gpu_small_runs,
             handovers = after.gpu_small_handovers - before.gpu_small_handovers,
             fused = after.gpu_fused_runs - before.gpu_fused_runs;
    cr_log_info("[%s]: %llu runs in one launch, %llu of them handing pairs over, %llu in one kernel",
                env ? env : "", (unsigned long long)small, (unsigned long long)handovers, (unsigned long long)fused);
    if (expect_fused > 0) cr_assert_gt(fused, 0, "no run went in one kernel");
    else if (expect_fused == 0) cr_assert_eq(fused, 0, "runs went in one kernel");
    if (expect_small) cr_assert_gt(small, 0, "no run went in one launch");
    else cr_assert_eq(small, 0, "runs went in one launch with block runs off");
    if (expect_handovers) cr_assert_gt(handovers, 0, "no run handed pairs over");
    for (uint32_t i = 0; i < rs->n_objects; i++) tdm_sched_mesh_remove(e, rs->bvhs[i]);
    free(want);
    free(got);
    tdm_robot_scene_destroy(rs);
    tdm_sched_destroy(e);
}

/* Runs of at most 64 configurations go in one kernel (gpu/configs.cu, fused_kernel) unless
   TDM_GPU_CONFIG_FUSED=0; TDM_GPU_BLOCK_ROOM hands pairs over from it too, and
   TDM_GPU_FUSED_SHARED=1 keeps one pair of each frontier and one task's hot data in shared
   memory, the rest in global memory. */
Test(robot_scene, configs_in_block_runs_match_cpu_engine) { configs_in_small_runs(NULL, 1, 0, 1); }
Test(robot_scene, configs_in_block_runs_handing_over_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_BLOCK_ROOM=2", 1, 1, 1);
}
Test(robot_scene, configs_in_graph_runs_of_six_launches_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_CONFIG_FUSED=0", 1, 0, 0);
}
Test(robot_scene, configs_in_graph_runs_of_six_launches_handing_over_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_CONFIG_FUSED=0 TDM_GPU_BLOCK_ROOM=2", 1, 1, 0);
}
Test(robot_scene, configs_in_fused_runs_through_global_memory_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_FUSED_SHARED=1", 1, 0, 1);
}
Test(robot_scene, configs_in_fused_runs_through_global_memory_handing_over_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_FUSED_SHARED=1 TDM_GPU_BLOCK_ROOM=5", 1, 1, 1);
}
/* runs of 100 configurations in one kernel too (1 024 blocks, each with a smaller room) */
Test(robot_scene, configs_in_large_fused_runs_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_FUSED_CONFIGS=1024", 1, 0, 1);
}
Test(robot_scene, configs_in_large_fused_runs_handing_over_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_FUSED_CONFIGS=1024 TDM_GPU_BLOCK_ROOM=3", 1, 1, 1);
}
/* a task room below a run's tasks (above any one configuration's): the configurations whose
   tasks pass it are run again (graph runs list them by list_emit_kernel; a run whose tasks
   may pass the room is not fused) */
Test(robot_scene, configs_in_block_runs_past_the_room_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_CONFIG_ROOM=40", 1, 0, -1);
}
Test(robot_scene, configs_on_the_levels_only_match_cpu_engine)
{
    configs_in_small_runs("TDM_GPU_BLOCK_CONFIG_ENTRIES=0", 0, 0, 0);
}

/* Several robot scenes of the robot in one device run (tdm_sched_run_configs_groups_device,
 * what the pooler does with planners' requests on different worlds): scenes of other
 * checks and fixed objects than the fixture's (arm_fixture.h's world_variants), groups of
 * uneven sizes (one of a single configuration), each configuration answered as its own
 * scene's CPU engine answers it. */

enum { N_SCENES = 4, N_GROUPS = 6 };

/* The scenes of the test below: the fixture's world twice (two scenes, one world) and the
 * two variants, each with its trees on e (NULL: none). */
typedef struct scene_set {
    tdm_planning_scene *ps[2];
    tdm_robot_scene *rs[N_SCENES];
} scene_set;

/* The set's trees onto e (add), or off it. */
static void scene_set_trees(const scene_set *set, tdm_sched *e, int add)
{
    for (int k = 0; k < N_SCENES; k++)
        for (uint32_t i = 0; i < set->rs[k]->n_objects; i++) {
            if (add) cr_assert_eq(tdm_sched_mesh_add(e, set->rs[k]->bvhs[i]), TDM_OK);
            else tdm_sched_mesh_remove(e, set->rs[k]->bvhs[i]);
        }
}

static void scene_set_make(scene_set *set, tdm_sched *e)
{
    char err[512];
    for (int k = 0; k < 2; k++)
        cr_assert_eq(tdm_planning_scene_parse(world_variants[k], strlen(world_variants[k]), "variant", &set->ps[k],
                                              err, sizeof err),
                     TDM_OK, "%s", err);
    const tdm_planning_scene *use[N_SCENES] = {ps, set->ps[0], set->ps[1], ps};
    for (int k = 0; k < N_SCENES; k++) {
        int loads = 0;
        cr_assert_eq(tdm_robot_scene_create(robot, use[k], loader, &loads, TDM_PRIMITIVE_TOLERANCE, &set->rs[k], err,
                                            sizeof err),
                     TDM_OK, "%s", err);
    }
    if (e) scene_set_trees(set, e, 1);
    cr_assert_neq(set->rs[1]->scene->n_checks, set->rs[0]->scene->n_checks, "the variants must differ in checks");
    cr_assert_neq(set->rs[2]->scene->n_checks, set->rs[1]->scene->n_checks, "the variants must differ in checks");
}

static void scene_set_free(scene_set *set, tdm_sched *e)
{
    if (e) scene_set_trees(set, e, 0);
    for (int k = 0; k < N_SCENES; k++) tdm_robot_scene_destroy(set->rs[k]);
    for (int k = 0; k < 2; k++) tdm_planning_scene_free(set->ps[k]);
}

/* Groups in an order that is not the scenes' (the same scene twice, apart), one of a
 * single configuration. */
static const int group_scene[N_GROUPS] = {1, 0, 2, 1, 3, 2};
static const size_t group_size[N_GROUPS] = {700, 1, 1500, 300, 900, 64};
#define GROUPS_TOTAL 3465

/* Groups of the same scenes of a planner's few configurations (55): one fused run. */
static const size_t few_size[N_GROUPS] = {9, 1, 20, 5, 14, 6};
#define FEW_TOTAL 55

/* Mode m's groups of sizes[g] configurations: their configurations side by side in q, the
 * CPU engine's answers in want; with need_colliding, every scene has colliding ones. */
static size_t groups_make_sized(const scene_set *set, int m, const size_t *sizes, int need_colliding,
                                tdm_sched_configs_group *groups, double *q, tdm_sched_result *want)
{
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    size_t at = 0, colliding[N_SCENES] = {0};
    for (int g = 0; g < N_GROUPS; g++) {
        const tdm_robot_scene *rs = set->rs[group_scene[g]];
        double *qg = batch(rs, sizes[g], 0x9a0ull + 16 * (uint64_t)g + (uint64_t)m, modes[m], caps[m], want + at);
        memcpy(q + 3 * at, qg, sizes[g] * 3 * sizeof *q);
        free(qg);
        for (size_t i = 0; i < sizes[g]; i++) colliding[group_scene[g]] += want[at + i].colliding;
        groups[g] = (tdm_sched_configs_group){rs->scene, &rs->kin, sizes[g]};
        at += sizes[g];
    }
    for (int k = 0; k < N_SCENES && need_colliding; k++)
        cr_assert(colliding[k] > 0, "%s: scene %d needs colliding configurations", m ? "contacts" : "bool", k);
    return at;
}

static void groups_make(const scene_set *set, int m, tdm_sched_configs_group *groups, double *q,
                        tdm_sched_result *want)
{
    cr_assert_eq(groups_make_sized(set, m, group_size, 1, groups, q, want), GROUPS_TOTAL);
}

/* Bad groups are refused before any device is asked: groups of different joint
 * counts, a non-finite value in a later group. */
static void groups_refused(tdm_sched *e, const scene_set *set, double *q, tdm_sched_result *got)
{
    tdm_kin other = set->rs[0]->kin;
    other.n_q = 2;
    tdm_sched_configs_group bad[2] = {{set->rs[0]->scene, &set->rs[0]->kin, 1}, {set->rs[1]->scene, &other, 1}};
    cr_assert_eq(tdm_sched_run_configs_groups_device(e, bad, 2, TDM_MODE_BOOL, 1, q, got), TDM_EINVAL);
    double keep = q[3 * 701 + 1];
    q[3 * 701 + 1] = NAN;
    tdm_sched_configs_group two[2] = {{set->rs[1]->scene, &set->rs[1]->kin, 700},
                                      {set->rs[0]->scene, &set->rs[0]->kin, 2}};
    cr_assert_eq(tdm_sched_run_configs_groups_device(e, two, 2, TDM_MODE_BOOL, 1, q, got), TDM_ENONFINITE);
    q[3 * 701 + 1] = keep;
}

/* Without a device the groups are not run (TDM_ENODEV: the pooler then runs each job
 * alone), after the same checks. */
Test(robot_scene, configs_groups_on_cpu_engine)
{
    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    scene_set set;
    scene_set_make(&set, NULL);
    double *q = malloc(GROUPS_TOTAL * 3 * sizeof *q);
    tdm_sched_result *want = malloc(GROUPS_TOTAL * sizeof *want), *got = malloc(GROUPS_TOTAL * sizeof *got);
    cr_assert(q && want && got);
    tdm_sched_configs_group groups[N_GROUPS];
    groups_make(&set, 0, groups, q, want);
    cr_assert_eq(tdm_sched_run_configs_groups_device(e, groups, N_GROUPS, TDM_MODE_BOOL, 1, q, got), TDM_ENODEV);
    groups_refused(e, &set, q, got);
    scene_set_free(&set, NULL);
    free(q);
    free(want);
    free(got);
    tdm_sched_destroy(e);
}

/* The groups of `sizes` (`total` configurations) in one device run, both modes: every
 * answer its scene's CPU engine's; `fused`: the run went in one kernel (gpu/configs.cu). */
static void several_scenes_in_one_run(const size_t *sizes, size_t total, int fused)
{
    char why[320] = "";
    tdm_sched *e = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    if (!e) cr_skip_test("no GPU engine: %s", why);
    scene_set set;
    scene_set_make(&set, e);
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    double *q = malloc(total * 3 * sizeof *q);
    tdm_sched_result *want = malloc(total * sizeof *want), *got = malloc(total * sizeof *got);
    cr_assert(q && want && got);
    for (int m = 0; m < 2; m++) {
        tdm_sched_configs_group groups[N_GROUPS];
        cr_assert_eq(groups_make_sized(&set, m, sizes, !fused, groups, q, want), total);
        tdm_sched_stats before, after;
        tdm_sched_get_stats(e, &before);
        memset(got, 0xab, total * sizeof *got);
        cr_assert_eq(tdm_sched_run_configs_groups_device(e, groups, N_GROUPS, modes[m], caps[m], q, got), TDM_OK);
        tdm_sched_get_stats(e, &after);
        cr_assert_eq(after.gpu_queries - before.gpu_queries, total, "every configuration on the GPU engine");
        cr_assert_eq(after.runs - before.runs, 1, "one run for every scene");
        cr_assert_eq(after.gpu_fused_runs - before.gpu_fused_runs, (uint64_t)fused, "%s: fused runs",
                     m ? "contacts" : "bool");
        size_t at = 0;
        for (int g = 0; g < N_GROUPS; g++) {
            size_t first, d = differences(got + at, want + at, sizes[g], &first);
            const tdm_sched_result *G = got + at + first, *W = want + at + first;
            cr_assert_eq(d, 0, "seed=%llu %s, group %d (scene %d): %zu of %zu differ, first %zu: got %u (%u,%u) %u, "
                         "want %u (%u,%u) %u", (unsigned long long)seed, m ? "contacts" : "bool", g, group_scene[g],
                         d, sizes[g], first, G->colliding, G->object_a, G->object_b, G->contacts, W->colliding,
                         W->object_a, W->object_b, W->contacts);
            at += sizes[g];
        }
    }
    if (!fused) groups_refused(e, &set, q, got);
    scene_set_free(&set, e);
    free(q);
    free(want);
    free(got);
    tdm_sched_destroy(e);
}

Test(robot_scene, configs_of_several_scenes_in_one_device_run)
{
    several_scenes_in_one_run(group_size, GROUPS_TOTAL, 0);
}
Test(robot_scene, a_few_configurations_of_several_scenes_in_one_fused_run)
{
    several_scenes_in_one_run(few_size, FEW_TOTAL, 1);
}

/* Resident programs (gpu/gpu.h): a lane keeps each robot scene's program after its first
 * run and later runs name it, until a tree leaves the registry (the epoch), for the same
 * kinematics only; a small cache drops the least recently used, none is kept with the cache
 * off; every answer is the CPU engine's. One lane, so that the counts are the lane's. */

/* Runs groups[0 .. n) (configurations q, answers want) in mode m: every answer right; adds
 * the uploads and reuses to *up and *reused. */
static void resident_run(tdm_sched *e, const tdm_sched_configs_group *groups, size_t n, int m, const double *q,
                         const tdm_sched_result *want, size_t total, uint64_t *up, uint64_t *reused,
                         const char *what)
{
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    tdm_sched_result *got = malloc(total * sizeof *got);
    cr_assert_not_null(got);
    memset(got, 0xab, total * sizeof *got);
    tdm_sched_stats before, after;
    tdm_sched_get_stats(e, &before);
    cr_assert_eq(tdm_sched_run_configs_groups_device(e, groups, n, modes[m], caps[m], q, got), TDM_OK, "%s", what);
    tdm_sched_get_stats(e, &after);
    cr_assert_eq(after.gpu_queries - before.gpu_queries, total, "%s: every configuration on the GPU engine", what);
    size_t first, d = differences(got, want, total, &first);
    cr_assert_eq(d, 0, "seed=%llu %s: %zu of %zu differ, first %zu: got %u (%u,%u), want %u (%u,%u)",
                 (unsigned long long)seed, what, d, total, first, got[first].colliding, got[first].object_a,
                 got[first].object_b, want[first].colliding, want[first].object_a, want[first].object_b);
    *up = after.gpu_programs_uploaded - before.gpu_programs_uploaded;
    *reused = after.gpu_programs_reused - before.gpu_programs_reused;
    free(got);
}

Test(robot_scene, resident_programs_follow_their_scenes)
{
    char why[320] = "";
    tdm_sched *e = sched_with(TDM_BACKEND_GPU, 1, 0, tdm_sched_config_default().gpu_program_cache, why, sizeof why);
    if (!e) cr_skip_test("no GPU engine: %s", why);
    scene_set set;
    scene_set_make(&set, e);
    double *q = malloc(GROUPS_TOTAL * 3 * sizeof *q);
    tdm_sched_result *want = malloc(GROUPS_TOTAL * sizeof *want);
    cr_assert(q && want);
    tdm_sched_configs_group groups[N_GROUPS];
    uint64_t up, reused;
    /* the first run uploads the four scenes' programs (scene 1 twice in the run: once), the next
       names all six groups' */
    groups_make(&set, 0, groups, q, want);
    resident_run(e, groups, N_GROUPS, 0, q, want, GROUPS_TOTAL, &up, &reused, "first run");
    cr_assert_eq(up, N_SCENES, "first run: %llu uploaded", (unsigned long long)up);
    cr_assert_eq(reused, 0);
    groups_make(&set, 1, groups, q, want);
    resident_run(e, groups, N_GROUPS, 1, q, want, GROUPS_TOTAL, &up, &reused, "second run");
    cr_assert_eq(up, 0, "second run: %llu uploaded", (unsigned long long)up);
    cr_assert_eq(reused, N_GROUPS);
    tdm_sched_stats st;
    tdm_sched_get_stats(e, &st);
    uint64_t four = st.gpu_program_bytes;
    cr_assert_gt(four, 0);

    /* other kinematics on a held scene: not its program (the CPU engine answers with them too) */
    tdm_kin moved = set.rs[0]->kin;
    moved.base.t.x += 0.05;
    {
        enum { N = 400 };
        gen_rng g = {seed ^ 0x6e5ull};
        double mq[3 * N];
        tdm_sched_result mwant[N];
        for (size_t i = 0; i < N; i++) arm_fixture_random_config(&g, mq + 3 * i);
        tdm_sched *cpu = sched_of(TDM_BACKEND_CPU, why, sizeof why);
        tdm_sched_query proto = {set.rs[0]->scene, NULL, TDM_MODE_BOOL, 1, NULL, NULL};
        cr_assert_eq(tdm_sched_run_configs(cpu, &proto, &moved, mq, N, mwant), TDM_OK);
        tdm_sched_destroy(cpu);
        tdm_sched_configs_group one = {set.rs[0]->scene, &moved, N};
        resident_run(e, &one, 1, 0, mq, mwant, N, &up, &reused, "moved base");
        cr_assert_eq(up, 1, "moved base: %llu uploaded", (unsigned long long)up);
        cr_assert_eq(reused, 0);
    }

    /* a tree leaving the registry: every program is made again */
    tdm_primitive box = {TDM_PRIMITIVE_BOX, {0.1, 0.2, 0.3}};
    tdm_mesh *m;
    tdm_bvh *extra;
    char err[256];
    cr_assert_eq(tdm_primitive_mesh(&box, TDM_PRIMITIVE_TOLERANCE, &m, NULL, err, sizeof err), TDM_OK, "%s", err);
    cr_assert_eq(tdm_bvh_build(m, &extra), TDM_OK);
    cr_assert_eq(tdm_sched_mesh_add(e, extra), TDM_OK);
    tdm_sched_mesh_remove(e, extra);
    groups_make(&set, 0, groups, q, want);
    resident_run(e, groups, N_GROUPS, 0, q, want, GROUPS_TOTAL, &up, &reused, "after a tree left");
    cr_assert_eq(up, N_SCENES, "after a tree left: %llu uploaded", (unsigned long long)up);
    cr_assert_eq(reused, 0);
    tdm_sched_destroy(e);

    /* a cache of about two programs: scene by scene, round and round, the oldest make room */
    unsigned long long kb = four / 2 / 1024 + 1;
    e = sched_with(TDM_BACKEND_GPU, 1, 0, kb << 10, why, sizeof why);
    cr_assert_not_null(e, "%s", why);
    scene_set_trees(&set, e, 1);
    uint64_t ups = 0;
    for (int round = 0; round < 3; round++)
        for (int k = 0; k < N_SCENES; k++) {
            int gi = k == 0 ? 1 : k == 1 ? 0 : k == 2 ? 2 : 4; /* a group of scene k */
            size_t at = 0;
            for (int g = 0; g < gi; g++) at += group_size[g];
            char what[64];
            snprintf(what, sizeof what, "cache of %llu KB, round %d, scene %d", kb, round, k);
            resident_run(e, &groups[gi], 1, 0, q + 3 * at, want + at, group_size[gi], &up, &reused, what);
            ups += up;
            tdm_sched_get_stats(e, &st);
            cr_assert_leq(st.gpu_program_bytes, kb << 10, "%s: over the cache", what);
        }
    cr_log_info("cache of %llu KB: %llu uploads in 12 runs of 4 scenes", kb, (unsigned long long)ups);
    cr_assert_gt(ups, N_SCENES, "a cache of two programs must make room for the others again");
    /* a run of all four scenes in that cache: those that do not fit go with the run */
    resident_run(e, groups, N_GROUPS, 0, q, want, GROUPS_TOTAL, &up, &reused, "four scenes in a cache of two");
    cr_log_info("four scenes in a cache of two: %llu uploaded, %llu reused", (unsigned long long)up,
                (unsigned long long)reused);
    cr_assert_lt(up + reused, N_GROUPS, "some scene must have gone with the run");
    scene_set_trees(&set, e, 0);
    tdm_sched_destroy(e);

    /* no cache: every run carries its programs */
    e = sched_with(TDM_BACKEND_GPU, 1, 0, 0, why, sizeof why);
    cr_assert_not_null(e, "%s", why);
    scene_set_trees(&set, e, 1);
    for (int r = 0; r < 2; r++) {
        resident_run(e, groups, N_GROUPS, 0, q, want, GROUPS_TOTAL, &up, &reused, "no cache");
        cr_assert_eq(up + reused, 0, "no cache: %llu uploaded, %llu reused", (unsigned long long)up,
                     (unsigned long long)reused);
    }
    scene_set_free(&set, e);
    tdm_sched_destroy(e);
    tdm_bvh_free(extra);
    tdm_mesh_free(m);
    free(q);
    free(want);
}

/* The pooler with jobs of configurations on several robot scenes (what tandemd submits
 * for planners): jobs of every scene pool into device runs, each job gets its own
 * scene's answers, and a job with a non-finite value fails alone with TDM_ENONFINITE
 * while the jobs pooled with it are answered. */
typedef struct pool_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t finished, multi;
} pool_watch;

static void pool_finished(tdm_pooler_job *j, void *data)
{
    (void)j;
    pool_watch *w = data;
    pthread_mutex_lock(&w->mu);
    w->finished++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void pool_ran(const tdm_pooler_batch *b, void *data)
{
    pool_watch *w = data;
    pthread_mutex_lock(&w->mu);
    w->multi += b->jobs > 1;
    pthread_mutex_unlock(&w->mu);
}

/* Job k is given a non-finite value: one a round (bad_each), or the middle one. */
static int is_bad(int k, int bad_each, int jobs) { return bad_each ? k % bad_each == 2 : k == jobs / 2; }

static void pause_for_us(int us)
{
    struct timespec ts = {0, (long)us * 1000};
    nanosleep(&ts, NULL);
}

/* Submits jobs [lo, hi) round by round (a thread of the async test below). */
typedef struct pool_feed {
    tdm_pooler *pl;
    tdm_pooler_job *jobs;
    int lo, hi, per_round, pause_us;
} pool_feed;

static void *pool_feed_main(void *arg)
{
    pool_feed *f = arg;
    for (int k = f->lo; k < f->hi; k++) {
        if (tdm_pooler_submit(f->pl, &f->jobs[k]) != TDM_OK) return (void *)1;
        if ((k - f->lo) % f->per_round == f->per_round - 1) {
            if (f->pause_us) pause_for_us(f->pause_us);
            else sched_yield();
        }
    }
    return NULL;
}

/* The pooled jobs below; with `async` through async lanes (TDM_ASYNC_LANES=1: each lane's
 * thread keeps several runs in flight, tdm_sched_async), submitted from `feeders` threads
 * (rounds of PER_ROUND jobs `pause_us` apart: many batches, some while others run), with
 * TDM_GPU_CONFIG_ROOM `room` (runs that leave configurations for the synchronous way); a bad
 * job in every round (`bad_each`), or one in all. */
static void pooled_jobs(int async, int feeders, const char *room, int n_job, int bad_each, int pause_us)
{
    char why[320] = "";
    if (room) setenv("TDM_GPU_CONFIG_ROOM", room, 1);
    tdm_sched *e = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    if (room) unsetenv("TDM_GPU_CONFIG_ROOM");
    if (!e) cr_skip_test("no GPU engine: %s", why);
    scene_set set;
    scene_set_make(&set, e);
    enum { ROUNDS = 40, PER_ROUND = 4, JOBS = ROUNDS * PER_ROUND };
    tdm_pooler_job *jobs = calloc(JOBS, sizeof *jobs);
    double *q = malloc(sizeof *q * JOBS * n_job * 3);
    tdm_sched_result *got = calloc(JOBS * n_job, sizeof *got), *want = malloc(sizeof *want * JOBS * n_job);
    cr_assert(jobs && q && got && want);
    for (int k = 0; k < JOBS; k++) { /* the job's configurations and its scene's CPU answers */
        const tdm_robot_scene *rs = set.rs[k % N_SCENES];
        double *qk = batch(rs, n_job, 0x700ull + (uint64_t)k, TDM_MODE_BOOL, 1, want + k * n_job);
        memcpy(q + k * n_job * 3, qk, sizeof *q * n_job * 3);
        free(qk);
        if (is_bad(k, bad_each, JOBS)) q[k * n_job * 3 + 4] = NAN; /* one bad job a round, or one in all */
        jobs[k] = (tdm_pooler_job){.scene = rs->scene, .mode = TDM_MODE_BOOL, .max_contacts = 1,
                                   .n_queries = n_job, .n_tasks = (uint64_t)n_job * rs->scene->n_checks,
                                   .configs = q + k * n_job * 3, .kin = &rs->kin, .results = got + k * n_job};
    }
    pool_watch w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    tdm_pooler *pl;
    if (async) setenv("TDM_ASYNC_LANES", "1", 1);
    /* async: batches of at most ~16 jobs, so that a backlog makes several runs, each of which one
       slot takes (a larger one goes the synchronous way) */
    cr_assert_eq(tdm_pooler_create(e, async ? 1u << 12 : 1u << 20, 1u << 20, pool_finished, pool_ran, &w, &pl),
                 TDM_OK);
    if (async) unsetenv("TDM_ASYNC_LANES");
    if (feeders <= 1) {
        for (int r = 0; r < ROUNDS; r++) { /* a round's jobs at once, queued behind the runs in flight */
            for (int i = 0; i < PER_ROUND; i++)
                cr_assert_eq(tdm_pooler_submit(pl, &jobs[r * PER_ROUND + i]), TDM_OK);
            if (pause_us) pause_for_us(pause_us);
        }
    } else {
        pthread_t th[8];
        pool_feed fd[8];
        cr_assert(feeders <= 8);
        for (int t = 0; t < feeders; t++) {
            fd[t] = (pool_feed){pl, jobs, JOBS * t / feeders, JOBS * (t + 1) / feeders, PER_ROUND, pause_us};
            cr_assert_eq(pthread_create(&th[t], NULL, pool_feed_main, &fd[t]), 0);
        }
        for (int t = 0; t < feeders; t++) {
            void *ret;
            pthread_join(th[t], &ret);
            cr_assert_null(ret, "feeder %d: a submit failed", t);
        }
    }
    pthread_mutex_lock(&w.mu);
    while (w.finished < JOBS) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    tdm_pooler_stop(pl);
    tdm_pooler_destroy(pl);
    size_t colliding = 0;
    for (int k = 0; k < JOBS; k++) {
        if (is_bad(k, bad_each, JOBS)) {
            cr_assert_eq(jobs[k].rc, TDM_ENONFINITE, "job %d: rc %d (%s), not its own error", k, jobs[k].rc,
                         tdm_strerror(jobs[k].rc));
            continue;
        }
        cr_assert_eq(jobs[k].rc, TDM_OK, "job %d: %s", k, tdm_strerror(jobs[k].rc));
        size_t first, d = differences(got + k * n_job, want + k * n_job, n_job, &first);
        cr_assert_eq(d, 0, "seed=%llu job %d (scene %d): %zu differ, first %zu", (unsigned long long)seed, k,
                     k % N_SCENES, d, first);
        for (int i = 0; i < n_job; i++) colliding += want[k * n_job + i].colliding;
    }
    tdm_sched_stats st;
    tdm_sched_get_stats(e, &st);
    cr_log_info("%zu batches of several jobs, %zu colliding configurations; %llu async runs, %llu waits", w.multi,
                colliding, (unsigned long long)st.async_runs, (unsigned long long)st.async_waits);
    if (feeders <= 1) cr_assert_gt(w.multi, 0, "no batch pooled several jobs");
    cr_assert(colliding > 0, "the jobs need colliding configurations");
    if (async) cr_assert_geq(st.async_runs, 1, "no run went the async way"); /* how many: the timing's */
    else cr_assert_eq(st.async_runs, 0);
    scene_set_free(&set, e);
    free(jobs);
    free(q);
    free(got);
    free(want);
    tdm_sched_destroy(e);
}

Test(robot_scene, pooled_jobs_of_several_scenes_and_a_bad_one) { pooled_jobs(0, 1, NULL, 5, 4, 0); }
/* Async lanes: the same answers, with several runs in flight on a lane, programs uploaded
 * only on an idle lane, from several submitting threads, and with runs that leave
 * configurations for the synchronous way (a small room); jobs of 64 configurations, which
 * the cost model sends to the device alone too. */
Test(robot_scene, pooled_jobs_through_async_lanes) { pooled_jobs(1, 1, NULL, 64, 0, 200); }
Test(robot_scene, pooled_jobs_through_async_lanes_from_several_threads) { pooled_jobs(1, 4, NULL, 64, 0, 200); }
Test(robot_scene, pooled_jobs_through_async_lanes_with_a_small_room) { pooled_jobs(1, 4, "40", 64, 0, 200); }

/* tdm_sched_async directly: runs of several scenes in flight on one lane, answered as the CPU
 * engine answers; a scene whose program the lane does not hold is refused (TDM_EAGAIN) while
 * a run is in flight and taken once the lane is drained; no room past the lane's slots; runs
 * handed back in the order they ended. With TDM_GPU_CONFIG_ROOM `room`, runs leave
 * configurations that the lane runs the synchronous way once idle. */
static void async_runs(const char *room)
{
    char why[320] = "";
    if (room) setenv("TDM_GPU_CONFIG_ROOM", room, 1);
    tdm_sched *e = sched_with(TDM_BACKEND_GPU, 1, 0, tdm_sched_config_default().gpu_program_cache, why, sizeof why);
    if (room) unsetenv("TDM_GPU_CONFIG_ROOM");
    if (!e) cr_skip_test("no GPU engine: %s", why);
    scene_set set;
    scene_set_make(&set, e);
    enum { RUNS = 4, N = 48 };
    const int scene_of[RUNS] = {0, 1, 0, 2};
    double *q[RUNS];
    tdm_sched_result *got = calloc(RUNS * N, sizeof *got), *want = malloc(sizeof *want * RUNS * N);
    cr_assert(got && want);
    tdm_sched_configs_group g[RUNS];
    for (int r = 0; r < RUNS; r++) {
        const tdm_robot_scene *rs = set.rs[scene_of[r]];
        q[r] = batch(rs, N, 0x900ull + (uint64_t)r, TDM_MODE_BOOL, 1, want + r * N);
        g[r] = (tdm_sched_configs_group){rs->scene, &rs->kin, N};
    }
    tdm_sched_async *a;
    cr_assert_eq(tdm_sched_async_create(e, &a), TDM_OK);
    int tag[RUNS], rc = -1;
    for (int r = 0; r < RUNS; r++) tag[r] = r;
    /* run 0 (scene 0's program uploaded on the idle lane); run 1's scene has no program there:
       refused while run 0 is in flight, nothing started */
    cr_assert_eq(tdm_sched_async_start(a, &g[0], 1, TDM_MODE_BOOL, 1, q[0], got, 1, &tag[0]), TDM_OK);
    cr_assert_eq(tdm_sched_async_running(a), 1);
    cr_assert_eq(tdm_sched_async_start(a, &g[1], 1, TDM_MODE_BOOL, 1, q[1], got + N, 1, &tag[1]), TDM_EAGAIN);
    tdm_sched_async_drain(a);
    cr_assert_eq(tdm_sched_async_running(a), 0);
    cr_assert_eq(tdm_sched_async_next(a, &rc), &tag[0]);
    cr_assert_eq(rc, TDM_OK);
    cr_assert_null(tdm_sched_async_next(a, &rc));
    /* runs 1 (its program uploaded on the idle lane) and 2 (scene 0's program held) in flight at once */
    cr_assert_eq(tdm_sched_async_start(a, &g[1], 1, TDM_MODE_BOOL, 1, q[1], got + N, 1, &tag[1]), TDM_OK);
    int slots = tdm_sched_async_room(a) + 1;
    cr_assert_geq(slots, 2, "the lane needs two slots");
    cr_assert_eq(tdm_sched_async_start(a, &g[2], 1, TDM_MODE_BOOL, 1, q[2], got + 2 * N, 1, &tag[2]), TDM_OK);
    cr_assert_eq(tdm_sched_async_running(a), 2);
    if (slots == 2) { /* no room: refused, nothing started */
        cr_assert_eq(tdm_sched_async_room(a), 0);
        cr_assert_eq(tdm_sched_async_start(a, &g[0], 1, TDM_MODE_BOOL, 1, q[0], got, 1, &tag[0]), TDM_EAGAIN);
    }
    int seen[RUNS] = {0};
    seen[0] = 1;
    for (int left = 2; left > 0;) {
        int *t = tdm_sched_async_next(a, &rc);
        if (!t) continue;
        cr_assert_eq(rc, TDM_OK, "run %d: %s", *t, tdm_strerror(rc));
        cr_assert(*t == 1 || *t == 2);
        cr_assert_eq(seen[*t], 0, "run %d handed back twice", *t);
        seen[*t] = 1;
        left--;
    }
    /* run 3 alone, then its non-finite twin refused before anything starts */
    cr_assert_eq(tdm_sched_async_start(a, &g[3], 1, TDM_MODE_BOOL, 1, q[3], got + 3 * N, 1, &tag[3]), TDM_OK);
    double saved = q[3][4];
    q[3][4] = NAN;
    cr_assert_eq(tdm_sched_async_start(a, &g[3], 1, TDM_MODE_BOOL, 1, q[3], got + 3 * N, 1, &tag[3]),
                 TDM_ENONFINITE);
    q[3][4] = saved;
    void *t3;
    while (!(t3 = tdm_sched_async_next(a, &rc))) {
    }
    cr_assert_eq(t3, &tag[3]);
    cr_assert_eq(rc, TDM_OK);
    cr_assert_eq(tdm_sched_async_running(a), 0);
    for (int r = 0; r < RUNS; r++) {
        size_t first, d = differences(got + r * N, want + r * N, N, &first);
        cr_assert_eq(d, 0, "seed=%llu run %d (scene %d): %zu differ, first %zu", (unsigned long long)seed, r,
                     scene_of[r], d, first);
    }
    tdm_sched_stats st;
    tdm_sched_get_stats(e, &st);
    cr_assert_eq(st.async_runs, 4);
    cr_assert_geq(st.async_waits, 1); /* run 1's first start */
    tdm_sched_async_destroy(a);
    scene_set_free(&set, e);
    for (int r = 0; r < RUNS; r++) free(q[r]);
    free(got);
    free(want);
    tdm_sched_destroy(e);
}

Test(robot_scene, async_runs_in_flight_match_cpu_engine) { async_runs(NULL); }
Test(robot_scene, async_runs_left_for_the_synchronous_way_match_cpu_engine) { async_runs("40"); }

/* Host lanes (tdm_pooler_set_host): jobs of at most HOST_MAX configurations run alone on a host
 * thread, on the CPU engine, the others on the engine's lanes; every job gets its own scene's
 * answers, a bad job fails alone, and a host job counts against its own work account. HOST_ONE:
 * one job at a time, so a host thread is free for each small one. HOST_CUT: the same, with the
 * small jobs' budget (the latency lane's) at one test: a host job that needs more is run again on
 * the lanes (its answer unchanged), and once its scene's cost is learned the next ones go there
 * at once. HOST_BURST: every job at once: a small job finding both host threads taken goes to the
 * lanes. On the CPU engine, and on the GPU engine where there is one. */
enum { HOST_ONE, HOST_CUT, HOST_BURST };
enum { HOST_MAX = 8, HOST_JOBS = 96 };
static const uint32_t host_sizes[] = {1, 1, 2, 5, 8, 9, 40, 1};

typedef struct host_watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t finished;
    unsigned char *on_host; /* per job: finished on a "tdm-host" thread */
    const tdm_pooler_job *jobs;
} host_watch;

static void host_finished(tdm_pooler_job *j, void *data)
{
    host_watch *w = data;
    char name[16] = "";
    prctl(PR_GET_NAME, name);
    pthread_mutex_lock(&w->mu);
    w->on_host[j - w->jobs] = strcmp(name, "tdm-host") == 0;
    w->finished++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void host_lanes_run(tdm_backend_kind kind, int mode)
{
    int cut = mode == HOST_CUT;
    char why[320] = "";
    tdm_sched *e = sched_with(kind, 2, 2, tdm_sched_config_default().gpu_program_cache, why, sizeof why);
    if (!e) cr_skip_test("no GPU engine: %s", why);
    cr_assert_eq(tdm_sched_host_lanes(e), 2);
    scene_set set;
    scene_set_make(&set, kind == TDM_BACKEND_CPU ? NULL : e);
    enum { N_SIZES = sizeof host_sizes / sizeof host_sizes[0] };
    size_t at[HOST_JOBS + 1];
    at[0] = 0;
    for (int k = 0; k < HOST_JOBS; k++) at[k + 1] = at[k] + host_sizes[k % N_SIZES];
    tdm_pooler_job *jobs = calloc(HOST_JOBS, sizeof *jobs);
    double *q = malloc(sizeof *q * at[HOST_JOBS] * 3);
    tdm_sched_result *got = calloc(at[HOST_JOBS], sizeof *got), *want = malloc(sizeof *want * at[HOST_JOBS]);
    unsigned char *on_host = calloc(HOST_JOBS, 1);
    cr_assert(jobs && q && got && want && on_host);
    for (int k = 0; k < HOST_JOBS; k++) {
        const tdm_robot_scene *rs = set.rs[k % N_SCENES];
        uint32_t n = host_sizes[k % N_SIZES];
        double *qk = batch(rs, n, 0x4057ull + (uint64_t)k, TDM_MODE_BOOL, 1, want + at[k]);
        memcpy(q + at[k] * 3, qk, sizeof *q * n * 3);
        free(qk);
        jobs[k] = (tdm_pooler_job){.scene = rs->scene, .mode = TDM_MODE_BOOL, .max_contacts = 1, .n_queries = n,
                                   .n_tasks = (uint64_t)n * rs->scene->n_checks, .configs = q + at[k] * 3,
                                   .kin = &rs->kin, .results = got + at[k]};
    }
    q[at[10] * 3 + 1] = NAN;   /* job 10: 2 configurations, on a host thread, refused alone */
    jobs[17].max_work = 1;     /* job 17: 1 configuration, on a host thread, over its budget */
    host_watch w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, on_host, jobs};
    tdm_pooler *pl;
    cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, host_finished, NULL, &w, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_host_threads(pl), 2);
    tdm_pooler_set_host(pl, HOST_MAX);
    if (cut) {
        tdm_pooler_fairness f = tdm_pooler_fairness_default();
        f.latency_work = 1;
        tdm_pooler_set_fairness(pl, &f);
    }
    for (int k = 0; k < HOST_JOBS; k++) {
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[k]), TDM_OK);
        pthread_mutex_lock(&w.mu);
        while (mode != HOST_BURST && w.finished < (size_t)k + 1) pthread_cond_wait(&w.cv, &w.mu);
        pthread_mutex_unlock(&w.mu);
    }
    pthread_mutex_lock(&w.mu);
    while (w.finished < HOST_JOBS) pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    tdm_pooler_destroy(pl);
    /* a job cut on a host thread runs again on the lanes: two runs (no job here is sliced) */
    if (cut) cr_assert_gt(st.jobs, HOST_JOBS, "no host job was cut and run again on the lanes");
    else cr_assert_eq(st.jobs, HOST_JOBS, "a job ran twice");
    size_t hosted = 0, moved = 0, colliding = 0;
    for (int k = 0; k < HOST_JOBS; k++) {
        uint32_t n = jobs[k].n_queries;
        if (mode != HOST_ONE)
            cr_assert(!on_host[k] || n <= HOST_MAX, "job %d of %u configurations ran on a host thread", k, n);
        else
            cr_assert_eq(on_host[k], n <= HOST_MAX, "job %d of %u configurations %s on a host thread", k, n,
                         on_host[k] ? "ran" : "did not run");
        hosted += on_host[k];
        moved += !on_host[k] && n <= HOST_MAX;
        if (k == 17 && !on_host[k]) continue; /* its own budget: on a GPU engine's lanes, which count no work */
        if (k == 10 || k == 17) {
            int rc = k == 10 ? TDM_ENONFINITE : TDM_EBUDGET;
            cr_assert_eq(jobs[k].rc, rc, "job %d: rc %d (%s), want %s", k, jobs[k].rc, tdm_strerror(jobs[k].rc),
                         tdm_strerror(rc));
            continue;
        }
        cr_assert_eq(jobs[k].rc, TDM_OK, "job %d: %s", k, tdm_strerror(jobs[k].rc));
        size_t first, d = differences(got + at[k], want + at[k], n, &first);
        cr_assert_eq(d, 0, "seed=%llu job %d (scene %d, %u configurations): %zu differ, first %zu",
                     (unsigned long long)seed, k, k % N_SCENES, n, d, first);
        for (uint32_t i = 0; i < n; i++) colliding += want[at[k] + i].colliding;
    }
    cr_log_info("%zu of %d jobs on the host threads, %zu small ones on the lanes, %zu colliding configurations",
                hosted, HOST_JOBS, moved, colliding);
    if (mode != HOST_ONE) cr_assert_gt(moved, 0, "no small job went to the lanes");
    if (mode == HOST_BURST) cr_assert_gt(hosted, 0, "no job ran on a host thread");
    cr_assert(colliding > 0 && colliding < at[HOST_JOBS], "the jobs need both answers");
    scene_set_free(&set, kind == TDM_BACKEND_CPU ? NULL : e);
    free(jobs);
    free(q);
    free(got);
    free(want);
    free(on_host);
    tdm_sched_destroy(e);
}

/* A job asking only whether any of its configurations collides (tdm_work.any_stop: a planner's
 * motion round in any-state mode) on the CPU engine: every configuration up to the first colliding
 * one is answered as alone, and after it none is answered colliding that is free; on a host lane
 * (one thread, in order) the traversals after the first collision are not run, so most later
 * colliding configurations are answered free (one inside a primitive is still found colliding,
 * from the links' poses alone, perhaps by another pair); without the flag every answer is its own. */
Test(robot_scene, any_stop_answers_after_the_first_colliding_configuration_unrun)
{
    char why[320];
    tdm_sched *e = sched_with(TDM_BACKEND_CPU, 0, 1, tdm_sched_config_default().gpu_program_cache, why, sizeof why);
    cr_assert_eq(tdm_sched_host_lanes(e), 1);
    tdm_robot_scene *rs = make_scene();
    enum { N = 256 };
    tdm_sched_result want[N], got[N];
    double *q = batch(rs, N, 0xa57ull, TDM_MODE_BOOL, 1, want);
    size_t first = N, later = 0;
    for (size_t i = 0; i < N; i++) {
        if (want[i].colliding && first == N) first = i;
        else if (want[i].colliding) later++;
    }
    cr_assert(first < N / 4 && later > 0, "the batch needs an early colliding configuration and later ones (%zu, %zu)",
              first, later);
    for (int way = 0; way < 3; way++) { /* host lane with any_stop, the pool with it, the host lane without */
        tdm_work w = {0, 0, 0, 0, way < 2, 0};
        tdm_sched_query proto = {rs->scene, NULL, TDM_MODE_BOOL, 1, NULL, &w};
        memset(got, 0xab, sizeof got);
        int rc = way == 1 ? tdm_sched_run_configs(e, &proto, &rs->kin, q, N, got)
                          : tdm_sched_run_configs_host(e, &proto, &rs->kin, q, N, got);
        cr_assert_eq(rc, TDM_OK, "way %d: %s", way, tdm_strerror(rc));
        size_t unrun = 0;
        for (size_t i = 0; i < N; i++) {
            const tdm_sched_result *a = &got[i], *b = &want[i];
            int same = a->colliding == b->colliding && a->object_a == b->object_a && a->object_b == b->object_b;
            if (i <= first || way == 2) {
                cr_assert(same, "way %d, configuration %zu (the first colliding %zu): got %u (%u,%u), want %u (%u,%u)",
                          way, i, first, a->colliding, a->object_a, a->object_b, b->colliding, b->object_a, b->object_b);
            } else {
                /* unrun, so free; or colliding, as it is (a containment in a primitive is found from
                   the links' poses, without a traversal, workpile/solid.h: then its pair may not be
                   the first colliding check's, which was not run) */
                cr_assert(!a->colliding || b->colliding, "way %d, configuration %zu: got %u (%u,%u), want %u (%u,%u)",
                          way, i, a->colliding, a->object_a, a->object_b, b->colliding, b->object_a, b->object_b);
                unrun += b->colliding && !a->colliding;
            }
        }
        if (way == 0) cr_assert_gt(unrun, later / 2, "later colliding configurations unrun: %zu of %zu", unrun, later);
    }
    free(q);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
}

Test(robot_scene, host_lanes_answer_small_jobs_on_cpu_engine) { host_lanes_run(TDM_BACKEND_CPU, HOST_ONE); }
Test(robot_scene, host_lanes_answer_small_jobs_on_gpu_engine) { host_lanes_run(TDM_BACKEND_GPU, HOST_ONE); }
Test(robot_scene, host_lanes_hand_costly_jobs_to_the_lanes_on_cpu_engine) { host_lanes_run(TDM_BACKEND_CPU, HOST_CUT); }
Test(robot_scene, host_lanes_hand_costly_jobs_to_the_lanes_on_gpu_engine) { host_lanes_run(TDM_BACKEND_GPU, HOST_CUT); }
Test(robot_scene, host_lanes_pass_a_burst_on_to_the_lanes_on_cpu_engine) { host_lanes_run(TDM_BACKEND_CPU, HOST_BURST); }
Test(robot_scene, host_lanes_pass_a_burst_on_to_the_lanes_on_gpu_engine) { host_lanes_run(TDM_BACKEND_GPU, HOST_BURST); }

/* ---- the CLI ---- */

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

#define N_CLI 40

Test(robot_scene, cli_check_urdf)
{
    gen_rng g = {seed ^ 0x51ull};
    double q[N_CLI][3];
    uint32_t want_bool[N_CLI], want_contacts[N_CLI];
    size_t want_colliding = 0;
    FILE *f = fopen(path("configs.txt"), "w");
    cr_assert_not_null(f);
    fprintf(f, "# j1 j2 j3\n\n");
    for (int i = 0; i < N_CLI; i++) {
        arm_fixture_random_config(&g, q[i]);
        fprintf(f, "%.17g %.17g %.17g\n", q[i][0], q[i][1], q[i][2]);
        if (i == 7) fprintf(f, "   \n# a comment\n");
        uint32_t count[N_OBJ][N_OBJ], total = 0;
        uint8_t inside[N_OBJ][N_OBJ];
        int contained = 0;
        oracle(q[i], count, inside);
        for (int a = 0; a < N_OBJ; a++)
            for (int b = a + 1; b < N_OBJ; b++)
                if (oracle_checked(a, b)) total += count[a][b], contained |= inside[a][b];
        want_contacts[i] = total;
        want_bool[i] = total > 0 || contained;
        want_colliding += want_bool[i];
    }
    fclose(f);
    static const char *const modes[2] = {"bool", "contacts"};
    for (int m = 0; m < 2; m++) {
        const char *args[] = {"check", "--urdf", path("arm.urdf"), "--srdf", path("arm.srdf"), "--world",
                              path("scene.yaml"), "--configs", path("configs.txt"), "--mode", modes[m], "--threads",
                              "2", "--out", path("out.txt"), NULL};
        run_result r = run(args);
        cr_assert_eq(r.status, 0, "tandem check --urdf (%s) failed: %s", modes[m], r.err);
        char **lines;
        size_t k = gen_split_lines(r.out, &lines);
        cr_assert(k >= 1);
        unsigned long long nq, nc;
        double s, qps;
        cr_assert_eq(sscanf(lines[k - 1], "queries=%llu seconds=%lf qps=%lf colliding=%llu", &nq, &s, &qps, &nc), 4,
                     "summary: %s", lines[k - 1]);
        cr_assert_eq(nq, N_CLI);
        cr_assert_eq(nc, want_colliding);
        free(lines);
        char *out = gen_read_file(path("out.txt"), NULL);
        cr_assert_not_null(out);
        k = gen_split_lines(out, &lines);
        cr_assert_eq(k, N_CLI);
        for (int i = 0; i < N_CLI; i++) {
            unsigned long v = strtoul(lines[i], NULL, 10);
            cr_assert_eq(v, m ? want_contacts[i] : want_bool[i], "%s, configuration %d: %lu, oracle %u", modes[m], i,
                         v, m ? want_contacts[i] : want_bool[i]);
        }
        free(lines);
        free(out);
        free(r.out);
        free(r.err);
    }

    /* Bad lines: an error naming the line, exit 1, nothing written. */
    static const struct { const char *text, *needle; } bad[] = {
        {"0 0 0\n# x\n0.1 0.2\n", "configs.txt:3: 2 values, the robot has 3 active joints"},
        {"0 0 0 0\n", "configs.txt:1: 4 values"},
        {"\n0 nan 0\n", "configs.txt:2: value 2 is not finite"},
        {"0 0 x\n", "configs.txt:1: value 3 is not a number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file("configs.txt", bad[i].text);
        unlink(path("out2.txt"));
        const char *args[] = {"check", "--urdf", path("arm.urdf"), "--world", path("scene.yaml"), "--configs",
                              path("configs.txt"), "--mode", "bool", "--out", path("out2.txt"), NULL};
        run_result r = run(args);
        cr_assert_eq(r.status, 1, "bad config %zu: exit %d", i, r.status);
        cr_assert_not_null(strstr(r.err, bad[i].needle), "bad config %zu: stderr '%s' lacks '%s'", i, r.err,
                           bad[i].needle);
        cr_assert_eq(access(path("out2.txt"), F_OK), -1, "nothing is written");
        cr_assert_eq(r.out[0], 0, "nothing on stdout");
        free(r.out);
        free(r.err);
    }
    /* A usage error: --configs missing. */
    const char *args[] = {"check", "--urdf", path("arm.urdf"), "--world", path("scene.yaml"), "--mode", "bool", NULL};
    run_result r = run(args);
    cr_assert_eq(r.status, 2);
    free(r.out);
    free(r.err);
}

/* ---- the express ring (tdm_sched_express_*) ---- */

/* Requests of several threads through the ring: request r of a job on scenes rs[0 .. n_scenes)
 * is on scene express_scene_of(r) and takes that scene's configurations
 * [slice * XS, slice * XS + express_size(slice)), slice = express_slice_of(r). */
typedef struct express_job {
    tdm_sched *e;
    const tdm_robot_scene *const *rs;
    size_t n_scenes;              /* 1, or 4: four threads taking every fourth request go through them in turn */
    double *const *q;             /* per scene */
    tdm_sched_result *const *got; /* per scene */
    size_t requests, from, step;  /* this thread's requests: from, from + step, ... */
    tdm_mode mode;
    uint32_t cap;
    uint64_t given_back;
    int rc;
} express_job;

/* Sizes of the slices, 1 to XS (a planner's state, a motion's round). */
#define XS TDM_SCHED_EXPRESS_MAX
static size_t express_size(size_t k) { return (size_t[]){1, 3, XS, 17, 2, 100, 1, 64}[k % 8]; }

/* Of four scenes, request r = 16 a + 4 b + c (b, c < 4) is on scene b, slice 4 a + c: each scene's
 * slices are each taken once (slices a multiple of 4). */
static size_t express_scene_of(const express_job *j, size_t r) { return j->n_scenes == 1 ? 0 : (r / 4) % 4; }
static size_t express_slice_of(const express_job *j, size_t r) { return j->n_scenes == 1 ? r : (r / 16) * 4 + r % 4; }

/* Publishes this thread's requests, up to 24 in flight, and polls until each is in; one
 * given back runs the pooled way. */
static void *express_thread(void *arg)
{
    express_job *j = arg;
    enum { IN_FLIGHT = 24 };
    tdm_sched_express x[IN_FLIGHT];
    size_t req[IN_FLIGHT];
    int busy[IN_FLIGHT] = {0}, n_busy = 0;
    size_t next = j->from;
    while ((next < j->requests || n_busy) && j->rc == TDM_OK) {
        for (int s = 0; s < IN_FLIGHT && next < j->requests; s++) {
            if (busy[s]) continue;
            size_t k = express_scene_of(j, next), slice = express_slice_of(j, next);
            const tdm_robot_scene *rs = j->rs[k];
            int rc = tdm_sched_express_submit(j->e, rs->scene, &rs->kin, j->q[k] + slice * XS * 3, express_size(slice),
                                              j->mode, j->cap, &x[s]);
            if (rc == TDM_EAGAIN) break; /* the ring, or every place of the table, is taken */
            if (rc != TDM_OK) {
                j->rc = rc;
                break;
            }
            req[s] = next;
            busy[s] = 1, n_busy++;
            next += j->step;
        }
        tdm_sched_express_keep(j->e);
        for (int s = 0; s < IN_FLIGHT; s++) {
            if (!busy[s]) continue;
            size_t k = express_scene_of(j, req[s]), slice = express_slice_of(j, req[s]);
            const tdm_robot_scene *rs = j->rs[k];
            tdm_sched_result *out = j->got[k] + slice * XS;
            int rc = tdm_sched_express_poll(j->e, &x[s], rs->scene, j->mode, out);
            if (rc == 0) continue;
            if (rc == TDM_EAGAIN) {
                j->given_back++;
                tdm_sched_query proto = {rs->scene, NULL, j->mode, j->cap, NULL, NULL};
                rc = tdm_sched_run_configs(j->e, &proto, &rs->kin, j->q[k] + slice * XS * 3, express_size(slice), out);
            }
            if (rc < 0) j->rc = rc;
            busy[s] = 0, n_busy--;
        }
    }
    return NULL;
}

/* A planner's few configurations through the express ring from 4 threads at once, requests
 * of 1 to XS configurations, many in flight: every answer the CPU engine's, in bool and in
 * contacts mode; with `room` (TDM_GPU_EXPRESS_ROOM) a block's frontier is small enough that
 * many configurations come back given back, and run the pooled way. */
static void express_on_gpu(const char *room)
{
    if (room) setenv("TDM_GPU_EXPRESS_ROOM", room, 1);
    char why[320] = "";
    tdm_sched *e = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    if (!e) {
        if (room) unsetenv("TDM_GPU_EXPRESS_ROOM");
        cr_skip_test("no GPU engine: %s", why);
    }
    cr_assert_eq(tdm_sched_express_start(e, 16), TDM_OK);
    if (room) unsetenv("TDM_GPU_EXPRESS_ROOM");
    cr_assert(tdm_sched_express_on(e));
    tdm_robot_scene *rs = make_scene();
    for (uint32_t i = 0; i < rs->n_objects; i++) cr_assert_eq(tdm_sched_mesh_add(e, rs->bvhs[i]), TDM_OK);
    const size_t n = XS * 96;
    const tdm_robot_scene *one = rs;
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    tdm_sched_result *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    cr_assert(want && got);
    /* bad input: nothing published */
    tdm_sched_express bad;
    double q1[3] = {0, 0, 0};
    cr_assert_eq(tdm_sched_express_submit(e, rs->scene, &rs->kin, q1, 0, TDM_MODE_BOOL, 1, &bad), TDM_EINVAL);
    cr_assert_eq(tdm_sched_express_submit(e, rs->scene, &rs->kin, q1, TDM_SCHED_EXPRESS_MAX + 1, TDM_MODE_BOOL, 1, &bad),
                 TDM_EINVAL);
    for (int m = 0; m < 2; m++) {
        double *q = batch(rs, n, 0xe4e5ull + (uint64_t)m, modes[m], caps[m], want);
        memset(got, 0xab, n * sizeof *got);
        tdm_sched_stats before, after;
        tdm_sched_get_stats(e, &before);
        express_job jobs[4];
        pthread_t th[4];
        for (int t = 0; t < 4; t++) {
            jobs[t] = (express_job){e, &one, 1, &q, &got, n / XS, (size_t)t, 4, modes[m], caps[m], 0, TDM_OK};
            cr_assert_eq(pthread_create(&th[t], NULL, express_thread, &jobs[t]), 0);
        }
        uint64_t given_back = 0;
        for (int t = 0; t < 4; t++) {
            pthread_join(th[t], NULL);
            cr_assert_eq(jobs[t].rc, TDM_OK, "thread %d: %s", t, tdm_strerror(jobs[t].rc));
            given_back += jobs[t].given_back;
        }
        tdm_sched_get_stats(e, &after);
        size_t checked = 0, colliding = 0, d = 0, first = 0;
        for (size_t k = 0; k < n / XS; k++)
            for (size_t i = k * XS; i < k * XS + express_size(k); i++) {
                const tdm_sched_result *a = &got[i], *b = &want[i];
                checked++;
                colliding += b->colliding;
                if (a->colliding != b->colliding || a->object_a != b->object_a || a->object_b != b->object_b ||
                    a->contacts != b->contacts || a->truncated != b->truncated) {
                    if (!d) first = i;
                    d++;
                }
            }
        uint64_t answered = after.express_configs - before.express_configs,
                 back = after.express_overflows - before.express_overflows;
        cr_log_info("express %s (room %s): %zu configurations, %zu colliding, %llu answered by the ring, %llu given "
                    "back (%llu requests), %llu launches; %zu differ", m ? "contacts" : "bool", room ? room : "default",
                    checked, colliding, (unsigned long long)answered, (unsigned long long)back,
                    (unsigned long long)given_back,
                    (unsigned long long)(after.express_launches - before.express_launches), d);
        cr_assert_eq(d, 0, "seed=%llu %s: %zu of %zu differ, first %zu: got %u (%u,%u) %u/%u, want %u (%u,%u) %u/%u",
                     (unsigned long long)seed, m ? "contacts" : "bool", d, checked, first, got[first].colliding,
                     got[first].object_a, got[first].object_b, got[first].contacts, got[first].truncated,
                     want[first].colliding, want[first].object_a, want[first].object_b, want[first].contacts,
                     want[first].truncated);
        cr_assert(colliding > 0 && colliding < checked, "the batch needs both answers");
        cr_assert_eq(answered + back, checked, "every configuration through the ring");
        if (room) cr_assert_gt(back, 0, "a small room gives some back");
        else cr_assert_gt(answered, checked / 2, "most answered by the ring");
        free(q);
    }
    free(want);
    free(got);
    for (uint32_t i = 0; i < rs->n_objects; i++) tdm_sched_mesh_remove(e, rs->bvhs[i]);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
}

Test(robot_scene, configs_through_the_express_ring_match_cpu_engine) { express_on_gpu(NULL); }
Test(robot_scene, configs_given_back_by_the_express_ring_match_cpu_engine) { express_on_gpu("24"); }

/* ---- programs replaced while the ring runs ---- */

/* Four robot scenes (two worlds of other checks and fixed objects, the fixture's world
 * twice) through a ring whose program table has two places (TDM_GPU_EXPRESS_PROGS), from
 * four threads at once, each thread's requests on the four scenes in turn: programs are
 * replaced all the time while the ring's launches run (none is stopped for it), and every
 * answer is still its own scene's CPU engine answer, in bool and in contacts mode. A block
 * reading a replaced program's entry or arrays from its SM's L1 would answer for another
 * scene. */
static void programs_replaced(const char *places, const char *arena)
{
    setenv("TDM_GPU_EXPRESS_PROGS", places, 1);
    if (arena) setenv("TDM_GPU_EXPRESS_ARENA", arena, 1);
    char why[320] = "";
    tdm_sched *e = sched_of(TDM_BACKEND_GPU, why, sizeof why);
    if (!e) {
        unsetenv("TDM_GPU_EXPRESS_PROGS");
        unsetenv("TDM_GPU_EXPRESS_ARENA");
        cr_skip_test("no GPU engine: %s", why);
    }
    cr_assert_eq(tdm_sched_express_start(e, 16), TDM_OK);
    unsetenv("TDM_GPU_EXPRESS_PROGS");
    unsetenv("TDM_GPU_EXPRESS_ARENA");
    scene_set set;
    scene_set_make(&set, e);
    enum { SLICES = 24 }; /* a multiple of 4 (express_slice_of) */
    _Static_assert(N_SCENES == 4, "express_scene_of spreads requests over four scenes");
    const tdm_robot_scene *rs[N_SCENES];
    for (int k = 0; k < N_SCENES; k++) rs[k] = set.rs[k];
    const size_t n = XS * SLICES;
    const tdm_mode modes[2] = {TDM_MODE_BOOL, TDM_MODE_CONTACTS};
    const uint32_t caps[2] = {1, 3};
    for (int m = 0; m < 2; m++) {
        double *q[N_SCENES];
        tdm_sched_result *want[N_SCENES], *got[N_SCENES];
        for (int k = 0; k < N_SCENES; k++) {
            want[k] = malloc(n * sizeof *want[k]);
            got[k] = malloc(n * sizeof *got[k]);
            cr_assert(want[k] && got[k]);
            q[k] = batch(set.rs[k], n, 0x5ce7ull + 16 * (uint64_t)k + (uint64_t)m, modes[m], caps[m], want[k]);
            memset(got[k], 0xab, n * sizeof *got[k]);
        }
        tdm_sched_stats before, after;
        tdm_sched_get_stats(e, &before);
        express_job jobs[4];
        pthread_t th[4];
        for (int t = 0; t < 4; t++) {
            jobs[t] = (express_job){e, rs, N_SCENES, q, got, (size_t)SLICES * N_SCENES, (size_t)t, 4, modes[m], caps[m],
                                    0, TDM_OK};
            cr_assert_eq(pthread_create(&th[t], NULL, express_thread, &jobs[t]), 0);
        }
        for (int t = 0; t < 4; t++) {
            pthread_join(th[t], NULL);
            cr_assert_eq(jobs[t].rc, TDM_OK, "thread %d: %s", t, tdm_strerror(jobs[t].rc));
        }
        tdm_sched_get_stats(e, &after);
        size_t checked = 0, colliding = 0, d = 0;
        for (int k = 0; k < N_SCENES; k++)
            for (size_t slice = 0; slice < SLICES; slice++)
                for (size_t i = slice * XS; i < slice * XS + express_size(slice); i++) {
                    const tdm_sched_result *a = &got[k][i], *b = &want[k][i];
                    checked++;
                    colliding += b->colliding;
                    if (a->colliding != b->colliding || a->object_a != b->object_a || a->object_b != b->object_b ||
                        a->contacts != b->contacts || a->truncated != b->truncated) {
                        if (!d)
                            cr_log_error("scene %d configuration %zu: got %u (%u,%u) %u/%u, want %u (%u,%u) %u/%u", k, i,
                                         a->colliding, a->object_a, a->object_b, a->contacts, a->truncated, b->colliding,
                                         b->object_a, b->object_b, b->contacts, b->truncated);
                        d++;
                    }
                }
        uint64_t uploads = after.express_programs - before.express_programs,
                 answered = after.express_configs - before.express_configs,
                 back = after.express_overflows - before.express_overflows;
        cr_log_info("express, programs replaced (%s places, arena %s; %s): %zu configurations of %d scenes, %zu colliding, %llu answered by "
                    "the ring, %llu given back, %llu programs uploaded, %llu launches; %zu differ",
                    places, arena ? arena : "64 MiB", m ? "contacts" : "bool", checked, N_SCENES, colliding, (unsigned long long)answered,
                    (unsigned long long)back, (unsigned long long)uploads,
                    (unsigned long long)(after.express_launches - before.express_launches), d);
        cr_assert_eq(d, 0, "seed=%llu %s: %zu of %zu differ", (unsigned long long)seed, m ? "contacts" : "bool", d,
                     checked);
        cr_assert(colliding > 0 && colliding < checked, "the batch needs both answers");
        cr_assert_eq(answered + back, checked, "every configuration through the ring");
        cr_assert_gt(uploads, N_SCENES, "%s places, arena %s, four scenes: programs replaced (%llu uploads)", places,
                     arena ? arena : "64 MiB", (unsigned long long)uploads);
        for (int k = 0; k < N_SCENES; k++) {
            free(q[k]);
            free(want[k]);
            free(got[k]);
        }
    }
    scene_set_free(&set, e);
    tdm_sched_destroy(e);
}

Test(robot_scene, express_ring_programs_replaced_while_it_runs_match_cpu_engine) { programs_replaced("2", NULL); }

/* The same with a place for every scene but an arena (TDM_GPU_EXPRESS_ARENA) of 12 KiB, which
 * holds any one of the four programs (~6 KB) and not all four: programs are evicted for room
 * in the arena, their extents placed again only after the launches that could read them have
 * ended (until then a request gets TDM_EAGAIN and tries again). */
Test(robot_scene, express_ring_programs_evicted_for_arena_room_match_cpu_engine) { programs_replaced("4", "12288"); }

Test(robot_scene, express_ring_needs_a_gpu_engine)
{
    char why[320];
    tdm_sched *e = sched_of(TDM_BACKEND_CPU, why, sizeof why);
    cr_assert_eq(tdm_sched_express_start(e, 0), TDM_OK, "0 blocks: off");
    cr_assert_eq(tdm_sched_express_start(e, 16), TDM_ENODEV);
    cr_assert(!tdm_sched_express_on(e));
    tdm_robot_scene *rs = make_scene();
    tdm_sched_express x;
    double q[3] = {0, 0, 0};
    cr_assert_eq(tdm_sched_express_submit(e, rs->scene, &rs->kin, q, 1, TDM_MODE_BOOL, 1, &x), TDM_ENODEV);
    tdm_sched_destroy(e);
    tdm_robot_scene_destroy(rs);
}
