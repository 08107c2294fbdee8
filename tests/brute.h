/* All-pairs brute force for collision queries: the reference the engine and the
 * CLI are checked against.
 *
 * Every (environment triangle, robot triangle) pair is tested with
 * tdm_tri_tri_intersect (itself checked against an exact oracle in test_geom.c),
 * the robot's triangles moved in double by the pose (v' = R v + t, R from
 * tdm_quat_to_mat, through tdm_xform_apply), the environment at identity. An
 * axis-aligned box reject on the exact double coordinates comes first; it cannot
 * change an answer, only save time. */
#ifndef TDM_TESTS_BRUTE_H
#define TDM_TESTS_BRUTE_H

#include <stddef.h>

#include "geom/mesh.h"
#include "geom/query.h"
#include "geom/vec.h"

typedef struct brute_tri { tdm_dvec3 v[3]; double lo[3], hi[3]; } brute_tri;

typedef struct brute {
    const tdm_mesh *env, *robot; /* borrowed */
    brute_tri *e, *r;
    tdm_pair *pairs;             /* after brute_run: the intersecting pairs, sorted by (a_tri, b_tri) */
    size_t n, cap;
} brute;

/* Returns 0, or -1 when out of memory. The meshes must outlive b. */
int brute_init(brute *b, const tdm_mesh *env, const tdm_mesh *robot);
void brute_free(brute *b);
/* Every intersecting pair with the robot at pose x; returns their number, or
 * (size_t)-1 when out of memory. */
size_t brute_run(brute *b, const tdm_xform *x);
/* Is p one of the pairs the last brute_run found? */
int brute_has(const brute *b, tdm_pair p);
/* Orders pairs by (a_tri, b_tri), for qsort and bsearch. */
int brute_pair_cmp(const void *x, const void *y);

#endif
