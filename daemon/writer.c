#include "writer.h"

#include <math.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conn.h"
#include "log.h"
#include "robot_build.h"

/* ---- the thread ---- */

/* A MeshPut's tree, between its build and its storing. */
typedef struct mesh_build {
    tdm_mesh *mesh;
    tdm_bvh *bvh;
    void *blob;
    size_t blob_len;
    char *label;
    tdm_datadir_staged file; /* its file, written and fsync'd by the builder (staged: not yet in place) */
    int uploaded;            /* the builder made the device copy (or found the device failed) */
    int resident;            /* ... and bvh is added to the engine */
} mesh_build;


struct tdm_writer {
    uv_async_t async; /* first: the close callback casts back */
    void (*srv_lock)(void *), (*srv_unlock)(void *); /* the server's lock (io.h), held for the ops' `done` */
    void *lock_arg;
    tdm_datadir *dir;
    tdm_catalog *catalog; /* on-disk marks only */
    tdm_sched *engine;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    tdm_writer_op *head, *tail; /* submitted */
    tdm_writer_op *done_head, *done_tail;
    int stopping;
    size_t pending; /* under the server's lock */
    /* the builder thread: one large MeshPut's tree at a time (under lock: queued are the ops
     * handed to it, in order, building the one it builds, built says its phase is done; build is
     * the builder's until built). Large MeshPuts that come while it builds wait for it in the
     * queue, not on the writer (TDM_WRITER_STAGE=0: on the writer, as before) */
    pthread_t builder;
    int builder_started;
    pthread_cond_t build_wake;
    tdm_writer_op *queued_head, *queued_tail; /* taken in turns (builder_take) */
    uint64_t build_turns;                      /* the builder's takes (tdm_share.build_turn) */
    int build_threads;                         /* threads a large MeshPut's tree is built by (1 at least) */
    tdm_writer_op *building;
    int built;
    mesh_build build;
    tdm_writer_op *deferred; /* MeshPuts of the mesh being built: run again once it is stored */
    /* the builder also writes a large mesh's file before the writer puts it in place, and unlinks
     * the files of removed meshes the writer renamed aside: a large file's write, fsync and unlink
     * take tens to hundreds of milliseconds, which every op queued behind them would wait
     * (TDM_WRITER_STAGE=0: both on the writer, as before) */
    int stage;
    tdm_datadir_staged *trash; /* under lock: files renamed aside, for the builder to unlink */
    size_t n_trash, cap_trash;
    /* TDM_WRITER_TRACE: by op kind, ops run, their summed time queued (from tdm_writer_submit
     * to the writer's take) and run; a robot scene put's run split into its build, its trees'
     * upload to the engine (tdm_sched_meshes_add) and its files (a build made before submission,
     * request_robot.c, is not counted).
     * The writer thread's own, printed to stderr by tdm_writer_stop. */
    int trace;
    struct { uint64_t n; double queued_ms, run_ms; } traced[TDM_WRITER_OWNERS + 1];
    double rs_build_ms, rs_engine_ms, rs_files_ms;
    uint64_t big_n;                        /* large MeshPuts stored after the builder built them */
    double big_store_ms, big_stage_ms;     /* ... the writer's store, and the builder's file */
};

static double trace_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

static void set_err(tdm_writer_op *op, int rc, const char *field, int64_t index, const char *msg)
{
    op->rc = rc;
    op->field = field;
    op->index = index;
    snprintf(op->msg, sizeof op->msg, "%s", msg);
}

/* Where tdm_mesh_create's complaint points, for Error.field/index. */
static void locate_mesh_error(tdm_writer_op *op, const float *v, uint32_t nv, const uint32_t *t, uint32_t nt)
{
    op->index = -1;
    switch (op->rc) {
    case TDM_ENONFINITE:
        op->field = "vertices";
        for (uint64_t i = 0; i < 3 * (uint64_t)nv; i++)
            if (!isfinite(v[i])) {
                op->index = (int64_t)(i / 3);
                break;
            }
        break;
    case TDM_EINDEX:
        op->field = "triangles";
        for (uint64_t i = 0; i < 3 * (uint64_t)nt; i++)
            if (t[i] >= nv) {
                op->index = (int64_t)(i / 3);
                break;
            }
        break;
    case TDM_ERANGE: op->field = nv > op->limits.max_vertices ? "vertices" : "triangles"; break;
    default: op->field = "triangles"; break;
    }
}

