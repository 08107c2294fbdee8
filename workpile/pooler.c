#include "pooler.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define MAX_THREADS 8

/* A pooler thread and its scratch (the batch's query list and, for batches of
 * several jobs, its results), kept between batches and grown when one needs more. */
typedef struct worker {
    struct tdm_pooler *p;
    pthread_t thread;
    tdm_sched_query *queries;
    tdm_sched_result *results;
    size_t cap;
} worker;

/* Invariant: every job submitted is on the queue, in a batch being run, or
 * finished; `pending` counts the first two. Once `stopping` is set nothing is
 * queued any more, and the threads leave when the queue is empty. */
struct tdm_pooler {
    tdm_sched *engine;
    uint64_t max_tasks, max_pairs;
    void (*finished)(tdm_pooler_job *, void *);
    void (*ran)(const tdm_pooler_batch *, void *);
    void *data;
    worker workers[MAX_THREADS]; /* one per engine lane: that many batches run at once */
    int n_threads;               /* started */
    int stopped;                 /* joined */
    int trace;                   /* TDM_DISPATCH_TRACE set: a line per batch on stderr */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    /* under lock */
    tdm_pooler_job *head, *tail;
    int stopping;
    size_t pending;
    tdm_pooler_stats stats;
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* A job's weight against the batch cap: its tasks, or its queries for scenes
 * without checked pairs (which cost nothing but still take scratch). */
static uint64_t weight(const tdm_pooler_job *j) { return j->n_tasks > j->n_queries ? j->n_tasks : j->n_queries; }

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
typedef struct batch_times { double gather, engine, fold, finished; } batch_times;

/* Runs one batch (jobs linked through next, the last one's next NULL) and
 * counts it; then the hook and the jobs' `finished`. */
static void run_batch(worker *w, tdm_pooler_job *batch, tdm_pooler_batch *b, batch_times *bt)
{
    tdm_pooler *p = w->p;
    double t = p->trace ? now_ms() : 0, t1;
    int rc = reserve(w, b->queries);
    if (rc == TDM_OK) {
        size_t k = 0;
        for (tdm_pooler_job *j = batch; j; j = j->next) {
            uint32_t m = j->scene->n_movable;
            for (uint32_t i = 0; i < j->n_queries; i++, k++)
                w->queries[k] = (tdm_sched_query){j->scene, j->poses + (size_t)i * m, j->mode, j->max_contacts,
                                                  j->pairs ? j->pairs + (size_t)i * j->max_contacts : NULL};
        }
        /* a batch of one job writes its results in place */
        tdm_sched_result *res = batch->next ? w->results : batch->results;
        if (p->trace) bt->gather = (t1 = now_ms()) - t, t = t1;
        rc = tdm_sched_run(p->engine, w->queries, b->queries, res);
        if (p->trace) bt->engine = (t1 = now_ms()) - t, t = t1;
        if (rc == TDM_OK && batch->next) {
            k = 0;
            for (tdm_pooler_job *j = batch; j; j = j->next) {
                memcpy(j->results, res + k, j->n_queries * sizeof *res);
                k += j->n_queries;
            }
        }
        if (p->trace) bt->fold = (t1 = now_ms()) - t, t = t1;
    }
    b->rc = rc;

    pthread_mutex_lock(&p->lock);
    p->stats.batches++;
    p->stats.jobs += b->jobs;
    p->stats.queries += b->queries;
    p->stats.tasks += b->tasks;
    pthread_mutex_unlock(&p->lock);

    if (p->ran) p->ran(b, p->data);
    for (tdm_pooler_job *j = batch, *next; j; j = next) {
        next = j->next; /* the job is the caller's once `finished` has it */
        j->next = NULL;
        j->rc = rc;
        p->finished(j, p->data);
    }
    if (p->trace) bt->finished = now_ms() - t;
}

static void *pooler_main(void *arg)
{
    prctl(PR_SET_NAME, "tdm-dispatch"); /* shown by top -H and in /proc */
    worker *w = arg;
    tdm_pooler *p = w->p;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        double t_idle = p->trace ? now_ms() : 0;
        while (!p->head && !p->stopping) pthread_cond_wait(&p->wake, &p->lock);
        if (!p->head) break; /* stopping, and the queue is empty */
        /* jobs cancelled while they waited at the head of the queue are finished unrun,
           outside the lock (those further back, when they come to the head) */
        if (tdm_pooler_job_cancelled(p->head)) {
            tdm_pooler_job *dropped = p->head, *end = dropped;
            size_t n_dropped = 1;
            while (end->next && tdm_pooler_job_cancelled(end->next)) end = end->next, n_dropped++;
            p->head = end->next;
            if (!p->head) p->tail = NULL;
            end->next = NULL;
            p->stats.cancelled += n_dropped;
            pthread_mutex_unlock(&p->lock);
            for (tdm_pooler_job *j = dropped, *next; j; j = next) {
                next = j->next;
                j->next = NULL;
                j->rc = TDM_ECANCELED;
                p->finished(j, p->data);
            }
            pthread_mutex_lock(&p->lock);
            p->pending -= n_dropped;
            continue;
        }
        /* take everything queued, up to the caps, first come first served */
        tdm_pooler_job *batch = p->head, *last = batch;
        tdm_pooler_batch b = {(int)(w - p->workers), 1, batch->n_queries, batch->n_tasks, weight(batch),
                              batch->pairs_reserved, TDM_OK};
        while (last->next && !tdm_pooler_job_cancelled(last->next) && b.weight + weight(last->next) <= p->max_tasks &&
               b.pairs + last->next->pairs_reserved <= p->max_pairs) {
            last = last->next;
            b.weight += weight(last);
            b.pairs += last->pairs_reserved;
            b.tasks += last->n_tasks;
            b.queries += last->n_queries;
            b.jobs++;
        }
        p->head = last->next;
        if (!p->head) p->tail = NULL;
        else pthread_cond_signal(&p->wake); /* more than the cap was queued: another thread takes the rest */
        last->next = NULL;
        pthread_mutex_unlock(&p->lock);

        double t0 = p->trace ? now_ms() : 0;
        batch_times bt = {0, 0, 0, 0};
        run_batch(w, batch, &b, &bt);
        if (p->trace)
            fprintf(stderr,
                    "dispatch %d: waited %.3f ms, %zu jobs, %zu queries, ran %.3f ms, at %.3f (gather %.3f, engine "
                    "%.3f, results %.3f, replies %.3f)\n",
                    b.thread, t0 - t_idle, b.jobs, b.queries, now_ms() - t0, t0, bt.gather, bt.engine, bt.fold,
                    bt.finished);

        pthread_mutex_lock(&p->lock);
        p->pending -= b.jobs;
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int tdm_pooler_create(tdm_sched *engine, uint64_t max_batch_tasks, uint64_t max_batch_pairs,
                      void (*finished)(tdm_pooler_job *job, void *data),
                      void (*ran)(const tdm_pooler_batch *batch, void *data), void *data, tdm_pooler **out)
{
    *out = NULL;
    if (!engine || !finished) return TDM_EINVAL;
    tdm_pooler *p = calloc(1, sizeof *p);
    if (!p) return TDM_ENOMEM;
    p->engine = engine;
    p->max_tasks = max_batch_tasks ? max_batch_tasks : 1;
    p->max_pairs = max_batch_pairs;
    p->finished = finished;
    p->ran = ran;
    p->data = data;
    p->trace = getenv("TDM_DISPATCH_TRACE") != NULL;
    int locks = 0;
    if (pthread_mutex_init(&p->lock, NULL) != 0) goto fail;
    locks = 1;
    if (pthread_cond_init(&p->wake, NULL) != 0) goto fail;
    locks = 2;
    int n = tdm_sched_lanes(engine);
    if (n > MAX_THREADS) n = MAX_THREADS;
    if (n < 1) n = 1;
    for (int k = 0; k < n; k++) {
        p->workers[k].p = p;
        if (pthread_create(&p->workers[k].thread, NULL, pooler_main, &p->workers[k]) != 0) goto fail;
        p->n_threads = k + 1;
    }
    *out = p;
    return TDM_OK;
fail:
    if (locks == 2) {
        tdm_pooler_destroy(p); /* nothing was submitted: joins the threads started, frees */
        return TDM_ESYS;
    }
    if (locks == 1) pthread_mutex_destroy(&p->lock);
    free(p);
    return TDM_ESYS;
}

int tdm_pooler_submit(tdm_pooler *p, tdm_pooler_job *job)
{
    job->next = NULL;
    job->rc = TDM_OK;
    pthread_mutex_lock(&p->lock);
    if (p->stopping) {
        pthread_mutex_unlock(&p->lock);
        return TDM_EINVAL;
    }
    if (p->tail) p->tail->next = job;
    else p->head = job;
    p->tail = job;
    p->pending++;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    return TDM_OK;
}

size_t tdm_pooler_pending(tdm_pooler *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->pending;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void tdm_pooler_get_stats(tdm_pooler *p, tdm_pooler_stats *s)
{
    pthread_mutex_lock(&p->lock);
    *s = p->stats;
    pthread_mutex_unlock(&p->lock);
}

int tdm_pooler_threads(const tdm_pooler *p) { return p->n_threads; }

void tdm_pooler_stop(tdm_pooler *p)
{
    if (!p || p->stopped) return;
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int k = 0; k < p->n_threads; k++) pthread_join(p->workers[k].thread, NULL);
    p->stopped = 1;
}

void tdm_pooler_destroy(tdm_pooler *p)
{
    if (!p) return;
    tdm_pooler_stop(p);
    for (int k = 0; k < MAX_THREADS; k++) {
        free(p->workers[k].queries);
        free(p->workers[k].results);
    }
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
