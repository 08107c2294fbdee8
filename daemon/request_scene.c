/* ScenePut, SceneList, SceneDelete.
 *
 * A ScenePut is checked and built on the loop (its meshes must be listed; the
 * scene's checked pairs are computed by tdm_scene_create), its canonical
 * content and id computed (content_id.h); a scene already listed is answered
 * at once, a new one goes to the writer thread and is listed when its file is
 * written. A SceneDelete unlists the scene at once and replies once its file is
 * removed; queries still running on it keep it alive, and only then may its
 * meshes be deleted (tdm_stored_scene_retire). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "request_handlers.h"

static void send_scene_put(tdm_conn *c, uint64_t id, tdm_stored_scene *sc, int created)
{
    tdm__ephemeral_hold(c, sc); /* (an ephemeral scene) */
    Tandem__V1__ScenePutReply r = TANDEM__V1__SCENE_PUT_REPLY__INIT;
    r.scene_id.data = (uint8_t *)sc->entry.id;
    r.scene_id.len = TDM_ID_LEN;
    r.created = created;
    r.n_movable = sc->scene->n_movable;
    r.movable = sc->scene->movable;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_SCENE_PUT, &r);
}

/* A stored scene claimed by another tenant: its record is written. */
static void scene_claim_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    if (op->rc != TDM_OK) {
        tdm_log_error("ScenePut (a new owner of a stored scene): %s", op->msg);
        tdm__owners_undo(op, &op->scene->entry);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else if (tdm_conn_alive(c)) {
        send_scene_put(c, op->request_id, op->scene, 1); /* new to this tenant */
    } else {
        tdm__ephemeral_settle(c, op->scene);
    }
    tdm_stored_scene_unref(op->scene);
    free(op->owners_rec);
    free(op->name);
    free(op);
    tdm_conn_end(c);
}

/* The listed scene sc becomes the connection's tenant's too: 1 when an op will
 * answer, 0 when it owned it already. */
static int claim_scene(tdm_conn *c, uint64_t req, tdm_stored_scene *sc, const char *name)
{
    if (tdm__owns(c, &sc->entry)) return 0;
    tdm_writer_op *op = tdm__owners_change(c, req, &sc->entry, sc->name, 1, name);
    if (!op) return 1;
    op->done = scene_claim_done;
    op->scene = sc;
    tdm_stored_scene_ref(sc);
    tdm_conn_begin(c);
    tdm_writer_submit(c->srv->writer, op);
    return 1;
}

static void scene_put_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    if (!tdm_catalog_find_scene(srv->catalog, op->id) && tdm__put_again(c, op)) return;
    tdm_stored_scene *sc = op->scene;
    char hex[2 * TDM_ID_LEN + 1], nm[TDM_LOG_NAME_MAX];
    if (op->rc != TDM_OK) {
        tdm_log_error("ScenePut: %s", op->msg);
        if (tdm_conn_alive(c))
            tdm_conn_send_error(c, op->request_id, tdm__error_code(op->rc), op->field, op->index, "%s", op->msg);
        tdm_stored_scene_retire(sc);
        tdm_stored_scene_unref(sc);
    } else {
        tdm_stored_scene *have = tdm_catalog_find_scene(srv->catalog, op->id);
        int created = !have && !op->exists, claimed = 0;
        if (!have && op->exists) { /* its file is being removed: not listed, or it would be lost */
            if (tdm_conn_alive(c))
                tdm_conn_send_error(c, op->request_id, E(BUSY), "", -1, "the scene was being deleted; retry");
            tdm_stored_scene_retire(sc);
            tdm_stored_scene_unref(sc);
            goto out;
        }
        if (!have && tdm__first_owner(&sc->entry, op, sc->name) != 0) {
            if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(NO_MEMORY), "", -1, "out of memory");
            tdm_stored_scene_retire(sc);
            tdm_stored_scene_unref(sc);
            goto out;
        }
        if (!have) {
            tdm_catalog_add_scene(srv->catalog, sc); /* takes our reference */
            if (created)
                tdm_log_info("stored scene %s \"%s\": %u objects, %u movable, %u checked pairs",
                             tdm__id_hex(op->id, hex), tdm_log_name(sc->name, nm), sc->scene->n_objects, sc->scene->n_movable,
                             sc->scene->n_checks);
            have = sc;
        } else {
            tdm_stored_scene_retire(sc);
            /* stored meanwhile (perhaps by another tenant): the put makes it this tenant's too */
            if (tdm_conn_alive(c)) claimed = claim_scene(c, op->request_id, have, sc->name);
        }
        if (tdm_conn_alive(c) && !claimed) send_scene_put(c, op->request_id, have, created);
        if (!tdm_conn_alive(c)) tdm__ephemeral_settle(c, have); /* put for a connection gone meanwhile */
        if (have != sc) tdm_stored_scene_unref(sc);
    }
