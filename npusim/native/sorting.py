"""Tensor-level kernels: sorting, top-k and uniqueness (sort / argsort / topk / unique*).

Argument checks and error messages follow torch; the array work lives in ``npusim.kernels.sorting``.
"""
from __future__ import annotations

import numpy as np

from ..core.tensor import _wrap_dim
from ..kernels import sorting as KO
from ..kernels.array_api import namespace_of
from . import common as C

_INT64 = np.dtype(np.int64)


def _write_pair(values, indices, v, i, dev):
    C.exact_out(values, v.shape, v.dtype, dev)
    C.exact_out(indices, i.shape, _INT64, dev)
    C.write_out(values, v)
    C.write_out(indices, i)
    return values, indices


# --- sort, argsort, topk ---------------------------------------------------------------------------------

def _sort_arrays(self, dim, descending):
    a = self._a
    return KO.sort(a, _wrap_dim(dim, a.ndim), bool(descending))


def sort(self, dim=-1, descending=False):
    v, i = _sort_arrays(self, dim, descending)
    dev = self._device
    return C.make(v, dev), C.make(i, dev)


def sort_stable(self, *, stable=None, dim=-1, descending=False):
    # torch's CPU sort is always stable, so ``stable`` changes nothing
    return sort(self, dim, descending)


def sort_values(self, dim=-1, descending=False, *, values, indices):
    v, i = _sort_arrays(self, dim, descending)
    return _write_pair(values, indices, v, i, self._device)


def sort_values_stable(self, *, stable=None, dim=-1, descending=False, values, indices):
    return sort_values(self, dim, descending, values=values, indices=indices)


def argsort(self, dim=-1, descending=False):
    a = self._a
    return C.make(KO.sort_indices(a, _wrap_dim(dim, a.ndim), bool(descending)), self._device)


def argsort_stable(self, *, stable, dim=-1, descending=False):
    return argsort(self, dim, descending)


def _topk_arrays(self, k, dim, largest, sorted_):
    a = self._a
    k = C.int_arg(k, "topk", "k", 2)
    axis = _wrap_dim(dim, a.ndim)
    if not 0 <= k <= (a.shape[axis] if a.ndim else 1):
        raise RuntimeError("selected index k out of range")
    if a.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    return KO.topk(a, k, axis, bool(largest), bool(sorted_))


def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - the schema's name
    v, i = _topk_arrays(self, k, dim, largest, sorted)
    dev = self._device
    return C.make(v, dev), C.make(i, dev)


def topk_values(self, k, dim=-1, largest=True, sorted=True, *, values, indices):  # noqa: A002
    v, i = _topk_arrays(self, k, dim, largest, sorted)
    return _write_pair(values, indices, v, i, self._device)


# --- unique ----------------------------------------------------------------------------------------------

def _empty_index(a):
    return namespace_of(a).empty((0,), _INT64)


def _unique2(self, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    # torch's CPU kernel sorts whatever ``sorted`` says
    a = self._a
    v, inv, cnt = KO.unique(a, bool(return_inverse), bool(return_counts))
    dev = self._device
    return (C.make(v, dev), C.make(inv if inv is not None else _empty_index(a), dev),
            C.make(cnt if cnt is not None else _empty_index(a), dev))


def _unique_dim_check(a, dim):
    axis = C.sized_dim(dim, a.ndim)
    if a.size == 0:
        if a.shape[axis] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        if a.shape.count(0) > 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
    return axis


def _along(self, dim, consecutive):
    # inverse and counts are always computed along a dim, as torch does
    a = self._a
    v, inv, cnt = KO.unique_along(a, _unique_dim_check(a, dim), consecutive)
    dev = self._device
    return C.make(v, dev), C.make(inv, dev), C.make(cnt, dev)


def unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    return _along(self, dim, False)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    a = self._a
    if dim is not None and not (a.ndim == 1 and dim == 0):  # torch takes the flat path for dim 0 of 1-d
        return _along(self, dim, True)
    v, inv, cnt = KO.unique_consecutive(a)
    dev = self._device
    return (C.make(v, dev), C.make(inv if return_inverse else _empty_index(a), dev),
            C.make(cnt if return_counts else _empty_index(a), dev))


KERNELS = {
    "sort": sort, "sort.stable": sort_stable, "sort.values": sort_values,
    "sort.values_stable": sort_values_stable, "argsort": argsort, "argsort.stable": argsort_stable,
    "topk": topk, "topk.values": topk_values,
    "_unique2": _unique2, "unique_dim": unique_dim, "unique_consecutive": unique_consecutive,
}
