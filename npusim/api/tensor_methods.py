"""Tensor methods and operators, bound to the aten overloads they call.

Hot operators (``+``, ``*``, ``[]``...) are the generated dispatch functions
themselves, so ``a + b`` costs one dispatch and nothing more.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..core.c10 import dtype as D
from . import operators as F
from ..core import indexing
from ..core.c10.device import CPU, device as _device
from ..core.factories import parse_size
from ..core.dispatch.ops_namespace import aten
from ..core.c10 import device_hooks as _hooks
from ..core.c10.device_hooks import resolve_target_device
from ..core.c10.memory_format import array_format as _array_format
from ..core.tensor import Tensor
from .legacy_tensor_types import NAMES as LEGACY_NAMES, tensortype


def _ov(name, overload="default"):
    return getattr(getattr(aten, name), overload).fn


def _method(fn, name=None):
    name = name or fn.__name__
    setattr(Tensor, name, fn)
    return fn


# --- operators ------------------------------------------------------------------------------------
_add, _sub, _mul = _ov("add", "Tensor"), _ov("sub", "Tensor"), _ov("mul", "Tensor")
_add_, _sub_, _mul_ = _ov("add_", "Tensor"), _ov("sub_", "Tensor"), _ov("mul_", "Tensor")
_div, _div_ = _ov("div", "Tensor"), _ov("div_", "Tensor")
_rsub = _ov("rsub", "Tensor")
_matmul = _ov("matmul")
_pow_tensor, _pow_s, _pow_tensor_ = _ov("pow", "Tensor_Tensor"), _ov("pow", "Scalar"), _ov("pow_", "Tensor")
_pow_scalar, _pow_scalar_ = _ov("pow", "Tensor_Scalar"), _ov("pow_", "Scalar")


# A number exponent takes the Scalar overloads, as torch's argument parser picks them: their derivative keeps the
# exponent a Python float (the Tensor overload would wrap it in a float32 scalar tensor).
def _pow(self, exponent):
    if exponent.__class__ is float or exponent.__class__ is int or exponent.__class__ is bool or \
            exponent.__class__ is complex:
        return _pow_scalar(self, exponent)
    return _pow_tensor(self, exponent)


def _pow_(self, exponent):
    if exponent.__class__ is float or exponent.__class__ is int or exponent.__class__ is bool or \
            exponent.__class__ is complex:
        return _pow_scalar_(self, exponent)
    return _pow_tensor_(self, exponent)
_floordiv, _floordiv_ = _ov("floor_divide"), _ov("floor_divide_", "Tensor")
_rem, _rem_, _rem_s = _ov("remainder", "Tensor"), _ov("remainder_", "Tensor"), _ov("remainder", "Scalar_Tensor")
_and, _or, _xor = _ov("bitwise_and", "Tensor"), _ov("bitwise_or", "Tensor"), _ov("bitwise_xor", "Tensor")
_and_, _or_, _xor_ = _ov("bitwise_and_", "Tensor"), _ov("bitwise_or_", "Tensor"), _ov("bitwise_xor_", "Tensor")
_reciprocal = _ov("reciprocal")


def _number_or_tensor(other):
    return isinstance(other, (Tensor, bool, int, float, complex, np.number))


def _binop(fn):
    def op(self, other):
        if other.__class__ is Tensor or _number_or_tensor(other):
            return fn(self, other)
        return NotImplemented
    return op


def _rbinop(fn):
    def op(self, other):
        if _number_or_tensor(other):
            return fn(self, other)
        return NotImplemented
    return op


Tensor.__add__ = Tensor.__radd__ = _binop(_add)
Tensor.__iadd__ = _binop(_add_)
Tensor.__sub__ = _binop(_sub)
Tensor.__rsub__ = _rbinop(_rsub)
Tensor.__isub__ = _binop(_sub_)
Tensor.__mul__ = Tensor.__rmul__ = _binop(_mul)
Tensor.__imul__ = _binop(_mul_)
Tensor.__truediv__ = _binop(_div)
Tensor.__itruediv__ = _binop(_div_)
Tensor.__rtruediv__ = _rbinop(lambda self, other: _mul(_reciprocal(self), other))
Tensor.__floordiv__ = _binop(_floordiv)
Tensor.__ifloordiv__ = _binop(_floordiv_)
Tensor.__rfloordiv__ = _rbinop(lambda self, other: _floordiv(other, self))
Tensor.__mod__ = _binop(_rem)
Tensor.__imod__ = _binop(_rem_)
Tensor.__rmod__ = _rbinop(lambda self, other: _rem_s(other, self))
Tensor.__pow__ = _binop(_pow)
Tensor.__ipow__ = _binop(_pow_)
Tensor.__rpow__ = _rbinop(lambda self, other: _pow_s(other, self))
# ``@`` takes tensors only: numbers get NotImplemented, hence Python's TypeError (as in torch)
Tensor.__matmul__ = lambda self, other: _matmul(self, other) if isinstance(other, Tensor) else NotImplemented
Tensor.__rmatmul__ = lambda self, other: _matmul(other, self) if isinstance(other, Tensor) else NotImplemented
Tensor.__and__ = Tensor.__rand__ = _binop(_and)
Tensor.__or__ = Tensor.__ror__ = _binop(_or)
Tensor.__xor__ = Tensor.__rxor__ = _binop(_xor)
Tensor.__iand__, Tensor.__ior__, Tensor.__ixor__ = _binop(_and_), _binop(_or_), _binop(_xor_)
Tensor.__neg__ = _ov("neg")
def _positive(self):
    if self._a.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


Tensor.__pos__ = _positive
Tensor.__abs__ = _ov("abs")
Tensor.__eq__ = _binop(_ov("eq", "Tensor"))
Tensor.__ne__ = _binop(_ov("ne", "Tensor"))
Tensor.__lt__ = _binop(_ov("lt", "Tensor"))
Tensor.__le__ = _binop(_ov("le", "Tensor"))
Tensor.__gt__ = _binop(_ov("gt", "Tensor"))
Tensor.__ge__ = _binop(_ov("ge", "Tensor"))
Tensor.__getitem__ = indexing.getitem
Tensor.__setitem__ = indexing.setitem
Tensor.__hash__ = Tensor.__dict__["__hash__"]  # tensors hash by identity, as in torch


# --- elementwise methods -----------------------------------------------------------------------------

def _simple(name, op_name=None, overload="default"):
    fn = _ov(op_name or name, overload)
    setattr(Tensor, name, fn)


for _n in ("neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid",
           "erf", "floor", "ceil", "trunc", "sign", "sgn", "reciprocal", "exp2", "log2", "log10", "sinh", "cosh",
           "asin", "acos", "atan", "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "square", "relu",
           "t", "contiguous", "angle"):
    _simple(_n)
for _n in ("neg", "abs", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid",
           "erf", "floor", "ceil", "trunc", "sign", "sgn", "reciprocal", "exp2", "log2", "log10", "sinh", "cosh",
           "asin", "acos", "atan", "logical_not", "bitwise_not", "square", "relu", "zero"):
    _simple(f"{_n}_")
for _alias, _n in (("negative", "neg"), ("absolute", "abs"), ("fix", "trunc"), ("arcsin", "asin"),
                   ("arccos", "acos"), ("arctan", "atan")):
    _simple(_alias, _n)
    _simple(_alias + "_", _n + "_")


def _invert(self):
    if self.is_floating_point():
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _bitwise_not(self)


_bitwise_not = _ov("bitwise_not")
Tensor.__invert__ = _invert
for _n in ("eq", "ne", "lt", "le", "gt", "ge", "remainder", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor"):
    _simple(_n, overload="Tensor")
    _simple(f"{_n}_", overload="Tensor")
for _alias, _n in (("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"), ("less_equal", "le"),
                   ("not_equal", "ne")):
    _simple(_alias, _n, "Tensor")
for _n in ("floor_divide", "maximum", "minimum", "atan2", "logical_and", "logical_or", "logical_xor"):
    _simple(_n)
for _n in ("atan2", "logical_and", "logical_or", "logical_xor"):
    _simple(f"{_n}_")
_simple("floor_divide_", overload="Tensor")


def _tensor_other(name, op_name=None):
    """A method whose ``other`` has no Scalar overload: numbers get torch's argument-parser TypeError."""
    fn = _ov(op_name or name)

    def method(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not "
                            f"{other.__class__.__name__}")
        return fn(self, other)
    method.__name__ = method.__qualname__ = name
    setattr(Tensor, name, method)


