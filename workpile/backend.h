/* The engine interface: what the scheduler (sched.h) asks of an engine, and the
 * three engines behind it.
 *
 *   CPU engine          cpu_engine.h: stack traversal on the pool's threads
 *   GPU-resident engine gpu_engine.h over gpu/gpu.h: breadth-first traversal of
 *                       every task at once on the device (Damkjaer & Erleben)
 *   hybrid engine       hybrid_engine.h over gpu/hybrid.h: the pool's threads
 *                       traverse, the device tests the workpiles they gather
 *                       (Jorgensen et al.)
 *
 * An engine is made once, used by up to `lanes` threads at once (lane k by one
 * thread at a time), and destroyed when no run is in progress. It holds the
 * copies it needs of the trees it is given (tdm_backend_ops.mesh_add: a device
 * upload, or nothing on the CPU); the scheduler's registry (registry.h) keeps
 * them per tree and puts them in the tasks (tdm_task.ga/gb).
 *
 * Every engine's answers for a task are tdm_collide's (cpu_engine.h), except
 * that `first` may be another intersecting pair and the GPU engines leave the
 * work counters at 0 (the hybrid counts its entries). */
#ifndef TDM_WORKPILE_BACKEND_H
#define TDM_WORKPILE_BACKEND_H

#include <stdint.h>

#include "../geom/bvh.h"
#include "../geom/query.h"
#include "pool.h"
#include "sched.h"

/* A run's tasks, made on demand by whoever runs them, range by range and from
 * several threads at once: the scheduler builds them from its queries as the
 * engine needs them, so that no thread builds a whole run alone. make(l, lo,
 * hi, out) writes tasks [lo, hi) into out[0 .. hi - lo) and returns 0, or
 * nonzero when a task names a tree the engine has no copy of (its ga or gb is
 * NULL while the engine needs copies): the run then fails with TDM_ECANCELED. */
typedef struct tdm_task_list tdm_task_list;
struct tdm_task_list {
    size_t n;
    int (*make)(const tdm_task_list *l, size_t lo, size_t hi, tdm_task *out);
    const void *ctx;       /* make's (and answered's) */
    const tdm_task *array; /* tdm_task_list_array's */
    /* Optional: an engine may call answered(l, lo, hi, results + lo) once the
     * answers of tasks [lo, hi) are final, from any thread, on disjoint ranges,
     * so that the caller folds them while the engine still works on others (the
     * GPU-resident engine does, from its read-back). The caller cannot rely on
     * it being called: it is a head start, and folding again must be harmless. */
    void (*answered)(const tdm_task_list *l, size_t lo, size_t hi, const tdm_collide_result *res);
    /* The CPU engine runs the list on the caller's thread alone (a few tasks, where waking
     * the pool's threads costs more than they would save). */
    int one_thread;
};

/* A list over tasks already made (calibration, the pair pass, tests). */
tdm_task_list tdm_task_list_array(const tdm_task *tasks, size_t n);

typedef struct tdm_backend tdm_backend;

typedef struct tdm_backend_stats {
    uint64_t iterations; /* workpiles the GPU tested: BVTT levels (resident) or shipped workpiles (hybrid) */
    uint64_t pairs;      /* node and leaf pairs in them */
    uint64_t device_bytes, mesh_bytes; /* device memory held now, the whole device's budget */
    uint64_t budget_bytes;             /* the budget itself */
    uint64_t small_runs, small_handovers; /* GPU-resident: runs started depth first, and of them those
                                             that handed pairs over to the levels */
    uint64_t fused_runs;                  /* GPU-resident: configuration runs in one kernel */
    uint64_t config_start_ns;             /* GPU-resident: host time starting configuration runs */
    uint64_t programs_uploaded, programs_reused; /* GPU-resident: robot scene programs (gpu/gpu.h) */
    uint64_t program_bytes;                      /* ... their bytes held now */
} tdm_backend_stats;

typedef struct tdm_backend_ops {
    tdm_backend_kind kind;
    /* Makes the engine's copy of a tree: *copy is what tasks carry in ga/gb
     * (NULL from an engine that needs none). TDM_EGPUMEM (over the budget:
     * nothing held), TDM_EGPU, TDM_ENOMEM. Lane `lane` is the caller's. */
    int (*mesh_add)(tdm_backend *b, int lane, const tdm_bvh *bvh, void **copy);
    /* Frees a copy no run uses any more. Any thread, no run of the lane in progress. */
    void (*mesh_free)(tdm_backend *b, int lane, void *copy);
    /* Sizes every lane's buffers for runs of up to n tasks and loads the
     * kernels, so that the first runs pay for neither. No run in progress. */
    int (*prepare)(tdm_backend *b, size_t n);
    /* results[i] answers task i of `tasks`; blocks until all are done. Returns
     * 0, TDM_ECANCELED (a task without the copies the engine needs: nothing is
     * answered), TDM_ENOMEM, TDM_EGPUMEM, TDM_EGPU (results undefined).
     * results may be NULL for an engine with answers_all and a list with an
     * answered hook: the answers then go to the hook only. */
    int (*run)(tdm_backend *b, int lane, const tdm_task_list *tasks, tdm_collide_result *results);
    /* This lane's counters since creation, and the device's memory. The lane's thread. */
    void (*get_stats)(tdm_backend *b, int lane, tdm_backend_stats *s);
    void (*destroy)(tdm_backend *b);
    /* Frees a copy no run ever read (an upload rolled back because another engine refused it),
     * leaving the memory held as before the upload: no cache kept of it. NULL: mesh_free. */
    void (*mesh_discard)(tdm_backend *b, int lane, void *copy);
} tdm_backend_ops;

struct tdm_backend {
    const tdm_backend_ops *ops;
    int lanes;
    int needs_copies; /* tasks must carry ga/gb */
    int answers_all;  /* a run that returns 0 has called the list's answered hook (if any)
                         for every task, so the caller needs no results array */
};

/* The CPU engine on `pool` (borrowed, outlives it), any number of lanes. */
int tdm_cpu_backend_create(tdm_pool *pool, int lanes, tdm_backend **out);

/* The GPU-resident engine: gpu_engine.h; the hybrid: hybrid_engine.h. */

#endif
