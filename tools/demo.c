/* `tandem demo`: a generated scene for a first run without any mesh files. The
 * environment is a torus around a box pillar; the robot is a sphere; poses are
 * uniform in a box around them, about half of them colliding. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "io.h"

static const double PI = 3.14159265358979323846;

typedef struct obj_writer { FILE *f; uint32_t n_verts; } obj_writer;

static void torus(obj_writer *w, double R, double r, int nu, int nv)
{
    uint32_t base = w->n_verts;
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            double u = 2 * PI * i / nu, v = 2 * PI * j / nv;
            fprintf(w->f, "v %.9g %.9g %.9g\n", (R + r * cos(v)) * cos(u), (R + r * cos(v)) * sin(u), r * sin(v));
        }
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            uint32_t a = base + (uint32_t)(i * nv + j) + 1, b = base + (uint32_t)(((i + 1) % nu) * nv + j) + 1;
            uint32_t c = base + (uint32_t)(((i + 1) % nu) * nv + (j + 1) % nv) + 1,
                     d = base + (uint32_t)(i * nv + (j + 1) % nv) + 1;
            fprintf(w->f, "f %u %u %u\nf %u %u %u\n", a, b, c, a, c, d);
        }
    w->n_verts += (uint32_t)(nu * nv);
}

static void box(obj_writer *w, double hx, double hy, double hz)
{
    uint32_t b = w->n_verts + 1;
    for (int i = 0; i < 8; i++)
        fprintf(w->f, "v %g %g %g\n", i & 1 ? hx : -hx, i & 2 ? hy : -hy, i & 4 ? hz : -hz);
    static const int f[12][3] = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                                 {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
    for (int i = 0; i < 12; i++) fprintf(w->f, "f %u %u %u\n", b + f[i][0], b + f[i][1], b + f[i][2]);
    w->n_verts += 8;
}

static void sphere(obj_writer *w, double r, int nlat, int nlon)
{
    uint32_t base = w->n_verts + 1;
    for (int i = 0; i <= nlat; i++)
        for (int j = 0; j < nlon; j++) {
            double th = PI * i / nlat, ph = 2 * PI * j / nlon;
            fprintf(w->f, "v %.9g %.9g %.9g\n", r * sin(th) * cos(ph), r * sin(th) * sin(ph), r * cos(th));
        }
    for (int i = 0; i < nlat; i++)
        for (int j = 0; j < nlon; j++) {
            uint32_t a = base + (uint32_t)(i * nlon + j), b = base + (uint32_t)((i + 1) * nlon + j);
            uint32_t c = base + (uint32_t)((i + 1) * nlon + (j + 1) % nlon), d = base + (uint32_t)(i * nlon + (j + 1) % nlon);
            fprintf(w->f, "f %u %u %u\nf %u %u %u\n", a, b, c, a, c, d);
        }
    w->n_verts += (uint32_t)((nlat + 1) * nlon);
}

static FILE *open_in(const char *dir, const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) tdm_cli_error("cannot write %s: %s", path, strerror(errno));
    return f;
}

int tdm_cmd_demo(int argc, char **argv)
{
    const char *dir = NULL, *n_s = "10000", *seed_s = "1";
    const tdm_opt opts[] = {{"--dir", &dir}, {"--n", &n_s}, {"--seed", &seed_s}};
    if (tdm_cli_parse(argc, argv, opts, 3, "demo") < 0) return TDM_EXIT_USAGE;
    if (!dir) {
        tdm_cli_error("demo: --dir is required");
        return TDM_EXIT_USAGE;
    }
    uint64_t n, seed;
    if (tdm_cli_u64("--n", n_s, 1, 1ull << 30, &n) < 0 || tdm_cli_u64("--seed", seed_s, 0, UINT64_MAX, &seed) < 0)
        return TDM_EXIT_USAGE;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        tdm_cli_error("cannot create %s: %s", dir, strerror(errno));
        return TDM_EXIT_FAIL;
    }
    char path[4096];
    obj_writer w = {open_in(dir, "env.obj", path, sizeof path), 0};
    if (!w.f) return TDM_EXIT_FAIL;
    torus(&w, 2.0, 0.5, 96, 48);
    box(&w, 0.4, 0.4, 1.5);
    if (fclose(w.f) != 0) return TDM_EXIT_FAIL;
    w = (obj_writer){open_in(dir, "robot.obj", path, sizeof path), 0};
    if (!w.f) return TDM_EXIT_FAIL;
    sphere(&w, 0.6, 24, 48);
    if (fclose(w.f) != 0) return TDM_EXIT_FAIL;

    FILE *f = open_in(dir, "poses.txt", path, sizeof path);
    if (!f) return TDM_EXIT_FAIL;
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (uint64_t i = 0; i < n; i++) {
        double u[7];
        for (int k = 0; k < 7; k++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17; /* xorshift64: demo data only */
            u[k] = (double)(s >> 11) * 0x1p-53;
        }
        double r1 = sqrt(1 - u[3]), r2 = sqrt(u[3]);
        tdm_pose p = {tdm_d3(6 * u[0] - 3, 6 * u[1] - 3, 3 * u[2] - 1.5),
                      {r1 * sin(2 * PI * u[4]), r1 * cos(2 * PI * u[4]), r2 * sin(2 * PI * u[5]), r2 * cos(2 * PI * u[5])}};
        tdm_poses_write(f, &p, 1);
    }
    if (fclose(f) != 0) return TDM_EXIT_FAIL;
    printf("wrote %s/env.obj, %s/robot.obj and %s/poses.txt (%llu poses)\n", dir, dir, dir, (unsigned long long)n);
    return 0;
}
