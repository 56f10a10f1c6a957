"""Backward formulas of convolution, pooling, upsampling and the normalisation layers.

Convolution, pooling and upsampling differentiate through torch's backward ops
(``convolution_backward``, ``max_pool2d_with_indices_backward``...), which run
fused array kernels on each device; those backward ops have formulas of their
own (each is linear in the output gradient), so double backward works too.
The normalisation layers' formulas are written with dispatched elementwise ops
and reductions, so they can be differentiated again as they stand; they also
take the gradients of the mean and rstd outputs, which double backward routes
through them (and which group norm's outputs have of their own, as in torch).
"""
from __future__ import annotations

import math

from ..c10 import dtype as D
from ..dispatch.ops_namespace import aten
from .derivatives import derivative

_mul, _sub, _add, _div = aten.mul.Tensor, aten.sub.Tensor, aten.add.Tensor, aten.div.Tensor
_reshape, _expand = aten.reshape.default, aten.expand.default
_HALF = (D.float16, D.bfloat16)


def _sum(t, dims):
    """Sum over ``dims``; an empty list reduces nothing (aten's sum.dim_IntList would reduce everything)."""
    return aten.sum.dim_IntList(t, dims) if dims else t


def _to(t, dtype):
    return t if t is None or t.dtype is dtype else aten._to_copy.default(t, dtype=dtype)


# --- convolution --------------------------------------------------------------------------------------------------

_CONV_PARAMS = ("stride", "padding", "dilation", "transposed", "output_padding", "groups")


def _conv_params(ctx):
    return [getattr(ctx, n) for n in _CONV_PARAMS]


@derivative("convolution", inputs=("input", "weight", "bias"),
            save=("input", "weight", "bias_meta") + _CONV_PARAMS, name="ConvolutionBackward0")
def convolution_backward(ctx, g):
    need = ctx.needs_input_grad
    bias = ctx.bias_meta
    return aten.convolution_backward.default(g, ctx.input, ctx.weight, None if bias is None else list(bias.shape),
                                             *_conv_params(ctx), [need[0], need[1], need[2]])


@derivative("convolution_backward", inputs=("grad_output", "input", "weight"),
            save=("grad_output", "input", "weight") + _CONV_PARAMS, name="ConvolutionBackwardBackward0")
def convolution_double_backward(ctx, gg_input=None, gg_weight=None, gg_bias=None):
    """convolution is bilinear in (input, weight): each input gradient is again a convolution or its backward."""
    need = ctx.needs_input_grad
    g, x, w = ctx.grad_output, ctx.input, ctx.weight
    params = _conv_params(ctx)
    g_grad = g_x = g_w = None
    if need[0]:
        if gg_input is not None:
            g_grad = aten.convolution.default(gg_input, w, None, *params)
        if gg_weight is not None:
            term = aten.convolution.default(x, gg_weight, None, *params)
            g_grad = term if g_grad is None else _add(g_grad, term)
        if gg_bias is not None:
            shape = [1, -1] + [1] * (g.dim() - 2)
            term = _expand(_reshape(gg_bias, shape), list(g.shape))
            g_grad = term if g_grad is None else _add(g_grad, term)
    if need[1] and gg_weight is not None:
        g_x = aten.convolution_backward.default(g, x, gg_weight, None, *params, [True, False, False])[0]
    if need[2] and gg_input is not None:
        g_w = aten.convolution_backward.default(g, gg_input, w, None, *params, [False, True, False])[1]
    return g_grad, g_x, g_w


# --- pooling ------------------------------------------------------------------------------------------------------

def _pick_at_indices(gg, idx, dim):
    """The gradient of a scatter to recorded flat indices (max pooling's backward): gather from there."""
    picked = aten.gather.default(aten.flatten.using_ints(gg, -dim, -1), -1, aten.flatten.using_ints(idx, -dim, -1))
    return _reshape(picked, list(idx.shape))


_MAX_SAVE = ("self", "kernel_size", "stride", "padding", "dilation", "ceil_mode")


