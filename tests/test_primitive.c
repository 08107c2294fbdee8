/* geom/primitive.h: primitives as meshes that contain the true shapes, and the
 * exact point-in-solid test.
 *
 * The references here are independent of primitive.c: the distance to and the
 * support function of each true shape in closed form, exact orientation
 * predicates on the mesh's float vertices, and, for the solid test, exact integer
 * arithmetic (__int128) on dyadic inputs and __float128 on random doubles.
 *
 * Every random test prints its seed (cr_log_info and in assertion messages); set
 * TDM_TEST_SEED to replay with another one. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "geom/predicates.h"
#include "geom/primitive.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x5eed0f9e0a11c0deull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(primitive, .init = suite_init);

static const double PI = 3.14159265358979323846;
static const char *const type_name[] = {"?", "box", "sphere", "cylinder", "capsule", "cone"};

/* A mesh pointer that a failing call must overwrite with NULL. */
#define SENTINEL ((tdm_mesh *)(uintptr_t)0x1)

/* ---- the true shapes, in closed form ----------------------------------------- */

/* Distance from (rho, z) to the segment (x0, z0)-(x1, z1) of a cone's half-section. */
static double seg_dist(double rho, double z, double x0, double z0, double x1, double z1)
{
    double ux = x1 - x0, uz = z1 - z0, px = rho - x0, pz = z - z0;
    double t = fmin(fmax((px * ux + pz * uz) / (ux * ux + uz * uz), 0), 1);
    return hypot(px - t * ux, pz - t * uz);
}

/* A cone's signed distance in its half-section (rho, z): the nearer of its base
 * and its side; negative inside. */
static double cone_signed_dist(double h, double r, double rho, double z)
{
    double d = fmin(seg_dist(rho, z, 0, -0.5 * h, r, -0.5 * h), seg_dist(rho, z, r, -0.5 * h, 0, 0.5 * h));
    int inside = z >= -0.5 * h && rho * h <= r * (0.5 * h - z);
    return inside ? -d : d;
}

/* Signed distance from q to the true surface: negative inside. */
static double signed_dist(const tdm_primitive *p, tdm_dvec3 q)
{
    const double *d = p->dims;
    double e[3];
    int n;
    switch (p->type) {
    case TDM_PRIMITIVE_SPHERE: return tdm_d3_len(q) - d[0];
    case TDM_PRIMITIVE_CAPSULE: {
        double ez = fmax(fabs(q.z) - 0.5 * d[1], 0);
        return sqrt(q.x * q.x + q.y * q.y + ez * ez) - d[0];
    }
    case TDM_PRIMITIVE_CONE: return cone_signed_dist(d[0], d[1], sqrt(q.x * q.x + q.y * q.y), q.z);
    case TDM_PRIMITIVE_BOX:
        n = 3;
        e[0] = fabs(q.x) - 0.5 * d[0], e[1] = fabs(q.y) - 0.5 * d[1], e[2] = fabs(q.z) - 0.5 * d[2];
        break;
    default: /* cylinder */
        n = 2;
        e[0] = sqrt(q.x * q.x + q.y * q.y) - d[1], e[1] = fabs(q.z) - 0.5 * d[0];
        break;
    }
    double in = -INFINITY, out2 = 0;
    for (int i = 0; i < n; i++) {
        in = fmax(in, e[i]);
        out2 += e[i] > 0 ? e[i] * e[i] : 0;
    }
    return in <= 0 ? in : sqrt(out2);
}

/* max over the true solid of n . x */
static double support(const tdm_primitive *p, tdm_dvec3 n)
{
    const double *d = p->dims;
    switch (p->type) {
    case TDM_PRIMITIVE_BOX: return 0.5 * (fabs(n.x) * d[0] + fabs(n.y) * d[1] + fabs(n.z) * d[2]);
    case TDM_PRIMITIVE_SPHERE: return d[0] * tdm_d3_len(n);
    case TDM_PRIMITIVE_CYLINDER: return d[1] * sqrt(n.x * n.x + n.y * n.y) + 0.5 * d[0] * fabs(n.z);
    case TDM_PRIMITIVE_CONE: /* the apex, or the rim's point towards n */
        return fmax(0.5 * d[0] * n.z, d[1] * sqrt(n.x * n.x + n.y * n.y) - 0.5 * d[0] * n.z);
    default: return d[0] * tdm_d3_len(n) + 0.5 * d[1] * fabs(n.z);
    }
}

static tdm_dvec3 unit_vector(gen_rng *g)
{
    double z = gen_range(g, -1, 1), ph = gen_range(g, 0, 2 * PI), s = sqrt(1 - z * z);
    return tdm_d3(s * cos(ph), s * sin(ph), z);
}

/* A random point on the true surface, about uniform by area, a quarter of them on
 * the circles where a cylinder's side meets its caps (a cone's rim; and a few at
 * its apex). */
static tdm_dvec3 surface_point(gen_rng *g, const tdm_primitive *p)
{
    const double *d = p->dims;
    double ph = gen_range(g, 0, 2 * PI);
    switch (p->type) {
    case TDM_PRIMITIVE_SPHERE: return tdm_d3_scale(unit_vector(g), d[0]);
    case TDM_PRIMITIVE_CAPSULE: {
        double r = d[0], l = d[1];
        if (gen_uniform(g) * (4 * r + 2 * l) < 2 * l) /* side area 2 pi r l, ends 4 pi r^2 */
            return tdm_d3(r * cos(ph), r * sin(ph), gen_range(g, -0.5 * l, 0.5 * l));
        tdm_dvec3 u = tdm_d3_scale(unit_vector(g), r);
        u.z += u.z >= 0 ? 0.5 * l : -0.5 * l;
        return u;
    }
    case TDM_PRIMITIVE_CONE: {
        double h = d[0], r = d[1], pick = gen_uniform(g), side = r * hypot(r, h); /* areas over pi */
        if (pick < 0.05) return tdm_d3(0, 0, 0.5 * h);
        if (pick < 0.3) return tdm_d3(r * cos(ph), r * sin(ph), -0.5 * h);
        if (gen_uniform(g) * (side + r * r) < side) {
            double f = sqrt(gen_uniform(g)); /* from the apex, uniform by area */
            return tdm_d3(f * r * cos(ph), f * r * sin(ph), 0.5 * h - f * h);
        }
        double rho = r * sqrt(gen_uniform(g));
        return tdm_d3(rho * cos(ph), rho * sin(ph), -0.5 * h);
    }
    case TDM_PRIMITIVE_CYLINDER: {
        double h = d[0], r = d[1], pick = gen_uniform(g);
        double z = gen_uniform(g) < 0.5 ? 0.5 * h : -0.5 * h;
        if (pick < 0.25) return tdm_d3(r * cos(ph), r * sin(ph), z);
        if (gen_uniform(g) * (r + h) < h) return tdm_d3(r * cos(ph), r * sin(ph), gen_range(g, -0.5 * h, 0.5 * h));
        double rho = r * sqrt(gen_uniform(g));
        return tdm_d3(rho * cos(ph), rho * sin(ph), z);
    }
    default: { /* box: a face, then a point on it */
        int a = (int)gen_int(g, 0, 2), s = gen_uniform(g) < 0.5 ? -1 : 1;
        double c[3];
        for (int i = 0; i < 3; i++) c[i] = gen_range(g, -0.5, 0.5) * d[i];
        c[a] = 0.5 * s * d[a];
        return tdm_d3(c[0], c[1], c[2]);
    }
    }
}

