#include "request.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <openssl/crypto.h>

#include "log.h"
#include "stats.h"

#define PROTOCOL_VERSION 1u
#define UNIT_TOLERANCE 1e-3

typedef Tandem__V1__ErrorCode ecode;
#define E(x) TANDEM__V1__ERROR_CODE__ERROR_##x

static uint64_t now_ns(void) { return uv_hrtime(); }

/* TDM_E* (geom, workpile, storage) to the wire's error codes. */
static ecode code_of(int rc)
{
    switch (rc) {
    case TDM_EINVAL: return E(BAD_REQUEST);
    case TDM_ENOMEM: return E(NO_MEMORY);
    case TDM_ERANGE: return E(LIMIT);
    case TDM_ENONFINITE: return E(NON_FINITE);
    case TDM_EINDEX: return E(BAD_INDEX);
    case TDM_EEMPTY: return E(EMPTY);
    case TDM_EIO: return E(STORAGE);
    case TDM_EGPUMEM: return E(NO_MEMORY);
    default: return E(INTERNAL);
    }
}

static Tandem__V1__Engine engine_enum(tdm_backend_kind k)
{
    switch (k) {
    case TDM_BACKEND_CPU: return TANDEM__V1__ENGINE__ENGINE_CPU;
    case TDM_BACKEND_GPU: return TANDEM__V1__ENGINE__ENGINE_GPU;
    case TDM_BACKEND_HYBRID: return TANDEM__V1__ENGINE__ENGINE_HYBRID;
    default: return TANDEM__V1__ENGINE__ENGINE_UNSPECIFIED;
    }
}

static void send_body(tdm_conn *c, uint64_t id, Tandem__V1__Reply__BodyCase body_case, void *msg)
{
    Tandem__V1__Reply r = TANDEM__V1__REPLY__INIT;
    r.id = id;
    r.body_case = body_case;
    r.hello = msg; /* every member of the oneof is a pointer in the same union */
    tdm_conn_send(c, &r);
}

static const char *id_hex(const uint8_t *id, char buf[2 * TDM_ID_LEN + 1])
{
    tdm_id_hex(id, buf);
    return buf;
}

/* Names: UTF-8 within max_name_bytes. 0, or -1 after replying. */
static int check_name(tdm_conn *c, uint64_t id, const char *name, const char *field)
{
    uint32_t max = c->srv->cfg->max_name_bytes;
    if (!name) return 0;
    if (strlen(name) > max) {
        tdm_conn_send_error(c, id, E(LIMIT), field, -1, "%s is %zu bytes, over max_name_bytes %u", field,
                            strlen(name), max);
        return -1;
    }
    if (!tdm_utf8_valid(name, max)) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), field, -1, "%s is not valid UTF-8", field);
        return -1;
    }
    return 0;
}

/* Reads a 32-byte id field. 0, or -1 after replying. */
static int get_id(tdm_conn *c, uint64_t id, const ProtobufCBinaryData *b, const char *field, int64_t index,
                  uint8_t out[TDM_ID_LEN])
{
    if (b->len != TDM_ID_LEN) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), field, index, "%s must be %d bytes, not %zu", field, TDM_ID_LEN,
                            b->len);
        return -1;
    }
    memcpy(out, b->data, TDM_ID_LEN);
    return 0;
}

/* A pose from 7 numbers: finite, unit quaternion within 1e-3 (then normalised).
 * Returns 0, E(NON_FINITE) or E(NOT_UNIT). normalised (optional) receives the
 * numbers with the quaternion normalised. */
static ecode pose_xform(const double p[7], tdm_xform *x, double normalised[7])
{
    for (int i = 0; i < 7; i++)
        if (!isfinite(p[i])) return E(NON_FINITE);
    tdm_quat q = {p[3], p[4], p[5], p[6]};
    double n = tdm_quat_norm(q);
    if (!(fabs(n - 1.0) <= UNIT_TOLERANCE)) return E(NOT_UNIT);
    q.x /= n;
    q.y /= n;
    q.z /= n;
    q.w /= n;
    *x = tdm_xform_from_pose(tdm_d3(p[0], p[1], p[2]), q);
    if (normalised) {
        normalised[0] = p[0];
        normalised[1] = p[1];
        normalised[2] = p[2];
        normalised[3] = q.x;
        normalised[4] = q.y;
        normalised[5] = q.z;
        normalised[6] = q.w;
    }
    return 0;
}

