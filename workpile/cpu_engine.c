/* The CPU engine: simultaneous-descent BVTT traversal (both nodes split at once,
 * four child pairs per step) with an explicit stack; a batch is spread over the
 * scheduler's thread pool (pool.h) in chunks handed out through one atomic
 * counter. */
#include "cpu_engine.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"

#include "../geom/leaf.h"

/* Pending node pairs: each expansion replaces one pair by at most four, and the
 * stack grows by at most three per level of the BVTT. */
#define STACK_CAP (4 * 2 * TDM_BVH_MAX_DEPTH + 8)

typedef struct node_pair { uint32_t a, b; } node_pair;

typedef struct traversal {
    const tdm_bvh *a, *b;
    const tdm_task *task;
    tdm_fxform fx;  /* b_in_a in float, for the box tests */
    float tol;
    double slack;   /* for the exact stage (tdm_obb_apart_exact) */
    tdm_collide_result *res;
    int done;
    uint64_t counted; /* box + triangle tests already added to task->work */
} traversal;

/* Box tests after which a traversal is careful: it takes the exact stage for
 * pairs the float test keeps only by its slack, and charges its task's work
 * account. Below it the float test alone decides, as it always did, and nothing
 * is counted: a traversal this short cannot be the quadratic case the stage is
 * for, and it costs the budget at most this many box tests and four times as
 * many triangle tests before its first charge. Past it, what is left of the
 * descent is pruned where the slack alone kept pairs together (parallel sheets
 * 1e-7 apart: 16 million triangle tests before, about this many box tests now). */
#define CAREFUL_AFTER 16384u

/* Tests a leaf pair (geom/leaf.h) and adds its intersecting pairs to the
 * result; sets t->done when the traversal can stop. Bool mode stops at the first
 * intersecting pair. tri_tests counts the pairs tested until the answer, as if
 * each had been tested and reported in turn. */
static void leaf_pair(traversal *t, const tdm_bvh_node *na, const tdm_bvh_node *nb)
{
    const tdm_task *k = t->task;
    uint32_t m = tdm_leaf_intersect(na, t->a->tri_verts, nb, t->b->tri_verts, &k->b_in_a, k->mode == TDM_MODE_BOOL);
    t->res->tri_tests += tdm_result_add_leaf(t->res, k->mode, k->max_pairs, k->pairs, m, na, t->a->tri_ids, nb,
                                             t->b->tri_ids);
    t->done = tdm_result_done(t->res, k->mode);
}

/* Adds the tests done since the last charge to the task's account; ends the
 * traversal (done, and the account marked over) when the account is spent or
 * stopped. */
TDM_COLD void charge(traversal *t)
{
    tdm_work *w = t->task->work;
    uint64_t n = (uint64_t)t->res->box_tests + t->res->tri_tests;
    if (!w || n <= t->counted) return;
    uint64_t used = __atomic_add_fetch(&w->used, n - t->counted, __ATOMIC_RELAXED);
    t->counted = n;
    if ((w->limit && used > w->limit) || __atomic_load_n(&w->stop, __ATOMIC_RELAXED)) {
        __atomic_store_n(&w->over, 1, __ATOMIC_RELEASE);
        t->done = 1;
    }
}

/* Do node a of A and node b of B (given as w, in A's frame) overlap, for a
 * careful traversal: the float test first; a pair it keeps only by grace of its
 * slack goes to the exact stage (bv.h), which separates what the slack cannot:
 * parallel sheets a hair apart would otherwise overlap down to every leaf pair.
 * Out of line: the fast loops below never call it. */
TDM_COLD int overlap_careful(const traversal *t, uint32_t a, const tdm_wbox *w, uint32_t b)
{
    const tdm_bvh_node *na = &t->a->nodes[a], *nb = &t->b->nodes[b];
    int r = tdm__obb_sat(na, w, nb->extent, t->tol, 1);
    if (r != TDM_OBB_MARGINAL) return r;
    if (!t->a->exact_extent || !t->b->exact_extent) return 1;
    tdm_xbox xa, xb;
    if (!tdm_xbox_of(na, &t->a->exact_extent[3 * (size_t)a], &xa) ||
        !tdm_xbox_of(nb, &t->b->exact_extent[3 * (size_t)b], &xb))
        return 1;
    return !tdm_obb_apart_exact(&xa, &xb, &t->task->b_in_a, t->slack);
}

