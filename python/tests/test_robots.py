"""Robots: a two-joint robot of boxes (one of them a mesh file) in a MoveIt planning scene,
joint-space queries and motion checks against a brute-force oracle (forward kinematics written
here, boxes as triangles, oracle.py's triangle test, and the wall a solid box as in FCL). Against a libtandem without robot calls the
suite checks that every call says so (NotSupported) and skips the rest with that reason."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import oracle
import tandem
from conftest import MAX_QUERIES
from tandem import InvalidArgument, NotSupported, ServerCode, TandemError

# base (0.1 cube at the origin) -j1 revolute z-> arm (0.5 x 0.05 x 0.05 box centred 0.35 along x)
# -j2 prismatic x, origin 0.6 along x-> tip (0.08 cube, a mesh file). The wall: x in [0.7, 0.8].
URDF = """<?xml version="1.0"?>
<robot name="stick">
  <link name="base"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <link name="arm">
    <collision><origin xyz="0.35 0 0"/><geometry><box size="0.5 0.05 0.05"/></geometry></collision>
  </link>
  <link name="tip"><collision><geometry><mesh filename="meshes/tip.obj"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1.5" upper="1.5" effort="1" velocity="1"/></joint>
  <joint name="j2" type="prismatic"><parent link="arm"/><child link="tip"/><origin xyz="0.6 0 0"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.3" effort="1" velocity="1"/></joint>
</robot>
"""
# Adjacent and other link pairs are never checked (the SRDF): boxes turning about one axis have
# parallel edges, where the oracle's general-position test cannot decide. The wall is tilted for
# the same reason.
SRDF = """<?xml version="1.0"?>
<robot name="stick">
  <disable_collisions link1="base" link2="arm" reason="Adjacent"/>
  <disable_collisions link1="arm" link2="tip" reason="Adjacent"/>
  <disable_collisions link1="base" link2="tip" reason="Never"/>
</robot>
"""
WALL_POSE = np.array([0.75, 0.0, 0.0, *(np.array([0.05, 0.03, 0.02, 1.0]) / np.linalg.norm([0.05, 0.03, 0.02, 1.0]))])
WORLD = f"""world:
  collision_objects:
    - id: wall
      primitives: [{{type: box, dimensions: [0.1, 2, 1]}}]
      primitive_poses: [{{position: {WALL_POSE[:3].tolist()}, orientation: {WALL_POSE[3:].tolist()}}}]
"""
TIP = 0.08


def box_mesh(size, centre=(0.0, 0.0, 0.0)):
    """A box's surface as 8 corners and 12 triangles."""
    h = np.asarray(size, dtype=np.float64) / 2
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64) * h
    corners += np.asarray(centre)
    tris = np.array(
        [[0, 1, 3], [0, 3, 2], [4, 6, 7], [4, 7, 5], [0, 4, 5], [0, 5, 1],
         [2, 3, 7], [2, 7, 6], [0, 2, 6], [0, 6, 4], [1, 5, 7], [1, 7, 3]]
    )  # fmt: skip
    return corners, tris


def links_of(config):
    """World-frame triangles of each link, by forward kinematics of this URDF."""
    theta, d = config
    c, s = math.cos(theta), math.sin(theta)
    rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    base = oracle.place(*box_mesh([0.1] * 3))
    v, t = box_mesh([0.5, 0.05, 0.05], (0.35, 0, 0))
    arm = (v @ rz.T)[t]
    v, t = box_mesh([TIP] * 3, (0.6 + d, 0, 0))
    tip = (v @ rz.T)[t]
    return [base, arm, tip]


WALL = oracle.place(*box_mesh([0.1, 2, 1]), WALL_POSE)
WALL_HALF = np.array([0.05, 1.0, 0.5])


