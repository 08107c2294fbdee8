"""Robots: URDF robots in MoveIt planning scenes, joint-space queries and motion checks
(issue 13), over libtandem's robot calls (``tdm_robot_put_files``, ``tdm_robot_scene_put_file``,
``tdm_query_configs_send``, ``tdm_motion_check``...). With a libtandem that lacks them
(``_library.ROBOT_SYMBOLS``) each method checks its arguments, then raises NotSupported ("this
libtandem has no robot support"). Motion checks with ``any_state`` need
``tdm_motion_check_flags`` as well, and say so the same way when the library lacks it."""

from __future__ import annotations

import ctypes
import math
import os
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from . import _arrays
from ._library import MOTION_ANY_STATE, ROBOT_SYMBOLS, IdBytes, RobotInfoStruct, RobotSceneInfoStruct, ephemeral_puts
from .errors import ServerCode, invalid, not_supported, server_error
from .types import QueryResult, RobotId, SceneId

__all__ = ["Joint", "Robot", "RobotScene", "RobotObject", "MotionResult", "RobotMixin", "motion_states"]

PathLike = Union[str, os.PathLike]

# Most states one motion may have (TDM_MOTION_MAX_STATES of the C side's motions.h).
MAX_MOTION_STATES = 10_000_000


@dataclass(frozen=True)
class Joint:
    """An active joint (non-fixed, non-mimic), as ``tandem robot joints`` prints it."""

    name: str
    lower: float
    upper: float


@dataclass(frozen=True)
class Robot:
    """A stored robot: its id and its active joints in configuration order (a depth-first walk
    from the root link, children in the order their joints appear in the URDF)."""

    id: RobotId
    joints: tuple[Joint, ...]
    name: str = ""
    n_links: int = 0
    n_elements: int = 0  # collision elements
    scenes: int = 0  # list_robots: robot scenes using it
    created: bool = False  # put_robot: False when the same robot was stored

    @property
    def n_joints(self) -> int:
        return len(self.joints)


@dataclass(frozen=True)
class RobotObject:
    """One object of a robot scene: a robot collision element (movable: ``link`` and ``element``,
    its index among the link's collisions), a shape of an object attached to a link (movable and
    ``attached``: ``link`` it moves with, ``world_object`` the attached object's id, ``shape``) or
    a world shape (fixed: ``world_object`` and ``shape``, its index in the object, primitives first
    then meshes, then planes). Query answers' ``object_pair`` holds these ids."""

    object_id: int
    movable: bool
    link: str
    element: int
    world_object: str
    shape: int
    attached: bool = False


@dataclass(frozen=True)
class RobotScene:
    """A robot in a MoveIt planning scene, stored as a scene: the robot's links are driven by each
    configuration, the world is fixed. ``objects`` by id; ``n_checks``: checked object pairs per
    configuration."""

    id: SceneId
    robot: Robot
    name: str = ""
    objects: tuple[RobotObject, ...] = ()
    n_checks: int = 0
    created: bool = False

    @property
    def n_joints(self) -> int:
        return self.robot.n_joints


@dataclass(frozen=True)
class MotionResult:
    """Answers to M motion checks: ``first_colliding`` (M,) int64, the smallest colliding state k
    or -1; ``n_states`` (M,) uint64; ``last_free`` (M, J) float64, state k - 1 (the end when free;
    NaN when k = 0). With ``any_state``, a colliding motion's k is some colliding state, not
    necessarily the first, and its ``last_free`` row is NaN."""

    first_colliding: np.ndarray
    n_states: np.ndarray
    last_free: np.ndarray


def _yaml_text(world_yaml: str) -> bytes:
    """A planning scene's YAML text as the C string the library takes."""
    if not isinstance(world_yaml, str):
        raise invalid(f"world_yaml must be a str of YAML, not {type(world_yaml).__name__}", field="world")
    if "\0" in world_yaml:
        raise invalid("world_yaml holds a NUL character", field="world")
    return world_yaml.encode()


def _file(path: PathLike, field: str) -> str:
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise invalid(f"{field}: {p}: no such file", field=field)
    return p


