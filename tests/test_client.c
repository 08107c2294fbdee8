/* libtandem against servers that misbehave or die (issue 14, points 9 and 10).
 *
 *   async_connect_timeout      a fake server that accepts and never answers Hello: the
 *                              connect callback gets TDM_CLIENT_ETIMEOUT once, after
 *                              timeout_ms and well before the test's bound
 *   async_request_timeout      a fake server that answers Hello and then nothing: the
 *                              oldest request's callback gets TDM_CLIENT_ETIMEOUT once,
 *                              the other one TDM_CLIENT_ECLOSED, the disconnect callback
 *                              TDM_CLIENT_ETIMEOUT, and errstr names the request
 *   async_no_timeout_by_default the same server, no io_timeout_ms: nothing fails in
 *                              400 ms; the free cancels the requests
 *   multi_*                    (further down) several servers: see there */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <tandem/adapters/libuv.h>
#include <tandem/tandem.h>

/* ---- a fake server ------------------------------------------------------------------------ */

typedef struct fake {
    int lfd, port;
    int answer_hello; /* 1: reply to the first frame with a HelloReply, then stay silent */
    pthread_t th;
    int cfd;
    char addr[64];
} fake;

static void *fake_main(void *arg)
{
    fake *f = arg;
    int c = accept(f->lfd, NULL, NULL);
    if (c < 0) return NULL;
    f->cfd = c;
    uint8_t buf[4096];
    if (f->answer_hello) {
        /* the Hello frame: 4-byte length, then that many bytes */
        size_t have = 0;
        while (have < 4) {
            ssize_t n = recv(c, buf + have, sizeof buf - have, 0);
            if (n <= 0) return NULL;
            have += (size_t)n;
        }
        uint32_t len = (uint32_t)buf[0] << 24 | (uint32_t)buf[1] << 16 | (uint32_t)buf[2] << 8 | buf[3];
        while (have < 4 + len) {
            ssize_t n = recv(c, buf + have, sizeof buf - have, 0);
            if (n <= 0) return NULL;
            have += (size_t)n;
        }
        /* Reply{id: 1, hello: HelloReply{protocol_version: 1}} */
        static const uint8_t reply[] = {0, 0, 0, 6, 0x08, 0x01, 0x52, 0x02, 0x08, 0x01};
        if (send(c, reply, sizeof reply, MSG_NOSIGNAL) != (ssize_t)sizeof reply) return NULL;
    }
    while (recv(c, buf, sizeof buf, 0) > 0) {
    }
    return NULL;
}

