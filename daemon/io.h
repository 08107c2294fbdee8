/* tandemd's event loops: the main loop, and --io-threads more, each on its own thread.
 *
 * One libuv loop reads, decodes and answers every request of every connection: at some
 * tens of thousands of requests a second (64 planners asking one motion at a time) that
 * thread is the daemon's bound, and its requests queue for it. With --io-threads N > 0,
 * N more loops take the connections: each accepted connection is handed to one of them
 * (round robin) and lives there until it is freed; its reads, its writes, its timers and
 * its finished query jobs (query_pool.h's sinks) are all its loop's.
 *
 * The daemon's state (the catalogue, the budget, the tenants, the counters, the list of
 * connections, every connection's fields) is guarded by the server's lock (srv->mu, a
 * read-write lock): every callback that libuv calls on any loop, and every task posted
 * here, runs holding it, taken by the callback itself and never by what it calls. Most
 * hold it exclusive, as if the daemon had one thread. A connection's reads hold it
 * shared, so that the loops read, decode and submit their connections' queries at once:
 * the reading of a plain connection's bytes, its framing, and the Query and MotionCheck
 * handlers, which change only what is their connection's (its loop's alone), their own
 * loop's sink, and state made safe for it (atomic counters and metrics, the budget's
 * atomic charges, a stored scene's atomic reference count, the catalogue's own lock for
 * lookups). Each loop's sink of finished query jobs (query_pool.h) is also let go of holding
 * it shared: a finished job's bookkeeping is its connection's (the requests in flight, its
 * job list), the budget's atomic releases and the counters; the last reference on a stored
 * scene (tdm__query_scene_unref, request_handlers.h) and a closing connection's free take it
 * exclusive. Anything else on that path (every other request, a request before Hello,
 * every error reply, a close, a large frame's buffer) first makes the hold exclusive
 * (tdm_srv_exclusive: released, then taken exclusive; nothing read under the shared hold
 * may be kept across it, but the connection itself, which only its loop frees, and a
 * scene the handler holds a reference on). What runs outside the lock is waiting in
 * epoll and the system calls that read requests. Pooler, writer and libuv pool threads
 * never take it.
 *
 * With every loop's reads and finished jobs shared, the loops scale: on the 64-planner
 * benchmark a request waited 100-130 us (median) between its client's write and its loop's
 * read with one loop, or with loops that took the lock exclusive for their finished jobs,
 * and 7-23 us with three loops as now (bench/results/ompl_resident.md, section 14).
 *
 * The main loop keeps the listeners, the signals, the writer's completions, the
 * heartbeat and the server's shutdown. Anything one loop must do to a handle of another
 * (a connection accepted on the main loop, a writer op finished there, shutting the
 * connections down, the end once the last connection is gone) is posted to the loop
 * that owns it. */
#ifndef TDM_DAEMON_IO_H
#define TDM_DAEMON_IO_H

#include <pthread.h>
#include <uv.h>

typedef struct tdm_server tdm_server;
typedef struct tdm_io tdm_io;
typedef struct tdm_query_sink tdm_query_sink;

/* Work for a loop: fn(io, arg) runs there, holding the server's lock. Embedded in what it
 * carries, so that posting never allocates (and never fails). */
typedef struct tdm_io_task {
    struct tdm_io_task *next;
    void (*fn)(tdm_io *io, void *arg);
    void *arg;
} tdm_io_task;

