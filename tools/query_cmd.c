/* `tandem query`: `tandem check`, answered by a server. Both meshes are uploaded (an
 * identical mesh already stored is not sent twice by the server's reckoning: its id is its
 * content), a scene puts the environment at the identity (object 0) and the robot movable
 * (object 1), then the poses stream in batches over C connections, several batches in
 * flight on each. The --out file and the last stdout line are exactly those of `check`. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io.h"
#include "remote.h"
#include "robot_run.h"

_Static_assert(sizeof(tdm_pose) == 7 * sizeof(double), "tdm_pose must be the wire's 7 doubles");

typedef struct job {
    const double *poses;       /* n * 7; configs: n * per */
    size_t per;                /* configs: joint values per query (0: poses) */
    tdm_query_result *results; /* n */
    size_t n, batch, n_batches;
    size_t inflight;
    tdm_query_mode mode;
    uint32_t max_contacts;
    uint8_t scene_id[TDM_ID_BYTES];
    atomic_size_t next; /* the next batch to send */
    atomic_int stop;    /* set by the first failure */
    pthread_mutex_t lock;
    char error[768];
} job;

typedef struct worker {
    job *j;
    tdm_client *c;
    pthread_t thread;
} worker;

static void job_fail(job *j, const char *why)
{
    pthread_mutex_lock(&j->lock);
    if (!j->error[0]) snprintf(j->error, sizeof j->error, "query: %s", why);
    pthread_mutex_unlock(&j->lock);
    atomic_store(&j->stop, 1);
}

/* One connection: keep up to `inflight` batches sent, hand out batches from a shared
 * counter, so a slow connection simply takes fewer. */
static void *run_worker(void *arg)
{
    worker *w = arg;
    job *j = w->j;
    size_t outstanding = 0;
    for (;;) {
        while (outstanding < j->inflight && !atomic_load(&j->stop)) {
            size_t b = atomic_fetch_add(&j->next, 1);
            if (b >= j->n_batches) break;
            size_t lo = b * j->batch, m = j->n - lo < j->batch ? j->n - lo : j->batch;
            uint64_t id;
            int rc = j->per ? tdm_query_configs_send(w->c, j->scene_id, j->mode, j->poses + lo * j->per,
                                                     (uint32_t)j->per, m, j->max_contacts, j->results + lo, NULL, &id)
                            : tdm_query_send(w->c, j->scene_id, j->mode, j->poses + lo * 7, 1, m, j->max_contacts,
                                             j->results + lo, NULL, &id);
            if (rc) {
                job_fail(j, tdm_client_errstr(w->c));
                break;
            }
            outstanding++;
        }
        if (outstanding == 0) break;
        uint64_t id;
        int status;
        if (tdm_query_wait(w->c, &id, &status) != 0) break;
        outstanding--;
        if (status) job_fail(j, tdm_client_errstr(w->c));
    }
    return NULL;
}

static int load(const char *what, const char *path, tdm_origin origin, tdm_mesh **out)
{
    char err[512];
    if (tdm_mesh_load_file(path, origin, out, err, sizeof err) != TDM_OK) {
        tdm_cli_error("%s mesh: %s", what, err);
        return -1;
    }
    return 0;
}

static int put(tdm_client *c, const char *what, const char *path, const tdm_mesh *m, uint8_t id[TDM_ID_BYTES])
{
    const char *base = strrchr(path, '/');
    if (tdm_mesh_put(c, base ? base + 1 : path, m->verts, m->n_verts, m->tris, m->n_tris, id, NULL)) {
        tdm_cli_error("%s mesh %s: %s", what, path, tdm_client_errstr(c));
        return -1;
    }
    return 0;
}

/* Streams the job's n queries over the connected workers in batches and writes the
 * answers as `check` does (out is taken and closed); checks: the scene's checked object
 * pairs per query, which with the server's max_query_tasks bound a batch. 0, or -1 after
 * printing why. */
