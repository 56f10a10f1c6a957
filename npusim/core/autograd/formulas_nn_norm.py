"""Backward formulas of the normalisation layers.

The formulas are written with dispatched elementwise ops and reductions, so they can be differentiated
again as they stand; they also take the gradients of the mean and rstd outputs, which double backward
routes through them (and which group norm's outputs have of their own, as in torch).
"""
from __future__ import annotations

import math

from ..c10 import dtype as D
from ..dispatch.ops_namespace import aten
from . import grad_mode
from .derivatives import derivative

_mul, _sub, _add, _div = aten.mul.Tensor, aten.sub.Tensor, aten.add.Tensor, aten.div.Tensor
_reshape, _expand = aten.reshape.default, aten.expand.default
_HALF = (D.float16, D.bfloat16)


def _sum(t, dims):
    """Sum over ``dims``; an empty list reduces nothing (aten's sum.dim_IntList would reduce everything)."""
    return aten.sum.dim_IntList(t, dims) if dims else t


def _to(t, dtype):
    return t if t is None or t.dtype is dtype else aten._to_copy.default(t, dtype=dtype)


# --- normalisation ------------------------------------------------------------------------------------------------

def _saved_stats(ctx):
    """The mean and rstd outputs (the normalised output itself is not unpacked: it may be changed in place,
    as relu_ after batch_norm does)."""
    saved = ctx._saved["result"]
    return saved[1].unpack(ctx), saved[2].unpack(ctx)


def _compute_dtype(x):
    return D.float32 if x.dtype in _HALF else x.dtype


def _normalized_input_grad(xc, rstd, g_hat, g_mean, g_rstd, dims, n, xhat_fn=None):
    """Gradient of x through xhat = (x - mean) * rstd, mean and rstd taken over ``dims`` (n elements each).

    ``xc`` is x - mean; ``g_hat`` the gradient of xhat; ``g_mean`` / ``g_rstd`` those of the statistics
    (broadcastable to x), any of them possibly None. ``xhat_fn``, when given, returns xc * rstd (computed once
    for this and the weight's gradient).
    """
    gi = None
    if g_hat is not None:
        xhat = xhat_fn() if xhat_fn is not None else _mul(xc, rstd)
        centred = _sub(g_hat, aten.mean.dim(g_hat, dims, True))
        gi = _mul(_sub(centred, _mul(xhat, aten.mean.dim(_mul(g_hat, xhat), dims, True))), rstd)
    if g_mean is not None:
        term = _expand(_div(g_mean, n), list(xc.shape))
        gi = term if gi is None else _add(gi, term)
    if g_rstd is not None:
        # d rstd / dx = -rstd^3 (x - mean) / n
        term = _mul(xc, _div(_mul(aten.pow.Tensor_Scalar(rstd, 3), g_rstd), -n))
        gi = term if gi is None else _add(gi, term)
    return gi


def _param_dtype(grad, param):
    """A parameter's gradient in the parameter's dtype (16-bit inputs are differentiated in float32)."""
    return None if grad is None else _to(grad, param.dtype)


def _affine_grads(need, g, xhat_fn, weight, dims):
    """Gradients of weight and bias of y = xhat * weight + bias (reduced over ``dims``)."""
    gw = gb = None
    if g is not None:
        if need[1] and weight is not None:
            gw = _reshape(_sum(_mul(g, xhat_fn()), dims), list(weight.shape))
        if need[2]:
            gb = _sum(g, dims)
    return gw, gb


@derivative("native_layer_norm", inputs=("input", "weight", "bias"),
            save=("input", "normalized_shape", "weight", "bias_meta"), save_result=True, nondiff_outputs=(1, 2),
            name="NativeLayerNormBackward0")
