"""Derivative formulas: running extrema, logcumsumexp, scatter_reduce and the unsafe splits."""
from __future__ import annotations

from ..c10 import dtype as D
from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_views import split_backward


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


@derivative("scatter_reduce.two", "scatter_reduce_.two", inputs=("self", "src"),
            save=("self", "dim", "index", "src", "reduce", "include_self"), save_result=True)
def scatter_reduce_backward(ctx, grad):
    """torch's scatter_reduce_backward: per reduction, what each self and src element contributed."""
    x, src, index, dim, reduce = ctx.self, ctx.src, ctx.index, ctx.dim, ctx.reduce
    include_self = ctx.include_self
    result = ctx.result
    grad_self = grad_src = None
    if reduce == "sum":
        grad_self, grad_src = grad, aten.gather.default(grad, dim, index)
    elif reduce == "mean":
        ones = aten.ones_like.default(src)
        counts = aten.ones_like.default(x) if include_self else aten.zeros_like.default(x)
        counts = aten.scatter_add.default(counts, dim, index, ones)
        counts = aten.masked_fill.Scalar(counts, aten.eq.Scalar(counts, 0), 1)
        grad_self = aten.div.Tensor(grad, counts)
        grad_src = aten.gather.default(grad_self, dim, index)
    elif reduce == "prod":
        # the product of the others, also where an element is zero (a product without it)
        masked_self = aten.masked_fill.Scalar(x, aten.eq.Scalar(x, 0), 1)
        masked_src = aten.masked_fill.Scalar(src, aten.eq.Scalar(src, 0), 1)
        masked_result = aten.scatter_reduce.two(masked_self, dim, index, masked_src, "prod",
                                                include_self=include_self)
        self_zeros = aten._to_copy.default(aten.eq.Scalar(x, 0), dtype=D.int64)
        if not include_self:   # only the positions src does not reach keep self's value
            self_zeros = aten.scatter.value(self_zeros, dim, index, 0)
        zero_count = aten.scatter_add.default(self_zeros, dim, index,
                                              aten._to_copy.default(aten.eq.Scalar(src, 0), dtype=D.int64))
        grad_self = aten.where.self(
            aten.eq.Scalar(x, 0),
            aten.where.ScalarOther(aten.eq.Scalar(zero_count, 1), aten.mul.Tensor(grad, masked_result), 0),
            aten.div.Tensor(aten.mul.Tensor(grad, result), masked_self))
        src_zero = aten.eq.Scalar(src, 0)
        grad_src = aten.where.self(
            src_zero,
            aten.where.ScalarOther(aten.eq.Scalar(aten.gather.default(zero_count, dim, index), 1),
                                   aten.gather.default(aten.mul.Tensor(grad, masked_result), dim, index), 0),
            aten.div.Tensor(aten.gather.default(aten.mul.Tensor(grad, result), dim, index), masked_src))
    else:   # amax / amin: the gradient is shared evenly among the elements equal to the result
        self_is_result = aten._to_copy.default(aten.eq.Tensor(x, result), dtype=grad.dtype)
        if not include_self:
            self_is_result = aten.scatter.value(self_is_result, dim, index, 0)
        src_is_result = aten._to_copy.default(aten.eq.Tensor(src, aten.gather.default(result, dim, index)),
                                              dtype=grad.dtype)
        count = aten.scatter_add.default(self_is_result, dim, index, src_is_result)
        share = aten.div.Tensor(grad, count)
        grad_self = aten.mul.Tensor(self_is_result, share)
        grad_src = aten.mul.Tensor(src_is_result, aten.gather.default(share, dim, index))
    if not include_self:
        # positions written by src owe nothing to self's old values
        grad_self = aten.scatter.value(grad_self, dim, index, 0)
    return grad_self, grad_src


derivative("unsafe_split.Tensor", save=("self_meta", "dim"), save_result=True,
           name="UnsafeSplitBackward0")(split_backward)
derivative("unsafe_chunk", save=("self_meta", "dim"), save_result=True, name="UnsafeSplitBackward0")(split_backward)
