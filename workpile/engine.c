/* tdm_engine over the CPU engine: expand, run once, merge.
 *
 * A run turns every (query, checked pair) of the batch into a tdm_task, in query
 * order and, within a query, in checked-pair order; runs them with one
 * tdm_cpu_engine_run call per chunk of chunk_tasks (one call for any ordinary
 * batch); and folds the task results into per-query answers in that same order,
 * so "the first colliding pair" is simply the first one met.
 *
 * Contacts mode with pair output runs in two passes. The first counts (no pair
 * buffers: a task's pairs are only known once it has run, and reserving
 * max_contacts per task would cost tasks x max_contacts); the second re-runs only
 * the tasks that found pairs, each with exactly the room it needs, capped by
 * what its query still has room for. Traversals are deterministic, so a re-run
 * finds the same pairs in the same order. */
#include "engine.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_engine.h"

typedef struct task_ref { uint32_t query, check; } task_ref;
/* A task of a pair-collecting query that found pairs in the first pass. */
typedef struct hit { uint32_t query, check, n_pairs, room; } hit;

struct tdm_engine {
    tdm_engine_kind kind;
    tdm_cpu_engine *cpu;
    uint32_t chunk;
    char detail[256];
    pthread_mutex_t run_lock;
    pthread_mutex_t stats_lock;
    tdm_engine_stats stats;

    /* scratch, kept between runs */
    tdm_task *tasks;
    tdm_collide_result *res;
    task_ref *refs;
    size_t tasks_cap;
    uint64_t *sums; /* contacts counted per query, before the cap */
    uint32_t *room; /* pairs a query may still receive, second pass */
    size_t queries_cap;
    hit *hits;
    size_t n_hits, hits_cap;
    tdm_pair *pairs;
    size_t pairs_cap;
};

const char *tdm_engine_kind_name(tdm_engine_kind k)
{
    switch (k) {
    case TDM_ENGINE_AUTO: return "auto";
    case TDM_ENGINE_CPU: return "cpu";
    case TDM_ENGINE_GPU: return "gpu";
    case TDM_ENGINE_HYBRID: return "hybrid";
    }
    return "unknown";
}

tdm_engine_config tdm_engine_config_default(void)
{
    tdm_engine_config c = {TDM_ENGINE_AUTO, 0, 262144, 0, 0, 2, 1};
    return c;
}

int tdm_engine_create(const tdm_engine_config *cfg, tdm_engine **out, char *why, size_t whylen)
{
    tdm_engine_config dc = tdm_engine_config_default();
    if (!cfg) cfg = &dc;
    *out = NULL;
    if (why && whylen) why[0] = 0;
    if (cfg->kind == TDM_ENGINE_GPU || cfg->kind == TDM_ENGINE_HYBRID) {
        if (why) snprintf(why, whylen, "no %s engine in this build", tdm_engine_kind_name(cfg->kind));
        return TDM_ENODEV;
    }
    if (cfg->kind != TDM_ENGINE_AUTO && cfg->kind != TDM_ENGINE_CPU) {
        if (why) snprintf(why, whylen, "unknown engine kind %d", (int)cfg->kind);
        return TDM_EINVAL;
    }
    if (cfg->threads < 0 || cfg->chunk_tasks == 0) {
        if (why) snprintf(why, whylen, "threads must be >= 0 and chunk_tasks >= 1");
        return TDM_EINVAL;
    }
    tdm_engine *e = calloc(1, sizeof *e);
    if (!e) return TDM_ENOMEM;
    e->kind = TDM_ENGINE_CPU;
    e->chunk = cfg->chunk_tasks;
    if (pthread_mutex_init(&e->run_lock, NULL) != 0) {
        free(e);
        return TDM_ESYS;
    }
    if (pthread_mutex_init(&e->stats_lock, NULL) != 0) {
        pthread_mutex_destroy(&e->run_lock);
        free(e);
        return TDM_ESYS;
    }
    int rc = tdm_cpu_engine_create(cfg->threads, &e->cpu);
    if (rc != TDM_OK) {
        if (why) snprintf(why, whylen, "CPU engine: %s", tdm_strerror(rc));
        tdm_engine_destroy(e);
        return rc;
    }
    snprintf(e->detail, sizeof e->detail, "CPU engine, %d threads; no GPU engine in this build",
             tdm_cpu_engine_threads(e->cpu));
    *out = e;
    return TDM_OK;
}

void tdm_engine_destroy(tdm_engine *e)
{
    if (!e) return;
    tdm_cpu_engine_destroy(e->cpu);
    free(e->tasks);
    free(e->res);
    free(e->refs);
    free(e->sums);
    free(e->room);
    free(e->hits);
    free(e->pairs);
    pthread_mutex_destroy(&e->run_lock);
    pthread_mutex_destroy(&e->stats_lock);
    free(e);
}

