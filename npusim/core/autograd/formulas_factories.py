"""Backward formulas of copies and fills: _to_copy, copy_, fill_ and zero_."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import as_input


def _zeros(g):
    return aten.zeros_like.default(g)


@derivative("_to_copy", save=("self_meta",))
def to_copy_backward(ctx, g):
    x = ctx.self_meta
    if g.dtype.is_complex and not x.dtype.is_complex:
        g = aten.real.default(g)     # a real input's gradient is the real part (torch's _to_copy_backward)
    return aten._to_copy.default(g, dtype=x.dtype, device=x.device)


@derivative("copy_", inputs=("self", "src"), save=("src_meta",))
def copy_backward(ctx, g):
    src = ctx.src_meta
    n = ctx.needs_input_grad
    gs = None
    if n[1]:
        gs = g if g._device is src.device else aten._to_copy.default(g, device=src.device)
        gs = as_input(gs, src)
    return (_zeros(g) if n[0] else None, gs)


@derivative("fill_.Scalar", "zero_")
def fill_backward(ctx, g):
    return _zeros(g)


@derivative("fill_.Tensor", inputs=("self", "value"))
def fill_tensor_backward(ctx, g):
    n = ctx.needs_input_grad
    return (_zeros(g) if n[0] else None, aten.sum.default(g) if n[1] else None)
