"""MultiClient: several tandemd behind one object, over libtandem's tdm_multi.

Uploads (meshes, scenes, robots and robot scenes) go to every server, and libtandem keeps a copy of each to replay to a
server that reconnects; query batches (poses, configurations, motions) are cut into parts spread over the usable servers, and a
server that fails (connection lost, io_timeout passed) has its parts re-sent to another one, so
every answer comes back exactly once, in order. A failed server is retried after a backoff.
"""

from __future__ import annotations

import ctypes
import os
from typing import Iterable, Optional, Sequence, Union

import numpy as np

from . import _arrays
from ._library import (
    MOTION_ANY_STATE,
    ConnectOptsStruct,
    IdBytes,
    Library,
    RobotInfoStruct,
    ephemeral_puts,
    load_library,
)
from .client import MODES, _id_arg, _ms, _result, _scene_args, _scene_id
from .errors import ClientCode, NotSupported, ServerCode, TandemError, invalid, server_error
from .robots import MotionResult, Robot, RobotScene, _file, _motion_args, _robot, _robot_scene, _yaml_text
from .types import MeshId, QueryResult, Scene, SceneId, SceneObject

__all__ = ["MultiClient"]


class MultiClient:
    """Several tandemd servers used as one.

    Args:
        addresses: a list of addresses (each as ``Client`` takes it), or one string of
            comma-separated addresses.
        auth_token, timeout, io_timeout, client_name, library: as for ``Client``, for each server.
        retry: (first, most) seconds to wait before reconnecting a failed server; the wait doubles
            from the first to the most after each failure.

    Raises TandemError (ECONNECT...) when no server can be reached; servers that cannot be reached
    at first are retried later."""

    def __init__(
        self,
        addresses: Union[str, Sequence[Union[str, os.PathLike]]],
        auth_token: Optional[str] = None,
        timeout: Optional[float] = 10.0,
        io_timeout: Optional[float] = None,
        *,
        client_name: str = "tandem-python",
        library: Optional[Union[str, os.PathLike]] = None,
        retry: tuple[float, float] = (0.1, 5.0),
    ):
        self._m = None
        self._lib: Library = load_library(library)
        if not self._lib.has_multi:
            raise NotSupported(f"{self._lib.path} has no tdm_multi (several servers): a libtandem from before issue 14")
        if isinstance(addresses, str):
            addrs = [a for a in addresses.split(",") if a]
        else:
            addrs = ["unix:" + os.fspath(a) if isinstance(a, os.PathLike) else str(a) for a in addresses]
        if not addrs:
            raise invalid("no server address", field="addresses")
        self.addresses = addrs
        self._scenes: dict[bytes, Scene] = {}
        enc = [a.encode() for a in addrs]
        arr = (ctypes.c_char_p * len(enc))(*enc)
        opts = ConnectOptsStruct(
            addr=None,
            timeout_ms=_ms(timeout, "timeout"),
            io_timeout_ms=_ms(io_timeout, "io_timeout"),
            auth_token=(auth_token or "").encode(),
            client_name=client_name.encode(),
            max_reply_bytes=0,
        )
        m = self._lib.tdm_multi_connect(ctypes.cast(arr, ctypes.c_void_p), len(enc), ctypes.byref(opts))
        if not m:
            raise TandemError("out of memory", client_code=ClientCode.ENOMEM)
        rc = self._lib.tdm_multi_err(m)
        if rc != 0:
            text = self._lib.tdm_multi_errstr(m).decode(errors="replace")
            self._lib.tdm_multi_free(m)
            raise TandemError(text, client_code=rc)
        self._m = m
        lo, hi = retry
        self._lib.tdm_multi_set_retry(m, _ms(lo, "retry"), _ms(hi, "retry"))

    def close(self) -> None:
        if self._m is not None:
            self._lib.tdm_multi_free(self._m)
            self._m = None

    def __enter__(self) -> "MultiClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _ctx(self):
        if self._m is None:
            raise TandemError("the client is closed", client_code=ClientCode.ECLOSED)
        return self._m

    def _check(self, rc: int) -> None:
        if rc == 0:
            return
        if rc == ClientCode.ESERVER:
            se = self._lib.tdm_multi_server_error(self._m)
            if se:
                e = se.contents
                raise server_error(
                    (e.message or b"").decode(errors="replace"),
                    e.code,
                    (e.field or b"").decode(errors="replace"),
                    int(e.index),
                )
        raise TandemError(self._lib.tdm_multi_errstr(self._m).decode(errors="replace"), client_code=rc)

    def servers(self) -> list[tuple[str, bool, str]]:
        """Each server: (address, usable now, why it is down or "")."""
        out = []
        for i in range(self._lib.tdm_multi_servers(self._ctx())):
            addr, why = ctypes.c_char_p(), ctypes.c_char_p()
            up = self._lib.tdm_multi_server_state(self._m, i, ctypes.byref(addr), ctypes.byref(why))
            out.append((addr.value.decode(), up == 1, (why.value or b"").decode(errors="replace")))
        return out

    @property
    def resent(self) -> int:
        """Parts re-sent to another server after a failure, so far."""
        return int(self._lib.tdm_multi_resent(self._ctx()))

    def put_mesh(self, vertices, triangles, name: str = "") -> MeshId:
        """As ``Client.put_mesh``, on every server."""
        v = _arrays.vertices(vertices)
        t = _arrays.triangles(triangles, v.shape[0])
        out = IdBytes()
        created = ctypes.c_int()
        self._check(
            self._lib.tdm_multi_mesh_put(
                self._ctx(), name.encode(), v.ctypes.data, v.shape[0], t.ctypes.data, t.shape[0], out,
                ctypes.byref(created),
            )
        )  # fmt: skip
        return MeshId(bytes(out))

    def put_scene(
        self,
        objects: Sequence[SceneObject],
        allowed: Iterable[tuple[int, int]] = (),
        name: str = "",
        ephemeral: bool = False,
    ) -> Scene:
        """As ``Client.put_scene``, on every server (an ephemeral scene put again on a server that
        comes back)."""
        objs = list(objects)
        arr, parr, pairs = _scene_args(objs, allowed)
        sid = IdBytes()
        created = ctypes.c_int()
        movable = (ctypes.c_uint32 * max(1, len(objs)))()
        n_movable = ctypes.c_size_t()
        with ephemeral_puts(self._lib, self._ctx(), ephemeral, "tdm_multi_set_ephemeral_scenes"):
            self._check(
                self._lib.tdm_multi_scene_put(
                    self._ctx(), name.encode(), arr, len(objs), parr, len(pairs), sid, ctypes.byref(created), movable,
                    len(objs), ctypes.byref(n_movable),
                )
            )  # fmt: skip
        scene = Scene(
            SceneId(bytes(sid)),
            tuple(int(movable[i]) for i in range(n_movable.value)),
            name,
            len(objs),
            bool(created.value),
        )
        self._scenes[bytes(scene.id)] = scene
        return scene

    def query(self, scene: Scene, poses, mode: str = "bool", max_contacts: int = 0) -> QueryResult:
        """As ``Client.query`` (without want_pairs), spread over the servers. ``scene`` is a Scene
        from ``put_scene`` (its movable objects give the poses' shape)."""
        if mode not in MODES:
            raise invalid(f"mode must be 'bool' or 'contacts', not {mode!r}", field="mode")
        if not isinstance(scene, Scene):
            sid = bytes(_scene_id(scene))
            if sid not in self._scenes:
                raise server_error("a MultiClient queries scenes it stored (put_scene)", ServerCode.UNKNOWN_SCENE,
                                   "scene_id", -1)  # fmt: skip
            scene = self._scenes[sid]
        max_contacts = int(max_contacts)
        if not 0 <= max_contacts <= 0xFFFFFFFF:
            raise invalid(f"max_contacts must be in 0..2^32-1, not {max_contacts}", field="max_contacts")
        m = len(scene.movable)
        p = _arrays.poses(poses, m)
        n = p.shape[0]
        results = np.zeros(n, dtype=_arrays.RESULT_DTYPE)
        if n:
            self._check(
                self._lib.tdm_multi_query(
                    self._ctx(), _id_arg(scene.id), MODES[mode], p.ctypes.data, m, n, max_contacts,
                    results.ctypes.data, None,
                )
            )  # fmt: skip
        return _result(results, None, [(0, n)], False)

    def check(self, scene: Scene, poses) -> np.ndarray:
        """(N,) bool: which queries collide."""
        return self.query(scene, poses, "bool").colliding

    # ---- robots (issue 13) on every server ----

    def _robots(self, what: str) -> None:
        if not self._lib.has_multi_robots:
            raise NotSupported(f"{what}: this libtandem has no robots on several servers ({self._lib.path})")

    def put_robot(self, urdf_path, srdf_path=None, name: str = "") -> Robot:
        """As ``Client.put_robot``, on every server. The Robot's joints are those of the URDF
        as read here (``name`` is the one given)."""
        self._robots("put_robot")
        urdf = _file(urdf_path, "urdf")
        srdf = _file(srdf_path, "srdf") if srdf_path is not None else None
        rid = IdBytes()
        created = ctypes.c_int()
        info = ctypes.POINTER(RobotInfoStruct)()
        self._check(
            self._lib.tdm_multi_robot_put_files(
                self._ctx(), name.encode(), os.fsencode(urdf), os.fsencode(srdf) if srdf else None, rid,
                ctypes.byref(created), ctypes.byref(info),
            )
        )  # fmt: skip
        try:
            r = _robot(info.contents)
        finally:
            self._lib.tdm_robot_info_free(info)
        return Robot(r.id, r.joints, name, r.n_links, r.n_elements, 0, bool(created.value))

    def put_robot_scene(self, robot: Robot, world_yaml_path, name: str = "", ephemeral: bool = False) -> RobotScene:
        """As ``Client.put_robot_scene``, on every server. The RobotScene has no ``objects``
        table and ``n_checks`` 0 (a MultiClient does not read the servers' descriptions)."""
        world = _file(world_yaml_path, "world")
        return self._put_robot_scene(robot, name, ephemeral, "tdm_multi_robot_scene_put_file", os.fsencode(world))

    def put_robot_scene_text(self, robot: Robot, world_yaml: str, name: str = "", ephemeral: bool = False) -> RobotScene:
        """As ``Client.put_robot_scene_text``, on every server (the RobotScene as ``put_robot_scene``'s)."""
        return self._put_robot_scene(robot, name, ephemeral, "tdm_multi_robot_scene_put", _yaml_text(world_yaml))

    def _put_robot_scene(self, robot: Robot, name: str, ephemeral: bool, call: str, world: bytes) -> RobotScene:
        self._robots("put_robot_scene")
        if not isinstance(robot, Robot):
            raise invalid(f"robot must be a Robot (from put_robot), not {type(robot).__name__}", field="robot")
        sid = IdBytes()
        created = ctypes.c_int()
        with ephemeral_puts(self._lib, self._ctx(), ephemeral, "tdm_multi_set_ephemeral_scenes"):
            self._check(
                getattr(self._lib, call)(
                    self._ctx(), name.encode(), (ctypes.c_uint8 * 32).from_buffer_copy(robot.id), world,
                    sid, ctypes.byref(created),
                )
            )  # fmt: skip
        return RobotScene(SceneId(bytes(sid)), robot, name, (), 0, bool(created.value))

    def query_configs(self, scene: RobotScene, configs, mode: str = "bool", max_contacts: int = 0) -> QueryResult:
        """As ``Client.query_configs`` (without want_pairs), spread over the servers."""
        self._robots("query_configs")
        _robot_scene(scene)
        if mode not in MODES:
            raise invalid(f"mode must be 'bool' or 'contacts', not {mode!r}", field="mode")
        max_contacts = int(max_contacts)
        if not 0 <= max_contacts <= 0xFFFFFFFF:
            raise invalid(f"max_contacts must be in 0..2^32-1, not {max_contacts}", field="max_contacts")
        q = _arrays.configurations(configs, scene.n_joints, "configs")
        n, j = q.shape
        results = np.zeros(n, dtype=_arrays.RESULT_DTYPE)
        if n:
            self._check(
                self._lib.tdm_multi_query_configs(
                    self._ctx(), _id_arg(scene.id), MODES[mode], q.ctypes.data, j, n, max_contacts,
                    results.ctypes.data, None,
                )
            )  # fmt: skip
        return _result(results, None, [(0, n)], False)

    def check_configs(self, scene: RobotScene, configs) -> np.ndarray:
        """(N,) bool: which configurations (N, J) collide."""
        return self.query_configs(scene, configs, "bool").colliding

    def motion_check(self, scene: RobotScene, starts, ends, resolution: float, any_state: bool = False) -> MotionResult:
        """As ``Client.motion_check``, spread over the servers (``any_state`` needs a libtandem
        with tdm_multi_motion_check_flags: NotSupported otherwise)."""
        self._robots("motions")
        if any_state and not self._lib.has_multi_motion_flags:
            raise NotSupported(
                f"motions: this libtandem has no any_state over several servers ({self._lib.path} lacks "
                "tdm_multi_motion_check_flags)"
            )
        a, _, r, motions, first, n_states, last_free = _motion_args(scene, starts, ends, resolution)
        m, j = a.shape
        if m:
            outs = (first.ctypes.data, n_states.ctypes.data, last_free.ctypes.data)
            if any_state:
                rc = self._lib.tdm_multi_motion_check_flags(
                    self._ctx(), _id_arg(scene.id), r, motions.ctypes.data, j, m, MOTION_ANY_STATE, *outs
                )
            else:
                rc = self._lib.tdm_multi_motion_check(self._ctx(), _id_arg(scene.id), r, motions.ctypes.data, j, m, *outs)
            self._check(rc)
        return MotionResult(first, n_states, last_free)

    def motions(self, scene: RobotScene, starts, ends, resolution: float, any_state: bool = False) -> np.ndarray:
        """(M,) int64: each motion's first colliding state (with ``any_state``: some colliding
        state), or -1."""
        return self.motion_check(scene, starts, ends, resolution, any_state=any_state).first_colliding
