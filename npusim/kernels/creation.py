"""Array kernels for ranges: arange and linspace with torch's arithmetic."""
from __future__ import annotations

import math

import numpy as np


def arange_length(start, end, step) -> int:
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(float(v)) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if all(isinstance(v, (int, np.integer)) for v in (start, end, step)):
        return max(0, -((start - end) // step))  # exact integer ceil
    return max(0, math.ceil((float(end) - float(start)) / float(step)))


def arange(xp, start, step, n, dtype):
    """start + i * step, computed in float64 (or int64) then cast, as torch's CPU kernel does."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iub" and all(isinstance(v, (int, np.integer)) for v in (start, step)):
        return (xp.arange(n, dtype=np.int64) * step + start).astype(dtype, copy=False)
    return (xp.arange(n, dtype=np.float64) * float(step) + float(start)).astype(dtype)


def linspace(xp, start, end, steps, dtype):
    """Symmetric linspace: the first half counts up from start, the second half down from end."""
    dtype = np.dtype(dtype)
    if steps == 0:
        return xp.empty((0,), dtype)
    if steps == 1:
        return xp.full((1,), start, dtype=np.float64).astype(dtype)
    work = dtype if dtype.kind == "f" and dtype.itemsize >= 4 else np.dtype(np.float64)
    s, e = work.type(start), work.type(end)
    step = (e - s) / work.type(steps - 1)
    i = xp.arange(steps, dtype=work)
    half = steps // 2
    r = xp.where(i < half, s + step * i, e - step * (steps - 1 - i))
    if dtype.kind in "iu":
        r = xp.trunc(r)
    return r.astype(dtype)
