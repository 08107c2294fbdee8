/* libtandem: the C client of the Tandem collision service (protocol v1, proto/README.md).
 *
 * Its parts (the first three as in hiredis):
 *   1. A codec with no I/O: request encoders (tdm_encode_*) that write whole frames, and a
 *      reader (tdm_reader_feed / tdm_reader_get_reply) that splits and decodes reply frames.
 *   2. A blocking client (tdm_client_*, tdm_mesh_*, tdm_scene_*, tdm_query*, tdm_stats_get):
 *      one call, one request, one reply; plus tdm_query_send / tdm_query_wait to keep several
 *      Query batches in flight on one connection.
 *   3. An asynchronous client (tdm_async_*) driven by an event loop through six hooks; a
 *      header-only libuv adapter is in <tandem/adapters/libuv.h>.
 *   4. A blocking client of several servers (tdm_multi_*): uploads to every server, batches
 *      spread over them, a failed server's part re-sent to another.
 *   5. A local engine (tdm_local_*): a robot scene's lone configurations answered in this
 *      process, from a copy built as tandemd builds the stored one.
 *
 * Errors: functions return 0 or a negative TDM_CLIENT_E* code (tdm_client_strerror gives
 * text). A context also keeps a message for its last failure (tdm_client_errstr), and for
 * TDM_CLIENT_ESERVER the server's own error: code, message, field and index.
 *
 * Threads: nothing here is global; each context (tdm_reader, tdm_client, tdm_async) may be
 * used by one thread at a time, and different contexts by different threads at once.
 *
 * Processes: a child of fork() shares its parent's sockets (and rings). A tdm_client or a
 * tdm_multi used in a child fails with TDM_CLIENT_EINVAL (its errstr names fork) and closes only
 * the child's copies, so the parent's connections go on; connect again in the child (a Python
 * multiprocessing worker: a Client made in the worker). A tdm_async is its loop's: not checked.
 *
 * Identifiers: mesh and scene ids are 32 raw bytes (SHA-256, proto/README.md); tdm_id_to_hex
 * and tdm_id_from_hex convert them to and from 64 lower-case hex digits.
 *
 * Poses: 7 doubles `x y z qx qy qz qw`, meaning vertex v goes to R(q) v + t. */
#ifndef TANDEM_H
#define TANDEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TDM_API __attribute__((visibility("default")))
#else
#define TDM_API
#endif

#define TANDEM_VERSION_MAJOR 0
#define TANDEM_VERSION_MINOR 1
#define TANDEM_VERSION_PATCH 0
#define TDM_PROTOCOL_VERSION 1 /* the protocol version this library speaks */
#define TDM_DEFAULT_PORT 7450  /* used when an address has no ":port" */
#define TDM_ID_BYTES 32        /* mesh and scene ids */
#define TDM_ID_HEX 65          /* 64 hex digits and a NUL */
/* The largest reply frame a context accepts unless told otherwise (tdm_connect_opts). */
#define TDM_DEFAULT_MAX_REPLY_BYTES (256u << 20)

/* ---- errors ------------------------------------------------------------------------------ */

/* Client error codes. They start at -100 so that they never collide with the engine's
 * enum tdm_err (geom/base.h); keep tdm_client_strerror (client/util.c) in sync. */
enum tdm_client_err {
    TDM_CLIENT_OK = 0,
    TDM_CLIENT_EINVAL = -100,    /* an argument is malformed, or the call does not fit the context's state */
    TDM_CLIENT_ENOMEM = -101,    /* host allocation failed */
    TDM_CLIENT_EADDR = -102,     /* the address cannot be parsed or resolved */
    TDM_CLIENT_ECONNECT = -103,  /* the connection could not be made */
    TDM_CLIENT_ETIMEOUT = -104,  /* the connect or I/O timeout passed; the connection is closed */
    TDM_CLIENT_EIO = -105,       /* a socket read or write failed; the connection is closed */
    TDM_CLIENT_ECLOSED = -106,   /* the server closed the connection, or the context is closed */
    TDM_CLIENT_EPROTO = -107,    /* the server sent bytes that break the protocol; the connection is closed */
    TDM_CLIENT_ELIMIT = -108,    /* a request is over one of the server's limits (checked before sending) */
    TDM_CLIENT_ESERVER = -109,   /* the server answered with an Error (see tdm_server_error) */
    TDM_CLIENT_EVERSION = -110,  /* the server does not speak protocol version 1 */
    TDM_CLIENT_ENOBUFS = -111,   /* an encoder's destination is too small; *len says how much is needed */
    TDM_CLIENT_ECANCELED = -112, /* async: the context was freed before the reply came */
    TDM_CLIENT_E__LAST = -113
};

/* Static text for a TDM_CLIENT_E* code ("unknown error" for anything else). Thread-safe. */
TDM_API const char *tdm_client_strerror(int err);

/* The server's error codes (tandem.proto ErrorCode), in TDM_CLIENT_ESERVER replies. */
enum tdm_server_code {
    TDM_SERVER_UNSPECIFIED = 0,
    TDM_SERVER_BAD_REQUEST = 1,
    TDM_SERVER_UNSUPPORTED_VERSION = 2,
    TDM_SERVER_UNAUTHENTICATED = 3,
    TDM_SERVER_LIMIT = 4,
    TDM_SERVER_NON_FINITE = 5,
    TDM_SERVER_BAD_INDEX = 6,
    TDM_SERVER_NOT_UNIT = 7,
    TDM_SERVER_EMPTY = 8,
    TDM_SERVER_UNKNOWN_MESH = 9,
    TDM_SERVER_UNKNOWN_SCENE = 10,
    TDM_SERVER_MESH_IN_USE = 11,
    TDM_SERVER_NO_MEMORY = 12,
    TDM_SERVER_STORAGE = 13,
    TDM_SERVER_BUSY = 14,
    TDM_SERVER_INTERNAL = 15,
    TDM_SERVER_UNKNOWN_ROBOT = 16,
    TDM_SERVER_ROBOT_IN_USE = 17,
    TDM_SERVER_BAD_ROBOT = 18,
    TDM_SERVER_WORK_BUDGET = 19 /* the request cost more than limits.max_query_work per query */
};
/* Static lower-case name of a server error code ("limit", "unknown mesh"...). Thread-safe. */
TDM_API const char *tdm_server_code_name(int code);

/* A server Error reply. The strings are never NULL (empty when absent); who owns them is
 * said where the struct is handed out. */
typedef struct tdm_server_error {
    int code;            /* enum tdm_server_code (a newer server may send others) */
    const char *message; /* one line for a person */
    const char *field;   /* the offending field, e.g. "poses"; "" when none */
    int64_t index;       /* the offending element in that field, or -1 */
} tdm_server_error;

/* ---- plain data ---------------------------------------------------------------------------- */

enum tdm_engine { TDM_ENGINE_UNSPECIFIED = 0, TDM_ENGINE_CPU = 1, TDM_ENGINE_GPU = 2, TDM_ENGINE_HYBRID = 3 };
/* "cpu", "gpu", "hybrid" or "unspecified". Thread-safe. */
TDM_API const char *tdm_engine_name(int engine);

