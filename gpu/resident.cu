/* The GPU-resident engine; gpu.h describes the method. Kernels are thin: index
 * math, then the geom/ functions the CPU engine calls too. */
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "../geom/tri.h"
#include "internal.h"

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

/* struct tdm_gpu_mesh: internal.h */

/* What the box tests need of a task, first and 16-byte aligned so that a
 * thread reads it in five 16-byte loads; the rest is read only by leaf tests. */
typedef struct __align__(16) dhot {
    tdm_fxform fx; /* b_in_a in float, for the boxes */
    float tol;
    uint32_t mode, cap, pad;
    const tdm_bvh_node *an, *bn;
} dhot;

typedef struct __align__(16) dtask {
    dhot h;
    const float *at, *bt;
    const uint32_t *aid, *bid;
    tdm_xform x; /* b_in_a in double, for the triangles */
} dtask;

static_assert(sizeof(dhot) == 80, "dhot is read as five float4");
static_assert(sizeof(tdm_bvh_node) == 64 && alignof(tdm_bvh_node) >= 16, "nodes are read as four float4");

__device__ static __forceinline__ void load16(void *dst, const void *src, int n16)
{
    const float4 *s = reinterpret_cast<const float4 *>(src);
    float4 *d = reinterpret_cast<float4 *>(dst);
    for (int k = 0; k < n16; k++) d[k] = __ldg(s + k);
}

/* What the host writes per task: the transform and an index into a table of
 * mesh pairs (one entry for a run of tasks on the same meshes). The device
 * derives everything else (prepare_tasks_kernel). */
typedef struct dinput {
    tdm_xform x;
    uint32_t pair, mode, cap, pad;
} dinput;

typedef struct dpair {
    const tdm_bvh_node *an, *bn;
    const float *at, *bt;
    const uint32_t *aid, *bid;
    float ra, rb;
} dpair;

typedef struct dres {
    uint32_t colliding, truncated, count, done;
    uint32_t first_a, first_b;
} dres;

typedef struct fpair { uint32_t task, a, b; } fpair;

/* One batch in flight: a stream, its own frontier and task buffers. Several
 * slots run at once so that the host fills one batch's tasks, the copies move
 * another's, and the kernels traverse a third. */
typedef struct slot {
    cudaStream_t stream;
    cudaEvent_t ready;        /* recorded after each group of levels */
    fpair *front[2], *leaves, *tris; /* tris: the triangle workpile, as many as leaves */
    uint32_t *cnt;            /* CNT_N: 2 * MAX_ITERS level counters, the overflow flag, MAX_ITERS
                                 triangle workpile sizes */
    uint32_t *h_cnt;          /* pinned: one frontier size + the overflow flag, then (when finishing)
                                 every level's counters, for the work statistics */
    dtask *d_tasks;           /* derived on the device from d_in and d_pairs */
    dinput *d_in, *h_in;      /* h_in pinned */
    dpair *d_pairs, *h_pairs; /* h_pairs pinned */
    dres *d_res, *h_res;      /* h_res pinned */
    uint32_t *h_cap;          /* per task: 0 in bool mode, else the contacts cap (the results read
                                 this compact copy rather than the tasks) */
    uint64_t cap_tasks;
    size_t lo, hi;            /* the task range it runs */
    int it, active, finishing;
    /* each group of levels (launch_group) as a CUDA graph, made on first use: a level's
     * three launches cost the host ~4 us each, ~0.5 ms a run, and under load (lanes
     * launching at once) more than the kernels take */
    cudaGraphExec_t *groups;
} slot;

#define MAX_SLOTS 8
#define MAX_FILL 16

/* Host threads that write a batch's task buffers together: at 100 000 tasks
 * the writes (11 MB into pinned memory) take one core ~2.5 ms, longer than the
 * GPU needs for an easy batch. A job is cut into shares that the caller and the
 * workers claim one at a time, so that the caller waits only for shares being
 * written, never for a worker still asleep: in tandemd under load (64 client
 * threads, three lanes of seven on 16 cores) waiting for the whole team to have
 * run made a 24 000-task fill take 1 ms. The others sleep between jobs. */
typedef struct fill_team {
    int n;
    int started;
    pthread_t th[MAX_FILL];
    pthread_mutex_t mu;
    pthread_cond_t go;
    uint64_t gen;   /* the current job's number (under mu, read atomically) */
    uint64_t claim; /* gen << 32 | the next share to take: a share is claimed for its job only */
    uint32_t done;  /* shares of the current job written */
    int quit;
    void (*fn)(void *arg, int k, int n);
    void *arg;
    int shares;
} fill_team;

typedef struct team_worker { fill_team *t; int k; } team_worker;

/* Claims and writes shares of job `gen` until none is left. */
static void team_work(fill_team *t, uint64_t gen, void (*fn)(void *, int, int), void *arg, int shares)
{
    uint64_t c = __atomic_load_n(&t->claim, __ATOMIC_ACQUIRE);
    for (;;) {
        if (c >> 32 != (gen & 0xffffffffu) || (c & 0xffffffffu) >= (uint64_t)shares) return;
        if (!__atomic_compare_exchange_n(&t->claim, &c, c + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        fn(arg, (int)(c & 0xffffffffu), shares);
        __atomic_add_fetch(&t->done, 1, __ATOMIC_ACQ_REL);
        c = __atomic_load_n(&t->claim, __ATOMIC_ACQUIRE);
    }
}

/* Workers spin this many rounds (a few microseconds) for the next job before
 * sleeping. Spinning longer does not pay: in tandemd under load (64 clients on
 * the same host) a 1 ms spin kept seven cores busy and made every fill slower
 * (12.3M vs 7.8M queries/s end to end on alpha-1.5); 100 rounds and none at all
 * measured the same. */
#define TEAM_SPIN 100

static void *team_main(void *p)
{
    prctl(PR_SET_NAME, "tdm-gpu-fill"); /* shown by top -H and in /proc */
    team_worker w = *(team_worker *)p;
    free(p);
    fill_team *t = w.t;
    uint64_t seen = 0;
    for (;;) {
        for (int i = 0; i < TEAM_SPIN && __atomic_load_n(&t->gen, __ATOMIC_ACQUIRE) == seen &&
                        !__atomic_load_n(&t->quit, __ATOMIC_ACQUIRE);
             i++)
            __builtin_ia32_pause();
        pthread_mutex_lock(&t->mu);
        while (t->gen == seen && !t->quit) pthread_cond_wait(&t->go, &t->mu);
        int quit = t->quit;
        seen = t->gen;
        void (*fn)(void *, int, int) = t->fn;
        void *arg = t->arg;
        int shares = t->shares;
        pthread_mutex_unlock(&t->mu);
        if (quit) break;
        /* a job already finished (or replaced) has nothing left to claim under its number */
        team_work(t, seen, fn, arg, shares);
    }
    return NULL;
}

/* Runs fn(arg, k, shares) for k = 0..shares-1 on the caller and whichever
 * workers wake in time; returns when all are written. */
static void team_run(fill_team *t, void (*fn)(void *, int, int), void *arg, int shares)
{
    if (t->n <= 1 || shares <= 1) {
        for (int k = 0; k < shares; k++) fn(arg, k, shares);
        return;
    }
    pthread_mutex_lock(&t->mu);
    t->fn = fn;
    t->arg = arg;
    t->shares = shares;
    uint64_t gen = ++t->gen;
    __atomic_store_n(&t->done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&t->claim, (gen & 0xffffffffu) << 32, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    team_work(t, gen, fn, arg, shares);
    while (__atomic_load_n(&t->done, __ATOMIC_ACQUIRE) < (uint32_t)shares) __builtin_ia32_pause();
}

static int team_start(fill_team *t, int n)
{
    t->n = 1;
    if (pthread_mutex_init(&t->mu, NULL) || pthread_cond_init(&t->go, NULL)) return TDM_ESYS;
    t->started = 1;
    for (int k = 1; k < n; k++) {
        team_worker *w = (team_worker *)malloc(sizeof *w);
        if (!w) return TDM_ENOMEM;
        *w = team_worker{t, k};
        if (pthread_create(&t->th[k], NULL, team_main, w) != 0) {
            free(w);
            return TDM_ESYS;
        }
        t->n = k + 1;
    }
    return TDM_OK;
}

static void team_stop(fill_team *t)
{
    if (!t->started) return;
    pthread_mutex_lock(&t->mu);
    __atomic_store_n(&t->quit, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&t->go);
    pthread_mutex_unlock(&t->mu);
    for (int k = 1; k < t->n; k++) pthread_join(t->th[k], NULL);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->go);
    t->started = 0;
}

/* The device memory a tdm_gpu and its lanes hold together, against one budget.
 * Any thread: uploads, frees and the lanes' scratch growth may happen at once. */
typedef struct gpu_budget {
    pthread_mutex_t mu;
    uint64_t limit;
    uint64_t mesh_bytes;    /* resident trees */
    uint64_t scratch_bytes; /* every lane's frontiers and task buffers */
    uint64_t other_bytes;   /* scratch other engines took (tdm_gpu_account) */
    int users;              /* the tdm_gpu and its lanes: the last one out frees it */
} gpu_budget;

enum { BUD_MESH, BUD_SCRATCH, BUD_OTHER };

/* Adds `delta` bytes of one kind; a growth that would pass the limit is refused
 * (TDM_EGPUMEM) and changes nothing. */
static int budget_add(gpu_budget *b, int kind, int64_t delta)
{
    pthread_mutex_lock(&b->mu);
    uint64_t *x = kind == BUD_MESH ? &b->mesh_bytes : kind == BUD_SCRATCH ? &b->scratch_bytes : &b->other_bytes;
    int rc = TDM_OK;
    if (delta > 0 && b->mesh_bytes + b->scratch_bytes + b->other_bytes + (uint64_t)delta > b->limit) rc = TDM_EGPUMEM;
    else *x += (uint64_t)delta; /* a negative delta wraps back down */
    pthread_mutex_unlock(&b->mu);
    return rc;
}

/* Drops one user's reference; the last frees it. */
static void budget_release(gpu_budget *b)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    int left = --b->users;
    pthread_mutex_unlock(&b->mu);
    if (left > 0) return;
    pthread_mutex_destroy(&b->mu);
    free(b);
}

struct tdm_gpu {
    tdm_gpu_config cfg;
    int dead;
    int grid; /* blocks per launch: the kernels loop over their work */
    int n_slots;
    gpu_budget *bud;         /* shared with the lanes */

    uint64_t scratch_bytes;  /* this lane's frontiers (counted in bud too) */
    uint64_t cap_pairs, cap_leaves; /* per slot */
    slot slots[MAX_SLOTS];
    fill_team team;
    tdm_gpu_stats stats;
    int trace; /* TDM_GPU_TRACE set: a few lines per run on stderr */
    int graphs; /* groups of levels launched as CUDA graphs (TDM_GPU_GRAPHS=0: one launch per kernel) */
    /* this run's fill, for the trace: team wall time, and CPU time building and writing tasks (ns) */
    uint64_t tr_team, tr_feed, tr_write;
    uint32_t tr_shares, tr_caller;
};

static int map_error(tdm_gpu *g, cudaError_t e)
{
    if (is_sticky(e)) g->dead = 1;
    cudaGetLastError();
    return e == cudaErrorMemoryAllocation ? TDM_EGPUMEM : TDM_EGPU;
}

/* ---- kernels ------------------------------------------------------------------- */

#define BLOCK 256
/* Iterations of one traversal: one per BVTT level, and a tree pair is at most
 * 2 * TDM_BVH_MAX_DEPTH levels deep. */
#define MAX_ITERS (2 * TDM_BVH_MAX_DEPTH + 2)
/* Iterations launched between two looks at the frontier's size from the host. */
#define ITERS_PER_SYNC 8
#define MAX_GROUPS ((MAX_ITERS + ITERS_PER_SYNC - 1) / ITERS_PER_SYNC)

/* cnt[2 * it] is the frontier size of iteration it, cnt[2 * it + 1] the number of
 * leaf pairs it found. Both count past the buffers' capacities, so that an
 * overflow is seen (and the batch re-run) instead of truncating. */
__global__ void init_frontier_kernel(fpair *f, uint32_t n, uint32_t *cnt)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) f[i] = fpair{i, 0, 0};
    if (i == 0) cnt[0] = n;
}

