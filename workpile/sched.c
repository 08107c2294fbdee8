/* tdm_sched: expand, run once, merge; and which engine runs what.
 *
 * A run turns every (query, checked pair) of the batch into a task, in query
 * order and, within a query, in checked-pair order; runs them per chunk of
 * chunk_tasks (one chunk for any ordinary batch) on one engine; and folds the
 * task results into per-query answers in that same order, so "the first
 * colliding pair" is simply the first one met.
 *
 * Contacts mode with pair output runs in two passes. The first counts (no pair
 * buffers: a task's pairs are only known once it has run, and reserving
 * max_contacts per task would cost tasks x max_contacts); the second re-runs, on
 * the CPU engine, only the tasks that found pairs, each with exactly the room it
 * needs, capped by what its query still has room for. Every engine is exact, so
 * counts agree, and the CPU traversal is deterministic, so the pairs listed are
 * the same whichever engine counted.
 *
 * Engines sit behind backend.h's interface. The CPU engine is always there;
 * with a GPU, the GPU-resident engine too, and the hybrid when it is asked for.
 * A chunk runs on a GPU engine only when every tree it names is resident
 * (tdm_sched_mesh_add, the registry); otherwise on the CPU engine.
 *
 * Several GPUs: one GPU-resident engine per listed device (gpus[]), each with
 * cfg->lanes lanes; scheduler lane k is bound to engine k % n_gpus, on that
 * engine's lane k / n_gpus, and a run's GPU chunks go to its lane's engine,
 * with that engine's copies of the trees (the registry keeps one per engine).
 * lane_get spreads runs over the engines (the one with the fewest runs in
 * flight, round robin among equals) and avoids those that failed for good.
 * Why bind lanes rather than split each run over the devices: tandemd's load
 * is already cut into runs by the pooler, one per pooler thread, and as many
 * threads as lanes keep every device fed with whole runs, each run's host work
 * overlapping the others' device work as on one GPU; splitting one run would
 * need a second thread per run to drive the second device and would halve each
 * device's chunks, which on the light scenes is what keeps the kernels full.
 *
 * Dispatch (kind AUTO with a GPU): the cost model of cost_model.h, set at
 * creation by calibrate() (or its built-in figures) and refined by every run.
 *
 * Solid objects (solid.h): the fold, which every engine's answers go through,
 * turns a free pair with a solid partner into a colliding one when the partner
 * holds the other object (one transform and O(1) test per component
 * representative, made on the host from the query's poses). It asks only until
 * a query has its first colliding pair, in checked-pair order, so the pair named
 * is the first colliding one either way; scenes with no solid object skip it on
 * one pointer test per query. */
#include "sched.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "calibrate.h"
#include "cost_model.h"
#include "cpu_engine.h"
#include "gpu_engine.h"
#include "hybrid_engine.h"
#include "registry.h"
#include "solid.h"

typedef struct task_ref { uint32_t query, check; } task_ref;
/* A task of a pair-collecting query that found pairs in the first pass. */
typedef struct hit { uint32_t query, check, n_pairs, room; } hit;

/* Which engine a chunk ran on. */
enum { ON_CPU, ON_GPU, ON_HYBRID };

/* lanes per engine (tdm_sched_config.lanes) x GPU engines */
#define MAX_LANES_PER_ENGINE 8
#define MAX_LANES (MAX_LANES_PER_ENGINE * TDM_SCHED_MAX_GPUS)
/* host lanes (tdm_sched_config.host_lanes): the CPU engine's alone, after the engines' lanes */
#define MAX_HOST_LANES 8

/* One run in flight: what a tdm_sched_run uses and nobody else touches while
 * it lasts. Several lanes let several threads run at once (tdm_sched_config.
 * lanes): one run's host work overlaps another's GPU work, lane k of the
 * scheduler on lane k of each engine. */
typedef struct lane {
    int index;
    int host;  /* a host lane: its runs go to the CPU engine, on the caller's thread (tdm_sched_run_configs_host) */
    int cpu_only; /* this run: every chunk on the CPU engine, on the caller's thread */
    int dev;   /* the GPU engine (index into gpus[]) it runs on; 0 without a GPU */
    int elane; /* ... and the lane of that engine: index / n_gpus (the CPU engine's is index) */
    tdm_backend_stats seen[3]; /* the engines' counters of this lane already added to the stats */

    /* this run's figures, for the stats */
    uint64_t run_on[3];    /* tasks per engine (ON_*) */
    uint64_t run_q[3];     /* queries per engine: counted where their first task ran */
    double run_gpu_s;
    double run_engine_s;   /* this run's time inside the engines (the rest is the host's) */

    /* scratch, kept between runs */
    tdm_collide_result *res; /* a chunk's task results */
    task_ref *refs;        /* ... and their (query, check), unless the batch is uniform */
    size_t chunk_cap;      /* of both */
    tdm_task *tasks;       /* the pair pass's tasks, made up front (they carry pair buffers) */
    size_t tasks_cap;
    uint64_t *sums; /* contacts counted per query, before the cap */
    uint32_t *room; /* pairs a query may still receive, second pass */
    size_t queries_cap;
    hit *hits;
    size_t n_hits, hits_cap;
    tdm_pair *pairs;
    size_t pairs_cap;
    void **copies;  /* a one-scene chunk's device copies, two per check (ref_tasks.copies) */
    size_t copies_cap;
    /* a chunk of several scenes (planners' requests pooled): each scene's copies looked up once
       per chunk, scene i's at mcopies + mscene[i].at (ref_tasks.scenes) */
    void **mcopies;
    size_t mcopies_cap;
    struct scene_copies_at { const tdm_scene *scene; size_t at; } *mscene;
    size_t mscene_cap;
    uint32_t *kept; /* culling: checks kept per query */
    size_t *first;  /* ... and the first ref of each query in its window (one more entry) */
    uint64_t *bits; /* ... and which, a bit a check */
    size_t kept_cap, first_cap, bits_cap;
} lane;

struct tdm_sched {
    tdm_backend_kind kind;
    int dispatch;          /* AUTO with a GPU: choose per chunk by the cost model */
    tdm_pool *pool;        /* the one thread pool, every engine's */
    tdm_backend *engines[3]; /* ON_CPU always; ON_GPU with a GPU (gpus[0]); ON_HYBRID when asked for */
    tdm_backend *gpus[TDM_SCHED_MAX_GPUS]; /* one GPU-resident engine per listed device */
    int gpu_dev[TDM_SCHED_MAX_GPUS];       /* ... its CUDA device */
    int n_gpus;
    int broken[TDM_SCHED_MAX_GPUS]; /* (atomic) engine k failed for good: its lanes take no run (unless all did) */
    int n_broken;                   /* (atomic) */
    uint32_t chunk;
    char detail[400];
    pthread_mutex_t stats_lock;
    tdm_sched_stats stats;
    struct { uint64_t device, mesh, budget; } dev_mem[TDM_SCHED_MAX_GPUS]; /* per engine, under stats_lock */

    int n_lanes;
    lane lanes[MAX_LANES + MAX_HOST_LANES]; /* the engines' n_lanes, then n_host host lanes */
    int n_host;
    uint32_t free_host;         /* bit k: lanes[n_lanes + k] is not running (under lane_lock) */
    pthread_mutex_t lane_lock;  /* guards free_lanes, busy, next_dev */
    pthread_cond_t lane_freed;
    uint64_t free_lanes;        /* bit k: lanes[k] is not running (written atomically: dispatch_gpu reads it) */
    int lane_waiting;           /* lane_get / lane_get_dev callers waiting for a lane (an async lane gives its
                                   lane back to them: tdm_sched_async_start) */
    int busy[TDM_SCHED_MAX_GPUS]; /* runs in flight per GPU engine */
    int dispatch_loaded;        /* dispatch under load: tdm_cost_model_pick_gpu_loaded (TDM_DISPATCH_LOADED=0:
                                   the plain model, an A/B switch) */
    double solo_s;              /* the CPU engine's run alone on its caller (tdm_cpu_solo_ns) */
    int next_dev;               /* the engine preferred among equally busy ones (round robin) */
    uint64_t reclaimed;         /* (atomic) the registry's epoch up to which every removed copy was freed on
                                   every engine standing (tdm_sched_reclaim) */
    pthread_mutex_t hook_lock;  /* guards the hook called when a tree leaves (tdm_sched_on_removed) */
    void (*on_removed)(void *);
    void *on_removed_data;
    pthread_mutex_t upload_lock; /* one upload at a time: nobody inserts a tree being uploaded */

    tdm_registry *reg;     /* resident trees: host tree -> each GPU engine's copy */

    tdm_cost_model model;  /* dispatch: every lane learns from its runs */
    int trace;             /* TDM_ENGINE_TRACE set: a line per run on stderr */
    int skip_answered;     /* bool tasks carry their query as group (tdm_task); TDM_ENGINE_SKIP_ANSWERED=0: not */
    int fold_early;        /* TDM_ENGINE_FOLD_EARLY=0 unset: fold answers in the GPU engine's read-back */
    int cull;              /* TDM_ENGINE_CULL=0 unset: skip checks whose bounding spheres are apart */
    tdm_gpu_express *express; /* the express ring on gpus[0] (tdm_sched_express_start), or NULL */
    int device_configs;    /* TDM_ENGINE_DEVICE_CONFIGS=0 unset: batches of configurations run on the
                              device from end to end (tdm_sched_run_configs) */
};

const char *tdm_backend_name(tdm_backend_kind k)
{
    switch (k) {
    case TDM_BACKEND_AUTO: return "auto";
    case TDM_BACKEND_CPU: return "cpu";
    case TDM_BACKEND_GPU: return "gpu";
    case TDM_BACKEND_HYBRID: return "hybrid";
    }
    return "unknown";
}

int tdm_backend_parse(const char *name, tdm_backend_kind *out)
{
    static const tdm_backend_kind kinds[] = {TDM_BACKEND_AUTO, TDM_BACKEND_CPU, TDM_BACKEND_GPU, TDM_BACKEND_HYBRID};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(name, tdm_backend_name(kinds[i])) == 0) {
            *out = kinds[i];
            return TDM_OK;
        }
    return TDM_EINVAL;
}

int tdm_traversal_parse(const char *name, tdm_traversal *out)
{
    static const char *const names[] = {"pairs", "blocks", "wide"};
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (tdm_traversal)i;
            return TDM_OK;
        }
    return TDM_EINVAL;
}

tdm_sched_config tdm_sched_config_default(void)
{
    tdm_sched_config c = {.kind = TDM_BACKEND_AUTO, .threads = 0, .chunk_tasks = 262144, .gpu_device = -1,
                          .gpu_memory = 0, .gpu_streams = 2, .calibrate = 1, .gpu_traversal = TDM_TRAVERSAL_PAIRS,
                          .lanes = 3, .n_gpu_devices = 0, .gpu_program_cache = TDM_GPU_PROGRAM_CACHE};
    return c;
}

