"""Connections, meshes, scenes, stats and the library's loading, against a real tandemd."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import oracle
import tandem
from conftest import MAX_QUERIES, Daemon
from tandem import ServerCode, TandemError


def mesh_id(v, t) -> bytes:
    """proto/README.md's mesh id, computed here from the specification."""
    v = np.asarray(v, dtype="<f4")
    t = np.asarray(t, dtype="<u4")
    h = hashlib.sha256(b"tandem-mesh-v1\0")
    h.update(struct.pack("<II", len(v), len(t)))
    h.update(v.tobytes())
    h.update(t.tobytes())
    return h.digest()


def scene_id(objects, allowed) -> bytes:
    """proto/README.md's scene id: objects as (object_id, mesh id bytes, movable, pose or None)."""
    h = hashlib.sha256(b"tandem-scene-v1\0")
    h.update(struct.pack("<I", len(objects)))
    for oid, mid, movable, pose in sorted(objects, key=lambda o: o[0]):
        h.update(struct.pack("<I", oid) + mid + bytes([1 if movable else 0]))
        if not movable:
            p = np.array(pose if pose is not None else [0, 0, 0, 0, 0, 0, 1], dtype=np.float64)
            p[3:] /= np.linalg.norm(p[3:])
            h.update(p.astype("<f8").tobytes())
    pairs = sorted({(min(a, b), max(a, b)) for a, b in allowed})
    h.update(struct.pack("<I", len(pairs)))
    for a, b in pairs:
        h.update(struct.pack("<II", a, b))
    return h.digest()


def test_connects_over_tcp_and_unix_and_reports_the_server(daemon):
    for addr in (daemon.tcp, daemon.unix, Path(daemon.sock)):
        with tandem.Client(addr) as c:
            info = c.server_info
            assert info.protocol_version == 1
            assert info.engine in ("cpu", "gpu", "hybrid")
            assert info.server_version.startswith("0.")
            assert c.limits.max_queries == MAX_QUERIES
            assert c.limits.max_objects == 1024
            assert c.library_path.endswith("libtandem.so.0")


def test_connection_refused_is_a_tandem_error(tmp_path):
    with pytest.raises(TandemError) as e:
        tandem.Client("unix:" + str(tmp_path / "nobody.sock"), timeout=2)
    assert e.value.client_code == tandem.ClientCode.ECONNECT
    assert not e.value.from_server


def test_mesh_put_list_delete(client):
    rng = np.random.default_rng(7)
    v, t = oracle.soup(rng, 5, 1.0, 0.3)
    mid = client.put_mesh(v, t, name="five")
    assert isinstance(mid, tandem.MeshId) and bytes(mid) == mesh_id(v, t)
    assert str(mid) == mesh_id(v, t).hex()
    # float64 vertices and int32 triangles are converted: the same content, the same id
    assert client.put_mesh(v.astype(np.float64), t.astype(np.int32), name="again") == mid
    listed = {m.id: m for m in client.list_meshes()}
    assert listed[mid].name == "five" and listed[mid].n_vertices == 15 and listed[mid].n_triangles == 5
    assert listed[mid].scenes == 0
    client.delete_mesh(mid)
    assert mid not in {m.id for m in client.list_meshes()}
    with pytest.raises(TandemError) as e:
        client.delete_mesh(str(mid))
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.UNKNOWN_MESH, "mesh_id", -1)
    assert e.value.from_server and e.value.code_name == "unknown mesh"
    # the connection is still usable after a server error
    assert client.put_mesh(v, t) == mid


