/* The hybrid engine; hybrid.h describes the method (Jorgensen et al., 001 in
 * ../shared/papers). Host threads walk the BVTTs and build workpiles; two thin
 * kernels per workpile (its box entries, its leaf entries) test them with the
 * geom/ functions the CPU engine calls too.
 *
 * Each worker owns two slots (a pinned and a device workpile buffer, a result
 * buffer, events) on streams shared round-robin among the workers; the caller
 * runs every worker's part of a piece on a thread of its own (tdm_hybrid_work).
 * A worker alternates between its slots: wait for one slot's results, expand them, refill and
 * ship that slot, then turn to the other, so that while one workpile is copied
 * and tested the thread expands the other (double buffering, §4.2).
 *
 * A workpile holds box entries first, then leaf entries. A box entry is a node
 * pair whose boxes are to be tested; its result byte is 1 when they overlap,
 * and the host then pushes its children (tdm_bvtt_children) or, for two leaves,
 * a leaf entry. A leaf entry's result is a 4-bit mask of its intersecting
 * triangle pairs (bit 2 * i + j: A's triangle i, B's triangle j), which the
 * host adds to the task's result by the rule tdm_collide follows
 * (tdm_result_add_leaf, geom/leaf.h).
 *
 * Pending pairs are kept per worker in a LIFO, so the traversal drifts depth
 * first across workpiles and its memory stays bounded; new tasks are admitted
 * (from one atomic counter, for load balance) only once the LIFO is empty, a
 * bounded number per workpile. Each admitted chunk's rows of the task table
 * (float and double transforms, tolerance, tree pointers) are uploaded on the
 * stream of the workpile that carries its roots, so they are on the device
 * before any entry that names them. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <new>

#include <cuda_runtime.h>

#include "../geom/leaf.h"
#include "cuda_util.h"
#include "hybrid.h"
#include "internal.h"

#define SLOTS 2            /* workpiles in flight per thread */
#define MAX_STREAMS 16
#define MAX_THREADS 1024
#define MAX_WORKPILE (1u << 22)

#define BLOCK 256

/* ---- device data ------------------------------------------------------------- */

typedef struct hentry { uint32_t task, a, b; } hentry;

/* What a box test reads of its task: five 16-byte loads. */
typedef struct __align__(16) hhot {
    tdm_fxform fx; /* b_in_a in float */
    float tol;
    uint32_t pad[3];
    const tdm_bvh_node *an, *bn;
} hhot;

/* One row of the task table, written by the host thread that admits the task. */
typedef struct __align__(16) htask {
    hhot h;
    const float *at, *bt;
    tdm_xform x; /* b_in_a in double, for the triangles */
} htask;

static_assert(sizeof(hhot) == 80, "hhot is read as five float4");

/* The box test of resident.cu's traverse_kernel, bit for bit. */
__device__ static uint8_t test_box_entry(hentry e, const htask *tasks)
{
    hhot t;
    tdm_bvh_node na, nb;
    tdm_load16(&t, &tasks[e.task].h, 5);
    tdm_load16(&na, &t.an[e.a], 4);
    tdm_load16(&nb, &t.bn[e.b], 4);
    tdm_wbox w;
    tdm_wbox_of(&t.fx, &nb, &w);
    return (uint8_t)tdm_obb_overlap_w(&na, &w, nb.extent, t.tol);
}

/* The mask of a leaf entry's intersecting triangle pairs (every pair, whatever
 * the mode: the host adds them up), by the leaf test the CPU engine runs
 * (geom/leaf.h). */
__device__ static uint8_t test_leaf_entry(hentry e, const htask *tasks)
{
    const htask *t = &tasks[e.task];
    return (uint8_t)tdm_leaf_intersect(&t->h.an[e.a], t->at, &t->h.bn[e.b], t->bt, &t->x, 0);
}

/* A workpile's entries [0, n_box) are box pairs, [n_box, n) leaf pairs, one
 * result byte each. Two kernels rather than one that branches: the exact
 * triangle test needs far more registers than the box test, and would cut the
 * box kernel's occupancy. */
