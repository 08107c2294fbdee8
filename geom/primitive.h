/* Primitive shapes (box, sphere, cylinder, capsule, cone) as triangle meshes for the
 * mesh engines, and an exact point-in-solid test on the true shapes.
 *
 * Conventions are MoveIt's (shape_msgs/SolidPrimitive): every shape is centred on
 * its frame's origin; a box has full edge lengths (x, y, z); a cylinder is
 * (height, radius) along z; a capsule is (radius, length of the cylindrical part)
 * along z, i.e. the points within `radius` of the segment from (0, 0, -length/2)
 * to (0, 0, length/2); a cone is (height, radius) along z, its apex at
 * (0, 0, height/2) and its base, a disc of that radius, at z = -height/2 (MoveIt's
 * shapes::Cone and FCL's Cone place it so). Note the orders: cylinder and cone
 * height first (MoveIt), capsule radius first (FCL's Capsule(radius, lz)); the
 * constructors below name them.
 *
 * Meshes. A box is exact: its 8 vertices are the corners, each coordinate rounded
 * to float away from the centre (exactly the corners whenever half an edge is a
 * float), 12 triangles. A curved shape is tessellated so that the tessellation
 * CONTAINS the true solid (every point of the solid is inside or on the closed
 * triangle surface, float rounding of the vertices included), with every point of
 * the surface within `deviation` of the true surface. The tessellation is closed,
 * its triangles are counter-clockwise seen from outside, and it is convex up to
 * the rounding of its vertices to float (two nearly coplanar neighbours may fold
 * inwards by ~2^-24 of the shape's size; containment does not depend on it).
 *
 *   Cylinder, n segments: a prism over the regular n-gon whose sides (apothem) lie
 *   at r' = r + e_r from the axis, i.e. vertices at r'/cos(pi/n), caps at
 *   +-(h/2 + e_z). Its deviation is the sagitta of the circumscribed polygon,
 *   r'/cos(pi/n) - r ~ r (pi/n)^2 / 2, so n is the smallest count with
 *   r'/cos(pi/n) - r <= tolerance (minus float rounding), at least 8 and at most
 *   TDM_PRIMITIVE_MAX_SEGMENTS: at the cap the deviation is r (1/cos(pi/1024) - 1)
 *   ~ 4.7e-6 r, above the default tolerance from r ~ 21 m on.
 *
 *   Cone, n segments: a pyramid over a regular n-gon, apex (0, 0, z_a) with
 *   z_a = h/2 rounded up to float, base at z_b = -(h/2 rounded up to float), every
 *   base vertex at that same float z, so that the base is exactly planar. A side
 *   face holds the apex and a base edge at distance a' from the axis; it has the
 *   whole cone on its inner side exactly when z_a >= h/2 and a' (z_a + h/2) >= r
 *   (z_a - z_b) (the cone's extreme points towards the face are its apex and the
 *   point of its rim under the edge). The polygon's apothem is that bound times
 *   1 + 2^-21, more than the rounding of its vertices to float can take away
 *   (2^-24 of their radius), and every side face is checked after rounding (in
 *   double, with a relative slack of 1e-12, far above the evaluation's error);
 *   a tessellation that fails the check is an internal error, never returned.
 *   Every face then has the cone on its inner side, so the cone lies in the
 *   mesh's kernel, inside it. The deviation is the sagitta r (1/cos(pi/n) - 1)
 *   plus the margins, so n follows the cylinder's rule; 2n triangles.
 *
 *   Sphere and capsule, k latitude steps from pole to equator: ring m (0..k) at
 *   colatitude m pi/(2k) holds max(3, round(4k sin)) vertices (the equator 4k),
 *   odd rings turned by half a step, and each band between two rings is
 *   triangulated as their convex hull. All vertices lie at one radius R from the
 *   centre (from the axis segment for a capsule, whose two hemispheres are joined
 *   by the band of 4k side rectangles). A facet's plane through three points at
 *   radius R lies at R h_f from the centre, h_f = sqrt(1 - rho_f^2), rho_f the
 *   facet's circumradius on the unit sphere; R = r' / min_f h_f puts every facet
 *   plane at distance >= r' = r + e_r, which makes the convex tessellation contain
 *   the ball (capsule) of radius r'. The deviation is R - r (every point of a
 *   facet is within R of the centre): about 0.65 r / k^2, so k starts from
 *   sqrt(0.66 r / tolerance) and is raised until the deviation measured on the
 *   float mesh is within the tolerance, at most TDM_PRIMITIVE_MAX_RINGS: at the cap
 *   the deviation is ~4.0e-5 r, above the default tolerance from r ~ 2.5 m on.
 *   About 10.2 k^2 triangles for a sphere (8k more for a capsule).
 *
 *   Float rounding: every vertex is computed in double and rounded to the nearest
 *   float, which moves it by at most 2^-24 times its distance from the origin,
 *   radially (in x, y) and axially (in z) separately. The margins e_r = 2^-22 r and
 *   e_z = 2^-22 (h/2, or length/2 + r) are at least twice that (cones: see
 *   above; their vertices are checked after rounding), so the double
 *   tessellation contains the true solid grown by every such move, and moving the
 *   vertices continuously to their floats never sweeps the surface across a point
 *   of the true solid: containment survives the conversion. The deviation reported
 *   is measured on the float vertices (the distance to a convex solid is convex,
 *   so its largest value over a triangle is at a vertex), rounded up.
 *
 *   Float resolution: a tessellation is made to max(tolerance, 2^-19 s), s the
 *   radius plus half the height or length (2^-19 ~ 1.9e-6): finer is below what
 *   float vertices resolve there, and would pack a capsule's rings closer than a
 *   few float steps, folding its ends. This binds for shapes over ~50 m at the
 *   default tolerance; a capsule longer than TDM_PRIMITIVE_MAX_CAPSULE_ASPECT
 *   radii is refused, its ends being flat at float resolution.
 *
 *   The caps bound the triangles: at most 4 * TDM_PRIMITIVE_MAX_SEGMENTS (4 096)
 *   for a cylinder, 2 * TDM_PRIMITIVE_MAX_SEGMENTS for a cone, ~10.2 * 128^2 (~167 000) for a sphere or capsule. When a cap
 *   or float resolution binds, the deviation reported is larger than the
 *   tolerance asked for: that is how a caller tells. A box's deviation is the
 *   rounding of its corners (at most 2^-24 of each half-edge), whatever the
 *   tolerance.
 *
 * Limits: dimensions (edges, radii, heights, lengths) finite and in
 * [TDM_PRIMITIVE_MIN_DIM, TDM_PRIMITIVE_MAX_DIM] metres (zero and negative sizes
 * are errors), a capsule's length at most TDM_PRIMITIVE_MAX_CAPSULE_ASPECT times
 * its radius; tolerance in [TDM_PRIMITIVE_MIN_TOLERANCE,
 * TDM_PRIMITIVE_MAX_TOLERANCE] metres. Anything else is TDM_EINVAL with a message
 * naming the dimension. No I/O; every function is reentrant. */
