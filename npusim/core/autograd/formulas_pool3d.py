"""Backward formulas of ``adaptive_max_pool3d`` and of its backward (for double backward)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_nn_conv import _pick_at_indices


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