out:
    free(op->owners_rec);
    tdm_upload_release(srv, op);
    free(op->canon);
    free(op);
    tdm_conn_end(c);
}

typedef struct put_object {
    tdm_canon_object canon;
    tdm_stored_mesh *mesh;
} put_object;

static int cmp_put_object(const void *a, const void *b)
{
    uint32_t x = ((const put_object *)a)->canon.id, y = ((const put_object *)b)->canon.id;
    return x < y ? -1 : x > y;
}

void tdm__scene_put(tdm_conn *c, uint64_t id, const Tandem__V1__ScenePut *p)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (tdm__check_name(c, id, p->name, "name") != 0) return;
    size_t n = p->n_objects;
    if (n > cfg->max_objects) {
        tdm_conn_send_error(c, id, E(LIMIT), "objects", -1, "scene has %zu objects, over max_objects %u", n,
                            cfg->max_objects);
        return;
    }
    if (n == 0) {
        tdm_conn_send_error(c, id, E(EMPTY), "objects", -1, "scene has no objects (it needs a movable one)");
        return;
    }
    if (p->n_allowed > UINT32_MAX) {
        tdm_conn_send_error(c, id, E(LIMIT), "allowed", -1, "too many allowed pairs");
        return;
    }
    tdm_scene_obj *objs = malloc(sizeof *objs * n);
    put_object *po = malloc(sizeof *po * n);
    tdm_stored_mesh **meshes = malloc(sizeof *meshes * n);
    tdm_id_pair *allowed = malloc(sizeof *allowed * (p->n_allowed ? p->n_allowed : 1));
    tdm_canon_pair *cpairs = NULL;
    uint8_t *canon = NULL;
    size_t canon_len = 0;
    tdm_scene *scene = NULL;
    tdm_stored_scene *sc = NULL;
    tdm_writer_op *op = NULL;
    if (!objs || !po || !meshes || !allowed) goto nomem;
    for (size_t i = 0; i < n; i++) {
        const Tandem__V1__SceneObject *o = p->objects[i];
        uint8_t mid[TDM_ID_LEN];
        if (tdm__get_id(c, id, &o->mesh_id, "objects", (int64_t)i, mid) != 0) goto out;
        tdm_stored_mesh *m = tdm__find_mesh(c, mid);
        if (!m) {
            char hex[2 * TDM_ID_LEN + 1];
            tdm_conn_send_error(c, id, E(UNKNOWN_MESH), "objects", (int64_t)i, "object %zu: no stored mesh has id %s",
                                i, tdm__id_hex(mid, hex));
            goto out;
        }
        memset(&po[i], 0, sizeof po[i]);
        po[i].canon.id = o->object_id;
        memcpy(po[i].canon.mesh_id, mid, TDM_ID_LEN);
        po[i].canon.movable = o->movable != 0;
        po[i].mesh = m;
        meshes[i] = m;
        objs[i].id = o->object_id;
        objs[i].bvh = m->bvh;
        objs[i].movable = o->movable != 0;
        objs[i].pose = tdm_xform_identity();
        if (!o->movable) {
            double raw[7] = {0, 0, 0, 0, 0, 0, 1};
            if (o->pose) {
                const Tandem__V1__Pose *q = o->pose;
                double v[7] = {q->x, q->y, q->z, q->qx, q->qy, q->qz, q->qw};
                memcpy(raw, v, sizeof raw);
            }
            ecode e = tdm__pose_xform(raw, &objs[i].pose, po[i].canon.pose);
            if (e == E(NON_FINITE)) {
                tdm_conn_send_error(c, id, e, "objects", (int64_t)i, "object %zu: pose has a non-finite number", i);
                goto out;
            }
            if (e == E(NOT_UNIT)) {
                tdm_conn_send_error(c, id, e, "objects", (int64_t)i,
                                    "object %zu: pose quaternion has norm %.6g, not within 1e-3 of 1", i,
                                    tdm_quat_norm((tdm_quat){raw[3], raw[4], raw[5], raw[6]}));
                goto out;
            }
        }
    }
    for (size_t i = 0; i < p->n_allowed; i++) allowed[i] = (tdm_id_pair){p->allowed[i]->a, p->allowed[i]->b};
    tdm_scene_error serr;
    int rc = tdm_scene_create(objs, (uint32_t)n, allowed, (uint32_t)p->n_allowed, &scene, &serr);
    if (rc != TDM_OK) {
        tdm_conn_send_error(c, id, tdm__error_code(rc), serr.field, serr.index, "%s", serr.msg);
        goto out;
    }
    /* canonical content: objects by id (unique now), allowed pairs as the scene normalised them */
    qsort(po, n, sizeof *po, cmp_put_object);
    tdm_canon_object *cobj = malloc(sizeof *cobj * n);
    if (!cobj) goto nomem;
    for (size_t i = 0; i < n; i++) cobj[i] = po[i].canon;
    cpairs = malloc(sizeof *cpairs * (scene->n_allowed ? scene->n_allowed : 1));
    if (!cpairs) {
        free(cobj);
        goto nomem;
    }
    for (uint32_t i = 0; i < scene->n_allowed; i++) cpairs[i] = (tdm_canon_pair){scene->allowed[i].a, scene->allowed[i].b};
    rc = tdm_scene_canon_build(cobj, (uint32_t)n, cpairs, scene->n_allowed, &canon, &canon_len);
    free(cobj);
    if (rc != 0) goto nomem;
    uint8_t sid[TDM_ID_LEN];
    if (tdm_sha256(canon, canon_len, sid) != 0) goto nomem;
    if (p->ephemeral && tdm_ephemeral_id(sid) != 0) goto nomem;
    if (p->ephemeral && tdm__ephemeral_refuse(c, id, sid)) goto out;

    tdm_stored_scene *have = tdm_catalog_find_scene(srv->catalog, sid);
    if (have) {
        if (!claim_scene(c, id, have, p->name ? p->name : "")) send_scene_put(c, id, have, 0);
        goto out;
    }
    /* waiting for the writer: the canonical content and the scene (its objects, tables and checks) */
    uint64_t upload = 2 * (uint64_t)canon_len + (uint64_t)n * 256;
    if (tdm_conn_upload_admit(c, id, upload) != 0) goto out;
    op = calloc(1, sizeof *op);
    if (!op) goto nomem;
    if (tdm__put_owner(c, op, p->name ? p->name : "") != 0) goto nomem;
    sc = tdm_stored_scene_new(sid, p->name ? p->name : "", scene, meshes, (uint32_t)n);
    scene = NULL; /* owned by sc, or freed */
    if (!sc) goto nomem;
    sc->entry.ephemeral = p->ephemeral != 0;
    op->ephemeral = p->ephemeral != 0;
    op->kind = TDM_WRITER_SCENE_PUT;
    op->done = scene_put_done;
    op->owner = c;
    op->request_id = id;
    op->scene = sc; /* our reference */
    op->canon = canon;
    op->canon_len = canon_len;
    canon = NULL;
    memcpy(op->id, sid, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    op->started = uv_hrtime();
    tdm_upload_charge(srv, op, upload);
    tdm_conn_begin(c);
    tdm_writer_submit(srv->writer, op);
    op = NULL;
    goto out;
nomem:
    tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for a scene of %zu objects", n);
out:
    if (op) free(op->owners_rec);
    free(op);
    tdm_scene_destroy(scene);
    free(canon);
    free(cpairs);
    free(objs);
    free(po);
    free(meshes);
    free(allowed);
}

