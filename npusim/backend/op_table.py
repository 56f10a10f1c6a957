"""The npu's op table: every op the npu treats specially, declared once with all its facts.

An op not listed here runs its generic npu kernel (``npusim.native``), with no CuPy specialisation and no
capacity check. A listed op may have these facts:

- ``fallback``: the npu registers no kernel for it; it runs through the boxed CPU fallback (``fallback.py``).
- ``cupy``: the overloads a CuPy kernel replaces in cuda mode (``cupy_kernels.py``; ``"default"`` is the
  overload without a name).
- ``capacity``: a cheap lower bound of its result's bytes, checked against the device's free memory before
  the kernel allocates (``capacity.py``); ``gate``: how many leading tensor arguments' sizes bound the
  result's elements from above, so a small call skips the bound (0: compute it on every call).

A name is an op (every overload of it: ``"add"``) or one overload (``"max.other"``); each is declared once.
In-place overloads (``add_``) write into an existing tensor and are never capacity-checked.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


class Bound(enum.Enum):
    """Kinds of lower bound of a result's bytes (``capacity.py`` computes each)."""
    BROADCAST = "the broadcast shape of the tensor inputs, at their narrowest itemsize"
    BROADCAST_BOOL = "the broadcast shape of the tensor inputs, one byte each (a bool result)"
    MATMUL = "batch x n x p of the two matrix operands"
    OUTER = "the product of the two vectors' sizes"
    SAME_AS_SELF = "self's elements as it is viewed, at its itemsize"
    SELF_ELEMENTS = "self's elements as it is viewed, one byte each (a bool result, or a dtype= argument)"
    REPEAT = "self's elements times the product of the repeat counts"
    REPEAT_INTERLEAVE = "self's elements times the repeats"
    INDEX_SELECT = "self's rows along dim replaced by the index's length"
    GATHER = "the index's shape"
    EMBEDDING = "the indices times the embedding width"
    ONE_HOT = "the input's elements times the number of classes"
    JOINED = "every joined input's elements"
    PADDED = "self's padded shape"
    UPSAMPLED = "N x C x the output size"


# the gate of each kind of bound, unless the op declares its own
_USUAL_GATE = {Bound.SAME_AS_SELF: 1, Bound.SELF_ELEMENTS: 1, Bound.BROADCAST: 2, Bound.BROADCAST_BOOL: 2,
               Bound.MATMUL: 2, Bound.OUTER: 2}


@dataclass(frozen=True)
class NpuOp:
    name: str
    fallback: bool = False
    cupy: tuple = ()
    capacity: Bound | None = None
    gate: int | None = None

    @property
    def capacity_gate(self) -> int:
        return self.gate if self.gate is not None else _USUAL_GATE.get(self.capacity, 0)


def _ops(names: str, **facts) -> list:
    """Several ops with the same facts."""
    return [NpuOp(name, **facts) for name in names.split()]


B = Bound
OPS = [
    # left to the CPU fallback on purpose, so the fallback is exercised and documented
    *_ops("sort argsort topk _unique2 unique_dim unique_consecutive nonzero masked_select", fallback=True),

    # elementwise, broadcasting their inputs
    NpuOp("add", capacity=B.BROADCAST, cupy=("Tensor",)),      # CuPy: x + alpha * y without a temporary
    *_ops("sub mul div rsub pow remainder fmod floor_divide maximum minimum max.other min.other atan2 "
          "bitwise_and bitwise_or bitwise_xor clamp_min clamp_max masked_fill", capacity=B.BROADCAST),
    # three inputs: the first two sizes do not bound the result
    *_ops("lerp where clamp addcmul addcdiv", capacity=B.BROADCAST, gate=0),
    *_ops("eq ne lt le gt ge logical_and logical_or logical_xor", capacity=B.BROADCAST_BOOL),

    # matrix products
    *_ops("mm bmm matmul", capacity=B.MATMUL),
    *_ops("addmm baddbmm", capacity=B.MATMUL, gate=0),     # the added input comes first
    NpuOp("outer", capacity=B.OUTER),

    # one result element per element of self
    *_ops("abs acos asin atan bitwise_not ceil cos cosh erf exp exp2 expm1 floor frac "
          "log log10 log1p log2 nan_to_num neg reciprocal relu round rsqrt sgn sign sin sinh sqrt square tan tanh "
          "trunc", capacity=B.SAME_AS_SELF),
    NpuOp("sigmoid", capacity=B.SAME_AS_SELF, cupy=("default",)),
    NpuOp("gelu", capacity=B.SAME_AS_SELF, cupy=("default",)),  # CuPy: exact and tanh
    *_ops("clone contiguous flip roll tril triu _softmax _log_softmax elu silu hardsigmoid hardswish hardtanh "
          "leaky_relu log_sigmoid logit mish softplus threshold", capacity=B.SAME_AS_SELF),
    *_ops("isfinite isinf isnan isneginf isposinf isreal logical_not signbit",          # bool results
          capacity=B.SELF_ELEMENTS),
    *_ops("cumsum cumprod softmax log_softmax", capacity=B.SELF_ELEMENTS),              # they take a dtype=

    # results that grow with an argument
    *_ops("repeat tile", capacity=B.REPEAT),
    NpuOp("repeat_interleave", capacity=B.REPEAT_INTERLEAVE),
    NpuOp("index_select", capacity=B.INDEX_SELECT),
    NpuOp("gather", capacity=B.GATHER),
    NpuOp("embedding", capacity=B.EMBEDDING),
    NpuOp("one_hot", capacity=B.ONE_HOT),
    *_ops("cat stack", capacity=B.JOINED),
    NpuOp("constant_pad_nd", capacity=B.PADDED),
    *_ops("upsample_nearest2d upsample_bilinear2d", capacity=B.UPSAMPLED),

    # reductions
    NpuOp("linalg_vector_norm", cupy=("default",)),     # CuPy: the 2-norm of a whole tensor in one reduction
]
del B


def _by_name(ops) -> dict:
    table, declared = {}, set()
    for op in ops:
        base = op.name.split(".")[0]
        if base in declared:
            raise ValueError(f"the npu op table declares {base!r} twice")
        declared.add(base)
        table[op.name] = op
    return table


TABLE = _by_name(OPS)


def facts(kernel_name: str) -> NpuOp | None:
    """The declared facts of a kernel (``"add.Tensor"``, ``"sin"``): its overload's own, else its op's."""
    return TABLE.get(kernel_name) or TABLE.get(kernel_name.split(".")[0])


def _kernel_name(op: str, overload: str) -> str:
    return op if overload == "default" else f"{op}.{overload}"


# what the backend's files read
FALLBACK_OPS = tuple(op.name for op in OPS if op.fallback)
HOT_OPS = tuple(_kernel_name(op.name, overload) for op in OPS for overload in op.cupy)
