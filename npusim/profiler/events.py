"""Profiler events and their summaries (torch.autograd.profiler_util's FunctionEvent, EventList).

Times are in microseconds from the start of the recording. A host event (an op,
a backward node, a user scope) has children (the events it encloses on the same
thread) and its npu kernels; a kernel is an event of its own on the npu.
"""
from __future__ import annotations

import enum

from .table import build_table


class DeviceType(enum.Enum):
    CPU = 0
    NPU = 1
    PrivateUse1 = 1   # the npu is npusim's PrivateUse1 backend


class FunctionEvent:
    """One host event or one npu kernel."""

    def __init__(self, id, name, thread, start_us, end_us, *, scope=0, sequence_nr=-1, input_shapes=None,
                 stack=None, device_type=DeviceType.CPU, device_index=0, is_user_annotation=False,
                 overload_name="", tid=0):
        self.id = id
        self.name = name
        self.key = name
        self.thread = thread            # small per-thread id (RecordFunction.thread_id), 0 for kernels
        self.tid = tid                  # the operating system's thread id (the trace lane)
        self.start_us = start_us
        self.end_us = end_us
        self.scope = scope
        self.sequence_nr = sequence_nr
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.device_type = device_type
        self.device_index = device_index
        self.is_user_annotation = is_user_annotation
        self.overload_name = overload_name
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.kernels: list[FunctionEvent] = []    # npu kernels this op launched itself
        self.op: FunctionEvent | None = None      # for a kernel: the op that launched it
        self.self_device_memory_usage = 0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.count = 1
        self.node_id = -1
        self.is_async = False
        self.is_legacy = False
        self.use_device = "npu"

    # --- times ------------------------------------------------------------------------------------
    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us

    @property
    def cpu_time_total(self) -> float:
        return self.duration_us if self.device_type is DeviceType.CPU else 0.0

    @property
    def self_cpu_time_total(self) -> float:
        if self.device_type is not DeviceType.CPU:
            return 0.0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total

    @property
    def device_time_total(self) -> float:
        if self.device_type is not DeviceType.CPU:
            return self.duration_us
        return sum(k.duration_us for k in self.kernels) + sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self) -> float:
        if self.device_type is not DeviceType.CPU:
            return self.duration_us
        return self.device_time_total - sum(c.device_time_total for c in self.cpu_children)

    @property
    def device_time(self) -> float:
        return self.device_time_total

    # --- memory ---------------------------------------------------------------------------------------
    @property
    def device_memory_usage(self) -> int:
        return self.self_device_memory_usage + sum(c.device_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type} "
                f"cpu_time={self.cpu_time_total:.3f}us start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} device_time={self.device_time_total:.3f}us "
                f"thread={self.thread} input_shapes={self.input_shapes} seq_nr={self.sequence_nr}>")


class FunctionEventAvg:
    """The sum of the events that share a key (one row of ``key_averages``)."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.device_type = DeviceType.CPU
        self.is_user_annotation = False
        self.is_async = False
        self.is_legacy = False
        self.node_id = -1
        self.overload_name = ""
        self.cpu_parent = None
        self.use_device = "npu"

    def add(self, other) -> "FunctionEventAvg":
        if self.key is None:
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
        self.count += other.count
        for name in ("cpu_time_total", "self_cpu_time_total", "device_time_total", "self_device_time_total",
                     "cpu_memory_usage", "self_cpu_memory_usage", "device_memory_usage",
                     "self_device_memory_usage"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        return self.device_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us self_device_time={self.self_device_time_total:.3f}us "
                f"device_time={self.device_time:.3f}us input_shapes={self.input_shapes} count={self.count}>")


class EventList(list):
    """A list of events with summaries: ``table()``, ``key_averages()``, ``total_average()``."""

    def __init__(self, *args, profile_memory=False, **kwargs):
        super().__init__(*args, **kwargs)
        self._profile_memory = profile_memory

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0) -> "EventList":
        """One row per event name (and per input shapes / stack prefix when asked)."""
        rows: dict = {}
        for evt in self:
            key = (evt.key, evt.device_type, evt.is_user_annotation)
            if group_by_input_shapes:
                key += (str(evt.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(evt.stack[:group_by_stack_n])
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg()
            row.add(evt)
        return EventList(rows.values(), profile_memory=self._profile_memory)

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for evt in self:
            total.add(evt)
        total.key = "Total"
        return total

    @property
    def self_cpu_time_total(self) -> float:
        return sum(evt.self_cpu_time_total for evt in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None) -> str:
        """A text table like torch's; ``sort_by`` names a column attribute, e.g. "self_cpu_time_total"."""
        return build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                           max_src_column_width=max_src_column_width, max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, profile_memory=self._profile_memory,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self):
        return self.table()