int tdm_sched_devices_parse(const char *text, int devices[TDM_SCHED_MAX_GPUS], int *n, char *why, size_t whylen)
{
    *n = 0;
    if (strcmp(text, "all") == 0) return TDM_OK;
    const char *p = text;
    int count = 0;
    for (;;) {
        size_t len = strcspn(p, ",");
        long v = -1;
        int ok = len > 0 && len <= 4;
        for (size_t i = 0; i < len && ok; i++) ok = p[i] >= '0' && p[i] <= '9';
        if (ok) {
            v = 0;
            for (size_t i = 0; i < len; i++) v = 10 * v + (p[i] - '0');
            ok = v <= 1024;
        }
        if (!ok) {
            if (why)
                snprintf(why, whylen, "device list \"%s\": entry %d (\"%.*s\") is not a device index 0..1024; give "
                         "\"all\" or indices separated by commas, e.g. 0,1", text, count + 1, (int)(len > 16 ? 16 : len), p);
            return TDM_EINVAL;
        }
        if (count == TDM_SCHED_MAX_GPUS) {
            if (why)
                snprintf(why, whylen, "device list \"%s\": more than %d devices", text, TDM_SCHED_MAX_GPUS);
            return TDM_EINVAL;
        }
        devices[count++] = (int)v;
        if (p[len] == 0) break;
        p += len + 1;
    }
    *n = count;
    return TDM_OK;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- lanes, stats ---------------------------------------------------------------- */

static int engine_broken(const tdm_sched *e, int d) { return __atomic_load_n(&e->broken[d], __ATOMIC_RELAXED); }

/* lane_lock held: marks lane k taken. */
static lane *take_lane(tdm_sched *e, int k)
{
    __atomic_store_n(&e->free_lanes, e->free_lanes & ~(1ull << k), __ATOMIC_RELAXED);
    lane *l = &e->lanes[k];
    e->busy[l->dev]++;
    if (e->n_gpus > 1) e->next_dev = (l->dev + 1) % e->n_gpus;
    return l;
}

/* Takes a free lane of GPU engine d without waiting; NULL when every one of them runs. */
static lane *lane_try_dev(tdm_sched *e, int d)
{
    lane *l = NULL;
    pthread_mutex_lock(&e->lane_lock);
    for (int k = 0; k < e->n_lanes && !l; k++)
        if ((e->free_lanes >> k & 1) && e->lanes[k].dev == d) l = take_lane(e, k);
    pthread_mutex_unlock(&e->lane_lock);
    return l;
}

/* Takes a free lane for a run, waiting for one: of the GPU engines that have
 * not failed (any, once every one has), the one with the fewest runs in flight,
 * the round robin's next among equals; its lowest free lane. */
static lane *lane_get(tdm_sched *e)
{
    pthread_mutex_lock(&e->lane_lock);
    for (;;) {
        int all_broken = e->n_gpus == 0 || __atomic_load_n(&e->n_broken, __ATOMIC_RELAXED) >= e->n_gpus;
        int best = -1;
        long best_key = 0;
        for (int k = 0; k < e->n_lanes; k++) {
            if (!(e->free_lanes >> k & 1)) continue;
            int d = e->lanes[k].dev;
            if (!all_broken && engine_broken(e, d)) continue;
            int turn = e->n_gpus > 1 ? (d - e->next_dev + e->n_gpus) % e->n_gpus : 0;
            long key = (long)e->busy[d] * TDM_SCHED_MAX_GPUS + turn;
            if (best < 0 || key < best_key) {
                best = k;
                best_key = key;
            }
        }
        if (best >= 0) {
            lane *l = take_lane(e, best);
            pthread_mutex_unlock(&e->lane_lock);
            return l;
        }
        __atomic_add_fetch(&e->lane_waiting, 1, __ATOMIC_RELAXED);
        pthread_cond_wait(&e->lane_freed, &e->lane_lock);
        __atomic_sub_fetch(&e->lane_waiting, 1, __ATOMIC_RELAXED);
    }
}

/* Takes a free lane of GPU engine d (uploads and frees on every engine), waiting for one. */
static lane *lane_get_dev(tdm_sched *e, int d)
{
    pthread_mutex_lock(&e->lane_lock);
    for (;;) {
        for (int k = 0; k < e->n_lanes; k++)
            if ((e->free_lanes >> k & 1) && e->lanes[k].dev == d) {
                lane *l = take_lane(e, k);
                pthread_mutex_unlock(&e->lane_lock);
                return l;
            }
        __atomic_add_fetch(&e->lane_waiting, 1, __ATOMIC_RELAXED);
        pthread_cond_wait(&e->lane_freed, &e->lane_lock);
        __atomic_sub_fetch(&e->lane_waiting, 1, __ATOMIC_RELAXED);
    }
}

/* A lane for an async lane's runs: as lane_get, once no other caller waits for one (an async
 * lane may hold its lane through many runs: those who wait go first). */
static lane *lane_get_after_waiters(tdm_sched *e)
{
    pthread_mutex_lock(&e->lane_lock);
    while (e->lane_waiting > 0) pthread_cond_wait(&e->lane_freed, &e->lane_lock);
    pthread_mutex_unlock(&e->lane_lock);
    return lane_get(e);
}

static int lane_wanted(tdm_sched *e) { return __atomic_load_n(&e->lane_waiting, __ATOMIC_RELAXED) > 0; }

/* Takes a free host lane, waiting for one (there is one at least). */
static lane *lane_get_host(tdm_sched *e)
{
    pthread_mutex_lock(&e->lane_lock);
    while (!e->free_host) pthread_cond_wait(&e->lane_freed, &e->lane_lock);
    int k = __builtin_ctz(e->free_host);
    e->free_host &= ~(1u << k);
    pthread_mutex_unlock(&e->lane_lock);
    return &e->lanes[e->n_lanes + k];
}

static void lane_put(tdm_sched *e, lane *l)
{
    pthread_mutex_lock(&e->lane_lock);
    if (l->host) {
        e->free_host |= 1u << (l->index - e->n_lanes);
        pthread_cond_broadcast(&e->lane_freed);
        pthread_mutex_unlock(&e->lane_lock);
        return;
    }
    __atomic_store_n(&e->free_lanes, e->free_lanes | 1ull << (l - e->lanes), __ATOMIC_RELAXED);
    e->busy[l->dev]--;
    /* waiters want different lanes (any usable one, or one of a given engine) */
    pthread_cond_broadcast(&e->lane_freed);
    pthread_mutex_unlock(&e->lane_lock);
}

/* GPU engine d failed for good: later runs avoid its lanes. Its first report
 * wakes the waiters (when it was the last engine standing, every lane becomes
 * usable again, on the CPU engine). */
static void engine_failed(tdm_sched *e, int d)
{
    if (__atomic_exchange_n(&e->broken[d], 1, __ATOMIC_RELAXED)) return;
    __atomic_add_fetch(&e->n_broken, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&e->lane_lock);
    pthread_cond_broadcast(&e->lane_freed);
    pthread_mutex_unlock(&e->lane_lock);
}

/* Adds lane l's new device counters and the device figures to the stats. The
 * thread holding l (the lane's counters are read by it only). */
static void device_stats(tdm_sched *e, lane *l)
{
    if (!e->n_gpus || l->host) return;
    uint64_t d_iters = 0, d_pairs = 0, d_small = 0, d_handovers = 0, d_fused = 0, d_start = 0, d_up = 0, d_reuse = 0;
    uint64_t dev = 0, mesh = 0, budget = 0;
    int64_t d_bytes = 0;
    for (int w = ON_GPU; w <= ON_HYBRID; w++) {
        tdm_backend *b = w == ON_GPU ? e->gpus[l->dev] : e->engines[w];
        if (!b || l->elane >= b->lanes) continue;
        tdm_backend_stats s;
        b->ops->get_stats(b, l->elane, &s);
        d_iters += s.iterations - l->seen[w].iterations;
        d_pairs += s.pairs - l->seen[w].pairs;
        d_small += s.small_runs - l->seen[w].small_runs;
        d_handovers += s.small_handovers - l->seen[w].small_handovers;
        d_fused += s.fused_runs - l->seen[w].fused_runs;
        d_start += s.config_start_ns - l->seen[w].config_start_ns;
        d_up += s.programs_uploaded - l->seen[w].programs_uploaded;
        d_reuse += s.programs_reused - l->seen[w].programs_reused;
        d_bytes += (int64_t)s.program_bytes - (int64_t)l->seen[w].program_bytes;
        l->seen[w] = s;
        dev = s.device_bytes;
        mesh = s.mesh_bytes;
        budget = s.budget_bytes;
    }
    uint32_t n_dev = (uint32_t)tdm_registry_count(e->reg);
    uint64_t threshold = e->dispatch ? tdm_cost_model_threshold(&e->model) : 0;
    pthread_mutex_lock(&e->stats_lock);
    e->stats.gpu_iterations += d_iters;
    e->stats.gpu_pairs += d_pairs;
    e->stats.gpu_small_runs += d_small;
    e->stats.gpu_small_handovers += d_handovers;
    e->stats.gpu_fused_runs += d_fused;
    e->stats.config_start_seconds += 1e-9 * (double)d_start;
    e->stats.gpu_programs_uploaded += d_up;
    e->stats.gpu_programs_reused += d_reuse;
    e->stats.gpu_program_bytes += (uint64_t)d_bytes;
    e->dev_mem[l->dev].device = dev;
    e->dev_mem[l->dev].mesh = mesh;
    e->dev_mem[l->dev].budget = budget;
    e->stats.device_bytes = e->stats.mesh_bytes = e->stats.device_budget = 0;
    e->stats.gpu_engine_bytes[l->dev] = dev;
    for (int d = 0; d < e->n_gpus; d++) {
        e->stats.device_bytes += e->dev_mem[d].device;
        e->stats.mesh_bytes += e->dev_mem[d].mesh;
        e->stats.device_budget += e->dev_mem[d].budget;
    }
    e->stats.device_meshes = n_dev;
    e->stats.dispatch_threshold = threshold;
    pthread_mutex_unlock(&e->stats_lock);
}

/* ---- resident meshes ------------------------------------------------------------- */

typedef struct freer { tdm_sched *e; int elane; } freer;

static void free_copy(void *ctx, int d, void *copy)
{
    const freer *f = ctx;
    tdm_backend *b = f->e->gpus[d];
    b->ops->mesh_free(b, f->elane, copy);
}

/* Frees the copies of l's engine removed since the last call, on lane l (held).
 * No run can be using them: their last user dropped them after its runs, and a
 * run looks copies up only while it lasts. */
static void free_removed(tdm_sched *e, lane *l)
{
    freer f = {e, l->elane};
    if (e->n_gpus && !l->host) tdm_registry_free_removed(e->reg, l->dev, free_copy, &f);
}

/* Frees copies[d] of every engine d that has one, each on a lane of its engine: copies of an upload
 * another engine refused, which no run has read (discarded: the engines keep nothing of them). */
static void free_copies(tdm_sched *e, void **copies)
{
    for (int d = 0; d < e->n_gpus; d++) {
        if (!copies[d]) continue;
        lane *l = lane_get_dev(e, d);
        const tdm_backend_ops *ops = e->gpus[d]->ops;
        (ops->mesh_discard ? ops->mesh_discard : ops->mesh_free)(e->gpus[d], l->elane, copies[d]);
        device_stats(e, l);
        lane_put(e, l);
        copies[d] = NULL;
    }
}

/* The stats' count of resident trees, from the registry (any thread). */
static void count_meshes(tdm_sched *e)
{
    uint32_t n = (uint32_t)tdm_registry_count(e->reg);
    pthread_mutex_lock(&e->stats_lock);
    e->stats.device_meshes = n;
    pthread_mutex_unlock(&e->stats_lock);
}

int tdm_sched_mesh_add(tdm_sched *e, const tdm_bvh *bvh)
{
    size_t added;
    return tdm_sched_meshes_add(e, &bvh, 1, &added);
}

int tdm_sched_meshes_add(tdm_sched *e, const tdm_bvh *const *bvhs, size_t n, size_t *added)
{
    *added = 0;
    if (!e->n_gpus) {
        *added = n;
        return TDM_OK;
    }
    if (n == 0) return TDM_OK;
    /* per tree: 0 resident before (referenced in pass 1), 1 to upload, 2 a repeat of an earlier one
       to upload (referenced once that one is in) */
    unsigned char *what = calloc(n, 1);
    void **copies = calloc(n * (size_t)TDM_SCHED_MAX_GPUS, sizeof *copies);
    int *failed = calloc(n, sizeof *failed);
    if (!what || !copies || !failed) {
        free(what);
        free(copies);
        free(failed);
        return TDM_ENOMEM;
    }
    pthread_mutex_lock(&e->upload_lock);
    /* 1: the resident ones referenced now (so that a removal meanwhile cannot drop them) */
    for (size_t i = 0; i < n; i++) {
        if (tdm_registry_ref(e->reg, bvhs[i])) continue;
        what[i] = 1;
        for (size_t j = 0; j < i; j++)
            if (what[j] == 1 && bvhs[j] == bvhs[i]) {
                what[i] = 2;
                break;
            }
    }
    /* 2: every engine's copies, on one lane of it for all the trees (uploads are serialised by
       upload_lock, so nobody inserts these meanwhile) */
    for (int d = 0; d < e->n_gpus; d++) {
        if (engine_broken(e, d)) continue; /* runs never go there: no copy needed */
        lane *l = NULL;
        for (size_t i = 0; i < n; i++) {
            if (what[i] != 1 || failed[i]) continue;
            if (!l) {
                l = lane_get_dev(e, d);
                free_removed(e, l);
            }
            void **c = &copies[i * TDM_SCHED_MAX_GPUS + (size_t)d];
            int rc = e->gpus[d]->ops->mesh_add(e->gpus[d], l->elane, bvhs[i], c);
            if (rc != TDM_OK) {
                *c = NULL; /* the engine holds nothing of a failed upload */
                failed[i] = rc;
            }
        }
        if (l) {
            device_stats(e, l);
            lane_put(e, l);
        }
    }
    /* 3: in order, each tree in the registry (all or nothing per tree) until the first that failed */
    int rc = TDM_OK;
    size_t i = 0;
    for (; i < n && rc == TDM_OK; i++) {
        if (what[i] == 2 && !tdm_registry_ref(e->reg, bvhs[i])) rc = TDM_EGPU; /* its first did not get in */
        if (what[i] != 1 || rc != TDM_OK) continue;
        void **c = &copies[i * TDM_SCHED_MAX_GPUS];
        int held = 0;
        for (int d = 0; d < e->n_gpus; d++) held += c[d] != NULL;
        rc = failed[i] ? failed[i] : held == 0 ? TDM_EGPU : TDM_OK; /* held 0: every engine has failed */
        if (rc == TDM_OK) rc = tdm_registry_insert(e->reg, bvhs[i], c);
        if (rc == TDM_OK) memset(c, 0, TDM_SCHED_MAX_GPUS * sizeof *c); /* the registry's now */
    }
    *added = rc == TDM_OK ? n : i - 1;
    if (rc != TDM_OK)
        for (size_t j = i - 1; j < n; j++) {
            if (what[j] == 0 && j > i - 1) tdm_registry_unref(e->reg, bvhs[j]); /* referenced in pass 1 */
            free_copies(e, &copies[j * TDM_SCHED_MAX_GPUS]);
        }
    count_meshes(e); /* now that the registry has (or has not) the new ones */
    pthread_mutex_unlock(&e->upload_lock);
    free(what);
    free(copies);
    free(failed);
    return rc;
}

void tdm_sched_mesh_remove(tdm_sched *e, const tdm_bvh *bvh)
{
    if (!e->n_gpus) return;
    uint64_t epoch = tdm_registry_epoch(e->reg);
    tdm_registry_unref(e->reg, bvh);
    count_meshes(e);
    if (tdm_registry_epoch(e->reg) == epoch) return; /* still referenced */
    pthread_mutex_lock(&e->hook_lock);
    if (e->on_removed) e->on_removed(e->on_removed_data);
    pthread_mutex_unlock(&e->hook_lock);
}

void tdm_sched_on_removed(tdm_sched *e, void (*fn)(void *data), void *data)
{
    pthread_mutex_lock(&e->hook_lock);
    e->on_removed = fn;
    e->on_removed_data = data;
    pthread_mutex_unlock(&e->hook_lock);
}

int tdm_sched_reclaim_due(tdm_sched *e)
{
    return e->n_gpus && __atomic_load_n(&e->reclaimed, __ATOMIC_ACQUIRE) != tdm_registry_epoch(e->reg);
}

int tdm_sched_reclaim(tdm_sched *e)
{
    if (!e->n_gpus) return 0;
    uint64_t epoch = tdm_registry_epoch(e->reg); /* read first: a tree that leaves meanwhile is due again */
    if (__atomic_load_n(&e->reclaimed, __ATOMIC_ACQUIRE) == epoch) return 0;
    int left = 0;
    for (int d = 0; d < e->n_gpus; d++) {
        if (engine_broken(e, d) || !tdm_registry_removed(e->reg, d)) continue; /* a failed engine is never used */
        lane *l = lane_try_dev(e, d);
        if (!l) { /* every lane of it runs: each run frees at its start, or the next try does */
            left++;
            continue;
        }
        free_removed(e, l);
        device_stats(e, l);
        lane_put(e, l);
    }
    if (left) return left;
    /* up to epoch, every engine standing is done: moved forward only (another caller may have read a
       later epoch) */
    uint64_t seen = __atomic_load_n(&e->reclaimed, __ATOMIC_RELAXED);
    while (seen < epoch && !__atomic_compare_exchange_n(&e->reclaimed, &seen, epoch, 1, __ATOMIC_RELEASE,
                                                        __ATOMIC_RELAXED)) {
    }
    return 0;
}

/* ---- creation ----------------------------------------------------------------- */

static int calibrate(tdm_sched *e);

/* The CUDA devices the GPU engines run on: gpu_device alone, the list, or
 * every device present (device 0 when none is, so that starting it says why). */
static int device_list(const tdm_sched_config *cfg, int *dev)
{
    if (cfg->gpu_device >= 0) {
        dev[0] = cfg->gpu_device;
        return 1;
    }
    if (cfg->n_gpu_devices > 0) {
        memcpy(dev, cfg->gpu_devices, (size_t)cfg->n_gpu_devices * sizeof *dev);
        return cfg->n_gpu_devices;
    }
    int n = tdm_gpu_device_count();
    if (n > TDM_SCHED_MAX_GPUS) n = TDM_SCHED_MAX_GPUS;
    if (n < 1) n = 1;
    for (int k = 0; k < n; k++) dev[k] = k;
    return n;
}

/* "device 0" or "devices 0, 1" into buf. */
static void devices_text(const tdm_sched *e, char *buf, size_t len)
{
    int o = snprintf(buf, len, "CUDA device%s ", e->n_gpus > 1 ? "s" : "");
    for (int d = 0; d < e->n_gpus && o > 0 && (size_t)o < len; d++)
        o += snprintf(buf + o, len - (size_t)o, "%s%d", d ? ", " : "", e->gpu_dev[d]);
}

/* Starts the GPU-resident engines, one per listed device with `lanes` lanes
 * each (only the first device for the hybrid, which runs on it), and the
 * hybrid when it is the kind. On failure nothing is left started and why[]
 * says which device and why. */
static int start_gpu(tdm_sched *e, const tdm_sched_config *cfg, int lanes, char *why, size_t whylen)
{
    int dev[TDM_SCHED_MAX_GPUS];
    int n = device_list(cfg, dev);
    if (cfg->kind == TDM_BACKEND_HYBRID) n = 1;
    int rc = TDM_OK;
    for (int k = 0; k < n && rc == TDM_OK; k++) {
        tdm_gpu_engine_config gc = tdm_gpu_engine_config_default();
        gc.gpu.device = dev[k];
        gc.gpu.memory_budget = cfg->gpu_memory;
        gc.gpu.streams = cfg->gpu_streams;
        gc.gpu.program_cache = cfg->gpu_program_cache;
        gc.gpu.traversal = cfg->gpu_traversal == TDM_TRAVERSAL_BLOCKS ? TDM_GPU_TRAVERSE_BLOCKS
                           : cfg->gpu_traversal == TDM_TRAVERSAL_WIDE ? TDM_GPU_TRAVERSE_WIDE
                                                                      : TDM_GPU_TRAVERSE_PAIRS;
        int same = 0;
        for (int j = 0; j < n; j++) same += dev[j] == dev[k];
        if (cfg->gpu_memory == 0 && same > 1) {
            /* engines sharing a device share its default 80% */
            uint64_t total = tdm_gpu_device_memory(dev[k]);
            if (total) gc.gpu.memory_budget = (uint64_t)(0.8 * (double)total / same);
        }
        const char *w = NULL;
        rc = tdm_gpu_engine_create(&gc, e->pool, lanes, &e->gpus[k], &w);
        if (rc != TDM_OK) {
            if (n > 1 || cfg->n_gpu_devices > 0)
                snprintf(why, whylen, "CUDA device %d (entry %d of the device list): %s", dev[k], k + 1,
                         w && *w ? w : tdm_strerror(rc));
            else
                snprintf(why, whylen, "%s", w && *w ? w : tdm_strerror(rc));
            break;
        }
        e->gpu_dev[k] = dev[k];
        e->n_gpus = k + 1;
    }
    if (rc == TDM_OK) {
        e->engines[ON_GPU] = e->gpus[0];
        if (cfg->kind == TDM_BACKEND_HYBRID &&
            (rc = tdm_hybrid_engine_create(e->gpus[0], e->pool, NULL, &e->engines[ON_HYBRID])) != TDM_OK)
            snprintf(why, whylen, "the hybrid engine could not start");
    }
    if (rc != TDM_OK) {
        for (int k = e->n_gpus - 1; k >= 0; k--) e->gpus[k]->ops->destroy(e->gpus[k]);
        memset(e->gpus, 0, sizeof e->gpus);
        e->engines[ON_GPU] = NULL;
        e->n_gpus = 0;
    }
    return rc;
}

int tdm_sched_create(const tdm_sched_config *cfg, tdm_sched **out, char *why, size_t whylen)
{
    tdm_sched_config dc = tdm_sched_config_default();
    if (!cfg) cfg = &dc;
    *out = NULL;
    if (why && whylen) why[0] = 0;
    if (cfg->kind != TDM_BACKEND_AUTO && cfg->kind != TDM_BACKEND_CPU && cfg->kind != TDM_BACKEND_GPU &&
        cfg->kind != TDM_BACKEND_HYBRID) {
        if (why) snprintf(why, whylen, "unknown engine kind %d", (int)cfg->kind);
        return TDM_EINVAL;
    }
    if (cfg->threads < 0 || cfg->chunk_tasks == 0 || cfg->gpu_device < -1 || cfg->gpu_streams < 1 ||
        cfg->gpu_streams > 8 || cfg->lanes < 1 || cfg->lanes > MAX_LANES_PER_ENGINE || cfg->host_lanes < 0 ||
        cfg->host_lanes > MAX_HOST_LANES ||
        (cfg->gpu_traversal != TDM_TRAVERSAL_PAIRS && cfg->gpu_traversal != TDM_TRAVERSAL_BLOCKS &&
         cfg->gpu_traversal != TDM_TRAVERSAL_WIDE)) {
        if (why)
            snprintf(why, whylen, "threads must be >= 0, chunk_tasks >= 1, gpu_device >= -1, gpu_streams 1..8, "
                     "lanes 1..%d, host_lanes 0..%d and the traversal pairs, blocks or wide", MAX_LANES_PER_ENGINE,
                     MAX_HOST_LANES);
        return TDM_EINVAL;
    }
    int bad_dev = 0;
    for (int k = 0; k < cfg->n_gpu_devices && k < TDM_SCHED_MAX_GPUS; k++) bad_dev |= cfg->gpu_devices[k] < 0;
    if (cfg->n_gpu_devices < 0 || cfg->n_gpu_devices > TDM_SCHED_MAX_GPUS || bad_dev ||
        (cfg->gpu_device >= 0 && cfg->n_gpu_devices > 0)) {
        if (why)
            snprintf(why, whylen, "gpu_devices: 0..%d device indices >= 0 (0: every device), and not together with "
                     "gpu_device", TDM_SCHED_MAX_GPUS);
        return TDM_EINVAL;
    }
    tdm_sched *e = calloc(1, sizeof *e);
    if (!e) return TDM_ENOMEM;
    e->chunk = cfg->chunk_tasks;
    e->trace = getenv("TDM_ENGINE_TRACE") != NULL;
    const char *fe = getenv("TDM_ENGINE_FOLD_EARLY");
    e->fold_early = !(fe && strcmp(fe, "0") == 0);
    const char *cu = getenv("TDM_ENGINE_CULL");
    e->cull = !(cu && strcmp(cu, "0") == 0);
    const char *sa = getenv("TDM_ENGINE_SKIP_ANSWERED");
    e->skip_answered = !(sa && strcmp(sa, "0") == 0);
    const char *dcf = getenv("TDM_ENGINE_DEVICE_CONFIGS");
    e->device_configs = !(dcf && strcmp(dcf, "0") == 0);
    const char *dl = getenv("TDM_DISPATCH_LOADED");
    e->dispatch_loaded = !(dl && strcmp(dl, "0") == 0);
    e->solo_s = 1e-9 * (double)tdm_cpu_solo_ns();
    int locks = pthread_mutex_init(&e->stats_lock, NULL) == 0;
    locks += locks == 1 && pthread_mutex_init(&e->lane_lock, NULL) == 0;
    locks += locks == 2 && pthread_cond_init(&e->lane_freed, NULL) == 0;
    locks += locks == 3 && pthread_mutex_init(&e->upload_lock, NULL) == 0;
    locks += locks == 4 && pthread_mutex_init(&e->hook_lock, NULL) == 0;
    tdm_cost_figures none = {0, 0, 0, 0}; /* the GPU takes nothing until calibrated */
    locks += locks == 5 && tdm_cost_model_init(&e->model, &none) == TDM_OK;
    if (locks < 6) {
        if (locks > 0) pthread_mutex_destroy(&e->stats_lock);
        if (locks > 1) pthread_mutex_destroy(&e->lane_lock);
        if (locks > 2) pthread_cond_destroy(&e->lane_freed);
        if (locks > 3) pthread_mutex_destroy(&e->upload_lock);
        if (locks > 4) pthread_mutex_destroy(&e->hook_lock);
        free(e);
        return TDM_ESYS;
    }
    /* the hybrid engine is one object with one set of buffers: one run at a time */
    int lanes = cfg->kind == TDM_BACKEND_HYBRID ? 1 : cfg->lanes;
    e->n_lanes = lanes; /* until the GPU engines are counted (tdm_sched_destroy reads it) */
    int rc = tdm_pool_create(cfg->threads, "tdm-cpu", &e->pool);
    if (rc != TDM_OK) {
        if (why) snprintf(why, whylen, "CPU engine: %s", tdm_strerror(rc));
        tdm_sched_destroy(e);
        return rc;
    }
    int threads = tdm_pool_threads(e->pool);
    char no_gpu[300] = "";
    if (cfg->kind != TDM_BACKEND_CPU) {
        rc = start_gpu(e, cfg, lanes, no_gpu, sizeof no_gpu);
        if (rc != TDM_OK && cfg->kind != TDM_BACKEND_AUTO) {
            if (why)
                snprintf(why, whylen, "no %s engine: %s%s%s", tdm_backend_name(cfg->kind), tdm_strerror(rc),
                         no_gpu[0] ? ": " : "", no_gpu);
            tdm_sched_destroy(e);
            return rc == TDM_ENOMEM ? rc : TDM_ENODEV;
        }
    }
    /* lane k runs on GPU engine k % n_gpus, on that engine's lane k / n_gpus */
    e->n_lanes = lanes * (e->n_gpus ? e->n_gpus : 1);
    e->free_lanes = e->n_lanes == 64 ? ~0ull : (1ull << e->n_lanes) - 1;
    for (int k = 0; k < e->n_lanes; k++) {
        e->lanes[k].index = k;
        e->lanes[k].dev = e->n_gpus ? k % e->n_gpus : 0;
        e->lanes[k].elane = e->n_gpus ? k / e->n_gpus : k;
    }
    e->n_host = cfg->host_lanes;
    e->free_host = (1u << e->n_host) - 1;
    for (int k = e->n_lanes; k < e->n_lanes + e->n_host; k++) {
        e->lanes[k].index = k;
        e->lanes[k].host = 1;
        e->lanes[k].cpu_only = 1;
    }
    e->stats.gpu_engines = (uint32_t)e->n_gpus;
    for (int d = 0; d < e->n_gpus; d++) e->stats.gpu_engine_device[d] = e->gpu_dev[d];
    if ((rc = tdm_registry_create(e->n_gpus ? e->n_gpus : 1, &e->reg)) != TDM_OK ||
        (rc = tdm_cpu_backend_create(e->pool, e->n_lanes + e->n_host, &e->engines[ON_CPU])) != TDM_OK) {
        if (why) snprintf(why, whylen, "CPU engine: %s", tdm_strerror(rc));
        tdm_sched_destroy(e);
        return rc;
    }
    for (int d = 0; d < e->n_gpus; d++) { /* every engine's memory and budget in the stats from the start */
        lane *l = lane_get_dev(e, d);
        device_stats(e, l);
        lane_put(e, l);
    }
    char devs[160];
    devices_text(e, devs, sizeof devs);
    if (!e->n_gpus) {
        e->kind = TDM_BACKEND_CPU;
        if (cfg->kind == TDM_BACKEND_CPU)
            snprintf(e->detail, sizeof e->detail, "CPU engine, %d threads (chosen by configuration)", threads);
        else
            snprintf(e->detail, sizeof e->detail, "CPU engine, %d threads; no GPU engine: %s", threads,
                     no_gpu[0] ? no_gpu : "no usable GPU");
    } else if (cfg->kind == TDM_BACKEND_AUTO) {
        e->kind = TDM_BACKEND_GPU;
        e->dispatch = 1;
        if (cfg->calibrate && (rc = calibrate(e)) != TDM_OK) {
            if (why) snprintf(why, whylen, "calibrating the dispatch cost model failed: %s", tdm_strerror(rc));
            tdm_sched_destroy(e);
            return rc;
        }
        if (!cfg->calibrate) {
            tdm_cost_model_destroy(&e->model);
            tdm_cost_figures f = tdm_cost_figures_builtin();
            tdm_cost_model_init(&e->model, &f); /* cannot fail: the same lock was made before */
        }
        tdm_cost_figures f;
        tdm_cost_model_get(&e->model, &f, NULL);
        snprintf(e->detail, sizeof e->detail,
                 "GPU-resident engine on %s (%d lanes%s) with CPU engine (%d threads) for small runs: runs of >= %llu "
                 "tasks go to the GPU (cost model: CPU %.3g s + %.3g s/task, GPU %.3g s + %.3g s/task)",
                 devs, lanes, e->n_gpus > 1 ? " each" : "", threads,
                 (unsigned long long)tdm_cost_model_threshold(&e->model), f.c_off, f.c_cpu, f.g_off, f.c_gpu);
    } else {
        e->kind = cfg->kind;
        snprintf(e->detail, sizeof e->detail, "%s engine on %s (forced by configuration); CPU engine (%d threads) for "
                 "scenes whose meshes are not on the GPU",
                 cfg->kind == TDM_BACKEND_GPU ? "GPU-resident" : "hybrid (CPU traversal, GPU tests)", devs, threads);
    }
    *out = e;
    return TDM_OK;
}

void tdm_sched_destroy(tdm_sched *e)
{
    if (!e) return;
    tdm_gpu_express_destroy(e->express); /* its kernel first: nothing below waits for it */
    if (e->reg) {
        freer f = {e, 0};
        tdm_registry_destroy(e->reg, free_copy, &f); /* copies exist only with a GPU engine */
    }
    if (e->engines[ON_HYBRID]) e->engines[ON_HYBRID]->ops->destroy(e->engines[ON_HYBRID]); /* borrows gpus[0] */
    for (int d = e->n_gpus - 1; d >= 0; d--) e->gpus[d]->ops->destroy(e->gpus[d]);
    if (e->engines[ON_CPU]) e->engines[ON_CPU]->ops->destroy(e->engines[ON_CPU]);
    for (int k = 0; k < e->n_lanes + e->n_host; k++) {
        lane *l = &e->lanes[k];
        free(l->tasks);
        free(l->res);
        free(l->refs);
        free(l->sums);
        free(l->room);
        free(l->hits);
        free(l->pairs);
        free(l->copies);
        free(l->mcopies);
        free(l->mscene);
        free(l->kept);
        free(l->first);
        free(l->bits);
    }
    tdm_pool_destroy(e->pool);
    pthread_mutex_destroy(&e->stats_lock);
    pthread_mutex_destroy(&e->lane_lock);
    pthread_cond_destroy(&e->lane_freed);
    pthread_mutex_destroy(&e->upload_lock);
    pthread_mutex_destroy(&e->hook_lock);
    tdm_cost_model_destroy(&e->model);
    free(e);
}

int tdm_sched_lanes(const tdm_sched *e) { return e->n_lanes; }
int tdm_sched_host_lanes(const tdm_sched *e) { return e->n_host; }
int tdm_sched_gpu_engines(const tdm_sched *e) { return e->n_gpus; }

static int reserve(void **p, size_t *cap, size_t need, size_t size);
static int reserve_tasks(lane *l, size_t n);

int tdm_sched_prepare(tdm_sched *e, size_t max_tasks)
{
    int rc = TDM_OK;
    for (int d = 0; d < e->n_gpus && rc == TDM_OK; d++) rc = e->gpus[d]->ops->prepare(e->gpus[d], max_tasks);
    if (rc == TDM_OK && e->engines[ON_HYBRID])
        rc = e->engines[ON_HYBRID]->ops->prepare(e->engines[ON_HYBRID], max_tasks);
    /* every lane's scratch at full size and touched, so that no run pays its page faults */
    size_t n = max_tasks < e->chunk ? max_tasks : e->chunk;
    for (int k = 0; k < e->n_lanes && rc == TDM_OK; k++) { /* no run in progress: every lane is free */
        lane *l = &e->lanes[k];
        size_t qcap = l->queries_cap, qcap2 = l->queries_cap;
        if (reserve_tasks(l, n) != TDM_OK || reserve((void **)&l->sums, &qcap, max_tasks, sizeof *l->sums) != TDM_OK ||
            reserve((void **)&l->room, &qcap2, max_tasks, sizeof *l->room) != TDM_OK ||
            reserve((void **)&l->kept, &l->kept_cap, max_tasks, sizeof *l->kept) != TDM_OK ||
            reserve((void **)&l->first, &l->first_cap, max_tasks + 1, sizeof *l->first) != TDM_OK) {
            l->queries_cap = qcap < qcap2 ? qcap : qcap2;
            rc = TDM_ENOMEM;
        } else {
            l->queries_cap = qcap;
            memset(l->res, 0, l->chunk_cap * sizeof *l->res);
            memset(l->refs, 0, l->chunk_cap * sizeof *l->refs);
            memset(l->sums, 0, l->queries_cap * sizeof *l->sums);
            memset(l->room, 0, l->queries_cap * sizeof *l->room);
            memset(l->kept, 0, l->kept_cap * sizeof *l->kept);
            memset(l->first, 0, l->first_cap * sizeof *l->first);
        }
    }
    return rc;
}

tdm_backend_kind tdm_sched_backend(const tdm_sched *e) { return e->kind; }
const char *tdm_sched_detail(const tdm_sched *e) { return e->detail; }

void tdm_sched_get_stats(tdm_sched *e, tdm_sched_stats *s)
{
    pthread_mutex_lock(&e->stats_lock);
    *s = e->stats;
    pthread_mutex_unlock(&e->stats_lock);
    if (e->express) {
        uint64_t answered;
        tdm_gpu_express_counts(e->express, &s->express_launches, &answered);
    }
    int broken = __atomic_load_n(&e->n_broken, __ATOMIC_RELAXED);
    s->gpu_broken = broken > 0;
    s->gpu_engines_broken = (uint32_t)broken;
}

/* ---- scratch --------------------------------------------------------------------- */

/* Grows *p to hold at least `need` elements of `size` bytes, doubling so that
 * growth is rare; the contents are not kept. */
static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return TDM_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need) n = n > SIZE_MAX / 2 ? need : n * 2;
    if (n > SIZE_MAX / size) return TDM_ENOMEM;
    void *q = malloc(n * size);
    if (!q) return TDM_ENOMEM;
    free(*p);
    *p = q;
    *cap = n;
    return TDM_OK;
}

