"""``npusim.accelerator``: device-agnostic access to the current accelerator (torch.accelerator).

The accelerator is the renamed PrivateUse1 backend when one is registered (the
npu); every function answers through that backend's registered device module.
Device arguments follow torch: an int is an index, a string or device must
name the accelerator's type, and None means the current device. Without an
accelerator the functions raise torch's "Cannot access accelerator device when
none is available." (``is_available``, ``device_count`` and
``current_accelerator`` answer False, 0 and None instead).
"""
from __future__ import annotations

import sys
from collections import OrderedDict

from .core.c10 import dtype as _dtypes
from .core.c10.device import PRIVATEUSE1, device, privateuse1_backend_name

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "set_device_idx", "current_device_idx", "synchronize", "device_index", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats", "empty_cache",
           "empty_host_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats", "get_memory_info",
           "get_device_capability", "current_stream", "set_stream", "Graph"]

_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def _registered_module():
    name = privateuse1_backend_name()
    return getattr(sys.modules["npusim"], name, None) if name != PRIVATEUSE1 else None


def _module():
    mod = _registered_module()
    if mod is None or not mod.is_available():
        raise RuntimeError(_NO_ACCELERATOR)
    return mod


def _get_device_index(device_arg, optional: bool = False) -> int:
    """torch.accelerator's index normalisation: an int as it is, a device of the accelerator's type, or None."""
    if isinstance(device_arg, int):
        return device_arg
    dev = device(device_arg) if isinstance(device_arg, str) else device_arg
    index = None
    if isinstance(dev, device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != dev.type:
            raise ValueError(f"{dev.type} doesn't match the current accelerator {acc}.")
        index = dev.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a npusim.device with a specified index or an integer, but got:{device_arg}")
        return current_device_index()
    return index


# --- devices ---------------------------------------------------------------------------------------

def is_available() -> bool:
    mod = _registered_module()
    try:
        return mod is not None and bool(mod.is_available())
    except RuntimeError:
        return False


def current_accelerator(check_available: bool = False):
    """``device(type='npu')``, or None when there is no (available) accelerator."""
    mod = _registered_module()
    if mod is None or (check_available and not is_available()):
        return None
    return device(privateuse1_backend_name())


def device_count() -> int:
    mod = _registered_module()
    if mod is None:
        return 0
    try:
        return int(mod.device_count())
    except RuntimeError:
        return 0


def current_device_index() -> int:
    return _module().current_device()


current_device_idx = current_device_index


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, ``"npu:1"`` or a device) the current one; a negative index is a no-op."""
    index = _get_device_index(device, optional=False)
    if index >= 0:
        _module().set_device(index)


set_device_idx = set_device_index


class device_index:  # noqa: N801 - torch's name
    """Context manager selecting the accelerator device (None leaves it unchanged)."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device_index(self.prev_idx)
        return False


def synchronize(device=None, /) -> None:
    """Wait for all work on ``device``; a no-op while the accelerator is not initialised."""
    mod = _module()
    index = _get_device_index(device, optional=True)
    if mod.is_initialized():
        mod.synchronize(index)


def get_device_capability(device=None, /) -> dict:
    """``{"supported_dtypes": {...}}``: the dtypes tensors on the accelerator can have."""
    mod = _module()
    _get_device_index(device, optional=True)
    dtypes = set(_dtypes.ALL_DTYPES)
    if hasattr(mod, "is_bf16_supported") and not mod.is_bf16_supported(including_emulation=False):
        dtypes.discard(_dtypes.bfloat16)
    return {"supported_dtypes": dtypes}


# --- streams -----------------------------------------------------------------------------------------

def current_stream(device=None, /):
    """The current stream of ``device`` (an index, string or device; default: the current device)."""
    mod = _module()
    if isinstance(device, int) and not isinstance(device, bool):
        device = _device_of_index(device)
    return mod.current_stream(device)


