"""Profiling schedules: which steps of a loop are skipped, warmed up and recorded (torch.profiler.schedule)."""
from __future__ import annotations

import enum
import warnings


class ProfilerAction(enum.Enum):
    """What the profiler does during one step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """A schedule for ``profile(schedule=...)``: after ``skip_first`` steps, cycles of ``wait`` idle steps,
    ``warmup`` steps and ``active`` recorded steps, ``repeat`` times (0: until the profiler stops).

    The last active step of each cycle returns RECORD_AND_SAVE: the profiler then
    calls ``on_trace_ready`` with that cycle's events.
    """
    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:    # start the first cycle at its warmup
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


def _default_schedule_fn(_: int) -> ProfilerAction:
    """Without a schedule the profiler records from start to stop."""
    return ProfilerAction.RECORD
