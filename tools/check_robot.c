/* `tandem check --urdf`: joint-space queries of a URDF robot in a MoveIt planning
 * scene, offline, through the same scheduler as tandemd (workpile/sched.h). The
 * robot's collision elements are the scene's movable objects and the world's
 * shapes its fixed ones (robot/robot_scene.h); each configuration is one query.
 * The timed loop runs the configurations themselves (tdm_sched_run_configs:
 * forward kinematics included, on the device with a GPU engine); the poses
 * computed before it check every configuration (an error names the line) and
 * feed the hybrid engine, which takes poses. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../robot/robot_scene.h"
#include "../workpile/sched.h"
#include "check.h"
#include "cli.h"
#include "robot_run.h"

#define CHUNK 65536
#define GPU_CHUNK (1u << 20)
#define CONFIGS_PER_RUN (1u << 18) /* configurations per scheduler run */

/* Reads configurations of n_q values each, one per line (robot_run.h: '#'
 * comments and blank lines skipped; a line with another count, a malformed or a
 * non-finite number is an error naming the file and line). *out (n * n_q values)
 * is the caller's. */
static int read_configs(const char *path, size_t n_q, double **out, size_t *n_out)
{
    char expect[96];
    snprintf(expect, sizeof expect, "the robot has %zu active joints", n_q);
    const tdm__robot_lines spec = {"configs", n_q, expect, NULL, NULL, NULL};
    return tdm__robot_read_lines(path, &spec, out, n_out);
}

/* Configurations of the untimed run that sizes the GPU engine's scratch: enough for
 * runs on each of its slots. */
#define WARMUP_CONFIGS 16384

