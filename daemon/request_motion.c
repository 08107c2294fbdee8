/* MotionCheck: motions on a robot scene, checked state by state with early exit
 * per motion (robot/motion_rounds.h, the implementation `tandem motions` runs),
 * every batch of states run as a query job through the query pool, so that the
 * motions of every client are pooled with each other and with every Query.
 *
 * The loop validates the request (libuv's pool one of 1 MiB of numbers or more, then the loop
 * admits and submits it); the first batch (its states' forward
 * kinematics) is set up on libuv's thread pool; from then on the job lives on the
 * pooler threads: after
 * each run `again` hands the answers to the motion check and sets up the next
 * batch, and the job is resubmitted, until every motion is answered; then `pack`
 * writes the MotionCheckReply there and the loop sends it (request_query.c's
 * tdm_request_query_done, as for any query job). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../robot/motion_rounds.h"
#include "../robot/motions.h"
#include "request_handlers.h"

#define BATCH_TASKS (1u << 20) /* (state, checked pair) tasks per batch at most when its poses are made here */
#define BATCH_CONFIGS 65536    /* states per batch run as configurations, as `tandem motions` */
/* motion-window 0 with a GPU engine: the first round's window (robot/motion_rounds.h). A GPU
 * run's time hardly depends on its size below thousands of states, so one round per typical
 * planner motion (tens of states) answers in one run instead of two or three dependent ones */
#define TDM_MOTION_GPU_WINDOW 64
/* A first batch of at most this many states is sized on the loop and made (its states and
 * their forward kinematics) by the pooler thread that first takes it (fill_first: a planner's
 * single state); a larger one is made on libuv's thread pool, as the loop is what bounds
 * tandemd with many planners (bench/results/ompl_rrt_batches.md). TDM_MOTION_INLINE_STATES
 * overrides it (A/B runs). */
#define INLINE_STATES 16
/* A first batch that goes as configurations takes the first path up to this many states (its
 * states interpolated, about J numbers each: a planner's motion is tens of states) */
#define BATCH_INLINE_CONFIGS 4096

static uint64_t inline_states(void)
{
    static uint64_t v = UINT64_MAX; /* atomic: the loops handle motions at once (io.h) */
    uint64_t x = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (x == UINT64_MAX) {
        const char *e = getenv("TDM_MOTION_INLINE_STATES");
        x = e && *e ? strtoull(e, NULL, 10) : INLINE_STATES;
        __atomic_store_n(&v, x, __ATOMIC_RELAXED);
    }
    return x;
}

/* Whether environment variable `name` is `value`, read once (*cache -1 until then; atomic: the
 * loops and the pooler threads plan batches at once). For the A/B switches below. */
static int env_is(int *cache, const char *name, const char *value)
{
    int x = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (x < 0) {
        const char *e = getenv(name);
        x = e && strcmp(e, value) == 0;
        __atomic_store_n(cache, x, __ATOMIC_RELAXED);
    }
    return x;
}

/* TDM_MOTION_FILL_ON_LOOP=1 (A/B runs): a first batch sized on the loop is also made there,
 * as before fill_first */
static int fill_on_loop(void)
{
    static int v = -1;
    return env_is(&v, "TDM_MOTION_FILL_ON_LOOP", "1");
}

/* TDM_MOTION_ANY_STOP=0 (A/B runs): a batch of one motion's states asking for any colliding state
 * runs every state on the CPU engine, as before (tdm_pooler_job.any_stop) */
static int any_stop_on(void)
{
    static int v = -1;
    return !env_is(&v, "TDM_MOTION_ANY_STOP", "0");
}

/* TDM_MOTION_SPREAD=0 (A/B runs): a motion's states after its probes first to last, as before
 * the spread order (tdm_motion_rounds_set_linear) */
static int spread_on(void)
{
    static int v = -1;
    return !env_is(&v, "TDM_MOTION_SPREAD", "0");
}

