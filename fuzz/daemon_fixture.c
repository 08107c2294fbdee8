/* tandemd in process: see daemon_fixture.h. */
#define _GNU_SOURCE
#include "daemon_fixture.h"

#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/auth_limit.h"
#include "daemon/loader.h"
#include "daemon/metrics.h"
#include "daemon/tenants.h"
#include "daemon/log.h"
#include "daemon/request.h"
#include "fuzz/fixture.h"

#define DIE(...)                                                                                                     \
    do {                                                                                                             \
        fprintf(stderr, "fuzz daemon: " __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                                         \
        abort();                                                                                                     \
    } while (0)

void fuzz_bytes_append(fuzz_bytes *b, const void *p, size_t n)
{
    if (n == 0) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *d = realloc(b->data, cap);
        if (!d) DIE("out of memory");
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void fuzz_bytes_free(fuzz_bytes *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void fuzz_frame_append(fuzz_bytes *b, const Tandem__V1__Request *r)
{
    size_t n = tandem__v1__request__get_packed_size(r);
    uint8_t *buf = malloc(n + 4);
    if (!buf) DIE("out of memory");
    buf[0] = (uint8_t)(n >> 24);
    buf[1] = (uint8_t)(n >> 16);
    buf[2] = (uint8_t)(n >> 8);
    buf[3] = (uint8_t)n;
    tandem__v1__request__pack(r, buf + 4);
    fuzz_bytes_append(b, buf, n + 4);
    free(buf);
}

/* ---- requests ---- */

void fuzz_req_hello(fuzz_bytes *b, uint64_t id)
{
    Tandem__V1__Hello h = TANDEM__V1__HELLO__INIT;
    h.protocol_version = 1;
    h.client_name = "fuzz";
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REQUEST__BODY_HELLO;
    r.hello = &h;
    fuzz_frame_append(b, &r);
}

void fuzz_req_mesh_put(fuzz_bytes *b, uint64_t id, const char *name, const float *v, size_t nv, const uint32_t *t,
                       size_t nt)
{
    Tandem__V1__MeshPut m = TANDEM__V1__MESH_PUT__INIT;
    m.name = (char *)name;
    m.vertices = (float *)v;
    m.n_vertices = nv;
    m.triangles = (uint32_t *)t;
    m.n_triangles = nt;
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REQUEST__BODY_MESH_PUT;
    r.mesh_put = &m;
    fuzz_frame_append(b, &r);
}

void fuzz_req_scene_put(fuzz_bytes *b, uint64_t id, const uint8_t mesh_id[TDM_ID_LEN], int with_allowed)
{
    Tandem__V1__Pose pose = TANDEM__V1__POSE__INIT;
    pose.x = 0.5;
    pose.qw = 1;
    Tandem__V1__SceneObject o[2] = {TANDEM__V1__SCENE_OBJECT__INIT, TANDEM__V1__SCENE_OBJECT__INIT};
    Tandem__V1__SceneObject *op[2] = {&o[0], &o[1]};
    for (int i = 0; i < 2; i++) {
        o[i].object_id = (uint32_t)i + 1;
        o[i].mesh_id.data = (uint8_t *)mesh_id;
        o[i].mesh_id.len = TDM_ID_LEN;
    }
    o[0].pose = &pose;
    o[1].movable = 1;
    Tandem__V1__ObjectPair pair = TANDEM__V1__OBJECT_PAIR__INIT, *pp = &pair;
    pair.a = 2;
    pair.b = 1;
    Tandem__V1__ScenePut s = TANDEM__V1__SCENE_PUT__INIT;
    s.name = "fuzz scene";
    s.n_objects = 2;
    s.objects = op;
    if (with_allowed) {
        s.n_allowed = 1;
        s.allowed = &pp;
    }
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REQUEST__BODY_SCENE_PUT;
    r.scene_put = &s;
    fuzz_frame_append(b, &r);
}

void fuzz_req_robot_put(fuzz_bytes *b, uint64_t id, const uint8_t mesh_id[TDM_ID_LEN])
{
    Tandem__V1__RobotMesh m = TANDEM__V1__ROBOT_MESH__INIT, *mp = &m;
    m.filename = "arm.stl";
    m.mesh_id.data = (uint8_t *)mesh_id;
    m.mesh_id.len = TDM_ID_LEN;
    Tandem__V1__RobotPut p = TANDEM__V1__ROBOT_PUT__INIT;
    p.name = "fuzzbot";
    p.urdf = (char *)FIXTURE_URDF;
    p.srdf = (char *)FIXTURE_SRDF;
    p.n_meshes = 1;
    p.meshes = &mp;
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REQUEST__BODY_ROBOT_PUT;
    r.robot_put = &p;
    fuzz_frame_append(b, &r);
}

void fuzz_req_robot_scene_put(fuzz_bytes *b, uint64_t id, const uint8_t robot_id[TDM_ID_LEN], const char *yaml)
{
    Tandem__V1__RobotScenePut p = TANDEM__V1__ROBOT_SCENE_PUT__INIT;
    p.name = "fuzz robot scene";
    p.robot_id.data = (uint8_t *)robot_id;
    p.robot_id.len = TDM_ID_LEN;
    p.world = (char *)yaml;
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REQUEST__BODY_ROBOT_SCENE_PUT;
    r.robot_scene_put = &p;
    fuzz_frame_append(b, &r);
}

void fuzz_req_id(fuzz_bytes *b, uint64_t id, int body, const uint8_t *oid)
{
    Tandem__V1__MeshList ml = TANDEM__V1__MESH_LIST__INIT;
    Tandem__V1__SceneList sl = TANDEM__V1__SCENE_LIST__INIT;
    Tandem__V1__RobotList rl = TANDEM__V1__ROBOT_LIST__INIT;
    Tandem__V1__StatsRequest st = TANDEM__V1__STATS_REQUEST__INIT;
    Tandem__V1__MeshDelete md = TANDEM__V1__MESH_DELETE__INIT;
    Tandem__V1__SceneDelete sd = TANDEM__V1__SCENE_DELETE__INIT;
    Tandem__V1__RobotDelete rd = TANDEM__V1__ROBOT_DELETE__INIT;
    ProtobufCBinaryData bin = {oid ? TDM_ID_LEN : 0, (uint8_t *)oid};
    md.mesh_id = sd.scene_id = rd.robot_id = bin;
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = (Tandem__V1__Request__BodyCase)body;
    switch (body) {
    case TANDEM__V1__REQUEST__BODY_MESH_LIST: r.mesh_list = &ml; break;
    case TANDEM__V1__REQUEST__BODY_SCENE_LIST: r.scene_list = &sl; break;
    case TANDEM__V1__REQUEST__BODY_ROBOT_LIST: r.robot_list = &rl; break;
    case TANDEM__V1__REQUEST__BODY_STATS: r.stats = &st; break;
    case TANDEM__V1__REQUEST__BODY_MESH_DELETE: r.mesh_delete = &md; break;
    case TANDEM__V1__REQUEST__BODY_SCENE_DELETE: r.scene_delete = &sd; break;
    case TANDEM__V1__REQUEST__BODY_ROBOT_DELETE: r.robot_delete = &rd; break;
    default: DIE("fuzz_req_id: body %d", body);
    }
    fuzz_frame_append(b, &r);
}

void fuzz_req_query(fuzz_bytes *b, uint64_t id, const uint8_t scene_id[TDM_ID_LEN], int contacts, const double *poses,
                    size_t n_poses, const double *configs, size_t n_configs, uint32_t max_contacts, int want_pairs)
{
    Tandem__V1__Query q = TANDEM__V1__QUERY__INIT;
    q.scene_id.data = (uint8_t *)scene_id;
    q.scene_id.len = TDM_ID_LEN;
    q.mode = contacts ? TANDEM__V1__MODE__MODE_CONTACTS : TANDEM__V1__MODE__MODE_BOOL;
    q.poses = (double *)poses;
    q.n_poses = n_poses;
    q.configs = (double *)configs;
    q.n_configs = n_configs;
    q.max_contacts = max_contacts;
    q.want_pairs = want_pairs;
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REQUEST__BODY_QUERY;
    r.query = &q;
    fuzz_frame_append(b, &r);
}

void fuzz_req_motion(fuzz_bytes *b, uint64_t id, const uint8_t scene_id[TDM_ID_LEN], double resolution,
                     const double *motions, size_t n, const uint32_t *points, size_t n_points, int any_state)
{
    Tandem__V1__MotionCheck m = TANDEM__V1__MOTION_CHECK__INIT;
    m.scene_id.data = (uint8_t *)scene_id;
    m.scene_id.len = TDM_ID_LEN;
    m.resolution = resolution;
    m.motions = (double *)motions;
    m.n_motions = n;
    m.points = (uint32_t *)points;
    m.n_points = n_points;
    m.any_state = any_state != 0;
    Tandem__V1__Request r = TANDEM__V1__REQUEST__INIT;
    r.id = id;
    r.body_case = TANDEM__V1__REQUEST__BODY_MOTION_CHECK;
    r.motion_check = &m;
    fuzz_frame_append(b, &r);
}

/* ---- the server ---- */

static char remove_dir[256];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tmp(void)
{
    if (remove_dir[0]) nftw(remove_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void fuzz_daemon_start(fuzz_daemon *d)
{
    memset(d, 0, sizeof *d);
    signal(SIGPIPE, SIG_IGN);
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0]) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(d->dir, sizeof d->dir, "%s/tdm-fuzz-XXXXXX", tmp);
    if (!mkdtemp(d->dir)) DIE("mkdtemp %s: %s", d->dir, strerror(errno));
    snprintf(remove_dir, sizeof remove_dir, "%s", d->dir);
    atexit(remove_tmp);
    char data[300], listen[340];
    snprintf(data, sizeof data, "%s/data", d->dir);
    snprintf(d->sock, sizeof d->sock, "%s/sock", d->dir);
    snprintf(listen, sizeof listen, "unix:%s", d->sock);
    /* small limits keep each run short; every check still has an over-the-limit side */
    char *argv[] = {"tandemd", "--data-dir", data, "--listen", listen, "--engine", "cpu", "--threads", "1",
                    "--engine-lanes", "1", "--engine-calibrate", "0", "--log-level", "error",
                    "--hello-timeout", "0", "--idle-timeout", "0", "--max-frame-bytes", "1048576",
                    "--max-vertices", "4096", "--max-triangles", "4096", "--max-objects", "64",
                    "--max-queries", "256", "--max-contacts", "1000", "--max-reply-pairs", "10000",
                    "--max-query-tasks", "65536", "--max-batch-tasks", "65536", "--max-motion-states", "4096",
                    "--max-robots", "16", "--max-meshes-bytes", "64M", "--max-pipelined", "16",
                    "--max-output-bytes", "1M", "--max-output-bytes-hard", "4M", "--max-upload-bytes", "16M"};
    char err[1024];
    if (tdm_config_load(&d->cfg, (int)(sizeof argv / sizeof argv[0]), argv, err, sizeof err) != 0)
        DIE("config: %s", err);
    tdm_log_set_level((tdm_log_level)d->cfg.log_level);
    tdm_metrics_init(d->cfg.engine);
    tdm_server *s = &d->srv;
    s->cfg = &d->cfg;
    s->started_ns = uv_hrtime();
    if (tdm_srv_lock_init(s) != 0) DIE("server lock");
    if (uv_loop_init(&d->loop) != 0) DIE("uv_loop_init");
    s->loop = &d->loop;
    tdm_sched_config ec = tdm_sched_config_default();
    ec.kind = TDM_BACKEND_CPU;
    ec.threads = 1;
    ec.lanes = 1;
    ec.calibrate = 0;
    ec.chunk_tasks = d->cfg.max_batch_tasks;
    if (tdm_sched_create(&ec, &s->engine, err, sizeof err) != TDM_OK) DIE("engine: %s", err);
    /* as daemon/main.c starts it: the tenants (one, the default: no tenants file) and the
       wrong-token table, before anything can say Hello */
    if (!(s->tenants = tdm_tenants_new()) ||
        !(s->auth_limit = tdm_auth_limit_new(d->cfg.auth_fail_max, d->cfg.auth_fail_window, d->cfg.auth_fail_block,
                                             d->cfg.auth_fail_addresses)))
        DIE("tenants");
    if (tdm_datadir_open(d->cfg.data_dir, &s->datadir, err, sizeof err) != 0) DIE("%s", err);
    if (!(s->catalog = tdm_catalog_new())) DIE("catalog");
    if (tdm_writer_create(&d->loop, tdm_srv_lock_cb, tdm_srv_unlock_cb, s, s->datadir, s->catalog, s->engine, &s->writer) != TDM_OK)
        DIE("writer");
    tdm_loader_run(s);
    if (tdm_query_pool_create(s->engine, d->cfg.max_batch_tasks, d->cfg.max_reply_pairs,
                              tdm_request_query_packed, tdm_request_query_done, s, &s->query_pool) != TDM_OK)
        DIE("query pool");
    tdm_pooler_fairness fair = {d->cfg.slice_tasks, d->cfg.latency_lane_tasks, d->cfg.latency_lane_work};
    tdm_query_pool_set_fairness(s->query_pool, &fair);
    tdm_query_pool_set_sender(s->query_pool, tdm_request_query_send);
    /* the main loop alone serves the connections: the fuzzer drives it with uv_run */
    if (tdm_io_create(s, 0, err, sizeof err) != 0 || tdm_io_start(s, err, sizeof err) != 0) DIE("%s", err);
    if (tdm_server_budget_start(s) != 0) DIE("budget timer");
    if (tdm_server_listen(s, err, sizeof err) != 0) DIE("%s", err);
    s->ready = 1;
    tdm_mesh_id(FIXTURE_MESH_VERTS, FIXTURE_MESH_NV, FIXTURE_MESH_TRIS, FIXTURE_MESH_NT, d->mesh_id);
    fuzz_daemon_restore(d);
}

/* Waits for the client socket or the loop (its backend fd: I/O, timers, the
 * writer's and the pooler's wake-ups), then runs what is ready. */
static void pump(fuzz_daemon *d, int fd, int want_write)
{
    struct pollfd p[2] = {{uv_backend_fd(&d->loop), POLLIN, 0}, {fd, (short)(POLLIN | (want_write ? POLLOUT : 0)), 0}};
    int t = uv_backend_timeout(&d->loop);
    if (t < 0 || t > 20) t = 20;
    poll(p, fd >= 0 ? 2 : 1, t);
    uv_run(&d->loop, UV_RUN_NOWAIT);
}

void fuzz_daemon_session(fuzz_daemon *d, const uint8_t *in, size_t len, size_t chunk, fuzz_bytes *out)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) DIE("socket: %s", strerror(errno));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", d->sock);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) DIE("connect: %s", strerror(errno));
    uint64_t accepted = d->srv.counters.connections;
    while (d->srv.counters.connections == accepted) pump(d, -1, 0);
    size_t off = 0;
    int shut = 0, eof = 0;
    uint8_t buf[65536];
    if (chunk == 0) chunk = len ? len : 1;
    while (!eof) {
        if (off < len) {
            size_t n = len - off < chunk ? len - off : chunk;
            ssize_t w = send(fd, in + off, n, MSG_NOSIGNAL);
            if (w > 0) off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR) off = len; /* the server closed: the rest is lost */
        } else if (!shut) {
            shutdown(fd, SHUT_WR);
            shut = 1;
        }
        for (;;) {
            ssize_t r = recv(fd, buf, sizeof buf, 0);
            if (r > 0) {
                if (out) fuzz_bytes_append(out, buf, (size_t)r);
                continue;
            }
            if (r == 0 || (errno != EAGAIN && errno != EINTR)) eof = 1;
            break;
        }
        if (!eof) pump(d, fd, off < len);
    }
    close(fd);
    while (d->srv.n_conns > 0) pump(d, -1, 0);
    /* the connection is gone: nothing it did may still be counted or held */
    const tdm_server *s = &d->srv;
    if (s->n_active || s->n_unauth || s->upload_bytes || tdm_catalog_reserved(s->catalog) ||
        tdm_writer_pending(s->writer) || tdm_query_pool_pending(s->query_pool))
        DIE("after a session: %u active, %u before Hello, %llu upload bytes, %llu reserved, %zu writer ops, "
            "%zu query jobs",
            s->n_active, s->n_unauth, (unsigned long long)s->upload_bytes,
            (unsigned long long)tdm_catalog_reserved(s->catalog), tdm_writer_pending(s->writer),
            tdm_query_pool_pending(s->query_pool));
}

