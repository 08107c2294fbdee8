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
 * Engines. The CPU engine is always there. With a GPU the engine also holds a
 * tdm_gpu (GPU-resident traversal) and a tdm_hybrid (CPU traversal, GPU tests).
 * A chunk runs on the GPU side only when every tree it names is resident
 * (tdm_sched_mesh_add); otherwise on the CPU engine.
 *
 * Dispatch (kind AUTO with a GPU), in the spirit of Jorgensen et al. §5: the
 * cost of a run of n tasks is modelled as
 *     CPU: c_off + n * w * c_cpu         GPU: g_off + n * w * c_gpu
 * where c_cpu and c_gpu are the seconds per task of a reference scene on each
 * engine, c_off and g_off their fixed costs per run (waking the thread pool;
 * launches, copies, synchronisation) and w how much heavier the current work is
 * than the reference (box and triangle tests per task). The four figures are
 * measured at creation on
 * a generated scene (two spheres, poses half of them touching) with batches of
 * several sizes, then kept up to date by every run: a small run refines its
 * engine's fixed cost (the GPU's grows with the depth of the trees: one
 * synchronisation per few BVTT levels), a large one the work factor w.
 * A run goes to the GPU when n >= (g_off - c_off) / (w * (c_cpu - c_gpu)), the
 * size where the two costs cross. */
#include "sched.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../gpu/gpu.h"
#include "../gpu/hybrid.h"
#include "cpu_engine.h"

typedef struct task_ref { uint32_t query, check; } task_ref;
/* A task of a pair-collecting query that found pairs in the first pass. */
typedef struct hit { uint32_t query, check, n_pairs, room; } hit;

/* A resident tree: the registry maps a host tree's address to its device copy. */
typedef struct dev_mesh {
    const tdm_bvh *bvh;
    tdm_gpu_mesh *gm;
    uint32_t refs;
    struct dev_mesh *next; /* hash chain, or the list of copies waiting to be freed */
} dev_mesh;

/* Which engine a chunk ran on. */
enum { ON_CPU, ON_GPU, ON_HYBRID };

#define MAX_LANES 8

/* One run in flight: what a tdm_sched_run uses and nobody else touches while
 * it lasts. Several lanes let several threads run at once (tdm_sched_config.
 * lanes): one run's host work overlaps another's GPU work, each lane on its own
 * tdm_gpu lane (gpu.h). The CPU engine serialises its own runs. */
typedef struct lane {
    tdm_gpu *gpu;          /* lane 0: the engine's tdm_gpu; others: lanes of it; NULL without a GPU */
    uint64_t seen_iters, seen_pairs; /* this lane's GPU counters already added to the stats */

    /* this run's figures, for the stats */
    uint64_t run_on[3];    /* tasks per engine (ON_*) */
    uint64_t run_q[3];     /* queries per engine: counted where their first task ran */
    double run_gpu_s;
    double run_engine_s;   /* this run's time inside the engines (the rest is the host's) */

    /* scratch, kept between runs */
    tdm_task *tasks;
    tdm_collide_result *res;
    task_ref *refs;
    tdm_gpu_task *gtasks;
    tdm_hybrid_task *htasks;
    size_t tasks_cap, gtasks_cap, htasks_cap;
    uint64_t *sums; /* contacts counted per query, before the cap */
    uint32_t *room; /* pairs a query may still receive, second pass */
    size_t queries_cap;
    hit *hits;
    size_t n_hits, hits_cap;
    tdm_pair *pairs;
    size_t pairs_cap;
} lane;

struct tdm_sched {
    tdm_backend_kind kind;
    int dispatch;          /* AUTO with a GPU: choose per chunk by the cost model */
    tdm_cpu_engine *cpu;
    tdm_gpu *gpu;          /* NULL without a GPU; lanes[0].gpu */
    tdm_hybrid *hybrid;    /* runs on lanes[0].gpu; a hybrid engine has one lane */
    uint32_t chunk;
    char detail[320];
    pthread_mutex_t stats_lock;
    tdm_sched_stats stats;

    int n_lanes;
    lane lanes[MAX_LANES];
    pthread_mutex_t lane_lock;  /* guards free_lanes */
    pthread_cond_t lane_freed;
    unsigned free_lanes;        /* bit k: lanes[k] is not running */
    pthread_mutex_t upload_lock; /* one upload at a time: nobody inserts a tree being uploaded */

    /* registry of resident trees: reg_lock guards the table and the free list */
    pthread_mutex_t reg_lock;
    dev_mesh **table;
    size_t table_size, n_dev;
    dev_mesh *to_free;     /* removed copies, freed by the next run or upload */