def _rotation(q):
    """The rotation matrix of a unit quaternion (x, y, z, w)."""
    x, y, z, w = q
    return np.array(
        [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
         [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
         [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    )  # fmt: skip


WALL_R = _rotation(WALL_POSE[3:])


def inside_wall(tris):
    """(inside, near): does a vertex of these triangles lie inside the solid wall, and does one lie
    within 1e-6 of its surface. The wall is a box primitive, a solid as in FCL: a link wholly inside
    it collides though no triangles meet (workpile/solid.h)."""
    p = (tris.reshape(-1, 3) - WALL_POSE[:3]) @ WALL_R  # world -> the wall's frame
    m = np.max(np.abs(p) - WALL_HALF, axis=1)  # < 0 inside
    return bool((m < -1e-6).any()), bool((np.abs(m) <= 1e-6).any())


def collides(config):
    """(colliding, ambiguous): every link against the wall (the SRDF disables link pairs): triangles
    that meet, or a link vertex inside the solid wall (then the link crosses its surface, or lies wholly
    inside it)."""
    pairs = [(p, WALL) for p in links_of(config)]
    hit = tight = False
    for a, b in pairs:
        h, t = oracle.intersecting(a, b)
        inside, near = inside_wall(a)
        hit |= bool(h.any()) or inside
        tight |= bool(t.any()) or near
    return hit, tight


def assert_matches_oracle(got, configs, oracle):
    """Asserts the answers `got` equal oracle(config)'s, leaving out the few configurations the
    oracle marks as within its tolerance of touching, and that both answers occur; returns the
    oracle's answers."""
    n = len(configs)
    answers = [oracle(c) for c in configs]
    expect = np.array([a for a, _ in answers])
    keep = ~np.array([t for _, t in answers])
    assert keep.sum() >= n - 5
    bad = np.flatnonzero(got[keep] != expect[keep])
    assert bad.size == 0, f"configurations {configs[keep][bad][:5].tolist()} differ from the oracle"
    assert 0.1 * n < expect.sum() < 0.9 * n
    return expect


@pytest.fixture
def files(tmp_path):
    (tmp_path / "meshes").mkdir()
    v, t = box_mesh([TIP] * 3)
    with open(tmp_path / "meshes" / "tip.obj", "w") as f:
        f.writelines("v %.9g %.9g %.9g\n" % tuple(x) for x in v)
        f.writelines("f %d %d %d\n" % tuple(i + 1 for i in tri) for tri in t)
    (tmp_path / "stick.urdf").write_text(URDF)
    (tmp_path / "world.yaml").write_text(WORLD)
    (tmp_path / "stick.srdf").write_text(SRDF)
    return tmp_path / "stick.urdf", tmp_path / "world.yaml"


@pytest.fixture
def fake_scene():
    robot = tandem.Robot(tandem.RobotId(b"\1" * 32), (tandem.Joint("j1", -1.0, 1.0), tandem.Joint("j2", -2.0, 2.0)))
    return tandem.RobotScene(tandem.SceneId(b"\2" * 32), robot)


def _robots(client):
    if not client.has_robots:
        pytest.skip(f"{client.library_path} has no robot calls (the not-supported test covers it)")


# ---- without robot support -------------------------------------------------------------------


def test_without_robot_support_every_call_says_so(client, files, fake_scene, monkeypatch):
    symbols = all(hasattr(client._lib.cdll, s) for s in tandem._library.ROBOT_SYMBOLS)
    assert client.has_robots == symbols
    monkeypatch.setattr(client._lib, "has_robots", False)  # what a library without them does
    urdf, world = files
    calls = [
        lambda: client.put_robot(urdf),
        lambda: client.put_robot(urdf, srdf_path=None, name="stick"),
        lambda: client.list_robots(),
        lambda: client.delete_robot(fake_scene.robot),
        lambda: client.put_robot_scene(fake_scene.robot, world),
        lambda: client.put_robot_scene_text(fake_scene.robot, "world: {}\n"),
        lambda: client.check(fake_scene, np.zeros((3, 2))),
        lambda: client.query_configs(fake_scene, np.zeros((3, 2)), mode="contacts"),
        lambda: client.motions(fake_scene, np.zeros((3, 2)), np.ones((3, 2)), 0.05),
    ]
    for call in calls:
        with pytest.raises(NotSupported) as e:
            call()
        assert "this libtandem has no robot support" in str(e.value)
        assert isinstance(e.value, NotImplementedError)


def test_robot_arguments_are_checked_first(client, files, fake_scene, tmp_path):
    urdf, world = files
    with pytest.raises(InvalidArgument) as e:
        client.put_robot(tmp_path / "missing.urdf")
    assert e.value.field == "urdf" and "missing.urdf" in e.value.message
    with pytest.raises(InvalidArgument) as e:
        client.put_robot(urdf, srdf_path=tmp_path / "missing.srdf")
    assert e.value.field == "srdf"
    with pytest.raises(InvalidArgument) as e:
        client.put_robot_scene("not a robot", world)
    assert e.value.field == "robot"
    with pytest.raises(InvalidArgument) as e:
        client.check(fake_scene, np.zeros((3, 3)))  # J is 2
    assert e.value.field == "configs"
    c = np.zeros((4, 2))
    c[3, 1] = np.nan
    with pytest.raises(InvalidArgument) as e:
        client.check(fake_scene, c)
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.NON_FINITE, "configs", 3)
    with pytest.raises(InvalidArgument) as e:
        client.motions(fake_scene, np.zeros((3, 2)), np.zeros((2, 2)), 0.1)
    assert e.value.field == "ends"
    for r in (0, -1, math.inf, math.nan):
        with pytest.raises(InvalidArgument) as e:
            client.motions(fake_scene, np.zeros((3, 2)), np.zeros((3, 2)), r)
        assert e.value.field == "resolution"
    with pytest.raises(InvalidArgument) as e:
        client.motions(fake_scene, np.zeros((2, 2)), [[0, 0], [1e9, 0]], 1e-3)  # 1e12 states
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.LIMIT, "motions", 1)
    with pytest.raises(InvalidArgument) as e:
        client.motions("scene", np.zeros((3, 2)), np.zeros((3, 2)), 0.1)
    assert e.value.field == "scene"


def test_motion_states_formula():
    a = np.array([0.0, 1.0, -1.0])
    b = np.array([0.25, 1.0, -1.1])
    s = tandem.motion_states(a, b, 0.1)  # max |b - a| = 0.25: ceil(2.5) + 1 = 4 states
    assert s.shape == (4, 3)
    np.testing.assert_array_equal(s[0], a)
    np.testing.assert_array_equal(s[-1], a + 1.0 * (b - a))
    for k in range(4):
        np.testing.assert_array_equal(s[k], a + (k / 3) * (b - a))
    assert tandem.motion_states(a, a, 0.1).shape == (2, 3)  # at least the two ends
    assert tandem.motion_states(a, b, 0.25).shape == (2, 3)  # ceil(1) + 1
    assert tandem.motion_states(a, b, 0.2499).shape == (3, 3)
    with pytest.raises(InvalidArgument) as e:
        tandem.motion_states(a, b, 1e-9)  # 2.5e8 states: over the limit
    assert e.value.field == "resolution"


# ---- with robot support ----------------------------------------------------------------------


@pytest.fixture
def stick(client, files):
    _robots(client)
    urdf, world = files
    robot = client.put_robot(urdf, urdf.with_suffix(".srdf"), name="stick")
    scene = client.put_robot_scene(robot, world, name="wall")
    yield robot, scene
    client.delete_scene(scene)
    client.delete_robot(robot)


def test_robot_put_list_and_scene(client, stick):
    robot, scene = stick
    assert robot.joints == (tandem.Joint("j1", -1.5, 1.5), tandem.Joint("j2", 0.0, 0.3))
    assert (robot.n_links, robot.n_elements) == (3, 3)
    listed = {r.id: r for r in client.list_robots()}
    assert listed[robot.id].joints == robot.joints and listed[robot.id].scenes == 1
    assert listed[robot.id].name == "stick"
    assert scene.n_joints == 2
    movable = sorted((o.link, o.element) for o in scene.objects if o.movable)
    fixed = [(o.world_object, o.shape) for o in scene.objects if not o.movable]
    assert movable == [("arm", 0), ("base", 0), ("tip", 0)] and fixed == [("wall", 0)]
    assert scene.n_checks == 3  # three links against the wall; the SRDF disables the link pairs
    assert {s.id: s.robot_id for s in client.list_scenes()}[scene.id] == robot.id
    with pytest.raises(TandemError) as e:
        client.delete_robot(robot)
    assert e.value.code == ServerCode.ROBOT_IN_USE and e.value.from_server


def test_configurations_match_oracle(client, stick):
    robot, scene = stick
    rng = np.random.default_rng(31)
    n = MAX_QUERIES + 300  # two batches
    configs = np.stack([rng.uniform(-1.2, 1.2, n), rng.uniform(0, 0.3, n)], axis=1)
    got = client.check(scene, configs)
    assert got.shape == (n,) and got.dtype == np.bool_
    expect = assert_matches_oracle(got, configs, collides)
    res = client.query_configs(scene, configs[:200], mode="contacts", max_contacts=500, want_pairs=True)
    np.testing.assert_array_equal(res.colliding, got[:200])
    wall = [o.object_id for o in scene.objects if o.world_object == "wall"]
    links = {o.object_id: o.link for o in scene.objects if o.movable}
    for i in np.flatnonzero(res.colliding):
        a, b = res.object_pair[i]
        assert {int(a), int(b)} - set(links) == set(wall)  # a link against the wall
        pairs = res.pairs_of(i)
        assert len(pairs) == res.contacts[i]
        if len(pairs) == 0:  # colliding by containment alone: a link wholly inside the solid wall
            assert any(inside_wall(p)[0] for p in links_of(configs[i])), f"config {i}: no pair, no link inside"
            continue
        # each pair names a link whose box is the oracle's colliding one
        hit_links = {links[int(p[0])] if int(p[0]) in links else links[int(p[2])] for p in pairs}
        parts = dict(zip(("base", "arm", "tip"), links_of(configs[i])))
        for name in hit_links:
            assert oracle.intersecting(parts[name], WALL)[0].any(), f"config {i}: {name}"


def test_ephemeral_robot_scene_answers_as_the_stored_one(client, stick, files, daemon):
    robot, scene = stick
    _, world = files
    rscenes = Path(daemon.root) / "data" / "robot-scenes"
    before = len(list(rscenes.glob("*.rscene")))
    eph = client.put_robot_scene(robot, world, name="wall, ephemeral", ephemeral=True)
    assert eph.created and eph.id != scene.id and eph.n_checks == scene.n_checks
    assert len(list(rscenes.glob("*.rscene"))) == before, "an ephemeral robot scene was written"
    rng = np.random.default_rng(37)
    configs = np.stack([rng.uniform(-1.2, 1.2, 400), rng.uniform(0, 0.3, 400)], axis=1)
    want = client.check(scene, configs)
    assert 0 < want.sum() < len(want)
    np.testing.assert_array_equal(client.check(eph, configs), want)
    client.delete_scene(eph)
    assert len(list(rscenes.glob("*.rscene"))) == before


def test_scene_from_text_is_the_file_scene(client, stick, files):
    """put_robot_scene_text stores the same content as put_robot_scene of the same YAML in a file:
    the same id, told it was stored already; text that is not a str, or holds a NUL, is refused
    before anything is sent."""
    robot, scene = stick
    _, world = files
    text = open(world).read()
    again = client.put_robot_scene_text(robot, text, name="from text")
    assert again.id == scene.id and not again.created
    assert again.objects == scene.objects and again.n_checks == scene.n_checks
    with pytest.raises(TandemError) as e:
        client.put_robot_scene_text(robot, text.encode())
    assert e.value.field == "world"
    with pytest.raises(TandemError) as e:
        client.put_robot_scene_text(robot, "world:\0\n")
    assert e.value.field == "world" and "NUL" in str(e.value)
    with pytest.raises(TandemError) as e:
        client.put_robot_scene_text(robot, "world: [\n")
    assert e.value.code == ServerCode.BAD_ROBOT and e.value.from_server


def test_configuration_errors_from_the_server(client, stick, monkeypatch):
    robot, scene = stick
    configs = np.zeros((MAX_QUERIES + 300, 2))
    configs[MAX_QUERIES + 200, 1] = np.nan
    import tandem._arrays as arrays

    real = arrays.configurations
    monkeypatch.setattr(arrays, "configurations", lambda x, j, f: np.ascontiguousarray(x, dtype=np.float64))
    with pytest.raises(TandemError) as e:
        client.check(scene, configs)
    # the server counts numbers: query 1200's second joint
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.NON_FINITE, "configs", 2 * (MAX_QUERIES + 200) + 1)
    monkeypatch.setattr(arrays, "configurations", real)
    assert client.check(scene, np.zeros((2, 2))).shape == (2,)


