"""The npu's op table: every op the npu treats specially, declared once with all its facts.

An op not listed here runs its generic npu kernel (``npusim.native``), with no CuPy specialisation and no
capacity check. A listed op may have these facts:

- ``fallback``: the npu registers no kernel for it; it runs through the boxed CPU fallback (``fallback.py``).
- ``cupy``: the overloads a CuPy kernel replaces in cuda mode (``cupy_kernels.py``; ``"default"`` is the
  overload without a name).
- ``capacity``: a cheap lower bound of its result's bytes, checked against the device's free memory before
  the kernel allocates (``capacity.py``); ``gate``: how many leading tensor arguments' sizes bound the
  result's elements from above, so a small call skips the bound (0: compute it on every call), or a tuple of
  the positions of the arguments that do.
- ``autocast``: its category under ``autocast("npu")`` (torch 2.13's CUDA lists, ATen/autocast_mode.h),
  registered as an ``AutocastPrivateUse1`` kernel for the overloads in ``autocast_overloads``
  (``amp/autocast_registration.py``); an op with none runs untouched (the fallthrough).

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


class Amp(enum.Enum):
    """Autocast categories (what ``npusim.privateuse1.register_autocast_policies`` does with each)."""
    LOWER = "lower_precision_fp"            # cast floating inputs to the autocast dtype
    FP32 = "fp32"                           # cast floating inputs to float32
    FP32_SET_OPT_DTYPE = "fp32_set_opt_dtype"   # ask for a float32 result unless the caller gave a dtype
    FP32_APPEND_DTYPE = "fp32_append_dtype"     # norm, redispatched with a float32 output dtype
    PROMOTE = "promote"                     # cast to the widest floating dtype among the inputs
    BANNED = "banned"                       # refused under autocast


# the gate of each kind of bound, unless the op declares its own
_USUAL_GATE = {Bound.SAME_AS_SELF: 1, Bound.SELF_ELEMENTS: 1, Bound.BROADCAST: 2, Bound.BROADCAST_BOOL: 2,
               Bound.MATMUL: 2, Bound.OUTER: 2}


@dataclass(frozen=True)
class NpuOp:
    name: str
    fallback: bool = False
    cupy: tuple = ()
    capacity: Bound | None = None
    gate: int | tuple | None = None
    autocast: Amp | None = None
    autocast_overloads: tuple = ("default",)

    @property
    def capacity_gate(self) -> int | tuple:
        return self.gate if self.gate is not None else _USUAL_GATE.get(self.capacity, 0)


def _ops(names: str, **facts) -> list:
    """Several ops with the same facts."""
    return [NpuOp(name, **facts) for name in names.split()]


B, A = Bound, Amp
OPS = [
    # left to the CPU fallback on purpose, so the fallback is exercised and documented
    *_ops("sort argsort topk _unique2 unique_dim unique_consecutive nonzero masked_select", fallback=True),

    # elementwise, broadcasting their inputs
    NpuOp("add", capacity=B.BROADCAST, cupy=("Tensor",)),      # CuPy: x + alpha * y without a temporary
    *_ops("sub mul div rsub remainder fmod floor_divide maximum minimum max.other min.other "
          "bitwise_and bitwise_or bitwise_xor clamp_min clamp_max masked_fill", capacity=B.BROADCAST),
    NpuOp("pow", capacity=B.BROADCAST, autocast=A.FP32,
          autocast_overloads=("Tensor_Scalar", "Tensor_Tensor", "Scalar")),
    NpuOp("atan2", capacity=B.BROADCAST, autocast=A.PROMOTE),
    # three inputs: the first two sizes do not bound the result
    *_ops("lerp where clamp", capacity=B.BROADCAST, gate=0),
    NpuOp("mse_loss_backward", capacity=B.BROADCAST, gate=3),   # every input bounds it: all three sizes gate
    *_ops("addcmul addcdiv", capacity=B.BROADCAST, gate=0, autocast=A.PROMOTE),
    *_ops("eq ne lt le gt ge logical_and logical_or logical_xor", capacity=B.BROADCAST_BOOL),

    # matrix products
    *_ops("mm bmm matmul", capacity=B.MATMUL, autocast=A.LOWER),
    # the added input comes first; the sizes of the two multiplied ones bound batch x n x p
    *_ops("addmm baddbmm", capacity=B.MATMUL, gate=(1, 2), autocast=A.LOWER),
    NpuOp("outer", capacity=B.OUTER),

    # one result element per element of self
    *_ops("abs atan bitwise_not ceil cos erf exp2 floor frac nan_to_num neg relu round sgn sign sin sqrt square "
          "tanh trunc", capacity=B.SAME_AS_SELF),
    *_ops("acos asin cosh exp expm1 log log10 log1p log2 reciprocal rsqrt sinh tan", capacity=B.SAME_AS_SELF,
          autocast=A.FP32),
    NpuOp("sigmoid", capacity=B.SAME_AS_SELF, cupy=("default",)),
    NpuOp("gelu", capacity=B.SAME_AS_SELF, cupy=("default",)),  # CuPy: exact and tanh
    *_ops("clone contiguous flip roll tril triu _softmax _log_softmax elu silu hardsigmoid hardswish hardtanh "
          "leaky_relu log_sigmoid logit mish threshold threshold_backward silu_backward hardswish_backward "
          "hardsigmoid_backward hardtanh_backward leaky_relu_backward elu_backward softplus_backward",
          capacity=B.SAME_AS_SELF),
    NpuOp("softplus", capacity=B.SAME_AS_SELF, autocast=A.FP32),
    *_ops("isfinite isinf isnan isneginf isposinf isreal logical_not signbit",          # bool results
          capacity=B.SELF_ELEMENTS),
    # they take a dtype=
    *_ops("cumsum cumprod", capacity=B.SELF_ELEMENTS, autocast=A.FP32_SET_OPT_DTYPE),
    *_ops("softmax log_softmax", capacity=B.SELF_ELEMENTS, autocast=A.FP32_SET_OPT_DTYPE,
          autocast_overloads=("int",)),
    NpuOp("_safe_softmax", capacity=B.SELF_ELEMENTS),   # attention's; on no autocast list of torch's
    NpuOp("_softmax_backward_data", capacity=B.SELF_ELEMENTS),   # the gradient's shape

    # results that grow with an argument
    *_ops("repeat tile", capacity=B.REPEAT),
    NpuOp("repeat_interleave", capacity=B.REPEAT_INTERLEAVE),
    NpuOp("index_select", capacity=B.INDEX_SELECT),
    NpuOp("gather", capacity=B.GATHER),
    NpuOp("embedding", capacity=B.EMBEDDING),
    NpuOp("one_hot", capacity=B.ONE_HOT),
    *_ops("cat stack", capacity=B.JOINED),
    NpuOp("constant_pad_nd", capacity=B.PADDED),
    *_ops("upsample_nearest2d upsample_bilinear2d", capacity=B.UPSAMPLED, autocast=A.FP32),

    # reductions
    NpuOp("linalg_vector_norm", cupy=("default",),      # CuPy: the 2-norm of a whole tensor in one reduction
          autocast=A.FP32_SET_OPT_DTYPE),

    # the rest of torch's CUDA autocast lists: ops with no other npu fact
    NpuOp("_convolution", autocast=A.LOWER, autocast_overloads=("deprecated", "default")),
    *_ops("conv1d conv2d conv3d conv_tbc convolution prelu addmv addr einsum mv linalg_vecdot linear addbmm "
          "chain_matmul linalg_multi_dot _thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell "
          "rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention scaled_dot_product_attention",
          autocast=A.LOWER),
    *_ops("conv_transpose1d", autocast=A.LOWER),
    *_ops("conv_transpose2d conv_transpose3d", autocast=A.LOWER, autocast_overloads=("input",)),
    *_ops("erfinv layer_norm native_layer_norm rms_norm group_norm cosine_similarity poisson_nll_loss "
          "cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss "
          "mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss "
          "multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp "
          "upsample_nearest1d _upsample_nearest_exact1d _upsample_nearest_exact2d upsample_nearest3d "
          "_upsample_nearest_exact3d upsample_linear1d _upsample_bilinear2d_aa upsample_trilinear3d "
          "upsample_bicubic2d _upsample_bicubic2d_aa", autocast=A.FP32),
    NpuOp("frobenius_norm", autocast=A.FP32, autocast_overloads=("dim",)),
    NpuOp("nuclear_norm", autocast=A.FP32, autocast_overloads=("default", "dim")),
    NpuOp("prod", autocast=A.FP32_SET_OPT_DTYPE, autocast_overloads=("default", "dim_int")),
    NpuOp("sum", autocast=A.FP32_SET_OPT_DTYPE, autocast_overloads=("default", "dim_IntList")),
    NpuOp("linalg_matrix_norm", autocast=A.FP32_SET_OPT_DTYPE, autocast_overloads=("default", "str_ord")),
    NpuOp("norm", autocast=A.FP32_APPEND_DTYPE, autocast_overloads=("Scalar", "ScalarOpt_dim")),
    *_ops("bilinear cross dot vdot grid_sampler index_put tensordot scatter_add", autocast=A.PROMOTE),
    NpuOp("binary_cross_entropy", autocast=A.BANNED),
]
del B, A


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


def autocast_policies() -> dict:
    """``{category: overload names}`` for ``register_autocast_policies`` (``"pow.Scalar"``; bare: default)."""
    policies: dict = {}
    for op in OPS:
        if op.autocast is not None:
            policies.setdefault(op.autocast.value, []).extend(
                _kernel_name(op.name, overload) for overload in op.autocast_overloads)
    return {category: tuple(names) for category, names in policies.items()}
