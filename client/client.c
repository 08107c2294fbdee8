/* The blocking client: one connection, requests written whole, replies matched by id.
 *
 * Every request goes through submit() (encode into the output buffer, register the id,
 * write) and, unless pipelined, await() (read until that id is answered). Replies to other
 * ids that arrive meanwhile are decoded into their own caller's arrays and queued for
 * tdm_query_wait. While a write would block, the socket is read too: a server that stops
 * reading until its replies are read (back-pressure) can never deadlock us.
 *
 * A connection error is sticky (hiredis): it fails every request in flight, closes the
 * socket, and every later call returns it. */
#define _GNU_SOURCE /* MSG_NOSIGNAL */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../proto/shm_ring.h"
#include "internal.h"

#define RECV_CHUNK (64u << 10)
#define OBUF_KEEP (1u << 20) /* an output buffer grown past this is released once written */

/* Where a waiting call wants its reply. */
typedef struct outs {
    tdm_server_info *hello;
    uint8_t *id;
    int *created;
    uint32_t *movable;
    size_t movable_cap;
    size_t *n_movable;
    void **list;
    size_t *n_list;
    tdm_stats *stats;
    uint32_t *ring_bytes;
    void **block; /* robot replies: one malloc'd copy (tdm_robot_info or tdm_robot_scene_info) */
    /* MotionCheck: n_motions answers into the caller's arrays (n_states, last_free may be NULL) */
    size_t n_motions, n_joints;
    int64_t *first_colliding;
    uint64_t *motion_states;
    double *last_free;
} outs;

struct tdm_client {
    int fd;
    tdm__tls *tls; /* tls:// addresses */
    int err; /* sticky connection error */
    int io_timeout_ms;
    uint64_t next_id;
    tdm_reader reader;
    tdm__buf obuf;
    tdm__ptable pending;
    uint64_t *done; /* ring of pipelined ids answered, not yet handed back */
    size_t done_head, done_len, done_cap;
    size_t piped; /* pipelined queries not yet handed back */
    tdm_server_info info;
    bool has_serr;
    tdm_server_error serr;
    char serr_message[512], serr_field[64];
    char errstr[640];
    char fatalstr[640]; /* the message of the error in err */
    /* shared-memory rings (tdm_client_ring; proto/shm_ring.h): NULL on the socket */
    tdm_ring_header *ring;
    uint32_t ring_cap;           /* the mapping: tdm_ring_map_bytes(ring_cap) */
    uint64_t req_head, rep_tail; /* ours; the mapping's copies are for the server */
    int ring_spin_us;
    int want_fd; /* the RingOpen reply is awaited: the socket is read with its descriptor */
    int got_fd;
    unsigned fork_gen; /* the process's fork generation at the connect (forked) */
    int ephemeral_scenes; /* tdm_client_set_ephemeral_scenes */
};

static int local_error(tdm_client *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int local_error(tdm_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tdm__vfmt(c->errstr, sizeof c->errstr, fmt, ap);
    va_end(ap);
    c->has_serr = false;
    return code;
}

/* ---- failure -------------------------------------------------------------------------------- */

static void done_push(tdm_client *c, uint64_t id)
{
    /* room was reserved when the query was sent */
    c->done[(c->done_head + c->done_len) % c->done_cap] = id;
    c->done_len++;
}

static void complete(tdm_client *c, tdm__pending *p, int status)
{
    p->status = status;
    p->state = TDM__DONE;
    if (p->piped) done_push(c, p->id);
}

static int fatal(tdm_client *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fatal(tdm_client *c, int code, const char *fmt, ...)
{
    if (c->err) return c->err;
    va_list ap;
    va_start(ap, fmt);
    tdm__vfmt(c->errstr, sizeof c->errstr, fmt, ap);
    va_end(ap);
    c->err = code;
    memcpy(c->fatalstr, c->errstr, sizeof c->fatalstr);
    tdm__tls_free(c->tls);
    c->tls = NULL;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    tdm__pending *p;
    while ((p = tdm__ptable_min_waiting(&c->pending))) complete(c, p, code);
    return code;
}

/* ---- fork() ----------------------------------------------------------------------------------- */

/* A child of fork() holds its parent's socket (and rings): frames it wrote would mix with the
 * parent's, and replies would go to whichever process read first. Each client remembers the fork
 * generation of the process that connected it, bumped in every child; a call from another
 * generation fails, closing only the child's copy of the socket (the parent's connection goes on). */
static atomic_uint fork_gen;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void fork_child(void) { atomic_fetch_add_explicit(&fork_gen, 1, memory_order_relaxed); }
static void fork_watch(void) { pthread_atfork(NULL, NULL, fork_child); }

unsigned tdm__fork_gen(void)
{
    pthread_once(&fork_once, fork_watch);
    return atomic_load_explicit(&fork_gen, memory_order_relaxed);
}

static int forked(tdm_client *c)
{
    if (c->fork_gen == tdm__fork_gen()) return 0;
    return fatal(c, TDM_CLIENT_EINVAL,
                 "this connection was made by another process (this one is its child, from fork()): connect "
                 "again in this process");
}

/* ---- delivering replies ---------------------------------------------------------------------- */

static tdm_server_error *copy_error(const tdm_server_error *e)
{
    size_t lm = strlen(e->message), lf = strlen(e->field);
    tdm_server_error *o = malloc(sizeof *o + lm + lf + 2);
    if (!o) return NULL;
    char *s = (char *)(o + 1);
    memcpy(s, e->message, lm + 1);
    memcpy(s + lm + 1, e->field, lf + 1);
    *o = (tdm_server_error){e->code, s, s + lm + 1, e->index};
    return o;
}

static void *copy_mesh_list(const tdm_mesh_info *m, size_t n)
{
    size_t bytes = n * sizeof *m;
    for (size_t i = 0; i < n; i++) bytes += strlen(m[i].name) + 1;
    tdm_mesh_info *o = malloc(bytes ? bytes : 1);
    if (!o) return NULL;
    char *s = (char *)(o + n);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(m[i].name) + 1;
        o[i] = m[i];
        memcpy(s, m[i].name, l);
        o[i].name = s;
        s += l;
    }
    return o;
}

static void *copy_scene_list(const tdm_scene_info *sc, size_t n)
{
    size_t bytes = n * sizeof *sc;
    for (size_t i = 0; i < n; i++) bytes += sc[i].n_movable * sizeof(uint32_t);
    size_t strings = bytes;
    for (size_t i = 0; i < n; i++) bytes += strlen(sc[i].name) + 1;
    tdm_scene_info *o = malloc(bytes ? bytes : 1);
    if (!o) return NULL;
    uint32_t *mv = (uint32_t *)(o + n);
    char *s = (char *)o + strings;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(sc[i].name) + 1;
        o[i] = sc[i];
        memcpy(mv, sc[i].movable, sc[i].n_movable * sizeof *mv);
        o[i].movable = mv;
        mv += sc[i].n_movable;
        memcpy(s, sc[i].name, l);
        o[i].name = s;
        s += l;
    }
    return o;
}

