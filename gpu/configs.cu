/* Batches of robot configurations on the GPU-resident engine's slots (gpu.h,
 * "batches of robot configurations"): forward kinematics, culling, task listing
 * and the fold on the device, around the same traversal as any chunk. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include "../geom/bv.h"
#include "../geom/cull.h"
#include "../geom/kin.h"
#include "extents.h"
#include "../geom/leaf.h"
#include "../geom/solid.h"
#include "cuda_util.h"
#include "resident.h"

/* Most (configuration, check) entries one run culls, and most configurations:
 * the scratch per slot stays in tens of MB (flags and offsets: 32 MB at the first). */
#define MAX_ENTRIES (1u << 22)
#define MAX_CONFIGS 65536u
/* Task room a configs run asks of its slot at least (the GPU engine's prepare
 * usually sized it already). */
#define MIN_TASK_ROOM 262144u

/* The program on the device: one buffer holding every array of tdm_gpu_robot,
 * these pointers into it. Passed to the kernels by value. */
typedef struct dprog {
    tdm_kin kin;
    uint32_t n_movable, n_checks;
    const tdm_xform *fixed_pose;
    const double (*fixed_centre)[4];
    const double (*slot_centre)[3];
    const tdm_gpu_check *checks;
    const tdm_gpu_pair *pairs;
    const tdm_solid_obj *solids; /* NULL: no solid */
    const tdm_dvec3 *reps;
} dprog;

/* What every kernel of a run shares: its programs, its strides and its sizes. It
 * lives on the device, first in the run's upload (the programs' buffer), and the
 * kernels read it there, so that their launch arguments are the same for every run
 * of a slot: a small run is one CUDA graph (configs_graph), launched as it was
 * captured. */
typedef struct __align__(16) drun {
    const dprog *progs;
    const uint32_t *prog_of; /* by configuration */
    const double *q;         /* the configurations */
    uint32_t L, M, K, n_q;   /* strides: links, movable objects, checks, values */
    uint32_t n, entries;     /* configurations, (configuration, check) entries */
    uint32_t room, mode, cap, one_launch; /* tasks listed at most; block run (1) or levels */
    uint32_t listed;         /* graph runs: tasks listed (list_emit_kernel, or list_count_kernel's
                                one pass) */
    uint32_t lean;           /* tdm_gpu.config_lean */
    uint32_t handed, overflow, blocks_done; /* fused runs (fused_kernel): pairs handed over to the
                                               levels, their overflow, blocks finished */
} drun;

/* Block runs (resident.cu's block_run_kernel): tasks a block takes at most (from the
 * run's upper bound on tasks; the device spreads the tasks it listed over the blocks),
 * the most blocks, and each block's frontier room in pairs. */
#define BLOCK_RUN_TASKS 4u
#define BLOCK_RUN_MAX 256u
#define BLOCK_RUN_ROOM 8192u

/* Small runs as one CUDA graph (configs_graph): at most this many configurations. Its
 * kernels are launched for these most (a block's threads past the run's sizes, read
 * from its drun, return at once). */
#define GRAPH_CONFIGS 1024u
/* Two sizes of graph per slot: a planner's state or motion (the latency lane's runs) launches
 * the few blocks it needs, the largest small runs those of GRAPH_CONFIGS; each as six launches
 * or as one fused kernel. */
#define GRAPH_FUSED 2 /* graph[GRAPH_FUSED + size]: fused runs (fused_kernel) of the same two sizes */
#define GRAPH_SIZES (2 * GRAPH_FUSED)
static const uint32_t graph_configs[GRAPH_FUSED] = {64u, GRAPH_CONFIGS}; /* by size % GRAPH_FUSED */
/* Fused runs (fused_kernel): one block of FUSED_THREADS per configuration, at most
 * tdm_gpu.fused_configs of them (resident.h's TDM_GPU_FUSED_CONFIGS, or the environment's; in
 * effect at most GRAPH_CONFIGS); programs of at most FUSED_CHECKS checks; each frontier buffer's first
 * FUSED_SHARED pairs and the first FUSED_HOT tasks' hot data in shared memory. The blocks
 * share the block runs' frontier scratch (BLOCK_RUN_MAX x BLOCK_RUN_ROOM pairs a buffer). */
#define FUSED_THREADS 128
#define FUSED_CHECKS 1024u
#define FUSED_SHARED 1024u
#define FUSED_HOT 48u

/* What a slot's graph was captured with: the buffers and sizes its launches name. */
typedef struct graph_key {
    const void *prog, *links, *pose, *centre, *map, *span, *h_ans, *blocks;
    const void *tasks, *res, *front, *cnt;
    uint64_t cap_pairs;
    uint32_t room, block_room;
    uint32_t fused_shared, fused_hot; /* fused_kernel's shared frontier pairs and hot tasks */
} graph_key;

/* A buffer that grows: on the device (counted against the budget) or pinned. */
typedef struct dbuf {
    void *p;
    size_t cap;
} dbuf;

struct cfg_slot {
    dbuf prog, h_prog;     /* the program, and its pinned staging */
    dbuf q, h_q;           /* configurations */
    dbuf links, pose;      /* per configuration: its joints' local motions and its links' world transforms
                              (fk_kernel), its movable objects' transforms */
    dbuf centre;           /* per configuration: movable objects' culling centres */
    dbuf flag, off;        /* per (configuration, check): kept, and its task index */
    dbuf map;              /* per task: (configuration, check) */
    dbuf span;             /* graph runs: per configuration, its first task and its tasks (list_*_kernel) */
    dbuf temp;             /* CUB's scan */
    dbuf ans, h_ans;       /* answers */
    dbuf blocks;           /* block runs: each block's two frontier buffers */
    uint32_t *d_total;     /* the tasks listed (emit_kernel) */
    uint64_t device_bytes; /* counted in the budget */
    cudaGraphExec_t graph[GRAPH_SIZES]; /* configs_graph: a small run after its upload, as captured for ... */
    graph_key graph_key[GRAPH_SIZES];   /* ... these buffers */
    /* the run in flight */
    size_t n;
    uint32_t task_room;
    int spans; /* a graph run: its tasks listed by list_*_kernel (span, drun.listed), its answers folded into h_ans */
};

/* ---- kernels -------------------------------------------------------------------
 *
 * A run may hold the configurations of several programs (robot scenes: pooled
 * planners' requests): configuration i runs program progs[prog_of[i]]. Per
 * configuration the scratch is laid out for the largest program of the run (P.L
 * links, P.M movable objects, P.K checks): a smaller program's entries past its
 * own checks are never kept, so the prefix sum skips them. */

__device__ static __forceinline__ const tdm_xform *pose_of(const dprog &p, uint32_t M, const tdm_xform *pose, size_t i,
                                                          uint32_t e)
{
    return e < p.n_movable ? &pose[i * M + e] : &p.fixed_pose[e - p.n_movable];
}

__device__ static __forceinline__ const double *centre_of(const dprog &p, uint32_t M, const double (*centre)[4],
                                                         size_t i, uint32_t e)
{
    return e < p.n_movable ? centre[i * M + e] : p.fixed_centre[e - p.n_movable];
}

/* A warp per configuration (FK_WARPS to a block): its links, its movable objects'
 * poses and culling centres. Each lane makes joints' local motions (the sines and
 * cosines, most of the work) into the first half of the configuration's link
 * scratch, lane 0 chains them from the root into the second half with the very
 * products of tdm_kin_links (so the same bits as the host), then each lane makes
 * elements' poses and centres. One thread alone took ~27 us for a Panda and a block
 * of them ~120 us for 256 configurations (bench/results/ompl_rrt_small.md). Block 0
 * also clears the slot's counters (what a memset did). */
#define FK_WARPS 4
/* A transform from lane `src` of the warp. */
__device__ static __forceinline__ tdm_xform shfl_xform(const tdm_xform &x, uint32_t src)
{
    tdm_xform y;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) y.r.m[r][c] = __shfl_sync(0xffffffffu, x.r.m[r][c], src);
    y.t.x = __shfl_sync(0xffffffffu, x.t.x, src);
    y.t.y = __shfl_sync(0xffffffffu, x.t.y, src);
    y.t.z = __shfl_sync(0xffffffffu, x.t.z, src);
    return y;
}

/* fk_warp's elements: the pose of element e (of link `link`, whose world transform is w) and,
 * when it is movable, its culling centre. */
__device__ static __forceinline__ void fk_elem(const drun &P, const dprog &p, uint32_t i, uint32_t e,
                                               const tdm_xform *w, tdm_xform *pose, double (*centre)[4])
{
    tdm_xform x = tdm_xform_mul(w, &p.kin.elems[e].origin);
    pose[(size_t)i * P.M + e] = x;
    if (e < p.n_movable) {
        const double *c = p.slot_centre[e];
        tdm_cull_centre(&x, tdm_d3(c[0], c[1], c[2]), centre[(size_t)i * P.M + e]);
    }
}

/* fk_kernel's work for configuration i, by its warp. A robot of at most 32 links in a lean
 * run (drun.lean) chains its links in registers: lane l makes link l's local motion and,
 * in turn, its world transform, every lane taking the parent's and the link's through
 * shuffles; through memory (the links scratch), each link of the chain waited for a store
 * and two loads: ~15 us of a one-configuration run (ncu, H100). Same products in the same
 * order either way, so the same bits. */
__device__ static __forceinline__ void fk_warp(const drun &P, const dprog &p, uint32_t i, uint32_t lane,
                                               tdm_xform *links, tdm_xform *pose, double (*centre)[4])
{
    const tdm_kin &k = p.kin;
    const double *qi = P.q + (size_t)i * P.n_q;
    if (P.lean && k.n_links <= 32) {
        tdm_xform local = k.base, world = k.base; /* lane l: link l's (lane 0: the root's world) */
        uint32_t parent = 0;
        if (lane >= 1 && lane < k.n_links) {
            const tdm_kin_joint *jt = &k.joints[lane - 1];
            tdm_xform m = tdm_kin_motion(jt->type, jt->axis, tdm_kin_value(jt, qi));
            local = tdm_xform_mul(&jt->origin, &m);
            parent = jt->parent;
        }
        for (uint32_t l = 1; l < k.n_links; l++) {
            tdm_xform wp = shfl_xform(world, __shfl_sync(0xffffffffu, parent, l)), ll = shfl_xform(local, l);
            tdm_xform x = tdm_xform_mul(&wp, &ll);
            if (lane == l) world = x;
        }
        for (uint32_t e0 = 0; e0 < k.n_elems; e0 += 32) {
            uint32_t e = e0 + lane, link = e < k.n_elems ? k.elems[e].link : 0;
            tdm_xform w = shfl_xform(world, link);
            if (e < k.n_elems) fk_elem(P, p, i, e, &w, pose, centre);
        }
        return;
    }
    tdm_xform *local = links + (size_t)i * 2 * P.L, *world = local + P.L;
    for (uint32_t j = lane; j + 1 < k.n_links; j += 32) {
        const tdm_kin_joint *jt = &k.joints[j];
        tdm_xform m = tdm_kin_motion(jt->type, jt->axis, tdm_kin_value(jt, qi));
        local[j + 1] = tdm_xform_mul(&jt->origin, &m);
    }
    __syncwarp();
    if (lane == 0) {
        world[0] = k.base;
        for (uint32_t j = 0; j + 1 < k.n_links; j++) world[j + 1] = tdm_xform_mul(&world[k.joints[j].parent], &local[j + 1]);
    }
    __syncwarp();
    for (uint32_t e = lane; e < k.n_elems; e += 32) fk_elem(P, p, i, e, &world[k.elems[e].link], pose, centre);
}

__global__ void __launch_bounds__(32 * FK_WARPS) fk_kernel(const drun *R, tdm_xform *links, tdm_xform *pose,
                                                          double (*centre)[4], uint32_t *cnt)
{
    if (blockIdx.x == 0)
        for (uint32_t c = threadIdx.x; c < CNT_N; c += blockDim.x) cnt[c] = 0;
    const drun P = *R;
    uint32_t i = blockIdx.x * FK_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (i >= P.n) return;
    fk_warp(P, P.progs[P.prog_of[i]], i, lane, links, pose, centre);
}

/* The task of kept entry (i, k) at index t, as emit_kernel makes it. */
__device__ static __forceinline__ void emit_one(const drun &P, const dprog &p, const tdm_xform *pose, uint32_t i,
                                                uint32_t k, uint32_t t, dtask *tasks, dres *res, fpair *front,
                                                uint2 *map)
{
    const tdm_gpu_check *c = &p.checks[k];
    const tdm_xform *xb = pose_of(p, P.M, pose, i, c->b);
    tdm_xform x = c->a_at_origin ? *xb : tdm_xform_rel(pose_of(p, P.M, pose, i, c->a), xb);
    tasks[t] = tdm__dtask_of(x, p.pairs[k], P.mode, P.cap);
    res[t] = dres{0, 0, 0, 0, 0, 0};
    front[t] = fpair{t, 0, 0};
    map[t] = make_uint2(i, k);
}

/* May check k of configuration i collide (its culling spheres meet)? */
__device__ static __forceinline__ int kept(const drun &P, const dprog &p, const double (*centre)[4], uint32_t i,
                                          uint32_t k)
{
    if (k >= p.n_checks) return 0;
    const tdm_gpu_check *c = &p.checks[k];
    return tdm_cull_close(centre_of(p, P.M, centre, i, c->a), centre_of(p, P.M, centre, i, c->b), c->rsum);
}

/* Does list_count_kernel list the run's tasks itself (a lean run whose entries all fit the
 * room), so that list_emit_kernel has nothing to do? */
__device__ static __forceinline__ int listed_in_one_pass(const drun &P) { return P.lean && P.entries <= P.room; }

/* The warp of configuration i lists its kept checks' tasks from index `at` on, in check
 * order (those past the room are counted, not written); returns the index past them. */
