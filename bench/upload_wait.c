/* How long a small MeshPut waits behind a large one (issue 14: "a maximum-size mesh
 * upload: +686 MB RSS and 21.6 s during which another client's small MeshPut waited").
 *
 *   bench_upload_wait ADDR TRIANGLES [PID]
 *
 * Client A stores a generated mesh of about TRIANGLES triangles (a grid sphere with
 * random jitter, so that its content id is new each run); 200 ms after A's request is
 * sent, client B stores a 12-triangle box. Prints A's and B's times and, given tandemd's
 * PID, its VmRSS before and its VmHWM after. tandemd stores meshes on one writer thread,
 * in order: B waits for A's tree. Meanwhile client C makes MeshList round trips from before A's
 * request until A is answered, and its largest and 99th-percentile round trips are printed:
 * what a client beside the upload waits for (A's frame decoded holding the server's lock on
 * its loop stalled every connection: TDM_DECODE_APART=0 in tandemd's environment does that).
 * With UPLOAD_ROBOT_BYTES=N in the environment, A stores a robot instead: a URDF of about N bytes
 * (one box link, then <material> elements), which tandemd parses (on the loop before, holding the
 * server's lock; on libuv's pool from 256 KiB now). With UPLOAD_WORLD_BYTES=N, A stores a small
 * robot, then a robot scene of it whose world is about N bytes (one box, then comment lines), whose
 * canonical content tandemd makes and hashes (on the loop before, holding the server's lock; on
 * libuv's pool from 256 KiB now); A's time is the RobotScenePut's. With UPLOAD_MOTION_BYTES=N, A stores
 * a three-joint arm and a scene of it, then sends a MotionCheck of about N bytes of waypoints (65 536
 * paths; their numbers checked, copied and planned on the loop before, holding the server's lock; on
 * libuv's pool from 1 MiB now); A's time is the MotionCheck's. With UPLOAD_QUERY_BYTES=N, A stores a box
 * and a scene of two of them, one movable, then sends a Query of about N bytes of poses, all apart (their
 * numbers copied on the loop before, holding the server's lock; kept where they were decoded from 1 MiB
 * now); A's time is the Query's. N over 64 KiB x 56 bytes needs tandemd's --max-queries raised. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tandem/tandem.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long rss_kb(long pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) v = strtol(line + strlen(key), NULL, 10);
    fclose(f);
    return v;
}

typedef struct big { const char *addr; float *v; uint32_t *t; uint32_t nv, nt; double secs; int rc; char *urdf, *world; size_t motion_bytes, query_bytes; } big;

/* Three revolute joints, boxes for links; a world of one box out of reach. */
static const char arm_urdf[] =
    "<robot name='arm'><link name='l0'><collision><geometry><box size='0.2 0.2 0.2'/></geometry></collision></link>"
    "<link name='l1'><collision><geometry><box size='0.1 0.1 0.5'/></geometry></collision></link>"
    "<link name='l2'><collision><geometry><box size='0.1 0.1 0.5'/></geometry></collision></link>"
    "<link name='l3'><collision><geometry><box size='0.1 0.1 0.5'/></geometry></collision></link>"
    "<joint name='j1' type='revolute'><parent link='l0'/><child link='l1'/><origin xyz='0 0 0.2'/><axis xyz='0 0 1'/>"
    "<limit lower='-3' upper='3' effort='1' velocity='1'/></joint>"
    "<joint name='j2' type='revolute'><parent link='l1'/><child link='l2'/><origin xyz='0 0 0.5'/><axis xyz='0 1 0'/>"
    "<limit lower='-3' upper='3' effort='1' velocity='1'/></joint>"
    "<joint name='j3' type='revolute'><parent link='l2'/><child link='l3'/><origin xyz='0 0 0.5'/><axis xyz='0 1 0'/>"
    "<limit lower='-3' upper='3' effort='1' velocity='1'/></joint></robot>";
static const char arm_world[] = "world:\n  collision_objects:\n    - id: far\n      primitives: [{type: box, dimensions: "
                                "[0.1, 0.1, 0.1]}]\n      primitive_poses: [{position: [5, 0, 0], orientation: [0, 0, 0, 1]}]\n";