for _n in ("maximum", "minimum", "atan2", "logical_and", "logical_or", "logical_xor", "atan2_", "logical_and_",
           "logical_or_", "logical_xor_"):
    _tensor_other(_n)
_tensor_other("arctan2", "atan2")
_simple("mul", overload="Tensor")
_simple("mul_", overload="Tensor")
_simple("multiply", "mul", "Tensor")
Tensor.true_divide = _div
Tensor.clamp_min = _ov("clamp_min")
Tensor.clamp_max = _ov("clamp_max")
Tensor.clamp_min_ = _ov("clamp_min_")
Tensor.clamp_max_ = _ov("clamp_max_")


@_method
def add(self, other, *, alpha=1):
    return _add(self, other, alpha=alpha)


@_method
def add_(self, other, *, alpha=1):
    return _add_(self, other, alpha=alpha)


@_method
def sub(self, other, *, alpha=1):
    return _sub(self, other, alpha=alpha)


@_method
def sub_(self, other, *, alpha=1):
    return _sub_(self, other, alpha=alpha)


Tensor.subtract = Tensor.sub


@_method
def div(self, other, *, rounding_mode=None):
    return _ov("div", "Tensor_mode")(self, other, rounding_mode=rounding_mode)


@_method
def div_(self, other, *, rounding_mode=None):
    return _ov("div_", "Tensor_mode")(self, other, rounding_mode=rounding_mode)