__device__ static __forceinline__ uint32_t emit_tasks(const drun &P, const dprog &p, const tdm_xform *pose,
                                                      const double (*centre)[4], uint32_t i, uint32_t lane,
                                                      uint32_t at, dtask *tasks, dres *res, fpair *front, uint2 *map)
{
    for (uint32_t k0 = 0; k0 < p.n_checks; k0 += 32) {
        uint32_t k = k0 + lane;
        int keep = kept(P, p, centre, i, k);
        uint32_t mask = __ballot_sync(0xffffffffu, keep);
        uint32_t t = at + __popc(mask & ((1u << lane) - 1u));
        if (keep && t < P.room) emit_one(P, p, pose, i, k, t, tasks, res, front, map);
        at += __popc(mask);
    }
    return at;
}

/* Graph runs: kinematics, culling and listing in two launches, where a run of launches had
 * fk, cull, CUB's scan (two kernels) and emit: under load each launch of a small run cost
 * ~8 us whatever its work (bench/results/ompl_rrt_loops.md). list_count_kernel: a warp per
 * configuration makes its kinematics (fk_warp), then its lanes cull its checks in turn and
 * count the kept ones (span[i].y). list_emit_kernel: the warp of configuration i sums the
 * counts of those before it (at most GRAPH_CONFIGS: a few coalesced loads a lane), culls
 * again and writes its tasks there in check order, as cull, the scan and emit list them:
 * configuration by configuration, so that those whose tasks fit the room are a prefix (the
 * engine runs the rest again). The last one writes the run's total (drun.listed). In a lean
 * run (drun.lean) whose entries all fit the room, list_count_kernel lists them itself, each
 * configuration's in a range it takes with an atomic (list_emit_kernel: ~11-18 us of a run,
 * ncu, H100), and list_emit_kernel returns at once. */
__global__ void __launch_bounds__(32 * FK_WARPS) list_count_kernel(const drun *R, tdm_xform *links, tdm_xform *pose,
                                                                  double (*centre)[4], uint32_t *cnt, uint2 *span,
                                                                  dtask *tasks, dres *res, fpair *front, uint2 *map)
{
    if (blockIdx.x == 0)
        for (uint32_t c = threadIdx.x; c < CNT_N; c += blockDim.x) cnt[c] = 0;
    const drun P = *R;
    uint32_t i = blockIdx.x * FK_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (i >= P.n) return;
    const dprog &p = P.progs[P.prog_of[i]];
    fk_warp(P, p, i, lane, links, pose, centre);
    __syncwarp(); /* the warp's centres, seen by all its lanes */
    uint32_t n_kept = 0;
    for (uint32_t k0 = 0; k0 < p.n_checks; k0 += 32)
        n_kept += __popc(__ballot_sync(0xffffffffu, kept(P, p, centre, i, k0 + lane)));
    if (listed_in_one_pass(P)) {
        /* every task fits the room, so no configuration is left for a re-run, and its tasks
           need not follow those before it: the warp takes its range at once and lists them
           there (list_emit_kernel has nothing left to do) */
        uint32_t base = 0;
        if (lane == 0) base = atomicAdd((uint32_t *)&R->listed, n_kept);
        base = __shfl_sync(0xffffffffu, base, 0);
        emit_tasks(P, p, pose, centre, i, lane, base, tasks, res, front, map);
        if (lane == 0) span[i] = make_uint2(base, n_kept);
        return;
    }
    if (lane == 0) span[i] = make_uint2(0, n_kept);
}

__global__ void __launch_bounds__(32 * FK_WARPS) list_emit_kernel(const drun *R, const tdm_xform *pose,
                                                                 const double (*centre)[4], dtask *tasks, dres *res,
                                                                 fpair *front, uint2 *map, uint2 *span)
{
    const drun P = *R;
    uint32_t i = blockIdx.x * FK_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (i >= P.n || listed_in_one_pass(P)) return; /* listed by list_count_kernel */
    uint32_t base = 0;
    for (uint32_t j = lane; j < i; j += 32) base += span[j].y;
    base = __reduce_add_sync(0xffffffffu, base);
    const dprog &p = P.progs[P.prog_of[i]];
    uint32_t at = emit_tasks(P, p, pose, centre, i, lane, base, tasks, res, front, map);
    if (lane == 0) {
        span[i].x = base;
        if (i == P.n - 1) *(uint32_t *)&R->listed = at;
    }
}

/* One thread per (configuration, check): may its pair collide? Entries past the
 * run's up to `fill` are cleared (a graph's scan covers the most entries). */
__global__ void cull_kernel(const drun *R, const double (*centre)[4], uint32_t fill, uint32_t *flag)
{
    uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    const drun P = *R;
    if (e >= P.entries) {
        if (e < fill) flag[e] = 0;
        return;
    }
    uint32_t i = e / P.K, k = e - i * P.K;
    flag[e] = kept(P, P.progs[P.prog_of[i]], centre, i, k);
}

/* One thread per kept (configuration, check) whose task index fits the room:
 * the task (as resident.cu's prepare_tasks_kernel makes it), its root pair in
 * the frontier, its cleared result and its place in the map. The last entry's
 * thread writes the frontier size and the total. */
__global__ void emit_kernel(const drun *R, const tdm_xform *pose, const uint32_t *flag, const uint32_t *off,
                            dtask *tasks, dres *res, fpair *front, uint2 *map, uint32_t *cnt, uint32_t *total)
{
    uint32_t e = blockIdx.x * blockDim.x + threadIdx.x;
    const drun P = *R;
    uint32_t room = P.room;
    if (e >= P.entries) return;
    uint32_t t = off[e];
    if (e == P.entries - 1) {
        uint32_t all = t + flag[e];
        *total = all;
        if (!P.one_launch) cnt[0] = all < room ? all : room; /* a block run's frontier is what it hands over */
    }
    if (!flag[e] || t >= room) return;
    uint32_t i = e / P.K, k = e - i * P.K;
    emit_one(P, P.progs[P.prog_of[i]], pose, i, k, t, tasks, res, front, map);
}

/* The fold's rule for one task of configuration i (program p; check k; its result's
 * colliding, count and truncated): a colliding check below *first becomes it, and every
 * colliding one adds its counted contacts; a free one below *first whose pair has a solid
 * becomes it when one of the two holds the other (fold_kernel, fused_kernel). */
__device__ static __forceinline__ void fold_task(const drun &P, const dprog &p, const tdm_xform *pose, uint32_t i,
                                                 uint32_t k, uint32_t colliding, uint32_t count, uint32_t truncated,
                                                 uint32_t cap, uint32_t *first, uint64_t *sum, uint32_t *trunc)
{
    if (colliding) {
        if (k < *first) *first = k;
        *sum += tdm_contacts_counted(count, cap);
        if (truncated) *trunc = 1;
        return;
    }
    if (!p.solids || k >= *first) return;
    const tdm_gpu_check *c = &p.checks[k];
    if (!c->solid) return;
    const tdm_xform *xa = pose_of(p, P.M, pose, i, c->a), *xb = pose_of(p, P.M, pose, i, c->b);
    if (((c->solid & TDM_SOLID_A_IN_B) && tdm_solid_holds(&p.solids[c->ob], xb, &p.solids[c->oa], p.reps, xa)) ||
        ((c->solid & TDM_SOLID_B_IN_A) && tdm_solid_holds(&p.solids[c->oa], xa, &p.solids[c->ob], p.reps, xb)))
        *first = k;
}

/* A configuration's answer from its folded tasks: the first colliding check (or free), and
 * in contacts mode the contacts summed over its checks, capped. */
__device__ static __forceinline__ tdm_gpu_config_answer answer_of(uint32_t first, uint64_t sum, uint32_t trunc,
                                                                  uint32_t mode, uint32_t cap)
{
    tdm_gpu_config_answer a = {first, 0, 0, 1};
    if (mode == TDM_MODE_BOOL) return a;
    a.contacts = sum > cap ? cap : (uint32_t)sum;
    a.truncated = sum > cap ? 1 : trunc;
    return a;
}

/* A warp per configuration (its tasks are few: ~12 for a Panda in a box world),
 * folded as the host's scheduler folds them (workpile/sched.c): the first check in
 * check order that collides or, free with a solid partner, holds one inside the
 * other; contacts summed over the colliding checks and capped. The lanes take the
 * tasks in turn and the warp takes the least check, so the answer is the host's
 * serial one (one thread a configuration, ~120 registers, took ~17 us for one and
 * ~210 us for 256 configurations). A configuration whose tasks passed the room is
 * not done. Thread 0 also writes the run's tail (answers[n]: the hand-over's size,
 * the overflow flag, the tasks listed), so that one copy brings everything back (a
 * graph run's answers are written straight into the pinned host buffer: no copy). */
__global__ void __launch_bounds__(BLOCK) fold_kernel(const drun *R, const tdm_xform *pose, const uint32_t *off,
                                                     const uint2 *span, const uint32_t *total, const dres *res,
                                                     const uint2 *map, const uint32_t *cnt, tdm_gpu_config_answer *ans)
{
    const drun P = *R;
    uint32_t n = P.n, room = P.room, mode = P.mode, cap = P.cap;
    uint32_t i = blockIdx.x * (BLOCK / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (blockIdx.x == 0 && threadIdx.x == 0) ans[n] = tdm_gpu_config_answer{cnt[0], cnt[2 * MAX_ITERS], *total, 0};
    if (i >= n) return;
    const dprog &p = P.progs[P.prog_of[i]];
    uint32_t t0, t1; /* its tasks: where the scan (off) or list_emit_kernel (span) put them */
    if (span) {
        uint2 sp = span[i];
        t0 = sp.x;
        t1 = sp.x + sp.y;
    } else {
        t0 = off[(size_t)i * P.K];
        t1 = i + 1 < n ? off[(size_t)(i + 1) * P.K] : *total;
    }
    if (t1 > room) {
        if (lane == 0) ans[i] = tdm_gpu_config_answer{UINT32_MAX, 0, 0, 0};
        return;
    }
    uint32_t first = UINT32_MAX, trunc = 0;
    uint64_t sum = 0;
    for (uint32_t t = t0 + lane; t < t1; t += 32) {
        const dres *r = &res[t];
        fold_task(P, p, pose, i, map[t].y, r->colliding, r->count, r->truncated, cap, &first, &sum, &trunc);
    }
    first = __reduce_min_sync(0xffffffffu, first);
    for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d);
    trunc = __any_sync(0xffffffffu, trunc);
    if (lane == 0) ans[i] = answer_of(first, sum, trunc, mode, cap);
}

/* Records a leaf pair's n_hits intersecting triangle pairs (the first: A's slot a, B's slot
 * b) in the task's result r by tri_exact_kernel's rule; returns 1 when the task is done. */
__device__ static __forceinline__ int fused_hits(const dtask *task, dres *r, uint32_t a, uint32_t b, uint32_t n_hits,
                                                 uint32_t mode, uint32_t cap)
{
    if (!*(volatile uint32_t *)&r->colliding && atomicCAS(&r->colliding, 0u, 1u) == 0u) {
        r->first_a = task->aid[a];
        r->first_b = task->bid[b];
    }
    if (mode == TDM_MODE_BOOL) {
        r->done = 1;
        return 1;
    }
    uint32_t before = atomicAdd(&r->count, n_hits);
    if (tdm_contacts_past_cap(before, n_hits, cap)) {
        r->truncated = 1;
        r->done = 1;
        return 1;
    }
    return 0;
}

/* n16 16-byte pieces of global memory that the calling kernel wrote (through L2: not
 * __ldg's read-only path). */
__device__ static __forceinline__ void load16_cg(void *dst, const void *src, int n16)
{
    const float4 *s = reinterpret_cast<const float4 *>(src);
    float4 *d = reinterpret_cast<float4 *>(dst);
    for (int k = 0; k < n16; k++) d[k] = __ldcg(s + k);
}

/* Puts frontier pair c at position o of its level: in shared memory (the first in_shared), in
 * the block's global buffer (up to room), or handed over to the levels (R->handed, their
 * first frontier; R->overflow past cap_pairs). */
__device__ static __forceinline__ void fused_place(const fpair &c, uint32_t o, uint32_t in_shared, uint32_t room,
                                                   fpair *s_buf, fpair *g_buf, const drun *R, fpair *front,
                                                   uint32_t cap_pairs)
{
    if (o < in_shared) {
        s_buf[o] = c;
    } else if (o < room) {
        g_buf[o] = c;
    } else {
        uint32_t g = atomicAdd((uint32_t *)&R->handed, 1u);
        if (g < cap_pairs) front[g] = c;
        else atomicOr((uint32_t *)&R->overflow, 1u);
    }
}

/* Configuration i of the run from its kinematics to its answer, by the calling block (all its
 * FUSED_THREADS threads): fused_kernel's work for one block, as described there. Its tasks
 * are listed from R->listed (an atomic), its hand-overs counted in R->handed and
 * R->overflow; `scratch` holds the block's two global frontier buffers of `room` pairs. The
 * answer is returned to every thread, once the block's writes (its hand-overs too) are
 * fenced. */
