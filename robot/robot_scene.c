/* A robot in a planning scene as one tdm_scene: see robot_scene.h. */
#include "robot_scene.h"
#include "shape_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../geom/kin.h"
#include "../geom/primitive.h"
#include "kinematics.h"

/* A growable list of id pairs. */
typedef struct pair_list { tdm_id_pair *v; size_t n, cap; } pair_list;

static int pair_push(pair_list *l, uint32_t a, uint32_t b)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        tdm_id_pair *v = realloc(l->v, cap * sizeof *v);
        if (!v) return TDM_ENOMEM;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (tdm_id_pair){a < b ? a : b, a < b ? b : a};
    return TDM_OK;
}

/* rs->kin: the robot's joints and its movable objects (elements, then attached
 * shapes, whose entries the caller fills) as geom/kin.h's table. */
static int kin_build(tdm_robot_scene *rs, const tdm_robot *r)
{
    tdm_kin_joint *j = calloc(r->n_joints + 1, sizeof *j);
    tdm_kin_elem *el = calloc(rs->n_movable + 1, sizeof *el);
    if (!j || !el) {
        free(j);
        free(el);
        return TDM_ENOMEM;
    }
    for (uint32_t k = 0; k < r->n_joints; k++) {
        const tdm_robot_joint *rj = &r->joints[k];
        uint32_t type = rj->type == TDM_JOINT_PRISMATIC ? TDM_KIN_SLIDE
                        : rj->type == TDM_JOINT_FIXED   ? TDM_KIN_FIXED
                                                        : TDM_KIN_ROTATE;
        j[k] = (tdm_kin_joint){rj->parent, type, rj->active, rj->mimic_source, rj->mimic_multiplier,
                               rj->mimic_offset, rj->origin, rj->axis};
    }
    for (uint32_t e = 0; e < r->n_collisions; e++) el[e] = (tdm_kin_elem){r->collisions[e].link, 0, r->collisions[e].origin};
    rs->kin_joints = j;
    rs->kin_elems = el;
    rs->kin = (tdm_kin){r->n_links, rs->n_movable, r->n_active, j, el, rs->base};
    return TDM_OK;
}

/* A robot element's mesh, in its own frame; a primitive's true shape in *solid
 * (left all-zero for a mesh element). */
static int element_mesh(const tdm_robot *r, uint32_t e, tdm_robot_mesh_loader load, void *ctx, double tol,
                        tdm_mesh **out, tdm_scene_solid *solid, char *err, size_t errlen)
{
    const tdm_robot_collision *c = &r->collisions[e];
    const char *link = r->links[c->link].name;
    char why[400];
    int rc;
    tdm_primitive p;
    switch (c->shape) {
    case TDM_SHAPE_BOX: p = tdm_primitive_box(c->size[0], c->size[1], c->size[2]); break;
    case TDM_SHAPE_CYLINDER: p = tdm_primitive_cylinder(c->size[1], c->size[0]); break; /* URDF: radius, length */
    case TDM_SHAPE_SPHERE: p = tdm_primitive_sphere(c->size[0]); break;
    case TDM_SHAPE_CAPSULE: p = tdm_primitive_capsule(c->size[0], c->size[1]); break;
    case TDM_SHAPE_MESH: {
        if (!load) {
            snprintf(err, errlen, "%s:%u: link '%s' collision %u: a mesh element and no mesh loader", r->urdf_path,
                     c->line, link, e - r->links[c->link].first_collision);
            return TDM_EINVAL;
        }
        tdm_mesh *m = NULL;
        if ((rc = load(ctx, c->mesh_path, &m, why, sizeof why)) != TDM_OK) {
            snprintf(err, errlen, "%s:%u: link '%s' mesh %s: %s", r->urdf_path, c->line, link, c->mesh_path, why);
            return rc;
        }
        const double s[3] = {c->scale.x, c->scale.y, c->scale.z};
        if (s[0] != 1 || s[1] != 1 || s[2] != 1) {
            for (size_t i = 0; i < 3 * (size_t)m->n_verts; i++) m->verts[i] = (float)((double)m->verts[i] * s[i % 3]);
            for (uint32_t i = 0; i < 3 * m->n_verts; i++)
                if (!isfinite(m->verts[i])) {
                    snprintf(err, errlen, "%s:%u: link '%s' mesh %s: a scaled vertex overflows float", r->urdf_path,
                             c->line, link, c->mesh_path);
                    tdm_mesh_free(m);
                    return TDM_ERANGE;
                }
        }
        *out = m;
        return TDM_OK;
    }
    default:
        snprintf(err, errlen, "%s:%u: link '%s': unknown shape", r->urdf_path, c->line, link);
        return TDM_EINVAL;
    }
    double dev = 0;
    if ((rc = tdm_primitive_mesh(&p, tol, out, &dev, why, sizeof why)) != TDM_OK)
        snprintf(err, errlen, "%s:%u: link '%s' %s: %s", r->urdf_path, c->line, link, tdm_shape_type_name(c->shape),
                 why);
    else
        *solid = (tdm_scene_solid){p, tdm_xform_identity(), dev};
    return rc;
}