__global__ void prepare_tasks_kernel(const dinput *in, const dpair *pairs, dtask *tasks, uint32_t n)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    dinput d = in[i];
    dpair p = pairs[d.pair];
    dtask t;
    t.h.fx = tdm_fxform_of(&d.x);
    t.h.tol = tdm_obb_tolerance(p.ra, p.rb, (float)tdm_d3_len(d.x.t));
    t.h.mode = d.mode;
    t.h.cap = d.cap;
    t.h.pad = 0;
    t.h.an = p.an;
    t.h.bn = p.bn;
    t.at = p.at;
    t.bt = p.bt;
    t.aid = p.aid;
    t.bid = p.bid;
    t.x = d.x;
    tasks[i] = t;
}

/* A traversal tile's output room: a block prefix sum of each thread's packed
 * count (next-frontier entries in the low 16 bits, leaf pairs above) and one
 * atomic per block on each counter. Returns the thread's packed offset; the
 * block's bases are in *base_child and *base_leaf (shared) on return. */
template <class Scan>
__device__ static __forceinline__ uint32_t place(typename Scan::TempStorage &tmp, uint32_t packed, uint32_t *cnt,
                                                 int it, uint32_t *base_child, uint32_t *base_leaf)
{
    uint32_t off, total;
    Scan(tmp).ExclusiveSum(packed, off, total);
    if (threadIdx.x == 0) {
        *base_child = (total & 0xffffu) ? atomicAdd(&cnt[2 * (it + 1)], total & 0xffffu) : 0;
        *base_leaf = (total >> 16) ? atomicAdd(&cnt[2 * it + 1], total >> 16) : 0;
    }
    __syncthreads();
    return off;
}

/* The block traversals' answer to an overlapping node pair (na at index ia, nb
 * at ib) of task `task`: a leaf pair (returns 1 << 16), or the next-frontier
 * entry (returns 1) naming the block under each node the shared descent rule
 * (tdm_bvtt_children) splits, marked with `block`, and the other node alone. */
__device__ static __forceinline__ uint32_t descend_blocks(const tdm_bvh_node *na, uint32_t ia, const tdm_bvh_node *nb,
                                                          uint32_t ib, uint32_t task, uint32_t block, fpair *o)
{
    int la = tdm_node_is_leaf(na), lb = tdm_node_is_leaf(nb);
    if (la && lb) {
        *o = fpair{task, ia, ib};
        return 1u << 16;
    }
    if (!la && !lb) {
        float ea = na->extent[0] * na->extent[0] + na->extent[1] * na->extent[1] + na->extent[2] * na->extent[2];
        float eb = nb->extent[0] * nb->extent[0] + nb->extent[1] * nb->extent[1] + nb->extent[2] * nb->extent[2];
        if (ea > TDM_DESCEND_BOTH_RATIO * eb) lb = 1;
        else if (eb > TDM_DESCEND_BOTH_RATIO * ea) la = 1;
    }
    *o = fpair{task, la ? ia : (uint32_t)na->link | block, lb ? ib : (uint32_t)nb->link | block};
    return 1;
}

/* Writes a block traversal thread's output (packed as descend_blocks returns
 * it, 0 for none) at the room place() gave it, or flags the overflow. */
__device__ static __forceinline__ void put_block_output(uint32_t packed, uint32_t off, uint32_t base_child,
                                                        uint32_t base_leaf, fpair o, fpair *out, fpair *leaves,
                                                        uint32_t cap_pairs, uint32_t cap_leaves, uint32_t *overflow)
{
    if (packed >> 16) {
        uint32_t k = base_leaf + (off >> 16);
        if (k < cap_leaves) leaves[k] = o;
        else *overflow = 1;
    } else if (packed) {
        uint32_t k = base_child + (off & 0xffffu);
        if (k < cap_pairs) out[k] = o;
        else *overflow = 1;
    }
}

/* TDM_GPU_TRAVERSE_BLOCKS: one BVTT level for every query at once, on the
 * blocked layout (see blocked_layout), as Damkjaer & Erleben process their
 * blocks (with blocks of two siblings, a binary tree's): a frontier entry (task, a, b) stands for a block of up to
 * 2 x 2 node pairs, the node sets {a, a + 1} when bit 31 of a is set, else {a},
 * and likewise for b; siblings are adjacent, so each set is one contiguous run
 * of 64-byte nodes. Four threads take an entry: thread j loads node j of the
 * block's four (A0, A1, B0, B1) into shared memory, and each then tests one
 * pair (A_x, B_y) of them: four node loads shared by four box tests, where one
 * thread per pair loaded eight. An overlapping pair writes one entry to the
 * next frontier (the children it descends to, per the shared descent rule) or
 * a leaf pair to the leaf workpile; a block prefix sum (CUB) places them and
 * one atomic per block reserves their room. */
#define SPLIT 0x80000000u
#define WIDE SPLIT
#define WIDE_IMAGINARY(n) ((n)->extent[0] < 0.0f) /* see wide_layout; never so in the binary layout */

/* The body of both block traversals: entries of blocks of W nodes (bit 31 of
 * a node index: the block there, else that node alone), W x W threads each. */
