"""Binary elementwise ops: arithmetic, comparison, logical and bitwise families.

Each family is one computation registered under torch's overload names: the
functional form (``add.Tensor`` / ``add.Scalar``), ``out=`` (``add.out``) and
in-place (``add_.Tensor``). NumPy ufuncs also serve CuPy arrays through
``__array_ufunc__``, so one body covers both array modules.
"""
from __future__ import annotations

import numpy as np

from ..core import dtype as D
from ..core.device import CPU
from ..core.tensor import Tensor
from ..kernels import elementwise as K
from . import common as C

_ndarray = np.ndarray
FROM_NP = C.FROM_NP
_make = C.make


def _scalar_result(np_dt, v):
    """Result dtype of (tensor of np_dt) op (Python number v)."""
    k = np_dt.kind
    if k == "f" or np_dt == C.BFLOAT16:
        return FROM_NP[np_dt]
    if isinstance(v, (bool, np.bool_)):
        return FROM_NP[np_dt]
    if isinstance(v, (int, np.integer)):
        return D.int64 if k == "b" else FROM_NP[np_dt]
    if isinstance(v, (float, np.floating)):
        return D.get_default_dtype()
    if isinstance(v, Tensor):
        raise AssertionError("tensor passed as scalar")
    raise TypeError(f"expected a Tensor or a Python number, got {type(v).__name__}")


def operands(x, y):
    """(a, b, common dtype, device) for x op y, each a Tensor or a Python number."""
    if isinstance(x, Tensor):
        a = x._a
        dev = x._device
        if isinstance(y, Tensor):
            b = y._a
            if y._device is not dev:
                if y._device is CPU and b.ndim == 0:
                    pass
                elif dev is CPU and a.ndim == 0:
                    dev = y._device
                else:
                    C.raise_device_mismatch(dev, y._device)
                cd = C.result_type(x, y)
                return C.array_operand(x, cd.np, dev), C.array_operand(y, cd.np, dev), cd, dev
            if a.dtype is b.dtype or a.dtype == b.dtype:
                return a, b, FROM_NP[a.dtype], dev
            cd = C.result_type(x, y)
            npd = cd.np
            return (a if a.dtype == npd else a.astype(npd)), (b if b.dtype == npd else b.astype(npd)), cd, dev
        cd = _scalar_result(a.dtype, y)
        npd = cd.np
        return (a if a.dtype == npd else a.astype(npd)), C.scalar_operand(y, npd), cd, dev
    if isinstance(y, Tensor):
        b, a, cd, dev = operands(y, x)
        return a, b, cd, dev
    cd = C.result_type(x, y)
    return np.asarray(x, cd.np), np.asarray(y, cd.np), cd, CPU


def _call(fn, a, b, out=None):
    try:
        return fn(a, b) if out is None else fn(a, b, out=out)
    except ValueError as e:
        if "broadcast" in str(e):
            if out is not None:
                shape = C.broadcast_shapes(np.shape(a), np.shape(b))
                raise RuntimeError(f"output with shape {list(out.shape)} doesn't match the broadcast shape "
                                   f"{list(shape)}") from None
            C.shape_error(a, b)
        raise


def _inplace(self, fn, b, cd):
    a = self._a
    if cd.np != a.dtype:
        C.check_inplace(self, cd, a.shape)
        _call(lambda x, y, out: fn(x, y, out=out, casting="unsafe"), a.astype(cd.np), b, out=a)
    else:
        _call(fn, a, b, out=a)
    self._bump_version()
    return self


# --- families ---------------------------------------------------------------------------

def _alpha_check(cd, alpha):
    if isinstance(alpha, (bool, np.bool_)) and cd is not D.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not cd.is_floating_point and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")


def _scaled(b, alpha, cd):
    """alpha * b, after torch's alpha checks (the int 1 is the free common case)."""
    if alpha.__class__ is int and alpha == 1:
        return b
    _alpha_check(cd, alpha)
    if alpha == 1:
        return b
    return np.multiply(b, C.scalar_operand(alpha, cd.np))


