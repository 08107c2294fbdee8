/* Solid containment: the per-scene part (which checks test what, and the
 * component representatives). The rule and why it holds: solid.h. */
#include "solid.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A vertex position of triangle `tri`, for sorting equal positions together. */
typedef struct vkey { float x, y, z; uint32_t tri; } vkey;

static int cmp_vkey(const void *p, const void *q)
{
    const vkey *a = p, *b = q;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    if (a->y != b->y) return a->y < b->y ? -1 : 1;
    if (a->z != b->z) return a->z < b->z ? -1 : 1;
    return (a->tri > b->tri) - (a->tri < b->tri);
}

static uint32_t find(uint32_t *parent, uint32_t i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]]; /* path halving */
        i = parent[i];
    }
    return i;
}

/* The representatives kept with a tree (tdm_bvh.reps): their count, then them. */
typedef struct kept_reps {
    uint32_t n;
    tdm_dvec3 v[];
} kept_reps;

static int component_reps(const tdm_bvh *b, tdm_dvec3 **reps, uint32_t *n);

/* b's representatives, made on first use and kept with the tree (every robot
 * scene of a robot asks for its element trees': sorting each mesh's vertices was
 * most of a scene's set-up); NULL when out of memory. */
static const kept_reps *kept_of(const tdm_bvh *b)
{
    kept_reps *k = __atomic_load_n((kept_reps *const *)&b->reps, __ATOMIC_ACQUIRE);
    if (k) return k;
    tdm_dvec3 *r = NULL;
    uint32_t m = 0;
    if (component_reps(b, &r, &m) != TDM_OK) return NULL;
    k = malloc(sizeof *k + (size_t)m * sizeof *r);
    if (!k) {
        free(r);
        return NULL;
    }
    k->n = m;
    if (m) memcpy(k->v, r, (size_t)m * sizeof *r);
    free(r);
    void *none = NULL;
    /* a logically const memo: the tree's triangles are what it is made from */
    if (!__atomic_compare_exchange_n((void **)&((tdm_bvh *)b)->reps, &none, k, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        free(k); /* another thread's was kept first: the same values */
        k = none;
    }
    return k;
}

int tdm_bvh_component_reps(const tdm_bvh *b, tdm_dvec3 **reps, uint32_t *n)
{
    *reps = NULL;
    *n = 0;
    const kept_reps *k = kept_of(b);
    if (!k) return TDM_ENOMEM;
    if (k->n == 0) return TDM_OK;
    tdm_dvec3 *out = malloc((size_t)k->n * sizeof *out);
    if (!out) return TDM_ENOMEM;
    memcpy(out, k->v, (size_t)k->n * sizeof *out);
    *reps = out;
    *n = k->n;
    return TDM_OK;
}

static int component_reps(const tdm_bvh *b, tdm_dvec3 **reps, uint32_t *n)
{
    *reps = NULL;
    *n = 0;
    uint32_t nt = b->n_tris;
    if (nt == 0) return TDM_OK;
    vkey *keys = malloc(3 * (size_t)nt * sizeof *keys);
    uint32_t *parent = malloc((size_t)nt * sizeof *parent);
    if (!keys || !parent) goto nomem;
    for (uint32_t t = 0; t < nt; t++) {
        parent[t] = t;
        for (int v = 0; v < 3; v++) {
            const float *p = &b->tri_verts[9 * (size_t)t + 3 * v];
            /* +0 for -0: equal positions must sort together */
            keys[3 * (size_t)t + v] = (vkey){p[0] + 0.0f, p[1] + 0.0f, p[2] + 0.0f, t};
        }
    }
    qsort(keys, 3 * (size_t)nt, sizeof *keys, cmp_vkey);
    for (size_t i = 1; i < 3 * (size_t)nt; i++) {
        const vkey *k0 = &keys[i - 1], *k1 = &keys[i];
        if (k0->x != k1->x || k0->y != k1->y || k0->z != k1->z) continue;
        uint32_t r0 = find(parent, k0->tri), r1 = find(parent, k1->tri);
        /* the smaller triangle index is the root: a class's root is its first triangle */
        if (r0 < r1) parent[r1] = r0;
        else if (r1 < r0) parent[r0] = r1;
    }
    free(keys);
    keys = NULL;
    uint32_t count = 0;
    for (uint32_t t = 0; t < nt; t++) count += find(parent, t) == t;
    tdm_dvec3 *out = malloc((size_t)count * sizeof *out);
    if (!out) goto nomem;
    uint32_t k = 0;
    for (uint32_t t = 0; t < nt; t++)
        if (parent[t] == t) {
            const float *p = &b->tri_verts[9 * (size_t)t];
            out[k++] = tdm_d3(p[0], p[1], p[2]);
        }
    free(parent);
    *reps = out;
    *n = count;
    return TDM_OK;
nomem:
    free(keys);
    free(parent);
    return TDM_ENOMEM;
}

static double shape_size(const tdm_primitive *p)
{
    return p->dims[0] + (p->type == TDM_PRIMITIVE_SPHERE ? 0 : p->dims[1]) +
           (p->type == TDM_PRIMITIVE_BOX ? p->dims[2] : 0);
}

/* Radius of a ball about the shape's centre holding the shape grown by reach,
 * rounded up. */
static double shape_bound(const tdm_primitive *p, double reach)
{
    const double *d = p->dims;
    double r;
    switch (p->type) {
    case TDM_PRIMITIVE_BOX: r = 0.5 * sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]); break;
    case TDM_PRIMITIVE_SPHERE: r = d[0]; break;
    case TDM_PRIMITIVE_CYLINDER:
    case TDM_PRIMITIVE_CONE: r = sqrt(d[1] * d[1] + 0.25 * d[0] * d[0]); break; /* a rim point */
    default: r = d[0] + 0.5 * d[1]; break; /* capsule */
    }
    /* grown box, cylinder and cone: sqrt(3) reach at a corner at most */
    return (r + 2 * reach) * (1 + 0x1p-40) + TDM_SOLID_SLACK;
}