def test_scene_put_list_delete_and_in_use(client):
    rng = np.random.default_rng(8)
    ev, et = oracle.soup(rng, 6, 1.0, 0.3)
    rv, rt = oracle.soup(rng, 4, 0.3, 0.2)
    env, robot = client.put_mesh(ev, et), client.put_mesh(rv, rt)
    pose = [1.0, 2.0, 3.0, 0.0, 0.0, 0.6, 0.8]
    scene = client.put_scene(
        [tandem.SceneObject.fixed(env, pose, object_id=3), tandem.SceneObject.moving(robot, object_id=7)],
        allowed=[],
        name="tiny",
    )
    assert bytes(scene.id) == scene_id([(3, bytes(env), False, pose), (7, bytes(robot), True, None)], [])
    assert scene.movable == (7,) and scene.created and scene.n_objects == 2
    again = client.put_scene(
        [tandem.SceneObject.fixed(env, pose, object_id=3), tandem.SceneObject.moving(robot, object_id=7)]
    )
    assert again.id == scene.id and not again.created
    listed = {s.id: s for s in client.list_scenes()}
    assert listed[scene.id].movable == (7,) and listed[scene.id].name == "tiny" and listed[scene.id].n_objects == 2
    assert {m.id: m.scenes for m in client.list_meshes()}[env] == 1
    with pytest.raises(TandemError) as e:
        client.delete_mesh(env)
    assert (e.value.code, e.value.field) == (ServerCode.MESH_IN_USE, "mesh_id")
    client.delete_scene(scene)
    assert scene.id not in {s.id for s in client.list_scenes()}
    # a deleted scene is refused by the server
    with pytest.raises(TandemError) as e:
        client.check(scene, oracle.random_poses(rng, 3, 1.0))
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.UNKNOWN_SCENE, "scene_id", -1)
    assert e.value.from_server
    with pytest.raises(TandemError) as e:
        client.delete_scene(scene.id)
    assert e.value.code == ServerCode.UNKNOWN_SCENE
    client.delete_mesh(env)
    client.delete_mesh(robot)


def test_scene_with_allowed_pairs_has_the_specified_id(client):
    rng = np.random.default_rng(9)
    meshes = [client.put_mesh(*oracle.soup(rng, 3, 1.0, 0.3)) for _ in range(3)]
    objs = [tandem.SceneObject.fixed(meshes[0]), tandem.SceneObject.moving(meshes[1]), tandem.SceneObject.moving(meshes[2])]
    scene = client.put_scene(objs, allowed=[(2, 1), (0, 2)])
    want = scene_id([(0, bytes(meshes[0]), False, None), (1, bytes(meshes[1]), True, None), (2, bytes(meshes[2]), True, None)], [(1, 2), (0, 2)])
    assert bytes(scene.id) == want and scene.movable == (1, 2)


def test_ephemeral_scene_is_never_written(client, daemon):
    rng = np.random.default_rng(11)
    env = client.put_mesh(*oracle.soup(rng, 10, 1.0, 0.3))
    robot = client.put_mesh(*oracle.soup(rng, 4, 0.3, 0.2))
    objs = [tandem.SceneObject.fixed(env, object_id=1), tandem.SceneObject.moving(robot, object_id=2)]
    scenes_dir = Path(daemon.root) / "data" / "scenes"
    files = lambda: len(list(scenes_dir.glob("*.scene"))) if scenes_dir.is_dir() else 0  # noqa: E731
    before = files()
    stored = client.put_scene(objs, name="stored")
    assert files() == before + 1
    eph = client.put_scene(objs, name="ephemeral", ephemeral=True)
    assert eph.created and eph.id != stored.id
    assert bytes(eph.id) == hashlib.sha256(b"tandem-ephemeral-v1\0" + bytes(stored.id)).digest()
    assert files() == before + 1, "an ephemeral scene was written"
    poses = oracle.random_poses(rng, 300, 1.0)
    want = client.check(stored, poses)
    assert 0 < want.sum() < len(want)
    assert (client.check(eph, poses) == want).all()
    # the next put without the flag is stored again
    other = client.put_scene([tandem.SceneObject.fixed(robot, object_id=1), tandem.SceneObject.moving(env, object_id=2)])
    assert other.created and files() == before + 2
    client.delete_scene(eph)
    assert files() == before + 2
    with pytest.raises(TandemError) as e:
        client.check(eph, poses[:1])
    assert e.value.code == ServerCode.UNKNOWN_SCENE
    assert client.put_scene(objs, ephemeral=True).created
    for s in (eph, stored, other):
        client.delete_scene(s)
    client.delete_mesh(env)
    client.delete_mesh(robot)


