"""The recording side of the profiler: one thread-local op callback and, for memory, an allocator observer.

The device's kernel times and memory events come from the hooks its backend registered
(``npusim.privateuse1.register_profiler_hooks``); the profiler never imports a backend.

The callback is thread-local (as torch's profiler's is): it sees the ops of the
thread that started profiling, of the backward passes run from it and of tasks
forked from it, each on its own per-thread stack of open events.
"""
from __future__ import annotations

import itertools
import threading
from time import perf_counter_ns

from ..core.dispatch import record_function as _rf
from ..core.c10.device import PRIVATEUSE1
from ..core.c10.device import device as _device_type
from ..core.c10.dispatch_keys import DispatchKey
from ..core.c10.user_frames import user_frames
from ..core.tensor import Tensor
from ..privateuse1.hooks import get_profiler_hooks
from .events import DeviceType, EventList, FunctionEvent

_NPU_BIT = 1 << DispatchKey.PrivateUse1
_MAX_STACK = 64


class _Record:
    __slots__ = ("id", "name", "scope", "overload_name", "thread", "tid", "start_ns", "end_ns", "parent",
                 "has_children", "shapes", "stack", "seq_nr", "device_index", "mem_self",
                 "k_start", "k_end")

    def __init__(self):
        self.has_children = False
        self.mem_self = 0
        self.k_start = self.k_end = None


def _shape_of(x):
    if isinstance(x, Tensor):
        return list(x._a.shape)
    if isinstance(x, (list, tuple)) and x and any(isinstance(t, Tensor) for t in x):
        return [list(t._a.shape) if isinstance(t, Tensor) else [] for t in x]
    return []


def _npu_index(inputs, default):
    for x in inputs or ():
        if isinstance(x, Tensor):
            d = x._device
            if d.type != "cpu":
                return d.index or 0
        elif isinstance(x, _device_type) and x.type != "cpu":
            return x.index or 0
        elif isinstance(x, (list, tuple)) and x and isinstance(x[0], Tensor) and x[0]._device.type != "cpu":
            return x[0]._device.index or 0
    return default


def _python_stack() -> list:
    """The caller's Python frames outside npusim, innermost first, as "file(line): function"."""
    return [f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}"
            for f in user_frames(_MAX_STACK, skip=1)]


class _OpIntervalTimer:
    """Kernel times of a device that runs each kernel synchronously in the op: the op's own interval."""

    def before(self, rec) -> None:
        pass

    def after(self, rec) -> None:
        rec.k_start, rec.k_end = rec.start_ns, rec.end_ns

    def finish(self, records) -> None:
        pass


def _kernel_name(op_name: str) -> str:
    ns, _, short = op_name.partition("::")
    return f"npu::{short}" if ns == "aten" else f"npu::{op_name}"


