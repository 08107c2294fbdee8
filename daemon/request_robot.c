/* RobotPut, RobotList, RobotDelete, RobotScenePut.
 *
 * A RobotPut is checked and parsed on the loop (robot_build.c: the URDF and SRDF
 * with mesh filenames looked up in the request's mesh table, every mesh listed),
 * its canonical content and id computed (content_id.h); a robot already listed is
 * answered at once, a new one goes to the writer thread and is listed when its
 * file is written. It pins its meshes (MeshDelete refuses them) until it is
 * deleted. A RobotDelete refuses a robot that robot scenes use.
 *
 * A RobotScenePut is checked on the loop (the robot listed, the text's size) and
 * its id computed; a new one is parsed, built (robot/robot_scene.c, the meshes
 * read from their files) and its trees added to the engine on the writer thread,
 * which writes its file; the loop lists it as a scene (SceneList, SceneDelete and
 * Query see it). Nothing is stored on an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "request_handlers.h"
#include "robot_build.h"

/* RobotPuts whose URDF and SRDF together are this long or more are parsed on libuv's pool: a 15 MB
 * URDF held the server's lock up to ~0.6 s on the loop (bench_upload_wait; TDM_DECODE_APART=0: on
 * the loop) */
#define TDM_ROBOT_PARSE_APART (256u << 10)

/* ---- replies ---- */

/* The active joints as RobotJoint messages (arrays the caller frees). */
static int joints_of(const tdm_robot *r, Tandem__V1__RobotJoint **js, Tandem__V1__RobotJoint ***ptrs)
{
    uint32_t n = r->n_active;
    *js = malloc(sizeof **js * (n ? n : 1));
    *ptrs = malloc(sizeof **ptrs * (n ? n : 1));
    if (!*js || !*ptrs) {
        free(*js);
        free(*ptrs);
        return -1;
    }
    for (uint32_t k = 0; k < n; k++) {
        const tdm_robot_joint *j = &r->joints[r->active[k]];
        Tandem__V1__RobotJoint m = TANDEM__V1__ROBOT_JOINT__INIT;
        m.name = j->name;
        m.lower = j->lower;
        m.upper = j->upper;
        (*js)[k] = m;
        (*ptrs)[k] = &(*js)[k];
    }
    return 0;
}

static void send_robot_put(tdm_conn *c, uint64_t id, const tdm_stored_robot *sr, int created)
{
    Tandem__V1__RobotJoint *js, **ptrs;
    if (joints_of(sr->robot, &js, &ptrs) != 0) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for the reply");
        return;
    }
    Tandem__V1__RobotPutReply r = TANDEM__V1__ROBOT_PUT_REPLY__INIT;
    r.robot_id.data = (uint8_t *)sr->entry.id;
    r.robot_id.len = TDM_ID_LEN;
    r.created = created;
    r.n_joints = sr->robot->n_active;
    r.joints = ptrs;
    r.n_links = sr->robot->n_links;
    r.n_elements = sr->robot->n_collisions;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_ROBOT_PUT, &r);
    free(js);
    free(ptrs);
}

static void send_robot_scene_put(tdm_conn *c, uint64_t id, tdm_stored_scene *sc, int created)
{
    tdm__ephemeral_hold(c, sc); /* (an ephemeral scene) */
    const tdm_robot_scene *rs = sc->rs;
    const tdm_robot *r = rs->robot;
    uint32_t n = rs->n_objects;
    Tandem__V1__RobotJoint *js, **jptrs;
    if (joints_of(r, &js, &jptrs) != 0) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for the reply");
        return;
    }
    Tandem__V1__RobotSceneObject *os = malloc(sizeof *os * n);
    Tandem__V1__RobotSceneObject **optrs = malloc(sizeof *optrs * n);
    if (!os || !optrs) {
        free(os);
        free(optrs);
        free(js);
        free(jptrs);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for the reply");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        Tandem__V1__RobotSceneObject o = TANDEM__V1__ROBOT_SCENE_OBJECT__INIT;
        const tdm_robot_scene_obj *ob = &rs->objs[i];
        o.object_id = i;
        o.movable = ob->movable != 0;
        if (ob->attached) { /* an attached object's shape, moving with its link */
            o.link = r->links[rs->kin.elems[i].link].name;
            o.world_object = sc->ps->attached[ob->index].object.id;
            o.shape = ob->shape;
            o.attached = 1;
        } else if (ob->movable) {
            const tdm_robot_collision *e = &r->collisions[ob->index];
            o.link = r->links[e->link].name;
            o.element = ob->index - r->links[e->link].first_collision;
        } else {
            o.world_object = sc->ps->objects[ob->index].id;
            o.shape = ob->shape;
        }
        os[i] = o;
        optrs[i] = &os[i];
    }
    Tandem__V1__RobotScenePutReply m = TANDEM__V1__ROBOT_SCENE_PUT_REPLY__INIT;
    m.scene_id.data = (uint8_t *)sc->entry.id;
    m.scene_id.len = TDM_ID_LEN;
    m.created = created;
    m.robot_id.data = (uint8_t *)sc->robot->entry.id;
    m.robot_id.len = TDM_ID_LEN;
    m.n_joints = r->n_active;
    m.joints = jptrs;
    m.n_objects = n;
    m.objects = optrs;
    m.n_checks = rs->scene->n_checks;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_ROBOT_SCENE_PUT, &m);
    free(os);
    free(optrs);
    free(js);
    free(jptrs);
}

