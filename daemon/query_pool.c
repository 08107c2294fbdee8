#include "query_pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"

/* Where a loop's finished jobs wait for it (query_pool.h). */
struct tdm_query_sink {
    /* the wake-up: an eventfd the loop polls. Not a uv_async_t: a loop woken by
       uv_async_send spins until the sender is back from its write (libuv's
       uv__async_spin), which under load took ~18% of the loop's time, a busy loop whose
       frames wait for it */
    uv_poll_t poll;
    int efd;
    int woken;                            /* atomic: a wake-up is written and not yet handled */
    void (*done)(tdm_query_job *, void *); /* the pool's, kept for the jobs after it stopped */
    void *data;
    void (*lock)(void *), (*unlock)(void *); /* the server's lock (io.h), taken by this sink's callbacks */
    void *lock_arg;
    /* finished jobs, newest first: a lock-free stack the pooler threads push onto and the loop
       takes whole (a lock here met the loop at every collect: a futex call a side) */
    tdm_query_job *done_head;             /* atomic */
    size_t pending;                       /* under the server's lock */
    /* the loop is woken only when it may be about to sleep: between its prepare (which
       collects, then sets `idle`) and its check (which clears it); otherwise it collects at its
       next prepare, and on every frame it handles. Every wake-up costs a system call. */
    uv_prepare_t prepare;
    uv_check_t check;
    int idle;                             /* atomic */
    int handles_open;
    tdm_query_sink *next;                 /* qp->sinks */
    /* the express ring polled by the loop (tdm_query_pool_set_express's on_loop): this loop's jobs
       published into it, oldest first (linked through `next`; loop thread only), polled each turn of
       the loop by `xidle` while there are any (an active idle handle also keeps the loop from
       sleeping), and the oldest few after each connection's read (tdm_query_sink_poll) */
    tdm_query_pool *qp;
    uv_idle_t xidle;
    tdm_query_job *xhead, **xtail;
};

struct tdm_query_pool {
    tdm_pooler *pooler;
    /* TDM_DISPATCH_TRACE: replies written by their pooler thread, their time from their
       request's frame to the write and its parts, summed under trace_mu, printed at the stop */
    int trace;
    uint64_t traced, traced_ns, traced_runs;
    double traced_submit_ms, traced_wait_ms, traced_run_ms;
    /* ... and by kind (TRACE_*): a query whose last run was a host thread's, a query a lane ran, a
       MotionCheck */
    uint64_t kind_n[3], kind_ns[3], kind_runs[3];
    double kind_wait_ms[3], kind_run_ms[3]; /* ... their runs' waits in the queue and runs, summed */
    /* TDM_REQUEST_TRACE=FILE: each such reply's connection (its Hello's client_name), request id,
       kind, and the times of its frame and of its write's start (CLOCK_MONOTONIC ns), written to
       FILE at the stop:
       what a client's own times of the same requests join with (bench/request_legs.py) */
    const char *req_trace;
    struct req_rec { char name[32]; uint64_t id, t_read, t_frame, t_written; int kind; } *recs;
    size_t n_recs, cap_recs;
    pthread_mutex_t trace_mu;
    void (*ran)(tdm_query_job *, void *);
    void (*send)(tdm_query_job *, void *);
    /* reply threads (tdm_query_pool_set_replies): the jobs the pooler's threads finished, in the
       order they finished them, packed, handed back and written here, so that a lane is not held
       by its batch's writes (each a system call that wakes the client: ~5 us, a third of a lane's
       time with 64 planners) */
    struct {
        pthread_mutex_t mu;
        pthread_cond_t wake;
        tdm_query_job *head, *tail; /* linked through reply_next */
        size_t n;                   /* atomic: queued, read without the lock by the polling */
        int sleepers, stopping;
        uint64_t spin_ns;
        int yield; /* TDM_POLL_YIELD=1 (A/B runs): polling yields the core each round */
        int n_threads;
        pthread_t threads[TDM_QUERY_POOL_MAX_REPLY_THREADS];
    } rq;
    void (*done)(tdm_query_job *, void *);
    void *data;
    tdm_query_sink *sinks; /* every loop's; the first made is the main loop's */
    uint64_t x_kept_ns;    /* atomic: the ring's last keep by any loop (uv_hrtime) */
};

