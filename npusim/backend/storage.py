"""Storage of npu tensors: an UntypedStorage that returns its bytes to the allocator when it dies."""
from __future__ import annotations

from ..core.storage import UntypedStorage


class NpuStorage(UntypedStorage):
    """Bytes on an emulated npu, accounted in that device's allocator."""

    __slots__ = ("_alloc", "_size", "_requested")

    def __del__(self):
        alloc = self._alloc
        if alloc is not None:
            self._alloc = None
            alloc.free(self._size, self._requested)


def new_npu_storage(array, device, allocator) -> NpuStorage:
    s = object.__new__(NpuStorage)
    n = array.nbytes
    s._alloc = None
    s._size = allocator.malloc(n)   # may raise OutOfMemoryError: nothing is accounted then
    s._requested = n
    s._alloc = allocator
    s._root = array
    s._device = device
    return s