class Collector:
    """Records one profiling cycle: start() registers, stop() unregisters and finishes the device times."""

    def __init__(self, *, record_shapes: bool, profile_memory: bool, with_stack: bool, npu: bool):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.npu = npu
        self.records: list[_Record] = []
        self.memory: list[tuple] = []       # (ns, device index, bytes, tid)
        self._tls = threading.local()
        self._ids = itertools.count(1)
        self._handle = None
        self._timer = None
        self._observing = False             # profile_memory: the npu allocator reports to _on_alloc
        self._hooks = None
        self.t0_ns = 0
        self.wall0_ns = 0

    # --- lifetime ------------------------------------------------------------------------------------
    def start(self) -> None:
        import time
        self.t0_ns = perf_counter_ns()
        self.wall0_ns = time.time_ns()
        hooks = get_profiler_hooks(PRIVATEUSE1)      # the backend's answers, if one registered
        if self.npu:
            timer = hooks.kernel_timer() if hooks is not None else None
            self._timer = timer if timer is not None else _OpIntervalTimer()
        if self.profile_memory and hooks is not None:   # the backend's allocator reports to _on_alloc
            self._observing = hooks.add_allocation_observer(self._on_alloc)
            self._hooks = hooks
        cb = _rf.RecordFunctionCallback(self._enter, self._exit).needs_inputs(True)
        self._handle = _rf.add_thread_local_callback(cb)

    def stop(self) -> None:
        if self._handle is not None:
            _rf.remove_callback(self._handle)
            self._handle = None
        if self._observing:
            self._hooks.remove_allocation_observer(self._on_alloc)
        self._observing = False
        if self._timer is not None:
            self._timer.finish(self.records)

    # --- the callback -------------------------------------------------------------------------------------
    def _thread(self):
        t = self._tls
        try:
            return t.stack, t.tid
        except AttributeError:
            t.stack, t.tid = [], threading.get_native_id()
            return t.stack, t.tid

    def _enter(self, fn):
        stack, tid = self._thread()
        rec = _Record()
        rec.id = next(self._ids)
        rec.name = fn.name
        rec.scope = int(fn.scope)
        rec.overload_name = fn.overload_name
        rec.seq_nr = fn.seq_nr
        rec.thread = fn.thread_id
        rec.tid = tid
        parent = stack[-1] if stack else None
        rec.parent = parent
        if parent is not None:
            parent.has_children = True
        rec.shapes = [_shape_of(x) for x in fn.inputs] if self.record_shapes and fn.inputs is not None else None
        rec.stack = _python_stack() if self.with_stack else None
        npu = fn.keyset & _NPU_BIT
        rec.device_index = _npu_index(fn.inputs, 0) if npu else -1
        stack.append(rec)
        rec.start_ns = perf_counter_ns()
        if npu and self._timer is not None:
            self._timer.before(rec)
        return rec

    def _exit(self, fn, rec):
        end = perf_counter_ns()
        if rec is None:
            return
        rec.end_ns = end
        stack = self._tls.stack
        if stack and stack[-1] is rec:
            stack.pop()
        elif rec in stack:
            stack.remove(rec)
        if rec.device_index >= 0:
            if self._timer is not None:
                if rec.has_children:
                    rec.k_start = None      # a composite op: its children launched the kernels
                else:
                    self._timer.after(rec)
        self.records.append(rec)

    # --- memory ---------------------------------------------------------------------------------------------
    def _on_alloc(self, device_index: int, nbytes: int) -> None:
        stack, tid = self._thread()
        if stack:
            stack[-1].mem_self += nbytes
        self.memory.append((perf_counter_ns(), device_index, nbytes, tid))

    # --- results ----------------------------------------------------------------------------------------------
    def events(self, cpu: bool, npu: bool) -> EventList:
        """The recorded events, host events first in start order, then kernels."""
        t0 = self.t0_ns
        host = {}
        kernels = []
        for rec in sorted(self.records, key=lambda r: (r.start_ns, r.id)):
            e = FunctionEvent(rec.id, rec.name, rec.thread, (rec.start_ns - t0) / 1e3, (rec.end_ns - t0) / 1e3,
                              scope=rec.scope, sequence_nr=rec.seq_nr, input_shapes=rec.shapes, stack=rec.stack,
                              is_user_annotation=rec.scope == int(_rf.RecordScope.USER_SCOPE),
                              overload_name=rec.overload_name, tid=rec.tid)
            e.self_device_memory_usage = rec.mem_self
            host[rec.id] = e
            parent = host.get(rec.parent.id) if rec.parent is not None else None
            if parent is not None:
                e.cpu_parent = parent
                parent.cpu_children.append(e)
            if npu and rec.device_index >= 0 and isinstance(rec.k_start, int):
                k = FunctionEvent(next(self._ids), _kernel_name(rec.name), 0, (rec.k_start - t0) / 1e3,
                                  (rec.k_end - t0) / 1e3, device_type=DeviceType.NPU,
                                  device_index=rec.device_index)
                k.op = e
                e.kernels.append(k)
                kernels.append(k)
        out = list(host.values()) if cpu else []
        return EventList(out + kernels, profile_memory=self.profile_memory)

    def memory_records(self) -> list:
        t0 = self.t0_ns
        return [((ns - t0) / 1e3, d, n, tid) for ns, d, n, tid in self.memory]