def set_stream(stream) -> None:
    """Make ``stream`` the current stream of its device, and its device the current device."""
    mod = _module()
    name = privateuse1_backend_name()
    if stream.device.type != name:
        raise RuntimeError(f"stream's device type {stream.device.type} doesn't match the current accelerator "
                           f"{name}")
    mod.set_stream(stream)


def _device_of_index(index):
    return device(privateuse1_backend_name(), index)


# --- memory ------------------------------------------------------------------------------------------
# As torch's: before the accelerator's allocator exists (the device is not initialised) the statistics are
# empty and the cache functions do nothing; reading them never initialises the device.

def _initialised_module():
    mod = _module()
    return mod if mod.is_initialized() else None


def memory_stats(device_index=None, /) -> OrderedDict:
    mod = _initialised_module()
    if mod is None:
        return OrderedDict()
    stats = mod.memory_stats(_get_device_index(device_index, optional=True))
    return OrderedDict(sorted(stats.items()))


def memory_allocated(device_index=None, /) -> int:
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index=None, /) -> int:
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index=None, /) -> int:
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index=None, /) -> int:
    return memory_stats(device_index).get("reserved_bytes.all.peak", 0)


def empty_cache() -> None:
    mod = _initialised_module()
    if mod is not None:
        mod.empty_cache()


def empty_host_cache() -> None:
    """Release cached pinned host memory: the npu keeps none, so this only checks there is an accelerator."""
    _module()


def reset_peak_memory_stats(device_index=None, /) -> None:
    mod = _initialised_module()
    if mod is not None:
        mod.reset_peak_memory_stats(_get_device_index(device_index, optional=True))


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    mod = _initialised_module()
    if mod is not None:
        mod.reset_accumulated_memory_stats(_get_device_index(device_index, optional=True))


def get_memory_info(device_index=None, /) -> tuple:
    """(free, total) bytes of the device."""
    return _module().mem_get_info(_get_device_index(device_index, optional=True))


# --- graphs ------------------------------------------------------------------------------------------------

class Graph:
    """A graph of the accelerator's work that can be captured and replayed (torch.accelerator.Graph).

    ``with stream, graph:`` captures the block's work on ``stream`` (a non-default stream); ``replay()`` runs it
    again on the same memory. It is the accelerator's own graph (``npusim.npu.CUDAGraph`` for the npu) with the
    pool and capture error mode given here; ``"default"`` is the backend's default mode, ``"global"``.
    """

    def __init__(self, keep_graph: bool = False, *, pool=None, capture_error_mode: str = "default"):
        self._graph = _module().CUDAGraph(keep_graph)
        self.graph_pool = pool
        self.capture_error_mode = capture_error_mode

    def capture_begin(self) -> None:
        """Begin capturing the work issued on the current stream, with this graph's pool and error mode."""
        mode = "global" if self.capture_error_mode == "default" else self.capture_error_mode
        self._graph.capture_begin(pool=self.graph_pool, capture_error_mode=mode)

    def capture_end(self) -> None:
        """End the capture; the graph can be replayed from now on."""
        self._graph.capture_end()

    def instantiate(self) -> None:
        """Make the captured graph ready to replay (``capture_end`` does it)."""
        self._graph.instantiate()

    def replay(self) -> None:
        """Replay the work captured by this graph."""
        self._graph.replay()

    def reset(self) -> None:
        """Delete the captured graph; the instance may capture again (with ``graph_pool`` and
        ``capture_error_mode`` as they are then)."""
        self._graph.reset()

    def pool(self) -> tuple:
        """The id of this graph's memory pool, to share with another graph's capture."""
        return self._graph.pool()

    def enable_debug_mode(self) -> None:
        """Enable ``debug_dump``."""
        self._graph.enable_debug_mode()

    def debug_dump(self, path: str) -> None:
        """Write the captured graph to ``path`` (after ``enable_debug_mode``)."""
        self._graph.debug_dump(path)

    def __enter__(self) -> None:
        synchronize()
        empty_cache()
        empty_host_cache()
        self.capture_begin()

    def __exit__(self, *exc_info) -> None:
        self.capture_end()
