/* The hybrid engine behind the engine interface (backend.h), after Jorgensen et
 * al.: the pool's threads walk the trees and gather node and leaf pairs into
 * workpiles, gpu/hybrid.h tests each workpile on the device. This engine makes
 * a run's tasks (on the pool), cuts the run into pieces of at most
 * TDM_HYBRID_PIECE tasks, and runs each piece's traversal as one pool job whose
 * shares are the hybrid's workers. */
#ifndef TDM_WORKPILE_HYBRID_ENGINE_H
#define TDM_WORKPILE_HYBRID_ENGINE_H

#include "../gpu/hybrid.h"
#include "backend.h"

/* On the device, budget and resident meshes of `gpu` (a GPU-resident engine,
 * which must outlive it: its copies are the ones the tasks carry); one lane.
 * cfg: NULL for gpu/hybrid.h's defaults with one worker per pool thread.
 * TDM_EGPUMEM when its workpile buffers exceed the budget, TDM_EINVAL. */
int tdm_hybrid_engine_create(tdm_backend *gpu, tdm_pool *pool, const tdm_hybrid_config *cfg, tdm_backend **out);

/* The gpu/ side (its statistics, for tests and traces). */
tdm_hybrid *tdm_hybrid_engine_hybrid(tdm_backend *b);

#endif