    /* cost model (seconds), under model_lock: every lane learns from its runs */
    pthread_mutex_t model_lock;
    double c_cpu, c_gpu, g_off, c_off, w;
    uint64_t threshold;    /* tasks: at or above, a chunk goes to the GPU */
    int gpu_broken;        /* (atomic) the device failed for good: everything runs on the CPU engine */
    int trace;             /* TDM_ENGINE_TRACE set: a line per run on stderr */
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
    tdm_sched_config c = {TDM_BACKEND_AUTO, 0, 262144, 0, 0, 2, 1, 0, 3};
    return c;
}


/* ---- registry ----------------------------------------------------------------- */

static size_t hash_ptr(const void *p, size_t size)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)(x & (size - 1));
}

/* reg_lock held */
static dev_mesh *reg_find(tdm_sched *e, const tdm_bvh *bvh)
{
    if (!e->table) return NULL;
    for (dev_mesh *d = e->table[hash_ptr(bvh, e->table_size)]; d; d = d->next)
        if (d->bvh == bvh) return d;
    return NULL;
}

/* reg_lock held; doubles the table when it is full. */
static int reg_insert(tdm_sched *e, dev_mesh *d)
{
    if (e->n_dev + 1 > e->table_size) {
        size_t size = e->table_size ? 2 * e->table_size : 64;
        dev_mesh **t = calloc(size, sizeof *t);
        if (!t) return TDM_ENOMEM;
        for (size_t i = 0; i < e->table_size; i++)
            for (dev_mesh *x = e->table[i], *nx; x; x = nx) {
                nx = x->next;
                size_t h = hash_ptr(x->bvh, size);
                x->next = t[h];
                t[h] = x;
            }
        free(e->table);
        e->table = t;
        e->table_size = size;
    }
    size_t h = hash_ptr(d->bvh, e->table_size);
    d->next = e->table[h];
    e->table[h] = d;
    e->n_dev++;
    return TDM_OK;
}

/* Frees the device copies removed since the last call. Any thread: no run
 * can be using them (their last user dropped them after its runs). */
static void free_removed(tdm_sched *e, tdm_gpu *g)
{
    pthread_mutex_lock(&e->reg_lock);
    dev_mesh *d = e->to_free;
    e->to_free = NULL;
    pthread_mutex_unlock(&e->reg_lock);
    while (d) {
        dev_mesh *nx = d->next;
        tdm_gpu_mesh_free(g, d->gm);
        free(d);
        d = nx;
    }
}

/* Takes a free lane, waiting for one. */
static lane *lane_get(tdm_sched *e)
{
    pthread_mutex_lock(&e->lane_lock);
    while (e->free_lanes == 0) pthread_cond_wait(&e->lane_freed, &e->lane_lock);
    int k = __builtin_ctz(e->free_lanes);
    e->free_lanes &= ~(1u << k);
    pthread_mutex_unlock(&e->lane_lock);
    return &e->lanes[k];
}

static void lane_put(tdm_sched *e, lane *l)
{
    pthread_mutex_lock(&e->lane_lock);
    e->free_lanes |= 1u << (l - e->lanes);
    pthread_cond_signal(&e->lane_freed);
    pthread_mutex_unlock(&e->lane_lock);
}

/* Adds lane l's new GPU counters and the device figures to the stats. The
 * thread holding l (the lane's own counters are read by it only). */
static void device_stats(tdm_sched *e, lane *l)
{
    if (!l->gpu) return;
    tdm_gpu_stats gs;
    tdm_gpu_get_stats(l->gpu, &gs);
    uint64_t iters = gs.iterations, pairs = gs.pairs;
    if (l == &e->lanes[0]) {
        tdm_hybrid_stats hs;
        tdm_hybrid_get_stats(e->hybrid, &hs);
        iters += hs.workpiles;
        pairs += hs.box_entries + hs.tri_entries;
    }
    pthread_mutex_lock(&e->reg_lock);
    uint32_t n_dev = (uint32_t)e->n_dev;
    pthread_mutex_unlock(&e->reg_lock);
    pthread_mutex_lock(&e->model_lock);
    uint64_t threshold = e->dispatch ? e->threshold : 0;
    pthread_mutex_unlock(&e->model_lock);
    pthread_mutex_lock(&e->stats_lock);
    e->stats.gpu_iterations += iters - l->seen_iters;
    e->stats.gpu_pairs += pairs - l->seen_pairs;
    l->seen_iters = iters;
    l->seen_pairs = pairs;
    e->stats.device_bytes = gs.device_bytes;
    e->stats.mesh_bytes = gs.mesh_bytes;
    e->stats.device_meshes = n_dev;
    e->stats.dispatch_threshold = threshold;
    pthread_mutex_unlock(&e->stats_lock);
}

