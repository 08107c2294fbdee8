/* Memory clients make tandemd hold, counted against limits (issue 14, "Memory").
 *
 * Every byte a client can make the daemon keep is charged to one of five
 * counters of the server's tdm_budget, and the sum of them to --max-memory:
 *
 *   input   partial frames: each connection's 64 KiB staging buffer (from its first
 *           read) and the buffer of a frame larger than it, as it grows (also bounded,
 *           all connections together, by --max-input-bytes);
 *   output  reply frames queued on a connection and not yet written (also bounded per
 *           connection by --max-output-bytes, below);
 *   work    query jobs (Query, MotionCheck) accepted and not yet answered: the job's
 *           own memory (transforms, results, reserved pairs) and a bound on the size
 *           of its reply, charged when it is accepted, before its reply exists;
 *   upload  decoded MeshPut, ScenePut, RobotPut and RobotScenePut requests waiting for
 *           the writer thread (also bounded by --max-upload-bytes);
 *   ring    the shared-memory mappings of same-host connections' rings (RingOpen), while
 *           their connections last (also bounded, all connections together, by
 *           --max-ring-memory; apart from input, so that many idle ring clients do not
 *           take the room of other clients' large frames).
 *
 * What happens at a limit: a large frame whose buffer cannot grow gets ERROR_BUSY
 * and the connection is closed (the rest of the frame is read and dropped); a Query
 * or MotionCheck that does not fit gets ERROR_BUSY; an upload that does not fit gets
 * ERROR_BUSY; a RingOpen that does not fit gets ERROR_BUSY and its connection stays on
 * the socket. Nothing already accepted is dropped. The decoding arena of the frame
 * being handled is not counted: it lives only while the loop handles that one frame
 * (a MeshPut's, handed to the writer, is counted as upload).
 *
 * Per connection, the reply queue is bounded by what is queued plus what its jobs in
 * flight hold and the bounds of their replies (`tdm_conn.promised`): above
 * --max-output-bytes the server
 * stops reading from it (so it starts no new work) until that sum is below half of it;
 * a connection with replies waiting that takes none of their bytes for
 * --output-stall-timeout seconds is closed, and so is one whose queued replies pass
 * --max-output-bytes-hard.
 *
 * Cancellation: the query jobs of a connection are listed on it; when it closes, each
 * is marked cancelled (tdm_pooler_job_cancel): jobs still queued in the pooler are
 * dropped unrun, running ones are answered into the void and freed.
 *
 * Loop threads only; the counters are atomic, as the loops charge queries' work holding
 * the server's lock shared (io.h). */
#ifndef TDM_DAEMON_BUDGET_H
#define TDM_DAEMON_BUDGET_H

#include <stddef.h>
#include <stdint.h>

enum tdm_mem_kind { TDM_MEM_INPUT, TDM_MEM_OUTPUT, TDM_MEM_WORK, TDM_MEM_UPLOAD, TDM_MEM_RING, TDM_MEM__KINDS };

typedef struct tdm_budget {
    uint64_t max;                   /* --max-memory, resolved */
    uint64_t used[TDM_MEM__KINDS];
    uint64_t total;                 /* sum of used */
    uint64_t peak;                  /* highest total seen */
    uint64_t refused;               /* requests and frames refused for memory */
} tdm_budget;

void tdm_budget_charge(tdm_budget *b, enum tdm_mem_kind k, uint64_t n);
void tdm_budget_release(tdm_budget *b, enum tdm_mem_kind k, uint64_t n);
/* 1 when n more bytes keep the total within max. */
int tdm_budget_room(const tdm_budget *b, uint64_t n);
/* Charges n bytes to kind k when they keep the total within max (at once: two loops never
 * both pass with room for one); 1 when charged, else 0. */
int tdm_budget_try_charge(tdm_budget *b, enum tdm_mem_kind k, uint64_t n);
/* "N bytes held (partial frames A, queued replies B, queries C, uploads D, rings R),
 * max-memory M"
 * into buf; returns buf. */
const char *tdm_budget_describe(const tdm_budget *b, char *buf, size_t len);
/* --max-memory 0: half of the machine's physical memory (sysconf; 8 GiB when it cannot
 * be read), or of the cgroup v2 memory limit (/sys/fs/cgroup/memory.max: a container's)
 * when that is lower. */
uint64_t tdm_budget_default_max(void);

/* ---- per connection (conn.h) ---- */

typedef struct tdm_conn tdm_conn;
typedef struct tdm_query_job tdm_query_job;

/* Can a query job of `mem` bytes whose reply is at most `reply` bytes be accepted
 * now? 0 after charging them (work), or -1 after sending ERROR_BUSY (request `id`)
 * naming what is held. Every 0 is followed by tdm_conn_job_track or, when the request
 * fails before it has a job, tdm_conn_job_unadmit with the same sizes. */
int tdm_conn_job_admit(tdm_conn *c, uint64_t id, uint64_t mem, uint64_t reply);
/* Gives back what tdm_conn_job_admit charged, for a request that failed before its job. */
void tdm_conn_job_unadmit(tdm_conn *c, uint64_t mem, uint64_t reply);
/* The job is accepted: what tdm_conn_job_admit charged (work) is its, its memory and reply
 * bound promised on the connection (its output), listed on it for cancellation. */
void tdm_conn_job_track(tdm_conn *c, tdm_query_job *j, uint64_t mem, uint64_t reply);
/* The job is answered or dropped: uncharged and unlisted. Does nothing for a job not
 * tracked. (The caller then calls tdm_conn_end, which resumes reading if it may.) */
void tdm_conn_job_untrack(tdm_conn *c, tdm_query_job *j);
/* Marks every job of the connection cancelled (its close). */
void tdm_conn_jobs_cancel(tdm_conn *c);

/* ---- uploads (writer.h) ---- */

typedef struct tdm_server tdm_server;
typedef struct tdm_writer_op tdm_writer_op;

/* Can a decoded upload of n bytes wait for the writer thread? 0, or -1 after sending
 * ERROR_BUSY (request `id`): over max-upload-bytes (one is always accepted when none is
 * waiting) or over max-memory. */
int tdm_conn_upload_admit(tdm_conn *c, uint64_t id, uint64_t n);
/* Counts an op's upload (op->upload_bytes = n) / uncounts it when the writer is done. */
void tdm_upload_charge(tdm_server *srv, tdm_writer_op *op, uint64_t n);
void tdm_upload_release(tdm_server *srv, tdm_writer_op *op);

#endif
