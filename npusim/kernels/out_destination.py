"""The ``out=`` array an op may compute its result into, instead of into a temporary that is then copied.

An ``out=`` kernel computes its functional result and copies it into ``out``: for a large op that is a
second pass over memory and a temporary as big as the result. While such a kernel runs, the dispatcher
offers ``out``'s array here (only when ``out`` is on the inputs' device, shares no memory with any input and
has no elements that share memory); the first array kernel that makes a result of exactly ``out``'s shape
and dtype takes it and writes there (``take``), and the copy into ``out`` then has nothing to do. The values
are the same: the kernel computes in its own dtype either way, only the place the result lands changes.
An offer is for one thread and one op: it is withdrawn when the op returns, taken at most once.
"""
from __future__ import annotations

import threading

import numpy as np

from .array_api import namespace_of



class _Offer(threading.local):
    array = None    # every thread starts with no offer


_tls = _Offer()
_ndarray = np.ndarray


def offer(dest, inputs) -> bool:
    """Offer ``dest`` (an ``out=`` array) to the op about to run on ``inputs``; False when it is unsafe."""
    xp = np if dest.__class__ is _ndarray else namespace_of(dest)
    if dest.size == 0 or not _writable_once(dest):
        return False
    for x in inputs:
        if x.__class__ is dest.__class__ and xp.may_share_memory(x, dest):
            return False
        if x.__class__ is not dest.__class__ and not isinstance(x, (_ndarray, dest.__class__)):
            return False   # an operand of another kind: no overlap check is possible, no offer
    _tls.array = dest
    return True


def withdraw() -> None:
    _tls.array = None


def take(shape, dtype, contiguous=False):
    """The offered array when it has exactly ``shape`` and ``dtype`` (and the offer ends), else None; with
    ``contiguous``, only a C-contiguous one (a kernel writing flat blocks)."""
    dest = _tls.array
    if dest is None or dest.shape != shape or dest.dtype != dtype or contiguous and not dest.flags.c_contiguous:
        return None
    _tls.array = None
    return dest


def offered() -> bool:
    """Whether an offer is open on this thread (a cheap test before working out a result's shape)."""
    return _tls.array is not None


def _writable_once(a) -> bool:
    """Every element of ``a`` has its own memory (no stride-0 dim of size > 1) and ``a`` may be written."""
    if a.__class__ is _ndarray and not a.flags.writeable:
        return False
    return all(s != 0 or n <= 1 for n, s in zip(a.shape, a.strides))