/* Same, keeping the contents (the hit list grows while it is filled). */
static int grow_keep(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return TDM_OK;
    size_t n = *cap ? *cap * 2 : 256;
    if (n < need) n = need;
    if (n > SIZE_MAX / size) return TDM_ENOMEM;
    void *q = realloc(*p, n * size);
    if (!q) return TDM_ENOMEM;
    *p = q;
    *cap = n;
    return TDM_OK;
}

/* Room for a chunk of n tasks' results and references (the tasks themselves are
 * made by the engines as they need them). */
static int reserve_tasks(lane *l, size_t n)
{
    size_t c1 = l->chunk_cap, c2 = l->chunk_cap;
    if (reserve((void **)&l->res, &c1, n, sizeof *l->res) || reserve((void **)&l->refs, &c2, n, sizeof *l->refs)) {
        /* keep the two arrays' common capacity honest after a partial failure */
        l->chunk_cap = c1 < c2 ? c1 : c2;
        return TDM_ENOMEM;
    }
    l->chunk_cap = c1;
    return TDM_OK;
}

/* ---- tasks ----------------------------------------------------------------------- */

/* Query q's checked pair k: its two trees, and B placed in A's frame from both
 * world poses. */
static tdm_xform pair_of(const tdm_sched_query *q, uint32_t k, const tdm_bvh **ta, const tdm_bvh **tb)
{
    const tdm_scene *s = q->scene;
    const tdm_scene_check *c = &s->checks[k];
    const tdm_scene_obj *a = &s->objects[c->a], *b = &s->objects[c->b];
    const tdm_xform *xa = a->movable ? &q->poses[s->slot[c->a]] : &a->pose;
    const tdm_xform *xb = b->movable ? &q->poses[s->slot[c->b]] : &b->pose;
    *ta = a->bvh;
    *tb = b->bvh;
    /* A fixed at the origin (an environment in world coordinates, the common
     * case): the product would only repeat B's pose */
    return c->a_at_origin ? *xb : tdm_xform_rel(xa, xb);
}

