/* geom/bvh.h: tree structure invariants, serialisation round trips, and blobs that
 * must be refused (any single flipped byte, truncation, wrong version, and
 * structurally broken trees behind a valid checksum); geom/layout.h: the GPU
 * node layouts derived from built and hand-made trees. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <float.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gen.h"
#include "geom/bvh.h"
#include "geom/layout.h"
#include "geom/tri.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x5eed0b7bull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(bvh, .init = suite_init);

/* ---- meshes under test --------------------------------------------------- */

enum { M_SPHERE, M_TORUS, M_BOX, M_SLIVERS, M_PILE, M_ZERO_AREA, M_ONE, M_TWO, M_SAME, M_EXPONENTIAL, M_FAR, M_BIG, M__N };
static const char *mesh_name[M__N] = {"sphere", "torus", "box", "slivers", "pile", "zero-area", "one triangle",
                                      "two triangles", "200 identical triangles", "exponentially spaced",
                                      "far from the origin", "sphere of 16k triangles"};

static tdm_mesh *make_mesh(int which, gen_rng *r)
{
    switch (which) {
    case M_SPHERE: return gen_sphere(1, 24);
    case M_TORUS: return gen_torus(1.5, 0.4, 32, 12);
    case M_BOX: return gen_box(1, 2, 0.5);
    case M_SLIVERS: return gen_slivers(r, 300, 1, 1, 1e-4);
    case M_PILE: return gen_pile(r, 300, 1, 0.2);
    case M_ZERO_AREA: return gen_zero_area(r, 300, 16, 0.0625);
    case M_ONE: {
        float v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
        uint32_t t[3] = {0, 1, 2};
        tdm_mesh *m = NULL;
        tdm_mesh_create(v, 3, t, 1, NULL, &m, NULL, 0);
        return m;
    }
    case M_TWO: {
        float v[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 5, 5, 5};
        uint32_t t[6] = {0, 1, 2, 1, 2, 3};
        tdm_mesh *m = NULL;
        tdm_mesh_create(v, 4, t, 2, NULL, &m, NULL, 0);
        return m;
    }
    case M_SAME: {
        float v[9] = {0.1f, 0.2f, 0.3f, 1, 0, 0, 0, 1, 0};
        uint32_t t[600];
        for (int i = 0; i < 600; i++) t[i] = (uint32_t)(i % 3);
        tdm_mesh *m = NULL;
        tdm_mesh_create(v, 3, t, 200, NULL, &m, NULL, 0);
        return m;
    }
    case M_EXPONENTIAL: { /* the mean split peels off one triangle per level */
        enum { N = 120 };
        float v[9 * N];
        uint32_t t[3 * N];
        for (int i = 0; i < N; i++) {
            float x = ldexpf(1, i); /* up to 2^119: the largest floats are near 2^128 */
            float tri[9] = {x, 0, 0, x * 1.0625f, 1, 0, x, 0, 1};
            memcpy(&v[9 * i], tri, sizeof tri);
            for (int k = 0; k < 3; k++) t[3 * i + k] = (uint32_t)(3 * i + k);
        }
        tdm_mesh *m = NULL;
        tdm_mesh_create(v, 3 * N, t, N, NULL, &m, NULL, 0);
        return m;
    }
    case M_FAR: {
        tdm_mesh *s = gen_pile(r, 200, 1, 0.2);
        tdm_mesh *m = gen_translated(s, 1000, -2000, 500);
        tdm_mesh_free(s);
        return m;
    }
    default: return gen_sphere(2, 128);
    }
}

/* ---- structure ------------------------------------------------------------- */

static tdm_dvec3 vert_of(const tdm_mesh *m, uint32_t v)
{
    return tdm_d3(m->verts[3 * v], m->verts[3 * v + 1], m->verts[3 * v + 2]);
}

/* A zero-area triangle's slot: two of its vertices and a repeat of the second,
 * the ends of a segment that holds all three (the same point set). */
static void check_segment(const float *v, const tdm_dvec3 *orig, const char *what, uint32_t s, uint32_t id)
{
    tdm_dvec3 e0 = tdm_d3(v[0], v[1], v[2]), e1 = tdm_d3(v[3], v[4], v[5]), e2 = tdm_d3(v[6], v[7], v[8]);
    CHECK(tdm_d3_same(e1, e2), "%s: slot %u (zero-area triangle %u) does not repeat its second vertex", what, s, id);
    int is0 = 0, is1 = 0;
    for (int k = 0; k < 3; k++) {
        is0 |= tdm_d3_same(e0, orig[k]);
        is1 |= tdm_d3_same(e1, orig[k]);
        tdm_dvec3 t[3] = {e0, e1, orig[k]};
        int inside = tdm_tri_degenerate(t);
        for (int c = 0; c < 3; c++) {
            double a = tdm_d3_get(e0, c), b = tdm_d3_get(e1, c), x = tdm_d3_get(orig[k], c);
            inside &= x >= (a < b ? a : b) && x <= (a < b ? b : a);
        }
        CHECK(inside, "%s: slot %u: vertex %d of zero-area triangle %u is off its stored segment", what, s, k, id);
    }
    CHECK(is0 && is1, "%s: slot %u: the segment's ends are not vertices of triangle %u", what, s, id);
}

/* Checks every documented invariant of a freshly built (or deserialised) tree;
 * returns its depth. */
