/* The pooler: query jobs from any number of submitters, pooled into engine runs.
 *
 * Submitters (tandemd's loop, one per client connection's request; a test's
 * threads) hand in jobs, each a block of queries on one scene. A pooler thread
 * waits for work, takes everything queued (up to max_batch_tasks tasks and
 * max_batch_pairs reserved contact pairs; always at least one job, so a job
 * over either cap runs alone) as one batch, runs it with a single
 * tdm_sched_run, and calls `finished` once per job. There is no timer and no
 * waiting for a batch to fill: while the engine is busy, new jobs queue up, and
 * the next batch is whatever arrived meanwhile. Under light load a query runs
 * alone at once; under heavy load batches grow by themselves. Pooling small
 * requests from many clients into large runs is what keeps every core (or the
 * GPU) busy.
 *
 * There are as many pooler threads as the engine has lanes (tdm_sched_lanes:
 * lanes per GPU engine x GPU engines, at most 64): while one thread's batch is on the GPU, another takes the next
 * batch and prepares it, so the host work around each run (gathering the
 * queries, building tasks, folding results, the `finished` callbacks) overlaps
 * the device's work. Jobs may therefore finish out of submission order. Beside
 * them, one host thread per host lane of the scheduler (tdm_sched_host_lanes)
 * takes the jobs of a few configurations alone (tdm_pooler_set_host).
 *
 * A job is weighed against max_batch_tasks by its tasks (n_queries x the
 * scene's checked pairs), or by its queries when that is more (a scene with no
 * checked pair costs no traversal but still takes scratch).
 *
 * TDM_DISPATCH_TRACE set in the environment prints one line per batch on
 * stderr: which thread, how long it waited for work, jobs, queries, and where
 * the run's time went (gather, engine, results, the `finished` callbacks as
 * "replies"). The threads are named "tdm-dispatch" (top -H, /proc;
 * bench/thread_cpu.sh reports them under that name).
 *
 * Nothing here knows of sockets, event loops or the wire protocol. */
#ifndef TDM_WORKPILE_POOLER_H
#define TDM_WORKPILE_POOLER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "sched.h"

typedef struct tdm_pooler_job tdm_pooler_job;

/* Who a job is for, so that the lanes share themselves between owners (tdm_pooler_set_share):
 * tandemd makes each connection one, or each tenant. The submitter keeps it zeroed until its
 * first job and alive while any job of it is submitted; the pooler owns its fields, under its
 * lock, meanwhile. */
typedef struct tdm_pooler_owner {
    tdm_pooler_job *head, *tail; /* its jobs in the lanes' queue, oldest first */
    uint64_t finish;             /* the virtual finish tag of its last job queued */
    size_t heap_at;              /* its place in the pooler's heap of owners with jobs queued, + 1 (0: none) */
} tdm_pooler_owner;

/* A block of queries on one scene. The submitter fills everything but `next`
 * and `rc`, and owns every pointer: they must stay valid until `finished`. A
 * submitter that needs more per job embeds this struct in its own and gets back
 * to it from `finished` (offsetof). */
