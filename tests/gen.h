/* Generated meshes, poses and files for the test suites.
 *
 * Everything is deterministic for a seed: the generator is splitmix64 (Steele,
 * Lea and Flood), independent of the C library's rand(). Meshes come from
 * tdm_mesh_create, so they are validated exactly as a loaded mesh would be; the
 * caller frees them with tdm_mesh_free. The generators return NULL only when
 * tdm_mesh_create fails (which is itself a test failure). */
#ifndef TDM_TESTS_GEN_H
#define TDM_TESTS_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "geom/mesh.h"
#include "geom/vec.h"

typedef struct gen_rng { uint64_t s; } gen_rng;

uint64_t gen_next(gen_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double gen_uniform(gen_rng *r);
double gen_range(gen_rng *r, double lo, double hi);
/* Uniform integer in [lo, hi], both included. */
int64_t gen_int(gen_rng *r, int64_t lo, int64_t hi);
/* The seed a suite should use: $TDM_TEST_SEED when set, otherwise `fallback`.
 * Suites print it so that a failure can be replayed. */
uint64_t gen_seed(uint64_t fallback);

/* A uniformly random rotation (Shoemake, "Uniform random rotations", Graphics
 * Gems III), as a unit quaternion (x, y, z, w). */
tdm_quat gen_rotation(gen_rng *r);
/* A point uniform in the ball of radius `radius` around `c`. */
tdm_dvec3 gen_in_ball(gen_rng *r, tdm_dvec3 c, double radius);

typedef struct gen_pose { tdm_dvec3 t; tdm_quat q; } gen_pose;
/* Translation uniform in the box [lo, hi], rotation uniform. */
gen_pose gen_pose_in_box(gen_rng *r, const double lo[3], const double hi[3]);
/* Translation uniform in the ball of radius `radius` around `c`, rotation uniform. */
gen_pose gen_pose_in_ball(gen_rng *r, tdm_dvec3 c, double radius);

/* UV sphere around the origin: `segments` around the axis, segments / 2 rings
 * between the poles (segments >= 4); 2 * segments * (segments / 2 - 1) triangles. */
tdm_mesh *gen_sphere(double radius, int segments);
/* Torus around the z axis: major radius R, minor radius r, nu x nv quads split
 * in two (2 * nu * nv triangles). */
tdm_mesh *gen_torus(double R, double r, int nu, int nv);
/* Axis-aligned box [-hx, hx] x [-hy, hy] x [-hz, hz]: 8 vertices, 12 triangles. */
tdm_mesh *gen_box(double hx, double hy, double hz);
/* n needle triangles of length `len` and width len * `aspect`, centred uniformly
 * in [-half, half]^3 with uniform directions. */
tdm_mesh *gen_slivers(gen_rng *r, int n, double half, double len, double aspect);
/* n small triangles (vertices within `size` of a centre uniform in
 * [-half, half]^3), independent of each other. */
tdm_mesh *gen_pile(gen_rng *r, int n, double half, double size);
/* Like gen_pile, but every coordinate is a multiple of `step` (a power of two),
 * so that exactly touching and coplanar triangles are common. */
tdm_mesh *gen_grid_pile(gen_rng *r, int n, int half_steps, int size_steps, double step);
/* n triangles on the grid of `step` (a power of two) in [-half_steps * step,
 * half_steps * step]^3, mixing exactly zero-area triangles with proper ones:
 * collinear points (a, a + i d, a + j d), a repeated vertex (a, a, b), a single
 * point (a, a, a), and proper triangles, in about equal shares. */
tdm_mesh *gen_zero_area(gen_rng *r, int n, int half_steps, double step);
/* A copy of m moved by (dx, dy, dz) (in float, as a mesh file would hold it). */
tdm_mesh *gen_translated(const tdm_mesh *m, double dx, double dy, double dz);

/* Vertex k (0..2) of triangle t of m, as doubles. */
tdm_dvec3 gen_vertex(const tdm_mesh *m, uint32_t t, int k);

/* Writes m as Wavefront OBJ ("v x y z" with round-trip float precision, "f a b c"
 * 1-based). Returns 0 or -1 (errno set). */
int gen_write_obj(const char *path, const tdm_mesh *m);
/* Writes poses as "x y z qx qy qz qw" lines with %.17g. Returns 0 or -1. */
int gen_write_poses(const char *path, const gen_pose *p, size_t n);

/* A whole file as a NUL-terminated malloc'd string (NULL if it cannot be read); *len
 * (optional) receives its length. */
char *gen_read_file(const char *path, size_t *len);
/* Splits s into lines in place; *out (malloc'd) receives their starts. A final newline
 * ends the last line rather than starting an empty one. Returns the number of lines. */
size_t gen_split_lines(char *s, char ***out);

#endif
