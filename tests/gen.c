/* Generated meshes, poses and files for the test suites; see gen.h. */
#include "gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double PI = 3.14159265358979323846;

uint64_t gen_next(gen_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double gen_uniform(gen_rng *r) { return (double)(gen_next(r) >> 11) * 0x1p-53; }

double gen_range(gen_rng *r, double lo, double hi) { return lo + (hi - lo) * gen_uniform(r); }

int64_t gen_int(gen_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    if (span == 0) return (int64_t)gen_next(r); /* the whole 64-bit range */
    return lo + (int64_t)(gen_next(r) % span);
}

uint64_t gen_seed(uint64_t fallback)
{
    const char *s = getenv("TDM_TEST_SEED");
    if (!s || !*s) return fallback;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    return (errno || *end) ? fallback : (uint64_t)v;
}

tdm_quat gen_rotation(gen_rng *r)
{
    double u1 = gen_uniform(r), u2 = 2 * PI * gen_uniform(r), u3 = 2 * PI * gen_uniform(r);
    double r1 = sqrt(1 - u1), r2 = sqrt(u1);
    tdm_quat q = {r1 * sin(u2), r1 * cos(u2), r2 * sin(u3), r2 * cos(u3)};
    double n = tdm_quat_norm(q);
    q.x /= n; q.y /= n; q.z /= n; q.w /= n;
    return q;
}

tdm_dvec3 gen_in_ball(gen_rng *r, tdm_dvec3 c, double radius)
{
    for (;;) {
        tdm_dvec3 p = tdm_d3(gen_range(r, -1, 1), gen_range(r, -1, 1), gen_range(r, -1, 1));
        if (tdm_d3_len2(p) <= 1) return tdm_d3_add(c, tdm_d3_scale(p, radius));
    }
}

gen_pose gen_pose_in_box(gen_rng *r, const double lo[3], const double hi[3])
{
    gen_pose p;
    p.t = tdm_d3(gen_range(r, lo[0], hi[0]), gen_range(r, lo[1], hi[1]), gen_range(r, lo[2], hi[2]));
    p.q = gen_rotation(r);
    return p;
}

gen_pose gen_pose_in_ball(gen_rng *r, tdm_dvec3 c, double radius)
{
    gen_pose p;
    p.t = gen_in_ball(r, c, radius);
    p.q = gen_rotation(r);
    return p;
}

/* A growing vertex + index list, turned into a validated mesh at the end. */
typedef struct builder {
    float *v;
    uint32_t *t;
    uint32_t nv, nt, cv, ct;
    int oom;
} builder;

static uint32_t add_vertex(builder *b, double x, double y, double z)
{
    if (b->nv == b->cv) {
        uint32_t nc = b->cv ? 2 * b->cv : 64;
        float *nv = realloc(b->v, sizeof(float) * 3 * nc);
        if (!nv) { b->oom = 1; return 0; }
        b->v = nv;
        b->cv = nc;
    }
    b->v[3 * b->nv] = (float)x;
    b->v[3 * b->nv + 1] = (float)y;
    b->v[3 * b->nv + 2] = (float)z;
    return b->nv++;
}

static void add_tri(builder *b, uint32_t i, uint32_t j, uint32_t k)
{
    if (b->nt == b->ct) {
        uint32_t nc = b->ct ? 2 * b->ct : 64;
        uint32_t *nt = realloc(b->t, sizeof(uint32_t) * 3 * nc);
        if (!nt) { b->oom = 1; return; }
        b->t = nt;
        b->ct = nc;
    }
    b->t[3 * b->nt] = i;
    b->t[3 * b->nt + 1] = j;
    b->t[3 * b->nt + 2] = k;
    b->nt++;
}

static void add_free_tri(builder *b, tdm_dvec3 p, tdm_dvec3 q, tdm_dvec3 s)
{
    uint32_t i = add_vertex(b, p.x, p.y, p.z), j = add_vertex(b, q.x, q.y, q.z), k = add_vertex(b, s.x, s.y, s.z);
    add_tri(b, i, j, k);
}

static tdm_mesh *finish(builder *b)
{
    tdm_mesh *m = NULL;
    char err[256];
    if (!b->oom && tdm_mesh_create(b->v, b->nv, b->t, b->nt, NULL, &m, err, sizeof err) != TDM_OK) {
        fprintf(stderr, "gen: tdm_mesh_create failed: %s\n", err);
        m = NULL;
    }
    free(b->v);
    free(b->t);
    return m;
}

tdm_mesh *gen_sphere(double radius, int segments)
{
    builder b = {0};
    int rings = segments / 2;
    uint32_t north = add_vertex(&b, 0, 0, radius);
    for (int i = 1; i < rings; i++) {
        double th = PI * i / rings;
        for (int j = 0; j < segments; j++) {
            double ph = 2 * PI * j / segments;
            add_vertex(&b, radius * sin(th) * cos(ph), radius * sin(th) * sin(ph), radius * cos(th));
        }
    }
    uint32_t south = add_vertex(&b, 0, 0, -radius);
#define RING(i, j) (1 + (uint32_t)((i) - 1) * (uint32_t)segments + (uint32_t)((j) % segments))
    for (int j = 0; j < segments; j++) {
        add_tri(&b, north, RING(1, j), RING(1, j + 1));
        add_tri(&b, south, RING(rings - 1, j + 1), RING(rings - 1, j));
    }
    for (int i = 1; i < rings - 1; i++)
        for (int j = 0; j < segments; j++) {
            add_tri(&b, RING(i, j), RING(i + 1, j), RING(i + 1, j + 1));
            add_tri(&b, RING(i, j), RING(i + 1, j + 1), RING(i, j + 1));
        }
#undef RING
    return finish(&b);
}

tdm_mesh *gen_torus(double R, double r, int nu, int nv)
{
    builder b = {0};
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            double u = 2 * PI * i / nu, v = 2 * PI * j / nv;
            add_vertex(&b, (R + r * cos(v)) * cos(u), (R + r * cos(v)) * sin(u), r * sin(v));
        }
    for (int i = 0; i < nu; i++)
        for (int j = 0; j < nv; j++) {
            uint32_t a = (uint32_t)(i * nv + j), c = (uint32_t)(((i + 1) % nu) * nv + j);
            uint32_t d = (uint32_t)(((i + 1) % nu) * nv + (j + 1) % nv), e = (uint32_t)(i * nv + (j + 1) % nv);
            add_tri(&b, a, c, d);
            add_tri(&b, a, d, e);
        }
    return finish(&b);
}

