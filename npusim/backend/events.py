"""npu events: the handles behind ``npusim.Event`` / ``npusim.npu.Event``, and ``npusim.npu.Event`` itself.

cuda mode: a handle wraps a CuPy event, recorded on the stream's CuPy stream;
CUDA measures the time between two. Emulation: every op has finished when it
returns, so recording an event stamps the wall clock at that point: the time
between two events is the real time taken by the work issued between them.
"""
from __future__ import annotations

import itertools
import time

from ..privateuse1 import PRIVATEUSE1
from ..privateuse1 import Event as _Event
from .runtime import runtime
from .streams import NPU_TYPE_CODE, current_stream, pools

__all__ = ["Event"]

_ids = itertools.count(1)


class EventHandle:
    """One device event: its device, whether it keeps timing, and its CuPy event or emulated timestamp."""

    __slots__ = ("event_id", "device_index", "enable_timing", "native", "time_ns")

    def __init__(self, device_index: int, enable_timing: bool, blocking: bool = False, interprocess: bool = False):
        self.event_id = next(_ids)
        self.device_index = device_index
        self.enable_timing = enable_timing
        self.time_ns = None
        self.native = None
        if runtime.mode == "cuda":
            import cupy
            with cupy.cuda.Device(device_index):
                self.native = cupy.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                              interprocess=interprocess)


def record(handle: EventHandle, stream) -> None:
    if handle.native is not None:
        import cupy
        with cupy.cuda.Device(stream.device_index):
            handle.native.record(pools.native(stream.device_index, stream.stream_id))
    else:
        handle.time_ns = time.perf_counter_ns()   # the work issued before this point is complete


def block(handle: EventHandle, stream) -> None:
    """Future work on ``stream`` waits for ``handle`` (already met in emulation)."""
    if handle.native is not None:
        import cupy
        with cupy.cuda.Device(stream.device_index):
            pools.native(stream.device_index, stream.stream_id).wait_event(handle.native)


def query(handle: EventHandle) -> bool:
    return True if handle.native is None else bool(handle.native.done)


def synchronize(handle: EventHandle) -> None:
    if handle.native is not None:
        handle.native.synchronize()


def elapsed_ms(start: EventHandle, end: EventHandle) -> float:
    if not (query(start) and query(end)):
        raise RuntimeError("Both events must be completed before calculating elapsed time.")
    if start.native is not None:
        import cupy
        return float(cupy.cuda.get_elapsed_time(start.native, end.native))
    return (end.time_ns - start.time_ns) / 1e6


class Event(_Event):
    """An npu event: ``npusim.npu.Event(enable_timing=False, blocking=False, interprocess=False)``.

    Its device is the device of the stream it is first recorded on; only streams
    of that device may record it later, streams of any device may wait on it.
    """

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        super().__init__(PRIVATEUSE1, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)

    def _current_stream(self):
        return current_stream()

    def record(self, stream=None) -> None:
        """Record on ``stream`` (default: the current npu stream)."""
        if stream is None:
            stream = current_stream()
        if self._handle is None and stream.device_type == NPU_TYPE_CODE:
            # made here so the event keeps its blocking / interprocess flags
            self._handle = EventHandle(stream.device_index, self.enable_timing, self.blocking, self.interprocess)
        super().record(stream)

    @property
    def npu_event(self) -> int:
        """The raw event handle (CuPy's ``ptr`` in cuda mode), 0 before the first record."""
        h = self._handle
        if h is None:
            return 0
        return int(h.native.ptr) if h.native is not None else h.event_id

    def ipc_handle(self):
        raise RuntimeError("npusim.npu.Event does not support interprocess handles")

    def __repr__(self):
        if self._handle is None:
            return "<npusim.npu.Event uninitialized>"
        return f"<npusim.npu.Event {self.npu_event:#x}>"
