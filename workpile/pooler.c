#include "pooler.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#define MAX_THREADS 64 /* tdm_sched_lanes: 8 lanes x 8 GPU engines at most */
#define MAX_HOST 8      /* tdm_sched_host_lanes */
#define MAX_EXPRESS 4   /* express threads (TDM_EXPRESS_THREADS) */
#define MAX_FLIGHTS 8   /* an async lane's batches in flight (a lane's slots at most) */
#define RECLAIM_RETRY_NS 10000000L /* an idle thread's next try at freeing removed trees' copies, when an
                                      engine's lanes were all running (tdm_sched_reclaim) */

/* A pooler thread and its scratch (the batch's query list and, for batches of
 * several jobs, its results), kept between batches and grown when one needs more. */
typedef struct worker {
    struct tdm_pooler *p;
    pthread_t thread;
    int host;        /* a host thread: host jobs only, each alone (tdm_pooler_set_host) */
    tdm_sched_query *queries;
    tdm_sched_result *results;
    size_t cap;
    double *configs; /* pooled jobs of configurations, side by side */
    size_t configs_cap;
    tdm_sched_configs_group *groups; /* ... by robot scene */
    size_t groups_cap;
    /* an async lane (TDM_ASYNC_LANES): its batches of configurations in flight on the device */
    tdm_sched_async *async;
    struct flight {
        int used;
        tdm_pooler_job *batch;
        tdm_pooler_batch b;
        tdm_sched_result *res; /* a batch of several jobs: its results side by side, then copied */
        size_t res_cap;
        double t0;
    } flights[MAX_FLIGHTS];
} worker;

/* How the threads of one kind (kind[0]: the lanes', kind[1]: the host threads'; a job's
 * `host` says which kind takes it) wait for work and are woken. */
typedef struct waiters {
    pthread_cond_t wake;
    uint64_t queued_gen; /* atomic: bumped whenever a job of this kind is submitted or queued (what
                            polling threads watch) */
    int sleepers;        /* threads in pthread_cond_wait: written under the lock, read atomically by
                            tdm_pooler_submit */
    int spinners;        /* atomic: threads polling for work that take any job of the kind (spin_for_work) */
    int waking;          /* atomic: a submitter's broadcast not yet seen by a sleeper */
} waiters;

/* A queue of jobs, oldest first. */
typedef struct queue { tdm_pooler_job *head, *tail; } queue;

static void queue_push(queue *q, tdm_pooler_job *j)
{
    j->next = NULL;
    if (q->tail) q->tail->next = j;
    else q->head = j;
    q->tail = j;
}

/* Invariant: every job submitted is in the inbox, on a queue, in a batch being
 * run, or finished; `pending` counts the first three. Once `stopping` is set
 * nothing is submitted any more, and the threads leave when nothing is pending.
 *
 * Submitting takes no lock: a job is pushed onto the inbox (a lock-free stack),
 * which the threads move onto the queues, in submission order, under the lock.
 * The submitter (tandemd's loop thread, for every request) would otherwise meet
 * the threads on the lock as they take batches and as they stop spinning for
 * work, and each such meeting is a system call on each side (on the H100 host,
 * two futex calls a request on the loop: bench/results/ompl_resident.md). */
struct tdm_pooler {
    tdm_sched *engine;
    uint64_t max_tasks, max_pairs;
    tdm_pooler_fairness fair;
    void (*finished)(tdm_pooler_job *, void *);
    void (*ran)(const tdm_pooler_batch *, void *);
    void (*batch_end)(void *);
    void *data;
    worker workers[MAX_THREADS + MAX_HOST]; /* one per engine lane (that many batches run at once), then
                                               the host threads */
    int n_threads;               /* started, of the first kind */
    int n_host;                  /* host threads started (workers[MAX_THREADS ..]) */
    uint32_t host_configs;       /* jobs of at most this many configurations go to them (0: none) */
    int stopped;                 /* joined */
    int trace;                   /* TDM_DISPATCH_TRACE set: a line per batch on stderr */
    int configs_on_device;       /* the engine runs configurations on the device: pool jobs of them */
    pthread_mutex_t lock;
    waiters kind[2];             /* the lanes' threads, the host threads */
    uint64_t spin_ns;            /* an idle thread polls this long for work before it sleeps (0: never) */
    int poll_yield;              /* TDM_POLL_YIELD=1 (A/B runs): a polling thread yields its core every few us */
    int async_lanes;             /* TDM_ASYNC_LANES=1 (A/B runs): each lane's thread keeps several device runs of
                                    configurations in flight (tdm_sched_async) instead of waiting for each */
    tdm_pooler_job *inbox;       /* atomic: submitted, not yet queued; newest first */
    int host_waiting;            /* atomic: host jobs submitted and not yet taken (at most n_host + host_extra) */
    int host_extra;              /* TDM_HOST_QUEUE (measurements): that many more may wait (0) */
    uint32_t host_min;           /* TDM_HOST_MIN_CONFIGS (A/B runs): jobs of fewer configurations do not go to
                                    them (1: any; 2: a planner's single states go to the express ring, leaving
                                    the host threads to motions' probe rounds) */
    int stopping;
    size_t pending;              /* atomic: tdm_pooler_submit adds without the lock */
    /* under lock */
    queue small;                 /* jobs the latency lane may take (fairness) */
    /* the others: a queue per owner (tdm_pooler_owner), the owners with jobs queued in a heap by
       their heads' virtual start tags (tdm_pooler_set_share) */
    int share;                   /* jobs queued by their owner (else all as the pooler's own: in order) */
    int reclaim;                 /* idle lane threads free removed trees' copies (TDM_POOLER_RECLAIM=0: not, an
                                    A/B switch: each engine's next run or upload does) */
    tdm_pooler_owner anon;       /* the owner of jobs without one (and of all, without shares) */
    tdm_pooler_owner **heap;     /* heap_n owners, the least tag first; room for heap_cap, one kept spare
                                    for anon */
    size_t heap_n, heap_cap;
    uint64_t vtime;              /* the virtual time: the start tag of the batch taken last */
    queue host;                  /* jobs for the host threads */
    uint64_t seq;
    tdm_pooler_stats stats;
    /* the express ring (tdm_pooler_set_express) */
    uint32_t express_configs;    /* jobs of at most this many configurations go to it (0: none) */
    int express_any_cost;        /* TDM_EXPRESS_ANY_COST=1 (A/B runs): the ring takes them whatever their
                                    scene's learned cost (by default only within the small jobs' work) */
    int express_polled;          /* the submitters poll the ring (tdm_pooler_set_express_polled) */
    int x_started;               /* express threads running (TDM_EXPRESS_THREADS, 1 by default) */
    uint32_t x_next;             /* atomic: the express thread the next job goes to (in turn) */
    struct xworker {
        tdm_pooler *p;
        pthread_t thread;
        tdm_pooler_job *inbox;   /* atomic: published into the ring, not yet seen by this thread */
        int sleeping, woken;     /* atomic; woken under lock */
        pthread_mutex_t lock;
        pthread_cond_t wake;
    } xw[MAX_EXPRESS];
};

static void express_wake(struct xworker *w);
static int express_settle(tdm_pooler *p, tdm_pooler_job *j, int rc);
static void express_over(tdm_pooler *p, uint32_t queries, int ran);

/* How long an idle pooler thread polls for work before it sleeps, with a device engine. */
#define POOLER_SPIN_NS 200000u

tdm_pooler_fairness tdm_pooler_fairness_default(void) { return (tdm_pooler_fairness){0, 256, 1u << 18}; }

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* The tasks of one of a job's queries (every query of a job has the same). */
static uint64_t tasks_per_query(const tdm_pooler_job *j) { return j->n_queries ? j->n_tasks / j->n_queries : 0; }

/* A job's weight against the batch cap: the tasks of the queries it has left,
 * or those queries for scenes without checked pairs (which cost nothing but
 * still take scratch). */
/* What a query of the job weighs against the batch cap and the slice: its tasks;
 * for configurations run on the device, an eighth of them, as culling there
 * keeps about a tenth of a robot's checks before any task is listed
 * (bench/results/robot_configs_gpu.md) and the device's runs size themselves by
 * the tasks kept (workpile/gpu_engine.h). */