def _check_bool_sub(cd):
    if cd is D.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                           "or `logical_xor()` operator instead.")


def add(self, other, alpha=1):
    a, b, cd, dev = operands(self, other)
    if alpha.__class__ is not int or alpha != 1:
        b = _scaled(b, alpha, cd)
    r = _call(np.add, a, b)
    if r.__class__ is not _ndarray:
        r = C.as_array(r)
    return _make(r, dev)


def add_out(self, other, alpha=1, out=None):
    return C.finish_out(out, add(self, other, alpha)._a, _result_dt(self, other), C.common_device(self, other))


def add_(self, other, alpha=1):
    a, b, cd, dev = operands(self, other)
    b = _scaled(b, alpha, cd)
    return _inplace(self, np.add, b, cd)


def sub(self, other, alpha=1):
    a, b, cd, dev = operands(self, other)
    if cd is D.bool:
        _check_bool_sub(cd)
    if alpha.__class__ is not int or alpha != 1:
        b = _scaled(b, alpha, cd)
    r = _call(np.subtract, a, b)
    if r.__class__ is not _ndarray:
        r = C.as_array(r)
    return _make(r, dev)


def sub_out(self, other, alpha=1, out=None):
    return C.finish_out(out, sub(self, other, alpha)._a, _result_dt(self, other), C.common_device(self, other))


def sub_(self, other, alpha=1):
    a, b, cd, dev = operands(self, other)
    _check_bool_sub(cd)
    return _inplace(self, np.subtract, _scaled(b, alpha, cd), cd)


def rsub(self, other, alpha=1):
    """other - alpha * self."""
    a, b, cd, dev = operands(self, other)
    _check_bool_sub(cd)
    r = _call(np.subtract, b, _scaled(a, alpha, cd))
    return C.wrap(r, dev)


def mul(self, other):
    a, b, cd, dev = operands(self, other)
    r = _call(np.multiply, a, b)
    if r.__class__ is not _ndarray:
        r = C.as_array(r)
    return _make(r, dev)


def mul_out(self, other, out=None):
    return C.finish_out(out, mul(self, other)._a, _result_dt(self, other), C.common_device(self, other))


def mul_(self, other):
    a, b, cd, dev = operands(self, other)
    return _inplace(self, np.multiply, b, cd)


def _result_dt(x, y):
    if isinstance(x, Tensor):
        if isinstance(y, Tensor):
            return C.result_type(x, y)
        return _scalar_result(x._a.dtype, y)
    if isinstance(y, Tensor):
        return _scalar_result(y._a.dtype, x)
    return C.result_type(x, y)


# true division and rounding modes

def _float_operands(self, other):
    a, b, cd, dev = operands(self, other)
    if not cd.is_floating_point:
        cd = D.get_default_dtype()
        a = a.astype(cd.np) if hasattr(a, "astype") else a
        b = b.astype(cd.np) if hasattr(b, "astype") and not isinstance(b, (float, int)) else b
    return a, b, cd, dev


def _rounding(mode):
    if mode is None:
        return None
    if mode == "trunc":
        return K.div_trunc
    if mode == "floor":
        return K.div_floor
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")


def div(self, other, rounding_mode=None):
    fn = _rounding(rounding_mode)
    if fn is None:
        a, b, cd, dev = _float_operands(self, other)
        r = _call(np.true_divide, a, b)
        if r.__class__ is not _ndarray:
            r = C.as_array(r)
        return _make(r, dev)
    a, b, cd, dev = operands(self, other)
    return C.wrap(_call(fn, a, b), dev)


def div_out(self, other, rounding_mode=None, out=None):
    r = div(self, other, rounding_mode)
    return C.finish_out(out, r._a, r.dtype, r._device)