/* ---- Hello ---- */

static int token_equal(const char *a, const char *b)
{
    /* compare digests, so that neither the contents nor the length leak through timing */
    uint8_t da[TDM_ID_LEN], db[TDM_ID_LEN];
    if (tdm_sha256(a, strlen(a), da) != 0 || tdm_sha256(b, strlen(b), db) != 0) return 0;
    return CRYPTO_memcmp(da, db, TDM_ID_LEN) == 0;
}

static void do_hello(tdm_conn *c, uint64_t id, const Tandem__V1__Hello *h)
{
    const tdm_config *cfg = c->srv->cfg;
    if (h->protocol_version != PROTOCOL_VERSION) {
        tdm_conn_send_error(c, id, E(UNSUPPORTED_VERSION), "protocol_version", -1,
                            "protocol version %u is not supported: this server (tandemd %s) speaks version %u",
                            h->protocol_version, TDM_VERSION, PROTOCOL_VERSION);
        return;
    }
    if (cfg->auth_token[0] && !token_equal(h->auth_token ? h->auth_token : "", cfg->auth_token)) {
        tdm_log_warn("conn %llu (%s): wrong auth token; closing", (unsigned long long)c->id, c->peer);
        tdm_conn_send_error(c, id, E(UNAUTHENTICATED), "auth_token", -1, "wrong or missing auth token");
        tdm_conn_drain(c, "wrong auth token");
        return;
    }
    if (check_name(c, id, h->client_name, "client_name") != 0) return;
    tdm_log_sanitize(h->client_name ? h->client_name : "", SIZE_MAX, c->client_name, sizeof c->client_name);
    if (!c->authed)
        tdm_log_info("conn %llu (%s): hello from \"%s\"", (unsigned long long)c->id, c->peer, c->client_name);
    c->authed = 1;

    Tandem__V1__Limits l = TANDEM__V1__LIMITS__INIT;
    l.max_frame_bytes = cfg->max_frame_bytes;
    l.max_vertices = cfg->max_vertices;
    l.max_triangles = cfg->max_triangles;
    l.max_objects = cfg->max_objects;
    l.max_queries = cfg->max_queries;
    l.max_contacts = cfg->max_contacts;
    l.max_pipelined = cfg->max_pipelined;
    l.max_connections = cfg->max_connections;
    l.max_meshes_bytes = cfg->max_meshes_bytes;
    l.max_reply_pairs = cfg->max_reply_pairs;
    l.max_query_tasks = cfg->max_query_tasks;
    Tandem__V1__HelloReply r = TANDEM__V1__HELLO_REPLY__INIT;
    r.protocol_version = PROTOCOL_VERSION;
    r.server_version = TDM_VERSION;
    r.engine = engine_enum(tdm_sched_backend(c->srv->engine));
    r.limits = &l;
    send_body(c, id, TANDEM__V1__REPLY__BODY_HELLO, &r);
}

/* ---- meshes ---- */

/* Most bytes a mesh can take once stored: canonical content and a tree of at
 * most 2n - 1 nodes, 40 bytes of triangle data per triangle, its header. */
static uint64_t mesh_bytes_bound(uint64_t nv, uint64_t nt)
{
    return TDM_MESH_CANON_PREFIX_LEN + 12 * nv + 12 * nt + 64 + 64 * (2 * nt) + 40 * nt;
}

static void mesh_put_done(tdm_storage_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    tdm_store_unreserve(srv->store, op->reserved);
    srv->upload_bytes -= op->upload_bytes;
    char hex[2 * TDM_ID_LEN + 1];
    int created = 0;
    if (op->rc != TDM_OK) {
        if (op->rc == TDM_EIO) tdm_log_error("MeshPut: %s", op->msg);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, code_of(op->rc), op->field, op->index, "%s", op->msg);
    } else {
        if (op->mesh) {
            if (tdm_store_find_mesh(srv->store, op->id)) {
                tdm_stored_mesh_unref(op->mesh); /* stored meanwhile: ours is a duplicate */
            } else {
                tdm_store_add_mesh(srv->store, op->mesh); /* takes our reference */
                created = 1;
                tdm_log_info("stored mesh %s \"%s\": %u vertices, %u triangles, %llu bytes, %.1f ms",
                             id_hex(op->id, hex), op->mesh->name, op->n_verts, op->n_tris,
                             (unsigned long long)op->mesh->bytes, (double)(now_ns() - op->started) / 1e6);
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
            send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_MESH_PUT, &r);
        }
    }
    tdm_arena_free(op->arena);
    free(op);
    tdm_conn_end(c);
}