static int check_structure(const tdm_bvh *b, const tdm_mesh *m, const char *what)
{
    cr_assert_eq(b->n_tris, m->n_tris, "%s: n_tris %u, mesh has %u", what, b->n_tris, m->n_tris);
    cr_assert(b->n_nodes >= 1 && b->n_nodes <= 2 * m->n_tris - 1, "%s: %u nodes for %u triangles", what, b->n_nodes,
              m->n_tris);
    cr_assert_eq((uintptr_t)b->nodes % 64, 0, "%s: node array not 64-byte aligned", what);
    cr_assert_eq(b->radius, tdm_mesh_radius(m), "%s: radius %g, mesh radius %g", what, (double)b->radius,
                 (double)tdm_mesh_radius(m));

    /* tri_ids is a permutation, and each slot holds that triangle's vertices
     * verbatim, or for a zero-area triangle the segment it is (check_segment) */
    char *seen = calloc(m->n_tris, 1);
    cr_assert_not_null(seen);
    for (uint32_t s = 0; s < b->n_tris; s++) {
        uint32_t id = b->tri_ids[s];
        CHECK(id < m->n_tris, "%s: slot %u holds triangle %u of %u", what, s, id, m->n_tris);
        CHECK(!seen[id], "%s: triangle %u appears twice in tri_ids", what, id);
        seen[id] = 1;
        tdm_dvec3 orig[3];
        for (int k = 0; k < 3; k++) orig[k] = vert_of(m, m->tris[3 * id + k]);
        if (tdm_tri_degenerate(orig)) {
            check_segment(&b->tri_verts[9 * (size_t)s], orig, what, s, id);
            continue;
        }
        for (int k = 0; k < 3; k++)
            CHECK(memcmp(&b->tri_verts[9 * (size_t)s + 3 * (size_t)k], &m->verts[3 * (size_t)m->tris[3 * id + k]],
                         3 * sizeof(float)) == 0,
                  "%s: slot %u vertex %d differs from triangle %u's", what, s, k, id);
    }
    free(seen);

    /* preorder walk with explicit subtree ranges */
    struct { uint32_t node, end; int depth; } stack[256];
    int sp = 0, max_depth = 0;
    uint32_t visited = 0, next_slot = 0;
    stack[sp].node = 0, stack[sp].end = b->n_nodes, stack[sp].depth = 1, sp++;
    uint32_t *lo = malloc(sizeof *lo * b->n_nodes), *hi = malloc(sizeof *hi * b->n_nodes);
    cr_assert(lo && hi);
    while (sp > 0) {
        sp--;
        uint32_t i = stack[sp].node, end = stack[sp].end;
        int depth = stack[sp].depth;
        CHECK(i < end && end <= b->n_nodes, "%s: node %u outside its range (end %u)", what, i, end);
        CHECK(i == visited, "%s: preorder expects node %u next, found %u", what, visited, i);
        visited++;
        if (depth > max_depth) max_depth = depth;
        const tdm_bvh_node *n = &b->nodes[i];
        for (int k = 0; k < 3; k++) {
            CHECK(isfinite(n->center[k]) && isfinite(n->extent[k]) && n->extent[k] >= 0,
                  "%s: node %u has centre/extent %g/%g", what, i, (double)n->center[k], (double)n->extent[k]);
            double len = 0;
            for (int j = 0; j < 3; j++) len += (double)n->axis[k][j] * n->axis[k][j];
            CHECK(fabs(len - 1) < 1e-5, "%s: node %u axis %d has length^2 %g", what, i, k, len);
            for (int j = k + 1; j < 3; j++) {
                double d = 0;
                for (int c = 0; c < 3; c++) d += (double)n->axis[k][c] * n->axis[j][c];
                CHECK(fabs(d) < 1e-5, "%s: node %u axes %d and %d not orthogonal (%g)", what, i, k, j, d);
            }
        }
        if (tdm_node_is_leaf(n)) {
            uint32_t first = tdm_leaf_first(n), count = tdm_leaf_count(n);
            CHECK(count == 1 || count == 2, "%s: leaf %u holds %u triangles", what, i, count);
            CHECK(end == i + 1, "%s: leaf %u should end its range, which runs to %u", what, i, end);
            CHECK(first == next_slot, "%s: leaf %u starts at slot %u, expected %u (leaf order)", what, i, first, next_slot);
            CHECK(first + count <= b->n_tris, "%s: leaf %u runs past the triangles", what, i);
            lo[i] = first;
            hi[i] = first + count;
            next_slot = first + count;
            continue;
        }
        uint32_t right = (uint32_t)n->link;
        CHECK(right > i + 1 && right < end, "%s: internal node %u has right child %u (range end %u)", what, i, right, end);
        CHECK(sp + 2 <= 256, "%s: deeper than the test's stack", what);
        stack[sp].node = right, stack[sp].end = end, stack[sp].depth = depth + 1, sp++;
        stack[sp].node = i + 1, stack[sp].end = right, stack[sp].depth = depth + 1, sp++;
    }
    CHECK(visited == b->n_nodes, "%s: %u of %u nodes reachable", what, visited, b->n_nodes);
    CHECK(next_slot == b->n_tris, "%s: leaves cover %u of %u slots", what, next_slot, b->n_tris);
    CHECK(max_depth <= TDM_BVH_MAX_DEPTH, "%s: depth %d over TDM_BVH_MAX_DEPTH", what, max_depth);

    /* every node's box holds every vertex of its subtree's triangles */
    for (uint32_t i = b->n_nodes; i-- > 0;) {
        const tdm_bvh_node *n = &b->nodes[i];
        if (!tdm_node_is_leaf(n)) {
            lo[i] = lo[i + 1];
            hi[i] = hi[(uint32_t)n->link];
        }
        double tol = 4 * FLT_EPSILON * (double)b->radius;
        for (uint32_t s = lo[i]; s < hi[i]; s++)
            for (int k = 0; k < 3; k++) {
                const float *v = &b->tri_verts[9 * (size_t)s + 3 * (size_t)k];
                for (int a = 0; a < 3; a++) {
                    double proj = 0;
                    for (int c = 0; c < 3; c++) proj += (double)n->axis[a][c] * ((double)v[c] - n->center[c]);
                    CHECK(fabs(proj) <= n->extent[a] + tol,
                          "%s: node %u (slots %u..%u) misses slot %u vertex %d along axis %d by %g (extent %g)", what, i,
                          lo[i], hi[i], s, k, a, fabs(proj) - n->extent[a], (double)n->extent[a]);
                }
            }
    }
    free(lo);
    free(hi);
    return max_depth;
}

