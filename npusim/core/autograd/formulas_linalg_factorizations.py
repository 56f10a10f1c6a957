"""Backward formulas of the matrix decompositions and solvers (torch's derivatives.yaml, real inputs).

Written with dispatched ops, so they differentiate again. As in torch they assume
the well-defined case: invertible matrices for det / slogdet / inv / solve, distinct
eigenvalues for eigh and distinct non-zero singular values for svd (elsewhere the
gradients are inf or NaN, where torch also raises or warns in some cases).
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import sum_to

_mm = aten.matmul.default
_mul, _sub, _add, _div = aten.mul.Tensor, aten.sub.Tensor, aten.add.Tensor, aten.div.Tensor
_unsq = aten.unsqueeze.default


def _mT(t):
    return aten.transpose.int(t, -2, -1)


def _inv(a):
    return aten.linalg_inv_ex.default(a)[0]


def _solve(a, b, left=True):
    return aten.linalg_solve_ex.default(a, b, left=left)[0]


def _diag_embed(v):
    eye = aten.eye.default(v.shape[-1], dtype=v.dtype, device=v.device)
    return _mul(_unsq(v, -1), eye)


def _set_diagonal(m, v):
    """``m`` with its diagonal replaced by ``v`` (out of place, so double backward sees it)."""
    eye = aten.eye.default(m.shape[-1], dtype=m.dtype, device=m.device)
    return _add(_mul(m, aten.rsub.Scalar(eye, 1)), _diag_embed(v))


def _defined(g):
    return g is not None


@derivative("linalg_det", inputs=("A",), save=("A",), save_result=True, name="LinalgDetBackward0")
def det_backward(ctx, g):
    # d det(A) = det(A) tr(A^{-1} dA)
    scale = _unsq(_unsq(_mul(g, ctx.result), -1), -1)
    return _mul(scale, _mT(_inv(ctx.A)))


@derivative("linalg_slogdet", inputs=("A",), save=("A",), nondiff_outputs=(0,), name="LinalgSlogdetBackward0")
def slogdet_backward(ctx, g_sign=None, g_logabs=None):
    if g_logabs is None:
        return aten.zeros_like.default(ctx.A)
    return _mul(_unsq(_unsq(g_logabs, -1), -1), _mT(_inv(ctx.A)))


@derivative("linalg_inv_ex", inputs=("A",), save_result=True, nondiff_outputs=(1,), name="LinalgInvExBackward0")
def inv_backward(ctx, g, g_info=None):
    inv_t = _mT(ctx.result[0])
    return aten.neg.default(_mm(inv_t, _mm(g, inv_t)))


@derivative("linalg_solve_ex", inputs=("A", "B"), save=("A", "B_meta", "left"), save_result=True,
            nondiff_outputs=(1,), name="LinalgSolveExBackward0")
def solve_backward(ctx, g, g_info=None):
    a, x, left = ctx.A, ctx.result[0], ctx.left
    b_meta = ctx.B_meta
    vector = b_meta.dim() == 1 or (b_meta.dim() == a.dim() - 1 and tuple(b_meta.shape) == tuple(a.shape[:-1]))
    if vector:
        g, x = _unsq(g, -1), _unsq(x, -1)
    g_b = _solve(_mT(a), g, left)   # left: A^T gB = g; right: gB A^T = g
    g_a = None
    if ctx.needs_input_grad[0]:
        g_a = aten.neg.default(_mm(g_b, _mT(x)) if left else _mm(_mT(x), g_b))
        g_a = sum_to(g_a, a.shape)
    if not ctx.needs_input_grad[1]:
        return g_a, None
    if vector:
        g_b = aten.squeeze.dim(g_b, -1)
    return g_a, sum_to(g_b, b_meta.shape)


@derivative("linalg_cholesky_ex", inputs=("self",), save=("upper",), save_result=True, nondiff_outputs=(1,),
            name="LinalgCholeskyExBackward0")
def cholesky_backward(ctx, g, g_info=None):
    low = ctx.result[0]
    if ctx.upper:
        low, g = _mT(low), _mT(g)
    low_inv = _inv(low)
    phi = aten.tril.default(_mm(_mT(low), g))
    phi = _set_diagonal(phi, aten.mul.Scalar(aten.diagonal.default(phi, 0, -2, -1), 0.5))
    grad = _mm(_mm(_mT(low_inv), phi), low_inv)
    return aten.mul.Scalar(_add(grad, _mT(grad)), 0.5)


def _qr_square_or_tall(g_q, g_r, q, r):
    """gA for A = QR with m >= n (reduced): [gQ + Q sym(triu(gR R^T - Q^T gQ))] R^{-T}."""
    if _defined(g_q) and _defined(g_r):
        m = _sub(_mm(g_r, _mT(r)), _mm(_mT(q), g_q))
    elif _defined(g_q):
        m = aten.neg.default(_mm(_mT(q), g_q))
    else:
        m = _mm(g_r, _mT(r))
    m = aten.triu.default(m)
    sym = _add(m, _mT(m))
    sym = _set_diagonal(sym, aten.mul.Scalar(aten.diagonal.default(sym, 0, -2, -1), 0.5))
    ga = _mm(q, sym)
    if _defined(g_q):
        ga = _add(ga, g_q)
    # X R^T = ga
    return _solve(_mT(r), ga, False)


@derivative("linalg_qr", inputs=("A",), save=("mode",), save_result=True, name="LinalgQrBackward0")
def qr_backward(ctx, g_q=None, g_r=None):
    mode = ctx.mode
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. Please "
                           "use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.")
    q, r = ctx.result
    m, n = q.shape[-2], r.shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
    if m >= n:
        return _qr_square_or_tall(g_q, g_r, q, r)
    # m < n: A = [A1 | A2] with A1 = Q X square and Y = Q^T A2 the rest of R
    x = aten.narrow.default(r, -1, 0, m)
    y = aten.narrow.default(r, -1, m, n - m)
    g_x = aten.narrow.default(g_r, -1, 0, m) if _defined(g_r) else None
    g_y = aten.narrow.default(g_r, -1, m, n - m) if _defined(g_r) else None
    a2 = _mm(q, y)
    if _defined(g_y):
        extra = _mm(a2, _mT(g_y))
        g_q = extra if not _defined(g_q) else _add(g_q, extra)
    if not _defined(g_q) and not _defined(g_x):
        return aten.zeros_like.default(_mm(q, r))
    g_a1 = _qr_square_or_tall(g_q, g_x, q, x)
    g_a2 = _mm(q, g_y) if _defined(g_y) else aten.zeros_like.default(a2)
    return aten.cat.default([g_a1, g_a2], -1)


@derivative("_linalg_eigh", inputs=("A",), save=("compute_v",), save_result=True, name="LinalgEighBackward0")
def eigh_backward(ctx, g_l=None, g_v=None):
    if not ctx.compute_v:
        raise RuntimeError("linalg_eigh_backward: torch.linalg.eigvalsh does not support backpropagation when the "
                           "input does not require grad at the time of the call. Use torch.linalg.eigh instead.")
    lam, v = ctx.result
    if not _defined(g_v):
        inner = _diag_embed(g_l) if _defined(g_l) else aten.zeros_like.default(v)
        return _mm(v, _mm(inner, _mT(v)))
    # gA = V (diag(gL) + skew(V^T gV) / E) V^T, E_ij = L_j - L_i
    vt_gv = _mm(_mT(v), g_v)
    skew = aten.mul.Scalar(_sub(vt_gv, _mT(vt_gv)), 0.5)
    e = _sub(_unsq(lam, -2), _unsq(lam, -1))
    eye = aten.eye.default(lam.shape[-1], dtype=lam.dtype, device=lam.device)
    inner = _div(skew, _add(e, eye))
    diag = g_l if _defined(g_l) else aten.zeros_like.default(lam)
    inner = _set_diagonal(inner, diag)
    return _mm(v, _mm(inner, _mT(v)))


@derivative("_linalg_svd", inputs=("A",), save=("full_matrices", "compute_uv"), save_result=True,
            name="LinalgSvdBackward0")
def svd_backward(ctx, g_u=None, g_s=None, g_vh=None):
    u, s, vh = ctx.result
    if not ctx.compute_uv:
        raise RuntimeError("svd_backward: Setting compute_uv to false in torch.linalg.svd and torch.svd is not "
                           "differentiable. Please use torch.linalg.svdvals instead.")
    k = s.shape[-1]
    m, n = u.shape[-2], vh.shape[-1]
    if ctx.full_matrices:
        u = aten.narrow.default(u, -1, 0, k)
        vh = aten.narrow.default(vh, -2, 0, k)
        if _defined(g_u):
            g_u = aten.narrow.default(g_u, -1, 0, k)
        if _defined(g_vh):
            g_vh = aten.narrow.default(g_vh, -2, 0, k)
    if not _defined(g_u) and not _defined(g_vh):
        if not _defined(g_s):
            return aten.zeros_like.default(_mm(u, vh))
        return _mm(_mul(u, _unsq(g_s, -2)), vh)
    s_row, s_col = _unsq(s, -2), _unsq(s, -1)
    s2 = _mul(s, s)
    eye = aten.eye.default(k, dtype=s.dtype, device=s.device)
    e = _add(_sub(_unsq(s2, -2), _unsq(s2, -1)), eye)
    term = None
    if _defined(g_u):
        uhgu = _mm(_mT(u), g_u)
        term = _mul(_sub(uhgu, _mT(uhgu)), s_row)
    if _defined(g_vh):
        vhgv = _mm(vh, _mT(g_vh))
        t2 = _mul(s_col, _sub(vhgv, _mT(vhgv)))
        term = t2 if term is None else _add(term, t2)
    ga = _div(term, e)
    ga = _set_diagonal(ga, g_s if _defined(g_s) else aten.zeros_like.default(s))
    if m > n and _defined(g_u):
        ga = _mm(u, ga)
        g_us = _div(g_u, s_row)
        ga = _add(ga, _sub(g_us, _mm(u, _mm(_mT(u), g_us))))
        return _mm(ga, vh)
    if m < n and _defined(g_vh):
        ga = _mm(ga, vh)
        s_gvh = _div(g_vh, s_col)
        ga = _add(ga, _sub(s_gvh, _mm(_mm(s_gvh, _mT(vh)), vh)))
        return _mm(u, ga)
    return _mm(u, _mm(ga, vh))
