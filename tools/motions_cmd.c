/* `tandem motions`: motion checks of a URDF robot in a MoveIt planning scene,
 * offline, through the same scheduler as `tandem check --urdf` (robot/robot_scene.h,
 * workpile/sched.h), or with --server through tandemd (MotionCheck). A motion a -> b
 * is checked at the states robot/motions.h defines; its answer is the smallest colliding k, or -1 when every state is free.
 *
 * Strategy (early exit, first to last, in rounds of batches of at most `batch`
 * states: about 1M tasks by default, so memory is bounded by the batch, whatever
 * the input): robot/motion_rounds.h, the implementation tandemd's MotionCheck
 * shares; each batch's states are run here through tdm_sched_run_configs in bool
 * mode (the hybrid engine: their poses through tdm_sched_run).
 *
 * --any-state 1: any colliding state answers a colliding motion (MotionCheck's any_state;
 * offline, tdm_motion_rounds_set_any with ANY_STATE_PROBES probes, tandemd's default
 * --motion-probes): what a planner's plain validity check needs. Free motions answer -1
 * either way.
 *
 * `seconds` times the scheduler runs only, forward kinematics included (on the
 * device with a GPU engine; the hybrid's poses are made before its runs):
 * reading, scene building and cutting the motions into states are not counted. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../robot/motion_rounds.h"
#include "../robot/motions.h"
#include "../robot/robot_scene.h"
#include "../workpile/sched.h"
#include "cli.h"
#include "remote.h"
#include "robot_run.h"

#define BATCH_TASKS (1u << 20) /* (state, checked pair) tasks per scheduler run (the hybrid: poses made here) */
/* States per run of configurations (tdm_sched_run_configs bounds its own memory by
 * the piece it makes poses for, and on the device each run costs a few copies and
 * launches whatever its size: fewer, larger runs) */
#define BATCH_CONFIGS 65536
#define ANY_STATE_PROBES 4 /* --any-state 1, offline: as tandemd's --motion-probes by default */

/* The motions read so far: each one's number of states at resolution r. */
typedef struct motion_lines { size_t n_q; double r; uint64_t *states; } motion_lines;

static int motion_grow(void *ctx, size_t cap)
{
    motion_lines *ml = ctx;
    uint64_t *st = realloc(ml->states, cap * sizeof *st);
    if (!st) return -1;
    ml->states = st;
    return 0;
}

static int motion_record(void *ctx, const char *path, size_t lineno, size_t i, const double *a)
{
    motion_lines *ml = ctx;
    ml->states[i] = tdm__motion_states(a, a + ml->n_q, ml->n_q, ml->r);
    if (!ml->states[i]) {
        tdm_cli_error("motions: %s:%zu: more than %llu states at resolution %g", path, lineno,
                      (unsigned long long)TDM_MOTION_MAX_STATES, ml->r);
        return -1;
    }
    return 0;
}

/* Reads motions of 2 * n_q values each (start, then end), one per line
 * (robot_run.h: '#' comments and blank lines skipped); counts each one's states at
 * resolution r. A line with another count, a malformed or non-finite number, or
 * more than TDM_MOTION_MAX_STATES states is an error naming the file and line.
 * *out (2 * n_q values per motion) and *states_out are the caller's. */
static int read_motions(const char *path, size_t n_q, double r, double **out, uint64_t **states_out, size_t *n_out)
{
    char expect[128];
    snprintf(expect, sizeof expect, "a motion has %zu (start and end of %zu active joints)", 2 * n_q, n_q);
    motion_lines ml = {n_q, r, NULL};
    const tdm__robot_lines spec = {"motions", 2 * n_q, expect, motion_grow, motion_record, &ml};
    if (tdm__robot_read_lines(path, &spec, out, n_out) < 0) {
        free(ml.states);
        return -1;
    }
    *states_out = ml.states;
    return 0;
}

/* `tandem motions --server`: the same motions answered by tandemd (MotionCheck,
 * the same rounds, run as pooled query jobs). The robot and the planning scene are
 * stored as `tandem query --urdf` stores them; the motions go in requests of at most
 * max_queries motions and max_motion_states states. With several servers (A,B,C:
 * tdm_multi) the robot and the scene go to each, and each request's motions are cut
 * over them, a request holding at most the smallest max_motion_states any of them
 * reported. --out and the summary line are as offline; `seconds` times the requests. */
