/* The GPU-resident engine; gpu.h describes the method. Kernels are thin: index
 * math, then the geom/ functions the CPU engine calls too. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include "../geom/tri.h"
#include "gpu.h"

/* ---- errors ----------------------------------------------------------------- */

/* An error that poisons the context: every later call fails fast. */
static int is_sticky(cudaError_t e)
{
    return e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure || e == cudaErrorIllegalInstruction ||
           e == cudaErrorMisalignedAddress || e == cudaErrorHardwareStackError || e == cudaErrorECCUncorrectable;
}

#define TDM_CUDA_TRY(g, expr)                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (expr);                                                                   \
        if (e_ != cudaSuccess) return map_error((g), e_);                                          \
    } while (0)

#define OVERFLOW_RC 1 /* internal: the frontier outgrew what the budget allows */

/* ---- device data ---------------------------------------------------------------- */

struct tdm_gpu_mesh {
    tdm_bvh_node *nodes;
    float *tris;
    uint32_t *ids;
    uint32_t n_nodes, n_tris;
    float radius;
    uint64_t bytes;
};

typedef struct dtask {
    const tdm_bvh_node *an, *bn;
    const float *at, *bt;
    const uint32_t *aid, *bid;
    tdm_fxform fx; /* b_in_a in float, for the boxes */
    float tol;
    uint32_t mode, cap;
    tdm_xform x;          /* b_in_a in double, for the triangles */
} dtask;

typedef struct dres {
    uint32_t colliding, truncated, count, done;
    uint32_t first_a, first_b;
} dres;

typedef struct fpair { uint32_t task, a, b; } fpair;

struct tdm_gpu {
    tdm_gpu_config cfg;
    cudaStream_t stream;
    int dead;
    uint64_t mesh_bytes, scratch_bytes;
    /* scratch, sized once and grown rarely */
    uint64_t cap_pairs, cap_leaves, cap_tasks;
    fpair *front[2], *leaves;
    unsigned long long *code, *offs;
    void *scan_tmp;
    size_t scan_tmp_bytes;
    dtask *d_tasks, *h_tasks; /* h_tasks pinned */
    dres *d_res, *h_res;      /* h_res pinned */
    unsigned long long *h_total; /* pinned */
    tdm_gpu_stats stats;
};

static int map_error(tdm_gpu *g, cudaError_t e)
{
    if (is_sticky(e)) g->dead = 1;
    cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? TDM_EGPUMEM : TDM_EGPU;
}

/* ---- kernels ------------------------------------------------------------------- */

__global__ void init_frontier_kernel(fpair *f, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) f[i] = fpair{i, 0, 0};
}

/* code[i]: number of child pairs (low 32 bits) or 1 << 32 for a leaf pair whose
 * boxes overlap; 0 when the boxes are apart or the task has retired. */
__global__ void test_pairs_kernel(const fpair *in, uint32_t n, const dtask *tasks, const dres *res,
                                  unsigned long long *code)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > n) return;
    if (i == n) { /* the scan's extra slot, so that its last output is the total */
        code[n] = 0;
        return;
    }
    fpair p = in[i];
    unsigned long long c = 0;
    if (!*(volatile const uint32_t *)&res[p.task].done) {
        const dtask *t = &tasks[p.task];
        const tdm_bvh_node *na = &t->an[p.a], *nb = &t->bn[p.b];
        tdm_wbox w;
        tdm_wbox_of(&t->fx, nb, &w);
        if (tdm_obb_overlap_w(na, &w, nb->extent, t->tol)) {
            uint32_t ca[2], cb[2];
            int nca, ncb;
            int k = tdm_bvtt_children(na, p.a, nb, p.b, ca, &nca, cb, &ncb);
            c = k ? (unsigned long long)k : (1ull << 32);
        }
    }
    code[i] = c;
}

__global__ void emit_kernel(const fpair *in, uint32_t n, const dtask *tasks, const unsigned long long *code,
                            const unsigned long long *offs, fpair *out, fpair *leaves)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long c = code[i];
    if (!c) return;
    unsigned long long off = offs[i];
    fpair p = in[i];
    if (c >> 32) {
        leaves[off >> 32] = p;
        return;
    }
    const dtask *t = &tasks[p.task];
    uint32_t ca[2], cb[2];
    int nca, ncb;
    tdm_bvtt_children(&t->an[p.a], p.a, &t->bn[p.b], p.b, ca, &nca, cb, &ncb);
    uint32_t o = (uint32_t)off;
    for (int x = 0; x < nca; x++)
        for (int y = 0; y < ncb; y++) out[o++] = fpair{p.task, ca[x], cb[y]};
}

