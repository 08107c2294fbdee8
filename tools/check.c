/* `tandem check`: offline queries of one robot against one environment. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/gpu.h"
#include "../gpu/hybrid.h"
#include "../workpile/cpu_engine.h"
#include "cli.h"
#include "io.h"

/* Poses per engine run: bounds the task and result arrays for long pose files.
 * The GPU engines want large batches to fill the device. */
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

int tdm_cmd_check(int argc, char **argv)
{
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
    enum { CPU, GPU, HYBRID };
    static const char *const backends[] = {"cpu", "gpu", "hybrid"};
    int backend = tdm_cli_choice("check", "--backend", backend_s, backends, 3);
    if (backend < 0) return TDM_EXIT_USAGE;
    static const char *const traversals[] = {"pairs", "blocks", "wide"};
    static const int traversal_kind[] = {TDM_GPU_TRAVERSE_PAIRS, TDM_GPU_TRAVERSE_BLOCKS, TDM_GPU_TRAVERSE_WIDE};
    int traversal = tdm_cli_choice("check", "--gpu-traversal", traversal_s, traversals, 3);
    if (traversal < 0) return TDM_EXIT_USAGE;
    int use_gpu = backend != CPU; /* a tdm_gpu holds the meshes of both GPU backends */
    uint64_t threads, max_contacts;
    if (tdm_cli_u64("--threads", threads_s, 0, 4096, &threads) < 0) return TDM_EXIT_USAGE;
    if (tdm_cli_u64("--max-contacts", max_s, 1, UINT32_MAX, &max_contacts) < 0) return TDM_EXIT_USAGE;

    int status = TDM_EXIT_FAIL;
    tdm_bvh *a = NULL, *b = NULL;
    tdm_pose *poses = NULL;
    tdm_task *tasks = NULL;
    tdm_collide_result *res = NULL;
    uint32_t *answer = NULL;
    tdm_cpu_engine *eng = NULL;
    tdm_gpu *gpu = NULL;
    tdm_gpu_mesh *ga = NULL, *gb = NULL;
    tdm_gpu_task *gtasks = NULL;
    tdm_hybrid *hyb = NULL;
    tdm_hybrid_task *htasks = NULL;
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
        tdm_cli_error("cannot write %s", out_path);
        goto done;
    }
    if (use_gpu) {
        const char *why = NULL;
        tdm_gpu_config gc = tdm_gpu_config_default();
        gc.traversal = traversal_kind[traversal];
        rc = tdm_gpu_create(&gc, &gpu, &why);
        if (rc != TDM_OK) {
            tdm_cli_error("cannot start the GPU engine: %s%s%s", tdm_strerror(rc), why && *why ? ": " : "",
                          why ? why : "");
            goto done;
        }
        if ((rc = tdm_gpu_mesh_upload(gpu, a, &ga)) != TDM_OK || (rc = tdm_gpu_mesh_upload(gpu, b, &gb)) != TDM_OK) {
            tdm_cli_error("uploading the meshes to the GPU failed: %s", tdm_strerror(rc));
            goto done;
        }
        if (backend == HYBRID) {
            tdm_hybrid_config hc = tdm_hybrid_config_default();
            hc.threads = (int)threads;
            if ((rc = tdm_hybrid_create(gpu, &hc, &hyb)) != TDM_OK) {
                tdm_cli_error("cannot start the hybrid engine: %s", tdm_strerror(rc));
                goto done;
            }
        }
    } else {
        rc = tdm_cpu_engine_create((int)threads, &eng);
        if (rc != TDM_OK) {
            tdm_cli_error("cannot start the CPU engine: %s", tdm_strerror(rc));
            goto done;
        }
    }
    size_t limit = use_gpu ? GPU_CHUNK : CHUNK;
    size_t chunk = n < limit ? (n ? n : 1) : limit;
    /* Every pose's task is built before the timed loop (as bench_cpu prepares
     * FCL's transforms), so that the loop times the engine alone. */
    size_t n_alloc = n ? n : 1;
    void *engine_tasks;
    if (backend == HYBRID) engine_tasks = htasks = malloc(n_alloc * sizeof *htasks);
    else if (use_gpu) engine_tasks = gtasks = malloc(n_alloc * sizeof *gtasks);
    else engine_tasks = tasks = malloc(n_alloc * sizeof *tasks);
    res = malloc(chunk * sizeof *res);
    answer = malloc((n ? n : 1) * sizeof *answer);
    if (!engine_tasks || !res || !answer) {
        tdm_cli_error("out of memory for %zu poses", n);
        goto done;
    }

    for (size_t i = 0; i < n; i++) {
        tdm_xform x = tdm_xform_from_pose(poses[i].t, poses[i].q);
        if (backend == HYBRID) htasks[i] = (tdm_hybrid_task){a, b, ga, gb, x, mode, (uint32_t)max_contacts};
        else if (use_gpu) gtasks[i] = (tdm_gpu_task){ga, gb, x, mode, (uint32_t)max_contacts};
        else tasks[i] = (tdm_task){a, b, x, mode, (uint32_t)max_contacts, NULL};
    }

    /* Untimed preparation: touch the result array and let the GPU engines size
     * their buffers and load their kernels, so that the timed loop measures
     * queries. The hybrid engine has no prepare call: it runs the first poses
     * once, untimed. */
    memset(res, 0, chunk * sizeof *res);
    if (backend == HYBRID) {
        size_t m = n < chunk ? n : chunk;
        if (m > HYBRID_WARMUP) m = HYBRID_WARMUP;
        if ((rc = tdm_hybrid_run(hyb, htasks, m, res)) != TDM_OK) {
            tdm_cli_error("the hybrid engine failed: %s", tdm_strerror(rc));
            goto done;
        }
    } else if (use_gpu && (rc = tdm_gpu_prepare(gpu, chunk)) != TDM_OK) {
        tdm_cli_error("preparing the GPU engine failed: %s", tdm_strerror(rc));
        goto done;
    }

    size_t colliding = 0, truncated = 0;
    double t0 = tdm_cli_now();
    for (size_t lo = 0; lo < n; lo += chunk) {
        size_t m = n - lo < chunk ? n - lo : chunk;
        if (backend == HYBRID) {
            rc = tdm_hybrid_run(hyb, htasks + lo, m, res);
            if (rc != TDM_OK) {
                tdm_cli_error("the hybrid engine failed: %s", tdm_strerror(rc));
                goto done;
            }
        } else if (use_gpu) {
            rc = tdm_gpu_run(gpu, gtasks + lo, m, res);
            if (rc != TDM_OK) {
                tdm_cli_error("the GPU engine failed: %s", tdm_strerror(rc));
                goto done;
            }
        } else {
            tdm_cpu_engine_run(eng, tasks + lo, m, res);
        }
        for (size_t i = 0; i < m; i++) {
            colliding += res[i].colliding;
            truncated += res[i].truncated;
            answer[lo + i] = mode == TDM_MODE_BOOL ? res[i].colliding : res[i].n_pairs;
        }
    }
    double seconds = tdm_cli_now() - t0;

    FILE *f = out;
    out = NULL; /* closed by tdm_cli_report */
    if (tdm_cli_report(f, out_path, answer, n, seconds, colliding, truncated, max_contacts) < 0) goto done;
    status = 0;
done:
    if (out) fclose(out);
    tdm_cpu_engine_destroy(eng);
    tdm_hybrid_destroy(hyb);
    if (gpu) {
        tdm_gpu_mesh_free(gpu, ga);
        tdm_gpu_mesh_free(gpu, gb);
        tdm_gpu_destroy(gpu);
    }
    free(gtasks);
    free(htasks);
    free(answer);
    free(res);
    free(tasks);
    free(poses);
    tdm_bvh_free(a);
    tdm_bvh_free(b);
    return status;
}