/* Why tdm_sched_mesh_add refused the tree, for the Error reply. */
static void upload_error(tdm_writer *st, tdm_writer_op *op, size_t tree_bytes)
{
    tdm_sched_stats es;
    tdm_sched_get_stats(st->engine, &es);
    op->field = "";
    op->index = -1;
    if (op->rc == TDM_EGPUMEM)
        snprintf(op->msg, sizeof op->msg,
                 "the %s engine cannot hold this mesh's tree (%zu bytes) in device memory: the device or the "
                 "gpu-memory budget is full (%llu bytes held, %u meshes resident); nothing was stored",
                 tdm_backend_name(tdm_sched_backend(st->engine)), tree_bytes,
                 (unsigned long long)es.device_bytes, es.device_meshes);
    else
        snprintf(op->msg, sizeof op->msg, "no memory to copy the mesh's tree to the GPU: %s; nothing was stored",
                 tdm_strerror(op->rc));
    tdm_log_warn("MeshPut: %s", op->msg);
}

/* A put creates its object: its owner record first (or a stale one away), so that
 * the object never stands on disk with the wrong owners. 0, or -1 with op's error set. */
static int store_owners(tdm_writer *st, tdm_writer_op *op)
{
    if (op->ephemeral) return 0; /* held in memory only */
    char err[300];
    int rc = op->owners_rec ? tdm_datadir_write(st->dir, TDM_DATADIR_OWNERS, op->id, "",
                                                &(struct iovec){op->owners_rec, op->owners_len}, 1, NULL, 0, err,
                                                sizeof err)
                            : tdm_datadir_remove(st->dir, TDM_DATADIR_OWNERS, op->id, err, sizeof err);
    if (rc != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return -1;
    }
    return 0;
}

/* A MeshPut's first phase (writer thread): its id, and whether it needs building at all.
 * 1: build it; 0: answered (exists, or over budget). */
static int mesh_put_check(tdm_writer *st, tdm_writer_op *op)
{
    const Tandem__V1__MeshPut *p = op->put;
    uint32_t nv = (uint32_t)(p->n_vertices / 3), nt = (uint32_t)(p->n_triangles / 3);
    op->n_verts = nv;
    op->n_tris = nt;
    if (!op->id_ready && tdm_mesh_id(p->vertices, nv, p->triangles, nt, op->id) != 0) {
        set_err(op, TDM_ENOMEM, "", -1, "SHA-256 failed");
        return 0;
    }
    if (tdm_catalog_mesh_on_disk(st->catalog, op->id)) {
        op->exists = 1; /* stored meshes were validated when they were put */
        return 0;
    }
    if (op->over_budget) { /* op->msg was written by the loop */
        op->rc = TDM_ENOMEM;
        op->field = "";
        return 0;
    }
    return 1;
}

/* The second phase: validation, the tree and its blob. Touches nothing but the op and b,
 * so it may run on the builder thread. On error op->rc is set. */
static void mesh_put_build(tdm_writer_op *op, mesh_build *b, int threads)
{
    const Tandem__V1__MeshPut *p = op->put;
    uint32_t nv = op->n_verts, nt = op->n_tris;
    memset(b, 0, sizeof *b);
    op->rc = tdm_mesh_create(p->vertices, nv, p->triangles, nt, &op->limits, &b->mesh, op->msg, sizeof op->msg);
    if (op->rc != TDM_OK) {
        locate_mesh_error(op, p->vertices, nv, p->triangles, nt);
        return;
    }
    /* the copy is made: keep the name, drop the request (it may be 64 MiB) */
    b->label = strdup(p->name ? p->name : "");
    tdm_arena_free(op->arena);
    op->arena = NULL;
    op->put = NULL;
    if (!b->label) {
        set_err(op, TDM_ENOMEM, "", -1, "out of memory");
        return;
    }
    if ((op->rc = tdm_bvh_build_threads(b->mesh, threads, &b->bvh)) != TDM_OK) {
        set_err(op, op->rc, "", -1, "out of memory building the tree");
        return;
    }
    if ((op->rc = tdm_bvh_serialize(b->bvh, &b->blob, &b->blob_len)) != TDM_OK)
        set_err(op, op->rc, "", -1, "out of memory serialising the tree");
}

/* A built MeshPut's file written and fsync'd under a temporary name (b->file), for
 * tdm_datadir_commit to put in place: 0, or -1 with op's error set */
