/* Forward kinematics of a tdm_robot (robot/urdf.h): the world transform of every
 * link and of every collision element for one configuration.
 *
 * A configuration gives the active joints' values in tdm_robot.active order (what
 * `tandem robot joints` lists): radians for revolute and continuous joints, metres
 * for prismatic ones. A mimic joint's value is mimic_multiplier * q[mimic_source] +
 * mimic_offset; a fixed joint's is 0. Values are used as given: limits are neither
 * enforced nor checked here.
 *
 * Links are placed parent before child (the robot stores them depth first):
 *   world(child) = world(parent) * origin * motion(value)
 * where motion is a rotation by the value about the joint's unit axis (revolute,
 * continuous), a translation by value * axis (prismatic), or the identity (fixed);
 * the root link sits at the base transform. A collision element's world transform
 * is world(link) * collision origin. Everything is double; O(links + collisions).
 * The functions only read the robot, so threads may share one. */
#ifndef TDM_ROBOT_KINEMATICS_H
#define TDM_ROBOT_KINEMATICS_H

#include <stddef.h>

#include "../geom/vec.h"
#include "urdf.h"

/* The motion of joint j at value v (see above), in the joint's frame. */
tdm_xform tdm_robot_joint_motion(const tdm_robot_joint *j, double v);

/* The value of every joint (values[0..n_joints)) for the active values q[0..n_q).
 * Returns 0, TDM_EINVAL when n_q is not r->n_active, or TDM_ENONFINITE when a value
 * of q is NaN or infinite (values is then unspecified). */
int tdm_robot_joint_values(const tdm_robot *r, const double *q, size_t n_q, double *values);

/* The world transform of every link, link_world[0..n_links), for the active values
 * q[0..n_q); base is the root link's transform (NULL: identity). Errors as for
 * tdm_robot_joint_values; link_world is then unspecified. Allocates nothing. */
int tdm_robot_fk(const tdm_robot *r, const double *q, size_t n_q, const tdm_xform *base, tdm_xform *link_world);

/* The world transform of every collision element, coll_world[0..n_collisions), from
 * link_world as tdm_robot_fk gives it. */
void tdm_robot_collision_world(const tdm_robot *r, const tdm_xform *link_world, tdm_xform *coll_world);

#endif
