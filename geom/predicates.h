/* Exact orientation predicates on double coordinates.
 *
 * Each predicate first evaluates its determinant in plain double and trusts the
 * sign when it exceeds a forward error bound (Shewchuk's "stage A" bounds); only
 * near-degenerate inputs fall through to exact evaluation with floating-point
 * expansions (sums of non-overlapping doubles, built from error-free
 * transformations: two_sum, and two_prod through fma). The result is therefore
 * the sign of the exact determinant of the given doubles, so every test built on
 * these predicates (triangle-triangle intersection in particular) is exact for
 * coplanar, touching and zero-area inputs. */
#ifndef TDM_GEOM_PREDICATES_H
#define TDM_GEOM_PREDICATES_H

#include "vec.h"

/* Largest expansion the exact 3D predicate builds: 4 cofactors of 24 terms. */
#define TDM_EXP_MAX 96

TDM_INLINE TDM_HD void tdm__two_sum(double a, double b, double *x, double *y)
{
    double s = a + b;
    double bv = s - a;
    double av = s - bv;
    *x = s;
    *y = (a - av) + (b - bv);
}

TDM_INLINE TDM_HD void tdm__two_prod(double a, double b, double *x, double *y)
{
    double p = a * b;
    *x = p;
    *y = fma(a, b, -p);
}

/* h = e + b, zero components dropped; returns the length of h. h may not alias e. */
TDM_INLINE TDM_HD int tdm__exp_grow(const double *e, int n, double b, double *h)
{
    double q = b;
    int k = 0;
    for (int i = 0; i < n; i++) {
        double s, err;
        tdm__two_sum(q, e[i], &s, &err);
        if (err != 0) h[k++] = err;
        q = s;
    }
    if (q != 0 || k == 0) h[k++] = q;
    return k;
}

/* e += f, in place through a scratch buffer; returns the new length of e. */
TDM_INLINE TDM_HD int tdm__exp_add(double *e, int n, const double *f, int m, double *scratch)
{
    for (int j = 0; j < m; j++) {
        n = tdm__exp_grow(e, n, f[j], scratch);
        for (int i = 0; i < n; i++) e[i] = scratch[i];
    }
    return n;
}

/* h = e * b; returns the length of h (at most 2n). */
TDM_INLINE TDM_HD int tdm__exp_scale(const double *e, int n, double b, double *h)
{
    double tmp[2 * 24];
    int k = 1;
    h[0] = 0;
    for (int i = 0; i < n; i++) {
        double p, pe;
        tdm__two_prod(e[i], b, &p, &pe);
        k = tdm__exp_grow(h, k, pe, tmp);
        k = tdm__exp_grow(tmp, k, p, h);
    }
    return k;
}

TDM_INLINE TDM_HD int tdm__exp_sign(const double *e, int n)
{
    for (int i = n - 1; i >= 0; i--)
        if (e[i] != 0) return e[i] > 0 ? 1 : -1;
    return 0;
}

/* An expansion equal to the exact sum of n doubles. */
TDM_INLINE TDM_HD int tdm__exp_of_terms(const double *t, int n, double *h)
{
    double tmp[8];
    int k = 1;
    h[0] = 0;
    for (int i = 0; i < n; i++) {
        k = tdm__exp_grow(h, k, t[i], tmp);
        for (int j = 0; j < k; j++) h[j] = tmp[j];
    }
    return k;
}

/* px*qy - py*qx exactly, as an expansion of at most 4 terms. */
TDM_INLINE TDM_HD int tdm__exp_minor2(double px, double py, double qx, double qy, double *h)
{
    double t[4];
    tdm__two_prod(px, qy, &t[0], &t[1]);
    tdm__two_prod(-py, qx, &t[2], &t[3]);
    return tdm__exp_of_terms(t, 4, h);
}

/* Exact det[[px py pz],[qx qy qz],[rx ry rz]] = pz*m(q,r) - qz*m(p,r) + rz*m(p,q);
 * at most 24 terms. */
TDM_INLINE TDM_HD int tdm__exp_det3(tdm_dvec3 p, tdm_dvec3 q, tdm_dvec3 r, double *h)
{
    double m[4], s[8], scratch[24];
    int n, k;
    n = tdm__exp_minor2(q.x, q.y, r.x, r.y, m);
    k = tdm__exp_scale(m, n, p.z, h);
    n = tdm__exp_minor2(p.x, p.y, r.x, r.y, m);
    n = tdm__exp_scale(m, n, -q.z, s);
    k = tdm__exp_add(h, k, s, n, scratch);
    n = tdm__exp_minor2(p.x, p.y, q.x, q.y, m);
    n = tdm__exp_scale(m, n, r.z, s);
    return tdm__exp_add(h, k, s, n, scratch);
}

/* Exact sign of det[a-d; b-d; c-d], which equals the 4x4 determinant with a
 * column of ones: D(a,b,c) - D(a,b,d) + D(a,c,d) - D(b,c,d). */
