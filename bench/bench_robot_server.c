/* tandemd over loopback with a URDF robot in a MoveIt planning scene: C clients,
 * each with its own connection, keeping K requests in flight for S seconds.
 *
 *   bench_robot_server --server ADDR --urdf URDF [--srdf SRDF] --world SCENE.yaml
 *       (--configs FILE [--mode bool|contacts] | --motions FILE --resolution R)
 *       [--reference FILE] [--clients C] [--batch B] [--inflight K] [--seconds S]
 *
 * The robot and the scene are stored first (tdm_robot_put_files,
 * tdm_robot_scene_put_file), untimed. Configurations mode: each request carries B
 * configurations (tdm_query_configs_send), cycling through the file from the
 * client's own offset. Motions mode: each request carries B motions (a line: 2 J
 * numbers, start then end) at resolution R (tdm_motion_check; one request at a
 * time per client, K is ignored). --reference: the file `tandem check --urdf --out`
 * (or `tandem motions --out`) wrote for the same input; every answer is compared
 * with it (configurations: colliding or not; motions: the first colliding k) and
 * the differences counted. Latency is per request, send to reply. Prints one line:
 *   RESULT clients=C batch=B inflight=K mode=M items=N per_s=X p50_us=Y p99_us=Z mismatches=D
 * items: configurations (or motions) answered. Exit status 1 when a request
 * failed or an answer differed from the reference. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../client/tandem.h"
#include "bench_util.h"

/* Records of `count` numbers a line (blank and '#' lines skipped) into *out. */
static int read_records(const char *path, size_t count, double **out, size_t *n)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    size_t cap = 1024, len = 0, lineno = 0;
    double *v = malloc(cap * count * sizeof *v);
    char line[65536];
    while (v && fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || *p == '\0') continue;
        if (len == cap) {
            double *w = realloc(v, 2 * cap * count * sizeof *v);
            if (!w) break;
            v = w;
            cap *= 2;
        }
        size_t k = 0;
        for (char *end; k < count; k++, p = end) {
            double x = strtod(p, &end);
            if (end == p || !isfinite(x)) break;
            v[len * count + k] = x;
        }
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (k != count || *p) {
            fprintf(stderr, "%s:%zu: want %zu numbers\n", path, lineno, count);
            free(v);
            fclose(f);
            return -1;
        }
        len++;
    }
    fclose(f);
    if (!v) return -1;
    *out = v;
    *n = len;
    return 0;
}

typedef struct shared {
    const char *addr;
    uint8_t scene[TDM_ID_BYTES];
    tdm_query_mode mode;
    int motions;
    double resolution;
    uint32_t joints;
    const double *items; /* joints (configs) or 2 * joints (motions) per item */
    size_t n_items, batch;
    const double *ref;   /* NULL, or per item: colliding (0/1), or the first colliding k */
    int inflight;
    double deadline;
} shared;

typedef struct client_run {
    const shared *sh;
    int index;
    size_t items, mismatches;
    double *lat;
    size_t n_lat, cap_lat;
    int failed;
} client_run;

static void record_latency(client_run *r, double us)
{
    if (r->n_lat == r->cap_lat) {
        r->cap_lat = r->cap_lat ? 2 * r->cap_lat : 4096;
        double *l = realloc(r->lat, r->cap_lat * sizeof *l);
        if (!l) return;
        r->lat = l;
    }
    r->lat[r->n_lat++] = us;
}

