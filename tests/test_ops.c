/* daemon/metrics.c, http.c, heartbeat.c: tandemd's operations endpoint and its
 * systemd readiness, against a real tandemd (daemon_util.h).
 *
 *   metrics_count_requests_exactly  a known sequence of requests (some answered, some
 *                                   refused) on two connections, then GET /metrics:
 *                                   every request, error, latency and batch counter and
 *                                   the gauges have their exact values; /healthz and
 *                                   /readyz answer 200; unknown paths 404, POST 405
 *   notify_ready_after_listening    NOTIFY_SOCKET pointed at a datagram socket of the
 *                                   test: READY=1 comes once, and at that moment both
 *                                   listeners accept and /readyz is 200; STOPPING=1
 *                                   comes on SIGTERM, and tandemd exits 0
 *   metrics_listen_is_checked       a malformed --metrics-listen fails start-up, naming it
 *   ring_connections_are_counted    two raw clients open shared-memory rings (RingOpen), one
 *                                   is refused (TCP): tandem_ring_connections is 2 and
 *                                   tandem_ring_memory_bytes their two mappings; idle past
 *                                   --ring-park-us, both parked (tandem_ring_connections_parked
 *                                   2), a doorbell brings one back (1); 1 and one mapping once
 *                                   one of them hangs up, 0 at the end
 *   healthz_fails_while_the_loop_is_stalled
 *                                   the loop thread stopped (ptrace): /healthz and /readyz
 *                                   503 after health-loop-timeout, 200 once it runs again
 *   gpu_failure_unready_exit_3_restart_reloads
 *                                   (GPU only) a real sticky CUDA error: /readyz 503, exit
 *                                   3, the restart reloads; or, without the exit, serving
 *
 * The HTTP client is a plain socket speaking HTTP/1.0. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon_util.h"
#include "gen.h"

static dmn D;

static void suite_init(void) { dmn_init(&D, "ops"); }
static void suite_fini(void) { dmn_cleanup(&D); }

TestSuite(ops, .init = suite_init, .fini = suite_fini, .timeout = 120);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static size_t lines_starting(const char *text, const char *prefix)
{
    size_t k = 0, n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, prefix, n)) k++;
    return k;
}

static void expect_metric(const char *text, const char *series, double want)
{
    double v = metric_value(text, series);
    cr_expect(v == want, "%s is %g, expected %g", series, v, want);
}

/* ---- requests ---- */

static Tandem__V1__Reply *call(int fd, Tandem__V1__Request *rq)
{
    Tandem__V1__Reply *rep = raw_call_or_fail(fd, rq);
    return rep;
}

static void put_mesh(int fd, uint64_t id, const tdm_mesh *m, uint8_t mesh_id[32])
{
    Tandem__V1__MeshPut mp = TANDEM__V1__MESH_PUT__INIT;
    mp.name = "box";
    mp.n_vertices = 3 * (size_t)m->n_verts;
    mp.vertices = m->verts;
    mp.n_triangles = 3 * (size_t)m->n_tris;
    mp.triangles = m->tris;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_MESH_PUT;
    rq.mesh_put = &mp;
    Tandem__V1__Reply *rep = call(fd, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_MESH_PUT, "MeshPut answered with case %d", rep->body_case);
    cr_assert_eq(rep->mesh_put->mesh_id.len, 32);
    memcpy(mesh_id, rep->mesh_put->mesh_id.data, 32);
    tandem__v1__reply__free_unpacked(rep, NULL);
}

static void put_scene_as(int fd, uint64_t id, const uint8_t mesh_id[32], uint8_t scene_id[32], int ephemeral)
{
    Tandem__V1__SceneObject o[2] = {TANDEM__V1__SCENE_OBJECT__INIT, TANDEM__V1__SCENE_OBJECT__INIT};
    Tandem__V1__SceneObject *op[2] = {&o[0], &o[1]};
    for (int k = 0; k < 2; k++) {
        o[k].object_id = (uint32_t)k + 1;
        o[k].mesh_id.data = (uint8_t *)mesh_id;
        o[k].mesh_id.len = 32;
        o[k].movable = k == 1;
    }
    Tandem__V1__ScenePut sp = TANDEM__V1__SCENE_PUT__INIT;
    sp.name = "two boxes";
    sp.n_objects = 2;
    sp.objects = op;
    sp.ephemeral = ephemeral != 0;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_SCENE_PUT;
    rq.scene_put = &sp;
    Tandem__V1__Reply *rep = call(fd, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_SCENE_PUT, "ScenePut answered with case %d", rep->body_case);
    memcpy(scene_id, rep->scene_put->scene_id.data, 32);
    tandem__v1__reply__free_unpacked(rep, NULL);
}

static void put_scene(int fd, uint64_t id, const uint8_t mesh_id[32], uint8_t scene_id[32])
{
    put_scene_as(fd, id, mesh_id, scene_id, 0);
}

