#include "query_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>

#include "log.h"

struct tdm_query_pool {
    uv_async_t async; /* first: on_async casts back */
    tdm_pooler *pooler;
    void (*ran)(tdm_query_job *, void *);
    void (*send)(tdm_query_job *, void *);
    void (*done)(tdm_query_job *, void *);
    void *data;
    pthread_mutex_t lock;
    tdm_query_job *done_head, *done_tail; /* finished, under lock */
    size_t pending;                       /* loop thread */
    /* the loop is woken (async) only when it may be about to sleep: between its prepare
       (which collects, then sets `idle`) and its check (which clears it); otherwise it collects
       at its next prepare, and on every frame it handles. Every uv_async_send costs a system
       call, and the loop a spin when it meets a thread inside one. */
    uv_prepare_t prepare;
    uv_check_t check;
    int idle;                             /* atomic */
    int handles_open;
};

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

/* This pooler thread handed jobs back quietly in its batch: on_batch_end wakes the loop. */
static _Thread_local int owe_wake;

/* Any thread: queues a finished job for the loop (without waking it). */
static void hand_back_quiet(tdm_query_pool *qp, tdm_query_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&qp->lock);
    if (qp->done_tail) qp->done_tail->next = j;
    else __atomic_store_n(&qp->done_head, j, __ATOMIC_RELAXED); /* read unlocked by tdm_query_pool_collect */
    qp->done_tail = j;
    pthread_mutex_unlock(&qp->lock);
}

/* Any thread, after queueing: wakes the loop if it may be sleeping. */
static void wake(tdm_query_pool *qp)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the queueing before the look at `idle` (see on_prepare) */
    if (__atomic_load_n(&qp->idle, __ATOMIC_RELAXED)) uv_async_send(&qp->async);
}

/* Any thread: queues a finished job for the loop and wakes it. */
static void hand_back(tdm_query_pool *qp, tdm_query_job *j)
{
    hand_back_quiet(qp, j);
    wake(qp);
}

/* Pooler thread: pack the reply, then hand the job to the loop. */
static void on_finished(tdm_pooler_job *pj, void *data)
{
    tdm_query_pool *qp = data;
    tdm_query_job *j = job_of(pj);
    if (tdm_pooler_job_cancelled(pj)) { /* its connection closed: no next run, no reply to pack */
        if (pj->rc == TDM_OK) pj->rc = TDM_ECANCELED;
        hand_back(qp, j);
        return;
    }
    if (j->again && pj->rc == TDM_OK && j->again(j)) {
        if (tdm_pooler_submit(qp->pooler, pj) == TDM_OK) return; /* its next run, pooled with the others */
        pj->rc = TDM_ECANCELED;
    }
    if (qp->ran) qp->ran(j, qp->data);
    int send = qp->send && j->frame;
    if (send) j->sending = SENDING; /* published by hand_back's lock */
    /* the loop is woken once for the batch (on_batch_end): every wake-up it meets while a
       thread is still in uv_async_send costs it a spin */
    hand_back_quiet(qp, j);
    owe_wake = 1;
    if (send) {
        qp->send(j, qp->data);
        /* the loop met the job while it was sending and put it back: wake it again */
        if (__atomic_exchange_n(&j->sending, 0, __ATOMIC_ACQ_REL) == SENDING_PUT_BACK) wake(qp);
    }
}

/* Pooler thread, after a batch's jobs are finished: wakes the loop once for those
 * handed back. */
static void on_batch_end(void *data)
{
    if (!owe_wake) return;
    owe_wake = 0;
    wake(data);
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

static void collect(tdm_query_pool *qp, int wait)
{
    if (!__atomic_load_n(&qp->done_head, __ATOMIC_RELAXED)) return; /* the usual case: nothing finished */
    pthread_mutex_lock(&qp->lock);
    tdm_query_job *j = qp->done_head, *back = NULL;
    __atomic_store_n(&qp->done_head, NULL, __ATOMIC_RELAXED);
    qp->done_tail = NULL;
    pthread_mutex_unlock(&qp->lock);
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
        qp->pending--;
        tdm_metrics_mark outer = tdm_metrics_enter(&j->mark);
        qp->done(j, qp->data);
        tdm_metrics_leave(outer);
        j = next;
    }
    while (back) {
        tdm_query_job *next = back->next;
        hand_back_quiet(qp, back);
        back = next;
    }
}