static double log_uniform(gen_rng *g, double lo, double hi) { return exp(gen_range(g, log(lo), log(hi))); }

static double clamp_dim(double v) { return fmin(fmax(v, TDM_PRIMITIVE_MIN_DIM), TDM_PRIMITIVE_MAX_DIM); }

/* A curved primitive: radius log-uniform over the whole allowed range (tiny and
 * huge ones included), length (height) a log-uniform multiple of it within
 * [1/aspect, aspect]. */
static tdm_primitive random_curved(gen_rng *g, tdm_primitive_type type, double aspect)
{
    double r = log_uniform(g, TDM_PRIMITIVE_MIN_DIM, TDM_PRIMITIVE_MAX_DIM);
    double l = clamp_dim(r * log_uniform(g, 1 / aspect, aspect));
    if (type == TDM_PRIMITIVE_CAPSULE) l = fmin(l, TDM_PRIMITIVE_MAX_CAPSULE_ASPECT * r);
    switch (type) {
    case TDM_PRIMITIVE_SPHERE: return tdm_primitive_sphere(r);
    case TDM_PRIMITIVE_CYLINDER: return tdm_primitive_cylinder(l, r);
    case TDM_PRIMITIVE_CONE: return tdm_primitive_cone(l, r);
    default: return tdm_primitive_capsule(r, l);
    }
}

static void describe(char *buf, size_t len, const tdm_primitive *p, double tol)
{
    snprintf(buf, len, "%s(%.17g, %.17g, %.17g) tol %g seed %llu", type_name[p->type], p->dims[0], p->dims[1],
             p->dims[2], tol, (unsigned long long)seed);
}

/* ---- checks on a mesh ------------------------------------------------------------ */

static tdm_dvec3 vert(const tdm_mesh *m, uint32_t i)
{
    return tdm_d3(m->verts[3 * i], m->verts[3 * i + 1], m->verts[3 * i + 2]);
}

typedef struct edge { uint64_t key; uint32_t tri; } edge;

static int edge_cmp(const void *a, const void *b)
{
    uint64_t x = ((const edge *)a)->key, y = ((const edge *)b)->key;
    return x < y ? -1 : x > y;
}

/* (c) m is a valid tdm_mesh, closed and consistently oriented (every directed edge
 * once, its reverse once), a topological sphere (V - E + F = 2, every vertex
 * used), every triangle facing away from the origin (which is inside every
 * primitive), and convex: at every edge the far vertex of the neighbouring
 * triangle is on or behind the plane of the triangle (exactly, or in front by no
 * more than the rounding of the vertices to float: 2^-22 of the largest
 * coordinate, where the two triangles are coplanar but for that rounding). */
static void check_closed_convex(const tdm_mesh *m, const char *what)
{
    char err[256] = "";
    tdm_mesh *copy;
    CHECK(tdm_mesh_create(m->verts, m->n_verts, m->tris, m->n_tris, NULL, &copy, err, sizeof err) == TDM_OK,
          "%s: tdm_mesh_create refuses the mesh: %s", what, err);
    tdm_mesh_free(copy);

    /* a vertex rounded to float moves by up to 2^-24 of its size: nearly
     * coplanar neighbours may fold by a few times that */
    double big = 0, worst_fold = 0;
    long folds = 0;
    for (uint32_t i = 0; i < 3 * m->n_verts; i++) big = fmax(big, fabs((double)m->verts[i]));
    double fold = ldexp(big, -22);
    uint32_t nt = m->n_tris;
    edge *e = malloc(sizeof *e * 3 * (size_t)nt);
    char *used = calloc(m->n_verts, 1);
    cr_assert(e && used);
    tdm_dvec3 origin = tdm_d3(0, 0, 0);
    for (uint32_t t = 0; t < nt; t++) {
        const uint32_t *v = m->tris + 3 * (size_t)t;
        CHECK(v[0] != v[1] && v[1] != v[2] && v[2] != v[0], "%s: triangle %u repeats a vertex", what, t);
        for (int k = 0; k < 3; k++) {
            used[v[k]] = 1;
            e[3 * (size_t)t + k].key = (uint64_t)v[k] << 32 | v[(k + 1) % 3];
            e[3 * (size_t)t + k].tri = t;
        }
        CHECK(tdm_orient3d(vert(m, v[0]), vert(m, v[1]), vert(m, v[2]), origin) > 0,
              "%s: triangle %u does not face away from the centre", what, t);
    }
    for (uint32_t i = 0; i < m->n_verts; i++) CHECK(used[i], "%s: vertex %u is in no triangle", what, i);
    qsort(e, 3 * (size_t)nt, sizeof *e, edge_cmp);
    for (size_t i = 1; i < 3 * (size_t)nt; i++)
        CHECK(e[i].key != e[i - 1].key, "%s: directed edge %u->%u used twice (inconsistent orientation)", what,
              (uint32_t)(e[i].key >> 32), (uint32_t)e[i].key);
    for (size_t i = 0; i < 3 * (size_t)nt; i++) {
        uint32_t a = (uint32_t)(e[i].key >> 32), b = (uint32_t)e[i].key;
        edge want = {(uint64_t)b << 32 | a, 0};
        const edge *rev = bsearch(&want, e, 3 * (size_t)nt, sizeof *e, edge_cmp);
        CHECK(rev, "%s: edge %u->%u has no reverse: the mesh is not closed", what, a, b);
        const uint32_t *t = m->tris + 3 * (size_t)e[i].tri, *s = m->tris + 3 * (size_t)rev->tri;
        uint32_t w = s[0] != a && s[0] != b ? s[0] : (s[1] != a && s[1] != b ? s[1] : s[2]);
        if (tdm_orient3d(vert(m, t[0]), vert(m, t[1]), vert(m, t[2]), vert(m, w)) >= 0) continue;
        /* w in front: only by the rounding of nearly coplanar vertices to float */
        tdm_dvec3 p0 = vert(m, t[0]), n = tdm_d3_cross(tdm_d3_sub(vert(m, t[1]), p0), tdm_d3_sub(vert(m, t[2]), p0));
        double h = tdm_d3_dot(n, tdm_d3_sub(vert(m, w), p0)) / tdm_d3_len(n);
        CHECK(h <= fold, "%s: the mesh is not convex at edge %u-%u: %u is %.3g in front", what, a, b, w, h);
        folds++;
        worst_fold = fmax(worst_fold, h);
    }
    if (folds) cr_log_info("%s: %ld edges concave by float rounding, at most %.3g", what, folds / 2, worst_fold);
    /* closed and 2-manifold: E = 3F/2 */
    CHECK((int64_t)m->n_verts - 3 * (int64_t)nt / 2 + nt == 2, "%s: V - E + F = %lld, not 2", what,
          (long long)((int64_t)m->n_verts - 3 * (int64_t)nt / 2 + nt));
    free(e);
    free(used);
}