/* The task of query q's checked pair k, without device copies. */
static void make_task(const tdm_sched_query *q, uint32_t k, tdm_task *t, uint32_t max_pairs, tdm_pair *pairs)
{
    t->b_in_a = pair_of(q, k, &t->a, &t->b);
    t->ga = t->gb = NULL;
    t->mode = q->mode;
    t->max_pairs = max_pairs;
    t->pairs = pairs;
    t->work = q->work;
    t->group = 0;
}

/* The queries of a run: a[i], or, when a is NULL, *proto with its poses at
 * proto->poses + i * stride (tdm_sched_run_poses: no array to read). */
typedef struct qset {
    const tdm_sched_query *a, *proto;
    size_t stride;
} qset;

static inline const tdm_sched_query *qat(const qset *s, size_t i, tdm_sched_query *tmp)
{
    if (s->a) return &s->a[i];
    *tmp = *s->proto;
    tmp->poses = s->proto->poses + i * s->stride;
    return tmp;
}

/* A chunk's tasks, made from its refs as the engine asks for them (any thread,
 * ranges of its choosing): building them where they are consumed spreads the
 * work over the engine's threads and keeps it next to its use (one thread
 * building a whole chunk first cost tandemd twice the GPU's work at tens of
 * millions of queries per second). */
typedef struct ref_tasks {
    qset queries;
    const task_ref *refs; /* task t is refs[t]; or, when NULL, */
    uint32_t uniform;     /* ... query t / uniform's check t % uniform (every query has that many checks) */
    tdm_registry *reg;    /* non-NULL: look up the device copies ... */
    int dev;              /* ... of this GPU engine */
    void *const *copies;  /* or, when every query is of one scene: check k's copies are
                             copies[2k], copies[2k + 1] (looked up once per chunk, so the
                             threads making tasks share no lock) */
    const struct scene_copies_at *scenes; /* or, for a chunk of several scenes: scene i's check k's
                                             copies at mcopies[scenes[i].at + 2k], looked up once
                                             per scene and chunk (n_scenes of them) */
    size_t n_scenes;
    void *const *mcopies;
    tdm_sched_result *results; /* uniform, one check a query: fold answers into these as they come */
    int groups;                /* bool tasks carry their query as group (tdm_task) */
} ref_tasks;

static void fold_one(const tdm_sched_query *Q, const tdm_collide_result *r, tdm_sched_result *R);

/* A pair collides by containment (solid.h): only asked of a pair the engine
 * found free, in a scene with solid objects. */
static inline int solid_hit(const tdm_sched_query *Q, uint32_t k)
{
    return tdm_solids_hit(Q->scene, Q->poses, k);
}

/* What a pair colliding by containment alone adds: no triangle pair. */
static const tdm_collide_result no_pairs;

/* tdm_task_list.answered for a uniform chunk of one check a query: task t is
 * query t, whose answer is its one task's. */
static void answered_one(const tdm_task_list *l, size_t lo, size_t hi, const tdm_collide_result *res)
{
    const ref_tasks *c = l->ctx;
    tdm_sched_query tmp;
    for (size_t t = lo; t < hi; t++) fold_one(qat(&c->queries, t, &tmp), &res[t - lo], &c->results[t]);
}

static int make_refs(const tdm_task_list *l, size_t lo, size_t hi, tdm_task *out)
{
    const ref_tasks *c = l->ctx;
    const tdm_bvh *la = NULL, *lb = NULL; /* the last trees looked up, and their copies */
    void *da = NULL, *db = NULL;
    const tdm_scene *last_scene = NULL; /* with c->scenes: the last query's scene, and its copies */
    void *const *base = NULL;
    /* uniform: task i is query i / c's check i % c, stepped without dividing */
    size_t uq = c->refs ? 0 : lo / c->uniform;
    uint32_t uk = c->refs ? 0 : (uint32_t)(lo % c->uniform);
    for (size_t i = lo; i < hi; i++, out++) {
        size_t qi = c->refs ? c->refs[i].query : uq;
        uint32_t ki = c->refs ? c->refs[i].check : uk;
        if (!c->refs && ++uk == c->uniform) {
            uk = 0;
            uq++;
        }
        tdm_sched_query tmp;
        const tdm_sched_query *Q = qat(&c->queries, qi, &tmp);
        make_task(Q, ki, out, Q->mode == TDM_MODE_CONTACTS ? Q->max_contacts : 1, NULL);
        /* a query's refs come together, in check order (culled or not): the CPU engine skips
           those after its first colliding one */
        if (c->groups && Q->mode == TDM_MODE_BOOL) out->group = (uint32_t)qi + 1;
        if (c->scenes) {
            if (Q->scene != last_scene) { /* the refs of one query (one scene) come together */
                size_t i = 0;
                while (i < c->n_scenes && c->scenes[i].scene != Q->scene) i++;
                if (i == c->n_scenes) return -1; /* cannot happen: every scene of the chunk is listed */
                last_scene = Q->scene;
                base = c->mcopies + c->scenes[i].at;
            }
            out->ga = base[2 * (size_t)ki];
            out->gb = base[2 * (size_t)ki + 1];
            if (!out->ga || !out->gb) return -1;
            continue;
        }
        if (c->copies) {
            out->ga = c->copies[2 * (size_t)ki];
            out->gb = c->copies[2 * (size_t)ki + 1];
            if (!out->ga || !out->gb) return -1;
            continue;
        }
        if (!c->reg) continue;
        /* an entry found stays valid for the run: a tree leaves only once no query holds it,
         * and its copies are freed after that (free_removed: at a run's or an upload's start,
         * or by tdm_sched_reclaim on a free lane) */
        if (out->a != la || out->b != lb) {
            tdm_registry_find2(c->reg, c->dev, out->a, out->b, &da, &db);
            la = out->a;
            lb = out->b;
        }
        if (!da || !db) return -1;
        out->ga = da;
        out->gb = db;
    }
    return 0;
}

/* ---- running a chunk ------------------------------------------------------------ */

/* Runs the tasks of l->refs[0..nt) into l->res on the engine the kind and the
 * cost model pick, and counts the chunk's tasks and queries (a query counts
 * where its first task runs) for that engine. A GPU failure re-runs the chunk
 * on the CPU engine (and a broken device is not used again), so that a query
 * never fails for the GPU's sake. */
/* l's GPU engine's copies of every check of scene s into l->copies (two per
 * check), or NULL when there is no room for them. */
static void *const *scene_copies(tdm_sched *e, lane *l, const tdm_scene *s)
{
    if (reserve((void **)&l->copies, &l->copies_cap, 2 * (size_t)s->n_checks, sizeof *l->copies) != TDM_OK)
        return NULL;
    for (uint32_t k = 0; k < s->n_checks; k++)
        tdm_registry_find2(e->reg, l->dev, s->objects[s->checks[k].a].bvh, s->objects[s->checks[k].b].bvh,
                           &l->copies[2 * (size_t)k], &l->copies[2 * (size_t)k + 1]);
    return l->copies;
}

/* Most scenes of one chunk given their own copies table (more: per-task lookups). */
#define CHUNK_SCENES_MAX 256

/* For a chunk of nt task references over several scenes: every scene's copies, looked up
 * once (a batch pooled from many planners holds a few scenes, each with a
 * hundred checks or more, and its tasks would otherwise each take the
 * registry's lock). Returns the number of scenes, or 0 when there are too many
 * (or no memory): the tasks then look their copies up one by one. */
static size_t chunk_scene_copies(tdm_sched *e, lane *l, qset queries, size_t nt)
{
    size_t n = 0, total = 0, last_query = SIZE_MAX;
    const tdm_scene *last = NULL;
    for (size_t t = 0; t < nt; t++) {
        if (l->refs[t].query == last_query) continue; /* a query's refs come together */
        last_query = l->refs[t].query;
        tdm_sched_query tmp;
        const tdm_scene *s = qat(&queries, last_query, &tmp)->scene;
        if (s == last) continue;
        last = s;
        size_t i = 0;
        while (i < n && l->mscene[i].scene != s) i++;
        if (i < n) continue;
        if (n == CHUNK_SCENES_MAX) return 0;
        if (reserve((void **)&l->mscene, &l->mscene_cap, n + 1, sizeof *l->mscene) != TDM_OK) return 0;
        l->mscene[n++] = (struct scene_copies_at){s, total};
        total += 2 * (size_t)s->n_checks;
    }
    if (total / 2 > nt) return 0; /* more checks than tasks: one lookup per task costs less */
    if (reserve((void **)&l->mcopies, &l->mcopies_cap, total ? total : 1, sizeof *l->mcopies) != TDM_OK) return 0;
    for (size_t i = 0; i < n; i++) {
        const tdm_scene *s = l->mscene[i].scene;
        void **c = l->mcopies + l->mscene[i].at;
        for (uint32_t k = 0; k < s->n_checks; k++)
            tdm_registry_find2(e->reg, l->dev, s->objects[s->checks[k].a].bvh, s->objects[s->checks[k].b].bvh,
                               &c[2 * (size_t)k], &c[2 * (size_t)k + 1]);
    }
    return n;
}

/* Whether the cost model sends nt tasks to the GPU: while another lane runs too, a CPU engine
 * run that would wake the pool goes to the GPU instead (tdm_cost_model_pick_gpu_loaded). With two
 * GPU engines' six lanes, runs the plain model sent to the CPU engine took 13 of 32 cores and the
 * Apartment row on both GPUs from 1.89x one GPU's to 1.44x (bench/results/issue14.md). */
static int dispatch_gpu(tdm_sched *e, size_t nt)
{
    if (e->dispatch_loaded && /* lanes taken: more than this one */
        e->n_lanes - __builtin_popcountll(__atomic_load_n(&e->free_lanes, __ATOMIC_RELAXED)) > 1)
        return tdm_cost_model_pick_gpu_loaded(&e->model, nt, tdm_pool_threads(e->pool), e->solo_s);
    return tdm_cost_model_pick_gpu(&e->model, nt);
}

/* ... one_scene: every query of the chunk is of this scene (NULL: not known). */
/* The engine the kind and the cost model pick for nt tasks on lane l: its GPU
 * engine (or the hybrid, on GPU engine 0), unless that one has failed. */
static int pick_engine(tdm_sched *e, const lane *l, size_t nt)
{
    if (l->cpu_only) return ON_CPU;
    if (e->n_gpus && !engine_broken(e, l->dev) && (!e->dispatch || dispatch_gpu(e, nt)))
        return e->kind == TDM_BACKEND_HYBRID ? ON_HYBRID : ON_GPU;
    return ON_CPU;
}

/* ... whole: when non-zero, the chunk holds every task of `whole` queries (culling's
 * windows), which count for the engine that ran it; otherwise a query counts where
 * its check 0 runs. */
static int run_chunk(tdm_sched *e, lane *l, qset queries, size_t nt, uint32_t uniform,
                     const tdm_scene *one_scene, tdm_sched_result *fold_into, size_t whole)
{
    int where = pick_engine(e, l, nt);
    /* one lookup per check rather than one per batch of tasks made, when the
     * chunk has at least as many tasks as the scene has checks */
    void *const *copies = where != ON_CPU && one_scene && one_scene->n_checks <= nt ? scene_copies(e, l, one_scene)
                                                                                     : NULL;
    /* several scenes (one_scene NULL) of culled checks (task references): a table per scene. A
       uniform chunk (rigid scenes of a check or two: consecutive tasks of one request share their
       trees) keeps the lookups by tree pair, which then happen once per request */
    size_t n_scenes = where != ON_CPU && !one_scene && !uniform ? chunk_scene_copies(e, l, queries, nt) : 0;
    ref_tasks c = {queries, uniform ? NULL : l->refs, uniform, where == ON_CPU ? NULL : e->reg, l->dev, copies,
                   n_scenes ? l->mscene : NULL, n_scenes, l->mcopies, fold_into, e->skip_answered};
    tdm_task_list list = {nt, make_refs, &c, NULL, fold_into ? answered_one : NULL, l->cpu_only};
    double t0 = now_s();
    int rc = TDM_OK;
    if (where != ON_CPU) {
        tdm_backend *b = where == ON_GPU ? e->gpus[l->dev] : e->engines[where];
        /* an engine that hands every answer to the fold needs no results array */
        rc = b->ops->run(b, l->elane, &list, fold_into && b->answers_all ? NULL : l->res);
    }
    double dt = now_s() - t0;
    if (rc == TDM_ECANCELED || rc == TDM_ENOMEM) { /* a tree not resident, or no room for the tasks */
        where = ON_CPU;
        rc = TDM_OK;
    } else if (rc != TDM_OK) {
        if (rc == TDM_EGPU) engine_failed(e, l->dev);
        int left = e->n_gpus - __atomic_load_n(&e->n_broken, __ATOMIC_RELAXED);
        fprintf(stderr, "tandem engine: the %s engine on CUDA device %d%s failed on %zu tasks (%s); they run on the "
                "CPU engine%s\n", where == ON_GPU ? "GPU" : "hybrid", e->gpu_dev[l->dev],
                e->n_gpus > 1 ? " (one of the GPU engines)" : "", nt, tdm_strerror(rc),
                rc != TDM_EGPU ? ""
                : left > 0     ? ", and later runs on the other GPU engines"
                               : ", as will every later run");
        where = ON_CPU;
    }
    if (where == ON_CPU) {
        c.reg = NULL;
        c.copies = NULL;
        c.scenes = NULL;
        tdm_backend *b = e->engines[ON_CPU];
        t0 = now_s();
        b->ops->run(b, l->index, &list, l->res); /* cannot fail: the CPU engine needs no copies */
        dt = now_s() - t0;
    }
    if (e->dispatch && rc == TDM_OK) tdm_cost_model_learn(&e->model, where != ON_CPU, nt, dt);
    l->run_on[where] += nt;
    if (whole) l->run_q[where] += whole;
    else if (uniform) l->run_q[where] += nt / uniform; /* whole queries, each starting at check 0 */
    else
        for (size_t t = 0; t < nt; t++) l->run_q[where] += l->refs[t].check == 0;
    if (where != ON_CPU) l->run_gpu_s += dt;
    l->run_engine_s += dt;
    return where;
}

/* Folds a colliding task's result (query Q's check ki) into Q's answer R: the
 * first colliding pair met names the objects; contacts add to *sum, capped
 * later. Returns 1 when the task's pairs are still wanted (contacts mode). */
