/* geom/mesh.h and tdm_strerror: validation of vertex and index arrays. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "geom/mesh.h"

TestSuite(mesh);

/* A unit square in z = 0 (two triangles) plus a spare vertex: 5 vertices. */
static float square_v[15] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 5, 5, 5};
static uint32_t square_t[6] = {0, 1, 2, 0, 2, 3};

/* A mesh pointer that tdm_mesh_create must overwrite with NULL on failure. */
#define SENTINEL ((tdm_mesh *)(uintptr_t)0x1)

static int create(const float *v, uint32_t nv, const uint32_t *t, uint32_t nt, const tdm_mesh_limits *lim,
                  tdm_mesh **out, char *err, size_t errlen)
{
    *out = SENTINEL;
    if (err && errlen) memset(err, 0, errlen);
    return tdm_mesh_create(v, nv, t, nt, lim, out, err, errlen);
}

Test(mesh, create_copies_the_arrays)
{
    float v[15];
    uint32_t t[6];
    memcpy(v, square_v, sizeof v);
    memcpy(t, square_t, sizeof t);
    tdm_mesh *m;
    char err[128];
    cr_assert_eq(create(v, 5, t, 2, NULL, &m, err, sizeof err), TDM_OK, "valid mesh rejected: %s", err);
    cr_assert_not_null(m);
    cr_assert_neq(m, SENTINEL);
    cr_assert_eq(m->n_verts, 5);
    cr_assert_eq(m->n_tris, 2);
    /* the mesh owns copies: changing the inputs afterwards must not change it */
    v[0] = 42;
    t[0] = 3;
    cr_assert_eq(m->verts[0], 0.0f);
    cr_assert_eq(m->tris[0], 0u);
    cr_assert_eq(memcmp(m->verts + 3, square_v + 3, sizeof(float) * 12), 0);
    cr_assert_eq(memcmp(m->tris + 1, square_t + 1, sizeof(uint32_t) * 5), 0);
    cr_assert_float_eq(tdm_mesh_radius(m), 5.0f, 0, "radius is the largest |coordinate|");
    tdm_mesh_free(m);
    tdm_mesh_free(NULL); /* freeing nothing is allowed */
}

Test(mesh, radius_is_largest_absolute_coordinate)
{
    float v[9] = {0.5f, -7.25f, 1, 2, 3, -4, 6.5f, 0, 0};
    uint32_t t[3] = {0, 1, 2};
    tdm_mesh *m;
    cr_assert_eq(create(v, 3, t, 1, NULL, &m, NULL, 0), TDM_OK);
    cr_assert_eq(tdm_mesh_radius(m), 7.25f);
    tdm_mesh_free(m);
}

Test(mesh, zero_area_triangles_are_valid)
{
    /* a point, a segment and repeated indices are legal triangles */
    float v[9] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
    uint32_t t[9] = {0, 0, 0, 0, 1, 2, 1, 1, 2};
    tdm_mesh *m;
    char err[128];
    cr_assert_eq(create(v, 3, t, 3, NULL, &m, err, sizeof err), TDM_OK, "zero-area triangles rejected: %s", err);
    cr_assert_eq(m->n_tris, 3);
    tdm_mesh_free(m);
}

static void expect_nonfinite(float bad, int vertex, int coord)
{
    float v[15];
    memcpy(v, square_v, sizeof v);
    v[3 * vertex + coord] = bad;
    tdm_mesh *m;
    char err[256], want[32];
    int rc = create(v, 5, square_t, 2, NULL, &m, err, sizeof err);
    cr_assert_eq(rc, TDM_ENONFINITE, "coordinate %g at vertex %d: expected TDM_ENONFINITE, got %d", (double)bad, vertex,
                 rc);
    cr_assert_null(m, "*out must be NULL on failure");
    snprintf(want, sizeof want, "vertex %d", vertex);
    cr_assert(strstr(err, want) != NULL, "message must name %s: '%s'", want, err);
}

Test(mesh, nonfinite_coordinates_rejected_with_vertex_index)
{
    expect_nonfinite(NAN, 0, 0);
    expect_nonfinite(NAN, 2, 1);
    expect_nonfinite(INFINITY, 3, 2);
    expect_nonfinite(-INFINITY, 1, 0);
    /* an unused vertex must be finite as well: every vertex is checked */
    expect_nonfinite(NAN, 4, 2);
}

static void expect_bad_index(int tri, int corner, uint32_t index)
{
    uint32_t t[6];
    memcpy(t, square_t, sizeof t);
    t[3 * tri + corner] = index;
    tdm_mesh *m;
    char err[256], want_t[32], want_v[32];
    int rc = create(square_v, 5, t, 2, NULL, &m, err, sizeof err);
    cr_assert_eq(rc, TDM_EINDEX, "index %u in triangle %d: expected TDM_EINDEX, got %d", index, tri, rc);
    cr_assert_null(m, "*out must be NULL on failure");
    snprintf(want_t, sizeof want_t, "triangle %d", tri);
    snprintf(want_v, sizeof want_v, "%u", index);
    cr_assert(strstr(err, want_t) != NULL, "message must name %s: '%s'", want_t, err);
    cr_assert(strstr(err, want_v) != NULL, "message must name the vertex index %s: '%s'", want_v, err);
}