/* The server's limits (HelloReply.limits); 0 means the server did not say. The library hands
 * them out only by pointer (tdm_client_server_info, tdm_async_server_info,
 * tdm_multi_server_limits), and fields are only ever appended, so that a program built against
 * an older tandem.h reads the fields it knows; tdm_limits_size() says how long this library's
 * struct is (a binding that lays it out itself, such as Python's ctypes, checks it). */
typedef struct tdm_limits {
    uint32_t max_frame_bytes, max_vertices, max_triangles, max_objects, max_queries, max_contacts,
        max_pipelined, max_connections;
    uint64_t max_meshes_bytes;
    uint32_t max_robots, max_robot_text_bytes;
    uint64_t max_motion_states;
    uint64_t max_query_work; /* box and triangle tests per query (0: no budget) */
    /* appended with tdm_limits_size (a library without that symbol ends at max_query_work): */
    uint32_t max_reply_pairs;     /* want_pairs: a Query's queries x max_contacts at most this */
    uint32_t max_ring_bytes;      /* the largest shared-memory ring RingOpen gives (0: none offered) */
    uint64_t max_query_tasks;     /* a Query's queries x the scene's checked object pairs at most this */
    uint32_t max_scene_triangles; /* a RobotScenePut's attached and world shapes' triangles together */
    uint32_t max_robot_triangles; /* a robot's distinct collision shapes' triangles together */
} tdm_limits;
/* sizeof(tdm_limits) in this library: the fields above up to that size are filled. Thread-safe. */
TDM_API size_t tdm_limits_size(void);

/* What the server said in its HelloReply. */
typedef struct tdm_server_info {
    uint32_t protocol_version;
    char server_version[128]; /* truncated if longer, always NUL-terminated */
    int engine;               /* enum tdm_engine */
    tdm_limits limits;
} tdm_server_info;

typedef struct tdm_mesh_info {
    uint8_t mesh_id[TDM_ID_BYTES];
    const char *name; /* never NULL */
    uint32_t n_vertices, n_triangles;
    uint32_t scenes; /* stored scenes that use the mesh */
    uint32_t robots; /* stored robots that use the mesh */
} tdm_mesh_info;

typedef struct tdm_scene_info {
    uint8_t scene_id[TDM_ID_BYTES];
    const char *name; /* never NULL */
    uint32_t n_objects;
    const uint32_t *movable; /* movable object ids, in the order Query poses use; NULL when none */
    size_t n_movable;
    int is_robot_scene;      /* a robot scene (RobotScenePut): robot_id is its robot */
    uint8_t robot_id[TDM_ID_BYTES];
} tdm_scene_info;

/* ---- robots (issue 13): plain structs, for C and for ctypes ---- */

/* A mesh file named by a URDF and the stored mesh (tdm_mesh_put, vertices as the file has
 * them, unscaled) that stands for it: filename exactly as the URDF's <mesh filename>. */
typedef struct tdm_robot_mesh_ref {
    const char *filename;
    uint8_t mesh_id[TDM_ID_BYTES];
} tdm_robot_mesh_ref;

/* An active joint: its name and limits (radians or metres), in configuration order. */
typedef struct tdm_joint_info {
    const char *name;
    double lower, upper;
} tdm_joint_info;

/* A stored robot (RobotPutReply, RobotInfo). */
typedef struct tdm_robot_info {
    uint8_t robot_id[TDM_ID_BYTES];
    const char *name;              /* "" in a put's answer */
    const tdm_joint_info *joints;  /* the active joints, in configuration order */
    size_t n_joints;
    uint32_t n_links, n_elements;  /* links; collision elements (a robot scene's movable objects) */
    uint32_t scenes;               /* lists: robot scenes using the robot */
    int created;                   /* puts: 0 when an identical robot was already stored */
} tdm_robot_info;

/* One object of a robot scene: a robot collision element (movable 1: its link and its index
 * among the link's collisions), a shape of an object attached to a link (movable 2: the link
 * it moves with, the attached object's id in world_object and the shape's index in it) or a
 * world shape (movable 0: the world object's id and the shape's index in it, primitives
 * first, then meshes, then planes). */
typedef struct tdm_robot_object {
    uint32_t object_id;
    int movable;              /* 0 a world shape, 1 a robot element, 2 an attached object's shape */
    const char *link;         /* movable; "" otherwise */
    uint32_t element;         /* a robot element's; 0 otherwise */
    const char *world_object; /* a world or attached object's id; "" for a robot element */
    uint32_t shape;
} tdm_robot_object;

/* A stored robot scene (RobotScenePutReply). Query answers' object_a / object_b are
 * object ids: objects[id] says what each is. */
typedef struct tdm_robot_scene_info {
    uint8_t scene_id[TDM_ID_BYTES];
    uint8_t robot_id[TDM_ID_BYTES];
    int created;
    const tdm_joint_info *joints; /* configuration order */
    size_t n_joints;
    const tdm_robot_object *objects; /* by id */
    size_t n_objects;
    uint32_t n_checks;            /* checked object pairs per configuration */
} tdm_robot_scene_info;

/* One object of a scene. A fixed object is placed at `pose` when has_pose is set, at the
 * identity otherwise; a movable object's pose comes with each query. */
typedef struct tdm_scene_object {
    uint32_t object_id; /* unique within the scene */
    uint8_t mesh_id[TDM_ID_BYTES];
    int movable;
    int has_pose;
    double pose[7]; /* x y z qx qy qz qw; fixed objects only */
} tdm_scene_object;

/* An allowed-collision pair: these two objects are never checked against each other. */
typedef struct tdm_object_pair { uint32_t a, b; } tdm_object_pair;

typedef enum tdm_query_mode {
    TDM_QUERY_BOOL = 0,    /* any collision: the search stops at the first intersecting pair */
    TDM_QUERY_CONTACTS = 1 /* every intersecting triangle pair, up to max_contacts */
} tdm_query_mode;

/* An intersecting triangle pair: triangle indices into each object's mesh (object_a < object_b). */
typedef struct tdm_contact { uint32_t object_a, triangle_a, object_b, triangle_b; } tdm_contact;

/* One query's answer. */
typedef struct tdm_query_result {
    uint32_t colliding; /* 0 or 1 */
    uint32_t truncated; /* contacts mode: more pairs exist than max_contacts */
    uint32_t contacts;  /* intersecting pairs counted (1 in bool mode when colliding) */
    uint32_t object_a;  /* first colliding object pair, when colliding */
    uint32_t object_b;
    uint32_t n_pairs;    /* pairs sent back for this query (want_pairs) */
    uint64_t first_pair; /* index of its first pair in the batch's pair array */
} tdm_query_result;

/* Caller-owned room for the triangle pairs of a batch (want_pairs). `count` is set to the
 * number of pairs the server sent, which may exceed `cap`: only the first `cap` are stored,
 * so the caller can detect overflow and ask again with more room. */
typedef struct tdm_pairs {
    tdm_contact *data;
    size_t cap;
    size_t count;
} tdm_pairs;

