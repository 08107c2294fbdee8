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
 * scan (the scan's total counts past any capacity), and a batch whose frontier
 * outgrows its buffer is re-run with larger buffers, or in halves once the
 * memory budget is reached, never truncated.
 *
 * A run is cut into chunks that are in flight at once on several CUDA streams:
 * while the GPU traverses one chunk, the host fills the next one's tasks (a team
 * of fill_threads host threads builds them (tdm_gpu_run_fed), writes the buffers
 * and reads the results back)
 * and the copy engines move a third's, so host work, copies and kernels overlap.
 *
 * Lanes: tdm_gpu_create_lane makes another tdm_gpu on the same device that
 * shares the first one's memory budget and resident meshes but has its own
 * streams, buffers and host team, so that two threads can each have a run in
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
#include "../geom/query.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdm_gpu_config {
    int device;              /* CUDA device index */
    uint64_t memory_budget;  /* bytes of device memory Tandem may hold: meshes plus scratch */
    uint64_t frontier_pairs; /* initial frontier capacity per stream, in node pairs; grows within the budget */
    int streams;             /* batches in flight at once, each on its own CUDA stream (1..8) */
    uint64_t chunk_tasks;    /* tasks per in-flight batch; 0 picks from the run's size */
    int fill_threads;        /* host threads writing a batch's task buffers (1..16); 0: min(8, cores) */
    int traversal;           /* TDM_GPU_TRAVERSE_PAIRS (default), _BLOCKS or _WIDE, below */
} tdm_gpu_config;

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

/* *why (optional) receives a static description when TDM_ENODEV is returned. */
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

typedef struct tdm_gpu_task {
    const tdm_gpu_mesh *a, *b; /* borrowed; must outlive the call */
    tdm_xform b_in_a;          /* maps B's mesh frame into A's */
    tdm_mode mode;
    uint32_t max_pairs;        /* contacts mode: cap (>= 1) */
} tdm_gpu_task;

/* Sizes the per-task buffers for batches of up to max_tasks, loads the
 * kernels and makes the CUDA graphs of the levels, so that the first run pays
 * for none of them. Optional. */
int tdm_gpu_prepare(tdm_gpu *g, size_t max_tasks);

/* Runs n tasks; results[i] answers tasks[i] exactly as tdm_collide would, except
 * that `first` may be a different intersecting pair and the work counters
 * (box_tests, tri_tests) are 0. Blocks until done. */
int tdm_gpu_run(tdm_gpu *g, const tdm_gpu_task *tasks, size_t n, tdm_collide_result *results);

/* tdm_gpu_run with the tasks written as the run goes: feed(arg, lo, hi) must
 * write tasks[lo..hi) and return 0. Each task is fed once, just before the
 * engine first needs it, by the host threads that copy tasks to the device (so
 * feed is called from several threads at once, on disjoint ranges): building a
 * batch's tasks is then spread over those threads and overlaps the device's work
 * on earlier tasks. A non-zero return ends the run with TDM_ECANCELED (results
 * undefined). */
int tdm_gpu_run_fed(tdm_gpu *g, tdm_gpu_task *tasks, size_t n, tdm_collide_result *results,
                    int (*feed)(void *arg, size_t lo, size_t hi), void *arg);

typedef struct tdm_gpu_stats {
    uint64_t device_bytes;    /* device memory held: meshes + scratch, of g and all its lanes */
    uint64_t mesh_bytes;
    uint64_t runs, tasks, iterations, reruns; /* these and the rest: this lane's */
    uint64_t pairs;           /* node pairs and leaf pairs tested, over all iterations */
    double seconds;           /* wall time inside tdm_gpu_run */
} tdm_gpu_stats;
void tdm_gpu_get_stats(const tdm_gpu *g, tdm_gpu_stats *s);

#ifdef __cplusplus
}
#endif

#endif
