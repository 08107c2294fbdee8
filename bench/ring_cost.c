/* What a small request costs through tandemd over the Unix socket and through shared-memory rings
 * (tdm_client_ring), side by side in one run: C clients, each on its own thread and connection,
 * send single-pose bool queries one after another, as a planner sends its states, for S seconds a
 * round; the rounds alternate socket and rings. Measures the requests answered, their round trip,
 * and the CPU time tandemd (its /proc/PID/stat) and this process spent a request.
 *
 *   bench_ring_cost --server unix:PATH --tandemd-pid PID [--clients C] [--seconds S] [--rounds R]
 *                   [--idle-rings N]
 *
 * A scene of two boxes (one fixed, one moving) is stored first; the poses alternate colliding and
 * free ones and every answer is checked. Prints a Markdown table, a row a round: transport, requests,
 * requests/s, mean round trip (µs), tandemd's and the clients' CPU a request (µs), then each
 * transport's mean. --idle-rings N: N more connections open 64 KiB rings first and stay idle
 * throughout (same-host clients that connected and wait), beside the measured ones. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <tandem/tandem.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* utime + stime of process pid, in seconds; -1 when unreadable. */
static double proc_cpu_s(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command may hold spaces */
    if (!p) return -1;
    unsigned long ut = 0, st = 0;
    /* fields after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt
       cmajflt utime stime */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2) return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
}

typedef struct worker {
    pthread_t th;
    const char *server;
    const uint8_t *scene;
    int ring;
    double seconds;
    pthread_barrier_t *start;
    uint64_t done;
    double busy_s;
    int failed;
    char err[256];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    tdm_client *c = tdm_client_connect(w->server, 10000);
    int rc = tdm_client_err(c);
    if (!rc && w->ring) rc = tdm_client_ring(c, 0, 0);
    if (rc) snprintf(w->err, sizeof w->err, "%s", tdm_client_errstr(c));
    pthread_barrier_wait(w->start);
    if (rc) {
        w->failed = 1;
        tdm_client_free(c);
        return NULL;
    }
    double t0 = now_s(), t = t0;
    uint64_t k = 0;
    while (t - t0 < w->seconds) {
        double pose[7] = {(k % 2) ? 3.0 : 0.5, 0, 0, 0, 0, 0, 1}; /* free, then touching */
        tdm_query_result r;
        if (tdm_query(c, w->scene, TDM_QUERY_BOOL, pose, 1, 1, 0, &r, NULL) ||
            r.colliding != !(k % 2)) {
            snprintf(w->err, sizeof w->err, "query %llu: %s", (unsigned long long)k,
                     tdm_client_err(c) ? tdm_client_errstr(c) : "a wrong answer");
            w->failed = 1;
            break;
        }
        k++;
        t = now_s();
    }
    w->done = k;
    w->busy_s = t - t0;
    tdm_client_free(c);
    return NULL;
}

typedef struct round_result {
    uint64_t requests;
    double seconds, rtt_us, tandemd_us, client_us;
} round_result;

static int run_round(const char *server, long pid, const uint8_t *scene, int clients, double seconds, int ring,
                     round_result *out)
{
    worker *w = calloc((size_t)clients, sizeof *w);
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)clients + 1);
    for (int i = 0; i < clients; i++) {
        w[i] = (worker){.server = server, .scene = scene, .ring = ring, .seconds = seconds, .start = &start};
        pthread_create(&w[i].th, NULL, work, &w[i]);
    }
    pthread_barrier_wait(&start); /* connected: the clock starts */
    double d0 = proc_cpu_s(pid), c0 = self_cpu_s(), t0 = now_s();
    for (int i = 0; i < clients; i++) pthread_join(w[i].th, NULL);
    double d1 = proc_cpu_s(pid), c1 = self_cpu_s(), t1 = now_s();
    pthread_barrier_destroy(&start);
    uint64_t n = 0;
    double busy = 0;
    int failed = 0;
    for (int i = 0; i < clients; i++) {
        if (w[i].failed) {
            fprintf(stderr, "bench_ring_cost: client %d (%s): %s\n", i, ring ? "rings" : "socket", w[i].err);
            failed = 1;
        }
        n += w[i].done;
        busy += w[i].busy_s;
    }
    free(w);
    if (failed || n == 0 || d0 < 0 || d1 < 0) return -1;
    *out = (round_result){n, t1 - t0, 1e6 * busy / (double)n, 1e6 * (d1 - d0) / (double)n, 1e6 * (c1 - c0) / (double)n};
    return 0;
}

