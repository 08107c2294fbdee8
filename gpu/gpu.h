/* The GPU-resident engine (after Damkjaer & Erleben): meshes live in device
 * memory; a batch of pose queries is traversed breadth-first, all queries at
 * once, with the frontier of node pairs on the device.
 *
 * Each tree's nodes are kept in a blocked copy (siblings adjacent; see
 * TDM_GPU_TRAVERSE_PAIRS below). Each iteration tests every frontier pair's boxes
 * (one thread per pair, or four per pair of sibling blocks), turns
 * the per-pair results into output offsets with a prefix sum (CUB), writes the
 * children of overlapping pairs as the next frontier and the overlapping leaf
 * pairs as a leaf workpile, then tests that workpile's triangle pairs in bulk:
 * a filter (one thread per leaf pair, few registers) rejects the pairs the plane
 * tests' floating-point stage proves apart and appends the others to a triangle
 * workpile, on which the exact test runs (one thread per pair). A bool query
 * retires at its first intersecting triangle pair: its remaining pairs are
 * dropped at the next box test. Capacities are checked on the host after each
 * scan (the scan's total counts past any capacity), and a slot whose frontier
 * outgrows its buffer says so: its caller re-runs the chunk with larger buffers
 * (tdm_gpu_grow), or in halves once the memory budget is reached, never
 * truncated.
 *
 * A lane has several slots, each a CUDA stream with its own buffers: the
 * scheduler's GPU engine (workpile/gpu_engine.c) cuts a run into chunks, fills
 * one slot's inputs while the GPU traverses another's chunk and the copy engines
 * move a third's, so host work, copies and kernels overlap. gpu/ only moves
 * data and launches work: it has no threads of its own and never calls back.
 *
 * Lanes: tdm_gpu_create_lane makes another tdm_gpu on the same device that
 * shares the first one's memory budget and resident meshes but has its own
 * slots (streams and buffers), so that two threads can each have a run in
 * flight at once: one run's host work (building tasks, reading results, and
 * whatever its caller does between runs) then overlaps the other's kernels.
 *
 * All functions return 0 or a negative TDM_E* code. Without CUDA (or without a
 * device) tdm_gpu_create returns TDM_ENODEV. One tdm_gpu is used by one thread at
 * a time (each lane by its own); uploads, frees and statistics may come from any
 * thread as long as no run on the same tdm_gpu is in progress. */
#ifndef TDM_GPU_GPU_H
#define TDM_GPU_GPU_H

#include "../geom/bvh.h"
#include "../geom/kin.h"
#include "../geom/solid.h"
#include "../geom/query.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdm_gpu_config {
    int device;              /* CUDA device index */
    uint64_t memory_budget;  /* bytes of device memory Tandem may hold: meshes plus scratch */
    uint64_t frontier_pairs; /* initial frontier capacity per stream, in node pairs; grows within the budget */
    int streams;             /* batches in flight at once, each on its own CUDA stream (1..8) */
    int traversal;           /* TDM_GPU_TRAVERSE_PAIRS (default), _BLOCKS or _WIDE, below */
    uint32_t small_tasks;    /* a run of at most this many tasks (PAIRS traversal) starts depth first: one
                                thread per task, one launch, the levels only for what it hands over
                                (0: never; default TDM_GPU_SMALL_TASKS) */
    uint32_t small_budget;   /* node pairs each thread of such a run tests before it hands the rest of
                                its task over to the levels (default TDM_GPU_SMALL_BUDGET; 0 hands every
                                task over untested) */
    uint64_t program_cache;  /* bytes each lane keeps for robot scenes' programs ("resident programs"
                                below; default TDM_GPU_PROGRAM_CACHE; 0: none kept) */
} tdm_gpu_config;

#define TDM_GPU_PROGRAM_CACHE (16ull << 20)

/* Small runs: a run of a few tasks (a planner's one state) level by level costs a
 * launch of every kernel per BVTT level and a look from the host every few
 * levels, most of its time; depth first it is one launch and one look. The
 * budget bounds what one thread may take (a task with much work goes on in the
 * levels, in parallel). One thread walking a task alone waits on each node's
 * load in turn, so from some hundreds of tasks the levels are faster: with 64
 * RRTConnect planners on the H100 (bench/results/ompl_rrt_batches.md), runs of
 * ~30 tasks took 0.066 ms on the device depth first against 0.107 level by
 * level, runs of ~1 300 tasks 0.334 against 0.197, of ~6 500 0.94 against
 * 0.26 (budget 512). The budget is what a heavy task (two dense meshes in
 * near contact, thousands of node pairs) may add to a small run before the
 * levels take it over in parallel: each node pair is a dependent load of one
 * thread, ~0.5-1 us, so 64 pairs bound that to some tens of microseconds, while
 * a Panda link against a box mostly needs far fewer (not yet measured at 64:
 * TDM_GPU_SMALL_BUDGET to compare). */
