"""Kernels written here on the arrays of npu tensors, for ops npusim's npu runs on the CPU (data-dependent
result sizes) that torch needs on every print and boolean index: ``masked_select`` and ``nonzero``."""
from __future__ import annotations

from npusim.privateuse1 import from_array, get_device_hooks

from .adoption import NPUSIM_DEVICE, adopt, array_view

_xp = get_device_hooks("npu").array_namespace(NPUSIM_DEVICE)


def masked_select(self, mask):
    a, m = _xp.broadcast_arrays(array_view(self), array_view(mask))
    return adopt(from_array(_xp.ascontiguousarray(a[m]), NPUSIM_DEVICE), self.dtype)


def nonzero(self):
    a = array_view(self)
    idx = _xp.stack(_xp.nonzero(a), axis=1) if a.ndim else _xp.zeros((int(bool(a)), 0), dtype="int64")
    return adopt(from_array(_xp.ascontiguousarray(idx.astype("int64", copy=False)), NPUSIM_DEVICE))


KERNELS = {"masked_select": masked_select, "nonzero": nonzero}
