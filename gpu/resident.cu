/* The GPU-resident engine; gpu.h describes the method. Kernels are thin: index
 * math, then the geom/ functions the CPU engine calls too. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cub/block/block_scan.cuh>
#include <cuda_runtime.h>

#include "../geom/layout.h"
#include "../geom/leaf.h"
#include "cuda_util.h"
#include "internal.h"
#include "resident.h"

/* ---- errors ----------------------------------------------------------------- */

/* CUDA calls are checked through cuda_util.h (TDM_CUDA_TRY, tdm_cuda_err), with
 * g->dead as the flag a sticky error sets. */

/* ---- the budget ---- */

static uint64_t *budget_kind(gpu_budget *b, int kind)
{
    return kind == BUD_MESH ? &b->mesh_bytes : kind == BUD_SCRATCH ? &b->scratch_bytes
                                           : kind == BUD_ARENA ? &b->arena_bytes : &b->other_bytes;
}

static uint64_t budget_held(const gpu_budget *b)
{
    return b->mesh_bytes + b->scratch_bytes + b->other_bytes + b->arena_bytes;
}

static size_t arena_trim(gpu_budget *b);

/* Adds `delta` bytes of one kind; a growth that would pass the limit is refused
 * (TDM_EGPUMEM) and changes nothing. The tree arena's spare chunks give way first: a refused
 * growth releases them and is tried once more, unless the arena is busy (its own growth, or another
 * thread in it: the lock is only tried, since a caller may hold locks the arena takes after its own). */
int tdm__gpu_budget_add(gpu_budget *b, int kind, int64_t delta)
{
    for (int again = 1;; again = 0) {
        pthread_mutex_lock(&b->mu);
        int rc = TDM_OK;
        if (delta > 0 && budget_held(b) + (uint64_t)delta > b->limit) rc = TDM_EGPUMEM;
        else *budget_kind(b, kind) += (uint64_t)delta; /* a negative delta wraps back down */
        pthread_mutex_unlock(&b->mu);
        if (rc == TDM_OK || !again || pthread_mutex_trylock(&b->arena_mu) != 0) return rc;
        size_t released = arena_trim(b);
        pthread_mutex_unlock(&b->arena_mu);
        if (!released) return rc;
    }
}

/* bytes counted as one kind from now on instead of another (the arena's extents as a tree's and
 * back): the memory held does not change */
static void budget_move(gpu_budget *b, int from, int to, uint64_t bytes)
{
    pthread_mutex_lock(&b->mu);
    *budget_kind(b, from) -= bytes;
    *budget_kind(b, to) += bytes;
    pthread_mutex_unlock(&b->mu);
}

static void arena_destroy(gpu_budget *b);

/* Drops one user's reference; the last frees it (and the tree arena's chunks: on the budget's
 * device, which the caller has set). */
