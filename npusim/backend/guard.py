"""The npu's device guard implementation, registered for PrivateUse1 (``C10_REGISTER_GUARD_IMPL``).

Core's DeviceGuard / StreamGuard, ``npusim.Stream`` / ``npusim.Event`` and the
dispatcher's per-op device switch all come here. The current device lives in
the runtime (per thread); the current streams in ``streams``; event handles in
``events``.
"""
from __future__ import annotations

import functools

from .. import device
from ..privateuse1 import PRIVATEUSE1, DeviceGuardImplInterface, privateuse1_backend_name
from ..kernels import device_checks
from . import events, streams, sync_debug
from .runtime import runtime


def _npu(index: int) -> device:
    return device(PRIVATEUSE1, index)


class NpuGuardImpl(DeviceGuardImplInterface):
    """Devices, streams and events of the npu, in emulation and in cuda mode."""

    def __init__(self):
        self._tls = runtime._tls
        self._device_generic: set = set()
        # the dispatcher's per-call question, answered without a Python frame: the thread's current device (the
        # class's default 0 until the thread sets one), as the method below
        self.current_index = functools.partial(getattr, self._tls, "device")

    def mark_device_generic(self, kernels) -> None:
        """Kernels that take their device from their inputs and never read the current device."""
        self._device_generic.update(kernels)

    def kernel_needs_guard(self, kernel) -> bool:
        # CuPy allocates and launches on the current device, so in cuda mode every kernel needs it set;
        # emulated arrays are NumPy's, and the npu's own kernels read the device from their inputs.
        return runtime.probe() == "cuda" or kernel not in self._device_generic

    def type(self) -> str:
        return privateuse1_backend_name()

    # --- devices ------------------------------------------------------------------------------------
    def _index(self, d) -> int:
        if d.type != privateuse1_backend_name():
            raise RuntimeError(f"Expected a {privateuse1_backend_name()} device, but got {d}")
        if d.index is None:
            runtime.lazy_init()
            return runtime.current_device()
        return runtime.check_index(d.index)

    def get_device(self) -> device:
        runtime.lazy_init()
        return _npu(runtime.current_device())

    def current_index(self) -> int:
        return self._tls.device

    def set_device(self, d) -> None:
        index = self._index(d)
        runtime.set_device(index)
        if runtime.mode == "cuda":
            streams.apply_to_cupy(index)   # CuPy versions with one current stream per thread need it again

    def unchecked_set_device(self, d) -> None:
        if runtime.mode == "cuda":
            self.set_device(d)
        else:
            self._tls.device = d.index

    def exchange_device(self, d) -> device:
        index = self._index(d)
        prev = self._tls.device
        if prev != index:
            self.set_device(_npu(index))
        return _npu(prev)

    def device_count(self) -> int:
        return runtime.device_count()

    def launch_blocking(self) -> bool:
        return runtime.config.launch_blocking and runtime.probe() == "cuda"

    # --- streams --------------------------------------------------------------------------------------
    def _stream_index(self, s) -> int:
        if s.device_type != streams.NPU_TYPE_CODE:
            raise RuntimeError(f"Expected a {privateuse1_backend_name()} stream, but got a stream of "
                               f"{s.device}")
        runtime.lazy_init()
        index = runtime.check_index(s.device_index)
        if not 0 <= s.stream_id <= 2 * streams.POOL_SIZE:
            raise RuntimeError(f"Invalid stream id {s.stream_id} for {s.device}")
        return index

    def get_stream(self, d):
        index = self._index(d)
        return streams.handle(index, streams.current_id(index))

    def get_default_stream(self, d):
        return streams.handle(self._index(d), 0)

    def get_stream_from_global_pool(self, d, is_high_priority=False):
        index = self._index(d)
        return streams.handle(index, streams.pools.next_id(index, -1 if is_high_priority else 0))

    def get_new_stream(self, d, priority=0):
        return streams.Stream(self._index(d), priority)

    def exchange_stream(self, s):
        index = self._stream_index(s)
        prev = streams.make_current(index, s.stream_id)
        return streams.handle(index, prev)

    def query_stream(self, s) -> bool:
        index = self._stream_index(s)
        if runtime.mode == "cuda":
            return bool(streams.pools.native(index, s.stream_id).done)
        return True   # emulated work is complete when its op returns

    def synchronize_stream(self, s) -> None:
        index = self._stream_index(s)
        sync_debug.stream_sync()
        if runtime.mode == "cuda":
            streams.pools.native(index, s.stream_id).synchronize()

    def synchronize_device(self, device_index) -> None:
        runtime.lazy_init()
        sync_debug.device_sync()
        index = runtime.check_index(device_index)
        if runtime.mode == "cuda":
            import cupy
            with cupy.cuda.Device(index) as dev:
                dev.synchronize()
            # a failed device-side check surfaces here, as torch reports a device-side assert at a sync
            device_checks.raise_pending()

    # --- events ----------------------------------------------------------------------------------------
    def record_event(self, event, stream, device_index, enable_timing):
        index = self._stream_index(stream)
        if event is None:
            event = events.EventHandle(index, enable_timing)
        first = event.device_index if device_index == -1 else device_index
        if first != index:
            raise RuntimeError(f"Event device index {first} does not match recording stream's device index "
                               f"{index}.")
        events.record(event, stream)
        return event

    def block(self, event, stream) -> None:
        self._stream_index(stream)
        events.block(event, stream)

    def query_event(self, event) -> bool:
        return events.query(event)

    def synchronize_event(self, event) -> None:
        sync_debug.device_sync()    # refused while capturing; torch's sync debug mode does not report it
        events.synchronize(event)

    def elapsed_time(self, event1, event2, device_index) -> float:
        return events.elapsed_ms(event1, event2)


impl = NpuGuardImpl()