static int motions_remote(const char *server, const char *urdf, const char *srdf, const char *world,
                          const char *motions_path, double resolution, unsigned flags, const char *out_path)
{
    int status = TDM_EXIT_FAIL;
    tdm_client *c = NULL;
    tdm_multi *m = NULL;
    if (strchr(server, ',')) m = tdm_cli_multi_connect(server);
    else c = tdm_cli_connect(tdm_cli_server(server));
    if (!c && !m) return TDM_EXIT_FAIL;
#define ERRSTR() (m ? tdm_multi_errstr(m) : tdm_client_errstr(c))
    tdm_robot_info *ri = NULL;
    double *mot = NULL;
    uint64_t *n_states = NULL;
    int64_t *answer = NULL;
    FILE *out = NULL;
    size_t n = 0;
    uint8_t robot_id[TDM_ID_BYTES], scene_id[TDM_ID_BYTES];
    if (m ? tdm_multi_robot_put_files(m, NULL, urdf, srdf, robot_id, NULL, &ri)
          : tdm_robot_put_files(c, NULL, urdf, srdf, robot_id, NULL, &ri)) {
        tdm_cli_error("robot: %s", ERRSTR());
        goto done;
    }
    size_t n_q = ri->n_joints;
    if (read_motions(motions_path, n_q, resolution, &mot, &n_states, &n) < 0) goto done;
    if (m ? tdm_multi_robot_scene_put_file(m, "tandem-motions", robot_id, world, scene_id, NULL)
          : tdm_robot_scene_put_file(c, "tandem-motions", robot_id, world, scene_id, NULL, NULL)) {
        tdm_cli_error("world: %s", ERRSTR());
        goto done;
    }
    if (out_path && !(out = fopen(out_path, "w"))) {
        tdm_cli_error("cannot write %s: %s", out_path, strerror(errno));
        goto done;
    }
    answer = malloc((n ? n : 1) * sizeof *answer);
    if (!answer) {
        tdm_cli_error("out of memory for %zu motions", n);
        goto done;
    }
    /* one server's limits; with several, the smallest states (tdm_multi cuts by max_queries itself) */
    uint64_t max_states = UINT64_MAX;
    size_t max_motions = SIZE_MAX;
    for (size_t i = 0; i < (m ? tdm_multi_servers(m) : 1); i++) {
        const tdm_limits *l = m ? tdm_multi_server_limits(m, i) : &tdm_client_server_info(c)->limits;
        if (!l) continue;
        if (l->max_motion_states && l->max_motion_states < max_states) max_states = l->max_motion_states;
        if (!m && l->max_queries) max_motions = l->max_queries;
    }
    double seconds = 0;
    for (size_t lo = 0; lo < n;) {
        size_t hi = lo;
        uint64_t states = 0;
        while (hi < n && hi - lo < max_motions && (hi == lo || states + n_states[hi] <= max_states))
            states += n_states[hi++];
        double t0 = tdm_cli_now();
        const double *part = mot + lo * 2 * n_q;
        int rc = m ? tdm_multi_motion_check_flags(m, scene_id, resolution, part, (uint32_t)n_q, hi - lo, flags,
                                                  answer + lo, NULL, NULL)
                   : tdm_motion_check_flags(c, scene_id, resolution, part, (uint32_t)n_q, NULL, hi - lo, flags,
                                            answer + lo, NULL, NULL);
        seconds += tdm_cli_now() - t0;
        if (rc) {
            tdm_cli_error("motions: %s", ERRSTR());
            goto done;
        }
        lo = hi;
    }
#undef ERRSTR
    size_t colliding = 0;
    for (size_t k = 0; k < n; k++) colliding += answer[k] >= 0;
    if (out) {
        for (size_t k = 0; k < n; k++) fprintf(out, "%lld\n", (long long)answer[k]);
        FILE *f = out;
        out = NULL;
        if (fclose(f) != 0) {
            tdm_cli_error("writing %s failed", out_path);
            goto done;
        }
    }
    printf("queries=%zu seconds=%.6f qps=%.1f colliding=%zu\n", n, seconds, seconds > 0 ? (double)n / seconds : 0.0,
           colliding);
    status = 0;
done:
    if (out) fclose(out);
    free(answer);
    free(n_states);
    free(mot);
    tdm_robot_info_free(ri);
    tdm_client_free(c);
    tdm_multi_free(m);
    return status;
}

