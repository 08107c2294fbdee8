/* Forward kinematics (robot/kinematics.h). */
#include "kinematics.h"

#include <math.h>

#include "../geom/kin.h"

tdm_xform tdm_robot_joint_motion(const tdm_robot_joint *j, double v)
{
    tdm_xform m = tdm_xform_identity();
    switch (j->type) {
    case TDM_JOINT_REVOLUTE:
    case TDM_JOINT_CONTINUOUS: m.r = tdm_kin_axis_angle(j->axis, v); break;
    case TDM_JOINT_PRISMATIC: m.t = tdm_d3_scale(j->axis, v); break;
    case TDM_JOINT_FIXED: break;
    }
    return m;
}

static double joint_value(const tdm_robot_joint *j, const double *q)
{
    if (j->type == TDM_JOINT_FIXED) return 0;
    if (j->active >= 0) return q[j->active];
    return j->mimic_source >= 0 ? j->mimic_multiplier * q[j->mimic_source] + j->mimic_offset : j->mimic_offset;
}

static int check_q(const tdm_robot *r, const double *q, size_t n_q)
{
    if (n_q != r->n_active) return TDM_EINVAL;
    for (size_t i = 0; i < n_q; i++)
        if (!isfinite(q[i])) return TDM_ENONFINITE;
    return 0;
}

int tdm_robot_joint_values(const tdm_robot *r, const double *q, size_t n_q, double *values)
{
    int rc = check_q(r, q, n_q);
    if (rc) return rc;
    for (uint32_t k = 0; k < r->n_joints; k++) values[k] = joint_value(&r->joints[k], q);
    return 0;
}

int tdm_robot_fk(const tdm_robot *r, const double *q, size_t n_q, const tdm_xform *base, tdm_xform *link_world)
{
    int rc = check_q(r, q, n_q);
    if (rc) return rc;
    link_world[0] = base ? *base : tdm_xform_identity();
    /* Joint k's child is link k + 1 and its parent comes earlier (urdf.h). */
    for (uint32_t k = 0; k < r->n_joints; k++) {
        const tdm_robot_joint *j = &r->joints[k];
        tdm_xform m = tdm_robot_joint_motion(j, joint_value(j, q));
        tdm_xform local = tdm_xform_mul(&j->origin, &m);
        link_world[j->child] = tdm_xform_mul(&link_world[j->parent], &local);
    }
    return 0;
}

void tdm_robot_collision_world(const tdm_robot *r, const tdm_xform *link_world, tdm_xform *coll_world)
{
    for (uint32_t i = 0; i < r->n_collisions; i++) {
        const tdm_robot_collision *c = &r->collisions[i];
        coll_world[i] = tdm_xform_mul(&link_world[c->link], &c->origin);
    }
}