template <int W>
__device__ static __forceinline__ void traverse_groups(const fpair *in, fpair *out, fpair *leaves,
                                                       const dtask *tasks, const dres *res, uint32_t *cnt, int it,
                                                       uint32_t cap_pairs, uint32_t cap_leaves, uint32_t *overflow)
{
    constexpr unsigned G = W * W; /* threads per entry */
    typedef cub::BlockScan<uint32_t, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan_tmp;
    __shared__ uint32_t base_child, base_leaf;
    __shared__ tdm_bvh_node blk[BLOCK / G][2 * W];
    uint32_t n = min(cnt[2 * it], cap_pairs);
    unsigned q = threadIdx.x / G, j = threadIdx.x % G, x = j / W, y = j % W;
    for (uint64_t tile = (uint64_t)blockIdx.x * BLOCK; tile < (uint64_t)G * n; tile += (uint64_t)gridDim.x * BLOCK) {
        uint32_t e = (uint32_t)((tile + threadIdx.x) / G);
        uint32_t packed = 0; /* a next-frontier entry in the low 16 bits, a leaf pair as 1 << 16 */
        fpair p = {0, 0, 0}, o = {0, 0, 0};
        int live = 0;
        dhot t;
        if (e < n) {
            p = in[e];
            live = !*(volatile const uint32_t *)&res[p.task].done;
        }
        uint32_t a = p.a & ~SPLIT, b = p.b & ~SPLIT;
        int sa = (p.a & SPLIT) != 0, sb = (p.b & SPLIT) != 0;
        if (live) {
            load16(&t, &tasks[p.task].h, 5);
            /* thread j < 2W loads node j of the entry's: A0..A(W-1), B0..B(W-1) (absent ones are not loaded) */
            if (j < W && (j == 0 || sa)) load16(&blk[q][j], &t.an[a + j], 4);
            if (j >= W && j < 2 * W && (j == W || sb)) load16(&blk[q][j], &t.bn[b + j - W], 4);
        }
        __syncwarp(); /* an entry's threads are lanes of one warp */
        if (live && (x == 0 || sa) && (y == 0 || sb)) {
            const tdm_bvh_node *na = &blk[q][x], *nb = &blk[q][W + y];
            if (!WIDE_IMAGINARY(na) && !WIDE_IMAGINARY(nb)) {
                tdm_wbox w;
                tdm_wbox_of(&t.fx, nb, &w);
                if (tdm_obb_overlap_w(na, &w, nb->extent, t.tol))
                    packed = descend_blocks(na, a + x, nb, b + y, p.task, SPLIT, &o);
            }
        }
        uint32_t off = place<Scan>(scan_tmp, packed, cnt, it, &base_child, &base_leaf);
        put_block_output(packed, off, base_child, base_leaf, o, out, leaves, cap_pairs, cap_leaves, overflow);
        __syncthreads(); /* scan_tmp, the bases and blk are reused by the next tile */
    }
}

__global__ void __launch_bounds__(BLOCK) traverse_blocks_kernel(const fpair *in, fpair *out, fpair *leaves,
                                                                const dtask *tasks, const dres *res, uint32_t *cnt,
                                                                int it, uint32_t cap_pairs, uint32_t cap_leaves,
                                                                uint32_t *overflow)
{
    traverse_groups<2>(in, out, leaves, tasks, res, cnt, it, cap_pairs, cap_leaves, overflow);
}

/* TDM_GPU_TRAVERSE_WIDE: one BVTT level on the four-wide blocked hierarchy
 * (wide_layout). A frontier entry (task, a, b) stands for up to 4 x 4 node pairs:
 * the block of four at a when bit 31 (WIDE) of a is set, else node a alone, and
 * likewise b. Sixteen threads (half a warp) take an entry: threads 0-3 load A's
 * nodes, 4-7 B's, into shared memory, and thread (x, y) tests A_x against B_y.
 * An overlapping pair writes one next-frontier entry, the blocks under both
 * nodes (or one, per the shared descent rule, or when the other is a leaf), or
 * a leaf pair; entries come from distinct parent tests, so no pair is tested
 * twice. Placement as in the other traversals. */
__global__ void __launch_bounds__(BLOCK) traverse_wide_kernel(const fpair *in, fpair *out, fpair *leaves,
                                                              const dtask *tasks, const dres *res, uint32_t *cnt,
                                                              int it, uint32_t cap_pairs, uint32_t cap_leaves,
                                                              uint32_t *overflow)
{
    traverse_groups<4>(in, out, leaves, tasks, res, cnt, it, cap_pairs, cap_leaves, overflow);
}

/* tdm_bvtt_children on the blocked layout (blocked_layout): an internal node's
 * children are link and link + 1. */
__device__ static __forceinline__ int blocked_children(const tdm_bvh_node *na, uint32_t ia, const tdm_bvh_node *nb,
                                                       uint32_t ib, uint32_t ca[2], int *nca, uint32_t cb[2], int *ncb)
{
    int k = tdm_bvtt_children(na, ia, nb, ib, ca, nca, cb, ncb);
    if (*nca == 2) { ca[0] = (uint32_t)na->link; ca[1] = ca[0] + 1; }
    if (*ncb == 2) { cb[0] = (uint32_t)nb->link; cb[1] = cb[0] + 1; }
    return k;
}

/* TDM_GPU_TRAVERSE_PAIRS (the default): one BVTT level for every query at once,
 * on the blocked layout: each thread tests one node pair's boxes; a block prefix
 * sum (CUB) places the children of overlapping pairs, and overlapping leaf pairs,
 * and one atomic per block reserves their room. A descent's (up to) 2 x 2 child
 * pairs are written side by side, so the next level gives them to neighbouring
 * threads, whose loads of the two sibling blocks (one 128-byte line each) the
 * warp's load instructions serve once for all of them. Against the blocks
 * traversal this loads each node in every thread that needs it (from the same
 * line) but leaves no thread idle when only one node of a pair splits, which the
 * descent rule does often on scenes of unequal parts: on Apartment (100 000
 * random poses, H100) bool ran at 5.0M queries/s against 3.1M with blocks,
 * contacts at 0.88M against 0.69M (bench/results/traversal.md). */
__global__ void __launch_bounds__(BLOCK) traverse_kernel(const fpair *in, fpair *out, fpair *leaves,
                                                         const dtask *tasks, const dres *res, uint32_t *cnt, int it,
                                                         uint32_t cap_pairs, uint32_t cap_leaves, uint32_t *overflow)
{
    typedef cub::BlockScan<uint32_t, BLOCK> Scan;
    __shared__ typename Scan::TempStorage scan_tmp;
    __shared__ uint32_t base_child, base_leaf;
    uint32_t n = min(cnt[2 * it], cap_pairs);
    for (uint32_t tile = blockIdx.x * BLOCK; tile < n; tile += gridDim.x * BLOCK) {
        uint32_t i = tile + threadIdx.x;
        uint32_t packed = 0; /* children in the low 16 bits, a leaf pair as 1 << 16 */
        fpair p = {0, 0, 0};
        uint32_t ca[2] = {0, 0}, cb[2] = {0, 0};
        int nca = 0, ncb = 0;
        if (i < n) {
            p = in[i];
            if (!*(volatile const uint32_t *)&res[p.task].done) {
                dhot t;
                tdm_bvh_node na, nb;
                load16(&t, &tasks[p.task].h, 5);
                load16(&na, &t.an[p.a], 4);
                load16(&nb, &t.bn[p.b], 4);
                tdm_wbox w;
                tdm_wbox_of(&t.fx, &nb, &w);
                if (tdm_obb_overlap_w(&na, &w, nb.extent, t.tol)) {
                    int k = blocked_children(&na, p.a, &nb, p.b, ca, &nca, cb, &ncb);
                    packed = k ? (uint32_t)k : (1u << 16);
                }
            }
        }
        uint32_t off = place<Scan>(scan_tmp, packed, cnt, it, &base_child, &base_leaf);
        if (packed >> 16) {
            uint32_t o = base_leaf + (off >> 16);
            if (o < cap_leaves) leaves[o] = p;
            else *overflow = 1;
        } else if (packed) {
            uint32_t o = base_child + (off & 0xffffu);
            for (int x = 0; x < nca; x++)
                for (int y = 0; y < ncb; y++, o++) {
                    if (o < cap_pairs) out[o] = fpair{p.task, ca[x], cb[y]};
                    else *overflow = 1;
                }
        }
        __syncthreads(); /* scan_tmp and the bases are reused by the next tile */
    }
}

__device__ static void load_tri(const float *v, tdm_dvec3 out[3])
{
    for (int k = 0; k < 3; k++) out[k] = tdm_d3(v[3 * k], v[3 * k + 1], v[3 * k + 2]);
}

/* The triangle pairs of one level's leaf pairs, in two passes. The first
 * (one thread per leaf pair, up to 2 x 2 triangle pairs) rejects every pair the
 * floating-point stage of the plane tests proves apart (tdm_tri_planes_separate)
 * and appends the rest to the level's triangle workpile; the second (one thread
 * per triangle pair) runs the exact test on them. The exact test needs ~220
 * registers, which held the single kernel that did both to 1 block of 256 threads
 * per SM, on pairs that were mostly rejected in a few dozen instructions; the
 * first pass now runs at full occupancy, the second only on the survivors. */
#define TRI_CNT (2 * MAX_ITERS + 1) /* cnt[TRI_CNT + it]: the triangle workpile of iteration it */
#define CNT_N (3 * MAX_ITERS + 1)

