"""What the Python layer adds to a call: one pose through Client.check and Client.query against the
same tdm_query called directly through ctypes, on a tandemd of the build tree (the tests' fixture
starts it). Run from the repository after a build:

    PYTHONPATH=python python3 python/bench/overhead.py
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import oracle  # noqa: E402
import tandem  # noqa: E402
from conftest import Daemon  # noqa: E402
from tandem import _arrays  # noqa: E402
from tandem.client import _id_arg  # noqa: E402


def per_call_us(fn, n=3000):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main():
    d = Daemon()
    try:
        rng = np.random.default_rng(1)
        with tandem.Client(d.unix) as c:
            env = c.put_mesh(*oracle.soup(rng, 200, 1.0, 0.05))
            robot = c.put_mesh(*oracle.soup(rng, 20, 0.3, 0.05))
            scene = c.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)])
            pose = oracle.random_poses(rng, 1, 1.0)
            res = np.zeros(1, dtype=_arrays.RESULT_DTYPE)
            sid, lib, ctx = _id_arg(scene.id), c._lib, c._c
            print(f"engine {c.server_info.engine}, Unix socket, 200 x 20 triangles, one pose a call")
            for _ in range(3):
                raw = per_call_us(lambda: lib.tdm_query(ctx, sid, 0, pose.ctypes.data, 1, 1, 0, res.ctypes.data, None))
                chk = per_call_us(lambda: c.check(scene, pose))
                qry = per_call_us(lambda: c.query(scene, pose))
                print(f"tdm_query through ctypes {raw:.1f} us, check {chk:.1f} us, query {qry:.1f} us")
            many = oracle.random_poses(rng, 65536, 1.0)
            t = time.perf_counter()
            c.check(scene, many)
            total = time.perf_counter() - t
            t = time.perf_counter()
            _arrays.poses(many.copy(), 1)
            checks = time.perf_counter() - t
            print(f"65536 poses: check {total * 1e3:.1f} ms, of which the argument checks {checks * 1e3:.2f} ms")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