def test_motions_match_oracle(client, stick):
    robot, scene = stick
    rng = np.random.default_rng(32)
    m = 60
    starts = np.stack([rng.uniform(-1.2, 1.2, m), rng.uniform(0, 0.3, m)], axis=1)
    ends = np.stack([rng.uniform(-1.2, 1.2, m), rng.uniform(0, 0.3, m)], axis=1)
    r = 0.05
    res = client.motion_check(scene, starts, ends, r)
    np.testing.assert_array_equal(client.motions(scene, starts, ends, r), res.first_colliding)
    compared = 0
    for i in range(m):
        states = tandem.motion_states(starts[i], ends[i], r)
        assert res.n_states[i] == len(states)
        first, ambiguous = -1, False
        for k, q in enumerate(states):
            hit, tight = collides(q)
            ambiguous |= tight
            if hit:
                first = k
                break
        if ambiguous:
            continue
        compared += 1
        assert res.first_colliding[i] == first, f"motion {i}: {res.first_colliding[i]}, oracle {first}"
        if first == 0:
            assert np.isnan(res.last_free[i]).all()
        else:
            want = states[first - 1] if first > 0 else states[-1]
            np.testing.assert_array_equal(res.last_free[i], want)
    assert compared >= m - 2
    assert 0 < (res.first_colliding >= 0).sum() < m
    assert (res.first_colliding > 0).any()


