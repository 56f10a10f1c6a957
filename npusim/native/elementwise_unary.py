"""Unary elementwise ops, each as functional, ``out=`` and in-place kernels.

Three result rules, as in torch: ops that keep the input dtype (neg, abs,
floor...), ops that compute integral inputs in the default float dtype (exp,
sin, sqrt...), and predicates that return bool (isnan, logical_not).
"""
from __future__ import annotations

import math

import numpy as np

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..kernels import elementwise as K
from ..kernels import parallel as P
from ..kernels.array_api import HALF_TYPES
from . import common as C

_ndarray = np.ndarray
FROM_NP = C.FROM_NP


def _float_input(self):
    """The array to compute a float op on: integral inputs become the default float dtype."""
    a = self._a
    k = a.dtype.kind
    if k == "f" or k == "c" or a.dtype == C.BFLOAT16:
        return a, FROM_NP[a.dtype]
    cd = D.get_default_dtype()
    return a.astype(cd.np), cd


def make_float_op(fn):
    """exp-like: ints compute in the default float dtype; 16-bit floats via float32 where NumPy needs it."""
    def functional(self):
        a, cd = _float_input(self)
        r = fn(a)
        if r.__class__ is not _ndarray:
            r = C.as_array(r)
        return C.make(r, self._device)

    def out_(self, out=None):
        r = functional(self)
        return C.finish_out(out, r._a, r.dtype, r._device)

    def inplace(self):
        a, cd = _float_input(self)
        if a is self._a:
            C.check_writable(self)
            fn(a, out=a)
            self._bump_version()
            return self
        C.check_inplace(self, cd, a.shape)  # integral self: torch refuses the float result
        return C.write_out(self, fn(a))

    return functional, out_, inplace


def _check_same_out(self, out):
    """Ops whose result keeps the input dtype want an ``out=`` of exactly that dtype."""
    if isinstance(out, C.Tensor) and out._a.dtype != self._a.dtype:
        raise RuntimeError(f"Found dtype {C.tname(out._a.dtype)} but expected {C.tname(self._a.dtype)}")


def make_same_op(fn, *, kernel_name, allow_bool=True, bool_error=None, int_identity=False, elementwise_out=False):
    """neg-like: the result keeps the input dtype. ``elementwise_out``: ``fn(a, out=a)`` computes in place (one
    elementwise ufunc), which the in-place op then does instead of a new array and a copy."""
    def check(a):
        if a.dtype == np.bool_ and not allow_bool:
            if bool_error is not None:
                raise RuntimeError(bool_error)
            C.not_implemented(kernel_name, a.dtype)

    def functional(self):
        a = self._a
        check(a)
        if int_identity and a.dtype.kind in "iu":
            return C.make(a.copy(), self._device)
        return C.wrap(fn(a), self._device)

    def out_(self, out=None):
        if bool_error is not None:
            check(self._a)
        _check_same_out(self, out)
        r = functional(self)
        return C.finish_out(out, r._a, r.dtype, r._device)

    def inplace(self):
        a = self._a
        check(a)
        if int_identity and a.dtype.kind in "iu":
            self._bump_version()
        elif elementwise_out and a.__class__ is _ndarray:
            C.check_writable(self)
            fn(a, out=a)
            self._bump_version()
        else:
            C.write_out(self, fn(a))
        return self

    return functional, out_, inplace


def make_predicate(fn):
    def functional(self):
        return C.wrap(fn(self._a), self._device)

    def out_(self, out=None):
        r = functional(self)
        return C.finish_out(out, r._a, D.bool, r._device)

    def inplace(self):
        return C.finish_inplace(self, fn(self._a), D.bool)

    return functional, out_, inplace


def _via_float32(ufunc):
    """NumPy lacks fast 16-bit kernels for some transcendental ufuncs: compute in float32."""
    def fn(a, out=None):
        if a.dtype in HALF_TYPES:
            r = P.unary(ufunc, a.astype(np.float32)).astype(a.dtype)
            if out is not None:
                out[...] = r
                return out
            return r
        return P.unary(ufunc, a, out)
    return fn


def _split(ufunc):
    """``ufunc`` run over the intra-op threads when its input is large."""
    def fn(a, out=None):
        return P.unary(ufunc, a, out)
    return fn


FLOAT_OPS = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt,
    "rsqrt": K.rsqrt, "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh,
    "sigmoid": K.sigmoid, "erf": K.erf, "reciprocal": K.reciprocal, "exp2": np.exp2, "log2": np.log2,
    "log10": np.log10, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan,
}
FLOAT = {name: make_float_op(_via_float32(fn) if isinstance(fn, np.ufunc) else fn)
         for name, fn in FLOAT_OPS.items()}

_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
             "use the `~` or `logical_not()` operator instead.")
SAME = {
    "neg": make_same_op(_split(np.negative), kernel_name="neg_cpu", allow_bool=False, bool_error=_NEG_BOOL,
                        elementwise_out=True),
    "abs": make_same_op(_split(np.absolute), kernel_name="abs_cpu", allow_bool=False, elementwise_out=True),
    "floor": make_same_op(_split(np.floor), kernel_name="floor_vml_cpu", allow_bool=False, int_identity=True,
                          elementwise_out=True),
    "ceil": make_same_op(_split(np.ceil), kernel_name="ceil_vml_cpu", allow_bool=False, int_identity=True,
                         elementwise_out=True),
    "trunc": make_same_op(_split(np.trunc), kernel_name="trunc_vml_cpu", allow_bool=False, int_identity=True,
                          elementwise_out=True),
    "sign": make_same_op(K.sign, kernel_name="sign_cpu"),
    "sgn": make_same_op(K.sign, kernel_name="sgn_cpu"),
}