/* ---- ownership: another tenant's put of a stored robot or robot scene, a delete by one of several owners ---- */

static void robot_owners_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    char hex[2 * TDM_ID_LEN + 1];
    tdm_catalog_entry *e = op->scene ? &op->scene->entry : &op->robot->entry;
    if (op->rc != TDM_OK) {
        tdm_log_error("%s %s: %s", op->owners_adding ? (op->scene ? "RobotScenePut" : "RobotPut") : "RobotDelete",
                      tdm__id_hex(op->id, hex), op->msg);
        tdm__owners_undo(op, e);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else if (!op->owners_adding) {
        tdm_log_info("deleted robot %s for tenant %s (other tenants keep it)", tdm__id_hex(op->id, hex),
                     tdm_tenants_name(c->srv->tenants, op->tenant));
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            tdm__send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_ROBOT_DELETE, &d);
        }
    } else if (tdm_conn_alive(c)) {
        /* created: new to this tenant, which so cannot tell what other tenants stored */
        if (op->scene) send_robot_scene_put(c, op->request_id, op->scene, 1);
        else send_robot_put(c, op->request_id, op->robot, 1);
    } else if (op->scene) {
        tdm__ephemeral_settle(c, op->scene); /* put for a connection gone meanwhile */
    }
    if (op->scene) tdm_stored_scene_unref(op->scene);
    else tdm_stored_robot_unref(op->robot);
    free(op->owners_rec);
    free(op->name);
    free(op);
    tdm_conn_end(c);
}

/* Another tenant's listed robot (r) or robot scene (sc) becomes the connection's
 * tenant's too (adding), or the connection's tenant leaves a shared robot's owners:
 * 1 when an op will answer, 0 when nothing changes (it owns it already). */
static int robot_owners(tdm_conn *c, uint64_t req, tdm_stored_robot *r, tdm_stored_scene *sc, int adding,
                        const char *name)
{
    tdm_catalog_entry *e = sc ? &sc->entry : &r->entry;
    if (adding && tdm__owns(c, e)) return 0;
    tdm_writer_op *op = tdm__owners_change(c, req, e, sc ? sc->name : r->name, adding, name);
    if (!op) return 1;
    op->done = robot_owners_done;
    if (sc) {
        op->scene = sc;
        tdm_stored_scene_ref(sc);
    } else {
        op->robot = r;
        tdm_stored_robot_ref(r);
    }
    tdm_conn_begin(c);
    tdm_writer_submit(c->srv->writer, op);
    return 1;
}

/* ---- RobotPut ---- */

static void robot_put_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    if (!tdm_catalog_find_robot(srv->catalog, op->id) && tdm__put_again(c, op)) return;
    tdm_stored_robot *sr = op->robot;
    char hex[2 * TDM_ID_LEN + 1], nm[TDM_LOG_NAME_MAX];
    if (op->rc != TDM_OK) {
        tdm_log_error("RobotPut: %s", op->msg);
        if (tdm_conn_alive(c))
            tdm_conn_send_error(c, op->request_id, tdm__error_code(op->rc), op->field, op->index, "%s", op->msg);
        tdm_stored_robot_retire(sr);
        tdm_stored_robot_unref(sr);
    } else {
        tdm_stored_robot *have = tdm_catalog_find_robot(srv->catalog, op->id);
        int created = !have && !op->exists, claimed = 0;
        if (!have && (op->exists || tdm__first_owner(&sr->entry, op, sr->name) != 0)) {
            /* exists: its file is being removed; listing it would lose it */
            if (tdm_conn_alive(c))
                tdm_conn_send_error(c, op->request_id, op->exists ? E(BUSY) : E(NO_MEMORY), "", -1, "%s",
                                    op->exists ? "the robot was being deleted; retry" : "out of memory");
            tdm_stored_robot_retire(sr);
            tdm_stored_robot_unref(sr);
            goto out;
        }
        if (!have) {
            tdm_catalog_add_robot(srv->catalog, sr); /* takes our reference */
            if (created)
                tdm_log_info("stored robot %s \"%s\": %u links, %u active joints, %u collision elements, %u meshes",
                             tdm__id_hex(op->id, hex), tdm_log_name(sr->name, nm), sr->robot->n_links, sr->robot->n_active,
                             sr->robot->n_collisions, sr->n_meshes);
            have = sr;
        } else {
            tdm_stored_robot_retire(sr);
            if (tdm_conn_alive(c)) claimed = robot_owners(c, op->request_id, have, NULL, 1, sr->name);
        }
        if (tdm_conn_alive(c) && !claimed) send_robot_put(c, op->request_id, have, created);
        if (have != sr) tdm_stored_robot_unref(sr);
    }
out:
    free(op->owners_rec);
    tdm_upload_release(srv, op);
    free(op->canon);
    free(op);
    tdm_conn_end(c);
}

