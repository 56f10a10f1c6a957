"""``monitored_barrier``: a barrier that says which ranks did not reach it (``torch.distributed``'s namesake).

As torch's: every other rank tells rank 0 it has arrived and waits for rank 0's answer; rank 0 waits up to
``timeout`` for all of them, then answers. When a rank is missing, rank 0 raises an error naming it (the
first one, or all of them with ``wait_all_ranks=True``), and the ranks that did arrive are told so and
raise too, at once, instead of waiting for an answer that never comes. The messages travel over the
group's rendezvous communicator, so any backend's group can use it. A failed monitored barrier aborts the
group, as a timed-out collective does: its later calls fail at once.
"""
from __future__ import annotations

import time
import warnings
import weakref
from datetime import timedelta

import numpy as np

from .collectives import _what
from .errors import DistBackendError
from .process_group import _check_valid_timeout, default_pg_timeout, resolve_group, warn_not_in_group
from .rendezvous import load_mpi
from .work import poll_until, seconds_of

_calls = weakref.WeakKeyDictionary()     # process group -> monitored barriers it has run (for message tags)
_TAGS = 16000                            # MPI guarantees tags up to 32767


def _tags(pg) -> tuple:
    """Tags of this call's arrival and answer messages: each call of a group has its own, the same on all ranks."""
    k = _calls.get(pg, 0)
    _calls[pg] = k + 1
    first = 2 * (k % _TAGS) + 1
    return first, first + 1


def _ranks_text(ranks) -> str:
    return f"Rank {ranks[0]}" if len(ranks) == 1 else f"Ranks {', '.join(str(r) for r in ranks)}"


def _fail(store, message: str):
    store.abort(message)
    raise DistBackendError(message)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """Wait until every rank of ``group`` has reached the barrier; raise, naming the ranks that have not,
    once ``timeout`` (a ``timedelta``; ``default_pg_timeout`` when None) has passed on rank 0."""
    pg = resolve_group(group)
    if pg is None:
        warn_not_in_group("monitored_barrier")
        return None
    if timeout is None:
        timeout = default_pg_timeout
    elif isinstance(timeout, float):
        warnings.warn(f"Please specify timeout arg as a timedelta. Converting current value of {timeout} assuming "
                      f"it represents seconds", stacklevel=2)
        timeout = timedelta(seconds=timeout)
    _check_valid_timeout(timeout)
    store = pg._store
    what = _what(pg, "monitored_barrier")
    if store.aborted is not None:
        raise store.aborted_error(what)
    if store.size == 1:
        return None
    limit = seconds_of(timeout)
    ms = int(limit * 1000)
    MPI = load_mpi()
    arrive_tag, answer_tag = _tags(pg)
    rank, n = store.rank, store.size
    answer = np.zeros(n, dtype=np.int64)         # from rank 0: answer[r] = 1 when rank r arrived (r = 0: all did)

    if rank != 0:
        token = np.array([rank], dtype=np.int64)
        requests = [store.comm.Isend([token, MPI.INT64_T], dest=0, tag=arrive_tag),
                    store.comm.Irecv([answer, MPI.INT64_T], source=0, tag=answer_tag)]
        # rank 0 answers within ``timeout`` of its own arrival; the group's timeout bounds the wait for it
        wait_s = max(limit, seconds_of(pg._timeout))

        def no_answer():
            _fail(store, f"Rank {rank} successfully reached monitoredBarrier, but received errors while waiting for "
                         f"send/recv from rank 0. Please check rank 0 logs for faulty rank.\n Original exception: "
                         f"\n{what} got no answer from rank 0 within {wait_s:g} s. The group is aborted: its "
                         f"later calls fail at once.")
        poll_until(lambda: MPI.Request.Testall(requests), wait_s, no_answer)
        if answer[0] != 1:
            missing = [r for r in range(1, n) if answer[r] != 1]
            _fail(store, f"Rank {rank} successfully reached monitoredBarrier, but rank 0 reported: "
                         f"{_ranks_text(missing)} failed to pass monitoredBarrier in {ms} ms. The group is aborted: "
                         f"its later calls fail at once.")
        return None

    tokens = {r: np.zeros(1, dtype=np.int64) for r in range(1, n)}
    pending = {r: store.comm.Irecv([tokens[r], MPI.INT64_T], source=r, tag=arrive_tag) for r in range(1, n)}
    deadline = time.monotonic() + limit
    while pending:
        for r in [r for r, req in pending.items() if req.Test()]:
            del pending[r]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0)       # yield: ranks may share cores
    for r, req in list(pending.items()):
        req.Cancel()
        status = MPI.Status()
        req.Wait(status)
        if not status.Is_cancelled():       # it arrived just as the time ran out
            del pending[r]
    missing = sorted(pending)
    answer[1:] = [0 if r in pending else 1 for r in range(1, n)]
    answer[0] = 0 if missing else 1
    arrived = [r for r in range(1, n) if r not in pending]
    store._wait([store.comm.Isend([answer, MPI.INT64_T], dest=r, tag=answer_tag) for r in arrived], what)
    if missing:
        reported = missing if wait_all_ranks else missing[:1]
        _fail(store, f"[Rank 0]: {_ranks_text(reported)} failed to pass monitoredBarrier in {ms} ms. The group is "
                     f"aborted: its later calls fail at once.")
    return None