/* n poses of the movable box: x = 0, 10, 20... (the first overlaps the fixed box). */
static Tandem__V1__Reply *query(int fd, uint64_t id, const uint8_t scene_id[32], size_t n)
{
    double poses[7 * 8] = {0};
    cr_assert(n <= 8);
    for (size_t i = 0; i < n; i++) {
        poses[7 * i] = 10.0 * (double)i;
        poses[7 * i + 6] = 1;
    }
    Tandem__V1__Query q = TANDEM__V1__QUERY__INIT;
    q.scene_id.data = (uint8_t *)scene_id;
    q.scene_id.len = 32;
    q.mode = TANDEM__V1__MODE__MODE_BOOL;
    q.n_poses = 7 * n;
    q.poses = poses;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = id;
    rq.body_case = TANDEM__V1__REQUEST__BODY_QUERY;
    rq.query = &q;
    return call(fd, &rq);
}

Test(ops, metrics_count_requests_exactly)
{
    dmn_start(&D, (const char *const[]){"--metrics-listen", "127.0.0.1:0", "--metrics-interval", "50", "--engine",
                                        "cpu", NULL});
    int port = dmn_metrics_port(&D);
    char *body;

    cr_assert_eq(http_call(port, "GET", "/healthz", &body), 200, "/healthz: %s", body ? body : "(no answer)");
    cr_expect_str_eq(body, "ok\n");
    free(body);
    cr_assert_eq(http_call(port, "GET", "/readyz", &body), 200, "/readyz: %s", body ? body : "(no answer)");
    cr_expect_str_eq(body, "ready\n");
    free(body);
    cr_expect_eq(http_call(port, "GET", "/nothing", &body), 404);
    free(body);
    cr_expect_eq(http_call(port, "POST", "/metrics", &body), 405);
    free(body);

    /* before any request: every request counter is 0 and no error is counted */
    cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
    expect_metric(body, "tandem_requests_total{type=\"hello\"}", 0);
    expect_metric(body, "tandem_requests_total{type=\"query\"}", 0);
    cr_expect_eq(lines_starting(body, "tandem_errors_total{"), 0, "errors before any request:\n%s", body);
    free(body);
    /* dmn_start's two probe connections (TCP and Unix) are accepted by the loop whenever it gets
       to them, and published at the next heartbeat: the count to start from is the one that has
       stopped moving with no connection open (under load the first snapshot may predate them) */
    double accepted0 = -1;
    for (int tries = 0; tries < 100; tries++) {
        cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
        double a = metric_value(body, "tandem_connections_accepted_total");
        int idle = metric_value(body, "tandem_connections{state=\"authenticated\"}") == 0 &&
                   metric_value(body, "tandem_connections{state=\"unauthenticated\"}") == 0;
        free(body);
        if (idle && a == accepted0) break;
        accepted0 = a;
        sleep_ms(150); /* three metrics intervals */
    }
    cr_assert(accepted0 >= 2, "the probes' connections were never counted (%g)", accepted0);

    /* connection A: Hello, two MeshPuts (one refused), a ScenePut, three Queries (one refused) */
    int a = raw_connect(D.tcp_addr);
    cr_assert(a >= 0);
    raw_hello_or_fail(a, 1);
    tdm_mesh *box = gen_box(0.5, 0.5, 0.5);
    cr_assert(box);
    uint8_t mesh_id[32], scene_id[32];
    put_mesh(a, 2, box, mesh_id);
    uint32_t bad_tris[3] = {0, 1, 99};
    tdm_mesh bad = {box->n_verts, 1, box->verts, bad_tris};
    Tandem__V1__MeshPut mp = TANDEM__V1__MESH_PUT__INIT;
    mp.n_vertices = 3 * (size_t)bad.n_verts;
    mp.vertices = bad.verts;
    mp.n_triangles = 3;
    mp.triangles = bad.tris;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = 3;
    rq.body_case = TANDEM__V1__REQUEST__BODY_MESH_PUT;
    rq.mesh_put = &mp;
    Tandem__V1__Reply *rep = call(a, &rq);
    expect_error(rep, "a triangle index past the vertices", 3, TANDEM__V1__ERROR_CODE__ERROR_BAD_INDEX, "triangles",
                 INT64_MIN);
    tandem__v1__reply__free_unpacked(rep, NULL);
    put_scene(a, 4, mesh_id, scene_id);
    rep = query(a, 5, scene_id, 1);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_QUERY);
    cr_assert_eq(rep->query->n_results, 1);
    cr_expect(rep->query->results[0]->colliding, "the boxes overlap at the identity");
    tandem__v1__reply__free_unpacked(rep, NULL);
    uint8_t unknown[32] = {7};
    rep = query(a, 6, unknown, 1);
    expect_error(rep, "an unknown scene", 6, TANDEM__V1__ERROR_CODE__ERROR_UNKNOWN_SCENE, "scene_id", INT64_MIN);
    tandem__v1__reply__free_unpacked(rep, NULL);
    rep = query(a, 7, scene_id, 3);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_QUERY);
    cr_assert_eq(rep->query->n_results, 3);
    cr_expect(rep->query->results[0]->colliding && !rep->query->results[1]->colliding &&
              !rep->query->results[2]->colliding);
    tandem__v1__reply__free_unpacked(rep, NULL);

    /* connection B never says Hello: a MeshList is refused, an undecodable frame too */
    int b = raw_connect(D.tcp_addr);
    cr_assert(b >= 0);
    Tandem__V1__MeshList ml = TANDEM__V1__MESH_LIST__INIT;
    Tandem__V1__Request rl = TANDEM__V1__REQUEST__INIT;
    rl.id = 8;
    rl.body_case = TANDEM__V1__REQUEST__BODY_MESH_LIST;
    rl.mesh_list = &ml;
    rep = call(b, &rl);
    expect_error(rep, "a request before Hello", 8, TANDEM__V1__ERROR_CODE__ERROR_UNAUTHENTICATED, "hello", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);
    const uint8_t garbage[3] = {0xff, 0xff, 0xff};
    cr_assert_eq(raw_send_frame(b, garbage, sizeof garbage), 0);
    char err[256] = "";
    cr_assert_eq(raw_recv(b, 10000, &rep, err, sizeof err), RAW_REPLY, "%s", err);
    expect_error(rep, "an undecodable frame", 0, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST, "frame", -1);
    tandem__v1__reply__free_unpacked(rep, NULL);

    /* the gauges come with the loop's next heartbeat (every 50 ms here) */
    double t0 = now_s();
    for (;;) {
        cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
        if (metric_value(body, "tandem_queries_total") == 4 &&
            metric_value(body, "tandem_connections{state=\"unauthenticated\"}") == 1 &&
            metric_value(body, "tandem_stored{kind=\"scene\"}") == 1)
            break;
        cr_assert(now_s() - t0 < 10, "the gauges did not catch up within 10 s:\n%s", body);
        free(body);
        sleep_ms(20);
    }

    expect_metric(body, "tandem_requests_total{type=\"hello\"}", 1);
    expect_metric(body, "tandem_requests_total{type=\"mesh_put\"}", 2);
    expect_metric(body, "tandem_requests_total{type=\"scene_put\"}", 1);
    expect_metric(body, "tandem_requests_total{type=\"query\"}", 3);
    expect_metric(body, "tandem_requests_total{type=\"mesh_list\"}", 1);
    expect_metric(body, "tandem_requests_total{type=\"stats\"}", 0);
    expect_metric(body, "tandem_requests_total{type=\"motion_check\"}", 0);

    expect_metric(body, "tandem_errors_total{type=\"mesh_put\",code=\"BAD_INDEX\"}", 1);
    expect_metric(body, "tandem_errors_total{type=\"query\",code=\"UNKNOWN_SCENE\"}", 1);
    expect_metric(body, "tandem_errors_total{type=\"mesh_list\",code=\"UNAUTHENTICATED\"}", 1);
    expect_metric(body, "tandem_errors_total{type=\"undecodable\",code=\"BAD_REQUEST\"}", 1);
    cr_expect_eq(lines_starting(body, "tandem_errors_total{"), 4, "other errors counted:\n%s", body);

    /* one latency per request answered, under its type; the buckets are cumulative */
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"hello\"}", 1);
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"mesh_put\"}", 2);
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"scene_put\"}", 1);
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"query\"}", 3);
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"mesh_list\"}", 1);
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"undecodable\"}", 1);
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"stats\"}", 0);
    expect_metric(body, "tandem_request_duration_seconds_bucket{type=\"query\",le=\"+Inf\"}", 3);
    double q_sum = metric_value(body, "tandem_request_duration_seconds_sum{type=\"query\"}");
    cr_expect(q_sum > 0 && q_sum < 30, "query latency sum %g s", q_sum);
    double le10 = metric_value(body, "tandem_request_duration_seconds_bucket{type=\"query\",le=\"10\"}");
    double le1ms = metric_value(body, "tandem_request_duration_seconds_bucket{type=\"query\",le=\"0.001\"}");
    cr_expect(le1ms <= le10 && le10 <= 3, "buckets not cumulative: %g > %g", le1ms, le10);

    /* two engine runs (the queries went one at a time): 1 and 3 queries, one task each */
    expect_metric(body, "tandem_batch_jobs_count", 2);
    expect_metric(body, "tandem_batch_jobs_sum", 2);
    expect_metric(body, "tandem_batch_queries_sum", 4);
    expect_metric(body, "tandem_batch_queries_bucket{le=\"1\"}", 1);
    expect_metric(body, "tandem_batch_queries_bucket{le=\"4\"}", 2);
    expect_metric(body, "tandem_batch_tasks_sum", 4);
    expect_metric(body, "tandem_engine_queries_total{engine=\"cpu\"}", 4);
    expect_metric(body, "tandem_engine_queries_total{engine=\"gpu\"}", 0);
    expect_metric(body, "tandem_engine_tasks_total{engine=\"cpu\"}", 4);
    expect_metric(body, "tandem_engine_runs_total", 2);
    expect_metric(body, "tandem_gpu_failed", 0);
    expect_metric(body, "tandem_queries_total", 4);

    expect_metric(body, "tandem_connections_accepted_total", accepted0 + 2);
    expect_metric(body, "tandem_connections_refused_total", 0);
    expect_metric(body, "tandem_connections{state=\"authenticated\"}", 1);
    expect_metric(body, "tandem_connections{state=\"unauthenticated\"}", 1);
    expect_metric(body, "tandem_ring_connections", 0);
    expect_metric(body, "tandem_stored{kind=\"mesh\"}", 1);
    expect_metric(body, "tandem_stored{kind=\"scene\"}", 1);
    expect_metric(body, "tandem_stored{kind=\"robot\"}", 0);
    expect_metric(body, "tandem_pooler_jobs", 0);
    expect_metric(body, "tandem_pooler_owners", 0);
    expect_metric(body, "tandem_writer_ops", 0);
    expect_metric(body, "tandem_ready", 1);
    expect_metric(body, "tandem_build_info{version=\"" TDM_VERSION "\",engine_configured=\"cpu\",engine=\"cpu\"}", 1);
    double up = metric_value(body, "tandem_uptime_seconds");
    cr_expect(up > 0 && up < 120, "uptime %g", up);
    double age = metric_value(body, "tandem_heartbeat_age_seconds");
    cr_expect(age >= 0 && age < 5, "heartbeat age %g", age);
    /* every sample line belongs to a family announced by # TYPE */
    cr_expect_eq(lines_starting(body, "# TYPE tandem_request_duration_seconds histogram"), 1);
    free(body);

    /* the Stats request agrees with the metrics on what both count */
    Tandem__V1__StatsRequest sr = TANDEM__V1__STATS_REQUEST__INIT;
    Tandem__V1__Request rs = TANDEM__V1__REQUEST__INIT;
    rs.id = 9;
    rs.body_case = TANDEM__V1__REQUEST__BODY_STATS;
    rs.stats = &sr;
    rep = call(a, &rs);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_STATS);
    cr_expect_eq(rep->stats->requests, 9, "Stats counts %llu requests", (unsigned long long)rep->stats->requests);
    cr_expect_eq(rep->stats->errors, 4);
    cr_expect_eq(rep->stats->queries, 4);
    tandem__v1__reply__free_unpacked(rep, NULL);
    cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
    expect_metric(body, "tandem_requests_total{type=\"stats\"}", 1);
    expect_metric(body, "tandem_request_duration_seconds_count{type=\"stats\"}", 1);
    free(body);

    /* SIGTERM: /readyz fails at once, while the open connections drain */
    kill(D.pid, SIGTERM);
    int status;
    double t1 = now_s();
    while ((status = http_call(port, "GET", "/readyz", &body)) == 200) {
        free(body);
        cr_assert(now_s() - t1 < 10, "/readyz still 200 %.1f s after SIGTERM (the drain lasts up to 30 s)",
                  now_s() - t1);
        sleep_ms(5);
    }
    cr_expect_eq(status, 503);
    cr_expect(body && strstr(body, "shutting down"), "/readyz during shutdown: %s", body ? body : "(no answer)");
    free(body);
    close(a);
    close(b);
    tdm_mesh_free(box);
    cr_expect_eq(dmn_stop(&D, 0), 0); /* it goes by itself */
}

