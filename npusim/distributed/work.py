"""``Work``: the handle of a collective in flight, and the watchdog that bounds every wait.

Backends start their transfers without blocking and hand back a ``Work``. Waiting
polls it, yielding the core between polls (ranks may share cores), and gives up
with a ``DistBackendError`` once the group's timeout has passed: a rank that died,
exited early or is stuck elsewhere never leaves the others hanging. A timed-out
wait aborts the backend, so every later call on the group fails at once.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from datetime import timedelta

from ..core.c10.device_guard import DeviceGuard, has_guard_impl
from ..core.runtime.futures import Future
from .errors import DistBackendError, DistError

_monotonic = time.monotonic
_sleep = time.sleep


def seconds_of(timeout) -> float:
    """A timeout (``timedelta`` or seconds) in seconds."""
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


def on_device(device):
    """``device`` made current while a collective touches its tensors' arrays: an accelerator's array library
    allocates on, and launches to, the current device (torch's collectives take a device guard likewise)."""
    if device is None or device.type == "cpu" or not has_guard_impl(device):
        return nullcontext()
    return DeviceGuard(device)


def poll_until(test, timeout_s: float, on_timeout) -> None:
    """Call ``test()`` until it returns True; ``on_timeout()`` (which must raise) once ``timeout_s`` has passed."""
    if test():
        return
    deadline = _monotonic() + timeout_s
    while True:
        _sleep(0)   # yield: with more ranks than cores, a busy loop would starve the peer it waits for
        if test():
            return
        if _monotonic() > deadline:
            on_timeout()
            raise AssertionError("on_timeout must raise")


class Work:
    """A collective started without blocking (``torch.distributed.Work``).

    ``wait()`` blocks until it completes (or fails: the error is raised), ``is_completed()`` asks without
    blocking. ``result()`` gives the output tensors (``get_future()`` a future of them), ``source_rank()``
    the sender of a receive from any rank. The base class is a work that is already complete; backends
    subclass ``_test``.
    """

    def __init__(self, what: str = "collective", timeout_s: float = 1800.0, *, backend=None, result=()):
        self._what = what
        self._timeout_s = timeout_s
        self._backend = backend
        self._result = list(result)
        self._then = []
        self._done = False
        self._exception = None
        self._source = -1
        self._device = None

    # --- for backends and the collectives layer ---------------------------------------------------------
    def _test(self) -> bool:
        """True once the transfer has completed; may raise the backend's error."""
        return True

    def then(self, fn) -> "Work":
        """Run ``fn()`` once the transfer completes (copy results back, scale, unpickle...)."""
        self._then.append(fn)
        return self

    def _complete(self) -> None:
        self._done = True
        try:
            with on_device(self._device):
                for fn in self._then:
                    fn()
        except Exception as e:  # a check made on the received data (p2p header mismatch...)
            self._exception = e
        self._then = []

    def _fail(self, error: Exception) -> None:
        if not isinstance(error, DistError):
            wrapped = DistBackendError(f"{self._what} failed: {error}")
            wrapped.__cause__ = error
            error = wrapped
        self._done = True
        self._exception = error
        self._then = []

    def _timed_out(self, seconds: float) -> None:
        msg = (f"{self._what} timed out after {seconds:g} s waiting for the other ranks: a rank may have exited, "
               f"crashed, or be stuck in other code. The group is aborted: its later calls fail at once.")
        error = DistBackendError(msg)
        if self._backend is not None:
            self._backend.abort(msg)
        self._fail(error)
        raise error

    # --- the public API ------------------------------------------------------------------------------------
    def is_completed(self) -> bool:
        if not self._done:
            try:
                done = self._test()
            except Exception as e:
                self._fail(e)
                return True
            if done:
                self._complete()
        return self._done

    def wait(self, timeout=None) -> bool:
        """Block until the work completes; raise its error, or ``DistBackendError`` after the timeout."""
        if not self._done:
            limit = self._timeout_s
            if timeout is not None and seconds_of(timeout) > 0:   # torch: timedelta(0) means the group's timeout
                limit = seconds_of(timeout)
            try:
                poll_until(self._test, limit, lambda: self._timed_out(limit))
            except Exception as e:
                if self._exception is None:     # a backend error (a timeout has already recorded itself)
                    self._fail(e)
                if self._exception is e:
                    raise
                raise self._exception from e
            self._complete()
        if self._exception is not None:
            raise self._exception
        return True

    synchronize = wait

    def is_success(self) -> bool:
        return self.is_completed() and self._exception is None

    def exception(self):
        return self._exception

    def result(self) -> list:
        self.wait()
        return list(self._result)

    def get_future(self):
        """A ``npusim.futures.Future`` completed with ``result()`` once the work completes (or with its error).

        Nothing progresses in the background: waiting on the future, or on one chained from it with ``then``,
        waits on the work; ``done()`` asks it without blocking.
        """
        future = _WorkFuture(self)
        if self.is_completed():
            future._settle()
        else:
            self.then(future._settle)
        return future

    def source_rank(self) -> int:
        """The group rank a receive from any rank got its data from (after completion)."""
        self.wait()
        return self._source

    _source_rank = source_rank

    def __repr__(self):
        state = "failed" if self._exception is not None else "completed" if self._done else "pending"
        return f"<npusim.distributed.Work {self._what}: {state}>"


class _Driven(Future):
    """A future that waiting drives: ``wait()`` waits on the work at its root, ``done()`` polls it."""

    _root: _WorkFuture

    def done(self) -> bool:
        if not self._done:
            self._root._poll()
        return self._done

    def then(self, callback) -> Future:
        plain = Future.then(self, callback)    # runs ``callback`` (and wraps its error) as torch's then does
        chained = _Chained(self._root, devices=self._devices)
        plain._add(lambda f: chained._complete(f._value, f._exception))
        return chained


class _WorkFuture(_Driven):
    """The future of a ``Work`` (``Work.get_future()``)."""

    def __init__(self, work: Work, devices=None):
        super().__init__(devices=devices)
        self._work = work
        self._root = self
        self._task = self._drive       # Future.wait runs it in the waiting thread before blocking

    def _settle(self) -> None:
        work = self._work
        if work._exception is not None:
            self._complete(None, work._exception)
        else:
            self._complete(list(work._result), None)

    def _drive(self) -> None:
        try:
            self._work.wait()
        except Exception:   # noqa: BLE001 - the work keeps its error; the future carries it
            pass
        self._settle()      # does nothing if the work's completion has settled it already

    def _poll(self) -> None:
        if self._work.is_completed():
            self._settle()


class _Chained(_Driven):
    """A future made by ``then`` on a work's future (or on one chained from it)."""

    def __init__(self, root: _WorkFuture, devices=None):
        super().__init__(devices=devices)
        self._root = root
        self._task = root._drive
