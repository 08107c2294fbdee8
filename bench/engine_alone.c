#include "engine_alone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../workpile/sched.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double tdm_bench_engine_alone(const char *engine_s, int threads, const tdm_mesh *me, const tdm_mesh *mr,
                              const tdm_pose *p, size_t n, int contacts)
{
    tdm_mode mode = contacts ? TDM_MODE_CONTACTS : TDM_MODE_BOOL;
    tdm_bvh *a, *b;
    tdm_bvh_build(me, &a);
    tdm_bvh_build(mr, &b);
    tdm_sched_config ec = tdm_sched_config_default();
    ec.threads = threads;
    if (!strcmp(engine_s, "cpu")) ec.kind = TDM_BACKEND_CPU;
    else if (!strcmp(engine_s, "gpu")) ec.kind = TDM_BACKEND_GPU;
    else if (!strcmp(engine_s, "hybrid")) ec.kind = TDM_BACKEND_HYBRID;
    tdm_sched *eng;
    char why[256];
    if (tdm_sched_create(&ec, &eng, why, sizeof why) != TDM_OK) {
        fprintf(stderr, "bench_server: engine %s: %s\n", engine_s, why);
        return -1;
    }
    if (tdm_sched_mesh_add(eng, a) != TDM_OK || tdm_sched_mesh_add(eng, b) != TDM_OK) {
        fprintf(stderr, "bench_server: uploading the meshes failed\n");
        return -1;
    }
    tdm_scene_obj so[2] = {{0, a, 0, tdm_xform_identity()}, {1, b, 1, tdm_xform_identity()}};
    tdm_scene *scene;
    tdm_scene_error serr;
    if (tdm_scene_create(so, 2, NULL, 0, &scene, &serr) != TDM_OK) return -1;
    size_t eb = n < ((size_t)1 << 20) ? n : (size_t)1 << 20;
    tdm_xform *xf = malloc(n * sizeof *xf);
    tdm_sched_query *qs = malloc(eb * sizeof *qs);
    tdm_sched_result *qr = malloc(eb * sizeof *qr);
    for (size_t i = 0; i < n; i++) xf[i] = tdm_xform_from_pose(p[i].t, p[i].q);
    double engine_qps = 0;
    for (int rep = 0; rep < 2; rep++) { /* the first pass warms the engine: the best is kept */
        double t0 = now();
        for (size_t lo = 0; lo < n; lo += eb) {
            size_t m = n - lo < eb ? n - lo : eb;
            for (size_t i = 0; i < m; i++) qs[i] = (tdm_sched_query){scene, &xf[lo + i], mode, 1000000, NULL, NULL};
            tdm_sched_run(eng, qs, m, qr);
        }
        double q = (double)n / (now() - t0);
        if (q > engine_qps) engine_qps = q;
    }
    fprintf(stderr, "bench_server: engine alone: %s: %.0f queries/s\n", tdm_sched_detail(eng), engine_qps);
    tdm_scene_destroy(scene);
    tdm_sched_mesh_remove(eng, a);
    tdm_sched_mesh_remove(eng, b);
    tdm_sched_destroy(eng);
    free(xf);
    free(qs);
    free(qr);
    tdm_bvh_free(a);
    tdm_bvh_free(b);
    return engine_qps;
}