/* Robots into one block: n infos, then every joint, then the strings. */
static void *copy_robots(const tdm_robot_info *ri, size_t n)
{
    size_t nj = 0, chars = 0;
    for (size_t i = 0; i < n; i++) {
        nj += ri[i].n_joints;
        chars += strlen(ri[i].name) + 1;
        for (size_t k = 0; k < ri[i].n_joints; k++) chars += strlen(ri[i].joints[k].name) + 1;
    }
    tdm_robot_info *o = malloc(n * sizeof *o + nj * sizeof(tdm_joint_info) + chars + 1);
    if (!o) return NULL;
    tdm_joint_info *j = (tdm_joint_info *)(void *)(o + n);
    char *s = (char *)(j + nj);
    for (size_t i = 0; i < n; i++) {
        o[i] = ri[i];
        size_t l = strlen(ri[i].name) + 1;
        memcpy(s, ri[i].name, l);
        o[i].name = s;
        s += l;
        o[i].joints = j;
        for (size_t k = 0; k < ri[i].n_joints; k++, j++) {
            *j = ri[i].joints[k];
            l = strlen(j->name) + 1;
            memcpy(s, j->name, l);
            j->name = s;
            s += l;
        }
    }
    return o;
}

static void *copy_robot_scene(const tdm_robot_scene_info *si)
{
    size_t chars = 0;
    for (size_t k = 0; k < si->n_joints; k++) chars += strlen(si->joints[k].name) + 1;
    for (size_t k = 0; k < si->n_objects; k++)
        chars += strlen(si->objects[k].link) + strlen(si->objects[k].world_object) + 2;
    tdm_robot_scene_info *o = malloc(sizeof *o + si->n_joints * sizeof(tdm_joint_info) +
                                     si->n_objects * sizeof(tdm_robot_object) + chars + 1);
    if (!o) return NULL;
    *o = *si;
    tdm_joint_info *j = (tdm_joint_info *)(void *)(o + 1);
    tdm_robot_object *ob = (tdm_robot_object *)(void *)(j + si->n_joints);
    char *s = (char *)(ob + si->n_objects);
    o->joints = j;
    o->objects = ob;
    for (size_t k = 0; k < si->n_joints; k++) {
        j[k] = si->joints[k];
        size_t l = strlen(j[k].name) + 1;
        memcpy(s, j[k].name, l);
        j[k].name = s;
        s += l;
    }
    for (size_t k = 0; k < si->n_objects; k++) {
        ob[k] = si->objects[k];
        size_t l = strlen(ob[k].link) + 1;
        memcpy(s, ob[k].link, l);
        ob[k].link = s;
        s += l;
        l = strlen(ob[k].world_object) + 1;
        memcpy(s, ob[k].world_object, l);
        ob[k].world_object = s;
        s += l;
    }
    return o;
}

/* Copies a successful reply into the waiting call's outputs. */
static int deliver(const tdm_reply *r, const outs *o)
{
    if (!o) return 0;
    switch (r->type) {
    case TDM_REPLY_HELLO:
        if (o->hello) *o->hello = r->u.hello;
        return 0;
    case TDM_REPLY_MESH_PUT:
        memcpy(o->id, r->u.mesh_put.mesh_id, TDM_ID_BYTES);
        if (o->created) *o->created = r->u.mesh_put.created;
        return 0;
    case TDM_REPLY_SCENE_PUT:
        memcpy(o->id, r->u.scene_put.scene_id, TDM_ID_BYTES);
        if (o->created) *o->created = r->u.scene_put.created;
        for (size_t i = 0; i < r->u.scene_put.n_movable && i < o->movable_cap; i++)
            o->movable[i] = r->u.scene_put.movable[i];
        if (o->n_movable) *o->n_movable = r->u.scene_put.n_movable;
        return 0;
    case TDM_REPLY_MESH_LIST:
        *o->n_list = r->u.mesh_list.n;
        *o->list = r->u.mesh_list.n ? copy_mesh_list(r->u.mesh_list.meshes, r->u.mesh_list.n) : NULL;
        return r->u.mesh_list.n && !*o->list ? TDM_CLIENT_ENOMEM : 0;
    case TDM_REPLY_SCENE_LIST:
        *o->n_list = r->u.scene_list.n;
        *o->list = r->u.scene_list.n ? copy_scene_list(r->u.scene_list.scenes, r->u.scene_list.n) : NULL;
        return r->u.scene_list.n && !*o->list ? TDM_CLIENT_ENOMEM : 0;
    case TDM_REPLY_STATS:
        if (o->stats) *o->stats = r->u.stats;
        return 0;
    case TDM_REPLY_RING_OPEN:
        if (o->ring_bytes) *o->ring_bytes = r->u.ring_open.bytes;
        return 0;
    case TDM_REPLY_ROBOT_PUT:
        *o->block = copy_robots(&r->u.robot_put, 1);
        return *o->block ? 0 : TDM_CLIENT_ENOMEM;
    case TDM_REPLY_ROBOT_LIST:
        *o->n_list = r->u.robot_list.n;
        *o->list = r->u.robot_list.n ? copy_robots(r->u.robot_list.robots, r->u.robot_list.n) : NULL;
        return r->u.robot_list.n && !*o->list ? TDM_CLIENT_ENOMEM : 0;
    case TDM_REPLY_ROBOT_SCENE_PUT:
        *o->block = copy_robot_scene(&r->u.robot_scene_put);
        return *o->block ? 0 : TDM_CLIENT_ENOMEM;
    case TDM_REPLY_MOTION_CHECK:
        if (r->u.motion_check.n != o->n_motions) return TDM_CLIENT_EPROTO;
        for (size_t i = 0; i < o->n_motions; i++) {
            const tdm_motion_result *m = &r->u.motion_check.results[i];
            if (m->n_last_free && m->n_last_free != o->n_joints) return TDM_CLIENT_EPROTO;
        }
        for (size_t i = 0; i < o->n_motions; i++) {
            const tdm_motion_result *m = &r->u.motion_check.results[i];
            o->first_colliding[i] = m->first_colliding;
            if (o->motion_states) o->motion_states[i] = m->n_states;
            if (o->last_free && m->n_last_free)
                memcpy(o->last_free + i * o->n_joints, m->last_free, o->n_joints * sizeof(double));
        }
        return 0;
    default: /* deletes carry nothing; queries were decoded in place */
        return 0;
    }
}

