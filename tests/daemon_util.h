/* A real tandemd for the daemon suite, and a raw protocol client to talk to it.
 *
 * dmn_*: each test starts its own tandemd (the binary at TANDEMD_BIN) in a fresh
 * temporary folder: the data directory is ROOT/data, the Unix socket ROOT/tandemd.sock,
 * and the daemon's stderr goes to ROOT/tandemd.log. It listens on 127.0.0.1 at a port
 * the kernel just handed out as free, and on the socket; dmn_start returns once both
 * accept connections. The daemon is a child of the test process and dies with it
 * (PR_SET_PDEATHSIG), so a test that crashes or times out leaves nothing behind.
 *
 * raw_*: frames written and read by hand (4-byte big-endian length, then protobuf
 * bytes packed and unpacked with the protobuf-c code of tdm_proto_c), so that a test
 * can send what no well-behaved client would.
 *
 * dmn_*, canon_*, expect_error and the *_or_fail functions assert with Criterion and
 * may only be called from the test's own thread; raw_connect, raw_write_all,
 * raw_send_frame, raw_send, raw_pack, raw_recv and raw_wait_eof return a status and are
 * safe in any thread (on different sockets). */
#ifndef TDM_TESTS_DAEMON_UTIL_H
#define TDM_TESTS_DAEMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tandem.pb-c.h"

typedef struct dmn {
    pid_t pid;           /* 0 when not running */
    char root[200];      /* the temporary folder; "" before dmn_init */
    char data_dir[256];
    char sock_path[256];
    char log_path[256];
    char tcp_addr[64];   /* "127.0.0.1:PORT" */
    char unix_addr[272]; /* "unix:PATH" */
    int port;
    int fixed_port;      /* set before dmn_start: listen on this port (a restart on the same address) */
} dmn;

/* Creates the temporary folder (under $TMPDIR or /tmp); asserts. */
void dmn_init(dmn *d, const char *tag);
/* dmn_pid_rss_kb: the daemon's resident memory (VmRSS) and its peak so far (VmHWM),
 * from /proc/PID/status, in KiB; -1 when unreadable. */
long dmn_rss_kb(const dmn *d, long *peak_kb);
/* Starts tandemd (TANDEMD_BIN, or $TDM_TEST_TANDEMD when set) on d's data directory with `extra` flags (NULL-terminated, may be
 * NULL) after --data-dir, --listen (TCP and Unix) and --threads 2, and waits (up to
 * 60 s: the GPU engine calibrates itself at start-up) until both sockets accept. A port taken meanwhile by someone else is retried
 * with another. Asserts, with the end of the daemon's log on failure. */
void dmn_start(dmn *d, const char *const *extra);
/* dmn_start for a start-up that may fail: returns 0 once both sockets accept, or -1
 * when the daemon exited first (*exit_status: its wait status; the log says why). */
int dmn_try_start(dmn *d, const char *const *extra, int *exit_status);
/* Starts tandemd as dmn_start does, on a port free now, without waiting for anything
 * (a test that watches the start-up itself). */
void dmn_spawn(dmn *d, const char *const *extra);
/* Sends sig and waits for the daemon to exit; returns the wait status (-1 when it
 * was not running). */
int dmn_stop(dmn *d, int sig);
/* Is the daemon still running (not exited, not a zombie)? */
int dmn_running(dmn *d);
/* Kills a running daemon (SIGKILL) and removes the temporary folder. Idempotent. */
void dmn_cleanup(dmn *d);
/* The daemon's log so far (malloc'd, NUL-terminated; "" if none). */
char *dmn_log(const dmn *d);
/* Whether the daemon's log holds text, polled for up to ms milliseconds (0: now). */
int dmn_log_has(const dmn *d, const char *text, int ms);
/* Files (not hidden) in the daemon's data directory's subfolder `sub` (robots/,
 * owners/...); -1 when it cannot be read. */
int dmn_count_files(const dmn *d, const char *sub);
/* "ROOT/name" in d's temporary folder, in one of 16 buffers used in turn (the test's own
 * thread; a path is good until 16 more are asked for). */
const char *dmn_path(const dmn *d, const char *name);
/* Writes text to dmn_path(d, name); asserts. */
void dmn_write(const dmn *d, const char *name, const char *text);
/* rm -rf, for folders the tests made. */
void remove_tree(const char *path);

/* The metrics port the daemon logged ("metrics and probes on http://127.0.0.1:PORT/..."): the
 * last one, since after a restart the log holds the earlier runs' lines too. Asserts. Start the
 * daemon with --metrics-listen 127.0.0.1:0. */
