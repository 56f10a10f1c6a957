"""Backward formulas of pooling and upsampling.

Pooling and upsampling differentiate through torch's backward ops (``max_pool2d_with_indices_backward``,
``upsample_nearest2d_backward``...), which run fused array kernels on each device; those backward ops
have formulas of their own (each is linear in the output gradient), so double backward works too.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative

_reshape = aten.reshape.default


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


@derivative("adaptive_max_pool3d", save=("self",), save_result=True, nondiff_outputs=(1,),
            name="AdaptiveMaxPool3DBackward0")
def adaptive_max_pool3d_backward(ctx, g, g_indices=None):
    indices = ctx._saved["result"][1].unpack(ctx)  # the values output may have been changed in place since
    return aten.adaptive_max_pool3d_backward.default(g, ctx.self, indices)


@derivative("adaptive_max_pool3d_backward", inputs=("grad_output",), save=("indices",),
            name="AdaptiveMaxPool3DBackwardBackward0")
def adaptive_max_pool3d_double_backward(ctx, gg):
    # the backward scatters to the recorded maxima, so its gradient gathers from there
    return _pick_at_indices(gg, ctx.indices, 3)
