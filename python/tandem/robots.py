"""Robots: URDF robots in MoveIt planning scenes, joint-space queries and motion checks
(issue 13). The Python side is complete (arguments, shapes, checks, return types); the calls into
libtandem are bound once libtandem exports its robot calls (``_library.ROBOT_SYMBOLS``). Until then
each method checks its arguments, then raises NotSupported ("this libtandem has no robot support").

Binding them is local to this file: declare the prototypes in ``_library._PROTOTYPES`` and replace
each ``self._robot_call(...)`` below by the ctypes call, as ``Client.query`` does for poses."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from . import _arrays
from ._library import ROBOT_SYMBOLS
from .errors import invalid, not_supported
from .types import QueryResult, RobotId, SceneId

__all__ = ["Joint", "Robot", "RobotScene", "RobotMixin"]

PathLike = Union[str, os.PathLike]

# Most states one motion may have (tools/motions.h, TDM_MOTION_MAX_STATES).
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

    @property
    def n_joints(self) -> int:
        return len(self.joints)


@dataclass(frozen=True)
class RobotScene:
    """A robot in a MoveIt planning scene, stored as a scene: the robot's links are driven by each
    configuration, the world is fixed."""

    id: SceneId
    robot: Robot
    name: str = ""

    @property
    def n_joints(self) -> int:
        return self.robot.n_joints


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
        if not self._lib.has_robots:
            missing = [s for s in ROBOT_SYMBOLS if not hasattr(self._lib.cdll, s)]
            raise not_supported(
                f"{what}: this libtandem has no robot support ({self._lib.path} lacks {', '.join(missing)})"
            )
        raise not_supported(
            f"{what}: {self._lib.path} has robot calls but this tandem package does not bind them yet"
        )

    def put_robot(self, urdf_path: PathLike, srdf_path: Optional[PathLike] = None, name: str = "") -> Robot:
        """Stores a robot: a URDF and its collision meshes (``package://`` and relative names
        resolved against the URDF's folder), and optionally an SRDF whose disabled pairs are never
        checked. Returns the Robot with its active joints."""
        _file(urdf_path, "urdf")
        if srdf_path is not None:
            _file(srdf_path, "srdf")
        return self._robot_call("put_robot")

    def list_robots(self) -> list[Robot]:
        """The stored robots."""
        return self._robot_call("list_robots")

    def delete_robot(self, robot: Union[Robot, RobotId, bytes, str]) -> None:
        """Deletes a stored robot."""
        RobotId(robot.id if isinstance(robot, Robot) else robot)
        return self._robot_call("delete_robot")

    def put_robot_scene(self, robot: Robot, world_yaml_path: PathLike, name: str = "") -> RobotScene:
        """Stores the robot in a MoveIt planning scene (YAML: world collision objects, the
        allowed-collision matrix, the robot state's joint defaults and root transform)."""
        if not isinstance(robot, Robot):
            raise invalid(f"robot must be a Robot (from put_robot), not {type(robot).__name__}", field="robot")
        _file(world_yaml_path, "world")
        return self._robot_call("put_robot_scene")

    def query_configs(
        self, scene: RobotScene, configs, mode: str = "bool", max_contacts: int = 0
    ) -> QueryResult:
        """One query per configuration: configs (N, J), J = scene.n_joints, the active joints'
        values (radians, metres). Answers as ``Client.query`` (object_pair: link and object ids)."""
        _robot_scene(scene)
        if mode not in ("bool", "contacts"):
            raise invalid(f"mode must be 'bool' or 'contacts', not {mode!r}", field="mode")
        _arrays.configurations(configs, scene.n_joints, "configs")
        return self._robot_call("query_configs")

    def check_configs(self, scene: RobotScene, configs) -> np.ndarray:
        """(N,) bool: which configurations (N, J) collide."""
        return self.query_configs(scene, configs, mode="bool").colliding

    def motions(self, scene: RobotScene, starts, ends, resolution: float) -> np.ndarray:
        """Checks M straight joint-space motions starts[i] -> ends[i] (each (M, J)).

        Motion a -> b is checked at n = max(2, ceil(max_j |b_j - a_j| / resolution) + 1) states
        q_k = a + k/(n-1) (b - a), k = 0..n-1 (``motion_states``). Returns (M,) int64: -1 where every
        state is free, else the smallest colliding k."""
        _robot_scene(scene)
        a = _arrays.configurations(starts, scene.n_joints, "starts")
        b = _arrays.configurations(ends, scene.n_joints, "ends")
        if a.shape != b.shape:
            raise invalid(f"starts {a.shape} and ends {b.shape} must have the same shape", field="ends")
        _resolution(resolution)
        return self._robot_call("motions")


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
    tools/motions.h does. The index of a row is the k that
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
