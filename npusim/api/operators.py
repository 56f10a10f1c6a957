"""The public operator functions (``npusim.add``, ``npusim.sum``, ...).

Each function has torch's Python signature and picks the aten overload the
arguments call for (functional or ``out=``, reduction over all dims or some,
...). The overloads' dispatch functions are bound once at import.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..core.c10 import dtype as D
from ..core import promotion, return_types
from ..core.factories import parse_size
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor, _wrap_dim

__all__ = []  # filled by _export


def _export(fn):
    __all__.append(fn.__name__)
    return fn


def _check_input(x, fname, argname="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _is_int(v) -> bool:
    """An int argument as torch's parser takes it (a bool is not one)."""
    return isinstance(v, int) and not isinstance(v, bool)


class _NoDim:
    """The default of a ``dim`` that torch's parser refuses as None (``squeeze(None)``, ``prod(None)``)."""

    def __repr__(self):
        return "<no dim>"


NO_DIM = _NoDim()


def _no_dim_none(fname, input, dim, **kw):
    """torch's TypeError when ``dim`` is given as None to a function with no Optional[int] dim overload."""
    if dim is None:
        got = ", ".join(["Tensor" if isinstance(input, Tensor) else type(input).__name__, "NoneType"]
                        + [f"{k}={type(v).__name__}" for k, v in kw.items()])
        raise TypeError(f"{fname}() received an invalid combination of arguments - got ({got}): dim must be an int, "
                        "not None")
    return dim is NO_DIM


def _ov(name, overload="default"):
    return getattr(getattr(aten, name), overload).fn


# --- elementwise: generated -----------------------------------------------------------

def unary_function(name, op_name=None, has_out=True):
    """``npusim.<name>(input, *, out=None)``: the aten op's default overload, or its ``out`` one."""
    op_name = op_name or name
    f = _ov(op_name)
    fo = _ov(op_name, "out") if has_out else None

    def fn(input, *, out=None):
        _check_input(input, name)
        if out is None:
            return f(input)
        if fo is None:
            raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
        return fo(input, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, *, out=None) -> Tensor"
    return fn


def _unary(name, op_name=None, has_out=True):
    return _export(unary_function(name, op_name, has_out))


neg = _unary("neg")
abs = _unary("abs")
exp = _unary("exp")
log = _unary("log")
log1p = _unary("log1p")
expm1 = _unary("expm1")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
sign = _unary("sign")
sgn = _unary("sgn")
angle = _unary("angle")
reciprocal = _unary("reciprocal")
exp2 = _unary("exp2")
log2 = _unary("log2")
log10 = _unary("log10")
sinh = _unary("sinh")
cosh = _unary("cosh")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
logical_not = _unary("logical_not")
bitwise_not = _unary("bitwise_not")
square = _unary("square")
# torch's aliases: the same op under another name
negative = _unary("negative", "neg")
absolute = _unary("absolute", "abs")
fix = _unary("fix", "trunc")
arcsin = _unary("arcsin", "asin")
arccos = _unary("arccos", "acos")
arctan = _unary("arctan", "atan")
# no out= form
isnan = _unary("isnan", has_out=False)
isinf = _unary("isinf", has_out=False)
isfinite = _unary("isfinite", has_out=False)
relu = _unary("relu", has_out=False)


_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a "
             "mask, use the `~` or `logical_not()` operator instead.")


def _number_input(input, other, true_division=False):
    """torch's parser takes a number for ``input`` of add, sub, mul, div and floor_divide, as a 0-d tensor that
    promotes as the number would (it never outranks ``other``) and is cast to the op's dtype without a check."""
    if input.__class__ not in (int, float, bool) or \
            input.__class__ is int and not -2 ** 63 <= input < 2 ** 64:
        return input
    if isinstance(other, Tensor):
        if input.__class__ is int and input >= 2 ** 63 and other.dtype is D.bool:
            raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                               "Bool and UInt64")   # torch's number is uint64 there
        dt, device = promotion.result_type(other, input), other.device
    else:
        dt, device = D.scalar_dtype(input), None
    if true_division and not dt.is_floating_point:
        dt = D.get_default_dtype()
    if input.__class__ is bool:
        wide = D.bool
    elif input.__class__ is float or dt.is_floating_point:
        input, wide = float(input), D.float64
    else:
        input, wide = (input - 2 ** 64 if input >= 2 ** 63 else input), D.int64
    t = _ov("scalar_tensor")(input, dtype=wide, device=device)
    return t if wide is dt else aten._to_copy.default(t, dtype=dt)