/* RobotPut's parse (robot_parse, on the loop or on libuv's pool): its results, or its failure */
typedef struct robot_parsed {
    int rc;             /* tdm__robot_parse_refs's */
    tdm_robot_fail f;
    tdm_robot *robot;
    uint8_t *canon;     /* NULL: out of memory */
    size_t canon_len;
    uint8_t rid[TDM_ID_LEN];
} robot_parsed;

/* The texts parsed with mesh table refs[0..n), and their canonical content and id. Reads nothing but
 * its arguments: any thread. */
static void robot_parse(const char *urdf, size_t ulen, const char *srdf, size_t slen, const tdm_canon_mesh_ref *refs,
                        size_t n, robot_parsed *r)
{
    memset(r, 0, sizeof *r);
    r->rc = tdm__robot_parse_refs(urdf, ulen, srdf, slen, refs, (uint32_t)n, &r->robot, &r->f);
    if (r->rc == TDM_OK && (tdm_robot_canon_build(urdf, ulen, srdf, slen, refs, (uint32_t)n, &r->canon,
                                                  &r->canon_len) != TDM_OK ||
                            tdm_sha256(r->canon, r->canon_len, r->rid) != 0)) {
        free(r->canon);
        r->canon = NULL;
    }
}

/* RobotPut from its mesh table on (refs[0..n), sorted, distinct; the caller's) and its parse (pr,
 * whose robot and canonical content it takes): the meshes looked up, then the owners or the writer.
 * Loop thread, holding the server's lock. */
static void robot_put_finish(tdm_conn *c, uint64_t id, const Tandem__V1__RobotPut *p, tdm_canon_mesh_ref *refs,
                             size_t n, robot_parsed *pr)
{
    tdm_server *srv = c->srv;
    tdm_stored_mesh **meshes = malloc(sizeof *meshes * (n ? n : 1));
    tdm_robot *robot = pr->robot;
    uint8_t *canon = pr->canon;
    size_t canon_len = pr->canon_len;
    pr->robot = NULL, pr->canon = NULL;
    tdm_writer_op *op = NULL;
    if (!meshes) goto nomem;
    tdm_robot_fail f;
    /* the catalogue first (an unknown mesh says so before the URDF's faults), then the parse's */
    int rc = tdm__robot_meshes(srv->catalog, c->tenant, refs, (uint32_t)n, meshes, &f);
    if (rc == TDM_OK && (rc = pr->rc) != TDM_OK) f = pr->f;
    if (rc != TDM_OK) {
        if (f.index >= 0) /* an index into the sorted table: say the request's */
            for (size_t i = 0; i < n; i++)
                if (p->meshes[i]->filename == refs[f.index].filename) {
                    f.index = (int64_t)i;
                    break;
                }
        tdm_conn_send_error(c, id, (ecode)f.code, f.field, f.index, "%s", f.msg);
        goto out;
    }
    /* a robot sure to be over max_robot_triangles (its distinct meshes alone) is not stored */
    if (tdm__robot_mesh_budget(robot, refs, (uint32_t)n, meshes, srv->cfg->max_robot_triangles, &f) != TDM_OK) {
        tdm_conn_send_error(c, id, (ecode)f.code, f.field, f.index, "%s", f.msg);
        goto out;
    }
    if (!canon) goto nomem;
    const uint8_t *rid = pr->rid;
    tdm_stored_robot *have = tdm_catalog_find_robot(srv->catalog, rid);
    if (have) {
        if (!robot_owners(c, id, have, NULL, 1, p->name ? p->name : "")) send_robot_put(c, id, have, 0);
        goto out;
    }
    /* waiting for the writer: the canonical texts and the parsed robot (about as large again) */
    uint64_t upload = 2 * (uint64_t)canon_len;
    if (tdm_conn_upload_admit(c, id, upload) != 0) goto out;
    op = calloc(1, sizeof *op);
    if (!op) goto nomem;
    if (tdm__put_owner(c, op, p->name ? p->name : "") != 0) goto nomem;
    tdm_stored_robot *sr = tdm_stored_robot_new(rid, p->name ? p->name : "", robot, meshes, (uint32_t)n);
    robot = NULL; /* owned by sr, or freed */
    if (!sr) goto nomem;
    op->kind = TDM_WRITER_ROBOT_PUT;
    op->done = robot_put_done;
    op->owner = c;
    op->request_id = id;
    op->robot = sr; /* our reference */
    op->canon = canon;
    op->canon_len = canon_len;
    canon = NULL;
    memcpy(op->id, rid, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    op->started = uv_hrtime();
    tdm_upload_charge(srv, op, upload);
    tdm_conn_begin(c);
    tdm_writer_submit(srv->writer, op);
    op = NULL;
    goto out;
nomem:
    tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for a robot");
out:
    if (op) free(op->owners_rec);
    free(op);
    tdm_robot_free(robot);
    free(canon);
    free(meshes);
}

/* ---- a large request's work on libuv's pool: a RobotPut's parse, a RobotScenePut's content ---- */

typedef struct robot_job {
    tdm_pool_hop hop; /* first */
    const Tandem__V1__RobotPut *p;
    const char *urdf, *srdf;
    size_t ulen, slen;
    tdm_canon_mesh_ref *refs;
    size_t n;
    robot_parsed pre;
} robot_job;

static void robot_parse_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    robot_job *j = w->data;
    robot_parse(j->urdf, j->ulen, j->srdf, j->slen, j->refs, j->n, &j->pre);
}