typedef struct motion_job {
    tdm_query_job q; /* first: the query pool's job */
    const tdm_robot_scene *rs;
    tdm_motion_rounds *mc;
    double *motions;  /* the points, a copy (one block with `points`) */
    uint32_t *points; /* points per motion, a copy; NULL: 2 each */
    double *configs;  /* batch x J (one block with links, the job's poses and its results) */
    tdm_xform *links; /* scratch for FK */
    size_t n, J, batch;
    int any; /* any_state: a colliding motion's answer is any colliding state, no last_free */
    uint64_t max_query_work; /* the server's, per state */
    uint32_t configs_min;    /* the server's tdm__configs_min */
} motion_job;
/* fill_first reaches the motion job from its pooler job */
_Static_assert(offsetof(motion_job, q) == 0 && offsetof(tdm_query_job, pool) == 0, "the pooler job starts the motion job");

/* The next batch, sized: as configurations (a large batch) or as poses; 0 when every
 * motion is answered. make_batch then writes its states (or their poses). Any thread
 * (one at a time). */
static size_t plan_batch(motion_job *m)
{
    size_t n_b = tdm_motion_rounds_plan(m->mc);
    if (!n_b) return 0;
    if (m->configs_min && n_b >= m->configs_min) { /* the scheduler runs the states themselves */
        m->q.pool.configs = m->configs;
        m->q.pool.kin = &m->rs->kin;
    } else {
        m->q.pool.configs = NULL;
    }
    m->q.pool.n_queries = (uint32_t)n_b;
    m->q.pool.n_tasks = (uint64_t)n_b * m->rs->scene->n_checks;
    m->q.pool.max_work = tdm__work_budget(m->max_query_work, n_b);
    /* a batch of one motion's states asking for any colliding state: one colliding state answers
       it, so the CPU engine may leave the ones after it unrun (with several motions each needs its
       own) */
    m->q.pool.any_stop = m->any && tdm_motion_rounds_segments(m->mc) == 1 && any_stop_on();
    return n_b;
}

static void make_batch(motion_job *m)
{
    tdm_motion_rounds_fill(m->mc, m->configs);
    if (m->q.pool.configs) return;
    uint32_t el = m->rs->n_movable;
    for (size_t i = 0; i < m->q.pool.n_queries; i++)
        tdm_robot_scene_poses(m->rs, m->configs + i * m->J, m->J, m->links, m->q.poses + i * el); /* finite */
}

static int prepare(motion_job *m)
{
    if (!plan_batch(m)) return 0;
    make_batch(m);
    return 1;
}

/* A first batch sized on the loop is made here, on the pooler thread that first takes
 * the job (tdm_pooler_job.fill): its states' interpolation was ~8 % of the loop's time
 * with 64 planners, and the loop is what bounds tandemd then
 * (bench/results/ompl_resident.md, section 10). */
static void fill_first(tdm_pooler_job *pj) { make_batch((motion_job *)(void *)pj); }

static int again(tdm_query_job *j)
{
    motion_job *m = (motion_job *)j;
    tdm_motion_rounds_take(m->mc, &j->pool.results[0].colliding, sizeof(tdm_sched_result));
    return prepare(m);
}

static tdm_frame *pack(tdm_query_job *j, int *too_large)
{
    motion_job *m = (motion_job *)j;
    size_t n = m->n, J = m->J;
    Tandem__V1__MotionResult *rs = calloc(n, sizeof *rs);
    Tandem__V1__MotionResult **ptrs = malloc(n * sizeof *ptrs);
    double *last = malloc((n * J > 0 ? n * J : 1) * sizeof *last);
    tdm_frame *f = NULL;
    *too_large = 0;
    if (rs && ptrs && last) {
        for (size_t i = 0; i < n; i++) {
            Tandem__V1__MotionResult r = TANDEM__V1__MOTION_RESULT__INIT;
            int64_t k = tdm_motion_rounds_answer(m->mc, i);
            uint64_t ns = tdm_motion_rounds_states(m->mc, i);
            r.first_colliding = k;
            r.n_states = ns;
            /* any_state: a colliding motion's states before k are not all known to be free */
            if (k < 0 || (k > 0 && !m->any)) {
                tdm_motion_rounds_state(m->mc, i, k < 0 ? ns - 1 : (uint64_t)k - 1, last + i * J);
                r.n_last_free = J;
                r.last_free = last + i * J;
            }
            rs[i] = r;
            ptrs[i] = &rs[i];
        }
        Tandem__V1__MotionCheckReply mr = TANDEM__V1__MOTION_CHECK_REPLY__INIT;
        mr.n_results = n;
        mr.results = ptrs;
        Tandem__V1__Reply rep = TANDEM__V1__REPLY__INIT;
        rep.id = j->request_id;
        rep.body_case = TANDEM__V1__REPLY__BODY_MOTION_CHECK;
        rep.motion_check = &mr;
        f = tdm_frame_pack(&rep, too_large);
    }
    free(rs);
    free(ptrs);
    free(last);
    return f;
}