/* ---- systemd readiness ---- */

/* Reads one datagram within timeout_ms into buf (NUL-terminated). 1, or 0 on timeout. */
static int recv_notify(int fd, char *buf, size_t cap, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) return 0;
    ssize_t n = recv(fd, buf, cap - 1, 0);
    if (n < 0) return 0;
    buf[n] = 0;
    return 1;
}

static int has_line(const char *msg, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = msg; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, line, n) && (p[n] == '\n' || p[n] == 0)) return 1;
    return 0;
}

Test(ops, notify_ready_after_listening)
{
    char path[300];
    snprintf(path, sizeof path, "%s/notify.sock", D.root);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    cr_assert(strlen(path) < sizeof sa.sun_path);
    strcpy(sa.sun_path, path);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0, "bind %s: %s", path, strerror(errno));

    setenv("NOTIFY_SOCKET", path, 1);
    dmn_spawn(&D, (const char *const[]){"--metrics-listen", "127.0.0.1:0", "--engine", "cpu", NULL});
    unsetenv("NOTIFY_SOCKET");

    char msg[1024];
    double t0 = now_s();
    for (;;) { /* READY=1 is the first message; anything before it would have to be a STATUS */
        cr_assert(recv_notify(fd, msg, sizeof msg, 60000), "no READY=1 within 60 s");
        if (has_line(msg, "READY=1")) break;
        cr_assert(!strncmp(msg, "STATUS=", 7), "unexpected notification before READY=1: %s", msg);
    }
    /* at READY=1, without waiting: both listeners accept and answer, and /readyz says so */
    int tcp = raw_connect(D.tcp_addr);
    cr_assert(tcp >= 0, "READY=1 came before the TCP listener accepted");
    raw_hello_or_fail(tcp, 1);
    int ux = raw_connect(D.unix_addr);
    cr_assert(ux >= 0, "READY=1 came before the Unix listener accepted");
    raw_hello_or_fail(ux, 1);
    char *body;
    cr_assert_eq(http_call(dmn_metrics_port(&D), "GET", "/readyz", &body), 200, "/readyz at READY=1: %s",
                 body ? body : "(no answer)");
    free(body);
    cr_expect(now_s() - t0 < 60);
    close(tcp);
    close(ux);

    /* a graceful stop says STOPPING=1 first, and exits 0 */
    kill(D.pid, SIGTERM);
    int stopping = 0;
    while (!stopping && recv_notify(fd, msg, sizeof msg, 10000)) stopping = has_line(msg, "STOPPING=1");
    cr_expect(stopping, "no STOPPING=1 after SIGTERM");
    int st = dmn_stop(&D, 0);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit status %d", st);
    close(fd);
}