/* Contacts mode visits every overlapping pair, so every child pair gets tested
 * anyway: children are tested before they are pushed, which moves each of B's
 * child boxes into A's frame once and tests it against both of A's children.
 * Invariant: every pair on the stack overlaps.
 *
 * Two loops over one stack. The first is the engine's hot loop as it always
 * was, left after CAREFUL_AFTER box tests; the second, for what is left of a
 * long traversal, tests boxes carefully and charges the task's account every
 * TDM_WORK_STEP tests. (One loop with both, however the branches were arranged,
 * cost the OMPL scenes 7-40% of their speed.) */
static void traverse_eager(traversal *t)
{
    const tdm_bvh_node *A = t->a->nodes, *B = t->b->nodes;
    tdm_wbox wb[2];
    tdm_wbox_of(&t->fx, &B[0], &wb[0]);
    t->res->box_tests = 1;
    if (!tdm_obb_overlap_w(&A[0], &wb[0], B[0].extent, t->tol)) return;
    node_pair stack[STACK_CAP];
    int sp = 0;
    stack[sp++] = (node_pair){0, 0};
    while (sp > 0 && !t->done && t->res->box_tests < CAREFUL_AFTER) {
        node_pair p = stack[--sp];
        uint32_t ca[2], cb[2];
        int nca, ncb;
        if (!tdm_bvtt_children(&A[p.a], p.a, &B[p.b], p.b, ca, &nca, cb, &ncb)) {
            leaf_pair(t, &A[p.a], &B[p.b]);
            continue;
        }
        for (int j = 0; j < ncb; j++) tdm_wbox_of(&t->fx, &B[cb[j]], &wb[j]);
        t->res->box_tests += (uint32_t)(nca * ncb);
        /* pushed in reverse so that the first children are visited first */
        for (int i = nca - 1; i >= 0; i--)
            for (int j = ncb - 1; j >= 0; j--)
                if (tdm_obb_overlap_w(&A[ca[i]], &wb[j], B[cb[j]].extent, t->tol))
                    stack[sp++] = (node_pair){ca[i], cb[j]};
    }
    if (sp == 0 || t->done) return;
    charge(t);
    while (sp > 0 && !t->done) {
        node_pair p = stack[--sp];
        uint32_t ca[2], cb[2];
        int nca, ncb;
        if (!tdm_bvtt_children(&A[p.a], p.a, &B[p.b], p.b, ca, &nca, cb, &ncb)) {
            leaf_pair(t, &A[p.a], &B[p.b]);
        } else {
            for (int j = 0; j < ncb; j++) tdm_wbox_of(&t->fx, &B[cb[j]], &wb[j]);
            t->res->box_tests += (uint32_t)(nca * ncb);
            for (int i = nca - 1; i >= 0; i--)
                for (int j = ncb - 1; j >= 0; j--)
                    if (overlap_careful(t, ca[i], &wb[j], cb[j])) stack[sp++] = (node_pair){ca[i], cb[j]};
        }
        if ((uint64_t)t->res->box_tests + t->res->tri_tests - t->counted >= TDM_WORK_STEP) charge(t);
    }
}

/* Bool mode stops at the first intersecting pair, so a child pair is tested only
 * when the traversal reaches it (depth first): the siblings still waiting when
 * the answer is found are never tested. Invariant: no pair on the stack is tested.
 * Two loops, as traverse_eager's. */
