/* workpile/pooler.h: query jobs pooled into engine runs (CPU engine).
 *
 *  - jobs submitted from several threads are each finished exactly once, with
 *    the answers a direct tdm_sched_run of the job's queries gives;
 *  - jobs queued while a batch runs are pooled into the next batch, and the
 *    stats count batches, jobs, queries and tasks;
 *  - no batch goes over max_batch_tasks or max_batch_pairs, except a single job
 *    over a cap, which runs alone; batches are taken first come first served;
 *  - stopping runs and finishes what is queued, and refuses later submissions;
 *  - an engine error (contacts mode with max_contacts 0: TDM_EINVAL) reaches the
 *    rc of every job of its batch, and the pooler goes on.
 *
 * To make batches deterministic, the tests that need them run one pooler thread
 * (an engine of one lane) and hold it inside the first job's `finished` while
 * they queue the rest: that job's batch is over, the next one has not started. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "geom/bvh.h"
#include "workpile/pooler.h"
#include "workpile/sched.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x9001e5ull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(pooler, .init = suite_init);

/* ---- scenes and jobs ---- */

enum { N_TREES = 5, N_SCENES = 3, MAX_JOB_QUERIES = 40, MAX_PAIRS = 6 };

typedef struct world {
    tdm_bvh *bvh[N_TREES];
    tdm_scene *scene[N_SCENES];
} world;

static tdm_bvh *tree(tdm_mesh *m)
{
    cr_assert(m, "generating a mesh");
    tdm_bvh *b = NULL;
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    tdm_mesh_free(m);
    return b;
}

static tdm_scene *scene(const tdm_scene_obj *objs, uint32_t n, const tdm_id_pair *allowed, uint32_t n_allowed)
{
    tdm_scene *s = NULL;
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create(objs, n, allowed, n_allowed, &s, &err), TDM_OK, "%s", err.msg);
    return s;
}

/* Scene 0: two fixed objects and three movable ones, one movable pair allowed
 * (8 checked pairs). Scene 1: a sphere against a torus (1). Scene 2: one
 * movable box alone (no checked pair: weighed by its queries). */
static void world_make(world *w, gen_rng *r)
{
    w->bvh[0] = tree(gen_torus(1.5, 0.5, 32, 16));
    w->bvh[1] = tree(gen_pile(r, 60, 0.8, 0.25));
    w->bvh[2] = tree(gen_sphere(0.5, 16));
    w->bvh[3] = tree(gen_box(0.3, 0.2, 0.6));
    w->bvh[4] = tree(gen_torus(0.5, 0.15, 24, 12));
    tdm_scene_obj s0[5] = {
        {10, w->bvh[0], 0, tdm_xform_identity()},
        {20, w->bvh[1], 0, tdm_xform_from_pose(tdm_d3(2.5, 0, 0), gen_rotation(r))},
        {30, w->bvh[2], 1, tdm_xform_identity()},
        {40, w->bvh[3], 1, tdm_xform_identity()},
        {50, w->bvh[4], 1, tdm_xform_identity()},
    };
    tdm_id_pair allowed[1] = {{40, 30}};
    w->scene[0] = scene(s0, 5, allowed, 1);
    tdm_scene_obj s1[2] = {{1, w->bvh[0], 0, tdm_xform_identity()}, {2, w->bvh[2], 1, tdm_xform_identity()}};
    w->scene[1] = scene(s1, 2, NULL, 0);
    tdm_scene_obj s2[1] = {{7, w->bvh[3], 1, tdm_xform_identity()}};
    w->scene[2] = scene(s2, 1, NULL, 0);
    cr_assert_eq(w->scene[0]->n_checks, 8);
    cr_assert_eq(w->scene[1]->n_checks, 1);
    cr_assert_eq(w->scene[2]->n_checks, 0);
}

static void world_free(world *w)
{
    for (int i = 0; i < N_SCENES; i++) tdm_scene_destroy(w->scene[i]);
    for (int i = 0; i < N_TREES; i++) tdm_bvh_free(w->bvh[i]);
}

/* A pooler job and what the test knows of it. */
typedef struct job {
    tdm_pooler_job pj;
    int index;
    atomic_int finished;     /* `finished` calls seen */
    int rc;                  /* job->rc as `finished` saw it */
    tdm_xform *poses;
    tdm_sched_result *want;  /* a direct tdm_sched_run's answers */
    tdm_sched_contact *want_pairs;
    int want_rc;
} job;

static job *job_of(tdm_pooler_job *pj) { return (job *)(void *)((char *)pj - offsetof(job, pj)); }

/* kind 0: bool; 1: contacts, counts only; 2: contacts with at most MAX_PAIRS
 * pairs listed; 3: contacts with max_contacts 0 (the engine refuses it). */
static void job_make(job *j, int index, const tdm_scene *s, uint32_t n_queries, int kind, gen_rng *r)
{
    memset(j, 0, sizeof *j);
    j->index = index;
    uint32_t m = s->n_movable;
    j->poses = malloc(sizeof *j->poses * n_queries * m);
    j->pj.results = malloc(sizeof *j->pj.results * n_queries);
    j->want = calloc(n_queries, sizeof *j->want);
    cr_assert(j->poses && j->pj.results && j->want);
    for (size_t i = 0; i < (size_t)n_queries * m; i++) {
        gen_pose p = gen_pose_in_ball(r, tdm_d3(1, 0, 0), 2.5);
        j->poses[i] = tdm_xform_from_pose(p.t, p.q);
    }
    j->pj.scene = s;
    j->pj.mode = kind ? TDM_MODE_CONTACTS : TDM_MODE_BOOL;
    j->pj.max_contacts = kind == 3 ? 0 : kind == 2 ? MAX_PAIRS : kind == 1 ? 1000000 : 1;
    j->pj.n_queries = n_queries;
    j->pj.n_tasks = (uint64_t)n_queries * s->n_checks;
    j->pj.poses = j->poses;
    if (kind == 2) {
        j->pj.pairs = malloc(sizeof *j->pj.pairs * n_queries * MAX_PAIRS);
        j->want_pairs = malloc(sizeof *j->want_pairs * n_queries * MAX_PAIRS);
        cr_assert(j->pj.pairs && j->want_pairs);
        j->pj.pairs_reserved = (uint64_t)n_queries * MAX_PAIRS;
    }
}