static int mesh_file_stage(tdm_writer *st, tdm_writer_op *op, mesh_build *b, char *err, size_t errlen)
{
    uint8_t prefix[TDM_MESH_CANON_PREFIX_LEN];
    tdm_mesh_canon_prefix(op->n_verts, op->n_tris, prefix);
    struct iovec parts[3] = {{prefix, sizeof prefix},
                             {b->mesh->verts, 12 * (size_t)op->n_verts},
                             {b->mesh->tris, 12 * (size_t)op->n_tris}};
    if (tdm_datadir_stage(st->dir, TDM_DATADIR_MESH, op->id, b->label, parts, 3, b->blob, b->blob_len, &b->file, err,
                          errlen) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return -1;
    }
    return 0;
}

/* The device copy of a built MeshPut's tree (the writer, or the builder before it writes the file):
 * b->uploaded set; b->resident when the engine holds it. A device that fails (rather than being
 * full) does not refuse the mesh: it is stored, and queries on scenes using it run on the CPU
 * engine, as after a failed load at start-up. Else op->rc says why it was refused. */
static void mesh_put_upload(tdm_writer *st, tdm_writer_op *op, mesh_build *b)
{
    b->uploaded = 1;
    if (!st->engine) return;
    int rc = tdm_sched_mesh_add(st->engine, b->bvh);
    if (rc == TDM_EGPU) {
        tdm_log_warn("MeshPut: copying the tree to the GPU failed (%s): the mesh is stored and queries on "
                     "scenes using it run on the CPU engine", tdm_strerror(rc));
    } else if ((op->rc = rc) != TDM_OK) {
        upload_error(st, op, b->blob_len);
    } else {
        b->resident = 1;
    }
}

/* The last phase (writer thread, in order with every other change to the directory): the device
 * copy (unless the builder made it), the file (or the builder's staged one put in place), the
 * catalogue's mark; frees what b holds. */
static void mesh_put_store(tdm_writer *st, tdm_writer_op *op, mesh_build *b)
{
    uint32_t nv = op->n_verts, nt = op->n_tris;
    int resident = b->resident; /* b->bvh is added to the engine */
    if (op->rc != TDM_OK) goto out;
    /* an identical mesh stored meanwhile (while this one was built on the builder thread) */
    if (tdm_catalog_mesh_on_disk(st->catalog, op->id)) {
        op->exists = 1;
        goto out;
    }
    /* device first: a tree the GPU cannot hold must leave nothing behind, on disk or elsewhere
       (the builder's large trees were copied before their files were written) */
    if (!b->uploaded) {
        mesh_put_upload(st, op, b);
        resident = b->resident;
        if (op->rc != TDM_OK) goto out;
    }
    char err[300];
    if (store_owners(st, op) != 0) goto out;
    if (!b->file.staged && mesh_file_stage(st, op, b, err, sizeof err) != 0) goto out;
    if (tdm_datadir_commit(st->dir, &b->file, err, sizeof err) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        goto out;
    }
    uint64_t bytes = TDM_MESH_CANON_PREFIX_LEN + 12 * (uint64_t)nv + 12 * (uint64_t)nt + b->blob_len;
    op->mesh = tdm_stored_mesh_new(op->id, b->label, nv, nt, bytes, b->bvh);
    if (!op->mesh) {
        /* on disk but not in memory: it loads at the next start; say so */
        set_err(op, TDM_ENOMEM, "", -1, "out of memory after storing the mesh");
        goto out;
    }
    op->mesh->engine = resident ? st->engine : NULL;
    resident = 0; /* the mesh removes it from the engine when it is freed */
    b->bvh = NULL;
    tdm_catalog_mesh_written(st->catalog, op->mesh);
out:
    if (resident) tdm_sched_mesh_remove(st->engine, b->bvh);
    tdm_datadir_unstage(st->dir, &b->file); /* not put in place (committed files are not staged) */
    free(b->label);
    free(b->blob);
    tdm_bvh_free(b->bvh);
    tdm_mesh_free(b->mesh);
    memset(b, 0, sizeof *b);
}

static void mesh_put(tdm_writer *st, tdm_writer_op *op)
{
    if (!mesh_put_check(st, op)) return;
    mesh_build b;
    mesh_put_build(op, &b, 1);
    mesh_put_store(st, op, &b);
}

