/* What the request handlers share: their entry points, called by request.c's
 * routing once a request may run, and the helpers (request.c) they build
 * replies and check fields with.
 *
 * Loop thread only. A handler answers its request itself, at once or, when it
 * hands work to another thread (the writer, the query pool), from that work's
 * completion on the loop: tdm_conn_begin / tdm_conn_end bracket that time.
 * A handler that refuses a request replies with an Error and changes nothing. */
#ifndef TDM_DAEMON_REQUEST_HANDLERS_H
#define TDM_DAEMON_REQUEST_HANDLERS_H

#include "conn.h"

typedef Tandem__V1__ErrorCode ecode;
/* The wire's error codes, short: E(BAD_REQUEST). */
#define E(x) TANDEM__V1__ERROR_CODE__ERROR_##x


/* ---- handlers: the request's id and its decoded body (valid during the call) ---- */

void tdm__hello(tdm_conn *c, uint64_t id, const Tandem__V1__Hello *h);           /* request_hello.c */
void tdm__mesh_put(tdm_conn *c, uint64_t id, const Tandem__V1__MeshPut *p);      /* request_mesh.c */
void tdm__mesh_list(tdm_conn *c, uint64_t id);
void tdm__mesh_delete(tdm_conn *c, uint64_t id, const Tandem__V1__MeshDelete *d);
void tdm__scene_put(tdm_conn *c, uint64_t id, const Tandem__V1__ScenePut *p);    /* request_scene.c */
void tdm__scene_list(tdm_conn *c, uint64_t id);
void tdm__scene_delete(tdm_conn *c, uint64_t id, const Tandem__V1__SceneDelete *d);
/* Ephemeral scenes are held by the connections that put them (proto/README.md, "Ephemeral
 * scenes"); the server's lock held exclusive. _hold: a put of sc was answered on c (nothing for a
 * stored scene, nor when c holds it already). _settle: a put of sc finished on c, answered or not
 * (c closing): a scene that no connection holds is dropped. _release: c is closing; the scenes
 * it was the last to hold are dropped. */
void tdm__ephemeral_hold(tdm_conn *c, tdm_stored_scene *sc);
/* A put of the ephemeral scene sid on c, before anything else: refused (ERROR_LIMIT sent, 1) when c
 * holds max-ephemeral-scenes others already, else 0. */
int tdm__ephemeral_refuse(tdm_conn *c, uint64_t req, const uint8_t sid[TDM_ID_LEN]);
void tdm__ephemeral_settle(tdm_conn *c, tdm_stored_scene *sc);
void tdm__ephemeral_release(tdm_conn *c);
void tdm__query(tdm_conn *c, uint64_t id, const Tandem__V1__Query *q);           /* request_query.c */
void tdm__stats(tdm_conn *c, uint64_t id);                                        /* stats.c */
void tdm__robot_put(tdm_conn *c, uint64_t id, const Tandem__V1__RobotPut *p);    /* request_robot.c */
void tdm__robot_list(tdm_conn *c, uint64_t id);
void tdm__robot_delete(tdm_conn *c, uint64_t id, const Tandem__V1__RobotDelete *d);
void tdm__robot_scene_put(tdm_conn *c, uint64_t id, const Tandem__V1__RobotScenePut *p);
void tdm__motion_check(tdm_conn *c, uint64_t id, const Tandem__V1__MotionCheck *m); /* request_motion.c */

/* ---- helpers (request.c) ---- */

/* Configurations (or a MotionCheck batch's states) from which a request goes to
 * the engine as configurations, 0: never (--device-configs-min, 0 turning them
 * off; 1 with --device-configs-small when the engine runs them on the device,
 * where jobs of configurations of any robot scenes pool into one device run). */
static inline uint32_t tdm__configs_min(const tdm_server *srv)
{
    const tdm_config *cfg = srv->cfg;
    if (cfg->device_configs_min && cfg->device_configs_small && tdm_sched_configs_on_device(srv->engine)) return 1;
    return cfg->device_configs_min;
}

