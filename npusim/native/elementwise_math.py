"""Extra elementwise math: inverse hyperbolics, special functions, float and integer binary math,
sign/infinity predicates, as functional, ``out=`` and in-place kernels with torch's dtype rules.

Float ops compute integral inputs in the default float dtype; 16-bit floats go through float32
where torch does. Integer-only ops (gcd, shifts) and float-only ops (hypot, logaddexp,
nextafter) refuse other dtypes with torch's "not implemented" error.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from ..kernels import elementwise_math as KM
from ..kernels import special as S
from ..kernels.array_api import HALF_TYPES, compute_dtype, namespace_of
from . import elementwise_binary as B
from . import common as C
from . import nn_activation
from . import elementwise_unary as U

_F32 = np.dtype(np.float32)


# --- unary ops with a float result ---------------------------------------------------------------------

def _opmath(fn):
    """Run ``fn`` in float32 for 16-bit floats (torch's opmath), rounding the result once."""
    def run(a, *args):
        work = compute_dtype(a.dtype)
        r = fn(a.astype(work, copy=False), *args)
        return r.astype(a.dtype, copy=False)
    return run


def _float_family(compute):
    """functional / out= / in-place kernels of ``compute(float_array, *args) -> array of that dtype``."""
    def functional(self, *args):
        a, _ = U._float_input(self)
        return C.wrap(compute(a, *args), self._device)

    def out_(self, *args, out=None):
        r = functional(self, *args)
        return C.finish_out(out, r._a, r.dtype, r._device)

    def inplace(self, *args):
        a, cd = U._float_input(self)
        C.check_inplace(self, cd, a.shape)   # an integral self cannot hold the float result
        return C.write_out(self, compute(a, *args))

    return functional, out_, inplace


def _ufunc(name):
    def run(a):
        xp = namespace_of(a)
        with np.errstate(all="ignore"):
            return getattr(xp, name)(a)
    return _opmath(run)


FLOAT_UNARY = {
    "acosh": _ufunc("arccosh"), "asinh": _ufunc("arcsinh"), "atanh": _ufunc("arctanh"),
    "erfc": S.erfc, "erfinv": S.erfinv, "lgamma": S.lgamma, "digamma": S.digamma, "i0": S.i0,
    "special_i1": S.i1, "sinc": _opmath(KM.sinc),
    "deg2rad": _opmath(lambda a: KM.scale(a, math.pi / 180.0)),
    "rad2deg": _opmath(lambda a: KM.scale(a, 180.0 / math.pi)),
}
FLOAT_FAMILIES = {name: _float_family(fn) for name, fn in FLOAT_UNARY.items()}


def _polygamma_compute(a, n):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return S.polygamma(n, a)


_pg, _pg_out, _pg_inplace = _float_family(_polygamma_compute)


def polygamma(n, self):
    return _pg(self, n)


def polygamma_out(n, self, out=None):
    return _pg_out(self, n, out=out)


def polygamma_(self, n):
    return _pg_inplace(self, n)


def logit_out(self, eps=None, out=None):
    r = nn_activation.logit(self, eps)
    return C.finish_out(out, r._a, r.dtype, r._device)


def logit_(self, eps=None):
    r = nn_activation.logit(self, eps)
    C.check_inplace(self, r.dtype, r._a.shape)
    return C.write_out(self, r._a)


# --- frac: float inputs only, result in the input dtype -----------------------------------------------------

def _frac(a, out=None):
    if not C.is_float(a.dtype):
        C.not_implemented("frac_cpu", a.dtype)
    return KM.frac(a, out)


FRAC = U.make_same_op(_frac, kernel_name="frac_cpu", allow_bool=False)


# --- predicates -----------------------------------------------------------------------------------------

def _none_set(a):
    return namespace_of(a).zeros(a.shape, dtype=np.bool_)


def _isposinf(a):
    return a == np.inf if C.is_float(a.dtype) else _none_set(a)


def _isneginf(a):
    return a == -np.inf if C.is_float(a.dtype) else _none_set(a)


def _signbit(a):
    if C.is_float(a.dtype):
        return namespace_of(a).signbit(a.astype(compute_dtype(a.dtype), copy=False))
    if a.dtype.kind == "i":
        return a < 0
    return _none_set(a)


def _isreal(a):
    return namespace_of(a).ones(a.shape, dtype=np.bool_)   # npusim has no complex dtypes


PREDICATES = {"isposinf": U.make_predicate(_isposinf), "isneginf": U.make_predicate(_isneginf),
              "signbit": U.make_predicate(_signbit), "isreal": U.make_predicate(_isreal)}


# --- binary ops -------------------------------------------------------------------------------------------

def _float_only(fn, kernel, opmath=True):
    """An op defined for floating dtypes only, computed in the promoted dtype (float32 for 16-bit floats)."""
    def compute(self, other):
        a, b, cd, dev = B.operands(self, other)
        if not cd.is_floating_point:
            B._not_implemented(kernel, cd, a, b)
        if opmath and cd.np in HALF_TYPES:
            return B._array(B._call(fn, B._to_f32(a), B._to_f32(b))).astype(cd.np), cd, dev
        return B._array(B._call(fn, a, b)), cd, dev
    compute.result = B._result_dt
    return compute


def _hypot(a, b, out=None):
    return namespace_of(a).hypot(a, b)


def _heaviside_compute(self, values):
    if self._a.dtype != values._a.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    a, b, cd, dev = B.operands(self, values)
    return B._array(B._call(KM.heaviside, a, b)), cd, dev


_heaviside_compute.result = B._result_dt
_ldexp_float = B._float_compute(KM.ldexp)


def _ldexp_compute(self, other):
    # torch's kernel for a float self takes integral exponents only (bool has none)
    if self.is_floating_point() and other.dtype is D.bool:
        C.not_implemented("ldexp_cpu_exp", other._a.dtype)
    if other.is_floating_point():
        # as torch: 2**other rounded to other's dtype first, then the promoted product
        r = B.mul(self, U.FLOAT["exp2"][0](other))
        return r._a, r.dtype, r._device
    return _ldexp_float(self, other)


_ldexp_compute.result = _ldexp_float.result

BINARY = {
    "xlogy": B._family(B._float_compute(KM.xlogy)),
    "copysign": B._family(B._float_compute(np.copysign)),
    "ldexp": B._family(_ldexp_compute),
    "hypot": B._family(_float_only(_hypot, "hypot_cpu")),
    "logaddexp": B._family(_float_only(KM.logaddexp, "logaddexp_cpu")),
    "logaddexp2": B._family(_float_only(KM.logaddexp2, "logaddexp2_cpu")),
    "nextafter": B._family(_float_only(KM.nextafter, "nextafter_cpu", opmath=False)),
    "fmax": B._family(B._same_compute(np.fmax)),
    "fmin": B._family(B._same_compute(np.fmin)),
    "gcd": B._family(B._same_compute(np.gcd, "gcd_cpu", "gcd_cpu")),
    "lcm": B._family(B._same_compute(np.lcm, "lcm_cpu", "lcm_cpu")),
    "bitwise_left_shift": B._family(B._same_compute(KM.left_shift, "lshift_cpu", "lshift_cpu")),
    "bitwise_right_shift": B._family(B._same_compute(KM.right_shift, "rshift_cpu", "rshift_cpu")),
    "heaviside": B._family(_heaviside_compute),
}


# --- float_power: pow in float64 (decomposes into _to_copy and pow, which carry the autograd) ------------

def _double(x):
    if isinstance(x, Tensor):
        return x if x.dtype is D.float64 else aten._to_copy.default(x, dtype=D.float64)
    return float(x)


def float_power(self, exponent):
    if not isinstance(self, Tensor):
        return aten.pow.Scalar(_double(self), _double(exponent))
    if isinstance(exponent, Tensor):
        return aten.pow.Tensor_Tensor(_double(self), _double(exponent))
    return aten.pow.Tensor_Scalar(_double(self), _double(exponent))


def float_power_out(self, exponent, *, out):
    if isinstance(out, Tensor) and out.dtype is not D.float64:
        raise RuntimeError(f"the output given to float_power has dtype {C.tname(out.dtype)} but the operation's "
                           f"result requires dtype Double")
    if not isinstance(self, Tensor):
        return aten.pow.Scalar_out(_double(self), _double(exponent), out=out)
    if isinstance(exponent, Tensor):
        return aten.pow.Tensor_Tensor_out(_double(self), _double(exponent), out=out)
    return aten.pow.Tensor_Scalar_out(_double(self), _double(exponent), out=out)


def float_power_(self, exponent):
    if self.dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {C.tname(self.dtype)} but the operation's "
                           f"result requires dtype Double")
    if isinstance(exponent, Tensor):
        return aten.pow_.Tensor(self, _double(exponent))
    return aten.pow_.Scalar(self, _double(exponent))


