/* Ownership as requests see it: lookups in the connection's tenant's namespace,
 * per-tenant use counts, and owner changes made durable through the writer.
 *
 * A tenant sees only the objects whose owner set (owners.h) holds it: every other
 * id answers exactly as an unknown one, so ids of others' content cannot be
 * probed. Owner changes of listed objects are made in memory at once (on the loop)
 * and written by an OWNERS op in the writer's order, so the record on disk always
 * follows the latest change; the request is answered once it is durable, and a
 * failed write undoes its change. A put that makes an object stored by another
 * tenant its tenant's too answers `created` true, as for a new object: whether
 * others stored the same content is not the tenant's to learn. */
#include <stdlib.h>
#include <string.h>

#include "request_handlers.h"

int tdm__owns(const tdm_conn *c, const tdm_catalog_entry *e) { return tdm_owners_find(&e->owners, c->tenant) >= 0; }

const char *tdm__owned_name(const tdm_conn *c, const tdm_catalog_entry *e)
{
    int i = tdm_owners_find(&e->owners, c->tenant);
    return i >= 0 ? e->owners.v[i].name : "";
}

tdm_stored_mesh *tdm__find_mesh(tdm_conn *c, const uint8_t id[TDM_ID_LEN])
{
    tdm_stored_mesh *m = tdm_catalog_find_mesh(c->srv->catalog, id);
    return m && tdm__owns(c, &m->entry) ? m : NULL;
}

tdm_stored_scene *tdm__find_scene(tdm_conn *c, const uint8_t id[TDM_ID_LEN])
{
    tdm_stored_scene *s = tdm_catalog_find_scene(c->srv->catalog, id);
    return s && tdm__owns(c, &s->entry) ? s : NULL;
}

tdm_stored_scene *tdm__query_scene_ref(tdm_conn *c, uint64_t id, const ProtobufCBinaryData *scene_id)
{
    uint8_t sid[TDM_ID_LEN];
    if (tdm__get_id(c, id, scene_id, "scene_id", -1, sid) != 0) return NULL;
    tdm_stored_scene *sc = tdm__find_scene(c, sid);
    if (!sc) {
        tdm_conn_send_error(c, id, E(UNKNOWN_SCENE), "scene_id", -1, "no stored scene has this id");
        return NULL;
    }
    tdm_stored_scene_ref(sc);
    return sc;
}

void tdm__query_scene_unref(tdm_conn *c, tdm_stored_scene *sc)
{
    if (!sc || tdm_stored_scene_unref_shared(sc)) return;
    tdm_srv_exclusive(c->srv);
    tdm_stored_scene_unref(sc);
}

tdm_stored_robot *tdm__find_robot(tdm_conn *c, const uint8_t id[TDM_ID_LEN])
{
    tdm_stored_robot *r = tdm_catalog_find_robot(c->srv->catalog, id);
    return r && tdm__owns(c, &r->entry) ? r : NULL;
}

static int sole_owner(const tdm_conn *c, const tdm_catalog_entry *e)
{
    return e->owners.n == 1 && e->owners.v[0].tenant == c->tenant;
}

static int uses(tdm_stored_mesh *const *v, uint32_t n, const tdm_stored_mesh *m)
{
    for (uint32_t i = 0; i < n; i++)
        if (v[i] == m) return 1;
    return 0;
}

/* O(scenes): only for objects shared between tenants, on lists and deletes. */
uint32_t tdm__mesh_scenes(tdm_conn *c, const tdm_stored_mesh *m)
{
    if (sole_owner(c, &m->entry)) return m->scenes;
    uint32_t n = 0;
    for (tdm_stored_scene *s = tdm_catalog_scenes(c->srv->catalog); s; s = s->next)
        n += tdm__owns(c, &s->entry) && uses(s->meshes, s->n_meshes, m);
    return n;
}

uint32_t tdm__mesh_robots(tdm_conn *c, const tdm_stored_mesh *m)
{
    if (sole_owner(c, &m->entry)) return m->robots;
    uint32_t n = 0;
    for (tdm_stored_robot *r = tdm_catalog_robots(c->srv->catalog); r; r = r->next)
        n += tdm__owns(c, &r->entry) && uses(r->meshes, r->n_meshes, m);
    return n;
}

uint32_t tdm__robot_scenes(tdm_conn *c, const tdm_stored_robot *r)
{
    if (sole_owner(c, &r->entry)) return r->scenes;
    uint32_t n = 0;
    for (tdm_stored_scene *s = tdm_catalog_scenes(c->srv->catalog); s; s = s->next)
        n += s->robot == r && tdm__owns(c, &s->entry);
    return n;
}

typedef struct mesh_slot {
    const tdm_stored_mesh *m;
    uint32_t i;
} mesh_slot;

static int cmp_slot(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const mesh_slot *)a)->m, y = (uintptr_t)((const mesh_slot *)b)->m;
    return x < y ? -1 : x > y;
}

static void count_uses(const mesh_slot *slots, uint32_t n, tdm_stored_mesh *const *v, uint32_t nv, uint32_t *count)
{
    for (uint32_t k = 0; k < nv; k++) {
        mesh_slot key = {v[k], 0};
        const mesh_slot *s = bsearch(&key, slots, n, sizeof *slots, cmp_slot);
        if (s) count[s->i]++;
    }
}

