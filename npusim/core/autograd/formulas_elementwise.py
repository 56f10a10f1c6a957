"""Backward formulas of elementwise ops (each beside what its forward computes)."""
from __future__ import annotations

import math

from ..c10 import dtype as D
from ..dispatch.ops_namespace import aten
from ..tensor import Tensor
from .formulas_complex import holomorphic
from .derivatives import TensorMeta, derivative

_mul, _div, _add, _sub, _neg = (aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor,
                                aten.neg.default)


def sum_to(g, shape):
    """Sum a broadcast gradient back to ``shape``."""
    shape = tuple(shape)
    gs = tuple(g.shape)
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    dims = list(range(lead)) + [lead + i for i, n in enumerate(shape) if n == 1 and gs[lead + i] != 1]
    if dims:
        g = aten.sum.dim_IntList(g, dims, True)
    if lead:
        g = aten.view.default(g, shape) if g.is_contiguous() else aten.reshape.default(g, shape)
    return g


def as_input(g, t):
    """A gradient in an input's (or a saved TensorMeta's) shape and dtype: broadcasting and mixed dtypes undone."""
    if t.__class__ is Tensor:
        ga, ta = g._a, t._a
        if ga.shape == ta.shape and ga.dtype is ta.dtype:   # the common case: nothing to undo
            return g
    elif not isinstance(t, (Tensor, TensorMeta)):
        return None
    g = sum_to(g, t.shape)
    if g.dtype is not t.dtype:
        if g.dtype.is_complex and not t.dtype.is_complex:
            g = aten.real.default(g)    # torch's handle_r_to_c: a real input's gradient is the real part
        g = aten._to_copy.default(g, dtype=t.dtype)
    return g


def _zeros(g):
    return aten.zeros_like.default(g)


# --- arithmetic -----------------------------------------------------------------------------------------

# sums and differences need only their inputs' shapes and dtypes: nothing to free, so (as in torch)
# a second backward through them works without retain_graph
@derivative("add.Tensor", "add.Scalar", "add_.Tensor", "add_.Scalar", inputs=("self", "other"),
            save=("self_meta", "other_meta", "alpha"))
def add_backward(ctx, g):
    n = ctx.needs_input_grad
    return (as_input(g, ctx.self_meta) if n[0] else None,
            as_input(g if ctx.alpha == 1 else _mul(g, ctx.alpha), ctx.other_meta) if n[1] else None)


@derivative("sub.Tensor", "sub.Scalar", "sub_.Tensor", "sub_.Scalar", inputs=("self", "other"),
            save=("self_meta", "other_meta", "alpha"))
def sub_backward(ctx, g):
    n = ctx.needs_input_grad
    return (as_input(g, ctx.self_meta) if n[0] else None,
            as_input(_mul(g, -ctx.alpha), ctx.other_meta) if n[1] else None)


@derivative("rsub.Tensor", "rsub.Scalar", inputs=("self", "other"), save=("self_meta", "other_meta", "alpha"))
def rsub_backward(ctx, g):
    n = ctx.needs_input_grad
    return (as_input(_mul(g, -ctx.alpha), ctx.self_meta) if n[0] else None,
            as_input(g, ctx.other_meta) if n[1] else None)


@derivative("mul.Tensor", "mul.Scalar", "mul_.Tensor", "mul_.Scalar", inputs=("self", "other"),
            save=("self", "other"))
@holomorphic
def mul_backward(ctx, g):
    n = ctx.needs_input_grad
    return (as_input(_mul(g, ctx.other), ctx.self) if n[0] else None,
            as_input(_mul(g, ctx.self), ctx.other) if n[1] else None)


@derivative("div.Tensor", "div.Scalar", "div_.Tensor", "div_.Scalar", inputs=("self", "other"),
            save=("self", "other"))
@holomorphic
def div_backward(ctx, g):
    n = ctx.needs_input_grad
    other = ctx.other
    gs = as_input(_div(g, other), ctx.self) if n[0] else None
    go = None
    if n[1]:
        go = as_input(_neg(_div(_mul(g, ctx.self), _mul(other, other))), other)
    return gs, go


@derivative("div.Tensor_mode", "div.Scalar_mode", "div_.Tensor_mode", "div_.Scalar_mode",
            inputs=("self", "other"), save=("self", "other", "rounding_mode"))
