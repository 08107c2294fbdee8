/* geom/: exact predicates, triangle-triangle intersection and distance, OBB tests,
 * the leaf-pair tests and result rule every engine shares (geom/leaf.h), and the
 * unit-quaternion rule of pose readers (geom/vec.h).
 *
 * The triangle test is checked against an independent exact oracle on integer
 * coordinates, where every quantity fits in __int128: two closed triangles P and Q
 * meet iff the origin lies in the convex hull of the nine points p_i - q_j (their
 * Minkowski difference). Two oracles decide that, and they check each other:
 *  - separating axes: the hull misses the origin iff some axis strictly separates
 *    the nine points from it; the candidate axes below include every facet normal
 *    the hull can have in 3D, 2D and 1D (see oracle_sat);
 *  - Caratheodory: the origin is in the hull iff it is in the hull of some
 *    affinely independent subset of at most 4 of the points (see oracle_cara).
 * Inputs that are not integers are integer configurations moved by exact affine
 * maps (axis permutations, integer matrices, scaling by powers of two and dyadic
 * translations), which preserve intersection exactly.
 *
 * Every random test prints its seed (cr_log_info and in assertion messages); set
 * TDM_TEST_SEED to replay with another one. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "geom/bv.h"
#include "geom/bvh.h"
#include "geom/leaf.h"
#include "geom/tri.h"

typedef __int128 i128;
typedef struct ip3 { int64_t x, y, z; } ip3;
typedef struct w3 { i128 x, y, z; } w3;

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x7a5d3e11c0ffeeull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(geom, .init = suite_init);

/* ---- exact integer helpers ------------------------------------------------ */

static ip3 I3(int64_t x, int64_t y, int64_t z) { ip3 v = {x, y, z}; return v; }
static ip3 isub(ip3 a, ip3 b) { return I3(a.x - b.x, a.y - b.y, a.z - b.z); }
static ip3 iadd(ip3 a, ip3 b) { return I3(a.x + b.x, a.y + b.y, a.z + b.z); }
static ip3 iscale(ip3 a, int64_t s) { return I3(a.x * s, a.y * s, a.z * s); }
static int ieq(ip3 a, ip3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }
static w3 W(ip3 a) { w3 w = {a.x, a.y, a.z}; return w; }
static w3 wcross(w3 a, w3 b)
{
    w3 r = {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
    return r;
}
static i128 wdot(w3 a, w3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static int wzero(w3 a) { return a.x == 0 && a.y == 0 && a.z == 0; }
static int sgn(i128 v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); }
static tdm_dvec3 D3(ip3 a) { return tdm_d3((double)a.x, (double)a.y, (double)a.z); }

/* Does axis a strictly separate all nine points from the origin? */
static int separates(w3 a, const ip3 *d, int n)
{
    if (wzero(a)) return 0;
    int pos = 0, neg = 0;
    for (int k = 0; k < n; k++) {
        i128 s = wdot(a, W(d[k]));
        if (s > 0) pos++;
        else if (s < 0) neg++;
        else return 0;
    }
    return pos == n || neg == n;
}

/* Separating-axis oracle. Candidate axes, for K = conv{p_i - q_j}:
 *  - K full-dimensional: a facet of K = P + (-Q) is a facet of P or Q (normal
 *    e x e' within one triangle) or the sum of an edge of each (normal e_p x e_q);
 *  - K in a plane missing the origin: that plane's normal is a cross product of
 *    two spanning edges, so it is among the above;
 *  - K in a plane through the origin: the polygon's edges are parallel to edges of
 *    P or Q, so their in-plane normals are n x e for n one of the normals above;
 *  - K in a line: its direction e (an edge), and e x (e x x0), x0 a point of K;
 *  - K a point x0: x0 itself.
 * Coordinates up to 2^24 in magnitude keep every product within __int128. */
static int oracle_sat(const ip3 *p, const ip3 *q)
{
    ip3 d[9], e[6];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) d[3 * i + j] = isub(p[i], q[j]);
    for (int i = 0; i < 3; i++) {
        e[i] = isub(p[(i + 1) % 3], p[i]);
        e[3 + i] = isub(q[(i + 1) % 3], q[i]);
    }
    w3 n[15];
    int nn = 0;
    for (int a = 0; a < 6; a++)
        for (int b = a + 1; b < 6; b++) n[nn++] = wcross(W(e[a]), W(e[b]));
    for (int k = 0; k < nn; k++)
        if (separates(n[k], d, 9)) return 0;
    for (int k = 0; k < nn; k++) {
        if (wzero(n[k])) continue;
        for (int a = 0; a < 6; a++)
            if (separates(wcross(n[k], W(e[a])), d, 9)) return 0;
    }
    for (int a = 0; a < 6; a++) {
        if (separates(W(e[a]), d, 9)) return 0;
        if (separates(wcross(wcross(W(e[a]), W(d[0])), W(e[a])), d, 9)) return 0;
    }
    if (separates(W(d[0]), d, 9)) return 0;
    return 1;
}

static i128 det3(ip3 a, ip3 b, ip3 c) { return wdot(W(a), wcross(W(b), W(c))); }

/* Is the origin in the closed convex hull of the given (affinely independent
 * when they pass the checks) points? */
static int origin_in_seg(ip3 a, ip3 b)
{
    if (ieq(a, b)) return 0;
    return wzero(wcross(W(a), W(b))) && wdot(W(a), W(b)) <= 0;
}
static int origin_in_tri(ip3 a, ip3 b, ip3 c)
{
    w3 n = wcross(W(isub(b, a)), W(isub(c, a)));
    if (wzero(n) || wdot(n, W(a)) != 0) return 0;
    ip3 z = I3(0, 0, 0);
    return wdot(n, wcross(W(isub(b, a)), W(isub(z, a)))) >= 0 && wdot(n, wcross(W(isub(c, b)), W(isub(z, b)))) >= 0 &&
           wdot(n, wcross(W(isub(a, c)), W(isub(z, c)))) >= 0;
}
static int origin_in_tet(ip3 a, ip3 b, ip3 c, ip3 d)
{
    int v = sgn(det3(isub(b, a), isub(c, a), isub(d, a)));
    if (v == 0) return 0;
    ip3 z = I3(0, 0, 0);
    int s[4] = {sgn(det3(b, c, d)), sgn(det3(isub(z, a), isub(c, a), isub(d, a))),
                sgn(det3(isub(b, a), isub(z, a), isub(d, a))), sgn(det3(isub(b, a), isub(c, a), isub(z, a)))};
    for (int k = 0; k < 4; k++)
        if (s[k] != 0 && s[k] != v) return 0;
    return 1;
}

/* Caratheodory oracle: a second, unrelated way to decide the same question. */
static int oracle_cara(const ip3 *p, const ip3 *q)
{
    ip3 d[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) d[3 * i + j] = isub(p[i], q[j]);
    for (int a = 0; a < 9; a++) {
        if (d[a].x == 0 && d[a].y == 0 && d[a].z == 0) return 1;
        for (int b = a + 1; b < 9; b++) {
            if (origin_in_seg(d[a], d[b])) return 1;
            for (int c = b + 1; c < 9; c++) {
                if (origin_in_tri(d[a], d[b], d[c])) return 1;
                for (int e = c + 1; e < 9; e++)
                    if (origin_in_tet(d[a], d[b], d[c], d[e])) return 1;
            }
        }
    }
    return 0;
}

/* ---- random configurations ------------------------------------------------ */

enum { K_UNIFORM4, K_UNIFORM2, K_PLANE_Z, K_PLANE, K_LINE, K_SHARED, K_DEGEN, K_ON_FEATURE, K__N };
static const char *kind_name[K__N] = {"uniform[-4,4]", "uniform[-2,2]", "coplanar z=0", "coplanar plane",
                                      "collinear",     "shared vertex/edge", "zero-area", "vertex on edge/face"};

static ip3 rand_ip(gen_rng *r, int64_t lo, int64_t hi)
{
    return I3(gen_int(r, lo, hi), gen_int(r, lo, hi), gen_int(r, lo, hi));
}

/* Makes triangle t zero-area in one of three ways. */
static void degenerate(gen_rng *r, ip3 *t)
{
    switch (gen_int(r, 0, 3)) {
    case 0: t[2] = iadd(t[0], iscale(isub(t[1], t[0]), gen_int(r, -2, 2))); break; /* collinear */
    case 1: t[gen_int(r, 1, 2)] = t[0]; break;                                        /* repeated vertex */
    case 2: t[1] = t[2] = t[0]; break;                                                /* a point */
    default: t[2] = t[1]; break;
    }
}