Test(bvh, structure_invariants, .timeout = 120)
{
    gen_rng r = {seed};
    for (int w = 0; w < M__N; w++) {
        tdm_mesh *m = make_mesh(w, &r);
        cr_assert_not_null(m, "generating %s", mesh_name[w]);
        tdm_bvh *b = (tdm_bvh *)(uintptr_t)1;
        cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK, "%s: build failed", mesh_name[w]);
        cr_assert_not_null(b);
        int depth = check_structure(b, m, mesh_name[w]);
        cr_log_info("%-26s %6u triangles, %6u nodes, depth %d", mesh_name[w], b->n_tris, b->n_nodes, depth);
        if (w == M_ONE) cr_assert(tdm_node_is_leaf(&b->nodes[0]) && b->n_nodes == 1, "one triangle: a single leaf");
        tdm_bvh_free(b);
        tdm_mesh_free(m);
    }
}

/* The largest |axis_k . (p - center)| over the vertices of node i's subtree, in double
 * (the oracle for exact_extent: a recursive walk, not the build's path walk). */
static void subtree_extent(const tdm_bvh *b, const tdm_bvh_node *a, uint32_t i, double m[3])
{
    const tdm_bvh_node *n = &b->nodes[i];
    if (!tdm_node_is_leaf(n)) {
        subtree_extent(b, a, i + 1, m);
        subtree_extent(b, a, (uint32_t)n->link, m);
        return;
    }
    for (uint32_t t = tdm_leaf_first(n); t < tdm_leaf_first(n) + tdm_leaf_count(n); t++)
        for (int v = 0; v < 3; v++) {
            const float *p = &b->tri_verts[9 * (size_t)t + 3 * v];
            for (int k = 0; k < 3; k++) {
                double s = fabs((double)a->axis[k][0] * ((double)p[0] - a->center[0]) +
                                (double)a->axis[k][1] * ((double)p[1] - a->center[1]) +
                                (double)a->axis[k][2] * ((double)p[2] - a->center[2]));
                if (s > m[k]) m[k] = s;
            }
        }
}

/* exact_extent is, per node and axis, the smallest float at or above the largest
 * distance of its subtree's vertices along the axis. */
Test(bvh, exact_extents_are_the_rounded_up_maxima, .timeout = 120)
{
    gen_rng r = {seed ^ 5};
    for (int w = 0; w < M__N; w++) {
        tdm_mesh *m = make_mesh(w, &r);
        cr_assert_not_null(m, "generating %s", mesh_name[w]);
        tdm_bvh *b;
        cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK, "%s: build failed", mesh_name[w]);
        cr_assert_not_null(b->exact_extent);
        uint32_t step = b->n_nodes > 4000 ? b->n_nodes / 4000 : 1, checked = 0; /* the large meshes: a sample */
        for (uint32_t i = 0; i < b->n_nodes; i += step, checked++) {
            double x[3] = {0, 0, 0};
            subtree_extent(b, &b->nodes[i], i, x);
            for (int k = 0; k < 3; k++) {
                float e = b->exact_extent[3 * (size_t)i + k];
                cr_assert((double)e >= x[k] && (e == 0 || (double)nextafterf(e, 0) < x[k]),
                          "%s node %u axis %d: extent %.9g, largest distance %.17g", mesh_name[w], i, k, e, x[k]);
            }
        }
        cr_log_info("%-26s %u of %u nodes checked", mesh_name[w], checked, b->n_nodes);
        tdm_bvh_free(b);
        tdm_mesh_free(m);
    }
}

Test(bvh, build_rejects_bad_input)
{
    tdm_bvh *b = (tdm_bvh *)(uintptr_t)1;
    cr_assert_neq(tdm_bvh_build(NULL, &b), TDM_OK);
    cr_assert_null(b, "*out must be NULL on failure");
}

/* ---- serialisation ---------------------------------------------------------- */

static void blob_of(const tdm_bvh *b, unsigned char **blob, size_t *len)
{
    void *p = NULL;
    cr_assert_eq(tdm_bvh_serialize(b, &p, len), TDM_OK);
    cr_assert_not_null(p);
    *blob = p;
}

/* tdm_bvh_build_threads: 2, 3, 4 and 8 threads build the tree one thread builds, node for
 * node (and the same leaf order, triangles, exact extents, zeros past the last node and
 * serialised blob), on every test mesh and on meshes of 16Ki to 200Ki triangles whose subtrees
 * do go to threads of their own (large piles, a sphere, slivers). */
