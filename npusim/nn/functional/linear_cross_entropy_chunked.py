"""The chunked path of ``F.linear_cross_entropy``: the batch runs ``batch_chunk_size`` rows at a time, so only a
(chunk, num_classes) block of logits ever exists (torch 2.13's algorithm, in its simplest buffer layout).

Per chunk: logits = x W^T (+ b), shifted by their row maximum; the loss adds w_n (z_t - log sum exp z) with the
signed per-row weight w_n (-class weight / d for "mean", -class weight for "sum", 0 at ignore_index), and the
gradients follow from softmax(z) * w_n: d input = W[t] w_n - (softmax * w) W, d W = scatter_t(x w_n) -
(softmax * w)^T x, d b = scatter_t(w_n) - sum_n softmax * w. With 16-bit input and a float32 ``acc_dtype``
everything is computed in float32 and rounded once at the end.

"mean" and "sum" compute the loss and all gradients in the forward and scale them by the upstream gradient in
the backward (which consumes them unless ``allow_retain_graph``); "none" saves its inputs and recomputes the
chunked gradients with the upstream gradient folded into w_n.
"""
from __future__ import annotations

import math

from ...api import factories as _factories
from ...api.operators import where as _where
from ...autograd import Function
from ...core.c10 import dtype as D

__all__ = []


def _accumulate(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, label_smoothing,
                batch_chunk_size, acc_policy, acc_dtype, compute_input_grad, compute_linear_weight_grad,
                compute_linear_bias_grad, loss_grad_output=None):
    """(loss, grad_input, grad_linear_weight, grad_linear_bias) of one chunked pass (torch's accumulator)."""
    if acc_policy == "auto" or acc_dtype is None:
        raise RuntimeError(f"unresolved acc_policy={acc_policy!r} or acc_dtype={acc_dtype!r}; use "
                           f"F.linear_cross_entropy.")
    if target.dtype != D.int64:
        raise TypeError(f"linear_cross_entropy: target dtype must be torch.int64, got {target.dtype}.")
    if label_smoothing > 0.0:
        raise NotImplementedError("linear_cross_entropy does not support label smoothing")
    if reduction not in {"mean", "sum", "none"}:
        raise NotImplementedError(f"linear_cross_entropy does not support {reduction=}")
    if linear_bias is not None and linear_bias.shape != linear_weight.shape[:-1]:
        raise RuntimeError(f"linear_cross_entropy: expected linear_bias shape {tuple(linear_weight.shape[:-1])}, got "
                           f"{tuple(linear_bias.shape)}.")
    dtype = input.dtype
    if dtype != acc_dtype and not (dtype in {D.float16, D.bfloat16} and acc_dtype == D.float32):
        raise RuntimeError(f"linear_cross_entropy supports float32 acc_dtype with float16/bfloat16 inputs, but got "
                           f"{acc_dtype} acc_dtype and {dtype} inputs.")
    device = input.device
    num_batches, in_features = input.shape
    num_classes = linear_weight.shape[0]
    cd = acc_dtype
    # the signed per-row weight
    mask = target == ignore_index
    corrected = _where(mask, 0, target) if ignore_index < 0 or ignore_index >= num_classes else target
    if weight is None:
        row_weight = (~mask).to(cd)
    else:
        row_weight = _where(mask, 0, weight.index_select(0, corrected).to(cd))
    if reduction == "mean":
        d = row_weight.sum()
        row_weight = row_weight.div(_where(d == 0, math.nan, -d))
    elif reduction == "sum":
        row_weight = row_weight.neg()
    elif loss_grad_output is not None:   # the "none" backward: the upstream gradient folded in
        row_weight = row_weight.neg().mul_(loss_grad_output.to(cd))
    lw = linear_weight.detach().to(cd)
    lb = None if linear_bias is None else linear_bias.detach().to(cd)
    x_all = input.detach()

    def chunk_logits(start, size):
        x = x_all.narrow(0, start, size).to(cd)
        logits = x @ lw.T
        if lb is not None:
            logits = logits.add_(lb)
        return x, logits.sub_(logits.amax(1, keepdim=True))   # shifted for a stable softmax

    if reduction == "none" and loss_grad_output is None:
        out = _factories.empty(num_batches, dtype=dtype, device=device)
        for start in range(0, num_batches, batch_chunk_size):
            size = min(batch_chunk_size, num_batches - start)
            _, logits = chunk_logits(start, size)
            t = corrected.narrow(0, start, size)
            target_logit = logits.gather(1, t.unsqueeze(1)).squeeze(1)
            loss = logits.exp_().sum(1).log_().sub_(target_logit).mul_(row_weight.narrow(0, start, size))
            out.narrow(0, start, size).copy_(loss)
        return out, None, None, None
    output = _factories.zeros((), dtype=cd, device=device)
    if reduction == "mean" and num_batches == 0:
        output.fill_(math.nan)
    grad_input = _factories.empty((num_batches, in_features), dtype=cd, device=device) if compute_input_grad else None
    grad_weight = _factories.zeros(tuple(linear_weight.shape), dtype=cd, device=device) \
        if compute_linear_weight_grad else None
    grad_bias = _factories.zeros((num_classes,), dtype=cd, device=device) if compute_linear_bias_grad else None
    compute_grads = compute_input_grad or compute_linear_weight_grad or compute_linear_bias_grad
    for start in range(0, num_batches, batch_chunk_size):
        size = min(batch_chunk_size, num_batches - start)
        x, logits = chunk_logits(start, size)
        t = corrected.narrow(0, start, size)
        w = row_weight.narrow(0, start, size)
        output.add_(w.dot(logits.gather(1, t.unsqueeze(1)).squeeze(1)))
        softmax_denom = logits.exp_().sum(1)
        if compute_grads:
            logits.mul_((w / softmax_denom).unsqueeze(1))   # softmax * w
        output.sub_(w.dot(softmax_denom.log_()))
        if compute_linear_bias_grad:
            grad_bias.sub_(logits.sum(0)).index_add_(0, t, w)
        if compute_input_grad:
            grad_input.narrow(0, start, size).copy_(lw.index_select(0, t).mul_(w.unsqueeze(1)).sub_(logits @ lw))
        if compute_linear_weight_grad:
            grad_weight.sub_(logits.T @ x).index_add_(0, t, x * w.unsqueeze(1))
    cast = (lambda g: None if g is None else g.to(dtype))
    return output.to(dtype), cast(grad_input), cast(grad_weight), cast(grad_bias)