static void budget_release(gpu_budget *b)
{
    if (!b) return;
    pthread_mutex_lock(&b->mu);
    int left = --b->users;
    pthread_mutex_unlock(&b->mu);
    if (left > 0) return;
    arena_destroy(b);
    pthread_mutex_destroy(&b->arena_mu);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* ---- the tree arena (resident.h) ------------------------------------------------- */

#define MESH_CHUNK (32ull << 20) /* a chunk's bytes by default (TDM_GPU_MESH_CHUNK_KB) */

/* Whether retired extent r may be placed again: every registered ring's launches that started
 * before its free have ended (under arena_mu) */
static int arena_retired_done(gpu_budget *b, const struct gpu_budget::arena_retired *r, const uint64_t *oldest)
{
    for (int i = 0; i < ARENA_RINGS; i++)
        if (b->rings[i] && r->gen[i] >= oldest[i]) return 0;
    return 1;
}

/* Each registered ring's launches started so far (started: NULL, not wanted) and its oldest running
 * one (under arena_mu) */
static void arena_oldest(gpu_budget *b, uint64_t *started, uint64_t *oldest)
{
    for (int i = 0; i < ARENA_RINGS; i++) {
        if (started) started[i] = 0;
        oldest[i] = UINT64_MAX;
        if (b->rings[i]) tdm__gpu_express_launches(b->rings[i], started ? &started[i] : NULL, &oldest[i]);
    }
}

/* Chunk k back to the device (under arena_mu; empty: no tree, nothing retired in it). cudaFree
 * waits for the device: only surplus empty chunks, those the budget needs (arena_trim) and, once no
 * tree is left, all. */
static void arena_release(gpu_budget *b, size_t k)
{
    mesh_chunk *c = b->chunks[k];
    cudaFree(c->base);
    cudaGetLastError();
    tdm__gpu_budget_add(b, BUD_ARENA, -(int64_t)c->room.total);
    tdm_extents_destroy(&c->room);
    free(c);
    b->chunks[k] = b->chunks[--b->n_chunks];
    b->chunks_released++;
}

static int chunk_empty(const mesh_chunk *c) { return c->room.free_bytes == c->room.total; }

/* Retired extents whose readers have ended back to their chunks, then empty chunks released but
 * the spares: one of the usual size and the b->spares largest dedicated ones; all once no tree is
 * left (under arena_mu; oldest: the rings' oldest running launches, NULL: looked up) */
static void arena_reap(gpu_budget *b, const uint64_t *oldest)
{
    if (b->n_retired) {
        uint64_t looked[ARENA_RINGS];
        if (!oldest) arena_oldest(b, NULL, looked), oldest = looked;
        size_t kept = 0;
        for (size_t i = 0; i < b->n_retired; i++) {
            struct gpu_budget::arena_retired *r = &b->retired[i];
            /* a free extent cannot fail to go back: tdm_extents_free only refuses a bad range, or
               when it needs one more free extent and has no memory for it (then it stays retired) */
            if (!arena_retired_done(b, r, oldest) || tdm_extents_free(&r->chunk->room, r->at, r->len) != TDM_OK)
                b->retired[kept++] = *r;
        }
        b->n_retired = kept;
    }
    pthread_mutex_lock(&b->mu);
    int no_trees = b->mesh_bytes == 0;
    pthread_mutex_unlock(&b->mu);
    if (no_trees) {
        arena_trim(b);
        return;
    }
    int spare = 0; /* an empty chunk of the usual size kept for the next uploads */
    for (size_t k = b->n_chunks; k-- > 0;) {
        mesh_chunk *c = b->chunks[k];
        if (!chunk_empty(c) || c->dedicated) continue; /* a tree, or a retired extent, in it */
        if (spare) arena_release(b, k);
        else spare = 1;
    }
    /* empty dedicated chunks: the largest b->spares kept (a large tree that leaves and comes back,
       or one like it, takes its place again without a cudaFree and a cudaMalloc) */
    for (;;) {
        size_t n = 0, least = SIZE_MAX;
        for (size_t k = 0; k < b->n_chunks; k++) {
            mesh_chunk *c = b->chunks[k];
            if (!c->dedicated || !chunk_empty(c)) continue;
            n++;
            if (least == SIZE_MAX || c->room.total < b->chunks[least]->room.total) least = k;
        }
        if (n <= b->spares) break;
        arena_release(b, least);
    }
}

/* Every empty chunk back to the device, for the budget's room (under arena_mu): the count released */
static size_t arena_trim(gpu_budget *b)
{
    size_t released = 0;
    for (size_t k = b->n_chunks; k-- > 0;)
        if (chunk_empty(b->chunks[k])) arena_release(b, k), released++;
    return released;
}

/* A new chunk for an extent of len bytes (under arena_mu): the usual size, or one of the tree's own
 * for a tree over half of it (its size rounded up to an eighth of a chunk, so that trees of about one
 * size take each other's places), or of exactly len bytes when the budget has no more room. Counted
 * in the budget as arena bytes; TDM_OK with *out, or TDM_EGPUMEM / TDM_ENOMEM and nothing held. */
static int arena_new_chunk(gpu_budget *b, size_t len, mesh_chunk **out)
{
    int dedicated = len > b->chunk_bytes / 2;
    size_t step = b->chunk_bytes / 8 - b->chunk_bytes / 8 % TDM_EXTENTS_ALIGN;
    if (step < TDM_EXTENTS_ALIGN) step = TDM_EXTENTS_ALIGN;
    size_t bytes = dedicated ? (len + step - 1) / step * step : b->chunk_bytes;
    if (bytes < len) return TDM_EGPUMEM; /* wrapped */
    if (b->n_chunks == b->cap_chunks) {
        size_t cap = b->cap_chunks ? 2 * b->cap_chunks : 8;
        mesh_chunk **a = (mesh_chunk **)realloc(b->chunks, cap * sizeof *a);
        if (!a) return TDM_ENOMEM;
        b->chunks = a, b->cap_chunks = cap;
    }
    mesh_chunk *c = (mesh_chunk *)calloc(1, sizeof *c);
    if (!c) return TDM_ENOMEM;
    /* arena_mu is held: the budget's refusal does not trim here (arena_place does) */
    if (tdm__gpu_budget_add(b, BUD_ARENA, (int64_t)bytes) != TDM_OK) {
        /* no room for the rounded size: one of the tree's own size, if that fits */
        if (bytes == len || tdm__gpu_budget_add(b, BUD_ARENA, (int64_t)len) != TDM_OK) {
            free(c);
            return TDM_EGPUMEM;
        }
        dedicated = 1, bytes = len;
    }
    int rc = TDM_OK;
    if (tdm_extents_init(&c->room, bytes) != TDM_OK) {
        rc = TDM_ENOMEM;
    } else if (cudaMalloc((void **)&c->base, bytes) != cudaSuccess) {
        cudaGetLastError(); /* out of memory is not sticky */
        tdm_extents_destroy(&c->room);
        rc = TDM_EGPUMEM;
    }
    if (rc != TDM_OK) {
        tdm__gpu_budget_add(b, BUD_ARENA, -(int64_t)bytes);
        free(c);
        return rc;
    }
    c->dedicated = dedicated;
    b->chunks[b->n_chunks++] = c;
    b->chunks_made++;
    *out = c;
    return TDM_OK;
}

/* An extent of len bytes (a multiple of TDM_EXTENTS_ALIGN) for a tree, counted as the tree's
 * (BUD_MESH): first fit in the chunks but the empty dedicated ones, then the least of those that
 * holds it, then a new chunk (the spares released first when the budget or the device has no room
 * for it). TDM_OK with *chunk, *at; TDM_EGPUMEM (over the budget, or the device is full) or
 * TDM_ENOMEM, nothing held. */
static int arena_place(gpu_budget *b, size_t len, mesh_chunk **chunk, size_t *at)
{
    pthread_mutex_lock(&b->arena_mu);
    arena_reap(b, NULL);
    size_t off = SIZE_MAX, best = SIZE_MAX;
    mesh_chunk *c = NULL;
    for (size_t k = 0; k < b->n_chunks && off == SIZE_MAX; k++) {
        mesh_chunk *ck = b->chunks[k];
        if (ck->dedicated && chunk_empty(ck)) {
            if (ck->room.total >= len && (best == SIZE_MAX || ck->room.total < b->chunks[best]->room.total)) best = k;
            continue;
        }
        if ((off = tdm_extents_alloc(&ck->room, len)) != SIZE_MAX) c = ck;
    }
    if (off == SIZE_MAX && best != SIZE_MAX) c = b->chunks[best], off = tdm_extents_alloc(&c->room, len);
    if (off == SIZE_MAX) {
        int rc = arena_new_chunk(b, len, &c);
        if (rc == TDM_EGPUMEM && arena_trim(b)) rc = arena_new_chunk(b, len, &c);
        if (rc != TDM_OK) {
            pthread_mutex_unlock(&b->arena_mu);
            return rc;
        }
        off = tdm_extents_alloc(&c->room, len); /* 0: the chunk is empty and long enough */
    }
    *chunk = c;
    *at = off;
    budget_move(b, BUD_ARENA, BUD_MESH, len);
    pthread_mutex_unlock(&b->arena_mu);
    return TDM_OK;
}

/* A tree's extent back to the arena: retired, stamped with the rings' launches started so far, and
 * placed again by arena_reap (at once when none of them runs, or `fresh`: no kernel ever read it; a
 * fresh one's chunk, made for it alone and empty now, goes back to the device rather than stay as a
 * spare: the memory held is as before its upload) */
static void arena_free(gpu_budget *b, mesh_chunk *chunk, size_t at, size_t len, int fresh)
{
    pthread_mutex_lock(&b->arena_mu);
    budget_move(b, BUD_MESH, BUD_ARENA, len);
    struct gpu_budget::arena_retired r;
    r.chunk = chunk, r.at = at, r.len = len;
    uint64_t oldest[ARENA_RINGS];
    arena_oldest(b, r.gen, oldest);
    if (fresh) memset(r.gen, 0, sizeof r.gen); /* before every launch: done */
    if (b->n_retired == b->cap_retired) {
        size_t cap = b->cap_retired ? 2 * b->cap_retired : 16;
        struct gpu_budget::arena_retired *a =
            (struct gpu_budget::arena_retired *)realloc(b->retired, cap * sizeof *a);
        if (a) {
            b->retired = a, b->cap_retired = cap;
        } else { /* no room to remember it: wait for the launches instead, and place it now */
            if (!fresh) cudaDeviceSynchronize();
            tdm_extents_free(&chunk->room, at, len); /* fails only for want of host memory: lost */
            arena_reap(b, oldest);
            pthread_mutex_unlock(&b->arena_mu);
            return;
        }
    }
    b->retired[b->n_retired++] = r;
    arena_reap(b, oldest);
    for (size_t k = 0; fresh && k < b->n_chunks; k++)
        if (b->chunks[k] == chunk) {
            if (chunk->dedicated && chunk_empty(chunk)) arena_release(b, k);
            break;
        }
    pthread_mutex_unlock(&b->arena_mu);
}

static void arena_destroy(gpu_budget *b)
{
    for (size_t k = 0; k < b->n_chunks; k++) {
        cudaFree(b->chunks[k]->base);
        tdm_extents_destroy(&b->chunks[k]->room);
        free(b->chunks[k]);
    }
    cudaGetLastError();
    free(b->chunks);
    free(b->retired);
}

int tdm__gpu_arena_ring(gpu_budget *b, struct tdm_gpu_express *x, int join)
{
    pthread_mutex_lock(&b->arena_mu);
    int rc = join ? TDM_ERANGE : TDM_OK;
    for (int i = 0; i < ARENA_RINGS; i++) {
        if (join && !b->rings[i]) {
            b->rings[i] = x;
            /* extents retired before it joined wait for none of its launches */
            for (size_t k = 0; k < b->n_retired; k++) b->retired[k].gen[i] = 0;
            rc = TDM_OK;
            break;
        }
        if (!join && b->rings[i] == x) b->rings[i] = NULL;
    }
    if (!join) arena_reap(b, NULL);
    pthread_mutex_unlock(&b->arena_mu);
    return rc;
}

/* ---- kernels ------------------------------------------------------------------- */

/* Fault injection for the tests of a lost context (tests/test_ops.c): with
 * TDM_GPU_FAULT_AFTER=N in the environment, a lane's chunk number N (from 0) also
 * launches this kernel, whose write through a null pointer is a real
 * cudaErrorIllegalAddress: a sticky error, as a kernel bug or a hardware fault
 * would give, reported by the slot's next CUDA call. */
__global__ static void fault_kernel(int *p) { *p = 1; }

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
    tasks[i] = tdm__dtask_of(d.x, pairs[d.pair], d.mode, d.cap);
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
 * blocked layout (geom/layout.h), as Damkjaer & Erleben process their
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
            tdm_load16(&t, &tasks[p.task].h, 5);
            /* thread j < 2W loads node j of the entry's: A0..A(W-1), B0..B(W-1) (absent ones are not loaded) */
            if (j < W && (j == 0 || sa)) tdm_load16(&blk[q][j], &t.an[a + j], 4);
            if (j >= W && j < 2 * W && (j == W || sb)) tdm_load16(&blk[q][j], &t.bn[b + j - W], 4);
        }
        __syncwarp(); /* an entry's threads are lanes of one warp */
        if (live && (x == 0 || sa) && (y == 0 || sb)) {
            const tdm_bvh_node *na = &blk[q][x], *nb = &blk[q][W + y];
            if (!tdm_wide_imaginary(na) && !tdm_wide_imaginary(nb)) {
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
 * (geom/layout.h). A frontier entry (task, a, b) stands for up to 4 x 4 node pairs:
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
                tdm_load16(&t, &tasks[p.task].h, 5);
                tdm_load16(&na, &t.an[p.a], 4);
                tdm_load16(&nb, &t.bn[p.b], 4);
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

/* The triangle pairs of one level's leaf pairs, in two passes. The first
 * (one thread per leaf pair, up to 2 x 2 triangle pairs) rejects every pair the
 * floating-point stage of the plane tests proves apart (tdm_tri_planes_separate)
 * and appends the rest to the level's triangle workpile; the second (one thread
 * per triangle pair) runs the exact test on them (tdm_tri_pair_intersect), so
 * together they keep the pairs tdm_leaf_intersect would. The exact test needs ~220
 * registers, which held the single kernel that did both to 1 block of 256 threads
 * per SM, on pairs that were mostly rejected in a few dozen instructions; the
 * first pass now runs at full occupancy, the second only on the survivors. */

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
                /* tdm_leaf_intersect's loop with the cheap predicate, on the shared
                 * loaders. Written out here rather than as a geom/leaf.h function:
                 * every function form of the loop over A's triangles that was tried
                 * (several shapes, all inlined) took this kernel from 90 to 92
                 * registers (ptxas), and the one timed ran 1-2% longer (ncu, H100,
                 * cubicles and alpha-1.5, 100 000 poses). */
                uint32_t ca = tdm_leaf_count(na);
                tdm_dvec3 tb[2][3], ta[3];
                uint32_t cb = tdm_leaf_load_moved(nb, t->bt, &t->x, tb);
                for (uint32_t a = 0; a < ca; a++) {
                    tdm_tri_load(&t->at[9 * (size_t)(fa + a)], ta);
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

/* Adds a thread's intersecting pairs to its task's count (contacts mode), by
 * tdm_collide's rule (geom/leaf.h) made atomic: the count runs past the cap,
 * the pair that passes it marks the task truncated and done, and the host reads
 * back tdm_contacts_counted of it. Consecutive leaf pairs mostly belong to one
 * task, and a task in contacts mode may have thousands of them: the threads of a
 * warp on the same task add their counts together (one atomic per task and
 * warp, not one per pair), which is what keeps the atomics on one address from
 * serialising the kernel. */
__device__ static void add_hits(uint32_t task, uint32_t hits, const dtask *tasks, dres *res)
{
    unsigned peers = __match_any_sync(__activemask(), task);
    uint32_t sum = __reduce_add_sync(peers, hits);
    if ((threadIdx.x & 31) != (unsigned)(__ffs(peers) - 1)) return;
    dres *r = &res[task];
    uint32_t old = atomicAdd(&r->count, sum);
    if (tdm_contacts_past_cap(old, sum, tasks[task].h.cap)) { /* a pair beyond the cap exists: stop */
        r->truncated = 1;
        r->done = 1;
    }
}

/* The exact test of the triangle workpile, one pair per thread: the predicate
 * of tdm_leaf_intersect on one pair (tdm_tri_pair_intersect: A's triangle as
 * stored, B's moved by the same loader), since the filter has already split the
 * leaf pairs into triangle pairs. An intersecting pair is recorded by the rule
 * of tdm_result_add, made atomic: the first thread to set colliding writes
 * `first`; bool mode is then done, contacts mode counts it (add_hits). */
__global__ void __launch_bounds__(BLOCK) tri_exact_kernel(const fpair *tris, const uint32_t *cnt, int it,
                                                          uint32_t cap, const dtask *tasks, dres *res)
{
    uint32_t n = min(cnt[TRI_CNT + it], cap);
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        fpair p = tris[i]; /* task, triangle of A, triangle of B (leaf order) */
        dres *r = &res[p.task];
        if (*(volatile uint32_t *)&r->done) continue;
        const dtask *t = &tasks[p.task];
        if (!tdm_tri_pair_intersect(t->at, p.a, t->bt, p.b, &t->x)) continue;
        if (!*(volatile uint32_t *)&r->colliding && atomicCAS(&r->colliding, 0u, 1u) == 0u) {
            r->first_a = t->aid[p.a];
            r->first_b = t->bid[p.b];
        }
        if (t->h.mode == TDM_MODE_BOOL) r->done = 1;
        else add_hits(p.task, 1, tasks, res);
    }
}

/* Trees' arrays in the device's stream-ordered pool by default (TDM_GPU_MESH_POOLED), which keeps
 * up to MESH_POOL_KEEP bytes of freed arrays for later uploads. */
#define MESH_POOLED 0
#define MESH_POOL_KEEP (256ull << 20)

/* Small runs (tdm_gpu_config.small_tasks): one thread per task, depth first,
 * in one launch. A run of a few thousand tasks (a planner's state or motion)
 * mostly stops at the root pairs; level by level it costs a launch of every
 * kernel per level and a wait for the host every ITERS_PER_SYNC levels, which
 * is most of its time. Here each thread walks its own task's BVTT on a small
 * stack with the same box test, descent rule and triangle tests as the levels
 * (so the same answers), for at most `budget` node pairs; what is left when
 * the budget or the stack runs out is handed to the level path as its first
 * frontier (cnt[0]), which goes on from there. */
#define SMALL_STACK 32
/* Configs runs of at most this many (configuration, check) entries run as block runs
 * (resident.h block_config_entries): on the H100 one run took 0.16 ms for ~100 tasks (levels
 * 0.29), 0.32 ms for ~780 (0.45), 0.45 ms for ~3 100 (0.59) (bench/results/ompl_rrt_small.md;
 * configs runs depth first, a thread a task, were slower from ~100 tasks on, and a cap on a
 * block run's tasks past which it handed them all to the levels cost a host look and lost).
 * At 65 536 the pooled runs of 64 planners (~500 Panda configurations, ~130 checks each) went
 * to the levels: a run of 500 took 0.35 ms there, 0.15 ms as a block run, and a request's time
 * in tandemd fell by half with block runs of more entries; alone, block runs were faster at
 * every size tried, up to 8 192 configurations (1.2M entries: 0.91 ms against 1.22)
 * (bench/results/ompl_resident.md, section 9). */
#define BLOCK_CONFIG_ENTRIES 1048576

/* A found intersecting pair, by tri_exact_kernel's rule, for a task no other
 * thread touches during this kernel. Returns 1 when the task is done. */
__device__ static __forceinline__ int small_hit(const dtask *t, dres *r, uint32_t a_slot, uint32_t b_slot)
{
    if (!r->colliding) {
        r->colliding = 1;
        r->first_a = t->aid[a_slot];
        r->first_b = t->bid[b_slot];
    }
    if (t->h.mode == TDM_MODE_BOOL) {
        r->done = 1;
        return 1;
    }
    uint32_t before = r->count;
    r->count = before + 1;
    if (tdm_contacts_past_cap(before, 1, t->h.cap)) {
        r->truncated = 1;
        r->done = 1;
        return 1;
    }
    return 0;
}

__global__ void __launch_bounds__(BLOCK) small_run_kernel(const dtask *tasks, dres *res, uint32_t n, fpair *front,
                                                          uint32_t *cnt, uint32_t cap_pairs, uint32_t budget,
                                                          uint32_t *overflow)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const dtask *t = &tasks[i];
    dres *r = &res[i];
    dhot h;
    tdm_load16(&h, &t->h, 5);
    uint32_t sa[SMALL_STACK], sb[SMALL_STACK];
    int top = 1, done = 0;
    sa[0] = sb[0] = 0;
    for (uint32_t tested = 0; top > 0 && tested < budget; tested++) {
        top--;
        uint32_t a = sa[top], b = sb[top];
        tdm_bvh_node na, nb;
        tdm_load16(&na, &h.an[a], 4);
        tdm_load16(&nb, &h.bn[b], 4);
        tdm_wbox w;
        tdm_wbox_of(&h.fx, &nb, &w);
        if (!tdm_obb_overlap_w(&na, &w, nb.extent, h.tol)) continue;
        uint32_t ca[2] = {0, 0}, cb[2] = {0, 0};
        int nca = 0, ncb = 0;
        if (blocked_children(&na, a, &nb, b, ca, &nca, cb, &ncb)) {
            if (top + nca * ncb > SMALL_STACK) { /* no room: this pair goes to the levels as it is */
                sa[top] = a;
                sb[top] = b;
                top++;
                break;
            }
            for (int x = nca; x-- > 0;) /* pushed last first: the first child pair is walked first */
                for (int y = ncb; y-- > 0;) {
                    sa[top] = ca[x];
                    sb[top] = cb[y];
                    top++;
                }
            continue;
        }
        /* a leaf pair: the filter and the exact test of the levels' two passes */
        uint32_t fa = tdm_leaf_first(&na), fb = tdm_leaf_first(&nb), cta = tdm_leaf_count(&na);
        tdm_dvec3 tb[2][3], ta[3];
        uint32_t ctb = tdm_leaf_load_moved(&nb, t->bt, &t->x, tb);
        for (uint32_t x = 0; x < cta && !done; x++) {
            tdm_tri_load(&t->at[9 * (size_t)(fa + x)], ta);
            for (uint32_t y = 0; y < ctb && !done; y++)
                if (!tdm_tri_planes_separate(ta, tb[y]) && tdm_tri_tri_intersect(ta, tb[y]))
                    done = small_hit(t, r, fa + x, fb + y);
        }
        if (done) break;
    }
    if (done || top == 0) return;
    /* over the budget or the stack: the pairs not yet tested go on in the levels */
    uint32_t o = atomicAdd(&cnt[0], (uint32_t)top);
    for (int x = 0; x < top; x++, o++) {
        if (o < cap_pairs) front[o] = fpair{i, sa[x], sb[x]};
        else *overflow = 1; /* counted past the capacity: the batch is re-run with more room */
    }
}

/* Block runs (a configs run of few entries, configs.cu): each block takes its
 * share of the tasks (every gridDim.x-th, at most a few) and walks their BVTTs
 * level by level in its own two frontier buffers of `room` pairs (`scratch`, per
 * block), a __syncthreads between levels: the levels' breadth within a task
 * without a launch or a host look per level, which is most of a small run's time
 * on the level path (bench/results/ompl_rrt_small.md). Each pair gets the box test
 * and descent rule of the levels; leaf pairs go to a workpile (the counters of the
 * last level, BLOCK_LEAF_CNT) that the levels' two triangle passes test after the
 * kernel. With the exact triangle test inside it, the kernel took 255 registers and
 * a 3 KB stack: one block per SM, so that five runs at once queued behind each
 * other's blocks (bench/results/ompl_rrt_fast.md). Children that do not fit the
 * block's buffer are handed to the level path as its first frontier (cnt[0]),
 * which goes on from there. */
#define BLOCK_LEAF_CNT (2 * (MAX_ITERS - 1) + 1)
/* Blocks of the triangle passes after a block run (they loop over their work). */
#define BLOCK_LEAF_GRID 128

__device__ static __forceinline__ void block_hand_over(fpair p, fpair *front, uint32_t *cnt, uint32_t cap_pairs,
                                                       uint32_t *overflow)
{
    uint32_t o = atomicAdd(&cnt[0], 1u);
    if (o < cap_pairs) front[o] = p;
    else *overflow = 1; /* counted past the capacity: the batch is re-run with more room */
}

/* Lean block runs (tdm_gpu.config_lean): a level's pairs are a chain of loads per pair (the
 * pair, its task's hot data, the two nodes), so the run's time is its levels' latency, not its
 * work (ncu, H100: ~57 us for 5 scenes x 40 configurations, bench/results/ompl_resident.md).
 * The lean kernel keeps the first BLOCK_RUN_SHARED pairs of each frontier buffer and the hot
 * data of the block's first BLOCK_RUN_HOT tasks in shared memory, so that most pairs need one
 * load from global memory (their nodes); the rest stay where the plain kernel keeps them. It
 * also leaves out the plain kernel's look at the task's `done` flag before each pair: nothing
 * sets it while a block run runs (its leaf pairs are tested after it, emit_kernel and
 * list_*_kernel clear it), so the look never stopped a pair. */
#define BLOCK_RUN_SHARED 1024u
#define BLOCK_RUN_HOT 32u

/* n_dev (the tasks the run listed, known only on the device) lowers n. */
template <bool LEAN>
__global__ void __launch_bounds__(BLOCK) block_run_kernel(const dtask *tasks, dres *res, uint32_t n,
                                                          const uint32_t *n_dev, fpair *scratch, uint32_t room,
                                                          fpair *front, uint32_t *cnt, uint32_t cap_pairs,
                                                          fpair *leaves, uint32_t cap_leaves, uint32_t *overflow,
                                                          uint32_t *stat)
{
    __shared__ uint32_t n_cur, n_next;
    __shared__ uint32_t st_box, st_leaf; /* profiling (stat != NULL, TDM_GPU_PROFILE) */
    __shared__ fpair s_pairs[LEAN ? 2 * BLOCK_RUN_SHARED : 1];
    __shared__ dhot s_hot[LEAN ? BLOCK_RUN_HOT : 1];
    long long t_start = stat ? clock64() : 0;
    uint32_t my_box = 0, my_leaf = 0, levels = 0, widest = 0;
    if (n_dev && *n_dev < n) n = *n_dev;
    /* tasks blockIdx.x, + gridDim.x, ...: a configuration's tasks (listed together, and often
       heavy together: a hand near a shelf) go to different blocks */
    uint32_t mine = blockIdx.x < n ? (n - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    if (stat && threadIdx.x == 0) {
        st_box = st_leaf = 0;
        for (int i = 0; i < 8; i++) stat[blockIdx.x * 8 + i] = 0;
    }
    if (mine == 0) return;
    fpair *cur = scratch + (size_t)blockIdx.x * 2 * room, *next = cur + room;
    fpair *s_cur = s_pairs, *s_next = s_pairs + (LEAN ? BLOCK_RUN_SHARED : 0);
    if (LEAN)
        for (uint32_t i = threadIdx.x; i < mine && i < BLOCK_RUN_HOT; i += BLOCK)
            tdm_load16(&s_hot[i], &tasks[blockIdx.x + i * gridDim.x].h, 5);
    for (uint32_t i = threadIdx.x; i < mine; i += BLOCK) {
        fpair p = {blockIdx.x + i * gridDim.x, 0, 0};
        if (i >= room) block_hand_over(p, front, cnt, cap_pairs, overflow);
        else if (LEAN && i < BLOCK_RUN_SHARED) s_cur[i] = p;
        else cur[i] = p;
    }
    if (threadIdx.x == 0) n_cur = min(mine, room);
    __syncthreads();
    while (n_cur > 0) {
        if (threadIdx.x == 0) n_next = 0;
        __syncthreads();
        for (uint32_t e = threadIdx.x; e < n_cur; e += BLOCK) {
            fpair p = LEAN && e < BLOCK_RUN_SHARED ? s_cur[e] : cur[e];
            dhot h;
            if (LEAN) {
                uint32_t li = (p.task - blockIdx.x) / gridDim.x; /* the task's place among the block's */
                if (li < BLOCK_RUN_HOT) h = s_hot[li];
                else tdm_load16(&h, &tasks[p.task].h, 5);
            } else {
                if (*(volatile const uint32_t *)&res[p.task].done) continue;
                tdm_load16(&h, &tasks[p.task].h, 5);
            }
            tdm_bvh_node na, nb;
            tdm_load16(&na, &h.an[p.a], 4);
            tdm_load16(&nb, &h.bn[p.b], 4);
            tdm_wbox w;
            tdm_wbox_of(&h.fx, &nb, &w);
            my_box++;
            if (!tdm_obb_overlap_w(&na, &w, nb.extent, h.tol)) continue;
            uint32_t ca[2] = {0, 0}, cb[2] = {0, 0};
            int nca = 0, ncb = 0;
            if (blocked_children(&na, p.a, &nb, p.b, ca, &nca, cb, &ncb)) {
                uint32_t o = atomicAdd(&n_next, (uint32_t)(nca * ncb));
                for (int x = 0; x < nca; x++)
                    for (int y = 0; y < ncb; y++, o++) {
                        fpair c = {p.task, ca[x], cb[y]};
                        if (o >= room) block_hand_over(c, front, cnt, cap_pairs, overflow);
                        else if (LEAN && o < BLOCK_RUN_SHARED) s_next[o] = c;
                        else next[o] = c;
                    }
                continue;
            }
            /* a leaf pair: to the run's leaf workpile, which the levels' two triangle passes test
               after this kernel (tdm__gpu_block_configs) */
            my_leaf++;
            uint32_t o = atomicAdd(&cnt[BLOCK_LEAF_CNT], 1u);
            if (o < cap_leaves) leaves[o] = p;
            else *overflow = 1; /* counted past the capacity: the batch is re-run with more room */
        }
        __syncthreads();
        levels++;
        /* thread 0 alone reads n_cur before it writes it (the profile's widest level is its
           own): another thread's read here would race with that write (racecheck, call 98) */
        if (threadIdx.x == 0) {
            if (n_cur > widest) widest = n_cur;
            n_cur = min(n_next, room);
        }
        fpair *tmp = cur;
        cur = next;
        next = tmp;
        tmp = s_cur;
        s_cur = s_next;
        s_next = tmp;
        __syncthreads();
    }
    if (stat) {
        atomicAdd(&st_box, my_box);
        atomicAdd(&st_leaf, my_leaf);
        __syncthreads();
        if (threadIdx.x == 0) {
            uint32_t *o = stat + blockIdx.x * 8;
            o[0] = (uint32_t)(clock64() - t_start);
            o[1] = mine;
            o[2] = st_box;
            o[3] = st_leaf;
            o[4] = levels;
            o[5] = widest;
        }
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
    c.traversal = TDM_GPU_TRAVERSE_PAIRS;
    c.small_tasks = TDM_GPU_SMALL_TASKS;
    c.small_budget = TDM_GPU_SMALL_BUDGET;
    c.program_cache = TDM_GPU_PROGRAM_CACHE;
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
    tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)g->scratch_bytes);
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
    if (tdm__gpu_budget_add(g->bud, BUD_SCRATCH, (int64_t)(need - g->scratch_bytes)) != TDM_OK) return OVERFLOW_RC;
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
    s->d_tasks = NULL; s->d_res = NULL; s->d_in = NULL; s->d_pairs = NULL;
    s->h_res = NULL; s->h_in = NULL; s->h_pairs = NULL;
}

/* Frees a slot's task buffers and gives their bytes back. */
static void free_tasks(tdm_gpu *g, slot *s)
{
    free_task_buffers(s);
    tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)task_bytes(s->cap_tasks));
    s->cap_tasks = 0;
}

