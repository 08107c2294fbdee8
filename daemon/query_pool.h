/* Query jobs between the loop and the pooler (workpile/pooler.h).
 *
 * A validated Query request becomes one tdm_query_job: the pooler's job (the
 * engine side: scene, poses, results, pairs) and what the loop needs to answer
 * it. The loop submits it here; the pooler pools it with every other query
 * waiting, from every connection, into an engine run on one of its threads;
 * there, or on a reply thread that thread hands the job to (tdm_query_pool_set_replies),
 * `ran` packs the reply (off the loop), then the job is queued for the loop of its
 * connection (its sink: each of tandemd's loops has one, io.h) and a write to its
 * eventfd wakes it; on that loop `done` sends the reply (unless the sender wrote it)
 * and frees the job.
 *
 * The pooler's threads touch only the job and this module's queue; never a
 * libuv handle or the catalogue, and of a connection only what
 * tdm_conn_reply_direct guards with its own lock (`ran` may write the reply to the
 * socket itself: conn.h). */
#ifndef TDM_DAEMON_QUERY_POOL_H
#define TDM_DAEMON_QUERY_POOL_H

#include <uv.h>

#include "../robot/robot_scene.h"
#include "../workpile/pooler.h"
#include "metrics.h"

typedef struct tdm_query_job tdm_query_job;
typedef struct tdm_query_sink tdm_query_sink;

struct tdm_query_job {
    tdm_pooler_job pool;  /* the engine side: the pooler's from submission to `ran` */
    /* loop side; the pooler never reads these */
    tdm_query_job *next;  /* this module's queue of finished jobs */
    tdm_query_sink *sink; /* its connection's loop's, where it goes back when finished */
    void *owner;          /* the connection */
    void *scene_ref;      /* the stored scene, referenced while the job lives */
    uint64_t request_id;
    tdm_metrics_mark mark; /* the request's metrics scope, taken by its handler */
    tdm_xform *poses;     /* == pool.poses, written by pose conversion before submission */
    uv_work_t work;       /* large jobs: pose conversion on libuv's thread pool */
    double *raw;          /* the pose (or configuration) numbers as sent, while they wait for conversion */
    struct tdm_arena *arena; /* large requests: the decoded request, raw's memory (codec.h), freed with the job */
    const tdm_robot_scene *rs; /* robot scenes queried with configurations (else NULL): raw holds
                                  n_queries x rs->robot->n_active joint values, converted by FK */
    size_t bad_index;     /* configurations: the first non-finite number's index in Query.configs */
    int bad_code;         /* conversion: 0, or the error code of the first bad pose */
    uint32_t bad_object;  /* ... its movable object (index into scene->movable) */
    size_t bad_query;     /* ... its query */
    double bad_norm;      /* ... its quaternion's norm */
    struct tdm_frame *frame; /* the packed reply (by `ran`, on the pooler thread) */
    int frame_too_large;
    int sending;          /* the pool's sender is writing `frame` (atomic; query_pool.c): the loop
                             leaves the job queued until it has */
    int sent_direct;      /* the sender wrote all of `frame` to the socket itself */
    int counted;          /* the sender counted its queries in the server's counters */
    tdm_query_job *reply_next; /* the reply threads' queue (query_pool.c) */
    /* TDM_DISPATCH_TRACE: when it was first submitted (ms, CLOCK_MONOTONIC), its runs, and their
       waits in the pooler's queue and times from their batch's take to their end, summed */
    double trace_submit_ms, trace_wait_ms, trace_run_ms;
    uint32_t trace_runs;
    uint64_t trace_read_ns; /* TDM_REQUEST_TRACE: its connection's last read before it was taken (conn.h) */
    /* Optional hooks of jobs that are more than one run (MotionCheck): `again`, on the
     * pooler thread after each successful run, reads the results and sets up the next
     * run (pool.n_queries, n_tasks, poses) and returns 1, or returns 0 when the job is
     * finished; the pool resubmits it (a refused resubmission finishes it with
     * TDM_ECANCELED). `pack` makes the reply frame in place of a QueryReply; `cleanup`
     * frees what the job owns besides itself. */
    int (*again)(tdm_query_job *job);
    struct tdm_frame *(*pack)(tdm_query_job *job, int *too_large);
    void (*cleanup)(tdm_query_job *job);
    /* the connection's accounting (budget.h): its list of jobs in flight, what the job
     * is charged (work) and the bound on its reply promised on the connection */
    tdm_query_job *conn_prev, *conn_next;
    uint64_t mem_charged, reply_bound;
    int tracked;
};

typedef struct tdm_query_pool tdm_query_pool;

#define TDM_QUERY_POOL_MAX_REPLY_THREADS 16

/* Starts the pooler on engine (borrowed, must outlive it) with its batch caps.
 * ran (may be NULL): called on a pooler thread for each job once the engine
 * has run it (pool.rc and results set), e.g. to pack its reply off the loop; it
 * must not touch loop-side state. done: called on the job's loop (its sink's) for
 * every finished job (which it then owns), holding the server's lock. Both get
 * `data`. Returns 0, TDM_ENOMEM or TDM_ESYS. */