def _binary(name, functional=("Tensor",), out="out", op_name=None, tensor_other=False, export=True,
            number_input=False):
    op_name = op_name or name
    f = _ov(op_name, functional[0])
    fo = _ov(op_name, out)

    def fn(input, other, *, out=None):
        if number_input:
            input = _number_input(input, other)
        _check_input(input, name)
        if tensor_other:  # ops with no Scalar overload refuse numbers, as torch's argument parser
            _check_input(other, name, "other", 2)
        if out is None:
            return f(input, other)
        return fo(input, other, out=out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(input, other, *, out=None) -> Tensor"
    return _export(fn) if export else fn


mul = _binary("mul", number_input=True)
multiply = _binary("multiply", op_name="mul", number_input=True)
_remainder = _binary("remainder", out="Tensor_out", export=False)   # the public one, below, also takes a number first


@_export
def remainder(input, other, *, out=None):
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        # remainder(Scalar self, Tensor other): a number divided by each element
        if out is None:
            return _ov("remainder", "Scalar_Tensor")(input, other)
        return _ov("remainder", "Tensor_out")(input, other, out=out)
    return _remainder(input, other, out=out)


fmod = _binary("fmod", out="Tensor_out")
floor_divide = _binary("floor_divide", ("default",), number_input=True)
maximum = _binary("maximum", ("default",), tensor_other=True)
minimum = _binary("minimum", ("default",), tensor_other=True)
atan2 = _binary("atan2", ("default",), tensor_other=True)
arctan2 = _binary("arctan2", ("default",), op_name="atan2", tensor_other=True)
eq = _binary("eq", out="Tensor_out")
ne = _binary("ne", out="Tensor_out")
lt = _binary("lt", out="Tensor_out")
le = _binary("le", out="Tensor_out")
gt = _binary("gt", out="Tensor_out")
ge = _binary("ge", out="Tensor_out")
greater = _binary("greater", out="Tensor_out", op_name="gt")
greater_equal = _binary("greater_equal", out="Tensor_out", op_name="ge")
less = _binary("less", out="Tensor_out", op_name="lt")
less_equal = _binary("less_equal", out="Tensor_out", op_name="le")
not_equal = _binary("not_equal", out="Tensor_out", op_name="ne")
logical_and = _binary("logical_and", ("default",), tensor_other=True)
logical_or = _binary("logical_or", ("default",), tensor_other=True)
logical_xor = _binary("logical_xor", ("default",), tensor_other=True)
bitwise_and = _binary("bitwise_and", out="Tensor_out")
bitwise_or = _binary("bitwise_or", out="Tensor_out")
bitwise_xor = _binary("bitwise_xor", out="Tensor_out")

_add, _add_out = _ov("add", "Tensor"), _ov("add", "out")
_sub, _sub_out = _ov("sub", "Tensor"), _ov("sub", "out")
_div, _div_out = _ov("div", "Tensor_mode"), _ov("div", "out_mode")
_pow, _pow_out, _pow_s, _pow_s_out = (_ov("pow", "Tensor_Tensor"), _ov("pow", "Tensor_Tensor_out"),
                                      _ov("pow", "Scalar"), _ov("pow", "Scalar_out"))


@_export
def add(input, other, *, alpha=1, out=None):
    input = _number_input(input, other)
    _check_input(input, "add")
    if out is None:
        return _add(input, other, alpha=alpha)
    return _add_out(input, other, alpha=alpha, out=out)


@_export
def sub(input, other, *, alpha=1, out=None):
    if input.__class__ is bool and isinstance(other, Tensor):
        raise RuntimeError(_SUB_BOOL)
    input = _number_input(input, other)
    _check_input(input, "sub")
    if out is None:
        return _sub(input, other, alpha=alpha)
    return _sub_out(input, other, alpha=alpha, out=out)


subtract = sub
__all__.append("subtract")


@_export
def rsub(input, other, *, alpha=1):
    _check_input(input, "rsub")
    return _ov("rsub", "Tensor")(input, other, alpha=alpha)


@_export
def div(input, other, *, rounding_mode=None, out=None):
    input = _number_input(input, other, true_division=rounding_mode is None)
    _check_input(input, "div")
    if out is None:
        return _div(input, other, rounding_mode=rounding_mode)
    return _div_out(input, other, rounding_mode=rounding_mode, out=out)


divide = div
__all__.append("divide")


@_export
def true_divide(dividend, divisor, *, out=None):
    return div(dividend, divisor, out=out)


@_export
def pow(input, exponent, *, out=None):  # noqa: A001 - torch's name
    if not isinstance(input, Tensor):
        if not isinstance(exponent, Tensor):
            raise TypeError("pow(): expected at least one Tensor argument")
        return _pow_s(input, exponent) if out is None else _pow_s_out(input, exponent, out=out)
    if exponent.__class__ in _NUMBER_CLASSES:   # torch's argument parser picks the Scalar overload for a number
        return _pow_ts(input, exponent) if out is None else _pow_ts_out(input, exponent, out=out)
    return _pow(input, exponent) if out is None else _pow_out(input, exponent, out=out)


_pow_ts, _pow_ts_out = _ov("pow", "Tensor_Scalar"), _ov("pow", "Tensor_Scalar_out")
_NUMBER_CLASSES = (int, float, bool)


@_export
def round(input, *, decimals=None, out=None):  # noqa: A001
    _check_input(input, "round")
    # without decimals torch calls round.default (integral inputs are copied), with them round.decimals
    if decimals is None:
        return _ov("round")(input) if out is None else _ov("round", "out")(input, out=out)
    if out is None:
        return _ov("round", "decimals")(input, decimals=decimals)
    return _ov("round", "decimals_out")(input, decimals=decimals, out=out)


def _check_clamp_bounds(name, args, min, max):  # noqa: A002
    """torch's clamp overloads take two tensor bounds or two number bounds, never one of each (a 0-d tensor
    next to a number reads as a number); returns the bounds to use."""
    mixed = (isinstance(min, Tensor) and max is not None and not isinstance(max, Tensor)) or \
        (isinstance(max, Tensor) and min is not None and not isinstance(min, Tensor))
    if mixed and builtins.all(not isinstance(b, Tensor) or b.dim() == 0 for b in (min, max)):
        return tuple(b.item() if isinstance(b, Tensor) else b for b in (min, max))
    if mixed:
        got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in args)
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (Tensor min = None, Tensor max = None)\n * (Number min = None, Number max = None)\n")
    return min, max


@_export
def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    _check_input(input, "clamp")
    min, max = _check_clamp_bounds("clamp", (input, min, max), min, max)  # noqa: A001
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    if out is None:
        return _ov("clamp", "Tensor" if tensors else "default")(input, min, max)
    return _ov("clamp", "Tensor_out" if tensors else "out")(input, min, max, out=out)


clip = clamp
__all__.append("clip")


@_export
def clamp_min(input, min):  # noqa: A002
    return clamp(input, min, None)


@_export
def clamp_max(input, max):  # noqa: A002
    return clamp(input, None, max)


