/* The dispatcher: pools Query requests from every connection into engine runs.
 *
 * The loop thread submits validated query jobs. A dispatcher thread waits for
 * work, takes everything queued (up to max_batch_tasks tasks and
 * max_batch_pairs reserved contact pairs; always at least one job) as one batch,
 * runs it with a single tdm_sched_run, and hands the finished jobs back to the
 * loop through uv_async_send. There is no timer and no waiting for a batch to
 * fill: while the engine is busy, new jobs queue up, and the next batch is
 * whatever arrived meanwhile — under light load a query runs alone at once,
 * under heavy load batches grow by themselves.
 *
 * There are as many dispatcher threads as the engine has lanes
 * (tdm_sched_lanes): while one thread's batch is on the GPU, another takes the
 * next batch and prepares it, so the host work around each run (gathering the
 * queries, building tasks, folding results) overlaps the device's work. Jobs
 * may therefore finish out of order (the protocol allows it).
 *
 * The dispatcher threads touch only the queue and the job's engine-facing
 * fields; they never touch a libuv handle, a connection or the store. */
#ifndef TDM_DAEMON_DISPATCH_H
#define TDM_DAEMON_DISPATCH_H

#include <uv.h>

#include "../workpile/sched.h"

typedef struct tdm_query_job tdm_query_job;

struct tdm_query_job {
    tdm_query_job *next;
    /* loop side; the dispatcher never reads these */
    void *owner;          /* the connection */
    void *scene_ref;      /* the stored scene, referenced while the job lives */
    uint64_t request_id;
    uv_work_t work;       /* large jobs: pose conversion on libuv's thread pool */
    double *raw;          /* the pose numbers as sent, while they wait for conversion */
    int bad_code;         /* conversion: 0, or the error code of the first bad pose */
    uint32_t bad_object;  /* ... its movable object (index into scene->movable) */
    size_t bad_query;     /* ... its query */
    double bad_norm;      /* ... its quaternion's norm */
    struct tdm_frame *frame; /* the packed reply (by the `ran` callback, on the dispatcher thread) */
    int frame_too_large;
    /* engine side */
    const tdm_scene *scene;
    tdm_mode mode;
    uint32_t max_contacts;   /* >= 1 */
    uint32_t n_queries;
    uint64_t n_tasks;        /* n_queries x scene checks: the batch cap counts these */
    uint64_t pairs_reserved; /* n_queries x max_contacts when pairs are wanted, else 0 */
    tdm_xform *poses;        /* n_queries x scene->n_movable */
    tdm_sched_result *results; /* n_queries, filled by the dispatcher */
    tdm_sched_contact *pairs;      /* NULL, or n_queries x max_contacts: query i's pairs start at i x max_contacts */
    int rc;                  /* TDM_OK, or the engine's error: results are then undefined */
};

typedef struct tdm_dispatch tdm_dispatch;

typedef struct tdm_dispatch_stats {
    uint64_t batches, jobs, queries, tasks;
} tdm_dispatch_stats;

/* ran (may be NULL): called on the dispatcher thread for each job of a batch
 * once the engine has run it (rc and results set), e.g. to pack its reply off
 * the loop; it must not touch loop-side state. done: called on the loop thread
 * for every finished job (which it then owns). */
int tdm_dispatch_create(uv_loop_t *loop, tdm_sched *engine, uint64_t max_batch_tasks, uint64_t max_batch_pairs,
                        void (*ran)(tdm_query_job *job, void *data), void (*done)(tdm_query_job *job, void *data),
                        void *data, tdm_dispatch **out);
/* Loop thread. The job is the dispatcher's until `done` gets it back. */
void tdm_dispatch_submit(tdm_dispatch *d, tdm_query_job *job);
/* Jobs submitted and not yet handed back (loop thread). */
size_t tdm_dispatch_pending(const tdm_dispatch *d);
/* Any thread. */
void tdm_dispatch_get_stats(tdm_dispatch *d, tdm_dispatch_stats *s);
/* Runs what is queued, joins the thread, hands every job back, closes the async
 * handle; freed in its close callback. The engine is not destroyed. */
void tdm_dispatch_stop(tdm_dispatch *d);

#endif
