/* The GPU-resident engine's private parts, shared by its sources: the device
 * task and frontier entries, a slot (a stream and its buffers), the budget and
 * the engine's state. resident.cu owns the traversal and the slot API;
 * configs.cu runs batches of robot configurations on the same slots. Nothing
 * outside gpu/ includes this. */
#ifndef TDM_GPU_RESIDENT_H
#define TDM_GPU_RESIDENT_H

#include <pthread.h>

#include <cuda_runtime.h>

#include "../geom/bv.h"
#include "extents.h"
#include "internal.h"

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

/* What the host writes per task (gpu.h): the transform and an index into a
 * table of mesh pairs (one entry for a run of tasks on the same meshes). The
 * device derives everything else (prepare_tasks_kernel). */
typedef tdm_gpu_input dinput;
typedef tdm_gpu_pair dpair;
typedef tdm_gpu_result dres;

typedef struct fpair { uint32_t task, a, b; } fpair;

/* One chunk in flight: a stream, its own frontier and task buffers. Several
 * slots run at once so that the host fills one chunk's tasks, the copies move
 * another's, and the kernels traverse a third (gpu.h). */
struct cfg_slot; /* configs.cu: a slot's scratch for batches of configurations */

/* TDM_GPU_PROFILE=FILE (measurements only): each configs run in block runs appends
 * one line to FILE with its stages' device times and its blocks' work (configs.cu). */
typedef struct slot_prof {
    cudaEvent_t ev[4];        /* before the copies, before the block run, after it, after the fold's copies */
    uint32_t *d_stat, *h_stat; /* per block (8 words): cycles, tasks, box tests, leaf pairs, levels,
                                  widest level */
    uint32_t blocks, progs;
    size_t n, entries;
    uint64_t t0_ns;
} slot_prof;

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
    uint64_t cap_tasks;
    size_t n;                 /* the tasks it runs */
    int it, finishing;
    /* each group of levels (launch_group) as a CUDA graph, made on first use: a level's
     * three launches cost the host ~4 us each, ~0.5 ms a run, and under load (lanes
     * launching at once) more than the kernels take */
    cudaGraphExec_t *groups;
    struct cfg_slot *cfg;     /* configs.cu's scratch, made on the first configs run */
    int configs;              /* the run in flight is a batch of configurations (configs.cu) */
    int small;                /* the run in flight started depth first (small_run_kernel) and has not
                                 been looked at yet */
    slot_prof *prof;          /* TDM_GPU_PROFILE only */
} slot;

#define MAX_SLOTS 8

/* The tree arena (resident.cu): trees' device arrays placed as extents of a few large cudaMalloc
 * chunks, because cudaFree waits for the whole device and holds every other thread's launches
 * meanwhile (bench/free_stall.cu: ~1-2 ms a free while the express ring's resident launches run,
 * the lanes' runs stalled as long). A freed tree's extent is placed again only once the ring's
 * launches that started before the free have ended: a resident block may hold the old tree's
 * lines in its SM's L1 (the rule of the ring's own program arena, configs.cu). */
typedef struct mesh_chunk {
    unsigned char *base; /* device */
    tdm_extents room;    /* its free extents */
    int dedicated;       /* made for one tree larger than half a chunk (its size rounded up to an eighth
                            of a chunk): kept once empty as a spare for the next large tree, a few at
                            most, and released when the budget needs the room */
} mesh_chunk;

#define ARENA_SPARES 2 /* empty dedicated chunks kept at most (besides one empty chunk of the usual size) */

#define ARENA_RINGS 8 /* express rings drawing on one budget at most */

/* The device memory a tdm_gpu and its lanes hold together, against one budget.
 * Any thread: uploads, frees and the lanes' scratch growth may happen at once. */
