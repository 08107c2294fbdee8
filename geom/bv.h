/* Bounding volumes: axis-aligned boxes and oriented boxes (OBBs).
 *
 * The OBB test is the 15-axis separating-axis test of Gottschalk, Lin and Manocha
 * (OBBTree, 1996) in float. It is made conservative, never reporting "disjoint"
 * for boxes whose contents meet: each |R_ij| is raised by TDM_OBB_EPS so that
 * nearly parallel edges do not produce a meaningless cross-product axis, and every
 * comparison gets an absolute slack `tol` that the caller derives from the
 * coordinates' magnitude (rounding of a float box far from the origin is
 * proportional to that magnitude, not to the box). */
#ifndef TDM_GEOM_BV_H
#define TDM_GEOM_BV_H

#include <float.h>

#include "vec.h"

#define TDM_OBB_EPS 1e-6f

typedef struct tdm_aabb { tdm_vec3 lo, hi; } tdm_aabb;

TDM_INLINE TDM_HD tdm_aabb tdm_aabb_empty(void)
{
    tdm_aabb b = {{FLT_MAX, FLT_MAX, FLT_MAX}, {-FLT_MAX, -FLT_MAX, -FLT_MAX}};
    return b;
}
TDM_INLINE TDM_HD tdm_aabb tdm_aabb_grow(tdm_aabb b, tdm_vec3 p)
{
    b.lo = tdm_v3(fminf(b.lo.x, p.x), fminf(b.lo.y, p.y), fminf(b.lo.z, p.z));
    b.hi = tdm_v3(fmaxf(b.hi.x, p.x), fmaxf(b.hi.y, p.y), fmaxf(b.hi.z, p.z));
    return b;
}
/* Closed boxes: touching counts. */
TDM_INLINE TDM_HD int tdm_aabb_overlap(tdm_aabb a, tdm_aabb b)
{
    return a.lo.x <= b.hi.x && b.lo.x <= a.hi.x && a.lo.y <= b.hi.y && b.lo.y <= a.hi.y &&
           a.lo.z <= b.hi.z && b.lo.z <= a.hi.z;
}

/* One node of an OBB tree; 64 bytes, one cache line. The box is
 * { center + sum_k s_k axis[k] : |s_k| <= extent[k] } in its mesh's frame. */
typedef struct tdm_bvh_node {
    TDM_ALIGN(16) float axis[3][3]; /* rows: unit axes */
    float center[3];
    float extent[3];  /* half-lengths along the axes */
    int32_t link;     /* >= 0: internal, right child index (left child is this + 1);
                         < 0: leaf, ~link = first_triangle << 1 | (count - 1) */
} tdm_bvh_node;

TDM_INLINE TDM_HD int tdm_node_is_leaf(const tdm_bvh_node *n) { return n->link < 0; }
TDM_INLINE TDM_HD uint32_t tdm_leaf_first(const tdm_bvh_node *n) { return ((uint32_t)~n->link) >> 1; }
TDM_INLINE TDM_HD uint32_t tdm_leaf_count(const tdm_bvh_node *n) { return (((uint32_t)~n->link) & 1u) + 1u; }

/* A rigid transform in float for box tests: maps frame B into frame A. */
typedef struct tdm_fxform { float r[3][3]; float t[3]; } tdm_fxform;

TDM_INLINE TDM_HD tdm_fxform tdm_fxform_of(const tdm_xform *x)
{
    tdm_fxform f;
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) f.r[i][j] = (float)x->r.m[i][j];
        f.t[i] = (float)tdm_d3_get(x->t, i);
    }
    return f;
}

/* Slack for box tests between meshes whose vertices lie within radius_a and
 * radius_b of their origins, B placed by a translation of length |t|. */
TDM_INLINE TDM_HD float tdm_obb_tolerance(float radius_a, float radius_b, float t_len)
{
    return 16.0f * FLT_EPSILON * (radius_a + radius_b + t_len);
}

