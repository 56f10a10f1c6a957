"""Out of memory on real allocations leaves the device usable.

Two ways to run out: one request larger than the device, then filling the device
chunk by chunk until an allocation fails. Each must raise npusim.npu.OutOfMemoryError;
afterwards the chunks are freed, memory_allocated() is back where it started, the
OOM counter moved, and ordinary work gives the right answer.
"""
from __future__ import annotations

import numpy as np

from .cuda_mode import load_npusim
from .results import PASS, Result, expect

CHUNKS_PER_DEVICE = 16      # the fill uses chunks of 1/16 of the device: few calls, a fine enough last step


def _oversized_request(npusim, total: int) -> str:
    try:
        npusim.empty(total + (1 << 30), dtype=npusim.uint8, device="npu")
    except npusim.npu.OutOfMemoryError as e:
        return str(e).splitlines()[0][:200]
    raise AssertionError(f"allocating {total + (1 << 30)} bytes on a {total}-byte device did not raise")


def _fill_until_oom(npusim, total: int):
    """Chunks allocated before the failure, and the failure's message."""
    chunk = max(total // CHUNKS_PER_DEVICE, 1 << 20)
    held = []
    for _ in range(2 * CHUNKS_PER_DEVICE + 4):     # the device cannot hold more than this many chunks
        try:
            held.append(npusim.empty(chunk, dtype=npusim.uint8, device="npu"))
        except npusim.npu.OutOfMemoryError as e:
            return held, chunk, str(e).splitlines()[0][:200]
    raise AssertionError(f"{len(held)} chunks of {chunk} bytes fit on a device of {total} bytes")


def _ordinary_work_is_right(npusim) -> bool:
    x = npusim.arange(1000, dtype=npusim.float32, device="npu")
    y = (x * 2 + 1).sum().item()
    m = npusim.ones(64, 64, device="npu") @ npusim.ones(64, 64, device="npu")
    return y == float(np.sum(np.arange(1000, dtype=np.float64) * 2 + 1)) and bool((m == 64).all().item())


def run(ctx) -> Result:
    npusim = load_npusim()
    npusim.npu.synchronize()
    npusim.npu.empty_cache()
    baseline = npusim.npu.memory_allocated()
    ooms_before = npusim.npu.memory_stats().get("num_ooms", 0)
    free_before, total = npusim.npu.mem_get_info()
    details = {"baseline_allocated": baseline, "free_before": free_before, "total": total}
    details["oversized_error"] = _oversized_request(npusim, total)
    details["after_oversized_allocated"] = npusim.npu.memory_allocated()
    held, chunk, details["fill_error"] = _fill_until_oom(npusim, total)
    details.update(chunk_bytes=chunk, chunks_held=len(held), held_bytes=len(held) * chunk)
    expect(len(held) * chunk >= free_before // 2,
           f"the fill failed after {len(held)} chunks ({len(held) * chunk} bytes) with {free_before} bytes free",
           details)
    del held
    npusim.npu.synchronize()
    npusim.npu.empty_cache()
    after = npusim.npu.memory_allocated()
    ooms_after = npusim.npu.memory_stats().get("num_ooms", 0)
    details.update(allocated_after=after, num_ooms_counted=ooms_after - ooms_before,
                   free_after=npusim.npu.mem_get_info()[0])
    expect(after == baseline, f"memory_allocated() is {after} after freeing, was {baseline} before", details)
    expect(ooms_after - ooms_before >= 2, f"num_ooms moved by {ooms_after - ooms_before}, expected 2", details)
    expect(_ordinary_work_is_right(npusim), "ordinary npu work gives wrong results after the OOMs", details)
    return Result("oom_recovery", PASS, figure=f"OOM after {details['chunks_held']} x {chunk / 2**30:.2f} GiB",
                  note=f"allocated back to {after} bytes; free {details['free_after'] / 2**30:.1f} GiB of "
                       f"{total / 2**30:.1f}", details=details)