static void random_case(gen_rng *r, int kind, ip3 *p, ip3 *q)
{
    switch (kind) {
    case K_UNIFORM4:
        for (int k = 0; k < 3; k++) { p[k] = rand_ip(r, -4, 4); q[k] = rand_ip(r, -4, 4); }
        break;
    case K_UNIFORM2:
        for (int k = 0; k < 3; k++) { p[k] = rand_ip(r, -2, 2); q[k] = rand_ip(r, -2, 2); }
        break;
    case K_PLANE_Z:
        for (int k = 0; k < 3; k++) {
            p[k] = rand_ip(r, -4, 4); p[k].z = 0;
            q[k] = rand_ip(r, -4, 4); q[k].z = 0;
        }
        break;
    case K_PLANE: {
        ip3 o = rand_ip(r, -2, 2), u = rand_ip(r, -2, 2), v = rand_ip(r, -2, 2);
        for (int k = 0; k < 3; k++) {
            p[k] = iadd(o, iadd(iscale(u, gen_int(r, -3, 3)), iscale(v, gen_int(r, -3, 3))));
            q[k] = iadd(o, iadd(iscale(u, gen_int(r, -3, 3)), iscale(v, gen_int(r, -3, 3))));
        }
        break;
    }
    case K_LINE: {
        ip3 o = rand_ip(r, -2, 2), u = rand_ip(r, -2, 2);
        for (int k = 0; k < 3; k++) {
            p[k] = iadd(o, iscale(u, gen_int(r, -4, 4)));
            q[k] = iadd(o, iscale(u, gen_int(r, -4, 4)));
        }
        if (gen_int(r, 0, 1)) q[gen_int(r, 0, 2)] = rand_ip(r, -4, 4); /* Q leaves the line */
        break;
    }
    case K_SHARED:
        for (int k = 0; k < 3; k++) { p[k] = rand_ip(r, -4, 4); q[k] = rand_ip(r, -4, 4); }
        q[gen_int(r, 0, 2)] = p[gen_int(r, 0, 2)];
        if (gen_int(r, 0, 1)) { q[0] = p[0]; q[1] = p[1]; }
        if (gen_int(r, 0, 3) == 0) for (int k = 0; k < 3; k++) q[k].z = p[k].z = 0;
        break;
    case K_DEGEN:
        random_case(r, (int)gen_int(r, K_UNIFORM4, K_PLANE), p, q);
        switch (gen_int(r, 0, 2)) {
        case 0: degenerate(r, p); break;
        case 1: degenerate(r, q); break;
        default: degenerate(r, p); degenerate(r, q); break;
        }
        break;
    default: { /* K_ON_FEATURE: a vertex of Q exactly on an edge or the face of P */
        for (int k = 0; k < 3; k++) { p[k] = iscale(rand_ip(r, -2, 2), 6); q[k] = rand_ip(r, -12, 12); }
        if (gen_int(r, 0, 1)) q[0] = I3((p[0].x + p[1].x) / 2, (p[0].y + p[1].y) / 2, (p[0].z + p[1].z) / 2);
        else q[0] = I3((p[0].x + p[1].x + p[2].x) / 3, (p[0].y + p[1].y + p[2].y) / 3, (p[0].z + p[1].z + p[2].z) / 3);
        if (gen_int(r, 0, 2) == 0) { /* ... with Q in P's plane */
            ip3 u = isub(p[1], p[0]), v = isub(p[2], p[0]);
            q[1] = iadd(q[0], iadd(iscale(u, gen_int(r, -1, 1)), iscale(v, gen_int(r, -1, 1))));
            q[2] = iadd(q[0], iadd(iscale(u, gen_int(r, -1, 1)), iscale(v, gen_int(r, -1, 1))));
        }
        break;
    }
    }
    /* an exact symmetry: permute the axes and flip signs, the same for both */
    int perm[3] = {0, 1, 2};
    for (int k = 2; k > 0; k--) {
        int j = (int)gen_int(r, 0, k), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    int64_t sg[3] = {gen_int(r, 0, 1) ? 1 : -1, gen_int(r, 0, 1) ? 1 : -1, gen_int(r, 0, 1) ? 1 : -1};
    for (int k = 0; k < 6; k++) {
        ip3 *v = k < 3 ? &p[k] : &q[k - 3];
        int64_t c[3] = {v->x, v->y, v->z};
        *v = I3(sg[0] * c[perm[0]], sg[1] * c[perm[1]], sg[2] * c[perm[2]]);
    }
}

static void to_d(const ip3 *t, tdm_dvec3 *out)
{
    for (int k = 0; k < 3; k++) out[k] = D3(t[k]);
}

#define FMT_TRI "(%lld %lld %lld | %lld %lld %lld | %lld %lld %lld)"
#define FMT_DTRI "(%.17g %.17g %.17g | %.17g %.17g %.17g | %.17g %.17g %.17g)"
#define ARG_DTRI(t) (t)[0].x, (t)[0].y, (t)[0].z, (t)[1].x, (t)[1].y, (t)[1].z, (t)[2].x, (t)[2].y, (t)[2].z
#define ARG_TRI(t)                                                                                              \
    (long long)(t)[0].x, (long long)(t)[0].y, (long long)(t)[0].z, (long long)(t)[1].x, (long long)(t)[1].y,   \
        (long long)(t)[1].z, (long long)(t)[2].x, (long long)(t)[2].y, (long long)(t)[2].z

/* The library's answer must not depend on the order of the triangles or of their
 * vertices: checks all 6 x 6 vertex orders and both triangle orders. */
static int lib_all_orders(const ip3 *p, const ip3 *q, int expect, int *bad_order)
{
    static const int perms[6][3] = {{0, 1, 2}, {1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {1, 0, 2}};
    for (int a = 0; a < 6; a++)
        for (int b = 0; b < 6; b++) {
            tdm_dvec3 P[3], Q[3];
            for (int k = 0; k < 3; k++) { P[k] = D3(p[perms[a][k]]); Q[k] = D3(q[perms[b][k]]); }
            if (tdm_tri_tri_intersect(P, Q) != expect) { *bad_order = 2 * (6 * a + b); return 0; }
            if (tdm_tri_tri_intersect(Q, P) != expect) { *bad_order = 2 * (6 * a + b) + 1; return 0; }
        }
    return 1;
}

/* ---- the oracles agree with each other ------------------------------------ */

Test(geom, oracles_agree, .timeout = 120)
{
    gen_rng r = {seed ^ 1};
    long hits = 0, n = 0;
    for (int kind = 0; kind < K__N; kind++)
        for (int i = 0; i < 4000; i++, n++) {
            ip3 p[3], q[3];
            random_case(&r, kind, p, q);
            int a = oracle_sat(p, q), b = oracle_cara(p, q);
            hits += a;
            CHECK((a) == (b), "seed=%llu kind=%s case %d: separating-axis oracle %d, Caratheodory oracle %d, P=" FMT_TRI
                         " Q=" FMT_TRI, (unsigned long long)seed, kind_name[kind], i, a, b, ARG_TRI(p), ARG_TRI(q));
        }
    /* both outcomes must be well represented, or the comparison means little */
    CHECK(hits > n / 5 && hits < 4 * n / 5, "seed=%llu: %ld of %ld random cases intersect", (unsigned long long)seed,
              hits, n);
}

/* ---- named configurations --------------------------------------------------- */

typedef struct named_case { const char *name; ip3 p[3], q[3]; int expect; } named_case;

static const named_case named[] = {
    {"coplanar overlapping", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, 0}, {5, 1, 0}, {1, 5, 0}}, 1},
    {"coplanar, one inside the other", {{0, 0, 0}, {8, 0, 0}, {0, 8, 0}}, {{1, 1, 0}, {2, 1, 0}, {1, 2, 0}}, 1},
    {"coplanar disjoint", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{3, 3, 0}, {6, 3, 0}, {3, 6, 0}}, 0},
    {"coplanar disjoint across the hypotenuse", {{0, 0, 0}, {2, 0, 0}, {0, 2, 0}}, {{2, 1, 0}, {3, 1, 0}, {2, 2, 0}}, 0},
    {"coplanar edge touching", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{4, 0, 0}, {0, 4, 0}, {4, 4, 0}}, 1},
    {"coplanar partial edge contact", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{2, 0, 0}, {6, 0, 0}, {4, -3, 0}}, 1},
    {"coplanar vertex touching", {{0, 0, 0}, {2, 0, 0}, {0, 2, 0}}, {{2, 0, 0}, {4, 0, 0}, {3, -2, 0}}, 1},
    {"coplanar vertex on edge", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{2, 2, 0}, {4, 4, 0}, {5, 2, 0}}, 1},
    {"coplanar, vertex a hair outside", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{3, 2, 0}, {6, 6, 0}, {6, 2, 0}}, 0},
    {"identical", {{1, 2, 3}, {4, -1, 0}, {-2, 2, 2}}, {{1, 2, 3}, {4, -1, 0}, {-2, 2, 2}}, 1},
    {"identical, reversed", {{1, 2, 3}, {4, -1, 0}, {-2, 2, 2}}, {{-2, 2, 2}, {4, -1, 0}, {1, 2, 3}}, 1},
    {"crossing", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, -1}, {1, 1, 1}, {3, 3, 1}}, 1},
    {"piercing through the interior", {{0, 0, 0}, {6, 0, 0}, {0, 6, 0}}, {{1, 1, -2}, {2, 1, 2}, {1, 2, 2}}, 1},
    {"non-coplanar edge touching (edge on edge)", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{0, 0, 0}, {4, 0, 0}, {2, 0, 3}}, 1},
    {"non-coplanar edges crossing", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{2, -1, 0}, {2, 1, 0}, {2, 0, 3}}, 1},
    {"vertex touching, non-coplanar", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{4, 0, 0}, {5, 1, 1}, {5, -1, 2}}, 1},
    {"vertex on face", {{0, 0, 0}, {6, 0, 0}, {0, 6, 0}}, {{2, 2, 0}, {3, 3, 4}, {1, 3, 5}}, 1},
    {"vertex just above face", {{0, 0, 0}, {6, 0, 0}, {0, 6, 0}}, {{2, 2, 1}, {3, 3, 4}, {1, 3, 5}}, 0},
    {"parallel planes", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{0, 0, 1}, {4, 0, 1}, {0, 4, 1}}, 0},
    {"line of planes misses both", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{5, 5, -1}, {6, 5, 1}, {5, 6, 1}}, 0},
    {"segment crossing triangle", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, -1}, {1, 1, 1}, {1, 1, 0}}, 1},
    {"segment (repeated vertex) piercing", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, -1}, {1, 1, 1}, {1, 1, 1}}, 1},
    {"segment ending on the face", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, 0}, {1, 1, 2}, {1, 1, 2}}, 1},
    {"segment ending above the face", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, 1}, {1, 1, 2}, {1, 1, 3}}, 0},
    {"segment in the plane, crossing an edge", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{-1, 1, 0}, {1, 1, 0}, {3, 1, 0}}, 1},
    {"segment in the plane, outside", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{-1, 1, 0}, {-1, 3, 0}, {-1, 2, 0}}, 0},
    {"segment in the plane, touching a vertex", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{-2, 2, 0}, {0, 4, 0}, {-1, 3, 0}}, 1},
    {"segment missing an edge", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{3, 3, -1}, {3, 3, 1}, {3, 3, 0}}, 0},
    {"point on face", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, 0}, {1, 1, 0}, {1, 1, 0}}, 1},
    {"point on edge", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{2, 2, 0}, {2, 2, 0}, {2, 2, 0}}, 1},
    {"point at a vertex", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{4, 0, 0}, {4, 0, 0}, {4, 0, 0}}, 1},
    {"point off the face", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}, 0},
    {"point in the plane, outside", {{0, 0, 0}, {4, 0, 0}, {0, 4, 0}}, {{3, 3, 0}, {3, 3, 0}, {3, 3, 0}}, 0},
    {"segments crossing", {{0, 0, 0}, {2, 2, 0}, {4, 4, 0}}, {{0, 4, 0}, {4, 0, 0}, {2, 2, 0}}, 1},
    {"segments crossing in their interiors", {{0, 0, 0}, {4, 4, 0}, {4, 4, 0}}, {{0, 4, 0}, {4, 0, 0}, {4, 0, 0}}, 1},
    {"skew segments", {{0, 0, 0}, {4, 0, 0}, {2, 0, 0}}, {{2, -1, 1}, {2, 1, 1}, {2, 0, 1}}, 0},
    {"collinear segments overlapping", {{0, 0, 0}, {4, 0, 0}, {2, 0, 0}}, {{3, 0, 0}, {6, 0, 0}, {5, 0, 0}}, 1},
    {"collinear segments touching", {{0, 0, 0}, {2, 0, 0}, {1, 0, 0}}, {{2, 0, 0}, {6, 0, 0}, {5, 0, 0}}, 1},
    {"collinear segments disjoint", {{0, 0, 0}, {2, 0, 0}, {1, 0, 0}}, {{3, 0, 0}, {6, 0, 0}, {5, 0, 0}}, 0},
    {"parallel segments", {{0, 0, 0}, {4, 0, 0}, {4, 0, 0}}, {{0, 1, 0}, {4, 1, 0}, {4, 1, 0}}, 0},
    {"point on segment", {{0, 0, 0}, {4, 4, 4}, {2, 2, 2}}, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}}, 1},
    {"point beside segment", {{0, 0, 0}, {4, 4, 4}, {2, 2, 2}}, {{1, 1, 2}, {1, 1, 2}, {1, 1, 2}}, 0},
    {"point beyond segment's end", {{0, 0, 0}, {4, 4, 4}, {2, 2, 2}}, {{5, 5, 5}, {5, 5, 5}, {5, 5, 5}}, 0},
    {"equal points", {{3, -1, 2}, {3, -1, 2}, {3, -1, 2}}, {{3, -1, 2}, {3, -1, 2}, {3, -1, 2}}, 1},
    {"distinct points", {{3, -1, 2}, {3, -1, 2}, {3, -1, 2}}, {{3, -1, 1}, {3, -1, 1}, {3, -1, 1}}, 0},
};

