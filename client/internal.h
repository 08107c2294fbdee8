/* libtandem internals shared by codec.c, net.c, client.c and async.c. Never installed. */
#ifndef TDM_CLIENT_INTERNAL_H
#define TDM_CLIENT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tandem.h"

#define TDM__HIDDEN __attribute__((visibility("hidden")))

/* ---- byte buffer (requests waiting to be written) ----------------------------------------- */

typedef struct tdm__buf {
    uint8_t *data;
    size_t off; /* bytes already written to the socket */
    size_t len; /* bytes held */
    size_t cap;
} tdm__buf;

/* Makes room for `more` bytes after len. Returns 0 or TDM_CLIENT_ENOMEM. */
TDM__HIDDEN int tdm__buf_reserve(tdm__buf *b, size_t more);
/* Drops written bytes; releases a buffer grown past `keep` once it is empty. */
TDM__HIDDEN void tdm__buf_consume(tdm__buf *b, size_t n, size_t keep);
TDM__HIDDEN void tdm__buf_free(tdm__buf *b);

/* ---- requests ----------------------------------------------------------------------------- */

/* What one request asks; the arrays are borrowed for the duration of the encode. */
typedef struct tdm__req {
    int type; /* tdm_reply_type: the Request.body field number */
    union {
        struct { const char *auth_token, *client_name; } hello;
        struct {
            const char *name;
            const float *verts;
            uint32_t n_verts;
            const uint32_t *tris;
            uint32_t n_tris;
        } mesh_put;
        const uint8_t *id; /* mesh_delete, scene_delete */
        struct {
            const char *name;
            const tdm_scene_object *objects;
            size_t n_objects;
            const tdm_object_pair *allowed;
            size_t n_allowed;
            int ephemeral;
        } scene_put;
        struct {
            const uint8_t *scene_id;
            int mode;
            const double *poses; /* or configs (is_configs): Query.configs */
            size_t n_doubles;
            uint32_t max_contacts;
            int want_pairs;
            int is_configs;
        } query;
        struct {
            const char *name, *urdf, *srdf;
            const tdm_robot_mesh_ref *meshes;
            size_t n_meshes;
        } robot_put;
        struct {
            const char *name;
            const uint8_t *robot_id;
            const char *world;
            int ephemeral;
        } robot_scene_put;
        struct {
            const uint8_t *scene_id;
            double resolution;
            const double *motions;
            size_t n_doubles;
            const uint32_t *points; /* NULL: 2 per motion */
            size_t n_motions;
            unsigned flags; /* TDM_MOTION_* */
        } motion_check;
        uint32_t ring_bytes; /* ring_open */
    } u;
} tdm__req;

/* Fills a query request, checking the counts (7 * n_movable * n_queries must not
 * overflow; both must be positive). Returns 0 or TDM_CLIENT_EINVAL. */
TDM__HIDDEN int tdm__req_query(tdm__req *rq, const uint8_t *scene_id, tdm_query_mode mode, const double *poses,
                               uint32_t n_movable, size_t n_queries, uint32_t max_contacts, int want_pairs);
/* The same for a Query with configurations (n_joints per query). */
TDM__HIDDEN int tdm__req_query_configs(tdm__req *rq, const uint8_t *scene_id, tdm_query_mode mode,
                                       const double *configs, uint32_t n_joints, size_t n_queries,
                                       uint32_t max_contacts, int want_pairs);
/* Appends one frame to b. max_frame (0: none) is the server's limit on the length after
 * the prefix: over it is TDM_CLIENT_ELIMIT with a message in err. */
TDM__HIDDEN int tdm__encode(const tdm__req *rq, uint64_t id, tdm__buf *b, uint32_t max_frame, char *err,
                            size_t errlen);

/* ---- reader and decoding ------------------------------------------------------------------ */

/* Where a Query reply goes: caller-owned arrays (blocking client) or the reader's scratch. */
typedef struct tdm__qsink {
    tdm_query_result *results; /* NULL: the reader's scratch */
    size_t n_expected;         /* results the request asked for; 0: any number (public reader) */
    int want_pairs;            /* store pairs (else they are skipped) */
    tdm_pairs *pairs;          /* NULL: the reader's scratch */
} tdm__qsink;

