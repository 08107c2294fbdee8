/* Robot models read from URDF (kinematic tree, collision geometry) and SRDF
 * (link pairs never checked against each other).
 *
 * What is read. From the URDF's <robot>: every <link> and <joint>; everything else
 * (materials, transmissions, gazebo tags) is ignored.
 *   - <joint name type>: type fixed, revolute, continuous or prismatic (floating and
 *     planar are refused). <parent link>, <child link> exactly once each. <origin xyz
 *     rpy> (default zero), rpy being URDF's fixed-axis roll, pitch, yaw: R = Rz(yaw)
 *     Ry(pitch) Rx(roll). <axis xyz> (default 1 0 0) is normalised; a zero axis is an
 *     error on a joint that moves and ignored on a fixed one (the Panda's has one).
 *     <limit lower upper> is required, both attributes, lower <= upper, on revolute
 *     and prismatic joints; a continuous joint's limits are taken as [-pi, pi] (what
 *     `tandem robot joints` prints) and never enforced. <mimic joint multiplier
 *     offset> (defaults 1, 0) must name a joint; on a fixed joint it is checked and
 *     otherwise ignored. A mimic of a mimic is followed to the joint that drives it
 *     (multipliers and offsets composed, as MoveIt does); a chain that loops is an
 *     error; a mimic whose chain ends at a fixed joint follows the value 0.
 *   - <link name>: its <collision> elements, in file order, each with <origin> and
 *     one <geometry> holding one of <mesh filename [scale]>, <box size> (full edge
 *     lengths), <cylinder radius length> (along z, centred), <sphere radius>,
 *     <capsule radius length> (along z, centred, length between the cap centres; a
 *     dialect some URDFs use). <visual> and <inertial> are ignored.
 *   Every number must be present where required, parse completely and be finite;
 *   box edges and cylinder or capsule lengths are >= 0, radii > 0; a mesh scale is
 *   one number (uniform) or three, each finite and non-zero (negative mirrors).
 *
 * Mesh filenames, resolved against DIR, the URDF's folder made absolute
 * (realpath); the first regular file found wins and its path is stored:
 *   - "package://PKG/REST": for D = DIR, then each ancestor of DIR up to "/":
 *     D/PKG/REST, then D/REST. (The package's own folder is then found either
 *     under its name, as in a ROS workspace, or as the folder holding the URDF's
 *     folder, whatever it is called; the Panda's "package://meshes/..." is found
 *     as DIR/meshes/....)
 *   - "file://PATH" and plain paths: PATH as is when absolute, else DIR/PATH.
 *   - any other "scheme://" is an error.
 * A mesh found nowhere is an error naming the first candidate.
 *
 * The tree. Links and joints are stored in depth-first order from the root link,
 * a link's child joints taken in the order they appear in the file: link 0 is the
 * root, joint k's child is link k + 1, and every joint's parent link comes before
 * its child. The active joints (those that are neither fixed nor mimic) are listed
 * in the same order; a configuration gives their values in that order.
 *
 * Checks, each an error naming the file, the line and the element: the root is not
 * <robot>; a missing or duplicate link or joint name; a joint naming an unknown
 * parent or child link; a link with two parent joints; no root link (a cycle) or
 * several (a disconnected tree); links unreachable from the root (a cycle); a mimic
 * of an unknown joint or a mimic loop; a bad number or size; a missing mesh file;
 * more elements than the TDM_ROBOT_MAX_* limits below. Nothing is returned on error.
 *
 * Threads: loads may run at once on several threads once one has returned (the first
 * initialises libxml2, which is not safe to race); a loaded tdm_robot is only read
 * by the functions here and by robot/kinematics.h, so threads may share it. */
#ifndef TDM_ROBOT_URDF_H
#define TDM_ROBOT_URDF_H

#include <stddef.h>
#include <stdint.h>

#include "../geom/base.h"
#include "../geom/vec.h"

/* Limits on what a URDF or SRDF may hold; a file over one is refused (TDM_ERANGE). */
#define TDM_ROBOT_MAX_LINKS 1024        /* links, hence at most 1023 joints */
#define TDM_ROBOT_MAX_COLLISIONS 4096   /* collision elements, all links together */
#define TDM_ROBOT_MAX_DISABLED 262144   /* distinct SRDF disable_collisions pairs */
#define TDM_ROBOT_MAX_NAME 256          /* bytes in a link or joint name */
#define TDM_ROBOT_MAX_FILE_BYTES (64u << 20) /* a URDF or SRDF file */

/* The limits given to a continuous joint: [-TDM_ROBOT_PI, TDM_ROBOT_PI]. */
#define TDM_ROBOT_PI 3.141592653589793

typedef enum tdm_joint_type {
    TDM_JOINT_FIXED = 0,
    TDM_JOINT_REVOLUTE,
    TDM_JOINT_CONTINUOUS,
    TDM_JOINT_PRISMATIC
} tdm_joint_type;

typedef enum tdm_shape_type {
    TDM_SHAPE_MESH = 0,
    TDM_SHAPE_BOX,
    TDM_SHAPE_CYLINDER,
    TDM_SHAPE_SPHERE,
    TDM_SHAPE_CAPSULE
} tdm_shape_type;

typedef struct tdm_robot_link {
    char *name;                /* owned */
    int32_t parent_joint;      /* joint index; -1 for the root */
    uint32_t first_collision;  /* this link's collisions: [first, first + n) */
    uint32_t n_collisions;
    uint32_t line;             /* line of <link> in the URDF (0 if unknown) */
} tdm_robot_link;

