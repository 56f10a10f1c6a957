"""Backward formulas of the complex ops (torch's derivatives.yaml): the views of the parts, conjugation, and
building complex tensors. Gradients follow torch's convention: for a real loss L of a complex z, the gradient
is dL/d(re z) + i dL/d(im z), the conjugate Wirtinger derivative times two."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative


@derivative("view_as_real", "view_as_real_copy")
def view_as_real_backward(ctx, g):
    return aten.view_as_complex.default(aten.contiguous.default(g))


@derivative("view_as_complex", "view_as_complex_copy")
def view_as_complex_backward(ctx, g):
    return aten.view_as_real.default(aten.contiguous.default(g))


@derivative("conj_physical", "_conj_physical", "conj_physical_")
def conj_physical_backward(ctx, g):
    return aten.conj_physical.default(g)


@derivative("complex", inputs=("real", "imag"))
def complex_backward(ctx, g):
    n = ctx.needs_input_grad
    return (aten.real.default(g) if n[0] else None, aten.imag.default(g) if n[1] else None)


@derivative("polar", inputs=("abs", "angle"), save_result=True)
def polar_backward(ctx, g):
    # torch's polar_backward: d/d|z| is the unit phasor, d/dangle is i z
    n = ctx.needs_input_grad
    g_conj = aten.conj_physical.default(g)
    result = ctx.result
    grad_abs = grad_angle = None
    if n[0]:
        grad_abs = aten.real.default(aten.mul.Tensor(g_conj, aten.sgn.default(result)))
    if n[1]:
        grad_angle = aten.real.default(aten.mul.Tensor(g_conj, aten.mul.Scalar(result, 1j)))
    return grad_abs, grad_angle