int tdm__mesh_uses(tdm_conn *c, tdm_stored_mesh *const *ms, uint32_t n, uint32_t *scenes, uint32_t *robots)
{
    int shared = 0;
    for (uint32_t i = 0; i < n; i++) {
        scenes[i] = ms[i]->scenes;
        robots[i] = ms[i]->robots;
        shared |= !sole_owner(c, &ms[i]->entry);
    }
    if (!shared) return 0;
    mesh_slot *slots = malloc(sizeof *slots * n);
    uint32_t *sc = calloc(n, sizeof *sc), *rb = calloc(n, sizeof *rb);
    if (!slots || !sc || !rb) {
        free(slots);
        free(sc);
        free(rb);
        return TDM_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++) slots[i] = (mesh_slot){ms[i], i};
    qsort(slots, n, sizeof *slots, cmp_slot);
    for (tdm_stored_scene *s = tdm_catalog_scenes(c->srv->catalog); s; s = s->next)
        if (tdm__owns(c, &s->entry)) count_uses(slots, n, s->meshes, s->n_meshes, sc);
    for (tdm_stored_robot *r = tdm_catalog_robots(c->srv->catalog); r; r = r->next)
        if (tdm__owns(c, &r->entry)) count_uses(slots, n, r->meshes, r->n_meshes, rb);
    for (uint32_t i = 0; i < n; i++)
        if (!sole_owner(c, &ms[i]->entry)) {
            scenes[i] = sc[i];
            robots[i] = rb[i];
        }
    free(slots);
    free(sc);
    free(rb);
    return 0;
}

int tdm__put_owner(tdm_conn *c, tdm_writer_op *op, const char *name)
{
    op->tenant = c->tenant;
    tdm_owners one = {&(tdm_owner){c->tenant, (char *)name}, 1};
    return tdm_owners_encode(&one, c->srv->tenants, name, &op->owners_rec, &op->owners_len);
}

int tdm__first_owner(tdm_catalog_entry *e, const tdm_writer_op *op, const char *name)
{
    tdm_owners_clear(&e->owners);
    return tdm_owners_add(&e->owners, op->tenant, name);
}

/* Bounds the wait for another loop's answer: each try is a trip through the writer and back
 * (tens of microseconds), so ~10-50 ms in all, while other ops pass between the tries. */
#define PUT_AGAIN_PENDING 1000

/* Whether the object op put is stored but not listed: the put that stored it is being answered
 * on another loop (io.h), whose answer lists it. */
static int listing_pending(tdm_server *srv, const tdm_writer_op *op)
{
    switch (op->kind) {
    case TDM_WRITER_MESH_PUT: return tdm_catalog_mesh_on_disk(srv->catalog, op->id);
    case TDM_WRITER_ROBOT_PUT: return tdm_catalog_robot_on_disk(srv->catalog, op->id);
    case TDM_WRITER_SCENE_PUT:
    case TDM_WRITER_ROBOT_SCENE_PUT: return tdm_catalog_scene_on_disk(srv->catalog, op->id);
    default: return 0;
    }
}

int tdm__put_again(tdm_conn *c, tdm_writer_op *op)
{
    /* a few times for an object deleted meanwhile; while the put that stored it is still being
       answered on another loop, until it is (two clients putting the same object at once, on
       different I/O threads: the second was told BUSY) */
    if (op->rc != TDM_OK || !op->exists || !tdm_conn_alive(c)) return 0;
    if (op->attempts >= (listing_pending(c->srv, op) ? PUT_AGAIN_PENDING : 3)) return 0;
    op->attempts++;
    op->rc = TDM_OK;
    op->exists = 0;
    op->field = "";
    op->index = -1; /* msg stays: an over-budget MeshPut's was written by the loop */
    tdm_writer_submit(c->srv->writer, op);
    return 1;
}

tdm_writer_op *tdm__owners_change(tdm_conn *c, uint64_t req, tdm_catalog_entry *e, const char *file_name, int adding,
                                  const char *name)
{
    tdm_writer_op *op = calloc(1, sizeof *op);
    int i = tdm_owners_find(&e->owners, c->tenant);
    if (!op || !(op->name = strdup(adding ? name : e->owners.v[i].name))) goto nomem;
    if (adding ? tdm_owners_add(&e->owners, c->tenant, name) != 0 : (tdm_owners_remove(&e->owners, c->tenant), 0))
        goto nomem;
    if (tdm_owners_encode(&e->owners, c->srv->tenants, file_name, &op->owners_rec, &op->owners_len) != 0) {
        op->owners_adding = adding;
        op->tenant = c->tenant;
        tdm__owners_undo(op, e);
        goto nomem;
    }
    op->kind = TDM_WRITER_OWNERS;
    op->ephemeral = e->ephemeral; /* no record to write */
    op->owner = c;
    op->request_id = req;
    op->tenant = c->tenant;
    op->owners_adding = adding;
    memcpy(op->id, e->id, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    op->started = uv_hrtime();
    return op;
nomem:
    if (op) free(op->name);
    free(op);
    tdm_conn_send_error(c, req, E(NO_MEMORY), "", -1, "out of memory");
    return NULL;
}

void tdm__owners_undo(const tdm_writer_op *op, tdm_catalog_entry *e)
{
    if (op->owners_adding) tdm_owners_remove(&e->owners, op->tenant);
    else if (tdm_owners_find(&e->owners, op->tenant) < 0) tdm_owners_add(&e->owners, op->tenant, op->name);
}
