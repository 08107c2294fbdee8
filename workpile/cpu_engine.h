/* The CPU query engine: BVTT traversal of one object pair per task, a thread pool
 * spreading a batch of tasks over cores.
 * (tdm_task, the unit of work, is in geom/query.h.) */
#ifndef TDM_WORKPILE_CPU_ENGINE_H
#define TDM_WORKPILE_CPU_ENGINE_H

#include "../geom/bvh.h"
#include "../geom/query.h"
#include "pool.h"

/* tdm_task: geom/query.h */


/* Runs one task on the calling thread. Never fails: inputs are validated meshes
 * and BVHs, and the traversal needs no allocation. */
void tdm_collide(const tdm_task *task, tdm_collide_result *res);

typedef struct tdm_cpu_engine tdm_cpu_engine;

/* Runs batches on `pool` (borrowed: it must outlive the engine). Returns 0,
 * TDM_EINVAL (no pool) or TDM_ENOMEM. */
int tdm_cpu_engine_create(tdm_pool *pool, tdm_cpu_engine **out);
/* No run may be in progress. */
void tdm_cpu_engine_destroy(tdm_cpu_engine *e);
/* The pool's threads, the caller's included. */
int tdm_cpu_engine_threads(const tdm_cpu_engine *e);
/* How long a run goes on its caller alone before the pool's threads are woken for the rest
 * (30 us; TDM_CPU_SOLO_US in the environment, 0: the pool at once). */
uint64_t tdm_cpu_solo_ns(void);

/* Runs n tasks, results[i] for tasks[i]; blocks until all are done. The calling
 * thread works too. Several threads may run batches at once: they share the
 * pool's workers (pool.h). Returns 0 (it cannot fail once the engine exists). */
int tdm_cpu_engine_run(tdm_cpu_engine *e, const tdm_task *tasks, size_t n, tdm_collide_result *results);

#endif
