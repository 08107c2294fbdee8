#define _GNU_SOURCE /* struct ucred, SO_PEERCRED */
#include "conn.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../proto/shm_ring.h"

#include "log.h"
#include "metrics.h"
#include "request.h"
#include "request_handlers.h"

#define STAGE_CAP 65536u

static const char *const state_text[] = {"read_len", "read_body", "paused", "draining", "linger", "closing"};
_Static_assert(sizeof state_text / sizeof state_text[0] == CONN__STATE_COUNT, "state_text out of sync");

struct tdm_frame {
    uv_write_t req;
    tdm_conn *conn;
    struct tdm_frame *next; /* a ring connection's frames waiting for room (ring_out) */
    size_t len;
    size_t off;  /* bytes already written by tdm_conn_reply_direct */
    int gated;   /* counted in conn->out_gate by tdm_conn_reply_direct */
    uint8_t data[];
};

static void conn_set_state(tdm_conn *c, enum tdm_conn_state s)
{
    assert(s >= 0 && s < CONN__STATE_COUNT);
    assert(c->state != CONN_CLOSING || s == CONN_CLOSING);
    if (c->state == s) return;
    tdm_log_debug("conn %llu: %s -> %s", (unsigned long long)c->id, state_text[c->state], state_text[s]);
    c->state = s;
    if ((s == CONN_DRAINING || s == CONN_LINGER || s == CONN_CLOSING) && (c->out_fd >= 0 || c->ring_direct)) {
        /* from here on every byte goes through the loop (the FIN after the last reply) */
        pthread_mutex_lock(&c->out_mu);
        c->out_fd = -1;
        c->ring_direct = 0;
        pthread_mutex_unlock(&c->out_mu);
    }
}

static int is_reading_state(const tdm_conn *c) { return c->state == CONN_READ_LEN || c->state == CONN_READ_BODY; }
int tdm_conn_alive(const tdm_conn *c) { return c->state != CONN_CLOSING; }

/* ---- memory (budget.h) ---- */

static void input_charge(tdm_conn *c, size_t n)
{
    tdm_budget_charge(&c->srv->mem, TDM_MEM_INPUT, n);
    c->in_charged += n;
}

static void input_release(tdm_conn *c, size_t n)
{
    tdm_budget_release(&c->srv->mem, TDM_MEM_INPUT, n);
    c->in_charged -= n;
}

/* Room for n more bytes of a large frame's buffer, within max-input-bytes and max-memory? */
static int input_room(const tdm_conn *c, size_t n)
{
    const tdm_server *s = c->srv;
    uint64_t used = s->mem.used[TDM_MEM_INPUT], max = s->cfg->max_input_bytes;
    return used <= max && n <= max - used && tdm_budget_room(&s->mem, n);
}

/* The large frame's buffer goes (handled, or the connection closing). */
/* A large frame's own buffer. From BODY_MAPPED bytes up it is a mapping of its own,
 * grown by mremap (no copy) and handed back to the system at its free: freed heap stays
 * with the malloc arena of the loop thread that freed it (the daemon keeps freed heap,
 * main.c), so with several loops the partial frames that max-input-bytes admits would
 * cost resident memory several times over (tests/test_limits.c). */
#define BODY_MAPPED (1u << 20)