def test_stats_count_queries(own_daemon):
    with tandem.Client(own_daemon.unix) as c:
        rng = np.random.default_rng(10)
        env = c.put_mesh(*oracle.soup(rng, 10, 1.0, 0.3))
        robot = c.put_mesh(*oracle.soup(rng, 4, 0.3, 0.2))
        scene = c.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)])
        before = c.stats()
        c.check(scene, oracle.random_poses(rng, 1234, 1.0))
        after = c.stats()
        assert after.queries - before.queries == 1234
        assert after.requests - before.requests == 3  # two Query batches (max 1000 each) and a Stats
        assert after.engine in ("cpu", "gpu", "hybrid")
        assert after.meshes >= 2 and after.scenes >= 1
        assert after.connections >= 1
        assert after.as_dict()["queries"] == after.queries


def test_context_manager_closes(own_daemon):
    # Counted on a daemon of its own: only its start-up probes may still be closing, so the
    # count is awaited before it is asserted.
    def connections_become(client, n):
        deadline = time.monotonic() + 5
        while client.stats().connections != n and time.monotonic() < deadline:
            time.sleep(0.02)
        return client.stats().connections

    with tandem.Client(own_daemon.tcp) as c:
        assert not c.closed
        assert connections_become(c, 1) == 1
    assert c.closed
    with pytest.raises(TandemError) as e:
        c.list_meshes()
    assert e.value.client_code == tandem.ClientCode.ECLOSED
    c.close()  # idempotent
    # the server saw the connection go
    with tandem.Client(own_daemon.tcp) as other:
        assert connections_become(other, 1) == 1  # the closed one gone, this one counted


def test_auth_token():
    d = Daemon("--auth-token", "s3cret-long-enough-for-128-bits")
    try:
        with pytest.raises(TandemError) as e:
            tandem.Client(d.tcp)
        assert e.value.code == ServerCode.UNAUTHENTICATED and e.value.from_server
        with pytest.raises(TandemError) as e:
            tandem.Client(d.tcp, auth_token="wrong")
        assert e.value.code == ServerCode.UNAUTHENTICATED
        with tandem.Client(d.tcp, auth_token="s3cret-long-enough-for-128-bits") as c:
            assert c.list_meshes() == []
    finally:
        d.cleanup()


def test_io_timeout_argument_checked(daemon):
    with pytest.raises(tandem.InvalidArgument) as e:
        tandem.Client(daemon.tcp, io_timeout=-1)
    assert e.value.field == "io_timeout"


# ---- loading the library --------------------------------------------------------------------


def test_explicit_library_path_that_does_not_exist():
    with pytest.raises(tandem.LibraryNotFound) as e:
        tandem.load_library("/nonexistent/libtandem.so.0")
    assert "argument: /nonexistent/libtandem.so.0" in str(e.value)


def test_explicit_library_path_is_used(daemon):
    path = tandem.load_library().path
    with tandem.Client(daemon.tcp, library=path) as c:
        assert c.library_path == path


def _python(code: str, **env) -> subprocess.CompletedProcess:
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e)


def test_tandem_library_variable_wins_and_failure_names_what_was_tried():
    run = _python("import tandem; tandem.load_library()", TANDEM_LIBRARY="/nowhere/libtandem.so.0")
    assert run.returncode != 0
    assert "TANDEM_LIBRARY: /nowhere/libtandem.so.0" in run.stderr
    assert "libtandem could not be loaded" in run.stderr
    good = tandem.load_library().path
    run = _python("import tandem; print(tandem.load_library().path)", TANDEM_LIBRARY=good)
    assert run.returncode == 0 and run.stdout.strip() == good


def test_not_a_libtandem_is_refused():
    libc = "libc.so.6"
    with pytest.raises(tandem.LibraryNotFound) as e:
        tandem.load_library(libc)
    assert "is not a usable libtandem" in str(e.value) and "tdm_mesh_put" in str(e.value)


@pytest.mark.parametrize("ring", [False, True])
def test_a_forked_child_cannot_use_its_parents_client(daemon, ring):
    """In a child of os.fork() the parent's Client raises a TandemError naming fork instead of mixing
    its frames with the parent's; the parent's connection, over the socket or through rings, goes on."""
    with tandem.Client(daemon.unix, ring=ring) as c:
        assert c.ring_open == ring
        c.stats()
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status only
            code = 1
            try:
                c.stats()
            except TandemError as e:
                code = 0 if "fork()" in str(e) else 2
            except BaseException:
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the child used its parent's Client"
        for _ in range(3):
            c.stats()
        assert c.ring_open == ring
