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

/* Does box a (frame A) overlap box b, given as w = b in frame A with half-lengths
 * eb? Conservative: may say 1 for boxes a hair apart, never 0 for boxes that meet. */
TDM_INLINE TDM_HD int tdm_obb_overlap_w(const tdm_bvh_node *a, const tdm_wbox *w, const float *eb, float tol)
{
    float R[3][3], AR[3][3], T[3], cw[3];
    const float *ea = a->extent;
    for (int i = 0; i < 3; i++) cw[i] = w->center[i] - a->center[i];
    /* a's face axes */
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            R[i][j] = tdm__fdot3(a->axis[i], w->axis[j]);
            AR[i][j] = fabsf(R[i][j]) + TDM_OBB_EPS;
        }
        T[i] = tdm__fdot3(a->axis[i], cw);
        if (fabsf(T[i]) > fmaf(eb[0], AR[i][0], fmaf(eb[1], AR[i][1], fmaf(eb[2], AR[i][2], ea[i] + tol)))) return 0;
    }
    /* b's face axes */
    for (int j = 0; j < 3; j++) {
        float tb = fmaf(T[0], R[0][j], fmaf(T[1], R[1][j], T[2] * R[2][j]));
        if (fabsf(tb) > fmaf(ea[0], AR[0][j], fmaf(ea[1], AR[1][j], fmaf(ea[2], AR[2][j], eb[j] + tol)))) return 0;
    }
    /* the nine edge-edge axes a_i x b_j */
    for (int i = 0; i < 3; i++) {
        int i1 = (i + 1) % 3, i2 = (i + 2) % 3;
        for (int j = 0; j < 3; j++) {
            int j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            float t = fabsf(fmaf(T[i2], R[i1][j], -T[i1] * R[i2][j]));
            float r = fmaf(ea[i1], AR[i2][j], fmaf(ea[i2], AR[i1][j], fmaf(eb[j1], AR[i][j2], fmaf(eb[j2], AR[i][j1], tol))));
            if (t > r) return 0;
        }
    }
    return 1;
}

/* Do box a (frame A) and box b (frame B, placed in A by x) overlap? */
TDM_INLINE TDM_HD int tdm_obb_overlap(const tdm_bvh_node *a, const tdm_bvh_node *b, const tdm_fxform *x, float tol)
{
    tdm_wbox w;
    tdm_wbox_of(x, b, &w);
    return tdm_obb_overlap_w(a, &w, b->extent, tol);
}

#endif