int tdm__gpu_reserve_tasks(tdm_gpu *g, slot *s, uint64_t n)
{
    if (n <= s->cap_tasks) return TDM_OK;
    uint64_t c = s->cap_tasks ? s->cap_tasks : 1024;
    while (c < n) c *= 2;
    if (tdm__gpu_budget_add(g->bud, BUD_SCRATCH, (int64_t)(task_bytes(c) - task_bytes(s->cap_tasks))) != TDM_OK)
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
    if (ok) return TDM_OK;
    cudaError_t e = cudaGetLastError();
    free_tasks(g, s);
    return tdm_cuda_err(e, &g->dead);
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
    g->prof_fd = -1;
    g->n_slots = c.streams;
    g->grid = prop.multiProcessorCount * 8;
    const char *graphs = getenv("TDM_GPU_GRAPHS");
    g->graphs = !(graphs && strcmp(graphs, "0") == 0);
    const char *fault = getenv("TDM_GPU_FAULT_AFTER");
    g->fault_after = fault && *fault ? atoll(fault) : -1;
    const char *room = getenv("TDM_GPU_CONFIG_ROOM");
    g->config_room = room && *room ? strtoull(room, NULL, 10) : 0;
    /* A/B runs and tests: TDM_GPU_SMALL_TASKS (0: never depth first), TDM_GPU_SMALL_BUDGET */
    const char *small = getenv("TDM_GPU_SMALL_TASKS"), *budget = getenv("TDM_GPU_SMALL_BUDGET");
    if (small && *small) g->cfg.small_tasks = (uint32_t)strtoul(small, NULL, 10);
    if (budget && *budget) g->cfg.small_budget = (uint32_t)strtoul(budget, NULL, 10);
    /* configs runs of few entries in one launch (configs.cu, block runs) */
    const char *bce = getenv("TDM_GPU_BLOCK_CONFIG_ENTRIES"), *br = getenv("TDM_GPU_BLOCK_ROOM");
    g->block_config_entries = bce && *bce ? strtoull(bce, NULL, 10) : BLOCK_CONFIG_ENTRIES;
    g->block_room = br && *br ? (uint32_t)strtoul(br, NULL, 10) : 0;
    /* small configs runs as one CUDA graph each (configs.cu; TDM_GPU_CONFIG_GRAPHS=0: launch by launch) */
    const char *cg = getenv("TDM_GPU_CONFIG_GRAPHS");
    /* a graph run's fold writes the answers into pinned host memory, device-addressable where
       addressing is unified (every 64-bit Linux host of a supported GPU) */
    g->config_graphs = !(cg && strcmp(cg, "0") == 0) && prop.unifiedAddressing;
    const char *lean = getenv("TDM_GPU_CONFIG_LEAN");
    g->config_lean = !(lean && strcmp(lean, "0") == 0);
    const char *fused = getenv("TDM_GPU_CONFIG_FUSED"), *fc = getenv("TDM_GPU_FUSED_CONFIGS");
    g->fused_configs = fc && *fc ? (uint32_t)strtoul(fc, NULL, 10) : TDM_GPU_FUSED_CONFIGS;
    if (fused && strcmp(fused, "0") == 0) g->fused_configs = 0;
    const char *fs = getenv("TDM_GPU_FUSED_SHARED");
    g->fused_shared = fs && *fs ? (uint32_t)strtoul(fs, NULL, 10) : 0;
    /* robot scene programs kept on the lane (configs.cu); TDM_GPU_PROGRAM_CACHE_KB (A/B runs)
       overrides the config */
    const char *pck = getenv("TDM_GPU_PROGRAM_CACHE_KB");
    g->program_cache_bytes = pck && *pck ? strtoull(pck, NULL, 10) << 10 : c.program_cache;
    const char *prof = getenv("TDM_GPU_PROFILE");
    g->prof_fd = prof && *prof ? open(prof, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;
    /* TDM_GPU_BLOCKING_SYNC=1 (A/B runs): a lane waiting for its slot sleeps in the driver
     * instead of spinning on a core (the default: the lowest latency, a core per waiting lane) */
    /* trees in the device's stream-ordered pool, where the device has one (TDM_GPU_MESH_POOLED: 1 or 0,
       A/B runs); it keeps up to MESH_POOL_KEEP bytes of freed arrays for the next uploads */
    const char *mp = getenv("TDM_GPU_MESH_POOLED");
    int pools = 0;
    cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, c.device);
    g->mesh_pooled = pools && (mp && *mp ? strcmp(mp, "0") != 0 : MESH_POOLED);
    if (g->mesh_pooled) {
        cudaMemPool_t pool;
        uint64_t keep = MESH_POOL_KEEP;
        if (cudaDeviceGetDefaultMemPool(&pool, c.device) != cudaSuccess ||
            cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess)
            g->mesh_pooled = 0;
    }
    cudaGetLastError();
    const char *blocking = getenv("TDM_GPU_BLOCKING_SYNC");
    unsigned ev_flags = cudaEventDisableTiming | (blocking && strcmp(blocking, "1") == 0 ? cudaEventBlockingSync : 0);
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess ||
            cudaEventCreateWithFlags(&s->ready, ev_flags) != cudaSuccess ||
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

extern "C" int tdm_gpu_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

extern "C" uint64_t tdm_gpu_device_memory(int device)
{
    cudaDeviceProp prop;
    if (device < 0 || device >= tdm_gpu_device_count() || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return (uint64_t)prop.totalGlobalMem;
}

extern "C" int tdm_gpu_create(const tdm_gpu_config *cfg, tdm_gpu **out, const char **why)
{
    *out = NULL;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    tdm_gpu_config c = cfg ? *cfg : tdm_gpu_config_default();
    if (e != cudaSuccess || n == 0 || c.device < 0 || c.device >= n) {
        if (why) *why = tdm_cuda_no_device_why(e, n, c.device);
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
    /* TDM_POLL_YIELD=1 (A/B runs): the driver's waits yield the core between their polls */
    const char *py = getenv("TDM_POLL_YIELD");
    if (py && strcmp(py, "1") == 0 && cudaSetDeviceFlags(cudaDeviceScheduleYield) != cudaSuccess) cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    if (c.memory_budget == 0) c.memory_budget = (uint64_t)(0.8 * (double)total_b);
    gpu_budget *bud = (gpu_budget *)calloc(1, sizeof *bud);
    if (!bud) return TDM_ENOMEM;
    if (pthread_mutex_init(&bud->mu, NULL) != 0) {
        free(bud);
        return TDM_ESYS;
    }
    if (pthread_mutex_init(&bud->arena_mu, NULL) != 0) {
        pthread_mutex_destroy(&bud->mu);
        free(bud);
        return TDM_ESYS;
    }
    bud->limit = c.memory_budget;
    bud->users = 1;
    /* trees in the arena unless TDM_GPU_MESH_ARENA=0 (A/B runs: cudaMalloc and cudaFree each);
       TDM_GPU_MESH_CHUNK_KB (tests): smaller chunks */
    const char *ma = getenv("TDM_GPU_MESH_ARENA"), *mc = getenv("TDM_GPU_MESH_CHUNK_KB");
    bud->arena = !(ma && strcmp(ma, "0") == 0);
    bud->chunk_bytes = mc && *mc ? (size_t)strtoull(mc, NULL, 10) << 10 : MESH_CHUNK;
    if (bud->chunk_bytes < 4 * TDM_EXTENTS_ALIGN) bud->chunk_bytes = 4 * TDM_EXTENTS_ALIGN;
    /* TDM_GPU_MESH_SPARES (A/B runs): empty chunks of large trees kept (0: each given back when its
       tree leaves, as before the spares) */
    const char *ms = getenv("TDM_GPU_MESH_SPARES");
    bud->spares = ms && *ms ? (size_t)strtoull(ms, NULL, 10) : ARENA_SPARES;
    bud->chunk_bytes -= bud->chunk_bytes % TDM_EXTENTS_ALIGN;
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
        return tdm_cuda_err(cudaGetLastError(), &g->dead);
    pthread_mutex_lock(&g->bud->mu);
    g->bud->users++;
    pthread_mutex_unlock(&g->bud->mu);
    return create_on(g->cfg, prop, g->bud, out);
}

extern "C" void tdm_gpu_destroy(tdm_gpu *g)
{
    if (!g) return;
    /* its device, whatever the calling thread last used (with several GPU engines, another one) */
    if (cudaSetDevice(g->cfg.device) != cudaSuccess) cudaGetLastError();
    free_frontiers(g);
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        cudaFree(s->cnt);
        tdm__gpu_configs_free(g, s);
        free_tasks(g, s);
        drop_graphs(s);
        free(s->groups);
        cudaFreeHost(s->h_cnt);
        if (s->prof) {
            for (cudaEvent_t e : s->prof->ev) cudaEventDestroy(e);
            cudaFree(s->prof->d_stat);
            cudaFreeHost(s->prof->h_stat);
            free(s->prof);
        }
        if (s->ready) cudaEventDestroy(s->ready);
        if (s->stream) cudaStreamDestroy(s->stream);
    }
    tdm__gpu_programs_free(g);
    budget_release(g->bud);
    if (g->prof_fd >= 0) close(g->prof_fd);
    free(g);
}

/* A tree's device array, and its copy from the host: from the device's stream-ordered pool on
 * slot 0's stream (tdm_gpu.mesh_pooled; the upload waits for that stream alone at its end),
 * or cudaMalloc and cudaMemcpy. */
static cudaError_t mesh_alloc(tdm_gpu *g, void **p, size_t bytes)
{
    return g->mesh_pooled ? cudaMallocAsync(p, bytes, g->slots[0].stream) : cudaMalloc(p, bytes);
}

static cudaError_t mesh_copy(tdm_gpu *g, void *dst, const void *src, size_t bytes)
{
    return g->mesh_pooled ? cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g->slots[0].stream)
                          : cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}

static void mesh_release(tdm_gpu *g, const tdm_gpu_mesh *m, void *p)
{
    if (!p) return;
    if (m->pooled) cudaFreeAsync(p, g->slots[0].stream);
    else cudaFree(p);
}

/* The node layouts the traversals run on (the blocked one always, the
 * four-wide one for TDM_GPU_TRAVERSE_WIDE) are built on the host by geom/layout.h. */
extern "C" int tdm_gpu_mesh_upload(tdm_gpu *g, const tdm_bvh *bvh, tdm_gpu_mesh **out)
{
    *out = NULL;
    if (g->dead) return TDM_EGPU;
    if (cudaSetDevice(g->cfg.device) != cudaSuccess) return tdm_cuda_err(cudaGetLastError(), &g->dead);
    uint64_t nb = (uint64_t)bvh->n_nodes * sizeof(tdm_bvh_node), tb = (uint64_t)bvh->n_tris * 9 * sizeof(float),
             ib = (uint64_t)bvh->n_tris * sizeof(uint32_t),
             kb = TDM_LAYOUT_BLOCKED_NODES((uint64_t)bvh->n_nodes) * sizeof(tdm_bvh_node),
             bytes = nb + kb + tb + ib;
    uint32_t n_wide = 0;
    tdm_bvh_node *wide = NULL;
    if (g->cfg.traversal == TDM_GPU_TRAVERSE_WIDE) {
        int rc = tdm_layout_wide(bvh, &wide, &n_wide);
        if (rc != TDM_OK) return rc;
        bytes += (uint64_t)n_wide * sizeof(tdm_bvh_node);
    }
    /* in the arena: the arrays one extent, each at a multiple of TDM_EXTENTS_ALIGN */
    int arena = g->bud->arena && !g->mesh_pooled;
    uint64_t wb = (uint64_t)n_wide * sizeof(tdm_bvh_node);
    uint64_t at_nodes = tdm_extents_length(wb), at_blocked = at_nodes + tdm_extents_length(nb),
             at_tris = at_blocked + tdm_extents_length(kb), at_ids = at_tris + tdm_extents_length(tb),
             extent = at_ids + tdm_extents_length(ib);
    if (arena) bytes = extent; /* what it holds of its chunk (tdm_extents_length(0) is 0) */
    else if (tdm__gpu_budget_add(g->bud, BUD_MESH, (int64_t)bytes) != TDM_OK) {
        free(wide);
        return TDM_EGPUMEM;
    }
    tdm_gpu_mesh *m = (tdm_gpu_mesh *)calloc(1, sizeof *m);
    tdm_bvh_node *blocked = NULL;
    uint32_t n_blocked = 0;
    int placed = TDM_OK;
    if (m) {
        m->pooled = g->mesh_pooled;
        tdm_layout_blocked(bvh, &blocked, &n_blocked); /* NULL on failure */
        if (blocked && arena) {
            placed = arena_place(g->bud, (size_t)extent, &m->chunk, &m->at);
            if (placed == TDM_OK) {
                unsigned char *base = m->chunk->base + m->at;
                m->wide = wide ? (tdm_bvh_node *)base : NULL;
                m->nodes = (tdm_bvh_node *)(base + at_nodes);
                m->blocked = (tdm_bvh_node *)(base + at_blocked);
                m->tris = (float *)(base + at_tris);
                m->ids = (uint32_t *)(base + at_ids);
                m->bytes = extent;
            }
        }
    }
    if (placed != TDM_OK) { /* nothing held */
        free(wide);
        free(blocked);
        free(m);
        return placed;
    }
    cudaError_t e = cudaSuccess;
    if (blocked && wide) {
        if (!arena) e = mesh_alloc(g, (void **)&m->wide, (size_t)wb);
        if (e == cudaSuccess) e = mesh_copy(g, m->wide, wide, (size_t)wb);
    }
    if (blocked && e == cudaSuccess && !arena) e = mesh_alloc(g, (void **)&m->nodes, nb);
    if (blocked && e == cudaSuccess && !arena) e = mesh_alloc(g, (void **)&m->blocked, kb);
    if (blocked && e == cudaSuccess && !arena) e = mesh_alloc(g, (void **)&m->tris, tb);
    if (blocked && e == cudaSuccess && !arena) e = mesh_alloc(g, (void **)&m->ids, ib);
    if (blocked && e == cudaSuccess) e = mesh_copy(g, m->nodes, bvh->nodes, nb);
    if (blocked && e == cudaSuccess) e = mesh_copy(g, m->blocked, blocked, kb);
    if (blocked && e == cudaSuccess) e = mesh_copy(g, m->tris, bvh->tri_verts, tb);
    if (blocked && e == cudaSuccess) e = mesh_copy(g, m->ids, bvh->tri_ids, ib);
    /* the copies done (pooled: the host's arrays are read before it returns, but the arrays are
       only allocated once slot 0's stream gets there; other streams use them from now on) */
    if (blocked && e == cudaSuccess && g->mesh_pooled) e = cudaStreamSynchronize(g->slots[0].stream);
    free(wide);
    int have = blocked != NULL;
    free(blocked);
    if (!have || e != cudaSuccess) {
        if (m && m->chunk) { /* no kernel read its extent: back at once */
            arena_free(g->bud, m->chunk, m->at, (size_t)m->bytes, 1);
            free(m);
        } else if (m && !arena) {
            m->bytes = bytes;
            tdm_gpu_mesh_free(g, m); /* what was allocated, and the budget */
        } else if (m) {
            free(m);
        } else if (!arena) {
            tdm__gpu_budget_add(g->bud, BUD_MESH, -(int64_t)bytes);
        }
        return have ? tdm_cuda_err(e, &g->dead) : TDM_ENOMEM;
    }
    m->n_nodes = bvh->n_nodes;
    m->n_tris = bvh->n_tris;
    m->radius = bvh->radius;
    m->bytes = bytes;
    *out = m;
    return TDM_OK;
}

static void mesh_free(tdm_gpu *g, tdm_gpu_mesh *m, int fresh)
{
    if (!m) return;
    cudaSetDevice(g->cfg.device);
    if (m->chunk) { /* the arena: no wait for the device (resident.h) */
        arena_free(g->bud, m->chunk, m->at, (size_t)m->bytes, fresh);
        free(m);
        return;
    }
    mesh_release(g, m, m->wide);
    mesh_release(g, m, m->nodes);
    mesh_release(g, m, m->blocked);
    mesh_release(g, m, m->tris);
    mesh_release(g, m, m->ids);
    tdm__gpu_budget_add(g->bud, BUD_MESH, -(int64_t)m->bytes);
    free(m);
}

extern "C" void tdm_gpu_mesh_free(tdm_gpu *g, tdm_gpu_mesh *m) { mesh_free(g, m, 0); }
extern "C" void tdm_gpu_mesh_discard(tdm_gpu *g, tdm_gpu_mesh *m) { mesh_free(g, m, 1); }
extern "C" uint32_t tdm_gpu_mesh_triangles(const tdm_gpu_mesh *m) { return m ? m->n_tris : 0; }

unsigned tdm__gpu_blocks(uint64_t n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }


/* The levels of the group that starts at level it0: ITERS_PER_SYNC, fewer for
 * the last group (levels stop at MAX_ITERS - 1). The graph and the direct
 * launches of a group both count by it. */
static int group_levels(int it0) { return it0 + ITERS_PER_SYNC < MAX_ITERS - 1 ? ITERS_PER_SYNC : MAX_ITERS - 1 - it0; }

/* Queues the group of levels starting at it0 on the slot's stream (launched,
 * or captured into a graph by group_graph): each level's traversal, triangle
 * filter and exact test, then the copies of the next frontier's size and the
 * overflow flag to the host (h_cnt[0], h_cnt[1]). Records no event (the caller,
 * launch_group, does) and waits for nothing; a failed launch shows in
 * cudaGetLastError. Returns the levels queued. */
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
        TDM_CUDA_TRY(&g->dead, cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
        queue_group(g, s, it0);
        cudaError_t e = cudaStreamEndCapture(s->stream, &graph);
        if (e == cudaSuccess) e = cudaGraphInstantiate(&s->groups[k], graph, 0);
        if (graph) cudaGraphDestroy(graph);
        if (e != cudaSuccess) {
            s->groups[k] = NULL;
            return tdm_cuda_err(e, &g->dead);
        }
    }
    *out = s->groups[k];
    return TDM_OK;
}

