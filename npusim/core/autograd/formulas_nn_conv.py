"""Backward formulas of convolution.

Convolution differentiates through torch's backward op (``convolution_backward``), which runs fused
array kernels on each device; that backward op has a formula of its own (it is linear in the output
gradient), so double backward works too.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative

_add, _reshape, _expand = aten.add.Tensor, aten.reshape.default, aten.expand.default


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