def test_motions_any_state(client, stick):
    """any_state: free motions answer -1 as before; a colliding motion answers some colliding
    state at or after its first one, with no last free state (NaN), and some answer lies past
    the first collision (the server's probes: end, middle, quarters)."""
    robot, scene = stick
    rng = np.random.default_rng(33)
    m = 200
    # long motions (j1 across most of its range) at a fine resolution: many states each, so that
    # a probe lands inside a collision after the first colliding state
    starts = np.stack([rng.uniform(-1.2, 1.2, m), rng.uniform(0, 0.3, m)], axis=1)
    ends = np.stack([rng.uniform(-1.2, 1.2, m), rng.uniform(0, 0.3, m)], axis=1)
    r = 0.01
    want = client.motion_check(scene, starts, ends, r)
    got = client.motion_check(scene, starts, ends, r, any_state=True)
    np.testing.assert_array_equal(client.motions(scene, starts, ends, r, any_state=True), got.first_colliding)
    np.testing.assert_array_equal(got.n_states, want.n_states)
    free = want.first_colliding < 0
    assert 0 < free.sum() < m
    np.testing.assert_array_equal(got.first_colliding[free], -1)
    np.testing.assert_array_equal(got.last_free[free], want.last_free[free])  # the ends
    hit = np.flatnonzero(~free)
    k = got.first_colliding[hit]
    assert (k >= want.first_colliding[hit]).all() and (k < got.n_states[hit].astype(np.int64)).all()
    assert np.isnan(got.last_free[hit]).all()
    q = np.array([tandem.motion_states(starts[i], ends[i], r)[k_i] for i, k_i in zip(hit, k)])
    for i, k_i, qi in zip(hit, k, q):  # q_k = a + k/(n-1) (b - a)
        n = int(got.n_states[i])
        np.testing.assert_allclose(qi, starts[i] + k_i / (n - 1) * (ends[i] - starts[i]), rtol=0, atol=1e-12)
    assert client.check_configs(scene, q).all(), "an any_state answer is a free state"
    assert (k > want.first_colliding[hit]).any(), "no motion answered past its first collision"


