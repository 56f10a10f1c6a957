"""``npusim.profiler.profile``: torch.profiler.profile on top of the op callbacks.

::

    with npusim.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.NPU]) as prof:
        train_step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

With a ``schedule`` the profiler follows a loop's ``prof.step()`` calls, records
only the active steps of each cycle and hands each finished cycle to
``on_trace_ready(prof)``.
"""
from __future__ import annotations

import enum
from functools import partial
from warnings import warn

from ..core.dispatch.api_usage import log_api_usage_once
from .collector import Collector
from .events import EventList
from .scheduling import ProfilerAction, _default_schedule_fn
from .trace import chrome_trace, write_chrome_trace
from .user_scope import record_function


class ProfilerActivity(enum.Enum):
    """What to record: host-side ops (CPU) and npu kernels (NPU)."""
    CPU = 0
    NPU = 1
    PrivateUse1 = 1   # torch's name for an out-of-tree device's activity


def supported_activities() -> set:
    return {ProfilerActivity.CPU, ProfilerActivity.NPU}


class profile:  # noqa: N801 - torch's name
    """Profile the ops run inside the ``with`` block (or between ``start()`` and ``stop()``).

    Args:
        activities: ``ProfilerActivity`` members; default: CPU and NPU.
        schedule: a callable ``step -> ProfilerAction``, e.g. ``npusim.profiler.schedule(...)``.
        on_trace_ready: called with the profiler at the end of each recorded cycle.
        record_shapes: keep the input shapes of each op (``key_averages(group_by_input_shape=True)``).
        profile_memory: attribute npu allocations and frees to the op that made them.
        with_stack: keep the Python stack (outside npusim) of each op.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False):
        log_api_usage_once("npusim.profiler.profile")
        if activities is not None:
            chosen = {a for a in activities if isinstance(a, ProfilerActivity)}
        else:
            chosen = supported_activities()
        if not chosen:
            raise AssertionError("No valid profiler activities found")
        if schedule is not None and not callable(schedule):
            raise TypeError(f"profile(): schedule must be callable (e.g. npusim.profiler.schedule(...)), "
                            f"not {type(schedule).__name__}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"profile(): on_trace_ready must be callable, not {type(on_trace_ready).__name__}")
        self.activities = chosen
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.on_trace_ready = on_trace_ready
        self.schedule = schedule if schedule is not None else _default_schedule_fn
        self.record_steps = schedule is not None
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._step_scope = None
        self._collector: Collector | None = None
        self._finished: Collector | None = None
        self._events: EventList | None = None
        A = ProfilerAction  # noqa: N806
        self._action_map = {
            (A.NONE, A.NONE): [],
            (A.NONE, A.WARMUP): [self._prepare_trace],
            (A.NONE, A.RECORD): [self._prepare_trace, self._start_trace],
            (A.NONE, A.RECORD_AND_SAVE): [self._prepare_trace, self._start_trace],
            (A.WARMUP, A.NONE): [partial(warn, "Incorrect schedule: WARMUP followed by NONE"),
                                 self._start_trace, self._stop_trace],
            (A.WARMUP, A.WARMUP): [],
            (A.WARMUP, A.RECORD): [self._start_trace],
            (A.WARMUP, A.RECORD_AND_SAVE): [self._start_trace],
            (A.RECORD, A.NONE): [partial(warn, "Incorrect schedule: RECORD followed by NONE"), self._stop_trace],
            (A.RECORD, A.WARMUP): [partial(warn, "Incorrect schedule: RECORD followed by WARMUP"),
                                   self._stop_trace],
            (A.RECORD, A.RECORD): [],
            (A.RECORD, A.RECORD_AND_SAVE): [],
            (A.RECORD_AND_SAVE, A.NONE): [self._stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, A.WARMUP): [self._stop_trace, self._trace_ready, self._prepare_trace],
            (A.RECORD_AND_SAVE, A.RECORD): [self._stop_trace, self._trace_ready, self._prepare_trace,
                                            self._start_trace],
            (A.RECORD_AND_SAVE, A.RECORD_AND_SAVE): [self._stop_trace, self._trace_ready, self._prepare_trace,
                                                     self._start_trace],
            (A.WARMUP, None): [self._start_trace, self._stop_trace],
            (A.RECORD, None): [self._stop_trace, self._trace_ready],
            (A.RECORD_AND_SAVE, None): [self._stop_trace, self._trace_ready],
        }

    # --- control ---------------------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        self._transit(ProfilerAction.NONE, self.current_action)
        self._enter_step_scope()

    def stop(self) -> None:
        self._exit_step_scope()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Signal that the next step of the loop begins (moves along the schedule)."""
        self._exit_step_scope()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._enter_step_scope()

    def _transit(self, prev, current) -> None:
        for action in self._action_map.get((prev, current), ()):
            action()

    def _enter_step_scope(self) -> None:
        if self.record_steps:
            self._step_scope = record_function(f"ProfilerStep#{self.step_num}")
            self._step_scope.__enter__()

    def _exit_step_scope(self) -> None:
        if self._step_scope is not None:
            self._step_scope.__exit__(None, None, None)
            self._step_scope = None

    def _prepare_trace(self) -> None:
        self._collector = Collector(record_shapes=self.record_shapes, profile_memory=self.profile_memory,
                                    with_stack=self.with_stack, npu=ProfilerActivity.NPU in self.activities)

    def _start_trace(self) -> None:
        if self._collector is None:
            self._prepare_trace()
        self._collector.start()

    def _stop_trace(self) -> None:
        c = self._collector
        if c is None:
            return
        c.stop()
        self._collector = None
        self._finished = c
        self._events = c.events(cpu=ProfilerActivity.CPU in self.activities,
                                npu=ProfilerActivity.NPU in self.activities)

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # --- results (of the last finished cycle) ---------------------------------------------------------------
    def _require(self, what: str):
        if self._events is None:
            raise AssertionError(f"Profiler must be initialized before {what}")
        return self._events

    def events(self) -> EventList:
        """Every recorded event (host events and npu kernels) of the last finished cycle."""
        return self._require("accessing events")

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events summed per name (and per input shapes / stack prefix when asked)."""
        return self._require("getting key averages").key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path) -> None:
        """Write the last finished cycle as a Chrome trace (JSON; gzip when ``path`` ends in .gz)."""
        events = self._require("exporting chrome trace")
        c = self._finished
        write_chrome_trace(path, chrome_trace(events, c.memory_records(), base_time_ns=c.wall0_ns))
