"""Collectives as profiler events, and ``record_comm``: the name they take.

While any record_function callback is registered (a profiler is recording, say), each call a collective makes to
its backend runs in a scope named as torch's Work names it, ``<backend>:<collective>`` (``mpi:all_reduce``,
``nccl:all_gather``...), or by the innermost ``record_comm(name)`` block of the calling thread. The scope spans the
collective's launch (its wait, for an asynchronous one, comes later and elsewhere). Without callbacks the backend
is handed out as it is, at no cost.
"""
from __future__ import annotations

import contextlib
import threading

from ..core.dispatch import record_function as _record_function

# the backend methods that are collectives -> torch's name of each in a profiling title
_TITLES = {"allreduce": "all_reduce", "broadcast": "broadcast", "reduce": "reduce", "allgather": "all_gather",
           "reduce_scatter": "reduce_scatter", "gather": "gather", "scatter": "scatter", "alltoall": "all_to_all",
           "send": "send", "recv": "recv", "barrier": "barrier"}


class _NameTLS(threading.local):
    name = None


_tls = _NameTLS()


@contextlib.contextmanager
def record_comm(name: str):
    """Within the block, every collective this thread issues is profiled as ``name`` (instead of
    ``<backend>:<collective>``), on every backend; blocks nest, the innermost name winning."""
    prev = _tls.name
    _tls.name = name
    try:
        yield
    finally:
        _tls.name = prev


def profiling_title(backend, method: str) -> str:
    """The name of a collective's profiler event: ``record_comm``'s, else ``<backend name>:<collective>``."""
    return _tls.name or f"{getattr(backend, 'name', type(backend).__name__)}:{_TITLES.get(method, method)}"


class _ProfiledBackend:
    """A backend whose collectives run in profiler scopes; everything else passes through."""

    __slots__ = ("_backend",)

    def __init__(self, backend):
        object.__setattr__(self, "_backend", backend)

    def __getattr__(self, name):
        backend = object.__getattribute__(self, "_backend")
        attr = getattr(backend, name)
        if name not in _TITLES or not callable(attr):
            return attr
        title = profiling_title(backend, name)

        def collective(*args, **kwargs):
            token = _record_function.enter_user_scope(title)
            try:
                return attr(*args, **kwargs)
            finally:
                _record_function.exit_user_scope(token)
        return collective

    def __setattr__(self, name, value):
        setattr(object.__getattribute__(self, "_backend"), name, value)


def profiled(backend):
    """``backend`` itself, or, while record_function callbacks are registered, a view of it that profiles its
    collectives."""
    return _ProfiledBackend(backend) if _record_function.ACTIVE else backend


__all__ = ["record_comm"]