/* (a), for every face at once: the plane of every triangle (float vertices, the
 * normal n from their differences) lies at or beyond the true solid's support in
 * direction n. With convexity, this is the containment of the whole solid. */
static void check_support(const tdm_mesh *m, const tdm_primitive *p, const char *what)
{
    for (uint32_t t = 0; t < m->n_tris; t++) {
        const uint32_t *v = m->tris + 3 * (size_t)t;
        tdm_dvec3 a = vert(m, v[0]), b = vert(m, v[1]), c = vert(m, v[2]);
        tdm_dvec3 n = tdm_d3_cross(tdm_d3_sub(b, a), tdm_d3_sub(c, a));
        double d = tdm_d3_dot(n, a), h = support(p, n);
        CHECK(d >= h, "%s: triangle %u's plane cuts the true solid by %.3g", what, t, (h - d) / tdm_d3_len(n));
    }
}

/* (b) every vertex and random points of every triangle lie outside or on the true
 * solid, within `dev` of its surface; and `dev` is no more than the largest
 * vertex distance plus its rounding. */
static void check_deviation(gen_rng *g, const tdm_mesh *m, const tdm_primitive *p, double dev, const char *what)
{
    double big = 0, worst = 0;
    for (uint32_t i = 0; i < m->n_verts; i++) {
        tdm_dvec3 q = vert(m, i);
        big = fmax(big, fabs(q.x) + fabs(q.y) + fabs(q.z));
    }
    double slack = 8 * DBL_EPSILON * big; /* evaluating the distance in double */
    for (uint32_t i = 0; i < m->n_verts; i++) {
        double s = signed_dist(p, vert(m, i));
        CHECK(s >= -slack, "%s: vertex %u is inside the true solid by %.3g", what, i, -s);
        CHECK(s <= dev + slack, "%s: vertex %u at %.6g from the surface, over the deviation %.6g", what, i, s, dev);
        worst = fmax(worst, s);
    }
    CHECK(dev <= worst + slack, "%s: deviation %.6g reported, the farthest vertex is at %.6g", what, dev, worst);
    int per = m->n_tris > 20000 ? 1 : 4;
    for (uint32_t t = 0; t < m->n_tris; t++)
        for (int k = 0; k < per; k++) {
            double u = gen_uniform(g), w = gen_uniform(g);
            if (u + w > 1) u = 1 - u, w = 1 - w;
            const uint32_t *v = m->tris + 3 * (size_t)t;
            tdm_dvec3 a = vert(m, v[0]), b = vert(m, v[1]), c = vert(m, v[2]);
            tdm_dvec3 q = tdm_d3_add(a, tdm_d3_add(tdm_d3_scale(tdm_d3_sub(b, a), u), tdm_d3_scale(tdm_d3_sub(c, a), w)));
            double s = signed_dist(p, q);
            CHECK(s >= -slack && s <= dev + slack, "%s: a point of triangle %u is at %.6g from the surface (deviation %.6g)",
                  what, t, s, dev);
        }
}

/* (a) literally: random points on the true surface, and slightly inside it, are
 * inside or on every triangle's plane (exact predicate on the float vertices). */
static void check_points(gen_rng *g, const tdm_mesh *m, const tdm_primitive *p, int n_points, const char *what)
{
    for (int i = 0; i < n_points; i++) {
        tdm_dvec3 q = surface_point(g, p);
        if (i & 1) q = tdm_d3_scale(q, 1 - ldexp(gen_uniform(g), -20)); /* towards the centre: inside */
        for (uint32_t t = 0; t < m->n_tris; t++) {
            const uint32_t *v = m->tris + 3 * (size_t)t;
            CHECK(tdm_orient3d(vert(m, v[0]), vert(m, v[1]), vert(m, v[2]), q) >= 0,
                  "%s: the true surface point (%.17g, %.17g, %.17g) is outside triangle %u", what, q.x, q.y, q.z, t);
        }
    }
}

/* Triangles at the segment cap, which is where a deviation over the tolerance
 * must come from. */
static uint32_t capped_tris(tdm_primitive_type type)
{
    static uint32_t memo[6];
    if (!memo[type]) {
        tdm_primitive p = type == TDM_PRIMITIVE_SPHERE     ? tdm_primitive_sphere(1)
                          : type == TDM_PRIMITIVE_CYLINDER ? tdm_primitive_cylinder(1, 1)
                          : type == TDM_PRIMITIVE_CONE     ? tdm_primitive_cone(1, 1)
                                                           : tdm_primitive_capsule(1, 1);
        int seg = type == TDM_PRIMITIVE_CYLINDER || type == TDM_PRIMITIVE_CONE ? TDM_PRIMITIVE_MAX_SEGMENTS
                                                                                 : TDM_PRIMITIVE_MAX_RINGS;
        tdm_mesh *m;
        cr_assert_eq(tdm__primitive_mesh_segments(&p, seg, &m, NULL, NULL, 0), TDM_OK);
        memo[type] = m->n_tris;
        tdm_mesh_free(m);
    }
    return memo[type];
}

/* The float resolution that primitive.h says a tessellation is no finer than:
 * 2^-19 (radius + half the length or height). */
static double float_floor(const tdm_primitive *p)
{
    const double *d = p->dims;
    double size = p->type == TDM_PRIMITIVE_CYLINDER || p->type == TDM_PRIMITIVE_CONE ? d[1] + 0.5 * d[0]
                  : p->type == TDM_PRIMITIVE_CAPSULE ? d[0] + 0.5 * d[1]
                                                     : d[0];
    return ldexp(size, -19);
}

