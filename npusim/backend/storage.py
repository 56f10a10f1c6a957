"""Storage of npu tensors: an UntypedStorage that returns its bytes to the allocator when it dies."""
from __future__ import annotations

from ..privateuse1 import UntypedStorage
from . import allocator as _allocator


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


def _restore(data: bytes, device: str) -> UntypedStorage:
    """An npu storage from its pickled bytes (pickling goes through the host, as torch's does)."""
    return UntypedStorage(data).to(device=device)


def storage_maker(device, allocator, runtime):
    """``f(array) -> NpuStorage`` for new arrays on ``device``: core calls it for every npu array it makes.

    This is the per-op hot path of the npu: one flat function, its collaborators
    bound as defaults, with ``DeviceAllocator.malloc``'s fast path inlined (take a
    cached segment, log the event); reserving new memory, folding a full log and
    telling observers stay in the allocator.
    """
    def new_storage(array, _alloc=allocator, _cache=allocator._cache, _log=allocator._log, _dev=device,
                    _rt=runtime, _new=object.__new__, _cls=NpuStorage, _mod=_allocator,
                    _small=_allocator._SMALL_LIMIT, _large=_allocator._LARGE_ROUND, _fold=_allocator._FOLD_EVERY):
        if _rt.in_bad_fork:
            _rt.check_fork()
        n = array.nbytes
        if n <= _small:
            size = ((n + 511) >> 9) << 9
        else:
            size = -(-n // _large) * _large
        if size:
            try:
                _cache[size].pop()      # atomic: two threads never take the same cached segment
            except (KeyError, IndexError):
                _alloc._reserve(size, n)    # may raise OutOfMemoryError: nothing is accounted then
            _log.append(n)
            if len(_log) >= _fold or _mod._allocation_observers:
                _alloc._after_malloc(size)
        s = _new(_cls)
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
    def new_storage(array, _alloc=allocator, _log=allocator._log, _dev=device, _rt=runtime, _new=object.__new__,
                    _cls=_CudaNpuStorage, _mod=_allocator, _small=_allocator._SMALL_LIMIT,
                    _large=_allocator._LARGE_ROUND, _fold=_allocator._FOLD_EVERY):
        if _rt.in_bad_fork:
            _rt.check_fork()
        n = array.nbytes
        if n <= _small:
            size = ((n + 511) >> 9) << 9
        else:
            size = -(-n // _large) * _large
        if size:
            _log.append(n)
            if len(_log) >= _fold or _mod._allocation_observers:
                _alloc._after_malloc(size)
        s = _new(_cls)
        s._size = size
        s._requested = n
        s._alloc = _alloc
        s._root = array
        s._device = _dev
        return s
    return new_storage