/* A collision object's (world or attached) primitive as Tandem's primitive. */
static int object_primitive(const tdm_ps_object *o, uint32_t k, tdm_primitive *p, char *err, size_t errlen)
{
    const tdm_ps_primitive *q = &o->primitives[k];
    switch (q->type) {
    case TDM_PS_BOX: *p = tdm_primitive_box(q->dims[0], q->dims[1], q->dims[2]); return TDM_OK;
    case TDM_PS_SPHERE: *p = tdm_primitive_sphere(q->dims[0]); return TDM_OK;
    case TDM_PS_CYLINDER: *p = tdm_primitive_cylinder(q->dims[0], q->dims[1]); return TDM_OK; /* MoveIt: height, radius */
    case TDM_PS_CONE: *p = tdm_primitive_cone(q->dims[0], q->dims[1]); return TDM_OK;         /* MoveIt: height, radius */
    default:
        snprintf(err, errlen, "object '%s' primitive %u: unknown type %d", o->id, k, (int)q->type);
        return TDM_EINVAL;
    }
}

/* That primitive's mesh, in its own frame, and its true shape in *solid. */
static int object_primitive_mesh(const char *kind, const tdm_ps_object *o, uint32_t k, double tol, tdm_mesh **out,
                                tdm_scene_solid *solid, char *err, size_t errlen)
{
    tdm_primitive p;
    int prc = object_primitive(o, k, &p, err, errlen);
    if (prc != TDM_OK) return prc;
    char why[400];
    double dev = 0;
    int rc = tdm_primitive_mesh(&p, tol, out, &dev, why, sizeof why);
    if (rc != TDM_OK) snprintf(err, errlen, "%s object '%s' primitive %u: %s", kind, o->id, k, why);
    else *solid = (tdm_scene_solid){p, tdm_xform_identity(), dev};
    return rc;
}

static int object_mesh(const char *kind, const tdm_ps_object *o, uint32_t k, tdm_mesh **out, char *err, size_t errlen)
{
    const tdm_ps_mesh *q = &o->meshes[k];
    float *v = malloc((3 * (size_t)q->n_verts + 1) * sizeof *v);
    if (!v) return TDM_ENOMEM;
    for (size_t i = 0; i < 3 * (size_t)q->n_verts; i++) v[i] = (float)q->verts[i];
    char why[400];
    int rc = tdm_mesh_create(v, q->n_verts, q->tris, q->n_tris, NULL, out, why, sizeof why);
    free(v);
    if (rc != TDM_OK) snprintf(err, errlen, "%s object '%s' mesh %u: %s", kind, o->id, k, why);
    return rc;
}

/* The frames a scene's objects are written in (robot_scene.h, "Frames"): what a header
 * frame may name, looked up as MoveIt looks it up. */
typedef struct frame_book {
    const tdm_robot *r;
    const tdm_planning_scene *ps;
    const tdm_xform *links;       /* the links' poses in the scene's robot state */
    char **att_ids, **obj_ids;    /* the attached and world objects' ids, borrowed */
    uint32_t *att_order, *obj_order; /* tdm_ps_name_order of each */
    tdm_xform *att_at, *obj_at;   /* each object's own frame (its header frame, its pose applied), once placed */
} frame_book;

/* The pose of frame f in the planning frame into *out, for attached object i (attached) or
 * world object i: a link (in the scene's robot state), an attached object before it (any
 * attached object, for a world object) or one of its subframes, a world object before it or
 * one of its subframes (world objects only), a fixed frame of the scene, or the planning
 * frame ("world" or the SRDF's root virtual joint's parent frame); a leading '/' is dropped.
 * 1, or 0 when f names none of them. */
static int frame_find(const frame_book *fb, const char *f, int attached, uint32_t i, tdm_xform *out)
{
    if (f[0] == '/') f++;
    int32_t j = tdm_robot_find_link(fb->r, f);
    if (j >= 0) {
        *out = fb->links[j];
        return 1;
    }
    /* attached objects, then world objects (world objects only): an id, then OBJECT/SUBFRAME,
     * the object's id any prefix of f that ends before a '/' (id: f, cut at each in turn) */
    char id[TDM_PS_MAX_NAME + 1];
    snprintf(id, sizeof id, "%s", f);
    for (int kind = 0; kind < (attached ? 1 : 2); kind++) {
        char *const *ids = kind ? fb->obj_ids : fb->att_ids;
        const uint32_t *order = kind ? fb->obj_order : fb->att_order;
        const uint32_t n = kind ? fb->ps->n_objects : fb->ps->n_attached, before = (kind || attached) ? i : n;
        const tdm_xform *at = kind ? fb->obj_at : fb->att_at;
        j = tdm_ps_name_find(ids, order, n, f);
        if (j >= 0 && (uint32_t)j < before) {
            *out = at[j];
            return 1;
        }
        int tries = 0;
        for (char *slash = strchr(id, '/'); slash && tries < TDM_ROBOT_SCENE_FRAME_SLASHES;
             slash = strchr(slash + 1, '/'), tries++) {
            *slash = 0; /* id: the prefix before this '/' */
            j = tdm_ps_name_find(ids, order, n, id);
            *slash = '/';
            if (j < 0 || (uint32_t)j >= before) continue;
            const tdm_ps_object *o = kind ? &fb->ps->objects[j] : &fb->ps->attached[j].object;
            int32_t k = tdm_ps_name_find(o->subframe_names, o->subframes_by_name, o->n_subframes, f + (slash + 1 - id));
            if (k < 0) continue;
            *out = tdm_xform_mul(&at[j], &o->subframe_poses[k]);
            return 1;
        }
    }
    if (tdm_ps_fixed_frame(fb->ps, f, out)) return 1;
    if (!strcmp(f, "world") || (fb->r->planning_frame && !strcmp(f, fb->r->planning_frame))) {
        *out = tdm_xform_identity();
        return 1;
    }
    return 0;
}

/* Every object's header frame placed in the planning frame, before any tree is built:
 * att_frame[n_attached] and obj_frame[n_objects] (malloc'd, the caller frees them). An
 * object whose header frame names nothing frame_find knows is an error naming both. */