/* Are two meshes apart for certain, B placed in A's frame by x, each within the
 * cube of half-size radius about its own origin (tdm_bvh.radius: the largest
 * |coordinate| of a vertex)? B's vertices then lie within |R| radius_b of t on
 * every axis (|R| the largest absolute row sum of x's matrix), so a |t_i| past
 * radius_a plus that leaves no point in common; the factor 1 + 1e-9 covers the
 * rounding of the moved vertices (~1e-16 of these magnitudes). In double and
 * without squares, so that any finite x is answered: a translation past float's
 * range (a pose or a joint value of 1e200, say) would turn the float box tests
 * into inf and NaN (never apart: every leaf pair tested) and overflow the
 * predicates' products. */
TDM_INLINE TDM_HD int tdm_bounds_apart(const tdm_xform *x, float radius_a, float radius_b)
{
    double n = 0;
    for (int i = 0; i < 3; i++) {
        double s = fabs(x->r.m[i][0]) + fabs(x->r.m[i][1]) + fabs(x->r.m[i][2]);
        n = s > n ? s : n;
    }
    double reach = ((double)radius_a + n * (double)radius_b) * (1 + 1e-9);
    return fabs(x->t.x) > reach || fabs(x->t.y) > reach || fabs(x->t.z) > reach;
}

/* The placement a traversal that starts with the root box test uses for x (the
 * GPU engines'): x itself, or for meshes apart for certain (tdm_bounds_apart)
 * B unrotated at 8 (radius_a + radius_b) + 1 along A's x axis, finite in float
 * for meshes within 1/8 of float's range. A root box lies within 5 radii of its
 * mesh's origin (its centre within sqrt(3) radius, its corners within 3 radius
 * of that), so one of A's face axes then separates the root boxes by about
 * (radius_a + radius_b + 1) / sqrt(3), far past the float test's slack: the
 * answer (apart) comes from the first test, where x's own translation, past
 * float's range, would be inf and NaN in the box tests and would overflow the
 * leaf tests' products. (The CPU engine answers such a task without a box test.) */
TDM_INLINE TDM_HD tdm_xform tdm_bounds_placement(const tdm_xform *x, float radius_a, float radius_b)
{
    if (!tdm_bounds_apart(x, radius_a, radius_b)) return *x;
    tdm_xform f = tdm_xform_identity();
    f.t.x = 8 * ((double)radius_a + (double)radius_b) + 1;
    return f;
}

/* Box b's axes (rows) and center expressed in frame A: computed once per node and
 * reused against every box of A it meets (the traversal tests both children of
 * a node pair against the same transformed box). */
typedef struct tdm_wbox { float axis[3][3]; float center[3]; } tdm_wbox;

/* Box tests are conservative by their slack, so they may fuse multiply-adds:
 * fmaf is one instruction on both sides (-mfma on the host) and rounds the same
 * on host and device. */
TDM_INLINE TDM_HD float tdm__fdot3(const float *a, const float *b) { return fmaf(a[0], b[0], fmaf(a[1], b[1], a[2] * b[2])); }

TDM_INLINE TDM_HD void tdm_wbox_of(const tdm_fxform *x, const tdm_bvh_node *b, tdm_wbox *w)
{
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 3; i++) w->axis[j][i] = tdm__fdot3(x->r[i], b->axis[j]);
    for (int i = 0; i < 3; i++) w->center[i] = tdm__fdot3(x->r[i], b->center) + x->t[i];
}

/* What the float box test can say: apart by more than the slack, overlapping,
 * or overlapping only by grace of the slack on some axis (apart without it).
 * The last is where a pair of parallel sheets a hair apart would keep the
 * float test saying "overlap" down to every leaf pair (quadratic work): the
 * CPU engine then asks tdm_obb_apart_exact (below), which can tell. */
enum { TDM_OBB_APART = 0, TDM_OBB_OVERLAP = 1, TDM_OBB_MARGINAL = 2 };

/* Where an axis's overlap counts as marginal: within the slack, or within
 * what the tree build added to the extents (bvh.c rounds them outward by a few
 * parts in 1e6 of the extent and of the center's magnitude, which the slack
 * bounds). A generous trigger: it only decides when the exact stage is asked. */
TDM_INLINE TDM_HD float tdm__obb_margin(float r, float tol) { return r * (1 - 1e-5f) - 3 * tol; }

/* The 15-axis test. With `margin` 0 it returns APART or OVERLAP only; with 1
 * (pass a constant: the extra compares compile away otherwise) an overlap
 * that needed the slack on some axis is MARGINAL. The comparisons are the
 * same either way, so both forms say APART for the same boxes. */
