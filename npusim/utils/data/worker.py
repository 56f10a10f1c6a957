"""What runs inside a DataLoader worker process: seeding, thread limits, the fetch loop, error wrapping.

Workers produce cpu tensors only: a child forked after its parent initialised the npu may not use it,
and moving batches to a device is the training loop's job.
"""
from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass

import numpy as np

from ...core.c10.generator import default_generator
from ...core.runtime.parallel_config import set_num_threads
from ...api.seeding import manual_seed
from .fetch import _DatasetKind

# seconds the parent waits on the workers between checks that they are still alive
MP_STATUS_CHECK_INTERVAL = 5.0
# seconds an idle worker waits for work between checks of the parent and of the shutdown event
_IDLE_POLL_INTERVAL = 0.2

_worker_info = None


@dataclass(frozen=True)
class WorkerInfo:
    """What a worker knows about itself: ``id``, ``num_workers``, ``seed`` and its copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """The current worker's :class:`WorkerInfo`, or ``None`` in the main process."""
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    """Start a new epoch with the same (persistent) workers."""


class ExceptionWrapper:
    """An exception raised in a worker, carried back (with its traceback text) and re-raised in the parent."""

    def __init__(self, exc_info=None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            # KeyError quotes its message; keep the traceback readable
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


def _generate_state(base_seed: int, worker_id: int) -> list[int]:
    """The NumPy seed of a worker: torch's SeedSequence-style mix of (base_seed, worker_id) into 4 words."""
    INIT_A, MULT_A, INIT_B, MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
    MIX_MULT_L, MIX_MULT_R, XSHIFT, MASK32 = 0xCA01F9DD, 0x4973F715, 16, 0xFFFFFFFF
    entropy = [worker_id, base_seed & MASK32, base_seed >> 32, 0]
    pool = [0] * 4
    hash_const_a = INIT_A

    def hash_(value):
        nonlocal hash_const_a
        value = (value ^ hash_const_a) & MASK32
        hash_const_a = (hash_const_a * MULT_A) & MASK32
        value = (value * hash_const_a) & MASK32
        return (value ^ (value >> XSHIFT)) & MASK32

    def mix(x, y):
        result = (((MIX_MULT_L * x) & MASK32) - ((MIX_MULT_R * y) & MASK32)) & MASK32
        return (result ^ (result >> XSHIFT)) & MASK32

    for i in range(4):
        pool[i] = hash_(entropy[i])
    for i_src in range(4):
        for i_dst in range(4):
            if i_src != i_dst:
                pool[i_dst] = mix(pool[i_dst], hash_(pool[i_src]))
    hash_const_b = INIT_B
    state = []
    for i_dst in range(4):
        value = (pool[i_dst] ^ hash_const_b) & MASK32
        hash_const_b = (hash_const_b * MULT_B) & MASK32
        value = (value * hash_const_b) & MASK32
        state.append((value ^ (value >> XSHIFT)) & MASK32)
    return state


def _limit_threads():
    """One compute thread per worker, so N workers do not oversubscribe the cores."""
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    set_num_threads(1)   # npusim's own intra-op pool
    try:
        from threadpoolctl import threadpool_limits
        return threadpool_limits(limits=1)
    except Exception:  # threadpoolctl missing or unable to inspect the loaded libraries
        return None


def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    try:
        manual_seed(seed)  # the cpu generator and, where this process may use them, the devices' generators
    except RuntimeError:
        # a child forked after its parent initialised the npu may not touch it; it only builds cpu tensors
        default_generator.manual_seed(seed)
    np.random.seed(_generate_state(base_seed, worker_id))
    return seed


def _worker_loop(dataset_kind, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn,
                 drop_last, base_seed, init_fn, worker_id, num_workers) -> None:
    """Fetch the batches whose indices arrive on ``index_queue`` and put ``(idx, batch)`` on ``data_queue``."""
    global _worker_info
    try:
        thread_limit = _limit_threads()  # noqa: F841  (kept alive for the worker's lifetime)
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:
            try:
                r = index_queue.get(timeout=_IDLE_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set():
                    # the parent is shutting down; its farewell None may never be flushed to us (a loader
                    # collected by the garbage collector may have its queue threads stopped first)
                    break
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data = init_exception
                init_exception = None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        # the parent stops reading: do not block at exit flushing unread batches
        data_queue.cancel_join_thread()
        data_queue.close()
