"""The values Tandem's calls take and return: ids, scene objects, stored meshes and scenes, query
answers, server information and counters."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import numpy as np

from .errors import invalid

__all__ = [
    "MeshId",
    "SceneId",
    "RobotId",
    "SceneObject",
    "Scene",
    "MeshInfo",
    "SceneInfo",
    "QueryResult",
    "Limits",
    "ServerInfo",
    "Stats",
]

ID_BYTES = 32


class _Id(bytes):
    """A 32-byte content id (SHA-256, proto/README.md). Compares and hashes as bytes; str() and
    repr() show the 64 hex digits the ``tandem`` tool prints."""

    _kind = "id"

    def __new__(cls, value: Union[bytes, bytearray, memoryview, str, "_Id"]):
        if isinstance(value, str):
            try:
                value = bytes.fromhex(value)
            except ValueError:
                raise invalid(f"a {cls._kind} id is 64 hex digits, not {value!r}", field=f"{cls._kind}_id") from None
        try:
            value = bytes(value)
        except TypeError:
            raise invalid(f"a {cls._kind} id is 32 bytes or 64 hex digits, not a {type(value).__name__}", field=f"{cls._kind}_id") from None
        if len(value) != ID_BYTES:
            raise invalid(f"a {cls._kind} id is {ID_BYTES} bytes, not {len(value)}", field=f"{cls._kind}_id")
        return super().__new__(cls, value)

    def __str__(self) -> str:
        return self.hex()

    def __repr__(self) -> str:
        return f"{type(self).__name__}('{self.hex()}')"


class MeshId(_Id):
    """A stored mesh's id."""

    _kind = "mesh"


class SceneId(_Id):
    """A stored scene's id."""

    _kind = "scene"


class RobotId(_Id):
    """A stored robot's id (robot support, issue 13)."""

    _kind = "robot"


@dataclass(frozen=True)
class SceneObject:
    """One object of a scene: a stored mesh, either movable (posed by each query) or fixed at
    ``pose`` (``x y z qx qy qz qw``; the identity when None).

    ``object_id`` is the id queries' answers name; None gives the object its index in the list
    passed to ``Client.put_scene``."""

    mesh: Union[MeshId, bytes, str]
    movable: bool = False
    pose: Optional[Sequence[float]] = None
    object_id: Optional[int] = None

    @classmethod
    def fixed(cls, mesh, pose=None, object_id: Optional[int] = None) -> "SceneObject":
        return cls(mesh, False, pose, object_id)

    @classmethod
    def moving(cls, mesh, object_id: Optional[int] = None) -> "SceneObject":
        return cls(mesh, True, None, object_id)


@dataclass(frozen=True)
class Scene:
    """A stored scene as ``put_scene`` or ``list_scenes`` gives it.

    ``movable``: the movable object ids in the order a query's poses use (the second axis of an
    (N, M, 7) poses array)."""

    id: SceneId
    movable: tuple[int, ...]
    name: str = ""
    n_objects: int = 0
    created: bool = False
    robot_id: Optional["RobotId"] = None  # list_scenes: a robot scene's robot


@dataclass(frozen=True)
class MeshInfo:
    id: MeshId
    name: str
    n_vertices: int
    n_triangles: int
    scenes: int  # stored scenes that use it
    robots: int = 0  # stored robots that use it (a libtandem with robot calls)


SceneInfo = Scene


@dataclass(frozen=True)
class QueryResult:
    """Answers to N queries (numpy arrays, one row per query).

    colliding: (N,) bool.
    contacts: (N,) uint32: intersecting triangle pairs counted (1 in bool mode when colliding),
        capped at max_contacts.
    truncated: (N,) bool: contacts mode, more pairs exist than the cap.
    object_pair: (N, 2) int64: the first colliding (object_a, object_b), -1 -1 when free.
    pairs: with want_pairs, (P, 4) uint32 rows (object_a, triangle_a, object_b, triangle_b) of every
        query one after the other; None otherwise.
    pair_offsets: with want_pairs, (N + 1,) int64: query i's pairs are
        ``pairs[pair_offsets[i]:pair_offsets[i + 1]]``; None otherwise."""

    colliding: np.ndarray
    contacts: np.ndarray
    truncated: np.ndarray
    object_pair: np.ndarray
    pairs: Optional[np.ndarray] = None
    pair_offsets: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return int(self.colliding.shape[0])

    def pairs_of(self, i: int) -> np.ndarray:
        """Query i's contact pairs, (P_i, 4) uint32 (want_pairs only)."""
        if self.pairs is None or self.pair_offsets is None:
            raise invalid("this result was asked without want_pairs", field="want_pairs")
        return self.pairs[self.pair_offsets[i] : self.pair_offsets[i + 1]]


@dataclass(frozen=True)
class Limits:
    """The server's limits (HelloReply.limits); 0 when the server did not say."""

    max_frame_bytes: int
    max_vertices: int
    max_triangles: int
    max_objects: int
    max_queries: int
    max_contacts: int
    max_pipelined: int
    max_connections: int
    max_meshes_bytes: int
    # a libtandem with robot calls (0 otherwise, or when the server did not say)
    max_robots: int = 0
    max_robot_text_bytes: int = 0
    max_motion_states: int = 0
    max_query_work: int = 0
    # a libtandem with tdm_limits_size (0 otherwise, or when the server did not say)
    max_reply_pairs: int = 0
    max_ring_bytes: int = 0
    max_query_tasks: int = 0
    max_scene_triangles: int = 0
    max_robot_triangles: int = 0


@dataclass(frozen=True)
class ServerInfo:
    protocol_version: int
    server_version: str
    engine: str  # "cpu", "gpu", "hybrid" or "unspecified"
    limits: Limits


@dataclass(frozen=True)
class Stats:
    """The server's counters since it started (proto/README.md, Stats); ``engine`` is a name."""

    server_version: str
    engine: str
    uptime_s: float
    connections: int
    requests: int
    errors: int
    queries: int
    batches: int
    mean_batch_queries: float
    mean_batch_tasks: float
    meshes: int
    scenes: int
    meshes_bytes: int
    engine_seconds: float
    cpu_queries: int
    gpu_queries: int
    gpu_seconds: float
    engine_detail: str
    hybrid_queries: int
    cpu_tasks: int
    gpu_tasks: int
    hybrid_tasks: int
    mean_workpile_pairs: float
    gpu_iterations: int
    device_bytes: int
    device_meshes: int
    dispatch_threshold: int
    robots: int = 0  # robots stored (a libtandem with robot calls)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)
