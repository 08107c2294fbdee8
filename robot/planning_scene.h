/* MoveIt planning scenes and motion-planning requests, read from YAML into plain C.
 *
 * The files are moveit_msgs/PlanningScene and moveit_msgs/MotionPlanRequest
 * written as YAML, as MotionBenchMaker (MBM) saves them and as ROS tools dump
 * messages. Both spellings of a vector are read: a flow list in the field order
 * (`position: [x, y, z]`, `orientation: [x, y, z, w]`, MBM) or a mapping
 * (`position: {x: .., y: .., z: ..}`, ROS). Primitive types are read as names
 * (`box`, MBM) or as shape_msgs/SolidPrimitive numbers (1 box, 2 sphere,
 * 3 cylinder, 4 cone). Keys this reader does not know are skipped; a key it reads may
 * appear once; a null value (`key:`, `~`) stands for an empty list or mapping.
 *
 * Nothing here knows the robot: joint names, ACM names and frame ids are kept as
 * strings for the caller to match against its URDF (robot/urdf.h). Frames are not
 * resolved either: an object's header.frame_id is kept, and so are the scene's
 * `fixed_frame_transforms` (named frames placed in the planning frame), for
 * robot/robot_scene.h to place objects in.
 *
 * What is read (anything else in the files is ignored):
 *   scene:   name, robot_model_name,
 *            world.collision_objects[]: id, header.frame_id, pose, operation,
 *              primitives[] (type, dimensions), primitive_poses[],
 *              meshes[] (vertices, triangles), mesh_poses[],
 *              planes[] (coef: a, b, c, d), plane_poses[],
 *              subframe_names[], subframe_poses[] (in the object's own frame),
 *            allowed_collision_matrix: entry_names, entry_values,
 *              default_entry_names, default_entry_values,
 *            robot_state.joint_state (name, position),
 *            robot_state.multi_dof_joint_state (joint_names, transforms),
 *            robot_state.attached_collision_objects[]: link_name, object (a
 *              collision object as above), touch_links,
 *            link_padding[] and link_scale[] (link_name, padding or scale),
 *              checked as below,
 *            fixed_frame_transforms[]: child_frame_id, transform (translation,
 *              rotation; the identity when absent): the child frame's pose in the planning frame, as
 *              MoveIt's Transforms::setTransforms takes them (header.frame_id,
 *              which MoveIt requires to be the planning frame, is not read).
 *   request: group_name, start_state (as robot_state above),
 *            goal_constraints[0].joint_constraints[] (joint_name, position).
 *
 * Refused, each with an error naming the element, because ignoring it would drop
 * an obstacle or change the problem silently:
 *   - prism (5) primitives (a SolidPrimitive with a polygon, newer than the
 *     MoveIt scenes this reads): a tessellation that contains one is not written;
 *   - an `operation` other than ADD (0, or absent): the file is read as a whole
 *     scene, so there is nothing to remove, append to or move;
 *   - a `link_padding` other than 0 or a `link_scale` other than 1 (MoveIt would
 *     grow or scale that link; the zeros and ones MoveIt writes for every link
 *     when it dumps a scene are accepted);
 *   - planes in an attached object, an octomap with data, and in a request's
 *     start_state non-empty `attached_collision_objects` (a scene's are read: see
 *     below);
 *   - a goal whose first constraint set has position, orientation or visibility
 *     constraints, or no joint constraint (Cartesian goals);
 *   - YAML aliases (`*name`) in any element that is read: they would let a small
 *     file stand for a huge scene;
 *   - an element nested deeper than TDM_PS_MAX_DEPTH, even in skipped keys.
 * `is_diff` is ignored: a file is always read as a complete scene. Goal
 * constraint sets after the first, joint tolerances and colours are
 * ignored.
 *
 * Conventions kept from MoveIt:
 *   - dimensions: box [x, y, z] full edge lengths; sphere [radius]; cylinder
 *     [height, radius], axis z, centred on its pose. Zero is allowed (a flat box),
 *     negative or non-finite is an error.
 *   - poses: a collision object's `pose` (newer MoveIt) places the object in its
 *     header frame and its primitive and mesh poses are relative to it; without
 *     one (MBM) they are in the header frame directly. The reader composes them:
 *     tdm_ps_primitive.pose and tdm_ps_mesh.pose are always in the header frame.
 *   - quaternions are normalised; one whose norm is not within
 *     TDM_QUAT_UNIT_TOLERANCE of 1 is an error (geom/vec.h; MoveIt would take an
 *     all-zero quaternion as the identity, this reader refuses it).
 *   - attached objects (moveit_msgs/AttachedCollisionObject): the object moves
 *     with link `link_name`; its shapes' poses are read as a world object's (in
 *     its header frame, its `pose` applied), and robot/robot_scene.h puts them in
 *     the link's frame. Its id is unique among attached objects (a world object
 *     may have the same id, as MoveIt allows in a complete scene). An attached
 *     object without shapes (MoveIt's "attach the world object of this id", a
 *     diff) is refused; detach_posture and weight are ignored.
 *   - the ACM: `entry_values[i][j]` true means the pair (entry_names[i],
 *     entry_names[j]) is never checked, false that it is checked even if a default
 *     says otherwise; the matrix must be square and symmetric (MoveIt writes it so;
 *     an asymmetric one has no single meaning) and its diagonal is ignored, as
 *     MoveIt ignores it. tdm_ps_acm_allowed() decides a pair as current MoveIt
 *     does (moveit/moveit#2936: an entry wins over the defaults).
 *
 * Errors: every reader returns 0 or a negative TDM_E* code (geom/base.h) and, on
 * failure, returns nothing (*out = NULL) and writes into err one line naming the
 * file, the line (1-based) where the element or its key starts, and the element's
 * YAML path, e.g.
 *   scene.yaml:42: world.collision_objects[3].primitives[0].dimensions: a box needs 3 dimensions [x, y, z], got 2
 * or, for YAML libyaml cannot parse, FILE:LINE:COLUMN: malformed YAML: (libyaml's words).
 * Codes: TDM_EIO (cannot open or read), TDM_EFORMAT (malformed YAML, wrong kind of
 * node, missing field, unknown or refused type, mismatched lengths, duplicate id
 * or name, asymmetric ACM, YAML alias), TDM_ENONFINITE (NaN or Inf), TDM_ERANGE
 * (negative dimension, quaternion not unit, a limit below exceeded), TDM_EINDEX (a mesh
 * triangle names a vertex past the end), TDM_EEMPTY (an object without shapes, a
 * mesh without triangles), TDM_ENOMEM.
 *
 * Threads: the readers share no state; any number may run at once. A result is
 * never changed after it is returned, so any number of threads may read it. */