/* Everything above for one primitive and tolerance. */
static void check_primitive(gen_rng *g, const tdm_primitive *p, double tol, int n_points)
{
    char what[256], err[256] = "";
    describe(what, sizeof what, p, tol);
    tdm_mesh *m = SENTINEL;
    double dev = -1;
    cr_assert_eq(tdm_primitive_mesh(p, tol, &m, &dev, err, sizeof err), TDM_OK, "%s: %s", what, err);
    cr_assert(m && m != SENTINEL);
    cr_assert(dev >= 0 && isfinite(dev), "%s: deviation %g", what, dev);
    if (dev > fmax(tol, float_floor(p)))
        cr_assert_eq(m->n_tris, capped_tris(p->type), "%s: deviation %.6g over the tolerance, but %u triangles, not capped",
                     what, dev, m->n_tris);
    check_closed_convex(m, what);
    check_support(m, p, what);
    check_deviation(g, m, p, dev, what);
    uint32_t budget = 3000000 / m->n_tris;
    check_points(g, m, p, (int)(budget < (uint32_t)n_points ? (budget < 8 ? 8 : budget) : (uint32_t)n_points), what);
    tdm_mesh_free(m);
}

/* ---- (a) (b) (c): curved shapes ------------------------------------------------ */

static const double tolerances[] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1};

static void random_shapes(tdm_primitive_type type, uint64_t salt)
{
    gen_rng g = {seed ^ salt};
    for (int i = 0; i < 36; i++) {
        tdm_primitive p = random_curved(&g, type, i & 2 ? TDM_PRIMITIVE_MAX_CAPSULE_ASPECT : 10);
        double tol = tolerances[i % 6];
        check_primitive(&g, &p, tol, 200);
    }
}

Test(primitive, sphere_meshes_contain_the_sphere) { random_shapes(TDM_PRIMITIVE_SPHERE, 1); }
Test(primitive, cylinder_meshes_contain_the_cylinder) { random_shapes(TDM_PRIMITIVE_CYLINDER, 2); }
Test(primitive, capsule_meshes_contain_the_capsule) { random_shapes(TDM_PRIMITIVE_CAPSULE, 3); }
Test(primitive, cone_meshes_contain_the_cone) { random_shapes(TDM_PRIMITIVE_CONE, 9); }

/* Sizes a planning scene holds, at the default tolerance: the deviation is within
 * it, not far under it (the segment count is not wasteful), and the counts are
 * what primitive.h says. */
Test(primitive, typical_sizes_at_the_default_tolerance)
{
    gen_rng g = {seed ^ 4};
    struct { tdm_primitive p; uint32_t lo, hi; } c[] = {
        {tdm_primitive_cylinder(0.2, 0.05), 4 * 45, 4 * 56},  /* ~ pi / sqrt(2 tol / r) = 50 segments */
        {tdm_primitive_cylinder(1.5, 0.01), 4 * 20, 4 * 26},
        {tdm_primitive_sphere(1), 60000, 80000},              /* ~ 10.2 * 0.66 r / tol */
        {tdm_primitive_sphere(0.05), 2800, 4500},
        {tdm_primitive_capsule(0.04, 0.3), 2300, 4000},
        {tdm_primitive_cone(0.2, 0.05), 2 * 45, 2 * 56},      /* the cylinder's rule */
        {tdm_primitive_cone(0.01, 0.3), 2 * 110, 2 * 140},    /* flat: ~ pi / sqrt(2 tol / r) = 122 */
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char what[256];
        describe(what, sizeof what, &c[i].p, TDM_PRIMITIVE_TOLERANCE);
        tdm_mesh *m;
        double dev;
        cr_assert_eq(tdm_primitive_mesh(&c[i].p, TDM_PRIMITIVE_TOLERANCE, &m, &dev, NULL, 0), TDM_OK);
        cr_log_info("%s: %u triangles, deviation %.4g", what, m->n_tris, dev);
        cr_assert(dev <= TDM_PRIMITIVE_TOLERANCE && dev >= 0.5 * TDM_PRIMITIVE_TOLERANCE, "%s: deviation %g", what, dev);
        cr_assert(m->n_tris >= c[i].lo && m->n_tris <= c[i].hi, "%s: %u triangles", what, m->n_tris);
        tdm_mesh_free(m);
        check_primitive(&g, &c[i].p, TDM_PRIMITIVE_TOLERANCE, 100);
    }
}

/* Huge shapes hit the cap: the deviation reported is over the tolerance and is
 * still a true bound, and the mesh still contains the shape. */
Test(primitive, huge_shapes_are_capped_and_say_so)
{
    gen_rng g = {seed ^ 5};
    tdm_primitive c[] = {tdm_primitive_sphere(1e4), tdm_primitive_cylinder(3, 5e4), tdm_primitive_capsule(2e3, 10),
                         tdm_primitive_cone(3, 5e4)};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        tdm_mesh *m;
        double dev;
        cr_assert_eq(tdm_primitive_mesh(&c[i], TDM_PRIMITIVE_TOLERANCE, &m, &dev, NULL, 0), TDM_OK);
        cr_assert_gt(dev, TDM_PRIMITIVE_TOLERANCE);
        cr_assert_eq(m->n_tris, capped_tris(c[i].type));
        /* the documented deviation at the cap, relative to the radius */
        int around = c[i].type == TDM_PRIMITIVE_CYLINDER || c[i].type == TDM_PRIMITIVE_CONE;
        double r = around ? c[i].dims[1] : c[i].dims[0];
        double want = c[i].type == TDM_PRIMITIVE_CONE ? 5.2e-6 : around ? 4.7e-6 : 4.0e-5; /* cone: + 2^-21 r */
        cr_assert(dev / r > 0.9 * want && dev / r < 1.1 * want, "%s: deviation %g r", type_name[c[i].type], dev / r);
        tdm_mesh_free(m);
        check_primitive(&g, &c[i], TDM_PRIMITIVE_TOLERANCE, 16);
    }
}

/* The triangulation depends on the segment count alone (dimensions only scale
 * it), so checking every count checks every tessellation the rule can produce. */