#define DEVICE_CONFIG_SHARE 8
static uint64_t load_per_query(const tdm_pooler *p, const tdm_pooler_job *j)
{
    uint64_t per = tasks_per_query(j);
    return j->configs && p->configs_on_device ? (per + DEVICE_CONFIG_SHARE - 1) / DEVICE_CONFIG_SHARE : per;
}

static uint64_t weight(const tdm_pooler *p, const tdm_pooler_job *j)
{
    uint64_t q = j->n_queries - j->done, t = q * load_per_query(p, j);
    return t > q ? t : q;
}

/* Queries of the job's next turn: what it has left, or a slice of it. */
static uint32_t turn_of(const tdm_pooler *p, const tdm_pooler_job *j)
{
    uint32_t left = j->n_queries - j->done;
    uint64_t per = load_per_query(p, j), slice = p->fair.slice_tasks ? p->fair.slice_tasks : p->max_tasks;
    if (per == 0 || (uint64_t)left * per <= slice) return left;
    uint64_t q = slice / per;
    return q < 1 ? 1 : (uint32_t)q;
}

/* What the job's scene has cost lately, per task (0: not known). The scene is
 * the caller's and const to the pooler, but cost_hint is a learned figure the
 * pooler owns, read and written atomically. */
static uint64_t *cost_hint(const tdm_pooler_job *j) { return &((tdm_scene *)j->scene)->cost_hint; }

/* Within the latency lane's budget, by what the job's scene has cost lately (so for
 * all we know when that is not known)? */
static int within_small_work(const tdm_pooler *p, const tdm_pooler_job *j)
{
    uint64_t c = __atomic_load_n(cost_hint(j), __ATOMIC_RELAXED), t = (uint64_t)j->n_queries * tasks_per_query(j);
    return !p->fair.latency_work || !c || !t || t <= p->fair.latency_work / c;
}

/* Unlinks the head of q (lock held); a host job stops counting in host_waiting. */
static tdm_pooler_job *queue_pop(tdm_pooler *p, queue *q)
{
    tdm_pooler_job *j = q->head;
    q->head = j->next;
    if (!q->head) q->tail = NULL;
    j->next = NULL;
    if (q == &p->host) __atomic_sub_fetch(&p->host_waiting, 1, __ATOMIC_RELAXED);
    return j;
}

/* Is the job small, for the latency lane: few tasks, and, from what its scene
 * has cost lately, within the lane's budget? */
static int is_small(const tdm_pooler *p, const tdm_pooler_job *j)
{
    uint64_t w = weight(p, j), c = __atomic_load_n(cost_hint(j), __ATOMIC_RELAXED);
    if (p->fair.latency_tasks == 0 || w > p->fair.latency_tasks) return 0;
    return !p->fair.latency_work || !c || w <= p->fair.latency_work / c;
}

/* Learns the scene's cost from a turn: the tests counted over its tasks (a
 * turn the latency lane cut short cost at least the lane's budget), blended
 * with what was known. */
static void learn_cost(tdm_pooler_job *j, uint64_t used, int cut)
{
    uint64_t tasks = (uint64_t)j->turn * tasks_per_query(j);
    if (!tasks || (!used && !cut)) return; /* not counted: a GPU engine ran it */
    /* cut short, it would have cost more than it did: at least twice as much, so that
       the same job is not small the next time */
    uint64_t est = (cut ? 2 * used : used) / tasks + 1, *h = cost_hint(j), old = __atomic_load_n(h, __ATOMIC_RELAXED);
    uint64_t next = cut ? (est > old ? est : old) : (old ? (3 * old + est) / 4 : est);
    __atomic_store_n(h, next, __ATOMIC_RELAXED);
}

/* ---- the lanes' queue: a queue per owner, served by virtual start tag ---- */

/* Owners looked at for jobs to join a batch, besides the one whose turn it is: bounds a
 * take's time under the lock however many clients have work queued. */
#define SHARE_VISIT 256

/* What the job's next turn weighs against the caps: its tag's increment. */
static uint64_t turn_weight(const tdm_pooler *p, const tdm_pooler_job *j)
{
    uint64_t q = turn_of(p, j), t = q * load_per_query(p, j);
    return t > q ? t : q;
}

/* Is owner a's head due before b's: the lesser tag, then the older. */
static int owner_before(const tdm_pooler_owner *a, const tdm_pooler_owner *b)
{
    return a->head->tag != b->head->tag ? a->head->tag < b->head->tag : a->head->seq < b->head->seq;
}

static void heap_set(tdm_pooler *p, size_t i, tdm_pooler_owner *o)
{
    p->heap[i] = o;
    o->heap_at = i + 1;
}

static void heap_up(tdm_pooler *p, size_t i)
{
    tdm_pooler_owner *o = p->heap[i];
    while (i > 0 && owner_before(o, p->heap[(i - 1) / 2])) {
        heap_set(p, i, p->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(p, i, o);
}

static void heap_down(tdm_pooler *p, size_t i)
{
    tdm_pooler_owner *o = p->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= p->heap_n) break;
        if (c + 1 < p->heap_n && owner_before(p->heap[c + 1], p->heap[c])) c++;
        if (!owner_before(p->heap[c], o)) break;
        heap_set(p, i, p->heap[c]);
        i = c;
    }
    heap_set(p, i, o);
}

/* Puts owner o (not in the heap; a head queued) into it (lock held; room for it). */
static void heap_push(tdm_pooler *p, tdm_pooler_owner *o)
{
    heap_set(p, p->heap_n++, o);
    heap_up(p, p->heap_n - 1);
}

/* Takes owner o out of the heap (lock held; its head unchanged since it went in or was
 * last placed). */
static void heap_remove(tdm_pooler *p, tdm_pooler_owner *o)
{
    size_t i = o->heap_at - 1;
    tdm_pooler_owner *moved = p->heap[--p->heap_n];
    o->heap_at = 0;
    if (moved == o) return; /* it was the last */
    heap_set(p, i, moved);
    heap_up(p, i);
    heap_down(p, moved->heap_at - 1);
}

/* Pops the first n jobs of owner o's queue (lock held; o out of the heap), linking them after
 * *last (the last one becomes *last); o goes back into the heap if it has jobs left. */
static void owner_pop(tdm_pooler *p, tdm_pooler_owner *o, size_t n, tdm_pooler_job **last)
{
    for (; n; n--) {
        tdm_pooler_job *j = o->head;
        o->head = j->next;
        if (*last) (*last)->next = j;
        *last = j;
    }
    if (o->head) heap_push(p, o);
    else o->tail = NULL;
}

/* Queues a job that the latency lane may not take (lock held) at the back of its owner's
 * queue, tagged. An owner that cannot get a place in the heap (no memory) has its jobs
 * queued as the pooler's own: served, in order, only not shared. */
static void owner_push(tdm_pooler *p, tdm_pooler_job *j)
{
    tdm_pooler_owner *o = p->share && j->owner ? j->owner : &p->anon;
    if (!o->heap_at && o != &p->anon && p->heap_n + 2 > p->heap_cap) { /* anon keeps its spare */
        size_t cap = 2 * p->heap_cap;
        tdm_pooler_owner **h = realloc(p->heap, cap * sizeof *h);
        if (h) {
            p->heap = h;
            p->heap_cap = cap;
        } else o = &p->anon;
    }
    j->tag = o->finish > p->vtime ? o->finish : p->vtime;
    o->finish = j->tag + turn_weight(p, j);
    j->next = NULL;
    if (o->tail) o->tail->next = j;
    else o->head = j;
    o->tail = j;
    if (!o->heap_at) heap_push(p, o);
}

/* Queues a job (lock held): a small one where the latency lane looks, unless
 * it already failed there. */
static void enqueue(tdm_pooler *p, tdm_pooler_job *j)
{
    __atomic_add_fetch(&p->kind[j->host].queued_gen, 1, __ATOMIC_RELEASE);
    if (p->trace) j->queued_ms = now_ms();
    j->seq = p->seq++;
    if (j->host) queue_push(&p->host, j);
    else if (j->small && !j->demoted) queue_push(&p->small, j);
    else owner_push(p, j);
}

