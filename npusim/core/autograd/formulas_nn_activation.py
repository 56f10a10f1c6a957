"""Backward formulas of nn.functional's activations.

Written with dispatched ops, so each formula can itself be differentiated
(``create_graph=True``). At kinks the derivative takes torch's side (elu's
negative branch at 0, hardtanh's zero at the bounds...). Ops that decompose
into other ops (selu, glu, prelu...) need no formula here.
"""
from __future__ import annotations

import math

from ..dispatch.ops_namespace import aten
from . import grad_mode
from .derivatives import derivative

_mul, _div, _add, _neg = aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.neg.default
_where = aten.where.self
_and = aten.logical_and.default


def _zero_where(mask, g):
    """``g`` with the entries under ``mask`` zeroed."""
    return aten.masked_fill.Scalar(g, mask, 0.0)


def _sigmoid(x):
    return aten.sigmoid.default(x)


def _strictly_inside(x, lo, hi):
    """lo < x < hi (False for NaN)."""
    return _and(aten.gt.Scalar(x, lo), aten.lt.Scalar(x, hi))


def _fused(x) -> bool:
    """Whether the gradient is torch's backward op (one dispatched op): a real floating input outside
    ``create_graph``; under it the formula's composition, which differentiates again."""
    return not grad_mode.tls.enabled and x.is_floating_point()


# --- activations ---------------------------------------------------------------------------------------

_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_BETA = math.sqrt(2.0 / math.pi)
_TANH_KAPPA = 0.044715


@derivative("gelu", "gelu_", save=("self", "approximate"))
def gelu_backward(ctx, g):
    x = ctx.self
    if ctx.approximate == "tanh":
        x_sq = _mul(x, x)
        inner = _mul(_add(x, _mul(_mul(x_sq, x), _TANH_KAPPA)), _TANH_BETA)
        t = aten.tanh.default(inner)
        left = _mul(aten.add.Scalar(t, 1), 0.5)
        right = _mul(_mul(_mul(x, 0.5), aten.rsub.Scalar(_mul(t, t), 1)),
                     _mul(aten.add.Scalar(_mul(x_sq, 3 * _TANH_KAPPA), 1), _TANH_BETA))
        return _mul(g, _add(left, right))
    cdf = _mul(aten.add.Scalar(aten.erf.default(_mul(x, _SQRT1_2)), 1), 0.5)
    pdf = _mul(aten.exp.default(_mul(_mul(x, x), -0.5)), _INV_SQRT_2PI)
    return _mul(g, _add(cdf, _mul(x, pdf)))


@derivative("silu", "silu_", save=("self",))
def silu_backward(ctx, g):
    x = ctx.self
    if _fused(x):
        return aten.silu_backward.default(g, x)
    s = _sigmoid(x)
    return _mul(g, _mul(s, aten.add.Scalar(_mul(x, aten.rsub.Scalar(s, 1)), 1)))


@derivative("elu", "elu_", save=("self", "alpha", "scale", "input_scale"))
def elu_backward(ctx, g):
    x = ctx.self
    if _fused(x):
        return aten.elu_backward.default(g, ctx.alpha, ctx.scale, ctx.input_scale, False, x)
    alpha, scale, input_scale = float(ctx.alpha), float(ctx.scale), float(ctx.input_scale)
    negative = _mul(aten.exp.default(_mul(x, input_scale)), alpha * scale * input_scale)
    return _mul(g, aten.where.ScalarOther(aten.le.Scalar(x, 0), negative, scale))


@derivative("leaky_relu", "leaky_relu_", save=("self", "negative_slope"))
def leaky_relu_backward(ctx, g):
    if _fused(ctx.self):
        return aten.leaky_relu_backward.default(g, ctx.self, ctx.negative_slope, False)
    return _where(aten.gt.Scalar(ctx.self, 0), g, _mul(g, float(ctx.negative_slope)))


@derivative("softplus", save=("self", "beta", "threshold"))
def softplus_backward(ctx, g):
    if _fused(ctx.self):
        return aten.softplus_backward.default(g, ctx.self, ctx.beta, ctx.threshold)
    z = _mul(ctx.self, float(ctx.beta))
    return _where(aten.gt.Scalar(z, ctx.threshold), g, _mul(g, _sigmoid(z)))