TDM_ALWAYS_INLINE TDM_HD int tdm__obb_sat(const tdm_bvh_node *a, const tdm_wbox *w, const float *eb, float tol, int margin)
{
    float R[3][3], AR[3][3], T[3], cw[3];
    const float *ea = a->extent;
    int marginal = 0;
    for (int i = 0; i < 3; i++) cw[i] = w->center[i] - a->center[i];
    /* a's face axes */
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            R[i][j] = tdm__fdot3(a->axis[i], w->axis[j]);
            AR[i][j] = fabsf(R[i][j]) + TDM_OBB_EPS;
        }
        T[i] = tdm__fdot3(a->axis[i], cw);
        float r = fmaf(eb[0], AR[i][0], fmaf(eb[1], AR[i][1], fmaf(eb[2], AR[i][2], ea[i] + tol)));
        if (fabsf(T[i]) > r) return TDM_OBB_APART;
        if (margin && fabsf(T[i]) > tdm__obb_margin(r, tol)) marginal = 1;
    }
    /* b's face axes */
    for (int j = 0; j < 3; j++) {
        float tb = fmaf(T[0], R[0][j], fmaf(T[1], R[1][j], T[2] * R[2][j]));
        float r = fmaf(ea[0], AR[0][j], fmaf(ea[1], AR[1][j], fmaf(ea[2], AR[2][j], eb[j] + tol)));
        if (fabsf(tb) > r) return TDM_OBB_APART;
        if (margin && fabsf(tb) > tdm__obb_margin(r, tol)) marginal = 1;
    }
    /* the nine edge-edge axes a_i x b_j */
    for (int i = 0; i < 3; i++) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; j++) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            float t = fabsf(fmaf(T[i2], R[i1][j], -T[i1] * R[i2][j]));
            float r = fmaf(ea[i1], AR[i2][j], fmaf(ea[i2], AR[i1][j], fmaf(eb[j1], AR[i][j2], fmaf(eb[j2], AR[i][j1], tol))));
            if (t > r) return TDM_OBB_APART;
            if (margin && t > tdm__obb_margin(r, tol)) marginal = 1;
        }
    }
    return marginal ? TDM_OBB_MARGINAL : TDM_OBB_OVERLAP;
}

/* Does box a (frame A) overlap box b, given as w = b in frame A with half-lengths
 * eb? Conservative: may say 1 for boxes a hair apart, never 0 for boxes that meet. */
TDM_ALWAYS_INLINE TDM_HD int tdm_obb_overlap_w(const tdm_bvh_node *a, const tdm_wbox *w, const float *eb, float tol)
{
    return tdm__obb_sat(a, w, eb, tol, 0) != TDM_OBB_APART;
}

/* Do box a (frame A) and box b (frame B, placed in A by x) overlap? */
TDM_INLINE TDM_HD int tdm_obb_overlap(const tdm_bvh_node *a, const tdm_bvh_node *b, const tdm_fxform *x, float tol)
{
    tdm_wbox w;
    tdm_wbox_of(x, b, &w);
    return tdm_obb_overlap_w(a, &w, b->extent, tol);
}

/* ---- the exact stage ------------------------------------------------------
 *
 * A node's float axes are orthonormal only to ~1e-7, so the float test must
 * allow slack in proportion to the coordinates, and two parallel sheets closer
 * than that (1e-7 apart, say) overlap at every level of the tree: the
 * traversal then tests every leaf pair, quadratic in the triangles. This test
 * can tell them apart. It reads a node as the parallelepiped
 *   { p : |u_k . (p - c)| <= f_k, k = 0..2 }
 * of its stored float axes u_k (rows) and center c, and extents f_k measured
 * for that form exactly (tdm_bvh's exact_extent, rounded up to float: see
 * tdm_bvh_exact_extents), so it needs no orthonormality: with W = U^-1 (columns
 * w_k) the box is { c + sum_k s_k w_k : |s_k| <= f_k } and its half-width along
 * any direction d is sum_k f_k |d . w_k|. B is placed by the task's double
 * transform x exactly as the leaf tests place its vertices. Along the face
 * normals of both boxes and the cross products of their edge directions, in
 * double, it reports apart only by more than `slack` (the caller's bound on
 * the rounding of the moved vertices and of this arithmetic, see
 * tdm_obb_exact_slack); an edge pair too close to parallel for its cross
 * product to mean anything is skipped, which can only keep boxes together.
 * Returns 1 when the boxes are apart, 0 when they may meet. */