static int setup(const char *server, uint8_t scene[TDM_ID_BYTES])
{
    static const float v[24] = {-1, -1, -1, 1, -1, -1, 1, 1, -1, -1, 1, -1, -1, -1, 1, 1, -1, 1, 1, 1, 1, -1, 1, 1};
    static const uint32_t t[36] = {0, 1, 2, 0, 2, 3, 4, 6, 5, 4, 7, 6, 0, 4, 5, 0, 5, 1,
                                   1, 5, 6, 1, 6, 2, 2, 6, 7, 2, 7, 3, 3, 7, 4, 3, 4, 0};
    tdm_client *c = tdm_client_connect(server, 10000);
    uint8_t mesh[TDM_ID_BYTES];
    int created;
    tdm_scene_object o[2] = {{.object_id = 0, .has_pose = 1, .pose = {0, 0, 0, 0, 0, 0, 1}},
                             {.object_id = 1, .movable = 1}};
    int rc = tdm_client_err(c);
    if (!rc) rc = tdm_mesh_put(c, "box", v, 8, t, 12, mesh, &created);
    if (!rc) {
        memcpy(o[0].mesh_id, mesh, TDM_ID_BYTES);
        memcpy(o[1].mesh_id, mesh, TDM_ID_BYTES);
        rc = tdm_scene_put(c, "two boxes", o, 2, NULL, 0, scene, &created, NULL, 0, NULL);
    }
    if (rc) fprintf(stderr, "bench_ring_cost: %s: %s\n", server, tdm_client_errstr(c));
    tdm_client_free(c);
    return rc;
}

int main(int argc, char **argv)
{
    const char *server = NULL;
    long pid = 0;
    int clients = 4, rounds = 3, idle = 0;
    double seconds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--server")) server = argv[i + 1];
        else if (!strcmp(argv[i], "--tandemd-pid")) pid = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--clients")) clients = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds")) seconds = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--idle-rings")) idle = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "bench_ring_cost: unknown flag %s\n", argv[i]);
            return 2;
        }
    }
    if (!server || strncmp(server, "unix:", 5) || pid <= 0 || clients < 1 || clients > 4096 || seconds <= 0 ||
        rounds < 1 || idle < 0 || idle > 100000) {
        fprintf(stderr, "usage: bench_ring_cost --server unix:PATH --tandemd-pid PID [--clients C] [--seconds S] "
                        "[--rounds R] [--idle-rings N]\n");
        return 2;
    }
    uint8_t scene[TDM_ID_BYTES];
    if (setup(server, scene)) return 1;
    tdm_client **idlers = calloc((size_t)idle + 1, sizeof *idlers);
    for (int i = 0; i < idle; i++) {
        idlers[i] = tdm_client_connect(server, 10000);
        int rc = tdm_client_err(idlers[i]);
        if (!rc) rc = tdm_client_ring(idlers[i], 65536, 0);
        if (rc) {
            fprintf(stderr, "bench_ring_cost: idle ring client %d: %s\n", i, tdm_client_errstr(idlers[i]));
            return 1;
        }
    }
    printf("| round | transport | requests | requests/s | round trip (µs) | tandemd CPU a request (µs) | "
           "clients' CPU a request (µs) |\n|---:|---|---:|---:|---:|---:|---:|\n");
    double sum[2][4] = {{0}};
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            int ring = (r + k) % 2; /* alternated: socket first in even rounds */
            round_result x;
            if (run_round(server, pid, scene, clients, seconds, ring, &x)) return 1;
            printf("| %d | %s | %llu | %.0f | %.1f | %.2f | %.2f |\n", r + 1, ring ? "rings" : "socket",
                   (unsigned long long)x.requests, (double)x.requests / x.seconds, x.rtt_us, x.tandemd_us,
                   x.client_us);
            fflush(stdout);
            sum[ring][0] += (double)x.requests / x.seconds;
            sum[ring][1] += x.rtt_us;
            sum[ring][2] += x.tandemd_us;
            sum[ring][3] += x.client_us;
        }
    for (int ring = 0; ring < 2; ring++)
        printf("| mean | %s | | %.0f | %.1f | %.2f | %.2f |\n", ring ? "rings" : "socket", sum[ring][0] / rounds,
               sum[ring][1] / rounds, sum[ring][2] / rounds, sum[ring][3] / rounds);
    for (int i = 0; i < idle; i++) tdm_client_free(idlers[i]);
    free(idlers);
    return 0;
}