/* Queues the slot's next group of levels and an event after it. */
int tdm__gpu_launch_group(tdm_gpu *g, slot *s)
{
    if (g->graphs) {
        cudaGraphExec_t exec;
        int rc = group_graph(g, s, s->it, &exec);
        if (rc != TDM_OK) return rc;
        TDM_CUDA_TRY(&g->dead, cudaGraphLaunch(exec, s->stream));
        s->it += group_levels(s->it);
    } else {
        s->it += queue_group(g, s, s->it);
        TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    }
    TDM_CUDA_TRY(&g->dead, cudaEventRecord(s->ready, s->stream));
    return TDM_OK;
}

/* ---- the slot API (gpu.h) ------------------------------------------------------- */

extern "C" int tdm_gpu_begin(tdm_gpu *g)
{
    if (g->dead) return TDM_EGPU;
    /* the calling thread may be new to CUDA, or have used another device */
    if (cudaSetDevice(g->cfg.device) != cudaSuccess) return tdm_cuda_err(cudaGetLastError(), &g->dead);
    return TDM_OK;
}

extern "C" int tdm_gpu_slots(const tdm_gpu *g) { return g->n_slots; }

/* Every task's root pair starts in the frontier. */
extern "C" uint64_t tdm_gpu_slot_max_tasks(const tdm_gpu *g) { return g->cap_pairs; }