static void *body_alloc(size_t n)
{
    if (n < BODY_MAPPED) return malloc(n);
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* NULL when out of memory, p then unchanged. */
static void *body_grow(void *p, size_t old, size_t n)
{
    if (n < BODY_MAPPED) return realloc(p, n);
    if (old >= BODY_MAPPED) {
        void *q = mremap(p, old, n, MREMAP_MAYMOVE);
        return q == MAP_FAILED ? NULL : q;
    }
    void *q = body_alloc(n);
    if (q) {
        memcpy(q, p, old);
        free(p);
    }
    return q;
}

static void body_release(void *p, size_t cap)
{
    if (!p) return;
    if (cap < BODY_MAPPED) free(p);
    else munmap(p, cap);
}

static void body_free(tdm_conn *c)
{
    if (!c->body) return;
    body_release(c->body, c->body_cap);
    c->body = NULL;
    input_release(c, c->body_cap);
    c->body_cap = c->body_got = 0;
}

static int output_over(const tdm_conn *c) { return c->out_bytes + c->promised > c->srv->cfg->max_output_bytes; }

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void process_input(tdm_conn *c);
static void ring_pump(tdm_conn *c);
static int ring_flush(tdm_conn *c);
static void ring_detach(tdm_conn *c);
static void ring_unpark(tdm_conn *c);
static void ring_closed(tdm_conn *c);
static void tls_pump(tdm_conn *c);
static void tls_flush(tdm_conn *c);

static void read_start(tdm_conn *c)
{
    if (c->reading) return;
    int rc = uv_read_start(&c->h.stream, on_alloc, on_read);
    if (rc != 0) {
        tdm_conn_close(c, uv_strerror(rc));
        return;
    }
    c->reading = 1;
}

static void read_stop(tdm_conn *c)
{
    if (!c->reading) return;
    uv_read_stop(&c->h.stream);
    c->reading = 0;
}

/* Every libuv callback here holds the server's lock (io.h) for what it does; `c` may be
 * freed by then, so the server is read first. */
#define LOCKED(c, body)                                                                                                \
    do {                                                                                                               \
        tdm_server *srv_ = (c)->srv;                                                                                   \
        tdm_srv_lock(srv_);                                                                                            \
        body;                                                                                                          \
        tdm_srv_unlock(srv_);                                                                                          \
    } while (0)

static void maybe_free(tdm_conn *c)
{
    if (c->handles_open > 0 || c->inflight > 0) return;
    tdm_server *srv = c->srv;
    tdm_io *io = c->io;
    if (c->prev) c->prev->next = c->next;
    else srv->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    srv->n_conns--;
    if (c->active) srv->n_active--;
    tdm_log_debug("conn %llu: freed", (unsigned long long)c->id);
    body_free(c);
    if (c->stage) input_release(c, STAGE_CAP);
    free(c->stage);
    tdm_tls_free(c->tls);
    tdm_arena_free(c->arena);
    free(c->eph);
    if (c->ring) { /* no thread writes into it any more: the close took it from the loop and the reply threads */
        munmap(c->ring, tdm_ring_map_bytes(c->ring_cap));
        tdm_budget_release(&srv->mem, TDM_MEM_RING, tdm_ring_map_bytes(c->ring_cap));
        c->ring = NULL;
    }
    assert(c->in_charged == 0 && c->promised == 0 && !c->jobs);
    pthread_mutex_destroy(&c->out_mu);
    free(c);
    tdm_server_conn_gone(srv, io);
}

static void on_closed(uv_handle_t *h)
{
    tdm_conn *c = h->data;
    LOCKED(c, {
        c->handles_open--;
        maybe_free(c);
    });
}

void tdm_conn_close(tdm_conn *c, const char *why)
{
    if (c->state == CONN_CLOSING) return;
    tdm_srv_exclusive(c->srv); /* the server's lists and counters (io.h) */
    tdm_log_debug("conn %llu (%s): closing: %s", (unsigned long long)c->id, c->peer, why);
    read_stop(c);
    conn_set_state(c, CONN_CLOSING);
    tdm_conn_leave_unauth(c); /* a closing connection holds no unauthenticated slot */
    if (c->auth_hold) { /* closed during the auth delay: its timer goes with it, and so does its hold */
        c->auth_hold = 0;
        c->inflight--;
    }
    body_free(c);
    if (c->ring) ring_detach(c);
    tdm_conn_jobs_cancel(c); /* its queued work is dropped, its running work answered into the void */
    tdm__ephemeral_release(c); /* the ephemeral scenes it was the last to hold go */
    uv_close(&c->h.handle, on_closed);
    uv_close((uv_handle_t *)&c->linger, on_closed);
}

static void on_linger_timeout(uv_timer_t *t)
{
    tdm_conn *c = t->data;
    LOCKED(c, tdm_conn_close(c, "the client did not close in time"));
}

static void deadline_passed(tdm_conn *c)
{
    const tdm_config *cfg = c->srv->cfg;
    if (c->state == CONN_LINGER || c->state == CONN_CLOSING) return;
    if (!c->authed) {
        tdm_log_info("conn %llu (%s): no Hello within %u s (hello-timeout): closing", (unsigned long long)c->id,
                     c->peer, cfg->hello_timeout);
        tdm_conn_close(c, "hello-timeout");
        return;
    }
    if (c->inflight > 0 || c->out_bytes > 0 || c->state == CONN_DRAINING) { /* busy, not idle */
        tdm_conn_deadline(c);
        return;
    }
    tdm_log_info("conn %llu (%s): idle for %u s (idle-timeout): closing", (unsigned long long)c->id, c->peer,
                 cfg->idle_timeout);
    tdm_conn_close(c, "idle-timeout");
}

static void on_deadline(uv_timer_t *t)
{
    tdm_conn *c = t->data;
    LOCKED(c, deadline_passed(c));
}

static void auth_delay_passed(tdm_conn *c)
{
    if (!c->auth_hold) return;
    c->auth_hold = 0;
    tdm_conn_send_error(c, c->refused_id, TANDEM__V1__ERROR_CODE__ERROR_UNAUTHENTICATED, "auth_token", -1,
                        "wrong or missing auth token");
    tdm_conn_end(c); /* the delay's hold: the drain goes on */
}

static void on_auth_delay(uv_timer_t *t)
{
    tdm_conn *c = t->data;
    LOCKED(c, auth_delay_passed(c));
}

void tdm_conn_refuse_auth(tdm_conn *c, uint64_t id)
{
    if (c->state == CONN_CLOSING || c->state == CONN_LINGER || c->auth_hold) return;
    c->refused_id = id;
    c->auth_hold = 1;
    tdm_conn_begin(c); /* the drain waits for the delayed reply */
    tdm_conn_drain(c, "wrong auth token");
    uv_timer_start(&c->linger, on_auth_delay, TDM_CONN_AUTH_DELAY_MS, 0);
}

void tdm_conn_deadline(tdm_conn *c)
{
    if (c->state == CONN_LINGER || c->state == CONN_CLOSING) return; /* the timer is LINGER's now */
    const tdm_config *cfg = c->srv->cfg;
    uint32_t s = c->authed ? cfg->idle_timeout : cfg->hello_timeout;
    if (s == 0) {
        uv_timer_stop(&c->linger);
        return;
    }
    uv_timer_start(&c->linger, on_deadline, 1000 * (uint64_t)s, 0);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    tdm_conn *c = req->data;
    if (status < 0 && status != UV_ECANCELED) LOCKED(c, tdm_conn_close(c, uv_strerror(status)));
}

/* Everything is answered and flushed: send FIN, then read and discard until the
 * client closes (see LINGER in conn.h). */
static void linger(tdm_conn *c)
{
    if (c->tls) { /* close_notify, written before the FIN */
        tdm_tls_close_notify(c->tls);
        tls_flush(c);
        if (c->state == CONN_CLOSING) return;
    }
    conn_set_state(c, CONN_LINGER);
    if (c->ring) ring_closed(c); /* every reply is in the reply ring: the FIN follows */
    c->shutdown_req.data = c;
    int rc = uv_shutdown(&c->shutdown_req, &c->h.stream, on_shutdown);
    if (rc != 0) {
        tdm_conn_close(c, uv_strerror(rc));
        return;
    }
    uv_timer_start(&c->linger, on_linger_timeout, TDM_CONN_LINGER_MS, 0);
    c->stage_pos = c->stage_end = 0; /* nothing read from now on is a request */
    read_start(c);
}

/* Pauses, resumes or finishes the connection after anything that changes what
 * is in flight or queued. */
static void update_flow(tdm_conn *c)
{
    const tdm_config *cfg = c->srv->cfg;
    switch (c->state) {
    case CONN_READ_LEN:
    case CONN_READ_BODY:
        if (c->inflight >= cfg->max_pipelined || output_over(c)) {
            read_stop(c);
            conn_set_state(c, CONN_PAUSED);
        }
        break;
    case CONN_PAUSED:
        if (!c->decoding && c->inflight < cfg->max_pipelined &&
            c->out_bytes + c->promised <= cfg->max_output_bytes / 2) {
            conn_set_state(c, c->have_len ? CONN_READ_BODY : CONN_READ_LEN);
            process_input(c); /* frames received before the pause come first */
            if (c->tls) tls_pump(c); /* then the records still waiting in the input BIO */
            if (c->ring) ring_pump(c); /* or the bytes waiting in the request ring */
            if (is_reading_state(c)) read_start(c);
        }
        break;
    case CONN_DRAINING:
        if (c->inflight == 0 && c->out_writes == 0) linger(c);
        break;
    case CONN_LINGER:
    case CONN_CLOSING:
    case CONN__STATE_COUNT:
        break;
    }
}

/* The pause half of update_flow, for use inside process_input (which must not
 * resume itself). */
static void pause_if_needed(tdm_conn *c)
{
    const tdm_config *cfg = c->srv->cfg;
    if (is_reading_state(c) && (c->inflight >= cfg->max_pipelined || output_over(c))) {
        read_stop(c);
        conn_set_state(c, CONN_PAUSED);
    }
}

void tdm_conn_drain(tdm_conn *c, const char *why)
{
    if (c->state == CONN_CLOSING || c->state == CONN_DRAINING || c->state == CONN_LINGER) return;
    tdm_srv_exclusive(c->srv);
    tdm_log_debug("conn %llu (%s): draining: %s", (unsigned long long)c->id, c->peer, why);
    read_stop(c);
    conn_set_state(c, CONN_DRAINING);
    update_flow(c);
}

void tdm_conn_begin(tdm_conn *c) { c->inflight++; }

void tdm_conn_end(tdm_conn *c)
{
    assert(c->inflight > 0);
    c->inflight--;
    if (c->state == CONN_CLOSING) {
        tdm_srv_exclusive(c->srv); /* the server's list of connections */
        maybe_free(c);
    } else {
        if (c->state == CONN_DRAINING) tdm_srv_exclusive(c->srv); /* its linger */
        update_flow(c);
    }
}

/* ---- output ---- */

/* A frame leaves the loop's write path (written, failed or dropped). */
static void ungate(tdm_conn *c)
{
    pthread_mutex_lock(&c->out_mu);
    c->out_gate--;
    pthread_mutex_unlock(&c->out_mu);
}

static void wrote(tdm_frame *o, int status)
{
    tdm_conn *c = o->conn;
    size_t n = o->len - o->off;
    c->out_bytes -= n;
    c->out_writes--;
    c->out_progress_ns = uv_hrtime();
    tdm_budget_release(&c->srv->mem, TDM_MEM_OUTPUT, n);
    free(o);
    ungate(c);
    if (status < 0) {
        if (status != UV_ECANCELED) tdm_conn_close(c, uv_strerror(status));
        return;
    }
    update_flow(c);
}

static void on_write(uv_write_t *req, int status)
{
    tdm_frame *o = (tdm_frame *)req;
    tdm_conn *c = o->conn;
    LOCKED(c, wrote(o, status));
}

tdm_frame *tdm_frame_new(size_t n, uint8_t **body)
{
    if (n > UINT32_MAX - 4) return NULL;
    tdm_frame *o = malloc(sizeof *o + 4 + n);
    if (!o) return NULL;
    o->conn = NULL;
    o->off = 0;
    o->gated = 0;
    o->len = 4 + n;
    o->data[0] = (uint8_t)(n >> 24);
    o->data[1] = (uint8_t)(n >> 16);
    o->data[2] = (uint8_t)(n >> 8);
    o->data[3] = (uint8_t)n;
    *body = o->data + 4;
    return o;
}

void tdm_frame_trim(tdm_frame *o, size_t n)
{
    o->len = 4 + n;
    o->data[0] = (uint8_t)(n >> 24);
    o->data[1] = (uint8_t)(n >> 16);
    o->data[2] = (uint8_t)(n >> 8);
    o->data[3] = (uint8_t)n;
}

tdm_frame *tdm_frame_pack(const Tandem__V1__Reply *reply, int *too_large)
{
    size_t n = tandem__v1__reply__get_packed_size(reply);
    *too_large = n > UINT32_MAX - 4; /* request validation keeps replies far below */
    if (*too_large) return NULL;
    uint8_t *body;
    tdm_frame *o = tdm_frame_new(n, &body);
    if (o) tandem__v1__reply__pack(reply, body);
    return o;
}

void tdm_frame_free(tdm_frame *f) { free(f); }

/* Queues o's bytes as they are (a plain frame, or TLS ciphertext; past what a direct
 * write took) and takes o. */
static void write_frame(tdm_conn *c, tdm_frame *o)
{
    o->conn = c;
    size_t n = o->len - o->off;
    if (!o->gated) { /* on the loop's write path from now until on_write: no direct write overtakes it */
        pthread_mutex_lock(&c->out_mu);
        c->out_gate++;
        pthread_mutex_unlock(&c->out_mu);
        o->gated = 1;
    }
    if (c->ring) { /* in line for the reply ring: copied below as far as it has room */
        o->next = NULL;
        if (c->ring_out_last) c->ring_out_last->next = o;
        else c->ring_out = o;
        c->ring_out_last = o;
    } else {
        uv_buf_t b = uv_buf_init((char *)o->data + o->off, (unsigned int)n);
        int rc = uv_write(&o->req, &c->h.stream, &b, 1, on_write);
        if (rc != 0) {
            free(o);
            ungate(c);
            tdm_conn_close(c, uv_strerror(rc));
            return;
        }
    }
    if (c->out_writes == 0) c->out_progress_ns = uv_hrtime(); /* the stall clock starts */
    c->out_bytes += n;
    c->out_writes++;
    tdm_budget_charge(&c->srv->mem, TDM_MEM_OUTPUT, n);
    if (c->ring && ring_flush(c) < 0) return; /* closed: the client broke its ring */
    if (c->out_bytes > c->srv->cfg->max_output_bytes_hard) {
        tdm_log_warn("conn %llu (%s): %llu bytes of replies unread (max-output-bytes-hard %llu): closing",
                     (unsigned long long)c->id, c->peer, (unsigned long long)c->out_bytes,
                     (unsigned long long)c->srv->cfg->max_output_bytes_hard);
        tdm_conn_close(c, "max-output-bytes-hard");
        return;
    }
    pause_if_needed(c);
}

/* Writes the ciphertext OpenSSL has produced (handshake messages, alerts, sealed frames). */
static void tls_flush(tdm_conn *c)
{
    size_t n = tdm_tls_pending(c->tls);
    if (n == 0 || c->state == CONN_CLOSING) return;
    tdm_frame *o = malloc(sizeof *o + n);
    if (!o) {
        tdm_conn_close(c, "out of memory for TLS output");
        return;
    }
    o->off = 0;
    o->gated = 0;
    o->len = tdm_tls_take(c->tls, o->data, n);
    write_frame(c, o);
}

void tdm_conn_drop_frame(tdm_conn *c, tdm_frame *o)
{
    if (!o) return;
    tdm_srv_exclusive(c->srv);
    if (o->gated) ungate(c);
    free(o);
}

void tdm_conn_sent_direct(tdm_conn *c)
{
    (void)c;
    tdm_metrics_reply();
}

/* A direct reply into the reply ring, under out_mu: 1 when it fit whole. */
static int ring_direct(tdm_conn *c, tdm_frame *o)
{
    tdm_ring_header *h = c->ring;
    uint32_t cap = c->ring_cap;
    uint64_t used = c->ring_rep_head - atomic_load_explicit(&h->rep_tail, memory_order_acquire);
    if (used > cap || o->len > cap - used) return 0; /* no room (or a broken ring): the loop's */
    tdm_ring_copy_in(tdm_ring_rep_data(h, cap), cap, c->ring_rep_head, o->data, o->len);
    c->ring_rep_head += o->len;
    atomic_store_explicit(&h->rep_head, c->ring_rep_head, memory_order_release);
    return 1;
}

static void ring_wake(tdm_ring_header *h, uint32_t why);

int tdm_conn_reply_direct(tdm_conn *c, tdm_frame *o)
{
    int done = 0;
    pthread_mutex_lock(&c->out_mu);
    if (c->ring_direct) {
        /* the mapping stays until the connection's free, which waits for this reply's job */
        tdm_ring_header *h = c->ring;
        if (c->out_gate == 0) done = ring_direct(c, o);
        if (!done) {
            c->out_gate++;
            o->gated = 1;
        }
        pthread_mutex_unlock(&c->out_mu);
        if (done) ring_wake(h, TDM_RING_WAIT_DATA);
        return done;
    }
    if (c->out_fd >= 0) {
        if (c->out_gate == 0) {
            ssize_t n = send(c->out_fd, o->data, o->len, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n == (ssize_t)o->len) done = 1;
            else if (n > 0) o->off = (size_t)n; /* the socket is full: the loop writes the rest */
            /* an error (the peer gone) is the loop's to meet when it writes */
        }
        if (!done) { /* the loop's from here: what comes later waits behind it */
            c->out_gate++;
            o->gated = 1;
        }
    }
    pthread_mutex_unlock(&c->out_mu);
    return done;
}

void tdm_conn_send_frame(tdm_conn *c, tdm_frame *o)
{
    tdm_srv_exclusive(c->srv); /* the budget's output, the counters, a close (io.h) */
    if (c->state == CONN_CLOSING || c->state == CONN_LINGER) { /* nobody waits for it */
        tdm_conn_drop_frame(c, o);
        return;
    }
    tdm_metrics_reply();
    if (!c->tls) {
        write_frame(c, o);
        return;
    }
    if (!tdm_tls_ready(c->tls)) { /* an answer at accept (ERROR_BUSY): no session to carry it yet */
        tdm_log_debug("conn %llu: reply dropped: the TLS handshake is not done", (unsigned long long)c->id);
        tdm_conn_drop_frame(c, o);
        return;
    }
    size_t cap = tdm_tls_seal_bound(c->tls, o->len);
    tdm_frame *sealed = malloc(sizeof *sealed + cap);
    if (sealed) sealed->off = sealed->gated = 0;
    int rc = sealed ? tdm_tls_seal(c->tls, o->data, o->len, sealed->data, cap, &sealed->len) : TDM_ENOMEM;
    free(o);
    if (rc != 0) {
        free(sealed);
        tdm_log_error("conn %llu (%s): cannot encrypt a reply (out of memory?): closing", (unsigned long long)c->id,
                      c->peer);
        tdm_conn_close(c, "TLS seal failed");
        return;
    }
    write_frame(c, sealed);
}

void tdm_conn_check_stall(tdm_conn *c, uint64_t now_ns)
{
    uint32_t t = c->srv->cfg->output_stall_timeout;
    if (t == 0 || c->out_writes == 0 || c->state == CONN_CLOSING) return;
    /* bytes taken count, not only whole replies: a slow reader of one large reply is not stalled */
    size_t q = c->ring ? (size_t)c->out_bytes : uv_stream_get_write_queue_size(&c->h.stream);
    if (q < c->out_queue_seen) c->out_progress_ns = now_ns;
    c->out_queue_seen = q;
    if (now_ns - c->out_progress_ns < (uint64_t)t * 1000000000u) return;
    tdm_log_warn("conn %llu (%s): %llu bytes of replies waiting, none taken for %u s (output-stall-timeout): closing",
                 (unsigned long long)c->id, c->peer, (unsigned long long)c->out_bytes, t);
    tdm_conn_close(c, "output-stall-timeout");
}

void tdm_conn_send(tdm_conn *c, const Tandem__V1__Reply *reply)
{
    tdm_srv_exclusive(c->srv);
    if (c->state == CONN_CLOSING || c->state == CONN_LINGER) return; /* nobody waits for it */
    int too_large;
    tdm_frame *o = tdm_frame_pack(reply, &too_large);
    if (o) {
        tdm_conn_send_frame(c, o);
    } else if (too_large) {
        tdm_conn_send_error(c, reply->id, TANDEM__V1__ERROR_CODE__ERROR_INTERNAL, "", -1,
                            "the reply is too large to frame");
    } else {
        tdm_log_error("conn %llu: out of memory for a reply", (unsigned long long)c->id);
        tdm_conn_close(c, "out of memory for a reply");
    }
}

/* How loud a refused request is (issue 14, point 5): protocol errors (undecodable
 * frames, a frame before Hello, an unknown version) and refusals for limits or load
 * at warn; requests refused for what they ask (unknown ids, bad geometry) at info;
 * wrong tokens and over-capacity accepts at debug here, since request_hello.c and
 * tdm_conn_accept log those themselves. */
static tdm_log_level refusal_level(Tandem__V1__ErrorCode code, const char *field)
{
    switch (code) {
    case TANDEM__V1__ERROR_CODE__ERROR_UNAUTHENTICATED:
        return strcmp(field, "auth_token") ? TDM_LOG_WARN : TDM_LOG_DEBUG;
    case TANDEM__V1__ERROR_CODE__ERROR_BUSY: return strcmp(field, "connections") ? TDM_LOG_WARN : TDM_LOG_DEBUG;
    case TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST:
        return !strcmp(field, "frame") || !strcmp(field, "body") ? TDM_LOG_WARN : TDM_LOG_INFO;
    case TANDEM__V1__ERROR_CODE__ERROR_UNSUPPORTED_VERSION:
    case TANDEM__V1__ERROR_CODE__ERROR_LIMIT:
    case TANDEM__V1__ERROR_CODE__ERROR_NO_MEMORY:
    case TANDEM__V1__ERROR_CODE__ERROR_STORAGE:
    case TANDEM__V1__ERROR_CODE__ERROR_INTERNAL: return TDM_LOG_WARN;
    default: return TDM_LOG_INFO;
    }
}

/* One line per refused request, at its level, one a second at most per level (with
 * a count of those held back): a client sending garbage cannot fill the log. */
static void log_refusal(tdm_conn *c, uint64_t id, Tandem__V1__ErrorCode code, const char *field, int64_t index,
                        const char *msg)
{
    static tdm_log_limit limits[TDM_LOG_DEBUG + 1];
    tdm_log_level level = refusal_level(code, field);
    if (!tdm_log_enabled(level)) return;
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(&tandem__v1__error_code__descriptor, (int)code);
    char shown[600];
    tdm_log_sanitize(msg, strlen(msg), shown, sizeof shown); /* it may quote what the client sent */
    unsigned long long held = 0;
    if (level < TDM_LOG_DEBUG && !tdm_log_limit_pass(&limits[level], uv_hrtime(), &held)) return;
    tdm_log(level, "conn %llu (%s): request %llu refused: %s (%s[%lld]): %s%s%.0llu%s", (unsigned long long)c->id,
            c->peer, (unsigned long long)id, v ? v->name : "?", field, (long long)index, shown,
            held ? " (and " : "", held, held ? " more refusals at this level since the last such line)" : "");
}

void tdm_conn_send_error(tdm_conn *c, uint64_t id, Tandem__V1__ErrorCode code, const char *field, int64_t index,
                         const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tdm_srv_exclusive(c->srv); /* the refusal's log limits, the budget's output (io.h) */
    c->srv->counters.errors++;
    tdm_metrics_error((int)code);
    log_refusal(c, id, code, field, index, msg);
    Tandem__V1__Error e = TANDEM__V1__ERROR__INIT;
    e.code = code;
    e.message = msg;
    e.field = (char *)field;
    e.index = index;
    Tandem__V1__Reply r = TANDEM__V1__REPLY__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REPLY__BODY_ERROR;
    r.error = &e;
    tdm_conn_send(c, &r);
}

/* ---- input ---- */

/* Where the next plaintext bytes go: the large frame's buffer or the staging buffer. */
static void plain_space(tdm_conn *c, uv_buf_t *buf)
{
    if (c->state == CONN_LINGER) c->stage_pos = c->stage_end = 0; /* discarding */
    if (c->body) { /* a large frame: straight into its buffer */
        if (c->body_got == c->body_cap) {
            size_t cap = c->body_cap * 2 < c->body_len ? c->body_cap * 2 : c->body_len;
            if (!input_room(c, cap - c->body_cap)) {
                c->mem_refused = 1;
                *buf = uv_buf_init(NULL, 0); /* on_read gets UV_ENOBUFS and refuses the frame */
                return;
            }
            uint8_t *b = body_grow(c->body, c->body_cap, cap);
            if (!b) {
                *buf = uv_buf_init(NULL, 0); /* on_read gets UV_ENOBUFS and closes */
                return;
            }
            input_charge(c, cap - c->body_cap);
            c->body = b;
            c->body_cap = cap;
        }
        *buf = uv_buf_init((char *)c->body + c->body_got, (unsigned int)(c->body_cap - c->body_got));
        return;
    }
    if (!c->stage) {
        if (!(c->stage = malloc(STAGE_CAP))) {
            *buf = uv_buf_init(NULL, 0); /* on_read gets UV_ENOBUFS */
            return;
        }
        input_charge(c, STAGE_CAP); /* counted, never refused: max-connections x 64 KiB at most */
    }
    if (c->stage_pos > 0) { /* keep the partial frame at the front */
        memmove(c->stage, c->stage + c->stage_pos, c->stage_end - c->stage_pos);
        c->stage_end -= c->stage_pos;
        c->stage_pos = 0;
    }
    *buf = uv_buf_init((char *)c->stage + c->stage_end, (unsigned int)(STAGE_CAP - c->stage_end));
}

/* Ciphertext read by any TLS connection: libuv calls on_read (with 0 bytes when nothing
 * came) before it asks for the next buffer, and on_read hands the bytes to the session at
 * once, so one buffer serves the whole loop (its io->tls_buf) and an idle TLS connection
 * holds none. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    tdm_conn *c = h->data;
    if (c->tls) {
        *buf = uv_buf_init((char *)c->io->tls_buf, TDM_TLS_READ_CAP);
        return;
    }
    if (c->ring) { /* doorbells only */
        *buf = uv_buf_init((char *)c->bell, sizeof c->bell);
        return;
    }
    /* the next bytes of the staging buffer are the connection's alone: shared (io.h); its first
       buffer and a large frame's are charged to the budget, exclusive */
    tdm_server *srv = c->srv;
    tdm_srv_lock_shared(srv);
    if (!c->stage || c->body || c->state == CONN_LINGER) tdm_srv_exclusive(srv);
    plain_space(c, buf);
    tdm_srv_unlock(srv);
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void broken_frame(tdm_conn *c, uint32_t len)
{
    if (len == 0)
        tdm_conn_send_error(c, 0, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST, "frame", -1,
                            "frame length 0: a frame holds one Request of 1 to %u bytes", c->srv->cfg->max_frame_bytes);
    else
        tdm_conn_send_error(c, 0, TANDEM__V1__ERROR_CODE__ERROR_LIMIT, "frame", -1,
                            "frame length %u is over max_frame_bytes %u", len, c->srv->cfg->max_frame_bytes);
    tdm_log_debug("conn %llu (%s): broken frame (length %u); closing", (unsigned long long)c->id, c->peer, len);
    tdm_conn_drain(c, "broken frame");
}