static void do_mesh_put(tdm_conn *c, uint64_t id, const Tandem__V1__MeshPut *p)
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
    if (check_name(c, id, p->name, "name") != 0) return;
    /* the decoded request waits in memory for the storage thread: bound the sum */
    uint64_t upload = tdm_arena_allocated(c->arena), pending = srv->upload_bytes;
    if (pending > 0 && (pending >= cfg->max_upload_bytes || upload > cfg->max_upload_bytes - pending)) {
        tdm_conn_send_error(c, id, E(BUSY), "", -1,
                            "%llu bytes of meshes are waiting to be stored (max_upload_bytes %llu); retry later",
                            (unsigned long long)srv->upload_bytes, (unsigned long long)cfg->max_upload_bytes);
        return;
    }

    tdm_storage_op *op = calloc(1, sizeof *op);
    if (!op) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    op->upload_bytes = upload;
    srv->upload_bytes += upload;
    uint64_t need = mesh_bytes_bound(nv, nt);
    uint64_t used = tdm_store_bytes(srv->store) + tdm_store_reserved(srv->store);
    if (used > cfg->max_meshes_bytes || need > cfg->max_meshes_bytes - used) {
        op->over_budget = 1; /* still sent: an identical stored mesh needs no room */
        snprintf(op->msg, sizeof op->msg,
                 "storing this mesh may take %llu bytes; %llu of max_meshes_bytes %llu are in use",
                 (unsigned long long)need, (unsigned long long)used, (unsigned long long)cfg->max_meshes_bytes);
    } else {
        op->reserved = need;
        tdm_store_reserve(srv->store, need);
    }
    op->kind = TDM_STORAGE_MESH_PUT;
    op->done = mesh_put_done;
    op->owner = c;
    op->request_id = id;
    op->started = now_ns();
    op->arena = c->arena; /* the decoded request travels with its arena */
    c->arena = NULL;
    op->put = p;
    op->limits.max_vertices = cfg->max_vertices;
    op->limits.max_triangles = cfg->max_triangles;
    op->field = "";
    op->index = -1;
    tdm_conn_begin(c);
    tdm_storage_submit(srv->storage, op);
}

static void do_mesh_list(tdm_conn *c, uint64_t id)
{
    tdm_store *st = c->srv->store;
    uint32_t n = tdm_store_n_meshes(st);
    Tandem__V1__MeshInfo *infos = malloc(sizeof *infos * (n ? n : 1));
    Tandem__V1__MeshInfo **ptrs = malloc(sizeof *ptrs * (n ? n : 1));
    if (!infos || !ptrs) {
        free(infos);
        free(ptrs);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory listing %u meshes", n);
        return;
    }
    uint32_t i = 0;
    for (tdm_stored_mesh *m = tdm_store_meshes(st); m; m = m->next, i++) {
        Tandem__V1__MeshInfo mi = TANDEM__V1__MESH_INFO__INIT;
        mi.mesh_id.data = m->id;
        mi.mesh_id.len = TDM_ID_LEN;
        mi.name = m->name;
        mi.n_vertices = m->n_verts;
        mi.n_triangles = m->n_tris;
        mi.scenes = m->scenes;
        infos[i] = mi;
        ptrs[i] = &infos[i];
    }
    Tandem__V1__MeshListReply r = TANDEM__V1__MESH_LIST_REPLY__INIT;
    r.n_meshes = n;
    r.meshes = ptrs;
    send_body(c, id, TANDEM__V1__REPLY__BODY_MESH_LIST, &r);
    free(infos);
    free(ptrs);
}

static void mesh_delete_done(tdm_storage_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("MeshDelete %s: %s", id_hex(op->id, hex), op->msg);
        /* still on disk: back into the store, unless a put brought it back already */
        if (!tdm_store_find_mesh(srv->store, op->id)) tdm_store_add_mesh(srv->store, op->mesh);
        else tdm_stored_mesh_unref(op->mesh);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else {
        tdm_log_info("deleted mesh %s", id_hex(op->id, hex));
        tdm_stored_mesh_unref(op->mesh); /* queries still using it keep it alive */
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_MESH_DELETE, &d);
        }
    }
    free(op);
    tdm_conn_end(c);
}

