"""The npu's DeviceHooks: how core learns its device count, current device and memory."""
from __future__ import annotations

import time
import weakref

import numpy as np

from .. import device as _device
from ..privateuse1 import DeviceHooks, from_array
from . import host_memory, mem_pool
from .runtime import runtime
from .storage import cuda_storage_maker, storage_maker


class NpuHooks(DeviceHooks):
    """Device facts for the framework. Every new array is accounted in the device's allocator."""

    def __init__(self, memory):
        self.memory = memory          # backend.memory.MemoryManager
        self.tracks_storage = True    # decided per mode after init; True is safe before

    def is_available(self) -> bool:
        try:
            return runtime.device_count() > 0
        except RuntimeError:
            return False

    def device_count(self) -> int:
        return runtime.device_count()

    def current_device(self) -> int:
        return runtime.current_device()

    def lazy_init(self) -> None:
        if not runtime.initialized:
            runtime.lazy_init()
        elif runtime.in_bad_fork:
            runtime.check_fork()

    def array_namespace(self, device):
        if runtime.mode == "cuda":
            import cupy
            return cupy
        return np

    @property
    def initialized(self) -> bool:
        return runtime.initialized

    def storage_factory(self, device):
        alloc = self.memory.allocator(device.index)
        if alloc is None:   # not initialised yet
            return None
        plain = storage_maker if alloc.backing is None else cuda_storage_maker
        # while a use_mem_pool block is open, a maker routing the thread's allocations to its pool
        return mem_pool.storage_factory(device, alloc, plain(device, alloc, runtime))

    def check_allocation(self, nbytes, device) -> None:
        alloc = self.memory.emulated(device.index)     # in cuda mode CuPy's allocation itself fails cleanly
        if alloc is not None:
            alloc.check(nbytes)

    def pinned_host_bytes(self, nbytes):
        """``nbytes`` of page-locked host memory (a NumPy array): CuPy's pinned memory in cuda mode, ordinary memory
        in emulation (where pinning is a recorded property). Either way the block counts in
        ``host_memory_stats`` until it is freed."""
        started = time.perf_counter_ns()
        block = None
        if runtime.mode == "cuda":
            import cupyx
            empty_pinned = getattr(cupyx, "empty_pinned", None)
            block = None if empty_pinned is None else empty_pinned((nbytes,), dtype=np.uint8)
        if block is None:
            block = np.empty(nbytes, np.uint8)
        host_memory.record_alloc(nbytes, started)
        weakref.finalize(block, host_memory.record_free, nbytes)
        return block

    def record_stream(self, storage, stream) -> None:
        """``Tensor.record_stream``: the storage's memory is in use by ``stream`` too. In emulation every op has
        finished when it returns, so freed memory is always safe to reuse; in cuda mode the allocator holds the
        block back until the stream's work queued by the time it is freed is done."""
        if stream.device.type != storage.device.type:
            raise RuntimeError(f"record_stream: expected a stream on {storage.device.type}, got one on "
                               f"{stream.device.type}")
        if runtime.mode != "cuda":
            return
        from .streams import pools
        mem = getattr(storage._root, "data", None)
        while hasattr(mem, "mem"):      # ndarray.data (a MemoryPointer) -> the memory object that owns the lease
            mem = mem.mem
        lease = getattr(mem, "owner", None) or getattr(mem, "_owner", None)
        if lease is not None and hasattr(lease, "record_stream"):
            lease.record_stream(pools.native(stream.device_index, stream.stream_id))

    def from_dlpack(self, ext, kind, index):
        if kind == 2 and runtime.mode == "cuda":
            import cupy
            return from_array(cupy.from_dlpack(ext), _device("npu", int(index)))
        return None