static void scene_put(tdm_writer *st, tdm_writer_op *op)
{
    if (tdm_catalog_scene_on_disk(st->catalog, op->id)) {
        op->exists = 1;
        return;
    }
    struct iovec part = {op->canon, op->canon_len};
    char err[300];
    if (store_owners(st, op) != 0) return;
    if (!op->ephemeral && tdm_datadir_write(st->dir, TDM_DATADIR_SCENE, op->id, op->scene->name, &part, 1, NULL, 0,
                                            err, sizeof err) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return;
    }
    tdm_catalog_scene_written(st->catalog, op->scene);
}

static void robot_put(tdm_writer *st, tdm_writer_op *op)
{
    if (tdm_catalog_robot_on_disk(st->catalog, op->id)) {
        op->exists = 1;
        return;
    }
    struct iovec part = {op->canon, op->canon_len};
    char err[300];
    if (store_owners(st, op) != 0) return;
    if (tdm_datadir_write(st->dir, TDM_DATADIR_ROBOT, op->id, op->robot->name, &part, 1, NULL, 0, err,
                          sizeof err) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return;
    }
    tdm_catalog_robot_written(st->catalog, op->robot);
}

int tdm_writer_build_robot_scene(tdm_datadir *dir, tdm_writer_op *op, tdm_robot_scene **rs, tdm_planning_scene **ps)
{
    uint8_t rid[TDM_ID_LEN];
    const char *yaml;
    size_t len;
    if (tdm_robot_scene_canon_parse(op->canon, op->canon_len, rid, &yaml, &len) != TDM_OK) {
        set_err(op, TDM_EINVAL, "", -1, "internal: malformed robot scene content");
        return op->rc;
    }
    tdm_robot_fail f;
    int rc = tdm__robot_scene_build(dir, op->robot, yaml, len, op->max_objects, op->max_scene_triangles,
                                    op->max_robot_triangles, rs, ps, &f);
    if (rc != TDM_OK) {
        set_err(op, rc, f.field, f.index, f.msg);
        op->wire_code = f.code;
    }
    return rc;
}

static void robot_scene_put(tdm_writer *st, tdm_writer_op *op)
{
    tdm_robot_scene *rs = op->pre_rs;
    tdm_planning_scene *ps = op->pre_ps;
    op->pre_rs = NULL;
    op->pre_ps = NULL;
    if (tdm_catalog_scene_on_disk(st->catalog, op->id)) {
        op->exists = 1;
        op->rc = TDM_OK; /* a build that failed meanwhile cannot be this stored content's */
        op->wire_code = 0;
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
        return;
    }
    double t0 = st->trace ? trace_ms() : 0;
    if (op->rc != TDM_OK) return; /* its build before submission failed: rc and the rest say why */
    /* not built before, or built, dropped as existing and submitted again (tdm__put_again) */
    if (!rs && tdm_writer_build_robot_scene(st->dir, op, &rs, &ps) != TDM_OK) return;
    double t1 = st->trace ? trace_ms() : 0;
    st->rs_build_ms += t1 - t0;
    int rc; /* (over max_objects: refused by the build, before building) */
    tdm_stored_scene *sc = tdm_stored_scene_new_robot(op->id, op->name ? op->name : "", rs, ps, op->robot);
    if (!sc) {
        set_err(op, TDM_ENOMEM, "", -1, "out of memory");
        return;
    }
    sc->entry.ephemeral = op->ephemeral != 0;
    op->scene = sc;
    if (st->engine) {
        sc->engine = st->engine;
        size_t added = 0;
        rc = tdm_sched_meshes_add(st->engine, (const tdm_bvh *const *)rs->bvhs, rs->n_objects, &added);
        sc->n_resident = (uint32_t)added;
        if (rc != TDM_OK) {
            set_err(op, rc, "", -1,
                    rc == TDM_EGPUMEM ? "the robot scene's trees do not fit in device memory (or the gpu-memory "
                                        "budget)"
                                      : "adding the robot scene's trees to the engine failed");
            return;
        }
    }
    double t2 = st->trace ? trace_ms() : 0;
    st->rs_engine_ms += t2 - t1;
    struct iovec part = {op->canon, op->canon_len};
    char err[300];
    if (store_owners(st, op) != 0) return;
    int wrote = op->ephemeral ? 0
                              : tdm_datadir_write(st->dir, TDM_DATADIR_ROBOT_SCENE, op->id, sc->name, &part, 1, NULL,
                                                  0, err, sizeof err);
    if (st->trace) st->rs_files_ms += trace_ms() - t2;
    if (wrote != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return;
    }
    tdm_catalog_scene_written(st->catalog, sc);
}

