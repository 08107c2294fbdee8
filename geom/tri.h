/* Exact triangle-triangle intersection and triangle-triangle distance.
 *
 * Triangles are closed sets: touching at a vertex or along an edge counts as an
 * intersection, as in FCL. Zero-area triangles (three collinear points, or one
 * repeated point) are valid inputs and are treated as the segment or point they
 * are; real meshes contain them (the OMPL Apartment scene has 436).
 *
 * The test is built only from the exact predicates of predicates.h, so its answer
 * is the exact answer for the double coordinates it is given:
 *  - each triangle is classified against the other's plane (orient3d);
 *  - the general case (two proper triangles crossing each other's planes) uses the
 *    interval test of Guigue and Devillers, two more orientation signs after the
 *    triangles are permuted into a canonical form;
 *  - coplanar inputs are tested in all three coordinate projections: two coplanar
 *    convex sets meet iff every projection of them meets, because at least one
 *    projection is one-to-one on their common plane (or line);
 *  - a zero-area triangle is the union of its edges, so it is tested edge by edge
 *    as segments against the other triangle; one with a repeated vertex (the form
 *    tree builds give every zero-area triangle) is one segment, found without a
 *    predicate. */
#ifndef TDM_GEOM_TRI_H
#define TDM_GEOM_TRI_H

#include "predicates.h"

/* Closed segments ab and cd in the projection onto coordinates (i, j); either may
 * be a single point. */
TDM_INLINE TDM_HD int tdm__on_box2(tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 p, int i, int j)
{
    double ai = tdm_d3_get(a, i), bi = tdm_d3_get(b, i), pi = tdm_d3_get(p, i);
    double aj = tdm_d3_get(a, j), bj = tdm_d3_get(b, j), pj = tdm_d3_get(p, j);
    double lo_i = ai < bi ? ai : bi, hi_i = ai < bi ? bi : ai, lo_j = aj < bj ? aj : bj, hi_j = aj < bj ? bj : aj;
    return pi >= lo_i && pi <= hi_i && pj >= lo_j && pj <= hi_j;
}

TDM_INLINE TDM_HD int tdm__seg_seg_2d(tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c, tdm_dvec3 d, int i, int j)
{
    int o1 = tdm_orient2d(a, b, c, i, j), o2 = tdm_orient2d(a, b, d, i, j);
    int o3 = tdm_orient2d(c, d, a, i, j), o4 = tdm_orient2d(c, d, b, i, j);
    if (o1 * o2 < 0 && o3 * o4 < 0) return 1;
    if (o1 == 0 && tdm__on_box2(a, b, c, i, j)) return 1;
    if (o2 == 0 && tdm__on_box2(a, b, d, i, j)) return 1;
    if (o3 == 0 && tdm__on_box2(c, d, a, i, j)) return 1;
    if (o4 == 0 && tdm__on_box2(c, d, b, i, j)) return 1;
    return 0;
}

/* Is p inside the closed 2D triangle abc? Only meaningful when abc is proper in
 * this projection (the caller checks). */
TDM_INLINE TDM_HD int tdm__point_in_tri_2d(tdm_dvec3 p, tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c, int i, int j)
{
    int o1 = tdm_orient2d(a, b, p, i, j), o2 = tdm_orient2d(b, c, p, i, j), o3 = tdm_orient2d(c, a, p, i, j);
    int has_pos = o1 > 0 || o2 > 0 || o3 > 0, has_neg = o1 < 0 || o2 < 0 || o3 < 0;
    return !(has_pos && has_neg);
}

/* Closed triangles in one 2D projection; either may be degenerate there. */
TDM_INLINE TDM_HD int tdm__tri_tri_2d(const tdm_dvec3 *p, const tdm_dvec3 *q, int i, int j)
{
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (tdm__seg_seg_2d(p[a], p[(a + 1) % 3], q[b], q[(b + 1) % 3], i, j)) return 1;
    /* no edges cross: either one contains the other, or they are disjoint */
    if (tdm_orient2d(q[0], q[1], q[2], i, j) != 0 && tdm__point_in_tri_2d(p[0], q[0], q[1], q[2], i, j)) return 1;
    if (tdm_orient2d(p[0], p[1], p[2], i, j) != 0 && tdm__point_in_tri_2d(q[0], p[0], p[1], p[2], i, j)) return 1;
    return 0;
}

