"""numpy arrays in and out: the checks every array argument gets before anything is sent, and the
structured dtypes that alias libtandem's result structs (so answers are decoded straight into numpy
memory).

Each check converts with numpy (``np.ascontiguousarray`` with the dtype libtandem reads: no copy
when the array already is C-contiguous with that dtype) and refuses, with the code, field and index
the server would use, what the server would refuse."""

from __future__ import annotations

import numpy as np

from .errors import InvalidArgument, ServerCode, invalid

# tdm_query_result: 7 uint32 then a uint64 at offset 32 (C alignment), 40 bytes.
RESULT_DTYPE = np.dtype(
    [
        ("colliding", "<u4"),
        ("truncated", "<u4"),
        ("contacts", "<u4"),
        ("object_a", "<u4"),
        ("object_b", "<u4"),
        ("n_pairs", "<u4"),
        ("first_pair", "<u8"),
    ],
    align=True,
)
# tdm_contact: (object_a, triangle_a, object_b, triangle_b), four uint32.
CONTACT_DTYPE = np.dtype("<u4")

# A quaternion whose norm is not within this of 1 is refused (proto/README.md, Queries).
UNIT_TOLERANCE = 1e-3

_U32_MAX = np.iinfo(np.uint32).max


def _as_array(x, field: str) -> np.ndarray:
    try:
        return np.asarray(x)
    except (TypeError, ValueError) as e:
        raise invalid(f"{field} is not an array: {e}", field=field) from None


def vertices(x) -> np.ndarray:
    """(V, 3) finite numbers -> C-contiguous float32 (V, 3)."""
    a = _as_array(x, "vertices")
    if a.ndim != 2 or a.shape[1] != 3:
        raise invalid(f"vertices must have shape (V, 3), not {a.shape}", field="vertices")
    if a.dtype.kind not in "fiu":
        raise invalid(f"vertices must be numbers, not {a.dtype}", field="vertices")
    if a.shape[0] > _U32_MAX:
        raise invalid("more vertices than a uint32 counts", code=ServerCode.LIMIT, field="vertices")
    with np.errstate(over="ignore"):  # a value past float32's range becomes inf, refused below
        out = np.ascontiguousarray(a, dtype=np.float32)
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise invalid(
            f"vertex {i} is not finite in float32: {a[i].tolist()}",
            code=ServerCode.NON_FINITE,
            field="vertices",
            index=i,
        )
    return out


def triangles(x, n_vertices: int) -> np.ndarray:
    """(T, 3) integer vertex indices in [0, n_vertices) -> C-contiguous uint32 (T, 3)."""
    a = _as_array(x, "triangles")
    if a.ndim != 2 or a.shape[1] != 3:
        raise invalid(f"triangles must have shape (T, 3), not {a.shape}", field="triangles")
    if a.dtype.kind not in "iu":
        raise invalid(f"triangles must be integers, not {a.dtype}", field="triangles")
    if a.shape[0] == 0:
        raise invalid("a mesh needs at least one triangle", code=ServerCode.EMPTY, field="triangles")
    if a.shape[0] > _U32_MAX:
        raise invalid("more triangles than a uint32 counts", code=ServerCode.LIMIT, field="triangles")
    bad = ((a < 0) | (a >= n_vertices)).any(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise invalid(
            f"triangle {i} {a[i].tolist()} has an index outside 0..{n_vertices - 1}",
            code=ServerCode.BAD_INDEX,
            field="triangles",
            index=i,
        )
    return np.ascontiguousarray(a, dtype=np.uint32)


def _check_poses(p: np.ndarray, field: str, what: str) -> None:
    """p: (N, M, 7) float64. Refuses non-finite values and quaternions that are not unit, naming
    the first query (index N) that has one, as the server does."""
    bad = ~np.isfinite(p).all(axis=2)
    if bad.any():
        i, k = np.unravel_index(int(np.argmax(bad)), bad.shape)
        raise invalid(
            f"{what} {i}, object {k}: a pose value is not finite", code=ServerCode.NON_FINITE, field=field, index=int(i)
        )
    norm = np.sqrt(np.einsum("nmk,nmk->nm", p[:, :, 3:7], p[:, :, 3:7]))
    bad = np.abs(norm - 1.0) > UNIT_TOLERANCE
    if bad.any():
        i, k = np.unravel_index(int(np.argmax(bad)), bad.shape)
        raise invalid(
            f"{what} {i}, object {k}: the quaternion has norm {norm[i, k]:.6g}, not within {UNIT_TOLERANCE:g} of 1",
            code=ServerCode.NOT_UNIT,
            field=field,
            index=int(i),
        )


def poses(x, n_movable: int) -> np.ndarray:
    """Query poses: (N, 7) when the scene has one movable object, or (N, M, 7) with M its number
    of movable objects; each pose ``x y z qx qy qz qw``. Returns C-contiguous float64 (N, M, 7)
    (a view of the input when it already is one)."""
    a = _as_array(x, "poses")
    if a.dtype.kind not in "fiu":
        raise invalid(f"poses must be numbers, not {a.dtype}", field="poses")
    if a.ndim == 2 and a.shape[1] == 7 and n_movable == 1:
        a = a.reshape(a.shape[0], 1, 7)
    elif a.ndim == 2 and a.shape[1] == 7:
        raise invalid(
            f"the scene has {n_movable} movable objects: poses must have shape (N, {n_movable}, 7), not {a.shape}",
            field="poses",
        )
    if a.ndim != 3 or a.shape[1:] != (n_movable, 7):
        want = "(N, 7) or (N, 1, 7)" if n_movable == 1 else f"(N, {n_movable}, 7)"
        raise invalid(
            f"the scene has {n_movable} movable object{'s' if n_movable != 1 else ''}: "
            f"poses must have shape {want}, not {a.shape}",
            field="poses",
        )
    out = np.ascontiguousarray(a, dtype=np.float64)
    _check_poses(out, "poses", "query")
    return out


def fixed_pose(x, index: int) -> np.ndarray:
    """A fixed object's pose: 7 finite numbers with a unit quaternion -> float64 (7,)."""
    a = _as_array(x, "objects")
    if a.shape != (7,) or a.dtype.kind not in "fiu":
        raise invalid(f"object {index}: a pose is 7 numbers x y z qx qy qz qw, not {a.shape}", field="objects", index=index)
    p = np.ascontiguousarray(a, dtype=np.float64)
    try:
        _check_poses(p.reshape(1, 1, 7), "objects", "object")
    except InvalidArgument as e:  # the object's index, not query 0's
        raise invalid(f"object {index}: pose: {e.message.split(': ', 1)[1]}", code=e.code, field="objects", index=index) from None
    return p


def configurations(x, n_joints: int | None, field: str) -> np.ndarray:
    """Joint-space configurations (N, J) finite numbers -> C-contiguous float64 (N, J)."""
    a = _as_array(x, field)
    if a.dtype.kind not in "fiu":
        raise invalid(f"{field} must be numbers, not {a.dtype}", field=field)
    if a.ndim != 2 or (n_joints is not None and a.shape[1] != n_joints):
        want = f"(N, {n_joints})" if n_joints is not None else "(N, J)"
        raise invalid(f"{field} must have shape {want}, not {a.shape}", field=field)
    out = np.ascontiguousarray(a, dtype=np.float64)
    bad = ~np.isfinite(out).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise invalid(f"{field} row {i} has a value that is not finite", code=ServerCode.NON_FINITE, field=field, index=i)
    return out
