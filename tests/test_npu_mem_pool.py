"""npu memory pools and allocator settings: ``MemPool`` / ``use_mem_pool`` route allocations to a pool's own
segments with the statistics kept right, ``memory_snapshot`` lists the allocator's real blocks in torch's
format, the caching switch, the allocator backend, pinned host memory statistics."""
from __future__ import annotations

import gc
import inspect
import threading

import pytest

import npusim

npu = npusim.npu
pytestmark = pytest.mark.skipif(not npu.is_available(), reason="needs the npu")
SEGMENT_KEYS = {"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream",
                "segment_type", "segment_pool_id", "is_expandable", "frames", "blocks"}
BLOCK_KEYS = {"address", "size", "requested_size", "state", "frames"}


@pytest.fixture(autouse=True)
def clean_cache():
    npusim.ones(1, device="npu")
    gc.collect()
    npu.empty_cache()
    yield
    gc.collect()
    npu.empty_cache()


def test_pool_ids_and_use_count():
    a, b = npu.MemPool(), npu.MemPool()
    assert a.id[0] == 0 and b.id[0] == 0 and a.id != b.id
    assert a.use_count() == 1 and a.allocator is None
    with npu.use_mem_pool(a):
        assert a.use_count() == 2
        with npu.use_mem_pool(a):
            assert a.use_count() == 3
    assert a.use_count() == 1
    with pytest.raises(TypeError):
        npu.use_mem_pool(object()).__enter__()


def test_allocations_in_the_block_come_from_the_pool():
    pool = npu.MemPool()
    base_alloc, base_res = npu.memory_allocated(), npu.memory_reserved()
    outside = npusim.ones(100, device="npu")
    with npu.use_mem_pool(pool):
        y = npusim.ones(3000, device="npu")
        z = y * 2
    after_outside = npu.memory_allocated()
    assert after_outside - base_alloc == 512 + 2 * 12288          # the statistics count pool memory as any other
    snap = pool.snapshot()
    assert [(s["total_size"], s["segment_pool_id"]) for s in snap] == [(12288, pool.id)] * 2
    assert all(s["blocks"][0]["state"] == "active_allocated" for s in snap)
    assert {s["address"] for s in snap} == {y.data_ptr(), z.data_ptr()}
    del y
    npu.empty_cache()       # a free pool segment stays the pool's: empty_cache leaves it reserved
    states = sorted(s["blocks"][0]["state"] for s in pool.snapshot())
    assert states == ["active_allocated", "inactive"]
    assert npu.memory_reserved() - base_res == 512 + 2 * 12288
    with npu.use_mem_pool(pool):        # the pool serves its own free segment again
        again = npusim.ones(3000, device="npu")
    assert npu.memory_reserved() - base_res == 512 + 2 * 12288
    del pool, again, z, outside
    gc.collect()
    npu.empty_cache()       # the pool is gone: its segments went to the allocator's cache, released here
    assert npu.memory_allocated() == base_alloc and npu.memory_reserved() == base_res


def test_other_threads_do_not_allocate_from_the_pool():
    pool = npu.MemPool()
    made = []
    with npu.use_mem_pool(pool):
        t = threading.Thread(target=lambda: made.append(npusim.ones(3000, device="npu")))
        t.start()
        t.join()
        mine = npusim.ones(3000, device="npu")
    assert [s["address"] for s in pool.snapshot()] == [mine.data_ptr()]
    assert made[0].data_ptr() not in {s["address"] for s in pool.snapshot()}


def test_memory_snapshot_lists_every_block():
    x = npusim.ones(1000, device="npu")
    big = npusim.ones(1 << 20, device="npu")
    snap = npu.memory_snapshot()
    by_address = {s["address"]: s for s in snap}
    for t, kind in ((x, "small"), (big, "large")):
        seg = by_address[t.data_ptr()]
        assert set(seg) == SEGMENT_KEYS and set(seg["blocks"][0]) == BLOCK_KEYS
        assert seg["segment_type"] == kind and seg["segment_pool_id"] == (0, 0)
        assert seg["requested_size"] == t.nbytes and seg["total_size"] >= t.nbytes
    if npu.runtime_mode() == "emulation":   # cuda mode on the CuPy stand-in: its kernels' buffers have no address
        assert sum(s["total_size"] for s in snap) == npu.memory_reserved()
        assert sum(s["allocated_size"] for s in snap) == npu.memory_allocated()
    del big, t
    cached = [s for s in npu.memory_snapshot() if s["blocks"][0]["state"] == "inactive"]
    assert [s["total_size"] for s in cached] == [4 << 20]
    assert npu.memory_snapshot(mempool_id=(0, 123456)) == []


