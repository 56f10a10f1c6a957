"""Timing GPU work from the host: synchronise, run a batch of calls, synchronise; the median batch wins.

Contenders are interleaved round by round, so a clock boost or a neighbour's load
touches all of them alike instead of skewing one ratio.
"""
from __future__ import annotations

import statistics
import time


def _batch_seconds(fn, sync, calls: int) -> float:
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def calls_per_batch(fn, sync, target_s: float, cap: int = 100_000) -> int:
    """Calls that make a batch last about ``target_s`` (one timed call decides; at least 1)."""
    one = _batch_seconds(fn, sync, 1)
    return max(1, min(cap, int(target_s / max(one, 1e-7))))


def median_seconds_per_call(contenders: dict, rounds: int, batch_s: float, warmup: int = 2) -> dict:
    """{name: median seconds per call}; ``contenders`` maps a name to ``(fn, sync)``."""
    calls = {}
    for name, (fn, sync) in contenders.items():
        for _ in range(warmup):
            fn()
        sync()
        calls[name] = calls_per_batch(fn, sync, batch_s)
    samples = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, (fn, sync) in contenders.items():
            samples[name].append(_batch_seconds(fn, sync, calls[name]))
    return {name: statistics.median(s) for name, s in samples.items()}
