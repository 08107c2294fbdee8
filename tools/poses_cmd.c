/* `tandem poses random|path`: pose lists for checks and benchmarks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io.h"

/* splitmix64 (Steele, Lea and Flood): a small, well-mixed generator whose output
 * depends only on the seed, so pose files are reproducible everywhere. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static const double PI = 3.14159265358979323846;
static double uniform01(uint64_t *s) { return (double)(splitmix64(s) >> 11) * 0x1p-53; }

static FILE *open_out(const char *path)
{
    if (!path) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) tdm_cli_error("cannot write %s: %s", path, strerror(errno));
    return f;
}

static int finish(FILE *f, const char *path, int rc)
{
    int is_stdout = f == stdout;
    if (is_stdout ? fflush(f) != 0 : fclose(f) != 0) rc = TDM_EIO;
    if (rc != TDM_OK) {
        tdm_cli_error("writing %s failed", path ? path : "stdout");
        return TDM_EXIT_FAIL;
    }
    return 0;
}

static int poses_random(int argc, char **argv)
{
    const char *cfg = NULL, *n_s = NULL, *seed_s = NULL, *out_path = NULL;
    const tdm_opt opts[] = {{"--cfg", &cfg}, {"--n", &n_s}, {"--seed", &seed_s}, {"--out", &out_path}};
    if (tdm_cli_parse(argc, argv, opts, 4, "poses random") < 0) return TDM_EXIT_USAGE;
    if (!cfg || !n_s || !seed_s) {
        tdm_cli_error("poses random: --cfg, --n and --seed are required");
        return TDM_EXIT_USAGE;
    }
    uint64_t n, seed;
    if (tdm_cli_u64("--n", n_s, 0, 1ull << 32, &n) < 0 || tdm_cli_u64("--seed", seed_s, 0, UINT64_MAX, &seed) < 0)
        return TDM_EXIT_USAGE;
    tdm_cfg_volume vol;
    char err[512];
    if (tdm_cfg_read_volume(cfg, &vol, err, sizeof err) != TDM_OK) {
        tdm_cli_error("%s", err);
        return TDM_EXIT_FAIL;
    }
    FILE *f = open_out(out_path);
    if (!f) return TDM_EXIT_FAIL;
    uint64_t s = seed;
    int rc = TDM_OK;
    for (uint64_t i = 0; i < n && rc == TDM_OK; i++) {
        tdm_pose p;
        double u[3];
        for (int k = 0; k < 3; k++) u[k] = vol.min[k] + (vol.max[k] - vol.min[k]) * uniform01(&s);
        p.t = tdm_d3(u[0], u[1], u[2]);
        /* Shoemake, "Uniform random rotations" (Graphics Gems III) */
        double u1 = uniform01(&s), u2 = 2 * PI * uniform01(&s), u3 = 2 * PI * uniform01(&s);
        double r1 = sqrt(1 - u1), r2 = sqrt(u1);
        p.q = (tdm_quat){r1 * sin(u2), r1 * cos(u2), r2 * sin(u3), r2 * cos(u3)};
        rc = tdm_poses_write(f, &p, 1);
    }
    return finish(f, out_path, rc);
}

static int poses_path(int argc, char **argv)
{
    const char *path = NULL, *steps_s = NULL, *out_path = NULL;
    const tdm_opt opts[] = {{"--path", &path}, {"--steps", &steps_s}, {"--out", &out_path}};
    if (tdm_cli_parse(argc, argv, opts, 3, "poses path") < 0) return TDM_EXIT_USAGE;
    if (!path || !steps_s) {
        tdm_cli_error("poses path: --path and --steps are required");
        return TDM_EXIT_USAGE;
    }
    uint64_t k;
    if (tdm_cli_u64("--steps", steps_s, 1, 1u << 24, &k) < 0) return TDM_EXIT_USAGE;
    tdm_pose *w;
    size_t nw;
    char err[512];
    if (tdm_poses_read(path, &w, &nw, err, sizeof err) != TDM_OK) {
        tdm_cli_error("%s", err);
        return TDM_EXIT_FAIL;
    }
    if (nw == 0) {
        free(w);
        tdm_cli_error("%s has no waypoints", path);
        return TDM_EXIT_FAIL;
    }
    FILE *f = open_out(out_path);
    if (!f) {
        free(w);
        return TDM_EXIT_FAIL;
    }
    int rc = TDM_OK;
    for (size_t i = 0; i + 1 < nw && rc == TDM_OK; i++) {
        for (uint64_t j = 0; j < k && rc == TDM_OK; j++) {
            double s = (double)j / (double)k;
            tdm_pose p;
            p.t = tdm_d3_add(w[i].t, tdm_d3_scale(tdm_d3_sub(w[i + 1].t, w[i].t), s));
            p.q = j == 0 ? w[i].q : tdm_quat_slerp(w[i].q, w[i + 1].q, s);
            rc = tdm_poses_write(f, &p, 1);
        }
    }
    if (rc == TDM_OK) rc = tdm_poses_write(f, &w[nw - 1], 1);
    free(w);
    return finish(f, out_path, rc);
}

int tdm_cmd_poses(int argc, char **argv)
{
    if (argc >= 1 && !strcmp(argv[0], "random")) return poses_random(argc - 1, argv + 1);
    if (argc >= 1 && !strcmp(argv[0], "path")) return poses_path(argc - 1, argv + 1);
    tdm_cli_error("poses: expected 'random' or 'path' (see tandem --help)");
    return TDM_EXIT_USAGE;
}