Test(primitive, every_segment_count_is_closed_and_convex)
{
    tdm_primitive shapes[] = {tdm_primitive_sphere(1), tdm_primitive_capsule(0.75, 2.5), tdm_primitive_cylinder(2, 0.3),
                              tdm_primitive_cone(2, 0.3)};
    for (size_t s = 0; s < 4; s++) {
        int lo = s < 2 ? TDM_PRIMITIVE_MIN_RINGS : TDM_PRIMITIVE_MIN_SEGMENTS;
        int hi = s < 2 ? TDM_PRIMITIVE_MAX_RINGS : TDM_PRIMITIVE_MAX_SEGMENTS;
        for (int k = lo; k <= hi; k++) {
            char what[128];
            snprintf(what, sizeof what, "%s with %d segments", type_name[shapes[s].type], k);
            tdm_mesh *m;
            double dev;
            char err[256] = "";
            cr_assert_eq(tdm__primitive_mesh_segments(&shapes[s], k, &m, &dev, err, sizeof err), TDM_OK, "%s: %s", what, err);
            if (shapes[s].type == TDM_PRIMITIVE_CYLINDER) {
                cr_assert_eq(m->n_tris, 4u * k, "%s", what);
                cr_assert_eq(m->n_verts, 2u * k + 2, "%s", what);
                /* the sagitta of the circumscribed polygon, plus the margins */
                double want = 0.3 * (1 / cos(PI / k) - 1);
                cr_assert(dev >= want && dev <= want + 1e-6, "%s: deviation %.9g, sagitta %.9g", what, dev, want);
            }
            if (shapes[s].type == TDM_PRIMITIVE_CONE) {
                cr_assert_eq(m->n_tris, 2u * k, "%s", what);
                cr_assert_eq(m->n_verts, k + 2u, "%s", what);
                double want = 0.3 * (1 / cos(PI / k) - 1);
                cr_assert(dev >= want && dev <= want + 1e-6, "%s: deviation %.9g, sagitta %.9g", what, dev, want);
            }
            check_closed_convex(m, what);
            check_support(m, &shapes[s], what);
            tdm_mesh_free(m);
        }
    }
}

/* ---- (d) boxes --------------------------------------------------------------------- */

Test(primitive, boxes_are_exact)
{
    /* half-edges that are floats: the corners exactly, deviation 0 */
    tdm_primitive b = tdm_primitive_box(1, 0.5, 0.375);
    tdm_mesh *m;
    double dev = -1;
    cr_assert_eq(tdm_primitive_mesh(&b, TDM_PRIMITIVE_TOLERANCE, &m, &dev, NULL, 0), TDM_OK);
    cr_assert_eq(m->n_verts, 8);
    cr_assert_eq(m->n_tris, 12);
    cr_assert_eq(dev, 0.0);
    for (uint32_t i = 0; i < 8; i++)
        for (int a = 0; a < 3; a++) cr_assert_eq(fabsf(m->verts[3 * i + a]), (float)(0.5 * b.dims[a]));
    /* the 8 vertices are the 8 distinct corners */
    for (uint32_t i = 0; i < 8; i++)
        for (uint32_t j = 0; j < i; j++)
            cr_assert(memcmp(m->verts + 3 * i, m->verts + 3 * j, 3 * sizeof(float)) != 0);
    check_closed_convex(m, "box(1, 0.5, 0.375)");
    /* every face lies exactly on the true box's face */
    for (uint32_t t = 0; t < 12; t++) {
        const uint32_t *v = m->tris + 3 * t;
        tdm_dvec3 a = vert(m, v[0]), p = vert(m, v[1]), c = vert(m, v[2]);
        tdm_dvec3 n = tdm_d3_cross(tdm_d3_sub(p, a), tdm_d3_sub(c, a));
        cr_assert_eq(tdm_d3_dot(n, a), support(&b, n));
    }
    tdm_mesh_free(m);

    /* any box: each half-edge rounded up to the nearest float, the deviation the
     * corner's excess, the true corners inside */
    gen_rng g = {seed ^ 6};
    for (int i = 0; i < 2000; i++) {
        double d[3];
        for (int a = 0; a < 3; a++)
            d[a] = i % 3 == 0 ? log_uniform(&g, TDM_PRIMITIVE_MIN_DIM, TDM_PRIMITIVE_MAX_DIM) : gen_range(&g, 0.01, 2);
        b = tdm_primitive_box(d[0], d[1], d[2]);
        char what[256];
        describe(what, sizeof what, &b, 1e-6);
        CHECK(tdm_primitive_mesh(&b, 1e-6, &m, &dev, NULL, 0) == TDM_OK, "%s", what);
        CHECK(m->n_verts == 8 && m->n_tris == 12, "%s", what);
        double e2 = 0;
        for (int a = 0; a < 3; a++) {
            float f = fabsf(m->verts[a]);
            CHECK((double)f >= 0.5 * d[a] && (double)nextafterf(f, 0) < 0.5 * d[a],
                  "%s: half-edge %d is %.9g, not the float above %.17g", what, a, (double)f, 0.5 * d[a]);
            e2 += ((double)f - 0.5 * d[a]) * ((double)f - 0.5 * d[a]);
        }
        CHECK(dev >= sqrt(e2) && dev <= sqrt(e2) * (1 + 1e-12), "%s: deviation %.9g, corner excess %.9g", what, dev,
              sqrt(e2));
        for (uint32_t k = 0; k < 8; k++) {
            tdm_dvec3 corner = tdm_d3((k & 1 ? 0.5 : -0.5) * d[0], (k & 2 ? 0.5 : -0.5) * d[1], (k & 4 ? 0.5 : -0.5) * d[2]);
            for (uint32_t t = 0; t < 12; t++) {
                const uint32_t *v = m->tris + 3 * t;
                CHECK(tdm_orient3d(vert(m, v[0]), vert(m, v[1]), vert(m, v[2]), corner) >= 0,
                      "%s: corner %u outside the mesh", what, k);
            }
        }
        if (i < 50) check_closed_convex(m, what);
        tdm_mesh_free(m);
    }
}

/* ---- (e) the solid test --------------------------------------------------------- */

typedef __int128 i128;

/* The exact answer on integers (the inputs divided by a common power of two,
 * which changes nothing): dims d and point q in units of 2^-s. The point is
 * doubled so that half-edges and half-lengths stay integers. */
static int ref_contains(tdm_primitive_type type, const int64_t d[3], const int64_t q[3])
{
    i128 x = 2 * (i128)q[0], y = 2 * (i128)q[1], z = 2 * (i128)q[2];
    i128 ax = x < 0 ? -x : x, ay = y < 0 ? -y : y, az = z < 0 ? -z : z;
    switch (type) {
    case TDM_PRIMITIVE_BOX: return ax <= d[0] && ay <= d[1] && az <= d[2];
    case TDM_PRIMITIVE_SPHERE: return x * x + y * y + z * z <= 4 * (i128)d[0] * d[0];
    case TDM_PRIMITIVE_CYLINDER: return az <= d[0] && x * x + y * y <= 4 * (i128)d[1] * d[1];
    case TDM_PRIMITIVE_CONE: /* |z| <= h/2 and |(x, y)| h <= r (h/2 - z), all doubled */
        return az <= d[0] && (x * x + y * y) * d[0] * d[0] <= (i128)d[1] * d[1] * (d[0] - z) * (d[0] - z);
    default: {
        i128 ez = az > d[1] ? az - d[1] : 0;
        return x * x + y * y + ez * ez <= 4 * (i128)d[0] * d[0];
    }
    }
}

