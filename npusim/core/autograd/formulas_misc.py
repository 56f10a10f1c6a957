"""Backward formulas of the misc ops with kernels of their own (torch's derivatives.yaml)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative


@derivative("frexp.Tensor", save_result=True, nondiff_outputs=(1,))
def frexp_backward(ctx, g, g_exponent=None):
    # self = mantissa * 2**exponent with the exponent piecewise constant: d mantissa / d self = 2**-exponent
    # (the exponent goes to g's dtype first, so float64 exponents beyond float32's range stay finite)
    return aten.div.Tensor(g, aten.exp2.default(ctx.result[1].to(g.dtype)))
