/* `tandem bench load`: N connections sending small rigid query batches at a target aggregate
 * rate for a duration (issue 14, point 7), every answer checked against this process's CPU
 * engine, every request accounted for: answered once, failed once, or reported missing.
 *
 * The scene is generated (a torus around a pillar, and a sphere: `tandem demo`'s shapes, made
 * in memory) or read from --env / --robot; it is uploaded to each server, and a pool of poses
 * is answered here first by the CPU engine (workpile/sched.h, as `tandem check`). A request is
 * --batch consecutive poses of the pool from a pseudo-random offset; its answers must equal
 * the pool's. One libuv loop drives every connection through libtandem's async client (its
 * libuv adapter): a 1 ms timer sends what the schedule says is due, round-robin over the
 * active connections that have room (at most --inflight requests each). --idle connections
 * say Hello and then nothing; they are checked still open at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <tandem/adapters/libuv.h>
#include <tandem/tandem.h>
#include <uv.h>

#include "../geom/bvh.h"
#include "../geom/mesh.h"
#include "../workpile/sched.h"
#include "cli.h"
#include "io.h"
#include "remote.h"

static const double PI = 3.14159265358979323846;

/* ---- the generated scene --------------------------------------------------------------------- */

typedef struct mbuf {
    float *v;
    uint32_t *t;
    uint32_t nv, nt, cv, ct;
} mbuf;

static void mb_vert(mbuf *m, double x, double y, double z)
{
    if (m->nv == m->cv) {
        m->cv = m->cv ? m->cv * 2 : 256;
        m->v = realloc(m->v, sizeof(float) * 3 * m->cv);
    }
    m->v[3 * m->nv] = (float)x, m->v[3 * m->nv + 1] = (float)y, m->v[3 * m->nv + 2] = (float)z;
    m->nv++;
}

static void mb_tri(mbuf *m, uint32_t a, uint32_t b, uint32_t c)
{
    if (m->nt == m->ct) {
        m->ct = m->ct ? m->ct * 2 : 256;
        m->t = realloc(m->t, sizeof(uint32_t) * 3 * m->ct);
    }
    m->t[3 * m->nt] = a, m->t[3 * m->nt + 1] = b, m->t[3 * m->nt + 2] = c;
    m->nt++;
}

static void gen_env(mbuf *m)
{
    const int nu = 64, nv = 32;
    const double R = 2.0, r = 0.5;
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            double u = 2 * PI * i / nu, v = 2 * PI * j / nv;
            mb_vert(m, (R + r * cos(v)) * cos(u), (R + r * cos(v)) * sin(u), r * sin(v));
        }
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            uint32_t a = (uint32_t)(i * nv + j), b = (uint32_t)(((i + 1) % nu) * nv + j);
            uint32_t c = (uint32_t)(((i + 1) % nu) * nv + (j + 1) % nv), d = (uint32_t)(i * nv + (j + 1) % nv);
            mb_tri(m, a, b, c);
            mb_tri(m, a, c, d);
        }
    uint32_t b0 = m->nv;
    for (int i = 0; i < 8; i++) mb_vert(m, i & 1 ? 0.4 : -0.4, i & 2 ? 0.4 : -0.4, i & 4 ? 1.5 : -1.5);
    static const int f[12][3] = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                                 {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
    for (int i = 0; i < 12; i++) mb_tri(m, b0 + (uint32_t)f[i][0], b0 + (uint32_t)f[i][1], b0 + (uint32_t)f[i][2]);
}

static void gen_robot(mbuf *m)
{
    const int nlat = 16, nlon = 32;
    const double r = 0.6;
    for (int i = 0; i <= nlat; i++)
        for (int j = 0; j < nlon; j++) {
            double th = PI * i / nlat, ph = 2 * PI * j / nlon;
            mb_vert(m, r * sin(th) * cos(ph), r * sin(th) * sin(ph), r * cos(th));
        }
    for (int i = 0; i < nlat; i++)
        for (int j = 0; j < nlon; j++) {
            uint32_t a = (uint32_t)(i * nlon + j), b = (uint32_t)((i + 1) * nlon + j);
            uint32_t c = (uint32_t)((i + 1) * nlon + (j + 1) % nlon), d = (uint32_t)(i * nlon + (j + 1) % nlon);
            mb_tri(m, a, b, c);
            mb_tri(m, a, c, d);
        }
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1p-53; }