TDM_COLD TDM_HD int tdm_orient3d_exact(tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c, tdm_dvec3 d)
{
    /* Usually the differences a - d, b - d, c - d are exact in double (their
     * rounding errors are zero): then the 3x3 determinant of the differences is
     * the answer, one expansion instead of four. */
    double t[9], e[9];
    tdm__two_sum(a.x, -d.x, &t[0], &e[0]); tdm__two_sum(a.y, -d.y, &t[1], &e[1]); tdm__two_sum(a.z, -d.z, &t[2], &e[2]);
    tdm__two_sum(b.x, -d.x, &t[3], &e[3]); tdm__two_sum(b.y, -d.y, &t[4], &e[4]); tdm__two_sum(b.z, -d.z, &t[5], &e[5]);
    tdm__two_sum(c.x, -d.x, &t[6], &e[6]); tdm__two_sum(c.y, -d.y, &t[7], &e[7]); tdm__two_sum(c.z, -d.z, &t[8], &e[8]);
    int exact = 1;
    for (int k = 0; k < 9; k++) exact &= e[k] == 0;
    if (exact) {
        double h[24];
        int n = tdm__exp_det3(tdm_d3(t[0], t[1], t[2]), tdm_d3(t[3], t[4], t[5]), tdm_d3(t[6], t[7], t[8]), h);
        return tdm__exp_sign(h, n);
    }
    double acc[TDM_EXP_MAX], part[24], scratch[TDM_EXP_MAX];
    int k = tdm__exp_det3(a, b, c, acc);
    int n = tdm__exp_det3(a, b, d, part);
    for (int i = 0; i < n; i++) part[i] = -part[i];
    k = tdm__exp_add(acc, k, part, n, scratch);
    n = tdm__exp_det3(a, c, d, part);
    k = tdm__exp_add(acc, k, part, n, scratch);
    n = tdm__exp_det3(b, c, d, part);
    for (int i = 0; i < n; i++) part[i] = -part[i];
    k = tdm__exp_add(acc, k, part, n, scratch);
    return tdm__exp_sign(acc, k);
}

/* tdm_orient3d's floating-point stage alone: its sign when the forward error
 * bound proves it, else 0 ("not known"; the exact value may be anything). */
TDM_INLINE TDM_HD int tdm_orient3d_filter(tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c, tdm_dvec3 d)
{
    double adx = a.x - d.x, ady = a.y - d.y, adz = a.z - d.z;
    double bdx = b.x - d.x, bdy = b.y - d.y, bdz = b.z - d.z;
    double cdx = c.x - d.x, cdy = c.y - d.y, cdz = c.z - d.z;
    double bc = bdy * cdz - bdz * cdy, ca = cdy * adz - cdz * ady, ab = ady * bdz - adz * bdy;
    double det = adx * bc + bdx * ca + cdx * ab;
    double perm = fabs(adx) * (fabs(bdy * cdz) + fabs(bdz * cdy)) +
                  fabs(bdx) * (fabs(cdy * adz) + fabs(cdz * ady)) +
                  fabs(cdx) * (fabs(ady * bdz) + fabs(adz * bdy));
    double bound = 7.7716e-16 * perm; /* (7 + 56 eps) eps, eps = 2^-53, rounded up */
    if (det > bound) return 1;
    if (-det > bound) return -1;
    return 0;
}

/* Sign of (a-d) . ((b-d) x (c-d)): positive when d lies below the plane through
 * a, b, c that sees them counter-clockwise from above. Exact. */
TDM_INLINE TDM_HD int tdm_orient3d(tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c, tdm_dvec3 d)
{
    int s = tdm_orient3d_filter(a, b, c, d);
    return s ? s : tdm_orient3d_exact(a, b, c, d);
}

/* Exact m(a,b) - m(a,c) + m(b,c), the 2D orientation determinant. */
TDM_COLD TDM_HD int tdm__orient2d_exact(double ax, double ay, double bx, double by, double cx, double cy)
{
    double t[4], e[4];
    tdm__two_sum(ax, -cx, &t[0], &e[0]); tdm__two_sum(ay, -cy, &t[1], &e[1]);
    tdm__two_sum(bx, -cx, &t[2], &e[2]); tdm__two_sum(by, -cy, &t[3], &e[3]);
    if (e[0] == 0 && e[1] == 0 && e[2] == 0 && e[3] == 0) { /* exact differences: one 2x2 minor */
        double h[4];
        return tdm__exp_sign(h, tdm__exp_minor2(t[0], t[1], t[2], t[3], h));
    }
    double acc[12], part[4], scratch[12];
    int k = tdm__exp_minor2(ax, ay, bx, by, acc);
    int n = tdm__exp_minor2(ax, ay, cx, cy, part);
    for (int q = 0; q < n; q++) part[q] = -part[q];
    k = tdm__exp_add(acc, k, part, n, scratch);
    n = tdm__exp_minor2(bx, by, cx, cy, part);
    k = tdm__exp_add(acc, k, part, n, scratch);
    return tdm__exp_sign(acc, k);
}

/* Exact sign of (a-c) x (b-c) on the two chosen coordinates (i, j in 0..2):
 * positive when a, b, c turn counter-clockwise. */
TDM_INLINE TDM_HD int tdm_orient2d(tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c, int i, int j)
{
    double ax = tdm_d3_get(a, i), ay = tdm_d3_get(a, j);
    double bx = tdm_d3_get(b, i), by = tdm_d3_get(b, j);
    double cx = tdm_d3_get(c, i), cy = tdm_d3_get(c, j);
    double l = (ax - cx) * (by - cy), r = (ay - cy) * (bx - cx);
    double det = l - r;
    double bound = 3.3307e-16 * (fabs(l) + fabs(r)); /* (3 + 16 eps) eps */
    if (det > bound) return 1;
    if (-det > bound) return -1;
    return tdm__orient2d_exact(ax, ay, bx, by, cx, cy);
}

#endif