void tdm__scene_list(tdm_conn *c, uint64_t id)
{
    tdm_catalog *cat = c->srv->catalog;
    uint32_t n = 0;
    for (tdm_stored_scene *s = tdm_catalog_scenes(cat); s; s = s->next) n += tdm__owns(c, &s->entry);
    Tandem__V1__SceneInfo *infos = malloc(sizeof *infos * (n ? n : 1));
    Tandem__V1__SceneInfo **ptrs = malloc(sizeof *ptrs * (n ? n : 1));
    if (!infos || !ptrs) {
        free(infos);
        free(ptrs);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory listing %u scenes", n);
        return;
    }
    uint32_t i = 0;
    for (tdm_stored_scene *s = tdm_catalog_scenes(cat); s; s = s->next) {
        if (!tdm__owns(c, &s->entry)) continue;
        Tandem__V1__SceneInfo si = TANDEM__V1__SCENE_INFO__INIT;
        si.scene_id.data = s->entry.id;
        si.scene_id.len = TDM_ID_LEN;
        si.name = (char *)tdm__owned_name(c, &s->entry);
        si.n_objects = s->scene->n_objects;
        si.n_movable = s->scene->n_movable;
        si.movable = s->scene->movable;
        if (s->robot) {
            si.robot_id.data = s->robot->entry.id;
            si.robot_id.len = TDM_ID_LEN;
        }
        si.ephemeral = s->entry.ephemeral;
        infos[i] = si;
        ptrs[i] = &infos[i];
        i++;
    }
    Tandem__V1__SceneListReply r = TANDEM__V1__SCENE_LIST_REPLY__INIT;
    r.n_scenes = n;
    r.scenes = ptrs;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_SCENE_LIST, &r);
    free(infos);
    free(ptrs);
}