static void do_mesh_delete(tdm_conn *c, uint64_t id, const Tandem__V1__MeshDelete *d)
{
    tdm_server *srv = c->srv;
    uint8_t mid[TDM_ID_LEN];
    if (get_id(c, id, &d->mesh_id, "mesh_id", -1, mid) != 0) return;
    tdm_stored_mesh *m = tdm_store_find_mesh(srv->store, mid);
    if (!m) {
        tdm_conn_send_error(c, id, E(UNKNOWN_MESH), "mesh_id", -1, "no stored mesh has this id");
        return;
    }
    if (m->scenes > 0) {
        tdm_conn_send_error(c, id, E(MESH_IN_USE), "mesh_id", -1, "the mesh is used by %u scene%s", m->scenes,
                            m->scenes == 1 ? "" : "s");
        return;
    }
    tdm_storage_op *op = calloc(1, sizeof *op);
    if (!op) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    tdm_store_remove_mesh(srv->store, m); /* the store's reference passes to the op */
    op->kind = TDM_STORAGE_MESH_DELETE;
    op->done = mesh_delete_done;
    op->owner = c;
    op->request_id = id;
    op->mesh = m;
    memcpy(op->id, mid, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    tdm_conn_begin(c);
    tdm_storage_submit(srv->storage, op);
}

/* ---- scenes ---- */

static void send_scene_put(tdm_conn *c, uint64_t id, const tdm_stored_scene *sc, int created)
{
    Tandem__V1__ScenePutReply r = TANDEM__V1__SCENE_PUT_REPLY__INIT;
    r.scene_id.data = (uint8_t *)sc->id;
    r.scene_id.len = TDM_ID_LEN;
    r.created = created;
    r.n_movable = sc->scene->n_movable;
    r.movable = sc->scene->movable;
    send_body(c, id, TANDEM__V1__REPLY__BODY_SCENE_PUT, &r);
}

static void scene_put_done(tdm_storage_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    tdm_stored_scene *sc = op->scene;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("ScenePut: %s", op->msg);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, code_of(op->rc), op->field, op->index, "%s", op->msg);
        tdm_stored_scene_retire(sc);
        tdm_stored_scene_unref(sc);
    } else {
        tdm_stored_scene *have = tdm_store_find_scene(srv->store, op->id);
        int created = !have && !op->exists;
        if (!have) {
            tdm_store_add_scene(srv->store, sc); /* takes our reference */
            if (created)
                tdm_log_info("stored scene %s \"%s\": %u objects, %u movable, %u checked pairs",
                             id_hex(op->id, hex), sc->name, sc->scene->n_objects, sc->scene->n_movable,
                             sc->scene->n_checks);
            have = sc;
        } else {
            tdm_stored_scene_retire(sc);
        }
        if (tdm_conn_alive(c)) send_scene_put(c, op->request_id, have, created);
        if (have != sc) tdm_stored_scene_unref(sc);
    }
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