def div_mode_backward(ctx, g):
    if ctx.rounding_mode is not None:   # floor/trunc division is piecewise constant
        return (as_input(_zeros(g), ctx.self) if ctx.needs_input_grad[0] else None,
                as_input(_zeros(g), ctx.other) if ctx.needs_input_grad[1] else None)
    return div_backward(ctx, g)


@derivative("pow.Tensor_Scalar", "pow_.Scalar", inputs=("self",), save=("self", "exponent"))
@holomorphic
def pow_scalar_backward(ctx, g):
    e = ctx.exponent
    if e == 0:
        return _zeros(g)
    x = ctx.self
    return as_input(_mul(_mul(g, e), aten.pow.Tensor_Scalar(x, e - 1)), x)


@derivative("pow.Tensor_Tensor", "pow_.Tensor", inputs=("self", "exponent"), save=("self", "exponent"),
            save_result=True)
@holomorphic
def pow_tensor_backward(ctx, g):
    x, e = ctx.self, ctx.exponent
    if not isinstance(e, Tensor):
        # a number in the exponent's slot: keep it a Python number (as a wrapped double), not a float32 tensor
        return pow_scalar_backward(ctx, g), None
    n = ctx.needs_input_grad
    gx = ge = None
    if n[0]:
        gx = _mul(_mul(g, e), aten.pow.Tensor_Tensor(x, _sub(e, 1)))
        gx = as_input(aten.where.self(aten.eq.Scalar(e, 0), _zeros(gx), gx), x)
    if n[1]:
        r = ctx.result
        logx = aten.log.default(x)
        # 0 ** e with e >= 0 contributes nothing (torch masks the log there)
        safe = aten.where.self(aten.logical_and.default(aten.eq.Scalar(x, 0), aten.ge.Scalar(e, 0)),
                               _zeros(logx), logx)
        ge = as_input(_mul(_mul(g, r), safe), e)
    return gx, ge


@derivative("pow.Scalar", inputs=("exponent",), save=("self",), save_result=True)
@holomorphic
def pow_scalar_base_backward(ctx, g):
    base = ctx.self
    if base == 0:
        return _zeros(g)
    return _mul(_mul(g, ctx.result), math.log(base))


@derivative("remainder.Tensor", "remainder_.Tensor", "remainder.Scalar", "remainder_.Scalar",
            inputs=("self", "other"), save=("self", "other"))
def remainder_backward(ctx, g):
    # self - floor(self / other) * other: the quotient is piecewise constant
    n = ctx.needs_input_grad
    go = None
    if n[1]:
        go = as_input(_neg(_mul(g, aten.div.Tensor_mode(ctx.self, ctx.other, rounding_mode="floor"))), ctx.other)
    return (as_input(g, ctx.self) if n[0] else None, go)


@derivative("fmod.Tensor", "fmod_.Tensor", "fmod.Scalar", "fmod_.Scalar", inputs=("self", "other"),
            save=("self", "other"))
def fmod_backward(ctx, g):
    n = ctx.needs_input_grad
    go = None
    if n[1]:
        go = as_input(_neg(_mul(g, aten.div.Tensor_mode(ctx.self, ctx.other, rounding_mode="trunc"))), ctx.other)
    return (as_input(g, ctx.self) if n[0] else None, go)


@derivative("neg", "neg_")
def neg_backward(ctx, g):
    return _neg(g)


@derivative("abs", "abs_", save=("self",))
def abs_backward(ctx, g):
    return _mul(g, aten.sgn.default(ctx.self))


# --- functions of one input whose derivative uses the result -------------------------------------------------

@derivative("exp", "exp_", save_result=True)
@holomorphic
def exp_backward(ctx, g):
    return _mul(g, ctx.result)


@derivative("exp2", "exp2_", save_result=True)
@holomorphic
def exp2_backward(ctx, g):
    return _mul(_mul(g, ctx.result), math.log(2.0))


@derivative("expm1", "expm1_", save_result=True)
@holomorphic
def expm1_backward(ctx, g):
    return _mul(g, _add(ctx.result, 1))


@derivative("sqrt", "sqrt_", save_result=True)
@holomorphic
def sqrt_backward(ctx, g):
    return _div(g, _mul(ctx.result, 2))


@derivative("rsqrt", "rsqrt_", save_result=True)
@holomorphic
def rsqrt_backward(ctx, g):
    r = ctx.result
    return _mul(_mul(g, -0.5), aten.pow.Tensor_Scalar(r, 3))