/* The answers of the job's queries run directly, alone. */
static void job_reference(job *j, tdm_sched *e)
{
    const tdm_pooler_job *p = &j->pj;
    uint32_t m = p->scene->n_movable;
    tdm_sched_query *q = malloc(sizeof *q * p->n_queries);
    cr_assert(q);
    for (uint32_t i = 0; i < p->n_queries; i++)
        q[i] = (tdm_sched_query){p->scene, p->poses + (size_t)i * m, p->mode, p->max_contacts,
                                 j->want_pairs ? j->want_pairs + (size_t)i * MAX_PAIRS : NULL, NULL};
    j->want_rc = tdm_sched_run(e, q, p->n_queries, j->want);
    free(q);
}

static void job_free(job *j)
{
    free(j->poses);
    free(j->pj.results);
    free(j->pj.pairs);
    free(j->want);
    free(j->want_pairs);
}

/* Finished once, with the direct run's rc and answers. Main thread. */
static void job_check(const job *j)
{
    cr_assert_eq(atomic_load(&j->finished), 1, "job %d: finished %d times", j->index, atomic_load(&j->finished));
    cr_assert_eq(j->rc, j->want_rc, "job %d: rc %d, a direct run gives %d", j->index, j->rc, j->want_rc);
    if (j->rc != TDM_OK) return;
    for (uint32_t i = 0; i < j->pj.n_queries; i++) {
        const tdm_sched_result *g = &j->pj.results[i], *x = &j->want[i];
        cr_assert_eq(g->colliding, x->colliding, "job %d, query %u: colliding", j->index, i);
        cr_assert_eq(g->contacts, x->contacts, "job %d, query %u: contacts", j->index, i);
        cr_assert_eq(g->truncated, x->truncated, "job %d, query %u: truncated", j->index, i);
        cr_assert_eq(g->n_pairs, x->n_pairs, "job %d, query %u: n_pairs", j->index, i);
        if (g->colliding)
            cr_assert(g->object_a == x->object_a && g->object_b == x->object_b,
                      "job %d, query %u: colliding pair (%u, %u), want (%u, %u)", j->index, i, g->object_a,
                      g->object_b, x->object_a, x->object_b);
        if (j->want_pairs)
            cr_assert(memcmp(j->pj.pairs + (size_t)i * MAX_PAIRS, j->want_pairs + (size_t)i * MAX_PAIRS,
                             g->n_pairs * sizeof(tdm_sched_contact)) == 0,
                      "job %d, query %u: listed pairs differ", j->index, i);
    }
}

static tdm_sched *cpu_engine(int lanes)
{
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = TDM_BACKEND_CPU;
    c.threads = 2;
    c.lanes = lanes;
    c.calibrate = 0;
    tdm_sched *e = NULL;
    char why[256];
    cr_assert_eq(tdm_sched_create(&c, &e, why, sizeof why), TDM_OK, "%s", why);
    cr_assert_eq(tdm_sched_lanes(e), lanes);
    return e;
}

/* ---- the callbacks' side: a record of batches, and a gate that holds a job's `finished` ---- */

enum { MAX_BATCHES = 512 };

typedef struct probe {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    tdm_pooler_batch batch[MAX_BATCHES];
    int first_job[MAX_BATCHES]; /* index of the batch's first job, from the `finished` that follows */
    int n_batches;
    int expect_first;           /* the next `finished` is its batch's first */
    int finished;               /* `finished` calls */
    job *hold;                  /* `finished` of this job waits for `open` */
    int holding, open;
} probe;

static void probe_init(probe *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->cond, NULL);
}

static void probe_fini(probe *p)
{
    pthread_cond_destroy(&p->cond);
    pthread_mutex_destroy(&p->lock);
}

static void on_ran(const tdm_pooler_batch *b, void *data)
{
    probe *p = data;
    pthread_mutex_lock(&p->lock);
    if (p->n_batches < MAX_BATCHES) p->batch[p->n_batches] = *b;
    p->n_batches++;
    p->expect_first = 1;
    pthread_mutex_unlock(&p->lock);
}

