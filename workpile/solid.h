/* Solid containment: objects whose shape is a primitive are solids, as FCL's
 * primitives are, while the engines only test triangles against triangles.
 *
 * The rule. A checked pair (A, B) with B solid whose triangles do not meet
 * (the engine called it free) collides when a representative vertex of a
 * connected component of A's mesh lies inside B's true shape grown by B's
 * `reach`; when both are solid, the same with A and B swapped as well.
 * reach = the margin of B's mesh (tdm_scene_solid.margin: the tessellation's
 * deviation, 0.1 mm by default, 0 for a box) + 1e-6 m + 2^-20 of B's size, for
 * rounding (below).
 *
 * Why it is exact in the direction that matters. B's mesh is closed and contains
 * B's true shape; every point inside it is within `margin` of the shape. Say FCL
 * calls the pair colliding: some triangle t of A meets B's solid shape (FCL tests
 * each triangle of a mesh against the solid primitive: its
 * MeshShapeCollisionTraversalNode leaf test calls the solver's
 * shapeTriangleIntersect, a convex-convex GJK test, fcl
 * include/fcl/narrowphase/detail/traversal/collision/mesh_shape_collision_traversal_node-inl.h),
 * or, for two primitives, the two solids meet. If no triangles of the two meshes
 * meet, t (which touches the inside of B's mesh) lies wholly inside B's mesh, and
 * so does the whole connected component of A's mesh that holds t (a connected
 * surface that crosses no triangle of a closed surface stays on one side of it):
 * its representative vertex is inside B's mesh, so within `margin` of B's shape,
 * and the rule calls the pair colliding. Two primitives whose solids meet but
 * whose meshes do not cross are nested one in the other, hence both directions.
 * The rule never calls free what the engines call colliding; it can only add
 * "colliding" for a vertex within reach of B's shape but outside it: at most
 * `reach` from a curved primitive (or ~1 um from a box), the direction issue 13
 * allows. Mesh against mesh stays surface-only, as in FCL, whose
 * MeshCollisionTraversalNode leaf test is a triangle-triangle intersection.
 *
 * Components. A mesh's triangles are joined when they share a vertex position
 * (exactly equal floats: the trees keep no indices, and files such as STL repeat
 * vertices per triangle); each class keeps its first triangle's first vertex.
 * Components that only touch geometrically without sharing a vertex count as
 * several: more representatives, never a wrong answer. Found once per scene for
 * each object that has a solid partner, O(T log T) for T triangles.
 *
 * Rounding. The representative's position in B's frame is computed in double
 * from float vertices and double poses (relative error ~2^-52 of the coordinates'
 * magnitude), and tdm_primitive_contains_grown in double: 1e-6 m covers both for
 * coordinates up to ~10^9 m, 2^-20 of the size covers the test on large shapes.
 *
 * Cost. A scene with no solid object has solids == NULL: the scheduler's fold
 * tests that pointer once per query and nothing else. With solids, each checked
 * pair that has a solid partner and was found free costs first a sphere test:
 * the ball around the other object's representatives (its centre moved to the
 * world, one 3x3 product) against the ball around the solid grown by its reach;
 * only a pair whose balls meet pays, per representative, one transform and an
 * O(1) test. A pair found colliding and every pair after a query's first
 * colliding one cost nothing. (Without the sphere test, Panda bool queries on an
 * MBM scene were ~30 % slower than surface-only; with it: bench/results/
 * robot_exactness.md.)
 *
 * Answers. bool: the pair collides, and is named when it is the query's first
 * colliding pair in checked-pair order. contacts: the pair collides with no
 * triangle pair of its own, so a query can be colliding with contacts == 0 (or
 * with only other pairs' triangle pairs counted); no pair is listed for it.
 *
 * Threads: built once with its scene, then only read. */
#ifndef TDM_WORKPILE_SOLID_H
#define TDM_WORKPILE_SOLID_H

#include "../geom/bvh.h"
#include "../geom/primitive.h"
#include "../geom/solid.h"
#include "scene.h"

/* Rounding slack added to every solid's margin (see above). */
#define TDM_SOLID_SLACK 1e-6          /* m */
#define TDM_SOLID_SLACK_RELATIVE 0x1p-20 /* of the shape's size (the sum of its dimensions) */


struct tdm_solids {
    uint8_t *check;         /* by check index: TDM_SOLID_* bits, 0 for a pair with no solid partner */
    tdm_solid_obj *objs;    /* by object index (s->objects order) */
    tdm_dvec3 *reps;        /* in each object's frame */
    uint64_t n_reps;
};

/* Builds s->solids from solids[i] (objects[i]'s, in s->objects order; s's
 * objects and checks are made). Sets s->solids to NULL when no object is
 * solid. 0 or TDM_ENOMEM. Shapes, frames and margins are checked by the
 * caller (tdm_scene_create_solids). */
int tdm__solids_build(tdm_scene *s, const tdm_scene_solid *solids);
void tdm__solids_free(struct tdm_solids *v);

/* One representative vertex per connected component of b's triangles (see
 * above), in b's frame, in order of each component's first triangle (leaf
 * order). *reps is a new array the caller frees, *n its length (0 and NULL for
 * no triangles). 0 or TDM_ENOMEM. */
int tdm_bvh_component_reps(const tdm_bvh *b, tdm_dvec3 **reps, uint32_t *n);

/* The rule for query poses `poses` (scene->movable order) and check k, whose
 * triangles were found not to meet: 1 if the pair collides by containment. */
static inline int tdm_solids_hit(const tdm_scene *s, const tdm_xform *poses, uint32_t k)
{
    const struct tdm_solids *v = s->solids;
    unsigned what = v->check[k];
    if (!what) return 0;
    const tdm_scene_check *c = &s->checks[k];
    const tdm_scene_obj *a = &s->objects[c->a], *b = &s->objects[c->b];
    const tdm_xform *xa = a->movable ? &poses[s->slot[c->a]] : &a->pose;
    const tdm_xform *xb = b->movable ? &poses[s->slot[c->b]] : &b->pose;
    return ((what & TDM_SOLID_A_IN_B) && tdm_solid_holds(&v->objs[c->b], xb, &v->objs[c->a], v->reps, xa)) ||
           ((what & TDM_SOLID_B_IN_A) && tdm_solid_holds(&v->objs[c->a], xa, &v->objs[c->b], v->reps, xb));
}

#endif
