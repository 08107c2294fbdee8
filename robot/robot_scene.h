/* A robot in a planning scene as one tdm_scene (workpile/scene.h): the robot's
 * collision elements movable, the world's shapes fixed, and the pairs that are
 * never checked; and the map from a configuration to the movable objects' poses.
 *
 * Objects and ids. Collision element e of the robot (tdm_robot.collisions[e],
 * grouped by link in link order) is the movable object with id e; its pose for a
 * configuration is the element's world transform (robot/kinematics.h), so the
 * poses a query gives (scene->movable order: increasing id) begin with
 * tdm_robot_collision_world's array. The attached objects' shapes follow, ids
 * n_elements .. n_movable - 1: for each attached object in file order, its
 * primitives and then its meshes, each a movable object that keeps the pose it has
 * in its link's frame in the scene's robot state. Fixed objects follow, ids
 * n_movable, ...: for each world collision object in file order, its primitives,
 * its meshes and then its planes, each one object at its pose in the planning
 * frame. Element meshes:
 *   - box, cylinder, sphere, capsule, cone: geom/primitive.h's meshes (URDF cylinders and
 *     capsules are (radius, length), primitive.h's cylinder (height, radius): the
 *     named constructors convert); boxes exact, curved shapes tessellated to
 *     contain the true shape within `tolerance`;
 *   - mesh: the file at mesh_path, read by the caller's loader (robot/ reads no
 *     mesh formats: assimp lives in tools/), each vertex scaled per axis by the
 *     element's scale in double and rounded to float.
 * Attached and world shapes: MoveIt primitives likewise (cylinder (height,
 * radius)), inline meshes with their double vertices rounded to float. A world
 * plane (shape_msgs/Plane, which MoveIt checks as FCL's two-sided Plane: an object
 * collides when it meets the plane) is a square of two triangles in the plane,
 * centred on the point nearest the root link's origin, its half-side 1 m more than
 * the farthest any movable object can be from that origin with the prismatic joints
 * within their limits (a configuration that takes one over a metre past its limits
 * could meet the plane beyond the square); its corners are rounded to float like
 * any vertex (~2^-24 of their distance from the plane frame's origin).
 *
 * Frames. The root link sits at the scene's robot-state multi-DOF transform (its
 * only multi-DOF joint; identity if none). A world object's header frame is looked
 * up as MoveIt looks it up (a leading '/' dropped), in this order: a link places the
 * object at that link's pose in the scene's robot state (the state's joint positions,
 * 0 for active joints it does not name), where it stays (it is a fixed object, not
 * attached); an attached object's id, or the id of a world object before it in the
 * file, at that object's own frame (its header frame with its `pose` applied) in that
 * state, and ID/NAME at that object's subframe NAME (subframe_poses, in the object's
 * own frame; an ID of fewer than TDM_ROBOT_SCENE_FRAME_SLASHES '/': the first that
 * many of the frame's are tried, which bounds a hostile frame's cost); a frame of the
 * scene's fixed_frame_transforms at that frame's pose; the planning frame, named
 * `world` or as the SRDF's virtual joint of the root link names its parent_frame
 * (tdm_robot.planning_frame), or left absent or empty. Any other
 * name is an error naming the object and the frame, as MoveIt refuses an object in
 * an unknown frame: a misspelt frame never misplaces an obstacle silently. (`world`
 * is accepted whatever the SRDF says, unlike MoveIt, since most hand-written scenes
 * name the planning frame so.) An attached object's shapes are read in its header
 * frame likewise (the link it is attached to, another link, an attached object before
 * it or its subframe, a fixed frame or the planning frame; world objects are not
 * placed yet, as in MoveIt, which reads the robot state first) and put in its link's
 * frame with that state, as MoveIt attaches them; a link_name that names no link of
 * the robot is an error naming the object.
 *
 * Allowed (never checked) pairs: two elements of the same link; elements of links
 * a, b when the SRDF disabled (a, b) or tdm_ps_acm_allowed(acm, name(a), name(b));
 * an element of link a and a world shape of object o when
 * tdm_ps_acm_allowed(acm, name(a), o.id). An attached object's shapes (MoveIt's
 * rules for attached bodies): against an element of its link_name's link or of one
 * of its touch_links, never; against each other, and against the shapes of another
 * object attached to the same link, never; against anything else (an element,
 * another attached object, a world shape) unless tdm_ps_acm_allowed(acm, its id,
 * the other's link name or id). Nothing else: every other element pair and every
 * movable-fixed pair is checked (the scene never checks fixed pairs).
 *
 * Solids. Every primitive (a link's box, cylinder, sphere or capsule element, an
 * attached or world box, sphere, cylinder or cone) is a solid object of the scene
 * (tdm_scene_create_solids, with tdm_primitive_mesh's deviation as its margin),
 * as FCL's primitives are: a link wholly inside a world box, or a world object
 * wholly inside a link's primitive, collides though no triangles meet
 * (workpile/solid.h: the rule, why it never calls free what FCL calls colliding,
 * and its cost). Mesh against mesh (a link's mesh against a world mesh or another
 * link's mesh) stays surface-only, as in FCL. bool answers name the pair as for
 * any collision; in contacts mode a pair colliding by containment alone counts no
 * triangle pair, so a configuration can be colliding with contacts 0.
 *
 * Threads: a built tdm_robot_scene is only read; tdm_robot_scene_poses may run on
 * any number of threads at once, each with its own link_world scratch. */
