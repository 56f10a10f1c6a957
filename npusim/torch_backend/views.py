"""Ops that change only a tensor's metadata, run by torch's own CPU kernels on npu tensors.

torch's non-composite view ops (``view``, ``as_strided``, ``_reshape_alias``, ``unfold``, ``view_as_real``,
``view_as_complex``) and ``set_`` touch no element: their CPU kernels, given an npu tensor, make an npu tensor
over the same storage with torch's sizes, strides, ``_base`` and version counter. Every other view op is
composite in torch and reaches these. ``resize_`` grows through npusim's allocator (the storage cannot grow).
"""
from __future__ import annotations

import torch

from .adoption import CPU_KEYS, new_npu
from .errors import refuse

FORWARDED = ("view", "as_strided", "_reshape_alias", "unfold", "view_as_real", "view_as_complex",
             "set_.source_Storage", "set_.source_Storage_storage_offset", "set_.source_Tensor", "set_")


def _forward(name):
    kernel = torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::" + name, "CPU").call_boxed

    def metadata_only(*args, **kwargs):
        return kernel(CPU_KEYS, *args, **kwargs)
    metadata_only.__name__ = name.replace(".", "_")
    return metadata_only


_resize_cpu = torch._C._dispatch_get_computed_kernel_for_dispatch_key("aten::resize_", "CPU").call_boxed
_set_cpu = torch._C._dispatch_get_computed_kernel_for_dispatch_key(
    "aten::set_.source_Storage_storage_offset", "CPU").call_boxed


def resize_(self, size, memory_format=None):
    """torch's resize_: metadata only when the storage holds the new size; otherwise new npusim memory that
    keeps the old contents (as a storage reallocation does)."""
    size = list(size)
    if memory_format not in (None, torch.contiguous_format, torch.preserve_format):
        refuse("resize_ with a memory format other than contiguous on the npu")
    numel = 1
    for n in size:
        numel *= n
    needed = (self.storage_offset() + numel) * self.element_size()
    if needed <= self.untyped_storage().nbytes():
        return _resize_cpu(CPU_KEYS, self, size, memory_format=memory_format)
    old = self.untyped_storage()
    fresh = new_npu([max(needed // self.element_size(), 1)], self.dtype)
    n_old = old.nbytes() // self.element_size()
    if n_old:   # the old contents stay, as a storage reallocation keeps them
        flat_old = torch.empty(0, dtype=self.dtype, device=self.device)
        _set_cpu(CPU_KEYS, flat_old, old, 0, [n_old], [1])
        fresh[:n_old].copy_(flat_old)
    _set_cpu(CPU_KEYS, self, fresh.untyped_storage(), self.storage_offset(), size, _contiguous(size))
    return self


def _contiguous(size):
    out, acc = [], 1
    for n in reversed(size):
        out.append(acc)
        acc *= max(n, 1)
    return out[::-1]


def register(lib) -> None:
    for name in FORWARDED:
        lib.impl(name, _forward(name), "PrivateUse1")
    lib.impl("resize_", resize_, "PrivateUse1")
