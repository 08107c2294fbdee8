/* Trees of primitive shapes shared by the scenes that use them.
 *
 * Planning scenes repeat their primitives: MotionBenchMaker's 700 Panda scenes
 * hold 8 200 primitives, 3 700 distinct within their scenes and 3 to 8 distinct
 * shapes per scenario. A robot's scenes (tdm_robot_scene_create_shared) take
 * their world primitives' trees from the cache kept with the robot's element
 * trees (tdm_robot_elems): a shape (type, dimensions, tolerance) is tessellated
 * and built once, and a scheduler that keeps trees resident by address
 * (workpile/sched.h) keeps it once while scenes hold it.
 *
 * Threads: any, at once (one lock; a tree is built outside it, and a second
 * build of the same shape meanwhile is dropped for the first). The trees are
 * read only once built. */
#ifndef TDM_ROBOT_SHAPE_CACHE_H
#define TDM_ROBOT_SHAPE_CACHE_H

#include <stddef.h>

#include "../geom/bvh.h"
#include "../geom/primitive.h"

typedef struct tdm_shape_cache tdm_shape_cache;

/* A new, empty cache in *out. TDM_ENOMEM. */
int tdm_shape_cache_create(tdm_shape_cache **out);
/* Frees c and what it still holds (every tree should have been released: the
 * scenes that hold them must be gone). NULL is ignored. */
void tdm_shape_cache_destroy(tdm_shape_cache *c);
/* The tree of primitive p tessellated at tolerance (as tdm_primitive_mesh makes it)
 * in *out, referenced once more, and that mesh's deviation in *deviation. Returns
 * 0, or tdm_primitive_mesh's, tdm_bvh_build's or TDM_ENOMEM with a message in
 * why; nothing is then held. */
int tdm_shape_cache_get(tdm_shape_cache *c, const tdm_primitive *p, double tolerance, tdm_bvh **out,
                        double *deviation, char *why, size_t whylen);
/* Drops one reference of the tree tdm_shape_cache_get gave for (p, tolerance). A
 * shape no scene holds any more is kept, idle, for the next scene that asks (a
 * planner deletes its scene before it stores the next one): at most 256 idle
 * shapes and 32 MiB of their trees; past either, the one idle longest is freed. */
void tdm_shape_cache_release(tdm_shape_cache *c, const tdm_primitive *p, double tolerance);
/* Frees every idle shape. */
void tdm_shape_cache_trim(tdm_shape_cache *c);
/* Distinct shapes some scene holds now, and idle ones. */
size_t tdm_shape_cache_count(tdm_shape_cache *c);
size_t tdm_shape_cache_idle(tdm_shape_cache *c);

#endif