Tensor.divide = Tensor.div
Tensor.divide_ = Tensor.div_


@_method
def pow(self, exponent):
    return _pow(self, exponent)


@_method
def pow_(self, exponent):
    return _pow_(self, exponent)


@_method
def round(self, decimals=None):
    if decimals is None:
        return _ov("round")(self)
    return _ov("round", "decimals")(self, decimals=decimals)


@_method
def round_(self, decimals=None):
    if decimals is None:
        return _ov("round_")(self)
    return _ov("round_", "decimals")(self, decimals=decimals)


@_method
def clamp(self, min=None, max=None):  # noqa: A002
    min, max = F._check_clamp_bounds("clamp", (min, max), min, max)  # noqa: A001
    return F.clamp(self, min, max)


@_method
def clamp_(self, min=None, max=None):  # noqa: A002
    min, max = F._check_clamp_bounds("clamp_", (min, max), min, max)  # noqa: A001
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    return _ov("clamp_", "Tensor" if tensors else "default")(self, min, max)


Tensor.clip, Tensor.clip_ = Tensor.clamp, Tensor.clamp_


@_method
def lerp(self, end, weight):
    return F.lerp(self, end, weight)


@_method
def lerp_(self, end, weight):
    return _ov("lerp_", "Tensor" if isinstance(weight, Tensor) else "Scalar")(self, end, weight)


@_method
def where(self, condition, y):
    return _ov("where", "self")(condition, self, y)


@_method
def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    return _ov("nan_to_num")(self, nan, posinf, neginf)


@_method
def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    return _ov("nan_to_num_")(self, nan, posinf, neginf)


for _n in ("isclose", "allclose", "equal", "count_nonzero"):
    setattr(Tensor, _n, getattr(F, _n))


# --- reductions and friends: the functional forms read as methods ---------------------------------------
for _n in ("sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std", "norm", "all",
           "any", "logsumexp", "cumsum", "cumprod", "softmax", "log_softmax", "matmul", "mm", "bmm", "dot",
           "vdot", "outer", "mv", "addmm", "addmv", "baddbmm", "split", "chunk", "unbind", "gather",
           "index_select", "masked_select", "nonzero", "sort", "argsort", "topk", "unique",
           "unique_consecutive", "roll", "tril", "triu", "repeat_interleave", "flatten", "unflatten",
           "narrow", "select", "diagonal", "as_strided", "movedim", "moveaxis", "transpose", "swapaxes",
           "swapdims", "masked_fill", "index_put", "fliplr", "flipud", "argwhere", "scatter_add"):
    setattr(Tensor, _n, getattr(F, _n))

_sum = _ov("sum")


