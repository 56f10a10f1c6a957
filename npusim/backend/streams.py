"""npu streams: ``npusim.npu.Stream``, the per-thread current stream of each device, ``npusim.npu.stream(...)``.

Stream 0 of every device is its default stream; ``Stream()`` takes the next of
a round-robin pool of 32 streams per device and priority, as CUDA's does.

cuda mode: each stream is a CuPy stream (the default one is CuPy's null
stream), made current in CuPy when it becomes current here, so kernels launch
on it. Emulation: the emulated device runs each op to completion when it is
issued, in issue order, so every stream is always idle: ``query`` is true,
``synchronize`` returns at once and waits between streams are already met.
"""
from __future__ import annotations

import threading

from .. import device as _device
from ..privateuse1 import PRIVATEUSE1, privateuse1_backend_name
from ..privateuse1 import Stream as _Stream
from .runtime import runtime

__all__ = ["Stream", "StreamContext", "stream", "set_stream", "current_stream", "default_stream"]

POOL_SIZE = 32
_HIGH_PRIORITY = -1      # priorities are clamped to 0 (low) or -1 (high), CUDA's usual range
NPU_TYPE_CODE = 20      # c10::DeviceType::PrivateUse1


def _clamp_priority(priority: int) -> int:
    return _HIGH_PRIORITY if priority < 0 else 0


def stream_id_for(slot: int, priority: int) -> int:
    """Pool ids: 1..32 for priority 0, 33..64 for priority -1."""
    return 1 + slot + (POOL_SIZE if priority < 0 else 0)


def priority_of(stream_id: int) -> int:
    return _HIGH_PRIORITY if stream_id > POOL_SIZE else 0


class _Pools:
    """Round-robin slots per (device, priority), and the CuPy stream behind each id in cuda mode."""

    def __init__(self):
        self._lock = threading.Lock()
        self._next: dict = {}
        self._native: dict = {}

    def next_id(self, index: int, priority: int) -> int:
        with self._lock:
            slot = self._next.get((index, priority), 0)
            self._next[(index, priority)] = (slot + 1) % POOL_SIZE
        return stream_id_for(slot, priority)

    def native(self, index: int, stream_id: int):
        """The CuPy stream of (device, id); CuPy keeps only a weak reference to its current stream, this keeps
        the strong one."""
        s = self._native.get((index, stream_id))
        if s is None:
            import cupy
            if stream_id == 0:
                s = cupy.cuda.Stream.null
            else:
                with cupy.cuda.Device(index):
                    try:
                        s = cupy.cuda.Stream(non_blocking=True, priority=priority_of(stream_id))
                    except TypeError:   # a CuPy without stream priorities
                        s = cupy.cuda.Stream(non_blocking=True)
            with self._lock:
                s = self._native.setdefault((index, stream_id), s)
        return s


pools = _Pools()


class _CurrentStreams(threading.local):
    """This thread's current stream id per device (CUDA's current streams are per thread)."""

    def __init__(self):
        self.ids: dict = {}


_current = _CurrentStreams()


def current_id(index: int) -> int:
    return _current.ids.get(index, 0)


def make_current(index: int, stream_id: int) -> int:
    """Make ``stream_id`` the current stream of device ``index`` in this thread; return the previous id."""
    ids = _current.ids
    prev = ids.get(index, 0)
    ids[index] = stream_id
    if runtime.mode == "cuda":
        apply_to_cupy(index)
    return prev


def apply_to_cupy(index: int) -> None:
    """Tell CuPy which stream kernels on device ``index`` launch on (cuda mode)."""
    import cupy
    native = pools.native(index, current_id(index))
    with cupy.cuda.Device(index):
        native.use()


def handle(index: int, stream_id: int) -> "Stream":
    return Stream(stream_id=stream_id, device_index=index, device_type=NPU_TYPE_CODE)


def _index_of(device) -> int:
    """An npu index from None (current device), an int, a string or a device."""
    runtime.lazy_init()
    if device is None:
        return runtime.current_device()
    if isinstance(device, int) and not isinstance(device, bool):
        return runtime.check_index(device)
    d = _device(device)
    if d.type != privateuse1_backend_name():
        raise ValueError(f"Expected a npu device, but got: {d}")
    return runtime.current_device() if d.index is None else runtime.check_index(d.index)


class Stream(_Stream):
    """A stream of one npu device: ``npusim.npu.Stream(device=None, priority=0)``.

    Lower priority numbers run first; priorities are clamped to 0 or -1.
    """

    def __init__(self, device=None, priority=0, **kwargs):
        if kwargs:
            super().__init__(stream_id=kwargs.pop("stream_id", None), device_index=kwargs.pop("device_index", None),
                             device_type=kwargs.pop("device_type", None), priority=priority)
            if kwargs:
                raise TypeError(f"Stream() got an unexpected keyword argument '{next(iter(kwargs))}'")
            self.priority = priority_of(self.stream_id)
            return
        if isinstance(device, int) and not isinstance(device, bool) and device < 0:
            device = None   # torch: a negative index means the current device
        index = _index_of(device)
        p = _clamp_priority(priority)
        self._set(pools.next_id(index, p), index, PRIVATEUSE1, p)

    @property
    def npu_stream(self) -> int:
        """The raw stream handle: CuPy's ``ptr`` in cuda mode, the stream id in emulation."""
        if runtime.mode == "cuda":
            return int(pools.native(self.device_index, self.stream_id).ptr)
        return self.stream_id

    def wait_event(self, event) -> None:
        event.wait(self)

    def wait_stream(self, stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        if event is None:
            from .events import Event
            event = Event()
        event.record(self)
        return event

    def __repr__(self):
        return f"<npusim.npu.Stream device={self.device} npu_stream={self.npu_stream:#x}>"


def current_stream(device=None) -> Stream:
    """This thread's current stream of ``device`` (default: the current device)."""
    index = _index_of(device)
    return handle(index, current_id(index))


def default_stream(device=None) -> Stream:
    """The default stream (id 0) of ``device``."""
    return handle(_index_of(device), 0)


def set_stream(stream) -> None:
    """Make ``stream`` current on its device and its device current, as torch.cuda.set_stream (None: no-op)."""
    if stream is None:
        return
    from .guard import impl
    impl.set_device(stream.device)
    impl.exchange_stream(stream)


class StreamContext:
    """``with StreamContext(s):`` runs the block on stream ``s`` (and its device); no-op for None."""

    def __init__(self, stream):
        self.stream = stream
        self.src_prev_stream = None
        self.dst_prev_stream = None

    def __enter__(self):
        cur = self.stream
        if cur is None:
            return cur
        self.src_prev_stream = current_stream(None)
        if self.src_prev_stream.device != cur.device:
            self.dst_prev_stream = current_stream(cur.device)
        set_stream(cur)
        return cur

    def __exit__(self, *exc):
        cur = self.stream
        if cur is None:
            return False
        if self.src_prev_stream.device != cur.device:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)
        return False


def stream(stream) -> StreamContext:
    """``with npusim.npu.stream(s):`` runs the block on ``s``."""
    return StreamContext(stream)
