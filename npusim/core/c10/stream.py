"""``npusim.Stream`` and ``npusim.Event``: device-generic streams and events (torch.Stream, torch.Event).

A stream is a handle (device type, device index, stream id); an event holds
the handle its device's guard implementation made when it was first
recorded. Everything they do is asked of the guard implementation registered
for their device type, so they work for any backend that registers one.
"""
from __future__ import annotations

from .device import CPU, PRIVATEUSE1, device, privateuse1_backend_name
from .device_guard import get_guard_impl, has_guard_impl

__all__ = ["Stream", "Event"]

# torch's c10::DeviceType codes, which Stream.device_type reports
_TYPE_CODES = {"cpu": 0, "cuda": 1, "mkldnn": 2, "opengl": 3, "opencl": 4, "ideep": 5, "hip": 6, "fpga": 7,
               "maia": 8, "xla": 9, "vulkan": 10, "mps": 13, "meta": 14, "hpu": 15, "ve": 16, "lazy": 17,
               "ipu": 18, "mtia": 19, PRIVATEUSE1: 20, "xpu": 12}
_TYPE_OF_CODE = {v: k for k, v in _TYPE_CODES.items()}


def _type_of(device_type) -> str:
    """A canonical device-type name from torch's integer code, a name or a device."""
    if isinstance(device_type, int) and not isinstance(device_type, bool):
        try:
            return _TYPE_OF_CODE[device_type]
        except KeyError:
            raise RuntimeError(f"Unknown device type code {device_type}") from None
    return device(device_type)._type


def _display(typ: str) -> str:
    return privateuse1_backend_name() if typ == PRIVATEUSE1 else typ


def current_accelerator_type() -> str:
    """The PrivateUse1 backend once renamed and guarded, else cpu: what ``Stream()`` and ``Event()`` default to."""
    if privateuse1_backend_name() != PRIVATEUSE1 and has_guard_impl(PRIVATEUSE1):
        return PRIVATEUSE1
    return "cpu"


def _device_of(device_arg):
    """``device_arg`` (None, int, str or device) as a device; an index means the accelerator."""
    if device_arg is None:
        typ = current_accelerator_type()
        return CPU if typ == "cpu" else get_guard_impl(typ).get_device()
    d = device(device_arg)
    if d._type == "cpu":
        return CPU
    if d.index is None:
        d = get_guard_impl(d).get_device()
    else:
        count = get_guard_impl(d).device_count()
        if d.index >= count:
            raise RuntimeError(f"Invalid device index {d.index}: the {d.type} backend has {count} device"
                               f"{'s' if count != 1 else ''} (valid indices 0..{count - 1})")
    return d


