"""Statistics of the npu's pinned host memory allocator (torch.cuda.host_memory_stats).

Pinned (page-locked) host memory is what ``pin_memory`` hands out for fast host-to-device copies. The
counters have torch's keys and meanings; ``record_alloc`` / ``record_free`` are how a pinned allocation
reports itself. Until something pins memory every counter is zero, as torch's are in a process that has
pinned nothing.
"""
from __future__ import annotations

import threading
import time

_COUNTERS = ("allocations", "allocated_bytes", "active_requests", "active_bytes")
_FIELDS = ("current", "peak", "allocated", "freed")
_TIMERS = ("host_alloc_time", "host_free_time")
_lock = threading.Lock()


def _fresh_counter() -> dict:
    return dict.fromkeys(_FIELDS, 0)


def _fresh_timer() -> dict:
    return {"total": 0, "max": 0, "min": 0, "count": 0, "avg": 0}


_stats = {name: _fresh_counter() for name in _COUNTERS}
_timers = {name: _fresh_timer() for name in _TIMERS}
_events = {"num_host_alloc": 0, "num_host_free": 0}


def _move(counter: dict, n: int) -> None:
    counter["current"] += n
    if n > 0:
        counter["allocated"] += n
        counter["peak"] = max(counter["peak"], counter["current"])
    else:
        counter["freed"] -= n


def _time(timer: dict, micros: int) -> None:
    timer["total"] += micros
    timer["count"] += 1
    timer["max"] = max(timer["max"], micros)
    timer["min"] = micros if timer["count"] == 1 else min(timer["min"], micros)
    timer["avg"] = timer["total"] // timer["count"]


def record_alloc(nbytes: int, started_ns: int | None = None) -> None:
    """A pinned block of ``nbytes`` was made (``started_ns``: when making it began, for the timing)."""
    with _lock:
        for name, n in (("allocations", 1), ("allocated_bytes", nbytes), ("active_requests", 1),
                        ("active_bytes", nbytes)):
            _move(_stats[name], n)
        _events["num_host_alloc"] += 1
        if started_ns is not None:
            _time(_timers["host_alloc_time"], (time.perf_counter_ns() - started_ns) // 1000)


def record_free(nbytes: int, started_ns: int | None = None) -> None:
    """A pinned block of ``nbytes`` was freed."""
    with _lock:
        for name, n in (("allocations", -1), ("allocated_bytes", -nbytes), ("active_requests", -1),
                        ("active_bytes", -nbytes)):
            _move(_stats[name], n)
        _events["num_host_free"] += 1
        if started_ns is not None:
            _time(_timers["host_free_time"], (time.perf_counter_ns() - started_ns) // 1000)


def nested_stats() -> dict:
    """torch's nested form: ``{"allocations": {"current": ...}, ..., "num_host_alloc": ...}``."""
    with _lock:
        out = {name: dict(c) for name, c in _stats.items()}
        out.update(_events)
        out.update({name: dict(t) for name, t in _timers.items()})
        return out


def reset_accumulated() -> None:
    with _lock:
        for c in _stats.values():
            c["allocated"] = c["freed"] = 0
        for name in _TIMERS:
            _timers[name] = _fresh_timer()
        _events["num_host_alloc"] = _events["num_host_free"] = 0


def reset_peak() -> None:
    with _lock:
        for c in _stats.values():
            c["peak"] = c["current"]