@_method
def sum(self, dim=F.NO_DIM, keepdim=F.NO_DIM, *, dtype=None, out=None):  # noqa: A001
    # x.sum(): straight to the overload
    if dim is F.NO_DIM and keepdim is F.NO_DIM and out is None and isinstance(self, Tensor):
        return _sum(self, dtype=dtype)
    return F.sum(self, dim, keepdim, dtype=dtype, out=out)


@_method
def scatter(self, dim, index, src=None, *, value=None, reduce=None):
    return F.scatter(self, dim, index, src, value=value, reduce=reduce)


@_method
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is not None:
        if reduce is None:
            return _ov("scatter_", "src")(self, dim, index, src)
        return _ov("scatter_", "reduce")(self, dim, index, src, reduce=reduce)
    if reduce is None:
        return _ov("scatter_", "value")(self, dim, index, value)
    return _ov("scatter_", "value_reduce")(self, dim, index, value, reduce=reduce)


@_method
def scatter_add_(self, dim, index, src):
    return _ov("scatter_add_")(self, dim, index, src)


@_method
def masked_fill_(self, mask, value):
    return _ov("masked_fill_", "Tensor" if isinstance(value, Tensor) else "Scalar")(self, mask, value)


@_method
def index_put_(self, indices, values, accumulate=False):
    return _ov("index_put_")(self, F._index_put_args("index_put_", indices, values, 0), values, accumulate)


@_method
def index_put(self, indices, values, accumulate=False):
    return _ov("index_put")(self, F._index_put_args("index_put", indices, values, 0), values, accumulate)


@_method
def cumsum_(self, dim, *, dtype=None):
    return _ov("cumsum_")(self, dim, dtype=dtype)


@_method
def cumprod_(self, dim, *, dtype=None):
    return _ov("cumprod_")(self, dim, dtype=dtype)


@_method
def tril_(self, diagonal=0):
    return _ov("tril_")(self, diagonal)


@_method
def triu_(self, diagonal=0):
    return _ov("triu_")(self, diagonal)


@_method
def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    return _ov("addmm_")(self, mat1, mat2, beta=beta, alpha=alpha)


for _n in ("addcmul", "addcdiv", "addr", "addbmm", "cross", "dist"):
    setattr(Tensor, _n, getattr(F, _n))


@_method
def addcmul_(self, tensor1, tensor2, *args, value=1):
    tensor1, tensor2, value = F.addc_args("addcmul_", tensor1, tensor2, args, value, 1)
    return _ov("addcmul_")(self, tensor1, tensor2, value=value)


@_method
def addcdiv_(self, tensor1, tensor2, *args, value=1):
    tensor1, tensor2, value = F.addc_args("addcdiv_", tensor1, tensor2, args, value, 1)
    return _ov("addcdiv_")(self, tensor1, tensor2, value=value)


@_method
def flip(self, *dims):
    if not dims:
        raise TypeError('flip() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return F.flip(self, list(dims))


@_method
def tile(self, *dims):
    if not dims:
        raise TypeError('tile() missing 1 required positional arguments: "dims"')
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return F.tile(self, list(dims))


@_method
def repeat(self, *sizes):
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    return _ov("repeat")(self, list(parse_size(sizes, "repeat", "repeats")))


# --- shape and views ----------------------------------------------------------------------------------------

@_method
def view(self, *shape):
    if shape and shape[0].__class__ is int:   # x.view(4), x.view(2, -1): the common call
        return _view(self, parse_size(shape, "view"))
    if len(shape) == 1 and isinstance(D.as_dtype(shape[0]), D.dtype):
        return _ov("view", "dtype")(self, D.as_dtype(shape[0]))
    if not shape or len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list, Tensor)) or \
            isinstance(shape[0], (bool, float)):
        got = ", ".join(v.__class__.__name__ for v in shape)
        raise TypeError(f"view() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                        " * (npusim.dtype dtype)\n * (tuple of ints size)\n")
    return _view(self, parse_size(shape, "view"))


_view = _ov("view")


@_method
def view_as(self, other):
    return _view(self, other.shape)


@_method
def reshape(self, *shape):
    if not shape:
        raise TypeError('reshape() missing 1 required positional arguments: "shape"')
    return _ov("reshape")(self, parse_size(shape, "reshape", "shape"))


@_method
def reshape_as(self, other):
    return _ov("reshape")(self, other.shape)


@_method
def permute(self, *dims):
    return _ov("permute")(self, list(parse_size(dims, "permute")))


@_method
def expand(self, *sizes):
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    return _ov("expand")(self, parse_size(sizes, "expand"))


@_method
def expand_as(self, other):
    return _ov("expand")(self, other.shape)


@_method
def squeeze(self, dim=F.NO_DIM):
    return F.squeeze(self, dim)


@_method
def unsqueeze(self, dim):
    return _ov("unsqueeze")(self, dim)


@_method
def clone(self, *, memory_format=None):
    return _ov("clone")(self, memory_format=memory_format)


@_method
def detach(self):
    return _detach(self)


_detach = _ov("detach")


@_method
def detach_(self):
    from ..core.autograd.meta import set_requires_grad
    if self._base is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
                           "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
                           "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
                           "npusim/optim/optimizer.py as the solution.")
    am = self._am
    if am is not None:
        am.grad_fn = None
        set_requires_grad(self, False)
    return self


