"""``npusim.nn.functional``: torch.nn.functional's activations, layers and losses.

Each function has torch's signature and argument checks and calls the aten
operator torch calls; reduction strings ('none', 'mean', 'sum') become aten's
enum here. Gradients come from the operators' derivative formulas (or their
decompositions), so every function works under autograd on any device.
"""
from __future__ import annotations

import numbers
import warnings

from ..core.c10 import dtype as D
from ..core.autograd.grad_mode import is_grad_enabled, no_grad
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = [
    "relu", "relu_", "relu6", "elu", "elu_", "selu", "celu", "gelu", "silu", "mish", "hardtanh", "hardtanh_",
    "hardsigmoid", "hardswish", "leaky_relu", "leaky_relu_", "softplus", "logsigmoid", "threshold", "threshold_",
    "glu", "prelu", "tanh", "sigmoid", "softsign", "tanhshrink", "softmax", "log_softmax", "softmin", "one_hot",
    "embedding", "linear", "dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
    "dropout3d", "pad", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_similarity", "bilinear",
    "scaled_dot_product_attention", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d",
    "adaptive_max_pool1d", "pixel_shuffle",
    "pixel_unshuffle", "instance_norm",
]


# --- argument helpers ----------------------------------------------------------------------------------

def _check_tensor(x, fname, argname="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {type(x).__name__}")


_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction) -> int:
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _legacy_reduction(size_average, reduce) -> str:
    """torch's mapping of the deprecated size_average / reduce flags to a reduction string (with its warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


def _resolve_reduction(size_average, reduce, reduction) -> str:
    """``reduction``, or what the deprecated flags say when either is given."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _broadcast_shape(a, b):
    a, b = tuple(a), tuple(b)
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) at non-singleton "
                               f"dimension {i}")
        out.append(y if x == 1 else x)
    return out


def _expand_pair(input, target):
    shape = _broadcast_shape(input.shape, target.shape)
    if list(input.shape) != shape:
        input = aten.expand.default(input, shape)
    if list(target.shape) != shape:
        target = aten.expand.default(target, shape)
    return input, target


def _warn_target_size(input, target):
    if target.size() != input.size():
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
                      "This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def _no_grad_arg(t, argname, fname):
    if t is not None and t.requires_grad:
        raise RuntimeError(f"The function '{fname}' is not differentiable with respect to argument '{argname}'. "
                           "This input cannot have requires_grad True.")


# --- activations -------------------------------------------------------------------------------------------

def relu(input, inplace=False):
    _check_tensor(input, "relu")
    return aten.relu_.default(input) if inplace else aten.relu.default(input)


def relu_(input):
    _check_tensor(input, "relu_")
    return aten.relu_.default(input)


def relu6(input, inplace=False):
    _check_tensor(input, "relu6")
    return aten.relu6_.default(input) if inplace else aten.relu6.default(input)


def elu(input, alpha=1.0, inplace=False):
    _check_tensor(input, "elu")
    return aten.elu_.default(input, alpha) if inplace else aten.elu.default(input, alpha)


def elu_(input, alpha=1.0):
    _check_tensor(input, "elu_")
    return aten.elu_.default(input, alpha)


def selu(input, inplace=False):
    _check_tensor(input, "selu")
    return aten.selu_.default(input) if inplace else aten.selu.default(input)


def celu(input, alpha=1.0, inplace=False):
    _check_tensor(input, "celu")
    return aten.celu_.default(input, alpha) if inplace else aten.celu.default(input, alpha)


def gelu(input, approximate="none"):
    _check_tensor(input, "gelu")
    return aten.gelu.default(input, approximate=approximate)


def silu(input, inplace=False):
    _check_tensor(input, "silu")
    return aten.silu_.default(input) if inplace else aten.silu.default(input)


