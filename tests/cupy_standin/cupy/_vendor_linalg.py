"""NumPy references of the CUDA library routines CuPy reaches (cuBLAS trsm, cuBLAS/cuSOLVER getrf).

Each takes and returns stand-in arrays with the shapes and layouts CuPy's wrappers give, and reads nothing
back to the host (the device calls do not). LU follows LAPACK's getrf: partial pivoting on the first entry
of largest magnitude, 1-based int32 pivots, ``info`` the first exactly-zero pivot, the factorization
carried on past it.
"""
from __future__ import annotations

import numpy as np

from . import _core


def _check(*arrays):
    for a in arrays:
        if not isinstance(a, _core.ndarray):
            raise _core._unsupported(a)
    _core.check_device(list(arrays))


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=False):
    """cupyx.scipy.linalg.solve_triangular for trans=0: (..., M, M) and (..., M, N) or (..., M)."""
    _check(a, b)
    if trans not in (0, "N"):
        raise NotImplementedError("the stand-in solves trans=0 only")
    if check_finite:
        _core.count_sync("solve_triangular check_finite")
    if a.ndim > 2 and a.shape[:-2] != b.shape[:a.ndim - 2]:
        raise ValueError("incompatible batch count")
    A, B = a._np, b._np
    dtype = A.dtype if A.dtype.char in "fd" else np.promote_types(A.dtype, "f")
    vector = B.ndim == A.ndim - 1
    X = (B[..., None] if vector else B).astype(dtype, copy=True)
    n = A.shape[-1]
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in rows:
            done = slice(0, i) if lower else slice(i + 1, n)
            X[..., i, :] -= np.einsum("...j,...jk->...k", A[..., i, done].astype(dtype), X[..., done, :])
            if not unit_diagonal:
                X[..., i, :] /= A[..., i, i, None].astype(dtype)
    return _core.wrap_new(X[..., 0] if vector else X, a._dev)


def lu_factor_batched(a_t, dtype):
    """cupy.linalg._decomposition._lu_factor: (lu_t, pivots, info) of the column-major square matrices a_t."""
    _check(a_t)
    lu = np.swapaxes(a_t._np, -1, -2).astype(dtype, copy=True).reshape((-1,) + a_t.shape[-2:])
    n_b, n = lu.shape[0], lu.shape[-1]
    piv = np.zeros((n_b, n), np.int32)
    info = np.zeros(n_b, np.int32)
    with np.errstate(all="ignore"):
        for b in range(n_b):
            m = lu[b]
            for j in range(n):
                p = j + int(np.argmax(np.abs(m[j:, j])))
                piv[b, j] = p + 1
                if p != j:
                    m[[j, p]] = m[[p, j]]
                if m[j, j] == 0:
                    if info[b] == 0:
                        info[b] = j + 1
                    continue
                m[j + 1:, j] /= m[j, j]
                m[j + 1:, j + 1:] -= np.outer(m[j + 1:, j], m[j, j + 1:])
    lu_t = np.ascontiguousarray(np.swapaxes(lu, -1, -2)).reshape(a_t.shape)
    dev = a_t._dev
    return (_core.wrap_new(lu_t, dev), _core.wrap_new(piv.reshape(a_t.shape[:-1]), dev),
            _core.wrap_new(info.reshape(a_t.shape[:-2]), dev))