Test(bvh, threads_build_the_same_tree, .timeout = 240)
{
    gen_rng r = {seed ^ 0x7a};
    enum { EXTRA = 4 };
    for (int w = 0; w < M__N + EXTRA; w++) {
        tdm_mesh *m = w < M__N        ? make_mesh(w, &r)
                      : w == M__N     ? gen_pile(&r, 70000, 3.0, 0.05)
                      : w == M__N + 1 ? gen_sphere(1.0, 320)
                      : w == M__N + 2 ? gen_slivers(&r, 40000, 2.0, 0.5, 200)
                                      : gen_pile(&r, 20000, 0.5, 0.3);
        const char *what = w < M__N ? mesh_name[w] : "large";
        cr_assert_not_null(m, "generating %s", what);
        tdm_bvh *one = NULL;
        cr_assert_eq(tdm_bvh_build_threads(m, 1, &one), TDM_OK);
        size_t nn = 2 * (size_t)m->n_tris - 1;
        unsigned char *blob_one;
        size_t len_one;
        blob_of(one, &blob_one, &len_one);
        static const int threads[] = {2, 3, 4, 8};
        for (int k = 0; k < 4; k++) {
            tdm_bvh *b = NULL;
            cr_assert_eq(tdm_bvh_build_threads(m, threads[k], &b), TDM_OK, "%s, %d threads", what, threads[k]);
            cr_assert_eq(b->n_nodes, one->n_nodes, "%s, %d threads: %u nodes, one thread %u", what, threads[k],
                         b->n_nodes, one->n_nodes);
            cr_assert(!memcmp(b->nodes, one->nodes, sizeof *b->nodes * nn), "%s, %d threads: other nodes", what,
                      threads[k]);
            cr_assert(!memcmp(b->tri_ids, one->tri_ids, sizeof *b->tri_ids * m->n_tris), "%s: other leaf order", what);
            cr_assert(!memcmp(b->tri_verts, one->tri_verts, sizeof(float) * 9 * m->n_tris), "%s: other triangles", what);
            cr_assert(!memcmp(b->exact_extent, one->exact_extent, sizeof(float) * 3 * one->n_nodes),
                      "%s: other exact extents", what);
            unsigned char *blob;
            size_t len;
            blob_of(b, &blob, &len);
            cr_assert(len == len_one && !memcmp(blob, blob_one, len), "%s, %d threads: another blob", what, threads[k]);
            free(blob);
            tdm_bvh_free(b);
        }
        if (w >= M__N) cr_log_info("%u triangles, %u nodes: the same with 2, 3, 4 and 8 threads", m->n_tris, one->n_nodes);
        free(blob_one);
        tdm_bvh_free(one);
        tdm_mesh_free(m);
    }
}

Test(bvh, serialize_round_trip, .timeout = 60)
{
    gen_rng r = {seed ^ 1};
    for (int w = 0; w < M__N; w++) {
        tdm_mesh *m = make_mesh(w, &r);
        tdm_bvh *b, *c = NULL;
        cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
        unsigned char *blob, *blob2;
        size_t len, len2;
        blob_of(b, &blob, &len);
        cr_assert_eq(tdm_bvh_deserialize(blob, len, &c), TDM_OK, "%s: a fresh blob is refused", mesh_name[w]);
        cr_assert_not_null(c);
        cr_assert_eq(c->n_nodes, b->n_nodes, "%s", mesh_name[w]);
        cr_assert_eq(c->n_tris, b->n_tris, "%s", mesh_name[w]);
        cr_assert_eq(memcmp(&c->radius, &b->radius, sizeof b->radius), 0, "%s: radius", mesh_name[w]);
        cr_assert_eq(memcmp(c->nodes, b->nodes, sizeof *b->nodes * b->n_nodes), 0, "%s: nodes differ", mesh_name[w]);
        cr_assert_eq(memcmp(c->tri_verts, b->tri_verts, sizeof(float) * 9 * b->n_tris), 0, "%s: tri_verts differ",
                     mesh_name[w]);
        cr_assert_eq(memcmp(c->tri_ids, b->tri_ids, sizeof(uint32_t) * b->n_tris), 0, "%s: tri_ids differ",
                     mesh_name[w]);
        check_structure(c, m, mesh_name[w]);
        blob_of(c, &blob2, &len2);
        cr_assert_eq(len2, len, "%s: re-serialised length differs", mesh_name[w]);
        cr_assert_eq(memcmp(blob, blob2, len), 0, "%s: re-serialised blob differs", mesh_name[w]);
        free(blob);
        free(blob2);
        tdm_bvh_free(b);
        tdm_bvh_free(c);
        tdm_mesh_free(m);
    }
}

/* Blob format (geom/bvh_blob.c): magic[8], version u32 at byte 8, ..., SHA-256 at
 * bytes 32..63 of bytes [0, 32) followed by the payload from byte 64. */
#define BLOB_VERSION_AT 8
#define BLOB_SUM_AT 32
#define BLOB_HEADER 64

/* Recomputes the checksum, so that a deliberately altered blob passes it. */
static void reseal(unsigned char *blob, size_t len)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int n = 0;
    cr_assert(ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && EVP_DigestUpdate(ctx, blob, 32) &&
              EVP_DigestUpdate(ctx, blob + BLOB_HEADER, len - BLOB_HEADER) &&
              EVP_DigestFinal_ex(ctx, blob + BLOB_SUM_AT, &n) && n == 32);
    EVP_MD_CTX_free(ctx);
}

static int deserialize(const void *blob, size_t len)
{
    tdm_bvh *b = (tdm_bvh *)(uintptr_t)1;
    int rc = tdm_bvh_deserialize(blob, len, &b);
    if (rc != TDM_OK) {
        CHECK(b == NULL, "*out must be NULL when deserialising fails (rc %d)", rc);
    } else {
        tdm_bvh_free(b);
    }
    return rc;
}

