/* workpile/solid.h: primitive objects are solids (issue 13, exactness), checked
 * against a brute-force oracle on random scenes through every engine there is.
 *
 * Scenes are generated here: movable "links" (mesh links of one or several
 * components, and primitive links: box, sphere, cylinder, capsule, solid) against
 * fixed obstacles (the four primitives, solid, and a mesh that is not), posed so
 * that many links lie wholly inside an obstacle. The oracle decides each checked
 * pair as FCL's solid primitives do, from the true shapes: every triangle pair of
 * the two meshes in world coordinates (tdm_tri_tri_intersect, double), and every
 * vertex of one object against the other's true solid (tdm_primitive_contains,
 * exact) when that one is a primitive. It shares only the meshes (and their
 * tessellations, tested in test_primitive.c) with the code under test.
 *
 * Must hold: no pair, and no query, the oracle calls colliding is called free
 * by an engine; the other way only within reach of a curved primitive (asserted:
 * some vertex is within twice the reach), and rarely (counted, logged, bounded). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "geom/primitive.h"
#include "geom/tri.h"
#include "gpu/gpu_geom.h"
#include "workpile/sched.h"
#include "workpile/solid.h"

static uint64_t seed;

static void suite_init(void)
{
    seed = gen_seed(0x5011dull);
    cr_log_info("seed=%llu (set TDM_TEST_SEED to change)", (unsigned long long)seed);
}

TestSuite(solid, .init = suite_init, .timeout = 280);

/* ---- meshes ---- */

static tdm_bvh *tree(tdm_mesh *m)
{
    tdm_bvh *b = NULL;
    cr_assert_not_null(m);
    cr_assert_eq(tdm_bvh_build(m, &b), TDM_OK);
    return b;
}

/* The tree of m, which is freed. */
static tdm_bvh *tree_of(tdm_mesh *m)
{
    tdm_bvh *b = tree(m);
    tdm_mesh_free(m);
    return b;
}

/* Two meshes as one (two components when they share no vertex position). */
static tdm_mesh *join(tdm_mesh *a, tdm_mesh *b)
{
    uint32_t nv = a->n_verts + b->n_verts, nt = a->n_tris + b->n_tris;
    float *v = malloc(3 * (size_t)nv * sizeof *v);
    uint32_t *t = malloc(3 * (size_t)nt * sizeof *t);
    cr_assert(v && t);
    memcpy(v, a->verts, 3 * (size_t)a->n_verts * sizeof *v);
    memcpy(v + 3 * (size_t)a->n_verts, b->verts, 3 * (size_t)b->n_verts * sizeof *v);
    memcpy(t, a->tris, 3 * (size_t)a->n_tris * sizeof *t);
    for (size_t i = 0; i < 3 * (size_t)b->n_tris; i++) t[3 * (size_t)a->n_tris + i] = b->tris[i] + a->n_verts;
    tdm_mesh *m = NULL;
    char err[200];
    cr_assert_eq(tdm_mesh_create(v, nv, t, nt, NULL, &m, err, sizeof err), TDM_OK, "%s", err);
    free(v);
    free(t);
    tdm_mesh_free(a);
    tdm_mesh_free(b);
    return m;
}

/* m moved by (dx, dy, dz); takes m. */
static tdm_mesh *moved(tdm_mesh *m, double dx, double dy, double dz)
{
    tdm_mesh *o = gen_translated(m, dx, dy, dz);
    tdm_mesh_free(m);
    return o;
}

/* The same mesh with every triangle's vertices repeated (as an STL file is). */
static tdm_mesh *soup(tdm_mesh *a)
{
    float *v = malloc(9 * (size_t)a->n_tris * sizeof *v);
    uint32_t *t = malloc(3 * (size_t)a->n_tris * sizeof *t);
    cr_assert(v && t);
    for (uint32_t i = 0; i < 3 * a->n_tris; i++) {
        memcpy(&v[3 * (size_t)i], &a->verts[3 * (size_t)a->tris[i]], 3 * sizeof *v);
        t[i] = i;
    }
    tdm_mesh *m = NULL;
    char err[200];
    cr_assert_eq(tdm_mesh_create(v, 3 * a->n_tris, t, a->n_tris, NULL, &m, err, sizeof err), TDM_OK, "%s", err);
    free(v);
    free(t);
    tdm_mesh_free(a);
    return m;
}