struct tdm_reader {
    uint8_t *buf;
    size_t start, end, cap; /* unread bytes are buf[start..end) */
    uint32_t max_frame;
    uint64_t frames;        /* frames split off so far: none yet means the peer's first bytes */
    int err;
    char errstr[256];
    tdm_reply reply;
    /* scratch for decoded replies, reused from reply to reply */
    tdm_query_result *results;
    size_t results_cap;
    tdm_contact *pairs;
    size_t pairs_cap;
    tdm_mesh_info *meshes;
    size_t meshes_cap;
    tdm_scene_info *scenes;
    size_t scenes_cap;
    uint32_t *u32s;
    size_t u32s_cap;
    tdm_joint_info *joints;
    size_t joints_cap;
    tdm_robot_info *robots;
    size_t robots_cap;
    tdm_robot_object *objects;
    size_t objects_cap;
    tdm_motion_result *motions;
    size_t motions_cap;
    double *doubles;
    size_t doubles_cap;
    char *chars;
    size_t chars_cap;
};

TDM__HIDDEN int tdm__reader_init(tdm_reader *r, uint32_t max_frame);
TDM__HIDDEN void tdm__reader_deinit(tdm_reader *r);
/* Room to receive into: at least min bytes (more when a large frame is known to be coming). */
TDM__HIDDEN int tdm__reader_space(tdm_reader *r, size_t min, uint8_t **p, size_t *avail);
TDM__HIDDEN void tdm__reader_commit(tdm_reader *r, size_t n);
/* The next whole frame (borrowed until the next reader call): 1, 0 (need more) or an error. */
TDM__HIDDEN int tdm__reader_next(tdm_reader *r, const uint8_t **frame, size_t *len);

/* A Reply envelope: id and body, without decoding the body. */
typedef struct tdm__frame {
    uint64_t id;
    int type;
    const uint8_t *body;
    size_t body_len;
} tdm__frame;
TDM__HIDDEN int tdm__frame_parse(tdm_reader *r, const uint8_t *buf, size_t len, tdm__frame *f);
/* Decodes f's body into r->reply (scratch-backed, or qs's arrays for a Query). Returns 0
 * or TDM_CLIENT_EPROTO / ENOMEM with r->errstr set. */
TDM__HIDDEN int tdm__decode(tdm_reader *r, const tdm__frame *f, const tdm__qsink *qs);

/* ---- pending requests, keyed by id --------------------------------------------------------- */

enum { TDM__FREE = 0, TDM__WAITING = 1, TDM__DONE = 2 };

typedef struct tdm__pending {
    uint64_t id; /* 0: free slot */
    uint8_t type;
    uint8_t state;
    uint8_t piped; /* blocking: handed back by tdm_query_wait */
    int status;
    /* blocking outputs */
    tdm__qsink qs;
    void *out;             /* type-specific result struct of the waiting call */
    tdm_server_error *err; /* malloc'd copy of a server error for a piped query */
    /* async */
    tdm_async_reply_cb *cb;
    void *privdata;
    double deadline; /* async: tdm__now_ms() past which the request has timed out; 0: none */
} tdm__pending;

typedef struct tdm__ptable {
    tdm__pending *slots;
    size_t mask; /* capacity - 1, a power of two */
    size_t count;
} tdm__ptable;

TDM__HIDDEN int tdm__ptable_init(tdm__ptable *t, size_t cap);
TDM__HIDDEN void tdm__ptable_free(tdm__ptable *t);
/* A zeroed slot for id, growing the table when id's slot is taken. NULL when out of memory. */
TDM__HIDDEN tdm__pending *tdm__ptable_add(tdm__ptable *t, uint64_t id);
TDM__HIDDEN tdm__pending *tdm__ptable_get(tdm__ptable *t, uint64_t id);
TDM__HIDDEN void tdm__ptable_del(tdm__ptable *t, tdm__pending *p);
/* The waiting request with the smallest id, or NULL: failing every request in the order
 * they were sent, without allocating (it runs when memory or the connection is gone). */
TDM__HIDDEN tdm__pending *tdm__ptable_min_waiting(tdm__ptable *t);

/* ---- sockets ------------------------------------------------------------------------------ */

/* Resolves addr ("host:port", "host", "[v6]:port", "unix:/path") and connects a
 * non-blocking, close-on-exec stream socket (TCP_NODELAY on TCP). With wait, each resolved
 * address is tried in turn until one connects, all within timeout_ms (<= 0: no limit of
 * ours). Without wait, the first address that starts a connect is returned with
 * *in_progress set when it has not finished (check tdm__net_so_error once writable).
 * Returns the fd or a negative TDM_CLIENT_E* code with a message in err. */
TDM__HIDDEN int tdm__net_connect(const char *addr, int timeout_ms, bool wait, int *in_progress, char *err,
                                 size_t errlen);
/* The pending error of a non-blocking connect (SO_ERROR): 0 or an errno value. */
TDM__HIDDEN int tdm__net_so_error(int fd);
/* Splits "host:port", "[v6]:port" or "host" (port TDM_DEFAULT_PORT). 0, or -1 when malformed. */
TDM__HIDDEN int tdm__net_split(const char *addr, char *host, size_t hostcap, char *port, size_t portcap);