def div_(self, other, rounding_mode=None):
    fn = _rounding(rounding_mode)
    if fn is None:
        a, b, cd, dev = _float_operands(self, other)
        return _inplace(self, np.true_divide, b, cd)
    a, b, cd, dev = operands(self, other)
    r = _call(fn, a, b)
    return C.finish_inplace(self, C.as_array(r), cd)


def _float_family(fn):
    """An op whose integral inputs compute in the default float dtype (atan2)."""
    def functional(self, other):
        a, b, cd, dev = _float_operands(self, other)
        return C.wrap(_call(fn, a, b), dev)

    def out_(self, other, out=None):
        r = functional(self, other)
        return C.finish_out(out, r._a, r.dtype, r._device)

    def inplace(self, other):
        a, b, cd, dev = _float_operands(self, other)
        return C.finish_inplace(self, C.as_array(_call(fn, a, b)), cd)

    return functional, out_, inplace


def _same_family(fn, check=None):
    """An op computed and returned in the promoted dtype (remainder, maximum, bitwise_and...)."""
    def functional(self, other):
        a, b, cd, dev = operands(self, other)
        if check is not None:
            check(cd)
        return C.wrap(_call(fn, a, b), dev)

    def out_(self, other, out=None):
        r = functional(self, other)
        return C.finish_out(out, r._a, r.dtype, r._device)

    def inplace(self, other):
        a, b, cd, dev = operands(self, other)
        if check is not None:
            check(cd)
        C.check_inplace(self, cd, C.broadcast_shapes(self._a.shape, np.shape(b)))
        r = _call(fn, a, b)
        return C.write_out(self, r)

    return functional, out_, inplace


def _bool_family(fn, *, promote=True):
    """Comparison / logical ops: computed in the promoted dtype, returned as bool."""
    def functional(self, other):
        if promote:
            a, b, cd, dev = operands(self, other)
        else:
            a, b, cd, dev = _raw_operands(self, other)
        return C.wrap(_call(fn, a, b), dev)

    def out_(self, other, out=None):
        r = functional(self, other)
        return C.finish_out(out, r._a, D.bool, r._device)

    def inplace(self, other):
        r = functional(self, other)
        C.check_inplace(self, D.bool, r._a.shape)
        return C.write_out(self, r._a)

    return functional, out_, inplace


def _raw_operands(self, other):
    dev = C.common_device(self, other)
    C.check_devices(dev, self, other)

    def raw(x):
        if isinstance(x, Tensor):
            return x._a if x._device is dev else x._a[()]
        return x
    return raw(self), raw(other), D.bool, dev


def _integral_only(name):
    def check(cd):
        if cd.is_floating_point:
            raise RuntimeError(f'"{name}_cpu" not implemented for \'{C.TORCH_NAME[cd]}\'')
    return check


pow_, pow_out, pow_inplace = _same_family(K.power)
remainder, remainder_out, remainder_ = _same_family(K.remainder)
fmod, fmod_out, fmod_ = _same_family(K.fmod)
floor_divide, floor_divide_out, floor_divide_ = _same_family(K.div_floor)
maximum, maximum_out, _ = _same_family(np.maximum)
minimum, minimum_out, _ = _same_family(np.minimum)
atan2, atan2_out, atan2_ = _float_family(np.arctan2)
bitwise_and, bitwise_and_out, bitwise_and_ = _same_family(np.bitwise_and, _integral_only("bitwise_and"))
bitwise_or, bitwise_or_out, bitwise_or_ = _same_family(np.bitwise_or, _integral_only("bitwise_or"))
bitwise_xor, bitwise_xor_out, bitwise_xor_ = _same_family(np.bitwise_xor, _integral_only("bitwise_xor"))

COMPARISONS = {}
for _name, _fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)):
    COMPARISONS[_name] = _bool_family(_fn)
LOGICAL = {}
for _name, _fn in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    LOGICAL[_name] = _bool_family(_fn, promote=False)