/* An integer point with x^2 + y^2 + z^2 = n^2 (Lebesgue's identity), 1 <= n < 4 * 2^(2 bits). */
static void quadruple(gen_rng *g, int bits, int64_t v[3], int64_t *n)
{
    int64_t a = gen_int(g, 0, (1 << bits) - 1), b = gen_int(g, 0, (1 << bits) - 1);
    int64_t c = gen_int(g, 0, (1 << bits) - 1), d = gen_int(g, 1, (1 << bits) - 1);
    v[0] = a * a + b * b - c * c - d * d;
    v[1] = 2 * (a * d + b * c);
    v[2] = 2 * (b * d - a * c);
    *n = a * a + b * b + c * c + d * d;
}

Test(primitive, contains_is_exact_on_the_boundary)
{
    gen_rng g = {seed ^ 7};
    long inside = 0, ties = 0;
    for (int i = 0; i < 500000; i++) {
        tdm_primitive_type type = (tdm_primitive_type)(1 + i % 5);
        int s = (int)gen_int(&g, 4, 19); /* unit 2^-s: dims of 1 to 2^20 units stay within the limits */
        double unit = ldexp(1, -s);
        int64_t d[3], q[3], v[3], n;
        /* a point of the boundary (a sphere of integer radius through it, or a
         * corner), then moved by -1, 0 or 1 unit per axis */
        quadruple(&g, 9, v, &n);
        switch (type) {
        case TDM_PRIMITIVE_BOX:
            for (int a = 0; a < 3; a++) d[a] = 2 * gen_int(&g, 1, 1 << 18) + gen_int(&g, 0, 1);
            for (int a = 0; a < 3; a++) q[a] = (gen_uniform(&g) < 0.5 ? -1 : 1) * (d[a] / 2);
            break;
        case TDM_PRIMITIVE_SPHERE:
            d[0] = n, d[1] = d[2] = 0;
            memcpy(q, v, sizeof q);
            break;
        case TDM_PRIMITIVE_CYLINDER: /* x^2 + y^2 = n^2 on the side, or |z| = h/2 on a cap */
            d[0] = 2 * gen_int(&g, 1, 1 << 18) + gen_int(&g, 0, 1), d[1] = n, d[2] = 0;
            if (gen_uniform(&g) < 0.5) {
                int64_t a = gen_int(&g, 1, 1 << 9), b = gen_int(&g, 0, a - 1);
                d[1] = a * a + b * b;
                q[0] = a * a - b * b, q[1] = 2 * a * b, q[2] = gen_int(&g, -d[0] / 2, d[0] / 2);
            } else {
                q[0] = v[0] / 2, q[1] = v[1] / 2, q[2] = (gen_uniform(&g) < 0.5 ? -1 : 1) * (d[0] / 2);
            }
            break;
        case TDM_PRIMITIVE_CONE: {
            /* on the side: |(x, y)| = rho (a Pythagorean pair), and h = 2 m t,
             * r = 2 rho t, z = m (t - 1) put it there (2 rho h = r (h - 2 z));
             * or on the base's rim or disc; or at the apex */
            int64_t a = gen_int(&g, 1, 1 << 8), b = gen_int(&g, 0, a - 1), rho = a * a + b * b;
            int64_t m = gen_int(&g, 1, 1 << 10), t = gen_int(&g, 1, 4);
            double pick = gen_uniform(&g);
            d[0] = 2 * m * t, d[1] = 2 * rho * t, d[2] = 0;
            q[0] = a * a - b * b, q[1] = 2 * a * b, q[2] = m * (t - 1);
            if (pick < 0.3) { /* the base: the rim of radius rho, or inside it */
                d[1] = rho;
                if (pick < 0.1) q[0] /= 2, q[1] /= 2;
                q[2] = -d[0] / 2;
            } else if (pick < 0.35) {
                q[0] = q[1] = 0, q[2] = d[0] / 2;
            }
            break;
        }
        default: /* capsule: on a hemisphere, or on the side */
            d[0] = n, d[2] = 0; /* length within the aspect limit */
            d[1] = 2 * gen_int(&g, 1, (int64_t)fmin(1 << 18, 0.5 * TDM_PRIMITIVE_MAX_CAPSULE_ASPECT * n));
            memcpy(q, v, sizeof q);
            if (gen_uniform(&g) < 0.8) q[2] += q[2] >= 0 ? d[1] / 2 : -d[1] / 2;
            else q[2] = gen_int(&g, -d[1] / 2, d[1] / 2);
            break;
        }
        for (int a = 0; a < 3; a++) q[a] += gen_int(&g, -1, 1);
        tdm_primitive p = {type, {d[0] * unit, d[1] * unit, d[2] * unit}};
        int want = ref_contains(type, d, q);
        tdm_dvec3 pt = tdm_d3(q[0] * unit, q[1] * unit, q[2] * unit);
        int got = tdm_primitive_contains(&p, pt);
        CHECK(got == want, "%s(%lld, %lld, %lld) * 2^-%d, point (%lld, %lld, %lld) * 2^-%d: %d, exact %d (seed %llu)",
              type_name[type], (long long)d[0], (long long)d[1], (long long)d[2], s, (long long)q[0], (long long)q[1],
              (long long)q[2], s, got, want, (unsigned long long)seed);
        inside += want;
        i128 x = q[0], y = q[1];
        if (type == TDM_PRIMITIVE_SPHERE && x * x + y * y + (i128)q[2] * q[2] == (i128)d[0] * d[0]) ties++;
    }
    cr_log_info("contains: %ld of 500000 inside, %ld exactly on a sphere", inside, ties);
    cr_assert(inside > 125000 && inside < 375000, "the boundary cases are one-sided: %ld inside", inside);
    cr_assert_gt(ties, 1000);
}

