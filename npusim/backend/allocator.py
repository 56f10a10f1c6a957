"""Device memory accounting: the npu's caching allocator, a model in emulation and real in cuda mode.

Every npu array is registered here when it is made and released when its
storage dies. As in CUDA's caching allocator, allocated sizes round up to
512 bytes, each block lives in a segment (512-byte rounding up to 1 MiB, the
"small pool"; 2 MiB rounding above it, the "large pool"), freed segments stay
*reserved* in a cache for reuse, ``empty_cache`` releases them, and a request
that does not fit the device frees the cache and retries before raising
``OutOfMemoryError``. The statistics use torch.cuda's keys, so
``memory_stats`` reads the same.

The hot path (``malloc``/``free``, once per new npu array) takes no lock: a
cached segment is taken with one atomic ``list.pop``, and each event is
appended to a log that the statistics fold in order (peaks included) when
they are read, or every few thousand events. Only reserving new device memory
(rare: the cache usually serves) takes the lock.

In cuda mode the same allocator sits under CuPy (see ``memory.py``): each
segment is real memory from CuPy's pool, handed to CuPy arrays through its
allocator hook (``take``) and cached here when the array's memory is freed
(``give_back``), keyed by size and stream as CUDA's caching allocator keys its
blocks; storages log their bytes exactly as in emulation. ``reserved`` is then
the device memory this allocator holds, and ``empty_cache`` returns it to the
device.
"""
from __future__ import annotations

import threading

import numpy as np

from .. import OutOfMemoryError  # torch's own class, as torch.cuda.OutOfMemoryError is torch.OutOfMemoryError

_SMALL_LIMIT = 1 << 20          # segments up to 1 MiB are "small_pool"
_BLOCK_ROUND = 512
_LARGE_ROUND = 2 << 20


def format_size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024
        if n < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}"
    return f"{n:.2f} TiB"


def _larger_capacity(capacity: int, needed: int) -> str:
    """An NPUSIM_DEVICE_MEMORY value (whole MiB or GiB, a power of two) at least double ``capacity`` and above
    ``needed``, to suggest in the out-of-memory message."""
    n = 1 << 20
    while n < 2 * capacity or n <= needed:
        n <<= 1
    return f"{n >> 30}GiB" if n >= 1 << 30 else f"{n >> 20}MiB"


