"""``copy_`` between the npu and the CPU (or within the npu), and ``item`` (``_local_scalar_dense``)."""
from __future__ import annotations

import numpy as np
import torch

from npusim.privateuse1 import from_array

from .adoption import NPUSIM_CPU, array_view, npusim_view

_NPU = "npu"


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


def as_npusim(t):
    """npusim's view of a torch tensor on either device."""
    return npusim_view(t) if t.device.type == _NPU else host_npusim(t)


def copy_(self, src, non_blocking=False):
    if self.device.type == _NPU and src.device.type == _NPU and self.dtype == src.dtype:
        dst = array_view(self)
        dst[...] = array_view(src)
        return self
    as_npusim(self).copy_(as_npusim(src))
    return self


def _local_scalar_dense(self):
    v = array_view(self).item()
    if self.dtype.is_floating_point and not isinstance(v, float):
        return float(v)     # bfloat16 items are ml_dtypes scalars
    if isinstance(v, np.generic):
        return v.item()
    return v


def register(lib) -> None:
    lib.impl("copy_", copy_, "PrivateUse1")
    lib.impl("_local_scalar_dense", _local_scalar_dense, "PrivateUse1")
