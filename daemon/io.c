/* tandemd's event loops (io.h). */
#define _GNU_SOURCE /* PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP */
#include "io.h"

#include <assert.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "conn.h"
#include "log.h"
#include "server.h"

enum { TDM_SRV_SHARED = 1, TDM_SRV_EXCLUSIVE = 2 };
/* How this thread holds the server's lock: 0 not, TDM_SRV_SHARED or TDM_SRV_EXCLUSIVE. */
static _Thread_local int held;

void tdm_srv_lock(tdm_server *s)
{
    assert(!held);
    pthread_rwlock_wrlock(&s->mu);
    held = TDM_SRV_EXCLUSIVE;
}

void tdm_srv_lock_shared(tdm_server *s)
{
    assert(!held);
    pthread_rwlock_rdlock(&s->mu);
    held = TDM_SRV_SHARED;
}

void tdm_srv_unlock(tdm_server *s)
{
    assert(held);
    held = 0;
    pthread_rwlock_unlock(&s->mu);
}

void tdm_srv_exclusive(tdm_server *s)
{
    assert(held);
    if (held == TDM_SRV_EXCLUSIVE) return;
    pthread_rwlock_unlock(&s->mu);
    pthread_rwlock_wrlock(&s->mu);
    held = TDM_SRV_EXCLUSIVE;
}

void tdm_srv_lock_cb(void *s) { tdm_srv_lock(s); }
void tdm_srv_lock_shared_cb(void *s) { tdm_srv_lock_shared(s); }
void tdm_srv_unlock_cb(void *s) { tdm_srv_unlock(s); }

void tdm_io_shutdown_conns(tdm_io *io, int force)
{
    /* a close never frees at once (its handles close later), so the list stays walkable */
    for (tdm_conn *c = io->srv->conns; c; c = c->next)
        if (c->io == io) {
            if (force) tdm_conn_close(c, "forced shutdown");
            else tdm_conn_shutdown(c);
        }
}

/* Closes the loop's own handles (its sink, its stall timer, its async), on that loop or before
 * it runs: no connection is left anywhere, so no job of this loop is in flight. */
static void close_handles(tdm_io *io)
{
    if (!io->async_open) return;
    if (io->sink) tdm_query_sink_close(io->sink);
    io->sink = NULL;
    if (io->stall_on) uv_close((uv_handle_t *)&io->stall, NULL);
    io->stall_on = 0;
    uv_close((uv_handle_t *)&io->async, NULL);
    io->async_open = 0;
}

/* The loop's posted tasks and requests, holding the server's lock. */
static void run_posted(tdm_io *io)
{
    pthread_mutex_lock(&io->post_mu);
    tdm_io_task *t = io->head;
    io->head = io->tail = NULL;
    unsigned want = io->want;
    io->want = 0;
    pthread_mutex_unlock(&io->post_mu);
    while (t) {
        tdm_io_task *next = t->next; /* fn may free t */
        t->next = NULL;
        t->fn(io, t->arg);
        t = next;
    }
    if (want & TDM_IO_WANT_SHUTDOWN) tdm_io_shutdown_conns(io, 0);
    if (want & TDM_IO_WANT_CLOSE) tdm_io_shutdown_conns(io, 1);
    if (want & TDM_IO_WANT_STOP) close_handles(io);
}

static void on_async(uv_async_t *h)
{
    tdm_io *io = h->data;
    tdm_srv_lock(io->srv);
    run_posted(io);
    tdm_srv_unlock(io->srv);
}

static void on_stall_tick(uv_timer_t *t)
{
    tdm_io *io = t->data;
    tdm_server *s = io->srv;
    tdm_srv_lock(s);
    uint64_t now = uv_hrtime();
    for (tdm_conn *c = s->conns; c; c = c->next)
        if (c->io == io) tdm_conn_check_stall(c, now);
    tdm_srv_unlock(s);
}

static void *io_main(void *arg)
{
    tdm_io *io = arg;
    char name[16];
    snprintf(name, sizeof name, "tdm-io%u", io->index);
    prctl(PR_SET_NAME, name); /* shown by top -H, and by bench/thread_cpu.sh */
    tdm_io_run(io); /* until its handles are closed (TDM_IO_WANT_STOP) */
    return NULL;
}

void tdm_io_run(tdm_io *io)
{
    uint64_t spin = io->srv->loop_spin_ns;
    if (spin == 0 && io->srv->cfg->max_ring_bytes == 0) {
        uv_run(io->loop, UV_RUN_DEFAULT);
        return;
    }
    unsigned seen = io->reads;
    uint64_t last = uv_hrtime();
    const char *py = getenv("TDM_POLL_YIELD"); /* A/B runs: a turn that read nothing yields the core */
    int yield = py && strcmp(py, "1") == 0;
    for (;;) {
        uint64_t now = uv_hrtime();
        if (io->reads != seen) seen = io->reads, last = now;
        else if (yield && spin) sched_yield();
        int sleep = now - last >= spin;
        /* connections with rings (conn.h): their clients ring the doorbell while the loop sleeps */
        int told = sleep && io->rings;
        if (told && tdm_conn_rings_sleep(io, now)) sleep = 0; /* something came meanwhile */
        int alive = uv_run(io->loop, sleep ? UV_RUN_ONCE : UV_RUN_NOWAIT);
        if (told) tdm_conn_rings_wake(io);
        if (io->rings) tdm_conn_rings_poll(io, now);
        if (!alive) break;
    }
}

