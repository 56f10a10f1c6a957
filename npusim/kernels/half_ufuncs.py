"""float16 ufuncs computed on float32 arrays: NumPy's float16 loops convert, compute and round one element at a
time (4 to 12 ns an element); widening whole arrays, running the float32 loop and rounding once
(kernels/half_casts.py) gives the same bits in a quarter of the time.

The same bits because NumPy's float16 loop is exactly that, per element: ``float_to_half(float(a) op float(b))``
(and torch's CPU kernels compute 16-bit floats in float32 the same way). For add, subtract and multiply the
float32 result is the exact sum or product rounded once, and rounding it to float16 is NumPy's rounding
(half_casts checks that). Comparisons are exact. What the compiled loops leave open is which operand comes
back: the NaN of two NaN operands (add and multiply: the second in NumPy's float16 loop, the first in its
float32 loop, as built here), and for maximum and minimum the first or second of +0 and -0. So the operand
order of each ufunc is probed once at import against NumPy's own float16 loop (two NaNs, signed zeros, arrays
and scalars); a ufunc neither order reproduces keeps NumPy's loop. A NaN scalar operand (the float32 loops
return it in either order) and maximum or minimum of two arrays stay with NumPy's loop too.

Only C- or F-contiguous float16 NumPy arrays of at least ``MIN_SIZE`` elements, with a float16 array, a
float16 NumPy scalar or a 0-d float16 array as the other operand (or, compared with, a Python number float16
holds exactly), take this path; anything else returns None and the caller runs the plain ufunc.
"""
from __future__ import annotations

import numpy as np

from . import half_casts as HC

_ndarray = np.ndarray
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_half_scalar = np.float16
MIN_SIZE = 2048
# an element costs about eight float32 additions here (two widenings, the loop, a rounding): the intra-op split
# weighs the elements of float16 ufuncs so
WORK = 8

_ARITHMETIC = frozenset((np.add, np.subtract, np.multiply))
_COMPARISONS = frozenset((np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal))
_EXTREMA = frozenset((np.maximum, np.minimum))