/* Coarser than the default 0.1 mm, so that the brute force stays short and the
 * band where the rule may add "colliding" is wide enough to be met. */
#define TOLERANCE 2e-3

static tdm_mesh *prim_mesh(tdm_primitive p, double *dev)
{
    tdm_mesh *m = NULL;
    char err[200];
    cr_assert_eq(tdm_primitive_mesh(&p, TOLERANCE, &m, dev, err, sizeof err), TDM_OK, "%s", err);
    return m;
}

Test(solid, component_representatives)
{
    /* one closed box: one component, whether its vertices are shared or repeated */
    const tdm_mesh *cases[4];
    uint32_t want[4] = {1, 1, 2, 40};
    tdm_mesh *m0 = gen_box(0.1, 0.2, 0.3);
    tdm_mesh *m1 = soup(gen_box(0.1, 0.2, 0.3));
    tdm_mesh *m2 = soup(join(gen_box(0.1, 0.1, 0.1), moved(gen_sphere(0.1, 8), 1, 0, 0)));
    gen_rng g = {seed};
    tdm_mesh *m3 = gen_pile(&g, 40, 1.0, 0.05); /* random triangles: none shares a position */
    cases[0] = m0, cases[1] = m1, cases[2] = m2, cases[3] = m3;
    for (int c = 0; c < 4; c++) {
        tdm_bvh *b = tree((tdm_mesh *)cases[c]);
        tdm_dvec3 *reps = NULL;
        uint32_t n = 0;
        cr_assert_eq(tdm_bvh_component_reps(b, &reps, &n), TDM_OK);
        cr_assert_eq(n, want[c], "case %d: %u components, want %u", c, n, want[c]);
        /* each representative is a vertex of the mesh */
        for (uint32_t i = 0; i < n; i++) {
            int found = 0;
            for (uint32_t v = 0; v < cases[c]->n_verts && !found; v++)
                found = cases[c]->verts[3 * v] == (float)reps[i].x && cases[c]->verts[3 * v + 1] == (float)reps[i].y &&
                        cases[c]->verts[3 * v + 2] == (float)reps[i].z;
            cr_assert(found, "case %d: representative %u is no vertex", c, i);
        }
        /* kept with the tree: asked again, the same ones (from the memo) */
        cr_assert_not_null(b->reps, "case %d: the representatives are kept with the tree", c);
        tdm_dvec3 *again = NULL;
        uint32_t n2 = 0;
        cr_assert_eq(tdm_bvh_component_reps(b, &again, &n2), TDM_OK);
        cr_assert_eq(n2, n);
        cr_assert(n == 0 || memcmp(again, reps, n * sizeof *reps) == 0, "case %d: asked again, other ones", c);
        free(again);
        free(reps);
        tdm_bvh_free(b);
    }
    tdm_mesh_free(m0);
    tdm_mesh_free(m1);
    tdm_mesh_free(m2);
    tdm_mesh_free(m3);
}

/* ---- scene errors ---- */