static int dispatch(tdm_client *c, const uint8_t *frame, size_t len)
{
    tdm__frame f;
    tdm_reader *r = &c->reader;
    if (tdm__frame_parse(r, frame, len, &f)) return fatal(c, r->err, "%s", r->errstr);
    tdm__pending *p = tdm__ptable_get(&c->pending, f.id);
    if (!p || p->state != TDM__WAITING) {
        if (f.type == TDM_REPLY_ERROR && tdm__decode(r, &f, NULL) == 0)
            return fatal(c, TDM_CLIENT_EPROTO, "the server could not read a request (%s): %s",
                         tdm_server_code_name(r->reply.error.code), r->reply.error.message);
        return fatal(c, TDM_CLIENT_EPROTO, "the server answered request id %llu, which is not in flight",
                     (unsigned long long)f.id);
    }
    if (f.type != TDM_REPLY_ERROR && f.type != p->type)
        return fatal(c, TDM_CLIENT_EPROTO, "the server answered a request of type %d with a reply of type %d",
                     p->type, f.type);
    if (tdm__decode(r, &f, p->type == TDM_REPLY_QUERY ? &p->qs : NULL)) return fatal(c, r->err, "%s", r->errstr);
    if (r->reply.status == TDM_CLIENT_ESERVER) {
        p->err = copy_error(&r->reply.error); /* NULL when out of memory: reported without details */
        complete(c, p, TDM_CLIENT_ESERVER);
    } else {
        complete(c, p, deliver(&r->reply, p->out));
    }
    return 0;
}

/* Dispatches every whole frame already received. */
static int process(tdm_client *c)
{
    const uint8_t *frame;
    size_t len;
    int rc;
    while (!c->err && (rc = tdm__reader_next(&c->reader, &frame, &len)) == 1)
        if (dispatch(c, frame, len)) return c->err;
    if (c->err) return c->err;
    return rc < 0 ? fatal(c, rc, "%s", c->reader.errstr) : 0;
}

/* ---- socket I/O --------------------------------------------------------------------------------- */

static ssize_t recv_with_fd(tdm_client *c, void *p, size_t n);

static int recv_once(tdm_client *c)
{
    uint8_t *p;
    size_t avail;
    int rc = tdm__reader_space(&c->reader, RECV_CHUNK, &p, &avail);
    if (rc) return fatal(c, rc, "%s", c->reader.errstr);
    for (;;) {
        ssize_t n = c->want_fd && !c->tls ? recv_with_fd(c, p, avail) : tdm__io_recv(c->tls, c->fd, p, avail);
        if (n > 0) {
            tdm__reader_commit(&c->reader, (size_t)n);
            return process(c);
        }
        if (n == 0) return fatal(c, TDM_CLIENT_ECLOSED, "the server closed the connection");
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
        return fatal(c, TDM_CLIENT_EIO, "recv: %s", tdm__io_strerror(c->tls, errno));
    }
}

/* How long the next wait may take: at most cap_ms (-1: no cap), and until the deadline (0:
 * none). 0 with *ms set, or the fatal timeout once the deadline has passed. */
static int wait_ms(tdm_client *c, double deadline, int cap_ms, int *ms)
{
    *ms = cap_ms;
    if (deadline <= 0) return 0;
    double left = deadline - tdm__now_ms();
    if (left <= 0)
        return fatal(c, TDM_CLIENT_ETIMEOUT, "no answer from the server within %d ms; the connection is closed",
                     c->io_timeout_ms);
    if (*ms < 0 || left < *ms) *ms = (int)left + 1;
    return 0;
}

/* Waits for the socket; 1 when ready, 0 never (a timeout is fatal), or an error. */
static int wait_fd(tdm_client *c, short events, double deadline, short *revents)
{
    for (;;) {
        int ms, rc = wait_ms(c, deadline, -1, &ms);
        if (rc) return rc;
        struct pollfd pf = {c->fd, events, 0};
        int n = poll(&pf, 1, ms);
        if (n > 0) {
            *revents = pf.revents;
            return 1;
        }
        if (n == 0) continue; /* the deadline check above decides */
        if (errno != EINTR) return fatal(c, TDM_CLIENT_EIO, "poll: %s", strerror(errno));
    }
}

/* ---- shared-memory rings (tdm_client_ring; proto/shm_ring.h) ------------------------------------ */

/* One byte on the socket: the server's loop may be asleep in epoll. A full socket (doorbells
 * unread) already wakes it, and a dead server is met by the next wait. */
