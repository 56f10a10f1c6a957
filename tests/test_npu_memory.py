"""npu memory: the emulated caching allocator's torch.cuda-style statistics, ``empty_cache``, the
per-process fraction, and out-of-memory errors that leave the device usable.

Out-of-memory scenarios run in fresh interpreters with a small NPUSIM_DEVICE_MEMORY and an
address-space limit, so an op that let NumPy allocate its huge result first would fail with
NumPy's MemoryError instead of the npu's OutOfMemoryError.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

import npusim
from npusim.backend.allocator import DeviceAllocator, OutOfMemoryError

ROOT = Path(__file__).resolve().parents[1]
npu = npusim.npu
MiB = 1 << 20


def run_fresh(code: str, env=None) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    full.update(env or {})
    full["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=full)
    assert r.returncode == 0, r.stderr
    return r.stdout


# --- allocated vs reserved, as torch.cuda counts them -------------------------------------------------------

def test_allocation_rounds_to_512_bytes_and_freeing_lowers_allocated(quiet_npu_memory):
    base, base_count = npu.memory_allocated(), npu.memory_stats()["allocation.all.current"]
    x = npusim.empty(1000, device="npu")       # 4000 bytes
    assert npu.memory_allocated() - base == 4096
    assert npu.memory_stats()["allocation.all.current"] == base_count + 1
    assert npu.memory_stats()["requested_bytes.all.current"] - npu.memory_stats()["allocated_bytes.all.current"] \
        <= 0
    del x
    assert npu.memory_allocated() == base
    assert npu.memory_stats()["allocation.all.current"] == base_count


def test_freed_blocks_stay_reserved_until_empty_cache(quiet_npu_memory):
    base_reserved = npu.memory_reserved()
    x = npusim.empty(3 * MiB // 4, device="npu")     # 3 MiB: a large-pool block in a 4 MiB segment
    allocated = npu.memory_allocated()
    assert npu.memory_reserved() - base_reserved == 4 * MiB
    del x
    assert npu.memory_allocated() == allocated - 3 * MiB
    assert npu.memory_reserved() - base_reserved == 4 * MiB       # cached for reuse
    y = npusim.empty(3 * MiB // 4, device="npu")                 # reuses the cached segment
    assert npu.memory_reserved() - base_reserved == 4 * MiB
    del y
    npu.empty_cache()
    assert npu.memory_reserved() == base_reserved


def test_zero_size_tensors_and_views_hold_no_new_memory(quiet_npu_memory):
    base = npu.memory_allocated()
    e = npusim.empty(0, device="npu")
    assert npu.memory_allocated() == base
    x = npusim.ones(256, device="npu")
    with_x = npu.memory_allocated()
    views = [x.view(16, 16), x[10:], x.view(16, 16).t(), x.unsqueeze(0), x.detach()]
    assert npu.memory_allocated() == with_x
    del x
    assert npu.memory_allocated() == with_x   # the views keep the storage alive
    del views
    assert npu.memory_allocated() == base
    del e


def test_peaks_include_temporaries_and_reset(quiet_npu_memory):
    x = npusim.ones(MiB // 4, device="npu")     # 1 MiB
    npu.reset_peak_memory_stats()
    start = npu.memory_allocated()
    assert npu.max_memory_allocated() == start
    y = (x + 1) * 2                             # the temporary x + 1 is freed before the statement ends
    assert npu.memory_allocated() == start + MiB
    assert npu.max_memory_allocated() == start + 2 * MiB
    del y
    npu.reset_peak_memory_stats()
    assert npu.max_memory_allocated() == start
    assert npu.max_memory_reserved() == npu.memory_reserved()
    del x


def test_accumulated_counts_and_their_reset(quiet_npu_memory):
    npu.reset_accumulated_memory_stats()
    s = npu.memory_stats()
    assert s["allocation.all.allocated"] == s["allocation.all.freed"] == 0
    for _ in range(3):
        npusim.empty(100, device="npu")
    s = npu.memory_stats()
    assert s["allocation.all.allocated"] == 3 and s["allocation.all.freed"] == 3
    assert s["allocated_bytes.all.allocated"] == 3 * 512 == s["allocated_bytes.small_pool.allocated"]
    assert s["allocated_bytes.large_pool.allocated"] == 0
    npu.reset_accumulated_memory_stats()
    assert npu.memory_stats()["allocated_bytes.all.freed"] == 0


def test_memory_stats_has_torch_cuda_keys():
    s = npu.memory_stats()
    for metric in ("allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes", "allocation", "segment",
                   "active", "inactive_split", "inactive_split_bytes"):
        for pool in ("all", "large_pool", "small_pool"):
            for field in ("current", "peak", "allocated", "freed"):
                assert f"{metric}.{pool}.{field}" in s
    for key in ("num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free", "max_split_size"):
        assert key in s
    assert list(s) == sorted(s)
    assert all(isinstance(v, int) for v in s.values())
    assert s["active_bytes.all.current"] == s["allocated_bytes.all.current"]


def test_devices_count_their_memory_separately(quiet_npu_memory):
    b0, b1 = npu.memory_allocated(0), npu.memory_allocated(1)
    x = npusim.empty(MiB // 4, device="npu:1")
    assert npu.memory_allocated(1) - b1 == MiB and npu.memory_allocated(0) == b0
    assert npu.memory_allocated("npu:1") == npu.memory_allocated(npusim.device("npu", 1))
    with npu.device(1):
        assert npu.memory_allocated() == npu.memory_allocated(1)
    del x


# the emulation's model; on a GPU free is the driver's figure, which other contexts move too (test_cuda_mode_memory.py)
@pytest.mark.emulation_only
def test_mem_get_info_reports_free_as_capacity_minus_reserved(quiet_npu_memory):
    free, total = npu.mem_get_info()
    assert total == npu.get_device_properties().total_memory
    assert free == total - npu.memory_reserved()
    x = npusim.empty(MiB, device="npu")        # 4 MiB
    assert npu.mem_get_info()[0] == free - 4 * MiB
    del x


def test_memory_summary_is_a_table():
    text = npu.memory_summary()
    assert "npusim npu memory summary, device ID 0" in text
    for row in ("Allocated memory", "Requested memory", "npu reserved memory", "Allocations", "from large pool"):
        assert row in text
    assert "from large pool" not in npu.memory_summary(abbreviated=True)
    assert "device ID 1" in npu.memory_summary(1)


def test_ops_account_their_results_once(quiet_npu_memory):
    x = npusim.randn(64, 64, device="npu")
    base = npu.memory_allocated()
    results = [x @ x, x.sum(0), x.t().contiguous(), x.to(npusim.float64), x[x > 0], npusim.cat([x, x])]
    expected = sum(-(-r.numel() * r.element_size() // 512) * 512 for r in results)
    assert npu.memory_allocated() - base == expected
    del results
    assert npu.memory_allocated() == base


@pytest.mark.parametrize("fraction, err, message", [
    (2.0, ValueError, r"^Invalid fraction value: 2.0. Allowed range: 0~1$"),
    (-0.5, ValueError, r"^Invalid fraction value: -0.5. Allowed range: 0~1$"),
    (1, TypeError, r"^Invalid type for fraction argument, must be `float`$"),
])
def test_per_process_memory_fraction_bad_values(fraction, err, message):
    with pytest.raises(err, match=message):
        npu.set_per_process_memory_fraction(fraction)


# --- the allocator itself -------------------------------------------------------------------------------------

def test_allocator_peaks_follow_the_order_of_events():
    a = DeviceAllocator(0, 64 * MiB)
    s1 = a.malloc(1000)
    s2 = a.malloc(3000)
    a.free(s1, 1000)
    s3 = a.malloc(100)
    st = a.memory_stats()
    assert st["allocated_bytes.all.peak"] == 1024 + 3072
    assert st["allocated_bytes.all.current"] == 3072 + 512
    assert st["requested_bytes.all.current"] == 3100
    assert st["segment.all.current"] == 3 and st["reserved_bytes.all.current"] == 1024 + 3072 + 512
    a.free(s2, 3000)
    a.free(s3, 100)
    assert a.allocated == 0 and a.reserved == 1024 + 3072 + 512
    a.empty_cache()
    assert a.reserved == 0 and a.memory_stats()["num_device_free"] == 3


def test_allocator_statistics_stay_exact_across_many_events():
    a = DeviceAllocator(0, 1 << 40)
    sizes = np.random.default_rng(0).integers(1, 3 * MiB, 20000)
    live, peak, current = [], 0, 0
    for i, n in enumerate(sizes):
        live.append((a.malloc(int(n)), int(n)))
        current += -(-int(n) // 512) * 512
        if i % 3 == 2:
            size, m = live.pop(0)
            a.free(size, m)
            peak = max(peak, current)
            current -= -(-m // 512) * 512
        peak = max(peak, current)
    st = a.memory_stats()
    assert st["allocated_bytes.all.current"] == current
    assert st["allocated_bytes.all.peak"] == peak
    assert st["allocation.all.current"] == len(live)


def test_allocator_is_exact_under_threads():
    a = DeviceAllocator(0, 1 << 40)

    def work(seed):
        rng = np.random.default_rng(seed)
        held = []
        for n in rng.integers(1, 4096, 3000):
            held.append((a.malloc(int(n)), int(n)))
            if len(held) > 5:
                a.free(*held.pop(0))
        for h in held:
            a.free(*h)
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st = a.memory_stats()
    assert st["allocated_bytes.all.current"] == 0 and st["allocation.all.current"] == 0
    assert st["allocation.all.allocated"] == st["allocation.all.freed"] == 12000
    a.empty_cache()
    assert a.reserved == 0 and a.memory_stats()["segment.all.current"] == 0


def test_allocator_out_of_memory_message_and_recovery():
    a = DeviceAllocator(3, 10 * MiB)
    held = a.malloc(6 * MiB)
    with pytest.raises(OutOfMemoryError) as e:
        a.malloc(5 * MiB)
    assert str(e.value) == (
        "npu out of memory. Tried to allocate 5.00 MiB. npu 3 has a total capacity of 10.00 MiB of which 4.00 MiB "
        "is free. Of the allocated memory 6.00 MiB is allocated by npusim, and 0 bytes is reserved by npusim but "
        f"unallocated. Requested: {5 * MiB} bytes, allocated: {6 * MiB} bytes, reserved: {6 * MiB} bytes, free: "
        f"{4 * MiB} bytes. The NPUSIM_DEVICE_MEMORY environment variable sets an emulated npu's capacity (16GiB by "
        "default): run with NPUSIM_DEVICE_MEMORY=32MiB (say) to try a larger device; on a GPU the npu has the GPU's "
        "own memory.")
    assert a.allocated == 6 * MiB and a.memory_stats()["num_ooms"] == 1
    a.free(held, 6 * MiB)
    assert a.malloc(5 * MiB) == 6 * MiB    # 5 MiB fits the cached 6 MiB segment
    a.free(6 * MiB, 5 * MiB)
    assert a.malloc(7 * MiB) == 8 * MiB    # the cached segment is released first, then 8 MiB fits
    assert a.memory_stats()["num_alloc_retries"] == 2 and a.reserved == 8 * MiB


# --- out of memory on the device (fresh interpreters with a 64 MiB npu) --------------------------------------

OOM_PRELUDE = """
    import resource
    import npusim
    npu = npusim.npu
    resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))   # NumPy making a 37 GiB result would fail
    x = npusim.ones(100_000, device="npu")
    base = npu.memory_allocated()

    def attempt(name, fn):
        try:
            fn()
            print(name, "no error")
            return
        except npu.OutOfMemoryError as e:
            detail = "Requested: " in str(e)
        except MemoryError as e:
            print(name, "host MemoryError", e)
            return
        # the error's traceback (and the op's inputs it holds) is gone here
        print(name, "OutOfMemoryError", detail, npu.memory_allocated() == base)