static void scene_delete_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("SceneDelete %s: %s", tdm__id_hex(op->id, hex), op->msg);
        /* back in the catalogue, unless already retired (ephemeral: submit_delete; never fails) */
        if (!op->scene->retired && !tdm_catalog_find_scene(srv->catalog, op->id))
            tdm_catalog_add_scene(srv->catalog, op->scene);
        else tdm_stored_scene_unref(op->scene);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else {
        tdm_log_info("deleted scene %s", tdm__id_hex(op->id, hex));
        tdm_stored_scene_retire(op->scene); /* its meshes may be deleted from now on */
        tdm_stored_scene_unref(op->scene);
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            tdm__send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_SCENE_DELETE, &d);
        }
    }
    free(op);
    tdm_conn_end(c);
}

/* A delete by one of a shared scene's owners: its record is written without it. */
static void scene_disown_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("SceneDelete %s: %s", tdm__id_hex(op->id, hex), op->msg);
        tdm__owners_undo(op, &op->scene->entry);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else {
        tdm_log_info("deleted scene %s for tenant %s (other tenants keep it)", tdm__id_hex(op->id, hex),
                     tdm_tenants_name(c->srv->tenants, op->tenant));
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            tdm__send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_SCENE_DELETE, &d);
        }
    }
    tdm_stored_scene_unref(op->scene);
    free(op->owners_rec);
    free(op->name);
    free(op);
    tdm_conn_end(c);
}

/* ---- ephemeral scenes: held by the connections that put them ---- */

/* A connection's holds: an open-addressing table (linear probing) keyed by scene id and serial. */
enum { HOLD_FREE = 0, HOLD_USED = 1, HOLD_GONE = 2 };

static uint32_t hold_hash(const uint8_t id[TDM_ID_LEN], uint64_t serial)
{
    uint64_t h;
    memcpy(&h, id, sizeof h); /* a SHA-256: its bytes are uniform already */
    h ^= serial * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h ^ h >> 32);
}

/* The slot holding (id, serial), or -1. */
static int64_t hold_find(const tdm_conn *c, const uint8_t id[TDM_ID_LEN], uint64_t serial)
{
    if (!c->cap_eph) return -1;
    uint32_t mask = c->cap_eph - 1;
    for (uint32_t i = hold_hash(id, serial) & mask, k = 0; k < c->cap_eph; i = (i + 1) & mask, k++) {
        const struct tdm_ephemeral_hold *h = &c->eph[i];
        if (h->state == HOLD_FREE) return -1;
        if (h->state == HOLD_USED && h->serial == serial && !memcmp(h->id, id, TDM_ID_LEN)) return i;
    }
    return -1;
}

