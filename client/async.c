/* The asynchronous client (hiredis' async.c): the event loop tells us when the socket is
 * readable or writable, and we ask it, through the hooks, for the readiness we need.
 *
 * The context goes away only at well-defined points, never inside a callback: failures and
 * tdm_async_free/disconnect called from a callback set a flag, and the entry point that
 * invoked the callback (tdm_async_handle_read/write) tears the context down once the
 * callback has returned. Teardown fails every pending request (in the order sent), then
 * calls the connect or disconnect callback, then the loop's cleanup hook, then frees. */
#define _GNU_SOURCE /* MSG_NOSIGNAL */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

#define RECV_CHUNK (64u << 10)
#define READ_BUDGET (1u << 20) /* bytes read per readable event, to stay fair to other handles */
#define OBUF_KEEP (1u << 20)

enum {
    F_CONNECTING = 1 << 0,    /* TCP connect under way */
    F_CONNECTED = 1 << 1,     /* Hello answered; the connect callback said 0 */
    F_DISCONNECTING = 1 << 2, /* tdm_async_disconnect: close when nothing is pending */
    F_FREEING = 1 << 3,       /* tdm_async_free from inside a callback */
    F_TEARDOWN = 1 << 4,      /* tear down at the next safe point */
    F_DEAD = 1 << 5,          /* teardown under way */
    F_STARTED = 1 << 6,       /* a socket was opened: the connect callback will be called */
    F_HANDSHAKE = 1 << 7      /* tls://: the TLS handshake is under way (after the TCP connect) */
};

/* Timeouts (tdm_connect_opts): timeout_ms bounds the TCP connect and the Hello handshake
 * together, io_timeout_ms each later request from its submission to its reply. One timer
 * of the loop's (ev.set_timer) is armed for the earliest deadline: the connect deadline
 * before Hello is answered, then the oldest waiting request's (requests are submitted in id
 * order with the same timeout, so the smallest waiting id has the earliest deadline). */

struct tdm_async {
    int ephemeral_scenes; /* tdm_async_set_ephemeral_scenes */
    int fd;
    tdm__tls *tls; /* tls:// addresses */
    unsigned flags;
    int err;
    int in_callback;
    uint64_t next_id;
    tdm_reader reader;
    tdm__buf obuf;
    tdm__ptable pending;
    tdm_server_info info;
    tdm_async_ev ev;
    bool attached, reading, writing;
    tdm_async_connect_cb *on_connect;
    tdm_async_disconnect_cb *on_disconnect;
    void *data;
    int connect_timeout_ms, io_timeout_ms;
    double connect_deadline; /* 0: none */
    double timer_at;         /* when the armed timer fires; 0: not armed */
    double expired_upto;     /* a request timeout: requests due by then get ETIMEOUT, the rest ECLOSED */
    char addr[256];
    char errstr[640];
};

