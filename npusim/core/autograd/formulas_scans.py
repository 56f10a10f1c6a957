"""Backward formulas of the scans: running extrema and logcumsumexp."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative


@derivative("cummax", "cummin", save=("self_meta", "dim"), save_result=True, nondiff_outputs=(1,))
def cumulative_extreme_backward(ctx, grad_values, grad_indices=None):
    x = ctx.self_meta
    indices = ctx.result[1]
    if x.dim() == 0:
        return grad_values
    zeros = aten.zeros.default(list(x.shape), dtype=grad_values.dtype, device=grad_values.device)
    # every output position sends its gradient to the input element it copied
    return aten.scatter_add.default(zeros, ctx.dim, indices, grad_values)


@derivative("logcumsumexp", save=("self", "dim"), save_result=True)
def logcumsumexp_backward(ctx, grad):
    """d/dx_j = sum_{i >= j} grad_i exp(x_j - out_i), summed in log space apart for positive and negative grads."""
    x, out, dim = ctx.self, ctx.result, ctx.dim
    if x.dim() == 0:
        return grad
    d = dim % x.dim()

    def reverse_logcumsumexp(t):
        return aten.flip.default(aten.logcumsumexp.default(aten.flip.default(t, [d]), d), [d])

    neg_inf = float("-inf")
    log_pos = aten.masked_fill.Scalar(aten.log.default(aten.clamp_min.default(grad, 0)),
                                      aten.le.Scalar(grad, 0), neg_inf)
    log_neg = aten.masked_fill.Scalar(aten.log.default(aten.clamp_min.default(aten.neg.default(grad), 0)),
                                      aten.ge.Scalar(grad, 0), neg_inf)
    pos = aten.exp.default(aten.add.Tensor(x, reverse_logcumsumexp(aten.sub.Tensor(log_pos, out))))
    neg = aten.exp.default(aten.add.Tensor(x, reverse_logcumsumexp(aten.sub.Tensor(log_neg, out))))
    return aten.sub.Tensor(pos, neg)
