#include "writer.h"

#include <math.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "robot_build.h"

/* ---- the thread ---- */

struct tdm_writer {
    uv_async_t async; /* first: the close callback casts back */
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
    size_t pending; /* loop thread */
};

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

static void mesh_put(tdm_writer *st, tdm_writer_op *op)
{
    const Tandem__V1__MeshPut *p = op->put;
    uint32_t nv = (uint32_t)(p->n_vertices / 3), nt = (uint32_t)(p->n_triangles / 3);
    op->n_verts = nv;
    op->n_tris = nt;
    if (tdm_mesh_id(p->vertices, nv, p->triangles, nt, op->id) != 0) {
        set_err(op, TDM_ENOMEM, "", -1, "SHA-256 failed");
        return;
    }
    if (tdm_catalog_mesh_on_disk(st->catalog, op->id)) {
        op->exists = 1; /* stored meshes were validated when they were put */
        return;
    }
    if (op->over_budget) { /* op->msg was written by the loop */
        op->rc = TDM_ENOMEM;
        op->field = "";
        return;
    }
    tdm_mesh *mesh = NULL;
    tdm_bvh *bvh = NULL;
    void *blob = NULL;
    size_t blob_len = 0;
    int resident = 0; /* bvh is added to the engine */
    op->rc = tdm_mesh_create(p->vertices, nv, p->triangles, nt, &op->limits, &mesh, op->msg, sizeof op->msg);
    if (op->rc != TDM_OK) {
        locate_mesh_error(op, p->vertices, nv, p->triangles, nt);
        return;
    }
    /* the copy is made: keep the name, drop the request (it may be 64 MiB) */
    char *label = strdup(p->name ? p->name : "");
    tdm_arena_free(op->arena);
    op->arena = NULL;
    op->put = NULL;
    if (!label) {
        set_err(op, TDM_ENOMEM, "", -1, "out of memory");
        goto out;
    }
    if ((op->rc = tdm_bvh_build(mesh, &bvh)) != TDM_OK) {
        set_err(op, op->rc, "", -1, "out of memory building the tree");
        goto out;
    }
    if ((op->rc = tdm_bvh_serialize(bvh, &blob, &blob_len)) != TDM_OK) {
        set_err(op, op->rc, "", -1, "out of memory serialising the tree");
        goto out;
    }
    /* device first: a tree the GPU cannot hold must leave nothing behind, on disk or elsewhere.
     * A device that fails (rather than being full) does not refuse the mesh: it is stored, and
     * queries on scenes using it run on the CPU engine, as after a failed load at start-up. */
    if (st->engine) {
        int rc = tdm_sched_mesh_add(st->engine, bvh);
        if (rc == TDM_EGPU) {
            tdm_log_warn("MeshPut: copying the tree to the GPU failed (%s): the mesh is stored and queries on "
                         "scenes using it run on the CPU engine", tdm_strerror(rc));
        } else if ((op->rc = rc) != TDM_OK) {
            upload_error(st, op, blob_len);
            goto out;
        } else {
            resident = 1;
        }
    }
    uint8_t prefix[TDM_MESH_CANON_PREFIX_LEN];
    tdm_mesh_canon_prefix(nv, nt, prefix);
    struct iovec parts[3] = {{prefix, sizeof prefix}, {mesh->verts, 12 * (size_t)nv}, {mesh->tris, 12 * (size_t)nt}};
    char err[300];
    if (tdm_datadir_write(st->dir, TDM_DATADIR_MESH, op->id, label, parts, 3, blob, blob_len, err,
                          sizeof err) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        goto out;
    }
    uint64_t bytes = TDM_MESH_CANON_PREFIX_LEN + 12 * (uint64_t)nv + 12 * (uint64_t)nt + blob_len;
    op->mesh = tdm_stored_mesh_new(op->id, label, nv, nt, bytes, bvh);
    if (!op->mesh) {
        /* on disk but not in memory: it loads at the next start; say so */
        set_err(op, TDM_ENOMEM, "", -1, "out of memory after storing the mesh");
        goto out;
    }
    op->mesh->engine = resident ? st->engine : NULL;
    resident = 0; /* the mesh removes it from the engine when it is freed */
    bvh = NULL;
    tdm_catalog_mesh_written(st->catalog, op->mesh);
out:
    if (resident) tdm_sched_mesh_remove(st->engine, bvh);
    free(label);
    free(blob);
    tdm_bvh_free(bvh);
    tdm_mesh_free(mesh);
}

