/* A two-joint arm in a planning scene for the OMPL suites (test_ompl, test_ompl_checker),
 * and an oracle for it independent of robot/, the engines and FCL: forward kinematics
 * written out for this arm, and the separating-axis test of two boxes in double.
 *
 * The arm (URDF, SRDF) and the world (a MoveIt planning scene): base_link a slab at
 * the origin; link1 a post turning about z (joint j1, +-3.14); link2 a bar at the
 * post's top turning about y (j2, +-2.6). The world's post, a 0.15 x 0.15 x 0.8 box,
 * stands where the level bar sweeps; lifted, the bar clears it; hanging down, it hits
 * the base. The SRDF disables (link1, link2) and (base_link, link1). */
#ifndef TDM_TESTS_ARM_ORACLE_H
#define TDM_TESTS_ARM_ORACLE_H

#ifdef __cplusplus
extern "C" {
#endif

extern const char *arm_urdf_text, *arm_srdf_text, *arm_scene_text;

/* Does configuration (j1, j2) collide (touching counts)? */
int arm_oracle_collides(const double q[2]);
/* The object the arm holds in the attached-object tests (test_attached, test_robotd):
 * a cube gripped over the bar's end (it overlaps link2, its own link) and a hanger
 * below the bar near the joint, which swings into link1 as j2 turns. Each box: centre
 * x y z, then half sizes, in link2's frame, as arm_held_scene's YAML says. */
extern const double arm_held_boxes[2][6];
/* A planning scene (malloc'd YAML): arm_scene_text's post, the robot state (j1, j2) =
 * (ARM_HELD_J1, ARM_HELD_J2), and the object `held` (arm_held_boxes) attached to link
 * `link` with touch_links `touch` (a YAML list), its header frame `frame` and the
 * object pose line `pose` ("" for none: the boxes' poses are then in `frame`), and
 * `extra` appended at the top level ("" for nothing; e.g. an allowed_collision_matrix). */
char *arm_held_scene(const char *link, const char *frame, const char *pose, const char *touch, const char *extra);
#define ARM_HELD_J1 0.3
#define ARM_HELD_J2 -0.4

/* Does (j1, j2) collide when the arm holds the boxes boxes[0..n) attached to link2
 * (each: centre x y z and half sizes in link2's frame, its axes along link2's)? The
 * held boxes are checked against the base, against the world's post when post_checked
 * and against link1 when link1_checked (link2 itself is a touch link); the arm's own
 * pairs as arm_oracle_collides. Every box (the bar's and the held ones) is grown by
 * pad on each side (negative: shrunk), so that a caller can set aside configurations
 * within pad of touching. */
int arm_oracle_holding(const double q[2], const double (*boxes)[6], int n, int link1_checked, int post_checked,
                       double pad);
/* Does (j1, j2) collide in a world of one plane plane[0] x + plane[1] y + plane[2] z =
 * plane[3] (MoveIt's and FCL's reading of shape_msgs/Plane): a link of the arm on the plane (two-sided, as FCL's Plane: a box meets
 * it when its extent along the normal reaches it; touching counts), or the arm's own
 * checked pair (link2 against the base)? *self (may be NULL) receives the latter
 * alone. Every box grown by pad (negative: shrunk). */
int arm_oracle_plane(const double q[2], const double plane[4], double pad, int *self);
/* The first colliding state of a -> b cut at resolution r by issue 13's formula
 * (n = max(2, ceil(max_j |b_j - a_j| / r) + 1), q_k = a + k/(n-1) (b - a), written
 * out here), or -1; *n_out (may be NULL) receives n. */
long arm_oracle_motion(const double a[2], const double b[2], double r, long *n_out);

#ifdef __cplusplus
}
#endif

#endif
