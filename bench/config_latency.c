/* How long one device run of a few robot configurations takes (issue 13: what a
 * planner's request waits for inside tandemd), without the daemon: robot scenes of
 * one robot on several worlds, batches of `groups` scenes x `per` configurations
 * run through tdm_sched_run_configs_groups_device (what the pooler runs), by T
 * threads at once (the pooler's lanes).
 *
 *   bench_config_latency --urdf URDF [--srdf SRDF] [--engine gpu] [--threads T] [--lanes L]
 *                        [--repeat R] [--shapes G:P,G:P...] [--verify] [--express B] WORLD.yaml...
 *
 * --express B runs each group through the express ring instead (workpile/sched.h,
 * tdm_sched_express_*: B resident blocks; groups of at most 64 configurations), each
 * thread publishing its groups and polling for their answers; a group given back (it
 * outgrew a block) runs the pooled way and is counted on stderr.
 *
 * --verify also answers every configuration on the CPU engine (its own scheduler,
 * the host's path, scene by scene) and counts the answers that differ (colliding
 * or the pair named), the exactness check of the pooled device path on real
 * robots and worlds; its time is not counted in the latencies.
 *
 * Prints, per shape, one Markdown table row: groups, configurations per group,
 * threads, runs, the run's median, 10th and 90th percentile in microseconds,
 * runs per second over all threads, and per run: tasks, runs that went in one
 * launch (block runs; TDM_GPU_BLOCK_CONFIG_ENTRIES moves that threshold), and the
 * host's time preparing the run's robot scenes (tdm_sched_stats config_prep_seconds)
 * and starting it (config_start_seconds), and its robot scenes whose programs the lane
 * held (gpu/gpu.h, "resident programs"; TDM_GPU_PROGRAM_CACHE_KB=0: none). Random
 * configurations uniform in the joint limits (seed 1). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "geom/primitive.h"
#include "robot/planning_scene.h"
#include "robot/robot_scene.h"
#include "robot/urdf.h"
#include "tools/io.h"
#include "workpile/sched.h"

#define MAX_WORLDS 4096
#define MAX_THREADS 16
#define MAX_PER 4096 /* configurations per group */

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_config_latency: %s: %s\n", what, why);
    exit(1);
}

