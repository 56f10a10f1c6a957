"""``Tensor.__getitem__`` / ``__setitem__`` in torch's terms.

Basic indices (int, slice, None, Ellipsis, Python bool) become dispatched view
ops (select, slice, unsqueeze), in order; tensor-like indices are then applied
together by ``aten::index`` (reads) or ``aten::index_put_`` (writes). Integers
are always selects, as in torch, so results follow torch where NumPy differs.
"""
from __future__ import annotations

import numpy as np

from .ops_namespace import aten
from .tensor import Tensor

_select = aten.select.int.fn
_slice = aten.slice.Tensor.fn
_unsqueeze = aten.unsqueeze.default.fn
_index = aten.index.Tensor.fn
_index_put_ = aten.index_put_.default.fn
_copy_ = aten.copy_.default.fn
_fill_ = aten.fill_.Scalar.fn
_alias = aten.alias.default.fn


def _as_index_tensor(v, device):
    from .factories import tensor as make_tensor
    t = make_tensor(v)
    if t._a.dtype.kind == "f":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return t


def _is_int(v):
    return (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)))


def _consumed_dims(item):
    if item is None or item is Ellipsis or isinstance(item, (bool, np.bool_)):
        return 0
    if isinstance(item, Tensor):
        return item._a.ndim if item._a.dtype == np.bool_ else 1
    return 1


def _normalise(idx):
    if isinstance(idx, tuple):
        return idx
    return (idx,)


def _apply_basic(self: Tensor, idx):
    """Apply basic indices; return (view, [(dim, index tensor)...])."""
    items = _normalise(idx)
    ellipses = sum(1 for it in items if it is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    converted = []
    for it in items:
        if isinstance(it, (list, np.ndarray)) or (isinstance(it, tuple)):
            it = _as_index_tensor(it, self._device)
        elif not (it is None or it is Ellipsis or isinstance(it, (slice, Tensor, bool, np.bool_)) or _is_int(it)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                             f"valid indices (got {type(it).__name__})")
        converted.append(it)
    used = sum(_consumed_dims(it) for it in converted)
    ndim = self._a.ndim
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = self
    dim = 0
    advanced = []
    for it in converted:
        if it is Ellipsis:
            dim += ndim - used
        elif it is None:
            out = _unsqueeze(out, dim)
            dim += 1
        elif isinstance(it, (bool, np.bool_)):
            out = _unsqueeze(out, dim)
            if not it:
                out = _slice(out, dim, 0, 0, 1)
            dim += 1
        elif isinstance(it, slice):
            step = 1 if it.step is None else it.step
            if step <= 0:
                raise ValueError("step must be greater than zero")
            start = it.start
            stop = it.stop
            if not (start is None and stop is None and step == 1):
                out = _slice(out, dim, _as_int(start), _as_int(stop), _as_int(step))
            dim += 1
        elif isinstance(it, Tensor):
            advanced.append((dim, it))
            dim += _consumed_dims(it)
        else:
            i = int(it)
            n = out._a.shape[dim]
            if not (-n <= i < n):
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {n}")
            out = _select(out, dim, i)
    return out, advanced


def _as_int(v):
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, Tensor):
        return int(v.item())
    return int(v.__index__())


def _index_list(view: Tensor, advanced):
    indices = [None] * view._a.ndim
    for dim, t in advanced:
        indices[dim] = t
    while indices and indices[-1] is None:
        indices.pop()
    return indices


def getitem(self: Tensor, idx):
    if _is_int(idx) and not isinstance(idx, bool):
        a = self._a
        if a.ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        n = a.shape[0]
        i = int(idx)
        if not (-n <= i < n):
            raise IndexError(f"index {i} is out of bounds for dimension 0 with size {n}")
        return _select(self, 0, i)
    view, advanced = _apply_basic(self, idx)
    if not advanced:
        return _alias(view) if view is self else view
    return _index(view, _index_list(view, advanced))


def setitem(self: Tensor, idx, value):
    view, advanced = _apply_basic(self, idx)
    if not advanced:
        if isinstance(value, Tensor):
            _copy_(view, value)
        elif isinstance(value, (bool, int, float, np.number)):
            _fill_(view, value)
        else:
            from .factories import tensor as make_tensor
            _copy_(view, make_tensor(value, dtype=self.dtype, device=self._device))
        return
    if not isinstance(value, Tensor):
        from .factories import tensor as make_tensor
        value = make_tensor(value, dtype=self.dtype, device=self._device)
    _index_put_(view, _index_list(view, advanced), value)