/* Polls /metrics until `series` reads `want` (10 s at most: the gauges come with the heartbeat). */
static void wait_metric(int port, const char *series, double want)
{
    double t0 = now_s();
    for (;;) {
        char *body;
        cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
        double v = metric_value(body, series);
        if (v == want) {
            free(body);
            return;
        }
        cr_assert(now_s() - t0 < 10, "%s is %g, not %g, after 10 s:\n%s", series, v, want, body);
        free(body);
        sleep_ms(20);
    }
}

Test(ops, ring_connections_are_counted)
{
    /* one loop for every connection: the TCP client's requests turn the loop the rings are on */
    dmn_start(&D, (const char *const[]){"--metrics-listen", "127.0.0.1:0", "--metrics-interval", "50", "--engine",
                                        "cpu", "--io-threads", "0", "--ring-park-us", "100000", NULL});
    int port = dmn_metrics_port(&D);
    wait_metric(port, "tandem_ring_connections", 0);
    wait_metric(port, "tandem_ring_memory_bytes", 0);
    /* two on the Unix socket get rings (the memfd the reply carries is dropped by a plain recv: the
       server's side is what is counted), one on TCP is refused */
    int fds[3] = {raw_connect(D.unix_addr), raw_connect(D.unix_addr), raw_connect(D.tcp_addr)};
    for (int i = 0; i < 3; i++) {
        cr_assert(fds[i] >= 0);
        raw_hello_or_fail(fds[i], 1);
        Tandem__V1__RingOpen ro = TANDEM__V1__RING_OPEN__INIT;
        Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
        rq.id = 2;
        rq.body_case = TANDEM__V1__REQUEST__BODY_RING_OPEN;
        rq.ring_open = &ro;
        Tandem__V1__Reply *rep = call(fds[i], &rq);
        if (i < 2) {
            cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_RING_OPEN, "connection %d: reply body %d", i,
                         (int)rep->body_case);
            cr_assert_eq(rep->ring_open->bytes, 256u << 10);
        } else {
            expect_error(rep, "RingOpen over TCP", 2, TANDEM__V1__ERROR_CODE__ERROR_BAD_REQUEST, "ring_open", -1);
        }
        tandem__v1__reply__free_unpacked(rep, NULL);
    }
    const double pair = 4096 + 2 * (256 << 10); /* a mapping: its header and two 256 KiB rings */
    wait_metric(port, "tandem_ring_connections", 2);
    wait_metric(port, "tandem_ring_memory_bytes", 2 * pair);
    wait_metric(port, "tandem_ring_connections_parked", 0);
    /* idle past --ring-park-us: the next turn of the loop parks them (the TCP client's requests
       turn it) */
    sleep_ms(200);
    Tandem__V1__StatsRequest st = TANDEM__V1__STATS_REQUEST__INIT;
    Tandem__V1__Request srq = TANDEM__V1__REQUEST__INIT;
    srq.id = 3;
    srq.body_case = TANDEM__V1__REQUEST__BODY_STATS;
    srq.stats = &st;
    tandem__v1__reply__free_unpacked(call(fds[2], &srq), NULL);
    wait_metric(port, "tandem_ring_connections_parked", 2);
    /* a doorbell (a byte on the socket) brings the first back */
    cr_assert_eq(write(fds[0], "", 1), 1);
    wait_metric(port, "tandem_ring_connections_parked", 1);
    close(fds[0]);
    wait_metric(port, "tandem_ring_connections", 1);
    wait_metric(port, "tandem_ring_memory_bytes", pair);
    close(fds[1]);
    close(fds[2]);
    wait_metric(port, "tandem_ring_connections", 0);
    wait_metric(port, "tandem_ring_connections_parked", 0);
    wait_metric(port, "tandem_ring_memory_bytes", 0);
}

