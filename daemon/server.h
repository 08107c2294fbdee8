/* The server: what every part of tandemd shares, and its lifecycle on the loop.
 *
 * Threads: the libuv loops (the main one, and --io-threads more: io.h; connections,
 * decoding, validation, the catalogue, sending replies), libuv's thread pool (pose
 * conversion of large queries), the pooler's threads (engine runs and reply packing,
 * query_pool.h), the engine's workers, and the writer thread (data directory writes,
 * writer.h). Only a loop touches its libuv handles, and only holding `mu` the state
 * below and the connections. */
#ifndef TDM_DAEMON_SERVER_H
#define TDM_DAEMON_SERVER_H

#include <pthread.h>
#include <uv.h>

#include "../workpile/sched.h"
#include "budget.h"
#include "catalog.h"
#include "config.h"
#include "datadir.h"
#include "auth_limit.h"
#include "io.h"
#include "query_pool.h"
#include "tenants.h"
#include "writer.h"

typedef struct tdm_conn tdm_conn;
typedef struct tdm_tls_ctx tdm_tls_ctx;

typedef struct tdm_listener {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    struct tdm_server *srv;
    const char *addr;  /* as configured; borrowed from the config */
    char *unix_path;   /* unix sockets: removed at shutdown */
    int initialised;
} tdm_listener;

typedef struct tdm_counters {
    uint64_t requests;    /* frames decoded into a request */
    uint64_t errors;      /* Error replies sent */
    uint64_t queries;     /* poses answered (atomic: replies written by pooler threads count there) */
    uint64_t connections; /* accepted since start */
} tdm_counters;

typedef struct tdm_server {
    uv_loop_t *loop;          /* the main loop (listeners, signals, the writer's completions) */
    pthread_rwlock_t mu;      /* the daemon's state: held by every loop callback, shared or exclusive (io.h) */
    tdm_io *io;               /* io[0]: the main loop; io[1..n_io]: the I/O threads' */
    unsigned n_io;
    unsigned next_io;         /* tdm_io_next's round robin */
    tdm_io_task finish_task;  /* maybe_finish, posted to the main loop by the loop freeing the last connection */
    int finish_posted;
    const tdm_config *cfg;
    int trace_reads;          /* TDM_REQUEST_TRACE set: connections note their reads' times (conn.h) */
    uint64_t loop_spin_ns;    /* --loop-spin-us, resolved (tdm_io_run) */
    uint64_t ring_park_ns;    /* --ring-park-us (conn.h "Rings"; 0: never) */
    tdm_sched *engine;
    tdm_datadir *datadir;
    tdm_catalog *catalog;
    tdm_writer *writer;
    tdm_query_pool *query_pool;
    tdm_tenants *tenants;     /* who may connect, and the namespaces that own objects */
    enum { TDM_SHARE_OFF, TDM_SHARE_CONNECTION, TDM_SHARE_TENANT } share_by; /* --share-by, resolved */
    tdm_auth_limit *auth_limit; /* wrong tokens by address */

    tdm_listener *listeners;
    size_t n_listeners;
    tdm_tls_ctx *tls;         /* --tls-cert: every TCP listener speaks TLS (tls.h); NULL: plain */
    tdm_conn *conns;          /* every connection not yet freed */
    uint32_t n_conns;         /* in `conns` */
    uint32_t n_active;        /* accepted within max_connections */
    uint32_t n_unauth;        /* ... of them not yet past Hello (max_unauthenticated) */
    uint32_t n_rings;         /* ... of them on shared-memory rings (conn.h), till their close */
    uint32_t n_rings_parked;  /* ... of those parked (conn.h "Rings"; atomic: every loop's own) */
    uint64_t next_conn_id;

    int shutting_down;        /* 0; 1: draining; 2: connections closed at once */
    int ready;                /* started: listening */
    int stopped;              /* threads stopped, handles closing */
    uv_signal_t sig_int, sig_term;
    int signals;              /* sig_int and sig_term initialised */
    uv_timer_t shutdown_timer;
    int timer;                /* shutdown_timer initialised */
    uint64_t started_ns;      /* uv_hrtime at start */
    tdm_counters counters;
    uint64_t upload_bytes;    /* decoded MeshPuts submitted to the writer thread, not yet done */
    tdm_budget mem;           /* what clients make the daemon hold (budget.h) */
    uv_timer_t exit_timer;    /* after a forced shutdown: exit even with engine runs in flight */
    int exit_timer_on;
    int exit_status;          /* tandemd's exit code once the loop returns (0; 3: the GPU failed) */
} tdm_server;

/* Binds every configured address and starts accepting. 0, or TDM_EIO with err. */
int tdm_server_listen(tdm_server *s, char *err, size_t errlen);
/* Installs SIGINT/SIGTERM handlers that shut down gracefully (a second signal forces). */
int tdm_server_signals(tdm_server *s);
/* Stops accepting; lets connections finish what is in flight (force: closes them
 * now, which cancels their queued work); once every connection is gone, stops the
 * writer and the pooler threads and closes every handle, so that uv_run returns.
 * A forced shutdown whose connections still wait for running work
 * TDM_SHUTDOWN_EXIT_GRACE_MS later exits the process (status 0) without them. */
#define TDM_SHUTDOWN_EXIT_GRACE_MS 500
void tdm_server_shutdown(tdm_server *s, int force);
/* Resolves max-memory (each loop checks its connections' output stalls: io.h). 0. */
int tdm_server_budget_start(tdm_server *s);
/* A connection of loop io was freed (conn.c). */
void tdm_server_conn_gone(tdm_server *s, tdm_io *io);
/* "HOST:PORT" or "[IPV6]:PORT" into its parts (numeric port). 0, or -1 when malformed. */
int tdm_server_split_addr(const char *addr, char *host, size_t hostlen, char *port, size_t portlen);

#endif