class RobotMixin:
    """The robot half of Client (mixed in; uses its library and connection)."""

    @property
    def has_robots(self) -> bool:
        """Whether the loaded libtandem exports the robot calls."""
        return self._lib.has_robots

    def _robot_call(self, what: str):
        """The library, when it has robot calls; NotSupported otherwise."""
        if not self._lib.has_robots:
            missing = [s for s in ROBOT_SYMBOLS if not hasattr(self._lib.cdll, s)]
            raise not_supported(
                f"{what}: this libtandem has no robot support ({self._lib.path} lacks {', '.join(missing)})"
            )
        return self._lib

    def put_robot(self, urdf_path: PathLike, srdf_path: Optional[PathLike] = None, name: str = "") -> Robot:
        """Stores a robot: a URDF and its collision meshes (``package://`` and relative names
        resolved against the URDF's folder), and optionally an SRDF whose disabled pairs are never
        checked. Returns the Robot with its active joints."""
        urdf = _file(urdf_path, "urdf")
        srdf = _file(srdf_path, "srdf") if srdf_path is not None else None
        lib = self._robot_call("put_robot")
        rid = IdBytes()
        created = ctypes.c_int()
        info = ctypes.POINTER(RobotInfoStruct)()
        self._check(
            lib.tdm_robot_put_files(
                self._ctx(),
                name.encode(),
                os.fsencode(urdf),
                os.fsencode(srdf) if srdf is not None else None,
                rid,
                ctypes.byref(created),
                ctypes.byref(info),
            )
        )
        try:
            r = _robot(info.contents)
        finally:
            lib.tdm_robot_info_free(info)
        return Robot(RobotId(bytes(rid)), r.joints, name, r.n_links, r.n_elements, 0, bool(created.value))

    def list_robots(self) -> list[Robot]:
        """The stored robots."""
        lib = self._robot_call("list_robots")
        arr = ctypes.POINTER(RobotInfoStruct)()
        n = ctypes.c_size_t()
        self._check(lib.tdm_robot_list(self._ctx(), ctypes.byref(arr), ctypes.byref(n)))
        try:
            return [_robot(arr[i]) for i in range(n.value)]
        finally:
            lib.tdm_robot_info_free(arr)

    def delete_robot(self, robot: Union[Robot, RobotId, bytes, str]) -> None:
        """Deletes a stored robot: UNKNOWN_ROBOT when absent, ROBOT_IN_USE while a robot scene
        uses it."""
        rid = RobotId(robot.id if isinstance(robot, Robot) else robot)
        lib = self._robot_call("delete_robot")
        self._check(lib.tdm_robot_delete(self._ctx(), (ctypes.c_uint8 * 32).from_buffer_copy(rid)))

    def put_robot_scene(
        self, robot: Robot, world_yaml_path: PathLike, name: str = "", ephemeral: bool = False
    ) -> RobotScene:
        """Stores the robot in a MoveIt planning scene (YAML: world collision objects, the
        allowed-collision matrix, the robot state's joint defaults, root transform and attached
        collision objects, which move with their links: ``RobotObject.attached``).
        ``ephemeral``: held in memory only, as ``Client.put_scene``'s."""
        world = _file(world_yaml_path, "world")
        return self._put_robot_scene(robot, name, ephemeral, "tdm_robot_scene_put_file", os.fsencode(world))

    def put_robot_scene_text(self, robot: Robot, world_yaml: str, name: str = "", ephemeral: bool = False) -> RobotScene:
        """As ``put_robot_scene``, the planning scene given as YAML text (a planner that makes its
        scenes in memory writes no file)."""
        return self._put_robot_scene(robot, name, ephemeral, "tdm_robot_scene_put", _yaml_text(world_yaml))

    def _put_robot_scene(self, robot: Robot, name: str, ephemeral: bool, call: str, world: bytes) -> RobotScene:
        if not isinstance(robot, Robot):
            raise invalid(f"robot must be a Robot (from put_robot), not {type(robot).__name__}", field="robot")
        lib = self._robot_call("put_robot_scene")
        sid = IdBytes()
        created = ctypes.c_int()
        info = ctypes.POINTER(RobotSceneInfoStruct)()
        with ephemeral_puts(lib, self._ctx(), ephemeral):
            self._check(
                getattr(lib, call)(
                    self._ctx(),
                    name.encode(),
                    (ctypes.c_uint8 * 32).from_buffer_copy(robot.id),
                    world,
                    sid,
                    ctypes.byref(created),
                    ctypes.byref(info),
                )
            )
        try:
            si = info.contents
            joints = _joints(si.joints, si.n_joints)
            objects = tuple(
                RobotObject(
                    int(o.object_id),
                    bool(o.movable),
                    (o.link or b"").decode(errors="replace"),
                    int(o.element),
                    (o.world_object or b"").decode(errors="replace"),
                    int(o.shape),
                    int(o.movable) == 2,
                )
                for o in (si.objects[i] for i in range(si.n_objects))
            )
            n_checks = int(si.n_checks)
        finally:
            lib.tdm_robot_scene_info_free(info)
        if joints != robot.joints:
            robot = Robot(robot.id, joints, robot.name, robot.n_links, robot.n_elements)
        return RobotScene(SceneId(bytes(sid)), robot, name, objects, n_checks, bool(created.value))

    def query_configs(
        self, scene: RobotScene, configs, mode: str = "bool", max_contacts: int = 0, want_pairs: bool = False
    ) -> QueryResult:
        """One query per configuration: configs (N, J), J = scene.n_joints, the active joints'
        values (radians, metres), in the robot's joint order. Answers as ``Client.query``;
        ``object_pair`` holds object ids of the scene (``scene.objects`` says what each is)."""
        from .client import MODES, _id_arg, _result

        _robot_scene(scene)
        if mode not in MODES:
            raise invalid(f"mode must be 'bool' or 'contacts', not {mode!r}", field="mode")
        if want_pairs and mode != "contacts":
            raise invalid("want_pairs needs mode='contacts'", field="want_pairs")
        q = _arrays.configurations(configs, scene.n_joints, "configs")
        lib = self._robot_call("query_configs")
        max_contacts = self._max_contacts(max_contacts)
        n, j = q.shape
        results = np.zeros(n, dtype=_arrays.RESULT_DTYPE)
        cap_contacts = max_contacts or self.limits.max_contacts or 1_000_000
        b = self._batch_limit(8 * j, scene.n_checks, cap_contacts if want_pairs else 0)
        chunks = [(s, min(n, s + b)) for s in range(0, n, b)]
        sid = _id_arg(scene.id)
        code = MODES[mode]

        def send(s, e, res, pairs, qid):
            return lib.tdm_query_configs_send(
                self._ctx(), sid, code, q[s:e].ctypes.data, j, e - s, max_contacts, res, pairs, qid
            )

        pairs = self._run_batches(send, results, chunks, want_pairs, cap_contacts, "configs", j)
        return _result(results, pairs, chunks, want_pairs)

    def check_configs(self, scene: RobotScene, configs) -> np.ndarray:
        """(N,) bool: which configurations (N, J) collide."""
        return self.query_configs(scene, configs, mode="bool").colliding

    def motions(self, scene: RobotScene, starts, ends, resolution: float, any_state: bool = False) -> np.ndarray:
        """Checks M straight joint-space motions starts[i] -> ends[i] (each (M, J)).

        Motion a -> b is checked at n = max(2, ceil(max_j |b_j - a_j| / resolution) + 1) states
        q_k = a + k/(n-1) (b - a), k = 0..n-1 (``motion_states``). Returns (M,) int64: -1 where every
        state is free, else the smallest colliding k.

        any_state: a colliding motion's answer is any colliding k, not necessarily the smallest,
        which is all a planner's plain validity check needs. The server then checks a few states
        first (the end, the middle, the quarters: tandemd's ``--motion-probes``), so that most
        colliding motions are answered sooner. Free motions answer -1 either way. It needs
        libtandem's ``tdm_motion_check_flags``; without it NotSupported is raised."""
        return self.motion_check(scene, starts, ends, resolution, any_state=any_state).first_colliding

    def motion_check(self, scene: RobotScene, starts, ends, resolution: float, any_state: bool = False) -> MotionResult:
        """``motions`` with every answer: the first colliding state, each motion's number of
        states, and the last free state before the first colliding one. With ``any_state`` (as in
        ``motions``) a colliding motion's state is any colliding one and its ``last_free`` row is
        NaN, as for a motion colliding at k = 0: the server sends no last free state then."""
        from .client import _id_arg

        a, b, r, motions, first, n_states, last_free = _motion_args(scene, starts, ends, resolution)
        m, j = a.shape
        states = _state_counts(a, b, r)
        lib = self._robot_call("motions")
        if any_state and not lib.has_motion_flags:
            raise not_supported(f"motions: this libtandem has no any_state ({lib.path} lacks tdm_motion_check_flags)")
        sid = _id_arg(scene.id)
        for s, e in self._motion_batches(states, j):
            outs = (first[s:e].ctypes.data, n_states[s:e].ctypes.data, last_free[s:e].ctypes.data)
            if any_state:  # n_points None: two configurations a motion, as tdm_motion_check takes them
                rc = lib.tdm_motion_check_flags(
                    self._ctx(), sid, r, motions[s:e].ctypes.data, j, None, e - s, MOTION_ANY_STATE, *outs
                )
            else:
                rc = lib.tdm_motion_check(self._ctx(), sid, r, motions[s:e].ctypes.data, j, e - s, *outs)
            if rc != 0:
                err = self._error(rc)
                if err.from_server and err.field == "motions" and err.index >= 0:
                    # NON_FINITE counts numbers, the others motions
                    shift = s * 2 * j if err.code == ServerCode.NON_FINITE else s
                    err = server_error(err.message, err.code, err.field, err.index + shift)
                raise err
        return MotionResult(first, n_states, last_free)

    def _motion_batches(self, states: np.ndarray, j: int):
        """Motions s..e per request: at most max_queries motions, max_motion_states states, and a
        frame of the server's size."""
        lim = self.limits
        most = self.batch or lim.max_queries or 65536
        if lim.max_queries:
            most = min(most, lim.max_queries)
        if lim.max_frame_bytes:
            most = min(most, max(1, (lim.max_frame_bytes - 256) // (16 * j + 8)))
        cap = getattr(lim, "max_motion_states", 0) or 0
        s, m = 0, len(states)
        while s < m:
            e = min(m, s + most)
            if cap:
                total = np.cumsum(states[s:e], dtype=np.float64)
                e = s + max(1, int(np.searchsorted(total, cap, side="right")))
            yield s, e
            s = e


def _joints(ptr, n) -> tuple[Joint, ...]:
    return tuple(
        Joint((ptr[i].name or b"").decode(errors="replace"), float(ptr[i].lower), float(ptr[i].upper)) for i in range(n)
    )


def _robot(r: RobotInfoStruct) -> Robot:
    return Robot(
        RobotId(bytes(r.robot_id)),
        _joints(r.joints, r.n_joints),
        (r.name or b"").decode(errors="replace"),
        int(r.n_links),
        int(r.n_elements),
        int(r.scenes),
        bool(r.created),
    )


def _motion_args(scene, starts, ends, resolution):
    """A motion check's checked arguments and its answers' arrays: starts and ends (M, J), the
    resolution, the motions (M, 2J: start, then end), first_colliding (-1), n_states, last_free."""
    _robot_scene(scene)
    a = _arrays.configurations(starts, scene.n_joints, "starts")
    b = _arrays.configurations(ends, scene.n_joints, "ends")
    if a.shape != b.shape:
        raise invalid(f"starts {a.shape} and ends {b.shape} must have the same shape", field="ends")
    r = _resolution(resolution)
    m, j = a.shape
    motions = np.ascontiguousarray(np.concatenate([a, b], axis=1))
    return a, b, r, motions, np.full(m, -1, dtype=np.int64), np.zeros(m, dtype=np.uint64), np.full((m, j), np.nan)


def _state_counts(a: np.ndarray, b: np.ndarray, r: float) -> np.ndarray:
    """Each motion's number of states (the formula of motion_states), refusing a motion of more
    than MAX_MOTION_STATES as the server would."""
    span = np.max(np.abs(b - a), axis=1) if a.shape[1] else np.zeros(a.shape[0])
    with np.errstate(over="ignore"):
        steps = np.ceil(span / r)
    bad = ~(steps + 1 <= MAX_MOTION_STATES)
    if bad.any():
        i = int(np.argmax(bad))
        raise invalid(
            f"motion {i} needs more than {MAX_MOTION_STATES} states at resolution {r:g}",
            code=ServerCode.LIMIT,
            field="motions",
            index=i,
        )
    return np.maximum(2, steps.astype(np.int64) + 1)


def _robot_scene(scene) -> None:
    if not isinstance(scene, RobotScene):
        raise invalid(f"scene must be a RobotScene (from put_robot_scene), not {type(scene).__name__}", field="scene")


def _resolution(r) -> float:
    if not isinstance(r, (int, float, np.floating, np.integer)) or not math.isfinite(r) or r <= 0:
        raise invalid(f"resolution must be a finite number > 0, not {r!r}", field="resolution")
    return float(r)


def motion_states(start, end, resolution: float) -> np.ndarray:
    """The states a motion check visits (issue 13): n = max(2, ceil(max_j |b_j - a_j| / R) + 1)
    states q_k = a + k/(n-1) (b - a), as an (n, J) float64 array, computed in double in the order
    the C side's motions.h does. The index of a row is the k that
    ``Client.motions`` returns."""
    a = _arrays.configurations(np.atleast_2d(start), None, "start")[0]
    b = _arrays.configurations(np.atleast_2d(end), a.shape[0], "end")[0]
    r = _resolution(resolution)
    span = float(np.max(np.abs(b - a))) if a.size else 0.0
    steps = math.ceil(span / r) if span / r != math.inf else math.inf
    if not steps + 1 <= MAX_MOTION_STATES:
        raise invalid(f"the motion needs more than {MAX_MOTION_STATES} states at resolution {r:g}", field="resolution")
    n = max(2, int(steps) + 1)
    k = np.arange(n, dtype=np.float64)[:, None] / (n - 1)
    return a[None, :] + k * (b - a)[None, :]
