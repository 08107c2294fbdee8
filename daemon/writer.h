/* The writer thread: every change to the data directory, in arrival order.
 *
 * MeshPut (hash, validate, build the tree, write), ScenePut (write), owner
 * record changes and the deletes run one at a time on one thread, first come first served. Running
 * them in order is what keeps the directory consistent with the replies: a
 * MeshDelete followed by a MeshPut of the same mesh can never have its unlink
 * land after the put's rename. The loop never waits on a disk.
 *
 * One exception, so that a large upload does not hold every other one behind it
 * (issue 14): a MeshPut of TDM_WRITER_BUILDER_TRIS triangles or more, hashed on libuv's
 * pool before its submission (request_mesh.c) and found not stored, has its validation and tree built on a second thread (the
 * builder, one mesh at a time), and its file written and fsync'd there under a temporary
 * name (tdm_datadir_stage), after its device copy, made there too (a tree the device refuses
 * leaves no file), while the writer goes on with the ops behind it; once built, the writer
 * stores it (the owners record, the file renamed into place, catalogue mark) between two ops. A deleted mesh's file is renamed aside by the writer (durably: the directory
 * fsync'd) and unlinked by the builder, since unlinking a large file takes a while too.
 * Writing, fsyncing and unlinking a file of tens of megabytes took tens to hundreds of
 * milliseconds on the writer, which every planner's scene put and delete queued behind it
 * waited (bench/results/ompl_resident.md section 33). Large MeshPuts that come while the
 * builder is busy wait for it in a queue of their own, not on the writer, taking turns by
 * their share (op->share, --share-by: the builder takes the oldest put of the share whose
 * last turn came longest ago), so that one client's many large puts delay another's by one
 * build each at most; in order without shares. The builder builds a tree with
 * tdm_writer_set_build_threads threads (--build-threads).
 * TDM_WRITER_STAGE=0 does all of that on the writer, as before (A/B runs). Nothing behind it can depend on it: a mesh is listed, so usable by scenes and
 * robots or deletable, only once its put is answered; a second MeshPut of the same
 * mesh is set aside until it is stored, and then finds it stored. Their `done`
 * therefore come after those of the ops they let pass.
 *
 * A MeshPut also makes the new tree resident on the engine (tdm_sched_mesh_add,
 * which may wait for the engine's run in progress: never on the loop thread)
 * before anything is written: a tree the device cannot hold fails the put with
 * TDM_EGPUMEM and nothing is stored.
 *
 * What is on disk is marked in the catalogue (catalog.h) as each op completes,
 * so a MeshPut of a mesh already on disk is answered "exists" without
 * rebuilding anything; the writer reads nothing else of the catalogue.
 *
 * An op is submitted from a loop; its `done` callback runs later on the loop of its
 * owner (the connection), in submission order but for large MeshPuts (above), exactly
 * once (also when the writer is stopped): the main loop takes the writer's completions
 * and posts those of I/O threads' connections to their loops (io.h). */
#ifndef TDM_DAEMON_WRITER_H
#define TDM_DAEMON_WRITER_H

/* MeshPuts of this many triangles or more go to the builder. 8Ki: a put just under it holds the
 * writer for ~25 ms on a 2-core machine (a 64Ki-triangle one ~250 ms, which every scene put and
 * delete behind it waited, when this was 65536); a smaller one, a box or a part, is answered in
 * order at once, not behind large ones in the builder's queue. */
#define TDM_WRITER_BUILDER_TRIS 8192

#include <uv.h>

#include "catalog.h"
#include "codec.h"
#include "datadir.h"
#include "io.h"
#include "metrics.h"
#include "tenants.h"

typedef enum tdm_writer_kind {
    TDM_WRITER_MESH_PUT,
    TDM_WRITER_MESH_DELETE,
    TDM_WRITER_SCENE_PUT,
    TDM_WRITER_SCENE_DELETE,
    TDM_WRITER_ROBOT_PUT,
    TDM_WRITER_ROBOT_DELETE,
    TDM_WRITER_ROBOT_SCENE_PUT,
    TDM_WRITER_OWNERS
} tdm_writer_kind;

typedef struct tdm_writer_op tdm_writer_op;

struct tdm_writer_op {
    tdm_writer_op *next;
    tdm_writer_kind kind;
    void (*done)(tdm_writer_op *op);  /* the owner's loop, holding the server's lock; frees the op */
    void *owner;                      /* for `done` (the connection: its loop runs `done`, io.h) */
    tdm_share *share;                 /* MESH_PUT: whose turn it takes on the builder (its connection's or
                                         tenant's, conn.h; NULL: first come, first served) */
    tdm_io_task task;                 /* `done`'s trip to an I/O thread's loop */
    uint64_t request_id;
    double started;                   /* for the log */
    double submitted_ms;              /* TDM_WRITER_TRACE: tdm_writer_submit's time */
    tdm_metrics_mark mark;            /* the request's metrics scope (tdm_writer_submit takes it) */