__device__ static tdm_gpu_config_answer fused_config(const drun &P, const drun *R, uint32_t i, tdm_xform *links,
                                                     tdm_xform *pose, double (*centre)[4], uint2 *span, dtask *tasks,
                                                     dres *res, uint2 *map, fpair *scratch, uint32_t room,
                                                     fpair *front, uint32_t cap_pairs, uint32_t in_shared,
                                                     uint32_t hot)
{
    __shared__ uint32_t s_keep[FUSED_CHECKS / 32], s_before[FUSED_CHECKS / 32];
    __shared__ uint16_t s_chk[FUSED_CHECKS];
    __shared__ uint8_t s_done[FUSED_CHECKS];
    __shared__ dhot s_hot[FUSED_HOT];
    __shared__ fpair s_pairs[2 * FUSED_SHARED];
    __shared__ uint32_t s_base, s_n, s_next[3], s_first, s_fold, s_trunc;
    __shared__ unsigned long long s_sum;
    const uint32_t tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    in_shared = min(in_shared, room); /* a pair past the room is handed over, wherever it would go */
    const dprog &p = P.progs[P.prog_of[i]];
    const uint32_t K = p.n_checks, mode = P.mode, cap = P.cap;
    if (warp == 0) fk_warp(P, p, i, lane, links, pose, centre);
    if (tid == 0) {
        s_first = s_fold = UINT32_MAX;
        s_trunc = 0;
        s_sum = 0;
        s_next[0] = 0;
    }
    __syncthreads(); /* the poses and centres */
    for (uint32_t k0 = 0; k0 < K; k0 += FUSED_THREADS) {
        uint32_t m = __ballot_sync(0xffffffffu, kept(P, p, centre, i, k0 + tid));
        if (lane == 0 && k0 + tid < K) s_keep[(k0 + tid) / 32] = m;
    }
    __syncthreads();
    if (warp == 0) { /* the kept checks before each word, and the block's range of tasks */
        uint32_t words = (K + 31) / 32, at = 0;
        for (uint32_t w0 = 0; w0 < words; w0 += 32) {
            uint32_t w = w0 + lane, c = w < words ? __popc(s_keep[w]) : 0, incl = c;
            for (int d = 1; d < 32; d *= 2) {
                uint32_t v = __shfl_up_sync(0xffffffffu, incl, d);
                if (lane >= (uint32_t)d) incl += v;
            }
            if (w < words) s_before[w] = at + incl - c;
            at += __shfl_sync(0xffffffffu, incl, 31);
        }
        if (lane == 0) {
            s_n = at;
            s_base = atomicAdd((uint32_t *)&R->listed, at);
            span[i] = make_uint2(s_base, at);
        }
    }
    __syncthreads();
    const uint32_t base = s_base, n_tasks = s_n;
    fpair *cur = scratch, *next = cur + room;
    fpair *s_cur = s_pairs, *s_nxt = s_pairs + FUSED_SHARED;
    for (uint32_t k = tid; k < K; k += FUSED_THREADS) { /* the tasks, and their roots as the first level */
        uint32_t word = s_keep[k / 32], bit = 1u << (k % 32);
        if (!(word & bit)) continue;
        uint32_t j = s_before[k / 32] + __popc(word & (bit - 1u)), t = base + j;
        const tdm_gpu_check *c = &p.checks[k];
        const tdm_xform *xb = pose_of(p, P.M, pose, i, c->b);
        tdm_xform x = c->a_at_origin ? *xb : tdm_xform_rel(pose_of(p, P.M, pose, i, c->a), xb);
        dtask d = tdm__dtask_of(x, p.pairs[k], mode, cap);
        tasks[t] = d;
        res[t] = dres{0, 0, 0, 0, 0, 0};
        map[t] = make_uint2(i, k);
        s_chk[j] = (uint16_t)k;
        s_done[j] = 0;
        if (j < hot) s_hot[j] = d.h;
        fused_place(fpair{t, 0, 0}, j, in_shared, room, s_cur, cur, R, front, cap_pairs);
    }
    __syncthreads();
    /* the levels, one barrier each: level v counts its children in s_next[v % 3], and thread 0
       clears the counter of level v + 1 as level v starts (every thread read it, as level v - 2's
       count, before the barrier that ended level v - 1) */
    uint32_t n_cur = min(n_tasks, room);
    for (uint32_t v = 0; n_cur > 0; v++) {
        if (tid == 0) s_next[(v + 1) % 3] = 0;
        uint32_t *count = &s_next[v % 3];
        for (uint32_t e = tid; e < n_cur; e += FUSED_THREADS) {
            fpair q = e < in_shared ? s_cur[e] : cur[e];
            uint32_t j = q.task - base;
            if (((volatile uint8_t *)s_done)[j]) continue;
            if (mode == TDM_MODE_BOOL && s_chk[j] > *(volatile uint32_t *)&s_first) continue;
            dhot h;
            if (j < hot) h = s_hot[j];
            else load16_cg(&h, &tasks[q.task].h, sizeof h / 16);
            tdm_bvh_node na, nb;
            tdm_load16(&na, &h.an[q.a], 4);
            tdm_load16(&nb, &h.bn[q.b], 4);
            tdm_wbox w;
            tdm_wbox_of(&h.fx, &nb, &w);
            if (!tdm_obb_overlap_w(&na, &w, nb.extent, h.tol)) continue;
            uint32_t ca[2] = {0, 0}, cb[2] = {0, 0};
            int nca = 0, ncb = 0;
            if (blocked_children(&na, q.a, &nb, q.b, ca, &nca, cb, &ncb)) {
                uint32_t o = atomicAdd(count, (uint32_t)(nca * ncb));
                for (int x = 0; x < nca; x++)
                    for (int y = 0; y < ncb; y++, o++)
                        fused_place(fpair{q.task, ca[x], cb[y]}, o, in_shared, room, s_nxt, next, R, front,
                                    cap_pairs);
                continue;
            }
            /* a leaf pair: the levels' filter and exact test on its triangle pairs */
            dtask t;
            load16_cg(&t, &tasks[q.task], sizeof t / 16);
            const float *at = t.at;
            uint32_t fa = tdm_leaf_first(&na), fb = tdm_leaf_first(&nb), cta = tdm_leaf_count(&na);
            tdm_dvec3 tb[2][3], ta[3];
            uint32_t ctb = tdm_leaf_load_moved(&nb, t.bt, &t.x, tb);
            uint32_t hits = 0, ha = 0, hb = 0;
            for (uint32_t x = 0; x < cta; x++) {
                tdm_tri_load(&at[9 * (size_t)(fa + x)], ta);
                for (uint32_t y = 0; y < ctb; y++)
                    if (!tdm_tri_planes_separate(ta, tb[y]) && tdm_tri_tri_intersect(ta, tb[y])) {
                        if (!hits) ha = fa + x, hb = fb + y;
                        hits++;
                    }
            }
            if (hits && fused_hits(&t, &res[q.task], ha, hb, hits, mode, cap)) {
                /* read by the other threads (volatile) during this level to skip the task's pairs: a
                   hint that moves one way, both sides volatile so that the race is defined */
                ((volatile uint8_t *)s_done)[j] = 1;
                if (mode == TDM_MODE_BOOL) atomicMin(&s_first, s_chk[j]);
            }
        }
        __syncthreads(); /* the level is done: its children counted and placed */
        n_cur = min(*count, room);
        fpair *tmp = cur;
        cur = next;
        next = tmp;
        tmp = s_cur;
        s_cur = s_nxt;
        s_nxt = tmp;
    }
    /* the fold (fold_kernel's rule) over the block's tasks */
    uint32_t first = UINT32_MAX, trunc = 0;
    uint64_t sum = 0;
    for (uint32_t j = tid; j < n_tasks; j += FUSED_THREADS) {
        const volatile dres *r = &res[base + j]; /* written by this block's atomics */
        fold_task(P, p, pose, i, s_chk[j], r->colliding, r->count, r->truncated, cap, &first, &sum, &trunc);
    }
    first = __reduce_min_sync(0xffffffffu, first);
    trunc = __any_sync(0xffffffffu, trunc);
    for (int d = 16; d > 0; d /= 2) sum += __shfl_down_sync(0xffffffffu, sum, d);
    if (lane == 0) {
        atomicMin(&s_fold, first);
        if (sum) atomicAdd(&s_sum, (unsigned long long)sum);
        if (trunc) *(volatile uint32_t *)&s_trunc = 1; /* the same value from any warp */
    }
    __threadfence(); /* this block's hand-overs before whatever the caller counts next */
    __syncthreads();
    return answer_of(s_fold, s_sum, s_trunc, mode, cap);
}

/* Fused runs: a planner's few configurations in one launch, one block per configuration
 * from its kinematics to its answer, where a graph run is six launches with global lists
 * between them (each launch waiting for the last to drain: ~0.055-0.079 ms of device time
 * for a few configurations, bench/results/ompl_resident.md, section 19). The block's warp 0
 * makes the kinematics (fk_warp); all its threads cull the checks and list the kept ones'
 * tasks in check order (the span, map, tasks and results a graph run lists, so that the
 * levels and fold_kernel can take over), walk their BVTTs level by level with the first
 * FUSED_SHARED pairs of each frontier and the first FUSED_HOT tasks' hot data in shared
 * memory (as the lean block run), test leaf pairs where they meet them (the filter and
 * exact test of the levels' two passes), and fold (fold_kernel's rule). In bool mode a
 * task stops at its first intersecting pair, and pairs of a task whose check comes after
 * a colliding one are skipped: the answer is the first colliding check. Pairs past the
 * block's room are handed over to the levels (s->front[0]), as a block run hands them
 * over; the last block to finish writes the level path's counters and the run's tail
 * (answers[n]: pairs handed over, their overflow, tasks listed). A run that handed pairs
 * over is folded again after the levels (tdm__gpu_configs_finish), so its answers are
 * those of a graph run whatever the room. */
__global__ void __launch_bounds__(FUSED_THREADS) fused_kernel(const drun *R, tdm_xform *links, tdm_xform *pose,
                                                              double (*centre)[4], uint2 *span, dtask *tasks,
                                                              dres *res, uint2 *map, fpair *scratch, uint32_t room,
                                                              fpair *front, uint32_t cap_pairs, uint32_t *cnt,
                                                              tdm_gpu_config_answer *ans, uint32_t in_shared,
                                                              uint32_t hot)
{
    __shared__ uint32_t s_last;
    const drun P = *R;
    const uint32_t i = blockIdx.x, tid = threadIdx.x;
    if (i >= P.n) return;
    tdm_gpu_config_answer a = fused_config(P, R, i, links, pose, centre, span, tasks, res, map,
                                           scratch + (size_t)i * 2 * room, room, front, cap_pairs, in_shared, hot);
    if (tid == 0) {
        ans[i] = a;
        s_last = atomicAdd((uint32_t *)&R->blocks_done, 1u) == P.n - 1;
    }
    __syncthreads();
    if (!s_last) return;
    /* the last block: the level path's counters (its first frontier: the pairs handed over)
       and the run's tail */
    __threadfence();
    uint32_t handed = *(volatile uint32_t *)&R->handed, over = *(volatile uint32_t *)&R->overflow;
    for (uint32_t c = tid; c < CNT_N; c += FUSED_THREADS)
        cnt[c] = c == 0 ? handed : c == 2 * MAX_ITERS ? over : 0;
    if (tid == 0) ans[P.n] = tdm_gpu_config_answer{handed, over, *(volatile uint32_t *)&R->listed, 0};
}

/* ---- scratch ------------------------------------------------------------------- */

/* Grows b to at least `need` bytes (contents not kept): device memory counted
 * against g's budget, or pinned host memory. */
static int grow(tdm_gpu *g, cfg_slot *c, dbuf *b, size_t need, int pinned)
{
    if (need <= b->cap) return TDM_OK;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) cap *= 2;
    if (!pinned) {
        if (tdm__gpu_budget_add(g->bud, BUD_SCRATCH, (int64_t)cap - (int64_t)b->cap) != TDM_OK) return TDM_EGPUMEM;
        c->device_bytes += cap - b->cap;
        cudaFree(b->p);
    } else {
        cudaFreeHost(b->p);
    }
    b->p = NULL;
    b->cap = 0;
    cudaError_t e = pinned ? cudaMallocHost(&b->p, cap) : cudaMalloc(&b->p, cap);
    if (e != cudaSuccess) {
        b->p = NULL;
        if (!pinned) {
            tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)cap);
            c->device_bytes -= cap;
        }
        return tdm_cuda_err(e, &g->dead);
    }
    b->cap = cap;
    return TDM_OK;
}

static void drop(dbuf *b, int pinned)
{
    if (pinned) cudaFreeHost(b->p);
    else cudaFree(b->p);
    b->p = NULL;
    b->cap = 0;
}

void tdm__gpu_configs_free(tdm_gpu *g, slot *s)
{
    cfg_slot *c = s->cfg;
    if (!c) return;
    dbuf *dev[] = {&c->prog, &c->q, &c->links, &c->pose, &c->centre, &c->flag, &c->off, &c->map, &c->span, &c->temp,
                   &c->ans, &c->blocks};
    for (dbuf *b : dev) drop(b, 0);
    drop(&c->h_prog, 1);
    drop(&c->h_q, 1);
    drop(&c->h_ans, 1);
    cudaFree(c->d_total);
    for (cudaGraphExec_t x : c->graph)
        if (x) cudaGraphExecDestroy(x);
    tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)c->device_bytes);
    free(c);
    s->cfg = NULL;
}

static int cfg_of(tdm_gpu *g, slot *s, cfg_slot **out)
{
    if (!s->cfg) {
        cfg_slot *c = (cfg_slot *)calloc(1, sizeof *c);
        if (!c) return TDM_ENOMEM;
        if (cudaMalloc(&c->d_total, sizeof(uint32_t)) != cudaSuccess) {
            cudaError_t e = cudaGetLastError();
            cudaFree(c->d_total);
            free(c);
            return tdm_cuda_err(e, &g->dead);
        }
        s->cfg = c;
    }
    *out = s->cfg;
    return TDM_OK;
}

/* ---- TDM_GPU_PROFILE (measurements only) --------------------------------------------- */

static int prof_of(slot *s, slot_prof **out)
{
    if (!s->prof) {
        slot_prof *p = (slot_prof *)calloc(1, sizeof *p);
        if (!p) return TDM_ENOMEM;
        s->prof = p; /* freed with the slot (tdm_gpu_destroy), whatever was made */
        for (cudaEvent_t &e : p->ev) cudaEventCreate(&e);
        cudaMalloc(&p->d_stat, BLOCK_RUN_MAX * 8 * sizeof(uint32_t));
        cudaMallocHost(&p->h_stat, BLOCK_RUN_MAX * 8 * sizeof(uint32_t));
        if (cudaGetLastError() != cudaSuccess) return TDM_EGPU;
    }
    *out = s->prof;
    return TDM_OK;
}

/* One line per block run: configurations, programs, entries, tasks, blocks; device us of the
 * set-up (copies, kinematics, culling, scan, listing), the block run with its leaf passes, the
 * fold and copies; host us from the start to the answers; then over the blocks: max and mean
 * cycles, max and sum of box tests and leaf pairs, max levels, max widest level, and the cycles
 * of the block with the most box tests. */
