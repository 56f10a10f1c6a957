"""c10's checked conversion of a Python number written into a tensor.

fill_, full, masked_fill, index_fill, setitem, clamp's bounds and the like take a
Python (or NumPy) number and store it in the tensor's dtype; torch refuses the
values that dtype cannot hold, with one message.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .float8_rounding import to_float8

_BF16 = np.dtype(ml_dtypes.bfloat16)
_COMPLEX32 = np.dtype([("real", np.float16), ("imag", np.float16)])   # core/c10/dtype.py's complex32
_COMPLEX32_SET = frozenset({_COMPLEX32})   # membership: no costly dtype ==
_HALF = np.dtype(np.float16)

# the C++ type names c10 prints in its overflow message
C10_NAME = {
    np.dtype(np.bool_): "bool", np.dtype(np.uint8): "uint8_t", np.dtype(np.int8): "int8_t",
    np.dtype(np.int16): "int16_t", np.dtype(np.int32): "int", np.dtype(np.int64): "int64_t", _HALF: "c10::Half",
    _BF16: "c10::BFloat16", np.dtype(np.float32): "float", np.dtype(np.float64): "double",
}
C10_NAME.update({np.dtype(np.complex64): "c10::complex<float>", np.dtype(np.complex128): "c10::complex<double>"})
_INT_LIMITS = {np.dtype(t): (int(np.iinfo(t).min), int(np.iinfo(t).max))
               for t in (np.uint8, np.int8, np.int16, np.int32, np.int64)}
# the largest finite value of the floating dtypes a Python float can exceed
_FLOAT_MAX = {dt: float(ml_dtypes.finfo(dt).max) for dt in (_HALF, _BF16, np.dtype(np.float32))}
# the float8 dtypes (limited_dtypes): c10 takes lowest..max (float8_e8m0fnu's lowest is 2**-127: no zero, no sign),
# and an infinity only where the type has one (float8_e5m2)
_FLOAT8 = {np.dtype(getattr(ml_dtypes, n)): n for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                                        "float8_e5m2fnuz", "float8_e8m0fnu")}
_FLOAT8_RANGE = {dt: (float(ml_dtypes.finfo(dt).min), float(ml_dtypes.finfo(dt).max), n == "float8_e5m2")
                 for dt, n in _FLOAT8.items()}
C10_NAME.update({dt: "c10::F" + n[1:] for dt, n in _FLOAT8.items()})


def overflow(np_dt):
    raise RuntimeError(f"value cannot be converted to type {C10_NAME[np_dt]} without overflow")


def checked_scalar(value, np_dt, *, check_reduced_float=True):
    """``value`` (a Python or NumPy number) as a scalar of ``np_dt``, refusing what c10 refuses.

    A Python int must fit in int64 or uint64 (as torch parses it); integers must then fit the
    target (an unsigned target also takes negatives down to -max, which wrap); floats going to
    an integer type must lie within its range (no NaN); floats going to a floating type must be
    finite-in-range, inf or NaN. Bool targets take anything. Setitem skips the range check for
    float16 / bfloat16 targets (``check_reduced_float=False``), as torch does there.
    """
    if isinstance(value, np.generic):
        value = value.item()   # NumPy scalars convert like the Python numbers they hold
    kind = np_dt.kind
    if kind == "c" or np_dt in _COMPLEX32_SET:
        # a complex target (complex32, a pair of float16, takes a complex64 value for its writers to split)
        return (np.complex64 if np_dt in _COMPLEX32_SET else np_dt.type)(complex(value))
    if value.__class__ is complex:
        if kind == "b":
            return np_dt.type(bool(value))
        if value.imag != 0:
            overflow(np_dt)
        value = value.real   # c10 takes a complex number with no imaginary part as its real part
    if value.__class__ is bool:
        return np_dt.type(value if kind == "b" else int(value))
    if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 64:
        raise OverflowError("can't convert negative int to unsigned" if value < 0 else "int too big to convert")
    if kind == "b":
        return np_dt.type(bool(value))
    limits = _INT_LIMITS.get(np_dt)
    if limits is not None:
        low, high = limits
        if isinstance(value, int):
            if value > high or (value < low and not (kind == "u" and -value <= high)):
                overflow(np_dt)
            # a negative value wraps into an unsigned type (two's complement)
            return np.array(value).astype(np_dt)[()] if value < 0 and kind == "u" else np_dt.type(value)
        f = float(value)
        if f != f or f < low or f > high:
            overflow(np_dt)
        return np_dt.type(int(f))
    f = float(value)
    float8 = _FLOAT8_RANGE.get(np_dt)
    if float8 is not None:
        low, high, has_inf = float8
        if (not has_inf if math.isinf(f) else not (f != f or low <= f <= high)):
            overflow(np_dt)
        return to_float8(f, np_dt)[()]
    high = _FLOAT_MAX.get(np_dt)
    if high is not None and abs(f) > high and math.isfinite(f):
        if check_reduced_float or np_dt not in (_HALF, _BF16):
            overflow(np_dt)
        with np.errstate(over="ignore"):   # rounds to inf, as torch does there
            return np_dt.type(f)
    return np_dt.type(f)
