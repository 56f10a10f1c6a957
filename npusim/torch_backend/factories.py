"""``empty`` and ``empty_strided`` on the npu: memory from npusim's allocator (accounted, capacity checked)."""
from __future__ import annotations

import torch

from .adoption import new_npu
from .errors import refuse


def _check(device, pin_memory, layout) -> None:
    if device is not None and torch.device(device).index not in (None, 0):
        refuse(f"device {device}", "torch's Python hooks serve one device, npu:0")
    if pin_memory:
        refuse("pin_memory on the npu", "pinned memory needs a C++ host allocator hook")
    if layout not in (None, torch.strided):
        refuse(f"layout {layout} on the npu", "the npu holds strided tensors only")


def empty_memory_format(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    _check(device, pin_memory, layout)
    dtype = dtype or torch.get_default_dtype()
    size = list(size)
    if memory_format in (None, torch.contiguous_format, torch.preserve_format):
        return new_npu(size, dtype)
    strides = torch.empty(size, dtype=dtype, device="meta", memory_format=memory_format).stride()
    return new_npu(size, dtype, list(strides))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    _check(device, pin_memory, layout)
    return new_npu(list(size), dtype or torch.get_default_dtype(), list(stride))


def register(lib) -> None:
    lib.impl("empty.memory_format", empty_memory_format, "PrivateUse1")
    lib.impl("empty_strided", empty_strided, "PrivateUse1")
