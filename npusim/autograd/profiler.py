"""``npusim.autograd.profiler`` (torch.autograd.profiler): the older profiler API, over ``npusim.profiler``.

``with profile(record_shapes=True) as prof: ...`` then ``prof.key_averages().table()``, ``prof.function_events``,
``prof.export_chrome_trace(path)``, ``prof.self_cpu_time_total`` and ``prof.config()``; ``record_function`` names a
region. ``use_device="npu"`` (or ``"cuda"`` where a device map makes it the npu) records npu kernels too.
"""
from __future__ import annotations

import warnings

from ..profiler.events import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ..profiler.user_scope import record_function  # noqa: F401
from .profiler_types import ProfilerConfig, ProfilerState


class profile:  # noqa: N801 - torch's name
    """Record the ops run in the ``with`` block (host ops, and npu kernels with ``use_device``)."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        from .. import profiler as _profiler
        from ..core.c10.device import privateuse1_backend_name
        self.enabled = enabled
        if not enabled:
            return
        if use_cuda:
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=2)
            use_device = "cuda"
        self.use_device = use_device
        self.record_shapes, self.with_flops, self.profile_memory = record_shapes, with_flops, profile_memory
        self.with_stack, self.with_modules, self.use_cpu = with_stack, with_modules, use_cpu
        self.experimental_config = experimental_config
        self.trace_id = ""
        self.entered = False
        self._function_events = None
        self._inner = None
        if not use_cpu and not use_kineto:
            raise AssertionError("Device-only events supported only with Kineto (use_kineto=True)")
        npu = False
        if use_device is not None:
            if use_device == "cuda":
                import npusim
                if npusim.cuda.is_available():        # a device map makes "cuda" the npu
                    npu = True
                else:
                    warnings.warn("CUDA is not available, disabling CUDA profiling", stacklevel=2)
                    self.use_device = None
            elif use_device == privateuse1_backend_name():
                npu = True
            else:
                warnings.warn(f"The {use_device} is not a valid device option.", stacklevel=2)
                self.use_device = None
        self.profiler_kind = ProfilerState.PRIVATEUSE1 if npu else ProfilerState.CPU
        activities = ([_profiler.ProfilerActivity.CPU] if use_cpu else []) + \
            ([_profiler.ProfilerActivity.NPU] if npu else [])
        self._activities = activities

    def config(self, create_trace_id=False) -> ProfilerConfig:
        """This profile's configuration (state and switches)."""
        return ProfilerConfig(self.profiler_kind, bool(self.record_shapes), bool(self.profile_memory),
                              bool(self.with_stack), bool(self.with_flops), bool(self.with_modules),
                              self.experimental_config, self.trace_id)

    def __enter__(self):
        if not self.enabled:
            return None
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        from .. import profiler as _profiler
        self.entered = True
        self._inner = _profiler.profile(activities=self._activities, record_shapes=self.record_shapes,
                                        profile_memory=self.profile_memory, with_stack=self.with_stack)
        self._inner.__enter__()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if not self.enabled:
            return None
        self._inner.__exit__(exc_type, exc_val, exc_tb)
        self._function_events = self._inner.events()
        return False

    @property
    def function_events(self) -> EventList:
        """Every recorded event (empty before the block has run)."""
        return self._function_events if self._function_events is not None else EventList()

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """The events summed per name (and input shapes / stack prefix when asked)."""
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False):
        """The events as a table (see ``EventList.table``)."""
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only)

    def export_chrome_trace(self, path) -> None:
        """Write the recording as a Chrome trace (JSON; gzip when ``path`` ends in .gz)."""
        if self._inner is None or self._function_events is None:
            raise AssertionError("Expected profiling results")
        self._inner.export_chrome_trace(path)

    def total_average(self):
        """All events summed into one."""
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self CPU time (microseconds)."""
        return self.function_events.self_cpu_time_total

    def __str__(self):
        return str(self.function_events) if self.enabled else "<unfinished torch.autograd.profile>"


__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg"]