struct tdm_pooler_job {
    tdm_pooler_job *next;      /* the pooler's while the job is submitted */
    const tdm_scene *scene;    /* borrowed */
    tdm_mode mode;
    uint32_t max_contacts;     /* contacts mode: >= 1 (0 makes the run fail with TDM_EINVAL) */
    uint32_t n_queries;        /* >= 1 */
    uint64_t n_tasks;          /* n_queries x scene->n_checks: what max_batch_tasks counts */
    uint64_t pairs_reserved;   /* n_queries x max_contacts when pairs are wanted, else 0: what
                                  max_batch_pairs counts */
    const tdm_xform *poses;    /* n_queries x scene->n_movable, query-major (unused with configs) */
    const double *configs;     /* NULL, or a batch of robot configurations instead of poses: n_queries x
                                  kin->n_q joint values, query-major, finite; scene's movable objects are
                                  kin's elements. Such a job is pooled only with jobs of configurations
                                  with as many joint values (any robot scene), of the same mode and cap,
                                  and only when the engine runs them on the device
                                  (tdm_sched_run_configs_groups_device: one device run for all; should it
                                  refuse the input, say a job's non-finite value, each job runs alone and
                                  gets its own error); otherwise it runs alone through
                                  tdm_sched_run_configs, against its own work account. On the device a query weighs an eighth of its tasks
                                  against max_tasks and the slice (culling there keeps about a tenth).
                                  pairs must be NULL */
    const tdm_kin *kin;        /* with configs: the robot's kinematics (borrowed) */
    tdm_pooler_owner *owner;   /* NULL, or whom it is for (borrowed; see tdm_pooler_owner): NULL jobs share
                                  one owner of the pooler's */
    void (*fill)(tdm_pooler_job *job); /* NULL, or makes the job's poses or configurations, which the
                                  submitter has sized (n_queries, n_tasks) and placed but not written:
                                  called once, on the pooler thread that first takes the job, before its
                                  first run (never for a job cancelled while queued), or on the submitting
                                  thread for a job that goes to the express ring (tdm_pooler_set_express:
                                  it is published at once); the pooler clears it. So that work need not be
                                  done on the submitting thread (tandemd's loop) when it waits anyway */
    tdm_sched_result *results; /* n_queries, written by the pooler */
    tdm_sched_contact *pairs;  /* NULL, or n_queries x max_contacts: query i's pairs start at
                                  i x max_contacts */
    uint64_t max_work;         /* box + triangle tests the job may cost, over all its runs (the CPU
                                  engine counts them, geom/query.h's tdm_work); 0: no limit */
    int any_stop;              /* bool mode: the job asks only whether any of its queries collides (a
                                  planner's motion round asking for any colliding state): once one
                                  collides the CPU engine may answer those after it free, unrun
                                  (tdm_sched_query.any_stop); the device engines answer them all */
    int rc;                    /* set before `finished`: TDM_OK; TDM_EBUDGET (over max_work),
                                  TDM_ECANCELED (below); or the engine's error for the whole batch
                                  (TDM_EINVAL, TDM_ENOMEM); results are then undefined */
    atomic_int cancel;         /* set (tdm_pooler_job_cancel, any thread) when nobody waits for the
                                  answers any more: a job still queued is not run but finished at
                                  once with TDM_ECANCELED; a job in a run has its traversals stopped
                                  at their next work step (the CPU engine; tdm_work.stop) and is
                                  finished with TDM_ECANCELED. The submitter zeroes it before the
                                  first submission; the pooler never clears it. */
    /* the pooler's, while submitted */
    tdm_work work;             /* the account every task of the job counts against */
    uint32_t done;             /* queries answered by earlier slices */
    uint32_t turn;             /* queries in the run being made */
    uint64_t seq;              /* submission order, across the two queues */
    uint64_t tag;              /* its virtual start tag in its owner's queue (tdm_pooler_set_share) */
    double queued_ms;          /* TDM_DISPATCH_TRACE: when it was last queued (ms, CLOCK_MONOTONIC) */
    double taken_ms;           /* ... and when its batch was taken */
    int small, demoted, latency_turn, host;
    int no_express;            /* this submission not through the express ring (given back by it) */
    tdm_sched_express express; /* ... while in it */
};

/* Marks a job cancelled (see `cancel`). Any thread, any time between submission and
 * `finished`, or before submission. */
static inline void tdm_pooler_job_cancel(tdm_pooler_job *j)
{
    atomic_store_explicit(&j->cancel, 1, memory_order_relaxed);
    __atomic_store_n(&j->work.stop, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&j->work.over, 1, __ATOMIC_RELEASE); /* the verdict, even if no traversal takes a step */
}
static inline int tdm_pooler_job_cancelled(const tdm_pooler_job *j)
{
    return atomic_load_explicit(&((tdm_pooler_job *)j)->cancel, memory_order_relaxed);
}

/* Fairness (issue 14): one client's large job must not hold a small one behind
 * it for long.
 * - Slices: a job of more than slice_tasks tasks runs slice_tasks worth of its
 *   queries (at least one) per turn and then goes to the back of the queue, so
 *   large jobs take turns with each other and with everything queued after them.
 * - The latency lane: with two or more pooler threads, thread 0 runs only small
 *   jobs (at most latency_tasks tasks, and, by what their scene's jobs cost lately
 *   (tdm_scene.cost_hint, learned from the CPU engine's counts), within
 *   latency_work), each with a budget of latency_work tests
 *   for that run; a small job that needs more is given up there and queued again
 *   for the other threads (its work so far is lost, its answer is not). So a small
 *   job waits at most for the small jobs ahead of it, each cut at latency_work,
 *   however large the other jobs are. The other threads take the oldest job of
 *   either kind.
 * Defaults (tdm_pooler_fairness_default): slice_tasks = max_batch_tasks,
 * latency_tasks 256, latency_work 256 Ki tests (~2-20 ms of one core: the batch of small jobs the lane
 * runs holds each of them, on as little as one thread while the other lanes keep
 * the pool busy). */