/* Triangles known to lie in one plane (or line): they meet iff all three
 * coordinate projections meet. */
TDM_INLINE TDM_HD int tdm__coplanar_tri_tri(const tdm_dvec3 *p, const tdm_dvec3 *q)
{
    return tdm__tri_tri_2d(p, q, 0, 1) && tdm__tri_tri_2d(p, q, 1, 2) && tdm__tri_tri_2d(p, q, 2, 0);
}

/* Three collinear (or coincident) points. */
TDM_INLINE TDM_HD int tdm_tri_degenerate(const tdm_dvec3 *p)
{
    return tdm_orient2d(p[0], p[1], p[2], 0, 1) == 0 && tdm_orient2d(p[0], p[1], p[2], 1, 2) == 0 &&
           tdm_orient2d(p[0], p[1], p[2], 2, 0) == 0;
}

/* A triangle with a repeated vertex is the segment between its other two
 * vertices (or a point): returns 1 and that segment's ends. Three comparisons
 * instead of exact predicates that would all come out zero; tree builds store
 * every zero-area triangle in this form (tdm_bvh_build), which is what makes this
 * the common degenerate case. */
TDM_INLINE TDM_HD int tdm__tri_as_segment(const tdm_dvec3 *p, tdm_dvec3 *a, tdm_dvec3 *b)
{
    if (tdm_d3_same(p[1], p[2]) || tdm_d3_same(p[0], p[1])) {
        *a = p[0];
        *b = p[2];
        return 1;
    }
    if (tdm_d3_same(p[0], p[2])) {
        *a = p[0];
        *b = p[1];
        return 1;
    }
    return 0;
}

TDM_INLINE TDM_HD int tdm__seg_seg_3d(tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c, tdm_dvec3 d)
{
    if (tdm_orient3d(a, b, c, d) != 0) return 0; /* not coplanar */
    tdm_dvec3 s[3] = {a, b, b}, t[3] = {c, d, d};
    return tdm__coplanar_tri_tri(s, t);
}

/* Closed segment ab against closed triangle t (t may be degenerate). */
TDM_INLINE TDM_HD int tdm__seg_tri(tdm_dvec3 a, tdm_dvec3 b, const tdm_dvec3 *t)
{
    tdm_dvec3 c, d;
    if (tdm__tri_as_segment(t, &c, &d)) return tdm__seg_seg_3d(a, b, c, d);
    int sa = tdm_orient3d(t[0], t[1], t[2], a), sb = tdm_orient3d(t[0], t[1], t[2], b);
    if (sa * sb > 0) return 0;
    if (sa == 0 && sb == 0) {
        if (tdm_tri_degenerate(t)) {
            for (int e = 0; e < 3; e++)
                if (tdm__seg_seg_3d(a, b, t[e], t[(e + 1) % 3])) return 1;
            return 0;
        }
        tdm_dvec3 s[3] = {a, b, b};
        return tdm__coplanar_tri_tri(s, t);
    }
    /* ab meets the plane in one point; the line through ab passes through the
     * closed triangle iff the three edge orientations do not disagree. */
    int o0 = tdm_orient3d(a, b, t[0], t[1]), o1 = tdm_orient3d(a, b, t[1], t[2]), o2 = tdm_orient3d(a, b, t[2], t[0]);
    int has_pos = o0 > 0 || o1 > 0 || o2 > 0, has_neg = o0 < 0 || o1 < 0 || o2 < 0;
    return !(has_pos && has_neg);
}

/* Index of the vertex that is alone on its side of the other plane (sign h[k] with
 * the other two on the opposite closed side), or the one on the plane while the
 * other two are strictly on one side. h is not all-equal-strict nor all zero. */
