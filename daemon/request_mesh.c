/* MeshPut, MeshList, MeshDelete.
 *
 * A MeshPut is checked here for what its counts and the budgets decide (sizes,
 * limits, the name, room in max_meshes_bytes and max_upload_bytes), then goes
 * to the writer thread with its decoded request: hashing, validation, the tree,
 * the device upload and the file all happen there (writer.h). Its completion
 * lists the new mesh in the catalogue and replies. A MeshDelete unlists the
 * mesh at once (so no new scene can use it) and replies once the writer has
 * removed its file; a failed removal lists it again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "request_handlers.h"

/* Most bytes a mesh can take once stored: canonical content and a tree of at
 * most 2n - 1 nodes, 40 bytes of triangle data per triangle, its header. */
static uint64_t mesh_bytes_bound(uint64_t nv, uint64_t nt)
{
    return TDM_MESH_CANON_PREFIX_LEN + 12 * nv + 12 * nt + 64 + 64 * (2 * nt) + 40 * nt;
}

static void mesh_put_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    tdm_catalog_unreserve(srv->catalog, op->reserved);
    tdm_upload_release(srv, op);
    char hex[2 * TDM_ID_LEN + 1], nm[TDM_LOG_NAME_MAX];
    int created = 0;
    if (op->rc != TDM_OK) {
        if (op->rc == TDM_EIO) tdm_log_error("MeshPut: %s", op->msg);
        if (tdm_conn_alive(c))
            tdm_conn_send_error(c, op->request_id, tdm__error_code(op->rc), op->field, op->index, "%s", op->msg);
    } else {
        if (op->mesh) {
            if (tdm_catalog_find_mesh(srv->catalog, op->id)) {
                tdm_stored_mesh_unref(op->mesh); /* stored meanwhile: ours is a duplicate */
            } else {
                tdm_catalog_add_mesh(srv->catalog, op->mesh); /* takes our reference */
                created = 1;
                tdm_log_info("stored mesh %s \"%s\": %u vertices, %u triangles, %llu bytes, %.1f ms",
                             tdm__id_hex(op->id, hex), tdm_log_name(op->mesh->name, nm), op->n_verts, op->n_tris,
                             (unsigned long long)op->mesh->bytes, (double)(uv_hrtime() - op->started) / 1e6);
            }
            op->mesh = NULL;
        }
        if (tdm_conn_alive(c)) {
            Tandem__V1__MeshPutReply r = TANDEM__V1__MESH_PUT_REPLY__INIT;
            r.mesh_id.data = op->id;
            r.mesh_id.len = TDM_ID_LEN;
            r.created = created;
            r.n_vertices = op->n_verts;
            r.n_triangles = op->n_tris;
            tdm__send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_MESH_PUT, &r);
        }
    }
    tdm_arena_free(op->arena);
    free(op);
    tdm_conn_end(c);
}

void tdm__mesh_put(tdm_conn *c, uint64_t id, const Tandem__V1__MeshPut *p)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (p->n_vertices % 3) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "vertices", -1,
                            "vertices has %zu numbers, not a multiple of 3 (x y z per vertex)", p->n_vertices);
        return;
    }
    if (p->n_triangles % 3) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "triangles", -1,
                            "triangles has %zu indices, not a multiple of 3 (3 per triangle)", p->n_triangles);
        return;
    }
    uint64_t nv = p->n_vertices / 3, nt = p->n_triangles / 3;
    if (nv > cfg->max_vertices) {
        tdm_conn_send_error(c, id, E(LIMIT), "vertices", -1, "mesh has %llu vertices, over max_vertices %u",
                            (unsigned long long)nv, cfg->max_vertices);
        return;
    }
    if (nt > cfg->max_triangles) {
        tdm_conn_send_error(c, id, E(LIMIT), "triangles", -1, "mesh has %llu triangles, over max_triangles %u",
                            (unsigned long long)nt, cfg->max_triangles);
        return;
    }
    if (nt == 0) {
        tdm_conn_send_error(c, id, E(EMPTY), "triangles", -1, "mesh has no triangles");
        return;
    }
    if (nv == 0) { /* every index is past the vertex count (tdm_mesh_create would say "empty") */
        tdm_conn_send_error(c, id, E(BAD_INDEX), "triangles", 0,
                            "triangle 0 refers to vertex %u, but the mesh has no vertices", p->triangles[0]);
        return;
    }
    if (tdm__check_name(c, id, p->name, "name") != 0) return;
    /* the decoded request waits in memory for the writer thread: bound the sum */
    /* and so does the tree the writer builds from it: its working memory, about twice what
       the stored mesh may take (a 1M-triangle mesh raised tandemd's RSS by 358 MB) */
    uint64_t upload = tdm_arena_allocated(c->arena) + 2 * mesh_bytes_bound(nv, nt);
    if (tdm_conn_upload_admit(c, id, upload) != 0) return;

    tdm_writer_op *op = calloc(1, sizeof *op);
    if (!op) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    tdm_upload_charge(srv, op, upload);
    uint64_t need = mesh_bytes_bound(nv, nt);
    uint64_t used = tdm_catalog_bytes(srv->catalog) + tdm_catalog_reserved(srv->catalog);
    if (used > cfg->max_meshes_bytes || need > cfg->max_meshes_bytes - used) {
        op->over_budget = 1; /* still sent: an identical stored mesh needs no room */
        snprintf(op->msg, sizeof op->msg,
                 "storing this mesh may take %llu bytes; %llu of max_meshes_bytes %llu are in use",
                 (unsigned long long)need, (unsigned long long)used, (unsigned long long)cfg->max_meshes_bytes);
    } else {
        op->reserved = need;
        tdm_catalog_reserve(srv->catalog, need);
    }
    op->kind = TDM_WRITER_MESH_PUT;
    op->done = mesh_put_done;
    op->owner = c;
    op->request_id = id;
    op->started = uv_hrtime();
    op->arena = c->arena; /* the decoded request travels with its arena */
    c->arena = NULL;
    op->put = p;
    op->limits.max_vertices = cfg->max_vertices;
    op->limits.max_triangles = cfg->max_triangles;
    op->field = "";
    op->index = -1;
    tdm_conn_begin(c);
    tdm_writer_submit(srv->writer, op);
}