extern "C" void tdm_gpu_pair_of(const tdm_gpu *g, const tdm_gpu_mesh *a, const tdm_gpu_mesh *b, tdm_gpu_pair *out)
{
    int wide = g->cfg.traversal == TDM_GPU_TRAVERSE_WIDE;
    *out = dpair{wide ? a->wide : a->blocked, wide ? b->wide : b->blocked, a->tris, b->tris, a->ids, b->ids,
                 a->radius, b->radius};
}

extern "C" int tdm_gpu_slot_buffers(tdm_gpu *g, int k, size_t n, tdm_gpu_input **in, tdm_gpu_pair **pairs)
{
    slot *s = &g->slots[k];
    int rc = tdm__gpu_reserve_tasks(g, s, n);
    if (rc != TDM_OK) return rc;
    *in = s->h_in;
    *pairs = s->h_pairs;
    return TDM_OK;
}

extern "C" int tdm_gpu_slot_start(tdm_gpu *g, int k, size_t n, const size_t (*runs)[2], int n_runs)
{
    slot *s = &g->slots[k];
    if (n == 0 || n > s->cap_tasks || n > g->cap_pairs) return TDM_EINVAL;
    for (int r = 0; r < n_runs; r++)
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(s->d_pairs + runs[r][0], s->h_pairs + runs[r][0],
                                               runs[r][1] * sizeof(dpair), cudaMemcpyHostToDevice, s->stream));
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(s->d_in, s->h_in, n * sizeof(dinput), cudaMemcpyHostToDevice, s->stream));
    prepare_tasks_kernel<<<tdm__gpu_blocks(n), BLOCK, 0, s->stream>>>(s->d_in, s->d_pairs, s->d_tasks, (uint32_t)n);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    TDM_CUDA_TRY(&g->dead, cudaMemsetAsync(s->d_res, 0, n * sizeof(dres), s->stream));
    TDM_CUDA_TRY(&g->dead, cudaMemsetAsync(s->cnt, 0, CNT_N * sizeof(uint32_t), s->stream));
    int small = g->cfg.small_tasks && n <= g->cfg.small_tasks && g->cfg.traversal == TDM_GPU_TRAVERSE_PAIRS;
    if (small) /* depth first in one launch; the levels only for what it hands over (slot_step) */
        small_run_kernel<<<tdm__gpu_blocks(n), BLOCK, 0, s->stream>>>(s->d_tasks, s->d_res, (uint32_t)n, s->front[0],
                                                                       s->cnt, (uint32_t)g->cap_pairs,
                                                                       g->cfg.small_budget, s->cnt + 2 * MAX_ITERS);
    else
        init_frontier_kernel<<<tdm__gpu_blocks(n), BLOCK, 0, s->stream>>>(s->front[0], (uint32_t)n, s->cnt);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    if (g->fault_after >= 0 && g->stats.runs == (uint64_t)g->fault_after) fault_kernel<<<1, 1, 0, s->stream>>>(nullptr);
    s->n = n;
    s->it = 0;
    s->finishing = 0;
    s->configs = 0;
    s->small = small;
    g->stats.runs++;
    g->stats.tasks += n;
    if (small) {
        /* the hand-over's size and the overflow flag, and the answers at once: most small runs
           hand nothing over and are done at the first look */
        g->stats.small_runs++;
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(&s->h_cnt[0], s->cnt, sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                               s->stream));
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(&s->h_cnt[1], s->cnt + 2 * MAX_ITERS, sizeof(uint32_t),
                                               cudaMemcpyDeviceToHost, s->stream));
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(s->h_res, s->d_res, n * sizeof(dres), cudaMemcpyDeviceToHost,
                                               s->stream));
        TDM_CUDA_TRY(&g->dead, cudaEventRecord(s->ready, s->stream));
        return TDM_OK;
    }
    return tdm__gpu_launch_group(g, s);
}

