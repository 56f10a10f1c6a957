"""npusim.npu.Event timing real work: two timing events around big matmuls.

The elapsed time must be positive and agree with the wall time of the same work
(measured from before the first record to after the end event's synchronize): the
device time cannot exceed the wall time, and with work this large it is most of it.
"""
from __future__ import annotations

import time

from .cuda_mode import load_npusim
from .results import PASS, Result, expect

# Device time over wall time: at most 1 (plus timer granularity), at least this share for big matmuls.
MIN_SHARE_OF_WALL = 0.5
GRANULARITY_MS = 0.5


def run(ctx) -> Result:
    npusim = load_npusim()
    n = ctx.pick(8192, 1024) if not ctx.standin else 1024
    repeats = ctx.pick(5, 3)
    a = npusim.randn(n, n, device="npu")
    a @ a        # warm up (library handles, kernel caches)
    npusim.npu.synchronize()
    start, end = npusim.npu.Event(enable_timing=True), npusim.npu.Event(enable_timing=True)
    wall_start = time.perf_counter()
    start.record()
    for _ in range(repeats):
        a @ a
    end.record()
    end.synchronize()
    wall_ms = (time.perf_counter() - wall_start) * 1e3
    elapsed_ms = start.elapsed_time(end)
    details = {"matrix": n, "matmuls": repeats, "elapsed_ms": elapsed_ms, "wall_ms": wall_ms,
               "query_after_sync": end.query()}
    expect(elapsed_ms > 0, f"elapsed_time() is {elapsed_ms} ms for {repeats} matmuls of {n}x{n}", details)
    expect(elapsed_ms <= wall_ms + GRANULARITY_MS,
           f"events measured {elapsed_ms:.2f} ms, more than the {wall_ms:.2f} ms of wall time", details)
    expect(elapsed_ms >= MIN_SHARE_OF_WALL * wall_ms,
           f"events measured {elapsed_ms:.2f} ms, under half the {wall_ms:.2f} ms of wall time", details)
    expect(details["query_after_sync"] is True, "the end event is not done after its synchronize()", details)
    return Result("events", PASS, figure=f"{elapsed_ms:.1f} ms of {wall_ms:.1f} ms wall",
                  note=f"{repeats} matmuls of {n}x{n} float32", details=details)
