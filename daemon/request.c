#include "request.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "request_handlers.h"

/* ---- helpers for the handlers ---- */

ecode tdm__error_code(int rc)
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
    case TDM_EBUDGET: return E(WORK_BUDGET);
    default: return E(INTERNAL);
    }
}

void tdm__send_body(tdm_conn *c, uint64_t id, Tandem__V1__Reply__BodyCase body_case, void *msg)
{
    Tandem__V1__Reply r = TANDEM__V1__REPLY__INIT;
    r.id = id;
    r.body_case = body_case;
    r.hello = msg; /* every member of the oneof is a pointer in the same union */
    tdm_conn_send(c, &r);
}

const char *tdm__id_hex(const uint8_t *id, char buf[2 * TDM_ID_LEN + 1])
{
    tdm_id_hex(id, buf);
    return buf;
}

int tdm__check_name(tdm_conn *c, uint64_t id, const char *name, const char *field)
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

int tdm__get_id(tdm_conn *c, uint64_t id, const ProtobufCBinaryData *b, const char *field, int64_t index,
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

ecode tdm__pose_xform(const double p[7], tdm_xform *x, double normalised[7])
{
    for (int i = 0; i < 7; i++)
        if (!isfinite(p[i])) return E(NON_FINITE);
    tdm_quat q = {p[3], p[4], p[5], p[6]};
    double n = tdm_quat_norm(q);
    if (!tdm_quat_is_unit(q)) return E(NOT_UNIT);
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

int tdm__work_apart(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("TDM_DECODE_APART");
        on = !(e && strcmp(e, "0") == 0);
    }
    return on;
}

int tdm__hop_apart(tdm_conn *c, uint64_t id, tdm_arena **arena, tdm_pool_hop *h, uv_work_cb work,
                   uv_after_work_cb after)
{
    if (!*arena) return -1;
    h->c = c, h->id = id;
    h->work.data = h; /* the job: h is its first member */
    h->arena = *arena;
    *arena = NULL; /* c->arena: the next request decodes into a new one */
    tdm_metrics_mark_take(&h->mark); /* re-entered for the rest */
    tdm_conn_begin(c);
    if (uv_queue_work(c->io->loop, &h->work, work, after) != 0) {
        /* cannot happen: uv_queue_work fails only without a callback */
        *arena = h->arena;
        tdm_conn_end(c);
        return -1;
    }
    return 0;
}

int tdm__hop_back(tdm_pool_hop *h, tdm_metrics_mark *outer)
{
    tdm_srv_lock(h->c->srv);
    *outer = tdm_metrics_enter(&h->mark);
    if (!tdm_conn_alive(h->c)) return 0;
    if (!h->c->srv->shutting_down) return 1;
    tdm_conn_send_error(h->c, h->id, E(BUSY), "", -1, "the server is shutting down; retry later");
    return 0;
}

void tdm__hop_end(tdm_pool_hop *h, tdm_metrics_mark outer, void *job)
{
    tdm_conn *c = h->c;
    tdm_server *srv = c->srv;
    tdm_metrics_leave(outer);
    tdm_arena_free(h->arena);
    free(job);
    tdm_conn_end(c);
    tdm_srv_unlock(srv);
}

void tdm__submit_after_pool(tdm_writer_op *op)
{
    tdm_server *srv = ((tdm_conn *)op->owner)->srv;
    tdm_srv_lock(srv);
    tdm_metrics_mark outer = tdm_metrics_enter(&op->mark);
    tdm_writer_submit(srv->writer, op);
    tdm_metrics_leave(outer);
    tdm_srv_unlock(srv);
}

/* ---- routing ---- */

void tdm_request_handle(tdm_conn *c, const uint8_t *frame, size_t len)
{
    if (!c->arena && !(c->arena = tdm_arena_new())) {
        tdm_conn_send_error(c, 0, E(NO_MEMORY), "frame", -1, "out of memory decoding a frame");
        return;
    }
    const char *why = NULL;
    Tandem__V1__Request *req = tdm_decode_request(c->arena, frame, len, &why);
    tdm_request_dispatch(c, req, why);
}

void tdm_request_dispatch(tdm_conn *c, Tandem__V1__Request *req, const char *why)
{
    tdm_server *srv = c->srv;
    if (!req) {
        tdm_conn_send_error(c, 0, E(BAD_REQUEST), "frame", -1, "%s", why);
        return;
    }
    __atomic_add_fetch(&srv->counters.requests, 1, __ATOMIC_RELAXED);
    tdm_metrics_request((int)req->body_case);
    uint64_t id = req->id;
    /* a query (Query, MotionCheck) on a connection past Hello is handled holding the server's lock
       as it is (shared on a plain connection's read: io.h); every other request changes the
       daemon's state and takes it exclusive */
    if (!c->authed ||
        (req->body_case != TANDEM__V1__REQUEST__BODY_QUERY && req->body_case != TANDEM__V1__REQUEST__BODY_MOTION_CHECK))
        tdm_srv_exclusive(srv);
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
    case TANDEM__V1__REQUEST__BODY_HELLO: tdm__hello(c, id, req->hello); break;
    case TANDEM__V1__REQUEST__BODY_MESH_PUT: tdm__mesh_put(c, id, req->mesh_put); break;
    case TANDEM__V1__REQUEST__BODY_MESH_LIST: tdm__mesh_list(c, id); break;
    case TANDEM__V1__REQUEST__BODY_MESH_DELETE: tdm__mesh_delete(c, id, req->mesh_delete); break;
    case TANDEM__V1__REQUEST__BODY_SCENE_PUT: tdm__scene_put(c, id, req->scene_put); break;
    case TANDEM__V1__REQUEST__BODY_SCENE_LIST: tdm__scene_list(c, id); break;
    case TANDEM__V1__REQUEST__BODY_SCENE_DELETE: tdm__scene_delete(c, id, req->scene_delete); break;
    case TANDEM__V1__REQUEST__BODY_QUERY: tdm__query(c, id, req->query); break;
    case TANDEM__V1__REQUEST__BODY_STATS: tdm__stats(c, id); break;
    case TANDEM__V1__REQUEST__BODY_ROBOT_PUT: tdm__robot_put(c, id, req->robot_put); break;
    case TANDEM__V1__REQUEST__BODY_ROBOT_LIST: tdm__robot_list(c, id); break;
    case TANDEM__V1__REQUEST__BODY_ROBOT_DELETE: tdm__robot_delete(c, id, req->robot_delete); break;
    case TANDEM__V1__REQUEST__BODY_ROBOT_SCENE_PUT: tdm__robot_scene_put(c, id, req->robot_scene_put); break;
    case TANDEM__V1__REQUEST__BODY_MOTION_CHECK: tdm__motion_check(c, id, req->motion_check); break;
    case TANDEM__V1__REQUEST__BODY_RING_OPEN: tdm_conn_ring_open(c, id, req->ring_open->bytes); break;
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