__device__ static void load_tri(const float *v, tdm_dvec3 out[3])
{
    for (int k = 0; k < 3; k++) out[k] = tdm_d3(v[3 * k], v[3 * k + 1], v[3 * k + 2]);
}

__global__ void tri_pairs_kernel(const fpair *leaves, uint32_t n, const dtask *tasks, dres *res)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fpair p = leaves[i];
    dres *r = &res[p.task];
    if (*(volatile uint32_t *)&r->done) return;
    const dtask *t = &tasks[p.task];
    const tdm_bvh_node *na = &t->an[p.a], *nb = &t->bn[p.b];
    uint32_t fa = tdm_leaf_first(na), ca = tdm_leaf_count(na), fb = tdm_leaf_first(nb), cb = tdm_leaf_count(nb);
    tdm_dvec3 tb[2][3], ta[3];
    for (uint32_t j = 0; j < cb; j++) {
        load_tri(&t->bt[9 * (size_t)(fb + j)], tb[j]);
        for (int k = 0; k < 3; k++) tb[j][k] = tdm_xform_apply(&t->x, tb[j][k]);
    }
    for (uint32_t a = 0; a < ca; a++) {
        load_tri(&t->at[9 * (size_t)(fa + a)], ta);
        for (uint32_t b = 0; b < cb; b++) {
            if (!tdm_tri_tri_intersect(ta, tb[b])) continue;
            if (atomicCAS(&r->colliding, 0u, 1u) == 0u) {
                r->first_a = t->aid[fa + a];
                r->first_b = t->bid[fb + b];
            }
            if (t->mode == TDM_MODE_BOOL) {
                r->done = 1;
                return;
            }
            uint32_t old = atomicAdd(&r->count, 1u);
            if (old >= t->cap) {
                r->truncated = 1;
                r->done = 1;
                return;
            }
        }
    }
}

/* ---- host side ------------------------------------------------------------------- */

extern "C" tdm_gpu_config tdm_gpu_config_default(void)
{
    tdm_gpu_config c;
    c.device = 0;
    c.memory_budget = 0;          /* 0: 80% of the device's memory */
    c.frontier_pairs = 1u << 22;
    return c;
}

static uint64_t scratch_need(uint64_t pairs, uint64_t leaves)
{
    return pairs * (2 * sizeof(fpair) + 2 * sizeof(unsigned long long)) + leaves * sizeof(fpair);
}

static void free_scratch(tdm_gpu *g)
{
    cudaFree(g->front[0]);
    cudaFree(g->front[1]);
    cudaFree(g->code);
    cudaFree(g->offs);
    cudaFree(g->leaves);
    cudaFree(g->scan_tmp);
    g->front[0] = g->front[1] = g->leaves = NULL;
    g->code = g->offs = NULL;
    g->scan_tmp = NULL;
    g->scan_tmp_bytes = 0;
    g->cap_pairs = g->cap_leaves = 0;
    g->scratch_bytes = 0;
}

/* Frontier buffers for `pairs` node pairs (+1 for the scan) and `leaves` leaf
 * pairs; keeps the contents of front[keep] (or none when keep < 0). Returns
 * OVERFLOW_RC when the budget does not allow it. */