/* A large frame does not fit max-input-bytes or max-memory: ERROR_BUSY, then the close
 * (the rest of the frame is read and dropped while the connection lingers). */
static void refuse_frame(tdm_conn *c)
{
    tdm_server *s = c->srv;
    char held[256];
    s->mem.refused++;
    uint32_t len = c->body_len;
    body_free(c);
    c->have_len = 0;
    c->mem_refused = 0;
    tdm_conn_send_error(c, 0, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "frame", -1,
                        "no room for a frame of %u bytes: partial frames hold %llu bytes (max-input-bytes %llu); "
                        "%s; retry later",
                        len, (unsigned long long)s->mem.used[TDM_MEM_INPUT],
                        (unsigned long long)s->cfg->max_input_bytes, tdm_budget_describe(&s->mem, held, sizeof held));
    tdm_log_warn("conn %llu (%s): a %u-byte frame refused: partial frames hold %llu bytes (max-input-bytes %llu), "
                 "%llu bytes held in all (max-memory %llu)",
                 (unsigned long long)c->id, c->peer, len, (unsigned long long)s->mem.used[TDM_MEM_INPUT],
                 (unsigned long long)s->cfg->max_input_bytes, (unsigned long long)s->mem.total,
                 (unsigned long long)s->mem.max);
    tdm_conn_drain(c, "no memory for a frame");
}

