"""Tensor-level kernels of the scans: cummax / cummin and logcumsumexp.

The array work lives in ``npusim.kernels.scans``; here are torch's argument
checks and result wrapping, the same for every device.
"""
from __future__ import annotations

from ..core.tensor import _wrap_dim
from ..kernels import scans as KS
from . import common as C


def _cumulative_extreme(self, dim, largest):
    a = self._a
    if a.ndim == 0 and dim not in (-1, 0):
        name = "cummax" if largest else "cummin"
        raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
    # torch wraps the dim only when there is an element to scan: any dim of an empty tensor is taken
    axis = 0 if a.size == 0 else _wrap_dim(dim, a.ndim)
    values, indices = KS.cumulative_extreme(a, axis, largest)
    dev = self._device
    return C.make(values, dev), C.make(indices, dev)


def cummax(self, dim):
    return _cumulative_extreme(self, dim, True)


def cummin(self, dim):
    return _cumulative_extreme(self, dim, False)


def logcumsumexp(self, dim):
    a = self._a
    axis = _wrap_dim(dim, a.ndim)
    if not C.is_float(a.dtype):
        C.not_implemented("logcumsumexp_out_cpu", a.dtype)
    return C.make(KS.logcumsumexp(a, axis), self._device)


KERNELS = {"cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp}
