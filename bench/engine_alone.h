/* bench_server's engine-alone figure, in its own file: the engine's types share
 * names with libtandem's public ones, so the two headers never meet. */
#ifndef TDM_BENCH_ENGINE_ALONE_H
#define TDM_BENCH_ENGINE_ALONE_H

#include <stddef.h>

#include "../geom/mesh.h"
#include "../tools/io.h"

/* Queries per second of every pose through tdm_sched_run (kind "auto", "cpu",
 * "gpu" or "hybrid"; `threads` CPU threads) on a scene of env (fixed, identity)
 * and robot (movable), in runs of up to 2^20 poses, best of two passes. Prints
 * the engine's description on stderr. -1 on failure (said on stderr). */
double tdm_bench_engine_alone(const char *engine, int threads, const tdm_mesh *env, const tdm_mesh *robot,
                              const tdm_pose *p, size_t n, int contacts);

#endif
