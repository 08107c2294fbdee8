"""Finding and loading libtandem, and the ctypes mirror of the part of ``tandem.h`` we call.

The structures below follow ``client/tandem.h`` field for field; ctypes lays them out with the C
compiler's natural alignment, which is what the header relies on. Only the blocking layer is bound
(``tdm_client_*``, ``tdm_mesh_*``, ``tdm_scene_*``, ``tdm_query*``, ``tdm_stats_get``); Python
programs that want an event loop run one client per thread instead.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from pathlib import Path
from typing import Optional

from .errors import not_supported

__all__ = ["Library", "load_library", "LibraryNotFound", "ephemeral_puts"]

ID_BYTES = 32
SONAME = "libtandem.so.0"

# libtandem's robot calls (issue 13, point 7). A library that exports them also has the longer
# tdm_limits, tdm_mesh_info, tdm_scene_info and tdm_stats of that version (fields appended at
# their ends); a library that lacks any of them is read with the structs before it, and has no
# robot support.
ROBOT_SYMBOLS = (
    "tdm_robot_put_files",
    "tdm_robot_list",
    "tdm_robot_info_free",
    "tdm_robot_delete",
    "tdm_robot_scene_put_file",
    "tdm_robot_scene_info_free",
    "tdm_query_configs_send",
    "tdm_motion_check",
)


class LibraryNotFound(OSError):
    """No libtandem could be loaded; the message lists every place tried and why each failed."""


# ---- tandem.h's structures -------------------------------------------------------------------

IdBytes = ctypes.c_uint8 * ID_BYTES


class ServerErrorStruct(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_int),
        ("message", ctypes.c_char_p),
        ("field", ctypes.c_char_p),
        ("index", ctypes.c_int64),
    ]


class LimitsStruct(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint32)
        for name in (
            "max_frame_bytes",
            "max_vertices",
            "max_triangles",
            "max_objects",
            "max_queries",
            "max_contacts",
            "max_pipelined",
            "max_connections",
        )
    ] + [("max_meshes_bytes", ctypes.c_uint64)]


class LimitsRobotStruct(ctypes.Structure):
    _fields_ = LimitsStruct._fields_ + [
        ("max_robots", ctypes.c_uint32),
        ("max_robot_text_bytes", ctypes.c_uint32),
        ("max_motion_states", ctypes.c_uint64),
        ("max_query_work", ctypes.c_uint64),
    ]


class LimitsV2Struct(ctypes.Structure):
    """tdm_limits of a library with tdm_limits_size: every HelloReply limit."""

    _fields_ = LimitsRobotStruct._fields_ + [
        ("max_reply_pairs", ctypes.c_uint32),
        ("max_ring_bytes", ctypes.c_uint32),
        ("max_query_tasks", ctypes.c_uint64),
        ("max_scene_triangles", ctypes.c_uint32),
        ("max_robot_triangles", ctypes.c_uint32),
    ]


class ServerInfoStruct(ctypes.Structure):
    _fields_ = [
        ("protocol_version", ctypes.c_uint32),
        ("server_version", ctypes.c_char * 128),
        ("engine", ctypes.c_int),
        ("limits", LimitsStruct),
    ]


class ServerInfoRobotStruct(ctypes.Structure):
    _fields_ = ServerInfoStruct._fields_[:-1] + [("limits", LimitsRobotStruct)]


class ServerInfoV2Struct(ctypes.Structure):
    _fields_ = ServerInfoStruct._fields_[:-1] + [("limits", LimitsV2Struct)]


class MeshInfoStruct(ctypes.Structure):
    _fields_ = [
        ("mesh_id", IdBytes),
        ("name", ctypes.c_char_p),
        ("n_vertices", ctypes.c_uint32),
        ("n_triangles", ctypes.c_uint32),
        ("scenes", ctypes.c_uint32),
    ]


class MeshInfoRobotStruct(ctypes.Structure):
    _fields_ = MeshInfoStruct._fields_ + [("robots", ctypes.c_uint32)]


class SceneInfoStruct(ctypes.Structure):
    _fields_ = [
        ("scene_id", IdBytes),
        ("name", ctypes.c_char_p),
        ("n_objects", ctypes.c_uint32),
        ("movable", ctypes.POINTER(ctypes.c_uint32)),
        ("n_movable", ctypes.c_size_t),
    ]


class SceneInfoRobotStruct(ctypes.Structure):
    _fields_ = SceneInfoStruct._fields_ + [("is_robot_scene", ctypes.c_int), ("robot_id", IdBytes)]


class JointInfoStruct(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("lower", ctypes.c_double), ("upper", ctypes.c_double)]


class RobotInfoStruct(ctypes.Structure):
    _fields_ = [
        ("robot_id", IdBytes),
        ("name", ctypes.c_char_p),
        ("joints", ctypes.POINTER(JointInfoStruct)),
        ("n_joints", ctypes.c_size_t),
        ("n_links", ctypes.c_uint32),
        ("n_elements", ctypes.c_uint32),
        ("scenes", ctypes.c_uint32),
        ("created", ctypes.c_int),
    ]


class RobotObjectStruct(ctypes.Structure):
    _fields_ = [
        ("object_id", ctypes.c_uint32),
        ("movable", ctypes.c_int),
        ("link", ctypes.c_char_p),
        ("element", ctypes.c_uint32),
        ("world_object", ctypes.c_char_p),
        ("shape", ctypes.c_uint32),
    ]


class RobotSceneInfoStruct(ctypes.Structure):
    _fields_ = [
        ("scene_id", IdBytes),
        ("robot_id", IdBytes),
        ("created", ctypes.c_int),
        ("joints", ctypes.POINTER(JointInfoStruct)),
        ("n_joints", ctypes.c_size_t),
        ("objects", ctypes.POINTER(RobotObjectStruct)),
        ("n_objects", ctypes.c_size_t),
        ("n_checks", ctypes.c_uint32),
    ]


class SceneObjectStruct(ctypes.Structure):
    _fields_ = [
        ("object_id", ctypes.c_uint32),
        ("mesh_id", IdBytes),
        ("movable", ctypes.c_int),
        ("has_pose", ctypes.c_int),
        ("pose", ctypes.c_double * 7),
    ]


class ObjectPairStruct(ctypes.Structure):
    _fields_ = [("a", ctypes.c_uint32), ("b", ctypes.c_uint32)]


class PairsStruct(ctypes.Structure):
    """tdm_pairs: caller-owned room for contact pairs (data points into a numpy array)."""

    _fields_ = [("data", ctypes.c_void_p), ("cap", ctypes.c_size_t), ("count", ctypes.c_size_t)]


class StatsStruct(ctypes.Structure):
    _fields_ = [
        ("server_version", ctypes.c_char * 128),
        ("engine", ctypes.c_int),
        ("uptime_s", ctypes.c_double),
        ("connections", ctypes.c_uint32),
        ("requests", ctypes.c_uint64),
        ("errors", ctypes.c_uint64),
        ("queries", ctypes.c_uint64),
        ("batches", ctypes.c_uint64),
        ("mean_batch_queries", ctypes.c_double),
        ("mean_batch_tasks", ctypes.c_double),
        ("meshes", ctypes.c_uint32),
        ("scenes", ctypes.c_uint32),
        ("meshes_bytes", ctypes.c_uint64),
        ("engine_seconds", ctypes.c_double),
        ("cpu_queries", ctypes.c_uint64),
        ("gpu_queries", ctypes.c_uint64),
        ("gpu_seconds", ctypes.c_double),
        ("engine_detail", ctypes.c_char * 256),
        ("hybrid_queries", ctypes.c_uint64),
        ("cpu_tasks", ctypes.c_uint64),
        ("gpu_tasks", ctypes.c_uint64),
        ("hybrid_tasks", ctypes.c_uint64),
        ("mean_workpile_pairs", ctypes.c_double),
        ("gpu_iterations", ctypes.c_uint64),
        ("device_bytes", ctypes.c_uint64),
        ("device_meshes", ctypes.c_uint32),
        ("dispatch_threshold", ctypes.c_uint64),
        # the robot version's field (read only from a library with robot calls), then room for
        # fields a later libtandem may append: tdm_stats_get writes the whole struct it knows
        ("robots", ctypes.c_uint32),
        ("_spare", ctypes.c_uint8 * 512),
    ]


class ConnectOptsStruct(ctypes.Structure):
    _fields_ = [
        ("addr", ctypes.c_char_p),
        ("timeout_ms", ctypes.c_int),
        ("io_timeout_ms", ctypes.c_int),
        ("auth_token", ctypes.c_char_p),
        ("client_name", ctypes.c_char_p),
        ("max_reply_bytes", ctypes.c_uint32),
        # tls:// addresses; a libtandem older than TLS reads the struct without it
        ("tls_ca_file", ctypes.c_char_p),
    ]


# tdm_query_result and tdm_contact are read as numpy structured arrays (zero copy); their layout
# is checked against these ctypes mirrors when the library is loaded.
class QueryResultStruct(ctypes.Structure):
    _fields_ = [
        ("colliding", ctypes.c_uint32),
        ("truncated", ctypes.c_uint32),
        ("contacts", ctypes.c_uint32),
        ("object_a", ctypes.c_uint32),
        ("object_b", ctypes.c_uint32),
        ("n_pairs", ctypes.c_uint32),
        ("first_pair", ctypes.c_uint64),
    ]


class ContactStruct(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint32) for n in ("object_a", "triangle_a", "object_b", "triangle_b")]


# ---- prototypes ----------------------------------------------------------------------------

_c = ctypes
_P = ctypes.c_void_p  # tdm_client *
_ID = ctypes.POINTER(ctypes.c_uint8)
_PROTOTYPES = {
    "tdm_client_strerror": (_c.c_char_p, [_c.c_int]),
    "tdm_server_code_name": (_c.c_char_p, [_c.c_int]),
    "tdm_engine_name": (_c.c_char_p, [_c.c_int]),
    "tdm_client_connect_with": (_P, [_c.POINTER(ConnectOptsStruct)]),
    "tdm_client_free": (None, [_P]),
    "tdm_client_err": (_c.c_int, [_P]),
    "tdm_client_errstr": (_c.c_char_p, [_P]),
    "tdm_client_server_error": (_c.POINTER(ServerErrorStruct), [_P]),
    "tdm_client_server_info": (_c.c_void_p, [_P]),
    "tdm_client_set_timeout": (None, [_P, _c.c_int]),
    "tdm_mesh_put": (
        _c.c_int,
        [_P, _c.c_char_p, _c.c_void_p, _c.c_uint32, _c.c_void_p, _c.c_uint32, _ID, _c.POINTER(_c.c_int)],
    ),
    # the list calls' structs depend on the library's version: passed as void pointers
    "tdm_mesh_list": (_c.c_int, [_P, _c.POINTER(_c.c_void_p), _c.POINTER(_c.c_size_t)]),
    "tdm_mesh_list_free": (None, [_c.c_void_p]),
    "tdm_mesh_delete": (_c.c_int, [_P, _ID]),
    "tdm_scene_put": (
        _c.c_int,
        [
            _P,
            _c.c_char_p,
            _c.POINTER(SceneObjectStruct),
            _c.c_size_t,
            _c.POINTER(ObjectPairStruct),
            _c.c_size_t,
            _ID,
            _c.POINTER(_c.c_int),
            _c.POINTER(_c.c_uint32),
            _c.c_size_t,
            _c.POINTER(_c.c_size_t),
        ],
    ),
    "tdm_scene_list": (_c.c_int, [_P, _c.POINTER(_c.c_void_p), _c.POINTER(_c.c_size_t)]),
    "tdm_scene_list_free": (None, [_c.c_void_p]),
    "tdm_scene_delete": (_c.c_int, [_P, _ID]),
    "tdm_query": (
        _c.c_int,
        [_P, _ID, _c.c_int, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_uint32, _c.c_void_p, _c.POINTER(PairsStruct)],
    ),
    "tdm_query_send": (
        _c.c_int,
        [
            _P,
            _ID,
            _c.c_int,
            _c.c_void_p,
            _c.c_uint32,
            _c.c_size_t,
            _c.c_uint32,
            _c.c_void_p,
            _c.POINTER(PairsStruct),
            _c.POINTER(_c.c_uint64),
        ],
    ),
    "tdm_query_wait": (_c.c_int, [_P, _c.POINTER(_c.c_uint64), _c.POINTER(_c.c_int)]),
    "tdm_query_outstanding": (_c.c_size_t, [_P]),
    "tdm_stats_get": (_c.c_int, [_P, _c.POINTER(StatsStruct)]),
}


_QUERY_ARGS = [_P, _ID, _c.c_int, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_uint32, _c.c_void_p]
# tdm_robot_scene_put and _file: client, name, robot id, YAML text or its path, scene id, created, info
_ROBOT_SCENE_PUT_ARGS = [
    _P,
    _c.c_char_p,
    _ID,
    _c.c_char_p,
    _ID,
    _c.POINTER(_c.c_int),
    _c.POINTER(_c.POINTER(RobotSceneInfoStruct)),
]

_ROBOT_PROTOTYPES = {
    "tdm_robot_put_files": (
        _c.c_int,
        [_P, _c.c_char_p, _c.c_char_p, _c.c_char_p, _ID, _c.POINTER(_c.c_int), _c.POINTER(_c.POINTER(RobotInfoStruct))],
    ),
    "tdm_robot_list": (_c.c_int, [_P, _c.POINTER(_c.POINTER(RobotInfoStruct)), _c.POINTER(_c.c_size_t)]),
    "tdm_robot_info_free": (None, [_c.POINTER(RobotInfoStruct)]),
    "tdm_robot_delete": (_c.c_int, [_P, _ID]),
    "tdm_robot_scene_put": (_c.c_int, _ROBOT_SCENE_PUT_ARGS),
    "tdm_robot_scene_put_file": (_c.c_int, _ROBOT_SCENE_PUT_ARGS),
    "tdm_robot_scene_info_free": (None, [_c.POINTER(RobotSceneInfoStruct)]),
    "tdm_query_configs_send": (_c.c_int, _QUERY_ARGS + [_c.POINTER(PairsStruct), _c.POINTER(_c.c_uint64)]),
    "tdm_motion_check": (
        _c.c_int,
        [_P, _ID, _c.c_double, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_void_p, _c.c_void_p, _c.c_void_p],
    ),
}


# motion checks with flags (TDM_MOTION_*): absent from libraries before MotionCheck's any_state
MOTION_ANY_STATE = 1  # TDM_MOTION_ANY_STATE
_MOTION_FLAGS_PROTOTYPES = {
    "tdm_motion_check_flags": (
        _c.c_int,
        [
            _P,
            _ID,
            _c.c_double,
            _c.c_void_p,
            _c.c_uint32,
            _c.c_void_p,
            _c.c_size_t,
            _c.c_uint,
            _c.c_void_p,
            _c.c_void_p,
            _c.c_void_p,
        ],
    ),
}


_M = ctypes.c_void_p  # tdm_multi *
_MULTI_PROTOTYPES = {
    "tdm_multi_connect": (_M, [_c.c_void_p, _c.c_size_t, _c.POINTER(ConnectOptsStruct)]),
    "tdm_multi_free": (None, [_M]),
    "tdm_multi_err": (_c.c_int, [_M]),
    "tdm_multi_errstr": (_c.c_char_p, [_M]),
    "tdm_multi_server_error": (_c.POINTER(ServerErrorStruct), [_M]),
    "tdm_multi_set_retry": (None, [_M, _c.c_int, _c.c_int]),
    "tdm_multi_servers": (_c.c_size_t, [_M]),
    "tdm_multi_server_state": (
        _c.c_int,
        [_M, _c.c_size_t, _c.POINTER(_c.c_char_p), _c.POINTER(_c.c_char_p)],
    ),
    "tdm_multi_resent": (_c.c_size_t, [_M]),
    "tdm_multi_mesh_put": (
        _c.c_int,
        [_M, _c.c_char_p, _c.c_void_p, _c.c_uint32, _c.c_void_p, _c.c_uint32, _ID, _c.POINTER(_c.c_int)],
    ),
    "tdm_multi_scene_put": (
        _c.c_int,
        [
            _M,
            _c.c_char_p,
            _c.POINTER(SceneObjectStruct),
            _c.c_size_t,
            _c.POINTER(ObjectPairStruct),
            _c.c_size_t,
            _ID,
            _c.POINTER(_c.c_int),
            _c.POINTER(_c.c_uint32),
            _c.c_size_t,
            _c.POINTER(_c.c_size_t),
        ],
    ),
    "tdm_multi_query": (
        _c.c_int,
        [_M, _ID, _c.c_int, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_uint32, _c.c_void_p, _c.POINTER(PairsStruct)],
    ),
}

# robots on several servers: absent from libraries before issue 13's device path
_MULTI_ROBOT_PROTOTYPES = {
    "tdm_multi_robot_put_files": (
        _c.c_int,
        [_M, _c.c_char_p, _c.c_char_p, _c.c_char_p, _ID, _c.POINTER(_c.c_int), _c.POINTER(_c.POINTER(RobotInfoStruct))],
    ),
    "tdm_multi_robot_scene_put": (
        _c.c_int,
        [_M, _c.c_char_p, _ID, _c.c_char_p, _ID, _c.POINTER(_c.c_int)],
    ),
    "tdm_multi_robot_scene_put_file": (
        _c.c_int,
        [_M, _c.c_char_p, _ID, _c.c_char_p, _ID, _c.POINTER(_c.c_int)],
    ),
    "tdm_multi_query_configs": (
        _c.c_int,
        [_M, _ID, _c.c_int, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_uint32, _c.c_void_p, _c.POINTER(PairsStruct)],
    ),
    "tdm_multi_motion_check": (
        _c.c_int,
        [_M, _ID, _c.c_double, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_void_p, _c.c_void_p, _c.c_void_p],
    ),
}

# several servers' motion checks with flags: absent from libraries before 2026-11-28
_MULTI_MOTION_FLAGS_PROTOTYPES = {
    "tdm_multi_motion_check_flags": (
        _c.c_int,
        [_M, _ID, _c.c_double, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_uint, _c.c_void_p, _c.c_void_p,
         _c.c_void_p],
    ),
}


# ephemeral scenes (held in memory only): absent from libraries before the thirty-sixth session
_EPHEMERAL_PROTOTYPES = {
    "tdm_client_set_ephemeral_scenes": (None, [_P, _c.c_int]),
}
_MULTI_EPHEMERAL_PROTOTYPES = {
    "tdm_multi_set_ephemeral_scenes": (None, [_M, _c.c_int]),
}

_LIMITS_SIZE_PROTOTYPES = {
    "tdm_limits_size": (_c.c_size_t, []),
}

# the local engine (tdm_local_*): absent from libraries before the fortieth session
_LOCAL_PROTOTYPES = {
    "tdm_local_create": (_c.c_void_p, []),
    "tdm_local_free": (None, [_c.c_void_p]),
    "tdm_local_errstr": (_c.c_char_p, [_c.c_void_p]),
    "tdm_local_robot_load": (_c.c_int, [_c.c_void_p, _c.c_char_p, _c.c_char_p, _c.POINTER(_c.c_void_p)]),
    "tdm_local_robot_free": (None, [_c.c_void_p]),
    "tdm_local_robot_id": (None, [_c.c_void_p, _ID]),
    "tdm_local_robot_joints": (_c.c_uint32, [_c.c_void_p]),
    "tdm_local_scene_create": (_c.c_int, [_c.c_void_p, _c.c_void_p, _c.c_char_p, _c.POINTER(_c.c_void_p)]),
    "tdm_local_scene_create_file": (_c.c_int, [_c.c_void_p, _c.c_void_p, _c.c_char_p, _c.POINTER(_c.c_void_p)]),
    "tdm_local_scene_free": (None, [_c.c_void_p]),
    "tdm_local_scene_id": (None, [_c.c_void_p, _c.c_int, _ID]),
    "tdm_local_query_configs": (
        _c.c_int,
        [_c.c_void_p, _c.c_void_p, _c.c_int, _c.c_void_p, _c.c_uint32, _c.c_size_t, _c.c_uint32, _c.c_void_p],
    ),
}
LOCAL_SYMBOLS = tuple(_LOCAL_PROTOTYPES)

_RING_PROTOTYPES = {
    "tdm_client_ring": (_c.c_int, [_P, _c.c_uint32, _c.c_int]),
    "tdm_client_ring_open": (_c.c_int, [_P]),
}


class ephemeral_puts:
    """Within it, the scene puts of a libtandem client context (``tdm_client *``) are ephemeral when
    ``on`` (``tdm_client_set_ephemeral_scenes``); back to stored after it. NotSupported when the
    library cannot."""

    def __init__(self, lib, ctx, on: bool, setter: str = "tdm_client_set_ephemeral_scenes"):
        self.lib, self.ctx, self.on, self.setter = lib, ctx, bool(on), setter
        if self.on and not hasattr(lib, setter):
            raise not_supported(f"ephemeral scenes: this libtandem ({lib.path}) lacks {setter}")

    def __enter__(self):
        if self.on:
            getattr(self.lib, self.setter)(self.ctx, 1)
        return self

    def __exit__(self, *exc):
        if self.on:
            getattr(self.lib, self.setter)(self.ctx, 0)
        return False


class Library:
    """A loaded libtandem with its prototypes declared.

    ``path`` is where it was loaded from; ``has_robots`` says whether it exports the robot calls
    (``ROBOT_SYMBOLS``), and so which layout its list and info structs have (``MeshInfo``,
    ``SceneInfo``, ``ServerInfo``); ``has_motion_flags`` whether it also exports
    ``tdm_motion_check_flags`` (motion checks with ``any_state``); ``has_ring`` whether it has shared-memory
    rings (``tdm_client_ring``); ``has_ephemeral`` whether scenes can be put ephemeral
    (``tdm_client_set_ephemeral_scenes``); ``has_all_limits`` whether its ``tdm_limits`` carries every
    HelloReply limit (``tdm_limits_size``). Calls are reached as attributes (``lib.tdm_mesh_put``)."""

    def __init__(self, cdll: ctypes.CDLL, path: str):
        self.cdll = cdll
        self.path = path
        missing = [name for name in _PROTOTYPES if not hasattr(cdll, name)]
        if missing:
            raise LibraryNotFound(f"{path} is not a usable libtandem: it lacks {', '.join(missing)}")
        self._declare(_PROTOTYPES)
        self.has_robots = all(hasattr(cdll, name) for name in ROBOT_SYMBOLS)
        if self.has_robots:
            self._declare(_ROBOT_PROTOTYPES)
        self.has_motion_flags = self.has_robots and all(hasattr(cdll, name) for name in _MOTION_FLAGS_PROTOTYPES)
        if self.has_motion_flags:
            self._declare(_MOTION_FLAGS_PROTOTYPES)
        # several servers (tdm_multi): absent from libraries before issue 14
        self.has_multi = all(hasattr(cdll, name) for name in _MULTI_PROTOTYPES)
        if self.has_multi:
            self._declare(_MULTI_PROTOTYPES)
        self.has_multi_robots = (
            self.has_multi and self.has_robots and all(hasattr(cdll, name) for name in _MULTI_ROBOT_PROTOTYPES)
        )
        if self.has_multi_robots:
            self._declare(_MULTI_ROBOT_PROTOTYPES)
        # shared-memory rings (tdm_client_ring): absent from libraries before the thirty-third session
        self.has_ring = all(hasattr(cdll, name) for name in _RING_PROTOTYPES)
        if self.has_ring:
            self._declare(_RING_PROTOTYPES)
        self.has_multi_motion_flags = self.has_multi_robots and all(
            hasattr(cdll, name) for name in _MULTI_MOTION_FLAGS_PROTOTYPES
        )
        if self.has_multi_motion_flags:
            self._declare(_MULTI_MOTION_FLAGS_PROTOTYPES)
        self.has_ephemeral = all(hasattr(cdll, name) for name in _EPHEMERAL_PROTOTYPES)
        if self.has_ephemeral:
            self._declare(_EPHEMERAL_PROTOTYPES)
        self.has_multi_ephemeral = self.has_multi and all(hasattr(cdll, name) for name in _MULTI_EPHEMERAL_PROTOTYPES)
        if self.has_multi_ephemeral:
            self._declare(_MULTI_EPHEMERAL_PROTOTYPES)
        # every HelloReply limit (tdm_limits_size, which says how long the library's tdm_limits is):
        # absent from libraries before the thirty-ninth session
        self.has_all_limits = self.has_robots and all(hasattr(cdll, name) for name in _LIMITS_SIZE_PROTOTYPES)
        if self.has_all_limits:
            self._declare(_LIMITS_SIZE_PROTOTYPES)
            self.has_all_limits = self.tdm_limits_size() >= ctypes.sizeof(LimitsV2Struct)
        self.has_local = all(hasattr(cdll, name) for name in _LOCAL_PROTOTYPES)
        if self.has_local:
            self._declare(_LOCAL_PROTOTYPES)
        # the structs of this library's version
        self.MeshInfo = MeshInfoRobotStruct if self.has_robots else MeshInfoStruct
        self.SceneInfo = SceneInfoRobotStruct if self.has_robots else SceneInfoStruct
        self.ServerInfo = (
            ServerInfoV2Struct if self.has_all_limits else ServerInfoRobotStruct if self.has_robots else ServerInfoStruct
        )

    def _declare(self, prototypes) -> None:
        """Sets each call's result and argument types and makes it an attribute."""
        for name, (restype, argtypes) in prototypes.items():
            fn = getattr(self.cdll, name)
            fn.restype = restype
            fn.argtypes = argtypes
            setattr(self, name, fn)

    def strerror(self, code: int) -> str:
        return self.tdm_client_strerror(code).decode()

    def server_code_name(self, code: int) -> str:
        return self.tdm_server_code_name(code).decode()