/* A removed file renamed aside: unlinked by the builder (at once without one) */
static void trash_file(tdm_writer *st, tdm_datadir_staged *aside)
{
    if (!aside->staged) return;
    pthread_mutex_lock(&st->lock);
    int hand = st->builder_started && !st->stopping; /* stopping: the builder may have left */
    if (hand && st->n_trash == st->cap_trash) {
        size_t cap = st->cap_trash ? 2 * st->cap_trash : 16;
        tdm_datadir_staged *t = realloc(st->trash, cap * sizeof *t);
        if (t) st->trash = t, st->cap_trash = cap;
    }
    if (hand && st->n_trash < st->cap_trash) {
        st->trash[st->n_trash++] = *aside;
        pthread_cond_broadcast(&st->build_wake);
        aside->staged = 0;
    }
    pthread_mutex_unlock(&st->lock);
    tdm_datadir_unstage(st->dir, aside); /* not handed over */
}

static void remove_file(tdm_writer *st, tdm_writer_op *op, tdm_datadir_kind kind)
{
    char err[300];
    if (op->scene && op->scene->entry.ephemeral) { /* no file, no owner record */
        tdm_catalog_scene_removed(st->catalog, op->id);
        return;
    }
    tdm_datadir_staged aside = {0};
    /* a mesh's file, the large kind, is renamed aside and unlinked off the writer */
    int rc = st->stage && kind == TDM_DATADIR_MESH ? tdm_datadir_remove_aside(st->dir, kind, op->id, &aside, err, sizeof err)
                                                   : tdm_datadir_remove(st->dir, kind, op->id, err, sizeof err);
    trash_file(st, &aside);
    if (rc != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return;
    }
    if (kind == TDM_DATADIR_MESH) tdm_catalog_mesh_removed(st->catalog, op->id);
    else if (kind == TDM_DATADIR_ROBOT) tdm_catalog_robot_removed(st->catalog, op->id);
    else tdm_catalog_scene_removed(st->catalog, op->id);
    /* the object is gone: a record left by a failure here is stale, and harmless (a put
     * that creates the object again replaces it; the next start removes it) */
    if (tdm_datadir_remove(st->dir, TDM_DATADIR_OWNERS, op->id, err, sizeof err) != 0)
        tdm_log_warn("after removing its object: %s", err);
}

static void run_op(tdm_writer *st, tdm_writer_op *op)
{
    switch (op->kind) {
    case TDM_WRITER_MESH_PUT: mesh_put(st, op); break;
    case TDM_WRITER_SCENE_PUT: scene_put(st, op); break;
    case TDM_WRITER_MESH_DELETE: remove_file(st, op, TDM_DATADIR_MESH); break;
    case TDM_WRITER_SCENE_DELETE:
        remove_file(st, op, op->scene->rs ? TDM_DATADIR_ROBOT_SCENE : TDM_DATADIR_SCENE);
        break;
    case TDM_WRITER_ROBOT_PUT: robot_put(st, op); break;
    case TDM_WRITER_ROBOT_DELETE: remove_file(st, op, TDM_DATADIR_ROBOT); break;
    case TDM_WRITER_ROBOT_SCENE_PUT: robot_scene_put(st, op); break;
    case TDM_WRITER_OWNERS: store_owners(st, op); break;
    }
}

/* Under lock: hands a finished op to the loop. */
static void finish_locked(tdm_writer *st, tdm_writer_op *op)
{
    op->next = NULL;
    if (st->done_tail) st->done_tail->next = op;
    else st->done_head = op;
    st->done_tail = op;
    uv_async_send(&st->async);
}

static int run_or_hand_off(tdm_writer *st, tdm_writer_op *op);

/* Under lock, with st->built set: stores the large MeshPut the builder finished and
 * hands it to the loop, then runs the puts of the same mesh that waited for it (the
 * lock is dropped meanwhile). */
