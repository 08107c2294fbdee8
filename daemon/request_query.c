/* Query: poses on a stored scene, answered by the engine through the pooler.
 *
 * The loop validates the request against the scene and the limits, makes one
 * tdm_query_job (one allocation: the job, the transforms, the results), converts
 * the poses (on libuv's thread pool for large requests), and submits the job to
 * the query pool (query_pool.h), which pools it with every other query waiting
 * into one engine run. The pooler thread that ran it packs the reply
 * (tdm_request_query_packed); the loop sends it (tdm_request_query_done). The
 * job holds a reference on its scene, so a SceneDelete meanwhile frees nothing
 * the engine reads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "request.h"
#include "request_handlers.h"

static void free_job(tdm_query_job *j)
{
    tdm_conn_job_untrack(j->owner, j);
    if (j->cleanup) j->cleanup(j);
    tdm__query_scene_unref(j->owner, j->scene_ref); /* a loop's finished jobs go holding the lock shared */
    free(j->pool.pairs);
    tdm_arena_free(j->arena);
    free(j);
}

/* The reply of a finished job, framed; touches no connection, so it runs on
 * the pooler thread that ran the job (tdm_request_query_packed). NULL when out
 * of memory or too large. */
static tdm_frame *pack_query_reply(tdm_query_job *j, int *too_large)
{
    if (j->pack) return j->pack(j, too_large);
    const tdm_pooler_job *p = &j->pool;
    size_t n = tdm_query_reply_bound(p->results, p->n_queries, p->pairs, p->max_contacts);
    *too_large = n > UINT32_MAX - 4; /* request validation keeps replies far below */
    uint8_t *body;
    tdm_frame *f = *too_large ? NULL : tdm_frame_new(n, &body);
    if (f)
        tdm_frame_trim(f, tdm_query_reply_write(body, j->request_id, p->results, p->n_queries, p->pairs,
                                                p->max_contacts));
    return f;
}

/* Loop thread: sends what a finished job has (its reply frame, or the error it
 * got) and lets it go. */
static void finish_job(tdm_query_job *j, tdm_frame *f, int too_large)
{
    tdm_conn *c = j->owner;
    int rc = j->pool.rc;
    if (j->sent_direct) {
        tdm_conn_sent_direct(c);
        tdm_frame_free(f);
    } else if (!tdm_conn_alive(c)) {
        tdm_conn_drop_frame(c, f);
    } else if (rc == TDM_EBUDGET) {
        tdm_conn_send_error(c, j->request_id, E(WORK_BUDGET), "", -1,
                            "%u queries cost more than their work budget of %llu box and triangle tests "
                            "(max_query_work per query): split the request, or ask for a larger budget",
                            j->pool.n_queries, (unsigned long long)j->pool.max_work);
    } else if (rc != TDM_OK) {
        tdm_conn_send_error(c, j->request_id, tdm__error_code(rc), "", -1, "the engine failed: %s", tdm_strerror(rc));
    } else if (f) {
        tdm_conn_send_frame(c, f);
    } else if (too_large) {
        tdm_conn_send_error(c, j->request_id, E(INTERNAL), "", -1, "the reply is too large to frame");
    } else {
        tdm_conn_send_error(c, j->request_id, E(NO_MEMORY), "", -1, "out of memory for the reply");
    }
    if (rc == TDM_OK && !j->counted) __atomic_add_fetch(&c->srv->counters.queries, j->pool.n_queries, __ATOMIC_RELAXED);
    free_job(j);
    tdm_conn_end(c);
}

/* Requests of at least this many queries have their poses converted on
 * libuv's thread pool (UV_THREADPOOL_SIZE threads, 8 unless set: main.c), not on the
 * loop thread: with 64 clients sending 1024-pose requests, conversion and
 * reply packing took ~60 % of a loop that was the daemon's bottleneck (replies
 * are now packed by the pooler thread that ran them). Smaller ones stay on
 * the loop, where a thread hand-off would cost more latency than the work. */
#define OFFLOAD_QUERIES 64

/* Such a request with this many bytes of numbers or more keeps them where they were decoded: its
 * job takes the request's arena rather than copying them on the loop, which held the server's lock
 * ~10-15 ms for 64 MiB. Smaller ones are copied: a new arena for the next request costs more. */
#define KEEP_NUMBERS_BYTES (1u << 20)

void tdm__name_pool_thread(void)
{
    static _Thread_local int named;
    if (!named) prctl(PR_SET_NAME, "tdm-pool");
    named = 1;
}

void tdm_request_query_packed(tdm_query_job *j, void *data)
{
    (void)data;
    if (j->pool.rc == TDM_OK) j->frame = pack_query_reply(j, &j->frame_too_large);
}

