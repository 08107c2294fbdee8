/* Poses as the wire carries them (7 numbers: x y z qx qy qz qw), for the suites that check a real
 * tandemd's answers against brute force exactly: the server normalises each quaternion, so a pose
 * whose quaternion normalises to itself, bit for bit, gives the reference the very rotation the
 * server uses. Header only. */
#ifndef TDM_TESTS_WIRE_POSE_H
#define TDM_TESTS_WIRE_POSE_H

#include <string.h>

#include "gen.h"

static inline tdm_quat wire_normalised(tdm_quat q)
{
    double n = tdm_quat_norm(q);
    q.x /= n;
    q.y /= n;
    q.z /= n;
    q.w /= n;
    return q;
}

static inline int wire_same_quat(tdm_quat a, tdm_quat b) { return !memcmp(&a, &b, sizeof a); }

/* A pose uniform in the ball whose quaternion normalises to itself, bit for bit. */
static inline gen_pose wire_stable_pose(gen_rng *r, tdm_dvec3 c, double radius)
{
    for (;;) {
        gen_pose p = gen_pose_in_ball(r, c, radius);
        tdm_quat q = p.q;
        for (int k = 0; k < 4; k++) {
            tdm_quat n = wire_normalised(q);
            if (wire_same_quat(n, q)) {
                p.q = q;
                return p;
            }
            q = n;
        }
    }
}

static inline void wire_pose(const gen_pose *p, double w[7])
{
    w[0] = p->t.x;
    w[1] = p->t.y;
    w[2] = p->t.z;
    w[3] = p->q.x;
    w[4] = p->q.y;
    w[5] = p->q.z;
    w[6] = p->q.w;
}

/* The transform the server builds from 7 wire numbers (quaternion normalised). */
static inline tdm_xform wire_xform(const double w[7])
{
    return tdm_xform_from_pose(tdm_d3(w[0], w[1], w[2]), wire_normalised((tdm_quat){w[3], w[4], w[5], w[6]}));
}

#endif
