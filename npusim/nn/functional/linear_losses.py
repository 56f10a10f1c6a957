"""``F.linear_cross_entropy``: cross entropy of linearly transformed input, as torch 2.13's; with ``options`` (a
``LinearCrossEntropyOptions``) the batch is chunked so the full logits never exist."""
from __future__ import annotations

import math
import warnings

from ...core.autograd.grad_mode import is_grad_enabled
from ...core.c10 import dtype as D
from .linear_cross_entropy_chunked import LinearCrossEntropyChunked, LinearCrossEntropyChunkedNoReduction
from .linear_layers import linear
from .losses import cross_entropy

__all__ = ["linear_cross_entropy"]


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``: input (in_features) or
    (N, in_features), linear_weight (C, in_features) or (C, d_1, ..., d_K, in_features) for a K-dimensional loss;
    ``ignore_index=None`` means -100 for class indices. With ``options`` the batch is processed in chunks (class
    indices, reduction 'mean' / 'sum' / 'none', no label smoothing, no K dims; otherwise a warning and the
    reference path)."""
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    num_batches = input.shape[:-1]
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions (in_features), got "
                           f"{input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = linear_weight.shape[1:-1]
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if len(out_features) > 0 and len(num_batches) == 0:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires "
                           f"batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*num_batches, num_classes, *out_features)
    # as cross_entropy: a target shaped like the logits holds probabilities
    target_contains_probabilities = target.shape == logits_shape
    if target_contains_probabilities and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = ignore_index if ignore_index is not None else -100
    chunkable = (not out_features and reduction in {"mean", "sum", "none"} and label_smoothing == 0.0
                 and target.dtype == D.int64)
    if options is not None and not chunkable:
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
            "label_smoothing == 0, target.dtype == int64, out_features == (). Got "
            f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
            f"out_features={tuple(out_features)}, tracing=False, linear_bias.shape="
            f"{tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)
    if options is not None and chunkable:
        has_batches = input.dim() == 2
        if not has_batches:
            input, target = input.unsqueeze(0), target.unsqueeze(0)
        options = options._adjust(num_batches=input.shape[0], in_features=in_features, num_classes=num_classes,
                                  dtype=input.dtype, device=input.device)
        if reduction == "none":
            result = LinearCrossEntropyChunkedNoReduction.apply(
                input, linear_weight, target, linear_bias, weight, ignore_index, options.batch_chunk_size,
                options.acc_policy, options.acc_dtype)
        else:
            grad = is_grad_enabled()
            result = LinearCrossEntropyChunked.apply(
                input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                options.batch_chunk_size, options.acc_policy, options.acc_dtype, options.allow_retain_graph,
                input.requires_grad and grad, linear_weight.requires_grad and grad,
                linear_bias is not None and linear_bias.requires_grad and grad)
        return result if has_batches else result.squeeze(0)
    if out_features:
        linear_weight = linear_weight.reshape((math.prod(out_features, start=num_classes), in_features))
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(math.prod(out_features, start=num_classes))
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


