/* The arm of tests/arm_oracle.h and its oracle. */
#include "arm_oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* base_link: a slab; link1 a post turning about z; link2 a bar at the post's top
 * turning about y. The bar reaches the world's post when level; lifted, it clears it. */
const char *arm_urdf_text =
    "<?xml version='1.0'?>\n"
    "<robot name='arm2'>\n"
    "  <link name='base_link'><collision><origin xyz='0 0 0.05'/><geometry><box size='0.3 0.3 0.1'/></geometry>"
    "</collision></link>\n"
    "  <joint name='j1' type='revolute'><parent link='base_link'/><child link='link1'/>"
    "<origin xyz='0 0 0.1'/><axis xyz='0 0 1'/><limit lower='-3.14' upper='3.14'/></joint>\n"
    "  <link name='link1'><collision><origin xyz='0 0 0.2'/><geometry><box size='0.06 0.06 0.4'/></geometry>"
    "</collision></link>\n"
    "  <joint name='j2' type='revolute'><parent link='link1'/><child link='link2'/>"
    "<origin xyz='0 0 0.4'/><axis xyz='0 1 0'/><limit lower='-2.6' upper='2.6'/></joint>\n"
    "  <link name='link2'><collision><origin xyz='0.3 0 0'/><geometry><box size='0.5 0.05 0.05'/></geometry>"
    "</collision></link>\n"
    "</robot>\n";

const char *arm_srdf_text = "<robot name='arm2'><disable_collisions link1='link1' link2='link2' reason='Adjacent'/>"
                               "<disable_collisions link1='base_link' link2='link1' reason='Adjacent'/></robot>\n";

const char *arm_scene_text = "name: post\n"
                                "world:\n"
                                "  collision_objects:\n"
                                "    - id: post\n"
                                "      header: {frame_id: world}\n"
                                "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"
                                "      primitive_poses: [{position: [0.45, 0.1, 0.4], orientation: [0, 0, 0, 1]}]\n";

typedef struct obox {
    double c[3];    /* centre */
    double a[3][3]; /* unit axes a[0], a[1], a[2] (columns of the rotation) */
    double h[3];    /* half sizes */
} obox;

static double dot3(const double *u, const double *v) { return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]; }

/* Do two boxes meet (touching counts)? The 15 separating axes; an edge-cross axis
 * of (nearly) parallel edges is skipped, a face axis covers it. */
static int boxes_meet(const obox *p, const obox *q)
{
    double axes[15][3];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        memcpy(axes[n++], p->a[i], sizeof axes[0]);
        memcpy(axes[n++], q->a[i], sizeof axes[0]);
    }
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            const double *u = p->a[i], *v = q->a[k];
            double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
            double l = sqrt(dot3(c, c));
            if (l < 1e-9) continue;
            for (int x = 0; x < 3; x++) axes[n][x] = c[x] / l;
            n++;
        }
    double d[3] = {q->c[0] - p->c[0], q->c[1] - p->c[1], q->c[2] - p->c[2]};
    for (int s = 0; s < n; s++) {
        double rp = 0, rq = 0;
        for (int i = 0; i < 3; i++) {
            rp += p->h[i] * fabs(dot3(p->a[i], axes[s]));
            rq += q->h[i] * fabs(dot3(q->a[i], axes[s]));
        }
        if (fabs(dot3(d, axes[s])) > rp + rq) return 0;
    }
    return 1;
}

/* A box grown by pad on every side (negative: shrunk). */
static obox grown(obox b, double pad)
{
    for (int i = 0; i < 3; i++) b.h[i] += pad;
    return b;
}

/* link2's frame at (j1, j2): Rz(j1) * Ry(j2) at (0, 0, 0.5); the box with centre c and
 * half sizes h in that frame, axes along its axes. */
static obox on_link2(const double q[2], const double c[3], const double h[3])
{
    const double c1 = cos(q[0]), s1 = sin(q[0]), c2 = cos(q[1]), s2 = sin(q[1]);
    const double R[3][3] = {{c1 * c2, -s1, c1 * s2}, {s1 * c2, c1, s1 * s2}, {-s2, 0, c2}};
    obox b;
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < 3; k++) b.a[i][k] = R[k][i];
        b.c[i] = R[i][0] * c[0] + R[i][1] * c[1] + R[i][2] * c[2] + (i == 2 ? 0.5 : 0);
        b.h[i] = h[i];
    }
    return b;
}