static void async_fail(tdm_async *ac, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void async_fail(tdm_async *ac, int code, const char *fmt, ...)
{
    if (!ac->err) {
        va_list ap;
        va_start(ap, fmt);
        tdm__vfmt(ac->errstr, sizeof ac->errstr, fmt, ap);
        va_end(ap);
        ac->err = code;
    }
    ac->flags |= F_TEARDOWN;
}

static void want_write(tdm_async *ac)
{
    if (ac->attached && !ac->writing && ac->ev.add_write) {
        ac->writing = true;
        ac->ev.add_write(ac->ev.data);
    }
}

static void stop_write(tdm_async *ac)
{
    if (ac->attached && ac->writing && ac->ev.del_write) ac->ev.del_write(ac->ev.data);
    ac->writing = false;
}

static void call_reply(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const tdm_reply *r)
{
    if (!cb) return;
    ac->in_callback++;
    cb(ac, r, privdata);
    ac->in_callback--;
}

static void teardown(tdm_async *ac)
{
    if (ac->flags & F_DEAD) return;
    ac->flags |= F_DEAD;
    int status = ac->err;
    if (ac->attached) {
        if (ac->reading && ac->ev.del_read) ac->ev.del_read(ac->ev.data);
        stop_write(ac);
        ac->reading = false;
        if (ac->timer_at > 0 && ac->ev.set_timer) ac->ev.set_timer(ac->ev.data, -1);
        ac->timer_at = 0;
    }
    tdm__tls_free(ac->tls);
    ac->tls = NULL;
    if (ac->fd >= 0) close(ac->fd);
    ac->fd = -1;

    tdm__pending *p;
    tdm_reply r;
    while ((p = tdm__ptable_min_waiting(&ac->pending))) {
        tdm_async_reply_cb *cb = p->cb;
        void *priv = p->privdata;
        memset(&r, 0, sizeof r);
        r.id = p->id;
        r.type = TDM_REPLY_NONE;
        r.status = status ? status : TDM_CLIENT_ECANCELED;
        /* after a request timed out, the others on the connection did not: they are closed */
        if (ac->expired_upto > 0 && !(p->deadline > 0 && p->deadline <= ac->expired_upto)) r.status = TDM_CLIENT_ECLOSED;
        r.error.message = r.error.field = "";
        r.error.index = -1;
        tdm__ptable_del(&ac->pending, p);
        call_reply(ac, cb, priv, &r);
    }
    ac->in_callback++;
    if (ac->flags & F_CONNECTED) {
        if (ac->on_disconnect) ac->on_disconnect(ac, status);
    } else if ((ac->flags & F_STARTED) && ac->on_connect) {
        ac->on_connect(ac, status ? status : TDM_CLIENT_ECANCELED);
    }
    ac->in_callback--;
    if (ac->attached && ac->ev.cleanup) ac->ev.cleanup(ac->ev.data);
    tdm__reader_deinit(&ac->reader);
    tdm__buf_free(&ac->obuf);
    tdm__ptable_free(&ac->pending);
    free(ac);
}

/* At an entry point, after callbacks: 1 if the context is gone. */
static int maybe_teardown(tdm_async *ac)
{
    if (ac->in_callback) return 0;
    if ((ac->flags & F_DISCONNECTING) && ac->pending.count == 0) ac->flags |= F_TEARDOWN;
    if (ac->flags & (F_TEARDOWN | F_FREEING)) {
        teardown(ac);
        return 1;
    }
    return 0;
}

/* ---- timeouts ---------------------------------------------------------------------------------- */

static void arm_timer(tdm_async *ac, double at)
{
    if (!ac->attached || !ac->ev.set_timer || at <= 0) return;
    if (ac->timer_at > 0 && ac->timer_at <= at) return; /* an earlier one is armed */
    ac->timer_at = at;
    double left = at - tdm__now_ms();
    ac->ev.set_timer(ac->ev.data, left > 0 ? (int64_t)left + 1 : 0);
}

/* Arms the timer for the earliest deadline left (none: disarms it). */
static void rearm(tdm_async *ac)
{
    double at = 0;
    if (!(ac->flags & F_CONNECTED)) at = ac->connect_deadline;
    if (at <= 0 && ac->io_timeout_ms > 0) {
        tdm__pending *p = tdm__ptable_min_waiting(&ac->pending);
        if (p) at = p->deadline;
    }
    if (at > 0) {
        arm_timer(ac, at);
    } else if (ac->timer_at > 0) {
        ac->timer_at = 0;
        if (ac->attached && ac->ev.set_timer) ac->ev.set_timer(ac->ev.data, -1);
    }
}

static const char *type_name(int type)
{
    switch (type) {
    case TDM_REPLY_HELLO: return "Hello";
    case TDM_REPLY_MESH_PUT: return "MeshPut";
    case TDM_REPLY_MESH_LIST: return "MeshList";
    case TDM_REPLY_MESH_DELETE: return "MeshDelete";
    case TDM_REPLY_SCENE_PUT: return "ScenePut";
    case TDM_REPLY_SCENE_LIST: return "SceneList";
    case TDM_REPLY_SCENE_DELETE: return "SceneDelete";
    case TDM_REPLY_QUERY: return "Query";
    case TDM_REPLY_STATS: return "Stats";
    case TDM_REPLY_ROBOT_PUT: return "RobotPut";
    case TDM_REPLY_ROBOT_LIST: return "RobotList";
    case TDM_REPLY_ROBOT_DELETE: return "RobotDelete";
    case TDM_REPLY_ROBOT_SCENE_PUT: return "RobotScenePut";
    case TDM_REPLY_MOTION_CHECK: return "MotionCheck";
    case TDM_REPLY_RING_OPEN: return "RingOpen";
    default: return "request";
    }
}

void tdm_async_handle_timeout(tdm_async *ac)
{
    if (!ac || ac->in_callback || (ac->flags & F_DEAD)) return;
    ac->timer_at = 0;
    double now = tdm__now_ms();
    if (!(ac->flags & F_CONNECTED) && ac->connect_deadline > 0 && now >= ac->connect_deadline) {
        if (ac->flags & F_CONNECTING)
            async_fail(ac, TDM_CLIENT_ETIMEOUT, "%s: connect timed out after %d ms", ac->addr,
                       ac->connect_timeout_ms);
        else
            async_fail(ac, TDM_CLIENT_ETIMEOUT, "%s: connected, but no Hello reply within %d ms", ac->addr,
                       ac->connect_timeout_ms);
    } else if ((ac->flags & F_CONNECTED) && ac->io_timeout_ms > 0) {
        tdm__pending *p = tdm__ptable_min_waiting(&ac->pending);
        if (p && p->deadline > 0 && p->deadline <= now) {
            async_fail(ac, TDM_CLIENT_ETIMEOUT,
                       "%s: request %llu (%s) got no reply within %d ms; the connection is closed", ac->addr,
                       (unsigned long long)p->id, type_name(p->type), ac->io_timeout_ms);
            ac->expired_upto = now;
        }
    }
    if (!maybe_teardown(ac)) rearm(ac);
}

/* ---- requests ---------------------------------------------------------------------------------- */

static int submit(tdm_async *ac, const tdm__req *rq, tdm_async_reply_cb *cb, void *privdata, size_t n_queries,
                  int want_pairs, uint64_t *id)
{
    if (!ac) return TDM_CLIENT_EINVAL;
    if (ac->err || (ac->flags & (F_DISCONNECTING | F_FREEING | F_TEARDOWN | F_DEAD))) return TDM_CLIENT_ECLOSED;
    size_t mark = ac->obuf.len;
    int rc = tdm__encode(rq, ac->next_id, &ac->obuf, ac->info.limits.max_frame_bytes, ac->errstr, sizeof ac->errstr);
    if (rc) return rc;
    tdm__pending *p = tdm__ptable_add(&ac->pending, ac->next_id);
    if (!p) {
        ac->obuf.len = mark;
        return TDM_CLIENT_ENOMEM;
    }
    p->type = (uint8_t)rq->type;
    p->cb = cb;
    p->privdata = privdata;
    p->qs = (tdm__qsink){NULL, n_queries, want_pairs, NULL};
    if (rq->type == TDM_REPLY_HELLO) p->deadline = ac->connect_deadline;
    else if (ac->io_timeout_ms > 0) p->deadline = tdm__now_ms() + ac->io_timeout_ms;
    if (p->deadline > 0 && (ac->flags & F_CONNECTED)) arm_timer(ac, p->deadline);
    if (id) *id = ac->next_id;
    ac->next_id++;
    want_write(ac);
    return 0;
}

static void hello_done(tdm_async *ac, const tdm_reply *r, void *privdata)
{
    (void)privdata;
    if (r->status == 0) {
        if (r->u.hello.protocol_version != TDM_PROTOCOL_VERSION) {
            async_fail(ac, TDM_CLIENT_EVERSION, "the server speaks protocol version %u, this library %d",
                       r->u.hello.protocol_version, TDM_PROTOCOL_VERSION);
            return;
        }
        ac->info = r->u.hello;
        ac->flags |= F_CONNECTED;
        if (ac->on_connect) ac->on_connect(ac, 0);
        /* requests queued before the handshake: their deadlines now count */
        if (!(ac->flags & (F_TEARDOWN | F_FREEING))) rearm(ac);
    } else if (r->status == TDM_CLIENT_ESERVER) {
        async_fail(ac, r->error.code == TDM_SERVER_UNSUPPORTED_VERSION ? TDM_CLIENT_EVERSION : TDM_CLIENT_ESERVER,
                   "the server refused Hello: %s: %s", tdm_server_code_name(r->error.code), r->error.message);
    } /* else the connection failed: teardown reports it through the connect callback */
}

tdm_async *tdm_async_connect(const tdm_connect_opts *opts)
{
    tdm_async *ac = calloc(1, sizeof *ac);
    if (!ac) return NULL;
    ac->fd = -1;
    ac->next_id = 1;
    if (tdm__reader_init(&ac->reader, opts ? opts->max_reply_bytes : 0) || tdm__ptable_init(&ac->pending, 64)) {
        free(ac->reader.buf);
        free(ac->reader.chars);
        free(ac->pending.slots);
        free(ac);
        return NULL;
    }
    if (!opts) {
        ac->err = TDM_CLIENT_EINVAL;
        tdm__fmt(ac->errstr, sizeof ac->errstr, "no connect options");
        return ac;
    }
    ac->connect_timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 0;
    ac->io_timeout_ms = opts->io_timeout_ms > 0 ? opts->io_timeout_ms : 0;
    tdm__fmt(ac->addr, sizeof ac->addr, "%s", opts->addr ? opts->addr : "");
    if (ac->connect_timeout_ms) ac->connect_deadline = tdm__now_ms() + ac->connect_timeout_ms;
    int prog;
    const char *addr;
    int tls = tdm__tls_scheme(opts->addr, &addr);
    int fd = tdm__net_connect(addr, 0, false, &prog, ac->errstr, sizeof ac->errstr);
    if (fd < 0) {
        ac->err = fd;
        return ac;
    }
    ac->fd = fd;
    if (tls) {
        int rc = tdm__tls_new(fd, addr, opts->tls_ca_file, &ac->tls, ac->errstr, sizeof ac->errstr);
        if (rc) {
            close(ac->fd);
            ac->fd = -1;
            ac->err = rc;
            return ac;
        }
        ac->flags |= F_HANDSHAKE;
    }
    ac->flags |= F_STARTED | (prog ? F_CONNECTING : 0);
    tdm__req rq = {.type = TDM_REPLY_HELLO,
                   .u.hello = {opts->auth_token, opts->client_name ? opts->client_name : "libtandem"}};
    int rc = submit(ac, &rq, hello_done, NULL, 0, 0, NULL);
    if (rc) {
        tdm__tls_free(ac->tls);
        ac->tls = NULL;
        close(ac->fd);
        ac->fd = -1;
        ac->flags &= ~(unsigned)F_STARTED;
        ac->err = rc;
    }
    return ac;
}

int tdm_async_attach(tdm_async *ac, const tdm_async_ev *ev)
{
    if (!ac || !ev || ac->attached || ac->fd < 0 || (ac->flags & F_DEAD)) return TDM_CLIENT_EINVAL;
    ac->ev = *ev;
    ac->attached = true;
    ac->reading = true;
    if (ac->ev.add_read) ac->ev.add_read(ac->ev.data);
    if (ac->obuf.len > ac->obuf.off || (ac->flags & (F_CONNECTING | F_HANDSHAKE))) want_write(ac);
    rearm(ac);
    return 0;
}

void tdm_async_set_connect_cb(tdm_async *ac, tdm_async_connect_cb *cb) { ac->on_connect = cb; }
void tdm_async_set_disconnect_cb(tdm_async *ac, tdm_async_disconnect_cb *cb) { ac->on_disconnect = cb; }
void tdm_async_set_data(tdm_async *ac, void *data) { ac->data = data; }
void *tdm_async_data(const tdm_async *ac) { return ac->data; }
int tdm_async_fd(const tdm_async *ac) { return ac->fd; }
int tdm_async_err(const tdm_async *ac) { return ac->err; }
const char *tdm_async_errstr(const tdm_async *ac) { return ac->err ? ac->errstr : ""; }
const tdm_server_info *tdm_async_server_info(const tdm_async *ac) { return &ac->info; }
size_t tdm_async_pending(const tdm_async *ac) { return ac->pending.count; }

/* ---- I/O -------------------------------------------------------------------------------------- */

/* 0 once the connection is ready for frames (TCP connected, TLS handshake done); 1 while
 * the handshake waits for the socket; -1 on failure. */
static int check_connected(tdm_async *ac)
{
    if (ac->flags & F_CONNECTING) {
        int e = tdm__net_so_error(ac->fd);
        if (e) {
            async_fail(ac, TDM_CLIENT_ECONNECT, "connect: %s", strerror(e));
            return -1;
        }
        ac->flags &= ~(unsigned)F_CONNECTING;
    }
    if (!(ac->flags & F_HANDSHAKE)) return 0;
    int rc = tdm__tls_handshake(ac->tls, ac->errstr, sizeof ac->errstr);
    if (rc == TDM__TLS_WANT_WRITE) {
        want_write(ac);
        return 1;
    }
    if (rc == TDM__TLS_WANT_READ) { /* reading is always on; writability would only spin */
        stop_write(ac);
        return 1;
    }
    if (rc < 0) {
        char why[sizeof ac->errstr];
        tdm__fmt(why, sizeof why, "%s", ac->errstr);
        async_fail(ac, rc, "%s", why);
        return -1;
    }
    ac->flags &= ~(unsigned)F_HANDSHAKE;
    if (ac->obuf.len > ac->obuf.off) want_write(ac); /* the Hello waits */
    return 0;
}

static void dispatch(tdm_async *ac, const uint8_t *frame, size_t len)
{
    tdm__frame f;
    tdm_reader *r = &ac->reader;
    if (tdm__frame_parse(r, frame, len, &f)) {
        async_fail(ac, r->err, "%s", r->errstr);
        return;
    }
    tdm__pending *p = tdm__ptable_get(&ac->pending, f.id);
    if (!p) {
        if (f.type == TDM_REPLY_ERROR && tdm__decode(r, &f, NULL) == 0)
            async_fail(ac, TDM_CLIENT_EPROTO, "the server could not read a request (%s): %s",
                       tdm_server_code_name(r->reply.error.code), r->reply.error.message);
        else
            async_fail(ac, TDM_CLIENT_EPROTO, "the server answered request id %llu, which is not in flight",
                       (unsigned long long)f.id);
        return;
    }
    if (f.type != TDM_REPLY_ERROR && f.type != p->type) {
        async_fail(ac, TDM_CLIENT_EPROTO, "the server answered a request of type %d with a reply of type %d",
                   p->type, f.type);
        return;
    }
    tdm__qsink qs = p->qs;
    if (tdm__decode(r, &f, p->type == TDM_REPLY_QUERY ? &qs : NULL)) {
        async_fail(ac, r->err, "%s", r->errstr);
        return;
    }
    tdm_async_reply_cb *cb = p->cb;
    void *priv = p->privdata;
    tdm__ptable_del(&ac->pending, p); /* before the callback, which may send more */
    call_reply(ac, cb, priv, &r->reply);
}

void tdm_async_handle_read(tdm_async *ac)
{
    if (!ac || ac->in_callback || (ac->flags & F_DEAD)) return;
    if (check_connected(ac) == 0) {
        size_t budget = READ_BUDGET;
        bool eof = false;
        while (budget > 0 && !(ac->flags & (F_TEARDOWN | F_FREEING))) {
            uint8_t *buf;
            size_t avail;
            if (tdm__reader_space(&ac->reader, RECV_CHUNK, &buf, &avail)) {
                async_fail(ac, ac->reader.err, "%s", ac->reader.errstr);
                break;
            }
            ssize_t n = tdm__io_recv(ac->tls, ac->fd, buf, avail);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            if (n < 0) {
                async_fail(ac, TDM_CLIENT_EIO, "recv: %s", tdm__io_strerror(ac->tls, errno));
                break;
            }
            if (n == 0) eof = true;
            tdm__reader_commit(&ac->reader, (size_t)n);
            budget = (size_t)n < budget ? budget - (size_t)n : 0;
            /* dispatch what arrived before acting on an end of stream: the server's last
             * words (an Error before it closes) are worth delivering */
            const uint8_t *frame;
            size_t len;
            int rc = 0;
            while (!(ac->flags & (F_TEARDOWN | F_FREEING)) && (rc = tdm__reader_next(&ac->reader, &frame, &len)) == 1)
                dispatch(ac, frame, len);
            if (rc < 0) async_fail(ac, rc, "%s", ac->reader.errstr);
            if (eof) {
                async_fail(ac, TDM_CLIENT_ECLOSED, "the server closed the connection");
                break;
            }
        }
    }
    maybe_teardown(ac);
}

void tdm_async_handle_write(tdm_async *ac)
{
    if (!ac || ac->in_callback || (ac->flags & F_DEAD)) return;
    if (check_connected(ac) == 0) {
        tdm__buf *b = &ac->obuf;
        while (b->off < b->len) {
            ssize_t n = tdm__io_send(ac->tls, ac->fd, b->data + b->off, b->len - b->off);
            if (n > 0) {
                tdm__buf_consume(b, (size_t)n, OBUF_KEEP);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            /* EPIPE / ECONNRESET: let the read side deliver what the server said, then close */
            async_fail(ac, errno == EPIPE || errno == ECONNRESET ? TDM_CLIENT_ECLOSED : TDM_CLIENT_EIO, "send: %s",
                       tdm__io_strerror(ac->tls, errno));
            break;
        }
        if (b->off >= b->len) stop_write(ac);
    }
    maybe_teardown(ac);
}

void tdm_async_disconnect(tdm_async *ac)
{
    if (!ac || (ac->flags & F_DEAD)) return;
    ac->flags |= F_DISCONNECTING;
    maybe_teardown(ac);
}

void tdm_async_free(tdm_async *ac)
{
    if (!ac || (ac->flags & F_DEAD)) return;
    ac->flags |= F_FREEING;
    maybe_teardown(ac);
}

/* ---- the API ------------------------------------------------------------------------------------ */

int tdm_async_mesh_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name, const float *verts,
                       uint32_t n_verts, const uint32_t *tris, uint32_t n_tris, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_MESH_PUT, .u.mesh_put = {name, verts, n_verts, tris, n_tris}};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_mesh_list(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_MESH_LIST};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_mesh_delete(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const uint8_t mesh_id[TDM_ID_BYTES],
                          uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_MESH_DELETE, .u.id = mesh_id};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_scene_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name,
                        const tdm_scene_object *objects, size_t n_objects, const tdm_object_pair *allowed,
                        size_t n_allowed, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_SCENE_PUT,
                   .u.scene_put = {name, objects, n_objects, allowed, n_allowed, ac->ephemeral_scenes}};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_scene_list(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_SCENE_LIST};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_scene_delete(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                           const uint8_t scene_id[TDM_ID_BYTES], uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_SCENE_DELETE, .u.id = scene_id};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_query(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const uint8_t scene_id[TDM_ID_BYTES],
                    tdm_query_mode mode, const double *poses, uint32_t n_movable, size_t n_queries,
                    uint32_t max_contacts, int want_pairs, uint64_t *id)
{
    tdm__req rq;
    if (!ac) return TDM_CLIENT_EINVAL;
    if (tdm__req_query(&rq, scene_id, mode, poses, n_movable, n_queries, max_contacts, want_pairs))
        return TDM_CLIENT_EINVAL;
    if (ac->info.limits.max_queries && n_queries > ac->info.limits.max_queries) return TDM_CLIENT_ELIMIT;
    return submit(ac, &rq, cb, privdata, n_queries, want_pairs, id);
}