#ifndef TDM_ROBOT_ROBOT_SCENE_H
#define TDM_ROBOT_ROBOT_SCENE_H

#include <stddef.h>
#include <stdint.h>

#include "../geom/bvh.h"
#include "../geom/kin.h"
#include "../geom/mesh.h"
#include "../workpile/scene.h"
#include "planning_scene.h"
#include "urdf.h"

/* Header frames OBJECT/NAME: the first this many '/' of a frame are tried as the end of an
 * object's id ("Frames" above). */
#define TDM_ROBOT_SCENE_FRAME_SLASHES 4

/* Reads the mesh file at `path` (an element's resolved mesh_path) into *out, a new
 * mesh the robot scene frees; returns 0 or a negative TDM_E* code with a message in
 * err (errlen > 0). Called once per mesh element, in element order, from the
 * thread that calls tdm_robot_scene_create; ctx is the caller's. */
typedef int (*tdm_robot_mesh_loader)(void *ctx, const char *path, tdm_mesh **out, char *err, size_t errlen);

/* What a scene object is, by id. */
typedef struct tdm_robot_scene_obj {
    int movable;        /* 1: a robot collision element or an attached object's shape; 0: a world shape */
    uint32_t index;     /* a robot element: its index in tdm_robot.collisions (== the id);
                           an attached shape: its object's index in tdm_planning_scene.attached;
                           fixed: the world object's index in tdm_planning_scene.objects */
    uint32_t shape;     /* attached or fixed: the shape's index in that object, primitives first then meshes */
    int cached;         /* attached or fixed: its tree is `prim`'s, held from the elements' shape cache
                           (tdm_robot_elems.shapes) rather than owned */
    tdm_primitive prim;
    int attached;       /* 1: an attached object's shape (movable) */
} tdm_robot_scene_obj;