static void ring_doorbell(tdm_client *c)
{
    uint8_t b = 1;
    ssize_t n;
    do n = send(c->fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
}

/* Takes the reply bytes the ring holds into the reader and dispatches the whole frames. */
static int ring_recv(tdm_client *c)
{
    tdm_ring_header *h = c->ring;
    uint32_t cap = c->ring_cap;
    int took = 0;
    for (;;) {
        uint64_t avail = atomic_load_explicit(&h->rep_head, memory_order_acquire) - c->rep_tail;
        if (avail == 0) break;
        if (avail > cap) return fatal(c, TDM_CLIENT_EPROTO, "the server's reply ring is out of bounds");
        uint8_t *p;
        size_t room;
        int rc = tdm__reader_space(&c->reader, avail < RECV_CHUNK ? (size_t)avail : RECV_CHUNK, &p, &room);
        if (rc) return fatal(c, rc, "%s", c->reader.errstr);
        size_t n = avail < room ? (size_t)avail : room;
        tdm_ring_copy_out(tdm_ring_rep_data(h, cap), cap, c->rep_tail, p, n);
        c->rep_tail += n;
        atomic_store_explicit(&h->rep_tail, c->rep_tail, memory_order_release);
        tdm__reader_commit(&c->reader, n);
        took = 1;
    }
    if (!took) return 0;
    atomic_thread_fence(memory_order_seq_cst); /* the room made before the look at the server's flags */
    if (atomic_load_explicit(&h->srv_space, memory_order_relaxed) &&
        atomic_load_explicit(&h->srv_sleep, memory_order_relaxed))
        ring_doorbell(c);
    return process(c);
}

static int ring_ready(tdm_client *c, uint32_t why)
{
    tdm_ring_header *h = c->ring;
    if ((why & TDM_RING_WAIT_DATA) && atomic_load_explicit(&h->rep_head, memory_order_acquire) != c->rep_tail)
        return 1;
    return (why & TDM_RING_WAIT_SPACE) &&
           c->req_head - atomic_load_explicit(&h->req_tail, memory_order_acquire) < c->ring_cap;
}

/* The socket, which carries nothing but the server's close once the rings are open: waits up to
 * ms for it. 0 when nothing came, else the connection's error. */
static int ring_socket(tdm_client *c, int ms)
{
    struct pollfd pf = {c->fd, POLLIN, 0};
    int n = poll(&pf, 1, ms);
    if (n <= 0) return n < 0 && errno != EINTR ? fatal(c, TDM_CLIENT_EIO, "poll: %s", strerror(errno)) : 0;
    uint8_t b;
    ssize_t r = recv(c->fd, &b, 1, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    if (ring_recv(c)) return c->err; /* the replies written before the close come first */
    if (r > 0) return fatal(c, TDM_CLIENT_EPROTO, "the server wrote on the socket of a connection with rings");
    if (r == 0 || errno == ECONNRESET) return fatal(c, TDM_CLIENT_ECLOSED, "the server closed the connection");
    return fatal(c, TDM_CLIENT_EIO, "recv: %s", strerror(errno));
}

/* Waits until the ring has what `why` (TDM_RING_WAIT_*) asks for: 1, or the connection's error
 * (a timeout is fatal). Polls for spin_us, then sleeps on the futex word, looking at the socket
 * every 100 ms at most so that a server that died unannounced is noticed. */
static int ring_wait(tdm_client *c, uint32_t why, double deadline)
{
    tdm_ring_header *h = c->ring;
    if (ring_ready(c, why)) return 1;
    if (c->ring_spin_us > 0) {
        double until = tdm__now_ms() + c->ring_spin_us / 1000.0;
        do {
            for (int k = 0; k < 64; k++)
                if (ring_ready(c, why)) return 1;
        } while (tdm__now_ms() < until);
    }
    for (;;) {
        int ms, rc = wait_ms(c, deadline, 100, &ms);
        if (rc) return rc;
        if (atomic_load_explicit(&h->closed, memory_order_acquire)) { /* the FIN is on its way */
            if (ring_ready(c, why)) return 1;
            if ((rc = ring_socket(c, ms))) return rc;
            continue;
        }
        uint32_t seq = atomic_load_explicit(&h->cli_seq, memory_order_relaxed);
        atomic_store_explicit(&h->cli_sleep, why, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst); /* the flag before the last look */
        if (!ring_ready(c, why) && !atomic_load_explicit(&h->closed, memory_order_relaxed)) {
            struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
            syscall(SYS_futex, &h->cli_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
        }
        atomic_store_explicit(&h->cli_sleep, 0, memory_order_relaxed);
        if (ring_ready(c, why)) return 1;
        if ((rc = ring_socket(c, 0))) return rc;
    }
}

/* Writes the output buffer into the request ring, reading replies while it is full. */
static int ring_flush(tdm_client *c, double deadline)
{
    tdm__buf *b = &c->obuf;
    tdm_ring_header *h = c->ring;
    uint32_t cap = c->ring_cap;
    while (b->off < b->len) {
        uint64_t used = c->req_head - atomic_load_explicit(&h->req_tail, memory_order_acquire);
        if (used > cap) return fatal(c, TDM_CLIENT_EPROTO, "the server's request ring is out of bounds");
        if (used == cap) { /* full: the server's replies may be what it waits for */
            int rc = ring_wait(c, TDM_RING_WAIT_SPACE | TDM_RING_WAIT_DATA, deadline);
            if (rc < 0) return rc;
            if ((rc = ring_recv(c))) return rc;
            continue;
        }
        size_t n = b->len - b->off < cap - used ? b->len - b->off : (size_t)(cap - used);
        tdm_ring_copy_in(tdm_ring_req_data(h), cap, c->req_head, b->data + b->off, n);
        c->req_head += n;
        atomic_store_explicit(&h->req_head, c->req_head, memory_order_release);
        tdm__buf_consume(b, n, OBUF_KEEP);
        atomic_thread_fence(memory_order_seq_cst); /* the bytes before the look at the server's flag */
        if (atomic_load_explicit(&h->srv_sleep, memory_order_relaxed)) ring_doorbell(c);
    }
    return 0;
}

/* The RingOpen reply's bytes, read with the descriptor that comes with them. */
static ssize_t recv_with_fd(tdm_client *c, void *p, size_t n)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct iovec iov = {p, n};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t r = recvmsg(c->fd, &m, MSG_CMSG_CLOEXEC);
    if (r <= 0) return r;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS && cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm), sizeof fd);
            if (c->got_fd >= 0) close(fd); /* one is expected */
            else c->got_fd = fd;
        }
    return r;
}

/* Reads until at least one more frame could be dispatched or the deadline passes. */
static int read_some(tdm_client *c, double deadline)
{
    if (c->ring) {
        int rc = ring_wait(c, TDM_RING_WAIT_DATA, deadline);
        return rc < 0 ? rc : ring_recv(c);
    }
    short rev;
    int rc = wait_fd(c, POLLIN, deadline, &rev);
    return rc < 0 ? rc : recv_once(c);
}

static int flush(tdm_client *c, double deadline)
{
    if (c->ring) return ring_flush(c, deadline);
    tdm__buf *b = &c->obuf;
    while (b->off < b->len) {
        ssize_t n = tdm__io_send(c->tls, c->fd, b->data + b->off, b->len - b->off);
        if (n > 0) {
            tdm__buf_consume(b, (size_t)n, OBUF_KEEP);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            if (errno == EPIPE || errno == ECONNRESET) {
                /* the server may have said why before closing (an Error, then close):
                 * deliver what is already here, without waiting for more */
                for (int k = 0; k < 64 && !c->err; k++) {
                    struct pollfd pf = {c->fd, POLLIN, 0};
                    if (poll(&pf, 1, 0) <= 0 || recv_once(c)) break;
                }
                return fatal(c, TDM_CLIENT_ECLOSED, "the server closed the connection");
            }
            return fatal(c, TDM_CLIENT_EIO, "send: %s", tdm__io_strerror(c->tls, errno));
        }
        short rev;
        int rc = wait_fd(c, POLLOUT | POLLIN, deadline, &rev);
        if (rc < 0) return rc;
        if ((rev & (POLLIN | POLLHUP | POLLERR)) && (rc = recv_once(c))) return rc;
    }
    return 0;
}

static double deadline_of(const tdm_client *c)
{
    return c->io_timeout_ms > 0 ? tdm__now_ms() + c->io_timeout_ms : 0;
}

/* ---- requests ----------------------------------------------------------------------------------- */

static int done_reserve(tdm_client *c, size_t n)
{
    if (c->done_cap >= n) return 0;
    size_t cap = c->done_cap ? c->done_cap * 2 : 16;
    while (cap < n) cap *= 2;
    uint64_t *nd = malloc(cap * sizeof *nd);
    if (!nd) return TDM_CLIENT_ENOMEM;
    for (size_t i = 0; i < c->done_len; i++) nd[i] = c->done[(c->done_head + i) % c->done_cap];
    free(c->done);
    c->done = nd;
    c->done_cap = cap;
    c->done_head = 0;
    return 0;
}

/* Encodes, registers and writes one request. On success *id is in flight (or, if the
 * connection broke while writing, already failed). */
