/* The robot file helpers of tandem.h: a URDF (+ SRDF) and its mesh files, or a
 * MoveIt planning-scene YAML, read from disk and stored through the blocking client, or on
 * every server of a tdm_multi.
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

char *tdm__read_text(const char *path, char *err, size_t errlen)
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

/* Where the file helpers store: one blocking client, or every server of a tdm_multi. */
typedef struct store {
    tdm_client *c;
    tdm_multi *m;
} store;

static int store_mesh(const store *st, const char *name, const tdm_mesh *mesh, uint8_t id[TDM_ID_BYTES])
{
    if (st->c) return tdm_mesh_put(st->c, name, mesh->verts, mesh->n_verts, mesh->tris, mesh->n_tris, id, NULL);
    return tdm_multi_mesh_put(st->m, name, mesh->verts, mesh->n_verts, mesh->tris, mesh->n_tris, id, NULL);
}

static int store_error(const store *st, int code, const char *msg)
{
    return st->c ? tdm__client_local_error(st->c, code, msg) : tdm__multi_local_error(st->m, code, msg);
}

/* The robot as parsed here, as a put's tdm_robot_info (one allocation, freed with
 * tdm_robot_info_free): what a tdm_multi put answers, its servers' replies not kept. */
static tdm_robot_info *local_info(const tdm_robot *r, const uint8_t id[TDM_ID_BYTES], int created)
{
    size_t text = 1;
    for (uint32_t k = 0; k < r->n_active; k++) text += strlen(r->joints[r->active[k]].name) + 1;
    size_t head = (sizeof(tdm_robot_info) + 15) & ~(size_t)15;
    tdm_robot_info *info = calloc(1, head + r->n_active * sizeof(tdm_joint_info) + text);
    if (!info) return NULL;
    tdm_joint_info *j = (tdm_joint_info *)(void *)((char *)info + head);
    char *at = (char *)(j + r->n_active);
    memcpy(info->robot_id, id, TDM_ID_BYTES);
    info->name = at++; /* "" as in a put's answer */
    for (uint32_t k = 0; k < r->n_active; k++) {
        const tdm_robot_joint *rj = &r->joints[r->active[k]];
        size_t len = strlen(rj->name) + 1;
        memcpy(at, rj->name, len);
        j[k] = (tdm_joint_info){at, rj->lower, rj->upper};
        at += len;
    }
    info->joints = j;
    info->n_joints = r->n_active;
    info->n_links = r->n_links;
    info->n_elements = r->n_collisions;
    info->created = created;
    return info;
}

int tdm__robot_meshes_read(const tdm_robot *r, const char *urdf_path,
                           int (*each)(void *ctx, const tdm_robot_collision *k, tdm_mesh *mesh), void *ctx, char *err,
                           size_t errlen)
{
    for (uint32_t e = 0; e < r->n_collisions; e++) {
        const tdm_robot_collision *k = &r->collisions[e];
        if (k->shape != TDM_SHAPE_MESH) continue;
        uint32_t f = 0; /* the first element of this filename */
        while (f < e && (r->collisions[f].shape != TDM_SHAPE_MESH || strcmp(r->collisions[f].mesh_uri, k->mesh_uri)))
            f++;
        if (f < e) continue;
        tdm_mesh *m = NULL;
        char why[512];
        int rc = tdm_mesh_load_file(k->mesh_path, TDM_ORIGIN_RAW, &m, why, sizeof why);
        if (rc != 0) {
            tdm__fmt(err, errlen, "%s:%u: link '%s' mesh %s: %s", urdf_path, k->line, r->links[k->link].name,
                     k->mesh_path, why);
            return rc == TDM_ENOMEM ? TDM_CLIENT_ENOMEM : TDM_CLIENT_EINVAL;
        }
        if ((rc = each(ctx, k, m)) != 0) return rc;
    }
    return 0;
}

/* put_files' tdm__robot_meshes_read callback: each mesh stored, its filename and id in the table */
typedef struct upload {
    const store *st;
    tdm_robot_mesh_ref *refs;
    size_t n;
    int rc; /* a store's failure */
} upload;

static int upload_mesh(void *ctx, const tdm_robot_collision *k, tdm_mesh *m)
{
    upload *up = ctx;
    const char *base = strrchr(k->mesh_path, '/');
    up->rc = store_mesh(up->st, base ? base + 1 : k->mesh_path, m, up->refs[up->n].mesh_id);
    tdm_mesh_free(m);
    if (up->rc == 0) up->refs[up->n++].filename = k->mesh_uri;
    return up->rc;
}