Test(solid, bad_solids_are_refused)
{
    tdm_bvh *b = tree_of(gen_box(0.1, 0.1, 0.1));
    tdm_scene_obj objs[2] = {{1, b, 0, tdm_xform_identity()}, {2, b, 1, tdm_xform_identity()}};
    tdm_scene_solid so[2];
    memset(so, 0, sizeof so);
    so[1] = (tdm_scene_solid){tdm_primitive_box(0.2, 0.2, 0.2), tdm_xform_identity(), 0};
    tdm_scene *s = NULL;
    tdm_scene_error err;
    so[1].shape.dims[1] = -1;
    cr_assert_eq(tdm_scene_create_solids(objs, 2, NULL, 0, so, &s, &err), TDM_EINVAL);
    cr_assert_null(s);
    cr_assert_str_eq(err.field, "solids");
    cr_assert_eq(err.index, 1);
    cr_assert(strstr(err.msg, "box") != NULL, "%s", err.msg);
    so[1].shape.dims[1] = 0.2;
    so[1].margin = NAN;
    cr_assert_eq(tdm_scene_create_solids(objs, 2, NULL, 0, so, &s, &err), TDM_EINVAL);
    cr_assert(strstr(err.msg, "margin") != NULL, "%s", err.msg);
    so[1].margin = 0;
    so[1].frame.t.y = INFINITY;
    cr_assert_eq(tdm_scene_create_solids(objs, 2, NULL, 0, so, &s, &err), TDM_EINVAL);
    cr_assert(strstr(err.msg, "frame") != NULL, "%s", err.msg);
    so[1].frame = tdm_xform_identity();
    cr_assert_eq(tdm_scene_create_solids(objs, 2, NULL, 0, so, &s, &err), TDM_OK, "%s", err.msg);
    cr_assert_not_null(s->solids);
    /* A is the fixed object 1, B the solid 2: A's representatives are tested in B */
    cr_assert_eq(s->solids->check[0], TDM_SOLID_A_IN_B);
    tdm_scene_destroy(s);
    /* no solid: nothing to pay */
    cr_assert_eq(tdm_scene_create(objs, 2, NULL, 0, &s, &err), TDM_OK);
    cr_assert_null(s->solids);
    tdm_scene_destroy(s);
    tdm_bvh_free(b);
}

/* ---- the random scenes ---- */

/* Links (movable, ids 0..N_LINK-1) and obstacles (fixed, ids N_LINK..). */
enum { N_PRIM = 5, N_LINK = 4 + N_PRIM, N_OBST = N_PRIM + 1, N_OBJ = N_LINK + N_OBST, N_CFG = 3000 };

typedef struct world {
    tdm_mesh *mesh[N_OBJ];
    tdm_bvh *bvh[N_OBJ];
    tdm_scene_solid solid[N_OBJ]; /* shape.type 0: a mesh */
    tdm_xform obst_pose[N_OBST];
    tdm_scene *scene;
} world;

static tdm_primitive random_prim(gen_rng *g, int type, double size)
{
    double a = size * gen_range(g, 0.5, 1.5), b = size * gen_range(g, 0.5, 1.5), c = size * gen_range(g, 0.5, 1.5);
    switch (type) {
    case 0: return tdm_primitive_box(2 * a, 2 * b, 2 * c);
    case 1: return tdm_primitive_sphere(a);
    case 2: return tdm_primitive_cylinder(2 * a, b);
    case 3: return tdm_primitive_capsule(a, 2 * b);
    default: return tdm_primitive_cone(2 * a, 1.5 * b);
    }
}

static void world_make(world *w, gen_rng *g)
{
    memset(w, 0, sizeof *w);
    /* links 0..3: meshes (one closed box; a box and a sphere apart; a soup of
     * slivers; a small torus); 4..8: the five primitives, solid */
    w->mesh[0] = gen_box(0.04, 0.03, 0.06);
    w->mesh[1] = join(gen_box(0.03, 0.03, 0.03), moved(gen_sphere(0.03, 8), 0.09, 0, 0));
    w->mesh[2] = gen_pile(g, 6, 0.05, 0.03);
    w->mesh[3] = gen_torus(0.05, 0.015, 12, 8);
    for (int i = 4; i < N_LINK; i++) {
        double dev = 0;
        w->solid[i].shape = random_prim(g, i - 4, 0.04);
        w->solid[i].frame = tdm_xform_identity();
        w->mesh[i] = prim_mesh(w->solid[i].shape, &dev);
        w->solid[i].margin = dev;
    }
    /* obstacles: the five primitives, large, and a mesh (not solid) */
    for (int k = 0; k < N_OBST; k++) {
        int i = N_LINK + k;
        tdm_dvec3 c = tdm_d3(0.6 * (k - 2), gen_range(g, -0.1, 0.1), gen_range(g, -0.1, 0.1));
        w->obst_pose[k] = tdm_xform_from_pose(c, gen_rotation(g));
        if (k < N_PRIM) {
            double dev = 0;
            w->solid[i].shape = random_prim(g, k, 0.2);
            w->solid[i].frame = tdm_xform_identity();
            w->mesh[i] = prim_mesh(w->solid[i].shape, &dev);
            w->solid[i].margin = dev;
        } else {
            w->mesh[i] = gen_sphere(0.2, 16); /* a closed mesh; a link inside it stays free (surface only) */
        }
    }
    tdm_scene_obj objs[N_OBJ];
    for (int i = 0; i < N_OBJ; i++) {
        w->bvh[i] = tree(w->mesh[i]);
        objs[i] = (tdm_scene_obj){(uint32_t)i, w->bvh[i], i < N_LINK, i < N_LINK ? tdm_xform_identity()
                                                                                  : w->obst_pose[i - N_LINK]};
    }
    /* links 0 and 1 never checked against each other: an allowed pair */
    tdm_id_pair allowed[1] = {{0, 1}};
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create_solids(objs, N_OBJ, allowed, 1, w->solid, &w->scene, &err), TDM_OK, "%s",
                 err.msg);
}

