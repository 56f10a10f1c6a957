"""The default device for factory functions (``npusim.set_default_device``)."""
from __future__ import annotations

import threading

_global_default = None


class _Stack(threading.local):
    stack: tuple = ()


_tls = _Stack()


def set_default_device(device) -> None:
    """Make factories without ``device=`` allocate on ``device`` (None restores cpu)."""
    global _global_default
    from .device import device as _device
    _global_default = None if device is None else _device(device)


def get_default_device():
    from .device import CPU
    d = current_default()
    return CPU if d is None else d


def current_default():
    """The default device in effect for this thread, or None for cpu."""
    st = _tls.stack
    if st:
        return st[-1]
    return _global_default


def push_default_device(d) -> None:
    _tls.stack = _tls.stack + (d,)


def pop_default_device() -> None:
    _tls.stack = _tls.stack[:-1]