void tdm__mesh_list(tdm_conn *c, uint64_t id)
{
    tdm_catalog *cat = c->srv->catalog;
    uint32_t n = tdm_catalog_n_meshes(cat);
    Tandem__V1__MeshInfo *infos = malloc(sizeof *infos * (n ? n : 1));
    Tandem__V1__MeshInfo **ptrs = malloc(sizeof *ptrs * (n ? n : 1));
    if (!infos || !ptrs) {
        free(infos);
        free(ptrs);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory listing %u meshes", n);
        return;
    }
    uint32_t i = 0;
    for (tdm_stored_mesh *m = tdm_catalog_meshes(cat); m; m = m->next, i++) {
        Tandem__V1__MeshInfo mi = TANDEM__V1__MESH_INFO__INIT;
        mi.mesh_id.data = m->entry.id;
        mi.mesh_id.len = TDM_ID_LEN;
        mi.name = m->name;
        mi.n_vertices = m->n_verts;
        mi.n_triangles = m->n_tris;
        mi.scenes = m->scenes;
        mi.robots = m->robots;
        infos[i] = mi;
        ptrs[i] = &infos[i];
    }
    Tandem__V1__MeshListReply r = TANDEM__V1__MESH_LIST_REPLY__INIT;
    r.n_meshes = n;
    r.meshes = ptrs;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_MESH_LIST, &r);
    free(infos);
    free(ptrs);
}

static void mesh_delete_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("MeshDelete %s: %s", tdm__id_hex(op->id, hex), op->msg);
        /* still on disk: listed again, unless a put brought it back already */
        if (!tdm_catalog_find_mesh(srv->catalog, op->id)) tdm_catalog_add_mesh(srv->catalog, op->mesh);
        else tdm_stored_mesh_unref(op->mesh);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else {
        tdm_log_info("deleted mesh %s", tdm__id_hex(op->id, hex));
        tdm_stored_mesh_unref(op->mesh); /* queries still using it keep it alive */
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            tdm__send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_MESH_DELETE, &d);
        }
    }
    free(op);
    tdm_conn_end(c);
}

void tdm__mesh_delete(tdm_conn *c, uint64_t id, const Tandem__V1__MeshDelete *d)
{
    tdm_server *srv = c->srv;
    uint8_t mid[TDM_ID_LEN];
    if (tdm__get_id(c, id, &d->mesh_id, "mesh_id", -1, mid) != 0) return;
    tdm_stored_mesh *m = tdm_catalog_find_mesh(srv->catalog, mid);
    if (!m) {
        tdm_conn_send_error(c, id, E(UNKNOWN_MESH), "mesh_id", -1, "no stored mesh has this id");
        return;
    }
    if (m->scenes > 0) {
        tdm_conn_send_error(c, id, E(MESH_IN_USE), "mesh_id", -1, "the mesh is used by %u scene%s", m->scenes,
                            m->scenes == 1 ? "" : "s");
        return;
    }
    if (m->robots > 0) {
        tdm_conn_send_error(c, id, E(MESH_IN_USE), "mesh_id", -1, "the mesh is used by %u robot%s", m->robots,
                            m->robots == 1 ? "" : "s");
        return;
    }
    tdm_writer_op *op = calloc(1, sizeof *op);
    if (!op) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    tdm_catalog_remove_mesh(srv->catalog, m); /* the catalogue's reference passes to the op */
    op->kind = TDM_WRITER_MESH_DELETE;
    op->done = mesh_delete_done;
    op->owner = c;
    op->request_id = id;
    op->mesh = m;
    memcpy(op->id, mid, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    tdm_conn_begin(c);
    tdm_writer_submit(srv->writer, op);
}