/* ---- the load ---------------------------------------------------------------------------------- */

typedef struct lconn {
    struct load *L;
    tdm_async *ac;
    size_t index;
    int idle;
    int state; /* 0 connecting, 1 ready, 2 gone */
    uint32_t inflight;
    uint64_t sent, answered, errors;
} lconn;

typedef struct load {
    uv_loop_t *loop;
    uv_timer_t tick;
    char **addrs;
    size_t n_addrs;
    tdm_connect_opts opts;
    lconn *conns;
    size_t n_active, n_idle, n_conns;
    size_t next_connect, connecting, connect_burst, ready, failed_connects;
    /* the pool and its answers */
    double *poses;
    tdm_sched_result *want;
    size_t pool, batch;
    tdm_query_mode mode;
    uint8_t (*scene_ids)[TDM_ID_BYTES]; /* per address */
    /* the schedule */
    double rate, duration_s, drain_s;
    uint32_t max_inflight;
    double t0_ms;     /* first send */
    double t_last_ms; /* last answer */
    int sending, draining, finished;
    size_t rr;
    uint64_t rng;
    /* per request */
    uint64_t n_req, cap_req;
    double *t_send; /* ms after the first send */
    float *lat;     /* ms */
    uint32_t *req_conn;
    uint8_t *req_state; /* 0 sent, 1 answered, 2 failed */
    uint64_t sent, answered, errors, mismatches, duplicates, wrong_answers;
    uint64_t behind; /* ticks where a due request found no connection with room */
    size_t idle_held; /* idle connections still open at the end */
    int tid;          /* thread */
    int errors_shown;
    int done;         /* the thread's loop has returned */
} load;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void start_connects(load *L);

static void on_connected(tdm_async *ac, int status)
{
    lconn *c = tdm_async_data(ac);
    load *L = c->L;
    L->connecting--;
    if (status) {
        c->state = 2;
        c->ac = NULL; /* freed after this callback */
        L->failed_connects++;
        if (L->failed_connects <= 5)
            tdm_cli_error("bench load: connection %zu: %s", c->index, tdm_async_errstr(ac));
    } else {
        c->state = 1;
        L->ready++;
    }
    start_connects(L);
}

static void on_disconnected(tdm_async *ac, int status)
{
    lconn *c = tdm_async_data(ac);
    if (status && !c->L->finished && c->L->errors_shown++ < 5)
        tdm_cli_error("bench load: connection %zu (%s) lost: %s", c->index, c->idle ? "idle" : "active",
                      tdm_async_errstr(ac));
    if (c->state == 1) c->L->ready--;
    c->state = 2;
    c->ac = NULL;
}

static void start_connects(load *L)
{
    while (L->next_connect < L->n_conns && L->connecting < L->connect_burst) {
        lconn *c = &L->conns[L->next_connect];
        tdm_connect_opts o = L->opts;
        o.addr = L->addrs[c->index % L->n_addrs];
        L->next_connect++;
        tdm_async *ac = tdm_async_connect(&o);
        if (!ac || tdm_async_err(ac)) {
            if (L->failed_connects++ < 5)
                tdm_cli_error("bench load: connection %zu: %s", c->index, ac ? tdm_async_errstr(ac) : "out of memory");
            c->state = 2;
            tdm_async_free(ac);
            continue;
        }
        tdm_async_set_data(ac, c);
        tdm_async_set_connect_cb(ac, on_connected);
        tdm_async_set_disconnect_cb(ac, on_disconnected);
        if (tdm_libuv_attach(ac, L->loop)) {
            L->failed_connects++;
            c->state = 2;
            tdm_async_free(ac);
            continue;
        }
        c->ac = ac;
        L->connecting++;
    }
}

static int grow_requests(load *L)
{
    uint64_t cap = L->cap_req ? L->cap_req * 2 : 1 << 16;
    double *ts = realloc(L->t_send, cap * sizeof *ts);
    if (ts) L->t_send = ts;
    float *lat = realloc(L->lat, cap * sizeof *lat);
    if (lat) L->lat = lat;
    uint32_t *rc = realloc(L->req_conn, cap * sizeof *rc);
    if (rc) L->req_conn = rc;
    uint8_t *st = realloc(L->req_state, cap * sizeof *st);
    if (st) L->req_state = st;
    if (!ts || !lat || !rc || !st) return -1;
    L->cap_req = cap;
    return 0;
}