@derivative("tanh", "tanh_", save_result=True)
@holomorphic
def tanh_backward(ctx, g):
    r = ctx.result
    return _mul(g, aten.rsub.Scalar(_mul(r, r), 1))


@derivative("sigmoid", "sigmoid_", save_result=True)
@holomorphic
def sigmoid_backward(ctx, g):
    r = ctx.result
    return _mul(g, _mul(r, aten.rsub.Scalar(r, 1)))


@derivative("reciprocal", "reciprocal_", save_result=True)
@holomorphic
def reciprocal_backward(ctx, g):
    r = ctx.result
    return _neg(_mul(g, _mul(r, r)))


@derivative("tan", "tan_", save_result=True)
@holomorphic
def tan_backward(ctx, g):
    r = ctx.result
    return _mul(g, _add(_mul(r, r), 1))


@derivative("relu", "relu_", save_result=True)
def relu_backward(ctx, g):
    return aten.threshold_backward.default(g, ctx.result, 0)    # torch's: a masked copy of g, one op


# --- functions of one input whose derivative uses the input ---------------------------------------------------

@derivative("log", "log_", save=("self",))
@holomorphic
def log_backward(ctx, g):
    return _div(g, ctx.self)


@derivative("log2", "log2_", save=("self",))
@holomorphic
def log2_backward(ctx, g):
    return _div(g, _mul(ctx.self, math.log(2.0)))


@derivative("log10", "log10_", save=("self",))
@holomorphic
def log10_backward(ctx, g):
    return _div(g, _mul(ctx.self, math.log(10.0)))


@derivative("log1p", "log1p_", save=("self",))
@holomorphic
def log1p_backward(ctx, g):
    return _div(g, _add(ctx.self, 1))


@derivative("sin", "sin_", save=("self",))
@holomorphic
def sin_backward(ctx, g):
    return _mul(g, aten.cos.default(ctx.self))


@derivative("cos", "cos_", save=("self",))
@holomorphic
def cos_backward(ctx, g):
    return _neg(_mul(g, aten.sin.default(ctx.self)))


@derivative("sinh", "sinh_", save=("self",))
@holomorphic
def sinh_backward(ctx, g):
    return _mul(g, aten.cosh.default(ctx.self))


@derivative("cosh", "cosh_", save=("self",))
@holomorphic
def cosh_backward(ctx, g):
    return _mul(g, aten.sinh.default(ctx.self))


@derivative("asin", "asin_", save=("self",))
def asin_backward(ctx, g):
    x = ctx.self
    return _div(g, aten.sqrt.default(aten.rsub.Scalar(_mul(x, x), 1)))


@derivative("acos", "acos_", save=("self",))
def acos_backward(ctx, g):
    x = ctx.self
    return _neg(_div(g, aten.sqrt.default(aten.rsub.Scalar(_mul(x, x), 1))))


@derivative("atan", "atan_", save=("self",))
def atan_backward(ctx, g):
    x = ctx.self
    return _div(g, _add(_mul(x, x), 1))


@derivative("erf", "erf_", save=("self",))
def erf_backward(ctx, g):
    x = ctx.self
    return _mul(_mul(g, 2.0 / math.sqrt(math.pi)), aten.exp.default(_neg(_mul(x, x))))


@derivative("square", "square_", save=("self",))
@holomorphic
def square_backward(ctx, g):
    return _mul(_mul(g, ctx.self), 2)


@derivative("floor", "floor_", "ceil", "ceil_", "round", "round_", "round.decimals", "round_.decimals", "trunc",
            "trunc_", "sign", "sign_", "sgn")
def piecewise_constant_backward(ctx, g):
    return _zeros(g)


@derivative("atan2", "atan2_", inputs=("self", "other"), save=("self", "other"))
def atan2_backward(ctx, g):
    x, y = ctx.self, ctx.other
    denom = _add(_mul(x, x), _mul(y, y))
    n = ctx.needs_input_grad
    return (as_input(_div(_mul(g, y), denom), x) if n[0] else None,
            as_input(_neg(_div(_mul(g, x), denom)), y) if n[1] else None)


# --- selection-like ops ---------------------------------------------------------------------------------------

def _masked(g, mask):
    return aten.where.self(mask, g, _zeros(g))