#define TDM_GPU_SMALL_TASKS 256
#define TDM_GPU_SMALL_BUDGET 64

/* How the traversal kernel maps threads to node pairs; all give the same
 * answers. PAIRS and BLOCKS run on the blocked node layout: each tree is copied
 * to the device breadth first, the two children of a node adjacent in one
 * 128-byte line (a block). PAIRS: one thread per node pair, a descent's child
 * pairs side by side, so neighbouring threads read the same blocks in shared
 * memory transactions. BLOCKS: four threads per pair of blocks, each loading one
 * node into shared memory for all four (Damkjaer & Erleben's blocked traversal
 * on binary blocks); slower where the descent often splits one side only, which
 * idles half of the four. WIDE: Damkjaer & Erleben's four-wide blocked
 * hierarchy, a third copy of each tree (uploaded only for this traversal) in
 * which a node's block holds its four grandchildren (a child that is a leaf
 * stands in for its two, beside an imaginary node); sixteen threads per pair of
 * blocks, eight of them loading one node each into shared memory, every one
 * testing one of the 4 x 4 pairs, in half as many levels. */
enum { TDM_GPU_TRAVERSE_PAIRS = 0, TDM_GPU_TRAVERSE_BLOCKS = 1, TDM_GPU_TRAVERSE_WIDE = 2 };

tdm_gpu_config tdm_gpu_config_default(void);

typedef struct tdm_gpu tdm_gpu;
typedef struct tdm_gpu_mesh tdm_gpu_mesh;

/* CUDA devices this machine has (0 without CUDA, a driver or a device); never
 * fails. Device indices are 0 .. count - 1. */
int tdm_gpu_device_count(void);
/* Device `device`'s total memory in bytes; 0 when it cannot be read. */
uint64_t tdm_gpu_device_memory(int device);

/* *why (optional) receives a static description when TDM_ENODEV is returned.
 * Each tdm_gpu_create makes an independent engine, with its own budget, slots
 * and meshes, also when another one runs on the same device (the scheduler's
 * device list may name a device twice: two engines sharing one GPU and its CUDA
 * context, so that a sticky error on one is seen by both). */
int tdm_gpu_create(const tdm_gpu_config *cfg, tdm_gpu **out, const char **why);
void tdm_gpu_destroy(tdm_gpu *g);

/* A lane of g (see above): same device and configuration, memory budget and
 * meshes shared with g and its other lanes (a mesh uploaded through one may be
 * used in tasks run on any, and freed through any). Destroy it like any tdm_gpu,
 * in any order with g. */
int tdm_gpu_create_lane(tdm_gpu *g, tdm_gpu **out);

/* Copies a tree to the device. TDM_EGPUMEM when it would exceed the budget or
 * the device is full; nothing is held then. The tree is only read. */
int tdm_gpu_mesh_upload(tdm_gpu *g, const tdm_bvh *bvh, tdm_gpu_mesh **out);
/* Frees a mesh's device memory. No run using it may be in progress. */
void tdm_gpu_mesh_free(tdm_gpu *g, tdm_gpu_mesh *m);
/* Frees a copy no kernel ever read (an upload rolled back): its place is free at once, and a chunk of
 * the tree arena made for it alone goes back to the device instead of staying as a spare, so the
 * memory held is as before the upload. */
void tdm_gpu_mesh_discard(tdm_gpu *g, tdm_gpu_mesh *m);
/* A copy's triangles (0 for NULL). */
uint32_t tdm_gpu_mesh_triangles(const tdm_gpu_mesh *m);

/* Sizes every slot's task buffers for chunks of up to tasks_per_slot tasks,
 * loads the kernels and makes the CUDA graphs of the levels, so that the first
 * run pays for none of them. Optional. */
int tdm_gpu_prepare(tdm_gpu *g, size_t tasks_per_slot);