/* Moves the inbox onto the queues, oldest first (lock held). */
static void drain_inbox(tdm_pooler *p)
{
    tdm_pooler_job *j = __atomic_exchange_n(&p->inbox, NULL, __ATOMIC_ACQUIRE), *fifo = NULL;
    while (j) { /* newest first: reversed */
        tdm_pooler_job *next = j->next;
        j->next = fifo;
        fifo = j;
        j = next;
    }
    while (fifo) {
        tdm_pooler_job *next = fifo->next;
        fifo->small = is_small(p, fifo);
        enqueue(p, fifo);
        fifo = next;
    }
}

static int inbox_empty(tdm_pooler *p) { return __atomic_load_n(&p->inbox, __ATOMIC_SEQ_CST) == NULL; }

static size_t pending_of(tdm_pooler *p) { return __atomic_load_n(&p->pending, __ATOMIC_SEQ_CST); }

/* Wakes every sleeping thread of both kinds (lock held): stopping, or nothing pending once
 * stopping, which is what they wait for then. */
static void wake_all(tdm_pooler *p)
{
    pthread_cond_broadcast(&p->kind[0].wake);
    pthread_cond_broadcast(&p->kind[1].wake);
}

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

/* After its turn: 1 when the job is done (rc set), 0 when it goes back on a
 * queue (the lock is taken to queue it). */
static int after_turn(tdm_pooler *p, tdm_pooler_job *j, int rc)
{
    if (rc != TDM_OK) {
        j->rc = rc;
        return 1;
    }
    if (j->rc != TDM_OK) return 1; /* its own error in a batch that ran (run_configs_pooled) */
    int verdict = tdm_work_verdict(&j->work);
    uint64_t used = __atomic_load_n(&j->work.used, __ATOMIC_RELAXED);
    learn_cost(j, used, verdict == TDM_EBUDGET);
    if (verdict == TDM_EBUDGET && j->latency_turn && !(j->max_work && used > j->max_work)) {
        /* over the latency lane's budget (or a host thread's), not its own: again, on the other
           lanes, from the start of the turn */
        __atomic_store_n(&j->work.over, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&j->work.used, 0, __ATOMIC_RELAXED);
        j->demoted = 1;
        j->host = 0;
    } else if (verdict != TDM_OK) {
        j->rc = verdict;
        return 1;
    } else {
        j->done += j->turn;
        if (j->done >= j->n_queries) return 1;
    }
    pthread_mutex_lock(&p->lock);
    enqueue(p, j);
    if (p->kind[j->host].sleepers) pthread_cond_broadcast(&p->kind[j->host].wake);
    pthread_mutex_unlock(&p->lock);
    return 0;
}

/* Pooled jobs' configurations side by side in w->configs, their groups in w->groups
 * (*n_groups); TDM_OK or TDM_ENOMEM. */
static int configs_gather(worker *w, tdm_pooler_job *batch, size_t n, size_t *n_groups_out)
{
    size_t J = batch->kin->n_q, n_jobs = 0;
    for (tdm_pooler_job *j = batch; j; j = j->next) n_jobs++;
    if (n * J > w->configs_cap) {
        double *c = realloc(w->configs, n * J * sizeof *c);
        if (!c) return TDM_ENOMEM;
        w->configs = c;
        w->configs_cap = n * J;
    }
    if (n_jobs > w->groups_cap) {
        tdm_sched_configs_group *g = realloc(w->groups, n_jobs * sizeof *g);
        if (!g) return TDM_ENOMEM;
        w->groups = g;
        w->groups_cap = n_jobs;
    }
    size_t k = 0, n_groups = 0;
    for (tdm_pooler_job *j = batch; j; k += j->turn, j = j->next) {
        memcpy(w->configs + k * J, j->configs + (size_t)j->done * J, (size_t)j->turn * J * sizeof *w->configs);
        if (n_groups && w->groups[n_groups - 1].scene == j->scene && w->groups[n_groups - 1].kin == j->kin)
            w->groups[n_groups - 1].n += j->turn;
        else
            w->groups[n_groups++] = (tdm_sched_configs_group){j->scene, j->kin, j->turn};
    }
    *n_groups_out = n_groups;
    return TDM_OK;
}

/* Pooled jobs' results from res, side by side, into each job's. */
static void results_scatter(tdm_pooler_job *batch, const tdm_sched_result *res)
{
    size_t k = 0;
    for (tdm_pooler_job *j = batch; j; k += j->turn, j = j->next)
        memcpy(j->results + j->done, res + k, j->turn * sizeof *res);
}

/* Each job of a batch of configurations alone, its error its own (the batch's rc stays TDM_OK
 * for the others; after_turn finishes a job whose rc is set): when the batch does not run on
 * the device, or a job's input is refused. */
static int configs_each(worker *w, tdm_pooler_job *batch)
{
    size_t J = batch->kin->n_q;
    tdm_sched_query proto = {batch->scene, NULL, batch->mode, batch->max_contacts, NULL, NULL};
    for (tdm_pooler_job *j = batch; j; j = j->next) {
        proto.scene = j->scene;
        proto.work = &j->work;
        int rc = tdm_sched_run_configs(w->p->engine, &proto, j->kin, j->configs + (size_t)j->done * J, j->turn,
                                       j->results + j->done);
        if (rc == TDM_ENOMEM) return rc;
        if (rc != TDM_OK) j->rc = rc;
    }
    return TDM_OK;
}

/* Jobs of configurations pooled (take, joins): side by side in one device run,
 * a group per run of jobs on the same scene (several planners' robot scenes in
 * one run), the answers copied back to each job; when it does not run on the
 * device, each job alone, against its own work account. */
static int run_configs_pooled(worker *w, tdm_pooler_job *batch, size_t n)
{
    size_t n_groups = 0;
    int rc = configs_gather(w, batch, n, &n_groups);
    if (rc != TDM_OK) return rc;
    rc = tdm_sched_run_configs_groups_device(w->p->engine, w->groups, n_groups, batch->mode, batch->max_contacts,
                                             w->configs, w->results);
    if (rc == TDM_OK) {
        results_scatter(batch, w->results);
        return TDM_OK;
    }
    if (rc != TDM_ENODEV && rc != TDM_EINVAL && rc != TDM_ENONFINITE) return rc;
    return configs_each(w, batch);
}

/* A batch's jobs made ready for the engine: their fills, their work limits, and the
 * query list of jobs of poses. TDM_OK or TDM_ENOMEM. */
static int batch_gather(worker *w, tdm_pooler_job *batch, const tdm_pooler_batch *b)
{
    tdm_pooler *p = w->p;
    int rc = reserve(w, b->queries);
    if (rc != TDM_OK) return rc;
    size_t k = 0;
    for (tdm_pooler_job *j = batch; j; j = j->next) {
        if (j->fill) {
            void (*fill)(tdm_pooler_job *) = j->fill;
            j->fill = NULL;
            fill(j);
        }
        uint32_t m = j->scene->n_movable;
        uint64_t limit = j->max_work;
        if (j->latency_turn && (!limit || p->fair.latency_work < limit)) limit = p->fair.latency_work;
        j->work.limit = limit;
        for (uint32_t i = j->done; i < j->done + j->turn && !j->configs; i++, k++)
            w->queries[k] = (tdm_sched_query){j->scene, j->poses + (size_t)i * m, j->mode, j->max_contacts,
                                              j->pairs ? j->pairs + (size_t)i * j->max_contacts : NULL, &j->work};
    }
    return TDM_OK;
}

/* A gathered batch on the engine, on this thread: its results written into its jobs' own, or,
 * for several jobs of poses, side by side in w->results (batch_scatter). */
static int batch_engine(worker *w, tdm_pooler_job *batch, const tdm_pooler_batch *b)
{
    tdm_pooler *p = w->p;
    /* a batch of one job writes its results in place */
    tdm_sched_result *res = batch->next ? w->results : batch->results + batch->done;
    int rc;
    if (w->host) { /* a host job: alone, on the CPU engine, on this thread */
        tdm_sched_query proto = {batch->scene, NULL, batch->mode, batch->max_contacts, NULL, &batch->work};
        rc = tdm_sched_run_configs_host(p->engine, &proto, batch->kin,
                                        batch->configs + (size_t)batch->done * batch->kin->n_q, batch->turn, res);
    } else if (batch->configs && batch->next) {
        return run_configs_pooled(w, batch, b->queries); /* answered in place */
    } else if (batch->configs) { /* alone: its configurations, not poses */
        tdm_sched_query proto = {batch->scene, NULL, batch->mode, batch->max_contacts, NULL, &batch->work};
        rc = tdm_sched_run_configs(p->engine, &proto, batch->kin,
                                   batch->configs + (size_t)batch->done * batch->kin->n_q, batch->turn, res);
    } else {
        rc = tdm_sched_run(p->engine, w->queries, b->queries, res);
    }
    return rc;
}