static void world_free(world *w)
{
    tdm_scene_destroy(w->scene);
    for (int i = 0; i < N_OBJ; i++) {
        tdm_bvh_free(w->bvh[i]);
        tdm_mesh_free(w->mesh[i]);
    }
}

/* A point inside obstacle k's true shape, in world coordinates. */
static tdm_dvec3 point_in_obstacle(gen_rng *g, const world *w, int k)
{
    const tdm_primitive *p = &w->solid[N_LINK + k].shape;
    double ext = k < N_PRIM ? 0 : 0.2;
    if (k < N_PRIM)
        for (int d = 0; d < 3; d++) ext = fmax(ext, p->dims[d]);
    for (;;) {
        tdm_dvec3 q = tdm_d3(gen_range(g, -ext, ext), gen_range(g, -ext, ext), gen_range(g, -ext, ext));
        int in = k < N_PRIM ? tdm_primitive_contains(p, q) == 1 : q.x * q.x + q.y * q.y + q.z * q.z < 0.19 * 0.19;
        if (in) return tdm_xform_apply(&w->obst_pose[k], q);
    }
}

/* Poses of the links for one configuration: each link at a random rotation,
 * centred in a random obstacle one time in eight, else anywhere in a region
 * about five times wider than the row of obstacles (so that about a third of
 * the configurations are free, and many collide by containment alone). */
static void random_poses(gen_rng *g, const world *w, tdm_xform *poses)
{
    for (int i = 0; i < N_LINK; i++) {
        tdm_dvec3 c = gen_uniform(g) < 0.125
                          ? point_in_obstacle(g, w, (int)gen_int(g, 0, N_OBST - 1))
                          : tdm_d3(gen_range(g, -3, 3), gen_range(g, -1.5, 1.5), gen_range(g, -1.5, 1.5));
        poses[i] = tdm_xform_from_pose(c, gen_rotation(g));
    }
}

/* Object i's vertices and triangles in world coordinates. */
typedef struct wbox { double lo[3], hi[3]; } wbox;
typedef struct wmesh {
    tdm_dvec3 *v;
    uint32_t nv;
    tdm_dvec3 (*t)[3];
    wbox *tb; /* each triangle's box */
    uint32_t nt;
    wbox box; /* the whole mesh's */
} wmesh;

static void box_add(wbox *b, tdm_dvec3 p, int first)
{
    double c[3] = {p.x, p.y, p.z};
    for (int d = 0; d < 3; d++) {
        if (first || c[d] < b->lo[d]) b->lo[d] = c[d];
        if (first || c[d] > b->hi[d]) b->hi[d] = c[d];
    }
}

static int box_meet(const wbox *a, const wbox *b)
{
    for (int d = 0; d < 3; d++)
        if (a->hi[d] < b->lo[d] || b->hi[d] < a->lo[d]) return 0;
    return 1;
}

static wmesh world_mesh(const world *w, int i, const tdm_xform *x)
{
    const tdm_mesh *m = w->mesh[i];
    wmesh o = {malloc(m->n_verts * sizeof *o.v), m->n_verts, malloc(m->n_tris * sizeof *o.t),
               malloc(m->n_tris * sizeof *o.tb), m->n_tris, {{0}, {0}}};
    cr_assert(o.v && o.t && o.tb);
    for (uint32_t v = 0; v < m->n_verts; v++) {
        o.v[v] = tdm_xform_apply(x, tdm_d3(m->verts[3 * v], m->verts[3 * v + 1], m->verts[3 * v + 2]));
        box_add(&o.box, o.v[v], v == 0);
    }
    for (uint32_t t = 0; t < m->n_tris; t++)
        for (int k = 0; k < 3; k++) {
            o.t[t][k] = o.v[m->tris[3 * t + k]];
            box_add(&o.tb[t], o.t[t][k], k == 0);
        }
    return o;
}