static void store_built_locked(tdm_writer *st)
{
    tdm_writer_op *op = st->building, *later = st->deferred;
    mesh_build b = st->build;
    st->building = NULL;
    st->built = 0;
    st->deferred = NULL;
    pthread_cond_broadcast(&st->build_wake); /* the builder is free again */
    pthread_mutex_unlock(&st->lock);
    double t0 = st->trace ? trace_ms() : 0;
    mesh_put_store(st, op, &b);
    if (st->trace) st->big_n++, st->big_store_ms += trace_ms() - t0;
    pthread_mutex_lock(&st->lock);
    finish_locked(st, op);
    while (later) {
        tdm_writer_op *d = later;
        later = d->next;
        d->next = NULL;
        pthread_mutex_unlock(&st->lock);
        int done = run_or_hand_off(st, d); /* it finds the mesh stored, unless storing it failed */
        pthread_mutex_lock(&st->lock);
        if (done) finish_locked(st, d);
    }
}

/* Runs one op; a large MeshPut goes to the builder when it is free, so that the ops behind
 * it need not wait for its tree. Called without the lock. 1: done (hand it back); 0: the
 * builder has it. */
static int run_or_hand_off(tdm_writer *st, tdm_writer_op *op)
{
    if (op->kind != TDM_WRITER_MESH_PUT) {
        run_op(st, op);
        return 1;
    }
    if (!mesh_put_check(st, op)) return 1;
    pthread_mutex_lock(&st->lock);
    /* the same mesh as one being built or waiting for the builder: it runs again once the one
     * being built is stored (and then finds it stored, or waits again); the ops behind it need
     * not wait */
    int same = st->building && !memcmp(st->building->id, op->id, TDM_ID_LEN);
    for (tdm_writer_op *q = st->queued_head; q && !same; q = q->next) same = !memcmp(q->id, op->id, TDM_ID_LEN);
    if (same) {
        op->next = st->deferred;
        st->deferred = op;
        pthread_mutex_unlock(&st->lock);
        return 0;
    }
    /* not once stopping: the builder may have left; TDM_WRITER_STAGE=0: only when it is free */
    if (st->builder_started && (st->stage || (!st->building && !st->queued_head)) && !st->stopping &&
        op->n_tris >= TDM_WRITER_BUILDER_TRIS) {
        op->next = NULL;
        if (st->queued_tail) st->queued_tail->next = op;
        else st->queued_head = op;
        st->queued_tail = op;
        pthread_cond_broadcast(&st->build_wake);
        pthread_mutex_unlock(&st->lock);
        return 0;
    }
    pthread_mutex_unlock(&st->lock);
    mesh_build b;
    mesh_put_build(op, &b, st->build_threads);
    mesh_put_store(st, op, &b);
    return 1;
}

static void *writer_main(void *arg)
{
    prctl(PR_SET_NAME, "tdm-storage"); /* top -H, /proc; the name bench/results profiles know */
    tdm_writer *st = arg;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!st->head && !st->built && !(st->stopping && !st->building && !st->queued_head))
            pthread_cond_wait(&st->wake, &st->lock);
        if (st->built) {
            store_built_locked(st);
            continue;
        }
        if (!st->head) break; /* stopping, and everything is done */
        tdm_writer_op *op = st->head;
        st->head = op->next;
        if (!st->head) st->tail = NULL;
        pthread_mutex_unlock(&st->lock);

        op->next = NULL;
        double t0 = st->trace ? trace_ms() : 0;
        int done = run_or_hand_off(st, op);
        if (st->trace) {
            st->traced[op->kind].n++;
            st->traced[op->kind].queued_ms += t0 - op->submitted_ms;
            st->traced[op->kind].run_ms += trace_ms() - t0;
        }

        pthread_mutex_lock(&st->lock);
        if (done) finish_locked(st, op);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* The builder's next large MeshPut (lock held; one is queued): the oldest of the share whose
 * turn on the builder came longest ago (--share-by: its connection's or tenant's; one that never
 * had one first), so that one client's many large puts delay another's by one build each at most,
 * not by all of them queued before it; first come, first served without shares. The queue is
 * bounded by the upload budget (max-upload-bytes), and each take costs a build. */
static tdm_writer_op *builder_take(tdm_writer *st)
{
    tdm_writer_op **best = &st->queued_head, *prev = NULL, *best_prev = NULL;
    for (tdm_writer_op **at = &st->queued_head; *at; prev = *at, at = &(*at)->next) {
        uint64_t t = (*at)->share ? (*at)->share->build_turn : 0, b = (*best)->share ? (*best)->share->build_turn : 0;
        if (t < b) {
            best = at;
            best_prev = prev;
        }
    }
    tdm_writer_op *op = *best;
    *best = op->next;
    if (st->queued_tail == op) st->queued_tail = best_prev;
    op->next = NULL;
    if (op->share) op->share->build_turn = ++st->build_turns;
    return op;
}

