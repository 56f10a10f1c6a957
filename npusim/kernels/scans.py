"""Array kernels for running extrema and log-cumulative-sum-exp.

Scans are written as doubling (Hillis-Steele) passes of an element-wise
binary ufunc, so they need nothing beyond broadcasting ufuncs and slicing and
run the same on NumPy and CuPy; each pass is one vectorised op.
"""
from __future__ import annotations

import numpy as np

from .array_api import compute_dtype, namespace_of

_INT64 = np.dtype(np.int64)


def _inclusive_scan(combine, a, axis):
    """Running ``combine`` along ``axis`` (``combine`` associative, element-wise)."""
    n = a.shape[axis]
    r = a.copy()
    step = 1
    while step < n:
        head = [slice(None)] * a.ndim
        tail = [slice(None)] * a.ndim
        head[axis] = slice(step, None)
        tail[axis] = slice(None, n - step)
        r[tuple(head)] = combine(r[tuple(head)], r[tuple(tail)])
        step *= 2
    return r


def cumulative_extreme(a, axis, largest):
    """(values, indices) of the running max (or min); NaN propagates, ties take the latest index as torch."""
    xp = namespace_of(a)
    if a.ndim == 0:
        return a.copy(), xp.zeros((), _INT64)
    if a.dtype == np.bool_:
        work = a.astype(np.uint8)
        values, indices = cumulative_extreme(work, axis, largest)
        return values.astype(np.bool_), indices
    values = _inclusive_scan(xp.maximum if largest else xp.minimum, a, axis)
    hit = a == values
    if a.dtype.kind == "f" or a.dtype.kind == "V":
        hit |= xp.isnan(a) & xp.isnan(values)
    shape = [1] * a.ndim
    shape[axis] = a.shape[axis]
    positions = xp.arange(a.shape[axis], dtype=_INT64).reshape(shape)
    # the last position up to here where the element was the running extreme
    indices = _inclusive_scan(xp.maximum, xp.where(hit, positions, -1), axis)
    return values, indices


def logcumsumexp(a, axis):
    """log(cumsum(exp(a))) along ``axis``, without overflow (pairwise logaddexp)."""
    xp = namespace_of(a)
    if a.ndim == 0:
        return a.copy()
    work = compute_dtype(a.dtype)
    r = _inclusive_scan(_logaddexp(xp), a.astype(work), axis)
    return r.astype(a.dtype, copy=False)


def _logaddexp(xp):
    def combine(x, y):
        # logaddexp(-inf, -inf) is -inf; NumPy's handles it, written out so every array module agrees
        m = xp.maximum(x, y)
        safe = xp.where(xp.isinf(m) & (m < 0), 0, m)
        return xp.where(xp.isinf(m) & (m < 0), m, safe + xp.log(xp.exp(x - safe) + xp.exp(y - safe)))
    return combine
