"""Bad input: refused in Python before anything is sent, with the code, field and index the
server would give; and the server's own refusals, with indices counted over the whole call."""

from __future__ import annotations

import numpy as np
import pytest

import oracle
import tandem
from conftest import MAX_QUERIES, serve
from tandem import InvalidArgument, ServerCode, TandemError


@pytest.fixture(scope="module")
def daemon():
    """A tandemd of this module's own: its tests count the server's requests (_sent), which
    other modules' clients would also move on the session's shared one."""
    yield from serve()


@pytest.fixture
def scene(client):
    rng = np.random.default_rng(11)
    env = client.put_mesh(*oracle.soup(rng, 10, 1.0, 0.3))
    robot = client.put_mesh(*oracle.soup(rng, 4, 0.3, 0.2))
    return client.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)])


def _sent(client):
    return client.stats().requests


def test_bad_pose_shapes(client, scene):
    before = _sent(client)
    for bad in (np.zeros((4, 6)), np.zeros((4, 2, 7)), np.zeros(7), [[1, 2, 3]], np.array([["a"] * 7])):
        with pytest.raises(InvalidArgument) as e:
            client.query(scene, bad)
        assert e.value.field == "poses" and e.value.code == ServerCode.BAD_REQUEST
        assert isinstance(e.value, ValueError) and isinstance(e.value, TandemError)
    assert _sent(client) == before + 1  # nothing but the Stats was sent


def test_nan_and_non_unit_poses_name_the_query(client, scene):
    poses = oracle.random_poses(np.random.default_rng(1), 50, 1.0)
    p = poses.copy()
    p[37, 2] = np.nan
    with pytest.raises(InvalidArgument) as e:
        client.check(scene, p)
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.NON_FINITE, "poses", 37)
    p = poses.copy()
    p[12, 3:] *= 1.01
    with pytest.raises(InvalidArgument) as e:
        client.check(scene, p)
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.NOT_UNIT, "poses", 12)
    assert "norm 1.01" in e.value.message
    p = poses.copy()
    p[5, 3:] *= 1.0009  # within 1e-3 of unit: accepted
    assert client.check(scene, p).shape == (50,)


def test_server_error_index_counts_from_the_start_of_the_call(client, scene, monkeypatch):
    """With the Python checks off, the server refuses a NaN in the second batch; the index is the
    query's in the whole array, every batch sent is drained, and the client stays usable."""
    import tandem._arrays as arrays

    poses = oracle.random_poses(np.random.default_rng(2), 3 * MAX_QUERIES, 1.0)
    ref = client.check(scene, poses)
    bad = poses.copy()
    bad[MAX_QUERIES + 234, 0] = np.inf
    monkeypatch.setattr(arrays, "_check_poses", lambda *a: None)
    with pytest.raises(TandemError) as e:
        client.check(scene, bad)
    assert e.value.from_server
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.NON_FINITE, "poses", MAX_QUERIES + 234)
    bad = poses.copy()
    bad[2 * MAX_QUERIES + 5, 3:] = [0, 0, 0, 2]
    with pytest.raises(TandemError) as e:
        client.check(scene, bad)
    assert (e.value.code, e.value.index) == (ServerCode.NOT_UNIT, 2 * MAX_QUERIES + 5)
    np.testing.assert_array_equal(client.check(scene, poses), ref)


def test_unknown_scene_id(client):
    with pytest.raises(TandemError) as e:
        client.check("00" * 32, np.array([[0, 0, 0, 0, 0, 0, 1.0]]))
    assert (e.value.code, e.value.field) == (ServerCode.UNKNOWN_SCENE, "scene_id")
    with pytest.raises(InvalidArgument) as e:
        client.check("xyz", np.array([[0, 0, 0, 0, 0, 0, 1.0]]))
    assert e.value.field == "scene_id"


def test_query_arguments(client, scene):
    p = np.array([[0, 0, 0, 0, 0, 0, 1.0]])
    with pytest.raises(InvalidArgument) as e:
        client.query(scene, p, mode="any")
    assert e.value.field == "mode"
    with pytest.raises(InvalidArgument) as e:
        client.query(scene, p, want_pairs=True)
    assert e.value.field == "want_pairs"
    with pytest.raises(InvalidArgument) as e:
        client.query(scene, p, mode="contacts", max_contacts=client.limits.max_contacts + 1)
    assert (e.value.code, e.value.field) == (ServerCode.LIMIT, "max_contacts")
    with pytest.raises(InvalidArgument):
        client.query(scene, p).pairs_of(0)


