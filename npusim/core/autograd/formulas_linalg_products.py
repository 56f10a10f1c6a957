"""Backward formulas of the matrix products (mm, bmm, matmul, addmm, mv, dot, outer, baddbmm...)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .formulas_complex import conj_if_complex, holomorphic
from .derivatives import derivative
from .formulas_elementwise import as_input, sum_to

_mul = aten.mul.Tensor


# --- matrix products ---------------------------------------------------------------------------------------------

def _mT(t):
    return aten.transpose.int(t, -2, -1)


def _column_major(t) -> bool:
    """A matrix laid out as the transpose of a contiguous one (``weight.t()`` inside ``linear``)."""
    flags = t._a.flags
    return t._a.ndim == 2 and flags.f_contiguous and not flags.c_contiguous


# torch's mm_mat1_backward / mm_mat2_backward: a matrix operand's gradient is computed in that operand's
# layout, so the gradient of a Linear weight (used transposed) reaches it contiguous and is stored as is
def _mm_mat1_grad(g, mat1, mat2):
    if _column_major(mat1):
        return _mT(aten.mm.default(mat2, _mT(g)))
    return aten.mm.default(g, _mT(mat2))


def _mm_mat2_grad(g, mat1, mat2):
    if _column_major(mat2):
        return _mT(aten.mm.default(_mT(g), mat1))
    return aten.mm.default(_mT(mat1), g)


@derivative("mm", inputs=("self", "mat2"), save=("self", "mat2"))
@holomorphic
def mm_backward(ctx, g):
    n = ctx.needs_input_grad
    return (_mm_mat1_grad(g, ctx.self, ctx.mat2) if n[0] else None,
            _mm_mat2_grad(g, ctx.self, ctx.mat2) if n[1] else None)


@derivative("bmm", inputs=("self", "mat2"), save=("self", "mat2"))
@holomorphic
def bmm_backward(ctx, g):
    n = ctx.needs_input_grad
    return (aten.bmm.default(g, _mT(ctx.mat2)) if n[0] else None,
            aten.bmm.default(_mT(ctx.self), g) if n[1] else None)


@derivative("matmul", inputs=("self", "other"), save=("self", "other"))
@holomorphic
def matmul_backward(ctx, g):
    a, b = ctx.self, ctx.other
    n = ctx.needs_input_grad
    if a.dim() == 1 and b.dim() == 1:
        return (_mul(g, b) if n[0] else None, _mul(g, a) if n[1] else None)
    a2 = aten.unsqueeze.default(a, 0) if a.dim() == 1 else a
    b2 = aten.unsqueeze.default(b, -1) if b.dim() == 1 else b
    g2 = g
    if a.dim() == 1:
        g2 = aten.unsqueeze.default(g2, -2)
    if b.dim() == 1:
        g2 = aten.unsqueeze.default(g2, -1)
    ga = gb = None
    if n[0]:
        ga = sum_to(aten.matmul.default(g2, _mT(b2)), a2.shape)
        ga = aten.squeeze.dim(ga, 0) if a.dim() == 1 else ga
    if n[1]:
        if b.dim() == 2 and _column_major(b):   # x @ weight.t(): the gradient in the weight's own layout
            gb = _mT(sum_to(aten.matmul.default(_mT(g2), a2), (b.shape[1], b.shape[0])))
        else:
            gb = sum_to(aten.matmul.default(_mT(a2), g2), b2.shape)
        gb = aten.squeeze.dim(gb, -1) if b.dim() == 1 else gb
    return ga, gb


@derivative("addmm", "addmm_", inputs=("self", "mat1", "mat2"), save=("self_meta", "mat1", "mat2", "beta", "alpha"))
@holomorphic
def addmm_backward(ctx, g):
    n = ctx.needs_input_grad
    alpha, beta = ctx.alpha, ctx.beta
    gs = as_input(_mul(g, beta) if beta != 1 else g, ctx.self_meta) if n[0] else None
    g_alpha = _mul(g, alpha) if alpha != 1 else g
    return (gs, _mm_mat1_grad(g_alpha, ctx.mat1, ctx.mat2) if n[1] else None,
            _mm_mat2_grad(g_alpha, ctx.mat1, ctx.mat2) if n[2] else None)


@derivative("dot", inputs=("self", "tensor"), save=("self", "tensor"))
@holomorphic
def dot_backward(ctx, g):
    n = ctx.needs_input_grad
    return (_mul(g, ctx.tensor) if n[0] else None, _mul(g, ctx.self) if n[1] else None)


@derivative("vdot", inputs=("self", "other"), save=("self", "other"))
def vdot_backward(ctx, g):
    # vdot(a, b) = sum(conj(a) * b): a's gradient takes conj(g) * b, b's g * a (torch's formula)
    n = ctx.needs_input_grad
    return (_mul(conj_if_complex(g), ctx.other) if n[0] else None, _mul(g, ctx.self) if n[1] else None)


@derivative("mv", inputs=("self", "vec"), save=("self", "vec"))
@holomorphic
def mv_backward(ctx, g):
    n = ctx.needs_input_grad
    return (aten.outer.default(g, ctx.vec) if n[0] else None, aten.mv.default(_mT(ctx.self), g) if n[1] else None)


@derivative("outer", inputs=("self", "vec2"), save=("self", "vec2"))
@holomorphic
def outer_backward(ctx, g):
    n = ctx.needs_input_grad
    return (aten.mv.default(g, ctx.vec2) if n[0] else None, aten.mv.default(_mT(g), ctx.self) if n[1] else None)


@derivative("addmv", inputs=("self", "mat", "vec"), save=("self_meta", "mat", "vec", "beta", "alpha"))
@holomorphic
def addmv_backward(ctx, g):
    n = ctx.needs_input_grad
    ga = _mul(g, ctx.alpha)
    return (as_input(_mul(g, ctx.beta), ctx.self_meta) if n[0] else None,
            aten.outer.default(ga, ctx.vec) if n[1] else None,
            aten.mv.default(_mT(ctx.mat), ga) if n[2] else None)


@derivative("baddbmm", inputs=("self", "batch1", "batch2"), save=("self_meta", "batch1", "batch2", "beta", "alpha"))
@holomorphic
def baddbmm_backward(ctx, g):
    n = ctx.needs_input_grad
    ga = _mul(g, ctx.alpha)
    return (as_input(_mul(g, ctx.beta), ctx.self_meta) if n[0] else None,
            aten.bmm.default(ga, _mT(ctx.batch2)) if n[1] else None,
            aten.bmm.default(_mT(ctx.batch1), ga) if n[2] else None)
