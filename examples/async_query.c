/* async_query: the asynchronous libtandem API on a libuv loop.
 *
 *   async_query [ADDR] [BATCHES]     (default 127.0.0.1:7450, 8 batches)
 *
 * On connect it uploads a box mesh (used as both environment and robot), makes a scene,
 * then keeps every batch of 256 random poses in flight at once and counts colliding poses
 * as replies come back in whatever order. Each step is started from the previous step's
 * callback; the last reply disconnects gracefully. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tandem/adapters/libuv.h>
#include <tandem/tandem.h>

#define BATCH 256

typedef struct app {
    int batches, answered, colliding, failed;
    uint8_t mesh_id[TDM_ID_BYTES];
    double *poses;
} app;

static void make_box(float half, float verts[24], uint32_t tris[36])
{
    static const uint32_t faces[36] = {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                                       2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5};
    for (int i = 0; i < 8; i++) {
        verts[3 * i] = i & 1 ? half : -half;
        verts[3 * i + 1] = i & 2 ? half : -half;
        verts[3 * i + 2] = i & 4 ? half : -half;
    }
    memcpy(tris, faces, sizeof faces);
}

static int check(tdm_async *ac, const tdm_reply *r, const char *what)
{
    if (r->status == 0) return 0;
    app *a = tdm_async_data(ac);
    a->failed = 1;
    if (r->status == TDM_CLIENT_ESERVER)
        fprintf(stderr, "async_query: %s: server: %s\n", what, r->error.message);
    else
        fprintf(stderr, "async_query: %s: %s\n", what, tdm_client_strerror(r->status));
    tdm_async_disconnect(ac);
    return -1;
}

static void on_query(tdm_async *ac, const tdm_reply *r, void *privdata)
{
    app *a = tdm_async_data(ac);
    if (check(ac, r, "query")) return;
    for (size_t i = 0; i < r->u.query.n; i++) a->colliding += (int)r->u.query.results[i].colliding;
    printf("batch %d answered (request %llu)\n", (int)(intptr_t)privdata, (unsigned long long)r->id);
    if (++a->answered == a->batches) tdm_async_disconnect(ac);
}

static void on_scene(tdm_async *ac, const tdm_reply *r, void *privdata)
{
    (void)privdata;
    app *a = tdm_async_data(ac);
    if (check(ac, r, "scene put")) return;
    for (int b = 0; b < a->batches; b++) {
        int rc = tdm_async_query(ac, on_query, (void *)(intptr_t)b, r->u.scene_put.scene_id, TDM_QUERY_BOOL,
                                 a->poses + (size_t)b * BATCH * 7, 1, BATCH, 0, 0, NULL);
        if (rc) { /* a refused request never calls its callback */
            fprintf(stderr, "async_query: query: %s\n", tdm_client_strerror(rc));
            a->failed = 1;
            tdm_async_disconnect(ac);
            return;
        }
    }
}

static void on_mesh(tdm_async *ac, const tdm_reply *r, void *privdata)
{
    (void)privdata;
    app *a = tdm_async_data(ac);
    if (check(ac, r, "mesh put")) return;
    memcpy(a->mesh_id, r->u.mesh_put.mesh_id, TDM_ID_BYTES);
    tdm_scene_object objs[2] = {{.object_id = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, a->mesh_id, TDM_ID_BYTES);
    memcpy(objs[1].mesh_id, a->mesh_id, TDM_ID_BYTES);
    if (tdm_async_scene_put(ac, on_scene, NULL, "async-example", objs, 2, NULL, 0, NULL)) {
        a->failed = 1;
        tdm_async_disconnect(ac);
    }
}

static void on_connect(tdm_async *ac, int status)
{
    if (status) {
        fprintf(stderr, "async_query: connect: %s\n", tdm_async_errstr(ac));
        ((app *)tdm_async_data(ac))->failed = 1;
        return;
    }
    printf("connected to %s\n", tdm_async_server_info(ac)->server_version);
    float v[24];
    uint32_t t[36];
    make_box(0.5f, v, t);
    if (tdm_async_mesh_put(ac, on_mesh, NULL, "async-box", v, 8, t, 12, NULL)) tdm_async_disconnect(ac);
}

static void on_disconnect(tdm_async *ac, int status)
{
    app *a = tdm_async_data(ac);
    if (status) {
        fprintf(stderr, "async_query: disconnected: %s\n", tdm_async_errstr(ac));
        a->failed = 1;
    }
}

int main(int argc, char **argv)
{
    app a = {.batches = argc > 2 ? atoi(argv[2]) : 8};
    if (a.batches < 1) a.batches = 1;
    a.poses = malloc((size_t)a.batches * BATCH * 7 * sizeof(double));
    if (!a.poses) return 1;
    srand(7);
    for (int i = 0; i < a.batches * BATCH; i++) {
        double *p = a.poses + (size_t)i * 7;
        for (int k = 0; k < 3; k++) p[k] = 3.0 * rand() / RAND_MAX - 1.5;
        p[3] = p[4] = p[5] = 0;
        p[6] = 1;
    }
    tdm_connect_opts opts = {.addr = argc > 1 ? argv[1] : "127.0.0.1:7450", .client_name = "async_query"};
    tdm_async *ac = tdm_async_connect(&opts);
    if (!ac) return 1;
    if (tdm_async_err(ac)) {
        fprintf(stderr, "async_query: %s\n", tdm_async_errstr(ac));
        tdm_async_free(ac);
        free(a.poses);
        return 1;
    }
    tdm_async_set_data(ac, &a);
    tdm_async_set_connect_cb(ac, on_connect);
    tdm_async_set_disconnect_cb(ac, on_disconnect);
    uv_loop_t *loop = uv_default_loop();
    if (tdm_libuv_attach(ac, loop)) {
        tdm_async_free(ac);
        free(a.poses);
        return 1;
    }
    uv_run(loop, UV_RUN_DEFAULT);
    printf("queries=%d colliding=%d\n", a.answered * BATCH, a.colliding);
    uv_loop_close(loop);
    free(a.poses);
    return a.failed;
}
