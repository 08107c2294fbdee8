/* Shared set-up of the URDF robot commands: see robot_run.h. */
#include "robot_run.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../geom/primitive.h"
#include "cli.h"
#include "io.h"

int tdm__robot_read_lines(const char *path, const tdm__robot_lines *spec, double **out, size_t *n_out)
{
    const char *what = spec->what;
    size_t count = spec->count, width = count ? count : 1;
    FILE *f = fopen(path, "r");
    if (!f) {
        tdm_cli_error("%s: cannot read %s: %s", what, path, strerror(errno));
        return -1;
    }
    double *v = NULL;
    size_t n = 0, cap = 0, lineno = 0;
    char *line = NULL;
    size_t linecap = 0;
    int status = -1;
    while (getline(&line, &linecap, f) >= 0) {
        lineno++;
        char *s = line;
        while (isspace((unsigned char)*s)) s++;
        if (!*s || *s == '#') continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 1024;
            double *w = realloc(v, c * width * sizeof *w);
            if (w) v = w;
            if (!w || (spec->grow && spec->grow(spec->ctx, c) < 0)) {
                tdm_cli_error("%s: out of memory", what);
                goto done;
            }
            cap = c;
        }
        size_t k = 0;
        for (;;) {
            while (isspace((unsigned char)*s)) s++;
            if (!*s) break;
            char *end;
            errno = 0;
            double x = strtod(s, &end);
            if (end == s || (*end && !isspace((unsigned char)*end))) {
                tdm_cli_error("%s: %s:%zu: value %zu is not a number", what, path, lineno, k + 1);
                goto done;
            }
            if (!isfinite(x)) {
                tdm_cli_error("%s: %s:%zu: value %zu is not finite", what, path, lineno, k + 1);
                goto done;
            }
            if (k < count) v[n * count + k] = x;
            k++;
            s = end;
        }
        if (k != count) {
            tdm_cli_error("%s: %s:%zu: %zu values, %s", what, path, lineno, k, spec->expect);
            goto done;
        }
        if (spec->record && spec->record(spec->ctx, path, lineno, n, v + n * count) < 0) goto done;
        n++;
    }
    if (ferror(f)) {
        tdm_cli_error("%s: cannot read %s: %s", what, path, strerror(errno));
        goto done;
    }
    status = 0;
done:
    free(line);
    fclose(f);
    if (status == 0) {
        *out = v;
        *n_out = n;
    } else {
        free(v);
    }
    return status;
}

static int load_mesh(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen)
{
    (void)ctx;
    return tdm_mesh_load_file(path, TDM_ORIGIN_RAW, out, err, errlen);
}

int tdm__robot_open(tdm__robot_run *run, const char *urdf, const char *srdf, const char *world)
{
    char err[1024];
    if (tdm_robot_load(urdf, srdf, &run->robot, err, sizeof err) != TDM_OK) {
        tdm_cli_error("robot: %s", err);
        return -1;
    }
    if (tdm_planning_scene_read(world, &run->ps, err, sizeof err) != TDM_OK) {
        tdm_cli_error("world: %s", err);
        return -1;
    }
    run->world = world;
    return 0;
}

int tdm__robot_scene(tdm__robot_run *run, const char *what)
{
    char err[1024];
    if (tdm_robot_scene_create(run->robot, run->ps, load_mesh, NULL, TDM_PRIMITIVE_TOLERANCE, &run->rs, err,
                               sizeof err) != TDM_OK) {
        const char *urdf = run->robot->urdf_path;
        if (run->world && strncmp(err, urdf, strlen(urdf)) != 0) tdm_cli_error("%s: %s: %s", what, run->world, err);
        else tdm_cli_error("%s: %s", what, err);
        return -1;
    }
    return 0;
}

int tdm__robot_sched(tdm__robot_run *run, tdm_backend_kind kind, int threads, int gpu_streams)
{
    tdm_sched_config sc = tdm_sched_config_default();
    sc.gpu_streams = gpu_streams;
    sc.kind = kind;
    sc.threads = threads;
    sc.calibrate = 0;
    sc.lanes = 1;
    /* engine runs of up to this many kept tasks (after culling): large ones keep the GPU's slots full */
    sc.chunk_tasks = kind == TDM_BACKEND_CPU ? 65536u : 1u << 20;
    char why[320];
    int rc;
    if ((rc = tdm_sched_create(&sc, &run->sched, why, sizeof why)) != TDM_OK) {
        tdm_cli_error("cannot start the %s engine: %s", kind == TDM_BACKEND_CPU ? "CPU" : kind == TDM_BACKEND_GPU ? "GPU"
                                                                                                              : "hybrid",
                      why[0] ? why : tdm_strerror(rc));
        return -1;
    }
    for (; run->n_added < run->rs->n_objects; run->n_added++)
        if ((rc = tdm_sched_mesh_add(run->sched, run->rs->bvhs[run->n_added])) != TDM_OK) {
            tdm_cli_error("uploading the meshes to the GPU failed: %s", tdm_strerror(rc));
            return -1;
        }
    return 0;
}

void tdm__robot_close(tdm__robot_run *run)
{
    for (uint32_t i = 0; i < run->n_added; i++) tdm_sched_mesh_remove(run->sched, run->rs->bvhs[i]);
    tdm_sched_destroy(run->sched);
    tdm_robot_scene_destroy(run->rs);
    tdm_planning_scene_free(run->ps);
    tdm_robot_free(run->robot);
    *run = (tdm__robot_run)TDM__ROBOT_RUN_INIT;
}