static int stream(job *jp, worker *workers, size_t n_workers, size_t n, uint64_t batch, uint32_t checks, FILE *out,
                  const char *out_path, uint64_t max_contacts)
{
    tdm_client *c = workers[0].c;
    tdm_query_mode mode = jp->mode;
    tdm_query_result *results = jp->results;
    uint32_t max_queries = tdm_client_server_info(c)->limits.max_queries;
    if (max_queries && batch > max_queries) {
        tdm_cli_error("note: --batch %llu is over the server's max_queries; using %u", (unsigned long long)batch,
                      max_queries);
        batch = max_queries;
    }
    uint64_t max_tasks = tdm_client_server_info(c)->limits.max_query_tasks;
    if (max_tasks && checks && batch > max_tasks / checks) {
        uint64_t b = max_tasks / checks ? max_tasks / checks : 1;
        tdm_cli_error("note: --batch %llu x %u checked pairs is over the server's max_query_tasks; using %llu",
                      (unsigned long long)batch, checks, (unsigned long long)b);
        batch = b;
    }
    uint32_t max_pipelined = tdm_client_server_info(c)->limits.max_pipelined;
    if (max_pipelined && jp->inflight > max_pipelined) jp->inflight = max_pipelined;

    jp->n = n;
    jp->batch = batch;
    jp->n_batches = (n + batch - 1) / batch;
    size_t started = 0;
    double t0 = tdm_cli_now();
    for (; started < n_workers; started++)
        if (pthread_create(&workers[started].thread, NULL, run_worker, &workers[started]) != 0) {
            job_fail(jp, "cannot start a thread");
            break;
        }
    for (size_t i = 0; i < started; i++) pthread_join(workers[i].thread, NULL);
    double seconds = tdm_cli_now() - t0;
    if (jp->error[0]) {
        tdm_cli_error("%s", jp->error);
        goto fail;
    }

    size_t colliding = 0, truncated = 0;
    for (size_t i = 0; i < n; i++) {
        colliding += results[i].colliding != 0;
        truncated += results[i].truncated != 0;
    }
    /* the answers as check writes them: 0/1 in bool mode, the pair count in contacts mode */
    uint32_t *answer = malloc((n ? n : 1) * sizeof *answer);
    if (!answer) {
        tdm_cli_error("out of memory for %zu answers", n);
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        answer[i] = mode == TDM_QUERY_BOOL ? (results[i].colliding != 0) : results[i].contacts;
    FILE *f = out;
    out = NULL; /* closed by tdm_cli_report */
    int written = tdm_cli_report(f, out_path, answer, n, seconds, colliding, truncated, max_contacts);
    free(answer);
    return written < 0 ? -1 : 0;
fail:
    if (out) fclose(out);
    return -1;
}

/* --out and the summary line from n answers (check's output); out is closed here. 0 or -1. */
static int report_results(const tdm_query_result *results, size_t n, tdm_query_mode mode, double seconds,
                          uint64_t max_contacts, FILE *out, const char *out_path)
{
    size_t colliding = 0, truncated = 0;
    uint32_t *answer = malloc((n ? n : 1) * sizeof *answer);
    if (!answer) {
        tdm_cli_error("out of memory for %zu answers", n);
        if (out) fclose(out);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        colliding += results[i].colliding != 0;
        truncated += results[i].truncated != 0;
        answer[i] = mode == TDM_QUERY_BOOL ? (results[i].colliding != 0) : results[i].contacts;
    }
    int rc = tdm_cli_report(out, out_path, answer, n, seconds, colliding, truncated, max_contacts) < 0 ? -1 : 0;
    free(answer);
    return rc;
}

/* Streams n queries over the servers of m in chunks of batch * inflight per server, each
 * cut by libtandem (tdm_multi_query, or tdm_multi_query_configs when n_joints > 0: per
 * numbers a query either way), then reports as check does; out is closed here. 0 or -1. */
static int stream_multi(tdm_multi *m, const uint8_t scene_id[TDM_ID_BYTES], tdm_query_mode mode, const double *numbers,
                        uint32_t n_joints, size_t per, size_t n, uint64_t max_contacts, uint64_t batch,
                        uint64_t inflight, tdm_query_result *results, FILE *out, const char *out_path)
{
    tdm_multi_set_min_part(m, batch);
    size_t chunk = batch * inflight * tdm_multi_servers(m);
    double t0 = tdm_cli_now();
    for (size_t lo = 0; lo < n; lo += chunk) {
        size_t k = n - lo < chunk ? n - lo : chunk;
        int rc = n_joints ? tdm_multi_query_configs(m, scene_id, mode, numbers + lo * per, n_joints, k,
                                                    (uint32_t)max_contacts, results + lo, NULL)
                          : tdm_multi_query(m, scene_id, mode, numbers + lo * per, 1, k, (uint32_t)max_contacts,
                                            results + lo, NULL);
        if (rc) {
            tdm_cli_error("query: %s", tdm_multi_errstr(m));
            if (out) fclose(out);
            return -1;
        }
    }
    return report_results(results, n, mode, tdm_cli_now() - t0, max_contacts, out, out_path);
}

/* The configurations file for a robot of n_q active joints (check --urdf's reader and messages). */
static int read_configs(const char *path, size_t n_q, double **cfg, size_t *n)
{
    char expect[96];
    snprintf(expect, sizeof expect, "the robot has %zu active joints", n_q);
    const tdm__robot_lines spec = {"configs", n_q, expect, NULL, NULL, NULL};
    return tdm__robot_read_lines(path, &spec, cfg, n);
}

/* `tandem query --urdf --server A,B,C`: the robot and its scene stored on every server
 * (tdm_multi_robot_put_files, tdm_multi_robot_scene_put_file), the configurations sent in
 * chunks of batch * inflight per server, each cut over the servers by
 * tdm_multi_query_configs. The output is check --urdf's, as with one server. */
static int query_robot_multi(const char *server, const char *urdf, const char *srdf, const char *world,
                             const char *configs_path, tdm_query_mode mode, uint64_t max_contacts, uint64_t batch,
                             uint64_t inflight, const char *out_path)
{
    int rc = -1;
    double *cfg = NULL;
    size_t n = 0;
    tdm_query_result *results = NULL;
    tdm_robot_info *ri = NULL;
    FILE *out = NULL;
    tdm_multi *m = tdm_cli_multi_connect(server);
    if (!m) return -1;
    uint8_t robot_id[TDM_ID_BYTES], scene_id[TDM_ID_BYTES];
    if (tdm_multi_robot_put_files(m, NULL, urdf, srdf, robot_id, NULL, &ri)) {
        tdm_cli_error("robot: %s", tdm_multi_errstr(m));
        goto done;
    }
    size_t n_q = ri->n_joints;
    if (read_configs(configs_path, n_q, &cfg, &n) < 0) goto done;
    if (tdm_multi_robot_scene_put_file(m, "tandem-query", robot_id, world, scene_id, NULL)) {
        tdm_cli_error("world: %s", tdm_multi_errstr(m));
        goto done;
    }
    if (out_path && !(out = fopen(out_path, "w"))) {
        tdm_cli_error("cannot write %s: %s", out_path, strerror(errno));
        goto done;
    }
    if (!(results = calloc(n ? n : 1, sizeof *results))) {
        tdm_cli_error("out of memory for %zu configurations", n);
        goto done;
    }
    FILE *f = out;
    out = NULL; /* closed by stream_multi */
    rc = stream_multi(m, scene_id, mode, cfg, (uint32_t)n_q, n_q, n, max_contacts, batch, inflight, results, f,
                      out_path);
done:
    if (out) fclose(out);
    tdm_robot_info_free(ri);
    tdm_multi_free(m);
    free(results);
    free(cfg);
    return rc;
}

/* `tandem query --urdf`: `tandem check --urdf`, answered by a server. The robot (its
 * URDF, SRDF and meshes: tdm_robot_put_files) and the planning scene
 * (tdm_robot_scene_put_file) are stored, then the configurations stream in batches
 * as the poses do above; --out and the last stdout line are check --urdf's. */
static int query_robot(int argc, char **argv)
{
    const char *server = NULL, *urdf = NULL, *srdf = NULL, *world = NULL, *configs_path = NULL, *mode_s = NULL,
               *out_path = NULL, *max_s = "1000000", *batch_s = "1024", *conns_s = "1", *inflight_s = "4",
               *eph_s = "0";
    const tdm_opt opts[] = {{"--server", &server},       {"--urdf", &urdf},         {"--srdf", &srdf},
                            {"--world", &world},         {"--configs", &configs_path}, {"--mode", &mode_s},
                            {"--out", &out_path},        {"--max-contacts", &max_s}, {"--batch", &batch_s},
                            {"--connections", &conns_s}, {"--inflight", &inflight_s}, {"--ephemeral", &eph_s}};
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "query") < 0) return TDM_EXIT_USAGE;
    if (!urdf || !world || !configs_path || !mode_s) {
        tdm_cli_error("query: --urdf, --world, --configs and --mode are required");
        return TDM_EXIT_USAGE;
    }
    static const char *const modes[] = {"bool", "contacts"};
    int mode_i = tdm_cli_choice("query", "--mode", mode_s, modes, 2);
    if (mode_i < 0) return TDM_EXIT_USAGE;
    uint64_t max_contacts, batch, conns, inflight;
    if (tdm_cli_u64("--max-contacts", max_s, 1, UINT32_MAX, &max_contacts) < 0 ||
        tdm_cli_u64("--batch", batch_s, 1, 1u << 24, &batch) < 0 ||
        tdm_cli_u64("--connections", conns_s, 1, 256, &conns) < 0 ||
        tdm_cli_u64("--inflight", inflight_s, 1, 1024, &inflight) < 0)
        return TDM_EXIT_USAGE;
    uint64_t eph;
    if (tdm_cli_u64("--ephemeral", eph_s, 0, 1, &eph) < 0) return TDM_EXIT_USAGE;
    tdm_cli_set_ephemeral((int)eph);
    server = tdm_cli_server(server);
    if (strchr(server, ','))
        return query_robot_multi(server, urdf, srdf, world, configs_path, mode_i ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL,
                                 max_contacts, batch, inflight, out_path) < 0
                   ? TDM_EXIT_FAIL
                   : 0;

    int status = TDM_EXIT_FAIL;
    double *cfg = NULL;
    tdm_query_result *results = NULL;
    tdm_robot_info *ri = NULL;
    tdm_robot_scene_info *rsi = NULL;
    worker *workers = NULL;
    size_t n = 0, n_workers = 0;
    FILE *out = NULL;
    job j = {.mode = mode_i ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL, .max_contacts = (uint32_t)max_contacts,
             .inflight = inflight};
    pthread_mutex_init(&j.lock, NULL);
    workers = calloc(conns, sizeof *workers);
    if (!workers) {
        tdm_cli_error("out of memory");
        goto done;
    }
    for (; n_workers < conns; n_workers++) {
        workers[n_workers].j = &j;
        if (!(workers[n_workers].c = tdm_cli_connect(server))) goto done;
    }
    tdm_client *c = workers[0].c;
    uint8_t robot_id[TDM_ID_BYTES];
    if (tdm_robot_put_files(c, NULL, urdf, srdf, robot_id, NULL, &ri)) {
        tdm_cli_error("robot: %s", tdm_client_errstr(c));
        goto done;
    }
    size_t n_q = ri->n_joints;
    if (read_configs(configs_path, n_q, &cfg, &n) < 0) goto done;
    if (tdm_robot_scene_put_file(c, "tandem-query", robot_id, world, j.scene_id, NULL, &rsi)) {
        tdm_cli_error("world: %s", tdm_client_errstr(c));
        goto done;
    }
    uint32_t checks = rsi->n_checks;
    if (out_path && !(out = fopen(out_path, "w"))) {
        tdm_cli_error("cannot write %s: %s", out_path, strerror(errno));
        goto done;
    }
    results = calloc(n ? n : 1, sizeof *results);
    if (!results) {
        tdm_cli_error("out of memory for %zu configurations", n);
        goto done;
    }
    j.poses = cfg;
    j.per = n_q;
    j.results = results;
    FILE *f = out;
    out = NULL; /* closed by stream */
    if (stream(&j, workers, n_workers, n, batch, checks, f, out_path, max_contacts) < 0) goto done;
    status = 0;
