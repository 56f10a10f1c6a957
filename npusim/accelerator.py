"""``npusim.accelerator``: device-agnostic access to the current accelerator (torch.accelerator).

The accelerator is the renamed PrivateUse1 backend when one is registered (the
npu); every function answers through that backend's registered device module.
"""
from __future__ import annotations

import sys

from .core.device import PRIVATEUSE1, device, privateuse1_backend_name

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index", "set_device_index",
           "set_device_idx", "current_device_idx", "synchronize", "device_index", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats", "empty_cache",
           "reset_peak_memory_stats", "reset_accumulated_memory_stats", "get_memory_info"]


def _module():
    name = privateuse1_backend_name()
    mod = getattr(sys.modules["npusim"], name, None) if name != PRIVATEUSE1 else None
    if mod is None:
        raise RuntimeError("npusim has no accelerator: no PrivateUse1 backend with a device module is registered")
    return mod


def is_available() -> bool:
    try:
        return bool(_module().is_available())
    except RuntimeError:
        return False


def current_accelerator(check_available: bool = False):
    """``device(type='npu')``, or None when there is no (available) accelerator."""
    try:
        mod = _module()
    except RuntimeError:
        return None
    if check_available and not mod.is_available():
        return None
    return device(privateuse1_backend_name())


def device_count() -> int:
    try:
        return int(_module().device_count())
    except RuntimeError:
        return 0


def current_device_index() -> int:
    return _module().current_device()


current_device_idx = current_device_index


def set_device_index(device) -> None:
    _module().set_device(device)


set_device_idx = set_device_index


class device_index:
    """Context manager selecting the accelerator device (None leaves it unchanged)."""

    def __init__(self, device):
        self.idx = device
        self.prev = None

    def __enter__(self):
        if self.idx is not None:
            self.prev = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device_index(self.prev)
        return False


def synchronize(device=None) -> None:
    _module().synchronize(device)


def memory_allocated(device_index=None) -> int:
    return _module().memory_allocated(device_index)


def max_memory_allocated(device_index=None) -> int:
    return _module().max_memory_allocated(device_index)


def memory_reserved(device_index=None) -> int:
    return _module().memory_reserved(device_index)


def max_memory_reserved(device_index=None) -> int:
    return _module().max_memory_reserved(device_index)


def memory_stats(device_index=None) -> dict:
    return _module().memory_stats(device_index)


def empty_cache() -> None:
    _module().empty_cache()


def reset_peak_memory_stats(device_index=None) -> None:
    _module().reset_peak_memory_stats(device_index)


def reset_accumulated_memory_stats(device_index=None) -> None:
    _module().reset_accumulated_memory_stats(device_index)


def get_memory_info(device_index=None) -> tuple:
    return _module().mem_get_info(device_index)
