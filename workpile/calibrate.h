/* Calibration of the dispatch cost model (cost_model.h): the seconds per task
 * and per run of the CPU engine and the GPU-resident engine, measured on a
 * generated reference scene at start-up. */
#ifndef TDM_WORKPILE_CALIBRATE_H
#define TDM_WORKPILE_CALIBRATE_H

#include "backend.h"
#include "cost_model.h"

/* The largest run calibration times: the caller sizes the GPU's buffers for it
 * (tdm_gpu_prepare) first, so that no allocation is timed. */
#define TDM_CALIBRATE_TASKS 65536

/* Times both engines on two spheres of ~2 300 triangles, B's centre at 1.6 to
 * 2.4 radii from A's in a random direction (about half the poses touch), bool
 * mode: c_cpu from a run of 8 192 tasks, c_off from one of 32 (waking the pool
 * is most of it), g_off from a run of one task, c_gpu from one of 65 536 less
 * that. Each figure is the best of a few runs, on lane `lane` of each engine
 * (no run of that lane in progress). The sphere's device copy is made and freed
 * again through the GPU engine. Returns 0, TDM_ENOMEM, or the GPU's error
 * (TDM_EGPU, TDM_EGPUMEM). */
int tdm_calibrate(tdm_backend *cpu, tdm_backend *gpu, int lane, tdm_cost_figures *out);

#endif
