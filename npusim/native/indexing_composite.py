"""Indexing ops that decompose into other dispatched ops.

index_add / index_copy / index_fill / masked_scatter / put go through index_put, take and
take_along_dim through gather. As torch's CompositeImplicitAutograd kernels, autograd differentiates
the parts.
"""
from __future__ import annotations

import builtins
import math

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim
from ..kernels import device_checks as DC
from . import common as C

_INDEX_DTYPES = (D.int32, D.int64)


def _along(dim, index):
    """index_put's index list addressing ``index`` along ``dim`` and everything elsewhere."""
    return [None] * dim + [index]


def _index_vector_checks(self, dim, index, source, op):
    d = _wrap_dim(dim, self.dim())
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: {C.tname(index.dtype)}")
    if index.dim() > 1 and op == "index_fill_":
        raise RuntimeError("Index has to be a vector/scalar")
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{C.tname(index.dtype)} and size: {list(index.shape)}")
    if source is not None and source.dim() and index.numel() != source.shape[_wrap_dim(d, source.dim())]:
        if op == "index_add_":
            raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal to "
                               f"source.size(dim): ({source.shape[d]}), for dim: {d}")
        raise IndexError(f"{op}(): Number of indices ({index.numel()}) should be equal to source.size(dim) "
                         f"({source.shape[d]})")
    size = self.shape[d] if self.dim() else 1
    # on a GPU, index_put checks the indices on the device and reports later (kernels/device_checks.py)
    if index.numel() and not DC.deferred(index._a) and (int(aten.amin.default(index).item()) < -size or
                          int(aten.amax.default(index).item()) >= size):
        bad = aten.masked_select.default(index, aten.logical_or.default(aten.lt.Scalar(index, -size),
                                                                         aten.ge.Scalar(index, size)))
        if op == "index_fill_":
            raise IndexError(f"index {int(bad[0].item())} is out of bounds for dimension {d} with size {size}")
        if op == "index_add_" and self.dim() > 1:   # torch's 1-D kernel says "index out of range in self"
            raise RuntimeError(f"index {int(bad[0].item())} is out of bounds for dimension {d} with size {size}")
        raise IndexError("index out of range in self")
    return d


def _flat_index(self, index):
    """index_put's indices for a 0-dim self (which index_put cannot address along a dim)."""
    return [aten.zeros_like.default(index)] if self.dim() == 0 else None


def _index_add_args(self, dim, index, source, alpha):
    if source.dtype != self.dtype:
        raise RuntimeError(f"index_add_(): self ({C.tname(self.dtype)}) and source ({C.tname(source.dtype)}) "
                           f"must have the same scalar type")
    d = _wrap_dim(dim, self.dim())
    if source.dim() and d >= source.dim():
        raise RuntimeError(f"index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim "
                           f"{source.dim()}")
    if self.dim() != source.dim() or builtins.any(
            i != d and a != b for i, (a, b) in enumerate(zip(self.shape, source.shape))):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    if index.dim() == 0:   # a 0-d index is one index
        index = aten.reshape.default(index, [1])
    d = _index_vector_checks(self, dim, index, source, "index_add_")
    values = source if alpha == 1 else aten.mul.Scalar(source, alpha)
    if self.dim() == 0:
        return [aten.zeros_like.default(aten.reshape.default(index, [-1]))], aten.reshape.default(values, [-1])
    return _along(d, index), values


def index_add(self, dim, index, source, *, alpha=1):
    indices, values = _index_add_args(self, dim, index, source, alpha)
    target = self if self.dim() else aten.reshape.default(self, [1])
    r = aten.index_put.default(target, indices, values, True)
    return r if self.dim() else aten.reshape.default(r, [])


def index_add_(self, dim, index, source, *, alpha=1):
    indices, values = _index_add_args(self, dim, index, source, alpha)
    target = self if self.dim() else aten.reshape.default(self, [1])
    aten.index_put_.default(target, indices, values, True)
    return self