done:
    if (out) fclose(out);
    for (size_t i = 0; i < n_workers; i++) tdm_client_free(workers[i].c);
    free(workers);
    free(results);
    free(cfg);
    tdm_robot_info_free(ri);
    tdm_robot_scene_info_free(rsi);
    pthread_mutex_destroy(&j.lock);
    return status;
}

/* --server A,B,C: the meshes and the scene go to every server, and the poses are sent in
 * chunks of batch * inflight queries per server, each chunk cut over the servers by
 * tdm_multi_query (a server that fails has its part re-sent to another). The output is
 * `check`'s, as with one server. 0, or -1 after printing why; out is closed here. */
static int query_multi(const char *server, const char *env, const tdm_mesh *env_m, const char *robot,
                       const tdm_mesh *robot_m, const tdm_pose *poses, size_t n, tdm_query_mode mode,
                       uint64_t max_contacts, uint64_t batch, uint64_t inflight, FILE *out, const char *out_path)
{
    int rc = -1;
    tdm_query_result *results = calloc(n ? n : 1, sizeof *results);
    tdm_multi *m = results ? tdm_cli_multi_connect(server) : NULL;
    if (!results) tdm_cli_error("out of memory");
    if (!m) goto done;
    uint8_t env_id[TDM_ID_BYTES], robot_id[TDM_ID_BYTES];
    const char *eb = strrchr(env, '/'), *rb = strrchr(robot, '/');
    if (tdm_multi_mesh_put(m, eb ? eb + 1 : env, env_m->verts, env_m->n_verts, env_m->tris, env_m->n_tris, env_id,
                           NULL)) {
        tdm_cli_error("environment mesh %s: %s", env, tdm_multi_errstr(m));
        goto done;
    }
    if (tdm_multi_mesh_put(m, rb ? rb + 1 : robot, robot_m->verts, robot_m->n_verts, robot_m->tris, robot_m->n_tris,
                           robot_id, NULL)) {
        tdm_cli_error("robot mesh %s: %s", robot, tdm_multi_errstr(m));
        goto done;
    }
    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, env_id, TDM_ID_BYTES);
    memcpy(objs[1].mesh_id, robot_id, TDM_ID_BYTES);
    uint8_t scene_id[TDM_ID_BYTES];
    uint32_t movable[2];
    size_t n_movable = 0;
    if (tdm_multi_scene_put(m, "tandem-query", objs, 2, NULL, 0, scene_id, NULL, movable, 2, &n_movable)) {
        tdm_cli_error("scene: %s", tdm_multi_errstr(m));
        goto done;
    }
    if (n_movable != 1 || movable[0] != 1) {
        tdm_cli_error("scene: the server made %zu objects movable, expected the robot alone", n_movable);
        goto done;
    }
    FILE *f = out;
    out = NULL; /* closed by stream_multi */
    rc = stream_multi(m, scene_id, mode, (const double *)poses, 0, 7, n, max_contacts, batch, inflight, results, f,
                      out_path);
