"""Client: one connection to tandemd over libtandem's blocking API.

Threads: a Client is used by one thread at a time (libtandem's rule for a context); open one per
thread to query from several. libtandem's calls release the GIL (ctypes does), so other Python
threads run while one waits for the server.
"""

from __future__ import annotations

import ctypes
import math
import os
from typing import Iterable, Optional, Sequence, Union

import numpy as np

from . import _arrays
from ._library import (
    ConnectOptsStruct,
    IdBytes,
    Library,
    ObjectPairStruct,
    PairsStruct,
    SceneObjectStruct,
    StatsStruct,
    ephemeral_puts,
    load_library,
)
from .errors import ClientCode, ServerCode, TandemError, invalid, server_error
from .robots import RobotMixin
from .types import (
    Limits,
    MeshId,
    MeshInfo,
    QueryResult,
    RobotId,
    Scene,
    SceneId,
    SceneObject,
    ServerInfo,
    Stats,
)

__all__ = ["Client"]

MODES = {"bool": 0, "contacts": 1}

SceneRef = Union[Scene, SceneId, bytes, str]

# tandemd's defaults of two limits that cut batches, used when the library cannot read the server's
# (a libtandem without tdm_limits_size) and the Client is not told them.
DEFAULT_MAX_REPLY_PAIRS = 1_000_000
DEFAULT_MAX_QUERY_TASKS = 16_777_216



def _id_arg(b: bytes):
    return (ctypes.c_uint8 * 32).from_buffer_copy(b)


