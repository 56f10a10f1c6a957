"""``fork(fn, *args, **kwargs)`` and ``wait(future)``: run a function on the inter-op pool.

The task runs with the forking thread's thread-local state (grad mode, autocast,
dispatch key sets, current device, debug info and profiling callbacks; see
thread_local_state.py) and completes the returned future with its result, or with
the exception it raised (``wait`` raises that same exception object, traceback
included).

Unlike torch's eager ``torch.jit.fork``, which runs the function before
returning, the task here really runs in parallel with the caller.
"""
from __future__ import annotations

import threading

from .futures import Future
from .thread_local_state import ThreadLocalStateGuard, capture_thread_local_state
from .thread_pool import submit_interop

__all__ = ["fork", "wait"]


class _ForkTask:
    """Runs once, in whichever thread calls it first: a pool thread or one waiting for the result."""

    __slots__ = ("fn", "args", "kwargs", "state", "future", "claim")

    def __init__(self, fn, args, kwargs, state, future):
        self.fn, self.args, self.kwargs, self.state, self.future = fn, args, kwargs, state, future
        self.claim = threading.Lock()

    def __call__(self) -> None:
        if not self.claim.acquire(blocking=False):
            return
        fn, args, kwargs, future = self.fn, self.args, self.kwargs, self.future
        self.fn = self.args = self.kwargs = None   # the task object may outlive the call; its inputs need not
        try:
            with ThreadLocalStateGuard(self.state):
                result = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - raised again by wait()
            future._complete(None, e)
        else:
            future._complete(result, None)


def fork(func, *args, **kwargs) -> Future:
    """Start ``func(*args, **kwargs)`` on the inter-op pool; returns a Future of its result."""
    if not callable(func):
        raise TypeError(f"Object of type '{type(func).__name__}' is not an instance of 'function'")
    future = Future()
    task = _ForkTask(func, args, kwargs, capture_thread_local_state(), future)
    future._task = task
    submit_interop(task)
    return future


def wait(future):
    """The result of a forked task (blocks until it is done; raises the exception it raised)."""
    if not isinstance(future, Future):
        raise TypeError(f"wait(): argument 'future' must be npusim.futures.Future, not {type(future).__name__}")
    return future.wait()