@derivative("hardtanh", "hardtanh_", save=("self", "min_val", "max_val"))
def hardtanh_backward(ctx, g):
    x = ctx.self
    if _fused(x):
        return aten.hardtanh_backward.default(g, x, ctx.min_val, ctx.max_val)
    return _zero_where(aten.logical_not.default(_strictly_inside(x, ctx.min_val, ctx.max_val)), g)


@derivative("hardsigmoid", "hardsigmoid_", save=("self",))
def hardsigmoid_backward(ctx, g):
    x = ctx.self
    if _fused(x):
        return aten.hardsigmoid_backward.default(g, x)
    return _zero_where(aten.logical_not.default(_strictly_inside(x, -3, 3)), _div(g, 6))


@derivative("hardswish", "hardswish_", save=("self",))
def hardswish_backward(ctx, g):
    x = ctx.self
    if _fused(x):
        return aten.hardswish_backward.default(g, x)
    middle = _mul(g, aten.add.Scalar(_div(x, 3), 0.5))
    # torch: the slope inside (-3, 3), 1 from 3 on, 0 up to -3
    return _zero_where(aten.le.Scalar(x, -3), _where(aten.lt.Scalar(x, 3), middle, g))


# the backward ops' own gradients, torch's: each is linear in grad_output, and piecewise constant in self but
# for hardswish's middle piece (silu_backward and hardsigmoid_backward have none in torch either; elu_backward's
# and softplus_backward's torch formulas are not written here: called directly with inputs that require grad,
# they refuse at backward, "derivative for aten::elu_backward is not implemented")

@derivative("hardswish_backward", inputs=("grad_output", "self"), save=("grad_output", "self"))
def hardswish_backward_backward(ctx, gg):
    x, n = ctx.self, ctx.needs_input_grad
    gx = None
    if n[1]:
        gx = _zero_where(aten.logical_not.default(_strictly_inside(x, -3, 3)), _div(_mul(gg, ctx.grad_output), 3))
    return (aten.hardswish_backward.default(gg, x) if n[0] else None), gx


@derivative("hardtanh_backward", inputs=("grad_output", "self"), save=("self", "min_val", "max_val"))
def hardtanh_backward_backward(ctx, gg):
    n = ctx.needs_input_grad
    return (aten.hardtanh_backward.default(gg, ctx.self, ctx.min_val, ctx.max_val) if n[0] else None,
            aten.zeros_like.default(gg) if n[1] else None)


@derivative("leaky_relu_backward", inputs=("grad_output", "self"), save=("self", "negative_slope"))
def leaky_relu_backward_backward(ctx, gg):
    n = ctx.needs_input_grad
    return (aten.leaky_relu_backward.default(gg, ctx.self, ctx.negative_slope, False) if n[0] else None,
            aten.zeros_like.default(gg) if n[1] else None)


@derivative("mish", "mish_", save=("self",))
def mish_backward(ctx, g):
    x = ctx.self
    t = aten.tanh.default(aten.softplus.default(x))
    return _mul(g, _add(t, _mul(_mul(x, _sigmoid(x)), aten.rsub.Scalar(_mul(t, t), 1))))


@derivative("log_sigmoid", save=("self",))
def log_sigmoid_backward(ctx, g):
    return _mul(g, _sigmoid(_neg(ctx.self)))


@derivative("logit", save=("self", "eps"))
def logit_backward(ctx, g):
    x = ctx.self
    r = _div(g, _mul(x, aten.rsub.Scalar(x, 1)))
    eps = ctx.eps
    if eps is None or eps < 0:
        outside = aten.logical_or.default(aten.lt.Scalar(x, 0), aten.gt.Scalar(x, 1))
        return aten.masked_fill.Scalar(r, outside, math.nan)
    outside = aten.logical_or.default(aten.lt.Scalar(x, eps), aten.gt.Scalar(x, 1 - eps))
    return _zero_where(outside, r)


@derivative("threshold", "threshold_", save=("self", "threshold"))
def threshold_backward(ctx, g):
    return aten.threshold_backward.default(g, ctx.self, ctx.threshold)


@derivative("threshold_backward", inputs=("grad_output", "self"), save=("self", "threshold"))
def threshold_backward_backward(ctx, gg):
    # torch's: the mask again for grad_output; self only selects, so its gradient is zero
    n = ctx.needs_input_grad
    return (aten.threshold_backward.default(gg, ctx.self, ctx.threshold) if n[0] else None,
            aten.zeros_like.default(gg) if n[1] else None)
