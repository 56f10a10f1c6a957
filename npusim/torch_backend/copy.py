"""``copy_`` between the npu and the CPU (or within the npu), and ``item`` (``_local_scalar_dense``)."""
from __future__ import annotations

import numpy as np
import torch

from npusim.privateuse1 import from_array, get_device_hooks

from .adoption import NPUSIM_CPU, NPUSIM_DEVICE, array_view
from .dtypes import NUMPY
from .errors import refuse

_NPU = "npu"
_xp = get_device_hooks("npu").array_namespace(NPUSIM_DEVICE)


def host_npusim(t):
    """An npusim CPU tensor aliasing torch CPU tensor ``t``'s memory."""
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype is torch.bfloat16:
        import ml_dtypes
        return from_array(t.view(torch.uint16).numpy().view(ml_dtypes.bfloat16), NPUSIM_CPU)
    return from_array(t.numpy(), NPUSIM_CPU)


def host_array(t):
    """A NumPy array aliasing torch CPU tensor ``t``'s elements."""
    t = t.detach()
    if t.is_conj():
        t = t.resolve_conj()
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype is torch.bfloat16:
        return t.view(torch.uint16).numpy().view(NUMPY[torch.bfloat16])
    return t.numpy()


def copy_(self, src, non_blocking=False):
    """Element-wise assignment between the arrays (NumPy's casting and broadcasting, as torch's copy_)."""
    if not self.is_cpu:
        dst = array_view(self)
        values = host_array(src) if src.is_cpu else array_view(src)
        if dst.__class__ is not values.__class__:
            values = _xp.asarray(values)
        dst[...] = values
        return self
    values = array_view(src)
    if values.__class__ is not np.ndarray:
        values = values.get()
    host_array(self)[...] = values
    return self


def _local_scalar_dense(self):
    v = array_view(self).item()
    if self.dtype.is_floating_point and not isinstance(v, float):
        return float(v)     # bfloat16 items are ml_dtypes scalars
    if isinstance(v, np.generic):
        return v.item()
    return v


def _dense(t) -> bool:
    from torch._prims_common import is_non_overlapping_and_dense_or_false
    return is_non_overlapping_and_dense_or_false(t)


def _to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    """torch's composite ``_to_copy`` (empty_like, then copy_), except that a non_blocking copy to the CPU is a
    blocking one: torch would stage it in pinned memory, which needs a C++ host-allocator hook. npu work is
    synchronous, so nothing is lost."""
    if layout not in (None, torch.strided):
        refuse(f"layout {layout} on the npu", "the npu holds strided tensors only")
    dtype = self.dtype if dtype is None else dtype
    device = self.device if device is None else device
    # a contiguous tensor is dense: skip torch's Python stride sort (~12 µs) for the common case
    if memory_format in (None, torch.preserve_format) and (self.is_contiguous() or _dense(self)):
        out = torch.empty_strided(self.shape, self.stride(), dtype=dtype, device=device)   # strides kept
    else:
        out = torch.empty_like(self, dtype=dtype, device=device,
                               memory_format=torch.preserve_format if memory_format is None else memory_format)
    out.copy_(self)
    return out


def register(lib) -> None:
    lib.impl("copy_", copy_, "PrivateUse1")
    lib.impl("_to_copy", _to_copy, "PrivateUse1")
    lib.impl("_local_scalar_dense", _local_scalar_dense, "PrivateUse1")
