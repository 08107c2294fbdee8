/* One client connection: framing, back-pressure and the reply queue.
 *
 * An explicit state machine (memcached's conn_set_state): every transition goes
 * through conn_set_state, which checks it and logs it at debug level.
 *
 *   READ_LEN   --4 bytes-->           READ_BODY --body--> (request handled) READ_LEN
 *   READ_LEN/READ_BODY --max_pipelined in flight or output over max_output_bytes--> PAUSED
 *   PAUSED     --in flight < max_pipelined and output <= max_output_bytes / 2--> READ_LEN/READ_BODY
 *   ("output": replies queued and not yet written, plus the memory of its query jobs in
 *   flight and the bounds of their replies, budget.h)
 *   READ_LEN/READ_BODY/PAUSED --broken frame, peer EOF between frames, bad auth, shutdown--> DRAINING
 *   DRAINING   --nothing in flight, output flushed--> LINGER (FIN sent)
 *   LINGER     --peer EOF, or TDM_CONN_LINGER_MS--> CLOSING
 *   any        --read/write error, EOF inside a frame, forced shutdown--> CLOSING
 *
 * LINGER is Apache's lingering close: after our FIN, whatever the client still
 * sends is read and discarded until it closes too. Closing a socket with unread
 * input makes the kernel send a reset, and a reset can destroy the replies the
 * client has not read yet (the last one of all: the Error about a broken frame).
 *
 * Input: a fixed 64 KiB staging buffer takes reads; frames that fit are decoded
 * straight from it, several per read when pipelined. A frame's length is checked
 * (1..max_frame_bytes) before anything is allocated for it; a frame larger than
 * the staging buffer gets its own buffer, read into directly and grown (doubling,
 * up to the frame's length) as bytes arrive, so that a client announcing a large
 * frame and sending it slowly holds only what it has sent; every buffer is charged to
 * the server's budget (budget.h), and a frame whose buffer would pass max_input_bytes
 * or max_memory gets ERROR_BUSY and the close. Before Hello no frame may
 * be larger than the staging buffer (a Hello is small), so an unauthenticated
 * connection holds 64 KiB at most.
 *
 * TLS: on a TCP listener with --tls-cert, the bytes read are ciphertext, decrypted
 * (tls.h) into the same staging and frame buffers before the framing above sees them,
 * and every reply frame is encrypted before it is written; the handshake must finish
 * within the hello deadline. A handshake or record failure is logged (rate-limited) and
 * drains the connection, so OpenSSL's alert still reaches the client. A reply queued
 * before the handshake is done (ERROR_BUSY at accept) cannot be sent and is dropped.
 *
 * Deadlines (one timer, the linger one, before LINGER): a connection that has not
 * said Hello within hello_timeout seconds of its accept is closed, and so is one
 * that sends nothing for idle_timeout seconds while no request of it is in flight
 * and no reply waits to be written (each 0: never). Both are logged at info level.
 *
 * Rings (RingOpen, a same-host client on a Unix socket; proto/README.md "Shared-memory rings"):
 * the connection's frames go through two rings in a memfd mapping both sides hold, instead of
 * the socket. The loop copies request bytes out of the request ring into the staging and frame
 * buffers above (so the framing, the limits and the errors are the socket's), when it polls
 * its rings (tdm_conn_rings_poll, each turn) or reads a doorbell on the socket (a client's
 * byte after it wrote while the loop may sleep); a ring idle for --ring-park-us is parked: the
 * loop stops polling it and leaves its srv_sleep set, and the client's next doorbell brings it
 * back, so that idle ring clients cost a loop's turns nothing; replies are copied into the reply ring, by
 * the loop or by a reply thread (tdm_conn_reply_direct), and frames that find no room wait in
 * order (ring_out) for the client to take bytes. The states above are the same; the socket
 * carries only doorbells one way and the close (FIN) the other. A client whose indices are out
 * of bounds is closed. The mapping is unmapped when the connection is freed.
 *
 * A connection is freed once its handles are closed and no job or writer op
 * refers to it (`inflight` == 0): callbacks of work that finishes after the
 * close find the connection CLOSING, drop their reply and release it. The close
 * marks its query jobs cancelled (budget.h), so the pooler drops those still
 * queued without running them. */