/* Shares (on by default; TDM_POOLER_SHARE=0 in the environment at create, or
 * tdm_pooler_set_share(p, 0), turns them off for A/B runs): the jobs that the
 * latency lane may not take wait in one queue per owner (tdm_pooler_job.owner),
 * and a lane's next batch starts with the job of the least virtual start tag
 * (start-time fair queueing, weighted by tasks: a job's tag is the later of the
 * pooler's virtual time and its owner's last finish tag; its finish tag that plus
 * the weight of its turn; the virtual time the tag of the batch taken last).
 * The batch is then joined, up to the caps, by the compatible jobs after it in
 * its owner's queue and at the heads of the other owners' queues (at most
 * SHARE_VISIT of them looked at). So an owner that sends little waits for at
 * most one turn of each other owner with work queued, not for everything queued
 * before it, and a flood of one owner's requests takes turns with the rest;
 * between the owners' jobs and the small ones the older goes first, as before.
 * Without shares (or with every job's owner NULL) the queue is first come,
 * first served. */
typedef struct tdm_pooler_fairness {
    uint64_t slice_tasks;   /* 0: max_batch_tasks */
    uint64_t latency_tasks; /* 0: no latency lane */
    uint64_t latency_work;  /* 0: no budget on the latency lane */
} tdm_pooler_fairness;

tdm_pooler_fairness tdm_pooler_fairness_default(void);

/* One engine run, for the optional `ran` hook. */
typedef struct tdm_pooler_batch {
    int thread;        /* which pooler thread ran it, 0 .. lanes - 1, then the host threads (lanes + k) */
    size_t jobs;
    size_t queries;
    uint64_t tasks;    /* sum of n_tasks */
    uint64_t weight;   /* what max_batch_tasks capped: sum of max(n_tasks, n_queries) */
    uint64_t pairs;    /* what max_batch_pairs capped: sum of pairs_reserved */
    int rc;            /* the run's result, also each job's rc */
} tdm_pooler_batch;

typedef struct tdm_pooler_stats {
    uint64_t batches, jobs, queries, tasks; /* engine runs done, and what they held */
    uint64_t cancelled;                     /* jobs finished unrun: cancelled while queued */
    uint64_t owners;                        /* now: owners with jobs in the lanes' queue (shares) */
} tdm_pooler_stats;

typedef struct tdm_pooler tdm_pooler;

/* Starts the pooler threads on engine (borrowed: it must outlive the pooler).
 * max_batch_tasks: 0 counts as 1. finished (required) is called on a pooler
 * thread once per job, after its batch ran (job->rc and results set; the job is
 * the caller's again from then on); ran (optional) is called on that thread once
 * per batch, before its jobs' `finished`. Both get `data`, may run on several
 * pooler threads at once, and must not stop this pooler (they may submit: the
 * daemon submits a motion's next round from `finished`). A
 * batch is counted in the stats before its jobs are finished. Returns 0,
 * TDM_EINVAL (no engine or no `finished`), TDM_ENOMEM or TDM_ESYS; on failure
 * nothing is started and neither callback is ever called. With TDM_ASYNC_LANES=1 in
 * the environment at create (A/B runs) and a device engine for configurations, each
 * lane's thread keeps several device runs of configurations in flight
 * (tdm_sched_async), finishing each batch as its run ends; the callbacks are as above.
 * A lane's thread about to sleep first frees the device copies of trees removed
 * meanwhile (tdm_sched_reclaim); the pooler sets the engine's removal hook
 * (tdm_sched_on_removed) to wake one for it, until tdm_pooler_stop. */
int tdm_pooler_create(tdm_sched *engine, uint64_t max_batch_tasks, uint64_t max_batch_pairs,
                      void (*finished)(tdm_pooler_job *job, void *data),
                      void (*ran)(const tdm_pooler_batch *batch, void *data), void *data, tdm_pooler **out);
/* Runs what is still queued, finishes it, joins the threads. Idempotent. Not
 * from a callback. */
void tdm_pooler_stop(tdm_pooler *p);
/* Host threads (the scheduler's host lanes, tdm_sched_host_lanes: one thread each,
 * named "tdm-host"): a job of configurations of at most max_configs queries (0,
 * the default: none) goes to them instead, and one of them runs it alone and at
 * once on the CPU engine, on its own thread (tdm_sched_run_configs_host), against
 * its own work account. A planner's single state costs the CPU engine tens of
 * microseconds, less than a device run takes to start, and it no longer waits for
 * one (bench/results/ompl_resident.md). Before the first submit. */
