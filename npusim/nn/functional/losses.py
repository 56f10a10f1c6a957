"""torch.nn.functional's losses.

Each has torch's signature and argument checks and calls the aten operator torch calls; reduction strings
('none', 'mean', 'sum') become aten's enum here. The margin, embedding and likelihood losses aten composes
follow aten's composite definition (or, for the losses aten gives a kernel, the kernel's formula with the same
strict ``> 0`` hinge as its backward), so autograd needs no new derivative formulas.
"""
from __future__ import annotations

import math
import warnings

from ...core.autograd.grad_mode import is_grad_enabled
from ...core.c10 import dtype as D
from ...core.dispatch.ops_namespace import aten
from ...core.factories import tensor as _tensor
from .activation import logsigmoid
from .arguments import (
    _check_tensor, _legacy_reduction, _no_grad_arg, _reduction_enum, _resolve_reduction, _sizes,
)
from .distance import pairwise_distance

__all__ = [
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "margin_ranking_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "hinge_embedding_loss", "multilabel_soft_margin_loss", "soft_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", "ctc_loss",
]


# --- shared checks --------------------------------------------------------------------------------------------------

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


_EPSILON = 1e-12   # aten's cosine_embedding_loss guard on the squared magnitudes


def _enum_reduction(size_average, reduce, reduction) -> str:
    """The reduction string after the deprecated flags, validated as torch's ``_Reduction.get_enum`` does."""
    reduction = _resolve_reduction(size_average, reduce, reduction)
    _reduction_enum(reduction)
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


# --- classification and regression losses ---------------------------------------------------------------------------

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


# --- pairwise margin losses -----------------------------------------------------------------------------------------

def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    reduction = _enum_reduction(size_average, reduce, reduction)
    _check_tensor(input1, "cosine_embedding_loss", "input1", 1)
    _check_tensor(input2, "cosine_embedding_loss", "input2", 2)
    _check_tensor(target, "cosine_embedding_loss", "target", 3)
    targ_dim = target.dim()
    if targ_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if targ_dim == 1 and input1.dim() != 2:
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{_sizes(input1)} and {_sizes(input2)}.")
    if targ_dim == 0 and input1.dim() != 1:
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{_sizes(input1)} and {_sizes(input2)}.")
    prod_sum = (input1 * input2).sum(targ_dim)
    mag_square1 = (input1 * input1).sum(targ_dim) + _EPSILON
    mag_square2 = (input2 * input2).sum(targ_dim) + _EPSILON
    cos = prod_sum / (mag_square1 * mag_square2).sqrt()
    zeros = aten.zeros_like.default(cos)
    pos = 1 - cos
    neg = (cos - margin).clamp_min(0)
    output = aten.where.self(target == 1, pos, zeros) + aten.where.self(target == -1, neg, zeros)
    return _reduce(output, reduction)


