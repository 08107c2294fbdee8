#include "mesh.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

tdm_mesh_limits tdm_mesh_limits_default(void)
{
    tdm_mesh_limits l = {16u << 20, 16u << 20};
    return l;
}

int tdm_mesh_create(const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris,
                    const tdm_mesh_limits *lim, tdm_mesh **out, char *err, size_t errlen)
{
    tdm_mesh_limits dl = tdm_mesh_limits_default();
    if (!lim) lim = &dl;
    *out = NULL;
    if (n_tris == 0) return fail(TDM_EEMPTY, err, errlen, "mesh has no triangles");
    if (n_verts == 0) return fail(TDM_EEMPTY, err, errlen, "mesh has no vertices");
    if (n_verts > lim->max_vertices)
        return fail(TDM_ERANGE, err, errlen, "mesh has %u vertices, over the limit of %u", n_verts,
                    lim->max_vertices);
    if (n_tris > lim->max_triangles)
        return fail(TDM_ERANGE, err, errlen, "mesh has %u triangles, over the limit of %u", n_tris,
                    lim->max_triangles);
    if (!verts || !tris) return fail(TDM_EINVAL, err, errlen, "mesh arrays are missing");
    for (uint32_t i = 0; i < 3 * n_verts; i++)
        if (!isfinite(verts[i]))
            return fail(TDM_ENONFINITE, err, errlen, "vertex %u has a non-finite coordinate (%c = %g)", i / 3,
                        "xyz"[i % 3], (double)verts[i]);
    for (uint32_t i = 0; i < 3 * n_tris; i++)
        if (tris[i] >= n_verts)
            return fail(TDM_EINDEX, err, errlen, "triangle %u refers to vertex %u, but the mesh has %u vertices",
                        i / 3, tris[i], n_verts);

    tdm_mesh *m = calloc(1, sizeof *m);
    if (!m) goto nomem;
    m->n_verts = n_verts;
    m->n_tris = n_tris;
    m->verts = malloc(sizeof(float) * 3 * (size_t)n_verts);
    m->tris = malloc(sizeof(uint32_t) * 3 * (size_t)n_tris);
    if (!m->verts || !m->tris) goto nomem;
    memcpy(m->verts, verts, sizeof(float) * 3 * (size_t)n_verts);
    memcpy(m->tris, tris, sizeof(uint32_t) * 3 * (size_t)n_tris);
    *out = m;
    return TDM_OK;
nomem:
    tdm_mesh_free(m);
    return fail(TDM_ENOMEM, err, errlen, "out of memory for a mesh of %u vertices and %u triangles", n_verts, n_tris);
}

void tdm_mesh_free(tdm_mesh *m)
{
    if (!m) return;
    free(m->verts);
    free(m->tris);
    free(m);
}

float tdm_mesh_radius(const tdm_mesh *m)
{
    float r = 0;
    for (uint32_t i = 0; i < 3 * m->n_verts; i++) {
        float a = fabsf(m->verts[i]); /* finite: fmaxf's value, inlined */
        if (a > r) r = a;
    }
    return r;
}