static int reserve(tdm_gpu *g, uint64_t pairs, uint64_t leaves, int keep)
{
    if (pairs <= g->cap_pairs && leaves <= g->cap_leaves) return TDM_OK;
    uint64_t np = g->cap_pairs, nl = g->cap_leaves;
    while (np < pairs) np = np ? 2 * np : 1024;
    while (nl < leaves) nl = nl ? 2 * nl : 1024;
    if (np >= (1ull << 31) || nl >= (1ull << 31)) return OVERFLOW_RC;
    uint64_t need = scratch_need(np + 1, nl);
    if (g->mesh_bytes + need > g->cfg.memory_budget) return OVERFLOW_RC;
    if (np > g->cap_pairs) {
        fpair *f[2] = {NULL, NULL};
        unsigned long long *code = NULL, *offs = NULL;
        size_t tmp_bytes = 0;
        void *tmp = NULL;
        cub::DeviceScan::ExclusiveSum(NULL, tmp_bytes, (unsigned long long *)NULL, (unsigned long long *)NULL,
                                      (int)(np + 1), g->stream);
        if (cudaMalloc(&f[0], (np + 1) * sizeof(fpair)) != cudaSuccess ||
            cudaMalloc(&f[1], (np + 1) * sizeof(fpair)) != cudaSuccess ||
            cudaMalloc(&code, (np + 1) * sizeof *code) != cudaSuccess ||
            cudaMalloc(&offs, (np + 1) * sizeof *offs) != cudaSuccess || cudaMalloc(&tmp, tmp_bytes) != cudaSuccess) {
            cudaFree(f[0]); cudaFree(f[1]); cudaFree(code); cudaFree(offs); cudaFree(tmp);
            cudaGetLastError();
            return OVERFLOW_RC;
        }
        if (keep >= 0 && g->front[keep]) {
            TDM_CUDA_TRY(g, cudaMemcpyAsync(f[keep], g->front[keep], g->cap_pairs * sizeof(fpair),
                                            cudaMemcpyDeviceToDevice, g->stream));
            TDM_CUDA_TRY(g, cudaStreamSynchronize(g->stream));
        }
        cudaFree(g->front[0]); cudaFree(g->front[1]); cudaFree(g->code); cudaFree(g->offs); cudaFree(g->scan_tmp);
        g->front[0] = f[0];
        g->front[1] = f[1];
        g->code = code;
        g->offs = offs;
        g->scan_tmp = tmp;
        g->scan_tmp_bytes = tmp_bytes;
        g->cap_pairs = np;
    }
    if (nl > g->cap_leaves) {
        fpair *l = NULL;
        if (cudaMalloc(&l, nl * sizeof(fpair)) != cudaSuccess) {
            cudaGetLastError();
            return OVERFLOW_RC;
        }
        cudaFree(g->leaves);
        g->leaves = l;
        g->cap_leaves = nl;
    }
    g->scratch_bytes = scratch_need(g->cap_pairs + 1, g->cap_leaves);
    return TDM_OK;
}

static int reserve_tasks(tdm_gpu *g, uint64_t n)
{
    if (n <= g->cap_tasks) return TDM_OK;
    uint64_t c = g->cap_tasks ? g->cap_tasks : 1024;
    while (c < n) c *= 2;
    cudaFree(g->d_tasks); cudaFree(g->d_res); cudaFreeHost(g->h_tasks); cudaFreeHost(g->h_res);
    g->d_tasks = NULL; g->d_res = NULL; g->h_tasks = NULL; g->h_res = NULL;
    g->cap_tasks = 0;
    TDM_CUDA_TRY(g, cudaMalloc(&g->d_tasks, c * sizeof(dtask)));
    TDM_CUDA_TRY(g, cudaMalloc(&g->d_res, c * sizeof(dres)));
    TDM_CUDA_TRY(g, cudaMallocHost(&g->h_tasks, c * sizeof(dtask)));
    TDM_CUDA_TRY(g, cudaMallocHost(&g->h_res, c * sizeof(dres)));
    g->cap_tasks = c;
    return TDM_OK;
}

extern "C" int tdm_gpu_create(const tdm_gpu_config *cfg, tdm_gpu **out, const char **why)
{
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    tdm_gpu_config c = cfg ? *cfg : tdm_gpu_config_default();
    if (e != cudaSuccess || n == 0 || c.device < 0 || c.device >= n) {
        if (why) *why = e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device";
        cudaGetLastError();
        return TDM_ENODEV;
    }
    if (cudaSetDevice(c.device) != cudaSuccess) {
        if (why) *why = "cudaSetDevice failed";
        cudaGetLastError();
        return TDM_ENODEV;
    }
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if (c.memory_budget == 0) c.memory_budget = (uint64_t)(0.8 * (double)total_b);
    tdm_gpu *g = (tdm_gpu *)calloc(1, sizeof *g);
    if (!g) return TDM_ENOMEM;
    g->cfg = c;
    if (cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMallocHost(&g->h_total, sizeof(unsigned long long)) != cudaSuccess) {
        cudaGetLastError();
        tdm_gpu_destroy(g);
        return TDM_EGPU;
    }
    int rc = reserve(g, c.frontier_pairs, c.frontier_pairs, -1);
    if (rc != TDM_OK) {
        tdm_gpu_destroy(g);
        return rc == OVERFLOW_RC ? TDM_EGPUMEM : rc;
    }
    if (why) *why = "";
    *out = g;
    return TDM_OK;
}