Test(geom, tri_tri_named_cases)
{
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        const named_case *c = &named[i];
        CHECK((oracle_sat(c->p, c->q)) == (c->expect), "oracle (SAT) disagrees with the expected answer of '%s'",
                     c->name);
        CHECK((oracle_cara(c->p, c->q)) == (c->expect), "oracle (Caratheodory) disagrees on '%s'", c->name);
        int bad = -1;
        CHECK(lib_all_orders(c->p, c->q, c->expect, &bad),
                  "tdm_tri_tri_intersect on '%s': expected %d for every vertex order, wrong for order %d (P=" FMT_TRI
                  " Q=" FMT_TRI ")", c->name, c->expect, bad, ARG_TRI(c->p), ARG_TRI(c->q));
    }
}

/* ---- random configurations on small integers ------------------------------- */

Test(geom, tri_tri_random_small_integers, .timeout = 120)
{
    gen_rng r = {seed ^ 2};
    long per_kind[K__N][2] = {{0}}, rejected[K__N] = {0};
    for (int kind = 0; kind < K__N; kind++)
        for (int i = 0; i < 8000; i++) {
            ip3 p[3], q[3];
            random_case(&r, kind, p, q);
            int expect = oracle_sat(p, q);
            per_kind[kind][expect]++;
            tdm_dvec3 P[3], Q[3];
            to_d(p, P);
            to_d(q, Q);
            int got = tdm_tri_tri_intersect(P, Q);
            CHECK((got) == (expect), "seed=%llu kind=%s case %d: tdm_tri_tri_intersect(P, Q) = %d, exact answer %d; P=" FMT_TRI
                         " Q=" FMT_TRI, (unsigned long long)seed, kind_name[kind], i, got, expect, ARG_TRI(p), ARG_TRI(q));
            /* the GPU's first look may only reject pairs that are disjoint */
            int sep = tdm_tri_planes_separate(P, Q);
            CHECK(!(sep && expect), "seed=%llu kind=%s case %d: tdm_tri_planes_separate rejects an intersecting pair; P=" FMT_TRI
                  " Q=" FMT_TRI, (unsigned long long)seed, kind_name[kind], i, ARG_TRI(p), ARG_TRI(q));
            rejected[kind] += sep;
            if (i % 40 == 0) { /* every order, on a subset (36 x 2 calls each) */
                int bad = -1;
                CHECK(lib_all_orders(p, q, expect, &bad),
                          "seed=%llu kind=%s case %d: answer depends on vertex/triangle order (order %d); exact %d; P=" FMT_TRI
                          " Q=" FMT_TRI, (unsigned long long)seed, kind_name[kind], i, bad, expect, ARG_TRI(p), ARG_TRI(q));
            }
        }
    for (int kind = 0; kind < K__N; kind++) {
        cr_log_info("kind %-20s: %ld intersecting, %ld disjoint, %ld rejected by the planes filter", kind_name[kind],
                    per_kind[kind][1], per_kind[kind][0], rejected[kind]);
        if (kind == K_UNIFORM4) /* general position: the filter sees most disjoint pairs */
            CHECK(rejected[kind] > per_kind[kind][0] / 2, "kind %s: the planes filter rejected %ld of %ld disjoint pairs",
                  kind_name[kind], rejected[kind], per_kind[kind][0]);
        if (kind == K_SHARED || kind == K_ON_FEATURE) /* a common point by construction */
            CHECK(per_kind[kind][0] == 0, "kind %s: %ld cases called disjoint", kind_name[kind], per_kind[kind][0]);
        else
            CHECK(per_kind[kind][0] > 0 && per_kind[kind][1] > 0, "kind %s produced only one outcome", kind_name[kind]);
    }
}

Test(geom, tri_degenerate_matches_exact_cross_product)
{
    gen_rng r = {seed ^ 3};
    for (int i = 0; i < 40000; i++) {
        ip3 p[3], q[3];
        random_case(&r, (int)gen_int(&r, 0, K__N - 1), p, q);
        if (i % 3 == 0) { /* large coordinates, nearly collinear */
            ip3 o = rand_ip(&r, -(1 << 22), 1 << 22), u = rand_ip(&r, -(1 << 10), 1 << 10);
            p[0] = o;
            p[1] = iadd(o, iscale(u, gen_int(&r, -2000, 2000)));
            p[2] = iadd(iadd(o, iscale(u, gen_int(&r, -2000, 2000))), rand_ip(&r, -1, 1));
        }
        int expect = wzero(wcross(W(isub(p[1], p[0])), W(isub(p[2], p[0]))));
        tdm_dvec3 P[3];
        to_d(p, P);
        CHECK((tdm_tri_degenerate(P)) == (expect), "seed=%llu case %d: tdm_tri_degenerate" FMT_TRI " = %d, exact %d",
                     (unsigned long long)seed, i, ARG_TRI(p), tdm_tri_degenerate(P), expect);
    }
}

/* The exact predicates on nearly degenerate inputs. Points a, b, c, d lie
 * exactly in the plane o + s u + t v (|s|, |t| < 2^40, so coordinates near 2^42
 * whose differences are exact but whose products are not), then d moves by delta
 * along z. Then orient3d = (a - d) . ((b - a) x (c - a)) = -delta k (u x v).z with
 * k = (sb - sa)(tc - ta) - (tb - ta)(sc - sa): the exact sign is known without
 * evaluating the determinant, and is near the filter's error bound, so both the
 * filter and the expansion arithmetic are exercised; delta = 0 must give 0.
 * orient2d likewise on the line o + s u with c moved by delta along y:
 * (a - c) x (b - c) = delta u.x ((sb - sc) - (sa - sc)). */
Test(geom, orientation_predicates_exact)
{
    gen_rng r = {seed ^ 4};
    long zeros = 0;
    for (int i = 0; i < 40000; i++) {
        ip3 o = rand_ip(&r, -(1ll << 40), 1ll << 40), u = rand_ip(&r, -2, 2), v = rand_ip(&r, -2, 2);
        int64_t s[4], t[4], delta = i % 3 == 0 ? 0 : gen_int(&r, -2, 2);
        ip3 a[4];
        for (int k = 0; k < 4; k++) {
            s[k] = gen_int(&r, -(1ll << 40), 1ll << 40);
            t[k] = gen_int(&r, -(1ll << 40), 1ll << 40);
            if (i % 5 == 1) t[k] = s[k] / 3; /* u and v mixed: a less regular plane */
            a[k] = iadd(o, iadd(iscale(u, s[k]), iscale(v, t[k])));
        }
        a[3].z += delta;
        i128 k = (i128)(s[1] - s[0]) * (t[2] - t[0]) - (i128)(t[1] - t[0]) * (s[2] - s[0]);
        int64_t uvz = u.x * v.y - u.y * v.x;
        int e3 = -sgn(k) * sgn(delta) * sgn(uvz);
        zeros += e3 == 0;
        int g3 = tdm_orient3d(D3(a[0]), D3(a[1]), D3(a[2]), D3(a[3]));
        CHECK(g3 == e3, "seed=%llu case %d: tdm_orient3d = %d, exact sign %d; a=(%lld %lld %lld) b=(%lld %lld %lld) "
              "c=(%lld %lld %lld) d=(%lld %lld %lld)", (unsigned long long)seed, i, g3, e3, (long long)a[0].x,
              (long long)a[0].y, (long long)a[0].z, (long long)a[1].x, (long long)a[1].y, (long long)a[1].z,
              (long long)a[2].x, (long long)a[2].y, (long long)a[2].z, (long long)a[3].x, (long long)a[3].y,
              (long long)a[3].z);
        /* the line: a[k] = o + s_k u, c moved along y */
        ip3 l[3];
        for (int m = 0; m < 3; m++) l[m] = iadd(o, iscale(u, s[m]));
        l[2].y += delta;
        int e2 = sgn(delta) * sgn(u.x) * sgn((i128)(s[1] - s[2]) - (s[0] - s[2]));
        int g2 = tdm_orient2d(D3(l[0]), D3(l[1]), D3(l[2]), 0, 1);
        CHECK(g2 == e2, "seed=%llu case %d: tdm_orient2d = %d, exact sign %d", (unsigned long long)seed, i, g2, e2);
        /* small coordinates, anything goes: the determinant itself fits */
        ip3 b[4];
        for (int m = 0; m < 4; m++) b[m] = rand_ip(&r, -(1 << 20), 1 << 20);
        if (i % 2) b[3] = iadd(b[0], iadd(iscale(isub(b[1], b[0]), gen_int(&r, -3, 3)),
                                            iscale(isub(b[2], b[0]), gen_int(&r, -3, 3))));
        int f3 = sgn(det3(isub(b[0], b[3]), isub(b[1], b[3]), isub(b[2], b[3])));
        CHECK(tdm_orient3d(D3(b[0]), D3(b[1]), D3(b[2]), D3(b[3])) == f3, "seed=%llu case %d: small orient3d wrong",
              (unsigned long long)seed, i);
    }
    CHECK(zeros > 10000, "only %ld exactly coplanar cases", zeros);
}