Test(mesh, out_of_range_index_rejected_with_triangle_and_vertex)
{
    expect_bad_index(0, 0, 5);          /* one past the end */
    expect_bad_index(1, 2, 99);
    expect_bad_index(1, 1, UINT32_MAX); /* no wrap-around */
}

Test(mesh, empty_mesh_rejected)
{
    tdm_mesh *m;
    char err[128];
    cr_assert_eq(create(square_v, 5, square_t, 0, NULL, &m, err, sizeof err), TDM_EEMPTY);
    cr_assert_null(m);
    cr_assert(strlen(err) > 0, "an error comes with a message");
    /* no vertices: every index is out of range, or the mesh is empty; either way an error */
    int rc = create(NULL, 0, square_t, 2, NULL, &m, err, sizeof err);
    cr_assert(rc == TDM_EEMPTY || rc == TDM_EINDEX, "no vertices: got %d", rc);
    cr_assert_null(m);
}

Test(mesh, limits)
{
    tdm_mesh_limits d = tdm_mesh_limits_default();
    cr_assert_eq(d.max_vertices, 16u << 20, "default vertex limit is 16 Mi");
    cr_assert_eq(d.max_triangles, 16u << 20, "default triangle limit is 16 Mi");

    tdm_mesh *m;
    char err[256];
    tdm_mesh_limits lim = {5, 2}; /* exactly at the limits: accepted */
    cr_assert_eq(create(square_v, 5, square_t, 2, &lim, &m, err, sizeof err), TDM_OK, "%s", err);
    tdm_mesh_free(m);

    lim = (tdm_mesh_limits){4, 100};
    cr_assert_eq(create(square_v, 5, square_t, 2, &lim, &m, err, sizeof err), TDM_ERANGE);
    cr_assert_null(m);
    cr_assert(strstr(err, "5") != NULL, "message names the count: '%s'", err);
    cr_assert(strstr(err, "4") != NULL, "message names the limit: '%s'", err);

    lim = (tdm_mesh_limits){100, 1};
    cr_assert_eq(create(square_v, 5, square_t, 2, &lim, &m, err, sizeof err), TDM_ERANGE);
    cr_assert_null(m);
    cr_assert(strstr(err, "2") != NULL && strstr(err, "1") != NULL, "message names count and limit: '%s'", err);
}

Test(mesh, error_message_truncated_safely)
{
    char buf[16];
    memset(buf, 'X', sizeof buf);
    tdm_mesh *m = SENTINEL;
    uint32_t t[3] = {0, 1, 77};
    int rc = tdm_mesh_create(square_v, 5, t, 1, NULL, &m, buf, 8);
    cr_assert_eq(rc, TDM_EINDEX);
    cr_assert_null(m);
    cr_assert(memchr(buf, 0, 8) != NULL, "message must be NUL-terminated within errlen");
    for (int i = 8; i < 16; i++) cr_assert_eq(buf[i], 'X', "wrote past errlen at byte %d", i);
    /* no message buffer at all */
    m = SENTINEL;
    cr_assert_eq(tdm_mesh_create(square_v, 5, t, 1, NULL, &m, NULL, 0), TDM_EINDEX);
    cr_assert_null(m);
}

Test(mesh, strerror_distinct_for_every_code)
{
    const char *seen[32];
    int n = 0;
    for (int code = TDM_OK; code > TDM_E__LAST; code--) {
        const char *s = tdm_strerror(code);
        cr_assert_not_null(s, "tdm_strerror(%d) is NULL", code);
        cr_assert(strlen(s) > 0, "tdm_strerror(%d) is empty", code);
        for (int i = 0; i < n; i++)
            cr_assert(strcmp(seen[i], s) != 0, "tdm_strerror(%d) = '%s' repeats the text of code %d", code, s, -i);
        seen[n++] = s;
    }
    cr_assert_eq(n, 18, "codes 0..-17");
    /* codes outside the enum still get text, distinct from every real code */
    const int unknown[] = {TDM_E__LAST, 1, -1000, 12345};
    for (size_t k = 0; k < sizeof unknown / sizeof unknown[0]; k++) {
        const char *s = tdm_strerror(unknown[k]);
        cr_assert_not_null(s, "tdm_strerror(%d) is NULL", unknown[k]);
        for (int i = 0; i < n; i++)
            cr_assert(strcmp(seen[i], s) != 0, "unknown code %d reads like code %d ('%s')", unknown[k], -i, s);
    }
}