"""


def test_out_of_memory_is_raised_before_numpy_allocates_a_huge_result():
    out = run_fresh(OOM_PRELUDE + """
    attempt("empty", lambda: npusim.empty(10 ** 9, device="npu"))
    attempt("outer", lambda: npusim.outer(x, x))
    attempt("broadcast", lambda: x[:, None] * x[None, :])
    attempt("compare", lambda: x[:, None] < x[None, :])
    attempt("matmul", lambda: x[:, None] @ x[None, :])
    attempt("mm", lambda: npusim.mm(x[:, None], x[None, :]))
    attempt("addmm", lambda: npusim.addmm(npusim.zeros(1, device="npu"), x[:, None], x[None, :]))
    attempt("bmm", lambda: npusim.bmm(x[None, :, None], x[None, None, :]))
    attempt("where", lambda: npusim.where(x[:, None] > 0, x[None, :], 0.0))
    attempt("expand copy", lambda: x.expand(100_000, 100_000).contiguous())
    attempt("exp of expand", lambda: x.expand(100_000, 100_000).exp())
    attempt("repeat", lambda: x.repeat(100_000))
    attempt("index_select", lambda: x.index_select(0, npusim.zeros(10 ** 9 // 4, dtype=npusim.int8,
                                                                   device="npu").long()))
    attempt("to npu", lambda: npusim.ones(50_000_000).to("npu"))
    print("ooms", npu.memory_stats()["num_ooms"])
    y = npusim.ones(1000, device="npu") + x[:1000]
    print("still usable", y.sum().item(), npu.memory_allocated() - base)
    """, {"NPUSIM_DEVICE_MEMORY": "64MiB"})
    lines = out.splitlines()
    for name in ("empty", "outer", "broadcast", "compare", "matmul", "mm", "addmm", "bmm", "where", "expand copy",
                 "exp of expand", "repeat", "index_select", "to npu"):
        assert f"{name} OutOfMemoryError True True" in lines, out
    assert "ooms 14" in lines
    assert "still usable 2000.0 4096" in lines


def test_ops_whose_result_outgrows_their_inputs_raise_out_of_memory_before_numpy_allocates():
    # copies of expanded views, products of sizes, and the CPU fallback's copy of an expanded input: each would
    # take (or fail to take) TiBs of host memory before the device's accounting saw the result
    out = run_fresh(OOM_PRELUDE + """
    import warnings
    import npusim.nn.functional as F
    warnings.simplefilter("ignore")     # the fallback's warning
    z = npusim.zeros(1, device="npu")
    big = x.expand(100_000, 100_000)
    base = npu.memory_allocated()
    attempt("to float64", lambda: z.expand(2 ** 40).to(npusim.float64))
    attempt("float", lambda: z.half().expand(2 ** 40).float())
    attempt("type", lambda: z.expand(2 ** 40).type(npusim.float64))
    attempt("flatten of expand", lambda: big.flatten())
    attempt("cartesian_prod", lambda: npusim.cartesian_prod(x, x))
    attempt("conv_transpose2d", lambda: F.conv_transpose2d(z.reshape(1, 1, 1, 1).expand(1, 1, 100_000, 100_000),
                                                           npusim.zeros(1, 4, 3, 3, device="npu")))
    attempt("conv2d", lambda: F.conv2d(npusim.zeros(1, 1, 1000, 1000, device="npu"),
                                       npusim.zeros(10_000, 1, 1, 1, device="npu")))
    attempt("masked_fill", lambda: big.masked_fill(x > 0, 0.0))
    attempt("unfold", lambda: F.unfold(z.reshape(1, 1, 1, 1).expand(1, 1, 3000, 3000), 30))
    attempt("matrix_exp", lambda: npusim.linalg.matrix_exp(big))
    attempt("multinomial", lambda: npusim.multinomial(x[:2].expand(2 ** 20, 2), 2 ** 20, replacement=True))
    attempt("sort", lambda: npusim.sort(big))
    attempt("nonzero", lambda: npusim.nonzero(big))
    attempt("masked_select", lambda: npusim.masked_select(big, (x > 0).expand(100_000, 100_000)))
    # sizes that fit still work, expanded or not
    print("fits", npusim.sort(x[:10].expand(1000, 10))[0].shape, npusim.nonzero(x[:1000]).shape,
          z.expand(1000).double().dtype, F.unfold(z.reshape(1, 1, 1, 1).expand(1, 1, 30, 30), 3).shape)
    """, {"NPUSIM_DEVICE_MEMORY": "64MiB"})
    lines = out.splitlines()
    for name in ("to float64", "float", "type", "flatten of expand", "cartesian_prod", "conv_transpose2d", "conv2d",
                 "masked_fill", "unfold", "matrix_exp", "multinomial", "sort", "nonzero", "masked_select"):
        assert f"{name} OutOfMemoryError True True" in lines, out
    assert "fits npusim.Size([1000, 10]) npusim.Size([1000, 1]) npusim.float64 npusim.Size([1, 9, 784])" in lines, out


def test_out_of_memory_in_the_middle_of_an_op_leaves_the_device_usable():
    out = run_fresh(OOM_PRELUDE + """
    a = npusim.ones(6000, device="npu")
    with_a = npu.memory_allocated()
    # results of 144 MB: they fit the host but not the 64 MiB device
    for name, fn in [("outer", lambda: npusim.outer(a, a)), ("matmul", lambda: a[:, None] @ a[None, :]),
                     ("softmax of expand", lambda: a.expand(6000, 6000).softmax(-1))]:
        try:
            fn()
        except npu.OutOfMemoryError:
            print(name, "oom", npu.memory_allocated() == with_a)
    b = npusim.outer(a[:2000], a[:2000])     # 16 MB fits
    print("fits", tuple(b.shape), b.sum().item(), npu.memory_allocated() - with_a)
    del b
    print("back", npu.memory_allocated() == with_a)
    """, {"NPUSIM_DEVICE_MEMORY": "64MiB"})
    assert out.splitlines() == ["outer oom True", "matmul oom True", "softmax of expand oom True",
                                "fits (2000, 2000) 4000000.0 16000000", "back True"]


def test_a_request_that_fits_after_emptying_the_cache_succeeds():
    out = run_fresh("""
        import npusim
        npu = npusim.npu
        x = npusim.empty(10 * 2 ** 20, device="npu")    # 40 MiB
        del x                                           # cached: reserved stays 40 MiB
        print(npu.memory_reserved() >> 20)
        y = npusim.empty(12 * 2 ** 20, device="npu")    # 48 MiB: fits only once the cache is released
        s = npu.memory_stats()
        print(npu.memory_reserved() >> 20, s["num_alloc_retries"], s["num_ooms"])
    """, {"NPUSIM_DEVICE_MEMORY": "64MiB"})
    assert out.split() == ["40", "48", "1", "0"]


def test_per_process_memory_fraction_limits_allocations():
    out = run_fresh("""
        import npusim
        npu = npusim.npu
        npu.set_per_process_memory_fraction(0.5)
        try:
            npusim.empty(10 * 2 ** 20, device="npu")    # 40 MiB > half of 64 MiB
        except npu.OutOfMemoryError as e:
            print("oom:", "(this process may use 32.00 MiB of it)" in str(e))
        print(tuple(npusim.empty(10 * 2 ** 20, device="npu:1").shape))   # the other device has no limit
        npu.set_per_process_memory_fraction(1.0)
        print(tuple(npusim.empty(10 * 2 ** 20, device="npu").shape))
    """, {"NPUSIM_DEVICE_MEMORY": "64MiB"})
    assert out.splitlines() == ["oom: True", "(10485760,)", "(10485760,)"]


def test_reading_statistics_does_not_initialise_the_device():
    out = run_fresh("""
        import npusim
        npu = npusim.npu
        npu.empty_cache()
        print(npu.memory_allocated(), npu.max_memory_reserved(), npu.memory_stats(), npu.is_initialized())
        x = npusim.ones(1, device="npu")
        print(npu.memory_allocated(), npu.is_initialized())
    """)
    assert out.split() == ["0", "0", "{}", "False", "512", "True"]


# an empty operand bounds nothing: (n, 0) @ (0, p) is an n x p result, which the capacity check must still see
@pytest.mark.emulation_only
@pytest.mark.parametrize("product", [
    lambda: npusim.zeros(100000, 0, device="npu") @ npusim.zeros(0, 100000, device="npu"),
    lambda: npusim.addmm(npusim.zeros(1, device="npu"), npusim.zeros(100000, 0, device="npu"),
                         npusim.zeros(0, 100000, device="npu")),
    lambda: npusim.bmm(npusim.zeros(4, 50000, 0, device="npu"), npusim.zeros(4, 0, 50000, device="npu")),
], ids=["matmul", "addmm", "bmm"])
def test_products_of_empty_operands_are_refused_past_capacity(product):
    base = npu.memory_allocated()
    with pytest.raises(npu.OutOfMemoryError, match="Tried to allocate 37.25 GiB"):
        product()
    assert npu.memory_allocated() == base
    assert (npusim.zeros(3, 0, device="npu") @ npusim.zeros(0, 4, device="npu")).tolist() == [[0.0] * 4] * 3
