"""Storage of npu tensors: an UntypedStorage that returns its bytes to the allocator when it dies.

Each npu array's storage is accounted when it is made (``storage_maker``) and released when it dies. The release
runs once per npu op, so it costs no Python frame: the storages of one requested size share a class (made on first
use, per device) whose ``__del__`` is a chain of C callables bound to that size, ``next`` over a ``zip`` of ``map``
objects that put the segment back in the allocator's cache and log the free. CPython calls a ``__del__`` that is not
a descriptor without arguments, so the chain needs nothing from the instance. While allocation observers are
installed (the profiler's memory events) those classes fall back to ``NpuStorage.__del__``, which tells them too.
"""
from __future__ import annotations

import functools
import itertools

from ..privateuse1 import UntypedStorage
from . import allocator as _allocator

# Classes made per device at most: a program allocating more distinct sizes gets the plain NpuStorage beyond them.
_CLASSES_PER_DEVICE = 4096


class NpuStorage(UntypedStorage):
    """Bytes on an npu, accounted in that device's allocator."""

    __slots__ = ("_alloc", "_size", "_requested")

    def __del__(self, _mod=_allocator):   # the module is bound here: globals may be gone at interpreter exit
        try:
            alloc = self._alloc
        except AttributeError:  # made without the allocator (never accounted)
            return
        if alloc is None:
            return
        self._alloc = None
        size = self._size
        if size:
            # DeviceAllocator.free, inlined: this runs once per npu array
            try:
                alloc._cache[size].append(None)
            except KeyError:
                alloc._cache.setdefault(size, []).append(None)
            alloc._log.append(-self._requested)
            observers = _mod._allocation_observers
            if observers:
                for fn in observers:
                    fn(alloc.index, -size)

    # Copies are new device memory, accounted on their own (a field-by-field copy would free it twice).
    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return self.clone()

    def __reduce_ex__(self, protocol):
        return _restore, (bytes(self.cpu()._bytes()), str(self.device))


# Storages of these two classes and of their per-size subclasses may trade memory and accounting (resize_).
NpuStorage._accounting_family = NpuStorage


class _CudaNpuStorage(NpuStorage):
    """cuda mode: the storage accounts its bytes; its segment belongs to the CuPy array's memory, which gives
    it back to the allocator when CuPy frees it."""

    __slots__ = ()

    def __del__(self, _mod=_allocator):
        try:
            alloc = self._alloc
        except AttributeError:
            return
        if alloc is None:
            return
        self._alloc = None
        size = self._size
        if size:
            alloc._log.append(-self._requested)
            observers = _mod._allocation_observers
            if observers:
                for fn in observers:
                    fn(alloc.index, -size)


_CudaNpuStorage._accounting_family = _CudaNpuStorage


def _restore(data: bytes, device: str) -> UntypedStorage:
    """An npu storage from its pickled bytes (pickling goes through the host, as torch's does)."""
    return UntypedStorage(data).to(device=device)


segment_of = _allocator.segment_size


# --- per-size classes with a frameless release ---------------------------------------------------------------

_sized_classes: list = []     # (class, its release chain) of every device, for the observers' switch


def _release_chain(alloc, n: int, size: int, cuda: bool):
    """A callable of no arguments, all C, doing what ``__del__`` does for a storage of ``n`` requested bytes: the
    segment back in the cache (emulation; in cuda mode CuPy's memory owner gives it back), ``-n`` in the log."""
    log_free = map(alloc._log.append, itertools.repeat(-n))
    if cuda:
        return functools.partial(next, log_free)
    cached = alloc._cache.setdefault(size, [])   # the list stays: the cache only ever pops and appends in place
    return functools.partial(next, zip(map(cached.append, itertools.repeat(None)), log_free))