@_export
def lerp(input, end, weight, *, out=None):
    _check_input(input, "lerp")
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp() received an invalid combination of arguments - got ({type(end).__name__}, "
                        f"{type(weight).__name__}): end must be a Tensor")
    ov = "Tensor" if isinstance(weight, Tensor) else "Scalar"
    if out is None:
        return _ov("lerp", ov)(input, end, weight)
    return _ov("lerp", ov + "_out")(input, end, weight, out=out)


@_export
def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if out is None:
        return _ov("where", "self")(condition, input, other)
    # the out= overload takes tensors only
    for name, pos, v in (("input", 2, input), ("other", 3, other)):
        if not isinstance(v, Tensor):
            raise TypeError(f"where(): argument '{name}' (position {pos}) must be Tensor, not {type(v).__name__}")
    return _ov("where", "self_out")(condition, input, other, out=out)


@_export
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    _check_input(input, "nan_to_num")
    if out is None:
        return _ov("nan_to_num")(input, nan, posinf, neginf)
    return _ov("nan_to_num", "out")(input, nan, posinf, neginf, out=out)


@_export
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    _check_input(input, "isclose")
    _check_input(other, "isclose", "other", 2)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype} did not match {other.dtype}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    if not (input.is_floating_point() or input.is_complex()):
        return eq(input, other)
    close = le(abs(sub(input, other)), add(mul(abs(other), rtol), atol))
    close = logical_or(close, eq(input, other))
    if equal_nan:
        close = logical_or(close, logical_and(isnan(input), isnan(other)))
    return close


@_export
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    return builtins.bool(all(isclose(input, other, rtol, atol, equal_nan)).item())


@_export
def equal(input, other) -> bool:
    _check_input(input, "equal")
    if input.shape != other.shape:
        return False
    return builtins.bool(all(eq(input, other)).item())


# --- reductions ---------------------------------------------------------------------------

def _dims(dim):
    if dim is None or isinstance(dim, (list, tuple)):
        return dim
    if dim.__class__ is int and not -2 ** 63 <= dim < 2 ** 63:   # one int is parsed as an int64
        raise ValueError("Overflow when unpacking long long")
    return [dim]


def _check_keepdim(name, keepdim):
    """torch parses every argument before any check: a keepdim that is not a bool fails first."""
    if keepdim.__class__ is not bool and not isinstance(keepdim, np.bool_):
        raise TypeError(f"{name}(): argument 'keepdim' must be bool, not {type(keepdim).__name__}")


def _keepdim_needs_dim(name, dim, keepdim):
    """torch's TypeError for keepdim given without dim (its whole-tensor overload has no keepdim)."""
    if dim is NO_DIM:
        if keepdim is not NO_DIM:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (keepdim="
                            f"{type(keepdim).__name__}, ): keepdim needs dim")
        return None, False
    return dim, (False if keepdim is NO_DIM else keepdim)


def _parsed_dtype(name, dtype):
    """``dtype`` as a dtype, or torch's parser's TypeError (before any check on the values)."""
    dtype = D.as_dtype(dtype)
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"{name}(): dtype must be npusim.dtype, not {type(dtype).__name__}")
    return dtype


@_export
def sum(input, dim=NO_DIM, keepdim=NO_DIM, *, dtype=None, out=None):  # noqa: A001
    _check_input(input, "sum")
    dtype = _parsed_dtype("sum", dtype)
    dim, keepdim = _keepdim_needs_dim("sum", dim, keepdim)
    if dim is None and keepdim is False and out is None:
        return _ov("sum")(input, dtype=dtype)
    if out is None:
        return _ov("sum", "dim_IntList")(input, _dims(dim), keepdim, dtype=dtype)
    return _ov("sum", "IntList_out")(input, _dims(dim), keepdim, dtype=dtype, out=out)


@_export
def mean(input, dim=NO_DIM, keepdim=NO_DIM, *, dtype=None, out=None):
    _check_input(input, "mean")
    dtype = _parsed_dtype("mean", dtype)
    dim, keepdim = _keepdim_needs_dim("mean", dim, keepdim)
    if dim is None and keepdim is False and out is None:
        return _ov("mean")(input, dtype=dtype)
    if out is None:
        return _ov("mean", "dim")(input, _dims(dim), keepdim, dtype=dtype)
    return _ov("mean", "out")(input, _dims(dim), keepdim, dtype=dtype, out=out)


@_export
def prod(input, dim=NO_DIM, keepdim=NO_DIM, *, dtype=None, out=None):
    _check_input(input, "prod")
    dtype = D.as_dtype(dtype)
    if dtype is not None and not isinstance(dtype, D.dtype):   # torch parses it before any check
        raise TypeError(f"prod(): argument 'dtype' must be npusim.dtype, not {type(dtype).__name__}")
    if _no_dim_none("prod", input, dim):
        if keepdim is not NO_DIM:
            raise TypeError('prod() missing 1 required positional arguments: "dim"')
        if out is not None:
            raise TypeError("prod(): dim must be an int when keepdim or out is given")
        return _ov("prod")(input, dtype=dtype)
    keepdim = False if keepdim is NO_DIM else keepdim
    if out is None:
        return _ov("prod", "dim_int")(input, dim, keepdim, dtype=dtype)
    return _ov("prod", "int_out")(input, dim, keepdim, dtype=dtype, out=out)