/* After batch_engine: the results of several jobs of poses into each job's (pooled jobs of
 * configurations are answered in place: run_configs_pooled). */
static void batch_scatter(worker *w, tdm_pooler_job *batch, int rc)
{
    if (rc == TDM_OK && batch->next && !batch->configs) results_scatter(batch, w->results);
}

/* After a batch ran (rc): counts it; then the hook, and `finished` for the jobs that are done
 * (the others are queued again). b->jobs becomes what leaves `pending`. */
static void batch_finish(worker *w, tdm_pooler_job *batch, tdm_pooler_batch *b, int rc)
{
    tdm_pooler *p = w->p;
    b->rc = rc;
    pthread_mutex_lock(&p->lock);
    p->stats.batches++;
    p->stats.jobs += b->jobs;
    p->stats.queries += b->queries;
    p->stats.tasks += b->tasks;
    pthread_mutex_unlock(&p->lock);

    if (p->ran) p->ran(b, p->data);
    size_t finished = 0;
    for (tdm_pooler_job *j = batch, *next; j; j = next) {
        next = j->next; /* the job is the caller's once `finished` has it */
        j->next = NULL;
        if (!after_turn(p, j, rc)) continue;
        finished++;
        p->finished(j, p->data);
    }
    if (p->batch_end) p->batch_end(p->data);
    b->jobs = finished;
}

/* Runs one batch (jobs linked through next, the last one's next NULL; each
 * job's `turn` queries from its `done` on) and counts it; then the hook, and
 * `finished` for the jobs that are done (the others are queued again). */
static void run_batch(worker *w, tdm_pooler_job *batch, tdm_pooler_batch *b, batch_times *bt)
{
    tdm_pooler *p = w->p;
    double t = p->trace ? now_ms() : 0, t1;
    int rc = batch_gather(w, batch, b);
    if (p->trace) bt->gather = (t1 = now_ms()) - t, t = t1;
    if (rc == TDM_OK) rc = batch_engine(w, batch, b);
    if (p->trace) bt->engine = (t1 = now_ms()) - t, t = t1;
    batch_scatter(w, batch, rc);
    if (p->trace) bt->fold = (t1 = now_ms()) - t, t = t1;
    batch_finish(w, batch, b, rc);
    if (p->trace) bt->finished = now_ms() - t;
}

/* The batch's jobs leave `pending` (lock held). */
static void batch_left(tdm_pooler *p, const tdm_pooler_batch *b)
{
    if (__atomic_sub_fetch(&p->pending, b->jobs, __ATOMIC_SEQ_CST) == 0 && p->stopping) wake_all(p);
}

/* Is thread w the latency lane: thread 0 of two or more, with the lane on? */
static int on_latency_lane(const tdm_pooler *p, const worker *w)
{
    return w == p->workers && p->n_threads > 1 && p->fair.latency_tasks > 0;
}

/* May job j join a batch that starts with `first`? Jobs of poses join each other;
 * jobs of configurations join only jobs of configurations with as many values
 * (any robot scene: each its own program in the device run), of the same mode
 * and cap, and only when the engine runs them on the device (one device run for
 * all: on the host each runs alone, against its own work account). */
static int joins(const tdm_pooler *p, const tdm_pooler_job *first, const tdm_pooler_job *j)
{
    if (!first->configs) return !j->configs;
    return j->configs && p->configs_on_device && j->kin->n_q == first->kin->n_q && j->mode == first->mode &&
           j->max_contacts == first->max_contacts;
}

/* The index a batch of worker w reports: the lanes' threads 0 .., then the host threads. */
static int thread_index(const tdm_pooler *p, const worker *w)
{
    return w->host ? p->n_threads + (int)(w - &p->workers[MAX_THREADS]) : (int)(w - p->workers);
}

/* May j (NULL: no) join the batch that starts with `first`, within the caps? If so it is
 * counted in b (its turn: all it has left, on the batch's lane). */
static int join_next(const tdm_pooler *p, const tdm_pooler_job *first, tdm_pooler_job *j, tdm_pooler_batch *b)
{
    if (!j || tdm_pooler_job_cancelled(j) || !joins(p, first, j) || turn_of(p, j) != j->n_queries - j->done ||
        b->weight + weight(p, j) > p->max_tasks || b->pairs + j->pairs_reserved > p->max_pairs)
        return 0;
    j->turn = j->n_queries - j->done;
    j->latency_turn = first->latency_turn;
    b->weight += weight(p, j);
    b->pairs += j->pairs_reserved;
    b->tasks += tasks_per_query(j) * j->turn;
    b->queries += j->turn;
    b->jobs++;
    return 1;
}

/* Takes the next batch for thread w (lock held), or NULL: the latency lane
 * (thread 0 of two or more) takes small jobs only; the others the older of the
 * small queue's head and the head of the owner whose turn it is (the least
 * tag). A batch is that job and, up to the caps, the compatible jobs behind it:
 * on the small queue; or in its owner's queue and then at the heads of the
 * other owners' (at most SHARE_VISIT looked at). A job over the slice runs
 * alone, one slice of it. A job given up (tdm_pooler_job_cancel) while queued
 * is finished by the caller without running. */
static tdm_pooler_job *take(tdm_pooler *p, worker *w, tdm_pooler_batch *b)
{
    if (w->host) { /* the oldest host job, alone and whole (a few configurations) */
        if (!p->host.head) return NULL;
        tdm_pooler_job *j = queue_pop(p, &p->host);
        j->turn = j->n_queries - j->done;
        j->latency_turn = 1; /* cut at the latency lane's budget, then the lanes' (after_turn) */
        *b = (tdm_pooler_batch){thread_index(p, w), 1, j->turn, tasks_per_query(j) * j->turn, weight(p, j),
                                j->pairs_reserved, TDM_OK};
        return j;
    }
    int latency = on_latency_lane(p, w);
    tdm_pooler_job *small = p->small.head, *owned = !latency && p->heap_n ? p->heap[0]->head : NULL;
    tdm_pooler_job *batch = small && (!owned || small->seq < owned->seq) ? small : owned;
    if (!batch) return NULL;
    batch->turn = turn_of(p, batch);
    batch->latency_turn = latency;
    uint64_t per = tasks_per_query(batch);
    *b = (tdm_pooler_batch){thread_index(p, w), 1, batch->turn, per * batch->turn,
                            weight(p, batch), batch->pairs_reserved, TDM_OK};
    int whole = batch->turn == batch->n_queries - batch->done; /* whole: others may join it */
    if (batch == small) {
        tdm_pooler_job *last = batch;
        while (whole && join_next(p, batch, last->next, b)) last = last->next;
        p->small.head = last->next;
        if (!p->small.head) p->small.tail = NULL;
        last->next = NULL;
        return batch;
    }
    /* the owner whose turn it is (the heap's first), its jobs after this one, then the other
       owners' heads: first counted, the heap unchanged; then each owner that gives jobs taken
       out of the heap, its jobs popped, and put back with its new head (O(log owners) each) */
    struct took { tdm_pooler_owner *o; size_t n; } took[SHARE_VISIT + 1];
    size_t n_took = 0;
    /* (a batch at the task cap takes nobody more: every job weighs 1 at least) */
    for (size_t i = 0; i < p->heap_n && i <= SHARE_VISIT && (i == 0 || (whole && b->weight < p->max_tasks)); i++) {
        tdm_pooler_owner *o = p->heap[i];
        size_t n = i == 0; /* the batch's first job */
        for (tdm_pooler_job *j = i == 0 ? batch->next : o->head; whole && join_next(p, batch, j, b); j = j->next) n++;
        if (n) took[n_took++] = (struct took){o, n};
    }
    tdm_pooler_job *last = NULL;
    for (size_t k = 0; k < n_took; k++) {
        heap_remove(p, took[k].o);
        owner_pop(p, took[k].o, took[k].n, &last);
    }
    last->next = NULL;
    if (batch->tag > p->vtime) p->vtime = batch->tag;
    return batch;
}