static const obox post = {{0.45, 0.1, 0.4}, {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {0.075, 0.075, 0.4}};
static const obox base = {{0, 0, 0.05}, {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, {0.15, 0.15, 0.05}};

/* Collides at (j1, j2)? base_link and the post are fixed; link1 (a post of radius
 * < 0.043 about the z axis) can reach neither the post (x >= 0.375) nor, the pair
 * being disabled, link2 or the base; so: link2 against the post and the base. */
static int bar_collides(const double q[2], double pad)
{
    static const double c[3] = {0.3, 0, 0}, h[3] = {0.25, 0.025, 0.025};
    obox bar = grown(on_link2(q, c, h), pad);
    return boxes_meet(&bar, &post) || boxes_meet(&bar, &base);
}

int arm_oracle_collides(const double q[2]) { return bar_collides(q, 0); }

/* Does box b meet the plane n . x + d = 0 (n unit)? */
static int box_meets_plane(const obox *b, const double n[3], double d)
{
    double r = 0;
    for (int i = 0; i < 3; i++) r += b->h[i] * fabs(dot3(b->a[i], n));
    return fabs(dot3(n, b->c) + d) <= r;
}

int arm_oracle_plane(const double q[2], const double plane[4], double pad, int *self)
{
    double len = sqrt(dot3(plane, plane)), n[3] = {plane[0] / len, plane[1] / len, plane[2] / len}, d = -plane[3] / len;
    static const double c[3] = {0.3, 0, 0}, h[3] = {0.25, 0.025, 0.025};
    const double c1 = cos(q[0]), s1 = sin(q[0]);
    const obox link1 = {{0, 0, 0.3}, {{c1, s1, 0}, {-s1, c1, 0}, {0, 0, 1}}, {0.03, 0.03, 0.2}};
    obox boxes[3] = {grown(on_link2(q, c, h), pad), grown(link1, pad), grown(base, pad)};
    int own = boxes_meet(&boxes[0], &boxes[2]);
    if (self) *self = own;
    for (int i = 0; i < 3; i++)
        if (box_meets_plane(&boxes[i], n, d)) return 1;
    return own;
}

int arm_oracle_holding(const double q[2], const double (*boxes)[6], int n, int link1_checked, int post_checked,
                       double pad)
{
    if (bar_collides(q, pad)) return 1;
    /* link1: Rz(j1) at (0, 0, 0.1), its box centred 0.2 up its axis */
    const double c1 = cos(q[0]), s1 = sin(q[0]);
    const obox link1 = {{0, 0, 0.3}, {{c1, s1, 0}, {-s1, c1, 0}, {0, 0, 1}}, {0.03, 0.03, 0.2}};
    for (int i = 0; i < n; i++) {
        obox b = grown(on_link2(q, boxes[i], boxes[i] + 3), pad);
        if (boxes_meet(&b, &base) || (post_checked && boxes_meet(&b, &post)) ||
            (link1_checked && boxes_meet(&b, &link1)))
            return 1;
    }
    return 0;
}

/* The first colliding state of a -> b cut at resolution r (issue 13's formula), or -1. */
long arm_oracle_motion(const double a[2], const double b[2], double r, long *n_out)
{
    double d = fmax(fabs(b[0] - a[0]), fabs(b[1] - a[1]));
    double c = ceil(d / r) + 1;
    long n = c < 2 ? 2 : (long)c;
    if (n_out) *n_out = n;
    for (long k = 0; k < n; k++) {
        double t = (double)k / (double)(n - 1), q[2] = {a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])};
        if (arm_oracle_collides(q)) return k;
    }
    return -1;
}


const double arm_held_boxes[2][6] = {{0.58, 0, 0, 0.06, 0.06, 0.06}, {0.06, 0, -0.2, 0.02, 0.02, 0.15}};

char *arm_held_scene(const char *link, const char *frame, const char *pose, const char *touch, const char *extra)
{
    const size_t cap = 4096 + strlen(link) + strlen(frame) + strlen(pose) + strlen(touch) + strlen(extra);
    char *t = malloc(cap);
    if (!t) return NULL;
    snprintf(t, cap,
             "name: held\n"
             "robot_state:\n"
             "  joint_state: {name: [j1, j2], position: [%.17g, %.17g]}\n"
             "  attached_collision_objects:\n"
             "    - link_name: %s\n"
             "      touch_links: %s\n"
             "      object:\n"
             "        id: held\n"
             "        header: {frame_id: %s}\n"
             "%s"
             "        primitives: [{type: box, dimensions: [%.17g, %.17g, %.17g]}, {type: box, dimensions: [%.17g, "
             "%.17g, %.17g]}]\n"
             "        primitive_poses:\n"
             "          - {position: [%.17g, %.17g, %.17g], orientation: [0, 0, 0, 1]}\n"
             "          - {position: [%.17g, %.17g, %.17g], orientation: [0, 0, 0, 1]}\n"
             "world:\n"
             "  collision_objects:\n"
             "    - id: post\n"
             "      header: {frame_id: world}\n"
             "      primitives: [{type: box, dimensions: [0.15, 0.15, 0.8]}]\n"
             "      primitive_poses: [{position: [0.45, 0.1, 0.4], orientation: [0, 0, 0, 1]}]\n"
             "%s",
             ARM_HELD_J1, ARM_HELD_J2, link, touch, frame, pose, 2 * arm_held_boxes[0][3], 2 * arm_held_boxes[0][4],
             2 * arm_held_boxes[0][5], 2 * arm_held_boxes[1][3], 2 * arm_held_boxes[1][4], 2 * arm_held_boxes[1][5],
             arm_held_boxes[0][0], arm_held_boxes[0][1], arm_held_boxes[0][2], arm_held_boxes[1][0],
             arm_held_boxes[1][1], arm_held_boxes[1][2], extra);
    return t;
}