static int place_frames(const tdm_robot *r, const tdm_planning_scene *ps, const tdm_xform *links,
                        tdm_xform **att_frame, tdm_xform **obj_frame, char *err, size_t errlen)
{
    frame_book fb = {r, ps, links, NULL, NULL, NULL, NULL, NULL, NULL};
    const uint32_t A = ps->n_attached, W = ps->n_objects;
    int rc = TDM_ENOMEM;
    *att_frame = malloc((A + 1) * sizeof **att_frame);
    *obj_frame = malloc((W + 1) * sizeof **obj_frame);
    fb.att_ids = malloc((A + 1) * sizeof *fb.att_ids);
    fb.obj_ids = malloc((W + 1) * sizeof *fb.obj_ids);
    fb.att_at = malloc((A + 1) * sizeof *fb.att_at);
    fb.obj_at = malloc((W + 1) * sizeof *fb.obj_at);
    if (!*att_frame || !*obj_frame || !fb.att_ids || !fb.obj_ids || !fb.att_at || !fb.obj_at) goto done;
    for (uint32_t i = 0; i < A; i++) fb.att_ids[i] = ps->attached[i].object.id;
    for (uint32_t i = 0; i < W; i++) fb.obj_ids[i] = ps->objects[i].id;
    if (!(fb.att_order = tdm_ps_name_order(fb.att_ids, A)) || !(fb.obj_order = tdm_ps_name_order(fb.obj_ids, W)))
        goto done;
    for (uint32_t k = 0; k < A + W; k++) {
        const int attached = k < A;
        const uint32_t i = attached ? k : k - A;
        const tdm_ps_object *o = attached ? &ps->attached[i].object : &ps->objects[i];
        tdm_xform *frame = attached ? &(*att_frame)[i] : &(*obj_frame)[i];
        *frame = tdm_xform_identity();
        if (o->frame_id && !frame_find(&fb, o->frame_id, attached, i, frame)) {
            const int other = r->planning_frame && strcmp(r->planning_frame, "world") != 0;
            rc = TDM_EINVAL;
            snprintf(err, errlen,
                     "%s object '%.256s': header frame '%.256s' is unknown: not a link of the robot, %s (or a "
                     "subframe of one, OBJECT/NAME), a fixed frame of the scene, or the planning frame (world%s%.256s)",
                     attached ? "attached" : "world", o->id, o->frame_id,
                     attached ? "an attached object before it" : "an attached object, a world object before it",
                     other ? " or " : "", other ? r->planning_frame : "");
            goto done;
        }
        (attached ? fb.att_at : fb.obj_at)[i] = tdm_xform_mul(frame, &o->pose);
    }
    rc = TDM_OK;
done:
    if (rc != TDM_OK) {
        free(*att_frame);
        free(*obj_frame);
        *att_frame = *obj_frame = NULL;
    }
    free(fb.att_ids);
    free(fb.obj_ids);
    free(fb.att_order);
    free(fb.obj_order);
    free(fb.att_at);
    free(fb.obj_at);
    return rc;
}

static int build_tree(tdm_mesh *m, tdm_bvh **out, const char *what, char *err, size_t errlen)
{
    int rc = tdm_bvh_build(m, out);
    tdm_mesh_free(m);
    if (rc != TDM_OK) snprintf(err, errlen, "%s: building its tree failed: %s", what, tdm_strerror(rc));
    return rc;
}

uint32_t tdm_robot_elem_first_same(const tdm_robot *r, uint32_t e)
{
    const tdm_robot_collision *c = &r->collisions[e];
    for (uint32_t k = 0; k < e; k++) {
        const tdm_robot_collision *d = &r->collisions[k];
        if (d->shape != c->shape) continue;
        if (c->shape == TDM_SHAPE_MESH ? d->scale.x == c->scale.x && d->scale.y == c->scale.y &&
                                             d->scale.z == c->scale.z && strcmp(d->mesh_path, c->mesh_path) == 0
                                       : d->size[0] == c->size[0] && d->size[1] == c->size[1] && d->size[2] == c->size[2])
            return k;
    }
    return e;
}

static int dcmp(double a, double b) { return a < b ? -1 : a > b; } /* -0 and 0 alike, as == */

typedef struct elem_key {
    const tdm_robot_collision *c;
    uint32_t e;
} elem_key;

/* first_same's sameness as an order: the shape type, then a mesh's scale and path or a
 * primitive's size; 0 exactly when tdm_robot_elem_first_same calls two elements the same. */
static int shape_cmp(const tdm_robot_collision *a, const tdm_robot_collision *b)
{
    int c = (a->shape > b->shape) - (a->shape < b->shape);
    if (c) return c;
    if (a->shape == TDM_SHAPE_MESH) {
        if (!(c = dcmp(a->scale.x, b->scale.x)) && !(c = dcmp(a->scale.y, b->scale.y)) &&
            !(c = dcmp(a->scale.z, b->scale.z)))
            c = strcmp(a->mesh_path, b->mesh_path);
        return c;
    }
    for (int k = 0; k < 3 && !c; k++) c = dcmp(a->size[k], b->size[k]);
    return c;
}

/* by shape, then by index: each run of one shape starts with its owner */
static int elem_key_cmp(const void *x, const void *y)
{
    const elem_key *a = x, *b = y;
    int c = shape_cmp(a->c, b->c);
    return c ? c : (a->e > b->e) - (a->e < b->e);
}