Test(bvh, every_flipped_byte_is_refused, .timeout = 120)
{
    gen_rng r = {seed ^ 2};
    tdm_mesh *m = gen_pile(&r, 12, 1, 0.3);
    tdm_bvh *b;
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    unsigned char *blob, *copy;
    size_t len;
    blob_of(b, &blob, &len);
    copy = malloc(len);
    cr_assert_not_null(copy);
    cr_assert_eq(deserialize(blob, len), TDM_OK);
    static const unsigned char masks[] = {0x01, 0x80, 0xff, 0x10};
    for (size_t i = 0; i < len; i++)
        for (size_t k = 0; k < sizeof masks; k++) {
            memcpy(copy, blob, len);
            copy[i] ^= masks[k];
            int rc = deserialize(copy, len);
            int want = i >= BLOB_VERSION_AT && i < BLOB_VERSION_AT + 4 ? TDM_EVERSION : TDM_ECORRUPT;
            CHECK(rc == want, "byte %zu of %zu xor 0x%02x: expected %s, got %d (%s)", i, len, masks[k],
                  want == TDM_EVERSION ? "TDM_EVERSION" : "TDM_ECORRUPT", rc, tdm_strerror(rc));
        }
    free(copy);
    free(blob);
    tdm_bvh_free(b);
    tdm_mesh_free(m);
}

Test(bvh, truncated_or_extended_blob_is_refused)
{
    gen_rng r = {seed ^ 3};
    tdm_mesh *m = gen_pile(&r, 20, 1, 0.3);
    tdm_bvh *b;
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    unsigned char *blob;
    size_t len;
    blob_of(b, &blob, &len);
    for (size_t l = 0; l < len; l++) {
        unsigned char *t = malloc(l ? l : 1); /* exact size, so that reading past it is caught by sanitizers */
        memcpy(t, blob, l);
        int rc = deserialize(t, l);
        CHECK(rc == TDM_ECORRUPT, "blob truncated to %zu of %zu bytes: expected TDM_ECORRUPT, got %d", l, len, rc);
        free(t);
    }
    unsigned char *longer = malloc(len + 64);
    memcpy(longer, blob, len);
    memset(longer + len, 0, 64);
    cr_assert_eq(deserialize(longer, len + 1), TDM_ECORRUPT, "one byte too many");
    cr_assert_eq(deserialize(longer, len + 64), TDM_ECORRUPT, "64 bytes too many");
    cr_assert_neq(deserialize(NULL, 0), TDM_OK, "NULL blob");
    free(longer);
    free(blob);
    tdm_bvh_free(b);
    tdm_mesh_free(m);
}

Test(bvh, wrong_version_is_refused)
{
    gen_rng r = {seed ^ 4};
    tdm_mesh *m = gen_pile(&r, 20, 1, 0.3);
    tdm_bvh *b;
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    unsigned char *blob;
    size_t len;
    blob_of(b, &blob, &len);
    uint32_t v;
    memcpy(&v, blob + BLOB_VERSION_AT, 4);
    cr_assert_eq(v, TDM_BVH_BLOB_VERSION, "the version field is where bvh_blob.c documents it");
    const uint32_t wrong[] = {0, TDM_BVH_BLOB_VERSION + 1, 0xffffffffu, TDM_BVH_BLOB_VERSION << 24};
    for (size_t k = 0; k < sizeof wrong / sizeof wrong[0]; k++) {
        memcpy(blob + BLOB_VERSION_AT, &wrong[k], 4);
        cr_assert_eq(deserialize(blob, len), TDM_EVERSION, "version %u, stale checksum", wrong[k]);
        reseal(blob, len);
        cr_assert_eq(deserialize(blob, len), TDM_EVERSION, "version %u, valid checksum", wrong[k]);
    }
    v = TDM_BVH_BLOB_VERSION;
    memcpy(blob + BLOB_VERSION_AT, &v, 4);
    reseal(blob, len);
    cr_assert_eq(deserialize(blob, len), TDM_OK, "restored version and checksum: accepted again");
    free(blob);
    tdm_bvh_free(b);
    tdm_mesh_free(m);
}

/* ---- broken trees behind a valid checksum -------------------------------------
 * tdm_bvh_serialize writes whatever it is given, so hand-made trees make blobs
 * with correct checksums whose structure is wrong. */

typedef struct hand_tree {
    tdm_bvh b;
    tdm_bvh_node nodes[256];
    float verts[9 * 128];
    uint32_t ids[128];
} hand_tree;

