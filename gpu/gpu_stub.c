/* gpu.h, hybrid.h and gpu_geom.h for builds without CUDA: there is no GPU to run on, and
 * every entry point says so with TDM_ENODEV. */
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "hybrid.h"
#include "gpu_geom.h"

static const char no_cuda[] = "this build has no CUDA support (configured with TANDEM_CUDA=OFF or no nvcc)";

int tdm_gpu_available(const char **why)
{
    if (why) *why = no_cuda;
    return 0;
}

int tdm_gpu_tri_tri_batch(const double *p, const double *q, size_t n, uint8_t *out)
{
    (void)p; (void)q; (void)n; (void)out;
    return TDM_ENODEV;
}

tdm_gpu_config tdm_gpu_config_default(void)
{
    /* designated, so that fields added to the config read as 0 (their default) here */
    tdm_gpu_config c = {.device = 0, .memory_budget = 0, .frontier_pairs = 1u << 26, .streams = 2, .chunk_tasks = 0,
                         .traversal = TDM_GPU_TRAVERSE_PAIRS};
    return c;
}

int tdm_gpu_create(const tdm_gpu_config *cfg, tdm_gpu **out, const char **why)
{
    (void)cfg;
    *out = NULL;
    if (why) *why = no_cuda;
    return TDM_ENODEV;
}

void tdm_gpu_destroy(tdm_gpu *g) { (void)g; }

int tdm_gpu_create_lane(tdm_gpu *g, tdm_gpu **out)
{
    (void)g;
    *out = NULL;
    return TDM_ENODEV;
}

int tdm_gpu_mesh_upload(tdm_gpu *g, const tdm_bvh *bvh, tdm_gpu_mesh **out)
{
    (void)g; (void)bvh;
    *out = NULL;
    return TDM_ENODEV;
}

void tdm_gpu_mesh_free(tdm_gpu *g, tdm_gpu_mesh *m) { (void)g; (void)m; }

int tdm_gpu_run(tdm_gpu *g, const tdm_gpu_task *tasks, size_t n, tdm_collide_result *results)
{
    (void)g; (void)tasks; (void)n; (void)results;
    return TDM_ENODEV;
}

int tdm_gpu_run_fed(tdm_gpu *g, tdm_gpu_task *tasks, size_t n, tdm_collide_result *results,
                    int (*feed)(void *arg, size_t lo, size_t hi), void *arg)
{
    (void)g; (void)tasks; (void)n; (void)results; (void)feed; (void)arg;
    return TDM_ENODEV;
}

int tdm_gpu_prepare(tdm_gpu *g, size_t max_tasks)
{
    (void)g; (void)max_tasks;
    return TDM_ENODEV;
}

void tdm_gpu_get_stats(const tdm_gpu *g, tdm_gpu_stats *s)
{
    (void)g;
    memset(s, 0, sizeof *s);
}

tdm_hybrid_config tdm_hybrid_config_default(void)
{
    tdm_hybrid_config c = {.threads = 0, .streams = 16, .workpile_pairs = 65536};
    return c;
}

int tdm_hybrid_create(tdm_gpu *g, const tdm_hybrid_config *cfg, tdm_hybrid **out)
{
    (void)g; (void)cfg;
    *out = NULL;
    return TDM_ENODEV;
}

void tdm_hybrid_destroy(tdm_hybrid *h) { (void)h; }

int tdm_hybrid_run(tdm_hybrid *h, const tdm_hybrid_task *tasks, size_t n, tdm_collide_result *results)
{
    (void)h; (void)tasks; (void)n; (void)results;
    return TDM_ENODEV;
}

void tdm_hybrid_get_stats(const tdm_hybrid *h, tdm_hybrid_stats *s)
{
    (void)h;
    memset(s, 0, sizeof *s);
}
