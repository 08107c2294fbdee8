/* Primitive shapes as meshes, and the exact point-in-solid test (primitive.h has
 * the contracts and the derivation of the tessellations). */
#include "primitive.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "predicates.h"

static const double PI = 3.14159265358979323846;

static int fail(int code, char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static const char *const type_name[] = {"", "box", "sphere", "cylinder", "capsule", "cone"};
static const int n_dims[] = {0, 3, 1, 2, 2, 2};
static const char *const dim_name[][3] = {{"", "", ""},           {"x", "y", "z"},          {"radius", "", ""},
                                          {"height", "radius", ""}, {"radius", "length", ""}, {"height", "radius", ""}};

int tdm_primitive_check(const tdm_primitive *p, char *err, size_t errlen)
{
    if (!p) return fail(TDM_EINVAL, err, errlen, "no primitive");
    int t = (int)p->type;
    if (t < TDM_PRIMITIVE_BOX || t > TDM_PRIMITIVE_CONE)
        return fail(TDM_EINVAL, err, errlen, "unknown primitive type %d (box 1, sphere 2, cylinder 3, capsule 4, cone 5)",
                    t);
    for (int i = 0; i < n_dims[t]; i++) {
        double d = p->dims[i];
        if (!(d >= TDM_PRIMITIVE_MIN_DIM && d <= TDM_PRIMITIVE_MAX_DIM)) /* NaN fails too */
            return fail(TDM_EINVAL, err, errlen, "%s %s is %g: must be a finite number in [%g, %g] m", type_name[t],
                        dim_name[t][i], d, TDM_PRIMITIVE_MIN_DIM, TDM_PRIMITIVE_MAX_DIM);
    }
    if (t == TDM_PRIMITIVE_CAPSULE &&
        !(p->dims[TDM_CAPSULE_LENGTH] <= TDM_PRIMITIVE_MAX_CAPSULE_ASPECT * p->dims[TDM_CAPSULE_RADIUS]))
        return fail(TDM_EINVAL, err, errlen,
                    "capsule length is %g, over %g times its radius %g: float coordinates cannot hold its ends",
                    p->dims[TDM_CAPSULE_LENGTH], TDM_PRIMITIVE_MAX_CAPSULE_ASPECT, p->dims[TDM_CAPSULE_RADIUS]);
    return TDM_OK;
}

/* ---- measuring a mesh against the true shape ------------------------------- */

/* Distance from (rho, z), rho >= 0, to the triangle (0, h/2), (0, -h/2), (r, -h/2):
 * a cone's half-section. 0 inside. */
static double cone_outside(double h, double r, double rho, double z)
{
    if (z >= -0.5 * h && z <= 0.5 * h && rho * h <= r * (0.5 * h - z)) return 0;
    /* the base edge, then the side from the rim (r, -h/2) to the apex (0, h/2) */
    double bx = fmin(rho, r), dbx = rho - bx, dbz = z + 0.5 * h;
    double best = dbx * dbx + dbz * dbz;
    double ux = -r, uz = h, px = rho - r, pz = z + 0.5 * h;
    double t = (px * ux + pz * uz) / (ux * ux + uz * uz);
    t = fmin(fmax(t, 0), 1);
    double sx = px - t * ux, sz = pz - t * uz;
    return sqrt(fmin(best, sx * sx + sz * sz));
}

/* Distance from q, a point outside or on the solid, to it: the deviation of a
 * mesh vertex. A convex function of q, so its maximum over a triangle is at a
 * vertex. */
static double outside_distance(const tdm_primitive *p, double x, double y, double z)
{
    const double *d = p->dims;
    switch (p->type) {
    case TDM_PRIMITIVE_BOX: {
        double ex = fmax(fabs(x) - 0.5 * d[0], 0), ey = fmax(fabs(y) - 0.5 * d[1], 0);
        double ez = fmax(fabs(z) - 0.5 * d[2], 0);
        return sqrt(ex * ex + ey * ey + ez * ez);
    }
    case TDM_PRIMITIVE_SPHERE: return sqrt(x * x + y * y + z * z) - d[0];
    case TDM_PRIMITIVE_CYLINDER: {
        double er = fmax(sqrt(x * x + y * y) - d[1], 0), ez = fmax(fabs(z) - 0.5 * d[0], 0);
        return sqrt(er * er + ez * ez);
    }
    case TDM_PRIMITIVE_CAPSULE: {
        double ez = fmax(fabs(z) - 0.5 * d[1], 0);
        return sqrt(x * x + y * y + ez * ez) - d[0];
    }
    case TDM_PRIMITIVE_CONE: return cone_outside(d[TDM_CONE_HEIGHT], d[TDM_CONE_RADIUS], sqrt(x * x + y * y), z);
    }
    return 0;
}

/* The largest distance from a vertex to the solid, rounded up past the error of
 * evaluating it in double (a few ulps of the coordinates). */
static double measure_deviation(const tdm_primitive *p, const float *v, uint32_t nv)
{
    double worst = 0, big = 0;
    for (uint32_t i = 0; i < nv; i++) {
        double x = v[3 * i], y = v[3 * i + 1], z = v[3 * i + 2];
        worst = fmax(worst, outside_distance(p, x, y, z));
        big = fmax(big, fabs(x) + fabs(y) + fabs(z));
    }
    return worst + 4 * DBL_EPSILON * big;
}

/* ---- box --------------------------------------------------------------------- */

static int box_mesh(const tdm_primitive *p, tdm_mesh **out, double *deviation, char *err, size_t errlen)
{
    /* vertex i has x at bit 0, y at bit 1, z at bit 2 (set: +) */
    static const uint32_t quads[6][4] = {{0, 4, 6, 2}, {1, 3, 7, 5}, {0, 1, 5, 4},
                                         {2, 6, 7, 3}, {0, 2, 3, 1}, {4, 5, 7, 6}};
    float h[3], v[24];
    uint32_t t[36];
    for (int a = 0; a < 3; a++) h[a] = tdm_float_up(0.5 * p->dims[a]); /* the float nearest, not below */
    for (int i = 0; i < 8; i++)
        for (int a = 0; a < 3; a++) v[3 * i + a] = (i >> a & 1) ? h[a] : -h[a];
    for (int f = 0; f < 6; f++) {
        const uint32_t *q = quads[f];
        uint32_t *o = t + 6 * f;
        o[0] = q[0], o[1] = q[1], o[2] = q[2];
        o[3] = q[0], o[4] = q[2], o[5] = q[3];
    }
    int rc = tdm_mesh_create(v, 8, t, 12, NULL, out, err, errlen);
    if (rc) return rc;
    if (deviation) {
        /* exact: the corner's excess over the true corner, per axis */
        double e2 = 0;
        for (int a = 0; a < 3; a++) {
            double e = (double)h[a] - 0.5 * p->dims[a];
            e2 += e * e;
        }
        *deviation = e2 == 0 ? 0 : sqrt(e2) * (1 + 4 * DBL_EPSILON);
    }
    return TDM_OK;
}

/* ---- curved shapes as rings ---------------------------------------------------- */

/* A horizontal ring of vertices; rings are listed from the top down. Vertex i
 * sits at angle pi (2i + half) / n. (s, c) place it on the unit shape that the
 * triangulation is chosen on: (s cos, s sin, sigma c). */
typedef struct ring {
    uint32_t n;    /* 1: a pole or a cap centre */
    int half;      /* 1: turned by half a step */
    int sigma;     /* +1 upper half, -1 lower half */
    double s, c;
    uint32_t base; /* its first vertex */
} ring;

typedef struct shape {
    ring *rings;
    int n_rings;
    uint32_t n_verts, n_tris;
    tdm_dvec3 *unit; /* n_verts unit-shape positions */
    uint32_t *tris;  /* 3 * n_tris */
} shape;

static void shape_free(shape *s)
{
    free(s->rings);
    free(s->unit);
    free(s->tris);
}

static uint32_t band_tris(const ring *a, const ring *b)
{
    if (a->n == 1) return b->n;
    if (b->n == 1) return a->n;
    return a->n + b->n;
}

static uint32_t wrap(const ring *g, int64_t i)
{
    int64_t m = i % (int64_t)g->n;
    return g->base + (uint32_t)(m < 0 ? m + g->n : m);
}

static void put_tri(shape *s, uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t *o = s->tris + 3 * (size_t)s->n_tris++;
    o[0] = a, o[1] = b, o[2] = c;
}

/* Triangulates the band between ring a and ring b below it, counter-clockwise
 * seen from outside: a fan around a pole or cap centre, rectangles between two
 * equal rings, and otherwise the convex hull of the two rings on the unit shape
 * (a zipper that adds, at each step, the triangle whose plane keeps the other
 * candidate vertex inside). */
static void band(shape *s, const ring *a, const ring *b)
{
    const tdm_dvec3 *u = s->unit;
    if (a->n == 1) {
        for (int64_t j = 0; j < b->n; j++) put_tri(s, a->base, wrap(b, j), wrap(b, j + 1));
        return;
    }
    if (b->n == 1) {
        for (int64_t i = 0; i < a->n; i++) put_tri(s, wrap(a, i), b->base, wrap(a, i + 1));
        return;
    }
    if (a->n == b->n && a->half == b->half) {
        for (int64_t i = 0; i < a->n; i++) {
            put_tri(s, wrap(a, i), wrap(b, i), wrap(a, i + 1));
            put_tri(s, wrap(a, i + 1), wrap(b, i), wrap(b, i + 1));
        }
        return;
    }
    /* start at the last vertex of b at or before a's vertex 0 in angle:
     * (2j + hb) / nb <= ha / na */
    int64_t na = a->n, nb = b->n, num = (int64_t)a->half * nb - (int64_t)b->half * na;
    int64_t i = 0, j = num >= 0 ? num / (2 * na) : -1, jend = j + nb;
    while (i < na || j < jend) {
        int adv_a;
        if (i == na) adv_a = 0;
        else if (j == jend) adv_a = 1;
        else
            adv_a = tdm_orient3d(u[wrap(a, i)], u[wrap(b, j)], u[wrap(a, i + 1)], u[wrap(b, j + 1)]) >= 0;
        if (adv_a) {
            put_tri(s, wrap(a, i), wrap(b, j), wrap(a, i + 1));
            i++;
        } else {
            put_tri(s, wrap(a, i), wrap(b, j), wrap(b, j + 1));
            j++;
        }
    }
}

/* Lays out the rings' vertices on the unit shape and triangulates every band. */
static int shape_build(shape *s)
{
    s->n_verts = s->n_tris = 0;
    uint32_t nt = 0;
    for (int r = 0; r < s->n_rings; r++) {
        s->rings[r].base = s->n_verts;
        s->n_verts += s->rings[r].n;
        if (r > 0) nt += band_tris(&s->rings[r - 1], &s->rings[r]);
    }
    s->unit = malloc(sizeof *s->unit * s->n_verts);
    s->tris = malloc(sizeof *s->tris * 3 * (size_t)nt);
    if (!s->unit || !s->tris) return TDM_ENOMEM;
    for (int r = 0; r < s->n_rings; r++) {
        const ring *g = &s->rings[r];
        for (uint32_t i = 0; i < g->n; i++) {
            double phi = PI * (double)(2 * i + g->half) / g->n;
            s->unit[g->base + i] = tdm_d3(g->s * cos(phi), g->s * sin(phi), g->sigma * g->c);
        }
    }
    for (int r = 1; r < s->n_rings; r++) band(s, &s->rings[r - 1], &s->rings[r]);
    return TDM_OK;
}

/* Rings of a sphere (capsule = 0) or capsule with k latitude steps from pole to
 * equator: the upper hemisphere's rings, then the lower's (a capsule repeats the
 * equator, for the side band of rectangles). */
static int sphere_rings(shape *s, int k, int capsule)
{
    s->n_rings = 2 * k + 1 + capsule;
    s->rings = calloc((size_t)s->n_rings, sizeof *s->rings);
    if (!s->rings) return TDM_ENOMEM;
    for (int m = 0; m <= k; m++) {
        ring g;
        double th = 0.5 * PI * m / k;
        g.s = m == k ? 1 : sin(th);
        g.c = m == k ? 0 : cos(th);
        g.n = m == 0 ? 1 : (m == k ? 4u * k : (uint32_t)fmax(3, lround(4 * k * g.s)));
        g.half = m == 0 ? 0 : m & 1;
        g.sigma = 1;
        g.base = 0;
        s->rings[m] = g;
        g.sigma = -1;
        s->rings[s->n_rings - 1 - m] = g;
    }
    if (!capsule) s->rings[k].sigma = 1; /* the one equator */
    return TDM_OK;
}

/* Rings of a cylinder with n segments: top centre, top rim, bottom rim, bottom
 * centre, on the unit cylinder (radius 1, z = +-1). */
static int cylinder_rings(shape *s, int n)
{
    s->n_rings = 4;
    s->rings = calloc(4, sizeof *s->rings);
    if (!s->rings) return TDM_ENOMEM;
    ring centre = {1, 0, 1, 0, 1, 0}, rim = {(uint32_t)n, 0, 1, 1, 1, 0};
    s->rings[0] = centre, s->rings[1] = rim;
    centre.sigma = rim.sigma = -1;
    s->rings[2] = rim, s->rings[3] = centre;
    return TDM_OK;
}

/* The radius R that puts the plane of every triangle of a sphere or capsule
 * tessellation at least r from the shape's axis segment [-zc, zc] (the support of
 * the true solid grown to radius r in the plane's normal direction), the
 * hemispheres' vertices being at R u + (0, 0, sigma zc) for their unit positions
 * u. Returns 0 if some triangle faces inwards (cannot happen for these rings). */
static double sphere_radius(const shape *s, double r, double zc)
{
    double R = 0;
    for (uint32_t t = 0; t < s->n_tris; t++) {
        const uint32_t *v = s->tris + 3 * (size_t)t;
        tdm_dvec3 a = s->unit[v[0]], b = s->unit[v[1]], c = s->unit[v[2]];
        double need;
        if (a.z == 0 && b.z == 0 && c.z == 0) {
            /* a side rectangle of a capsule (its two equators coincide on the
             * unit shape): the plane through the chord, which is vertical */
            uint32_t n = s->rings[s->n_rings / 2].n;
            need = r / cos(PI / n);
        } else {
            tdm_dvec3 nr = tdm_d3_cross(tdm_d3_sub(b, a), tdm_d3_sub(c, a));
            double len = tdm_d3_len(nr);
            if (!(len > 0)) return 0;
            tdm_dvec3 nu = tdm_d3_scale(nr, 1 / len);
            double h = tdm_d3_dot(nu, a);
            if (!(h > 0)) return 0;
            /* which half: the sign of any vertex off the equator */
            double sz = a.z != 0 ? a.z : (b.z != 0 ? b.z : c.z);
            double sigma = sz > 0 ? 1 : -1;
            need = (r + (fabs(nu.z) - sigma * nu.z) * zc) / h;
        }
        R = fmax(R, need);
    }
    return R;
}

/* A cone with n segments (primitive.h): apex, base polygon, base centre; the side
 * faces checked against the true cone after rounding. */
static int cone_mesh(const tdm_primitive *p, int n, tdm_mesh **out, double *deviation, char *err, size_t errlen)
{
    double h = p->dims[TDM_CONE_HEIGHT], r = p->dims[TDM_CONE_RADIUS], h2 = 0.5 * h;
    double za = tdm_float_up(h2), zb = -(double)tdm_float_up(h2);
    /* the apothem that keeps the rim inside every side face, and room for rounding */
    double a = r * (za - zb) / (za + h2) * (1 + ldexp(1, -21));
    double rv = a / cos(PI / n);
    uint32_t nv = (uint32_t)n + 2, nt = 2 * (uint32_t)n;
    float *v = malloc(sizeof *v * 3 * nv);
    uint32_t *t = malloc(sizeof *t * 3 * nt);
    if (!v || !t) {
        free(v);
        free(t);
        *out = NULL;
        return fail(TDM_ENOMEM, err, errlen, "out of memory for a cone of %d segments", n);
    }
    /* vertex 0 the apex, 1..n the base polygon, n + 1 the base centre */
    v[0] = v[1] = 0, v[2] = (float)za;
    for (int i = 0; i < n; i++) {
        double phi = 2 * PI * i / n;
        v[3 * (i + 1)] = (float)(rv * cos(phi));
        v[3 * (i + 1) + 1] = (float)(rv * sin(phi));
        v[3 * (i + 1) + 2] = (float)zb;
    }
    v[3 * (n + 1)] = v[3 * (n + 1) + 1] = 0, v[3 * (n + 1) + 2] = (float)zb;
    int rc = TDM_OK;
    for (int i = 0; i < n; i++) {
        uint32_t b = 1 + (uint32_t)i, c = 1 + (uint32_t)((i + 1) % n);
        uint32_t *o = t + 6 * (size_t)i;
        o[0] = 0, o[1] = b, o[2] = c;         /* side, counter-clockwise from outside */
        o[3] = b, o[4] = (uint32_t)n + 1, o[5] = c; /* base */
        /* the edge's distance from the axis, cross / len, against the bound */
        double x1 = v[3 * b], y1 = v[3 * b + 1], x2 = v[3 * c], y2 = v[3 * c + 1];
        double cross = x1 * y2 - x2 * y1, len = sqrt((x2 - x1) * (x2 - x1) + (y2 - y1) * (y2 - y1));
        if (!(cross > 0 && r * (za - zb) * len * (1 + 1e-12) <= cross * (za + h2))) rc = TDM_ERANGE;
    }
    if (rc == TDM_OK) rc = tdm_mesh_create(v, nv, t, nt, NULL, out, err, errlen);
    else {
        *out = NULL;
        fail(rc, err, errlen, "internal error: cone(%.17g, %.17g) with %d segments cuts the cone", h, r, n);
    }
    if (rc == TDM_OK && deviation) *deviation = measure_deviation(p, v, nv);
    free(v);
    free(t);
    return rc;
}

/* Builds a curved primitive with `seg` segments (n for a cylinder or cone, k for
 * a sphere or capsule), already range-checked. */
static int curved_mesh(const tdm_primitive *p, int seg, tdm_mesh **out, double *deviation, char *err,
                       size_t errlen)
{
    if (p->type == TDM_PRIMITIVE_CONE) return cone_mesh(p, seg, out, deviation, err, errlen);
    shape s;
    memset(&s, 0, sizeof s);
    float *v = NULL;
    int rc;
    double rxy, rz, zc; /* vertex = (rxy ux, rxy uy, sigma zc + rz uz) */
    if (p->type == TDM_PRIMITIVE_CYLINDER) {
        double h2 = 0.5 * p->dims[TDM_CYLINDER_HEIGHT], r = p->dims[TDM_CYLINDER_RADIUS];
        if ((rc = cylinder_rings(&s, seg)) || (rc = shape_build(&s))) goto fail;
        /* margins for the float rounding of the vertices (primitive.h) */
        double er = ldexp(r, -22), ez = ldexp(h2, -22);
        rxy = (r + er) / cos(PI / seg);
        rz = h2 + ez;
        zc = 0;
    } else {
        double r = p->dims[0], l2 = p->type == TDM_PRIMITIVE_CAPSULE ? 0.5 * p->dims[TDM_CAPSULE_LENGTH] : 0;
        if ((rc = sphere_rings(&s, seg, p->type == TDM_PRIMITIVE_CAPSULE)) || (rc = shape_build(&s))) goto fail;
        double er = ldexp(r, -22), ez = p->type == TDM_PRIMITIVE_CAPSULE ? ldexp(l2 + r, -22) : 0;
        zc = l2 == 0 ? 0 : l2 + ez;
        rxy = rz = sphere_radius(&s, r + er, zc);
        if (!(rxy > 0)) {
            rc = TDM_ERANGE; /* a facet facing inwards: a bug, not an input */
            fail(rc, err, errlen, "internal error: %s tessellation with %d rings is not convex", type_name[p->type], seg);
            goto fail;
        }
    }
    v = malloc(sizeof *v * 3 * (size_t)s.n_verts);
    if (!v) {
        rc = TDM_ENOMEM;
        goto fail;
    }
    for (int r = 0; r < s.n_rings; r++) {
        const ring *g = &s.rings[r];
        for (uint32_t i = g->base; i < g->base + g->n; i++) {
            tdm_dvec3 u = s.unit[i];
            v[3 * i] = (float)(rxy * u.x);
            v[3 * i + 1] = (float)(rxy * u.y);
            v[3 * i + 2] = (float)(g->sigma * zc + rz * u.z);
        }
    }
    rc = tdm_mesh_create(v, s.n_verts, s.tris, s.n_tris, NULL, out, err, errlen);
    if (rc) goto fail;
    if (deviation) *deviation = measure_deviation(p, v, s.n_verts);
    free(v);
    shape_free(&s);
    return TDM_OK;
fail:
    if (rc == TDM_ENOMEM) fail(rc, err, errlen, "out of memory for a %s of %d segments", type_name[p->type], seg);
    free(v);
    shape_free(&s);
    *out = NULL;
    return rc;
}

/* The tolerance a tessellation is made to: no finer than float resolution allows
 * (primitive.h), so that rings stay many float steps apart. */
static double effective_tolerance(const tdm_primitive *p, double tol)
{
    double size;
    switch (p->type) {
    case TDM_PRIMITIVE_CYLINDER:
    case TDM_PRIMITIVE_CONE: size = p->dims[TDM_CYLINDER_RADIUS] + 0.5 * p->dims[TDM_CYLINDER_HEIGHT]; break;
    case TDM_PRIMITIVE_CAPSULE: size = p->dims[TDM_CAPSULE_RADIUS] + 0.5 * p->dims[TDM_CAPSULE_LENGTH]; break;
    default: size = p->dims[0];
    }
    return fmax(tol, ldexp(size, -19));
}

/* The segment count the rule of primitive.h predicts for a tolerance; the
 * caller checks it on the float mesh. */
static int start_segments(const tdm_primitive *p, double tol)
{
    double r, half;
    int around = p->type == TDM_PRIMITIVE_CYLINDER || p->type == TDM_PRIMITIVE_CONE; /* segments, not rings */
    if (around)
        r = p->dims[TDM_CYLINDER_RADIUS], half = 0.5 * p->dims[TDM_CYLINDER_HEIGHT];
    else
        r = p->dims[0], half = p->type == TDM_PRIMITIVE_CAPSULE ? 0.5 * p->dims[TDM_CAPSULE_LENGTH] : 0;
    /* what the margins and the rounding to float may add to the deviation */
    double slack = ldexp(r + half, -21);
    /* the vertices may lie at (1 + u) r' from the axis */
    double u = (effective_tolerance(p, tol) - slack) / (r * (1 + ldexp(1, -22)));
    int lo, hi;
    double seg;
    if (around) {
        lo = TDM_PRIMITIVE_MIN_SEGMENTS, hi = TDM_PRIMITIVE_MAX_SEGMENTS;
        seg = u > 0 ? ceil(PI / acos(1 / (1 + u))) : hi; /* 1/cos(pi/n) <= 1 + u */
    } else {
        lo = TDM_PRIMITIVE_MIN_RINGS, hi = TDM_PRIMITIVE_MAX_RINGS;
        seg = u > 0 ? ceil(sqrt(0.66 * (1 + u) / u)) : hi; /* 1 - h_min ~ 0.65 / k^2 <= u / (1 + u) */
    }
    return seg < lo ? lo : (seg > hi ? hi : (int)seg);
}

int tdm_primitive_mesh(const tdm_primitive *p, double tolerance, tdm_mesh **out, double *deviation, char *err,
                       size_t errlen)
{
    *out = NULL;
    int rc = tdm_primitive_check(p, err, errlen);
    if (rc) return rc;
    if (!(tolerance >= TDM_PRIMITIVE_MIN_TOLERANCE && tolerance <= TDM_PRIMITIVE_MAX_TOLERANCE))
        return fail(TDM_EINVAL, err, errlen, "tolerance is %g: must be a finite number in [%g, %g] m", tolerance,
                    TDM_PRIMITIVE_MIN_TOLERANCE, TDM_PRIMITIVE_MAX_TOLERANCE);
    if (p->type == TDM_PRIMITIVE_BOX) return box_mesh(p, out, deviation, err, errlen);

    int hi = p->type == TDM_PRIMITIVE_CYLINDER || p->type == TDM_PRIMITIVE_CONE ? TDM_PRIMITIVE_MAX_SEGMENTS
                                                                               : TDM_PRIMITIVE_MAX_RINGS;
    int seg = start_segments(p, tolerance);
    double goal = effective_tolerance(p, tolerance);
    for (;;) {
        double dev;
        tdm_mesh *m;
        rc = curved_mesh(p, seg, &m, &dev, err, errlen);
        if (rc) return rc;
        /* the prediction is close; if the float mesh misses, refine */
        if (dev <= goal || seg == hi) {
            *out = m;
            if (deviation) *deviation = dev;
            return TDM_OK;
        }
        tdm_mesh_free(m);
        seg += seg / 16 > 1 ? seg / 16 : 1;
        if (seg > hi) seg = hi;
    }
}

int tdm__primitive_mesh_segments(const tdm_primitive *p, int segments, tdm_mesh **out, double *deviation,
                                 char *err, size_t errlen)
{
    *out = NULL;
    int rc = tdm_primitive_check(p, err, errlen);
    if (rc) return rc;
    int lo, hi;
    switch (p->type) {
    case TDM_PRIMITIVE_CYLINDER:
    case TDM_PRIMITIVE_CONE: lo = TDM_PRIMITIVE_MIN_SEGMENTS, hi = TDM_PRIMITIVE_MAX_SEGMENTS; break;
    case TDM_PRIMITIVE_SPHERE:
    case TDM_PRIMITIVE_CAPSULE: lo = TDM_PRIMITIVE_MIN_RINGS, hi = TDM_PRIMITIVE_MAX_RINGS; break;
    default: return fail(TDM_EINVAL, err, errlen, "a box has no segment count");
    }
    if (segments < lo || segments > hi)
        return fail(TDM_EINVAL, err, errlen, "%d segments for a %s: must be in [%d, %d]", segments,
                    type_name[p->type], lo, hi);
    return curved_mesh(p, segments, out, deviation, err, errlen);
}

/* ---- the exact solid test ------------------------------------------------------ */

/* Sign of the exact sum of n <= 32 doubles. */
static int sum_sign(const double *t, int n)
{
    double h[40], tmp[40];
    int k = 1;
    h[0] = 0;
    for (int i = 0; i < n; i++) {
        k = tdm__exp_grow(h, k, t[i], tmp);
        memcpy(h, tmp, sizeof *h * (size_t)k);
    }
    return tdm__exp_sign(h, k);
}

/* Is x^2 + y^2 + (zh + zl)^2 <= r^2, exactly? The caller has checked |x|, |y| <= r
 * and |zh| <= 2r (no overflow), and that zh and zl are not so small that their
 * products underflow; x and y below 2^-400 r count as 0, so that their squares
 * are exact too (primitive.h). */
static int in_ball(double x, double y, double zh, double zl, double r)
{
    double tiny = ldexp(r, -400);
    if (fabs(x) < tiny) x = 0;
    if (fabs(y) < tiny) y = 0;
    double t[12];
    tdm__two_prod(x, x, &t[0], &t[1]);
    tdm__two_prod(y, y, &t[2], &t[3]);
    tdm__two_prod(zh, zh, &t[4], &t[5]);
    tdm__two_prod(2 * zh, zl, &t[6], &t[7]);
    tdm__two_prod(zl, zl, &t[8], &t[9]);
    tdm__two_prod(-r, r, &t[10], &t[11]);
    return sum_sign(t, 12) <= 0;
}

/* Is (x, y, z) in the cone (height h, radius r)? |z| <= h/2 and
 * h^2 (x^2 + y^2) <= r^2 (h/2 - z)^2, exactly: every product below is split
 * into two doubles without error (the flushes of primitive.h keep them clear of
 * underflow), and the 32 terms summed as an expansion. */
static int cone_contains(double h, double r, tdm_dvec3 q)
{
    double h2 = 0.5 * h;
    if (fabs(q.z) > h2 || fabs(q.x) > r || fabs(q.y) > r) return 0;
    double x = q.x, y = q.y, z = q.z;
    if (fabs(x) < ldexp(r, -300)) x = 0;
    if (fabs(y) < ldexp(r, -300)) y = 0;
    if (fabs(z) < ldexp(h, -300)) z = z < 0 ? -ldexp(h, -300) : 0;
    double t[32], wh, wl, a[4];
    int k = 0;
    /* h^2 x^2 + h^2 y^2: (p + e)^2 = p^2 + 2 p e + e^2 for h x = p + e */
    double c[2] = {x, y};
    for (int i = 0; i < 2; i++) {
        double p, e;
        tdm__two_prod(h, c[i], &p, &e);
        tdm__two_prod(p, p, &t[k], &t[k + 1]);
        tdm__two_prod(2 * p, e, &t[k + 2], &t[k + 3]);
        tdm__two_prod(e, e, &t[k + 4], &t[k + 5]);
        k += 6;
    }
    /* - (r w)^2, w = h/2 - z = wh + wl, r w = a0 + a1 + a2 + a3 */
    tdm__two_sum(h2, -z, &wh, &wl);
    tdm__two_prod(r, wh, &a[0], &a[1]);
    tdm__two_prod(r, wl, &a[2], &a[3]);
    for (int i = 0; i < 4; i++)
        for (int j = i; j < 4; j++) {
            double f = i == j ? -1 : -2;
            tdm__two_prod(f * a[i], a[j], &t[k], &t[k + 1]);
            k += 2;
        }
    return sum_sign(t, k) <= 0;
}

int tdm_primitive_contains(const tdm_primitive *p, tdm_dvec3 q)
{
    int rc = tdm_primitive_check(p, NULL, 0);
    if (rc) return rc;
    if (!isfinite(q.x) || !isfinite(q.y) || !isfinite(q.z)) return TDM_EINVAL;
    const double *d = p->dims;
    double ax = fabs(q.x), ay = fabs(q.y), az = fabs(q.z);
    switch (p->type) {
    case TDM_PRIMITIVE_BOX: /* halving is exact in this range */
        return ax <= 0.5 * d[0] && ay <= 0.5 * d[1] && az <= 0.5 * d[2];
    case TDM_PRIMITIVE_SPHERE: {
        double r = d[0];
        if (ax > r || ay > r || az > r) return 0;
        return in_ball(q.x, q.y, az < ldexp(r, -400) ? 0 : az, 0, r);
    }
    case TDM_PRIMITIVE_CYLINDER: {
        double r = d[TDM_CYLINDER_RADIUS];
        if (az > 0.5 * d[TDM_CYLINDER_HEIGHT] || ax > r || ay > r) return 0;
        return in_ball(q.x, q.y, 0, 0, r);
    }
    case TDM_PRIMITIVE_CAPSULE: {
        double r = d[TDM_CAPSULE_RADIUS], l2 = 0.5 * d[TDM_CAPSULE_LENGTH];
        if (ax > r || ay > r) return 0;
        double zh = 0, zl = 0;
        if (az > l2) {
            /* |z| - l2 exactly, as zh + zl: both are multiples of l2's last bit,
             * >= 2^-74 here, so the products below do not underflow */
            tdm__two_sum(az, -l2, &zh, &zl);
            if (zh > 2 * r) return 0;
        }
        return in_ball(q.x, q.y, zh, zl, r);
    }
    case TDM_PRIMITIVE_CONE: return cone_contains(d[TDM_CONE_HEIGHT], d[TDM_CONE_RADIUS], q);
    }
    return TDM_EINVAL;
}