static void traverse_lazy(traversal *t)
{
    const tdm_bvh_node *A = t->a->nodes, *B = t->b->nodes;
    node_pair stack[STACK_CAP];
    int sp = 0;
    stack[sp++] = (node_pair){0, 0};
    while (sp > 0 && !t->done && t->res->box_tests < CAREFUL_AFTER) {
        node_pair p = stack[--sp];
        tdm_wbox wb;
        tdm_wbox_of(&t->fx, &B[p.b], &wb);
        t->res->box_tests++;
        if (!tdm_obb_overlap_w(&A[p.a], &wb, B[p.b].extent, t->tol)) continue;
        uint32_t ca[2], cb[2];
        int nca, ncb;
        if (!tdm_bvtt_children(&A[p.a], p.a, &B[p.b], p.b, ca, &nca, cb, &ncb)) {
            leaf_pair(t, &A[p.a], &B[p.b]);
            continue;
        }
        for (int i = nca - 1; i >= 0; i--)
            for (int j = ncb - 1; j >= 0; j--) stack[sp++] = (node_pair){ca[i], cb[j]};
    }
    if (sp == 0 || t->done) return;
    charge(t);
    while (sp > 0 && !t->done) {
        node_pair p = stack[--sp];
        tdm_wbox wb;
        tdm_wbox_of(&t->fx, &B[p.b], &wb);
        t->res->box_tests++;
        if (overlap_careful(t, p.a, &wb, p.b)) {
            uint32_t ca[2], cb[2];
            int nca, ncb;
            if (!tdm_bvtt_children(&A[p.a], p.a, &B[p.b], p.b, ca, &nca, cb, &ncb)) {
                leaf_pair(t, &A[p.a], &B[p.b]);
            } else {
                for (int i = nca - 1; i >= 0; i--)
                    for (int j = ncb - 1; j >= 0; j--) stack[sp++] = (node_pair){ca[i], cb[j]};
            }
        }
        if ((uint64_t)t->res->box_tests + t->res->tri_tests - t->counted >= TDM_WORK_STEP) charge(t);
    }
}

/* Adds n tests to an account; marks it over once past its limit. */
static void account_add(tdm_work *w, uint64_t n)
{
    uint64_t used = __atomic_add_fetch(&w->used, n, __ATOMIC_RELAXED);
    if (w->limit && used > w->limit) __atomic_store_n(&w->over, 1, __ATOMIC_RELEASE);
}

/* tdm_collide without the last charge: *uncharged receives the tests not yet
 * added to task->work (all of a short traversal's). */
static void collide_run(const tdm_task *task, tdm_collide_result *res, uint64_t *uncharged)
{
    res->colliding = res->truncated = res->n_pairs = res->box_tests = res->tri_tests = 0;
    res->first.a_tri = res->first.b_tri = 0;
    *uncharged = 0;
    if (task->mode == TDM_MODE_CONTACTS && task->max_pairs == 0) return;
    /* meshes far apart (geom/bv.h): one test, in double, instead of a root box
       test that a translation past float's range would make never apart */
    if (tdm_bounds_apart(&task->b_in_a, task->a->radius, task->b->radius)) {
        res->box_tests = 1;
        *uncharged = 1;
        return;
    }

    traversal t = {task->a, task->b, task, tdm_fxform_of(&task->b_in_a), 0, 0, res, 0, 0};
    t.tol = tdm_obb_tolerance(t.a->radius, t.b->radius, (float)tdm_d3_len(task->b_in_a.t));
    t.slack = tdm_obb_exact_slack(t.a->radius, t.b->radius, tdm_d3_len(task->b_in_a.t));
    if (task->mode == TDM_MODE_BOOL) traverse_lazy(&t);
    else traverse_eager(&t);
    uint64_t n = (uint64_t)res->box_tests + res->tri_tests;
    *uncharged = n > t.counted ? n - t.counted : 0;
}

void tdm_collide(const tdm_task *task, tdm_collide_result *res)
{
    uint64_t u;
    collide_run(task, res, &u);
    if (task->work && u) account_add(task->work, u);
}

/* ---- running a batch on the pool -------------------------------------------- */

struct tdm_cpu_engine {
    tdm_pool *pool; /* borrowed */
    uint64_t solo_ns; /* a list's first this long on the caller alone (run_list) */
};