typedef struct tdm_stats {
    char server_version[128]; /* truncated if longer */
    int engine;
    double uptime_s;
    uint32_t connections;
    uint64_t requests, errors, queries, batches;
    double mean_batch_queries, mean_batch_tasks;
    uint32_t meshes, scenes;
    uint64_t meshes_bytes;
    double engine_seconds;
    uint64_t cpu_queries, gpu_queries;
    double gpu_seconds;
    char engine_detail[256]; /* truncated if longer */
    /* which engine did the work, and the GPU side (0 on a CPU engine or from an older server) */
    uint64_t hybrid_queries;
    uint64_t cpu_tasks, gpu_tasks, hybrid_tasks; /* object-pair tasks run by each engine */
    double mean_workpile_pairs;                  /* node and leaf pairs per GPU workpile */
    uint64_t gpu_iterations;                     /* GPU workpiles run */
    uint64_t device_bytes;                       /* device memory held now */
    uint32_t device_meshes;                      /* meshes resident on the device */
    uint64_t dispatch_threshold;                 /* engine auto: smaller batches run on the CPU */
    uint32_t robots;                             /* robots stored (robot scenes count in scenes) */
} tdm_stats;

/* 64 lower-case hex digits and a NUL into hex[TDM_ID_HEX]. Returns hex. */
TDM_API char *tdm_id_to_hex(const uint8_t id[TDM_ID_BYTES], char hex[TDM_ID_HEX]);
/* Parses exactly 64 hex digits (either case). Returns 0 or TDM_CLIENT_EINVAL. */
TDM_API int tdm_id_from_hex(const char *hex, uint8_t id[TDM_ID_BYTES]);

/* One motion's answer (MotionResult). */
typedef struct tdm_motion_result {
    int64_t first_colliding;  /* the smallest colliding state k, or -1 when every state is free */
    uint64_t n_states;
    const double *last_free;  /* n_last_free (0 or J) values: state k - 1, or the end when free */
    size_t n_last_free;
} tdm_motion_result;

/* ---- 1. codec: encoders and reader, no I/O ----------------------------------------------- */

/* Reply body types. The numbers are the Reply.body field numbers, which are also the
 * matching Request.body field numbers. */
typedef enum tdm_reply_type {
    TDM_REPLY_NONE = 0, /* no reply: the request failed on the client side (async) */
    TDM_REPLY_ERROR = 2,
    TDM_REPLY_HELLO = 10,
    TDM_REPLY_MESH_PUT = 11,
    TDM_REPLY_MESH_LIST = 12,
    TDM_REPLY_MESH_DELETE = 13,
    TDM_REPLY_SCENE_PUT = 14,
    TDM_REPLY_SCENE_LIST = 15,
    TDM_REPLY_SCENE_DELETE = 16,
    TDM_REPLY_QUERY = 17,
    TDM_REPLY_STATS = 18,
    TDM_REPLY_ROBOT_PUT = 19,
    TDM_REPLY_ROBOT_LIST = 20,
    TDM_REPLY_ROBOT_DELETE = 21,
    TDM_REPLY_ROBOT_SCENE_PUT = 22,
    TDM_REPLY_MOTION_CHECK = 23,
    TDM_REPLY_RING_OPEN = 24 /* tdm_client_ring's */
} tdm_reply_type;

/* A decoded reply. Everything it points to is borrowed: owned by the reader (or the async
 * context) that produced it, and valid only until the next call on that reader, or until
 * the async callback returns. Copy what you keep. */
typedef struct tdm_reply {
    uint64_t id;   /* the request's id */
    int type;      /* tdm_reply_type */
    int status;    /* 0; TDM_CLIENT_ESERVER with `error` (type TDM_REPLY_ERROR); in async callbacks
                      also a connection error (type TDM_REPLY_NONE) */
    tdm_server_error error;
    union {
        tdm_server_info hello;
        struct {
            uint8_t mesh_id[TDM_ID_BYTES];
            int created;
            uint32_t n_vertices, n_triangles;
        } mesh_put;
        struct {
            const tdm_mesh_info *meshes;
            size_t n;
        } mesh_list;
        struct {
            uint8_t scene_id[TDM_ID_BYTES];
            int created;
            const uint32_t *movable; /* NULL when n_movable is 0 */
            size_t n_movable;
        } scene_put;
        struct {
            const tdm_scene_info *scenes;
            size_t n;
        } scene_list;
        struct {
            const tdm_query_result *results;
            size_t n;
            const tdm_contact *pairs; /* first_pair indexes into this */
            size_t n_pairs;
        } query;
        tdm_stats stats;
        tdm_robot_info robot_put;
        struct {
            const tdm_robot_info *robots;
            size_t n;
        } robot_list;
        tdm_robot_scene_info robot_scene_put;
        struct {
            const tdm_motion_result *results;
            size_t n;
        } motion_check;
        struct {
            uint32_t bytes; /* each shared-memory ring's size */
        } ring_open;
    } u;
} tdm_reply;

typedef struct tdm_reader tdm_reader;

/* A reader accepting reply frames up to max_reply_bytes (0: TDM_DEFAULT_MAX_REPLY_BYTES).
 * NULL when out of memory. Free it with tdm_reader_free. */
TDM_API tdm_reader *tdm_reader_new(uint32_t max_reply_bytes);
TDM_API void tdm_reader_free(tdm_reader *r);
/* Appends bytes received from the server (copied). Returns 0 or TDM_CLIENT_ENOMEM. */
TDM_API int tdm_reader_feed(tdm_reader *r, const void *buf, size_t len);
/* Takes the next complete reply out of the fed bytes. Returns 1 and sets *out (borrowed,
 * valid until the next call on r), 0 when more bytes are needed, or TDM_CLIENT_EPROTO /
 * TDM_CLIENT_ENOMEM: the stream is broken (a frame length of 0 or over the limit, an
 * undecodable reply) and the reader stays broken; tdm_reader_errstr says why. */
TDM_API int tdm_reader_get_reply(tdm_reader *r, const tdm_reply **out);
TDM_API const char *tdm_reader_errstr(const tdm_reader *r);

/* Request encoders. Each writes one whole frame (the 4-byte big-endian length, then the
 * Request) into dst[0..cap) and sets *len to the frame's size. When cap is too small it
 * writes nothing and returns TDM_CLIENT_ENOBUFS with *len set, so dst may be NULL with cap
 * 0 to ask the size first. TDM_CLIENT_EINVAL for a bad argument; TDM_CLIENT_ELIMIT for a
 * frame over 4 GiB. Arrays are read, never kept. Thread-safe. */
TDM_API int tdm_encode_hello(void *dst, size_t cap, size_t *len, uint64_t id, const char *auth_token,
                             const char *client_name);
/* verts: 3 floats per vertex; tris: 3 vertex indices per triangle. */
TDM_API int tdm_encode_mesh_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name,
                                const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris);
TDM_API int tdm_encode_mesh_list(void *dst, size_t cap, size_t *len, uint64_t id);
TDM_API int tdm_encode_mesh_delete(void *dst, size_t cap, size_t *len, uint64_t id,
                                   const uint8_t mesh_id[TDM_ID_BYTES]);
TDM_API int tdm_encode_scene_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name,
                                 const tdm_scene_object *objects, size_t n_objects, const tdm_object_pair *allowed,
                                 size_t n_allowed);
TDM_API int tdm_encode_scene_list(void *dst, size_t cap, size_t *len, uint64_t id);
TDM_API int tdm_encode_scene_delete(void *dst, size_t cap, size_t *len, uint64_t id,
                                    const uint8_t scene_id[TDM_ID_BYTES]);
