/* A small robot the harnesses share: a fixed base link with a box, a revolute
 * joint, a second link with a sphere and a mesh ("arm.stl"), a prismatic joint
 * and a third link with a cylinder; the SRDF disables base-link3. Also its
 * planning scene (a box and an inline mesh in the world) and the mesh that
 * stands for arm.stl. The seed corpus is made from the same texts. */
#ifndef TDM_FUZZ_FIXTURE_H
#define TDM_FUZZ_FIXTURE_H

static const char FIXTURE_URDF[] =
    "<?xml version=\"1.0\"?>\n"
    "<robot name=\"fuzzbot\">\n"
    "  <link name=\"base\"><collision><origin xyz=\"0 0 0.05\"/><geometry><box size=\"0.4 0.4 0.1\"/></geometry></collision></link>\n"
    "  <link name=\"link1\">\n"
    "    <collision><origin xyz=\"0 0 0.3\" rpy=\"0 0 0\"/><geometry><sphere radius=\"0.05\"/></geometry></collision>\n"
    "    <collision><origin xyz=\"0 0 0.15\"/><geometry><mesh filename=\"arm.stl\" scale=\"1 1 2\"/></geometry></collision>\n"
    "  </link>\n"
    "  <link name=\"link2\"><collision><geometry><cylinder radius=\"0.03\" length=\"0.2\"/></geometry></collision></link>\n"
    "  <joint name=\"j1\" type=\"revolute\"><parent link=\"base\"/><child link=\"link1\"/>"
    "<origin xyz=\"0 0 0.1\"/><axis xyz=\"0 1 0\"/><limit lower=\"-1.5\" upper=\"1.5\" effort=\"1\" velocity=\"1\"/></joint>\n"
    "  <joint name=\"j2\" type=\"prismatic\"><parent link=\"link1\"/><child link=\"link2\"/>"
    "<origin xyz=\"0 0 0.35\"/><axis xyz=\"0 0 1\"/><limit lower=\"0\" upper=\"0.2\" effort=\"1\" velocity=\"1\"/></joint>\n"
    "</robot>\n";

static const char FIXTURE_SRDF[] =
    "<?xml version=\"1.0\"?>\n"
    "<robot name=\"fuzzbot\">\n"
    "  <disable_collisions link1=\"base\" link2=\"link1\" reason=\"Adjacent\"/>\n"
    "  <disable_collisions link1=\"link1\" link2=\"link2\" reason=\"Adjacent\"/>\n"
    "</robot>\n";

static const char FIXTURE_SCENE_YAML[] =
    "name: fuzzscene\n"
    "robot_model_name: fuzzbot\n"
    "world:\n"
    "  collision_objects:\n"
    "    - id: table\n"
    "      header: {frame_id: base}\n"
    "      pose: {position: {x: 0.5, y: 0, z: 0.2}, orientation: {x: 0, y: 0, z: 0, w: 1}}\n"
    "      primitives:\n"
    "        - type: 1\n"
    "          dimensions: [0.3, 0.3, 0.05]\n"
    "      primitive_poses:\n"
    "        - position: {x: 0, y: 0, z: 0}\n"
    "          orientation: {x: 0, y: 0, z: 0, w: 1}\n"
    "    - id: wedge\n"
    "      meshes:\n"
    "        - vertices: [{x: 0, y: 0, z: 0}, {x: 0.2, y: 0, z: 0}, {x: 0, y: 0.2, z: 0}, {x: 0, y: 0, z: 0.2}]\n"
    "          triangles: [{vertex_indices: [0, 1, 2]}, {vertex_indices: [0, 1, 3]}, {vertex_indices: [0, 2, 3]},"
    " {vertex_indices: [1, 2, 3]}]\n"
    "      mesh_poses:\n"
    "        - position: {x: -0.5, y: 0, z: 0.3}\n"
    "          orientation: {x: 0, y: 0, z: 0, w: 1}\n"
    "allowed_collision_matrix:\n"
    "  entry_names: [base, table]\n"
    "  entry_values:\n"
    "    - enabled: [false, true]\n"
    "    - enabled: [true, false]\n"
    "robot_state:\n"
    "  joint_state:\n"
    "    name: [j1]\n"
    "    position: [0.25]\n";

static const char FIXTURE_MOTION_YAML[] =
    "group_name: arm\n"
    "start_state:\n"
    "  joint_state:\n"
    "    name: [j1, j2]\n"
    "    position: [0.0, 0.1]\n"
    "goal_constraints:\n"
    "  - joint_constraints:\n"
    "      - joint_name: j1\n"
    "        position: 1.0\n"
    "      - joint_name: j2\n"
    "        position: 0.0\n";

/* arm.stl: a box 0.04 x 0.04 x 0.1 about its origin (8 vertices, 12 triangles). */
static const float FIXTURE_MESH_VERTS[] = {-0.02f, -0.02f, -0.05f, 0.02f, -0.02f, -0.05f, 0.02f, 0.02f, -0.05f,
                                           -0.02f, 0.02f,  -0.05f, -0.02f, -0.02f, 0.05f,  0.02f, -0.02f, 0.05f,
                                           0.02f,  0.02f,  0.05f,  -0.02f, 0.02f,  0.05f};
static const unsigned FIXTURE_MESH_TRIS[] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4,
                                             1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
#define FIXTURE_MESH_NV 8u
#define FIXTURE_MESH_NT 12u

#endif
