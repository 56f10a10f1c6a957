"""Backward formulas of indexing and scattering ops.

As everywhere, the formulas are written with dispatched ops so that they can be
differentiated again (gather's backward is a scatter_add, whose backward is a
gather, and so on).
"""
from __future__ import annotations

from ..c10 import dtype as D
from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import sum_to


def zeros_of(meta, g):
    """Zeros with the shape of a saved TensorMeta, in the gradient's dtype and device."""
    return aten.zeros.default(list(meta.shape), dtype=g.dtype, device=g.device)


def wrap_dim(dim, ndim):
    n = max(ndim, 1)
    return dim % n


def _pad_to(g, meta):
    """``g`` placed at the start of zeros of ``meta``'s shape (a src larger than its index)."""
    if tuple(g.shape) == tuple(meta.shape):
        return g
    z = zeros_of(meta, g)
    region = z
    for d, n in enumerate(g.shape):
        region = aten.narrow.default(region, d, 0, n)
    aten.copy_.default(region, g)
    return z


def index_along(dim, index):
    """An index list that picks ``index`` along ``dim`` (the dims before it taken whole)."""
    return [None] * dim + [aten.reshape.default(index, [-1])]


# --- gather / scatter ------------------------------------------------------------------------------------

@derivative("gather", save=("self_meta", "dim", "index"))
def gather_backward(ctx, g):
    return aten.scatter_add.default(zeros_of(ctx.self_meta, g), ctx.dim, ctx.index, g)


@derivative("scatter.src", "scatter_.src", inputs=("self", "src"), save=("dim", "index", "src_meta"))
def scatter_src_backward(ctx, g):
    n = ctx.needs_input_grad
    return (aten.scatter.value(g, ctx.dim, ctx.index, 0) if n[0] else None,
            _pad_to(aten.gather.default(g, ctx.dim, ctx.index), ctx.src_meta) if n[1] else None)


@derivative("scatter.value", "scatter_.value", save=("dim", "index"))
def scatter_value_backward(ctx, g):
    return aten.scatter.value(g, ctx.dim, ctx.index, 0)


@derivative("scatter_add", "scatter_add_", inputs=("self", "src"), save=("dim", "index", "src_meta"))
def scatter_add_backward(ctx, g):
    n = ctx.needs_input_grad
    return (g if n[0] else None,
            _pad_to(aten.gather.default(g, ctx.dim, ctx.index), ctx.src_meta) if n[1] else None)


# --- index_select / masked_select / advanced indexing -------------------------------------------------------

@derivative("index_select", save=("self_meta", "dim", "index"))
def index_select_backward(ctx, g):
    meta = ctx.self_meta
    if meta.dim() == 0:
        return aten.reshape.default(aten.sum.default(g), [])
    dim = wrap_dim(ctx.dim, meta.dim())
    return aten.index_put.default(zeros_of(meta, g), index_along(dim, ctx.index), g, True)


@derivative("masked_select", save=("self_meta", "mask"))
def masked_select_backward(ctx, g):
    meta, mask = ctx.self_meta, ctx.mask
    shape = _broadcast(meta.shape, mask.shape)
    z = aten.zeros.default(list(shape), dtype=g.dtype, device=g.device)
    r = aten.index_put.default(z, [aten.expand.default(mask, list(shape))], g, False)
    return sum_to(r, meta.shape)


def _broadcast(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(y if x == 1 else x for x, y in zip(a, b))


@derivative("index.Tensor", save=("self_meta", "indices"))
def index_backward(ctx, g):
    return aten.index_put.default(zeros_of(ctx.self_meta, g), ctx.indices, g, True)


@derivative("index_put", "index_put_", inputs=("self", "values"), save=("indices", "values_meta", "accumulate"))
def index_put_backward(ctx, g):
    n = ctx.needs_input_grad
    gs = gv = None
    if n[0]:
        if ctx.accumulate:
            gs = g
        else:   # the overwritten places take no gradient back to self
            gs = aten.index_put.default(g, ctx.indices, aten.zeros.default([], dtype=g.dtype, device=g.device),
                                        False)
    if n[1]:
        gv = sum_to(aten.index.Tensor(g, ctx.indices), ctx.values_meta.shape)
    return gs, gv


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
