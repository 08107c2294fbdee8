/* The generated arm that tests/test_robot_scene.c (offline, against a brute-force
 * oracle) and tests/test_robotd.c (through tandemd, against the offline answers)
 * both use: a URDF of three revolute/prismatic joints with box, cylinder and a
 * scaled mesh element, its SRDF, the mesh file (meshes/bar.obj beside the URDF)
 * and a MoveIt planning scene with a box and a cylinder, a multi-DOF root
 * transform and an allowed-collision matrix. Texts; each suite writes those it needs
 * (arm_fixture_write: all of them). */
#ifndef TDM_TESTS_ARM_FIXTURE_H
#define TDM_TESTS_ARM_FIXTURE_H

#include "gen.h"

static const char *urdf_text =
    "<?xml version='1.0'?>\n"
    "<robot name='arm'>\n"
    "  <link name='base_link'><collision><origin xyz='0 0 0.05'/><geometry><box size='0.4 0.4 0.1'/></geometry>"
    "</collision></link>\n"
    "  <joint name='j1' type='revolute'><parent link='base_link'/><child link='link1'/>"
    "<origin xyz='0 0 0.1'/><axis xyz='0 0 1'/><limit lower='-3.14' upper='3.14'/></joint>\n"
    "  <link name='link1'>\n"
    "    <collision><origin xyz='0 0 0.2'/><geometry><cylinder radius='0.04' length='0.3'/></geometry></collision>\n"
    "    <collision><origin xyz='0.1 0 0.3'/><geometry><box size='0.3 0.04 0.04'/></geometry></collision>\n"
    "  </link>\n"
    "  <joint name='j2' type='revolute'><parent link='link1'/><child link='link2'/>"
    "<origin xyz='0 0 0.4'/><axis xyz='0 1 0'/><limit lower='-2.6' upper='2.6'/></joint>\n"
    "  <link name='link2'>\n"
    "    <collision><geometry><mesh filename='meshes/bar.obj' scale='0.5 0.5 0.5'/></geometry></collision>\n"
    "    <collision><origin xyz='0.3 0 0'/><geometry><box size='0.1 0.06 0.06'/></geometry></collision>\n"
    "  </link>\n"
    "  <joint name='j3' type='prismatic'><parent link='link2'/><child link='link3'/>"
    "<origin xyz='0.55 0 0'/><axis xyz='1 0 0'/><limit lower='0' upper='0.1'/></joint>\n"
    "  <link name='link3'><collision><geometry><cylinder radius='0.03' length='0.1'/></geometry></collision>"
    "</link>\n"
    "</robot>\n";

static const char *srdf_text = "<robot name='arm'><disable_collisions link1='link1' link2='link2' reason='Adjacent'/>"
                               "</robot>\n";

static const char *bar_obj = "v 0.1 -0.05 -0.05\nv 1 -0.05 -0.05\nv 1 0.05 -0.05\nv 0.1 0.05 -0.05\n"
                             "v 0.1 -0.05 0.05\nv 1 -0.05 0.05\nv 1 0.05 0.05\nv 0.1 0.05 0.05\n"
                             "f 1 3 2\nf 1 4 3\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\n"
                             "f 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\nf 4 1 5\nf 4 5 8\n";

static const char *scene_text =
    "name: test\n"
    "robot_state:\n"
    "  joint_state: {name: [j1], position: [0.5]}\n"
    "  multi_dof_joint_state:\n"
    "    joint_names: [virtual_joint]\n"
    "    transforms: [{translation: [0.05, -0.02, 0.01], rotation: [0, 0, 0.09983341664682815, "
    "0.9950041652780258]}]\n"
    "allowed_collision_matrix:\n"
    "  entry_names: [link3, obs_cyl, base_link, link2]\n"
    "  entry_values:\n"
    "    - [false, true, false, false]\n"
    "    - [true, false, false, false]\n"
    "    - [false, false, false, true]\n"
    "    - [false, false, true, false]\n"
    "world:\n"
    "  collision_objects:\n"
    "    - id: obs_box\n"
    "      header: {frame_id: world}\n"
    "      primitives: [{type: box, dimensions: [0.25, 0.25, 0.8]}]\n"
    "      primitive_poses: [{position: [0.3, 0.15, 0.55], orientation: [0, 0, 0.14943813247359922, "
    "0.9887710779360422]}]\n"
    "    - id: obs_cyl\n"
    "      primitives: [{type: cylinder, dimensions: [0.8, 0.12]}]\n"
    "      primitive_poses: [{position: [-0.25, -0.25, 0.55], orientation: [0, 0, 0, 1]}]\n";

/* Two more worlds for the arm: other objects, and so other checked pairs, than scene_text's
 * (several robot scenes of one robot at once). */
static const char *const world_variants[] = {
    /* one box elsewhere, no ACM: more checks than the fixture's (no allowed link-object pair) */
    "name: v1\n"
    "world:\n"
    "  collision_objects:\n"
    "    - id: wall\n"
    "      primitives: [{type: box, dimensions: [0.05, 0.9, 0.9]}]\n"
    "      primitive_poses: [{position: [0.35, 0.0, 0.3], orientation: [0, 0, 0, 1]}]\n",
    /* three objects: a sphere, a cylinder lying down, a box */
    "name: v2\n"
    "robot_state:\n"
    "  joint_state: {name: [j1], position: [-0.3]}\n"
    "world:\n"
    "  collision_objects:\n"
    "    - id: ball\n"
    "      primitives: [{type: sphere, dimensions: [0.15]}]\n"
    "      primitive_poses: [{position: [0.0, 0.35, 0.4], orientation: [0, 0, 0, 1]}]\n"
    "    - id: log\n"
    "      primitives: [{type: cylinder, dimensions: [0.7, 0.06]}]\n"
    "      primitive_poses: [{position: [-0.3, 0.0, 0.25], orientation: [0.7071067811865476, 0, 0, "
    "0.7071067811865476]}]\n"
    "    - id: block\n"
    "      primitives: [{type: box, dimensions: [0.2, 0.2, 0.2]}]\n"
    "      primitive_poses: [{position: [0.2, -0.3, 0.6], orientation: [0, 0, 0, 1]}]\n",
};

/* A configuration of the arm's three joints, uniform within urdf_text's limits. */
static inline void arm_fixture_random_config(gen_rng *g, double q[3])
{
    q[0] = gen_range(g, -3.14, 3.14);
    q[1] = gen_range(g, -2.6, 2.6);
    q[2] = gen_range(g, 0, 0.1);
}

/* Every file above through a suite's writer (NAME relative to its folder, which has a meshes/
 * folder): arm.urdf, arm.srdf, meshes/bar.obj, scene.yaml, world1.yaml and world2.yaml. */
static inline void arm_fixture_write(void (*write)(const char *name, const char *text))
{
    write("arm.urdf", urdf_text);
    write("arm.srdf", srdf_text);
    write("meshes/bar.obj", bar_obj);
    write("scene.yaml", scene_text);
    write("world1.yaml", world_variants[0]);
    write("world2.yaml", world_variants[1]);
}

#endif
