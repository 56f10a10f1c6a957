"""The npu's autocast op policies: torch 2.13's CUDA lists (ATen/autocast_mode.h), one table.

Each policy names the aten overloads it applies to, as torch registers them
(``"pow.Tensor_Scalar"``; a bare name is the default overload):

- ``lower_precision_fp``: cast floating inputs to the autocast dtype (float16 or bfloat16).
- ``fp32``: cast floating inputs to float32.
- ``fp32_set_opt_dtype``: if the first input may be cast, ask for a float32 result unless the
  caller gave a dtype (the input is not cast).
- ``fp32_append_dtype``: norm, redispatched with a float32 output dtype.
- ``promote``: cast to the widest floating dtype among the inputs.
- ``banned``: refuse under autocast.

Only ops npusim defines when the npu registers its policies get a kernel; the
others are listed in ``npusim.backend.amp.autocast_registration.MISSING_OPS`` (see ``missing_ops()``).
Every op on no list runs untouched (the fallthrough fallback).
"""
from __future__ import annotations

NPU_AUTOCAST_POLICIES = {
    "lower_precision_fp": (
        "_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
        "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu", "addmm", "addmv", "addr",
        "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm", "chain_matmul",
        "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "lstm_cell", "gru_cell",
        "rnn_tanh_cell", "rnn_relu_cell", "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
    ),
    "fp32": (
        "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
        "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus", "layer_norm",
        "native_layer_norm", "rms_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim",
        "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
        "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
        "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
        "upsample_nearest1d", "_upsample_nearest_exact1d", "upsample_nearest2d", "_upsample_nearest_exact2d",
        "upsample_nearest3d", "_upsample_nearest_exact3d", "upsample_linear1d", "upsample_bilinear2d",
        "_upsample_bilinear2d_aa", "upsample_trilinear3d", "upsample_bicubic2d", "_upsample_bicubic2d_aa",
    ),
    "fp32_set_opt_dtype": (
        "prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum", "linalg_vector_norm",
        "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum", "sum.dim_IntList",
    ),
    "fp32_append_dtype": ("norm.Scalar", "norm.ScalarOpt_dim"),
    "promote": (
        "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
        "tensordot", "scatter_add",
    ),
    "banned": ("binary_cross_entropy",),
}