void tdm_query_pool_collect(tdm_query_pool *qp) { collect(qp, 0); }

void tdm_query_pool_settle(tdm_query_pool *qp) { collect(qp, 1); }

static void on_async(uv_async_t *h) { tdm_query_pool_collect((tdm_query_pool *)h); }

/* Before the loop polls: from here until its check, a thread that queues a job wakes it
 * (the store of `idle` before the look at the queue, as wake() queues before it looks). */
static void on_prepare(uv_prepare_t *h)
{
    tdm_query_pool *qp = h->data;
    __atomic_store_n(&qp->idle, 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    tdm_query_pool_collect(qp);
}

static void on_check(uv_check_t *h)
{
    tdm_query_pool *qp = h->data;
    __atomic_store_n(&qp->idle, 0, __ATOMIC_RELAXED);
}

void tdm_query_pool_set_sender(tdm_query_pool *qp, void (*send)(tdm_query_job *job, void *data)) { qp->send = send; }

int tdm_query_pool_create(uv_loop_t *loop, tdm_sched *engine, uint64_t max_batch_tasks, uint64_t max_batch_pairs,
                          void (*ran)(tdm_query_job *job, void *data), void (*done)(tdm_query_job *job, void *data),
                          void *data, tdm_query_pool **out)
{
    *out = NULL;
    tdm_query_pool *qp = calloc(1, sizeof *qp);
    if (!qp) return TDM_ENOMEM;
    qp->ran = ran;
    qp->done = done;
    qp->data = data;
    if (pthread_mutex_init(&qp->lock, NULL) != 0) {
        free(qp);
        return TDM_ESYS;
    }
    if (uv_async_init(loop, &qp->async, on_async) != 0) {
        pthread_mutex_destroy(&qp->lock);
        free(qp);
        return TDM_ESYS;
    }
    uv_prepare_init(loop, &qp->prepare); /* cannot fail */
    uv_check_init(loop, &qp->check);
    qp->async.data = qp->prepare.data = qp->check.data = qp;
    qp->handles_open = 3;
    uv_prepare_start(&qp->prepare, on_prepare);
    uv_check_start(&qp->check, on_check);
    uv_unref((uv_handle_t *)&qp->prepare); /* they keep no loop running */
    uv_unref((uv_handle_t *)&qp->check);
    int rc = tdm_pooler_create(engine, max_batch_tasks, max_batch_pairs, on_finished, on_batch, qp, &qp->pooler);
    if (rc != TDM_OK) {
        tdm_query_pool_stop(qp); /* frees through the close callback */
        return rc;
    }
    tdm_pooler_set_batch_end(qp->pooler, on_batch_end);
    *out = qp;
    return TDM_OK;
}

void tdm_query_pool_submit(tdm_query_pool *qp, tdm_query_job *job)
{
    qp->pending++;
    /* the pooler refuses jobs only once stopped, which the server does after its last connection
     * is gone; should one come anyway, it is answered as an engine failure */
    int rc = tdm_pooler_submit(qp->pooler, &job->pool);
    if (rc != TDM_OK) {
        job->pool.rc = TDM_ECANCELED;
        hand_back(qp, job);
    }
}

size_t tdm_query_pool_pending(const tdm_query_pool *qp) { return qp->pending; }

void tdm_query_pool_set_fairness(tdm_query_pool *qp, const tdm_pooler_fairness *f)
{
    tdm_pooler_set_fairness(qp->pooler, f);
}

void tdm_query_pool_get_stats(tdm_query_pool *qp, tdm_pooler_stats *s)
{
    if (qp->pooler) tdm_pooler_get_stats(qp->pooler, s);
    else *s = (tdm_pooler_stats){0, 0, 0, 0, 0};
}

static void on_closed(uv_handle_t *h)
{
    tdm_query_pool *qp = h->data;
    if (--qp->handles_open) return;
    pthread_mutex_destroy(&qp->lock);
    free(qp);
}

void tdm_query_pool_stop(tdm_query_pool *qp)
{
    if (!qp) return;
    tdm_pooler_destroy(qp->pooler); /* runs and finishes what is queued, joins */
    qp->pooler = NULL;
    on_async(&qp->async);
    uv_close((uv_handle_t *)&qp->async, on_closed);
    uv_close((uv_handle_t *)&qp->prepare, on_closed);
    uv_close((uv_handle_t *)&qp->check, on_closed);
}