int tdm_query_pool_create(tdm_sched *engine, uint64_t max_batch_tasks, uint64_t max_batch_pairs,
                          void (*ran)(tdm_query_job *job, void *data), void (*done)(tdm_query_job *job, void *data),
                          void *data, tdm_query_pool **out);
/* A loop's sink (io.h): the finished jobs of that loop's connections wait there for it
 * (job->sink, set before submission), and it is woken for them. Made before the loop
 * runs; its callbacks call lock(lock_arg) and unlock (the server's lock, shared: io.h). 0,
 * TDM_ENOMEM or TDM_ESYS. */
int tdm_query_pool_sink(tdm_query_pool *qp, uv_loop_t *loop, void (*lock)(void *), void (*unlock)(void *),
                        void *lock_arg, tdm_query_sink **out);
/* The sink's loop, once no job of it is in flight: hands back what is left, closes its
 * handles (freed in their close callbacks). It outlives the pool. */
void tdm_query_sink_close(tdm_query_sink *s);
/* Before the first submit: send (on the pooler or reply thread, for a job whose `ran` left a
 * frame) writes the reply itself, after the job has been queued for the loop and before
 * the loop may take it, so that whatever the client does on seeing the reply, the loop
 * finds the job to account first (tdm_query_sink_collect; the one window left is between
 * the write's return and the mark that it is done, far shorter than any client's turn). */
void tdm_query_pool_set_sender(tdm_query_pool *qp, void (*send)(tdm_query_job *job, void *data));
/* Before the first submit, after tdm_query_pool_set_sender and tdm_query_pool_set_poll: n
 * threads (at most TDM_QUERY_POOL_MAX_REPLY_THREADS) pack and write the replies instead of the
 * pooler's threads, which queue their finished jobs in order and go on to their next batch.
 * Idle, they poll as long as the pooler's threads do before they sleep. 0 or TDM_ESYS (the
 * threads started are kept). */
int tdm_query_pool_set_replies(tdm_query_pool *qp, int n);
/* The sink's loop, holding the server's lock: hands every finished job to `done` now
 * (what the wake-up does), so that a request is handled after the jobs whose
 * replies its client may have seen; a job whose reply is still being written stays
 * queued (its writer wakes the loop). */
void tdm_query_sink_collect(tdm_query_sink *s);
/* The sink's loop, not holding the server's lock: finishes this loop's jobs the express ring has
 * answered (tdm_query_pool_set_express's on_loop), as the loop does once a turn; called between
 * connections' reads too, so that an answer does not wait for every read of a turn. */
void tdm_query_sink_poll(tdm_query_sink *s);
/* The same, waiting for replies being written, so that every job whose reply a client
 * may have seen is let go (before a refusal for memory). */
void tdm_query_sink_settle(tdm_query_sink *s);
/* Holding the server's lock. The job is the pool's until `done` gets it back, on the loop
 * of job->sink. */
void tdm_query_pool_submit(tdm_query_pool *qp, tdm_query_job *job);
/* The pooler's fairness rules (workpile/pooler.h); before the first submit. */
void tdm_query_pool_set_fairness(tdm_query_pool *qp, const tdm_pooler_fairness *f);
/* The pooler's host threads take requests of at most max_configs configurations
 * (tdm_pooler_set_host); before the first request. */
void tdm_query_pool_set_host(tdm_query_pool *qp, uint32_t max_configs);
/* The pooler's express ring takes requests of at most max_configs configurations
 * (tdm_pooler_set_express); before the first request. on_loop: the loops poll the ring for
 * the requests they submitted and write those replies themselves (tdm_pooler_set_express_polled),
 * else the pooler's express thread polls and the reply threads write. TDM_ESYS. */
int tdm_query_pool_set_express(tdm_query_pool *qp, uint32_t max_configs, int on_loop);
/* The pooler's threads' polling when idle (tdm_pooler_set_poll); before the first request. */
void tdm_query_pool_set_poll(tdm_query_pool *qp, uint64_t us);
/* Jobs submitted and not yet handed back, over every sink (holding the server's lock). */
size_t tdm_query_pool_pending(const tdm_query_pool *qp);
/* Owners (connections or tenants, --share-by) with jobs waiting for an engine lane now. Any thread. */
size_t tdm_query_pool_owners_waiting(tdm_query_pool *qp);
/* Batches, jobs, queries and tasks the pooler ran. Any thread. */
void tdm_query_pool_get_stats(tdm_query_pool *qp, tdm_pooler_stats *s);
/* Runs what is queued, joins the pooler's threads (every job is handed back to its
 * sink) and frees the pool; the sinks stay until closed. The engine is not destroyed. */
void tdm_query_pool_stop(tdm_query_pool *qp);

#endif