__global__ void __launch_bounds__(BLOCK) test_boxes_kernel(const hentry *in, uint32_t n, const htask *tasks,
                                                           uint8_t *out)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = test_box_entry(in[i], tasks);
}

__global__ void __launch_bounds__(BLOCK) test_leaves_kernel(const hentry *in, uint32_t n, const htask *tasks,
                                                            uint8_t *out)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = test_leaf_entry(in[i], tasks);
}

/* ---- host data ------------------------------------------------------------------ */

typedef struct hslot {
    cudaStream_t stream;           /* borrowed from the engine's streams */
    cudaEvent_t done, k0, k1;      /* results copied back; kernel start and end */
    hentry *h_in, *d_in;           /* workpile_pairs entries; h_in pinned */
    uint8_t *h_out, *d_out;        /* one result byte per entry; h_out pinned */
    uint32_t n_box, n;             /* what is in flight */
    int busy;
} hslot;

/* A growable array of pending entries. */
typedef struct hvec { hentry *v; size_t n, cap; } hvec;

typedef struct worker {
    struct tdm_hybrid *h;
    hslot slots[SLOTS];
    hvec front;  /* box pairs waiting to be shipped (LIFO) */
    hvec leaves; /* leaf pairs whose boxes overlap, waiting to be shipped */
    int rc;      /* the current run's first error */
    uint64_t workpiles, box_entries, tri_entries;
    double gpu_seconds;
} worker;

struct tdm_hybrid {
    tdm_gpu *g;
    int device;
    tdm_hybrid_config cfg;
    int n_streams;
    cudaStream_t streams[MAX_STREAMS];
    worker *w;           /* cfg.workers */
    int64_t slot_bytes;  /* device bytes of the slots, accounted in g */
    htask *h_tasks, *d_tasks; /* the task table of the current piece; h_tasks pinned */
    size_t cap_tasks;
    std::atomic<int> dead; /* a sticky CUDA error poisoned the context */

    /* the current piece */
    const tdm_task *tasks;
    tdm_collide_result *results;
    size_t n, admit; /* tasks, and the most admitted per workpile */
    double t_begin;
    std::atomic<size_t> next;
    std::atomic<int> abort;