#ifndef TDM_ROBOT_PLANNING_SCENE_H
#define TDM_ROBOT_PLANNING_SCENE_H

#include "../geom/vec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits, each an error (TDM_ERANGE, naming the element) when exceeded. The file
 * is streamed through libyaml's event parser, so memory grows with what is kept,
 * not with the YAML's node count; the file limit bounds the rest. */
#define TDM_PS_MAX_FILE_BYTES ((size_t)64 << 20)  /* bytes of YAML in one file */
#define TDM_PS_MAX_OBJECTS 8192u                  /* world collision objects; attached objects */
#define TDM_PS_MAX_SHAPES 65536u                  /* primitives and meshes in one scene, all objects */
#define TDM_PS_MAX_ACM_ENTRIES 4096u              /* ACM names (the matrix is their square) and default names */
#define TDM_PS_MAX_JOINTS 4096u                   /* names in a joint state, multi-DOF joints, goal constraints */
#define TDM_PS_MAX_NAME 1024u                     /* bytes in an id, a name or a frame id */
#define TDM_PS_MAX_MESH_VERTICES (16u << 20)      /* vertices in one mesh (as tdm_mesh_limits) */
#define TDM_PS_MAX_MESH_TRIANGLES (16u << 20)     /* triangles in one mesh */
#define TDM_PS_MAX_DEPTH 64u                      /* levels of lists and mappings in an element skipped */

/* shape_msgs/SolidPrimitive's numbers. */
typedef enum tdm_ps_primitive_type {
    TDM_PS_BOX = 1,
    TDM_PS_SPHERE = 2,
    TDM_PS_CYLINDER = 3,
    TDM_PS_CONE = 4
} tdm_ps_primitive_type;

typedef struct tdm_ps_primitive {
    tdm_ps_primitive_type type;
    int n_dims;     /* 3 box, 1 sphere, 2 cylinder and cone */
    double dims[3]; /* box: x, y, z full edge lengths; sphere: radius; cylinder, cone: height, radius */
    tdm_xform pose; /* shape frame -> the object's header frame (object pose applied) */
} tdm_ps_primitive;