/* Ephemeral scenes are counted apart, among the stored scenes, and leave the count with their delete. */
Test(ops, ephemeral_scenes_are_counted)
{
    dmn_start(&D, (const char *const[]){"--metrics-listen", "127.0.0.1:0", "--metrics-interval", "50", "--engine",
                                        "cpu", NULL});
    int port = dmn_metrics_port(&D);
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    tdm_mesh *box = gen_box(0.5, 0.5, 0.5);
    uint8_t mesh_id[32], stored[32], eph[32];
    put_mesh(fd, 2, box, mesh_id);
    put_scene_as(fd, 3, mesh_id, stored, 0);
    put_scene_as(fd, 4, mesh_id, eph, 1);
    cr_assert(memcmp(stored, eph, 32) != 0);
    wait_metric(port, "tandem_stored{kind=\"scene\"}", 2);
    wait_metric(port, "tandem_scenes_ephemeral", 1);
    Tandem__V1__SceneDelete sd = TANDEM__V1__SCENE_DELETE__INIT;
    sd.scene_id.data = eph;
    sd.scene_id.len = 32;
    Tandem__V1__Request rq = TANDEM__V1__REQUEST__INIT;
    rq.id = 5;
    rq.body_case = TANDEM__V1__REQUEST__BODY_SCENE_DELETE;
    rq.scene_delete = &sd;
    Tandem__V1__Reply *rep = call(fd, &rq);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_SCENE_DELETE, "SceneDelete answered with case %d",
                 rep->body_case);
    tandem__v1__reply__free_unpacked(rep, NULL);
    wait_metric(port, "tandem_scenes_ephemeral", 0);
    wait_metric(port, "tandem_stored{kind=\"scene\"}", 1);
    close(fd);
    tdm_mesh_free(box);
    cr_expect_eq(dmn_stop(&D, SIGTERM), 0);
}