def _minmax(name, tuple_type):
    full, dim_ov, dim_out_ov, other_name = _ov(name), _ov(name, "dim"), _ov(name, f"dim_{name}"), \
        ("maximum" if name == "max" else "minimum")

    def fn(input, dim=NO_DIM, keepdim=NO_DIM, *, out=None):
        _check_input(input, name)
        if isinstance(dim, Tensor):
            return globals()[other_name](input, dim, out=out)
        if _no_dim_none(name, input, dim):
            if out is not None and not isinstance(out, Tensor):
                raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                                f"out={type(out).__name__}): without dim, out must be a Tensor")
            if keepdim is not NO_DIM:   # torch's max(input) overload has no keepdim, even keepdim=False
                raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, "
                                f"keepdim={type(keepdim).__name__}): dim is required with keepdim")
            if out is not None:
                r = full(input)
                if isinstance(out, Tensor) and not D.can_cast(r.dtype, out.dtype):
                    raise RuntimeError("Expected canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType("
                                       "out.dtype())) to be true, but got false.  (Could this error message be "
                                       "improved?  If so, please report an enhancement request to PyTorch.)")
                return _copy_into(out, r)
            return full(input)
        keepdim = False if keepdim is NO_DIM else keepdim
        if out is None:
            return tuple_type(*dim_ov(input, dim, keepdim))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"{name}(): argument 'out' must be a tuple of two Tensors")
        # the schemas name the outs (max, max_values) and (min, min_indices)
        kw = {name: out[0], ("max_values" if name == "max" else "min_indices"): out[1]}
        return tuple_type(*dim_out_ov(input, dim, keepdim, **kw))

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


def scalar_tensor_like(value, like):
    """A Python number as a 0-d tensor of its own dtype on ``like``'s device."""
    return _ov("scalar_tensor")(value, dtype=D.scalar_dtype(value), device=like.device)


def _copy_into(out, r):
    from ..core.dispatch.ops_namespace import aten as _aten
    if out.shape != r.shape:
        _aten.resize_.default(out, r.shape)
    return _aten.copy_.default(out, r)


max = _minmax("max", return_types.max)  # noqa: A001
min = _minmax("min", return_types.min)  # noqa: A001


def _amax_like(name):
    f, fo = _ov(name), _ov(name, "out")

    def fn(input, dim=(), keepdim=False, *, out=None):
        _check_input(input, name)
        if dim.__class__ is int and not -2 ** 63 <= dim < 2 ** 63:   # torch's parser reads one int as int64
            raise ValueError("Overflow when unpacking long long")
        dims = [] if dim is None else (list(dim) if isinstance(dim, (list, tuple)) else [dim])
        return f(input, dims, keepdim) if out is None else fo(input, dims, keepdim, out=out)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


amax = _amax_like("amax")
amin = _amax_like("amin")


def _arg_like(name):
    f, fo = _ov(name), _ov(name, "out")

    def fn(input, dim=None, keepdim=False, *, out=None):
        _check_input(input, name)
        return f(input, dim, keepdim) if out is None else fo(input, dim, keepdim, out=out)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


argmax = _arg_like("argmax")
argmin = _arg_like("argmin")


def _var_like(name):
    f, fo = _ov(name, "correction"), _ov(name, "correction_out")

    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
        _check_input(input, name)
        if isinstance(dim, bool) and unbiased is None:  # var(x, False): the legacy unbiased flag
            dim, unbiased = None, dim
        if unbiased is not None:
            if correction is not None:
                raise RuntimeError(f"{name}: can't specify both unbiased and correction")
            correction = 1 if unbiased else 0
        _check_keepdim(name, keepdim)
        dims = _dims(dim)
        if out is None:
            return f(input, dims, correction=correction, keepdim=keepdim)
        return fo(input, dims, correction=correction, keepdim=keepdim, out=out)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


var = _var_like("var")
std = _var_like("std")


def _var_mean_like(name):
    f = _ov(name, "correction")

    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        _check_input(input, name)
        if isinstance(dim, bool) and unbiased is None:
            dim, unbiased = None, dim
        if unbiased is not None:
            correction = 1 if unbiased else 0
        return tuple(f(input, _dims(dim), correction=correction, keepdim=keepdim))

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


var_mean = _var_mean_like("var_mean")
std_mean = _var_mean_like("std_mean")


@_export
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    _check_input(input, "norm")
    _check_keepdim("norm", keepdim)
    if not (p is None or isinstance(p, (str, int, float)) or isinstance(p, np.generic)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(p).__name__}")
    if p.__class__ is int and not -2 ** 63 <= p < 2 ** 64:   # torch's parser refuses it before any check
        raise OverflowError("can't convert negative int to unsigned" if p < 0 else "int too big to convert")
    if builtins.any(d.__class__ is int and not -2 ** 63 <= d < 2 ** 63
                    for d in (dim if isinstance(dim, (list, tuple)) else (dim,))):
        raise TypeError("linalg_vector_norm(): argument 'dim' failed to unpack the object at pos 1 with error "
                        "\"Overflow when unpacking long long\"")
    dtype = D.as_dtype(dtype)
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"linalg_vector_norm(): argument 'dtype' must be npusim.dtype, not {type(dtype).__name__}")
    if not (dim is None or _is_int(dim) or isinstance(dim, (list, tuple)) and builtins.all(_is_int(d) for d in dim)):
        raise TypeError(f"linalg_vector_norm(): argument 'dim' (position 3) must be tuple of ints, not "
                        f"{type(dim).__name__}")
    if isinstance(p, str):
        if p != "fro":
            raise RuntimeError(f"norm(): p={p!r} is not supported by npusim (use 'fro' or a number)")
        p = 2
    elif p is None:
        p = 2
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # torch.norm: linalg.vector_norm's check
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{D.SCALAR_TYPE_NAME[input.dtype]}")
    if dim is None and not keepdim and out is None and dtype is None:
        return _ov("norm", "Scalar")(input, p)
    dims = list(range(input.dim())) if dim is None else (list(dim) if isinstance(dim, (list, tuple)) else [dim])
    if out is not None:
        return _ov("norm", "out")(input, p, dims, keepdim, out=out)
    if dtype is not None:
        return _ov("norm", "ScalarOpt_dim_dtype")(input, p, dims, keepdim, dtype=dtype)
    return _ov("norm", "ScalarOpt_dim")(input, p, dims, keepdim)