/* ---- TLS (tls.c): tls://HOST:PORT ------------------------------------------------------------ */

typedef struct tdm__tls tdm__tls;
/* 1 when addr is "tls://REST" (*rest: REST), else 0 (*rest: addr). */
TDM__HIDDEN int tdm__tls_scheme(const char *addr, const char **rest);
/* A client session on the socket fd (connected or connecting) to addr ("host:port", what
 * follows tls://): the server's certificate must chain to ca_file (NULL or "": then
 * $TANDEM_TLS_CA, else the system's store) and name the host (a DNS name, or an IP address
 * in its IP entries). $TANDEM_TLS_CERT and $TANDEM_TLS_KEY (PEM files) give a client
 * certificate. 0, or a TDM_CLIENT_E* code with err set. Free with tdm__tls_free
 * (the fd stays the caller's). */
TDM__HIDDEN int tdm__tls_new(int fd, const char *addr, const char *ca_file, tdm__tls **out, char *err,
                             size_t errlen);
TDM__HIDDEN void tdm__tls_free(tdm__tls *t);
/* Drives the handshake: 0 when done, TDM__TLS_WANT_READ / _WRITE (wait for the socket),
 * or TDM_CLIENT_ECONNECT with the reason (verification, protocol) in err. */
enum { TDM__TLS_WANT_READ = 1, TDM__TLS_WANT_WRITE = 2 };
TDM__HIDDEN int tdm__tls_handshake(tdm__tls *t, char *err, size_t errlen);
/* The handshake, polling fd until it is done or the deadline (tdm__now_ms; 0: none) passes. */
TDM__HIDDEN int tdm__tls_handshake_wait(tdm__tls *t, int fd, double deadline, char *err, size_t errlen);
/* recv(2) and send(2) (MSG_NOSIGNAL) on fd, through t when it is not NULL; the same
 * results and errno, a TLS error being EPROTO (tdm__io_strerror gives its text). */
TDM__HIDDEN ssize_t tdm__io_recv(tdm__tls *t, int fd, void *buf, size_t n);
TDM__HIDDEN ssize_t tdm__io_send(tdm__tls *t, int fd, const void *buf, size_t n);
TDM__HIDDEN const char *tdm__io_strerror(const tdm__tls *t, int err);

/* ---- the blocking client's local errors (client.c), for robot_files.c ---- */

/* Records a failure that happened before anything was sent (c stays usable): code and
 * msg become tdm_client_errstr's. Returns code. */
TDM__HIDDEN int tdm__client_local_error(tdm_client *c, int code, const char *msg);
/* The same for a tdm_multi (multi.c): sets its error and message, returns code. */
TDM__HIDDEN int tdm__multi_local_error(tdm_multi *m, int code, const char *msg);

/* A whole text file, NUL-terminated, malloc'd (robot_files.c); NULL with a message in err. */
TDM__HIDDEN char *tdm__read_text(const char *path, char *err, size_t errlen);

struct tdm_robot;
struct tdm_robot_collision;
struct tdm_mesh;
/* Reads the mesh file of each distinct mesh filename of robot r (the URDF at urdf_path), in
 * element order, as the robot file helpers upload them (tools/mesh_io.c, vertices as the file has
 * them), and hands each to each() with the first element naming it; each() owns the mesh.
 * Returns 0; each()'s nonzero value (it says why); or, when a file cannot be read,
 * TDM_CLIENT_EINVAL (TDM_CLIENT_ENOMEM when out of memory) with "URDF:LINE: link 'L' mesh PATH:
 * why" in err. What tdm_robot_put_files uploads and the local engine (local.c) builds from. */
TDM__HIDDEN int tdm__robot_meshes_read(const struct tdm_robot *r, const char *urdf_path,
                                       int (*each)(void *ctx, const struct tdm_robot_collision *k,
                                                   struct tdm_mesh *mesh),
                                       void *ctx, char *err, size_t errlen);

/* ---- fork() (client.c) ---- */

/* The process's fork generation: bumped in every child of fork() (pthread_atfork, registered at
 * the first call). A context remembers it when it connects; a call from another generation is a
 * child using its parent's connection, and fails. */
TDM__HIDDEN unsigned tdm__fork_gen(void);

/* ---- misc --------------------------------------------------------------------------------- */

TDM__HIDDEN void tdm__fmt(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
TDM__HIDDEN void tdm__vfmt(char *dst, size_t cap, const char *fmt, va_list ap);
TDM__HIDDEN double tdm__now_ms(void);

#endif
