"""Memory pools of the npu's caching allocator (torch.cuda.MemPool, use_mem_pool), its caching switch and its
snapshot (torch.cuda.memory_snapshot).

A pool owns segments of its own: while ``use_mem_pool(pool)`` is active in a thread, that thread's npu
allocations on the device take a segment from the pool's cache or reserve a new one for the pool; a pool
allocation freed later goes back to the pool, not to the allocator's cache, so ``empty_cache`` leaves it
reserved while the pool lives. When the pool is destroyed its free segments go to the allocator's cache (and
``empty_cache`` releases them). The allocator's statistics count pool segments as any other: they are reserved
and allocated through the same allocator.

Routing costs nothing while no pool is in use: the device hooks hand core the plain storage maker, and swap in
the routing one (``refresh_storage_factories``) only while a ``use_mem_pool`` block is open somewhere; in cuda
mode CuPy's allocator hook is swapped likewise.

``caching_allocator_enable(False)`` stops the caching: a freed segment is released at once (an allocation
observer of the allocator does it), so ``memory_reserved`` follows ``memory_allocated``.
"""
from __future__ import annotations

import gc
import itertools
import threading
import weakref

from ..privateuse1 import privateuse1_backend_name, refresh_storage_factories
from . import allocator as _allocator
from .memory import memory
from .runtime import runtime
from .storage import NpuStorage, _CudaNpuStorage

__all__ = ["MemPool", "use_mem_pool", "memory_snapshot", "caching_allocator_enable", "caching_allocator_is_enabled",
           "storage_factory"]

_user_pool_ids = itertools.count(1)
_lock = threading.Lock()
_open_blocks = 0          # use_mem_pool blocks open in any thread: the routing makers are installed while > 0


class _Routing(threading.local):
    def __init__(self):
        self.pools: dict = {}       # device index -> stack of _PoolSegments this thread allocates into


_routing = _Routing()


class _PoolSegments:
    """The segments one pool holds on one device: ``cache`` keyed as the allocator's (size in emulation,
    (size, stream) in cuda mode)."""

    def __init__(self, pool_id, alloc):
        self.pool_id, self.alloc = pool_id, alloc
        self.cache: dict = {}
        self.closed = False     # the pool is gone: segments freed from now on go to the allocator

    def give_back(self, size, stream, block) -> None:    # cuda mode: CuPy freed a pool block
        if self.closed:
            self.alloc.give_back(size, stream, block)
        else:
            self.cache.setdefault((size, stream), []).append(block)

    def release_to_allocator(self) -> None:
        """The pool is gone: its free segments become the allocator's cached ones."""
        self.closed = True
        for key, held in list(self.cache.items()):
            while held:
                block = held.pop()
                if self.alloc.backing is None:
                    self.alloc._cache.setdefault(key, []).append(None)
                else:
                    self.alloc.give_back(key[0], key[1], block)


class _PoolNpuStorage(NpuStorage):
    """An emulated npu storage whose segment belongs to a pool."""

    __slots__ = ("_pool_seg",)

    def __del__(self, _mod=_allocator):
        try:
            alloc, seg = self._alloc, self._pool_seg
        except AttributeError:
            return
        if alloc is None:
            return
        self._alloc = None
        size = self._size
        if size:
            (alloc._cache if seg.closed else seg.cache).setdefault(size, []).append(None)
            alloc._log.append(-self._requested)
            for fn in _mod._allocation_observers:
                fn(alloc.index, -size)


class _PoolCudaNpuStorage(_CudaNpuStorage):
    """cuda mode: the accounting of a pool allocation (its memory returns to the pool when CuPy frees it)."""

    __slots__ = ("_pool_seg",)


# a pool storage trades memory and accounting (resize_) only with another of its class
_PoolNpuStorage._accounting_family = _PoolNpuStorage
_PoolCudaNpuStorage._accounting_family = _PoolCudaNpuStorage


class MemPool:
    """A pool of npu memory (torch.cuda.MemPool): allocations inside ``use_mem_pool(pool)`` come from it.

    ``allocator`` must be None: the npu's pools use its own caching allocator. ``use_on_oom`` and ``no_split``
    are accepted as torch's: npusim never splits a segment, and a pool is never borrowed on an OOM.
    """

    def __init__(self, allocator=None, use_on_oom: bool = False, no_split: bool = False):
        if allocator is not None:
            raise RuntimeError(f"MemPool: the {privateuse1_backend_name()} pools use npusim's caching allocator; "
                               f"a pluggable allocator is not supported")
        self._id = (0, next(_user_pool_ids))
        self._segments: dict = {}       # device index -> _PoolSegments
        self._uses = 0
        self.use_on_oom, self.no_split = bool(use_on_oom), bool(no_split)
        weakref.finalize(self, _release, self._segments)

    @property
    def id(self) -> tuple:
        """The pool's id, a tuple of two ints."""
        return self._id

    @property
    def allocator(self):
        """The pool's allocator: None, the npu's caching allocator."""
        return None

    def use_count(self) -> int:
        """References to the pool: the pool itself and each ``use_mem_pool`` block using it."""
        return 1 + self._uses

    def snapshot(self, include_traces=True):
        """``memory_snapshot`` of this pool's segments."""
        return memory_snapshot(self._id, include_traces=include_traces)

    def _on(self, index) -> _PoolSegments:
        seg = self._segments.get(index)
        if seg is None:
            seg = self._segments[index] = _PoolSegments(self._id, memory.allocator(index))
        return seg