void tdm_pooler_set_host(tdm_pooler *p, uint32_t max_configs);
/* The express ring (workpile/sched.h, tdm_sched_express_*; tandemd sends it single
 * configurations by default with a GPU engine): once the engine's ring is started
 * (tdm_sched_express_start), a job of configurations of at most max_configs queries (at
 * most TDM_SCHED_EXPRESS_MAX; 0, the default: none) that no host thread takes is
 * published into the ring on the submitting thread, with no queue and no batch; one more
 * thread ("tdm-express") polls for the answers, finishes the jobs (its `finished` calls,
 * then the batch end hook, once a pass) and runs a job the ring gives back (it outgrew a
 * block, or the ring is full or failed) the pooled way. Before the first submit;
 * TDM_ESYS if the thread cannot start. */
int tdm_pooler_set_express(tdm_pooler *p, uint32_t max_configs);
/* The same ring with its answers polled by the submitters instead of a thread of its own
 * (tandemd's loops: each polls what it published between its reads and writes the replies
 * itself, two thread hand-offs fewer a request and no polling thread; measured in
 * bench/results/ompl_resident.md, section 26): only tdm_pooler_submit_polled publishes,
 * tdm_pooler_submit never does, and no thread is started. Before the first submit. */
void tdm_pooler_set_express_polled(tdm_pooler *p, uint32_t max_configs);
/* As tdm_pooler_submit; with the polled ring, a job the ring may take is published into it
 * on this thread (its `fill` called here first). Returns 1 when it was: it is then this
 * caller's to poll with tdm_pooler_poll_express (no pooler thread touches it); TDM_OK when it
 * was submitted as tdm_pooler_submit would (finished through `finished`; with a ring that is
 * not polled, its thread's); TDM_EINVAL once stopping (as tdm_pooler_submit). */
int tdm_pooler_submit_polled(tdm_pooler *p, tdm_pooler_job *job);
/* A job tdm_pooler_submit_polled published, on the thread that polls it: 0, not answered
 * yet; 1, over: rc, done and results are set as for `finished`, which is not called for it,
 * and the job is the caller's again; 2, the ring gave it back (it outgrew a block, or the
 * ring failed): it went the usual way and comes back through `finished`. */
int tdm_pooler_poll_express(tdm_pooler *p, tdm_pooler_job *job);
/* Keeps the polled ring's kernel running (a launch when the running one is past half its
 * life): whoever polls calls it while jobs are published, every few tens of microseconds.
 * One call at a time does the work; the others return at once. */
void tdm_pooler_keep_express(tdm_pooler *p);
/* The host threads started: tdm_sched_host_lanes(engine), at most 8. */
int tdm_pooler_host_threads(const tdm_pooler *p);
/* How long an idle thread polls for work before it sleeps, in µs (0: it sleeps at
 * once). The default: 200 when the engine runs configurations on the device, else 0;
 * TDM_POOLER_SPIN_US in the environment, read at create, sets it too; TDM_POLL_YIELD=1
 * (A/B runs) has a polling thread yield its core every few µs while it polls. Before the
 * first submit. */
void tdm_pooler_set_poll(tdm_pooler *p, uint64_t us);
/* The idle threads' polling now (tdm_pooler_set_poll, or its default), in ns. Any thread. */
uint64_t tdm_pooler_poll_ns(tdm_pooler *p);
/* Shares between owners on (1) or off (0); before the first submit. */
void tdm_pooler_set_share(tdm_pooler *p, int on);
/* Sets the fairness rules; before the first submit. */
void tdm_pooler_set_fairness(tdm_pooler *p, const tdm_pooler_fairness *f);
/* Before the first submit: `end` (with the create's data) is called on the pooler thread
 * after the `finished` calls of each batch, e.g. to wake a loop once for all of them. */
void tdm_pooler_set_batch_end(tdm_pooler *p, void (*end)(void *data));
/* Stops (when not stopped yet) and frees. NULL is a no-op. */
void tdm_pooler_destroy(tdm_pooler *p);

/* Queues a job (its `next` and `rc` are overwritten). Any thread; takes no lock
 * (a lock-free push, and the lock only to wake a sleeping thread). Returns 0, or
 * TDM_EINVAL once the pooler is stopping: the job is then not taken and
 * `finished` is not called for it. */
int tdm_pooler_submit(tdm_pooler *p, tdm_pooler_job *job);
/* Jobs submitted whose `finished` has not returned yet. Any thread. */
size_t tdm_pooler_pending(tdm_pooler *p);
/* A snapshot. Any thread. */
void tdm_pooler_get_stats(tdm_pooler *p, tdm_pooler_stats *s);
/* The pooler threads: tdm_sched_lanes(engine), at most 64. */
int tdm_pooler_threads(const tdm_pooler *p);

#endif
