/* The CPU engine: simultaneous-descent BVTT traversal (both nodes split at once,
 * four child pairs per step) with an explicit stack, and a persistent thread pool
 * that hands out chunks of a batch through one atomic counter. */
#include "cpu_engine.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "../geom/tri.h"

/* Pending node pairs: each expansion replaces one pair by at most four, and the
 * stack grows by at most three per level of the BVTT. */
#define STACK_CAP (4 * 2 * TDM_BVH_MAX_DEPTH + 8)

typedef struct node_pair { uint32_t a, b; } node_pair;

typedef struct traversal {
    const tdm_bvh *a, *b;
    const tdm_task *task;
    tdm_fxform fx;  /* b_in_a in float, for the box tests */
    float tol;
    tdm_collide_result *res;
    int done;
} traversal;

static void load_tri(const float *v, tdm_dvec3 out[3])
{
    for (int k = 0; k < 3; k++) out[k] = tdm_d3(v[3 * k], v[3 * k + 1], v[3 * k + 2]);
}

/* Records an intersecting pair; sets t->done when the traversal can stop. */
static void report(traversal *t, uint32_t a_slot, uint32_t b_slot)
{
    tdm_collide_result *r = t->res;
    tdm_pair p = {t->a->tri_ids[a_slot], t->b->tri_ids[b_slot]};
    if (!r->colliding) {
        r->colliding = 1;
        r->first = p;
    }
    if (t->task->mode == TDM_MODE_BOOL) {
        r->n_pairs = 1;
        t->done = 1;
        return;
    }
    if (r->n_pairs == t->task->max_pairs) {
        r->truncated = 1;
        t->done = 1;
        return;
    }
    if (t->task->pairs) t->task->pairs[r->n_pairs] = p;
    r->n_pairs++;
}

static void leaf_pair(traversal *t, const tdm_bvh_node *na, const tdm_bvh_node *nb)
{
    const tdm_xform *x = &t->task->b_in_a;
    uint32_t fa = tdm_leaf_first(na), ca = tdm_leaf_count(na);
    uint32_t fb = tdm_leaf_first(nb), cb = tdm_leaf_count(nb);
    tdm_dvec3 tb[2][3], ta[3];
    for (uint32_t j = 0; j < cb; j++) {
        load_tri(&t->b->tri_verts[9 * (size_t)(fb + j)], tb[j]);
        for (int k = 0; k < 3; k++) tb[j][k] = tdm_xform_apply(x, tb[j][k]);
    }
    for (uint32_t i = 0; i < ca; i++) {
        load_tri(&t->a->tri_verts[9 * (size_t)(fa + i)], ta);
        for (uint32_t j = 0; j < cb; j++) {
            t->res->tri_tests++;
            if (tdm_tri_tri_intersect(ta, tb[j])) {
                report(t, fa + i, fb + j);
                if (t->done) return;
            }
        }
    }
}

/* Contacts mode visits every overlapping pair, so every child pair gets tested
 * anyway: children are tested before they are pushed, which moves each of B's
 * child boxes into A's frame once and tests it against both of A's children.
 * Invariant: every pair on the stack overlaps. */
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
    while (sp > 0 && !t->done) {
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
}

/* Bool mode stops at the first intersecting pair, so a child pair is tested only
 * when the traversal reaches it (depth first): the siblings still waiting when
 * the answer is found are never tested. Invariant: no pair on the stack is tested. */