int tdm_cmd_check_robot(int argc, char **argv)
{
    const char *urdf = NULL, *srdf = NULL, *world = NULL, *configs_path = NULL, *mode_s = NULL, *threads_s = "0",
               *out_path = NULL, *max_s = "1000000", *backend_s = "cpu", *streams_s = "2";
    const tdm_opt opts[] = {{"--urdf", &urdf},       {"--srdf", &srdf},         {"--world", &world},
                            {"--configs", &configs_path}, {"--mode", &mode_s},  {"--threads", &threads_s},
                            {"--out", &out_path},    {"--max-contacts", &max_s}, {"--backend", &backend_s},
                            {"--gpu-streams", &streams_s}};
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "check") < 0) return TDM_EXIT_USAGE;
    if (!urdf || !world || !configs_path || !mode_s) {
        tdm_cli_error("check: --urdf, --world, --configs and --mode are required");
        return TDM_EXIT_USAGE;
    }
    static const char *const modes[] = {"bool", "contacts"};
    int mode_i = tdm_cli_choice("check", "--mode", mode_s, modes, 2);
    if (mode_i < 0) return TDM_EXIT_USAGE;
    tdm_mode mode = mode_i ? TDM_MODE_CONTACTS : TDM_MODE_BOOL;
    static const char *const backends[] = {"cpu", "gpu", "hybrid"};
    static const tdm_backend_kind backend_kind[] = {TDM_BACKEND_CPU, TDM_BACKEND_GPU, TDM_BACKEND_HYBRID};
    int backend = tdm_cli_choice("check", "--backend", backend_s, backends, 3);
    if (backend < 0) return TDM_EXIT_USAGE;
    tdm_backend_kind kind = backend_kind[backend];
    uint64_t threads, max_contacts;
    if (tdm_cli_u64("--threads", threads_s, 0, 4096, &threads) < 0) return TDM_EXIT_USAGE;
    uint64_t streams;
    if (tdm_cli_u64("--gpu-streams", streams_s, 1, 8, &streams) < 0) return TDM_EXIT_USAGE;
    if (tdm_cli_u64("--max-contacts", max_s, 1, UINT32_MAX, &max_contacts) < 0) return TDM_EXIT_USAGE;

    int status = TDM_EXIT_FAIL, rc;
    tdm__robot_run run = TDM__ROBOT_RUN_INIT;
    double *cfg = NULL;
    tdm_xform *xs = NULL, *links = NULL;
    tdm_sched_result *res = NULL;
    uint32_t *answer = NULL;
    FILE *out = NULL;
    size_t n = 0;

    if (tdm__robot_open(&run, urdf, srdf, world) < 0) goto done;
    const tdm_robot *robot = run.robot;
    size_t n_q = robot->n_active;
    if (read_configs(configs_path, n_q, &cfg, &n) < 0) goto done;
    if (tdm__robot_scene(&run, "check") < 0) goto done;
    const tdm_robot_scene *rs = run.rs;
    if (out_path && !(out = fopen(out_path, "w"))) {
        tdm_cli_error("cannot write %s: %s", out_path, strerror(errno));
        goto done;
    }
    /* chunk_tasks counts (query, pair) tasks, `limit` of them per engine run; the
     * scheduler culls far pairs first (sched.c, "Culling") and cuts the kept tasks
     * into engine runs itself, so it takes the configurations in large slices. */
    size_t limit = (kind == TDM_BACKEND_CPU ? CHUNK : GPU_CHUNK);
    size_t chunk = CONFIGS_PER_RUN;
    if (n < chunk) chunk = n ? n : 1;
    if (tdm__robot_sched(&run, kind, (int)threads, (int)streams) < 0) goto done;
    tdm_sched *sched = run.sched;

    size_t n_alloc = n ? n : 1, m_el = rs->n_movable;
    xs = malloc(n_alloc * m_el * sizeof *xs);
    links = malloc(robot->n_links * sizeof *links);
    res = calloc(chunk, sizeof *res);
    answer = malloc(n_alloc * sizeof *answer);
    if (!xs || !links || !res || !answer) {
        tdm_cli_error("out of memory for %zu configurations", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = tdm_robot_scene_poses(rs, cfg + i * n_q, n_q, links, xs + i * m_el)) != TDM_OK) {
            tdm_cli_error("configuration %zu: %s", i + 1, tdm_strerror(rc));
            goto done;
        }
    }
    /* configuration i's poses: xs + i * m_el (m_el is the scene's movable count) */
    const tdm_sched_query proto = {rs->scene, xs, mode, (uint32_t)max_contacts, NULL, NULL};
    if (kind == TDM_BACKEND_HYBRID) {
        if (n && (rc = tdm_sched_run_poses(sched, &proto, n < chunk ? n : chunk, res)) != TDM_OK) {
            tdm_cli_error("the hybrid engine failed: %s", tdm_strerror(rc));
            goto done;
        }
    } else if ((rc = tdm_sched_prepare(sched, limit > chunk ? limit : chunk)) != TDM_OK) {
        tdm_cli_error("preparing the engine failed: %s", tdm_strerror(rc));
        goto done;
    }
    /* untimed: one run of configurations sizes the device's scratch for them (as prepare does for
     * the engine's chunks), so that the timed loop pays no allocation */
    if (kind == TDM_BACKEND_GPU && n &&
        (rc = tdm_sched_run_configs(sched, &proto, &rs->kin, cfg, n < WARMUP_CONFIGS ? n : WARMUP_CONFIGS, res)) !=
            TDM_OK) {
        tdm_cli_error("the gpu engine failed: %s", tdm_strerror(rc));
        goto done;
    }
    FILE *f = out;
    out = NULL; /* closed by tdm__check_run */
    /* timed: forward kinematics included (on the device with a GPU engine, tdm_sched_run_configs);
     * the hybrid engine runs the poses computed above */
    const tdm_kin *kin = kind == TDM_BACKEND_HYBRID ? NULL : &rs->kin;
    if (tdm__check_run(sched, kind, backend_s, &proto, kin, cfg, n, chunk, mode, res, answer, f, out_path,
                       max_contacts) < 0)
        goto done;
    status = 0;
done:
    if (out) fclose(out);
    tdm__robot_close(&run);
    free(answer);
    free(res);
    free(links);
    free(xs);
    free(cfg);
    return status;
}
