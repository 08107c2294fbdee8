/* The CPU query engine: BVTT traversal of one object pair per task, a thread pool
 * spreading a batch of tasks over cores.
 *
 * A task asks whether object B, placed in A's frame by a rigid transform, touches
 * object A. Collision is surface-only (triangles against triangles; a mesh inside
 * another without touching it does not collide) and touching counts, as in FCL. */
#ifndef TDM_WORKPILE_CPU_ENGINE_H
#define TDM_WORKPILE_CPU_ENGINE_H

#include "../geom/bvh.h"
#include "../geom/query.h"

typedef struct tdm_task {
    const tdm_bvh *a, *b; /* borrowed; must outlive the call */
    tdm_xform b_in_a;     /* maps B's mesh frame into A's */
    tdm_mode mode;
    uint32_t max_pairs;   /* contacts mode: stop after this many pairs (>= 1) */
    tdm_pair *pairs;      /* optional, borrowed: room for max_pairs pairs (contacts mode) */
} tdm_task;


/* Runs one task on the calling thread. Never fails: inputs are validated meshes
 * and BVHs, and the traversal needs no allocation. */
void tdm_collide(const tdm_task *task, tdm_collide_result *res);

typedef struct tdm_cpu_engine tdm_cpu_engine;

/* n_threads: total threads working on a batch, the caller's included; 0 means one
 * per online core. Returns 0, TDM_EINVAL, TDM_ENOMEM or TDM_ESYS. */
int tdm_cpu_engine_create(int n_threads, tdm_cpu_engine **out);
/* Joins the workers. No run may be in progress. */
void tdm_cpu_engine_destroy(tdm_cpu_engine *e);
int tdm_cpu_engine_threads(const tdm_cpu_engine *e);

/* Runs n tasks, results[i] for tasks[i]; blocks until all are done. The calling
 * thread works too. Runs on one engine are serialised (a second caller waits).
 * Returns 0 (it cannot fail once the engine exists). */
int tdm_cpu_engine_run(tdm_cpu_engine *e, const tdm_task *tasks, size_t n, tdm_collide_result *results);

#endif
