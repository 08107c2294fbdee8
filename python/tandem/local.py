"""The local engine: a robot scene's few configurations answered in this process, over libtandem's
``tdm_local_*`` (client/README.md, "The local engine").

    robot = tandem.LocalRobot("panda.urdf", "panda.srdf")       # the files put_robot_files uploads
    scene = robot.scene_file("scene0001.yaml")                   # as put_robot_scene_file stores it
    assert scene.id == stored.id                                 # the same content, so the same answers
    hit = scene.check(q[None, :])[0]                             # one configuration, no round trip

A planner that asks about one configuration at a time pays a round trip to tandemd for each (~0.1 ms
with 64 planners on 16 cores), for a check that costs ~10 us on one core; tandemd pays off on
batches, pooled with every client's. ``LocalRobot`` reads a robot exactly as ``Client.put_robot_files``
does and ``LocalScene`` builds a planning scene as tandemd builds a stored one (the same C code), so
their answers are tandemd's, and their ids are the ones tandemd gives the same content. Queries run
on the calling thread, on an engine of that thread's own (kept per thread, made at its first query).
Robots and scenes are read-only once made: any number of threads may query one scene at once."""

from __future__ import annotations

import ctypes
import os
import threading
import weakref
from typing import Optional, Union

import numpy as np

from . import _arrays
from ._library import LOCAL_SYMBOLS, load_library
from .errors import ClientCode, ServerCode, TandemError, invalid, not_supported
from .types import QueryResult, RobotId, SceneId

__all__ = ["LocalRobot", "LocalScene"]

PathLike = Union[str, os.PathLike]

_MODES = {"bool": 0, "contacts": 1}


def _library(library):
    lib = library if library is not None else load_library()
    if not lib.has_local:
        raise not_supported(f"the local engine: this libtandem ({lib.path}) lacks {LOCAL_SYMBOLS[0]}")
    return lib


class _Engine:
    """One thread's tdm_local (its scheduler and scratch), freed with the thread's locals."""

    def __init__(self, lib):
        self.lib = lib
        self.ptr = lib.tdm_local_create()
        if not self.ptr:
            raise MemoryError("tdm_local_create: out of memory")

    def error(self, rc: int, field: str = "") -> TandemError:
        message = self.lib.tdm_local_errstr(self.ptr).decode(errors="replace")
        if rc == ClientCode.ENOMEM:
            return TandemError(message, code=ServerCode.NO_MEMORY, client_code=rc, field=field)
        err = invalid(message, field=field)
        err.client_code = rc
        return err

    def __del__(self):
        if getattr(self, "ptr", None):
            self.lib.tdm_local_free(self.ptr)
            self.ptr = None


_engines = threading.local()


def _engine(lib) -> _Engine:
    """This thread's engine for lib."""
    per_lib = getattr(_engines, "by_path", None)
    if per_lib is None:
        per_lib = _engines.by_path = {}
    e = per_lib.get(lib.path)
    if e is None:
        e = per_lib[lib.path] = _Engine(lib)
    return e


class _Handle:
    """A libtandem object this Python object owns: freed by close(), at the end of a with block, or
    when collected."""

    _free = ""  # the library's call that frees it

    def _release(self) -> None:
        if getattr(self, "_ptr", None):
            getattr(self._lib, self._free)(self._ptr)
            self._ptr = None

    def close(self) -> None:
        self._release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        # a robot's scenes hold a reference to it, so none is alive when it is collected
        self._release()


