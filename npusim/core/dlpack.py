"""DLPack exchange: ``Tensor.__dlpack__`` and ``npusim.from_dlpack``.

cpu tensors export their NumPy array; device arrays export through their own
``__dlpack__`` when the device has one (CuPy on a GPU). The emulated npu has no
DLPack device: it reports ``kDLExtDev`` as torch does for PrivateUse1 and
refuses to export, so foreign libraries never read its memory as host memory.
"""
from __future__ import annotations

import numpy as np

from .c10.device import CPU
from .c10.device_hooks import check_access, get_device_hooks

K_DL_CPU = 1
K_DL_CUDA = 2
K_DL_EXT_DEV = 12


def dlpack_device(t):
    if t._device is CPU:
        return (K_DL_CPU, 0)
    a = t._a
    if a.__class__ is not np.ndarray and hasattr(a, "__dlpack_device__"):
        return a.__dlpack_device__()
    return (K_DL_EXT_DEV, t._device.index or 0)


def _check_exportable(t):
    if t.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")


def export_dlpack(t, *, stream=None, max_version=None, dl_device=None, copy=None):
    _check_exportable(t)
    a = t._a
    if t._device is not CPU:
        check_access(t._device)     # a forked child may not hand out its parent's device memory
    if t._device is not CPU and a.__class__ is np.ndarray:
        raise BufferError(f"{t._device} tensors of the emulated device cannot be exported through DLPack; "
                          f"use .cpu() first")
    kwargs = {}
    if stream is not None:
        kwargs["stream"] = stream
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    try:
        return a.__dlpack__(**kwargs)
    except TypeError:
        return a.__dlpack__(stream=stream) if stream is not None else a.__dlpack__()


def from_dlpack(ext):
    """A tensor sharing memory with a DLPack-capable object (a NumPy/CuPy array, a tensor...)."""
    from .tensor import Tensor, make, make_alias
    if isinstance(ext, Tensor):
        # torch goes through the exchange protocol: a new tensor over the same memory, no view of ``ext``
        # and a version counter of its own (npu tensors included, as no foreign library reads them here)
        _check_exportable(ext)
        t = make_alias(ext._a, ext)
        t._vc = None
        return t
    if not hasattr(ext, "__dlpack__"):
        if type(ext).__name__ == "PyCapsule":
            raise TypeError("from_dlpack() expects an object with __dlpack__ and __dlpack_device__ (a DLPack "
                            "capsule alone cannot say which device it lives on)")
        # torch takes anything else for a capsule, and refuses it as one
        raise RuntimeError("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed "
                           "only once, so you might have already constructed a tensor from it once.")
    kind, index = ext.__dlpack_device__()
    kind = int(kind)
    if kind == K_DL_CPU:
        return make(np.from_dlpack(ext), CPU)
    hooks = get_device_hooks("privateuseone")   # the backend may import its device's arrays
    if hooks is not None and hasattr(hooks, "from_dlpack"):
        r = hooks.from_dlpack(ext, kind, index)
        if r is not None:
            return r
    raise BufferError(f"no npusim device can import DLPack device type {kind}")
