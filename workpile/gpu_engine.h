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

/* Batches of robot configurations, on the device from end to end (gpu/gpu.h,
 * "batches of robot configurations"): runs configs[0 .. n * J) on lane `lane`'s
 * slots, configuration i of robot robots[robot_of[i]] (robot_of NULL: all of
 * robots[0]; every robot of n_q J: pooled requests of several robot scenes run
 * together), robots[r].pairs made here from copies[r] (two per check: this
 * engine's copies of the check's A and B trees), answers into out[0 .. n), the
 * tasks traversed added to *tasks. Runs are sized from the tasks the previous
 * ones kept per configuration; configurations that did not fit a run go again.
 * Returns 0, TDM_ENOMEM (no host memory, or one configuration's tasks alone
 * outgrow a run: the caller runs them on the host), TDM_EGPUMEM or TDM_EGPU. */
/* 1 when lane `lane` holds the program of the robot scene keyed (key, epoch) for
 * kin (gpu/gpu.h, "resident programs"): the caller may then pass that robot with
 * its key, epoch, kin and n_checks alone, and no copies. */
int tdm_gpu_engine_program_resident(tdm_backend *b, int lane, uint64_t key, uint64_t epoch, const tdm_kin *kin);
int tdm_gpu_engine_run_configs(tdm_backend *b, int lane, const tdm_gpu_robot *robots, uint32_t n_robots,
                               const uint32_t *robot_of, void *const *const *copies, const double *configs, size_t n,
                               uint32_t mode, uint32_t cap, tdm_gpu_config_answer *out, uint64_t *tasks);

/* Asynchronous runs of configurations, one slot each (the pooler's async lanes): a
 * thread keeps several of a lane's slots in flight and polls them, instead of waiting
 * for one run. The caller holds the lane throughout and runs nothing else on it meanwhile.
 *
 * tdm_gpu_engine_configs_one_run: the most configurations of robots of n_q values and at
 * most n_checks checks one such run takes (every one fits even if no check is culled).
 * tdm_gpu_engine_configs_room: the lane's idle slots.
 * tdm_gpu_engine_configs_start: starts a run on an idle slot (*slot), with
 * tdm_gpu_engine_run_configs's arguments; the configurations are copied. TDM_EAGAIN:
 * no idle slot, or a robot given whole (its program to upload) while a slot runs: poll
 * the lane empty first. TDM_EINVAL past one_run. A failed start leaves the runs in flight running.
 * tdm_gpu_engine_configs_poll: 0 while slot's run goes on; 1 when it has ended: *done
 * answers in out[0 ..) (a prefix: the rest, none after an overflow, are the caller's to
 * run again with tdm_gpu_engine_run_configs once the lane is idle), its tasks added to
 * *tasks; a negative TDM_E* when the lane failed (every run in flight is lost). */
size_t tdm_gpu_engine_configs_one_run(tdm_backend *b, int lane, uint32_t n_q, uint32_t n_checks);
int tdm_gpu_engine_configs_room(tdm_backend *b, int lane);
int tdm_gpu_engine_configs_start(tdm_backend *b, int lane, const tdm_gpu_robot *robots, uint32_t n_robots,
                                 const uint32_t *robot_of, void *const *const *copies, const double *configs,
                                 size_t n, uint32_t mode, uint32_t cap, int *slot);
int tdm_gpu_engine_configs_poll(tdm_backend *b, int lane, int slot, tdm_gpu_config_answer *out, size_t *done,
                                uint64_t *tasks);

/* Lane k's tdm_gpu (the hybrid engine runs on lane 0's device and budget). */
tdm_gpu *tdm_gpu_engine_lane(tdm_backend *b, int k);

#endif