static void hand_init(hand_tree *h, uint32_t n_nodes, uint32_t n_tris)
{
    memset(h, 0, sizeof *h);
    for (uint32_t i = 0; i < 256; i++) {
        for (int k = 0; k < 3; k++) {
            h->nodes[i].axis[k][k] = 1;
            h->nodes[i].extent[k] = 1;
        }
        h->nodes[i].link = ~0;
    }
    for (uint32_t t = 0; t < 128; t++) {
        h->ids[t] = t < n_tris ? t : 0;
        float tri[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
        memcpy(&h->verts[9 * t], tri, sizeof tri);
    }
    h->b.n_nodes = n_nodes;
    h->b.n_tris = n_tris;
    h->b.nodes = h->nodes;
    h->b.tri_verts = h->verts;
    h->b.tri_ids = h->ids;
    h->b.radius = 1;
}

static int32_t leaf(uint32_t first, uint32_t count) { return ~(int32_t)((first << 1) | (count - 1)); }

/* A caterpillar: every internal node has a leaf as its left child; depth d. */
static void caterpillar(hand_tree *h, int d)
{
    hand_init(h, (uint32_t)(2 * d - 1), (uint32_t)d);
    for (int j = 0; j < d - 1; j++) {
        h->nodes[2 * j].link = 2 * j + 2;
        h->nodes[2 * j + 1].link = leaf((uint32_t)j, 1);
    }
    h->nodes[2 * (d - 1)].link = leaf((uint32_t)(d - 1), 1);
}

/* A valid 5-node tree over 3 triangles: 0 -> (1 leaf, 2 -> (3 leaf, 4 leaf)). */
static void small_tree(hand_tree *h)
{
    hand_init(h, 5, 3);
    h->nodes[0].link = 2;
    h->nodes[1].link = leaf(0, 1);
    h->nodes[2].link = 4;
    h->nodes[3].link = leaf(1, 1);
    h->nodes[4].link = leaf(2, 1);
}

static int round_trip(const hand_tree *h)
{
    unsigned char *blob;
    size_t len;
    blob_of(&h->b, &blob, &len);
    int rc = deserialize(blob, len);
    free(blob);
    return rc;
}

Test(bvh, broken_structure_is_refused)
{
    static hand_tree h;
    small_tree(&h);
    cr_assert_eq(round_trip(&h), TDM_OK, "the reference hand-made tree is valid");

    small_tree(&h);
    h.nodes[0].link = 1; /* right child == left child */
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "right child equal to the left child");

    small_tree(&h);
    h.nodes[2].link = 1; /* pointing backwards */
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "link pointing backwards");

    small_tree(&h);
    h.nodes[2].link = 5; /* past the last node */
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "link past the node array");

    small_tree(&h);
    h.nodes[0].link = 3; /* left subtree [1, 3) holds leaf 1 and node 2 */
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "a leaf that does not end its subtree");

    small_tree(&h);
    h.nodes[4].link = leaf(3, 1); /* triangle slot 3 of 3 */
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "leaf triangle out of range");

    small_tree(&h);
    h.nodes[4].link = leaf(2, 2); /* slots 2..3 of 3 */
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "leaf running past the triangles");

    small_tree(&h);
    h.ids[1] = 3;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "triangle id out of range");

    small_tree(&h);
    h.verts[9 + 4] = NAN;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "NaN triangle coordinate");

    small_tree(&h);
    h.nodes[3].center[1] = INFINITY;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "infinite box centre");

    small_tree(&h);
    h.nodes[2].extent[0] = -1;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "negative extent");

    small_tree(&h);
    h.nodes[1].axis[2][0] = NAN;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "NaN axis");

    small_tree(&h);
    h.b.n_nodes = 6; /* a sixth node nobody reaches */
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "unreachable trailing node");

    small_tree(&h);
    h.b.radius = NAN;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "NaN radius");

    /* the radius bounds every vertex (the engines' tdm_bounds_apart trusts it) */
    small_tree(&h);
    h.b.radius = 0.99f;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "radius below a vertex's coordinate 1");
    small_tree(&h);
    h.verts[9 * 2 + 7] = -1.0f;
    cr_assert_eq(round_trip(&h), TDM_OK, "a coordinate of -1, radius 1");
    h.verts[9 * 2 + 7] = -1.01f;
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "a coordinate of -1.01, radius 1");
}

Test(bvh, depth_limit)
{
    static hand_tree h;
    caterpillar(&h, TDM_BVH_MAX_DEPTH);
    cr_assert_eq(round_trip(&h), TDM_OK, "a tree exactly TDM_BVH_MAX_DEPTH deep is accepted");
    caterpillar(&h, TDM_BVH_MAX_DEPTH + 1);
    cr_assert_eq(round_trip(&h), TDM_ECORRUPT, "a tree deeper than TDM_BVH_MAX_DEPTH is refused");
}

/* ---- GPU node layouts (geom/layout.h) ----------------------------------------- */

#define NONE UINT32_MAX

/* The node but for its link: boxes copied bit for bit. */
static int same_box(const tdm_bvh_node *x, const tdm_bvh_node *y)
{
    return memcmp(x->axis, y->axis, sizeof x->axis) == 0 && memcmp(x->center, y->center, sizeof x->center) == 0 &&
           memcmp(x->extent, y->extent, sizeof x->extent) == 0;
}

/* layout.h's imaginary node, field by field. */
static int is_imaginary(const tdm_bvh_node *n)
{
    static const float zero_axis[3][3], zero_center[3];
    return memcmp(n->axis, zero_axis, sizeof zero_axis) == 0 && memcmp(n->center, zero_center, sizeof zero_center) == 0 &&
           n->extent[0] == -1.0f && n->extent[1] == -1.0f && n->extent[2] == -1.0f && n->link == -1;
}

/* Binary depth of every node of b (root 0). malloc'd. */
static uint32_t *depths(const tdm_bvh *b)
{
    uint32_t *d = malloc(b->n_nodes * sizeof *d);
    cr_assert_not_null(d);
    d[0] = 0;
    for (uint32_t i = 0; i < b->n_nodes; i++) /* preorder: parents come first */
        if (!tdm_node_is_leaf(&b->nodes[i])) d[i + 1] = d[(uint32_t)b->nodes[i].link] = d[i] + 1;
    return d;
}

/* Checks the blocked layout of b against layout.h, walking it in step with the
 * tree: the layout's node k is tree node from[k]. Returns the layout's size. */
