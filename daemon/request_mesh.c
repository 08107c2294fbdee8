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

static void send_mesh_put(tdm_conn *c, uint64_t req, const uint8_t *id, int created, uint32_t nv, uint32_t nt)
{
    Tandem__V1__MeshPutReply r = TANDEM__V1__MESH_PUT_REPLY__INIT;
    r.mesh_id.data = (uint8_t *)id;
    r.mesh_id.len = TDM_ID_LEN;
    r.created = created;
    r.n_vertices = nv;
    r.n_triangles = nt;
    tdm__send_body(c, req, TANDEM__V1__REPLY__BODY_MESH_PUT, &r);
}

/* A stored mesh claimed by another tenant: its record is written. */
static void mesh_claim_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    if (op->rc != TDM_OK) {
        tdm_log_error("MeshPut (a new owner of a stored mesh): %s", op->msg);
        tdm__owners_undo(op, &op->mesh->entry);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else if (tdm_conn_alive(c)) {
        send_mesh_put(c, op->request_id, op->id, 1, op->mesh->n_verts, op->mesh->n_tris); /* new to this tenant */
    }
    tdm_stored_mesh_unref(op->mesh);
    free(op->owners_rec);
    free(op->name);
    free(op);
    tdm_conn_end(c);
}

/* The put's mesh m is listed: the connection's tenant owns it once its record is
 * written (1: an op is on its way and will answer), or already does (0). */
static int claim_mesh(tdm_conn *c, uint64_t req, tdm_stored_mesh *m, const char *name)
{
    if (tdm__owns(c, &m->entry)) return 0;
    tdm_writer_op *op = tdm__owners_change(c, req, &m->entry, m->name, 1, name);
    if (!op) return 1; /* answered */
    op->done = mesh_claim_done;
    op->mesh = m;
    tdm_stored_mesh_ref(m);
    tdm_conn_begin(c);
    tdm_writer_submit(c->srv->writer, op);
    return 1;
}

static void mesh_put_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    if (!tdm_catalog_find_mesh(srv->catalog, op->id) && tdm__put_again(c, op)) return;
    tdm_catalog_unreserve(srv->catalog, op->reserved);
    tdm_upload_release(srv, op);
    char hex[2 * TDM_ID_LEN + 1], nm[TDM_LOG_NAME_MAX];
    int created = 0;
    if (op->rc != TDM_OK) {
        if (op->rc == TDM_EIO) tdm_log_error("MeshPut: %s", op->msg);
        if (tdm_conn_alive(c))
            tdm_conn_send_error(c, op->request_id, tdm__error_code(op->rc), op->field, op->index, "%s", op->msg);
    } else {
        tdm_stored_mesh *have = tdm_catalog_find_mesh(srv->catalog, op->id);
        if (op->mesh && !have) {
            if (tdm__first_owner(&op->mesh->entry, op, op->mesh->name) != 0) {
                tdm_stored_mesh_unref(op->mesh); /* stored: it loads at the next start */
                if (tdm_conn_alive(c))
                    tdm_conn_send_error(c, op->request_id, E(NO_MEMORY), "", -1, "out of memory after storing the mesh");
                goto out;
            }
            tdm_catalog_add_mesh(srv->catalog, op->mesh); /* takes our reference */
            have = op->mesh;
            op->mesh = NULL;
            created = 1;
            tdm_log_info("stored mesh %s \"%s\": %u vertices, %u triangles, %llu bytes, %.1f ms",
                         tdm__id_hex(op->id, hex), tdm_log_name(have->name, nm), op->n_verts, op->n_tris,
                         (unsigned long long)have->bytes, (double)(uv_hrtime() - op->started) / 1e6);
        }
        /* stored already (perhaps by another tenant): the put makes it this tenant's too */
        const char *name = op->mesh ? op->mesh->name : op->put && op->put->name ? op->put->name : "";
        int claimed = !created && have && tdm_conn_alive(c) && claim_mesh(c, op->request_id, have, name);
        tdm_stored_mesh_unref(op->mesh); /* a duplicate built while the same mesh was being stored */
        op->mesh = NULL;
        if (claimed) goto out;
        if (tdm_conn_alive(c)) {
            if (created || have) send_mesh_put(c, op->request_id, op->id, created, op->n_verts, op->n_tris);
            else tdm_conn_send_error(c, op->request_id, E(BUSY), "", -1, "the mesh was being deleted; retry");
        }
    }
out:
    tdm_arena_free(op->arena);
    free(op->owners_rec);
    free(op);
    tdm_conn_end(c);
}

/* libuv's pool: a large MeshPut's id (a failure leaves it to the writer, which says why) */
static void mesh_hash_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    tdm_writer_op *op = w->data;
    const Tandem__V1__MeshPut *p = op->put;
    op->id_ready = tdm_mesh_id(p->vertices, (uint32_t)(p->n_vertices / 3), p->triangles,
                               (uint32_t)(p->n_triangles / 3), op->id) == 0;
}