int tdm__gpu_block_configs(tdm_gpu *g, slot *s, uint32_t most, const uint32_t *d_tasks_listed, void *scratch,
                           uint32_t room, uint32_t blocks)
{
    auto *run = g->config_lean ? block_run_kernel<true> : block_run_kernel<false>;
    run<<<blocks, BLOCK, 0, s->stream>>>(s->d_tasks, s->d_res, most, d_tasks_listed, (fpair *)scratch, room, s->front[0],
                                         s->cnt, (uint32_t)g->cap_pairs, s->leaves, (uint32_t)g->cap_leaves,
                                         s->cnt + 2 * MAX_ITERS, s->prof && g->prof_fd >= 0 ? s->prof->d_stat : NULL);
    /* its leaf pairs: the filter at full occupancy, the exact test on the survivors (the levels'
       passes, on the counters of the last level, which the levels never reach) */
    tri_filter_kernel<<<BLOCK_LEAF_GRID, BLOCK, 0, s->stream>>>(s->leaves, s->cnt, MAX_ITERS - 1,
                                                                (uint32_t)g->cap_leaves, s->d_tasks, s->d_res, s->tris,
                                                                s->cnt + 2 * MAX_ITERS);
    tri_exact_kernel<<<BLOCK_LEAF_GRID, BLOCK, 0, s->stream>>>(s->tris, s->cnt, MAX_ITERS - 1, (uint32_t)g->cap_leaves,
                                                               s->d_tasks, s->d_res);
    return TDM_OK;
}

