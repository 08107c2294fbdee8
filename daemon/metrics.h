/* Operations metrics: counters the daemon's parts bump as things happen, and
 * the gauges the loop publishes on every heartbeat; rendered as Prometheus text
 * (format 0.0.4) for GET /metrics (http.h). deploy/README.md lists every metric.
 *
 * Process-wide, as Redis's `server.stat_*`: one tandemd per process, and a bump is
 * one line wherever the event is (no handle to thread through the call chains).
 *
 * Threads. The counters are atomics (relaxed): any thread bumps them, the HTTP
 * thread reads them, nobody waits. The gauges (connections, the catalogue, the
 * queues, the engine's figures) belong to the loop or to objects the HTTP thread
 * must not touch; the loop copies them into one snapshot on each heartbeat
 * (tdm_metrics_publish) under a mutex that either side holds only for that copy.
 * So a scrape never blocks the loop, and a stalled loop shows as a stale
 * heartbeat (GET /healthz) rather than as a hung scrape.
 *
 * Request scopes (the loops, holding the server's lock: one scope open at a time). Latency and error counts are per request type,
 * but replies are sent from many places (handlers, the writer's and the query
 * pool's completions, libuv's after-work callbacks). The type and start time of
 * the request being answered travel as a scope: conn.c opens one around each
 * frame's handling (type "undecodable" until request.c names it), and work that
 * answers later carries a mark taken inside that scope (tdm_metrics_mark_take)
 * and re-enters it around its reply. The first reply queued in a scope records
 * the request's latency; every Error queued counts under the scope's type and
 * its code. An Error sent outside any request's handling (a refusal at accept, a
 * broken frame length, a wrong auth token answered after its delay, a frame
 * refused at shutdown) counts as type "connection". */
#ifndef TDM_DAEMON_METRICS_H
#define TDM_DAEMON_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "../workpile/sched.h"

/* Request types: the Request oneof's case numbers (tandem.proto), below this. */
#define TDM_METRICS_TYPES 64
enum { TDM_METRICS_CONNECTION = 0, TDM_METRICS_UNDECODABLE = 1 };
/* Error codes: the ErrorCode values, below this (a larger one is counted as code "OTHER"). */
#define TDM_METRICS_CODES 32

/* Sets the start time (uptime); once, before anything else. */
void tdm_metrics_init(const char *configured_engine);

/* ---- scopes (the loops, holding the server's lock) ---- */

typedef struct tdm_metrics_mark {
    int type;      /* request type (case number or TDM_METRICS_*) */
    uint64_t t0;   /* uv_hrtime when its frame was whole */
    int answered;  /* a reply was queued: its latency is recorded */
    int open;
} tdm_metrics_mark;

/* Opens a scope (type "undecodable", t0 now) and returns the one it replaces, for
 * tdm_metrics_leave. */
tdm_metrics_mark tdm_metrics_enter_frame(uint64_t now_ns);
/* Re-enters the scope of a request answered later; returns the replaced one. */
tdm_metrics_mark tdm_metrics_enter(const tdm_metrics_mark *m);
void tdm_metrics_leave(tdm_metrics_mark prev);
/* The request of the open scope decoded: counts it under its type and names the scope. */
void tdm_metrics_request(int body_case);
/* Copies the open scope (none open: a "connection" mark) into *m, for work that answers later. */
void tdm_metrics_mark_take(tdm_metrics_mark *m);
/* A reply is being queued (conn.c): the first one of the scope records its latency. */
void tdm_metrics_reply(void);
/* An Error reply with this code is being queued (conn.c). */
void tdm_metrics_error(int code);

/* ---- events (any thread) ---- */

/* An engine run of the pooler (workpile/pooler.h's tdm_pooler_batch): jobs pooled,
 * queries and (query, object pair) tasks in it. */
void tdm_metrics_batch(uint64_t jobs, uint64_t queries, uint64_t tasks);
/* A connection accepted / refused at accept (over a connection limit). */
void tdm_metrics_accepted(void);
void tdm_metrics_refused(void);

/* ---- gauges (the main loop, on each heartbeat) ---- */

typedef struct tdm_metrics_snapshot {
    uint32_t conns_open;            /* counted in max-connections */
    uint32_t conns_unauthenticated; /* of them before Hello */
    uint32_t conns_ring;            /* of them on shared-memory rings */
    uint32_t conns_ring_parked;     /* ... of those parked (idle past ring-park-us) */
    uint64_t ring_bytes;            /* the rings' mappings (max-ring-memory) */
    uint32_t meshes, scenes, robots;
    uint32_t scenes_ephemeral;      /* of the scenes, those held in memory only */
    uint64_t meshes_bytes;
    uint64_t pooler_jobs;           /* query jobs submitted to the pooler, not yet answered */
    uint64_t pooler_owners;         /* owners (--share-by) with jobs waiting for an engine lane */
    uint64_t writer_ops;            /* writer ops submitted, not yet done */
    uint64_t upload_bytes;          /* decoded MeshPuts waiting for the writer */
    uint64_t queries;               /* poses answered (the Stats reply's `queries`) */
    int backend;                    /* tdm_backend_kind actually running */
    int lanes;                      /* engine lanes */
    tdm_sched_stats engine;
    int ready;                      /* GET /readyz: 1, or 0 with not_ready (static text) */
    const char *not_ready;
} tdm_metrics_snapshot;

/* Copies *s in and stamps the heartbeat with now (monotonic ns). Loop thread. */
void tdm_metrics_publish(const tdm_metrics_snapshot *s, uint64_t now_ns);
/* Not ready from now on, for `why` (static text), until a publish says otherwise: a
 * shutdown says so at once rather than at the next heartbeat. Loop thread. */
void tdm_metrics_not_ready(const char *why);
/* The last published readiness and the heartbeat's age in seconds (-1 before the
 * first heartbeat). Any thread. */
int tdm_metrics_ready(const char **why);
double tdm_metrics_heartbeat_age(void);

/* The whole exposition, malloc'd, NUL-terminated (*len its length); NULL when out
 * of memory. Any thread (the HTTP thread). */
char *tdm_metrics_render(size_t *len);

#endif
