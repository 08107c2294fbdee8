/* What the engines' one thread pool (workpile/pool.h) costs a job when several threads post jobs
 * at once, as a GPU engine's lanes do (fills, copies, folds: a few shares of a few microseconds
 * each): P posting threads each run jobs of S shares, each share W microseconds of work, one after
 * another for D seconds, on a pool of T threads. Prints one line: jobs/s, the process's CPU a job
 * (all threads, getrusage), and its context switches a job.
 *
 *   bench_pool_cost [--threads T] [--posters P] [--shares S] [--work-us W] [--seconds D]
 *
 * The pool's wake-up policy is read from the environment (TDM_POOL_WAKE=need: pool.h), so the two
 * are compared by running this twice. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "workpile/pool.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double work_s;

static void share(void *arg, int k, int n)
{
    (void)k, (void)n;
    atomic_fetch_add((atomic_ullong *)arg, 1);
    double t0 = now_s();
    while (now_s() - t0 < work_s) {
    }
}

typedef struct poster {
    pthread_t th;
    tdm_pool *pool;
    int shares;
    double seconds;
    unsigned long long jobs;
    atomic_ullong ran;
} poster;

static void *post_main(void *arg)
{
    poster *q = arg;
    double t0 = now_s();
    while (now_s() - t0 < q->seconds) {
        tdm_pool_run(q->pool, share, &q->ran, q->shares);
        q->jobs++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = 32, posters = 6, shares = 8;
    double work_us = 2, seconds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--posters")) posters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--shares")) shares = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--work-us")) work_us = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else {
            fprintf(stderr, "bench_pool_cost: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    if (threads < 1 || threads > 4096 || posters < 1 || posters > 256 || shares < 1 || work_us < 0 || seconds <= 0) {
        fprintf(stderr,
                "usage: bench_pool_cost [--threads T] [--posters P] [--shares S] [--work-us W] [--seconds D]\n");
        return 2;
    }
    work_s = 1e-6 * work_us;
    tdm_pool *pool;
    if (tdm_pool_create(threads, "tdm-cpu", &pool) != TDM_OK) return 1;
    poster *q = calloc((size_t)posters, sizeof *q);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now_s();
    for (int i = 0; i < posters; i++) {
        q[i] = (poster){.pool = pool, .shares = shares, .seconds = seconds};
        pthread_create(&q[i].th, NULL, post_main, &q[i]);
    }
    unsigned long long jobs = 0, ran = 0;
    for (int i = 0; i < posters; i++) {
        pthread_join(q[i].th, NULL);
        jobs += q[i].jobs;
        ran += atomic_load(&q[i].ran);
    }
    double wall = now_s() - t0;
    getrusage(RUSAGE_SELF, &r1);
    tdm_pool_destroy(pool);
    free(q);
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + 1e-6 * (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
                 (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + 1e-6 * (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
    long csw = (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw);
    const char *w = getenv("TDM_POOL_WAKE");
    printf("wake=%s threads=%d posters=%d shares=%d work_us=%g jobs=%llu jobs_per_s=%.0f cpu_us_per_job=%.2f "
           "cores=%.2f csw_per_job=%.2f shares_ok=%d\n",
           w && *w ? w : "default", threads, posters, shares, work_us, jobs, (double)jobs / wall,
           1e6 * cpu / (double)(jobs ? jobs : 1), cpu / wall, (double)csw / (double)(jobs ? jobs : 1),
           ran == jobs * (unsigned long long)shares);
    return ran == jobs * (unsigned long long)shares ? 0 : 1;
}