/* ---- restore ---- */

static int is_fixture(const fuzz_daemon *d, const uint8_t *id)
{
    return !memcmp(id, d->mesh_id, TDM_ID_LEN) || !memcmp(id, d->scene_id, TDM_ID_LEN) ||
           !memcmp(id, d->robot_id, TDM_ID_LEN) || !memcmp(id, d->rscene_id, TDM_ID_LEN);
}

static int count_fixture(fuzz_daemon *d, uint32_t *extra)
{
    tdm_catalog *c = d->srv.catalog;
    int have = 0;
    *extra = 0;
    for (tdm_stored_mesh *m = tdm_catalog_meshes(c); m; m = m->next)
        if (!memcmp(m->entry.id, d->mesh_id, TDM_ID_LEN)) have++;
        else (*extra)++;
    for (tdm_stored_scene *s = tdm_catalog_scenes(c); s; s = s->next)
        if (!memcmp(s->entry.id, d->scene_id, TDM_ID_LEN) || !memcmp(s->entry.id, d->rscene_id, TDM_ID_LEN)) have++;
        else (*extra)++;
    for (tdm_stored_robot *r = tdm_catalog_robots(c); r; r = r->next)
        if (!memcmp(r->entry.id, d->robot_id, TDM_ID_LEN)) have++;
        else (*extra)++;
    return have;
}

