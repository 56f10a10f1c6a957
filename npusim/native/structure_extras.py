"""nonzero_static, the out-of-place fill and empty_permuted.

nonzero_static is nonzero's index rows cut or padded (with ``fill_value``) to ``size`` rows, a shape known
before the data is read; fill is a filled copy (fill_ on a clone, so autograd gives ``self`` zeros and a
tensor ``value`` the sum, as torch's formulas); empty_permuted lays the dimensions out in memory in
``physical_layout`` order.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..kernels.array_api import namespace_of
from . import common as C


def nonzero_static(self, *, size, fill_value=-1):
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    a = self._a
    xp = namespace_of(a)
    rows = xp.argwhere(a) if a.ndim else xp.zeros((1 if bool(a) else 0, 0), dtype=xp.int64)
    rows = rows.astype(xp.int64)[:size]
    if rows.shape[0] < size:
        pad = xp.full((size - rows.shape[0], a.ndim), fill_value, dtype=xp.int64)
        rows = xp.concatenate([rows, pad], axis=0)
    return C.make(xp.ascontiguousarray(rows), self._device)


def fill_scalar(self, value):
    return aten.fill_.Scalar(aten.clone.default(self), value)


def fill_tensor(self, value):
    if value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                           f"dimensions.")
    return aten.fill_.Tensor(aten.clone.default(self), value)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, pin_memory=None):
    size, order = [int(s) for s in size], [int(d) for d in physical_layout]
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(size)} is not equal to len(physical_layout) = {len(order)}")
    seen = set()
    for d in order:
        if not 0 <= d < len(size):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(len(size), 1)}, "
                             f"{max(len(size), 1) - 1}], but got {d})")
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    stride, step = [0] * len(size), 1
    for d in reversed(order):       # the last dim of the layout is the innermost in memory
        stride[d] = step
        step *= max(size[d], 1)
    return aten.empty_strided.default(size, stride, dtype=dtype, layout=layout, device=device,
                                      pin_memory=pin_memory)


KERNELS = {"nonzero_static": nonzero_static}
COMPOSITE_IMPLICIT = {"fill.Scalar": fill_scalar, "fill.Tensor": fill_tensor, "empty_permuted": empty_permuted}