#ifndef TDM_GEOM_PRIMITIVE_H
#define TDM_GEOM_PRIMITIVE_H

#include "mesh.h"
#include "vec.h"

/* BOX, SPHERE and CYLINDER have shape_msgs/SolidPrimitive's numbers; its 4 is
 * CONE, here 5, and 4 is a capsule: convert types by name, never by number. */
typedef enum tdm_primitive_type {
    TDM_PRIMITIVE_BOX = 1,
    TDM_PRIMITIVE_SPHERE = 2,
    TDM_PRIMITIVE_CYLINDER = 3,
    TDM_PRIMITIVE_CAPSULE = 4,
    TDM_PRIMITIVE_CONE = 5
} tdm_primitive_type;

/* Indices into tdm_primitive.dims, as SolidPrimitive's BOX_X, CYLINDER_HEIGHT... */
enum {
    TDM_BOX_X = 0, TDM_BOX_Y = 1, TDM_BOX_Z = 2,
    TDM_SPHERE_RADIUS = 0,
    TDM_CYLINDER_HEIGHT = 0, TDM_CYLINDER_RADIUS = 1,
    TDM_CAPSULE_RADIUS = 0, TDM_CAPSULE_LENGTH = 1,
    TDM_CONE_HEIGHT = 0, TDM_CONE_RADIUS = 1
};