@derivative("clamp", "clamp_", inputs=("self",), save=("self", "min", "max"))
def clamp_backward(ctx, g):
    x = ctx.self
    mask = aten.ones_like.default(x, dtype=D.bool)
    if ctx.min is not None:
        mask = aten.logical_and.default(mask, aten.ge.Scalar(x, ctx.min))
    if ctx.max is not None:
        mask = aten.logical_and.default(mask, aten.le.Scalar(x, ctx.max))
    return _masked(g, mask)


@derivative("clamp.Tensor", "clamp_.Tensor", inputs=("self", "min", "max"), save=("self", "min", "max"))
def clamp_tensor_backward(ctx, g):
    x, lo, hi = ctx.self, ctx.min, ctx.max
    n = ctx.needs_input_grad
    inside = aten.ones_like.default(x, dtype=D.bool)
    if lo is not None:
        inside = aten.logical_and.default(inside, aten.ge.Tensor(x, lo))
    if hi is not None:
        inside = aten.logical_and.default(inside, aten.le.Tensor(x, hi))
    gx = as_input(_masked(g, inside), x) if n[0] else None
    glo = ghi = None
    if n[1] and lo is not None:
        below = aten.lt.Tensor(x, lo)
        if hi is not None:   # min > max: the result is max, min gets nothing (torch's rule)
            below = aten.logical_and.default(below, aten.lt.Tensor(lo, hi))
        glo = as_input(_masked(g, below), lo)
    if n[2] and hi is not None:
        above = aten.gt.Tensor(x, hi)
        if lo is not None:
            above = aten.logical_or.default(above, aten.lt.Tensor(hi, lo))
        ghi = as_input(_masked(g, above), hi)
    return gx, glo, ghi


@derivative("clamp_min", "clamp_min_", inputs=("self",), save=("self", "min"))
def clamp_min_backward(ctx, g):
    return _masked(g, aten.ge.Scalar(ctx.self, ctx.min))


@derivative("clamp_max", "clamp_max_", inputs=("self",), save=("self", "max"))
def clamp_max_backward(ctx, g):
    return _masked(g, aten.le.Scalar(ctx.self, ctx.max))


@derivative("clamp_min.Tensor", inputs=("self", "min"), save=("self", "min"))
def clamp_min_tensor_backward(ctx, g):
    x, lo = ctx.self, ctx.min
    n = ctx.needs_input_grad
    return (as_input(_masked(g, aten.ge.Tensor(x, lo)), x) if n[0] else None,
            as_input(_masked(g, aten.lt.Tensor(x, lo)), lo) if n[1] else None)


@derivative("clamp_max.Tensor", inputs=("self", "max"), save=("self", "max"))
def clamp_max_tensor_backward(ctx, g):
    x, hi = ctx.self, ctx.max
    n = ctx.needs_input_grad
    return (as_input(_masked(g, aten.le.Tensor(x, hi)), x) if n[0] else None,
            as_input(_masked(g, aten.gt.Tensor(x, hi)), hi) if n[1] else None)


def _max_min_backward(ctx, g, pick):
    x, y = ctx.self, ctx.other
    n = ctx.needs_input_grad
    # the larger input takes the gradient; ties split it in half (torch's rule)
    half = _mul(g, 0.5)
    ties = aten.eq.Tensor(x, y)
    gx = aten.where.self(ties, half, _masked(g, pick(x, y))) if n[0] else None
    gy = aten.where.self(ties, half, _masked(g, pick(y, x))) if n[1] else None
    return (as_input(gx, x) if gx is not None else None, as_input(gy, y) if gy is not None else None)


# torch.max(x, y) is maximum in torch: its node is MaximumBackward0 and takes no MaxBackward/MinBackward number
@derivative("max.other", inputs=("self", "other"), save=("self", "other"), name="MaximumBackward0")
@derivative("maximum", inputs=("self", "other"), save=("self", "other"))
def maximum_backward(ctx, g):
    return _max_min_backward(ctx, g, aten.gt.Tensor)


# torch.min(x, y) is minimum in torch: its node is MinimumBackward0 and takes no MaxBackward/MinBackward number
@derivative("min.other", inputs=("self", "other"), save=("self", "other"), name="MinimumBackward0")
@derivative("minimum", inputs=("self", "other"), save=("self", "other"))
def minimum_backward(ctx, g):
    return _max_min_backward(ctx, g, aten.lt.Tensor)