/* poses: 7 doubles per movable object per query, query i object k at (i*n_movable + k)*7. */
TDM_API int tdm_encode_query(void *dst, size_t cap, size_t *len, uint64_t id, const uint8_t scene_id[TDM_ID_BYTES],
                             tdm_query_mode mode, const double *poses, uint32_t n_movable, size_t n_queries,
                             uint32_t max_contacts, int want_pairs);
TDM_API int tdm_encode_stats(void *dst, size_t cap, size_t *len, uint64_t id);
/* urdf: required; srdf and name may be NULL. */
TDM_API int tdm_encode_robot_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name, const char *urdf,
                                 const char *srdf, const tdm_robot_mesh_ref *meshes, size_t n_meshes);
TDM_API int tdm_encode_robot_list(void *dst, size_t cap, size_t *len, uint64_t id);
TDM_API int tdm_encode_robot_delete(void *dst, size_t cap, size_t *len, uint64_t id,
                                    const uint8_t robot_id[TDM_ID_BYTES]);
TDM_API int tdm_encode_robot_scene_put(void *dst, size_t cap, size_t *len, uint64_t id, const char *name,
                                       const uint8_t robot_id[TDM_ID_BYTES], const char *world_yaml);
/* motions: 2 * n_joints doubles per motion (start, then end). */
TDM_API int tdm_encode_motion_check(void *dst, size_t cap, size_t *len, uint64_t id,
                                    const uint8_t scene_id[TDM_ID_BYTES], double resolution, const double *motions,
                                    uint32_t n_joints, size_t n_motions);
/* configs: n_joints doubles per query, query i at i * n_joints (a robot scene's joints order). */
TDM_API int tdm_encode_query_configs(void *dst, size_t cap, size_t *len, uint64_t id,
                                     const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *configs,
                                     uint32_t n_joints, size_t n_queries, uint32_t max_contacts, int want_pairs);

/* ---- 2. blocking client ----------------------------------------------------------------- */

typedef struct tdm_client tdm_client;

typedef struct tdm_connect_opts {
    const char *addr;         /* "host:port", "host" (port 7450), "[v6addr]:port", "unix:/path", or
                                 "tls://" before a TCP form: TLS, the server's certificate checked
                                 against tls_ca_file and the host */
    int timeout_ms;           /* connect + Hello; 0 (default): wait as long as the system does */
    int io_timeout_ms;        /* each later blocking call, or each async request; 0 (default): no limit */
    const char *auth_token;   /* NULL or "" when the server has none */
    const char *client_name;  /* for the server's log; NULL: "libtandem" */
    uint32_t max_reply_bytes; /* largest reply frame accepted; 0: TDM_DEFAULT_MAX_REPLY_BYTES */
    const char *tls_ca_file;  /* tls://: PEM CA certificates the server's must chain to; NULL or "":
                                 $TANDEM_TLS_CA, else the system's store. A client certificate (for a
                                 tandemd with --tls-ca) comes from $TANDEM_TLS_CERT / $TANDEM_TLS_KEY */
} tdm_connect_opts;

/* Connects (over tls://, with the TLS handshake: timeout_ms covers it), sends Hello and checks
 * the server's protocol version. Always returns a context (NULL only when out of memory):
 * check tdm_client_err(c) first, and free it with tdm_client_free either way (hiredis'
 * redisConnect rule). The socket has TCP_NODELAY. */
TDM_API tdm_client *tdm_client_connect(const char *addr, int timeout_ms);
TDM_API tdm_client *tdm_client_connect_with(const tdm_connect_opts *opts);
/* Closes the connection and frees everything the context owns. NULL is a no-op. */
TDM_API void tdm_client_free(tdm_client *c);
/* on (1): the scenes this client puts from now on (tdm_scene_put, tdm_robot_scene_put and the
 * file helpers over it) are ephemeral: the server holds them in memory only and never writes
 * them to its data directory, so they are gone when it restarts, and it keeps each only while a
 * connection that put it is open (this one: the scene goes when the last holder's connection
 * closes, tdm_client_free or a crash alike; a planner's per-request scenes). An ephemeral scene's
 * id differs from the same content's stored one
 * (proto/README.md, "Ephemeral scenes"); deletes, queries and limits are as for stored
 * scenes. 0 (the default): stored. tdm_async_set_ephemeral_scenes and
 * tdm_multi_set_ephemeral_scenes are the same for those contexts (a tdm_multi replays each
 * scene as it was put). */
TDM_API void tdm_client_set_ephemeral_scenes(tdm_client *c, int on);

/* 0 while the connection is usable; otherwise the TDM_CLIENT_E* code that broke it. Once
 * set it stays set: every later call returns it, and the context can only be freed. */
TDM_API int tdm_client_err(const tdm_client *c);
/* Text of the last failure on c, connection-breaking or not (a server Error included).
 * Owned by c, valid until the next call on c. */
TDM_API const char *tdm_client_errstr(const tdm_client *c);
/* The server's Error behind the last TDM_CLIENT_ESERVER on c, or NULL if the last call did
 * not fail that way. Owned by c, valid until the next call on c. */
TDM_API const tdm_server_error *tdm_client_server_error(const tdm_client *c);
/* HelloReply: version, engine, limits. Owned by c, valid until tdm_client_free. */
TDM_API const tdm_server_info *tdm_client_server_info(const tdm_client *c);
/* Changes the timeout of later blocking calls (0: none). A call that times out closes the
 * connection (TDM_CLIENT_ETIMEOUT), because its reply may still arrive later. */
TDM_API void tdm_client_set_timeout(tdm_client *c, int io_timeout_ms);
/* The socket, for poll() by callers that multiplex connections; do not read or write it. With
 * shared-memory rings (tdm_client_ring) replies do not come through it: poll it only for the
 * server's close. */
TDM_API int tdm_client_fd(const tdm_client *c);
/* Same host only (a unix: address): asks the server to carry this connection's frames through
 * two rings in shared memory instead of the socket (proto/README.md, "Shared-memory rings"),
 * which spares both sides the socket's system calls on every request. bytes: each ring's size
 * (0: the server's default, 256 KiB; a frame larger than the ring streams through it). spin_us:
 * how long a call that waits polls the reply ring before it sleeps (0: it sleeps at once; a spin
 * pays only when the client has a core of its own). Call it with nothing in flight, after
 * connecting. Returns 0 (the rings carry every later request), TDM_CLIENT_ESERVER when the
 * server refuses (a TCP or TLS connection, tandemd's max-ring-bytes 0, ...: the connection goes
 * on over the socket, tdm_client_server_error says why), TDM_CLIENT_EINVAL (requests in
 * flight, or rings already open), or a connection error. The blocking client only: the async
 * client and tdm_multi stay on their sockets. */
TDM_API int tdm_client_ring(tdm_client *c, uint32_t bytes, int spin_us);
/* 1 while c's frames go through shared-memory rings, else 0. */
TDM_API int tdm_client_ring_open(const tdm_client *c);

/* Every call below returns 0, TDM_CLIENT_ESERVER (the server refused; c stays usable;
 * tdm_client_server_error says why), a local error (TDM_CLIENT_EINVAL, TDM_CLIENT_ELIMIT,
 * TDM_CLIENT_ENOMEM; nothing was sent), or a connection error that closes c. Output
 * arguments are written only on success. */

