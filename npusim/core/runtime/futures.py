"""``npusim.futures.Future``: the result of asynchronous work, as torch.futures.Future.

A future completes once, with a value (``set_result``) or an exception
(``set_exception``). ``wait()`` blocks until then and returns the value or raises
the exception (the original object, with the traceback of where it was raised).
Callbacks added with ``then`` and ``add_done_callback`` run in the thread that
completes the future, or at once in the caller if it is already complete.

A future made by ``npusim.jit.fork`` carries its task: a thread that waits on it
before any pool thread has picked the task up runs the task itself.
"""
from __future__ import annotations

import logging
import threading
import traceback
import types

__all__ = ["Future", "collect_all", "wait_all"]

_log = logging.getLogger("npusim.futures")
_ALREADY_DONE = ("Attempting to mark a completed Future as complete again. Note that a Future can only be marked "
                 "completed once.")


def _callback_error(e: BaseException) -> str:
    where = "".join(traceback.format_tb(e.__traceback__))
    return f"Got the following error when running the callback: {type(e).__name__}: {e}\n\nAt:\n{where}"


class Future:
    """A value that will be available later; ``Future[T]`` in annotations."""

    __class_getitem__ = classmethod(types.GenericAlias)

    def __init__(self, *, devices=None):
        self._state_lock = threading.Lock()
        self._latch = threading.Lock()   # held until the future completes
        self._latch.acquire()
        self._done = False
        self._value = None
        self._exception = None
        self._callbacks = []
        self._task = None                # for a forked future: its task, until a thread runs it
        self._devices = [] if devices is None else list(devices)

    def done(self) -> bool:
        """Whether the future has a value or an exception."""
        return self._done

    def wait(self):
        """Block until the future completes; return its value or raise its exception."""
        if not self._done:
            task = self._task
            if task is not None:
                task()   # not started yet: run it in this thread (does nothing if a pool thread has it)
            self._latch.acquire()
            self._latch.release()
        if self._exception is not None:
            raise self._exception
        return self._value

    def value(self):
        """The value of a completed future (raises its exception); call after ``wait()`` or in a callback."""
        if not self._done:
            raise RuntimeError("Future.value() was called before the Future completed; call wait() first or read "
                               "the value in a callback")
        if self._exception is not None:
            raise self._exception
        return self._value

    def then(self, callback) -> Future:
        """A new future completed with ``callback(self)`` once this one completes.

        If the callback raises, the new future holds a RuntimeError that names the
        error (its ``__cause__`` is the error itself).
        """
        if not callable(callback):
            raise TypeError(f"then(): argument 'callback' must be callable, not {type(callback).__name__}")
        child = Future(devices=self._devices)

        def run(fut):
            try:
                result = callback(fut)
            except Exception as e:  # noqa: BLE001 - the child future carries it
                err = RuntimeError(_callback_error(e))
                err.__cause__ = e
                child._complete(None, err)
            else:
                child._complete(result, None)
        self._add(run)
        return child

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` once the future completes; an error it raises is logged, not raised."""
        if not callable(callback):
            raise TypeError(f"add_done_callback(): argument 'callback' must be callable, not "
                            f"{type(callback).__name__}")

        def run(fut):
            try:
                callback(fut)
            except Exception as e:  # noqa: BLE001 - torch logs callback errors and carries on
                _log.error(_callback_error(e))
        self._add(run)

    def set_result(self, result) -> None:
        """Complete the future with ``result`` (once)."""
        if not self._complete(result, None):
            raise RuntimeError(_ALREADY_DONE)

    def set_exception(self, result) -> None:
        """Complete the future with the exception ``result`` (once); ``wait()`` raises it."""
        assert isinstance(result, Exception), f"{result} is of type {type(result)}, not an Exception."
        if not self._complete(None, result):
            raise RuntimeError(_ALREADY_DONE)

    # --- internals -------------------------------------------------------------------------------
    def _add(self, run) -> None:
        with self._state_lock:
            if not self._done:
                self._callbacks.append(run)
                return
        run(self)

    def _complete(self, value, exception) -> bool:
        """Complete the future unless it already is; run its callbacks. Returns whether it did."""
        with self._state_lock:
            if self._done:
                return False
            self._value, self._exception = value, exception
            self._done = True
            self._task = None
            callbacks, self._callbacks = self._callbacks, []
        self._latch.release()
        for run in callbacks:
            run(self)
        return True

    def __repr__(self) -> str:
        state = "done" if self._done else "pending"
        return f"<npusim.futures.Future object at {id(self):#x} ({state})>"


def _check_futures(futures, fname: str) -> list:
    if isinstance(futures, (str, bytes)) or not hasattr(futures, "__iter__"):
        raise TypeError(f"{fname}(): argument 'futures' must be a list of npusim.futures.Future, not "
                        f"{type(futures).__name__}")
    futures = list(futures)
    for f in futures:
        if not isinstance(f, Future):
            raise TypeError(f"{fname}(): argument 'futures' must be a list of npusim.futures.Future, but found an "
                            f"element of type {type(f).__name__}")
    return futures


def collect_all(futures) -> Future:
    """A future completed with the list of ``futures`` once all of them complete.

    If one of them completes with an exception, the combined future completes at
    once with that exception.
    """
    futures = _check_futures(futures, "collect_all")
    combined = Future()
    if not futures:
        combined.set_result([])
        return combined
    remaining = [len(futures)]
    lock = threading.Lock()

    def one_done(fut):
        if fut._exception is not None:
            combined._complete(None, fut._exception)
            return
        with lock:
            remaining[0] -= 1
            last = remaining[0] == 0
        if last:
            combined._complete(futures, None)

    combined._task = _Helper(futures)
    for f in futures:
        f._add(one_done)
    return combined


class _Helper:
    """Waiting on a combined future runs the unstarted tasks of its parts in the waiting thread."""

    __slots__ = ("futures",)

    def __init__(self, futures):
        self.futures = futures

    def __call__(self):
        for f in self.futures:
            task = f._task
            if task is not None:
                task()


def wait_all(futures) -> list:
    """Wait for all ``futures`` and return their values; raises the first exception among them."""
    futures = _check_futures(futures, "wait_all")
    return [f.wait() for f in collect_all(futures).wait()]
