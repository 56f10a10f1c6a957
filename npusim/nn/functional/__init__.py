"""``npusim.nn.functional``: torch.nn.functional's activations, layers and losses.

Each function has torch's signature and argument checks and calls the aten
operator torch calls; reduction strings ('none', 'mean', 'sum') become aten's
enum here. Gradients come from the operators' derivative formulas (or their
decompositions), so every function works under autograd on any device.

This package only re-exports: each function lives in the module of its concept (``activation``, ``pooling``,
``losses``...), and those modules import what they need from each other without cycles.
"""
from __future__ import annotations

from .activation import (
    celu, elu, elu_, gelu, glu, gumbel_softmax, hardshrink, hardsigmoid, hardswish, hardtanh, hardtanh_,
    leaky_relu, leaky_relu_, log_softmax, logsigmoid, mish, prelu, relu, relu6, relu_, rrelu, rrelu_, selu, sigmoid,
    silu, softmax, softmin, softplus, softshrink, softsign, tanh, tanhshrink, threshold, threshold_,
)
from .attention import multi_head_attention_forward, scaled_dot_product_attention
from .convolution import conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, fold, unfold
from .convolution_tbc import conv_tbc
from .distance import cosine_similarity, pairwise_distance, pdist
from .dropouts import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d, feature_alpha_dropout
from .embeddings import embedding, embedding_bag, one_hot
from .linear_layers import bilinear, linear
from .losses import (
    binary_cross_entropy, binary_cross_entropy_with_logits, cosine_embedding_loss, cross_entropy, ctc_loss,
    gaussian_nll_loss, hinge_embedding_loss, huber_loss, kl_div, l1_loss, margin_ranking_loss, mse_loss,
    multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss, nll_loss, poisson_nll_loss,
    smooth_l1_loss, soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss,
)
from .normalization import batch_norm, group_norm, instance_norm, layer_norm, local_response_norm, normalize, rms_norm
from .padding import pad
from .pooling import (
    adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool1d, adaptive_max_pool2d,
    adaptive_max_pool3d, avg_pool1d, avg_pool2d, avg_pool3d, lp_pool1d, lp_pool2d, lp_pool3d, max_pool1d, max_pool2d,
    max_pool3d, max_unpool1d, max_unpool2d, max_unpool3d, max_pool1d_with_indices, max_pool2d_with_indices,
    max_pool3d_with_indices, adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d_with_indices,
)
from .activation import celu_, selu_
from .fractional_pooling import (
    fractional_max_pool2d, fractional_max_pool2d_with_indices, fractional_max_pool3d, fractional_max_pool3d_with_indices,
)
from .grouped_matmul import grouped_mm
from .scaled_matmul import ScalingType, SwizzleType, scaled_grouped_mm, scaled_mm
from .linear_losses import linear_cross_entropy
from .vision import affine_grid, channel_shuffle, grid_sample, interpolate, pixel_shuffle, pixel_unshuffle

__all__ = [
    "fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices", "linear_cross_entropy", "grouped_mm",
    "scaled_mm", "scaled_grouped_mm", "ScalingType", "SwizzleType",
    "pdist", "celu_", "selu_", "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "relu", "relu_", "relu6", "elu", "elu_", "selu", "celu", "gelu", "silu", "mish", "hardtanh", "hardtanh_",
    "hardsigmoid", "hardswish", "leaky_relu", "leaky_relu_", "softplus", "logsigmoid", "threshold", "threshold_",
    "glu", "prelu", "tanh", "sigmoid", "softsign", "tanhshrink", "softmax", "log_softmax", "softmin", "one_hot",
    "embedding", "linear", "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d",
    "pad", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_similarity", "bilinear",
    "scaled_dot_product_attention", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
    "pixel_shuffle", "pixel_unshuffle", "instance_norm", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "max_pool2d", "max_pool3d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d", "layer_norm", "rms_norm", "batch_norm",
    "group_norm", "interpolate", "normalize", "adaptive_max_pool3d", "multi_head_attention_forward",
    "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "hinge_embedding_loss", "multilabel_soft_margin_loss",
    "soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "pairwise_distance", "hardshrink",
    "softshrink", "rrelu", "rrelu_", "unfold", "fold", "embedding_bag", "local_response_norm", "lp_pool1d",
    "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "channel_shuffle", "max_unpool3d", "affine_grid",
    "grid_sample", "gumbel_softmax", "ctc_loss", "conv_tbc",
]