def test_caching_switch():
    with npu.caching_allocator_disabled():
        a = npusim.ones(10000, device="npu")
        held = npu.memory_reserved()
        del a
        assert npu.memory_reserved() == held - 40448      # released at once
    b = npusim.ones(10000, device="npu")
    held = npu.memory_reserved()
    del b
    assert npu.memory_reserved() == held                # cached again
    npu.caching_allocator_enable(True)


def test_allocator_backend_and_swapping():
    assert npu.get_allocator_backend() == "native"
    with pytest.raises(RuntimeError, match="Can't swap an already initialized allocator"):
        npu.change_current_allocator(npu._get_current_allocator())
    with pytest.raises(AttributeError):
        npu.change_current_allocator(object())


def test_host_memory_stats_are_torch_shaped():
    nested = npu.host_memory_stats_as_nested_dict()
    for name in ("allocations", "allocated_bytes", "active_requests", "active_bytes"):
        assert set(nested[name]) == {"current", "peak", "allocated", "freed"}
        assert nested[name]["current"] == nested[name]["allocated"] - nested[name]["freed"] >= 0
    assert nested["num_host_alloc"] >= nested["num_host_free"] >= 0
    assert set(nested["host_alloc_time"]) == {"total", "max", "min", "count", "avg"}
    flat = npu.host_memory_stats()
    assert list(flat) == sorted(flat) and "allocated_bytes.current" in flat and "host_free_time.avg" in flat
    npu.reset_peak_host_memory_stats()
    npu.reset_accumulated_host_memory_stats()
    after = npu.host_memory_stats()
    assert after["allocated_bytes.current"] == flat["allocated_bytes.current"]
    assert after["allocated_bytes.allocated"] == after["num_host_alloc"] == 0


def test_pinning_a_tensor_counts_in_host_memory_stats_until_it_is_freed():
    import gc
    gc.collect()
    before = npu.host_memory_stats()
    x = npusim.arange(1000, dtype=npusim.float32).pin_memory()
    assert x.is_pinned() and x[999].item() == 999.0
    s = npu.host_memory_stats()
    assert s["allocated_bytes.current"] - before["allocated_bytes.current"] == 4000
    assert s["allocations.current"] - before["allocations.current"] == 1
    assert s["num_host_alloc"] - before["num_host_alloc"] == 1
    assert s["allocated_bytes.peak"] >= s["allocated_bytes.current"]
    del x
    gc.collect()
    s = npu.host_memory_stats()
    assert s["allocated_bytes.current"] == before["allocated_bytes.current"]
    assert s["num_host_free"] - before["num_host_free"] == 1


def test_host_memory_counters_move_with_pinned_blocks():
    from npusim.backend import host_memory
    npu.reset_accumulated_host_memory_stats()
    base = npu.host_memory_stats()["allocated_bytes.current"]     # blocks other tests still hold
    host_memory.record_alloc(4096)
    try:
        s = npu.host_memory_stats()
        assert (s["allocated_bytes.current"] - base, s["allocations.allocated"], s["num_host_alloc"]) == (4096, 1, 1)
    finally:
        host_memory.record_free(4096)
    s = npu.host_memory_stats()
    assert (s["allocated_bytes.current"], s["allocated_bytes.peak"] >= base + 4096, s["allocated_bytes.freed"]) \
        == (base, True, 4096)
    npu.reset_peak_host_memory_stats()
    npu.reset_accumulated_host_memory_stats()
    s = npu.host_memory_stats()
    assert s["allocated_bytes.peak"] == s["allocated_bytes.current"] == base
    assert s["allocated_bytes.allocated"] == s["allocated_bytes.freed"] == s["num_host_alloc"] == 0


def test_graph_capture_into_a_mem_pool_id(device):
    pool = npu.MemPool()
    x = npusim.ones(2, device="npu")
    g = npu.CUDAGraph()
    with npu.graph(g, pool=pool.id):
        y = x + npusim.ones(2, device=device).to("npu")
    assert g.pool() == pool.id
    x.fill_(3.0)
    g.replay()
    assert y.tolist() == [4.0, 4.0]


@pytest.mark.oracle
def test_signatures_match_torch(torch):
    def params(fn):
        return [(p.name, p.default, p.kind) for p in inspect.signature(fn).parameters.values()]
    for name in ("memory_snapshot", "caching_allocator_enable", "caching_allocator_disabled",
                 "get_allocator_backend", "change_current_allocator", "host_memory_stats",
                 "host_memory_stats_as_nested_dict", "reset_accumulated_host_memory_stats",
                 "reset_peak_host_memory_stats", "use_mem_pool"):
        assert params(getattr(npu, name)) == params(getattr(torch.cuda, name)), name
    assert params(npu.MemPool.__init__) == params(torch.cuda.MemPool.__init__)
    assert params(npu.MemPool.snapshot) == params(torch.cuda.MemPool.snapshot)
    assert torch.cuda.host_memory_stats_as_nested_dict() == {} or torch.cuda.is_initialized()
