"""API-usage logging (c10's SetAPIUsageLogger and _log_api_usage_once).

npusim names its main entry points with keys (``python.import``, ``npusim.save``...)
and reports each key at most once per process to a logger the application sets.
Nothing is sent anywhere: without a logger the keys only wait in memory, and
with one they go to that function and nowhere else. Keys used before a logger is
set are handed to the next logger that is set, once each, so a logger set after
``import npusim`` still hears ``python.import``.
"""
from __future__ import annotations

import threading
import warnings

_lock = threading.Lock()
_seen: set = set()          # every key ever used in this process
_waiting: list = []         # keys used while no logger was set, in order
_logger = None
_logger_warned = False


def log_api_usage_once(key: str) -> None:
    """Report ``key`` to the API-usage logger, the first time it is used in this process."""
    if key in _seen:    # the common case: one set lookup
        return
    if not isinstance(key, str):
        raise TypeError("bad argument type for built-in operation")   # torch._C's message
    with _lock:
        if key in _seen:
            return
        _seen.add(key)
        logger = _logger
        if logger is None:
            _waiting.append(key)
            return
    _call(logger, key)


def set_api_usage_logger(fn) -> None:
    """Send each API-usage key to ``fn(key)``, once per process; ``None`` stops logging.

    Keys used before any logger was set are delivered to ``fn`` now, in the order
    they were first used.
    """
    global _logger
    if fn is not None and not callable(fn):
        raise TypeError(f"set_api_usage_logger(): the logger must be callable or None, not {type(fn).__name__}")
    with _lock:
        _logger = fn
        waiting = list(_waiting) if fn is not None else []
        if fn is not None:
            _waiting.clear()
    for key in waiting:
        _call(fn, key)


def _call(logger, key) -> None:
    # A broken logger must not break the npusim call that triggered it.
    global _logger_warned
    try:
        logger(key)
    except Exception as exc:   # noqa: BLE001 - reported once, then ignored
        if not _logger_warned:
            _logger_warned = True
            warnings.warn(f"the API usage logger raised {type(exc).__name__}: {exc}; npusim goes on "
                          f"(later errors of the logger are not reported)", RuntimeWarning, stacklevel=3)
