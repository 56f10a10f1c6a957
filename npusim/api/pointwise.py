"""``npusim.<fn>`` functions and Tensor methods of the extra elementwise math ops (acosh, erfc, lgamma,
xlogy, hypot, gcd, shifts...), plus the in-place spellings of existing ops torch also has
(``subtract_``, ``greater_``...), each picking the aten overload its arguments call for."""
from __future__ import annotations

from ..core.c10 import dtype as D
from .operators import _check_input, unary_function
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from . import special as _special

__all__ = []


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _type_name(x):
    return "Tensor" if isinstance(x, Tensor) else type(x).__name__


def _bad_combination(fname, args, signatures):
    got = ", ".join(_type_name(a) for a in args)
    lines = "".join(f" * {s}\n" for s in signatures)
    raise TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                    + lines)


def _ov(name, overload="default"):
    return getattr(getattr(aten, name), overload)


# --- unary ----------------------------------------------------------------------------------------------------

def _unary(name, op_name=None, has_out=True):
    return _export(unary_function(name, op_name, has_out))


# the unary ops and aliases (their Tensor methods are bound from these lists below)
_UNARY = ("acosh", "asinh", "atanh", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc", "deg2rad", "rad2deg",
          "frac", "isneginf", "isposinf", "signbit")
_ALIASES = (("arccosh", "acosh"), ("arcsinh", "asinh"), ("arctanh", "atanh"))
acosh = _unary("acosh")
asinh = _unary("asinh")
atanh = _unary("atanh")
erfc = _unary("erfc")
erfinv = _unary("erfinv")
lgamma = _unary("lgamma")
digamma = _unary("digamma")
i0 = _unary("i0")
sinc = _unary("sinc")
deg2rad = _unary("deg2rad")
rad2deg = _unary("rad2deg")
frac = _unary("frac")
isneginf = _unary("isneginf")
isposinf = _unary("isposinf")
signbit = _unary("signbit")
arccosh = _unary("arccosh", "acosh")
arcsinh = _unary("arcsinh", "asinh")
arctanh = _unary("arctanh", "atanh")
isreal = _unary("isreal", has_out=False)


@_export
def logit(input, eps=None, *, out=None):
    _check_input(input, "logit")
    if out is None:
        return aten.logit.default(input, eps)
    return aten.logit.out(input, eps, out=out)


@_export
def polygamma(n, input, *, out=None):
    _check_input(input, "polygamma", pos=2)
    if out is None:
        return aten.polygamma.default(n, input)
    return aten.polygamma.out(n, input, out=out)


@_export
def positive(input):
    """The input itself (torch refuses bool tensors)."""
    _check_input(input, "positive")
    if input.dtype is D.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


# --- binary ---------------------------------------------------------------------------------------------------

def _tensor_binary(name, argname="other"):
    """An op whose second operand must be a Tensor (no Scalar overload)."""
    f = _ov(name, "Tensor" if name == "ldexp" else "default")
    fo = _ov(name, "out")

    def fn(input, other, *, out=None):
        _check_input(input, name)
        _check_input(other, name, argname, 2)
        return f(input, other) if out is None else fo(input, other, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, {argname}, *, out=None) -> Tensor"
    return _export(fn)


hypot = _tensor_binary("hypot")
fmax = _tensor_binary("fmax")
fmin = _tensor_binary("fmin")
logaddexp = _tensor_binary("logaddexp")
logaddexp2 = _tensor_binary("logaddexp2")
nextafter = _tensor_binary("nextafter")
ldexp = _tensor_binary("ldexp")
gcd = _tensor_binary("gcd")
lcm = _tensor_binary("lcm")
heaviside = _tensor_binary("heaviside", "values")
igamma = _tensor_binary("igamma")
igammac = _tensor_binary("igammac")
mvlgamma = _export(_special.mvlgamma)

_SCALAR_SELF = ("(Tensor input, Tensor other, *, Tensor out = None)", "(Number self, Tensor other, *, Tensor out = None)",
                "(Tensor input, Number other, *, Tensor out = None)")


@_export
def xlogy(input, other, *, out=None):
    if isinstance(input, Tensor):
        if isinstance(other, Tensor):
            return aten.xlogy.Tensor(input, other) if out is None else aten.xlogy.OutTensor(input, other, out=out)
        return aten.xlogy.Scalar_Other(input, other) if out is None else \
            aten.xlogy.OutScalar_Other(input, other, out=out)
    if not isinstance(other, Tensor):
        _bad_combination("xlogy", (input, other), _SCALAR_SELF)
    return aten.xlogy.Scalar_Self(input, other) if out is None else aten.xlogy.OutScalar_Self(input, other, out=out)


@_export
def copysign(input, other, *, out=None):
    if not isinstance(input, Tensor):
        _bad_combination("copysign", (input, other), (_SCALAR_SELF[0], _SCALAR_SELF[2]))
    if isinstance(other, Tensor):
        return aten.copysign.Tensor(input, other) if out is None else aten.copysign.out(input, other, out=out)
    return aten.copysign.Scalar(input, other) if out is None else aten.copysign.Scalar_out(input, other, out=out)


