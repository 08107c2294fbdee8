"""The tests' own answers: random triangle soups, random poses, and a brute-force triangle-pair
intersection test in numpy, written from the definitions (no code of the engine).

Two triangles in general position intersect iff an edge of one crosses the other: the segment pq
crosses triangle abc iff p and q lie on opposite sides of abc's plane (orient(a,b,c,p) and
orient(a,b,c,q) of opposite signs) and the three volumes orient(p,q,a,b), orient(p,q,b,c),
orient(p,q,c,a) share one sign. Random inputs are in general position with probability 1; each
determinant whose size is within ``EPS`` (relative) of 0 marks the pose ambiguous, and the tests
leave ambiguous poses out of the comparison (and check that they are rare)."""

from __future__ import annotations

import numpy as np

EPS = 1e-9


def soup(rng: np.random.Generator, n: int, spread: float, size: float):
    """n random triangles: centres uniform in [-spread, spread]^3, corners within size of them.
    Returns (vertices (3n, 3) float32, triangles (n, 3) int64)."""
    centres = rng.uniform(-spread, spread, (n, 1, 3))
    corners = centres + rng.uniform(-size, size, (n, 3, 3))
    return corners.reshape(-1, 3).astype(np.float32), np.arange(3 * n).reshape(n, 3)


def random_poses(rng: np.random.Generator, n: int, spread: float) -> np.ndarray:
    """(n, 7) poses: translation uniform in [-spread, spread]^3, rotation uniform (normalised
    Gaussian quaternion)."""
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return np.concatenate([rng.uniform(-spread, spread, (n, 3)), q], axis=1)


def rotation(q) -> np.ndarray:
    x, y, z, w = np.asarray(q, dtype=np.float64) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def place(vertices, triangles, pose=None) -> np.ndarray:
    """The mesh's triangles (T, 3, 3) in float64 with vertex v at R(q) v + t."""
    v = np.asarray(vertices, dtype=np.float64)
    if pose is not None:
        v = v @ rotation(pose[3:7]).T + np.asarray(pose[:3], dtype=np.float64)
    return v[np.asarray(triangles)]


def _orient(a, b, c, d):
    return np.einsum("...k,...k->...", np.cross(b - a, c - a), d - a)


def _edges_cross(A, B, scale):
    """(n, m) bool: some edge of A[i] crosses B[j]; and (n, m) bool: a determinant was within EPS."""
    a, b, c = (B[None, :, k, :] for k in range(3))
    hit = np.zeros((A.shape[0], B.shape[0]), dtype=bool)
    tight = np.zeros_like(hit)
    tol = EPS * scale**3
    for e in range(3):
        p = A[:, None, e, :]
        q = A[:, None, (e + 1) % 3, :]
        s1, s2 = _orient(a, b, c, p), _orient(a, b, c, q)
        t1, t2, t3 = _orient(p, q, a, b), _orient(p, q, b, c), _orient(p, q, c, a)
        hit |= (s1 * s2 < 0) & (((t1 > 0) & (t2 > 0) & (t3 > 0)) | ((t1 < 0) & (t2 < 0) & (t3 < 0)))
        for d in (s1, s2, t1, t2, t3):
            tight |= np.abs(d) < tol
    return hit, tight


def intersecting(A: np.ndarray, B: np.ndarray, scale: float = 1.0):
    """(n, m) bool: triangle A[i] intersects triangle B[j]; and whether the answer for the pair is
    near a degenerate configuration (any determinant within EPS·scale³ of 0)."""
    h1, t1 = _edges_cross(A, B, scale)
    h2, t2 = _edges_cross(B, A, scale)
    return h1 | h2.T, t1 | t2.T