def pow_scalar_base(self, exponent):
    """pow.Scalar: a Python number raised to a tensor."""
    a, b, cd, dev = operands(self, exponent)
    return C.wrap(_call(K.power, a, b), dev)


def pow_scalar_base_out(self, exponent, out=None):
    r = pow_scalar_base(self, exponent)
    return C.finish_out(out, r._a, r.dtype, r._device)


def lerp(self, end, weight):
    dev = C.common_device(self, end, weight)
    cd = C.result_type(self, end) if not isinstance(weight, Tensor) else C.result_type(self, end, weight)
    if not cd.is_floating_point:
        raise RuntimeError(f"\"lerp_kernel_scalar\" not implemented for '{C.TORCH_NAME[cd]}'")
    if self._a.dtype != end._a.dtype:
        raise RuntimeError(f"expected dtype {C.tname(self._a.dtype)} for `end` but got dtype "
                           f"{C.tname(end._a.dtype)}")
    a = C.array_operand(self, cd.np, dev)
    e = C.array_operand(end, cd.np, dev)
    w = C.array_operand(weight, cd.np, dev) if isinstance(weight, Tensor) else weight
    try:
        np.broadcast_shapes(np.shape(a), np.shape(e), np.shape(w))
    except ValueError:
        C.shape_error(a, e, *([w] if isinstance(weight, Tensor) else []))
    return C.wrap(K.lerp(a, e, w), dev)


def lerp_out(self, end, weight, out=None):
    r = lerp(self, end, weight)
    return C.finish_out(out, r._a, r.dtype, r._device)


def lerp_(self, end, weight):
    r = lerp(self, end, weight)
    return C.finish_inplace(self, r._a, r.dtype)


def where(condition, self, other):
    if not isinstance(condition, Tensor) or condition._a.dtype != np.bool_:
        got = C.tname(condition._a.dtype) if isinstance(condition, Tensor) else type(condition).__name__
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {got}")
    a, b, cd, dev = operands(self, other)
    c = condition._a if condition._device is dev else C.array_operand(condition, np.dtype(np.bool_), dev)
    try:
        r = np.where(c, a, b)
    except ValueError:
        C.shape_error(c, a, b)
    if r.dtype != cd.np:
        r = r.astype(cd.np)
    return C.wrap(r, dev)


def where_out(condition, self, other, out=None):
    r = where(condition, self, other)
    return C.finish_out(out, r._a, r.dtype, r._device)


def _clamp_operands(self, lo, hi):
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    dev = C.common_device(self, lo, hi)
    cd = C.result_type(self, lo, hi)
    a = C.array_operand(self, cd.np, dev)

    def conv(v):
        if v is None:
            return None
        if isinstance(v, Tensor):
            return C.array_operand(v, cd.np, dev)
        return C.scalar_operand(v, cd.np)
    return a, conv(lo), conv(hi), cd, dev


def clamp(self, min=None, max=None):  # noqa: A002 - torch's argument names
    a, lo, hi, cd, dev = _clamp_operands(self, min, max)
    try:
        return C.wrap(K.clamp(a, lo, hi), dev)
    except ValueError:
        C.shape_error(*(x for x in (a, lo, hi) if hasattr(x, "shape")))


def clamp_out(self, min=None, max=None, out=None):  # noqa: A002
    r = clamp(self, min, max)
    return C.finish_out(out, r._a, r.dtype, r._device)


def clamp_(self, min=None, max=None):  # noqa: A002
    r = clamp(self, min, max)
    return C.finish_inplace(self, r._a, r.dtype)


def clamp_min(self, min):  # noqa: A002
    return clamp(self, min, None)


def clamp_max(self, max):  # noqa: A002
    return clamp(self, None, max)


def clamp_min_(self, min):  # noqa: A002
    return clamp_(self, min, None)


def clamp_max_(self, max):  # noqa: A002
    return clamp_(self, None, max)
