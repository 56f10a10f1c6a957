"""Array kernels for complex numbers: casts, writes and the views of their parts (NumPy or CuPy arrays).

NumPy has no complex32: npusim stores it as a structured pair of float16 (fields ``real`` and ``imag``), so
its parts are strided float16 views, as torch's are. Arithmetic on complex32 widens to complex64 first.
"""
from __future__ import annotations

import numpy as np

from .array_api import namespace_of

COMPLEX32 = np.dtype([("real", np.float16), ("imag", np.float16)])
COMPLEX32_SET = frozenset({COMPLEX32})   # membership: no costly dtype ==
COMPLEX64 = np.dtype(np.complex64)
DISCARDS_IMAGINARY = "Casting complex values to real discards the imaginary part"


def is_complex(dt) -> bool:
    return dt.kind == "c" or dt in COMPLEX32_SET


def is_complex32(dt) -> bool:
    return dt in COMPLEX32_SET


def real_part(a):
    """A view of the real parts of complex ``a`` (the array itself when it is real)."""
    return a["real"] if a.dtype in COMPLEX32_SET else a.real


def imag_part(a):
    """A view of the imaginary parts of complex ``a``."""
    return a["imag"] if a.dtype in COMPLEX32_SET else a.imag


def widen(a):
    """complex32 ``a`` as a new complex64 array; any other array unchanged."""
    if a.dtype not in COMPLEX32_SET:
        return a
    xp = namespace_of(a)
    r = xp.empty(a.shape, COMPLEX64)
    r.real = a["real"]
    r.imag = a["imag"]
    return r


def discards_imaginary(src_dt, dst_dt) -> bool:
    """Whether writing ``src_dt`` values into ``dst_dt`` drops imaginary parts (torch warns then)."""
    return is_complex(src_dt) and not is_complex(dst_dt)


def write(dst, src) -> None:
    """``dst[...] = src`` with torch's casts: into complex32 part by part, from complex to real keeping the real
    part (the caller warns, see ``discards_imaginary``). ``src`` is an array or a scalar, broadcast to ``dst``."""
    xp = namespace_of(dst)
    src_dt = getattr(src, "dtype", None)
    if src_dt is None:
        src_dt = np.asarray(src).dtype   # a Python number: its dtype only (CuPy takes the number itself)
    if src_dt in COMPLEX32_SET:
        src = widen(src)
        src_dt = src.dtype
    if dst.dtype in COMPLEX32_SET:
        if src_dt.kind == "c":
            xp.copyto(dst["real"], src.real, casting="unsafe")
            xp.copyto(dst["imag"], src.imag, casting="unsafe")
        else:
            xp.copyto(dst["real"], src, casting="unsafe")
            dst["imag"] = 0
        return
    if src_dt.kind == "c" and dst.dtype.kind != "c":
        src = src.real
    xp.copyto(dst, src, casting="unsafe")


def cast(a, np_dt):
    """A new array of ``a`` in dtype ``np_dt``, with ``write``'s rules for complex."""
    xp = namespace_of(a)
    r = xp.empty(a.shape, np_dt)
    write(r, a)
    return r


def view_as_real(a, strided_view):
    """``a`` (complex) as a real view with a trailing dimension of 2 (real, imaginary)."""
    re = real_part(a)
    half = re.itemsize
    return strided_view(re, a.shape + (2,), re.strides + (half,))


def ones(xp, shape, np_dt):
    r = xp.zeros(shape, np_dt)
    real_part(r)[...] = 1
    return r


def full(xp, shape, value, np_dt):
    r = xp.empty(shape, np_dt)
    write(r, value)
    return r


def conj(a):
    """A new array: the complex conjugate of ``a``."""
    if a.dtype in COMPLEX32_SET:
        r = a.copy()
        r["imag"] = -a["imag"]
        return r
    return namespace_of(a).conj(a)


def normal(xp, draw, shape, np_dt):
    """Complex normal samples as torch draws them: real and imaginary parts each N(0, 1/2), from ``draw(shape)``
    giving standard normal float arrays of the parts' dtype."""
    parts = draw(shape + (2,)) * np.sqrt(0.5)
    return from_parts(xp, parts, np_dt)


def from_parts(xp, parts, np_dt):
    """A complex array of ``np_dt`` from a real array whose last dimension holds (real, imaginary)."""
    r = xp.empty(parts.shape[:-1], np_dt)
    real_part(r)[...] = parts[..., 0]
    imag_part(r)[...] = parts[..., 1]
    return r


def sgn(a, out=None):
    """torch.sgn of a complex array: z / |z|, and 0 where z is 0."""
    xp = namespace_of(a)
    mag = xp.abs(a)
    r = xp.where(mag == 0, xp.zeros((), a.dtype), a / xp.where(mag == 0, xp.ones((), mag.dtype), mag))
    r = r.astype(a.dtype, copy=False)
    if out is not None:
        out[...] = r
        return out
    return r


def sigmoid(a, out=None):
    """1 / (1 + exp(-z)) of a complex array (torch's formula; no overflow guard exists for complex)."""
    xp = namespace_of(a)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        r = (1 / (1 + xp.exp(-a))).astype(a.dtype, copy=False)
    if out is not None:
        out[...] = r
        return out
    return r
