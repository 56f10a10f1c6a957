"""Moving array data between the host and npu devices (the only place that does)."""
from __future__ import annotations

import numpy as np

from . import sync_debug
from .runtime import runtime


def to_host(a) -> np.ndarray:
    """A host copy of a device array, in the same memory layout (NumPy's order "K", as the emulation copies).

    CuPy's ``get()`` writes C order; a transposed or channels-last tensor must keep its strides on the
    way to the host (torch's ``.cpu()`` preserves the layout of dense tensors). The device packs the
    array in its own axis order, one transfer moves it, and a host view restores the axis order.
    """
    sync_debug.host_read()      # the host waits for the device: sync debug mode, graph capture
    if a.__class__ is np.ndarray:
        return a.copy(order="K")
    if a.flags.c_contiguous or a.ndim < 2:
        return a.get()
    if a.flags.f_contiguous:
        return a.get(order="F")
    order = sorted(range(a.ndim), key=lambda d: -abs(a.strides[d]))   # outermost axis first
    packed = a.transpose(order)
    import cupy
    host = cupy.ascontiguousarray(packed).get()
    return host.transpose(np.argsort(order))


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
        if dst_device.type == "cpu" and src_device.type != "cpu":
            sync_debug.host_read()      # cuda mode tells it in to_host
        return a
    import cupy
    if src_device.type == "cpu":
        with cupy.cuda.Device(dst_device.index):
            return cupy.asarray(a)
    if dst_device.type == "cpu":
        return to_host(a)
    if dst_device.index == src_device.index:
        return a
    # npu -> another npu: a peer copy of packed bytes (cupy.asarray would hand back the same array, still
    # on the source device, and an elementwise copy across devices needs peer access)
    with cupy.cuda.Device(src_device.index):
        packed = cupy.ascontiguousarray(a)
    with cupy.cuda.Device(dst_device.index):
        out = cupy.empty(packed.shape, packed.dtype)
        if packed.nbytes:
            out.data.copy_from_device(packed.data, packed.nbytes)
    return out