/* The connection's loop: the rest of the RobotPut, in its request's scope, unless the connection
 * closed meanwhile or the server is stopping */
static void robot_parse_after(uv_work_t *w, int status)
{
    (void)status;
    robot_job *j = w->data;
    tdm_metrics_mark outer;
    if (tdm__hop_back(&j->hop, &outer)) robot_put_finish(j->hop.c, j->hop.id, j->p, j->refs, j->n, &j->pre);
    tdm_robot_free(j->pre.robot);
    free(j->pre.canon);
    free(j->refs);
    tdm__hop_end(&j->hop, outer, j);
}

/* Hands the parse of RobotPut p (its text in *arena, which the job takes) to libuv's pool: 0, the job
 * owns refs; -1 (no memory for the job), nothing taken */
static int robot_parse_apart(tdm_conn *c, uint64_t id, tdm_arena **arena, const Tandem__V1__RobotPut *p,
                             const char *urdf, size_t ulen, const char *srdf, size_t slen, tdm_canon_mesh_ref *refs,
                             size_t n)
{
    robot_job *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->p = p, j->urdf = urdf, j->ulen = ulen, j->srdf = srdf, j->slen = slen, j->refs = refs, j->n = n;
    if (tdm__hop_apart(c, id, arena, &j->hop, robot_parse_work, robot_parse_after) == 0) return 0;
    free(j);
    return -1;
}

static void robot_put_checked(tdm_conn *c, uint64_t id, tdm_arena **arena, const Tandem__V1__RobotPut *p,
                              const char *urdf, size_t ulen, const char *srdf, size_t slen);

/* 0: both texts UTF-8; 1: the URDF is not; 2: the SRDF is not */
static int utf8_bad(const char *urdf, size_t ulen, const char *srdf, size_t slen)
{
    return !tdm_utf8_valid(urdf, ulen) ? 1 : srdf && !tdm_utf8_valid(srdf, slen) ? 2 : 0;
}

static void utf8_refuse(tdm_conn *c, uint64_t id, int bad)
{
    const char *field = bad == 1 ? "urdf" : "srdf";
    tdm_conn_send_error(c, id, E(BAD_REQUEST), field, -1, "%s is not valid UTF-8", field);
}

/* A large RobotPut's UTF-8 check on libuv's pool; then the rest on the loop, its parse on the pool again. */
typedef struct utf8_job {
    tdm_pool_hop hop; /* first */
    const Tandem__V1__RobotPut *p;
    const char *urdf, *srdf;
    size_t ulen, slen;
    int bad;
} utf8_job;

static void utf8_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    utf8_job *j = w->data;
    j->bad = utf8_bad(j->urdf, j->ulen, j->srdf, j->slen);
}

static void utf8_after(uv_work_t *w, int status)
{
    (void)status;
    utf8_job *j = w->data;
    tdm_metrics_mark outer;
    if (tdm__hop_back(&j->hop, &outer)) {
        if (j->bad) utf8_refuse(j->hop.c, j->hop.id, j->bad);
        else robot_put_checked(j->hop.c, j->hop.id, &j->hop.arena, j->p, j->urdf, j->ulen, j->srdf, j->slen);
    }
    tdm__hop_end(&j->hop, outer, j); /* the arena, unless the parse's hop took it */
}

static int utf8_apart(tdm_conn *c, uint64_t id, const Tandem__V1__RobotPut *p, const char *urdf, size_t ulen,
                      const char *srdf, size_t slen)
{
    utf8_job *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->p = p, j->urdf = urdf, j->ulen = ulen, j->srdf = srdf, j->slen = slen;
    if (tdm__hop_apart(c, id, &c->arena, &j->hop, utf8_work, utf8_after) == 0) return 0;
    free(j);
    return -1;
}

void tdm__robot_put(tdm_conn *c, uint64_t id, const Tandem__V1__RobotPut *p)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (tdm__check_name(c, id, p->name, "name") != 0) return;
    const char *urdf = p->urdf ? p->urdf : "", *srdf = p->srdf && p->srdf[0] ? p->srdf : NULL;
    size_t ulen = strlen(urdf), slen = srdf ? strlen(srdf) : 0;
    if (ulen == 0) {
        tdm_conn_send_error(c, id, E(EMPTY), "urdf", -1, "the request has no URDF text");
        return;
    }
    if (ulen > cfg->max_robot_text_bytes || slen > cfg->max_robot_text_bytes) {
        tdm_conn_send_error(c, id, E(LIMIT), ulen > cfg->max_robot_text_bytes ? "urdf" : "srdf", -1,
                            "%s is %zu bytes, over max_robot_text_bytes %u",
                            ulen > cfg->max_robot_text_bytes ? "urdf" : "srdf",
                            ulen > cfg->max_robot_text_bytes ? ulen : slen, cfg->max_robot_text_bytes);
        return;
    }
    /* a large text is checked and parsed on libuv's pool (a 15 MB URDF's UTF-8 check held the server's
       lock ~10 ms on the loop, its parse ~0.6 s) */
    if (ulen + slen >= TDM_ROBOT_PARSE_APART && tdm__work_apart() && utf8_apart(c, id, p, urdf, ulen, srdf, slen) == 0)
        return;
    int bad = utf8_bad(urdf, ulen, srdf, slen);
    if (bad) {
        utf8_refuse(c, id, bad);
        return;
    }
    robot_put_checked(c, id, &c->arena, p, urdf, ulen, srdf, slen);
}

