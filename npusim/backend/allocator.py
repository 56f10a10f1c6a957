"""Device memory accounting: a caching allocator model for the emulated npu.

Every npu array is registered here when it is made and released when its
storage dies. Like CUDA's caching allocator, sizes round up (512 bytes for
small blocks, 2 MiB for large ones), freed blocks stay *reserved* in a cache
for reuse, ``empty_cache`` releases them, and a request that does not fit the
device frees the cache and retries before raising ``OutOfMemoryError``. The
statistics use torch.cuda's keys, so ``memory_stats`` reads the same.
"""
from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np

_SMALL_LIMIT = 1 << 20          # blocks up to 1 MiB are "small_pool"
_SMALL_ROUND = 512
_LARGE_ROUND = 2 << 20


class OutOfMemoryError(RuntimeError):
    """Raised when an npu allocation does not fit (``torch.cuda.OutOfMemoryError``)."""


def format_size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}"
    return f"{n:.2f} TiB"


def rounded(nbytes: int) -> int:
    if nbytes <= _SMALL_LIMIT:
        return max(_SMALL_ROUND, -(-nbytes // _SMALL_ROUND) * _SMALL_ROUND)
    return -(-nbytes // _LARGE_ROUND) * _LARGE_ROUND


# Counters the hot path updates: bytes allocated, bytes requested, number of allocations,
# reserved bytes and segments. Each has, for "all" and per pool, [current, peak, allocated, freed].
_HOT = ("allocated_bytes", "requested_bytes", "allocation", "reserved_bytes", "segment")
_POOLS = ("all", "small_pool", "large_pool")
_CUR, _PEAK, _ALLOC, _FREED = range(4)

# fn(device_index, nbytes): called in the allocating thread after each malloc (+rounded size) and free
# (-rounded size); the profiler's profile_memory uses it. Empty: the hot path pays one global read.
_allocation_observers: tuple = ()


def add_allocation_observer(fn) -> None:
    """Call ``fn(device_index, nbytes)`` on every npu allocation (nbytes > 0) and free (nbytes < 0)."""
    global _allocation_observers
    _allocation_observers = _allocation_observers + (fn,)


def remove_allocation_observer(fn) -> None:
    global _allocation_observers
    obs = list(_allocation_observers)
    if fn in obs:
        obs.remove(fn)
    _allocation_observers = tuple(obs)


class DeviceAllocator:
    """The memory of one emulated device.

    The hot path only keeps the block cache exact (it decides out-of-memory) and
    logs each allocation and free; statistics fold the log in order (peaks
    included) when read, or every few thousand events.
    """

    _FOLD_EVERY = 8192

    def __init__(self, index: int, capacity: int):
        self.index = index
        self.capacity = capacity
        self.limit = capacity           # set_per_process_memory_fraction lowers it
        self._lock = threading.Lock()
        self._free = defaultdict(int)   # rounded block size -> number of cached free blocks
        self._reserved = 0
        self._log_size: list[int] = []  # +rounded size on malloc, -rounded size on free
        self._log_req: list[int] = []   # the same for the requested byte counts
        self.num_ooms = 0
        self.num_alloc_retries = 0
        # counters[metric][pool] = [current, peak, allocated, freed]; pool 0 is "all"
        self.counters = {m: [[0, 0, 0, 0] for _ in _POOLS] for m in _HOT}

    # --- the hot path ------------------------------------------------------------------------
    def malloc(self, nbytes: int) -> int:
        """Account for a block of ``nbytes``; returns the rounded size to hand back to ``free``."""
        size = (((nbytes + 511) >> 9) << 9 or 512) if nbytes <= _SMALL_LIMIT else \
            -(-nbytes // _LARGE_ROUND) * _LARGE_ROUND
        with self._lock:
            free = self._free
            n = free[size]
            if n:
                free[size] = n - 1
            else:
                self._reserve(size, nbytes)
            log = self._log_size
            log.append(size)
            self._log_req.append(nbytes)
            if len(log) >= self._FOLD_EVERY:
                self._fold()
        if _allocation_observers:
            for fn in _allocation_observers:
                fn(self.index, size)
        return size

    def free(self, size: int, nbytes: int) -> None:
        with self._lock:
            self._free[size] += 1
            self._log_size.append(-size)
            self._log_req.append(-nbytes)
        if _allocation_observers:
            for fn in _allocation_observers:
                fn(self.index, -size)

    def _reserve(self, size, nbytes):
        if self._reserved + size > self.limit:
            self._release_cache()
            self.num_alloc_retries += 1
            if self._reserved + size > self.limit:
                self.num_ooms += 1
                raise self._oom(nbytes)
        self._reserved += size
        pool = 1 if size <= _SMALL_LIMIT else 2
        self._bump(self.counters["reserved_bytes"], pool, size)
        self._bump(self.counters["segment"], pool, 1)

    def _fold(self) -> None:
        """Apply the event log to the statistics, in order (caller holds the lock)."""
        if not self._log_size:
            return
        sizes = np.array(self._log_size, dtype=np.int64)
        reqs = np.array(self._log_req, dtype=np.int64)
        self._log_size.clear()
        self._log_req.clear()
        small = np.abs(sizes) <= _SMALL_LIMIT
        c = self.counters
        for pool, sel in ((0, None), (1, small), (2, ~small)):
            s = sizes if sel is None else sizes[sel]
            if s.size == 0:
                continue
            r = reqs if sel is None else reqs[sel]
            for metric, ev in (("allocated_bytes", s), ("requested_bytes", r), ("allocation", np.sign(s))):
                row = c[metric][pool]
                run = row[0] + np.cumsum(ev)
                row[1] = max(row[1], int(run.max()))
                row[0] = int(run[-1])
                row[2] += int(ev[ev > 0].sum())
                row[3] += int(-ev[ev < 0].sum())

    @staticmethod
    def _bump(rows, pool, n):
        for row in (rows[0], rows[pool]):
            v = row[0] + n
            row[0] = v
            row[2] += n
            if v > row[1]:
                row[1] = v

    @staticmethod
    def _drop(rows, pool, n):
        for row in (rows[0], rows[pool]):
            row[0] -= n
            row[3] += n

    def check(self, nbytes: int) -> None:
        """Raise before a request that could never fit, without allocating."""
        size = rounded(nbytes)
        with self._lock:
            if self._free[size]:
                return
            if self._reserved + size > self.limit:
                self._release_cache()
                if self._reserved + size > self.limit:
                    self.num_ooms += 1
                    raise self._oom(nbytes)

    # --- cache -------------------------------------------------------------------------------------
    def _release_cache(self) -> None:
        c = self.counters
        for size, count in list(self._free.items()):
            if not count:
                continue
            pool = 1 if size <= _SMALL_LIMIT else 2
            total = size * count
            self._reserved -= total
            self._drop(c["reserved_bytes"], pool, total)
            self._drop(c["segment"], pool, count)
            self._free[size] = 0

    def empty_cache(self) -> None:
        with self._lock:
            self._release_cache()

    # --- reporting ------------------------------------------------------------------------------------
    @property
    def allocated(self) -> int:
        with self._lock:
            self._fold()
            return self.counters["allocated_bytes"][0][_CUR]

    @property
    def reserved(self) -> int:
        return self._reserved

    def _oom(self, nbytes: int) -> OutOfMemoryError:
        self._fold()
        alloc = self.counters["allocated_bytes"][0][_CUR]
        free = max(self.limit - self._reserved, 0)
        extra = ""
        if self.limit != self.capacity:
            extra = f" (the per-process limit is {format_size(self.limit)})"
        return OutOfMemoryError(
            f"npu out of memory. Tried to allocate {format_size(nbytes)}. npu {self.index} has a total capacity of "
            f"{format_size(self.capacity)} of which {format_size(free)} is free{extra}. Of the allocated memory "
            f"{format_size(alloc)} is allocated by npusim, and {format_size(self._reserved - alloc)} is reserved "
            f"by npusim but unallocated. Allocated: {alloc} bytes, reserved: {self._reserved} bytes, free: {free} "
            f"bytes.")

    def memory_stats(self) -> dict:
        """torch.cuda.memory_stats' keys. Without streams, active == allocated and nothing is split."""
        out = {}
        with self._lock:
            self._fold()
            c = {m: [list(r) for r in rows] for m, rows in self.counters.items()}
            out["num_alloc_retries"] = self.num_alloc_retries
            out["num_ooms"] = self.num_ooms
        c["active_bytes"] = c["allocated_bytes"]
        c["active"] = c["allocation"]
        zero = [[0, 0, 0, 0] for _ in _POOLS]
        c["inactive_split"] = c["inactive_split_bytes"] = zero
        for metric, rows in c.items():
            for pool, row in zip(_POOLS, rows):
                for field, v in zip(("current", "peak", "allocated", "freed"), row):
                    out[f"{metric}.{pool}.{field}"] = v
        for metric in ("oversize_allocations", "oversize_segments"):
            for field in ("current", "peak", "allocated", "freed"):
                out[f"{metric}.{field}"] = 0
        out["num_sync_all_streams"] = 0
        out["num_device_alloc"] = c["segment"][0][_ALLOC]
        out["num_device_free"] = c["segment"][0][_FREED]
        out["max_split_size"] = -1
        return dict(sorted(out.items()))

    def reset_peak(self) -> None:
        with self._lock:
            self._fold()
            for rows in self.counters.values():
                for row in rows:
                    row[_PEAK] = row[_CUR]

    def reset_accumulated(self) -> None:
        with self._lock:
            self._fold()
            for rows in self.counters.values():
                for row in rows:
                    row[_ALLOC] = row[_FREED] = 0
            self.num_alloc_retries = self.num_ooms = 0