def block_size(nbytes: int) -> int:
    """The bytes an allocation of ``nbytes`` counts as allocated (torch rounds to 512)."""
    return -(-nbytes // _BLOCK_ROUND) * _BLOCK_ROUND


def segment_size(nbytes: int) -> int:
    """The bytes of the device segment that holds an allocation of ``nbytes``."""
    if nbytes <= _SMALL_LIMIT:
        return -(-nbytes // _BLOCK_ROUND) * _BLOCK_ROUND
    return -(-nbytes // _LARGE_ROUND) * _LARGE_ROUND


rounded = segment_size


# Counters, each with [current, peak, allocated, freed] for "all", "small_pool" and "large_pool".
_LOGGED = ("allocated_bytes", "requested_bytes", "allocation")   # folded from the event log
_RESERVED = ("reserved_bytes", "segment")                         # updated under the lock
_POOLS = ("all", "small_pool", "large_pool")
_CUR, _PEAK, _ALLOC, _FREED = range(4)
# log entries folded into the statistics at once (bounds the log's memory). A fold computes in work arrays kept
# by the allocator: arrays made afresh each time took fresh pages past the C allocator's mmap threshold, and in a
# loop of tiny ops a fold of 8192 entries cost ~100 ns per entry that way, ~32 with the work arrays.
_FOLD_EVERY = 8192

# fn(device_index, nbytes): called in the allocating thread after each malloc (+segment size) and free
# (-segment size); the profiler's profile_memory uses it. Empty: the hot path pays one global read.
_allocation_observers: tuple = ()
# fn(): called after observers come or go (the storages' frameless release gives way to __del__ while there are any)
observer_listeners: list = []


def add_allocation_observer(fn) -> None:
    """Call ``fn(device_index, nbytes)`` on every npu allocation (nbytes > 0) and free (nbytes < 0)."""
    global _allocation_observers
    _allocation_observers = _allocation_observers + (fn,)
    for listener in observer_listeners:
        listener()


def remove_allocation_observer(fn) -> None:
    global _allocation_observers
    obs = list(_allocation_observers)
    if fn in obs:
        obs.remove(fn)
    _allocation_observers = tuple(obs)
    for listener in observer_listeners:
        listener()


class DeviceAllocator:
    """The memory of one npu device.

    ``backing`` is None for an emulated device (segments are bookkeeping only). In cuda mode it gives real
    memory: ``reserve(size)`` -> a block with ``.ptr`` (raises ``backing.OutOfMemory`` when the device cannot),
    ``release()`` returns the blocks dropped from the cache to the device, ``free_bytes()`` is the device's
    free memory.
    """

    def __init__(self, index: int, capacity: int, backing=None):
        self.index = index
        self.capacity = capacity
        self.limit = capacity           # set_per_process_memory_fraction lowers it
        self.backing = backing
        self._lock = threading.Lock()
        # emulation: segment size -> one None per cached free segment;
        # cuda mode: (segment size, stream) -> the cached blocks (a block is reused only on its stream)
        self._cache: dict = {}
        self._reserved = 0
        self._log: list[int] = []       # +requested bytes on malloc, -requested bytes on free, in order
        self._fold_work = None          # the fold's work arrays, made at the first fold
        self.num_ooms = 0
        self.num_alloc_retries = 0
        # cuda mode: freed blocks other streams still use (record_stream), with the events that say when they're done
        self._pending: list = []
        self.counters = {m: [[0, 0, 0, 0] for _ in _POOLS] for m in _LOGGED + _RESERVED}
        self.storage_classes: dict = {}     # requested bytes -> the storage class of that size (storage.py)

    def after_fork_in_child(self) -> None:
        """A forked child starts with a fresh lock (another thread may have held the parent's)."""
        self._lock = threading.Lock()

    # --- the hot path ------------------------------------------------------------------------
    # storage.storage_maker, NpuStorage.__del__ and storage._release_chain inline malloc's and free's fast paths
    # (a cached segment, a log entry): keep them in step.
    def malloc(self, nbytes: int, cache: dict | None = None) -> int:
        """Account for ``nbytes``; returns the segment size to hand back to ``free`` (0: nothing held).

        ``cache``: where a freed segment of that size is taken from (a memory pool's own; default the allocator's).
        Raises OutOfMemoryError (and accounts nothing) when the request does not fit.
        """
        if nbytes <= _SMALL_LIMIT:
            if nbytes == 0:
                return 0    # as CUDA's allocator: an empty tensor holds no device memory
            size = ((nbytes + 511) >> 9) << 9
        else:
            size = -(-nbytes // _LARGE_ROUND) * _LARGE_ROUND
        try:
            (self._cache if cache is None else cache)[size].pop()   # atomic: no two threads take one segment
        except (KeyError, IndexError):
            self._reserve(size, nbytes)
        return self.log_malloc(nbytes, size)

    def log_malloc(self, nbytes: int, size: int) -> int:
        """Log an allocation of ``nbytes`` in a segment of ``size`` bytes, which it holds already (cuda mode: CuPy's
        allocator hook took it); returns ``size``."""
        log = self._log
        log.append(nbytes)
        if len(log) >= _FOLD_EVERY or _allocation_observers:
            self._after_malloc(size)
        return size

    def free(self, size: int, nbytes: int) -> None:
        if not size:
            return
        try:
            self._cache[size].append(None)
        except KeyError:
            self._cache.setdefault(size, []).append(None)
        self._log.append(-nbytes)
        if _allocation_observers:
            for fn in _allocation_observers:
                fn(self.index, -size)

    # --- real segments (cuda mode): CuPy's allocator hook takes them, the memory's owner gives them back ----
    def take(self, nbytes: int, stream):
        """(segment size, block) of real memory for ``nbytes`` (> 0) on ``stream``; raises OutOfMemoryError."""
        if nbytes <= _SMALL_LIMIT:
            size = ((nbytes + 511) >> 9) << 9
        else:
            size = -(-nbytes // _LARGE_ROUND) * _LARGE_ROUND
        if self._pending:
            self._collect_pending()
        try:
            return size, self._cache[(size, stream)].pop()
        except (KeyError, IndexError):
            return size, self._reserve(size, nbytes)

    def give_back(self, size: int, stream, block) -> None:
        try:
            self._cache[(size, stream)].append(block)
        except KeyError:
            self._cache.setdefault((size, stream), []).append(block)

    def give_back_after(self, size: int, stream, block, events) -> None:
        """Cache ``block`` once every event (recorded on the streams that used it) is done."""
        with self._lock:
            self._pending.append((size, stream, block, events))

    def _collect_pending(self) -> None:
        """Move the pending blocks whose streams are done into the cache."""
        with self._lock:
            waiting = []
            for entry in self._pending:
                if all(ev.done for ev in entry[3]):
                    self.give_back(entry[0], entry[1], entry[2])
                else:
                    waiting.append(entry)
            self._pending = waiting

    def _after_malloc(self, size: int) -> None:
        """The rare part of a malloc: fold a full log, tell the observers."""
        if len(self._log) >= _FOLD_EVERY:
            with self._lock:
                self._fold()
        for fn in _allocation_observers:
            fn(self.index, size)

    # --- reserving and releasing segments (under the lock) -------------------------------------
    def _reserve(self, size, nbytes):
        """Reserve a new segment (None in emulation, the real block in cuda mode); OutOfMemoryError if none fits."""
        with self._lock:
            retried = False
            if self._reserved + size > self.limit:
                retried = True
                self.num_alloc_retries += 1
                self._release_cache()
                if self._reserved + size > self.limit:
                    self.num_ooms += 1
                    raise self._oom(nbytes)
            block = None
            backing = self.backing
            if backing is not None:
                try:
                    block = backing.reserve(size)
                except backing.OutOfMemory:
                    if not retried:     # free the cache and try once more, as in the emulation
                        self.num_alloc_retries += 1
                        self._release_cache()
                    try:
                        block = backing.reserve(size)
                    except backing.OutOfMemory:
                        self.num_ooms += 1
                        raise self._oom(nbytes) from None
            self._reserved += size
            pool = 1 if size <= _SMALL_LIMIT else 2
            self._bump(self.counters["reserved_bytes"], pool, size)
            self._bump(self.counters["segment"], pool, 1)
            return block

    def _release_cache(self) -> None:
        c = self.counters
        for key, cached in list(self._cache.items()):   # a concurrent free may add a size
            size = key[0] if key.__class__ is tuple else key
            count = 0
            while True:     # pop one by one: a concurrent malloc may take a segment meanwhile
                try:
                    cached.pop()
                except IndexError:
                    break
                count += 1
            if count:
                pool = 1 if size <= _SMALL_LIMIT else 2
                self._reserved -= size * count
                self._drop(c["reserved_bytes"], pool, size * count)
                self._drop(c["segment"], pool, count)
        if self.backing is not None:
            self.backing.release()  # the dropped blocks sit in CuPy's pool until it frees them

    def empty_cache(self) -> None:
        with self._lock:
            self._release_cache()

    def check(self, nbytes: int) -> None:
        """Raise OutOfMemoryError now for a request of ``nbytes`` that cannot fit, without allocating.

        Kernels call it (through the device hooks) before NumPy makes a large result, so an
        oversized request fails fast instead of first taking that much host memory. Emulation only: in
        cuda mode nothing is allocated before the request reaches ``take``.
        """
        if nbytes <= 0:
            return
        # segment_size, inlined: every factory call on the npu asks
        size = ((nbytes + 511) >> 9) << 9 if nbytes <= _SMALL_LIMIT else -(-nbytes // _LARGE_ROUND) * _LARGE_ROUND
        if self._cache.get(size) or self._reserved + size <= self.limit:
            return
        with self._lock:
            if self._reserved + size > self.limit:
                self.num_alloc_retries += 1
                self._release_cache()
                if self._reserved + size > self.limit:
                    self.num_ooms += 1
                    raise self._oom(nbytes)

    # --- statistics ----------------------------------------------------------------------------------
    def _fold(self) -> None:
        """Apply the logged events to the counters, in order (caller holds the lock)."""
        log = self._log
        pending = len(log)
        while pending:      # in chunks the work arrays hold (frees alone never fold: the log may be longer)
            n = min(pending, _FOLD_EVERY)
            req = np.fromiter(log, np.int64, n)     # the first n (a third faster than np.array of a slice)
            del log[:n]     # events appended meanwhile stay for the next fold
            pending -= n
            self._fold_chunk(req)

    def _fold_chunk(self, req) -> None:
        n = len(req)
        work = self._fold_work
        if work is None:
            work = self._fold_work = (np.empty((3, _FOLD_EVERY), np.int64), np.empty((3, _FOLD_EVERY), np.int64),
                                      np.empty(_FOLD_EVERY, np.int64), np.empty(_FOLD_EVERY, bool))
        events, scratch, magnitude, mask = work[0][:, :n], work[1][:, :n], work[2][:n], work[3][:n]
        # one row per logged metric (_LOGGED's order): allocated bytes (the request rounded to 512 away from zero:
        # a free's negative entry rounds down by the mask alone), requested bytes, allocation count
        allocated = events[0]
        np.greater(req, 0, out=mask)
        np.multiply(mask, _BLOCK_ROUND - 1, out=allocated)
        np.add(allocated, req, out=allocated)
        np.bitwise_and(allocated, -_BLOCK_ROUND, out=allocated)
        events[1] = req
        np.sign(req, out=events[2])
        small = np.less_equal(np.absolute(req, out=magnitude), _SMALL_LIMIT, out=mask)
        n_small = int(np.count_nonzero(small))
        if n_small == n:    # the usual case: no large block, "all" and "small_pool" move alike
            self._fold_pool(events, (0, 1), scratch)
        elif n_small == 0:
            self._fold_pool(events, (0, 2), scratch)
        else:
            self._fold_pool(events, (0,), scratch)
            self._fold_pool(events[:, small], (1,))
            self._fold_pool(events[:, ~small], (2,))

    def _fold_pool(self, events, pools, scratch=None) -> None:
        run = np.add.accumulate(events, axis=1, out=scratch)
        peak, last = np.maximum.reduce(run, axis=1).tolist(), run[:, -1].tolist()
        moved = np.add.reduce(np.absolute(events, out=scratch), axis=1).tolist()
        c = self.counters
        for m, metric in enumerate(_LOGGED):
            up, down = (moved[m] + last[m]) // 2, (moved[m] - last[m]) // 2
            for pool in pools:
                row = c[metric][pool]
                row[_PEAK] = max(row[_PEAK], row[_CUR] + peak[m])
                row[_CUR] += last[m]
                row[_ALLOC] += up
                row[_FREED] += down

    @staticmethod
    def _bump(rows, pool, n):
        for row in (rows[0], rows[pool]):
            v = row[_CUR] + n
            row[_CUR] = v
            row[_ALLOC] += n
            if v > row[_PEAK]:
                row[_PEAK] = v

    @staticmethod
    def _drop(rows, pool, n):
        for row in (rows[0], rows[pool]):
            row[_CUR] -= n
            row[_FREED] += n

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
        if self.backing is not None:    # other processes may hold some of a real device
            free = min(free, self.backing.free_bytes())
        extra = ""
        if self.limit != self.capacity:
            extra = f" (this process may use {format_size(self.limit)} of it)"
        return OutOfMemoryError(
            f"npu out of memory. Tried to allocate {format_size(nbytes)}. npu {self.index} has a total capacity of "
            f"{format_size(self.capacity)} of which {format_size(free)} is free{extra}. Of the allocated memory "
            f"{format_size(alloc)} is allocated by npusim, and {format_size(self._reserved - alloc)} is reserved "
            f"by npusim but unallocated. Requested: {nbytes} bytes, allocated: {alloc} bytes, reserved: "
            f"{self._reserved} bytes, free: {free} bytes. The NPUSIM_DEVICE_MEMORY environment variable sets an "
            f"emulated npu's capacity (16GiB by default): run with NPUSIM_DEVICE_MEMORY="
            f"{_larger_capacity(self.capacity, alloc + nbytes)} (say) to try a larger device; on a GPU the npu "
            f"has the GPU's own memory.")

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