static void do_scene_put(tdm_conn *c, uint64_t id, const Tandem__V1__ScenePut *p)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (check_name(c, id, p->name, "name") != 0) return;
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
    tdm_storage_op *op = NULL;
    if (!objs || !po || !meshes || !allowed) goto nomem;
    for (size_t i = 0; i < n; i++) {
        const Tandem__V1__SceneObject *o = p->objects[i];
        uint8_t mid[TDM_ID_LEN];
        if (get_id(c, id, &o->mesh_id, "objects", (int64_t)i, mid) != 0) goto out;
        tdm_stored_mesh *m = tdm_store_find_mesh(srv->store, mid);
        if (!m) {
            char hex[2 * TDM_ID_LEN + 1];
            tdm_conn_send_error(c, id, E(UNKNOWN_MESH), "objects", (int64_t)i, "object %zu: no stored mesh has id %s",
                                i, id_hex(mid, hex));
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
            ecode e = pose_xform(raw, &objs[i].pose, po[i].canon.pose);
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
        tdm_conn_send_error(c, id, code_of(rc), serr.field, serr.index, "%s", serr.msg);
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

    tdm_stored_scene *have = tdm_store_find_scene(srv->store, sid);
    if (have) {
        send_scene_put(c, id, have, 0);
        goto out;
    }
    op = calloc(1, sizeof *op);
    if (!op) goto nomem;
    sc = tdm_stored_scene_new(sid, p->name ? p->name : "", scene, meshes, (uint32_t)n);
    scene = NULL; /* owned by sc, or freed */
    if (!sc) goto nomem;
    op->kind = TDM_STORAGE_SCENE_PUT;
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
    op->started = now_ns();
    tdm_conn_begin(c);
    tdm_storage_submit(srv->storage, op);
    op = NULL;
    goto out;
nomem:
    tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for a scene of %zu objects", n);
out:
    free(op);
    tdm_scene_destroy(scene);
    free(canon);
    free(cpairs);
    free(objs);
    free(po);
    free(meshes);
    free(allowed);
}

static void do_scene_list(tdm_conn *c, uint64_t id)
{
    tdm_store *st = c->srv->store;
    uint32_t n = tdm_store_n_scenes(st);
    Tandem__V1__SceneInfo *infos = malloc(sizeof *infos * (n ? n : 1));
    Tandem__V1__SceneInfo **ptrs = malloc(sizeof *ptrs * (n ? n : 1));
    if (!infos || !ptrs) {
        free(infos);
        free(ptrs);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory listing %u scenes", n);
        return;
    }
    uint32_t i = 0;
    for (tdm_stored_scene *s = tdm_store_scenes(st); s; s = s->next, i++) {
        Tandem__V1__SceneInfo si = TANDEM__V1__SCENE_INFO__INIT;
        si.scene_id.data = s->id;
        si.scene_id.len = TDM_ID_LEN;
        si.name = s->name;
        si.n_objects = s->scene->n_objects;
        si.n_movable = s->scene->n_movable;
        si.movable = s->scene->movable;
        infos[i] = si;
        ptrs[i] = &infos[i];
    }
    Tandem__V1__SceneListReply r = TANDEM__V1__SCENE_LIST_REPLY__INIT;
    r.n_scenes = n;
    r.scenes = ptrs;
    send_body(c, id, TANDEM__V1__REPLY__BODY_SCENE_LIST, &r);
    free(infos);
    free(ptrs);
}

static void scene_delete_done(tdm_storage_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("SceneDelete %s: %s", id_hex(op->id, hex), op->msg);
        if (!tdm_store_find_scene(srv->store, op->id)) tdm_store_add_scene(srv->store, op->scene);
        else tdm_stored_scene_unref(op->scene);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else {
        tdm_log_info("deleted scene %s", id_hex(op->id, hex));
        tdm_stored_scene_retire(op->scene); /* its meshes may be deleted from now on */
        tdm_stored_scene_unref(op->scene);
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_SCENE_DELETE, &d);
        }
    }
    free(op);
    tdm_conn_end(c);
}