/* ---- a lane's slots, driven by the scheduler's GPU engine (workpile/gpu_engine.c) ----
 *
 * A lane has tdm_gpu_slots(g) slots, each a CUDA stream with its own frontier
 * and task buffers. The caller fills a slot's pinned inputs (one per task, and a
 * table of mesh pairs that consecutive tasks share), starts it, and steps it:
 * each step waits for the slot's last group of levels and queues the next (or
 * the copy of its results), so that several slots are in flight while the host
 * fills another. Capacities count past their end: a slot whose frontier
 * overflowed reports it, and the caller re-runs its range after tdm_gpu_grow or
 * in halves. No callback: gpu/ never calls its caller. */

/* What the host writes per task: the transform and an index into the slot's
 * pair table; the device derives the rest. */
typedef struct tdm_gpu_input {
    tdm_xform x;        /* B's mesh frame -> A's */
    uint32_t pair;      /* index into the pair table */
    uint32_t mode;      /* tdm_mode */
    uint32_t cap;       /* contacts cap (>= 1; 1 in bool mode) */
    uint32_t pad;
} tdm_gpu_input;

/* One entry of the pair table: two resident meshes, as device pointers in the
 * layout this lane's traversal reads (made by tdm_gpu_pair_of). */
typedef struct tdm_gpu_pair {
    const tdm_bvh_node *an, *bn;
    const float *at, *bt;
    const uint32_t *aid, *bid;
    float ra, rb;
} tdm_gpu_pair;

/* A task's answer as the device leaves it. */
typedef struct tdm_gpu_result {
    uint32_t colliding, truncated, count, done;
    uint32_t first_a, first_b; /* mesh triangle indices of an intersecting pair */
} tdm_gpu_result;

enum { TDM_GPU_SLOT_BUSY = 0, TDM_GPU_SLOT_DONE = 1, TDM_GPU_SLOT_OVERFLOW = 2 };

/* Prepares the calling thread to drive g (sets its CUDA device). TDM_EGPU once
 * the context is poisoned. */
int tdm_gpu_begin(tdm_gpu *g);
int tdm_gpu_slots(const tdm_gpu *g);
/* The most tasks a slot takes (its frontier must hold every task's root pair). */
uint64_t tdm_gpu_slot_max_tasks(const tdm_gpu *g);
void tdm_gpu_pair_of(const tdm_gpu *g, const tdm_gpu_mesh *a, const tdm_gpu_mesh *b, tdm_gpu_pair *out);
/* Slot k's pinned inputs and pair table, room for n tasks (and n pairs),
 * growing its buffers within the budget. TDM_EGPUMEM, TDM_EGPU. */
int tdm_gpu_slot_buffers(tdm_gpu *g, int k, size_t n, tdm_gpu_input **in, tdm_gpu_pair **pairs);
/* Starts slot k on in[0 .. n): copies the pair table's pieces [runs[r][0],
 * runs[r][0] + runs[r][1]) and the inputs, and queues the roots and the first
 * group of levels. */
int tdm_gpu_slot_start(tdm_gpu *g, int k, size_t n, const size_t (*runs)[2], int n_runs);
/* Waits for slot k's last step; then queues its next group of levels
 * (TDM_GPU_SLOT_BUSY), or finds it finished (TDM_GPU_SLOT_DONE: results readable
 * through tdm_gpu_slot_results until it is started again) or overflowed
 * (TDM_GPU_SLOT_OVERFLOW: re-run the range). A negative TDM_E* on an error. */
int tdm_gpu_slot_step(tdm_gpu *g, int k);
/* 1 when slot k's last step has finished on the device (tdm_gpu_slot_step will
 * not wait), 0 while it runs; a negative TDM_E* on an error. Does not wait. */
int tdm_gpu_slot_ready(tdm_gpu *g, int k);
const tdm_gpu_result *tdm_gpu_slot_results(const tdm_gpu *g, int k);
/* ---- batches of robot configurations (issue 13) ----------------------------------
 *
 * A robot in a scene as the device runs it: its kinematics (geom/kin.h), its
 * checked pairs with their culling spheres and their solid rule, the fixed
 * objects' poses. A slot started on n configurations computes every movable
 * object's pose (one thread per configuration: geom/kin.h's forward kinematics),
 * culls every (configuration, check) on the bounding spheres (geom/cull.h), lists
 * the kept ones as tasks with a prefix sum (CUB), traverses them like any chunk
 * and folds each configuration's tasks in check order (the first colliding check,
 * a free one with a solid partner tested for containment: geom/solid.h; contacts
 * summed and capped), so that neither poses nor tasks cross the bus: n
 * configurations in, n answers out. The tasks a run lists are capped by the
 * slot's task room; a configuration whose tasks did not all fit comes back not
 * done (always a suffix of the run's configurations) and is run again by the
 * caller. A run may hold the configurations of several robots (robot scenes:
 * many planners' requests on their own worlds), each configuration naming its
 * robot. A robot's program (its arrays: tens of KB a robot scene) is either
 * copied with each run or, when the robot has a key, kept on the lane
 * (tdm_gpu_configs_programs: "resident programs" below) and named by the runs
 * that use it. A run of few
 * (configuration, check) entries traverses in one launch (block runs: each block
 * its tasks' levels in its own buffers), handing what outgrows it to the levels,
 * and folds at once: one look from the host when nothing was handed over. A slot's scratch for these runs
 * is sized at its first one for the largest run the robot may make
 * (tdm_gpu_configs_max: about 4M (configuration, check) entries, tens of MB) and
 * kept: growing it would free and allocate device memory, which waits for the
 * whole device. */

