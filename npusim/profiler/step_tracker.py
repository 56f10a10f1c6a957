"""``KinetoStepTracker``: one global step count shared by everything that marks steps (the profiler's ``step()``,
optimizers), so that two requesters marking the same step count it once: the global count is the max over the
requesters' counts.

torch hands each new global step to the Kineto library (for on-demand tracing by its daemon); npusim's profiler
is not Kineto, so only the count is kept.
"""
from __future__ import annotations

import warnings
from collections import defaultdict


class KinetoStepTracker:
    """The global step count: ``increment_step(requester)`` moves a requester on, and the global count with it
    when that requester is now ahead of the rest."""

    _current_step = 0
    _step_dict: dict = defaultdict(int)

    @classmethod
    def init_step_count(cls, requester: str) -> None:
        """Start ``requester`` at the current global step."""
        cls._step_dict[requester] = cls._current_step

    @classmethod
    def erase_step_count(cls, requester: str) -> bool:
        """Forget ``requester``; whether it was known."""
        return cls._step_dict.pop(requester, None) is not None

    @classmethod
    def increment_step(cls, requester: str) -> int:
        """One more step for ``requester``; returns the global step count (the max over all requesters)."""
        if requester not in cls._step_dict:
            cls.init_step_count(requester)
        cls._step_dict[requester] += 1
        new_step = max(cls._step_dict.values())
        if new_step > cls._current_step:
            if new_step - cls._current_step > 1:
                warnings.warn("Profiler step count has increased more than 1 - "
                              f"current_step = {cls._current_step} step dict =  {cls._step_dict}", stacklevel=2)
            cls._current_step = new_step
        return cls._current_step

    @classmethod
    def current_step(cls) -> int:
        """The global step count."""
        return cls._current_step


__all__ = ["KinetoStepTracker"]