static void do_scene_delete(tdm_conn *c, uint64_t id, const Tandem__V1__SceneDelete *d)
{
    tdm_server *srv = c->srv;
    uint8_t sid[TDM_ID_LEN];
    if (get_id(c, id, &d->scene_id, "scene_id", -1, sid) != 0) return;
    tdm_stored_scene *sc = tdm_store_find_scene(srv->store, sid);
    if (!sc) {
        tdm_conn_send_error(c, id, E(UNKNOWN_SCENE), "scene_id", -1, "no stored scene has this id");
        return;
    }
    tdm_storage_op *op = calloc(1, sizeof *op);
    if (!op) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    tdm_store_remove_scene(srv->store, sc); /* the store's reference passes to the op */
    op->kind = TDM_STORAGE_SCENE_DELETE;
    op->done = scene_delete_done;
    op->owner = c;
    op->request_id = id;
    op->scene = sc;
    memcpy(op->id, sid, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    tdm_conn_begin(c);
    tdm_storage_submit(srv->storage, op);
}

/* ---- queries ---- */

static void free_job(tdm_query_job *j)
{
    tdm_stored_scene_unref(j->scene_ref);
    free(j->pairs);
    free(j);
}

/* The reply of a finished job, framed; touches no connection, so it runs on
 * the dispatcher thread that ran the job (tdm_request_query_packed). NULL when
 * out of memory or too large. */
static tdm_frame *pack_query_reply(const tdm_query_job *j, int *too_large)
{
    const tdm_sched_contact *pairs = j->pairs;
    size_t n = tdm_query_reply_bound(j->results, j->n_queries, pairs, j->max_contacts);
    *too_large = n > UINT32_MAX - 4; /* request validation keeps replies far below */
    uint8_t *body;
    tdm_frame *f = *too_large ? NULL : tdm_frame_new(n, &body);
    if (f) tdm_frame_trim(f, tdm_query_reply_write(body, j->request_id, j->results, j->n_queries, pairs, j->max_contacts));
    return f;
}

/* Loop thread: sends what a finished job has (its reply frame, or the error it
 * got) and lets it go. */
static void finish_job(tdm_query_job *j, tdm_frame *f, int too_large)
{
    tdm_conn *c = j->owner;
    if (!tdm_conn_alive(c)) {
        tdm_frame_free(f);
    } else if (j->rc != TDM_OK) {
        tdm_conn_send_error(c, j->request_id, code_of(j->rc), "", -1, "the engine failed: %s", tdm_strerror(j->rc));
    } else if (f) {
        tdm_conn_send_frame(c, f);
    } else if (too_large) {
        tdm_conn_send_error(c, j->request_id, E(INTERNAL), "", -1, "the reply is too large to frame");
    } else {
        tdm_conn_send_error(c, j->request_id, E(NO_MEMORY), "", -1, "out of memory for the reply");
    }
    if (j->rc == TDM_OK) c->srv->counters.queries += j->n_queries;
    free_job(j);
    tdm_conn_end(c);
}

/* Requests of at least this many queries have their poses converted on
 * libuv's thread pool (UV_THREADPOOL_SIZE threads, 4 unless set), not on the
 * loop thread: with 64 clients sending 1024-pose requests, conversion and
 * reply packing took ~60 % of a loop that was the daemon's bottleneck (replies
 * are now packed by the dispatcher thread that ran them). Smaller ones stay on
 * the loop, where a thread hand-off would cost more latency than the work. */
#define OFFLOAD_QUERIES 64

/* libuv's pool threads are named on their first job here, so that per-thread
 * profiles (top -H, bench/thread_cpu.sh) tell them from the loop thread. */
static void name_pool_thread(void)
{
    static _Thread_local int named;
    if (!named) prctl(PR_SET_NAME, "tdm-pool");
    named = 1;
}

void tdm_request_query_packed(tdm_query_job *j, void *data)
{
    (void)data;
    if (j->rc == TDM_OK) j->frame = pack_query_reply(j, &j->frame_too_large);
}

void tdm_request_query_done(tdm_query_job *j, void *data)
{
    (void)data;
    if (j->rc == TDM_OK && !j->frame && !j->frame_too_large) /* packed where it ran, unless memory ran out */
        j->frame = pack_query_reply(j, &j->frame_too_large);
    tdm_frame *f = j->frame;
    j->frame = NULL;
    finish_job(j, f, j->frame_too_large);
}

/* Converts a job's poses from the numbers sent; on a bad pose, records which
 * (j->bad_*) and returns its code. */
static ecode convert_poses(tdm_query_job *j, const double *p)
{
    uint32_t m = j->scene->n_movable;
    for (size_t i = 0; i < j->n_queries; i++)
        for (uint32_t k = 0; k < m; k++, p += 7) {
            ecode e = pose_xform(p, &j->poses[i * m + k], NULL);
            if (e == 0) continue;
            j->bad_query = i;
            j->bad_object = k;
            j->bad_norm = tdm_quat_norm((tdm_quat){p[3], p[4], p[5], p[6]});
            return e;
        }
    return 0;
}

static void send_bad_pose(tdm_conn *c, const tdm_query_job *j, ecode e)
{
    uint32_t object = j->scene->movable[j->bad_object];
    if (e == E(NON_FINITE))
        tdm_conn_send_error(c, j->request_id, e, "poses", (int64_t)j->bad_query,
                            "query %zu, object %u: the pose has a non-finite number", j->bad_query, object);
    else
        tdm_conn_send_error(c, j->request_id, e, "poses", (int64_t)j->bad_query,
                            "query %zu, object %u: the quaternion has norm %.6g, not within 1e-3 of 1", j->bad_query,
                            object, j->bad_norm);
}

static void convert_work(uv_work_t *w)
{
    name_pool_thread();
    tdm_query_job *j = w->data;
    j->bad_code = convert_poses(j, j->raw);
}

static void convert_after(uv_work_t *w, int status)
{
    (void)status;
    tdm_query_job *j = w->data;
    tdm_conn *c = j->owner;
    if (j->bad_code == 0 && tdm_conn_alive(c)) {
        tdm_dispatch_submit(c->srv->dispatch, j);
        return;
    }
    if (tdm_conn_alive(c)) send_bad_pose(c, j, (ecode)j->bad_code); /* else nobody waits for an answer */
    free_job(j);
    tdm_conn_end(c);
}

static void do_query(tdm_conn *c, uint64_t id, const Tandem__V1__Query *q)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    uint8_t sid[TDM_ID_LEN];
    if (get_id(c, id, &q->scene_id, "scene_id", -1, sid) != 0) return;
    tdm_stored_scene *sc = tdm_store_find_scene(srv->store, sid);
    if (!sc) {
        tdm_conn_send_error(c, id, E(UNKNOWN_SCENE), "scene_id", -1, "no stored scene has this id");
        return;
    }
    if (q->mode != TANDEM__V1__MODE__MODE_BOOL && q->mode != TANDEM__V1__MODE__MODE_CONTACTS) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "mode", -1, "mode %d is not MODE_BOOL (0) or MODE_CONTACTS (1)",
                            (int)q->mode);
        return;
    }
    const tdm_scene *s = sc->scene;
    uint32_t m = s->n_movable;
    size_t per = 7 * (size_t)m;
    if (q->n_poses == 0 || q->n_poses % per) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "poses", -1,
                            "poses has %zu numbers: it needs a positive multiple of %zu (7 per movable object, %u "
                            "movable)", q->n_poses, per, m);
        return;
    }
    size_t n = q->n_poses / per;
    if (n > cfg->max_queries) {
        tdm_conn_send_error(c, id, E(LIMIT), "poses", -1, "%zu queries, over max_queries %u", n, cfg->max_queries);
        return;
    }
    int contacts = q->mode == TANDEM__V1__MODE__MODE_CONTACTS;
    uint32_t max_contacts = 1;
    if (contacts) {
        if (q->max_contacts > cfg->max_contacts) {
            tdm_conn_send_error(c, id, E(LIMIT), "max_contacts", -1, "max_contacts %u is over the server's %u",
                                q->max_contacts, cfg->max_contacts);
            return;
        }
        max_contacts = q->max_contacts ? q->max_contacts : cfg->max_contacts;
    }
    uint64_t tasks = (uint64_t)n * s->n_checks;
    if (tasks > cfg->max_query_tasks) {
        tdm_conn_send_error(c, id, E(LIMIT), "poses", -1,
                            "%zu queries x %u checked object pairs = %llu tasks, over max_query_tasks %llu", n,
                            s->n_checks, (unsigned long long)tasks, (unsigned long long)cfg->max_query_tasks);
        return;
    }
    int want_pairs = contacts && q->want_pairs;
    uint64_t reserve = want_pairs ? (uint64_t)n * max_contacts : 0;
    if (reserve > cfg->max_reply_pairs) {
        tdm_conn_send_error(c, id, E(LIMIT), "want_pairs", -1,
                            "want_pairs with %zu queries x max_contacts %u could return %llu pairs, over the server's "
                            "max_reply_pairs %u: lower max_contacts or send fewer queries",
                            n, max_contacts, (unsigned long long)reserve, cfg->max_reply_pairs);
        return;
    }

    /* one allocation: the job, the transforms, the results and, when they are
     * converted off the loop, a copy of the numbers sent (the frame they are in
     * is reused by the next request) */
    int offload = n >= OFFLOAD_QUERIES;
    size_t xoff = (sizeof(tdm_query_job) + 15) & ~(size_t)15;
    size_t roff = xoff + n * m * sizeof(tdm_xform);
    size_t poff = (roff + n * sizeof(tdm_sched_result) + 7) & ~(size_t)7;
    tdm_query_job *j = malloc(poff + (offload ? q->n_poses * sizeof(double) : 0));
    if (!j) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for %zu queries", n);
        return;
    }
    memset(j, 0, sizeof *j);
    j->poses = (tdm_xform *)(void *)((char *)j + xoff);
    j->results = (tdm_sched_result *)(void *)((char *)j + roff);
    j->scene = s;
    j->n_queries = (uint32_t)n;
    j->request_id = id;
    if (offload) {
        j->raw = (double *)(void *)((char *)j + poff);
        memcpy(j->raw, q->poses, q->n_poses * sizeof(double));
    } else {
        ecode e = convert_poses(j, q->poses);
        if (e != 0) {
            send_bad_pose(c, j, e);
            free(j);
            return;
        }
    }
    if (want_pairs) {
        /* never touched beyond the pairs found: pages stay unbacked */
        j->pairs = malloc((size_t)reserve * sizeof *j->pairs);
        if (!j->pairs) {
            free(j);
            tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for %llu pairs", (unsigned long long)reserve);
            return;
        }
    }
    j->owner = c;
    j->scene_ref = sc;
    tdm_stored_scene_ref(sc); /* a SceneDelete meanwhile must not free what the engine reads */
    j->mode = contacts ? TDM_MODE_CONTACTS : TDM_MODE_BOOL;
    j->max_contacts = max_contacts;
    j->n_tasks = tasks;
    j->pairs_reserved = reserve;
    j->rc = TDM_OK;
    tdm_conn_begin(c);
    if (offload) {
        j->work.data = j;
        if (uv_queue_work(srv->loop, &j->work, convert_work, convert_after) == 0) return;
        j->bad_code = convert_poses(j, j->raw); /* cannot happen: uv_queue_work fails only without a callback */
        convert_after(&j->work, 0);
        return;
    }
    tdm_dispatch_submit(srv->dispatch, j);
}

