"""``Tensor.__getitem__`` / ``__setitem__`` in torch's terms.

Basic indices (int, slice, None, Ellipsis) become dispatched view ops (select,
slice, unsqueeze), applied left to right, so the result shares memory with the
tensor. Tensor-like indices (tensors, lists, NumPy arrays) and Python bools
are collected per dim and applied together by ``aten::index`` (reads, a copy)
or ``aten::index_put_`` (writes). Integers are always selects, applied with the
other basic indices before any index tensor, as in torch, so results follow
torch where NumPy's rules differ.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .c10 import dtype as D
from .c10.device import CPU
from .dispatch.ops_namespace import aten
from .c10.scalar_conversion import checked_scalar
from .tensor import Tensor, make

_select = aten.select.int.fn
_slice = aten.slice.Tensor.fn
_unsqueeze = aten.unsqueeze.default.fn
_expand = aten.expand.default.fn
_view = aten.view.default.fn
_index = aten.index.Tensor.fn
_index_put_ = aten.index_put_.default.fn
_copy_ = aten.copy_.default.fn
_fill_ = aten.fill_.Scalar.fn
_fill_tensor_ = aten.fill_.Tensor.fn
_alias = aten.alias.default.fn

_INT64 = np.dtype(np.int64)
_UINT8 = np.dtype(np.uint8)
_BOOL = np.dtype(np.bool_)
_NUMBER = (bool, int, float)

# --- turning an index into views and index tensors -----------------------------------------------

_SEQUENCE_WARNING = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; "
    "use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, "
    "x[torch.tensor(seq)], which will result either in an error or a different result")


def _as_tuple(idx):
    """The index as a tuple of items; short lists holding sequences, slices, None or ... count as tuples."""
    if idx.__class__ is tuple:
        return idx
    if idx.__class__ is list and len(idx) < 32:
        for v in idx:
            if v is None or v is Ellipsis or isinstance(v, (Tensor, list, tuple, slice, range, np.ndarray)):
                warnings.warn(_SEQUENCE_WARNING, UserWarning, stacklevel=4)
                return tuple(idx)
    return (idx,)


def _type_name(v) -> str:
    t = type(v)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _index_tensor_from_data(data) -> Tensor:
    """A list / NumPy array index as a tensor: bool and uint8 stay masks, anything else becomes int64."""
    try:
        arr = np.asarray(data)
    except ValueError:   # a ragged list: torch reads its items as ints, and a list is not one
        raise TypeError("'list' object cannot be interpreted as an integer") from None
    if arr.dtype != _BOOL and arr.dtype != _UINT8:
        if arr.dtype.kind not in "iufb":
            raise TypeError(f"new(): invalid data type '{arr.dtype.name}'")
        arr = arr.astype(_INT64)
    return make(arr, CPU)


def _slice_bound(v):
    if v is None or v.__class__ is int:
        return v
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError("slice indices must be integers or None or have an __index__ method") from None


def _earlier_step_error(items):
    for it in items:
        if it.__class__ is slice and it.step is not None and it.step <= 0:
            raise ValueError("slice step cannot be zero" if it.step == 0 else "step must be greater than zero")


def _convert(items):
    """Normalise index items (ints, (start, stop, step) slices, None, ..., bools, index tensors)
    and count the dims they address."""
    out = []
    specified = 0
    for it in items:
        cls = it.__class__
        if cls is int:
            specified += 1
        elif cls is slice:
            step = _slice_bound(it.step)   # its sign is checked where the slice applies, in index order
            it = slice(_slice_bound(it.start), _slice_bound(it.stop), step)
            specified += 1
        elif it is None or it is Ellipsis or cls is bool:
            pass
        else:
            if isinstance(it, (list, tuple, range, np.ndarray)):
                it = _index_tensor_from_data(it)
            if isinstance(it, Tensor):
                a = it._a
                if a.ndim == 0 and a.dtype.kind in "iub":
                    # a 0-dim integer tensor is an int (a select); a 0-dim mask is a bool
                    if a.dtype == _BOOL or a.dtype == _UINT8:
                        it = bool(it.item())
                    else:
                        it = int(it.item())
                        specified += 1
                else:
                    specified += a.ndim if (a.dtype == _BOOL or a.dtype == _UINT8) else 1
            elif isinstance(it, (int, np.integer)) and not isinstance(it, (bool, np.bool_)):
                it = int(it)
                if not -2 ** 63 <= it < 2 ** 63:   # torch's parser reads an index as int64
                    raise ValueError("Overflow when unpacking long long")
                specified += 1
            elif isinstance(it, (str, bytes)):   # torch tries to make a tensor of it, and cannot
                raise TypeError(f"new(): invalid data type '{type(it).__name__}'")
            else:
                _earlier_step_error(out)   # torch reads the items in order: a bad slice before this one wins
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                                 f"are valid indices (got {_type_name(it)})")
        out.append(it)
    return out, specified


def _int_out_of_range(a, i, pos, dim):
    if not -2 ** 63 <= i < 2 ** 63:   # torch's parser reads an index as int64
        raise ValueError("Overflow when unpacking long long")
    n = a.shape[dim] if a.ndim else 0
    raise IndexError(f"index {i} is out of bounds for dimension {pos} with size {n}")


def _record(indices, dim, t):
    if indices is None:
        indices = []
    while len(indices) <= dim:
        indices.append(None)
    indices[dim] = t
    return indices


def _bool_index(keep: bool) -> Tensor:
    """A Python bool indexes a new dim of size 1: [0] keeps it, [] empties it."""
    return make(np.zeros(1 if keep else 0, _INT64), CPU)


def _count_specified(items) -> int:
    """The dims ``items`` index, counted before any is read, as torch does (a mask counts its dims)."""
    n = 0
    for it in items:
        if it is None or it is Ellipsis or it is True or it is False:
            continue
        if isinstance(it, Tensor) and it._a.dtype.kind == "b" or isinstance(it, Tensor) and it._a.dtype == _UINT8:
            n += it._a.ndim
        else:
            n += 1
    return n


def _apply(self: Tensor, idx):
    """Apply the basic indices as views; return (view, per-dim index tensors or None)."""
    items = _as_tuple(idx)
    ndim = self._a.ndim
    several = len(items) > 1 or items and isinstance(items[0], (str, bytes))
    if several:
        # torch counts the dims before reading any item, then reads and applies the items one by one, in order:
        # of two bad items, the first one's error wins
        specified = _count_specified(items)
        if specified > ndim:
            raise IndexError(f"too many indices for tensor of dimension {ndim}")
    else:
        items, specified = _convert(items)
        if specified > ndim:
            if idx.__class__ is slice:   # torch's applySlice checks the step, then names the 0-dim case
                _earlier_step_error(items)
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")
            raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = self
    dim = 0
    shift = 0   # a k-dim mask takes one slot of the index list for its k dims: slot = dim - shift
    indices = None
    for pos, it in enumerate(items):
        if several:
            it = _convert((it,))[0][0]
        cls = it.__class__
        if cls is int:
            a = out._a
            n = a.shape[dim]
            if not -n <= it < n:
                _int_out_of_range(a, it, pos, dim)
            out = _select(out, dim, it)
        elif cls is slice:
            if it.step is not None and it.step <= 0:
                raise ValueError("slice step cannot be zero" if it.step == 0 else "step must be greater than zero")
            if not (it.start is None and it.stop is None and it.step in (None, 1)):
                out = _slice(out, dim, it.start, it.stop, 1 if it.step is None else it.step)
            dim += 1
        elif it is None:
            out = _unsqueeze(out, dim)
            dim += 1
        elif it is Ellipsis:
            dim += ndim - specified
        elif cls is bool:
            out = _unsqueeze(out, dim)
            indices = _record(indices, dim - shift, _bool_index(it))
            dim += 1
        else:
            indices = _record(indices, dim - shift, it)
            a = it._a
            if a.dtype == _BOOL or a.dtype == _UINT8:
                dim += a.ndim
                shift += a.ndim - 1
            else:
                dim += 1
    return out, indices


def _select_first(self: Tensor, i: int) -> Tensor:
    a = self._a
    if a.ndim:
        n = a.shape[0]
        if -n <= i < n:
            return _select(self, 0, i)
    elif i == 0:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                         "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
    _int_out_of_range(a, i, 0, 0)


# --- reading ---------------------------------------------------------------------------------

def getitem(self: Tensor, idx):
    if idx.__class__ is int:  # x[0]: the latency-critical case
        a = self._a
        if a.ndim and -a.shape[0] <= idx < a.shape[0]:
            return _select(self, 0, idx)
        return _select_first(self, idx)
    if idx.__class__ is Tensor:
        a = idx._a
        if a.ndim and ((a.dtype == _INT64 and self._a.ndim) or (a.dtype == _BOOL and a.ndim <= self._a.ndim)):
            return _index(self, [idx])  # x[index_tensor] / x[mask]: straight to aten::index
    view, indices = _apply(self, idx)
    if indices is None:
        return _alias(view) if view is self else view
    return _index(view, indices)


# --- writing ---------------------------------------------------------------------------------

def _tensor_type(t: Tensor) -> str:
    name = D.SCALAR_TYPE_NAME[t.dtype] + "Tensor"
    return f"npusim.{name}" if t._device is CPU else f"npusim.{t._device.type}.{name}"


def _value(self: Tensor, value):
    """A Tensor value as it is; a number checked against self's dtype (kept as a NumPy scalar)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, _NUMBER) or value.__class__ is complex or (
            isinstance(value, np.generic) and value.dtype.kind in "biufc"):
        if value.__class__ is int and not -2 ** 63 <= value < 2 ** 63:
            raise ValueError("Overflow when unpacking long long")   # setitem parses a Python int as int64
        return checked_scalar(value, self._a.dtype, check_reduced_float=False)
    raise TypeError(f"can't assign a {_type_name(value)} to a {_tensor_type(self)}")