/* Stores a mesh: verts has 3 floats per vertex, tris 3 indices per triangle; name may be
 * NULL. mesh_id receives the 32-byte id; created (may be NULL) is 0 when an identical mesh
 * was already stored. */
TDM_API int tdm_mesh_put(tdm_client *c, const char *name, const float *verts, uint32_t n_verts,
                         const uint32_t *tris, uint32_t n_tris, uint8_t mesh_id[TDM_ID_BYTES], int *created);
/* Lists stored meshes into one malloc'd block: *out is an array of *n entries whose names
 * live in the same block. Free it with tdm_mesh_list_free (*out may be NULL when *n is 0). */
TDM_API int tdm_mesh_list(tdm_client *c, tdm_mesh_info **out, size_t *n);
TDM_API void tdm_mesh_list_free(tdm_mesh_info *list);
TDM_API int tdm_mesh_delete(tdm_client *c, const uint8_t mesh_id[TDM_ID_BYTES]);

/* Stores a scene. scene_id receives its id, created (may be NULL) whether it is new.
 * movable[0..movable_cap) receives the movable object ids in Query order (may be NULL with
 * movable_cap 0); *n_movable (may be NULL) is their number, which may exceed movable_cap
 * (n_objects is always enough room). */
TDM_API int tdm_scene_put(tdm_client *c, const char *name, const tdm_scene_object *objects, size_t n_objects,
                          const tdm_object_pair *allowed, size_t n_allowed, uint8_t scene_id[TDM_ID_BYTES],
                          int *created, uint32_t *movable, size_t movable_cap, size_t *n_movable);
/* Lists stored scenes into one malloc'd block (names and movable arrays inside); free it
 * with tdm_scene_list_free. */
TDM_API int tdm_scene_list(tdm_client *c, tdm_scene_info **out, size_t *n);
TDM_API void tdm_scene_list_free(tdm_scene_info *list);
TDM_API int tdm_scene_delete(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES]);

/* Runs n_queries queries against a scene. poses holds 7 * n_movable * n_queries doubles
 * (query i, movable object k at (i*n_movable + k)*7, objects in the scene's movable order).
 * max_contacts: contacts mode's cap per query (0: the server's limit). results receives
 * n_queries answers. pairs: NULL, or room for the triangle pairs (sets want_pairs; see
 * tdm_pairs). A single-pose call does one write and no allocation once the context's
 * buffers have grown. */
TDM_API int tdm_query(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                      const double *poses, uint32_t n_movable, size_t n_queries, uint32_t max_contacts,
                      tdm_query_result *results, tdm_pairs *pairs);

/* Pipelining: tdm_query_send sends a Query and returns at once with its id in *id (it may
 * read replies already due while it writes, so that neither side stalls). results and
 * pairs are borrowed until tdm_query_wait hands that id back: the reply is decoded straight
 * into them. Returns 0 once sent, else an error as above (nothing is then in flight for
 * this call). */
TDM_API int tdm_query_send(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                           const double *poses, uint32_t n_movable, size_t n_queries, uint32_t max_contacts,
                           tdm_query_result *results, tdm_pairs *pairs, uint64_t *id);
/* Blocks until a sent query is answered, in whatever order the server answers, and hands
 * it back: *id, and *status = 0, TDM_CLIENT_ESERVER (tdm_client_server_error is that
 * query's error) or the connection error that failed it (each outstanding query is handed
 * back once, even after the connection broke). Returns 0, or TDM_CLIENT_EINVAL when no
 * sent query is outstanding. */
TDM_API int tdm_query_wait(tdm_client *c, uint64_t *id, int *status);
/* Queries sent and not yet handed back by tdm_query_wait. */
TDM_API size_t tdm_query_outstanding(const tdm_client *c);

TDM_API int tdm_stats_get(tdm_client *c, tdm_stats *out);

/* ---- robots ---- */

/* Stores a robot: its URDF text, its SRDF text (NULL: none), and the stored mesh of each
 * mesh filename the URDF uses (every one, once). The server parses them as `tandem check
 * --urdf` does: a bad file gets TDM_CLIENT_ESERVER with the server's error naming the line
 * and element (code TDM_SERVER_BAD_ROBOT, field "urdf" or "srdf"; TDM_SERVER_UNKNOWN_MESH,
 * field "meshes", for a filename missing from the table or an id not stored). robot_id
 * receives the id; created and info may be NULL: *info receives one malloc'd block (the
 * joints inside), freed with tdm_robot_info_free. */
TDM_API int tdm_robot_put(tdm_client *c, const char *name, const char *urdf, const char *srdf,
                          const tdm_robot_mesh_ref *meshes, size_t n_meshes, uint8_t robot_id[TDM_ID_BYTES],
                          int *created, tdm_robot_info **info);
/* Stored robots, as one malloc'd block of *n entries (free with tdm_robot_info_free). */
TDM_API int tdm_robot_list(tdm_client *c, tdm_robot_info **out, size_t *n);
TDM_API void tdm_robot_info_free(tdm_robot_info *info);
/* Refused (TDM_SERVER_ROBOT_IN_USE) while a robot scene uses the robot. */
TDM_API int tdm_robot_delete(tdm_client *c, const uint8_t robot_id[TDM_ID_BYTES]);

/* Stores the robot in a MoveIt planning scene (world_yaml: the YAML text). It is a scene:
 * tdm_scene_list lists it, tdm_scene_delete deletes it. scene_id receives its id; created
 * and info may be NULL (*info: one malloc'd block, freed with tdm_robot_scene_info_free). */
TDM_API int tdm_robot_scene_put(tdm_client *c, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                                const char *world_yaml, uint8_t scene_id[TDM_ID_BYTES], int *created,
                                tdm_robot_scene_info **info);
TDM_API void tdm_robot_scene_info_free(tdm_robot_scene_info *info);

/* Joint-space queries on a robot scene: configs holds n_joints * n_queries doubles (query i
 * at i * n_joints, the scene's joints order). Otherwise as tdm_query; an answer's object_a
 * and object_b are the first colliding pair's object ids (tdm_robot_scene_info.objects). */
TDM_API int tdm_query_configs(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                              const double *configs, uint32_t n_joints, size_t n_queries, uint32_t max_contacts,
                              tdm_query_result *results, tdm_pairs *pairs);
/* tdm_query_configs pipelined: as tdm_query_send; answers come back through tdm_query_wait. */
TDM_API int tdm_query_configs_send(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                                   const double *configs, uint32_t n_joints, size_t n_queries, uint32_t max_contacts,
                                   tdm_query_result *results, tdm_pairs *pairs, uint64_t *id);

/* Motion checks on a robot scene: motions holds 2 * n_joints doubles per motion (start,
 * then end configuration). Motion a -> b is checked at n = max(2, ceil(max_j |b_j - a_j| /
 * resolution) + 1) states q_k = a + k/(n-1) (b - a), first to last, stopping at its first
 * colliding state; the server pools the states of every motion with every other query.
 * first_colliding[i] receives the smallest colliding k or -1; n_states (may be NULL) each
 * motion's state count; last_free (may be NULL, else n_motions * n_joints doubles) the last
 * free state before the first colliding one (the end when free; left untouched when k = 0).
 * Over max_queries motions or max_motion_states states: split them. */