/* Triangle pairs of a and b that meet (box rejects on exact doubles first: they
 * change no answer). */
static uint32_t tri_pairs(const wmesh *a, const wmesh *b)
{
    uint32_t n = 0;
    if (!box_meet(&a->box, &b->box)) return 0;
    for (uint32_t i = 0; i < a->nt; i++) {
        if (!box_meet(&a->tb[i], &b->box)) continue;
        for (uint32_t j = 0; j < b->nt; j++)
            if (box_meet(&a->tb[i], &b->tb[j])) n += (uint32_t)tdm_tri_tri_intersect(a->t[i], b->t[j]);
    }
    return n;
}

/* Some vertex of a (world) inside solid object s (at pose xs) grown by `reach`
 * (reach 0: the exact test on the true shape). */
static int vertex_inside(const world *w, int s, const tdm_xform *xs, const wmesh *a, double reach)
{
    for (uint32_t v = 0; v < a->nv; v++) {
        tdm_dvec3 p = tdm_xform_apply(&(tdm_xform){tdm_dm3_transpose(&xs->r), tdm_d3(0, 0, 0)},
                                      tdm_d3_sub(a->v[v], xs->t));
        int in = reach == 0 ? tdm_primitive_contains(&w->solid[s].shape, p) == 1
                            : tdm_primitive_contains_grown(&w->solid[s].shape, p, reach);
        if (in) return 1;
    }
    return 0;
}

typedef struct verdict {
    uint32_t tris;   /* triangle pairs that meet */
    int truth;       /* FCL's answer: triangles meet, or a vertex inside a solid partner's true shape */
    int near;        /* some vertex within twice the reach of a solid partner (the rule may say colliding) */
} verdict;

static verdict oracle_pair(const world *w, int a, int b, const tdm_xform *xa, const tdm_xform *xb, const wmesh *ma,
                           const wmesh *mb)
{
    verdict v = {tri_pairs(ma, mb), 0, 0};
    int sa = w->solid[a].shape.type != 0, sb = w->solid[b].shape.type != 0;
    v.truth = v.tris > 0 || (sb && vertex_inside(w, b, xb, ma, 0)) || (sa && vertex_inside(w, a, xa, mb, 0));
    double ra = 2 * (w->solid[a].margin + 1e-5), rb = 2 * (w->solid[b].margin + 1e-5);
    v.near = (sb && vertex_inside(w, b, xb, ma, rb)) || (sa && vertex_inside(w, a, xa, mb, ra));
    return v;
}

typedef struct tally {
    size_t queries, colliding, inside_only, inside_pairs, extra, extra_far;
} tally;

/* Runs N_CFG random configurations through engine e, bool and contacts, and
 * checks every answer against the oracle. */
