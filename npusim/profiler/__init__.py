"""``npusim.profiler``: op callbacks for fleet-wide profiling, thread-local debug info, and the profiler.

Always-on observation (torch::addGlobalCallback)::

    def on_enter(fn):                      # fn: a RecordFunction
        return time.perf_counter()         # handed to on_exit
    def on_exit(fn, started):
        report(fn.name, time.perf_counter() - started, ThreadLocalDebugInfo.get(DebugInfoKind.INFERENCE_CONTEXT))

    handle = add_global_callback(RecordFunctionCallback(on_enter, on_exit).sampling_prob(0.01))

On-demand profiling (torch.profiler)::

    with profile() as prof:
        step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))
"""
from ..core.dispatch.debug_info import DebugInfoGuard, DebugInfoKind, ThreadLocalDebugInfo
from ..core.dispatch.record_function import (
    RecordFunction, RecordFunctionCallback, RecordScope, add_global_callback, add_thread_local_callback,
    clear_callbacks, enable_record_function, has_callbacks, has_global_callbacks, has_thread_local_callbacks,
    is_record_function_enabled, remove_callback,
)
from ..core.runtime.thread_local_state import (
    ThreadLocalState, ThreadLocalStateGuard, capture_thread_local_state, restore_thread_local_state,
)
from .events import DeviceType, EventList, FunctionEvent, FunctionEventAvg
from .profiler import ProfilerActivity, profile, supported_activities
from .scheduling import ProfilerAction, schedule
from .user_scope import record_function
from .execution_trace import ExecutionTraceObserver
from .kineto import is_fbcode, kineto_available
from .step_tracker import KinetoStepTracker
from .trace_handler import tensorboard_trace_handler
from ..optim.optimizer import Optimizer, register_optimizer_step_post_hook  # torch.profiler re-exports them too

__all__ = [
    "profile", "record_function", "schedule", "ProfilerAction", "ProfilerActivity", "supported_activities",
    "RecordFunction", "RecordFunctionCallback", "RecordScope", "add_global_callback", "add_thread_local_callback",
    "remove_callback", "clear_callbacks", "has_callbacks", "has_global_callbacks", "has_thread_local_callbacks",
    "enable_record_function", "is_record_function_enabled", "DebugInfoGuard", "DebugInfoKind",
    "ThreadLocalDebugInfo", "ThreadLocalState", "ThreadLocalStateGuard", "capture_thread_local_state",
    "restore_thread_local_state", "DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg",
    "is_fbcode", "kineto_available", "KinetoStepTracker", "tensorboard_trace_handler",
    "register_optimizer_step_post_hook", "ExecutionTraceObserver",
]
