"""cupy.cuda: devices, streams and events of the stand-in (work is synchronous, events keep host time)."""
from __future__ import annotations

import threading
import time

from .. import _core as K
from . import memory, runtime
from .memory import MemoryPointer, MemoryPool, UnownedMemory, get_allocator, set_allocator


def is_available():
    return K.DEVICE_COUNT > 0


class Device:
    def __init__(self, device=None):
        self.id = K.CURRENT.device if device is None else int(device)
        self._prev = []

    def use(self):
        runtime.setDevice(self.id)

    def __enter__(self):
        self._prev.append(K.CURRENT.device)
        runtime.setDevice(self.id)
        return self

    def __exit__(self, *exc):
        K.CURRENT.device = self._prev.pop()

    def synchronize(self):
        pass

    @property
    def compute_capability(self):
        return "90"

    @property
    def mem_info(self):
        with self:
            return runtime.memGetInfo()

    def __int__(self):
        return self.id

    def __eq__(self, other):
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"<CUDA Device {self.id}>"


def get_device_id():
    return K.CURRENT.device


class _StreamState(threading.local):
    def __init__(self):
        self.current = {}


_streams = _StreamState()
_next_ptr = [0x1000]


class Stream:
    null = None

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self.device_id = K.CURRENT.device
        self.non_blocking, self.priority = non_blocking, priority or 0
        if null:
            self.ptr = 0
        else:
            _next_ptr[0] += 16
            self.ptr = _next_ptr[0]
        self._prev = []

    def use(self):
        _streams.current[K.CURRENT.device] = self
        return self

    def __enter__(self):
        self._prev.append(_streams.current.get(K.CURRENT.device))
        _streams.current[K.CURRENT.device] = self
        return self

    def __exit__(self, *exc):
        _streams.current[K.CURRENT.device] = self._prev.pop()

    def synchronize(self):
        pass

    @property
    def done(self):
        return True

    def record(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    def __eq__(self, other):
        return isinstance(other, Stream) and other.ptr == self.ptr and other.device_id == self.device_id

    def __hash__(self):
        return hash((self.ptr, self.device_id))


class ExternalStream(Stream):
    def __init__(self, ptr, device_id=-1):
        super().__init__()
        self.ptr = ptr


Stream.null = Stream(null=True)


def get_current_stream(device_id=None):
    dev = K.CURRENT.device if device_id is None else device_id
    return _streams.current.get(dev) or Stream.null


class Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.block, self.disable_timing = block, disable_timing
        self._t = None
        _next_ptr[0] += 16
        self.ptr = _next_ptr[0]

    def record(self, stream=None):
        self._t = time.perf_counter()

    def synchronize(self):
        pass

    @property
    def done(self):
        return True


def get_elapsed_time(start_event, end_event):
    if start_event.disable_timing or end_event.disable_timing:
        raise runtime.CUDARuntimeError(6, "cudaErrorInvalidResourceHandle: invalid resource handle")
    if start_event._t is None or end_event._t is None:
        raise runtime.CUDARuntimeError(600, "cudaErrorNotReady: device not ready")
    return (end_event._t - start_event._t) * 1000.0