__global__ void __launch_bounds__(BLOCK) tri_filter_kernel(const fpair *leaves, uint32_t *cnt, int it,
                                                           uint32_t cap_leaves, const dtask *tasks, const dres *res,
                                                           fpair *tris, uint32_t *overflow)
{
    uint32_t n = min(cnt[2 * it + 1], cap_leaves);
    unsigned lane = threadIdx.x & 31u;
    /* every thread of a block runs the same tiles, so that whole warps meet at the shuffles */
    for (uint32_t tile = blockIdx.x * BLOCK; tile < n; tile += gridDim.x * BLOCK) {
        uint32_t i = tile + threadIdx.x;
        uint32_t keep = 0; /* bit 2a + b: triangle pair (a, b) of the leaf pair needs the exact test */
        fpair p = {0, 0, 0};
        uint32_t fa = 0, fb = 0;
        if (i < n) {
            p = leaves[i];
            if (!*(volatile const uint32_t *)&res[p.task].done) {
                const dtask *t = &tasks[p.task];
                const tdm_bvh_node *na = &t->h.an[p.a], *nb = &t->h.bn[p.b];
                fa = tdm_leaf_first(na);
                fb = tdm_leaf_first(nb);
                uint32_t ca = tdm_leaf_count(na), cb = tdm_leaf_count(nb);
                tdm_dvec3 tb[2][3], ta[3];
                for (uint32_t j = 0; j < cb; j++) {
                    load_tri(&t->bt[9 * (size_t)(fb + j)], tb[j]);
                    for (int k = 0; k < 3; k++) tb[j][k] = tdm_xform_apply(&t->x, tb[j][k]);
                }
                for (uint32_t a = 0; a < ca; a++) {
                    load_tri(&t->at[9 * (size_t)(fa + a)], ta);
                    for (uint32_t b = 0; b < cb; b++)
                        if (!tdm_tri_planes_separate(ta, tb[b])) keep |= 1u << (2 * a + b);
                }
            }
        }
        /* room for the warp's survivors: one atomic per warp */
        uint32_t k = (uint32_t)__popc(keep), incl = k;
        for (int d = 1; d < 32; d <<= 1) {
            uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
            if (lane >= (unsigned)d) incl += v;
        }
        uint32_t total = __shfl_sync(0xffffffffu, incl, 31), base = 0;
        if (lane == 31 && total) base = atomicAdd(&cnt[TRI_CNT + it], total);
        uint32_t o = __shfl_sync(0xffffffffu, base, 31) + incl - k;
        for (int x = 0; x < 4; x++) {
            if (!(keep >> x & 1u)) continue;
            if (o < cap_leaves) tris[o] = fpair{p.task, fa + (uint32_t)(x >> 1), fb + (uint32_t)(x & 1)};
            else *overflow = 1; /* counted past the capacity: the batch is re-run with more room */
            o++;
        }
    }
}

/* Adds a thread's intersecting pairs to its task's count. Consecutive leaf
 * pairs mostly belong to one task, and a task in contacts mode may have
 * thousands of them: the threads of a warp on the same task add their counts
 * together (one atomic per task and warp, not one per pair), which is what keeps
 * the atomics on one address from serialising the kernel. */
__device__ static void add_hits(uint32_t task, uint32_t hits, const dtask *tasks, dres *res)
{
    unsigned peers = __match_any_sync(__activemask(), task);
    uint32_t sum = __reduce_add_sync(peers, hits);
    if ((threadIdx.x & 31) != (unsigned)(__ffs(peers) - 1)) return;
    dres *r = &res[task];
    uint32_t old = atomicAdd(&r->count, sum);
    if (old + sum > tasks[task].h.cap) { /* a pair beyond the cap exists: stop */
        r->truncated = 1;
        r->done = 1;
    }
}

__global__ void __launch_bounds__(BLOCK) tri_exact_kernel(const fpair *tris, const uint32_t *cnt, int it,
                                                          uint32_t cap, const dtask *tasks, dres *res)
{
    uint32_t n = min(cnt[TRI_CNT + it], cap);
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        fpair p = tris[i]; /* task, triangle of A, triangle of B (leaf order) */
        dres *r = &res[p.task];
        if (*(volatile uint32_t *)&r->done) continue;
        const dtask *t = &tasks[p.task];
        tdm_dvec3 ta[3], tb[3];
        load_tri(&t->at[9 * (size_t)p.a], ta);
        load_tri(&t->bt[9 * (size_t)p.b], tb);
        for (int k = 0; k < 3; k++) tb[k] = tdm_xform_apply(&t->x, tb[k]);
        if (!tdm_tri_tri_intersect(ta, tb)) continue;
        if (!*(volatile uint32_t *)&r->colliding && atomicCAS(&r->colliding, 0u, 1u) == 0u) {
            r->first_a = t->aid[p.a];
            r->first_b = t->bid[p.b];
        }
        if (t->h.mode == TDM_MODE_BOOL) r->done = 1;
        else add_hits(p.task, 1, tasks, res);
    }
}

/* ---- host side ------------------------------------------------------------------- */


extern "C" tdm_gpu_config tdm_gpu_config_default(void)
{
    tdm_gpu_config c;
    c.device = 0;
    c.memory_budget = 0;         /* 0: 80% of the device's memory */
    c.frontier_pairs = 1u << 26; /* per stream; clamped to an eighth of the budget */
    c.streams = 2;
    c.chunk_tasks = 0;           /* 0: automatic */
    c.fill_threads = 0;          /* 0: min(8, cores) */
    c.traversal = TDM_GPU_TRAVERSE_PAIRS;
    return c;
}

static uint64_t scratch_need(const tdm_gpu *g, uint64_t pairs, uint64_t leaves)
{
    return (uint64_t)g->n_slots * (pairs * 2 * sizeof(fpair) + leaves * 2 * sizeof(fpair)); /* + the triangle workpile */
}

/* Forgets a slot's graphs: they hold the buffers' addresses and sizes. */
static void drop_graphs(slot *s)
{
    if (!s->groups) return;
    for (int k = 0; k < MAX_GROUPS; k++)
        if (s->groups[k]) cudaGraphExecDestroy(s->groups[k]);
    memset(s->groups, 0, MAX_GROUPS * sizeof *s->groups);
}

/* Frees every slot's frontier buffers; the budget is the caller's to settle. */
static void free_frontier_buffers(tdm_gpu *g)
{
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        drop_graphs(s);
        cudaFree(s->front[0]);
        cudaFree(s->front[1]);
        cudaFree(s->leaves);
        cudaFree(s->tris);
        s->front[0] = s->front[1] = s->leaves = s->tris = NULL;
    }
}

/* Frees every slot's frontier buffers and gives their bytes back. */
static void free_frontiers(tdm_gpu *g)
{
    free_frontier_buffers(g);
    g->cap_pairs = g->cap_leaves = 0;
    budget_add(g->bud, BUD_SCRATCH, -(int64_t)g->scratch_bytes);
    g->scratch_bytes = 0;
}

/* Frontier buffers of every slot for `pairs` node pairs and `leaves` leaf pairs
 * (contents are not kept; no slot may be running). OVERFLOW_RC when the budget
 * does not allow them; the old buffers are then kept. */
static int reserve(tdm_gpu *g, uint64_t pairs, uint64_t leaves)
{
    if (pairs <= g->cap_pairs && leaves <= g->cap_leaves) return TDM_OK;
    if (pairs < g->cap_pairs) pairs = g->cap_pairs;
    if (leaves < g->cap_leaves) leaves = g->cap_leaves;
    if (pairs >= (1ull << 31) || leaves >= (1ull << 31)) return OVERFLOW_RC;
    uint64_t need = scratch_need(g, pairs, leaves);
    /* the growth is taken from the budget (shared with the other lanes) first */
    if (budget_add(g->bud, BUD_SCRATCH, (int64_t)(need - g->scratch_bytes)) != TDM_OK) return OVERFLOW_RC;
    uint64_t old_p = g->cap_pairs, old_l = g->cap_leaves;
    g->scratch_bytes = need;
    free_frontier_buffers(g);
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        if (cudaMalloc(&s->front[0], pairs * sizeof(fpair)) != cudaSuccess ||
            cudaMalloc(&s->front[1], pairs * sizeof(fpair)) != cudaSuccess ||
            cudaMalloc(&s->leaves, leaves * sizeof(fpair)) != cudaSuccess ||
            cudaMalloc(&s->tris, leaves * sizeof(fpair)) != cudaSuccess) {
            cudaGetLastError();
            free_frontiers(g); /* and their bytes */
            /* the device may be short of memory the budget allowed: try to get the old size back */
            if (old_p && reserve(g, old_p, old_l) != TDM_OK) g->dead = 1;
            return OVERFLOW_RC;
        }
    }
    g->cap_pairs = pairs;
    g->cap_leaves = leaves;
    return TDM_OK;
}

/* Device bytes of a slot's per-task buffers for c tasks. */
static uint64_t task_bytes(uint64_t c) { return c * (sizeof(dtask) + sizeof(dres) + sizeof(dinput) + sizeof(dpair)); }

static void free_task_buffers(slot *s)
{
    drop_graphs(s);
    cudaFree(s->d_tasks); cudaFree(s->d_res); cudaFree(s->d_in); cudaFree(s->d_pairs);
    cudaFreeHost(s->h_res); cudaFreeHost(s->h_in); cudaFreeHost(s->h_pairs);
    free(s->h_cap);
    s->h_cap = NULL;
    s->d_tasks = NULL; s->d_res = NULL; s->d_in = NULL; s->d_pairs = NULL;
    s->h_res = NULL; s->h_in = NULL; s->h_pairs = NULL;
}