TDM_INLINE TDM_HD int tdm__alone(const int *h)
{
    for (int k = 0; k < 3; k++) {
        int a = h[(k + 1) % 3], b = h[(k + 2) % 3];
        if (h[k] != 0 && a * h[k] <= 0 && b * h[k] <= 0) return k;
        if (h[k] == 0 && a != 0 && a == b) return k;
    }
    return 0; /* unreachable for valid input */
}

/* The side the alone vertex is on: +1 when it is above (or on the plane with the
 * other two below), -1 otherwise. */
TDM_INLINE TDM_HD int tdm__alone_side(const int *h, int k)
{
    if (h[k] != 0) return h[k];
    return -h[(k + 1) % 3];
}

/* A cheap, conservative first look at a triangle pair: 1 when the floating-point
 * stage of the orientation predicates proves one triangle strictly on one side
 * of the other's plane (then tdm_tri_tri_intersect is 0), else 0 (not known).
 * The GPU tests every candidate pair this way and only the pairs it cannot
 * reject with the full test, which needs far more registers. */
TDM_INLINE TDM_HD int tdm_tri_planes_separate(const tdm_dvec3 *p, const tdm_dvec3 *q)
{
    int s0 = tdm_orient3d_filter(p[0], p[1], p[2], q[0]);
    if (s0 != 0 && s0 == tdm_orient3d_filter(p[0], p[1], p[2], q[1]) &&
        s0 == tdm_orient3d_filter(p[0], p[1], p[2], q[2]))
        return 1;
    s0 = tdm_orient3d_filter(q[0], q[1], q[2], p[0]);
    return s0 != 0 && s0 == tdm_orient3d_filter(q[0], q[1], q[2], p[1]) &&
           s0 == tdm_orient3d_filter(q[0], q[1], q[2], p[2]);
}

/* Exact: do the closed triangles p[0..2] and q[0..2] share a point? */
TDM_INLINE TDM_HD int tdm_tri_tri_intersect(const tdm_dvec3 *p_in, const tdm_dvec3 *q_in)
{
    tdm_dvec3 sa, sb;
    if (tdm__tri_as_segment(p_in, &sa, &sb)) return tdm__seg_tri(sa, sb, q_in);
    if (tdm__tri_as_segment(q_in, &sa, &sb)) return tdm__seg_tri(sa, sb, p_in);
    int hp[3], hq[3]; /* hp: heights of p over plane(q); hq: heights of q over plane(p) */
    for (int k = 0; k < 3; k++) hq[k] = -tdm_orient3d(p_in[0], p_in[1], p_in[2], q_in[k]);
    if ((hq[0] > 0 && hq[1] > 0 && hq[2] > 0) || (hq[0] < 0 && hq[1] < 0 && hq[2] < 0)) return 0;
    if (hq[0] == 0 && hq[1] == 0 && hq[2] == 0) {
        if (tdm_tri_degenerate(p_in)) {
            for (int e = 0; e < 3; e++)
                if (tdm__seg_tri(p_in[e], p_in[(e + 1) % 3], q_in)) return 1;
            return 0;
        }
        return tdm__coplanar_tri_tri(p_in, q_in);
    }
    for (int k = 0; k < 3; k++) hp[k] = -tdm_orient3d(q_in[0], q_in[1], q_in[2], p_in[k]);
    if ((hp[0] > 0 && hp[1] > 0 && hp[2] > 0) || (hp[0] < 0 && hp[1] < 0 && hp[2] < 0)) return 0;
    if (hp[0] == 0 && hp[1] == 0 && hp[2] == 0) {
        /* p is proper and not in q's plane, so q must be degenerate */
        for (int e = 0; e < 3; e++)
            if (tdm__seg_tri(q_in[e], q_in[(e + 1) % 3], p_in)) return 1;
        return 0;
    }

    /* Canonical form (Guigue & Devillers): p1 alone above plane(q), q1 alone above
     * plane(p); the segments where each triangle meets the planes' common line
     * then overlap iff two orientation signs agree. */
    tdm_dvec3 p[3], q[3];
    int kp = tdm__alone(hp), kq = tdm__alone(hq);
    for (int k = 0; k < 3; k++) { p[k] = p_in[(kp + k) % 3]; q[k] = q_in[(kq + k) % 3]; }
    if (tdm__alone_side(hp, kp) < 0) { tdm_dvec3 t = q[1]; q[1] = q[2]; q[2] = t; }
    int hq_rot[3] = {hq[kq], hq[(kq + 1) % 3], hq[(kq + 2) % 3]};
    /* swapping q[1], q[2] flipped only plane(q), not the heights over plane(p) */
    if (tdm__alone_side(hp, kp) < 0) { int t = hq_rot[1]; hq_rot[1] = hq_rot[2]; hq_rot[2] = t; }
    if (tdm__alone_side(hq_rot, 0) < 0) { tdm_dvec3 t = p[1]; p[1] = p[2]; p[2] = t; }
    return tdm_orient3d(p[0], p[1], q[0], q[1]) >= 0 && tdm_orient3d(p[0], p[2], q[0], q[2]) <= 0;
}