static void on_reply(tdm_async *ac, const tdm_reply *r, void *priv)
{
    lconn *c = tdm_async_data(ac);
    load *L = c->L;
    uint64_t k = (uint64_t)(uintptr_t)priv;
    double t = now_ms();
    c->inflight--;
    if (L->req_state[k] != 0) { /* a second callback for one request: libtandem's promise broken */
        L->duplicates++;
        L->mismatches++;
        return;
    }
    if (r->status) {
        L->req_state[k] = 2;
        c->errors++;
        __atomic_fetch_add(&L->errors, 1, __ATOMIC_RELAXED);
        if (L->errors_shown++ < 5)
            tdm_cli_error("bench load: request %llu on connection %zu: %s%s%s", (unsigned long long)k, c->index,
                          tdm_client_strerror(r->status), r->status == TDM_CLIENT_ESERVER ? ": " : "",
                          r->status == TDM_CLIENT_ESERVER ? r->error.message : "");
        return;
    }
    L->req_state[k] = 1;
    c->answered++;
    __atomic_fetch_add(&L->answered, 1, __ATOMIC_RELAXED);
    L->lat[k] = (float)(t - L->t0_ms - L->t_send[k]);
    L->t_last_ms = t;
    /* the pool offset of request k: as chosen when it was sent (a function of k) */
    uint64_t s = k * 0x2545f4914f6cdd1dull + L->rng;
    size_t off = (size_t)(splitmix(&s) % (L->pool - L->batch + 1));
    int wrong = r->u.query.n != L->batch;
    for (size_t i = 0; !wrong && i < L->batch; i++) {
        const tdm_query_result *g = &r->u.query.results[i];
        const tdm_sched_result *w = &L->want[off + i];
        if (g->colliding != w->colliding) wrong = 1;
        if (L->mode == TDM_QUERY_CONTACTS && (g->contacts != w->contacts || g->truncated != w->truncated)) wrong = 1;
    }
    if (wrong) {
        __atomic_fetch_add(&L->mismatches, 1, __ATOMIC_RELAXED);
        if (L->mismatches <= 5)
            tdm_cli_error("bench load: request %llu (poses %zu..%zu of the pool): the answers differ from the CPU "
                          "engine's",
                          (unsigned long long)k, off, off + L->batch - 1);
    }
}

static int send_one(load *L, lconn *c)
{
    if (L->n_req == L->cap_req && grow_requests(L)) return -1;
    uint64_t k = L->n_req;
    uint64_t s = k * 0x2545f4914f6cdd1dull + L->rng;
    size_t off = (size_t)(splitmix(&s) % (L->pool - L->batch + 1));
    size_t srv = c->index % L->n_addrs;
    int rc = tdm_async_query(c->ac, on_reply, (void *)(uintptr_t)k, L->scene_ids[srv], L->mode, L->poses + 7 * off, 1,
                             L->batch, 0, 0, NULL);
    if (rc) return rc;
    L->t_send[k] = now_ms() - L->t0_ms;
    L->req_conn[k] = (uint32_t)c->index;
    L->req_state[k] = 0;
    L->n_req++;
    __atomic_fetch_add(&L->sent, 1, __ATOMIC_RELAXED);
    c->sent++;
    c->inflight++;
    return 0;
}

static void finish(load *L)
{
    L->finished = 1;
    for (size_t i = L->n_active; i < L->n_conns; i++) L->idle_held += L->conns[i].state == 1;
    uv_timer_stop(&L->tick);
    uv_close((uv_handle_t *)&L->tick, NULL);
    for (size_t i = 0; i < L->n_conns; i++)
        if (L->conns[i].ac) tdm_async_free(L->conns[i].ac); /* pending callbacks get ECANCELED */
}