static void on_finished(tdm_pooler_job *pj, void *data)
{
    probe *p = data;
    job *j = job_of(pj);
    j->rc = pj->rc;
    atomic_fetch_add(&j->finished, 1);
    pthread_mutex_lock(&p->lock);
    if (p->expect_first && p->n_batches <= MAX_BATCHES) p->first_job[p->n_batches - 1] = j->index;
    p->expect_first = 0;
    p->finished++;
    if (j == p->hold) {
        p->holding = 1;
        pthread_cond_broadcast(&p->cond);
        while (!p->open) pthread_cond_wait(&p->cond, &p->lock);
    }
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

/* Waits until the held job's `finished` is waiting. */
static void probe_wait_holding(probe *p)
{
    pthread_mutex_lock(&p->lock);
    while (!p->holding) pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

static void probe_open(probe *p)
{
    pthread_mutex_lock(&p->lock);
    p->open = 1;
    pthread_cond_broadcast(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

static void probe_wait_finished(probe *p, int n)
{
    pthread_mutex_lock(&p->lock);
    while (p->finished < n) pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

/* ---- tests ---- */

enum { SUBMITTERS = 4, JOBS_EACH = 30 };

typedef struct submitter {
    tdm_pooler *pooler;
    job *jobs;
    int n;
    int refused;
} submitter;

static void *submit_main(void *arg)
{
    submitter *s = arg;
    for (int i = 0; i < s->n; i++)
        if (tdm_pooler_submit(s->pooler, &s->jobs[i].pj) != TDM_OK) s->refused++;
    return NULL;
}

/* owners: 0, the jobs have none (the pooler's defaults); else each job one of that many owners,
 * no latency lane and a cap of 64 tasks, so that most jobs run in slices that go back to their
 * owners' queues, and batches are joined from several owners, on three lanes at once. */
static void several_threads(int owners)
{
    gen_rng r = {seed ^ (uint64_t)owners};
    tdm_pooler_owner own[16];
    memset(own, 0, sizeof own);
    cr_assert(owners <= 16);
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(3);
    enum { N = SUBMITTERS * JOBS_EACH };
    job *jobs = malloc(sizeof *jobs * N);
    cr_assert(jobs);
    uint64_t queries = 0, tasks = 0;
    for (int i = 0; i < N; i++) {
        job_make(&jobs[i], i, w.scene[gen_int(&r, 0, N_SCENES - 1)], (uint32_t)gen_int(&r, 1, MAX_JOB_QUERIES),
                 (int)gen_int(&r, 0, 2), &r);
        job_reference(&jobs[i], e);
        cr_assert_eq(jobs[i].want_rc, TDM_OK);
        if (owners) jobs[i].pj.owner = &own[gen_int(&r, 0, owners - 1)];
        queries += jobs[i].pj.n_queries;
        tasks += jobs[i].pj.n_tasks;
    }
    probe p;
    probe_init(&p);
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, owners ? 64 : 1u << 20, 1u << 20, on_finished, on_ran, &p, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_threads(pl), 3);
    if (owners) {
        tdm_pooler_fairness f = {0, 0, 0};
        tdm_pooler_set_fairness(pl, &f);
    }

    pthread_t th[SUBMITTERS];
    submitter sub[SUBMITTERS];
    for (int k = 0; k < SUBMITTERS; k++) {
        sub[k] = (submitter){pl, jobs + k * JOBS_EACH, JOBS_EACH, 0};
        cr_assert_eq(pthread_create(&th[k], NULL, submit_main, &sub[k]), 0);
    }
    for (int k = 0; k < SUBMITTERS; k++) pthread_join(th[k], NULL);
    for (int k = 0; k < SUBMITTERS; k++) cr_assert_eq(sub[k].refused, 0);
    probe_wait_finished(&p, N);
    tdm_pooler_stop(pl);
    cr_assert_eq(tdm_pooler_pending(pl), 0);

    for (int i = 0; i < N; i++) job_check(&jobs[i]);
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    cr_assert(owners ? st.jobs >= (uint64_t)N : st.jobs == (uint64_t)N, "%llu job turns", (unsigned long long)st.jobs);
    cr_assert_eq(st.queries, queries);
    cr_assert_eq(st.tasks, tasks);
    cr_assert_eq(st.batches, (uint64_t)p.n_batches, "stats say %llu batches, the hook saw %d",
                 (unsigned long long)st.batches, p.n_batches);
    cr_assert(st.batches >= 1 && (owners || st.batches <= (uint64_t)N));
    for (int k = 0; k < owners; k++)
        cr_assert(own[k].head == NULL && own[k].tail == NULL && own[k].heap_at == 0, "owner %d still queued", k);
    size_t jobs_seen = 0;
    for (int b = 0; b < p.n_batches && b < MAX_BATCHES; b++) {
        cr_assert_eq(p.batch[b].rc, TDM_OK);
        cr_assert(p.batch[b].thread >= 0 && p.batch[b].thread < 3);
        cr_assert(!owners || p.batch[b].weight <= 64 || p.batch[b].jobs == 1, "batch %d: %zu jobs weighing %llu", b,
                  p.batch[b].jobs, (unsigned long long)p.batch[b].weight);
        jobs_seen += p.batch[b].jobs;
    }
    if (!owners) cr_assert_eq(jobs_seen, (size_t)N); /* with slices a job is in several */
    cr_log_info("%d jobs from %d threads, %d owners, in %llu batches", N, SUBMITTERS, owners,
                (unsigned long long)st.batches);

    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < N; i++) job_free(&jobs[i]);
    free(jobs);
    tdm_sched_destroy(e);
    world_free(&w);
}

Test(pooler, jobs_from_several_threads_get_their_direct_answers, .timeout = 240) { several_threads(0); }

/* The same with shares: ten owners' jobs, sliced and joined across owners on three lanes. */
Test(pooler, owners_jobs_from_several_threads_get_their_direct_answers, .timeout = 240) { several_threads(10); }

Test(pooler, jobs_queued_while_a_batch_runs_are_pooled, .timeout = 120)
{
    gen_rng r = {seed ^ 1};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    enum { N = 25 };
    job jobs[N];
    uint64_t queries = 0, tasks = 0;
    for (int i = 0; i < N; i++) {
        job_make(&jobs[i], i, w.scene[i % N_SCENES], (uint32_t)(1 + i % 7), i % 3, &r);
        job_reference(&jobs[i], e);
        queries += jobs[i].pj.n_queries;
        tasks += jobs[i].pj.n_tasks;
    }
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, on_finished, on_ran, &p, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_threads(pl), 1);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p); /* job 0's batch ran; the only pooler thread is held */
    for (int i = 1; i < N; i++) cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
    cr_assert_eq(tdm_pooler_pending(pl), (size_t)N, "job 0 counts until its `finished` returns");
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    cr_assert_eq(st.batches, 1, "a batch is counted before its jobs are finished");
    cr_assert_eq(st.jobs, 1);
    probe_open(&p);
    probe_wait_finished(&p, N);
    tdm_pooler_stop(pl);

    for (int i = 0; i < N; i++) job_check(&jobs[i]);
    tdm_pooler_get_stats(pl, &st);
    cr_assert_eq(st.batches, 2, "%llu batches: the %d jobs queued meanwhile should make one",
                 (unsigned long long)st.batches, N - 1);
    cr_assert_eq(st.jobs, (uint64_t)N);
    cr_assert_eq(st.queries, queries);
    cr_assert_eq(st.tasks, tasks);
    cr_assert_eq(p.n_batches, 2);
    cr_assert_eq(p.batch[0].jobs, 1);
    cr_assert_eq(p.batch[1].jobs, (size_t)(N - 1));
    cr_assert_eq(p.batch[1].queries, queries - jobs[0].pj.n_queries);
    cr_assert_eq(p.first_job[1], 1, "first come, first served");

    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < N; i++) job_free(&jobs[i]);
    tdm_sched_destroy(e);
    world_free(&w);
}