def _release(segments) -> None:
    for seg in segments.values():
        seg.release_to_allocator()


class use_mem_pool:     # noqa: N801 - torch's name
    """``with use_mem_pool(pool):`` routes this thread's npu allocations on ``device`` to ``pool``."""

    def __init__(self, pool: MemPool, device=None):
        from .device_module import _index
        if not isinstance(pool, MemPool):
            raise TypeError(f"use_mem_pool(): pool must be a MemPool, not {type(pool).__name__}")
        runtime.lazy_init()
        self.pool, self.index = pool, _index(device)

    def __enter__(self):
        global _open_blocks
        seg = self.pool._on(self.index)
        _routing.pools.setdefault(self.index, []).append(seg)
        with _lock:
            self.pool._uses += 1
            _open_blocks += 1
            if _open_blocks == 1:
                _install(True)

    def __exit__(self, *exc):
        global _open_blocks
        _routing.pools[self.index].pop()
        with _lock:
            self.pool._uses -= 1
            _open_blocks -= 1
            if _open_blocks == 0:
                _install(False)
        return False


def _install(routing: bool) -> None:
    """Make core ask for storage makers again (the routing ones while pools are open); swap CuPy's hook too."""
    refresh_storage_factories()
    hook = memory.cupy_hook
    if hook is not None:
        hook.cupy.cuda.set_allocator(_cupy_routing_malloc if routing else hook.malloc)


def _current(index):
    stack = _routing.pools.get(index)
    return stack[-1] if stack else None


def storage_factory(device, alloc, plain):
    """The storage maker the device hooks hand core: ``plain``, or a routing one while pools are in use."""
    if not _open_blocks:
        return plain
    index, cuda = device.index, alloc.backing is not None

    def new_storage(array):
        seg = _current(index)
        if seg is None:
            return plain(array)
        if cuda:
            s = plain(array)        # the accounting; the memory came from the pool through CuPy's hook
            pooled = object.__new__(_PoolCudaNpuStorage)
            for name in ("_size", "_requested", "_alloc", "_root", "_device"):
                setattr(pooled, name, getattr(s, name))
            # its accounting moved to the pooled storage: the plain class's __del__ then does nothing (a per-size
            # class would log the free)
            s.__class__ = _CudaNpuStorage
            s._alloc = None
            pooled._pool_seg = seg
            return pooled
        if runtime.in_bad_fork:
            runtime.check_fork()
        n = array.nbytes
        size = alloc.malloc(n, seg.cache)     # a freed segment of the pool's, or a new one reserved for it
        s = object.__new__(_PoolNpuStorage)
        s._size, s._requested, s._alloc, s._root, s._device, s._pool_seg = size, n, alloc, array, device, seg
        return s
    return new_storage


