#include "query_pool.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "log.h"

struct tdm_query_pool {
    uv_async_t async; /* first: the close callback casts back */
    tdm_pooler *pooler;
    void (*ran)(tdm_query_job *, void *);
    void (*done)(tdm_query_job *, void *);
    void *data;
    pthread_mutex_t lock;
    tdm_query_job *done_head, *done_tail; /* finished, under lock */
    size_t pending;                       /* loop thread */
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

/* Any thread: queues a finished job for the loop and wakes it. */
static void hand_back(tdm_query_pool *qp, tdm_query_job *j)
{
    j->next = NULL;
    pthread_mutex_lock(&qp->lock);
    if (qp->done_tail) qp->done_tail->next = j;
    else qp->done_head = j;
    qp->done_tail = j;
    pthread_mutex_unlock(&qp->lock);
    uv_async_send(&qp->async);
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
    hand_back(qp, j);
}

static void on_async(uv_async_t *h)
{
    tdm_query_pool *qp = (tdm_query_pool *)h;
    pthread_mutex_lock(&qp->lock);
    tdm_query_job *j = qp->done_head;
    qp->done_head = qp->done_tail = NULL;
    pthread_mutex_unlock(&qp->lock);
    while (j) {
        tdm_query_job *next = j->next;
        j->next = NULL;
        qp->pending--;
        tdm_metrics_mark outer = tdm_metrics_enter(&j->mark);
        qp->done(j, qp->data);
        tdm_metrics_leave(outer);
        j = next;
    }
}

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
    int rc = tdm_pooler_create(engine, max_batch_tasks, max_batch_pairs, on_finished, on_batch, qp, &qp->pooler);
    if (rc != TDM_OK) {
        tdm_query_pool_stop(qp); /* frees through the close callback */
        return rc;
    }
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
    tdm_query_pool *qp = (tdm_query_pool *)h;
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
}
