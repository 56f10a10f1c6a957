"""torch.autograd's profiler states and configuration: ``ProfilerState`` and ``ProfilerConfig``.

``npusim.autograd.profiler.profile().config()`` describes a profile with them. npusim's profiler is not Kineto (see
``kineto_available``): it records host ops through record_function callbacks, as torch's ``CPU`` state does, and
npu kernels through the backend's hooks, as its ``PRIVATEUSE1`` state does.
"""
from __future__ import annotations

import builtins
import enum


class ProfilerState(enum.IntEnum):
    """How the autograd profiler records (torch's members and values)."""

    Disabled = 0
    CPU = 1
    CUDA = 2
    NVTX = 3
    ITT = 4
    PRIVATEUSE1 = 5
    KINETO = 6
    KINETO_GPU_FALLBACK = 7
    KINETO_PRIVATEUSE1_FALLBACK = 8
    KINETO_PRIVATEUSE1 = 9

    def __str__(self):
        return f"ProfilerState.{self.name}"


class ProfilerConfig:
    """What a profile records: its state and switches (an opaque value, as torch's)."""

    __slots__ = ("_state", "_report_input_shapes", "_profile_memory", "_with_stack", "_with_flops", "_with_modules",
                 "_experimental_config", "_trace_id")

    def __init__(self, state, report_input_shapes, profile_memory, with_stack, with_flops, with_modules,
                 experimental_config, trace_id=""):
        flags = (report_input_shapes, profile_memory, with_stack, with_flops, with_modules)
        if not isinstance(state, ProfilerState) or not all(isinstance(f, builtins.bool) for f in flags) or \
                not isinstance(trace_id, str):
            raise TypeError("__init__(): incompatible constructor arguments. The following argument types are "
                            "supported:\n    1. ProfilerConfig(state: ProfilerState, report_input_shapes: bool, "
                            "profile_memory: bool, with_stack: bool, with_flops: bool, with_modules: bool, "
                            "experimental_config, trace_id: str = '')")
        self._state = state
        self._report_input_shapes, self._profile_memory, self._with_stack, self._with_flops, self._with_modules = flags
        self._experimental_config = experimental_config
        self._trace_id = trace_id

    def __repr__(self):
        return (f"ProfilerConfig({self._state}, report_input_shapes={self._report_input_shapes}, "
                f"profile_memory={self._profile_memory}, with_stack={self._with_stack})")


__all__ = ["ProfilerState", "ProfilerConfig"]