/* Handles one request: the frame's bytes, decoded here, or (frame NULL) req and why, decoded on
 * libuv's pool (decode_apart); frame_ns: when the frame was complete, for its metrics */
static void handle(tdm_conn *c, const uint8_t *frame, size_t len, Tandem__V1__Request *req, const char *why,
                   uint64_t frame_ns)
{
    if (c->authed) tdm_conn_deadline(c); /* a request: not idle (before Hello, the hello deadline stands) */
    /* jobs whose replies went out from a pooler thread (tdm_conn_reply_direct) are accounted
       before any request their clients may have sent on seeing them (stats, in-flight limits);
       held shared or exclusive alike, as the sink's own callback (io.h) */
    if (c->io->sink) tdm_query_sink_collect(c->io->sink);
    tdm_metrics_mark outer = tdm_metrics_enter_frame(frame_ns);
    if (frame) tdm_request_handle(c, frame, len);
    else tdm_request_dispatch(c, req, why);
    tdm_metrics_leave(outer);
    if (c->arena) tdm_arena_reset(c->arena);
}

/* ---- large frames decoded on libuv's pool ---- */

/* libuv's pool: the frame into c->arena, which nothing else touches meanwhile (the connection
 * reads and handles nothing else until decode_after) */
static void decode_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    tdm_conn *c = w->data;
    c->dec_req = tdm_decode_request(c->arena, c->dec_frame, c->dec_len, &c->dec_why);
}

/* The connection's loop: the decoded request handled as handle() would have (unless the
 * connection closed meanwhile), its buffer given back, then reading resumes (update_flow) */
static void decode_after(uv_work_t *w, int status)
{
    (void)status;
    tdm_conn *c = w->data;
    tdm_server *srv = c->srv;
    tdm_srv_lock(srv);
    c->decoding = 0;
    if (c->state != CONN_CLOSING) handle(c, NULL, 0, c->dec_req, c->dec_why, c->dec_ns);
    body_release(c->dec_frame, c->dec_cap);
    input_release(c, c->dec_cap);
    c->dec_frame = NULL;
    c->dec_req = NULL;
    if (c->shutdown_pending) {
        c->shutdown_pending = 0;
        tdm_conn_shutdown(c); /* the frames staged behind it are answered BUSY */
    }
    tdm_conn_end(c); /* the decode's hold: may free c */
    tdm_srv_unlock(srv);
}

/* A complete large frame (its own buffer: frame, cap) goes to libuv's pool to be decoded; the
 * connection pauses until it is handled (server's lock held exclusive: a large frame's reads take
 * it). 0, or -1 when it must be handled here (no arena). */