/* The pooler's clock (CLOCK_MONOTONIC, as uv_hrtime), in ms. */
static double trace_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static tdm_query_job *job_of(tdm_pooler_job *pj)
{
    return (tdm_query_job *)(void *)((char *)pj - offsetof(tdm_query_job, pool));
}

/* Pooler thread: the engine's error, once per failed run (as the log has always said it). */
static void on_batch(const tdm_pooler_batch *b, void *data)
{
    (void)data;
    tdm_metrics_batch(b->jobs, b->queries, b->tasks);
    if (b->rc != TDM_OK) tdm_log_error("engine run of %zu queries failed: %s", b->queries, tdm_strerror(b->rc));
}

/* query_job.sending */
enum { SENDING = 1, SENDING_PUT_BACK = 2 };

/* The sinks this pooler thread handed jobs back to quietly in its batch: on_batch_end wakes
 * their loops, once each (a batch's jobs come from a few loops; more than this many different
 * ones are woken at once). */
#define OWED_MAX 16
static _Thread_local tdm_query_sink *owed[OWED_MAX];
static _Thread_local unsigned n_owed;

static void wake(tdm_query_sink *s);

static void owe_wake(tdm_query_sink *s)
{
    for (unsigned i = 0; i < n_owed; i++)
        if (owed[i] == s) return;
    if (n_owed == OWED_MAX) {
        wake(s);
        return;
    }
    owed[n_owed++] = s;
}