    /* MESH_PUT in: the decoded request, owned through its arena (freed by the
     * writer thread as soon as the mesh is copied). */
    tdm_arena *arena;
    const Tandem__V1__MeshPut *put;
    tdm_mesh_limits limits;
    uint64_t reserved;                /* budget held on the loop side */
    uint64_t upload_bytes;            /* the decoded request's size, counted in srv->upload_bytes */
    int over_budget;                  /* no budget left: fail with op->msg unless the mesh exists */
    /* MESH_PUT out (created), MESH_DELETE in: a reference. A created mesh is marked on
     * disk in the catalogue, and its tree is already added to the engine (mesh->engine
     * set; on a CPU engine that does nothing). */
    tdm_stored_mesh *mesh;
    /* SCENE_PUT in (with canon, owned), SCENE_DELETE in: a reference. A scene
     * written is marked on disk in the catalogue. */
    tdm_stored_scene *scene;
    uint8_t *canon;
    size_t canon_len;
    /* ROBOT_PUT in (with canon), ROBOT_DELETE in: a reference. ROBOT_SCENE_PUT in: the
     * robot (a reference and a `scenes` count the loop took), canon (the YAML inside),
     * name (owned by the op); out: `scene`, a new robot scene whose trees are added to
     * the engine, not listed, holding no reference or count on the robot yet (the loop
     * hands it the op's), written unless rc says otherwise (the loop frees it on error);
     * NULL when it exists already or could not be built. */
    tdm_stored_robot *robot;
    char *name;
    int wire_code;       /* out: the Error code when not 0 (else from rc) */
    uint32_t max_objects; /* ROBOT_SCENE_PUT in: the server's max_objects */
    uint32_t max_scene_triangles; /* ROBOT_SCENE_PUT in: the server's max_scene_triangles */
    uint32_t max_robot_triangles; /* ROBOT_SCENE_PUT in: the server's max_robot_triangles */
    /* ROBOT_SCENE_PUT in: the scene built before submission, on libuv's pool (request_robot.c,
     * tdm_writer_build_robot_scene), owned by the op (the writer frees what it does not keep),
     * or the build's failure in rc, field, index, msg and wire_code; NULL with rc 0: the writer
     * builds it. */
    tdm_robot_scene *pre_rs;
    tdm_planning_scene *pre_ps;
    uv_work_t work;
    /* MESH_PUT in: `id` is the mesh's, hashed before submission on libuv's pool (request_mesh.c,
     * a large mesh: its SHA-256 would hold the writer); 0: the writer hashes it */
    int id_ready;

    /* Ownership (owners.h). Puts in: the new object's owner record (owned; NULL: none
     * needed), written before the object's file when the put creates it (a stale
     * record removed instead when NULL); untouched when the object exists. OWNERS
     * in: the record of the object `id` now (NULL: remove it). Deletes remove the
     * record after the object's file. `tenant` and `attempts` are the loop's. */
    uint8_t *owners_rec;
    size_t owners_len;
    uint32_t tenant;
    int owners_adding;   /* OWNERS: the change added `tenant` (else took it out), for undoing it */
    /* SCENE_PUT, ROBOT_SCENE_PUT, OWNERS in: the scene is ephemeral (catalog.h): held in
     * memory only, so neither its file nor its owner record is written (its delete, from
     * the scene's own mark, removes neither). */
    int ephemeral;
    int attempts;        /* puts answered "exists" for an object unlisted meanwhile, run again */

    /* out; the submitter zeroes them (field "", index -1) */
    int rc;              /* TDM_OK or a TDM_E* code (TDM_EIO: the directory could not be written) */
    int exists;          /* puts: already on disk; nothing was written */
    uint8_t id[TDM_ID_LEN];
    uint32_t n_verts, n_tris;
    const char *field;   /* static: where rc points, for the Error reply */
    int64_t index;
    char msg[640];
};

typedef struct tdm_writer tdm_writer;

/* dir and catalog (borrowed) must outlive the writer; so must engine (borrowed,
 * may be NULL: trees are then not added anywhere). loop: where completions are taken
 * (the main loop), between lock(lock_arg) and unlock(lock_arg) (the server's lock, exclusive). */
int tdm_writer_create(uv_loop_t *loop, void (*lock)(void *), void (*unlock)(void *), void *lock_arg,
                      tdm_datadir *dir, tdm_catalog *catalog, tdm_sched *engine, tdm_writer **out);
void tdm_writer_submit(tdm_writer *st, tdm_writer_op *op);
/* Any thread: builds ROBOT_SCENE_PUT op's scene from its canonical content into *rs, *ps
 * (tdm__robot_scene_build); on failure returns its code with op's rc, field, index, msg and
 * wire_code set. */
int tdm_writer_build_robot_scene(tdm_datadir *dir, tdm_writer_op *op, tdm_robot_scene **rs, tdm_planning_scene **ps);
/* Ops submitted and not yet completed (holding the server's lock). */
size_t tdm_writer_pending(const tdm_writer *st);
/* Whether large MeshPuts' work leaves the writer thread (hashing before submission, the build's queue,
 * their files): 1 unless TDM_WRITER_STAGE=0 (A/B runs). Any thread. */
int tdm_writer_offloads(const tdm_writer *st);
/* Threads a large MeshPut's tree is built by, on the builder (tdm_bvh_build_threads: the same tree;
 * 1, the default, and below: one). Before the first submission. */
void tdm_writer_set_build_threads(tdm_writer *st, int n);
/* Finishes the queued ops, joins the thread, runs the remaining callbacks and
 * closes the async handle; the writer is freed in its close callback. */
void tdm_writer_stop(tdm_writer *st);

#endif