/* ---- non-integer inputs ----------------------------------------------------- */

/* An integer matrix with |det| >= 1, so that x -> M x + t is a bijection that
 * maps integer configurations to integer configurations: intersection is kept. */
static void random_matrix(gen_rng *r, int64_t m[3][3])
{
    for (;;) {
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) m[i][j] = gen_int(r, -2, 2);
        i128 d = det3(I3(m[0][0], m[0][1], m[0][2]), I3(m[1][0], m[1][1], m[1][2]), I3(m[2][0], m[2][1], m[2][2]));
        if (d != 0) return;
    }
}

static ip3 apply_matrix(int64_t m[3][3], ip3 v, ip3 t)
{
    return I3(m[0][0] * v.x + m[0][1] * v.y + m[0][2] * v.z + t.x, m[1][0] * v.x + m[1][1] * v.y + m[1][2] * v.z + t.y,
              m[2][0] * v.x + m[2][1] * v.y + m[2][2] * v.z + t.z);
}

/* Integer configurations, sheared by an integer matrix, then scaled by 2^-k and
 * moved by a large dyadic offset: non-integer doubles whose exact answer is the
 * integer answer. */
Test(geom, tri_tri_scaled_and_translated, .timeout = 120)
{
    gen_rng r = {seed ^ 5};
    long hits = 0, n = 0;
    for (int i = 0; i < 30000; i++, n++) {
        ip3 p[3], q[3];
        random_case(&r, i % K__N, p, q);
        int64_t m[3][3];
        random_matrix(&r, m);
        ip3 t = rand_ip(&r, -(1 << 20), 1 << 20);
        for (int k = 0; k < 3; k++) { p[k] = apply_matrix(m, p[k], t); q[k] = apply_matrix(m, q[k], t); }
        int expect = oracle_sat(p, q);
        hits += expect;
        int shift = (int)gen_int(&r, -40, 40);
        double off[3] = {ldexp((double)gen_int(&r, -(1ll << 30), 1ll << 30), shift),
                         ldexp((double)gen_int(&r, -(1ll << 30), 1ll << 30), shift),
                         ldexp((double)gen_int(&r, -(1ll << 30), 1ll << 30), shift)};
        tdm_dvec3 P[3], Q[3];
        for (int k = 0; k < 3; k++) {
            /* (c * 2^shift + off) is exact: both are multiples of 2^shift below 2^53 of it */
            P[k] = tdm_d3(ldexp((double)p[k].x, shift) + off[0], ldexp((double)p[k].y, shift) + off[1],
                          ldexp((double)p[k].z, shift) + off[2]);
            Q[k] = tdm_d3(ldexp((double)q[k].x, shift) + off[0], ldexp((double)q[k].y, shift) + off[1],
                          ldexp((double)q[k].z, shift) + off[2]);
        }
        int got = tdm_tri_tri_intersect(P, Q);
        CHECK((got) == (expect), "seed=%llu case %d: scaled by 2^%d, offset (%.17g %.17g %.17g): got %d, exact %d; integer P=" FMT_TRI
                     " Q=" FMT_TRI, (unsigned long long)seed, i, shift, off[0], off[1], off[2], got, expect, ARG_TRI(p),
                     ARG_TRI(q));
    }
    CHECK(hits > n / 5 && hits < 4 * n / 5, "%ld of %ld intersect", hits, n);
}

/* Generic-looking doubles (multiples of 2^-24 in [-1, 1]), and near-touching
 * configurations: an exactly touching small configuration blown up by 2^20 with
 * every coordinate then nudged by at most 2 units, so that the answer hinges on
 * the last bits. */
Test(geom, tri_tri_dyadic_and_near_touching, .timeout = 120)
{
    gen_rng r = {seed ^ 6};
    long hits = 0, n = 0;
    for (int i = 0; i < 30000; i++, n++) {
        ip3 p[3], q[3];
        if (i % 2 == 0) {
            for (int k = 0; k < 3; k++) {
                p[k] = rand_ip(&r, -(1 << 24), 1 << 24);
                q[k] = iadd(p[k], rand_ip(&r, -(1 << 24), 1 << 24));
                q[k] = I3(q[k].x / 2, q[k].y / 2, q[k].z / 2);
            }
        } else {
            random_case(&r, (int)gen_int(&r, K_SHARED, K_ON_FEATURE), p, q);
            for (int k = 0; k < 3; k++) {
                p[k] = iadd(iscale(p[k], 1 << 20), rand_ip(&r, -2, 2));
                q[k] = iadd(iscale(q[k], 1 << 20), rand_ip(&r, -2, 2));
            }
        }
        int expect = oracle_sat(p, q);
        hits += expect;
        tdm_dvec3 P[3], Q[3];
        for (int k = 0; k < 3; k++) {
            P[k] = tdm_d3(ldexp((double)p[k].x, -24), ldexp((double)p[k].y, -24), ldexp((double)p[k].z, -24));
            Q[k] = tdm_d3(ldexp((double)q[k].x, -24), ldexp((double)q[k].y, -24), ldexp((double)q[k].z, -24));
        }
        int got = tdm_tri_tri_intersect(P, Q);
        CHECK((got) == (expect), "seed=%llu case %d: got %d, exact %d; P=" FMT_TRI " Q=" FMT_TRI " (units of 2^-24)",
                     (unsigned long long)seed, i, got, expect, ARG_TRI(p), ARG_TRI(q));
    }
    CHECK(hits > n / 20 && hits < 19 * n / 20, "%ld of %ld intersect", hits, n);
}

/* ---- distance ------------------------------------------------------------------ */

static double dist(tdm_dvec3 a, tdm_dvec3 b) { return tdm_d3_len(tdm_d3_sub(a, b)); }

static double pt_seg(tdm_dvec3 x, tdm_dvec3 a, tdm_dvec3 b)
{
    tdm_dvec3 ab = tdm_d3_sub(b, a);
    double l2 = tdm_d3_len2(ab), s = 0;
    if (l2 > 0) s = fmin(1, fmax(0, tdm_d3_dot(tdm_d3_sub(x, a), ab) / l2));
    return dist(x, tdm_d3_add(a, tdm_d3_scale(ab, s)));
}

/* Distance from x to the closed triangle t (any shape), written independently of
 * the library's closest-point code. */
static double pt_tri(tdm_dvec3 x, const tdm_dvec3 *t)
{
    double best = fmin(pt_seg(x, t[0], t[1]), fmin(pt_seg(x, t[1], t[2]), pt_seg(x, t[2], t[0])));
    tdm_dvec3 n = tdm_d3_cross(tdm_d3_sub(t[1], t[0]), tdm_d3_sub(t[2], t[0]));
    double n2 = tdm_d3_len2(n);
    if (n2 > 0) {
        double h = tdm_d3_dot(n, tdm_d3_sub(x, t[0])) / n2;
        tdm_dvec3 y = tdm_d3_sub(x, tdm_d3_scale(n, h));
        double l0 = tdm_d3_dot(tdm_d3_cross(tdm_d3_sub(t[1], y), tdm_d3_sub(t[2], y)), n) / n2;
        double l1 = tdm_d3_dot(tdm_d3_cross(tdm_d3_sub(t[2], y), tdm_d3_sub(t[0], y)), n) / n2;
        if (l0 >= 0 && l1 >= 0 && l0 + l1 <= 1) best = fmin(best, fabs(h) * sqrt(n2));
    }
    return best;
}

static double diam(const tdm_dvec3 *t) { return fmax(dist(t[0], t[1]), fmax(dist(t[1], t[2]), dist(t[2], t[0]))); }

/* The smallest distance between points of a barycentric grid (step 1/n) on each
 * triangle; every point of a triangle is within 2 diam / n of a grid point. */
static double sampled_distance(const tdm_dvec3 *p, const tdm_dvec3 *q, int n)
{
    enum { MAXS = (24 + 1) * (24 + 2) / 2 };
    tdm_dvec3 sp[MAXS], sq[MAXS];
    int k = 0;
    for (int i = 0; i <= n; i++)
        for (int j = 0; i + j <= n; j++, k++) {
            double a = (double)i / n, b = (double)j / n, c = 1 - a - b;
            sp[k] = tdm_d3_add(tdm_d3_add(tdm_d3_scale(p[0], c), tdm_d3_scale(p[1], a)), tdm_d3_scale(p[2], b));
            sq[k] = tdm_d3_add(tdm_d3_add(tdm_d3_scale(q[0], c), tdm_d3_scale(q[1], a)), tdm_d3_scale(q[2], b));
        }
    double best = INFINITY;
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) {
            double d2 = tdm_d3_len2(tdm_d3_sub(sp[i], sq[j]));
            if (d2 < best) best = d2;
        }
    return sqrt(best);
}

/* Checks one distance answer; `exact` is the exact intersection answer, or -1 when
 * unknown (then the library's own intersection test stands in for it). */