static uint32_t check_blocked(const tdm_bvh *b, const char *what)
{
    tdm_bvh_node *L = (tdm_bvh_node *)(uintptr_t)1;
    uint32_t n = 7;
    cr_assert_eq(tdm_layout_blocked(b, &L, &n), TDM_OK, "%s: blocked layout failed", what);
    cr_assert_not_null(L);
    cr_assert_eq(n, TDM_LAYOUT_BLOCKED_NODES(b->n_nodes), "%s: blocked layout has %u nodes for %u", what, n, b->n_nodes);
    cr_assert_eq(n, b->n_nodes + 1);
    static const tdm_bvh_node zero;
    CHECK(memcmp(&L[1], &zero, sizeof zero) == 0, "%s: node 1 of the blocked layout is not the unused zero node", what);
    uint32_t *from = malloc(n * sizeof *from);
    char *seen = calloc(b->n_nodes, 1);
    cr_assert(from && seen);
    for (uint32_t k = 0; k < n; k++) from[k] = NONE;
    from[0] = 0;
    uint32_t next = 2; /* breadth first: where the next internal node's children must be */
    for (uint32_t k = 0; k < n; k++) {
        if (k == 1) continue;
        CHECK(k < next && from[k] != NONE, "%s: blocked node %u is not a child of an earlier node", what, k);
        uint32_t o = from[k];
        CHECK(!seen[o], "%s: tree node %u appears twice", what, o);
        seen[o] = 1;
        const tdm_bvh_node *x = &L[k], *y = &b->nodes[o];
        CHECK(same_box(x, y), "%s: blocked node %u's box differs from tree node %u's", what, k, o);
        if (tdm_node_is_leaf(y)) {
            CHECK(x->link == y->link, "%s: leaf %u (tree %u) has link %d, the tree's is %d (its triangles)", what, k, o,
                  x->link, y->link);
            CHECK(tdm_leaf_first(x) == tdm_leaf_first(y) && tdm_leaf_count(x) == tdm_leaf_count(y),
                  "%s: leaf %u's triangle range changed", what, k);
            continue;
        }
        uint32_t c = (uint32_t)x->link;
        CHECK(x->link >= 2 && c == next, "%s: node %u's children at %d, breadth first puts them at %u", what, k, x->link,
              next);
        CHECK(c % 2 == 0 && c + 1 < n, "%s: node %u's children at %u..%u: not an even pair inside the layout", what, k,
              c, c + 1);
        from[c] = o + 1;                   /* left child first */
        from[c + 1] = (uint32_t)y->link;   /* then right: adjacent */
        next += 2;
    }
    CHECK(next == n, "%s: the layout's children end at %u of %u nodes", what, next, n);
    for (uint32_t o = 0; o < b->n_nodes; o++) CHECK(seen[o], "%s: tree node %u missing from the blocked layout", what, o);
    free(from);
    free(seen);
    free(L);
    return n;
}

/* Checks the four-wide layout of b against layout.h (blocks of the binary
 * grandchildren, a leaf child beside an imaginary node, odd-depth internal
 * nodes absent, every other node once). Returns the layout's size. */
static uint32_t check_wide(const tdm_bvh *b, const char *what)
{
    tdm_bvh_node *W = (tdm_bvh_node *)(uintptr_t)1;
    uint32_t n = 7;
    cr_assert_eq(tdm_layout_wide(b, &W, &n), TDM_OK, "%s: wide layout failed", what);
    cr_assert_not_null(W);
    uint32_t *depth = depths(b), *from = malloc(((size_t)n + 4) * sizeof *from);
    char *seen = calloc(b->n_nodes, 1);
    cr_assert(from && seen);
    uint32_t even_internal = 0;
    for (uint32_t o = 0; o < b->n_nodes; o++) even_internal += !tdm_node_is_leaf(&b->nodes[o]) && depth[o] % 2 == 0;
    cr_assert_eq(n, 4 * (1 + even_internal), "%s: wide layout has %u nodes, expected 4 * (1 + %u)", what, n,
                 even_internal);
    cr_assert(n <= 4 + 4 * b->n_nodes);
    from[0] = 0;
    from[1] = from[2] = from[3] = NONE;
    uint32_t next = 4; /* where the next block must start */
    for (uint32_t k = 0; k < n; k++) {
        CHECK(k < next, "%s: wide node %u is in no block of an earlier node", what, k);
        const tdm_bvh_node *x = &W[k];
        if (from[k] == NONE) {
            CHECK(is_imaginary(x) && tdm_wide_imaginary(x), "%s: wide node %u should be imaginary", what, k);
            continue;
        }
        uint32_t o = from[k];
        const tdm_bvh_node *y = &b->nodes[o];
        CHECK(!tdm_wide_imaginary(x), "%s: wide node %u (tree %u) reads as imaginary", what, k, o);
        CHECK(!seen[o], "%s: tree node %u appears twice", what, o);
        seen[o] = 1;
        CHECK(same_box(x, y), "%s: wide node %u's box differs from tree node %u's", what, k, o);
        if (tdm_node_is_leaf(y)) {
            CHECK(x->link == y->link, "%s: leaf %u (tree %u) has link %d, the tree's is %d", what, k, o, x->link, y->link);
            continue;
        }
        CHECK(depth[o] % 2 == 0, "%s: internal tree node %u at odd depth %u appears", what, o, depth[o]);
        uint32_t blk = (uint32_t)x->link;
        CHECK(x->link >= 4 && blk == next && blk % 4 == 0 && blk + 4 <= n,
              "%s: node %u's block at %d, expected %u (a multiple of four inside the layout)", what, k, x->link, next);
        uint32_t child[2] = {o + 1, (uint32_t)y->link};
        for (int c = 0; c < 2; c++) {
            const tdm_bvh_node *cn = &b->nodes[child[c]];
            if (tdm_node_is_leaf(cn)) { /* the leaf itself, then an imaginary node */
                from[blk + 2 * c] = child[c];
                from[blk + 2 * c + 1] = NONE;
            } else { /* the child's children, left first */
                from[blk + 2 * c] = child[c] + 1;
                from[blk + 2 * c + 1] = (uint32_t)cn->link;
            }
        }
        next += 4;
    }
    CHECK(next == n, "%s: the blocks end at %u of %u nodes", what, next, n);
    for (uint32_t o = 0; o < b->n_nodes; o++) {
        int expect = tdm_node_is_leaf(&b->nodes[o]) || depth[o] % 2 == 0;
        CHECK(seen[o] == expect, "%s: tree node %u (depth %u, %s) %s the wide layout", what, o, depth[o],
              tdm_node_is_leaf(&b->nodes[o]) ? "leaf" : "internal", seen[o] ? "is in" : "is missing from");
    }
    free(depth);
    free(from);
    free(seen);
    free(W);
    return n;
}