static int load_mesh(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    (void)ctx;
    return tdm_mesh_load_file(path, TDM_ORIGIN_RAW, out, err, errlen);
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct job {
    tdm_sched *e;
    tdm_robot_scene **rs;
    int n_worlds, groups, per, repeat, offset;
    const double *q; /* a pool of configurations */
    size_t n_pool, J;
    double *lat;     /* repeat latencies, us */
    tdm_sched *cpu;  /* --verify: the reference, else NULL */
    uint64_t checked, colliding, differ;
    int rc;
    int express;     /* --express: through the ring */
    uint64_t given_back;
} job;

/* The groups through the express ring: published, then polled until every one is in (a
 * group given back runs the pooled way). */
static int run_express(job *j, const tdm_sched_configs_group *g, const double *q, tdm_sched_result *res)
{
    tdm_sched_express x[64];
    int done[64], left = j->groups, rc;
    for (int k = 0; k < j->groups; k++) {
        const double *qk = q + (size_t)k * (size_t)j->per * j->J;
        done[k] = 0;
        while ((rc = tdm_sched_express_submit(j->e, g[k].scene, g[k].kin, qk, (size_t)j->per, TDM_MODE_BOOL, 1,
                                              &x[k])) == TDM_EAGAIN)
            tdm_sched_express_keep(j->e);
        if (rc != TDM_OK) return rc;
    }
    while (left) {
        tdm_sched_express_keep(j->e);
        for (int k = 0; k < j->groups; k++) {
            if (done[k]) continue;
            tdm_sched_result *rk = res + (size_t)k * (size_t)j->per;
            rc = tdm_sched_express_poll(j->e, &x[k], g[k].scene, TDM_MODE_BOOL, rk);
            if (rc == 0) continue;
            if (rc == TDM_EAGAIN) {
                j->given_back++;
                rc = tdm_sched_run_configs_groups_device(j->e, &g[k], 1, TDM_MODE_BOOL, 1,
                                                         q + (size_t)k * (size_t)j->per * j->J, rk);
            }
            if (rc < 0) return rc;
            done[k] = 1;
            left--;
        }
    }
    return TDM_OK;
}

static void *run(void *arg)
{
    job *j = arg;
    size_t n = (size_t)j->groups * (size_t)j->per;
    tdm_sched_configs_group *g = malloc(sizeof *g * (size_t)j->groups);
    tdm_sched_result *res = malloc(sizeof *res * n);
    double *q = malloc(sizeof *q * n * j->J);
    if (!g || !res || !q) {
        j->rc = TDM_ENOMEM;
        return NULL;
    }
    size_t at = (size_t)j->offset * 7919;
    for (int r = 0; r < j->repeat && !j->rc; r++) {
        for (int k = 0; k < j->groups; k++) {
            tdm_robot_scene *rs = j->rs[(j->offset + r + k) % j->n_worlds];
            g[k] = (tdm_sched_configs_group){rs->scene, &rs->kin, (size_t)j->per};
        }
        for (size_t i = 0; i < n; i++, at++) memcpy(q + i * j->J, j->q + (at % j->n_pool) * j->J, j->J * sizeof *q);
        double t0 = now_us();
        j->rc = j->express ? run_express(j, g, q, res)
                           : tdm_sched_run_configs_groups_device(j->e, g, (size_t)j->groups, TDM_MODE_BOOL, 1, q, res);
        j->lat[r] = now_us() - t0;
        for (int k = 0; j->cpu && !j->rc && k < j->groups; k++) {
            tdm_sched_result want[MAX_PER];
            tdm_sched_query proto = {g[k].scene, NULL, TDM_MODE_BOOL, 1, NULL, NULL};
            size_t at0 = (size_t)k * (size_t)j->per;
            j->rc = tdm_sched_run_configs(j->cpu, &proto, g[k].kin, q + at0 * j->J, (size_t)j->per, want);
            for (int i = 0; !j->rc && i < j->per; i++) {
                const tdm_sched_result *a = &res[at0 + (size_t)i], *b = &want[i];
                j->checked++;
                j->colliding += b->colliding != 0;
                j->differ += a->colliding != b->colliding ||
                             (b->colliding && (a->object_a != b->object_a || a->object_b != b->object_b));
            }
        }
    }
    free(g);
    free(res);
    free(q);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *urdf = NULL, *srdf = NULL, *engine = "gpu", *shapes = "1:1,4:2,8:8,8:32,32:10,16:64";
    int threads = 1, lanes = 0, repeat = 2000, n_worlds = 0, verify = 0, express = 0;
    static const char *worlds[MAX_WORLDS];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--urdf") && v) urdf = v, i++;
        else if (!strcmp(a, "--srdf") && v) srdf = v, i++;
        else if (!strcmp(a, "--engine") && v) engine = v, i++;
        else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
        else if (!strcmp(a, "--lanes") && v) lanes = atoi(v), i++;
        else if (!strcmp(a, "--repeat") && v) repeat = atoi(v), i++;
        else if (!strcmp(a, "--shapes") && v) shapes = v, i++;
        else if (!strcmp(a, "--verify")) verify = 1;
        else if (!strcmp(a, "--express") && v) express = atoi(v), i++;
        else if (a[0] != '-' && n_worlds < MAX_WORLDS) worlds[n_worlds++] = a;
        else die("usage", "--urdf URDF [--srdf SRDF] [--engine gpu] [--threads T] [--lanes L] [--repeat R] "
                          "[--shapes G:P,...] [--verify] [--express B] WORLD.yaml...");
    }
    if (!urdf || !n_worlds || threads < 1 || threads > MAX_THREADS || repeat < 10 || express < 0)
        die("usage", "see the top of the file");
    char err[512];
    tdm_robot *robot;
    if (tdm_robot_load(urdf, srdf, &robot, err, sizeof err)) die(urdf, err);
    tdm_sched_config c = tdm_sched_config_default();
    if (tdm_backend_parse(engine, &c.kind) != TDM_OK) die("--engine", engine);
    c.calibrate = 0;
    if (lanes) c.lanes = lanes;
    tdm_sched *e;
    if (tdm_sched_create(&c, &e, err, sizeof err)) die("engine", err);
    if (express && tdm_sched_express_start(e, (uint32_t)express) != TDM_OK) die("--express", "the ring did not start");
    /* the robot's element trees built once and shared by its scenes, as tandemd does */
    tdm_robot_elems *el;
    if (tdm_robot_elems_create(robot, load_mesh, NULL, TDM_PRIMITIVE_TOLERANCE, &el, err, sizeof err)) die(urdf, err);
    tdm_sched *cpu = NULL;
    if (verify) {
        tdm_sched_config cc = tdm_sched_config_default();
        cc.kind = TDM_BACKEND_CPU;
        cc.calibrate = 0;
        if (tdm_sched_create(&cc, &cpu, err, sizeof err)) die("cpu engine", err);
    }
    static tdm_robot_scene *rs[MAX_WORLDS];
    for (int w = 0; w < n_worlds; w++) {
        tdm_planning_scene *ps;
        if (tdm_planning_scene_read(worlds[w], &ps, err, sizeof err)) die(worlds[w], err);
        if (tdm_robot_scene_create_shared(el, ps, &rs[w], err, sizeof err)) die(worlds[w], err);
        tdm_planning_scene_free(ps);
        size_t added = 0;
        const tdm_bvh *const *bv = (const tdm_bvh *const *)rs[w]->bvhs;
        if (tdm_sched_meshes_add(e, bv, rs[w]->n_objects, &added)) die(worlds[w], "upload failed");
        if (cpu && tdm_sched_meshes_add(cpu, bv, rs[w]->n_objects, &added)) die(worlds[w], "cpu engine");
    }
    size_t J = robot->n_active, n_pool = 1 << 16;
    double *pool = malloc(sizeof *pool * n_pool * J);
    uint64_t x = 1;
    for (size_t i = 0; i < n_pool * J; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const tdm_robot_joint *jt = &robot->joints[robot->active[i % J]];
        pool[i] = jt->lower + (jt->upper - jt->lower) * (double)(x >> 11) / 9007199254740992.0;
    }
    printf("| groups | per group | threads | runs | median us | p10 us | p90 us | runs/s | tasks/run | one launch/run "
           "| host prep us/run | host start us/run | resident programs/run |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const char *s = shapes; *s;) {
        int G = 0, P = 0;
        if (sscanf(s, "%d:%d", &G, &P) != 2 || G < 1 || P < 1 || P > MAX_PER ||
            (express && (G > 64 || P > (int)TDM_SCHED_EXPRESS_MAX)))
            die("--shapes", s);
        const char *comma = strchr(s, ',');
        s = comma ? comma + 1 : s + strlen(s);
        job jobs[MAX_THREADS];
        pthread_t th[MAX_THREADS];
        int warm = repeat / 10;
        for (int pass = 0; pass < 2; pass++) { /* a warm-up pass, then the timed one */
            tdm_sched_stats before, after;
            tdm_sched_get_stats(e, &before);
            double t0 = now_us();
            for (int t = 0; t < threads; t++) {
                jobs[t] = (job){e, rs, n_worlds, G, P, pass ? repeat : warm, t, pool, n_pool, J, NULL, cpu, 0, 0, 0, 0,
                                express, 0};
                jobs[t].lat = malloc(sizeof(double) * (size_t)jobs[t].repeat);
                pthread_create(&th[t], NULL, run, &jobs[t]);
            }
            for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
            double wall = now_us() - t0;
            tdm_sched_get_stats(e, &after);
            size_t n = 0;
            uint64_t checked = 0, colliding = 0, differ = 0, given_back = 0;
            double *all = malloc(sizeof *all * (size_t)threads * (size_t)repeat);
            for (int t = 0; t < threads; t++) {
                if (jobs[t].rc) die("run", tdm_strerror(jobs[t].rc));
                memcpy(all + n, jobs[t].lat, sizeof *all * (size_t)jobs[t].repeat);
                checked += jobs[t].checked, colliding += jobs[t].colliding, differ += jobs[t].differ;
                given_back += jobs[t].given_back;
                n += (size_t)jobs[t].repeat;
                free(jobs[t].lat);
            }
            if (pass) {
                qsort(all, n, sizeof *all, cmp_double);
                double runs = (double)(after.runs - before.runs);
                if (runs < 1) runs = 1; /* express: no engine run */
                printf("| %d | %d | %d | %zu | %.1f | %.1f | %.1f | %.0f | %.0f | %.2f | %.1f | %.1f | %.2f |\n", G, P,
                       threads, n, all[n / 2], all[n / 10], all[n * 9 / 10], 1e6 * (double)n / wall,
                       (double)(after.gpu_tasks - before.gpu_tasks) / runs,
                       (double)(after.gpu_small_runs - before.gpu_small_runs) / runs,
                       1e6 * (after.config_prep_seconds - before.config_prep_seconds) / runs,
                       1e6 * (after.config_start_seconds - before.config_start_seconds) / runs,
                       (double)(after.gpu_programs_reused - before.gpu_programs_reused) / runs);
                if (express)
                    fprintf(stderr, "express %d:%d: %llu configurations answered, %llu given back (groups %llu), "
                            "%llu launches\n", G, P, (unsigned long long)(after.express_configs - before.express_configs),
                            (unsigned long long)(after.express_overflows - before.express_overflows),
                            (unsigned long long)given_back,
                            (unsigned long long)(after.express_launches - before.express_launches));
                if (cpu)
                    fprintf(stderr, "verify %d:%d: %llu configurations against the CPU engine, %llu colliding, "
                            "%llu differ\n", G, P, (unsigned long long)checked, (unsigned long long)colliding,
                            (unsigned long long)differ);
                fflush(stdout);
            }
            free(all);
        }
    }
    for (int w = 0; w < n_worlds; w++) {
        for (uint32_t i = 0; i < rs[w]->n_objects; i++) {
            tdm_sched_mesh_remove(e, rs[w]->bvhs[i]);
            if (cpu) tdm_sched_mesh_remove(cpu, rs[w]->bvhs[i]);
        }
        tdm_robot_scene_destroy(rs[w]);
    }
    tdm_sched_destroy(e);
    if (cpu) tdm_sched_destroy(cpu);
    tdm_robot_elems_destroy(el);
    tdm_robot_free(robot);
    free(pool);
    return 0;
}
