/* tandemd over loopback: throughput and latency for C clients x batches of B
 * poses, beside the engine alone (the same kind as the daemon's) on the same
 * poses and thread count.
 *
 *   bench_server --server ADDR --env ENV --robot ROBOT --poses POSES
 *                [--mode bool|contacts] [--clients C] [--batch B] [--inflight K]
 *                [--seconds S] [--threads N] [--engine auto|cpu|gpu|hybrid]
 *
 * Each client thread has its own connection and keeps K Query requests of B poses
 * in flight for S seconds, cycling through the pose file from its own offset.
 * Latency is per request: from tdm_query_send to its reply. The engine figure runs
 * every pose of the file through tdm_engine_run (kind --engine, N threads: the
 * daemon's --engine and --threads) in runs of up to 2^20 poses, in this process,
 * best of two passes: what the engine does with the whole load at once, the
 * ceiling for the daemon. Prints the engine's description on stderr and one line:
 *   RESULT clients=C batch=B inflight=K mode=M queries=Q qps=X p50_us=Y p99_us=Z engine_qps=E ratio=R */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../client/tandem.h"
#include "bench_util.h"
#include "../tools/io.h"
#include "engine_alone.h"

typedef struct shared {
    const char *addr;
    uint8_t scene[TDM_ID_BYTES];
    tdm_query_mode mode;
    const double *poses; /* 7 per pose */
    size_t n_poses, batch;
    int inflight;
    double deadline;
} shared;

typedef struct client_run {
    const shared *sh;
    int index;
    size_t queries;
    double *lat; /* per request, microseconds */
    size_t n_lat, cap_lat;
    int failed;
} client_run;

