"""Tensor-level kernels: cummax / cummin, logcumsumexp and scatter_reduce.

The array work lives in ``npusim.kernels.scans``; here are torch's argument
checks and result wrapping, the same for every device.
"""
from __future__ import annotations

from ..core.tensor import _wrap_dim
from ..kernels import scans as KS
from . import common as C
from .indexing_ops import _array_for, _scatter_checks, _tensor

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _cumulative_extreme(self, dim, largest):
    a = self._a
    axis = _wrap_dim(dim, a.ndim)
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


def _scatter_reduce_arrays(self, dim, index, src, reduce, include_self):
    index, src = _tensor(index), _tensor(src)
    d = _scatter_checks(self, dim, index, src)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    a = self._a
    return KS.scatter_reduce(a, d, _array_for(index, a), _array_for(src, a), reduce, bool(include_self))


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    r = _scatter_reduce_arrays(self, dim, index, src, reduce, include_self)
    return C.make(r, self._device)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    C.check_writable(self)
    r = _scatter_reduce_arrays(self, dim, index, src, reduce, include_self)
    return C.write_out(self, r)


KERNELS = {
    "cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp,
    "scatter_reduce.two": scatter_reduce, "scatter_reduce_.two": scatter_reduce_,
}
