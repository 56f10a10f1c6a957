"""Chrome trace JSON (opens in Perfetto and chrome://tracing).

Lanes: the host process (pid = this process) with one lane per thread holding
its ops, backward nodes and user scopes; and one process per npu (pid = device
index, as torch gives each GPU) whose stream lane holds the kernels. Flow arrows
join each op to the kernel it launched ("ac2g") and each forward op to its
backward node ("fwdbwd").
"""
from __future__ import annotations

import gzip
import json
import os

from .events import DeviceType

_NPU_SORT_BASE = 1 << 24   # npu processes sort below the host process


def _us(t: float) -> float:
    return round(t, 3)


def chrome_trace(events, memory=(), *, base_time_ns=0, device_names=None) -> dict:
    """The trace as a dict; ``memory`` holds (ts_us, device_index, nbytes, tid) allocation records."""
    pid = os.getpid()
    out = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": 0}},
    ]
    host_threads, devices = {}, set()
    fwd_by_seq = {}
    for e in events:
        if e.device_type is DeviceType.CPU:
            host_threads.setdefault(e.tid, e.thread)
            if e.sequence_nr >= 0 and e.scope == 0:
                fwd_by_seq.setdefault(e.sequence_nr, e)
        else:
            devices.add(e.device_index)
    for tid, small in sorted(host_threads.items()):
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                    "args": {"name": f"thread {small} (python)"}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": small}})
    for d in sorted(devices):
        name = (device_names or {}).get(d, f"npu {d}")
        out.append({"ph": "M", "name": "process_name", "pid": d, "tid": 0, "args": {"name": name}})
        out.append({"ph": "M", "name": "process_labels", "pid": d, "tid": 0, "args": {"labels": f"npu {d}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": d, "tid": 0,
                    "args": {"sort_index": _NPU_SORT_BASE + d}})
        out.append({"ph": "M", "name": "thread_name", "pid": d, "tid": 0, "args": {"name": "stream 0"}})

    for e in events:
        if e.device_type is DeviceType.CPU:
            args = {"External id": e.id}
            if e.sequence_nr >= 0:
                args["Sequence number"] = e.sequence_nr
            if e.input_shapes:
                args["Input Dims"] = e.input_shapes
            if e.self_device_memory_usage:
                args["Self npu memory (bytes)"] = e.self_device_memory_usage
            cat = "user_annotation" if e.is_user_annotation else "cpu_op"
            out.append({"ph": "X", "cat": cat, "name": e.name, "pid": pid, "tid": e.tid, "ts": _us(e.start_us),
                        "dur": _us(e.duration_us), "args": args})
            if e.scope == 1:   # a backward node: arrow from the forward op of the same sequence number
                fwd = fwd_by_seq.get(e.sequence_nr)
                if fwd is not None:
                    out.append({"ph": "s", "id": e.sequence_nr, "pid": pid, "tid": fwd.tid, "ts": _us(fwd.start_us),
                                "cat": "fwdbwd", "name": "fwdbwd"})
                    out.append({"ph": "f", "id": e.sequence_nr, "pid": pid, "tid": e.tid, "ts": _us(e.start_us),
                                "cat": "fwdbwd", "name": "fwdbwd", "bp": "e"})
        else:
            op = e.op
            args = {"device": e.device_index, "stream": 0, "correlation": e.id}
            if op is not None:
                args["External id"] = op.id
            out.append({"ph": "X", "cat": "kernel", "name": e.name, "pid": e.device_index, "tid": 0,
                        "ts": _us(e.start_us), "dur": _us(e.duration_us), "args": args})
            if op is not None:
                out.append({"ph": "s", "id": e.id, "pid": pid, "tid": op.tid, "ts": _us(op.start_us),
                            "cat": "ac2g", "name": "ac2g"})
                out.append({"ph": "f", "id": e.id, "pid": e.device_index, "tid": 0, "ts": _us(e.start_us),
                            "cat": "ac2g", "name": "ac2g", "bp": "e"})
    for ts, device_index, nbytes, tid in memory:
        out.append({"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid, "tid": tid,
                    "ts": _us(ts), "args": {"Device Type": "npu", "Device Id": device_index, "Bytes": nbytes}})
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "baseTimeNanoseconds": base_time_ns, "traceEvents": out}


def write_chrome_trace(path, trace: dict) -> None:
    """Write ``trace`` as JSON to ``path`` (gzip-compressed when it ends in .gz)."""
    path = os.fspath(path)
    trace = dict(trace, traceName=path)
    if path.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(trace, f)
    else:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(trace, f)