/* Whether c holds some scene of this id (whatever its serial: a put of it is no new hold's worth). */
static int holds_id(const tdm_conn *c, const uint8_t id[TDM_ID_LEN])
{
    tdm_stored_scene *sc = tdm_catalog_find_scene(c->srv->catalog, id);
    return sc && sc->entry.ephemeral && hold_find(c, id, sc->scene->serial) >= 0;
}

/* The listed scene hold h names, or NULL (deleted, or deleted and put again: another serial). */
static tdm_stored_scene *held_scene(tdm_conn *c, const struct tdm_ephemeral_hold *h)
{
    tdm_stored_scene *sc = tdm_catalog_find_scene(c->srv->catalog, h->id);
    return sc && sc->entry.ephemeral && sc->scene->serial == h->serial ? sc : NULL;
}

static void hold_put(struct tdm_ephemeral_hold *t, uint32_t cap, const uint8_t id[TDM_ID_LEN], uint64_t serial)
{
    uint32_t i = hold_hash(id, serial) & (cap - 1);
    while (t[i].state == HOLD_USED) i = (i + 1) & (cap - 1);
    memcpy(t[i].id, id, TDM_ID_LEN);
    t[i].serial = serial;
    t[i].state = HOLD_USED;
}

/* Room for one more hold: the table rebuilt without what was let go of and the holds of scenes
 * deleted meanwhile (by another connection), grown when still over half full; rebuilt anyway with
 * `sweep` (n_eph then counts live holds only). 0 or -1 (memory). */
static int hold_room(tdm_conn *c, int sweep)
{
    if (!sweep && (uint64_t)(c->n_eph + c->n_eph_gone + 1) * 2 <= c->cap_eph) return 0;
    uint32_t live = 0;
    for (uint32_t i = 0; i < c->cap_eph; i++)
        if (c->eph[i].state == HOLD_USED && held_scene(c, &c->eph[i])) live++;
        else if (c->eph[i].state == HOLD_USED) c->eph[i].state = HOLD_GONE;
    uint32_t cap = 8;
    while (cap < 4 * (live + 1)) cap *= 2;
    struct tdm_ephemeral_hold *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (uint32_t i = 0; i < c->cap_eph; i++)
        if (c->eph[i].state == HOLD_USED) hold_put(t, cap, c->eph[i].id, c->eph[i].serial);
    free(c->eph);
    c->eph = t;
    c->cap_eph = cap;
    c->n_eph = live;
    c->n_eph_gone = 0;
    return 0;
}

int tdm__ephemeral_refuse(tdm_conn *c, uint64_t req, const uint8_t sid[TDM_ID_LEN])
{
    uint32_t max = c->srv->cfg->max_ephemeral;
    if (c->n_eph < max || holds_id(c, sid)) return 0;
    hold_room(c, 1); /* the holds of scenes deleted meanwhile do not count */
    if (c->n_eph < max) return 0;
    tdm_conn_send_error(c, req, E(LIMIT), "ephemeral", -1,
                        "this connection holds %u ephemeral scenes, max-ephemeral-scenes %u: delete some first",
                        c->n_eph, max);
    return 1;
}

void tdm__ephemeral_hold(tdm_conn *c, tdm_stored_scene *sc)
{
    tdm_srv_exclusive(c->srv);
    if (!sc->entry.ephemeral || hold_find(c, sc->entry.id, sc->scene->serial) >= 0) return;
    if (hold_room(c, 0) != 0) { /* it stays until deleted, or until the server restarts */
        char hex[2 * TDM_ID_LEN + 1];
        tdm_log_warn("conn %llu: no memory to hold ephemeral scene %s: it is not dropped when the connection "
                     "closes", (unsigned long long)c->id, tdm__id_hex(sc->entry.id, hex));
        return;
    }
    hold_put(c->eph, c->cap_eph, sc->entry.id, sc->scene->serial);
    c->n_eph++;
    sc->holders++;
}

/* The listed scene sc unlisted and its delete submitted to the writer for c (its reply to request
 * req, when c is still open, from scene_delete_done). 0, or -1 when out of memory (nothing done). */