extern "C" int tdm_gpu_slot_step(tdm_gpu *g, int k)
{
    slot *s = &g->slots[k];
    cudaError_t e = cudaEventSynchronize(s->ready);
    if (e != cudaSuccess) return tdm_cuda_err(e, &g->dead);
    if (s->configs && s->small) tdm__gpu_configs_look(s); /* a block run's look came back with its answers */
    if (s->finishing) {
        g->stats.iterations += (uint64_t)s->it;
        for (int i = 0; i < s->it; i++) g->stats.pairs += (uint64_t)s->h_cnt[2 + 2 * i] + s->h_cnt[3 + 2 * i];
        return TDM_GPU_SLOT_DONE;
    }
    if (s->h_cnt[1]) {
        g->stats.reruns++;
        s->small = 0;
        return TDM_GPU_SLOT_OVERFLOW;
    }
    if (s->small) { /* a small run's first look: its answers are here unless it handed pairs over */
        s->small = 0;
        if (s->h_cnt[0] == 0) return TDM_GPU_SLOT_DONE;
        g->stats.small_handovers++;
        int rc = tdm__gpu_launch_group(g, s);
        return rc == TDM_OK ? TDM_GPU_SLOT_BUSY : rc;
    }
    if (s->h_cnt[0] == 0) { /* the frontier is empty: copy the results (and the level counts) back */
        s->finishing = 1;
        if (s->configs) {
            TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(s->h_cnt + 2, s->cnt, 2 * (size_t)s->it * sizeof(uint32_t),
                                                   cudaMemcpyDeviceToHost, s->stream));
            int rc = tdm__gpu_configs_finish(g, s);
            return rc == TDM_OK ? TDM_GPU_SLOT_BUSY : rc;
        }
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(s->h_res, s->d_res, s->n * sizeof(dres), cudaMemcpyDeviceToHost,
                                               s->stream));
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(s->h_cnt + 2, s->cnt, 2 * (size_t)s->it * sizeof(uint32_t),
                                               cudaMemcpyDeviceToHost, s->stream));
        TDM_CUDA_TRY(&g->dead, cudaEventRecord(s->ready, s->stream));
        return TDM_GPU_SLOT_BUSY;
    }
    if (s->it >= MAX_ITERS - 1) return TDM_EGPU; /* deeper than any valid tree pair */
    int rc = tdm__gpu_launch_group(g, s);
    return rc == TDM_OK ? TDM_GPU_SLOT_BUSY : rc;
}