/* Cancellation (issue 14): jobs cancelled while queued are finished unrun with
 * TDM_ECANCELED, counted apart, and never enter a batch; the others run as before,
 * right; a job cancelled during its run is finished normally. */
Test(pooler, cancelled_queued_jobs_are_dropped_unrun, .timeout = 120)
{
    gen_rng r = {seed ^ 0xca9c};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    enum { N = 20 };
    job jobs[N];
    uint64_t run_queries = 0;
    for (int i = 0; i < N; i++) {
        job_make(&jobs[i], i, w.scene[i % N_SCENES], (uint32_t)(1 + i % 5), i % 3, &r);
        job_reference(&jobs[i], e);
        if (i == 0 || i % 3 != 1) run_queries += jobs[i].pj.n_queries;
    }
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, on_finished, on_ran, &p, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p); /* job 0 ran; the only thread is held in its `finished` */
    tdm_pooler_job_cancel(&jobs[0].pj); /* too late: it ran, and is answered */
    for (int i = 1; i < N; i++) cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
    int cancelled = 0;
    for (int i = 1; i < N; i++)
        if (i % 3 == 1) { /* 1, 4, 7, ...: the first of the queue among them */
            tdm_pooler_job_cancel(&jobs[i].pj);
            cancelled++;
        }
    probe_open(&p);
    probe_wait_finished(&p, N);
    tdm_pooler_stop(pl);
    for (int i = 0; i < N; i++) {
        if (i > 0 && i % 3 == 1) {
            cr_assert_eq(atomic_load(&jobs[i].finished), 1, "cancelled job %d: finished %d times", i,
                         atomic_load(&jobs[i].finished));
            cr_assert_eq(jobs[i].rc, TDM_ECANCELED, "cancelled job %d: rc %d", i, jobs[i].rc);
        } else {
            job_check(&jobs[i]);
        }
    }
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    cr_assert_eq(st.cancelled, (uint64_t)cancelled);
    cr_assert_eq(st.jobs, (uint64_t)(N - cancelled), "cancelled jobs must not be run");
    cr_assert_eq(st.queries, run_queries);
    cr_assert_eq(tdm_pooler_pending(pl), 0);
    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < N; i++) job_free(&jobs[i]);
    tdm_sched_destroy(e);
    world_free(&w);
}

static uint64_t weight_of(const tdm_pooler_job *j) { return j->n_tasks > j->n_queries ? j->n_tasks : j->n_queries; }

