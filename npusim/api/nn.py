"""torch's top-level forms of nn operators (``torch.conv2d``, ``torch.dropout``, ``torch.batch_norm``...).

They call the ``npusim.nn.functional`` implementations with torch's ``torch.*``
signatures, which follow the aten schemas: positional ``train`` / ``training``
flags without defaults, ``weight`` before ``running_mean`` in the norms, an
empty ``stride`` meaning the kernel size, integer reductions (0 none, 1 mean,
2 sum) that default to 0 (torch's Python binding reads the
schemas' ``reduction=Mean`` as 0) and ignored ``cudnn_enabled`` flags. Also binds ``Tensor.prelu`` and
``Tensor.hardshrink``. The forms that take aten's own arguments and return its result tuples
(``embedding_bag``'s four outputs, ``convolution``, ``grid_sampler``, ``lstm``...) are in ``nn_functions``,
``nn_rnn_functions`` and ``nn_batch_norm_functions``; ``pdist`` is left out here (no nn.functional form).
"""
from __future__ import annotations

from ..core.autograd.grad_mode import no_grad
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from ..nn import functional as F

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "dropout",
    "dropout_", "alpha_dropout", "alpha_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_",
    "layer_norm", "group_norm", "batch_norm", "instance_norm", "embedding", "pixel_shuffle", "pixel_unshuffle",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
    "bilinear", "cosine_similarity", "pairwise_distance", "kl_div", "prelu", "selu", "selu_", "celu", "celu_",
    "rrelu", "rrelu_", "threshold", "threshold_", "hardshrink", "rms_norm", "channel_shuffle",
    "binary_cross_entropy_with_logits", "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "poisson_nll_loss", "triplet_margin_loss", "constant_pad_nd",
]

_REDUCTION_NAMES = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction):
    if isinstance(reduction, str):
        return reduction
    try:
        return _REDUCTION_NAMES[int(reduction)]
    except KeyError:
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _stride(stride):
    # aten's "int[] stride=[]": empty means the kernel size
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


# same signatures as nn.functional's
conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d
pixel_shuffle, pixel_unshuffle, channel_shuffle = F.pixel_shuffle, F.pixel_unshuffle, F.channel_shuffle
adaptive_avg_pool1d, bilinear = F.adaptive_avg_pool1d, F.bilinear
cosine_similarity, pairwise_distance, prelu = F.cosine_similarity, F.pairwise_distance, F.prelu


def dropout(input, p, train):
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return F.rms_norm(input, normalized_shape, weight, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    # aten's form: weight first, padding_idx -1 for none (negative indices are not wrapped here)
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_max_pool1d(input, output_size):
    """(values, indices), always."""
    return tuple(F.adaptive_max_pool1d(input, output_size, return_indices=True))


def kl_div(input, target, reduction=0, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def selu(input):
    return F.selu(input)


def celu(input, alpha=1.0):
    return F.celu(input, alpha)


selu_, celu_ = F.selu_, F.celu_     # the same functions, as torch.selu_ is torch.nn.functional.selu_


def threshold(input, threshold, value):
    return F.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return F.threshold(input, threshold, value, inplace=True)


def hardshrink(input, lambd=0.5):
    return F.hardshrink(input, lambd)


def _rrelu(input, lower, upper, training, generator, inplace):
    if generator is None or not training:
        return F.rrelu(input, lower, upper, training, inplace)
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    # as nn.functional's, with the slopes drawn from ``generator``
    with no_grad():
        slope = aten.empty_like.default(input).uniform_(lower, upper, generator=generator)
        factor = aten.where.self(input <= 0, slope, aten.ones_like.default(input))
    return input.mul_(factor) if inplace else input * factor


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _rrelu(input, lower, upper, training, generator, False)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return _rrelu(input, lower, upper, training, generator, True)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, pad, "constant", value)


Tensor.prelu = lambda self, weight: F.prelu(self, weight)
Tensor.hardshrink = lambda self, lambd=0.5: F.hardshrink(self, lambd)
