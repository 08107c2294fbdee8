/* workpile/pool.h: the one thread pool. Every share of every job runs exactly
 * once, jobs from several callers run side by side, a caller finishes its job
 * even while every worker is held by another job, and workers do take shares. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "workpile/pool.h"

TestSuite(pool);

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

typedef struct counts {
    int n;
    atomic_int *hits; /* per share */
    atomic_int wrong; /* calls with the wrong n_shares or k out of range */
} counts;

static void count_share(void *arg, int k, int n)
{
    counts *c = arg;
    if (n != c->n || k < 0 || k >= n) {
        atomic_fetch_add(&c->wrong, 1);
        return;
    }
    atomic_fetch_add(&c->hits[k], 1);
}

static void run_counted(tdm_pool *p, int n)
{
    counts c = {n, calloc((size_t)(n > 0 ? n : 1), sizeof(atomic_int)), 0};
    cr_assert_not_null(c.hits);
    tdm_pool_run(p, count_share, &c, n);
    cr_assert_eq(atomic_load(&c.wrong), 0, "n=%d: a share saw the wrong k or n", n);
    for (int k = 0; k < n; k++) cr_assert_eq(atomic_load(&c.hits[k]), 1, "n=%d: share %d ran %d times", n, k, c.hits[k]);
    free(c.hits);
}

Test(pool, every_share_runs_once)
{
    const int threads[] = {1, 2, 4, 0};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        tdm_pool *p = NULL;
        cr_assert_eq(tdm_pool_create(threads[t], "test", &p), TDM_OK);
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        cr_assert_eq(tdm_pool_threads(p), threads[t] ? threads[t] : (int)(cores > 0 ? cores : 1));
        const int sizes[] = {0, 1, 2, 3, 4, 5, 17, 1000};
        unsigned long long want = 0;
        for (int rep = 0; rep < 20; rep++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                run_counted(p, sizes[s]);
                want += (unsigned long long)sizes[s];
            }
        tdm_pool_stats st;
        tdm_pool_get_stats(p, &st);
        cr_assert_eq(st.shares, want, "%d threads: %llu shares counted, %llu run", threads[t], st.shares, want);
        cr_assert_eq(st.jobs, 20ull * 7, "jobs with at least one share");
        tdm_pool_destroy(p);
    }
}

Test(pool, create_rejects_bad_counts)
{
    tdm_pool *p = (tdm_pool *)(uintptr_t)1;
    cr_assert_eq(tdm_pool_create(-1, NULL, &p), TDM_EINVAL);
    cr_assert_null(p);
    cr_assert_eq(tdm_pool_create(4097, NULL, &p), TDM_EINVAL);
    cr_assert_null(p);
    tdm_pool_destroy(NULL);
}

/* Several callers at once, each checking its own jobs. */
typedef struct caller { tdm_pool *p; int id; int failures; } caller;

typedef struct sum_job { atomic_long sum; int n; } sum_job;

static void add_share(void *arg, int k, int n)
{
    sum_job *j = arg;
    (void)n;
    atomic_fetch_add(&j->sum, (long)k + 1);
}

static void *caller_main(void *arg)
{
    caller *c = arg;
    for (int rep = 0; rep < 300; rep++) {
        sum_job j;
        j.n = 1 + (rep * 7 + c->id * 13) % 40;
        atomic_init(&j.sum, 0);
        tdm_pool_run(c->p, add_share, &j, j.n);
        if (atomic_load(&j.sum) != (long)j.n * (j.n + 1) / 2) c->failures++;
    }
    return NULL;
}

Test(pool, callers_side_by_side, .timeout = 60)
{
    tdm_pool *p;
    cr_assert_eq(tdm_pool_create(4, "test", &p), TDM_OK);
    enum { CALLERS = 8 };
    caller c[CALLERS];
    pthread_t th[CALLERS];
    for (int i = 0; i < CALLERS; i++) {
        c[i] = (caller){p, i, 0};
        cr_assert_eq(pthread_create(&th[i], NULL, caller_main, &c[i]), 0);
    }
    for (int i = 0; i < CALLERS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < CALLERS; i++) cr_assert_eq(c[i].failures, 0, "caller %d: %d wrong sums", i, c[i].failures);
    tdm_pool_destroy(p);
}