Test(pooler, batches_stay_within_the_caps, .timeout = 120)
{
    gen_rng r = {seed ^ 2};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    /* weights: scene 0 is 8 tasks a query, scene 1 one, scene 2 one (by its queries) */
    const uint64_t max_tasks = 100, max_pairs = 3 * MAX_PAIRS * 4; /* 72 pairs: 12 queries listing pairs */
    enum { N = 40 };
    job jobs[N];
    for (int i = 0; i < N; i++) {
        int s = (int)gen_int(&r, 0, N_SCENES - 1), kind = (int)gen_int(&r, 0, 2);
        uint32_t n = (uint32_t)gen_int(&r, 1, s == 0 ? 8 : kind == 2 ? 12 : 30); /* within both caps */
        if (i == 11) s = 0, n = 20, kind = 0;   /* 160 tasks: over the task cap */
        if (i == 23) s = 1, n = 15, kind = 2;   /* 90 pairs: over the pair cap */
        if (i == 24) s = 2, n = 101, kind = 0;  /* no checked pair, 101 queries: over the task cap */
        job_make(&jobs[i], i, w.scene[s], n, kind, &r);
        job_reference(&jobs[i], e);
    }
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, max_tasks, max_pairs, on_finished, on_ran, &p, &pl), TDM_OK);
    tdm_pooler_fairness whole = {UINT64_MAX, 0, 0}; /* the caps alone: no slices (tested below) */
    tdm_pooler_set_fairness(pl, &whole);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p);
    for (int i = 1; i < N; i++) cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
    probe_open(&p);
    probe_wait_finished(&p, N);
    tdm_pooler_stop(pl);
    for (int i = 0; i < N; i++) job_check(&jobs[i]);

    /* the batches, in order, are the greedy first-come-first-served cut of jobs 1..N-1 */
    cr_assert(p.n_batches <= MAX_BATCHES);
    cr_assert_eq(p.batch[0].jobs, 1);
    int next = 1, oversize_alone = 0;
    for (int b = 1; b < p.n_batches; b++) {
        const tdm_pooler_batch *x = &p.batch[b];
        cr_assert_eq(p.first_job[b], next, "batch %d starts with job %d, expected %d", b, p.first_job[b], next);
        uint64_t wsum = 0, psum = 0, tsum = 0;
        size_t q = 0;
        int k = next;
        for (size_t n = 0; n < x->jobs; n++, k++) {
            wsum += weight_of(&jobs[k].pj);
            psum += jobs[k].pj.pairs_reserved;
            tsum += jobs[k].pj.n_tasks;
            q += jobs[k].pj.n_queries;
        }
        cr_assert_eq(x->weight, wsum, "batch %d: weight", b);
        cr_assert_eq(x->pairs, psum, "batch %d: pairs", b);
        cr_assert_eq(x->tasks, tsum, "batch %d: tasks", b);
        cr_assert_eq(x->queries, q, "batch %d: queries", b);
        if (x->jobs > 1) {
            cr_assert(wsum <= max_tasks, "batch %d of %zu jobs weighs %llu, over the cap %llu", b, x->jobs,
                      (unsigned long long)wsum, (unsigned long long)max_tasks);
            cr_assert(psum <= max_pairs, "batch %d of %zu jobs reserves %llu pairs, over the cap %llu", b, x->jobs,
                      (unsigned long long)psum, (unsigned long long)max_pairs);
        } else if (wsum > max_tasks || psum > max_pairs) {
            oversize_alone++;
        }
        /* greedy: the next job would not have fitted */
        if (k < N)
            cr_assert(wsum + weight_of(&jobs[k].pj) > max_tasks || psum + jobs[k].pj.pairs_reserved > max_pairs,
                      "batch %d stopped before job %d, which fitted", b, k);
        next = k;
    }
    cr_assert_eq(next, N, "the batches hold jobs 1..%d", next - 1);
    cr_assert_eq(oversize_alone, 3, "jobs 11, 23 and 24 are over a cap and run alone (%d did)", oversize_alone);
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    cr_assert_eq(st.batches, (uint64_t)p.n_batches);
    cr_assert(st.batches < N, "%llu batches for %d jobs", (unsigned long long)st.batches, N);

    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < N; i++) job_free(&jobs[i]);
    tdm_sched_destroy(e);
    world_free(&w);
}

/* ---- fairness, budgets, cancellation (issue 14) ---- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The order of `finished` calls, by job index. */
static int finish_order[64], n_finish_order;
static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_finished_ordered(tdm_pooler_job *pj, void *data)
{
    pthread_mutex_lock(&order_lock);
    if (n_finish_order < 64) finish_order[n_finish_order++] = job_of(pj)->index;
    pthread_mutex_unlock(&order_lock);
    on_finished(pj, data);
}

static int finish_rank(int index)
{
    for (int i = 0; i < n_finish_order; i++)
        if (finish_order[i] == index) return i;
    return -1;
}

/* A heavy scene: two identical dense spheres, one movable, at identity: in
 * contacts mode every triangle meets its neighbours, so one query costs
 * hundreds of thousands of tests while weighing one task. */
static tdm_scene *heavy_scene(tdm_bvh **t)
{
    *t = tree(gen_sphere(1.0, 96));
    tdm_scene_obj o[2] = {{1, *t, 0, tdm_xform_identity()}, {2, *t, 1, tdm_xform_identity()}};
    return scene(o, 2, NULL, 0);
}

static void heavy_job(job *j, int index, const tdm_scene *s, uint32_t n)
{
    memset(j, 0, sizeof *j);
    j->index = index;
    j->poses = malloc(sizeof *j->poses * n);
    j->pj.results = malloc(sizeof *j->pj.results * n);
    j->want = calloc(n, sizeof *j->want);
    cr_assert(j->poses && j->pj.results && j->want);
    for (uint32_t i = 0; i < n; i++) j->poses[i] = tdm_xform_from_pose(tdm_d3(1e-4 * i, 0, 0), (tdm_quat){0, 0, 0, 1});
    j->pj.scene = s;
    j->pj.mode = TDM_MODE_CONTACTS;
    j->pj.max_contacts = 1000000;
    j->pj.n_queries = n;
    j->pj.n_tasks = n;
    j->pj.poses = j->poses;
}

/* A job of more tasks than the slice runs a slice at a time and goes to the
 * back of the queue: a small job submitted after it finishes first, and the
 * large job's answers are those of a direct run. */