static void prof_write(tdm_gpu *g, slot *s, uint32_t tasks)
{
    slot_prof *p = s->prof;
    float t01 = 0, t12 = 0, t23 = 0;
    cudaEventElapsedTime(&t01, p->ev[0], p->ev[1]);
    cudaEventElapsedTime(&t12, p->ev[1], p->ev[2]);
    cudaEventElapsedTime(&t23, p->ev[2], p->ev[3]);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double host_us = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - p->t0_ns) / 1e3;
    uint64_t sum[8] = {0}, mx[8] = {0}, heavy_cyc = 0;
    for (uint32_t b = 0; b < p->blocks; b++) {
        const uint32_t *o = p->h_stat + b * 8;
        for (int i = 0; i < 8; i++) {
            sum[i] += o[i];
            if (o[i] > mx[i]) {
                mx[i] = o[i];
                if (i == 2) heavy_cyc = o[0];
            }
        }
    }
    char line[512];
    int len = snprintf(line, sizeof line,
                       "n=%zu progs=%u entries=%zu tasks=%u blocks=%u setup_us=%.1f block_us=%.1f fold_us=%.1f "
                       "host_us=%.1f cyc_max=%llu cyc_mean=%llu box_max=%llu box_sum=%llu leaf_max=%llu "
                       "leaf_sum=%llu levels_max=%llu wide_max=%llu heavy_cyc=%llu\n",
                       p->n, p->progs, p->entries, tasks, p->blocks, t01 * 1e3, t12 * 1e3, t23 * 1e3, host_us,
                       (unsigned long long)mx[0], (unsigned long long)(p->blocks ? sum[0] / p->blocks : 0),
                       (unsigned long long)mx[2], (unsigned long long)sum[2], (unsigned long long)mx[3],
                       (unsigned long long)sum[3], (unsigned long long)mx[4], (unsigned long long)mx[5],
                       (unsigned long long)heavy_cyc);
    if (len > 0 && write(g->prof_fd, line, (size_t)len) < 0) { /* measurements only: nothing to do */
    }
    p->n = 0;
}

/* ---- the API (gpu.h) --------------------------------------------------------------- */

extern "C" size_t tdm_gpu_configs_max(const tdm_gpu *g, uint32_t n_q, uint32_t n_checks)
{
    (void)g;
    (void)n_q;
    size_t n = n_checks ? MAX_ENTRIES / n_checks : MAX_CONFIGS;
    if (n > MAX_CONFIGS) n = MAX_CONFIGS;
    return n ? n : 1;
}

extern "C" int tdm_gpu_slot_configs(tdm_gpu *g, int k, size_t n, uint32_t n_q, double **configs)
{
    cfg_slot *c;
    int rc = cfg_of(g, &g->slots[k], &c);
    if (rc != TDM_OK) return rc;
    /* room for the largest run (see tdm_gpu_slot_start_configs) */
    size_t bytes = (n ? n : 1) * (n_q ? n_q : 1) * sizeof(double), big = MAX_CONFIGS * (size_t)(n_q ? n_q : 1) * sizeof(double);
    if (bytes < big) bytes = big;
    if ((rc = grow(g, c, &c->h_q, bytes, 1)) != TDM_OK || (rc = grow(g, c, &c->q, bytes, 0)) != TDM_OK) return rc;
    *configs = (double *)c->h_q.p;
    return TDM_OK;
}

/* The program's arrays, laid out in one buffer (16-byte aligned pieces). */
typedef struct prog_layout {
    size_t joints, elems, fixed_pose, fixed_centre, slot_centre, checks, pairs, solids, reps, end;
} prog_layout;

static size_t up16(size_t x) { return (x + 15) & ~(size_t)15; }

static prog_layout layout_of(const tdm_gpu_robot *r)
{
    prog_layout l;
    size_t at = 0;
    const tdm_kin *k = r->kin;
    l.joints = at, at = up16(at + (k->n_links - 1) * sizeof(tdm_kin_joint));
    l.elems = at, at = up16(at + k->n_elems * sizeof(tdm_kin_elem));
    l.fixed_pose = at, at = up16(at + r->n_fixed * sizeof(tdm_xform));
    l.fixed_centre = at, at = up16(at + r->n_fixed * 4 * sizeof(double));
    l.slot_centre = at, at = up16(at + k->n_elems * 3 * sizeof(double));
    l.checks = at, at = up16(at + r->n_checks * sizeof(tdm_gpu_check));
    l.pairs = at, at = up16(at + r->n_checks * sizeof(tdm_gpu_pair));
    l.solids = at, at = up16(at + (r->solids ? r->n_objects * sizeof(tdm_solid_obj) : 0));
    l.reps = at, at = up16(at + (r->solids ? r->n_reps * sizeof(tdm_dvec3) : 0));
    l.end = at ? at : 16;
    return l;
}

static void put(unsigned char *base, size_t at, const void *src, size_t bytes)
{
    if (bytes) memcpy(base + at, src, bytes);
}

/* R's arrays packed at hb (host) by layout_of(R), and its dprog pointing at the same
 * layout at db (device), where the caller copies them. */
static dprog pack_program(const tdm_gpu_robot *R, unsigned char *hb, unsigned char *db)
{
    const tdm_kin *kin = R->kin;
    uint32_t KR = R->n_checks, MR = kin->n_elems;
    prog_layout l = layout_of(R);
    put(hb, l.joints, kin->joints, (kin->n_links - 1) * sizeof(tdm_kin_joint));
    put(hb, l.elems, kin->elems, MR * sizeof(tdm_kin_elem));
    put(hb, l.fixed_pose, R->fixed_pose, R->n_fixed * sizeof(tdm_xform));
    put(hb, l.fixed_centre, R->fixed_centre, R->n_fixed * 4 * sizeof(double));
    put(hb, l.slot_centre, R->slot_centre, MR * 3 * sizeof(double));
    put(hb, l.checks, R->checks, KR * sizeof(tdm_gpu_check));
    put(hb, l.pairs, R->pairs, KR * sizeof(tdm_gpu_pair));
    if (R->solids) {
        put(hb, l.solids, R->solids, R->n_objects * sizeof(tdm_solid_obj));
        put(hb, l.reps, R->reps, R->n_reps * sizeof(tdm_dvec3));
    }
    dprog p;
    p.kin = *kin;
    p.kin.joints = (const tdm_kin_joint *)(db + l.joints);
    p.kin.elems = (const tdm_kin_elem *)(db + l.elems);
    p.n_movable = MR;
    p.n_checks = KR;
    p.fixed_pose = (const tdm_xform *)(db + l.fixed_pose);
    p.fixed_centre = (const double (*)[4])(db + l.fixed_centre);
    p.slot_centre = (const double (*)[3])(db + l.slot_centre);
    p.checks = (const tdm_gpu_check *)(db + l.checks);
    p.pairs = (const tdm_gpu_pair *)(db + l.pairs);
    p.solids = R->solids ? (const tdm_solid_obj *)(db + l.solids) : NULL;
    p.reps = R->solids ? (const tdm_dvec3 *)(db + l.reps) : NULL;
    return p;
}

/* ---- resident programs (gpu.h) -------------------------------------------------------
 *
 * One device arena per lane, allocated at the first keyed robot (program_cache_bytes,
 * counted against the budget), holding programs at 16-byte aligned offsets; entries in
 * offset order, placed first fit in the gaps. When a program does not fit, the least
 * recently used entries (never one this call uses) are dropped a few at a time, then,
 * if it still does not fit, every entry this call does not use: a placement costs a few
 * passes over the entries at most, however many tiny programs a client made. Lookups go
 * through a hash of the keys. New programs are packed into a pinned staging buffer and
 * copied on slot 0's stream; every slot waits for that copy (an event) before its run. */

typedef struct prog_cache prog_cache;

typedef struct prog_entry {
    uint64_t key, epoch, used; /* used: the call that last named it */
    size_t at, bytes;          /* in the arena */
    dprog dp;                  /* pointing into the arena */
    tdm_kin kin;               /* what it was made for, compared whole on lookup: */
    void *kin_copy;            /* ... its joints then its elements (host) */
    struct prog_entry *hnext;  /* its hash bucket's chain */
} prog_entry;

struct prog_cache {
    unsigned char *arena;  /* device, `cap` bytes */
    size_t cap;
    prog_entry **e;        /* by offset */
    uint32_t n, room;
    prog_entry **bucket;   /* by key: n_bucket chains (a power of two, at least n) */
    uint32_t n_bucket;
    uint64_t call;         /* tdm_gpu_configs_programs calls */
    dbuf stage;            /* pinned: the programs uploaded by the last call */
    cudaEvent_t ready;     /* ... their copy done */
    int pending;           /* this call uploaded: slots wait for `ready` */
    int staged;            /* the last call that uploaded: `stage` is free once `ready` is */
};

/* The bytes of a kinematics' joints, then of its elements (an entry's kin_copy). */
static size_t joint_bytes(const tdm_kin *k) { return (k->n_links ? k->n_links - 1 : 0) * sizeof(tdm_kin_joint); }
static size_t elem_bytes(const tdm_kin *k) { return k->n_elems * sizeof(tdm_kin_elem); }

static int same_kin(const prog_entry *x, const tdm_kin *k)
{
    if (x->kin.n_links != k->n_links || x->kin.n_elems != k->n_elems || x->kin.n_q != k->n_q ||
        memcmp(&x->kin.base, &k->base, sizeof k->base) != 0)
        return 0;
    const unsigned char *c = (const unsigned char *)x->kin_copy;
    return memcmp(c, k->joints, joint_bytes(k)) == 0 && memcmp(c + joint_bytes(k), k->elems, elem_bytes(k)) == 0;
}

static prog_entry **bucket_of(prog_cache *pc, uint64_t key)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    return &pc->bucket[(h >> 32) & (pc->n_bucket - 1)];
}

/* The entry of `key`, valid or not (keys are unique in the cache). */
static prog_entry *prog_key(prog_cache *pc, uint64_t key)
{
    if (!pc->n_bucket) return NULL;
    for (prog_entry *x = *bucket_of(pc, key); x; x = x->hnext)
        if (x->key == key) return x;
    return NULL;
}

static prog_entry *prog_find(prog_cache *pc, uint64_t key, uint64_t epoch, const tdm_kin *kin)
{
    prog_entry *x = prog_key(pc, key);
    return x && x->epoch == epoch && same_kin(x, kin) ? x : NULL;
}

/* Room for one more entry: the offset array and the hash (rehashed at twice the entries). */
static int prog_room(prog_cache *pc)
{
    if (pc->n == pc->room) {
        uint32_t room = pc->room ? 2 * pc->room : 64;
        prog_entry **e = (prog_entry **)realloc(pc->e, room * sizeof *e);
        if (!e) return TDM_ENOMEM;
        pc->e = e;
        pc->room = room;
    }
    if (pc->n + 1 > pc->n_bucket) {
        uint32_t nb = pc->n_bucket ? 2 * pc->n_bucket : 64;
        prog_entry **b = (prog_entry **)calloc(nb, sizeof *b);
        if (!b) return TDM_ENOMEM;
        prog_entry **old = pc->bucket;
        uint32_t n_old = pc->n_bucket;
        pc->bucket = b;
        pc->n_bucket = nb;
        for (uint32_t i = 0; i < n_old; i++)
            for (prog_entry *x = old[i], *next; x; x = next) {
                next = x->hnext;
                prog_entry **h = bucket_of(pc, x->key);
                x->hnext = *h;
                *h = x;
            }
        free(old);
    }
    return TDM_OK;
}

static void prog_drop(tdm_gpu *g, prog_cache *pc, uint32_t i)
{
    prog_entry *x = pc->e[i];
    for (prog_entry **h = bucket_of(pc, x->key); *h; h = &(*h)->hnext)
        if (*h == x) {
            *h = x->hnext;
            break;
        }
    g->stats.program_bytes -= x->bytes;
    free(x->kin_copy);
    free(x);
    memmove(&pc->e[i], &pc->e[i + 1], (pc->n - i - 1) * sizeof *pc->e);
    pc->n--;
}

/* How many least recently used entries a placement drops one by one before it drops
 * every entry the call does not use. */
#define PLACE_LRU_TRIES 8

/* An offset for `bytes` in the arena, first fit, dropping entries not named by this
 * call (the least recently used first); SIZE_MAX when even that leaves no room. *slot:
 * where the entry goes in offset order. */
static size_t prog_place(tdm_gpu *g, prog_cache *pc, size_t bytes, uint32_t *slot)
{
    if (bytes > pc->cap) return SIZE_MAX;
    for (int tries = 0;; tries++) {
        size_t from = 0;
        for (uint32_t i = 0; i <= pc->n; i++) {
            size_t to = i < pc->n ? pc->e[i]->at : pc->cap;
            if (to - from >= bytes) {
                *slot = i;
                return from;
            }
            if (i < pc->n) from = up16(pc->e[i]->at + pc->e[i]->bytes);
        }
        if (tries == PLACE_LRU_TRIES) { /* every entry this call does not use, in one pass */
            uint32_t kept = pc->n;
            for (uint32_t i = pc->n; i-- > 0;)
                if (pc->e[i]->used != pc->call) prog_drop(g, pc, i);
            if (pc->n == kept) return SIZE_MAX;
            continue;
        }
        if (tries > PLACE_LRU_TRIES) return SIZE_MAX;
        uint32_t old = UINT32_MAX;
        for (uint32_t i = 0; i < pc->n; i++)
            if (pc->e[i]->used != pc->call && (old == UINT32_MAX || pc->e[i]->used < pc->e[old]->used)) old = i;
        if (old == UINT32_MAX) return SIZE_MAX;
        prog_drop(g, pc, old);
    }
}

static int prog_cache_of(tdm_gpu *g, prog_cache **out)
{
    *out = g->progs;
    if (g->progs || g->program_cache_bytes == 0) return TDM_OK;
    prog_cache *pc = (prog_cache *)calloc(1, sizeof *pc);
    if (!pc) return TDM_ENOMEM;
    size_t cap = g->program_cache_bytes;
    if (tdm__gpu_budget_add(g->bud, BUD_SCRATCH, (int64_t)cap) != TDM_OK) {
        free(pc);
        g->program_cache_bytes = 0; /* over the budget: programs go with each run */
        return TDM_OK;
    }
    cudaError_t e = cudaMalloc(&pc->arena, cap);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&pc->ready, cudaEventDisableTiming);
    if (e != cudaSuccess) {
        cudaFree(pc->arena);
        free(pc);
        tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)cap);
        return tdm_cuda_err(e, &g->dead);
    }
    pc->cap = cap;
    g->progs = *out = pc;
    return TDM_OK;
}