def mish(input, inplace=False):
    _check_tensor(input, "mish")
    return aten.mish_.default(input) if inplace else aten.mish.default(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    _check_tensor(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    op = aten.hardtanh_.default if inplace else aten.hardtanh.default
    return op(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def hardsigmoid(input, inplace=False):
    _check_tensor(input, "hardsigmoid")
    return aten.hardsigmoid_.default(input) if inplace else aten.hardsigmoid.default(input)


def hardswish(input, inplace=False):
    _check_tensor(input, "hardswish")
    return aten.hardswish_.default(input) if inplace else aten.hardswish.default(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _check_tensor(input, "leaky_relu")
    op = aten.leaky_relu_.default if inplace else aten.leaky_relu.default
    return op(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def softplus(input, beta=1.0, threshold=20.0):
    _check_tensor(input, "softplus")
    return aten.softplus.default(input, beta, threshold)


def logsigmoid(input):
    _check_tensor(input, "log_sigmoid")
    return aten.log_sigmoid.default(input)


def _threshold(input, threshold, value, inplace):
    _check_tensor(input, "threshold")
    op = aten.threshold_.default if inplace else aten.threshold.default
    return op(input, threshold, value)


def threshold(input, threshold, value, inplace=False):
    """``value`` where input <= threshold, input elsewhere."""
    return _threshold(input, threshold, value, inplace)


def threshold_(input, threshold, value):
    return _threshold(input, threshold, value, True)


def glu(input, dim=-1):
    _check_tensor(input, "glu")
    return aten.glu.default(input, dim)


def prelu(input, weight):
    _check_tensor(input, "prelu")
    _check_tensor(weight, "prelu", "weight", 2)
    return aten.prelu.default(input, weight)


def tanh(input):
    return input.tanh()


def sigmoid(input):
    return input.sigmoid()


def softsign(input):
    return aten.div.Tensor(input, aten.add.Scalar(aten.abs.default(input), 1))


def tanhshrink(input):
    return aten.sub.Tensor(input, aten.tanh.default(input))


# --- softmax family -------------------------------------------------------------------------------------

def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  f"an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return aten.softmax.int(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return aten.log_softmax.int(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return aten.softmax.int(aten.neg.default(input), dim, dtype)


# --- one-hot, embedding, linear -----------------------------------------------------------------------------

def one_hot(tensor, num_classes=-1):
    _check_tensor(tensor, "one_hot")
    return aten.one_hot.default(tensor, num_classes)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` picked by the indices in ``input``; the ``padding_idx`` row gets no gradient."""
    _check_tensor(weight, "embedding", "weight", 1)
    _check_tensor(input, "embedding", "indices", 2)
    if sparse:
        raise NotImplementedError("embedding(sparse=True): npusim has no sparse tensors; use sparse=False for "
                                  "a dense gradient")
    num = weight.size(0) if weight.dim() else 0
    if padding_idx is not None:
        if padding_idx > 0:
            if padding_idx >= num:
                raise AssertionError("Padding_idx must be within num_embeddings")
        elif padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()
        with no_grad():
            aten.embedding_renorm_.default(weight, input, max_norm, norm_type)
    return aten.embedding.default(weight, input, padding_idx, scale_grad_by_freq, sparse)


def linear(input, weight, bias=None):
    _check_tensor(input, "linear")
    _check_tensor(weight, "linear", "weight", 2)
    if bias is not None:
        _check_tensor(bias, "linear", "bias", 3)
    return aten.linear.default(input, weight, bias)


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1[..., :] @ weight[o] @ x2[..., :] + bias[o], with aten::bilinear's checks."""
    _check_tensor(input1, "bilinear", "input1", 1)
    _check_tensor(input2, "bilinear", "input2", 2)
    _check_tensor(weight, "bilinear", "weight", 3)
    if bias is not None:
        _check_tensor(bias, "bilinear", "bias", 4)
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.size(i) != input2.size(i):
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got {input1.size(i)} "
                               f"and {input2.size(i)}")
    out_features, in1, in2 = weight.shape
    if input1.size(-1) != in1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.size(-1)} but "
                           f"expected {in1}")
    if input2.size(-1) != in2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.size(-1)} but "
                           f"expected {in2}")
    if bias is not None and bias.size(0) != out_features:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.size(0)} but expected "
                           f"{out_features}")
    # One matmul against weight laid out as (in1, out * in2), then a product-sum over in2.
    mixed = input1.matmul(weight.permute(1, 0, 2).reshape(in1, out_features * in2))
    mixed = mixed.unflatten(-1, (out_features, in2))
    out = (mixed * input2.unsqueeze(-2)).sum(-1)
    return out if bias is None else out + bias


# --- dropout -------------------------------------------------------------------------------------------------

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p), in training only."""
    _check_tensor(input, "dropout")
    _check_p(p)
    return aten.dropout_.default(input, p, training) if inplace else aten.dropout.default(input, p, training)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU activations' mean and variance (dropped units take SELU's saturation value)."""
    _check_tensor(input, "alpha_dropout")
    _check_p(p)
    op = aten.alpha_dropout_.default if inplace else aten.alpha_dropout.default
    return op(input, p, training)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    _check_tensor(input, "feature_alpha_dropout")
    _check_p(p)
    op = aten.feature_alpha_dropout_.default if inplace else aten.feature_alpha_dropout.default
    return op(input, p, training)


def _feature_dropout(input, p, training, inplace, unbatched):
    """Channel-wise dropout; an unbatched input gets a batch dim for the call."""
    if unbatched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    op = aten.feature_dropout_.default if inplace else aten.feature_dropout.default
    result = op(input, p, training)
    if unbatched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout1d(input, p=0.5, training=True, inplace=False):
    _check_tensor(input, "dropout1d")
    _check_p(p)
    ndim = input.dim()
    if ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. Note that dropout1d "
                           "exists to provide channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature_dropout(input, p, training, inplace, ndim == 2)


def dropout2d(input, p=0.5, training=True, inplace=False):
    _check_tensor(input, "dropout2d")
    _check_p(p)
    ndim = input.dim()
    if ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {ndim}-D input to dropout2d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use dropout "
                      "instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
                      stacklevel=2)
    if ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior "
                      "will change in a future release to interpret the input as one without a batch dimension, i.e. "
                      "shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using "
                      "dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    _check_tensor(input, "dropout3d")
    _check_p(p)
    ndim = input.dim()
    if ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {ndim}-D input to dropout3d, which is deprecated and will result in an "
                      "error in a future release. To retain the behavior and silence this warning, please use dropout "
                      "instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
                      stacklevel=2)
    return _feature_dropout(input, p, training, inplace, ndim != 5)


# --- padding -------------------------------------------------------------------------------------------------

def pad(input, pad, mode="constant", value=None):
    """Pad the trailing dims: ``pad`` lists (before, after) amounts from the last dim backwards."""
    _check_tensor(input, "pad")
    amounts = []
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, int):
            if isinstance(p, Tensor) and p.dim() == 0 and not p.is_floating_point():
                p = int(p.item())
            else:
                raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of "
                                f"type {type(p).__name__} at pos {i}")
        amounts.append(int(p))
    return aten.pad.default(input, amounts, mode, None if value is None else float(value))


# --- losses ----------------------------------------------------------------------------------------------------

def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class-index targets under log-probabilities ``input`` (N, C, ...)."""
    _check_tensor(input, "nll_loss_nd")
    _check_tensor(target, "nll_loss_nd", "target", 2)
    reduction = _resolve_reduction(size_average, reduce, reduction)
    _no_grad_arg(weight, "weight", "nll_loss_forward")
    return aten.nll_loss_nd.default(input, target, weight, _reduction_enum(reduction), ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim, then nll_loss; or, for targets shaped like the input, the cross-entropy
    against class probabilities."""
    _check_tensor(input, "cross_entropy_loss")
    _check_tensor(target, "cross_entropy_loss", "target", 2)
    reduction = _resolve_reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        _no_grad_arg(weight, "weight", "nll_loss_forward")
    return aten.cross_entropy_loss.default(input, target, weight, _reduction_enum(reduction), ignore_index,
                                           label_smoothing)


def _weighted_pointwise(errors, weight, input, reduction):
    """torch's manual path for mse_loss / l1_loss with a per-element weight."""
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    weighted = aten.mul.Tensor(errors, weight)
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return aten.sum.default(weighted)
    if reduction == "mean":
        return aten.div.Tensor(aten.sum.default(weighted), aten.sum.default(weight))
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_tensor(input, "mse_loss")
    _check_tensor(target, "mse_loss", "target", 2)
    _warn_target_size(input, target)
    reduction = _resolve_reduction(size_average, reduce, reduction)
    x, t = _expand_pair(input, target)
    if weight is not None:
        return _weighted_pointwise(aten.pow.Tensor_Scalar(aten.sub.Tensor(x, t), 2), weight, input, reduction)
    return aten.mse_loss.default(x, t, _reduction_enum(reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    _check_tensor(input, "l1_loss")
    _check_tensor(target, "l1_loss", "target", 2)
    _warn_target_size(input, target)
    reduction = _resolve_reduction(size_average, reduce, reduction)
    x, t = _expand_pair(input, target)
    if weight is not None:
        return _weighted_pointwise(aten.abs.default(aten.sub.Tensor(x, t)), weight, input, reduction)
    return aten.l1_loss.default(x, t, _reduction_enum(reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    _check_tensor(input, "smooth_l1_loss")
    _check_tensor(target, "smooth_l1_loss", "target", 2)
    _warn_target_size(input, target)
    reduction = _resolve_reduction(size_average, reduce, reduction)
    x, t = _expand_pair(input, target)
    return aten.smooth_l1_loss.default(x, t, _reduction_enum(reduction), beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _check_tensor(input, "huber_loss")
    _check_tensor(target, "huber_loss", "target", 2)
    _warn_target_size(input, target)
    x, t = _expand_pair(input, target)
    if weight is None:
        return aten.huber_loss.default(x, t, _reduction_enum(reduction), delta)
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    weighted = aten.mul.Tensor(aten.huber_loss.default(x, t, 0, delta), weight)
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return aten.sum.default(weighted)
    if reduction == "mean":
        return aten.mean.default(weighted)
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence of ``target`` from log-probabilities ``input``; 'batchmean' divides by the batch size."""
    _check_tensor(input, "kl_div")
    _check_tensor(target, "kl_div", "target", 2)
    if size_average is not None or reduce is not None:
        enum = _reduction_enum(_legacy_reduction(size_average, reduce))
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                          "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                          "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        enum = _reduction_enum("sum" if reduction == "batchmean" else reduction)
    reduced = aten.kl_div.default(input, target, enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = aten.div.Scalar(reduced, input.size(0))
    return reduced


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(target log(input) + (1 - target) log(1 - input)), input probabilities in [0, 1]."""
    _check_tensor(input, "binary_cross_entropy")
    _check_tensor(target, "binary_cross_entropy", "target", 2)
    enum = _reduction_enum(_resolve_reduction(size_average, reduce, reduction))
    if target.size() != input.size():
        raise ValueError(f"Using a target size ({target.size()}) that is different to the input size "
                         f"({input.size()}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        _no_grad_arg(weight, "weight", "binary_cross_entropy")
        shape = _broadcast_for_weight(target.size(), weight.size())
        weight = aten.expand.default(weight, shape)
    return aten.binary_cross_entropy.default(input, target, weight, enum)


def _broadcast_for_weight(target_size, weight_size):
    """torch.broadcast_shapes(target, weight), with its error wording."""
    out = list(target_size)
    w = list(weight_size)
    if len(w) > len(out):
        out = [1] * (len(w) - len(out)) + out
    for i in range(1, len(w) + 1):
        if w[-i] != 1 and out[-i] != 1 and w[-i] != out[-i]:
            raise RuntimeError(f"Attempting to broadcast a dimension of length {w[-i]} at -{i}! Mismatching argument "
                               f"at index 1 had {weight_size}; but expected shape should be broadcastable to "
                               f"{list(target_size)}")
        if out[-i] == 1:
            out[-i] = w[-i]
    return out


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross-entropy of sigmoid(input), computed stably from the logits."""
    _check_tensor(input, "binary_cross_entropy_with_logits")
    _check_tensor(target, "binary_cross_entropy_with_logits", "target", 2)
    enum = _reduction_enum(_resolve_reduction(size_average, reduce, reduction))
    if target.size() != input.size():
        raise ValueError(f"Target size ({target.size()}) must be the same as input size ({input.size()})")
    _no_grad_arg(weight, "weight", "binary_cross_entropy_with_logits")
    _no_grad_arg(pos_weight, "pos_weight", "binary_cross_entropy_with_logits")
    return aten.binary_cross_entropy_with_logits.default(input, target, weight, pos_weight, enum)


# --- distances ----------------------------------------------------------------------------------------------

def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    _check_tensor(x1, "cosine_similarity", "x1", 1)
    _check_tensor(x2, "cosine_similarity", "x2", 2)
    return aten.cosine_similarity.default(x1, x2, dim, eps)


# --- attention ----------------------------------------------------------------------------------------------

def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value (scale defaults to 1 / sqrt(E)).

    A bool ``attn_mask`` says which positions take part, a float one is added to
    the scores; ``is_causal`` masks the upper triangle; ``enable_gqa`` shares each
    key/value head among a group of query heads.
    """
    _check_tensor(query, "scaled_dot_product_attention", "query", 1)
    _check_tensor(key, "scaled_dot_product_attention", "key", 2)
    _check_tensor(value, "scaled_dot_product_attention", "value", 3)
    return aten.scaled_dot_product_attention.default(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                                     enable_gqa=enable_gqa)


# --- 1-d pooling -------------------------------------------------------------------------------------------
# As in torch, each 1-d pool is the 2-d one on a height-1 view (N, C, 1, L): the 2-d operator's checks,
# kernels and derivatives serve it, and its indices (h * W + w with h = 0) are already positions along L.

def _int_or_int_tensor(v):
    """An int as torch's argument parser reads one: Python or NumPy ints and one-element integer tensors."""
    if isinstance(v, bool):
        return None
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, Tensor) and v.numel() == 1 and not v.is_floating_point() and v.dtype is not D.bool:
        return int(v.item())
    return None


def _int_list_arg(v, fname, argname, pos):
    """An ``int[1]`` argument as a list (an int stands for one copy), with the parser's TypeError."""
    if isinstance(v, (list, tuple)):
        out = []
        for i, x in enumerate(v):
            n = _int_or_int_tensor(x)
            if n is None:
                raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be tuple of ints, but found "
                                f"element of type {type(x).__name__} at pos {i}")
            out.append(n)
        return out
    n = _int_or_int_tensor(v)
    if n is None:
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be tuple of ints, not "
                        f"{type(v).__name__}")
    return [n]


def _int_arg(v, fname, argname, pos):
    n = _int_or_int_tensor(v)
    if n is None:
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be int, not {type(v).__name__}")
    return n


def _bool_arg(v, fname, argname, pos):
    if not isinstance(v, bool):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be bool, not {type(v).__name__}")


def _check_dim_range(input, fname, lo, hi):
    """aten's checkDimRange: lo <= input.dim() < hi."""
    if not lo <= input.dim() < hi:
        raise RuntimeError(f"Expected {lo} to {hi - 1} dimensions, but got {input.dim()}-dimensional tensor for "
                           f"argument #1 'self' (while checking arguments for {fname})")


def _check_one_int(values, fname, argname):
    if len(values) != 1:
        raise RuntimeError(f"{fname}() argument '{argname}' should contain one int (got {len(values)})")


def _pooled_length(n, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape: with ceil_mode the last window must start inside the input or left pad."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _check_max_pool1d(input, kernel, stride, padding, dilation, ceil_mode):
    """aten::max_pool1d's own checks (its indices-returning sibling leaves them to max_pool2d)."""
    shape = input.shape
    if not ((input.dim() == 2 and shape[0] != 0 and shape[1] != 0)
            or (input.dim() == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError(f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{list(shape)}")
    if len(kernel) != 1:
        raise RuntimeError(f"max_pool1d() kernel_size must be an int, list of ints or tuple of ints of size 1 but "
                           f"got size {len(kernel)}")
    if len(stride) > 1:
        raise RuntimeError(f"max_pool1d() stride must be None, an int, list of ints, or tuple of ints of size 1 but "
                           f"got size {len(stride)}")
    if len(padding) != 1:
        raise RuntimeError(f"max_pool1d() padding must be an int, list of ints, or tuple of ints of size 1 but got "
                           f"size {len(padding)}")
    if len(dilation) != 1:
        raise RuntimeError(f"max_pool1d() dilation must be an int, list of ints or tuple of ints of size 1 but got "
                           f"size {len(dilation)}")
    (k,), (p,), (d,) = kernel, padding, dilation
    s = stride[0] if stride else k
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if s <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {s}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, but got padding={p} and "
                           f"kernel_size={k}")
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out = _pooled_length(shape[-1], k, s, p, d, ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows along the last dim of (N, C, L) or (C, L) input; with ``return_indices`` also the
    position in L of each maximum."""
    fname = "max_pool1d_with_indices" if return_indices else "max_pool1d"
    _check_tensor(input, fname)
    kernel = _int_list_arg(kernel_size, fname, "kernel_size", 2)
    stride = [] if stride is None else _int_list_arg(stride, fname, "stride", 3)
    padding = _int_list_arg(padding, fname, "padding", 4)
    dilation = _int_list_arg(dilation, fname, "dilation", 5)
    _bool_arg(ceil_mode, fname, "ceil_mode", 6)
    if not return_indices:
        _check_max_pool1d(input, kernel, stride, padding, dilation, ceil_mode)
        # torch's CPU kernel without indices takes floating inputs only; it is used when no gradient is needed
        needs_indices = input.requires_grad and is_grad_enabled()
        if input.device.type == "cpu" and not needs_indices and not input.is_floating_point():
            raise NotImplementedError(f"\"max_pool1d_impl\" not implemented for '{D.SCALAR_TYPE_NAME[input.dtype]}'")
    stride = stride or kernel
    _check_dim_range(input, "max_pool1d", 2, 4)
    for name, values in (("kernel_size", kernel), ("stride", stride), ("padding", padding), ("dilation", dilation)):
        _check_one_int(values, "max_pool1d", name)
    out, indices = aten.max_pool2d_with_indices.default(aten.unsqueeze.default(input, -2), [1, kernel[0]],
                                                        [1, stride[0]], [0, padding[0]], [1, dilation[0]], ceil_mode)
    out = aten.squeeze.dim(out, -2)
    if return_indices:
        return out, aten.squeeze.dim(indices, -2)
    return out


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows along the last dim of (N, C, L) or (C, L) input (padding counts in the divisor when
    ``count_include_pad``)."""
    fname = "avg_pool1d"
    _check_tensor(input, fname)
    kernel = _int_list_arg(kernel_size, fname, "kernel_size", 2)
    stride = [] if stride is None else _int_list_arg(stride, fname, "stride", 3)
    padding = _int_list_arg(padding, fname, "padding", 4)
    _bool_arg(ceil_mode, fname, "ceil_mode", 5)
    _bool_arg(count_include_pad, fname, "count_include_pad", 6)
    stride = stride or kernel
    _check_dim_range(input, fname, 2, 4)
    for name, values in (("kernel_size", kernel), ("stride", stride), ("padding", padding)):
        _check_one_int(values, fname, name)
    out = aten.avg_pool2d.default(aten.unsqueeze.default(input, -2), [1, kernel[0]], [1, stride[0]],
                                  [0, padding[0]], ceil_mode, count_include_pad)
    return aten.squeeze.dim(out, -2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Max over the windows that split L into ``output_size`` nearly equal parts; with ``return_indices`` also
    the position in L of each maximum."""
    _check_tensor(input, "adaptive_max_pool1d")
    size = _int_list_arg(output_size, "adaptive_max_pool1d", "output_size", 2)
    out, indices = aten.adaptive_max_pool1d.default(input, size)
    return (out, indices) if return_indices else out


def adaptive_avg_pool1d(input, output_size):
    """Mean over the windows that split L into ``output_size`` nearly equal parts."""
    fname = "adaptive_avg_pool1d"
    _check_tensor(input, fname)
    size = _int_list_arg(output_size, fname, "output_size", 2)
    _check_dim_range(input, fname, 2, 4)
    _check_one_int(size, fname, "output_size")
    out = aten.adaptive_avg_pool2d.default(aten.unsqueeze.default(input, -2), [1, size[0]])
    return aten.squeeze.dim(out, -2)


# --- pixel shuffle -------------------------------------------------------------------------------------------

def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): each channel group of r^2 becomes an r x r block."""
    _check_tensor(input, "pixel_shuffle")
    r = _int_arg(upscale_factor, "pixel_shuffle", "upscale_factor", 2)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(batch)
    blocks = input.reshape(*batch, c // (r * r), r, r, h, w)
    # (oc, r_h, r_w, h, w) -> (oc, h, r_h, w, r_w): each pixel's block lands beside it
    blocks = blocks.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return blocks.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """The inverse of pixel_shuffle: (*, C, H * r, W * r) -> (*, C * r^2, H, W)."""
    _check_tensor(input, "pixel_unshuffle")
    r = _int_arg(downscale_factor, "pixel_unshuffle", "downscale_factor", 2)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    n = len(batch)
    blocks = input.reshape(*batch, c, h // r, r, w // r, r)
    # (c, oh, r_h, ow, r_w) -> (c, r_h, r_w, oh, ow): each r x r block becomes r^2 channels
    blocks = blocks.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return blocks.reshape(*batch, c * r * r, h // r, w // r)


# --- instance norm -------------------------------------------------------------------------------------------

def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its spatial dims.

    As aten does it: batch norm of the input viewed as (1, N * C, ...), with the per-channel weight, bias and
    running statistics repeated per sample; the running statistics then take the mean over the samples.
    """
    if use_input_stats:
        size = input.size()
        spatial = 1
        for n in list(size)[2:]:
            spatial *= n
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    _check_tensor(input, "instance_norm")
    if not use_input_stats and (running_mean is None or running_var is None):
        raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
    if input.dim() == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.dim() == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if is_grad_enabled():
        _no_grad_arg(running_mean, "running_mean", "native_batch_norm")
        _no_grad_arg(running_var, "running_var", "native_batch_norm")
    b, c = input.size(0), input.size(1)

    def per_sample(t):
        return None if t is None else aten.repeat.default(t, [b])

    mean_rep, var_rep = per_sample(running_mean), per_sample(running_var)
    folded = aten.reshape.default(input.contiguous(), [1, b * c] + list(input.shape[2:]))
    out = aten.batch_norm.default(folded, per_sample(weight), per_sample(bias), mean_rep, var_rep, use_input_stats,
                                  momentum, eps, True)
    if use_input_stats:   # only batch statistics move the running ones
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(aten.mean.dim(aten.reshape.default(mean_rep, [b, c]), [0]))
            if running_var is not None:
                running_var.copy_(aten.mean.dim(aten.reshape.default(var_rep, [b, c]), [0]))
    return aten.reshape.default(out, list(input.shape))


# The rest of torch.nn.functional lives in its own files (functional_attention reads this module's
# functions, so it comes last).
from . import functional_attention as _functional_attention, functional_conv as _functional_conv  # noqa: E402
from .functional_attention import multi_head_attention_forward  # noqa: E402,F401
from .functional_conv import (  # noqa: E402,F401
    adaptive_avg_pool2d, adaptive_avg_pool3d, adaptive_max_pool2d, avg_pool2d, avg_pool3d, batch_norm, conv1d, conv2d,
    conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d, group_norm, interpolate, layer_norm, max_pool2d,
    max_pool3d, normalize, rms_norm,
)
from .functional_conv import adaptive_max_pool3d  # noqa: E402,F401

__all__ += _functional_conv.__all__ + _functional_attention.__all__

from . import functional_losses_extra as _functional_losses_extra  # noqa: E402
from .functional_losses_extra import (  # noqa: E402,F401
    cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, margin_ranking_loss, multi_margin_loss,
    multilabel_margin_loss, multilabel_soft_margin_loss, pairwise_distance, poisson_nll_loss, soft_margin_loss,
    triplet_margin_loss, triplet_margin_with_distance_loss,
)

__all__ += _functional_losses_extra.__all__

from . import functional_layers_extra as _functional_layers_extra  # noqa: E402
from .functional_layers_extra import (  # noqa: E402,F401
    channel_shuffle, embedding_bag, fold, hardshrink, local_response_norm, lp_pool1d, lp_pool2d, lp_pool3d,
    max_unpool1d, max_unpool2d, rrelu, rrelu_, softshrink, unfold,
)
from .functional_layers_extra import max_unpool3d  # noqa: E402,F401

__all__ += _functional_layers_extra.__all__