typedef struct tdm_robot_scene {
    const tdm_robot *robot;    /* borrowed: must outlive this */
    tdm_scene *scene;          /* owned; borrows `bvhs` */
    uint32_t n_objects;        /* n_movable + world shapes; ids 0 .. n_objects - 1 */
    uint32_t n_elements;       /* == robot->n_collisions: ids 0 .. n_elements - 1 */
    uint32_t n_movable;        /* n_elements + attached shapes: movable ids 0 .. n_movable - 1, the poses of a
                                  configuration (tdm_robot_scene_poses) */
    tdm_bvh **bvhs;            /* by id, owned; the elements' (ids < n_elements) borrowed from `elems`, and
                                  the world primitives' held from its shape cache */
    struct tdm_robot_elems *own_elems;   /* tdm_robot_scene_create's: its element trees, freed with it */
    const struct tdm_robot_elems *elems; /* the element trees it was made from: borrowed from
                                  tdm_robot_scene_create_shared's caller (must outlive this), or
                                  own_elems */
    tdm_robot_scene_obj *objs; /* by id, owned */
    tdm_xform base;            /* the root link's transform */
    tdm_kin kin;               /* the robot's kinematics at `base` (geom/kin.h): what tdm_robot_scene_poses
                                  computes, and what the scheduler's tdm_sched_run_configs runs on the
                                  device; its arrays are the two below */
    tdm_kin_joint *kin_joints; /* owned */
    tdm_kin_elem *kin_elems;   /* owned */
} tdm_robot_scene;

/* The objects robot r's scene in ps would have (its elements, the attached and the
 * world shapes), counted from the parsed scene without building anything: what a
 * caller with a limit checks first. */
size_t tdm_robot_scene_count(const tdm_robot *r, const tdm_planning_scene *ps);

/* Builds the scene for robot r in planning scene ps (both only read; ps is not
 * kept, r is borrowed for the result's lifetime). `load` reads mesh files and may
 * be NULL when the robot has no mesh element; `tolerance` is the tessellation
 * deviation for curved shapes (TDM_PRIMITIVE_TOLERANCE usually). On success *out
 * is a new scene freed with tdm_robot_scene_destroy. On failure returns a negative
 * TDM_E* code (TDM_EEMPTY: the robot has no collision element; the loader's,
 * tdm_primitive_mesh's, tdm_mesh_create's, tdm_bvh_build's or tdm_scene_create's
 * code otherwise), writes one line into err naming the element (URDF file and
 * line, or the world object's id and shape) and sets *out to NULL. */
int tdm_robot_scene_create(const tdm_robot *r, const tdm_planning_scene *ps, tdm_robot_mesh_loader load,
                           void *ctx, double tolerance, tdm_robot_scene **out, char *err, size_t errlen);
/* A robot's collision elements as trees (and their true shapes, for primitives),
 * built once and shared by every robot scene made from them with
 * tdm_robot_scene_create_shared: a scene then builds only its world's trees, and
 * the element trees, one set per robot, stay the same objects from scene to
 * scene (a scheduler that keeps them resident keeps them once). Elements are
 * built as tdm_robot_scene_create builds them, with the same errors; `tolerance`
 * is used for the world's curved shapes of the scenes made from them too. Only
 * read once built: any number of threads may make scenes from one at once. */
typedef struct tdm_robot_elems {
    const tdm_robot *robot;   /* borrowed: must outlive this */
    uint32_t n;               /* robot->n_collisions */
    double tolerance;
    tdm_bvh **bvhs;           /* by element: owned by the first element of its shape (owner) */
    uint32_t *owner;          /* by element: the element whose tree it uses, the first with the same
                                 shape (a mesh of the same path and scale, or the same primitive);
                                 itself when its tree is its own */
    tdm_scene_solid *solids;  /* by element: a primitive's true shape, all-zero for a mesh */
    struct tdm_shape_cache *shapes; /* owned: the world primitives' trees of the scenes made from this
                                       (robot/shape_cache.h), each built once while a scene holds it */
} tdm_robot_elems;

/* Builds robot r's element trees (load and tolerance as for tdm_robot_scene_create):
 * one tree per distinct shape, elements of the same mesh path and scale, or of the
 * same primitive, sharing it (a URDF may name one mesh in thousands of elements).
 * On success *out is freed with tdm_robot_elems_destroy, after every scene made
 * from it; on failure a negative TDM_E* code (TDM_EEMPTY: no collision element)
 * with one line in err naming the element. */
