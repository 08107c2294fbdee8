"""The robot half of the API: arguments are checked in Python; with a libtandem that has no robot
calls every method says so (NotSupported, also a NotImplementedError); motion_states follows the
issue's formula."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tandem
from tandem import InvalidArgument, NotSupported, ServerCode

URDF = """<?xml version="1.0"?>
<robot name="stick">
  <link name="base"><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>
  <link name="arm"><collision><geometry><box size="0.5 0.05 0.05"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""
WORLD = """world:
  collision_objects:
    - id: wall
      primitives: [{type: box, dimensions: [0.1, 1, 1]}]
      primitive_poses: [{position: [0.6, 0, 0], orientation: [0, 0, 0, 1]}]
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "stick.urdf").write_text(URDF)
    (tmp_path / "world.yaml").write_text(WORLD)
    return tmp_path / "stick.urdf", tmp_path / "world.yaml"


@pytest.fixture
def robot_scene():
    robot = tandem.Robot(tandem.RobotId(b"\1" * 32), (tandem.Joint("j1", -1.0, 1.0), tandem.Joint("j2", -2.0, 2.0)))
    return tandem.RobotScene(tandem.SceneId(b"\2" * 32), robot)


def test_without_robot_support_every_call_says_so(client, files, robot_scene):
    if client.has_robots:
        pytest.fail("this libtandem exports robot calls: bind them in tandem/robots.py and test them here")
    urdf, world = files
    calls = [
        lambda: client.put_robot(urdf),
        lambda: client.put_robot(urdf, srdf_path=None, name="stick"),
        lambda: client.list_robots(),
        lambda: client.delete_robot(robot_scene.robot),
        lambda: client.put_robot_scene(robot_scene.robot, world),
        lambda: client.check(robot_scene, np.zeros((3, 2))),
        lambda: client.query_configs(robot_scene, np.zeros((3, 2)), mode="contacts"),
        lambda: client.motions(robot_scene, np.zeros((3, 2)), np.ones((3, 2)), 0.05),
    ]
    for call in calls:
        with pytest.raises(NotSupported) as e:
            call()
        assert "this libtandem has no robot support" in str(e.value)
        assert "tdm_robot_put" in str(e.value)
        assert isinstance(e.value, NotImplementedError)


def test_robot_arguments_are_checked_first(client, files, robot_scene, tmp_path):
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
        client.check(robot_scene, np.zeros((3, 3)))  # J is 2
    assert e.value.field == "configs"
    c = np.zeros((4, 2))
    c[3, 1] = np.nan
    with pytest.raises(InvalidArgument) as e:
        client.check(robot_scene, c)
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.NON_FINITE, "configs", 3)
    with pytest.raises(InvalidArgument) as e:
        client.motions(robot_scene, np.zeros((3, 2)), np.zeros((2, 2)), 0.1)
    assert e.value.field == "ends"
    for r in (0, -1, math.inf, math.nan):
        with pytest.raises(InvalidArgument) as e:
            client.motions(robot_scene, np.zeros((3, 2)), np.zeros((3, 2)), r)
        assert e.value.field == "resolution"
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
