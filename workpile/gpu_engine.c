/* The GPU-resident engine (gpu_engine.h): chunks, slots, overflow, and the
 * host's share of the work, on the pool. */
#include "gpu_engine.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "../geom/leaf.h"

#define MAX_LANES 8
#define MAX_SLOTS 8
/* Shares a chunk's fill and read-back are cut into, and the chunk size below
 * which the caller does them alone (waking helpers costs more). */
#define FILL_SHARES 8
#define FILL_PARALLEL_MIN 2048
/* Tasks made at a time while filling: they stay in cache until written. */
#define MAKE_BATCH 64
/* Mesh pairs a share remembers (direct-mapped) to reuse their pair-table entries. */
#define PAIRS_SEEN 256

typedef struct range { size_t lo, hi; } range;
typedef struct range_list { range *r; size_t n, cap; } range_list;

/* What a lane's run keeps per slot. */
enum { IDLE, FILLING, ACTIVE };
typedef struct slot_run {
    int state;
    size_t lo, hi;
    tdm_gpu_input *in; /* pinned, the slot's */
} slot_run;

typedef struct fill_job {
    tdm_gpu *g;
    const tdm_task_list *list;
    size_t lo, n;                 /* the chunk: tasks [lo, lo + n) of the list */
    tdm_gpu_input *in;
    tdm_gpu_pair *pairs;
    size_t runs[FILL_SHARES][2];  /* pair-table entries each share wrote: first, count */
    int shares;
    atomic_int failed;            /* a task without device copies */
} fill_job;

typedef struct gpu_lane {
    tdm_gpu *g;
    slot_run slots[MAX_SLOTS];
    range_list todo, over;
    fill_job fill;     /* the fill in progress (one at a time) */
    tdm_pool_job post; /* ... when it runs on the workers while the slots are stepped */
} gpu_lane;

typedef struct gpu_engine {
    tdm_backend base;
    tdm_gpu_engine_config cfg;
    tdm_pool *pool;
    int n_lanes;
    gpu_lane lanes[MAX_LANES];
    int trace; /* TDM_GPU_TRACE set: where each run's time went, on stderr */
    int mesh_trace; /* TDM_GPU_TRACE or TDM_GPU_MESH_TRACE set: each tree's upload and free, timed, on stderr */
    int post;  /* TDM_GPU_POST=0 unset: fill a slot on the workers while the others are stepped */
} gpu_engine;