def _strip_leading_ones(v: Tensor) -> Tensor:
    shape = v._a.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return _view(v, shape[k:]) if k else v


def _copy_to(dst: Tensor, v):
    """torch's copy_to: fill with a number or 0-dim cpu tensor, else copy the value broadcast to dst."""
    if not isinstance(v, Tensor):
        _fill_(dst, v)
        return
    src = v._a
    if src.shape == dst._a.shape:
        _copy_(dst, v)
    elif src.ndim == 0 and v._device is CPU:
        _fill_tensor_(dst, v)
    else:
        _copy_(dst, _expand(_strip_leading_ones(v), dst._a.shape))


def setitem(self: Tensor, idx, value):
    v = _value(self, value)
    cls = idx.__class__
    if cls is int:
        _copy_to(_select_first(self, idx), v)
        return
    if idx is False:  # torch writes nothing and checks nothing
        return
    if idx is None or idx is True:
        _copy_to(_unsqueeze(self, 0), v)
        return
    if idx is Ellipsis:
        _copy_to(self, v)
        return
    view, indices = _apply(self, idx)
    if indices is None:
        _copy_to(view, v)
        return
    if isinstance(v, Tensor):
        v = _strip_leading_ones(v)
    else:
        v = make(np.asarray(v, dtype=self._a.dtype), CPU)
    _index_put_(view, indices, v)