typedef struct tdm_primitive {
    tdm_primitive_type type;
    double dims[3]; /* box: x, y, z; sphere: radius; cylinder, cone: height, radius; capsule: radius, length.
                     * Entries past the type's count are ignored. */
} tdm_primitive;

#define TDM_PRIMITIVE_MIN_DIM 1e-6             /* m */
#define TDM_PRIMITIVE_MAX_DIM 1e5              /* m */
#define TDM_PRIMITIVE_MAX_CAPSULE_ASPECT 1e5   /* capsule length / radius */
#define TDM_PRIMITIVE_TOLERANCE 1e-4           /* m: the default deviation, 0.1 mm */
#define TDM_PRIMITIVE_MIN_TOLERANCE 1e-6       /* m */
#define TDM_PRIMITIVE_MAX_TOLERANCE 1.0        /* m */
#define TDM_PRIMITIVE_MIN_SEGMENTS 8           /* around a cylinder or cone */
#define TDM_PRIMITIVE_MAX_SEGMENTS 1024        /* around a cylinder or cone */
#define TDM_PRIMITIVE_MIN_RINGS 2              /* latitude steps, pole to equator, of a sphere or capsule */
#define TDM_PRIMITIVE_MAX_RINGS 128            /* (its equator has 4 times as many segments) */

TDM_INLINE tdm_primitive tdm_primitive_box(double x, double y, double z)
{
    tdm_primitive p = {TDM_PRIMITIVE_BOX, {x, y, z}};
    return p;
}
TDM_INLINE tdm_primitive tdm_primitive_sphere(double radius)
{
    tdm_primitive p = {TDM_PRIMITIVE_SPHERE, {radius, 0, 0}};
    return p;
}
TDM_INLINE tdm_primitive tdm_primitive_cylinder(double height, double radius)
{
    tdm_primitive p = {TDM_PRIMITIVE_CYLINDER, {height, radius, 0}};
    return p;
}
TDM_INLINE tdm_primitive tdm_primitive_capsule(double radius, double length)
{
    tdm_primitive p = {TDM_PRIMITIVE_CAPSULE, {radius, length, 0}};
    return p;
}
TDM_INLINE tdm_primitive tdm_primitive_cone(double height, double radius)
{
    tdm_primitive p = {TDM_PRIMITIVE_CONE, {height, radius, 0}};
    return p;
}

/* 0 if p is a known type whose dimensions are within the limits above; otherwise
 * TDM_EINVAL, with a message naming the type and dimension written into err (if
 * errlen > 0), e.g. "cylinder radius is -0.1: must be a finite number in
 * [1e-06, 100000] m". p NULL is TDM_EINVAL. */
int tdm_primitive_check(const tdm_primitive *p, char *err, size_t errlen);

/* Tessellates p (see the top of this file) so that the mesh contains the true
 * solid and deviates from its surface by at most `tolerance` metres unless a cap
 * binds (TDM_PRIMITIVE_TOLERANCE is the usual choice). On success *out is a new
 * mesh that the caller frees with tdm_mesh_free, and *deviation (if deviation is
 * not NULL) is a bound on the largest distance from a point of the mesh to the
 * true surface: 0 for a box whose half-edges are floats, <= tolerance for a curved
 * shape unless the segment cap or float resolution binds (see above), in which
 * case it is larger. Errors: TDM_EINVAL for a bad primitive (tdm_primitive_check) or a
 * tolerance outside [TDM_PRIMITIVE_MIN_TOLERANCE, TDM_PRIMITIVE_MAX_TOLERANCE] or
 * not finite, TDM_ENOMEM; on failure *out is NULL, *deviation is untouched and a
 * message is written into err (if errlen > 0). */
int tdm_primitive_mesh(const tdm_primitive *p, double tolerance, tdm_mesh **out, double *deviation, char *err,
                       size_t errlen);