tdm_gpu_engine_config tdm_gpu_engine_config_default(void)
{
    tdm_gpu_engine_config c = {tdm_gpu_config_default(), 0};
    return c;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int push_range(range_list *l, size_t lo, size_t hi)
{
    if (l->n == l->cap) {
        size_t c = l->cap ? 2 * l->cap : 64;
        range *r = realloc(l->r, c * sizeof *r);
        if (!r) return TDM_ENOMEM;
        l->r = r;
        l->cap = c;
    }
    l->r[l->n++] = (range){lo, hi};
    return TDM_OK;
}

/* One chunk per slot: each level's launch then holds as many node pairs as it
 * can. Most levels of a light scene (alpha-1.5, cubicles) hold less than a wave
 * of the GPU; with two chunks per slot, 100 000 alpha-1.5 bool poses ran at 21M
 * queries/s and the traversal kernel at 25 % of SM throughput, with one at 28M
 * and 31 % (cubicles contacts: 15.6M -> 24.7M). */
static size_t chunk_size(const gpu_engine *e, tdm_gpu *g, size_t n)
{
    size_t c = e->cfg.chunk_tasks;
    if (c == 0) {
        size_t slots = (size_t)tdm_gpu_slots(g);
        c = (n + slots - 1) / slots;
        if (c < 8192) c = 8192;
    }
    uint64_t most = tdm_gpu_slot_max_tasks(g);
    if (c > most) c = (size_t)most;
    return c ? c : 1;
}

/* ---- filling a slot, and reading it back, on the pool ---------------------------- */

static size_t share_lo(size_t n, int k, int nk) { return n * (size_t)k / (size_t)nk; }

/* Writes one input into the slot's pinned buffer. The host never reads these
 * back and the device copies them out: streaming stores skip reading each line
 * into the cache before writing it (a third of the fill's memory traffic). */
static inline void put_input(tdm_gpu_input *dst, const tdm_gpu_input *src)
{
#if defined(__SSE2__)
    _Static_assert(sizeof *src % 16 == 0, "inputs are whole 16-byte words");
    if (((uintptr_t)dst & 15) == 0) {
        const __m128i *s = (const __m128i *)src;
        __m128i *d = (__m128i *)dst;
        for (size_t w = 0; w < sizeof *src / 16; w++) _mm_stream_si128(d + w, _mm_loadu_si128(s + w));
        return;
    }
#endif
    *dst = *src;
}

/* Share k: makes its tasks and writes their inputs, starting a pair-table entry
 * at each change of mesh pair (consecutive tasks mostly share one). A share
 * writes pair entries from its own first index on, so no share needs another's
 * count. */
static void fill_share(void *arg, int k, int nk)
{
    fill_job *j = arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    size_t p = lo;
    uint32_t cur = 0;
    const struct tdm_gpu_mesh *pa = NULL, *pb = NULL;
    /* the share's pair-table entries by mesh pair, so that tasks alternating
       between a few pairs (a robot's checks, query after query) share entries */
    struct { const struct tdm_gpu_mesh *a, *b; uint32_t index; } seen[PAIRS_SEEN];
    memset(seen, 0, sizeof seen);
    tdm_task buf[MAKE_BATCH];
    j->runs[k][0] = lo;
    j->runs[k][1] = 0;
    for (size_t b = lo; b < hi; b += MAKE_BATCH) {
        size_t e = b + MAKE_BATCH < hi ? b + MAKE_BATCH : hi;
        if (j->list->make(j->list, j->lo + b, j->lo + e, buf) != 0) {
            atomic_store_explicit(&j->failed, 1, memory_order_relaxed);
            return;
        }
        for (size_t i = b; i < e; i++) {
            const tdm_task *t = &buf[i - b];
            if (i == lo || t->ga != pa || t->gb != pb) {
                size_t h = (size_t)((((uintptr_t)t->ga >> 4) ^ ((uintptr_t)t->gb >> 4) * 0x9e3779b1u) * 0x85ebca6bu) %
                           PAIRS_SEEN;
                if (seen[h].a == t->ga && seen[h].b == t->gb) {
                    cur = seen[h].index;
                } else {
                    tdm_gpu_pair_of(j->g, t->ga, t->gb, &j->pairs[p]);
                    seen[h].a = t->ga;
                    seen[h].b = t->gb;
                    seen[h].index = (uint32_t)p;
                    cur = (uint32_t)p++;
                }
                pa = t->ga;
                pb = t->gb;
            }
            tdm_gpu_input d = {t->b_in_a, cur, (uint32_t)t->mode, t->max_pairs ? t->max_pairs : 1, 0};
            put_input(&j->in[i], &d);
        }
    }
#if defined(__SSE2__)
    _mm_sfence(); /* the streamed inputs are visible before the share counts as returned */
#endif
    j->runs[k][1] = p - lo;
}

typedef struct copy_job {
    const tdm_gpu_result *res;
    const tdm_gpu_input *in;
    size_t n;
    tdm_collide_result *out;   /* NULL: answers go to the answered hook only */
    const tdm_task_list *list; /* for its answered hook */
    size_t first;              /* the chunk's first task in the list */
} copy_job;

/* The chunk's results [lo, hi) as the engine interface's, into out[0 .. hi - lo). */
static void convert(const copy_job *j, size_t lo, size_t hi, tdm_collide_result *out)
{
    for (size_t i = lo; i < hi; i++) {
        const tdm_gpu_result *r = &j->res[i];
        tdm_collide_result *o = &out[i - lo];
        memset(o, 0, sizeof *o);
        o->colliding = r->colliding;
        if (j->in[i].mode == TDM_MODE_BOOL) {
            o->n_pairs = r->colliding;
        } else {
            o->n_pairs = tdm_contacts_counted(r->count, j->in[i].cap);
            o->truncated = r->truncated;
        }
        o->first.a_tri = r->first_a;
        o->first.b_tri = r->first_b;
    }
}

/* Results converted at a time when nobody keeps them (copy_job.out NULL) go
 * from the stack to the answered hook. */
#define ANSWER_BATCH 256

static void copy_share(void *arg, int k, int nk)
{
    const copy_job *j = arg;
    size_t lo = share_lo(j->n, k, nk), hi = share_lo(j->n, k + 1, nk);
    if (!j->out) {
        tdm_collide_result buf[ANSWER_BATCH];
        for (size_t b = lo; b < hi; b += ANSWER_BATCH) {
            size_t e = b + ANSWER_BATCH < hi ? b + ANSWER_BATCH : hi;
            convert(j, b, e, buf);
            j->list->answered(j->list, j->first + b, j->first + e, buf);
        }
        return;
    }
    convert(j, lo, hi, j->out + lo);
    if (j->list->answered && lo < hi) j->list->answered(j->list, j->first + lo, j->first + hi, j->out + lo);
}

static int shares_for(const gpu_engine *e, size_t n)
{
    int t = tdm_pool_threads(e->pool);
    return n >= FILL_PARALLEL_MIN ? (t < FILL_SHARES ? t : FILL_SHARES) : 1;
}

/* Starts filling slot k with tasks [lo, hi): on the workers while the caller
 * goes on (post), or on the pool with the caller's help, returning when done. */
static int fill_begin(gpu_engine *e, gpu_lane *L, int k, const tdm_task_list *list, size_t lo, size_t hi, int post)
{
    size_t n = hi - lo;
    tdm_gpu_input *in;
    tdm_gpu_pair *pairs;
    int rc = tdm_gpu_slot_buffers(L->g, k, n, &in, &pairs);
    if (rc != TDM_OK) return rc;
    fill_job *j = &L->fill;
    *j = (fill_job){L->g, list, lo, n, in, pairs, {{0}}, shares_for(e, n), 0};
    atomic_init(&j->failed, 0);
    L->slots[k] = (slot_run){FILLING, lo, hi, in};
    if (post) tdm_pool_post(e->pool, &L->post, fill_share, j, j->shares);
    else tdm_pool_run(e->pool, fill_share, j, j->shares);
    return TDM_OK;
}

/* Finishes slot k's fill (waiting for a posted one) and starts the slot. */
static int fill_end(gpu_engine *e, gpu_lane *L, int k, int posted)
{
    fill_job *j = &L->fill;
    if (posted) tdm_pool_wait(e->pool, &L->post);
    L->slots[k].state = IDLE;
    if (atomic_load(&j->failed)) return TDM_ECANCELED;
    int rc = tdm_gpu_slot_start(L->g, k, j->n, (const size_t (*)[2])j->runs, j->shares);
    if (rc == TDM_OK) L->slots[k].state = ACTIVE;
    return rc;
}

/* After every slot drained: the frontiers grow within the budget, and the ranges
 * that overflowed go back on the to-do list, whole when they grew, else in halves
 * (a range of one that cannot grow: TDM_EGPUMEM, its frontier alone outgrows the
 * budget). */
static int requeue_overflowed(gpu_lane *L)
{
    int grown = tdm_gpu_grow(L->g);
    if (grown < 0) return grown;
    int rc = TDM_OK;
    for (size_t i = 0; i < L->over.n && rc == TDM_OK; i++) {
        range r = L->over.r[i];
        if (grown) rc = push_range(&L->todo, r.lo, r.hi);
        else if (r.hi - r.lo == 1) rc = TDM_EGPUMEM;
        else {
            size_t mid = r.lo + (r.hi - r.lo) / 2;
            rc = push_range(&L->todo, mid, r.hi);
            if (rc == TDM_OK) rc = push_range(&L->todo, r.lo, mid);
        }
    }
    L->over.n = 0;
    return rc;
}

static int gpu_run(tdm_backend *b, int lane, const tdm_task_list *list, tdm_collide_result *results)
{
    gpu_engine *e = (gpu_engine *)b;
    gpu_lane *L = &e->lanes[lane];
    size_t n = list->n;
    if (n == 0) return TDM_OK;
    if (!results && !list->answered) return TDM_EINVAL;
    int rc = tdm_gpu_begin(L->g);
    if (rc != TDM_OK) return rc;
    int n_slots = tdm_gpu_slots(L->g);
    size_t chunk = chunk_size(e, L->g, n);
    L->todo.n = L->over.n = 0;
    /* pushed last-first, popped first-first */
    size_t n_chunks = (n + chunk - 1) / chunk;
    for (size_t c = n_chunks; c-- > 0 && rc == TDM_OK;)
        rc = push_range(&L->todo, c * chunk, (c + 1) * chunk < n ? (c + 1) * chunk : n);
    double t_fill = 0, t_wait = 0, t_copy = 0, t_run = now_s();
    size_t reruns = 0, posted = 0;
    int next = 0;     /* the slot stepped next, round robin */
    int filling = -1; /* the slot whose fill runs on the workers */
    while (rc == TDM_OK) {
        if (filling >= 0 && tdm_pool_done(&L->post)) {
            double t0 = now_s();
            rc = fill_end(e, L, filling, 1);
            filling = -1;
            t_fill += now_s() - t0;
            if (rc != TDM_OK) break;
        }
        int any = 0, idle = -1;
        for (int k = 0; k < n_slots; k++) {
            any |= L->slots[k].state == ACTIVE;
            if (idle < 0 && L->slots[k].state == IDLE) idle = k;
        }
        /* an idle slot takes the next range, unless an overflow waits for all to
         * drain: filled on the workers while others run, else right here */
        if (filling < 0 && idle >= 0 && L->todo.n > 0 && L->over.n == 0) {
            range r = L->todo.r[--L->todo.n];
            double t0 = now_s();
            rc = fill_begin(e, L, idle, list, r.lo, r.hi, any && e->post);
            if (rc == TDM_OK && !(any && e->post)) rc = fill_end(e, L, idle, 0);
            else if (rc == TDM_OK) filling = idle, posted++;
            t_fill += now_s() - t0;
            continue;
        }
        if (!any) {
            if (filling >= 0) { /* nothing to step: wait for the fill */
                double t0 = now_s();
                rc = fill_end(e, L, filling, 1);
                filling = -1;
                t_fill += now_s() - t0;
                continue;
            }
            if (L->over.n == 0) break; /* all done */
            /* every slot is idle: grow the frontiers within the budget and re-run the
             * ranges that overflowed, or split them */
            reruns += L->over.n;
            rc = requeue_overflowed(L);
            continue;
        }
        while (L->slots[next].state != ACTIVE) next = (next + 1) % n_slots;
        int k = next;
        if (filling >= 0) {
            /* step only a slot that will not block, so that the fill is started
             * on the device as soon as it is done */
            int ready = -1;
            for (int i = 0; i < n_slots && ready < 0 && rc == TDM_OK; i++) {
                int c = (next + i) % n_slots;
                if (L->slots[c].state != ACTIVE) continue;
                int st = tdm_gpu_slot_ready(L->g, c);
                if (st < 0) rc = st;
                else if (st) ready = c;
            }
            if (rc != TDM_OK) break;
            if (ready < 0) continue;
            k = ready;
        }
        next = (k + 1) % n_slots;
        double t0 = now_s();
        int st = tdm_gpu_slot_step(L->g, k);
        t_wait += now_s() - t0;
        slot_run *s = &L->slots[k];
        if (st < 0) {
            rc = st;
        } else if (st == TDM_GPU_SLOT_DONE) {
            double tc = now_s();
            copy_job j = {tdm_gpu_slot_results(L->g, k), s->in, s->hi - s->lo, results ? results + s->lo : NULL,
                          list, s->lo};
            tdm_pool_run(e->pool, copy_share, &j, shares_for(e, j.n));
            t_copy += now_s() - tc;
            s->state = IDLE;
        } else if (st == TDM_GPU_SLOT_OVERFLOW) {
            s->state = IDLE;
            rc = push_range(&L->over, s->lo, s->hi);
        }
    }
    if (filling >= 0) tdm_pool_wait(e->pool, &L->post); /* an error: the fill must not outlive the run */
    if (rc != TDM_OK) {
        tdm_gpu_abort(L->g);
        for (int k = 0; k < n_slots; k++) L->slots[k].state = IDLE;
    }
    if (e->trace)
        fprintf(stderr, "gpu run: %zu tasks in chunks of %zu on %d streams: %.3f ms in all, filling %.3f ms "
                "(%zu fills while stepping), waiting %.3f ms, reading results %.3f ms, %zu chunks re-run\n",
                n, chunk, n_slots, 1e3 * (now_s() - t_run), 1e3 * t_fill, posted, 1e3 * t_wait, 1e3 * t_copy,
                reruns);
    return rc;
}

/* ---- batches of robot configurations ----------------------------------------------- */

/* Tasks a configs run aims at: the slot's room is at least this (gpu/configs.cu). */
#define CONFIG_TASK_AIM 196608
#define CONFIG_RUN_MIN 256

/* The robots of a call as its runs take them (*rs, *pairs: the caller frees both): the pairs
 * made from `copies` for those given whole, and every keyed one's program set
 * (tdm_gpu_configs_programs: with no slot of the lane running when one is given whole). */
static int configs_robots(gpu_lane *L, const tdm_gpu_robot *robots, uint32_t n_robots, void *const *const *copies,
                          tdm_gpu_robot **rs_out, tdm_gpu_pair **pairs_out)
{
    size_t all_checks = 0;
    for (uint32_t r = 0; r < n_robots; r++) all_checks += robots[r].n_checks;
    tdm_gpu_pair *pairs = malloc(sizeof *pairs * (all_checks ? all_checks : 1));
    tdm_gpu_robot *rs = malloc(sizeof *rs * n_robots);
    if (!pairs || !rs) {
        free(pairs);
        free(rs);
        return TDM_ENOMEM;
    }
    for (uint32_t r = 0, at = 0; r < n_robots; at += robots[r].n_checks, r++) {
        rs[r] = robots[r];
        if (!robots[r].checks) continue; /* resident on the lane (tdm_gpu_configs_programs) */
        for (uint32_t k = 0; k < robots[r].n_checks; k++)
            tdm_gpu_pair_of(L->g, copies[r][2 * (size_t)k], copies[r][2 * (size_t)k + 1], &pairs[at + k]);
        rs[r].pairs = pairs + at;
    }
    int rc = tdm_gpu_configs_programs(L->g, rs, n_robots);
    if (rc != TDM_OK) {
        free(pairs);
        free(rs);
        return rc;
    }
    *rs_out = rs;
    *pairs_out = pairs;
    return TDM_OK;
}

int tdm_gpu_engine_run_configs(tdm_backend *b, int lane, const tdm_gpu_robot *robots, uint32_t n_robots,
                               const uint32_t *robot_of, void *const *const *copies, const double *configs, size_t n,
                               uint32_t mode, uint32_t cap, tdm_gpu_config_answer *out, uint64_t *tasks)
{
    gpu_engine *e = (gpu_engine *)b;
    gpu_lane *L = &e->lanes[lane];
    if (n == 0) return TDM_OK;
    if (n_robots == 0) return TDM_EINVAL;
    uint32_t K = 0, J = robots[0].kin->n_q;
    for (uint32_t r = 0; r < n_robots; r++)
        if (robots[r].n_checks > K) K = robots[r].n_checks;
    int rc = tdm_gpu_begin(L->g);
    if (rc != TDM_OK) return rc;
    tdm_gpu_pair *pairs;
    tdm_gpu_robot *rs;
    if ((rc = configs_robots(L, robots, n_robots, copies, &rs, &pairs)) != TDM_OK) return rc;
    int n_slots = tdm_gpu_slots(L->g);
    size_t most = tdm_gpu_configs_max(L->g, J, K);
    /* the first run fits even if every check is kept; later ones from what was kept */
    size_t per_run = CONFIG_TASK_AIM / K;
    if (per_run < 1) per_run = 1;
    if (per_run > most) per_run = most;
    size_t next = 0, left = n;
    L->todo.n = L->over.n = 0;
    double t_run = now_s(), t_wait = 0;
    size_t runs = 0, again = 0;
    int rr = 0; /* the slot stepped next, round robin */
    while (rc == TDM_OK && left > 0) {
        int any = 0, idle = -1;
        for (int k = 0; k < n_slots; k++) {
            any |= L->slots[k].state == ACTIVE;
            if (idle < 0 && L->slots[k].state == IDLE) idle = k;
        }
        if (idle >= 0 && L->over.n == 0 && (L->todo.n > 0 || next < n)) {
            range g;
            if (L->todo.n > 0) {
                g = L->todo.r[--L->todo.n];
            } else {
                g = (range){next, next + per_run < n ? next + per_run : n};
                next = g.hi;
            }
            if (g.hi - g.lo > most) { /* a range put back before per_run shrank */
                rc = push_range(&L->todo, g.lo + most, g.hi);
                g.hi = g.lo + most;
                if (rc != TDM_OK) break;
            }
            double *room;
            size_t m = g.hi - g.lo;
            if ((rc = tdm_gpu_slot_configs(L->g, idle, m, J, &room)) != TDM_OK) break;
            memcpy(room, configs + g.lo * J, m * J * sizeof *room);
            if ((rc = tdm_gpu_slot_start_configs(L->g, idle, rs, robot_of ? robot_of + g.lo : NULL, m, mode, cap)) !=
                TDM_OK)
                break;
            L->slots[idle] = (slot_run){ACTIVE, g.lo, g.hi, NULL};
            runs++;
            continue;
        }
        if (!any) {
            /* every slot idle with overflowed runs: larger frontiers, or halves */
            rc = requeue_overflowed(L);
            continue;
        }
        while (L->slots[rr].state != ACTIVE) rr = (rr + 1) % n_slots;
        int k = rr;
        rr = (rr + 1) % n_slots;
        double t0 = now_s();
        int st = tdm_gpu_slot_step(L->g, k);
        t_wait += now_s() - t0;
        slot_run *sr = &L->slots[k];
        if (st < 0) {
            rc = st;
        } else if (st == TDM_GPU_SLOT_DONE) {
            uint64_t t = 0;
            const tdm_gpu_config_answer *a = tdm_gpu_slot_config_answers(L->g, k, &t);
            size_t m = sr->hi - sr->lo, done = 0;
            while (done < m && a[done].done) done++; /* the configurations that fit: a prefix */
            memcpy(out + sr->lo, a, done * sizeof *a);
            *tasks += t;
            left -= done;
            sr->state = IDLE;
            if (done == 0) {
                rc = TDM_ENOMEM; /* one configuration's tasks outgrow a run */
                break;
            }
            if (done < m) {
                again += m - done;
                rc = push_range(&L->todo, sr->lo + done, sr->hi);
            }
            /* the next runs: about CONFIG_TASK_AIM tasks from this one's rate */
            double rate = (double)t / (double)done;
            size_t want = rate > 0 ? (size_t)(CONFIG_TASK_AIM / (rate * 1.25)) : most;
            if (want < CONFIG_RUN_MIN) want = CONFIG_RUN_MIN;
            per_run = want < most ? want : most;
        } else if (st == TDM_GPU_SLOT_OVERFLOW) {
            sr->state = IDLE;
            rc = push_range(&L->over, sr->lo, sr->hi);
        }
    }
    if (rc != TDM_OK) {
        tdm_gpu_abort(L->g);
        for (int k = 0; k < n_slots; k++) L->slots[k].state = IDLE;
    }
    if (e->trace)
        fprintf(stderr, "gpu configs: %zu configurations of %u robot scenes, %u checks at most: %.3f ms, waiting "
                "%.3f ms, %zu runs, %zu configurations again\n", n, n_robots, K, 1e3 * (now_s() - t_run),
                1e3 * t_wait, runs, again);
    free(pairs);
    free(rs);
    return rc;
}

/* ---- asynchronous runs of configurations: one slot each (gpu_engine.h) -------------- */

size_t tdm_gpu_engine_configs_one_run(tdm_backend *b, int lane, uint32_t n_q, uint32_t n_checks)
{
    gpu_engine *e = (gpu_engine *)b;
    if (n_checks == 0) return 0;
    size_t most = tdm_gpu_configs_max(e->lanes[lane].g, n_q, n_checks), fit = CONFIG_TASK_AIM / n_checks;
    return fit < most ? fit : most;
}

int tdm_gpu_engine_configs_room(tdm_backend *b, int lane)
{
    gpu_lane *L = &((gpu_engine *)b)->lanes[lane];
    int n_slots = tdm_gpu_slots(L->g), idle = 0;
    for (int k = 0; k < n_slots; k++) idle += L->slots[k].state == IDLE;
    return idle;
}

int tdm_gpu_engine_configs_start(tdm_backend *b, int lane, const tdm_gpu_robot *robots, uint32_t n_robots,
                                 const uint32_t *robot_of, void *const *const *copies, const double *configs,
                                 size_t n, uint32_t mode, uint32_t cap, int *slot)
{
    gpu_engine *e = (gpu_engine *)b;
    gpu_lane *L = &e->lanes[lane];
    if (n == 0 || n_robots == 0) return TDM_EINVAL;
    uint32_t K = 0, J = robots[0].kin->n_q;
    int whole = 0;
    for (uint32_t r = 0; r < n_robots; r++) {
        if (robots[r].n_checks > K) K = robots[r].n_checks;
        whole |= robots[r].checks != NULL;
    }
    if (n > tdm_gpu_engine_configs_one_run(b, lane, J, K)) return TDM_EINVAL;
    int n_slots = tdm_gpu_slots(L->g), idle = -1, running = 0;
    for (int k = 0; k < n_slots; k++) {
        if (L->slots[k].state != IDLE) running = 1;
        else if (idle < 0) idle = k;
    }
    /* a program to upload may take the place of one a running slot reads: only on an idle lane */
    if (idle < 0 || (whole && running)) return TDM_EAGAIN;
    int rc = tdm_gpu_begin(L->g);
    if (rc != TDM_OK) return rc;
    tdm_gpu_pair *pairs;
    tdm_gpu_robot *rs;
    if ((rc = configs_robots(L, robots, n_robots, copies, &rs, &pairs)) != TDM_OK) return rc;
    double *room;
    rc = tdm_gpu_slot_configs(L->g, idle, n, J, &room);
    if (rc == TDM_OK) {
        memcpy(room, configs, n * J * sizeof *room);
        rc = tdm_gpu_slot_start_configs(L->g, idle, rs, robot_of, n, mode, cap); /* packs what it needs */
    }
    free(pairs);
    free(rs);
    if (rc != TDM_OK) return rc; /* the slot stays idle; the runs in flight go on */
    L->slots[idle] = (slot_run){ACTIVE, 0, n, NULL};
    *slot = idle;
    return TDM_OK;
}

int tdm_gpu_engine_configs_poll(tdm_backend *b, int lane, int slot, tdm_gpu_config_answer *out, size_t *done,
                                uint64_t *tasks)
{
    gpu_lane *L = &((gpu_engine *)b)->lanes[lane];
    slot_run *sr = &L->slots[slot];
    if (sr->state != ACTIVE) return TDM_EINVAL;
    int st = tdm_gpu_slot_ready(L->g, slot);
    if (st == 0) return 0;
    if (st > 0) st = tdm_gpu_slot_step(L->g, slot);
    if (st < 0) {
        tdm_gpu_abort(L->g); /* every slot's run is lost: the caller's runs in flight fail */
        for (int k = 0; k < tdm_gpu_slots(L->g); k++) L->slots[k].state = IDLE;
        return st;
    }
    if (st == TDM_GPU_SLOT_BUSY) return 0; /* handed over to the levels: the next group queued */
    size_t m = sr->hi - sr->lo, d = 0;
    if (st == TDM_GPU_SLOT_DONE) {
        uint64_t t = 0;
        const tdm_gpu_config_answer *a = tdm_gpu_slot_config_answers(L->g, slot, &t);
        while (d < m && a[d].done) d++;
        memcpy(out, a, d * sizeof *a);
        *tasks += t;
    }
    sr->state = IDLE; /* an overflow answers none: the caller runs them the synchronous way */
    *done = d;
    return 1;
}

/* ---- the rest of the interface ----------------------------------------------------- */

static int gpu_mesh_add(tdm_backend *b, int lane, const tdm_bvh *bvh, void **copy)
{
    gpu_engine *e = (gpu_engine *)b;
    tdm_gpu_mesh *m = NULL;
    double t0 = e->mesh_trace ? now_s() : 0;
    int rc = tdm_gpu_mesh_upload(e->lanes[lane].g, bvh, &m);
    *copy = m;
    if (e->mesh_trace) fprintf(stderr, "gpu mesh upload: %u triangles: %.3f ms\n", bvh->n_tris, 1e3 * (now_s() - t0));
    return rc;
}

static void gpu_mesh_free(tdm_backend *b, int lane, void *copy)
{
    gpu_engine *e = (gpu_engine *)b;
    double t0 = e->mesh_trace ? now_s() : 0;
    uint32_t tris = e->mesh_trace ? tdm_gpu_mesh_triangles(copy) : 0;
    tdm_gpu_mesh_free(e->lanes[lane].g, copy);
    if (e->mesh_trace) fprintf(stderr, "gpu mesh free: %u triangles: %.3f ms\n", tris, 1e3 * (now_s() - t0));
}

static void gpu_mesh_discard(tdm_backend *b, int lane, void *copy)
{
    gpu_engine *e = (gpu_engine *)b;
    tdm_gpu_mesh_discard(e->lanes[lane].g, copy);
}

static int gpu_prepare(tdm_backend *b, size_t n)
{
    gpu_engine *e = (gpu_engine *)b;
    int rc = TDM_OK;
    for (int k = 0; k < e->n_lanes && rc == TDM_OK; k++)
        rc = tdm_gpu_prepare(e->lanes[k].g, chunk_size(e, e->lanes[k].g, n));
    return rc;
}

static void gpu_get_stats(tdm_backend *b, int lane, tdm_backend_stats *s)
{
    gpu_engine *e = (gpu_engine *)b;
    tdm_gpu_stats gs;
    tdm_gpu_get_stats(e->lanes[lane].g, &gs);
    s->iterations = gs.iterations;
    s->pairs = gs.pairs;
    s->device_bytes = gs.device_bytes;
    s->mesh_bytes = gs.mesh_bytes;
    s->budget_bytes = gs.budget_bytes;
    s->small_runs = gs.small_runs;
    s->small_handovers = gs.small_handovers;
    s->fused_runs = gs.fused_runs;
    s->config_start_ns = gs.config_start_ns;
    s->programs_uploaded = gs.programs_uploaded;
    s->programs_reused = gs.programs_reused;
    s->program_bytes = gs.program_bytes;
}

int tdm_gpu_engine_program_resident(tdm_backend *b, int lane, uint64_t key, uint64_t epoch, const tdm_kin *kin)
{
    return tdm_gpu_program_resident(((gpu_engine *)b)->lanes[lane].g, key, epoch, kin);
}

static void gpu_destroy(tdm_backend *b)
{
    gpu_engine *e = (gpu_engine *)b;
    if (!e) return;
    for (int k = e->n_lanes - 1; k >= 0; k--) { /* lanes first, the first tdm_gpu last */
        tdm_gpu_destroy(e->lanes[k].g);
        free(e->lanes[k].todo.r);
        free(e->lanes[k].over.r);
    }
    free(e);
}

static const tdm_backend_ops gpu_ops = {TDM_BACKEND_GPU, gpu_mesh_add,  gpu_mesh_free, gpu_prepare,
                                        gpu_run,         gpu_get_stats, gpu_destroy,  gpu_mesh_discard};

int tdm_gpu_engine_create(const tdm_gpu_engine_config *cfg, tdm_pool *pool, int lanes, tdm_backend **out,
                          const char **why)
{
    *out = NULL;
    if (!pool || lanes < 1 || lanes > MAX_LANES) return TDM_EINVAL;
    gpu_engine *e = calloc(1, sizeof *e);
    if (!e) return TDM_ENOMEM;
    e->cfg = cfg ? *cfg : tdm_gpu_engine_config_default();
    e->pool = pool;
    e->trace = getenv("TDM_GPU_TRACE") != NULL;
    e->mesh_trace = e->trace || getenv("TDM_GPU_MESH_TRACE") != NULL;
    const char *po = getenv("TDM_GPU_POST");
    e->post = !(po && strcmp(po, "0") == 0);
    e->base = (tdm_backend){&gpu_ops, lanes, 1, 1};
    int rc = tdm_gpu_create(&e->cfg.gpu, &e->lanes[0].g, why);
    if (rc != TDM_OK) {
        free(e);
        return rc;
    }
    e->n_lanes = 1;
    for (int k = 1; k < lanes; k++) {
        if ((rc = tdm_gpu_create_lane(e->lanes[0].g, &e->lanes[k].g)) != TDM_OK) {
            if (why) *why = "a second lane on the GPU could not start";
            gpu_destroy(&e->base);
            return rc;
        }
        e->n_lanes = k + 1;
    }
    *out = &e->base;
    return TDM_OK;
}

tdm_gpu *tdm_gpu_engine_lane(tdm_backend *b, int k) { return ((gpu_engine *)b)->lanes[k].g; }
