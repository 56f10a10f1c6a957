"""Kernels of the three FFT primitives every torch.fft function reduces to: _fft_r2c, _fft_c2r, _fft_c2c.

As ATen's, they take wrapped dims, an ``fft_norm_mode`` (0 none, 1 by 1/sqrt(n), 2 by 1/n) and inputs
already promoted by the composites (spectral_composite.py); the array work is
``npusim.kernels.fft`` (numpy.fft, or cuFFT through cupy.fft on a GPU).
"""
from __future__ import annotations

from ..core.tensor import Tensor
from ..kernels import fft as K
from . import common as C


def _dims(dim, ndim):
    return [d % ndim if ndim else d for d in C.int_list(dim)]


def fft_r2c(self: Tensor, dim, normalization, onesided):
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"_fft_r2c expects a real input tensor, but got {C.tname(self.dtype)}")
    return C.make(K.r2c(self._a, _dims(dim, self.dim()), normalization, onesided), self._device)


def fft_c2r(self: Tensor, dim, normalization, last_dim_size):
    if not self.dtype.is_complex:
        raise RuntimeError(f"_fft_c2r expects a complex input tensor, but got {C.tname(self.dtype)}")
    if last_dim_size < 1:
        raise RuntimeError(f"Invalid number of data points ({last_dim_size}) specified")
    return C.make(K.c2r(self._a, _dims(dim, self.dim()), normalization, last_dim_size), self._device)


def fft_c2c(self: Tensor, dim, normalization, forward):
    if not self.dtype.is_complex:
        raise RuntimeError(f"_fft_c2c expects a complex input tensor, but got {C.tname(self.dtype)}")
    return C.make(K.c2c(self._a, _dims(dim, self.dim()), normalization, forward), self._device)


KERNELS = {"_fft_r2c": fft_r2c, "_fft_c2r": fft_c2r, "_fft_c2c": fft_c2c}