/* The connection's loop: the hashed put goes to the writer, in the request's scope. */
static void mesh_hash_after(uv_work_t *w, int status)
{
    (void)status;
    tdm__submit_after_pool(w->data);
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
    if (tdm__put_owner(c, op, p->name ? p->name : "") != 0) {
        tdm_catalog_unreserve(srv->catalog, op->reserved);
        srv->upload_bytes -= upload;
        free(op);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    op->kind = TDM_WRITER_MESH_PUT;
    op->done = mesh_put_done;
    op->owner = c;
    op->share = c->share_of;
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
    /* a large mesh is hashed on libuv's pool first: its SHA-256 (tens of megabytes) would hold the
       writer, and every op queued behind it */
    if (nt >= TDM_WRITER_BUILDER_TRIS && tdm_writer_offloads(srv->writer)) {
        op->work.data = op;
        tdm_metrics_mark_take(&op->mark); /* re-entered for the submission */
        if (uv_queue_work(c->io->loop, &op->work, mesh_hash_work, mesh_hash_after) == 0) return;
        /* cannot happen: uv_queue_work fails only without a callback */
    }
    tdm_writer_submit(srv->writer, op);
}

void tdm__mesh_list(tdm_conn *c, uint64_t id)
{
    tdm_catalog *cat = c->srv->catalog;
    uint32_t n = 0, i = 0;
    for (tdm_stored_mesh *m = tdm_catalog_meshes(cat); m; m = m->next) n += tdm__owns(c, &m->entry);
    Tandem__V1__MeshInfo *infos = malloc(sizeof *infos * (n ? n : 1));
    Tandem__V1__MeshInfo **ptrs = malloc(sizeof *ptrs * (n ? n : 1));
    tdm_stored_mesh **ms = malloc(sizeof *ms * (n ? n : 1));
    uint32_t *uses = malloc(sizeof *uses * 2 * (n ? n : 1));
    if (!infos || !ptrs || !ms || !uses) goto nomem;
    for (tdm_stored_mesh *m = tdm_catalog_meshes(cat); m; m = m->next)
        if (tdm__owns(c, &m->entry)) ms[i++] = m;
    if (tdm__mesh_uses(c, ms, n, uses, uses + n) != 0) goto nomem;
    for (i = 0; i < n; i++) {
        const tdm_stored_mesh *m = ms[i];
        Tandem__V1__MeshInfo mi = TANDEM__V1__MESH_INFO__INIT;
        mi.mesh_id.data = (uint8_t *)m->entry.id;
        mi.mesh_id.len = TDM_ID_LEN;
        mi.name = (char *)tdm__owned_name(c, &m->entry);
        mi.n_vertices = m->n_verts;
        mi.n_triangles = m->n_tris;
        mi.scenes = uses[i];
        mi.robots = uses[n + i];
        infos[i] = mi;
        ptrs[i] = &infos[i];
    }
    Tandem__V1__MeshListReply r = TANDEM__V1__MESH_LIST_REPLY__INIT;
    r.n_meshes = n;
    r.meshes = ptrs;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_MESH_LIST, &r);
    goto out;
nomem:
    tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory listing %u meshes", n);
out:
    free(infos);
    free(ptrs);
    free(ms);
    free(uses);
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

/* A delete by one of a shared mesh's owners: its record is written without it. */
static void mesh_disown_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("MeshDelete %s: %s", tdm__id_hex(op->id, hex), op->msg);
        tdm__owners_undo(op, &op->mesh->entry);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else {
        tdm_log_info("deleted mesh %s for tenant %s (other tenants keep it)", tdm__id_hex(op->id, hex),
                     tdm_tenants_name(c->srv->tenants, op->tenant));
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            tdm__send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_MESH_DELETE, &d);
        }
    }
    tdm_stored_mesh_unref(op->mesh);
    free(op->owners_rec);
    free(op->name);
    free(op);
    tdm_conn_end(c);
}

void tdm__mesh_delete(tdm_conn *c, uint64_t id, const Tandem__V1__MeshDelete *d)
{
    tdm_server *srv = c->srv;
    uint8_t mid[TDM_ID_LEN];
    if (tdm__get_id(c, id, &d->mesh_id, "mesh_id", -1, mid) != 0) return;
    tdm_stored_mesh *m = tdm__find_mesh(c, mid);
    if (!m) {
        tdm_conn_send_error(c, id, E(UNKNOWN_MESH), "mesh_id", -1, "no stored mesh has this id");
        return;
    }
    uint32_t scenes = tdm__mesh_scenes(c, m), robots = tdm__mesh_robots(c, m);
    if (scenes > 0) {
        tdm_conn_send_error(c, id, E(MESH_IN_USE), "mesh_id", -1, "the mesh is used by %u scene%s", scenes,
                            scenes == 1 ? "" : "s");
        return;
    }
    if (robots > 0) {
        tdm_conn_send_error(c, id, E(MESH_IN_USE), "mesh_id", -1, "the mesh is used by %u robot%s", robots,
                            robots == 1 ? "" : "s");
        return;
    }
    if (m->entry.owners.n > 1) { /* others own it too: it stays theirs */
        tdm_writer_op *op = tdm__owners_change(c, id, &m->entry, m->name, 0, NULL);
        if (!op) return;
        op->done = mesh_disown_done;
        op->mesh = m;
        tdm_stored_mesh_ref(m);
        tdm_conn_begin(c);
        tdm_writer_submit(srv->writer, op);
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