extern "C" int tdm_gpu_slot_ready(tdm_gpu *g, int k)
{
    cudaError_t e = cudaEventQuery(g->slots[k].ready);
    if (e == cudaSuccess) return 1;
    if (e == cudaErrorNotReady) {
        cudaGetLastError(); /* not an error: do not leave it for the next check */
        return 0;
    }
    return tdm_cuda_err(e, &g->dead);
}

extern "C" const tdm_gpu_result *tdm_gpu_slot_results(const tdm_gpu *g, int k) { return g->slots[k].h_res; }

extern "C" int tdm_gpu_grow(tdm_gpu *g)
{
    int grown = reserve(g, 2 * g->cap_pairs, 2 * g->cap_leaves) == TDM_OK;
    if (g->dead) return TDM_EGPU;
    return grown;
}

extern "C" void tdm_gpu_abort(tdm_gpu *g)
{
    for (int k = 0; k < g->n_slots; k++) cudaStreamSynchronize(g->slots[k].stream);
    cudaGetLastError();
}

extern "C" int tdm_gpu_prepare(tdm_gpu *g, size_t tasks_per_slot)
{
    if (g->dead) return TDM_EGPU;
    if (cudaSetDevice(g->cfg.device) != cudaSuccess) return tdm_cuda_err(cudaGetLastError(), &g->dead);
    size_t chunk = tasks_per_slot ? tasks_per_slot : 1;
    for (int k = 0; k < g->n_slots; k++) {
        slot *s = &g->slots[k];
        int rc = tdm__gpu_reserve_tasks(g, s, chunk);
        if (rc != TDM_OK) return rc;
        /* the first launch of each kernel loads its module: do it now, with no work */
        TDM_CUDA_TRY(&g->dead, cudaMemsetAsync(s->cnt, 0, CNT_N * sizeof(uint32_t), s->stream));
        init_frontier_kernel<<<1, BLOCK, 0, s->stream>>>(s->front[0], 0, s->cnt);
        prepare_tasks_kernel<<<1, BLOCK, 0, s->stream>>>(s->d_in, s->d_pairs, s->d_tasks, 0);
        traverse_kernel<<<1, BLOCK, 0, s->stream>>>(s->front[0], s->front[1], s->leaves, s->d_tasks, s->d_res, s->cnt,
                                                    1, (uint32_t)g->cap_pairs, (uint32_t)g->cap_leaves,
                                                    s->cnt + 2 * MAX_ITERS);
        tri_filter_kernel<<<1, BLOCK, 0, s->stream>>>(s->leaves, s->cnt, 1, (uint32_t)g->cap_leaves, s->d_tasks,
                                                      s->d_res, s->tris, s->cnt + 2 * MAX_ITERS);
        tri_exact_kernel<<<1, BLOCK, 0, s->stream>>>(s->tris, s->cnt, 1, (uint32_t)g->cap_leaves, s->d_tasks,
                                                     s->d_res);
        TDM_CUDA_TRY(&g->dead, cudaGetLastError());
        TDM_CUDA_TRY(&g->dead, cudaStreamSynchronize(s->stream));
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
    s->budget_bytes = g->bud->limit;
    s->device_bytes = budget_held(g->bud);
    s->arena_bytes = g->bud->arena_bytes;
    pthread_mutex_unlock(&g->bud->mu);
    pthread_mutex_lock(&g->bud->arena_mu);
    s->arena_chunks = g->bud->n_chunks;
    s->arena_made = g->bud->chunks_made;
    s->arena_released = g->bud->chunks_released;
    pthread_mutex_unlock(&g->bud->arena_mu);
}

extern "C" int tdm_gpu_device(const tdm_gpu *g) { return g->cfg.device; }

extern "C" int tdm_gpu_account(tdm_gpu *g, int64_t bytes) { return tdm__gpu_budget_add(g->bud, BUD_OTHER, bytes); }
