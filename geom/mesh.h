/* Triangle meshes: validated vertex + index arrays.
 *
 * Validation happens once, here, so everything downstream (BVH build, engines,
 * GPU upload) may assume finite coordinates and in-range indices. */
#ifndef TDM_GEOM_MESH_H
#define TDM_GEOM_MESH_H

#include "base.h"

/* Size limits; the defaults are what tdm_mesh_limits_default() returns. */
typedef struct tdm_mesh_limits {
    uint32_t max_vertices;  /* default 16 Mi */
    uint32_t max_triangles; /* default 16 Mi */
} tdm_mesh_limits;

typedef struct tdm_mesh {
    uint32_t n_verts, n_tris;
    float *verts;    /* 3 * n_verts, owned */
    uint32_t *tris;  /* 3 * n_tris, owned */
} tdm_mesh;

tdm_mesh_limits tdm_mesh_limits_default(void);

/* Copies the arrays into a new mesh after validating them: every coordinate
 * finite, every index < n_verts, at least one triangle, sizes within `lim` (NULL
 * for the defaults). On failure returns a negative TDM_E* code, writes a message
 * naming the offending element into err (if errlen > 0) and sets *out to NULL.
 * The caller frees the mesh with tdm_mesh_free. */
int tdm_mesh_create(const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris,
                    const tdm_mesh_limits *lim, tdm_mesh **out, char *err, size_t errlen);
void tdm_mesh_free(tdm_mesh *m);

/* Largest |coordinate| over the vertices. */
float tdm_mesh_radius(const tdm_mesh *m);

#endif
