"""``npusim.jit``: asynchronous tasks on the inter-op thread pool (torch.jit.fork / torch.jit.wait).

    fut = npusim.jit.fork(compute_z, x)   # starts compute_z(x) on another thread
    y = npusim.mm(x, w_y)                 # runs meanwhile
    z = npusim.jit.wait(fut)              # the result (or the exception compute_z raised)
"""
from __future__ import annotations

from ..core.runtime.futures import Future
from ..core.runtime.jit_fork import fork, wait

_fork = fork
_wait = wait

__all__ = ["fork", "wait", "Future"]
