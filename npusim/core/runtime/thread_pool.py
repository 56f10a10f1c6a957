"""The process's two thread pools: intra-op (chunks of one op) and inter-op (forked tasks).

Intra-op: ``run_intraop(fn, items)`` calls ``fn(item)`` for every item, the
calling thread taking the first and ``get_num_threads() - 1`` pool threads the
rest. A caller that finds its chunks still queued (the workers are busy with
another thread's op) runs them itself, so concurrent callers never wait on each
other; work started from a pool thread runs serially there (no nested splits).

Inter-op: ``submit_interop(task)`` queues a callable on ``get_num_interop_threads()``
threads, started with the first task. A task must be safe to call more than once
and do its work only on the first call: whoever waits for its result calls it
too, so a task that forks and waits inside a busy (or one-thread) pool runs its
child itself instead of deadlocking.

Both pools are dropped in a child made by ``os.fork()`` (their threads do not
exist there); the next parallel op or fork starts fresh ones.
"""
from __future__ import annotations

import os
import queue
import threading

from . import parallel_config

_STOP = object()


class _Chunk:
    """One item of an intra-op run: claimed by exactly one thread, then marked done."""

    __slots__ = ("fn", "item", "claim", "done", "error")

    def __init__(self, fn, item):
        self.fn = fn
        self.item = item
        self.claim = threading.Lock()
        self.done = threading.Lock()
        self.done.acquire()
        self.error = None

    def run(self) -> None:
        if not self.claim.acquire(blocking=False):
            return
        try:
            self.fn(self.item)
        except BaseException as e:  # noqa: BLE001 - handed to the caller, which raises it
            self.error = e
        finally:
            self.done.release()


class _WorkerState(threading.local):
    in_pool = False   # True in the intra-op pool's threads: they never split again


_worker_state = _WorkerState()


class IntraOpPool:
    """``size`` threads that run chunks of ops alongside the thread that asked."""

    def __init__(self, size: int):
        self.size = size
        self._queue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"npusim-intraop-{i}", daemon=True)
                         for i in range(size)]
        for t in self._threads:
            t.start()

    def _work(self) -> None:
        _worker_state.in_pool = True
        get = self._queue.get
        while True:
            chunk = get()
            if chunk is _STOP:
                return
            chunk.run()

    def run(self, fn, items) -> None:
        chunks = [_Chunk(fn, item) for item in items[1:]]
        put = self._queue.put
        for c in chunks:
            put(c)
        error = None
        try:
            fn(items[0])
        except BaseException as e:  # noqa: BLE001 - raised once every chunk has finished
            error = e
        for c in chunks:
            c.run()            # still queued: do it here
            c.done.acquire()   # taken by a worker: wait for it
            if error is None and c.error is not None:
                error = c.error
        if error is not None:
            raise error

    def shutdown(self) -> None:
        """Let the threads finish what is queued, then stop."""
        for _ in self._threads:
            self._queue.put(_STOP)


class InterOpPool:
    """``size`` threads that run forked tasks (each a callable, see the module notes)."""

    def __init__(self, size: int):
        self.size = size
        self._queue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._work, name=f"npusim-interop-{i}", daemon=True)
                         for i in range(size)]
        for t in self._threads:
            t.start()

    def _work(self) -> None:
        get = self._queue.get
        while True:
            task = get()
            if task is _STOP:
                return
            task()

    def submit(self, task) -> None:
        self._queue.put(task)


_lock = threading.Lock()
_intraop: IntraOpPool | None = None
_interop: InterOpPool | None = None


def _intraop_pool(n: int) -> IntraOpPool:
    global _intraop
    with _lock:
        pool = _intraop
        if pool is None or pool.size != n - 1:
            if pool is not None:
                pool.shutdown()
            pool = _intraop = IntraOpPool(n - 1)
        return pool


def run_intraop(fn, items) -> None:
    """Call ``fn(item)`` for each item on the intra-op threads (the caller included); raise the first error."""
    n = parallel_config.get_num_threads()
    if n == 1 or len(items) == 1 or _worker_state.in_pool:
        for item in items:
            fn(item)
        return
    pool = _intraop
    if pool is None or pool.size != n - 1:
        pool = _intraop_pool(n)
    pool.run(fn, items)


def submit_interop(task) -> None:
    """Queue ``task()`` on the inter-op pool (started, at its fixed size, on first use)."""
    global _interop
    pool = _interop
    if pool is None:
        with _lock:
            if _interop is None:
                _interop = InterOpPool(parallel_config._claim_num_interop_threads())
            pool = _interop
    pool.submit(task)


def intraop_threads_started() -> int:
    """How many intra-op pool threads exist (0 before the first split op, or after a fork)."""
    pool = _intraop
    return 0 if pool is None else pool.size


def _after_fork_in_child() -> None:
    global _intraop, _interop, _lock
    _intraop = None
    _interop = None
    _lock = threading.Lock()
    _worker_state.in_pool = False


os.register_at_fork(after_in_child=_after_fork_in_child)
