"""CuPy's memory pool and allocator hook, with a per-device capacity instead of a GPU."""
from __future__ import annotations

import threading

from .. import _core as K


class OutOfMemoryError(MemoryError):
    def __init__(self, size, total, limit=0):
        self.size, self.total, self.limit = size, total, limit
        msg = f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes"
        msg += f", limit set to: {limit:,} bytes)." if limit else ")."
        super().__init__(msg)


class BaseMemory:
    def __init__(self, size, device_id):
        self.size, self.device_id, self.ptr = size, device_id, 0


class Memory(BaseMemory):
    pass


class UnownedMemory(BaseMemory):
    def __init__(self, ptr, size, owner, device_id=None):
        super().__init__(size, K.CURRENT.device if device_id is None else device_id)
        self.ptr, self.owner = ptr, owner


class _PooledMemory(BaseMemory):
    """A block of the pool: back to the pool's cache when the last array using it is gone."""

    def __init__(self, pool, size, device_id):
        super().__init__(size, device_id)
        self._pool = pool

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool._release(self.device_id, self.size)


class MemoryPointer:
    def __init__(self, mem, ptr_or_offset=0, device_id=None):
        self.mem = mem
        self.ptr = int(ptr_or_offset)
        self.device_id = device_id if device_id is not None else (mem.device_id if mem is not None else 0)

    @property
    def device(self):
        from . import Device
        return Device(self.device_id)

    def __int__(self):
        return self.ptr

    def copy_from_device(self, src, size, stream=None):
        """cudaMemcpy between device memories (peer copies included): bytes, no elementwise kernel."""
        import ctypes
        ctypes.memmove(self.ptr, src.ptr, size)


def _round(size):
    return (size + 511) // 512 * 512    # CuPy's allocation unit


class MemoryPool:
    """Used and cached bytes per device, as CuPy's pool reports them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._used = [0] * K.DEVICE_COUNT
        self._cached = [0] * K.DEVICE_COUNT
        self._limit = 0

    def malloc(self, size):
        dev = K.CURRENT.device
        size = _round(size)
        with self._lock:
            if self._cached[dev] >= size:       # reuse cached bytes
                self._cached[dev] -= size
            else:
                total = self._used[dev] + self._cached[dev]
                cap = min(K.CAPACITY, self._limit) if self._limit else K.CAPACITY
                if total + size > cap:
                    self._cached[dev] = 0        # CuPy frees its cache and retries once
                    if self._used[dev] + size > cap:
                        raise OutOfMemoryError(size, self._used[dev], self._limit)
            self._used[dev] += size
        return MemoryPointer(_PooledMemory(self, size, dev), 0, dev)

    def _release(self, dev, size):
        with self._lock:
            self._used[dev] -= size
            self._cached[dev] += size

    def used_bytes(self):
        return self._used[K.CURRENT.device]

    def total_bytes(self):
        dev = K.CURRENT.device
        return self._used[dev] + self._cached[dev]

    def free_bytes(self):
        return self._cached[K.CURRENT.device]

    def free_all_blocks(self, stream=None):
        with self._lock:
            self._cached[K.CURRENT.device] = 0

    def n_free_blocks(self):
        return 1 if self._cached[K.CURRENT.device] else 0

    def set_limit(self, size=None, fraction=None):
        self._limit = int(size or 0)

    def get_limit(self):
        return self._limit


_pool = MemoryPool()
_allocator = [None]


def set_allocator(allocator=None):
    _allocator[0] = allocator


def get_allocator():
    return _allocator[0] or _pool.malloc


def current_allocator():
    return _allocator[0] or _pool.malloc


def alloc(size):
    return current_allocator()(size)