void tdm__gpu_programs_free(tdm_gpu *g)
{
    prog_cache *pc = g->progs;
    if (!pc) return;
    while (pc->n) prog_drop(g, pc, pc->n - 1);
    free(pc->e);
    free(pc->bucket);
    cudaFree(pc->arena);
    drop(&pc->stage, 1);
    if (pc->ready) cudaEventDestroy(pc->ready);
    tdm__gpu_budget_add(g->bud, BUD_SCRATCH, -(int64_t)pc->cap);
    free(pc);
    g->progs = NULL;
}

extern "C" int tdm_gpu_program_resident(tdm_gpu *g, uint64_t key, uint64_t epoch, const tdm_kin *kin)
{
    return key && g->progs && prog_find(g->progs, key, epoch, kin) != NULL;
}

extern "C" int tdm_gpu_configs_programs(tdm_gpu *g, tdm_gpu_robot *robots, uint32_t n)
{
    prog_cache *pc = NULL;
    int any = 0;
    for (uint32_t r = 0; r < n; r++) {
        robots[r].program = NULL;
        any |= robots[r].key != 0;
    }
    if (!any) return TDM_OK;
    int rc = prog_cache_of(g, &pc);
    if (rc != TDM_OK) return rc;
    for (uint32_t r = 0; r < n; r++) /* without a cache every robot must come whole */
        if (!pc && !robots[r].checks) return TDM_ECANCELED;
    if (!pc) return TDM_OK;
    pc->call++;
    pc->pending = 0;
    if (pc->staged) { /* the last uploads are done (every slot waited for them), unless it failed */
        TDM_CUDA_TRY(&g->dead, cudaEventSynchronize(pc->ready));
        pc->staged = 0;
    }
    /* first the programs the lane holds, so that no placement below drops them */
    for (uint32_t r = 0; r < n; r++) {
        tdm_gpu_robot *R = &robots[r];
        prog_entry *x = R->key ? prog_find(pc, R->key, R->epoch, R->kin) : NULL;
        if (!x && R->key && !R->checks) return TDM_ECANCELED;
        if (!x) continue;
        x->used = pc->call;
        R->program = &x->dp;
        if (!R->checks) g->stats.programs_reused++;
    }
    /* then the new ones: packed one after the other into the staging, each copied to its place */
    size_t stage = 0;
    for (uint32_t r = 0; r < n; r++)
        if (robots[r].key && !robots[r].program) stage += layout_of(&robots[r]).end;
    if (stage == 0) return TDM_OK;
    if ((rc = grow(g, NULL, &pc->stage, stage, 1)) != TDM_OK) return rc;
    cudaStream_t st = g->slots[0].stream;
    size_t s_at = 0;
    for (uint32_t r = 0; r < n; r++) {
        tdm_gpu_robot *R = &robots[r];
        if (!R->key || R->program) continue;
        /* one of the same key made earlier in this call, or a stale copy to replace (one this
           call uses with other kinematics stays, and this robot goes with each run) */
        prog_entry *x = prog_key(pc, R->key);
        if (x && x->used == pc->call) {
            if (x->epoch == R->epoch && same_kin(x, R->kin)) R->program = &x->dp;
            continue;
        }
        if (x) {
            uint32_t i = 0;
            while (pc->e[i] != x) i++;
            prog_drop(g, pc, i);
        }
        size_t bytes = layout_of(R).end;
        uint32_t slot = 0;
        size_t at = prog_place(g, pc, bytes, &slot);
        if (at == SIZE_MAX) continue; /* no room: it goes with each run */
        if ((rc = prog_room(pc)) != TDM_OK) return rc;
        x = (prog_entry *)calloc(1, sizeof *x);
        size_t jb = joint_bytes(R->kin), eb = elem_bytes(R->kin);
        unsigned char *kc = (unsigned char *)malloc(jb + eb + 1);
        if (!x || !kc) {
            free(x);
            free(kc);
            return TDM_ENOMEM;
        }
        memcpy(kc, R->kin->joints, jb);
        memcpy(kc + jb, R->kin->elems, eb);
        unsigned char *hb = (unsigned char *)pc->stage.p + s_at;
        *x = (prog_entry){R->key, R->epoch, pc->call, at, bytes, pack_program(R, hb, pc->arena + at), *R->kin, kc,
                          NULL};
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(pc->arena + at, hb, bytes, cudaMemcpyHostToDevice, st));
        s_at += bytes;
        memmove(&pc->e[slot + 1], &pc->e[slot], (pc->n - slot) * sizeof *pc->e);
        pc->e[slot] = x;
        pc->n++;
        prog_entry **h = bucket_of(pc, x->key);
        x->hnext = *h;
        *h = x;
        R->program = &x->dp;
        g->stats.programs_uploaded++;
        g->stats.program_bytes += bytes;
        pc->pending = 1;
    }
    if (pc->pending) {
        TDM_CUDA_TRY(&g->dead, cudaEventRecord(pc->ready, st));
        pc->staged = 1;
    }
    return TDM_OK;
}

/* Room the programs' buffers start with, so that runs of a few more scenes than
 * the last seldom grow them (growing the device buffer waits for the device). */
#define PROG_ROOM_MIN (256u << 10)

/* A block run's frontier room per block (TDM_GPU_BLOCK_ROOM in tests, else BLOCK_RUN_ROOM). */
static uint32_t block_room(const tdm_gpu *g)
{
    return g->block_room && g->block_room < BLOCK_RUN_ROOM ? g->block_room : BLOCK_RUN_ROOM;
}

/* The slot's small-run graph, (re)captured when a buffer it names has moved: kinematics,
 * culling and listing (list_count_kernel, list_emit_kernel), the block run with its leaf passes, and the fold into
 * the pinned answers, for graph_configs[size] configurations at most, all reading the run's
 * sizes from its drun on the device; or, for sizes from GRAPH_FUSED on, all of it in fused_kernel. A run of ten launches and copies
 * from the host cost each lane ~10 driver calls, and under load (five lanes launching at
 * once) most of a small run's time went between them (bench/results/ompl_rrt_fast.md). */
static int configs_graph(tdm_gpu *g, slot *s, uint32_t room, int size)
{
    const uint32_t most_configs = graph_configs[size % GRAPH_FUSED];
    cfg_slot *c = s->cfg;
    graph_key k;
    memset(&k, 0, sizeof k);
    k.prog = c->prog.p, k.links = c->links.p, k.pose = c->pose.p, k.centre = c->centre.p, k.map = c->map.p;
    k.span = c->span.p, k.h_ans = c->h_ans.p, k.blocks = c->blocks.p, k.tasks = s->d_tasks, k.res = s->d_res;
    k.front = s->front[0], k.cnt = s->cnt, k.cap_pairs = g->cap_pairs, k.room = room;
    k.block_room = block_room(g);
    if (size >= GRAPH_FUSED && k.block_room > BLOCK_RUN_MAX * BLOCK_RUN_ROOM / most_configs)
        k.block_room = BLOCK_RUN_MAX * BLOCK_RUN_ROOM / most_configs; /* one block per configuration */
    k.fused_shared = g->fused_shared && g->fused_shared < FUSED_SHARED ? g->fused_shared : FUSED_SHARED;
    k.fused_hot = k.fused_shared < FUSED_HOT ? k.fused_shared : FUSED_HOT;
    cudaGraphExec_t *x = &c->graph[size];
    if (*x && !memcmp(&k, &c->graph_key[size], sizeof k)) return TDM_OK;
    if (*x) cudaGraphExecDestroy(*x);
    *x = NULL;
    const drun *R = (const drun *)c->prog.p;
    cudaStream_t st = s->stream;
    cudaGraph_t gr = NULL;
    TDM_CUDA_TRY(&g->dead, cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    const uint32_t *listed = &R->listed; /* the run's tasks listed (list_emit_kernel), in the upload */
    if (size >= GRAPH_FUSED) { /* the whole run, answers and tail into the pinned buffer */
        fused_kernel<<<most_configs, FUSED_THREADS, 0, st>>>(
            R, (tdm_xform *)c->links.p, (tdm_xform *)c->pose.p, (double (*)[4])c->centre.p, (uint2 *)c->span.p,
            s->d_tasks, s->d_res, (uint2 *)c->map.p, (fpair *)c->blocks.p, k.block_room, s->front[0],
            (uint32_t)g->cap_pairs, s->cnt, (tdm_gpu_config_answer *)c->h_ans.p, k.fused_shared, k.fused_hot);
    } else {
        list_count_kernel<<<most_configs / FK_WARPS, 32 * FK_WARPS, 0, st>>>(
            R, (tdm_xform *)c->links.p, (tdm_xform *)c->pose.p, (double (*)[4])c->centre.p, s->cnt,
            (uint2 *)c->span.p, s->d_tasks, s->d_res, s->front[0], (uint2 *)c->map.p);
        list_emit_kernel<<<most_configs / FK_WARPS, 32 * FK_WARPS, 0, st>>>(
            R, (const tdm_xform *)c->pose.p, (const double (*)[4])c->centre.p, s->d_tasks, s->d_res, s->front[0],
            (uint2 *)c->map.p, (uint2 *)c->span.p);
        tdm__gpu_block_configs(g, s, room, listed, c->blocks.p, k.block_room, BLOCK_RUN_MAX);
        /* the answers and the tail into the pinned buffer itself (mapped: unified addressing), read
           by the host once the run's event is done: no copy back */
        fold_kernel<<<most_configs / (BLOCK / 32), BLOCK, 0, st>>>(R, (const tdm_xform *)c->pose.p, NULL,
                                                                    (const uint2 *)c->span.p, listed, s->d_res,
                                                                    (const uint2 *)c->map.p, s->cnt,
                                                                    (tdm_gpu_config_answer *)c->h_ans.p);
    }
    cudaError_t end = cudaStreamEndCapture(st, &gr);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = end;
    if (e == cudaSuccess) e = cudaGraphInstantiate(x, gr, 0);
    if (gr) cudaGraphDestroy(gr);
    if (e != cudaSuccess) {
        *x = NULL;
        return tdm_cuda_err(e, &g->dead);
    }
    c->graph_key[size] = k;
    return TDM_OK;
}

static int start_configs(tdm_gpu *g, int k, const tdm_gpu_robot *robots, const uint32_t *robot_of, size_t n,
                         uint32_t mode, uint32_t cap)
{
    slot *s = &g->slots[k];
    cfg_slot *c = s->cfg;
    if (!c || n == 0 || n > UINT32_MAX) return TDM_EINVAL;
    /* the programs this run uses, robots[lo .. hi], and the strides of the largest */
    uint32_t lo = 0, hi = 0;
    if (robot_of) {
        lo = UINT32_MAX;
        for (size_t i = 0; i < n; i++) {
            if (robot_of[i] < lo) lo = robot_of[i];
            if (robot_of[i] > hi) hi = robot_of[i];
        }
    }
    uint32_t n_prog = hi - lo + 1, n_q = robots[lo].kin->n_q, L = 0, M = 0, K = 0;
    for (uint32_t r = lo; r <= hi; r++) {
        const tdm_kin *kin = robots[r].kin;
        if (robots[r].n_checks == 0 || kin->n_links == 0 || kin->n_q != n_q) return TDM_EINVAL;
        if (kin->n_links > L) L = kin->n_links;
        if (kin->n_elems > M) M = kin->n_elems;
        if (robots[r].n_checks > K) K = robots[r].n_checks;
    }
    if (M == 0) M = 1;
    /* scratch for the largest run of such programs, so that runs of other sizes reuse it:
     * growing it frees and allocates device memory, which waits for the whole device */
    size_t most = tdm_gpu_configs_max(g, n_q, K);
    if (n > most || n * (n_q ? n_q : 1) * sizeof(double) > c->h_q.cap) return TDM_EINVAL;
    size_t entries = n * K, sized = most;
    size_t temp_bytes = 0;
    cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, (const uint32_t *)nullptr, (uint32_t *)nullptr,
                                  (int)(sized * K));
    int rc;
    uint64_t room = s->cap_tasks > MIN_TASK_ROOM ? s->cap_tasks : MIN_TASK_ROOM;
    if ((rc = tdm__gpu_reserve_tasks(g, s, room)) != TDM_OK) return rc;
    room = s->cap_tasks < g->cap_pairs ? s->cap_tasks : g->cap_pairs;
    if (g->config_room && room > g->config_room) room = g->config_room;
    if (room > UINT32_MAX) room = UINT32_MAX;

    /* a run of few (configuration, check) entries, so few tasks, goes in one launch (resident.cu's
     * block runs: level by level inside each block), then its fold, and one look from the host
     * when nothing is handed over to the levels; when it is small enough, as the slot's CUDA
     * graph of the whole run (configs_graph) */
    int block = g->cfg.traversal == TDM_GPU_TRAVERSE_PAIRS && g->block_config_entries &&
                entries <= g->block_config_entries;
    int graph = block && g->config_graphs && n <= GRAPH_CONFIGS && sized >= GRAPH_CONFIGS &&
                g->prof_fd < 0; /* (sized: the answers' buffers hold the graph's read-back) */
    /* a planner's few configurations in one kernel, when every task fits the room (no
       configuration is left for a re-run) and each program's checks fit a block's lists */
    int fused = graph && n <= g->fused_configs && K <= FUSED_CHECKS && entries <= room;
    uint32_t upper = (uint32_t)(entries < room ? entries : room), n_blocks = 0; /* tasks at most */
    if (block) {
        n_blocks = (upper + BLOCK_RUN_TASKS - 1) / BLOCK_RUN_TASKS;
        if (n_blocks > BLOCK_RUN_MAX) n_blocks = BLOCK_RUN_MAX;
    }

    /* the upload: the run (drun) first, the programs' arrays one after the other, their dprogs,
     * each configuration's program, and in a graph run the configurations (one copy) */
    size_t at = up16(sizeof(drun));
    for (uint32_t r = lo; r <= hi; r++)
        if (!robots[r].program) at += layout_of(&robots[r]).end;
    size_t progs_at = at, of_at = up16(progs_at + n_prog * sizeof(dprog)), q_at = up16(of_at + n * sizeof(uint32_t));
    size_t up_bytes = graph ? q_at + n * n_q * sizeof(double) : of_at + n * sizeof(uint32_t);
    size_t prog_bytes = up_bytes > PROG_ROOM_MIN ? up_bytes : PROG_ROOM_MIN;
    if ((rc = grow(g, c, &c->h_prog, prog_bytes, 1)) != TDM_OK || (rc = grow(g, c, &c->prog, prog_bytes, 0)) != TDM_OK ||
        (rc = grow(g, c, &c->links, sized * 2 * L * sizeof(tdm_xform), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->pose, sized * M * sizeof(tdm_xform), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->centre, sized * M * 4 * sizeof(double), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->flag, sized * K * sizeof(uint32_t), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->off, sized * K * sizeof(uint32_t), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->map, room * sizeof(uint2), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->span, sized * sizeof(uint2), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->temp, temp_bytes ? temp_bytes : 16, 0)) != TDM_OK ||
        (rc = grow(g, c, &c->ans, (sized + 1) * sizeof(tdm_gpu_config_answer), 0)) != TDM_OK ||
        (rc = grow(g, c, &c->h_ans, (sized + 1) * sizeof(tdm_gpu_config_answer), 1)) != TDM_OK)
        return rc;
    /* sized once for the most blocks: growing waits for the device */
    if (block && (rc = grow(g, c, &c->blocks, (size_t)BLOCK_RUN_MAX * 2 * BLOCK_RUN_ROOM * sizeof(fpair), 0)) != TDM_OK)
        return rc;

    /* the programs, packed (the staging is free: the slot's last run has finished); a
       resident one is only named */
    unsigned char *h = (unsigned char *)c->h_prog.p, *d = (unsigned char *)c->prog.p;
    dprog *hp = (dprog *)(h + progs_at);
    at = up16(sizeof(drun));
    for (uint32_t r = lo; r <= hi; r++) {
        const tdm_gpu_robot *R = &robots[r];
        if (R->program) {
            memcpy(&hp[r - lo], R->program, sizeof(dprog));
            continue;
        }
        dprog p = pack_program(R, h + at, d + at);
        memcpy(&hp[r - lo], &p, sizeof p);
        at += layout_of(R).end;
    }
    uint32_t *of = (uint32_t *)(h + of_at);
    for (size_t i = 0; i < n; i++) of[i] = robot_of ? robot_of[i] - lo : 0;
    if (graph) memcpy(h + q_at, c->h_q.p, n * n_q * sizeof(double));
    drun P;
    memset(&P, 0, sizeof P);
    P.progs = (const dprog *)(d + progs_at);
    P.prog_of = (const uint32_t *)(d + of_at);
    P.q = graph ? (const double *)(d + q_at) : (const double *)c->q.p;
    P.L = L;
    P.M = M;
    P.K = K;
    P.n_q = n_q;
    P.n = (uint32_t)n;
    P.entries = (uint32_t)entries;
    P.room = (uint32_t)room;
    P.mode = mode;
    P.cap = cap;
    P.one_launch = (uint32_t)block;
    P.lean = (uint32_t)g->config_lean;
    memcpy(h, &P, sizeof P);
    const drun *R = (const drun *)d;

    cudaStream_t st = s->stream;
    c->n = n;
    c->task_room = (uint32_t)room;
    s->n = 0;
    s->it = 0;
    s->finishing = 0;
    s->configs = 1;
    s->small = block;
    g->stats.runs++;
    c->spans = graph;
    if (g->progs && g->progs->pending && k != 0) /* programs this call uploaded on slot 0's stream */
        TDM_CUDA_TRY(&g->dead, cudaStreamWaitEvent(st, g->progs->ready, 0));
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->prog.p, c->h_prog.p, up_bytes, cudaMemcpyHostToDevice, st));
    if (graph) { /* the rest of the run: one launch of the slot's graph, and the ready event */
        int size = (fused ? GRAPH_FUSED : 0) + (n <= graph_configs[0] ? 0 : 1);
        if ((rc = configs_graph(g, s, (uint32_t)room, size)) != TDM_OK) return rc;
        TDM_CUDA_TRY(&g->dead, cudaGraphLaunch(c->graph[size], st));
        TDM_CUDA_TRY(&g->dead, cudaEventRecord(s->ready, st));
        g->stats.small_runs++;
        g->stats.fused_runs += (uint64_t)fused;
        return TDM_OK;
    }

    slot_prof *pf = NULL;
    if (g->prof_fd >= 0 && block && (rc = prof_of(s, &pf)) != TDM_OK) return rc;
    if (pf) {
        pf->blocks = n_blocks;
        pf->progs = n_prog;
        pf->n = n;
        pf->entries = entries;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        pf->t0_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        cudaEventRecord(pf->ev[0], st);
    }
    TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->q.p, c->h_q.p, n * n_q * sizeof(double), cudaMemcpyHostToDevice, st));
    fk_kernel<<<(unsigned)((n + FK_WARPS - 1) / FK_WARPS), 32 * FK_WARPS, 0, st>>>(
        R, (tdm_xform *)c->links.p, (tdm_xform *)c->pose.p, (double (*)[4])c->centre.p, s->cnt);
    cull_kernel<<<tdm__gpu_blocks(entries), BLOCK, 0, st>>>(R, (const double (*)[4])c->centre.p, (uint32_t)entries,
                                                            (uint32_t *)c->flag.p);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    size_t tb = c->temp.cap;
    TDM_CUDA_TRY(&g->dead, cub::DeviceScan::ExclusiveSum(c->temp.p, tb, (const uint32_t *)c->flag.p,
                                                         (uint32_t *)c->off.p, (int)entries, st));
    emit_kernel<<<tdm__gpu_blocks(entries), BLOCK, 0, st>>>(R, (const tdm_xform *)c->pose.p,
                                                            (const uint32_t *)c->flag.p, (const uint32_t *)c->off.p,
                                                            s->d_tasks, s->d_res, s->front[0], (uint2 *)c->map.p,
                                                            s->cnt, c->d_total);
    TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    if (block) {
        /* the answers too, at once: they stand unless the run hands pairs over to the levels,
           whose end folds again (tdm__gpu_configs_finish) */
        if (pf) cudaEventRecord(pf->ev[1], st);
        if ((rc = tdm__gpu_block_configs(g, s, upper, c->d_total, c->blocks.p, block_room(g), n_blocks)) != TDM_OK)
            return rc;
        TDM_CUDA_TRY(&g->dead, cudaGetLastError());
        g->stats.small_runs++;
        if (pf) {
            cudaEventRecord(pf->ev[2], st);
            cudaMemcpyAsync(pf->h_stat, pf->d_stat, (size_t)n_blocks * 8 * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                            st);
        }
        return tdm__gpu_configs_finish(g, s);
    }
    return tdm__gpu_launch_group(g, s);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

extern "C" int tdm_gpu_slot_start_configs(tdm_gpu *g, int k, const tdm_gpu_robot *robots, const uint32_t *robot_of,
                                          size_t n, uint32_t mode, uint32_t cap)
{
    uint64_t t0 = mono_ns();
    int rc = start_configs(g, k, robots, robot_of, n, mode, cap);
    g->stats.config_start_ns += mono_ns() - t0;
    return rc;
}

int tdm__gpu_configs_finish(tdm_gpu *g, slot *s)
{
    cfg_slot *c = s->cfg;
    cudaStream_t st = s->stream;
    const drun *R = (const drun *)c->prog.p;
    unsigned blocks = (unsigned)((c->n + BLOCK / 32 - 1) / (BLOCK / 32));
    if (c->spans) { /* a graph run that handed pairs over to the levels: folded again, as its graph folds */
        fold_kernel<<<blocks, BLOCK, 0, st>>>(R, (const tdm_xform *)c->pose.p, NULL, (const uint2 *)c->span.p,
                                              &R->listed, s->d_res, (const uint2 *)c->map.p, s->cnt,
                                              (tdm_gpu_config_answer *)c->h_ans.p);
        TDM_CUDA_TRY(&g->dead, cudaGetLastError());
    } else {
        fold_kernel<<<blocks, BLOCK, 0, st>>>(R, (const tdm_xform *)c->pose.p, (const uint32_t *)c->off.p, NULL,
                                              c->d_total, s->d_res, (const uint2 *)c->map.p, s->cnt,
                                              (tdm_gpu_config_answer *)c->ans.p);
        TDM_CUDA_TRY(&g->dead, cudaGetLastError());
        /* the answers and the run's tail (fold_kernel) in one copy */
        TDM_CUDA_TRY(&g->dead, cudaMemcpyAsync(c->h_ans.p, c->ans.p, (c->n + 1) * sizeof(tdm_gpu_config_answer),
                                               cudaMemcpyDeviceToHost, st));
    }
    if (s->prof) cudaEventRecord(s->prof->ev[3], st);
    TDM_CUDA_TRY(&g->dead, cudaEventRecord(s->ready, st));
    return TDM_OK;
}

void tdm__gpu_configs_look(slot *s)
{
    const cfg_slot *c = s->cfg;
    const tdm_gpu_config_answer *tail = (const tdm_gpu_config_answer *)c->h_ans.p + c->n;
    s->h_cnt[0] = tail->check;    /* pairs handed over to the levels */
    s->h_cnt[1] = tail->contacts; /* the overflow flag */
}

extern "C" const tdm_gpu_config_answer *tdm_gpu_slot_config_answers(tdm_gpu *g, int k, uint64_t *tasks)
{
    const cfg_slot *c = g->slots[k].cfg;
    uint32_t total = ((const tdm_gpu_config_answer *)c->h_ans.p)[c->n].truncated; /* the tail's tasks listed */
    *tasks = total < c->task_room ? total : c->task_room;
    g->stats.tasks += *tasks;
    if (g->prof_fd >= 0 && g->slots[k].prof && g->slots[k].prof->n == c->n) prof_write(g, &g->slots[k], total);
    return (const tdm_gpu_config_answer *)c->h_ans.p;
}

/* ---- the express ring (gpu.h) ----------------------------------------------------------
 *
 * Items (a configuration, its program, mode and cap) in mapped pinned memory, published
 * by the host in ticket order under a lock: it writes them, then the ring's `tail` (a
 * release store). A block's thread 0 claims the next ticket below `tail` with a CAS on
 * `head` (device memory, kept across launches), reads its item with volatile loads (a
 * place is reused by later tickets: nothing of it may come from a cache), runs
 * fused_config on it through the block's own run header and scratch, and writes the
 * answer, a system fence, then its tag. The host frees a place when it has read its
 * answer, and publishes only into free places.
 *
 * Programs change while launches run (no launch is stopped for a new scene's program):
 * an SM's L1 is not coherent within a launch, so a block copies its item's table entry
 * into its own device memory with loads that bypass L1 (ld.cg) and runs from that copy;
 * a program's arrays are placed in the ring's arena (one cudaMalloc made at its start:
 * a launch may read only memory allocated before it began, so neither cudaMallocAsync,
 * whose memory is valid only in its stream's order, nor cudaMalloc and cudaFree, which
 * wait for the device, can serve; gpu/extents.h keeps its free extents), and an evicted
 * program's extent is placed again only after every launch that started before its
 * eviction has ended (express_retire, express_reap): no block can hold a line of memory
 * that was rewritten since its launch began. An entry is replaced only while no
 * published item names it (its references). When the arena has no room, the least
 * recently used unreferenced programs are evicted for it, and the request goes the usual
 * way until their launches have ended. */
#define EXPRESS_LINKS 64u
#define EXPRESS_ELEMS 128u
#define EXPRESS_ROOM 32768u          /* frontier pairs a block holds a level (x2 buffers): a fused run's */
#define EXPRESS_PROGS 256u           /* programs in the table (TDM_GPU_EXPRESS_PROGS, tests: fewer) */
#define EXPRESS_ARENA (64u << 20)  /* the programs' arena, bytes (TDM_GPU_EXPRESS_ARENA) */
#define EXPRESS_IDLE_NS 1024u       /* an idle block's longest wait between looks at the doorbell */
#define EXPRESS_LIFE_NS 2000000ull   /* a launch's blocks leave after this long (2 ms); the next launch,
                                        on the other stream, starts at half that while items come */

typedef struct __align__(16) xitem {
    double q[TDM_GPU_EXPRESS_VALUES];
    uint32_t prog, mode, cap, n_q;
} xitem;

typedef struct __align__(16) xring {
    unsigned long long tail; /* tickets published (host: release store) */
    uint32_t stop;           /* set by destroy */
} xring;

/* A block's run header and scratch, in device memory. */
typedef struct __align__(16) xblock {
    dtask tasks[FUSED_CHECKS];
    tdm_xform links[2 * EXPRESS_LINKS], pose[EXPRESS_ELEMS];
    double centre[EXPRESS_ELEMS][4];
    double q[TDM_GPU_EXPRESS_VALUES];
    dres res[FUSED_CHECKS];
    uint2 map[FUSED_CHECKS];
    fpair front[2 * EXPRESS_ROOM];
    drun run;
    dprog dp; /* the item's program entry, copied past L1 (the table changes while blocks run) */
    uint2 span;
    uint32_t prog;
} xblock;

/* The table entry is copied word by word, a word a thread. */
#define DPROG_WORDS (sizeof(dprog) / sizeof(unsigned long long))
static_assert(sizeof(dprog) % sizeof(unsigned long long) == 0 && DPROG_WORDS <= FUSED_THREADS,
              "a program entry is copied in 8-byte words, one a thread");

