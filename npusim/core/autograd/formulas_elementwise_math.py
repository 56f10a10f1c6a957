"""Backward formulas of the extra elementwise math ops (torch's derivatives.yaml, op by op)."""
from __future__ import annotations

import math

from ..dispatch.ops_namespace import aten
from ..tensor import Tensor
from .derivatives import derivative
from .formulas_elementwise import as_input
from .formulas_nn_activation import logit_backward

_mul, _div, _add, _sub, _neg = (aten.mul.Tensor, aten.div.Tensor, aten.add.Tensor, aten.sub.Tensor,
                                aten.neg.default)


def _zeros(g):
    return aten.zeros_like.default(g)


def _zero_where(mask, g):
    return aten.where.self(mask, _zeros(g), g)


derivative("logit_", save=("self", "eps"))(logit_backward)


@derivative("acosh", "acosh_", save=("self",))
def acosh_backward(ctx, g):
    x = ctx.self
    return _mul(g, aten.rsqrt.default(_sub(_mul(x, x), 1)))


@derivative("asinh", "asinh_", save=("self",))
def asinh_backward(ctx, g):
    x = ctx.self
    return _mul(g, aten.rsqrt.default(_add(_mul(x, x), 1)))


@derivative("atanh", "atanh_", save=("self",))
def atanh_backward(ctx, g):
    x = ctx.self
    return _div(g, aten.rsub.Scalar(_mul(x, x), 1))


@derivative("erfc", "erfc_", save=("self",))
def erfc_backward(ctx, g):
    x = ctx.self
    return _mul(_mul(g, -2.0 / math.sqrt(math.pi)), aten.exp.default(_neg(_mul(x, x))))


@derivative("erfinv", "erfinv_", save_result=True)
def erfinv_backward(ctx, g):
    r = ctx.result
    return _mul(_mul(g, 0.5 * math.sqrt(math.pi)), aten.exp.default(_mul(r, r)))


@derivative("lgamma", "lgamma_", save=("self",))
def lgamma_backward(ctx, g):
    return _mul(g, aten.digamma.default(ctx.self))


@derivative("digamma", "digamma_", save=("self",))
def digamma_backward(ctx, g):
    return _mul(g, aten.polygamma.default(1, ctx.self))


@derivative("polygamma", "polygamma_", save=("self", "n"))
def polygamma_backward(ctx, g):
    return _mul(g, aten.polygamma.default(ctx.n + 1, ctx.self))


@derivative("i0", "i0_", save=("self",))
def i0_backward(ctx, g):
    return _mul(g, aten.special_i1.default(ctx.self))


@derivative("special_i1", save=("self",), save_result=True)
def i1_backward(ctx, g):
    # i1'(x) = i0(x) - i1(x) / x, with the limit 1/2 at 0
    x = ctx.self
    at_zero = aten.eq.Scalar(x, 0)
    safe = aten.where.self(at_zero, aten.ones_like.default(x), x)
    d = _sub(aten.i0.default(safe), _div(ctx.result, safe))
    return _mul(g, aten.where.self(at_zero, aten.full_like.default(d, 0.5), d))


@derivative("sinc", "sinc_", save=("self",))
def sinc_backward(ctx, g):
    x = ctx.self
    px = _mul(x, math.pi)
    d = _div(_sub(_mul(px, aten.cos.default(px)), aten.sin.default(px)), _mul(px, x))
    return _mul(g, _zero_where(aten.eq.Scalar(x, 0), d))


@derivative("deg2rad", "deg2rad_")
def deg2rad_backward(ctx, g):
    return _mul(g, math.pi / 180.0)


@derivative("rad2deg", "rad2deg_")
def rad2deg_backward(ctx, g):
    return _mul(g, 180.0 / math.pi)


@derivative("frac", "frac_")
def frac_backward(ctx, g):
    return g


# --- binary ------------------------------------------------------------------------------------------------

@derivative("xlogy.Tensor", "xlogy.Scalar_Other", "xlogy.Scalar_Self", "xlogy_.Tensor", "xlogy_.Scalar_Other",
            inputs=("self", "other"), save=("self", "other"))