@_export
def float_power(input, exponent, *, out=None):
    if isinstance(input, Tensor):
        if isinstance(exponent, Tensor):
            ops = (aten.float_power.Tensor_Tensor, aten.float_power.Tensor_Tensor_out)
        else:
            ops = (aten.float_power.Tensor_Scalar, aten.float_power.Tensor_Scalar_out)
    elif isinstance(exponent, Tensor):
        ops = (aten.float_power.Scalar, aten.float_power.Scalar_out)
    else:
        _bad_combination("float_power", (input, exponent), tuple(s.replace("other", "exponent")
                                                                 for s in _SCALAR_SELF))
    return ops[0](input, exponent) if out is None else ops[1](input, exponent, out=out)


def _shift(name):
    packet = getattr(aten, name)

    def fn(input, other, *, out=None):
        if isinstance(input, Tensor):
            ov = "Tensor" if isinstance(other, Tensor) else "Tensor_Scalar"
        elif isinstance(other, Tensor):
            ov = "Scalar_Tensor"
        else:
            _bad_combination(name, (input, other), _SCALAR_SELF)
        if out is None:
            return getattr(packet, ov)(input, other)
        return getattr(packet, ov + "_out")(input, other, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, other, *, out=None) -> Tensor"
    return _export(fn)


bitwise_left_shift = _shift("bitwise_left_shift")
bitwise_right_shift = _shift("bitwise_right_shift")


# --- Tensor methods ---------------------------------------------------------------------------------------------

def _bind(name, fn):
    fn.__name__ = fn.__qualname__ = name
    setattr(Tensor, name, fn)


def _bind_unary(name, op_name):
    setattr(Tensor, name, _ov(op_name).fn)


for _n in _UNARY + ("isreal",):
    _bind_unary(_n, _n)
for _n in _UNARY[:-3]:   # the predicates have no in-place form
    _bind_unary(_n + "_", _n + "_")
for _alias, _n in _ALIASES:
    _bind_unary(_alias, _n)
    _bind_unary(_alias + "_", _n + "_")
_bind("logit", lambda self, eps=None: aten.logit.default(self, eps))
_bind("logit_", lambda self, eps=None: aten.logit_.default(self, eps))
_bind("polygamma", lambda self, n: aten.polygamma.default(n, self))
_bind("polygamma_", lambda self, n: aten.polygamma_.default(self, n))
_bind("positive", positive)
_bind("mvlgamma", lambda self, p: _special.mvlgamma(self, p))
_bind("mvlgamma_", _special.mvlgamma_)


def _tensor_method(name, op, argname="other"):
    def method(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument '{argname}' (position 1) must be Tensor, not "
                            f"{other.__class__.__name__}")
        return op(self, other)
    _bind(name, method)


for _n in ("hypot", "fmax", "fmin", "logaddexp", "logaddexp2", "nextafter", "gcd", "lcm", "igamma", "igammac"):
    _tensor_method(_n, _ov(_n))
for _n in ("hypot_", "nextafter_", "gcd_", "lcm_", "ldexp_", "igamma_", "igammac_"):
    _tensor_method(_n, _ov(_n))
_tensor_method("ldexp", aten.ldexp.Tensor)
_tensor_method("heaviside", aten.heaviside.default, "values")
_tensor_method("heaviside_", aten.heaviside_.default, "values")


def _either(name, tensor_op, scalar_op):
    def method(self, other):
        return (tensor_op if isinstance(other, Tensor) else scalar_op)(self, other)
    _bind(name, method)


_either("xlogy", aten.xlogy.Tensor, aten.xlogy.Scalar_Other)
_either("xlogy_", aten.xlogy_.Tensor, aten.xlogy_.Scalar_Other)
_either("copysign", aten.copysign.Tensor, aten.copysign.Scalar)
_either("copysign_", aten.copysign_.Tensor, aten.copysign_.Scalar)
_either("float_power", aten.float_power.Tensor_Tensor, aten.float_power.Tensor_Scalar)
_either("float_power_", aten.float_power_.Tensor, aten.float_power_.Scalar)
for _n in ("bitwise_left_shift", "bitwise_right_shift"):
    _either(_n, getattr(aten, _n).Tensor, getattr(aten, _n).Tensor_Scalar)
    _either(_n + "_", getattr(aten, _n + "_").Tensor, getattr(aten, _n + "_").Tensor_Scalar)


def _shift_operator(op):
    def method(self, other):
        if isinstance(other, (Tensor, bool, int, float)):
            return op(self, other)
        return NotImplemented
    return method


Tensor.__lshift__ = _shift_operator(Tensor.bitwise_left_shift)
Tensor.__rshift__ = _shift_operator(Tensor.bitwise_right_shift)
Tensor.__ilshift__ = _shift_operator(Tensor.bitwise_left_shift_)
Tensor.__irshift__ = _shift_operator(Tensor.bitwise_right_shift_)
Tensor.__rlshift__ = _shift_operator(lambda self, other: aten.bitwise_left_shift.Scalar_Tensor(other, self))
Tensor.__rrshift__ = _shift_operator(lambda self, other: aten.bitwise_right_shift.Scalar_Tensor(other, self))

# in-place spellings torch has for existing ops
Tensor.subtract_ = Tensor.sub_
Tensor.multiply_ = Tensor.mul_
Tensor.true_divide_ = lambda self, other: aten.div_.Tensor(self, other)
Tensor.arctan2_ = Tensor.atan2_
Tensor.greater_ = Tensor.gt_
Tensor.greater_equal_ = Tensor.ge_
Tensor.less_ = Tensor.lt_
Tensor.less_equal_ = Tensor.le_
Tensor.not_equal_ = Tensor.ne_