int tdm_robot_elems_create(const tdm_robot *r, tdm_robot_mesh_loader load, void *ctx, double tolerance,
                           tdm_robot_elems **out, char *err, size_t errlen);
/* tdm_robot_elems_create with a budget: TDM_ERANGE, and nothing made, when the
 * distinct trees have more than max_triangles triangles together (0: no limit;
 * meshes as loaded and scaled, primitives as tessellated), naming the element that
 * crossed it (and the limit as limit_name, when not NULL: ", over NAME"); counted
 * as they are built, so that a refused robot costs at most the budget and one
 * shape. */
int tdm_robot_elems_create_limited(const tdm_robot *r, tdm_robot_mesh_loader load, void *ctx, double tolerance,
                                   uint64_t max_triangles, const char *limit_name, tdm_robot_elems **out, char *err,
                                   size_t errlen);
/* The first element of r up to e with the same shape as e (a mesh of the same
 * path and scale, or the same primitive): the element whose tree e shares
 * (tdm_robot_elems.owner), e itself if none. O(e): a robot has at most
 * TDM_ROBOT_MAX_COLLISIONS elements. */
uint32_t tdm_robot_elem_first_same(const tdm_robot *r, uint32_t e);
/* owner[e] = tdm_robot_elem_first_same(r, e) for every element at once (owner: room for
 * r->n_collisions), in O(E log E) by sorting them by shape instead of O(E^2). 0 or TDM_ENOMEM. */
int tdm_robot_elem_owners(const tdm_robot *r, uint32_t *owner);
void tdm_robot_elems_destroy(tdm_robot_elems *el);
/* tdm_robot_scene_create for el's robot, its element trees borrowed from el (which
 * must outlive the scene), its world primitives' trees held from el's shape cache:
 * the same scene, answers and errors, less the elements' building and the building
 * of any primitive shape a scene of el holds already. */
int tdm_robot_scene_create_shared(const tdm_robot_elems *el, const tdm_planning_scene *ps, tdm_robot_scene **out,
                                  char *err, size_t errlen);
/* tdm_robot_scene_create_shared with a budget: TDM_ERANGE, and nothing made, when
 * the attached and world shapes together have more than max_triangles triangles
 * (0: no limit; curved primitives counted as tessellated, every shape counted,
 * shared or not). Counted as the shapes are built, so that a refused scene costs
 * at most the budget and one shape (the largest a primitive can be is
 * geom/primitive.h's cap, ~167 000 triangles; an inline mesh is bounded by the
 * YAML's size): what a server that builds scenes for its clients uses. limit_name
 * (may be NULL) names the limit in the message (", over NAME"). */
int tdm_robot_scene_create_limited(const tdm_robot_elems *el, const tdm_planning_scene *ps, uint64_t max_triangles,
                                   const char *limit_name, tdm_robot_scene **out, char *err, size_t errlen);

/* Frees rs and everything it owns (not borrowed element trees); NULL is ignored.
 * Its trees must no longer be resident in a scheduler (tdm_sched_mesh_remove first). */
void tdm_robot_scene_destroy(tdm_robot_scene *rs);

/* The movable objects' poses for configuration q[0..n_q) (the active joints'
 * values in tdm_robot.active order): poses[0..n_movable), in scene->movable
 * order, ready for tdm_sched_query.poses. link_world is scratch for
 * robot->n_links transforms. Returns 0, TDM_EINVAL (n_q is not
 * robot->n_active) or TDM_ENONFINITE (a value is NaN or infinite). */
int tdm_robot_scene_poses(const tdm_robot_scene *rs, const double *q, size_t n_q, tdm_xform *link_world,
                          tdm_xform *poses);

/* 1 when the pair of object ids (a, b) is never checked (allowed as above, or both
 * fixed), 0 when it is checked; ids out of range are 1. O(log allowed). */
int tdm_robot_scene_allowed(const tdm_robot_scene *rs, uint32_t a, uint32_t b);

#endif
