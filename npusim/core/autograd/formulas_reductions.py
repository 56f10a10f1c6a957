"""Backward formulas of reductions, cumulative sums and products, and softmax / log_softmax."""
from __future__ import annotations

import math

from ..c10 import dtype as D
from ..dispatch.ops_namespace import aten
from ..tensor import Tensor
from . import grad_mode
from .formulas_complex import holomorphic
from .derivatives import derivative
from .formulas_elementwise import as_input

_mul, _div, _add, _sub = aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor


def _dims(dim, ndim):
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted(d % ndim if ndim else 0 for d in dims)


def _to(t, dtype):
    return t if t.dtype is dtype else aten._to_copy.default(t, dtype=dtype)


def _unreduce(g, shape, dims, keepdim):
    """Broadcast a reduced gradient back over the reduced dims."""
    if not keepdim and len(shape):
        for d in dims:
            g = aten.unsqueeze.default(g, d)
    return aten.expand.default(g, list(shape))


# --- reductions ----------------------------------------------------------------------------------------------

# A reduction given an output dtype (sum(dtype=), autocast's float32 softmax of a float16 input) hands back
# its gradient in the input's dtype, as torch's engine casts every gradient to its input's dtype.

@derivative("sum", save=("self_meta",))
def sum_backward(ctx, g):
    x = ctx.self_meta
    return aten.expand.default(_to(g, x.dtype), x.shape)


@derivative("sum.dim_IntList", save=("self_meta", "dim", "keepdim"))
def sum_dim_backward(ctx, g):
    x = ctx.self_meta
    return _unreduce(_to(g, x.dtype), x.shape, _dims(ctx.dim, x.dim()), ctx.keepdim)


@derivative("mean", save=("self_meta",))
def mean_backward(ctx, g):
    x = ctx.self_meta
    return _to(_div(aten.expand.default(g, list(x.shape)), max(x.numel(), 1)), x.dtype)


@derivative("mean.dim", save=("self_meta", "dim", "keepdim"))
def mean_dim_backward(ctx, g):
    x = ctx.self_meta
    dims = _dims(ctx.dim, x.dim())
    n = 1
    for d in dims:
        n *= x.shape[d] if x.dim() else 1
    return _to(_div(_unreduce(g, x.shape, dims, ctx.keepdim), max(n, 1)), x.dtype)


def _prod_of_others(x, dim):
    """For each element, the product of the others along ``dim`` (exact with zeros present)."""
    ones = aten.ones_like.default(aten.narrow.default(x, dim, 0, 1))
    left = aten.cumprod.default(aten.cat.default([ones, aten.narrow.default(x, dim, 0, x.shape[dim] - 1)], dim),
                                dim)
    rev = aten.flip.default(x, [dim])
    right = aten.cumprod.default(aten.cat.default([ones, aten.narrow.default(rev, dim, 0, x.shape[dim] - 1)],
                                                  dim), dim)
    return _mul(left, aten.flip.default(right, [dim]))


@derivative("prod", save=("self",))
@holomorphic
def prod_backward(ctx, g):
    x = ctx.self
    flat = aten.reshape.default(x, [-1])
    if flat.numel() == 0:
        return aten.zeros_like.default(x)
    others = aten.reshape.default(_prod_of_others(flat, 0), list(x.shape))
    return _to(_mul(aten.expand.default(g, list(x.shape)), others), x.dtype)


@derivative("prod.dim_int", save=("self", "dim", "keepdim"))
@holomorphic
def prod_dim_backward(ctx, g):
    x = ctx.self
    if x.dim() == 0:
        return g
    dim = ctx.dim % x.dim()
    others = _prod_of_others(x, dim)
    return _to(_mul(_unreduce(g, x.shape, [dim], ctx.keepdim), others), x.dtype)


def _evenly(g, x, result, dims, keepdim):
    """torch's evenly_distribute_backward: ties at the extreme share the gradient."""
    r = _unreduce(result, x.shape, dims, keepdim) if dims is not None else aten.expand.default(result,
                                                                                                list(x.shape))
    mask = aten.eq.Tensor(x, r)
    if dims is None:
        count = aten.sum.default(mask)
        gg = aten.expand.default(g, list(x.shape))
    else:
        count = aten.sum.dim_IntList(mask, dims, True)
        gg = _unreduce(g, x.shape, dims, keepdim)
        count = aten.expand.default(count, list(x.shape))
    return _mul(_div(gg, count), mask)


# torch's numbers: the reductions over dims are MaxBackward0 / MinBackward0, the full ones MaxBackward1 / MinBackward1
@derivative("max", save=("self",), save_result=True, name="MaxBackward1")
@derivative("min", save=("self",), save_result=True, name="MinBackward1")
def max_all_backward(ctx, g):
    return _evenly(g, ctx.self, ctx.result, None, False)


