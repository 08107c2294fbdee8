/* Culling's sphere test, shared by the host (workpile/scene.c, tdm_scene_cull)
 * and the GPU engine's batches of configurations (gpu/configs.cu): two objects
 * whose bounding spheres are apart cannot collide. A centre is given as its world
 * x, y, z and its L1 norm. "Apart" keeps a margin of TDM_CULL_MARGIN of the
 * pair's extent from the origin (both radii plus both centres' L1 norms), far
 * more than the rounding of the transforms and float coordinates the engines
 * test, so dropping such a pair changes no answer (workpile/sched.c, "Culling"). */
#ifndef TDM_GEOM_CULL_H
#define TDM_GEOM_CULL_H

#include "base.h"
#include "vec.h"

#define TDM_CULL_MARGIN 1e-5

/* A world centre c[0..3] of an object whose sphere is centred at `local` in its
 * frame, placed at x. */
TDM_INLINE TDM_HD void tdm_cull_centre(const tdm_xform *x, tdm_dvec3 local, double c[4])
{
    tdm_dvec3 w = tdm_xform_apply(x, local);
    c[0] = w.x;
    c[1] = w.y;
    c[2] = w.z;
    c[3] = fabs(w.x) + fabs(w.y) + fabs(w.z);
}

/* May the spheres (centres a, b; radii summing to rsum) touch? */
TDM_INLINE TDM_HD int tdm_cull_close(const double *a, const double *b, double rsum)
{
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    double reach = rsum + TDM_CULL_MARGIN * (rsum + a[3] + b[3]), r2 = reach * reach;
    /* past 1e154 the squares overflow (inf <= inf would keep any pair): a coordinate
       apart by more than the reach decides instead (NaN keeps) */
    if (r2 == INFINITY) return !(fabs(dx) > reach) && !(fabs(dy) > reach) && !(fabs(dz) > reach);
    return dx * dx + dy * dy + dz * dz <= r2;
}

#endif
