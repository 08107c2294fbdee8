/* Several servers behind one blocking context (issue 14, point 9): one async context per
 * server, driven by a poll() loop of our own (the hooks below record what each context
 * wants), so that a call waits on every server at once.
 *
 * Uploads go to every connected server and are kept (copied) in an upload log, replayed in
 * order to a server when it (re)connects, before it is given any query: content ids make a
 * replay idempotent. Batches are cut into parts, one or more per usable server; a part is
 * in flight on at most one server at a time, and its answers are copied into the caller's
 * arrays only from a successful reply, so an answer is placed exactly once. A part whose
 * server fails (connection lost, timeout: the async context then fails every pending
 * request, so no late reply can follow) goes back to the queue and is sent to another
 * server. A failed server is reconnected after a backoff (retry_min_ms, doubling up to
 * retry_max_ms), or at once when no server is usable. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { S_DOWN, S_CONNECTING, S_REPLAYING, S_UP };

typedef struct server {
    struct tdm_multi *m;
    char *addr;
    tdm_async *ac; /* NULL when down */
    int state;
    short events;     /* what the context asked for */
    double timer_at;  /* its timer; 0: none */
    double retry_at;  /* down: reconnect from then on */
    double failed_at; /* last failure */
    int backoff_ms;
    size_t replay_next; /* replaying: the log entry in flight (one at a time: a server may finish
                           pipelined puts out of order, and a scene needs its meshes stored) */
    size_t inflight;  /* parts in flight */
    int err;
    char errstr[640];
} server;

enum { L_MESH, L_SCENE, L_ROBOT, L_ROBOT_SCENE };

typedef struct log_entry {
    int kind;
    char *name;
    union {
        struct { float *verts; uint32_t n_verts; uint32_t *tris; uint32_t n_tris; } mesh;
        struct { tdm_scene_object *objects; size_t n; tdm_object_pair *allowed; size_t n_allowed; } scene;
        struct { char *urdf, *srdf; tdm_robot_mesh_ref *meshes; size_t n; } robot;
        struct { uint8_t robot_id[TDM_ID_BYTES]; char *world; } rscene;
    } u;
    int ephemeral; /* scenes: put ephemeral (tdm_multi_set_ephemeral_scenes when it was logged) */
    /* scenes, once stored: their id and checked object pairs per query (what a server's
       max_query_tasks counts; 0: not known), which bound the parts of their queries */
    uint8_t scene_id[TDM_ID_BYTES];
    uint32_t checks;
} log_entry;

enum { P_QUEUED, P_SENT, P_DONE };

struct op;
typedef struct part {
    struct op *op;
    size_t first, count; /* queries (motions) first..first+count of the call */
    int state;
    int attempts;
    server *s;
    tdm_contact *pairs; /* want_pairs: this part's pairs, copied */
    size_t n_pairs;
    /* broadcast: the server this target is */
} part;

enum { OP_QUERY, OP_CONFIGS, OP_MOTIONS, OP_BROADCAST };

typedef struct op {
    int kind;
    double t_start;
    /* queries */
    const uint8_t *scene_id;
    int mode;
    const double *in;     /* poses, configs or motions */
    size_t stride;        /* doubles per query (or motion) */
    uint32_t n_movable;   /* or n_joints */
    uint32_t max_contacts;
    int want_pairs;
    double resolution;
    unsigned flags;       /* motions: TDM_MOTION_* */
    tdm_query_result *results;
    int64_t *first_colliding;
    uint64_t *n_states;
    double *last_free;
    part *parts;
    size_t n_parts, queued, sent;
    /* broadcast */
    const log_entry *entry;
    size_t targets, answered, accepted;
    uint8_t id_out[TDM_ID_BYTES];
    int created;
    uint32_t *movable;
    size_t movable_cap, n_movable_out;
    uint32_t n_checks_out; /* a robot scene's checked pairs per configuration */
    /* outcome */
    int status; /* first failure that ends the call */
} op;

struct tdm_multi {
    server *servers;
    size_t n;
    tdm_connect_opts opts;
    char *token, *name;
    int retry_min_ms, retry_max_ms;
    size_t min_part;
    size_t rr;
    int ephemeral_scenes; /* tdm_multi_set_ephemeral_scenes */
    log_entry *log;
    size_t log_len, log_cap;
    op *cur;
    int err;
    char errstr[1024];
    tdm_server_error serr;
    char serr_message[512], serr_field[64];
    int has_serr;
    size_t resent; /* parts re-sent after a failure, over the context's life */
    unsigned fork_gen; /* tdm__fork_gen at the connect */
};