def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -target * (x1 - x2) + margin)."""
    reduction = _enum_reduction(size_average, reduce, reduction)
    _check_tensor(input1, "margin_ranking_loss", "input1", 1)
    _check_tensor(input2, "margin_ranking_loss", "input2", 2)
    _check_tensor(target, "margin_ranking_loss", "target", 3)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} ")
    # relu, not clamp_min: aten's kernel passes no gradient where the hinge is exactly 0
    output = aten.relu.default(-target * (input1 - input2) + margin)
    return _reduce(output, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where target is 1, max(0, margin - x) where it is -1."""
    reduction = _enum_reduction(size_average, reduce, reduction)
    _check_tensor(input, "hinge_embedding_loss")
    _check_tensor(target, "hinge_embedding_loss", "target", 2)
    zeros = aten.zeros_like.default(input)
    margin_clamp = (margin - input).clamp_min(0)
    output_margin = aten.where.self(target != 1, margin_clamp, zeros)
    output_self = aten.where.self(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * x))."""
    reduction = _enum_reduction(size_average, reduce, reduction)
    _check_tensor(input, "soft_margin_loss")
    _check_tensor(target, "soft_margin_loss", "target", 2)
    if is_grad_enabled():   # aten's kernel has no derivative for the target
        _no_grad_arg(target, "target", "soft_margin_loss")
    return _reduce(aten.log1p.default(aten.exp.default(-input * target)), reduction)


def _check_triplet_dims(anchor, positive, negative):
    a, p, n = anchor.dim(), positive.dim(), negative.dim()
    if not (a == p and p == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {p}D, and negative {n}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin) with d the pairwise p-norm distance (``swap``: d(a, n) becomes
    min(d(a, n), d(p, n)))."""
    reduction = _enum_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_tensor(anchor, "triplet_margin_loss", "anchor", 1)
    _check_tensor(positive, "triplet_margin_loss", "positive", 2)
    _check_tensor(negative, "triplet_margin_loss", "negative", 3)
    _check_triplet_dims(anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = aten.minimum.default(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """triplet_margin_loss with any distance (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _check_triplet_dims(anchor, positive, negative)
    if distance_function is None:
        distance_function = pairwise_distance
    dist_pos = distance_function(anchor, positive)
    dist_neg = distance_function(anchor, negative)
    if swap:
        dist_neg = aten.minimum.default(dist_neg, distance_function(positive, negative))
    return _reduce((margin + dist_pos - dist_neg).clamp_min(0), reduction)


# --- likelihood losses ----------------------------------------------------------------------------------------------

def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(x) - target * x (``log_input``) or x - target * log(x + eps); ``full`` adds Stirling's term."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    _check_tensor(input, "poisson_nll_loss")
    _check_tensor(target, "poisson_nll_loss", "target", 2)
    if log_input:
        loss = aten.exp.default(input) - target * input
    else:
        loss = input - target * aten.log.default(input + eps)
    if full:
        stirling = target * aten.log.default(target) - target + 0.5 * aten.log.default(2 * math.pi * target)
        loss = loss + aten.masked_fill.Scalar(stirling, target <= 1, 0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(var) + (x - target)^2 / var), var clamped to ``eps`` (the clamp passes gradients through)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * aten.ones_like.default(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = var.unsqueeze(-1)
        elif input.dim() == var.dim() and sum(y for x, y in zip(input.size(), var.size()) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # torch clamps a clone in place under no_grad: the values are clamped, the gradient is the identity's
    var = var + (var.clamp(min=eps) - var).detach()
    loss = 0.5 * (aten.log.default(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class binary cross-entropy of sigmoid(x), averaged over the classes (the last dim)."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    loss = loss.sum(dim=class_dim) / input.size(class_dim)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


# --- multi-class margin losses --------------------------------------------------------------------------------------

def _check_margin_input(input, fname):
    nd = input.dim()
    if not ((nd == 2 and input.size(1) != 0) or (nd == 1 and input.size(0) != 0) or nd == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{_sizes(input)}")
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{fname}\" not implemented for '{D.SCALAR_TYPE_NAME[input.dtype]}'")


def _check_long_target(target):
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {D.SCALAR_TYPE_NAME[target.dtype]}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """sum over j != y of max(0, margin - x[y] + x[j])^p (times weight[y]), divided by the class count."""
    reduction = _enum_reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _check_tensor(input, "multi_margin_loss")
    _check_tensor(target, "multi_margin_loss", "target", 2)
    _check_margin_input(input, "multi_margin_loss_cpu_kernel")
    nd = input.dim()
    nframe = 1 if nd <= 1 else input.size(0)
    dim = 1 if nd == 0 else input.size(nd - 1)
    if not (target.dim() <= 1 and target.numel() == nframe):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{nframe}], but got {_sizes(target)}. "
                           f"Input has shape {_sizes(input)}.")
    if weight is not None and not (weight.dim() <= 1 and weight.numel() == dim):
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {_sizes(weight)}")
    _check_long_target(target)
    if target.numel() and (int(target.min().item()) < 0 or int(target.max().item()) >= dim):
        raise RuntimeError("target out of range")
    x = input.reshape(nframe, dim)
    t = target.reshape(nframe, 1)
    z = aten.relu.default(margin - x.gather(1, t) + x)   # relu: no gradient where the hinge is exactly 0
    h = z if p == 1 else z * z
    if weight is not None:
        h = h * weight.index_select(0, t.reshape(-1)).unsqueeze(1)
    classes = aten.arange.start(0, dim, device=input.device)
    h = aten.masked_fill.Scalar(h, classes.unsqueeze(0) == t, 0)   # the target class takes no part
    loss = h.sum(1) / dim
    loss = loss.reshape(list(target.shape))   # (N,), or 0-d for an unbatched input with a 0-d target
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each target class j (the target row up to its first -1) and each non-target class k,
    max(0, 1 - (x[j] - x[k])), summed and divided by the class count."""
    reduction = _enum_reduction(size_average, reduce, reduction)
    _check_tensor(input, "multilabel_margin_loss")
    _check_tensor(target, "multilabel_margin_loss", "target", 2)
    _check_margin_input(input, "multilabel_margin_loss_forward_out_frame")
    nd = input.dim()
    if nd <= 1:
        nframe, dim = 1, (1 if nd == 0 else input.size(0))
        ok = target.dim() <= 1 and target.numel() == dim
    else:
        nframe, dim = input.size(0), input.size(1)
        ok = target.dim() == 2 and target.size(0) == nframe and target.size(1) == dim
    if not ok:
        raise RuntimeError(f"inconsistent target size: {_sizes(target)} for input of size: {_sizes(input)}")
    _check_long_target(target)
    rows = [[int(v) for v in row] for row in target.reshape(nframe, dim).tolist()]
    # The target classes of a row are its entries before the first -1 (repeats count again); the
    # membership mask and the padded list of classes are built on the host, then used on the device.
    members, picks, valid = [], [], []
    for row in rows:
        if any(v < -1 or v >= dim for v in row):
            raise RuntimeError("argument #2 'target' is out of range")
        n = row.index(-1) if -1 in row else dim
        classes = row[:n]
        members.append([k in classes for k in range(dim)])
        picks.append(classes + [0] * (dim - n))
        valid.append([True] * n + [False] * (dim - n))
    x = input.reshape(nframe, dim)
    dev = input.device
    is_target = _tensor(members, dtype=D.bool, device=dev).reshape(nframe, dim)
    pick = _tensor(picks, dtype=D.int64, device=dev).reshape(nframe, dim)
    ok_pair = _tensor(valid, dtype=D.bool, device=dev).reshape(nframe, dim, 1) & ~is_target.unsqueeze(1)
    xj = x.gather(1, pick)
    z = aten.relu.default(1 - xj.unsqueeze(2) + x.unsqueeze(1))   # [n, a, k]: 1 - (x[target a] - x[k])
    loss = aten.masked_fill.Scalar(z, ~ok_pair, 0).sum((1, 2)) / dim
    if nd <= 1:
        loss = loss.reshape([])
    return _reduce(loss, reduction)


# --- CTC ------------------------------------------------------------------------------------------------------------

def _lengths(value, name, device):
    if isinstance(value, (list, tuple)):
        return _tensor(list(value), dtype=D.int64, device=device)
    if not hasattr(value, "dim"):
        raise TypeError(f"ctc_loss(): argument '{name}' must be tuple of ints or Tensor, not {type(value).__name__}")
    return value.to(device=device, dtype=D.int64).reshape(-1)


def _safe_logsumexp(terms):
    """logsumexp over a stacked first dimension whose entries may all be -inf: the value is then -inf and the
    gradient zero (the plain formula's would be 0/0)."""
    stacked = aten.stack.default(terms, 0)
    top = stacked.max(0)[0].detach()
    top = aten.where.self(top.isinf(), aten.zeros_like.default(top), top)
    total = (stacked - top).exp().sum(0)
    empty = total == 0
    safe = aten.where.self(empty, total * 0 + 1, total)
    return aten.where.self(empty, safe * 0 - math.inf, safe.log() + top)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss of log-probabilities (T, N, C) (or (T, C)) against padded (N, S)
    or concatenated targets: the forward (alpha) recursion in log space over the blank-extended targets, written
    with differentiable ops. Its gradient with respect to ``log_probs`` is aten's: the posterior's negative plus
    ``exp(log_probs)`` on the frames each sequence uses (the gradient through a log_softmax is the true one)."""
    _check_tensor(log_probs, "ctc_loss")
    _check_tensor(targets, "ctc_loss", "targets", 2)
    _reduction_enum(reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss(): expected log_probs to be 2-D or 3-D, but got {log_probs.dim()}-D")
    steps, batch, classes = log_probs.shape
    device = log_probs.device
    input_lengths = _lengths(input_lengths, "input_lengths", device)
    target_lengths = _lengths(target_lengths, "target_lengths", device)
    if not 0 <= blank < classes:
        raise RuntimeError("blank must be in label range")
    if input_lengths.numel() != batch:
        raise RuntimeError(f"input_lengths must be of size batch_size ({batch}), got {input_lengths.numel()}")
    if target_lengths.numel() != batch:
        raise RuntimeError(f"target_lengths must be of size batch_size ({batch}), got {target_lengths.numel()}")
    host_targets = [int(n) for n in target_lengths.cpu().tolist()]
    host_inputs = [int(n) for n in input_lengths.cpu().tolist()]
    for n, length in enumerate(host_inputs):
        if length > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {length} "
                               f"(while checking arguments for ctc_loss_cpu)")
    longest = max(host_targets + [0])
    targets = targets.to(device=device, dtype=D.int64)
    if targets.dim() == 1:          # concatenated: cut each sequence out and pad to the longest
        starts = [sum(host_targets[:n]) for n in range(batch)]
        rows = [aten.cat.default([targets[s:s + k], targets.new_full((longest - k,), blank)], 0)
                for s, k in zip(starts, host_targets)]
        padded = aten.stack.default(rows, 0) if rows else targets.new_zeros((0, longest))
    else:
        padded = targets[:, :longest]
    # l' = blank, l1, blank, l2, ..., blank: the labels every alignment path runs through
    extended_len = 2 * longest + 1
    extended = padded.new_full((batch, extended_len), blank)
    if longest:
        extended[:, 1::2] = padded.clamp(0, classes - 1)
    # a path may skip the blank between two different labels: s odd, s >= 2 and l'[s] != l'[s - 2]
    skip = extended.new_zeros((batch, extended_len), dtype=D.bool)
    if longest > 1:
        skip[:, 3::2] = extended[:, 3::2] != extended[:, 1:-2:2]
    gathered = log_probs.gather(2, extended.unsqueeze(0).expand(steps, batch, extended_len))
    neg_inf = log_probs.new_full((batch, extended_len), -math.inf)
    positions = aten.arange.default(extended_len, device=device)
    first = (positions <= 1).unsqueeze(0) & ((positions == 0).unsqueeze(0) | (target_lengths > 0).unsqueeze(1))
    alpha = aten.where.self(first, gathered[0], neg_inf) if steps else neg_inf
    pad1 = log_probs.new_full((batch, 1), -math.inf)
    pad2 = log_probs.new_full((batch, 2), -math.inf)
    for t in range(1, steps):
        from_prev = aten.cat.default([pad1, alpha[:, :-1]], 1)
        from_skip = aten.where.self(skip, aten.cat.default([pad2, alpha[:, :-2]], 1), neg_inf)
        step = _safe_logsumexp([alpha, from_prev, from_skip]) + gathered[t]
        alpha = aten.where.self((input_lengths > t).unsqueeze(1), step, alpha)
    last = (2 * target_lengths).unsqueeze(1)
    end_blank = alpha.gather(1, last).squeeze(1)
    end_label = alpha.gather(1, (last - 1).clamp(min=0)).squeeze(1)
    end_label = aten.where.self(target_lengths > 0, end_label, neg_inf[:, 0])
    loss = -_safe_logsumexp([end_blank, end_label])
    if steps:
        # zero in value; gives the gradient aten's kernel gives: exp(log_probs) on each sequence's frames
        used = (aten.arange.default(steps, device=device).unsqueeze(1) < input_lengths.unsqueeze(0)).unsqueeze(2)
        probs = log_probs.exp()
        loss = loss + aten.where.self(used, probs - probs.detach(), probs * 0).sum((0, 2))
    if zero_infinity:
        loss = aten.where.self(loss.isinf(), aten.zeros_like.default(loss), loss)
    if reduction == "mean":
        return (loss / target_lengths.clamp(min=1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