class Client(RobotMixin):
    """A connection to tandemd.

    Args:
        address: ``"host:port"``, ``"host"`` (port 7450), ``"[v6addr]:port"`` or ``"unix:/path"``;
            a ``pathlib.Path`` is taken as a Unix socket. ``"tls://host:port"``: TLS (a tandemd
            with ``--tls-cert``), the server's certificate verified against ``tls_ca`` and the
            host.
        auth_token: the server's token, when it has one.
        timeout: seconds for the connection and the Hello handshake (None: as long as the system
            waits).
        io_timeout: seconds each later call may take (None: no limit). A call that runs past it
            closes the connection (its reply could still come later).
        client_name: for the server's log.
        tls_ca: PEM file of the CA certificates a ``tls://`` server's certificate must chain to
            (None: ``$TANDEM_TLS_CA``, else the system's store).
        library: path of libtandem to load instead of looking for it (see ``load_library``).
        pipeline: Query requests a large ``query`` keeps in flight at once.
        batch: the most queries one Query request carries (None: the server's ``max_queries``);
            ``query`` cuts larger arrays into such batches.
        max_reply_pairs, max_query_tasks: caps on those two of the server's limits, used to cut
            batches (None: the server's own, from HelloReply, with a libtandem that reads them
            (``tdm_limits_size``), else tandemd's defaults). A cap above the server's value is
            lowered to it.
        ring: on a ``unix:`` address, carry the connection's requests and replies through
            shared-memory rings instead of the socket (``tdm_client_ring``; proto/README.md,
            "Shared-memory rings"): True for the server's default size, or each ring's size in
            bytes; a server that refuses raises TandemError (ESERVER, field ``ring_open``).

    Raises TandemError (client_code ECONNECT, EADDR, ETIMEOUT, EVERSION, or ESERVER with code
    UNAUTHENTICATED...) when the connection cannot be made. Use as a context manager, or call
    ``close``."""

    def __init__(
        self,
        address: Union[str, os.PathLike],
        auth_token: Optional[str] = None,
        timeout: Optional[float] = 10.0,
        io_timeout: Optional[float] = None,
        *,
        client_name: str = "tandem-python",
        library: Optional[Union[str, os.PathLike]] = None,
        pipeline: int = 4,
        batch: Optional[int] = None,
        max_reply_pairs: Optional[int] = None,
        max_query_tasks: Optional[int] = None,
        tls_ca: Optional[Union[str, os.PathLike]] = None,
        ring: Union[bool, int] = False,
    ):
        self._c = None
        self._lib: Library = load_library(library)
        if isinstance(address, os.PathLike):
            address = "unix:" + os.fspath(address)
        if pipeline < 1:
            raise invalid("pipeline must be at least 1", field="pipeline")
        if batch is not None and batch < 1:
            raise invalid("batch must be at least 1", field="batch")
        if isinstance(ring, bool):
            ring_bytes = 0 if ring else None  # 0: the server's default size
        elif isinstance(ring, int) and 0 < ring <= 0xFFFFFFFF:
            ring_bytes = ring
        else:
            raise invalid("ring must be True, False or a size in bytes", field="ring")
        if ring_bytes is not None and not self._lib.has_ring:
            raise invalid(f"{self._lib.path} has no shared-memory rings (tdm_client_ring)", field="ring")
        self.address = str(address)
        self.pipeline = int(pipeline)
        self.batch = batch
        for name, v in (("max_reply_pairs", max_reply_pairs), ("max_query_tasks", max_query_tasks)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise invalid(f"{name} must be a positive integer or None", field=name)
        self._scenes: dict[bytes, Scene] = {}
        opts = ConnectOptsStruct(
            addr=self.address.encode(),
            timeout_ms=_ms(timeout, "timeout"),
            io_timeout_ms=_ms(io_timeout, "io_timeout"),
            auth_token=(auth_token or "").encode(),
            client_name=client_name.encode(),
            max_reply_bytes=0,
            tls_ca_file=os.fsencode(tls_ca) if tls_ca is not None else None,
        )
        c = self._lib.tdm_client_connect_with(ctypes.byref(opts))
        if not c:
            raise TandemError("out of memory", client_code=ClientCode.ENOMEM)
        rc = self._lib.tdm_client_err(c)
        if rc != 0:
            err = self._error(rc, c)
            self._lib.tdm_client_free(c)
            raise err
        if ring_bytes is not None:
            rc = self._lib.tdm_client_ring(c, ring_bytes, 0)
            if rc != 0:
                err = self._error(rc, c)
                self._lib.tdm_client_free(c)
                raise err
        self._c = c
        info = ctypes.cast(self._lib.tdm_client_server_info(c), ctypes.POINTER(self._lib.ServerInfo))
        self.server_info = _server_info(self._lib, info.contents)
        self.limits: Limits = self.server_info.limits
        self.max_reply_pairs = _cap(max_reply_pairs, self.limits.max_reply_pairs, DEFAULT_MAX_REPLY_PAIRS)
        self.max_query_tasks = _cap(max_query_tasks, self.limits.max_query_tasks, DEFAULT_MAX_QUERY_TASKS)

    # ---- life ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Closes the connection. Idempotent; every later call raises TandemError (ECLOSED)."""
        if self._c is not None:
            self._lib.tdm_client_free(self._c)
            self._c = None

    @property
    def closed(self) -> bool:
        return self._c is None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._c is None else f"{self.server_info.engine} engine"
        return f"<tandem.Client {self.address} ({state})>"

    @property
    def library_path(self) -> str:
        """Where the libtandem this client calls was loaded from."""
        return self._lib.path

    @property
    def ring_open(self) -> bool:
        """True while this connection goes through shared-memory rings (``ring``)."""
        return bool(self._lib.has_ring and self._lib.tdm_client_ring_open(self._ctx()))

    def set_io_timeout(self, seconds: Optional[float]) -> None:
        """Changes the limit of later calls (None: none)."""
        self._lib.tdm_client_set_timeout(self._ctx(), _ms(seconds, "io_timeout"))

    # ---- errors -------------------------------------------------------------------------------

    def _ctx(self):
        if self._c is None:
            raise TandemError("the client is closed", client_code=ClientCode.ECLOSED)
        return self._c

    def _error(self, rc: int, c=None) -> TandemError:
        c = c if c is not None else self._c
        if rc == ClientCode.ESERVER:
            se = self._lib.tdm_client_server_error(c)
            if se:
                e = se.contents
                return server_error(
                    (e.message or b"").decode(errors="replace"),
                    e.code,
                    (e.field or b"").decode(errors="replace"),
                    int(e.index),
                )
        text = self._lib.tdm_client_errstr(c) if c else None
        text = text.decode(errors="replace") if text else self._lib.strerror(rc)
        return TandemError(text, client_code=rc)

    def _check(self, rc: int) -> None:
        if rc != 0:
            raise self._error(rc)

    # ---- meshes -------------------------------------------------------------------------------

    def put_mesh(self, vertices, triangles, name: str = "") -> MeshId:
        """Stores a triangle mesh and returns its id (the SHA-256 of its content: putting the same
        mesh again is cheap and returns the same id).

        Args:
            vertices: (V, 3) numbers, sent as float32 (no copy when already C-contiguous float32).
            triangles: (T, 3) integer vertex indices, sent as uint32.
            name: a label for listings (the first name stored is kept).

        Raises InvalidArgument (NON_FINITE with the vertex, BAD_INDEX with the triangle, EMPTY, a
        wrong shape) before sending, TandemError from the server (LIMIT, NO_MEMORY...)."""
        v = _arrays.vertices(vertices)
        t = _arrays.triangles(triangles, v.shape[0])
        out = IdBytes()
        created = ctypes.c_int()
        self._check(
            self._lib.tdm_mesh_put(
                self._ctx(),
                name.encode(),
                v.ctypes.data,
                v.shape[0],
                t.ctypes.data,
                t.shape[0],
                out,
                ctypes.byref(created),
            )
        )
        return MeshId(bytes(out))

    def list_meshes(self) -> list[MeshInfo]:
        """The stored meshes."""
        block = ctypes.c_void_p()
        n = ctypes.c_size_t()
        self._check(self._lib.tdm_mesh_list(self._ctx(), ctypes.byref(block), ctypes.byref(n)))
        try:
            arr = ctypes.cast(block, ctypes.POINTER(self._lib.MeshInfo))
            return [
                MeshInfo(
                    MeshId(bytes(m.mesh_id)),
                    (m.name or b"").decode(errors="replace"),
                    m.n_vertices,
                    m.n_triangles,
                    m.scenes,
                    getattr(m, "robots", 0),
                )
                for m in (arr[i] for i in range(n.value))
            ]
        finally:
            self._lib.tdm_mesh_list_free(block)

    def delete_mesh(self, mesh: Union[MeshId, bytes, str]) -> None:
        """Deletes a stored mesh. TandemError UNKNOWN_MESH when it is not stored, MESH_IN_USE while
        a stored scene uses it."""
        self._check(self._lib.tdm_mesh_delete(self._ctx(), _id_arg(MeshId(mesh))))

    # ---- scenes -------------------------------------------------------------------------------

    def put_scene(
        self,
        objects: Sequence[SceneObject],
        allowed: Iterable[tuple[int, int]] = (),
        name: str = "",
        ephemeral: bool = False,
    ) -> Scene:
        """Stores a scene of stored meshes and returns it (its id and its movable object ids in the
        order query poses use).

        Args:
            objects: SceneObject each (a mesh id, movable or fixed at a pose, an object id or None
                for its index in this list). At least one must be movable.
            allowed: object id pairs never checked against each other.
            name: a label for listings.
            ephemeral: the server holds the scene in memory only and never writes it, so it is
                gone when the server restarts (a planner's per-request scenes); its id differs
                from the same content's stored one.

        Checked pairs: every movable object against every fixed one and every other movable one,
        less the allowed pairs. Raises InvalidArgument for a malformed object (field "objects" and
        its index), TandemError from the server (UNKNOWN_MESH, BAD_INDEX, EMPTY...)."""
        objs = list(objects)
        arr, parr, pairs = _scene_args(objs, allowed)
        sid = IdBytes()
        created = ctypes.c_int()
        movable = (ctypes.c_uint32 * max(1, len(objs)))()
        n_movable = ctypes.c_size_t()
        with ephemeral_puts(self._lib, self._ctx(), ephemeral):
            self._check(
                self._lib.tdm_scene_put(
                    self._ctx(),
                    name.encode(),
                    arr,
                    len(objs),
                    parr,
                    len(pairs),
                    sid,
                    ctypes.byref(created),
                    movable,
                    len(objs),
                    ctypes.byref(n_movable),
                )
            )
        scene = Scene(
            SceneId(bytes(sid)),
            tuple(int(movable[i]) for i in range(n_movable.value)),
            name,
            len(objs),
            bool(created.value),
        )
        self._scenes[bytes(scene.id)] = scene
        return scene

    def list_scenes(self) -> list[Scene]:
        """The stored scenes (``created`` is False in each)."""
        block = ctypes.c_void_p()
        n = ctypes.c_size_t()
        self._check(self._lib.tdm_scene_list(self._ctx(), ctypes.byref(block), ctypes.byref(n)))
        try:
            arr = ctypes.cast(block, ctypes.POINTER(self._lib.SceneInfo))
            out = []
            for i in range(n.value):
                s = arr[i]
                robot = RobotId(bytes(s.robot_id)) if getattr(s, "is_robot_scene", 0) else None
                scene = Scene(
                    SceneId(bytes(s.scene_id)),
                    tuple(int(s.movable[k]) for k in range(s.n_movable)),
                    (s.name or b"").decode(errors="replace"),
                    int(s.n_objects),
                    robot_id=robot,
                )
                out.append(scene)
        finally:
            self._lib.tdm_scene_list_free(block)
        self._scenes.update((bytes(s.id), s) for s in out)
        return out

    def delete_scene(self, scene: SceneRef) -> None:
        """Deletes a stored scene, a robot scene too (not its meshes, nor its robot). TandemError
        UNKNOWN_SCENE when absent."""
        sid = _scene_id(scene)
        self._check(self._lib.tdm_scene_delete(self._ctx(), _id_arg(sid)))
        self._scenes.pop(bytes(sid), None)

    def _scene(self, scene: SceneRef) -> Scene:
        """A Scene for a Scene or an id; an id not seen yet is looked up with list_scenes."""
        if isinstance(scene, Scene):
            return scene
        from .robots import RobotScene

        if isinstance(scene, RobotScene):
            raise invalid("a robot scene takes configurations: use check or query_configs", field="scene")
        sid = SceneId(scene)
        if bytes(sid) not in self._scenes:
            self.list_scenes()
        if bytes(sid) not in self._scenes:
            raise server_error(f"scene {sid} is not stored", ServerCode.UNKNOWN_SCENE, "scene_id", -1)
        return self._scenes[bytes(sid)]

    # ---- queries ------------------------------------------------------------------------------

    def query(
        self,
        scene: SceneRef,
        poses,
        mode: str = "bool",
        max_contacts: int = 0,
        want_pairs: bool = False,
    ) -> QueryResult:
        """Answers one query per pose of the scene's movable objects.

        Args:
            scene: a Scene (from put_scene or list_scenes) or a scene id.
            poses: (N, 7) for a scene with one movable object, or (N, M, 7) with M the scene's
                movable objects in ``scene.movable`` order; each ``x y z qx qy qz qw`` (vertex v
                goes to R(q) v + t). Sent as float64, without a copy when already C-contiguous
                float64.
            mode: "bool" (does anything collide; stops at the first pair) or "contacts" (count
                intersecting triangle pairs, up to max_contacts).
            max_contacts: contacts mode's cap per query (0: the server's).
            want_pairs: contacts mode: return the intersecting triangle pairs themselves.

        Large N is cut into batches (``batch``, the server's max_queries, its frame size, its
        max_reply_pairs and max_query_tasks) with ``pipeline`` batches in flight at once. Raises
        InvalidArgument before sending (wrong shape, NON_FINITE or NOT_UNIT with the query's
        index), TandemError from the server (UNKNOWN_SCENE, LIMIT...; ``index`` counts queries
        from the start of ``poses``). Nothing is returned for part of a failed call."""
        if mode not in MODES:
            raise invalid(f"mode must be 'bool' or 'contacts', not {mode!r}", field="mode")
        if want_pairs and mode != "contacts":
            raise invalid("want_pairs needs mode='contacts'", field="want_pairs")
        max_contacts = self._max_contacts(max_contacts)
        return _result(*self._answer(scene, poses, MODES[mode], max_contacts, want_pairs), want_pairs)

    def _answer(self, scene: SceneRef, poses, mode: int, max_contacts: int, want_pairs: bool):
        """The results array (RESULT_DTYPE, one per query), each batch's pairs and the batches."""
        sc = self._scene(scene)
        m = len(sc.movable)
        p = _arrays.poses(poses, m)
        n = p.shape[0]
        results = np.zeros(n, dtype=_arrays.RESULT_DTYPE)
        cap_contacts = max_contacts or self.limits.max_contacts or 1_000_000
        chunk = self._batch_size(sc, m, cap_contacts if want_pairs else 0)
        chunks = [(s, min(n, s + chunk)) for s in range(0, n, chunk)]
        if len(chunks) == 1 and not want_pairs:
            # one request: the blocking call, nothing to keep in flight
            self._check(
                self._lib.tdm_query(
                    self._ctx(), _id_arg(sc.id), mode, p.ctypes.data, m, n, max_contacts, results.ctypes.data, None
                )
            )
            return results, None, chunks
        sid = _id_arg(sc.id)
        lib = self._lib

        def send(s, e, res, pairs, qid):
            return lib.tdm_query_send(self._ctx(), sid, mode, p[s:e].ctypes.data, m, e - s, max_contacts, res, pairs, qid)

        pairs = self._run_batches(send, results, chunks, want_pairs, cap_contacts, "poses", 1)
        return results, pairs, chunks

    def check(self, scene, poses_or_configs) -> np.ndarray:
        """(N,) bool: which queries collide.

        For a rigid scene, ``poses`` as in ``query``; for a robot scene (``put_robot_scene``), the
        configurations (N, J), J the robot's active joints."""
        from .robots import RobotScene

        if isinstance(scene, RobotScene):
            return self.check_configs(scene, poses_or_configs)
        results = self._answer(scene, poses_or_configs, MODES["bool"], 0, False)[0]
        return results["colliding"] != 0

    def _max_contacts(self, max_contacts) -> int:
        max_contacts = int(max_contacts)
        if max_contacts < 0 or max_contacts > 0xFFFFFFFF:
            raise invalid(f"max_contacts must be in 0..2^32-1, not {max_contacts}", field="max_contacts")
        if self.limits.max_contacts and max_contacts > self.limits.max_contacts:
            raise invalid(
                f"max_contacts {max_contacts} is over the server's limit {self.limits.max_contacts}",
                code=ServerCode.LIMIT,
                field="max_contacts",
            )
        return max_contacts

    def _batch_size(self, sc: Scene, m: int, pairs_per_query: int) -> int:
        # checked object pairs: at most every movable object against every other object
        fixed = max(0, sc.n_objects - m)
        checked = m * fixed + m * (m - 1) // 2
        # the poses dominate a Query frame: 7 doubles a pose
        return self._batch_limit(56 * max(1, m), checked, pairs_per_query)

    def _batch_limit(self, bytes_per_query: int, checked: int, pairs_per_query: int = 0) -> int:
        """Queries per request: ``batch``, the server's max_queries, its frame size, its
        max_reply_pairs (with pairs) and max_query_tasks (``checked`` object pairs a query)."""
        b = self.batch or self.limits.max_queries or 65536
        if self.limits.max_queries:
            b = min(b, self.limits.max_queries)
        if self.limits.max_frame_bytes:
            b = min(b, max(1, (self.limits.max_frame_bytes - 256) // (bytes_per_query + 8)))
        if pairs_per_query:
            b = min(b, max(1, self.max_reply_pairs // pairs_per_query))
        if checked:
            b = min(b, max(1, self.max_query_tasks // checked))
        return max(1, b)

    def _run_batches(self, send_batch, results, chunks, want_pairs, cap_contacts, field, stride):
        """Sends the batches with up to ``pipeline`` in flight; returns each batch's pair array
        (want_pairs) trimmed to what the server sent. A batch whose pairs overflowed the room
        given is asked again with exact room.

        send_batch(s, e, results_ptr, pairs_ptr, id_ptr) sends queries s..e (tdm_query_send or
        tdm_query_configs_send). A server error about ``field`` has its index moved from the
        batch's start to the call's: ``stride`` index units per query."""
        lib, c = self._lib, self._ctx()
        pair_bufs: list[Optional[np.ndarray]] = [None] * len(chunks)
        pair_structs: list[Optional[PairsStruct]] = [None] * len(chunks)
        in_flight: dict[int, int] = {}  # request id -> batch
        redo: list[int] = []
        failure: Optional[TandemError] = None
        qid = ctypes.c_uint64()
        status = ctypes.c_int()

        def send(k: int, room: Optional[int] = None) -> None:
            s, e = chunks[k]
            ps = None
            if want_pairs:
                room = room if room is not None else min((e - s) * cap_contacts, 1 << 16)
                buf = np.empty((max(1, room), 4), dtype=_arrays.CONTACT_DTYPE)
                ps = PairsStruct(buf.ctypes.data, room, 0)
                pair_bufs[k], pair_structs[k] = buf, ps
            rc = send_batch(
                s, e, results[s:e].ctypes.data, ctypes.byref(ps) if ps is not None else None, ctypes.byref(qid)
            )
            if rc != 0:
                raise self._error(rc)
            in_flight[qid.value] = k

        def wait_one() -> None:
            nonlocal failure
            rc = lib.tdm_query_wait(c, ctypes.byref(qid), ctypes.byref(status))
            if rc != 0:  # nothing outstanding: cannot happen while in_flight is not empty
                raise self._error(rc)
            k = in_flight.pop(qid.value)
            if status.value != 0:
                if failure is None:
                    err = self._error(status.value)
                    if err.field == field and err.index >= 0:
                        err = server_error(err.message, err.code, err.field, err.index + stride * chunks[k][0])
                    failure = err
                return
            if want_pairs and pair_structs[k].count > pair_structs[k].cap:
                redo.append(k)

        try:
            for k in range(len(chunks)):
                if failure is not None:
                    break
                while len(in_flight) >= self.pipeline:
                    wait_one()
                if failure is None:
                    send(k)
        except TandemError as e:
            failure = failure or e
        finally:
            while in_flight:  # every request sent is handed back once, even after a failure
                wait_one()
        if failure is not None:
            raise failure
        for k in redo:
            send(k, int(pair_structs[k].count))
            wait_one()
            if failure is not None:
                raise failure
        if not want_pairs:
            return None
        return [buf[: ps.count] for buf, ps in zip(pair_bufs, pair_structs)]

    # ---- stats --------------------------------------------------------------------------------

    def stats(self) -> Stats:
        """The server's counters (proto/README.md, Stats)."""
        s = StatsStruct()
        self._check(self._lib.tdm_stats_get(self._ctx(), ctypes.byref(s)))
        values = {}
        for name, _ in StatsStruct._fields_:
            if name == "_spare" or (name == "robots" and not self._lib.has_robots):
                continue
            v = getattr(s, name)
            if isinstance(v, bytes):
                v = v.decode(errors="replace")
            values[name] = v
        values["engine"] = self._lib.tdm_engine_name(s.engine).decode()
        return Stats(**values)


# ---- helpers -------------------------------------------------------------------------------


def _scene_args(objs: list, allowed: Iterable[tuple[int, int]]):
    """The ctypes arrays of a ScenePut: the objects and the allowed pairs (and the pairs' list)."""
    arr = (SceneObjectStruct * max(1, len(objs)))()
    for i, o in enumerate(objs):
        if not isinstance(o, SceneObject):
            raise invalid(f"object {i} is a {type(o).__name__}, not a SceneObject", field="objects", index=i)
        s = arr[i]
        oid = i if o.object_id is None else o.object_id
        if not isinstance(oid, (int, np.integer)) or not 0 <= oid <= 0xFFFFFFFF:
            raise invalid(f"object {i}: object_id {oid!r} is not a uint32", field="objects", index=i)
        s.object_id = int(oid)
        try:
            ctypes.memmove(s.mesh_id, MeshId(o.mesh), 32)
        except TandemError as e:
            raise invalid(f"object {i}: {e.message}", field="objects", index=i) from None
        s.movable = 1 if o.movable else 0
        if o.pose is not None:
            if o.movable:
                raise invalid(f"object {i} is movable: its pose comes with each query", field="objects", index=i)
            s.has_pose = 1
            s.pose[:] = _arrays.fixed_pose(o.pose, i).tolist()
    pairs = [tuple(p) for p in allowed]
    parr = (ObjectPairStruct * max(1, len(pairs)))()
    for i, p in enumerate(pairs):
        if len(p) != 2 or not all(isinstance(x, (int, np.integer)) and 0 <= x <= 0xFFFFFFFF for x in p):
            raise invalid(f"allowed pair {i} {p!r} is not two object ids", field="allowed", index=i)
        parr[i].a, parr[i].b = int(p[0]), int(p[1])
    return arr, parr, pairs


def _scene_id(scene) -> SceneId:
    """The id of a Scene, a RobotScene, or an id."""
    from .robots import RobotScene

    return scene.id if isinstance(scene, (Scene, RobotScene)) else SceneId(scene)


def _ms(seconds: Optional[float], field: str) -> int:
    if seconds is None:
        return 0
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds > 0):
        raise invalid(f"{field} must be a positive number of seconds or None, not {seconds!r}", field=field)
    return max(1, min(int(math.ceil(seconds * 1000)), 2**31 - 1))


def _cap(given: Optional[int], server: int, default: int) -> int:
    """A limit used to cut batches: the caller's cap, lowered to the server's value when it says
    one; else the server's; else tandemd's default."""
    if given is None:
        return server or default
    return min(given, server) if server else given


def _server_info(lib: Library, s: ctypes.Structure) -> ServerInfo:
    lim = s.limits
    return ServerInfo(
        int(s.protocol_version),
        s.server_version.decode(errors="replace"),
        lib.tdm_engine_name(s.engine).decode(),
        Limits(**{name: int(getattr(lim, name)) for name, _ in type(lim)._fields_}),  # robot ones: 0 when absent
    )


def _result(results: np.ndarray, pairs, chunks, want_pairs: bool) -> QueryResult:
    colliding = results["colliding"] != 0
    object_pair = np.stack([results["object_a"], results["object_b"]], axis=1).astype(np.int64)
    object_pair[~colliding] = -1
    all_pairs = offsets = None
    if want_pairs:
        n_pairs = results["n_pairs"].astype(np.int64)
        offsets = np.zeros(len(results) + 1, dtype=np.int64)
        np.cumsum(n_pairs, out=offsets[1:])
        parts = []
        for (s, e), buf in zip(chunks, pairs):
            lens = n_pairs[s:e]
            total = int(lens.sum())
            # query i's pairs start at its first_pair in its batch's array
            before = np.cumsum(lens) - lens
            idx = np.repeat(results["first_pair"][s:e].astype(np.int64) - before, lens) + np.arange(total)
            parts.append(buf[idx])
        all_pairs = np.concatenate(parts) if parts else np.empty((0, 4), dtype=_arrays.CONTACT_DTYPE)
    return QueryResult(
        colliding=colliding,
        contacts=results["contacts"].copy(),
        truncated=results["truncated"] != 0,
        object_pair=object_pair,
        pairs=all_pairs,
        pair_offsets=offsets,
    )
