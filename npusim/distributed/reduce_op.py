"""``ReduceOp``: how a reduction combines the ranks' values (``torch.distributed.ReduceOp``)."""
from __future__ import annotations

import enum


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8

    # torch's (pybind11) enum prints as RedOpType.MAX, also inside messages; IntEnum would print 4
    def __str__(self):
        return f"RedOpType.{self.name}"

    def __format__(self, spec):
        return format(str(self), spec)


class ReduceOp:
    """The reductions: ``ReduceOp.SUM``, ``AVG``, ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``, ``BOR``, ``BXOR``."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM

    def __init__(self, op=RedOpType.SUM):
        self.op = as_red_op(op)

    def __eq__(self, other):
        return self.op == (other.op if isinstance(other, ReduceOp) else other)

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return repr(self.op)


def as_red_op(op) -> RedOpType:
    """The ``RedOpType`` of ``op`` (a RedOpType or a ReduceOp), or torch's TypeError."""
    if isinstance(op, ReduceOp):
        return op.op
    if isinstance(op, RedOpType):
        return op
    raise TypeError(f"op must be a npusim.distributed.ReduceOp (such as ReduceOp.SUM), got {op!r}")


# reductions that make sense on complex numbers (viewed as pairs of reals), as torch's supports_complex
COMPLEX_OPS = (RedOpType.SUM, RedOpType.AVG)
BITWISE_OPS = (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR)


def supports_complex(reduceOp) -> bool:  # noqa: N803 - torch's parameter name
    """Whether ``reduceOp`` works on complex tensors (every op but MAX, MIN, PRODUCT and the bitwise ones)."""
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR,
                            ReduceOp.BXOR)