@_method
def copy_(self, src, non_blocking=False):
    if src.__class__ in (int, float, bool):   # torch's parser takes a number for src, as a 0-d tensor
        if src.__class__ is int and 2 ** 63 <= src < 2 ** 64:
            # torch's tensor of such an int is uint64: integer targets keep its low bits, floats its value
            src = float(src) if self.is_floating_point() else src - 2 ** 64
        # torch's tensor of a float is float64, then cast without a range check
        src = _ov("scalar_tensor")(src, dtype=D.float64, device=self.device) if src.__class__ is float else \
            F.scalar_tensor_like(src, self)
    return _ov("copy_")(self, src, non_blocking)


@_method
def fill_(self, value):
    return _ov("fill_", "Tensor" if isinstance(value, Tensor) else "Scalar")(self, value)


@_method
def resize_(self, *sizes, memory_format=None):
    if not sizes:
        raise TypeError('resize_() missing 1 required positional arguments: "size"')
    return _ov("resize_")(self, parse_size(sizes, "resize_"), memory_format=memory_format)


_CPP_TYPE = {D.float32: "float", D.float64: "double", D.float16: "c10::Half", D.bfloat16: "c10::BFloat16",
             D.int64: "long int", D.int32: "int", D.int16: "short int", D.int8: "signed char",
             D.uint8: "unsigned char", D.bool: "bool"}


@_method
def set_(self, source=F.NO_DIM, storage_offset=0, size=None, stride=None):
    """Make ``self`` look at ``source``'s memory: a tensor's (its sizes and strides too), a storage's (all of it,
    or ``size``/``stride`` from ``storage_offset``), or none (an empty storage)."""
    from ..core.c10.storage import UntypedStorage
    from ..core.tensor import make, tensor_over_storage
    if not (source is F.NO_DIM or isinstance(source, (Tensor, UntypedStorage)) or hasattr(source, "untyped")):
        raise TypeError(f"set_() received an invalid combination of arguments - got "
                        f"({builtins.type(source).__name__}), but expected one of:\n * ()\n"
                        " * (npusim.Storage source)\n * (npusim.Storage source, int storage_offset, tuple of ints "
                        "size, tuple of ints stride = ())\n * (Tensor source)\n")
    if self.requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    if source is F.NO_DIM:
        fresh = make(self._a.reshape(-1)[:0].copy(), self._device)
        a, st = fresh._a, fresh._st_of()
    elif isinstance(source, Tensor):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"Could not set tensor of type {_CPP_TYPE[source.dtype]} to a tensor of type "
                               f"{_CPP_TYPE[self.dtype]}")
        if source.device != self.device:
            raise RuntimeError(f"Attempted to call `set_` on a tensor on {self.device} with a source on "
                               f"{source.device}")
        a, st = source._a.view(), source._st_of()
    else:
        st = source.untyped() if hasattr(source, "untyped") and not isinstance(source, UntypedStorage) else source
        if not isinstance(st, UntypedStorage):
            raise TypeError(f"set_() received an invalid combination of arguments - got "
                            f"({builtins.type(source).__name__}), but expected one of:\n * ()\n"
                            " * (npusim.Storage source)\n * (npusim.Storage source, int storage_offset, tuple of ints size, tuple of ints "
                            "stride = ())\n * (Tensor source)\n")
        if st.device != self.device:
            raise RuntimeError(f"Attempted to call `set_` on a tensor on {self.device} with a storage on "
                               f"{st.device}")
        flat = tensor_over_storage(st)
        n = st.nbytes() // self._a.itemsize
        flat = _ov("view", "dtype")(flat[:n * self._a.itemsize], self.dtype)
        size = [n - storage_offset] if size is None else list(parse_size((size,), "set_"))
        if stride is None or not len(stride):
            stride, step = [], 1
            for d in reversed(size):
                stride.insert(0, step)
                step *= builtins.max(d, 1)
        if builtins.any(d == 0 for d in size):
            end = storage_offset
        else:
            end = storage_offset + builtins.sum((d - 1) * s for d, s in zip(size, stride)) + 1
        if storage_offset < 0 or end > n:
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                               f"{storage_offset}, and itemsize {self._a.itemsize} requiring a storage size of "
                               f"{end * self._a.itemsize} are out of bounds for storage of size {st.nbytes()}")
        a = _ov("as_strided")(flat, size, list(stride), storage_offset)._a
    self._a = a
    self._st = st
    self._base = None
    vc = self._vc
    if isinstance(vc, list):   # no longer a view: a counter of its own
        self._vc = [vc[0]]
    self._bump_version()
    return self