Test(pooler, a_large_job_runs_in_slices_taking_turns, .timeout = 120)
{
    gen_rng r = {seed ^ 7};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    job jobs[3];
    job_make(&jobs[0], 0, w.scene[1], 1, 0, &r);    /* held: keeps the thread while the others queue */
    job_make(&jobs[1], 1, w.scene[0], 200, 0, &r);  /* 1600 tasks: 17 slices of 12 queries */
    job_make(&jobs[2], 2, w.scene[0], 5, 1, &r);    /* small, queued after it */
    for (int i = 0; i < 3; i++) job_reference(&jobs[i], e);
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    n_finish_order = 0;
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 100, 1000, on_finished_ordered, on_ran, &p, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[1].pj), TDM_OK);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[2].pj), TDM_OK);
    probe_open(&p);
    probe_wait_finished(&p, 3);
    tdm_pooler_stop(pl);
    for (int i = 0; i < 3; i++) job_check(&jobs[i]);
    cr_assert(finish_rank(2) < finish_rank(1), "the small job finished after the large one (ranks %d, %d)",
              finish_rank(2), finish_rank(1));
    int slices = 0;
    for (int b = 0; b < p.n_batches && b < MAX_BATCHES; b++) {
        cr_assert(p.batch[b].tasks <= 100, "batch %d has %llu tasks, over the slice", b,
                  (unsigned long long)p.batch[b].tasks);
        slices += p.batch[b].queries == 12 || p.batch[b].queries == 200 % 12;
    }
    cr_assert_eq(slices, 17, "the large job ran in %d slices, expected 17", slices);
    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < 3; i++) job_free(&jobs[i]);
    tdm_sched_destroy(e);
    world_free(&w);
}

/* Shares (tdm_pooler_set_share): owner A's eight jobs, B's three and C's one, queued in that
 * order behind a held job, each a batch of its own (two do not fit the cap). With shares the
 * owners take turns by tag: C's lone job waits for one job of A and one of B, not for all
 * eleven, and B's for as many of A's as came before them; without, first come, first served. */
Test(pooler, owners_take_turns, .timeout = 120)
{
    gen_rng r = {seed ^ 11};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    enum { N = 13 };
    /* by rank: job 0 (held), then A's 1-8, B's 9-11 and C's 12 taken in turn, then A's rest */
    static const int shared[N] = {0, 1, 9, 12, 2, 10, 3, 11, 4, 5, 6, 7, 8};
    for (int share = 1; share >= 0; share--) {
        job jobs[N];
        tdm_pooler_owner owner[3];
        memset(owner, 0, sizeof owner);
        job_make(&jobs[0], 0, w.scene[1], 1, 0, &r);
        for (int i = 1; i < N; i++) {
            job_make(&jobs[i], i, w.scene[0], 10, i % 2, &r); /* 80 tasks each */
            jobs[i].pj.owner = &owner[i <= 8 ? 0 : i <= 11 ? 1 : 2];
        }
        for (int i = 0; i < N; i++) job_reference(&jobs[i], e);
        probe p;
        probe_init(&p);
        p.hold = &jobs[0];
        n_finish_order = 0;
        tdm_pooler *pl = NULL;
        cr_assert_eq(tdm_pooler_create(e, 100, 1000, on_finished_ordered, on_ran, &p, &pl), TDM_OK);
        tdm_pooler_fairness f = {0, 0, 0}; /* no small jobs: every job in its owner's queue */
        tdm_pooler_set_fairness(pl, &f);
        tdm_pooler_set_share(pl, share);
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
        probe_wait_holding(&p);
        for (int i = 1; i < N; i++) cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
        probe_open(&p);
        probe_wait_finished(&p, N);
        tdm_pooler_stop(pl);
        for (int i = 0; i < N; i++) job_check(&jobs[i]);
        cr_assert_eq(p.n_batches, N, "every job a batch of its own");
        for (int k = 0; k < N; k++)
            cr_assert_eq(finish_order[k], share ? shared[k] : k, "shares %s: rank %d is job %d, expected %d",
                         share ? "on" : "off", k, finish_order[k], share ? shared[k] : k);
        for (int i = 0; i < 3; i++)
            cr_assert(owner[i].head == NULL && owner[i].heap_at == 0, "owner %d still queued", i);
        tdm_pooler_destroy(pl);
        probe_fini(&p);
        for (int i = 0; i < N; i++) job_free(&jobs[i]);
    }
    tdm_sched_destroy(e);
    world_free(&w);
}

/* A batch starts with the job whose turn it is and is joined, up to the cap, by the heads
 * of the other owners' queues: a hundred owners with one job each (more than the owners'
 * heap first has room for) run in batches of six, one owner's job cancelled while queued is
 * dropped unrun, and every answer is a direct run's. */
Test(pooler, a_batch_joins_other_owners_jobs, .timeout = 120)
{
    gen_rng r = {seed ^ 12};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    enum { N = 101, CANCELLED = 50 };
    job *jobs = calloc(N, sizeof *jobs);
    tdm_pooler_owner *owner = calloc(N, sizeof *owner);
    cr_assert(jobs && owner);
    job_make(&jobs[0], 0, w.scene[1], 1, 0, &r);
    for (int i = 1; i < N; i++) {
        job_make(&jobs[i], i, w.scene[0], 2, 0, &r); /* 16 tasks: six to a batch of 100 */
        jobs[i].pj.owner = &owner[i];
    }
    for (int i = 0; i < N; i++) job_reference(&jobs[i], e);
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 100, 1000, on_finished, on_ran, &p, &pl), TDM_OK);
    tdm_pooler_fairness f = {0, 0, 0};
    tdm_pooler_set_fairness(pl, &f);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p);
    for (int i = 1; i < N; i++) {
        if (i == CANCELLED) tdm_pooler_job_cancel(&jobs[i].pj);
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
    }
    probe_open(&p);
    probe_wait_finished(&p, N);
    tdm_pooler_stop(pl);
    for (int i = 0; i < N; i++) {
        if (i == CANCELLED) {
            cr_assert_eq(jobs[i].rc, TDM_ECANCELED, "the cancelled job: rc %d", jobs[i].rc);
            cr_assert_eq(atomic_load(&jobs[i].finished), 1);
        } else
            job_check(&jobs[i]);
    }
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    cr_assert_eq(st.cancelled, 1);
    cr_assert_eq(st.jobs, (uint64_t)(N - 1));
    cr_assert_eq(p.n_batches, 1 + (N - 2 + 5) / 6, "%d batches: 99 jobs of owners in turn, six a batch",
                 p.n_batches);
    for (int b = 1; b < p.n_batches; b++)
        cr_assert(p.batch[b].jobs == 6 || b == p.n_batches - 1, "batch %d: %zu jobs", b, p.batch[b].jobs);
    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < N; i++) job_free(&jobs[i]);
    free(jobs);
    free(owner);
    tdm_sched_destroy(e);
    world_free(&w);
}

