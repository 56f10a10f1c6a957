"""Backward formulas of fractional max pooling: the backward op scatters to the recorded maxima, and its own
gradient gathers from there (so double backward works)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_nn_pooling import _pick_at_indices


def _forward_formula(backward_op):
    def formula(ctx, g, g_indices=None):
        indices = ctx._saved["result"][1].unpack(ctx)   # the values output may have been changed in place since
        return backward_op(g, ctx.self, ctx.kernel_size, ctx.output_size, indices)
    return formula


_SAVE = ("self", "kernel_size", "output_size")

derivative("fractional_max_pool2d", save=_SAVE, save_result=True, nondiff_outputs=(1,),
           name="FractionalMaxPool2DBackward0")(_forward_formula(aten.fractional_max_pool2d_backward.default))
derivative("fractional_max_pool3d", save=_SAVE, save_result=True, nondiff_outputs=(1,),
           name="FractionalMaxPool3DBackward0")(_forward_formula(aten.fractional_max_pool3d_backward.default))


@derivative("fractional_max_pool2d_backward", inputs=("grad_output",), save=("indices",),
            name="FractionalMaxPool2DBackwardBackward0")
def fractional_max_pool2d_double_backward(ctx, gg):
    return _pick_at_indices(gg, ctx.indices, 2)


@derivative("fractional_max_pool3d_backward", inputs=("grad_output",), save=("indices",),
            name="FractionalMaxPool3DBackwardBackward0")
def fractional_max_pool3d_double_backward(ctx, gg):
    return _pick_at_indices(gg, ctx.indices, 3)
