/* Mesh files through assimp's C API. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <assimp/cimport.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include "io.h"

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

int tdm_mesh_load_file(const char *path, tdm_origin origin, tdm_mesh **out, char *err, size_t errlen)
{
    *out = NULL;
    const struct aiScene *sc = aiImportFile(
        path, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices | aiProcess_PreTransformVertices);
    if (!sc) return fail(TDM_EIO, err, errlen, "%s: %s", path, aiGetErrorString());

    /* Count what survives: only triangles (after Triangulate a face has 3 indices,
     * or 1-2 for the point and line primitives we drop). */
    size_t nv = 0, nt = 0;
    for (unsigned m = 0; m < sc->mNumMeshes; m++) {
        const struct aiMesh *mesh = sc->mMeshes[m];
        nv += mesh->mNumVertices;
        for (unsigned f = 0; f < mesh->mNumFaces; f++) nt += mesh->mFaces[f].mNumIndices == 3;
    }
    if (nv > UINT32_MAX || nt > UINT32_MAX) {
        aiReleaseImport(sc);
        return fail(TDM_ERANGE, err, errlen, "%s: too many vertices or triangles", path);
    }
    float *v = malloc(3 * sizeof(float) * (nv ? nv : 1));
    uint32_t *t = malloc(3 * sizeof(uint32_t) * (nt ? nt : 1));
    if (!v || !t) {
        free(v);
        free(t);
        aiReleaseImport(sc);
        return fail(TDM_ENOMEM, err, errlen, "%s: out of memory", path);
    }
    size_t bv = 0, it = 0;
    for (unsigned m = 0; m < sc->mNumMeshes; m++) {
        const struct aiMesh *mesh = sc->mMeshes[m];
        for (unsigned i = 0; i < mesh->mNumVertices; i++) {
            v[3 * (bv + i)] = mesh->mVertices[i].x;
            v[3 * (bv + i) + 1] = mesh->mVertices[i].y;
            v[3 * (bv + i) + 2] = mesh->mVertices[i].z;
        }
        for (unsigned f = 0; f < mesh->mNumFaces; f++) {
            const struct aiFace *face = &mesh->mFaces[f];
            if (face->mNumIndices != 3) continue;
            for (int k = 0; k < 3; k++) t[3 * it + k] = (uint32_t)(bv + face->mIndices[k]);
            it++;
        }
        bv += mesh->mNumVertices;
    }
    aiReleaseImport(sc);

    if (origin == TDM_ORIGIN_OMPL && nv > 0) {
        /* OMPL.app sums the vertices in float, divides, and subtracts in float. */
        float c[3] = {0, 0, 0};
        for (size_t i = 0; i < nv; i++)
            for (int k = 0; k < 3; k++) c[k] += v[3 * i + k];
        for (int k = 0; k < 3; k++) c[k] /= (float)nv;
        for (size_t i = 0; i < nv; i++)
            for (int k = 0; k < 3; k++) v[3 * i + k] -= c[k];
    }
    char merr[256];
    int rc = tdm_mesh_create(v, (uint32_t)nv, t, (uint32_t)nt, NULL, out, merr, sizeof merr);
    free(v);
    free(t);
    if (rc != TDM_OK) return fail(rc, err, errlen, "%s: %s", path, merr);
    return TDM_OK;
}
