"""The release of an npu storage when it dies (backend/storage.py): storages of one requested size share a class
whose ``__del__`` is a frameless chain; the statistics, the cache, resize_ and allocation observers read as
before. Runs in both modes (the chain of cuda mode only logs: CuPy's memory owner gives the segment back)."""
from __future__ import annotations

import gc

import pytest

import npusim
from npusim.backend import allocator as A
from npusim.backend import storage as S

npu = npusim.npu


@pytest.fixture
def quiet():
    npu.init()
    gc.collect()
    npu.empty_cache()
    yield


def _stats():
    s = npu.memory_stats()
    return (s["allocated_bytes.all.current"], s["requested_bytes.all.current"], s["allocation.all.current"],
            s["segment.all.current"])


def test_storages_of_one_size_share_a_class_and_free_exactly(quiet):
    base = _stats()
    xs = [npusim.empty(3, device="npu") for _ in range(5)]      # 12 bytes each
    assert len({type(x.untyped_storage()) for x in xs}) == 1
    st = xs[0].untyped_storage()
    assert isinstance(st, S.NpuStorage) and type(st).__name__ in ("NpuStorage", "_CudaNpuStorage")
    after = _stats()
    assert after[0] - base[0] == 5 * 512 and after[1] - base[1] == 5 * 12 and after[2] - base[2] == 5
    del xs, st
    assert _stats()[:3] == base[:3]
    reserved = npu.memory_reserved()
    y = npusim.empty(3, device="npu")                            # a cached segment: nothing new reserved
    assert npu.memory_reserved() == reserved
    del y


def test_many_tiny_ops_leave_the_statistics_where_they_were(quiet):
    x = npusim.ones(2, 2, device="npu")
    base = _stats()
    for _ in range(20000):      # past the log's fold
        (x + x).sum()
    assert _stats()[:3] == base[:3]
    peak = npu.memory_stats()["allocated_bytes.all.peak"]
    assert peak >= base[0] + 2 * 512


def test_resize_takes_the_accounting_of_the_new_size(quiet):
    base = npu.memory_allocated()
    x = npusim.empty(3, device="npu")                            # 12 bytes
    st = x.untyped_storage()
    st.resize_(4000)
    assert npu.memory_allocated() - base == 4096
    assert npu.memory_stats()["requested_bytes.all.current"] >= 4000
    del x, st
    gc.collect()
    assert npu.memory_allocated() == base


def test_observers_see_frees_of_storages_made_before_them(quiet):
    x = npusim.empty(3, device="npu")
    seen = []

    def observe(index, nbytes):
        seen.append(nbytes)

    A.add_allocation_observer(observe)
    try:
        del x
        y = npusim.empty(5, device="npu")
        del y
    finally:
        A.remove_allocation_observer(observe)
    assert seen == [-512, 512, -512]
    z = npusim.empty(3, device="npu")
    base = npu.memory_allocated()
    del z
    assert npu.memory_allocated() == base - 512 and seen == [-512, 512, -512]
