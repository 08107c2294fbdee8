/* `tandem check`: offline queries of one robot against one environment, through
 * the same scheduler as tandemd (workpile/sched.h): a scene of the environment,
 * fixed at the identity, and the robot, movable; each pose is one query. With
 * the environment as the pair's fixed object, a task's transform is the pose
 * itself, bit for bit (workpile/scene.h), so answers are those of the engines
 * on the bare transforms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workpile/sched.h"
#include "check.h"
#include "cli.h"
#include "io.h"

/* Poses per scheduler run: bounds the query and result arrays for long pose
 * files. The GPU engines want large batches to fill the device. */
#define CHUNK 65536
#define GPU_CHUNK (1u << 20)
/* Poses the hybrid engine runs untimed first: its internal run size, so that its
 * task table reaches full size and its kernel is loaded before the timed loop. */
#define HYBRID_WARMUP (1u << 18)

static int load(const char *what, const char *path, tdm_origin origin, tdm_bvh **out)
{
    char err[512];
    tdm_mesh *m;
    int rc = tdm_mesh_load_file(path, origin, &m, err, sizeof err);
    if (rc != TDM_OK) {
        tdm_cli_error("%s mesh: %s", what, err);
        return -1;
    }
    rc = tdm_bvh_build(m, out);
    tdm_mesh_free(m);
    if (rc != TDM_OK) {
        tdm_cli_error("%s mesh %s: building its tree failed: %s", what, path, tdm_strerror(rc));
        return -1;
    }
    return 0;
}

/* check.h */
int tdm__check_run(tdm_sched *sched, tdm_backend_kind kind, const char *backend_s, const tdm_sched_query *proto,
                   const tdm_kin *kin, const double *configs, size_t n, size_t chunk, tdm_mode mode,
                   tdm_sched_result *res, uint32_t *answer, FILE *out, const char *out_path, uint64_t max_contacts)
{
    tdm_sched_stats before, after;
    tdm_sched_get_stats(sched, &before);
    size_t colliding = 0, truncated = 0;
    double t0 = tdm_cli_now();
    for (size_t lo = 0; lo < n; lo += chunk) {
        size_t m = n - lo < chunk ? n - lo : chunk;
        tdm_sched_query q = *proto;
        int rc;
        if (kin) {
            rc = tdm_sched_run_configs(sched, &q, kin, configs + lo * kin->n_q, m, res);
        } else {
            q.poses = proto->poses + lo * proto->scene->n_movable;
            rc = tdm_sched_run_poses(sched, &q, m, res);
        }
        if (rc != TDM_OK) {
            tdm_cli_error("the %s engine failed: %s", backend_s, tdm_strerror(rc));
            if (out) fclose(out);
            return -1;
        }
        for (size_t i = 0; i < m; i++) {
            colliding += res[i].colliding;
            truncated += res[i].truncated;
            answer[lo + i] = mode == TDM_MODE_BOOL ? res[i].colliding : res[i].contacts;
        }
    }
    double seconds = tdm_cli_now() - t0;
    tdm_sched_get_stats(sched, &after);
    if (kind != TDM_BACKEND_CPU && after.cpu_queries != before.cpu_queries) {
        tdm_cli_error("the %s engine failed on %llu queries (answered by the CPU engine instead)", backend_s,
                      (unsigned long long)(after.cpu_queries - before.cpu_queries));
        if (out) fclose(out);
        return -1;
    }
    return tdm_cli_report(out, out_path, answer, n, seconds, colliding, truncated, max_contacts) < 0 ? -1 : 0;
}