void tdm_request_query_send(tdm_query_job *j, void *data)
{
    tdm_server *srv = data;
    /* counted before the client can see the reply: its next StatsRequest may be handled before
       the loop takes this job (the job may still be being written, query_pool.c) */
    __atomic_add_fetch(&srv->counters.queries, j->pool.n_queries, __ATOMIC_RELAXED);
    j->counted = 1;
    j->sent_direct = tdm_conn_reply_direct(j->owner, j->frame);
}

void tdm_request_query_done(tdm_query_job *j, void *data)
{
    (void)data;
    if (j->pool.rc == TDM_OK && !j->frame && !j->frame_too_large) /* packed where it ran, unless memory ran out */
        j->frame = pack_query_reply(j, &j->frame_too_large);
    tdm_frame *f = j->frame;
    j->frame = NULL;
    finish_job(j, f, j->frame_too_large);
}

/* Converts a job's poses from the numbers sent; on a bad pose, records which
 * (j->bad_*) and returns its code. Any thread. */
static ecode convert_poses(tdm_query_job *j, const double *p)
{
    uint32_t m = j->pool.scene->n_movable;
    for (size_t i = 0; i < j->pool.n_queries; i++)
        for (uint32_t k = 0; k < m; k++, p += 7) {
            ecode e = tdm__pose_xform(p, &j->poses[i * m + k], NULL);
            if (e == 0) continue;
            j->bad_query = i;
            j->bad_object = k;
            j->bad_norm = tdm_quat_norm((tdm_quat){p[3], p[4], p[5], p[6]});
            return e;
        }
    return 0;
}

/* Forward kinematics of a job's configurations into its poses; on a non-finite
 * value records which (j->bad_*) and returns E(NON_FINITE). Any thread. */
static ecode convert_configs(tdm_query_job *j, const double *q)
{
    const tdm_robot_scene *rs = j->rs;
    uint32_t J = rs->robot->n_active, m = rs->n_movable;
    size_t total = (size_t)j->pool.n_queries * J;
    for (size_t k = 0; k < total; k++)
        if (!isfinite(q[k])) {
            j->bad_index = k;
            j->bad_query = k / J;
            return E(NON_FINITE);
        }
    if (j->pool.configs) return 0; /* the scheduler runs them (on the device with a GPU engine) */
    tdm_xform *links = malloc(sizeof *links * rs->robot->n_links);
    if (!links) return E(NO_MEMORY);
    for (size_t i = 0; i < j->pool.n_queries; i++)
        tdm_robot_scene_poses(rs, q + i * J, J, links, &j->poses[i * m]); /* finite, right count: cannot fail */
    free(links);
    return 0;
}

static void send_bad_pose(tdm_conn *c, const tdm_query_job *j, ecode e)
{
    if (j->rs) {
        if (e == E(NO_MEMORY)) {
            tdm_conn_send_error(c, j->request_id, e, "", -1, "out of memory for forward kinematics");
            return;
        }
        const tdm_robot *r = j->rs->robot;
        size_t J = r->n_active;
        tdm_conn_send_error(c, j->request_id, e, "configs", (int64_t)j->bad_index,
                            "configs[%zu] (query %zu, joint '%s') is not finite", j->bad_index, j->bad_query,
                            r->joints[r->active[j->bad_index % J]].name);
        return;
    }
    uint32_t object = j->pool.scene->movable[j->bad_object];
    if (e == E(NON_FINITE))
        tdm_conn_send_error(c, j->request_id, e, "poses", (int64_t)j->bad_query,
                            "query %zu, object %u: the pose has a non-finite number", j->bad_query, object);
    else
        tdm_conn_send_error(c, j->request_id, e, "poses", (int64_t)j->bad_query,
                            "query %zu, object %u: the quaternion has norm %.6g, not within 1e-3 of 1", j->bad_query,
                            object, j->bad_norm);
}

static void convert_work(uv_work_t *w)
{
    tdm__name_pool_thread();
    tdm_query_job *j = w->data;
    j->bad_code = j->rs ? convert_configs(j, j->raw) : convert_poses(j, j->raw);
}

static void converted(tdm_query_job *j)
{
    tdm_conn *c = j->owner;
    if (j->bad_code == 0 && tdm_conn_alive(c)) {
        tdm_query_pool_submit(c->srv->query_pool, j);
        return;
    }
    tdm_metrics_mark outer = tdm_metrics_enter(&j->mark);
    if (tdm_conn_alive(c)) send_bad_pose(c, j, (ecode)j->bad_code); /* else nobody waits for an answer */
    tdm_metrics_leave(outer);
    free_job(j);
    tdm_conn_end(c);
}