int tdm_robot_elem_owners(const tdm_robot *r, uint32_t *owner)
{
    uint32_t n = r->n_collisions;
    elem_key *k = malloc(sizeof *k * (n ? n : 1));
    if (!k) return TDM_ENOMEM;
    for (uint32_t e = 0; e < n; e++) k[e] = (elem_key){&r->collisions[e], e};
    qsort(k, n, sizeof *k, elem_key_cmp);
    for (uint32_t i = 0, first = 0; i < n; i++) {
        if (i == 0 || shape_cmp(k[i - 1].c, k[i].c)) first = k[i].e;
        owner[k[i].e] = first;
    }
    free(k);
    return TDM_OK;
}

int tdm_robot_elems_create(const tdm_robot *r, tdm_robot_mesh_loader load, void *ctx, double tolerance,
                           tdm_robot_elems **out, char *err, size_t errlen)
{
    return tdm_robot_elems_create_limited(r, load, ctx, tolerance, 0, NULL, out, err, errlen);
}

int tdm_robot_elems_create_limited(const tdm_robot *r, tdm_robot_mesh_loader load, void *ctx, double tolerance,
                                   uint64_t max_triangles, const char *limit_name, tdm_robot_elems **out, char *err,
                                   size_t errlen)
{
    if (errlen) err[0] = 0;
    *out = NULL;
    if (!r) return TDM_EINVAL;
    if (r->n_collisions == 0) {
        snprintf(err, errlen, "%s: the robot has no collision element", r->urdf_path);
        return TDM_EEMPTY;
    }
    int rc = TDM_ENOMEM;
    tdm_robot_elems *el = calloc(1, sizeof *el);
    if (!el) goto fail;
    el->robot = r;
    el->n = r->n_collisions;
    el->tolerance = tolerance;
    el->bvhs = calloc(el->n, sizeof *el->bvhs);
    el->owner = calloc(el->n, sizeof *el->owner);
    el->solids = calloc(el->n, sizeof *el->solids); /* all-zero: not solid */
    if (!el->bvhs || !el->owner || !el->solids || tdm_shape_cache_create(&el->shapes) != TDM_OK ||
        tdm_robot_elem_owners(r, el->owner) != TDM_OK)
        goto fail;
    char what[TDM_ROBOT_MAX_NAME + 64];
    uint64_t tris = 0;
    for (uint32_t e = 0; e < r->n_collisions; e++) {
        const tdm_robot_collision *c = &r->collisions[e];
        uint32_t k = el->owner[e];
        if (k != e) { /* the tree and true shape of an earlier element of the same shape */
            el->bvhs[e] = el->bvhs[k];
            el->solids[e] = el->solids[k];
            continue;
        }
        tdm_mesh *m = NULL;
        if ((rc = element_mesh(r, e, load, ctx, tolerance, &m, &el->solids[e], err, errlen)) != TDM_OK) goto fail;
        snprintf(what, sizeof what, "%s:%u: link '%s'", r->urdf_path, c->line, r->links[c->link].name);
        if ((rc = build_tree(m, &el->bvhs[e], what, err, errlen)) != TDM_OK) goto fail;
        tris += el->bvhs[e]->n_tris;
        if (max_triangles && tris > max_triangles) {
            rc = TDM_ERANGE;
            snprintf(err, errlen,
                     "%s:%u: link '%s' collision %u: the robot's collision elements have more than %llu triangles: "
                     "%llu with this one (its distinct shapes, meshes as scaled, primitives as tessellated)%s%s",
                     r->urdf_path, c->line, r->links[c->link].name, e - r->links[c->link].first_collision,
                     (unsigned long long)max_triangles, (unsigned long long)tris, limit_name ? ", over " : "",
                     limit_name ? limit_name : "");
            goto fail;
        }
    }
    *out = el;
    return TDM_OK;
fail:
    if (rc == TDM_ENOMEM && errlen && !err[0]) snprintf(err, errlen, "out of memory");
    tdm_robot_elems_destroy(el);
    return rc;
}

void tdm_robot_elems_destroy(tdm_robot_elems *el)
{
    if (!el) return;
    if (el->bvhs)
        for (uint32_t i = 0; i < el->n; i++)
            if (!el->owner || el->owner[i] == i) tdm_bvh_free(el->bvhs[i]);
    free(el->bvhs);
    free(el->owner);
    free(el->solids);
    tdm_shape_cache_destroy(el->shapes);
    free(el);
}

static size_t attached_shapes(const tdm_planning_scene *ps)
{
    size_t n = 0;
    for (uint32_t i = 0; i < ps->n_attached; i++)
        n += ps->attached[i].object.n_primitives + ps->attached[i].object.n_meshes;
    return n;
}

/* A world object's shapes: primitives, meshes, planes. */
static uint32_t world_shapes(const tdm_ps_object *o) { return o->n_primitives + o->n_meshes + o->n_planes; }

size_t tdm_robot_scene_count(const tdm_robot *r, const tdm_planning_scene *ps)
{
    size_t n = r->n_collisions + attached_shapes(ps);
    for (uint32_t i = 0; i < ps->n_objects; i++) n += world_shapes(&ps->objects[i]);
    return n;
}

/* How far from the root link's origin any point of a movable object can be, the
 * prismatic joints within their limits (a revolute joint turns its child about the
 * child's own origin, so only the joints' offsets and slides add up): the radius a
 * plane's square must cover. rs's element and attached trees must be built. */