/* One checked pair. Pose entries: e < n_movable is movable slot e (its pose
 * from the configuration), else fixed entry e - n_movable. */
typedef struct tdm_gpu_check {
    uint32_t a, b;        /* the task's A and B, as pose entries (culling uses the same entries) */
    uint32_t oa, ob;      /* their object indices (the solids table) */
    uint32_t a_at_origin; /* A is fixed at the identity: B's pose is B in A's frame */
    uint32_t solid;       /* TDM_SOLID_A_IN_B | TDM_SOLID_B_IN_A (geom/solid.h), 0: surface only */
    double rsum;          /* culling: the two spheres' radii, summed */
} tdm_gpu_check;

typedef struct tdm_gpu_robot {
    const tdm_kin *kin;                /* n_elems movable objects, in slot order */
    uint32_t n_fixed;
    const tdm_xform *fixed_pose;       /* by fixed entry */
    const double (*fixed_centre)[4];   /* culling: world centre and its L1 norm, by fixed entry */
    const double (*slot_centre)[3];    /* culling: by movable slot, in the object's frame */
    uint32_t n_checks;                 /* >= 1 */
    const tdm_gpu_check *checks;       /* in check order */
    const tdm_gpu_pair *pairs;         /* by check: its two meshes (tdm_gpu_pair_of) */
    uint32_t n_objects;                /* solids: by object index; NULL when no object is solid */
    const tdm_solid_obj *solids;
    const tdm_dvec3 *reps;             /* the solids' representatives */
    uint64_t n_reps;
    /* resident programs (tdm_gpu_configs_programs); all 0 / NULL: the program goes with each run */
    uint64_t key;        /* the program's identity, never reused for another (the scheduler: the scene's
                            serial); 0: not kept */
    uint64_t epoch;      /* the state of the world its arrays were made in (the scheduler: the registry's
                            epoch when the pairs' trees were looked up); it stays valid while that holds */
    const void *program; /* set by tdm_gpu_configs_programs: the lane's copy this run uses */
} tdm_gpu_robot;

/* Resident programs. A lane keeps the programs of keyed robots on the device, up
 * to tdm_gpu_config.program_cache bytes (tandemd's --gpu-program-cache; the
 * environment's TDM_GPU_PROGRAM_CACHE_KB, when set, overrides it: A/B runs), in
 * memory counted against the budget; the least recently used make room. A copy is used
 * only for the same key, the same epoch and the same kinematics (compared whole),
 * so a scene deleted or a tree that left the device is never run from a stale
 * copy.
 *
 * tdm_gpu_program_resident: 1 when the lane holds a valid copy for (key, epoch,
 * kin): the caller may then pass the robot with its key, epoch, kin and n_checks
 * alone (checks NULL), and no pairs. */
int tdm_gpu_program_resident(tdm_gpu *g, uint64_t key, uint64_t epoch, const tdm_kin *kin);
/* Before a call's runs, with no slot of the lane running: sets robots[r].program
 * for each keyed robot, uploading the programs the lane does not hold (those
 * given whole); a robot given whole that does not fit the cache is copied with
 * each run as before. TDM_ECANCELED when a robot given without its arrays has
 * no copy (the caller did not check tdm_gpu_program_resident), TDM_EGPU. */
int tdm_gpu_configs_programs(tdm_gpu *g, tdm_gpu_robot *robots, uint32_t n);

/* A configuration's answer. */
typedef struct tdm_gpu_config_answer {
    uint32_t check;     /* the first colliding check in check order, or UINT32_MAX (free) */
    uint32_t contacts;  /* contacts mode: triangle pairs over its checks, capped at cap (bool: 0) */
    uint32_t truncated; /* contacts mode: more than cap */
    uint32_t done;      /* 0: its tasks did not fit the run: run it again */
} tdm_gpu_config_answer;

