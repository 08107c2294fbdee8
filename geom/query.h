/* Types shared by every engine (CPU, GPU-resident, hybrid): what a pose query
 * asks and what it answers. */
#ifndef TDM_GEOM_QUERY_H
#define TDM_GEOM_QUERY_H

#include "base.h"

typedef enum tdm_mode {
    TDM_MODE_BOOL = 0,    /* any intersecting triangle pair: stop at the first */
    TDM_MODE_CONTACTS = 1 /* every intersecting triangle pair, up to a cap */
} tdm_mode;

/* A pair of intersecting triangles, as indices into the two meshes' triangle arrays. */
typedef struct tdm_pair { uint32_t a_tri, b_tri; } tdm_pair;

typedef struct tdm_collide_result {
    uint32_t colliding; /* 1 if any triangle pair intersects */
    uint32_t truncated; /* contacts mode: a pair beyond max_pairs exists */
    uint32_t n_pairs;   /* pairs found: 0/1 in bool mode, <= max_pairs in contacts mode */
    tdm_pair first;     /* the first pair found, valid when colliding */
    uint32_t box_tests; /* box pairs tested (work statistics, for cost models) */
    uint32_t tri_tests; /* triangle pairs tested */
} tdm_collide_result;

#endif