def _index_copy_args(self, dim, index, source):
    """index_put's indices and values for index_copy, after torch's checks in torch's order."""
    d = _wrap_dim(dim, self.dim())
    if index.dim() > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.dim()})")
    n = index.numel()
    if source.dim() == 0 and n != 1:
        raise IndexError(f"index_copy_(): When source is scalar, index should have one element (got {n})")
    if source.dim() and self.dim() and source.dim() != self.dim():
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source.dim()}), destination dimensionality ({self.dim()})")
    if index.dtype != D.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {C.tname(index.dtype)}")
    if source.dtype != self.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{C.tname(self.dtype)} and (source) {C.tname(source.dtype)}")
    self_slice = [s for i, s in enumerate(self.shape) if i != d]
    source_slice = [s for i, s in enumerate(source.shape) if i != d]
    if self_slice != source_slice:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                           f"shape: {' '.join(map(str, self_slice))} at dimension {d} and source slice shape: "
                           f"{' '.join(map(str, source_slice))} at dimension 0.")
    if source.dim() and n != source.shape[d]:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) "
                         f"({source.shape[d]})")
    index = aten.reshape.default(index, [-1])
    if self.numel() == 0 and n:
        # torch's kernel restrides self to the index's length along dim: past an empty storage that is an error,
        # and with no element to write nothing (no index) is checked
        sizes = [n if i == d else k for i, k in enumerate(self.shape)]
        if math.prod(sizes):
            raise RuntimeError(f"index_copy_(): self has no element to copy into: setStorage: sizes {sizes} "
                               f"requiring a storage size of {math.prod(sizes) * self.element_size()} are out of "
                               f"bounds for storage of size 0")
        return None, None
    size = self.shape[d] if self.dim() else 1
    # torch takes no negative index; on a GPU the indices are checked on the device (kernels/device_checks.py)
    if n and DC.deferred(index._a):
        empty = IndexError(f"index_copy_(): index is out of bounds for dimension {d} with size {size}")
        index = C.make(DC.clamp(index._a, 0, size, DC.INDEX_COPY, empty), index._device)
    elif n:
        bad = aten.masked_select.default(index, aten.logical_or.default(aten.lt.Scalar(index, 0),
                                                                         aten.ge.Scalar(index, size)))
        if bad.numel():
            raise IndexError(f"index_copy_(): index {int(bad[0].item())} is out of bounds for dimension {d} with "
                             f"size {size}")
    values = aten.reshape.default(source, [-1]) if self.dim() <= 1 else source
    return _along(d, index), values


def _as_1d(self):
    """index_put cannot address a 0-d tensor along a dim: a 1-element view of it can be."""
    return self if self.dim() else aten.reshape.default(self, [1])


def index_copy(self, dim, index, source):
    indices, values = _index_copy_args(self, dim, index, source)
    if indices is None:
        return aten.clone.default(self)
    r = aten.index_put.default(_as_1d(self), indices, values)
    return r if self.dim() else aten.reshape.default(r, [])


def index_copy_(self, dim, index, source):
    indices, values = _index_copy_args(self, dim, index, source)
    if indices is None:
        self._bump_version()   # an in-place call counts as a write, as torch's
        return self
    aten.index_put_.default(_as_1d(self), indices, values)
    return self


def _fill_value(self, value):
    if hasattr(value, "dim"):
        if value.dim() != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        return aten._to_copy.default(value, dtype=self.dtype) if value.dtype != self.dtype else value
    return aten.full.default([], value, dtype=self.dtype, device=self.device)


def _index_fill_indices(self, dim, index):
    indices = _along(_index_vector_checks(self, dim, index, None, "index_fill_"), index)
    return indices if self.dim() else [aten.reshape.default(index, [-1])]   # a 0-d self is filled as 1 element


def index_fill(self, dim, index, value):
    value = _fill_value(self, value)   # torch checks the value first
    indices = _index_fill_indices(self, dim, index)
    r = aten.index_put.default(_as_1d(self), indices, value)
    return r if self.dim() else aten.reshape.default(r, [])


def index_fill_(self, dim, index, value):
    value = _fill_value(self, value)
    aten.index_put_.default(_as_1d(self), _index_fill_indices(self, dim, index), value)
    return self


# --- masked_scatter, take, put -----------------------------------------------------------------------

def _masked_source(mask, source, self_dtype, shape):
    if mask.dtype != D.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{C.tname(mask.dtype)}")
    if source.dtype != self_dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{C.tname(self_dtype)} and {C.tname(source.dtype)}")
    n = int(aten.sum.default(aten.expand.default(mask, shape)).item())
    if source.numel() < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return aten.narrow.default(aten.reshape.default(source, [-1]), 0, 0, n)