TDM_API int tdm_motion_check(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                             const double *motions, uint32_t n_joints, size_t n_motions, int64_t *first_colliding,
                             uint64_t *n_states, double *last_free);
/* Paths: motion i goes through n_points[i] >= 2 configurations (points: all of them one
 * after the other, n_joints values each), segment by segment, each segment cut into
 * states as a two-point motion is; states are numbered along the path, the point shared
 * by two segments counted once. Answers as tdm_motion_check. */
TDM_API int tdm_motion_check_paths(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                                   const double *points, uint32_t n_joints, const uint32_t *n_points,
                                   size_t n_motions, int64_t *first_colliding, uint64_t *n_states,
                                   double *last_free);
/* Flags of a motion check. TDM_MOTION_ANY_STATE: a colliding motion's answer is any
 * colliding state, not necessarily the first (what a planner's plain validity check needs):
 * the server checks a few states first, coarse to fine (the end, the middle, the quarters:
 * tandemd's --motion-probes), then the others spread over the motion, so that most
 * colliding motions are answered after few of them;
 * last_free is then left untouched for a colliding motion. Free motions answer -1 either way. */
#define TDM_MOTION_ANY_STATE 1u
/* tdm_motion_check (n_points NULL: 2 configurations a motion) or tdm_motion_check_paths, with
 * flags (TDM_MOTION_*; 0: as those). */
TDM_API int tdm_motion_check_flags(tdm_client *c, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                                   const double *points, uint32_t n_joints, const uint32_t *n_points,
                                   size_t n_motions, unsigned flags, int64_t *first_colliding, uint64_t *n_states,
                                   double *last_free);

/* File helpers (what `tandem robot put` and `tandem query --urdf` use). tdm_robot_put_files
 * reads the URDF (and the SRDF, NULL: none), resolves each collision mesh filename as
 * `tandem check --urdf` does (package://, file://, paths relative to the URDF's folder),
 * reads each mesh file (any format assimp reads, vertices as the file has them), stores
 * it with tdm_mesh_put, then stores the robot with the texts and the table. A file that
 * cannot be read or parsed is TDM_CLIENT_EINVAL with "FILE:LINE: element: what" in
 * tdm_client_errstr; the server's errors are as for tdm_robot_put. Outputs as there. */
TDM_API int tdm_robot_put_files(tdm_client *c, const char *name, const char *urdf_path, const char *srdf_path,
                                uint8_t robot_id[TDM_ID_BYTES], int *created, tdm_robot_info **info);
/* Reads the planning-scene YAML at yaml_path and stores it with tdm_robot_scene_put. */
TDM_API int tdm_robot_scene_put_file(tdm_client *c, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                                     const char *yaml_path, uint8_t scene_id[TDM_ID_BYTES], int *created,
                                     tdm_robot_scene_info **info);

/* ---- 3. asynchronous client ------------------------------------------------------------- */

typedef struct tdm_async tdm_async;

/* Event-loop hooks, as in hiredis: the context calls them to say which readiness it needs.
 * add/del may be called repeatedly; cleanup is called once, when the context goes away, and
 * must stop the loop from calling tdm_async_handle_* for this context again.
 * set_timer (may be NULL: then no timeout is enforced) asks for one call of
 * tdm_async_handle_timeout after ms milliseconds (0: as soon as possible), replacing the
 * timer asked for before; ms < 0 cancels it. */
typedef struct tdm_async_ev {
    void *data;
    void (*add_read)(void *data);
    void (*del_read)(void *data);
    void (*add_write)(void *data);
    void (*del_write)(void *data);
    void (*cleanup)(void *data);
    void (*set_timer)(void *data, int64_t ms);
} tdm_async_ev;

/* A reply callback. reply is borrowed: valid only during the call. reply->status is 0,
 * TDM_CLIENT_ESERVER (reply->error), or a connection error / TDM_CLIENT_ECANCELED with type
 * TDM_REPLY_NONE. A callback may issue new requests, or call tdm_async_disconnect or
 * tdm_async_free (the context then goes away after the callback returns). */
typedef void tdm_async_reply_cb(tdm_async *ac, const tdm_reply *reply, void *privdata);
/* Called once: status 0 when the Hello handshake succeeded, else why the connection could
 * not be made (the context is then freed after the callback returns, and the disconnect
 * callback is not called). tdm_async_server_info is valid from the successful call on. */
typedef void tdm_async_connect_cb(tdm_async *ac, int status);
/* Called once when a connected context goes away: status 0 after tdm_async_disconnect or
 * tdm_async_free, else the error that broke the connection. The context is freed right
 * after it returns. */
typedef void tdm_async_disconnect_cb(tdm_async *ac, int status);

/* Starts a non-blocking connect (name resolution itself blocks, as in hiredis) and queues
 * Hello. Returns a context (NULL only when out of memory); if tdm_async_err is set it never
 * connected: free it with tdm_async_free (no callback is called). Otherwise attach it to a
 * loop (tdm_async_attach, or an adapter).
 * Timeouts, as the blocking client's (0, the default: none), enforced through the loop's
 * set_timer hook: opts->timeout_ms bounds the TCP connect and the Hello handshake together
 * (past it the connect callback gets TDM_CLIENT_ETIMEOUT); opts->io_timeout_ms bounds each
 * request from its submission to its reply. A request past it gets its callback once with
 * status TDM_CLIENT_ETIMEOUT (type TDM_REPLY_NONE), and the connection is closed, because
 * a late reply could no longer be matched safely: the other pending requests get
 * TDM_CLIENT_ECLOSED, the disconnect callback TDM_CLIENT_ETIMEOUT, and tdm_async_errstr
 * names the request that timed out. */
TDM_API tdm_async *tdm_async_connect(const tdm_connect_opts *opts);
/* Installs the hooks; called by adapters. Returns TDM_CLIENT_EINVAL if already attached. */
TDM_API int tdm_async_attach(tdm_async *ac, const tdm_async_ev *ev);
TDM_API void tdm_async_set_connect_cb(tdm_async *ac, tdm_async_connect_cb *cb);
TDM_API void tdm_async_set_disconnect_cb(tdm_async *ac, tdm_async_disconnect_cb *cb);
/* As tdm_client_set_ephemeral_scenes, for the scene puts this context sends from now on. */
TDM_API void tdm_async_set_ephemeral_scenes(tdm_async *ac, int on);
/* User data, free for the caller's use. */
TDM_API void tdm_async_set_data(tdm_async *ac, void *data);
TDM_API void *tdm_async_data(const tdm_async *ac);
TDM_API int tdm_async_fd(const tdm_async *ac);
TDM_API int tdm_async_err(const tdm_async *ac);
TDM_API const char *tdm_async_errstr(const tdm_async *ac);
/* Valid after a successful connect callback. */
TDM_API const tdm_server_info *tdm_async_server_info(const tdm_async *ac);
/* The loop calls these when the socket is readable / writable. */
TDM_API void tdm_async_handle_read(tdm_async *ac);
TDM_API void tdm_async_handle_write(tdm_async *ac);
/* The loop calls this when the timer asked for by set_timer is due. */
TDM_API void tdm_async_handle_timeout(tdm_async *ac);