def frexp(self):
    if not self.is_floating_point():
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = KM.frexp(self._a)
    return C.wrap(m, self._device), C.wrap(e, self._device)


# --- the tables -------------------------------------------------------------------------------------------

def _build():
    t = {}
    for name, (f, o, i) in FLOAT_FAMILIES.items():
        t[name], t[f"{name}.out"] = f, o
        if name != "special_i1":
            t[f"{name}_"] = i
    t["polygamma"], t["polygamma.out"], t["polygamma_"] = polygamma, polygamma_out, polygamma_
    t["logit.out"], t["logit_"] = logit_out, logit_
    t["frac"], t["frac.out"], t["frac_"] = FRAC
    for name, (f, o, _) in PREDICATES.items():
        t[name] = f
        if name != "isreal":
            t[f"{name}.out"] = o
    f, o, i = BINARY["xlogy"]
    t["xlogy.Tensor"] = t["xlogy.Scalar_Other"] = t["xlogy.Scalar_Self"] = f
    t["xlogy.OutTensor"] = t["xlogy.OutScalar_Self"] = t["xlogy.OutScalar_Other"] = o
    t["xlogy_.Tensor"] = t["xlogy_.Scalar_Other"] = i
    f, o, i = BINARY["copysign"]
    t["copysign.Tensor"] = t["copysign.Scalar"] = f
    t["copysign.out"] = t["copysign.Scalar_out"] = o
    t["copysign_.Tensor"] = t["copysign_.Scalar"] = i
    f, o, i = BINARY["ldexp"]
    t["ldexp.Tensor"], t["ldexp.out"], t["ldexp_"] = f, o, i
    for name in ("hypot", "nextafter", "gcd", "lcm", "heaviside"):
        t[name], t[f"{name}.out"], t[f"{name}_"] = BINARY[name]
    for name in ("logaddexp", "logaddexp2", "fmax", "fmin"):
        t[name], t[f"{name}.out"] = BINARY[name][:2]
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        f, o, i = BINARY[name]
        for ov in ("Tensor", "Tensor_Scalar", "Scalar_Tensor"):
            t[f"{name}.{ov}"] = f
            t[f"{name}.{ov}_out"] = o
        t[f"{name}_.Tensor"] = t[f"{name}_.Tensor_Scalar"] = i
    return t


KERNELS = {**_build(), "frexp.Tensor": frexp}
# float_power decomposes into _to_copy and pow (CompositeImplicitAutograd, as in torch)
COMPOSITE_IMPLICIT = {
    "float_power.Tensor_Tensor": float_power, "float_power.Tensor_Scalar": float_power,
    "float_power.Scalar": float_power, "float_power.Tensor_Tensor_out": float_power_out,
    "float_power.Tensor_Scalar_out": float_power_out, "float_power.Scalar_out": float_power_out,
    "float_power_.Tensor": float_power_, "float_power_.Scalar": float_power_,
}
