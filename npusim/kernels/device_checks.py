"""Checks of values only the data can answer (index ranges, class targets), without stalling a GPU.

On NumPy arrays (the cpu and the emulated npu) the callers check at once and raise torch's
errors. On CuPy arrays reading the answer back would make the host wait for the GPU at every
op, so the checks there work as torch's CUDA kernels do, which assert on the device and report
at a later synchronisation: the caller clamps the values into range (nothing is read or written
out of bounds, and the op's result is defined but meaningless) and :func:`record` ORs the failure
into a flag on the device, without reading it. :func:`raise_pending` reads the flags (one host
sync per device that has them), clears them and raises ``RuntimeError`` naming each failed check.

With ``NPUSIM_LAUNCH_BLOCKING=1`` the CuPy path checks at once, with torch's errors, as
``CUDA_LAUNCH_BLOCKING=1`` makes torch report a device-side assert at the op that raised it.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from .array_api import namespace_of

# A fixed number of flag slots per device, one per kind of check (the names below and any registered later).
_SLOTS = 64
_lock = threading.Lock()
_names: dict[str, int] = {}
_flags: dict[int, object] = {}   # device id -> bool array of _SLOTS flags on that device

EMBEDDING = "embedding: index out of range in self"
INDEX_SELECT = "index_select: index out of range in self"
GATHER = "gather: index out of bounds"
SCATTER = "scatter: index out of bounds"
INDEX = "index: index out of bounds"
INDEX_PUT = "index_put: index out of bounds"
INDEX_COPY = "index_copy_: index out of bounds"
NLL_TARGET = "nll_loss: Target out of bounds (t >= 0 && t < n_classes)"
BCE_INPUT = "binary_cross_entropy: input value should be between 0~1"
MULTINOMIAL = "multinomial: probability tensor contains either `inf`, `nan` or element < 0"
MULTINOMIAL_SUM = "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
BERNOULLI_P = "bernoulli: Expected p_in >= 0 && p_in <= 1"
LU_PIVOTS = "lu_unpack: pivots must be between 1 and LU.size(-2) inclusive"
ONE_HOT = "one_hot: class values must be non-negative and smaller than num_classes"


def _launch_blocking() -> bool:
    return os.environ.get("NPUSIM_LAUNCH_BLOCKING", "0").strip() in ("1", "true", "yes")   # as backend/config.py


EAGER = _launch_blocking()


def deferred(a) -> bool:
    """Whether checks on ``a`` are recorded on the device (CuPy) instead of raising at once."""
    return a.__class__ is not np.ndarray and not EAGER and namespace_of(a) is not np


def _slot(name: str) -> int:
    k = _names.get(name)
    if k is None:
        with _lock:
            k = _names.setdefault(name, len(_names))
        if k >= _SLOTS:
            raise RuntimeError(f"too many kinds of device checks (> {_SLOTS})")
    return k


def _device_flags(xp, device_id):
    flags = _flags.get(device_id)
    if flags is None:
        with _lock:
            flags = _flags.get(device_id)
            if flags is None:
                flags = _flags[device_id] = xp.zeros(_SLOTS, dtype=np.bool_)
    return flags


def record(any_bad, name: str) -> None:
    """OR the 0-d device bool ``any_bad`` into the flag of check ``name`` on its device (no sync)."""
    xp = namespace_of(any_bad)
    k = _slot(name)
    view = _device_flags(xp, any_bad.device.id)[k:k + 1]
    xp.logical_or(view, any_bad, out=view)


def clamp(idx, low, high, name: str, empty_error=None):
    """``idx`` clipped into [low, high); values outside are recorded as a failure of check ``name``.

    When nothing fits (an empty dim) every index is out of range, which needs no read: ``empty_error``
    (default an IndexError naming the check) is raised at once.
    """
    xp = namespace_of(idx)
    if idx.size == 0:
        return idx
    if high <= low:
        raise empty_error if empty_error is not None else IndexError(name)
    safe = xp.clip(idx, low, high - 1)
    record((safe != idx).any(), name)
    return safe


def pending() -> list[str]:
    """The names of the checks that failed on any device since the last read; reads and clears the flags."""
    failed = []
    for device_id, flags in list(_flags.items()):
        xp = namespace_of(flags)
        with xp.cuda.Device(device_id):
            host = flags.get()
            if host.any():
                flags.fill(False)
        by_slot = {k: n for n, k in _names.items()}
        failed.extend(f"{by_slot[k]} (npu:{device_id})" for k in np.flatnonzero(host))
    return failed


def raise_pending() -> None:
    """Raise ``RuntimeError`` for the checks that failed on the device since the last read (a host sync)."""
    failed = pending()
    if failed:
        raise RuntimeError("npu error: device-side assert triggered: " + "; ".join(failed)
                           + ". The check ran on the device after its op returned, so the op's results are not "
                             "meaningful; run with NPUSIM_LAUNCH_BLOCKING=1 to raise at the op.")