/* ---- distance ------------------------------------------------------------ */

/* Closest point to p on the closed triangle abc (any shape, zero-area included). */
TDM_INLINE TDM_HD tdm_dvec3 tdm_closest_on_segment(tdm_dvec3 p, tdm_dvec3 a, tdm_dvec3 b)
{
    tdm_dvec3 ab = tdm_d3_sub(b, a);
    double l2 = tdm_d3_len2(ab);
    if (l2 <= 0) return a;
    double s = tdm_d3_dot(tdm_d3_sub(p, a), ab) / l2;
    s = s < 0 ? 0 : (s > 1 ? 1 : s);
    return tdm_d3_add(a, tdm_d3_scale(ab, s));
}

TDM_INLINE TDM_HD tdm_dvec3 tdm_closest_on_triangle(tdm_dvec3 p, tdm_dvec3 a, tdm_dvec3 b, tdm_dvec3 c)
{
    tdm_dvec3 ab = tdm_d3_sub(b, a), ac = tdm_d3_sub(c, a);
    tdm_dvec3 n = tdm_d3_cross(ab, ac);
    double n2 = tdm_d3_len2(n);
    if (n2 > 0) {
        /* barycentric coordinates of p's projection onto the plane */
        tdm_dvec3 ap = tdm_d3_sub(p, a);
        double u = tdm_d3_dot(tdm_d3_cross(ap, ac), n) / n2; /* weight of b */
        double v = tdm_d3_dot(tdm_d3_cross(ab, ap), n) / n2; /* weight of c */
        if (u >= 0 && v >= 0 && u + v <= 1)
            return tdm_d3_add(a, tdm_d3_add(tdm_d3_scale(ab, u), tdm_d3_scale(ac, v)));
    }
    /* outside (or a zero-area triangle): the closest point is on an edge */
    tdm_dvec3 best = tdm_closest_on_segment(p, a, b);
    double bd = tdm_d3_len2(tdm_d3_sub(p, best));
    tdm_dvec3 x = tdm_closest_on_segment(p, b, c);
    double xd = tdm_d3_len2(tdm_d3_sub(p, x));
    if (xd < bd) { best = x; bd = xd; }
    x = tdm_closest_on_segment(p, c, a);
    xd = tdm_d3_len2(tdm_d3_sub(p, x));
    if (xd < bd) best = x;
    return best;
}