def _max_pool_backward(backward_op):
    def formula(ctx, g, g_indices=None):
        indices = ctx._saved["result"][1].unpack(ctx)   # the values output may have been changed in place since
        return backward_op(g, ctx.self, ctx.kernel_size, ctx.stride, ctx.padding, ctx.dilation, ctx.ceil_mode,
                           indices)
    return formula


derivative("max_pool2d_with_indices", save=_MAX_SAVE, save_result=True, nondiff_outputs=(1,),
           name="MaxPool2DWithIndicesBackward0")(_max_pool_backward(aten.max_pool2d_with_indices_backward.default))
derivative("max_pool3d_with_indices", save=_MAX_SAVE, save_result=True, nondiff_outputs=(1,),
           name="MaxPool3DWithIndicesBackward0")(_max_pool_backward(aten.max_pool3d_with_indices_backward.default))


@derivative("max_pool2d_with_indices_backward", inputs=("grad_output",), save=("indices",),
            name="MaxPool2DWithIndicesBackwardBackward0")
def max_pool2d_double_backward(ctx, gg):
    """The backward scatters each gradient to its maximum; its own gradient gathers from there."""
    return _pick_at_indices(gg, ctx.indices, 2)


@derivative("max_pool3d_with_indices_backward", inputs=("grad_output",), save=("indices",),
            name="MaxPool3DWithIndicesBackwardBackward0")
def max_pool3d_double_backward(ctx, gg):
    return _pick_at_indices(gg, ctx.indices, 3)


@derivative("adaptive_max_pool2d", save=("self",), save_result=True, nondiff_outputs=(1,),
            name="AdaptiveMaxPool2DBackward0")
def adaptive_max_pool2d_backward(ctx, g, g_indices=None):
    indices = ctx._saved["result"][1].unpack(ctx)
    return aten.adaptive_max_pool2d_backward.default(g, ctx.self, indices)


@derivative("adaptive_max_pool2d_backward", inputs=("grad_output",), save=("indices",),
            name="AdaptiveMaxPool2DBackwardBackward0")
def adaptive_max_pool2d_double_backward(ctx, gg):
    return _pick_at_indices(gg, ctx.indices, 2)


_AVG_PARAMS = ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override")


def _avg_params(ctx):
    return [getattr(ctx, n) for n in _AVG_PARAMS]


@derivative("avg_pool2d", save=("self",) + _AVG_PARAMS, name="AvgPool2DBackward0")
def avg_pool2d_backward(ctx, g):
    return aten.avg_pool2d_backward.default(g, ctx.self, *_avg_params(ctx))


@derivative("avg_pool2d_backward", inputs=("grad_output",), save=_AVG_PARAMS, name="AvgPool2DBackwardBackward0")
def avg_pool2d_double_backward(ctx, gg):
    return aten.avg_pool2d.default(gg, *_avg_params(ctx))


@derivative("avg_pool3d", save=("self",) + _AVG_PARAMS, name="AvgPool3DBackward0")
def avg_pool3d_backward(ctx, g):
    return aten.avg_pool3d_backward.default(g, ctx.self, *_avg_params(ctx))


@derivative("avg_pool3d_backward", inputs=("grad_output",), save=_AVG_PARAMS, name="AvgPool3DBackwardBackward0")
def avg_pool3d_double_backward(ctx, gg):
    return aten.avg_pool3d.default(gg, *_avg_params(ctx))


@derivative("_adaptive_avg_pool2d", save=("self",), name="AdaptiveAvgPool2DBackward0")
def adaptive_avg_pool2d_backward(ctx, g):
    return aten._adaptive_avg_pool2d_backward.default(g, ctx.self)


@derivative("_adaptive_avg_pool2d_backward", inputs=("grad_output",), save=("grad_output_meta",),
            name="AdaptiveAvgPool2DBackwardBackward0")
def adaptive_avg_pool2d_double_backward(ctx, gg):
    return aten._adaptive_avg_pool2d.default(gg, list(ctx.grad_output_meta.shape[-2:]))


