#!/usr/bin/env python3
"""Writes a MoveIt planning scene with two attached collision objects added to its robot state, for
checking Tandem's attached objects against the FCL reference (bench/run_attached.sh) on real scenes.

    bench/attached_scene.py SCENE.yaml OUT.yaml [--plane] [--cone]

The scene must be a complete planning scene with a `robot_state:` mapping at the top level and no
attached objects (MotionBenchMaker's Panda scenes are). Added, in the robot state:
  - `tool` on panda_hand (touch links: the two fingers), in the hand's frame: a cylinder (height 0.16,
    radius 0.025) 0.16 m along the hand's z, and a box (0.12 x 0.04 x 0.04) 0.26 m along it, turned
    45 degrees about z;
  - `strap` on panda_link5, given in the planning frame (so placed by the scene's robot state): an
    inline tetrahedron mesh.
With --plane, also a world object `wall`: a plane (shape_msgs/Plane coef [1, 0.2, 0.1, 0.45], which MoveIt
places at x + 0.2 y + 0.1 z = 0.45) in a frame turned 45 degrees about z and moved to (0.1, 0, 0.2).
With --cone, cones (shape_msgs/SolidPrimitive 4, [height, radius]): a third shape of the tool, a cone
(0.08, 0.03) 0.36 m along the hand's z, and a world object `funnel`, a cone (0.5, 0.18) at
(0.35, -0.35, 0.55) turned 60 degrees about x.
The shapes are arbitrary; they only have to reach the world and the robot in some configurations."""
import sys

BLOCK = """  attached_collision_objects:
    - link_name: panda_hand
      touch_links: [panda_leftfinger, panda_rightfinger]
      object:
        id: tool
        header: {frame_id: panda_hand}
        primitives: [{type: cylinder, dimensions: [0.16, 0.025]}, {type: box, dimensions: [0.12, 0.04, 0.04]}]
        primitive_poses:
          - {position: [0, 0, 0.16], orientation: [0, 0, 0, 1]}
          - {position: [0, 0, 0.26], orientation: [0, 0, 0.3826834323650898, 0.9238795325112867]}
    - link_name: panda_link5
      object:
        id: strap
        header: {frame_id: world}
        meshes:
          - vertices: [[0.1, 0, 0.5], [0.2, 0, 0.5], [0.1, 0.1, 0.6], [0.15, 0.05, 0.4]]
            triangles: [[0, 1, 2], [0, 1, 3], [1, 2, 3], [0, 2, 3]]
        mesh_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]"""


TOOL_CONE = (
    ("        primitives: [{type: cylinder, dimensions: [0.16, 0.025]}, {type: box, dimensions: [0.12, 0.04, 0.04]}]",
     "        primitives: [{type: cylinder, dimensions: [0.16, 0.025]}, {type: box, dimensions: [0.12, 0.04, 0.04]},"
     " {type: cone, dimensions: [0.08, 0.03]}]"),
    ("          - {position: [0, 0, 0.26], orientation: [0, 0, 0.3826834323650898, 0.9238795325112867]}",
     "          - {position: [0, 0, 0.26], orientation: [0, 0, 0.3826834323650898, 0.9238795325112867]}\n"
     "          - {position: [0, 0, 0.36], orientation: [0, 0, 0, 1]}"))

FUNNEL = """    - id: funnel
      header: {frame_id: world}
      primitives: [{type: cone, dimensions: [0.5, 0.18]}]
      primitive_poses: [{position: [0.35, -0.35, 0.55], orientation: [0.5, 0, 0, 0.8660254037844386]}]"""


WALL = """    - id: wall
      header: {frame_id: world}
      pose: {position: [0.1, 0, 0.2], orientation: [0, 0, 0.3826834323650898, 0.9238795325112867]}
      planes: [{coef: [1, 0.2, 0.1, 0.45]}]
      plane_poses: [{position: [0, 0, 0], orientation: [0, 0, 0, 1]}]"""


def main():
    flags = sys.argv[3:]
    if len(sys.argv) < 3 or any(f not in ("--plane", "--cone") for f in flags):
        sys.exit("usage: attached_scene.py SCENE.yaml OUT.yaml [--plane] [--cone]")
    plane, cone = "--plane" in flags, "--cone" in flags
    block = BLOCK
    if cone:
        for a, b in TOOL_CONE:
            block = block.replace(a, b)
    lines = open(sys.argv[1]).read().split("\n")
    if "robot_state:" not in lines:
        sys.exit(f"attached_scene.py: {sys.argv[1]}: no top-level robot_state mapping")
    if any("attached_collision_objects" in l for l in lines):
        sys.exit(f"attached_scene.py: {sys.argv[1]}: already has attached objects")
    if (plane or cone) and "  collision_objects:" not in lines:
        sys.exit(f"attached_scene.py: {sys.argv[1]}: no world.collision_objects list to add to")
    out = []
    for l in lines:
        out.append(l)
        if l == "robot_state:":
            out.append(block)
        if plane and l == "  collision_objects:":
            out.append(WALL)
        if cone and l == "  collision_objects:":
            out.append(FUNNEL)
    with open(sys.argv[2], "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
