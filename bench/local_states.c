/* A planner's lone configuration, asked of tandemd and of libtandem's local engine, side by
 * side in one run (issue 13: what `ompl_plan --local-states` saves a planner).
 *
 *   bench_local_states --server ADDR --urdf URDF [--srdf SRDF] [--configs N] [--ephemeral 0|1]
 *                      WORLD.yaml...
 *
 * Stores the robot (tdm_robot_put_files) and each world (tdm_robot_scene_put_file) in tandemd,
 * loads the same files into the local engine (tdm_local_robot_load, tdm_local_scene_create_file)
 * and checks that the copies' ids are the stored ones. Then, per world, N configurations uniform in
 * the joint limits (seed 1), each asked alone, alternately of tandemd (tdm_query_configs, one
 * configuration, bool mode) and of the local engine (tdm_local_query_configs), timed one by one
 * on this thread. Prints one Markdown table row per world and one over all of them: configurations,
 * colliding, each side's median and 90th percentile in microseconds, the medians' ratio, and the
 * answers that differ (colliding or not; expected 0: the same scene built by the same code). Exits
 * 1 when an answer differs or an id is not the stored one. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tandem/tandem.h>

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_local_states: %s: %s\n", what, why);
    exit(1);
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median and the 90th percentile of v[0..n), sorted in place */
static void quantiles(double *v, size_t n, double *median, double *p90)
{
    qsort(v, n, sizeof *v, cmp_double);
    *median = n ? v[(size_t)(0.5 * (double)(n - 1) + 0.5)] : 0;
    *p90 = n ? v[(size_t)(0.9 * (double)(n - 1) + 0.5)] : 0;
}

/* splitmix64, for reproducible configurations */
static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    const char *server = NULL, *urdf = NULL, *srdf = NULL;
    long n = 2000;
    int ephemeral = 1;
    int first_world = argc;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-') {
            first_world = i;
            break;
        }
        if (i + 1 >= argc) die(argv[i], "needs a value");
        const char *v = argv[++i];
        if (!strcmp(argv[i - 1], "--server")) server = v;
        else if (!strcmp(argv[i - 1], "--urdf")) urdf = v;
        else if (!strcmp(argv[i - 1], "--srdf")) srdf = v;
        else if (!strcmp(argv[i - 1], "--configs")) n = strtol(v, NULL, 10);
        else if (!strcmp(argv[i - 1], "--ephemeral")) ephemeral = atoi(v) != 0;
        else die(argv[i - 1], "unknown flag");
    }
    if (!server || !urdf || first_world >= argc || n < 1 || n > 10000000)
        die("usage", "bench_local_states --server ADDR --urdf URDF [--srdf SRDF] [--configs N] [--ephemeral 0|1] "
                     "WORLD.yaml...");
    tdm_client *c = tdm_client_connect(server, 10000);
    if (!c || tdm_client_err(c)) die(server, c ? tdm_client_errstr(c) : "out of memory");
    tdm_client_set_ephemeral_scenes(c, ephemeral);
    uint8_t rid[TDM_ID_BYTES], lid[TDM_ID_BYTES];
    tdm_robot_info *info = NULL;
    if (tdm_robot_put_files(c, NULL, urdf, srdf, rid, NULL, &info)) die(urdf, tdm_client_errstr(c));
    tdm_local *l = tdm_local_create();
    tdm_local_robot *lr = NULL;
    if (!l) die("tdm_local_create", "out of memory");
    if (tdm_local_robot_load(l, urdf, srdf, &lr)) die(urdf, tdm_local_errstr(l));
    tdm_local_robot_id(lr, lid);
    if (memcmp(lid, rid, TDM_ID_BYTES)) die(urdf, "the local robot's id is not the stored robot's");
    const uint32_t j = info->n_joints;
    double *q = malloc(sizeof *q * j), *t_remote = malloc(sizeof(double) * (size_t)n),
           *t_local = malloc(sizeof(double) * (size_t)n);
    size_t all_n = (size_t)n * (size_t)(argc - first_world);
    double *all_remote = malloc(sizeof(double) * all_n), *all_local = malloc(sizeof(double) * all_n);
    if (!q || !t_remote || !t_local || !all_remote || !all_local) die("memory", "out of memory");
    uint64_t seed = 1;
    size_t at = 0, total_colliding = 0, total_differ = 0;
    printf("| world | configurations | colliding | tandemd median µs | p90 | local median µs | p90 | tandemd / local "
           "| differing answers |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int w = first_world; w < argc; w++) {
        uint8_t sid[TDM_ID_BYTES];
        if (tdm_robot_scene_put_file(c, NULL, rid, argv[w], sid, NULL, NULL)) die(argv[w], tdm_client_errstr(c));
        tdm_local_scene *ls = NULL;
        if (tdm_local_scene_create_file(l, lr, argv[w], &ls)) die(argv[w], tdm_local_errstr(l));
        tdm_local_scene_id(ls, ephemeral, lid);
        if (memcmp(lid, sid, TDM_ID_BYTES)) die(argv[w], "the local scene's id is not the stored scene's");
        size_t colliding = 0, differ = 0;
        for (long i = 0; i < n; i++) {
            for (uint32_t k = 0; k < j; k++) {
                double u = (double)(next_u64(&seed) >> 11) * 0x1.0p-53;
                q[k] = info->joints[k].lower + u * (info->joints[k].upper - info->joints[k].lower);
            }
            tdm_query_result a, b;
            double t0 = now_us();
            if (tdm_query_configs(c, sid, TDM_QUERY_BOOL, q, j, 1, 0, &a, NULL)) die(argv[w], tdm_client_errstr(c));
            double t1 = now_us();
            if (tdm_local_query_configs(l, ls, TDM_QUERY_BOOL, q, j, 1, 0, &b)) die(argv[w], tdm_local_errstr(l));
            double t2 = now_us();
            t_remote[i] = all_remote[at] = t1 - t0;
            t_local[i] = all_local[at] = t2 - t1;
            at++;
            colliding += a.colliding != 0;
            differ += (a.colliding != 0) != (b.colliding != 0);
        }
        double rm, r9, lm, l9;
        quantiles(t_remote, (size_t)n, &rm, &r9);
        quantiles(t_local, (size_t)n, &lm, &l9);
        const char *name = argv[w]; /* its last two path components: a scenario folder and its file */
        for (const char *p = argv[w], *last = NULL; *p; p++)
            if (*p == '/') name = last ? last + 1 : argv[w], last = p;
        printf("| %s | %ld | %zu | %.1f | %.1f | %.1f | %.1f | %.1f× | %zu |\n", name, n, colliding,
               rm, r9, lm, l9, rm / lm, differ);
        total_colliding += colliding;
        total_differ += differ;
        tdm_local_scene_free(ls);
        tdm_scene_delete(c, sid);
    }
    double rm, r9, lm, l9;
    quantiles(all_remote, at, &rm, &r9);
    quantiles(all_local, at, &lm, &l9);
    printf("| all | %zu | %zu | %.1f | %.1f | %.1f | %.1f | %.1f× | %zu |\n", at, total_colliding, rm, r9, lm, l9,
           rm / lm, total_differ);
    free(q);
    free(t_remote);
    free(t_local);
    free(all_remote);
    free(all_local);
    tdm_robot_info_free(info);
    tdm_local_robot_free(lr);
    tdm_local_free(l);
    tdm_client_free(c);
    return total_differ ? 1 : 0;
}