/* Frees a slot's task buffers and gives their bytes back. */
static void free_tasks(tdm_gpu *g, slot *s)
{
    free_task_buffers(s);
    budget_add(g->bud, BUD_SCRATCH, -(int64_t)task_bytes(s->cap_tasks));
    s->cap_tasks = 0;
}

static int reserve_tasks(tdm_gpu *g, slot *s, uint64_t n)
{
    if (n <= s->cap_tasks) return TDM_OK;
    uint64_t c = s->cap_tasks ? s->cap_tasks : 1024;
    while (c < n) c *= 2;
    if (budget_add(g->bud, BUD_SCRATCH, (int64_t)(task_bytes(c) - task_bytes(s->cap_tasks))) != TDM_OK)
        return TDM_EGPUMEM;
    free_task_buffers(s);
    s->cap_tasks = c; /* counted at the new size: free_tasks gives that back if an allocation fails */
    int ok = cudaMalloc(&s->d_tasks, c * sizeof(dtask)) == cudaSuccess &&
             cudaMalloc(&s->d_res, c * sizeof(dres)) == cudaSuccess &&
             cudaMalloc(&s->d_in, c * sizeof(dinput)) == cudaSuccess &&
             cudaMalloc(&s->d_pairs, c * sizeof(dpair)) == cudaSuccess &&
             cudaMallocHost(&s->h_res, c * sizeof(dres)) == cudaSuccess &&
             cudaMallocHost(&s->h_in, c * sizeof(dinput)) == cudaSuccess &&
             cudaMallocHost(&s->h_pairs, c * sizeof(dpair)) == cudaSuccess;
    if (ok) s->h_cap = (uint32_t *)malloc(c * sizeof(uint32_t));
    if (ok && s->h_cap) return TDM_OK;
    cudaError_t e = ok ? cudaSuccess : cudaGetLastError();
    free_tasks(g, s);
    return ok ? TDM_ENOMEM : map_error(g, e);
}

/* A tdm_gpu on device c.device drawing on bud (taken: the caller's reference
 * passes to it, or is dropped on failure). */
static int create_on(const tdm_gpu_config &c, const cudaDeviceProp &prop, gpu_budget *bud, tdm_gpu **out)
{
    tdm_gpu *g = (tdm_gpu *)calloc(1, sizeof *g);
    if (!g) {
        budget_release(bud);
        return TDM_ENOMEM;
    }
    g->cfg = c;
    g->bud = bud;
    g->n_slots = c.streams;
    g->grid = prop.multiProcessorCount * 8;
    g->trace = getenv("TDM_GPU_TRACE") != NULL;
    const char *graphs = getenv("TDM_GPU_GRAPHS");
    g->graphs = !(graphs && strcmp(graphs, "0") == 0);
    int nf = c.fill_threads;
    if (nf <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        nf = cores < 1 ? 1 : cores > 8 ? 8 : (int)cores;
    }
    if (nf > MAX_FILL) nf = MAX_FILL;
    if (team_start(&g->team, nf) != TDM_OK) {
        tdm_gpu_destroy(g);
        return TDM_ESYS;
    }
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess ||
            cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming) != cudaSuccess ||
            cudaMalloc(&s->cnt, CNT_N * sizeof(uint32_t)) != cudaSuccess ||
            cudaMallocHost(&s->h_cnt, (2 + 2 * MAX_ITERS) * sizeof(uint32_t)) != cudaSuccess) {
            cudaGetLastError();
            tdm_gpu_destroy(g);
            return TDM_EGPU;
        }
    }
    uint64_t pairs = c.frontier_pairs, eighth = c.memory_budget / 8 / scratch_need(g, 1, 1);
    if (pairs > eighth) pairs = eighth;
    if (pairs < 1024) pairs = 1024;
    int rc = reserve(g, pairs, pairs / 2);
    if (rc != TDM_OK) {
        tdm_gpu_destroy(g);
        return rc == OVERFLOW_RC ? TDM_EGPUMEM : rc;
    }
    *out = g;
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
    if (c.streams < 1 || c.streams > MAX_SLOTS ||
        (c.traversal != TDM_GPU_TRAVERSE_PAIRS && c.traversal != TDM_GPU_TRAVERSE_BLOCKS &&
         c.traversal != TDM_GPU_TRAVERSE_WIDE))
        return TDM_EINVAL;
    cudaDeviceProp prop;
    if (cudaSetDevice(c.device) != cudaSuccess || cudaGetDeviceProperties(&prop, c.device) != cudaSuccess) {
        if (why) *why = "the CUDA device cannot be used";
        cudaGetLastError();
        return TDM_ENODEV;
    }
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if (c.memory_budget == 0) c.memory_budget = (uint64_t)(0.8 * (double)total_b);
    gpu_budget *bud = (gpu_budget *)calloc(1, sizeof *bud);
    if (!bud) return TDM_ENOMEM;
    if (pthread_mutex_init(&bud->mu, NULL) != 0) {
        free(bud);
        return TDM_ESYS;
    }
    bud->limit = c.memory_budget;
    bud->users = 1;
    int rc = create_on(c, prop, bud, out);
    if (rc == TDM_OK && why) *why = "";
    return rc;
}

extern "C" int tdm_gpu_create_lane(tdm_gpu *g, tdm_gpu **out)
{
    *out = NULL;
    if (g->dead) return TDM_EGPU;
    cudaDeviceProp prop;
    if (cudaSetDevice(g->cfg.device) != cudaSuccess || cudaGetDeviceProperties(&prop, g->cfg.device) != cudaSuccess)
        return map_error(g, cudaGetLastError());
    pthread_mutex_lock(&g->bud->mu);
    g->bud->users++;
    pthread_mutex_unlock(&g->bud->mu);
    return create_on(g->cfg, prop, g->bud, out);
}

extern "C" void tdm_gpu_destroy(tdm_gpu *g)
{
    if (!g) return;
    team_stop(&g->team);
    free_frontiers(g);
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        cudaFree(s->cnt);
        free_tasks(g, s);
        drop_graphs(s);
        free(s->groups);
        cudaFreeHost(s->h_cnt);
        if (s->ready) cudaEventDestroy(s->ready);
        if (s->stream) cudaStreamDestroy(s->stream);
    }
    budget_release(g->bud);
    free(g);
}

/* The GPU-resident engine's copy of a tree (BLOCKED_NODES(n) nodes): the same
 * nodes breadth first, so that an internal node's two children are adjacent, at
 * link and link + 1, link even: with the array 128-byte aligned, siblings share
 * one 128-byte line, which one load instruction of a warp fetches once for every
 * thread that reads either (the blocks the traversal loads together). The root
 * is node 0; node 1 is unused. Leaves are unchanged. NULL when out of memory. */
#define BLOCKED_NODES(n) ((n) + 1)
static tdm_bvh_node *blocked_layout(const tdm_bvh *bvh)
{
    uint32_t n = bvh->n_nodes;
    tdm_bvh_node *out = (tdm_bvh_node *)calloc(BLOCKED_NODES((size_t)n), sizeof *out);
    uint32_t *order = (uint32_t *)malloc(BLOCKED_NODES((size_t)n) * sizeof *order); /* new index -> old index */
    if (!out || !order || n == 0) {
        free(out);
        free(order);
        return NULL;
    }
    uint32_t tail = 2;
    order[0] = 0;
    for (uint32_t k = 0; k < tail; k++) {
        if (k == 1) continue; /* the unused slot */
        tdm_bvh_node nd = bvh->nodes[order[k]];
        if (!tdm_node_is_leaf(&nd) && tail + 2 <= BLOCKED_NODES(n)) {
            order[tail] = order[k] + 1;          /* left child: next in depth-first order */
            order[tail + 1] = (uint32_t)nd.link; /* right child */
            nd.link = (int32_t)tail;
            tail += 2;
        }
        out[k] = nd;
    }
    free(order);
    return out;
}

/* The four-wide blocked hierarchy (TDM_GPU_TRAVERSE_WIDE), after Damkjaer and
 * Erleben: the root is node 0 (1..3 unused); an internal node's link is its
 * block of four consecutive nodes (256 bytes, the index a multiple of four):
 * its binary grandchildren, two per child, or for a child that is a leaf the
 * leaf itself and an imaginary node (WIDE_IMAGINARY: never overlaps). The tree's
 * internal nodes at odd binary depths are skipped (their boxes are not tested);
 * leaves keep their triangles. *count gets the nodes. NULL when out of memory. */