_TWICE = "linear_cross_entropy chunked backward called twice; retain_graph=True / double backward are not supported."


class LinearCrossEntropyChunked(Function):
    """"mean" / "sum": the loss and every gradient computed in the forward, scaled in the backward."""

    @staticmethod
    def forward(ctx, input, linear_weight, target, linear_bias, weight, reduction, ignore_index, batch_chunk_size,
                acc_policy, acc_dtype, allow_retain_graph, compute_input_grad, compute_linear_weight_grad,
                compute_linear_bias_grad):
        loss, gi, gw, gb = _accumulate(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                                       0.0, batch_chunk_size, acc_policy, acc_dtype, compute_input_grad,
                                       compute_linear_weight_grad, compute_linear_bias_grad)
        ctx.allow_retain_graph = allow_retain_graph
        ctx.grads = [gi, gw, gb]
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        result = [None] * 14
        for slot, position in zip(range(3), (0, 1, 3)):
            g = ctx.grads[slot]
            if g is None:
                continue
            if ctx.allow_retain_graph:
                result[position] = g * grad_output
            else:
                if ctx.grads is None or g is False:
                    raise RuntimeError(_TWICE)
                ctx.grads[slot] = False   # consumed: a second backward finds it gone
                result[position] = g.mul_(grad_output)
        return tuple(result)


class LinearCrossEntropyChunkedNoReduction(Function):
    """"none": the per-row loss in the forward; the backward recomputes the chunked gradients."""

    @staticmethod
    def forward(ctx, input, linear_weight, target, linear_bias, weight, ignore_index, batch_chunk_size, acc_policy,
                acc_dtype):
        ctx.save_for_backward(input, linear_weight, target, linear_bias, weight)
        ctx.args = (ignore_index, batch_chunk_size, acc_policy, acc_dtype)
        return _accumulate(input, linear_weight, target, linear_bias, weight, "none", ignore_index, 0.0,
                           batch_chunk_size, acc_policy, acc_dtype, False, False, False)[0]

    @staticmethod
    def backward(ctx, grad_output):
        input, linear_weight, target, linear_bias, weight = ctx.saved_tensors
        needs = ctx.needs_input_grad
        want_bias = linear_bias is not None and needs[3]
        result = [None] * 9
        if not (needs[0] or needs[1] or want_bias):
            return tuple(result)
        ignore_index, batch_chunk_size, acc_policy, acc_dtype = ctx.args
        _, gi, gw, gb = _accumulate(input, linear_weight, target, linear_bias, weight, "none", ignore_index, 0.0,
                                    batch_chunk_size, acc_policy, acc_dtype, needs[0], needs[1], want_bias,
                                    loss_grad_output=grad_output)
        result[0], result[1], result[3] = gi, gw, gb
        return tuple(result)