def _all_any(name):
    f, f_dim, f_dims, f_out = _ov(name), _ov(name, "dim"), _ov(name, "dims"), _ov(name, "out")

    def fn(input, dim=None, keepdim=False, *, out=None):
        _check_input(input, name)
        _check_keepdim(name, keepdim)
        if out is not None:
            if dim is not None and not isinstance(dim, (list, tuple)):
                return f_out(input, dim, keepdim, out=out)
            if isinstance(out, Tensor):
                if out.dtype is not D.bool and out.dtype is not D.uint8:
                    raise RuntimeError(f"{name} only supports bool tensor for result, got: "
                                       f"{D.SCALAR_TYPE_NAME[out.dtype]}")
                if out.dtype is D.uint8:
                    input = input.to(D.uint8)  # torch computes in a uint8 out's dtype (0.5 -> 0)
        if dim is None and not keepdim:
            r = f(input)
        elif isinstance(dim, (list, tuple)) or dim is None:
            r = f_dims(input, dim, keepdim)
        else:
            r = f_dim(input, dim, keepdim)
        return r if out is None else _copy_into(out, r)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


all = _all_any("all")  # noqa: A001
any = _all_any("any")  # noqa: A001


@_export
def logsumexp(input, dim, keepdim=False, *, out=None):
    _check_input(input, "logsumexp")
    dims = list(dim) if isinstance(dim, (list, tuple)) else _dims(dim)
    return _ov("logsumexp")(input, dims, keepdim) if out is None else \
        _ov("logsumexp", "out")(input, dims, keepdim, out=out)


def _cum(name):
    f, fo = _ov(name), _ov(name, "out")

    def fn(input, dim, *, dtype=None, out=None):
        _check_input(input, name)
        dtype = _parsed_dtype(name, dtype)
        return f(input, dim, dtype=dtype) if out is None else fo(input, dim, dtype=dtype, out=out)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


cumsum = _cum("cumsum")
cumprod = _cum("cumprod")


@_export
def softmax(input, dim, dtype=None):
    _check_input(input, "softmax")
    dtype = _parsed_dtype("softmax", dtype)
    return _ov("softmax", "int")(input, dim, dtype)


@_export
def log_softmax(input, dim, dtype=None):
    _check_input(input, "log_softmax")
    dtype = _parsed_dtype("log_softmax", dtype)
    return _ov("log_softmax", "int")(input, dim, dtype)


@_export
def count_nonzero(input, dim=None):
    _check_input(input, "count_nonzero")
    return sum(ne(input, 0), dim)


# --- linear algebra ---------------------------------------------------------------------------

def _mat(name, arg2):
    f, fo = _ov(name), _ov(name, "out")

    def fn(input, other, *, out=None):
        _check_input(input, name)
        _check_input(other, name, arg2, 2)
        return f(input, other) if out is None else fo(input, other, out=out)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


matmul = _mat("matmul", "other")
mm = _mat("mm", "mat2")
bmm = _mat("bmm", "mat2")
dot = _mat("dot", "tensor")
mv = _mat("mv", "vec")


@_export
def vdot(input, other, *, out=None):
    if out is None:
        return _ov("vdot")(input, other)
    return _ov("dot", "out")(input, other, out=out)  # real dtypes only: vdot's out= checks are dot's


@_export
def outer(input, vec2, *, out=None):
    r = _ov("outer")(input, vec2)
    return r if out is None else _copy_into(out, r)


ger = outer
__all__.append("ger")