int tdm_async_stats(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_STATS};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_robot_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name, const char *urdf,
                        const char *srdf, const tdm_robot_mesh_ref *meshes, size_t n_meshes, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_PUT, .u.robot_put = {name, urdf, srdf, meshes, n_meshes}};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_robot_list(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_LIST};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_robot_delete(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                           const uint8_t robot_id[TDM_ID_BYTES], uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_DELETE, .u.id = robot_id};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

int tdm_async_robot_scene_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name,
                              const uint8_t robot_id[TDM_ID_BYTES], const char *world_yaml, uint64_t *id)
{
    tdm__req rq = {.type = TDM_REPLY_ROBOT_SCENE_PUT,
                   .u.robot_scene_put = {name, robot_id, world_yaml, ac->ephemeral_scenes}};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}

void tdm_async_set_ephemeral_scenes(tdm_async *ac, int on)
{
    if (ac) ac->ephemeral_scenes = on != 0;
}

int tdm_async_query_configs(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                            const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *configs,
                            uint32_t n_joints, size_t n_queries, uint32_t max_contacts, int want_pairs, uint64_t *id)
{
    tdm__req rq;
    if (!ac) return TDM_CLIENT_EINVAL;
    if (tdm__req_query_configs(&rq, scene_id, mode, configs, n_joints, n_queries, max_contacts, want_pairs))
        return TDM_CLIENT_EINVAL;
    if (ac->info.limits.max_queries && n_queries > ac->info.limits.max_queries) return TDM_CLIENT_ELIMIT;
    return submit(ac, &rq, cb, privdata, n_queries, want_pairs, id);
}