static void run_configs(client_run *r, tdm_client *c)
{
    const shared *sh = r->sh;
    int k_max = sh->inflight;
    tdm_query_result **res = calloc((size_t)k_max, sizeof *res);
    double *sent_at = calloc((size_t)k_max, sizeof *sent_at);
    uint64_t *ids = calloc((size_t)k_max, sizeof *ids);
    size_t *first = calloc((size_t)k_max, sizeof *first);
    if (!res || !sent_at || !ids || !first) r->failed = 1;
    for (int k = 0; k < k_max && !r->failed; k++)
        if (!(res[k] = malloc(sh->batch * sizeof **res))) r->failed = 1;
    size_t off = ((size_t)r->index * 7919 * sh->batch) % sh->n_items;
    int outstanding = 0;
    while (!r->failed) {
        int stop = bench_now() >= sh->deadline;
        while (!stop && outstanding < k_max) {
            int slot = 0;
            while (ids[slot]) slot++;
            if (off + sh->batch > sh->n_items) off = 0;
            sent_at[slot] = bench_now();
            first[slot] = off;
            if (tdm_query_configs_send(c, sh->scene, sh->mode, sh->items + off * sh->joints, sh->joints, sh->batch, 0,
                                       res[slot], NULL, &ids[slot]) != 0) {
                fprintf(stderr, "client %d: send: %s\n", r->index, tdm_client_errstr(c));
                r->failed = 1;
                break;
            }
            off += sh->batch;
            outstanding++;
        }
        if (outstanding == 0) break;
        uint64_t id;
        int status;
        if (tdm_query_wait(c, &id, &status) != 0) {
            r->failed = 1;
            break;
        }
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
        if (sh->ref)
            for (size_t i = 0; i < sh->batch; i++)
                r->mismatches += (res[slot][i].colliding != 0) != (sh->ref[first[slot] + i] != 0);
        r->items += sh->batch;
        record_latency(r, 1e6 * (t - sent_at[slot]));
    }
    for (int k = 0; k < k_max && res; k++) free(res[k]);
    free(res);
    free(sent_at);
    free(ids);
    free(first);
}

static void run_motions(client_run *r, tdm_client *c)
{
    const shared *sh = r->sh;
    int64_t *fc = malloc(sh->batch * sizeof *fc);
    if (!fc) r->failed = 1;
    size_t off = ((size_t)r->index * 7919 * sh->batch) % sh->n_items;
    while (!r->failed && bench_now() < sh->deadline) {
        if (off + sh->batch > sh->n_items) off = 0;
        double t0 = bench_now();
        if (tdm_motion_check(c, sh->scene, sh->resolution, sh->items + off * 2 * sh->joints, sh->joints, sh->batch,
                             fc, NULL, NULL) != 0) {
            fprintf(stderr, "client %d: motion check: %s\n", r->index, tdm_client_errstr(c));
            r->failed = 1;
            break;
        }
        record_latency(r, 1e6 * (bench_now() - t0));
        if (sh->ref)
            for (size_t i = 0; i < sh->batch; i++) r->mismatches += (double)fc[i] != sh->ref[off + i];
        r->items += sh->batch;
        off += sh->batch;
    }
    free(fc);
}

