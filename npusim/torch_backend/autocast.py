"""``torch.autocast("npu")``: torch.cuda's autocast policy on the AutocastPrivateUse1 key.

torch 2.13 registers nothing for AutocastPrivateUse1, not even a fallthrough, so without this module every op
inside ``torch.autocast("npu")`` fails. A fallthrough lets ops outside the lists pass; the lists are
torch.cuda's: ops that run in the lower precision (matrix products and convolutions), ops that run in float32
(reductions, losses, normalisations, transcendental functions), and ops that run in the widest input type.
Each policy kernel casts its floating npu arguments, then calls the op with autocast excluded, as torch's C++
policy kernels do; autograd sees the casts, so backward works.
"""
from __future__ import annotations

import torch

LOWER_PRECISION = (
    "_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
    "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu", "addmm", "addmv", "addr",
    "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul",
    "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell",
    "rnn_relu_cell", "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
)
FLOAT32 = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
    "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus", "layer_norm",
    "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim", "cosine_similarity",
    "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "kl_div",
    "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
    "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d", "_upsample_nearest_exact1d",
    "upsample_nearest2d", "_upsample_nearest_exact2d", "upsample_nearest3d", "_upsample_nearest_exact3d",
    "upsample_linear1d", "upsample_bilinear2d", "_upsample_bilinear2d_aa", "upsample_trilinear3d",
    "upsample_bicubic2d", "_upsample_bicubic2d_aa", "prod", "prod.dim_int", "softmax.int", "log_softmax.int",
    "cumprod", "cumsum", "sum", "sum.dim_IntList", "norm.Scalar", "norm.ScalarOpt_dim", "cross_entropy_loss",
)
PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sampler", "index_put", "scatter_add",
           "tensordot", "cat", "stack", "vdot")

_EXCLUDE = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1)
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _cast(v, dtype):
    if isinstance(v, torch.Tensor):
        if v.dtype in _FLOATS and v.dtype != dtype and v.device.type == "npu":
            return v.to(dtype)
        return v
    if isinstance(v, (list, tuple)):
        return type(v)(_cast(x, dtype) for x in v)
    return v


def _floats(values):
    for v in values:
        if isinstance(v, torch.Tensor):
            if v.dtype in _FLOATS and v.device.type == "npu":
                yield v.dtype
        elif isinstance(v, (list, tuple)):
            yield from _floats(v)


def _policy(op, target):
    def kernel(*args, **kwargs):
        if target == "lower":
            dtype = torch.get_autocast_dtype("npu")
        elif target == "float32":
            dtype = torch.float32
        else:   # the widest floating type among the arguments
            found = set(_floats(list(args) + list(kwargs.values())))
            dtype = max(found, key=lambda d: (torch.finfo(d).bits, d == torch.float32)) if found else None
        if dtype is not None:
            args = _cast(args, dtype)
            kwargs = {k: _cast(v, dtype) for k, v in kwargs.items()}
        with torch._C._ExcludeDispatchKeyGuard(_EXCLUDE):
            return op(*args, **kwargs)
    kernel.__name__ = f"autocast_npu_{target}"
    return kernel


def _op(qual):
    name, _, overload = qual.partition(".")
    try:
        return getattr(getattr(torch.ops.aten, name), overload or "default")
    except AttributeError:
        return None


def register(aten_lib, global_lib) -> None:
    global_lib.fallback(torch.library.fallthrough_kernel, "AutocastPrivateUse1")
    for names, target in ((LOWER_PRECISION, "lower"), (FLOAT32, "float32"), (PROMOTE, "promote")):
        for qual in names:
            op = _op(qual)
            if op is not None:
                aten_lib.impl(qual, _policy(op, target), "AutocastPrivateUse1")
