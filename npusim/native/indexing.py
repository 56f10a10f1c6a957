"""Indexing ops: gather / scatter along a dim, index_select, masked_select,
masked_fill, nonzero, and advanced indexing (``aten::index`` / ``index_put``).

The checks (dtypes, shapes, devices) and their messages follow torch; the
array work is in ``npusim.kernels.indexing``. Integer indices may live on the
cpu while ``self`` lives on another device, as torch allows for ``index``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core.c10.device import CPU
from ..core.c10.user_frames import user_stacklevel
from .common import checked_scalar
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import indexing as K
from ..kernels.array_api import namespace_of
from . import common as C
from .views import _typed_storage_array, strided_view

_INT64 = np.dtype(np.int64)
_INT32 = np.dtype(np.int32)
_BOOL = np.dtype(np.bool_)
_UINT8 = np.dtype(np.uint8)

# the names torch's TypeMeta prints for dtypes ("Expected out tensor to have dtype float ...")
_TYPEMETA_NAME = {
    np.dtype(np.bool_): "bool", _UINT8: "unsigned char", np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short int", _INT32: "int", _INT64: "long int", np.dtype(np.float16): "c10::Half",
    C.BFLOAT16: "c10::BFloat16", np.dtype(np.float32): "float", np.dtype(np.float64): "double",
    np.dtype(np.complex64): "c10::complex<float>", np.dtype(np.complex128): "c10::complex<double>",
}

_SCATTER_REDUCE_WARNING = ("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in "
                           "a future PyTorch release. Use torch.scatter_reduce instead for more reduction options.")
_scatter_reduce_warned = False  # torch warns once per process


def _warn(message):
    """A UserWarning attributed to the first caller outside npusim (the user's line)."""
    warnings.warn(message, UserWarning, stacklevel=user_stacklevel())


# --- arguments ----------------------------------------------------------------------------------

def _tensor(v) -> Tensor:
    """A Tensor argument; a Python number in a Tensor slot is a 0-dim cpu tensor (a wrapped scalar)."""
    if isinstance(v, Tensor):
        return v
    return C.make(np.asarray(v, dtype=C._scalar_dtype(v).np), CPU)


def _array_for(t: Tensor, a):
    """``t``'s array in the array module of ``a`` (a cpu index or a 0-dim cpu scalar joining another device)."""
    b = t._a
    if b.__class__ is a.__class__:
        return b
    xp = namespace_of(a)
    return xp.asarray(b)


def _writable(self: Tensor, op: str, example: str):
    """``self``'s array for an in-place write; expanded tensors warn and are written through, as in torch."""
    a = self._a
    if any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape)):
        _warn(f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before performing this "
              f"operation. This also applies to advanced indexing e.g. {example}")
        if not getattr(a.flags, "writeable", True):  # NumPy's broadcast views are read-only: alias the storage
            base, _ = _typed_storage_array(self)
            a = strided_view(base[self.storage_offset():], a.shape, a.strides)
    return a


def _no_internal_overlap(self: Tensor):
    a = self._a
    if any(s == 0 and n > 1 for s, n in zip(a.strides, a.shape)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a single "
                           "memory location. Please clone() the tensor before performing the operation.")