static double movable_reach(const tdm_robot *r, const tdm_robot_scene *rs)
{
    double *d = calloc(r->n_links, sizeof *d), reach = 0;
    if (!d) return -1;
    for (uint32_t k = 0; k < r->n_joints; k++) { /* depth first: a joint's parent link is done */
        const tdm_robot_joint *j = &r->joints[k];
        double slide = 0;
        if (j->type == TDM_JOINT_PRISMATIC) {
            int32_t src = j->active >= 0 ? j->active : j->mimic_source;
            double mult = j->active >= 0 ? 1 : j->mimic_multiplier, off = j->active >= 0 ? 0 : j->mimic_offset;
            if (src >= 0) {
                const tdm_robot_joint *s = &r->joints[r->active[src]];
                slide = fabs(mult) * fmax(fabs(s->lower), fabs(s->upper));
            }
            slide += fabs(off);
        }
        d[k + 1] = d[j->parent] + tdm_d3_len(j->origin.t) + slide;
    }
    for (uint32_t e = 0; e < rs->n_movable; e++) { /* a tree's radius bounds each coordinate: sqrt(3) of it */
        const tdm_kin_elem *k = &rs->kin.elems[e];
        double far = d[k->link] + tdm_d3_len(k->origin.t) + sqrt(3.0) * (double)rs->bvhs[e]->radius;
        if (far > reach) reach = far;
    }
    free(d);
    return reach;
}

/* A plane (shape_msgs/Plane, in its own frame) as a square of two triangles about the
 * point of the plane nearest `centre` (in the plane's frame), of half-side `half`. */
static int plane_mesh(const tdm_ps_plane *p, tdm_dvec3 centre, double half, tdm_mesh **out, char *err, size_t errlen)
{
    tdm_dvec3 n = tdm_d3(p->coef[0], p->coef[1], p->coef[2]);
    double len = tdm_d3_len(n);
    n = tdm_d3_scale(n, 1 / len);
    double off = -p->coef[3] / len; /* n . x + off = 0: MoveIt's (FCL's) a x + b y + c z = d */
    tdm_dvec3 o = tdm_d3_sub(centre, tdm_d3_scale(n, tdm_d3_dot(n, centre) + off));
    /* tangents: n crossed with the axis least along it, then n crossed with that */
    tdm_dvec3 axis = fabs(n.x) <= fabs(n.y) && fabs(n.x) <= fabs(n.z) ? tdm_d3(1, 0, 0)
                     : fabs(n.y) <= fabs(n.z)                        ? tdm_d3(0, 1, 0)
                                                                     : tdm_d3(0, 0, 1);
    tdm_dvec3 u = tdm_d3_cross(n, axis);
    u = tdm_d3_scale(u, 1 / tdm_d3_len(u));
    tdm_dvec3 v = tdm_d3_cross(n, u);
    float verts[12];
    static const double su[4] = {-1, 1, 1, -1}, sv[4] = {-1, -1, 1, 1};
    for (int c = 0; c < 4; c++) {
        tdm_dvec3 q = tdm_d3_add(o, tdm_d3_add(tdm_d3_scale(u, su[c] * half), tdm_d3_scale(v, sv[c] * half)));
        verts[3 * c] = (float)q.x, verts[3 * c + 1] = (float)q.y, verts[3 * c + 2] = (float)q.z;
    }
    static const uint32_t tris[6] = {0, 1, 2, 0, 2, 3};
    return tdm_mesh_create(verts, 4, tris, 2, NULL, out, err, errlen);
}

/* The attached and world shapes counted against TDM_SCENE_MAX_OBJECTS with the
 * robot's elements; *n_attached: the attached objects' shapes. */
static int count_objects(const tdm_robot *r, const tdm_planning_scene *ps, size_t *n, size_t *n_attached, char *err,
                         size_t errlen)
{
    *n = tdm_robot_scene_count(r, ps);
    *n_attached = attached_shapes(ps);
    if (*n > TDM_SCENE_MAX_OBJECTS) {
        snprintf(err, errlen, "%zu robot elements, attached and world shapes: at most %u objects", *n,
                 TDM_SCENE_MAX_OBJECTS);
        return TDM_ERANGE;
    }
    return TDM_OK;
}

/* Shape k of collision object o (attached or world) as a tree, from el's shape
 * cache (use_cache, primitives) or its own; its id's entries of rs, objs and solids. */
static int object_shape(const tdm_robot_elems *el, tdm_robot_scene *rs, const tdm_ps_object *o, uint32_t k,
                        int use_cache, uint32_t id, tdm_scene_solid *solid, char *err, size_t errlen)
{
    int rc, prim = k < o->n_primitives;
    const char *kind = rs->objs[id].movable ? "attached" : "world";
    char what[TDM_ROBOT_MAX_NAME + 64];
    if (prim && use_cache) { /* the shape's tree, built by the first scene that holds it */
        tdm_primitive p;
        double dev = 0;
        char why[400];
        if ((rc = object_primitive(o, k, &p, err, errlen)) != TDM_OK) return rc;
        if ((rc = tdm_shape_cache_get(el->shapes, &p, el->tolerance, &rs->bvhs[id], &dev, why, sizeof why)) != TDM_OK) {
            snprintf(err, errlen, "%s object '%s' primitive %u: %s", kind, o->id, k, why);
            return rc;
        }
        rs->objs[id].cached = 1;
        rs->objs[id].prim = p;
        *solid = (tdm_scene_solid){p, tdm_xform_identity(), dev};
        return TDM_OK;
    }
    tdm_mesh *m = NULL;
    rc = prim ? object_primitive_mesh(kind, o, k, el->tolerance, &m, solid, err, errlen)
              : object_mesh(kind, o, k - o->n_primitives, &m, err, errlen);
    if (rc != TDM_OK) return rc;
    snprintf(what, sizeof what, "%s object '%.256s' shape %u", kind, o->id, k);
    return build_tree(m, &rs->bvhs[id], what, err, errlen);
}