def _bitwise_not_fn(a, out=None):
    if a.dtype.kind == "f" or a.dtype == C.BFLOAT16:
        C.not_implemented("bitwise_not_cpu", a.dtype)
    return np.invert(a, out=out)


SAME["bitwise_not"] = make_same_op(_bitwise_not_fn, kernel_name="bitwise_not_cpu")

PREDICATES = {"isnan": make_predicate(_split(np.isnan)), "isinf": make_predicate(_split(np.isinf)),
              "isfinite": make_predicate(_split(np.isfinite)),
              "logical_not": make_predicate(_split(np.logical_not))}


def _round_compute(self, decimals):
    """round (``decimals is None``: the overload without decimals) with torch's dtype rules."""
    a = self._a
    integral = a.dtype.kind in "iub"
    if decimals is None:
        if a.dtype == np.bool_:
            C.not_implemented("round_vml_cpu", a.dtype)
        if integral:
            return a.copy()
        return K.round_half_even(a)
    if integral:
        C.not_implemented("round_vml_cpu" if decimals == 0 else "round_cpu", a.dtype)
    return K.round_decimals(a, decimals)


def round_(self, decimals=None):
    return C.wrap(_round_compute(self, decimals), self._device)


def round_out(self, decimals=None, out=None):
    _check_same_out(self, out)
    r = _round_compute(self, decimals)
    return C.finish_out(out, r, FROM_NP[r.dtype], self._device)


def round_inplace(self, decimals=None):
    return C.write_out(self, _round_compute(self, decimals))


def square(self):
    if self._a.dtype == np.bool_:
        return C.make(self._a.astype(np.int64), self._device)
    return C.wrap(P.unary(np.square, self._a), self._device)


def square_(self):
    if self._a.dtype == np.bool_:
        C.check_inplace(self, D.int64, self._a.shape)
    C.check_writable(self)
    P.unary(np.square, self._a, self._a)
    self._bump_version()
    return self


def square_out(self, *, out):
    """torch's square.out is pow(self, 2) written into ``out`` (bool squares to int64 there too)."""
    return aten.pow.Tensor_Scalar_out(self, 2, out=out)


def sgn_(self):
    """sgn is sign for real dtypes; decomposing into sign_ gives it sign_'s derivative."""
    return aten.sign_.default(self)


def relu(self):
    a = self._a
    if a.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    if C.is_float(a.dtype):
        # clamp's max with 0: -0.0 stays -0.0 as in torch, and large arrays take its faster blocks
        return C.wrap(K.clamp(a, a.dtype.type(0), None), self._device)
    return C.wrap(P.binary(np.maximum, a, a.dtype.type(0)), self._device)


def relu_(self):
    a = self._a
    if a.dtype == np.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    C.check_writable(self)
    if C.is_float(a.dtype):
        return C.write_out(self, K.clamp(a, a.dtype.type(0), None, into=a if a.__class__ is _ndarray else None))
    P.binary(np.maximum, a, a.dtype.type(0), a)
    self._bump_version()
    return self


def nan_to_num(self, nan=None, posinf=None, neginf=None):
    return C.wrap(K.nan_to_num(self._a, nan, posinf, neginf), self._device)


def nan_to_num_out(self, nan=None, posinf=None, neginf=None, out=None):
    if isinstance(out, C.Tensor) and out._a.dtype != self._a.dtype:
        raise RuntimeError(f"nan_to_num: dtype of out: {C.tname(out._a.dtype)} should be same as input: "
                           f"{C.tname(self._a.dtype)}")
    r = nan_to_num(self, nan, posinf, neginf)
    return C.finish_out(out, r._a, r.dtype, r._device)


def nan_to_num_(self, nan=None, posinf=None, neginf=None):
    return C.write_out(self, nan_to_num(self, nan, posinf, neginf)._a)


def angle(self):
    """The argument of a real number: pi below zero, 0 otherwise, NaN for NaN; integers give the default float.
    Its gradient is zero (the comparison carries none), as torch's is for real inputs."""
    if self.is_complex():   # atan2 of the parts: its gradient is torch's, g * i z / |z|^2
        return aten.atan2.default(aten.imag.default(self), aten.real.default(self))
    x = self if self.is_floating_point() else aten._to_copy.default(self, dtype=D.get_default_dtype())
    below = aten._to_copy.default(aten.lt.Scalar(x, 0), dtype=x.dtype)
    return aten.where.self(aten.isnan.default(x), x, aten.mul.Scalar(below, math.pi))


def angle_out(self, *, out):
    r = angle(self)
    if out.dtype is not r.dtype:
        raise RuntimeError(f"Found dtype {C.tname(out.dtype)} but expected {C.tname(r.dtype)}")
    if out.shape != r.shape:
        aten.resize_.default(out, r.shape)
    return aten.copy_.default(out, r)


# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {"square.out": square_out, "sgn_": sgn_, "angle": angle, "angle.out": angle_out}