def native_layer_norm_backward(ctx, g=None, g_mean=None, g_rstd=None):
    need = ctx.needs_input_grad
    x, w = ctx.input, ctx.weight
    mean, rstd = _saved_stats(ctx)
    if g is not None and g_mean is None and g_rstd is None and not grad_mode.tls.enabled:
        # torch's fused backward op; under create_graph the composition below, which differentiates again
        mask = [need[0], need[1] and w is not None, need[2] and ctx.bias_meta is not None]
        gi, gw, gb = aten.native_layer_norm_backward.default(g, x, list(ctx.normalized_shape), mean, rstd, w, None,
                                                             mask)
        return gi, _param_dtype(gw, w), _param_dtype(gb, ctx.bias_meta)
    dt = _compute_dtype(x)
    xo, go, mean, rstd = _to(x, dt), _to(g, dt), _to(mean, dt), _to(rstd, dt)
    k = len(ctx.normalized_shape)
    dims = list(range(x.dim() - k, x.dim()))
    batch_dims = list(range(x.dim() - k))
    n = math.prod(x.shape[x.dim() - k:])
    xc = _sub(xo, mean)
    xhat = []

    def xhat_fn():   # xc * rstd, computed at most once
        if not xhat:
            xhat.append(_mul(xc, rstd))
        return xhat[0]
    gi = None
    if need[0]:
        g_hat = go if go is None or w is None else _mul(go, w)
        gi = _normalized_input_grad(xc, rstd, g_hat, _to(g_mean, dt), _to(g_rstd, dt), dims, n, xhat_fn)
        gi = _to(gi, x.dtype)
    gw, gb = _affine_grads(need, go, xhat_fn, w, batch_dims)
    return gi, _param_dtype(gw, w), _param_dtype(gb, ctx.bias_meta)


@derivative("native_layer_norm_backward", inputs=("grad_out", "input", "weight"),
            save=("grad_out", "input", "normalized_shape", "mean", "rstd", "weight"),
            name="NativeLayerNormBackwardBackward0")
def native_layer_norm_backward_backward(ctx, ggi=None, ggw=None, ggb=None):
    """torch's layer_norm_double_backward: the gradients of (grad_input, grad_weight, grad_bias) with respect to
    grad_out, input and weight, the statistics read as the input's (mean and rstd take no gradient, as in
    torch). Rows are the leading dims, each of n normalised elements."""
    need = ctx.needs_input_grad
    x, go, w = ctx.input, ctx.grad_out, ctx.weight
    k = len(ctx.normalized_shape)
    n = math.prod(x.shape[x.dim() - k:])
    m = x.numel() // n if n else 0
    dt = x.dtype
    xr, gor = _reshape(x, [m, n]), _reshape(go, [m, n])
    mu, rstd = _reshape(_to(ctx.mean, dt), [m, 1]), _reshape(_to(ctx.rstd, dt), [m, 1])
    xc = _sub(xr, mu)
    rstd2, rstd3 = _mul(rstd, rstd), aten.pow.Tensor_Scalar(rstd, 3)
    xc_rstd3 = _mul(xc, rstd3)
    gamma = None if w is None else _reshape(w, [1, n])
    ggi = None if ggi is None else _reshape(ggi, [m, n])
    ggw = None if ggw is None or w is None else _reshape(ggw, [1, n])
    ggb = None if ggb is None or w is None else _reshape(ggb, [1, n])

    def rows(t):
        return aten.sum.dim_IntList(t, [1], True)

    gi = None
    if ggi is not None:
        gxhat = gor if gamma is None else _mul(gor, gamma)
        gxhat_mu_sum, gxhat_sum = rows(_mul(gxhat, xc)), rows(gxhat)
        ggi_sum, ggi_mu_sum = rows(ggi), rows(_mul(ggi, xc))
        all_sub = _add(_sub(_div(_mul(ggi_sum, gxhat_sum), n), rows(_mul(ggi, gxhat))),
                       _mul(_mul(_mul(rstd2, gxhat_mu_sum), ggi_mu_sum), 3.0 / n))
        t0 = _div(_mul(xc_rstd3, all_sub), n)
        t1 = _mul(_div(_mul(ggi_mu_sum, rstd3), n), _sub(_div(gxhat_sum, n), gxhat))
        t2 = _mul(_div(_mul(gxhat_mu_sum, rstd3), n), _sub(_div(ggi_sum, n), ggi))
        gi = _add(_add(t0, t1), t2)
    if ggw is not None:
        g_ggw = _mul(gor, ggw)
        term = _add(_add(_mul(g_ggw, rstd), _div(rows(_mul(rstd, g_ggw)), -n)),
                    _div(_mul(xc_rstd3, rows(_mul(g_ggw, xc))), -n))
        gi = term if gi is None else _add(gi, term)
    gw = None
    if gamma is not None and ggi is not None and need[2]:
        # grad_input is rstd * P(grad_out * weight), P symmetric: weight's share is grad_out * P(ggi)
        t = _add(_add(_mul(ggi, rstd), _div(rows(_mul(rstd, ggi)), -n)),
                 _div(_mul(xc_rstd3, rows(_mul(ggi, xc))), -n))
        gw = _reshape(aten.sum.dim_IntList(_mul(gor, t), [0], False), list(w.shape))
    ggo = None
    if ggi is not None:
        ggo = _mul(_sub(_sub(ggi, _div(rows(ggi), n)), _mul(_mul(xc, rstd2), _div(rows(_mul(ggi, xc)), n))), rstd)
        if gamma is not None:
            ggo = _mul(ggo, gamma)
    if ggw is not None:
        term = _mul(_mul(ggw, xc), rstd)
        ggo = term if ggo is None else _add(ggo, term)
    if ggb is not None:
        term = _expand(ggb, [m, n])
        ggo = term if ggo is None else _add(ggo, term)
    return (None if ggo is None or not need[0] else _reshape(ggo, list(x.shape)),
            None if gi is None or not need[1] else _reshape(gi, list(x.shape)), gw)