int tdm_sched_mesh_add(tdm_sched *e, const tdm_bvh *bvh)
{
    if (!e->gpu) return TDM_OK;
    pthread_mutex_lock(&e->upload_lock);
    lane *l = lane_get(e); /* a tdm_gpu no run is using */
    free_removed(e, l->gpu);
    pthread_mutex_lock(&e->reg_lock);
    dev_mesh *d = reg_find(e, bvh);
    if (d) d->refs++;
    pthread_mutex_unlock(&e->reg_lock);
    int rc = TDM_OK;
    if (!d) {
        /* uploads are serialised by upload_lock, so nobody inserts this tree meanwhile */
        d = calloc(1, sizeof *d);
        if (!d) rc = TDM_ENOMEM;
        else rc = tdm_gpu_mesh_upload(l->gpu, bvh, &d->gm);
        if (rc == TDM_OK) {
            d->bvh = bvh;
            d->refs = 1;
            pthread_mutex_lock(&e->reg_lock);
            rc = reg_insert(e, d);
            pthread_mutex_unlock(&e->reg_lock);
            if (rc != TDM_OK) tdm_gpu_mesh_free(l->gpu, d->gm);
        }
        if (rc != TDM_OK) free(d);
    }
    device_stats(e, l);
    lane_put(e, l);
    pthread_mutex_unlock(&e->upload_lock);
    return rc;
}

void tdm_sched_mesh_remove(tdm_sched *e, const tdm_bvh *bvh)
{
    if (!e->gpu) return;
    pthread_mutex_lock(&e->reg_lock);
    if (e->table) {
        dev_mesh **pp = &e->table[hash_ptr(bvh, e->table_size)];
        for (; *pp; pp = &(*pp)->next) {
            dev_mesh *d = *pp;
            if (d->bvh != bvh) continue;
            if (--d->refs == 0) {
                *pp = d->next;
                e->n_dev--;
                d->next = e->to_free;
                e->to_free = d;
            }
            break;
        }
    }
    pthread_mutex_unlock(&e->reg_lock);
}

/* ---- creation ----------------------------------------------------------------- */

static int calibrate(tdm_sched *e);
static void set_threshold(tdm_sched *e);

/* Undoes a partial start_gpu. */
static void stop_gpu(tdm_sched *e)
{
    for (int k = 1; k < e->n_lanes; k++) tdm_gpu_destroy(e->lanes[k].gpu);
    for (int k = 0; k < e->n_lanes; k++) e->lanes[k].gpu = NULL;
    tdm_gpu_destroy(e->gpu);
    e->gpu = NULL;
}