tdm_mesh *gen_box(double hx, double hy, double hz)
{
    builder b = {0};
    for (int i = 0; i < 8; i++) add_vertex(&b, i & 1 ? hx : -hx, i & 2 ? hy : -hy, i & 4 ? hz : -hz);
    static const int f[12][3] = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                                 {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
    for (int i = 0; i < 12; i++) add_tri(&b, (uint32_t)f[i][0], (uint32_t)f[i][1], (uint32_t)f[i][2]);
    return finish(&b);
}

static tdm_dvec3 unit_vector(gen_rng *r)
{
    for (;;) {
        tdm_dvec3 p = tdm_d3(gen_range(r, -1, 1), gen_range(r, -1, 1), gen_range(r, -1, 1));
        double l = tdm_d3_len(p);
        if (l > 0.1 && l <= 1) return tdm_d3_scale(p, 1 / l);
    }
}

tdm_mesh *gen_slivers(gen_rng *r, int n, double half, double len, double aspect)
{
    builder b = {0};
    for (int i = 0; i < n; i++) {
        tdm_dvec3 c = tdm_d3(gen_range(r, -half, half), gen_range(r, -half, half), gen_range(r, -half, half));
        tdm_dvec3 u = unit_vector(r), w = unit_vector(r);
        w = tdm_d3_sub(w, tdm_d3_scale(u, tdm_d3_dot(u, w)));
        double wl = tdm_d3_len(w);
        if (wl < 1e-3) { i--; continue; }
        w = tdm_d3_scale(w, len * aspect / wl);
        tdm_dvec3 p = tdm_d3_sub(c, tdm_d3_scale(u, len / 2)), q = tdm_d3_add(c, tdm_d3_scale(u, len / 2));
        add_free_tri(&b, p, q, tdm_d3_add(c, w));
    }
    return finish(&b);
}

tdm_mesh *gen_pile(gen_rng *r, int n, double half, double size)
{
    builder b = {0};
    for (int i = 0; i < n; i++) {
        tdm_dvec3 c = tdm_d3(gen_range(r, -half, half), gen_range(r, -half, half), gen_range(r, -half, half));
        tdm_dvec3 p[3];
        for (int k = 0; k < 3; k++)
            p[k] = tdm_d3_add(c, tdm_d3(gen_range(r, -size, size), gen_range(r, -size, size), gen_range(r, -size, size)));
        add_free_tri(&b, p[0], p[1], p[2]);
    }
    return finish(&b);
}

static tdm_dvec3 grid_point(gen_rng *r, int lo, int hi, double step)
{
    return tdm_d3((double)gen_int(r, lo, hi) * step, (double)gen_int(r, lo, hi) * step,
                  (double)gen_int(r, lo, hi) * step);
}

tdm_mesh *gen_grid_pile(gen_rng *r, int n, int half_steps, int size_steps, double step)
{
    builder b = {0};
    for (int i = 0; i < n; i++) {
        tdm_dvec3 c = grid_point(r, -half_steps, half_steps, step), p[3];
        for (int k = 0; k < 3; k++) p[k] = tdm_d3_add(c, grid_point(r, -size_steps, size_steps, step));
        add_free_tri(&b, p[0], p[1], p[2]);
    }
    return finish(&b);
}

tdm_mesh *gen_zero_area(gen_rng *r, int n, int half_steps, double step)
{
    builder b = {0};
    for (int i = 0; i < n; i++) {
        tdm_dvec3 a = grid_point(r, -half_steps, half_steps, step);
        switch (i % 4) {
        case 0: { /* collinear: a, a + i d, a + j d, all on the grid */
            tdm_dvec3 d = grid_point(r, -2, 2, step);
            double s = (double)gen_int(r, -3, 3), t = (double)gen_int(r, -3, 3);
            add_free_tri(&b, a, tdm_d3_add(a, tdm_d3_scale(d, s)), tdm_d3_add(a, tdm_d3_scale(d, t)));
            break;
        }
        case 1: { /* a repeated vertex */
            tdm_dvec3 c = tdm_d3_add(a, grid_point(r, -4, 4, step));
            int k = (int)gen_int(r, 0, 2);
            if (k == 0) add_free_tri(&b, a, a, c);
            else if (k == 1) add_free_tri(&b, a, c, a);
            else add_free_tri(&b, c, a, a);
            break;
        }
        case 2: /* a point */
            add_free_tri(&b, a, a, a);
            break;
        default: /* a proper (or, by chance, degenerate) triangle */
            add_free_tri(&b, a, tdm_d3_add(a, grid_point(r, -4, 4, step)), tdm_d3_add(a, grid_point(r, -4, 4, step)));
            break;
        }
    }
    return finish(&b);
}

tdm_mesh *gen_translated(const tdm_mesh *m, double dx, double dy, double dz)
{
    builder b = {0};
    for (uint32_t i = 0; i < m->n_verts; i++)
        add_vertex(&b, m->verts[3 * i] + dx, m->verts[3 * i + 1] + dy, m->verts[3 * i + 2] + dz);
    for (uint32_t i = 0; i < m->n_tris; i++) add_tri(&b, m->tris[3 * i], m->tris[3 * i + 1], m->tris[3 * i + 2]);
    return finish(&b);
}

tdm_dvec3 gen_vertex(const tdm_mesh *m, uint32_t t, int k)
{
    const float *v = &m->verts[3 * m->tris[3 * t + (uint32_t)k]];
    return tdm_d3(v[0], v[1], v[2]);
}

int gen_write_obj(const char *path, const tdm_mesh *m)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "# generated by tests/gen.c\n");
    for (uint32_t i = 0; i < m->n_verts; i++)
        fprintf(f, "v %.9g %.9g %.9g\n", (double)m->verts[3 * i], (double)m->verts[3 * i + 1],
                (double)m->verts[3 * i + 2]);
    for (uint32_t i = 0; i < m->n_tris; i++)
        fprintf(f, "f %u %u %u\n", m->tris[3 * i] + 1, m->tris[3 * i + 1] + 1, m->tris[3 * i + 2] + 1);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return -1;
    return 0;
}

int gen_write_poses(const char *path, const gen_pose *p, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.17g %.17g %.17g %.17g %.17g %.17g %.17g\n", p[i].t.x, p[i].t.y, p[i].t.z, p[i].q.x, p[i].q.y,
                p[i].q.z, p[i].q.w);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return -1;
    return 0;
}

char *gen_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (;;) {
        if (n + 4096 + 1 > cap) s = realloc(s, cap *= 2);
        size_t k = fread(s + n, 1, 4096, f);
        n += k;
        if (k < 4096) break;
    }
    s[n] = 0;
    fclose(f);
    if (len) *len = n;
    return s;
}

size_t gen_split_lines(char *s, char ***out)
{
    size_t n = 0, cap = 64;
    char **v = malloc(sizeof *v * cap);
    while (*s) {
        if (n == cap) v = realloc(v, sizeof *v * (cap *= 2));
        v[n++] = s;
        char *nl = strchr(s, '\n');
        if (!nl) break;
        *nl = 0;
        s = nl + 1;
    }
    *out = v;
    return n;
}
