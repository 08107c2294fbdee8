/* The thread pool (pool.h). Jobs live on their callers' stacks, in a list of
 * jobs that still have unclaimed shares; everything about a job is changed
 * under the pool's lock except `finished`, which is also read without it by a
 * caller spinning for its last shares. A caller returns only once every share
 * of its job has returned (finished == n, seen under the lock when it slept),
 * so no worker touches a job after its caller has left. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Pause rounds (~ a few microseconds) a worker spins for a new job, and a
 * caller for its job's last shares, before sleeping: see pool.h. */
#define SPIN 100
#define CALLER_SPIN 4000

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

typedef tdm_pool_job job;

struct tdm_pool {
    int threads;
    int n_workers;
    pthread_t *workers;
    char name[16];
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    job *head;          /* oldest first */
    atomic_uint posted; /* bumped per job posted: what spinning workers watch */
    atomic_int spinning; /* workers polling `posted` before they sleep (TDM_POOL_WAKE=need) */
    int sleeping;       /* workers in pthread_cond_wait on `work` (under mu) */
    int wake_need;      /* TDM_POOL_WAKE=need: a post wakes only the sleepers its shares need past the
                           spinning workers, after unlocking (an A/B switch: see post) */
    int quit;
    tdm_pool_stats stats; /* under mu */
};

/* mu held: takes the next share of the oldest job with shares left, dropping the
 * job from the list once its last share is claimed. */
static job *claim(tdm_pool *p, int *k)
{
    job *j = p->head;
    if (!j) return NULL;
    *k = j->next++;
    if (j->next == j->n) p->head = j->link;
    return j;
}

/* mu held: a share of j has returned. */
static void finish(tdm_pool *p, job *j, int by_worker)
{
    int n = j->n; /* read first: once finished reaches n, a spinning caller may return and j be gone */
    int f = __atomic_fetch_add(&j->finished, 1, __ATOMIC_RELEASE) + 1;
    p->stats.shares++;
    p->stats.worker_shares += (unsigned)by_worker;
    if (f == n) pthread_cond_broadcast(&p->done);
}

static void *worker_main(void *arg)
{
    tdm_pool *p = arg;
    if (p->name[0]) prctl(PR_SET_NAME, p->name);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->quit) break;
        int k;
        job *j = claim(p, &k);
        if (!j) {
            unsigned seen = atomic_load_explicit(&p->posted, memory_order_acquire);
            atomic_fetch_add_explicit(&p->spinning, 1, memory_order_relaxed);
            pthread_mutex_unlock(&p->mu);
            for (int i = 0; i < SPIN && atomic_load_explicit(&p->posted, memory_order_acquire) == seen; i++)
                cpu_relax();
            pthread_mutex_lock(&p->mu);
            atomic_fetch_sub_explicit(&p->spinning, 1, memory_order_relaxed);
            if (!p->head && !p->quit) {
                p->sleeping++;
                pthread_cond_wait(&p->work, &p->mu);
                p->sleeping--;
            }
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg, k, j->n);
        pthread_mutex_lock(&p->mu);
        finish(p, j, 1);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int tdm_pool_create(int threads, const char *name, tdm_pool **out)
{
    *out = NULL;
    if (threads < 0 || threads > 4096) return TDM_EINVAL;
    if (threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        threads = c > 0 ? (int)c : 1;
    }
    tdm_pool *p = calloc(1, sizeof *p);
    if (!p) return TDM_ENOMEM;
    p->threads = threads;
    if (name) {
        strncpy(p->name, name, sizeof p->name - 1);
        p->name[sizeof p->name - 1] = 0;
    }
    atomic_init(&p->posted, 0);
    atomic_init(&p->spinning, 0);
    const char *w = getenv("TDM_POOL_WAKE");
    p->wake_need = w && !strcmp(w, "need");
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return TDM_ESYS;
    }
    if (pthread_cond_init(&p->work, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return TDM_ESYS;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->work);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return TDM_ESYS;
    }
    int rc = TDM_OK;
    if (threads > 1) {
        p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
        if (!p->workers) {
            rc = TDM_ENOMEM;
            goto fail;
        }
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
                rc = TDM_ESYS;
                goto fail;
            }
            p->n_workers++;
        }
    }
    *out = p;
    return TDM_OK;
fail:
    tdm_pool_destroy(p);
    return rc;
}

void tdm_pool_destroy(tdm_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_workers; i++) pthread_join(p->workers[i], NULL);
    free(p->workers);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int tdm_pool_threads(const tdm_pool *p) { return p->threads; }

