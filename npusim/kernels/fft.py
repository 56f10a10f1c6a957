"""The three discrete Fourier transforms ATen builds every FFT from, over NumPy or CuPy arrays.

``r2c`` (real to complex, optionally one-sided), ``c2r`` (one-sided complex to real) and ``c2c``
transform the axes ``dims`` of an array with ``xp.fft`` (NumPy's pocketfft, or cuFFT through
``cupy.fft``). ``normalization`` is ATen's ``fft_norm_mode``: 0 leaves the sum unscaled, 1 scales it
by 1/sqrt(n) and 2 by 1/n, n the product of the signal sizes (the output's for ``c2r``). Callers
check shapes and dtypes; results have torch's dtypes (complex of the input's precision, and the
real precision of a complex input for ``c2r``).
"""
from __future__ import annotations

import numpy as np

from .array_api import namespace_of

NONE, BY_ROOT_N, BY_N = 0, 1, 2
# numpy.fft's norm word for each mode, for a forward and for an inverse transform: "backward" leaves the
# forward transform unscaled, "forward" leaves the inverse unscaled
_FORWARD_WORD = {NONE: "backward", BY_ROOT_N: "ortho", BY_N: "forward"}
_INVERSE_WORD = {NONE: "forward", BY_ROOT_N: "ortho", BY_N: "backward"}


def complex_dtype(real_dtype) -> np.dtype:
    """complex64 for float32 (and narrower), complex128 for float64."""
    return np.dtype(np.complex128 if np.dtype(real_dtype) == np.float64 else np.complex64)


def real_dtype(cdtype) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(cdtype) == np.complex128 else np.float32)


def r2c(a, dims, normalization, onesided):
    """The DFT of real ``a`` over ``dims``; with ``onesided`` the last of ``dims`` keeps n // 2 + 1 entries."""
    xp = namespace_of(a)
    dims = tuple(dims)
    dt = complex_dtype(a.dtype)
    out_shape = list(a.shape)
    if onesided:
        out_shape[dims[-1]] = a.shape[dims[-1]] // 2 + 1
    if a.size == 0:
        return xp.zeros(tuple(out_shape), dt)   # NumPy's and cuFFT's plans refuse a zero-length batch
    word = _FORWARD_WORD[normalization]
    if onesided:
        r = xp.fft.rfftn(a, axes=dims, norm=word)
    else:
        r = xp.fft.fftn(a, axes=dims, norm=word)
    return xp.ascontiguousarray(r.astype(dt, copy=False))


def c2r(a, dims, normalization, last_dim_size):
    """The real inverse DFT of the one-sided spectrum ``a`` over ``dims``; the last of ``dims`` comes out with
    ``last_dim_size`` entries (the imaginary parts the one-sided form leaves undetermined are ignored)."""
    xp = namespace_of(a)
    dims = tuple(dims)
    dt = real_dtype(a.dtype)
    out_shape = list(a.shape)
    out_shape[dims[-1]] = last_dim_size
    if a.size == 0:
        return xp.zeros(tuple(out_shape), dt)   # NumPy's and cuFFT's plans refuse a zero-length batch
    sizes = [a.shape[d] for d in dims[:-1]] + [last_dim_size]
    r = xp.fft.irfftn(a, s=sizes, axes=dims, norm=_INVERSE_WORD[normalization])
    return xp.ascontiguousarray(r.astype(dt, copy=False))


def c2c(a, dims, normalization, forward):
    """The DFT (``forward``) or the unscaled-sign inverse DFT of complex ``a`` over ``dims``."""
    xp = namespace_of(a)
    dims = tuple(dims)
    dt = np.dtype(a.dtype)
    if a.size == 0 or not dims:
        return xp.array(a, dtype=dt, copy=True)
    if forward:
        r = xp.fft.fftn(a, axes=dims, norm=_FORWARD_WORD[normalization])
    else:
        r = xp.fft.ifftn(a, axes=dims, norm=_INVERSE_WORD[normalization])
    return xp.ascontiguousarray(r.astype(dt, copy=False))