static int submit(tdm_client *c, const tdm__req *rq, const tdm__qsink *qs, outs *o, bool piped, double deadline,
                  uint64_t *id)
{
    c->has_serr = false;
    if (!c->err) forked(c);
    if (c->err) { /* closed: every call says why */
        memcpy(c->errstr, c->fatalstr, sizeof c->errstr);
        return c->err;
    }
    if (piped && done_reserve(c, c->piped + 1)) return local_error(c, TDM_CLIENT_ENOMEM, "out of memory");
    size_t mark = c->obuf.len;
    int rc = tdm__encode(rq, c->next_id, &c->obuf, c->info.limits.max_frame_bytes, c->errstr, sizeof c->errstr);
    if (rc) {
        c->has_serr = false;
        return rc;
    }
    tdm__pending *p = tdm__ptable_add(&c->pending, c->next_id);
    if (!p) {
        c->obuf.len = mark;
        return local_error(c, TDM_CLIENT_ENOMEM, "out of memory");
    }
    p->type = (uint8_t)rq->type;
    if (qs) p->qs = *qs;
    p->out = o;
    *id = c->next_id++;
    rc = flush(c, deadline);
    if (rc) { /* the connection broke: this request failed with it */
        tdm__ptable_del(&c->pending, p);
        return rc;
    }
    if (piped) {
        p->piped = 1;
        c->piped++;
        if (p->state == TDM__DONE) done_push(c, p->id);
    }
    return 0;
}

static void take_server_error(tdm_client *c, tdm__pending *p)
{
    c->has_serr = true;
    if (p->err) {
        tdm__fmt(c->serr_message, sizeof c->serr_message, "%s", p->err->message);
        tdm__fmt(c->serr_field, sizeof c->serr_field, "%s", p->err->field);
        c->serr.code = p->err->code;
        c->serr.index = p->err->index;
    } else {
        tdm__fmt(c->serr_message, sizeof c->serr_message, "(details lost: out of memory)");
        c->serr_field[0] = 0;
        c->serr.code = TDM_SERVER_UNSPECIFIED;
        c->serr.index = -1;
    }
    c->serr.message = c->serr_message;
    c->serr.field = c->serr_field;
    if (c->serr_field[0] && c->serr.index >= 0)
        tdm__fmt(c->errstr, sizeof c->errstr, "server: %s (%s, index %lld): %s", tdm_server_code_name(c->serr.code),
                 c->serr.field, (long long)c->serr.index, c->serr.message);
    else if (c->serr_field[0])
        tdm__fmt(c->errstr, sizeof c->errstr, "server: %s (%s): %s", tdm_server_code_name(c->serr.code),
                 c->serr.field, c->serr.message);
    else
        tdm__fmt(c->errstr, sizeof c->errstr, "server: %s: %s", tdm_server_code_name(c->serr.code),
                 c->serr.message);
}

/* Hands back a finished request: its status, with the server error moved into c. */
static int collect(tdm_client *c, tdm__pending *p)
{
    int status = p->status;
    if (status == TDM_CLIENT_ESERVER) take_server_error(c, p);
    else if (status == TDM_CLIENT_ENOMEM) local_error(c, status, "out of memory for a reply");
    tdm__ptable_del(&c->pending, p);
    return status;
}

static int await(tdm_client *c, uint64_t id, double deadline)
{
    tdm__pending *p;
    while ((p = tdm__ptable_get(&c->pending, id)) && p->state != TDM__DONE && !c->err) read_some(c, deadline);
    /* fatal() completes every waiting request, so p is DONE here */
    return p ? collect(c, p) : (c->err ? c->err : TDM_CLIENT_EPROTO);
}

static int call(tdm_client *c, const tdm__req *rq, const tdm__qsink *qs, outs *o, double deadline)
{
    uint64_t id;
    int rc = submit(c, rq, qs, o, false, deadline, &id);
    return rc ? rc : await(c, id, deadline);
}

/* ---- connection ----------------------------------------------------------------------------- */

tdm_client *tdm_client_connect(const char *addr, int timeout_ms)
{
    tdm_connect_opts o = {.addr = addr, .timeout_ms = timeout_ms};
    return tdm_client_connect_with(&o);
}

tdm_client *tdm_client_connect_with(const tdm_connect_opts *opts)
{
    tdm_client *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->fd = -1;
    c->next_id = 1;
    c->fork_gen = tdm__fork_gen();
    if (tdm__reader_init(&c->reader, opts ? opts->max_reply_bytes : 0)) {
        c->err = TDM_CLIENT_ENOMEM;
        tdm__fmt(c->errstr, sizeof c->errstr, "out of memory");
        return c;
    }
    if (tdm__ptable_init(&c->pending, 64)) {
        c->err = TDM_CLIENT_ENOMEM;
        tdm__fmt(c->errstr, sizeof c->errstr, "out of memory");
        return c;
    }
    if (!opts) {
        c->err = TDM_CLIENT_EINVAL;
        tdm__fmt(c->errstr, sizeof c->errstr, "no connect options");
        return c;
    }
    int prog;
    double deadline = opts->timeout_ms > 0 ? tdm__now_ms() + opts->timeout_ms : 0;
    const char *addr;
    int tls = tdm__tls_scheme(opts->addr, &addr);
    int fd = tdm__net_connect(addr, opts->timeout_ms, true, &prog, c->errstr, sizeof c->errstr);
    if (fd < 0) {
        c->err = fd;
        return c;
    }
    c->fd = fd;
    if (tls) {
        int rc = tdm__tls_new(fd, addr, opts->tls_ca_file, &c->tls, c->errstr, sizeof c->errstr);
        if (!rc) rc = tdm__tls_handshake_wait(c->tls, fd, deadline, c->errstr, sizeof c->errstr);
        if (rc) {
            char why[sizeof c->errstr];
            tdm__fmt(why, sizeof why, "%s", c->errstr);
            fatal(c, rc, "%s", why);
            return c;
        }
    }
    tdm__req rq = {.type = TDM_REPLY_HELLO,
                   .u.hello = {opts->auth_token, opts->client_name ? opts->client_name : "libtandem"}};
    outs o = {.hello = &c->info};
    int rc = call(c, &rq, NULL, &o, deadline);
    if (rc == TDM_CLIENT_ESERVER) {
        char why[sizeof c->errstr];
        tdm__fmt(why, sizeof why, "%s", c->errstr);
        fatal(c, c->serr.code == TDM_SERVER_UNSUPPORTED_VERSION ? TDM_CLIENT_EVERSION : TDM_CLIENT_ESERVER,
              "the server refused Hello: %s", why);
    } else if (rc == TDM_CLIENT_ETIMEOUT) { /* as the async client says it */
        tdm__fmt(c->errstr, sizeof c->errstr, "%s: connected, but no Hello reply within %d ms", opts->addr,
                 opts->timeout_ms);
    } else if (rc == 0 && c->info.protocol_version != TDM_PROTOCOL_VERSION) {
        fatal(c, TDM_CLIENT_EVERSION, "the server speaks protocol version %u, this library %d",
              c->info.protocol_version, TDM_PROTOCOL_VERSION);
    }
    c->io_timeout_ms = opts->io_timeout_ms;
    return c;
}