@derivative("lerp.Scalar", "lerp_.Scalar", inputs=("self", "end"), save=("self_meta", "end_meta", "weight"))
def lerp_scalar_backward(ctx, g):
    w = ctx.weight
    n = ctx.needs_input_grad
    return (as_input(_mul(g, 1 - w), ctx.self_meta) if n[0] else None,
            as_input(_mul(g, w), ctx.end_meta) if n[1] else None)


@derivative("lerp.Tensor", "lerp_.Tensor", inputs=("self", "end", "weight"), save=("self", "end", "weight"))
def lerp_tensor_backward(ctx, g):
    x, e, w = ctx.self, ctx.end, ctx.weight
    n = ctx.needs_input_grad
    return (as_input(_mul(g, aten.rsub.Scalar(w, 1)), x) if n[0] else None,
            as_input(_mul(g, w), e) if n[1] else None,
            as_input(_mul(g, _sub(e, x)), w) if n[2] else None)


@derivative("where.self", "where.ScalarOther", "where.ScalarSelf", inputs=("self", "other"),
            save=("condition", "self_meta", "other_meta"))
def where_backward(ctx, g):
    c = ctx.condition
    n = ctx.needs_input_grad
    z = _zeros(g)
    return (as_input(aten.where.self(c, g, z), ctx.self_meta) if n[0] else None,
            as_input(aten.where.self(c, z, g), ctx.other_meta) if n[1] else None)


@derivative("nan_to_num", "nan_to_num_", save=("self",))
def nan_to_num_backward(ctx, g):
    return _masked(g, aten.isfinite.default(ctx.self))


@derivative("masked_fill.Scalar", "masked_fill_.Scalar", inputs=("self",), save=("mask",))
def masked_fill_scalar_backward(ctx, g):
    return aten.masked_fill.Scalar(g, ctx.mask, 0)


@derivative("masked_fill.Tensor", "masked_fill_.Tensor", inputs=("self", "value"), save=("mask", "value"))
def masked_fill_tensor_backward(ctx, g):
    n = ctx.needs_input_grad
    mask = ctx.mask
    gv = aten.sum.default(aten.where.self(mask, g, _zeros(g))) if n[1] else None
    return (aten.masked_fill.Scalar(g, mask, 0) if n[0] else None, gv)


# --- comparisons written in place ----------------------------------------------------------------------------

@derivative("eq_.Tensor", "eq_.Scalar", "ne_.Tensor", "ne_.Scalar", "lt_.Tensor", "lt_.Scalar", "le_.Tensor",
            "le_.Scalar", "gt_.Tensor", "gt_.Scalar", "ge_.Tensor", "ge_.Scalar", inputs=("self", "other"),
            save=("other_meta",))
def compare_inplace_backward(ctx, g):
    # a comparison written into a float tensor: a step function, zero gradient everywhere
    n = ctx.needs_input_grad
    meta = ctx.other_meta
    go = aten.zeros.default(list(meta.shape), dtype=meta.dtype, device=meta.device) if n[1] and meta else None
    return (_zeros(g) if n[0] else None, go)


# --- fused pointwise products ---------------------------------------------------------------------------------

@derivative("addcmul", "addcmul_", inputs=("self", "tensor1", "tensor2"), save=("self", "tensor1", "tensor2", "value"))
@holomorphic
def addcmul_backward(ctx, g):
    n = ctx.needs_input_grad
    t1, t2, v = ctx.tensor1, ctx.tensor2, ctx.value
    gv = g if v == 1 else _mul(g, v)
    return (as_input(g, ctx.self) if n[0] else None,
            as_input(_mul(gv, t2), t1) if n[1] else None,
            as_input(_mul(gv, t1), t2) if n[2] else None)


@derivative("addcdiv", "addcdiv_", inputs=("self", "tensor1", "tensor2"), save=("self", "tensor1", "tensor2", "value"))
def addcdiv_backward(ctx, g):
    n = ctx.needs_input_grad
    t1, t2, v = ctx.tensor1, ctx.tensor2, ctx.value
    gv = g if v == 1 else _mul(g, v)
    return (as_input(g, ctx.self) if n[0] else None,
            as_input(_div(gv, t2), t1) if n[1] else None,
            as_input(_neg(_div(_mul(gv, t1), _mul(t2, t2))), t2) if n[2] else None)