/* The MotionCheck: 65 536 paths of waypoints, about b->motion_bytes of numbers, small steps. */
static int big_motions(tdm_client *c, big *b)
{
    uint8_t rid[32], sid[32];
    if (tdm_robot_put(c, "arm", arm_urdf, NULL, NULL, 0, rid, NULL, NULL) != 0 ||
        tdm_robot_scene_put(c, "arm", rid, arm_world, sid, NULL, NULL) != 0)
        return -1;
    size_t n = 65536, per = b->motion_bytes / (n * 3 * sizeof(double));
    if (per < 2) per = 2;
    double *q = malloc(sizeof *q * n * per * 3);
    uint32_t *pts = malloc(sizeof *pts * n);
    int64_t *first = malloc(sizeof *first * n);
    uint64_t *states = malloc(sizeof *states * n);
    double *last = malloc(sizeof *last * n * 3);
    int rc = -1;
    if (q && pts && first && states && last) {
        for (size_t i = 0; i < n; i++) {
            pts[i] = (uint32_t)per;
            for (size_t k = 0; k < per * 3; k++) q[(i * per) * 3 + k] = 1e-3 * (double)(k % 7) + 1e-6 * (double)i;
        }
        double t0 = now_s();
        rc = tdm_motion_check_paths(c, sid, 10.0, q, 3, pts, n, first, states, last);
        b->secs = now_s() - t0;
    }
    free(q), free(pts), free(first), free(states), free(last);
    return rc;
}

/* The Query: about b->query_bytes of poses of a box, each 10 apart from the fixed one. */
static int big_query(tdm_client *c, big *b)
{
    float v[24] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1};
    uint32_t t[36] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4, 1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
    uint8_t mid[32], sid[32];
    if (tdm_mesh_put(c, "query box", v, 8, t, 12, mid, NULL) != 0) return -1;
    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, mid, 32);
    memcpy(objs[1].mesh_id, mid, 32);
    if (tdm_scene_put(c, "query", objs, 2, NULL, 0, sid, NULL, NULL, 0, NULL) != 0) return -1;
    size_t n = b->query_bytes / (7 * sizeof(double));
    if (n < 1) n = 1;
    double *p = malloc(sizeof *p * 7 * n);
    tdm_query_result *res = malloc(sizeof *res * n);
    int rc = -1;
    if (p && res) {
        for (size_t i = 0; i < n; i++) {
            double *w = p + 7 * i;
            w[0] = 10 + 1e-6 * (double)i, w[1] = w[2] = 0;
            w[3] = w[4] = w[5] = 0, w[6] = 1;
        }
        double t0 = now_s();
        rc = tdm_query(c, sid, TDM_QUERY_BOOL, p, 1, n, 0, res, NULL);
        b->secs = now_s() - t0;
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (res[i].colliding) rc = -1, fprintf(stderr, "big Query: pose %zu collides, apart\n", i);
    }
    free(p), free(res);
    return rc;
}

typedef struct watch { const char *addr; volatile int stop; double *rt; size_t n, cap; } watch;