void tdm_client_free(tdm_client *c)
{
    if (!c) return;
    tdm__tls_free(c->tls);
    if (c->ring) munmap(c->ring, tdm_ring_map_bytes(c->ring_cap));
    if (c->fd >= 0) close(c->fd);
    for (size_t i = 0; c->pending.slots && i <= c->pending.mask; i++) free(c->pending.slots[i].err);
    tdm__ptable_free(&c->pending);
    tdm__reader_deinit(&c->reader);
    tdm__buf_free(&c->obuf);
    free(c->done);
    free(c);
}

int tdm_client_err(const tdm_client *c) { return c->err; }
const char *tdm_client_errstr(const tdm_client *c) { return c->errstr; }
const tdm_server_error *tdm_client_server_error(const tdm_client *c) { return c->has_serr ? &c->serr : NULL; }
const tdm_server_info *tdm_client_server_info(const tdm_client *c) { return &c->info; }

size_t tdm_limits_size(void) { return sizeof(tdm_limits); }
void tdm_client_set_timeout(tdm_client *c, int io_timeout_ms) { c->io_timeout_ms = io_timeout_ms; }
int tdm_client_fd(const tdm_client *c) { return c->fd; }
int tdm_client_ring_open(const tdm_client *c) { return c->ring != NULL; }

int tdm_client_ring(tdm_client *c, uint32_t bytes, int spin_us)
{
    c->has_serr = false;
    if (c->err) {
        memcpy(c->errstr, c->fatalstr, sizeof c->errstr);
        return c->err;
    }
    if (c->ring) return local_error(c, TDM_CLIENT_EINVAL, "this connection's rings are open already");
    if (c->pending.count || c->obuf.off < c->obuf.len)
        return local_error(c, TDM_CLIENT_EINVAL, "tdm_client_ring: requests are in flight");
    uint32_t cap = 0;
    tdm__req rq = {.type = TDM_REPLY_RING_OPEN, .u.ring_bytes = bytes};
    outs o = {.ring_bytes = &cap};
    c->want_fd = 1;
    c->got_fd = -1;
    int rc = call(c, &rq, NULL, &o, deadline_of(c));
    c->want_fd = 0;
    int fd = c->got_fd;
    c->got_fd = -1;
    if (rc) {
        if (fd >= 0) close(fd);
        return rc; /* a refusal leaves the connection on the socket */
    }
    /* the server's frames come through the rings from here: anything amiss ends the connection */
    if (fd < 0) return fatal(c, TDM_CLIENT_EPROTO, "the server's RingOpenReply came without its shared memory");
    struct stat st;
    size_t len = tdm_ring_map_bytes(cap);
    void *map = MAP_FAILED;
    if (cap >= TDM_RING_MIN_BYTES && !(cap & (cap - 1)) && fstat(fd, &st) == 0 && (uint64_t)st.st_size >= len)
        map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return fatal(c, TDM_CLIENT_EPROTO, "the server's rings (%u bytes) cannot be mapped", cap);
    tdm_ring_header *h = map;
    if (h->magic != TDM_RING_MAGIC || h->version != TDM_RING_VERSION || h->cap != cap) {
        munmap(map, len);
        return fatal(c, TDM_CLIENT_EPROTO, "the server's rings are not version %u rings of %u bytes",
                     TDM_RING_VERSION, cap);
    }
    c->ring = h;
    c->ring_cap = cap;
    c->req_head = c->rep_tail = 0;
    c->ring_spin_us = spin_us > 0 ? spin_us : 0;
    if (c->reader.end > c->reader.start) /* bytes after the reply on the socket: nothing may follow it */
        return fatal(c, TDM_CLIENT_EPROTO, "the server sent bytes after its RingOpenReply");
    return 0;
}

/* ---- the API --------------------------------------------------------------------------------- */

int tdm_mesh_put(tdm_client *c, const char *name, const float *verts, uint32_t n_verts, const uint32_t *tris,
                 uint32_t n_tris, uint8_t mesh_id[TDM_ID_BYTES], int *created)
{
    if (!mesh_id) return local_error(c, TDM_CLIENT_EINVAL, "mesh_id is NULL");
    const tdm_limits *l = &c->info.limits;
    if ((l->max_vertices && n_verts > l->max_vertices) || (l->max_triangles && n_tris > l->max_triangles)) {
        return local_error(c, TDM_CLIENT_ELIMIT,
                           "the mesh has %u vertices and %u triangles; the server takes at most %u and %u", n_verts,
                           n_tris, l->max_vertices, l->max_triangles);
    }
    tdm__req rq = {.type = TDM_REPLY_MESH_PUT, .u.mesh_put = {name, verts, n_verts, tris, n_tris}};
    uint8_t id[TDM_ID_BYTES];
    int cr = 0;
    outs o = {.id = id, .created = &cr};
    int rc = call(c, &rq, NULL, &o, deadline_of(c));
    if (rc == 0) {
        memcpy(mesh_id, id, TDM_ID_BYTES);
        if (created) *created = cr;
    }
    return rc;
}

/* MeshList and SceneList: the reply is one malloc'd block, handed over only on success. */
static int list_call(tdm_client *c, int type, void **out, size_t *n)
{
    if (!out || !n) return local_error(c, TDM_CLIENT_EINVAL, "NULL output");
    tdm__req rq = {.type = type};
    void *list = NULL;
    size_t cnt = 0;
    outs o = {.list = &list, .n_list = &cnt};
    int rc = call(c, &rq, NULL, &o, deadline_of(c));
    if (rc == 0) {
        *out = list;
        *n = cnt;
    } else {
        free(list);
    }
    return rc;
}

int tdm_mesh_list(tdm_client *c, tdm_mesh_info **out, size_t *n)
{
    void *list = NULL;
    int rc = list_call(c, TDM_REPLY_MESH_LIST, out ? &list : NULL, n);
    if (rc == 0) *out = list;
    return rc;
}

void tdm_mesh_list_free(tdm_mesh_info *list) { free(list); }

int tdm_mesh_delete(tdm_client *c, const uint8_t mesh_id[TDM_ID_BYTES])
{
    if (!mesh_id) return local_error(c, TDM_CLIENT_EINVAL, "mesh_id is NULL");
    tdm__req rq = {.type = TDM_REPLY_MESH_DELETE, .u.id = mesh_id};
    return call(c, &rq, NULL, NULL, deadline_of(c));
}

