"""Queries against a real tandemd, answers checked pose by pose against the brute-force oracle
(oracle.py) and against the offline ``tandem check`` on the same files."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

import oracle
import tandem
from conftest import MAX_QUERIES, tandem_bin

SEED = 20261125


def _pair_hits(placed_a, placed_b):
    hit, tight = oracle.intersecting(placed_a, placed_b)
    return hit, tight.any()


@pytest.fixture
def one_robot(client):
    """An environment soup and a robot soup as a two-object scene (env fixed id 0, robot movable 1)."""
    rng = np.random.default_rng(SEED)
    ev, et = oracle.soup(rng, 40, 1.0, 0.25)
    rv, rt = oracle.soup(rng, 12, 0.3, 0.2)
    env = client.put_mesh(ev, et, name="env")
    robot = client.put_mesh(rv, rt, name="robot")
    scene = client.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)], name="one")
    yield scene, (ev, et), (rv, rt), rng


def test_bool_matches_oracle_across_pipelined_batches(client, one_robot):
    scene, (ev, et), (rv, rt), rng = one_robot
    n = 2 * MAX_QUERIES + 500  # three batches, pipelined
    poses = oracle.random_poses(rng, n, 1.0)
    res = client.query(scene, poses)
    assert res.colliding.shape == (n,) and res.colliding.dtype == np.bool_
    env_tris = oracle.place(ev, et)
    expect = np.zeros(n, dtype=bool)
    ambiguous = np.zeros(n, dtype=bool)
    for i in range(n):
        hit, tight = _pair_hits(env_tris, oracle.place(rv, rt, poses[i]))
        expect[i], ambiguous[i] = hit.any(), tight
    assert ambiguous.sum() <= n // 100, f"{ambiguous.sum()} ambiguous poses of {n} (seed {SEED})"
    keep = ~ambiguous
    bad = np.flatnonzero(res.colliding[keep] != expect[keep])
    assert bad.size == 0, f"poses {np.flatnonzero(keep)[bad][:10]} differ from the oracle (seed {SEED})"
    assert 0.1 * n < expect.sum() < 0.9 * n, f"{expect.sum()} of {n} collide: a poor test"
    # bool mode: contacts is 1 when colliding, the first pair is (env 0, robot 1)
    np.testing.assert_array_equal(res.contacts, res.colliding.astype(np.uint32))
    np.testing.assert_array_equal(res.object_pair[res.colliding], np.tile([0, 1], (res.colliding.sum(), 1)))
    np.testing.assert_array_equal(res.object_pair[~res.colliding], -1)
    # check() is the same answer
    np.testing.assert_array_equal(client.check(scene, poses), res.colliding)


def test_contacts_and_pairs_match_oracle(client, one_robot):
    scene, (ev, et), (rv, rt), rng = one_robot
    n = 300
    poses = oracle.random_poses(rng, n, 0.8)
    res = client.query(scene, poses, mode="contacts", max_contacts=1000, want_pairs=True)
    env_tris = oracle.place(ev, et)
    compared = 0
    for i in range(n):
        hit, tight = _pair_hits(env_tris, oracle.place(rv, rt, poses[i]))
        if tight:
            continue
        compared += 1
        assert res.contacts[i] == hit.sum(), f"pose {i}: {res.contacts[i]} contacts, oracle {hit.sum()}"
        assert not res.truncated[i]
        assert res.colliding[i] == hit.any()
        got = {tuple(p) for p in res.pairs_of(i).tolist()}
        want = {(0, int(a), 1, int(b)) for a, b in zip(*np.nonzero(hit))}
        assert got == want, f"pose {i}: pairs {sorted(got)} != oracle {sorted(want)}"
    assert compared >= n - 3
    assert res.pairs.shape == (int(res.contacts.sum()), 4) and res.pairs.dtype == np.uint32
    assert (res.contacts >= 2).sum() >= 20, "too few multi-contact poses for a meaningful test"


def test_contacts_cap_truncates(client, one_robot):
    scene, (ev, et), (rv, rt), rng = one_robot
    poses = oracle.random_poses(rng, 400, 0.8)
    full = client.query(scene, poses, mode="contacts")
    capped = client.query(scene, poses, mode="contacts", max_contacts=2)
    np.testing.assert_array_equal(capped.contacts, np.minimum(full.contacts, 2))
    np.testing.assert_array_equal(capped.truncated, full.contacts > 2)
    assert (full.contacts > 2).any()


def test_pairs_room_grows_when_the_first_guess_is_short(client, one_robot, monkeypatch):
    """A batch whose pairs overflow the room first given is asked again with exact room."""
    scene, _, _, rng = one_robot
    poses = oracle.random_poses(rng, 200, 0.8)
    ref = client.query(scene, poses, mode="contacts", max_contacts=1000, want_pairs=True)
    import tandem.client as tc

    real = tc.PairsStruct
    made = []

    def tiny(data, cap, count):  # the first room per batch holds one pair
        made.append(cap)
        return real(data, cap if len(made) > 1 else 1, count)

    monkeypatch.setattr(tc, "PairsStruct", tiny)
    again = client.query(scene, poses, mode="contacts", max_contacts=1000, want_pairs=True)
    assert len(made) == 2 and made[1] == ref.pairs.shape[0]
    np.testing.assert_array_equal(again.pairs, ref.pairs)
    np.testing.assert_array_equal(again.pair_offsets, ref.pair_offsets)


def test_two_movable_objects_fixed_pose_and_allowed_pair(client):
    rng = np.random.default_rng(SEED + 1)
    ev, et = oracle.soup(rng, 30, 1.0, 0.25)
    av, at = oracle.soup(rng, 10, 0.3, 0.2)
    bv, bt = oracle.soup(rng, 8, 0.3, 0.2)
    env, a, b = client.put_mesh(ev, et), client.put_mesh(av, at), client.put_mesh(bv, bt)
    env_pose = np.array([0.1, -0.2, 0.3, *(lambda q: q / np.linalg.norm(q))(np.array([0.2, 0.1, -0.3, 0.9]))])
    scene = client.put_scene(
        [
            tandem.SceneObject.fixed(env, env_pose, object_id=5),
            tandem.SceneObject.moving(b, object_id=9),
            tandem.SceneObject.moving(a, object_id=2),
        ],
        allowed=[(9, 5)],  # b never against the environment
    )
    assert scene.movable == (2, 9)
    n = 400
    poses = np.stack([oracle.random_poses(rng, n, 0.9), oracle.random_poses(rng, n, 0.5)], axis=1)  # (n, 2, 7)
    res = client.query(scene, poses, mode="contacts")
    env_tris = oracle.place(ev, et, env_pose)
    compared = 0
    for i in range(n):
        pa, pb = oracle.place(av, at, poses[i, 0]), oracle.place(bv, bt, poses[i, 1])
        h_env, t1 = oracle.intersecting(pa, env_tris)
        h_ab, t2 = oracle.intersecting(pa, pb)
        if t1.any() or t2.any():
            continue
        compared += 1
        assert res.contacts[i] == h_env.sum() + h_ab.sum(), f"query {i}"
        if res.colliding[i]:
            # contacts mode names the smallest colliding (object_a, object_b)
            want = (2, 5) if h_env.any() else (2, 9)
            assert tuple(res.object_pair[i]) == want, f"query {i}"
    assert compared >= n - 4
    assert 0 < res.colliding.sum() < n


def test_query_by_id_hex_and_empty_batch(client, one_robot):
    scene, _, _, rng = one_robot
    poses = oracle.random_poses(rng, 50, 1.0)
    ref = client.check(scene, poses)
    fresh = tandem.Client(client.address)  # knows no scene yet: looks the id up
    with fresh:
        np.testing.assert_array_equal(fresh.check(str(scene.id), poses), ref)
        np.testing.assert_array_equal(fresh.check(tandem.SceneId(bytes(scene.id)), poses), ref)
        # (N, 1, 7) is the same as (N, 7); float32 and non-contiguous inputs are converted
        np.testing.assert_array_equal(fresh.check(scene, poses[:, None, :]), ref)
        np.testing.assert_array_equal(fresh.check(scene, np.asfortranarray(poses)), ref)
        empty = fresh.query(scene, np.zeros((0, 7)))
        assert empty.colliding.shape == (0,)


def _write_obj(path, v, t):
    with open(path, "w") as f:
        for x in v.astype(np.float32):
            f.write("v %.9g %.9g %.9g\n" % tuple(x))
        for tri in t:
            f.write("f %d %d %d\n" % tuple(int(i) + 1 for i in tri))


def test_matches_offline_tandem_check(client, one_robot, tmp_path):
    """The same meshes and poses through `tandem check` (no daemon): the same answers."""
    scene, (ev, et), (rv, rt), rng = one_robot
    poses = oracle.random_poses(rng, 500, 1.0)
    _write_obj(tmp_path / "env.obj", ev, et)
    _write_obj(tmp_path / "robot.obj", rv, rt)
    np.savetxt(tmp_path / "poses.txt", poses, fmt="%.17g")
    for mode in ("bool", "contacts"):
        out = tmp_path / f"{mode}.txt"
        run = subprocess.run(
            [tandem_bin(), "check", "--env", str(tmp_path / "env.obj"), "--robot", str(tmp_path / "robot.obj"),
             "--poses", str(tmp_path / "poses.txt"), "--mode", mode, "--threads", "2", "--out", str(out)],
            capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        offline = np.loadtxt(out, dtype=np.int64)
        res = client.query(scene, poses, mode=mode)
        got = res.colliding.astype(np.int64) if mode == "bool" else res.contacts.astype(np.int64)
        np.testing.assert_array_equal(got, offline)
        assert run.stdout.strip().splitlines()[-1].startswith(f"queries={len(poses)} ")


@pytest.mark.parametrize("pipeline", [1, 2, 4])
def test_batches_are_kept_in_flight(daemon, pipeline, monkeypatch):
    """3.5 batches: up to `pipeline` requests are outstanding whenever the client waits."""
    rng = np.random.default_rng(SEED + 2)
    with tandem.Client(daemon.tcp, pipeline=pipeline) as c:
        env = c.put_mesh(*oracle.soup(rng, 20, 1.0, 0.25))
        robot = c.put_mesh(*oracle.soup(rng, 6, 0.3, 0.2))
        scene = c.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)])
        poses = oracle.random_poses(rng, 3 * MAX_QUERIES + MAX_QUERIES // 2, 1.0)
        c.pipeline = 1
        ref = c.check(scene, poses)
        c.pipeline = pipeline
        lib = c._lib
        real_wait = lib.tdm_query_wait
        seen = []

        def wait(ctx, qid, status):
            seen.append(lib.tdm_query_outstanding(ctx))
            return real_wait(ctx, qid, status)

        monkeypatch.setattr(lib, "tdm_query_wait", wait)
        np.testing.assert_array_equal(c.check(scene, poses), ref)
        assert len(seen) == 4 and max(seen) == min(pipeline, 4)


def test_one_client_per_thread(daemon, one_robot):
    import threading

    scene, _, _, rng = one_robot
    poses = [oracle.random_poses(rng, 1500, 1.0) for _ in range(4)]
    with tandem.Client(daemon.unix) as c:
        refs = [c.check(scene, p) for p in poses]
    got = [None] * 4
    errors = []

    def work(i):
        try:
            with tandem.Client(daemon.unix) as mine:
                for _ in range(3):
                    got[i] = mine.check(scene, poses[i])
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(4):
        np.testing.assert_array_equal(got[i], refs[i])


def test_rings_answer_as_the_socket(daemon, client, one_robot):
    """A client whose frames go through shared-memory rings (``ring=True``) gets the socket's answers,
    pipelined batches and contacts included; over TCP the server refuses rings and says why."""
    scene, (ev, et), (rv, rt), rng = one_robot
    n = MAX_QUERIES + 300  # two batches, pipelined through the ring
    poses = oracle.random_poses(rng, n, 1.0)
    with tandem.Client(daemon.unix, ring=True) as rc, tandem.Client(daemon.unix, ring=65536) as small:
        assert rc.ring_open and small.ring_open and not client.ring_open
        want = client.query(scene, poses, mode="contacts")
        for c in (rc, small):
            got = c.query(scene, poses, mode="contacts")
            np.testing.assert_array_equal(got.colliding, want.colliding)
            np.testing.assert_array_equal(got.contacts, want.contacts)
            np.testing.assert_array_equal(got.object_pair, want.object_pair)
            for i in range(0, n, 997):  # one pose a request, as a planner asks
                np.testing.assert_array_equal(c.check(scene, poses[i : i + 1]), want.colliding[i : i + 1])
        assert 0.1 * n < want.colliding.sum() < 0.9 * n
    with pytest.raises(tandem.TandemError) as e:
        tandem.Client(daemon.tcp, ring=True)
    assert e.value.from_server and e.value.field == "ring_open"
    with pytest.raises(tandem.TandemError):
        tandem.Client(daemon.unix, ring=-1)


def test_batches_follow_the_servers_reply_and_task_limits():
    """The server's max_query_tasks and max_reply_pairs come in the handshake (a libtandem with
    tdm_limits_size) and cut ``query``'s batches: a tandemd with small ones answers every query
    where one request of them all would be refused. A cap given to the Client is lowered to the
    server's value, never raised past it."""
    from conftest import Daemon

    d = Daemon("--max-query-tasks", "70", "--max-reply-pairs", "300")
    try:
        with tandem.Client(d.unix, timeout=10) as c:
            if not c._lib.has_all_limits:
                pytest.skip(f"{c.library_path} has no tdm_limits_size: it cannot read these limits")
            assert (c.limits.max_query_tasks, c.limits.max_reply_pairs) == (70, 300)
            assert (c.max_query_tasks, c.max_reply_pairs) == (70, 300)
            rng = np.random.default_rng(SEED + 1)
            ev, et = oracle.soup(rng, 40, 1.0, 0.25)
            rv, rt = oracle.soup(rng, 12, 0.3, 0.2)
            env, robot = c.put_mesh(ev, et), c.put_mesh(rv, rt)
            scene = c.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)])
            poses = oracle.random_poses(rng, 500, 1.0)
            res = c.query(scene, poses)  # one checked pair a pose: batches of at most 70
            assert res.colliding.shape == (500,) and 50 < res.colliding.sum() < 450
            pairs = c.query(scene, poses[:200], mode="contacts", max_contacts=10, want_pairs=True)
            np.testing.assert_array_equal(pairs.colliding, res.colliding[:200])  # batches of at most 30
            np.testing.assert_array_equal(np.diff(pairs.pair_offsets), np.minimum(pairs.contacts, 10))
            # one request of all of them is what the server refuses
            with tandem.Client(d.unix, timeout=10, batch=500) as big:
                big.max_query_tasks = 10**9
                with pytest.raises(tandem.TandemError) as e:
                    big.query(scene, poses)
                assert e.value.code == tandem.ServerCode.LIMIT
        with tandem.Client(d.unix, timeout=10, max_query_tasks=20, max_reply_pairs=10**6) as c:
            assert (c.max_query_tasks, c.max_reply_pairs) == (20, 300)
    finally:
        rc = d.stop()
        d.cleanup()
    assert rc == 0