/* Two large jobs take both of the other lanes' threads... of which there is
 * one besides the latency lane; the small job submitted last is run by the
 * latency lane at once and finishes first. Without the lane (second round) it
 * waits behind them. A small but heavy job goes over the lane's budget and is
 * run again elsewhere, with the right answer. */
Test(pooler, the_latency_lane_serves_small_jobs_first, .timeout = 240)
{
    gen_rng r = {seed ^ 8};
    world w;
    world_make(&w, &r);
    tdm_bvh *ht;
    tdm_scene *hs = heavy_scene(&ht);
    tdm_sched *e = cpu_engine(2);
    for (int lane = 1; lane >= 0; lane--) {
        job jobs[5];
        job_make(&jobs[0], 0, w.scene[1], 1, 0, &r); /* held on one thread */
        heavy_job(&jobs[1], 1, hs, 120);             /* large: 120 tasks, over latency_tasks */
        heavy_job(&jobs[2], 2, hs, 120);
        job_make(&jobs[3], 3, w.scene[1], 2, 0, &r); /* small and light */
        heavy_job(&jobs[4], 4, hs, 2);               /* small and heavy: over the lane's budget */
        for (int i = 0; i < 5; i++) job_reference(&jobs[i], e);
        probe p;
        probe_init(&p);
        p.hold = &jobs[0];
        n_finish_order = 0;
        tdm_pooler *pl = NULL;
        cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, on_finished_ordered, on_ran, &p, &pl), TDM_OK);
        tdm_pooler_fairness f = {UINT64_MAX, lane ? 100 : 0, 20000};
        tdm_pooler_set_fairness(pl, &f);
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
        probe_wait_holding(&p); /* one thread (either) is held */
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[1].pj), TDM_OK);
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[2].pj), TDM_OK);
        sleep_ms(20); /* the free thread, if it may, has taken a large job */
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[3].pj), TDM_OK);
        cr_assert_eq(tdm_pooler_submit(pl, &jobs[4].pj), TDM_OK);
        sleep_ms(20);
        probe_open(&p);
        probe_wait_finished(&p, 5);
        tdm_pooler_stop(pl);
        for (int i = 0; i < 5; i++) job_check(&jobs[i]);
        if (lane) {
            /* the held job may have been on the latency lane: it is small too */
            cr_assert(finish_rank(3) < finish_rank(1) && finish_rank(3) < finish_rank(2),
                      "with the lane, the small job finished at %d, the large ones at %d and %d", finish_rank(3),
                      finish_rank(1), finish_rank(2));
        }
        tdm_pooler_destroy(pl);
        probe_fini(&p);
        for (int i = 0; i < 5; i++) job_free(&jobs[i]);
    }
    tdm_sched_destroy(e);
    tdm_scene_destroy(hs);
    tdm_bvh_free(ht);
    world_free(&w);
}

/* max_work: a job over it gets TDM_EBUDGET (its answers are not used), the
 * same job without it its direct answers; a job given up while queued gets
 * TDM_ECANCELED. */
Test(pooler, work_budget_and_cancellation, .timeout = 120)
{
    gen_rng r = {seed ^ 9};
    world w;
    world_make(&w, &r);
    tdm_bvh *ht;
    tdm_scene *hs = heavy_scene(&ht);
    tdm_sched *e = cpu_engine(1);
    job jobs[4];
    job_make(&jobs[0], 0, w.scene[1], 1, 0, &r); /* held */
    heavy_job(&jobs[1], 1, hs, 3);
    heavy_job(&jobs[2], 2, hs, 3);
    job_make(&jobs[3], 3, w.scene[0], 4, 0, &r);
    for (int i = 0; i < 4; i++) job_reference(&jobs[i], e);
    jobs[1].pj.max_work = 50000;
    jobs[1].want_rc = TDM_EBUDGET;
    jobs[2].pj.max_work = 0;
    jobs[3].want_rc = TDM_ECANCELED;
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, on_finished, on_ran, &p, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p);
    for (int i = 1; i < 4; i++) cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
    tdm_pooler_job_cancel(&jobs[3].pj);
    probe_open(&p);
    probe_wait_finished(&p, 4);
    tdm_pooler_stop(pl);
    for (int i = 0; i < 4; i++) job_check(&jobs[i]);
    cr_assert(jobs[1].pj.work.used > 50000 && jobs[1].pj.work.used < 50000 + 3 * (5 * 16384 + TDM_WORK_STEP),
              "the job over its budget counted %llu tests: it should stop within a step of each traversal",
              (unsigned long long)jobs[1].pj.work.used);
    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < 4; i++) job_free(&jobs[i]);
    tdm_sched_destroy(e);
    tdm_scene_destroy(hs);
    tdm_bvh_free(ht);
    world_free(&w);
}

typedef struct stopper { tdm_pooler *pl; } stopper;

static void *stop_main(void *arg)
{
    tdm_pooler_stop(((stopper *)arg)->pl);
    return NULL;
}