def _check_out_dtype_device(out: Tensor, np_dt, dev):
    """Structured ops' out= rule: same dtype and device as the result, no casting."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if out._a.dtype != np_dt:
        raise RuntimeError(f"Expected out tensor to have dtype {_TYPEMETA_NAME[np_dt]}, but got "
                           f"{_TYPEMETA_NAME[out._a.dtype]} instead")
    if out._device is not dev:
        raise RuntimeError(f"Expected out tensor to have device {dev}, but got {out._device} instead")


def _finish_out(out: Tensor, r, dev):
    C.prepare_out(out, r.shape, None, dev, check_cast=False)
    return C.write_out(out, r)


def _nonempty_size(shape, d):
    return shape[d] if shape else 1


# --- gather ---------------------------------------------------------------------------------------

def _check_index_dtype(index: Tensor, op: str):
    dt = index._a.dtype
    if dt != _INT64 and dt != _INT32:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")


def _gather_checks(self: Tensor, dim, index: Tensor) -> int:
    C.check_devices(self._device, index)
    a, ia = self._a, index._a
    d = _wrap_dim(dim, a.ndim)
    if ia.size:
        _check_index_dtype(index, "gather")
        nd = max(a.ndim, 1)
        if nd != max(ia.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        for i in range(nd):
            if i != d and _nonempty_size(ia.shape, i) > _nonempty_size(a.shape, i):
                raise RuntimeError(f"Size does not match at dimension {i} expected index {list(ia.shape)} to be no "
                                   f"larger than self {list(a.shape)} apart from dimension {d}")
    return d


def gather(self, dim, index, *, sparse_grad=False):
    index = _tensor(index)
    d = _gather_checks(self, dim, index)
    a = self._a
    return C.make(K.gather(a, d, _array_for(index, a)), self._device)


def gather_out(self, dim, index, *, sparse_grad=False, out=None):
    index = _tensor(index)
    d = _gather_checks(self, dim, index)
    _check_out_dtype_device(out, self._a.dtype, self._device)
    a = self._a
    return _finish_out(out, K.gather(a, d, _array_for(index, a)), self._device)


# --- scatter ----------------------------------------------------------------------------------------

def _scatter_checks(self: Tensor, dim, index: Tensor, src: Tensor | None, reduce=None) -> int:
    """torch's scatter checks, in torch's order; returns the wrapped dim."""
    C.check_devices(self._device, index, src)
    a, ia = self._a, index._a
    d = _wrap_dim(dim, a.ndim)
    if ia.size:
        _check_index_dtype(index, "scatter")
    if src is not None and src._a.dtype != a.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if ia.size:
        _scatter_shape_checks(a, d, ia, src)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    return d


def _scatter_shape_checks(a, d, ia, src):
    nd = max(a.ndim, 1)
    if nd != max(ia.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    wrong = any(i != d and _nonempty_size(ia.shape, i) > _nonempty_size(a.shape, i) for i in range(nd))
    if src is not None:
        s = src._a
        if not wrong:
            for i in range(nd):
                if i >= max(s.ndim, 1):
                    _wrap_dim(i, s.ndim)  # torch reads src.size(i): its IndexError
                if _nonempty_size(ia.shape, i) > _nonempty_size(s.shape, i):
                    wrong = True
                    break
        if wrong:
            raise RuntimeError(f"Expected index {list(ia.shape)} to be no larger than self {list(a.shape)} apart "
                               f"from dimension {d} and to be no larger size than src {list(s.shape)}")
        if max(s.ndim, 1) != max(ia.ndim, 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    elif wrong:
        raise RuntimeError(f"Expected index {list(ia.shape)} to be no larger than self {list(a.shape)} apart from "
                           f"dimension {d}")


def _scatter_into(a, d, index, src, value, reduce):
    """Scatter into the array ``a`` (self's own array, or a copy of it) after the checks."""
    if index._a.size == 0:
        return a
    if src is not None:
        payload = _array_for(src, a)
    else:
        payload = checked_scalar(value, a.dtype)
    return K.scatter_(a, d, _array_for(index, a), payload, reduce)


def _warn_scatter_reduce():
    global _scatter_reduce_warned
    if not _scatter_reduce_warned:
        _scatter_reduce_warned = True
        _warn(_SCATTER_REDUCE_WARNING)


def _scatter(self, dim, index, src=None, value=None, reduce=None):
    index = _tensor(index)
    if src is not None:
        src = _tensor(src)
    d = _scatter_checks(self, dim, index, src, reduce)
    r = _scatter_into(self._a.copy(), d, index, src, value, reduce)
    return C.make(r.reshape(self._a.shape), self._device)


def _scatter_(self, dim, index, src=None, value=None, reduce=None):
    index = _tensor(index)
    if src is not None:
        src = _tensor(src)
    d = _scatter_checks(self, dim, index, src, reduce)
    if index._a.size:
        _no_internal_overlap(self)
    _scatter_into(self._a, d, index, src, value, reduce)
    self._bump_version()
    return self


def scatter_src(self, dim, index, src):
    return _scatter(self, dim, index, src=src)


def scatter_value(self, dim, index, value):
    return _scatter(self, dim, index, value=value)


def scatter_reduce(self, dim, index, src, *, reduce):
    _warn_scatter_reduce()
    return _scatter(self, dim, index, src=src, reduce=reduce)


def scatter_value_reduce(self, dim, index, value, *, reduce):
    return _scatter(self, dim, index, value=value, reduce=reduce)


def scatter_src_(self, dim, index, src):
    return _scatter_(self, dim, index, src=src)


def scatter_value_(self, dim, index, value):
    return _scatter_(self, dim, index, value=value)


def scatter_reduce_(self, dim, index, src, *, reduce):
    _warn_scatter_reduce()
    return _scatter_(self, dim, index, src=src, reduce=reduce)


def scatter_value_reduce_(self, dim, index, value, *, reduce):
    return _scatter_(self, dim, index, value=value, reduce=reduce)


def scatter_add(self, dim, index, src):
    return _scatter(self, dim, index, src=src, reduce="add")


def scatter_add_(self, dim, index, src):
    return _scatter_(self, dim, index, src=src, reduce="add")


def scatter_add_out(self, dim, index, src, *, out=None):
    index, src = _tensor(index), _tensor(src)
    d = _scatter_checks(self, dim, index, src)
    _check_out_dtype_device(out, self._a.dtype, self._device)
    r = _scatter_into(self._a.copy(), d, index, src, None, "add")
    return _finish_out(out, r.reshape(self._a.shape), self._device)


# --- index_select ------------------------------------------------------------------------------------

def _index_select_checks(self: Tensor, dim, index: Tensor) -> int:
    C.check_devices(self._device, index)
    a, ia = self._a, index._a
    d = _wrap_dim(dim, a.ndim)
    if ia.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if a.ndim == 0 and ia.size != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {ia.size} value(s)")
    if ia.dtype != _INT64 and ia.dtype != _INT32:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    return d


def _index_select(self: Tensor, d, index: Tensor):
    a, ia = self._a, index._a
    if a.ndim > 1 and a.shape[d] == 0 and ia.size:  # (1-D self takes the range check below)
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    return K.index_select(a, d, _array_for(index, a))


def index_select(self, dim, index):
    index = _tensor(index)
    d = _index_select_checks(self, dim, index)
    return C.make(_index_select(self, d, index), self._device)


def index_select_out(self, dim, index, *, out=None):
    index = _tensor(index)
    d = _index_select_checks(self, dim, index)
    if isinstance(out, Tensor) and out._a.dtype != self._a.dtype:
        raise RuntimeError("index_select(): self and result must have the same scalar type")
    return _finish_out(out, _index_select(self, d, index), self._device)


# --- masked_select / nonzero --------------------------------------------------------------------------

def _masked_select(self, mask, out=None):
    mask = _tensor(mask)
    C.check_devices(self._device, mask)
    m = mask._a
    if m.dtype != _BOOL:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    if out is not None and isinstance(out, Tensor) and out._a.dtype != self._a.dtype:
        raise RuntimeError("masked_select(): self and result must have the same scalar type")
    a = self._a
    shape = C.broadcast_shapes(m.shape or (1,), a.shape or (1,))
    return K.masked_select(a, _array_for(mask, a), shape)


def masked_select(self, mask):
    return C.make(_masked_select(self, mask), self._device)


def masked_select_out(self, mask, *, out=None):
    return _finish_out(out, _masked_select(self, mask, out), self._device)


def nonzero(self):
    return C.make(K.nonzero(self._a), self._device)


def nonzero_out(self, *, out=None):
    if isinstance(out, Tensor) and out._a.dtype != _INT64:
        raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but got scalar type"
                           f"{C.tname(out._a.dtype)}")
    return _finish_out(out, K.nonzero(self._a), self._device)