/* Closest points between closed segments p0p1 and q0q1 (either may be a point). */
TDM_INLINE TDM_HD double tdm_segment_segment_closest(tdm_dvec3 p0, tdm_dvec3 p1, tdm_dvec3 q0, tdm_dvec3 q1,
                                                    tdm_dvec3 *cp, tdm_dvec3 *cq)
{
    tdm_dvec3 d1 = tdm_d3_sub(p1, p0), d2 = tdm_d3_sub(q1, q0), r = tdm_d3_sub(p0, q0);
    double a = tdm_d3_len2(d1), e = tdm_d3_len2(d2), f = tdm_d3_dot(d2, r);
    double s, t;
    if (a <= 0 && e <= 0) {
        s = t = 0;
    } else if (a <= 0) {
        s = 0;
        t = f / e;
        t = t < 0 ? 0 : (t > 1 ? 1 : t);
    } else {
        double c = tdm_d3_dot(d1, r);
        if (e <= 0) {
            t = 0;
            s = -c / a;
            s = s < 0 ? 0 : (s > 1 ? 1 : s);
        } else {
            double b = tdm_d3_dot(d1, d2), den = a * e - b * b;
            s = den > 0 ? (b * f - c * e) / den : 0;
            s = s < 0 ? 0 : (s > 1 ? 1 : s);
            t = (b * s + f) / e;
            if (t < 0) {
                t = 0;
                s = -c / a;
                s = s < 0 ? 0 : (s > 1 ? 1 : s);
            } else if (t > 1) {
                t = 1;
                s = (b - c) / a;
                s = s < 0 ? 0 : (s > 1 ? 1 : s);
            }
        }
    }
    *cp = tdm_d3_add(p0, tdm_d3_scale(d1, s));
    *cq = tdm_d3_add(q0, tdm_d3_scale(d2, t));
    return tdm_d3_len(tdm_d3_sub(*cp, *cq));
}

/* Euclidean distance between closed triangles p and q, with a closest pair of
 * points (cp on p, cq on q). Exactly 0 when tdm_tri_tri_intersect says they meet;
 * otherwise the minimum over the 6 vertex-triangle and 9 edge-edge pairs, which is
 * where the minimum of two disjoint triangles is attained. */
TDM_INLINE TDM_HD double tdm_tri_tri_distance(const tdm_dvec3 *p, const tdm_dvec3 *q, tdm_dvec3 *cp, tdm_dvec3 *cq)
{
    double best = INFINITY;
    tdm_dvec3 bp = p[0], bq = q[0];
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            tdm_dvec3 x, y;
            double d = tdm_segment_segment_closest(p[i], p[(i + 1) % 3], q[j], q[(j + 1) % 3], &x, &y);
            if (d < best) { best = d; bp = x; bq = y; }
        }
        tdm_dvec3 y = tdm_closest_on_triangle(p[i], q[0], q[1], q[2]);
        double d = tdm_d3_len(tdm_d3_sub(p[i], y));
        if (d < best) { best = d; bp = p[i]; bq = y; }
        tdm_dvec3 x = tdm_closest_on_triangle(q[i], p[0], p[1], p[2]);
        d = tdm_d3_len(tdm_d3_sub(q[i], x));
        if (d < best) { best = d; bp = x; bq = q[i]; }
    }
    if (best > 0 && tdm_tri_tri_intersect(p, q)) {
        /* They meet, but no vertex-triangle or edge-edge pair does: an edge of one
         * pierces the other's interior. The witness is where it crosses the plane. */
        best = 0;
        bq = bp;
        for (int side = 0; side < 2; side++) {
            const tdm_dvec3 *e = side ? q : p, *t = side ? p : q;
            tdm_dvec3 n = tdm_d3_cross(tdm_d3_sub(t[1], t[0]), tdm_d3_sub(t[2], t[0]));
            for (int k = 0; k < 3; k++) {
                tdm_dvec3 a = e[k], b = e[(k + 1) % 3];
                double da = tdm_d3_dot(n, tdm_d3_sub(a, t[0])), db = tdm_d3_dot(n, tdm_d3_sub(b, t[0]));
                if (da == db || (da > 0 && db > 0) || (da < 0 && db < 0) || !tdm__seg_tri(a, b, t)) continue;
                bp = bq = tdm_d3_add(a, tdm_d3_scale(tdm_d3_sub(b, a), da / (da - db)));
                side = 2;
                break;
            }
        }
    }
    if (cp) *cp = bp;
    if (cq) *cq = bq;
    return best;
}

#endif