static int decode_apart(tdm_conn *c, uint8_t *frame, size_t cap)
{
    if (!c->arena && !(c->arena = tdm_arena_new())) return -1;
    c->decoding = 1;
    c->dec_frame = frame;
    c->dec_len = c->body_len;
    c->dec_cap = cap;
    c->dec_req = NULL;
    c->dec_why = NULL;
    c->dec_ns = uv_hrtime();
    tdm_conn_begin(c);
    read_stop(c);
    conn_set_state(c, CONN_PAUSED);
    c->decode_work.data = c;
    if (uv_queue_work(c->io->loop, &c->decode_work, decode_work, decode_after) != 0) {
        /* cannot happen: uv_queue_work fails only without a callback */
        c->decoding = 0;
        c->dec_frame = NULL;
        conn_set_state(c, CONN_READ_LEN);
        tdm_conn_end(c);
        return -1;
    }
    return 0;
}

/* Handles every complete frame in the staging buffer while the state allows. */
static void process_input(tdm_conn *c)
{
    while (is_reading_state(c) && !c->body) {
        size_t avail = c->stage_end - c->stage_pos;
        if (!c->have_len) {
            if (avail < 4) break;
            uint32_t len = be32(c->stage + c->stage_pos);
            if (len == 0 || len > c->srv->cfg->max_frame_bytes) {
                tdm_srv_exclusive(c->srv);
                broken_frame(c, len);
                return;
            }
            if (!c->authed && len > STAGE_CAP) { /* before Hello, a frame fits the staging buffer */
                tdm_srv_exclusive(c->srv);
                tdm_conn_send_error(c, 0, TANDEM__V1__ERROR_CODE__ERROR_UNAUTHENTICATED, "frame", -1,
                                    "frame length %u before Hello: until then a frame holds at most %u bytes", len,
                                    (unsigned)STAGE_CAP);
                tdm_log_debug("conn %llu (%s): a %u-byte frame before Hello; closing", (unsigned long long)c->id,
                             c->peer, len);
                tdm_conn_drain(c, "large frame before Hello");
                return;
            }
            c->stage_pos += 4;
            avail -= 4;
            c->have_len = 1;
            c->body_len = len;
            conn_set_state(c, CONN_READ_BODY);
        }
        if (avail >= c->body_len) {
            const uint8_t *frame = c->stage + c->stage_pos;
            c->stage_pos += c->body_len;
            c->have_len = 0;
            conn_set_state(c, CONN_READ_LEN);
            handle(c, frame, c->body_len, NULL, NULL, uv_hrtime());
            pause_if_needed(c);
            continue;
        }
        if (c->body_len > STAGE_CAP) { /* cannot fit: give the frame its own buffer (length checked above) */
            tdm_srv_exclusive(c->srv); /* charged to the budget */
            size_t cap = 4 * (size_t)STAGE_CAP;
            if (cap > c->body_len) cap = c->body_len;
            if (!input_room(c, cap)) {
                refuse_frame(c);
                return;
            }
            c->body_cap = cap;
            c->body = body_alloc(c->body_cap);
            if (c->body) input_charge(c, c->body_cap);
            if (!c->body) {
                c->body_cap = 0;
                tdm_conn_send_error(c, 0, TANDEM__V1__ERROR_CODE__ERROR_NO_MEMORY, "frame", -1,
                                    "out of memory for a frame of %u bytes", c->body_len);
                tdm_conn_drain(c, "out of memory for a frame");
                return;
            }
            memcpy(c->body, c->stage + c->stage_pos, avail);
            c->body_got = avail;
            c->stage_pos = c->stage_end = 0;
        }
        break; /* wait for more bytes */
    }
}

/* The peer ended its stream (EOF, or TLS close_notify). */
static void on_peer_end(tdm_conn *c)
{
    int mid_frame = c->have_len || c->body || c->stage_end > c->stage_pos;
    /* a client's own close: info once it said Hello, debug before (probes, health checks) */
    tdm_log(c->authed ? TDM_LOG_INFO : TDM_LOG_DEBUG, "conn %llu (%s): the client closed the connection%s",
            (unsigned long long)c->id, c->peer, mid_frame ? " inside a frame" : "");
    if (!mid_frame) tdm_conn_drain(c, "peer closed");
    else tdm_conn_close(c, "peer closed inside a frame");
}

/* n plaintext bytes have landed where plain_space said. */
static void on_plain(tdm_conn *c, size_t nread)
{
    if (c->state != CONN_READ_LEN && c->state != CONN_READ_BODY) return; /* stopped meanwhile */
    if (c->body) {
        c->body_got += (size_t)nread;
        if (c->body_got < c->body_len) return;
        uint8_t *frame = c->body;
        size_t cap = c->body_cap;
        c->body = NULL;
        c->body_cap = c->body_got = 0;
        c->have_len = 0;
        conn_set_state(c, CONN_READ_LEN);
        if (c->body_len >= TDM_CONN_DECODE_APART && tdm__work_apart() && decode_apart(c, frame, cap) == 0)
            return; /* paused until decode_after */
        handle(c, frame, c->body_len, NULL, NULL, uv_hrtime());
        body_release(frame, cap);
        input_release(c, cap);
        pause_if_needed(c);
    } else {
        c->stage_end += (size_t)nread;
    }
    process_input(c);
}

/* A plain client on a TLS port (nginx answers plain HTTP on its HTTPS port the same way):
 * an Error in the clear, which any Tandem client can read, instead of a TLS alert. */
static void tls_refuse_plain(tdm_conn *c)
{
    char msg[160];
    snprintf(msg, sizeof msg, "this port speaks TLS: connect to tls://HOST:PORT");
    Tandem__V1__Error e = TANDEM__V1__ERROR__INIT;
    e.code = TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST;
    e.message = msg;
    e.field = "tls";
    e.index = -1;
    Tandem__V1__Reply r = TANDEM__V1__REPLY__INIT;
    r.body_case = TANDEM__V1__REPLY__BODY_ERROR;
    r.error = &e;
    int too_large;
    tdm_frame *o = tdm_frame_pack(&r, &too_large);
    if (o) write_frame(c, o); /* not sealed */
    c->srv->counters.errors++;
}

/* plain_space for a pump (TLS records, the request ring), holding the server's lock: a new or large
 * frame's buffer is charged to the budget, exclusive. 0 with the buffer, or -1 when there is none:
 * the frame refused (over the memory budget: BUSY, as on a plain socket) or the connection closed. */
static int pump_space(tdm_conn *c, uv_buf_t *b)
{
    if (!c->stage || c->body) tdm_srv_exclusive(c->srv);
    plain_space(c, b);
    if (b->base && b->len > 0) return 0;
    if (c->mem_refused) refuse_frame(c);
    else tdm_conn_close(c, "out of memory for input");
    return -1;
}

/* Decrypts what the input BIO holds into the framing while the state lets it read,
 * then writes whatever OpenSSL has to say (handshake messages, an alert). */
static void tls_pump(tdm_conn *c)
{
    while (is_reading_state(c)) {
        uv_buf_t b;
        if (pump_space(c, &b)) return;
        long n = tdm_tls_read(c->tls, b.base, b.len);
        if (n > 0) {
            on_plain(c, (size_t)n);
            continue;
        }
        if (n == TDM_TLS_CLOSED) {
            on_peer_end(c);
        } else if (n == TDM_TLS_FAILED) {
            tdm_tls_warn_failure((unsigned long long)c->id, c->peer, !tdm_tls_ready(c->tls), tdm_tls_error(c->tls));
            if (tdm_tls_peer_is_plain(c->tls)) tls_refuse_plain(c);
            else tls_flush(c); /* OpenSSL's alert, so that the client learns why */
            tdm_conn_drain(c, "TLS failure");
            return;
        }
        break;
    }
    tls_flush(c);
}

