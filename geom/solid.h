/* Solid containment's per-object data and its test, shared by the host's fold
 * (workpile/solid.h: the rule, why it is exact, what it costs) and the GPU
 * engine's fold of configuration batches (gpu/configs.cu). */
#ifndef TDM_GEOM_SOLID_H
#define TDM_GEOM_SOLID_H

#include "base.h"
#include "primitive.h"
#include "vec.h"

/* What a check tests (workpile/solid.h's tdm_solids.check[k]). */
enum { TDM_SOLID_A_IN_B = 1, TDM_SOLID_B_IN_A = 2 };

typedef struct tdm_solid_obj {
    tdm_primitive shape;    /* type 0: not solid */
    tdm_xform frame;        /* shape frame -> object frame */
    int frame_identity;     /* frame is exactly the identity: not applied */
    double reach;           /* margin + slack */
    double bound;           /* solid: radius of a ball around the shape's centre (frame.t) that holds
                               the shape grown by reach */
    uint32_t rep_first, n_reps; /* its mesh's component representatives: reps[rep_first ..]
                                   (0 when no solid partner needs them) */
    tdm_dvec3 rep_centre;   /* a ball holding them (object frame) */
    double rep_radius;
} tdm_solid_obj;

/* Does any representative of object O (at world pose xo; its
 * representatives at reps + O->rep_first) lie within reach of solid object S (at
 * world pose xs)? */
TDM_INLINE TDM_HD int tdm_solid_holds(const tdm_solid_obj *S, const tdm_xform *xs, const tdm_solid_obj *O,
                                      const tdm_dvec3 *reps, const tdm_xform *xo)
{
    /* the two balls first: most pairs of a scene are far apart */
    tdm_dvec3 sc = S->frame_identity ? xs->t : tdm_xform_apply(xs, S->frame.t);
    tdm_dvec3 d = tdm_d3_sub(tdm_xform_apply(xo, O->rep_centre), sc);
    double lim = S->bound + O->rep_radius;
    if (d.x * d.x + d.y * d.y + d.z * d.z > lim * lim) return 0;
    tdm_xform shape_world = S->frame_identity ? *xs : tdm_xform_mul(xs, &S->frame);
    tdm_xform t = tdm_xform_rel(&shape_world, xo); /* o's frame -> the shape's frame */
    const tdm_dvec3 *p = reps + O->rep_first;
    for (uint32_t i = 0; i < O->n_reps; i++)
        if (tdm_primitive_contains_grown(&S->shape, tdm_xform_apply(&t, p[i]), S->reach)) return 1;
    return 0;
}

#endif