Test(ops, metrics_listen_is_checked)
{
    int st;
    cr_assert_eq(dmn_try_start(&D, (const char *const[]){"--metrics-listen", "localhost", NULL}, &st), -1);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) != 0);
    char *log = dmn_log(&D);
    cr_expect(strstr(log, "metrics-listen localhost: expected HOST:PORT") != NULL, "log:\n%s", log);
    free(log);
}

/* ---- a GPU that fails for good ---- */

static char *readyz(int port, int *status)
{
    char *body = NULL;
    *status = http_call(port, "GET", "/readyz", &body);
    return body;
}

/* Starts tandemd on one GPU engine (one lane, on the first GPU: on a host with several,
 * tandemd would make one engine a GPU, and the queries would take turns between them) with
 * TDM_GPU_FAULT_AFTER=fault (NULL: none): that lane's chunk number `fault` writes through a
 * null pointer, a real sticky CUDA error. 0, or -1 where there is no GPU engine. */
static int start_gpu(const char *fault, const char *exit_on_failure)
{
    if (fault) setenv("TDM_GPU_FAULT_AFTER", fault, 1);
    int st;
    int rc = dmn_try_start(&D, (const char *const[]){"--engine", "gpu", "--gpu-devices", "0", "--engine-lanes", "1",
                                                     "--metrics-listen", "127.0.0.1:0", "--metrics-interval", "50",
                                                     "--exit-on-gpu-failure", exit_on_failure, NULL},
                           &st);
    unsetenv("TDM_GPU_FAULT_AFTER");
    return rc;
}

/* The three answers of query(.., 3): the first pose overlaps, the others are apart. */
static void expect_right_answers(int fd, uint64_t id, const uint8_t scene_id[32], const char *what)
{
    Tandem__V1__Reply *rep = query(fd, id, scene_id, 3);
    cr_assert_eq(rep->body_case, TANDEM__V1__REPLY__BODY_QUERY, "%s: reply case %d (%s)", what, rep->body_case,
                 rep->body_case == TANDEM__V1__REPLY__BODY_ERROR ? rep->error->message : "");
    cr_assert_eq(rep->query->n_results, 3);
    cr_expect(rep->query->results[0]->colliding && !rep->query->results[1]->colliding &&
                  !rep->query->results[2]->colliding,
              "%s: wrong answers", what);
    tandem__v1__reply__free_unpacked(rep, NULL);
}

/* The engine's second chunk hits a sticky error: the query is still answered right (on
 * the CPU engine), /readyz turns 503 at once, and tandemd exits 3 after its graceful
 * shutdown; a restart on the same directory loads everything and is ready, on the GPU.
 * With --exit-on-gpu-failure 0 it keeps serving, not ready. Skipped without a GPU. */
