/* Motion checks (`tandem motions`, tools/motions_cmd.c, and tandemd's MotionCheck through robot/motion_rounds.h): how a motion from a to b is
 * cut into states. One definition, used by the command and by its tests
 * (tests/test_motions.c), so that the formula is written once:
 *
 *   n = max(2, ceil(max_j |b_j - a_j| / R) + 1),  q_k = a + k/(n-1) * (b - a),
 *
 * k = 0 .. n-1, evaluated in double exactly in this order (issue 13, point 5). */
#ifndef TDM_ROBOT_MOTIONS_H
#define TDM_ROBOT_MOTIONS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Most states one motion may have: a motion needing more (a tiny resolution) is
 * refused rather than run. */
#define TDM_MOTION_MAX_STATES 10000000ull

/* The number of states of the motion a -> b (j values each) at resolution r (> 0,
 * finite; a and b finite): 0 when it would exceed TDM_MOTION_MAX_STATES. */
static inline uint64_t tdm__motion_states(const double *a, const double *b, size_t j, double r)
{
    double d = 0;
    for (size_t i = 0; i < j; i++) {
        double x = fabs(b[i] - a[i]);
        if (x > d) d = x;
    }
    double steps = ceil(d / r); /* may be +inf for a subnormal r: caught below */
    if (!(steps + 1 <= (double)TDM_MOTION_MAX_STATES)) return 0;
    uint64_t n = (uint64_t)steps + 1;
    return n < 2 ? 2 : n;
}

/* State k (0 <= k < n) of the motion a -> b of n states, into q[0..j). */
static inline void tdm__motion_state(const double *a, const double *b, size_t j, uint64_t k, uint64_t n, double *q)
{
    double t = (double)k / (double)(n - 1);
    for (size_t i = 0; i < j; i++) q[i] = a[i] + t * (b[i] - a[i]);
}

#endif
