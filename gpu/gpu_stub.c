/* gpu.h, hybrid.h and gpu_geom.h for builds without CUDA: there is no GPU to run on, and
 * every entry point says so with TDM_ENODEV. */
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "hybrid.h"
#include "gpu_geom.h"
#include "internal.h"

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
    tdm_gpu_config c = {.device = 0, .memory_budget = 0, .frontier_pairs = 1u << 26, .streams = 2,
                         .traversal = TDM_GPU_TRAVERSE_PAIRS, .small_tasks = TDM_GPU_SMALL_TASKS,
                         .small_budget = TDM_GPU_SMALL_BUDGET, .program_cache = TDM_GPU_PROGRAM_CACHE};
    return c;
}

int tdm_gpu_device_count(void) { return 0; }

uint64_t tdm_gpu_device_memory(int device)
{
    (void)device;
    return 0;
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
void tdm_gpu_mesh_discard(tdm_gpu *g, tdm_gpu_mesh *m) { (void)g; (void)m; }
uint32_t tdm_gpu_mesh_triangles(const tdm_gpu_mesh *m) { (void)m; return 0; }

int tdm_gpu_prepare(tdm_gpu *g, size_t tasks_per_slot)
{
    (void)g; (void)tasks_per_slot;
    return TDM_ENODEV;
}

/* Without CUDA no tdm_gpu exists, so nothing below is ever called with one. */
int tdm_gpu_begin(tdm_gpu *g) { (void)g; return TDM_ENODEV; }
int tdm_gpu_slots(const tdm_gpu *g) { (void)g; return 1; }
uint64_t tdm_gpu_slot_max_tasks(const tdm_gpu *g) { (void)g; return 1; }

void tdm_gpu_pair_of(const tdm_gpu *g, const tdm_gpu_mesh *a, const tdm_gpu_mesh *b, tdm_gpu_pair *out)
{
    (void)g; (void)a; (void)b;
    memset(out, 0, sizeof *out);
}

int tdm_gpu_slot_buffers(tdm_gpu *g, int k, size_t n, tdm_gpu_input **in, tdm_gpu_pair **pairs)
{
    (void)g; (void)k; (void)n;
    *in = NULL;
    *pairs = NULL;
    return TDM_ENODEV;
}

int tdm_gpu_slot_start(tdm_gpu *g, int k, size_t n, const size_t (*runs)[2], int n_runs)
{
    (void)g; (void)k; (void)n; (void)runs; (void)n_runs;
    return TDM_ENODEV;
}

int tdm_gpu_slot_step(tdm_gpu *g, int k) { (void)g; (void)k; return TDM_ENODEV; }
int tdm_gpu_slot_ready(tdm_gpu *g, int k) { (void)g; (void)k; return TDM_ENODEV; }
const tdm_gpu_result *tdm_gpu_slot_results(const tdm_gpu *g, int k) { (void)g; (void)k; return NULL; }
int tdm_gpu_grow(tdm_gpu *g) { (void)g; return TDM_ENODEV; }
size_t tdm_gpu_configs_max(const tdm_gpu *g, uint32_t n_q, uint32_t n_checks)
{
    (void)g, (void)n_q, (void)n_checks;
    return 1;
}
int tdm_gpu_slot_configs(tdm_gpu *g, int k, size_t n, uint32_t n_q, double **configs)
{
    (void)g, (void)k, (void)n, (void)n_q;
    *configs = NULL;
    return TDM_ENODEV;
}
int tdm_gpu_slot_start_configs(tdm_gpu *g, int k, const tdm_gpu_robot *robots, const uint32_t *robot_of, size_t n,
                               uint32_t mode, uint32_t cap)
{
    (void)g, (void)k, (void)robots, (void)robot_of, (void)n, (void)mode, (void)cap;
    return TDM_ENODEV;
}
int tdm_gpu_program_resident(tdm_gpu *g, uint64_t key, uint64_t epoch, const tdm_kin *kin)
{
    (void)g, (void)key, (void)epoch, (void)kin;
    return 0;
}
int tdm_gpu_configs_programs(tdm_gpu *g, tdm_gpu_robot *robots, uint32_t n)
{
    (void)g, (void)robots, (void)n;
    return TDM_ENODEV;
}
const tdm_gpu_config_answer *tdm_gpu_slot_config_answers(tdm_gpu *g, int k, uint64_t *tasks)
{
    (void)g, (void)k;
    *tasks = 0;
    return NULL;
}
void tdm_gpu_abort(tdm_gpu *g) { (void)g; }
int tdm_gpu_express_create(tdm_gpu *g, uint32_t blocks, uint32_t items, tdm_gpu_express **out)
{
    (void)g, (void)blocks, (void)items;
    *out = NULL;
    return TDM_ENODEV;
}
void tdm_gpu_express_destroy(tdm_gpu_express *x) { (void)x; }
int tdm_gpu_express_find(tdm_gpu_express *x, uint64_t key, uint64_t epoch, const tdm_kin *kin, uint32_t *id)
{
    (void)x, (void)key, (void)epoch, (void)kin, (void)id;
    return 0;
}
int tdm_gpu_express_program(tdm_gpu_express *x, const tdm_gpu_robot *r, uint32_t *id)
{
    (void)x, (void)r, (void)id;
    return TDM_ENODEV;
}
void tdm_gpu_express_release(tdm_gpu_express *x, uint32_t id) { (void)x, (void)id; }
int tdm_gpu_express_submit(tdm_gpu_express *x, uint32_t id, const double *q, uint32_t n, uint32_t n_q, uint32_t mode,
                           uint32_t cap, uint64_t *ticket)
{
    (void)x, (void)id, (void)q, (void)n, (void)n_q, (void)mode, (void)cap, (void)ticket;
    return TDM_ENODEV;
}
int tdm_gpu_express_poll(tdm_gpu_express *x, uint64_t ticket, uint32_t n, tdm_gpu_express_answer *out)
{
    (void)x, (void)ticket, (void)n, (void)out;
    return TDM_ENODEV;
}
int tdm_gpu_express_keep(tdm_gpu_express *x)
{
    (void)x;
    return TDM_ENODEV;
}
int tdm_gpu_express_kick(tdm_gpu_express *x)
{
    (void)x;
    return TDM_ENODEV;
}
void tdm_gpu_express_counts(const tdm_gpu_express *x, uint64_t *launches, uint64_t *answered)
{
    (void)x;
    *launches = *answered = 0;
}

void tdm_gpu_get_stats(const tdm_gpu *g, tdm_gpu_stats *s)
{
    (void)g;
    memset(s, 0, sizeof *s);
}

int tdm_gpu_account(tdm_gpu *g, int64_t bytes)
{
    (void)g, (void)bytes;
    return TDM_EGPU;
}

tdm_hybrid_config tdm_hybrid_config_default(void)
{
    tdm_hybrid_config c = {.workers = 0, .streams = 16, .workpile_pairs = 65536};
    return c;
}

int tdm_hybrid_create(tdm_gpu *g, const tdm_hybrid_config *cfg, tdm_hybrid **out)
{
    (void)g; (void)cfg;
    *out = NULL;
    return TDM_ENODEV;
}

void tdm_hybrid_destroy(tdm_hybrid *h) { (void)h; }

int tdm_hybrid_workers(const tdm_hybrid *h) { (void)h; return 0; }

int tdm_hybrid_begin(tdm_hybrid *h, const tdm_task *tasks, size_t n, tdm_collide_result *results)
{
    (void)h; (void)tasks; (void)n; (void)results;
    return TDM_ENODEV;
}

void tdm_hybrid_work(tdm_hybrid *h, int k) { (void)h; (void)k; }
int tdm_hybrid_end(tdm_hybrid *h) { (void)h; return TDM_ENODEV; }

void tdm_hybrid_get_stats(const tdm_hybrid *h, tdm_hybrid_stats *s)
{
    (void)h;
    memset(s, 0, sizeof *s);
}
