"""Thread-local debug info (c10::ThreadLocalDebugInfo and at::DebugInfoGuard).

A higher layer (a serving system, a training loop) attaches information such as a
model id to everything that runs below it::

    with DebugInfoGuard(DebugInfoKind.INFERENCE_CONTEXT, {"model_id": 7}):
        model(x)          # every op callback can read ThreadLocalDebugInfo.get(INFERENCE_CONTEXT)

The entries of a thread form an immutable linked list, newest first, so that
capturing the whole state (to hand it to a forked task) is one reference copy and
restoring it can never disturb the thread it was captured from.
"""
from __future__ import annotations

import enum
import threading


class DebugInfoKind(enum.IntEnum):
    """The kinds of debug info, as c10 numbers them."""
    PRODUCER_INFO = 0
    MOBILE_RUNTIME_INFO = 1
    PROFILER_STATE = 2
    INFERENCE_CONTEXT = 3   # for inference use cases
    PARAM_COMMS_INFO = 4
    TEST_INFO = 5           # used only in tests
    TEST_INFO_2 = 6         # used only in tests


class _Entry:
    __slots__ = ("kind", "info", "parent")

    def __init__(self, kind, info, parent):
        self.kind, self.info, self.parent = kind, info, parent


class _DebugTLS(threading.local):
    head = None   # newest _Entry of this thread, or None


_tls = _DebugTLS()


def _check_kind(kind) -> DebugInfoKind:
    if not isinstance(kind, DebugInfoKind):
        raise TypeError(f"debug info kind must be a npusim.profiler.DebugInfoKind, not {type(kind).__name__}")
    return kind


class ThreadLocalDebugInfo:
    """Read (and, for the framework, capture and restore) the current thread's debug info."""

    @staticmethod
    def get(kind):
        """The innermost info of ``kind`` set in this thread (or carried into it), or None."""
        _check_kind(kind)
        e = _tls.head
        while e is not None:
            if e.kind is kind:
                return e.info
            e = e.parent
        return None

    @staticmethod
    def current():
        """An opaque snapshot of this thread's whole debug info (for ``_forceCurrentDebugInfo``)."""
        return _tls.head

    @staticmethod
    def _forceCurrentDebugInfo(snapshot):
        """Replace this thread's debug info by ``snapshot``; returns the one it replaces."""
        prev = _tls.head
        _tls.head = snapshot
        return prev


class DebugInfoGuard:
    """Set ``info`` as this thread's debug info of ``kind`` while the block runs.

    As in c10, a guard with ``info=None`` changes nothing. The info is seen by op
    callbacks in this thread, in the backward pass run from it, and in tasks
    forked from it.
    """

    __slots__ = ("_kind", "_info", "_prev", "_active")

    def __init__(self, kind, info):
        self._kind = _check_kind(kind)
        self._info = info
        self._prev = None
        self._active = False

    def __enter__(self):
        if self._active:
            raise RuntimeError("this DebugInfoGuard is already active; make a new one for a nested block")
        if self._info is not None:
            self._prev = _tls.head
            _tls.head = _Entry(self._kind, self._info, self._prev)
            self._active = True
        return self

    def __exit__(self, *exc):
        if self._active:
            _tls.head = self._prev
            self._prev = None
            self._active = False
        return False