static void mfmt(tdm_multi *m, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void mfmt(tdm_multi *m, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tdm__vfmt(m->errstr, sizeof m->errstr, fmt, ap);
    va_end(ap);
    (void)code;
}

/* ---- event hooks: record what each context wants ------------------------------------------- */

static void h_add_read(void *d) { ((server *)d)->events |= POLLIN; }
static void h_del_read(void *d) { ((server *)d)->events &= (short)~POLLIN; }
static void h_add_write(void *d) { ((server *)d)->events |= POLLOUT; }
static void h_del_write(void *d) { ((server *)d)->events &= (short)~POLLOUT; }
static void h_set_timer(void *d, int64_t ms)
{
    server *s = d;
    s->timer_at = ms < 0 ? 0 : tdm__now_ms() + (double)ms;
}
static void h_cleanup(void *d)
{
    server *s = d;
    s->ac = NULL;
    s->events = 0;
    s->timer_at = 0;
}

static void server_down(server *s, int err, const char *why)
{
    tdm_multi *m = s->m;
    s->state = S_DOWN;
    s->err = err ? err : TDM_CLIENT_ECLOSED;
    const char *w = why && *why ? why : tdm_client_strerror(s->err);
    if (!strncmp(w, s->addr, strlen(s->addr))) tdm__fmt(s->errstr, sizeof s->errstr, "%s", w);
    else tdm__fmt(s->errstr, sizeof s->errstr, "%s: %s", s->addr, w);
    double now = tdm__now_ms();
    s->failed_at = now;
    s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : m->retry_min_ms;
    if (s->backoff_ms > m->retry_max_ms) s->backoff_ms = m->retry_max_ms;
    s->retry_at = now + s->backoff_ms;
    s->replay_next = 0;
}

/* ---- sending one log entry or one part ------------------------------------------------------ */

static int send_entry(server *s, const log_entry *e, tdm_async_reply_cb *cb, void *priv)
{
    switch (e->kind) {
    case L_MESH:
        return tdm_async_mesh_put(s->ac, cb, priv, e->name, e->u.mesh.verts, e->u.mesh.n_verts, e->u.mesh.tris,
                                  e->u.mesh.n_tris, NULL);
    case L_SCENE:
        tdm_async_set_ephemeral_scenes(s->ac, e->ephemeral);
        return tdm_async_scene_put(s->ac, cb, priv, e->name, e->u.scene.objects, e->u.scene.n, e->u.scene.allowed,
                                   e->u.scene.n_allowed, NULL);
    case L_ROBOT:
        return tdm_async_robot_put(s->ac, cb, priv, e->name, e->u.robot.urdf, e->u.robot.srdf, e->u.robot.meshes,
                                   e->u.robot.n, NULL);
    default:
        tdm_async_set_ephemeral_scenes(s->ac, e->ephemeral);
        return tdm_async_robot_scene_put(s->ac, cb, priv, e->name, e->u.rscene.robot_id, e->u.rscene.world, NULL);
    }
}

static void on_replayed(tdm_async *ac, const tdm_reply *r, void *priv);

/* Sends the next log entry to a replaying server, or makes it usable when none is left. */
static void replay_next(server *s)
{
    tdm_multi *m = s->m;
    if (s->replay_next >= m->log_len) {
        s->state = S_UP;
        s->backoff_ms = 0;
        return;
    }
    int rc = send_entry(s, &m->log[s->replay_next], on_replayed, s);
    if (rc) {
        char why[700];
        tdm__fmt(why, sizeof why, "%s: replaying an upload: %s", s->addr, tdm_client_strerror(rc));
        server_down(s, rc, why);
        tdm_async_free(s->ac); /* deferred when inside a callback */
    }
}

static void on_replayed(tdm_async *ac, const tdm_reply *r, void *priv)
{
    server *s = priv;
    if (s->state != S_REPLAYING) return; /* the connection is failing: its callback says so */
    if (r->status) {
        char why[700];
        if (r->status == TDM_CLIENT_ESERVER)
            tdm__fmt(why, sizeof why, "%s: replaying an upload: %s: %s", s->addr, tdm_server_code_name(r->error.code),
                     r->error.message);
        else
            tdm__fmt(why, sizeof why, "%s", tdm_async_errstr(ac));
        server_down(s, r->status, why);
        tdm_async_free(ac); /* deferred until this callback returns */
        return;
    }
    s->replay_next++;
    replay_next(s);
}

static void on_connected(tdm_async *ac, int status)
{
    server *s = tdm_async_data(ac);
    if (status) {
        server_down(s, status, tdm_async_errstr(ac));
        return;
    }
    s->state = S_REPLAYING;
    s->replay_next = 0;
    replay_next(s);
}

static void on_disconnected(tdm_async *ac, int status)
{
    server *s = tdm_async_data(ac);
    if (s->state != S_DOWN) server_down(s, status ? status : TDM_CLIENT_ECLOSED, tdm_async_errstr(ac));
}

static void server_connect(server *s)
{
    tdm_multi *m = s->m;
    tdm_connect_opts o = m->opts;
    o.addr = s->addr;
    tdm_async *ac = tdm_async_connect(&o);
    if (!ac) {
        server_down(s, TDM_CLIENT_ENOMEM, "out of memory");
        return;
    }
    if (tdm_async_err(ac)) {
        server_down(s, tdm_async_err(ac), tdm_async_errstr(ac));
        tdm_async_free(ac);
        return;
    }
    s->ac = ac;
    s->state = S_CONNECTING;
    s->events = 0;
    s->timer_at = 0;
    tdm_async_set_data(ac, s);
    tdm_async_set_connect_cb(ac, on_connected);
    tdm_async_set_disconnect_cb(ac, on_disconnected);
    tdm_async_ev ev = {s, h_add_read, h_del_read, h_add_write, h_del_write, h_cleanup, h_set_timer};
    if (tdm_async_attach(ac, &ev)) {
        tdm_async_free(ac);
        s->ac = NULL;
        server_down(s, TDM_CLIENT_EINVAL, "cannot attach");
    }
}

/* ---- parts ------------------------------------------------------------------------------------- */

static bool conn_failure(const tdm_reply *r)
{
    if (r->type == TDM_REPLY_NONE) return true;
    return r->status == TDM_CLIENT_ESERVER && r->error.code == TDM_SERVER_BUSY;
}

static void op_fail_server(op *o, tdm_multi *m, const tdm_reply *r, const char *addr)
{
    if (o->status) return;
    o->status = TDM_CLIENT_ESERVER;
    m->has_serr = 1;
    tdm__fmt(m->serr_message, sizeof m->serr_message, "%s", r->error.message);
    tdm__fmt(m->serr_field, sizeof m->serr_field, "%s", r->error.field);
    m->serr.code = r->error.code;
    m->serr.index = r->error.index;
    mfmt(m, 0, "%s: %s: %s", addr, tdm_server_code_name(r->error.code), r->error.message);
}

static void on_part(tdm_async *ac, const tdm_reply *r, void *priv)
{
    part *p = priv;
    op *o = p->op;
    server *s = tdm_async_data(ac);
    tdm_multi *m = s->m;
    s->inflight--;
    o->sent--;
    p->s = NULL;
    if (r->status) {
        if (conn_failure(r) && p->attempts < 2 * (int)m->n + 2) {
            p->state = P_QUEUED; /* to another server */
            o->queued++;
            m->resent++;
            return;
        }
        p->state = P_DONE;
        if (r->status == TDM_CLIENT_ESERVER) {
            op_fail_server(o, m, r, s->addr);
            /* the server's index is within the part: make it the call's */
            if (m->serr.index >= 0 && (!strcmp(m->serr_field, "poses") || !strcmp(m->serr_field, "configs") ||
                                       !strcmp(m->serr_field, "motions")))
                m->serr.index += (int64_t)p->first;
        } else if (!o->status) {
            o->status = r->status;
            mfmt(m, 0, "%s: a part failed on %d servers in turn; the last: %s", s->addr, p->attempts,
                 r->status == TDM_CLIENT_ESERVER ? tdm_server_code_name(r->error.code) : tdm_async_errstr(ac));
        }
        return;
    }
    p->state = P_DONE;
    if (o->status) return;
    if (o->kind == OP_MOTIONS) {
        const tdm_motion_result *mr = r->u.motion_check.results;
        for (size_t i = 0; i < p->count; i++) {
            size_t k = p->first + i;
            o->first_colliding[k] = mr[i].first_colliding;
            if (o->n_states) o->n_states[k] = mr[i].n_states;
            if (o->last_free && mr[i].n_last_free == o->n_movable)
                memcpy(o->last_free + k * o->n_movable, mr[i].last_free, o->n_movable * sizeof(double));
        }
        return;
    }
    memcpy(o->results + p->first, r->u.query.results, p->count * sizeof *o->results);
    if (o->want_pairs && r->u.query.n_pairs) {
        p->pairs = malloc(r->u.query.n_pairs * sizeof *p->pairs);
        if (!p->pairs) {
            o->status = TDM_CLIENT_ENOMEM;
            mfmt(m, 0, "out of memory for a part's pairs");
            return;
        }
        memcpy(p->pairs, r->u.query.pairs, r->u.query.n_pairs * sizeof *p->pairs);
        p->n_pairs = r->u.query.n_pairs;
    }
}

static int send_part(server *s, part *p)
{
    op *o = p->op;
    const double *in = o->in + p->first * o->stride;
    switch (o->kind) {
    case OP_QUERY:
        return tdm_async_query(s->ac, on_part, p, o->scene_id, o->mode, in, o->n_movable, p->count, o->max_contacts,
                               o->want_pairs, NULL);
    case OP_CONFIGS:
        return tdm_async_query_configs(s->ac, on_part, p, o->scene_id, o->mode, in, o->n_movable, p->count,
                                       o->max_contacts, o->want_pairs, NULL);
    default:
        return tdm_async_motion_check_flags(s->ac, on_part, p, o->scene_id, o->resolution, in, o->n_movable, NULL,
                                            p->count, o->flags, NULL);
    }
}

static server *pick(tdm_multi *m)
{
    server *best = NULL;
    for (size_t k = 0; k < m->n; k++) {
        server *s = &m->servers[(m->rr + k) % m->n];
        if (s->state == S_UP && s->ac && (!best || s->inflight < best->inflight)) best = s;
    }
    return best;
}

static void assign(tdm_multi *m, op *o)
{
    if (o->kind == OP_BROADCAST) return;
    for (size_t i = 0; i < o->n_parts && o->queued && !o->status; i++) {
        part *p = &o->parts[i];
        if (p->state != P_QUEUED) continue;
        server *s = pick(m);
        if (!s) return;
        int rc = send_part(s, p);
        if (rc == TDM_CLIENT_ECLOSED) continue; /* going down: its teardown comes */
        if (rc) {
            o->status = rc;
            mfmt(m, 0, "%s: %s", s->addr, tdm_async_errstr(s->ac)[0] ? tdm_async_errstr(s->ac) : tdm_client_strerror(rc));
            return;
        }
        p->state = P_SENT;
        p->s = s;
        p->attempts++;
        s->inflight++;
        o->queued--;
        o->sent++;
        m->rr++;
    }
}

/* ---- the loop ---------------------------------------------------------------------------------- */

static bool any_usable(tdm_multi *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->servers[i].state != S_DOWN) return true;
    return false;
}