static void check_engine(tdm_sched *e, const char *name, tally *t)
{
    world w;
    gen_rng g = {seed ^ 0x7a11ull};
    world_make(&w, &g);
    for (int i = 0; i < N_OBJ; i++) cr_assert_eq(tdm_sched_mesh_add(e, w.bvh[i]), TDM_OK);
    const tdm_scene *s = w.scene;
    tdm_xform *poses = malloc((size_t)N_CFG * N_LINK * sizeof *poses);
    verdict(*want)[N_OBJ * N_OBJ] = malloc((size_t)N_CFG * sizeof *want);
    cr_assert(poses && want);
    for (int q = 0; q < N_CFG; q++) {
        tdm_xform *x = &poses[(size_t)q * N_LINK];
        random_poses(&g, &w, x);
        wmesh m[N_OBJ];
        tdm_xform at[N_OBJ];
        for (int i = 0; i < N_OBJ; i++) {
            at[i] = i < N_LINK ? x[i] : w.obst_pose[i - N_LINK];
            m[i] = world_mesh(&w, i, &at[i]);
        }
        for (uint32_t k = 0; k < s->n_checks; k++) {
            int a = (int)s->objects[s->checks[k].lo].id, b = (int)s->objects[s->checks[k].hi].id;
            want[q][k] = oracle_pair(&w, a, b, &at[a], &at[b], &m[a], &m[b]);
        }
        for (int i = 0; i < N_OBJ; i++) {
            free(m[i].v);
            free(m[i].t);
            free(m[i].tb);
        }
    }
    tdm_sched_result *res = malloc((size_t)N_CFG * sizeof *res);
    cr_assert_not_null(res);
    for (int mode = 0; mode < 2; mode++) {
        tdm_sched_query proto = {s, poses, mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 1u << 20, NULL, NULL};
        cr_assert_eq(tdm_sched_run_poses(e, &proto, N_CFG, res), TDM_OK);
        for (int q = 0; q < N_CFG; q++) {
            int truth = 0, near = 0, first = -1;
            uint32_t tris = 0;
            for (uint32_t k = 0; k < s->n_checks; k++) {
                const verdict *v = &want[q][k];
                if (mode == 0) t->inside_pairs += v->truth && v->tris == 0;
                if (v->truth && first < 0) first = (int)k;
                truth |= v->truth;
                near |= v->near;
                tris += v->tris;
            }
            const tdm_sched_result *r = &res[q];
            cr_assert(!truth || r->colliding, "%s seed=%llu config %d: the oracle says colliding (first pair %u-%u), "
                      "the engine free", name, (unsigned long long)seed, q,
                      s->objects[s->checks[first].lo].id, s->objects[s->checks[first].hi].id);
            if (mode == 1) cr_assert_eq(r->contacts, tris, "%s config %d: contacts %u, oracle %u", name, q, r->contacts,
                                        tris);
            if (!r->colliding) continue;
            /* the pair named is checked, collides by the oracle's verdict or is near a solid,
             * and no pair before it collides for the oracle */
            uint32_t k = 0;
            while (k < s->n_checks && !(s->objects[s->checks[k].lo].id == r->object_a &&
                                        s->objects[s->checks[k].hi].id == r->object_b))
                k++;
            cr_assert(k < s->n_checks, "%s config %d: pair %u-%u is not checked", name, q, r->object_a, r->object_b);
            cr_assert(want[q][k].truth || want[q][k].near, "%s config %d: pair %u-%u neither collides nor is near",
                      name, q, r->object_a, r->object_b);
            cr_assert(first < 0 || (int)k <= first, "%s config %d: pair %u named, the oracle's first is %d", name, q, k,
                      first);
            if (mode == 1) continue;
            t->queries = N_CFG;
            t->colliding += (size_t)truth;
            t->inside_only += truth && tris == 0;
            if (!truth) {
                t->extra++;
                t->extra_far += !near;
            }
        }
    }
    cr_assert_eq(t->extra_far, 0, "%s: %zu configurations called colliding far from any solid", name, t->extra_far);
    /* the other direction is allowed only near a curved surface: rare */
    cr_assert(t->extra * 100 <= (size_t)N_CFG, "%s: %zu of %d configurations colliding only for the engine", name,
              t->extra, N_CFG);
    /* the scenes must exercise the rule */
    cr_assert(t->inside_pairs >= 200, "%s: only %zu pairs collide by containment alone", name, t->inside_pairs);
    cr_assert(t->inside_only >= 100, "%s: only %zu configurations collide by containment alone", name, t->inside_only);
    cr_assert(t->colliding > (size_t)N_CFG / 4 && t->colliding < (size_t)N_CFG * 3 / 4, "%s: %zu of %d colliding",
              name, t->colliding, N_CFG);
    cr_log_info("%s: %d configurations, %zu colliding for the oracle, %zu by containment alone (%zu pairs), %zu "
                "colliding only for the engine", name, N_CFG, t->colliding, t->inside_only, t->inside_pairs, t->extra);
    for (int i = 0; i < N_OBJ; i++) tdm_sched_mesh_remove(e, w.bvh[i]);
    free(res);
    free(want);
    free(poses);
    world_free(&w);
}