static tdm_bvh_node *wide_layout(const tdm_bvh *bvh, uint32_t *count)
{
    uint32_t n = bvh->n_nodes;
    size_t cap = 4 + 4 * (size_t)n;
    tdm_bvh_node *out = (tdm_bvh_node *)calloc(cap, sizeof *out);
    uint32_t *from = (uint32_t *)malloc(cap * sizeof *from); /* new index -> binary index, or NONE */
    const uint32_t NONE = UINT32_MAX;
    if (!out || !from || n == 0) {
        free(out);
        free(from);
        return NULL;
    }
    tdm_bvh_node imaginary;
    memset(&imaginary, 0, sizeof imaginary);
    imaginary.extent[0] = imaginary.extent[1] = imaginary.extent[2] = -1.0f;
    imaginary.link = -1;
    out[0] = bvh->nodes[0];
    from[0] = 0;
    for (int k = 1; k < 4; k++) {
        out[k] = imaginary;
        from[k] = NONE;
    }
    size_t tail = 4;
    for (size_t k = 0; k < tail; k++) {
        if (from[k] == NONE || tdm_node_is_leaf(&out[k])) continue;
        uint32_t b = from[k], child[2] = {b + 1, (uint32_t)bvh->nodes[b].link};
        size_t block = tail;
        tail += 4;
        out[k].link = (int32_t)block;
        for (int c = 0; c < 2; c++) {
            const tdm_bvh_node *cn = &bvh->nodes[child[c]];
            uint32_t g[2] = {child[c], NONE};
            if (!tdm_node_is_leaf(cn)) {
                g[0] = child[c] + 1;
                g[1] = (uint32_t)cn->link;
            }
            for (int i = 0; i < 2; i++) {
                out[block + 2 * c + i] = g[i] == NONE ? imaginary : bvh->nodes[g[i]];
                from[block + 2 * c + i] = g[i];
            }
        }
    }
    free(from);
    *count = (uint32_t)tail;
    return out;
}

extern "C" int tdm_gpu_mesh_upload(tdm_gpu *g, const tdm_bvh *bvh, tdm_gpu_mesh **out)
{
    *out = NULL;
    if (g->dead) return TDM_EGPU;
    if (cudaSetDevice(g->cfg.device) != cudaSuccess) return map_error(g, cudaGetLastError());
    uint64_t nb = (uint64_t)bvh->n_nodes * sizeof(tdm_bvh_node), tb = (uint64_t)bvh->n_tris * 9 * sizeof(float),
             ib = (uint64_t)bvh->n_tris * sizeof(uint32_t), kb = BLOCKED_NODES(nb / sizeof(tdm_bvh_node)) * sizeof(tdm_bvh_node),
             bytes = nb + kb + tb + ib;
    uint32_t n_wide = 0;
    tdm_bvh_node *wide = NULL;
    if (g->cfg.traversal == TDM_GPU_TRAVERSE_WIDE) {
        wide = wide_layout(bvh, &n_wide);
        if (!wide) return TDM_ENOMEM;
        bytes += (uint64_t)n_wide * sizeof(tdm_bvh_node);
    }
    if (budget_add(g->bud, BUD_MESH, (int64_t)bytes) != TDM_OK) {
        free(wide);
        return TDM_EGPUMEM;
    }
    tdm_gpu_mesh *m = (tdm_gpu_mesh *)calloc(1, sizeof *m);
    tdm_bvh_node *blocked = m ? blocked_layout(bvh) : NULL;
    cudaError_t e = cudaSuccess;
    if (blocked && wide) {
        e = cudaMalloc(&m->wide, (size_t)n_wide * sizeof(tdm_bvh_node));
        if (e == cudaSuccess)
            e = cudaMemcpy(m->wide, wide, (size_t)n_wide * sizeof(tdm_bvh_node), cudaMemcpyHostToDevice);
    }
    free(wide);
    if (blocked) e = cudaMalloc(&m->nodes, nb);
    if (blocked && e == cudaSuccess) e = cudaMalloc(&m->blocked, kb);
    if (blocked && e == cudaSuccess) e = cudaMalloc(&m->tris, tb);
    if (blocked && e == cudaSuccess) e = cudaMalloc(&m->ids, ib);
    if (blocked && e == cudaSuccess) e = cudaMemcpy(m->nodes, bvh->nodes, nb, cudaMemcpyHostToDevice);
    if (blocked && e == cudaSuccess) e = cudaMemcpy(m->blocked, blocked, kb, cudaMemcpyHostToDevice);
    if (blocked && e == cudaSuccess) e = cudaMemcpy(m->tris, bvh->tri_verts, tb, cudaMemcpyHostToDevice);
    if (blocked && e == cudaSuccess) e = cudaMemcpy(m->ids, bvh->tri_ids, ib, cudaMemcpyHostToDevice);
    int have = blocked != NULL;
    free(blocked);
    if (!have || e != cudaSuccess) {
        if (m) {
            m->bytes = bytes;
            tdm_gpu_mesh_free(g, m); /* what was allocated, and the budget */
        } else {
            budget_add(g->bud, BUD_MESH, -(int64_t)bytes);
        }
        return have ? map_error(g, e) : TDM_ENOMEM;
    }
    m->n_nodes = bvh->n_nodes;
    m->n_tris = bvh->n_tris;
    m->radius = bvh->radius;
    m->bytes = bytes;
    *out = m;
    return TDM_OK;
}

extern "C" void tdm_gpu_mesh_free(tdm_gpu *g, tdm_gpu_mesh *m)
{
    if (!m) return;
    cudaSetDevice(g->cfg.device);
    cudaFree(m->wide);
    cudaFree(m->nodes);
    cudaFree(m->blocked);
    cudaFree(m->tris);
    cudaFree(m->ids);
    budget_add(g->bud, BUD_MESH, -(int64_t)m->bytes);
    free(m);
}

