/* All-pairs brute force; see brute.h. */
#include "brute.h"

#include <stdlib.h>
#include <string.h>

#include "geom/tri.h"

static void fill(brute_tri *out, const tdm_mesh *m, const tdm_xform *x)
{
    for (uint32_t t = 0; t < m->n_tris; t++) {
        brute_tri *b = &out[t];
        for (int k = 0; k < 3; k++) {
            const float *v = &m->verts[3 * (size_t)m->tris[3 * (size_t)t + (size_t)k]];
            b->v[k] = tdm_d3(v[0], v[1], v[2]);
            if (x) b->v[k] = tdm_xform_apply(x, b->v[k]);
        }
        for (int c = 0; c < 3; c++) {
            double a = tdm_d3_get(b->v[0], c), d = tdm_d3_get(b->v[1], c), e = tdm_d3_get(b->v[2], c);
            b->lo[c] = a < d ? (a < e ? a : e) : (d < e ? d : e);
            b->hi[c] = a > d ? (a > e ? a : e) : (d > e ? d : e);
        }
    }
}

int brute_pair_cmp(const void *x, const void *y)
{
    const tdm_pair *a = x, *b = y;
    if (a->a_tri != b->a_tri) return a->a_tri < b->a_tri ? -1 : 1;
    if (a->b_tri != b->b_tri) return a->b_tri < b->b_tri ? -1 : 1;
    return 0;
}

int brute_init(brute *b, const tdm_mesh *env, const tdm_mesh *robot)
{
    memset(b, 0, sizeof *b);
    b->env = env;
    b->robot = robot;
    b->e = malloc(sizeof *b->e * env->n_tris);
    b->r = malloc(sizeof *b->r * robot->n_tris);
    if (!b->e || !b->r) {
        brute_free(b);
        return -1;
    }
    fill(b->e, env, NULL);
    return 0;
}

void brute_free(brute *b)
{
    free(b->e);
    free(b->r);
    free(b->pairs);
    memset(b, 0, sizeof *b);
}

size_t brute_run(brute *b, const tdm_xform *x)
{
    fill(b->r, b->robot, x);
    b->n = 0;
    for (uint32_t j = 0; j < b->robot->n_tris; j++) {
        const brute_tri *r = &b->r[j];
        for (uint32_t i = 0; i < b->env->n_tris; i++) {
            const brute_tri *e = &b->e[i];
            if (e->lo[0] > r->hi[0] || r->lo[0] > e->hi[0] || e->lo[1] > r->hi[1] || r->lo[1] > e->hi[1] ||
                e->lo[2] > r->hi[2] || r->lo[2] > e->hi[2])
                continue;
            if (!tdm_tri_tri_intersect(e->v, r->v)) continue;
            if (b->n == b->cap) {
                size_t nc = b->cap ? 2 * b->cap : 256;
                tdm_pair *np = realloc(b->pairs, sizeof *np * nc);
                if (!np) return (size_t)-1;
                b->pairs = np;
                b->cap = nc;
            }
            b->pairs[b->n].a_tri = i;
            b->pairs[b->n].b_tri = j;
            b->n++;
        }
    }
    if (b->n > 1) qsort(b->pairs, b->n, sizeof *b->pairs, brute_pair_cmp);
    return b->n;
}

int brute_has(const brute *b, tdm_pair p)
{
    return b->n > 0 && bsearch(&p, b->pairs, b->n, sizeof *b->pairs, brute_pair_cmp) != NULL;
}