static int fold_task(const tdm_sched_query *Q, uint32_t ki, const tdm_collide_result *r, tdm_sched_result *R,
                     uint64_t *sum)
{
    if (!R->colliding) {
        const tdm_scene *s = Q->scene;
        R->colliding = 1;
        R->object_a = s->objects[s->checks[ki].lo].id;
        R->object_b = s->objects[s->checks[ki].hi].id;
    }
    if (Q->mode == TDM_MODE_BOOL) {
        R->contacts = 1;
        return 0;
    }
    *sum += r->n_pairs;
    if (r->truncated) R->truncated = 1;
    return 1;
}

/* First pass over the whole batch, in chunks. */
static int count_pass(tdm_sched *e, lane *l, const tdm_sched_query *queries, size_t n, const tdm_scene *one_scene,
                      tdm_sched_result *results, uint64_t *box, uint64_t *tri, uint64_t *n_tasks)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += queries[i].scene->n_checks;
    size_t cap = total < e->chunk ? (size_t)total : e->chunk;
    if (cap == 0) return TDM_OK;
    if (reserve_tasks(l, cap) != TDM_OK) return TDM_ENOMEM;
    size_t q = 0;
    uint32_t k = 0;
    while (q < n) {
        size_t nt = 0;
        while (nt < cap && q < n) {
            const tdm_sched_query *Q = &queries[q];
            /* bool mode: a query answered in an earlier chunk needs no more tasks */
            if (k >= Q->scene->n_checks || (Q->mode == TDM_MODE_BOOL && results[q].colliding)) {
                q++;
                k = 0;
                continue;
            }
            l->refs[nt] = (task_ref){(uint32_t)q, k};
            nt++;
            k++;
        }
        if (nt == 0) break;
        run_chunk(e, l, (qset){queries, NULL, 0}, nt, 0, one_scene, NULL, 0);
        *n_tasks += nt;
        for (size_t t = 0; t < nt; t++) {
            const tdm_collide_result *r = &l->res[t];
            *box += r->box_tests;
            *tri += r->tri_tests;
            uint32_t qi = l->refs[t].query, ki = l->refs[t].check;
            const tdm_sched_query *Q = &queries[qi];
            if (!r->colliding) {
                if (Q->scene->solids && !results[qi].colliding && solid_hit(Q, ki))
                    fold_task(Q, ki, &no_pairs, &results[qi], &l->sums[qi]);
                continue;
            }
            if (!fold_task(Q, ki, r, &results[qi], &l->sums[qi])) continue;
            if (Q->pairs && r->n_pairs > 0) {
                if (grow_keep((void **)&l->hits, &l->hits_cap, l->n_hits + 1, sizeof *l->hits) != TDM_OK)
                    return TDM_ENOMEM;
                l->hits[l->n_hits++] = (hit){qi, ki, r->n_pairs, 0};
            }
        }
    }
    return TDM_OK;
}

/* Second pass: re-run the hits with exact room and expand their pairs. */
static int pairs_pass(tdm_sched *e, lane *l, const tdm_sched_query *queries, tdm_sched_result *results, uint64_t *n_tasks)
{
    size_t total = 0;
    for (size_t h = 0; h < l->n_hits; h++) {
        hit *x = &l->hits[h];
        uint32_t room = x->n_pairs < l->room[x->query] ? x->n_pairs : l->room[x->query];
        l->room[x->query] -= room;
        x->room = room;
        total += room;
    }
    if (reserve((void **)&l->pairs, &l->pairs_cap, total ? total : 1, sizeof *l->pairs) != TDM_OK) return TDM_ENOMEM;
    size_t cap = l->n_hits < e->chunk ? l->n_hits : e->chunk;
    if (reserve_tasks(l, cap) != TDM_OK || reserve((void **)&l->tasks, &l->tasks_cap, cap, sizeof *l->tasks) != TDM_OK)
        return TDM_ENOMEM;
    size_t h = 0, off = 0;
    while (h < l->n_hits) {
        size_t nt = 0, first = h, first_off = off;
        for (; h < l->n_hits && nt < cap; h++) {
            const hit *x = &l->hits[h];
            if (x->room == 0) continue;
            make_task(&queries[x->query], x->check, &l->tasks[nt], x->room, &l->pairs[off]);
            l->refs[nt] = (task_ref){x->query, x->check};
            off += x->room;
            nt++;
        }
        if (nt > 0) {
            tdm_task_list list = tdm_task_list_array(l->tasks, nt);
            list.one_thread = l->cpu_only;
            e->engines[ON_CPU]->ops->run(e->engines[ON_CPU], l->index, &list, l->res);
        }
        *n_tasks += nt;
        l->run_on[ON_CPU] += nt;
        /* expand in the same order the tasks were made */
        size_t t = 0, o = first_off;
        for (size_t g = first; g < h; g++) {
            const hit *x = &l->hits[g];
            if (x->room == 0) continue;
            const tdm_sched_query *Q = &queries[x->query];
            const tdm_scene *s = Q->scene;
            const tdm_scene_check *c = &s->checks[x->check];
            uint32_t id_lo = s->objects[c->lo].id, id_hi = s->objects[c->hi].id;
            int swapped = c->a != c->lo;
            tdm_sched_result *R = &results[x->query];
            uint32_t got = l->res[t].n_pairs < x->room ? l->res[t].n_pairs : x->room;
            for (uint32_t i = 0; i < got; i++) {
                tdm_pair p = l->pairs[o + i];
                Q->pairs[R->n_pairs++] = (tdm_sched_contact){id_lo, swapped ? p.b_tri : p.a_tri, id_hi,
                                                       swapped ? p.a_tri : p.b_tri};
            }
            o += x->room;
            t++;
        }
    }
    return TDM_OK;
}

/* ---- the uniform batch ------------------------------------------------------------- */

/* A batch whose queries all have the same number of checked pairs (every query
 * of one scene, tandem check's and most of tandemd's batches) needs no list of
 * task references: task t is query t / c's check t % c. When it fits one chunk
 * and lists no pairs, the whole run is that chunk, and its host work (checking
 * the queries, folding the answers) runs on the pool: done one query after
 * another it cost ~30 ns a query, as much as the GPU's whole run on the light
 * scenes. */

/* Below this many queries the host passes run on the caller alone. */
#define PARALLEL_QUERIES 16384

typedef struct scan_job {
    const tdm_sched_query *queries;
    tdm_sched_result *results;
    size_t n;
    uint32_t checks;      /* queries[0]'s */
    uint32_t chunk;       /* the scheduler's */
    int bad, mixed, pairs, scenes; /* (atomic) an invalid query; one with another check count; one listing
                                      pairs; one of another scene than queries[0]'s */
    int no_cull;          /* (atomic) a query whose scene has fewer than two checks, or more than a chunk */
} scan_job;

static size_t share_lo(size_t n, int k, int nk) { return n * (size_t)k / (size_t)nk; }

static void scan_share(void *arg, int k, int nk)
{
    scan_job *j = arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    int bad = 0, mixed = 0, pairs = 0, scenes = 0, no_cull = 0;
    const tdm_scene *first = j->queries[0].scene;
    for (size_t i = lo; i < hi; i++) {
        const tdm_sched_query *q = &j->queries[i];
        if (!q->scene || (!q->poses && q->scene->n_movable > 0) ||
            (q->mode != TDM_MODE_BOOL && q->mode != TDM_MODE_CONTACTS) ||
            (q->mode == TDM_MODE_CONTACTS && q->max_contacts == 0)) {
            bad = 1;
            break;
        }
        mixed |= q->scene->n_checks != j->checks;
        scenes |= q->scene != first;
        pairs |= q->mode == TDM_MODE_CONTACTS && q->pairs != NULL;
        no_cull |= q->scene->n_checks < 2 || q->scene->n_checks > j->chunk;
    }
    if (no_cull) __atomic_store_n(&j->no_cull, 1, __ATOMIC_RELAXED);
    if (bad) __atomic_store_n(&j->bad, 1, __ATOMIC_RELAXED);
    if (mixed) __atomic_store_n(&j->mixed, 1, __ATOMIC_RELAXED);
    if (pairs) __atomic_store_n(&j->pairs, 1, __ATOMIC_RELAXED);
    if (scenes) __atomic_store_n(&j->scenes, 1, __ATOMIC_RELAXED);
}

/* At most eight shares: these passes are short, and waking every thread of a
 * large pool for them costs more than the work. */
static int shares_for(const tdm_sched *e, size_t n)
{
    int t = tdm_pool_threads(e->pool);
    return n >= PARALLEL_QUERIES ? (t < 8 ? t : 8) : 1;
}

/* Folds a uniform chunk's task results (c per query, in check order) into the
 * answers of queries [lo, hi): the first colliding pair met, and the contacts
 * summed and capped, as count_pass and tdm_sched_run do for any batch. */
typedef struct fold_job {
    qset queries;
    tdm_sched_result *results;
    const tdm_collide_result *res;
    size_t n;
    uint32_t c;
    uint64_t box, tri; /* (atomic) */
} fold_job;

static void fold_share(void *arg, int k, int nk)
{
    fold_job *j = arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    uint64_t box = 0, tri = 0;
    for (size_t qi = lo; qi < hi; qi++) {
        tdm_sched_query tmp;
        const tdm_sched_query *Q = qat(&j->queries, qi, &tmp);
        tdm_sched_result out = {0, 0, 0, 0, 0, 0}, *R = &out;
        const tdm_collide_result *r = &j->res[qi * j->c];
        uint64_t sum = 0;
        int solids = Q->scene->solids != NULL;
        for (uint32_t ki = 0; ki < j->c; ki++, r++) {
            box += r->box_tests;
            tri += r->tri_tests;
            if (r->colliding) fold_task(Q, ki, r, R, &sum);
            else if (solids && !R->colliding && solid_hit(Q, ki)) fold_task(Q, ki, &no_pairs, R, &sum);
        }
        if (Q->mode == TDM_MODE_CONTACTS) {
            if (sum > Q->max_contacts) {
                R->contacts = Q->max_contacts;
                R->truncated = 1;
            } else {
                R->contacts = (uint32_t)sum;
            }
        }
        j->results[qi] = out;
    }
    __atomic_add_fetch(&j->box, box, __ATOMIC_RELAXED);
    __atomic_add_fetch(&j->tri, tri, __ATOMIC_RELAXED);
}

/* The answer of a query with one checked pair: its task's. */
static void fold_one(const tdm_sched_query *Q, const tdm_collide_result *r, tdm_sched_result *R)
{
    tdm_sched_result out = {0, 0, 0, 0, 0, 0};
    int by_solid = !r->colliding && Q->scene->solids && solid_hit(Q, 0);
    if (by_solid) r = &no_pairs;
    if (r->colliding || by_solid) {
        const tdm_scene *s = Q->scene;
        out.colliding = 1;
        out.object_a = s->objects[s->checks[0].lo].id;
        out.object_b = s->objects[s->checks[0].hi].id;
        if (Q->mode == TDM_MODE_BOOL) {
            out.contacts = 1;
        } else if (r->truncated || r->n_pairs > Q->max_contacts) {
            out.contacts = r->n_pairs < Q->max_contacts ? r->n_pairs : Q->max_contacts;
            out.truncated = 1;
        } else {
            out.contacts = r->n_pairs;
        }
    }
    *R = out;
}

/* ---- culling ----------------------------------------------------------------------
 *
 * A scene of several checks (a robot's links against a world) mostly checks pairs
 * that are far apart. Before any task is made, each query's checks are tested on
 * the objects' bounding spheres (tdm_scene_cull) and a check whose spheres are apart
 * gets no task: its pair cannot collide. "Apart" keeps a margin
 * (TDM_SCENE_CULL_MARGIN) far more than the rounding of the transforms and of the
 * float coordinates the engines test, so no pair that an engine would find colliding
 * is skipped and the answers are those of the full expansion. The kept checks stay in
 * check order, so the first colliding pair is the same one.
 *
 * The queries are cut into windows whose kept checks fit one chunk (a query never
 * straddles two: culling is used only when a query's checks fit a chunk); in each
 * window the pool counts the kept checks per query, lists their refs, the chunk
 * runs, and the pool folds the answers, query by query. */

typedef struct cull_job {
    qset queries;
    size_t q0, n;           /* the window: queries q0 .. q0 + n - 1 */
    uint32_t words;         /* bit words a query (the batch's most checks, in 64s) */
    uint64_t *bits;         /* by query (absolute index) */
    uint32_t *kept;         /* by query (absolute index) */
    const size_t *first;    /* fill: by query - q0, the first ref (n + 1 entries) */
    task_ref *refs;         /* fill: the window's refs */
    /* fold */
    tdm_sched_result *results;
    const tdm_collide_result *res;
    uint64_t *sums;
    uint64_t box, tri;      /* (atomic) */
    int failed;             /* (atomic) no memory for scratch */
} cull_job;

/* Tests every check of the share's queries (the whole batch is the window). */
static void cull_count_share(void *arg, int k, int nk)
{
    cull_job *j = arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    if (lo == hi) return;
    double (*C)[4] = NULL;
    size_t c_cap = 0;
    const tdm_scene *filled = NULL; /* the scene whose fixed centres C holds */
    for (size_t i = lo; i < hi; i++) {
        tdm_sched_query tmp;
        const tdm_sched_query *Q = qat(&j->queries, i, &tmp);
        const tdm_scene *s = Q->scene;
        if (s != filled) {
            size_t need = (size_t)s->n_movable + s->n_fixed;
            if (need > c_cap) {
                free(C);
                c_cap = need;
                C = malloc(sizeof *C * c_cap);
                if (!C) {
                    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
                    return;
                }
            }
            tdm_scene_cull_fixed(s, C);
            filled = s;
        }
        uint64_t *bits = j->bits + i * j->words;
        j->kept[i] = tdm_scene_cull(s, Q->poses, C, bits);
        /* a query of a scene with fewer checks than the batch's most: its other words are
           read by the fill too, and must not hold an earlier run's bits */
        for (uint32_t w = (s->n_checks + 63) / 64; w < j->words; w++) bits[w] = 0;
    }
    free(C);
}

/* Lists the refs of the window's kept checks, in check order. */
static void cull_fill_share(void *arg, int k, int nk)
{
    cull_job *j = arg;
    size_t lo = j->q0 + share_lo(j->n, k, nk), hi = j->q0 + share_lo(j->n, k + 1, nk);
    for (size_t i = lo; i < hi; i++) {
        task_ref *out = j->refs + j->first[i - j->q0];
        const uint64_t *b = j->bits + i * j->words;
        for (uint32_t w = 0; w < j->words; w++)
            for (uint64_t word = b[w]; word; word &= word - 1)
                *out++ = (task_ref){(uint32_t)i, w * 64 + (uint32_t)__builtin_ctzll(word)};
    }
}

/* Folds the window's task results into its queries' answers (run_batch zeroed
 * them and their sums). */
static void cull_fold_share(void *arg, int k, int nk)
{
    cull_job *j = arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    uint64_t box = 0, tri = 0;
    for (size_t w = lo; w < hi; w++) {
        size_t qi = j->q0 + w;
        tdm_sched_query tmp;
        const tdm_sched_query *Q = qat(&j->queries, qi, &tmp);
        int solids = Q->scene->solids != NULL;
        for (size_t t = j->first[w]; t < j->first[w + 1]; t++) {
            const tdm_collide_result *r = &j->res[t];
            box += r->box_tests;
            tri += r->tri_tests;
            if (r->colliding)
                fold_task(Q, j->refs[t].check, r, &j->results[qi], &j->sums[qi]);
            else if (solids && !j->results[qi].colliding && solid_hit(Q, j->refs[t].check))
                fold_task(Q, j->refs[t].check, &no_pairs, &j->results[qi], &j->sums[qi]);
        }
    }
    __atomic_add_fetch(&j->box, box, __ATOMIC_RELAXED);
    __atomic_add_fetch(&j->tri, tri, __ATOMIC_RELAXED);
}

/* Shares for a host pass over n queries of about c checks each. */
static int cull_shares(const tdm_sched *e, size_t n, size_t c)
{
    int t = tdm_pool_threads(e->pool);
    size_t work = n * (c ? c : 1);
    if (work < 16384) return 1;
    size_t most = work / 8192;
    return most < (size_t)t ? (int)most : t;
}