/* Adds shape id's triangles to *total: TDM_ERANGE, with err, once the attached and
 * world shapes have more than max (0: no limit). Checked as each shape is built,
 * so that a scene over the limit costs at most the limit and one shape. */
static int count_triangles(const tdm_robot_scene *rs, uint32_t id, const tdm_ps_object *o, uint32_t k, uint64_t max,
                           const char *limit_name, uint64_t *total, char *err, size_t errlen)
{
    *total += rs->bvhs[id]->n_tris;
    if (!max || *total <= max) return TDM_OK;
    snprintf(err, errlen,
             "the robot scene's attached and world shapes have more than %llu triangles: %llu with %s object "
             "'%.256s' shape %u (curved primitives as tessellated)%s%s",
             (unsigned long long)max, (unsigned long long)*total, rs->objs[id].movable ? "attached" : "world", o->id,
             k, limit_name ? ", over " : "", limit_name ? limit_name : "");
    return TDM_ERANGE;
}

/* tdm_robot_scene_create_shared, with the attached and world primitives' trees
 * from el's shape cache (use_cache) or the scene's own. */
static int create_from(const tdm_robot_elems *el, const tdm_planning_scene *ps, int use_cache, uint64_t max_triangles,
                       const char *limit_name, tdm_robot_scene **out, char *err, size_t errlen)
{
    if (errlen) err[0] = 0;
    *out = NULL;
    if (!el || !ps) return TDM_EINVAL;
    const tdm_robot *r = el->robot;
    size_t n, n_att;
    int rc = count_objects(r, ps, &n, &n_att, err, errlen);
    if (rc != TDM_OK) return rc;
    rc = TDM_ENOMEM;
    const uint32_t E = r->n_collisions, M = E + (uint32_t)n_att; /* elements; movable objects */
    tdm_robot_scene *rs = calloc(1, sizeof *rs);
    tdm_scene_obj *objs = calloc(n, sizeof *objs);
    tdm_scene_solid *solids = calloc(n, sizeof *solids); /* all-zero: not solid */
    tdm_xform *links = malloc(r->n_links * sizeof *links);
    double *q0 = calloc(r->n_active + 1, sizeof *q0);
    uint32_t *att_link = calloc(ps->n_attached + 1, sizeof *att_link);
    tdm_xform *att_frame = NULL, *obj_frame = NULL; /* the objects' header frames (place_frames) */
    tdm_ps_acm_key *link_key = NULL, *att_key = NULL, *world_key = NULL;
    uint8_t *touch = NULL;
    char **link_names = NULL;
    uint32_t *link_order = NULL;
    pair_list allowed = {0};
    if (!rs || !objs || !solids || !links || !q0 || !att_link) goto fail;
    rs->robot = r;
    rs->elems = el;
    rs->n_objects = (uint32_t)n;
    rs->n_elements = E;
    rs->n_movable = M;
    rs->bvhs = calloc(n, sizeof *rs->bvhs);
    rs->objs = calloc(n, sizeof *rs->objs);
    if (!rs->bvhs || !rs->objs) goto fail;
    rs->base = tdm_ps_robot_state_root(&ps->robot_state, NULL);
    if ((rc = kin_build(rs, r)) != TDM_OK) goto fail;

    /* The scene's robot state, for objects in a link's frame. */
    for (uint32_t k = 0; k < r->n_active; k++)
        tdm_ps_robot_state_position(&ps->robot_state, r->joints[r->active[k]].name, &q0[k]);
    if ((rc = tdm_robot_fk(r, q0, r->n_active, &rs->base, links)) != TDM_OK) {
        snprintf(err, errlen, "the scene's robot state: %s", tdm_strerror(rc));
        goto fail;
    }
    if ((rc = place_frames(r, ps, links, &att_frame, &obj_frame, err, errlen)) != TDM_OK) goto fail;

    for (uint32_t e = 0; e < E; e++) { /* the elements' trees, borrowed */
        rs->bvhs[e] = el->bvhs[e];
        solids[e] = el->solids[e];
        objs[e] = (tdm_scene_obj){e, rs->bvhs[e], 1, tdm_xform_identity()};
        rs->objs[e] = (tdm_robot_scene_obj){1, e, 0, 0, {0, {0, 0, 0}}, 0};
    }
    uint32_t id = E;
    uint64_t shape_tris = 0; /* the attached and world shapes', against max_triangles */
    /* Attached objects' shapes: movable, each an element of its link at the pose it
     * has in the link's frame in the scene's robot state (as MoveIt attaches it). */
    for (uint32_t i = 0; i < ps->n_attached; i++) {
        const tdm_ps_attached *at = &ps->attached[i];
        const tdm_ps_object *o = &at->object;
        int32_t l = tdm_robot_find_link(r, at->link_name);
        if (l < 0) {
            rc = TDM_EINVAL;
            snprintf(err, errlen, "attached object '%.256s': link_name '%.256s' is not a link of the robot", o->id,
                     at->link_name);
            goto fail;
        }
        att_link[i] = (uint32_t)l;
        /* frame -> link: identity when the header frame is the link itself */
        int in_link = o->frame_id && strcmp(o->frame_id + (o->frame_id[0] == '/'), at->link_name) == 0;
        tdm_xform to_link = tdm_xform_rel(&links[l], &att_frame[i]);
        for (uint32_t k = 0; k < o->n_primitives + o->n_meshes; k++, id++) {
            rs->objs[id] = (tdm_robot_scene_obj){1, i, k, 0, {0, {0, 0, 0}}, 1};
            if ((rc = object_shape(el, rs, o, k, use_cache, id, &solids[id], err, errlen)) != TDM_OK ||
                (rc = count_triangles(rs, id, o, k, max_triangles, limit_name, &shape_tris, err, errlen)) != TDM_OK)
                goto fail;
            const tdm_xform *pose = k < o->n_primitives ? &o->primitives[k].pose : &o->meshes[k - o->n_primitives].pose;
            rs->kin_elems[id] = (tdm_kin_elem){(uint32_t)l, 0, in_link ? *pose : tdm_xform_mul(&to_link, pose)};
            objs[id] = (tdm_scene_obj){id, rs->bvhs[id], 1, tdm_xform_identity()};
        }
    }
    double reach = -1; /* movable_reach, with the first plane */
    for (uint32_t i = 0; i < ps->n_objects; i++) {
        const tdm_ps_object *o = &ps->objects[i];
        const tdm_xform frame = obj_frame[i];
        for (uint32_t k = 0; k < world_shapes(o); k++, id++) {
            rs->objs[id] = (tdm_robot_scene_obj){0, i, k, 0, {0, {0, 0, 0}}, 0};
            const tdm_xform *pose;
            if (k < o->n_primitives + o->n_meshes) {
                if ((rc = object_shape(el, rs, o, k, use_cache, id, &solids[id], err, errlen)) != TDM_OK) goto fail;
                pose = k < o->n_primitives ? &o->primitives[k].pose : &o->meshes[k - o->n_primitives].pose;
            } else { /* a plane: a square over all the movable objects can reach, 1 m to spare */
                const tdm_ps_plane *pl = &o->planes[k - o->n_primitives - o->n_meshes];
                pose = &pl->pose;
                if (reach < 0 && (reach = movable_reach(r, rs)) < 0) goto fail_nomem;
                tdm_xform at = tdm_xform_mul(&frame, pose);
                tdm_dvec3 root = tdm_xform_rel(&at, &rs->base).t; /* the root's origin in the plane's frame */
                tdm_mesh *m = NULL;
                char why[300], what[TDM_ROBOT_MAX_NAME + 64];
                if ((rc = plane_mesh(pl, root, reach + 1.0, &m, why, sizeof why)) != TDM_OK) {
                    snprintf(err, errlen, "world object '%.256s' plane %u: %s", o->id, k, why);
                    goto fail;
                }
                snprintf(what, sizeof what, "world object '%.256s' shape %u", o->id, k);
                if ((rc = build_tree(m, &rs->bvhs[id], what, err, errlen)) != TDM_OK) goto fail;
            }
            if ((rc = count_triangles(rs, id, o, k, max_triangles, limit_name, &shape_tris, err, errlen)) != TDM_OK) goto fail;
            objs[id] = (tdm_scene_obj){id, rs->bvhs[id], 0, tdm_xform_mul(&frame, pose)};
        }
    }

    /* Each name decided once, so that each pair below is O(1) whatever the ACM's size: the
     * ACM keys of the links, attached objects and world objects, and each attached object's
     * touch links as a row of link flags. */
    const uint32_t L = r->n_links;
    link_key = malloc(L * sizeof *link_key);
    att_key = malloc((ps->n_attached + 1) * sizeof *att_key);
    world_key = malloc((ps->n_objects + 1) * sizeof *world_key);
    touch = calloc((size_t)ps->n_attached * L + 1, 1);
    link_names = malloc(L * sizeof *link_names);
    if (!link_key || !att_key || !world_key || !touch || !link_names) goto fail_nomem;
    for (uint32_t l = 0; l < L; l++) {
        link_key[l] = tdm_ps_acm_key_of(&ps->acm, r->links[l].name);
        link_names[l] = r->links[l].name;
    }
    if (!(link_order = tdm_ps_name_order(link_names, L))) goto fail_nomem;
    for (uint32_t i = 0; i < ps->n_attached; i++) {
        const tdm_ps_attached *at = &ps->attached[i];
        att_key[i] = tdm_ps_acm_key_of(&ps->acm, at->object.id);
        for (uint32_t t = 0; t < at->n_touch; t++) { /* names of no link are MoveIt's to ignore too */
            int32_t l = tdm_ps_name_find(link_names, link_order, L, at->touch_links[t]);
            if (l >= 0) touch[(size_t)i * L + (uint32_t)l] = 1;
        }
    }
    for (uint32_t i = 0; i < ps->n_objects; i++) world_key[i] = tdm_ps_acm_key_of(&ps->acm, ps->objects[i].id);

    /* The allowed list. Element pairs by their links (same link, SRDF, ACM);
     * element-shape pairs by the ACM; an attached object's shapes against its own
     * link, its touch links and, as MoveIt has it, each other and any other object
     * attached to the same link; otherwise by the ACM with its id. */
    for (uint32_t a = 0; a < M; a++) {
        const int att_a = a >= E;
        const uint32_t ia = rs->objs[a].index; /* att_a: its attached object */
        const uint32_t la = att_a ? att_link[ia] : r->collisions[a].link;
        const tdm_ps_acm_key ka = att_a ? att_key[ia] : link_key[la];
        for (uint32_t b = a + 1; b < M; b++) {
            int allow;
            const uint32_t ib = rs->objs[b].index;
            if (b < E) { /* both elements */
                uint32_t lb = r->collisions[b].link;
                allow = la == lb || tdm_robot_pair_disabled(r, la, lb) ||
                        tdm_ps_acm_allowed_keys(&ps->acm, ka, link_key[lb]);
            } else if (!att_a) { /* element a, attached shape b */
                allow = la == att_link[ib] || touch[(size_t)ib * L + la] ||
                        tdm_ps_acm_allowed_keys(&ps->acm, ka, att_key[ib]);
            } else { /* two attached shapes */
                allow = ia == ib || la == att_link[ib] || tdm_ps_acm_allowed_keys(&ps->acm, ka, att_key[ib]);
            }
            if (allow && (rc = pair_push(&allowed, a, b)) != TDM_OK) goto fail;
        }
        for (uint32_t b = M; b < n; b++)
            if (tdm_ps_acm_allowed_keys(&ps->acm, ka, world_key[rs->objs[b].index]))
                if ((rc = pair_push(&allowed, a, b)) != TDM_OK) goto fail;
    }
    if (allowed.n > UINT32_MAX) {
        rc = TDM_ERANGE;
        snprintf(err, errlen, "too many allowed pairs");
        goto fail;
    }
    tdm_scene_error serr;
    if ((rc = tdm_scene_create_solids(objs, (uint32_t)n, allowed.v, (uint32_t)allowed.n, solids, &rs->scene,
                                      &serr)) != TDM_OK) {
        snprintf(err, errlen, "making the scene failed: %s", serr.msg);
        goto fail;
    }
    rc = TDM_OK;
    *out = rs;
    rs = NULL;
    goto done;
fail_nomem:
    rc = TDM_ENOMEM;
fail:
    if (rc == TDM_ENOMEM && errlen && !err[0]) snprintf(err, errlen, "out of memory");
done:
    free(link_key);
    free(att_key);
    free(world_key);
    free(touch);
    free(link_names);
    free(link_order);
    free(allowed.v);
    free(att_link);
    free(att_frame);
    free(obj_frame);
    free(q0);
    free(links);
    free(objs);
    free(solids);
    tdm_robot_scene_destroy(rs);
    return rc;
}

