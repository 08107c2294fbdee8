#include "scene.h"

#include <math.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "solid.h"

static int fail(tdm_scene_error *err, int code, const char *field, int64_t index, const char *fmt, ...)
{
    if (err) {
        err->field = field;
        err->index = index;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

typedef struct keyed { uint32_t id, index; } keyed;

static int cmp_keyed(const void *x, const void *y)
{
    const keyed *a = x, *b = y;
    if (a->id != b->id) return a->id < b->id ? -1 : 1;
    return a->index < b->index ? -1 : (a->index > b->index);
}

static int cmp_pair(const void *x, const void *y)
{
    const tdm_id_pair *a = x, *b = y;
    if (a->a != b->a) return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : (a->b > b->b);
}

/* Centre of the vertices' bounding box, and the largest distance from it to a
 * vertex, in double (the float vertices are exact in double; the radius is
 * rounded up by a relative 1e-12, far above double's rounding of a sum of three
 * squares and a square root). An empty mesh: radius 0 at the origin. */
typedef struct sphere { double c[3], r; } sphere;

static sphere sphere_of(const tdm_bvh *bvh)
{
    sphere s = {{0, 0, 0}, 0};
    size_t nv = (size_t)bvh->n_tris * 3;
    if (nv == 0) return s;
    const float *v = bvh->tri_verts;
    double lo[3] = {v[0], v[1], v[2]}, hi[3] = {v[0], v[1], v[2]};
    for (size_t i = 1; i < nv; i++)
        for (int d = 0; d < 3; d++) {
            double x = v[3 * i + (size_t)d];
            if (x < lo[d]) lo[d] = x;
            if (x > hi[d]) hi[d] = x;
        }
    for (int d = 0; d < 3; d++) s.c[d] = 0.5 * (lo[d] + hi[d]);
    double r2 = 0;
    for (size_t i = 0; i < nv; i++) {
        double dx = v[3 * i] - s.c[0], dy = v[3 * i + 1] - s.c[1], dz = v[3 * i + 2] - s.c[2];
        double q = dx * dx + dy * dy + dz * dz;
        if (q > r2) r2 = q;
    }
    s.r = sqrt(r2) * (1 + 1e-12);
    return s;
}

/* Culling's table (scene.h): each object's bounding sphere, its centre placed in the
 * centre list (movable ones by slot, in their own frame; fixed ones in the world,
 * after them), and per check its two entries and radius sum. A solid's radius grows
 * by its reach (solid.h): what the solid rule may call colliding lies within it, so
 * culling never drops such a pair. */
static int cull_table(tdm_scene *s)
{
    uint32_t n = s->n_objects;
    s->n_fixed = n - s->n_movable;
    s->slot_centre = malloc(sizeof *s->slot_centre * (s->n_movable ? s->n_movable : 1));
    s->fixed_centre = malloc(sizeof *s->fixed_centre * (s->n_fixed ? s->n_fixed : 1));
    s->cull_pair = malloc(sizeof *s->cull_pair * (s->n_checks ? s->n_checks : 1));
    s->cull_rsum = malloc(sizeof *s->cull_rsum * (s->n_checks ? s->n_checks : 1));
    uint32_t *entry = malloc(sizeof *entry * (n ? n : 1)); /* each object's place in the centre list */
    double *radius = malloc(sizeof *radius * (n ? n : 1));
    if (!s->slot_centre || !s->fixed_centre || !s->cull_pair || !s->cull_rsum || !entry || !radius) {
        free(entry);
        free(radius);
        return TDM_ENOMEM;
    }
    for (uint32_t i = 0, f = 0; i < n; i++) {
        sphere b = sphere_of(s->objects[i].bvh);
        radius[i] = b.r + (s->solids && s->solids->objs[i].shape.type != 0 ? s->solids->objs[i].reach : 0);
        if (s->slot[i] != UINT32_MAX) {
            memcpy(s->slot_centre[s->slot[i]], b.c, sizeof s->slot_centre[0]);
            entry[i] = s->slot[i];
        } else {
            tdm_dvec3 c = tdm_xform_apply(&s->objects[i].pose, tdm_d3(b.c[0], b.c[1], b.c[2]));
            double *e = s->fixed_centre[f];
            e[0] = c.x;
            e[1] = c.y;
            e[2] = c.z;
            e[3] = fabs(c.x) + fabs(c.y) + fabs(c.z);
            entry[i] = s->n_movable + f++;
        }
    }
    for (uint32_t k = 0; k < s->n_checks; k++) {
        uint32_t a = s->checks[k].a, b = s->checks[k].b;
        s->cull_pair[k][0] = entry[a];
        s->cull_pair[k][1] = entry[b];
        s->cull_rsum[k] = radius[a] + radius[b];
    }
    free(entry);
    free(radius);
    return TDM_OK;
}

void tdm_scene_cull_fixed(const tdm_scene *s, double (*centres)[4])
{
    memcpy(centres + s->n_movable, s->fixed_centre, sizeof *centres * s->n_fixed);
}

uint32_t tdm_scene_cull(const tdm_scene *s, const tdm_xform *poses, double (*C)[4], uint64_t *bits)
{
    for (uint32_t m = 0; m < s->n_movable; m++) {
        const double *c = s->slot_centre[m];
        tdm_cull_centre(&poses[m], tdm_d3(c[0], c[1], c[2]), C[m]);
    }
    uint32_t kept = 0, nw = (s->n_checks + 63) / 64;
    for (uint32_t w = 0; w < nw; w++) {
        uint64_t word = 0;
        uint32_t hi = (w + 1) * 64 < s->n_checks ? (w + 1) * 64 : s->n_checks;
        for (uint32_t k = w * 64; k < hi; k++)
            word |= (uint64_t)tdm_cull_close(C[s->cull_pair[k][0]], C[s->cull_pair[k][1]], s->cull_rsum[k])
                    << (k - w * 64);
        bits[w] = word;
        kept += (uint32_t)__builtin_popcountll(word);
    }
    return kept;
}

static int is_allowed(const tdm_scene *s, uint32_t a, uint32_t b)
{
    tdm_id_pair key = {a, b};
    return s->n_allowed && bsearch(&key, s->allowed, s->n_allowed, sizeof key, cmp_pair) != NULL;
}

int64_t tdm_scene_find(const tdm_scene *s, uint32_t id)
{
    uint32_t lo = 0, hi = s->n_objects;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (s->objects[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < s->n_objects && s->objects[lo].id == id ? (int64_t)lo : -1;
}

static int checked(const tdm_scene *s, uint32_t i, uint32_t j)
{
    if (!s->objects[i].movable && !s->objects[j].movable) return 0;
    return !is_allowed(s, s->objects[i].id, s->objects[j].id);
}

/* x is exactly the identity (a zero of either sign counts as zero). */
static int at_origin(const tdm_xform *x)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (x->r.m[i][j] != (i == j)) return 0;
    return x->t.x == 0 && x->t.y == 0 && x->t.z == 0;
}

static int finite_xform(const tdm_xform *x)
{
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (!isfinite(x->r.m[i][j])) return 0;
    return isfinite(x->t.x) && isfinite(x->t.y) && isfinite(x->t.z);
}

int tdm_scene_create(const tdm_scene_obj *objects, uint32_t n_objects, const tdm_id_pair *allowed,
                     uint32_t n_allowed, tdm_scene **out, tdm_scene_error *err)
{
    return tdm_scene_create_solids(objects, n_objects, allowed, n_allowed, NULL, out, err);
}

int tdm_scene_create_solids(const tdm_scene_obj *objects, uint32_t n_objects, const tdm_id_pair *allowed,
                            uint32_t n_allowed, const tdm_scene_solid *solids, tdm_scene **out,
                            tdm_scene_error *err)
{
    *out = NULL;
    if (n_objects > TDM_SCENE_MAX_OBJECTS)
        return fail(err, TDM_ERANGE, "objects", -1, "scene has %u objects, over the limit of %u", n_objects,
                    TDM_SCENE_MAX_OBJECTS);
    if (n_objects > 0 && !objects) return fail(err, TDM_EINVAL, "objects", -1, "objects array is missing");
    if (n_allowed > 0 && !allowed) return fail(err, TDM_EINVAL, "allowed", -1, "allowed array is missing");
    for (uint32_t i = 0; i < n_objects; i++)
        if (!objects[i].bvh) return fail(err, TDM_EINVAL, "objects", i, "object %u has no tree", i);
    for (uint32_t i = 0; solids && i < n_objects; i++) {
        const tdm_scene_solid *so = &solids[i];
        if (so->shape.type == 0) continue;
        char why[160];
        if (tdm_primitive_check(&so->shape, why, sizeof why) != TDM_OK)
            return fail(err, TDM_EINVAL, "solids", i, "object %u's solid shape: %s", i, why);
        if (!isfinite(so->margin) || so->margin < 0)
            return fail(err, TDM_EINVAL, "solids", i, "object %u's solid margin is %g: must be finite and >= 0", i,
                        so->margin);
        if (!finite_xform(&so->frame))
            return fail(err, TDM_EINVAL, "solids", i, "object %u's solid frame is not finite", i);
    }

    int rc = TDM_ENOMEM;
    keyed *order = NULL;
    tdm_scene *s = calloc(1, sizeof *s);
    if (!s) goto nomem;
    static uint64_t serials;
    s->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
    order = malloc(sizeof *order * (n_objects ? n_objects : 1));
    if (!order) goto nomem;
    for (uint32_t i = 0; i < n_objects; i++) order[i] = (keyed){objects[i].id, i};
    qsort(order, n_objects, sizeof *order, cmp_keyed);
    /* The first object, in the caller's order, whose id appeared before it. */
    int64_t dup = -1;
    for (uint32_t i = 1; i < n_objects; i++)
        if (order[i].id == order[i - 1].id && (dup < 0 || order[i].index < dup)) dup = order[i].index;
    if (dup >= 0) {
        rc = fail(err, TDM_EINDEX, "objects", dup, "object %lld has id %u, which an earlier object already uses",
                  (long long)dup, objects[dup].id);
        goto fail;
    }

    s->n_objects = n_objects;
    s->objects = malloc(sizeof *s->objects * (n_objects ? n_objects : 1));
    s->slot = malloc(sizeof *s->slot * (n_objects ? n_objects : 1));
    s->movable = malloc(sizeof *s->movable * (n_objects ? n_objects : 1));
    if (!s->objects || !s->slot || !s->movable) goto nomem;
    for (uint32_t i = 0; i < n_objects; i++) {
        s->objects[i] = objects[order[i].index];
        s->objects[i].movable = s->objects[i].movable != 0;
        if (s->objects[i].movable) {
            s->slot[i] = s->n_movable;
            s->movable[s->n_movable++] = s->objects[i].id;
        } else {
            s->slot[i] = UINT32_MAX;
        }
    }
    if (s->n_movable == 0) {
        rc = fail(err, TDM_EEMPTY, "objects", -1, "scene has no movable object");
        goto fail;
    }

    s->allowed = malloc(sizeof *s->allowed * (n_allowed ? n_allowed : 1));
    if (!s->allowed) goto nomem;
    for (uint32_t i = 0; i < n_allowed; i++) {
        uint32_t a = allowed[i].a, b = allowed[i].b;
        if (tdm_scene_find(s, a) < 0 || tdm_scene_find(s, b) < 0) {
            rc = fail(err, TDM_EINDEX, "allowed", i, "allowed pair %u names object %u, which the scene does not have",
                      i, tdm_scene_find(s, a) < 0 ? a : b);
            goto fail;
        }
        s->allowed[i] = (tdm_id_pair){a < b ? a : b, a < b ? b : a};
    }
    qsort(s->allowed, n_allowed, sizeof *s->allowed, cmp_pair);
    uint32_t n_distinct = 0;
    for (uint32_t i = 0; i < n_allowed; i++)
        if (n_distinct == 0 || cmp_pair(&s->allowed[i], &s->allowed[n_distinct - 1]) != 0)
            s->allowed[n_distinct++] = s->allowed[i];
    s->n_allowed = n_distinct;

    /* Count, then fill: the list is at most n^2 / 2 entries, so it is sized once. */
    uint64_t n_checks = 0;
    for (uint32_t i = 0; i < n_objects; i++)
        for (uint32_t j = i + 1; j < n_objects; j++) n_checks += (uint64_t)checked(s, i, j);
    if (n_checks > UINT32_MAX || n_checks > SIZE_MAX / sizeof *s->checks) goto nomem;
    s->checks = malloc(sizeof *s->checks * (n_checks ? (size_t)n_checks : 1));
    if (!s->checks) goto nomem;
    for (uint32_t i = 0; i < n_objects; i++)
        for (uint32_t j = i + 1; j < n_objects; j++) {
            if (!checked(s, i, j)) continue;
            tdm_scene_check *c = &s->checks[s->n_checks++];
            c->lo = i;
            c->hi = j;
            /* a movable object against a fixed one: the fixed one is A */
            int swap = s->objects[i].movable && !s->objects[j].movable;
            c->a = swap ? j : i;
            c->b = swap ? i : j;
            c->a_at_origin = !s->objects[c->a].movable && at_origin(&s->objects[c->a].pose);
        }
    if (solids) {
        /* the solids in s->objects order */
        tdm_scene_solid *sorted = malloc(sizeof *sorted * (n_objects ? n_objects : 1));
        if (!sorted) goto nomem;
        for (uint32_t i = 0; i < n_objects; i++) sorted[i] = solids[order[i].index];
        rc = tdm__solids_build(s, sorted);
        free(sorted);
        if (rc != TDM_OK) goto nomem;
    }
    if (cull_table(s) != TDM_OK) goto nomem;
    free(order);
    *out = s;
    return TDM_OK;
nomem:
    rc = fail(err, TDM_ENOMEM, "objects", -1, "out of memory for a scene of %u objects", n_objects);
fail:
    free(order);
    tdm_scene_destroy(s);
    return rc;
}

void tdm_scene_destroy(tdm_scene *s)
{
    if (!s) return;
    free(s->objects);
    free(s->slot);
    free(s->movable);
    free(s->allowed);
    free(s->checks);
    free(s->slot_centre);
    free(s->fixed_centre);
    free(s->cull_pair);
    free(s->cull_rsum);
    tdm__solids_free(s->solids);
    free(s);
}