class Stream:
    """An in-order queue of work on one device.

    ``Stream(device=None, *, priority=0)`` takes a new stream of ``device``
    (default: the current accelerator device); ``Stream(stream_id=...,
    device_index=..., device_type=...)`` rebuilds the handle of an existing one.
    ``with stream:`` makes its device current and it the current stream there.
    """

    __slots__ = ("stream_id", "device_index", "_type", "priority", "_context")

    def __init__(self, device=None, *, priority=0, stream_id=None, device_index=None, device_type=None):
        if stream_id is not None or device_index is not None or device_type is not None:
            if stream_id is None or device_index is None or device_type is None:
                raise TypeError("Stream(): stream_id, device_index and device_type must be given together")
            self._set(int(stream_id), int(device_index), _type_of(device_type), priority)
            return
        d = _device_of(device)
        s = get_guard_impl(d).get_new_stream(d, priority)
        self._set(s.stream_id, s.device_index, s._type, s.priority)

    def _set(self, stream_id, device_index, typ, priority):
        self.stream_id = stream_id
        self.device_index = device_index
        self._type = typ
        self.priority = priority
        self._context = []

    @property
    def device_type(self) -> int:
        """torch's integer code of the device type (20 for the PrivateUse1 backend)."""
        return _TYPE_CODES[self._type]

    @property
    def device(self):
        if self.device_index < 0:
            return device(_display(self._type))
        return device(_display(self._type), self.device_index)

    @property
    def _impl(self):
        return get_guard_impl(self._type)

    def query(self) -> bool:
        """True when all work submitted to the stream has completed."""
        return self._impl.query_stream(self)

    def synchronize(self) -> None:
        """Wait for all work submitted to the stream."""
        self._impl.synchronize_stream(self)

    def wait_event(self, event) -> None:
        """Make future work on this stream wait for ``event`` (returns at once)."""
        event.wait(self)

    def wait_stream(self, stream) -> None:
        """Make future work on this stream wait for the work submitted to ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one if None) on this stream and return it."""
        if event is None:
            event = Event(self.device if self._type != "cpu" else "cpu")
        event.record(self)
        return event

    def __enter__(self):
        if self._type == "cpu":
            return self
        from .device_guard import StreamGuard
        guard = StreamGuard(self)
        guard.__enter__()
        self._context.append(guard)
        return self

    def __exit__(self, *exc):
        if self._type != "cpu" and self._context:
            self._context.pop().__exit__(*exc)
        return False

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return (self.stream_id, self.device_index, self._type) == (other.stream_id, other.device_index, other._type)

    def __hash__(self):
        return hash((self.stream_id, self.device_index, self._type))

    def __repr__(self):
        return (f"npusim.Stream device_type={_display(self._type)}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """A marker in a stream: record it, wait on it from other streams, query it, time between two.

    ``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``;
    the device index is fixed when the event is first recorded.
    """

    def __init__(self, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        if device is None:
            self._type = current_accelerator_type()
        else:
            self._type = _type_of(device)
        self.enable_timing = bool(enable_timing)
        self.blocking = bool(blocking)
        self.interprocess = bool(interprocess)
        self._index = -1
        self._handle = None

    @property
    def _impl(self):
        return get_guard_impl(self._type)

    @property
    def device(self):
        if self._index < 0:
            return device(_display(self._type))
        return device(_display(self._type), self._index)

    @property
    def event_id(self) -> int:
        """Nonzero once recorded; distinct between events."""
        return 0 if self._handle is None else getattr(self._handle, "event_id", id(self._handle))

    def _current_stream(self):
        impl = self._impl
        return impl.get_stream(impl.get_device())

    def record(self, stream=None) -> None:
        """Record the event on ``stream`` (default: the current stream of the event's device type)."""
        if stream is None:
            stream = self._current_stream()
        if stream._type != self._type:
            raise RuntimeError(f"Event device type {_display(self._type).upper()} does not match recording "
                               f"stream's device type {_display(stream._type).upper()}.")
        self._handle = self._impl.record_event(self._handle, stream, self._index, self.enable_timing)
        self._index = stream.device_index

    def wait(self, stream=None) -> None:
        """Make future work on ``stream`` wait for this event (nothing to wait for if never recorded)."""
        if stream is None:
            stream = self._current_stream()
        if self._handle is None:
            return
        if stream._type != self._type:
            raise RuntimeError(f"Event device type {_display(self._type).upper()} does not match blocking "
                               f"stream's device type {_display(stream._type).upper()}.")
        self._impl.block(self._handle, stream)

    def query(self) -> bool:
        """True when the work captured by the last record has completed (True if never recorded)."""
        if self._handle is None:
            return True
        return self._impl.query_event(self._handle)

    def synchronize(self) -> None:
        """Wait for the work captured by the last record."""
        if self._handle is not None:
            self._impl.synchronize_event(self._handle)

    def elapsed_time(self, end_event) -> float:
        """Milliseconds between this event's record and ``end_event``'s."""
        if end_event._type != self._type:
            raise RuntimeError(f"Event device type {_display(self._type).upper()} does not match other's device "
                               f"type {_display(end_event._type).upper()}.")
        if not (self.enable_timing and end_event.enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._handle is None or end_event._handle is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if self._index != end_event._index:
            raise RuntimeError(f"Event device index {self._index} does not match other's device index "
                               f"{end_event._index}.")
        return self._impl.elapsed_time(self._handle, end_event._handle, self._index)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is not None:
            try:
                self._impl.destroy_event(handle, self._index)
            except Exception:  # interpreter shutdown: the backend may be gone
                pass

    def __repr__(self):
        return (f"npusim.Event device_type={_display(self._type)}, device_index={self._index}, "
                f"event_flag={int(self.enable_timing)}, event_id={self.event_id}")