/* The first batch's forward kinematics, on libuv's thread pool (as large Queries'
 * pose conversion), then the job goes to the query pool. */
static void first_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    motion_job *m = w->data;
    prepare(m); /* n >= 1 motions of >= 2 states: there is a first batch */
}

static void first_after(uv_work_t *w, int status)
{
    (void)status;
    motion_job *m = w->data;
    tdm_conn *c = m->q.owner;
    tdm_srv_lock(c->srv);
    tdm_query_pool_submit(c->srv->query_pool, &m->q); /* answered (or failed) through the pool, alive or not */
    tdm_srv_unlock(c->srv);
}

static void cleanup(tdm_query_job *j)
{
    motion_job *m = (motion_job *)j;
    tdm_motion_rounds_free(m->mc);
    free(m->motions); /* and the points */
    free(m->configs); /* and the links, the poses and the results */
}

/* The request on scene sc, on which the caller holds a reference: 0 when the job took it
 * over, -1 when the request was answered otherwise (the caller lets it go). */
/* Why a MotionCheck is refused, found by motion_prepare (any thread) and sent on the loop. */
typedef struct motion_refusal {
    int code; /* an E() code; 0: none */
    const char *field;
    int64_t index;
    char msg[256];
} motion_refusal;

static int refuse(motion_refusal *r, int code, const char *field, int64_t index, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int refuse(motion_refusal *r, int code, const char *field, int64_t index, const char *fmt, ...)
{
    r->code = code, r->field = field, r->index = index;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* What motion_prepare needs of the server, read on the loop. */
typedef struct motion_limits {
    uint32_t max_queries;
    uint64_t max_query_tasks, max_motion_states, max_query_work;
    uint64_t window;         /* the first round's states per motion */
    uint32_t motion_probes;
    uint32_t configs_min;    /* tdm__configs_min */
} motion_limits;

/* A MotionCheck on robot scene rs validated and its motions planned, with nothing of the loop's
 * touched (libuv's pool for a large one): 0 and *out (its copy of the motions, its rounds, its
 * batch sizes in batch and pose_room, its states in total), or -1 with *r. */
static int motion_prepare(const motion_limits *lim, const Tandem__V1__MotionCheck *mc, const tdm_robot_scene *rs,
                          motion_job **out, size_t *pose_room_out, uint64_t *total_out, motion_refusal *r)
{
    *out = NULL;
    size_t J = rs->robot->n_active, per = 2 * J;
    if (!isfinite(mc->resolution) || !(mc->resolution > 0))
        return refuse(r, E(BAD_REQUEST), "resolution", -1, "resolution must be finite and > 0, not %g", mc->resolution);
    size_t n, n_pts = 0;
    if (mc->n_points) {
        n = mc->n_points;
        for (size_t i = 0; i < n; i++) {
            if (mc->points[i] < 2)
                return refuse(r, E(BAD_REQUEST), "points", (int64_t)i,
                              "points[%zu] is %u: a motion goes through at least 2 configurations", i, mc->points[i]);
            n_pts += mc->points[i];
        }
    } else {
        n = J ? mc->n_motions / per : 0;
        n_pts = 2 * n;
    }
    if (J == 0 || n == 0 || mc->n_motions != n_pts * J)
        return refuse(r, E(BAD_REQUEST), "motions", -1, "motions has %zu numbers: it needs %s (%zu active joints)",
                      mc->n_motions,
                      mc->n_points ? "J per point of points" : "a positive multiple of 2 J (start and end)", J);
    if (n > lim->max_queries)
        return refuse(r, E(LIMIT), "motions", -1, "%zu motions, over max_queries %u", n, lim->max_queries);
    for (size_t k = 0; k < mc->n_motions; k++)
        if (!isfinite(mc->motions[k]))
            return refuse(r, E(NON_FINITE), "motions", (int64_t)k, "motions[%zu] (point %zu, joint '%s') is not finite",
                          k, k / J, rs->robot->joints[rs->robot->active[k % J]].name);
    uint32_t checks = rs->scene->n_checks ? rs->scene->n_checks : 1;
    size_t batch = BATCH_TASKS / checks;
    if (lim->max_query_tasks / checks < batch) batch = (size_t)(lim->max_query_tasks / checks);
    if (lim->max_queries < batch) batch = lim->max_queries;
    if (batch == 0) batch = 1;
    /* batches of configurations (device_configs_min states or more) need no poses here: larger
     * batches, fewer runs (each a device run, whatever its size); poses only for the smaller ones */
    size_t pose_room = batch;
    uint32_t configs_min = lim->configs_min;
    if (configs_min) {
        size_t big = BATCH_CONFIGS;
        if (lim->max_query_tasks / checks < big) big = (size_t)(lim->max_query_tasks / checks);
        if (lim->max_queries < big) big = lim->max_queries;
        if (big > batch) batch = big;
        pose_room = configs_min - 1 < batch ? configs_min - 1 : batch;
        if (pose_room == 0) pose_room = 1;
    }

    /* the motions and their rounds first: a batch never holds more than their states, so that a
     * planner's motion of tens of states holds (and zeroes) buffers of tens of states, not of a
     * whole batch */
    motion_job *m = calloc(1, sizeof *m);
    if (!m) return refuse(r, E(NO_MEMORY), "", -1, "out of memory for %zu motions", n);
    m->rs = rs;
    m->n = n;
    m->J = J;
    /* the copies in one block, and below the batch's buffers in another: a planner's request
       allocates a few blocks on the loop, not a dozen */
    m->motions = malloc(mc->n_motions * sizeof *m->motions + (mc->n_points ? n * sizeof *m->points : 0) + 1);
    if (!m->motions) goto nomem;
    memcpy(m->motions, mc->motions, mc->n_motions * sizeof *m->motions);
    if (mc->n_points) {
        m->points = (uint32_t *)(m->motions + mc->n_motions);
        memcpy(m->points, mc->points, n * sizeof *m->points);
    }
    size_t bad = 0;
    int rc = tdm_motion_rounds_create_paths(m->motions, m->points, n, J, mc->resolution, batch, &m->mc, &bad);
    if (rc == TDM_ERANGE) {
        refuse(r, E(LIMIT), "motions", (int64_t)bad, "motion %zu has more than %llu states at resolution %g", bad,
               (unsigned long long)TDM_MOTION_MAX_STATES, mc->resolution);
        goto fail;
    }
    if (rc != TDM_OK) goto nomem;
    tdm_motion_rounds_set_window(m->mc, lim->window);
    if (mc->any_state) {
        m->any = 1;
        tdm_motion_rounds_set_any(m->mc, lim->motion_probes);
        tdm_motion_rounds_set_linear(m->mc, !spread_on());
    }
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += tdm_motion_rounds_states(m->mc, i);
    if (total > lim->max_motion_states) {
        refuse(r, E(LIMIT), "motions", -1, "the motions have %llu states at resolution %g, over max_motion_states %llu",
               (unsigned long long)total, mc->resolution, (unsigned long long)lim->max_motion_states);
        goto fail;
    }
    batch = tdm_motion_rounds_batch(m->mc);
    if (pose_room > batch) pose_room = batch;
    m->batch = batch;
    m->max_query_work = lim->max_query_work;
    m->configs_min = configs_min;
    *out = m;
    *pose_room_out = pose_room;
    *total_out = total;
    return 0;
nomem:
    refuse(r, E(NO_MEMORY), "", -1, "out of memory for %zu motions", n);
fail:
    cleanup(&m->q);
    free(m);
    return -1;
}

/* A prepared motion job m of MotionCheck mc on stored scene sc (whose reference the job takes, or
 * the caller keeps on -1) admitted, given its buffers and submitted, on the loop: 0, or -1 (answered,
 * m freed). */
static int motion_start(tdm_conn *c, uint64_t id, const Tandem__V1__MotionCheck *mc, tdm_stored_scene *sc,
                        motion_job *m, size_t pose_room, uint64_t total, uint64_t window)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    const tdm_robot_scene *rs = m->rs;
    size_t n = m->n, J = m->J, batch = m->batch;
    /* held until answered: the copy of the motions, a batch's configurations, poses and results
     * (the rounds' own tables, about as large as the motions, counted once more); the reply:
     * per motion two varints and the last free configuration */
    uint64_t mem = sizeof(motion_job) + 2 * (uint64_t)mc->n_motions * sizeof(double) + 4 * (uint64_t)n +
                   (uint64_t)batch * (J * sizeof(double) + sizeof(tdm_sched_result)) +
                   (uint64_t)pose_room * rs->n_movable * sizeof(tdm_xform);
    uint64_t reply = 32 + (uint64_t)n * (26 + 3 + 9 * (uint64_t)J);
    if (tdm_conn_job_admit(c, id, mem, reply) != 0) goto fail;
    {
        size_t cb = batch * J * sizeof *m->configs, lb = rs->robot->n_links * sizeof *m->links,
               pb = pose_room * rs->n_movable * sizeof *m->q.poses, rb = batch * sizeof *m->q.pool.results;
        unsigned char *b = malloc(cb + lb + pb + rb + 1); /* each piece's size a multiple of 8 bytes */
        if (!b) {
            tdm_conn_job_unadmit(c, mem, reply);
            tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for %zu motions", n);
            goto fail;
        }
        m->configs = (double *)b;
        m->links = (tdm_xform *)(b + cb);
        m->q.poses = (tdm_xform *)(b + cb + lb);
        m->q.pool.results = (tdm_sched_result *)(b + cb + lb + pb);
        memset(m->q.pool.results, 0, rb);
    }
    tdm_query_job *j = &m->q;
    j->owner = c;
    tdm_conn_job_track(c, j, mem, reply);
    j->request_id = id;
    tdm_metrics_mark_take(&j->mark);
    j->scene_ref = sc;
    j->again = again;
    j->pack = pack;
    j->cleanup = cleanup;
    j->pool.poses = j->poses;
    j->pool.scene = rs->scene;
    j->pool.mode = TDM_MODE_BOOL;
    j->pool.max_contacts = 1;
    j->pool.owner = tdm_conn_pool_owner(c);
    j->pool.rc = TDM_OK;
    /* the caller's reference on the scene is the job's now: a SceneDelete meanwhile must not free
       what the engine reads */
    tdm_conn_begin(c);
    j->work.data = m;
    /* a first batch of a few states (a planner's one motion), or one that goes as configurations,
       is sized here and made by the pooler thread that takes it: a hand-off to the thread pool
       and back would cost more latency than making it */
    uint64_t first_window = m->any && cfg->motion_probes ? cfg->motion_probes : window;
    size_t first = total < first_window * n ? total : first_window * n;
    uint32_t configs_min = m->configs_min;
    if (first <= inline_states() || (configs_min && first >= configs_min && first <= BATCH_INLINE_CONFIGS) ||
        uv_queue_work(c->io->loop, &j->work, first_work, first_after) != 0) { /* uv_queue_work fails only without a callback */
        plan_batch(m); /* n >= 1 motions of >= 2 states: there is a first batch */
        if (fill_on_loop()) make_batch(m);
        else j->pool.fill = fill_first;
        tdm_query_pool_submit(srv->query_pool, &m->q);
    }
    return 0;
fail:
    cleanup(&m->q);
    free(m);
    return -1;
}

static motion_limits limits_of(tdm_server *srv)
{
    const tdm_config *cfg = srv->cfg;
    return (motion_limits){cfg->max_queries, cfg->max_query_tasks, cfg->max_motion_states, cfg->max_query_work,
                           cfg->motion_window ? cfg->motion_window
                           : tdm_sched_gpu_engines(srv->engine) ? TDM_MOTION_GPU_WINDOW
                                                                : TDM_MOTION_FIRST_WINDOW,
                           cfg->motion_probes, tdm__configs_min(srv)};
}

/* A MotionCheck of this many bytes of numbers or more is validated and planned on libuv's pool: the
 * checks and copies of 64 MiB of waypoints held the server's lock tens of milliseconds on the loop. */
#define MOTION_PREPARE_APART (1u << 20)

typedef struct motion_hop {
    tdm_pool_hop hop; /* first */
    const Tandem__V1__MotionCheck *mc;
    tdm_stored_scene *sc; /* the request's reference */
    motion_limits lim;
    motion_job *m;
    size_t pose_room;
    uint64_t total;
    motion_refusal r;
} motion_hop;

static void motion_prepare_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    motion_hop *h = w->data;
    motion_prepare(&h->lim, h->mc, h->sc->rs, &h->m, &h->pose_room, &h->total, &h->r);
}

