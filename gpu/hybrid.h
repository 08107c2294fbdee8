/* The hybrid engine, after Jorgensen et al. (../shared/papers/001): CPU threads
 * walk the bounding-volume test trees, the GPU does the tests.
 *
 * The hybrid has `workers` workers but no threads: its caller (the scheduler's
 * hybrid engine, workpile/hybrid_engine.c) starts a piece of work with
 * tdm_hybrid_begin, runs tdm_hybrid_work(h, k) for every worker k on threads of
 * its own (its pool), and collects the outcome with tdm_hybrid_end. Each worker
 * takes tasks from a shared counter and traverses
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
 * tdm_hybrid_create returns TDM_ENODEV. One piece at a time runs on a
 * tdm_hybrid, and not while the tdm_gpu it was made from runs. */
#ifndef TDM_GPU_HYBRID_H
#define TDM_GPU_HYBRID_H

#include "gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdm_hybrid_config {
    int workers;             /* traversal workers (1..1024), each with two workpiles; 0: one per core */
    int streams;             /* CUDA streams, shared among the workers (1..16, default 16) */
    uint32_t workpile_pairs; /* entries per workpile shipped to the GPU (1..2^22, default 65536);
                                each worker has two workpiles in flight */
} tdm_hybrid_config;

tdm_hybrid_config tdm_hybrid_config_default(void);

typedef struct tdm_hybrid tdm_hybrid;

/* Uses g's device and memory budget: its device buffers (two workpiles per
 * worker, 13 bytes per entry, at create; the task table, 192 bytes per task of
 * a piece, grown by tdm_hybrid_begin) are accounted there and given
 * back by tdm_hybrid_destroy; the pinned host copies are not device memory and
 * are not. TDM_EGPUMEM when they exceed the budget, TDM_EINVAL for a config
 * out of range. g must outlive it. */
int tdm_hybrid_create(tdm_gpu *g, const tdm_hybrid_config *cfg, tdm_hybrid **out);
void tdm_hybrid_destroy(tdm_hybrid *h);

/* The most tasks a piece may hold: bounds the task table (192 bytes a task). */
#define TDM_HYBRID_PIECE (1u << 18)

int tdm_hybrid_workers(const tdm_hybrid *h);

/* Starts a piece: tasks[0 .. n), n <= TDM_HYBRID_PIECE, each with its host trees
 * (a, b) and their device copies (ga, gb, resident on the tdm_gpu h was made
 * from); results[i] will answer tasks[i] as tdm_collide would (same colliding,
 * n_pairs, truncated; `first` is an intersecting pair, not necessarily the CPU
 * engine's), with box_tests counting the box entries and tri_tests the triangle
 * pairs tested for that task. tasks and results are borrowed until
 * tdm_hybrid_end. TDM_EGPU once the context is poisoned, TDM_EGPUMEM. */
int tdm_hybrid_begin(tdm_hybrid *h, const tdm_task *tasks, size_t n, tdm_collide_result *results);
/* Worker k's part of the piece (k < tdm_hybrid_workers(h)): every worker must
 * run once per piece, on any threads, at the same time or not. */
void tdm_hybrid_work(tdm_hybrid *h, int k);
/* After every worker has returned: 0, or the piece's first error (TDM_EGPU,
 * TDM_EGPUMEM, TDM_ENOMEM: results undefined). On a CUDA error every worker
 * stops early; the engine stays usable unless the error poisoned the context. */
int tdm_hybrid_end(tdm_hybrid *h);

typedef struct tdm_hybrid_stats {
    uint64_t runs, tasks;
    uint64_t workpiles;             /* shipped to the GPU */
    uint64_t box_entries, tri_entries; /* entries tested: (box + tri) / workpiles is the mean size */
    double seconds;                 /* wall time from tdm_hybrid_begin to tdm_hybrid_end */
    double gpu_seconds;             /* summed kernel time (CUDA events around each workpile's
                                       kernels; on a shared stream it may include other
                                       threads' work queued between them) */
} tdm_hybrid_stats;
void tdm_hybrid_get_stats(const tdm_hybrid *h, tdm_hybrid_stats *s);

#ifdef __cplusplus
}
#endif

#endif