done:
    if (out) fclose(out);
    tdm_multi_free(m);
    free(results);
    return rc;
}

int tdm_cmd_query(int argc, char **argv)
{
    const char *server = NULL, *env = NULL, *robot = NULL, *poses_path = NULL, *mode_s = NULL, *out_path = NULL,
               *origin_s = "raw", *max_s = "1000000", *batch_s = "1024", *conns_s = "1", *inflight_s = "4",
               *eph_s = "0";
    const tdm_opt opts[] = {{"--server", &server},        {"--env", &env},           {"--robot", &robot},
                            {"--poses", &poses_path},     {"--mode", &mode_s},       {"--out", &out_path},
                            {"--robot-origin", &origin_s}, {"--max-contacts", &max_s}, {"--batch", &batch_s},
                            {"--connections", &conns_s},  {"--inflight", &inflight_s}, {"--ephemeral", &eph_s}};
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--urdf")) return query_robot(argc, argv);
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "query") < 0) return TDM_EXIT_USAGE;
    if (!env || !robot || !poses_path || !mode_s) {
        tdm_cli_error("query: --env, --robot, --poses and --mode are required");
        return TDM_EXIT_USAGE;
    }
    static const char *const modes[] = {"bool", "contacts"}, *const origins[] = {"raw", "ompl"};
    int mode_i = tdm_cli_choice("query", "--mode", mode_s, modes, 2);
    int origin_i = tdm_cli_choice("query", "--robot-origin", origin_s, origins, 2);
    if (mode_i < 0 || origin_i < 0) return TDM_EXIT_USAGE;
    tdm_query_mode mode = mode_i ? TDM_QUERY_CONTACTS : TDM_QUERY_BOOL;
    tdm_origin origin = origin_i ? TDM_ORIGIN_OMPL : TDM_ORIGIN_RAW;
    uint64_t max_contacts, batch, conns, inflight;
    if (tdm_cli_u64("--max-contacts", max_s, 1, UINT32_MAX, &max_contacts) < 0 ||
        tdm_cli_u64("--batch", batch_s, 1, 1u << 24, &batch) < 0 ||
        tdm_cli_u64("--connections", conns_s, 1, 256, &conns) < 0 ||
        tdm_cli_u64("--inflight", inflight_s, 1, 1024, &inflight) < 0)
        return TDM_EXIT_USAGE;
    uint64_t eph;
    if (tdm_cli_u64("--ephemeral", eph_s, 0, 1, &eph) < 0) return TDM_EXIT_USAGE;
    tdm_cli_set_ephemeral((int)eph);
    server = tdm_cli_server(server);

    int status = TDM_EXIT_FAIL;
    tdm_mesh *env_m = NULL, *robot_m = NULL;
    tdm_pose *poses = NULL;
    tdm_query_result *results = NULL;
    worker *workers = NULL;
    size_t n = 0, n_workers = 0;
    FILE *out = NULL;
    char err[512];
    job j = {.mode = mode, .max_contacts = (uint32_t)max_contacts, .inflight = inflight};
    pthread_mutex_init(&j.lock, NULL);

    if (load("environment", env, TDM_ORIGIN_RAW, &env_m) < 0 || load("robot", robot, origin, &robot_m) < 0)
        goto done;
    if (tdm_poses_read(poses_path, &poses, &n, err, sizeof err) != TDM_OK) {
        tdm_cli_error("poses: %s", err);
        goto done;
    }
    if (out_path && !(out = fopen(out_path, "w"))) {
        tdm_cli_error("cannot write %s: %s", out_path, strerror(errno));
        goto done;
    }
    if (strchr(server, ',')) {
        FILE *f = out;
        out = NULL; /* closed by query_multi */
        if (query_multi(server, env, env_m, robot, robot_m, poses, n, mode, max_contacts, batch, inflight, f,
                        out_path) == 0)
            status = 0;
        goto done;
    }
    results = calloc(n ? n : 1, sizeof *results);
    workers = calloc(conns, sizeof *workers);
    if (!results || !workers) {
        tdm_cli_error("out of memory for %zu poses", n);
        goto done;
    }
    for (; n_workers < conns; n_workers++) {
        workers[n_workers].j = &j;
        if (!(workers[n_workers].c = tdm_cli_connect(server))) goto done;
    }

    tdm_client *c = workers[0].c;
    uint8_t env_id[TDM_ID_BYTES], robot_id[TDM_ID_BYTES];
    if (put(c, "environment", env, env_m, env_id) < 0 || put(c, "robot", robot, robot_m, robot_id) < 0) goto done;
    tdm_scene_object objs[2] = {{.object_id = 0, .movable = 0}, {.object_id = 1, .movable = 1}};
    memcpy(objs[0].mesh_id, env_id, TDM_ID_BYTES);
    memcpy(objs[1].mesh_id, robot_id, TDM_ID_BYTES);
    uint32_t movable[2];
    size_t n_movable = 0;
    if (tdm_scene_put(c, "tandem-query", objs, 2, NULL, 0, j.scene_id, NULL, movable, 2, &n_movable)) {
        tdm_cli_error("scene: %s", tdm_client_errstr(c));
        goto done;
    }
    if (n_movable != 1 || movable[0] != 1) {
        tdm_cli_error("scene: the server made %zu objects movable, expected the robot alone", n_movable);
        goto done;
    }
    j.poses = (const double *)poses;
    j.results = results;
    if (stream(&j, workers, n_workers, n, batch, 1, out, out_path, max_contacts) < 0) goto done; /* one pair */
    out = NULL; /* closed by stream */
    status = 0;
done:
    if (out) fclose(out);
    for (size_t i = 0; i < n_workers; i++) tdm_client_free(workers[i].c);
    free(workers);
    free(results);
    free(poses);
    tdm_mesh_free(env_m);
    tdm_mesh_free(robot_m);
    pthread_mutex_destroy(&j.lock);
    return status;
}
