"""Triangular solves, partially pivoted LU and the matrix exponential over NumPy or CuPy arrays.

``numpy.linalg`` exposes neither a triangular solve nor an LU with its pivots, so
both are written here once against ``xp``: substitution by blocks of rows (a small
triangular block solved row by row, the rest of the right-hand side updated with
one matmul) and a right-looking LU with LAPACK's partial pivoting (the first row of
largest magnitude; 1-based int32 pivots, ``info`` the first zero pivot). Both are
vectorised over the batch. Callers check shapes and dtypes and raise torch's errors.
"""
from __future__ import annotations

import numpy as np

from . import linalg_triangular_cuda
from .array_api import namespace_of

_INFO = np.dtype(np.int32)
_BLOCK = 32


def _lower_solve(xp, a, b, unit):
    """X with tril(A) X = B; A (..., n, n), B (..., n, k) already broadcast to one batch shape."""
    n = a.shape[-1]
    x = xp.array(b, copy=True)
    for s in range(0, n, _BLOCK):
        e = min(s + _BLOCK, n)
        for i in range(s, e):
            if i > s:
                x[..., i, :] -= (a[..., i, None, s:i] @ x[..., s:i, :])[..., 0, :]
            if not unit:
                x[..., i, :] /= a[..., i, i, None]
        if e < n:
            x[..., e:, :] -= a[..., e:, s:e] @ x[..., s:e, :]
    return x


def solve_triangular(a, b, upper, unitriangular):
    """X with A X = B reading only the ``upper`` (or lower) triangle of A (its diagonal taken as ones when
    ``unitriangular``); batch dims broadcast."""
    xp = namespace_of(a)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    if xp is not np:   # on a GPU: cuBLAS's trsm, one call instead of a launch per row
        x = linalg_triangular_cuda.solve_triangular(xp, a, b, upper, unitriangular)
        if x is not None:
            return x
    if upper:   # reverse rows and columns: an upper system becomes a lower one
        x = _lower_solve(xp, a[..., ::-1, ::-1], b[..., ::-1, :], unitriangular)[..., ::-1, :]
        return xp.ascontiguousarray(x)
    return _lower_solve(xp, a, b, unitriangular)


def lu_factor(a):
    """(LU, pivots, info) of each (m, n) matrix: P A = L U with L unit lower (stored below the diagonal) and U
    upper; pivots 1-based int32 of length min(m, n); info the 1-based index of the first zero pivot, or 0."""
    xp = namespace_of(a)
    batch, (m, n) = a.shape[:-2], a.shape[-2:]
    k = min(m, n)
    lu = xp.array(a.reshape((-1, m, n)), copy=True)
    if xp is not np:   # on a GPU: cuBLAS/cuSOLVER getrf, one call instead of a dozen launches per column
        done = linalg_triangular_cuda.lu_factor(xp, lu)
        if done is not None:
            lu, piv, info = done
            return lu.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)
    n_b = lu.shape[0]
    rows = xp.arange(n_b)
    piv = xp.zeros((n_b, k), _INFO)
    info = xp.zeros(n_b, _INFO)
    for j in range(k):
        p = xp.argmax(xp.abs(lu[:, j:, j]), axis=1) + j   # the first of the largest, as LAPACK's i?amax
        piv[:, j] = p + 1
        top = lu[rows, j].copy()
        lu[rows, j] = lu[rows, p]
        lu[rows, p] = top
        pivot = lu[:, j, j]
        zero = pivot == 0
        info = xp.where((info == 0) & zero, j + 1, info)
        # LAPACK leaves the column below a zero pivot as it is and goes on
        factors = xp.where(zero[:, None], lu[:, j + 1:, j], lu[:, j + 1:, j] / xp.where(zero, 1, pivot)[:, None])
        lu[:, j + 1:, j] = factors
        upd = xp.where(zero[:, None], 0, factors)
        lu[:, j + 1:, j + 1:] -= upd[:, :, None] * lu[:, j, None, j + 1:]
    return lu.reshape(a.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def pivots_to_permutation(piv, m):
    """The row permutation ``perm`` (int64, (..., m)) with P[perm[i], i] = 1, i.e. (P^T A)[i] = A[perm[i]],
    from LAPACK's sequential row swaps."""
    xp = namespace_of(piv)
    batch = piv.shape[:-1]
    flat = piv.reshape((-1, piv.shape[-1])).astype(np.int64) - 1
    n_b, k = flat.shape
    if xp is not np and 1 < k and n_b * k * m <= _TREE_ELEMENTS:
        return _compose_swaps(xp, flat, m).reshape(batch + (m,))
    perm = xp.broadcast_to(xp.arange(m), batch + (m,)).reshape((-1, m)).copy()
    rows = xp.arange(perm.shape[0])
    for j in range(flat.shape[-1]):
        p = flat[:, j]
        top = perm[:, j].copy()
        perm[:, j] = perm[rows, p]
        perm[rows, p] = top
    return perm.reshape(batch + (m,))


# the swaps as whole permutations take n_b * k * m elements; past this, one launch per swap costs less memory
_TREE_ELEMENTS = 1 << 22


def _compose_swaps(xp, flat, m):
    """The product of the row swaps (j, flat[:, j]) in order, composed pairwise in a tree: log2(k) gathers on
    a GPU instead of a few launches per swap. Integer gathers, so exactly the sequential result."""
    n_b, k = flat.shape
    swaps = xp.broadcast_to(xp.arange(m), (n_b, k, m)).copy()
    b = xp.arange(n_b)[:, None]
    j = xp.arange(k)[None, :]
    swaps[b, j, j] = flat
    swaps[b, j, flat] = xp.broadcast_to(j, flat.shape)
    while swaps.shape[1] > 1:
        if swaps.shape[1] % 2:
            swaps = xp.concatenate([swaps, xp.broadcast_to(xp.arange(m), (n_b, 1, m))], axis=1)
        # (first then second)[i] = first[second[i]]: the loop's perm[i] = perm[swap[i]], one swap after another
        swaps = xp.take_along_axis(swaps[:, 0::2], swaps[:, 1::2], axis=2)
    return swaps[:, 0]


def valid_pivots(piv, m):
    xp = namespace_of(piv)
    return bool(xp.all((piv >= 1) & (piv <= m)))


def permutation_matrix(perm, dtype):
    """P with P[perm[i], i] = 1, so that A = P L U."""
    xp = namespace_of(perm)
    m = perm.shape[-1]
    return (perm[..., :, None] == xp.arange(m)).swapaxes(-1, -2).astype(dtype)


# Higham (2005): the degree-13 Pade approximant with scaling and squaring
_B13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
        10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def matrix_exp(a):
    xp = namespace_of(a)
    n = a.shape[-1]
    if n == 0 or a.size == 0:
        return xp.array(a, copy=True)
    if n == 1:
        return xp.exp(a)
    dt = a.dtype
    work = a.astype(np.float64)
    norm1 = xp.abs(work).sum(axis=-2).max(axis=-1)
    s = xp.maximum(0, xp.ceil(xp.log2(xp.maximum(norm1, 1e-300) / _THETA13))).astype(np.int64)
    s = xp.where(xp.isfinite(norm1), s, 0)
    work = work / (2.0 ** s)[..., None, None]
    eye = xp.eye(n, dtype=np.float64)
    b = _B13
    a2 = work @ work
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = work @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = xp.linalg.solve(v - u, v + u)
    top = int(s.max()) if s.size else 0
    for i in range(top):
        r = xp.where((i < s)[..., None, None], r @ r, r)
    return r.astype(dt, copy=False)