/* The most configurations one run of slot k may take for a robot of n_q values
 * and n_checks checks (its scratch is sized for them). */
size_t tdm_gpu_configs_max(const tdm_gpu *g, uint32_t n_q, uint32_t n_checks);
/* Slot k's pinned room for n configurations of n_q values each (n at most
 * tdm_gpu_configs_max), growing its scratch within the budget. TDM_EGPUMEM,
 * TDM_EGPU. */
int tdm_gpu_slot_configs(tdm_gpu *g, int k, size_t n, uint32_t n_q, double **configs);
/* Starts slot k on the n configurations written to its room, configuration i of
 * robot robots[robot_of[i]] (robot_of NULL: every one of robots[0]; several
 * robots: the robot scenes of several clients' requests in one run, every one
 * with the same n_q), in mode (tdm_mode) with contacts cap `cap` (1 in bool
 * mode); step it as any slot. The run's scratch is laid out for the largest of
 * the robots it uses (links, movable objects, checks): n must be at most
 * tdm_gpu_configs_max for those checks. TDM_EINVAL for an empty run, one past
 * the room, or robots of different n_q. */
int tdm_gpu_slot_start_configs(tdm_gpu *g, int k, const tdm_gpu_robot *robots, const uint32_t *robot_of, size_t n,
                               uint32_t mode, uint32_t cap);
/* After TDM_GPU_SLOT_DONE of a configs run: its n answers, and in *tasks the
 * tasks it traversed. */
const tdm_gpu_config_answer *tdm_gpu_slot_config_answers(tdm_gpu *g, int k, uint64_t *tasks);

/* ---- the express ring (configs.cu; tandemd's --express-configs) ------------------
 *
 * A few configurations answered without a launch or a queue: blocks of a resident kernel
 * (fused_kernel's work, one block per configuration) take items from a ring in mapped
 * pinned memory as the host publishes them, and write each answer with a tag the host
 * polls; one thread of the launch alone reads the ring across the bus (a doorbell) and the
 * others wait on its copy in device memory. A launch's blocks leave after 2 ms (so that a
 * cudaFree elsewhere, which waits for the whole device, waits that long at most);
 * tdm_gpu_express_keep launches the next one, on a second stream, from half that on while
 * items wait, and none while none does. Its streams are its own.
 * Programs (tdm_gpu_robot, given whole) are uploaded into the ring's own table, keyed
 * as resident programs are, and referenced by the items that name them; a program replaces
 * an unreferenced one while the launches run (none is stopped for it: configs.cu says how a
 * block never reads a replaced program). TDM_GPU_EXPRESS_PROGS (tests) gives the table
 * fewer than its 256 places. A configuration
 * whose frontier outgrows its block's room comes back with `overflow` set: the caller
 * runs it the pooled way. Robots of more than EXPRESS_VALUES values, EXPRESS_LINKS links,
 * EXPRESS_ELEMS elements or 1 024 checks are refused (TDM_EINVAL). Thread-safe: submit,
 * poll and the programs from any thread; keep from any (one at a time does the work). */
#define TDM_GPU_EXPRESS_VALUES 32u
typedef struct tdm_gpu_express tdm_gpu_express;
typedef struct tdm_gpu_express_answer {
    uint32_t check;      /* the first colliding check, or UINT32_MAX */
    uint32_t contacts;   /* contacts mode, capped */
    uint16_t truncated;  /* contacts mode: over the cap */
    uint16_t overflow;   /* its pairs outgrew the block's room: not answered, run it elsewhere */
    uint32_t tag;        /* written last: the item's ticket + 1, low 32 bits */
} tdm_gpu_express_answer;

/* On g's device (its budget counts the ring's scratch and its programs' arena:
 * TDM_GPU_EXPRESS_ARENA bytes, 64 MiB by default): `blocks` resident blocks, a ring of `items`
 * configurations (a power of two). TDM_EGPU, TDM_EGPUMEM, TDM_ENOMEM; TDM_EINVAL with
 * TDM_GPU_MESH_POOLED=1 (a pooled tree could be read stale by a launch, see configs.cu) or an
 * arena of less than 256 bytes. */
int tdm_gpu_express_create(tdm_gpu *g, uint32_t blocks, uint32_t items, tdm_gpu_express **out);
/* Stops the kernel, waits for it, frees. NULL is a no-op. */
void tdm_gpu_express_destroy(tdm_gpu_express *x);
/* The program of (key, epoch, kin) in *id with a reference taken, if the table holds it: 1,
 * else 0. */
int tdm_gpu_express_find(tdm_gpu_express *x, uint64_t key, uint64_t epoch, const tdm_kin *kin, uint32_t *id);
/* Uploads robot r (whole, keyed) into the table, replacing a stale entry of its key, else a
 * free one, else the least recently used unreferenced one, and takes a reference in *id;
 * waits for its upload, not for the ring's launches (submitters do not wait for it). 0; 1 when
 * another caller uploaded it since this one's find (a reference taken, nothing uploaded);
 * TDM_EINVAL (too large for a block),
 * TDM_ERANGE (larger than the whole arena), TDM_EAGAIN (the table is full of referenced
 * programs, or the arena has no room until launches end: unreferenced programs were evicted
 * for it), TDM_EGPU. */
int tdm_gpu_express_program(tdm_gpu_express *x, const tdm_gpu_robot *r, uint32_t *id);
/* Drops a reference taken by find or program. */
void tdm_gpu_express_release(tdm_gpu_express *x, uint32_t id);
/* Publishes n configurations (n_q values each, the program's) of program id in mode with cap
 * (1 in bool mode): their first ticket in *ticket. TDM_EAGAIN when the ring has no room for
 * them now (nothing published), TDM_EINVAL for n or n_q out of range, TDM_EGPU. */
int tdm_gpu_express_submit(tdm_gpu_express *x, uint32_t id, const double *q, uint32_t n, uint32_t n_q, uint32_t mode,
                           uint32_t cap, uint64_t *ticket);
/* The n answers from ticket into out: 1 when all are in (their ring places are free again), 0
 * not yet, TDM_EGPU when the kernel failed. Call once more after 1 never. */
int tdm_gpu_express_poll(tdm_gpu_express *x, uint64_t ticket, uint32_t n, tdm_gpu_express_answer *out);
/* Launches the kernel again when it has left and items wait: the polling thread's call. 0,
 * or TDM_EGPU once the kernel failed. */
int tdm_gpu_express_keep(tdm_gpu_express *x);
/* A submitter's call: keep, only when no launch is known to run (no CUDA call otherwise). */
int tdm_gpu_express_kick(tdm_gpu_express *x);
/* Launches of the kernel so far, and configurations answered. */
void tdm_gpu_express_counts(const tdm_gpu_express *x, uint64_t *launches, uint64_t *answered);

/* With no slot running: doubles the frontier buffers within the budget. 1 grown,
 * 0 at the budget, or TDM_EGPU. */
int tdm_gpu_grow(tdm_gpu *g);
/* After an error: waits for every slot, leaving none running. */
void tdm_gpu_abort(tdm_gpu *g);

typedef struct tdm_gpu_stats {
    uint64_t device_bytes;    /* device memory held: meshes + scratch, of g and all its lanes */
    uint64_t mesh_bytes;
    uint64_t arena_chunks;    /* the trees' arena's chunks held (resident.h) */
    uint64_t arena_bytes;     /* ... their bytes no tree holds (free, or freed and waiting for the express
                                 ring's launches): in device_bytes, not in mesh_bytes */
    uint64_t arena_made, arena_released; /* chunks allocated and given back to the device so far: a
                                            release is a cudaFree, which waits for the device */
    uint64_t budget_bytes;    /* the memory budget (gpu-memory, or 80% of the device) */
    uint64_t runs, tasks, iterations, reruns; /* these and the rest: this lane's; runs: chunks started,
                                                 reruns: of them after an overflow */
    uint64_t pairs;           /* node pairs and leaf pairs tested, over all iterations */
    uint64_t small_runs;      /* runs started depth first (small_tasks) */
    uint64_t small_handovers; /* ... of them that handed pairs over to the levels */
    uint64_t fused_runs;      /* configs runs in one kernel (configs.cu, fused_kernel) */
    uint64_t config_start_ns; /* host time in tdm_gpu_slot_start_configs: packing the run's programs,
                                 queueing its upload and launches */
    uint64_t programs_uploaded, programs_reused; /* tdm_gpu_configs_programs: robots whose program it
                                                    uploaded to the lane, and those it found there */
    uint64_t program_bytes;   /* the lane's resident programs' bytes now */
} tdm_gpu_stats;
void tdm_gpu_get_stats(const tdm_gpu *g, tdm_gpu_stats *s);

#ifdef __cplusplus
}
#endif

#endif
