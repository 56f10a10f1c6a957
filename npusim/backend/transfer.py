"""Moving array data between the host and npu devices (the only place that does)."""
from __future__ import annotations

import numpy as np

from .runtime import runtime


def to_host(a) -> np.ndarray:
    """A host copy of a device array."""
    if a.__class__ is np.ndarray:
        return a.copy(order="K")
    return a.get()


def from_host(a: np.ndarray, device):
    """A device copy of a host array on ``device``."""
    if runtime.mode == "cuda":
        import cupy
        with cupy.cuda.Device(device.index):
            return cupy.asarray(a)
    return np.array(a, copy=True, order="K")


def between(a, src_device, dst_device):
    """``a`` (on src_device) as an array usable on dst_device, copied where memory differs."""
    if runtime.mode != "cuda":
        return a
    import cupy
    if src_device.type == "cpu":
        with cupy.cuda.Device(dst_device.index):
            return cupy.asarray(a)
    if dst_device.type == "cpu":
        return a.get()
    with cupy.cuda.Device(dst_device.index):
        return cupy.asarray(a)