static int submit_delete(tdm_conn *c, uint64_t req, tdm_stored_scene *sc)
{
    tdm_writer_op *op = calloc(1, sizeof *op);
    if (!op) return -1;
    tdm_catalog_remove_scene(c->srv->catalog, sc); /* the catalogue's reference passes to the op */
    /* An ephemeral scene has no file whose removal must come before its meshes' and robot's (the
     * writer's op only keeps the order of ops on its id, and cannot fail): they may be deleted from
     * the moment it is gone, as a client that saw it go expects. */
    if (sc->entry.ephemeral) tdm_stored_scene_retire(sc);
    op->kind = TDM_WRITER_SCENE_DELETE;
    op->done = scene_delete_done;
    op->owner = c;
    op->request_id = req;
    op->scene = sc;
    memcpy(op->id, sc->entry.id, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    tdm_conn_begin(c);
    tdm_writer_submit(c->srv->writer, op);
    return 0;
}

/* sc, listed, is held by no connection: deleted as by its last owner's SceneDelete, no reply (c is
 * the connection whose close or put let it go; its op keeps it until the writer is done). */
static void ephemeral_drop(tdm_conn *c, tdm_stored_scene *sc)
{
    char hex[2 * TDM_ID_LEN + 1];
    if (submit_delete(c, 0, sc) != 0)
        tdm_log_warn("no memory to drop ephemeral scene %s: it stays until deleted", tdm__id_hex(sc->entry.id, hex));
    else
        tdm_log_debug("ephemeral scene %s: no connection holds it: dropped", tdm__id_hex(sc->entry.id, hex));
}

void tdm__ephemeral_settle(tdm_conn *c, tdm_stored_scene *sc)
{
    tdm_srv_exclusive(c->srv);
    if (!sc || !sc->entry.ephemeral || sc->holders > 0) return;
    if (tdm_catalog_find_scene(c->srv->catalog, sc->entry.id) == sc) ephemeral_drop(c, sc);
}

void tdm__ephemeral_release(tdm_conn *c)
{
    if (!c->n_eph) return;
    tdm_srv_exclusive(c->srv);
    for (uint32_t i = 0; i < c->cap_eph; i++) {
        if (c->eph[i].state != HOLD_USED) continue;
        c->eph[i].state = HOLD_GONE;
        tdm_stored_scene *sc = held_scene(c, &c->eph[i]);
        if (!sc || sc->holders == 0) continue;
        if (--sc->holders == 0) ephemeral_drop(c, sc);
    }
    c->n_eph = 0;
    c->n_eph_gone = 0;
    memset(c->eph, 0, c->cap_eph * sizeof *c->eph);
}

void tdm__scene_delete(tdm_conn *c, uint64_t id, const Tandem__V1__SceneDelete *d)
{
    tdm_server *srv = c->srv;
    uint8_t sid[TDM_ID_LEN];
    if (tdm__get_id(c, id, &d->scene_id, "scene_id", -1, sid) != 0) return;
    tdm_stored_scene *sc = tdm__find_scene(c, sid);
    if (!sc) {
        tdm_conn_send_error(c, id, E(UNKNOWN_SCENE), "scene_id", -1, "no stored scene has this id");
        return;
    }
    int64_t at = sc->entry.ephemeral ? hold_find(c, sid, sc->scene->serial) : -1;
    if (at >= 0) { /* this connection lets go of it */
        c->eph[at].state = HOLD_GONE;
        c->n_eph--;
        c->n_eph_gone++;
        sc->holders--;
    }
    /* others own it too: it stays theirs (an ephemeral scene while a connection holds it) */
    if (sc->entry.owners.n > 1 && !(sc->entry.ephemeral && sc->holders == 0)) {
        tdm_writer_op *op = tdm__owners_change(c, id, &sc->entry, sc->name, 0, NULL);
        if (!op) return;
        op->done = scene_disown_done;
        op->scene = sc;
        tdm_stored_scene_ref(sc);
        tdm_conn_begin(c);
        tdm_writer_submit(srv->writer, op);
        return;
    }
    if (submit_delete(c, id, sc) != 0) tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
}