static void *watch_main(void *arg)
{
    watch *w = arg;
    tdm_connect_opts o = {.addr = w->addr, .timeout_ms = 5000, .io_timeout_ms = 600000};
    tdm_client *c = tdm_client_connect_with(&o);
    if (!c || tdm_client_err(c)) return NULL;
    while (!w->stop) {
        tdm_mesh_info *list = NULL;
        size_t n = 0;
        double t0 = now_s();
        if (tdm_mesh_list(c, &list, &n) != 0) break;
        double t = now_s() - t0;
        tdm_mesh_list_free(list);
        if (w->n == w->cap) {
            size_t cap = w->cap ? 2 * w->cap : 4096;
            double *rt = realloc(w->rt, cap * sizeof *rt);
            if (!rt) break;
            w->rt = rt, w->cap = cap;
        }
        w->rt[w->n++] = t;
    }
    tdm_client_free(c);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *big_main(void *arg)
{
    big *b = arg;
    tdm_connect_opts o = {.addr = b->addr, .timeout_ms = 5000, .io_timeout_ms = 600000};
    tdm_client *c = tdm_client_connect_with(&o);
    uint8_t id[32], rid[32];
    if (b->world && (!c || tdm_client_err(c) ||
                     tdm_robot_put(c, "small", "<robot name='one'><link name='base'><collision><geometry><box size='1 1 1'/>"
                                   "</geometry></collision></link></robot>", NULL, NULL, 0, rid, NULL, NULL) != 0)) {
        fprintf(stderr, "the small robot: %s\n", c ? tdm_client_errstr(c) : "no client");
        b->rc = -1;
        tdm_client_free(c);
        return NULL;
    }
    if (b->query_bytes) {
        b->rc = c && !tdm_client_err(c) ? big_query(c, b) : -1;
        if (b->rc) fprintf(stderr, "big Query: %s\n", c ? tdm_client_errstr(c) : "no client");
        tdm_client_free(c);
        return NULL;
    }
    if (b->motion_bytes) {
        b->rc = c && !tdm_client_err(c) ? big_motions(c, b) : -1;
        if (b->rc) fprintf(stderr, "big MotionCheck: %s\n", c ? tdm_client_errstr(c) : "no client");
        tdm_client_free(c);
        return NULL;
    }
    double t0 = now_s();
    if (b->world) b->rc = tdm_robot_scene_put(c, "big", rid, b->world, id, NULL, NULL);
    else if (b->urdf) b->rc = c && !tdm_client_err(c) ? tdm_robot_put(c, "big", b->urdf, NULL, NULL, 0, id, NULL, NULL) : -1;
    else b->rc = c && !tdm_client_err(c) ? tdm_mesh_put(c, "big", b->v, b->nv, b->t, b->nt, id, NULL) : -1;
    b->secs = now_s() - t0;
    if (b->rc) fprintf(stderr, "big MeshPut: %s\n", c ? tdm_client_errstr(c) : "no client");
    tdm_client_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_upload_wait ADDR TRIANGLES [PID]\n");
        return 2;
    }
    long want = atol(argv[2]), pid = argc > 3 ? atol(argv[3]) : 0;
    uint32_t seg = (uint32_t)sqrt((double)want / 2) + 2; /* seg x seg quads on a sphere: 2 seg^2 triangles */
    big b = {.addr = argv[1], .nv = seg * seg, .nt = 2 * (seg - 1) * seg};
    b.v = malloc(sizeof *b.v * 3 * b.nv);
    b.t = malloc(sizeof *b.t * 3 * b.nt);
    if (!b.v || !b.t) return 1;
    srand((unsigned)time(NULL));
    for (uint32_t i = 0; i < seg; i++)
        for (uint32_t j = 0; j < seg; j++) {
            double th = M_PI * (i + 0.5) / seg, ph = 2 * M_PI * j / seg, r = 1 + 1e-3 * rand() / RAND_MAX;
            float *p = b.v + 3 * (i * seg + j);
            p[0] = (float)(r * sin(th) * cos(ph));
            p[1] = (float)(r * sin(th) * sin(ph));
            p[2] = (float)(r * cos(th));
        }
    uint32_t k = 0;
    for (uint32_t i = 0; i + 1 < seg; i++)
        for (uint32_t j = 0; j < seg; j++) {
            uint32_t a = i * seg + j, bb = i * seg + (j + 1) % seg, c = a + seg, d = bb + seg;
            uint32_t *t = b.t + 3 * k;
            t[0] = a, t[1] = bb, t[2] = c, t[3] = bb, t[4] = d, t[5] = c;
            k += 2;
        }
    const char *rb = getenv("UPLOAD_ROBOT_BYTES");
    if (rb && atol(rb) > 0) { /* a robot: a box link, then materials up to about that many bytes */
        size_t want_b = (size_t)atol(rb), at = 0;
        b.urdf = malloc(want_b + 512);
        if (!b.urdf) return 1;
        at += (size_t)sprintf(b.urdf, "<?xml version='1.0'?>\n<robot name='big%d'>\n<link name='base'><collision><geometry>"
                                      "<box size='1 1 1'/></geometry></collision></link>\n", rand());
        for (int m = 0; at + 64 < want_b; m++) at += (size_t)sprintf(b.urdf + at, "<material name='m%d'/>\n", m);
        sprintf(b.urdf + at, "</robot>\n");
    }
    const char *wb = getenv("UPLOAD_WORLD_BYTES");
    if (wb && atol(wb) > 0) { /* a world: one box, then comment lines up to about that many bytes */
        size_t want_b = (size_t)atol(wb), at = 0;
        b.world = malloc(want_b + 512);
        if (!b.world) return 1;
        at += (size_t)sprintf(b.world, "world:\n  collision_objects:\n    - id: box%d\n      primitives: [{type: box, "
                                       "dimensions: [0.1, 0.1, 0.1]}]\n      primitive_poses: [{position: [2, 0, 0], "
                                       "orientation: [0, 0, 0, 1]}]\n", rand());
        for (int m = 0; at + 64 < want_b; m++) at += (size_t)sprintf(b.world + at, "# padding line %d\n", m);
    }
    const char *mb = getenv("UPLOAD_MOTION_BYTES");
    if (mb && atol(mb) > 0) b.motion_bytes = (size_t)atol(mb);
    const char *qb = getenv("UPLOAD_QUERY_BYTES");
    if (qb && atol(qb) > 0) b.query_bytes = (size_t)atol(qb);
    long before = pid ? rss_kb(pid, "VmRSS:") : -1;
    watch w = {.addr = argv[1]};
    pthread_t th, tw;
    pthread_create(&tw, NULL, watch_main, &w);
    struct timespec settle = {0, 50 * 1000000L};
    nanosleep(&settle, NULL);
    pthread_create(&th, NULL, big_main, &b);
    struct timespec ts = {0, 200 * 1000000L};
    nanosleep(&ts, NULL);
    tdm_connect_opts o = {.addr = argv[1], .timeout_ms = 5000, .io_timeout_ms = 600000};
    tdm_client *c = tdm_client_connect_with(&o);
    float bv[24] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1};
    for (int i = 0; i < 24; i++) bv[i] += (float)(rand() % 1000) * 1e-4f;
    uint32_t bt[36] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4, 1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
    uint8_t id[32];
    double t0 = now_s();
    int rc = c && !tdm_client_err(c) ? tdm_mesh_put(c, "small", bv, 8, bt, 12, id, NULL) : -1;
    double small = now_s() - t0;
    tdm_client_free(c);
    pthread_join(th, NULL);
    w.stop = 1;
    pthread_join(tw, NULL);
    long hwm = pid ? rss_kb(pid, "VmHWM:") : -1;
    if (b.query_bytes) printf("big Query: %zu poses (%zu bytes), %.2f s, rc %d\n", b.query_bytes / 56, b.query_bytes / 56 * 56,
                              b.secs, b.rc);
    else if (b.motion_bytes) printf("big MotionCheck: about %zu bytes of waypoints, %.2f s, rc %d\n", b.motion_bytes, b.secs, b.rc);
    else if (b.world) printf("big RobotScenePut: %zu bytes of world, %.2f s, rc %d\n", strlen(b.world), b.secs, b.rc);
    else if (b.urdf) printf("big RobotPut: %zu bytes of URDF, %.2f s, rc %d\n", strlen(b.urdf), b.secs, b.rc);
    else printf("big MeshPut: %u triangles (%.1f MB sent), %.2f s, rc %d\n", b.nt, (12.0 * b.nv + 12.0 * b.nt) / 1e6, b.secs,
                b.rc);
    printf("small MeshPut sent 0.2 s after it: answered in %.3f s, rc %d\n", small, rc);
    if (pid) printf("tandemd RSS before %ld KiB, peak %ld KiB (+%ld KiB)\n", before, hwm, hwm - before);
    if (w.n) {
        qsort(w.rt, w.n, sizeof *w.rt, cmp_double);
        printf("MeshList round trips beside it: %zu, median %.3f ms, 99th percentile %.3f ms, largest %.3f ms\n", w.n,
               1e3 * w.rt[w.n / 2], 1e3 * w.rt[(size_t)(0.99 * (double)(w.n - 1))], 1e3 * w.rt[w.n - 1]);
    }
    free(w.rt);
    free(b.urdf);
    free(b.world);
    free(b.v);
    free(b.t);
    return rc || b.rc;
}
