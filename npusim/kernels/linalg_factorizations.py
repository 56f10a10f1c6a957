"""Matrix decompositions and solvers over NumPy or CuPy arrays, batched over leading dims.

Each function calls the same ``xp.linalg`` routine on either library. LAPACK's
``info`` codes (which pivot of an LU is zero, which leading minor is not
positive-definite) are not returned by those routines, so when a factorization
fails they are recovered by an unblocked elimination vectorised over the batch.
Callers check shapes and dtypes and raise torch's errors.
"""
from __future__ import annotations

import numpy as np

from .array_api import namespace_of

_INFO = np.dtype(np.int32)


def _batch_flat(a):
    """``a`` as a (batch, m, n) array (a view where possible) and the batch shape."""
    return a.reshape((-1,) + a.shape[-2:]), a.shape[:-2]


def det(a):
    xp = namespace_of(a)
    return xp.asarray(xp.linalg.det(a))


def slogdet(a):
    xp = namespace_of(a)
    sign, logabs = xp.linalg.slogdet(a)
    return xp.asarray(sign), xp.asarray(logabs)


def lu_info(a):
    """For each square matrix, the (1-based) index of the first zero pivot of its partially pivoted LU, or 0."""
    xp = namespace_of(a)
    flat, batch = _batch_flat(a)
    u = flat.copy()
    n_b, n = u.shape[0], u.shape[-1]
    info = xp.zeros(n_b, _INFO)
    rows = xp.arange(n_b)
    for k in range(n):
        p = xp.argmax(xp.abs(u[:, k:, k]), axis=1) + k
        top = u[rows, k].copy()
        u[rows, k] = u[rows, p]
        u[rows, p] = top
        pivot = u[:, k, k]
        zero = pivot == 0
        info = xp.where((info == 0) & zero, k + 1, info)
        # LAPACK skips the elimination below a zero pivot
        factors = xp.where(zero[:, None], 0, u[:, k + 1:, k] / xp.where(zero, 1, pivot)[:, None])
        u[:, k + 1:, k:] -= factors[:, :, None] * u[:, k, None, k:]
    return info.reshape(batch)


def _singular_fill(xp, r, info):
    """NaN in every batch element whose factorization failed (LAPACK leaves them undefined)."""
    bad = (info != 0).reshape(info.shape + (1,) * (r.ndim - info.ndim))
    return xp.where(bad, xp.nan, r).astype(r.dtype, copy=False)


def inv(a):
    """The inverses, the LU info of each matrix, and whether any failed (known on the host: the finiteness
    read that decides whether the info must be recovered, so that callers need no second read)."""
    xp = namespace_of(a)
    try:
        r = xp.linalg.inv(a)
    except np.linalg.LinAlgError:
        r = None
    if r is not None and bool(xp.isfinite(r).all()):
        return r, xp.zeros(a.shape[:-2], _INFO), False
    info = lu_info(a)
    if r is None:
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        r = xp.linalg.inv(xp.where((info != 0).reshape(info.shape + (1, 1)), eye, a))
    return _singular_fill(xp, r, info), info, True


def solve(a, b):
    """X with A X = B for matrices B (the batch dims of A and B broadcast), the LU info of each A and whether any
    failed (as :func:`inv`)."""
    xp = namespace_of(a)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    try:
        r = xp.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        r = None
    if r is not None and bool(xp.isfinite(r).all()):
        return r, xp.zeros(batch, _INFO), False
    info = lu_info(a)
    if r is None:
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        r = xp.linalg.solve(xp.where((info != 0).reshape(info.shape + (1, 1)), eye, a), b)
    return _singular_fill(xp, r, info), info, True


def _cholesky_info(a):
    """The order of the first leading minor of each matrix that is not positive-definite, or 0."""
    xp = namespace_of(a)
    flat, batch = _batch_flat(a)
    n_b, n = flat.shape[0], flat.shape[-1]
    low = xp.zeros_like(flat)
    info = xp.zeros(n_b, _INFO)
    for j in range(n):
        d = flat[:, j, j] - (low[:, j, :j] ** 2).sum(axis=1)
        bad = ~(d > 0)   # NaN counts as failure, as in LAPACK
        info = xp.where((info == 0) & bad, j + 1, info)
        root = xp.sqrt(xp.where(bad, 1, d))
        low[:, j, j] = root
        below = flat[:, j + 1:, j] - (low[:, j + 1:, :j] * low[:, j, None, :j]).sum(axis=2)
        low[:, j + 1:, j] = below / root[:, None]
    return info.reshape(batch)


def cholesky(a, upper=False):
    """The Cholesky factors (from the lower triangle of each matrix), the info of each factorization and whether
    any failed (as :func:`inv`)."""
    xp = namespace_of(a)
    try:
        low = xp.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        low = None
    failed = not (low is not None and bool(xp.isfinite(low).all()))
    if not failed:
        info = xp.zeros(a.shape[:-2], _INFO)
    else:
        info = _cholesky_info(a)
        eye = xp.eye(a.shape[-1], dtype=a.dtype)
        low = _singular_fill(xp, xp.linalg.cholesky(xp.where((info != 0).reshape(info.shape + (1, 1)), eye, a)),
                             info)
    if upper:
        low = xp.ascontiguousarray(xp.swapaxes(low, -1, -2))
    return low, info, failed


def qr(a, mode):
    """(Q, R) of ``mode`` 'reduced', 'complete' or 'r' (Q is then an empty array)."""
    xp = namespace_of(a)
    if mode == "r":
        return xp.zeros((0,), a.dtype), xp.asarray(xp.linalg.qr(a, mode="r"))
    q, r = xp.linalg.qr(a, mode=mode)
    return q, r


def eigh(a, uplo, compute_v):
    """Ascending eigenvalues and (when ``compute_v``) eigenvectors of symmetric matrices read from ``uplo``."""
    xp = namespace_of(a)
    if not compute_v:
        return xp.linalg.eigvalsh(a, UPLO=uplo), xp.zeros((0,), a.dtype)
    w, v = xp.linalg.eigh(a, UPLO=uplo)
    return w, v


def svd(a, full_matrices, compute_uv):
    """U, descending singular values and Vh; without ``compute_uv``, U and Vh are empty arrays."""
    xp = namespace_of(a)
    if not compute_uv:
        empty = xp.zeros((0,), a.dtype)
        if 0 in a.shape[-2:]:
            return empty, xp.zeros(a.shape[:-2] + (0,), a.dtype), empty
        return empty, xp.linalg.svd(a, compute_uv=False), empty
    if 0 in a.shape[-2:]:
        m, n = a.shape[-2:]
        batch = a.shape[:-2]
        eye = xp.eye
        u = xp.broadcast_to(eye(m, dtype=a.dtype), batch + (m, m)) if full_matrices else xp.zeros(batch + (m, 0), a.dtype)
        vh = xp.broadcast_to(eye(n, dtype=a.dtype), batch + (n, n)) if full_matrices else xp.zeros(batch + (0, n), a.dtype)
        return xp.ascontiguousarray(u), xp.zeros(batch + (0,), a.dtype), xp.ascontiguousarray(vh)
    u, s, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh
