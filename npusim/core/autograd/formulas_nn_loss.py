"""Backward formulas of the loss functions.

Written with dispatched ops, so each formula can itself be differentiated (``create_graph=True``).
Losses that decompose into other ops (cross_entropy_loss, nll_loss_nd, kl_div...) need no formula here.
"""
from __future__ import annotations

import math

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import as_input

_mul, _div, _sub, _neg = aten.mul.Tensor, aten.div.Tensor, aten.sub.Tensor, aten.neg.default
_where = aten.where.self
_NONE, _MEAN = 0, 1


def _sigmoid(x):
    return aten.sigmoid.default(x)


def _spread(g, shape, reduction):
    """The gradient of each per-element loss from that of the reduced loss."""
    if reduction == _NONE:
        return g
    g = aten.expand.default(g, list(shape))
    if reduction == _MEAN:
        n = math.prod(shape)
        if n:
            g = _div(g, n)
    return g


def _broadcast_shape(a, b):
    a, b = tuple(a.shape), tuple(b.shape)
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    return [y if x == 1 else x for x, y in zip(a, b)]


def _pair_grads(ctx, g, elementwise):
    """Gradients of a loss of (self, target) whose derivative in self is ``elementwise(diff, g)``."""
    x, t = ctx.self, ctx.target
    g = _spread(g, _broadcast_shape(x, t), ctx.reduction)
    gx = elementwise(_sub(x, t), g)
    n = ctx.needs_input_grad
    return (as_input(gx, x) if n[0] else None, as_input(_neg(gx), t) if n[1] else None)


@derivative("mse_loss", inputs=("self", "target"), save=("self", "target", "reduction"))
def mse_loss_backward(ctx, g):
    # torch's: one mse_loss_backward op; the target's gradient is its exact negation
    x, t = ctx.self, ctx.target
    gx = aten.mse_loss_backward.default(g, x, t, ctx.reduction)
    n = ctx.needs_input_grad
    return (as_input(gx, x) if n[0] else None, as_input(_neg(gx), t) if n[1] else None)


@derivative("mse_loss_backward", inputs=("grad_output", "self", "target"), save=("grad_output", "self", "target",
                                                                                    "reduction"))
def mse_loss_double_backward(ctx, gg):
    """torch's: linear in grad_output (mse_loss_backward of gg, summed for a reduced loss), and
    2 gg grad_output (over numel for the mean) in self, negated in target."""
    go, x, t, reduction = ctx.grad_output, ctx.self, ctx.target, ctx.reduction
    n = ctx.needs_input_grad
    g_go = g_x = g_t = None
    if n[0]:
        if reduction == _NONE:
            g_go = aten.mse_loss_backward.default(gg, x, t, reduction)
        else:
            g_go = aten.sum.default(_mul(aten.mse_loss_backward.default(aten.ones_like.default(go), x, t, reduction),
                                         gg))
        g_go = as_input(g_go, go)
    if n[1] or n[2]:
        d = _mul(_mul(gg, go), 2)
        if reduction == _MEAN:
            numel = math.prod(_broadcast_shape(x, t))
            if numel:
                d = _div(d, numel)
        g_x = as_input(d, x) if n[1] else None
        g_t = as_input(_neg(d), t) if n[2] else None
    return g_go, g_x, g_t


@derivative("l1_loss", inputs=("self", "target"), save=("self", "target", "reduction"))
def l1_loss_backward(ctx, g):
    return _pair_grads(ctx, g, lambda d, go: _mul(aten.sgn.default(d), go))


@derivative("smooth_l1_loss", inputs=("self", "target"), save=("self", "target", "reduction", "beta"))
def smooth_l1_loss_backward(ctx, g):
    beta = ctx.beta

    def slope(d, go):
        sign = aten.sgn.default(d)
        if beta == 0:
            return _mul(sign, go)
        return _mul(_where(aten.lt.Scalar(aten.abs.default(d), beta), _div(d, beta), sign), go)

    return _pair_grads(ctx, g, slope)


@derivative("huber_loss", inputs=("self", "target"), save=("self", "target", "reduction", "delta"))
def huber_loss_backward(ctx, g):
    delta = ctx.delta
    return _pair_grads(ctx, g, lambda d, go: _mul(aten.clamp.default(d, -delta, delta), go))


@derivative("binary_cross_entropy", inputs=("self", "target"), save=("self", "target", "weight", "reduction"))
def binary_cross_entropy_backward(ctx, g):
    x, t, w = ctx.self, ctx.target, ctx.weight
    g = _spread(g, x.shape, ctx.reduction)
    if w is not None:
        g = _mul(g, w)
    n = ctx.needs_input_grad
    gx = gt = None
    if n[0]:
        denom = aten.clamp_min.default(_mul(aten.rsub.Scalar(x, 1), x), 1e-12)
        gx = as_input(_div(_mul(g, _sub(x, t)), denom), x)
    if n[1]:
        gt = as_input(_mul(g, _neg(aten.logit.default(x))), t)
    return gx, gt


@derivative("binary_cross_entropy_with_logits", inputs=("self", "target"),
            save=("self", "target", "weight", "pos_weight", "reduction"))
def binary_cross_entropy_with_logits_backward(ctx, g):
    x, t, w, pw = ctx.self, ctx.target, ctx.weight, ctx.pos_weight
    g = _spread(g, _broadcast_shape(x, t), ctx.reduction)
    if w is not None:
        g = _mul(g, w)
    n = ctx.needs_input_grad
    gx = gt = None
    if n[0]:
        if pw is None:
            d = _sub(_sigmoid(x), t)
        else:
            pt = _mul(pw, t)
            d = _sub(_mul(_sub(aten.add.Scalar(pt, 1), t), _sigmoid(x)), pt)
        gx = as_input(_mul(g, d), x)
    if n[1]:
        if pw is None:
            d = _neg(x)
        else:
            d = _sub(aten.log_sigmoid.default(_neg(x)), _mul(aten.log_sigmoid.default(x), pw))
        gt = as_input(_mul(g, d), t)
    return gx, gt


@derivative("nll_loss_forward", inputs=("self",), save=("self", "target", "weight", "reduction", "ignore_index"),
            save_result=True, nondiff_outputs=(1,), name="NllLossBackward")
def nll_loss_backward(ctx, g, _g_total=None):
    return aten.nll_loss_backward.default(g, ctx.self, ctx.target, ctx.weight, ctx.reduction, ctx.ignore_index,
                                          ctx.result[1])


@derivative("nll_loss_backward", inputs=("grad_output",), save=("target", "weight", "reduction", "ignore_index"))
def nll_loss_double_backward(ctx, gg):
    # nll_loss_backward is linear in grad_output, with nll_loss_forward as its transpose
    return aten.nll_loss_forward.default(gg, ctx.target, ctx.weight, ctx.reduction, ctx.ignore_index)[0]