def test_bad_meshes(client):
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float64)
    t = np.array([[0, 1, 2], [0, 1, 3]])
    before = _sent(client)
    cases = [
        (v[:, :2], t, ServerCode.BAD_REQUEST, "vertices", -1),
        (v, t[:, :2], ServerCode.BAD_REQUEST, "triangles", -1),
        (v, t.astype(np.float64), ServerCode.BAD_REQUEST, "triangles", -1),
        (v, np.zeros((0, 3), dtype=int), ServerCode.EMPTY, "triangles", -1),
        (np.where(np.arange(12).reshape(4, 3) == 7, np.nan, v), t, ServerCode.NON_FINITE, "vertices", 2),
        (v * np.array([1, 1e39, 1])[None, :], t, ServerCode.NON_FINITE, "vertices", 2),  # inf in float32
        (v, np.array([[0, 1, 2], [0, 1, 4]]), ServerCode.BAD_INDEX, "triangles", 1),
        (v, np.array([[0, 1, 2], [0, 1, 3], [-1, 1, 2]]), ServerCode.BAD_INDEX, "triangles", 2),
    ]
    for verts, tris, code, field, index in cases:
        with pytest.raises(InvalidArgument) as e:
            client.put_mesh(verts, tris)
        assert (e.value.code, e.value.field, e.value.index) == (code, field, index), str(e.value)
    assert _sent(client) == before + 1


def test_bad_scene_objects(client):
    rng = np.random.default_rng(12)
    m = client.put_mesh(*oracle.soup(rng, 3, 1.0, 0.3))
    with pytest.raises(InvalidArgument) as e:
        client.put_scene([tandem.SceneObject.moving(m), tandem.SceneObject.fixed(m, [0, 0, 0, 0, 0, 0, 2])])
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.NOT_UNIT, "objects", 1)
    with pytest.raises(InvalidArgument) as e:
        client.put_scene([tandem.SceneObject.moving(m), tandem.SceneObject.fixed(m, [0, 0, np.nan, 0, 0, 0, 1])])
    assert (e.value.code, e.value.index) == (ServerCode.NON_FINITE, 1)
    with pytest.raises(InvalidArgument) as e:
        client.put_scene([tandem.SceneObject.moving(m), (m, False)])
    assert (e.value.field, e.value.index) == ("objects", 1)
    with pytest.raises(InvalidArgument) as e:
        client.put_scene([tandem.SceneObject(m, True, [0, 0, 0, 0, 0, 0, 1])])
    assert (e.value.field, e.value.index) == ("objects", 0)
    with pytest.raises(InvalidArgument) as e:
        client.put_scene([tandem.SceneObject.moving(m)], allowed=[(0, 1, 2)])
    assert (e.value.field, e.value.index) == ("allowed", 0)
    # the server's refusals
    with pytest.raises(TandemError) as e:
        client.put_scene([tandem.SceneObject.moving(m), tandem.SceneObject.fixed("ab" * 32)])
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.UNKNOWN_MESH, "objects", 1)
    with pytest.raises(TandemError) as e:
        client.put_scene([tandem.SceneObject.moving(m, object_id=4), tandem.SceneObject.fixed(m, object_id=4)])
    assert (e.value.code, e.value.field, e.value.index) == (ServerCode.BAD_INDEX, "objects", 1)
    with pytest.raises(TandemError) as e:
        client.put_scene([tandem.SceneObject.fixed(m)])
    assert e.value.code == ServerCode.EMPTY and e.value.from_server


def test_error_text_and_pickling(client):
    import pickle

    with pytest.raises(TandemError) as e:
        client.delete_mesh("00" * 32)
    text = str(e.value)
    assert text.startswith("unknown mesh: ") and text.endswith("[mesh_id]")
    back = pickle.loads(pickle.dumps(e.value))
    assert (back.code, back.field, back.index, back.client_code) == (
        e.value.code, e.value.field, e.value.index, e.value.client_code)  # fmt: skip