/* Is `point` (in the primitive's frame) inside or on the true solid? 1 if so, 0
 * if not: the exact answer for the given doubles (squares and sums are evaluated
 * as exact floating-point expansions), except that a nonzero x or y coordinate
 * (or a sphere's z) smaller than 2^-400 times the radius counts as 0, whose square
 * a double cannot hold: that can only turn a point outside by less than
 * 2^-800 r^2 into "inside" (the safe side for collision). A cone's products are
 * of higher degree: there x and y under 2^-300 r count as 0, and a z under
 * 2^-300 h in size as 0 when positive and as -2^-300 h when negative, again
 * only towards "inside".
 * TDM_EINVAL for an invalid primitive (tdm_primitive_check) or a non-finite
 * point. The exact reference (tests, oracles); the scheduler's solid rule
 * (workpile/solid.h) uses tdm_primitive_contains_grown below. */
int tdm_primitive_contains(const tdm_primitive *p, tdm_dvec3 point);

/* Is `q` (in the primitive's frame) within `reach` metres of the true solid, or
 * at most sqrt(3) reach from it? 1 or 0. Sphere and capsule: the solid grown by
 * `reach` exactly; box: each half-edge grown by `reach`; cylinder: its radius and
 * half-height grown by `reach`; cone: its slab and radius grown by `reach` and its
 * side moved out by `reach` (the grown box, cylinder and cone contain the points
 * within `reach`, and a little more at edges and corners, at most sqrt(2) reach
 * from the solid there). Evaluated in double,
 * so a point within ~2^-50 (|q| + size) of the grown solid's surface may fall
 * either way: a caller that needs a one-sided answer adds at least that to
 * `reach` (workpile/solid.h does). p must be valid (tdm_primitive_check) and
 * `reach` >= 0; nothing is checked: this is the hot-path test of solid
 * containment, one call per (checked pair, mesh component). */
TDM_INLINE TDM_HD int tdm_primitive_contains_grown(const tdm_primitive *p, tdm_dvec3 q, double reach)
{
    const double *d = p->dims;
    double ax = q.x < 0 ? -q.x : q.x, ay = q.y < 0 ? -q.y : q.y, az = q.z < 0 ? -q.z : q.z;
    double r;
    switch (p->type) {
    case TDM_PRIMITIVE_BOX:
        return ax <= 0.5 * d[TDM_BOX_X] + reach && ay <= 0.5 * d[TDM_BOX_Y] + reach &&
               az <= 0.5 * d[TDM_BOX_Z] + reach;
    case TDM_PRIMITIVE_SPHERE:
        r = d[TDM_SPHERE_RADIUS] + reach;
        return ax * ax + ay * ay + az * az <= r * r;
    case TDM_PRIMITIVE_CYLINDER:
        r = d[TDM_CYLINDER_RADIUS] + reach;
        return az <= 0.5 * d[TDM_CYLINDER_HEIGHT] + reach && ax * ax + ay * ay <= r * r;
    case TDM_PRIMITIVE_CAPSULE: {
        r = d[TDM_CAPSULE_RADIUS] + reach;
        double z = az - 0.5 * d[TDM_CAPSULE_LENGTH];
        if (z < 0) z = 0;
        return ax * ax + ay * ay + z * z <= r * r;
    }
    case TDM_PRIMITIVE_CONE: {
        /* the slab and the cylinder around the cone, grown; then the side: the
         * distance from (rho, z) to the line of the cone's side is
         * (rho h - r (h/2 - z)) / sqrt(h^2 + r^2) */
        double h = d[TDM_CONE_HEIGHT], rc = d[TDM_CONE_RADIUS];
        if (az > 0.5 * h + reach) return 0;
        double rho2 = ax * ax + ay * ay;
        r = rc + reach;
        if (rho2 > r * r) return 0;
        return sqrt(rho2) * h - rc * (0.5 * h - q.z) <= reach * sqrt(h * h + rc * rc);
    }
    }
    return 0;
}

/* For tests: tessellates a curved primitive with a given segment count instead
 * of one derived from a tolerance: `segments` is n for a cylinder, k (latitude
 * steps) for a sphere or capsule, within the MIN/MAX limits above; the rest as
 * tdm_primitive_mesh. TDM_EINVAL for a box. */
int tdm__primitive_mesh_segments(const tdm_primitive *p, int segments, tdm_mesh **out, double *deviation,
                                 char *err, size_t errlen);

#endif