static void check_distance(const tdm_dvec3 *P, const tdm_dvec3 *Q, int exact, int check_witnesses, int case_no,
                           const char *what)
{
    tdm_dvec3 cp, cq;
    double d = tdm_tri_tri_distance(P, Q, &cp, &cq);
    double scale = fmax(1, fmax(diam(P) + diam(Q), dist(P[0], Q[0])));
    double eps = 1e-12 * scale;
    int inter = exact >= 0 ? exact : tdm_tri_tri_intersect(P, Q);
    CHECK(isfinite(d) && d >= 0, "seed=%llu %s case %d: distance %g", (unsigned long long)seed, what, case_no, d);
    CHECK((d == 0) == (inter), "seed=%llu %s case %d: distance %.17g but triangles %s", (unsigned long long)seed, what,
                 case_no, d, inter ? "intersect" : "are disjoint");
    /* the witnesses lie on their triangles and are d apart (for intersecting
     * triangles: see tri_tri_distance_witnesses_of_intersecting) */
    if (d > 0 || check_witnesses) {
        CHECK(pt_tri(cp, P) <= 1e-9 * scale, "seed=%llu %s case %d: closest point cp (%.17g %.17g %.17g) is %g off P "
              "(distance %.17g); P=" FMT_DTRI " Q=" FMT_DTRI, (unsigned long long)seed, what, case_no, cp.x, cp.y, cp.z,
              pt_tri(cp, P), d, ARG_DTRI(P), ARG_DTRI(Q));
        CHECK(pt_tri(cq, Q) <= 1e-9 * scale, "seed=%llu %s case %d: closest point cq (%.17g %.17g %.17g) is %g off Q "
              "(distance %.17g); P=" FMT_DTRI " Q=" FMT_DTRI, (unsigned long long)seed, what, case_no, cq.x, cq.y, cq.z,
              pt_tri(cq, Q), d, ARG_DTRI(P), ARG_DTRI(Q));
        CHECK(fabs(dist(cp, cq) - d) <= 1e-9 * scale, "seed=%llu %s case %d: |cp - cq| = %.17g, distance %.17g",
                  (unsigned long long)seed, what, case_no, dist(cp, cq), d);
    }
    if (d > 0) {
        /* optimality certificate: the slab between the planes through cp and cq
         * normal to w = cq - cp separates the triangles, so no pair is closer */
        tdm_dvec3 w = tdm_d3_sub(cq, cp);
        double wp = tdm_d3_dot(w, cp), wq = tdm_d3_dot(w, cq), tol = 1e-9 * scale * scale;
        for (int k = 0; k < 3; k++) {
            CHECK(tdm_d3_dot(w, P[k]) <= wp + tol, "seed=%llu %s case %d: distance %.17g is not minimal (P[%d])",
                      (unsigned long long)seed, what, case_no, d, k);
            CHECK(tdm_d3_dot(w, Q[k]) >= wq - tol, "seed=%llu %s case %d: distance %.17g is not minimal (Q[%d])",
                      (unsigned long long)seed, what, case_no, d, k);
        }
    }
    /* brute-force sampling: an upper bound, and a lower bound up to the grid */
    int n = 16;
    double s = sampled_distance(P, Q, n), slack = 2 * (diam(P) + diam(Q)) / n;
    CHECK(d <= s + eps, "seed=%llu %s case %d: distance %.17g above a sampled distance %.17g",
              (unsigned long long)seed, what, case_no, d, s);
    CHECK(d >= s - slack - eps, "seed=%llu %s case %d: distance %.17g below sampled %.17g - %g",
              (unsigned long long)seed, what, case_no, d, s, slack);
    /* symmetric */
    double d2 = tdm_tri_tri_distance(Q, P, NULL, NULL);
    CHECK(fabs(d2 - d) <= eps, "seed=%llu %s case %d: distance(P,Q)=%.17g, distance(Q,P)=%.17g",
              (unsigned long long)seed, what, case_no, d, d2);
}

Test(geom, tri_tri_distance_small_integers, .timeout = 120)
{
    gen_rng r = {seed ^ 7};
    for (int i = 0; i < 4000; i++) {
        ip3 p[3], q[3];
        random_case(&r, i % K__N, p, q);
        tdm_dvec3 P[3], Q[3];
        to_d(p, P);
        to_d(q, Q);
        check_distance(P, Q, oracle_sat(p, q), 0, i, kind_name[i % K__N]);
    }
}

/* tri.h promises "a closest pair of points (cp on p, cq on q)" also when the
 * distance is 0: then cp == cq must be a common point of both triangles. */
Test(geom, tri_tri_distance_witnesses_of_intersecting, .timeout = 60)
{
    gen_rng r = {seed ^ 12};
    int n = 0;
    for (int i = 0; n < 3000; i++) {
        ip3 p[3], q[3];
        random_case(&r, i % K__N, p, q);
        if (!oracle_sat(p, q)) continue;
        n++;
        tdm_dvec3 P[3], Q[3];
        to_d(p, P);
        to_d(q, Q);
        check_distance(P, Q, 1, 1, i, kind_name[i % K__N]);
    }
}

Test(geom, tri_tri_distance_random_doubles, .timeout = 120)
{
    gen_rng r = {seed ^ 8};
    for (int i = 0; i < 2000; i++) {
        tdm_dvec3 P[3], Q[3];
        tdm_dvec3 off = tdm_d3(gen_range(&r, -1, 1), gen_range(&r, -1, 1), gen_range(&r, -1, 1));
        double sz = i % 2 ? 1 : 1e-3;
        for (int k = 0; k < 3; k++) {
            P[k] = tdm_d3(gen_range(&r, -1, 1), gen_range(&r, -1, 1), gen_range(&r, -1, 1));
            Q[k] = tdm_d3_add(tdm_d3_scale(off, 0.5), tdm_d3_scale(tdm_d3(gen_range(&r, -1, 1), gen_range(&r, -1, 1),
                                                                          gen_range(&r, -1, 1)), sz));
        }
        if (i % 5 == 0) Q[2] = Q[1]; /* a segment */
        check_distance(P, Q, -1, 0, i, "random doubles");
    }
}

/* ---- oriented boxes --------------------------------------------------------------- */

typedef struct dbox { double c[3], ax[3][3], e[3]; } dbox; /* rows of ax: axes, in a common frame */

static double ddot(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* Separating-axis test in double over the 15 (unnormalised) axes: the largest
 * excess |L.(cb - ca)| - radius_a(L) - radius_b(L). Positive: separated by L. */
static double sat_excess(const dbox *a, const dbox *b)
{
    double L[15][3];
    int n = 0;
    for (int i = 0; i < 3; i++) { memcpy(L[n++], a->ax[i], sizeof L[0]); memcpy(L[n++], b->ax[i], sizeof L[0]); }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++, n++) {
            const double *u = a->ax[i], *v = b->ax[j];
            L[n][0] = u[1] * v[2] - u[2] * v[1];
            L[n][1] = u[2] * v[0] - u[0] * v[2];
            L[n][2] = u[0] * v[1] - u[1] * v[0];
        }
    double d[3] = {b->c[0] - a->c[0], b->c[1] - a->c[1], b->c[2] - a->c[2]}, best = -INFINITY;
    for (int k = 0; k < 15; k++) {
        double ra = 0, rb = 0;
        for (int i = 0; i < 3; i++) {
            ra += a->e[i] * fabs(ddot(L[k], a->ax[i]));
            rb += b->e[i] * fabs(ddot(L[k], b->ax[i]));
        }
        best = fmax(best, fabs(ddot(L[k], d)) - ra - rb);
    }
    return best;
}

static void rot_rows(tdm_quat q, float ax[3][3])
{
    tdm_dmat3 m = tdm_quat_to_mat(q);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) ax[i][j] = (float)m.m[j][i]; /* rows: the rotated unit vectors */
}

static tdm_bvh_node make_node(const float ax[3][3], const double c[3], const double e[3])
{
    tdm_bvh_node n;
    memset(&n, 0, sizeof n);
    memcpy(n.axis, ax, sizeof n.axis);
    for (int k = 0; k < 3; k++) { n.center[k] = (float)c[k]; n.extent[k] = (float)e[k]; }
    n.link = ~0;
    return n;
}

/* Box a (frame A) and box b (frame B) placed by x, as double boxes in frame A,
 * from the float values the nodes hold. */
static void to_dboxes(const tdm_bvh_node *a, const tdm_bvh_node *b, const tdm_xform *x, dbox *da, dbox *db)
{
    for (int i = 0; i < 3; i++) {
        da->c[i] = a->center[i];
        da->e[i] = a->extent[i];
        db->e[i] = b->extent[i];
        for (int j = 0; j < 3; j++) da->ax[i][j] = a->axis[i][j];
        tdm_dvec3 v = tdm_dm3_mulv(&x->r, tdm_d3(b->axis[i][0], b->axis[i][1], b->axis[i][2]));
        db->ax[i][0] = v.x; db->ax[i][1] = v.y; db->ax[i][2] = v.z;
    }
    tdm_dvec3 c = tdm_xform_apply(x, tdm_d3(b->center[0], b->center[1], b->center[2]));
    db->c[0] = c.x; db->c[1] = c.y; db->c[2] = c.z;
}

static float node_radius(const tdm_bvh_node *n)
{
    return sqrtf(n->center[0] * n->center[0] + n->center[1] * n->center[1] + n->center[2] * n->center[2]) +
           sqrtf(n->extent[0] * n->extent[0] + n->extent[1] * n->extent[1] + n->extent[2] * n->extent[2]);
}

Test(geom, obb_touching_boxes_overlap)
{
    /* axis-aligned, face to face, exactly */
    float id[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    double c0[3] = {0, 0, 0}, e1[3] = {1, 1, 1}, c2[3] = {0.5, -0.25, 3}, e2[3] = {0.5, 0.75, 2};
    tdm_bvh_node a = make_node(id, c0, e1), b = make_node(id, c0, e1), b2 = make_node(id, c2, e2);
    tdm_xform x = tdm_xform_identity();
    x.t = tdm_d3(2, 0, 0);
    tdm_fxform fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &b, &fx, 0)) == (1), "face-to-face boxes must overlap (tol 0)");
    x.t = tdm_d3(2, 2, 2); /* corner to corner */
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &b, &fx, 0)) == (1), "corner-to-corner boxes must overlap (tol 0)");
    x.t = tdm_d3(2, 2, 0.5); /* edge to edge */
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &b, &fx, 0)) == (1), "edge-to-edge boxes must overlap (tol 0)");
    x.t = tdm_d3(2.125, 0, 0);
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &b, &fx, 0)) == (0), "boxes 1/8 apart must be disjoint");
    /* b2 spans z in [1, 5]: touching a's top face */
    x.t = tdm_d3(0, 0, 0);
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &b2, &fx, 0)) == (1), "box resting on a face must overlap");
    x.t = tdm_d3(0, 0, 0.25);
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &b2, &fx, 0)) == (0), "box 1/4 above a face must be disjoint");
    /* nested and coincident */
    x.t = tdm_d3(0, 0, -3);
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &b2, &fx, 0)) == (1), "a box through another must overlap");
    x = tdm_xform_identity();
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &a, &fx, 0)) == (1), "a box overlaps itself");
    /* a flat box (zero extent), as a zero-area leaf has, touching a face */
    double ef[3] = {1, 1, 0};
    tdm_bvh_node flat = make_node(id, c0, ef);
    x.t = tdm_d3(0.5, 0.5, 1);
    fx = tdm_fxform_of(&x);
    CHECK((tdm_obb_overlap(&a, &flat, &fx, 0)) == (1), "a flat box lying on a face must overlap");
}

