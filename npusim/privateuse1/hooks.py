"""Hooks a backend registers for the framework's device-generic services: the profiler, ``__config__``
and ``npusim.distributed``.

The profiler, ``npusim.__config__`` and ``npusim.distributed`` never import a backend; they ask these
registries, keyed by device type, and without a registration they describe a
device of their own: op intervals as kernel times, no memory events, no build
line, no collective backend of its own.
"""
from __future__ import annotations

from ..core.c10.device import device as _device

__all__ = ["ProfilerHooks", "register_profiler_hooks", "get_profiler_hooks", "register_build_info",
           "build_info", "register_collective_backends", "run_collective_registrations"]


class ProfilerHooks:
    """What the profiler asks a device type's backend; the defaults describe a synchronous device."""

    def kernel_timer(self):
        """An object timing the kernels of recorded ops, or None to take each op's own interval.

        The timer has ``before(rec)`` and ``after(rec)``, called around each op on the device with
        ``rec.device_index``, ``rec.start_ns`` and ``rec.end_ns`` set, and ``finish(records)``, called once
        when profiling stops; by then ``rec.k_start`` and ``rec.k_end`` must be host-clock nanoseconds
        (``time.perf_counter_ns``) for every record it timed.
        """
        return None

    def add_allocation_observer(self, fn) -> bool:
        """Call ``fn(device_index, nbytes)`` for every allocation (negative ``nbytes``: a free); False if the
        backend cannot report allocations."""
        return False

    def remove_allocation_observer(self, fn) -> None:
        """Stop calling ``fn``."""


_PROFILER_HOOKS: dict = {}
_BUILD_INFO: list = []
_COLLECTIVE_REGISTRATIONS: list = []
_collectives_loaded = False      # npusim.distributed ran the registrations


def register_profiler_hooks(device_type: str, hooks: ProfilerHooks) -> None:
    """Register what the profiler asks about ``device_type`` (kernel times, memory events)."""
    _PROFILER_HOOKS[_device(device_type)._type] = hooks


def get_profiler_hooks(device_type: str) -> ProfilerHooks | None:
    return _PROFILER_HOOKS.get(_device(device_type)._type)


def register_build_info(fn) -> None:
    """Register ``fn() -> (lines, settings)`` for ``npusim.__config__.show()``: lines describing what the
    backend is built on (``"  - CuPy 14.0"``) and build settings (``{"USE_CUDA": "ON"}``)."""
    _BUILD_INFO.append(fn)


def build_info() -> tuple[list, dict]:
    """The registered backends' build lines and settings, in registration order."""
    lines, settings = [], {}
    for fn in _BUILD_INFO:
        more_lines, more_settings = fn()
        lines.extend(more_lines)
        settings.update(more_settings)
    return lines, settings


def register_collective_backends(fn) -> None:
    """Call ``fn()`` when ``npusim.distributed`` is first imported (now, if it already is), so a backend
    registers its process-group backends there (``npusim.privateuse1.distributed``) without making every
    ``import npusim`` load the distributed package."""
    _COLLECTIVE_REGISTRATIONS.append(fn)
    if _collectives_loaded:
        fn()


def run_collective_registrations() -> None:
    """Run the registered ``register_collective_backends`` functions (``npusim.distributed`` calls this)."""
    global _collectives_loaded
    _collectives_loaded = True
    for fn in _COLLECTIVE_REGISTRATIONS:
        fn()