int tdm_cmd_motions(int argc, char **argv)
{
    const char *urdf = NULL, *srdf = NULL, *world = NULL, *motions_path = NULL, *res_s = NULL, *mode_s = "bool",
               *threads_s = "0", *out_path = NULL, *backend_s = "cpu", *batch_s = "0", *server = NULL,
               *streams_s = "2", *any_s = "0", *eph_s = "0";
    const tdm_opt opts[] = {{"--urdf", &urdf},         {"--srdf", &srdf},         {"--world", &world},
                            {"--motions", &motions_path}, {"--resolution", &res_s}, {"--mode", &mode_s},
                            {"--threads", &threads_s}, {"--out", &out_path},      {"--backend", &backend_s},
                            {"--batch", &batch_s},     {"--server", &server},     {"--gpu-streams", &streams_s},
                            {"--any-state", &any_s}, {"--ephemeral", &eph_s}};
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "motions") < 0) return TDM_EXIT_USAGE;
    if (!urdf || !world || !motions_path || !res_s) {
        tdm_cli_error("motions: --urdf, --world, --motions and --resolution are required");
        return TDM_EXIT_USAGE;
    }
    static const char *const modes[] = {"bool"};
    if (tdm_cli_choice("motions", "--mode", mode_s, modes, 1) < 0) return TDM_EXIT_USAGE;
    static const char *const backends[] = {"cpu", "gpu", "hybrid"};
    static const tdm_backend_kind backend_kind[] = {TDM_BACKEND_CPU, TDM_BACKEND_GPU, TDM_BACKEND_HYBRID};
    int backend = tdm_cli_choice("motions", "--backend", backend_s, backends, 3);
    if (backend < 0) return TDM_EXIT_USAGE;
    tdm_backend_kind kind = backend_kind[backend];
    uint64_t threads, batch_opt;
    if (tdm_cli_u64("--threads", threads_s, 0, 4096, &threads) < 0) return TDM_EXIT_USAGE;
    if (tdm_cli_u64("--batch", batch_s, 0, 1u << 24, &batch_opt) < 0) return TDM_EXIT_USAGE;
    uint64_t streams, any_state;
    if (tdm_cli_u64("--any-state", any_s, 0, 1, &any_state) < 0) return TDM_EXIT_USAGE;
    uint64_t eph;
    if (tdm_cli_u64("--ephemeral", eph_s, 0, 1, &eph) < 0) return TDM_EXIT_USAGE;
    if (eph && !server) {
        tdm_cli_error("motions: --ephemeral is for a server's scene (--server)");
        return TDM_EXIT_USAGE;
    }
    tdm_cli_set_ephemeral((int)eph);
    if (tdm_cli_u64("--gpu-streams", streams_s, 1, 8, &streams) < 0) return TDM_EXIT_USAGE;
    char *end;
    double resolution = strtod(res_s, &end);
    if (end == res_s || *end || !isfinite(resolution) || !(resolution > 0)) {
        tdm_cli_error("motions: --resolution must be a finite number > 0, not '%s'", res_s);
        return TDM_EXIT_USAGE;
    }
    if (server)
        return motions_remote(server, urdf, srdf, world, motions_path, resolution,
                              any_state ? TDM_MOTION_ANY_STATE : 0u, out_path);

    int status = TDM_EXIT_FAIL, rc;
    tdm__robot_run run = TDM__ROBOT_RUN_INIT;
    double *mot = NULL, *q = NULL;
    uint64_t *n_states = NULL;
    tdm_motion_rounds *mc = NULL;
    tdm_xform *xs = NULL, *links = NULL;
    tdm_sched_query *queries = NULL;
    tdm_sched_result *res = NULL;
    FILE *out = NULL;
    size_t n = 0;

    if (tdm__robot_open(&run, urdf, srdf, world) < 0) goto done;
    const tdm_robot *robot = run.robot;
    size_t n_q = robot->n_active;
    if (read_motions(motions_path, n_q, resolution, &mot, &n_states, &n) < 0) goto done;
    if (tdm__robot_scene(&run, "motions") < 0) goto done;
    const tdm_robot_scene *rs = run.rs;
    if (out_path && !(out = fopen(out_path, "w"))) {
        tdm_cli_error("cannot write %s: %s", out_path, strerror(errno));
        goto done;
    }
    size_t per_state = rs->scene->n_checks ? rs->scene->n_checks : 1;
    size_t batch = batch_opt                    ? (size_t)batch_opt
                   : kind != TDM_BACKEND_HYBRID ? BATCH_CONFIGS
                   : BATCH_TASKS / per_state    ? BATCH_TASKS / per_state
                                                : 1;
    if (tdm__robot_sched(&run, kind, (int)threads, (int)streams) < 0) goto done;
    tdm_sched *sched = run.sched;
    size_t prep = batch * per_state < BATCH_TASKS ? batch * per_state : BATCH_TASKS;
    if (kind != TDM_BACKEND_HYBRID && (rc = tdm_sched_prepare(sched, prep)) != TDM_OK) {
        tdm_cli_error("preparing the engine failed: %s", tdm_strerror(rc));
        goto done;
    }

    size_t m_el = rs->n_movable;
    xs = malloc((kind == TDM_BACKEND_HYBRID ? batch : 1) * m_el * sizeof *xs);
    links = malloc(robot->n_links * sizeof *links);
    q = malloc(batch * (n_q ? n_q : 1) * sizeof *q);
    queries = malloc(batch * sizeof *queries);
    res = calloc(batch, sizeof *res);
    if (!xs || !links || !q || !queries || !res ||
        tdm_motion_rounds_create(mot, n, n_q, resolution, batch, &mc, NULL) != TDM_OK) {
        tdm_cli_error("out of memory for %zu motions", n);
        goto done;
    }
    if (any_state) tdm_motion_rounds_set_any(mc, ANY_STATE_PROBES);

    /* untimed: one run of the motions' start configurations sizes the device's scratch for runs of
     * configurations (as prepare does for the engine's chunks) */
    if (kind == TDM_BACKEND_GPU && n) {
        size_t w = n < batch ? n : batch;
        for (size_t i = 0; i < w; i++) memcpy(q + i * n_q, mot + i * 2 * n_q, n_q * sizeof *q);
        const tdm_sched_query warm = {rs->scene, NULL, TDM_MODE_BOOL, 1, NULL, NULL};
        if ((rc = tdm_sched_run_configs(sched, &warm, &rs->kin, q, w, res)) != TDM_OK) {
            tdm_cli_error("the gpu engine failed: %s", tdm_strerror(rc));
            goto done;
        }
    }
    tdm_sched_stats before, after;
    tdm_sched_get_stats(sched, &before);
    double seconds = 0;
    /* the hybrid engine takes poses; the others run the states themselves (tdm_sched_run_configs:
     * forward kinematics included in the time, on the device with a GPU engine) */
    const tdm_sched_query proto = {rs->scene, NULL, TDM_MODE_BOOL, 1, NULL, NULL};
    for (size_t n_b; (n_b = tdm_motion_rounds_next(mc, q));) {
        double t0;
        if (kind == TDM_BACKEND_HYBRID) {
            for (size_t i = 0; i < n_b; i++) {
                if ((rc = tdm_robot_scene_poses(rs, q + i * n_q, n_q, links, xs + i * m_el)) != TDM_OK) {
                    tdm_cli_error("a motion state: %s", tdm_strerror(rc));
                    goto done;
                }
                queries[i] = (tdm_sched_query){rs->scene, xs + i * m_el, TDM_MODE_BOOL, 1, NULL, NULL};
            }
            t0 = tdm_cli_now();
            rc = tdm_sched_run(sched, queries, n_b, res);
        } else {
            t0 = tdm_cli_now();
            rc = tdm_sched_run_configs(sched, &proto, &rs->kin, q, n_b, res);
        }
        seconds += tdm_cli_now() - t0;
        if (rc != TDM_OK) {
            tdm_cli_error("the %s engine failed: %s", backend_s, tdm_strerror(rc));
            goto done;
        }
        tdm_motion_rounds_take(mc, &res[0].colliding, sizeof *res);
    }
    size_t colliding = tdm_motion_rounds_colliding(mc);
    tdm_sched_get_stats(sched, &after);
    if (kind != TDM_BACKEND_CPU && after.cpu_queries != before.cpu_queries) {
        tdm_cli_error("the %s engine failed on %llu queries (answered by the CPU engine instead)", backend_s,
                      (unsigned long long)(after.cpu_queries - before.cpu_queries));
        goto done;
    }
    if (out) {
        for (size_t m = 0; m < n; m++) fprintf(out, "%lld\n", (long long)tdm_motion_rounds_answer(mc, m));
        FILE *f = out;
        out = NULL;
        if (fclose(f) != 0) {
            tdm_cli_error("writing %s failed", out_path);
            goto done;
        }
    }
    printf("queries=%zu seconds=%.6f qps=%.1f colliding=%zu\n", n, seconds, seconds > 0 ? (double)n / seconds : 0.0,
           colliding);
    status = 0;
done:
    if (out) fclose(out);
    tdm__robot_close(&run);
    free(res);
    free(queries);
    free(q);
    free(links);
    free(xs);
    tdm_motion_rounds_free(mc);
    free(n_states);
    free(mot);
    return status;
}