def _sized_class(alloc, n: int, cuda: bool):
    """The storage class of ``n`` (> 0) requested bytes on ``alloc``'s device, made on first use (None past the
    limit: the caller uses the plain class)."""
    classes = alloc.storage_classes
    if len(classes) >= _CLASSES_PER_DEVICE:
        return None
    size = segment_of(n)
    base = _CudaNpuStorage if cuda else NpuStorage
    chain = _release_chain(alloc, n, size, cuda)
    namespace = {"__slots__": (), "__module__": __name__, "__qualname__": base.__qualname__,
                 "_segment": size, "_cached": None if cuda else alloc._cache[size]}
    if not _allocator._allocation_observers:
        namespace["__del__"] = chain
    cls = type(base.__name__, (base,), namespace)
    _sized_classes.append((cls, chain))
    classes[n] = cls
    return cls


def _observers_changed() -> None:
    """Allocation observers came or went: the per-size classes release through ``__del__`` while there are any."""
    observed = bool(_allocator._allocation_observers)
    for cls, chain in list(_sized_classes):
        if observed:
            if "__del__" in cls.__dict__:
                del cls.__del__
        else:
            cls.__del__ = chain


_allocator.observer_listeners.append(_observers_changed)


def storage_maker(device, allocator, runtime):
    """``f(array) -> NpuStorage`` for new arrays on ``device``: core calls it for every npu array it makes.

    This is the per-op hot path of the npu: one flat function, its collaborators
    bound as defaults, with ``DeviceAllocator.malloc``'s fast path inlined (take a
    cached segment, log the event); reserving new memory, folding a full log and
    telling observers stay in the allocator. A child forked after the npu initialised
    gets a maker that refuses (the runtime asks for the makers again after such a fork).
    """
    if runtime.in_bad_fork:
        return _refusing(runtime)

    def new_storage(array, _alloc=allocator, _classes=allocator.storage_classes, _log=allocator._log, _dev=device,
                    _new=object.__new__, _mod=_allocator, _fold=_allocator._FOLD_EVERY):
        n = array.nbytes
        try:
            cls = _classes[n]
        except KeyError:
            cls = _sized_class(_alloc, n, False) if n else None
            if cls is None:
                return _plain_storage(array, n, _alloc, _dev, NpuStorage)
        size = cls._segment
        try:
            cls._cached.pop()   # atomic: two threads never take the same cached segment
        except IndexError:
            _alloc._reserve(size, n)    # may raise OutOfMemoryError: nothing is accounted then
        _log.append(n)
        if len(_log) >= _fold or _mod._allocation_observers:
            _alloc._after_malloc(size)
        s = _new(cls)
        s._size = size
        s._requested = n
        s._alloc = _alloc
        s._root = array
        s._device = _dev
        return s
    return new_storage


def cuda_storage_maker(device, allocator, runtime):
    """``storage_maker`` for cuda mode: the same accounting, while the memory itself came from the allocator
    through CuPy's allocator hook when CuPy made the array."""
    if runtime.in_bad_fork:
        return _refusing(runtime)

    def new_storage(array, _alloc=allocator, _classes=allocator.storage_classes, _log=allocator._log, _dev=device,
                    _new=object.__new__, _mod=_allocator, _fold=_allocator._FOLD_EVERY):
        n = array.nbytes
        try:
            cls = _classes[n]
        except KeyError:
            cls = _sized_class(_alloc, n, True) if n else None
            if cls is None:
                return _plain_storage(array, n, _alloc, _dev, _CudaNpuStorage)
        size = cls._segment
        _log.append(n)
        if len(_log) >= _fold or _mod._allocation_observers:
            _alloc._after_malloc(size)
        s = _new(cls)
        s._size = size
        s._requested = n
        s._alloc = _alloc
        s._root = array
        s._device = _dev
        return s
    return new_storage


def _refusing(runtime):
    """The storage maker of a child forked after the npu initialised: every new npu array is refused."""
    def refuse(array):
        runtime.check_fork()
    return refuse


def _plain_storage(array, n: int, alloc, device, cls):
    """A storage of the plain class (empty arrays, sizes past the class limit): accounted by ``alloc.malloc``
    (emulation) or by its log (cuda mode, where CuPy's hook took the segment), released by ``__del__``."""
    if cls is _CudaNpuStorage:
        size = alloc.log_malloc(n, segment_of(n)) if n else 0
    else:
        size = alloc.malloc(n)
    s = object.__new__(cls)
    s._size = size
    s._requested = n
    s._alloc = alloc
    s._root = array
    s._device = device
    return s
