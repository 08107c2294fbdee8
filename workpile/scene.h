/* Scenes: meshes placed as objects, some fixed at a pose and some movable (posed
 * per query), and the object pairs a query checks.
 *
 * Checked pairs are every movable object against every fixed object and every
 * other movable object, minus the allowed-collision list; fixed objects are never
 * checked against each other (proto/README.md, "Scenes"). The list is computed
 * once here, so that expanding a query into tasks is a plain loop.
 *
 * Solid objects. An object whose shape is a primitive (a world box, a URDF
 * cylinder...) may be declared solid (tdm_scene_create_solids): a checked pair
 * with a solid partner also collides when the other object lies inside it
 * without any triangles meeting, as FCL's primitives do (workpile/solid.h has
 * the rule, its cost and why it is exact). Every other pair is surface-only.
 *
 * A scene borrows its objects' trees: they must outlive it. Nothing in a scene
 * changes after tdm_scene_create, so any number of threads may read one. */
#ifndef TDM_WORKPILE_SCENE_H
#define TDM_WORKPILE_SCENE_H

#include "../geom/bvh.h"
#include "../geom/cull.h"
#include "../geom/primitive.h"

/* Most objects a scene may hold. The checked-pair list grows with the square of
 * the object count; callers enforce their own, smaller limit (the daemon's
 * max_objects). */
#define TDM_SCENE_MAX_OBJECTS 16384u

typedef struct tdm_scene_obj {
    uint32_t id;        /* unique within the scene */
    const tdm_bvh *bvh; /* borrowed: must outlive the scene */
    int movable;        /* 1: posed per query; 0: fixed at `pose` */
    tdm_xform pose;     /* fixed objects: object frame -> world; ignored for movable ones */
} tdm_scene_obj;

/* What makes an object solid: its true shape, where that shape sits in the
 * object's frame, and how far the object's mesh may lie outside the shape. */
typedef struct tdm_scene_solid {
    tdm_primitive shape; /* type 0 (all-zero struct): the object is not solid */
    tdm_xform frame;     /* the shape's frame -> the object's frame (identity for a mesh made by
                            tdm_primitive_mesh in the object's frame) */
    double margin;       /* m, finite, >= 0: the largest distance from a point of the object's mesh
                            to the true shape (tdm_primitive_mesh's deviation: 0 for a box whose
                            half-edges are floats) */
} tdm_scene_solid;

struct tdm_solids; /* solid.h: the solid objects and their partners' component representatives */

/* A pair of object ids (the allowed-collision list). */
typedef struct tdm_id_pair { uint32_t a, b; } tdm_id_pair;

/* A checked pair, as indices into tdm_scene.objects. */
typedef struct tdm_scene_check {
    uint32_t lo, hi; /* lo < hi, so objects[lo].id < objects[hi].id */
    uint32_t a, b;   /* the task's A and B: the fixed object is A when there is one
                        (its vertices are then never moved, so a fixed object at the
                        identity gives bit-for-bit the answers of `tandem check`),
                        otherwise A = lo */
    uint32_t a_at_origin; /* 1: A is fixed at exactly the identity pose, so B's pose
                             in A's frame is B's world pose (no product to form) */
} tdm_scene_check;

/* Where tdm_scene_create found a problem. `field` is static text. */
typedef struct tdm_scene_error {
    const char *field; /* "objects" or "allowed" */
    int64_t index;     /* the element's index in the caller's array, or -1 */
    char msg[200];
} tdm_scene_error;