def _cupy_routing_malloc(nbytes):
    """CuPy's allocator while pools are open: a thread inside ``use_mem_pool`` takes its segments from the pool."""
    hook = memory.cupy_hook
    cp = hook.cupy
    dev = cp.cuda.runtime.getDevice()
    seg = _current(dev)
    if seg is None or nbytes <= 0:
        return hook.malloc(nbytes)
    from .memory import _Lease
    stream = cp.cuda.get_current_stream().ptr
    a = seg.alloc
    size = ((nbytes + 511) >> 9) << 9 if nbytes <= _allocator._SMALL_LIMIT else \
        -(-nbytes // _allocator._LARGE_ROUND) * _allocator._LARGE_ROUND
    try:
        block = seg.cache[(size, stream)].pop()
    except (KeyError, IndexError):
        block = a._reserve(size, nbytes)
    return hook._pointer(hook._unowned(block.ptr, size, _Lease(seg, size, stream, block), dev), 0)


# --- the caching switch --------------------------------------------------------------------------------------

_caching = True


def _release_freed(index: int, nbytes: int) -> None:
    """Allocation observer while caching is off: a freed segment leaves the cache at once."""
    if nbytes >= 0:
        return
    alloc = memory.allocator(index)
    size = -nbytes
    if alloc.backing is not None:       # cuda mode: the block itself comes back later (give_back releases it)
        return
    with alloc._lock:
        held = alloc._cache.get(size)
        if held:
            try:
                held.pop()
            except IndexError:
                return
            pool = 1 if size <= _allocator._SMALL_LIMIT else 2
            alloc._reserved -= size
            alloc._drop(alloc.counters["reserved_bytes"], pool, size)
            alloc._drop(alloc.counters["segment"], pool, 1)


def caching_allocator_is_enabled() -> bool:
    return _caching


def caching_allocator_enable(value: bool = True) -> None:
    """Turn the npu allocator's cache of freed segments on or off (off: empties it now)."""
    global _caching
    value = bool(value)
    if value == _caching:
        return
    _caching = value
    for a in memory.allocators or ():
        if a.backing is not None:      # cuda mode: a block CuPy frees goes back to the device, not the cache
            if value:
                a.__dict__.pop("give_back", None)
            else:
                a.give_back = _releasing_give_back(a)
    if value:
        _allocator.remove_allocation_observer(_release_freed)
        return
    _allocator.add_allocation_observer(_release_freed)
    for a in memory.allocators or ():
        a.empty_cache()


def _releasing_give_back(alloc):
    def give_back(size, stream, block):
        with alloc._lock:
            pool = 1 if size <= _allocator._SMALL_LIMIT else 2
            alloc._reserved -= size
            alloc._drop(alloc.counters["reserved_bytes"], pool, size)
            alloc._drop(alloc.counters["segment"], pool, 1)
        del block
        alloc.backing.release()
    return give_back


# --- the snapshot ------------------------------------------------------------------------------------------

def _segment(index, address, size, requested, stream, pool_id, active):
    block = {"address": address, "size": size, "requested_size": requested if active else 0,
             "state": "active_allocated" if active else "inactive", "frames": []}
    return {"device": index, "address": address, "total_size": size, "allocated_size": size if active else 0,
            "active_size": size if active else 0, "requested_size": requested if active else 0, "stream": stream,
            "segment_type": "small" if size <= _allocator._SMALL_LIMIT else "large", "segment_pool_id": pool_id,
            "is_expandable": False, "frames": [], "blocks": [block]}


def _cached(index, cache, pool_id, out) -> None:
    for key, held in list(cache.items()):
        size, stream = key if isinstance(key, tuple) else (key, 0)
        for block in list(held):
            # an emulated cached segment is bookkeeping only: no memory, so no address
            out.append(_segment(index, getattr(block, "ptr", 0), size, 0, stream, pool_id, False))


def memory_snapshot(mempool_id=None, include_traces=True) -> list:
    """torch.cuda.memory_snapshot: one segment per npu allocation (npusim never splits a segment) and per cached
    free segment, every device's, with torch's fields; ``mempool_id`` keeps one pool's."""
    if not runtime.initialized or memory.allocators is None:
        return []
    from .memory import _Lease
    want = tuple(mempool_id) if mempool_id is not None else None
    out = []
    storages, leases = [], []
    for obj in gc.get_objects():
        if isinstance(obj, NpuStorage) and getattr(obj, "_alloc", None) is not None and obj._size:
            storages.append(obj)
        elif isinstance(obj, _Lease):
            leases.append(obj)
    for st in storages:
        seg = getattr(st, "_pool_seg", None)
        pool_id = seg.pool_id if seg is not None else (0, 0)
        if want is None or pool_id == want:
            out.append(_segment(st._alloc.index, st.data_ptr(), st._size, st._requested, 0, pool_id, True))
    # cuda mode: blocks CuPy holds for no tensor (a kernel's own buffers) are leases at other addresses
    tensor_addresses = {st.data_ptr() for st in storages}
    for lease in leases:
        ptr = lease.block.ptr
        if not ptr or ptr in tensor_addresses:
            continue
        owner = lease.alloc
        pool_id = owner.pool_id if isinstance(owner, _PoolSegments) else (0, 0)
        if want is None or pool_id == want:
            index = owner.alloc.index if isinstance(owner, _PoolSegments) else owner.index
            out.append(_segment(index, ptr, lease.size, lease.size, lease.stream, pool_id, True))
    for a in memory.allocators:
        if want is None:
            _cached(a.index, a._cache, (0, 0), out)
    for pool_segs in _live_pools():
        if want is None or pool_segs.pool_id == want:
            _cached(pool_segs.alloc.index, pool_segs.cache, pool_segs.pool_id, out)
    out.sort(key=lambda s: (s["device"], s["address"]))
    return out


def _live_pools():
    for obj in gc.get_objects():
        if isinstance(obj, _PoolSegments):
            yield obj