static tdm_sched *engine_or_skip(tdm_backend_kind kind)
{
    tdm_sched_config c = tdm_sched_config_default();
    c.kind = kind;
    c.threads = 2;
    c.calibrate = 0;
    tdm_sched *e = NULL;
    char why[320];
    int rc = tdm_sched_create(&c, &e, why, sizeof why);
    if (rc == TDM_ENODEV) cr_skip_test("no %s engine: %s", tdm_backend_name(kind), why);
    cr_assert_eq(rc, TDM_OK, "%s", why);
    return e;
}

Test(solid, cpu_engine_matches_the_oracle)
{
    tdm_sched *e = engine_or_skip(TDM_BACKEND_CPU);
    tally t = {0};
    check_engine(e, "cpu", &t);
    tdm_sched_destroy(e);
}

Test(solid, gpu_engine_matches_the_oracle)
{
    const char *why = NULL;
    if (!tdm_gpu_available(&why)) cr_skip_test("no GPU: %s", why ? why : "unknown");
    tdm_sched *e = engine_or_skip(TDM_BACKEND_GPU);
    tally t = {0};
    check_engine(e, "gpu", &t);
    tdm_sched_destroy(e);
}

Test(solid, hybrid_engine_matches_the_oracle)
{
    const char *why = NULL;
    if (!tdm_gpu_available(&why)) cr_skip_test("no GPU: %s", why ? why : "unknown");
    tdm_sched *e = engine_or_skip(TDM_BACKEND_HYBRID);
    tally t = {0};
    check_engine(e, "hybrid", &t);
    tdm_sched_destroy(e);
}

/* The engines to run a test on: the CPU engine, and the GPU-resident and hybrid
 * engines when there is a GPU. Returns how many were made into e[]. */
static int engines(tdm_sched *e[3], const char *names[3])
{
    int n = 0;
    const char *why = NULL;
    int gpu = tdm_gpu_available(&why);
    static const tdm_backend_kind kinds[3] = {TDM_BACKEND_CPU, TDM_BACKEND_GPU, TDM_BACKEND_HYBRID};
    for (int k = 0; k < 3; k++) {
        if (k > 0 && !gpu) {
            cr_log_info("no %s engine here: %s", tdm_backend_name(kinds[k]), why ? why : "no GPU");
            continue;
        }
        tdm_sched_config c = tdm_sched_config_default();
        c.kind = kinds[k];
        c.threads = 2;
        c.calibrate = 0;
        char msg[320];
        cr_assert_eq(tdm_sched_create(&c, &e[n], msg, sizeof msg), TDM_OK, "%s", msg);
        names[n++] = tdm_backend_name(kinds[k]);
    }
    return n;
}

/* Poses along x through a solid and out, one scene of one checked pair, on
 * every engine: x = 0 inside; 0.44 inside, 0.01 from the wall; 0.5 across the
 * wall; 0.6 outside. One check a query: the GPU-resident engine folds these as
 * its read-back comes in (sched.c's answered_one), the CPU engine after the run. */