/* The cancelled jobs at the heads of the queues, unlinked (lock held), or NULL. */
static tdm_pooler_job *take_cancelled(tdm_pooler *p)
{
    tdm_pooler_job *out = NULL, **tail = &out;
    while (p->heap_n && tdm_pooler_job_cancelled(p->heap[0]->head)) {
        tdm_pooler_owner *o = p->heap[0];
        tdm_pooler_job *j = NULL;
        heap_remove(p, o);
        owner_pop(p, o, 1, &j);
        j->next = NULL;
        *tail = j;
        tail = &j->next;
    }
    queue *qs[2] = {&p->small, &p->host};
    for (int k = 0; k < 2; k++) {
        queue *q = qs[k];
        while (q->head && tdm_pooler_job_cancelled(q->head)) {
            tdm_pooler_job *j = queue_pop(p, q);
            *tail = j;
            tail = &j->next;
        }
    }
    return out;
}

/* Is there work for thread w? (lock held) */
static int has_work(const tdm_pooler *p, const worker *w)
{
    if (w->host) return p->host.head != NULL;
    int latency = on_latency_lane(p, w);
    return p->small.head || (!latency && p->heap_n);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* With the lock held and no work for the caller: polls, without the lock, for a job of its
 * kind to be submitted or queued, until `until` (ms), and takes the lock again. A thread that
 * sleeps costs whoever queues the next job a wake-up (a system call on tandemd's loop thread,
 * per request when planners' requests come one by one); a device engine's threads spin on
 * the device anyway. Returns 1 when a job of its kind was queued meanwhile, or the inbox
 * holds one of any kind (the caller drains it and polls again until `until`). */
static int spin_for_work(tdm_pooler *p, const worker *w, double until)
{
    waiters *k = &p->kind[w->host];
    uint64_t gen = __atomic_load_n(&k->queued_gen, __ATOMIC_ACQUIRE);
    if (!inbox_empty(p)) return 1; /* submitted since the caller's drain */
    if (p->stopping) return 0;
    /* counted while it polls, so that a submitter need not wake anyone (tdm_pooler_submit); not
       the latency lane, which may not take the job. The caller looks at the inbox after this
       thread stops counting itself (pooler_main drains it under the lock before it sleeps): a
       submitter that saw the count pushed its job before that look. */
    int counted = !on_latency_lane(p, w);
    if (counted) __atomic_add_fetch(&k->spinners, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&p->lock);
    int queued = 0;
    for (unsigned i = 0;; i++) {
        if (__atomic_load_n(&k->queued_gen, __ATOMIC_ACQUIRE) != gen) {
            queued = 1;
            break;
        }
        if ((i & 63) == 63) {
            if (now_ms() > until) break;
            if (p->poll_yield) sched_yield();
        }
        cpu_relax();
    }
    if (counted) __atomic_sub_fetch(&k->spinners, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&p->lock);
    return queued;
}

/* ---- async lanes (TDM_ASYNC_LANES) ------------------------------------------------- */

/* The batch of flight f has ended on the device (rc): finished as run_batch finishes one;
 * one that the device did not answer runs the synchronous way (the lane given back first). */
static void flight_end(worker *w, struct flight *f, int rc)
{
    tdm_pooler *p = w->p;
    if (rc == TDM_ENODEV) {
        tdm_sched_async_drain(w->async);
        rc = batch_engine(w, f->batch, &f->b);
        batch_scatter(w, f->batch, rc);
    } else if (rc == TDM_OK && f->batch->next) {
        results_scatter(f->batch, f->res);
    }
    double t = p->trace ? now_ms() : 0;
    batch_finish(w, f->batch, &f->b, rc);
    if (p->trace)
        fprintf(stderr, "dispatch %d: async, %zu jobs, %zu queries, ran %.3f ms, at %.3f (replies %.3f)\n",
                f->b.thread, f->b.jobs, f->b.queries, t - f->t0, f->t0, now_ms() - t);
    pthread_mutex_lock(&p->lock);
    batch_left(p, &f->b);
    pthread_mutex_unlock(&p->lock);
    f->used = 0;
}

/* Finishes the batches whose runs have ended; how many. */
static int flights_collect(worker *w)
{
    int n = 0, rc = TDM_OK;
    void *tag;
    while ((tag = tdm_sched_async_next(w->async, &rc))) {
        flight_end(w, tag, rc);
        n++;
    }
    return n;
}

/* Every batch in flight finished: before a synchronous run on this thread. */
static void flights_land(worker *w)
{
    if (!w->async) return;
    tdm_sched_async_drain(w->async);
    flights_collect(w);
}

/* With runs in flight (lock held): polls them and, without the lock, the queues' news,
 * until a run ends or a job comes that there is room to start; takes the lock again. */
static void flights_poll(worker *w)
{
    tdm_pooler *p = w->p;
    waiters *k = &p->kind[0];
    uint64_t gen = __atomic_load_n(&k->queued_gen, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&p->lock);
    for (unsigned i = 0;; i++) {
        if (flights_collect(w) || !tdm_sched_async_running(w->async)) break;
        if ((__atomic_load_n(&k->queued_gen, __ATOMIC_ACQUIRE) != gen || !inbox_empty(p)) &&
            tdm_sched_async_room(w->async) > 0)
            break;
        if (p->poll_yield && (i & 63) == 63) sched_yield();
        cpu_relax();
    }
    pthread_mutex_lock(&p->lock);
}

/* Runs a batch of configurations on the async lane: started on the device and left in
 * flight, or, when it is not a run for that path, the synchronous way once the batches in
 * flight have landed. */
static void run_batch_async(worker *w, tdm_pooler_job *batch, tdm_pooler_batch *b)
{
    tdm_pooler *p = w->p;
    struct flight *f = NULL;
    for (int k = 0; k < MAX_FLIGHTS && !f; k++)
        if (!w->flights[k].used) f = &w->flights[k];
    int rc = batch_gather(w, batch, b);
    for (int tries = 0; rc == TDM_OK && f && tries < 2; tries++) {
        size_t J = batch->kin->n_q, n_groups = 1;
        tdm_sched_configs_group one = {batch->scene, batch->kin, batch->turn};
        const tdm_sched_configs_group *groups = &one;
        const double *configs = batch->configs + (size_t)batch->done * J;
        tdm_sched_result *res = batch->results + batch->done;
        if (batch->next) { /* gathered again after a landing: a batch that landed may have used w's scratch */
            if ((rc = configs_gather(w, batch, b->queries, &n_groups)) != TDM_OK) break;
            if (f->res_cap < b->queries) {
                tdm_sched_result *r = realloc(f->res, b->queries * sizeof *r);
                if (!r) {
                    rc = TDM_ENOMEM;
                    break;
                }
                f->res = r;
                f->res_cap = b->queries;
            }
            groups = w->groups;
            configs = w->configs;
            res = f->res;
        }
        int st = tdm_sched_async_start(w->async, groups, n_groups, batch->mode, batch->max_contacts, configs, res,
                                       batch->next != NULL, f);
        if (st == TDM_OK) {
            f->used = 1;
            f->batch = batch;
            f->b = *b;
            f->t0 = p->trace ? now_ms() : 0;
            return;
        }
        if (p->trace)
            fprintf(stderr, "dispatch %d: async start of %zu jobs, %zu queries: %s\n", b->thread, b->jobs, b->queries,
                    tdm_strerror(st));
        if (st != TDM_EAGAIN) break; /* the synchronous way: it says why */
        flights_land(w);             /* an idle lane, then once more */
    }
    if (p->trace && !f) fprintf(stderr, "dispatch %d: async: no flight free\n", b->thread);
    flights_land(w);
    if (rc == TDM_OK) rc = batch_engine(w, batch, b);
    batch_scatter(w, batch, rc);
    batch_finish(w, batch, b, rc);
    pthread_mutex_lock(&p->lock);
    batch_left(p, b);
    pthread_mutex_unlock(&p->lock);
}

static void *pooler_main(void *arg)
{
    worker *w = arg;
    prctl(PR_SET_NAME, w->host ? "tdm-host" : "tdm-dispatch"); /* shown by top -H and in /proc */
    tdm_pooler *p = w->p;
    if (p->async_lanes && !w->host && tdm_sched_async_create(p->engine, &w->async) != TDM_OK) w->async = NULL;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        double t_idle = p->trace ? now_ms() : 0;
        /* a slice may still come back to a queue while any job is pending */
        double until = 0; /* this wait's polling ends (ms), once it polls */
        for (;;) {
            drain_inbox(p);
            int flying = w->async && tdm_sched_async_running(w->async);
            if ((has_work(p, w) && (!flying || tdm_sched_async_room(w->async) > 0)) ||
                (p->stopping && !pending_of(p)))
                break;
            if (flying) { /* its runs polled, not a sleep */
                flights_poll(w);
                until = 0;
                continue;
            }
            if (p->spin_ns) { /* until the wait's polling time is spent (jobs of the other kind end
                                 a poll early: drained, polled again), then the condition again
                                 under the lock: a job queued as the polling ended found no
                                 sleeper to wake */
                double now = now_ms();
                if (until == 0) until = now + 1e-6 * (double)p->spin_ns;
                if (now < until) {
                    spin_for_work(p, w, until);
                    continue;
                }
            }
            /* about to sleep: the device copies of trees removed meanwhile are freed first (an
               engine that runs nothing more would hold them until its next run), outside the
               lock; then a look for work again. When an engine's lanes were all running, the
               sleep is cut short to try again (its runs may be another caller's, which frees
               nothing once they end). */
            int reclaim_left = 0;
            if (!w->host && p->reclaim && tdm_sched_reclaim_due(p->engine)) {
                pthread_mutex_unlock(&p->lock);
                reclaim_left = tdm_sched_reclaim(p->engine);
                pthread_mutex_lock(&p->lock);
                if (!reclaim_left) continue;
            }
            /* a sleeper first, then one more look at the inbox: a submitter that pushed after
               that look sees the sleeper and wakes it (tdm_pooler_submit). Every sleeper clears
               `waking` before each look (here, and on waking up, before the drain above): a
               submitter that finds it set skips its wake-up only while a broadcast is on its way
               to every thread then asleep, each of which looks after that submitter pushed (the
               latency lane too, which a small job needs awake). */
            waiters *k = &p->kind[w->host];
            __atomic_add_fetch(&k->sleepers, 1, __ATOMIC_SEQ_CST);
            __atomic_store_n(&k->waking, 0, __ATOMIC_SEQ_CST);
            if (inbox_empty(p)) {
                if (reclaim_left) {
                    struct timespec ts;
                    clock_gettime(CLOCK_REALTIME, &ts);
                    ts.tv_nsec += RECLAIM_RETRY_NS;
                    if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                    }
                    pthread_cond_timedwait(&k->wake, &p->lock, &ts);
                } else {
                    pthread_cond_wait(&k->wake, &p->lock);
                }
            }
            __atomic_sub_fetch(&k->sleepers, 1, __ATOMIC_SEQ_CST);
            __atomic_store_n(&k->waking, 0, __ATOMIC_SEQ_CST);
            until = 0; /* woken: polls again before it sleeps again */
        }
        /* jobs cancelled while they waited at the head of a queue are finished unrun, outside
           the lock (those further back, when they come to the head) */
        tdm_pooler_job *dropped = take_cancelled(p);
        if (dropped) {
            size_t n_dropped = 0;
            pthread_mutex_unlock(&p->lock);
            for (tdm_pooler_job *j = dropped, *next; j; j = next, n_dropped++) {
                next = j->next;
                j->next = NULL;
                j->rc = TDM_ECANCELED;
                p->finished(j, p->data);
            }
            pthread_mutex_lock(&p->lock);
            p->stats.cancelled += n_dropped;
            if (__atomic_sub_fetch(&p->pending, n_dropped, __ATOMIC_SEQ_CST) == 0 && p->stopping) wake_all(p);
            continue;
        }
        tdm_pooler_batch b;
        tdm_pooler_job *batch = take(p, w, &b);
        if (!batch) break; /* stopping, and every job finished */
        /* more is queued: another thread takes it (broadcast: the latency lane takes small jobs only) */
        if ((w->host ? p->host.head != NULL : p->small.head || p->heap_n) && p->kind[w->host].sleepers)
            pthread_cond_broadcast(&p->kind[w->host].wake);
        pthread_mutex_unlock(&p->lock);

        double t0 = p->trace ? now_ms() : 0, queued = 0; /* the batch's jobs' mean wait in the queue */
        if (p->trace) {
            for (tdm_pooler_job *j = batch; j; j = j->next) {
                queued += t0 - j->queued_ms;
                j->taken_ms = t0;
            }
            queued /= b.jobs ? (double)b.jobs : 1;
        }
        if (w->async && batch->configs) { /* (an async lane exists only with configurations on the device) */
            run_batch_async(w, batch, &b); /* left in flight, or run; `pending` counted either way */
            pthread_mutex_lock(&p->lock);
            continue;
        }
        flights_land(w);
        batch_times bt = {0, 0, 0, 0};
        run_batch(w, batch, &b, &bt);
        if (p->trace)
            fprintf(stderr,
                    "dispatch %d: waited %.3f ms, %zu jobs, %zu queries, ran %.3f ms, at %.3f (gather %.3f, engine "
                    "%.3f, results %.3f, replies %.3f, queued %.3f)\n",
                    b.thread, t0 - t_idle, b.jobs, b.queries, now_ms() - t0, t0, bt.gather, bt.engine, bt.fold,
                    bt.finished, queued);

        pthread_mutex_lock(&p->lock);
        batch_left(p, &b);
    }
    pthread_mutex_unlock(&p->lock);
    if (w->async) {
        tdm_sched_async_destroy(w->async); /* nothing in flight: every job finished */
        w->async = NULL;
        for (int k = 0; k < MAX_FLIGHTS; k++) free(w->flights[k].res);
    }
    return NULL;
}

