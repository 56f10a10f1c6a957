"""Backward formulas of the torch.special primitives (torch's derivatives.yaml)."""
from __future__ import annotations

import math

from ..dispatch.ops_namespace import aten
from ..tensor import Tensor
from .derivatives import NONDIFFERENTIABLE, derivative
from .formulas_elementwise import as_input

_mul, _div, _add, _sub, _neg = (aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor,
                                aten.neg.default)


@derivative("special_ndtr", save=("self",))
def ndtr_backward(ctx, g):
    x = ctx.self
    pdf = _mul(aten.exp.default(_mul(_mul(x, x), -0.5)), 1.0 / math.sqrt(2.0 * math.pi))
    return _mul(g, pdf)


@derivative("special_log_ndtr", save=("self",), save_result=True)
def log_ndtr_backward(ctx, g):
    # pdf(x) / ndtr(x) = exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi), finite far into the lower tail
    x = ctx.self
    e = aten.exp.default(_neg(_add(ctx.result, _mul(_mul(x, x), 0.5))))
    return _mul(_mul(g, 1.0 / math.sqrt(2.0 * math.pi)), e)


@derivative("special_ndtri", save_result=True)
def ndtri_backward(ctx, g):
    r = ctx.result
    return _mul(_mul(g, math.sqrt(2.0 * math.pi)), aten.exp.default(_mul(_mul(r, r), 0.5)))


@derivative("special_erfcx", save=("self",), save_result=True)
def erfcx_backward(ctx, g):
    d = _sub(_mul(_mul(ctx.self, ctx.result), 2.0), 2.0 / math.sqrt(math.pi))
    return _mul(g, d)


@derivative("special_i0e", save=("self",), save_result=True)
def i0e_backward(ctx, g):
    x = ctx.self
    return _mul(g, _sub(aten.special_i1e.default(x), _mul(aten.sgn.default(x), ctx.result)))


@derivative("special_i1e", save=("self",), save_result=True)
def i1e_backward(ctx, g):
    # i1e'(x) = i0e(x) - i1e(x) (sgn(x) + 1/x), with the limit 1/2 at 0
    x = ctx.self
    at_zero = aten.eq.Scalar(x, 0)
    safe = aten.where.self(at_zero, aten.ones_like.default(x), x)
    r = ctx.result
    d = _sub(aten.special_i0e.default(safe), _mul(r, _add(aten.sgn.default(safe), aten.reciprocal.default(safe))))
    return _mul(g, aten.where.self(at_zero, aten.full_like.default(d, 0.5), d))


@derivative("special_entr", save=("self",))
def entr_backward(ctx, g):
    return _mul(g, _neg(_add(aten.log.default(ctx.self), 1)))


@derivative("special_xlog1py", "special_xlog1py.other_scalar", "special_xlog1py.self_scalar",
            inputs=("self", "other"), save=("self", "other"))
def xlog1py_backward(ctx, g):
    x, y = ctx.self, ctx.other
    n = ctx.needs_input_grad
    gx = gy = None
    if n[0]:
        # g * log1p(other), 0 where self == 0 and other <= -1 (torch masks the pole there)
        d = (aten.special_xlog1py.default(g, y) if isinstance(y, Tensor)
             else aten.special_xlog1py.other_scalar(g, y))
        if isinstance(y, Tensor):
            d = aten.where.self(aten.logical_and.default(aten.eq.Scalar(x, 0), aten.le.Scalar(y, -1)),
                                aten.zeros_like.default(d), d)
        elif y <= -1:
            d = aten.where.self(aten.eq.Scalar(x, 0), aten.zeros_like.default(d), d)
        gx = as_input(d, x)
    if n[1]:
        gy = as_input(_div(_mul(g, x), _add(y, 1)), y)
    return gx, gy


@derivative("special_zeta", "special_zeta.other_scalar", "special_zeta.self_scalar",
            inputs=("self", "other"), save=("self", "other"))
def zeta_backward(ctx, g):
    n = ctx.needs_input_grad
    if n[0]:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    x, q = ctx.self, ctx.other
    d = (aten.special_zeta.default(_add(x, 1.0), q) if isinstance(x, Tensor)
         else aten.special_zeta.self_scalar(x + 1.0, q))
    return None, as_input(_mul(_mul(g, d), -x) if isinstance(x, Tensor) else _mul(g, _mul(d, -x)), q)


def _incomplete_gamma_density(a, x):
    """d/dx P(a, x) = x^(a-1) exp(-x) / Gamma(a), through logs as torch."""
    return aten.exp.default(_sub(_sub(_mul(_sub(a, 1), aten.log.default(x)), x), aten.lgamma.default(a)))


@derivative("igamma", "igamma_", inputs=("self", "other"), save=("self", "other"))
def igamma_backward(ctx, g):
    if ctx.needs_input_grad[0]:
        raise NotImplementedError("the derivative for 'igamma: input' is not implemented.")
    return None, as_input(_mul(g, _incomplete_gamma_density(ctx.self, ctx.other)), ctx.other)


@derivative("igammac", "igammac_", inputs=("self", "other"), save=("self", "other"))
def igammac_backward(ctx, g):
    if ctx.needs_input_grad[0]:
        raise NotImplementedError("the derivative for 'igammac: input' is not implemented.")
    return None, as_input(_neg(_mul(g, _incomplete_gamma_density(ctx.self, ctx.other))), ctx.other)


# torch's Bessel and Airy functions and orthogonal polynomials have no gradient: their results never require grad
NONDIFFERENTIABLE.update(f"special_{name}" for name in (
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "spherical_bessel_j0", "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"))