@derivative("amax", "amin", save=("self", "dim", "keepdim"), save_result=True)
def amax_backward(ctx, g):
    x = ctx.self
    return _evenly(g, x, ctx.result, _dims(ctx.dim, x.dim()), ctx.keepdim)


@derivative("max.dim", save=("self", "dim", "keepdim"), save_result=True, nondiff_outputs=(1,), name="MaxBackward0")
@derivative("min.dim", save=("self", "dim", "keepdim"), save_result=True, nondiff_outputs=(1,), name="MinBackward0")
def max_dim_backward(ctx, g, g_indices=None):
    x = ctx.self
    indices = ctx.result[1]
    if x.dim() == 0:
        return g
    dim = ctx.dim % x.dim()
    if not ctx.keepdim:
        g = aten.unsqueeze.default(g, dim)
        indices = aten.unsqueeze.default(indices, dim)
    return aten.scatter.src(aten.zeros_like.default(x), dim, indices, g)


def _var_grad(x, g, dims, correction, keepdim):
    n = 1
    for d in dims:
        n *= x.shape[d] if x.dim() else 1
    mean = aten.mean.dim(x, dims, True) if x.dim() else x
    gg = _unreduce(g, x.shape, dims, keepdim)
    return _mul(_mul(gg, _sub(x, mean)), 2.0 / max(n - correction, 0) if n - correction > 0 else float("inf"))


@derivative("var.correction", save=("self", "dim", "correction", "keepdim"))
def var_backward(ctx, g):
    x = ctx.self
    c = 1 if ctx.correction is None else ctx.correction
    return _var_grad(x, g, _dims(ctx.dim, x.dim()), c, ctx.keepdim)


@derivative("std.correction", save=("self", "dim", "correction", "keepdim"), save_result=True)
def std_backward(ctx, g):
    x = ctx.self
    c = 1 if ctx.correction is None else ctx.correction
    dims = _dims(ctx.dim, x.dim())
    gv = _div(g, _mul(ctx.result, 2))
    return _var_grad(x, gv, dims, c, ctx.keepdim)


@derivative("var_mean.correction", save=("self", "dim", "correction", "keepdim"))
def var_mean_backward(ctx, g_var=None, g_mean=None):
    x = ctx.self
    c = 1 if ctx.correction is None else ctx.correction
    dims = _dims(ctx.dim, x.dim())
    return _add_opt(_var_grad(x, g_var, dims, c, ctx.keepdim) if g_var is not None else None,
                    _mean_grad(x, g_mean, dims, ctx.keepdim) if g_mean is not None else None)


@derivative("std_mean.correction", save=("self", "dim", "correction", "keepdim"), save_result=True)
def std_mean_backward(ctx, g_std=None, g_mean=None):
    x = ctx.self
    c = 1 if ctx.correction is None else ctx.correction
    dims = _dims(ctx.dim, x.dim())
    gv = None
    if g_std is not None:
        gv = _var_grad(x, _div(g_std, _mul(ctx.result[0], 2)), dims, c, ctx.keepdim)
    return _add_opt(gv, _mean_grad(x, g_mean, dims, ctx.keepdim) if g_mean is not None else None)


def _mean_grad(x, g, dims, keepdim):
    n = 1
    for d in dims:
        n *= x.shape[d] if x.dim() else 1
    return _div(_unreduce(g, x.shape, dims, keepdim), max(n, 1))


def _add_opt(a, b):
    if a is None:
        return b
    return a if b is None else _add(a, b)


def _norm_grad(x, gg, norm, p, dims):
    """The gradient of ||x||_p over ``dims``, with the output gradient ``gg`` and ``norm`` broadcast to x."""
    if p == 0.0:
        return aten.zeros_like.default(x)
    if p == 1.0:
        return _mul(gg, aten.sgn.default(x))
    if math.isinf(p):
        absx = aten.abs.default(x)
        mask = aten.eq.Tensor(absx, norm)
        count = aten.expand.default(aten.sum.dim_IntList(mask, dims, True), list(x.shape))
        return _mul(_div(_mul(gg, aten.sgn.default(x)), count), mask)
    if p == 2.0:
        r = _div(_mul(gg, x), norm)
    else:
        absx = aten.abs.default(x)
        r = _div(_mul(_mul(gg, x), aten.pow.Tensor_Scalar(absx, p - 2)), aten.pow.Tensor_Scalar(norm, p - 1))
    # the norm of an all-zero slice has no direction: torch returns 0 there
    return aten.masked_fill.Scalar(r, aten.eq.Scalar(norm, 0), 0)


@derivative("norm.Scalar", "norm.ScalarOpt_dim", "norm.ScalarOpt_dim_dtype", save=("self", "p", "dim", "keepdim"),
            save_result=True)