def xlogy_backward(ctx, g):
    x, y = ctx.self, ctx.other
    n = ctx.needs_input_grad
    gx = gy = None
    if n[0]:
        nonzero = aten.ne.Scalar(x, 0)
        xl = aten.xlogy.Tensor(nonzero, y) if isinstance(y, Tensor) else aten.xlogy.Scalar_Other(nonzero, y)
        gx = as_input(_mul(g, xl), x)
    if n[1]:
        gy = as_input(_div(_mul(g, x), y), y)
    return gx, gy


@derivative("hypot", "hypot_", inputs=("self", "other"), save=("self", "other"), save_result=True)
def hypot_backward(ctx, g):
    n = ctx.needs_input_grad
    r = ctx.result
    return (as_input(_div(_mul(g, ctx.self), r), ctx.self) if n[0] else None,
            as_input(_div(_mul(g, ctx.other), r), ctx.other) if n[1] else None)


@derivative("copysign.Tensor", "copysign.Scalar", "copysign_.Tensor", "copysign_.Scalar",
            inputs=("self", "other"), save=("self", "other_meta"), save_result=True)
def copysign_backward(ctx, g):
    n = ctx.needs_input_grad
    gx = go = None
    if n[0]:
        x = ctx.self
        ratio = _zero_where(aten.eq.Scalar(x, 0), _div(ctx.result, x))
        gx = as_input(_mul(g, ratio), x)
    if n[1]:
        meta = ctx.other_meta
        go = aten.zeros.default(list(meta.shape), dtype=meta.dtype, device=meta.device)
    return gx, go


def _fmax_fmin_backward(ctx, g, compare):
    x, y = ctx.self, ctx.other
    n = ctx.needs_input_grad
    to_self = aten.logical_or.default(compare(x, y), aten.isnan.default(y))
    return (as_input(aten.where.self(to_self, g, _zeros(g)), x) if n[0] else None,
            as_input(_zero_where(to_self, g), y) if n[1] else None)


@derivative("fmax", inputs=("self", "other"), save=("self", "other"))
def fmax_backward(ctx, g):
    return _fmax_fmin_backward(ctx, g, aten.ge.Tensor)


@derivative("fmin", inputs=("self", "other"), save=("self", "other"))
def fmin_backward(ctx, g):
    return _fmax_fmin_backward(ctx, g, aten.le.Tensor)


@derivative("logaddexp", inputs=("self", "other"), save=("self", "other"))
def logaddexp_backward(ctx, g):
    x, y = ctx.self, ctx.other
    n = ctx.needs_input_grad
    return (as_input(_div(g, _add(aten.exp.default(_sub(y, x)), 1)), x) if n[0] else None,
            as_input(_div(g, _add(aten.exp.default(_sub(x, y)), 1)), y) if n[1] else None)


@derivative("logaddexp2", inputs=("self", "other"), save=("self", "other"))
def logaddexp2_backward(ctx, g):
    x, y = ctx.self, ctx.other
    n = ctx.needs_input_grad
    return (as_input(_div(g, _add(aten.exp2.default(_sub(y, x)), 1)), x) if n[0] else None,
            as_input(_div(g, _add(aten.exp2.default(_sub(x, y)), 1)), y) if n[1] else None)


@derivative("ldexp.Tensor", "ldexp_", inputs=("self", "other"), save=("self", "other"))
def ldexp_backward(ctx, g):
    x, e = ctx.self, ctx.other
    n = ctx.needs_input_grad
    scale = aten.exp2.default(e)
    return (as_input(_mul(g, scale), x) if n[0] else None,
            as_input(_mul(_mul(_mul(g, x), scale), math.log(2.0)), e) if n[1] else None)


@derivative("frexp.Tensor", save_result=True, nondiff_outputs=(1,))
def frexp_backward(ctx, g, g_exponent=None):
    # self = mantissa * 2**exponent with the exponent piecewise constant: d mantissa / d self = 2**-exponent
    # (the exponent goes to g's dtype first, so float64 exponents beyond float32's range stay finite)
    return aten.div.Tensor(g, aten.exp2.default(ctx.result[1].to(g.dtype)))