def _repo_build_candidates() -> list[Path]:
    """libtandem in the build tree, when this package is run from the repository (PYTHONPATH=python)."""
    root = Path(__file__).resolve().parent.parent.parent
    if not (root / "client" / "tandem.h").is_file():
        return []
    return [root / "build" / "client" / SONAME]


_lock = threading.Lock()
_loaded: dict[str, Library] = {}


def load_library(path: Optional[str | os.PathLike] = None) -> Library:
    """Loads libtandem once per process (per path) and returns it.

    Looked for, in order: ``path`` when given (and then nowhere else), the ``TANDEM_LIBRARY``
    environment variable (likewise), the repository's build tree (``build/client/libtandem.so.0``
    next to this package's parent folder), then the system: the dynamic loader's search for
    ``libtandem.so.0`` and ``ctypes.util.find_library("tandem")``. Raises LibraryNotFound naming
    every place tried and why it failed."""
    if path is not None:
        candidates = [("argument", str(path))]
    elif os.environ.get("TANDEM_LIBRARY"):
        candidates = [("TANDEM_LIBRARY", os.environ["TANDEM_LIBRARY"])]
    else:
        candidates = [("build tree", str(p)) for p in _repo_build_candidates()]
        candidates.append(("system", SONAME))
        found = ctypes.util.find_library("tandem")
        if found and found != SONAME:
            candidates.append(("system (find_library)", found))
    tried = []
    with _lock:
        for origin, cand in candidates:
            if cand in _loaded:
                return _loaded[cand]
            if origin == "build tree" and not Path(cand).exists():
                tried.append(f"{origin}: {cand}: not built")
                continue
            try:
                lib = Library(ctypes.CDLL(cand), cand)
            except OSError as e:
                tried.append(f"{origin}: {cand}: {e}")
                continue
            _check_layouts()
            _loaded[cand] = lib
            return lib
    raise LibraryNotFound(
        "libtandem could not be loaded; tried, in order:\n  "
        + "\n  ".join(tried)
        + "\nBuild it (cmake --build build), install it, or set TANDEM_LIBRARY to its path."
    )


def _check_layouts() -> None:
    """The numpy views of tdm_query_result and tdm_contact must match the C layout."""
    from . import _arrays

    if _arrays.RESULT_DTYPE.itemsize != ctypes.sizeof(QueryResultStruct):
        raise LibraryNotFound("tdm_query_result's numpy layout does not match the C one")
    for name, _ in QueryResultStruct._fields_:
        if _arrays.RESULT_DTYPE.fields[name][1] != getattr(QueryResultStruct, name).offset:
            raise LibraryNotFound(f"tdm_query_result.{name}'s numpy offset does not match the C one")
    if 4 * _arrays.CONTACT_DTYPE.itemsize != ctypes.sizeof(ContactStruct):  # rows of four
        raise LibraryNotFound("tdm_contact's numpy layout does not match the C one")