/* A job whose shares hold every worker until released: another caller's job
 * must still finish, on the caller's own thread. */
typedef struct gate { atomic_int open, entered; } gate;

static void wait_share(void *arg, int k, int n)
{
    (void)k;
    (void)n;
    gate *g = arg;
    atomic_fetch_add(&g->entered, 1);
    while (!atomic_load(&g->open)) nap_us(100);
}

typedef struct holder { tdm_pool *p; gate *g; } holder;

static void *holder_main(void *arg)
{
    holder *h = arg;
    tdm_pool_run(h->p, wait_share, h->g, tdm_pool_threads(h->p));
    return NULL;
}

Test(pool, a_caller_finishes_while_workers_are_held, .timeout = 30)
{
    tdm_pool *p;
    cr_assert_eq(tdm_pool_create(3, "test", &p), TDM_OK);
    gate g;
    atomic_init(&g.open, 0);
    atomic_init(&g.entered, 0);
    holder h = {p, &g};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, holder_main, &h), 0);
    while (atomic_load(&g.entered) < 3) nap_us(100); /* both workers and the holder are inside */
    run_counted(p, 25);                              /* runs on this thread alone */
    cr_assert_eq(atomic_load(&g.open), 0, "the job finished while the workers were held");
    atomic_store(&g.open, 1);
    pthread_join(th, NULL);
    tdm_pool_destroy(p);
}

static void slow_share(void *arg, int k, int n)
{
    (void)arg;
    (void)k;
    (void)n;
    nap_us(2000);
}

Test(pool, workers_take_shares, .timeout = 30)
{
    tdm_pool *p;
    cr_assert_eq(tdm_pool_create(4, "test", &p), TDM_OK);
    for (int rep = 0; rep < 5; rep++) tdm_pool_run(p, slow_share, NULL, 16);
    tdm_pool_stats st;
    tdm_pool_get_stats(p, &st);
    cr_assert_eq(st.shares, 80);
    /* the caller cannot have run them all: each share sleeps 2 ms and three workers are free */
    cr_assert_gt(st.worker_shares, 0, "no share ran on a worker");
    cr_assert_lt(st.worker_shares, st.shares + 1);
    tdm_pool_destroy(p);
}

/* tdm_pool_post returns before its shares have run (with workers), the caller
 * can run another job meanwhile, and tdm_pool_wait returns once every share ran
 * exactly once; without workers the post runs everything itself. */
typedef struct post_gate {
    atomic_int open;
    counts c;
} post_gate;

static void gated_share(void *arg, int k, int n)
{
    post_gate *g = arg;
    while (!atomic_load(&g->open)) nap_us(100);
    count_share(&g->c, k, n);
}

Test(pool, post_then_wait, .timeout = 60)
{
    const int threads[] = {1, 2, 4};
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
        tdm_pool *p = NULL;
        cr_assert_eq(tdm_pool_create(threads[t], "test", &p), TDM_OK);
        enum { N = 16 };
        post_gate g = {threads[t] == 1, {N, calloc(N, sizeof(atomic_int)), 0}};
        cr_assert_not_null(g.c.hits);
        tdm_pool_job j;
        tdm_pool_post(p, &j, gated_share, &g, N);
        if (threads[t] > 1) {
            /* the gate is shut: nothing can have finished, and the caller is free */
            cr_assert_eq(tdm_pool_done(&j), 0, "%d threads: done before any share could run", threads[t]);
            run_counted(p, 5); /* another job meanwhile, finished by its caller */
            atomic_store(&g.open, 1);
        } else {
            cr_assert_eq(tdm_pool_done(&j), 1, "no workers: the post ran every share");
        }
        tdm_pool_wait(p, &j);
        cr_assert_eq(tdm_pool_done(&j), 1);
        cr_assert_eq(atomic_load(&g.c.wrong), 0);
        for (int k = 0; k < N; k++)
            cr_assert_eq(atomic_load(&g.c.hits[k]), 1, "%d threads: share %d ran %d times", threads[t], k,
                         atomic_load(&g.c.hits[k]));
        free(g.c.hits);
        tdm_pool_destroy(p);
    }
}