int tdm_robot_scene_create_shared(const tdm_robot_elems *el, const tdm_planning_scene *ps, tdm_robot_scene **out,
                                  char *err, size_t errlen)
{
    return create_from(el, ps, 1, 0, NULL, out, err, errlen);
}

int tdm_robot_scene_create_limited(const tdm_robot_elems *el, const tdm_planning_scene *ps, uint64_t max_triangles,
                                   const char *limit_name, tdm_robot_scene **out, char *err, size_t errlen)
{
    return create_from(el, ps, 1, max_triangles, limit_name, out, err, errlen);
}

int tdm_robot_scene_create(const tdm_robot *r, const tdm_planning_scene *ps, tdm_robot_mesh_loader load,
                           void *ctx, double tolerance, tdm_robot_scene **out, char *err, size_t errlen)
{
    if (errlen) err[0] = 0;
    *out = NULL;
    if (!r || !ps) return TDM_EINVAL;
    if (r->n_collisions == 0) {
        snprintf(err, errlen, "%s: the robot has no collision element", r->urdf_path);
        return TDM_EEMPTY;
    }
    size_t n, n_att;
    int rc = count_objects(r, ps, &n, &n_att, err, errlen);
    if (rc != TDM_OK) return rc;
    tdm_robot_elems *el;
    if ((rc = tdm_robot_elems_create(r, load, ctx, tolerance, &el, err, errlen)) != TDM_OK) return rc;
    rc = create_from(el, ps, 0, 0, NULL, out, err, errlen); /* the world's trees its own: no shape cache */
    if (rc == TDM_OK) (*out)->own_elems = el; /* the elements' trees go with the scene */
    else tdm_robot_elems_destroy(el);
    return rc;
}