def test_motions_any_state_without_the_flags_call(client, stick, monkeypatch):
    """A libtandem without tdm_motion_check_flags: any_state says so, the default call works."""
    robot, scene = stick
    monkeypatch.setattr(client._lib, "has_motion_flags", False)
    starts, ends = np.zeros((3, 2)), np.full((3, 2), 0.2)
    with pytest.raises(NotSupported) as e:
        client.motions(scene, starts, ends, 0.05, any_state=True)
    assert "tdm_motion_check_flags" in str(e.value)
    assert client.motions(scene, starts, ends, 0.05).shape == (3,)


# An object held by the tip (robot_state.attached_collision_objects), in the tip's frame: a rod
# along x through the tip cube (its own link) and over the arm's end while j2 < 0.1 (a touch
# link), reaching 0.16 past the tip's origin where the cube reaches 0.04, and a tab beside it.
# Centre and size of each box.
HELD = [((0.03, 0.0, 0.0), (0.26, 0.02, 0.02)), ((0.1, 0.05, 0.0), (0.04, 0.04, 0.04))]
HELD_WORLD = """robot_state:
  attached_collision_objects:
    - link_name: {link}
      touch_links: [arm]
      object:
        id: probe
        header: {{frame_id: tip}}
        primitives: [{{type: box, dimensions: {s0}}}, {{type: box, dimensions: {s1}}}]
        primitive_poses: [{{position: {c0}, orientation: [0, 0, 0, 1]}},
                          {{position: {c1}, orientation: [0, 0, 0, 1]}}]
"""