# --- masked_fill -----------------------------------------------------------------------------------------

def _fill_value(value: Tensor):
    if value._a.ndim != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value._a.ndim} dimension(s).")
    return value.item()


def _masked_fill_into(self: Tensor, a, mask: Tensor, value):
    """Checks, then a[mask] = value (a number) on ``a``, which has self's shape."""
    m = mask._a
    if m.dtype != _BOOL:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_TYPEMETA_NAME[m.dtype]}")
    C.check_devices(self._device, mask)
    shape = C.broadcast_shapes(a.shape, m.shape)
    if shape != a.shape:
        raise RuntimeError(f"output with shape {list(a.shape)} doesn't match the broadcast shape {list(shape)}")
    K.masked_fill_(a, _array_for(mask, a), checked_scalar(value, a.dtype))


def _masked_fill(self, mask, value, value_tensor):
    mask = _tensor(mask)
    a = self._a
    xp = namespace_of(a)
    shape = C.broadcast_shapes(mask._a.shape, a.shape)
    if value_tensor:
        value = _fill_value(_tensor(value))
    r = xp.array(xp.broadcast_to(a, shape), copy=True)
    _masked_fill_into(self, r, mask, value)
    return C.make(r, self._device)


def _masked_fill_(self, mask, value):
    mask = _tensor(mask)
    a = _writable(self, "masked_fill_", "tensor[mask] = scalar")
    _masked_fill_into(self, a, mask, value)
    self._bump_version()
    return self