static void motion_prepare_after(uv_work_t *w, int status)
{
    (void)status;
    motion_hop *h = w->data;
    tdm_conn *c = h->hop.c;
    tdm_metrics_mark outer;
    int started = 0;
    if (tdm__hop_back(&h->hop, &outer)) {
        if (!h->m)
            tdm_conn_send_error(c, h->hop.id, h->r.code, h->r.field, h->r.index, "%s", h->r.msg);
        else
            started = motion_start(c, h->hop.id, h->mc, h->sc, h->m, h->pose_room, h->total, h->lim.window) == 0;
        h->m = NULL; /* motion_start took it */
    }
    if (h->m) {
        cleanup(&h->m->q);
        free(h->m);
    }
    if (!started) tdm__query_scene_unref(c, h->sc);
    tdm__hop_end(&h->hop, outer, h);
}

/* 0: the request is the job's (or its hop's), with the scene's reference; -1: answered, the
 * caller keeps the reference. */
static int motion_check(tdm_conn *c, uint64_t id, const Tandem__V1__MotionCheck *mc, tdm_stored_scene *sc)
{
    if (!sc->rs) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "scene_id", -1, "motions are checked on robot scenes only");
        return -1;
    }
    motion_limits lim = limits_of(c->srv);
    if (mc->n_motions * sizeof(double) >= MOTION_PREPARE_APART && tdm__work_apart()) {
        motion_hop *h = calloc(1, sizeof *h);
        if (h) {
            h->mc = mc, h->sc = sc, h->lim = lim;
            if (tdm__hop_apart(c, id, &c->arena, &h->hop, motion_prepare_work, motion_prepare_after) == 0) return 0;
            free(h);
        }
    }
    motion_job *m;
    size_t pose_room;
    uint64_t total;
    motion_refusal r;
    if (motion_prepare(&lim, mc, sc->rs, &m, &pose_room, &total, &r) != 0) {
        tdm_conn_send_error(c, id, r.code, r.field, r.index, "%s", r.msg);
        return -1;
    }
    return motion_start(c, id, mc, sc, m, pose_room, total, lim.window);
}

void tdm__motion_check(tdm_conn *c, uint64_t id, const Tandem__V1__MotionCheck *mc)
{
    tdm_stored_scene *sc = tdm__query_scene_ref(c, id, &mc->scene_id);
    if (sc && motion_check(c, id, mc, sc) != 0) tdm__query_scene_unref(c, sc);
}
