"""Eigenvalues and eigenvectors of general square matrices over NumPy or CuPy arrays (LAPACK's geev).

``xp.linalg.eig`` is LAPACK's geev on the CPU (as torch's CPU kernel), cuSOLVER's geev through CuPy on a
GPU: each eigenvector has unit Euclidean norm and its largest component real, the order is the driver's.
Results are always complex (NumPy returns a real array when every eigenvalue is real): complex64 for
float32 / complex64 inputs, complex128 for float64 / complex128 ones. Callers check shapes and dtypes.
"""
from __future__ import annotations

import numpy as np

from .array_api import namespace_of


def _complex_of(dt) -> np.dtype:
    return np.dtype(np.complex128 if np.dtype(dt) in (np.float64, np.complex128) else np.complex64)


def is_finite(a) -> bool:
    """Whether every element is finite (one read back to the host on a GPU)."""
    xp = namespace_of(a)
    return bool(xp.isfinite(a).all())


def eig(a):
    """(eigenvalues (..., n), eigenvectors (..., n, n)) of each matrix, both complex."""
    xp = namespace_of(a)
    dt = _complex_of(a.dtype)
    n = a.shape[-1]
    if a.size == 0:
        return xp.zeros(a.shape[:-1], dt), xp.zeros(a.shape[:-2] + (n, n), dt)
    w, v = xp.linalg.eig(a)
    return xp.ascontiguousarray(w.astype(dt, copy=False)), xp.ascontiguousarray(v.astype(dt, copy=False))


def eigvals(a):
    """The eigenvalues (..., n) of each matrix, complex."""
    xp = namespace_of(a)
    dt = _complex_of(a.dtype)
    if a.size == 0:
        return xp.zeros(a.shape[:-1], dt)
    return xp.ascontiguousarray(xp.linalg.eigvals(a).astype(dt, copy=False))