static void traverse_lazy(traversal *t)
{
    const tdm_bvh_node *A = t->a->nodes, *B = t->b->nodes;
    node_pair stack[STACK_CAP];
    int sp = 0;
    stack[sp++] = (node_pair){0, 0};
    while (sp > 0 && !t->done) {
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
}

void tdm_collide(const tdm_task *task, tdm_collide_result *res)
{
    res->colliding = res->truncated = res->n_pairs = res->box_tests = res->tri_tests = 0;
    res->first.a_tri = res->first.b_tri = 0;
    if (task->mode == TDM_MODE_CONTACTS && task->max_pairs == 0) return;

    traversal t = {task->a, task->b, task, tdm_fxform_of(&task->b_in_a), 0, res, 0};
    t.tol = tdm_obb_tolerance(t.a->radius, t.b->radius, (float)tdm_d3_len(task->b_in_a.t));
    if (task->mode == TDM_MODE_BOOL) traverse_lazy(&t);
    else traverse_eager(&t);
}

/* ---- thread pool -------------------------------------------------------- */

struct tdm_cpu_engine {
    int n_threads; /* including the caller */
    pthread_t *workers;
    int n_workers_started;
    pthread_mutex_t run_lock; /* one run at a time */
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    uint64_t generation; /* bumped per run; workers wait for a new one */
    int busy;            /* workers still on the current run */
    int stopping;
    /* the current run */
    const tdm_task *tasks;
    tdm_collide_result *results;
    size_t n, chunk;
    atomic_size_t next;
};

static void work(tdm_cpu_engine *e)
{
    for (;;) {
        size_t lo = atomic_fetch_add_explicit(&e->next, e->chunk, memory_order_relaxed);
        if (lo >= e->n) return;
        size_t hi = lo + e->chunk < e->n ? lo + e->chunk : e->n;
        for (size_t i = lo; i < hi; i++) tdm_collide(&e->tasks[i], &e->results[i]);
    }
}

static void *worker_main(void *arg)
{
    prctl(PR_SET_NAME, "tdm-cpu"); /* shown by top -H and in /proc */
    tdm_cpu_engine *e = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (e->generation == seen && !e->stopping) pthread_cond_wait(&e->wake, &e->lock);
        if (e->stopping) break;
        seen = e->generation;
        pthread_mutex_unlock(&e->lock);
        work(e);
        pthread_mutex_lock(&e->lock);
        if (--e->busy == 0) pthread_cond_signal(&e->idle);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

int tdm_cpu_engine_create(int n_threads, tdm_cpu_engine **out)
{
    *out = NULL;
    if (n_threads < 0) return TDM_EINVAL;
    if (n_threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > 4096) return TDM_EINVAL;
    tdm_cpu_engine *e = calloc(1, sizeof *e);
    if (!e) return TDM_ENOMEM;
    e->n_threads = n_threads;
    atomic_init(&e->next, 0);
    if (pthread_mutex_init(&e->run_lock, NULL) || pthread_mutex_init(&e->lock, NULL) ||
        pthread_cond_init(&e->wake, NULL) || pthread_cond_init(&e->idle, NULL)) {
        free(e);
        return TDM_ESYS;
    }
    if (n_threads > 1) {
        e->workers = calloc((size_t)n_threads - 1, sizeof *e->workers);
        if (!e->workers) goto fail;
        for (int i = 0; i < n_threads - 1; i++) {
            if (pthread_create(&e->workers[i], NULL, worker_main, e) != 0) goto fail;
            e->n_workers_started++;
        }
    }
    *out = e;
    return TDM_OK;
fail:
    tdm_cpu_engine_destroy(e);
    return TDM_ESYS;
}

void tdm_cpu_engine_destroy(tdm_cpu_engine *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->lock);
    e->stopping = 1;
    pthread_cond_broadcast(&e->wake);
    pthread_mutex_unlock(&e->lock);
    for (int i = 0; i < e->n_workers_started; i++) pthread_join(e->workers[i], NULL);
    free(e->workers);
    pthread_cond_destroy(&e->wake);
    pthread_cond_destroy(&e->idle);
    pthread_mutex_destroy(&e->lock);
    pthread_mutex_destroy(&e->run_lock);
    free(e);
}

int tdm_cpu_engine_threads(const tdm_cpu_engine *e) { return e->n_threads; }

int tdm_cpu_engine_run(tdm_cpu_engine *e, const tdm_task *tasks, size_t n, tdm_collide_result *results)
{
    if (n == 0) return TDM_OK;
    pthread_mutex_lock(&e->run_lock);
    int workers = e->n_workers_started;
    /* Small chunks balance queries of very different cost; the counter is touched
     * once per chunk, which is noise next to a traversal. */
    size_t chunk = n / ((size_t)e->n_threads * 32);
    e->chunk = chunk < 1 ? 1 : (chunk > 256 ? 256 : chunk);
    e->tasks = tasks;
    e->results = results;
    e->n = n;
    atomic_store_explicit(&e->next, 0, memory_order_relaxed);
    if (workers > 0 && n > 1) {
        pthread_mutex_lock(&e->lock);
        e->busy = workers;
        e->generation++;
        pthread_cond_broadcast(&e->wake);
        pthread_mutex_unlock(&e->lock);
        work(e);
        pthread_mutex_lock(&e->lock);
        while (e->busy > 0) pthread_cond_wait(&e->idle, &e->lock);
        pthread_mutex_unlock(&e->lock);
    } else {
        work(e);
    }
    pthread_mutex_unlock(&e->run_lock);
    return TDM_OK;
}