typedef struct gpu_budget {
    pthread_mutex_t mu;
    uint64_t limit;
    uint64_t mesh_bytes;    /* resident trees (in the arena: their extents) */
    uint64_t scratch_bytes; /* every lane's frontiers and task buffers */
    uint64_t other_bytes;   /* scratch other engines took (tdm_gpu_account) */
    uint64_t arena_bytes;   /* the tree arena's chunks' bytes that hold no tree (free or retired extents) */
    int users;              /* the tdm_gpu and its lanes: the last one out frees it */
    /* the tree arena, under arena_mu (taken before mu, never after; and before an express ring's
       keep lock, never after) */
    pthread_mutex_t arena_mu;
    int arena;              /* trees in the arena (TDM_GPU_MESH_ARENA=0: cudaMalloc and cudaFree each) */
    size_t chunk_bytes;     /* a chunk's size (TDM_GPU_MESH_CHUNK_KB, tests: small ones) */
    size_t spares;          /* empty dedicated chunks kept at most (TDM_GPU_MESH_SPARES, ARENA_SPARES) */
    mesh_chunk **chunks;
    size_t n_chunks, cap_chunks;
    uint64_t chunks_made, chunks_released; /* cudaMalloc and cudaFree of chunks so far (stats) */
    struct arena_retired { mesh_chunk *chunk; size_t at, len; uint64_t gen[ARENA_RINGS]; } *retired;
    size_t n_retired, cap_retired;
    struct tdm_gpu_express *rings[ARENA_RINGS]; /* the express rings on these trees (configs.cu) */
} gpu_budget;

enum { BUD_MESH, BUD_SCRATCH, BUD_OTHER, BUD_ARENA };

struct tdm_gpu {
    tdm_gpu_config cfg;
    int dead;
    int grid; /* blocks per launch: the kernels loop over their work */
    int n_slots;
    gpu_budget *bud;         /* shared with the lanes */

    uint64_t scratch_bytes;  /* this lane's frontiers (counted in bud too) */
    uint64_t cap_pairs, cap_leaves; /* per slot */
    slot slots[MAX_SLOTS];
    tdm_gpu_stats stats;
    int graphs; /* groups of levels launched as CUDA graphs (TDM_GPU_GRAPHS=0: one launch per kernel) */
    long long fault_after; /* TDM_GPU_FAULT_AFTER (tests): the chunk this lane faults on, or -1 */
    uint64_t config_room;  /* TDM_GPU_CONFIG_ROOM (tests): most tasks a configs run lists (0: its slot's
                              room), so that runs leave configurations for the next */
    uint64_t block_config_entries; /* a configs run of at most this many (configuration, check) entries
                                      runs in block runs (TDM_GPU_BLOCK_CONFIG_ENTRIES; 0: never) */
    uint32_t block_room;           /* a block run's frontier room per block (TDM_GPU_BLOCK_ROOM, tests:
                                      a small one hands most pairs over to the levels; 0: configs.cu's) */
    int prof_fd;                   /* TDM_GPU_PROFILE's file, or -1 */
    int config_graphs;             /* small configs runs as one CUDA graph (TDM_GPU_CONFIG_GRAPHS=0: not) */
    int config_lean;               /* a configs run's short paths (configs.cu, block_run_kernel): kinematics
                                      chained in registers, tasks listed in one pass when they all fit,
                                      block runs with their frontiers and tasks in shared memory
                                      (TDM_GPU_CONFIG_LEAN=0, A/B runs: the paths through global memory) */
    uint32_t fused_configs;        /* graph runs of at most this many configurations in one kernel (configs.cu,
                                      fused_kernel; TDM_GPU_FUSED_CONFIGS, A/B runs; TDM_GPU_CONFIG_FUSED=0: 0) */
    uint32_t fused_shared;         /* TDM_GPU_FUSED_SHARED (tests): fused_kernel's frontier pairs and hot tasks
                                      in shared memory at most (0: configs.cu's), so that the rest go through
                                      global memory */
    struct prog_cache *progs;      /* configs.cu: the resident robot scene programs (NULL until the first) */
    uint64_t program_cache_bytes;  /* their most bytes (cfg.program_cache, or TDM_GPU_PROGRAM_CACHE_KB; 0: none) */
    int mesh_pooled;               /* trees' device arrays from the device's stream-ordered pool (cudaMallocAsync,
                                      cudaFreeAsync on slot 0's stream), so that neither an upload nor a free
                                      waits for the other lanes' runs (TDM_GPU_MESH_POOLED=0: cudaMalloc and
                                      cudaFree, which synchronise the device) */
};

/* Graph runs of robot configurations of at most this many configurations go in one kernel,
 * one block each (configs.cu, fused_kernel). */
#define TDM_GPU_FUSED_CONFIGS 64u

#define BLOCK 256
/* Iterations of one traversal: one per BVTT level, and a tree pair is at most
 * 2 * TDM_BVH_MAX_DEPTH levels deep. */
#define MAX_ITERS (2 * TDM_BVH_MAX_DEPTH + 2)
/* Iterations launched between two looks at the frontier's size from the host. */
#define ITERS_PER_SYNC 8
#define MAX_GROUPS ((MAX_ITERS + ITERS_PER_SYNC - 1) / ITERS_PER_SYNC)