/* The rest of RobotPut p once its texts are known UTF-8 (the request's arena in *arena: c->arena, or
 * the UTF-8 check's hop's, which the parse's takes). */
static void robot_put_checked(tdm_conn *c, uint64_t id, tdm_arena **arena, const Tandem__V1__RobotPut *p,
                              const char *urdf, size_t ulen, const char *srdf, size_t slen)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (tdm_catalog_n_robots(srv->catalog) >= cfg->max_robots) {
        tdm_conn_send_error(c, id, E(LIMIT), "", -1, "%u robots are stored, the server's max_robots",
                            cfg->max_robots);
        return;
    }
    size_t n = p->n_meshes;
    if (n > TDM_ROBOT_MAX_COLLISIONS) {
        tdm_conn_send_error(c, id, E(LIMIT), "meshes", -1, "%zu meshes, more than a robot's %d collision elements",
                            n, TDM_ROBOT_MAX_COLLISIONS);
        return;
    }
    tdm_canon_mesh_ref *refs = malloc(sizeof *refs * (n ? n : 1));
    if (!refs) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for a robot");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const Tandem__V1__RobotMesh *m = p->meshes[i];
        const char *fn = m->filename ? m->filename : "";
        size_t fl = strlen(fn);
        if (fl == 0 || fl > 4096 || !tdm_utf8_valid(fn, fl)) {
            tdm_conn_send_error(c, id, E(BAD_REQUEST), "meshes", (int64_t)i,
                                "meshes[%zu]: the filename must be 1 to 4096 bytes of UTF-8", i);
            free(refs);
            return;
        }
        refs[i].filename = fn;
        refs[i].filename_len = (uint32_t)fl;
        if (tdm__get_id(c, id, &m->mesh_id, "meshes", (int64_t)i, refs[i].mesh_id) != 0) {
            free(refs);
            return;
        }
    }
    /* sorted for lookups and the canonical content; the index reported stays the request's */
    qsort(refs, n, sizeof *refs, tdm_canon_mesh_ref_cmp);
    for (size_t i = 1; i < n; i++)
        if (tdm_canon_mesh_ref_cmp(&refs[i - 1], &refs[i]) == 0) {
            tdm_conn_send_error(c, id, E(BAD_REQUEST), "meshes", -1, "the filename '%.*s' is in the mesh table twice",
                                (int)refs[i].filename_len, refs[i].filename);
            free(refs);
            return;
        }
    /* a large URDF is parsed on libuv's pool (it took the server's lock ~0.6 s for 15 MB on the loop) */
    if (ulen + slen >= TDM_ROBOT_PARSE_APART && tdm__work_apart() &&
        robot_parse_apart(c, id, arena, p, urdf, ulen, srdf, slen, refs, n) == 0)
        return; /* the job has the refs */
    robot_parsed pr;
    robot_parse(urdf, ulen, srdf, slen, refs, n, &pr);
    robot_put_finish(c, id, p, refs, n, &pr); /* takes pr's robot and canonical content */
    free(refs);
}


/* ---- RobotList ---- */

void tdm__robot_list(tdm_conn *c, uint64_t id)
{
    tdm_catalog *cat = c->srv->catalog;
    uint32_t n = 0, i = 0;
    for (tdm_stored_robot *r = tdm_catalog_robots(cat); r; r = r->next) n += tdm__owns(c, &r->entry);
    Tandem__V1__RobotInfo *infos = calloc(n ? n : 1, sizeof *infos);
    Tandem__V1__RobotInfo **ptrs = malloc(sizeof *ptrs * (n ? n : 1));
    Tandem__V1__RobotJoint **js = calloc(n ? n : 1, sizeof *js);
    Tandem__V1__RobotJoint ***jptrs = calloc(n ? n : 1, sizeof *jptrs);
    if (!infos || !ptrs || !js || !jptrs) goto nomem;
    for (tdm_stored_robot *r = tdm_catalog_robots(cat); r; r = r->next) {
        if (!tdm__owns(c, &r->entry)) continue;
        Tandem__V1__RobotInfo ri = TANDEM__V1__ROBOT_INFO__INIT;
        if (joints_of(r->robot, &js[i], &jptrs[i]) != 0) goto nomem;
        ri.robot_id.data = r->entry.id;
        ri.robot_id.len = TDM_ID_LEN;
        ri.name = (char *)tdm__owned_name(c, &r->entry);
        ri.n_joints = r->robot->n_active;
        ri.joints = jptrs[i];
        ri.n_links = r->robot->n_links;
        ri.n_elements = r->robot->n_collisions;
        ri.scenes = tdm__robot_scenes(c, r);
        infos[i] = ri;
        ptrs[i] = &infos[i];
        i++;
    }
    Tandem__V1__RobotListReply rep = TANDEM__V1__ROBOT_LIST_REPLY__INIT;
    rep.n_robots = n;
    rep.robots = ptrs;
    tdm__send_body(c, id, TANDEM__V1__REPLY__BODY_ROBOT_LIST, &rep);
    goto out;
nomem:
    tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory listing %u robots", n);
out:
    for (uint32_t k = 0; js && jptrs && k < n; k++) {
        free(js[k]);
        free(jptrs[k]);
    }
    free(js);
    free(jptrs);
    free(infos);
    free(ptrs);
}