static void *builder_main(void *arg)
{
    prctl(PR_SET_NAME, "tdm-build");
    tdm_writer *st = arg;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!st->queued_head && !st->n_trash && !st->stopping) pthread_cond_wait(&st->build_wake, &st->lock);
        if (st->n_trash) { /* a removed mesh's file (stopping too: none is left behind) */
            tdm_datadir_staged t = st->trash[--st->n_trash];
            pthread_mutex_unlock(&st->lock);
            tdm_datadir_unstage(st->dir, &t);
            pthread_mutex_lock(&st->lock);
            continue;
        }
        if (!st->queued_head) break; /* stopping, nothing handed */
        tdm_writer_op *op = builder_take(st);
        st->building = op;
        st->built = 0;
        pthread_mutex_unlock(&st->lock);
        mesh_build b;
        mesh_put_build(op, &b, st->build_threads);
        double t0 = st->trace ? trace_ms() : 0;
        if (st->stage && op->rc == TDM_OK) mesh_put_upload(st, op, &b); /* its device copy, off the writer */
        char err[300];
        if (st->stage && op->rc == TDM_OK) mesh_file_stage(st, op, &b, err, sizeof err); /* its file too */
        pthread_mutex_lock(&st->lock);
        if (st->trace) st->big_stage_ms += trace_ms() - t0;
        st->build = b;
        st->built = 1;
        pthread_cond_broadcast(&st->wake);
        /* wait until the writer took it (it does, stopping or not, before it leaves), before
           looking for the next */
        while (st->building == op) pthread_cond_wait(&st->build_wake, &st->lock);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* On the op's own loop, holding the server's lock. */
static void run_done(tdm_writer_op *op)
{
    tdm_metrics_mark outer = tdm_metrics_enter(&op->mark);
    op->done(op);
    tdm_metrics_leave(outer);
}

static void posted_done(tdm_io *io, void *arg)
{
    (void)io;
    run_done(arg);
}

/* The main loop, holding the server's lock: every finished op's `done`, here or posted to
 * its connection's loop. */
static void deliver(tdm_writer *st)
{
    pthread_mutex_lock(&st->lock);
    tdm_writer_op *op = st->done_head;
    st->done_head = st->done_tail = NULL;
    pthread_mutex_unlock(&st->lock);
    while (op) {
        tdm_writer_op *next = op->next;
        st->pending--;
        tdm_io *io = op->owner ? ((tdm_conn *)op->owner)->io : NULL;
        if (io && io->index != 0) {
            op->task.fn = posted_done;
            op->task.arg = op;
            tdm_io_post(io, &op->task);
        } else {
            run_done(op);
        }
        op = next;
    }
}

static void on_async(uv_async_t *h)
{
    tdm_writer *st = (tdm_writer *)h;
    st->srv_lock(st->lock_arg);
    deliver(st);
    st->srv_unlock(st->lock_arg);
}

int tdm_writer_create(uv_loop_t *loop, void (*lock)(void *), void (*unlock)(void *), void *lock_arg,
                      tdm_datadir *dir, tdm_catalog *catalog, tdm_sched *engine, tdm_writer **out)
{
    *out = NULL;
    tdm_writer *st = calloc(1, sizeof *st);
    if (!st) return TDM_ENOMEM;
    st->srv_lock = lock;
    st->srv_unlock = unlock;
    st->lock_arg = lock_arg;
    st->dir = dir;
    st->catalog = catalog;
    st->engine = engine;
    st->trace = getenv("TDM_WRITER_TRACE") != NULL;
    st->build_threads = 1;
    const char *sg = getenv("TDM_WRITER_STAGE");
    st->stage = !(sg && strcmp(sg, "0") == 0);
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        free(st);
        return TDM_ESYS;
    }
    if (pthread_cond_init(&st->wake, NULL) != 0) {
        pthread_mutex_destroy(&st->lock);
        free(st);
        return TDM_ESYS;
    }
    if (pthread_cond_init(&st->build_wake, NULL) != 0) {
        pthread_cond_destroy(&st->wake);
        pthread_mutex_destroy(&st->lock);
        free(st);
        return TDM_ESYS;
    }
    if (uv_async_init(loop, &st->async, on_async) != 0) {
        pthread_cond_destroy(&st->build_wake);
        pthread_cond_destroy(&st->wake);
        pthread_mutex_destroy(&st->lock);
        free(st);
        return TDM_ESYS;
    }
    /* without the builder, large MeshPuts are built on the writer thread, as the others */
    st->builder_started = pthread_create(&st->builder, NULL, builder_main, st) == 0;
    if (pthread_create(&st->thread, NULL, writer_main, st) != 0) {
        /* the handle is initialised: free through its close callback */
        st->started = 0;
        tdm_writer_stop(st);
        return TDM_ESYS;
    }
    st->started = 1;
    *out = st;
    return TDM_OK;
}

