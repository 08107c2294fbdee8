/* The hybrid engine, after Jorgensen et al. (../shared/papers/001): CPU threads
 * walk the bounding-volume test trees, the GPU does the tests.
 *
 * Each CPU thread (a pool made by tdm_hybrid_create; the caller of
 * tdm_hybrid_run works too) takes tasks from a shared counter and traverses
 * them breadth-first with simultaneous descent (tdm_bvtt_children, as the CPU
 * engine). Instead of testing a node pair itself it appends it to a workpile:
 * OBB pairs in one section, leaf (triangle) pairs in another. A workpile is
 * shipped to the GPU on one of several CUDA streams (pinned host buffers, async
 * copy in, one kernel per section that tests every entry against the resident
 * trees, async copy of one result byte per entry back: 1 for overlapping boxes,
 * a 4-bit mask of the intersecting triangle pairs of a leaf pair) while the
 * thread expands and refills its other workpile, so transfers, kernels and
 * traversal overlap. When a workpile's results come back the thread expands
 * the overlapping pairs into the next level and counts the intersecting
 * triangle pairs as tdm_collide does; a bool task retires at its first
 * intersecting triangle pair, a contacts task at the first pair beyond its cap.
 * Pending pairs are taken newest first, so a thread's memory stays bounded.
 *
 * The trees must be resident (tdm_gpu_mesh_upload) and the host trees they came
 * from alive: the host walks the host tree's topology, the device reads the same
 * nodes from its copy. All functions return 0 or a negative TDM_E*; without CUDA
 * tdm_hybrid_create returns TDM_ENODEV. One thread at a time uses a tdm_hybrid,
 * and not while the tdm_gpu it was made from runs. */
#ifndef TDM_GPU_HYBRID_H
#define TDM_GPU_HYBRID_H

#include "gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdm_hybrid_config {
    int threads;             /* CPU traversal threads, the caller's included; 0: one per core */
    int streams;             /* CUDA streams, shared among the threads (1..16, default 16) */
    uint32_t workpile_pairs; /* entries per workpile shipped to the GPU (1..2^22, default 65536);
                                each thread has two workpiles in flight */
} tdm_hybrid_config;

tdm_hybrid_config tdm_hybrid_config_default(void);

typedef struct tdm_hybrid tdm_hybrid;

/* Uses g's device and memory budget: its device buffers (two workpiles per
 * thread, 13 bytes per entry, at create; the task table, 192 bytes per task of
 * a run up to 2^18, grown by tdm_hybrid_run) are accounted there and given
 * back by tdm_hybrid_destroy; the pinned host copies are not device memory and
 * are not. TDM_EGPUMEM when they exceed the budget, TDM_EINVAL for a config
 * out of range. g must outlive it. */
int tdm_hybrid_create(tdm_gpu *g, const tdm_hybrid_config *cfg, tdm_hybrid **out);
void tdm_hybrid_destroy(tdm_hybrid *h);

typedef struct tdm_hybrid_task {
    const tdm_bvh *a, *b;         /* host trees: the traversal walks these */
    const tdm_gpu_mesh *ga, *gb;  /* their device copies: the tests read these */
    tdm_xform b_in_a;             /* maps B's mesh frame into A's */
    tdm_mode mode;
    uint32_t max_pairs;           /* contacts mode: cap (>= 1) */
} tdm_hybrid_task;

/* results[i] answers tasks[i] as tdm_collide would (same colliding, n_pairs,
 * truncated; `first` is an intersecting pair, as mesh triangle indices, not
 * necessarily the CPU engine's), with box_tests counting the box entries and
 * tri_tests the triangle pairs tested for that task. Runs of more than 2^18
 * tasks are done in pieces of that size. Blocks. On a CUDA error every thread
 * stops, the call returns TDM_EGPU (TDM_EGPUMEM for an allocation) and results
 * are undefined; the engine stays usable unless the error poisoned the context,
 * after which every call returns TDM_EGPU. */
int tdm_hybrid_run(tdm_hybrid *h, const tdm_hybrid_task *tasks, size_t n, tdm_collide_result *results);

typedef struct tdm_hybrid_stats {
    uint64_t runs, tasks;
    uint64_t workpiles;             /* shipped to the GPU */
    uint64_t box_entries, tri_entries; /* entries tested: (box + tri) / workpiles is the mean size */
    double seconds;                 /* wall time inside tdm_hybrid_run */
    double gpu_seconds;             /* summed kernel time (CUDA events around each workpile's
                                       kernels; on a shared stream it may include other
                                       threads' work queued between them) */
} tdm_hybrid_stats;
void tdm_hybrid_get_stats(const tdm_hybrid *h, tdm_hybrid_stats *s);

#ifdef __cplusplus
}
#endif

#endif