/* The batch's queries with culling (see above); every query's checks fit one
 * chunk and no query lists pairs. */
static int cull_pass(tdm_sched *e, lane *l, qset qs, size_t n, const tdm_scene *one_scene,
                     tdm_sched_result *results, uint64_t *box, uint64_t *tri, uint64_t *n_tasks)
{
    tdm_sched_query tmp;
    uint32_t most = 0;
    if (one_scene)
        most = one_scene->n_checks;
    else
        for (size_t i = 0; i < n; i++) {
            uint32_t c = qat(&qs, i, &tmp)->scene->n_checks;
            if (c > most) most = c;
        }
    uint32_t words = (most + 63) / 64;
    if (reserve((void **)&l->kept, &l->kept_cap, n, sizeof *l->kept) != TDM_OK ||
        reserve((void **)&l->first, &l->first_cap, n + 1, sizeof *l->first) != TDM_OK ||
        (uint64_t)n * words > SIZE_MAX / sizeof *l->bits ||
        reserve((void **)&l->bits, &l->bits_cap, n * (size_t)words, sizeof *l->bits) != TDM_OK)
        return TDM_ENOMEM;
    cull_job j = {qs, 0, n, words, l->bits, l->kept, l->first, NULL, results, NULL, l->sums, 0, 0, 0};
    tdm_pool_run(e->pool, cull_count_share, &j, cull_shares(e, n, most));
    if (j.failed) return TDM_ENOMEM;
    size_t cap = e->chunk;
    size_t q = 0;
    while (q < n) {
        /* the window: as many whole queries as fit a chunk */
        size_t q1 = q, total = 0;
        while (q1 < n && total + l->kept[q1] <= cap) {
            l->first[q1 - q] = total;
            total += l->kept[q1];
            q1++;
        }
        l->first[q1 - q] = total;
        if (total > 0) {
            if (reserve_tasks(l, total) != TDM_OK) return TDM_ENOMEM;
            cull_job f = j;
            f.q0 = q;
            f.n = q1 - q;
            f.refs = l->refs;
            f.res = l->res;
            tdm_pool_run(e->pool, cull_fill_share, &f, cull_shares(e, q1 - q, total / (q1 - q) + 1));
            run_chunk(e, l, qs, total, 0, one_scene, NULL, q1 - q);
            *n_tasks += total;
            tdm_pool_run(e->pool, cull_fold_share, &f, cull_shares(e, q1 - q, total / (q1 - q) + 1));
            *box += f.box;
            *tri += f.tri;
        } else {
            /* every check culled: answered here, counted for the engine the window would have run on */
            l->run_q[pick_engine(e, l, 0)] += q1 - q;
        }
        q = q1;
    }
    return TDM_OK;
}

/* The uniform batch's run: one chunk of n * c tasks, l->res sized for it. With
 * one check a query, the GPU-resident engine folds the answers as its chunks
 * come back (answered_one), overlapping the fold with the device's work on the
 * other chunks; otherwise the pool folds them after the run. */
static void run_uniform(tdm_sched *e, lane *l, qset queries, size_t n, uint32_t c,
                        const tdm_scene *one_scene, tdm_sched_result *results, uint64_t *box, uint64_t *tri,
                        uint64_t *n_tasks)
{
    size_t nt = n * (size_t)c;
    int early = c == 1 && e->fold_early;
    int where = run_chunk(e, l, queries, nt, c, one_scene, early ? results : NULL, 0);
    *n_tasks += nt;
    if (early && where == ON_GPU) return; /* folded as answered; the GPU counts no box or triangle tests */
    fold_job j = {queries, results, l->res, n, c, 0, 0};
    tdm_pool_run(e->pool, fold_share, &j, shares_for(e, n));
    *box += j.box;
    *tri += j.tri;
}

/* A checked batch: uniform (its check count) runs as one chunk with no refs;
 * otherwise qs.a is the array. */
/* ... host: every chunk on the CPU engine, on the caller's thread, on a host lane when
 * there are any (tdm_sched_run_configs_host). */
static int run_batch(tdm_sched *e, qset qs, size_t n, tdm_sched_result *results, uint32_t uniform, int cull,
                     const tdm_scene *one_scene, double t_scan, int host)
{
    const tdm_sched_query *queries = qs.a; /* NULL for tdm_sched_run_poses: uniform or cull then */
    lane *l = host && e->n_host ? lane_get_host(e) : lane_get(e);
    l->cpu_only = l->host || host;
    double t0 = now_s();
    int rc = TDM_OK;
    size_t qcap = l->queries_cap, qcap2 = l->queries_cap;
    if (reserve((void **)&l->sums, &qcap, n, sizeof *l->sums) != TDM_OK ||
        reserve((void **)&l->room, &qcap2, n, sizeof *l->room) != TDM_OK) {
        l->queries_cap = qcap < qcap2 ? qcap : qcap2;
        rc = TDM_ENOMEM;
        goto out;
    }
    l->queries_cap = qcap;
    l->n_hits = 0;
    if (!uniform) { /* the uniform fold writes every answer whole */
        memset(results, 0, n * sizeof *results);
        for (size_t i = 0; i < n; i++) {
            l->sums[i] = 0;
            l->room[i] = queries && queries[i].mode == TDM_MODE_CONTACTS && queries[i].pairs ? queries[i].max_contacts : 0;
        }
    }
    uint64_t box = 0, tri = 0, n_tasks = 0;
    memset(l->run_on, 0, sizeof l->run_on);
    memset(l->run_q, 0, sizeof l->run_q);
    l->run_gpu_s = 0;
    l->run_engine_s = 0;
    free_removed(e, l);
    if (uniform) {
        if (reserve_tasks(l, n * (size_t)uniform) != TDM_OK) {
            rc = TDM_ENOMEM;
            goto out;
        }
        run_uniform(e, l, qs, n, uniform, one_scene, results, &box, &tri, &n_tasks);
    } else if (cull) {
        rc = cull_pass(e, l, qs, n, one_scene, results, &box, &tri, &n_tasks);
    } else {
        rc = count_pass(e, l, queries, n, one_scene, results, &box, &tri, &n_tasks);
        if (rc == TDM_OK && l->n_hits > 0) rc = pairs_pass(e, l, queries, results, &n_tasks);
    }
    if (rc != TDM_OK) goto out;
    for (size_t i = 0; i < n && !uniform; i++) {
        tdm_sched_query tmp;
        const tdm_sched_query *Q = qat(&qs, i, &tmp);
        if (Q->mode != TDM_MODE_CONTACTS) continue;
        if (l->sums[i] > Q->max_contacts) {
            results[i].contacts = Q->max_contacts;
            results[i].truncated = 1;
        } else {
            results[i].contacts = (uint32_t)l->sums[i];
        }
    }
    double dt = now_s() - t0;
    if (e->trace)
        fprintf(stderr, "engine run: %zu queries, %llu tasks%s: %.3f ms, %.3f ms of it in the engines, %.1f ns a query on the "
                "host, and %.3f ms checking the queries before\n", n, (unsigned long long)n_tasks,
                uniform ? " (uniform)" : "", 1e3 * dt, 1e3 * l->run_engine_s, 1e9 * (dt - l->run_engine_s) / (double)n,
                1e3 * t_scan);
    pthread_mutex_lock(&e->stats_lock);
    e->stats.runs++;
    e->stats.queries += n;
    e->stats.cpu_queries += l->run_q[ON_CPU];
    e->stats.gpu_queries += l->run_q[ON_GPU];
    e->stats.hybrid_queries += l->run_q[ON_HYBRID];
    e->stats.tasks += n_tasks;
    e->stats.cpu_tasks += l->run_on[ON_CPU];
    e->stats.gpu_tasks += l->run_on[ON_GPU];
    e->stats.hybrid_tasks += l->run_on[ON_HYBRID];
    if (e->n_gpus && !l->cpu_only) {
        e->stats.gpu_engine_tasks[l->dev] += l->run_on[ON_GPU] + l->run_on[ON_HYBRID];
        e->stats.gpu_engine_runs[l->dev]++;
    }
    e->stats.box_tests += box;
    e->stats.tri_tests += tri;
    e->stats.seconds += dt;
    e->stats.gpu_seconds += l->run_gpu_s;
    pthread_mutex_unlock(&e->stats_lock);
    device_stats(e, l);
out:
    l->cpu_only = l->host;
    lane_put(e, l);
    return rc;
}

static int sched_run(tdm_sched *e, const tdm_sched_query *queries, size_t n, tdm_sched_result *results, int host)
{
    if (n > UINT32_MAX) return TDM_EINVAL;
    if (n > 0 && !queries[0].scene) return TDM_EINVAL;
    double t_scan = e->trace ? now_s() : 0;
    scan_job sj = {queries, results, n, n ? queries[0].scene->n_checks : 0, e->chunk, 0, 0, 0, 0, 0};
    tdm_pool_run(e->pool, scan_share, &sj, n ? shares_for(e, n) : 0);
    if (sj.bad) return TDM_EINVAL;
    const tdm_scene *one_scene = n && !sj.scenes ? queries[0].scene : NULL;
    int cull = n && e->cull && !sj.pairs && !sj.no_cull;
    uint32_t uniform = !cull && !sj.mixed && !sj.pairs && sj.checks > 0 && (uint64_t)n * sj.checks <= e->chunk
                           ? sj.checks
                           : 0;
    if (e->trace) t_scan = now_s() - t_scan;
    return run_batch(e, (qset){queries, NULL, 0}, n, results, uniform, cull, one_scene, t_scan, host);
}

int tdm_sched_run(tdm_sched *e, const tdm_sched_query *queries, size_t n, tdm_sched_result *results)
{
    return sched_run(e, queries, n, results, 0);
}

/* The poses of one scene: checked once, not per query. */
static int run_poses(tdm_sched *e, const tdm_sched_query *proto, size_t n, tdm_sched_result *results, int host)
{
    const tdm_scene *s = proto->scene;
    if (n > UINT32_MAX || !s || (!proto->poses && s->n_movable > 0) ||
        (proto->mode != TDM_MODE_BOOL && proto->mode != TDM_MODE_CONTACTS) ||
        (proto->mode == TDM_MODE_CONTACTS && proto->max_contacts == 0) || proto->pairs)
        return TDM_EINVAL;
    if (n == 0) return TDM_OK;
    if (e->cull && s->n_checks >= 2 && s->n_checks <= e->chunk)
        return run_batch(e, (qset){NULL, proto, s->n_movable}, n, results, 0, 1, s, 0, host);
    if (s->n_checks > 0 && (uint64_t)n * s->n_checks <= e->chunk)
        return run_batch(e, (qset){NULL, proto, s->n_movable}, n, results, s->n_checks, 0, s, 0, host);
    /* more than one chunk's tasks (or nothing to check): as queries, a piece at a time */
    size_t piece = s->n_checks ? e->chunk / s->n_checks : n;
    if (piece == 0) piece = 1;
    if (piece > 4096) piece = 4096;
    if (piece > n) piece = n;
    tdm_sched_query *q = malloc(piece * sizeof *q);
    if (!q) return TDM_ENOMEM;
    int rc = TDM_OK;
    for (size_t lo = 0; lo < n && rc == TDM_OK; lo += piece) {
        size_t m = n - lo < piece ? n - lo : piece;
        for (size_t i = 0; i < m; i++) {
            q[i] = *proto;
            q[i].poses = proto->poses + (lo + i) * s->n_movable;
        }
        rc = sched_run(e, q, m, results + lo, host);
    }
    free(q);
    return rc;
}

int tdm_sched_run_poses(tdm_sched *e, const tdm_sched_query *proto, size_t n, tdm_sched_result *results)
{
    return run_poses(e, proto, n, results, 0);
}

/* ---- batches of configurations ---------------------------------------------------
 *
 * tdm_sched_run_configs: on a GPU engine the whole batch runs on the device
 * (gpu/gpu.h, "batches of robot configurations": forward kinematics, culling,
 * tasks, traversal and fold), with answers equal to the host path's: the same
 * culling test, the same tasks, the same fold, geom/'s code on both sides (the
 * forward kinematics' sin and cos aside: geom/kin.h). Otherwise, or when the
 * device cannot take it, the poses are computed on the pool and the batch runs
 * as tdm_sched_run_poses. */

/* Configurations whose poses are made at a time on the host path. */
#define CONFIG_PIECE 16384

typedef struct kin_job {
    const tdm_kin *kin;
    const double *q;   /* the piece's configurations */
    tdm_xform *poses;  /* the piece's poses, n_elems each */
    size_t n;
    int failed;        /* (atomic) no memory for a link scratch */
} kin_job;

static void kin_share(void *arg, int k, int nk)
{
    kin_job *j = arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    if (lo == hi) return;
    tdm_xform *links = malloc(sizeof *links * j->kin->n_links);
    if (!links) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (size_t i = lo; i < hi; i++) {
        tdm_kin_links(j->kin, j->q + i * j->kin->n_q, links);
        tdm_kin_elems(j->kin, links, j->poses + i * j->kin->n_elems);
    }
    free(links);
}

static int configs_on_host(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin, const double *configs,
                           size_t n, tdm_sched_result *results, int host)
{
    size_t piece = n < CONFIG_PIECE ? n : CONFIG_PIECE;
    tdm_xform *poses = malloc(sizeof *poses * piece * (kin->n_elems ? kin->n_elems : 1));
    if (!poses) return TDM_ENOMEM;
    int rc = TDM_OK;
    for (size_t lo = 0; lo < n && rc == TDM_OK; lo += piece) {
        size_t m = n - lo < piece ? n - lo : piece;
        kin_job j = {kin, configs + lo * kin->n_q, poses, m, 0};
        tdm_pool_run(e->pool, kin_share, &j, m >= 1024 && !host ? tdm_pool_threads(e->pool) : 1);
        if (j.failed) {
            rc = TDM_ENOMEM;
            break;
        }
        tdm_sched_query q = *proto;
        q.poses = poses;
        rc = run_poses(e, &q, m, results + lo, host);
    }
    free(poses);
    return rc;
}

/* A configuration's result from the device's answer: its first colliding check in scene s
 * (UINT32_MAX: free) and, in contacts mode, its contacts, capped. */
static void device_result(const tdm_scene *s, uint32_t mode, uint32_t check, uint32_t contacts, uint32_t truncated,
                          tdm_sched_result *R)
{
    *R = (tdm_sched_result){0, 0, 0, 0, 0, 0};
    if (check != UINT32_MAX) {
        const tdm_scene_check *c = &s->checks[check];
        R->colliding = 1;
        R->object_a = s->objects[c->lo].id;
        R->object_b = s->objects[c->hi].id;
        R->contacts = 1;
    }
    if (mode == TDM_MODE_CONTACTS) {
        R->contacts = contacts;
        R->truncated = truncated;
    }
}

/* The whole batch on lane l's GPU engine, configuration i of groups[g] for the
 * g whose configurations hold it (side by side, in group order): TDM_OK, or an
 * error after which the host path answers (a tree not resident: TDM_ECANCELED).
 * Each group's scene is looked up in the registry once (its objects' copies
 * under one take of the lock), whatever its checks. */
/* A device run's robots, as tdm_gpu_engine_run_configs takes them: a scene whose program
 * the lane holds (made while no tree has left the registry since) goes by its key alone;
 * the others are made here, keyed, and kept by the lane (`whole` counts them). */
typedef struct cfg_args {
    tdm_gpu_robot *robots;
    void ***copies;
    void **check_copies, **obj_copies;
    const tdm_bvh **bvhs;
    tdm_gpu_check *checks;
    tdm_xform *fixed;
    uint32_t *entry;
    uint32_t *robot_of; /* NULL for one group */
    int whole;
} cfg_args;

static void cfg_args_free(cfg_args *a)
{
    free(a->robots);
    free(a->copies);
    free(a->check_copies);
    free(a->obj_copies);
    free(a->bvhs);
    free(a->checks);
    free(a->fixed);
    free(a->entry);
    free(a->robot_of);
    memset(a, 0, sizeof *a);
}

