"""Thread-local dispatch state and the process-wide "slow path" switch.

The dispatcher's fast path reads one module global, ``SLOW``; it is non-zero
while anything that changes how ops dispatch is active in any thread (a
thread-local include/exclude set, autocast, record-function callbacks). Only then
do calls pay for reading thread-local state.
"""
from __future__ import annotations

import threading

from ..c10.dispatch_keys import ALL_RUNTIME_MASK, DispatchKey, DispatchKeySet, _runtime_key, mask


class _DispatchTLS(threading.local):
    # Class attributes are every thread's starting values.
    included = 0
    excluded = 0
    autocast = 0  # bits of the Autocast* keys enabled in this thread


tls = _DispatchTLS()

_slow_lock = threading.Lock()
# Read by generated dispatch functions through dispatcher.GEN_GLOBALS.
_slow_reasons = 0
_listeners = []


def slow_path_active() -> bool:
    """Whether anything (callbacks, autocast, key guards) currently routes ops through the slow path."""
    return _slow_reasons > 0


def on_slow_change(fn):
    """Register ``fn(count)`` to learn the number of active slow-path reasons."""
    _listeners.append(fn)
    fn(_slow_reasons)


def enter_slow() -> None:
    """Something that needs the slow dispatch path became active."""
    global _slow_reasons
    with _slow_lock:
        _slow_reasons += 1
        for fn in _listeners:
            fn(_slow_reasons)


def exit_slow() -> None:
    global _slow_reasons
    with _slow_lock:
        _slow_reasons -= 1
        for fn in _listeners:
            fn(_slow_reasons)


def _as_mask(keys) -> int:
    """A key, a key name, a DispatchKeySet or several keys -> a bit mask of runtime keys."""
    if isinstance(keys, (DispatchKey, str)):
        return 1 << _runtime_key(keys)
    if isinstance(keys, int):
        return int(keys) & ALL_RUNTIME_MASK
    return mask(_runtime_key(k) for k in keys)


class _KeyGuard:
    _field = ""

    def __init__(self, keys):
        self._mask = _as_mask(keys)
        self._prev = None

    def __enter__(self):
        self._prev = getattr(tls, self._field)
        setattr(tls, self._field, self._prev | self._mask)
        enter_slow()
        return self

    def __exit__(self, *exc):
        setattr(tls, self._field, self._prev)
        exit_slow()
        return False


class _IncludeDispatchKeyGuard(_KeyGuard):
    """Adds keys to every dispatch in this thread while active (torch._C's name)."""
    _field = "included"


class _ExcludeDispatchKeyGuard(_KeyGuard):
    """Removes keys from every dispatch in this thread while active (torch._C's name)."""
    _field = "excluded"


def _dispatch_tls_local_include_set() -> DispatchKeySet:
    return DispatchKeySet(tls.included)


def _dispatch_tls_local_exclude_set() -> DispatchKeySet:
    return DispatchKeySet(tls.excluded)