/* Every server down and each failed since t (this call's start): the call cannot go on. */
static bool all_failed_since(tdm_multi *m, double t)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->servers[i].state != S_DOWN || m->servers[i].failed_at < t) return false;
    return true;
}

static void say_all_down(tdm_multi *m)
{
    size_t at = 0;
    at += (size_t)snprintf(m->errstr, sizeof m->errstr, "no server reachable:");
    for (size_t i = 0; i < m->n && at < sizeof m->errstr; i++)
        at += (size_t)snprintf(m->errstr + at, sizeof m->errstr - at, " [%s]", m->servers[i].errstr);
}

/* One round: reconnect what is due, poll, dispatch. */
static void step(tdm_multi *m, int max_wait_ms)
{
    double now = tdm__now_ms();
    bool none = !any_usable(m);
    for (size_t i = 0; i < m->n; i++) {
        server *s = &m->servers[i];
        if (s->state == S_DOWN && !s->ac && (none || now >= s->retry_at)) server_connect(s);
    }
    struct pollfd pf[m->n];
    double wake = now + max_wait_ms;
    for (size_t i = 0; i < m->n; i++) {
        server *s = &m->servers[i];
        pf[i].fd = s->ac ? tdm_async_fd(s->ac) : -1;
        pf[i].events = s->ac ? s->events : 0;
        pf[i].revents = 0;
        if (s->ac && s->timer_at > 0 && s->timer_at < wake) wake = s->timer_at;
        if (!s->ac && s->retry_at < wake) wake = s->retry_at;
    }
    double left = wake - tdm__now_ms();
    int ms = left <= 0 ? 0 : (int)left + 1;
    int n = poll(pf, m->n, ms);
    if (n < 0 && errno != EINTR) return;
    now = tdm__now_ms();
    for (size_t i = 0; i < m->n; i++) {
        server *s = &m->servers[i];
        if (s->ac && pf[i].revents) {
            if (pf[i].revents & (POLLIN | POLLHUP | POLLERR)) tdm_async_handle_read(s->ac);
            if (s->ac && (pf[i].revents & (POLLOUT | POLLHUP | POLLERR))) tdm_async_handle_write(s->ac);
        }
        if (s->ac && s->timer_at > 0 && now >= s->timer_at) {
            s->timer_at = 0;
            tdm_async_handle_timeout(s->ac);
        }
    }
}

