"""float16 <-> float32 conversions of contiguous NumPy arrays, faster than NumPy's and with its bits.

NumPy converts float16 one element at a time in a scalar routine (about 2.5 ns an element to float16 and
1.7 ns back on a current x86 core), and it branches on zero and subnormals, so data like relu's (half zeros)
costs a misprediction per element, 4 ns and more. Here:

- float32 -> float16 runs ml_dtypes' complex32 (a pair of float16) cast from complex64, about twice NumPy's
  speed, with the same bits: round-to-nearest-even, the same overflow to infinity, subnormals and signed zeros
  (checked against NumPy over every float32 bit pattern). Only NaNs differ: ml_dtypes writes one quiet NaN
  where NumPy keeps the payload's top bits, so NaNs (found in one fast pass) are rewritten by NumPy. A float
  array of even length, viewed as pairs, converts pairwise; an odd last element goes through NumPy. That loop
  branches too: where a sample of the data holds many zeros, the branch-free ``_narrow`` runs instead, three
  times faster there, with the same bits (checked against the complex32 path over every float32 pattern).
- float16 -> float32 is branch-free whole-array arithmetic (``_widen``): 0.4 ns an element whatever the data,
  NumPy's bits for every float16.

Like the rest of the kernels, the conversion is silent about overflow (torch's casts are). Where ml_dtypes has
no complex32 (before 0.6), or for strided and small arrays, NumPy's own cast runs.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

_ndarray = np.ndarray
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_COMPLEX32 = getattr(ml_dtypes, "complex32", None)
# the pair dtype of each side; empty without ml_dtypes' complex32, so nothing takes the fast path
_PAIR = {_F16: np.dtype(_COMPLEX32), _F32: np.dtype(np.complex64)} if _COMPLEX32 is not None else {}
# below this many elements the views cost more than the faster loop saves
MIN_SIZE = 1024
_CASTINGS = frozenset(("unsafe", "same_kind"))
# a conversion costs about four float32 additions an element: the intra-op split weighs its elements so
WORK = 4


def _pairs(src_dt, dst_dt) -> bool:
    """Whether ``src_dt -> dst_dt`` is float16 -> float32 or float32 -> float16 (and complex32 exists)."""
    return src_dt != dst_dt and src_dt in _PAIR and dst_dt in _PAIR


def work(src_dt, dst_dt) -> int:
    """Elements of a ``src_dt -> dst_dt`` copy, in float32 additions (what the intra-op split counts)."""
    return WORK if _pairs(src_dt, dst_dt) else 1


def _copy_flat(dst, src) -> None:
    """``dst[...] = src`` for 1-D contiguous arrays of one size, one float16 and the other float32."""
    if dst.dtype == _F32 and _TINY * _2_112 != 0:    # no flush-to-zero mode on this thread: see _widen
        _widen(dst, src)
        return
    # ml_dtypes' loop is faster on data without zeros; with many (relu's) it mispredicts on each: a sample decides
    sample = src[::_SAMPLE_STEP]
    if np.count_nonzero(sample) > sample.shape[0] - (sample.shape[0] >> 4):
        _exact_narrow(dst, src)
        return
    _narrow_in_chunks(dst, src)


def _narrow_in_chunks(dst, src) -> None:
    """float32 -> float16 through ``_narrow``, chunk by chunk (the temporaries stay in cache), each chunk it
    cannot do and each subnormal result by the exact cast."""
    n = src.shape[0]
    for start in range(0, n, _CHUNK):
        d, x = dst[start:start + _CHUNK], src[start:start + _CHUNK]
        if _narrow(d, x):
            # subnormal results: 0 < |x| < 2**-14 was rounded twice above; the exact cast redoes those few
            small = np.bitwise_and(x.view(np.uint32), _LOW_31)
            np.subtract(small, 1, out=small)           # zero wraps to the top: only 0 < |x| count
            if small.min() < _F16_SMALLEST_NORMAL - 1:
                _exact_narrow(d, x, where=small < _F16_SMALLEST_NORMAL - 1)
        else:
            _exact_narrow(d, x)


_CHUNK = 1 << 16
_SAMPLE_STEP = 61      # not a power of two: no alignment with the data's rows


def _exact_narrow(dst, src, where=None) -> None:
    """float32 -> float16 through ml_dtypes' complex32 cast (NumPy for NaNs and an odd last element)."""
    if where is not None:     # a few elements: NumPy's masked cast would convert them all
        at = np.flatnonzero(where)
        dst[at] = src[at].astype(_F16)
        return
    n = src.shape[0]
    even = n - (n & 1)
    if even:
        np.copyto(dst[:even].view(_PAIR[dst.dtype]), src[:even].view(_PAIR[src.dtype]), casting="unsafe")
    if n & 1:
        np.copyto(dst[even:], src[even:], casting="unsafe")
    if dst.dtype == _F16:
        nan = np.isnan(src)   # ml_dtypes writes one quiet NaN where NumPy keeps the payload's top bits
        if nan.any():
            np.copyto(dst, src, casting="unsafe", where=nan)


