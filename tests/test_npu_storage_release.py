"""The release of an npu storage when it dies (backend/storage.py): storages of one requested size share a class
whose ``__del__`` is a frameless chain; the statistics, the cache, resize_ and allocation observers read as
before. Runs in both modes (the chain of cuda mode only logs: CuPy's memory owner gives the segment back)."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

import npusim
from npusim.backend import allocator as A
from npusim.backend import storage as S

npu = npusim.npu
ROOT = Path(__file__).resolve().parents[1]


def _stats():
    s = npu.memory_stats()
    return (s["allocated_bytes.all.current"], s["requested_bytes.all.current"], s["allocation.all.current"],
            s["segment.all.current"])


def test_storages_of_one_size_share_a_class_and_free_exactly(quiet_npu_memory):
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


def test_many_tiny_ops_leave_the_statistics_where_they_were(quiet_npu_memory):
    x = npusim.ones(2, 2, device="npu")
    base = _stats()
    for _ in range(20000):      # past the log's fold
        (x + x).sum()
    assert _stats()[:3] == base[:3]
    peak = npu.memory_stats()["allocated_bytes.all.peak"]
    assert peak >= base[0] + 2 * 512


def test_resize_takes_the_accounting_of_the_new_size(quiet_npu_memory):
    base = npu.memory_allocated()
    x = npusim.empty(3, device="npu")                            # 12 bytes
    st = x.untyped_storage()
    st.resize_(4000)
    assert npu.memory_allocated() - base == 4096
    assert npu.memory_stats()["requested_bytes.all.current"] >= 4000
    del x, st
    gc.collect()
    assert npu.memory_allocated() == base


def test_observers_see_frees_of_storages_made_before_them(quiet_npu_memory):
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


def _reference_counters(events):
    """The allocator's logged counters computed event by event: [current, peak, allocated, freed] per pool."""
    out = {m: [[0, 0, 0, 0] for _ in range(3)] for m in ("allocated_bytes", "requested_bytes", "allocation")}
    for e in events:
        n = abs(e)
        values = {"allocated_bytes": -(-n // 512) * 512, "requested_bytes": n, "allocation": 1}
        for metric, v in values.items():
            for pool in (0, 1 if n <= 1 << 20 else 2):
                row = out[metric][pool]
                if e > 0:
                    row[0] += v
                    row[2] += v
                    row[1] = max(row[1], row[0])
                else:
                    row[0] -= v
                    row[3] += v
    return out


@pytest.mark.parametrize("count", [10, A._FOLD_EVERY, A._FOLD_EVERY + 1, 3 * A._FOLD_EVERY + 5])
@pytest.mark.parametrize("sizes", [(1, 16, 511, 512, 513, 4000), (16, 3 << 20, (1 << 20) + 1, 1 << 20), (5 << 21,)])
def test_the_fold_counts_every_event_in_order(count, sizes):
    import random
    rng = random.Random(count)
    alloc = A.DeviceAllocator(0, 1 << 50)
    live, events = [], []
    for _ in range(count):
        if live and rng.random() < 0.5:
            events.append(-live.pop(rng.randrange(len(live))))
        else:
            live.append(rng.choice(sizes))
            events.append(live[-1])
        alloc._log.append(events[-1])
        if rng.random() < 0.001:
            with alloc._lock:
                alloc._fold()
    with alloc._lock:
        alloc._fold()
    want = _reference_counters(events)
    assert {m: alloc.counters[m] for m in want} == want


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_after_init_gets_a_refusing_storage_maker():
    code = """
import os, numpy as np, npusim
from npusim.core.c10.device_hooks import storage_factory
x = npusim.ones(2, device="npu")
storage_factory(x.device)(np.zeros(2))      # the parent's maker works
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        storage_factory(x.device)(np.zeros(2))
        out = "made"
    except RuntimeError as e:
        out = type(e).__name__
    os.write(w, out.encode())
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
print(os.read(r, 100).decode(), storage_factory(x.device)(np.zeros(2)) is not None)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in sys.path if "cupy_standin" in p]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["NpuRuntimeError", "True"]
