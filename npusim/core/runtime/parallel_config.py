"""Thread settings: how many threads ops use (intra-op) and how many run forked tasks (inter-op).

The intra-op count follows torch's precedence: ``set_num_threads(n)`` over
``MKL_NUM_THREADS`` over ``OMP_NUM_THREADS`` over the number of cores this
process may use. The environment is read once, the first time the count is
needed (at ``import npusim``); an invalid value there is ignored with a warning.
``set_num_threads`` also limits the BLAS library's threads (matmul), process-wide.

The inter-op count may be set once, before the first task is forked; the inter-op
pool then takes it (``_claim_num_interop_threads``) and it is fixed for the process.

``GRAIN_SIZE`` is the smallest number of elements worth a thread of its own: an
elementwise op, copy or random draw is split only when its output has at least
twice as many elements, a reduction (half the work per element) when its input
has four times as many, in chunks of at least ``GRAIN_SIZE``. Handing a chunk to
a pool thread and getting it back costs tens of microseconds on a 2-core VM (the
worker is woken, then takes the GIL to start its NumPy call); measured there, a
split pays off from about 1M elements of float32 arithmetic and 2M of summing.
"""
from __future__ import annotations

import operator
import os
import threading
import warnings

GRAIN_SIZE = 1 << 19
ENV_VARS = ("MKL_NUM_THREADS", "OMP_NUM_THREADS")   # in order of precedence

_lock = threading.Lock()
_num_threads: int | None = None          # resolved on first use
_num_interop_threads: int | None = None  # None: the default (usable cores)
_interop_fixed = False                   # set once, or the inter-op pool has started
_listeners: list = []


def usable_cores() -> int:
    """The number of cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _env_threads(name: str) -> int | None:
    """A thread count from environment variable ``name``; None when unset or invalid (with a warning)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return None
    first = raw.split(",")[0].strip()   # OpenMP allows a list per nesting level; the first is ours
    try:
        n = int(first)
    except ValueError:
        n = 0
    if n < 1:
        warnings.warn(f"Invalid value for environment variable {name}: {raw!r} (expected a positive integer); "
                      f"ignoring it", RuntimeWarning, stacklevel=2)
        return None
    return n


def default_num_threads() -> tuple[int, str]:
    """The intra-op count without ``set_num_threads``, and where it comes from (an env var or "cores")."""
    for name in ENV_VARS:
        n = _env_threads(name)
        if n is not None:
            return n, name
    return usable_cores(), "cores"


def _checked_count(n, fname: str) -> int:
    """torch's checks on a thread count argument."""
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise RuntimeError(f"{fname} expects an int, but got {type(n).__name__}")
    n = operator.index(n)
    if n <= 0:
        raise RuntimeError(f"{fname} expects a positive integer")
    return n


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism."""
    n = _num_threads
    if n is None:
        n = _resolve()
    return n


def _resolve() -> int:
    global _num_threads
    n, source = default_num_threads()
    with _lock:
        if _num_threads is None:
            _num_threads = n
            if source != "cores":
                _limit_blas(n)   # BLAS libraries do not all read MKL_NUM_THREADS themselves
        return _num_threads


def set_num_threads(n) -> None:
    """Set the number of threads used for intra-op parallelism (elementwise ops, reductions, copies,
    random draws and BLAS matmul). Takes precedence over MKL_NUM_THREADS and OMP_NUM_THREADS."""
    global _num_threads
    n = _checked_count(n, "set_num_threads")
    with _lock:
        _num_threads = n
        _limit_blas(n)
        listeners = list(_listeners)
    for fn in listeners:
        fn(n)


def on_num_threads_change(fn) -> None:
    """Call ``fn(n)`` now and whenever the intra-op thread count changes."""
    with _lock:
        _listeners.append(fn)
    fn(get_num_threads())


def _limit_blas(n: int) -> None:
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=n, user_api="blas")   # not used as a context: the limit stays
    except Exception:  # noqa: BLE001 - threadpoolctl missing or unable to inspect a library: BLAS keeps its own
        pass


def get_num_interop_threads() -> int:
    """The number of threads used for inter-op parallelism (tasks started with ``npusim.jit.fork``)."""
    n = _num_interop_threads
    return usable_cores() if n is None else n


def set_num_interop_threads(n) -> None:
    """Set the number of inter-op threads; only once, and only before the first task is forked."""
    global _num_interop_threads, _interop_fixed
    n = _checked_count(n, "set_num_interop_threads")
    with _lock:
        if _interop_fixed:
            raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                               "set_num_interop_threads called")
        _num_interop_threads = n
        _interop_fixed = True


def _claim_num_interop_threads() -> int:
    """The inter-op pool's size; from now on ``set_num_interop_threads`` refuses."""
    global _interop_fixed
    with _lock:
        _interop_fixed = True
    return get_num_interop_threads()


def interop_started() -> bool:
    return _interop_fixed