int tdm_scene_put(tdm_client *c, const char *name, const tdm_scene_object *objects, size_t n_objects,
                  const tdm_object_pair *allowed, size_t n_allowed, uint8_t scene_id[TDM_ID_BYTES], int *created,
                  uint32_t *movable, size_t movable_cap, size_t *n_movable)
{
    if (!scene_id || (movable_cap && !movable)) return local_error(c, TDM_CLIENT_EINVAL, "NULL output");
    if (c->info.limits.max_objects && n_objects > c->info.limits.max_objects) {
        return local_error(c, TDM_CLIENT_ELIMIT, "the scene has %zu objects; the server takes at most %u", n_objects,
                           c->info.limits.max_objects);
    }
    tdm__req rq = {.type = TDM_REPLY_SCENE_PUT,
                   .u.scene_put = {name, objects, n_objects, allowed, n_allowed, c->ephemeral_scenes}};
    uint8_t id[TDM_ID_BYTES];
    int cr = 0;
    size_t nm = 0;
    /* movable ids are written in place only on success: the reply is complete before it is delivered */
    outs o = {.id = id, .created = &cr, .movable = movable, .movable_cap = movable_cap, .n_movable = &nm};
    int rc = call(c, &rq, NULL, &o, deadline_of(c));
    if (rc == 0) {
        memcpy(scene_id, id, TDM_ID_BYTES);
        if (created) *created = cr;
        if (n_movable) *n_movable = nm;
    }
    return rc;
}

int tdm_scene_list(tdm_client *c, tdm_scene_info **out, size_t *n)
{
    void *list = NULL;
    int rc = list_call(c, TDM_REPLY_SCENE_LIST, out ? &list : NULL, n);
    if (rc == 0) *out = list;
    return rc;
}

void tdm_scene_list_free(tdm_scene_info *list) { free(list); }

int tdm_scene_delete(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES])
{
    if (!scene_id) return local_error(c, TDM_CLIENT_EINVAL, "scene_id is NULL");
    tdm__req rq = {.type = TDM_REPLY_SCENE_DELETE, .u.id = scene_id};
    return call(c, &rq, NULL, NULL, deadline_of(c));
}

static int query_prepare(tdm_client *c, tdm__req *rq, tdm__qsink *qs, const uint8_t *scene_id, tdm_query_mode mode,
                         const double *poses, uint32_t n_movable, size_t n_queries, uint32_t max_contacts,
                         tdm_query_result *results, tdm_pairs *pairs)
{
    if (!results || (pairs && pairs->cap && !pairs->data))
        return local_error(c, TDM_CLIENT_EINVAL, "results is NULL, or pairs has room but no data");
    if (tdm__req_query(rq, scene_id, mode, poses, n_movable, n_queries, max_contacts, pairs != NULL))
        return local_error(c, TDM_CLIENT_EINVAL,
                           "a query needs a scene id, poses, a mode, and at least one query and movable object");
    if (c->info.limits.max_queries && n_queries > c->info.limits.max_queries) {
        return local_error(c, TDM_CLIENT_ELIMIT, "%zu queries in one batch; the server takes at most %u", n_queries,
                           c->info.limits.max_queries);
    }
    *qs = (tdm__qsink){results, n_queries, pairs != NULL, pairs};
    return 0;
}

int tdm_query(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *poses,
              uint32_t n_movable, size_t n_queries, uint32_t max_contacts, tdm_query_result *results,
              tdm_pairs *pairs)
{
    tdm__req rq;
    tdm__qsink qs;
    int rc = query_prepare(c, &rq, &qs, scene_id, mode, poses, n_movable, n_queries, max_contacts, results, pairs);
    return rc ? rc : call(c, &rq, &qs, NULL, deadline_of(c));
}

int tdm_query_send(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *poses,
                   uint32_t n_movable, size_t n_queries, uint32_t max_contacts, tdm_query_result *results,
                   tdm_pairs *pairs, uint64_t *id)
{
    tdm__req rq;
    tdm__qsink qs;
    uint64_t qid;
    int rc = query_prepare(c, &rq, &qs, scene_id, mode, poses, n_movable, n_queries, max_contacts, results, pairs);
    if (rc == 0) rc = submit(c, &rq, &qs, NULL, true, deadline_of(c), &qid);
    if (rc == 0 && id) *id = qid;
    return rc;
}

int tdm_query_wait(tdm_client *c, uint64_t *id, int *status)
{
    c->has_serr = false;
    forked(c);
    if (c->piped == 0) return local_error(c, TDM_CLIENT_EINVAL, "no pipelined query is outstanding");
    double deadline = deadline_of(c);
    while (c->done_len == 0 && !c->err) read_some(c, deadline);
    if (c->done_len == 0) return c->err; /* cannot happen: a failure completes every query */
    uint64_t qid = c->done[c->done_head];
    c->done_head = (c->done_head + 1) % c->done_cap;
    c->done_len--;
    c->piped--;
    int st = collect(c, tdm__ptable_get(&c->pending, qid));
    if (id) *id = qid;
    if (status) *status = st;
    return 0;
}

size_t tdm_query_outstanding(const tdm_client *c) { return c->piped; }

int tdm_stats_get(tdm_client *c, tdm_stats *out)
{
    if (!out) return local_error(c, TDM_CLIENT_EINVAL, "NULL output");
    tdm__req rq = {.type = TDM_REPLY_STATS};
    tdm_stats s;
    outs o = {.stats = &s};
    int rc = call(c, &rq, NULL, &o, deadline_of(c));
    if (rc == 0) *out = s;
    return rc;
}

/* ---- robots ------------------------------------------------------------------------------------ */

int tdm_robot_put(tdm_client *c, const char *name, const char *urdf, const char *srdf,
                  const tdm_robot_mesh_ref *meshes, size_t n_meshes, uint8_t robot_id[TDM_ID_BYTES], int *created,
                  tdm_robot_info **info)
{
    if (!robot_id || !urdf) return local_error(c, TDM_CLIENT_EINVAL, "robot_id or urdf is NULL");
    uint32_t maxt = c->info.limits.max_robot_text_bytes;
    if (maxt && (strlen(urdf) > maxt || (srdf && strlen(srdf) > maxt)))
        return local_error(c, TDM_CLIENT_ELIMIT, "the URDF or SRDF is over the server's max_robot_text_bytes %u", maxt);
    tdm__req rq = {.type = TDM_REPLY_ROBOT_PUT, .u.robot_put = {name, urdf, srdf, meshes, n_meshes}};
    void *block = NULL;
    outs o = {.block = &block};
    int rc = call(c, &rq, NULL, &o, deadline_of(c));
    if (rc == 0) {
        tdm_robot_info *ri = block;
        memcpy(robot_id, ri->robot_id, TDM_ID_BYTES);
        if (created) *created = ri->created;
        if (info) {
            *info = ri;
            block = NULL;
        }
    }
    free(block);
    return rc;
}

int tdm_robot_list(tdm_client *c, tdm_robot_info **out, size_t *n)
{
    void *list = NULL;
    int rc = list_call(c, TDM_REPLY_ROBOT_LIST, out ? &list : NULL, n);
    if (rc == 0) *out = list;
    return rc;
}

void tdm_robot_info_free(tdm_robot_info *info) { free(info); }