/* A task list starts on its caller alone, and the pool's threads are woken for it only if
 * it is still running after this long: a small list (a planner's configuration: ~10 tasks of
 * a few microseconds) costs less than waking them, and under many clients' lists at once
 * every such wake-up took a core from a thread with work (15 pool threads at 40 % of a core,
 * waiting 1.6 s a second for one, with 64 planners on tandemd's auto engine). 0 (TDM_CPU_SOLO_US=0):
 * the pool at once, as before. */
#define SOLO_US 30

uint64_t tdm_cpu_solo_ns(void)
{
    const char *solo = getenv("TDM_CPU_SOLO_US");
    return 1000 * (solo && *solo ? strtoull(solo, NULL, 10) : SOLO_US);
}

int tdm_cpu_engine_create(tdm_pool *pool, tdm_cpu_engine **out)
{
    *out = NULL;
    if (!pool) return TDM_EINVAL;
    tdm_cpu_engine *e = calloc(1, sizeof *e);
    if (!e) return TDM_ENOMEM;
    e->pool = pool;
    e->solo_ns = tdm_cpu_solo_ns();
    *out = e;
    return TDM_OK;
}

void tdm_cpu_engine_destroy(tdm_cpu_engine *e) { free(e); }

int tdm_cpu_engine_threads(const tdm_cpu_engine *e) { return tdm_pool_threads(e->pool); }

/* ---- the CPU engine behind the engine interface (backend.h) -------------------- */

/* Tasks made per claim from a list: small enough to stay in cache between
 * being made and being run. */
#define MAKE_CHUNK 64

typedef struct list_run {
    const tdm_task_list *list;
    tdm_collide_result *results;
    size_t chunk;
    atomic_size_t next;
} list_run;

/* Short traversals (most of them: below CAREFUL_AFTER box tests they charge
 * nothing themselves) are added to their account here, a batch at a time: one
 * atomic add per ACCOUNT_BATCH tests or per chunk, not per task. A task whose
 * account is over (its limit passed, or stopped) is not run: its request's
 * answers are discarded anyway. */
#define ACCOUNT_BATCH 65536u

typedef struct account {
    tdm_work *w;
    uint64_t acc;
    int skip;
    uint32_t hit; /* the group (tdm_task) of the last task found colliding on this thread */
} account;

static void account_flush(account *a)
{
    if (a->w && a->acc) account_add(a->w, a->acc);
    a->acc = 0;
    a->skip = a->w && __atomic_load_n(&a->w->over, __ATOMIC_ACQUIRE);
}

