"""``npusim.to_dlpack``: torch's legacy DLPack export, a capsule for ``from_dlpack`` (``Tensor.__dlpack__`` is the
protocol's own way)."""
from __future__ import annotations

import numpy as np

from ..core.c10.device import CPU
from ..core.c10.device_hooks import check_access
from ..core.tensor import Tensor


def to_dlpack(tensor):
    """to_dlpack(tensor) -> PyCapsule

    An opaque DLPack capsule over ``tensor``'s memory (no copy), to be consumed once by a ``from_dlpack``. Unlike
    ``Tensor.__dlpack__`` it takes tensors that require grad, as torch's does. Tensors of the emulated npu cannot
    be exported: no foreign library may read its memory as host memory.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"_to_dlpack(): argument 'data' (position 1) must be Tensor, not {type(tensor).__name__}")
    a = tensor._a
    if tensor._device is not CPU:
        check_access(tensor._device)
        if a.__class__ is np.ndarray:
            raise BufferError(f"{tensor._device} tensors of the emulated device cannot be exported through DLPack; "
                              f"use .cpu() first")
    return a.__dlpack__()


__all__ = ["to_dlpack"]