static void scene_put(tdm_writer *st, tdm_writer_op *op)
{
    if (tdm_catalog_scene_on_disk(st->catalog, op->id)) {
        op->exists = 1;
        return;
    }
    struct iovec part = {op->canon, op->canon_len};
    char err[300];
    if (tdm_datadir_write(st->dir, TDM_DATADIR_SCENE, op->id, op->scene->name, &part, 1, NULL, 0, err,
                          sizeof err) != 0) {
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
    if (tdm_datadir_write(st->dir, TDM_DATADIR_ROBOT, op->id, op->robot->name, &part, 1, NULL, 0, err,
                          sizeof err) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return;
    }
    tdm_catalog_robot_written(st->catalog, op->robot);
}

static void robot_scene_put(tdm_writer *st, tdm_writer_op *op)
{
    if (tdm_catalog_scene_on_disk(st->catalog, op->id)) {
        op->exists = 1;
        return;
    }
    uint8_t rid[TDM_ID_LEN];
    const char *yaml;
    size_t len;
    if (tdm_robot_scene_canon_parse(op->canon, op->canon_len, rid, &yaml, &len) != TDM_OK) {
        set_err(op, TDM_EINVAL, "", -1, "internal: malformed robot scene content");
        return;
    }
    tdm_robot_fail f;
    tdm_robot_scene *rs;
    tdm_planning_scene *ps;
    int rc = tdm__robot_scene_build(st->dir, op->robot->robot, yaml, len, &rs, &ps, &f);
    if (rc != TDM_OK) {
        set_err(op, rc, f.field, f.index, f.msg);
        op->wire_code = f.code;
        return;
    }
    if (rs->n_objects > op->max_objects) {
        char why[200];
        snprintf(why, sizeof why, "the robot scene has %u objects (robot elements and world shapes), over max_objects %u",
                 rs->n_objects, op->max_objects);
        set_err(op, TDM_ERANGE, "world", -1, why);
        tdm_robot_scene_destroy(rs);
        tdm_planning_scene_free(ps);
        return;
    }
    tdm_stored_scene *sc = tdm_stored_scene_new_robot(op->id, op->name ? op->name : "", rs, ps, op->robot);
    if (!sc) {
        set_err(op, TDM_ENOMEM, "", -1, "out of memory");
        return;
    }
    op->scene = sc;
    if (st->engine) {
        sc->engine = st->engine;
        for (; sc->n_resident < rs->n_objects; sc->n_resident++)
            if ((rc = tdm_sched_mesh_add(st->engine, rs->bvhs[sc->n_resident])) != TDM_OK) {
                set_err(op, rc, "", -1,
                        rc == TDM_EGPUMEM ? "the robot scene's trees do not fit in device memory (or the gpu-memory "
                                            "budget)"
                                          : "adding the robot scene's trees to the engine failed");
                return;
            }
    }
    struct iovec part = {op->canon, op->canon_len};
    char err[300];
    if (tdm_datadir_write(st->dir, TDM_DATADIR_ROBOT_SCENE, op->id, sc->name, &part, 1, NULL, 0, err,
                          sizeof err) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return;
    }
    tdm_catalog_scene_written(st->catalog, sc);
}

static void remove_file(tdm_writer *st, tdm_writer_op *op, tdm_datadir_kind kind)
{
    char err[300];
    if (tdm_datadir_remove(st->dir, kind, op->id, err, sizeof err) != 0) {
        set_err(op, TDM_EIO, "", -1, err);
        return;
    }
    if (kind == TDM_DATADIR_MESH) tdm_catalog_mesh_removed(st->catalog, op->id);
    else if (kind == TDM_DATADIR_ROBOT) tdm_catalog_robot_removed(st->catalog, op->id);
    else tdm_catalog_scene_removed(st->catalog, op->id);
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
    }
}

static void *writer_main(void *arg)
{
    prctl(PR_SET_NAME, "tdm-storage"); /* top -H, /proc; the name bench/results profiles know */
    tdm_writer *st = arg;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!st->head && !st->stopping) pthread_cond_wait(&st->wake, &st->lock);
        if (!st->head) break; /* stopping, and everything is done */
        tdm_writer_op *op = st->head;
        st->head = op->next;
        if (!st->head) st->tail = NULL;
        pthread_mutex_unlock(&st->lock);

        op->next = NULL;
        run_op(st, op);

        pthread_mutex_lock(&st->lock);
        if (st->done_tail) st->done_tail->next = op;
        else st->done_head = op;
        st->done_tail = op;
        uv_async_send(&st->async);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

static void on_async(uv_async_t *h)
{
    tdm_writer *st = (tdm_writer *)h;
    pthread_mutex_lock(&st->lock);
    tdm_writer_op *op = st->done_head;
    st->done_head = st->done_tail = NULL;
    pthread_mutex_unlock(&st->lock);
    while (op) {
        tdm_writer_op *next = op->next;
        st->pending--;
        tdm_metrics_mark outer = tdm_metrics_enter(&op->mark);
        op->done(op);
        tdm_metrics_leave(outer);
        op = next;
    }
}

int tdm_writer_create(uv_loop_t *loop, tdm_datadir *dir, tdm_catalog *catalog, tdm_sched *engine, tdm_writer **out)
{
    *out = NULL;
    tdm_writer *st = calloc(1, sizeof *st);
    if (!st) return TDM_ENOMEM;
    st->dir = dir;
    st->catalog = catalog;
    st->engine = engine;
    if (pthread_mutex_init(&st->lock, NULL) != 0) {
        free(st);
        return TDM_ESYS;
    }
    if (pthread_cond_init(&st->wake, NULL) != 0) {
        pthread_mutex_destroy(&st->lock);
        free(st);
        return TDM_ESYS;
    }
    if (uv_async_init(loop, &st->async, on_async) != 0) {
        pthread_cond_destroy(&st->wake);
        pthread_mutex_destroy(&st->lock);
        free(st);
        return TDM_ESYS;
    }
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
    st->pending++;
    pthread_mutex_lock(&st->lock);
    if (st->tail) st->tail->next = op;
    else st->head = op;
    st->tail = op;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
}

size_t tdm_writer_pending(const tdm_writer *st) { return st->pending; }

static void on_closed(uv_handle_t *h)
{
    tdm_writer *st = (tdm_writer *)h;
    pthread_cond_destroy(&st->wake);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

void tdm_writer_stop(tdm_writer *st)
{
    if (!st) return;
    if (st->started) {
        pthread_mutex_lock(&st->lock);
        st->stopping = 1;
        pthread_cond_signal(&st->wake);
        pthread_mutex_unlock(&st->lock);
        pthread_join(st->thread, NULL);
        st->started = 0;
    }
    on_async(&st->async); /* callbacks of ops finished after the last wakeup */
    uv_close((uv_handle_t *)&st->async, on_closed);
}
