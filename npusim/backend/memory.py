"""Per-device memory: one caching allocator per npu, over bookkeeping in emulation and CuPy's pool in cuda mode."""
from __future__ import annotations

import os
import threading

from .allocator import DeviceAllocator


class _Lease:
    """Owner of the memory behind one CuPy allocation: when CuPy frees it, the segment goes back to the cache.

    Streams other than the allocation's that used the memory (``Tensor.record_stream``) hold it back: the segment
    returns to the cache only once the work they had queued when it was freed is done, as CUDA's caching allocator.
    """

    __slots__ = ("alloc", "size", "stream", "block", "users")

    def __init__(self, alloc, size, stream, block):
        self.alloc, self.size, self.stream, self.block = alloc, size, stream, block
        self.users = None

    def record_stream(self, native_stream) -> None:
        if native_stream.ptr != self.stream:
            if self.users is None:
                self.users = {}
            self.users[native_stream.ptr] = native_stream

    def __del__(self):
        if self.users:
            import cupy
            events = []
            for s in self.users.values():
                ev = cupy.cuda.Event(disable_timing=True)
                ev.record(s)
                events.append(ev)
            self.alloc.give_back_after(self.size, self.stream, self.block, events)
        else:
            self.alloc.give_back(self.size, self.stream, self.block)


class _CupyDevice:
    """The real memory of one GPU for its DeviceAllocator: blocks of CuPy's pool (the allocator does the caching,
    so the pool is emptied whenever the allocator drops cached blocks)."""

    def __init__(self, cupy, pool, index):
        self.cupy, self.pool, self.index = cupy, pool, index
        self.OutOfMemory = cupy.cuda.memory.OutOfMemoryError

    def reserve(self, size):
        with self.cupy.cuda.Device(self.index):
            return self.pool.malloc(size)

    def release(self) -> None:
        with self.cupy.cuda.Device(self.index):
            self.pool.free_all_blocks()

    def free_bytes(self) -> int:
        with self.cupy.cuda.Device(self.index):
            return int(self.cupy.cuda.runtime.memGetInfo()[0])


class _CupyAllocatorHook:
    """CuPy's allocator (``cupy.cuda.set_allocator``) in cuda mode: every CuPy allocation takes a segment of the
    npu allocator of the current device, on the current stream."""

    def __init__(self, cupy, allocators):
        self.cupy = cupy
        self.pool = cupy.get_default_memory_pool()
        self.allocators = allocators
        mem = cupy.cuda.memory
        self._pointer, self._unowned = mem.MemoryPointer, mem.UnownedMemory
        cupy.cuda.set_allocator(self.malloc)

    def malloc(self, nbytes):
        cp = self.cupy
        if nbytes <= 0:
            return self.pool.malloc(0)     # no device memory
        dev = cp.cuda.runtime.getDevice()
        stream = cp.cuda.get_current_stream().ptr
        a = self.allocators[dev]
        size, block = a.take(nbytes, stream)
        return self._pointer(self._unowned(block.ptr, size, _Lease(a, size, stream, block), dev), 0)


class MemoryManager:
    def __init__(self):
        self._lock = threading.Lock()
        self.allocators: list[DeviceAllocator] | None = None
        self.cupy_hook: _CupyAllocatorHook | None = None

    def init(self, runtime) -> None:
        n = runtime.device_count()
        if runtime.mode == "emulation":
            self.allocators = [DeviceAllocator(i, runtime.config.device_memory) for i in range(n)]
            return
        import cupy
        pool = cupy.get_default_memory_pool()
        self.allocators = [DeviceAllocator(i, int(cupy.cuda.runtime.getDeviceProperties(i)["totalGlobalMem"]),
                                           _CupyDevice(cupy, pool, i)) for i in range(n)]
        self.cupy_hook = _CupyAllocatorHook(cupy, self.allocators)

    def allocator(self, index) -> DeviceAllocator | None:
        """The allocator of npu ``index`` (None before the npu initialises)."""
        a = self.allocators
        return a[index] if a is not None else None

    def emulated(self, index) -> DeviceAllocator | None:
        """The allocator of npu ``index`` when it is emulated (early capacity checks apply only there)."""
        a = self.allocators
        return a[index] if a is not None and self.cupy_hook is None else None

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()
        for a in self.allocators or ():
            a.after_fork_in_child()


memory = MemoryManager()
os.register_at_fork(after_in_child=memory._after_fork_in_child)
