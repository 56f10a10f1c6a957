"""Backward formulas of the triangular solve, the LU factorization, lu_unpack and the matrix exponential
(torch's derivatives.yaml and FunctionsManual, real inputs).

Written with dispatched ops, so they differentiate again. The LU formula assumes, as torch's,
that U's leading square block is invertible (elsewhere the gradients are inf or NaN).
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import sum_to

_mm = aten.matmul.default
_add, _sub = aten.add.Tensor, aten.sub.Tensor


def _mT(t):
    return aten.transpose.int(t, -2, -1)


def _tri(a, b, upper, left=True, unit=False):
    return aten.linalg_solve_triangular.default(a, b, upper=upper, left=left, unitriangular=unit)


def _defined(g):
    return g is not None


@derivative("linalg_solve_triangular", inputs=("self", "B"), save=("self", "B_meta", "upper", "left", "unitriangular"),
            save_result=True, name="LinalgSolveTriangularBackward0")
def solve_triangular_backward(ctx, g):
    a, x, upper, left, unit = ctx.self, ctx.result, ctx.upper, ctx.left, ctx.unitriangular
    # A^T gB = g (gB A^T = g on the right), A^T having the other triangle
    g_b = _tri(_mT(a), g, not upper, left, unit)
    g_a = None
    if ctx.needs_input_grad[0]:
        g_a = aten.neg.default(_mm(g_b, _mT(x)) if left else _mm(_mT(x), g_b))
        g_a = aten.triu.default(g_a, int(unit)) if upper else aten.tril.default(g_a, -int(unit))
        g_a = sum_to(g_a, a.shape)
    if not ctx.needs_input_grad[1]:
        return g_a, None
    return g_a, sum_to(g_b, ctx.B_meta.shape)


def lu_backward(g_l, g_u, p, low, up):
    """gA of P, L, U = lu(A) from gL and gU (torch's linalg_lu_backward, real case)."""
    m, n = low.shape[-2], up.shape[-1]
    k = min(m, n)
    if m == n:
        # gA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T
        ga = aten.tril.default(_mm(_mT(low), g_l), -1) if _defined(g_l) else None
        if _defined(g_u):
            t = aten.triu.default(_mm(g_u, _mT(up)))
            ga = t if ga is None else _add(ga, t)
        ga = _tri(_mT(up), ga, False, False)
        ga = _tri(_mT(low), ga, True, True, True)
        return _mm(p, ga)
    if m < n:
        u1, g_u1 = aten.narrow.default(up, -1, 0, k), None
        ga = _mm(_mT(low), g_l) if _defined(g_l) else None
        if _defined(g_u):
            g_u1 = aten.narrow.default(g_u, -1, 0, k)
            t = _mm(aten.triu.default(g_u), _mT(up))
            ga = aten.neg.default(t) if ga is None else _sub(ga, t)
        ga = _tri(_mT(u1), aten.tril.default(ga, -1), False, False)
        if _defined(g_u):
            ga = aten.cat.default([_add(ga, aten.triu.default(g_u1)), aten.narrow.default(g_u, -1, k, n - k)], -1)
        ga = _tri(_mT(low), ga, True, True, True)
        if not _defined(g_u):
            ga = aten.cat.default([ga, aten.zeros_like.default(aten.narrow.default(up, -1, k, n - k))], -1)
        return _mm(p, ga)
    l1 = aten.narrow.default(low, -2, 0, k)
    ga = _mm(g_u, _mT(up)) if _defined(g_u) else None
    if _defined(g_l):
        t = _mm(_mT(low), aten.tril.default(g_l, -1))
        ga = aten.neg.default(t) if ga is None else _sub(ga, t)
    ga = _tri(_mT(l1), aten.triu.default(ga), True, True, True)
    if _defined(g_l):
        ga = aten.cat.default([_add(ga, aten.tril.default(aten.narrow.default(g_l, -2, 0, k), -1)),
                               aten.narrow.default(g_l, -2, k, m - k)], -2)
    ga = _tri(_mT(up), ga, False, False)
    if not _defined(g_l):
        ga = aten.cat.default([ga, aten.zeros_like.default(aten.narrow.default(low, -2, k, m - k))], -2)
    return _mm(p, ga)


@derivative("linalg_lu_factor_ex", inputs=("A",), save=("pivot",), save_result=True, nondiff_outputs=(1, 2),
            name="LinalgLuFactorExBackward0")
def lu_factor_ex_backward(ctx, g, g_piv=None, g_info=None):
    lu, piv = ctx.result[0], ctx.result[1]
    p, low, up = aten.lu_unpack.default(lu, piv, True, True)
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    # the packed gradient: L's strictly lower part and U's upper part
    g_l = aten.tril.default(aten.narrow.default(g, -1, 0, k), -1)
    g_u = aten.triu.default(aten.narrow.default(g, -2, 0, k))
    return lu_backward(g_l, g_u, p, low, up)


@derivative("lu_unpack", inputs=("LU_data",), save=("LU_data_meta",), nondiff_outputs=(0,),
            name="LuUnpackBackward0")
def lu_unpack_backward(ctx, g_p=None, g_l=None, g_u=None):
    m, n = ctx.LU_data_meta.shape[-2], ctx.LU_data_meta.shape[-1]
    k = min(m, n)
    parts = []
    if _defined(g_l):
        gl = aten.tril.default(g_l, -1)   # (m, k): L's unit diagonal is constant
        if n > k:
            gl = aten.cat.default([gl, aten.zeros.default(list(gl.shape[:-1]) + [n - k], dtype=gl.dtype,
                                                          device=gl.device)], -1)
        parts.append(gl)
    if _defined(g_u):
        gu = aten.triu.default(g_u)       # (k, n)
        if m > k:
            gu = aten.cat.default([gu, aten.zeros.default(list(gu.shape[:-2]) + [m - k, n], dtype=gu.dtype,
                                                          device=gu.device)], -2)
        parts.append(gu)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else _add(parts[0], parts[1])


@derivative("linalg_matrix_exp", inputs=("self",), save=("self",), name="LinalgMatrixExpBackward0")
def matrix_exp_backward(ctx, g):
    # the upper right block of exp([[A^T, G], [0, A^T]]) is the derivative of exp at A applied to G
    a_t = _mT(ctx.self)
    n = a_t.shape[-1]
    meta = aten.cat.default([aten.cat.default([a_t, g], -1),
                             aten.cat.default([aten.zeros_like.default(a_t), a_t], -1)], -2)
    e = aten.linalg_matrix_exp.default(meta)
    return aten.narrow.default(aten.narrow.default(e, -2, 0, n), -1, n, n)