Test(primitive, contains_matches_a_quad_precision_reference)
{
    gen_rng g = {seed ^ 8};
    long decided = 0;
    for (int i = 0; i < 250000; i++) {
        tdm_primitive_type type = (tdm_primitive_type)(1 + i % 5);
        double r = log_uniform(&g, TDM_PRIMITIVE_MIN_DIM, TDM_PRIMITIVE_MAX_DIM);
        tdm_primitive p = {type, {r, clamp_dim(r * log_uniform(&g, 1e-2, 1e2)), clamp_dim(r * log_uniform(&g, 1e-2, 1e2))}};
        /* near the surface, or anywhere around it */
        tdm_dvec3 q = surface_point(&g, &p);
        double spread = i & 1 ? ldexp(r, -(int)gen_int(&g, 20, 50)) : r;
        q = tdm_d3_add(q, tdm_d3_scale(unit_vector(&g), spread * gen_uniform(&g)));
        __float128 x = q.x, y = q.y, z = q.z, s;
        const double *d = p.dims;
        int want;
        switch (type) {
        case TDM_PRIMITIVE_BOX:
            want = fabs(q.x) <= 0.5 * d[0] && fabs(q.y) <= 0.5 * d[1] && fabs(q.z) <= 0.5 * d[2];
            s = 1; /* decided exactly */
            break;
        case TDM_PRIMITIVE_SPHERE:
            s = x * x + y * y + z * z - (__float128)d[0] * d[0];
            want = s <= 0;
            break;
        case TDM_PRIMITIVE_CYLINDER:
            s = x * x + y * y - (__float128)d[1] * d[1];
            want = s <= 0 && fabs(q.z) <= 0.5 * d[0];
            if (fabs(q.z) > 0.5 * d[0]) s = 1;
            break;
        case TDM_PRIMITIVE_CONE: {
            __float128 w = (__float128)(0.5 * d[0]) - z, h = d[0], rr = d[1];
            s = (x * x + y * y) * h * h - rr * rr * w * w;
            want = s <= 0 && fabs(q.z) <= 0.5 * d[0];
            if (fabs(q.z) > 0.5 * d[0]) s = 1;
            break;
        }
        default: {
            __float128 az = z < 0 ? -z : z, ez = az > (__float128)(0.5 * d[1]) ? az - (__float128)(0.5 * d[1]) : 0;
            s = x * x + y * y + ez * ez - (__float128)d[0] * d[0];
            want = s <= 0;
            break;
        }
        }
        /* __float128 holds each square exactly; its sums are off by 2^-110 of the
         * largest term at most: skip what that cannot decide */
        __float128 mag = x * x + y * y + z * z + (__float128)r * r * 1e4;
        if (type == TDM_PRIMITIVE_CONE) /* its terms are of degree 4 */
            mag = (x * x + y * y + z * z + (__float128)d[0] * d[0] + (__float128)d[1] * d[1]) *
                  ((__float128)d[0] * d[0] + (__float128)d[1] * d[1]) * 4;
        __float128 as = s < 0 ? -s : s;
        if (as <= mag * 1e-30) continue;
        decided++;
        int got = tdm_primitive_contains(&p, q);
        CHECK(got == want, "%s(%.17g, %.17g, %.17g), point (%.17g, %.17g, %.17g): %d, reference %d (seed %llu)",
              type_name[type], d[0], d[1], d[2], q.x, q.y, q.z, got, want, (unsigned long long)seed);
    }
    cr_log_info("contains: %ld of 250000 random points decided by the reference", decided);
    cr_assert_gt(decided, 237500);
}

/* The documented exception: a nonzero coordinate under 2^-400 r counts as 0, which
 * can only move a point outside by less than 2^-800 r^2 to inside. */
Test(primitive, contains_flushes_negligible_coordinates_inwards)
{
    tdm_primitive s = tdm_primitive_sphere(1), c = tdm_primitive_cylinder(2, 1), k = tdm_primitive_capsule(1, 2);
    double tiny = ldexp(1, -500);
    cr_assert_eq(tdm_primitive_contains(&s, tdm_d3(1, tiny, 0)), 1);   /* exact: outside by 2^-1000 */
    cr_assert_eq(tdm_primitive_contains(&s, tdm_d3(1, 0, 0)), 1);
    cr_assert_eq(tdm_primitive_contains(&s, tdm_d3(nextafter(1, 2), 0, 0)), 0);
    cr_assert_eq(tdm_primitive_contains(&s, tdm_d3(0.6, 0.8, 0)), 0); /* 0.6^2 + 0.8^2 > 1 in these doubles */
    cr_assert_eq(tdm_primitive_contains(&c, tdm_d3(tiny, 1, 1)), 1);
    cr_assert_eq(tdm_primitive_contains(&c, tdm_d3(0, 1, nextafter(1, 2))), 0);
    cr_assert_eq(tdm_primitive_contains(&k, tdm_d3(0, 0, 2)), 1);
    cr_assert_eq(tdm_primitive_contains(&k, tdm_d3(0, 0, nextafter(2, 3))), 0);
    cr_assert_eq(tdm_primitive_contains(&k, tdm_d3(1, 0, nextafter(1, 2))), 0);
    cr_assert_eq(tdm_primitive_contains(&k, tdm_d3(1, 0, -1)), 1);
    /* a cone (2, 1): its side through (0.5, 0, 0); flushes under 2^-300 */
    tdm_primitive n = tdm_primitive_cone(2, 1);
    double wee = ldexp(1, -400);
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0.5, 0, 0)), 1);
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(nextafter(0.5, 1), 0, 0)), 0);
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0.5, wee, 0)), 1);  /* exact: outside by ~2^-800 */
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0.5, 0, wee)), 1);  /* outside by ~2^-401; z flushed to 0 */
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0.5, 0, ldexp(1, -200))), 0); /* not flushed: outside */
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0.5, 0, -wee)), 1); /* inside, and flushed further in */
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0, 0, 1)), 1);      /* the apex */
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0, 0, nextafter(1, 2))), 0);
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(wee, 0, 1)), 1);    /* flushed to the apex */
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(ldexp(1, -200), 0, 1)), 0);
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(0.6, 0.8, -1)), 0); /* 0.6^2 + 0.8^2 > 1 in these doubles */
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(1, 0, -1)), 1);
    cr_assert_eq(tdm_primitive_contains(&n, tdm_d3(1, 0, nextafter(-1, 0))), 0);
}

/* ---- (f) errors ------------------------------------------------------------------ */

static void expect_invalid(const tdm_primitive *p, double tol, const char *needle)
{
    char err[256] = "";
    tdm_mesh *m = SENTINEL;
    double dev = 42;
    int rc = tdm_primitive_mesh(p, tol, &m, &dev, err, sizeof err);
    cr_assert_eq(rc, TDM_EINVAL, "tolerance %g: rc %d", tol, rc);
    cr_assert_null(m, "*out must be NULL on failure");
    cr_assert_eq(dev, 42, "*deviation must be untouched on failure");
    cr_assert(strstr(err, needle), "message '%s' does not name '%s'", err, needle);
    if (p && tol == TDM_PRIMITIVE_TOLERANCE) {
        cr_assert_eq(tdm_primitive_check(p, NULL, 0), TDM_EINVAL);
        cr_assert_eq(tdm_primitive_contains(p, tdm_d3(0, 0, 0)), TDM_EINVAL);
    }
}