/* TDM_OK, TDM_ENOMEM, or TDM_ECANCELED (a tree not resident); a->... the caller's to free
 * (cfg_args_free) whatever it returns. */
static int cfg_args_make(tdm_sched *e, lane *l, const tdm_sched_configs_group *groups, size_t n_groups, size_t n,
                         cfg_args *a)
{
    size_t all_checks = 0, all_objects = 0;
    for (size_t g = 0; g < n_groups; g++) {
        all_checks += groups[g].scene->n_checks;
        all_objects += groups[g].scene->n_objects;
    }
    memset(a, 0, sizeof *a);
    a->robots = malloc(sizeof *a->robots * n_groups);
    a->copies = malloc(sizeof *a->copies * n_groups);
    a->check_copies = malloc(sizeof *a->check_copies * 2 * (all_checks ? all_checks : 1));
    a->obj_copies = malloc(sizeof *a->obj_copies * (all_objects ? all_objects : 1));
    a->bvhs = malloc(sizeof *a->bvhs * (all_objects ? all_objects : 1));
    a->checks = malloc(sizeof *a->checks * (all_checks ? all_checks : 1));
    a->fixed = malloc(sizeof *a->fixed * (all_objects ? all_objects : 1));
    a->entry = malloc(sizeof *a->entry * (all_objects ? all_objects : 1));
    a->robot_of = n_groups > 1 ? malloc(sizeof *a->robot_of * n) : NULL;
    if (!a->robots || !a->copies || !a->check_copies || !a->obj_copies || !a->bvhs || !a->checks || !a->fixed ||
        !a->entry || (n_groups > 1 && !a->robot_of))
        return TDM_ENOMEM;
    int rc = TDM_OK;
    uint64_t epoch = tdm_registry_epoch(e->reg);
    for (size_t g = 0, at_c = 0, at_o = 0, at_q = 0; g < n_groups; g++) {
        const tdm_scene *s = groups[g].scene;
        uint32_t K = s->n_checks, F = s->n_objects - s->n_movable;
        if (a->robot_of)
            for (size_t i = 0; i < groups[g].n; i++) a->robot_of[at_q + i] = (uint32_t)g;
        at_q += groups[g].n;
        if (tdm_gpu_engine_program_resident(e->gpus[l->dev], l->elane, s->serial, epoch, groups[g].kin)) {
            a->robots[g] = (tdm_gpu_robot){.kin = groups[g].kin, .n_checks = K, .key = s->serial, .epoch = epoch};
            a->copies[g] = NULL;
            continue;
        }
        a->whole++;
        for (uint32_t i = 0; i < s->n_objects; i++) a->bvhs[at_o + i] = s->objects[i].bvh;
        uint64_t made = tdm_registry_find_n(e->reg, l->dev, a->bvhs + at_o, s->n_objects, a->obj_copies + at_o);
        /* pose entries: movable slots, then the fixed objects in index order (as culling's centres) */
        tdm_xform *fx = a->fixed + at_o;
        uint32_t *en = a->entry + at_o;
        for (uint32_t i = 0, f = 0; i < s->n_objects; i++) {
            if (s->slot[i] != UINT32_MAX) {
                en[i] = s->slot[i];
            } else {
                fx[f] = s->objects[i].pose;
                en[i] = s->n_movable + f++;
            }
        }
        void **cc = a->check_copies + 2 * at_c;
        for (uint32_t k = 0; k < K; k++) {
            const tdm_scene_check *c = &s->checks[k];
            cc[2 * (size_t)k] = a->obj_copies[at_o + c->a];
            cc[2 * (size_t)k + 1] = a->obj_copies[at_o + c->b];
            if (!cc[2 * (size_t)k] || !cc[2 * (size_t)k + 1]) rc = TDM_ECANCELED;
            a->checks[at_c + k] = (tdm_gpu_check){en[c->a], en[c->b], c->a, c->b, c->a_at_origin,
                                                  s->solids ? s->solids->check[k] : 0u, s->cull_rsum[k]};
        }
        a->copies[g] = cc;
        a->robots[g] = (tdm_gpu_robot){groups[g].kin, F, fx, (const double (*)[4])s->fixed_centre,
                                       (const double (*)[3])s->slot_centre, K, a->checks + at_c, NULL, s->n_objects,
                                       s->solids ? s->solids->objs : NULL, s->solids ? s->solids->reps : NULL,
                                       s->solids ? s->solids->n_reps : 0, s->serial, made, NULL};
        at_c += K;
        at_o += s->n_objects;
    }
    return rc;
}

/* A device run's answers into results, group by group. */
static void configs_results(const tdm_sched_configs_group *groups, size_t n_groups, uint32_t mode,
                            const tdm_gpu_config_answer *ans, tdm_sched_result *results)
{
    for (size_t g = 0, i = 0; g < n_groups; g++) {
        const tdm_scene *s = groups[g].scene;
        for (size_t end = i + groups[g].n; i < end; i++)
            device_result(s, mode, ans[i].check, ans[i].contacts, ans[i].truncated, &results[i]);
    }
}

/* A device run's figures, for the stats (the lane's engine counters too). */
static void configs_count(tdm_sched *e, lane *l, size_t n, uint64_t tasks, double dt, double t_prep)
{
    pthread_mutex_lock(&e->stats_lock);
    e->stats.runs++;
    e->stats.queries += n;
    e->stats.gpu_queries += n;
    e->stats.tasks += tasks;
    e->stats.gpu_tasks += tasks;
    e->stats.gpu_engine_tasks[l->dev] += tasks;
    e->stats.gpu_engine_runs[l->dev]++;
    e->stats.seconds += dt;
    e->stats.gpu_seconds += dt;
    e->stats.config_prep_seconds += t_prep;
    pthread_mutex_unlock(&e->stats_lock);
    device_stats(e, l);
}

static int configs_on_device(tdm_sched *e, lane *l, const tdm_sched_configs_group *groups, size_t n_groups,
                             uint32_t mode, uint32_t max_contacts, const double *configs, size_t n,
                             tdm_sched_result *results)
{
    double t_prep = now_s();
    cfg_args a;
    tdm_gpu_config_answer *ans = NULL;
    int rc = cfg_args_make(e, l, groups, n_groups, n, &a);
    if (rc == TDM_OK && !(ans = malloc(sizeof *ans * n))) rc = TDM_ENOMEM;
    if (rc != TDM_OK) goto out;
    uint32_t cap = mode == TDM_MODE_CONTACTS ? max_contacts : 1;
    uint64_t tasks = 0;
    double t0 = now_s();
    t_prep = t0 - t_prep;
    rc = tdm_gpu_engine_run_configs(e->gpus[l->dev], l->elane, a.robots, (uint32_t)n_groups, a.robot_of,
                                    (void *const *const *)a.copies, configs, n, mode, cap, ans, &tasks);
    double dt = now_s() - t0;
    if (rc != TDM_OK) goto out;
    configs_results(groups, n_groups, mode, ans, results);
    configs_count(e, l, n, tasks, dt, t_prep);
    if (e->trace)
        fprintf(stderr, "engine run: %zu configurations of %zu robot scenes on the device, %llu tasks: %.3f ms\n", n,
                n_groups, (unsigned long long)tasks, 1e3 * dt);
out:
    cfg_args_free(&a);
    free(ans);
    return rc;
}

static int configs_check(const tdm_sched_configs_group *g, uint32_t mode, uint32_t max_contacts,
                         const double *configs)
{
    const tdm_scene *s = g->scene;
    const tdm_kin *kin = g->kin;
    size_t n = g->n;
    if (!s || !kin || kin->n_elems != s->n_movable || kin->n_links == 0 || n > UINT32_MAX ||
        (mode != TDM_MODE_BOOL && mode != TDM_MODE_CONTACTS) || (mode == TDM_MODE_CONTACTS && max_contacts == 0) ||
        (n > 0 && kin->n_q > 0 && !configs))
        return TDM_EINVAL;
    for (size_t i = 0; i < n * kin->n_q; i++)
        if (!isfinite(configs[i])) return TDM_ENONFINITE;
    return TDM_OK;
}

/* The device path, when it applies: TDM_OK, or TDM_ENODEV (not taken, or failed:
 * nothing written that counts). */
static int configs_device(tdm_sched *e, const tdm_sched_configs_group *groups, size_t n_groups, uint32_t mode,
                          uint32_t max_contacts, const double *configs, size_t n, tdm_sched_result *results, int force)
{
    int device = e->device_configs && e->n_gpus > 0 && e->kind != TDM_BACKEND_HYBRID;
    for (size_t g = 0; g < n_groups && device; g++) device = groups[g].scene->n_checks > 0;
    if (device && !force && e->dispatch)
        device = tdm_cost_model_pick_gpu(&e->model, n * (size_t)groups[0].scene->n_checks / 4);
    if (!device) return TDM_ENODEV;
    lane *l = lane_get(e);
    int rc = TDM_ECANCELED;
    if (!engine_broken(e, l->dev)) {
        free_removed(e, l);
        rc = configs_on_device(e, l, groups, n_groups, mode, max_contacts, configs, n, results);
        if (rc == TDM_EGPU) engine_failed(e, l->dev);
        if (rc != TDM_OK && rc != TDM_ECANCELED)
            fprintf(stderr, "tandem engine: the GPU engine on CUDA device %d failed on %zu configurations (%s); "
                    "they run on the host's path\n", e->gpu_dev[l->dev], n, tdm_strerror(rc));
    }
    lane_put(e, l);
    return rc == TDM_OK ? TDM_OK : TDM_ENODEV;
}

/* tdm_sched_run_configs (the device first, when it applies), or with `host` on the CPU engine
 * alone (tdm_sched_run_configs_host). */
static int run_configs(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin, const double *configs,
                       size_t n, tdm_sched_result *results, int host)
{
    tdm_sched_configs_group g = {proto->scene, kin, n};
    int rc = proto->pairs ? TDM_EINVAL : configs_check(&g, proto->mode, proto->max_contacts, configs);
    if (rc != TDM_OK || n == 0) return rc;
    if (!host && configs_device(e, &g, 1, proto->mode, proto->max_contacts, configs, n, results, 0) == TDM_OK)
        return TDM_OK;
    return configs_on_host(e, proto, kin, configs, n, results, host);
}

int tdm_sched_run_configs(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin, const double *configs,
                          size_t n, tdm_sched_result *results)
{
    return run_configs(e, proto, kin, configs, n, results, 0);
}

int tdm_sched_run_configs_host(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin, const double *configs,
                               size_t n, tdm_sched_result *results)
{
    return run_configs(e, proto, kin, configs, n, results, 1);
}

int tdm_sched_configs_on_device(const tdm_sched *e)
{
    return e->device_configs && e->n_gpus > 0 && e->kind != TDM_BACKEND_HYBRID;
}

/* ---- the express ring ------------------------------------------------------------ */

/* Ring places (a power of two): every in-flight configuration of 64 planners' rounds of up to
 * TDM_SCHED_EXPRESS_MAX states each, twice over. */
#define EXPRESS_ITEMS 32768u

int tdm_sched_express_start(tdm_sched *e, uint32_t blocks)
{
    if (blocks == 0) return TDM_OK;
    if (!tdm_sched_configs_on_device(e)) return TDM_ENODEV;
    if (e->express) return TDM_OK;
    return tdm_gpu_express_create(tdm_gpu_engine_lane(e->gpus[0], 0), blocks, EXPRESS_ITEMS, &e->express);
}

int tdm_sched_express_on(const tdm_sched *e) { return e->express != NULL; }

/* rc of a keep or a kick: a failed ring fails its engine once */
static void express_kept(tdm_sched *e, int rc)
{
    if (rc == TDM_EGPU && !engine_broken(e, 0)) {
        fprintf(stderr, "tandem engine: the express ring on CUDA device %d failed; its configurations run "
                        "the pooled way\n", e->gpu_dev[0]);
        engine_failed(e, 0);
    }
}

void tdm_sched_express_keep(tdm_sched *e)
{
    if (e->express) express_kept(e, tdm_gpu_express_keep(e->express));
}

/* Scene s's program on the ring: its checks, pairs (engine 0's copies of its trees) and
 * fixed objects, uploaded, a reference taken in *id. */
static int express_program(tdm_sched *e, const tdm_scene *s, const tdm_kin *kin, uint32_t *id)
{
    uint32_t K = s->n_checks, N = s->n_objects ? s->n_objects : 1;
    const tdm_bvh **bvhs = malloc(sizeof *bvhs * N);
    void **copies = malloc(sizeof *copies * N);
    tdm_gpu_check *checks = malloc(sizeof *checks * (K ? K : 1));
    tdm_gpu_pair *pairs = malloc(sizeof *pairs * (K ? K : 1));
    tdm_xform *fixed = malloc(sizeof *fixed * N);
    uint32_t *entry = malloc(sizeof *entry * N);
    int rc = TDM_ENOMEM;
    if (!bvhs || !copies || !checks || !pairs || !fixed || !entry) goto out;
    for (uint32_t i = 0; i < s->n_objects; i++) bvhs[i] = s->objects[i].bvh;
    tdm_registry_find_n(e->reg, 0, bvhs, s->n_objects, copies);
    uint32_t F = 0;
    for (uint32_t i = 0; i < s->n_objects; i++) {
        if (s->slot[i] != UINT32_MAX) {
            entry[i] = s->slot[i];
        } else {
            fixed[F] = s->objects[i].pose;
            entry[i] = s->n_movable + F++;
        }
    }
    tdm_gpu *g = tdm_gpu_engine_lane(e->gpus[0], 0);
    rc = TDM_OK;
    for (uint32_t k = 0; k < K && rc == TDM_OK; k++) {
        const tdm_scene_check *c = &s->checks[k];
        if (!copies[c->a] || !copies[c->b]) {
            rc = TDM_ECANCELED;
            break;
        }
        checks[k] = (tdm_gpu_check){entry[c->a], entry[c->b], c->a, c->b, c->a_at_origin,
                                    s->solids ? s->solids->check[k] : 0u, s->cull_rsum[k]};
        tdm_gpu_pair_of(g, copies[c->a], copies[c->b], &pairs[k]);
    }
    if (rc == TDM_OK) {
        tdm_gpu_robot r = {kin, F, fixed, (const double (*)[4])s->fixed_centre, (const double (*)[3])s->slot_centre,
                           K, checks, pairs, s->n_objects, s->solids ? s->solids->objs : NULL,
                           s->solids ? s->solids->reps : NULL, s->solids ? s->solids->n_reps : 0, s->serial, 0, NULL};
        rc = tdm_gpu_express_program(e->express, &r, id);
        if (rc == 0) {
            pthread_mutex_lock(&e->stats_lock);
            e->stats.express_programs++;
            pthread_mutex_unlock(&e->stats_lock);
        }
        if (rc == 1) rc = TDM_OK; /* uploaded meanwhile by another caller */
    }
out:
    free(bvhs);
    free(copies);
    free(checks);
    free(pairs);
    free(fixed);
    free(entry);
    return rc;
}

int tdm_sched_express_submit(tdm_sched *e, const tdm_scene *s, const tdm_kin *kin, const double *configs, size_t n,
                             uint32_t mode, uint32_t max_contacts, tdm_sched_express *x)
{
    if (!e->express || engine_broken(e, 0)) return TDM_ENODEV;
    if (n == 0 || n > TDM_SCHED_EXPRESS_MAX || s->n_checks == 0 || kin->n_q > TDM_GPU_EXPRESS_VALUES ||
        (mode == TDM_MODE_CONTACTS && max_contacts == 0))
        return TDM_EINVAL;
    uint32_t id;
    int rc = TDM_OK;
    if (!tdm_gpu_express_find(e->express, s->serial, 0, kin, &id)) rc = express_program(e, s, kin, &id);
    if (rc != TDM_OK) return rc;
    uint32_t cap = mode == TDM_MODE_CONTACTS ? max_contacts : 1;
    rc = tdm_gpu_express_submit(e->express, id, configs, (uint32_t)n, kin->n_q, mode, cap, &x->ticket);
    if (rc != TDM_OK) {
        tdm_gpu_express_release(e->express, id);
        return rc;
    }
    x->n = (uint32_t)n;
    x->prog = id;
    /* a launch if none is known to run; the polling thread's keep does the rest (the submitter,
       often a loop, makes no CUDA call while the kernel runs) */
    express_kept(e, tdm_gpu_express_kick(e->express));
    return TDM_OK;
}