/* Runs one session of the requests in b, which it frees; an Error reply aborts. */
static void run(fuzz_daemon *d, fuzz_bytes *b)
{
    fuzz_bytes out = {0};
    fuzz_daemon_session(d, b->data, b->len, 0, &out);
    for (size_t o = 0; o + 4 <= out.len;) {
        size_t n = (size_t)out.data[o] << 24 | (size_t)out.data[o + 1] << 16 | (size_t)out.data[o + 2] << 8 |
                   out.data[o + 3];
        Tandem__V1__Reply *r = tandem__v1__reply__unpack(NULL, n, out.data + o + 4);
        if (!r) DIE("an undecodable reply");
        if (r->body_case == TANDEM__V1__REPLY__BODY_ERROR)
            DIE("restoring the fixture: request %llu: error %d (%s): %s", (unsigned long long)r->id,
                (int)r->error->code, r->error->field, r->error->message);
        tandem__v1__reply__free_unpacked(r, NULL);
        o += 4 + n;
    }
    fuzz_bytes_free(&out);
    fuzz_bytes_free(b);
}

void fuzz_daemon_restore(fuzz_daemon *d)
{
    uint32_t extra;
    if (count_fixture(d, &extra) == 4 && extra == 0) return;
    tdm_catalog *c = d->srv.catalog;
    fuzz_bytes b = {0};
    uint64_t id = 1;
    /* scenes, then robots, then meshes: each kind holds the next */
    fuzz_req_hello(&b, id++);
    for (tdm_stored_scene *s = tdm_catalog_scenes(c); s; s = s->next)
        if (!is_fixture(d, s->entry.id)) fuzz_req_id(&b, id++, TANDEM__V1__REQUEST__BODY_SCENE_DELETE, s->entry.id);
    run(d, &b);
    fuzz_req_hello(&b, id++);
    for (tdm_stored_robot *r = tdm_catalog_robots(c); r; r = r->next)
        if (!is_fixture(d, r->entry.id)) fuzz_req_id(&b, id++, TANDEM__V1__REQUEST__BODY_ROBOT_DELETE, r->entry.id);
    run(d, &b);
    fuzz_req_hello(&b, id++);
    for (tdm_stored_mesh *m = tdm_catalog_meshes(c); m; m = m->next)
        if (!is_fixture(d, m->entry.id)) fuzz_req_id(&b, id++, TANDEM__V1__REQUEST__BODY_MESH_DELETE, m->entry.id);
    run(d, &b);
    /* the fixture, put again (identical content: nothing changes for what is there) */
    fuzz_req_hello(&b, id++);
    fuzz_req_mesh_put(&b, id++, "arm.stl", FIXTURE_MESH_VERTS, 3 * FIXTURE_MESH_NV, FIXTURE_MESH_TRIS,
                      3 * FIXTURE_MESH_NT);
    run(d, &b); /* listed once written: the scene and the robot name it */
    fuzz_req_hello(&b, id++);
    fuzz_req_scene_put(&b, id++, d->mesh_id, 1);
    fuzz_req_robot_put(&b, id++, d->mesh_id);
    run(d, &b);
    for (tdm_stored_scene *s = tdm_catalog_scenes(c); s; s = s->next)
        if (!s->rs) memcpy(d->scene_id, s->entry.id, TDM_ID_LEN);
    tdm_stored_robot *r = tdm_catalog_robots(c);
    if (!r || r->next) DIE("the fixture robot was not stored");
    memcpy(d->robot_id, r->entry.id, TDM_ID_LEN);
    fuzz_req_hello(&b, id++);
    fuzz_req_robot_scene_put(&b, id++, d->robot_id, FIXTURE_SCENE_YAML);
    run(d, &b);
    for (tdm_stored_scene *s = tdm_catalog_scenes(c); s; s = s->next)
        if (s->rs) memcpy(d->rscene_id, s->entry.id, TDM_ID_LEN);
    if (count_fixture(d, &extra) != 4 || extra != 0) DIE("could not restore the fixture (%u extra)", extra);
}