/* Boxes in random orientations placed so that they touch: b's support point in
 * direction -u is put on a's support point in direction u. They share that point,
 * so the test must say "overlap"; moved apart along u by a margin that some axis
 * sees clearly, they must be reported disjoint. */
Test(geom, obb_random_touching_and_separated, .timeout = 60)
{
    gen_rng r = {seed ^ 9};
    int separated_checked = 0, n = 20000;
    for (int i = 0; i < n; i++) {
        float axa[3][3], axb[3][3];
        rot_rows(gen_rotation(&r), axa);
        rot_rows(gen_rotation(&r), axb);
        double off = i % 4 == 3 ? 200 : 0; /* far from the origin: rounding grows with magnitude */
        double ca[3] = {gen_range(&r, -1, 1) + off, gen_range(&r, -1, 1) - off, gen_range(&r, -1, 1)};
        double cb[3] = {gen_range(&r, -1, 1), gen_range(&r, -1, 1), gen_range(&r, -1, 1)};
        double ea[3], eb[3];
        for (int k = 0; k < 3; k++) {
            ea[k] = gen_range(&r, 0.05, 1.5);
            eb[k] = gen_range(&r, 0.05, 1.5);
        }
        if (i % 10 == 0) ea[i / 10 % 3] = 0; /* flat boxes */
        tdm_bvh_node a = make_node(axa, ca, ea), b = make_node(axb, cb, eb);
        tdm_quat q = gen_rotation(&r);
        tdm_xform x = tdm_xform_from_pose(tdm_d3(0, 0, 0), q);
        tdm_dvec3 u;
        switch (i % 3) {
        case 0: u = tdm_d3(a.axis[0][0], a.axis[0][1], a.axis[0][2]); break; /* face contact */
        default: u = gen_in_ball(&r, tdm_d3(0, 0, 0), 1); u = tdm_d3_scale(u, 1 / tdm_d3_len(u)); break;
        }
        /* support points, with the axes as stored */
        tdm_dvec3 sa = tdm_d3(a.center[0], a.center[1], a.center[2]), sb = tdm_d3(0, 0, 0);
        for (int k = 0; k < 3; k++) {
            tdm_dvec3 ak = tdm_d3(a.axis[k][0], a.axis[k][1], a.axis[k][2]);
            tdm_dvec3 bk = tdm_dm3_mulv(&x.r, tdm_d3(b.axis[k][0], b.axis[k][1], b.axis[k][2]));
            double s = tdm_d3_dot(u, ak) >= 0 ? 1 : -1, t = tdm_d3_dot(u, bk) >= 0 ? 1 : -1;
            sa = tdm_d3_add(sa, tdm_d3_scale(ak, s * a.extent[k]));
            sb = tdm_d3_add(sb, tdm_d3_scale(bk, t * b.extent[k])); /* b's centre minus its support in -u */
        }
        /* b's centre in A must be sa + sb; its centre in B is cb */
        tdm_dvec3 cbA = tdm_d3_add(sa, sb);
        x.t = tdm_d3_sub(cbA, tdm_dm3_mulv(&x.r, tdm_d3(b.center[0], b.center[1], b.center[2])));
        tdm_fxform fx = tdm_fxform_of(&x);
        float tol = tdm_obb_tolerance(node_radius(&a), node_radius(&b), (float)tdm_d3_len(x.t));
        CHECK((tdm_obb_overlap(&a, &b, &fx, tol)) == (1),
                     "seed=%llu case %d: touching boxes reported disjoint (u = %g %g %g, offset %g)",
                     (unsigned long long)seed, i, u.x, u.y, u.z, off);
        /* now apart by 0.05 along u */
        x.t = tdm_d3_add(x.t, tdm_d3_scale(u, 0.05));
        fx = tdm_fxform_of(&x);
        dbox da, db;
        to_dboxes(&a, &b, &x, &da, &db);
        double ex = sat_excess(&da, &db);
        CHECK(ex > 0, "seed=%llu case %d: construction error, boxes 0.05 apart overlap in double SAT (%g)",
                  (unsigned long long)seed, i, ex);
        if (ex > 1e-3) {
            separated_checked++;
            tol = tdm_obb_tolerance(node_radius(&a), node_radius(&b), (float)tdm_d3_len(x.t));
            CHECK((tdm_obb_overlap(&a, &b, &fx, tol)) == (0),
                         "seed=%llu case %d: boxes separated by %g along an axis reported overlapping",
                         (unsigned long long)seed, i, ex);
        }
    }
    CHECK(separated_checked > n / 2, "only %d of %d separated pairs had a clear separating axis", separated_checked, n);
}

/* Random box pairs: whatever the double-precision SAT calls overlapping must
 * overlap, and what it separates by a clear margin must be disjoint. */
Test(geom, obb_random_pairs_against_double_sat, .timeout = 60)
{
    gen_rng r = {seed ^ 10};
    int over = 0, apart = 0;
    for (int i = 0; i < 100000; i++) {
        float axa[3][3], axb[3][3];
        rot_rows(gen_rotation(&r), axa);
        rot_rows(gen_rotation(&r), axb);
        if (i % 7 == 0) memcpy(axb, axa, sizeof axa); /* parallel edges: the cross axes vanish */
        double ca[3] = {gen_range(&r, -1, 1), gen_range(&r, -1, 1), gen_range(&r, -1, 1)}, cb[3] = {0, 0, 0};
        double ea[3], eb[3];
        for (int k = 0; k < 3; k++) { ea[k] = gen_range(&r, 0, 1); eb[k] = gen_range(&r, 0, 1); }
        tdm_bvh_node a = make_node(axa, ca, ea), b = make_node(axb, cb, eb);
        tdm_quat q = i % 7 == 0 ? (tdm_quat){0, 0, 0, 1} : gen_rotation(&r);
        tdm_xform x = tdm_xform_from_pose(gen_in_ball(&r, tdm_d3(0, 0, 0), 2.2), q);
        tdm_fxform fx = tdm_fxform_of(&x);
        dbox da, db;
        to_dboxes(&a, &b, &x, &da, &db);
        double ex = sat_excess(&da, &db);
        float tol = tdm_obb_tolerance(node_radius(&a), node_radius(&b), (float)tdm_d3_len(x.t));
        int got = tdm_obb_overlap(&a, &b, &fx, tol);
        if (ex <= 0) {
            over++;
            CHECK((got) == (1), "seed=%llu case %d: overlapping boxes (SAT excess %g) reported disjoint",
                         (unsigned long long)seed, i, ex);
        } else if (ex > 1e-3) {
            apart++;
            CHECK((got) == (0), "seed=%llu case %d: boxes separated by %g reported overlapping",
                         (unsigned long long)seed, i, ex);
        }
    }
    CHECK(over > 10000 && apart > 10000, "seed=%llu: %d overlapping and %d separated pairs", (unsigned long long)seed,
              over, apart);
}

/* ---- OBBs of real trees: never "disjoint" for boxes whose contents meet ---------- */

static void node_ranges(const tdm_bvh *b, uint32_t *lo, uint32_t *hi)
{
    for (uint32_t i = b->n_nodes; i-- > 0;) {
        const tdm_bvh_node *n = &b->nodes[i];
        if (tdm_node_is_leaf(n)) {
            lo[i] = tdm_leaf_first(n);
            hi[i] = lo[i] + tdm_leaf_count(n);
        } else {
            lo[i] = lo[i + 1];
            hi[i] = hi[(uint32_t)n->link];
        }
    }
}

static void slot_tri(const tdm_bvh *b, uint32_t s, const tdm_xform *x, tdm_dvec3 *t)
{
    for (int k = 0; k < 3; k++) {
        const float *v = &b->tri_verts[9 * (size_t)s + 3 * (size_t)k];
        t[k] = tdm_d3(v[0], v[1], v[2]);
        if (x) t[k] = tdm_xform_apply(x, t[k]);
    }
}

/* Checks every node pair of two trees at one pose; returns the number of node
 * pairs whose contents intersect (all of which must be reported overlapping).
 * Contents are the subtrees' triangles, B's moved in double as the engine moves
 * them; whether two meet is tdm_tri_tri_intersect's exact answer (checked above). */
static long check_all_node_pairs(const tdm_bvh *A, const tdm_bvh *B, const tdm_xform *x, const char *what, int pose)
{
    uint32_t na = A->n_tris, nb = B->n_tris;
    tdm_dvec3(*ta)[3] = malloc(sizeof *ta * na), (*tb)[3] = malloc(sizeof *tb * nb);
    uint32_t *S = calloc((size_t)(na + 1) * (nb + 1), sizeof *S); /* 2D prefix sums of intersecting slot pairs */
    uint32_t *alo = malloc(sizeof *alo * A->n_nodes), *ahi = malloc(sizeof *ahi * A->n_nodes);
    uint32_t *blo = malloc(sizeof *blo * B->n_nodes), *bhi = malloc(sizeof *bhi * B->n_nodes);
    CHECK(ta && tb && S && alo && ahi && blo && bhi, "ta && tb && S && alo && ahi && blo && bhi");
    for (uint32_t i = 0; i < na; i++) slot_tri(A, i, NULL, ta[i]);
    for (uint32_t j = 0; j < nb; j++) slot_tri(B, j, x, tb[j]);
    for (uint32_t i = 0; i < na; i++)
        for (uint32_t j = 0; j < nb; j++) {
            uint32_t hit = (uint32_t)tdm_tri_tri_intersect(ta[i], tb[j]);
            S[(size_t)(i + 1) * (nb + 1) + j + 1] =
                hit + S[(size_t)i * (nb + 1) + j + 1] + S[(size_t)(i + 1) * (nb + 1) + j] - S[(size_t)i * (nb + 1) + j];
        }
    node_ranges(A, alo, ahi);
    node_ranges(B, blo, bhi);
    tdm_fxform fx = tdm_fxform_of(x);
    float tol = tdm_obb_tolerance(A->radius, B->radius, (float)tdm_d3_len(x->t));
    long meeting = 0;
    for (uint32_t i = 0; i < A->n_nodes; i++)
        for (uint32_t j = 0; j < B->n_nodes; j++) {
            size_t w = nb + 1;
            uint32_t cnt = S[(size_t)ahi[i] * w + bhi[j]] - S[(size_t)alo[i] * w + bhi[j]] - S[(size_t)ahi[i] * w + blo[j]] +
                           S[(size_t)alo[i] * w + blo[j]];
            if (!cnt) continue;
            meeting++;
            CHECK((tdm_obb_overlap(&A->nodes[i], &B->nodes[j], &fx, tol)) == (1),
                         "seed=%llu %s pose %d: nodes %u (slots %u..%u) and %u (slots %u..%u) hold %u intersecting "
                         "triangle pairs but their boxes are reported disjoint",
                         (unsigned long long)seed, what, pose, i, alo[i], ahi[i], j, blo[j], bhi[j], cnt);
        }
    free(ta); free(tb); free(S); free(alo); free(ahi); free(blo); free(bhi);
    return meeting;
}