#ifndef TDM_DAEMON_CONN_H
#define TDM_DAEMON_CONN_H

#include <pthread.h>
#include <stdarg.h>

#include "codec.h"
#include "server.h"
#include "tls.h"

/* A wrong auth token: reading stops, and after TDM_CONN_AUTH_DELAY_MS the
 * UNAUTHENTICATED error (request id `id`) is sent and the connection drained; each
 * guess so costs a connection slot for that long. */
#define TDM_CONN_AUTH_DELAY_MS 1000
void tdm_conn_refuse_auth(tdm_conn *c, uint64_t id);

/* Re-arms the connection's hello or idle deadline (see "Deadlines"); request_hello.c
 * calls it once the client is authenticated, conn.c on every frame. */
void tdm_conn_deadline(tdm_conn *c);
/* The connection leaves the count of those before Hello (max_unauthenticated): it
 * said Hello, or it is closing. Once; later calls do nothing. */
void tdm_conn_leave_unauth(tdm_conn *c);

/* Longest a closing connection waits for the client's FIN (LINGER). */
#define TDM_CONN_LINGER_MS 2000

enum tdm_conn_state {
    CONN_READ_LEN,
    CONN_READ_BODY,
    CONN_PAUSED,
    CONN_DRAINING,
    CONN_LINGER,
    CONN_CLOSING,
    CONN__STATE_COUNT
};

/* Frames of this many bytes or more are decoded on libuv's pool rather than on the loop, holding the
 * server's lock (a 64 MiB MeshPut took ~85 ms to decode, which every connection of every loop
 * waited); TDM_DECODE_APART=0 decodes every frame on its loop (A/B runs). */
#define TDM_CONN_DECODE_APART (1u << 20)