static void convert_after(uv_work_t *w, int status)
{
    (void)status;
    tdm_query_job *j = w->data;
    tdm_server *srv = ((tdm_conn *)j->owner)->srv;
    tdm_srv_lock(srv);
    converted(j);
    tdm_srv_unlock(srv);
}

/* The request on scene sc, on which the caller holds a reference: 0 when the job took it
 * over, -1 when the request was answered otherwise (the caller lets it go). */
static int query(tdm_conn *c, uint64_t id, const Tandem__V1__Query *q, tdm_stored_scene *sc)
{
    tdm_server *srv = c->srv;
    const tdm_config *cfg = srv->cfg;
    if (q->mode != TANDEM__V1__MODE__MODE_BOOL && q->mode != TANDEM__V1__MODE__MODE_CONTACTS) {
        tdm_conn_send_error(c, id, E(BAD_REQUEST), "mode", -1, "mode %d is not MODE_BOOL (0) or MODE_CONTACTS (1)",
                            (int)q->mode);
        return -1;
    }
    const tdm_scene *s = sc->scene;
    uint32_t m = s->n_movable;
    size_t per = 7 * (size_t)m, n;
    const tdm_robot_scene *rs = NULL;
    const double *numbers = q->poses;
    size_t n_numbers = q->n_poses;
    if (q->n_configs > 0) {
        if (!sc->rs) {
            tdm_conn_send_error(c, id, E(BAD_REQUEST), "configs", -1,
                                "configs are for robot scenes; this is a rigid scene: send poses");
            return -1;
        }
        if (q->n_poses > 0) {
            tdm_conn_send_error(c, id, E(BAD_REQUEST), "poses", -1, "a Query carries poses or configs, not both");
            return -1;
        }
        rs = sc->rs;
        size_t J = rs->robot->n_active;
        if (J == 0 || q->n_configs % J) {
            tdm_conn_send_error(c, id, E(BAD_REQUEST), "configs", -1,
                                "configs has %zu numbers: it needs a positive multiple of %zu (the robot's active "
                                "joints)", q->n_configs, J);
            return -1;
        }
        n = q->n_configs / J;
        numbers = q->configs;
        n_numbers = q->n_configs;
    } else {
        if (q->n_poses == 0 || q->n_poses % per) {
            tdm_conn_send_error(c, id, E(BAD_REQUEST), "poses", -1,
                                "poses has %zu numbers: it needs a positive multiple of %zu (7 per movable object, %u "
                                "movable)%s", q->n_poses, per, m, sc->rs ? "; a robot scene also takes configs" : "");
            return -1;
        }
        n = q->n_poses / per;
    }
    if (n > cfg->max_queries) {
        tdm_conn_send_error(c, id, E(LIMIT), "poses", -1, "%zu queries, over max_queries %u", n, cfg->max_queries);
        return -1;
    }
    int contacts = q->mode == TANDEM__V1__MODE__MODE_CONTACTS;
    uint32_t max_contacts = 1;
    if (contacts) {
        if (q->max_contacts > cfg->max_contacts) {
            tdm_conn_send_error(c, id, E(LIMIT), "max_contacts", -1, "max_contacts %u is over the server's %u",
                                q->max_contacts, cfg->max_contacts);
            return -1;
        }
        max_contacts = q->max_contacts ? q->max_contacts : cfg->max_contacts;
    }
    uint64_t tasks = (uint64_t)n * s->n_checks;
    if (tasks > cfg->max_query_tasks) {
        tdm_conn_send_error(c, id, E(LIMIT), "poses", -1,
                            "%zu queries x %u checked object pairs = %llu tasks, over max_query_tasks %llu", n,
                            s->n_checks, (unsigned long long)tasks, (unsigned long long)cfg->max_query_tasks);
        return -1;
    }
    int want_pairs = contacts && q->want_pairs;
    uint64_t reserve = want_pairs ? (uint64_t)n * max_contacts : 0;
    if (reserve > cfg->max_reply_pairs) {
        tdm_conn_send_error(c, id, E(LIMIT), "want_pairs", -1,
                            "want_pairs with %zu queries x max_contacts %u could return %llu pairs, over the server's "
                            "max_reply_pairs %u: lower max_contacts or send fewer queries",
                            n, max_contacts, (unsigned long long)reserve, cfg->max_reply_pairs);
        return -1;
    }

    /* a large batch of configurations (no pairs listed) goes to the scheduler as
     * configurations: on a GPU engine they never cross the bus as poses */
    uint32_t configs_min = tdm__configs_min(srv);
    int as_configs = rs && configs_min && n >= configs_min && !(contacts && q->want_pairs);
    /* one allocation: the job, the transforms (not for configurations), the
     * results and, when they are converted off the loop or run as configurations,
     * a copy of the numbers sent (the frame they are in is reused by the next
     * request), unless the job keeps the decoded request's arena, where they are */
    int offload = n >= OFFLOAD_QUERIES;
    int keep = offload && n_numbers * sizeof(double) >= KEEP_NUMBERS_BYTES && c->arena && tdm__work_apart();
    int copy = (offload || as_configs) && !keep;
    size_t xoff = (sizeof(tdm_query_job) + 15) & ~(size_t)15;
    size_t roff = xoff + (as_configs ? 0 : n * m * sizeof(tdm_xform));
    size_t poff = (roff + n * sizeof(tdm_sched_result) + 7) & ~(size_t)7;
    size_t job_bytes = poff + (copy ? n_numbers * sizeof(double) : 0);
    /* what the job holds until answered (the pairs' room is reserved, if not all touched; a kept
     * arena) and its reply's bound: both counted against max-memory, the bound on the connection's
     * output */
    uint64_t mem = job_bytes + reserve * sizeof(tdm_sched_contact) + (keep ? tdm_arena_allocated(c->arena) : 0);
    uint64_t reply = tdm_query_reply_max(n, reserve);
    if (tdm_conn_job_admit(c, id, mem, reply) != 0) return -1;
    tdm_query_job *j = malloc(job_bytes);
    if (!j) {
        tdm_conn_job_unadmit(c, mem, reply);
        tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for %zu queries", n);
        return -1;
    }
    memset(j, 0, sizeof *j);
    tdm_pooler_job *pj = &j->pool;
    j->poses = (tdm_xform *)(void *)((char *)j + xoff);
    pj->poses = j->poses;
    pj->results = (tdm_sched_result *)(void *)((char *)j + roff);
    pj->scene = s;
    pj->n_queries = (uint32_t)n;
    j->request_id = id;
    tdm_metrics_mark_take(&j->mark);
    j->rs = rs;
    if (keep) {
        j->raw = (double *)numbers; /* in c->arena, which the job takes below */
    } else if (copy) {
        j->raw = (double *)(void *)((char *)j + poff);
        memcpy(j->raw, numbers, n_numbers * sizeof(double));
    }
    if (as_configs) { /* its numbers kept or copied above */
        j->poses = NULL;
        pj->poses = NULL;
        pj->configs = j->raw;
        pj->kin = &rs->kin;
    }
    if (!offload) { /* a small one (a planner's state): checked or converted here, no hop to a thread */
        ecode e = rs ? convert_configs(j, copy ? j->raw : numbers) : convert_poses(j, numbers);
        if (e != 0) {
            tdm_conn_job_unadmit(c, mem, reply);
            send_bad_pose(c, j, e);
            free(j);
            return -1;
        }
    }
    if (want_pairs) {
        /* never touched beyond the pairs found: pages stay unbacked */
        pj->pairs = malloc((size_t)reserve * sizeof *pj->pairs);
        if (!pj->pairs) {
            free(j);
            tdm_conn_job_unadmit(c, mem, reply);
            tdm_conn_send_error(c, id, E(NO_MEMORY), "", -1, "out of memory for %llu pairs", (unsigned long long)reserve);
            return -1;
        }
    }
    if (keep) {
        j->arena = c->arena;
        c->arena = NULL; /* the next request decodes into a new one */
    }
    j->owner = c;
    j->scene_ref = sc; /* the caller's reference, the job's now: a SceneDelete meanwhile must not free
                          what the engine reads */
    tdm_conn_job_track(c, j, mem, reply);
    pj->mode = contacts ? TDM_MODE_CONTACTS : TDM_MODE_BOOL;
    pj->max_contacts = max_contacts;
    pj->n_tasks = tasks;
    pj->max_work = tdm__work_budget(srv->cfg->max_query_work, n);
    pj->pairs_reserved = reserve;
    pj->owner = tdm_conn_pool_owner(c);
    pj->rc = TDM_OK;
    tdm_conn_begin(c);
    if (offload) {
        j->work.data = j;
        if (uv_queue_work(c->io->loop, &j->work, convert_work, convert_after) == 0) return 0;
        j->bad_code = rs ? convert_configs(j, j->raw) : convert_poses(j, j->raw); /* cannot happen: uv_queue_work fails only without a callback */
        converted(j);
        return 0;
    }
    tdm_query_pool_submit(srv->query_pool, j);
    return 0;
}

void tdm__query(tdm_conn *c, uint64_t id, const Tandem__V1__Query *q)
{
    tdm_stored_scene *sc = tdm__query_scene_ref(c, id, &q->scene_id);
    if (sc && query(c, id, q, sc) != 0) tdm__query_scene_unref(c, sc);
}
