/* The GPU-resident engine behind the engine interface (backend.h), after
 * Damkjaer & Erleben: gpu/gpu.h keeps the meshes and the frontier on the device
 * and runs the levels; this engine cuts a run into chunks, one per slot (a CUDA
 * stream of a lane), fills each chunk's inputs on the pool's threads as the chunk
 * starts (so that filling overlaps the device's work on the chunks already in
 * flight), steps the slots round robin, reads the results back on the pool, and
 * re-runs a chunk whose frontier overflowed with larger buffers, or in halves
 * once the memory budget is reached: never truncated. */
#ifndef TDM_WORKPILE_GPU_ENGINE_H
#define TDM_WORKPILE_GPU_ENGINE_H

#include "../gpu/gpu.h"
#include "backend.h"

typedef struct tdm_gpu_engine_config {
    tdm_gpu_config gpu;   /* the device's side: device, budget, frontier, streams, traversal */
    uint64_t chunk_tasks; /* tasks per chunk; 0: the run over the slots, at least 8192 each */
} tdm_gpu_engine_config;

tdm_gpu_engine_config tdm_gpu_engine_config_default(void);

/* `lanes` lanes (each its own tdm_gpu lane: streams and buffers; one budget and
 * one set of meshes), filling on `pool` (borrowed, outlives it). TDM_ENODEV
 * (*why says why), TDM_EINVAL, TDM_EGPU, TDM_EGPUMEM, TDM_ENOMEM. */
int tdm_gpu_engine_create(const tdm_gpu_engine_config *cfg, tdm_pool *pool, int lanes, tdm_backend **out,
                          const char **why);

/* Lane k's tdm_gpu (the hybrid engine runs on lane 0's device and budget). */
tdm_gpu *tdm_gpu_engine_lane(tdm_backend *b, int k);

#endif
