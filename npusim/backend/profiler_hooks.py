"""What the profiler asks the npu: kernel times and memory events (``npusim.privateuse1.ProfilerHooks``).

The emulated npu runs a kernel synchronously in the thread that launches it, so
the kernel's interval is the op's own (no timer: the profiler's default). On a GPU
the host returns before the kernel ends: two CuPy events around the launch give
the kernel's real start and duration on the device, placed on the host clock
through one reference event recorded when the device was first seen. The same
allocator accounts npu memory in both modes and reports to the profiler's observer.
"""
from __future__ import annotations

from time import perf_counter_ns

from ..privateuse1 import ProfilerHooks
from . import allocator
from .runtime import runtime


class NpuProfilerHooks(ProfilerHooks):
    def kernel_timer(self):
        return CupyTimer() if runtime.probe() == "cuda" else None

    def add_allocation_observer(self, fn) -> bool:
        allocator.add_allocation_observer(fn)
        return True

    def remove_allocation_observer(self, fn) -> None:
        allocator.remove_allocation_observer(fn)


class CupyTimer:
    def __init__(self):
        import cupy
        self.cupy = cupy
        self.base = {}     # device index -> (reference event, its host time in ns)

    def _base(self, index):
        b = self.base.get(index)
        if b is None:
            cp = self.cupy
            with cp.cuda.Device(index):
                cp.cuda.get_current_stream().synchronize()
                ev = cp.cuda.Event()
                ev.record()
                ev.synchronize()
                b = self.base[index] = (ev, perf_counter_ns())
        return b

    def before(self, rec) -> None:
        self._base(rec.device_index)
        with self.cupy.cuda.Device(rec.device_index):
            rec.k_start = self.cupy.cuda.Event()
            rec.k_start.record()

    def after(self, rec) -> None:
        with self.cupy.cuda.Device(rec.device_index):
            rec.k_end = self.cupy.cuda.Event()
            rec.k_end.record()

    def finish(self, records) -> None:
        """Turn the events of the kernels into host-clock nanoseconds (waits for the device)."""
        cp = self.cupy
        for rec in records:
            if rec.k_start is None or isinstance(rec.k_start, int):
                continue
            ref, ref_ns = self.base[rec.device_index]
            rec.k_end.synchronize()
            start = ref_ns + int(cp.cuda.get_elapsed_time(ref, rec.k_start) * 1e6)
            end = ref_ns + int(cp.cuda.get_elapsed_time(ref, rec.k_end) * 1e6)
            rec.k_start, rec.k_end = start, max(end, start)