/* A ball holding the points p[0..n), rounded up. */
static void rep_ball(const tdm_dvec3 *p, uint32_t n, tdm_dvec3 *c, double *r)
{
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (uint32_t i = 0; i < n; i++) {
        double q[3] = {p[i].x, p[i].y, p[i].z};
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], q[k]);
            hi[k] = fmax(hi[k], q[k]);
        }
    }
    *c = n ? tdm_d3(0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), 0.5 * (lo[2] + hi[2])) : tdm_d3(0, 0, 0);
    double r2 = 0;
    for (uint32_t i = 0; i < n; i++) {
        tdm_dvec3 d = tdm_d3_sub(p[i], *c);
        r2 = fmax(r2, d.x * d.x + d.y * d.y + d.z * d.z);
    }
    *r = sqrt(r2) * (1 + 0x1p-40) + TDM_SOLID_SLACK;
}

static int is_identity(const tdm_xform *x)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (x->r.m[i][j] != (i == j)) return 0;
    return x->t.x == 0 && x->t.y == 0 && x->t.z == 0;
}

void tdm__solids_free(struct tdm_solids *v)
{
    if (!v) return;
    free(v->check);
    free(v->objs);
    free(v->reps);
    free(v);
}

int tdm__solids_build(tdm_scene *s, const tdm_scene_solid *solids)
{
    s->solids = NULL;
    int any = 0;
    for (uint32_t i = 0; solids && i < s->n_objects && !any; i++) any = solids[i].shape.type != 0;
    if (!any) return TDM_OK;
    struct tdm_solids *v = calloc(1, sizeof *v);
    if (!v) return TDM_ENOMEM;
    v->check = calloc(s->n_checks ? s->n_checks : 1, 1);
    v->objs = calloc(s->n_objects, sizeof *v->objs);
    uint8_t *needs = calloc(s->n_objects, 1); /* has a solid partner: its representatives are needed */
    if (!v->check || !v->objs || !needs) goto nomem;
    for (uint32_t i = 0; i < s->n_objects; i++) {
        tdm_solid_obj *o = &v->objs[i];
        if (solids[i].shape.type == 0) continue;
        o->shape = solids[i].shape;
        o->frame = solids[i].frame;
        o->frame_identity = is_identity(&o->frame);
        o->reach = solids[i].margin + TDM_SOLID_SLACK + TDM_SOLID_SLACK_RELATIVE * shape_size(&o->shape);
        o->bound = shape_bound(&o->shape, o->reach);
    }
    for (uint32_t k = 0; k < s->n_checks; k++) {
        const tdm_scene_check *c = &s->checks[k];
        uint8_t w = 0;
        if (v->objs[c->b].shape.type) w |= TDM_SOLID_A_IN_B, needs[c->a] = 1;
        if (v->objs[c->a].shape.type) w |= TDM_SOLID_B_IN_A, needs[c->b] = 1;
        v->check[k] = w;
    }
    /* representatives, once per tree even when several objects share it */
    for (uint32_t i = 0; i < s->n_objects; i++) {
        if (!needs[i]) continue;
        uint32_t j = 0;
        while (j < i && !(needs[j] && s->objects[j].bvh == s->objects[i].bvh)) j++;
        if (j < i) {
            v->objs[i].rep_first = v->objs[j].rep_first;
            v->objs[i].n_reps = v->objs[j].n_reps;
            v->objs[i].rep_centre = v->objs[j].rep_centre;
            v->objs[i].rep_radius = v->objs[j].rep_radius;
            continue;
        }
        const kept_reps *k = kept_of(s->objects[i].bvh); /* borrowed from the tree */
        if (!k) goto nomem;
        uint32_t n = k->n;
        if (v->n_reps + n > UINT32_MAX) goto nomem;
        tdm_dvec3 *all = realloc(v->reps, (size_t)(v->n_reps + n + 1) * sizeof *all);
        if (!all) goto nomem;
        v->reps = all;
        if (n) memcpy(all + v->n_reps, k->v, n * sizeof *k->v);
        rep_ball(k->v, n, &v->objs[i].rep_centre, &v->objs[i].rep_radius);
        v->objs[i].rep_first = (uint32_t)v->n_reps;
        v->objs[i].n_reps = n;
        v->n_reps += n;
    }
    free(needs);
    s->solids = v;
    return TDM_OK;
nomem:
    free(needs);
    tdm__solids_free(v);
    return TDM_ENOMEM;
}
