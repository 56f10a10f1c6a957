"""More elementwise math with torch's semantics, over NumPy or CuPy arrays.

Operands arrive in the computation dtype (16-bit floats already widened to
float32 where torch computes in float32); results come back in that dtype.
"""
from __future__ import annotations

import math

import numpy as np

from .array_api import BFLOAT16, as_array, namespace_of


def _xp(a, b=None):
    if hasattr(a, "shape"):
        return namespace_of(a)
    return namespace_of(b) if hasattr(b, "shape") else np


def _ret(r, out=None):
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


def xlogy(x, y, out=None):
    """x * log(y), 0 where x == 0 (even for y == 0), NaN where y is NaN."""
    xp = _xp(x, y)
    with np.errstate(all="ignore"):
        r = xp.where(x == 0, 0.0, x * xp.log(y))
    r = xp.where(xp.isnan(y), y, r)
    dt = x.dtype if hasattr(x, "dtype") else y.dtype
    return _ret(r.astype(dt, copy=False), out)


def logaddexp(a, b, out=None):
    """log(exp(a) + exp(b)) without overflow; equal infinities give themselves."""
    xp = _xp(a, b)
    with np.errstate(all="ignore"):
        m = xp.maximum(a, b)
        r = m + xp.log1p(xp.exp(-xp.abs(a - b)))
        r = xp.where(xp.isinf(a) & (a == b), a, r)
    return _ret(r, out)


def logaddexp2(a, b, out=None):
    """log2(2**a + 2**b) without overflow."""
    xp = _xp(a, b)
    with np.errstate(all="ignore"):
        m = xp.maximum(a, b)
        r = m + xp.log1p(xp.exp2(-xp.abs(a - b))) / math.log(2.0)
        r = xp.where(xp.isinf(a) & (a == b), a, r)
    return _ret(r, out)


def ldexp(a, b, out=None):
    """a * 2**b."""
    xp = _xp(a, b)
    with np.errstate(all="ignore"):
        return _ret(xp.multiply(a, xp.exp2(b)), out)


def heaviside(x, values, out=None):
    """values where x == 0, else 1 where x > 0 and 0 elsewhere (NaN included)."""
    xp = _xp(x, values)
    r = xp.where(x == 0, values, (x > 0).astype(x.dtype))
    return _ret(r.astype(x.dtype, copy=False), out)


def sinc(a, out=None):
    """sin(pi x) / (pi x), 1 at 0."""
    xp = namespace_of(a)
    with np.errstate(all="ignore"):
        p = a * a.dtype.type(math.pi)
        r = xp.where(a == 0, a.dtype.type(1), xp.sin(p) / p)
    return _ret(r.astype(a.dtype, copy=False), out)


def frac(a, out=None):
    xp = namespace_of(a)
    with np.errstate(all="ignore"):
        return _ret(a - xp.trunc(a), out)


def scale(a, factor, out=None):
    """a * factor in a's dtype (deg2rad, rad2deg)."""
    return _ret((a * a.dtype.type(factor)).astype(a.dtype, copy=False), out)


_UINT_OF = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def nextafter(a, b, out=None):
    """The next representable value after a towards b, by stepping the bit pattern (any float width)."""
    xp = _xp(a, b)
    if a.dtype in (np.dtype(np.float32), np.dtype(np.float64)) or not hasattr(a, "view"):
        return _ret(xp.nextafter(a, b), out)
    a, b = xp.broadcast_arrays(a, b)
    ut = _UINT_OF[a.dtype.itemsize]
    bits = xp.ascontiguousarray(a).view(ut)
    up = (b > a) == (a >= 0)         # away from zero when moving up from a positive, or down from a negative
    stepped = xp.where(up, bits + ut(1), bits - ut(1)).view(a.dtype)
    tiny = xp.array(1, dtype=ut).view(a.dtype)   # the smallest subnormal
    from_zero = xp.where(b > a, tiny, -tiny)
    r = xp.where(a == 0, from_zero, stepped)
    r = xp.where(a == b, b, r)
    r = xp.where(xp.isnan(a) | xp.isnan(b), a.dtype.type(np.nan), r)
    return _ret(r.astype(a.dtype, copy=False), out)


def _bits(dt):
    return dt.itemsize * 8


def left_shift(a, b, out=None):
    """a << b; shifts by a negative count or by at least the width give 0, as torch."""
    xp = _xp(a, b)
    dt = a.dtype if hasattr(a, "dtype") else b.dtype
    width = _bits(dt)
    ok = (b >= 0) & (b < width)
    safe = xp.where(ok, b, 0).astype(dt, copy=False)
    r = xp.where(ok, xp.left_shift(a, safe), 0).astype(dt, copy=False)
    return _ret(r, out)


def right_shift(a, b, out=None):
    """a >> b; out-of-range counts give the sign fill (0 or -1), as torch."""
    xp = _xp(a, b)
    dt = a.dtype if hasattr(a, "dtype") else b.dtype
    width = _bits(dt)
    ok = (b >= 0) & (b < width)
    safe = xp.where(ok, b, 0).astype(dt, copy=False)
    fill = xp.where(xp.asarray(a) < 0, -1, 0) if dt.kind == "i" else 0
    r = xp.where(ok, xp.right_shift(a, safe), fill).astype(dt, copy=False)
    return _ret(r, out)


def frexp(a):
    """(mantissa, exponent) with ``a == mantissa * 2**exponent``; the exponent is int32."""
    xp = namespace_of(a)
    work = a.astype(np.float32) if a.dtype == BFLOAT16 or a.dtype == np.float16 else a
    m, e = xp.frexp(work)
    return as_array(m).astype(a.dtype, copy=False), as_array(e).astype(np.int32, copy=False)
