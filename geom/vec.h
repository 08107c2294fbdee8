/* Vectors, 3x3 matrices, quaternions and rigid transforms.
 *
 * Two precisions on purpose: bounding volumes are float (half the memory traffic,
 * and what the GPU is fast at), while exact triangle tests run on double
 * coordinates so that a robot triangle moved by a pose keeps ~16 digits, as FCL's
 * does. Quaternions are stored (x, y, z, w), the order of OMPL's .path files. */
#ifndef TDM_GEOM_VEC_H
#define TDM_GEOM_VEC_H

#include "base.h"

typedef struct tdm_vec3 { float x, y, z; } tdm_vec3;
typedef struct tdm_dvec3 { double x, y, z; } tdm_dvec3;
/* Row-major: m[r][c]. */
typedef struct tdm_mat3 { float m[3][3]; } tdm_mat3;
typedef struct tdm_dmat3 { double m[3][3]; } tdm_dmat3;
typedef struct tdm_quat { double x, y, z, w; } tdm_quat;
/* A rigid transform: p -> R p + t. */
typedef struct tdm_xform { tdm_dmat3 r; tdm_dvec3 t; } tdm_xform;

TDM_INLINE TDM_HD tdm_vec3 tdm_v3(float x, float y, float z) { tdm_vec3 v = {x, y, z}; return v; }
TDM_INLINE TDM_HD tdm_vec3 tdm_v3_add(tdm_vec3 a, tdm_vec3 b) { return tdm_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
TDM_INLINE TDM_HD tdm_vec3 tdm_v3_sub(tdm_vec3 a, tdm_vec3 b) { return tdm_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
TDM_INLINE TDM_HD tdm_vec3 tdm_v3_scale(tdm_vec3 a, float s) { return tdm_v3(a.x * s, a.y * s, a.z * s); }
TDM_INLINE TDM_HD float tdm_v3_dot(tdm_vec3 a, tdm_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
TDM_INLINE TDM_HD tdm_vec3 tdm_v3_cross(tdm_vec3 a, tdm_vec3 b)
{
    return tdm_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
TDM_INLINE TDM_HD float tdm_v3_len(tdm_vec3 a) { return sqrtf(tdm_v3_dot(a, a)); }

TDM_INLINE TDM_HD tdm_dvec3 tdm_d3(double x, double y, double z) { tdm_dvec3 v = {x, y, z}; return v; }
TDM_INLINE TDM_HD tdm_dvec3 tdm_d3_of(tdm_vec3 a) { return tdm_d3(a.x, a.y, a.z); }
TDM_INLINE TDM_HD tdm_dvec3 tdm_d3_add(tdm_dvec3 a, tdm_dvec3 b) { return tdm_d3(a.x + b.x, a.y + b.y, a.z + b.z); }
/* The same point (compares values: -0 and 0 are equal). */
TDM_INLINE TDM_HD int tdm_d3_same(tdm_dvec3 a, tdm_dvec3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
TDM_INLINE TDM_HD tdm_dvec3 tdm_d3_sub(tdm_dvec3 a, tdm_dvec3 b) { return tdm_d3(a.x - b.x, a.y - b.y, a.z - b.z); }
TDM_INLINE TDM_HD tdm_dvec3 tdm_d3_scale(tdm_dvec3 a, double s) { return tdm_d3(a.x * s, a.y * s, a.z * s); }
TDM_INLINE TDM_HD double tdm_d3_dot(tdm_dvec3 a, tdm_dvec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
TDM_INLINE TDM_HD tdm_dvec3 tdm_d3_cross(tdm_dvec3 a, tdm_dvec3 b)
{
    return tdm_d3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
TDM_INLINE TDM_HD double tdm_d3_len2(tdm_dvec3 a) { return tdm_d3_dot(a, a); }
TDM_INLINE TDM_HD double tdm_d3_len(tdm_dvec3 a) { return sqrt(tdm_d3_dot(a, a)); }
TDM_INLINE TDM_HD double tdm_d3_get(tdm_dvec3 a, int i) { return i == 0 ? a.x : (i == 1 ? a.y : a.z); }

/* Products and sums that the compiler may not fuse into fma. Placing a vertex
 * by a pose must round identically on every engine, or two engines disagree on
 * contacts that are within an ulp of touching (nvcc fuses by default; host code
 * is built with -ffp-contract=off, set on tdm_geom's users). */
#if defined(__CUDA_ARCH__)
#define TDM_DMUL(a, b) __dmul_rn((a), (b))
#define TDM_DADD(a, b) __dadd_rn((a), (b))
#else
#define TDM_DMUL(a, b) ((a) * (b))
#define TDM_DADD(a, b) ((a) + (b))
#endif

/* m v, rounded as ((m0 x + m1 y) + m2 z) with no fused operations. */
TDM_INLINE TDM_HD double tdm__dot3_strict(const double *m, tdm_dvec3 v)
{
    return TDM_DADD(TDM_DADD(TDM_DMUL(m[0], v.x), TDM_DMUL(m[1], v.y)), TDM_DMUL(m[2], v.z));
}
TDM_INLINE TDM_HD tdm_dvec3 tdm_dm3_mulv(const tdm_dmat3 *m, tdm_dvec3 v)
{
    return tdm_d3(tdm__dot3_strict(m->m[0], v), tdm__dot3_strict(m->m[1], v), tdm__dot3_strict(m->m[2], v));
}
/* m^T v */
TDM_INLINE TDM_HD tdm_dvec3 tdm_dm3_tmulv(const tdm_dmat3 *m, tdm_dvec3 v)
{
    return tdm_d3(m->m[0][0] * v.x + m->m[1][0] * v.y + m->m[2][0] * v.z,
                  m->m[0][1] * v.x + m->m[1][1] * v.y + m->m[2][1] * v.z,
                  m->m[0][2] * v.x + m->m[1][2] * v.y + m->m[2][2] * v.z);
}
TDM_INLINE TDM_HD tdm_dmat3 tdm_dm3_mul(const tdm_dmat3 *a, const tdm_dmat3 *b)
{
    tdm_dmat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = a->m[i][0] * b->m[0][j] + a->m[i][1] * b->m[1][j] + a->m[i][2] * b->m[2][j];
    return r;
}
TDM_INLINE TDM_HD tdm_dmat3 tdm_dm3_transpose(const tdm_dmat3 *a)
{
    tdm_dmat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r.m[i][j] = a->m[j][i];
    return r;
}

TDM_INLINE TDM_HD double tdm_quat_norm(tdm_quat q) { return sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w); }

/* How far from 1 the norm of a pose's quaternion may be: poses come as text
 * (OMPL .path files, pose lists, requests) with a few digits, so a quaternion
 * within this of unit length is taken as meant to be one and normalised; one
 * further off is an input error. Every reader of poses applies it. */
#define TDM_QUAT_UNIT_TOLERANCE 1e-3

/* Is q a unit quaternion within TDM_QUAT_UNIT_TOLERANCE? 0 for NaN or Inf. */
TDM_INLINE TDM_HD int tdm_quat_is_unit(tdm_quat q) { return fabs(tdm_quat_norm(q) - 1.0) <= TDM_QUAT_UNIT_TOLERANCE; }

/* The rotation matrix of a unit quaternion (the caller normalises). */
TDM_INLINE TDM_HD tdm_dmat3 tdm_quat_to_mat(tdm_quat q)
{
    double x = q.x, y = q.y, z = q.z, w = q.w;
    tdm_dmat3 r;
    r.m[0][0] = 1 - 2 * (y * y + z * z); r.m[0][1] = 2 * (x * y - z * w);     r.m[0][2] = 2 * (x * z + y * w);
    r.m[1][0] = 2 * (x * y + z * w);     r.m[1][1] = 1 - 2 * (x * x + z * z); r.m[1][2] = 2 * (y * z - x * w);
    r.m[2][0] = 2 * (x * z - y * w);     r.m[2][1] = 2 * (y * z + x * w);     r.m[2][2] = 1 - 2 * (x * x + y * y);
    return r;
}

TDM_INLINE TDM_HD tdm_quat tdm_quat_mul(tdm_quat a, tdm_quat b)
{
    tdm_quat r;
    r.w = a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z;
    r.x = a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y;
    r.y = a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x;
    r.z = a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w;
    return r;
}

/* Spherical linear interpolation along the shorter arc, s in [0, 1]. */
TDM_INLINE TDM_HD tdm_quat tdm_quat_slerp(tdm_quat a, tdm_quat b, double s)
{
    double d = a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    if (d < 0) { b.x = -b.x; b.y = -b.y; b.z = -b.z; b.w = -b.w; d = -d; }
    double wa, wb;
    if (d > 0.9995) { /* nearly parallel: lerp then normalise is accurate here */
        wa = 1 - s; wb = s;
    } else {
        double th = acos(d), st = sin(th);
        wa = sin((1 - s) * th) / st; wb = sin(s * th) / st;
    }
    tdm_quat r = {wa * a.x + wb * b.x, wa * a.y + wb * b.y, wa * a.z + wb * b.z, wa * a.w + wb * b.w};
    double n = tdm_quat_norm(r);
    r.x /= n; r.y /= n; r.z /= n; r.w /= n;
    return r;
}

TDM_INLINE TDM_HD tdm_xform tdm_xform_identity(void)
{
    tdm_xform x = {{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}, {0, 0, 0}};
    return x;
}
TDM_INLINE TDM_HD tdm_xform tdm_xform_from_pose(tdm_dvec3 t, tdm_quat q)
{
    tdm_xform x;
    x.r = tdm_quat_to_mat(q);
    x.t = t;
    return x;
}
/* R p + t, rounded identically on host and device. */
TDM_INLINE TDM_HD tdm_dvec3 tdm_xform_apply(const tdm_xform *x, tdm_dvec3 p)
{
    tdm_dvec3 r = tdm_dm3_mulv(&x->r, p);
    return tdm_d3(TDM_DADD(r.x, x->t.x), TDM_DADD(r.y, x->t.y), TDM_DADD(r.z, x->t.z));
}
/* a * b: maps b's local frame into a's parent frame (b applied first, then a). */
TDM_INLINE TDM_HD tdm_xform tdm_xform_mul(const tdm_xform *a, const tdm_xform *b)
{
    tdm_xform r;
    r.r = tdm_dm3_mul(&a->r, &b->r);
    r.t = tdm_xform_apply(a, b->t);
    return r;
}
/* a^-1 * b: maps b's local frame into a's local frame. */
TDM_INLINE TDM_HD tdm_xform tdm_xform_rel(const tdm_xform *a, const tdm_xform *b)
{
    tdm_xform r;
    tdm_dmat3 at = tdm_dm3_transpose(&a->r);
    r.r = tdm_dm3_mul(&at, &b->r);
    r.t = tdm_dm3_mulv(&at, tdm_d3_sub(b->t, a->t));
    return r;
}

#endif
