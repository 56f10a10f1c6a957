"""Direct forward formulas of the remaining elementwise math, casts and selections.

A unary elementwise op's tangent is the input's tangent times the op's derivative, written here from the input
``x`` and the result ``y`` (whichever is cheaper). See ``forward_formulas_common.py`` for the conventions.
"""
from __future__ import annotations

import math

from ..dispatch.ops_namespace import aten
from .forward_mode import forward_formula

_mul, _add, _div = aten.mul.Tensor, aten.add.Tensor, aten.div.Tensor


def _sq(v):
    return _mul(v, v)


# op -> f(x, y): its derivative at x (y = op(x))
_DERIVATIVES = {
    "log1p": lambda x, y: aten.reciprocal.default(aten.add.Scalar(x, 1)),
    "log2": lambda x, y: aten.reciprocal.default(aten.mul.Scalar(x, math.log(2.0))),
    "log10": lambda x, y: aten.reciprocal.default(aten.mul.Scalar(x, math.log(10.0))),
    "expm1": lambda x, y: aten.add.Scalar(y, 1),
    "exp2": lambda x, y: aten.mul.Scalar(y, math.log(2.0)),
    "square": lambda x, y: aten.mul.Scalar(x, 2),
    "rsqrt": lambda x, y: aten.mul.Scalar(aten.pow.Tensor_Scalar(y, 3), -0.5),
    "reciprocal": lambda x, y: aten.neg.default(_sq(y)),
    "tan": lambda x, y: aten.add.Scalar(_sq(y), 1),
    "sinh": lambda x, y: aten.cosh.default(x),
    "cosh": lambda x, y: aten.sinh.default(x),
    "asin": lambda x, y: aten.rsqrt.default(aten.rsub.Scalar(_sq(x), 1)),
    "acos": lambda x, y: aten.neg.default(aten.rsqrt.default(aten.rsub.Scalar(_sq(x), 1))),
    "atan": lambda x, y: aten.reciprocal.default(aten.add.Scalar(_sq(x), 1)),
    "erf": lambda x, y: aten.mul.Scalar(aten.exp.default(aten.neg.default(_sq(x))), 2 / math.sqrt(math.pi)),
    "silu": lambda x, y: _silu_derivative(x),
}


def _silu_derivative(x):
    s = aten.sigmoid.default(x)
    return _mul(s, aten.add.Scalar(_mul(x, aten.rsub.Scalar(s, 1)), 1))


def _unary(name, derivative):
    def jvp(a, t, out):
        return _mul(t["self"], derivative(a.self, out))
    jvp.__name__ = f"{name}_jvp"
    forward_formula(name)(jvp)


for _name, _derivative in _DERIVATIVES.items():
    _unary(_name, _derivative)


@forward_formula("abs")
def abs_jvp(a, t, out):
    # |z| is not holomorphic: its tangent is Re(conj(sgn z) * t) (real for real z: sgn(x) * t)
    x, tx = a.self, t["self"]
    if x.is_complex() or tx.is_complex():
        return aten.real.default(_mul(aten.conj_physical.default(aten.sgn.default(x)), tx))
    return _mul(tx, aten.sgn.default(x))


@forward_formula("where.self")
def where_jvp(a, t, out):
    ts, to = t.get("self"), t.get("other")
    ts = aten.zeros_like.default(out) if ts is None else ts
    to = aten.zeros_like.default(out) if to is None else to
    return aten.where.self(a.condition, ts, to)


@forward_formula("masked_fill.Scalar")
def masked_fill_jvp(a, t, out):
    return aten.masked_fill.Scalar(t["self"], a.mask, 0)


@forward_formula("_to_copy")
def to_copy_jvp(a, t, out):
    # a cast or a device move is linear: the tangent moves and casts the same way
    return aten._to_copy.default(t["self"], dtype=out.dtype, device=out.device)


@forward_formula("clone")
def clone_jvp(a, t, out):
    return aten.clone.default(t["self"])