def norm_backward(ctx, g):
    x = ctx.self
    saved = ctx._saved
    dims = _dims(saved.get("dim"), x.dim())
    keepdim = bool(saved.get("keepdim") or False)
    p = 2.0 if ctx.p is None else float(ctx.p)
    # norm.ScalarOpt_dim_dtype's result (autocast's float32 norm) is differentiated in x's dtype
    return _norm_grad(x, _unreduce(_to(g, x.dtype), x.shape, dims, keepdim),
                      _unreduce(_to(ctx.result, x.dtype), x.shape, dims, keepdim), p, dims)


@derivative("linalg_vector_norm", save=("self", "ord", "dim", "keepdim"), save_result=True,
            name="LinalgVectorNormBackward0")
def linalg_vector_norm_backward(ctx, g):
    x = ctx.self
    dims = _dims(ctx.dim, x.dim())
    keepdim = bool(ctx.keepdim)
    # a result in another dtype (the dtype= argument) is differentiated in x's dtype
    norm = _unreduce(_to(ctx.result, x.dtype), x.shape, dims, keepdim)
    return _norm_grad(x, _unreduce(_to(g, x.dtype), x.shape, dims, keepdim), norm, float(ctx.ord), dims)


@derivative("logsumexp", save=("self", "dim", "keepdim"), save_result=True)
@holomorphic
def logsumexp_backward(ctx, g):
    x = ctx.self
    dims = _dims(ctx.dim, x.dim())
    r = _unreduce(ctx.result, x.shape, dims, ctx.keepdim)
    return _mul(_unreduce(g, x.shape, dims, ctx.keepdim), aten.exp.default(_sub(x, r)))


@derivative("cumsum", "cumsum_", save=("self_meta", "dim"))
def cumsum_backward(ctx, g):
    x = ctx.self_meta
    if x.dim() == 0:
        return g
    dim = ctx.dim % x.dim()
    r = aten.flip.default(aten.cumsum.default(aten.flip.default(g, [dim]), dim), [dim])
    return as_input(r, x)


def _reverse_cumsum(v, dim):
    return aten.flip.default(aten.cumsum.default(aten.flip.default(v, [dim]), dim), [dim])


@derivative("cumprod", "cumprod_", save=("self", "dim"), save_result=True)
@holomorphic
def cumprod_backward(ctx, g):
    x = ctx.self
    if x.dim() == 0 or x.numel() == 0:
        return as_input(g, x)
    dim = ctx.dim % x.dim()
    out = ctx.result
    # d out_j / d x_i = prod_{m <= j, m != i} x_m for j >= i. Before a slice's first zero this is
    # out_j / x_i; at the first zero it is the cumprod with that zero read as 1; after it, 0.
    zero = aten.eq.Scalar(x, 0)
    zeros_so_far = aten.cumsum.default(zero, dim)
    before = aten.eq.Scalar(zeros_so_far, 0)
    first_zero = aten.logical_and.default(zero, aten.eq.Scalar(zeros_so_far, 1))
    one = aten.ones_like.default(x)
    safe_x = aten.where.self(before, x, one)
    g_before = _div(_reverse_cumsum(_mul(g, out), dim), safe_x)
    zero_as_one = aten.cumprod.default(aten.where.self(first_zero, one, x), dim)
    g_at_zero = _reverse_cumsum(_mul(g, zero_as_one), dim)
    r = aten.where.self(before, g_before, aten.where.self(first_zero, g_at_zero, aten.zeros_like.default(g_at_zero)))
    return as_input(r, x)


# softmax(x, dtype=) and _softmax(x, half_to_float=True) compute in the result's dtype; the gradient goes
# back in x's (torch's _softmax_backward_data takes input_dtype)
@derivative("softmax.int", "_softmax", save=("dim", "self_meta"), save_result=True)
def softmax_backward(ctx, g):
    return softmax_input_grad(g, ctx.result, ctx.dim, ctx.self_meta.dtype)


_FUSED_DTYPES = (D.float32, D.float64)


def row_sums(t, dim):
    return aten.sum.dim_IntList(t, [dim], True)


def softmax_input_grad(g, out, dim, input_dtype):
    """softmax's gradient g * out - out * rowsum(g * out), in ``input_dtype``: torch's _softmax_backward_data op
    (one kernel, the formula's values), or the formula's differentiable ops (under create_graph, for 16-bit
    outputs, for vmap's batched tensors)."""
    if grad_mode.tls.enabled or out.dtype not in _FUSED_DTYPES or g.dtype is not out.dtype or \
            g.__class__ is not Tensor or out.__class__ is not Tensor:
        gr = _mul(g, out)
        return _to(_sub(gr, _mul(out, row_sums(gr, dim))), input_dtype)
    return aten._softmax_backward_data.default(g, out, dim, input_dtype)


@derivative("log_softmax.int", "_log_softmax", save=("dim", "self_meta"), save_result=True)
def log_softmax_backward(ctx, g):
    r = ctx.result
    dim = ctx.dim
    return _to(_sub(g, _mul(aten.exp.default(r), aten.sum.dim_IntList(g, [dim], True))), ctx.self_meta.dtype)