static void fake_start(fake *f, int answer_hello)
{
    memset(f, 0, sizeof *f);
    f->answer_hello = answer_hello;
    f->cfd = -1;
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(f->lfd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    cr_assert_eq(listen(f->lfd, 8), 0);
    socklen_t sl = sizeof sa;
    getsockname(f->lfd, (struct sockaddr *)&sa, &sl);
    f->port = ntohs(sa.sin_port);
    snprintf(f->addr, sizeof f->addr, "127.0.0.1:%d", f->port);
    cr_assert_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(fake *f)
{
    shutdown(f->lfd, SHUT_RDWR);
    if (f->cfd >= 0) shutdown(f->cfd, SHUT_RDWR);
    pthread_join(f->th, NULL);
    close(f->lfd);
    if (f->cfd >= 0) close(f->cfd);
}

/* ---- async timeouts ----------------------------------------------------------------------- */

typedef struct app {
    double t0;
    int connects, connect_status;
    double connect_ms;
    int disconnects, disconnect_status;
    int calls[2], status[2];
    double call_ms[2];
    char errstr[700];
    uint8_t scene[TDM_ID_BYTES];
    double poses[7];
    uv_loop_t *loop;
    uv_timer_t second, stop;
} app;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_connect(tdm_async *ac, int status)
{
    app *a = tdm_async_data(ac);
    a->connects++;
    a->connect_status = status;
    a->connect_ms = now_ms() - a->t0;
    if (status) snprintf(a->errstr, sizeof a->errstr, "%s", tdm_async_errstr(ac));
}

static void on_disconnect(tdm_async *ac, int status)
{
    app *a = tdm_async_data(ac);
    a->disconnects++;
    a->disconnect_status = status;
    snprintf(a->errstr, sizeof a->errstr, "%s", tdm_async_errstr(ac));
}

static void on_reply(tdm_async *ac, const tdm_reply *r, void *priv)
{
    app *a = tdm_async_data(ac);
    int k = (int)(intptr_t)priv;
    a->calls[k]++;
    a->status[k] = r->status;
    a->call_ms[k] = now_ms() - a->t0;
    cr_expect_eq(r->type, TDM_REPLY_NONE);
}

static void send_second(uv_timer_t *t)
{
    tdm_async *ac = t->data;
    app *a = tdm_async_data(ac);
    cr_assert_eq(tdm_async_query(ac, on_reply, (void *)(intptr_t)1, a->scene, TDM_QUERY_BOOL, a->poses, 1, 1, 0, 0,
                                 NULL),
                 0);
}

static void stop_loop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

static tdm_async *start(app *a, uv_loop_t *loop, const char *addr, int timeout_ms, int io_timeout_ms)
{
    memset(a, 0, sizeof *a);
    a->poses[6] = 1;
    a->loop = loop;
    a->t0 = now_ms();
    tdm_connect_opts o = {.addr = addr, .timeout_ms = timeout_ms, .io_timeout_ms = io_timeout_ms};
    tdm_async *ac = tdm_async_connect(&o);
    cr_assert(ac);
    cr_assert_eq(tdm_async_err(ac), 0, "%s", tdm_async_errstr(ac));
    tdm_async_set_data(ac, a);
    tdm_async_set_connect_cb(ac, on_connect);
    tdm_async_set_disconnect_cb(ac, on_disconnect);
    cr_assert_eq(tdm_libuv_attach(ac, loop), 0);
    return ac;
}

Test(client, async_connect_timeout)
{
    fake f;
    fake_start(&f, 0);
    uv_loop_t loop;
    uv_loop_init(&loop);
    app a;
    tdm_async *ac = start(&a, &loop, f.addr, 300, 0);
    /* a request queued before the handshake is failed with the connection */
    cr_assert_eq(tdm_async_stats(ac, on_reply, (void *)(intptr_t)0, NULL), 0);
    uv_run(&loop, UV_RUN_DEFAULT); /* returns once the context and its handles are gone */
    cr_assert_eq(a.connects, 1);
    cr_assert_eq(a.connect_status, TDM_CLIENT_ETIMEOUT, "status %d", a.connect_status);
    cr_assert_eq(a.disconnects, 0);
    cr_assert_eq(a.calls[0], 1);
    cr_assert_eq(a.status[0], TDM_CLIENT_ETIMEOUT);
    cr_assert(a.connect_ms >= 290 && a.connect_ms < 2000, "timed out after %.0f ms", a.connect_ms);
    cr_assert(strstr(a.errstr, "no Hello reply within 300 ms"), "errstr: %s", a.errstr);
    cr_assert(strstr(a.errstr, f.addr), "errstr: %s", a.errstr);
    uv_loop_close(&loop);
    fake_stop(&f);
}

Test(client, async_request_timeout)
{
    fake f;
    fake_start(&f, 1);
    uv_loop_t loop;
    uv_loop_init(&loop);
    app a;
    tdm_async *ac = start(&a, &loop, f.addr, 2000, 300);
    cr_assert_eq(tdm_async_query(ac, on_reply, (void *)(intptr_t)0, a.scene, TDM_QUERY_BOOL, a.poses, 1, 1, 0, 0, NULL),
                 0);
    uv_timer_init(&loop, &a.second);
    a.second.data = ac;
    uv_timer_start(&a.second, send_second, 100, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(a.connects, 1);
    cr_assert_eq(a.connect_status, 0);
    cr_assert_eq(a.calls[0], 1);
    cr_assert_eq(a.calls[1], 1);
    cr_assert_eq(a.status[0], TDM_CLIENT_ETIMEOUT, "status %d", a.status[0]);
    cr_assert_eq(a.status[1], TDM_CLIENT_ECLOSED, "status %d", a.status[1]);
    cr_assert(a.call_ms[0] >= 290 && a.call_ms[0] < 2000, "timed out after %.0f ms", a.call_ms[0]);
    cr_assert_eq(a.disconnects, 1);
    cr_assert_eq(a.disconnect_status, TDM_CLIENT_ETIMEOUT);
    cr_assert(strstr(a.errstr, "request 2 (Query) got no reply within 300 ms"), "errstr: %s", a.errstr);
    uv_close((uv_handle_t *)&a.second, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    fake_stop(&f);
}

Test(client, async_no_timeout_by_default)
{
    fake f;
    fake_start(&f, 1);
    uv_loop_t loop;
    uv_loop_init(&loop);
    app a;
    tdm_async *ac = start(&a, &loop, f.addr, 0, 0);
    cr_assert_eq(tdm_async_query(ac, on_reply, (void *)(intptr_t)0, a.scene, TDM_QUERY_BOOL, a.poses, 1, 1, 0, 0, NULL),
                 0);
    /* connected first (the fake's thread answers in its own time), then 400 ms with the query out */
    for (double t0 = now_ms(); !a.connects && now_ms() - t0 < 30000;) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (!a.connects) usleep(1000);
    }
    cr_assert_eq(a.connects, 1, "no HelloReply from the fake server in 30 s");
    uv_timer_init(&loop, &a.stop);
    uv_timer_start(&a.stop, stop_loop, 400, 0);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(a.connects, 1);
    cr_assert_eq(a.connect_status, 0);
    cr_assert_eq(a.calls[0], 0);
    cr_assert_eq(tdm_async_pending(ac), 1);
    tdm_async_free(ac);
    cr_assert_eq(a.calls[0], 1);
    cr_assert_eq(a.status[0], TDM_CLIENT_ECANCELED);
    cr_assert_eq(a.disconnects, 1);
    cr_assert_eq(a.disconnect_status, 0);
    uv_close((uv_handle_t *)&a.stop, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    fake_stop(&f);
}

/* The blocking client's two timeouts on the same fake servers, in the same words. */
Test(client, blocking_timeouts_say_the_same)
{
    fake f;
    fake_start(&f, 0);
    double t0 = now_ms();
    tdm_connect_opts o = {.addr = f.addr, .timeout_ms = 300};
    tdm_client *c = tdm_client_connect_with(&o);
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ETIMEOUT, "%s", tdm_client_errstr(c));
    cr_assert(now_ms() - t0 >= 290 && now_ms() - t0 < 2000);
    cr_assert(strstr(tdm_client_errstr(c), "no Hello reply within 300 ms") && strstr(tdm_client_errstr(c), f.addr),
              "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    fake_stop(&f);

    fake_start(&f, 1);
    o = (tdm_connect_opts){.addr = f.addr, .timeout_ms = 2000, .io_timeout_ms = 300};
    c = tdm_client_connect_with(&o);
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    tdm_stats st;
    t0 = now_ms();
    cr_assert_eq(tdm_stats_get(c, &st), TDM_CLIENT_ETIMEOUT);
    cr_assert(now_ms() - t0 >= 290 && now_ms() - t0 < 2000);
    cr_assert(strstr(tdm_client_errstr(c), "no answer from the server within 300 ms"), "%s", tdm_client_errstr(c));
    cr_assert_eq(tdm_client_err(c), TDM_CLIENT_ETIMEOUT);
    tdm_client_free(c);
    fake_stop(&f);
}

/* ---- several servers ---------------------------------------------------------------------- *
 *
 *   multi_survives_a_kill      three tandemd on loopback, a torus and two spheres uploaded
 *                              through tdm_multi (to all three), 40 batches of 600 contacts
 *                              queries spread over them; one daemon is stopped (SIGSTOP) before
 *                              batch 13 and SIGKILLed 200 ms into it, holding its part: every answer equals the single-server answer (the
 *                              result arrays are pre-filled with a sentinel, so a missing
 *                              answer shows), parts were re-sent; then the dead daemon is
 *                              started again on its port with an empty data directory: the
 *                              context reconnects after its backoff, replays the uploads
 *                              (the restarted daemon lists the scene) and uses it again; a
 *                              batch with pairs: the pairs joined in order equal one server's
 *   multi_all_down             every server gone: a call fails with TDM_CLIENT_ECONNECT
 *                              naming each address, promptly */

#include <signal.h>
#include <sys/wait.h>

#include "daemon_util.h"
#include "gen.h"
#include "geom/mesh.h"

#define N_BATCH 40
#define BATCH 600

typedef struct killer {
    pid_t pid;
    int after;
    pthread_t th;
} killer;

/* The daemon was stopped (SIGSTOP) before a batch was sent, so its part of the batch is
 * surely outstanding: killed 200 ms into that batch. */
static void *killer_main(void *arg)
{
    killer *k = arg;
    usleep(200 * 1000);
    kill(k->pid, SIGKILL);
    return NULL;
}

typedef struct world {
    uint8_t torus[TDM_ID_BYTES], sphere[TDM_ID_BYTES], scene[TDM_ID_BYTES];
    tdm_scene_object objs[3];
    double *poses; /* N_BATCH * BATCH * 2 poses */
} world;

static void put_world(tdm_multi *m, world *w)
{
    tdm_mesh *torus = gen_torus(1.5, 0.5, 32, 16), *sphere = gen_sphere(0.6, 16);
    int created = -1;
    cr_assert_eq(tdm_multi_mesh_put(m, "torus", torus->verts, torus->n_verts, torus->tris, torus->n_tris, w->torus,
                                    &created),
                 0, "%s", tdm_multi_errstr(m));
    cr_assert_eq(tdm_multi_mesh_put(m, "sphere", sphere->verts, sphere->n_verts, sphere->tris, sphere->n_tris,
                                    w->sphere, NULL),
                 0, "%s", tdm_multi_errstr(m));
    memset(w->objs, 0, sizeof w->objs);
    w->objs[0].object_id = 1;
    memcpy(w->objs[0].mesh_id, w->torus, TDM_ID_BYTES);
    for (int i = 1; i < 3; i++) {
        w->objs[i].object_id = (uint32_t)i + 1;
        memcpy(w->objs[i].mesh_id, w->sphere, TDM_ID_BYTES);
        w->objs[i].movable = 1;
    }
    uint32_t movable[3];
    size_t n_movable = 0;
    cr_assert_eq(tdm_multi_scene_put(m, "two spheres", w->objs, 3, NULL, 0, w->scene, NULL, movable, 3, &n_movable), 0,
                 "%s", tdm_multi_errstr(m));
    cr_assert_eq(n_movable, 2);
    tdm_mesh_free(torus);
    tdm_mesh_free(sphere);
    gen_rng r = {gen_seed(0x3e77)};
    size_t n = (size_t)N_BATCH * BATCH * 2;
    w->poses = malloc(n * 7 * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        gen_pose p = gen_pose_in_ball(&r, (tdm_dvec3){0, 0, 0}, 2.3);
        double *d = w->poses + 7 * i;
        d[0] = p.t.x, d[1] = p.t.y, d[2] = p.t.z, d[3] = p.q.x, d[4] = p.q.y, d[5] = p.q.z, d[6] = p.q.w;
    }
}

Test(client, multi_survives_a_kill, .timeout = 240)
{
    dmn d[3];
    const char *addrs[3];
    for (int i = 0; i < 3; i++) {
        dmn_init(&d[i], "multi");
        dmn_start(&d[i], NULL);
        addrs[i] = d[i].tcp_addr;
    }
    tdm_connect_opts o = {.timeout_ms = 5000, .client_name = "test-multi"};
    tdm_multi *m = tdm_multi_connect(addrs, 3, &o);
    cr_assert(m);
    cr_assert_eq(tdm_multi_err(m), 0, "%s", tdm_multi_errstr(m));
    tdm_multi_set_retry(m, 50, 200);
    world w;
    put_world(m, &w);

    /* the single-server answers, from daemon 0 alone */
    tdm_client *c = tdm_client_connect(d[0].tcp_addr, 5000);
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    tdm_query_result *want = malloc(sizeof *want * N_BATCH * BATCH), *got = malloc(sizeof *got * N_BATCH * BATCH);
    for (int b = 0; b < N_BATCH; b++)
        cr_assert_eq(tdm_query(c, w.scene, TDM_QUERY_CONTACTS, w.poses + (size_t)b * BATCH * 14, 2, BATCH, 0,
                               want + (size_t)b * BATCH, NULL),
                     0, "%s", tdm_client_errstr(c));
    tdm_client_free(c);
    size_t colliding = 0;
    for (size_t i = 0; i < (size_t)N_BATCH * BATCH; i++) colliding += want[i].colliding;
    cr_assert(colliding > N_BATCH * BATCH / 10 && colliding < N_BATCH * BATCH * 9 / 10, "colliding %zu", colliding);

    memset(got, 0xff, sizeof *got * N_BATCH * BATCH);
    killer k = {d[1].pid, N_BATCH / 3, 0};
    for (int b = 0; b < N_BATCH; b++) {
        if (b == k.after) { /* daemon 1 holds its part of this batch when it is killed */
            kill(k.pid, SIGSTOP);
            cr_assert_eq(pthread_create(&k.th, NULL, killer_main, &k), 0);
        }
        cr_assert_eq(tdm_multi_query(m, w.scene, TDM_QUERY_CONTACTS, w.poses + (size_t)b * BATCH * 14, 2, BATCH, 0,
                                     got + (size_t)b * BATCH, NULL),
                     0, "batch %d: %s", b, tdm_multi_errstr(m));
        if (b == k.after) pthread_join(k.th, NULL);
    }
    int st;
    cr_assert_eq(waitpid(d[1].pid, &st, 0), d[1].pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    d[1].pid = 0;
    for (size_t i = 0; i < (size_t)N_BATCH * BATCH; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding, "query %zu", i);
        cr_assert_eq(got[i].contacts, want[i].contacts, "query %zu", i);
        cr_assert_eq(got[i].truncated, want[i].truncated, "query %zu", i);
        cr_assert_eq(got[i].n_pairs, 0, "query %zu", i);
    }
    cr_assert_geq(tdm_multi_resent(m), 1, "no part was re-sent");
    const char *addr, *why;
    cr_assert_eq(tdm_multi_server_state(m, 1, &addr, &why), 0);
    cr_assert_str_eq(addr, d[1].tcp_addr);
    cr_assert(why[0], "a down server says why");

    /* back on the same address with nothing stored: reconnected after the backoff, the
     * uploads replayed before it gets queries */
    remove_tree(d[1].data_dir);
    d[1].fixed_port = d[1].port;
    dmn_start(&d[1], NULL);
    usleep(300 * 1000);
    memset(got, 0xff, sizeof *got * BATCH);
    /* the backoff doubled while the daemon was down (a GPU engine calibrates itself at start-up,
       which takes a while): queries go on meanwhile, until it is back, 20 s at most */
    for (int rep = 0; rep < 5 || (tdm_multi_server_state(m, 1, NULL, &why) != 1 && rep < 200); rep++) {
        cr_assert_eq(tdm_multi_query(m, w.scene, TDM_QUERY_CONTACTS, w.poses, 2, BATCH, 0, got, NULL), 0, "%s",
                     tdm_multi_errstr(m));
        if (rep >= 5) usleep(100 * 1000);
    }
    cr_assert_eq(tdm_multi_server_state(m, 1, NULL, &why), 1, "server 1 not back: %s", why);
    for (size_t i = 0; i < BATCH; i++) cr_assert_eq(got[i].contacts, want[i].contacts, "query %zu", i);
    /* pairs: gathered per part and joined in query order, first_pair shifted */
    {
        size_t cap = 200000;
        tdm_pairs pw = {malloc(cap * sizeof(tdm_contact)), cap, 0}, pg = {malloc(cap * sizeof(tdm_contact)), cap, 0};
        tdm_query_result *rw = malloc(sizeof *rw * BATCH), *rg = malloc(sizeof *rg * BATCH);
        c = tdm_client_connect(d[0].tcp_addr, 5000);
        cr_assert_eq(tdm_query(c, w.scene, TDM_QUERY_CONTACTS, w.poses, 2, BATCH, 1000, rw, &pw), 0, "%s",
                     tdm_client_errstr(c));
        tdm_client_free(c);
        cr_assert_eq(tdm_multi_query(m, w.scene, TDM_QUERY_CONTACTS, w.poses, 2, BATCH, 1000, rg, &pg), 0, "%s",
                     tdm_multi_errstr(m));
        cr_assert(pw.count > 0 && pw.count <= cap);
        cr_assert_eq(pg.count, pw.count);
        for (size_t i = 0; i < BATCH; i++) {
            cr_assert_eq(rg[i].n_pairs, rw[i].n_pairs, "query %zu", i);
            cr_assert_eq(rg[i].first_pair, rw[i].first_pair, "query %zu", i);
        }
        cr_assert(!memcmp(pg.data, pw.data, pw.count * sizeof(tdm_contact)), "the pairs differ");
        free(pw.data), free(pg.data), free(rw), free(rg);
    }
    c = tdm_client_connect(d[1].tcp_addr, 5000);
    cr_assert_eq(tdm_client_err(c), 0, "%s", tdm_client_errstr(c));
    tdm_scene_info *scenes;
    size_t n_scenes;
    cr_assert_eq(tdm_scene_list(c, &scenes, &n_scenes), 0);
    cr_assert_eq(n_scenes, 1);
    cr_assert(!memcmp(scenes[0].scene_id, w.scene, TDM_ID_BYTES));
    tdm_scene_list_free(scenes);
    tdm_client_free(c);

    tdm_multi_free(m);
    free(want);
    free(got);
    free(w.poses);
    for (int i = 0; i < 3; i++) dmn_cleanup(&d[i]);
}

Test(client, multi_all_down, .timeout = 60)
{
    dmn d[2];
    const char *addrs[2];
    for (int i = 0; i < 2; i++) {
        dmn_init(&d[i], "multidown");
        dmn_start(&d[i], NULL);
        addrs[i] = d[i].tcp_addr;
    }
    char list[200];
    snprintf(list, sizeof list, "%s,%s", addrs[0], addrs[1]);
    tdm_connect_opts o = {.addr = list, .timeout_ms = 2000};
    tdm_multi *m = tdm_multi_connect(NULL, 0, &o);
    cr_assert_eq(tdm_multi_err(m), 0, "%s", tdm_multi_errstr(m));
    cr_assert_eq(tdm_multi_servers(m), 2);
    world w;
    put_world(m, &w);
    for (int i = 0; i < 2; i++) dmn_stop(&d[i], SIGKILL);
    tdm_query_result res[4];
    double t0 = now_ms();
    cr_assert_eq(tdm_multi_query(m, w.scene, TDM_QUERY_BOOL, w.poses, 2, 4, 0, res, NULL), TDM_CLIENT_ECONNECT);
    cr_assert(now_ms() - t0 < 3000);
    cr_assert(strstr(tdm_multi_errstr(m), addrs[0]) && strstr(tdm_multi_errstr(m), addrs[1]), "%s",
              tdm_multi_errstr(m));
    tdm_multi_free(m);
    free(w.poses);
    for (int i = 0; i < 2; i++) dmn_cleanup(&d[i]);
}

/* ---- tandem bench load ---------------------------------------------------------------------- *
 *
 *   bench_load_counts_every_request  `tandem bench load` against a tandemd for 2 s at 300
 *                              requests/s over 8 connections and 50 idle ones: the last line
 *                              has the exact fields, requests = answered = 600 (the schedule's
 *                              count), no error nor mismatch, exit 0; and again on two daemons
 *                              (a list) from two event loops (--threads 2): the same
 *   bench_load_fd_limit        1000 idle connections under a hard descriptor limit of 256:
 *                              exit 1 and a message naming the limit */

#include <sys/resource.h>

#include "spawn.h"

#ifndef TANDEM_BIN
#error "TANDEM_BIN must be defined by the build"
#endif

/* Runs the tool (fd_limit > 0: under that descriptor limit, soft and hard); its output. */
static char *run_bench(const char *const *argv, int *status, int fd_limit)
{
    char out_path[] = "/tmp/tandem-bench-XXXXXX";
    int fd = mkstemp(out_path);
    cr_assert_geq(fd, 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd_limit > 0) {
            struct rlimit rl = {(rlim_t)fd_limit, (rlim_t)fd_limit};
            setrlimit(RLIMIT_NOFILE, &rl);
        }
        execv(TANDEM_BIN, (char *const *)argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    size_t len;
    char *text = gen_read_file(out_path, &len);
    close(fd);
    unlink(out_path);
    return text;
}

static void expect_line(const char *text, unsigned long long requests)
{
    const char *line = strstr(text, "\nrequests=");
    cr_assert(line, "no result line in:\n%s", text);
    unsigned long long n, a, e, m;
    double s, r, p50, p99, p999;
    cr_assert_eq(sscanf(line + 1,
                        "requests=%llu answered=%llu errors=%llu mismatches=%llu seconds=%lf rps=%lf p50_ms=%lf "
                        "p99_ms=%lf p999_ms=%lf",
                        &n, &a, &e, &m, &s, &r, &p50, &p99, &p999),
                 9, "%s", line);
    cr_assert_eq(n, requests, "%s", text);
    cr_assert_eq(a, requests, "%s", text);
    cr_assert_eq(e, 0);
    cr_assert_eq(m, 0);
    cr_assert(s > 1.5 && s < 4, "%s", line);
    cr_assert(p50 > 0 && p50 <= p99 && p99 <= p999, "%s", line);
    cr_assert(strstr(text, "idle connections held to the end: 50 of 50"), "%s", text);
}

Test(client, bench_load_counts_every_request, .timeout = 120)
{
    dmn d[2];
    for (int i = 0; i < 2; i++) {
        dmn_init(&d[i], "bench");
        dmn_start(&d[i], NULL);
    }
    int st;
    const char *argv1[] = {TANDEM_BIN, "bench", "load", "--server", d[0].tcp_addr, "--connections", "8", "--rate",
                           "300", "--duration", "2", "--idle", "50", "--mode", "contacts", NULL};
    char *text = run_bench(argv1, &st, 0);
    cr_assert_eq(st, 0, "%s", text);
    expect_line(text, 600);
    free(text);
    char list[160];
    snprintf(list, sizeof list, "%s,%s", d[0].tcp_addr, d[1].tcp_addr);
    const char *argv2[] = {TANDEM_BIN, "bench", "load", "--server", list, "--connections", "8", "--rate", "300",
                           "--duration", "2", "--idle", "50", "--threads", "2", NULL};
    text = run_bench(argv2, &st, 0);
    cr_assert_eq(st, 0, "%s", text);
    expect_line(text, 600);
    free(text);
    for (int i = 0; i < 2; i++) dmn_cleanup(&d[i]);
}

Test(client, bench_load_fd_limit)
{
    int st;
    const char *argv[] = {TANDEM_BIN, "bench", "load", "--server", "127.0.0.1:9", "--idle", "1000", NULL};
    char *text = run_bench(argv, &st, 256);
    cr_assert_eq(st, 1, "%s", text);
    cr_assert(strstr(text, "file descriptors, but the limit is"), "%s", text);
    free(text);
}

/* ---- several servers, robots ------------------------------------------------------------------ *
 *
 *   multi_robots               tests/arm_fixture.h's arm through tdm_multi on two daemons: the
 *                              bar mesh, the robot and its planning scene stored on both (the
 *                              same ids as one server gives); 12 batches of 250 configurations
 *                              (contacts) and of 40 motions, daemon 1 SIGKILLed after batch 4:
 *                              every answer (colliding, contacts, first colliding state, state
 *                              count, last free state) equals daemon 0's alone */

#include "arm_fixture.h"

#define RB 12
#define RQ 250
#define RM 40

/* Two daemons (named `name`, started with flags[i], which may be NULL) behind one tdm_multi,
 * with bar.obj (read here: 8 vertices, 12 triangles, 1-based in the file) stored on both as
 * bar's mesh. */
static tdm_multi *two_with_bar(dmn d[2], const char *name, const char *const *flags[2], tdm_robot_mesh_ref *bar)
{
    const char *addrs[2];
    for (int i = 0; i < 2; i++) {
        dmn_init(&d[i], name);
        dmn_start(&d[i], flags[i]);
        addrs[i] = d[i].tcp_addr;
    }
    tdm_connect_opts o = {.timeout_ms = 5000};
    tdm_multi *m = tdm_multi_connect(addrs, 2, &o);
    cr_assert_eq(tdm_multi_err(m), 0, "%s", tdm_multi_errstr(m));
    float v[24];
    uint32_t t[36];
    uint32_t nv = 0, nt = 0;
    for (const char *p = bar_obj; *p; p = strchr(p, '\n') + 1) {
        if (p[0] == 'v') {
            cr_assert_lt(nv, 8);
            cr_assert_eq(sscanf(p, "v %f %f %f", &v[3 * nv], &v[3 * nv + 1], &v[3 * nv + 2]), 3);
            nv++;
        } else if (p[0] == 'f') {
            cr_assert_lt(nt, 12);
            cr_assert_eq(sscanf(p, "f %u %u %u", &t[3 * nt], &t[3 * nt + 1], &t[3 * nt + 2]), 3);
            for (int k = 0; k < 3; k++) t[3 * nt + k]--;
            nt++;
        }
    }
    *bar = (tdm_robot_mesh_ref){.filename = "meshes/bar.obj"};
    cr_assert_eq(tdm_multi_mesh_put(m, "bar", v, nv, t, nt, bar->mesh_id, NULL), 0, "%s", tdm_multi_errstr(m));
    return m;
}

Test(client, multi_robots, .timeout = 120)
{
    dmn d[2];
    const char *const *no_flags[2] = {NULL, NULL};
    tdm_robot_mesh_ref ref;
    tdm_multi *m = two_with_bar(d, "multirobot", no_flags, &ref);
    uint8_t robot[TDM_ID_BYTES], scene[TDM_ID_BYTES], robot1[TDM_ID_BYTES], scene1[TDM_ID_BYTES];
    cr_assert_eq(tdm_multi_robot_put(m, "arm", urdf_text, srdf_text, &ref, 1, robot, NULL), 0, "%s",
                 tdm_multi_errstr(m));
    cr_assert_eq(tdm_multi_robot_scene_put(m, "test", robot, scene_text, scene, NULL), 0, "%s", tdm_multi_errstr(m));
    /* daemon 0 alone: the same ids, and the reference answers */
    tdm_client *c = tdm_client_connect(d[0].tcp_addr, 5000);
    cr_assert_eq(tdm_client_err(c), 0);
    cr_assert_eq(tdm_robot_put(c, "arm", urdf_text, srdf_text, &ref, 1, robot1, NULL, NULL), 0);
    cr_assert_eq(tdm_robot_scene_put(c, "test", robot1, scene_text, scene1, NULL, NULL), 0);
    cr_assert(!memcmp(robot, robot1, TDM_ID_BYTES) && !memcmp(scene, scene1, TDM_ID_BYTES));
    gen_rng g = {gen_seed(0xa11)};
    double *q = malloc(sizeof(double) * RB * RQ * 3), *mo = malloc(sizeof(double) * RB * RM * 6);
    for (size_t i = 0; i < (size_t)RB * RQ; i++) arm_fixture_random_config(&g, q + 3 * i);
    for (size_t i = 0; i < (size_t)RB * RM * 2; i++) arm_fixture_random_config(&g, mo + 3 * i);
    tdm_query_result *want = malloc(sizeof *want * RB * RQ), *got = malloc(sizeof *got * RB * RQ);
    int64_t wk[RB * RM], gk[RB * RM];
    uint64_t wn[RB * RM], gn[RB * RM];
    double *wl = calloc((size_t)RB * RM * 3, sizeof(double)), *gl = calloc((size_t)RB * RM * 3, sizeof(double));
    for (int b = 0; b < RB; b++) {
        cr_assert_eq(tdm_query_configs(c, scene, TDM_QUERY_CONTACTS, q + (size_t)b * RQ * 3, 3, RQ, 0,
                                       want + (size_t)b * RQ, NULL),
                     0, "%s", tdm_client_errstr(c));
        cr_assert_eq(tdm_motion_check(c, scene, 0.05, mo + (size_t)b * RM * 6, 3, RM, wk + b * RM, wn + b * RM,
                                      wl + (size_t)b * RM * 3),
                     0, "%s", tdm_client_errstr(c));
    }
    tdm_client_free(c);
    memset(got, 0xff, sizeof *got * RB * RQ);
    memset(gk, 0x7f, sizeof gk);
    for (int b = 0; b < RB; b++) {
        if (b == 4) {
            cr_assert(WIFSIGNALED(dmn_stop(&d[1], SIGKILL)));
        }
        cr_assert_eq(tdm_multi_query_configs(m, scene, TDM_QUERY_CONTACTS, q + (size_t)b * RQ * 3, 3, RQ, 0,
                                             got + (size_t)b * RQ, NULL),
                     0, "batch %d: %s", b, tdm_multi_errstr(m));
        cr_assert_eq(tdm_multi_motion_check(m, scene, 0.05, mo + (size_t)b * RM * 6, 3, RM, gk + b * RM, gn + b * RM,
                                            gl + (size_t)b * RM * 3),
                     0, "batch %d: %s", b, tdm_multi_errstr(m));
    }
    size_t colliding = 0, hit = 0;
    for (size_t i = 0; i < (size_t)RB * RQ; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding, "config %zu", i);
        cr_assert_eq(got[i].contacts, want[i].contacts, "config %zu", i);
        colliding += want[i].colliding;
    }
    for (size_t i = 0; i < (size_t)RB * RM; i++) {
        cr_assert_eq(gk[i], wk[i], "motion %zu", i);
        cr_assert_eq(gn[i], wn[i], "motion %zu", i);
        hit += wk[i] > 0;
        for (int k = 0; k < 3; k++) cr_assert_eq(gl[3 * i + k], wl[3 * i + k], "motion %zu", i);
    }
    cr_assert(colliding > 0 && colliding < (size_t)RB * RQ, "colliding %zu", colliding);
    cr_assert(hit > 0, "no motion collides after its start");
    cr_assert_geq(tdm_multi_resent(m), 1);
    tdm_multi_free(m);
    free(q), free(mo), free(want), free(got), free(wl), free(gl);
    for (int i = 0; i < 2; i++) dmn_cleanup(&d[i]);
}

/* A child of fork() holds its parent's connection: its calls fail (EINVAL, naming fork) instead of
 * mixing frames with the parent's, and the parent's connection, over the socket or through rings,
 * goes on as before. */
Test(client, a_forked_child_cannot_use_its_parents_connection, .timeout = 60)
{
    dmn d;
    dmn_init(&d, "fork");
    dmn_start(&d, NULL);
    for (int ring = 0; ring < 2; ring++) {
        const char *how = ring ? "through rings" : "over TCP";
        tdm_client *c = tdm_client_connect(ring ? d.unix_addr : d.tcp_addr, 5000);
        cr_assert_eq(tdm_client_err(c), 0, "%s: %s", how, tdm_client_errstr(c));
        if (ring) cr_assert_eq(tdm_client_ring(c, 0, 0), 0, "%s", tdm_client_errstr(c));
        tdm_stats st;
        cr_assert_eq(tdm_stats_get(c, &st), 0, "%s: %s", how, tdm_client_errstr(c));
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
            int rc = tdm_stats_get(c, &st);
            int ok = rc == TDM_CLIENT_EINVAL && strstr(tdm_client_errstr(c), "fork()") != NULL &&
                     tdm_stats_get(c, &st) == TDM_CLIENT_EINVAL && tdm_client_err(c) == TDM_CLIENT_EINVAL;
            if (!ok) fprintf(stderr, "child %s: rc %d: %s\n", how, rc, tdm_client_errstr(c));
            tdm_client_free(c);
            _exit(ok ? 0 : 1);
        }
        int status = 0;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "%s: the child used its parent's connection (exit status %d)", how, status);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(tdm_stats_get(c, &st), 0, "%s: the parent after its child's call: %s", how,
                         tdm_client_errstr(c));
        cr_assert_eq(tdm_client_ring_open(c), ring);
        tdm_client_free(c);
    }
    /* the same for several servers behind one context (here one daemon's two listeners) */
    const char *addrs[2] = {d.tcp_addr, d.unix_addr};
    tdm_connect_opts o = {.timeout_ms = 5000, .client_name = "test-fork"};
    tdm_multi *m = tdm_multi_connect(addrs, 2, &o);
    cr_assert(m);
    cr_assert_eq(tdm_multi_err(m), 0, "%s", tdm_multi_errstr(m));
    static const float v[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    static const uint32_t t[3] = {0, 1, 2};
    uint8_t id[TDM_ID_BYTES];
    cr_assert_eq(tdm_multi_mesh_put(m, "tri", v, 3, t, 1, id, NULL), 0, "%s", tdm_multi_errstr(m));
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int rc = tdm_multi_mesh_put(m, "tri", v, 3, t, 1, id, NULL);
        int ok = rc == TDM_CLIENT_EINVAL && strstr(tdm_multi_errstr(m), "fork()") != NULL;
        if (!ok) fprintf(stderr, "child, tdm_multi: rc %d: %s\n", rc, tdm_multi_errstr(m));
        tdm_multi_free(m);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child used its parent's tdm_multi (status %d)",
              status);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tdm_multi_mesh_put(m, "tri", v, 3, t, 1, id, NULL), 0,
                     "the parent's tdm_multi after its child: %s", tdm_multi_errstr(m));
    tdm_multi_free(m);
    dmn_cleanup(&d);
}

/* tdm_multi cuts a batch's parts by the servers' max_query_tasks over the scene's checked pairs
 * (a robot scene's from its put's reply, a scene's bounded by its movable objects)
 * and by max_reply_pairs with pairs, not only by max_queries: two daemons whose limits hold a few
 * configurations (or 50 poses) a request answer batches of 300 as one daemon does in small ones. */
Test(client, multi_parts_follow_max_query_tasks, .timeout = 120)
{
    dmn d[2];
    static const char *const f0[] = {"--max-query-tasks", "100", "--max-reply-pairs", "2000", NULL};
    static const char *const f1[] = {"--max-query-tasks", "50", "--max-reply-pairs", "100", NULL};
    const char *const *flags[2] = {f0, f1};
    tdm_robot_mesh_ref ref;
    tdm_multi *m = two_with_bar(d, "multitasks", flags, &ref);
    uint8_t robot[TDM_ID_BYTES], scene[TDM_ID_BYTES], rigid[TDM_ID_BYTES];
    cr_assert_eq(tdm_multi_robot_put(m, "arm", urdf_text, srdf_text, &ref, 1, robot, NULL), 0, "%s",
                 tdm_multi_errstr(m));
    cr_assert_eq(tdm_multi_robot_scene_put(m, "test", robot, scene_text, scene, NULL), 0, "%s", tdm_multi_errstr(m));
    /* a rigid scene of three bars, one movable, the fixed pair allowed (not checked anyway) and one
       movable pair allowed: one checked pair a pose (two by the bound tdm_multi cuts by) */
    tdm_scene_object objs[3] = {{.object_id = 7, .movable = 1}, {.object_id = 2}, {.object_id = 5}};
    for (int k = 0; k < 3; k++) memcpy(objs[k].mesh_id, ref.mesh_id, TDM_ID_BYTES);
    objs[1].has_pose = objs[2].has_pose = 1;
    const double far[7] = {0, 0, 5, 0, 0, 0, 1}, near[7] = {0, 0, 0, 0, 0, 0, 1};
    memcpy(objs[1].pose, near, sizeof near);
    memcpy(objs[2].pose, far, sizeof far);
    tdm_object_pair allowed[2] = {{5, 2}, {5, 7}};
    uint32_t movable[3];
    size_t n_movable = 0;
    cr_assert_eq(tdm_multi_scene_put(m, "bars", objs, 3, allowed, 2, rigid, NULL, movable, 3, &n_movable), 0, "%s",
                 tdm_multi_errstr(m));
    tdm_client *c = tdm_client_connect(d[1].tcp_addr, 5000);
    cr_assert_eq(tdm_client_err(c), 0);
    gen_rng g = {gen_seed(0x7a5)};
    enum { N = 300 };
    double q[N * 3], poses[N * 7];
    for (size_t i = 0; i < N; i++) {
        arm_fixture_random_config(&g, q + 3 * i);
        for (int k = 0; k < 3; k++) poses[7 * i + k] = gen_range(&g, -0.5, 0.5);
        poses[7 * i + 3] = poses[7 * i + 4] = poses[7 * i + 5] = 0, poses[7 * i + 6] = 1;
    }
    tdm_query_result want[N], got[N];
    /* the reference: one daemon, in requests small enough for it */
    for (size_t lo = 0; lo < N; lo += 2) {
        cr_assert_eq(tdm_query_configs(c, scene, TDM_QUERY_BOOL, q + 3 * lo, 3, 2, 0, want + lo, NULL), 0, "%s",
                     tdm_client_errstr(c));
    }
    /* one request of them all is over the limit */
    cr_assert_neq(tdm_query_configs(c, scene, TDM_QUERY_BOOL, q, 3, N, 0, got, NULL), 0);
    cr_assert_eq(tdm_client_server_error(c)->code, TDM_SERVER_LIMIT, "%s", tdm_client_errstr(c));
    memset(got, 0xff, sizeof got);
    cr_assert_eq(tdm_multi_query_configs(m, scene, TDM_QUERY_BOOL, q, 3, N, 0, got, NULL), 0, "%s",
                 tdm_multi_errstr(m));
    size_t colliding = 0;
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding, "configuration %zu", i);
        colliding += want[i].colliding;
    }
    cr_assert(colliding > 0 && colliding < N, "%zu of %d configurations collide", colliding, N);
    /* the rigid scene: 300 poses, in parts of at most 50 / 2; with pairs, of 100 / 8 */
    for (size_t lo = 0; lo < N; lo += 25)
        cr_assert_eq(tdm_query(c, rigid, TDM_QUERY_BOOL, poses + 7 * lo, 1, 25, 0, want + lo, NULL), 0, "%s",
                     tdm_client_errstr(c));
    cr_assert_eq(tdm_multi_query(m, rigid, TDM_QUERY_BOOL, poses, 1, N, 0, got, NULL), 0, "%s", tdm_multi_errstr(m));
    colliding = 0;
    for (size_t i = 0; i < N; i++) {
        cr_assert_eq(got[i].colliding, want[i].colliding, "pose %zu", i);
        colliding += want[i].colliding;
    }
    cr_assert(colliding > 0 && colliding < N, "%zu of %d poses collide", colliding, N);
    tdm_pairs pairs = {malloc(sizeof(tdm_contact) * N * 8), N * 8, 0};
    cr_assert_not_null(pairs.data);
    cr_assert_eq(tdm_multi_query(m, rigid, TDM_QUERY_CONTACTS, poses, 1, N, 8, got, &pairs), 0, "%s",
                 tdm_multi_errstr(m));
    for (size_t i = 0; i < N; i++) cr_assert_eq(got[i].colliding, want[i].colliding, "pose %zu (contacts)", i);
    cr_assert(pairs.count > 0 && pairs.count <= pairs.cap, "%zu pairs", pairs.count);
    free(pairs.data);
    tdm_client_free(c);
    tdm_multi_free(m);
    for (int i = 0; i < 2; i++) dmn_cleanup(&d[i]);
}