/* Runs o until every part is answered (or the call failed and nothing is left in flight). */
static int run(tdm_multi *m, op *o)
{
    for (;;) {
        if (o->status == 0) assign(m, o);
        if (o->kind == OP_BROADCAST ? o->answered == o->targets : (o->sent == 0 && (o->queued == 0 || o->status)))
            break;
        if (o->kind != OP_BROADCAST && o->sent == 0 && !o->status && all_failed_since(m, o->t_start)) {
            o->status = TDM_CLIENT_ECONNECT;
            say_all_down(m);
            break;
        }
        step(m, 1000);
    }
    return o->status;
}

/* ---- the context ------------------------------------------------------------------------------- */

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

tdm_multi *tdm_multi_connect(const char *const *addrs, size_t n, const tdm_connect_opts *opts)
{
    tdm_multi *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->fork_gen = tdm__fork_gen();
    m->retry_min_ms = 100;
    m->retry_max_ms = 5000;
    m->min_part = 1;
    if (!opts) {
        m->err = TDM_CLIENT_EINVAL;
        mfmt(m, 0, "no connect options");
        return m;
    }
    m->opts = *opts;
    m->token = dup_or_null(opts->auth_token);
    m->name = dup_or_null(opts->client_name);
    m->opts.auth_token = m->token;
    m->opts.client_name = m->name;
    /* the addresses: the array, or opts->addr split at commas */
    char *list = NULL;
    const char **a = NULL;
    if (!addrs) {
        list = dup_or_null(opts->addr);
        n = 0;
        if (list) {
            a = calloc(strlen(list) / 2 + 2, sizeof *a);
            for (char *save = NULL, *t = a ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
                a[n++] = t;
        }
        addrs = a;
    }
    if (n == 0) {
        m->err = TDM_CLIENT_EADDR;
        mfmt(m, 0, "no server address");
        goto out;
    }
    m->servers = calloc(n, sizeof *m->servers);
    if (!m->servers) {
        m->err = TDM_CLIENT_ENOMEM;
        goto out;
    }
    m->n = n;
    for (size_t i = 0; i < n; i++) {
        m->servers[i].m = m;
        m->servers[i].addr = strdup(addrs[i] ? addrs[i] : "");
        m->servers[i].state = S_DOWN;
        if (!m->servers[i].addr) {
            m->err = TDM_CLIENT_ENOMEM;
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) server_connect(&m->servers[i]);
    for (;;) {
        bool pending = false, up = false;
        for (size_t i = 0; i < n; i++) {
            pending |= m->servers[i].state == S_CONNECTING;
            up |= m->servers[i].state == S_UP;
        }
        if (!pending) {
            if (!up) {
                m->err = m->servers[0].err;
                say_all_down(m);
            }
            break;
        }
        step(m, 1000);
    }
out:
    free(a);
    free(list);
    return m;
}

static void entry_free(log_entry *e)
{
    free(e->name);
    switch (e->kind) {
    case L_MESH:
        free(e->u.mesh.verts);
        free(e->u.mesh.tris);
        break;
    case L_SCENE:
        free(e->u.scene.objects);
        free(e->u.scene.allowed);
        break;
    case L_ROBOT:
        free(e->u.robot.urdf);
        free(e->u.robot.srdf);
        for (size_t i = 0; i < e->u.robot.n; i++) free((char *)e->u.robot.meshes[i].filename);
        free(e->u.robot.meshes);
        break;
    default:
        free(e->u.rscene.world);
    }
}

void tdm_multi_free(tdm_multi *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        if (m->servers[i].ac) tdm_async_free(m->servers[i].ac);
        free(m->servers[i].addr);
    }
    for (size_t i = 0; i < m->log_len; i++) entry_free(&m->log[i]);
    free(m->log);
    free(m->servers);
    free(m->token);
    free(m->name);
    free(m);
}

int tdm_multi_err(const tdm_multi *m) { return m->err; }
const char *tdm_multi_errstr(const tdm_multi *m) { return m->errstr; }
const tdm_server_error *tdm_multi_server_error(const tdm_multi *m) { return m->has_serr ? &m->serr : NULL; }
size_t tdm_multi_servers(const tdm_multi *m) { return m->n; }
size_t tdm_multi_resent(const tdm_multi *m) { return m->resent; }

int tdm_multi_server_state(const tdm_multi *m, size_t i, const char **addr, const char **errstr)
{
    if (!m || i >= m->n) return TDM_CLIENT_EINVAL;
    const server *s = &m->servers[i];
    if (addr) *addr = s->addr;
    if (errstr) *errstr = s->state == S_DOWN ? s->errstr : "";
    return s->state == S_UP;
}

const tdm_limits *tdm_multi_server_limits(const tdm_multi *m, size_t i)
{
    if (!m || i >= m->n) return NULL;
    const server *s = &m->servers[i];
    if (!s->ac || (s->state != S_UP && s->state != S_REPLAYING)) return NULL;
    return &tdm_async_server_info(s->ac)->limits;
}

void tdm_multi_set_retry(tdm_multi *m, int retry_min_ms, int retry_max_ms)
{
    m->retry_min_ms = retry_min_ms > 0 ? retry_min_ms : 1;
    m->retry_max_ms = retry_max_ms >= m->retry_min_ms ? retry_max_ms : m->retry_min_ms;
}

void tdm_multi_set_min_part(tdm_multi *m, size_t min_queries) { m->min_part = min_queries ? min_queries : 1; }

static int begin(tdm_multi *m)
{
    if (!m) return TDM_CLIENT_EINVAL;
    if (!m->err && m->fork_gen != tdm__fork_gen()) { /* a child of fork(): its parent's sockets */
        m->err = TDM_CLIENT_EINVAL;
        mfmt(m, 0, "this context was made by another process (this one is its child, from fork()): connect "
                   "again in this process");
    }
    if (m->err) return m->err;
    m->has_serr = 0;
    m->errstr[0] = 0;
    return 0;
}

/* A call's own error (a file that cannot be read, say): its message for tdm_multi_errstr; the
 * context stays usable (m->err is for a context that never connected). */
int tdm__multi_local_error(tdm_multi *m, int code, const char *msg)
{
    if (!m) return code;
    m->has_serr = 0;
    tdm__fmt(m->errstr, sizeof m->errstr, "%s", msg);
    return code;
}

/* ---- uploads: every server ------------------------------------------------------------------- */

static void on_broadcast(tdm_async *ac, const tdm_reply *r, void *priv)
{
    op *o = priv;
    server *s = tdm_async_data(ac);
    tdm_multi *m = s->m;
    o->answered++;
    if (r->status) {
        if (r->status == TDM_CLIENT_ESERVER) op_fail_server(o, m, r, s->addr);
        return; /* a connection failure: the log replays the upload when the server is back */
    }
    if (o->accepted++) return;
    switch (r->type) {
    case TDM_REPLY_MESH_PUT:
        memcpy(o->id_out, r->u.mesh_put.mesh_id, TDM_ID_BYTES);
        o->created = r->u.mesh_put.created;
        break;
    case TDM_REPLY_SCENE_PUT:
        memcpy(o->id_out, r->u.scene_put.scene_id, TDM_ID_BYTES);
        o->created = r->u.scene_put.created;
        o->n_movable_out = r->u.scene_put.n_movable;
        if (o->movable)
            memcpy(o->movable, r->u.scene_put.movable,
                   (r->u.scene_put.n_movable < o->movable_cap ? r->u.scene_put.n_movable : o->movable_cap) *
                       sizeof(uint32_t));
        break;
    case TDM_REPLY_ROBOT_PUT:
        memcpy(o->id_out, r->u.robot_put.robot_id, TDM_ID_BYTES);
        o->created = r->u.robot_put.created;
        break;
    default:
        memcpy(o->id_out, r->u.robot_scene_put.scene_id, TDM_ID_BYTES);
        o->created = r->u.robot_scene_put.created;
        o->n_checks_out = r->u.robot_scene_put.n_checks;
    }
}

/* A bound on a scene's checked object pairs per query: every movable object against every other
 * (allowed pairs not taken off), the bound Python's Client cuts by too; the server's own count
 * (workpile/scene.c) is at most this. */
static uint32_t scene_checks(const log_entry *e)
{
    uint64_t n = e->u.scene.n, m = 0;
    for (size_t i = 0; i < n; i++) m += e->u.scene.objects[i].movable != 0;
    uint64_t c = m * (n - m) + m * (m - (m > 0)) / 2;
    return c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
}

/* Appends e (taking its allocations) to the log and sends it to every connected server.
 * Waits for a server when none is; on a refusal the entry leaves the log again. */
static int broadcast(tdm_multi *m, log_entry *e, op *o)
{
    if (m->log_len == m->log_cap) {
        size_t cap = m->log_cap ? m->log_cap * 2 : 16;
        log_entry *nl = realloc(m->log, cap * sizeof *nl);
        if (!nl) {
            entry_free(e);
            return TDM_CLIENT_ENOMEM;
        }
        m->log = nl;
        m->log_cap = cap;
    }
    o->kind = OP_BROADCAST;
    o->t_start = tdm__now_ms();
    for (;;) {
        /* wait until a server is usable (connecting ones finish, down ones are retried) */
        bool connected = false, pending = false;
        for (size_t i = 0; i < m->n; i++) {
            connected |= m->servers[i].state == S_UP;
            pending |= m->servers[i].state == S_CONNECTING || m->servers[i].state == S_REPLAYING;
        }
        if (connected) break;
        if (!pending && all_failed_since(m, o->t_start)) {
            say_all_down(m);
            entry_free(e);
            return TDM_CLIENT_ECONNECT;
        }
        step(m, 1000);
    }
    m->log[m->log_len++] = *e;
    const log_entry *le = &m->log[m->log_len - 1];
    for (size_t i = 0; i < m->n; i++) {
        server *s = &m->servers[i];
        if (s->state != S_UP || !s->ac) continue; /* a replaying server gets it from the log, in order */
        int rc = send_entry(s, le, on_broadcast, o);
        if (rc == TDM_CLIENT_ECLOSED) continue;
        if (rc) {
            o->status = rc;
            mfmt(m, 0, "%s: %s", s->addr, tdm_async_errstr(s->ac)[0] ? tdm_async_errstr(s->ac) : tdm_client_strerror(rc));
            break;
        }
        o->targets++;
    }
    run(m, o);
    if (!o->status && !o->accepted) {
        o->status = TDM_CLIENT_ECONNECT;
        say_all_down(m);
    }
    if (o->status) {
        /* refused or never stored: it leaves the log (the last entry, as the call is blocking) */
        m->log_len--;
        entry_free(&m->log[m->log_len]);
    }
    return o->status;
}

static void *memdup(const void *p, size_t n)
{
    if (!n) return NULL;
    void *q = malloc(n);
    if (q) memcpy(q, p, n);
    return q;
}

int tdm_multi_mesh_put(tdm_multi *m, const char *name, const float *verts, uint32_t n_verts, const uint32_t *tris,
                       uint32_t n_tris, uint8_t mesh_id[TDM_ID_BYTES], int *created)
{
    int rc = begin(m);
    if (rc) return rc;
    if (!verts || !tris || !mesh_id) return TDM_CLIENT_EINVAL;
    log_entry e = {.kind = L_MESH, .name = dup_or_null(name)};
    e.u.mesh.verts = memdup(verts, (size_t)n_verts * 3 * sizeof(float));
    e.u.mesh.tris = memdup(tris, (size_t)n_tris * 3 * sizeof(uint32_t));
    e.u.mesh.n_verts = n_verts;
    e.u.mesh.n_tris = n_tris;
    if ((n_verts && !e.u.mesh.verts) || (n_tris && !e.u.mesh.tris) || (name && !e.name)) {
        entry_free(&e);
        return TDM_CLIENT_ENOMEM;
    }
    op o = {0};
    rc = broadcast(m, &e, &o);
    if (rc) return rc;
    memcpy(mesh_id, o.id_out, TDM_ID_BYTES);
    if (created) *created = o.created;
    return 0;
}

void tdm_multi_set_ephemeral_scenes(tdm_multi *m, int on)
{
    if (m) m->ephemeral_scenes = on != 0;
}

int tdm_multi_scene_put(tdm_multi *m, const char *name, const tdm_scene_object *objects, size_t n_objects,
                        const tdm_object_pair *allowed, size_t n_allowed, uint8_t scene_id[TDM_ID_BYTES], int *created,
                        uint32_t *movable, size_t movable_cap, size_t *n_movable)
{
    int rc = begin(m);
    if (rc) return rc;
    if (!objects || !scene_id || (n_allowed && !allowed)) return TDM_CLIENT_EINVAL;
    log_entry e = {.kind = L_SCENE, .name = dup_or_null(name), .ephemeral = m->ephemeral_scenes};
    e.u.scene.objects = memdup(objects, n_objects * sizeof *objects);
    e.u.scene.allowed = memdup(allowed, n_allowed * sizeof *allowed);
    e.u.scene.n = n_objects;
    e.u.scene.n_allowed = n_allowed;
    if ((n_objects && !e.u.scene.objects) || (n_allowed && !e.u.scene.allowed) || (name && !e.name)) {
        entry_free(&e);
        return TDM_CLIENT_ENOMEM;
    }
    op o = {.movable = movable, .movable_cap = movable_cap};
    rc = broadcast(m, &e, &o);
    if (rc) return rc;
    log_entry *le = &m->log[m->log_len - 1]; /* the entry broadcast kept */
    memcpy(le->scene_id, o.id_out, TDM_ID_BYTES);
    le->checks = scene_checks(le);
    memcpy(scene_id, o.id_out, TDM_ID_BYTES);
    if (created) *created = o.created;
    if (n_movable) *n_movable = o.n_movable_out;
    return 0;
}

int tdm_multi_robot_put(tdm_multi *m, const char *name, const char *urdf, const char *srdf,
                        const tdm_robot_mesh_ref *meshes, size_t n_meshes, uint8_t robot_id[TDM_ID_BYTES], int *created)
{
    int rc = begin(m);
    if (rc) return rc;
    if (!urdf || !robot_id || (n_meshes && !meshes)) return TDM_CLIENT_EINVAL;
    log_entry e = {.kind = L_ROBOT, .name = dup_or_null(name)};
    e.u.robot.urdf = strdup(urdf);
    e.u.robot.srdf = dup_or_null(srdf);
    e.u.robot.meshes = memdup(meshes, n_meshes * sizeof *meshes);
    bool ok = e.u.robot.urdf && (!srdf || e.u.robot.srdf) && (!n_meshes || e.u.robot.meshes) && (!name || e.name);
    if (e.u.robot.meshes)
        for (size_t i = 0; i < n_meshes; i++) {
            e.u.robot.meshes[i].filename = dup_or_null(meshes[i].filename);
            e.u.robot.n = i + 1;
            ok &= !meshes[i].filename || e.u.robot.meshes[i].filename;
        }
    if (!ok) {
        entry_free(&e);
        return TDM_CLIENT_ENOMEM;
    }
    op o = {0};
    rc = broadcast(m, &e, &o);
    if (rc) return rc;
    memcpy(robot_id, o.id_out, TDM_ID_BYTES);
    if (created) *created = o.created;
    return 0;
}

int tdm_multi_robot_scene_put(tdm_multi *m, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                              const char *world_yaml, uint8_t scene_id[TDM_ID_BYTES], int *created)
{
    int rc = begin(m);
    if (rc) return rc;
    if (!robot_id || !world_yaml || !scene_id) return TDM_CLIENT_EINVAL;
    log_entry e = {.kind = L_ROBOT_SCENE, .name = dup_or_null(name), .ephemeral = m->ephemeral_scenes};
    memcpy(e.u.rscene.robot_id, robot_id, TDM_ID_BYTES);
    e.u.rscene.world = strdup(world_yaml);
    if (!e.u.rscene.world || (name && !e.name)) {
        entry_free(&e);
        return TDM_CLIENT_ENOMEM;
    }
    op o = {0};
    rc = broadcast(m, &e, &o);
    if (rc) return rc;
    log_entry *le = &m->log[m->log_len - 1]; /* the entry broadcast kept */
    memcpy(le->scene_id, o.id_out, TDM_ID_BYTES);
    le->checks = o.n_checks_out;
    memcpy(scene_id, o.id_out, TDM_ID_BYTES);
    if (created) *created = o.created;
    return 0;
}

/* ---- batches: spread ------------------------------------------------------------------------- */

/* The checked object pairs per query of a scene this context stored (the latest put of that
 * id), 0 when not known (a scene stored by someone else). */
static uint32_t logged_checks(const tdm_multi *m, const uint8_t *scene_id)
{
    for (size_t i = m->log_len; i-- > 0;) {
        const log_entry *e = &m->log[i];
        if ((e->kind == L_SCENE || e->kind == L_ROBOT_SCENE) && !memcmp(e->scene_id, scene_id, TDM_ID_BYTES))
            return e->checks;
    }
    return 0;
}

/* Queries a part of op o may carry for server s's limits: max_queries, max_query_tasks over the
 * scene's checked pairs, max_reply_pairs over the pairs a query may bring (0: no bound). */
static uint64_t part_cap(const server *s, const op *o, uint32_t checks)
{
    const tdm_limits *l = &tdm_async_server_info(s->ac)->limits;
    uint64_t cap = l->max_queries;
    if (o->kind == OP_MOTIONS) return cap;
    if (checks && l->max_query_tasks) {
        uint64_t c = l->max_query_tasks / checks ? l->max_query_tasks / checks : 1;
        if (!cap || c < cap) cap = c;
    }
    uint64_t per = o->max_contacts ? o->max_contacts : l->max_contacts;
    if (o->want_pairs && per && l->max_reply_pairs) {
        uint64_t c = l->max_reply_pairs / per ? l->max_reply_pairs / per : 1;
        if (!cap || c < cap) cap = c;
    }
    return cap;
}

/* Cuts n into parts (one per usable server, at least min_part each, at most the smallest
 * cap a server's limits give: part_cap) and runs them. */
static int spread(tdm_multi *m, op *o, size_t n)
{
    size_t usable = 0;
    uint64_t maxq = 0;
    uint32_t checks = o->kind == OP_MOTIONS ? 0 : logged_checks(m, o->scene_id);
    for (size_t i = 0; i < m->n; i++) {
        const server *s = &m->servers[i];
        if (s->state == S_DOWN) continue;
        usable++;
        if (s->ac && (s->state == S_UP || s->state == S_REPLAYING)) {
            uint64_t q = part_cap(s, o, checks);
            if (q && (!maxq || q < maxq)) maxq = q;
        }
    }
    if (!usable) usable = 1;
    size_t n_parts = usable;
    if (n / m->min_part < n_parts) n_parts = n / m->min_part ? n / m->min_part : 1;
    if (maxq && (n + n_parts - 1) / n_parts > maxq) n_parts = (n + maxq - 1) / maxq;
    o->parts = calloc(n_parts, sizeof *o->parts);
    if (!o->parts) return TDM_CLIENT_ENOMEM;
    o->n_parts = n_parts;
    for (size_t i = 0; i < n_parts; i++) {
        o->parts[i] = (part){.op = o, .first = n * i / n_parts, .count = n * (i + 1) / n_parts - n * i / n_parts};
        o->parts[i].state = P_QUEUED;
    }
    o->queued = n_parts;
    o->t_start = tdm__now_ms();
    int rc = run(m, o);
    return rc;
}

static int finish_pairs(op *o, tdm_pairs *pairs)
{
    if (!o->want_pairs || !pairs) return 0;
    size_t total = 0;
    for (size_t i = 0; i < o->n_parts; i++) {
        part *p = &o->parts[i];
        for (size_t k = 0; k < p->count; k++) o->results[p->first + k].first_pair += total;
        for (size_t k = 0; k < p->n_pairs; k++)
            if (total + k < pairs->cap) pairs->data[total + k] = p->pairs[k];
        total += p->n_pairs;
    }
    pairs->count = total;
    return 0;
}

static void op_free(op *o)
{
    for (size_t i = 0; i < o->n_parts; i++) free(o->parts[i].pairs);
    free(o->parts);
}

static int query_common(tdm_multi *m, int kind, const uint8_t *scene_id, tdm_query_mode mode, const double *in,
                        uint32_t width, size_t n_queries, uint32_t max_contacts, tdm_query_result *results,
                        tdm_pairs *pairs)
{
    int rc = begin(m);
    if (rc) return rc;
    if (!scene_id || !in || !width || !n_queries || !results || (pairs && !pairs->data && pairs->cap))
        return TDM_CLIENT_EINVAL;
    op o = {.kind = kind,
            .scene_id = scene_id,
            .mode = mode,
            .in = in,
            .stride = kind == OP_QUERY ? (size_t)width * 7 : width,
            .n_movable = width,
            .max_contacts = max_contacts,
            .want_pairs = pairs != NULL,
            .results = results};
    rc = spread(m, &o, n_queries);
    if (!rc) finish_pairs(&o, pairs);
    op_free(&o);
    return rc;
}

int tdm_multi_query(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *poses,
                    uint32_t n_movable, size_t n_queries, uint32_t max_contacts, tdm_query_result *results,
                    tdm_pairs *pairs)
{
    return query_common(m, OP_QUERY, scene_id, mode, poses, n_movable, n_queries, max_contacts, results, pairs);
}

int tdm_multi_query_configs(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                            const double *configs, uint32_t n_joints, size_t n_queries, uint32_t max_contacts,
                            tdm_query_result *results, tdm_pairs *pairs)
{
    return query_common(m, OP_CONFIGS, scene_id, mode, configs, n_joints, n_queries, max_contacts, results, pairs);
}

int tdm_multi_motion_check(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                           const double *motions, uint32_t n_joints, size_t n_motions, int64_t *first_colliding,
                           uint64_t *n_states, double *last_free)
{
    return tdm_multi_motion_check_flags(m, scene_id, resolution, motions, n_joints, n_motions, 0, first_colliding,
                                        n_states, last_free);
}

int tdm_multi_motion_check_flags(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                                 const double *motions, uint32_t n_joints, size_t n_motions, unsigned flags,
                                 int64_t *first_colliding, uint64_t *n_states, double *last_free)
{
    int rc = begin(m);
    if (rc) return rc;
    if (!scene_id || !motions || !n_joints || !n_motions || !first_colliding) return TDM_CLIENT_EINVAL;
    op o = {.kind = OP_MOTIONS,
            .flags = flags,
            .scene_id = scene_id,
            .in = motions,
            .stride = (size_t)n_joints * 2,
            .n_movable = n_joints,
            .resolution = resolution,
            .first_colliding = first_colliding,
            .n_states = n_states,
            .last_free = last_free};
    rc = spread(m, &o, n_motions);
    op_free(&o);
    return rc;
}
