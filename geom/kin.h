/* Forward kinematics as a flat table, the same code on the host and the device.
 *
 * A robot's joints in depth-first order (joint k moves link k + 1; its parent
 * link comes earlier), each with the rule that gives its value from a
 * configuration, and the collision elements as (link, origin). tdm_kin_poses
 * turns one configuration into every element's world transform. robot/
 * fills a tdm_kin from a URDF (robot/robot_scene.h) and computes its poses with
 * this code on the host (robot/kinematics.c); the GPU engine runs the same
 * function, one thread per configuration (gpu/configs.cu), so that a batch of
 * configurations never leaves the device as poses.
 *
 *   world(link 0)     = base
 *   world(child of k) = world(parent of k) * origin_k * motion_k(value_k)
 *   value_k           = q[active] (active joint), mult * q[source] + offset (mimic
 *                       joint; offset alone when its chain ends at a fixed joint),
 *                       0 (fixed)
 *   motion            = rotation by the value about the unit axis (rotating joint),
 *                       translation by value * axis (sliding joint), identity (fixed)
 *   pose(element e)   = world(link of e) * origin_e
 *
 * Everything in double, products as in geom/vec.h. Host and device round every
 * operation alike (geom/ is compiled without contraction on both sides), except
 * sin and cos: the host's libm and CUDA's double sin and cos may differ in the
 * last bit (CUDA documents at most 2 ulp), which moves a link by about 1e-16 of
 * its distance from the base. Configurations are used as given: limits are not
 * enforced and finiteness is the caller's to check. */
#ifndef TDM_GEOM_KIN_H
#define TDM_GEOM_KIN_H

#include "base.h"
#include "vec.h"

enum { TDM_KIN_FIXED = 0, TDM_KIN_ROTATE = 1, TDM_KIN_SLIDE = 2 };

typedef struct tdm_kin_joint {
    uint32_t parent;   /* link index, < this joint's child (index + 1) */
    uint32_t type;     /* TDM_KIN_* */
    int32_t active;    /* the configuration value it takes, or -1 */
    int32_t source;    /* mimic: the configuration value it follows, or -1 */
    double mult, offset; /* mimic: value = mult * q[source] + offset (offset alone when source < 0) */
    tdm_xform origin;  /* the child frame in the parent frame at value 0 */
    tdm_dvec3 axis;    /* unit, in the child frame */
} tdm_kin_joint;

typedef struct tdm_kin_elem {
    uint32_t link;
    uint32_t pad;
    tdm_xform origin;  /* the element's frame in its link's frame */
} tdm_kin_elem;

/* A robot's kinematics: n_links = n_joints + 1. The arrays are borrowed from
 * whoever filled it (robot/robot_scene.c owns them for a robot scene). */
typedef struct tdm_kin {
    uint32_t n_links, n_elems, n_q;
    const tdm_kin_joint *joints; /* n_links - 1 */
    const tdm_kin_elem *elems;   /* n_elems */
    tdm_xform base;              /* link 0's world transform */
} tdm_kin;

/* Rotation by `angle` about the unit axis k (Rodrigues): c I + s [k]x + (1 - c) k k^T. */
TDM_INLINE TDM_HD tdm_dmat3 tdm_kin_axis_angle(tdm_dvec3 k, double angle)
{
    double c = cos(angle), s = sin(angle), t = 1 - c;
    tdm_dmat3 m = {{{t * k.x * k.x + c, t * k.x * k.y - s * k.z, t * k.x * k.z + s * k.y},
                    {t * k.x * k.y + s * k.z, t * k.y * k.y + c, t * k.y * k.z - s * k.x},
                    {t * k.x * k.z - s * k.y, t * k.y * k.z + s * k.x, t * k.z * k.z + c}}};
    return m;
}

/* Joint j's motion at value v, in its child frame. */
TDM_INLINE TDM_HD tdm_xform tdm_kin_motion(uint32_t type, tdm_dvec3 axis, double v)
{
    tdm_xform m = tdm_xform_identity();
    if (type == TDM_KIN_ROTATE) m.r = tdm_kin_axis_angle(axis, v);
    else if (type == TDM_KIN_SLIDE) m.t = tdm_d3_scale(axis, v);
    return m;
}

TDM_INLINE TDM_HD double tdm_kin_value(const tdm_kin_joint *j, const double *q)
{
    if (j->type == TDM_KIN_FIXED) return 0;
    if (j->active >= 0) return q[j->active];
    return j->source >= 0 ? j->mult * q[j->source] + j->offset : j->offset;
}

/* The world transform of every link (link_world[0 .. n_links)) for configuration
 * q (n_q values). */
TDM_INLINE TDM_HD void tdm_kin_links(const tdm_kin *k, const double *q, tdm_xform *link_world)
{
    link_world[0] = k->base;
    for (uint32_t i = 0; i + 1 < k->n_links; i++) {
        const tdm_kin_joint *j = &k->joints[i];
        tdm_xform m = tdm_kin_motion(j->type, j->axis, tdm_kin_value(j, q));
        tdm_xform local = tdm_xform_mul(&j->origin, &m);
        link_world[i + 1] = tdm_xform_mul(&link_world[j->parent], &local);
    }
}

/* Every element's world transform (poses[0 .. n_elems)) from link_world. */
TDM_INLINE TDM_HD void tdm_kin_elems(const tdm_kin *k, const tdm_xform *link_world, tdm_xform *poses)
{
    for (uint32_t e = 0; e < k->n_elems; e++) poses[e] = tdm_xform_mul(&link_world[k->elems[e].link], &k->elems[e].origin);
}

#endif