static void read_done(tdm_conn *c, ssize_t nread, const uv_buf_t *buf)
{
    if (c->state == CONN_LINGER) {
        if (nread < 0) tdm_conn_close(c, nread == UV_EOF ? "closed" : uv_strerror((int)nread));
        return; /* discarded */
    }
    if (nread == UV_ENOBUFS && c->mem_refused) { /* plain_space found no room in the memory budget */
        refuse_frame(c);
        return;
    }
    if (nread < 0) {
        if (nread == UV_EOF) {
            if (c->ring) ring_pump(c); /* what the client wrote before it closed */
            if (c->state != CONN_CLOSING) on_peer_end(c);
            return;
        }
        tdm_log(c->authed ? TDM_LOG_INFO : TDM_LOG_DEBUG, "conn %llu (%s): read error, closing: %s",
                (unsigned long long)c->id, c->peer, uv_strerror((int)nread));
        tdm_conn_close(c, uv_strerror((int)nread));
        return;
    }
    if (c->ring) { /* a doorbell: the request ring has bytes, or the reply ring room */
        if (c->ring_parked) ring_unpark(c);
        c->ring_seen_ns = uv_hrtime();
        ring_pump(c);
        return;
    }
    if (!c->tls) {
        on_plain(c, (size_t)nread);
        return;
    }
    if (!is_reading_state(c)) return; /* stopped meanwhile */
    if (tdm_tls_feed(c->tls, buf->base, (size_t)nread) != 0) {
        tdm_conn_close(c, "out of memory for TLS input");
        return;
    }
    tls_pump(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    tdm_conn *c = s->data;
    if (nread == 0) return;
    c->io->reads++; /* its loop's own (tdm_io_run) */
    if (c->srv->trace_reads) c->read_ns = uv_hrtime(); /* the connection's loop's alone */
    /* a plain connection's bytes are framed and its queries handled holding the lock shared, so
       that the loops do that at once (io.h); anything else exclusive, and whatever on the way
       needs more makes it so */
    tdm_server *srv = c->srv;
    tdm_query_sink *sink = c->io->sink;
    tdm_srv_lock_shared(srv);
    if (nread < 0 || c->tls || c->state == CONN_LINGER || c->body) tdm_srv_exclusive(srv);
    read_done(c, nread, buf);
    tdm_srv_unlock(srv);
    /* the loop's answers from the express ring, between its connections' reads */
    if (sink) tdm_query_sink_poll(sink);
}

void tdm_conn_shutdown(tdm_conn *c)
{
    tdm_srv_exclusive(c->srv);
    if (c->state == CONN_CLOSING || c->state == CONN_DRAINING || c->state == CONN_LINGER) return;
    if (c->decoding) { /* c->arena is the pool's until decode_after, which shuts it down then */
        c->shutdown_pending = 1;
        return;
    }
    read_stop(c);
    /* complete frames already received get an answer rather than silence */
    while (!c->body && c->state != CONN_CLOSING) {
        size_t avail = c->stage_end - c->stage_pos;
        if (!c->have_len) {
            if (avail < 4) break;
            uint32_t len = be32(c->stage + c->stage_pos);
            if (len == 0 || len > c->srv->cfg->max_frame_bytes) break;
            c->stage_pos += 4;
            avail -= 4;
            c->have_len = 1;
            c->body_len = len;
        }
        if (avail < c->body_len) break;
        const uint8_t *frame = c->stage + c->stage_pos;
        c->stage_pos += c->body_len;
        c->have_len = 0;
        tdm_request_refuse(c, frame, c->body_len);
        if (c->arena) tdm_arena_reset(c->arena);
    }
    tdm_conn_drain(c, "server shutting down");
}

/* ---- shared-memory rings (conn.h "Rings", proto/shm_ring.h) ---- */

/* The client sleeps for `why` (TDM_RING_WAIT_*): its futex word moves and it is woken. After
 * the bytes it waits for were published. */
static void ring_wake(tdm_ring_header *h, uint32_t why)
{
    atomic_thread_fence(memory_order_seq_cst); /* the publication before the look at its flag */
    if (!(atomic_load_explicit(&h->cli_sleep, memory_order_relaxed) & why)) return;
    atomic_fetch_add_explicit(&h->cli_seq, 1, memory_order_relaxed);
    syscall(SYS_futex, &h->cli_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void ring_broken(tdm_conn *c, const char *why)
{
    tdm_log_info("conn %llu (%s): %s: closing", (unsigned long long)c->id, c->peer, why);
    tdm_conn_close(c, why);
}

/* Copies what the client has written into the request ring into the framing, while the state
 * lets the connection read (the loop, holding the server's lock): at most a ring's worth a call,
 * as a socket's read takes one buffer, so that a client that keeps writing cannot hold the loop
 * from its other connections (the next poll or doorbell takes the rest). */
static void ring_pump(tdm_conn *c)
{
    tdm_ring_header *h = c->ring;
    uint32_t cap = c->ring_cap;
    const uint8_t *data = tdm_ring_req_data(h);
    int took = 0;
    uint64_t budget = cap;
    while (budget > 0 && is_reading_state(c)) {
        uint64_t avail = atomic_load_explicit(&h->req_head, memory_order_acquire) - c->ring_req_tail;
        if (avail == 0) break;
        if (avail > cap) {
            ring_broken(c, "the request ring's head is out of bounds");
            return;
        }
        uv_buf_t b;
        if (pump_space(c, &b)) return;
        size_t n = avail < b.len ? (size_t)avail : b.len;
        if (n > budget) n = (size_t)budget;
        budget -= n;
        tdm_ring_copy_out(data, cap, c->ring_req_tail, (uint8_t *)b.base, n); /* copied before anything reads it */
        c->ring_req_tail += n;
        atomic_store_explicit(&h->req_tail, c->ring_req_tail, memory_order_release);
        took = 1;
        c->io->reads++;
        on_plain(c, n);
    }
    if (took && c->state != CONN_CLOSING) ring_wake(h, TDM_RING_WAIT_SPACE);
}

/* Copies the frames waiting in ring_out into the reply ring as far as it has room, oldest first
 * (the loop, holding the server's lock exclusive); a frame copied whole counts as written, and
 * update_flow is the caller's. 0, or -1 when the connection was closed (the client's index is out
 * of bounds). */
static int ring_flush(tdm_conn *c)
{
    tdm_ring_header *h = c->ring;
    uint32_t cap = c->ring_cap;
    uint8_t *data = tdm_ring_rep_data(h, cap);
    tdm_frame *done = NULL, **done_last = &done;
    size_t moved = 0;
    pthread_mutex_lock(&c->out_mu); /* the reply ring's one writer at a time, with the reply threads */
    uint64_t used = c->ring_rep_head - atomic_load_explicit(&h->rep_tail, memory_order_acquire);
    int bad = used > cap;
    if (!bad) {
        size_t room = cap - (size_t)used;
        while (c->ring_out && room > 0) {
            tdm_frame *o = c->ring_out;
            size_t n = o->len - o->off < room ? o->len - o->off : room;
            tdm_ring_copy_in(data, cap, c->ring_rep_head, o->data + o->off, n);
            c->ring_rep_head += n;
            o->off += n;
            room -= n;
            moved += n;
            if (o->off < o->len) break;
            if (!(c->ring_out = o->next)) c->ring_out_last = NULL;
            o->next = NULL;
            *done_last = o;
            done_last = &o->next;
        }
        if (moved) atomic_store_explicit(&h->rep_head, c->ring_rep_head, memory_order_release);
        atomic_store_explicit(&h->srv_space, c->ring_out != NULL, memory_order_relaxed);
    }
    pthread_mutex_unlock(&c->out_mu);
    if (moved) {
        ring_wake(h, TDM_RING_WAIT_DATA);
        c->out_bytes -= moved;
        tdm_budget_release(&c->srv->mem, TDM_MEM_OUTPUT, moved);
        c->out_progress_ns = uv_hrtime();
    }
    while (done) {
        tdm_frame *next = done->next;
        c->out_writes--;
        free(done);
        ungate(c);
        done = next;
    }
    if (bad) {
        ring_broken(c, "the reply ring's tail is out of bounds");
        return -1;
    }
    return 0;
}

/* The client learns that the connection is closing (its replies are all in the ring). */
static void ring_closed(tdm_conn *c)
{
    atomic_store_explicit(&c->ring->closed, 1, memory_order_release);
    ring_wake(c->ring, TDM_RING_WAIT_DATA | TDM_RING_WAIT_SPACE);
}

/* The loop's two lists of ring connections: polled each turn, or parked. */
static void ring_list_remove(tdm_conn *c)
{
    tdm_conn **head = c->ring_parked ? &c->io->rings_parked : &c->io->rings;
    if (c->ring_parked) __atomic_sub_fetch(&c->srv->n_rings_parked, 1, __ATOMIC_RELAXED);
    if (c->ring_prev) c->ring_prev->ring_next = c->ring_next;
    else *head = c->ring_next;
    if (c->ring_next) c->ring_next->ring_prev = c->ring_prev;
    c->ring_prev = c->ring_next = NULL;
}

static void ring_list_add(tdm_conn *c, int parked)
{
    tdm_conn **head = parked ? &c->io->rings_parked : &c->io->rings;
    c->ring_parked = parked;
    if (parked) __atomic_add_fetch(&c->srv->n_rings_parked, 1, __ATOMIC_RELAXED);
    c->ring_prev = NULL;
    c->ring_next = *head;
    if (*head) (*head)->ring_prev = c;
    *head = c;
}

/* A doorbell on a parked ring's socket: polled again from the loop's next turn on (the loop is
 * awake: it runs this). */
static void ring_unpark(tdm_conn *c)
{
    ring_list_remove(c);
    ring_list_add(c, 0);
    atomic_store_explicit(&c->ring->srv_sleep, 0, memory_order_relaxed);
}

/* At the close: off the loop's list, its waiting frames dropped, the client told. */
static void ring_detach(tdm_conn *c)
{
    ring_list_remove(c);
    c->srv->n_rings--;
    while (c->ring_out) {
        tdm_frame *o = c->ring_out;
        size_t n = o->len - o->off;
        c->ring_out = o->next;
        c->out_bytes -= n;
        c->out_writes--;
        tdm_budget_release(&c->srv->mem, TDM_MEM_OUTPUT, n);
        free(o);
        ungate(c);
    }
    c->ring_out_last = NULL;
    ring_closed(c);
}

/* The ring's size for `want` bytes: 256 KiB for 0, a power of two within [64 KiB, max]. */
static uint32_t ring_cap_for(uint32_t want, uint32_t max)
{
    uint32_t cap = want ? want : 256u << 10;
    if (cap > max) cap = max;
    uint32_t p = TDM_RING_MIN_BYTES;
    while (p < cap && p <= max / 2) p *= 2;
    return p;
}

void tdm_conn_ring_open(tdm_conn *c, uint64_t id, uint32_t want)
{
    tdm_server *s = c->srv;
    uint32_t max = s->cfg->max_ring_bytes;
    tdm_srv_exclusive(s);
    const char *no = NULL;
    if (max == 0) no = "this server offers no shared-memory rings (max-ring-bytes 0)";
    else if (!c->is_unix || c->tls) no = "shared-memory rings are for clients on the server's Unix socket";
    else if (c->ring) no = "this connection's rings are open already";
    else if (c->out_writes || c->stage_end != c->stage_pos || c->have_len || c->body || !is_reading_state(c))
        /* (a query's reply a pooler thread wrote may leave its job to be let go after the client saw it:
           what must not be is a byte behind the reply on the socket, queued or sent after it) */
        no = "RingOpen must be the only request in flight, with nothing sent after it until its reply";
    if (no) {
        tdm_conn_send_error(c, id, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST, "ring_open", -1, "%s", no);
        return;
    }
    uint32_t cap = ring_cap_for(want, max);
    size_t bytes = tdm_ring_map_bytes(cap);
    /* (charged only here, under the exclusive lock; a close may release meanwhile: a stale read is the safe side) */
    uint64_t ring_used = __atomic_load_n(&s->mem.used[TDM_MEM_RING], __ATOMIC_RELAXED);
    uint64_t ring_max = s->cfg->max_ring_memory;
    if (ring_used > ring_max || bytes > ring_max - ring_used || !tdm_budget_room(&s->mem, bytes)) {
        char held[256];
        tdm_conn_send_error(c, id, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "ring_open", -1,
                            "no room for rings of %u bytes (max-ring-memory %llu, max-memory): %s; retry later",
                            cap, (unsigned long long)ring_max, tdm_budget_describe(&s->mem, held, sizeof held));
        return;
    }
    int mfd = memfd_create("tandem-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    void *map = MAP_FAILED;
    const char *failed = NULL;
    if (mfd < 0) failed = "memfd_create";
    else if (ftruncate(mfd, (off_t)bytes) != 0) failed = "ftruncate";
    /* the client can neither shrink it under the server's feet (a SIGBUS here) nor grow it */
    else if (fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) failed = "sealing";
    else if ((map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0)) == MAP_FAILED) failed = "mmap";
    if (failed) {
        int e = errno;
        if (mfd >= 0) close(mfd);
        tdm_conn_send_error(c, id, TANDEM__V1__ERROR_CODE__ERROR_NO_MEMORY, "ring_open", -1,
                            "cannot make the rings' shared memory: %s: %s", failed, strerror(e));
        return;
    }
    tdm_ring_header *h = map;
    h->magic = TDM_RING_MAGIC;
    h->version = TDM_RING_VERSION;
    h->cap = cap;

    Tandem__V1__RingOpenReply body = TANDEM__V1__RING_OPEN_REPLY__INIT;
    body.bytes = cap;
    Tandem__V1__Reply r = TANDEM__V1__REPLY__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REPLY__BODY_RING_OPEN;
    r.ring_open = &body;
    int too_large;
    tdm_frame *o = tdm_frame_pack(&r, &too_large);
    uv_os_fd_t sock = -1;
    ssize_t sent = -1;
    errno = 0;
    /* under out_mu: no reply thread writes to the socket meanwhile, and none after it */
    pthread_mutex_lock(&c->out_mu);
    if (c->out_gate) {
        errno = EBUSY;
    } else if (o && uv_fileno(&c->h.handle, &sock) == 0) {
        /* the reply with the memfd attached, on the socket now: nothing else is queued on it */
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        memset(&ctl, 0, sizeof ctl);
        struct iovec iov = {o->data, o->len};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &mfd, sizeof mfd);
        do sent = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        while (sent < 0 && errno == EINTR);
    }
    int e = errno;
    if (sent > 0) c->out_fd = -1; /* a reply packed from now on waits for the loop, and goes into the ring */
    pthread_mutex_unlock(&c->out_mu);
    close(mfd); /* the client's copy, if sent, is its own */
    if (sent <= 0) {
        munmap(map, bytes);
        if (!o) {
            tdm_conn_close(c, "out of memory for a reply");
        } else if (sent < 0 && (e == EAGAIN || e == EWOULDBLOCK || e == EBUSY)) {
            tdm_frame_free(o);
            tdm_conn_send_error(c, id, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "ring_open", -1,
                                "%s; retry once they are read",
                                e == EBUSY ? "a reply is being written to the socket" : "the socket is full (replies unread)");
        } else {
            tdm_frame_free(o);
            tdm_conn_close(c, sent < 0 ? strerror(e) : "socket closed");
        }
        return;
    }
    tdm_metrics_reply();
    if ((size_t)sent < o->len) { /* the rest of the reply through the loop, ahead of anything in the ring */
        o->off = (size_t)sent;
        write_frame(c, o);
        if (c->state == CONN_CLOSING) {
            munmap(map, bytes);
            return;
        }
    } else {
        tdm_frame_free(o);
    }
    tdm_budget_charge(&s->mem, TDM_MEM_RING, bytes);
    c->ring = h;
    c->ring_cap = cap;
    c->ring_req_tail = 0;
    c->ring_seen_ns = uv_hrtime();
    ring_list_add(c, 0);
    s->n_rings++;
    pthread_mutex_lock(&c->out_mu);
    c->ring_rep_head = 0;
    c->ring_direct = 1; /* the reply threads write into the reply ring */
    pthread_mutex_unlock(&c->out_mu);
    tdm_log_debug("conn %llu (%s): shared-memory rings of %u bytes", (unsigned long long)c->id, c->peer, cap);
}

/* Has the ring request bytes the loop may read, or room for replies waiting? */
static int ring_work(const tdm_conn *c, int *in, int *out)
{
    const tdm_ring_header *h = c->ring;
    *in = is_reading_state(c) && atomic_load_explicit(&h->req_head, memory_order_relaxed) != c->ring_req_tail;
    *out = c->ring_out &&
           c->ring_rep_head - atomic_load_explicit(&h->rep_tail, memory_order_relaxed) != c->ring_cap;
    return *in || *out;
}

int tdm_conn_rings_poll(tdm_io *io, uint64_t now)
{
    int any = 0;
    uint64_t park_ns = io->srv->ring_park_ns;
    for (tdm_conn *c = io->rings, *next; c; c = next) {
        next = c->ring_next; /* a connection the pump closes or parks leaves the list, and stays allocated */
        tdm_ring_header *h = c->ring;
        int in, out;
        if (!ring_work(c, &in, &out)) {
            if (!park_ns || now - c->ring_seen_ns < park_ns || now < c->ring_seen_ns) continue;
            /* idle: parked, unless bytes came as the flag went up (the client looks at the flag
               after its bytes, the loop at the bytes after the flag: one of them sees the other) */
            atomic_store_explicit(&h->srv_sleep, 1, memory_order_relaxed);
            atomic_thread_fence(memory_order_seq_cst);
            if (!ring_work(c, &in, &out)) {
                ring_list_remove(c);
                ring_list_add(c, 1);
                continue;
            }
            atomic_store_explicit(&h->srv_sleep, 0, memory_order_relaxed);
        }
        c->ring_seen_ns = now;
        any = 1;
        tdm_server *srv = c->srv;
        tdm_srv_lock_shared(srv);
        if (out) {
            tdm_srv_exclusive(srv); /* the budget's output, the flow */
            if (ring_flush(c) == 0) update_flow(c);
        }
        if (in && c->state != CONN_CLOSING) {
            if (srv->trace_reads) c->read_ns = uv_hrtime();
            ring_pump(c);
        }
        tdm_srv_unlock(srv);
    }
    /* the loop's answers from the express ring, as after a socket's read */
    if (any && io->sink) tdm_query_sink_poll(io->sink);
    return any;
}

int tdm_conn_rings_sleep(tdm_io *io, uint64_t now)
{
    /* (parked rings' flags are up already) */
    for (tdm_conn *c = io->rings; c; c = c->ring_next) atomic_store_explicit(&c->ring->srv_sleep, 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst); /* the flags before the last look */
    return tdm_conn_rings_poll(io, now);
}

void tdm_conn_rings_wake(tdm_io *io)
{
    for (tdm_conn *c = io->rings; c; c = c->ring_next) atomic_store_explicit(&c->ring->srv_sleep, 0, memory_order_relaxed);
}

/* ---- accept ---- */

static void peer_name(tdm_conn *c, int is_unix)
{
    c->peer_uid = -1;
    if (is_unix) {
        c->is_unix = 1;
        uv_os_fd_t fd;
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (uv_fileno(&c->h.handle, &fd) == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
            c->peer_uid = (long)cred.uid;
        if (c->peer_uid >= 0) snprintf(c->peer, sizeof c->peer, "unix uid %ld", c->peer_uid);
        else snprintf(c->peer, sizeof c->peer, "unix");
        return;
    }
    struct sockaddr_storage ss = {0};
    int len = sizeof ss;
    char ip[64] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        }
    }
    snprintf(c->peer, sizeof c->peer, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", ip, port);
    snprintf(c->addr, sizeof c->addr, "%s", ip);
}

/* Connections open from c's address, c excluded (O(connections): accepts are rare). */
static uint32_t from_same_address(const tdm_conn *c)
{
    uint32_t n = 0;
    for (const tdm_conn *o = c->srv->conns; o; o = o->next)
        if (o != c && o->active && o->state != CONN_CLOSING && !strcmp(o->addr, c->addr)) n++;
    return n;
}

void tdm_conn_leave_unauth(tdm_conn *c)
{
    if (!c->unauth_counted) return;
    c->unauth_counted = 0;
    c->srv->n_unauth--;
}

static void on_closed_unaccepted(uv_handle_t *h)
{
    tdm_conn *c = h->data;
    if (--c->handles_open == 0) {
        pthread_mutex_destroy(&c->out_mu);
        free(c);
    }
}

/* A connection's handles on io's loop, not yet open; NULL when out of memory or libuv
 * refuses (logged). */
static tdm_conn *conn_new(tdm_server *srv, tdm_io *io, int is_unix)
{
    tdm_conn *c = calloc(1, sizeof *c);
    if (!c) {
        tdm_log_error("out of memory accepting a connection");
        return NULL;
    }
    c->out_fd = -1;
    pthread_mutex_init(&c->out_mu, NULL); /* default attributes: cannot fail */
    c->srv = srv;
    c->io = io;
    c->share_of = srv->share_by == TDM_SHARE_OFF ? NULL : &c->share; /* a tenant's from its Hello */
    int rc = is_unix ? uv_pipe_init(io->loop, &c->h.pipe, 0) : uv_tcp_init(io->loop, &c->h.tcp);
    if (rc != 0) {
        tdm_log_error("accept: %s", uv_strerror(rc));
        pthread_mutex_destroy(&c->out_mu);
        free(c);
        return NULL;
    }
    c->h.handle.data = c;
    uv_timer_init(io->loop, &c->linger); /* cannot fail */
    c->linger.data = c;
    c->handles_open = 2;
    return c;
}

static void conn_unaccepted(tdm_conn *c)
{
    uv_close(&c->h.handle, on_closed_unaccepted);
    uv_close((uv_handle_t *)&c->linger, on_closed_unaccepted);
}

static void conn_opened(tdm_conn *c, int is_unix);

/* A connection accepted on the main loop, on its way to an I/O thread's: the socket (a
 * duplicate; the main loop's handle closes the original) and its kind. */
typedef struct handoff {
    tdm_io_task task;
    int fd;
    int is_unix;
} handoff;

static void free_handle(uv_handle_t *h) { free(h); }

/* On the I/O thread, holding the lock: the connection is opened on its loop. */
static void take_over(tdm_io *io, void *arg)
{
    handoff *h = arg;
    tdm_server *srv = io->srv;
    int fd = h->fd, is_unix = h->is_unix;
    free(h);
    if (srv->stopped || srv->shutting_down) { /* accepted as the listeners closed */
        close(fd);
        return;
    }
    tdm_conn *c = conn_new(srv, io, is_unix);
    if (!c) {
        close(fd);
        return;
    }
    int rc = is_unix ? uv_pipe_open(&c->h.pipe, fd) : uv_tcp_open(&c->h.tcp, fd);
    if (rc != 0) {
        tdm_log_warn("accept: %s", uv_strerror(rc));
        close(fd);
        conn_unaccepted(c);
        return;
    }
    conn_opened(c, is_unix);
}

/* Accepts on the main loop and hands the socket to the next I/O thread. */
static void hand_off(tdm_server *srv, uv_stream_t *listener, int is_unix)
{
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } *t = malloc(sizeof *t);
    handoff *h = malloc(sizeof *h);
    if (!t || !h) {
        /* libuv stops watching the listener until a uv_accept: accepting stalls while memory
           is short, which beats crashing */
        free(t);
        free(h);
        tdm_log_error("out of memory accepting a connection");
        return;
    }
    int rc = is_unix ? uv_pipe_init(srv->loop, &t->pipe, 0) : uv_tcp_init(srv->loop, &t->tcp);
    if (rc != 0) {
        tdm_log_error("accept: %s", uv_strerror(rc));
        free(t);
        free(h);
        return;
    }
    uv_os_fd_t fd = -1;
    if ((rc = uv_accept(listener, &t->stream)) != 0 || (rc = uv_fileno(&t->handle, &fd)) != 0) {
        tdm_log_warn("accept: %s", uv_strerror(rc));
        uv_close(&t->handle, free_handle);
        free(h);
        return;
    }
    h->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the I/O thread's; this handle's copy closes with it */
    uv_close(&t->handle, free_handle);
    if (h->fd < 0) {
        tdm_log_warn("accept: cannot duplicate the socket: %s", strerror(errno));
        free(h);
        return;
    }
    h->is_unix = is_unix;
    h->task.fn = take_over;
    h->task.arg = h;
    tdm_io_post(tdm_io_next(srv), &h->task);
}

void tdm_conn_accept(tdm_server *srv, uv_stream_t *listener, int is_unix)
{
    if (srv->n_io > 0) {
        hand_off(srv, listener, is_unix);
        return;
    }
    tdm_conn *c = conn_new(srv, &srv->io[0], is_unix);
    if (!c) return; /* libuv stops watching the listener until a uv_accept (see hand_off) */
    int rc = uv_accept(listener, &c->h.stream);
    if (rc != 0) {
        tdm_log_warn("accept: %s", uv_strerror(rc));
        conn_unaccepted(c);
        return;
    }
    conn_opened(c, is_unix);
}

/* The connection's socket is open on its loop: counted, checked against the limits, read. */
static void conn_opened(tdm_conn *c, int is_unix)
{
    tdm_server *srv = c->srv;
    c->id = ++srv->next_conn_id;
    c->state = CONN_READ_LEN;
    c->next = srv->conns;
    if (srv->conns) srv->conns->prev = c;
    srv->conns = c;
    srv->n_conns++;
    srv->counters.connections++;
    tdm_metrics_accepted();
    if (!is_unix) uv_tcp_nodelay(&c->h.tcp, 1); /* replies are small: never wait for Nagle */
    peer_name(c, is_unix);
    if (!is_unix && srv->tls && !(c->tls = tdm_tls_new(srv->tls))) {
        tdm_log_error("conn %llu (%s): out of memory for a TLS session", (unsigned long long)c->id, c->peer);
        tdm_conn_close(c, "out of memory for TLS");
        return;
    }

    if (srv->n_active >= srv->cfg->max_connections) {
        tdm_log_warn("conn %llu (%s): refused: %u connections open (max_connections)", (unsigned long long)c->id,
                     c->peer, srv->n_active);
        tdm_metrics_refused();
        if (srv->n_conns > 2 * srv->cfg->max_connections) { /* a flood: not even an answer */
            tdm_conn_close(c, "connection flood");
            return;
        }
        tdm_conn_send_error(c, 0, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "connections", -1,
                            "the server has max_connections (%u) connections open; retry later",
                            srv->cfg->max_connections);
        tdm_conn_drain(c, "over max_connections");
        return;
    }
    const char *busy = NULL;
    if (srv->n_unauth >= srv->cfg->max_unauthenticated)
        busy = "connections that have not said Hello are at max_unauthenticated";
    else if (c->addr[0] && srv->cfg->max_per_address && from_same_address(c) >= srv->cfg->max_per_address)
        busy = "connections from this address are at max_connections_per_address";
    if (busy) {
        tdm_log_warn("conn %llu (%s): refused: %s", (unsigned long long)c->id, c->peer, busy);
        tdm_metrics_refused();
        tdm_conn_send_error(c, 0, TANDEM__V1__ERROR_CODE__ERROR_BUSY, "connections", -1, "%s; retry later", busy);
        tdm_conn_drain(c, busy);
        return;
    }
    c->active = 1;
    srv->n_active++;
    c->unauth_counted = 1;
    srv->n_unauth++;
    tdm_log_debug("conn %llu (%s): accepted", (unsigned long long)c->id, c->peer);
    tdm_conn_deadline(c);
    read_start(c);
    uv_os_fd_t fd;
    if (!c->tls && is_reading_state(c) && uv_fileno(&c->h.handle, &fd) == 0) {
        pthread_mutex_lock(&c->out_mu);
        c->out_fd = fd;
        pthread_mutex_unlock(&c->out_mu);
    }
}