static void run_task(account *a, const tdm_task *task, tdm_collide_result *res)
{
    if (task->work != a->w) {
        account_flush(a);
        a->w = task->work;
        a->skip = a->w && __atomic_load_n(&a->w->over, __ATOMIC_ACQUIRE);
    }
    tdm_work *w = task->work;
    int any = w && w->any_stop && task->mode == TDM_MODE_BOOL;
    if (a->skip || (task->group && task->group == a->hit) || (any && __atomic_load_n(&w->hit, __ATOMIC_RELAXED))) {
        *res = (tdm_collide_result){0};
        return;
    }
    uint64_t u;
    collide_run(task, res, &u);
    if (res->colliding) {
        a->hit = task->group;
        if (any) __atomic_store_n(&w->hit, 1, __ATOMIC_RELAXED); /* the account's other queries: unrun */
    }
    if (a->w && (a->acc += u) >= ACCOUNT_BATCH) account_flush(a);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs chunks of r's list until none is left, or (until_ns != 0) until that time has passed
 * after a chunk: 1 when every chunk was claimed. */
static int run_chunks(list_run *r, uint64_t until_ns)
{
    const tdm_task_list *l = r->list;
    tdm_task buf[MAKE_CHUNK];
    account a = {NULL, 0, 0, 0};
    int all = 1;
    for (;;) {
        if (until_ns && mono_ns() >= until_ns) {
            all = atomic_load_explicit(&r->next, memory_order_relaxed) >= l->n;
            break;
        }
        size_t lo = atomic_fetch_add_explicit(&r->next, r->chunk, memory_order_relaxed);
        if (lo >= l->n) break;
        size_t hi = lo + r->chunk < l->n ? lo + r->chunk : l->n;
        if (l->array) {
            for (size_t i = lo; i < hi; i++) run_task(&a, &l->array[i], &r->results[i]);
        } else {
            for (size_t b = lo; b < hi; b += MAKE_CHUNK) {
                size_t e = b + MAKE_CHUNK < hi ? b + MAKE_CHUNK : hi;
                l->make(l, b, e, buf); /* cannot fail: the CPU engine needs no device copies */
                for (size_t i = b; i < e; i++) run_task(&a, &buf[i - b], &r->results[i]);
            }
        }
        account_flush(&a); /* each chunk's count in, and whether the account is over now */
    }
    account_flush(&a);
    return all;
}

static void list_share(void *arg, int k, int n_shares)
{
    (void)k;
    (void)n_shares;
    run_chunks(arg, 0);
}

typedef struct cpu_backend {
    tdm_backend base;
    tdm_cpu_engine *engine;
} cpu_backend;

static int be_mesh_add(tdm_backend *b, int lane, const tdm_bvh *bvh, void **copy)
{
    (void)b;
    (void)lane;
    (void)bvh;
    *copy = NULL;
    return TDM_OK;
}

static void be_mesh_free(tdm_backend *b, int lane, void *copy)
{
    (void)b;
    (void)lane;
    (void)copy;
}

static int be_prepare(tdm_backend *b, size_t n)
{
    (void)b;
    (void)n;
    return TDM_OK;
}

/* The pool's shares pull chunks from one counter: small chunks balance tasks
 * of very different cost, and the counter is touched once per chunk, which is
 * noise next to a traversal. */
static void run_list(tdm_cpu_engine *e, const tdm_task_list *tasks, tdm_collide_result *results)
{
    if (tasks->n == 0) return;
    int threads = tdm_pool_threads(e->pool);
    size_t chunk = tasks->n / ((size_t)threads * 32);
    list_run r = {tasks, results, chunk < 1 ? 1 : (chunk > 256 ? 256 : chunk), 0};
    atomic_init(&r.next, 0);
    if (tasks->n < 2 || tasks->one_thread || threads < 2) {
        run_chunks(&r, 0);
        return;
    }
    if (e->solo_ns && run_chunks(&r, mono_ns() + e->solo_ns)) return; /* done alone */
    tdm_pool_run(e->pool, list_share, &r, threads); /* the rest with the pool's threads */
}

int tdm_cpu_engine_run(tdm_cpu_engine *e, const tdm_task *tasks, size_t n, tdm_collide_result *results)
{
    tdm_task_list list = tdm_task_list_array(tasks, n);
    run_list(e, &list, results);
    return TDM_OK;
}

static int be_run(tdm_backend *b, int lane, const tdm_task_list *tasks, tdm_collide_result *results)
{
    (void)lane;
    run_list(((cpu_backend *)b)->engine, tasks, results);
    return TDM_OK;
}

static void be_get_stats(tdm_backend *b, int lane, tdm_backend_stats *s)
{
    (void)b;
    (void)lane;
    memset(s, 0, sizeof *s);
}

static void be_destroy(tdm_backend *b)
{
    if (!b) return;
    tdm_cpu_engine_destroy(((cpu_backend *)b)->engine);
    free(b);
}

static const tdm_backend_ops cpu_ops = {TDM_BACKEND_CPU, be_mesh_add, be_mesh_free, be_prepare,
                                        be_run,         be_get_stats, be_destroy,  NULL};

int tdm_cpu_backend_create(tdm_pool *pool, int lanes, tdm_backend **out)
{
    *out = NULL;
    cpu_backend *b = calloc(1, sizeof *b);
    if (!b) return TDM_ENOMEM;
    int rc = tdm_cpu_engine_create(pool, &b->engine);
    if (rc != TDM_OK) {
        free(b);
        return rc;
    }
    b->base = (tdm_backend){&cpu_ops, lanes, 0, 0};
    *out = &b->base;
    return TDM_OK;
}