/* ---- stats ---- */

static void do_stats(tdm_conn *c, uint64_t id)
{
    Tandem__V1__StatsReply r = TANDEM__V1__STATS_REPLY__INIT;
    char detail[512];
    tdm_stats_fill(c->srv, &r, detail, sizeof detail);
    send_body(c, id, TANDEM__V1__REPLY__BODY_STATS, &r);
}

/* ---- entry points ---- */

void tdm_request_handle(tdm_conn *c, const uint8_t *frame, size_t len)
{
    tdm_server *srv = c->srv;
    if (!c->arena && !(c->arena = tdm_arena_new())) {
        tdm_conn_send_error(c, 0, E(NO_MEMORY), "frame", -1, "out of memory decoding a frame");
        return;
    }
    const char *why = NULL;
    Tandem__V1__Request *req = tdm_decode_request(c->arena, frame, len, &why);
    if (!req) {
        tdm_conn_send_error(c, 0, E(BAD_REQUEST), "frame", -1, "%s", why);
        return;
    }
    srv->counters.requests++;
    uint64_t id = req->id;
    if (req->body_case == TANDEM__V1__REQUEST__BODY__NOT_SET) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "body", -1, "the request has no body (or one this server does not know)");
        return;
    }
    if (srv->shutting_down) {
        tdm_conn_send_error(c, id, E(BUSY), "", -1, "the server is shutting down; retry later");
        return;
    }
    if (!c->authed && req->body_case != TANDEM__V1__REQUEST__BODY_HELLO) {
        tdm_conn_send_error(c, id, E(UNAUTHENTICATED), "hello", -1, "the first request on a connection must be Hello");
        return;
    }
    switch (req->body_case) {
    case TANDEM__V1__REQUEST__BODY_HELLO: do_hello(c, id, req->hello); break;
    case TANDEM__V1__REQUEST__BODY_MESH_PUT: do_mesh_put(c, id, req->mesh_put); break;
    case TANDEM__V1__REQUEST__BODY_MESH_LIST: do_mesh_list(c, id); break;
    case TANDEM__V1__REQUEST__BODY_MESH_DELETE: do_mesh_delete(c, id, req->mesh_delete); break;
    case TANDEM__V1__REQUEST__BODY_SCENE_PUT: do_scene_put(c, id, req->scene_put); break;
    case TANDEM__V1__REQUEST__BODY_SCENE_LIST: do_scene_list(c, id); break;
    case TANDEM__V1__REQUEST__BODY_SCENE_DELETE: do_scene_delete(c, id, req->scene_delete); break;
    case TANDEM__V1__REQUEST__BODY_QUERY: do_query(c, id, req->query); break;
    case TANDEM__V1__REQUEST__BODY_STATS: do_stats(c, id); break;
    default:
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "body", -1, "unknown request body %d", (int)req->body_case);
        break;
    }
}

void tdm_request_refuse(tdm_conn *c, const uint8_t *frame, size_t len)
{
    uint64_t id = 0;
    if (c->arena || (c->arena = tdm_arena_new())) {
        const char *why;
        Tandem__V1__Request *req = tdm_decode_request(c->arena, frame, len, &why);
        if (req) id = req->id;
    }
    tdm_conn_send_error(c, id, E(BUSY), "", -1, "the server is shutting down; retry later");
}