/* ---- RobotDelete ---- */

static void robot_delete_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    char hex[2 * TDM_ID_LEN + 1];
    if (op->rc != TDM_OK) {
        tdm_log_error("RobotDelete %s: %s", tdm__id_hex(op->id, hex), op->msg);
        if (!tdm_catalog_find_robot(srv->catalog, op->id)) tdm_catalog_add_robot(srv->catalog, op->robot);
        else tdm_stored_robot_unref(op->robot);
        if (tdm_conn_alive(c)) tdm_conn_send_error(c, op->request_id, E(STORAGE), "", -1, "%s", op->msg);
    } else {
        tdm_log_info("deleted robot %s", tdm__id_hex(op->id, hex));
        tdm_stored_robot_retire(op->robot); /* its meshes may be deleted from now on */
        tdm_stored_robot_unref(op->robot);
        if (tdm_conn_alive(c)) {
            Tandem__V1__Deleted d = TANDEM__V1__DELETED__INIT;
            tdm__send_body(c, op->request_id, TANDEM__V1__REPLY__BODY_ROBOT_DELETE, &d);
        }
    }
    free(op);
    tdm_conn_end(c);
}

void tdm__robot_delete(tdm_conn *c, uint64_t id, const Tandem__V1__RobotDelete *d)
{
    tdm_server *srv = c->srv;
    uint8_t rid[TDM_ID_LEN];
    if (tdm__get_id(c, id, &d->robot_id, "robot_id", -1, rid) != 0) return;
    tdm_stored_robot *r = tdm__find_robot(c, rid);
    if (!r) {
        tdm_conn_send_error(c, id, E(UNKNOWN_ROBOT), "robot_id", -1, "no stored robot has this id");
        return;
    }
    uint32_t scenes = tdm__robot_scenes(c, r);
    if (scenes > 0) {
        tdm_conn_send_error(c, id, E(ROBOT_IN_USE), "robot_id", -1, "the robot is used by %u robot scene%s",
                            scenes, scenes == 1 ? "" : "s");
        return;
    }
    if (r->entry.owners.n > 1) { /* others own it too: it stays theirs */
        robot_owners(c, id, r, NULL, 0, NULL);
        return;
    }
    tdm_writer_op *op = calloc(1, sizeof *op);
    if (!op) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    tdm_catalog_remove_robot(srv->catalog, r); /* the catalogue's reference passes to the op */
    op->kind = TDM_WRITER_ROBOT_DELETE;
    op->done = robot_delete_done;
    op->owner = c;
    op->request_id = id;
    op->robot = r;
    memcpy(op->id, rid, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    tdm_conn_begin(c);
    tdm_writer_submit(srv->writer, op);
}

/* ---- RobotScenePut ---- */

static void robot_scene_put_done(tdm_writer_op *op)
{
    tdm_conn *c = op->owner;
    tdm_server *srv = c->srv;
    if (!tdm_catalog_find_scene(srv->catalog, op->id) && tdm__put_again(c, op)) return;
    tdm_stored_scene *sc = op->scene; /* NULL when it existed or was not built */
    tdm_stored_robot *robot = op->robot;
    char hex[2 * TDM_ID_LEN + 1], nm[TDM_LOG_NAME_MAX];
    if (op->rc != TDM_OK) {
        if (op->rc == TDM_EIO) tdm_log_error("RobotScenePut: %s", op->msg);
        if (tdm_conn_alive(c))
            tdm_conn_send_error(c, op->request_id, op->wire_code ? (ecode)op->wire_code : tdm__error_code(op->rc),
                                op->field, op->index, "%s", op->msg);
        if (sc) {
            tdm_stored_robot_ref(robot); /* sc gives back the op's reference and count when freed */
            robot->scenes++;
            tdm_stored_scene_retire(sc);
            tdm_stored_scene_unref(sc);
        }
        robot->scenes--;
        tdm_stored_robot_unref(robot);
    } else {
        tdm_stored_scene *have = tdm_catalog_find_scene(srv->catalog, op->id);
        int created = !have && !op->exists, claimed = 0;
        if (!have && sc && tdm__first_owner(&sc->entry, op, sc->name) != 0) {
            tdm_stored_robot_ref(robot); /* sc gives back the op's reference and count when freed */
            robot->scenes++;
            tdm_stored_scene_retire(sc);
            tdm_stored_scene_unref(sc);
            sc = NULL;
        }
        if (!have && sc) {
            tdm_catalog_add_scene(srv->catalog, sc); /* takes sc, which took the op's robot reference */
            tdm_log_info("stored robot scene %s \"%s\": %u objects (%u robot elements), %u checked pairs",
                         tdm__id_hex(op->id, hex), tdm_log_name(sc->name, nm), sc->rs->n_objects, sc->rs->n_elements,
                         sc->scene->n_checks);
            have = sc;
            sc = NULL;
        } else {
            robot->scenes--;
            tdm_stored_robot_unref(robot);
        }
        if (sc) { /* built while an identical one was stored: drop ours */
            tdm_stored_robot_ref(robot);
            robot->scenes++;
            tdm_stored_scene_retire(sc);
            tdm_stored_scene_unref(sc);
        }
        if (have && have->rs && !created && tdm_conn_alive(c))
            claimed = robot_owners(c, op->request_id, NULL, have, 1, op->name ? op->name : "");
        if (!tdm_conn_alive(c) && have) tdm__ephemeral_settle(c, have); /* put for a connection gone meanwhile */
        if (tdm_conn_alive(c) && !claimed) {
            if (have && have->rs) send_robot_scene_put(c, op->request_id, have, created);
            else if (have) tdm_conn_send_error(c, op->request_id, E(INTERNAL), "", -1, "the scene id is a rigid scene's");
            else tdm_conn_send_error(c, op->request_id, E(BUSY), "", -1, "the robot scene was being deleted; retry");
        }
    }
    free(op->owners_rec);
    tdm_upload_release(c->srv, op);
    free(op->name);
    free(op->canon);
    free(op);
    tdm_conn_end(c);
}

/* A robot scene is built (its YAML parsed, its world's trees made or taken from the robot's
 * shape cache: ~1 ms for an MBM scene) on libuv's pool before its put goes to the writer, so that
 * many clients' puts build at once instead of one after another on the writer thread, and the
 * writer only stores them (its trees on the engine, its file). TDM_SCENE_PREBUILD=0: built on
 * the writer (A/B runs). */
static int prebuild(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("TDM_SCENE_PREBUILD");
        on = !(e && !strcmp(e, "0"));
    }
    return on;
}