void tdm_robot_scene_destroy(tdm_robot_scene *rs)
{
    if (!rs) return;
    tdm_scene_destroy(rs->scene);
    if (rs->bvhs) /* the elements' trees are the scene's own unless borrowed; cached shapes are released */
        for (uint32_t i = rs->elems ? rs->n_elements : 0; i < rs->n_objects; i++) {
            if (rs->objs && rs->objs[i].cached) tdm_shape_cache_release(rs->elems->shapes, &rs->objs[i].prim,
                                                                        rs->elems->tolerance);
            else tdm_bvh_free(rs->bvhs[i]);
        }
    free(rs->bvhs);
    free(rs->objs);
    free(rs->kin_joints);
    free(rs->kin_elems);
    tdm_robot_elems_destroy(rs->own_elems);
    free(rs);
}

int tdm_robot_scene_poses(const tdm_robot_scene *rs, const double *q, size_t n_q, tdm_xform *link_world,
                          tdm_xform *poses)
{
    if (n_q != rs->kin.n_q) return TDM_EINVAL;
    for (size_t i = 0; i < n_q; i++)
        if (!isfinite(q[i])) return TDM_ENONFINITE;
    /* Movable ids are the kinematics' elements (robot elements, then attached shapes), so
       scene->movable order is their order. */
    tdm_kin_links(&rs->kin, q, link_world);
    tdm_kin_elems(&rs->kin, link_world, poses);
    return TDM_OK;
}

static int pair_cmp(const void *x, const void *y)
{
    const tdm_id_pair *a = x, *b = y;
    if (a->a != b->a) return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

int tdm_robot_scene_allowed(const tdm_robot_scene *rs, uint32_t a, uint32_t b)
{
    if (a >= rs->n_objects || b >= rs->n_objects || a == b) return 1;
    if (!rs->objs[a].movable && !rs->objs[b].movable) return 1;
    tdm_id_pair key = {a < b ? a : b, a < b ? b : a};
    return bsearch(&key, rs->scene->allowed, rs->scene->n_allowed, sizeof key, pair_cmp) != NULL;
}