static void *client_main(void *arg)
{
    client_run *r = arg;
    const shared *sh = r->sh;
    tdm_client *c = tdm_client_connect(sh->addr, 5000);
    if (!c || tdm_client_err(c)) {
        fprintf(stderr, "client %d: %s\n", r->index, c ? tdm_client_errstr(c) : "out of memory");
        r->failed = 1;
        tdm_client_free(c);
        return NULL;
    }
    int k_max = sh->inflight;
    tdm_query_result **res = calloc((size_t)k_max, sizeof *res);
    double *sent_at = calloc((size_t)k_max, sizeof *sent_at);
    uint64_t *ids = calloc((size_t)k_max, sizeof *ids);
    for (int k = 0; k < k_max; k++) res[k] = malloc(sh->batch * sizeof **res);
    size_t off = ((size_t)r->index * 7919 * sh->batch) % sh->n_poses;
    int outstanding = 0;
    for (;;) {
        int stop = bench_now() >= sh->deadline;
        while (!stop && outstanding < k_max) {
            int slot = 0;
            while (ids[slot]) slot++;
            if (off + sh->batch > sh->n_poses) off = 0;
            sent_at[slot] = bench_now();
            if (tdm_query_send(c, sh->scene, sh->mode, sh->poses + 7 * off, 1, sh->batch, 0, res[slot], NULL,
                               &ids[slot]) != 0) {
                fprintf(stderr, "client %d: send: %s\n", r->index, tdm_client_errstr(c));
                r->failed = 1;
                stop = 1;
                break;
            }
            off += sh->batch;
            outstanding++;
        }
        if (outstanding == 0) break;
        uint64_t id;
        int status;
        if (tdm_query_wait(c, &id, &status) != 0) break;
        double t = bench_now();
        int slot = 0;
        while (slot < k_max && ids[slot] != id) slot++;
        if (slot == k_max || status != 0) {
            fprintf(stderr, "client %d: reply: %s\n", r->index, tdm_client_errstr(c));
            r->failed = 1;
            break;
        }
        ids[slot] = 0;
        outstanding--;
        r->queries += sh->batch;
        if (r->n_lat == r->cap_lat) {
            r->cap_lat = r->cap_lat ? 2 * r->cap_lat : 4096;
            r->lat = realloc(r->lat, r->cap_lat * sizeof *r->lat);
        }
        r->lat[r->n_lat++] = 1e6 * (t - sent_at[slot]);
    }
    for (int k = 0; k < k_max; k++) free(res[k]);
    free(res);
    free(sent_at);
    free(ids);
    tdm_client_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *addr = bench_arg(argc, argv, "--server", NULL), *env = bench_arg(argc, argv, "--env", NULL),
               *robot = bench_arg(argc, argv, "--robot", NULL), *poses_path = bench_arg(argc, argv, "--poses", NULL),
               *mode_s = bench_arg(argc, argv, "--mode", "bool"), *engine_s = bench_arg(argc, argv, "--engine", "auto");
    int clients = atoi(bench_arg(argc, argv, "--clients", "1")), inflight = atoi(bench_arg(argc, argv, "--inflight", "1")),
        threads = atoi(bench_arg(argc, argv, "--threads", "0"));
    size_t batch = (size_t)atol(bench_arg(argc, argv, "--batch", "1"));
    double seconds = atof(bench_arg(argc, argv, "--seconds", "2"));
    if (!addr || !env || !robot || !poses_path || clients < 1 || inflight < 1 || batch < 1) {
        fputs("usage: bench_server --server ADDR --env ENV --robot ROBOT --poses POSES [--mode bool|contacts]\n"
              "                    [--clients C] [--batch B] [--inflight K] [--seconds S] [--threads N]\n"
              "                    [--engine auto|cpu|gpu|hybrid]\n",
              stderr);
        return 2;
    }
    char err[512];
    tdm_mesh *me, *mr;
    tdm_pose *p;
    size_t n;
    if (tdm_mesh_load_file(env, TDM_ORIGIN_RAW, &me, err, sizeof err) || tdm_mesh_load_file(robot, TDM_ORIGIN_RAW, &mr, err, sizeof err) ||
        tdm_poses_read(poses_path, &p, &n, err, sizeof err)) {
        fprintf(stderr, "bench_server: %s\n", err);
        return 1;
    }
    if (n < batch) {
        fprintf(stderr, "bench_server: %zu poses, fewer than one batch of %zu\n", n, batch);
        return 1;
    }
    double *poses = malloc(7 * n * sizeof *poses);
    for (size_t i = 0; i < n; i++) {
        double v[7] = {p[i].t.x, p[i].t.y, p[i].t.z, p[i].q.x, p[i].q.y, p[i].q.z, p[i].q.w};
        memcpy(poses + 7 * i, v, sizeof v);
    }
    int contacts = strcmp(mode_s, "contacts") == 0;

    /* the engine alone */
    double engine_qps = tdm_bench_engine_alone(engine_s, threads, me, mr, p, n, contacts);
    if (engine_qps <= 0) return 1;
    double t0;

    /* the meshes and the scene, once */
    tdm_client *c = tdm_client_connect(addr, 5000);
    if (!c || tdm_client_err(c)) {
        fprintf(stderr, "bench_server: %s\n", c ? tdm_client_errstr(c) : "out of memory");
        return 1;
    }
    shared sh = {addr, {0}, contacts ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, poses, n, batch, inflight, 0};
    tdm_scene_object obj[2] = {{0}, {0}};
    obj[0].object_id = 0;
    obj[1].object_id = 1;
    obj[1].movable = 1;
    if (tdm_mesh_put(c, "env", me->verts, me->n_verts, me->tris, me->n_tris, obj[0].mesh_id, NULL) ||
        tdm_mesh_put(c, "robot", mr->verts, mr->n_verts, mr->tris, mr->n_tris, obj[1].mesh_id, NULL) ||
        tdm_scene_put(c, "bench", obj, 2, NULL, 0, sh.scene, NULL, NULL, 0, NULL)) {
        fprintf(stderr, "bench_server: setup: %s\n", tdm_client_errstr(c));
        return 1;
    }
    tdm_client_free(c);

    client_run *runs = calloc((size_t)clients, sizeof *runs);
    pthread_t *th = calloc((size_t)clients, sizeof *th);
    sh.deadline = bench_now() + seconds;
    t0 = bench_now();
    for (int i = 0; i < clients; i++) {
        runs[i].sh = &sh;
        runs[i].index = i;
        pthread_create(&th[i], NULL, client_main, &runs[i]);
    }
    size_t queries = 0, n_lat = 0;
    int failed = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(th[i], NULL);
        queries += runs[i].queries;
        n_lat += runs[i].n_lat;
        failed |= runs[i].failed;
    }
    double elapsed = bench_now() - t0;
    double *lat = malloc((n_lat ? n_lat : 1) * sizeof *lat);
    size_t k = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(lat + k, runs[i].lat, runs[i].n_lat * sizeof *lat);
        k += runs[i].n_lat;
        free(runs[i].lat);
    }
    qsort(lat, n_lat, sizeof *lat, bench_cmp_double);
    double qps = (double)queries / elapsed;
    printf("RESULT clients=%d batch=%zu inflight=%d mode=%s queries=%zu qps=%.0f p50_us=%.1f p99_us=%.1f "
           "engine_qps=%.0f ratio=%.3f%s\n",
           clients, batch, inflight, mode_s, queries, qps, n_lat ? lat[n_lat / 2] : 0.0,
           n_lat ? lat[(size_t)(0.99 * (double)(n_lat - 1))] : 0.0, engine_qps, qps / engine_qps,
           failed ? " FAILED" : "");
    return failed;
}