static int start_gpu(tdm_sched *e, const tdm_sched_config *cfg, const char **why)
{
    tdm_gpu_config gc = tdm_gpu_config_default();
    gc.device = cfg->gpu_device;
    gc.memory_budget = cfg->gpu_memory;
    gc.streams = cfg->gpu_streams;
    gc.traversal = cfg->gpu_traversal == TDM_TRAVERSAL_BLOCKS ? TDM_GPU_TRAVERSE_BLOCKS
                   : cfg->gpu_traversal == TDM_TRAVERSAL_WIDE ? TDM_GPU_TRAVERSE_WIDE
                                                              : TDM_GPU_TRAVERSE_PAIRS;
    int rc = tdm_gpu_create(&gc, &e->gpu, why);
    if (rc != TDM_OK) return rc;
    e->lanes[0].gpu = e->gpu;
    for (int k = 1; k < e->n_lanes && rc == TDM_OK; k++) rc = tdm_gpu_create_lane(e->gpu, &e->lanes[k].gpu);
    if (rc != TDM_OK) {
        if (why) *why = "a second lane on the GPU could not start";
        stop_gpu(e);
        return rc;
    }
    tdm_hybrid_config hc = tdm_hybrid_config_default();
    hc.threads = cfg->threads;
    rc = tdm_hybrid_create(e->gpu, &hc, &e->hybrid);
    if (rc != TDM_OK) {
        if (why) *why = "the hybrid engine could not start";
        stop_gpu(e);
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
    if (cfg->threads < 0 || cfg->chunk_tasks == 0 || cfg->gpu_device < 0 || cfg->gpu_streams < 1 ||
        cfg->gpu_streams > 8 || cfg->lanes < 1 || cfg->lanes > MAX_LANES) {
        if (why)
            snprintf(why, whylen, "threads must be >= 0, chunk_tasks >= 1, gpu_device >= 0, gpu_streams 1..8 and "
                     "lanes 1..%d", MAX_LANES);
        return TDM_EINVAL;
    }
    tdm_sched *e = calloc(1, sizeof *e);
    if (!e) return TDM_ENOMEM;
    e->chunk = cfg->chunk_tasks;
    e->trace = getenv("TDM_ENGINE_TRACE") != NULL;
    e->w = 1;
    e->threshold = UINT64_MAX;
    /* the hybrid engine is one object with one set of buffers: one run at a time */
    e->n_lanes = cfg->kind == TDM_BACKEND_HYBRID ? 1 : cfg->lanes;
    e->free_lanes = (1u << e->n_lanes) - 1;
    int locks = pthread_mutex_init(&e->stats_lock, NULL) == 0;
    locks += locks == 1 && pthread_mutex_init(&e->reg_lock, NULL) == 0;
    locks += locks == 2 && pthread_mutex_init(&e->lane_lock, NULL) == 0;
    locks += locks == 3 && pthread_cond_init(&e->lane_freed, NULL) == 0;
    locks += locks == 4 && pthread_mutex_init(&e->upload_lock, NULL) == 0;
    locks += locks == 5 && pthread_mutex_init(&e->model_lock, NULL) == 0;
    if (locks < 6) {
        if (locks > 0) pthread_mutex_destroy(&e->stats_lock);
        if (locks > 1) pthread_mutex_destroy(&e->reg_lock);
        if (locks > 2) pthread_mutex_destroy(&e->lane_lock);
        if (locks > 3) pthread_cond_destroy(&e->lane_freed);
        if (locks > 4) pthread_mutex_destroy(&e->upload_lock);
        free(e);
        return TDM_ESYS;
    }
    int rc = tdm_cpu_engine_create(cfg->threads, &e->cpu);
    if (rc != TDM_OK) {
        if (why) snprintf(why, whylen, "CPU engine: %s", tdm_strerror(rc));
        tdm_sched_destroy(e);
        return rc;
    }
    int threads = tdm_cpu_engine_threads(e->cpu);
    const char *no_gpu = NULL;
    if (cfg->kind != TDM_BACKEND_CPU) {
        rc = start_gpu(e, cfg, &no_gpu);
        if (rc != TDM_OK && cfg->kind != TDM_BACKEND_AUTO) {
            if (why)
                snprintf(why, whylen, "no %s engine: %s%s%s", tdm_backend_name(cfg->kind), tdm_strerror(rc),
                         no_gpu && *no_gpu ? ": " : "", no_gpu ? no_gpu : "");
            tdm_sched_destroy(e);
            return rc == TDM_ENOMEM ? rc : TDM_ENODEV;
        }
    }
    if (!e->gpu) {
        e->kind = TDM_BACKEND_CPU;
        if (cfg->kind == TDM_BACKEND_CPU)
            snprintf(e->detail, sizeof e->detail, "CPU engine, %d threads (chosen by configuration)", threads);
        else
            snprintf(e->detail, sizeof e->detail, "CPU engine, %d threads; no GPU engine: %s", threads,
                     no_gpu && *no_gpu ? no_gpu : "no usable GPU");
    } else if (cfg->kind == TDM_BACKEND_AUTO) {
        e->kind = TDM_BACKEND_GPU;
        e->dispatch = 1;
        if (cfg->calibrate && (rc = calibrate(e)) != TDM_OK) {
            if (why) snprintf(why, whylen, "calibrating the dispatch cost model failed: %s", tdm_strerror(rc));
            tdm_sched_destroy(e);
            return rc;
        }
        if (!cfg->calibrate) { /* built-in figures: calibrate()'s on the H100 host with 16 threads */
            e->c_cpu = 5.5e-7;
            e->c_gpu = 4.8e-8;
            e->g_off = 1.1e-4;
            e->c_off = 2e-5;
            set_threshold(e);
        }
        snprintf(e->detail, sizeof e->detail,
                 "GPU-resident engine with CPU engine (%d threads) for small runs: runs of >= %llu tasks go to the "
                 "GPU (cost model: CPU %.3g s + %.3g s/task, GPU %.3g s + %.3g s/task)",
                 threads, (unsigned long long)e->threshold, e->c_off, e->c_cpu, e->g_off, e->c_gpu);
    } else {
        e->kind = cfg->kind;
        snprintf(e->detail, sizeof e->detail, "%s engine (forced by configuration); CPU engine (%d threads) for "
                 "scenes whose meshes are not on the GPU",
                 cfg->kind == TDM_BACKEND_GPU ? "GPU-resident" : "hybrid (CPU traversal, GPU tests)", threads);
    }
    *out = e;
    return TDM_OK;
}

void tdm_sched_destroy(tdm_sched *e)
{
    if (!e) return;
    if (e->gpu) {
        free_removed(e, e->gpu);
        for (size_t i = 0; i < e->table_size; i++)
            for (dev_mesh *d = e->table[i], *nx; d; d = nx) {
                nx = d->next;
                tdm_gpu_mesh_free(e->gpu, d->gm);
                free(d);
            }
    }
    free(e->table);
    tdm_hybrid_destroy(e->hybrid);
    for (int k = 0; k < e->n_lanes; k++) {
        lane *l = &e->lanes[k];
        if (k > 0) tdm_gpu_destroy(l->gpu);
        free(l->tasks);
        free(l->res);
        free(l->refs);
        free(l->gtasks);
        free(l->htasks);
        free(l->sums);
        free(l->room);
        free(l->hits);
        free(l->pairs);
    }
    tdm_gpu_destroy(e->gpu);
    tdm_cpu_engine_destroy(e->cpu);
    pthread_mutex_destroy(&e->stats_lock);
    pthread_mutex_destroy(&e->reg_lock);
    pthread_mutex_destroy(&e->lane_lock);
    pthread_cond_destroy(&e->lane_freed);
    pthread_mutex_destroy(&e->upload_lock);
    pthread_mutex_destroy(&e->model_lock);
    free(e);
}

int tdm_sched_lanes(const tdm_sched *e) { return e->n_lanes; }

tdm_backend_kind tdm_sched_backend(const tdm_sched *e) { return e->kind; }
const char *tdm_sched_detail(const tdm_sched *e) { return e->detail; }

void tdm_sched_get_stats(tdm_sched *e, tdm_sched_stats *s)
{
    pthread_mutex_lock(&e->stats_lock);
    *s = e->stats;
    pthread_mutex_unlock(&e->stats_lock);
}

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

static int reserve_tasks(lane *l, size_t n)
{
    size_t c1 = l->tasks_cap, c2 = l->tasks_cap, c3 = l->tasks_cap;
    if (reserve((void **)&l->tasks, &c1, n, sizeof *l->tasks) || reserve((void **)&l->res, &c2, n, sizeof *l->res) ||
        reserve((void **)&l->refs, &c3, n, sizeof *l->refs)) {
        /* keep the three arrays' common capacity honest after a partial failure */
        l->tasks_cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
        return TDM_ENOMEM;
    }
    l->tasks_cap = c1;
    return TDM_OK;
}

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
    return tdm_xform_rel(xa, xb);
}

