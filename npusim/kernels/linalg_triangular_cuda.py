"""Triangular solves and square LU factorizations on a GPU through CUDA's libraries (cuBLAS and cuSOLVER).

The array code in ``linalg_triangular.py`` takes a few kernel launches per row or column: nothing on NumPy,
but thousands of launches for one large matrix on a GPU. CuPy reaches the libraries torch's CUDA kernels
use: cuBLAS's (batched) ``trsm`` through ``cupyx.scipy.linalg.solve_triangular``, and cuBLAS's batched /
cuSOLVER's ``getrf`` through the batched LU helper of ``cupy.linalg`` (a private name, looked up once: where
a CuPy lacks it the array code takes over). Neither reads anything back to the host: LU's ``info`` stays
on the device.

Each function returns ``None`` for what it does not cover (dtypes other than float32/float64, empty or
non-square LU inputs), and the caller runs the array code.
"""
from __future__ import annotations

import importlib

import numpy as np

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_MISSING = object()
_batched_lu = _MISSING


def solve_triangular(xp, a, b, upper: bool, unitriangular: bool):
    """X with A X = B from one triangle of A; a (..., n, n) and b (..., n, k) already share one batch shape."""
    if a.dtype not in _FLOATS or b.dtype != a.dtype or a.size == 0 or b.size == 0:
        return None
    from cupyx.scipy.linalg import solve_triangular as trsm
    batch = a.shape[:-2]
    if not batch:
        x = trsm(a, b, lower=not upper, unit_diagonal=unitriangular, check_finite=False)
        return xp.ascontiguousarray(x)
    count = int(np.prod(batch))
    x = trsm(a.reshape((count,) + a.shape[-2:]), b.reshape((count,) + b.shape[-2:]), lower=not upper,
             unit_diagonal=unitriangular, check_finite=False)
    return xp.ascontiguousarray(x).reshape(b.shape)


def _lu_helper():
    global _batched_lu
    if _batched_lu is _MISSING:
        try:
            _batched_lu = importlib.import_module("cupy.linalg._decomposition")._lu_factor
        except (ImportError, AttributeError):
            _batched_lu = None
    return _batched_lu


def lu_factor(xp, lu):
    """(LU, pivots, info) of the square matrices ``lu`` (n_b, n, n), as LAPACK's getrf gives them (1-based
    int32 pivots, ``info`` the first zero pivot or 0), or None."""
    n_b, m, n = lu.shape
    if lu.dtype not in _FLOATS or m != n or lu.size == 0:
        return None
    helper = _lu_helper()
    if helper is None:
        return None
    # the libraries work in column-major order: a C-order matrix read column-major is its transpose
    lu_t, pivots, info = helper(lu.transpose(0, 2, 1), lu.dtype)
    return xp.ascontiguousarray(lu_t.transpose(0, 2, 1)), pivots.astype(np.int32, copy=False), \
        info.astype(np.int32, copy=False)