__device__ static __forceinline__ unsigned long long xnow(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ static __forceinline__ unsigned long long xload_acquire(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ static __forceinline__ unsigned long long xload_acquire_gpu(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* Block 0 of a launch is its doorbell: its thread 0 alone reads the ring's tail across the bus
 * and mirrors it into device memory (door[1]); the other blocks wait on that copy in L2. Every
 * block polling host memory (tens of millions of reads a second over the bus) slowed the whole
 * device, the lanes' runs too, tenfold (call 84). door[0]: the next ticket to take; door[1]: the
 * tail's copy; door[2]: the ring's stop flag's copy (cleared by the host between launches). */
/* Four blocks an SM (128 registers a thread): without the bound ptxas takes 168 and an SM holds
 * three, for about the same spills (344 bytes against 356); resident blocks are what the ring
 * has to give. */
__global__ void __launch_bounds__(FUSED_THREADS, 4) express_kernel(const dprog *progs, const xitem *items, uint32_t mask,
                                                                const xring *ring, unsigned long long *door,
                                                                xblock *blocks, tdm_gpu_express_answer *ans,
                                                                uint32_t room)
{
    __shared__ unsigned long long s_ticket;
    __shared__ int s_go;
    __shared__ xitem s_item;
    const uint32_t tid = threadIdx.x;
    const unsigned long long born = xnow();
    if (blockIdx.x == 0) {
        if (tid != 0) return;
        while (xnow() - born < EXPRESS_LIFE_NS) {
            if (*(volatile const uint32_t *)&ring->stop) {
                *(volatile unsigned long long *)&door[2] = 1;
                break;
            }
            unsigned long long t = xload_acquire(&ring->tail);
            if (t > *(volatile unsigned long long *)&door[1]) {
                atomicMax(&door[1], t);
                __threadfence();
            }
        }
        return;
    }
    xblock *B = &blocks[blockIdx.x - 1];
    for (;;) {
        if (tid == 0) {
            s_go = 0;
            /* an idle block looks less and less often, up to every EXPRESS_IDLE_NS: the doorbell's
               words are one L2 line, which hundreds of blocks polling every 128 ns would crowd (the
               other idle blocks still see a new item within a few ns of each other's looks) */
            unsigned idle_ns = 128;
            for (;;) {
                if (*(volatile unsigned long long *)&door[2] || xnow() - born > EXPRESS_LIFE_NS) break;
                unsigned long long h = *(volatile unsigned long long *)&door[0], t = xload_acquire_gpu(&door[1]);
                if (h < t) {
                    if (atomicCAS(&door[0], h, h + 1) == h) {
                        s_ticket = h;
                        s_go = 1;
                        break;
                    }
                    continue;
                }
                __nanosleep(idle_ns);
                if (idle_ns < EXPRESS_IDLE_NS) idle_ns *= 2;
            }
        }
        __syncthreads();
        if (!s_go) return;
        const unsigned long long tk = s_ticket;
        /* the item in one round trip over the bus: a 16-byte volatile load per thread */
        if (tid < sizeof(xitem) / 16) {
            const uint4 *src = (const uint4 *)&items[tk & mask] + tid;
            uint4 v;
            asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "l"(src));
            ((uint4 *)&s_item)[tid] = v;
        }
        __syncthreads();
        const xitem *it = &s_item;
        const uint32_t n_q = it->n_q;
        if (tid < n_q) B->q[tid] = it->q[tid];
        /* the entry through L2: this SM may have cached the place's previous program */
        if (tid < DPROG_WORDS)
            ((unsigned long long *)&B->dp)[tid] = __ldcg((const unsigned long long *)&progs[it->prog] + tid);
        __threadfence_block();
        __syncthreads();
        if (tid == 0) {
            const dprog &p = B->dp;
            B->prog = 0;
            drun r;
            memset(&r, 0, sizeof r);
            r.progs = &B->dp;
            r.prog_of = &B->prog;
            r.q = B->q;
            r.L = p.kin.n_links;
            r.M = p.kin.n_elems ? p.kin.n_elems : 1;
            r.K = p.n_checks;
            r.n_q = n_q;
            r.n = 1;
            r.entries = p.n_checks;
            r.room = FUSED_CHECKS;
            r.mode = it->mode;
            r.cap = it->cap;
            r.one_launch = 1;
            r.lean = 1;
            B->run = r;
        }
        __threadfence_block();
        __syncthreads();
        const drun P = B->run;
        tdm_gpu_config_answer a = fused_config(P, &B->run, 0, B->links, B->pose, B->centre, &B->span, B->tasks, B->res,
                                               B->map, B->front, room, NULL, 0, FUSED_SHARED, FUSED_HOT);
        if (tid == 0) {
            tdm_gpu_express_answer *o = &ans[tk & mask];
            uint32_t over = *(volatile uint32_t *)&B->run.handed != 0;
            o->check = over ? UINT32_MAX : a.check;
            o->contacts = over ? 0 : a.contacts;
            o->truncated = (uint16_t)(over ? 0 : a.truncated);
            o->overflow = (uint16_t)over;
            __threadfence_system();
            *(volatile uint32_t *)&o->tag = (uint32_t)(tk + 1);
        }
        __syncthreads(); /* the block's scratch and shared memory again */
    }
}

typedef struct xprog {
    uint64_t key, epoch, used;
    tdm_kin kin;          /* compared whole (its arrays: kc) */
    unsigned char *kc;
    void *buf;            /* device: the program's arrays */
    size_t bytes;
    int refs, live;
} xprog;

struct tdm_gpu_express {
    tdm_gpu *g;
    int device;
    uint32_t blocks, n_items, mask;
    uint32_t room;                /* a block's frontier pairs a level (TDM_GPU_EXPRESS_ROOM, tests: fewer) */
    cudaStream_t run[2], up;      /* launches alternate between run[0] and run[1], overlapping */
    xitem *items;                 /* mapped pinned */
    tdm_gpu_express_answer *ans;  /* mapped pinned */
    xring *ring;                  /* mapped pinned */
    unsigned long long *d_head;
    xblock *d_blocks;
    dprog *d_progs;
    unsigned char *arena;         /* the programs' arrays (see the top) */
    tdm_extents room_of;          /* under keep_lock: the arena's free extents */
    uint64_t scratch_bytes;       /* counted in the budget */
    pthread_mutex_t lock;         /* publishing, the table */
    pthread_mutex_t keep_lock;
    uint64_t tail;                /* under lock: tickets published */
    uint8_t *busy;                /* under lock (set) / poll (cleared, atomically): a place not yet read back */
    xprog progs[EXPRESS_PROGS];
    uint32_t n_progs;             /* places of the table in use (EXPRESS_PROGS; tests: fewer) */
    uint64_t use;                 /* under lock: the table's clock */
    int launched[2], dead;        /* written under keep_lock, read atomically by kick; dead: atomic */
    uint64_t launched_ns[2];      /* under keep_lock: when */
    uint64_t gen, launched_gen[2]; /* under keep_lock: launches started, and each stream's launch's number */
    struct xretired { void *buf; size_t bytes; uint64_t gen; } *retired; /* under keep_lock: evicted programs' */
    size_t n_retired, cap_retired; /* arrays, each with the launches started before it */
    uint64_t launches, answered;  /* atomic */
    int joined;                   /* registered with the trees' arena (tdm__gpu_arena_ring) */
};

extern "C" int tdm_gpu_express_create(tdm_gpu *g, uint32_t blocks, uint32_t items, tdm_gpu_express **out)
{
    *out = NULL;
    if (g->mesh_pooled) {
        /* a tree freed to the stream-ordered pool may come back as another tree while a launch
           runs whose blocks read the first from their SMs' L1 (the programs are retired, see the
           top; trees are not) */
        fprintf(stderr, "tandem engine: the express ring cannot run with TDM_GPU_MESH_POOLED=1\n");
        return TDM_EINVAL;
    }
    if (g->dead) return TDM_EGPU;
    if (blocks == 0 || blocks > 1024 || items < 64 || (items & (items - 1)) || items > (1u << 20)) return TDM_EINVAL;
    tdm_gpu_express *x = (tdm_gpu_express *)calloc(1, sizeof *x);
    uint8_t *busy = (uint8_t *)calloc(items, 1);
    if (!x || !busy) {
        free(x);
        free(busy);
        return TDM_ENOMEM;
    }
    x->g = g;
    x->device = g->cfg.device;
    x->blocks = blocks;
    x->n_items = items;
    x->mask = items - 1;
    x->busy = busy;
    const char *room = getenv("TDM_GPU_EXPRESS_ROOM");
    x->room = room && *room ? (uint32_t)strtoul(room, NULL, 10) : EXPRESS_ROOM;
    if (x->room == 0 || x->room > EXPRESS_ROOM) x->room = EXPRESS_ROOM;
    const char *progs = getenv("TDM_GPU_EXPRESS_PROGS");
    x->n_progs = progs && *progs ? (uint32_t)strtoul(progs, NULL, 10) : EXPRESS_PROGS;
    if (x->n_progs == 0 || x->n_progs > EXPRESS_PROGS) x->n_progs = EXPRESS_PROGS;
    pthread_mutex_init(&x->lock, NULL);
    pthread_mutex_init(&x->keep_lock, NULL);
    const char *arena = getenv("TDM_GPU_EXPRESS_ARENA");
    size_t arena_bytes = arena && *arena ? (size_t)strtoull(arena, NULL, 10) : EXPRESS_ARENA;
    if (tdm_extents_init(&x->room_of, arena_bytes) != TDM_OK) {
        if (arena_bytes < TDM_EXTENTS_ALIGN)
            fprintf(stderr, "tandem engine: TDM_GPU_EXPRESS_ARENA=%s: the express ring's program arena needs a number "
                            "of bytes, at least %u\n", arena, TDM_EXTENTS_ALIGN);
        tdm_gpu_express_destroy(x);
        return arena_bytes < TDM_EXTENTS_ALIGN ? TDM_EINVAL : TDM_ENOMEM;
    }
    x->scratch_bytes = 2 * (uint64_t)blocks * sizeof(xblock) + EXPRESS_PROGS * sizeof(dprog) +
                       sizeof(unsigned long long) + x->room_of.total;
    int rc = tdm__gpu_budget_add(g->bud, BUD_SCRATCH, (int64_t)x->scratch_bytes);
    if (rc != TDM_OK) {
        x->scratch_bytes = 0;
        tdm_gpu_express_destroy(x);
        return TDM_EGPUMEM;
    }
    cudaSetDevice(x->device);
    cudaError_t e = cudaStreamCreateWithFlags(&x->run[0], cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&x->run[1], cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&x->up, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaHostAlloc((void **)&x->items, items * sizeof(xitem), cudaHostAllocMapped);
    if (e == cudaSuccess)
        e = cudaHostAlloc((void **)&x->ans, items * sizeof(tdm_gpu_express_answer), cudaHostAllocMapped);
    if (e == cudaSuccess) e = cudaHostAlloc((void **)&x->ring, sizeof(xring), cudaHostAllocMapped);
    if (e == cudaSuccess) e = cudaMalloc((void **)&x->d_head, 3 * sizeof(unsigned long long)); /* the doorbell */
    if (e == cudaSuccess) e = cudaMalloc((void **)&x->d_blocks, 2 * (size_t)blocks * sizeof(xblock)); /* a launch on each stream */
    if (e == cudaSuccess) e = cudaMalloc((void **)&x->d_progs, EXPRESS_PROGS * sizeof(dprog));
    if (e == cudaSuccess) e = cudaMalloc((void **)&x->arena, x->room_of.total);
    if (e == cudaSuccess) e = cudaMemsetAsync(x->d_head, 0, 3 * sizeof(unsigned long long), x->up);
    if (e == cudaSuccess) e = cudaStreamSynchronize(x->up);
    if (e != cudaSuccess) {
        cudaGetLastError();
        tdm_gpu_express_destroy(x);
        return e == cudaErrorMemoryAllocation ? TDM_EGPUMEM : TDM_EGPU;
    }
    memset(x->items, 0, items * sizeof(xitem));
    memset(x->ans, 0, items * sizeof(tdm_gpu_express_answer));
    memset(x->ring, 0, sizeof(xring));
    /* a launch's blocks stay resident for their whole life: more than the device holds at once
       wait for others to leave (2 ms), and two launches overlap while the ring is busy; the
       lanes' kernels need SMs too */
    int per_sm = 0, sms = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, express_kernel, FUSED_THREADS, 0) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, x->device) == cudaSuccess && per_sm > 0 &&
        2 * ((uint64_t)blocks + 1) > (uint64_t)per_sm * (uint64_t)sms)
        fprintf(stderr,
                "tandem engine: the express ring's %u blocks (and a doorbell), twice while launches overlap, are "
                "more than CUDA device %d holds at once (%d of them: %d an SM): the lanes' runs wait for room\n",
                blocks, x->device, per_sm * sms, per_sm);
    cudaGetLastError();
    /* the trees' arena waits for its launches before it places a freed tree's extent again */
    if ((rc = tdm__gpu_arena_ring(g->bud, x, 1)) != TDM_OK) {
        fprintf(stderr, "tandem engine: more than %d express rings on one device's trees\n", ARENA_RINGS);
        tdm_gpu_express_destroy(x);
        return rc;
    }
    x->joined = 1;
    *out = x;
    return TDM_OK;
}

static void express_reap(tdm_gpu_express *x);

/* Under keep_lock: the launches that have ended marked so, and the programs retired before them
 * placed again. TDM_EGPU when a launch faulted (it stays marked running). */
static int express_look(tdm_gpu_express *x)
{
    int rc = TDM_OK, ended = 0;
    for (int s = 0; s < 2; s++)
        if (x->launched[s]) {
            cudaError_t e = cudaStreamQuery(x->run[s]);
            if (e == cudaSuccess) __atomic_store_n(&x->launched[s], 0, __ATOMIC_RELEASE), ended = 1;
            else if (e != cudaErrorNotReady) rc = TDM_EGPU;
        }
    if (ended && x->n_retired) express_reap(x);
    return rc;
}

void tdm__gpu_express_launches(tdm_gpu_express *x, uint64_t *started, uint64_t *oldest)
{
    pthread_mutex_lock(&x->keep_lock);
    if (express_look(x) != TDM_OK) cudaGetLastError(); /* a fault: taken as still running (keep reports it) */
    if (started) *started = x->gen;
    *oldest = UINT64_MAX;
    for (int s = 0; s < 2; s++)
        if (x->launched[s] && x->launched_gen[s] < *oldest) *oldest = x->launched_gen[s];
    pthread_mutex_unlock(&x->keep_lock);
}

