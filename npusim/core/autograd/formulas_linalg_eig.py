"""Backward formula of linalg_eig (torch's linalg_eig_backward, FunctionsManual.cpp), for real and complex A.

With gL, gV the gradients of the eigenvalues L and eigenvectors V (each of unit norm):

    gA = V^{-H} (diag(gL) + (V^H gV - V^H V Re(diag(V^H gV))) / E) V^H,   E_ij = conj(L_j) - conj(L_i)

(V^{-H} X as a solve with V^H), the real part of it for a real A. A loss that depends on the eigenvectors'
phases is ill-defined and refused with torch's message. The complex products and the solve are written on
(real, imaginary) pairs of real tensors, so the formula is made of real dispatched ops and differentiates again.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import complex_ready, derivative

_mm, _mul, _add, _sub, _div = aten.matmul.default, aten.mul.Tensor, aten.add.Tensor, aten.sub.Tensor, aten.div.Tensor


def _parts(z):
    z = aten.resolve_conj.default(z)
    return aten.real.default(z), aten.imag.default(z)


def _mT(t):
    return aten.transpose.int(t, -2, -1)


def _mH(p):
    return _mT(p[0]), aten.neg.default(_mT(p[1]))


def _matmul(a, b):
    return _sub(_mm(a[0], b[0]), _mm(a[1], b[1])), _add(_mm(a[0], b[1]), _mm(a[1], b[0]))


def _times(a, b):
    return _sub(_mul(a[0], b[0]), _mul(a[1], b[1])), _add(_mul(a[0], b[1]), _mul(a[1], b[0]))


def _divide(a, b):
    den = _add(_mul(b[0], b[0]), _mul(b[1], b[1]))
    return (_div(_add(_mul(a[0], b[0]), _mul(a[1], b[1])), den),
            _div(_sub(_mul(a[1], b[0]), _mul(a[0], b[1])), den))


def _solve(a, b):
    """X with A X = B for complex A (..., n, n) and B (..., n, k), as the real system [[Ar, -Ai], [Ai, Ar]]."""
    n = a[0].shape[-1]
    top = aten.cat.default([a[0], aten.neg.default(a[1])], -1)
    bottom = aten.cat.default([a[1], a[0]], -1)
    x = aten.linalg_solve_ex.default(aten.cat.default([top, bottom], -2), aten.cat.default([b[0], b[1]], -2))[0]
    return aten.slice.Tensor(x, -2, 0, n), aten.slice.Tensor(x, -2, n, 2 * n)


def _diag(p):
    return aten.diagonal.default(p[0], 0, -2, -1), aten.diagonal.default(p[1], 0, -2, -1)


def _set_diag(p, d):
    """``p`` with its diagonal replaced by ``d`` (out of place)."""
    eye = aten.eye.default(p[0].shape[-1], dtype=p[0].dtype, device=p[0].device)
    off = aten.rsub.Scalar(eye, 1)
    return tuple(_add(_mul(m, off), _mul(aten.unsqueeze.default(v, -1), eye)) for m, v in zip(p, d))


@derivative("linalg_eig", inputs=("self",), save=("self_meta",), save_result=True, name="LinalgEigBackward0")
def linalg_eig_backward(ctx, g_l=None, g_v=None):
    lam, v = ctx.result
    V = _parts(v)
    Vh = _mH(V)
    if g_v is None:
        gL = _parts(g_l)
        # V^{-H} diag(gL) V^H
        ga = _solve(Vh, _times(tuple(aten.unsqueeze.default(m, -1) for m in gL), Vh))
    else:
        VhgV = _matmul(Vh, _parts(g_v))
        d = _diag(VhgV)
        if d[1].numel() and bool(aten.gt.Scalar(aten.max.default(aten.abs.default(d[1])), 1e-2).item()):
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are specified up to "
                               "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
                               "so it is ill-defined.")
        # project onto the skew-Hermitian tangent space: VhgV - V^H V Re(diag(VhgV))
        scaled = tuple(_mul(m, aten.unsqueeze.default(d[0], -2)) for m in V)
        VhgV = tuple(_sub(x, y) for x, y in zip(VhgV, _matmul(Vh, scaled)))
        lr, li = _parts(lam)
        # E_ij = conj(L_j) - conj(L_i), with ones on the diagonal
        e = (_sub(aten.unsqueeze.default(lr, -2), aten.unsqueeze.default(lr, -1)),
             aten.neg.default(_sub(aten.unsqueeze.default(li, -2), aten.unsqueeze.default(li, -1))))
        ones = (aten.ones_like.default(lr), aten.zeros_like.default(li))
        inner = _divide(VhgV, _set_diag(e, ones))
        if g_l is not None:
            inner = _set_diag(inner, _parts(g_l))
        ga = _solve(Vh, _matmul(inner, Vh))
    if not ctx.self_meta.dtype.is_complex:
        return ga[0]
    return aten.complex.default(ga[0], ga[1])


complex_ready("linalg_eig")   # torch's formula, for real and complex A