def masked_fill_scalar(self, mask, value):
    return _masked_fill(self, mask, value, False)


def masked_fill_tensor(self, mask, value):
    return _masked_fill(self, mask, value, True)


def masked_fill_scalar_(self, mask, value):
    return _masked_fill_(self, mask, value)


def masked_fill_tensor_(self, mask, value):
    return _masked_fill_(self, mask, _fill_value(_tensor(value)))


# --- advanced indexing -------------------------------------------------------------------------------

def _index_arrays(self: Tensor, indices):
    """torch's checks on a Tensor?[] index list; the arrays (or None) in self's array module."""
    a = self._a
    if len(indices) == 0:
        raise IndexError("at least one index must be provided")
    if len(indices) > a.ndim:
        raise IndexError(f"too many indices for tensor of dimension {a.ndim} (got {len(indices)})")
    dev = self._device
    arrays = []
    for t in indices:
        if t is None:
            arrays.append(None)
            continue
        t = _tensor(t)
        if t._device is not dev and t._device is not CPU:
            raise IndexError(f"indices should be either on cpu or on the same device as the indexed tensor ({dev})")
        dt = t._a.dtype
        if dt == _UINT8:
            _warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.")
        elif dt != _INT64 and dt != _INT32 and dt != _BOOL:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        # an index from the cpu stays a host array: the kernels check it there and copy it up once
        arrays.append(t._a)
    return arrays


def index(self, indices):
    arrays = _index_arrays(self, indices)
    first = arrays[0]
    if len(arrays) == 1 and first is not None and first.dtype == _BOOL and first.ndim \
            and first.__class__ is self._a.__class__:
        return C.make(K.take_mask(self._a, first), self._device)
    a, entries = K.expand_indices(self._a, arrays)
    target, rshape = K.index_plan(a.shape, entries)
    return C.wrap(K.take_index(a, target, rshape), self._device)