typedef struct tdm_robot_joint {
    char *name;            /* owned */
    tdm_joint_type type;
    uint32_t parent, child; /* link indices; parent < child == joint index + 1 */
    tdm_xform origin;      /* child frame in the parent frame at value 0 */
    tdm_dvec3 axis;        /* unit, in the joint (child) frame; (1, 0, 0) on fixed joints */
    /* revolute, prismatic: from <limit>; continuous: -pi, pi; fixed: 0, 0 */
    double lower, upper;
    /* Index among the active joints, or -1 (fixed or mimic). */
    int32_t active;
    /* A moving mimic joint's value is mimic_multiplier * q[mimic_source] +
     * mimic_offset, the chain resolved to the active joint that drives it;
     * mimic_source is -1 when the joint is no mimic or when its chain ends at a fixed
     * joint (its value is then mimic_offset). mimic_joint is the joint named by
     * <mimic> (-1 if none), for messages. */
    int32_t mimic_joint;
    int32_t mimic_source;
    double mimic_multiplier, mimic_offset;
    uint32_t line;         /* line of <joint> */
} tdm_robot_joint;

typedef struct tdm_robot_collision {
    uint32_t link;         /* owning link index */
    tdm_xform origin;      /* shape frame in the link frame */
    tdm_shape_type shape;
    /* box: x, y, z edge lengths; cylinder, capsule: radius, length, 0;
     * sphere: radius, 0, 0; mesh: 0, 0, 0 */
    double size[3];
    tdm_dvec3 scale;       /* mesh only: per-axis scale (1, 1, 1 by default) */
    char *mesh_uri;        /* mesh only (else NULL): the filename as written; owned */
    char *mesh_path;       /* mesh only (else NULL): the resolved absolute path; owned */
    uint32_t line;         /* line of <collision> */
} tdm_robot_collision;

typedef struct tdm_robot {
    char *name;            /* <robot name>, "" if absent; owned */
    char *urdf_path;       /* as given to tdm_robot_load; owned */
    tdm_robot_link *links; /* n_links >= 1, depth-first, owned */
    uint32_t n_links;
    tdm_robot_joint *joints; /* n_joints == n_links - 1, depth-first, owned */
    uint32_t n_joints;
    uint32_t *active;      /* joint indices of the active joints, in order; owned */
    uint32_t n_active;
    tdm_robot_collision *collisions; /* grouped by link in link order; owned */
    uint32_t n_collisions;
    /* SRDF disable_collisions pairs as link indices (a < b), sorted, distinct; owned */
    uint32_t (*disabled)[2];
    uint32_t n_disabled;
    /* The SRDF's first <virtual_joint> whose child_link is the root link: its parent_frame (a
     * leading '/' dropped), a name of the planning frame for planning scenes' header frames
     * (robot/robot_scene.h); NULL without one. Owned. Other virtual joints are ignored, as
     * MoveIt skips them. */
    char *planning_frame;
} tdm_robot;

/* Reads the URDF at urdf_path and, when srdf_path is not NULL, the SRDF at srdf_path
 * (as tdm_robot_load_srdf). On success *out receives a new robot, which the caller
 * frees with tdm_robot_free. On failure returns a negative TDM_E* code (TDM_EIO: a
 * file could not be read, TDM_EFORMAT: malformed XML or an element that breaks a rule
 * above, TDM_ENONFINITE: a NaN or infinite number, TDM_ERANGE: over a limit,
 * TDM_ENOMEM), writes "FILE:LINE: ELEMENT 'NAME': what is wrong" into err (when
 * errlen > 0) and sets *out to NULL. */
int tdm_robot_load(const char *urdf_path, const char *srdf_path, tdm_robot **out, char *err, size_t errlen);

/* Robots from text in memory (tandemd's RobotPut): mesh filenames are not looked
 * up in a file system but handed to the caller's resolver, which returns (in *path,
 * malloc'd, stored as the element's mesh_path) what its mesh loader will later be
 * given, or a negative TDM_E* code with a reason in why; the error then reads
 * "NAME:LINE: link 'L' <collision>: mesh 'URI': WHY". */
typedef int (*tdm_robot_mesh_resolver)(void *ctx, const char *uri, char **path, char *why, size_t whylen);

typedef struct tdm_robot_source {
    const char *urdf;      /* urdf_len bytes of URDF XML, borrowed for the call */
    size_t urdf_len;
    const char *urdf_name; /* stands for the file in messages and urdf_path; NULL: "urdf" */
    const char *srdf;      /* NULL: no SRDF */
    size_t srdf_len;
    const char *srdf_name; /* NULL: "srdf" */
    tdm_robot_mesh_resolver resolve; /* required */
    void *ctx;
} tdm_robot_source;

/* As tdm_robot_load, from src: the same rules, checks, limits and messages (with
 * the names standing for the files), the same robot. */
int tdm_robot_parse(const tdm_robot_source *src, tdm_robot **out, char *err, size_t errlen);

/* Adds the <disable_collisions link1 link2/> pairs of the SRDF at srdf_path to r
 * (other SRDF elements are ignored). Both links must be links of r; a pair of a link
 * with itself is ignored, a repeated pair counted once. On failure r is unchanged and
 * the return value and err are as for tdm_robot_load. */
int tdm_robot_load_srdf(tdm_robot *r, const char *srdf_path, char *err, size_t errlen);

/* Frees r and everything it owns; NULL is ignored. */
void tdm_robot_free(tdm_robot *r);

/* The index of the link or joint called name, or -1. O(n). */
int32_t tdm_robot_find_link(const tdm_robot *r, const char *name);
int32_t tdm_robot_find_joint(const tdm_robot *r, const char *name);

/* 1 when the SRDF disabled the pair of links a and b (either order), else 0. */
int tdm_robot_pair_disabled(const tdm_robot *r, uint32_t a, uint32_t b);

const char *tdm_joint_type_name(tdm_joint_type t);
const char *tdm_shape_type_name(tdm_shape_type t);

#endif