static tdm_quat small_rotation(gen_rng *r, double max_angle)
{
    tdm_dvec3 a = gen_in_ball(r, tdm_d3(0, 0, 0), 1);
    double l = tdm_d3_len(a), th = gen_range(r, 0, max_angle);
    if (l < 1e-9) return (tdm_quat){0, 0, 0, 1};
    a = tdm_d3_scale(a, sin(th / 2) / l);
    return (tdm_quat){a.x, a.y, a.z, cos(th / 2)};
}

/* Half-turns about the axes: rotation matrices with entries 0 and +-1, exactly. */
static const tdm_quat half_turns[4] = {{0, 0, 0, 1}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}};

Test(geom, obb_tree_boxes_conservative, .timeout = 180)
{
    gen_rng r = {seed ^ 11};
    struct { const char *what; tdm_mesh *a, *b; int exact; double far; } cfg[4];
    cfg[0].what = "pile vs itself, small motions";
    cfg[0].a = gen_pile(&r, 120, 1, 0.3);
    cfg[0].b = NULL, cfg[0].exact = 0, cfg[0].far = 0;
    cfg[1].what = "grid pile, exact half-turns and grid translations";
    cfg[1].a = gen_grid_pile(&r, 120, 8, 3, 0.125);
    cfg[1].b = gen_grid_pile(&r, 100, 8, 3, 0.125), cfg[1].exact = 1, cfg[1].far = 0;
    cfg[2].what = "slivers vs zero-area";
    cfg[2].a = gen_slivers(&r, 120, 1, 0.8, 1e-3);
    cfg[2].b = gen_zero_area(&r, 120, 8, 0.125), cfg[2].exact = 1, cfg[2].far = 0;
    cfg[3].what = "pile far from the origin";
    cfg[3].a = gen_translated(cfg[0].a, 300, -200, 100);
    cfg[3].b = gen_pile(&r, 100, 1, 0.3), cfg[3].exact = 0, cfg[3].far = 1;
    long total = 0;
    for (int c = 0; c < 4; c++) {
        tdm_bvh *A, *B;
        cr_assert_not_null(cfg[c].a);
        CHECK((tdm_bvh_build(cfg[c].a, &A)) == (TDM_OK), "(tdm_bvh_build(cfg[c].a, &A)) == (TDM_OK)");
        CHECK((tdm_bvh_build(cfg[c].b ? cfg[c].b : cfg[c].a, &B)) == (TDM_OK), "(tdm_bvh_build(cfg[c].b ? cfg[c].b : cfg[c].a, &B)) == (TDM_OK)");
        for (int pose = 0; pose < 40; pose++) {
            tdm_xform x;
            if (cfg[c].exact && pose % 2 == 0) {
                tdm_dvec3 t = tdm_d3((double)gen_int(&r, -8, 8) * 0.125, (double)gen_int(&r, -8, 8) * 0.125,
                                     (double)gen_int(&r, -8, 8) * 0.125);
                x = tdm_xform_from_pose(t, half_turns[gen_int(&r, 0, 3)]);
            } else if (cfg[c].far) {
                x = tdm_xform_from_pose(gen_in_ball(&r, tdm_d3(300, -200, 100), 0.5), small_rotation(&r, 3.2));
            } else {
                x = tdm_xform_from_pose(gen_in_ball(&r, tdm_d3(0, 0, 0), 0.3), small_rotation(&r, 0.5));
            }
            total += check_all_node_pairs(A, B, &x, cfg[c].what, pose);
        }
        tdm_bvh_free(A);
        tdm_bvh_free(B);
        tdm_mesh_free(cfg[c].a);
        tdm_mesh_free(cfg[c].b);
    }
    cr_log_info("%ld node pairs with intersecting contents checked", total);
    CHECK(total > 10000, "too few meeting node pairs (%ld) to mean anything", total);
}

/* ---- leaf pairs (geom/leaf.h) ------------------------------------------------------ */

static uint32_t *leaves_of(const tdm_bvh *b, uint32_t *n)
{
    uint32_t *l = malloc(b->n_nodes * sizeof *l);
    cr_assert_not_null(l);
    *n = 0;
    for (uint32_t i = 0; i < b->n_nodes; i++)
        if (tdm_node_is_leaf(&b->nodes[i])) l[(*n)++] = i;
    return l;
}

/* Every leaf pair of two trees at poses where exact touching is common: the
 * leaf tests against the pairwise predicate on triangles loaded by hand
 * (slot_tri, above). Tessellated surfaces give leaves of two triangles; grid
 * piles and zero-area triangles on a grid, moved by grid translations and
 * half-turns, give exact contacts. */
Test(geom, leaf_tests_match_pairwise, .timeout = 120)
{
    gen_rng r = {seed ^ 12};
    struct { const char *what; tdm_mesh *a, *b; double step, ball; } cfg[3] = {
        {"grid pile vs zero-area", gen_grid_pile(&r, 150, 8, 4, 0.125), gen_zero_area(&r, 150, 8, 0.125), 0.125, 0.2},
        {"boxes", gen_box(0.5, 0.25, 0.25), gen_box(0.25, 0.5, 0.125), 0.125, 0.3},
        {"sphere vs torus", gen_sphere(1, 16), gen_torus(1, 0.3, 24, 8), 0, 0.3},
    };
    long hits = 0, pairs = 0, two_by_two = 0, two_by_two_hits = 0;
    for (int c = 0; c < 3; c++) {
        cr_assert(cfg[c].a && cfg[c].b, "generating %s", cfg[c].what);
        tdm_bvh *A, *B;
        cr_assert_eq(tdm_bvh_build(cfg[c].a, &A), TDM_OK);
        cr_assert_eq(tdm_bvh_build(cfg[c].b, &B), TDM_OK);
        uint32_t nla, nlb, *la = leaves_of(A, &nla), *lb = leaves_of(B, &nlb);
        for (int pose = 0; pose < 12; pose++) {
            tdm_xform x;
            if (cfg[c].step > 0 && pose % 3 != 2) { /* grid translations and half-turns: exact contacts */
                double st = cfg[c].step;
                tdm_dvec3 t = tdm_d3((double)gen_int(&r, -4, 4) * st, (double)gen_int(&r, -4, 4) * st,
                                     (double)gen_int(&r, -4, 4) * st);
                x = tdm_xform_from_pose(t, half_turns[gen_int(&r, 0, 3)]);
            } else {
                x = tdm_xform_from_pose(gen_in_ball(&r, tdm_d3(0, 0, 0), cfg[c].ball), small_rotation(&r, 0.5));
            }
            for (uint32_t i = 0; i < nla; i++)
                for (uint32_t j = 0; j < nlb; j++) {
                    const tdm_bvh_node *na = &A->nodes[la[i]], *nb = &B->nodes[lb[j]];
                    uint32_t fa = tdm_leaf_first(na), ca = tdm_leaf_count(na), fb = tdm_leaf_first(nb),
                             cb = tdm_leaf_count(nb), want = 0;
                    tdm_dvec3 moved[2][3];
                    CHECK(tdm_leaf_load_moved(nb, B->tri_verts, &x, moved) == cb, "tdm_leaf_load_moved's count");
                    for (uint32_t u = 0; u < ca; u++)
                        for (uint32_t v = 0; v < cb; v++) {
                            tdm_dvec3 ta[3], tb[3];
                            slot_tri(A, fa + u, NULL, ta);
                            slot_tri(B, fb + v, &x, tb);
                            int hit = tdm_tri_tri_intersect(ta, tb);
                            want |= (uint32_t)hit << (2 * u + v);
                            CHECK(memcmp(moved[v], tb, sizeof tb) == 0,
                                  "seed=%llu %s pose %d leaf %u: tdm_leaf_load_moved's triangle %u differs",
                                  (unsigned long long)seed, cfg[c].what, pose, lb[j], v);
                            /* the GPU's first pass (planes filter) must keep every intersecting pair */
                            CHECK(!(hit && tdm_tri_planes_separate(ta, tb)),
                                  "seed=%llu %s pose %d leaves %u, %u: the planes filter drops pair (%u, %u)",
                                  (unsigned long long)seed, cfg[c].what, pose, la[i], lb[j], u, v);
                            CHECK(tdm_tri_pair_intersect(A->tri_verts, fa + u, B->tri_verts, fb + v, &x) == hit,
                                  "seed=%llu %s pose %d leaves %u, %u: tdm_tri_pair_intersect differs on pair (%u, %u)",
                                  (unsigned long long)seed, cfg[c].what, pose, la[i], lb[j], u, v);
                        }
                    uint32_t got = tdm_leaf_intersect(na, A->tri_verts, nb, B->tri_verts, &x, 0);
                    uint32_t first = tdm_leaf_intersect(na, A->tri_verts, nb, B->tri_verts, &x, 1);
                    CHECK(got == want, "seed=%llu %s pose %d leaves %u, %u (%u x %u triangles): mask %#x, pairwise %#x",
                          (unsigned long long)seed, cfg[c].what, pose, la[i], lb[j], ca, cb, got, want);
                    CHECK(first == (want & (0u - want)), "seed=%llu %s pose %d leaves %u, %u: first-only mask %#x of %#x",
                          (unsigned long long)seed, cfg[c].what, pose, la[i], lb[j], first, want);
                    hits += __builtin_popcount(want);
                    pairs += ca * cb;
                    two_by_two += ca == 2 && cb == 2;
                    two_by_two_hits += ca == 2 && cb == 2 && want != 0;
                }
        }
        free(la);
        free(lb);
        tdm_bvh_free(A);
        tdm_bvh_free(B);
        tdm_mesh_free(cfg[c].a);
        tdm_mesh_free(cfg[c].b);
    }
    cr_log_info("%ld intersecting triangle pairs of %ld; %ld leaf pairs of 2 x 2, %ld of them intersecting", hits,
                pairs, two_by_two, two_by_two_hits);
    CHECK(hits > 1000 && two_by_two_hits > 100,
          "too few intersecting pairs (%ld) or intersecting 2 x 2 leaf pairs (%ld) to mean anything", hits,
          two_by_two_hits);
}