extern "C" void tdm_gpu_express_destroy(tdm_gpu_express *x)
{
    if (!x) return;
    cudaSetDevice(x->device);
    if (x->ring) {
        __atomic_store_n(&x->ring->stop, 1u, __ATOMIC_RELEASE);
        for (int s = 0; s < 2; s++)
            if (x->run[s]) cudaStreamSynchronize(x->run[s]);
    }
    /* its launches have ended: the trees retired while they ran may be placed again */
    if (x->joined) tdm__gpu_arena_ring(x->g->bud, x, 0);
    for (uint32_t i = 0; i < EXPRESS_PROGS; i++) free(x->progs[i].kc);
    free(x->retired);
    tdm_extents_destroy(&x->room_of);
    if (x->up) cudaStreamSynchronize(x->up);
    cudaFree(x->arena);
    cudaFree(x->d_progs);
    cudaFree(x->d_blocks);
    cudaFree(x->d_head);
    cudaFreeHost(x->ring);
    cudaFreeHost(x->ans);
    cudaFreeHost(x->items);
    if (x->up) cudaStreamDestroy(x->up);
    for (int s = 0; s < 2; s++)
        if (x->run[s]) cudaStreamDestroy(x->run[s]);
    cudaGetLastError();
    if (x->scratch_bytes) tdm__gpu_budget_add(x->g->bud, BUD_SCRATCH, -(int64_t)x->scratch_bytes);
    pthread_mutex_destroy(&x->lock);
    pthread_mutex_destroy(&x->keep_lock);
    free(x->busy);
    free(x);
}

static int xprog_same(const xprog *p, uint64_t key, uint64_t epoch, const tdm_kin *kin)
{
    if (!p->live || p->key != key || p->epoch != epoch || memcmp(&p->kin, kin, sizeof *kin) != 0) return 0;
    size_t jb = joint_bytes(kin), eb = elem_bytes(kin);
    return memcmp(p->kc, kin->joints, jb) == 0 && memcmp(p->kc + jb, kin->elems, eb) == 0;
}

/* The program of (key, epoch, kin) in *id with a reference taken: 1, else 0 (under lock). */
static int express_take(tdm_gpu_express *x, uint64_t key, uint64_t epoch, const tdm_kin *kin, uint32_t *id)
{
    for (uint32_t i = 0; i < x->n_progs; i++)
        if (xprog_same(&x->progs[i], key, epoch, kin)) {
            x->progs[i].refs++;
            x->progs[i].used = ++x->use;
            *id = i;
            return 1;
        }
    return 0;
}

extern "C" int tdm_gpu_express_find(tdm_gpu_express *x, uint64_t key, uint64_t epoch, const tdm_kin *kin, uint32_t *id)
{
    pthread_mutex_lock(&x->lock);
    int found = express_take(x, key, epoch, kin, id);
    pthread_mutex_unlock(&x->lock);
    return found;
}

extern "C" void tdm_gpu_express_release(tdm_gpu_express *x, uint32_t id)
{
    pthread_mutex_lock(&x->lock);
    if (id < x->n_progs && x->progs[id].refs > 0) x->progs[id].refs--;
    pthread_mutex_unlock(&x->lock);
}

/* Frees the retired arrays that no running launch can have read (under keep_lock, with the
 * launches' flags fresh): those retired after every running launch started. */
static void express_reap(tdm_gpu_express *x)
{
    uint64_t oldest = UINT64_MAX; /* the number of the oldest launch still running */
    for (int s = 0; s < 2; s++)
        if (x->launched[s] && x->launched_gen[s] < oldest) oldest = x->launched_gen[s];
    size_t kept = 0;
    for (size_t i = 0; i < x->n_retired; i++) {
        if (x->retired[i].gen < oldest) /* every launch that might read it ended */
            tdm_extents_free(&x->room_of, (size_t)((unsigned char *)x->retired[i].buf - x->arena), x->retired[i].bytes);
        else x->retired[kept++] = x->retired[i];
    }
    x->n_retired = kept;
}

/* An evicted program's arrays (under keep_lock): back to the arena once the launches started
 * so far have ended (a block of one may hold their lines in its SM's L1, and the arena would
 * place the next program there). 0, or TDM_ENOMEM (nothing changed). */
static int express_retire(tdm_gpu_express *x, void *buf, size_t bytes)
{
    if (!buf) return TDM_OK;
    if (x->n_retired == x->cap_retired) {
        size_t cap = x->cap_retired ? 2 * x->cap_retired : 16;
        struct tdm_gpu_express::xretired *r =
            (struct tdm_gpu_express::xretired *)realloc(x->retired, cap * sizeof *r);
        if (!r) return TDM_ENOMEM;
        x->retired = r;
        x->cap_retired = cap;
    }
    x->retired[x->n_retired++] = {buf, bytes, x->gen};
    express_reap(x);
    return TDM_OK;
}

/* Empties place i (under keep_lock and lock), its arrays retired: 0, or TDM_ENOMEM (nothing
 * changed: the place keeps its program). */
static int express_evict(tdm_gpu_express *x, uint32_t i)
{
    int rc = express_retire(x, x->progs[i].buf, x->progs[i].bytes);
    if (rc != TDM_OK) return rc;
    free(x->progs[i].kc);
    memset(&x->progs[i], 0, sizeof x->progs[i]);
    return TDM_OK;
}

extern "C" int tdm_gpu_express_program(tdm_gpu_express *x, const tdm_gpu_robot *r, uint32_t *id)
{
    const tdm_kin *k = r->kin;
    if (!r->checks || !r->pairs || !k || k->n_links == 0 || k->n_links > EXPRESS_LINKS ||
        k->n_elems > EXPRESS_ELEMS || k->n_q > TDM_GPU_EXPRESS_VALUES || r->n_checks == 0 ||
        r->n_checks > FUSED_CHECKS)
        return TDM_EINVAL;
    size_t bytes = layout_of(r).end, jb = joint_bytes(k), eb = elem_bytes(k);
    unsigned char *hb = (unsigned char *)malloc(bytes), *kc = (unsigned char *)malloc(jb + eb + 1);
    if (!hb || !kc) {
        free(hb);
        free(kc);
        return TDM_ENOMEM;
    }
    memcpy(kc, k->joints, jb);
    memcpy(kc + jb, k->elems, eb);
    pthread_mutex_lock(&x->keep_lock);
    pthread_mutex_lock(&x->lock);
    if (express_take(x, r->key, r->epoch, k, id)) { /* uploaded by another caller since this one's find */
        pthread_mutex_unlock(&x->lock);
        pthread_mutex_unlock(&x->keep_lock);
        free(hb);
        free(kc);
        return 1;
    }
    /* its place: an unreferenced entry of its key (stale), else a free one, else the least
       recently used unreferenced one */
    const uint32_t none = x->n_progs;
    uint32_t at = none;
    for (uint32_t i = 0; i < x->n_progs && at == none; i++)
        if (x->progs[i].live && x->progs[i].key == r->key && x->progs[i].refs == 0) at = i;
    for (uint32_t i = 0; i < x->n_progs && at == none; i++)
        if (!x->progs[i].live) at = i;
    for (uint32_t i = 0; i < x->n_progs; i++)
        if (x->progs[i].live && x->progs[i].refs == 0 && x->progs[i].key != r->key &&
            (at == none || (x->progs[at].live && x->progs[at].key != r->key && x->progs[i].used < x->progs[at].used)))
            at = i;
    /* no launch stops for it: no published item names the place (refs 0), blocks read the
       entry past L1, and the old arrays are retired (see the top) */
    cudaSetDevice(x->device);
    int rc = at == none ? TDM_EAGAIN : tdm_extents_length(bytes) > x->room_of.total ? TDM_ERANGE : TDM_OK;
    if (rc == TDM_OK) rc = express_evict(x, at);
    size_t off = SIZE_MAX;
    if (rc == TDM_OK) {
        off = tdm_extents_alloc(&x->room_of, bytes);
        /* no room in the arena: the least recently used unreferenced programs make way, their
           extents placed again once the launches that may read them have ended (this request
           goes the usual way meanwhile) */
        while (off == SIZE_MAX) {
            uint32_t v = none;
            for (uint32_t i = 0; i < x->n_progs; i++)
                if (x->progs[i].live && x->progs[i].refs == 0 && (v == none || x->progs[i].used < x->progs[v].used))
                    v = i;
            if (v == none || express_evict(x, v) != TDM_OK) break;
            off = tdm_extents_alloc(&x->room_of, bytes);
        }
        if (off == SIZE_MAX) rc = TDM_EAGAIN;
    }
    /* the upload without the publishing lock: submitters (tandemd's loops) do not wait for it. The
       place is empty meanwhile, so no find names it, and keep_lock keeps every other program
       call, retirement and launch out */
    pthread_mutex_unlock(&x->lock);
    if (rc == TDM_OK) {
        unsigned char *buf = x->arena + off;
        dprog dp = pack_program(r, hb, buf);
        cudaError_t e = cudaMemcpyAsync(buf, hb, bytes, cudaMemcpyHostToDevice, x->up);
        if (e == cudaSuccess) e = cudaMemcpyAsync(&x->d_progs[at], &dp, sizeof dp, cudaMemcpyHostToDevice, x->up);
        if (e == cudaSuccess) e = cudaStreamSynchronize(x->up);
        if (e != cudaSuccess) {
            cudaGetLastError();
            express_retire(x, buf, bytes); /* named by no entry, but a copy may still land */
            rc = TDM_EGPU;
        } else {
            pthread_mutex_lock(&x->lock);
            x->progs[at] = xprog{r->key, r->epoch, ++x->use, *k, kc, buf, bytes, 1, 1};
            pthread_mutex_unlock(&x->lock);
            kc = NULL;
            *id = at;
        }
    }
    pthread_mutex_unlock(&x->keep_lock);
    free(hb);
    free(kc);
    return rc;
}

extern "C" int tdm_gpu_express_submit(tdm_gpu_express *x, uint32_t id, const double *q, uint32_t n, uint32_t n_q,
                                      uint32_t mode, uint32_t cap, uint64_t *ticket)
{
    if (n == 0 || n > x->n_items / 4 || n_q > TDM_GPU_EXPRESS_VALUES || id >= x->n_progs) return TDM_EINVAL;
    if (__atomic_load_n(&x->dead, __ATOMIC_RELAXED)) return TDM_EGPU;
    pthread_mutex_lock(&x->lock);
    uint64_t t = x->tail;
    for (uint32_t k = 0; k < n; k++)
        if (__atomic_load_n(&x->busy[(t + k) & x->mask], __ATOMIC_ACQUIRE)) {
            pthread_mutex_unlock(&x->lock);
            return TDM_EAGAIN;
        }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t at = (uint32_t)((t + k) & x->mask);
        xitem *it = &x->items[at];
        memcpy(it->q, q + (size_t)k * n_q, n_q * sizeof(double));
        it->prog = id;
        it->mode = mode;
        it->cap = cap;
        it->n_q = n_q;
        x->busy[at] = 1;
    }
    x->tail = t + n;
    __atomic_store_n(&x->ring->tail, (unsigned long long)(t + n), __ATOMIC_RELEASE);
    pthread_mutex_unlock(&x->lock);
    *ticket = t;
    return TDM_OK;
}

extern "C" int tdm_gpu_express_poll(tdm_gpu_express *x, uint64_t ticket, uint32_t n, tdm_gpu_express_answer *out)
{
    for (uint32_t k = 0; k < n; k++) {
        const tdm_gpu_express_answer *a = &x->ans[(ticket + k) & x->mask];
        if (__atomic_load_n(&a->tag, __ATOMIC_ACQUIRE) != (uint32_t)(ticket + k + 1))
            return __atomic_load_n(&x->dead, __ATOMIC_RELAXED) ? TDM_EGPU : 0;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t at = (uint32_t)((ticket + k) & x->mask);
        out[k] = x->ans[at];
        __atomic_store_n(&x->busy[at], 0, __ATOMIC_RELEASE);
    }
    __atomic_add_fetch(&x->answered, n, __ATOMIC_RELAXED);
    return 1;
}

extern "C" int tdm_gpu_express_keep(tdm_gpu_express *x)
{
    if (__atomic_load_n(&x->dead, __ATOMIC_RELAXED)) return TDM_EGPU;
    if (pthread_mutex_trylock(&x->keep_lock) != 0) return TDM_OK;
    int rc = TDM_OK;
    cudaSetDevice(x->device);
    uint64_t now = mono_ns(), newest = 0;
    int idle = -1;
    rc = express_look(x);
    for (int s = 0; s < 2; s++) {
        if (x->launched[s] && x->launched_ns[s] > newest) newest = x->launched_ns[s];
        if (!x->launched[s] && idle < 0) idle = s;
    }
    /* while items wait: a launch when none runs, and the next one, on the other stream, once the
       newest has lived half its life (its blocks leave at EXPRESS_LIFE_NS) */
    uint64_t published = __atomic_load_n(&x->ring->tail, __ATOMIC_ACQUIRE);
    int wanted = published > __atomic_load_n(&x->answered, __ATOMIC_RELAXED) &&
                 (newest == 0 || now - newest > EXPRESS_LIFE_NS / 2);
    if (rc == TDM_OK && wanted && idle >= 0) {
        express_kernel<<<x->blocks + 1, FUSED_THREADS, 0, x->run[idle]>>>(x->d_progs, x->items, x->mask, x->ring,
                                                                     x->d_head, x->d_blocks + (size_t)idle * x->blocks,
                                                                     x->ans, x->room);
        if (cudaGetLastError() != cudaSuccess) {
            rc = TDM_EGPU;
        } else {
            __atomic_store_n(&x->launched[idle], 1, __ATOMIC_RELEASE);
            x->launched_ns[idle] = now;
            x->launched_gen[idle] = ++x->gen;
            __atomic_add_fetch(&x->launches, 1, __ATOMIC_RELAXED);
        }
    }
    if (rc != TDM_OK) __atomic_store_n(&x->dead, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&x->keep_lock);
    return rc;
}

extern "C" int tdm_gpu_express_kick(tdm_gpu_express *x)
{
    if (__atomic_load_n(&x->launched[0], __ATOMIC_ACQUIRE) || __atomic_load_n(&x->launched[1], __ATOMIC_ACQUIRE))
        return __atomic_load_n(&x->dead, __ATOMIC_RELAXED) ? TDM_EGPU : TDM_OK;
    return tdm_gpu_express_keep(x);
}

extern "C" void tdm_gpu_express_counts(const tdm_gpu_express *x, uint64_t *launches, uint64_t *answered)
{
    *launches = __atomic_load_n(&x->launches, __ATOMIC_RELAXED);
    *answered = __atomic_load_n(&x->answered, __ATOMIC_RELAXED);
}
