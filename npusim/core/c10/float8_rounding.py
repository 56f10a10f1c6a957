"""Values converted to the float8 dtypes as torch 2.13 converts them (NumPy arrays; float8 lives only there).

ml_dtypes rounds to nearest-even as torch does, with three differences this module removes:
- float8_e4m3fn: torch saturates finite values past its range, and infinities, to +-448; ml_dtypes gives NaN;
- float8_e5m2: torch's NaN is 0x7F (0xFF with the sign); ml_dtypes writes 0x7E;
- float8_e8m0fnu: torch keeps the float32 exponent byte rounded by the mantissa's guard, round and sticky bits
  (a sign is dropped; zero is 2**-127, the byte 0); ml_dtypes gives NaN for zero and negative values.
torch converts every source through float32 (c10's float8 constructors take a float), so these do too.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

_E4M3FN = np.dtype(ml_dtypes.float8_e4m3fn)
_E5M2 = np.dtype(ml_dtypes.float8_e5m2)
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def _e8m0(f):
    bits = f.view(np.uint32)
    exponent = (bits >> 23) & 0xFF
    guard = (bits & 0x400000) != 0
    round_or_sticky = (bits & 0x3FFFFF & ~np.uint32(0x400000)) != 0
    round_up = guard & (round_or_sticky | (exponent > 0))     # past 2**127 rounds up to the NaN byte, as torch
    r = np.where(exponent == 0xFF, exponent, exponent + round_up.astype(np.uint32)).astype(np.uint8)
    return r.view(_E8M0)


def to_float8(values, np_dt):
    """``values`` (an array or a number) as an array of the float8 dtype ``np_dt``, rounded as torch rounds."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.asarray(values).astype(np.float32)
        if np_dt == _E8M0:
            return _e8m0(f)
        r = f.astype(np_dt)
    if np_dt == _E4M3FN:
        past = np.abs(f) > 448       # NaN compares false: it stays NaN
        if past.any():
            r = np.where(past, np.copysign(np.float32(448), f).astype(np_dt), r)
    elif np_dt == _E5M2:
        nan = np.isnan(f)
        if nan.any():
            bits = np.where(nan, np.uint8(0x7F) | (np.signbit(f).astype(np.uint8) << 7), r.view(np.uint8))
            r = bits.astype(np.uint8).view(_E5M2)
    return r