struct tdm_io {
    uv_loop_t *loop;           /* the main loop for io[0]; else `own` */
    uv_loop_t own;
    tdm_server *srv;
    unsigned index;            /* 0: the main loop */
    pthread_t thread;
    int thread_started;
    int stop_sent;             /* TDM_IO_WANT_STOP requested */
    uv_async_t async;          /* posted tasks and requests */
    int async_open;
    pthread_mutex_t post_mu;   /* guards the three below */
    tdm_io_task *head, *tail;
    unsigned want;             /* TDM_IO_WANT_* to do on this loop */
    uv_timer_t stall;          /* its connections' output-stall check, once a second (output-stall-timeout) */
    int stall_on;
    tdm_query_sink *sink;      /* its connections' finished query jobs */
    uint8_t *tls_buf;          /* TLS ciphertext reads of its connections (conn.c), with a TLS listener */
    unsigned reads;            /* reads of its connections' bytes so far (its own thread's): tdm_io_run */
    struct tdm_conn *rings;    /* its connections with shared-memory rings (conn.h), polled each turn */
    struct tdm_conn *rings_parked; /* ... and those idle past --ring-park-us: not polled (conn.h) */
};

enum {
    TDM_IO_WANT_SHUTDOWN = 1, /* tdm_conn_shutdown every connection of this loop */
    TDM_IO_WANT_CLOSE = 2,    /* tdm_conn_close them (forced shutdown) */
    TDM_IO_WANT_STOP = 4,     /* no connection is left: close the loop's handles, so that its thread ends */
};

/* The server's lock, before anything may take it (0 or an errno). */
int tdm_srv_lock_init(tdm_server *s);
/* Takes the server's lock exclusive, or shared (the daemon's state: see the top), and
 * releases it; a thread holds it at most once. */
void tdm_srv_lock(tdm_server *s);
void tdm_srv_lock_shared(tdm_server *s);
void tdm_srv_unlock(tdm_server *s);
/* Holding it shared: makes the hold exclusive (released, then taken exclusive); holding it
 * exclusive: nothing. */
void tdm_srv_exclusive(tdm_server *s);
/* tdm_srv_lock and tdm_srv_unlock of a tdm_server *, for modules that take the lock by a
 * callback (the writer's completions, the query pool's sinks). */
void tdm_srv_lock_cb(void *srv);
void tdm_srv_lock_shared_cb(void *srv); /* a loop's finished query jobs (tdm_query_sink) */
void tdm_srv_unlock_cb(void *srv);

/* Sets up io[0] (the main loop) and io[1..n] with their threads (not running yet). 0, or
 * a libuv error / TDM_* code with err. */
int tdm_io_create(tdm_server *s, unsigned n, char *err, size_t errlen);
/* Starts the I/O threads' loops (after the query pool exists). 0 or an error. */
int tdm_io_start(tdm_server *s, char *err, size_t errlen);
/* Any thread: queues t for io's loop and wakes it. */
void tdm_io_post(tdm_io *io, tdm_io_task *t);
/* Any thread: asks io's loop to do what `want` says (TDM_IO_WANT_*), soon. */
void tdm_io_request(tdm_io *io, unsigned want);
/* On io's loop, holding the lock: shuts down (force: closes) every connection of that loop. */
void tdm_io_shutdown_conns(tdm_io *io, int force);
/* The loop a new connection goes to (round robin over the I/O threads; the main loop
 * without them). Holding the lock. */
tdm_io *tdm_io_next(tdm_server *s);
/* The server's end (no connection is left), holding the lock on the main loop: closes the
 * main loop's handles here and asks every I/O thread to close its own. */
void tdm_io_stop_all(tdm_server *s);
/* The main thread, once its loop has returned: joins the I/O threads and frees what is left. */
void tdm_io_join(tdm_server *s);

/* Runs io's loop as uv_run(UV_RUN_DEFAULT) does, until it has no active handle left. With
 * --loop-spin-us S > 0, for S microseconds after each read of a connection's bytes the
 * loop polls (uv_run(UV_RUN_NOWAIT), epoll with no timeout) instead of sleeping in epoll:
 * a sleeping loop costs the next request a thread wake-up, which on a virtual machine's
 * idle core was measured at tens to hundreds of microseconds (bench/results/ompl_resident.md,
 * section 14). A loop with no reads for S sleeps as before. */
void tdm_io_run(tdm_io *io);

#endif