/* A triangle mesh given inline (shape_msgs/Mesh), in double as read; validated:
 * every coordinate finite, every index < n_verts, at least one triangle. */
typedef struct tdm_ps_mesh {
    uint32_t n_verts, n_tris;
    double *verts;  /* 3 n_verts, owned */
    uint32_t *tris; /* 3 n_tris, owned */
    tdm_xform pose; /* mesh frame -> the object's header frame (object pose applied) */
} tdm_ps_mesh;

/* shape_msgs/Plane, in its pose's frame: the points p with a p.x + b p.y + c p.z = d,
 * (a, b, c) not zero (not normalised here). That is where MoveIt puts it, not where
 * the message's comment does (a x + b y + c z + d = 0): MoveIt hands the four
 * numbers to FCL's Plane, whose plane is n . x = d, and RViz draws it there too.
 * MoveIt checks it as FCL's two-sided Plane: an object collides with it when it
 * meets the plane itself (either side is free). */
typedef struct tdm_ps_plane {
    double coef[4];
    tdm_xform pose; /* plane frame -> the object's header frame (object pose applied) */
} tdm_ps_plane;

typedef struct tdm_ps_object {
    char *id;       /* owned, unique in the scene, not empty */
    char *frame_id; /* header.frame_id, owned; NULL when absent or empty (the planning frame) */
    int has_pose;   /* 1: the object had a `pose` */
    tdm_xform pose; /* that pose, identity without one; already applied to the shapes' poses */
    uint32_t n_primitives;
    tdm_ps_primitive *primitives; /* owned, in the file's order */
    uint32_t n_meshes;
    tdm_ps_mesh *meshes; /* owned, in the file's order */
    uint32_t n_planes;
    tdm_ps_plane *planes; /* owned, in the file's order (world objects only) */
    /* Named subframes (subframe_names, subframe_poses): frame OBJECT_ID/NAME is the object's own
     * frame (its header frame, its pose applied) times subframe_poses[k]. Names not empty,
     * distinct; subframes_by_name: their indices in name order (tdm_ps_name_find). Owned. */
    uint32_t n_subframes;
    char **subframe_names;
    tdm_xform *subframe_poses;
    uint32_t *subframes_by_name;
} tdm_ps_object;

/* moveit_msgs/AttachedCollisionObject. */
typedef struct tdm_ps_attached {
    char *link_name;      /* owned, not empty: the link it moves with */
    tdm_ps_object object; /* id unique among the scene's attached objects */
    uint32_t n_touch;
    char **touch_links;   /* owned: links allowed to touch it besides link_name (not checked against the robot) */
} tdm_ps_attached;

/* moveit_msgs/RobotState: joint values and the multi-DOF (virtual) joints' transforms. */
typedef struct tdm_ps_robot_state {
    uint32_t n_joints;
    char **joint_names; /* owned, distinct */
    double *positions;  /* n_joints, owned, finite */
    uint32_t n_multi_dof;
    char **multi_dof_names; /* owned, distinct */
    tdm_xform *multi_dof;   /* n_multi_dof: joint child frame -> parent frame, owned */
} tdm_ps_robot_state;

/* moveit_msgs/AllowedCollisionMatrix. */
typedef struct tdm_ps_acm {
    uint32_t n;       /* entry names */
    char **names;     /* owned, distinct */
    uint8_t *allowed; /* n * n, row-major, symmetric, owned: 1 = never checked, 0 = checked; diagonal 0 */
    uint32_t n_defaults;
    char **default_names;     /* owned, distinct */
    uint8_t *default_allowed; /* n_defaults, owned */
    uint32_t *by_name;        /* n, owned: the entries' indices in name order (strcmp), for lookups */
    uint32_t *defaults_by_name; /* n_defaults, owned: likewise for the default names */
} tdm_ps_acm;

/* A name's place in an ACM, found once (tdm_ps_acm_key_of, O(log n)) so that each pair
 * it is in is decided in O(1) (tdm_ps_acm_allowed_keys): its entry and its default, -1
 * when it has none. */
typedef struct tdm_ps_acm_key {
    int32_t entry, def;
} tdm_ps_acm_key;