@_export
def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    if out is None:
        return _ov("addmm")(input, mat1, mat2, beta=beta, alpha=alpha)
    return _ov("addmm", "out")(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


@_export
def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    r = _ov("addmv")(input, mat, vec, beta=beta, alpha=alpha)
    return r if out is None else _copy_into(out, r)


@_export
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    r = _ov("baddbmm")(input, batch1, batch2, beta=beta, alpha=alpha)
    return r if out is None else _copy_into(out, r)


@_export
def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    r = _ov("addbmm")(input, batch1, batch2, beta=beta, alpha=alpha)
    return r if out is None else _copy_into(out, r)


@_export
def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    r = _ov("addr")(input, vec1, vec2, beta=beta, alpha=alpha)
    return r if out is None else _copy_into(out, r)


def addc_args(name, tensor1, tensor2, rest, value, first):
    """(tensor1, tensor2, value) of addcmul/addcdiv, from torch's signature or its deprecated one with the value
    first (``t.addcmul_(0.5, a, b)``); a non-Tensor operand is torch's TypeError."""
    if rest:
        if len(rest) > 1 or isinstance(tensor1, Tensor):
            raise TypeError(f"{name}() takes 2 positional arguments but {2 + len(rest)} were given")
        tensor1, tensor2, value = tensor2, rest[0], tensor1
    for pos, (argname, v) in enumerate((("tensor1", tensor1), ("tensor2", tensor2)), first):
        if not isinstance(v, Tensor):
            raise TypeError(f"{name}(): argument '{argname}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    return tensor1, tensor2, value


@_export
def addcmul(input, tensor1, tensor2, *args, value=1, out=None):
    _check_input(input, "addcmul")
    tensor1, tensor2, value = addc_args("addcmul", tensor1, tensor2, args, value, 2)
    if out is None:
        return _ov("addcmul")(input, tensor1, tensor2, value=value)
    return _ov("addcmul", "out")(input, tensor1, tensor2, value=value, out=out)


@_export
def addcdiv(input, tensor1, tensor2, *args, value=1, out=None):
    _check_input(input, "addcdiv")
    tensor1, tensor2, value = addc_args("addcdiv", tensor1, tensor2, args, value, 2)
    if out is None:
        return _ov("addcdiv")(input, tensor1, tensor2, value=value)
    return _ov("addcdiv", "out")(input, tensor1, tensor2, value=value, out=out)


@_export
def cross(input, other, dim=None, *, out=None):
    r = _ov("cross")(input, other, dim)
    return r if out is None else _copy_into(out, r)


@_export
def tensordot(a, b, dims=2, out=None):
    """Contract the last ``dims`` dims of a with the first of b, or the dims listed as ([a dims], [b dims])."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
    elif isinstance(dims, Tensor):
        dims = dims.tolist()
        dims_a, dims_b = ([dims[0]], [dims[1]]) if isinstance(dims[0], int) else (list(dims[0]), list(dims[1]))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    r = _ov("tensordot")(a, b, dims_a, dims_b)
    return r if out is None else _copy_into(out, r)


@_export
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    return _ov("cdist")(x1, x2, p, None)


@_export
def dist(input, other, p=2):
    return _ov("dist")(input, other, p)


def _einsum_subscript(n):
    if n is Ellipsis:
        return "..."
    if isinstance(n, int) and 0 <= n < 52:
        return chr(ord("A") + n) if n < 26 else chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


@_export
def einsum(*args):
    """einsum(equation, *operands) or einsum(op1, sublist1, op2, sublist2, ..., [sublist_out])."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if isinstance(args[0], Tensor):
        # the sublist format: operands interleaved with their subscripts, the output's last (optional)
        equation = ",".join("".join(_einsum_subscript(s) for s in sub) for sub in args[1::2])
        if len(args) % 2 == 1:
            equation += "->" + "".join(_einsum_subscript(s) for s in args[-1])
            operands = args[:-1:2]
        else:
            operands = args[::2]
    else:
        equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        return einsum(equation, *operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not {type(equation).__name__}")
    return _ov("einsum")(equation, list(operands))


# --- joining and splitting ----------------------------------------------------------------------

@_export
def cat(tensors, dim=0, *, out=None, axis=None):
    if axis is not None:  # NumPy's name, which torch accepts too
        dim = axis
    return _ov("cat")(tensors, dim) if out is None else _ov("cat", "out")(tensors, dim, out=out)


concat = concatenate = cat
__all__ += ["concat", "concatenate"]


@_export
def stack(tensors, dim=0, *, out=None, axis=None):
    if axis is not None:  # NumPy's name, which torch accepts too
        dim = axis
    return _ov("stack")(tensors, dim) if out is None else _ov("stack", "out")(tensors, dim, out=out)


def _stack_list(tensors, name):
    """torch's checks on the list of a stacking function (hstack, vstack, ...)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")


@_export
def hstack(tensors, *, out=None):
    _stack_list(tensors, "hstack")
    ts = [_at_least(t, 1) for t in tensors]
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1, out=out)


@_export
def vstack(tensors, *, out=None):
    _stack_list(tensors, "vstack")
    return cat([_at_least(t, 2) for t in tensors], 0, out=out)


def _at_least(t, n):
    return t.reshape([1] * (n - t.dim()) + list(t.shape)) if t.dim() < n else t


def _at_least_nd(name, n):
    def fn(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], Tensor):
            return _at_least(tensors[0], n)
        ts = tuple(tensors[0]) if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
        if len(tensors) == 1 and not ts and not isinstance(tensors[0], (list, tuple)) or \
                not builtins.all(isinstance(t, Tensor) for t in ts):
            got = ", ".join(type(t).__name__ for t in tensors)
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected "
                            "one of:\n * (Tensor input)\n * (tuple of Tensors tensors)\n")
        return tuple(_at_least(t, n) for t in ts)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"{name}(*tensors): each tensor with at least {n} dims; a tuple unless given one tensor"
    return _export(fn)


atleast_1d = _at_least_nd("atleast_1d", 1)
atleast_2d = _at_least_nd("atleast_2d", 2)


@_export
def split(tensor, split_size_or_sections, dim=0):
    _check_input(tensor, "split", "tensor")
    if isinstance(split_size_or_sections, (list, tuple)):
        return tuple(_ov("split_with_sizes")(tensor, list(split_size_or_sections), dim))
    return tuple(_ov("split", "Tensor")(tensor, split_size_or_sections, dim))


@_export
def split_with_sizes(input, split_sizes, dim=0):
    _check_input(input, "split_with_sizes")
    if not isinstance(split_sizes, (list, tuple)):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not "
                        f"{type(split_sizes).__name__}")
    return tuple(_ov("split_with_sizes")(input, split_sizes, dim))


@_export
def chunk(input, chunks, dim=0):
    _check_input(input, "chunk")
    return tuple(_ov("chunk")(input, chunks, dim))


@_export
def unbind(input, dim=0):
    _check_input(input, "unbind")
    return tuple(_ov("unbind", "int")(input, dim))


# --- indexing, sorting and friends ----------------------------------------------------------------

@_export
def gather(input, dim, index, *, sparse_grad=False, out=None):
    _check_input(input, "gather")
    return _ov("gather")(input, dim, index, sparse_grad=sparse_grad) if out is None else \
        _ov("gather", "out")(input, dim, index, sparse_grad=sparse_grad, out=out)


@_export
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    _check_input(input, "scatter")
    if src is None and value is None:
        raise TypeError("scatter(): expected a 'src' tensor or a scalar 'value'")
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is not None:
        return _ov("scatter", "src" if reduce is None else "reduce")(
            input, dim, index, src, **({} if reduce is None else {"reduce": reduce}))
    return _ov("scatter", "value" if reduce is None else "value_reduce")(
        input, dim, index, value, **({} if reduce is None else {"reduce": reduce}))


@_export
def scatter_add(input, dim, index, src, *, out=None):
    _check_input(input, "scatter_add")
    return _ov("scatter_add")(input, dim, index, src) if out is None else \
        _ov("scatter_add", "out")(input, dim, index, src, out=out)


@_export
def index_select(input, dim, index, *, out=None):
    _check_input(input, "index_select")
    _check_input(index, "index_select", "index", 3)
    return _ov("index_select")(input, dim, index) if out is None else \
        _ov("index_select", "out")(input, dim, index, out=out)


@_export
def masked_select(input, mask, *, out=None):
    _check_input(input, "masked_select")
    return _ov("masked_select")(input, mask) if out is None else \
        _ov("masked_select", "out")(input, mask, out=out)


@_export
def masked_fill(input, mask, value):
    _check_input(input, "masked_fill")
    return _ov("masked_fill", "Tensor" if isinstance(value, Tensor) else "Scalar")(input, mask, value)


@_export
def nonzero(input, *, out=None, as_tuple=False):
    _check_input(input, "nonzero")
    if as_tuple:
        if out is not None:
            raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
        # a 0-dim input counts as 1-D here, as in torch
        r = _ov("nonzero")(input.reshape(1) if input.dim() == 0 else input)
        return tuple(r.unbind(1))
    return _ov("nonzero")(input) if out is None else _ov("nonzero", "out")(input, out=out)


@_export
def argwhere(input):
    return nonzero(input)


def _index_put_args(fname, indices, values, first):
    """torch's parser checks for index_put: a tuple of Tensors (no None) and a Tensor of values.

    ``first`` is the 0-based position of ``indices``: 1 for the function, 0 for the method.
    """
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{fname}(): argument 'indices' (position {first + 1}) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {first}, but got {type(t).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"{fname}(): argument 'values' (position {first + 2}) must be Tensor, not "
                        f"{type(values).__name__}")
    return list(indices)


@_export
def index_put(input, indices, values, accumulate=False):
    _check_input(input, "index_put")
    return _ov("index_put")(input, _index_put_args("index_put", indices, values, 1), values, accumulate)


def _out_pair(out, fname, position):
    """The (values, indices) out= of sort-like ops, checked as torch's argument parser does."""
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{fname}(): argument 'out' must be tuple of Tensors, not {type(out).__name__}")
    if len(out) != 2:
        raise TypeError(f"expected tuple of 2 elements but got {len(out)}")
    for i, t in enumerate(out):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {position}, but got {type(t).__name__}")
    return out


@_export
def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    _check_input(input, "sort")
    if out is None:
        return return_types.sort(*_ov("sort", "stable")(input, stable=stable, dim=dim, descending=descending))
    values, indices = _out_pair(out, "sort", 3)
    return return_types.sort(*_ov("sort", "values_stable")(input, stable=stable, dim=dim, descending=descending,
                                                            values=values, indices=indices))


@_export
def argsort(input, dim=-1, descending=False, *, stable=False):
    _check_input(input, "argsort")
    return _ov("argsort", "stable")(input, stable=stable, dim=dim, descending=descending)


@_export
def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):  # noqa: A002
    _check_input(input, "topk")
    if out is None:
        return return_types.topk(*_ov("topk")(input, k, dim, largest, sorted))
    values, indices = _out_pair(out, "topk", 5)
    return return_types.topk(*_ov("topk", "values")(input, k, dim, largest, sorted, values=values,
                                                     indices=indices))


@_export
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    _check_input(input, "unique")
    if dim is None:
        out, inv, counts = _ov("_unique2")(input, sorted, return_inverse, return_counts)
    else:
        out, inv, counts = _ov("unique_dim")(input, dim, sorted, return_inverse, return_counts)
    res = (out,) + ((inv,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return res[0] if len(res) == 1 else res


@_export
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    _check_input(input, "unique_consecutive")
    out, inv, counts = _ov("unique_consecutive")(input, return_inverse, return_counts, dim)
    res = (out,) + ((inv,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return res[0] if len(res) == 1 else res


@_export
def flip(input, dims):
    _check_input(input, "flip")
    return _ov("flip")(input, dims)  # int[]: a bare int is refused, as in torch


@_export
def fliplr(input):
    return flip(input, [1])


@_export
def flipud(input):
    return flip(input, [0])


@_export
def roll(input, shifts, dims=None):
    _check_input(input, "roll")
    return _ov("roll")(input, shifts, [] if dims is None else dims)  # int[1] slots also take a bare int


def _tri(name):
    f, fo = _ov(name), _ov(name, "out")

    def fn(input, diagonal=0, *, out=None):
        _check_input(input, name)
        return f(input, diagonal) if out is None else fo(input, diagonal, out=out)

    fn.__name__ = fn.__qualname__ = name
    return _export(fn)


tril = _tri("tril")
triu = _tri("triu")


@_export
def repeat_interleave(input, repeats=NO_DIM, dim=None, *, output_size=None):
    if repeats is None:
        raise TypeError("repeat_interleave() received an invalid combination of arguments - got (Tensor, "
                        "NoneType, ...): repeats must be a Tensor or an int")
    if repeats is NO_DIM:
        return _ov("repeat_interleave", "Tensor")(input, output_size=output_size)
    _check_input(input, "repeat_interleave")
    if isinstance(repeats, Tensor):
        return _ov("repeat_interleave", "self_Tensor")(input, repeats, dim, output_size=output_size)
    return _ov("repeat_interleave", "self_int")(input, repeats, dim, output_size=output_size)


@_export
def tile(input, dims):
    _check_input(input, "tile")
    return _ov("tile")(input, dims)  # int[]: a bare int is refused, as in torch


# --- shape and views ----------------------------------------------------------------------------------

@_export
def reshape(input, shape):
    _check_input(input, "reshape")
    return _ov("reshape")(input, parse_size((shape,), "reshape", "shape", 2))


@_export
def flatten(input, start_dim=0, end_dim=-1):
    _check_input(input, "flatten")
    return _ov("flatten", "using_ints")(input, start_dim, end_dim)


@_export
def unflatten(input, dim, sizes):
    _check_input(input, "unflatten")
    if not sizes:   # torch's Tensor.unflatten checks this before anything else
        raise RuntimeError("unflatten: sizes must be non-empty")
    if not isinstance(sizes, (list, tuple, Tensor)):
        raise TypeError(f"unflatten(): argument 'sizes' (position 2) must be tuple of ints, not "
                        f"{type(sizes).__name__}")
    return _ov("unflatten", "int")(input, dim, list(sizes))


@_export
def squeeze(input, dim=NO_DIM):
    _check_input(input, "squeeze")
    if _no_dim_none("squeeze", input, dim):
        return _ov("squeeze")(input)
    if isinstance(dim, (list, tuple)):
        return _ov("squeeze", "dims")(input, list(dim))
    return _ov("squeeze", "dim")(input, dim)


@_export
def unsqueeze(input, dim):
    _check_input(input, "unsqueeze")
    return _ov("unsqueeze")(input, dim)


@_export
def transpose(input, dim0, dim1):
    _check_input(input, "transpose")
    return _ov("transpose", "int")(input, dim0, dim1)


swapaxes = swapdims = transpose
__all__.append("swapaxes")
__all__.append("swapdims")


@_export
def permute(input, dims):
    _check_input(input, "permute")
    return _ov("permute")(input, list(dims))


@_export
def t(input):
    _check_input(input, "t")
    return _ov("t")(input)


@_export
def narrow(input, dim, start, length):
    _check_input(input, "narrow")
    if isinstance(start, Tensor):
        start = int(start.item())
    return _ov("narrow")(input, dim, start, length)


@_export
def select(input, dim, index):
    _check_input(input, "select")
    return _ov("select", "int")(input, dim, index)


@_export
def diagonal(input, offset=0, dim1=0, dim2=1):
    _check_input(input, "diagonal")
    return _ov("diagonal")(input, offset, dim1, dim2)


@_export
def as_strided(input, size, stride, storage_offset=None):
    _check_input(input, "as_strided")
    return _ov("as_strided")(input, list(size), list(stride), storage_offset)


@_export
def movedim(input, source, destination):
    _check_input(input, "movedim")
    one = [_is_int(source), _is_int(destination)]
    many = [isinstance(v, (tuple, list)) and builtins.all(_is_int(d) for d in v) for v in (source, destination)]
    if not (builtins.all(one) or builtins.all(many)):
        got = f"{type(source).__name__}, {type(destination).__name__}"
        raise TypeError(f"movedim() received an invalid combination of arguments - got ({got}), but expected one "
                        "of:\n * (int source, int destination)\n * (tuple of ints source, tuple of ints destination)\n")
    src = [source] if _is_int(source) else list(source)
    dst = [destination] if _is_int(destination) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the "
                           f"same number of dims as destination ({dst} dims)")
    if builtins.any(not -2 ** 63 <= d < 2 ** 63 for d in src + dst):   # torch parses dims as int64
        raise ValueError("Overflow when unpacking long long")
    n = input.dim()
    src = [_wrap_dim(d, n) for d in src]
    dst = [_wrap_dim(d, n) for d in dst]
    for name, dims, given in (("source", src, source), ("destination", dst, destination)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({list(given)})")
    if n == 0:   # dims 0 and -1 of a 0-d tensor: nothing moves
        return permute(input, [])
    order = [d for d in range(n) if d not in src]
    perm = [None] * n
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(order)
    perm = [p if p is not None else next(it) for p in perm]
    return permute(input, perm)


moveaxis = movedim
__all__.append("moveaxis")


@_export
def broadcast_shapes(*shapes):
    """The shape all ``shapes`` broadcast to, with the errors of torch's Python implementation."""
    from collections.abc import Sequence

    from ..core.tensor import Size
    shapes = [(s,) if isinstance(s, int) else s for s in shapes if s is not None]
    for s in shapes:
        if not isinstance(s, Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {s}")
    common = [1] * builtins.max((len(s) for s in shapes), default=0)
    for arg, s in enumerate(shapes):
        for i in range(-1, -1 - len(s), -1):
            if s[i] == common[i]:
                continue
            if common[i] == 1:
                if s[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = s[i]
            elif s[i] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s[i]} at {i}! Mismatching "
                                   f"argument at index {arg} had {s}; but expected shape should be broadcastable "
                                   f"to {common}")
    return Size(common)


@_export
def broadcast_to(input, size):
    return _ov("expand")(input, [size] if _is_int(size) else list(size))   # torch takes one int as a size


@_export
def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(_ov("expand")(t, list(shape)) for t in tensors)


@_export
def clone(input, *, memory_format=None):
    _check_input(input, "clone")
    return _ov("clone")(input, memory_format=memory_format)


@_export
def detach(input):
    return _ov("detach")(input)


# --- type helpers -------------------------------------------------------------------------------------

@_export
def result_type(tensor1, tensor2) -> D.dtype:
    """The dtype an op on ``tensor1`` and ``tensor2`` (tensors or numbers) computes in."""
    for x in (tensor1, tensor2):
        if not isinstance(x, (Tensor, builtins.bool, builtins.int, builtins.float, builtins.complex)) and \
                not (type(x).__module__ == "numpy" and hasattr(x, "dtype") and getattr(x, "ndim", 1) == 0):
            got = ", ".join("Tensor" if isinstance(v, Tensor) else type(v).__name__ for v in (tensor1, tensor2))
            raise TypeError(f"result_type() received an invalid combination of arguments - got ({got}), but "
                            "expected one of:\n * (Tensor tensor, Tensor other)\n * (Number scalar, Tensor tensor)\n"
                            " * (Tensor tensor, Number other)\n * (Number scalar1, Number scalar2)\n")
    return promotion.result_type(tensor1, tensor2)


@_export
def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


@_export
def is_floating_point(input) -> bool:
    return input.is_floating_point()


@_export
def is_inference(input) -> bool:
    """Whether ``input`` is an inference tensor (made under inference_mode)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.is_inference()


@_export
def numel(input) -> int:
    return input.numel()