def _lone_mask(self: Tensor, indices):
    """torch's masked_fill shortcut for index_put_: the only index is a mask on self's device.

    Returns (mask tensor, mask array shaped to broadcast over self), or None when it does not apply.
    """
    mask = None
    consumed = 0
    for t in indices:
        if t is None:
            consumed += 1
            continue
        if mask is not None or not isinstance(t, Tensor) or t._a.dtype not in (_BOOL, _UINT8) \
                or t._device is not self._device:
            return None
        K.check_mask_shape(self._a, t._a, consumed)
        mask = t
        consumed += t._a.ndim
    if mask is None:
        return None
    m = mask._a
    return mask, m.reshape(m.shape + (1,) * (self._a.ndim - consumed))


def index_put_(self, indices, values, accumulate=False):
    values = _tensor(values)
    a = self._a
    if len(indices) > a.ndim:
        raise IndexError(f"too many indices for tensor of dimension {a.ndim} (got {len(indices)})")
    a = _writable(self, "index_put_", "tensor[indices] = tensor")
    if not accumulate and values._a.size == 1 and values._device is CPU:
        lone = _lone_mask(self, indices)
        if lone is not None:
            mask, m = lone
            if m.dtype != _BOOL:
                raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                                   f"{_TYPEMETA_NAME[m.dtype]}")
            K.masked_fill_(a, m, checked_scalar(values.item(), a.dtype))
            self._bump_version()
            return self
    C.check_devices(self._device, values)
    arrays = _index_arrays(self, indices)
    view, entries = K.expand_indices(a, arrays)
    target, rshape = K.index_plan(view.shape, entries)
    v = values._a
    if not K.is_expandable_to(v.shape, rshape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(rshape)}")
    if v.dtype != a.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{C.tname(a.dtype)} for the destination and {C.tname(v.dtype)} for the source.")
    K.put_index(view, target, rshape, _array_for(values, a), accumulate)
    self._bump_version()
    return self


def index_put(self, indices, values, accumulate=False):
    clone = C.make(self._a.copy(order="K"), self._device)
    return index_put_(clone, indices, values, accumulate)


# --- scatter_reduce (the .two overloads) ----------------------------------------------------------

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_arrays(self, dim, index, src, reduce, include_self):
    index, src = _tensor(index), _tensor(src)
    d = _scatter_checks(self, dim, index, src)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    a = self._a
    return K.scatter_reduce(a, d, _array_for(index, a), _array_for(src, a), reduce, bool(include_self))


def scatter_reduce_two(self, dim, index, src, reduce, *, include_self=True):
    r = _scatter_reduce_arrays(self, dim, index, src, reduce, include_self)
    return C.make(r, self._device)


def scatter_reduce_two_(self, dim, index, src, reduce, *, include_self=True):
    C.check_writable(self)
    r = _scatter_reduce_arrays(self, dim, index, src, reduce, include_self)
    return C.write_out(self, r)


KERNELS = {
    "gather": gather, "gather.out": gather_out,
    "scatter.src": scatter_src, "scatter.value": scatter_value, "scatter.reduce": scatter_reduce,
    "scatter.value_reduce": scatter_value_reduce,
    "scatter_.src": scatter_src_, "scatter_.value": scatter_value_, "scatter_.reduce": scatter_reduce_,
    "scatter_.value_reduce": scatter_value_reduce_,
    "scatter_add": scatter_add, "scatter_add_": scatter_add_, "scatter_add.out": scatter_add_out,
    "index_select": index_select, "index_select.out": index_select_out,
    "masked_select": masked_select, "masked_select.out": masked_select_out,
    "nonzero": nonzero, "nonzero.out": nonzero_out,
    "index.Tensor": index, "index_put": index_put, "index_put_": index_put_,
    "masked_fill.Scalar": masked_fill_scalar, "masked_fill.Tensor": masked_fill_tensor,
    "masked_fill_.Scalar": masked_fill_scalar_, "masked_fill_.Tensor": masked_fill_tensor_,
    "scatter_reduce.two": scatter_reduce_two, "scatter_reduce_.two": scatter_reduce_two_,
}