tdm_engine_kind tdm_engine_kind_of(const tdm_engine *e) { return e->kind; }

int tdm_engine_mesh_add(tdm_engine *e, const tdm_bvh *bvh)
{
    (void)e; (void)bvh;
    return TDM_OK;
}

void tdm_engine_mesh_remove(tdm_engine *e, const tdm_bvh *bvh) { (void)e; (void)bvh; }
const char *tdm_engine_detail(const tdm_engine *e) { return e->detail; }

void tdm_engine_get_stats(tdm_engine *e, tdm_engine_stats *s)
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

static int reserve_tasks(tdm_engine *e, size_t n)
{
    size_t c1 = e->tasks_cap, c2 = e->tasks_cap, c3 = e->tasks_cap;
    if (reserve((void **)&e->tasks, &c1, n, sizeof *e->tasks) || reserve((void **)&e->res, &c2, n, sizeof *e->res) ||
        reserve((void **)&e->refs, &c3, n, sizeof *e->refs)) {
        /* keep the three arrays' common capacity honest after a partial failure */
        e->tasks_cap = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
        return TDM_ENOMEM;
    }
    e->tasks_cap = c1;
    return TDM_OK;
}

/* The task of query q's checked pair k: B placed in A's frame from both world poses. */
static void make_task(const tdm_query *q, uint32_t k, tdm_task *t, uint32_t max_pairs, tdm_pair *pairs)
{
    const tdm_scene *s = q->scene;
    const tdm_scene_check *c = &s->checks[k];
    const tdm_scene_object *a = &s->objects[c->a], *b = &s->objects[c->b];
    const tdm_xform *xa = a->movable ? &q->poses[s->slot[c->a]] : &a->pose;
    const tdm_xform *xb = b->movable ? &q->poses[s->slot[c->b]] : &b->pose;
    t->a = a->bvh;
    t->b = b->bvh;
    t->b_in_a = tdm_xform_rel(xa, xb);
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

/* First pass over the whole batch, in chunks. */
static int count_pass(tdm_engine *e, const tdm_query *queries, size_t n, tdm_query_result *results,
                      uint64_t *box, uint64_t *tri, uint64_t *n_tasks)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += queries[i].scene->n_checks;
    size_t cap = total < e->chunk ? (size_t)total : e->chunk;
    if (cap == 0) return TDM_OK;
    if (reserve_tasks(e, cap) != TDM_OK) return TDM_ENOMEM;
    size_t q = 0;
    uint32_t k = 0;
    while (q < n) {
        size_t nt = 0;
        while (nt < cap && q < n) {
            const tdm_query *Q = &queries[q];
            /* bool mode: a query answered in an earlier chunk needs no more tasks */
            if (k >= Q->scene->n_checks || (Q->mode == TDM_MODE_BOOL && results[q].colliding)) {
                q++;
                k = 0;
                continue;
            }
            uint32_t max_pairs = Q->mode == TDM_MODE_CONTACTS ? Q->max_contacts : 1;
            make_task(Q, k, &e->tasks[nt], max_pairs, NULL);
            e->refs[nt] = (task_ref){(uint32_t)q, k};
            nt++;
            k++;
        }
        if (nt == 0) break;
        tdm_cpu_engine_run(e->cpu, e->tasks, nt, e->res);
        *n_tasks += nt;
        for (size_t t = 0; t < nt; t++) {
            const tdm_collide_result *r = &e->res[t];
            *box += r->box_tests;
            *tri += r->tri_tests;
            if (!r->colliding) continue;
            uint32_t qi = e->refs[t].query, ki = e->refs[t].check;
            const tdm_query *Q = &queries[qi];
            tdm_query_result *R = &results[qi];
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
            e->sums[qi] += r->n_pairs;
            if (r->truncated) R->truncated = 1;
            if (Q->pairs && r->n_pairs > 0) {
                if (grow_keep((void **)&e->hits, &e->hits_cap, e->n_hits + 1, sizeof *e->hits) != TDM_OK)
                    return TDM_ENOMEM;
                e->hits[e->n_hits++] = (hit){qi, ki, r->n_pairs, 0};
            }
        }
    }
    return TDM_OK;
}