/* The CPU engine's task of query q's checked pair k. */
static void make_task(const tdm_sched_query *q, uint32_t k, tdm_task *t, uint32_t max_pairs, tdm_pair *pairs)
{
    t->b_in_a = pair_of(q, k, &t->a, &t->b);
    t->mode = q->mode;
    t->max_pairs = max_pairs;
    t->pairs = pairs;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- running a chunk ------------------------------------------------------------ */

/* The size where the two costs cross: c_off + n w c_cpu = g_off + n w c_gpu. */
/* model_lock held (or no other thread yet). */
static void set_threshold(tdm_sched *e)
{
    if (e->c_gpu >= e->c_cpu) { /* a GPU slower per task than the CPU engine: it takes nothing */
        e->threshold = UINT64_MAX;
        return;
    }
    double off = e->g_off > e->c_off ? e->g_off - e->c_off : 0;
    double n = off / (e->w * (e->c_cpu - e->c_gpu));
    e->threshold = n < 1 ? 1 : n > 1e12 ? (uint64_t)1e12 : (uint64_t)n + 1;
}

/* Learns from a run that took dt seconds: small runs (mostly fixed cost) refine
 * that engine's fixed cost, which on the GPU grows with the depth of the trees
 * (one synchronisation per few levels); large runs refine the work factor w. */
static void model_update(tdm_sched *e, int where, size_t nt, double dt)
{
    pthread_mutex_lock(&e->model_lock);
    int gpu = where != ON_CPU;
    double per = gpu ? e->c_gpu : e->c_cpu, *off = gpu ? &e->g_off : &e->c_off;
    if (nt < (gpu ? 4096u : 256u)) {
        double obs = dt - (double)nt * e->w * per;
        *off = 0.8 * *off + 0.2 * (obs > 0 ? obs : 0);
    } else {
        double w_obs = (dt > *off ? dt - *off : 0) / ((double)nt * per);
        if (w_obs < 1e-3) w_obs = 1e-3;
        if (w_obs > 1e6) w_obs = 1e6;
        e->w = 0.75 * e->w + 0.25 * w_obs;
    }
    set_threshold(e);
    pthread_mutex_unlock(&e->model_lock);
}

/* The CPU engine's tasks for l->refs[0..nt). */
static void expand_cpu(lane *l, const tdm_sched_query *queries, size_t nt)
{
    for (size_t t = 0; t < nt; t++) {
        const tdm_sched_query *Q = &queries[l->refs[t].query];
        make_task(Q, l->refs[t].check, &l->tasks[t], Q->mode == TDM_MODE_CONTACTS ? Q->max_contacts : 1, NULL);
    }
}

/* Building the GPU (or hybrid) engine's tasks for l->refs straight from the
 * queries, range by range and on the GPU engine's host threads: one thread
 * building the CPU engine's tasks first and copying them cost the dispatcher
 * twice the GPU's work at tens of millions of queries per second. */
typedef struct feeder {
    tdm_sched *e;
    lane *l;
    const tdm_sched_query *queries;
    int where;
} feeder;

/* 0, or -1 when a tree is not resident (the chunk then runs on the CPU engine).
 * Any thread, disjoint ranges. A registry entry found stays valid for the run:
 * removed ones are freed only at the start of the next (free_removed). */
static int feed(void *arg, size_t lo, size_t hi)
{
    const feeder *f = arg;
    tdm_sched *e = f->e;
    lane *l = f->l;
    const tdm_bvh *la = NULL, *lb = NULL; /* the last trees looked up, and their device copies */
    const dev_mesh *da = NULL, *db = NULL;
    for (size_t i = lo; i < hi; i++) {
        const tdm_sched_query *Q = &f->queries[l->refs[i].query];
        const tdm_bvh *a, *b;
        tdm_xform x = pair_of(Q, l->refs[i].check, &a, &b);
        if (a != la || b != lb) {
            pthread_mutex_lock(&e->reg_lock);
            da = reg_find(e, a);
            db = reg_find(e, b);
            pthread_mutex_unlock(&e->reg_lock);
            la = a;
            lb = b;
        }
        if (!da || !db) return -1;
        uint32_t max_pairs = Q->mode == TDM_MODE_CONTACTS ? Q->max_contacts : 1;
        if (f->where == ON_GPU) l->gtasks[i] = (tdm_gpu_task){da->gm, db->gm, x, Q->mode, max_pairs};
        else l->htasks[i] = (tdm_hybrid_task){a, b, da->gm, db->gm, x, Q->mode, max_pairs};
    }
    return 0;
}

/* Runs l->refs[0..nt) on the GPU-resident engine (which calls feed as it goes,
 * so that building tasks overlaps the device's work) or the hybrid one. */
static int run_device(tdm_sched *e, lane *l, const tdm_sched_query *queries, size_t nt, int where)
{
    void **arr = where == ON_GPU ? (void **)&l->gtasks : (void **)&l->htasks;
    size_t *cap = where == ON_GPU ? &l->gtasks_cap : &l->htasks_cap;
    size_t size = where == ON_GPU ? sizeof *l->gtasks : sizeof *l->htasks;
    if (reserve(arr, cap, nt, size) != TDM_OK) return TDM_ENOMEM;
    feeder f = {e, l, queries, where};
    if (where == ON_GPU) return tdm_gpu_run_fed(l->gpu, l->gtasks, nt, l->res, feed, &f);
    if (feed(&f, 0, nt) != 0) return TDM_ECANCELED;
    return tdm_hybrid_run(e->hybrid, l->htasks, nt, l->res);
}

/* Builds and runs the tasks of l->refs[0..nt) into l->res on the engine the kind
 * and the cost model pick, and counts the chunk's tasks and queries (a query
 * counts where its first task runs) for that engine. A GPU failure re-runs the
 * chunk on the CPU engine (and a broken device is not used again), so that a
 * query never fails for the GPU's sake. */
static void run_chunk(tdm_sched *e, lane *l, const tdm_sched_query *queries, size_t nt)
{
    int where = ON_CPU;
    if (l->gpu && !__atomic_load_n(&e->gpu_broken, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&e->model_lock);
        int big = nt >= e->threshold;
        pthread_mutex_unlock(&e->model_lock);
        if (!e->dispatch || big) where = e->kind == TDM_BACKEND_HYBRID ? ON_HYBRID : ON_GPU;
    }
    double t0 = now_s();
    int rc = where == ON_CPU ? TDM_OK : run_device(e, l, queries, nt, where);
    double dt = now_s() - t0;
    if (rc == TDM_ECANCELED || rc == TDM_ENOMEM) { /* a tree not resident, or no room for the tasks */
        where = ON_CPU;
        rc = TDM_OK;
    } else if (rc != TDM_OK) {
        if (rc == TDM_EGPU) __atomic_store_n(&e->gpu_broken, 1, __ATOMIC_RELAXED);
        fprintf(stderr, "tandem engine: the %s engine failed on %zu tasks (%s); they run on the CPU engine%s\n",
                where == ON_GPU ? "GPU" : "hybrid", nt, tdm_strerror(rc),
                rc == TDM_EGPU ? ", as will every later run" : "");
        where = ON_CPU;
    }
    if (where == ON_CPU) {
        expand_cpu(l, queries, nt);
        t0 = now_s();
        tdm_cpu_engine_run(e->cpu, l->tasks, nt, l->res);
        dt = now_s() - t0;
    }
    if (e->dispatch && rc == TDM_OK) model_update(e, where, nt, dt);
    l->run_on[where] += nt;
    for (size_t t = 0; t < nt; t++) l->run_q[where] += l->refs[t].check == 0;
    if (where != ON_CPU) l->run_gpu_s += dt;
    l->run_engine_s += dt;
}

/* First pass over the whole batch, in chunks. */
static int count_pass(tdm_sched *e, lane *l, const tdm_sched_query *queries, size_t n, tdm_sched_result *results,
                      uint64_t *box, uint64_t *tri, uint64_t *n_tasks)
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
        run_chunk(e, l, queries, nt);
        *n_tasks += nt;
        for (size_t t = 0; t < nt; t++) {
            const tdm_collide_result *r = &l->res[t];
            *box += r->box_tests;
            *tri += r->tri_tests;
            if (!r->colliding) continue;
            uint32_t qi = l->refs[t].query, ki = l->refs[t].check;
            const tdm_sched_query *Q = &queries[qi];
            tdm_sched_result *R = &results[qi];
            if (!R->colliding) {
                const tdm_scene *s = Q->scene;
                R->colliding = 1;
                R->object_a = s->objects[s->checks[ki].lo].id;
                R->object_b = s->objects[s->checks[ki].hi].id;
            }
            if (Q->mode == TDM_MODE_BOOL) {
                R->contacts = 1;
                continue;
            }
            l->sums[qi] += r->n_pairs;
            if (r->truncated) R->truncated = 1;
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
    if (reserve_tasks(l, cap) != TDM_OK) return TDM_ENOMEM;
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
        if (nt > 0) tdm_cpu_engine_run(e->cpu, l->tasks, nt, l->res);
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

int tdm_sched_run(tdm_sched *e, const tdm_sched_query *queries, size_t n, tdm_sched_result *results)
{
    for (size_t i = 0; i < n; i++) {
        const tdm_sched_query *q = &queries[i];
        if (!q->scene || (!q->poses && q->scene->n_movable > 0) ||
            (q->mode != TDM_MODE_BOOL && q->mode != TDM_MODE_CONTACTS) ||
            (q->mode == TDM_MODE_CONTACTS && q->max_contacts == 0))
            return TDM_EINVAL;
    }
    if (n > UINT32_MAX) return TDM_EINVAL;
    lane *l = lane_get(e);
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
    memset(results, 0, n * sizeof *results);
    l->n_hits = 0;
    for (size_t i = 0; i < n; i++) {
        l->sums[i] = 0;
        l->room[i] = queries[i].mode == TDM_MODE_CONTACTS && queries[i].pairs ? queries[i].max_contacts : 0;
    }
    uint64_t box = 0, tri = 0, n_tasks = 0;
    memset(l->run_on, 0, sizeof l->run_on);
    memset(l->run_q, 0, sizeof l->run_q);
    l->run_gpu_s = 0;
    l->run_engine_s = 0;
    if (l->gpu) free_removed(e, l->gpu);
    rc = count_pass(e, l, queries, n, results, &box, &tri, &n_tasks);
    if (rc == TDM_OK && l->n_hits > 0) rc = pairs_pass(e, l, queries, results, &n_tasks);
    if (rc != TDM_OK) goto out;
    for (size_t i = 0; i < n; i++) {
        if (queries[i].mode != TDM_MODE_CONTACTS) continue;
        if (l->sums[i] > queries[i].max_contacts) {
            results[i].contacts = queries[i].max_contacts;
            results[i].truncated = 1;
        } else {
            results[i].contacts = (uint32_t)l->sums[i];
        }
    }
    double dt = now_s() - t0;
    if (e->trace)
        fprintf(stderr, "engine run: %zu queries, %llu tasks: %.3f ms, %.3f ms of it in the engines, %.1f ns a query on the host\n",
                n, (unsigned long long)n_tasks, 1e3 * dt, 1e3 * l->run_engine_s, 1e9 * (dt - l->run_engine_s) / (double)n);
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
    e->stats.box_tests += box;
    e->stats.tri_tests += tri;
    e->stats.seconds += dt;
    e->stats.gpu_seconds += l->run_gpu_s;
    pthread_mutex_unlock(&e->stats_lock);
    device_stats(e, l);
out:
    lane_put(e, l);
    return rc;
}

/* ---- calibration ---------------------------------------------------------------- */

/* A UV sphere of radius 1: 2 * rings * (segments - 1) triangles. */
static int sphere(int rings, int segs, tdm_bvh **out)
{
    uint32_t nv = (uint32_t)((rings + 1) * segs), nt = (uint32_t)(2 * rings * segs);
    float *v = malloc(3 * sizeof *v * nv);
    uint32_t *t = malloc(3 * sizeof *t * nt);
    int rc = TDM_ENOMEM;
    tdm_mesh *m = NULL;
    if (!v || !t) goto done;
    for (int i = 0; i <= rings; i++)
        for (int j = 0; j < segs; j++) {
            double th = 3.141592653589793 * i / rings, ph = 2 * 3.141592653589793 * j / segs;
            float *p = &v[3 * (i * segs + j)];
            p[0] = (float)(sin(th) * cos(ph));
            p[1] = (float)(sin(th) * sin(ph));
            p[2] = (float)cos(th);
        }
    nt = 0;
    for (int i = 0; i < rings; i++)
        for (int j = 0; j < segs; j++) {
            uint32_t a = (uint32_t)(i * segs + j), b = (uint32_t)(i * segs + (j + 1) % segs);
            uint32_t c = a + (uint32_t)segs, d = b + (uint32_t)segs;
            if (i > 0) { t[3 * nt] = a; t[3 * nt + 1] = b; t[3 * nt + 2] = d; nt++; }
            if (i < rings - 1) { t[3 * nt] = a; t[3 * nt + 1] = d; t[3 * nt + 2] = c; nt++; }
        }
    rc = tdm_mesh_create(v, nv, t, nt, NULL, &m, NULL, 0);
    if (rc == TDM_OK) rc = tdm_bvh_build(m, out);
done:
    tdm_mesh_free(m);
    free(v);
    free(t);
    return rc;
}

/* A deterministic stream of numbers in [0, 1). */
static double unit(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53;
}

/* Times one CPU or GPU run of n tasks, best of `reps`. */
static double time_run(tdm_sched *e, lane *l, int gpu, size_t n, int reps)
{
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        if (gpu) {
            if (tdm_gpu_run(l->gpu, l->gtasks, n, l->res) != TDM_OK) return -1;
        } else {
            tdm_cpu_engine_run(e->cpu, l->tasks, n, l->res);
        }
        double dt = now_s() - t0;
        if (dt < best) best = dt;
    }
    return best;
}

/* Measures c_cpu, c_gpu and g_off on two spheres of ~2000 triangles, B's centre
 * at 1.6 to 2.4 radii from A's in a random direction (about half the poses
 * touch), bool mode, and sets the threshold from them. Before any run: the
 * calibration's GPU work is left out of the stats. */
static int calibrate(tdm_sched *e)
{
    enum { N_BIG = 65536, N_CPU = 8192 };
    tdm_bvh *s = NULL;
    int rc = sphere(24, 48, &s);
    if (rc != TDM_OK) return rc;
    rc = tdm_sched_mesh_add(e, s);
    if (rc != TDM_OK) {
        tdm_bvh_free(s);
        return rc;
    }
    lane *l = lane_get(e);
    if (reserve_tasks(l, N_BIG) != TDM_OK ||
        reserve((void **)&l->gtasks, &l->gtasks_cap, N_BIG, sizeof *l->gtasks) != TDM_OK) {
        lane_put(e, l);
        tdm_sched_mesh_remove(e, s);
        tdm_bvh_free(s);
        return TDM_ENOMEM;
    }
    pthread_mutex_lock(&e->reg_lock);
    const tdm_gpu_mesh *gm = reg_find(e, s)->gm;
    pthread_mutex_unlock(&e->reg_lock);
    uint64_t seed = 0x5eedca11b4a7e5ull;
    for (size_t i = 0; i < N_BIG; i++) {
        double z = 2 * unit(&seed) - 1, ph = 2 * 3.141592653589793 * unit(&seed), d = 1.6 + 0.8 * unit(&seed);
        double rxy = sqrt(1 - z * z);
        tdm_quat q = {unit(&seed) - 0.5, unit(&seed) - 0.5, unit(&seed) - 0.5, unit(&seed) - 0.5};
        double qn = sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
        q.x /= qn; q.y /= qn; q.z /= qn; q.w /= qn;
        tdm_xform x = tdm_xform_from_pose(tdm_d3(d * rxy * cos(ph), d * rxy * sin(ph), d * z), q);
        l->tasks[i] = (tdm_task){s, s, x, TDM_MODE_BOOL, 1, NULL};
        l->gtasks[i] = (tdm_gpu_task){gm, gm, x, TDM_MODE_BOOL, 1};
    }
    /* every lane's buffers and the kernels' modules now, not in the first runs */
    for (int k = 0; k < e->n_lanes && rc == TDM_OK; k++) rc = tdm_gpu_prepare(e->lanes[k].gpu, N_BIG);
    double t_cpu = -1, t_cpu1 = -1, t_one = -1, t_big = -1;
    if (rc == TDM_OK) {
        t_cpu = time_run(e, l, 0, N_CPU, 3);
        t_cpu1 = time_run(e, l, 0, 32, 5); /* wakes the pool: mostly fixed cost */
        t_one = time_run(e, l, 1, 1, 5);
        t_big = time_run(e, l, 1, N_BIG, 3);
        if (t_one < 0 || t_big < 0) rc = TDM_EGPU;
    }
    tdm_sched_mesh_remove(e, s);
    free_removed(e, l->gpu);
    device_stats(e, l);
    pthread_mutex_lock(&e->stats_lock); /* the calibration's workpiles are not the users' */
    e->stats.gpu_iterations = 0;
    e->stats.gpu_pairs = 0;
    pthread_mutex_unlock(&e->stats_lock);
    lane_put(e, l);
    tdm_bvh_free(s);
    if (rc != TDM_OK) return rc;
    e->c_cpu = t_cpu / N_CPU;
    e->c_off = t_cpu1 > 32 * e->c_cpu ? t_cpu1 - 32 * e->c_cpu : 0;
    e->g_off = t_one;
    e->c_gpu = (t_big > t_one ? t_big - t_one : t_big) / N_BIG;
    set_threshold(e);
    return TDM_OK;
}