/* Reads the robot's files and stores its meshes; then `put` with the texts and the table. */
static int put_files(const store *st, const char *name, const char *urdf_path, const char *srdf_path,
                     uint8_t robot_id[TDM_ID_BYTES], int *created, tdm_robot_info **info)
{
    char err[1024];
    if (!urdf_path || !robot_id) {
        tdm__fmt(err, sizeof err, "urdf_path or robot_id is NULL");
        goto local;
    }
    tdm_robot *r = NULL;
    if (tdm_robot_load(urdf_path, srdf_path, &r, err, sizeof err) != 0) goto local;
    char *urdf = tdm__read_text(urdf_path, err, sizeof err), *srdf = NULL;
    tdm_robot_mesh_ref *refs = calloc(r->n_collisions ? r->n_collisions : 1, sizeof *refs);
    int rc = TDM_CLIENT_EINVAL;
    if (!urdf || (srdf_path && !(srdf = tdm__read_text(srdf_path, err, sizeof err)))) goto fail;
    if (!refs) {
        rc = TDM_CLIENT_ENOMEM;
        tdm__fmt(err, sizeof err, "out of memory");
        goto fail;
    }
    upload up = {st, refs, 0, 0};
    if ((rc = tdm__robot_meshes_read(r, urdf_path, upload_mesh, &up, err, sizeof err)) != 0) {
        if (up.rc) goto out; /* the client's error says why */
        goto fail;
    }
    const char *robot_name = name ? name : r->name;
    if (st->c) {
        rc = tdm_robot_put(st->c, robot_name, urdf, srdf, refs, up.n, robot_id, created, info);
    } else {
        int made = 0;
        rc = tdm_multi_robot_put(st->m, robot_name, urdf, srdf, refs, up.n, robot_id, &made);
        if (created) *created = made;
        if (rc == 0 && info && !(*info = local_info(r, robot_id, made))) {
            rc = TDM_CLIENT_ENOMEM;
            tdm__fmt(err, sizeof err, "out of memory");
            goto fail;
        }
    }
    goto out;
fail:
    free(urdf);
    free(srdf);
    free(refs);
    tdm_robot_free(r);
    return store_error(st, rc, err);
out:
    free(urdf);
    free(srdf);
    free(refs);
    tdm_robot_free(r);
    return rc;
local:
    return store_error(st, TDM_CLIENT_EINVAL, err);
}

int tdm_robot_put_files(tdm_client *c, const char *name, const char *urdf_path, const char *srdf_path,
                        uint8_t robot_id[TDM_ID_BYTES], int *created, tdm_robot_info **info)
{
    store st = {c, NULL};
    return put_files(&st, name, urdf_path, srdf_path, robot_id, created, info);
}

int tdm_multi_robot_put_files(tdm_multi *m, const char *name, const char *urdf_path, const char *srdf_path,
                              uint8_t robot_id[TDM_ID_BYTES], int *created, tdm_robot_info **info)
{
    store st = {NULL, m};
    if (info) *info = NULL;
    return put_files(&st, name, urdf_path, srdf_path, robot_id, created, info);
}

int tdm_robot_scene_put_file(tdm_client *c, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                             const char *yaml_path, uint8_t scene_id[TDM_ID_BYTES], int *created,
                             tdm_robot_scene_info **info)
{
    char err[512];
    if (!yaml_path) return tdm__client_local_error(c, TDM_CLIENT_EINVAL, "yaml_path is NULL");
    char *yaml = tdm__read_text(yaml_path, err, sizeof err);
    if (!yaml) return tdm__client_local_error(c, TDM_CLIENT_EINVAL, err);
    int rc = tdm_robot_scene_put(c, name, robot_id, yaml, scene_id, created, info);
    free(yaml);
    return rc;
}

int tdm_multi_robot_scene_put_file(tdm_multi *m, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                                   const char *yaml_path, uint8_t scene_id[TDM_ID_BYTES], int *created)
{
    char err[512];
    if (!yaml_path) return tdm__multi_local_error(m, TDM_CLIENT_EINVAL, "yaml_path is NULL");
    char *yaml = tdm__read_text(yaml_path, err, sizeof err);
    if (!yaml) return tdm__multi_local_error(m, TDM_CLIENT_EINVAL, err);
    int rc = tdm_multi_robot_scene_put(m, name, robot_id, yaml, scene_id, created);
    free(yaml);
    return rc;
}