typedef struct tdm_planning_scene {
    char *name;             /* owned, "" when absent */
    char *robot_model_name; /* owned, "" when absent */
    uint32_t n_objects;
    tdm_ps_object *objects; /* owned, in the file's order */
    tdm_ps_acm acm;
    tdm_ps_robot_state robot_state;
    uint32_t n_attached;
    tdm_ps_attached *attached; /* robot_state.attached_collision_objects, owned, in the file's order */
    uint32_t n_frames;
    char **frame_names;        /* fixed_frame_transforms' child_frame_id, owned, distinct, not empty */
    tdm_xform *frames;         /* n_frames, owned: each frame's pose in the planning frame */
    uint32_t *frames_by_name;  /* n_frames, owned: their indices in name order (lookups) */
} tdm_planning_scene;

typedef struct tdm_motion_request {
    char *group_name;         /* owned, "" when absent */
    tdm_ps_robot_state start; /* start_state; empty when absent */
    uint32_t n_goal;          /* joint constraints of goal_constraints[0], at least 1 */
    char **goal_names;        /* owned, distinct */
    double *goal_positions;   /* n_goal, owned, finite */
} tdm_motion_request;

/* Reads the planning scene in the YAML file at `path` (at most
 * TDM_PS_MAX_FILE_BYTES). On success *out is a new scene that the caller frees
 * with tdm_planning_scene_free; on failure *out is NULL and err (if errlen > 0)
 * says what and where, as described at the top. */
int tdm_planning_scene_read(const char *path, tdm_planning_scene **out, char *err, size_t errlen);
/* The same from `len` bytes of YAML in memory (borrowed for the call); `name`
 * stands for the file in messages. */
int tdm_planning_scene_parse(const char *yaml, size_t len, const char *name, tdm_planning_scene **out,
                             char *err, size_t errlen);
/* Frees the scene and everything it owns; NULL is allowed. */
void tdm_planning_scene_free(tdm_planning_scene *s);

/* Reads a motion-planning request, as tdm_planning_scene_read reads a scene. */
int tdm_motion_request_read(const char *path, tdm_motion_request **out, char *err, size_t errlen);
int tdm_motion_request_parse(const char *yaml, size_t len, const char *name, tdm_motion_request **out,
                             char *err, size_t errlen);
void tdm_motion_request_free(tdm_motion_request *r);

/* Is the pair (a, b) never checked? As MoveIt decides: the matrix entry for the
 * pair if both are distinct entry names; otherwise the default of the one name
 * that has one, or, when both have one, allowed only if both defaults allow;
 * otherwise 0 (checked). Names are compared exactly. O(log n) in the names. */
int tdm_ps_acm_allowed(const tdm_ps_acm *acm, const char *a, const char *b);
tdm_ps_acm_key tdm_ps_acm_key_of(const tdm_ps_acm *acm, const char *name);
/* tdm_ps_acm_allowed for the names whose keys are a and b; two names with the same
 * entry are taken as one name (the matrix's diagonal is not read). */
int tdm_ps_acm_allowed_keys(const tdm_ps_acm *acm, tdm_ps_acm_key a, tdm_ps_acm_key b);

/* The pose of the scene's fixed frame `name` (fixed_frame_transforms) in the
 * planning frame into *out: 1 if the scene has that frame, else 0 (*out untouched). */
int tdm_ps_fixed_frame(const tdm_planning_scene *ps, const char *name, tdm_xform *out);

/* Names looked up in O(log n): tdm_ps_name_order gives the indices of names[0..n)
 * (distinct) in name order (malloc'd; NULL when out of memory), tdm_ps_name_find the
 * index of `name` through that order, or -1. */
uint32_t *tdm_ps_name_order(char *const *names, uint32_t n);
int32_t tdm_ps_name_find(char *const *names, const uint32_t *order, uint32_t n, const char *name);

/* The state's position of `joint` into *value: 1 if the state names it, else 0
 * (*value untouched). */
int tdm_ps_robot_state_position(const tdm_ps_robot_state *st, const char *joint, double *value);

/* The transform of the multi-DOF joint `joint` (the root's virtual joint), or, with
 * joint == NULL, of the state's only multi-DOF joint; identity when the state has
 * no such joint (or, with NULL, none or several). */
tdm_xform tdm_ps_robot_state_root(const tdm_ps_robot_state *st, const char *joint);

#ifdef __cplusplus
}
#endif

#endif
