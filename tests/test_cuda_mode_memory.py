"""npu memory in cuda mode reads and acts as in the emulation: the same caching allocator
(backend/allocator.py) accounts every storage, its segments are CuPy's memory, and
``reserved`` is what it holds from CuPy's pool.

These run when the npu is in cuda mode (the CuPy stand-in or a GPU); in the emulation they skip.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import npusim
from npusim.backend.runtime import runtime

pytestmark = pytest.mark.skipif(not npusim.npu.is_available() or runtime.probe() != "cuda",
                                reason="the npu is not in cuda mode")

ROOT = Path(__file__).resolve().parents[1]
npu = npusim.npu
MiB = 1 << 20


def run_fresh(code: str, mode: str, env=None) -> str:
    """Output of ``code`` in a new interpreter with the npu in ``mode`` (cuda: on the CuPy this process uses)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    full.update(env or {})
    path = [str(ROOT)]
    if mode == "cuda":
        import cupy
        path.insert(0, str(Path(cupy.__file__).resolve().parents[1]))
    full["PYTHONPATH"] = os.pathsep.join(path)
    full["NPUSIM_BACKEND"] = mode
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=full)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_memory_stats_has_the_emulations_keys():
    npu.init()
    emulated = json.loads(run_fresh("""
        import json, npusim
        npusim.npu.init()
        print(json.dumps(list(npusim.npu.memory_stats())))
    """, "emulation"))
    stats = npu.memory_stats()
    assert list(stats) == emulated
    assert all(isinstance(v, int) for v in stats.values())


def test_allocating_and_freeing_moves_allocated_by_the_rounded_size(quiet_npu_memory):
    before = npu.memory_stats()
    x = npusim.empty(1000, device="npu")                 # 4000 bytes: a 4096-byte block
    s = npu.memory_stats()
    assert s["allocated_bytes.all.current"] - before["allocated_bytes.all.current"] == 4096
    assert s["allocated_bytes.small_pool.current"] - before["allocated_bytes.small_pool.current"] == 4096
    assert s["requested_bytes.all.current"] - before["requested_bytes.all.current"] == 4000
    assert s["allocation.all.current"] - before["allocation.all.current"] == 1
    assert s["active_bytes.all.current"] == s["allocated_bytes.all.current"]
    del x
    s = npu.memory_stats()
    assert s["allocated_bytes.all.current"] == before["allocated_bytes.all.current"]
    assert s["allocation.all.freed"] - before["allocation.all.freed"] == 1
    big = npusim.empty(3 * MiB // 4 + 1, device="npu")   # 3 MiB + 4 bytes: a large-pool block
    assert npu.memory_stats()["allocated_bytes.large_pool.current"] - \
        before["allocated_bytes.large_pool.current"] == 3 * MiB + 512
    del big
    assert npu.memory_allocated() == before["allocated_bytes.all.current"]


def test_reserved_is_the_memory_cupys_pool_holds_and_empty_cache_returns_it(quiet_npu_memory):
    import cupy
    pool = cupy.get_default_memory_pool()

    def pool_bytes():
        with cupy.cuda.Device(0):
            return pool.total_bytes(), pool.free_bytes()

    total, free = pool_bytes()
    assert free == 0                                    # empty_cache released CuPy's free blocks
    offset = total - npu.memory_reserved()             # what the pool held before the npu allocator ran
    base = npu.memory_reserved()
    x = npusim.empty(3 * MiB // 4, device="npu")        # 3 MiB in a 4 MiB segment
    assert npu.memory_reserved() - base == 4 * MiB and pool_bytes()[0] - offset == npu.memory_reserved()
    del x
    assert npu.memory_reserved() - base == 4 * MiB      # cached by the allocator, still held from CuPy
    assert pool_bytes()[0] - offset == npu.memory_reserved()
    npu.empty_cache()
    assert npu.memory_reserved() == base and pool_bytes() == (total, 0)
    assert npu.mem_get_info()[0] <= npu.mem_get_info()[1] - npu.memory_reserved()


def test_a_cached_segment_is_reused_only_on_its_stream(quiet_npu_memory):
    base = npu.memory_reserved()
    x = npusim.empty(3 * MiB // 4, device="npu")
    del x                                               # cached for the default stream
    with npu.stream(npu.Stream()):
        y = npusim.empty(3 * MiB // 4, device="npu")    # work on another stream may still use it: a new one
        assert npu.memory_reserved() - base == 8 * MiB
        del y
        z = npusim.empty(3 * MiB // 4, device="npu")    # this stream's own cached segment
        assert npu.memory_reserved() - base == 8 * MiB
        del z
    w = npusim.empty(3 * MiB // 4, device="npu")
    assert npu.memory_reserved() - base == 8 * MiB
    del w
    npu.empty_cache()
    assert npu.memory_reserved() == base


def test_out_of_memory_reads_the_same_in_both_modes():
    npu.init()
    capacity = npu.get_device_properties(0).total_memory
    code = f"""
        import npusim
        npu = npusim.npu
        npu.set_per_process_memory_fraction({64 * MiB} / {capacity})    # a 64 MiB budget on either device
        x = npusim.empty(10 * 2 ** 20, device="npu")                  # 40 MiB
        try:
            npusim.empty(8 * 2 ** 20, device="npu")                   # 32 MiB more does not fit
        except npu.OutOfMemoryError as e:
            print(e)
        del x                                                         # cached: reserved stays 40 MiB
        y = npusim.empty(12 * 2 ** 20, device="npu")                  # fits once the cache is released
        s = npu.memory_stats()
        print(npu.memory_reserved(), npu.memory_allocated(), s["num_alloc_retries"], s["num_ooms"])
        print(npu.memory_summary())
    """
    emulated = run_fresh(code, "emulation", {"NPUSIM_DEVICE_MEMORY": str(capacity)})
    cuda = run_fresh(code, "cuda")
    assert cuda == emulated
    assert cuda.startswith("npu out of memory. Tried to allocate 32.00 MiB. npu 0 has a total capacity of ")
    assert cuda.splitlines()[1] == f"{48 * MiB} {48 * MiB} 2 1"


def test_mem_get_info_is_the_devices_free_memory(quiet_npu_memory):
    npu.empty_cache()
    free, total = npu.mem_get_info()
    assert total == npu.get_device_properties().total_memory and 0 < free <= total
    x = npusim.empty(16 * MiB, device="npu")        # 64 MiB, taken from the device, not from a cache
    after, _ = npu.mem_get_info()
    assert after <= free - 64 * MiB
    del x
    npu.empty_cache()
    assert npu.mem_get_info()[0] >= after + 64 * MiB
