"""npu kernels that move data between devices: ``copy_`` in every direction."""
from __future__ import annotations

from .. import Tensor
from ..kernels.array_api import namespace_of
from ..privateuse1 import array_of, bump_version, device_of, generic_kernels
from ..privateuse1.kernels import check_broadcastable_to, write_array
from .runtime import runtime
from .transfer import between

_same_device_copy = generic_kernels()["copy_"]


def copy_(self, src, non_blocking=False):
    """Copy ``src`` into ``self`` with broadcasting and dtype conversion, across cpu and npu devices."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' (position 1) must be Tensor, not {type(src).__name__}")
    src_device, dst_device = device_of(src), device_of(self)
    if src_device is dst_device:
        return _same_device_copy(self, src, non_blocking)
    if runtime.in_bad_fork:
        runtime.check_fork()
    dst, s = array_of(self), array_of(src)
    if s.shape != dst.shape:
        check_broadcastable_to(dst, s)
    data = between(s, src_device, dst_device)
    write_array(namespace_of(dst), dst, data)
    bump_version(self)
    return self


KERNELS = {"copy_": copy_}