typedef struct tdm_scene {
    uint32_t n_objects;
    tdm_scene_obj *objects; /* sorted by increasing id, owned */
    uint32_t *slot;            /* objects[i] movable: its index in `movable`; fixed: UINT32_MAX */
    uint32_t n_movable;
    uint32_t *movable;         /* movable ids, increasing: the order of a query's poses */
    uint32_t n_allowed;
    tdm_id_pair *allowed;  /* distinct pairs, a <= b, sorted */
    uint32_t n_checks;
    tdm_scene_check *checks;   /* sorted by (objects[lo].id, objects[hi].id) */
    /* Culling (tdm_scene_cull): each object's bounding sphere (every vertex of its
     * mesh, a solid's reach added), laid out for the inner loop. A query's centre
     * list holds the movable objects' world centres by slot, then the fixed objects'
     * (in index order), each as x, y, z and its L1 norm; check k compares entries
     * cull_pair[k][0] and [1] against the radius sum cull_rsum[k]. */
    double (*slot_centre)[3];  /* owned: by slot, in the object's frame */
    uint32_t n_fixed;
    double (*fixed_centre)[4]; /* owned: world x, y, z, L1 norm */
    uint32_t (*cull_pair)[2];  /* owned, by check */
    double *cull_rsum;         /* owned, by check */
    struct tdm_solids *solids; /* owned; NULL when no object is solid (then no pair pays anything) */
    uint64_t serial;           /* this scene's number in the process, never given to another (from 1): what
                                  a GPU engine keys the scene's resident program by (gpu.h) */
    uint64_t cost_hint;        /* learned, not part of the scene's meaning: box and triangle tests per task
                                  its recent jobs cost (the pooler's, __atomic; 0: not known yet), so that
                                  jobs on a heavy scene skip the latency lane (workpile/pooler.h) */
} tdm_scene;

/* Copies the objects and the allowed list into a new scene and computes the
 * checked pairs. Errors (nothing is created; *err says where):
 *   TDM_EINVAL  an object without a tree, or objects == NULL with n_objects > 0
 *   TDM_ERANGE  more than TDM_SCENE_MAX_OBJECTS objects           (field "objects")
 *   TDM_EINDEX  a duplicate object id (index: the later one)      (field "objects")
 *               an allowed pair naming an unknown id              (field "allowed")
 *   TDM_EEMPTY  no movable object                                 (field "objects", index -1)
 *   TDM_ENOMEM
 * Allowed pairs may come in either order and repeat. The caller frees the scene
 * with tdm_scene_destroy; the trees stay borrowed. */
int tdm_scene_create(const tdm_scene_obj *objects, uint32_t n_objects, const tdm_id_pair *allowed,
                     uint32_t n_allowed, tdm_scene **out, tdm_scene_error *err);
/* The same, with solids[i] saying whether objects[i] is solid (solids NULL: none
 * is). A solid object's mesh must contain its true shape (as tdm_primitive_mesh's
 * do) and be closed: the rule of solid.h relies on both. At creation every
 * object checked against a solid one has its mesh's connected components found
 * (O(T log T) for T triangles; solid.h). Further errors (field "solids", index
 * the object's): TDM_EINVAL for an invalid shape (tdm_primitive_check), a
 * negative or non-finite margin or a non-finite frame. */
int tdm_scene_create_solids(const tdm_scene_obj *objects, uint32_t n_objects, const tdm_id_pair *allowed,
                            uint32_t n_allowed, const tdm_scene_solid *solids, tdm_scene **out,
                            tdm_scene_error *err);
void tdm_scene_destroy(tdm_scene *s);

/* Culling: a check whose two bounding spheres are apart by more than this much of
 * the pair's extent from the origin (both radii plus the L1 norms of both centres)
 * cannot collide; far more than the rounding of the transforms and float coordinates
 * the engines test, so dropping it changes no answer (workpile/sched.c, "Culling"). */
#define TDM_SCENE_CULL_MARGIN TDM_CULL_MARGIN

/* Writes the fixed objects' part of a centre list of s (n_movable + n_fixed entries);
 * it is the same for every query, so once per list does. */
void tdm_scene_cull_fixed(const tdm_scene *s, double (*centres)[4]);
/* One query's culling: its movable objects at poses (scene->movable order); centres
 * a centre list whose fixed part tdm_scene_cull_fixed wrote. Writes which checks may
 * collide as bits (check k: bit k % 64 of bits[k / 64]; (n_checks + 63) / 64 words)
 * and returns how many. O(n_movable + n_checks). */
uint32_t tdm_scene_cull(const tdm_scene *s, const tdm_xform *poses, double (*centres)[4], uint64_t *bits);

/* Index into s->objects of the object with this id, or -1. O(log n). */
int64_t tdm_scene_find(const tdm_scene *s, uint32_t id);

#endif
