"""``breakpoint``: a pdb session on one rank while the others wait (``torch.distributed.breakpoint``)."""
from __future__ import annotations

import logging
import sys
import traceback
from datetime import timedelta

from .collectives import barrier
from .process_group import get_rank

log = logging.getLogger("npusim.distributed")

_breakpoint_cache: dict = {}


def _make_distributed_pdb():
    """A pdb that reads the terminal (``/dev/stdin``) even where the process's own stdin was replaced, as in a
    rank started by a launcher."""
    import pdb

    class _DistributedPdb(pdb.Pdb):
        def interaction(self, *args, **kwargs):
            _stdin = sys.stdin
            try:
                with open("/dev/stdin") as sys.stdin:
                    pdb.Pdb.interaction(self, *args, **kwargs)
            finally:
                sys.stdin = _stdin

    return _DistributedPdb()


def breakpoint(rank: int = 0, skip: int = 0, timeout_s=3600):  # noqa: A001 - torch's name
    """Stop in pdb on global rank ``rank`` only; every rank then waits in a barrier until the session ends.

    ``skip``: let the first ``skip`` calls pass (counted per call site, as torch's). ``timeout_s``: how long the
    other ranks wait for the session (the barrier's timeout; torch sets it as every group's timeout instead).
    """
    if skip > 0:
        key = hash(str(traceback.format_exc()))
        counter = _breakpoint_cache.get(key, 0) + 1
        _breakpoint_cache[key] = counter
        if counter <= skip:
            log.warning("Skip the breakpoint, counter=%d", counter)
            return
    if get_rank() == rank:
        pdb = _make_distributed_pdb()
        pdb.message("\n!!! ATTENTION !!!\n\n"
                    f"Type 'up' to get to the frame that called dist.breakpoint(rank={rank})\n")
        pdb.set_trace()
    barrier(timeout=None if timeout_s is None else timedelta(seconds=timeout_s))