int tdm_async_motion_check(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const uint8_t scene_id[TDM_ID_BYTES],
                           double resolution, const double *motions, uint32_t n_joints, size_t n_motions, uint64_t *id)
{
    return tdm_async_motion_check_flags(ac, cb, privdata, scene_id, resolution, motions, n_joints, NULL, n_motions, 0,
                                        id);
}

int tdm_async_motion_check_paths(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                 const uint8_t scene_id[TDM_ID_BYTES], double resolution, const double *points,
                                 uint32_t n_joints, const uint32_t *n_points, size_t n_motions, uint64_t *id)
{
    if (!n_points) return TDM_CLIENT_EINVAL;
    return tdm_async_motion_check_flags(ac, cb, privdata, scene_id, resolution, points, n_joints, n_points, n_motions,
                                        0, id);
}

int tdm_async_motion_check_flags(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                 const uint8_t scene_id[TDM_ID_BYTES], double resolution, const double *points,
                                 uint32_t n_joints, const uint32_t *n_points, size_t n_motions, unsigned flags,
                                 uint64_t *id)
{
    if (!ac || !scene_id || !points || n_joints == 0 || n_motions == 0 || (flags & ~(unsigned)TDM_MOTION_ANY_STATE))
        return TDM_CLIENT_EINVAL;
    size_t total = 0;
    for (size_t i = 0; i < n_motions; i++) {
        size_t p = n_points ? n_points[i] : 2;
        if (p < 2 || total > SIZE_MAX / 8 / n_joints - p) return TDM_CLIENT_EINVAL;
        total += p;
    }
    if (ac->info.limits.max_queries && n_motions > ac->info.limits.max_queries) return TDM_CLIENT_ELIMIT;
    tdm__req rq = {.type = TDM_REPLY_MOTION_CHECK,
                   .u.motion_check = {scene_id, resolution, points, total * n_joints, n_points, n_motions, flags}};
    return submit(ac, &rq, cb, privdata, 0, 0, id);
}