_2_112 = np.float32(2.0 ** 112)
_TINY = np.float32(2.0 ** -149)
_SIGN_AND_LOW_28 = np.int32(-0x70000001)   # 0x8FFFFFFF


def _widen(dst, src) -> None:
    """float16 -> float32 without a branch per element: the float16 bits, sign-extended and shifted into place,
    are a float32 exactly 2**112 times too small (subnormal halves are subnormal floats there), so one exact
    multiplication finishes them. Converting loops branch on zero (ml_dtypes' and NumPy's alike), which costs a
    misprediction per element on data like relu's, half zeros: this runs at one speed, several times theirs.
    Infinities and NaNs come out finite, 2**16 and up: NumPy converts those few. A thread in flush-to-zero
    mode would lose the subnormals: the caller checks that first."""
    bits = dst.view(np.int32)
    np.copyto(bits, src.view(np.int16))          # sign-extended: bits 15 and up are the sign
    np.left_shift(bits, 13, out=bits)
    np.bitwise_and(bits, _SIGN_AND_LOW_28, out=bits)
    np.multiply(dst, _2_112, out=dst)
    if dst.max() >= 65536 or dst.min() <= -65536:
        at = np.flatnonzero(np.abs(dst) >= 65536)
        dst[at] = src[at].astype(_F32)


_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
_2_M112 = np.float32(2.0 ** -112)
_LOW_31 = np.uint32(0x7FFFFFFF)
_SIGN = np.uint32(0x80000000)
_F16_SMALLEST_NORMAL, _F32_OF_65536 = np.uint32(113 << 23), np.uint32(143 << 23)   # magnitudes as bits


def _narrow(dst, src) -> bool:
    """float32 -> float16 without a branch per element; False (nothing written) past float16's range.

    ``|x| * 2**-112`` is exact for zero and float16's normal range; its bits shifted left by 3, the sign put
    back, hold the float16 bits in their top 16 with the 13 bits to round below them, so ml_dtypes' bfloat16
    cast (round-to-nearest-even on the low 16 bits, branch-free but for NaN) rounds them as float16 does,
    carries into the exponent included (up to infinity from 65520). Subnormal halves (rounded twice here) are
    redone by the caller's exact cast; magnitudes from 65536, infinities and NaNs return False.
    """
    u = src.view(np.uint32)
    mag = np.bitwise_and(u, _LOW_31)
    if mag.max() >= _F32_OF_65536:
        return False
    scaled = mag.view(np.float32)
    np.multiply(scaled, _2_M112, out=scaled)
    np.left_shift(mag, 3, out=mag)
    np.bitwise_or(mag, np.bitwise_and(u, _SIGN), out=mag)
    np.copyto(dst.view(_BFLOAT16), scaled, casting="unsafe")
    return True


def astype(a, dtype):
    """``a.astype(dtype)`` (order "K") for a C- or F-contiguous float16/float32 NumPy array; None otherwise."""
    if a.__class__ is not _ndarray or a.size < MIN_SIZE:
        return None
    dt = np.dtype(dtype)
    if not _pairs(a.dtype, dt):
        return None
    if a.flags.c_contiguous:
        out = np.empty(a.shape, dt)
        _copy_flat(out.reshape(-1), a.reshape(-1))
    elif a.flags.f_contiguous:   # a transposed matrix: the result keeps its layout, as order "K" does
        out = np.empty(a.shape, dt, order="F")
        _copy_flat(out.T.reshape(-1), a.T.reshape(-1))
    else:
        return None
    return out


def copyto(dst, src, casting) -> bool:
    """``np.copyto(dst, src, casting=casting)`` when both are C-contiguous NumPy arrays of one shape, one
    float16 and the other float32, and ``casting`` allows it; False (nothing written) otherwise."""
    if (src.__class__ is not _ndarray or dst.__class__ is not _ndarray or dst.size < MIN_SIZE
            or casting not in _CASTINGS or not _pairs(src.dtype, dst.dtype) or src.shape != dst.shape
            or not (src.flags.c_contiguous and dst.flags.c_contiguous and dst.flags.writeable)):
        return False
    if np.may_share_memory(dst, src):
        return False
    _copy_flat(dst.reshape(-1), src.reshape(-1))
    return True