Test(ops, gpu_failure_unready_exit_3_restart_reloads)
{
    if (start_gpu("1", "1") != 0) cr_skip_test("no GPU engine here (--engine gpu does not start)");
    int port = dmn_metrics_port(&D);
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    tdm_mesh *box = gen_box(0.5, 0.5, 0.5);
    uint8_t mesh_id[32], scene_id[32];
    put_mesh(fd, 2, box, mesh_id);
    put_scene(fd, 3, mesh_id, scene_id);
    expect_right_answers(fd, 4, scene_id, "before the fault");
    int status;
    char *body = readyz(port, &status);
    cr_assert_eq(status, 200, "/readyz before the fault: %s", body ? body : "(no answer)");
    free(body);

    expect_right_answers(fd, 5, scene_id, "the chunk that faults");
    double t0 = now_s();
    for (;;) { /* the next heartbeat (50 ms); tandemd lingers for our connection meanwhile */
        body = readyz(port, &status);
        if (status == 503) break;
        free(body);
        cr_assert(now_s() - t0 < 2, "/readyz still answers %d after the GPU failed", status);
        sleep_ms(10);
    }
    cr_expect(strstr(body, "the GPU failed") != NULL, "/readyz says: %s", body);
    free(body);
    close(fd);
    int st = dmn_stop(&D, 0); /* it goes by itself: wait for it */
    char *log = dmn_log(&D);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 3, "exit status %d; log:\n%s", st, log);
    cr_expect(strstr(log, "the GPU failed for good") != NULL, "log:\n%s", log);
    free(log);

    /* the supervisor's restart: everything loaded again, ready, on the GPU */
    cr_assert_eq(start_gpu(NULL, "1"), 0);
    port = dmn_metrics_port(&D);
    body = readyz(port, &status);
    cr_expect_eq(status, 200, "/readyz after the restart: %s", body ? body : "(no answer)");
    free(body);
    fd = raw_connect(D.tcp_addr);
    raw_hello_or_fail(fd, 1);
    expect_right_answers(fd, 2, scene_id, "after the restart");
    /* the engine's figures come with the next heartbeat */
    t0 = now_s();
    for (;;) {
        cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
        double gpu = metric_value(body, "tandem_engine_queries_total{engine=\"gpu\"}");
        if (gpu == 3) break;
        cr_assert(now_s() - t0 < 2, "%g queries answered on the GPU after the restart, expected 3:\n%s", gpu, body);
        free(body);
        sleep_ms(20);
    }
    cr_expect_eq(metric_value(body, "tandem_gpu_failed"), 0);
    free(body);
    close(fd);
    cr_expect_eq(dmn_stop(&D, SIGTERM), 0);

    /* without the exit: still serving (on the CPU), not ready, the failure in the metrics */
    cr_assert_eq(start_gpu("0", "0"), 0);
    port = dmn_metrics_port(&D);
    fd = raw_connect(D.tcp_addr);
    raw_hello_or_fail(fd, 1);
    expect_right_answers(fd, 2, scene_id, "the first chunk, which faults");
    t0 = now_s();
    for (;;) {
        body = readyz(port, &status);
        if (status == 503) break;
        free(body);
        cr_assert(now_s() - t0 < 5, "/readyz still answers %d after the GPU failed", status);
        sleep_ms(10);
    }
    free(body);
    sleep_ms(300);
    cr_assert(dmn_running(&D), "tandemd exited with --exit-on-gpu-failure 0");
    expect_right_answers(fd, 3, scene_id, "after the fault");
    cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
    cr_expect_eq(metric_value(body, "tandem_gpu_failed"), 1);
    cr_expect_eq(metric_value(body, "tandem_ready"), 0);
    free(body);
    close(fd);
    cr_expect_eq(dmn_stop(&D, SIGTERM), 0);
    tdm_mesh_free(box);
}

/* Two GPU engines on one GPU (--gpu-devices 0,0), each lane's first chunk faulting: the
 * first query's engine fails and its query is answered by the CPU engine; the next query
 * goes to the other engine (which fails too: engines on one GPU share its CUDA context),
 * and from then on the CPU engine answers. Every answer right, both engines counted as
 * failed, not ready. Skipped without a GPU. */