struct tdm_conn {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_tcp_t tcp;
        uv_pipe_t pipe;
    } h;
    tdm_server *srv;
    tdm_io *io;               /* the loop it lives on (io.h), from its accept to its free */
    tdm_conn *prev, *next;    /* srv->conns */
    uint64_t id;
    enum tdm_conn_state state;
    char peer[80];
    char addr[64];            /* the peer's IP address without the port; "" for a Unix socket */
    char client_name[80];     /* from Hello, sanitised */
    uint64_t read_ns;         /* TDM_REQUEST_TRACE: when its last read came (uv_hrtime), before the lock */
    int authed;
    uint32_t tenant;          /* tenants.h index, set by the first Hello */
    /* the ephemeral scenes this connection put and holds (request_scene.c, tdm__ephemeral_*): each by
       its id and its tdm_scene serial, so that a scene deleted and put again is not taken for the old;
       an open-addressing table of cap_eph slots (a power of two), n_eph used, n_eph_gone let go of */
    struct tdm_ephemeral_hold { uint8_t id[32]; uint64_t serial; uint8_t state; } *eph;
    uint32_t n_eph, n_eph_gone, cap_eph;
    tdm_share share;          /* the connection's turns (--share-by connection) */
    tdm_share *share_of;      /* whose turns its query jobs (tdm_pooler_job.owner) and large MeshPuts (the
                                 builder's, writer.c) take: &share, its tenant's (tdm_tenants_share, from
                                 its Hello) or NULL (--share-by off: first come, first served) */
    int is_unix;
    long peer_uid;            /* Unix sockets: the peer's uid (SO_PEERCRED), -1 when unknown */
    int unauth_counted;       /* counted in srv->n_unauth */
    int active;               /* counted in srv->n_active */
    int reading;              /* uv_read_start in effect */
    int handles_open;         /* the stream and the linger timer, until their close callbacks */
    uv_timer_t linger;        /* LINGER's wait, and before it the hello and idle deadlines (or the auth delay) */
    uint64_t refused_id;      /* the Hello a delayed auth refusal answers */
    int auth_hold;            /* that refusal is pending: it holds one `inflight` */
    uv_shutdown_t shutdown_req;

    /* input */
    uint8_t *stage;           /* STAGE_CAP bytes, allocated on the first read */
    size_t stage_pos, stage_end;
    int have_len;             /* the current frame's length has been read */
    uint32_t body_len;
    uint8_t *body;            /* a frame larger than the staging buffer */
    size_t body_got, body_cap; /* grown as bytes arrive, up to body_len */
    tdm_arena *arena;         /* decoded requests; NULL after a MeshPut took it */
    /* a large frame decoded on libuv's pool (conn.c, TDM_CONN_DECODE_APART bytes or more): reading
       and the frames behind it wait (PAUSED), the decode holds one `inflight` and c->arena */
    int decoding;
    int shutdown_pending;     /* tdm_conn_shutdown came during the decode: done after it */
    uv_work_t decode_work;
    uint8_t *dec_frame;
    size_t dec_len, dec_cap;
    Tandem__V1__Request *dec_req;
    const char *dec_why;
    uint64_t dec_ns;          /* uv_hrtime when the frame was complete (its request's metrics) */

    /* TLS (TCP listeners with --tls-cert): ciphertext is read into the loop's one read buffer,
       handed to the session at once and decrypted into the buffers above; each reply frame is
       sealed before it is queued (tls.h). NULL for plain connections. */
    tdm_tls *tls;

    /* output and work in flight */
    uint64_t out_bytes;       /* queued to libuv and not yet written */
    uint32_t out_writes;
    uint32_t inflight;        /* requests accepted and not yet answered */

    /* memory (budget.h) */
    uint64_t in_charged;      /* input bytes charged: the staging buffer and the large frame's buffer */
    uint64_t promised;        /* its query jobs in flight: their memory and the bounds of their replies */
    tdm_query_job *jobs;      /* those jobs, for cancellation at the close */
    uint64_t out_progress_ns; /* uv_hrtime of the last progress writing (a write completed or the
                                 write queue shrank), or of output starting to wait */
    size_t out_queue_seen;    /* libuv's write queue size at the last stall check */
    int mem_refused;          /* a large frame's buffer could not grow within the limits */

    /* direct replies (tdm_conn_reply_direct): the pooler or reply thread that packed a query's
       reply writes it to the socket itself, which spares the loop a write (the system call that
       wakes the client) and the reply a hop through the loop. Under out_mu, any thread: */
    pthread_mutex_t out_mu;
    int out_fd;               /* a plain connection's socket while it reads or pauses; -1 otherwise
                                 (TLS, before accept's checks pass, draining, lingering, closing) */
    uint32_t out_gate;        /* frames on the loop's write path (queued to libuv, or handed to the
                                 loop unwritten by a pooler thread): no direct write while > 0, so
                                 replies keep the order the loop gives them */

    /* shared-memory rings (RingOpen, proto/shm_ring.h; see "Rings" above): NULL on a socket's
       connection. The mapping is the client's to write at any time: nothing in it is trusted */
    struct tdm_ring_header *ring;
    uint32_t ring_cap;        /* ours (the header's copy is the client's to change); the mapping is
                                 tdm_ring_map_bytes(ring_cap), charged to rings (budget.h) */
    uint64_t ring_req_tail;   /* request bytes taken (ours; the mapping's copy is for the client) */
    uint64_t ring_rep_head;   /* reply bytes written, under out_mu */
    struct tdm_frame *ring_out, *ring_out_last; /* frames waiting for room in the reply ring (the loop's) */
    int ring_direct;          /* under out_mu: direct replies may go into the reply ring (as out_fd) */
    tdm_conn *ring_prev, *ring_next; /* the loop's connections with rings (tdm_io.rings, or
                                        tdm_io.rings_parked when ring_parked) */
    int ring_parked;          /* idle past --ring-park-us: not polled; srv_sleep stays set, so its
                                 client rings the doorbell with its next bytes */
    uint64_t ring_seen_ns;    /* when the loop last found request bytes or reply room to use */
    uint8_t bell[64];         /* the socket's doorbells, read and dropped */
};

/* RingOpen (request id `id`, `bytes` wanted): checks that the connection may have rings (a Unix
 * socket, nothing else in flight, --max-ring-bytes), makes the mapping and answers on the socket
 * with its memfd attached; from then on the connection's frames go through the rings. A refusal
 * is an Error and changes nothing. */
void tdm_conn_ring_open(tdm_conn *c, uint64_t id, uint32_t bytes);
/* A loop's turn over its connections with rings (those not parked), taking the server's lock
 * for those with work: request bytes to read, or replies waiting for room that has come; one
 * idle since now - --ring-park-us is parked. 1 when any had work. */