/* A tree left the engine's devices (tdm_sched_on_removed): one sleeping lane thread is woken to
 * free its copies (tdm_sched_reclaim, before it sleeps again). */
static void removed_wake(void *data)
{
    tdm_pooler *p = data;
    pthread_mutex_lock(&p->lock);
    if (p->kind[0].sleepers) pthread_cond_signal(&p->kind[0].wake);
    pthread_mutex_unlock(&p->lock);
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
    p->fair = tdm_pooler_fairness_default();
    p->max_pairs = max_batch_pairs;
    p->finished = finished;
    p->ran = ran;
    p->data = data;
    p->trace = getenv("TDM_DISPATCH_TRACE") != NULL;
    p->configs_on_device = tdm_sched_configs_on_device(engine);
    /* idle threads poll for work before they sleep when the engine runs on the device (its lanes
       spin on the device anyway, and the cores are there); TDM_POOLER_SPIN_US overrides (0: never) */
    const char *spin = getenv("TDM_POOLER_SPIN_US");
    p->spin_ns = spin && *spin ? 1000 * strtoull(spin, NULL, 10) : p->configs_on_device ? POOLER_SPIN_NS : 0;
    const char *py = getenv("TDM_POLL_YIELD");
    p->poll_yield = py && strcmp(py, "1") == 0;
    const char *al = getenv("TDM_ASYNC_LANES");
    p->async_lanes = al && strcmp(al, "1") == 0 && p->configs_on_device;
    const char *xc = getenv("TDM_EXPRESS_ANY_COST");
    p->express_any_cost = xc && strcmp(xc, "1") == 0;
    const char *hq = getenv("TDM_HOST_QUEUE");
    p->host_extra = hq && *hq ? atoi(hq) : 0;
    if (p->host_extra < 0) p->host_extra = 0;
    const char *hm = getenv("TDM_HOST_MIN_CONFIGS");
    p->host_min = hm && *hm ? (uint32_t)strtoul(hm, NULL, 10) : 1;
    const char *sh = getenv("TDM_POOLER_SHARE");
    p->share = !(sh && strcmp(sh, "0") == 0);
    const char *rc = getenv("TDM_POOLER_RECLAIM");
    p->reclaim = !(rc && strcmp(rc, "0") == 0);
    p->heap_cap = 64;
    p->heap = malloc(p->heap_cap * sizeof *p->heap);
    if (!p->heap) {
        free(p);
        return TDM_ENOMEM;
    }
    int locks = 0;
    if (pthread_mutex_init(&p->lock, NULL) != 0) goto fail;
    locks = 1;
    if (pthread_cond_init(&p->kind[0].wake, NULL) != 0) goto fail;
    if (pthread_cond_init(&p->kind[1].wake, NULL) != 0) {
        pthread_cond_destroy(&p->kind[0].wake);
        goto fail;
    }
    locks = 2;
    int n = tdm_sched_lanes(engine);
    if (n > MAX_THREADS) n = MAX_THREADS;
    if (n < 1) n = 1;
    for (int k = 0; k < n; k++) {
        p->workers[k].p = p;
        if (pthread_create(&p->workers[k].thread, NULL, pooler_main, &p->workers[k]) != 0) goto fail;
        pthread_mutex_lock(&p->lock); /* the started threads read it (on_latency_lane), under the lock */
        p->n_threads = k + 1;
        pthread_mutex_unlock(&p->lock);
    }
    int h = tdm_sched_host_lanes(engine);
    for (int k = 0; k < h && k < MAX_HOST; k++) {
        worker *w = &p->workers[MAX_THREADS + k];
        w->p = p;
        w->host = 1;
        if (pthread_create(&w->thread, NULL, pooler_main, w) != 0) goto fail;
        pthread_mutex_lock(&p->lock);
        p->n_host = k + 1;
        pthread_mutex_unlock(&p->lock);
    }
    if (p->reclaim) tdm_sched_on_removed(engine, removed_wake, p); /* undone by tdm_pooler_stop */
    *out = p;
    return TDM_OK;
fail:
    if (locks == 2) {
        tdm_pooler_destroy(p); /* nothing was submitted: joins the threads started, frees */
        return TDM_ESYS;
    }
    if (locks == 1) pthread_mutex_destroy(&p->lock);
    free(p->heap);
    free(p);
    return TDM_ESYS;
}