def _full_mask(mask, shape):
    # a materialised mask: index_put reads a broadcast one's repeated elements once
    return aten.clone.default(aten.expand.default(mask, shape)) if list(mask.shape) != shape else mask


def masked_scatter(self, mask, source):
    shape = list(C.broadcast_shapes(tuple(self.shape), tuple(mask.shape)))
    values = _masked_source(mask, source, self.dtype, shape)
    if not shape:   # index_put cannot take a mask on a 0-d tensor: scatter into a 1-element copy
        r = aten.index_put.default(aten.reshape.default(self, [1]), [aten.reshape.default(mask, [1])], values)
        return aten.reshape.default(r, [])
    base = aten.expand.default(self, shape) if list(self.shape) != shape else self
    return aten.index_put.default(base, [_full_mask(mask, shape)], values)


def masked_scatter_(self, mask, source):
    values = _masked_source(mask, source, self.dtype, list(self.shape))
    if self.dim() == 0:   # index_put cannot take a mask on a 0-d tensor: write through a 1-element view
        aten.index_put_.default(aten.reshape.default(self, [1]), [aten.reshape.default(mask, [1])], values)
        return self
    aten.index_put_.default(self, [_full_mask(mask, list(self.shape))], values)
    return self


def _checked_flat_index(self, index, op):
    if index.dtype != D.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got {C.tname(index.dtype)}")
    n = self.numel()
    if index.numel():
        low, high = int(aten.amin.default(index).item()), int(aten.amax.default(index).item())
        if low < -n or high >= n:
            bad = low if low < -n else high
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return aten.remainder.Scalar(aten.reshape.default(index, [-1]), n) if n else aten.reshape.default(index, [-1])


def take(self, index):
    flat_index = _checked_flat_index(self, index, "take")
    picked = aten.index_select.default(aten.reshape.default(self, [-1]), 0, flat_index)
    return aten.reshape.default(picked, list(index.shape))


def _put_indices(self, index, source):
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    flat_index = _checked_flat_index(self, index, "put_")
    # one coordinate tensor per dim, so any strides of self are written in place
    coords = []
    for size in reversed(self.shape):
        coords.append(aten.remainder.Scalar(flat_index, size))
        flat_index = aten.floor_divide.Scalar(flat_index, size)
    return coords[::-1], aten.reshape.default(source, [-1])


def put_(self, index, source, accumulate=False):
    if self.dim() == 0:
        target = aten.reshape.default(self, [1])
        coords, values = _put_indices(target, index, source)
        aten.index_put_.default(target, coords, values, accumulate)
        return self
    coords, values = _put_indices(self, index, source)
    aten.index_put_.default(self, coords, values, accumulate)
    return self


def put(self, index, source, accumulate=False):
    return put_(aten.clone.default(self), index, source, accumulate)


def take_along_dim(self, indices, dim=None):
    if indices.dtype != D.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{C.tname(indices.dtype)}")
    if dim is None:
        return aten.gather.default(aten.reshape.default(self, [-1]), 0, aten.reshape.default(indices, [-1]))
    if self.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {self.dim()} dimensions for input, and {indices.dim()} dimensions for indices")
    d = _wrap_dim(dim, self.dim())
    self_sizes = list(self.shape)
    self_sizes[d] = indices.shape[d]
    index_shape = list(C.broadcast_shapes(tuple(self_sizes), tuple(indices.shape)))
    index_sizes = list(indices.shape)
    index_sizes[d] = self.shape[d]
    self_shape = list(C.broadcast_shapes(tuple(index_sizes), tuple(self.shape)))
    return aten.gather.default(aten.expand.default(self, self_shape), d, aten.expand.default(indices, index_shape))


COMPOSITE_IMPLICIT = {
    "index_add": index_add, "index_add_": index_add_, "index_copy": index_copy, "index_copy_": index_copy_,
    "index_fill.int_Tensor": index_fill, "index_fill.int_Scalar": index_fill,
    "index_fill_.int_Tensor": index_fill_, "index_fill_.int_Scalar": index_fill_,
    "masked_scatter": masked_scatter, "masked_scatter_": masked_scatter_, "take": take,
    "take_along_dim": take_along_dim, "put": put, "put_": put_,
}