@derivative("_adaptive_avg_pool3d", save=("self",), name="AdaptiveAvgPool3DBackward0")
def adaptive_avg_pool3d_backward(ctx, g):
    return aten._adaptive_avg_pool3d_backward.default(g, ctx.self)


@derivative("_adaptive_avg_pool3d_backward", inputs=("grad_output",), save=("grad_output_meta",),
            name="AdaptiveAvgPool3DBackwardBackward0")
def adaptive_avg_pool3d_double_backward(ctx, gg):
    return aten._adaptive_avg_pool3d.default(gg, list(ctx.grad_output_meta.shape[-3:]))


# --- upsampling ---------------------------------------------------------------------------------------------------

@derivative("upsample_nearest2d", save=("self_meta", "output_size", "scales_h", "scales_w"),
            name="UpsampleNearest2DBackward0")
def upsample_nearest2d_backward(ctx, g):
    return aten.upsample_nearest2d_backward.default(g, ctx.output_size, list(ctx.self_meta.shape), ctx.scales_h,
                                                    ctx.scales_w)


@derivative("upsample_nearest2d_backward", inputs=("grad_output",), save=("output_size", "scales_h", "scales_w"),
            name="UpsampleNearest2DBackwardBackward0")
def upsample_nearest2d_double_backward(ctx, gg):
    return aten.upsample_nearest2d.default(gg, ctx.output_size, ctx.scales_h, ctx.scales_w)


@derivative("upsample_bilinear2d", save=("self_meta", "output_size", "align_corners", "scales_h", "scales_w"),
            name="UpsampleBilinear2DBackward0")
def upsample_bilinear2d_backward(ctx, g):
    return aten.upsample_bilinear2d_backward.default(g, ctx.output_size, list(ctx.self_meta.shape),
                                                     ctx.align_corners, ctx.scales_h, ctx.scales_w)


@derivative("upsample_bilinear2d_backward", inputs=("grad_output",),
            save=("output_size", "align_corners", "scales_h", "scales_w"), name="UpsampleBilinear2DBackwardBackward0")
def upsample_bilinear2d_double_backward(ctx, gg):
    return aten.upsample_bilinear2d.default(gg, ctx.output_size, ctx.align_corners, ctx.scales_h, ctx.scales_w)


# --- normalisation ------------------------------------------------------------------------------------------------

def _saved_stats(ctx):
    """The mean and rstd outputs (the normalised output itself is not unpacked: it may be changed in place,
    as relu_ after batch_norm does)."""
    saved = ctx._saved["result"]
    return saved[1].unpack(ctx), saved[2].unpack(ctx)


def _compute_dtype(x):
    return D.float32 if x.dtype in _HALF else x.dtype


def _normalized_input_grad(xc, rstd, g_hat, g_mean, g_rstd, dims, n):
    """Gradient of x through xhat = (x - mean) * rstd, mean and rstd taken over ``dims`` (n elements each).

    ``xc`` is x - mean; ``g_hat`` the gradient of xhat; ``g_mean`` / ``g_rstd`` those of the statistics
    (broadcastable to x), any of them possibly None.
    """
    gi = None
    if g_hat is not None:
        xhat = _mul(xc, rstd)
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
    dt = _compute_dtype(x)
    xo, go, mean, rstd = _to(x, dt), _to(g, dt), _to(mean, dt), _to(rstd, dt)
    k = len(ctx.normalized_shape)
    dims = list(range(x.dim() - k, x.dim()))
    batch_dims = list(range(x.dim() - k))
    n = math.prod(x.shape[x.dim() - k:])
    xc = _sub(xo, mean)
    gi = None
    if need[0]:
        g_hat = go if go is None or w is None else _mul(go, w)
        gi = _to(_normalized_input_grad(xc, rstd, g_hat, _to(g_mean, dt), _to(g_rstd, dt), dims, n), x.dtype)
    gw, gb = _affine_grads(need, go, lambda: _mul(xc, rstd), w, batch_dims)
    return gi, _param_dtype(gw, w), _param_dtype(gb, ctx.bias_meta)


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
