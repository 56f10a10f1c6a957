"""Array kernels for ranges: arange and linspace with torch's CPU arithmetic.

torch's CPU kernels are reproduced step by step so that the values match
bit for bit: arange runs through 8-wide (float32) / 4-wide (float64) /
16-wide (16-bit floats) vector chunks, each starting from a rounded base,
and the compiler contracts ``a + b * c`` into fused multiply-adds, emulated
here with error-free transformations (exact products and sums).
"""
from __future__ import annotations

import math

import numpy as np

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
# elements per vector register in torch's AVX2 CPU kernels
_VEC = {4: 8, 8: 4, 2: 16}


def arange_length(start, end, step) -> int:
    """Number of elements of arange(start, end, step) for every dtype but int64 (computed in double)."""
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(float(v)) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if all(isinstance(v, (int, np.integer)) for v in (start, end, step)):
        return max(0, -((int(start) - int(end)) // int(step)))  # exact integer ceil
    n = math.ceil((float(end) - float(start)) / float(step))
    if n >= 2 ** 63:
        raise RuntimeError("invalid size, possible overflow?")
    return max(0, n)


def check_int64_values(*values) -> None:
    """torch reads an integral arange's numbers as int64, refusing what does not fit (inf too)."""
    for v in values:
        if not -2 ** 63 <= v < 2 ** 63:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")


def arange_length_int64(start, end, step) -> int:
    """int64 arange counts with the truncated integer bounds and step, as torch does."""
    try:
        arange_length(start, end, step)
    except RuntimeError as e:   # the range checks come first, the int64 conversion before the size check
        if "invalid size" in str(e):
            check_int64_values(start, end, step)
        raise
    check_int64_values(start, end, step)
    xs, xe, xst = int(start), int(end), int(step)
    if xst == 0:
        raise ValueError("step must be nonzero")
    num = xe - xs + xst - (1 if xst > 0 else -1)
    q = abs(num) // abs(xst)  # C's truncating division
    return max(0, q if (num >= 0) == (xst > 0) else -q)


def _two_prod(a, b):
    """p, e with p + e == a * b exactly (Veltkamp/Dekker splitting)."""
    p = a * b
    split = 134217729.0  # 2**27 + 1
    ah = a * split
    ah = ah - (ah - a)
    al = a - ah
    bh = b * split
    bh = bh - (bh - b)
    bl = b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _f64(x):
    """``x`` in float64: arrays stay in their own module (the device's, for CuPy), numbers become NumPy scalars."""
    return x.astype(_F64, copy=False) if hasattr(x, "astype") and getattr(x, "ndim", 0) else np.float64(x)


def _fma(xp, a, b, c, out_dtype):
    """a * b + c in float64 rounded once, as the compiler's fused multiply-add gives, then cast.

    Each step is its own elementwise op (on a GPU, one kernel each), so no compiler can contract them.
    """
    a, b, c = _f64(a), _f64(b), _f64(c)
    with np.errstate(all="ignore"):
        p, ep = _two_prod(a, b)
        s, es = _two_sum(p, c)
        r = s + (ep + es)
        r = xp.where(xp.isfinite(r), r, a * b + c)
    return r if out_dtype == _F64 else r.astype(out_dtype)


def _fma32(a, b, c):
    """float32 FMA: the float64 product of two float32 values is exact."""
    return (_f64(a) * _f64(b) + _f64(c)).astype(_F32)


def arange(xp, start, step, n, dtype):
    """torch.arange's values, computed with ``xp`` where the result lives (no copy from the host)."""
    dtype = np.dtype(dtype)
    idx = xp.arange(n, dtype=np.int64)
    if dtype.kind in "iub":
        # integral ranges run in int64 with the start and step truncated, then wrap into dtype
        r = (int(start) + int(step) * idx).astype(dtype)
    else:
        width = _VEC[dtype.itemsize]
        vec_end = n - n % (2 * width)  # the kernel's vector loop covers whole pairs of registers
        base_idx = idx - idx % width
        lane = (idx % width).astype(_F64)
        if dtype.itemsize >= 4:
            # accumulate in double; each vector starts from a base rounded to dtype
            base = _fma(xp, step, base_idx, start, dtype)
            r = xp.where(idx < vec_end, _fma(xp, lane, step, base, dtype), _fma(xp, step, idx, start, dtype))
        else:
            # 16-bit floats accumulate in float32
            s32, st32 = np.float32(start), np.float32(step)
            base = _fma32(st32, base_idx.astype(_F32), s32).astype(dtype).astype(_F32)
            vec = _fma32(lane.astype(_F32), st32, base)
            tail = _fma32(st32, idx.astype(_F32), s32)
            r = xp.where(idx < vec_end, vec, tail).astype(dtype)
    return r


def linspace(xp, start, end, steps, dtype):
    """torch.linspace: the first half counts up from start, the second half down from end."""
    dtype = np.dtype(dtype)
    if steps == 0:
        return xp.empty((0,), dtype)
    if steps == 1:
        return xp.full((1,), np.array(start).astype(dtype)[()], dtype)
    idx = xp.arange(steps, dtype=np.int64)
    half = steps // 2
    if dtype.kind in "iub":
        s, e = np.array(start).astype(dtype), np.array(end).astype(dtype)
        sf, ef = float(s), float(e)
        step = (ef - sf) / (steps - 1)
        up = _fma(xp, step, idx, sf, _F64)
        down = _fma(xp, -step, steps - 1 - idx, ef, _F64)
        r = xp.where(idx < half, up, down)
        r = xp.trunc(r).astype(np.int64).astype(dtype)
    elif dtype.itemsize >= 4:
        s, e = dtype.type(start), dtype.type(end)
        step = (e - s) / dtype.type(steps - 1)
        up = _fma(xp, step, idx.astype(dtype), s, dtype)
        down = _fma(xp, -step, (steps - 1 - idx).astype(dtype), e, dtype)
        r = xp.where(idx < half, up, down)
    else:
        # 16-bit floats: every operation rounds back to the 16-bit type (as NumPy's and ml_dtypes' loops do:
        # computed in float32, then rounded), written as float32 ops so that any array module runs them
        s, e = dtype.type(start), dtype.type(end)
        st32 = np.float32(dtype.type(dtype.type(e - s) / dtype.type(steps - 1)))
        up = (np.float32(s) + (st32 * idx.astype(dtype).astype(_F32)).astype(dtype).astype(_F32)).astype(dtype)
        down = (np.float32(e) - (st32 * (steps - 1 - idx).astype(dtype).astype(_F32)).astype(dtype)
                .astype(_F32)).astype(dtype)
        r = xp.where(idx < half, up, down)
    return r.astype(dtype, copy=False)
