"""Which array module an array belongs to, and small helpers every kernel uses.

Kernels are written once against ``xp`` (NumPy or CuPy). NumPy arrays are
recognised by class identity; anything else is asked through CuPy, which is
only imported when such an array exists.
"""
from __future__ import annotations

import sys
import warnings

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
HALF_TYPES = (np.dtype(np.float16), BFLOAT16)
_F32 = np.dtype(np.float32)
_ndarray = np.ndarray
_generic = np.generic

# Floating-point exceptions are values, not warnings, in torch: silence NumPy's
# RuntimeWarnings raised from kernel code (and only from it).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"npusim\.(kernels|native)(\.|$)")


def namespace_of(a):
    """numpy or cupy, whichever ``a`` belongs to."""
    if a.__class__ is _ndarray or isinstance(a, (_ndarray, _generic)):
        return np
    cp = sys.modules.get("cupy")
    if cp is not None:
        return cp.get_array_module(a)
    return np


def as_array(r):
    """NumPy returns scalars for 0-d results; kernels always hand back arrays."""
    if r.__class__ is _generic or isinstance(r, _generic):
        return np.asarray(r)
    return r


def is_float(dt) -> bool:
    return dt.kind == "f" or dt == BFLOAT16


def is_integral(dt, include_bool=True) -> bool:
    return dt.kind in ("iub" if include_bool else "iu")


def compute_dtype(dt):
    """Dtype to compute transcendental math in: 16-bit floats go through float32 (torch's opmath)."""
    return np.dtype(np.float32) if dt in HALF_TYPES else dt


def opmath(a):
    """The array to compute on: 16-bit floats widen to float32 (torch's opmath)."""
    return a.astype(_F32) if a.dtype in HALF_TYPES else a


def cast_like(r, like):
    """``r`` as an array of ``like``'s dtype (the result of a computation done in opmath)."""
    r = as_array(r)
    return r if r.dtype == like.dtype else r.astype(like.dtype)


def to_host(a):
    """A NumPy array with ``a``'s data (a copy off the GPU)."""
    if a.__class__ is _ndarray:
        return a
    return a.get() if hasattr(a, "get") else np.asarray(a)