typedef struct tdm_xbox { tdm_dvec3 c, u[3], w[3]; double f[3]; } tdm_xbox;

/* Node n (its float axes and center, extents f) as a tdm_xbox; 0 when its axes
 * are too far from a basis to be inverted reliably (never for a built tree). */
TDM_INLINE TDM_HD int tdm_xbox_of(const tdm_bvh_node *n, const float f[3], tdm_xbox *b)
{
    for (int k = 0; k < 3; k++) {
        b->u[k] = tdm_d3(n->axis[k][0], n->axis[k][1], n->axis[k][2]);
        b->f[k] = f[k];
    }
    b->c = tdm_d3(n->center[0], n->center[1], n->center[2]);
    tdm_dvec3 c0 = tdm_d3_cross(b->u[1], b->u[2]), c1 = tdm_d3_cross(b->u[2], b->u[0]),
              c2 = tdm_d3_cross(b->u[0], b->u[1]);
    double det = tdm_d3_dot(b->u[0], c0);
    if (!(fabs(det - 1) < 1e-3 || fabs(det + 1) < 1e-3)) return 0;
    b->w[0] = tdm_d3_scale(c0, 1 / det); /* the columns of U^-1 */
    b->w[1] = tdm_d3_scale(c1, 1 / det);
    b->w[2] = tdm_d3_scale(c2, 1 / det);
    return 1;
}

TDM_INLINE TDM_HD double tdm__xbox_half(const tdm_xbox *b, tdm_dvec3 d)
{
    return b->f[0] * fabs(tdm_d3_dot(d, b->w[0])) + b->f[1] * fabs(tdm_d3_dot(d, b->w[1])) +
           b->f[2] * fabs(tdm_d3_dot(d, b->w[2]));
}

/* Slack for tdm_obb_apart_exact between meshes whose vertices lie within
 * radius_a and radius_b of their origins, B placed by a translation of length
 * |t|: double rounding is ~1e-16 of those magnitudes per operation; 1e-10 of
 * them leaves four orders of magnitude to spare and still separates sheets
 * 1e-7 apart on meshes of unit size. */
TDM_INLINE TDM_HD double tdm_obb_exact_slack(double radius_a, double radius_b, double t_len)
{
    return 1e-10 * (radius_a + radius_b + t_len) + 1e-300;
}

TDM_INLINE TDM_HD int tdm_obb_apart_exact(const tdm_xbox *a, const tdm_xbox *b_own, const tdm_xform *x, double slack)
{
    tdm_xbox b; /* b in A's frame */
    b.c = tdm_xform_apply(x, b_own->c);
    for (int k = 0; k < 3; k++) {
        b.u[k] = tdm_dm3_mulv(&x->r, b_own->u[k]);
        b.w[k] = tdm_dm3_mulv(&x->r, b_own->w[k]);
        b.f[k] = b_own->f[k];
    }
    tdm_dvec3 dc = tdm_d3_sub(b.c, a->c);
    for (int k = 0; k < 6; k++) {
        tdm_dvec3 d = k < 3 ? a->u[k] : b.u[k - 3];
        double len = tdm_d3_len(d);
        if (fabs(tdm_d3_dot(d, dc)) > tdm__xbox_half(a, d) + tdm__xbox_half(&b, d) + slack * len) return 1;
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            tdm_dvec3 d = tdm_d3_cross(a->w[i], b.w[j]);
            double len2 = tdm_d3_len2(d);
            if (!(len2 > 1e-12 * tdm_d3_len2(a->w[i]) * tdm_d3_len2(b.w[j]))) continue;
            d = tdm_d3_scale(d, 1 / sqrt(len2));
            if (fabs(tdm_d3_dot(d, dc)) > tdm__xbox_half(a, d) + tdm__xbox_half(&b, d) + slack) return 1;
        }
    return 0;
}

#endif