/* Graceful: no new requests are accepted; the connection closes once every pending reply
 * has been delivered, then the disconnect callback runs with status 0. */
TDM_API void tdm_async_disconnect(tdm_async *ac);
/* Immediate: every pending callback gets TDM_CLIENT_ECANCELED, the disconnect callback runs
 * (status 0) if the context had connected, then the context is freed. Inside a callback the
 * free happens when that callback returns. */
TDM_API void tdm_async_free(tdm_async *ac);

/* Requests. Each queues one frame and returns 0, after which cb (may be NULL) is called
 * exactly once with the reply; or returns an error (TDM_CLIENT_EINVAL, ENOMEM, ELIMIT,
 * ECLOSED when disconnecting or closed) and then never calls cb. Arrays are copied into
 * the output buffer before the call returns. id (may be NULL) receives the request id. */
TDM_API int tdm_async_mesh_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name,
                               const float *verts, uint32_t n_verts, const uint32_t *tris, uint32_t n_tris,
                               uint64_t *id);
TDM_API int tdm_async_mesh_list(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id);
TDM_API int tdm_async_mesh_delete(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                  const uint8_t mesh_id[TDM_ID_BYTES], uint64_t *id);
TDM_API int tdm_async_scene_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name,
                                const tdm_scene_object *objects, size_t n_objects, const tdm_object_pair *allowed,
                                size_t n_allowed, uint64_t *id);
TDM_API int tdm_async_scene_list(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id);
TDM_API int tdm_async_scene_delete(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                   const uint8_t scene_id[TDM_ID_BYTES], uint64_t *id);
TDM_API int tdm_async_query(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                            const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *poses,
                            uint32_t n_movable, size_t n_queries, uint32_t max_contacts, int want_pairs,
                            uint64_t *id);
TDM_API int tdm_async_stats(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id);
/* Robots, robot scenes, joint-space queries and motion checks, as the blocking calls; the
 * callback's reply has u.robot_put, u.robot_list, u.robot_scene_put, u.query or
 * u.motion_check (borrowed until it returns). */
TDM_API int tdm_async_robot_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name,
                                const char *urdf, const char *srdf, const tdm_robot_mesh_ref *meshes,
                                size_t n_meshes, uint64_t *id);
TDM_API int tdm_async_robot_list(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, uint64_t *id);
TDM_API int tdm_async_robot_delete(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                   const uint8_t robot_id[TDM_ID_BYTES], uint64_t *id);
TDM_API int tdm_async_robot_scene_put(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata, const char *name,
                                      const uint8_t robot_id[TDM_ID_BYTES], const char *world_yaml, uint64_t *id);
TDM_API int tdm_async_query_configs(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                    const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                                    const double *configs, uint32_t n_joints, size_t n_queries,
                                    uint32_t max_contacts, int want_pairs, uint64_t *id);
TDM_API int tdm_async_motion_check(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                   const uint8_t scene_id[TDM_ID_BYTES], double resolution, const double *motions,
                                   uint32_t n_joints, size_t n_motions, uint64_t *id);
TDM_API int tdm_async_motion_check_paths(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                         const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                                         const double *points, uint32_t n_joints, const uint32_t *n_points,
                                         size_t n_motions, uint64_t *id);
/* As tdm_motion_check_flags (n_points NULL: 2 configurations a motion). */
TDM_API int tdm_async_motion_check_flags(tdm_async *ac, tdm_async_reply_cb *cb, void *privdata,
                                         const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                                         const double *points, uint32_t n_joints, const uint32_t *n_points,
                                         size_t n_motions, unsigned flags, uint64_t *id);
/* Requests queued and not yet answered. */
TDM_API size_t tdm_async_pending(const tdm_async *ac);

/* ---- 4. several servers (blocking) ----------------------------------------------------- */

/* One blocking context over several tandemd: uploads (meshes, scenes, robots, robot scenes)
 * go to every server, and are kept (copied) by the context to be replayed, in order, to a
 * server that reconnects, before it gets any query (content ids make that idempotent);
 * batches of queries and motions are cut into parts spread over the usable servers, and
 * answers land in the caller's arrays in order, each exactly once. A part whose server fails
 * (connection lost, io_timeout_ms passed, BUSY) is re-sent to another server; a failed
 * server is reconnected after a backoff (100 ms doubling to 5 s by default), or at once when
 * none is usable. A call fails with TDM_CLIENT_ECONNECT when every server failed during it.
 * Deletes and lists are not spread: use a tdm_client per server. One thread at a time. */
typedef struct tdm_multi tdm_multi;

/* Connects to n addresses (opts->addr is ignored), or, with addrs NULL, to the comma-
 * separated list in opts->addr ("a:7450,b:7450,unix:/run/t.sock"); the other options
 * (timeouts, token, name, max_reply_bytes) apply to each server. Returns once every server
 * has connected or failed; a context always (NULL only when out of memory): when no server
 * could be reached, tdm_multi_err is set and the context can only be freed. */
TDM_API tdm_multi *tdm_multi_connect(const char *const *addrs, size_t n, const tdm_connect_opts *opts);
TDM_API void tdm_multi_free(tdm_multi *m);
/* As tdm_client_set_ephemeral_scenes, for the scene puts made from now on (each replayed to a
 * server that comes back as it was put). */
TDM_API void tdm_multi_set_ephemeral_scenes(tdm_multi *m, int on);
TDM_API int tdm_multi_err(const tdm_multi *m);
/* The text of the last failure (owned by m, valid until the next call on m). */
TDM_API const char *tdm_multi_errstr(const tdm_multi *m);
/* The server's Error behind the last TDM_CLIENT_ESERVER (its index made the call's), or NULL. */
TDM_API const tdm_server_error *tdm_multi_server_error(const tdm_multi *m);
/* Backoff before reconnecting a failed server: retry_min_ms doubling up to retry_max_ms. */
TDM_API void tdm_multi_set_retry(tdm_multi *m, int retry_min_ms, int retry_max_ms);
/* A batch is cut into parts of at least min_queries (default 1), one per usable server. */
TDM_API void tdm_multi_set_min_part(tdm_multi *m, size_t min_queries);
TDM_API size_t tdm_multi_servers(const tdm_multi *m);
/* Server i: 1 when usable now, 0 otherwise (*errstr: why it is down, or ""); *addr its
 * address. Both borrowed from m. TDM_CLIENT_EINVAL for i out of range. */
TDM_API int tdm_multi_server_state(const tdm_multi *m, size_t i, const char **addr, const char **errstr);
/* Server i's limits (its HelloReply's) while it is connected, else NULL (borrowed from m,
 * valid until the next call on m). */
TDM_API const tdm_limits *tdm_multi_server_limits(const tdm_multi *m, size_t i);
/* Parts re-sent to another server after a failure, over the context's life. */
TDM_API size_t tdm_multi_resent(const tdm_multi *m);

/* As tdm_mesh_put, tdm_scene_put, tdm_robot_put, tdm_robot_scene_put, on every server. A
 * refusal by any server is the call's TDM_CLIENT_ESERVER (the upload is then not kept). */
TDM_API int tdm_multi_mesh_put(tdm_multi *m, const char *name, const float *verts, uint32_t n_verts,
                               const uint32_t *tris, uint32_t n_tris, uint8_t mesh_id[TDM_ID_BYTES], int *created);
