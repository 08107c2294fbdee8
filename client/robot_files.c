/* The robot file helpers of tandem.h: a URDF (+ SRDF) and its mesh files, or a
 * MoveIt planning-scene YAML, read from disk and stored through the blocking client.
 *
 * They live in libtandem, not in the CLI, so that C and Python programs get the
 * same upload as `tandem robot put` and `tandem query --urdf`. The URDF is read with
 * robot/urdf.c (mesh filenames resolved exactly as `tandem check --urdf` resolves
 * them) and the meshes with tools/mesh_io.c (assimp, vertices as the file has them);
 * both are compiled into libtandem with hidden symbols (client/CMakeLists.txt). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../robot/urdf.h"
#include "../tools/io.h"
#include "internal.h"

/* A whole text file, NUL-terminated; NULL with a message in err. */
static char *read_text(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tdm__fmt(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            size_t nc = cap ? 2 * cap : 65536 + 1;
            char *nb = realloc(buf, nc);
            if (!nb) {
                tdm__fmt(err, errlen, "out of memory reading %s", path);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        tdm__fmt(err, errlen, "cannot read %s", path);
        free(buf);
        return NULL;
    }
    buf[len] = 0;
    return buf;
}

int tdm_robot_put_files(tdm_client *c, const char *name, const char *urdf_path, const char *srdf_path,
                        uint8_t robot_id[TDM_ID_BYTES], int *created, tdm_robot_info **info)
{
    char err[1024];
    if (!urdf_path || !robot_id) {
        tdm__fmt(err, sizeof err, "urdf_path or robot_id is NULL");
        goto local;
    }
    tdm_robot *r = NULL;
    if (tdm_robot_load(urdf_path, srdf_path, &r, err, sizeof err) != 0) goto local;
    char *urdf = read_text(urdf_path, err, sizeof err), *srdf = NULL;
    tdm_robot_mesh_ref *refs = calloc(r->n_collisions ? r->n_collisions : 1, sizeof *refs);
    size_t n = 0;
    int rc = TDM_CLIENT_EINVAL;
    if (!urdf || (srdf_path && !(srdf = read_text(srdf_path, err, sizeof err)))) goto fail;
    if (!refs) {
        rc = TDM_CLIENT_ENOMEM;
        tdm__fmt(err, sizeof err, "out of memory");
        goto fail;
    }
    for (uint32_t e = 0; e < r->n_collisions; e++) {
        const tdm_robot_collision *k = &r->collisions[e];
        if (k->shape != TDM_SHAPE_MESH) continue;
        size_t i = 0;
        while (i < n && strcmp(refs[i].filename, k->mesh_uri) != 0) i++;
        if (i < n) continue; /* one upload per filename */
        tdm_mesh *m = NULL;
        char why[512];
        if (tdm_mesh_load_file(k->mesh_path, TDM_ORIGIN_RAW, &m, why, sizeof why) != 0) {
            tdm__fmt(err, sizeof err, "%s:%u: link '%s' mesh %s: %s", urdf_path, k->line, r->links[k->link].name,
                     k->mesh_path, why);
            goto fail;
        }
        const char *base = strrchr(k->mesh_path, '/');
        rc = tdm_mesh_put(c, base ? base + 1 : k->mesh_path, m->verts, m->n_verts, m->tris, m->n_tris,
                          refs[n].mesh_id, NULL);
        tdm_mesh_free(m);
        if (rc != 0) goto out; /* c's error says why */
        refs[n++].filename = k->mesh_uri;
    }
    rc = tdm_robot_put(c, name ? name : r->name, urdf, srdf, refs, n, robot_id, created, info);
    goto out;
fail:
    free(urdf);
    free(srdf);
    free(refs);
    tdm_robot_free(r);
    return tdm__client_local_error(c, rc, err);
out:
    free(urdf);
    free(srdf);
    free(refs);
    tdm_robot_free(r);
    return rc;
local:
    return tdm__client_local_error(c, TDM_CLIENT_EINVAL, err);
}

int tdm_robot_scene_put_file(tdm_client *c, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                             const char *yaml_path, uint8_t scene_id[TDM_ID_BYTES], int *created,
                             tdm_robot_scene_info **info)
{
    char err[512];
    if (!yaml_path) return tdm__client_local_error(c, TDM_CLIENT_EINVAL, "yaml_path is NULL");
    char *yaml = read_text(yaml_path, err, sizeof err);
    if (!yaml) return tdm__client_local_error(c, TDM_CLIENT_EINVAL, err);
    int rc = tdm_robot_scene_put(c, name, robot_id, yaml, scene_id, created, info);
    free(yaml);
    return rc;
}