int tdm_cmd_check(int argc, char **argv)
{
    /* The joint-space form (a URDF robot in a planning scene) is check_robot.c's. */
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--urdf")) return tdm_cmd_check_robot(argc, argv);
    const char *env = NULL, *robot = NULL, *poses_path = NULL, *mode_s = NULL, *threads_s = "0", *out_path = NULL,
               *origin_s = "raw", *max_s = "1000000", *backend_s = "cpu", *traversal_s = "pairs";
    const tdm_opt opts[] = {{"--env", &env},         {"--robot", &robot},          {"--poses", &poses_path},
                            {"--mode", &mode_s},     {"--threads", &threads_s},    {"--out", &out_path},
                            {"--robot-origin", &origin_s}, {"--max-contacts", &max_s},
                            {"--backend", &backend_s}, {"--gpu-traversal", &traversal_s}};
    if (tdm_cli_parse(argc, argv, opts, sizeof opts / sizeof opts[0], "check") < 0) return TDM_EXIT_USAGE;
    if (!env || !robot || !poses_path || !mode_s) {
        tdm_cli_error("check: --env, --robot, --poses and --mode are required");
        return TDM_EXIT_USAGE;
    }
    static const char *const modes[] = {"bool", "contacts"}, *const origins[] = {"raw", "ompl"};
    int mode_i = tdm_cli_choice("check", "--mode", mode_s, modes, 2);
    int origin_i = tdm_cli_choice("check", "--robot-origin", origin_s, origins, 2);
    if (mode_i < 0 || origin_i < 0) return TDM_EXIT_USAGE;
    tdm_mode mode = mode_i ? TDM_MODE_CONTACTS : TDM_MODE_BOOL;
    tdm_origin origin = origin_i ? TDM_ORIGIN_OMPL : TDM_ORIGIN_RAW;
    static const char *const backends[] = {"cpu", "gpu", "hybrid"};
    static const tdm_backend_kind backend_kind[] = {TDM_BACKEND_CPU, TDM_BACKEND_GPU, TDM_BACKEND_HYBRID};
    int backend = tdm_cli_choice("check", "--backend", backend_s, backends, 3);
    if (backend < 0) return TDM_EXIT_USAGE;
    static const char *const traversals[] = {"pairs", "blocks", "wide"};
    int traversal = tdm_cli_choice("check", "--gpu-traversal", traversal_s, traversals, 3);
    if (traversal < 0) return TDM_EXIT_USAGE;
    tdm_backend_kind kind = backend_kind[backend];
    uint64_t threads, max_contacts;
    if (tdm_cli_u64("--threads", threads_s, 0, 4096, &threads) < 0) return TDM_EXIT_USAGE;
    if (tdm_cli_u64("--max-contacts", max_s, 1, UINT32_MAX, &max_contacts) < 0) return TDM_EXIT_USAGE;

    int status = TDM_EXIT_FAIL;
    tdm_bvh *a = NULL, *b = NULL;
    int a_added = 0, b_added = 0;
    tdm_pose *poses = NULL;
    tdm_xform *xs = NULL;
    tdm_sched_result *res = NULL;
    uint32_t *answer = NULL;
    tdm_sched *sched = NULL;
    tdm_scene *scene = NULL;
    FILE *out = NULL;
    size_t n = 0;
    char err[512];

    if (load("environment", env, TDM_ORIGIN_RAW, &a) < 0 || load("robot", robot, origin, &b) < 0) goto done;
    int rc = tdm_poses_read(poses_path, &poses, &n, err, sizeof err);
    if (rc != TDM_OK) {
        tdm_cli_error("poses: %s", err);
        goto done;
    }
    if (out_path && !(out = fopen(out_path, "w"))) {
        tdm_cli_error("cannot write %s: %s", out_path, strerror(errno));
        goto done;
    }
    size_t limit = kind == TDM_BACKEND_CPU ? CHUNK : GPU_CHUNK;
    size_t chunk = n < limit ? (n ? n : 1) : limit;
    tdm_sched_config sc = tdm_sched_config_default();
    sc.kind = kind;
    sc.threads = (int)threads;
    sc.chunk_tasks = (uint32_t)chunk; /* one engine run per scheduler run, as the loop below cuts them */
    sc.calibrate = 0;
    sc.lanes = 1;
    sc.gpu_traversal = (tdm_traversal)traversal;
    char why[320];
    rc = tdm_sched_create(&sc, &sched, why, sizeof why);
    if (rc != TDM_OK) {
        if (kind == TDM_BACKEND_CPU) tdm_cli_error("cannot start the CPU engine: %s", why[0] ? why : tdm_strerror(rc));
        else tdm_cli_error("cannot start the %s engine: %s", kind == TDM_BACKEND_GPU ? "GPU" : "hybrid",
                           why[0] ? why : tdm_strerror(rc));
        goto done;
    }
    if ((rc = tdm_sched_mesh_add(sched, a)) != TDM_OK) {
        tdm_cli_error("uploading the meshes to the GPU failed: %s", tdm_strerror(rc));
        goto done;
    }
    a_added = 1;
    if ((rc = tdm_sched_mesh_add(sched, b)) != TDM_OK) {
        tdm_cli_error("uploading the meshes to the GPU failed: %s", tdm_strerror(rc));
        goto done;
    }
    b_added = 1;
    const tdm_scene_obj objs[2] = {{0, a, 0, tdm_xform_identity()}, {1, b, 1, tdm_xform_identity()}};
    tdm_scene_error serr;
    if ((rc = tdm_scene_create(objs, 2, NULL, 0, &scene, &serr)) != TDM_OK) {
        tdm_cli_error("check: making the scene failed: %s", serr.msg);
        goto done;
    }
    /* Every pose's transform and query are made before the timed loop (as bench_cpu
     * prepares FCL's transforms); the scheduler turns them into tasks inside its runs. */
    size_t n_alloc = n ? n : 1;
    xs = malloc(n_alloc * sizeof *xs);
    res = malloc(chunk * sizeof *res);
    answer = malloc(n_alloc * sizeof *answer);
    if (!xs || !res || !answer) {
        tdm_cli_error("out of memory for %zu poses", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++) xs[i] = tdm_xform_from_pose(poses[i].t, poses[i].q);
    const tdm_sched_query proto = {scene, xs, mode, (uint32_t)max_contacts, NULL, NULL}; /* pose i: xs[i] */

    /* Untimed preparation: touch the result array and let the GPU engines size
     * their buffers and load their kernels, so that the timed loop measures
     * queries. The hybrid engine has no prepare call: it runs the first poses
     * once, untimed. */
    memset(res, 0, chunk * sizeof *res);
    if (kind == TDM_BACKEND_HYBRID) {
        size_t m = n < chunk ? n : chunk;
        if (m > HYBRID_WARMUP) m = HYBRID_WARMUP;
        if ((rc = tdm_sched_run_poses(sched, &proto, m, res)) != TDM_OK) {
            tdm_cli_error("the hybrid engine failed: %s", tdm_strerror(rc));
            goto done;
        }
    } else if ((rc = tdm_sched_prepare(sched, chunk)) != TDM_OK) {
        tdm_cli_error("preparing the GPU engine failed: %s", tdm_strerror(rc));
        goto done;
    }
    FILE *f = out;
    out = NULL; /* closed by tdm__check_run */
    if (tdm__check_run(sched, kind, backend_s, &proto, NULL, NULL, n, chunk, mode, res, answer, f, out_path, max_contacts) < 0)
        goto done;
    status = 0;
done:
    if (out) fclose(out);
    tdm_scene_destroy(scene);
    if (a_added) tdm_sched_mesh_remove(sched, a);
    if (b_added) tdm_sched_mesh_remove(sched, b);
    tdm_sched_destroy(sched);
    free(answer);
    free(res);
    free(xs);
    free(poses);
    tdm_bvh_free(a);
    tdm_bvh_free(b);
    return status;
}
