/* Calibration (calibrate.h). */
#include "calibrate.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

/* A UV sphere of radius 1: 2 * rings * (segments - 1) triangles. */
static int sphere(int rings, int segs, tdm_bvh **out)
{
    uint32_t nv = (uint32_t)((rings + 1) * segs), nt = (uint32_t)(2 * rings * segs);
    float *v = malloc(3 * sizeof *v * nv);
    uint32_t *t = malloc(3 * sizeof *t * nt);
    int rc = TDM_ENOMEM;
    tdm_mesh *m = NULL;
    if (!v || !t) goto done;
    for (int i = 0; i <= rings; i++)
        for (int j = 0; j < segs; j++) {
            double th = 3.141592653589793 * i / rings, ph = 2 * 3.141592653589793 * j / segs;
            float *p = &v[3 * (i * segs + j)];
            p[0] = (float)(sin(th) * cos(ph));
            p[1] = (float)(sin(th) * sin(ph));
            p[2] = (float)cos(th);
        }
    nt = 0;
    for (int i = 0; i < rings; i++)
        for (int j = 0; j < segs; j++) {
            uint32_t a = (uint32_t)(i * segs + j), b = (uint32_t)(i * segs + (j + 1) % segs);
            uint32_t c = a + (uint32_t)segs, d = b + (uint32_t)segs;
            if (i > 0) { t[3 * nt] = a; t[3 * nt + 1] = b; t[3 * nt + 2] = d; nt++; }
            if (i < rings - 1) { t[3 * nt] = a; t[3 * nt + 1] = d; t[3 * nt + 2] = c; nt++; }
        }
    rc = tdm_mesh_create(v, nv, t, nt, NULL, &m, NULL, 0);
    if (rc == TDM_OK) rc = tdm_bvh_build(m, out);
done:
    tdm_mesh_free(m);
    free(v);
    free(t);
    return rc;
}

/* A deterministic stream of numbers in [0, 1). */
static double unit(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct bench {
    tdm_backend *cpu, *gpu;
    int lane;
    tdm_task *tasks;
    tdm_collide_result *res;
} bench;

/* One CPU or GPU run of the first n tasks, best of `reps`; < 0 on a GPU error. */
static double time_run(const bench *b, int gpu, size_t n, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        tdm_backend *e = gpu ? b->gpu : b->cpu;
        tdm_task_list list = tdm_task_list_array(b->tasks, n);
        double t0 = now_s();
        if (e->ops->run(e, b->lane, &list, b->res) != TDM_OK) return -1;
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

int tdm_calibrate(tdm_backend *cpu, tdm_backend *gpu, int lane, tdm_cost_figures *out)
{
    enum { N_BIG = TDM_CALIBRATE_TASKS, N_CPU = 8192 };
    tdm_bvh *s = NULL;
    void *gm = NULL;
    bench b = {cpu, gpu, lane, malloc(N_BIG * sizeof(tdm_task)), malloc(N_BIG * sizeof(tdm_collide_result))};
    int rc = b.tasks && b.res ? TDM_OK : TDM_ENOMEM;
    if (rc == TDM_OK) rc = sphere(24, 48, &s);
    if (rc == TDM_OK) rc = gpu->ops->mesh_add(gpu, lane, s, &gm);
    if (rc == TDM_OK) {
        uint64_t seed = 0x5eedca11b4a7e5ull;
        for (size_t i = 0; i < N_BIG; i++) {
            double z = 2 * unit(&seed) - 1, ph = 2 * 3.141592653589793 * unit(&seed), d = 1.6 + 0.8 * unit(&seed);
            double rxy = sqrt(1 - z * z);
            tdm_quat q = {unit(&seed) - 0.5, unit(&seed) - 0.5, unit(&seed) - 0.5, unit(&seed) - 0.5};
            double qn = sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
            q.x /= qn; q.y /= qn; q.z /= qn; q.w /= qn;
            tdm_xform x = tdm_xform_from_pose(tdm_d3(d * rxy * cos(ph), d * rxy * sin(ph), d * z), q);
            b.tasks[i] = (tdm_task){.a = s, .b = s, .ga = gm, .gb = gm, .b_in_a = x, .mode = TDM_MODE_BOOL,
                                    .max_pairs = 1, .pairs = NULL};
        }
        double t_cpu = time_run(&b, 0, N_CPU, 3);
        double t_cpu1 = time_run(&b, 0, 32, 5); /* wakes the pool: mostly fixed cost */
        double t_one = time_run(&b, 1, 1, 5);
        double t_big = time_run(&b, 1, N_BIG, 3);
        if (t_one < 0 || t_big < 0) {
            rc = TDM_EGPU;
        } else {
            out->c_cpu = t_cpu / N_CPU;
            out->c_off = t_cpu1 > 32 * out->c_cpu ? t_cpu1 - 32 * out->c_cpu : 0;
            out->g_off = t_one;
            out->c_gpu = (t_big > t_one ? t_big - t_one : t_big) / N_BIG;
        }
    }
    if (gm) gpu->ops->mesh_free(gpu, lane, gm);
    tdm_bvh_free(s);
    free(b.tasks);
    free(b.res);
    return rc;
}