def held_world(link="tip"):
    """WORLD with HELD attached to ``link``."""
    (c0, s0), (c1, s1) = HELD
    return HELD_WORLD.format(link=link, c0=list(c0), s0=list(s0), c1=list(c1), s1=list(s1)) + WORLD


def held_collides(config):
    """(colliding, ambiguous) with the tip holding HELD: the links as ``collides``, and the held
    boxes against the wall only (the tip is their link, the arm a touch link, the base beyond
    their reach)."""
    hit, tight = collides(config)
    theta, d = config
    c, s = math.cos(theta), math.sin(theta)
    rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    for centre, size in HELD:
        v, t = box_mesh(size, np.asarray(centre) + (0.6 + d, 0, 0))
        tris = (v @ rz.T)[t]
        h, tt = oracle.intersecting(tris, WALL)
        inside, near = inside_wall(tris)
        hit |= bool(h.any()) or inside
        tight |= bool(tt.any()) or near
    return hit, tight


def test_attached_object_moves_with_its_link(client, stick, tmp_path):
    """A held object's shapes are movable objects after the links (``attached``: the link they
    move with, the object's id, the shape's index), the wall after them; configurations answer as
    the oracle with the tip holding it, some colliding only because of it; a link_name of no link
    is refused naming the object."""
    robot, wall_scene = stick
    (tmp_path / "held.yaml").write_text(held_world())
    scene = client.put_robot_scene(robot, tmp_path / "held.yaml", name="held")
    try:
        assert scene.created and scene.n_joints == 2
        objs = sorted(scene.objects, key=lambda o: o.object_id)
        assert [o.object_id for o in objs] == list(range(6))
        assert sorted((o.link, o.element, o.attached) for o in objs[:3] if o.movable) == [
            ("arm", 0, False), ("base", 0, False), ("tip", 0, False)
        ]  # fmt: skip
        held = [(o.object_id, o.movable, o.attached, o.link, o.world_object, o.shape) for o in objs[3:5]]
        assert held == [(3, True, True, "tip", "probe", 0), (4, True, True, "tip", "probe", 1)]
        wall = objs[5]
        assert (wall.movable, wall.attached, wall.world_object, wall.shape) == (False, False, "wall", 0)
        # the links and the held shapes against the wall, the held shapes against the base
        assert scene.n_checks == 7

        # by hand: level, the tip's cube (x <= 0.64) clears the wall (x >= ~0.70) and the rod
        # (x <= 0.76) does not; turned away, nothing reaches it (the rod over the arm's end is a
        # touch link's); pushed out, the tip itself meets it
        known = np.array([[0.0, 0.0], [1.2, 0.0], [0.0, 0.12]])
        np.testing.assert_array_equal(client.check(wall_scene, known), [False, False, True])
        np.testing.assert_array_equal(client.check(scene, known), [True, False, True])
        res = client.query_configs(scene, known[:1])
        assert sorted(int(x) for x in res.object_pair[0]) in ([3, 5], [4, 5])  # a held shape and the wall

        rng = np.random.default_rng(41)
        n = 400
        configs = np.stack([rng.uniform(-1.2, 1.2, n), rng.uniform(0, 0.3, n)], axis=1)
        got = client.check(scene, configs)
        expect = assert_matches_oracle(got, configs, held_collides)
        held_only = expect & ~client.check(wall_scene, configs)
        assert held_only.sum() > 0.05 * n, "no configuration collides only because of the held object"
        assert (~got & (configs[:, 1] < 0.1)).any(), "no free configuration with the rod over the arm"
    finally:
        client.delete_scene(scene)

    before = {s.id for s in client.list_scenes()}
    (tmp_path / "nowhere.yaml").write_text(held_world("hand"))
    with pytest.raises(TandemError) as e:
        client.put_robot_scene(robot, tmp_path / "nowhere.yaml")
    assert e.value.code == ServerCode.BAD_ROBOT and e.value.from_server
    assert "'probe'" in e.value.message and "'hand'" in e.value.message
    # nothing added (an earlier test's ephemeral scene may go meanwhile: the daemon is shared)
    assert {s.id for s in client.list_scenes()} <= before

