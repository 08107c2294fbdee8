"""MultiClient: three tandemd, one SIGKILLed in the middle of a run of batches (issue 14, point 9):
stopped (SIGSTOP) before a batch and killed 200 ms into it, so that it holds a part of that batch.

Every answer equals the one server's answer (Client on a server that stays up), none missing (the
results are checked whole, batch by batch); uploads reached every server; a call with every server
gone fails with ECONNECT naming them."""

from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pytest

import oracle
import tandem
from conftest import Daemon

SEED = 1414


@pytest.fixture
def three():
    ds = [Daemon() for _ in range(3)]
    yield ds
    for d in ds:
        d.cleanup()


def test_one_server_killed_mid_run(three):
    rng = np.random.default_rng(SEED)
    ev, et = oracle.soup(rng, 60, 1.0, 0.25)
    rv, rt = oracle.soup(rng, 20, 0.3, 0.2)
    n_batches, size = 30, 800
    poses = oracle.random_poses(rng, n_batches * size, 1.0)
    with tandem.MultiClient([d.tcp for d in three], retry=(0.05, 0.2)) as mc:
        env = mc.put_mesh(ev, et, name="env")
        robot = mc.put_mesh(rv, rt, name="robot")
        scene = mc.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)], name="one")
        for d in three:  # every server got the uploads
            with tandem.Client(d.tcp) as c:
                assert [s.id for s in c.list_scenes()] == [scene.id]
        with tandem.Client(three[0].tcp) as c:
            want = c.query(scene, poses, "contacts")
        assert 0.05 < want.colliding.mean() < 0.95
        victim = three[2].proc

        def kill():  # 200 ms into the batch the stopped daemon holds a part of
            time.sleep(0.2)
            victim.send_signal(signal.SIGKILL)

        t = threading.Thread(target=kill)
        got_contacts = np.full(n_batches * size, -1, dtype=np.int64)
        got_colliding = np.zeros(n_batches * size, dtype=bool)
        for b in range(n_batches):
            if b == n_batches // 3:
                victim.send_signal(signal.SIGSTOP)
                t.start()
            r = mc.query(scene, poses[b * size : (b + 1) * size], "contacts")
            got_contacts[b * size : (b + 1) * size] = r.contacts
            got_colliding[b * size : (b + 1) * size] = r.colliding
            if b == n_batches // 3:
                t.join()
        victim.wait()
        np.testing.assert_array_equal(got_contacts, want.contacts)
        np.testing.assert_array_equal(got_colliding, want.colliding)
        assert mc.resent >= 1
        states = mc.servers()
        assert [s[0] for s in states] == [d.tcp for d in three]
        assert states[2][1] is False and three[2].tcp in states[2][2]


def test_every_server_gone(three):
    rng = np.random.default_rng(SEED)
    ev, et = oracle.soup(rng, 10, 1.0, 0.25)
    with tandem.MultiClient(",".join(d.tcp for d in three)) as mc:
        env = mc.put_mesh(ev, et)
        scene = mc.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(env)])
        for d in three:
            d.proc.send_signal(signal.SIGKILL)
            d.proc.wait()
        with pytest.raises(tandem.TandemError) as e:
            mc.check(scene, oracle.random_poses(rng, 5, 1.0))
        assert e.value.client_code == tandem.ClientCode.ECONNECT
        for d in three:
            assert d.tcp in e.value.message