class LocalRobot(_Handle):
    """A robot read from its URDF (and SRDF) and mesh files, its collision elements' trees built,
    in this process. ``id`` is the id ``Client.put_robot_files`` stores the same files under;
    ``n_joints`` its active joints (a configuration's values, in ``tandem robot joints`` order).
    Refused files raise InvalidArgument naming the file, line and element."""

    _free = "tdm_local_robot_free"

    def __init__(self, urdf: PathLike, srdf: Optional[PathLike] = None, *, library=None):
        self._lib = lib = _library(library)
        self._ptr = None
        urdf_b = os.fsencode(urdf)
        srdf_b = os.fsencode(srdf) if srdf is not None else None
        e = _engine(lib)
        out = ctypes.c_void_p()
        rc = lib.tdm_local_robot_load(e.ptr, urdf_b, srdf_b, ctypes.byref(out))
        if rc != 0:
            raise e.error(rc, "urdf")
        self._ptr = out.value
        rid = (ctypes.c_uint8 * 32)()
        lib.tdm_local_robot_id(self._ptr, rid)
        self.id = RobotId(bytes(rid))
        self.n_joints = int(lib.tdm_local_robot_joints(self._ptr))
        self._scenes: "weakref.WeakSet[LocalScene]" = weakref.WeakSet()

    def scene(self, world_yaml: str) -> "LocalScene":
        """The robot in a MoveIt planning scene (its YAML text), as ``Client.put_robot_scene``
        has tandemd build it."""
        if not isinstance(world_yaml, str):
            raise invalid(f"world_yaml must be a str of YAML, not {type(world_yaml).__name__}", field="world")
        if "\0" in world_yaml:
            raise invalid("world_yaml holds a NUL character", field="world")
        return self._scene(self._lib.tdm_local_scene_create, world_yaml.encode())

    def scene_file(self, path: PathLike) -> "LocalScene":
        """The same from a planning-scene YAML file (as ``Client.put_robot_scene_file`` reads it)."""
        return self._scene(self._lib.tdm_local_scene_create_file, os.fsencode(path))

    def _scene(self, create, arg: bytes) -> "LocalScene":
        if not self._ptr:
            raise invalid("this LocalRobot is closed")
        e = _engine(self._lib)
        out = ctypes.c_void_p()
        rc = create(e.ptr, self._ptr, arg, ctypes.byref(out))
        if rc != 0:
            raise e.error(rc, "world")
        s = LocalScene(self, out.value)
        self._scenes.add(s)
        return s

    def close(self) -> None:
        """Frees the robot's trees. Its scenes must be closed first (InvalidArgument otherwise)."""
        if not self._ptr:
            return
        if any(s._ptr for s in self._scenes):
            raise invalid("close this robot's LocalScenes first")
        self._release()


class LocalScene(_Handle):
    """A robot in a planning scene, built in this process (``LocalRobot.scene``). ``id`` is the id
    tandemd gives the same YAML stored, ``ephemeral_id`` the one it gives it put ephemeral."""

    _free = "tdm_local_scene_free"

    def __init__(self, robot: LocalRobot, ptr):
        self.robot = robot  # kept alive while the scene is
        self._lib = robot._lib
        self._ptr = ptr
        sid = (ctypes.c_uint8 * 32)()
        self._lib.tdm_local_scene_id(ptr, 0, sid)
        self.id = SceneId(bytes(sid))
        self._lib.tdm_local_scene_id(ptr, 1, sid)
        self.ephemeral_id = SceneId(bytes(sid))

    @property
    def n_joints(self) -> int:
        return self.robot.n_joints

    def query(self, configs, mode: str = "bool", max_contacts: int = 0) -> QueryResult:
        """One query per configuration, configs (N, J), answered on this thread: the answers
        ``Client.query_configs`` gets from tandemd for the stored scene (in contacts mode the same
        counts, ``truncated`` and smallest pair; in bool mode ``object_pair`` is a colliding pair,
        not necessarily tandemd's). No triangle pairs. max_contacts 0: tandemd's default limit."""
        if mode not in _MODES:
            raise invalid(f"mode must be 'bool' or 'contacts', not {mode!r}", field="mode")
        if not isinstance(max_contacts, (int, np.integer)) or not 0 <= max_contacts <= 0xFFFFFFFF:
            raise invalid(f"max_contacts must be an integer in [0, 2^32), not {max_contacts!r}", field="max_contacts")
        if not self._ptr:
            raise invalid("this LocalScene is closed")
        q = _arrays.configurations(configs, self.n_joints, "configs")
        n, j = q.shape
        results = np.zeros(n, dtype=_arrays.RESULT_DTYPE)
        e = _engine(self._lib)
        rc = self._lib.tdm_local_query_configs(
            e.ptr, self._ptr, _MODES[mode], q.ctypes.data, j, n, int(max_contacts), results.ctypes.data
        )
        if rc != 0:
            raise e.error(rc, "configs")
        from .client import _result

        return _result(results, None, [], False)

    def check(self, configs) -> np.ndarray:
        """(N,) bool: which configurations (N, J) collide."""
        return self.query(configs).colliding