def _probe() -> dict:
    """{ufunc: operands swapped} for the ufuncs whose float32 loop reproduces NumPy's float16 loop, in one order."""
    bits = np.array([0x7e01, 0x7e02, 0xfe03, 0x8000, 0x0000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7c05, 0x7e00, 0x0001,
                     0x7bff, 0x0400, 0x3555, 0xc000], dtype=np.uint16)
    a = np.tile(bits, MIN_SIZE // len(bits) + 1).view(np.float16)
    b = np.roll(a, 1)      # pairs of NaNs with different payloads, among others
    scalars = [np.float16(0), np.float16(-0.0), np.float16(1), np.uint16(0x7e07).view(np.float16)]
    order = {}
    with np.errstate(all="ignore"):
        for ufunc in sorted(_ARITHMETIC | _COMPARISONS | _EXTREMA, key=lambda u: u.__name__):
            cases = [(a, s) for s in scalars] + [(s, a) for s in scalars]
            if ufunc not in _COMPARISONS:    # a NaN scalar: the float32 loops return it in either order
                cases = [(x, y) for x, y in cases if not np.isnan(x if y is a else y)]
            if ufunc not in _EXTREMA:
                cases.append((a, b))
            for swapped in (False, True):
                if all(_matches(ufunc, x, y, swapped) for x, y in cases):
                    order[ufunc] = swapped
                    break
    return order


def _matches(ufunc, x, y, swapped) -> bool:
    want = ufunc(x, y)
    wx, wy = (v.astype(_F32) if v.__class__ is _ndarray else np.float32(v) for v in (x, y))
    got = ufunc(wy, wx) if swapped else ufunc(wx, wy)
    if want.dtype == _F16:
        return np.array_equal(got.astype(_F16).view(np.uint16), want.view(np.uint16))
    return np.array_equal(got, want)


_SWAPPED = _probe() if HC._COMPLEX32 is not None else {}
UFUNCS = frozenset(_SWAPPED)


def _wide(x):
    """A float32 operand for ``x`` (a float16 array or scalar); None when ``x`` is neither."""
    if x.__class__ is _ndarray:
        if x.dtype != _F16:
            return None
        if x.ndim == 0:
            return np.float32(x[()])
        w = HC.astype(x, _F32) if x.size >= HC.MIN_SIZE else None
        return w if w is not None else x.astype(_F32)
    if x.__class__ is _half_scalar:
        return np.float32(x)
    return None


def _contiguous_loop(x, y) -> bool:
    """Whether NumPy's inner loop over arrays ``x`` and ``y`` runs on two contiguous operands, as the probe's did:
    one shape and layout, or the smaller broadcast over leading axes of C-contiguous arrays (a broadcast last
    axis would run the loop of an array and a scalar)."""
    if x.shape == y.shape:
        return (x.flags.c_contiguous and y.flags.c_contiguous) or (x.flags.f_contiguous and y.flags.f_contiguous)
    if not (x.flags.c_contiguous and y.flags.c_contiguous) or x.shape[-1] != y.shape[-1]:
        return False
    small, large = (x.shape, y.shape) if x.ndim <= y.ndim else (y.shape, x.shape)
    return all(n == 1 or n == m for n, m in zip(reversed(small), reversed(large)))


def binary(ufunc, a, b, out=None):
    """``ufunc(a, b)`` (into ``out`` when given) through float32, or None when this path does not apply."""
    if ufunc is np.maximum and b.__class__ is _half_scalar and a.__class__ is _ndarray:
        r = _max_with_zero(a, b, out)       # relu: no float arithmetic at all
        if r is not None:
            return r
    if ufunc not in UFUNCS:
        return None
    if a.__class__ is _ndarray and a.ndim:
        big, other = (a, b) if b.__class__ is not _ndarray or a.size >= b.size else (b, a)
    else:
        big, other = b, a
    if big.__class__ is not _ndarray or big.size < MIN_SIZE or not (big.flags.c_contiguous or big.flags.f_contiguous):
        return None
    if other.__class__ is _ndarray and other.ndim and not _contiguous_loop(big, other):
        return None
    if other.__class__ is int or other.__class__ is float:
        if ufunc not in _COMPARISONS:
            return None         # NumPy's rules for a Python scalar with float16 (NEP 50) decide
        try:
            with np.errstate(over="ignore"):
                exact = np.float16(other)
        except OverflowError:
            return None
        if float(exact) != other:
            return None         # compared exactly only when float16 holds it
        a, b = (big, exact) if big is a else (exact, big)
        other = exact
    if ufunc not in _COMPARISONS and (other.__class__ is not _ndarray or not other.ndim):
        if np.isnan(other):     # outside the probe: NumPy's loop decides which NaN comes back
            return None
    elif ufunc in _EXTREMA:
        return None             # two arrays: outside the probe (two NaNs)
    if out is not None and (out.__class__ is not _ndarray or out.dtype != (_F16 if ufunc not in _COMPARISONS
                                                                               else np.bool_)):
        return None
    wa, wb = _wide(a), _wide(b)
    if wa is None or wb is None:
        return None
    if _SWAPPED[ufunc]:
        wa, wb = wb, wa
    if ufunc in _COMPARISONS:
        return ufunc(wa, wb) if out is None else ufunc(wa, wb, out=out)
    r = ufunc(wa, wb)
    if out is None:
        n = HC.astype(r, _F16)
        return n if n is not None else r.astype(_F16)
    if out.shape != r.shape:     # out= broadcasts the operands: NumPy's own call says what that means
        return None
    if not HC.copyto(out, r, "unsafe"):
        np.copyto(out, r, casting="unsafe")
    return out


# relu is ``maximum(x, +0)``; NumPy's float16 loop gives ``x`` where x >= +0 (-0 included) or x is NaN, else +0.
# So only the negative numbers below -0 become +0: bits 0x8001 to 0xFC00 (-inf), which, as int16 plus 32767
# (wrapping), are exactly 0..31743. The mask and the select run on the int16 bits without a branch, in pieces.
_RELU_BLOCK = 1 << 15
_NEGATIVE_SPAN = np.uint16(0xFC00 - 0x8001)


def _max_with_zero(a, zero, out):
    """``np.maximum(a, zero)`` for a float16 array ``a`` and +0, bit for bit; None when this does not apply."""
    if a.dtype != _F16 or a.size < MIN_SIZE or zero.view(np.uint16) != 0:
        return None
    if a.flags.c_contiguous:
        flip = False
    elif a.flags.f_contiguous:
        flip = True       # a transposed matrix: the result keeps its layout, as NumPy's does
    else:
        return None
    if out is None:
        out = np.empty(a.shape, _F16, order="F" if flip else "C")
    elif (out.__class__ is not _ndarray or out.dtype != _F16 or out.shape != a.shape
          or not (out.flags.f_contiguous if flip else out.flags.c_contiguous) or not out.flags.writeable
          or (out is not a and np.may_share_memory(out, a))):
        return None
    src = (a.T if flip else a).reshape(-1).view(np.int16)
    dst = (out.T if flip else out).reshape(-1).view(np.int16)
    n = src.shape[0]
    keep = np.empty(min(n, _RELU_BLOCK), np.int16)
    for lo in range(0, n, _RELU_BLOCK):
        hi = min(lo + _RELU_BLOCK, n)
        x, k = src[lo:hi], keep[:hi - lo]
        np.add(x, 32767, out=k)
        np.less_equal(k.view(np.uint16), _NEGATIVE_SPAN, out=k, casting="unsafe")   # 1: becomes +0
        np.subtract(k, 1, out=k)                                                     # 0 or all ones
        np.bitwise_and(x, k, out=dst[lo:hi])
    return out