void tdm_writer_submit(tdm_writer *st, tdm_writer_op *op)
{
    op->next = NULL;
    tdm_metrics_mark_take(&op->mark); /* submitted by the request's handler, inside its scope */
    if (st->trace) op->submitted_ms = trace_ms();
    st->pending++;
    pthread_mutex_lock(&st->lock);
    if (st->tail) st->tail->next = op;
    else st->head = op;
    st->tail = op;
    pthread_mutex_unlock(&st->lock);
    /* after the unlock: the woken writer does not meet this (the loop's) thread on the lock, a
       second system call here (the writer lives until tdm_writer_stop, on this thread) */
    pthread_cond_signal(&st->wake);
}

size_t tdm_writer_pending(const tdm_writer *st) { return st->pending; }

void tdm_writer_set_build_threads(tdm_writer *st, int n) { st->build_threads = n < 1 ? 1 : n; }

int tdm_writer_offloads(const tdm_writer *st) { return st->stage; }

static void on_closed(uv_handle_t *h)
{
    tdm_writer *st = (tdm_writer *)h;
    for (size_t i = 0; i < st->n_trash; i++) tdm_datadir_unstage(st->dir, &st->trash[i]); /* none: drained */
    free(st->trash);
    pthread_cond_destroy(&st->wake);
    pthread_cond_destroy(&st->build_wake);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static void print_trace(const tdm_writer *st)
{
    static const char *const kind[] = {"mesh put", "mesh delete", "scene put", "scene delete",
                                       "robot put", "robot delete", "robot scene put", "owners"};
    for (int k = 0; k <= TDM_WRITER_OWNERS; k++)
        if (st->traced[k].n)
            fprintf(stderr, "writer %s: %llu ops, %.3f ms queued, %.3f ms run on average\n", kind[k],
                    (unsigned long long)st->traced[k].n, st->traced[k].queued_ms / (double)st->traced[k].n,
                    st->traced[k].run_ms / (double)st->traced[k].n);
    uint64_t n = st->traced[TDM_WRITER_ROBOT_SCENE_PUT].n;
    if (n)
        fprintf(stderr, "writer robot scene put's run: build %.3f ms, engine %.3f ms, files %.3f ms on average\n",
                st->rs_build_ms / (double)n, st->rs_engine_ms / (double)n, st->rs_files_ms / (double)n);
    if (st->big_n)
        fprintf(stderr, "writer large mesh put: %llu stored, %.3f ms on the writer (owners, the file put in "
                        "place), %.3f ms on the builder after its tree (its device copy and file), on average\n",
                (unsigned long long)st->big_n, st->big_store_ms / (double)st->big_n,
                st->big_stage_ms / (double)st->big_n);
}

void tdm_writer_stop(tdm_writer *st)
{
    if (!st) return;
    int joined = st->started;
    if (st->started) {
        pthread_mutex_lock(&st->lock);
        st->stopping = 1;
        pthread_cond_broadcast(&st->wake);
        pthread_cond_broadcast(&st->build_wake);
        pthread_mutex_unlock(&st->lock);
        pthread_join(st->thread, NULL);
        st->started = 0;
    }
    if (st->builder_started) { /* after the writer: it drains the files the writer renamed aside */
        pthread_mutex_lock(&st->lock);
        st->stopping = 1;
        pthread_cond_broadcast(&st->build_wake);
        pthread_mutex_unlock(&st->lock);
        pthread_join(st->builder, NULL);
        st->builder_started = 0;
    }
    if (joined && st->trace) print_trace(st);
    deliver(st); /* callbacks of ops finished after the last wakeup */
    uv_close((uv_handle_t *)&st->async, on_closed);
}