static tdm_bvh_node leaf_node(uint32_t first, uint32_t count)
{
    tdm_bvh_node n;
    memset(&n, 0, sizeof n);
    n.link = ~(int32_t)((first << 1) | (count - 1));
    return n;
}

/* Random sequences of leaf masks added up by tdm_result_add_leaf, against the
 * rule written out: the list of every intersecting pair in test order. */
Test(geom, result_rule_counts_and_truncates, .timeout = 60)
{
    gen_rng r = {seed ^ 13};
    uint32_t a_ids[64], b_ids[64];
    for (uint32_t k = 0; k < 64; k++) {
        a_ids[k] = 1000 + 7 * k;
        b_ids[k] = 5000 + 3 * k;
    }
    for (int round = 0; round < 20000; round++) {
        int n_leaves = (int)gen_int(&r, 1, 6);
        tdm_bvh_node na[6], nb[6];
        uint32_t mask[6];
        tdm_pair all[24];
        uint32_t pos_of[24], n_all = 0, n_pos = 0; /* pos_of[k]: test-order positions up to pair k, inclusive */
        for (int l = 0; l < n_leaves; l++) {
            uint32_t ca = (uint32_t)gen_int(&r, 1, 2), cb = (uint32_t)gen_int(&r, 1, 2);
            uint32_t fa = (uint32_t)gen_int(&r, 0, 60), fb = (uint32_t)gen_int(&r, 0, 60);
            na[l] = leaf_node(fa, ca);
            nb[l] = leaf_node(fb, cb);
            mask[l] = 0;
            for (uint32_t u = 0; u < ca; u++)
                for (uint32_t v = 0; v < cb; v++) {
                    n_pos++;
                    if (gen_int(&r, 0, 2) != 0) continue;
                    mask[l] |= 1u << (2 * u + v);
                    all[n_all] = (tdm_pair){a_ids[fa + u], b_ids[fb + v]};
                    pos_of[n_all++] = n_pos;
                }
        }
        tdm_mode mode = gen_int(&r, 0, 1) ? TDM_MODE_CONTACTS : TDM_MODE_BOOL;
        uint32_t cap = mode == TDM_MODE_BOOL ? 0 : (uint32_t)gen_int(&r, 1, 8);
        tdm_pair out[8];
        tdm_collide_result res;
        memset(&res, 0, sizeof res);
        uint32_t tested = 0;
        for (int l = 0; l < n_leaves && !tdm_result_done(&res, mode); l++)
            tested += tdm_result_add_leaf(&res, mode, cap, mode == TDM_MODE_BOOL ? NULL : out, mask[l], &na[l], a_ids,
                                          &nb[l], b_ids);
        /* the rule: bool stops at pair 0, contacts at pair cap (the one beyond it) */
        uint32_t stop = mode == TDM_MODE_BOOL ? 0 : cap;
        uint32_t want_pairs = mode == TDM_MODE_BOOL ? (n_all > 0) : (n_all < cap ? n_all : cap);
        CHECK(res.colliding == (n_all > 0), "round %d: colliding %u with %u pairs", round, res.colliding, n_all);
        CHECK(res.n_pairs == want_pairs, "round %d (%s, cap %u): n_pairs %u, want %u of %u", round,
              mode == TDM_MODE_BOOL ? "bool" : "contacts", cap, res.n_pairs, want_pairs, n_all);
        CHECK(res.truncated == (mode == TDM_MODE_CONTACTS && n_all > cap), "round %d: truncated %u, %u pairs, cap %u",
              round, res.truncated, n_all, cap);
        CHECK(tdm_result_done(&res, mode) == (n_all > stop), "round %d: done %d with %u pairs", round,
              tdm_result_done(&res, mode), n_all);
        CHECK(tested == (n_all > stop ? pos_of[stop] : n_pos), "round %d: %u pairs taken, want %u", round, tested,
              n_all > stop ? pos_of[stop] : n_pos);
        if (n_all > 0)
            CHECK(res.first.a_tri == all[0].a_tri && res.first.b_tri == all[0].b_tri, "round %d: first pair", round);
        for (uint32_t k = 0; mode == TDM_MODE_CONTACTS && k < res.n_pairs; k++)
            CHECK(out[k].a_tri == all[k].a_tri && out[k].b_tri == all[k].b_tri, "round %d: pair %u", round, k);
    }
    /* the cap's arithmetic, at the edges of uint32_t (the GPU's count runs past the cap) */
    cr_assert(!tdm_contacts_past_cap(4, 1, 5) && tdm_contacts_past_cap(5, 1, 5) && !tdm_contacts_past_cap(5, 0, 5));
    cr_assert(tdm_contacts_past_cap(UINT32_MAX, 1, UINT32_MAX), "no wrap-around");
    cr_assert(tdm_contacts_past_cap(7, UINT32_MAX, UINT32_MAX - 1));
    cr_assert(!tdm_contacts_past_cap(UINT32_MAX - 1, 1, UINT32_MAX));
    cr_assert_eq(tdm_contacts_counted(3, 5), 3);
    cr_assert_eq(tdm_contacts_counted(9, 5), 5);
    cr_assert_eq(tdm_contacts_counted(UINT32_MAX, 5), 5);
}

/* ---- poses (geom/vec.h) ------------------------------------------------------------ */

Test(geom, quat_unit_tolerance)
{
    cr_assert_eq(TDM_QUAT_UNIT_TOLERANCE, 1e-3);
    cr_assert(tdm_quat_is_unit((tdm_quat){0, 0, 0, 1}));
    cr_assert(tdm_quat_is_unit((tdm_quat){0.5, 0.5, 0.5, 0.5}));
    cr_assert(tdm_quat_is_unit((tdm_quat){0, 0, 0, 1 + 0.999e-3}));
    cr_assert(tdm_quat_is_unit((tdm_quat){0, 0, 1 - 0.999e-3, 0}));
    cr_assert(!tdm_quat_is_unit((tdm_quat){0, 0, 0, 1 + 1.001e-3}));
    cr_assert(!tdm_quat_is_unit((tdm_quat){1 - 1.001e-3, 0, 0, 0}));
    cr_assert(!tdm_quat_is_unit((tdm_quat){0, 0, 0, 0}));
    cr_assert(!tdm_quat_is_unit((tdm_quat){NAN, 0, 0, 1}));
    cr_assert(!tdm_quat_is_unit((tdm_quat){INFINITY, 0, 0, 1}));
}

/* ---- rounding up to float (geom/base.h) -------------------------------------------- */

/* The reference: nextafterf's step when the conversion rounded down. */
static float float_up_reference(double v)
{
    float f = (float)v;
    return (double)f < v ? nextafterf(f, INFINITY) : f;
}

Test(geom, float_up_is_the_nearest_float_not_below)
{
    static const double edges[] = {0.0, -0.0, 1.0, -1.0, 0.1, -0.1, 1e-46, -1e-46, 1e-45, -1e-45, 1.4e-45, -1.4e-45,
                                   FLT_MIN, -FLT_MIN, 0.5 * FLT_MIN, -0.5 * FLT_MIN, FLT_MAX, -FLT_MAX,
                                   (double)FLT_MAX * (1 + 1e-9), -(double)FLT_MAX * (1 + 1e-9), 1e-300, -1e-300,
                                   16777217.0, -16777217.0, 3.0000000001, -3.0000000001};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
        float got = tdm_float_up(edges[i]), want = float_up_reference(edges[i]);
        cr_assert(!memcmp(&got, &want, sizeof got), "%.17g: %a, nextafterf's %a", edges[i], (double)got, (double)want);
        cr_assert((double)got >= edges[i], "%.17g: %a is below it", edges[i], (double)got);
    }
    gen_rng r = {seed ^ 0xf1};
    for (int i = 0; i < 2000000; i++) {
        /* doubles over float's whole range, both signs, and as many exactly representable as not */
        double v = ldexp(gen_range(&r, 0.5, 1), (int)gen_int(&r, -155, 128)) * (gen_uniform(&r) < 0.5 ? -1 : 1);
        if (i % 3 == 0) v = (double)(float)v;
        if (fabs(v) > FLT_MAX) continue;
        float got = tdm_float_up(v), want = float_up_reference(v);
        CHECK(!memcmp(&got, &want, sizeof got), "%.17g: %a, nextafterf's %a", v, (double)got, (double)want);
    }
}

/* Two doubles rounded to float and read back as doubles (the tree build's stored axes and
 * centres, measured in double): GCC 12's basic-block vectorizer stores them unrounded unless
 * the build turns it off (CMakeLists.txt). noinline: the compiler sees the pair as it is. */
__attribute__((noinline)) static void round_trip_pair(const volatile double *in, double out[2])
{
    double x = in[0], y = in[1];
    float a = (float)x, b = (float)y;
    out[0] = a;
    out[1] = b;
}

Test(geom, float_round_trips_are_kept)
{
    static const volatile double in[2] = {0.1, 1.0 / 3.0};
    double out[2];
    round_trip_pair(in, out);
    cr_assert_eq(out[0], (double)0.1f, "%.17g: the rounding to float was dropped (GCC's SLP vectorizer?)", out[0]);
    cr_assert_eq(out[1], (double)(float)(1.0 / 3.0), "%.17g: the rounding to float was dropped", out[1]);
}
