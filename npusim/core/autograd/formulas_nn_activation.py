"""Backward formulas of nn.functional's activations, layers and losses.

Written with dispatched ops, so each formula can itself be differentiated
(``create_graph=True``). At kinks the derivative takes torch's side (elu's
negative branch at 0, hardtanh's zero at the bounds...). Ops that decompose
into other ops (linear, selu, glu, cross_entropy_loss...) need no formula here.
"""
from __future__ import annotations

import math

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import as_input

_mul, _div, _add, _sub, _neg = (aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor,
                                aten.neg.default)
_where = aten.where.self
_and = aten.logical_and.default
_NONE, _MEAN = 0, 1


def _zero_where(mask, g):
    """``g`` with the entries under ``mask`` zeroed."""
    return aten.masked_fill.Scalar(g, mask, 0.0)


def _sigmoid(x):
    return aten.sigmoid.default(x)


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
    s = _sigmoid(x)
    return _mul(g, _mul(s, aten.add.Scalar(_mul(x, aten.rsub.Scalar(s, 1)), 1)))


@derivative("elu", "elu_", save=("self", "alpha", "scale", "input_scale"))
def elu_backward(ctx, g):
    x = ctx.self
    alpha, scale, input_scale = float(ctx.alpha), float(ctx.scale), float(ctx.input_scale)
    negative = _mul(aten.exp.default(_mul(x, input_scale)), alpha * scale * input_scale)
    return _mul(g, aten.where.ScalarOther(aten.le.Scalar(x, 0), negative, scale))


@derivative("leaky_relu", "leaky_relu_", save=("self", "negative_slope"))
def leaky_relu_backward(ctx, g):
    return _where(aten.gt.Scalar(ctx.self, 0), g, _mul(g, float(ctx.negative_slope)))


@derivative("softplus", save=("self", "beta", "threshold"))
def softplus_backward(ctx, g):
    z = _mul(ctx.self, float(ctx.beta))
    return _where(aten.gt.Scalar(z, ctx.threshold), g, _mul(g, _sigmoid(z)))


@derivative("hardtanh", "hardtanh_", save=("self", "min_val", "max_val"))
def hardtanh_backward(ctx, g):
    x = ctx.self
    inside = _and(aten.gt.Scalar(x, ctx.min_val), aten.lt.Scalar(x, ctx.max_val))
    return _zero_where(aten.logical_not.default(inside), g)


@derivative("hardsigmoid", "hardsigmoid_", save=("self",))
def hardsigmoid_backward(ctx, g):
    x = ctx.self
    inside = _and(aten.gt.Scalar(x, -3), aten.lt.Scalar(x, 3))
    return _zero_where(aten.logical_not.default(inside), _div(g, 6))


@derivative("hardswish", "hardswish_", save=("self",))
def hardswish_backward(ctx, g):
    x = ctx.self
    middle = _mul(g, aten.add.Scalar(_div(x, 3), 0.5))
    # torch: the slope inside (-3, 3), 1 from 3 on, 0 up to -3
    return _zero_where(aten.le.Scalar(x, -3), _where(aten.lt.Scalar(x, 3), middle, g))


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
    return _zero_where(aten.le.Scalar(ctx.self, ctx.threshold), g)


# --- embedding and padding ---------------------------------------------------------------------------

@derivative("embedding", inputs=("weight",), save=("weight", "indices", "padding_idx", "scale_grad_by_freq"))
def embedding_backward(ctx, g):
    return aten.embedding_dense_backward.default(g, ctx.indices, ctx.weight.shape[0], ctx.padding_idx,
                                                 ctx.scale_grad_by_freq)


@derivative("embedding_dense_backward", inputs=("grad_output",),
            save=("indices", "num_weights", "padding_idx", "scale_grad_by_freq"))
def embedding_double_backward(ctx, gg):
    idx = ctx.indices
    r = aten.embedding.default(gg, idx)
    if ctx.scale_grad_by_freq:
        ones = aten.ones.default(list(idx.shape) + [1], dtype=gg.dtype, device=gg.device)
        counts = aten.embedding_dense_backward.default(ones, idx, ctx.num_weights, -1, False)
        r = _div(r, aten.embedding.default(counts, idx))
    if ctx.padding_idx >= 0:
        r = _zero_where(aten.unsqueeze.default(aten.eq.Scalar(idx, ctx.padding_idx), -1), r)
    return r


@derivative("constant_pad_nd", save=("pad",))
def constant_pad_backward(ctx, g):
    # the gradient of padding is a crop and that of a crop a zero padding: the same op, amounts negated
    return aten.constant_pad_nd.default(g, [-p for p in ctx.pad], 0)


def _mode_pad_formulas(name):
    forward = getattr(aten, name).default
    backward = getattr(aten, name + "_backward").default

    @derivative(name, save=("self", "padding"))
    def pad_backward(ctx, g):
        return backward(g, ctx.self, ctx.padding)

    @derivative(name + "_backward", inputs=("grad_output",), save=("padding",))
    def pad_double_backward(ctx, gg):
        return forward(gg, ctx.padding)


for _name in ("reflection_pad1d", "reflection_pad2d", "reflection_pad3d", "replication_pad1d", "replication_pad2d",
              "replication_pad3d"):
    _mode_pad_formulas(_name)


# --- losses ----------------------------------------------------------------------------------------------

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
    return _pair_grads(ctx, g, lambda d, go: _mul(_mul(d, go), 2))


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


# --- fused pointwise products ---------------------------------------------------------------------------------

@derivative("addcmul", "addcmul_", inputs=("self", "tensor1", "tensor2"), save=("self", "tensor1", "tensor2", "value"))
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