int tdm_conn_rings_poll(tdm_io *io, uint64_t now);
/* Before the loop sleeps: tells its ring clients to ring the doorbell (srv_sleep), then looks
 * once more; 1 when something came meanwhile (then it must not sleep). tdm_conn_rings_wake
 * takes the flag back after the sleep. */
int tdm_conn_rings_sleep(tdm_io *io, uint64_t now);
void tdm_conn_rings_wake(tdm_io *io);

/* Accepts a pending connection on a listener (the main loop, holding the server's lock):
 * the connection lives on the main loop without I/O threads, else on the next of them
 * (io.h), which takes it over. */
void tdm_conn_accept(tdm_server *srv, uv_stream_t *listener, int is_unix);

/* Queues one reply (a Tandem__V1__Reply). Dropped when the connection is closing. */
void tdm_conn_send(tdm_conn *c, const Tandem__V1__Reply *reply);

/* A reply packed with its length prefix. Packing touches no connection, so it
 * may run on any thread (query replies are packed by the pooler thread that ran them);
 * sending is the loop's. */
typedef struct tdm_frame tdm_frame;
/* NULL when out of memory or too large to frame (*too_large says which). */
tdm_frame *tdm_frame_pack(const Tandem__V1__Reply *reply, int *too_large);
/* Queues the frame and takes it (freed when written, or now when the connection
 * is closing). */
void tdm_conn_send_frame(tdm_conn *c, tdm_frame *f);
/* Any thread (a pooler thread, with the reply it packed): writes the frame to the
 * socket now when the connection is plain, open and has nothing on the loop's write
 * path. Returns 1 when all of it was written (the caller frees it; the loop then only
 * counts it: tdm_conn_sent_direct). Otherwise returns 0 with the frame marked as on
 * the loop's write path (gated) and the bytes written, if any, skipped: the loop must
 * send it with tdm_conn_send_frame, or drop it with tdm_conn_drop_frame. */
int tdm_conn_reply_direct(tdm_conn *c, tdm_frame *f);
/* Loop thread: a reply written by tdm_conn_reply_direct, counted as sent. */
void tdm_conn_sent_direct(tdm_conn *c);
/* Loop thread: lets a frame go unsent (its connection is closing). */
void tdm_conn_drop_frame(tdm_conn *c, tdm_frame *f);
/* A frame with room for an n-byte body (*body), length prefix written; NULL
 * when out of memory or n does not fit the 4-byte length. Any thread. */
tdm_frame *tdm_frame_new(size_t n, uint8_t **body);
/* Shortens a frame's body to its first n bytes (n at most its size). */
void tdm_frame_trim(tdm_frame *f, size_t n);
void tdm_frame_free(tdm_frame *f);
/* Queues an Error reply and counts it. */
void tdm_conn_send_error(tdm_conn *c, uint64_t id, Tandem__V1__ErrorCode code, const char *field, int64_t index,
                         const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* A request is now in flight (a job or writer op holds the connection) / has
 * been answered (its reply, if any, already queued). */
void tdm_conn_begin(tdm_conn *c);
void tdm_conn_end(tdm_conn *c);
/* The pooler owner its query jobs take turns as (tdm_pooler_job.owner): its share's, or NULL. */
static inline tdm_pooler_owner *tdm_conn_pool_owner(const tdm_conn *c)
{
    return c->share_of ? &c->share_of->pool : NULL;
}
/* 1 while replies are still wanted (not CLOSING). */
int tdm_conn_alive(const tdm_conn *c);

/* Closes the connection when replies have waited output_stall_timeout seconds with
 * none written (budget.h); the server calls it once a second. */
void tdm_conn_check_stall(tdm_conn *c, uint64_t now_ns);

/* Stops reading; closes once everything in flight is answered and flushed. */
void tdm_conn_drain(tdm_conn *c, const char *why);
/* Closes now; in-flight work is dropped when it finishes. */
void tdm_conn_close(tdm_conn *c, const char *why);
/* Server shutdown: complete frames already received get ERROR_BUSY, then drain. */
void tdm_conn_shutdown(tdm_conn *c);

#endif
