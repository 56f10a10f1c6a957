"""The agreement a collective makes before it moves data, carrying this rank's argument error if it has one.

Some argument errors can only be seen on one rank (the list a destination rank passes, the objects a
source rank pickles). Raised there before the agreement, they would leave the other ranks waiting for
it until the group's timeout. Instead the error goes into the signature the ranks agree on: the rank
with the bad arguments raises its own error (the one torch raises), the others a ``DistError`` that says
which rank had which bad arguments, and nothing has been sent.
"""
from __future__ import annotations

from .collectives import _agree
from .errors import DistError


def agree_or_raise(pg, op_name: str, signature: str, problem: Exception | None = None) -> None:
    """Agree on ``signature`` across ``pg``; raise ``problem`` (this rank's argument error) on this rank."""
    if problem is not None:
        signature = f"{signature} with bad arguments ({type(problem).__name__}: {problem})"
    try:
        _agree(pg, op_name, signature)
    except DistError as mismatch:
        if problem is not None:
            raise problem from mismatch
        raise
    if problem is not None:
        raise problem