int tdm_sched_express_poll(tdm_sched *e, tdm_sched_express *x, const tdm_scene *s, uint32_t mode,
                           tdm_sched_result *results)
{
    tdm_gpu_express_answer a[TDM_SCHED_EXPRESS_MAX];
    int rc = tdm_gpu_express_poll(e->express, x->ticket, x->n, a);
    if (rc == 0) return 0;
    tdm_gpu_express_release(e->express, x->prog);
    if (rc < 0) return rc;
    int over = 0;
    for (uint32_t i = 0; i < x->n; i++) {
        over |= a[i].overflow != 0;
        device_result(s, mode, a[i].check, a[i].contacts, a[i].truncated, &results[i]);
    }
    pthread_mutex_lock(&e->stats_lock);
    if (over) e->stats.express_overflows += x->n;
    else e->stats.express_configs += x->n, e->stats.queries += x->n, e->stats.gpu_queries += x->n;
    pthread_mutex_unlock(&e->stats_lock);
    return over ? TDM_EAGAIN : 1;
}

int tdm_sched_run_configs_device(tdm_sched *e, const tdm_sched_query *proto, const tdm_kin *kin,
                                 const double *configs, size_t n, tdm_sched_result *results)
{
    if (proto->pairs) return TDM_EINVAL;
    tdm_sched_configs_group g = {proto->scene, kin, n};
    return tdm_sched_run_configs_groups_device(e, &g, 1, proto->mode, proto->max_contacts, configs, results);
}

/* Groups of configurations side by side (n_groups >= 1): every one checked (configs_check, the
 * same n_q), their configurations counted in *n. */
static int groups_check(const tdm_sched_configs_group *groups, size_t n_groups, uint32_t mode, uint32_t max_contacts,
                        const double *configs, size_t *n)
{
    size_t J = groups[0].kin ? groups[0].kin->n_q : 0;
    *n = 0;
    for (size_t g = 0; g < n_groups; g++) {
        if (groups[g].kin && groups[g].kin->n_q != J) return TDM_EINVAL;
        int rc = configs_check(&groups[g], mode, max_contacts, configs ? configs + *n * J : NULL);
        if (rc != TDM_OK) return rc;
        *n += groups[g].n;
    }
    return TDM_OK;
}

int tdm_sched_run_configs_groups_device(tdm_sched *e, const tdm_sched_configs_group *groups, size_t n_groups,
                                        uint32_t mode, uint32_t max_contacts, const double *configs,
                                        tdm_sched_result *results)
{
    if (n_groups == 0) return TDM_OK;
    size_t n;
    int rc = groups_check(groups, n_groups, mode, max_contacts, configs, &n);
    if (rc != TDM_OK) return rc;
    if (n == 0) return TDM_OK;
    if (n > UINT32_MAX) return TDM_EINVAL;
    return configs_device(e, groups, n_groups, mode, max_contacts, configs, n, results, 1);
}

/* ---- asynchronous device runs of configurations (sched.h) ------------------------ */

#define ASYNC_RUNS 8 /* a lane's slots at most (gpu_engine.c's MAX_SLOTS) */

enum { A_FREE, A_RUNNING, A_REDO, A_ENDED };

typedef struct async_run {
    int state, slot, rc;
    void *tag;
    tdm_sched_result *results;
    tdm_sched_configs_group *groups;
    size_t n_groups, groups_cap;
    double *configs; /* kept for a re-run of what the run could not answer */
    size_t configs_cap, n, done;
    tdm_gpu_config_answer *ans;
    size_t ans_cap;
    uint32_t mode, max_contacts;
    uint64_t tasks, ended; /* ended: the order runs ended in */
    double t0, t_prep;
} async_run;

struct tdm_sched_async {
    tdm_sched *e;
    lane *l; /* held while a run is in flight */
    async_run runs[ASYNC_RUNS];
    int running, ended;
    uint64_t n_ended;
};

int tdm_sched_async_create(tdm_sched *e, tdm_sched_async **out)
{
    *out = NULL;
    if (!tdm_sched_configs_on_device(e)) return TDM_ENODEV;
    tdm_sched_async *a = calloc(1, sizeof *a);
    if (!a) return TDM_ENOMEM;
    a->e = e;
    *out = a;
    return TDM_OK;
}

void tdm_sched_async_destroy(tdm_sched_async *a)
{
    if (!a) return;
    tdm_sched_async_drain(a);
    for (int k = 0; k < ASYNC_RUNS; k++) {
        free(a->runs[k].groups);
        free(a->runs[k].configs);
        free(a->runs[k].ans);
    }
    free(a);
}

int tdm_sched_async_running(const tdm_sched_async *a) { return a->running; }

int tdm_sched_async_room(const tdm_sched_async *a)
{
    if (!a->l) return 1; /* a lane is taken at the next start */
    tdm_sched *e = a->e;
    int room = tdm_gpu_engine_configs_room(e->gpus[a->l->dev], a->l->elane);
    int free_runs = ASYNC_RUNS - a->running - a->ended;
    return room < free_runs ? room : free_runs;
}

static int grow_to(void **p, size_t *cap, size_t n, size_t size)
{
    if (n <= *cap) return TDM_OK;
    size_t c = *cap ? *cap : 16;
    while (c < n) c *= 2;
    void *q = realloc(*p, c * size);
    if (!q) return TDM_ENOMEM;
    *p = q;
    *cap = c;
    return TDM_OK;
}

int tdm_sched_async_start(tdm_sched_async *a, const tdm_sched_configs_group *groups, size_t n_groups, uint32_t mode,
                          uint32_t max_contacts, const double *configs, tdm_sched_result *results, int force,
                          void *tag)
{
    tdm_sched *e = a->e;
    if (n_groups == 0) return TDM_ENODEV;
    size_t n, J = groups[0].kin ? groups[0].kin->n_q : 0;
    int rc = groups_check(groups, n_groups, mode, max_contacts, configs, &n);
    if (rc != TDM_OK) return rc;
    uint32_t K = 0;
    for (size_t g = 0; g < n_groups; g++) {
        if (groups[g].scene->n_checks == 0) return TDM_ENODEV;
        if (groups[g].scene->n_checks > K) K = groups[g].scene->n_checks;
    }
    if (n == 0 || !tdm_sched_configs_on_device(e)) return TDM_ENODEV;
    if (!force && e->dispatch && !tdm_cost_model_pick_gpu(&e->model, n * (size_t)K / 4)) return TDM_ENODEV;
    async_run *r = NULL;
    for (int k = 0; k < ASYNC_RUNS && !r; k++)
        if (a->runs[k].state == A_FREE) r = &a->runs[k];
    if (!r) return TDM_EAGAIN;
    int took = 0;
    if (a->running && lane_wanted(e)) return TDM_EAGAIN; /* the lane to those who wait for one */
    if (!a->l) {
        a->l = lane_get_after_waiters(e);
        took = 1;
        if (engine_broken(e, a->l->dev)) {
            lane_put(e, a->l);
            a->l = NULL;
            return TDM_ENODEV;
        }
    }
    lane *l = a->l;
    free_removed(e, l); /* at each run's start, as the synchronous way's */
    tdm_backend *gb = e->gpus[l->dev];
    if (n > tdm_gpu_engine_configs_one_run(gb, l->elane, (uint32_t)J, K)) {
        rc = TDM_ENODEV; /* larger than one run: the synchronous way */
        goto refused;
    }
    double t_prep = now_s();
    cfg_args args;
    rc = cfg_args_make(e, l, groups, n_groups, n, &args);
    if (rc == TDM_OK && args.whole && a->running) rc = TDM_EAGAIN; /* a program to upload: an idle lane */
    if (rc == TDM_OK) rc = grow_to((void **)&r->groups, &r->groups_cap, n_groups, sizeof *r->groups);
    if (rc == TDM_OK) rc = grow_to((void **)&r->configs, &r->configs_cap, n * J, sizeof *r->configs);
    if (rc == TDM_OK) rc = grow_to((void **)&r->ans, &r->ans_cap, n, sizeof *r->ans);
    int slot = -1;
    if (rc == TDM_OK)
        rc = tdm_gpu_engine_configs_start(gb, l->elane, args.robots, (uint32_t)n_groups, args.robot_of,
                                          (void *const *const *)args.copies, configs, n, mode,
                                          mode == TDM_MODE_CONTACTS ? max_contacts : 1, &slot);
    cfg_args_free(&args);
    if (rc == TDM_ECANCELED) rc = TDM_ENODEV; /* a tree not resident: the host's path */
    if (rc == TDM_EGPU) {
        engine_failed(e, l->dev);
        rc = TDM_ENODEV;
    }
    if (rc == TDM_EAGAIN) {
        pthread_mutex_lock(&e->stats_lock);
        e->stats.async_waits++;
        pthread_mutex_unlock(&e->stats_lock);
    }
    if (rc != TDM_OK) goto refused;
    memcpy(r->groups, groups, n_groups * sizeof *groups);
    memcpy(r->configs, configs, n * J * sizeof *configs);
    r->n_groups = n_groups;
    r->n = n;
    r->done = 0;
    r->mode = mode;
    r->max_contacts = max_contacts;
    r->results = results;
    r->tag = tag;
    r->slot = slot;
    r->tasks = 0;
    r->rc = TDM_OK;
    r->t0 = now_s();
    r->t_prep = r->t0 - t_prep;
    r->state = A_RUNNING;
    a->running++;
    pthread_mutex_lock(&e->stats_lock);
    e->stats.async_runs++;
    pthread_mutex_unlock(&e->stats_lock);
    return TDM_OK;
refused:
    if (e->trace)
        fprintf(stderr, "engine async: %zu configurations of %zu robot scenes not started (%s), %d in flight\n", n,
                n_groups, tdm_strerror(rc), a->running);
    if (took) { /* the lane back as it was taken */
        lane_put(e, a->l);
        a->l = NULL;
    }
    return rc;
}

/* Run r is over with rc, to be handed back by tdm_sched_async_next in the order runs end. */
static void async_over(tdm_sched_async *a, async_run *r, int rc)
{
    r->rc = rc;
    r->state = A_ENDED;
    r->ended = a->n_ended++;
    a->ended++;
}

/* Run r has ended on the device (done of its n answered, or rc < 0: the lane failed). */
static void async_ended(tdm_sched_async *a, async_run *r, int rc, size_t done)
{
    tdm_sched *e = a->e;
    a->running--;
    if (rc < 0) { /* the engine's runs lost: the caller runs them the synchronous way */
        if (rc == TDM_EGPU) engine_failed(e, a->l->dev);
        async_over(a, r, TDM_ENODEV);
        return;
    }
    r->done = done;
    if (done < r->n) {
        r->state = A_REDO; /* the rest once the lane is idle */
        return;
    }
    configs_results(r->groups, r->n_groups, r->mode, r->ans, r->results);
    configs_count(e, a->l, r->n, r->tasks, now_s() - r->t0, r->t_prep);
    async_over(a, r, TDM_OK);
}

/* Polls the runs in flight once; every one ends when the lane fails. */
static void async_poll(tdm_sched_async *a)
{
    tdm_sched *e = a->e;
    for (int k = 0; k < ASYNC_RUNS && a->running; k++) {
        async_run *r = &a->runs[k];
        if (r->state != A_RUNNING) continue;
        size_t done = 0;
        int rc = tdm_gpu_engine_configs_poll(e->gpus[a->l->dev], a->l->elane, r->slot, r->ans, &done, &r->tasks);
        if (rc == 0) continue;
        if (rc < 0) { /* the lane was stopped: every run in flight with it */
            for (int j = 0; j < ASYNC_RUNS; j++)
                if (a->runs[j].state == A_RUNNING) async_ended(a, &a->runs[j], rc, 0);
            return;
        }
        async_ended(a, r, TDM_OK, done);
    }
}

/* With no run in flight: what runs could not answer, on the same lane the synchronous way;
 * then the lane back. */
static void async_settle(tdm_sched_async *a)
{
    tdm_sched *e = a->e;
    if (a->running || !a->l) return;
    for (int k = 0; k < ASYNC_RUNS; k++) {
        async_run *r = &a->runs[k];
        if (r->state != A_REDO) continue;
        /* the answered prefix: groups [0, g) whole, then part of group g, the rest's first */
        size_t at = 0, g = 0, J = r->groups[0].kin->n_q;
        while (at + r->groups[g].n <= r->done) at += r->groups[g++].n;
        configs_results(r->groups, g, r->mode, r->ans, r->results);
        if (r->done > at) {
            tdm_sched_configs_group head = r->groups[g];
            head.n = r->done - at;
            configs_results(&head, 1, r->mode, r->ans + at, r->results + at);
            r->groups[g].n -= head.n;
        }
        tdm_sched_configs_group *tail = r->groups + g;
        size_t n_tail = r->n_groups - g;
        if (r->done) configs_count(e, a->l, r->done, r->tasks, now_s() - r->t0, r->t_prep);
        int rc = configs_on_device(e, a->l, tail, n_tail, r->mode, r->max_contacts, r->configs + r->done * J,
                                   r->n - r->done, r->results + r->done);
        if (rc == TDM_EGPU) engine_failed(e, a->l->dev);
        async_over(a, r, rc == TDM_OK || rc == TDM_ENOMEM ? rc : TDM_ENODEV);
    }
    lane_put(e, a->l);
    a->l = NULL;
}

void *tdm_sched_async_next(tdm_sched_async *a, int *rc)
{
    if (a->running) async_poll(a);
    int redo = 0;
    for (int k = 0; k < ASYNC_RUNS; k++) redo |= a->runs[k].state == A_REDO;
    if (redo) /* the lane idle first: the rest runs on every slot */
        while (a->running) async_poll(a);
    if (!a->running) async_settle(a);
    if (!a->ended) return NULL;
    async_run *first = NULL;
    for (int k = 0; k < ASYNC_RUNS; k++) {
        async_run *r = &a->runs[k];
        if (r->state == A_ENDED && (!first || r->ended < first->ended)) first = r;
    }
    first->state = A_FREE;
    a->ended--;
    *rc = first->rc;
    return first->tag;
}

void tdm_sched_async_drain(tdm_sched_async *a)
{
    while (a->running) async_poll(a);
    async_settle(a);
}

/* ---- calibration ---------------------------------------------------------------- */

/* Sets the cost model from calibrate.h's measurement on lane 0, every lane's
 * buffers sized for its runs first. Before any run: the calibration's GPU work
 * is left out of the stats. */
static int calibrate(tdm_sched *e)
{
    lane *l = lane_get_dev(e, 0); /* lane 0: GPU engine 0's lane 0, the CPU engine's lane 0 */
    /* every lane's buffers and the kernels' modules now, not in the first runs (every engine's) */
    int rc = TDM_OK;
    for (int d = 0; d < e->n_gpus && rc == TDM_OK; d++) rc = e->gpus[d]->ops->prepare(e->gpus[d], TDM_CALIBRATE_TASKS);
    tdm_backend *g = e->gpus[0];
    tdm_cost_figures f;
    if (rc == TDM_OK) rc = tdm_calibrate(e->engines[ON_CPU], g, l->index, &f);
    device_stats(e, l);
    pthread_mutex_lock(&e->stats_lock); /* the calibration's workpiles are not the users' */
    e->stats.gpu_iterations = 0;
    e->stats.gpu_small_runs = 0;
    e->stats.gpu_small_handovers = 0;
    e->stats.gpu_fused_runs = 0;
    e->stats.gpu_pairs = 0;
    pthread_mutex_unlock(&e->stats_lock);
    lane_put(e, l);
    if (rc != TDM_OK) return rc;
    tdm_cost_model_destroy(&e->model);
    tdm_cost_model_init(&e->model, &f); /* cannot fail: the same lock was made before */
    return TDM_OK;
}