static int submit(tdm_pooler *p, tdm_pooler_job *job, int polled);

int tdm_pooler_submit(tdm_pooler *p, tdm_pooler_job *job) { return submit(p, job, 0); }

int tdm_pooler_submit_polled(tdm_pooler *p, tdm_pooler_job *job) { return submit(p, job, 1); }

/* polled: tdm_pooler_submit_polled, whose caller polls the ring for the job when the ring is
 * polled (1 when published); only such a caller publishes into a polled ring */
static int submit(tdm_pooler *p, tdm_pooler_job *job, int polled)
{
    job->next = NULL;
    job->rc = TDM_OK;
    int no_express = job->no_express;
    job->no_express = 0; /* for this submission only */
    int cancelled = tdm_pooler_job_cancelled(job);
    job->work = (tdm_work){job->max_work, 0, cancelled, cancelled, job->any_stop, 0};
    job->done = job->turn = 0;
    job->demoted = job->latency_turn = 0;
    /* read without the lock: set before the first submit, the threads started at create; kept
       here too, as the job is not ours to read once pushed (it may be run, finished and
       submitted again meanwhile) */
    int h = p->host_configs && p->n_host && job->configs && job->n_queries <= p->host_configs &&
            job->n_queries >= p->host_min &&
            within_small_work(p, job);
    /* a host thread free for it, or the lanes: a small job never waits behind others for a host
       thread (on the H100 a queue of them waited 0.1-0.4 ms, as long as a pooled device run) */
    if (h && __atomic_add_fetch(&p->host_waiting, 1, __ATOMIC_RELAXED) > p->n_host + p->host_extra) {
        __atomic_sub_fetch(&p->host_waiting, 1, __ATOMIC_RELAXED);
        h = 0;
    }
    job->host = h;
    /* pending first: a thread leaves only when nothing is pending after `stopping` */
    __atomic_add_fetch(&p->pending, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&p->stopping, __ATOMIC_SEQ_CST)) {
        if (h) __atomic_sub_fetch(&p->host_waiting, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&p->lock); /* rare: wake the threads that wait for nothing pending */
        if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_SEQ_CST) == 0) wake_all(p);
        pthread_mutex_unlock(&p->lock);
        return TDM_EINVAL;
    }
    /* the express ring: published here, at once, or the usual way; a job to be filled (a motion's
       first states) is filled here first, as no pooler thread takes it */
    int express = !h && p->express_configs && (polled || !p->express_polled) && job->configs && !no_express && !cancelled &&
                  job->n_queries <= p->express_configs && (p->express_any_cost || within_small_work(p, job));
    if (express && job->fill) {
        void (*fill)(tdm_pooler_job *) = job->fill;
        job->fill = NULL;
        fill(job);
    }
    if (express && tdm_sched_express_submit(p->engine, job->scene, job->kin, job->configs, job->n_queries, job->mode,
                                            job->max_contacts, &job->express) == TDM_OK) {
        if (p->trace) job->queued_ms = job->taken_ms = now_ms(); /* the trace's: no queue, one run */
        if (p->express_polled) return 1;
        struct xworker *w =
            &p->xw[p->x_started == 1 ? 0 : __atomic_fetch_add(&p->x_next, 1, __ATOMIC_RELAXED) % (uint32_t)p->x_started];
        tdm_pooler_job *xh = __atomic_load_n(&w->inbox, __ATOMIC_RELAXED);
        do job->next = xh;
        while (!__atomic_compare_exchange_n(&w->inbox, &xh, job, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
        if (__atomic_load_n(&w->sleeping, __ATOMIC_SEQ_CST)) express_wake(w);
        return TDM_OK;
    }
    tdm_pooler_job *head = __atomic_load_n(&p->inbox, __ATOMIC_RELAXED);
    do job->next = head;
    while (!__atomic_compare_exchange_n(&p->inbox, &head, job, 1, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    waiters *k = &p->kind[h];
    __atomic_add_fetch(&k->queued_gen, 1, __ATOMIC_RELEASE); /* for the threads polling for work */
    /* No wake-up while a thread that takes any job of its kind polls for one (spin_for_work):
       it looks at the inbox after it stops counting itself (a polling latency lane, which may
       not take the job, does not count). Else a sleeping thread (it looked at the inbox
       after it counted itself: see pooler_main) is woken: once this thread has had the lock,
       which a sleeper holds from its look until it waits, every such sleeper waits on the
       condition, and the broadcast after the unlock reaches it without it meeting this thread
       on the lock (a second system call here each time). A signal could wake only the latency
       lane, which may not take the job. One broadcast until a sleeper runs
       (`waking`, see pooler_main): the loop may submit several requests before it does. */
    if (!__atomic_load_n(&k->spinners, __ATOMIC_SEQ_CST) && __atomic_load_n(&k->sleepers, __ATOMIC_SEQ_CST) &&
        !__atomic_exchange_n(&k->waking, 1, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&p->lock);
        pthread_mutex_unlock(&p->lock);
        pthread_cond_broadcast(&k->wake);
    }
    return TDM_OK;
}

void tdm_pooler_set_batch_end(tdm_pooler *p, void (*end)(void *data)) { p->batch_end = end; }

/* An express thread: takes what was published into the ring for it, polls for the answers
 * (keeping the ring's kernel running), finishes the jobs answered (a motion's next round is
 * submitted from here), and sends a job given back the usual way (counted pending throughout:
 * its new submission before this one's end). With several, each job goes to one in turn. */
static void *express_main(void *arg)
{
    struct xworker *w = arg;
    tdm_pooler *p = w->p;
    prctl(PR_SET_NAME, "tdm-express");
    tdm_pooler_job *list = NULL;
    double until = 0;
    for (;;) {
        tdm_pooler_job *in = __atomic_exchange_n(&w->inbox, NULL, __ATOMIC_ACQ_REL);
        while (in) {
            tdm_pooler_job *next = in->next;
            in->next = list;
            list = in;
            in = next;
        }
        if (!list) {
            if (__atomic_load_n(&p->stopping, __ATOMIC_SEQ_CST) && pending_of(p) == 0) break;
            double now = now_ms();
            if (until == 0) until = now + 1e-6 * (double)p->spin_ns;
            if (now < until) {
                cpu_relax();
                continue;
            }
            /* asleep: a submitter that pushed after the look below sees `sleeping` and wakes it */
            __atomic_store_n(&w->sleeping, 1, __ATOMIC_SEQ_CST);
            if (!__atomic_load_n(&w->inbox, __ATOMIC_SEQ_CST) && !__atomic_load_n(&p->stopping, __ATOMIC_SEQ_CST)) {
                pthread_mutex_lock(&w->lock);
                while (!w->woken) pthread_cond_wait(&w->wake, &w->lock);
                w->woken = 0;
                pthread_mutex_unlock(&w->lock);
            }
            __atomic_store_n(&w->sleeping, 0, __ATOMIC_SEQ_CST);
            until = 0;
            continue;
        }
        until = 0;
        tdm_sched_express_keep(p->engine);
        size_t finished = 0;
        for (tdm_pooler_job **at = &list; *at;) {
            tdm_pooler_job *j = *at;
            int rc = tdm_sched_express_poll(p->engine, &j->express, j->scene, j->mode, j->results);
            if (rc == 0) {
                at = &j->next;
                continue;
            }
            *at = j->next;
            j->next = NULL;
            /* the job is not ours once finished or submitted again (a motion's next round, or
               finished and freed by another thread): what the stats need is read first */
            uint32_t queries = j->n_queries;
            if (express_settle(p, j, rc) == 1) {
                p->finished(j, p->data);
                finished++;
            }
            express_over(p, queries, rc == 1);
        }
        if (finished && p->batch_end) p->batch_end(p->data);
    }
    return NULL;
}

/* Job j's word from the ring (rc of tdm_sched_express_poll, not 0): 1, the job is over (answered,
 * or given back and refused by the pooler: TDM_ECANCELED); 2, given back (it outgrew a block, or the
 * ring failed) and submitted the usual way, which counts it. */
static int express_settle(tdm_pooler *p, tdm_pooler_job *j, int rc)
{
    if (rc == 1) {
        j->rc = TDM_OK;
        j->done = j->n_queries;
        return 1;
    }
    j->no_express = 1;
    if (tdm_pooler_submit(p, j) == TDM_OK) return 2;
    j->rc = TDM_ECANCELED;
    return 1;
}

/* A ring's job is over (ran: answered; else given back and refused by the pooler): counted,
 * and no longer pending. Its `finished` has returned, or is the caller's to call next. */
static void express_over(tdm_pooler *p, uint32_t queries, int ran)
{
    pthread_mutex_lock(&p->lock);
    if (ran) {
        p->stats.jobs++;
        p->stats.queries += queries;
    }
    if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_SEQ_CST) == 0 && p->stopping) wake_all(p);
    pthread_mutex_unlock(&p->lock);
}

int tdm_pooler_poll_express(tdm_pooler *p, tdm_pooler_job *j)
{
    int rc = tdm_sched_express_poll(p->engine, &j->express, j->scene, j->mode, j->results);
    if (rc == 0) return 0;
    uint32_t queries = j->n_queries; /* read first: a job given back may be finished meanwhile */
    int over = express_settle(p, j, rc);
    express_over(p, queries, rc == 1);
    return over;
}

void tdm_pooler_keep_express(tdm_pooler *p) { tdm_sched_express_keep(p->engine); }

void tdm_pooler_set_express_polled(tdm_pooler *p, uint32_t max_configs)
{
    if (max_configs > TDM_SCHED_EXPRESS_MAX) max_configs = TDM_SCHED_EXPRESS_MAX;
    if (!max_configs || !tdm_sched_express_on(p->engine) || p->x_started) return;
    p->express_polled = 1;
    p->express_configs = max_configs;
}

int tdm_pooler_set_express(tdm_pooler *p, uint32_t max_configs)
{
    if (max_configs > TDM_SCHED_EXPRESS_MAX) max_configs = TDM_SCHED_EXPRESS_MAX;
    if (!max_configs || !tdm_sched_express_on(p->engine) || p->x_started || p->express_polled) return TDM_OK;
    const char *xt = getenv("TDM_EXPRESS_THREADS");
    int n = xt && *xt ? atoi(xt) : 1;
    if (n < 1) n = 1;
    if (n > MAX_EXPRESS) n = MAX_EXPRESS;
    for (int k = 0; k < n; k++) {
        struct xworker *w = &p->xw[k];
        w->p = p;
        if (pthread_mutex_init(&w->lock, NULL) != 0) break;
        if (pthread_cond_init(&w->wake, NULL) != 0) {
            pthread_mutex_destroy(&w->lock);
            break;
        }
        if (pthread_create(&w->thread, NULL, express_main, w) != 0) {
            pthread_cond_destroy(&w->wake);
            pthread_mutex_destroy(&w->lock);
            break;
        }
        p->x_started = k + 1; /* before a job can come: express_configs is still 0 */
    }
    if (!p->x_started) return TDM_ESYS;
    p->express_configs = max_configs;
    return TDM_OK;
}

void tdm_pooler_set_share(tdm_pooler *p, int on) { p->share = on != 0; }

void tdm_pooler_set_fairness(tdm_pooler *p, const tdm_pooler_fairness *f)
{
    pthread_mutex_lock(&p->lock);
    p->fair = *f;
    pthread_mutex_unlock(&p->lock);
}

size_t tdm_pooler_pending(tdm_pooler *p)
{
    return pending_of(p);
}

void tdm_pooler_get_stats(tdm_pooler *p, tdm_pooler_stats *s)
{
    pthread_mutex_lock(&p->lock);
    *s = p->stats;
    s->owners = p->heap_n;
    pthread_mutex_unlock(&p->lock);
}

int tdm_pooler_threads(const tdm_pooler *p) { return p->n_threads; }
int tdm_pooler_host_threads(const tdm_pooler *p) { return p->n_host; }

void tdm_pooler_set_poll(tdm_pooler *p, uint64_t us)
{
    pthread_mutex_lock(&p->lock);
    p->spin_ns = 1000 * us;
    pthread_mutex_unlock(&p->lock);
}

uint64_t tdm_pooler_poll_ns(tdm_pooler *p)
{
    pthread_mutex_lock(&p->lock);
    uint64_t ns = p->spin_ns;
    pthread_mutex_unlock(&p->lock);
    return ns;
}

void tdm_pooler_set_host(tdm_pooler *p, uint32_t max_configs)
{
    pthread_mutex_lock(&p->lock);
    p->host_configs = max_configs;
    pthread_mutex_unlock(&p->lock);
}

static void express_wake(struct xworker *w)
{
    pthread_mutex_lock(&w->lock);
    w->woken = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

void tdm_pooler_stop(tdm_pooler *p)
{
    if (!p || p->stopped) return;
    tdm_sched_on_removed(p->engine, NULL, NULL);
    pthread_mutex_lock(&p->lock);
    __atomic_store_n(&p->stopping, 1, __ATOMIC_SEQ_CST);
    wake_all(p);
    pthread_mutex_unlock(&p->lock);
    for (int k = 0; k < p->x_started; k++) express_wake(&p->xw[k]);
    for (int k = 0; k < p->n_threads; k++) pthread_join(p->workers[k].thread, NULL);
    for (int k = 0; k < p->n_host; k++) pthread_join(p->workers[MAX_THREADS + k].thread, NULL);
    for (int k = 0; k < p->x_started; k++) {
        express_wake(&p->xw[k]);
        pthread_join(p->xw[k].thread, NULL);
    }
    p->stopped = 1;
}

void tdm_pooler_destroy(tdm_pooler *p)
{
    if (!p) return;
    tdm_pooler_stop(p);
    for (int k = 0; k < MAX_THREADS + MAX_HOST; k++) {
        free(p->workers[k].queries);
        free(p->workers[k].results);
        free(p->workers[k].configs);
        free(p->workers[k].groups);
    }
    pthread_cond_destroy(&p->kind[0].wake);
    pthread_cond_destroy(&p->kind[1].wake);
    pthread_mutex_destroy(&p->lock);
    for (int k = 0; k < p->x_started; k++) {
        pthread_cond_destroy(&p->xw[k].wake);
        pthread_mutex_destroy(&p->xw[k].lock);
    }
    free(p->heap);
    free(p);
}