Test(pooler, stop_finishes_what_is_queued, .timeout = 120)
{
    gen_rng r = {seed ^ 3};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    enum { N = 12, PROBES = 64 };
    job jobs[N + PROBES];
    for (int i = 0; i < N + PROBES; i++) {
        job_make(&jobs[i], i, w.scene[i % N_SCENES], (uint32_t)(1 + i % 5), i % 3, &r);
        job_reference(&jobs[i], e);
    }
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, on_finished, on_ran, &p, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p);
    for (int i = 1; i < N; i++) cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
    /* stop while jobs 1..N-1 are queued; submit until the pooler says it is stopping */
    stopper s = {pl};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, stop_main, &s), 0);
    int queued = N, refused = -1;
    for (int i = N; i < N + PROBES; i++) {
        if (tdm_pooler_submit(pl, &jobs[i].pj) != TDM_OK) {
            refused = i;
            break;
        }
        queued++;
        long ms = 5L * (i - N + 1); /* 5 ms, 10 ms, ...: over 10 s in all, for the stopper thread to run */
        nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
    }
    cr_assert(refused >= 0, "%d jobs were taken after tdm_pooler_stop was called", PROBES);
    probe_open(&p);
    pthread_join(th, NULL); /* tdm_pooler_stop returned */
    cr_assert_eq(tdm_pooler_pending(pl), 0);
    cr_assert_eq(p.finished, queued, "%d jobs finished, %d were taken", p.finished, queued);
    for (int i = 0; i < N + PROBES; i++) {
        if (i == refused) {
            cr_assert_eq(atomic_load(&jobs[i].finished), 0, "the refused job %d was finished", i);
            continue;
        }
        if (i > refused) continue; /* never submitted */
        job_check(&jobs[i]);
    }
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[refused].pj), TDM_EINVAL, "a stopped pooler refuses jobs");
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    cr_assert_eq(st.jobs, (uint64_t)queued);
    tdm_pooler_stop(pl); /* again: nothing happens */

    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < N + PROBES; i++) job_free(&jobs[i]);
    tdm_sched_destroy(e);
    world_free(&w);
}

Test(pooler, an_engine_error_reaches_every_job_of_its_batch, .timeout = 120)
{
    gen_rng r = {seed ^ 4};
    world w;
    world_make(&w, &r);
    tdm_sched *e = cpu_engine(1);
    enum { N = 5 };
    job jobs[N];
    job_make(&jobs[0], 0, w.scene[0], 4, 0, &r); /* held: runs alone */
    job_make(&jobs[1], 1, w.scene[1], 6, 1, &r);
    job_make(&jobs[2], 2, w.scene[0], 3, 3, &r); /* contacts, max_contacts 0 */
    job_make(&jobs[3], 3, w.scene[2], 2, 2, &r);
    job_make(&jobs[4], 4, w.scene[0], 5, 2, &r); /* after the failure, alone: answered */
    for (int i = 0; i < N; i++) job_reference(&jobs[i], e);
    cr_assert_eq(jobs[2].want_rc, TDM_EINVAL, "the engine refuses max_contacts 0 in contacts mode");
    jobs[1].want_rc = jobs[3].want_rc = TDM_EINVAL; /* they share job 2's batch */
    probe p;
    probe_init(&p);
    p.hold = &jobs[0];
    tdm_pooler *pl = NULL;
    cr_assert_eq(tdm_pooler_create(e, 1u << 20, 1u << 20, on_finished, on_ran, &p, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[0].pj), TDM_OK);
    probe_wait_holding(&p);
    for (int i = 1; i < 4; i++) cr_assert_eq(tdm_pooler_submit(pl, &jobs[i].pj), TDM_OK);
    probe_open(&p);
    probe_wait_finished(&p, 4);
    cr_assert_eq(tdm_pooler_submit(pl, &jobs[4].pj), TDM_OK);
    probe_wait_finished(&p, 5);
    tdm_pooler_stop(pl);

    for (int i = 0; i < N; i++) job_check(&jobs[i]);
    cr_assert_eq(p.n_batches, 3);
    cr_assert_eq(p.batch[0].rc, TDM_OK);
    cr_assert_eq(p.batch[1].rc, TDM_EINVAL);
    cr_assert_eq(p.batch[1].jobs, 3);
    cr_assert_eq(p.batch[2].rc, TDM_OK, "the pooler goes on after a failed run");
    tdm_pooler_stats st;
    tdm_pooler_get_stats(pl, &st);
    cr_assert_eq(st.batches, 3);
    cr_assert_eq(st.jobs, (uint64_t)N);

    tdm_pooler_destroy(pl);
    probe_fini(&p);
    for (int i = 0; i < N; i++) job_free(&jobs[i]);
    tdm_sched_destroy(e);
    world_free(&w);
}

Test(pooler, create_refuses_what_it_cannot_run)
{
    tdm_pooler *pl = (tdm_pooler *)(void *)&pl;
    cr_assert_eq(tdm_pooler_create(NULL, 1, 1, on_finished, NULL, NULL, &pl), TDM_EINVAL);
    cr_assert_null(pl);
    tdm_sched *e = cpu_engine(2);
    cr_assert_eq(tdm_pooler_create(e, 1, 1, NULL, NULL, NULL, &pl), TDM_EINVAL);
    cr_assert_null(pl);
    cr_assert_eq(tdm_pooler_create(e, 0, 0, on_finished, NULL, NULL, &pl), TDM_OK);
    cr_assert_eq(tdm_pooler_threads(pl), 2);
    cr_assert_eq(tdm_pooler_pending(pl), 0);
    tdm_pooler_destroy(pl); /* stops, with nothing queued */
    tdm_pooler_destroy(NULL);
    tdm_sched_destroy(e);
}