int dmn_metrics_port(const dmn *d);

/* ---- the operations endpoint (HTTP/1.0) ---------------------------------------------- */

/* Sends "METHOD PATH" to 127.0.0.1:port and reads the whole answer. Returns the status code
 * (*body: the body, malloc'd), or -1 when the connection or the answer failed (*body NULL).
 * Safe in any thread. */
int http_call(int port, const char *method, const char *path, char **body);
/* The value of one series ("name{labels}" exactly as rendered) in a /metrics text, NAN when
 * absent. */
double metric_value(const char *text, const char *series);
/* One series read now from the /metrics of 127.0.0.1:port; NAN when the call fails or the series
 * is absent. */
double metric_now(int port, const char *series);

/* ---- raw protocol ------------------------------------------------------------------- */

/* "127.0.0.1:PORT" or "unix:PATH". Returns a blocking socket, or -1. */
int raw_connect(const char *addr);
/* 0, or -1 (the peer closed or an error). */
int raw_write_all(int fd, const void *p, size_t n);
/* The 4-byte big-endian length, then len bytes of body. */
int raw_send_frame(int fd, const void *body, uint32_t len);
/* Packs rq into one frame and sends it. */
int raw_send(int fd, const Tandem__V1__Request *rq);
/* Packs rq into a malloc'd buffer (no length prefix); *len its size. */
uint8_t *raw_pack(const Tandem__V1__Request *rq, size_t *len);

enum { RAW_REPLY = 1, RAW_EOF = 0, RAW_TIMEOUT = -1, RAW_ERROR = -2 };
/* Reads one reply frame within timeout_ms. Returns RAW_REPLY (*out set: free it with
 * tandem__v1__reply__free_unpacked(*out, NULL)), RAW_EOF when the peer closed cleanly
 * before any byte of a frame, RAW_TIMEOUT, or RAW_ERROR (a socket error, a frame cut
 * short, an undecodable reply; err says which). */
int raw_recv(int fd, int timeout_ms, Tandem__V1__Reply **out, char *err, size_t errlen);
/* raw_recv for a reply that may carry descriptors (SCM_RIGHTS, read with recvmsg): *memfd the
 * first that came (-1: none; the others closed), *n_fds how many came. Control data cut short
 * is RAW_ERROR. */
int raw_recv_fds(int fd, int timeout_ms, Tandem__V1__Reply **out, int *memfd, int *n_fds, char *err, size_t errlen);
/* Decodes a reply frame's body (malloc'd; freed here): RAW_REPLY with *out set, or RAW_ERROR with
 * err saying so. */
int raw_unpack(uint8_t *body, uint32_t len, Tandem__V1__Reply **out, char *err, size_t errlen);
/* Waits until the peer closes: RAW_EOF when it does with nothing more sent, RAW_REPLY
 * when bytes arrive instead, RAW_TIMEOUT, or RAW_ERROR (a reset also counts as closed:
 * returns RAW_EOF). */
int raw_wait_eof(int fd, int timeout_ms);

/* Sends rq and reads one reply with the same id (10 s); asserts it came. */
Tandem__V1__Reply *raw_call_or_fail(int fd, const Tandem__V1__Request *rq);
/* Hello (version 1) with id; asserts a HelloReply with that id. */
void raw_hello_or_fail(int fd, uint64_t id);
/* The same, returning the HelloReply (the caller frees it: tandem__v1__reply__free_unpacked). */
Tandem__V1__Reply *raw_hello_reply_or_fail(int fd, uint64_t id);
/* Asserts that r is an Error with this id, code, field and index (index INT64_MIN:
 * not checked). `what` names the case in messages. */
void expect_error(const Tandem__V1__Reply *r, const char *what, uint64_t id, int code, const char *field,
                  int64_t index);

/* ---- ids, as proto/README.md defines them ---------------------------------------------- */

/* SHA-256 of "tandem-mesh-v1\0", counts and arrays, all little-endian. */
void canon_mesh_id(const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris, uint8_t id[32]);

typedef struct canon_object {
    uint32_t id;
    uint8_t mesh_id[32];
    int movable;
    double pose[7]; /* fixed objects: x y z qx qy qz qw (normalised here, as the server does) */
} canon_object;
/* SHA-256 of "tandem-scene-v1\0", objects by increasing id, then the distinct allowed
 * pairs as sorted (min, max). The arrays are copied, not changed. */
void canon_scene_id(const canon_object *objs, uint32_t n, const uint32_t (*allowed)[2], uint32_t n_allowed,
                    uint8_t id[32]);

#endif