Test(primitive, bad_primitives_and_tolerances_are_refused)
{
    const double bad[] = {NAN, INFINITY, -INFINITY, 0, -0.0, -1, 0.5 * TDM_PRIMITIVE_MIN_DIM, 2 * TDM_PRIMITIVE_MAX_DIM};
    const char *const dims[][3] = {{0}, {"box x", "box y", "box z"}, {"sphere radius"}, {"cylinder height", "cylinder radius"},
                                   {"capsule radius", "capsule length"}, {"cone height", "cone radius"}};
    const int nd[] = {0, 3, 1, 2, 2, 2};
    for (int type = TDM_PRIMITIVE_BOX; type <= TDM_PRIMITIVE_CONE; type++)
        for (int i = 0; i < nd[type]; i++)
            for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
                tdm_primitive p = {(tdm_primitive_type)type, {0.5, 0.25, 0.125}};
                p.dims[i] = bad[b];
                expect_invalid(&p, TDM_PRIMITIVE_TOLERANCE, dims[type][i]);
            }
    /* the limits themselves are accepted, and unused dims are ignored */
    tdm_primitive ok[] = {tdm_primitive_box(TDM_PRIMITIVE_MIN_DIM, TDM_PRIMITIVE_MAX_DIM, 1),
                          {TDM_PRIMITIVE_SPHERE, {TDM_PRIMITIVE_MIN_DIM, NAN, -1}},
                          {TDM_PRIMITIVE_CYLINDER, {TDM_PRIMITIVE_MAX_DIM, TDM_PRIMITIVE_MIN_DIM, NAN}},
                          {TDM_PRIMITIVE_CAPSULE, {TDM_PRIMITIVE_MAX_DIM, TDM_PRIMITIVE_MIN_DIM, INFINITY}},
                          {TDM_PRIMITIVE_CONE, {TDM_PRIMITIVE_MAX_DIM, TDM_PRIMITIVE_MIN_DIM, NAN}},
                          {TDM_PRIMITIVE_CONE, {TDM_PRIMITIVE_MIN_DIM, TDM_PRIMITIVE_MAX_DIM, NAN}}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        tdm_mesh *m;
        double dev;
        char err[256] = "";
        cr_assert_eq(tdm_primitive_check(&ok[i], err, sizeof err), TDM_OK, "%s", err);
        cr_assert_eq(tdm_primitive_mesh(&ok[i], TDM_PRIMITIVE_MAX_TOLERANCE, &m, &dev, err, sizeof err), TDM_OK, "%s", err);
        tdm_mesh_free(m);
        cr_assert_eq(tdm_primitive_contains(&ok[i], tdm_d3(0, 0, 0)), 1);
    }

    /* a capsule too thin for float coordinates at its ends */
    tdm_primitive thin = tdm_primitive_capsule(1e-3, 1.0001 * TDM_PRIMITIVE_MAX_CAPSULE_ASPECT * 1e-3);
    expect_invalid(&thin, TDM_PRIMITIVE_TOLERANCE, "capsule length");
    thin.dims[TDM_CAPSULE_LENGTH] = TDM_PRIMITIVE_MAX_CAPSULE_ASPECT * 1e-3;
    cr_assert_eq(tdm_primitive_check(&thin, NULL, 0), TDM_OK);

    /* unknown types and no primitive */
    tdm_primitive unknown = {(tdm_primitive_type)0, {1, 1, 1}};
    expect_invalid(&unknown, TDM_PRIMITIVE_TOLERANCE, "unknown primitive type 0");
    unknown.type = (tdm_primitive_type)6;
    expect_invalid(&unknown, TDM_PRIMITIVE_TOLERANCE, "unknown primitive type 6");
    expect_invalid(NULL, TDM_PRIMITIVE_TOLERANCE, "no primitive");
    cr_assert_eq(tdm_primitive_check(NULL, NULL, 0), TDM_EINVAL);
    cr_assert_eq(tdm_primitive_contains(NULL, tdm_d3(0, 0, 0)), TDM_EINVAL);

    /* tolerances */
    tdm_primitive s = tdm_primitive_sphere(0.1);
    const double bad_tol[] = {NAN, INFINITY, -INFINITY, 0, -1e-4, 0.5 * TDM_PRIMITIVE_MIN_TOLERANCE,
                              2 * TDM_PRIMITIVE_MAX_TOLERANCE};
    for (size_t b = 0; b < sizeof bad_tol / sizeof *bad_tol; b++) expect_invalid(&s, bad_tol[b], "tolerance");
    tdm_mesh *m;
    cr_assert_eq(tdm_primitive_mesh(&s, TDM_PRIMITIVE_MIN_TOLERANCE, &m, NULL, NULL, 0), TDM_OK);
    tdm_mesh_free(m);

    /* non-finite points */
    const double nf[] = {NAN, INFINITY, -INFINITY};
    for (size_t b = 0; b < 3; b++) {
        cr_assert_eq(tdm_primitive_contains(&s, tdm_d3(nf[b], 0, 0)), TDM_EINVAL);
        cr_assert_eq(tdm_primitive_contains(&s, tdm_d3(0, nf[b], 0)), TDM_EINVAL);
        cr_assert_eq(tdm_primitive_contains(&s, tdm_d3(0, 0, nf[b])), TDM_EINVAL);
    }

    /* the test hook: no segment count for a box, and counts within the caps */
    tdm_primitive b = tdm_primitive_box(1, 1, 1), c = tdm_primitive_cylinder(1, 1);
    m = SENTINEL;
    cr_assert_eq(tdm__primitive_mesh_segments(&b, 8, &m, NULL, NULL, 0), TDM_EINVAL);
    cr_assert_null(m);
    cr_assert_eq(tdm__primitive_mesh_segments(&c, TDM_PRIMITIVE_MIN_SEGMENTS - 1, &m, NULL, NULL, 0), TDM_EINVAL);
    cr_assert_eq(tdm__primitive_mesh_segments(&c, TDM_PRIMITIVE_MAX_SEGMENTS + 1, &m, NULL, NULL, 0), TDM_EINVAL);
    cr_assert_eq(tdm__primitive_mesh_segments(&s, TDM_PRIMITIVE_MIN_RINGS - 1, &m, NULL, NULL, 0), TDM_EINVAL);
    cr_assert_eq(tdm__primitive_mesh_segments(&s, TDM_PRIMITIVE_MAX_RINGS + 1, &m, NULL, NULL, 0), TDM_EINVAL);
    cr_assert_null(m);
}