#define TRI_CNT (2 * MAX_ITERS + 1) /* cnt[TRI_CNT + it]: the triangle workpile of iteration it */
#define CNT_N (3 * MAX_ITERS + 1)

/* The device task for B placed at x in A's frame on mesh pair p (a placement far
 * apart moved to one the root test separates: geom/bv.h). */
__device__ static __forceinline__ dtask tdm__dtask_of(tdm_xform x, const dpair &p, uint32_t mode, uint32_t cap)
{
    x = tdm_bounds_placement(&x, p.ra, p.rb);
    dtask t;
    t.h.fx = tdm_fxform_of(&x);
    t.h.tol = tdm_obb_tolerance(p.ra, p.rb, (float)tdm_d3_len(x.t));
    t.h.mode = mode;
    t.h.cap = cap;
    t.h.pad = 0;
    t.h.an = p.an;
    t.h.bn = p.bn;
    t.at = p.at;
    t.bt = p.bt;
    t.aid = p.aid;
    t.bid = p.bid;
    t.x = x;
    return t;
}

/* tdm_bvtt_children on the blocked layout (geom/layout.h): an internal node's children are
 * link and link + 1 (resident.cu's traversals, configs.cu's fused runs). */
__device__ static __forceinline__ int blocked_children(const tdm_bvh_node *na, uint32_t ia, const tdm_bvh_node *nb,
                                                       uint32_t ib, uint32_t ca[2], int *nca, uint32_t cb[2], int *ncb)
{
    int k = tdm_bvtt_children(na, ia, nb, ib, ca, nca, cb, ncb);
    if (*nca == 2) { ca[0] = (uint32_t)na->link; ca[1] = ca[0] + 1; }
    if (*ncb == 2) { cb[0] = (uint32_t)nb->link; cb[1] = cb[0] + 1; }
    return k;
}

/* Takes (delta > 0) or gives back bytes of one kind against the shared budget:
 * TDM_EGPUMEM when a growth would pass the limit (nothing changes then). */
int tdm__gpu_budget_add(gpu_budget *b, int kind, int64_t delta);
/* Queues the slot's next group of levels and an event after it. */
int tdm__gpu_launch_group(tdm_gpu *g, slot *s);
/* Blocks of BLOCK threads for n items. */
unsigned tdm__gpu_blocks(uint64_t n);
/* Sizes the slot's task buffers for n tasks (resident.cu). */
int tdm__gpu_reserve_tasks(tdm_gpu *g, slot *s, uint64_t n);

/* Queues a configs run's block run (block_run_kernel): at most `most` tasks, as many as
 * *d_tasks_listed says, on `blocks` blocks, each with two frontier buffers of `room`
 * pairs in `scratch` (2 x room x blocks pairs). The caller checks the launch, queues the
 * fold, whose one copy brings back the hand-over's size and the overflow flag, and the
 * event (configs.cu; also inside a stream capture there). */
int tdm__gpu_block_configs(tdm_gpu *g, slot *s, uint32_t most, const uint32_t *d_tasks_listed, void *scratch,
                           uint32_t room, uint32_t blocks);

/* configs.cu: when a configs run's traversal has ended, queues its fold and the
 * copies of its answers (and records the slot's event); frees a slot's configs
 * scratch (giving its bytes back). */
int tdm__gpu_configs_finish(tdm_gpu *g, slot *s);
/* After a block run's event: the hand-over's size and the overflow flag (h_cnt[0], [1])
 * from the run's tail, which came back with its answers. */
void tdm__gpu_configs_look(slot *s);
void tdm__gpu_configs_free(tdm_gpu *g, slot *s);
/* Frees the lane's resident programs (configs.cu) and gives their bytes back. */
void tdm__gpu_programs_free(tdm_gpu *g);

/* The tree arena and the express rings (resident.cu, configs.cu). A ring registers itself on
 * its lane's budget when it starts (TDM_ERANGE: ARENA_RINGS already are) and leaves once its
 * launches have ended; while registered, a freed tree's extent waits for the ring's launches that
 * started before the free. */
int tdm__gpu_arena_ring(gpu_budget *b, struct tdm_gpu_express *x, int join);
/* A ring's launches started so far (*started; NULL: not wanted) and the number of the oldest one
 * still running (*oldest; UINT64_MAX: none), its launches' ends looked at first (configs.cu). */
void tdm__gpu_express_launches(struct tdm_gpu_express *x, uint64_t *started, uint64_t *oldest);

#endif