static void *client_main(void *arg)
{
    client_run *r = arg;
    tdm_client *c = tdm_client_connect(r->sh->addr, 5000);
    if (!c || tdm_client_err(c)) {
        fprintf(stderr, "client %d: %s\n", r->index, c ? tdm_client_errstr(c) : "out of memory");
        r->failed = 1;
    } else if (r->sh->motions) {
        run_motions(r, c);
    } else {
        run_configs(r, c);
    }
    tdm_client_free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *addr = bench_arg(argc, argv, "--server", NULL), *urdf = bench_arg(argc, argv, "--urdf", NULL),
               *srdf = bench_arg(argc, argv, "--srdf", NULL), *world = bench_arg(argc, argv, "--world", NULL),
               *configs = bench_arg(argc, argv, "--configs", NULL), *motions = bench_arg(argc, argv, "--motions", NULL),
               *ref_path = bench_arg(argc, argv, "--reference", NULL), *mode_s = bench_arg(argc, argv, "--mode", "bool");
    int clients = atoi(bench_arg(argc, argv, "--clients", "1")), inflight = atoi(bench_arg(argc, argv, "--inflight", "2"));
    size_t batch = (size_t)atol(bench_arg(argc, argv, "--batch", "1024"));
    double seconds = atof(bench_arg(argc, argv, "--seconds", "3")), resolution = atof(bench_arg(argc, argv, "--resolution", "0"));
    if (!addr || !urdf || !world || !configs == !motions || (motions && !(resolution > 0)) || clients < 1 ||
        inflight < 1 || batch < 1 || (strcmp(mode_s, "bool") && strcmp(mode_s, "contacts"))) {
        fputs("usage: bench_robot_server --server ADDR --urdf URDF [--srdf SRDF] --world SCENE.yaml\n"
              "       (--configs FILE [--mode bool|contacts] | --motions FILE --resolution R) [--reference FILE]\n"
              "       [--clients C] [--batch B] [--inflight K] [--seconds S]\n",
              stderr);
        return 2;
    }
    tdm_client *c = tdm_client_connect(addr, 5000);
    if (!c || tdm_client_err(c)) {
        fprintf(stderr, "bench_robot_server: %s: %s\n", addr, c ? tdm_client_errstr(c) : "out of memory");
        return 1;
    }
    uint8_t robot_id[TDM_ID_BYTES];
    shared sh = {addr, {0}, strcmp(mode_s, "bool") ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, motions != NULL, resolution,
                 0, NULL, 0, batch, NULL, inflight, 0};
    tdm_robot_info *ri = NULL;
    if (tdm_robot_put_files(c, "bench", urdf, srdf, robot_id, NULL, &ri) != 0 ||
        tdm_robot_scene_put_file(c, "bench", robot_id, world, sh.scene, NULL, NULL) != 0) {
        fprintf(stderr, "bench_robot_server: storing the robot and its scene: %s\n", tdm_client_errstr(c));
        tdm_client_free(c);
        return 1;
    }
    sh.joints = ri->n_joints;
    tdm_robot_info_free(ri);
    tdm_client_free(c);

    double *items = NULL, *ref = NULL;
    size_t n_items = 0, n_ref = 0;
    if (read_records(motions ? motions : configs, (motions ? 2 : 1) * (size_t)sh.joints, &items, &n_items) != 0)
        return 1;
    if (n_items < batch) {
        fprintf(stderr, "bench_robot_server: %zu items, fewer than one batch of %zu\n", n_items, batch);
        return 1;
    }
    if (ref_path) {
        if (read_records(ref_path, 1, &ref, &n_ref) != 0) return 1;
        if (n_ref != n_items) {
            fprintf(stderr, "bench_robot_server: %s has %zu lines for %zu items\n", ref_path, n_ref, n_items);
            return 1;
        }
    }
    sh.items = items;
    sh.n_items = n_items;
    sh.ref = ref;

    client_run *runs = calloc((size_t)clients, sizeof *runs);
    pthread_t *th = calloc((size_t)clients, sizeof *th);
    if (!runs || !th) return 1;
    double t0 = bench_now();
    sh.deadline = t0 + seconds;
    for (int i = 0; i < clients; i++) {
        runs[i] = (client_run){&sh, i, 0, 0, NULL, 0, 0, 0};
        pthread_create(&th[i], NULL, client_main, &runs[i]);
    }
    size_t done = 0, n_lat = 0, mismatches = 0;
    int failed = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(th[i], NULL);
        done += runs[i].items;
        n_lat += runs[i].n_lat;
        mismatches += runs[i].mismatches;
        failed |= runs[i].failed;
    }
    double dt = bench_now() - t0;
    double *lat = malloc((n_lat ? n_lat : 1) * sizeof *lat);
    size_t m = 0;
    for (int i = 0; i < clients; i++) {
        if (lat) memcpy(lat + m, runs[i].lat, runs[i].n_lat * sizeof *lat);
        m += runs[i].n_lat;
        free(runs[i].lat);
    }
    if (lat && n_lat) qsort(lat, n_lat, sizeof *lat, bench_cmp_double);
    printf("RESULT clients=%d batch=%zu inflight=%d mode=%s items=%zu per_s=%.0f p50_us=%.0f p99_us=%.0f "
           "mismatches=%zu\n",
           clients, batch, motions ? 1 : inflight, motions ? "motions" : mode_s, done, (double)done / dt,
           lat && n_lat ? lat[n_lat / 2] : 0, lat && n_lat ? lat[(size_t)(0.99 * (double)(n_lat - 1))] : 0,
           mismatches);
    free(lat);
    free(runs);
    free(th);
    free(items);
    free(ref);
    return failed || mismatches ? 1 : 0;
}