/* TDM_E* (geom, workpile, writer) to the wire's error codes. */
/* A request's work budget: n queries at per_query tests each (0: none), saturating. */
static inline uint64_t tdm__work_budget(uint64_t per_query, uint64_t n)
{
    if (!per_query || !n) return 0;
    return per_query > UINT64_MAX / n ? UINT64_MAX : per_query * n;
}
ecode tdm__error_code(int rc);
/* Sends a Reply whose body is msg (any member of the oneof, given by body_case). */
void tdm__send_body(tdm_conn *c, uint64_t id, Tandem__V1__Reply__BodyCase body_case, void *msg);
/* Names: UTF-8 within max_name_bytes (NULL passes). 0, or -1 after replying. */
int tdm__check_name(tdm_conn *c, uint64_t id, const char *name, const char *field);
/* Reads a 32-byte id field. 0, or -1 after replying. */
int tdm__get_id(tdm_conn *c, uint64_t id, const ProtobufCBinaryData *b, const char *field, int64_t index,
                uint8_t out[TDM_ID_LEN]);
/* A pose from 7 numbers: finite, unit quaternion (tdm_quat_is_unit), then
 * normalised. Returns 0, E(NON_FINITE) or E(NOT_UNIT). normalised (optional)
 * receives the numbers with the quaternion normalised. Any thread. */
ecode tdm__pose_xform(const double p[7], tdm_xform *x, double normalised[7]);
/* The id in hex, into buf; returns buf. */
const char *tdm__id_hex(const uint8_t *id, char buf[2 * TDM_ID_LEN + 1]);

/* ---- ownership (request_owner.c): what a tenant sees, and changes to who owns what ---- */

/* The connection's tenant owns e. */
int tdm__owns(const tdm_conn *c, const tdm_catalog_entry *e);
/* The tenant's name for an object it owns. */
const char *tdm__owned_name(const tdm_conn *c, const tdm_catalog_entry *e);
/* Listed objects of the connection's tenant: NULL for an unknown id and for another
 * tenant's alike, so that the two get the same error. */
tdm_stored_mesh *tdm__find_mesh(tdm_conn *c, const uint8_t id[TDM_ID_LEN]);
tdm_stored_scene *tdm__find_scene(tdm_conn *c, const uint8_t id[TDM_ID_LEN]);
/* The scene a Query or MotionCheck names (its scene_id field), referenced at once, in the
 * same hold of the server's lock as the lookup: the handler may make the hold exclusive on
 * its way (io.h), and a SceneDelete on another loop may come in between. NULL after
 * replying (a bad or unknown id). */
tdm_stored_scene *tdm__query_scene_ref(tdm_conn *c, uint64_t id, const ProtobufCBinaryData *scene_id);
/* Lets such a reference go, holding the server's lock either way: the last one, which
 * frees the scene, makes the hold exclusive. */
void tdm__query_scene_unref(tdm_conn *c, tdm_stored_scene *sc);
tdm_stored_robot *tdm__find_robot(tdm_conn *c, const uint8_t id[TDM_ID_LEN]);
/* Listed scenes and robots of the connection's tenant using m, robot scenes of it on
 * r (when the tenant is the only owner, the counts of catalog.h, which include puts
 * in progress). */
uint32_t tdm__mesh_scenes(tdm_conn *c, const tdm_stored_mesh *m);
uint32_t tdm__mesh_robots(tdm_conn *c, const tdm_stored_mesh *m);
uint32_t tdm__robot_scenes(tdm_conn *c, const tdm_stored_robot *r);
/* The same counts for the tenant's meshes ms[0..n) at once (MeshList), in one pass
 * over its scenes and robots: scenes[i], robots[i]. 0 or TDM_ENOMEM. */
int tdm__mesh_uses(tdm_conn *c, tdm_stored_mesh *const *ms, uint32_t n, uint32_t *scenes, uint32_t *robots);

