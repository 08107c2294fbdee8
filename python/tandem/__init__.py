"""Tandem's Python client: exact batched collision queries against tandemd, numpy in and out.

    import numpy as np, tandem
    with tandem.Client("127.0.0.1:7450") as c:
        env = c.put_mesh(env_vertices, env_triangles, name="env")
        robot = c.put_mesh(robot_vertices, robot_triangles, name="robot")
        scene = c.put_scene([tandem.SceneObject.fixed(env), tandem.SceneObject.moving(robot)])
        hits = c.check(scene, poses)        # poses (N, 7): x y z qx qy qz qw -> (N,) bool

A pure-Python package over libtandem (the C client) through ctypes; see ``load_library`` for where
the library is looked for, and python/README.md in the repository."""

from ._library import LibraryNotFound, load_library
from .client import Client
from .multi import MultiClient
from .errors import ClientCode, InvalidArgument, NotSupported, ServerCode, TandemError
from .robots import Joint, MotionResult, Robot, RobotObject, RobotScene, motion_states
from .local import LocalRobot, LocalScene
from .types import (
    Limits,
    MeshId,
    MeshInfo,
    QueryResult,
    RobotId,
    Scene,
    SceneId,
    SceneInfo,
    SceneObject,
    ServerInfo,
    Stats,
)

__version__ = "0.1.0"

__all__ = [
    "Client",
    "MultiClient",
    "load_library",
    "LibraryNotFound",
    "TandemError",
    "InvalidArgument",
    "NotSupported",
    "ServerCode",
    "ClientCode",
    "MeshId",
    "SceneId",
    "RobotId",
    "SceneObject",
    "Scene",
    "SceneInfo",
    "MeshInfo",
    "QueryResult",
    "Limits",
    "ServerInfo",
    "Stats",
    "Joint",
    "Robot",
    "RobotScene",
    "RobotObject",
    "MotionResult",
    "motion_states",
    "LocalRobot",
    "LocalScene",
]
