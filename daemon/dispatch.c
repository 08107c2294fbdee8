#include "dispatch.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define MAX_WORKERS 8

/* A dispatcher thread and its scratch. */
typedef struct worker {
    struct tdm_dispatch *d;
    pthread_t thread;
    tdm_sched_query *queries;
    tdm_sched_result *results;
    size_t cap;
} worker;

struct tdm_dispatch {
    uv_async_t async; /* first: the close callback casts back */
    tdm_sched *engine;
    uint64_t max_tasks, max_pairs;
    void (*ran)(tdm_query_job *, void *);
    void (*done)(tdm_query_job *, void *);
    void *data;
    worker workers[MAX_WORKERS]; /* one per engine lane: that many batches run at once */
    int started;                 /* threads running */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    tdm_query_job *head, *tail;           /* submitted, under lock */
    tdm_query_job *done_head, *done_tail; /* finished, under lock */
    int stopping;
    tdm_dispatch_stats stats;             /* under lock */
    size_t pending;                       /* loop thread */
    int trace;                            /* TDM_DISPATCH_TRACE set: a line per batch on stderr */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* A job's weight against the batch cap: its tasks, or its queries for scenes
 * without checked pairs (which cost nothing but still take scratch). */
static uint64_t weight(const tdm_query_job *j) { return j->n_tasks > j->n_queries ? j->n_tasks : j->n_queries; }

static int reserve(worker *w, size_t n)
{
    if (n <= w->cap) return TDM_OK;
    size_t c = w->cap ? w->cap : 256;
    while (c < n) c *= 2;
    tdm_sched_query *q = realloc(w->queries, c * sizeof *q);
    if (!q) return TDM_ENOMEM;
    w->queries = q;
    tdm_sched_result *r = realloc(w->results, c * sizeof *r);
    if (!r) return TDM_ENOMEM;
    w->results = r;
    w->cap = c;
    return TDM_OK;
}

/* What a batch's parts took, for TDM_DISPATCH_TRACE (ms). */
typedef struct batch_times { double gather, engine, fold, ran; } batch_times;

static void run_batch(worker *w, tdm_query_job *batch, size_t n_queries, batch_times *bt)
{
    double t = w->d->trace ? now_ms() : 0, t1;
    int rc = reserve(w, n_queries);
    if (rc == TDM_OK) {
        size_t k = 0;
        for (tdm_query_job *j = batch; j; j = j->next) {
            uint32_t m = j->scene->n_movable;
            for (uint32_t i = 0; i < j->n_queries; i++, k++)
                w->queries[k] = (tdm_sched_query){j->scene, j->poses + (size_t)i * m, j->mode, j->max_contacts,
                                            j->pairs ? j->pairs + (size_t)i * j->max_contacts : NULL};
        }
        /* a batch of one job writes its results in place */
        tdm_sched_result *res = batch->next ? w->results : batch->results;
        if (w->d->trace) bt->gather = (t1 = now_ms()) - t, t = t1;
        rc = tdm_sched_run(w->d->engine, w->queries, n_queries, res);
        if (w->d->trace) bt->engine = (t1 = now_ms()) - t, t = t1;
        if (rc == TDM_OK && batch->next) {
            k = 0;
            for (tdm_query_job *j = batch; j; j = j->next) {
                memcpy(j->results, res + k, j->n_queries * sizeof *res);
                k += j->n_queries;
            }
        }
        if (w->d->trace) bt->fold = (t1 = now_ms()) - t, t = t1;
    }
    if (rc != TDM_OK) tdm_log_error("engine run of %zu queries failed: %s", n_queries, tdm_strerror(rc));
    for (tdm_query_job *j = batch; j; j = j->next) {
        j->rc = rc;
        if (w->d->ran) w->d->ran(j, w->d->data);
    }
    if (w->d->trace) bt->ran = now_ms() - t;
}

static void *dispatch_main(void *arg)
{
    prctl(PR_SET_NAME, "tdm-dispatch"); /* shown by top -H and in /proc */
    worker *w = arg;
    tdm_dispatch *d = w->d;
    pthread_mutex_lock(&d->lock);
    for (;;) {
        double t_idle = d->trace ? now_ms() : 0;
        while (!d->head && !d->stopping) pthread_cond_wait(&d->wake, &d->lock);
        if (!d->head) break; /* stopping, and the queue is empty */
        /* take everything queued, up to the caps, first come first served */
        tdm_query_job *batch = d->head, *last = batch;
        uint64_t wt = weight(batch), pairs = batch->pairs_reserved, tasks = batch->n_tasks;
        size_t nq = batch->n_queries, n_jobs = 1;
        while (last->next && wt + weight(last->next) <= d->max_tasks &&
               pairs + last->next->pairs_reserved <= d->max_pairs) {
            last = last->next;
            wt += weight(last);
            pairs += last->pairs_reserved;
            tasks += last->n_tasks;
            nq += last->n_queries;
            n_jobs++;
        }
        d->head = last->next;
        if (!d->head) d->tail = NULL;
        else pthread_cond_signal(&d->wake); /* more than the cap was queued: another thread takes the rest */
        last->next = NULL;
        pthread_mutex_unlock(&d->lock);

        double t0 = d->trace ? now_ms() : 0;
        batch_times bt = {0, 0, 0, 0};
        run_batch(w, batch, nq, &bt);
        if (d->trace)
            fprintf(stderr,
                    "dispatch %d: waited %.3f ms, %zu jobs, %zu queries, ran %.3f ms, at %.3f (gather %.3f, engine "
                    "%.3f, results %.3f, replies %.3f)\n",
                    (int)(w - d->workers), t0 - t_idle, n_jobs, nq, now_ms() - t0, t0, bt.gather, bt.engine, bt.fold,
                    bt.ran);

        pthread_mutex_lock(&d->lock);
        if (d->done_tail) d->done_tail->next = batch;
        else d->done_head = batch;
        d->done_tail = last;
        d->stats.batches++;
        d->stats.jobs += n_jobs;
        d->stats.queries += nq;
        d->stats.tasks += tasks;
        uv_async_send(&d->async);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

static void on_async(uv_async_t *h)
{
    tdm_dispatch *d = (tdm_dispatch *)h;
    pthread_mutex_lock(&d->lock);
    tdm_query_job *j = d->done_head;
    d->done_head = d->done_tail = NULL;
    pthread_mutex_unlock(&d->lock);
    while (j) {
        tdm_query_job *next = j->next;
        j->next = NULL;
        d->pending--;
        d->done(j, d->data);
        j = next;
    }
}

int tdm_dispatch_create(uv_loop_t *loop, tdm_sched *engine, uint64_t max_batch_tasks, uint64_t max_batch_pairs,
                        void (*ran)(tdm_query_job *job, void *data), void (*done)(tdm_query_job *job, void *data),
                        void *data, tdm_dispatch **out)
{
    *out = NULL;
    tdm_dispatch *d = calloc(1, sizeof *d);
    if (!d) return TDM_ENOMEM;
    d->engine = engine;
    d->max_tasks = max_batch_tasks ? max_batch_tasks : 1;
    d->max_pairs = max_batch_pairs;
    d->ran = ran;
    d->done = done;
    d->data = data;
    d->trace = getenv("TDM_DISPATCH_TRACE") != NULL;
    if (pthread_mutex_init(&d->lock, NULL) != 0) {
        free(d);
        return TDM_ESYS;
    }
    if (pthread_cond_init(&d->wake, NULL) != 0) {
        pthread_mutex_destroy(&d->lock);
        free(d);
        return TDM_ESYS;
    }
    if (uv_async_init(loop, &d->async, on_async) != 0) {
        pthread_cond_destroy(&d->wake);
        pthread_mutex_destroy(&d->lock);
        free(d);
        return TDM_ESYS;
    }
    int n = tdm_sched_lanes(engine);
    if (n > MAX_WORKERS) n = MAX_WORKERS;
    for (int k = 0; k < n; k++) {
        d->workers[k].d = d;
        if (pthread_create(&d->workers[k].thread, NULL, dispatch_main, &d->workers[k]) != 0) {
            tdm_dispatch_stop(d); /* frees through the close callback */
            return TDM_ESYS;
        }
        d->started = k + 1;
    }
    *out = d;
    return TDM_OK;
}

void tdm_dispatch_submit(tdm_dispatch *d, tdm_query_job *job)
{
    job->next = NULL;
    d->pending++;
    pthread_mutex_lock(&d->lock);
    if (d->tail) d->tail->next = job;
    else d->head = job;
    d->tail = job;
    pthread_cond_signal(&d->wake);
    pthread_mutex_unlock(&d->lock);
}

size_t tdm_dispatch_pending(const tdm_dispatch *d) { return d->pending; }

void tdm_dispatch_get_stats(tdm_dispatch *d, tdm_dispatch_stats *s)
{
    pthread_mutex_lock(&d->lock);
    *s = d->stats;
    pthread_mutex_unlock(&d->lock);
}

static void on_closed(uv_handle_t *h)
{
    tdm_dispatch *d = (tdm_dispatch *)h;
    for (int k = 0; k < MAX_WORKERS; k++) {
        free(d->workers[k].queries);
        free(d->workers[k].results);
    }
    pthread_cond_destroy(&d->wake);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

void tdm_dispatch_stop(tdm_dispatch *d)
{
    if (!d) return;
    if (d->started) {
        pthread_mutex_lock(&d->lock);
        d->stopping = 1;
        pthread_cond_broadcast(&d->wake);
        pthread_mutex_unlock(&d->lock);
        for (int k = 0; k < d->started; k++) pthread_join(d->workers[k].thread, NULL);
        d->started = 0;
    }
    on_async(&d->async);
    uv_close((uv_handle_t *)&d->async, on_closed);
}