TDM_API int tdm_multi_scene_put(tdm_multi *m, const char *name, const tdm_scene_object *objects, size_t n_objects,
                                const tdm_object_pair *allowed, size_t n_allowed, uint8_t scene_id[TDM_ID_BYTES],
                                int *created, uint32_t *movable, size_t movable_cap, size_t *n_movable);
TDM_API int tdm_multi_robot_put(tdm_multi *m, const char *name, const char *urdf, const char *srdf,
                                const tdm_robot_mesh_ref *meshes, size_t n_meshes, uint8_t robot_id[TDM_ID_BYTES],
                                int *created);
TDM_API int tdm_multi_robot_scene_put(tdm_multi *m, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                                      const char *world_yaml, uint8_t scene_id[TDM_ID_BYTES], int *created);
/* The file helpers (tdm_robot_put_files, tdm_robot_scene_put_file) on every server.
 * tdm_multi_robot_put_files' info (may be NULL) describes the robot as parsed here (the
 * joints in configuration order, links, elements; name ""), freed with tdm_robot_info_free. */
TDM_API int tdm_multi_robot_put_files(tdm_multi *m, const char *name, const char *urdf_path, const char *srdf_path,
                                      uint8_t robot_id[TDM_ID_BYTES], int *created, tdm_robot_info **info);
TDM_API int tdm_multi_robot_scene_put_file(tdm_multi *m, const char *name, const uint8_t robot_id[TDM_ID_BYTES],
                                           const char *yaml_path, uint8_t scene_id[TDM_ID_BYTES], int *created);
/* As tdm_query / tdm_query_configs / tdm_motion_check, spread over the servers. A server's
 * refusal (TDM_CLIENT_ESERVER) ends the call; its error's index is the call's. */
TDM_API int tdm_multi_query(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                            const double *poses, uint32_t n_movable, size_t n_queries, uint32_t max_contacts,
                            tdm_query_result *results, tdm_pairs *pairs);
TDM_API int tdm_multi_query_configs(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode,
                                    const double *configs, uint32_t n_joints, size_t n_queries,
                                    uint32_t max_contacts, tdm_query_result *results, tdm_pairs *pairs);
TDM_API int tdm_multi_motion_check(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                                   const double *motions, uint32_t n_joints, size_t n_motions,
                                   int64_t *first_colliding, uint64_t *n_states, double *last_free);
/* As tdm_motion_check_flags with 2 configurations a motion, spread over the servers. */
TDM_API int tdm_multi_motion_check_flags(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], double resolution,
                                         const double *motions, uint32_t n_joints, size_t n_motions, unsigned flags,
                                         int64_t *first_colliding, uint64_t *n_states, double *last_free);

/* ---- 5. the local engine: a robot scene's small batches in this process ------------------- */

/* A planner asks about one configuration at a time (OMPL's isValid before each goal-tree
 * extension of RRTConnect). Through tandemd each costs a round trip, ~0.1 ms with 64 planners
 * on 16 cores, for a check that costs ~10 us on one core; tandemd pays off on batches, pooled
 * with every client's. The local engine answers such lone checks on the caller's thread:
 * Tandem's CPU engine over a copy of a robot scene, built here from the same files by the
 * same code as tandemd builds the stored one (robot/, workpile/), so that its answers are
 * tandemd's. The copies' ids are the ones tandemd gives the same content (proto/README.md),
 * so a program can check that a copy is of the scene it stored before it answers for it.
 *
 * Three objects: a robot (its collision elements' trees, built once), a scene (a robot in a
 * planning scene: its world's trees), both read-only once made and usable by any number of
 * threads at once; and an engine, with the scratch of its runs, used by one thread at a time
 * (a planner's thread each). Errors: functions return 0 or a negative TDM_CLIENT_E* code,
 * and the engine they were given keeps a message (tdm_local_errstr) naming the file, line
 * and element, or the query and value. */
typedef struct tdm_local tdm_local;
typedef struct tdm_local_robot tdm_local_robot;
typedef struct tdm_local_scene tdm_local_scene;

/* An engine: no threads of its own, scratch grown as runs need it. NULL when out of memory. */
TDM_API tdm_local *tdm_local_create(void);
TDM_API void tdm_local_free(tdm_local *l);
/* The last failure's message ("" after a success). Owned by l, valid until its next call. */
TDM_API const char *tdm_local_errstr(const tdm_local *l);

/* Reads a robot as tdm_robot_put_files does (URDF, SRDF or NULL, each mesh filename resolved
 * and read the same way) and builds its collision elements' trees. Returns 0,
 * TDM_CLIENT_EINVAL (a file cannot be read or parsed, or an element cannot be built:
 * "FILE:LINE: element: what" in l's errstr) or TDM_CLIENT_ENOMEM. *out is freed with
 * tdm_local_robot_free after every scene made from it. */
TDM_API int tdm_local_robot_load(tdm_local *l, const char *urdf_path, const char *srdf_path, tdm_local_robot **out);
TDM_API void tdm_local_robot_free(tdm_local_robot *r);
/* The id tdm_robot_put_files stores this robot under. */
TDM_API void tdm_local_robot_id(const tdm_local_robot *r, uint8_t id[TDM_ID_BYTES]);
/* Its active joints: a configuration's values, in `tandem robot joints` order. */
TDM_API uint32_t tdm_local_robot_joints(const tdm_local_robot *r);

/* The robot in a MoveIt planning scene (world_yaml: the YAML text), built as
 * tdm_robot_scene_put has tandemd build it. Errors as tdm_local_robot_load ("world:LINE:
 * PATH: what", as tandemd's). *out is freed with tdm_local_scene_free. */
TDM_API int tdm_local_scene_create(tdm_local *l, const tdm_local_robot *r, const char *world_yaml,
                                   tdm_local_scene **out);
/* The same from the YAML file at yaml_path (as tdm_robot_scene_put_file reads it). */
TDM_API int tdm_local_scene_create_file(tdm_local *l, const tdm_local_robot *r, const char *yaml_path,
                                        tdm_local_scene **out);
TDM_API void tdm_local_scene_free(tdm_local_scene *s);
/* The id tdm_robot_scene_put gives this scene: stored, or put ephemeral (ephemeral 1). */
TDM_API void tdm_local_scene_id(const tdm_local_scene *s, int ephemeral, uint8_t id[TDM_ID_BYTES]);

/* As tdm_query_configs on the stored scene, answered on the caller's thread: the same
 * colliding answers and, in contacts mode, the same contacts, truncated and first pair
 * (max_contacts 0: tandemd's default limit, 1000000); in bool mode object_a and object_b
 * name a colliding pair (tandemd's may be another). No triangle pairs (n_pairs 0). Returns 0
 * or TDM_CLIENT_EINVAL (n_joints not the robot's, a value NaN or infinite: errstr names the
 * query and joint; nothing is answered) or TDM_CLIENT_ENOMEM. */
TDM_API int tdm_local_query_configs(tdm_local *l, const tdm_local_scene *s, tdm_query_mode mode,
                                    const double *configs, uint32_t n_joints, size_t n_queries, uint32_t max_contacts,
                                    tdm_query_result *results);

#ifdef __cplusplus
}
#endif

#endif