@derivative("native_batch_norm", inputs=("input", "weight", "bias"),
            save=("input", "weight", "bias_meta", "running_mean", "running_var", "training", "eps"), save_result=True,
            nondiff_outputs=(1, 2), name="NativeBatchNormBackward0")
def native_batch_norm_backward(ctx, g=None, g_mean=None, g_rstd=None):
    need = ctx.needs_input_grad
    x, w = ctx.input, ctx.weight
    dt = _compute_dtype(x)
    c = x.shape[1]
    stat_shape = [1, c] + [1] * (x.dim() - 2)
    dims = [0] + list(range(2, x.dim()))
    xo, go = _to(x, dt), _to(g, dt)
    if ctx.training:
        mean, rstd = (_reshape(_to(s, dt), stat_shape) for s in _saved_stats(ctx))
    else:
        # running statistics are only read in evaluation; in training the forward has updated them in place
        mean = _reshape(_to(ctx.running_mean, dt), stat_shape)
        rstd = _reshape(aten.rsqrt.default(aten.add.Scalar(_to(ctx.running_var, dt), ctx.eps)), stat_shape)
    xc = _sub(xo, mean)
    gi = None
    if need[0]:
        g_hat = go if go is None or w is None else _mul(go, _reshape(_to(w, dt), stat_shape))
        if ctx.training:
            n = x.numel() // max(c, 1)
            g_mean = None if g_mean is None else _reshape(_to(g_mean, dt), stat_shape)
            g_rstd = None if g_rstd is None else _reshape(_to(g_rstd, dt), stat_shape)
            gi = _normalized_input_grad(xc, rstd, g_hat, g_mean, g_rstd, dims, n)
        elif g_hat is not None:
            gi = _mul(g_hat, rstd)
        gi = _to(gi, x.dtype)
    gw, gb = _affine_grads(need, go, lambda: _mul(xc, rstd), w, dims)
    return gi, _param_dtype(gw, w), _param_dtype(gb, ctx.bias_meta)


@derivative("native_group_norm", inputs=("input", "weight", "bias"), save=("input", "weight", "bias_meta", "group"),
            save_result=True, name="NativeGroupNormBackward0")
def native_group_norm_backward(ctx, g=None, g_mean=None, g_rstd=None):
    need = ctx.needs_input_grad
    x, w = ctx.input, ctx.weight
    dt = _compute_dtype(x)
    n, c = x.shape[0], x.shape[1]
    groups = ctx.group
    per_group = x.numel() // max(n * groups, 1)
    grouped = [n, groups, per_group]
    mean, rstd = (_reshape(_to(s, dt), [n, groups, 1]) for s in _saved_stats(ctx))
    xo, go = _to(x, dt), _to(g, dt)
    xc = _sub(_reshape(xo, grouped), mean)
    channel_shape = [1, c] + [1] * (x.dim() - 2)
    gi = None
    if need[0]:
        g_hat = go if go is None or w is None else _mul(go, _reshape(_to(w, dt), channel_shape))
        g_hat = None if g_hat is None else _reshape(g_hat, grouped)
        g_mean = None if g_mean is None else _reshape(_to(g_mean, dt), [n, groups, 1])
        g_rstd = None if g_rstd is None else _reshape(_to(g_rstd, dt), [n, groups, 1])
        gi = _normalized_input_grad(xc, rstd, g_hat, g_mean, g_rstd, [2], per_group)
        gi = None if gi is None else _to(_reshape(gi, list(x.shape)), x.dtype)
    dims = [0] + list(range(2, x.dim()))
    gw, gb = _affine_grads(need, go, lambda: _reshape(_mul(xc, rstd), list(x.shape)), w, dims)
    return gi, _param_dtype(gw, w), _param_dtype(gb, ctx.bias_meta)