static unsigned blocks(uint64_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Queues ITERS_PER_SYNC levels, then the copy of the frontier size and the
 * overflow flag, then the slot's event. Nothing waits. */
/* Queues levels it0.. of a group on the slot's stream (launched, or captured
 * into a graph), then the copies of the last one's frontier size and the
 * overflow flag to the host. Returns the levels queued. */
static int group_levels(int it0) { return it0 + ITERS_PER_SYNC < MAX_ITERS - 1 ? ITERS_PER_SYNC : MAX_ITERS - 1 - it0; }

static int queue_group(tdm_gpu *g, slot *s, int it0)
{
    uint32_t *overflow = s->cnt + 2 * MAX_ITERS;
    int it = it0, end = it0 + group_levels(it0);
    for (; it < end; it++) {
        fpair *in = s->front[it & 1], *out = s->front[(it + 1) & 1];
        uint32_t cp = (uint32_t)g->cap_pairs, cl = (uint32_t)g->cap_leaves;
        if (g->cfg.traversal == TDM_GPU_TRAVERSE_BLOCKS)
            traverse_blocks_kernel<<<g->grid, BLOCK, 0, s->stream>>>(in, out, s->leaves, s->d_tasks, s->d_res, s->cnt,
                                                                     it, cp, cl, overflow);
        else if (g->cfg.traversal == TDM_GPU_TRAVERSE_WIDE)
            traverse_wide_kernel<<<g->grid, BLOCK, 0, s->stream>>>(in, out, s->leaves, s->d_tasks, s->d_res, s->cnt,
                                                                   it, cp, cl, overflow);
        else
            traverse_kernel<<<g->grid, BLOCK, 0, s->stream>>>(in, out, s->leaves, s->d_tasks, s->d_res, s->cnt, it,
                                                              cp, cl, overflow);
        tri_filter_kernel<<<g->grid, BLOCK, 0, s->stream>>>(s->leaves, s->cnt, it, (uint32_t)g->cap_leaves,
                                                            s->d_tasks, s->d_res, s->tris, overflow);
        tri_exact_kernel<<<g->grid, BLOCK, 0, s->stream>>>(s->tris, s->cnt, it, (uint32_t)g->cap_leaves,
                                                           s->d_tasks, s->d_res);
    }
    cudaMemcpyAsync(&s->h_cnt[0], &s->cnt[2 * it], sizeof(uint32_t), cudaMemcpyDeviceToHost, s->stream);
    cudaMemcpyAsync(&s->h_cnt[1], overflow, sizeof(uint32_t), cudaMemcpyDeviceToHost, s->stream);
    return it - it0;
}

/* The graph of the group starting at level it0 (a multiple of ITERS_PER_SYNC),
 * captured from queue_group the first time. */
static int group_graph(tdm_gpu *g, slot *s, int it0, cudaGraphExec_t *out)
{
    int k = it0 / ITERS_PER_SYNC;
    if (!s->groups) {
        s->groups = (cudaGraphExec_t *)calloc(MAX_GROUPS, sizeof *s->groups);
        if (!s->groups) return TDM_ENOMEM;
    }
    if (!s->groups[k]) {
        cudaGraph_t graph = NULL;
        TDM_CUDA_TRY(g, cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
        queue_group(g, s, it0);
        cudaError_t e = cudaStreamEndCapture(s->stream, &graph);
        if (e == cudaSuccess) e = cudaGraphInstantiate(&s->groups[k], graph, 0);
        if (graph) cudaGraphDestroy(graph);
        if (e != cudaSuccess) {
            s->groups[k] = NULL;
            return map_error(g, e);
        }
    }
    *out = s->groups[k];
    return TDM_OK;
}

/* Queues the slot's next group of levels and an event after it. */
static int launch_group(tdm_gpu *g, slot *s)
{
    if (g->graphs) {
        cudaGraphExec_t exec;
        int rc = group_graph(g, s, s->it, &exec);
        if (rc != TDM_OK) return rc;
        TDM_CUDA_TRY(g, cudaGraphLaunch(exec, s->stream));
        s->it += group_levels(s->it);
    } else {
        s->it += queue_group(g, s, s->it);
        TDM_CUDA_TRY(g, cudaGetLastError());
    }
    TDM_CUDA_TRY(g, cudaEventRecord(s->ready, s->stream));
    return TDM_OK;
}

/* Filling a slot's buffers, in parallel, one pass: each thread takes a
 * contiguous share of the tasks (first building them, for tdm_gpu_run_fed) and
 * writes their inputs and the mesh-pair table entries of its share, one entry
 * per run of tasks on the same meshes. A share's entries start at the index of
 * its first task (a share has at most as many runs as tasks), so that no thread
 * needs another's count, nor reads a task another thread writes; each share's
 * entries are uploaded on their own. */
typedef struct fill_job {
    slot *s;
    const tdm_gpu_task *tasks; /* the batch's first task */
    size_t n;
    size_t runs[MAX_FILL];     /* table entries each share wrote, from its first task's index */
    int (*feed)(void *, size_t, size_t); /* writes the share's tasks first (tdm_gpu_run_fed) */
    void *feed_arg;
    size_t base;               /* the batch's first task's index, for feed */
    int feed_failed;
    tdm_gpu *g;                /* for the trace */
    pthread_t caller;
} fill_job;

static size_t share_lo(size_t n, int k, int nk) { return n * (size_t)k / (size_t)nk; }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void fill_share(void *arg, int k, int nk)
{
    fill_job *j = (fill_job *)arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    j->runs[k] = 0;
    int trace = j->g->trace;
    uint64_t t0 = trace ? now_ns() : 0, t1 = 0;
    if (j->feed && j->feed(j->feed_arg, j->base + lo, j->base + hi) != 0) {
        __atomic_store_n(&j->feed_failed, 1, __ATOMIC_RELAXED);
        return;
    }
    if (trace) t1 = now_ns();
    const tdm_gpu_task *t = j->tasks;
    slot *s = j->s;
    size_t p = lo;
    uint32_t cur = 0;
    for (size_t i = lo; i < hi; i++) {
        const tdm_gpu_task *x = &t[i];
        if (i == lo || x->a != t[i - 1].a || x->b != t[i - 1].b) {
            int wide = j->g->cfg.traversal == TDM_GPU_TRAVERSE_WIDE;
            s->h_pairs[p] = dpair{wide ? x->a->wide : x->a->blocked, wide ? x->b->wide : x->b->blocked,
                                  x->a->tris, x->b->tris,
                                  x->a->ids,   x->b->ids,   x->a->radius, x->b->radius};
            cur = (uint32_t)p++;
        }
        dinput *d = &s->h_in[i];
        d->x = x->b_in_a;
        d->pair = cur;
        d->mode = (uint32_t)x->mode;
        d->cap = x->max_pairs ? x->max_pairs : 1;
        d->pad = 0;
        s->h_cap[i] = x->mode == TDM_MODE_BOOL ? 0 : d->cap;
    }
    j->runs[k] = p - lo;
    if (trace) {
        tdm_gpu *g = j->g;
        __atomic_add_fetch(&g->tr_feed, t1 - t0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&g->tr_write, now_ns() - t1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&g->tr_shares, 1, __ATOMIC_RELAXED);
        if (pthread_equal(pthread_self(), j->caller)) __atomic_add_fetch(&g->tr_caller, 1, __ATOMIC_RELAXED);
    }
}

/* Below this many tasks a batch is filled by the caller alone. */
#define FILL_PARALLEL_MIN 8192

/* Fills the slot's tasks for [lo, hi) on the host and queues the upload, the
 * roots and the first levels. */
static int start(tdm_gpu *g, slot *s, const tdm_gpu_task *tasks, size_t lo, size_t hi,
                 int (*feed)(void *, size_t, size_t), void *feed_arg)
{
    size_t n = hi - lo;
    int rc = reserve_tasks(g, s, n);
    if (rc != TDM_OK) return rc;
    fill_job j;
    j.s = s;
    j.tasks = tasks + lo;
    j.n = n;
    j.feed = feed;
    j.feed_arg = feed_arg;
    j.base = lo;
    j.feed_failed = 0;
    j.g = g;
    j.caller = pthread_self();
    int nk = n >= FILL_PARALLEL_MIN ? g->team.n : 1;
    uint64_t t0 = g->trace ? now_ns() : 0;
    team_run(&g->team, fill_share, &j, nk);
    if (g->trace) g->tr_team += now_ns() - t0;
    if (j.feed_failed) return TDM_ECANCELED;
    for (int k = 0; k < nk; k++) {
        size_t first = share_lo(n, k, nk);
        TDM_CUDA_TRY(g, cudaMemcpyAsync(s->d_pairs + first, s->h_pairs + first, j.runs[k] * sizeof(dpair),
                                        cudaMemcpyHostToDevice, s->stream));
    }
    TDM_CUDA_TRY(g, cudaMemcpyAsync(s->d_in, s->h_in, n * sizeof(dinput), cudaMemcpyHostToDevice, s->stream));
    prepare_tasks_kernel<<<blocks(n), BLOCK, 0, s->stream>>>(s->d_in, s->d_pairs, s->d_tasks, (uint32_t)n);
    TDM_CUDA_TRY(g, cudaMemsetAsync(s->d_res, 0, n * sizeof(dres), s->stream));
    TDM_CUDA_TRY(g, cudaMemsetAsync(s->cnt, 0, CNT_N * sizeof(uint32_t), s->stream));
    init_frontier_kernel<<<blocks(n), BLOCK, 0, s->stream>>>(s->front[0], (uint32_t)n, s->cnt);
    s->lo = lo;
    s->hi = hi;
    s->it = 0;
    s->active = 1;
    s->finishing = 0;
    return launch_group(g, s);
}

typedef struct copy_job {
    const slot *s;
    tdm_collide_result *results;
} copy_job;

static void copy_share(void *arg, int k, int nk)
{
    const copy_job *j = (const copy_job *)arg;
    const slot *s = j->s;
    size_t n = s->hi - s->lo;
    size_t lo = n * (size_t)k / (size_t)nk, hi = n * (size_t)(k + 1) / (size_t)nk;
    for (size_t i = lo; i < hi; i++) {
        const dres *r = &s->h_res[i];
        tdm_collide_result *o = &j->results[s->lo + i];
        memset(o, 0, sizeof *o);
        o->colliding = r->colliding;
        uint32_t cap = s->h_cap[i];
        if (cap == 0) {
            o->n_pairs = r->colliding;
        } else {
            o->n_pairs = r->count < cap ? r->count : cap;
            o->truncated = r->truncated;
        }
        o->first.a_tri = r->first_a;
        o->first.b_tri = r->first_b;
    }
}

static void copy_results(tdm_gpu *g, const slot *s, tdm_collide_result *results)
{
    copy_job j = {s, results};
    team_run(&g->team, copy_share, &j, s->hi - s->lo >= FILL_PARALLEL_MIN ? g->team.n : 1);
}

/* Task ranges waiting to run. */
typedef struct range_list { size_t (*r)[2]; size_t n, cap; } range_list;

static int push_range(range_list *l, size_t lo, size_t hi)
{
    if (l->n == l->cap) {
        size_t c = l->cap ? 2 * l->cap : 64;
        size_t (*r)[2] = (size_t (*)[2])realloc(l->r, c * sizeof *r);
        if (!r) return TDM_ENOMEM;
        l->r = r;
        l->cap = c;
    }
    l->r[l->n][0] = lo;
    l->r[l->n][1] = hi;
    l->n++;
    return TDM_OK;
}

static size_t chunk_size(const tdm_gpu *g, size_t n)
{
    size_t c = g->cfg.chunk_tasks;
    if (c == 0) {
        /* one chunk per stream: each level's launch then holds as many node pairs as
         * possible. Most levels of a light scene (alpha-1.5, cubicles) hold less than a
         * wave of the GPU; with two chunks per stream, as before, 100 000 alpha-1.5 bool
         * poses ran at 21M queries/s and the traversal kernel at 25 % of SM throughput,
         * with one at 28M and 31 % (cubicles contacts: 15.6M -> 24.7M). */
        c = (n + (size_t)g->n_slots - 1) / (size_t)g->n_slots;
        if (c < 8192) c = 8192;
    }
    if (c > g->cap_pairs) c = (size_t)g->cap_pairs;
    return c ? c : 1;
}

/* Waits for every running slot (after an error), leaving none active. */
static void drain(tdm_gpu *g)
{
    for (int k = 0; k < g->n_slots; k++) {
        cudaStreamSynchronize(g->slots[k].stream);
        g->slots[k].active = 0;
    }
    cudaGetLastError();
}

static int run(tdm_gpu *g, const tdm_gpu_task *tasks, size_t n, tdm_collide_result *results,
               int (*feed)(void *, size_t, size_t), void *feed_arg)
{
    size_t fed = 0; /* tasks[0..fed) are written */
    range_list todo = {NULL, 0, 0}, over = {NULL, 0, 0};
    int rc = TDM_OK;
    size_t chunk = chunk_size(g, n);
    /* pushed last-first, popped first-first */
    size_t n_chunks = (n + chunk - 1) / chunk;
    for (size_t k = n_chunks; k-- > 0 && rc == TDM_OK;)
        rc = push_range(&todo, k * chunk, (k + 1) * chunk < n ? (k + 1) * chunk : n);
    double t_fill = 0, t_wait = 0, t_copy = 0, t_launch = 0, t_run = now_s();
    g->tr_team = g->tr_feed = g->tr_write = 0;
    g->tr_shares = g->tr_caller = 0;
    uint64_t iters0 = g->stats.iterations;
    int next = 0; /* the slot waited on next, round robin */
    while (rc == TDM_OK) {
        /* idle slots take the next ranges, unless an overflow waits for all to drain */
        for (int k = 0; k < g->n_slots && rc == TDM_OK; k++) {
            slot *s = &g->slots[k];
            if (s->active || todo.n == 0 || over.n > 0) continue;
            todo.n--;
            size_t lo = todo.r[todo.n][0], hi = todo.r[todo.n][1];
            double t0 = now_s();
            /* ranges start in order, and re-runs are of fed ones: feed each task once */
            int fresh = feed && hi > fed;
            rc = start(g, s, tasks, lo, hi, fresh ? feed : NULL, feed_arg);
            if (fresh) fed = hi;
            t_fill += now_s() - t0;
        }
        if (rc != TDM_OK) break;
        int any = 0;
        for (int k = 0; k < g->n_slots; k++) any |= g->slots[k].active;
        if (!any) {
            if (over.n == 0) break; /* all done */
            /* every slot is idle: grow the frontiers within the budget and re-run the
             * ranges that overflowed, or split them */
            g->stats.reruns += over.n;
            int grown = reserve(g, 2 * g->cap_pairs, 2 * g->cap_leaves) == TDM_OK;
            if (g->dead) { rc = TDM_EGPU; break; }
            for (size_t k = 0; k < over.n && rc == TDM_OK; k++) {
                size_t lo = over.r[k][0], hi = over.r[k][1];
                if (grown) rc = push_range(&todo, lo, hi);
                else if (hi - lo == 1) rc = TDM_EGPUMEM; /* one task's frontier alone outgrows the budget */
                else {
                    size_t mid = lo + (hi - lo) / 2;
                    rc = push_range(&todo, mid, hi);
                    if (rc == TDM_OK) rc = push_range(&todo, lo, mid);
                }
            }
            over.n = 0;
            continue;
        }
        while (!g->slots[next].active) next = (next + 1) % g->n_slots;
        slot *s = &g->slots[next];
        next = (next + 1) % g->n_slots;
        double t0 = now_s();
        cudaError_t e = cudaEventSynchronize(s->ready);
        t_wait += now_s() - t0;
        if (e != cudaSuccess) {
            rc = map_error(g, e);
            break;
        }
        if (s->finishing) {
            double tc = now_s();
            copy_results(g, s, results);
            t_copy += now_s() - tc;
            g->stats.iterations += (uint64_t)s->it;
            for (int k = 0; k < s->it; k++) g->stats.pairs += (uint64_t)s->h_cnt[2 + 2 * k] + s->h_cnt[3 + 2 * k];
            s->active = 0;
        } else if (s->h_cnt[1]) {
            s->active = 0;
            rc = push_range(&over, s->lo, s->hi);
        } else if (s->h_cnt[0] == 0) {
            s->finishing = 1;
            e = cudaMemcpyAsync(s->h_res, s->d_res, (s->hi - s->lo) * sizeof(dres), cudaMemcpyDeviceToHost, s->stream);
            if (e == cudaSuccess)
                e = cudaMemcpyAsync(s->h_cnt + 2, s->cnt, 2 * (size_t)s->it * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                    s->stream);
            if (e == cudaSuccess) e = cudaEventRecord(s->ready, s->stream);
            if (e != cudaSuccess) rc = map_error(g, e);
        } else if (s->it >= MAX_ITERS - 1) {
            rc = TDM_EGPU; /* deeper than any valid tree pair */
        } else {
            double tl = now_s();
            rc = launch_group(g, s);
            t_launch += now_s() - tl;
        }
    }
    if (rc != TDM_OK) drain(g);
    free(todo.r);
    free(over.r);
    if (g->trace)
        fprintf(stderr, "gpu run: %zu tasks in chunks of %zu on %d streams: host fill %.3f ms, host waiting %.3f ms\n",
                n, chunk, g->n_slots, 1e3 * t_fill, 1e3 * t_wait);
    if (g->trace)
        fprintf(stderr, "gpu run: filling: %.3f ms of team time, %.3f ms building tasks, %.3f ms writing them, %u of %u shares by the caller\n",
                1e-6 * (double)g->tr_team, 1e-6 * (double)g->tr_feed, 1e-6 * (double)g->tr_write, g->tr_caller,
                g->tr_shares);
    if (g->trace)
        fprintf(stderr, "gpu run: %.3f ms in all: launching levels %.3f ms, copying results %.3f ms, %llu levels\n",
                1e3 * (now_s() - t_run), 1e3 * t_launch, 1e3 * t_copy,
                (unsigned long long)(g->stats.iterations - iters0));
    return rc;
}

/* A run with its statistics; feed (optional) writes the tasks as it goes. */
static int counted_run(tdm_gpu *g, const tdm_gpu_task *tasks, size_t n, tdm_collide_result *results,
                       int (*feed)(void *, size_t, size_t), void *arg)
{
    if (g->dead) return TDM_EGPU;
    if (n == 0) return TDM_OK;
    /* the calling thread may be new to CUDA, or have used another device */
    if (cudaSetDevice(g->cfg.device) != cudaSuccess) return map_error(g, cudaGetLastError());
    double t0 = now_s();
    int rc = run(g, tasks, n, results, feed, arg);
    g->stats.runs++;
    g->stats.tasks += n;
    g->stats.seconds += now_s() - t0;
    return rc;
}

extern "C" int tdm_gpu_run_fed(tdm_gpu *g, tdm_gpu_task *tasks, size_t n, tdm_collide_result *results,
                               int (*feed)(void *, size_t, size_t), void *arg)
{
    return counted_run(g, tasks, n, results, feed, arg);
}

extern "C" int tdm_gpu_run(tdm_gpu *g, const tdm_gpu_task *tasks, size_t n, tdm_collide_result *results)
{
    return counted_run(g, tasks, n, results, NULL, NULL);
}

extern "C" int tdm_gpu_prepare(tdm_gpu *g, size_t max_tasks)
{
    if (g->dead) return TDM_EGPU;
    if (cudaSetDevice(g->cfg.device) != cudaSuccess) return map_error(g, cudaGetLastError());
    size_t chunk = chunk_size(g, max_tasks);
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        int rc = reserve_tasks(g, s, chunk);
        if (rc != TDM_OK) return rc;
        /* the first launch of each kernel loads its module: do it now, with no work */
        TDM_CUDA_TRY(g, cudaMemsetAsync(s->cnt, 0, CNT_N * sizeof(uint32_t), s->stream));
        init_frontier_kernel<<<1, BLOCK, 0, s->stream>>>(s->front[0], 0, s->cnt);
        prepare_tasks_kernel<<<1, BLOCK, 0, s->stream>>>(s->d_in, s->d_pairs, s->d_tasks, 0);
        traverse_kernel<<<1, BLOCK, 0, s->stream>>>(s->front[0], s->front[1], s->leaves, s->d_tasks, s->d_res, s->cnt,
                                                    1, (uint32_t)g->cap_pairs, (uint32_t)g->cap_leaves,
                                                    s->cnt + 2 * MAX_ITERS);
        tri_filter_kernel<<<1, BLOCK, 0, s->stream>>>(s->leaves, s->cnt, 1, (uint32_t)g->cap_leaves, s->d_tasks,
                                                      s->d_res, s->tris, s->cnt + 2 * MAX_ITERS);
        tri_exact_kernel<<<1, BLOCK, 0, s->stream>>>(s->tris, s->cnt, 1, (uint32_t)g->cap_leaves, s->d_tasks,
                                                     s->d_res);
        TDM_CUDA_TRY(g, cudaGetLastError());
        TDM_CUDA_TRY(g, cudaStreamSynchronize(s->stream));
        /* and every group of levels gets its graph now: capturing one costs ~0.1-0.2 ms, which a
         * run would otherwise pay on its first pass through each depth */
        for (int it0 = 0; g->graphs && it0 < MAX_ITERS - 1; it0 += ITERS_PER_SYNC) {
            cudaGraphExec_t exec;
            rc = group_graph(g, s, it0, &exec);
            if (rc != TDM_OK) return rc;
        }
    }
    return TDM_OK;
}

extern "C" void tdm_gpu_get_stats(const tdm_gpu *g, tdm_gpu_stats *s)
{
    *s = g->stats;
    pthread_mutex_lock(&g->bud->mu);
    s->mesh_bytes = g->bud->mesh_bytes;
    s->device_bytes = g->bud->mesh_bytes + g->bud->scratch_bytes + g->bud->other_bytes;
    pthread_mutex_unlock(&g->bud->mu);
}

extern "C" int tdm_gpu_device(const tdm_gpu *g) { return g->cfg.device; }

extern "C" int tdm_gpu_account(tdm_gpu *g, int64_t bytes) { return budget_add(g->bud, BUD_OTHER, bytes); }