/* Puts j (set up by the caller) at the end of the list and wakes `wake` workers. */
static void post(tdm_pool *p, job *j, void (*fn)(void *, int, int), void *arg, int n_shares, int wake)
{
    j->fn = fn;
    j->arg = arg;
    j->n = n_shares;
    j->next = 0;
    j->link = NULL;
    j->finished = 0;
    pthread_mutex_lock(&p->mu);
    job **tail = &p->head;
    while (*tail) tail = &(*tail)->link;
    *tail = j;
    p->stats.jobs++;
    atomic_fetch_add_explicit(&p->posted, 1, memory_order_release);
    if (!p->wake_need) {
        if (wake >= p->n_workers) pthread_cond_broadcast(&p->work);
        else
            for (int i = 0; i < wake; i++) pthread_cond_signal(&p->work);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    /* the spinning workers see `posted` move and take shares without a wake-up; a sleeper woken
       for a share another took meanwhile only costs a wake-up, and one not woken is no loss: the
       caller runs every unclaimed share itself. The signals go after the unlock, so that a woken
       worker does not block at once on the lock its waker holds. */
    int n = wake - atomic_load_explicit(&p->spinning, memory_order_relaxed);
    if (n > p->sleeping) n = p->sleeping;
    int all = n > 0 && n == p->sleeping;
    pthread_mutex_unlock(&p->mu);
    if (all) pthread_cond_broadcast(&p->work);
    else
        for (int i = 0; i < n; i++) pthread_cond_signal(&p->work);
}

/* Runs every unclaimed share of j on the caller, then waits for the others. */
static void finish_job(tdm_pool *p, job *j)
{
    pthread_mutex_lock(&p->mu);
    while (j->next < j->n) {
        int k = j->next++;
        if (j->next == j->n) { /* unlink: it may not be the head */
            job **pp = &p->head;
            while (*pp != j) pp = &(*pp)->link;
            *pp = j->link;
        }
        pthread_mutex_unlock(&p->mu);
        j->fn(j->arg, k, j->n);
        pthread_mutex_lock(&p->mu);
        finish(p, j, 0);
    }
    pthread_mutex_unlock(&p->mu);
    int n = j->n;
    for (int i = 0; i < CALLER_SPIN && __atomic_load_n(&j->finished, __ATOMIC_ACQUIRE) < n; i++)
        cpu_relax();
    pthread_mutex_lock(&p->mu);
    while (__atomic_load_n(&j->finished, __ATOMIC_ACQUIRE) < n) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

/* Runs every share on the caller (no workers, or one share). */
static void run_inline(tdm_pool *p, job *j, void (*fn)(void *, int, int), void *arg, int n_shares)
{
    for (int k = 0; k < n_shares; k++) fn(arg, k, n_shares);
    j->n = n_shares;
    j->finished = n_shares;
    pthread_mutex_lock(&p->mu);
    p->stats.jobs++;
    p->stats.shares += (unsigned)n_shares;
    pthread_mutex_unlock(&p->mu);
}

void tdm_pool_run(tdm_pool *p, void (*fn)(void *arg, int k, int n_shares), void *arg, int n_shares)
{
    if (n_shares <= 0) return;
    job j;
    if (n_shares == 1 || p->n_workers == 0) {
        run_inline(p, &j, fn, arg, n_shares);
        return;
    }
    post(p, &j, fn, arg, n_shares, n_shares - 1); /* the caller works on one share at least */
    finish_job(p, &j);
}

void tdm_pool_post(tdm_pool *p, tdm_pool_job *j, void (*fn)(void *arg, int k, int n_shares), void *arg,
                   int n_shares)
{
    if (n_shares <= 0) {
        j->n = 0;
        j->finished = 0;
        return;
    }
    if (p->n_workers == 0) {
        run_inline(p, j, fn, arg, n_shares);
        return;
    }
    post(p, j, fn, arg, n_shares, n_shares);
}

int tdm_pool_done(const tdm_pool_job *j)
{
    return __atomic_load_n(&j->finished, __ATOMIC_ACQUIRE) >= j->n;
}

void tdm_pool_wait(tdm_pool *p, tdm_pool_job *j)
{
    if (!tdm_pool_done(j)) finish_job(p, j); /* a worker touches no job after its last share returned */
}

void tdm_pool_get_stats(tdm_pool *p, tdm_pool_stats *s)
{
    pthread_mutex_lock(&p->mu);
    *s = p->stats;
    pthread_mutex_unlock(&p->mu);
}
