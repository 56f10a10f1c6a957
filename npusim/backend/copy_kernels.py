"""npu kernels that move data between devices: ``copy_`` in every direction."""
from __future__ import annotations

from ..core.tensor import Tensor
from ..native import common as C
from ..native import factories as F
from .runtime import runtime
from .transfer import between


def copy_(self, src, non_blocking=False):
    """Copy ``src`` into ``self`` with broadcasting and dtype conversion, across cpu and npu devices."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    if src._device is self._device:
        return F.copy_(self, src, non_blocking)
    if runtime.in_bad_fork:
        runtime.check_fork()
    dst = self._a
    if src._a.shape != dst.shape and C.broadcast_shapes(dst.shape, src._a.shape) != dst.shape:
        C.shape_error(dst, src._a)
    data = between(src._a, src._device, self._device)
    F._write(C.namespace_of(dst), dst, data)
    self._bump_version()
    return self


KERNELS = {"copy_": copy_}
