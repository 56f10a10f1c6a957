"""npu kernels that move data between devices: ``copy_`` in every direction."""
from __future__ import annotations

from .. import Tensor
from ..privateuse1 import array_of, bump_version, device_of, generic_kernels
from ..privateuse1.kernels import check_broadcastable_to, write_array
from .runtime import runtime
from .transfer import between

_same_device_copy = generic_kernels()["copy_"]


def copy_(self, src, non_blocking=False):
    """Copy ``src`` into ``self`` with broadcasting and dtype conversion, across cpu and npu devices."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    if device_of(src) is device_of(self):
        return _same_device_copy(self, src, non_blocking)
    if runtime.in_bad_fork:
        runtime.check_fork()
    dst = array_of(self)
    check_broadcastable_to(dst, array_of(src))
    data = between(array_of(src), device_of(src), device_of(self))
    write_array(dst, data)
    bump_version(self)
    return self


KERNELS = {"copy_": copy_}