Test(ops, gpu_failure_of_one_engine_moves_runs_to_the_other)
{
    setenv("TDM_GPU_FAULT_AFTER", "0", 1);
    int st;
    int rc = dmn_try_start(&D, (const char *const[]){"--engine", "gpu", "--gpu-devices", "0,0", "--engine-lanes", "1",
                                                     "--metrics-listen", "127.0.0.1:0", "--metrics-interval", "50",
                                                     "--exit-on-gpu-failure", "0", NULL},
                           &st);
    unsetenv("TDM_GPU_FAULT_AFTER");
    if (rc != 0) cr_skip_test("no GPU engine here (--engine gpu does not start)");
    int port = dmn_metrics_port(&D);
    int fd = raw_connect(D.tcp_addr);
    cr_assert(fd >= 0);
    raw_hello_or_fail(fd, 1);
    tdm_mesh *box = gen_box(0.5, 0.5, 0.5);
    uint8_t mesh_id[32], scene_id[32];
    put_mesh(fd, 2, box, mesh_id);
    put_scene(fd, 3, mesh_id, scene_id);
    char *body = NULL;
    double t0 = now_s();
    for (;;) { /* the gauges of the next heartbeat */
        cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
        if (metric_value(body, "tandem_gpu_engines") == 2) break;
        cr_assert(now_s() - t0 < 2, "two GPU engines expected:\n%s", body);
        free(body);
        sleep_ms(20);
    }
    cr_expect_eq(metric_value(body, "tandem_gpu_engines_failed"), 0);
    cr_expect_eq(metric_value(body, "tandem_ready"), 1);
    free(body);
    expect_right_answers(fd, 4, scene_id, "engine 0's faulting chunk");
    expect_right_answers(fd, 5, scene_id, "engine 1, on the poisoned context");
    expect_right_answers(fd, 6, scene_id, "no engine left: the CPU engine");
    t0 = now_s();
    for (;;) { /* the figures come with the next heartbeat */
        cr_assert_eq(http_call(port, "GET", "/metrics", &body), 200);
        if (metric_value(body, "tandem_gpu_engines_failed") == 2) break;
        cr_assert(now_s() - t0 < 2, "both engines should count as failed:\n%s", body);
        free(body);
        sleep_ms(20);
    }
    cr_expect_eq(metric_value(body, "tandem_gpu_failed"), 1);
    cr_expect_eq(metric_value(body, "tandem_ready"), 0);
    cr_expect_eq(metric_value(body, "tandem_engine_queries_total{engine=\"cpu\"}"), 9, "every query on the CPU engine");
    free(body);
    close(fd);
    cr_assert(dmn_running(&D), "tandemd exited with --exit-on-gpu-failure 0");
    cr_expect_eq(dmn_stop(&D, SIGTERM), 0);
    char *log = dmn_log(&D);
    cr_expect(strstr(log, "later runs on the other GPU engines") != NULL, "the first failure should say where runs go:\n%s",
              log);
    free(log);
    tdm_mesh_free(box);
}

/* ---- a stalled event loop ---- */

/* The loop thread alone is stopped (ptrace stops one thread; the HTTP thread goes on):
 * once it has not published for health-loop-timeout, /healthz and /readyz answer 503;
 * when it runs again, 200. Skipped where this process may not trace its child. */
Test(ops, healthz_fails_while_the_loop_is_stalled)
{
    dmn_start(&D, (const char *const[]){"--metrics-listen", "127.0.0.1:0", "--metrics-interval", "50",
                                        "--health-loop-timeout", "1", "--engine", "cpu", NULL});
    int port = dmn_metrics_port(&D);
    char *body;
    cr_assert_eq(http_call(port, "GET", "/healthz", &body), 200);
    free(body);
    pid_t loop_thread = D.pid; /* the main thread runs the loop */
    if (ptrace(PTRACE_SEIZE, loop_thread, 0, 0) != 0) cr_skip_test("ptrace: %s", strerror(errno));
    cr_assert_eq(ptrace(PTRACE_INTERRUPT, loop_thread, 0, 0), 0, "PTRACE_INTERRUPT: %s", strerror(errno));
    int st;
    cr_assert_eq(waitpid(loop_thread, &st, __WALL), loop_thread);
    cr_assert(WIFSTOPPED(st), "the loop thread did not stop (status %d)", st);
    double t0 = now_s();
    int status;
    for (;;) {
        status = http_call(port, "GET", "/healthz", &body);
        if (status == 503) break;
        cr_assert_eq(status, 200, "/healthz answered %d while the loop was stopped", status);
        free(body);
        cr_assert(now_s() - t0 < 5, "/healthz still answers 200 %.1f s after the loop stopped", now_s() - t0);
        sleep_ms(50);
    }
    double stalled = now_s() - t0;
    cr_expect(stalled > 0.9, "/healthz failed after %.2f s, before health-loop-timeout (1 s)", stalled);
    cr_expect(strstr(body, "the event loop has not run for") != NULL, "/healthz says: %s", body);
    free(body);
    cr_expect_eq(http_call(port, "GET", "/readyz", &body), 503);
    free(body);
    cr_assert_eq(ptrace(PTRACE_DETACH, loop_thread, 0, 0), 0, "PTRACE_DETACH: %s", strerror(errno));
    t0 = now_s();
    while ((status = http_call(port, "GET", "/healthz", &body)) != 200) {
        free(body);
        cr_assert(now_s() - t0 < 5, "/healthz still answers %d after the loop resumed", status);
        sleep_ms(20);
    }
    free(body);
    cr_expect_eq(http_call(port, "GET", "/readyz", &body), 200);
    free(body);
    cr_expect_eq(dmn_stop(&D, SIGTERM), 0);
}