int tdm_robot_delete(tdm_client *c, const uint8_t robot_id[TDM_ID_BYTES])
{
    if (!robot_id) return local_error(c, TDM_CLIENT_EINVAL, "robot_id is NULL");
    tdm__req rq = {.type = TDM_REPLY_ROBOT_DELETE, .u.id = robot_id};
    return call(c, &rq, NULL, NULL, deadline_of(c));
}

int tdm_robot_scene_put(tdm_client *c, const char *name, const uint8_t robot_id[TDM_ID_BYTES], const char *world_yaml,
                        uint8_t scene_id[TDM_ID_BYTES], int *created, tdm_robot_scene_info **info)
{
    if (!robot_id || !world_yaml || !scene_id) return local_error(c, TDM_CLIENT_EINVAL, "NULL argument");
    uint32_t maxt = c->info.limits.max_robot_text_bytes;
    if (maxt && strlen(world_yaml) > maxt)
        return local_error(c, TDM_CLIENT_ELIMIT, "the planning scene is over the server's max_robot_text_bytes %u",
                           maxt);
    tdm__req rq = {.type = TDM_REPLY_ROBOT_SCENE_PUT,
                   .u.robot_scene_put = {name, robot_id, world_yaml, c->ephemeral_scenes}};
    void *block = NULL;
    outs o = {.block = &block};
    int rc = call(c, &rq, NULL, &o, deadline_of(c));
    if (rc == 0) {
        tdm_robot_scene_info *si = block;
        memcpy(scene_id, si->scene_id, TDM_ID_BYTES);
        if (created) *created = si->created;
        if (info) {
            *info = si;
            block = NULL;
        }
    }
    free(block);
    return rc;
}

void tdm_robot_scene_info_free(tdm_robot_scene_info *info) { free(info); }

void tdm_client_set_ephemeral_scenes(tdm_client *c, int on)
{
    if (c) c->ephemeral_scenes = on != 0;
}

static int configs_prepare(tdm_client *c, tdm__req *rq, tdm__qsink *qs, const uint8_t *scene_id,
                           tdm_query_mode mode, const double *configs, uint32_t n_joints, size_t n_queries,
                           uint32_t max_contacts, tdm_query_result *results, tdm_pairs *pairs)
{
    if (!results || (pairs && pairs->cap && !pairs->data))
        return local_error(c, TDM_CLIENT_EINVAL, "results is NULL, or pairs has room but no data");
    if (tdm__req_query_configs(rq, scene_id, mode, configs, n_joints, n_queries, max_contacts, pairs != NULL))
        return local_error(c, TDM_CLIENT_EINVAL,
                           "a query needs a scene id, configurations, a mode, and at least one query and joint");
    if (c->info.limits.max_queries && n_queries > c->info.limits.max_queries)
        return local_error(c, TDM_CLIENT_ELIMIT, "%zu queries in one batch; the server takes at most %u", n_queries,
                           c->info.limits.max_queries);
    *qs = (tdm__qsink){results, n_queries, pairs != NULL, pairs};
    return 0;
}

int tdm_query_configs(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *configs,
                      uint32_t n_joints, size_t n_queries, uint32_t max_contacts, tdm_query_result *results,
                      tdm_pairs *pairs)
{
    tdm__req rq;
    tdm__qsink qs;
    int rc = configs_prepare(c, &rq, &qs, scene_id, mode, configs, n_joints, n_queries, max_contacts, results, pairs);
    return rc ? rc : call(c, &rq, &qs, NULL, deadline_of(c));
}

int tdm_query_configs_send(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                           const double *configs, uint32_t n_joints, size_t n_queries, uint32_t max_contacts,
                           tdm_query_result *results, tdm_pairs *pairs, uint64_t *id)
{
    tdm__req rq;
    tdm__qsink qs;
    uint64_t qid;
    int rc = configs_prepare(c, &rq, &qs, scene_id, mode, configs, n_joints, n_queries, max_contacts, results, pairs);
    if (rc == 0) rc = submit(c, &rq, &qs, NULL, true, deadline_of(c), &qid);
    if (rc == 0 && id) *id = qid;
    return rc;
}

static int motion_call(tdm_client *c, const uint8_t *scene_id, double resolution, const double *points,
                       uint32_t n_joints, const uint32_t *n_points, size_t n_motions, unsigned flags,
                       int64_t *first_colliding, uint64_t *n_states, double *last_free)
{
    if (flags & ~(unsigned)TDM_MOTION_ANY_STATE)
        return local_error(c, TDM_CLIENT_EINVAL, "unknown motion check flags 0x%x", flags);
    if (!scene_id || !points || !first_colliding || n_joints == 0 || n_motions == 0)
        return local_error(c, TDM_CLIENT_EINVAL, "a motion check needs a scene id, motions, answers and joints");
    size_t total = 0;
    for (size_t i = 0; i < n_motions; i++) {
        size_t p = n_points ? n_points[i] : 2;
        if (p < 2 || total > SIZE_MAX / 8 / n_joints - p)
            return local_error(c, TDM_CLIENT_EINVAL, "motion %zu: fewer than 2 configurations, or too many", i);
        total += p;
    }
    if (c->info.limits.max_queries && n_motions > c->info.limits.max_queries)
        return local_error(c, TDM_CLIENT_ELIMIT, "%zu motions in one request; the server takes at most %u",
                           n_motions, c->info.limits.max_queries);
    tdm__req rq = {.type = TDM_REPLY_MOTION_CHECK,
                   .u.motion_check = {scene_id, resolution, points, total * n_joints, n_points, n_motions, flags}};
    outs o = {.n_motions = n_motions,
              .n_joints = n_joints,
              .first_colliding = first_colliding,
              .motion_states = n_states,
              .last_free = last_free};
    return call(c, &rq, NULL, &o, deadline_of(c));
}

int tdm_motion_check(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], double resolution, const double *motions,
                     uint32_t n_joints, size_t n_motions, int64_t *first_colliding, uint64_t *n_states,
                     double *last_free)
{
    return motion_call(c, scene_id, resolution, motions, n_joints, NULL, n_motions, 0, first_colliding, n_states,
                       last_free);
}

int tdm_motion_check_paths(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                           const double *points, uint32_t n_joints, const uint32_t *n_points, size_t n_motions,
                           int64_t *first_colliding, uint64_t *n_states, double *last_free)
{
    if (!n_points) return local_error(c, TDM_CLIENT_EINVAL, "n_points is NULL");
    return motion_call(c, scene_id, resolution, points, n_joints, n_points, n_motions, 0, first_colliding, n_states,
                       last_free);
}

int tdm_motion_check_flags(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                           const double *points, uint32_t n_joints, const uint32_t *n_points, size_t n_motions,
                           unsigned flags, int64_t *first_colliding, uint64_t *n_states, double *last_free)
{
    return motion_call(c, scene_id, resolution, points, n_joints, n_points, n_motions, flags, first_colliding,
                       n_states, last_free);
}

int tdm__client_local_error(tdm_client *c, int code, const char *msg) { return local_error(c, code, "%s", msg); }