Test(bvh, layouts_of_built_trees, .timeout = 120)
{
    gen_rng r = {seed};
    for (int w = 0; w < M__N; w++) {
        tdm_mesh *m = make_mesh(w, &r);
        cr_assert_not_null(m, "generating %s", mesh_name[w]);
        tdm_bvh *b = NULL;
        cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK, "%s: build failed", mesh_name[w]);
        uint32_t nb = check_blocked(b, mesh_name[w]), nw = check_wide(b, mesh_name[w]);
        cr_log_info("%-26s %6u nodes: blocked %6u, wide %6u", mesh_name[w], b->n_nodes, nb, nw);
        tdm_bvh_free(b);
        tdm_mesh_free(m);
    }
}

Test(bvh, layouts_of_hand_trees)
{
    static hand_tree h;
    /* 0 -> (1 leaf, 2 -> (3 leaf, 4 leaf)) */
    small_tree(&h);
    for (uint32_t i = 0; i < 5; i++) h.nodes[i].center[0] = (float)(10 + i); /* tells the nodes apart */
    tdm_bvh_node *L;
    uint32_t n;
    cr_assert_eq(tdm_layout_blocked(&h.b, &L, &n), TDM_OK);
    cr_assert_eq(n, 6);
    /* breadth first: 0, (unused), 1, 2, 3, 4 */
    const float want_center[6] = {10, 0, 11, 12, 13, 14};
    const int32_t want_link[6] = {2, 0, leaf(0, 1), 4, leaf(1, 1), leaf(2, 1)};
    for (uint32_t k = 0; k < 6; k++) {
        cr_assert_eq(L[k].center[0], want_center[k], "blocked node %u", k);
        cr_assert_eq(L[k].link, want_link[k], "blocked node %u", k);
    }
    free(L);

    cr_assert_eq(tdm_layout_wide(&h.b, &L, &n), TDM_OK);
    cr_assert_eq(n, 8, "the root's block and one block of four");
    cr_assert_eq(L[0].center[0], 10);
    cr_assert_eq(L[0].link, 4);
    for (uint32_t k = 1; k < 4; k++) cr_assert(is_imaginary(&L[k]) && tdm_wide_imaginary(&L[k]), "wide node %u", k);
    /* the root's grandchildren: leaf 1 stands in for its two, then node 2's children 3 and 4 */
    cr_assert_eq(L[4].center[0], 11);
    cr_assert_eq(L[4].link, leaf(0, 1));
    cr_assert(is_imaginary(&L[5]) && tdm_wide_imaginary(&L[5]));
    cr_assert_eq(L[6].center[0], 13);
    cr_assert_eq(L[6].link, leaf(1, 1));
    cr_assert_eq(L[7].center[0], 14);
    cr_assert_eq(L[7].link, leaf(2, 1));
    free(L);

    /* a single leaf: the blocked layout is it and the unused node, the wide one it and three imaginary */
    hand_init(&h, 1, 1);
    h.nodes[0].link = leaf(0, 1);
    cr_assert_eq(tdm_layout_blocked(&h.b, &L, &n), TDM_OK);
    cr_assert_eq(n, 2);
    cr_assert_eq(L[0].link, leaf(0, 1));
    free(L);
    cr_assert_eq(tdm_layout_wide(&h.b, &L, &n), TDM_OK);
    cr_assert_eq(n, 4);
    cr_assert_eq(L[0].link, leaf(0, 1));
    cr_assert(!tdm_wide_imaginary(&L[0]) && is_imaginary(&L[3]));
    free(L);

    /* a deep caterpillar, and an empty tree */
    caterpillar(&h, 40);
    check_blocked(&h.b, "caterpillar");
    cr_assert_eq(check_wide(&h.b, "caterpillar"), 4 * (1 + 20), "internal nodes at depths 0, 2, .., 38");
    h.b.n_nodes = 0;
    L = (tdm_bvh_node *)(uintptr_t)1;
    cr_assert_eq(tdm_layout_blocked(&h.b, &L, &n), TDM_EEMPTY);
    cr_assert(L == NULL && n == 0);
    cr_assert_eq(tdm_layout_wide(&h.b, &L, &n), TDM_EEMPTY);
    cr_assert(L == NULL && n == 0);
}