int tdm_srv_lock_init(tdm_server *s)
{
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    /* the loops' queries hold it shared all the time: a change (a put, a delete, a finished
       job's bookkeeping) must not wait behind a stream of them */
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    int rc = pthread_rwlock_init(&s->mu, &a);
    pthread_rwlockattr_destroy(&a);
    return rc;
}

int tdm_io_create(tdm_server *s, unsigned n, char *err, size_t errlen)
{
    int rc;
    if (!(s->io = calloc((size_t)n + 1, sizeof *s->io))) {
        snprintf(err, errlen, "out of memory");
        return TDM_ENOMEM;
    }
    s->n_io = n;
    for (unsigned i = 0; i <= n; i++) {
        tdm_io *io = &s->io[i];
        io->srv = s;
        io->index = i;
        io->loop = i == 0 ? s->loop : &io->own;
        pthread_mutex_init(&io->post_mu, NULL); /* default attributes: cannot fail */
        if (i > 0 && (rc = uv_loop_init(&io->own)) != 0) {
            snprintf(err, errlen, "I/O thread %u: event loop: %s", i, uv_strerror(rc));
            s->n_io = i - 1; /* what tdm_io_join undoes */
            return TDM_ESYS;
        }
        if ((rc = uv_async_init(io->loop, &io->async, on_async)) != 0) {
            snprintf(err, errlen, "I/O thread %u: %s", i, uv_strerror(rc));
            if (i > 0) uv_loop_close(&io->own);
            s->n_io = i ? i - 1 : 0;
            return TDM_ESYS;
        }
        io->async.data = io;
        io->async_open = 1;
        if (i == 0) uv_unref((uv_handle_t *)&io->async); /* the main loop lives for its listeners and connections */
        if (s->cfg->tls_cert[0] && !(io->tls_buf = malloc(TDM_TLS_READ_CAP))) {
            snprintf(err, errlen, "out of memory");
            return TDM_ENOMEM;
        }
    }
    return 0;
}

int tdm_io_start(tdm_server *s, char *err, size_t errlen)
{
    int rc;
    for (unsigned i = 0; i <= s->n_io; i++) {
        tdm_io *io = &s->io[i];
        if ((rc = tdm_query_pool_sink(s->query_pool, io->loop, tdm_srv_lock_shared_cb, tdm_srv_unlock_cb, s, &io->sink)) != TDM_OK) {
            snprintf(err, errlen, "loop %u: %s", i, tdm_strerror(rc));
            return rc;
        }
        if (s->cfg->output_stall_timeout) { /* once a second: connections whose replies are not taken (budget.h) */
            uv_timer_init(io->loop, &io->stall); /* cannot fail */
            io->stall.data = io;
            io->stall_on = 1;
            uv_unref((uv_handle_t *)&io->stall); /* it keeps no loop running */
            uv_timer_start(&io->stall, on_stall_tick, 1000, 1000);
        }
        if (i == 0) continue;
        if ((rc = pthread_create(&io->thread, NULL, io_main, io)) != 0) {
            snprintf(err, errlen, "I/O thread %u: %s", i, strerror(rc));
            return TDM_ESYS;
        }
        io->thread_started = 1;
    }
    if (s->n_io) tdm_log_info("%u I/O threads take the connections", s->n_io);
    return 0;
}

void tdm_io_post(tdm_io *io, tdm_io_task *t)
{
    t->next = NULL;
    pthread_mutex_lock(&io->post_mu);
    if (io->tail) io->tail->next = t;
    else io->head = t;
    io->tail = t;
    pthread_mutex_unlock(&io->post_mu);
    uv_async_send(&io->async);
}

void tdm_io_request(tdm_io *io, unsigned want)
{
    pthread_mutex_lock(&io->post_mu);
    io->want |= want;
    pthread_mutex_unlock(&io->post_mu);
    uv_async_send(&io->async);
}

tdm_io *tdm_io_next(tdm_server *s)
{
    if (s->n_io == 0) return &s->io[0];
    return &s->io[1 + s->next_io++ % s->n_io];
}

void tdm_io_stop_all(tdm_server *s)
{
    if (!s->io) return;
    close_handles(&s->io[0]);
    for (unsigned i = 1; i <= s->n_io; i++)
        if (s->io[i].thread_started && !s->io[i].stop_sent) {
            s->io[i].stop_sent = 1;
            tdm_io_request(&s->io[i], TDM_IO_WANT_STOP);
        }
}

void tdm_io_join(tdm_server *s)
{
    if (!s->io) return;
    close_handles(&s->io[0]); /* the caller's uv_run closes them */
    for (unsigned i = 1; i <= s->n_io; i++) {
        tdm_io *io = &s->io[i];
        if (io->thread_started) {
            if (!io->stop_sent) tdm_io_request(io, TDM_IO_WANT_STOP);
            io->stop_sent = 1;
            pthread_join(io->thread, NULL);
        } else { /* never run: its handles are closed here */
            close_handles(io);
            uv_run(io->loop, UV_RUN_DEFAULT);
        }
        if (uv_loop_close(&io->own) != 0) tdm_log_warn("I/O thread %u: loop closed with handles still open", i);
    }
    for (unsigned i = 0; i <= s->n_io; i++) {
        pthread_mutex_destroy(&s->io[i].post_mu);
        free(s->io[i].tls_buf);
    }
    free(s->io);
    s->io = NULL;
}