/* A put's op: op->tenant set to the connection's, and the owner record the object
 * needs if the put creates it under `name` (writer.h). 0, or TDM_ENOMEM. */
int tdm__put_owner(tdm_conn *c, tdm_writer_op *op, const char *name);
/* A put's object is listed for the first time: its owner is (op->tenant, name). 0 or
 * TDM_ENOMEM. */
int tdm__first_owner(tdm_catalog_entry *e, const tdm_writer_op *op, const char *name);
/* A put whose writer op found the object on disk while it is not listed: a delete
 * unlisted it meanwhile (and has removed it by now), or the put that stored it is
 * being answered on another loop. Runs the op again, which stores it anew or finds it
 * listed: a few times in the first case, until it is listed in the second (bounded).
 * 1 when resubmitted (the op is the writer's again), else 0. */
int tdm__put_again(tdm_conn *c, tdm_writer_op *op);
/* Changes who owns the listed object e at once, in memory: adds the connection's
 * tenant under `name` (adding), or takes it out; and returns the OWNERS op that makes
 * the change durable (file_name: the object file's name, owners.h), for the caller to
 * give a `done`, a reference on the object, and to submit (tdm_conn_begin first).
 * NULL after replying NO_MEMORY (nothing changed). */
tdm_writer_op *tdm__owners_change(tdm_conn *c, uint64_t req, tdm_catalog_entry *e, const char *file_name, int adding,
                                  const char *name);
/* An OWNERS op failed: its change is undone on e. */
void tdm__owners_undo(const tdm_writer_op *op, tdm_catalog_entry *e);

/* libuv's pool threads (any work callback, first thing): named "tdm-pool" on their first job,
 * so that per-thread profiles (top -H, bench/thread_cpu.sh) tell them from the loop that first
 * queued work, whose name they would keep. */
void tdm__name_pool_thread(void);
/* A uv_queue_work's after-callback (the connection's loop): op, prepared on libuv's pool, goes to the
 * writer in its request's metrics scope (taken with tdm_metrics_mark_take before the work), holding
 * the server's lock. */
void tdm__submit_after_pool(tdm_writer_op *op);
/* Whether large requests' CPU work leaves the loop for libuv's pool (their frame's decode, conn.c;
 * a large URDF's parse, request_robot.c): 1 unless TDM_DECODE_APART=0 (A/B runs). Any thread. */
int tdm__work_apart(void);

/* A large request's CPU work taken to libuv's pool and back to its loop (the first member of each such
 * job, so that its work.data, set by tdm__hop_apart, is the job): the request's arena and metrics scope go with it, and the connection
 * stays counted in flight (tdm_conn_begin) until tdm__hop_end. */
typedef struct tdm_pool_hop {
    uv_work_t work;
    tdm_conn *c;
    uint64_t id;
    tdm_arena *arena; /* the decoded request's, which the request lives in */
    tdm_metrics_mark mark;
} tdm_pool_hop;
/* Sends h's job to libuv's pool with the request's arena (*arena, taken: c->arena, or an earlier
 * hop's) and scope: 0, or -1 (no arena to take: nothing done). */
int tdm__hop_apart(tdm_conn *c, uint64_t id, tdm_arena **arena, tdm_pool_hop *h, uv_work_cb work,
                   uv_after_work_cb after);
/* Back on the connection's loop (the after-callback): the server's lock taken and the request's scope
 * entered (the previous one in *outer); 1 when the request goes on, 0 when the connection closed
 * meanwhile or the server is stopping (answered BUSY). */
int tdm__hop_back(tdm_pool_hop *h, tdm_metrics_mark *outer);
/* The request done with: its scope left, its arena (unless a later hop took it) and job freed, the
 * connection's count let go, the lock too. */
void tdm__hop_end(tdm_pool_hop *h, tdm_metrics_mark outer, void *job);

#endif