@_method
def resize_as_(self, other):
    return _ov("resize_")(self, other.shape)


# --- device and dtype conversion ------------------------------------------------------------------------------

_to_copy = _ov("_to_copy")


_TO_SIGNATURES = (
    " * (npusim.device device = None, npusim.dtype dtype = None, bool non_blocking = False, bool copy = False, *, "
    "npusim.memory_format memory_format = None)\n"
    " * (npusim.dtype dtype, bool non_blocking = False, bool copy = False, *, npusim.memory_format memory_format = "
    "None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, npusim.memory_format memory_format = None)\n")


def _arg_type_name(v) -> str:
    if isinstance(v, D.dtype):
        return "npusim.dtype"
    if isinstance(v, _device):
        return "npusim.device"
    return v.__class__.__name__


def _invalid_to(args, kwargs):
    got = ", ".join(_arg_type_name(a) for a in args)
    if args:
        got += "".join(f", {k}={_arg_type_name(v)}" for k, v in kwargs.items())
    else:
        got = "".join(f"{k}={_arg_type_name(v)}, " for k, v in kwargs.items())
    raise TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                    + _TO_SIGNATURES)


def _parse_to(args, kwargs):
    """torch's Tensor.to overloads -> (device, dtype, non_blocking, copy, memory_format)."""
    given_args, given_kwargs = tuple(args), dict(kwargs)
    dev = kwargs.pop("device", None)
    dt = D.as_dtype(kwargs.pop("dtype", None))   # float, int and bool are dtypes to torch's parser
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs or (dt is not None and not isinstance(dt, D.dtype)):
        _invalid_to(given_args, given_kwargs)
    args = list(args)
    if args and isinstance(args[0], Tensor):
        other = args.pop(0)
        dev, dt = other.device, other.dtype
    elif args and isinstance(D.as_dtype(args[0]), D.dtype):
        dt = D.as_dtype(args.pop(0))
    elif args and (isinstance(args[0], (str, _device)) or isinstance(args[0], int) and
                   not isinstance(args[0], bool) or args[0] is None):
        dev = args.pop(0)
        if args and (args[0] is None or isinstance(D.as_dtype(args[0]), D.dtype)):
            dt = D.as_dtype(args.pop(0))
    if args and isinstance(args[0], bool):
        non_blocking = args.pop(0)
    if args and isinstance(args[0], bool):
        copy = args.pop(0)
    if args:
        _invalid_to(given_args, given_kwargs)
    return dev, dt, non_blocking, copy, memory_format


def _suggested_format(t):
    return _array_format(t._a)


@_method
def to(self, *args, **kwargs):
    dev, dt, non_blocking, copy, memory_format = _parse_to(args, kwargs)
    target = self._device if dev is None else resolve_target_device(dev)
    dtype = self.dtype if dt is None else dt
    if target is self._device and dtype is self.dtype and not copy and (
            memory_format in (None, "preserve_format") or memory_format == _suggested_format(self)):
        return self   # torch's to_will_alias: nothing to change, not even the layout it suggests
    return _to_copy(self, dtype=dtype, device=target, non_blocking=non_blocking, memory_format=memory_format)


