"""Per-device memory: emulated allocators, or CuPy's pool watched for statistics on a GPU."""
from __future__ import annotations

import os
import threading

from .allocator import DeviceAllocator, OutOfMemoryError


class _CupyPoolWatcher:
    """Allocates through CuPy's default pool, keeps torch-style peaks and turns CuPy OOM into ours."""

    def __init__(self, count):
        import cupy
        self.cupy = cupy
        self.pool = cupy.get_default_memory_pool()
        self.peak_used = [0] * count
        self.peak_reserved = [0] * count
        self.num_ooms = [0] * count
        self.limit = [None] * count
        cupy.cuda.set_allocator(self.malloc)

    def malloc(self, nbytes):
        cp = self.cupy
        dev = cp.cuda.runtime.getDevice()
        limit = self.limit[dev]
        if limit is not None and self.pool.total_bytes() + nbytes > limit:
            self.pool.free_all_blocks()
            if self.pool.total_bytes() + nbytes > limit:
                self.num_ooms[dev] += 1
                raise OutOfMemoryError(f"npu out of memory. Tried to allocate {nbytes} bytes beyond the "
                                       f"per-process limit of {limit} bytes on npu {dev}.")
        try:
            mem = self.pool.malloc(nbytes)
        except cp.cuda.memory.OutOfMemoryError as e:
            self.num_ooms[dev] += 1
            free, total = cp.cuda.runtime.memGetInfo()
            raise OutOfMemoryError(
                f"npu out of memory. Tried to allocate {nbytes} bytes. npu {dev} has a total capacity of {total} "
                f"bytes of which {free} bytes are free. Of the allocated memory {self.pool.used_bytes()} bytes "
                f"are allocated by npusim, and {self.pool.total_bytes() - self.pool.used_bytes()} bytes are "
                f"reserved by npusim but unallocated. ({e})") from None
        used, total = self.pool.used_bytes(), self.pool.total_bytes()
        if used > self.peak_used[dev]:
            self.peak_used[dev] = used
        if total > self.peak_reserved[dev]:
            self.peak_reserved[dev] = total
        return mem

    def on(self, index):
        return self.cupy.cuda.Device(index)


class MemoryManager:
    def __init__(self):
        self._lock = threading.Lock()
        self.allocators: list[DeviceAllocator] | None = None
        self.watcher: _CupyPoolWatcher | None = None

    def init(self, runtime) -> None:
        n = runtime.device_count()
        if runtime.mode == "emulation":
            self.allocators = [DeviceAllocator(i, runtime.config.device_memory) for i in range(n)]
        else:
            self.watcher = _CupyPoolWatcher(n)

    def emulated(self, index) -> DeviceAllocator | None:
        a = self.allocators
        return a[index] if a is not None else None

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()
        for a in self.allocators or ():
            a.after_fork_in_child()


memory = MemoryManager()
os.register_at_fork(after_in_child=memory._after_fork_in_child)
