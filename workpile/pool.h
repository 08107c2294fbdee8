/* The one thread pool: a parallel for over "shares" that every engine uses.
 *
 * tdm_pool_run(p, fn, arg, n) calls fn(arg, k, n) once for every share k in
 * [0, n), on the caller's thread and the pool's workers, and returns when all n
 * have returned. A share is claimed by whichever thread gets to it first, so a
 * caller never waits for a worker that is still asleep: it works through the
 * unclaimed shares itself and then waits only for those being run.
 *
 * Several threads may run jobs at once (the scheduler's lanes do: one lane's
 * CPU work while another's batch is on the GPU): their jobs are in flight side
 * by side and idle workers take shares of any of them, oldest job first. Each
 * caller always works on its own job, so every job finishes even when all
 * workers are busy elsewhere.
 *
 * What a share does is the caller's affair: the CPU engine's shares pull small
 * chunks of tasks from one atomic counter (load balance), a fill's shares are
 * fixed ranges. fn must not call tdm_pool_run on the same pool from a worker
 * (a share that waits for other shares could wait on itself).
 *
 * Workers spin briefly for new work before they sleep: a job posted within a
 * few microseconds of the last one starts without a wake-up (the GPU engine's
 * fills come in quick succession); spinning longer cost tandemd throughput on a
 * loaded host (gpu/resident.cu's fill team measured it: 12.3M vs 7.8M queries/s
 * with a 1 ms spin). A post signals as many sleeping workers as its shares (less
 * the caller's), under the pool's lock. TDM_POOL_WAKE=need (an A/B switch, read at
 * tdm_pool_create; not measured on a GPU host yet) signals only the sleepers its
 * shares need past the workers spinning at that moment, after the unlock: with
 * two GPU engines' six lanes posting into one pool of 31 workers, the pool's
 * threads held 14-17 cores against 3-4 with one engine (bench/results/issue14.md,
 * "The two-GPU figure"), and wake-ups for shares a spinning worker takes first
 * are one suspect. */
#ifndef TDM_WORKPILE_POOL_H
#define TDM_WORKPILE_POOL_H

#include <stddef.h>

#include "../geom/base.h"

typedef struct tdm_pool tdm_pool;

/* threads: every thread that works on a job, the caller's included (so
 * threads - 1 workers are started); 0: one per online core; 1: no workers, the
 * caller runs every share. name (<= 15 characters, optional) names the workers
 * for top -H and /proc. Returns 0, TDM_EINVAL (threads < 0 or > 4096), TDM_ENOMEM
 * or TDM_ESYS. */
int tdm_pool_create(int threads, const char *name, tdm_pool **out);
/* Joins the workers. No job may be running. */
void tdm_pool_destroy(tdm_pool *p);
/* The threads that work on a job, the caller's included. */
int tdm_pool_threads(const tdm_pool *p);

/* Runs fn(arg, k, n_shares) for k = 0 .. n_shares - 1, each exactly once, and
 * returns when all have returned. n_shares <= 0 does nothing; 1 runs on the
 * caller alone. Any thread (not a worker of p from inside fn). */
void tdm_pool_run(tdm_pool *p, void (*fn)(void *arg, int k, int n_shares), void *arg, int n_shares);

/* A job posted with tdm_pool_post, in the caller's memory, which it must leave
 * alone until tdm_pool_wait returns. The fields are the pool's. */
typedef struct tdm_pool_job {
    void (*fn)(void *, int, int);
    void *arg;
    int n, next;                /* shares, and the next to claim */
    int finished;               /* shares returned (atomic) */
    struct tdm_pool_job *link;  /* the pool's list of jobs with shares left */
} tdm_pool_job;

/* Starts fn(arg, k, n_shares) for every k on the workers and returns at once, so
 * that the caller does something else meanwhile (the GPU engine steps its
 * running slots while the next slot is filled); tdm_pool_wait(p, j) then runs
 * the shares still unclaimed on the caller and returns when every share has
 * returned. Every post needs its wait. Without workers, the shares run here,
 * before tdm_pool_post returns. */
void tdm_pool_post(tdm_pool *p, tdm_pool_job *j, void (*fn)(void *arg, int k, int n_shares), void *arg,
                   int n_shares);
/* 1 when every share of j has returned (then tdm_pool_wait returns at once). */
int tdm_pool_done(const tdm_pool_job *j);
void tdm_pool_wait(tdm_pool *p, tdm_pool_job *j);

typedef struct tdm_pool_stats {
    unsigned long long jobs;          /* jobs run (n_shares >= 1) */
    unsigned long long shares;        /* shares run */
    unsigned long long worker_shares; /* ... of them by workers (the rest by callers) */
} tdm_pool_stats;
/* A snapshot. Any thread. */
void tdm_pool_get_stats(tdm_pool *p, tdm_pool_stats *s);

#endif