@_method
def cpu(self, memory_format=None):
    if self._device is CPU:
        return self
    return _to_copy(self, device=CPU)


@_method
def cuda(self, device=None, non_blocking=False, memory_format=None):
    """A copy on a "cuda" device: the npu when a device map says cuda means it (``python -m npusim run
    --device-map cuda=npu``); otherwise torch's error for a build without CUDA, saying what to do."""
    target = cuda_device(device)
    return self.to(target, non_blocking=non_blocking,
                   **({} if memory_format is None else {"memory_format": memory_format}))


def cuda_device(index=None):
    """The device ``cuda()`` moves to: "cuda" (the current one) or "cuda:<index>", as the device map says."""
    from ..core.c10.device import _TYPE_MAP
    if "cuda" not in _TYPE_MAP:
        raise AssertionError("Torch not compiled with CUDA enabled" + _hooks.no_backend_hint("cuda"))
    if index is None:
        return _device("cuda")
    if isinstance(index, int) and not isinstance(index, bool):
        return _device("cuda", index)
    d = _device(index)
    if d._type != _TYPE_MAP["cuda"]:
        raise RuntimeError("Invalid device, must be cuda device")
    return d


@_method
def type(self, dtype=None, non_blocking=False):
    if dtype is None:
        return f"npusim.{'' if self._device is CPU else self._device.type + '.'}{_TYPE_NAMES[self.dtype]}"
    if isinstance(dtype, str):
        name = dtype.split(".")[-1]
        inv = {v: k for k, v in _TYPE_NAMES.items()}
        if name not in inv:
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = inv[name]
    elif isinstance(dtype, tensortype):     # npusim.DoubleTensor, npusim.npu.FloatTensor: a dtype and a device
        return self.to(device=dtype.device_type, dtype=dtype.dtype, non_blocking=non_blocking)
    elif dtype.__class__ is builtins.type:   # float, str... name no tensor type
        raise ValueError(f"invalid type: '{dtype.__name__}'")
    elif not isinstance(dtype, D.dtype):
        raise TypeError("dtype must be a type, str, or dtype object")
    return self.to(dtype)


_LEGACY = LEGACY_NAMES
# the type names of the complex dtypes, which have no legacy constructor classes (as in torch)
_TYPE_NAMES = {**LEGACY_NAMES, D.complex32: "ComplexHalfTensor", D.complex64: "ComplexFloatTensor",
               D.complex128: "ComplexDoubleTensor"}


def _cast(dt):
    def cast(self, memory_format=None):
        return self.to(dt)
    return cast


for _name, _dt in (("float", D.float32), ("double", D.float64), ("half", D.float16), ("bfloat16", D.bfloat16),
                   ("int", D.int32), ("long", D.int64), ("short", D.int16), ("char", D.int8), ("byte", D.uint8),
                   ("bool", D.bool)):
    setattr(Tensor, _name, _cast(_dt))


@_method
def type_as(self, other):
    return self.to(other.dtype)


def _new_factory(fill):
    def new(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        shape = parse_size(size, f"new_{fill}")
        return getattr(F_factories(), fill)(shape, dtype=dtype or self.dtype, device=device or self._device,
                                            requires_grad=requires_grad)
    new.__name__ = new.__qualname__ = f"new_{fill}"
    return new


def F_factories():  # noqa: N802 - module accessor, imported lazily to avoid a cycle
    from . import factories as public_factories
    return public_factories


Tensor.new_empty = _new_factory("empty")
Tensor.new_zeros = _new_factory("zeros")
Tensor.new_ones = _new_factory("ones")


@_method
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    return F_factories().full(size, fill_value, dtype=dtype or self.dtype, device=device or self._device,
                              requires_grad=requires_grad)


@_method
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    from ..core.factories import tensor
    return tensor(data, dtype=dtype or self.dtype, device=device or self._device, requires_grad=requires_grad)


@_method
def retain_grad(self):
    from ..core.autograd.meta import AutogradMeta
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.is_leaf:
        return
    am = self._am or AutogradMeta()
    am.retains_grad = True


@property
def _retains_grad(self):
    am = self._am
    return am is not None and am.retains_grad


Tensor.retains_grad = _retains_grad
Tensor.ndimension = Tensor.dim
