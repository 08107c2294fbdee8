/* The dispatch cost model, in the spirit of Jorgensen et al. §5: which engine,
 * the CPU engine or the GPU-resident one, answers a run of n tasks sooner.
 *
 *     CPU: c_off + n * w * c_cpu         GPU: g_off + n * w * c_gpu
 *
 * c_cpu and c_gpu are the seconds per task of a reference scene on each engine,
 * c_off and g_off their fixed costs per run (waking the thread pool; launches,
 * copies, synchronisation), and w how much heavier the current work is than the
 * reference (box and triangle tests per task). A run goes to the GPU when
 * n >= (g_off - c_off) / (w * (c_cpu - c_gpu)), the size where the costs cross.
 *
 * The four figures come from a calibration at start-up (calibrate.h) or the
 * built-in ones, and every run refines them (tdm_cost_model_learn): a small run
 * (mostly fixed cost) its engine's fixed cost, which on the GPU grows with the
 * depth of the trees (one synchronisation per few BVTT levels); a large one the
 * work factor w. All functions are safe from any thread. */
#ifndef TDM_WORKPILE_COST_MODEL_H
#define TDM_WORKPILE_COST_MODEL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tdm_cost_figures {
    double c_cpu, c_off; /* CPU engine: seconds per reference task, and per run */
    double c_gpu, g_off; /* GPU-resident engine: the same */
} tdm_cost_figures;

/* calibrate()'s figures on the H100 host with 16 threads (bench/results), for
 * when calibration is turned off. */
tdm_cost_figures tdm_cost_figures_builtin(void);

/* Runs smaller than these refine their engine's fixed cost; larger ones the
 * work factor. */
#define TDM_COST_SMALL_CPU 256u
#define TDM_COST_SMALL_GPU 4096u

typedef struct tdm_cost_model {
    pthread_mutex_t lock;
    tdm_cost_figures f;
    double w;           /* work factor, 1 for the reference scene */
    uint64_t threshold; /* tasks: at or above, a run goes to the GPU */
} tdm_cost_model;

/* Sets the figures, w = 1, and the threshold from them. Returns 0 or TDM_ESYS. */
int tdm_cost_model_init(tdm_cost_model *m, const tdm_cost_figures *f);
void tdm_cost_model_destroy(tdm_cost_model *m);

/* 1 when a run of n tasks should go to the GPU. */
int tdm_cost_model_pick_gpu(tdm_cost_model *m, uint64_t n);
/* The same for a host under load (other lanes running): the model weighs how soon each engine
 * answers one run, as if it had the host to itself, but a CPU engine run that needs the thread
 * pool takes the cores the other lanes' runs need (their fills, copies and replies), while a GPU
 * run takes a lane's thread and the device. So under load the CPU engine takes only the runs its
 * caller finishes alone within solo_s (n * w * c_cpu * threads, c_cpu being seconds per task
 * with `threads` threads), and the GPU every other one. */
int tdm_cost_model_pick_gpu_loaded(tdm_cost_model *m, uint64_t n, int threads, double solo_s);
/* Learns from a run of n tasks that took `seconds` on the GPU (on_gpu) or the CPU engine. */
void tdm_cost_model_learn(tdm_cost_model *m, int on_gpu, uint64_t n, double seconds);
/* The current threshold (UINT64_MAX: the GPU takes nothing) and figures. */
uint64_t tdm_cost_model_threshold(tdm_cost_model *m);
void tdm_cost_model_get(tdm_cost_model *m, tdm_cost_figures *f, double *w);

#endif
