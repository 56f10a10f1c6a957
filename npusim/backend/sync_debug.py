"""Operations that make the host wait for the npu: torch.cuda's sync debug mode, and the refusal of a capture.

A synchronizing operation is one the host cannot finish before the device has: reading device memory back
(``item``, ``tolist``, printing, ``.cpu()``, and the ops whose result size depends on the data, such as
``nonzero``, which npusim runs through the CPU fallback) and waiting for a stream (``Stream.synchronize``).
Each tells this module first (``host_read``, ``stream_sync``, ``device_sync``):

- under ``set_sync_debug_mode("warn")`` (1) the operation warns and under ``"error"`` (2) it raises, with
  torch's message ``called a synchronizing CUDA operation`` naming the npu, as torch does for the operations
  that call ``cudaStreamSynchronize`` implicitly (an explicit ``synchronize()`` of the device is not reported);
- while a graph is being captured (``graphs.py``), every synchronizing operation raises the error CUDA gives
  on a capturing stream, and the capture is invalidated, as CUDA invalidates it.

The checks cost nothing while neither is active: the core's host-read hook is registered only then.
"""
from __future__ import annotations

import threading
import warnings

from ..privateuse1 import privateuse1_backend_name, register_host_read_hook
from ..privateuse1.codegen import user_stacklevel

_MODES = {"default": 0, "warn": 1, "error": 2}
_mode = 0
_capture = None      # fn(what) raising the capture error, set while a graph capture is underway
_lock = threading.Lock()


def get_mode() -> int:
    return _mode


def set_mode(debug_mode) -> None:
    """0 / ``"default"``, 1 / ``"warn"`` or 2 / ``"error"``, as torch.cuda.set_sync_debug_mode takes it."""
    global _mode
    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"set_sync_debug_mode(): argument 'debug_mode' must be int or str, not "
                        f"{type(debug_mode).__name__}")
    # torch's c10 clamps an unknown level to the nearest: anything below 1 is off, above 1 errors
    with _lock:
        _mode = 0 if debug_mode < 1 else 1 if debug_mode == 1 else 2
        _update_hook()


def set_capture_check(check) -> None:
    """``check(what)`` raises for a synchronizing operation while a graph capture is underway (None: none)."""
    global _capture
    with _lock:
        _capture = check
        _update_hook()


def _update_hook() -> None:
    register_host_read_hook(privateuse1_backend_name(), _on_host_read if (_mode or _capture) else None)


def _on_host_read(device) -> None:
    host_read()


def _report() -> None:
    msg = f"called a synchronizing {privateuse1_backend_name()} operation"
    if _mode == 2:
        raise RuntimeError(msg)
    warnings.warn(msg, UserWarning, stacklevel=user_stacklevel())


def host_read() -> None:
    """Device memory is about to be read by the host (an implicit synchronization)."""
    if _capture is not None:
        _capture("a device-to-host copy")
    if _mode:
        _report()


def stream_sync() -> None:
    """The host is about to wait for a stream (``Stream.synchronize``), reported as torch's stream_synchronize."""
    if _capture is not None:
        _capture("a stream synchronization")
    if _mode:
        _report()


def device_sync() -> None:
    """The host is about to wait for the whole device (``synchronize()``): refused during a capture only."""
    if _capture is not None:
        _capture("a device synchronization")
