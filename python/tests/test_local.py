"""The local engine (tandem.LocalRobot, tandem.LocalScene over libtandem's tdm_local_*): test_robots'
two-joint robot and wall, the local copy's ids and answers against tandemd's for the stored robot
and scene, and against that suite's brute-force oracle; bad input; threads. Against a libtandem
without the local engine every entry says so (NotSupported)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tandem
from tandem import InvalidArgument, NotSupported
from test_robots import WORLD, assert_matches_oracle, collides, files  # noqa: F401 (files: a fixture)


def _local(client):
    if not client.has_robots or not client._lib.has_local:
        pytest.skip(f"{client.library_path} has no local engine (the not-supported test covers it)")


def _configs(seed, n):
    rng = np.random.default_rng(seed)
    return np.stack([rng.uniform(-1.2, 1.2, n), rng.uniform(0, 0.3, n)], axis=1)


def test_without_the_local_engine_it_says_so(client, files, monkeypatch):
    lib = tandem.load_library(client.library_path)
    assert lib.has_local == all(hasattr(lib.cdll, s) for s in tandem._library.LOCAL_SYMBOLS)
    monkeypatch.setattr(lib, "has_local", False)
    urdf, _ = files
    with pytest.raises(NotSupported) as e:
        tandem.LocalRobot(urdf, library=lib)
    assert "local engine" in str(e.value)


def test_ids_and_answers_equal_tandemds_and_the_oracle(client, files):
    _local(client)
    urdf, world = files
    srdf = urdf.with_name("stick.srdf")
    robot = client.put_robot(urdf, srdf_path=srdf)
    stored = client.put_robot_scene(robot, world)
    ephemeral = client.put_robot_scene(robot, world, ephemeral=True)
    try:
        local_robot = tandem.LocalRobot(urdf, srdf)
        assert local_robot.id == robot.id
        assert local_robot.n_joints == 2
        scene = local_robot.scene_file(world)
        assert scene.id == stored.id and scene.ephemeral_id == ephemeral.id
        assert local_robot.scene(WORLD).id == stored.id  # the same YAML as text
        configs = _configs(41, 600)
        # bool, one configuration at a time (a planner's), against tandemd's one batch and the oracle
        mine = np.array([scene.check(c[None, :])[0] for c in configs])
        theirs = client.query_configs(stored, configs).colliding
        assert (mine == theirs).all(), f"configurations {configs[mine != theirs][:5].tolist()} differ from tandemd"
        assert_matches_oracle(mine, configs, collides)
        # contacts mode: counts, truncation and the smallest pair, at tandemd's limit and a cap of 2
        for cap in (0, 2):
            a = scene.query(configs, mode="contacts", max_contacts=cap)
            b = client.query_configs(stored, configs, mode="contacts", max_contacts=cap)
            assert (a.colliding == b.colliding).all()
            assert (a.contacts == b.contacts).all()
            assert (a.truncated == b.truncated).all()
            assert (a.object_pair == b.object_pair).all()
            assert a.pairs is None
        assert a.truncated.any(), "the cap of 2 contacts is reached"
        # bool mode's pair is a colliding pair of the scene's objects
        r = scene.query(configs)
        hit = r.colliding
        assert (r.object_pair[~hit] == -1).all()
        assert ((r.object_pair[hit, 0] < r.object_pair[hit, 1]) & (r.object_pair[hit, 1] < len(stored.objects))).all()
        # a world that differs by a comment is another scene
        other = local_robot.scene(WORLD + "# another\n")
        assert other.id != stored.id
        for s in (scene, other):
            s.close()
        local_robot.close()
    finally:  # leave the session's tandemd as it was (test_robots stores this robot under its own name)
        client.delete_scene(ephemeral)
        client.delete_scene(stored)
        client.delete_robot(robot)


def test_bad_input_is_refused(client, files, tmp_path):
    _local(client)
    urdf, world = files
    with pytest.raises(InvalidArgument) as e:
        tandem.LocalRobot(tmp_path / "missing.urdf")
    assert e.value.field == "urdf" and "missing.urdf" in e.value.message
    (tmp_path / "nomesh.urdf").write_text(urdf.read_text().replace("meshes/tip.obj", "meshes/gone.obj"))
    with pytest.raises(InvalidArgument) as e:
        tandem.LocalRobot(tmp_path / "nomesh.urdf")
    assert "nomesh.urdf:" in e.value.message and "gone.obj" in e.value.message
    robot = tandem.LocalRobot(urdf, urdf.with_name("stick.srdf"))
    with pytest.raises(InvalidArgument) as e:
        robot.scene("world:\n  collision_objects:\n    - id: x\n      primitives: [{type: box, dimensions: [1]}]\n")
    assert e.value.field == "world" and e.value.message.startswith("world:")
    with pytest.raises(InvalidArgument):
        robot.scene(b"world: {}\n")
    with pytest.raises(InvalidArgument) as e:
        robot.scene_file(tmp_path / "missing.yaml")
    assert "missing.yaml" in e.value.message
    scene = robot.scene_file(world)
    with pytest.raises(InvalidArgument) as e:
        scene.check(np.zeros((3, 3)))
    assert e.value.field == "configs"
    bad = np.zeros((3, 2))
    bad[2, 0] = np.inf
    with pytest.raises(InvalidArgument) as e:
        scene.check(bad)
    assert e.value.field == "configs" and e.value.index == 2
    with pytest.raises(InvalidArgument):
        scene.query(np.zeros((1, 2)), mode="all")
    with pytest.raises(InvalidArgument):
        scene.query(np.zeros((1, 2)), mode="contacts", max_contacts=-1)
    assert scene.check(np.zeros((0, 2))).shape == (0,)
    want = scene.check(_configs(43, 50))
    with pytest.raises(InvalidArgument):
        robot.close()  # a scene is open
    assert (scene.check(_configs(43, 50)) == want).all(), "the refusals changed nothing"
    scene.close()
    with pytest.raises(InvalidArgument):
        scene.check(np.zeros((1, 2)))
    robot.close()
    with pytest.raises(InvalidArgument):
        robot.scene(WORLD)


def test_threads_share_a_scene(client, files):
    _local(client)
    urdf, world = files
    robot = tandem.LocalRobot(urdf, urdf.with_name("stick.srdf"))
    scene = robot.scene_file(world)
    configs = _configs(47, 300)
    want = scene.query(configs, mode="contacts")
    got = [None] * 4

    def work(i):
        got[i] = [scene.query(c[None, :], mode="contacts") for c in configs]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for answers in got:
        assert np.array_equal(np.array([a.contacts[0] for a in answers]), want.contacts)
        assert np.array_equal(np.stack([a.object_pair[0] for a in answers]), want.object_pair)