    tdm_hybrid_stats stats;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int vec_reserve(hvec *v, size_t extra)
{
    if (v->n + extra <= v->cap) return TDM_OK;
    size_t c = v->cap ? v->cap : 1024;
    while (c < v->n + extra) c *= 2;
    hentry *p = (hentry *)realloc(v->v, c * sizeof *p);
    if (!p) return TDM_ENOMEM;
    v->v = p;
    v->cap = c;
    return TDM_OK;
}

/* ---- traversal on the host ------------------------------------------------------ */

/* Has the task its answer? (geom/leaf.h's rule, as tdm_collide.) */
static int task_done(const tdm_task *t, const tdm_collide_result *r) { return tdm_result_done(r, t->mode); }

/* Waits for a slot's results and expands them: leaf masks first (so that a bool
 * task found colliding in this workpile expands none of its box pairs), then
 * the overlapping box pairs into children or leaf entries. */
static int collect(worker *w, hslot *s)
{
    tdm_hybrid *h = w->h;
    cudaError_t e = cudaEventSynchronize(s->done);
    s->busy = 0;
    if (e != cudaSuccess) return tdm_cuda_err(e, &h->dead);
    float ms = 0;
    if (cudaEventElapsedTime(&ms, s->k0, s->k1) == cudaSuccess) w->gpu_seconds += 1e-3 * ms;
    cudaGetLastError();
    const tdm_task *tasks = h->tasks;
    tdm_collide_result *results = h->results;

    for (uint32_t k = s->n_box; k < s->n; k++) {
        hentry p = s->h_in[k];
        const tdm_task *t = &tasks[p.task];
        tdm_collide_result *r = &results[p.task];
        const tdm_bvh_node *na = &t->a->nodes[p.a], *nb = &t->b->nodes[p.b];
        r->tri_tests += tdm_leaf_count(na) * tdm_leaf_count(nb); /* the kernel tested them all */
        uint32_t m = s->h_out[k];
        if (!m || task_done(t, r)) continue;
        tdm_result_add_leaf(r, t->mode, t->max_pairs, NULL, m, na, t->a->tri_ids, nb, t->b->tri_ids);
    }

    int rc = vec_reserve(&w->front, 4 * (size_t)s->n_box);
    if (rc == TDM_OK) rc = vec_reserve(&w->leaves, s->n_box);
    if (rc != TDM_OK) return rc;
    for (uint32_t k = 0; k < s->n_box; k++) {
        if (!s->h_out[k]) continue;
        hentry p = s->h_in[k];
        const tdm_task *t = &tasks[p.task];
        if (task_done(t, &results[p.task])) continue;
        const tdm_bvh_node *A = t->a->nodes, *B = t->b->nodes;
        uint32_t ca[2], cb[2];
        int nca, ncb;
        if (!tdm_bvtt_children(&A[p.a], p.a, &B[p.b], p.b, ca, &nca, cb, &ncb)) {
            w->leaves.v[w->leaves.n++] = p;
            continue;
        }
        /* pushed in reverse so that the first children are popped first */
        for (int i = nca - 1; i >= 0; i--)
            for (int j = ncb - 1; j >= 0; j--) w->front.v[w->front.n++] = hentry{p.task, ca[i], cb[j]};
    }
    return TDM_OK;
}

/* The task table row of task i of the current piece. */
static void task_row(const tdm_task *t, htask *row)
{
    memset(row, 0, sizeof *row);
    /* far apart: separated by the root test (geom/bv.h) */
    tdm_xform x = tdm_bounds_placement(&t->b_in_a, t->a->radius, t->b->radius);
    row->h.fx = tdm_fxform_of(&x);
    row->h.tol = tdm_obb_tolerance(t->a->radius, t->b->radius, (float)tdm_d3_len(x.t));
    row->h.an = t->ga->nodes;
    row->h.bn = t->gb->nodes;
    row->at = t->ga->tris;
    row->bt = t->gb->tris;
    row->x = x;
}

/* Fills a slot from the pending leaf and box pairs, admitting new tasks once
 * no box pair is pending, and ships it. Leaves nothing in flight when there is
 * nothing to do. */
static int fill_and_ship(worker *w, hslot *s)
{
    tdm_hybrid *h = w->h;
    const tdm_task *tasks = h->tasks;
    tdm_collide_result *results = h->results;
    uint32_t cap = h->cfg.workpile_pairs;

    /* leaf pairs of tasks still open, kept at the front of w->leaves */
    size_t nl = 0;
    for (size_t k = 0; k < w->leaves.n; k++) {
        hentry p = w->leaves.v[k];
        if (!task_done(&tasks[p.task], &results[p.task])) w->leaves.v[nl++] = p;
    }
    w->leaves.n = nl;
    if (nl > cap) nl = cap;
    uint32_t room = cap - (uint32_t)nl, nb = 0;

    while (nb < room && w->front.n > 0) {
        hentry p = w->front.v[--w->front.n];
        if (task_done(&tasks[p.task], &results[p.task])) continue;
        results[p.task].box_tests++;
        s->h_in[nb++] = p;
    }
    size_t admitted = 0;
    while (nb < room && admitted < h->admit && !h->abort.load(std::memory_order_relaxed)) {
        size_t k = room - nb;
        if (k > h->admit - admitted) k = h->admit - admitted;
        size_t lo = h->next.fetch_add(k, std::memory_order_relaxed);
        if (lo >= h->n) break;
        size_t hi = lo + k < h->n ? lo + k : h->n;
        for (size_t i = lo; i < hi; i++) {
            const tdm_task *t = &tasks[i];
            tdm_collide_result *r = &results[i];
            memset(r, 0, sizeof *r);
            task_row(t, &h->h_tasks[i]);
            if (t->mode == TDM_MODE_CONTACTS && t->max_pairs == 0) continue; /* as tdm_collide: no work */
            r->box_tests = 1;
            s->h_in[nb++] = hentry{(uint32_t)i, 0, 0};
        }
        admitted += hi - lo;
        TDM_CUDA_TRY(&h->dead, cudaMemcpyAsync(h->d_tasks + lo, h->h_tasks + lo, (hi - lo) * sizeof(htask),
                                        cudaMemcpyHostToDevice, s->stream));
    }

    /* the leaf pairs go after the box pairs (LIFO: the newest first) */
    w->leaves.n -= nl;
    memcpy(s->h_in + nb, w->leaves.v + w->leaves.n, nl * sizeof(hentry));
    uint32_t n = nb + (uint32_t)nl;
    if (n == 0) return TDM_OK;

    TDM_CUDA_TRY(&h->dead, cudaMemcpyAsync(s->d_in, s->h_in, n * sizeof(hentry), cudaMemcpyHostToDevice, s->stream));
    TDM_CUDA_TRY(&h->dead, cudaEventRecord(s->k0, s->stream));
    if (nb) test_boxes_kernel<<<(nb + BLOCK - 1) / BLOCK, BLOCK, 0, s->stream>>>(s->d_in, nb, h->d_tasks, s->d_out);
    if (nl)
        test_leaves_kernel<<<((uint32_t)nl + BLOCK - 1) / BLOCK, BLOCK, 0, s->stream>>>(s->d_in + nb, (uint32_t)nl,
                                                                                        h->d_tasks, s->d_out + nb);
    TDM_CUDA_TRY(&h->dead, cudaGetLastError());
    TDM_CUDA_TRY(&h->dead, cudaEventRecord(s->k1, s->stream));
    TDM_CUDA_TRY(&h->dead, cudaMemcpyAsync(s->h_out, s->d_out, n, cudaMemcpyDeviceToHost, s->stream));
    TDM_CUDA_TRY(&h->dead, cudaEventRecord(s->done, s->stream));
    s->n_box = nb;
    s->n = n;
    s->busy = 1;
    w->workpiles++;
    w->box_entries += nb;
    w->tri_entries += nl;
    return TDM_OK;
}

/* Waits for what a thread still has in flight, and forgets its pending pairs
 * (after an error, or at the end of a run, when there are none). */
static void drain(worker *w)
{
    for (int k = 0; k < SLOTS; k++) {
        if (w->slots[k].busy) cudaEventSynchronize(w->slots[k].done);
        w->slots[k].busy = 0;
    }
    cudaGetLastError();
    w->front.n = w->leaves.n = 0;
}

/* One thread's part of a piece: alternate between the two slots until neither
 * has anything in flight and nothing is left to ship. */
static void work(worker *w)
{
    tdm_hybrid *h = w->h;
    int rc = cudaSetDevice(h->device) == cudaSuccess ? TDM_OK : tdm_cuda_err(cudaGetLastError(), &h->dead);
    for (int cur = 0; rc == TDM_OK; cur ^= 1) {
        if (h->abort.load(std::memory_order_relaxed)) break;
        hslot *s = &w->slots[cur];
        if (s->busy && (rc = collect(w, s)) != TDM_OK) break;
        if ((rc = fill_and_ship(w, s)) != TDM_OK) break;
        if (!s->busy && !w->slots[cur ^ 1].busy) break; /* nothing in flight, nothing to ship */
    }
    if (rc != TDM_OK) {
        w->rc = rc;
        h->abort = 1;
    }
    drain(w);
}

/* ---- the API ----------------------------------------------------------------------- */

extern "C" tdm_hybrid_config tdm_hybrid_config_default(void)
{
    tdm_hybrid_config c;
    c.workers = 0;
    /* 16, not fewer: a thread waits for its workpile behind everything queued
     * before it on its stream. 16 threads on an H100, 400 000 random cubicles
     * poses: 3.1 M queries/s in bool mode and 2.4 M in contacts mode on 16
     * streams, 2.1 M and 1.2 M on 4. Smaller workpiles (16384) were slower. */
    c.streams = 16;
    c.workpile_pairs = 65536;
    return c;
}

static void free_slot(hslot *s)
{
    cudaFree(s->d_in);
    cudaFree(s->d_out);
    cudaFreeHost(s->h_in);
    cudaFreeHost(s->h_out);
    if (s->done) cudaEventDestroy(s->done);
    if (s->k0) cudaEventDestroy(s->k0);
    if (s->k1) cudaEventDestroy(s->k1);
    memset(s, 0, sizeof *s);
}

static int alloc_slot(tdm_hybrid *h, hslot *s, cudaStream_t stream)
{
    uint32_t p = h->cfg.workpile_pairs;
    s->stream = stream;
    TDM_CUDA_TRY(&h->dead, cudaEventCreateWithFlags(&s->done, cudaEventDisableTiming));
    TDM_CUDA_TRY(&h->dead, cudaEventCreate(&s->k0));
    TDM_CUDA_TRY(&h->dead, cudaEventCreate(&s->k1));
    TDM_CUDA_TRY(&h->dead, cudaMalloc(&s->d_in, p * sizeof(hentry)));
    TDM_CUDA_TRY(&h->dead, cudaMalloc(&s->d_out, p));
    TDM_CUDA_TRY(&h->dead, cudaMallocHost(&s->h_in, p * sizeof(hentry)));
    TDM_CUDA_TRY(&h->dead, cudaMallocHost(&s->h_out, p));
    return TDM_OK;
}

static void free_table(tdm_hybrid *h)
{
    if (h->cap_tasks) tdm_gpu_account(h->g, -(int64_t)(h->cap_tasks * sizeof(htask)));
    cudaFree(h->d_tasks);
    cudaFreeHost(h->h_tasks);
    h->d_tasks = NULL;
    h->h_tasks = NULL;
    h->cap_tasks = 0;
}

/* A task table of at least n rows (n <= TDM_HYBRID_PIECE), accounted in g's budget. */
static int reserve_table(tdm_hybrid *h, size_t n)
{
    if (n <= h->cap_tasks) return TDM_OK;
    size_t c = h->cap_tasks ? h->cap_tasks : 4096;
    while (c < n) c *= 2;
    if (c > TDM_HYBRID_PIECE) c = TDM_HYBRID_PIECE;
    free_table(h);
    int rc = tdm_gpu_account(h->g, (int64_t)(c * sizeof(htask)));
    if (rc != TDM_OK) return rc;
    cudaError_t e = cudaMalloc(&h->d_tasks, c * sizeof(htask));
    if (e == cudaSuccess) e = cudaMallocHost(&h->h_tasks, c * sizeof(htask));
    if (e != cudaSuccess) {
        cudaFree(h->d_tasks);
        cudaFreeHost(h->h_tasks);
        h->d_tasks = NULL;
        h->h_tasks = NULL;
        tdm_gpu_account(h->g, -(int64_t)(c * sizeof(htask)));
        return tdm_cuda_err(e, &h->dead);
    }
    h->cap_tasks = c;
    return TDM_OK;
}

extern "C" int tdm_hybrid_create(tdm_gpu *g, const tdm_hybrid_config *cfg, tdm_hybrid **out)
{
    *out = NULL;
    tdm_hybrid_config c = cfg ? *cfg : tdm_hybrid_config_default();
    if (c.workers == 0) {
        long k = sysconf(_SC_NPROCESSORS_ONLN);
        c.workers = k > 0 ? (int)k : 1;
    }
    if (c.workers < 1 || c.workers > MAX_THREADS || c.streams < 1 || c.streams > MAX_STREAMS ||
        c.workpile_pairs < 1 || c.workpile_pairs > MAX_WORKPILE)
        return TDM_EINVAL;
    tdm_hybrid *h = new (std::nothrow) tdm_hybrid();
    if (!h) return TDM_ENOMEM;
    h->g = g;
    h->device = tdm_gpu_device(g);
    h->cfg = c;
    h->dead = 0;
    h->next = 0;
    h->abort = 0;
    int rc = TDM_OK;
    if (cudaSetDevice(h->device) != cudaSuccess) {
        rc = tdm_cuda_err(cudaGetLastError(), &h->dead);
        goto fail;
    }
    h->slot_bytes = (int64_t)c.workers * SLOTS * c.workpile_pairs * (int64_t)(sizeof(hentry) + 1);
    if ((rc = tdm_gpu_account(g, h->slot_bytes)) != TDM_OK) {
        h->slot_bytes = 0;
        goto fail;
    }
    for (int k = 0; k < c.streams; k++) {
        if (cudaStreamCreateWithFlags(&h->streams[k], cudaStreamNonBlocking) != cudaSuccess) {
            rc = tdm_cuda_err(cudaGetLastError(), &h->dead);
            goto fail;
        }
        h->n_streams = k + 1;
    }
    h->w = (worker *)calloc((size_t)c.workers, sizeof(worker));
    if (!h->w) {
        rc = TDM_ENOMEM;
        goto fail;
    }
    for (int t = 0; t < c.workers; t++) {
        worker *w = &h->w[t];
        w->h = h;
        for (int k = 0; k < SLOTS; k++)
            if ((rc = alloc_slot(h, &w->slots[k], h->streams[(SLOTS * t + k) % h->n_streams])) != TDM_OK) goto fail;
    }
    *out = h;
    return TDM_OK;
fail:
    tdm_hybrid_destroy(h);
    return rc;
}

extern "C" void tdm_hybrid_destroy(tdm_hybrid *h)
{
    if (!h) return;
    if (h->w) {
        for (int t = 0; t < h->cfg.workers; t++) {
            for (int k = 0; k < SLOTS; k++) free_slot(&h->w[t].slots[k]);
            free(h->w[t].front.v);
            free(h->w[t].leaves.v);
        }
        free(h->w);
    }
    free_table(h);
    for (int k = 0; k < h->n_streams; k++) cudaStreamDestroy(h->streams[k]);
    if (h->slot_bytes) tdm_gpu_account(h->g, -h->slot_bytes);
    cudaGetLastError();
    delete h;
}

extern "C" int tdm_hybrid_workers(const tdm_hybrid *h) { return h->cfg.workers; }

extern "C" int tdm_hybrid_begin(tdm_hybrid *h, const tdm_task *tasks, size_t n, tdm_collide_result *results)
{
    if (h->dead) return TDM_EGPU;
    if (n > TDM_HYBRID_PIECE) return TDM_EINVAL;
    h->t_begin = now_s();
    int rc = cudaSetDevice(h->device) == cudaSuccess ? TDM_OK : tdm_cuda_err(cudaGetLastError(), &h->dead);
    if (rc == TDM_OK) rc = reserve_table(h, n ? n : 1);
    if (rc != TDM_OK) return rc;
    int workers = h->cfg.workers;
    h->tasks = tasks;
    h->results = results;
    h->n = n;
    /* enough tasks per workpile to fill it, few enough that every worker gets a share */
    size_t admit = n / ((size_t)workers * 16), most = h->cfg.workpile_pairs / 4;
    if (admit < 64) admit = 64;
    if (admit > most) admit = most ? most : 1;
    h->admit = admit;
    h->next = 0;
    h->abort = 0;
    for (int t = 0; t < workers; t++) h->w[t].rc = TDM_OK;
    return TDM_OK;
}

extern "C" void tdm_hybrid_work(tdm_hybrid *h, int k)
{
    if (k >= 0 && k < h->cfg.workers) work(&h->w[k]);
}

extern "C" int tdm_hybrid_end(tdm_hybrid *h)
{
    int rc = TDM_OK;
    for (int t = 0; t < h->cfg.workers; t++) {
        worker *w = &h->w[t];
        if (rc == TDM_OK) rc = w->rc;
        h->stats.workpiles += w->workpiles;
        h->stats.box_entries += w->box_entries;
        h->stats.tri_entries += w->tri_entries;
        h->stats.gpu_seconds += w->gpu_seconds;
        w->workpiles = w->box_entries = w->tri_entries = 0;
        w->gpu_seconds = 0;
    }
    if (rc == TDM_OK && h->dead) rc = TDM_EGPU;
    h->stats.runs++;
    h->stats.tasks += h->n;
    h->stats.seconds += now_s() - h->t_begin;
    return rc;
}

extern "C" void tdm_hybrid_get_stats(const tdm_hybrid *h, tdm_hybrid_stats *s) { *s = h->stats; }
