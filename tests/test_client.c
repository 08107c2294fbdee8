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
