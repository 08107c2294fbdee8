/* The hybrid engine (hybrid_engine.h). */
#include "hybrid_engine.h"

#include <stdlib.h>

#include "gpu_engine.h"

typedef struct hybrid_engine {
    tdm_backend base;
    tdm_backend *gpu; /* borrowed */
    tdm_pool *pool;
    tdm_hybrid *h;
    tdm_task *tasks;  /* a run's tasks */
    size_t cap;
} hybrid_engine;

typedef struct make_job {
    const tdm_task_list *list;
    tdm_task *out;
    int failed;
} make_job;

static void make_share(void *arg, int k, int nk)
{
    make_job *j = arg;
    size_t n = j->list->n, lo = n * (size_t)k / (size_t)nk, hi = n * (size_t)(k + 1) / (size_t)nk;
    if (lo < hi && j->list->make(j->list, lo, hi, j->out + lo) != 0) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
}

static void work_share(void *arg, int k, int nk)
{
    (void)nk;
    tdm_hybrid_work((tdm_hybrid *)arg, k);
}

static int hyb_run(tdm_backend *b, int lane, const tdm_task_list *list, tdm_collide_result *results)
{
    (void)lane;
    hybrid_engine *e = (hybrid_engine *)b;
    size_t n = list->n;
    if (n == 0) return TDM_OK;
    const tdm_task *tasks = list->array;
    if (!tasks) {
        if (n > e->cap) {
            tdm_task *t = realloc(e->tasks, n * sizeof *t);
            if (!t) return TDM_ENOMEM;
            e->tasks = t;
            e->cap = n;
        }
        make_job j = {list, e->tasks, 0};
        int threads = tdm_pool_threads(e->pool);
        tdm_pool_run(e->pool, make_share, &j, n >= 4096 ? threads : 1);
        if (j.failed) return TDM_ECANCELED;
        tasks = e->tasks;
    }
    int rc = TDM_OK;
    for (size_t lo = 0; lo < n && rc == TDM_OK; lo += TDM_HYBRID_PIECE) {
        size_t m = n - lo < TDM_HYBRID_PIECE ? n - lo : TDM_HYBRID_PIECE;
        rc = tdm_hybrid_begin(e->h, tasks + lo, m, results + lo);
        if (rc != TDM_OK) break;
        tdm_pool_run(e->pool, work_share, e->h, tdm_hybrid_workers(e->h));
        rc = tdm_hybrid_end(e->h);
    }
    return rc;
}

static int hyb_mesh_add(tdm_backend *b, int lane, const tdm_bvh *bvh, void **copy)
{
    hybrid_engine *e = (hybrid_engine *)b;
    return e->gpu->ops->mesh_add(e->gpu, lane, bvh, copy);
}

static void hyb_mesh_free(tdm_backend *b, int lane, void *copy)
{
    hybrid_engine *e = (hybrid_engine *)b;
    e->gpu->ops->mesh_free(e->gpu, lane, copy);
}

static void hyb_mesh_discard(tdm_backend *b, int lane, void *copy)
{
    hybrid_engine *e = (hybrid_engine *)b;
    if (e->gpu->ops->mesh_discard) e->gpu->ops->mesh_discard(e->gpu, lane, copy);
    else e->gpu->ops->mesh_free(e->gpu, lane, copy);
}

static int hyb_prepare(tdm_backend *b, size_t n)
{
    (void)b;
    (void)n;
    return TDM_OK;
}

static void hyb_get_stats(tdm_backend *b, int lane, tdm_backend_stats *s)
{
    hybrid_engine *e = (hybrid_engine *)b;
    e->gpu->ops->get_stats(e->gpu, lane, s); /* the device's memory */
    tdm_hybrid_stats hs;
    tdm_hybrid_get_stats(e->h, &hs);
    s->iterations = hs.workpiles;
    s->pairs = hs.box_entries + hs.tri_entries;
    /* the GPU engine's own, counted there */
    s->small_runs = s->small_handovers = s->fused_runs = s->config_start_ns = s->programs_uploaded = s->programs_reused = 0;
    s->program_bytes = 0;
}

static void hyb_destroy(tdm_backend *b)
{
    hybrid_engine *e = (hybrid_engine *)b;
    if (!e) return;
    tdm_hybrid_destroy(e->h);
    free(e->tasks);
    free(e);
}

static const tdm_backend_ops hybrid_ops = {TDM_BACKEND_HYBRID, hyb_mesh_add,  hyb_mesh_free, hyb_prepare,
                                           hyb_run,            hyb_get_stats, hyb_destroy,  hyb_mesh_discard};

int tdm_hybrid_engine_create(tdm_backend *gpu, tdm_pool *pool, const tdm_hybrid_config *cfg, tdm_backend **out)
{
    *out = NULL;
    if (!gpu || gpu->ops->kind != TDM_BACKEND_GPU || !pool) return TDM_EINVAL;
    hybrid_engine *e = calloc(1, sizeof *e);
    if (!e) return TDM_ENOMEM;
    e->gpu = gpu;
    e->pool = pool;
    tdm_hybrid_config hc = tdm_hybrid_config_default();
    hc.workers = tdm_pool_threads(pool);
    if (cfg) hc = *cfg;
    int rc = tdm_hybrid_create(tdm_gpu_engine_lane(gpu, 0), &hc, &e->h);
    if (rc != TDM_OK) {
        free(e);
        return rc;
    }
    e->base = (tdm_backend){&hybrid_ops, 1, 1, 0};
    *out = &e->base;
    return TDM_OK;
}

tdm_hybrid *tdm_hybrid_engine_hybrid(tdm_backend *b) { return ((hybrid_engine *)b)->h; }