/* libuv's pool: builds the op's scene (tdm__robot_scene_build takes any thread). */
static void scene_build_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    tdm_writer_op *op = w->data;
    tdm_writer_build_robot_scene(((tdm_conn *)op->owner)->srv->datadir, op, &op->pre_rs, &op->pre_ps);
}

/* The connection's loop: the built (or failed) put goes to the writer, in the request's scope. */
static void scene_build_after(uv_work_t *w, int status)
{
    (void)status;
    tdm__submit_after_pool(w->data);
}

/* The rest of RobotScenePut p once its canonical content is made (canon, owned: taken; sid its
 * id), on its loop: the robot looked up again (it may have gone while a large world's content was
 * made on libuv's pool), then the scene found stored or built. */
static void robot_scene_put_finish(tdm_conn *c, uint64_t id, const Tandem__V1__RobotScenePut *p,
                                   const uint8_t rid[TDM_ID_LEN], uint8_t *canon, size_t canon_len,
                                   const uint8_t content_id[TDM_ID_LEN])
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    uint8_t sid[TDM_ID_LEN]; /* an ephemeral scene's differs from its content's (content_id.h) */
    memcpy(sid, content_id, TDM_ID_LEN);
    if (p->ephemeral && tdm_ephemeral_id(sid) != 0) {
        free(canon);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    if (p->ephemeral && tdm__ephemeral_refuse(c, id, sid)) {
        free(canon);
        return;
    }
    tdm_stored_robot *robot = tdm__find_robot(c, rid);
    if (!robot) {
        free(canon);
        tdm_conn_send_error(c, id, E(UNKNOWN_ROBOT), "robot_id", -1, "no stored robot has this id");
        return;
    }
    tdm_stored_scene *have = tdm_catalog_find_scene(srv->catalog, sid);
    if (have && have->rs) {
        free(canon);
        if (!robot_owners(c, id, NULL, have, 1, p->name ? p->name : "")) send_robot_scene_put(c, id, have, 0);
        return;
    }
    /* waiting for the writer: the YAML inside the canonical content (the scene is built there) */
    uint64_t upload = canon_len;
    if (tdm_conn_upload_admit(c, id, upload) != 0) {
        free(canon);
        return;
    }
    tdm_writer_op *op = calloc(1, sizeof *op);
    char *name = strdup(p->name ? p->name : "");
    if (!op || !name) {
        free(op);
        free(name);
        free(canon);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    if (tdm__put_owner(c, op, name) != 0) {
        free(op);
        free(name);
        free(canon);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    tdm_stored_robot_ref(robot); /* the op's, handed to the scene it builds */
    robot->scenes++;
    op->kind = TDM_WRITER_ROBOT_SCENE_PUT;
    op->ephemeral = p->ephemeral != 0;
    op->max_objects = cfg->max_objects;
    op->max_scene_triangles = cfg->max_scene_triangles;
    op->max_robot_triangles = cfg->max_robot_triangles;
    op->done = robot_scene_put_done;
    op->owner = c;
    op->request_id = id;
    op->robot = robot;
    op->name = name;
    op->canon = canon;
    op->canon_len = canon_len;
    memcpy(op->id, sid, TDM_ID_LEN);
    op->field = "";
    op->index = -1;
    op->started = uv_hrtime();
    tdm_upload_charge(srv, op, upload);
    tdm_conn_begin(c);
    if (prebuild()) {
        op->work.data = op;
        tdm_metrics_mark_take(&op->mark); /* re-entered for the submission */
        if (uv_queue_work(c->io->loop, &op->work, scene_build_work, scene_build_after) == 0) return;
        /* cannot happen: uv_queue_work fails only without a callback */
    }
    tdm_writer_submit(srv->writer, op);
}

/* A large world's canonical content, made and hashed on libuv's pool (its text in the request's
 * arena, which the job holds): 16 MiB took the server's lock ~20-30 ms on the loop. */
typedef struct scene_canon_job {
    tdm_pool_hop hop; /* first */
    const Tandem__V1__RobotScenePut *p;
    uint8_t rid[TDM_ID_LEN], sid[TDM_ID_LEN];
    const char *world;
    size_t len;
    uint8_t *canon;
    size_t canon_len;
    int failed;
} scene_canon_job;

static int scene_canon(const uint8_t rid[TDM_ID_LEN], const char *world, size_t len, uint8_t **canon,
                       size_t *canon_len, uint8_t sid[TDM_ID_LEN])
{
    *canon = NULL;
    if (tdm_robot_scene_canon_build(rid, world, len, canon, canon_len) != TDM_OK ||
        tdm_sha256(*canon, *canon_len, sid) != 0) {
        free(*canon);
        *canon = NULL;
        return -1;
    }
    return 0;
}

static void scene_canon_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    scene_canon_job *j = w->data;
    j->failed = scene_canon(j->rid, j->world, j->len, &j->canon, &j->canon_len, j->sid) != 0;
}

/* The connection's loop: the rest of the RobotScenePut, in its request's scope, unless the
 * connection closed meanwhile or the server is stopping */
static void scene_canon_after(uv_work_t *w, int status)
{
    (void)status;
    scene_canon_job *j = w->data;
    tdm_metrics_mark outer;
    if (!tdm__hop_back(&j->hop, &outer))
        free(j->canon);
    else if (j->failed)
        tdm_conn_send_error(j->hop.c, j->hop.id, E(NO_MEMORY), "", -1, "out of memory");
    else
        robot_scene_put_finish(j->hop.c, j->hop.id, j->p, j->rid, j->canon, j->canon_len, j->sid); /* takes canon */
    tdm__hop_end(&j->hop, outer, j);
}

/* Hands the world's canonical content to libuv's pool (the request's arena with it): 0, or -1 (no
 * memory for the job), nothing taken */
static int scene_canon_apart(tdm_conn *c, uint64_t id, const Tandem__V1__RobotScenePut *p,
                             const uint8_t rid[TDM_ID_LEN], const char *world, size_t len)
{
    scene_canon_job *j = calloc(1, sizeof *j);
    if (!j) return -1;
    j->p = p, j->world = world, j->len = len;
    memcpy(j->rid, rid, TDM_ID_LEN);
    if (tdm__hop_apart(c, id, &c->arena, &j->hop, scene_canon_work, scene_canon_after) == 0) return 0;
    free(j);
    return -1;
}

void tdm__robot_scene_put(tdm_conn *c, uint64_t id, const Tandem__V1__RobotScenePut *p)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (tdm__check_name(c, id, p->name, "name") != 0) return;
    uint8_t rid[TDM_ID_LEN];
    if (tdm__get_id(c, id, &p->robot_id, "robot_id", -1, rid) != 0) return;
    if (!tdm__find_robot(c, rid)) {
        tdm_conn_send_error(c, id, E(UNKNOWN_ROBOT), "robot_id", -1, "no stored robot has this id");
        return;
    }
    const char *world = p->world ? p->world : "";
    size_t len = strlen(world);
    if (len > cfg->max_robot_text_bytes) {
        tdm_conn_send_error(c, id, E(LIMIT), "world", -1, "world is %zu bytes, over max_robot_text_bytes %u", len,
                            cfg->max_robot_text_bytes);
        return;
    }
    /* a large world's content is made on libuv's pool (TDM_DECODE_APART=0: here, as before) */
    if (len >= TDM_ROBOT_PARSE_APART && tdm__work_apart() && scene_canon_apart(c, id, p, rid, world, len) == 0) return;
    uint8_t *canon;
    size_t canon_len;
    uint8_t sid[TDM_ID_LEN];
    if (scene_canon(rid, world, len, &canon, &canon_len, sid) != 0) {
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory");
        return;
    }
    robot_scene_put_finish(c, id, p, rid, canon, canon_len, sid);
}