/* Second pass: re-run the hits with exact room and expand their pairs. */
static int pairs_pass(tdm_engine *e, const tdm_query *queries, tdm_query_result *results, uint64_t *n_tasks)
{
    size_t total = 0;
    for (size_t h = 0; h < e->n_hits; h++) {
        hit *x = &e->hits[h];
        uint32_t room = x->n_pairs < e->room[x->query] ? x->n_pairs : e->room[x->query];
        e->room[x->query] -= room;
        x->room = room;
        total += room;
    }
    if (reserve((void **)&e->pairs, &e->pairs_cap, total ? total : 1, sizeof *e->pairs) != TDM_OK) return TDM_ENOMEM;
    size_t cap = e->n_hits < e->chunk ? e->n_hits : e->chunk;
    if (reserve_tasks(e, cap) != TDM_OK) return TDM_ENOMEM;
    size_t h = 0, off = 0;
    while (h < e->n_hits) {
        size_t nt = 0, first = h, first_off = off;
        for (; h < e->n_hits && nt < cap; h++) {
            const hit *x = &e->hits[h];
            if (x->room == 0) continue;
            make_task(&queries[x->query], x->check, &e->tasks[nt], x->room, &e->pairs[off]);
            e->refs[nt] = (task_ref){x->query, x->check};
            off += x->room;
            nt++;
        }
        if (nt > 0) tdm_cpu_engine_run(e->cpu, e->tasks, nt, e->res);
        *n_tasks += nt;
        /* expand in the same order the tasks were made */
        size_t t = 0, o = first_off;
        for (size_t g = first; g < h; g++) {
            const hit *x = &e->hits[g];
            if (x->room == 0) continue;
            const tdm_query *Q = &queries[x->query];
            const tdm_scene *s = Q->scene;
            const tdm_scene_check *c = &s->checks[x->check];
            uint32_t id_lo = s->objects[c->lo].id, id_hi = s->objects[c->hi].id;
            int swapped = c->a != c->lo;
            tdm_query_result *R = &results[x->query];
            uint32_t got = e->res[t].n_pairs < x->room ? e->res[t].n_pairs : x->room;
            for (uint32_t i = 0; i < got; i++) {
                tdm_pair p = e->pairs[o + i];
                Q->pairs[R->n_pairs++] = (tdm_contact){id_lo, swapped ? p.b_tri : p.a_tri, id_hi,
                                                       swapped ? p.a_tri : p.b_tri};
            }
            o += x->room;
            t++;
        }
    }
    return TDM_OK;
}

int tdm_engine_run(tdm_engine *e, const tdm_query *queries, size_t n, tdm_query_result *results)
{
    for (size_t i = 0; i < n; i++) {
        const tdm_query *q = &queries[i];
        if (!q->scene || (!q->poses && q->scene->n_movable > 0) ||
            (q->mode != TDM_MODE_BOOL && q->mode != TDM_MODE_CONTACTS) ||
            (q->mode == TDM_MODE_CONTACTS && q->max_contacts == 0))
            return TDM_EINVAL;
    }
    if (n > UINT32_MAX) return TDM_EINVAL;
    pthread_mutex_lock(&e->run_lock);
    double t0 = now_s();
    int rc = TDM_OK;
    size_t qcap = e->queries_cap, qcap2 = e->queries_cap;
    if (reserve((void **)&e->sums, &qcap, n, sizeof *e->sums) != TDM_OK ||
        reserve((void **)&e->room, &qcap2, n, sizeof *e->room) != TDM_OK) {
        e->queries_cap = qcap < qcap2 ? qcap : qcap2;
        rc = TDM_ENOMEM;
        goto out;
    }
    e->queries_cap = qcap;
    memset(results, 0, n * sizeof *results);
    e->n_hits = 0;
    for (size_t i = 0; i < n; i++) {
        e->sums[i] = 0;
        e->room[i] = queries[i].mode == TDM_MODE_CONTACTS && queries[i].pairs ? queries[i].max_contacts : 0;
    }
    uint64_t box = 0, tri = 0, n_tasks = 0;
    rc = count_pass(e, queries, n, results, &box, &tri, &n_tasks);
    if (rc == TDM_OK && e->n_hits > 0) rc = pairs_pass(e, queries, results, &n_tasks);
    if (rc != TDM_OK) goto out;
    for (size_t i = 0; i < n; i++) {
        if (queries[i].mode != TDM_MODE_CONTACTS) continue;
        if (e->sums[i] > queries[i].max_contacts) {
            results[i].contacts = queries[i].max_contacts;
            results[i].truncated = 1;
        } else {
            results[i].contacts = (uint32_t)e->sums[i];
        }
    }
    double dt = now_s() - t0;
    pthread_mutex_lock(&e->stats_lock);
    e->stats.runs++;
    e->stats.queries += n;
    e->stats.cpu_queries += n;
    e->stats.tasks += n_tasks;
    e->stats.box_tests += box;
    e->stats.tri_tests += tri;
    e->stats.seconds += dt;
    pthread_mutex_unlock(&e->stats_lock);
out:
    pthread_mutex_unlock(&e->run_lock);
    return rc;
}