/* Any thread: queues a finished job for its loop (without waking it). */
static void hand_back_quiet(tdm_query_job *j)
{
    tdm_query_sink *s = j->sink;
    tdm_query_job *head = __atomic_load_n(&s->done_head, __ATOMIC_RELAXED);
    do j->next = head; /* the push publishes the job (its `sending` too) to collect's acquire */
    while (!__atomic_compare_exchange_n(&s->done_head, &head, j, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
}

/* Any thread, after queueing: wakes the loop if it may be sleeping (once until it
 * has handled the wake-up: on_wake clears `woken` after draining the eventfd and
 * before it collects). */
static void wake(tdm_query_sink *s)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the queueing before the look at `idle` (see on_prepare) */
    if (!__atomic_load_n(&s->idle, __ATOMIC_RELAXED) || __atomic_exchange_n(&s->woken, 1, __ATOMIC_SEQ_CST)) return;
    uint64_t one = 1;
    while (write(s->efd, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

/* Any thread: queues a finished job for its loop and wakes it. */
static void hand_back(tdm_query_job *j)
{
    hand_back_quiet(j);
    wake(j->sink);
}

static void send_reply(tdm_query_pool *qp, tdm_query_job *j);
static void finish(tdm_query_pool *qp, tdm_query_job *j, int lane);
static void reply_push(tdm_query_pool *qp, tdm_query_job *j);

/* What is left of a job after a run (run_over) */
enum { RUN_NEXT, RUN_CANCELLED, RUN_REPLY };

/* A pooler thread, or the loop for a job the ring answered: a job's run is over: traced; RUN_NEXT
 * when its next run was submitted (`submit`: the pooler, or the loop's way); RUN_CANCELLED when
 * its connection closed (no next run, no reply to pack; rc TDM_ECANCELED); else RUN_REPLY. */
static int run_over(tdm_query_pool *qp, tdm_query_job *j, int (*submit)(tdm_query_pool *, tdm_query_job *))
{
    tdm_pooler_job *pj = &j->pool;
    if (qp->trace) {
        double now = trace_now_ms();
        j->trace_wait_ms += pj->taken_ms - pj->queued_ms;
        j->trace_run_ms += now - pj->taken_ms;
        j->trace_runs++;
    }
    if (tdm_pooler_job_cancelled(pj)) {
        if (pj->rc == TDM_OK) pj->rc = TDM_ECANCELED;
        return RUN_CANCELLED;
    }
    if (j->again && pj->rc == TDM_OK && j->again(j)) {
        if (submit(qp, j) == TDM_OK) return RUN_NEXT;
        pj->rc = TDM_ECANCELED;
    }
    return RUN_REPLY;
}

/* A pooler thread's resubmission: pooled with the others */
static int pool_submit(tdm_query_pool *qp, tdm_query_job *j) { return tdm_pooler_submit(qp->pooler, &j->pool); }

/* Pooler thread: a job's run is over: its next run, or its reply (here or by a reply thread). */
static void on_finished(tdm_pooler_job *pj, void *data)
{
    tdm_query_pool *qp = data;
    tdm_query_job *j = job_of(pj);
    int next = run_over(qp, j, pool_submit);
    if (next == RUN_NEXT) return;
    if (next == RUN_CANCELLED) {
        hand_back(j);
        return;
    }
    if (qp->rq.n_threads && qp->send) { /* packed, handed back and written by a reply thread */
        reply_push(qp, j);
        return;
    }
    finish(qp, j, 1);
}

/* A pooler thread (lane: 1) or a reply thread: packs j's reply, hands j to its loop and writes
 * the reply. */
static void finish(tdm_query_pool *qp, tdm_query_job *j, int lane)
{
    if (qp->ran) qp->ran(j, qp->data);
    int send = qp->send && j->frame;
    if (send) j->sending = SENDING; /* published by hand_back_quiet's push (release) */
    tdm_query_sink *s = j->sink;
    hand_back_quiet(j);
    /* a pooler thread wakes the loop once for its batch (on_batch_end): each wake-up is a system
       call; a reply thread, after the write (the loop, woken before it, would find the job
       still being written and put it back) */
    if (lane) owe_wake(s);
    if (send) send_reply(qp, j);
    if (!lane) wake(s);
}

/* A pooler thread or a reply thread: writes the reply of j, which its loop holds back meanwhile
 * (`sending`), then lets the loop have it. */
static void send_reply(tdm_query_pool *qp, tdm_query_job *j)
{
    tdm_pooler_job *pj = &j->pool;
    tdm_query_sink *s = j->sink;
    uint64_t t0 = 0;
    double submit = 0, wait = 0, run = 0;
    uint32_t runs = 0;
    int kind = j->again ? 2 : pj->host ? 0 : 1;
    struct req_rec rec;
    if (qp->req_trace) { /* as below */
        const tdm_conn *c = j->owner;
        size_t n = 0; /* its first 31 characters, a space as '_' (the file's fields are spaces apart) */
        for (; n + 1 < sizeof rec.name && c->client_name[n]; n++)
            rec.name[n] = c->client_name[n] == ' ' ? '_' : c->client_name[n];
        rec.name[n] = 0;
        rec.id = j->request_id, rec.t_read = j->trace_read_ns, rec.t_frame = j->mark.t0, rec.kind = kind;
    }
    if (qp->trace) { /* read before the send: j may be gone once `sending` is cleared below */
        t0 = j->mark.t0;
        submit = j->trace_submit_ms - 1e-6 * (double)t0, wait = j->trace_wait_ms, run = j->trace_run_ms;
        runs = j->trace_runs;
    }
    if (qp->req_trace) rec.t_written = uv_hrtime(); /* as the write starts: after it, the client may have
                                                      moved on before this thread runs again */
    qp->send(j, qp->data);
    if (qp->trace) {
        uint64_t ns = uv_hrtime() - t0;
        pthread_mutex_lock(&qp->trace_mu);
        qp->traced++;
        qp->traced_ns += ns;
        qp->traced_runs += runs;
        qp->traced_submit_ms += submit;
        qp->traced_wait_ms += wait;
        qp->traced_run_ms += run;
        qp->kind_n[kind]++;
        qp->kind_ns[kind] += ns;
        qp->kind_runs[kind] += runs;
        qp->kind_wait_ms[kind] += wait;
        qp->kind_run_ms[kind] += run;
        pthread_mutex_unlock(&qp->trace_mu);
    }
    if (qp->req_trace) {
        pthread_mutex_lock(&qp->trace_mu);
        if (qp->n_recs == qp->cap_recs) {
            size_t cap = qp->cap_recs ? 2 * qp->cap_recs : 65536;
            struct req_rec *r = cap <= (64u << 20) / sizeof *r ? realloc(qp->recs, cap * sizeof *r) : NULL;
            if (r) qp->recs = r, qp->cap_recs = cap;
        }
        if (qp->n_recs < qp->cap_recs) qp->recs[qp->n_recs++] = rec; /* past 64 MiB of them: dropped */
        pthread_mutex_unlock(&qp->trace_mu);
    }
    /* the loop met the job while it was sending and put it back: wake it again */
    if (__atomic_exchange_n(&j->sending, 0, __ATOMIC_ACQ_REL) == SENDING_PUT_BACK) wake(s);
}

/* Pooler thread, after a batch's jobs are finished: wakes each loop they went to, once. */
static void on_batch_end(void *data)
{
    (void)data;
    for (unsigned i = 0; i < n_owed; i++) wake(owed[i]);
    n_owed = 0;
}

/* Pooler thread: queues j's reply for the reply threads (its packing, hand-back and write). */
static void reply_push(tdm_query_pool *qp, tdm_query_job *j)
{
    j->reply_next = NULL;
    pthread_mutex_lock(&qp->rq.mu);
    if (qp->rq.tail) qp->rq.tail->reply_next = j;
    else qp->rq.head = j;
    qp->rq.tail = j;
    __atomic_add_fetch(&qp->rq.n, 1, __ATOMIC_RELEASE);
    int sleeping = qp->rq.sleepers > 0;
    pthread_mutex_unlock(&qp->rq.mu);
    if (sleeping) pthread_cond_signal(&qp->rq.wake);
}

/* Reply thread: the next send, polling for spin_ns before it sleeps; NULL once stopping and
 * nothing is queued. */
static tdm_query_job *reply_pop(tdm_query_pool *qp)
{
    double until = 0;
    for (;;) {
        if (__atomic_load_n(&qp->rq.n, __ATOMIC_ACQUIRE)) {
            pthread_mutex_lock(&qp->rq.mu);
            tdm_query_job *j = qp->rq.head;
            if (j) {
                qp->rq.head = j->reply_next;
                if (!qp->rq.head) qp->rq.tail = NULL;
                __atomic_sub_fetch(&qp->rq.n, 1, __ATOMIC_RELAXED);
            }
            pthread_mutex_unlock(&qp->rq.mu);
            if (j) return j;
            continue; /* another reply thread took it */
        }
        if (qp->rq.spin_ns) {
            double now = trace_now_ms();
            if (until == 0) until = now + 1e-6 * (double)qp->rq.spin_ns;
            if (now < until) {
                if (qp->rq.yield) sched_yield();
                continue;
            }
        }
        pthread_mutex_lock(&qp->rq.mu);
        qp->rq.sleepers++;
        while (!qp->rq.head && !qp->rq.stopping) pthread_cond_wait(&qp->rq.wake, &qp->rq.mu);
        qp->rq.sleepers--;
        int done = !qp->rq.head && qp->rq.stopping;
        pthread_mutex_unlock(&qp->rq.mu);
        if (done) return NULL;
        until = 0;
    }
}

static void *reply_main(void *arg)
{
    prctl(PR_SET_NAME, "tdm-reply"); /* top -H, /proc, bench/thread_cpu.sh */
    tdm_query_pool *qp = arg;
    for (tdm_query_job *j; (j = reply_pop(qp));) finish(qp, j, 0);
    return NULL;
}

/* After the pooler's threads are joined: the reply threads write what is queued, then end. */
static void replies_stop(tdm_query_pool *qp)
{
    if (!qp->rq.n_threads) return;
    pthread_mutex_lock(&qp->rq.mu);
    qp->rq.stopping = 1;
    pthread_cond_broadcast(&qp->rq.wake);
    pthread_mutex_unlock(&qp->rq.mu);
    for (int k = 0; k < qp->rq.n_threads; k++) pthread_join(qp->rq.threads[k], NULL);
    qp->rq.n_threads = 0;
}

int tdm_query_pool_set_replies(tdm_query_pool *qp, int n)
{
    if (n > TDM_QUERY_POOL_MAX_REPLY_THREADS) n = TDM_QUERY_POOL_MAX_REPLY_THREADS;
    const char *sp = getenv("TDM_REPLY_SPIN_US"); /* measurements: the reply threads' own polling */
    qp->rq.spin_ns = sp && *sp ? 1000 * strtoull(sp, NULL, 10) : tdm_pooler_poll_ns(qp->pooler);
    const char *py = getenv("TDM_POLL_YIELD");
    qp->rq.yield = py && strcmp(py, "1") == 0;
    for (int k = 0; k < n; k++) {
        if (pthread_create(&qp->rq.threads[k], NULL, reply_main, qp) != 0) return TDM_ESYS;
        qp->rq.n_threads = k + 1;
    }
    return TDM_OK;
}

/* Loop thread: may the job go to `done`? Not while its sender writes its reply
 * (marked put back: the sender wakes the loop when it has written). */
static int sent(tdm_query_job *j)
{
    int expect = SENDING;
    if (__atomic_compare_exchange_n(&j->sending, &expect, SENDING_PUT_BACK, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return 0;
    return expect == 0; /* else put back already, and still sending */
}

/* Waits out the sender's write of j's reply (a few microseconds, unless its thread
 * was preempted). */
static void wait_sent(tdm_query_job *j)
{
    for (unsigned i = 0; __atomic_load_n(&j->sending, __ATOMIC_ACQUIRE); i++)
        if (i >= 1000) sched_yield();
}

static int has_done(tdm_query_sink *s) { return __atomic_load_n(&s->done_head, __ATOMIC_RELAXED) != NULL; }

/* The sink's loop, holding the server's lock: a finished job to `done`, in its request's metrics scope. */
static void let_go(tdm_query_sink *s, tdm_query_job *j)
{
    s->pending--;
    tdm_metrics_mark outer = tdm_metrics_enter(&j->mark);
    s->done(j, s->data);
    tdm_metrics_leave(outer);
}

/* The sink's loop, holding the server's lock. */
static void collect(tdm_query_sink *s, int wait)
{
    if (!has_done(s)) return; /* the usual case: nothing finished */
    tdm_query_job *top = __atomic_exchange_n(&s->done_head, NULL, __ATOMIC_ACQUIRE), *j = NULL, *back = NULL;
    while (top) { /* newest first: reversed, so that jobs are done in the order they finished */
        tdm_query_job *next = top->next;
        top->next = j;
        j = top;
        top = next;
    }
    while (j) {
        tdm_query_job *next = j->next;
        j->next = NULL;
        if (wait) wait_sent(j);
        else if (!sent(j)) { /* its sender comes back through the queue */
            j->next = back;
            back = j;
            j = next;
            continue;
        }
        let_go(s, j);
        j = next;
    }
    while (back) {
        tdm_query_job *next = back->next;
        hand_back_quiet(back);
        back = next;
    }
}

void tdm_query_sink_collect(tdm_query_sink *s) { collect(s, 0); }

void tdm_query_sink_settle(tdm_query_sink *s) { collect(s, 1); }

static void on_wake(uv_poll_t *h, int status, int events)
{
    (void)status, (void)events;
    tdm_query_sink *s = h->data;
    uint64_t n;
    while (read(s->efd, &n, sizeof n) < 0 && errno == EINTR) {
    }
    /* after the read, before the collect: a thread that saw `woken` set queued its job before
       this store, so the collect below finds it; one that sees it clear writes again. (Cleared
       before the read, a write made in between was drained with `woken` left set, and every
       later wake-up skipped: the loop slept on finished jobs until something else woke it.) */
    __atomic_store_n(&s->woken, 0, __ATOMIC_SEQ_CST);
    s->lock(s->lock_arg);
    collect(s, 0);
    s->unlock(s->lock_arg);
}

/* Before the loop polls: from here until its check, a thread that queues a job wakes it
 * (the store of `idle` before the look at the queue, as wake() queues before it looks). */
static void on_prepare(uv_prepare_t *h)
{
    tdm_query_sink *s = h->data;
    __atomic_store_n(&s->idle, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (!has_done(s)) return;
    s->lock(s->lock_arg);
    collect(s, 0);
    s->unlock(s->lock_arg);
}

static void on_check(uv_check_t *h)
{
    tdm_query_sink *s = h->data;
    __atomic_store_n(&s->idle, 0, __ATOMIC_RELAXED);
}

/* ---- the express ring polled by the loops ------------------------------------------------ */

/* How often the loops with jobs in the ring keep its kernel running, all of them together
 * (tdm_pooler_keep_express: a launch lives 2 ms and the next is made from half that on; each keep
 * is two CUDA calls, which meet the lanes' on the driver's locks). A launch that ended unseen is
 * replaced within this long. */
#define X_KEEP_NS 50000u

static int submit_on_loop(tdm_query_pool *qp, tdm_query_job *job);

/* The sink's loop: a job of its own that the ring answered: what on_finished and finish do for a
 * pooler thread's, here: its next run, or its reply packed and written now, then `done` (the
 * sink's lock taken by the caller around it: `done` wants it, the write does not). Returns 1
 * when the job is over and goes to `done`. */
static int x_answered(tdm_query_pool *qp, tdm_query_job *j)
{
    int next = run_over(qp, j, submit_on_loop);
    if (next == RUN_NEXT) return 0;
    if (next == RUN_CANCELLED) return 1;
    if (qp->ran) qp->ran(j, qp->data);
    if (qp->send && j->frame) send_reply(qp, j); /* `sending` stays 0: nothing else holds the job */
    return 1;
}

/* How many of its oldest ring jobs a loop polls after a connection's read (all of them once a turn):
 * a loop may hold thousands (pipelined requests), and a read should not cost a look at each */
#define X_POLL_READ 32

/* The sink's loop: polls its jobs in the ring, at most `limit`, oldest first (the ring answers
 * about in order); those answered are finished here. */
static void x_poll(tdm_query_sink *s, size_t limit)
{
    tdm_query_pool *qp = s->qp;
    uint64_t now = uv_hrtime(), kept = __atomic_load_n(&qp->x_kept_ns, __ATOMIC_RELAXED);
    if (now - kept >= X_KEEP_NS &&
        __atomic_compare_exchange_n(&qp->x_kept_ns, &kept, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        tdm_pooler_keep_express(qp->pooler);
    tdm_query_job *over = NULL, **tail = &over;
    tdm_query_job **at = &s->xhead;
    for (size_t seen = 0; *at && seen < limit; seen++) {
        tdm_query_job *j = *at;
        int rc = tdm_pooler_poll_express(qp->pooler, &j->pool);
        if (rc == 0) {
            at = &j->next;
            continue;
        }
        /* out of the list first: x_answered may publish it again (at the tail) */
        *at = j->next;
        if (!*at) s->xtail = at;
        j->next = NULL;
        if (rc == 1 && x_answered(qp, j)) {
            *tail = j;
            tail = &j->next;
        } /* 2: given back, it comes through the pooler's `finished` now */
    }
    if (!s->xhead) uv_idle_stop(&s->xidle);
    if (!over) return;
    s->lock(s->lock_arg);
    while (over) {
        tdm_query_job *next = over->next;
        over->next = NULL;
        let_go(s, over);
        over = next;
    }
    s->unlock(s->lock_arg);
}

static void on_xidle(uv_idle_t *h) { x_poll(h->data, SIZE_MAX); }

void tdm_query_sink_poll(tdm_query_sink *s)
{
    if (s->xhead) x_poll(s, X_POLL_READ);
}

/* The sink's loop: submits job, through the ring when it takes it (then polled here). TDM_OK, or
 * the pooler's refusal. */
static int submit_on_loop(tdm_query_pool *qp, tdm_query_job *job)
{
    int rc = tdm_pooler_submit_polled(qp->pooler, &job->pool);
    if (rc != 1) return rc;
    tdm_query_sink *s = job->sink;
    if (!s->xhead) uv_idle_start(&s->xidle, on_xidle); /* cannot fail on an initialised handle */
    job->next = NULL;
    *s->xtail = job;
    s->xtail = &job->next;
    return TDM_OK;
}

void tdm_query_pool_set_sender(tdm_query_pool *qp, void (*send)(tdm_query_job *job, void *data)) { qp->send = send; }

static void on_sink_closed(uv_handle_t *h)
{
    tdm_query_sink *s = h->data;
    if (--s->handles_open) return;
    close(s->efd);
    free(s);
}

int tdm_query_pool_sink(tdm_query_pool *qp, uv_loop_t *loop, void (*lock)(void *), void (*unlock)(void *),
                        void *lock_arg, tdm_query_sink **out)
{
    *out = NULL;
    tdm_query_sink *s = calloc(1, sizeof *s);
    if (!s) return TDM_ENOMEM;
    s->done = qp->done;
    s->data = qp->data;
    s->lock = lock;
    s->unlock = unlock;
    s->lock_arg = lock_arg;
    s->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->efd < 0 || uv_poll_init(loop, &s->poll, s->efd) != 0) {
        if (s->efd >= 0) close(s->efd);
        free(s);
        return TDM_ESYS;
    }
    uv_poll_start(&s->poll, UV_READABLE, on_wake); /* cannot fail on an initialised handle */
    uv_prepare_init(loop, &s->prepare);            /* cannot fail */
    uv_check_init(loop, &s->check);
    uv_idle_init(loop, &s->xidle);
    s->qp = qp;
    s->xtail = &s->xhead;
    s->poll.data = s->prepare.data = s->check.data = s->xidle.data = s;
    s->handles_open = 4;
    uv_prepare_start(&s->prepare, on_prepare);
    uv_check_start(&s->check, on_check);
    uv_unref((uv_handle_t *)&s->prepare); /* they keep no loop running */
    uv_unref((uv_handle_t *)&s->check);
    s->next = qp->sinks;
    qp->sinks = s;
    *out = s;
    return TDM_OK;
}

void tdm_query_sink_close(tdm_query_sink *s)
{
    /* no connection is left, so no job of this loop is in the ring: its connection would wait */
    while (s->xhead) {
        x_poll(s, SIZE_MAX);
        if (s->xhead) sched_yield();
    }
    collect(s, 1);
    uv_close((uv_handle_t *)&s->xidle, on_sink_closed);
    uv_close((uv_handle_t *)&s->poll, on_sink_closed);
    uv_close((uv_handle_t *)&s->prepare, on_sink_closed);
    uv_close((uv_handle_t *)&s->check, on_sink_closed);
}

int tdm_query_pool_create(tdm_sched *engine, uint64_t max_batch_tasks, uint64_t max_batch_pairs,
                          void (*ran)(tdm_query_job *job, void *data), void (*done)(tdm_query_job *job, void *data),
                          void *data, tdm_query_pool **out)
{
    *out = NULL;
    tdm_query_pool *qp = calloc(1, sizeof *qp);
    if (!qp) return TDM_ENOMEM;
    qp->ran = ran;
    qp->done = done;
    qp->data = data;
    const char *trace = getenv("TDM_DISPATCH_TRACE");
    qp->trace = trace != NULL; /* as the pooler's */
    const char *rt = getenv("TDM_REQUEST_TRACE");
    qp->req_trace = rt && *rt ? rt : NULL;
    pthread_mutex_init(&qp->trace_mu, NULL);
    pthread_mutex_init(&qp->rq.mu, NULL);
    pthread_cond_init(&qp->rq.wake, NULL);
    int rc = tdm_pooler_create(engine, max_batch_tasks, max_batch_pairs, on_finished, on_batch, qp, &qp->pooler);
    if (rc != TDM_OK) {
        pthread_mutex_destroy(&qp->trace_mu);
        pthread_mutex_destroy(&qp->rq.mu);
        pthread_cond_destroy(&qp->rq.wake);
        free(qp);
        return rc;
    }
    tdm_pooler_set_batch_end(qp->pooler, on_batch_end);
    *out = qp;
    return TDM_OK;
}

void tdm_query_pool_submit(tdm_query_pool *qp, tdm_query_job *job)
{
    job->sink->pending++;
    if (qp->trace) job->trace_submit_ms = trace_now_ms();
    /* the pooler refuses jobs only once stopped, which the server does after its last connection
     * is gone; should one come anyway, it is answered as an engine failure */
    int rc = submit_on_loop(qp, job);
    if (rc != TDM_OK) {
        job->pool.rc = TDM_ECANCELED;
        hand_back(job);
    }
}

size_t tdm_query_pool_owners_waiting(tdm_query_pool *qp)
{
    tdm_pooler_stats st;
    tdm_query_pool_get_stats(qp, &st);
    return st.owners;
}

size_t tdm_query_pool_pending(const tdm_query_pool *qp)
{
    size_t n = 0;
    for (const tdm_query_sink *s = qp->sinks; s; s = s->next) n += s->pending;
    return n;
}

void tdm_query_pool_set_fairness(tdm_query_pool *qp, const tdm_pooler_fairness *f)
{
    tdm_pooler_set_fairness(qp->pooler, f);
}

void tdm_query_pool_set_host(tdm_query_pool *qp, uint32_t max_configs) { tdm_pooler_set_host(qp->pooler, max_configs); }
int tdm_query_pool_set_express(tdm_query_pool *qp, uint32_t max_configs, int on_loop)
{
    if (!on_loop) return tdm_pooler_set_express(qp->pooler, max_configs);
    tdm_pooler_set_express_polled(qp->pooler, max_configs);
    return TDM_OK;
}

void tdm_query_pool_set_poll(tdm_query_pool *qp, uint64_t us) { tdm_pooler_set_poll(qp->pooler, us); }

void tdm_query_pool_get_stats(tdm_query_pool *qp, tdm_pooler_stats *s)
{
    if (qp->pooler) tdm_pooler_get_stats(qp->pooler, s);
    else *s = (tdm_pooler_stats){0};
}

void tdm_query_pool_stop(tdm_query_pool *qp)
{
    if (!qp) return;
    tdm_pooler_destroy(qp->pooler); /* runs and finishes what is queued, joins */
    replies_stop(qp);                /* then the replies it queued are written */
    if (qp->trace && qp->traced) {
        double n = (double)qp->traced;
        fprintf(stderr,
                "replies written by pooler threads: %llu, %.3f ms on average from the request's frame (to the first "
                "submission %.3f; %.3f runs, each %.3f waiting in the queue and %.3f from its batch's take to its end)\n",
                (unsigned long long)qp->traced, 1e-6 * (double)qp->traced_ns / n, qp->traced_submit_ms / n,
                (double)qp->traced_runs / n, qp->traced_wait_ms / (double)qp->traced_runs,
                qp->traced_run_ms / (double)qp->traced_runs);
        static const char *kinds[3] = {"queries run by a host thread", "queries run by a lane", "motion checks"};
        for (int k = 0; k < 3; k++)
            if (qp->kind_n[k])
                fprintf(stderr,
                        "  of them %s: %llu, %.3f ms on average, %.3f runs (in the queues %.3f, running %.3f, "
                        "between and after them %.3f)\n",
                        kinds[k], (unsigned long long)qp->kind_n[k],
                        1e-6 * (double)qp->kind_ns[k] / (double)qp->kind_n[k],
                        (double)qp->kind_runs[k] / (double)qp->kind_n[k], qp->kind_wait_ms[k] / (double)qp->kind_n[k],
                        qp->kind_run_ms[k] / (double)qp->kind_n[k],
                        (1e-6 * (double)qp->kind_ns[k] - qp->kind_wait_ms[k] - qp->kind_run_ms[k]) /
                            (double)qp->kind_n[k]);
    }
    if (qp->req_trace) {
        FILE *f = fopen(qp->req_trace, "w");
        if (f) {
            fprintf(f, "# client request kind t_frame_ns t_written_ns t_read_ns (kind 0: a host thread's query, 1: a "
                       "lane's, 2: a motion check; t_read: its connection's last read before the request was "
                       "taken)\n");
            for (size_t i = 0; i < qp->n_recs; i++)
                fprintf(f, "%s %llu %d %llu %llu %llu\n", qp->recs[i].name[0] ? qp->recs[i].name : "-",
                        (unsigned long long)qp->recs[i].id, qp->recs[i].kind,
                        (unsigned long long)qp->recs[i].t_frame, (unsigned long long)qp->recs[i].t_written,
                        (unsigned long long)qp->recs[i].t_read);
            fclose(f);
        }
        free(qp->recs);
    }
    pthread_mutex_destroy(&qp->trace_mu);
    pthread_mutex_destroy(&qp->rq.mu);
    pthread_cond_destroy(&qp->rq.wake);
    free(qp);
}