static void along_x(tdm_bvh *fixed, const tdm_scene_solid *fixed_solid, tdm_bvh *moving,
                    const tdm_scene_solid *moving_solid, const uint32_t want_solid[4], const uint32_t want_mesh[4])
{
    tdm_scene_obj objs[2] = {{1, fixed, 0, tdm_xform_identity()}, {2, moving, 1, tdm_xform_identity()}};
    tdm_scene_solid so[2];
    memset(so, 0, sizeof so);
    if (fixed_solid) so[0] = *fixed_solid;
    if (moving_solid) so[1] = *moving_solid;
    tdm_scene *solid_s = NULL, *mesh_s = NULL;
    tdm_scene_error err;
    cr_assert_eq(tdm_scene_create_solids(objs, 2, NULL, 0, so, &solid_s, &err), TDM_OK, "%s", err.msg);
    cr_assert_eq(tdm_scene_create(objs, 2, NULL, 0, &mesh_s, &err), TDM_OK);
    const double xs[4] = {0, 0.44, 0.5, 0.6};
    tdm_xform p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = tdm_xform_identity();
        p[i].t.x = xs[i];
    }
    tdm_sched *e[3];
    const char *names[3];
    int ne = engines(e, names);
    for (int k = 0; k < ne; k++) {
        cr_assert_eq(tdm_sched_mesh_add(e[k], fixed), TDM_OK);
        cr_assert_eq(tdm_sched_mesh_add(e[k], moving), TDM_OK);
        for (int mode = 0; mode < 2; mode++) {
            tdm_sched_query q = {solid_s, p, mode ? TDM_MODE_CONTACTS : TDM_MODE_BOOL, 100, NULL, NULL};
            tdm_sched_result r[4], rm[4];
            cr_assert_eq(tdm_sched_run_poses(e[k], &q, 4, r), TDM_OK);
            q.scene = mesh_s;
            cr_assert_eq(tdm_sched_run_poses(e[k], &q, 4, rm), TDM_OK);
            for (int i = 0; i < 4; i++) {
                cr_assert_eq(r[i].colliding, want_solid[i], "%s: x=%g mode %d", names[k], xs[i], mode);
                cr_assert_eq(rm[i].colliding, want_mesh[i], "%s: x=%g mode %d (surface only)", names[k], xs[i], mode);
                if (r[i].colliding) {
                    cr_assert_eq(r[i].object_a, 1);
                    cr_assert_eq(r[i].object_b, 2);
                }
                /* containment counts no triangle pair */
                if (mode == 1) cr_assert_eq(r[i].contacts, rm[i].contacts, "%s: x=%g", names[k], xs[i]);
                if (mode == 0) cr_assert_eq(r[i].contacts, r[i].colliding);
            }
        }
        tdm_sched_mesh_remove(e[k], fixed);
        tdm_sched_mesh_remove(e[k], moving);
        tdm_sched_destroy(e[k]);
    }
    tdm_scene_destroy(solid_s);
    tdm_scene_destroy(mesh_s);
}

/* A mesh link wholly inside a fixed solid box: colliding; a mesh box: free. */
Test(solid, link_inside_a_box)
{
    tdm_bvh *box = tree_of(gen_box(0.5, 0.5, 0.5)), *link = tree_of(gen_box(0.05, 0.05, 0.05));
    tdm_scene_solid s = {tdm_primitive_box(1, 1, 1), tdm_xform_identity(), 0};
    const uint32_t want_solid[4] = {1, 1, 1, 0}, want_mesh[4] = {0, 0, 1, 0};
    along_x(box, &s, link, NULL, want_solid, want_mesh);
    tdm_bvh_free(box);
    tdm_bvh_free(link);
}

/* The other direction: a fixed mesh wholly inside a moving solid link, a capsule
 * whose true shape sits in a frame turned from the object's (its axis along the
 * object's x, so that a rule ignoring the frame would find the obstacle outside). */
Test(solid, obstacle_inside_a_link)
{
    double dev = 0;
    tdm_primitive cap = tdm_primitive_capsule(0.12, 0.8); /* ends at +-0.52 along its axis */
    tdm_mesh *m = prim_mesh(cap, &dev);
    const double h = 0.78539816339744831; /* pi / 4 */
    tdm_quat q = {0, sin(h), 0, cos(h)}; /* about y: the capsule's z to the object's x */
    tdm_xform frame = tdm_xform_from_pose(tdm_d3(0, 0, 0), q);
    for (uint32_t v = 0; v < m->n_verts; v++) {
        tdm_dvec3 p = tdm_xform_apply(&frame, tdm_d3(m->verts[3 * v], m->verts[3 * v + 1], m->verts[3 * v + 2]));
        m->verts[3 * v] = (float)p.x, m->verts[3 * v + 1] = (float)p.y, m->verts[3 * v + 2] = (float)p.z;
    }
    tdm_bvh *link = tree(m), *obst = tree_of(gen_box(0.05, 0.05, 0.05));
    /* the rotated float vertices may move by ~1e-8 m: within the rule's slack */
    tdm_scene_solid s = {cap, frame, dev};
    /* link at x: the obstacle (centred at 0) is inside for x = 0 and 0.44 (its far
     * corner 0.1145 from the axis segment's end, radius 0.12), across the surface
     * at 0.5, outside at 0.6 */
    const uint32_t want_solid[4] = {1, 1, 1, 0}, want_mesh[4] = {0, 0, 1, 0};
    along_x(obst, NULL, link, &s, want_solid, want_mesh);
    tdm_mesh_free(m);
    tdm_bvh_free(link);
    tdm_bvh_free(obst);
}