static void on_tick(uv_timer_t *t)
{
    load *L = t->data;
    double now = now_ms();
    if (!L->sending && !L->draining) {
        /* waiting for every connection to be made */
        if (L->connecting == 0 && L->next_connect == L->n_conns) {
            if (L->failed_connects) {
                tdm_cli_error("bench load: %zu of %zu connections could not be made", L->failed_connects,
                              L->n_conns);
                finish(L);
                return;
            }
            L->sending = 1;
            __atomic_store(&L->t0_ms, &now, __ATOMIC_RELAXED);
            tdm_cli_error("bench load: thread %d: %zu active + %zu idle connections ready; sending for %.0f s at "
                          "%.0f requests/s",
                          L->tid, L->n_active, L->n_idle, L->duration_s, L->rate);
        }
        return;
    }
    double el = (now - L->t0_ms) / 1e3;
    if (L->sending) {
        /* the schedule: rate * t requests by time t; the last tick, at or past the duration, sends
         * up to rate * duration where connections have room, then sending stops */
        int last = el >= L->duration_s;
        uint64_t due = (uint64_t)(L->rate * (last ? L->duration_s : el) + 1e-6);
        {
            while (L->sent < due) {
                lconn *c = NULL;
                for (size_t k = 0; k < L->n_active; k++) {
                    lconn *d = &L->conns[(L->rr + k) % L->n_active];
                    if (d->state == 1 && d->inflight < L->max_inflight) {
                        c = d;
                        L->rr = (L->rr + k + 1) % L->n_active;
                        break;
                    }
                }
                if (!c) {
                    L->behind++;
                    break;
                }
                if (send_one(L, c)) {
                    L->errors_shown++;
                    tdm_cli_error("bench load: connection %zu refused a request: %s", c->index, tdm_async_errstr(c->ac));
                    c->state = 2;
                    break;
                }
            }
        }
        if (last) { /* what could not be sent by now is not sent: behind schedule, said below */
            L->sending = 0;
            L->draining = 1;
        }
    }
    if (L->draining && (L->answered + L->errors == L->sent || el >= L->duration_s + L->drain_s)) finish(L);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The file-descriptor limit for `need` sockets: raises the soft limit as far as the hard one. */
static int raise_nofile(size_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        rlim_t want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ? (rlim_t)need : rl.rlim_max;
        rlim_t old = rl.rlim_cur;
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = old;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        tdm_cli_error("bench load: %zu connections need about %zu file descriptors, but the limit is %llu (hard "
                      "limit %llu): raise the hard limit (ulimit -Hn as root, LimitNOFILE= in a unit, or "
                      "/etc/security/limits.conf) or ask for fewer connections",
                      need - 64, need, (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
        return -1;
    }
    return 0;
}

static void *load_main(void *arg)
{
    load *L = arg;
    uv_run(L->loop, UV_RUN_DEFAULT);
    uv_loop_close(L->loop);
    __atomic_store_n(&L->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static int bench_load(int argc, char **argv)
{
    const char *server = NULL, *conns_s = "16", *rate_s = "1000", *dur_s = "10", *batch_s = "4", *idle_s = "0",
               *pool_s = "4096", *mode_s = "bool", *seed_s = "1", *inflight_s = "8", *env = NULL, *robot = NULL,
               *progress_s = "0", *drain_s = "10", *timeout_s = "10000", *burst_s = "128", *threads_s = "1";
    const tdm_opt opts[] = {{"--server", &server},       {"--connections", &conns_s}, {"--rate", &rate_s},
                            {"--duration", &dur_s},      {"--batch", &batch_s},       {"--idle", &idle_s},
                            {"--pool", &pool_s},         {"--mode", &mode_s},         {"--seed", &seed_s},
                            {"--inflight", &inflight_s}, {"--env", &env},             {"--robot", &robot},
                            {"--progress", &progress_s}, {"--drain", &drain_s},       {"--timeout-ms", &timeout_s},
                            {"--connect-burst", &burst_s}, {"--threads", &threads_s}};
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "bench load") < 0) return TDM_EXIT_USAGE;
    if (!env != !robot) {
        tdm_cli_error("bench load: --env and --robot go together (neither: a generated scene)");
        return TDM_EXIT_USAGE;
    }
    static const char *const modes[] = {"bool", "contacts"};
    int mode_i = tdm_cli_choice("bench load", "--mode", mode_s, modes, 2);
    if (mode_i < 0) return TDM_EXIT_USAGE;
    uint64_t conns, rate, dur, batch, idle, pool, seed, inflight, progress, drain, timeout_ms, burst, threads;
    if (tdm_cli_u64("--connections", conns_s, 1, 100000, &conns) < 0 ||
        tdm_cli_u64("--rate", rate_s, 1, 100000000, &rate) < 0 || tdm_cli_u64("--duration", dur_s, 1, 86400, &dur) < 0 ||
        tdm_cli_u64("--batch", batch_s, 1, 65536, &batch) < 0 || tdm_cli_u64("--idle", idle_s, 0, 1000000, &idle) < 0 ||
        tdm_cli_u64("--pool", pool_s, 1, 1u << 24, &pool) < 0 || tdm_cli_u64("--seed", seed_s, 0, UINT64_MAX, &seed) < 0 ||
        tdm_cli_u64("--inflight", inflight_s, 1, 1024, &inflight) < 0 ||
        tdm_cli_u64("--progress", progress_s, 0, 1, &progress) < 0 || tdm_cli_u64("--drain", drain_s, 1, 3600, &drain) < 0 ||
        tdm_cli_u64("--timeout-ms", timeout_s, 0, 3600000, &timeout_ms) < 0 ||
        tdm_cli_u64("--connect-burst", burst_s, 1, 100000, &burst) < 0 ||
        tdm_cli_u64("--threads", threads_s, 1, 256, &threads) < 0)
        return TDM_EXIT_USAGE;
    if (threads > conns) threads = conns;
    if (pool < batch) {
        tdm_cli_error("bench load: --pool %llu is smaller than --batch %llu", (unsigned long long)pool,
                      (unsigned long long)batch);
        return TDM_EXIT_USAGE;
    }
    if (raise_nofile((size_t)(conns + idle + 64)) < 0) return TDM_EXIT_FAIL;
    server = tdm_cli_server(server);

    int status = TDM_EXIT_FAIL;
    load L = {0}, *Ls = NULL;
    uv_loop_t *loops = NULL;
    pthread_t *tids = NULL;
    size_t started = 0;
    tdm_mesh *em = NULL, *rm = NULL;
    tdm_bvh *eb = NULL, *rb = NULL;
    tdm_sched *sched = NULL;
    tdm_scene *scene = NULL;
    tdm_xform *xs = NULL;
    int e_added = 0, r_added = 0;
    char *list = strdup(server);
    char err[512];
    mbuf me = {0}, mr = {0};

    /* the meshes */
    if (env) {
        if (tdm_mesh_load_file(env, TDM_ORIGIN_RAW, &em, err, sizeof err) != TDM_OK ||
            tdm_mesh_load_file(robot, TDM_ORIGIN_RAW, &rm, err, sizeof err) != TDM_OK) {
            tdm_cli_error("bench load: %s", err);
            goto done;
        }
    } else {
        gen_env(&me);
        gen_robot(&mr);
        if (tdm_mesh_create(me.v, me.nv, me.t, me.nt, NULL, &em, err, sizeof err) != TDM_OK ||
            tdm_mesh_create(mr.v, mr.nv, mr.t, mr.nt, NULL, &rm, err, sizeof err) != TDM_OK) {
            tdm_cli_error("bench load: generating the scene: %s", err);
            goto done;
        }
    }
    /* the pool: translations in a box around the environment, uniform rotations */
    L.pool = pool;
    L.batch = batch;
    L.mode = mode_i ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL;
    L.poses = malloc(sizeof(double) * 7 * pool);
    L.want = malloc(sizeof *L.want * pool);
    xs = malloc(sizeof *xs * pool);
    if (!L.poses || !L.want || !xs) {
        tdm_cli_error("bench load: out of memory for a pool of %llu poses", (unsigned long long)pool);
        goto done;
    }
    float rad = tdm_mesh_radius(em);
    uint64_t rs = seed;
    for (size_t i = 0; i < pool; i++) {
        double *p = L.poses + 7 * i;
        for (int k = 0; k < 3; k++) p[k] = (2 * unit(&rs) - 1) * rad;
        double u1 = unit(&rs), u2 = unit(&rs), u3 = unit(&rs); /* Shoemake */
        double a = sqrt(1 - u1), b = sqrt(u1);
        tdm_quat q = {a * sin(2 * PI * u2), a * cos(2 * PI * u2), b * sin(2 * PI * u3), b * cos(2 * PI * u3)};
        double n = tdm_quat_norm(q);
        q.x /= n, q.y /= n, q.z /= n, q.w /= n;
        p[3] = q.x, p[4] = q.y, p[5] = q.z, p[6] = q.w;
        /* as tandemd reads a pose (daemon/request.c): the quaternion divided by its norm */
        double n2 = tdm_quat_norm(q);
        tdm_quat q2 = {q.x / n2, q.y / n2, q.z / n2, q.w / n2};
        xs[i] = tdm_xform_from_pose(tdm_d3(p[0], p[1], p[2]), q2);
    }
    /* the CPU engine's answers */
    tdm_sched_config sc = tdm_sched_config_default();
    sc.kind = TDM_BACKEND_CPU;
    sc.calibrate = 0;
    sc.lanes = 1;
    char why[320] = "";
    int rc;
    if ((rc = tdm_sched_create(&sc, &sched, why, sizeof why)) != TDM_OK) {
        tdm_cli_error("bench load: cannot start the CPU engine: %s", why[0] ? why : tdm_strerror(rc));
        goto done;
    }
    if (tdm_bvh_build(em, &eb) != TDM_OK || tdm_bvh_build(rm, &rb) != TDM_OK) {
        tdm_cli_error("bench load: building the meshes' trees failed");
        goto done;
    }
    if (tdm_sched_mesh_add(sched, eb) != TDM_OK) goto done;
    e_added = 1;
    if (tdm_sched_mesh_add(sched, rb) != TDM_OK) goto done;
    r_added = 1;
    const tdm_scene_obj objs[2] = {{0, eb, 0, tdm_xform_identity()}, {1, rb, 1, tdm_xform_identity()}};
    tdm_scene_error serr;
    if (tdm_scene_create(objs, 2, NULL, 0, &scene, &serr) != TDM_OK) {
        tdm_cli_error("bench load: making the scene failed: %s", serr.msg);
        goto done;
    }
    const tdm_sched_query proto = {scene, xs, mode_i ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1000000, NULL, NULL};
    if ((rc = tdm_sched_run_poses(sched, &proto, pool, L.want)) != TDM_OK) {
        tdm_cli_error("bench load: the CPU engine failed: %s", tdm_strerror(rc));
        goto done;
    }
    size_t colliding = 0;
    for (size_t i = 0; i < pool; i++) colliding += L.want[i].colliding;

    /* the servers, and the scene on each */
    for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char **na = realloc(L.addrs, (L.n_addrs + 1) * sizeof *na);
        if (!na) goto done;
        L.addrs = na;
        L.addrs[L.n_addrs++] = t;
    }
    if (!L.n_addrs) {
        tdm_cli_error("bench load: no server address");
        goto done;
    }
    L.scene_ids = calloc(L.n_addrs, sizeof *L.scene_ids);
    if (!L.scene_ids) goto done;
    for (size_t s = 0; s < L.n_addrs; s++) {
        tdm_client *c = tdm_cli_connect(L.addrs[s]);
        if (!c) goto done;
        uint8_t eid[TDM_ID_BYTES], rid[TDM_ID_BYTES];
        tdm_scene_object so[2] = {{.object_id = 0}, {.object_id = 1, .movable = 1}};
        int ok = tdm_mesh_put(c, "bench-load-env", em->verts, em->n_verts, em->tris, em->n_tris, eid, NULL) == 0 &&
                 tdm_mesh_put(c, "bench-load-robot", rm->verts, rm->n_verts, rm->tris, rm->n_tris, rid, NULL) == 0;
        if (ok) {
            memcpy(so[0].mesh_id, eid, TDM_ID_BYTES);
            memcpy(so[1].mesh_id, rid, TDM_ID_BYTES);
            ok = tdm_scene_put(c, "bench-load", so, 2, NULL, 0, L.scene_ids[s], NULL, NULL, 0, NULL) == 0;
        }
        uint32_t maxp = tdm_client_server_info(c)->limits.max_pipelined;
        if (maxp && inflight > maxp) inflight = maxp;
        if (!ok) tdm_cli_error("bench load: uploading the scene to %s: %s", L.addrs[s], tdm_client_errstr(c));
        tdm_client_free(c);
        if (!ok) goto done;
    }
    tdm_cli_error("bench load: %s scene, %u + %u triangles, %zu poses in the pool (%zu colliding), %llu per "
                  "request, %s mode",
                  env ? "file" : "generated", em->n_tris, rm->n_tris, pool, colliding, (unsigned long long)batch,
                  modes[mode_i]);

    /* the connections: `threads` loops, each with its share of the connections and the rate */
    L.opts = (tdm_connect_opts){.timeout_ms = 10000, .io_timeout_ms = (int)timeout_ms, .client_name = "tandem-bench-load",
                                .auth_token = getenv("TANDEM_AUTH_TOKEN")};
    L.duration_s = (double)dur;
    L.drain_s = (double)drain;
    L.max_inflight = (uint32_t)inflight;
    Ls = calloc(threads, sizeof *Ls);
    loops = calloc(threads, sizeof *loops);
    tids = calloc(threads, sizeof *tids);
    if (!Ls || !loops || !tids) {
        tdm_cli_error("bench load: out of memory");
        goto done;
    }
    for (size_t t = 0; t < threads; t++) {
        load *T = &Ls[t];
        *T = L;
        T->tid = (int)t;
        T->loop = &loops[t];
        uv_loop_init(T->loop);
        size_t a0 = conns * t / threads, a1 = conns * (t + 1) / threads;
        size_t i0 = idle * t / threads, i1 = idle * (t + 1) / threads;
        T->n_active = a1 - a0;
        T->n_idle = i1 - i0;
        T->n_conns = T->n_active + T->n_idle;
        T->connect_burst = (burst + threads - 1) / threads;
        T->rate = (double)rate * (double)T->n_active / (double)conns;
        T->rng = splitmix(&rs);
        T->conns = calloc(T->n_conns, sizeof *T->conns);
        if (!T->conns || grow_requests(T)) {
            tdm_cli_error("bench load: out of memory");
            goto done;
        }
        for (size_t i = 0; i < T->n_conns; i++)
            T->conns[i] = (lconn){.L = T, .index = i < T->n_active ? a0 + i : conns + i0 + (i - T->n_active),
                                  .idle = i >= T->n_active};
        uv_timer_init(T->loop, &T->tick);
        T->tick.data = T;
        uv_timer_start(&T->tick, on_tick, 1, 1);
        start_connects(T);
    }
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, load_main, &Ls[started]) != 0) {
            tdm_cli_error("bench load: cannot start a thread");
            goto done;
        }
    /* progress: once a second, the sums over the threads */
    {
        double next = 0;
        uint64_t last = 0;
        for (;;) {
            size_t n_done = 0;
            uint64_t sent = 0, ans = 0, errs = 0, mis = 0;
            double t0 = 0;
            for (size_t t = 0; t < threads; t++) {
                n_done += __atomic_load_n(&Ls[t].done, __ATOMIC_ACQUIRE) != 0;
                sent += __atomic_load_n(&Ls[t].sent, __ATOMIC_RELAXED);
                ans += __atomic_load_n(&Ls[t].answered, __ATOMIC_RELAXED);
                errs += __atomic_load_n(&Ls[t].errors, __ATOMIC_RELAXED);
                mis += __atomic_load_n(&Ls[t].mismatches, __ATOMIC_RELAXED);
                double t0t;
                __atomic_load(&Ls[t].t0_ms, &t0t, __ATOMIC_RELAXED);
                if (t0t > 0 && (t0 == 0 || t0t < t0)) t0 = t0t;
            }
            if (n_done == threads) break;
            if (progress && t0 > 0) {
                if (next == 0) next = t0 + 1000;
                if (now_ms() >= next) {
                    fprintf(stderr, "t=%.0f sent=%llu answered=%llu errors=%llu mismatches=%llu rps=%llu inflight=%llu\n",
                            (next - t0) / 1e3, (unsigned long long)sent, (unsigned long long)ans,
                            (unsigned long long)errs, (unsigned long long)mis, (unsigned long long)(ans - last),
                            (unsigned long long)(sent - ans - errs));
                    last = ans;
                    next += 1000;
                }
            }
            uv_sleep(20);
        }
    }
    for (size_t t = 0; t < started; t++) pthread_join(tids[t], NULL);
    started = 0;

    /* the sums */
    load S = {0};
    double t0 = 0, t_last = 0;
    size_t nl = 0, idle_held = 0;
    for (size_t t = 0; t < threads; t++) {
        load *T = &Ls[t];
        if (T->t0_ms == 0) goto done; /* its connections failed: said above */
        if (t0 == 0 || T->t0_ms < t0) t0 = T->t0_ms;
        if (T->t_last_ms > t_last) t_last = T->t_last_ms;
        S.sent += T->sent, S.answered += T->answered, S.errors += T->errors, S.mismatches += T->mismatches;
        S.duplicates += T->duplicates, S.behind += T->behind;
        idle_held += T->idle_held;
    }
    uint64_t missing = S.sent - S.answered - S.errors;
    double seconds = ((t_last > 0 ? t_last : now_ms()) - t0) / 1e3;
    /* latencies of the answered requests */
    float *lat = malloc((S.answered ? S.answered : 1) * sizeof *lat);
    for (size_t t = 0; lat && t < threads; t++)
        for (uint64_t k = 0; k < Ls[t].n_req; k++)
            if (Ls[t].req_state[k] == 1) lat[nl++] = Ls[t].lat[k];
    double p50 = 0, p99 = 0, p999 = 0;
    if (lat && nl) {
        qsort(lat, nl, sizeof *lat, cmp_float);
        p50 = lat[(size_t)(0.5 * (double)(nl - 1))];
        p99 = lat[(size_t)(0.99 * (double)(nl - 1))];
        p999 = lat[(size_t)(0.999 * (double)(nl - 1))];
    }
    free(lat);
    /* per connection: each request answered once */
    uint64_t sum_sent = 0, sum_ans = 0, sum_err = 0, min_ans = UINT64_MAX, max_ans = 0;
    for (size_t t = 0; t < threads; t++)
        for (size_t i = 0; i < Ls[t].n_active; i++) {
            const lconn *c = &Ls[t].conns[i];
            sum_sent += c->sent;
            sum_ans += c->answered;
            sum_err += c->errors;
            if (c->answered < min_ans) min_ans = c->answered;
            if (c->answered > max_ans) max_ans = c->answered;
        }
    fprintf(stderr,
            "bench load: per connection: answered %llu..%llu requests; sent %llu = answered %llu + errors %llu + "
            "missing %llu; idle connections held to the end: %zu of %zu; duplicates %llu; ticks behind schedule "
            "%llu\n",
            (unsigned long long)min_ans, (unsigned long long)max_ans, (unsigned long long)sum_sent,
            (unsigned long long)sum_ans, (unsigned long long)sum_err, (unsigned long long)missing, idle_held,
            (size_t)idle, (unsigned long long)S.duplicates, (unsigned long long)S.behind);
    printf("requests=%llu answered=%llu errors=%llu mismatches=%llu seconds=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f "
           "p999_ms=%.3f\n",
           (unsigned long long)S.sent, (unsigned long long)S.answered, (unsigned long long)(S.errors + missing),
           (unsigned long long)S.mismatches, seconds, seconds > 0 ? (double)S.answered / seconds : 0.0, p50, p99,
           p999);
    status = (S.errors || missing || S.mismatches || idle_held != idle) ? TDM_EXIT_FAIL : 0;
done:
    for (size_t t = 0; t < started; t++) pthread_join(tids[t], NULL); /* only after a failed start */
    for (size_t t = 0; Ls && t < threads; t++) {
        free(Ls[t].conns);
        free(Ls[t].t_send);
        free(Ls[t].lat);
        free(Ls[t].req_conn);
        free(Ls[t].req_state);
    }
    free(Ls);
    free(loops);
    free(tids);
    free(L.scene_ids);
    free(L.addrs);
    free(L.poses);
    free(L.want);
    free(xs);
    free(list);
    free(me.v), free(me.t), free(mr.v), free(mr.t);
    tdm_scene_destroy(scene);
    if (e_added) tdm_sched_mesh_remove(sched, eb);
    if (r_added) tdm_sched_mesh_remove(sched, rb);
    tdm_sched_destroy(sched);
    tdm_bvh_free(eb);
    tdm_bvh_free(rb);
    tdm_mesh_free(em);
    tdm_mesh_free(rm);
    return status;
}

int tdm_cmd_bench(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "load")) return bench_load(argc - 1, argv + 1);
    tdm_cli_error("bench: the subcommand is load (tandem bench load --help)");
    return TDM_EXIT_USAGE;
}