def test_bad_robot_files(client, files, tmp_path):
    _robots(client)
    urdf, world = files
    bad = tmp_path / "bad.urdf"
    bad.write_text(URDF.replace('<child link="tip"/>', '<child link="nowhere"/>'))
    with pytest.raises(TandemError) as e:
        client.put_robot(bad)
    assert "nowhere" in str(e.value)
    (tmp_path / "meshes" / "tip.obj").unlink()
    with pytest.raises(TandemError) as e:
        client.put_robot(urdf)
    assert "tip.obj" in str(e.value)


def test_multi_client_robots_match_one_server(files):
    """Robots on several servers: MultiClient stores the robot and its scene on each, spreads
    configurations and motions over them, and answers as one server does (and as the oracle)."""
    from conftest import Daemon

    ds = [Daemon() for _ in range(2)]
    try:
        urdf, world = files
        with tandem.MultiClient([d.tcp for d in ds]) as mc:
            if not mc._lib.has_multi_robots:
                pytest.skip("this libtandem has no robots on several servers")
            robot = mc.put_robot(urdf, urdf.with_suffix(".srdf"), name="stick")
            assert robot.joints == (tandem.Joint("j1", -1.5, 1.5), tandem.Joint("j2", 0.0, 0.3))
            assert (robot.n_links, robot.n_elements) == (3, 3)
            scene = mc.put_robot_scene(robot, world, name="wall")
            again = mc.put_robot_scene_text(robot, open(world).read(), name="wall, from text")
            assert again.id == scene.id and not again.created  # the same content on every server
            if mc._lib.has_multi_ephemeral:  # an ephemeral one too, on every server, written on none
                eph = mc.put_robot_scene(robot, world, name="wall, ephemeral", ephemeral=True)
                assert eph.id != scene.id
                for d in ds:
                    with tandem.Client(d.tcp) as c:
                        assert eph.id in [s.id for s in c.list_scenes()]
                        c.delete_scene(eph)
                    assert len(list((Path(d.root) / "data" / "robot-scenes").glob("*.rscene"))) == 1
            for d in ds:  # every server holds the robot and the scene
                with tandem.Client(d.tcp) as c:
                    assert [r.id for r in c.list_robots()] == [robot.id]
                    assert scene.id in [s.id for s in c.list_scenes()]
            rng = np.random.default_rng(77)
            n = 3000
            configs = np.stack([rng.uniform(-1.2, 1.2, n), rng.uniform(0, 0.3, n)], axis=1)
            got = mc.check_configs(scene, configs)
            with tandem.Client(ds[0].tcp) as c:
                one_scene = c.put_robot_scene(c.put_robot(urdf, urdf.with_suffix(".srdf")), world)
                assert one_scene.id == scene.id  # content ids: the same scene
                want = c.check(one_scene, configs)
                starts, ends = configs[:500], configs[500:1000]
                want_m = c.motions(one_scene, starts, ends, 0.02)
            np.testing.assert_array_equal(got, want)
            answers = [collides(q) for q in configs[:300]]
            keep = ~np.array([t for _, t in answers])
            expect = np.array([a for a, _ in answers])
            assert (got[:300][keep] == expect[keep]).all()
            assert 0.1 * n < got.sum() < 0.9 * n
            contacts = mc.query_configs(scene, configs[:400], mode="contacts", max_contacts=50)
            np.testing.assert_array_equal(contacts.colliding, got[:400])
            np.testing.assert_array_equal(mc.motions(scene, starts, ends, 0.02), want_m)
            assert (want_m >= 0).any() and (want_m < 0).any()
            if mc._lib.has_multi_motion_flags:  # any_state: as one server answers it
                with tandem.Client(ds[0].tcp) as c:
                    want_any = c.motions(one_scene, starts, ends, 0.02, any_state=True)
                got_any = mc.motions(scene, starts, ends, 0.02, any_state=True)
                np.testing.assert_array_equal(got_any, want_any)
                np.testing.assert_array_equal(got_any < 0, want_m < 0)
                assert (got_any >= want_m).all()
            with pytest.raises(TandemError) as e:
                mc.put_robot(urdf.with_name("missing.urdf"))
            assert e.value.field == "urdf"
    finally:
        for d in ds:
            d.cleanup()