extern "C" void tdm_gpu_destroy(tdm_gpu *g)
{
    if (!g) return;
    free_scratch(g);
    cudaFree(g->d_tasks);
    cudaFree(g->d_res);
    cudaFreeHost(g->h_tasks);
    cudaFreeHost(g->h_res);
    cudaFreeHost(g->h_total);
    if (g->stream) cudaStreamDestroy(g->stream);
    free(g);
}

extern "C" int tdm_gpu_mesh_upload(tdm_gpu *g, const tdm_bvh *bvh, tdm_gpu_mesh **out)
{
    *out = NULL;
    if (g->dead) return TDM_EGPU;
    uint64_t nb = (uint64_t)bvh->n_nodes * sizeof(tdm_bvh_node), tb = (uint64_t)bvh->n_tris * 9 * sizeof(float),
             ib = (uint64_t)bvh->n_tris * sizeof(uint32_t);
    if (g->mesh_bytes + g->scratch_bytes + nb + tb + ib > g->cfg.memory_budget) return TDM_EGPUMEM;
    tdm_gpu_mesh *m = (tdm_gpu_mesh *)calloc(1, sizeof *m);
    if (!m) return TDM_ENOMEM;
    cudaError_t e = cudaMalloc(&m->nodes, nb);
    if (e == cudaSuccess) e = cudaMalloc(&m->tris, tb);
    if (e == cudaSuccess) e = cudaMalloc(&m->ids, ib);
    if (e == cudaSuccess) e = cudaMemcpy(m->nodes, bvh->nodes, nb, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(m->tris, bvh->tri_verts, tb, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(m->ids, bvh->tri_ids, ib, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        cudaFree(m->nodes);
        cudaFree(m->tris);
        cudaFree(m->ids);
        free(m);
        return map_error(g, e);
    }
    m->n_nodes = bvh->n_nodes;
    m->n_tris = bvh->n_tris;
    m->radius = bvh->radius;
    m->bytes = nb + tb + ib;
    g->mesh_bytes += m->bytes;
    *out = m;
    return TDM_OK;
}

extern "C" void tdm_gpu_mesh_free(tdm_gpu *g, tdm_gpu_mesh *m)
{
    if (!m) return;
    cudaFree(m->nodes);
    cudaFree(m->tris);
    cudaFree(m->ids);
    g->mesh_bytes -= m->bytes;
    free(m);
}

static unsigned blocks(uint64_t n) { return (unsigned)((n + 255) / 256); }

/* One breadth-first traversal of tasks [lo, hi). Returns OVERFLOW_RC when the
 * frontier cannot fit; results are then meaningless and the caller splits. */
static int run_once(tdm_gpu *g, const tdm_gpu_task *tasks, size_t lo, size_t hi, tdm_collide_result *results)
{
    size_t n = hi - lo;
    int rc = reserve_tasks(g, n);
    if (rc != TDM_OK) return rc;
    for (size_t i = 0; i < n; i++) {
        const tdm_gpu_task *t = &tasks[lo + i];
        dtask *d = &g->h_tasks[i];
        d->an = t->a->nodes; d->bn = t->b->nodes;
        d->at = t->a->tris; d->bt = t->b->tris;
        d->aid = t->a->ids; d->bid = t->b->ids;
        d->fx = tdm_fxform_of(&t->b_in_a);
        d->tol = tdm_obb_tolerance(t->a->radius, t->b->radius, (float)tdm_d3_len(t->b_in_a.t));
        d->mode = (uint32_t)t->mode;
        d->cap = t->max_pairs ? t->max_pairs : 1;
        d->x = t->b_in_a;
    }
    if ((rc = reserve(g, n, 0, -1)) != TDM_OK) return rc;
    TDM_CUDA_TRY(g, cudaMemcpyAsync(g->d_tasks, g->h_tasks, n * sizeof(dtask), cudaMemcpyHostToDevice, g->stream));
    TDM_CUDA_TRY(g, cudaMemsetAsync(g->d_res, 0, n * sizeof(dres), g->stream));
    int cur = 0;
    init_frontier_kernel<<<blocks(n), 256, 0, g->stream>>>(g->front[cur], (uint32_t)n);
    TDM_CUDA_TRY(g, cudaGetLastError());
    uint64_t nf = n;
    while (nf > 0) {
        g->stats.iterations++;
        g->stats.box_tests += nf;
        test_pairs_kernel<<<blocks(nf + 1), 256, 0, g->stream>>>(g->front[cur], (uint32_t)nf, g->d_tasks, g->d_res,
                                                                  g->code);
        TDM_CUDA_TRY(g, cudaGetLastError());
        size_t tmp = g->scan_tmp_bytes;
        TDM_CUDA_TRY(g, cub::DeviceScan::ExclusiveSum(g->scan_tmp, tmp, g->code, g->offs, (int)(nf + 1), g->stream));
        TDM_CUDA_TRY(g, cudaMemcpyAsync(g->h_total, g->offs + nf, sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                        g->stream));
        TDM_CUDA_TRY(g, cudaStreamSynchronize(g->stream));
        uint64_t n_child = *g->h_total & 0xffffffffull, n_leaf = *g->h_total >> 32;
        if (n_child > g->cap_pairs || n_leaf > g->cap_leaves) {
            /* grows the frontier that is not in use; the current one is kept */
            if ((rc = reserve(g, n_child, n_leaf, cur)) != TDM_OK) return rc;
            /* reserve() may have moved code/offs: recompute them */
            test_pairs_kernel<<<blocks(nf + 1), 256, 0, g->stream>>>(g->front[cur], (uint32_t)nf, g->d_tasks,
                                                                      g->d_res, g->code);
            tmp = g->scan_tmp_bytes;
            TDM_CUDA_TRY(g, cub::DeviceScan::ExclusiveSum(g->scan_tmp, tmp, g->code, g->offs, (int)(nf + 1),
                                                          g->stream));
        }
        emit_kernel<<<blocks(nf), 256, 0, g->stream>>>(g->front[cur], (uint32_t)nf, g->d_tasks, g->code, g->offs,
                                                       g->front[cur ^ 1], g->leaves);
        TDM_CUDA_TRY(g, cudaGetLastError());
        if (n_leaf > 0) {
            g->stats.tri_pair_tests += n_leaf;
            tri_pairs_kernel<<<blocks(n_leaf), 256, 0, g->stream>>>(g->leaves, (uint32_t)n_leaf, g->d_tasks,
                                                                    g->d_res);
            TDM_CUDA_TRY(g, cudaGetLastError());
        }
        cur ^= 1;
        nf = n_child;
    }
    TDM_CUDA_TRY(g, cudaMemcpyAsync(g->h_res, g->d_res, n * sizeof(dres), cudaMemcpyDeviceToHost, g->stream));
    TDM_CUDA_TRY(g, cudaStreamSynchronize(g->stream));
    for (size_t i = 0; i < n; i++) {
        const dres *r = &g->h_res[i];
        tdm_collide_result *o = &results[lo + i];
        memset(o, 0, sizeof *o);
        o->colliding = r->colliding;
        if (tasks[lo + i].mode == TDM_MODE_BOOL) {
            o->n_pairs = r->colliding;
        } else {
            uint32_t cap = g->h_tasks[i].cap;
            o->n_pairs = r->count < cap ? r->count : cap;
            o->truncated = r->truncated;
        }
        o->first.a_tri = r->first_a;
        o->first.b_tri = r->first_b;
    }
    return TDM_OK;
}

static int run_range(tdm_gpu *g, const tdm_gpu_task *tasks, size_t lo, size_t hi, tdm_collide_result *results)
{
    int rc = run_once(g, tasks, lo, hi, results);
    if (rc != OVERFLOW_RC) return rc;
    if (hi - lo == 1) return TDM_EGPUMEM; /* one task's frontier alone outgrows the budget */
    g->stats.reruns++;
    size_t mid = lo + (hi - lo) / 2;
    rc = run_range(g, tasks, lo, mid, results);
    return rc != TDM_OK ? rc : run_range(g, tasks, mid, hi, results);
}

extern "C" int tdm_gpu_run(tdm_gpu *g, const tdm_gpu_task *tasks, size_t n, tdm_collide_result *results)
{
    if (g->dead) return TDM_EGPU;
    if (n == 0) return TDM_OK;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* bound one traversal's task count so that its frontier starts within capacity */
    size_t chunk = (size_t)(g->cfg.frontier_pairs > 0 ? g->cfg.frontier_pairs : 1);
    int rc = TDM_OK;
    for (size_t lo = 0; lo < n && rc == TDM_OK; lo += chunk) {
        size_t hi = n - lo < chunk ? n : lo + chunk;
        rc = run_range(g, tasks, lo, hi, results);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g->stats.runs++;
    g->stats.tasks += n;
    g->stats.seconds += (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    return rc;
}

extern "C" void tdm_gpu_get_stats(const tdm_gpu *g, tdm_gpu_stats *s)
{
    *s = g->stats;
    s->mesh_bytes = g->mesh_bytes;
    s->device_bytes = g->mesh_bytes + g->scratch_bytes;
}
