"""Binary elementwise ops: arithmetic, comparison, logical and bitwise families.

Each family is one computation registered under torch's overload names: the
functional form (``add.Tensor`` / ``add.Scalar``), ``out=`` (``add.out``) and
in-place (``add_.Tensor``). NumPy ufuncs also serve CuPy arrays through
``__array_ufunc__``, so one body covers both array modules.

Operands are converted straight from their own dtype to the computation dtype
(torch's TensorIterator casts each input once), so ``int8 0-dim / uint8`` sees
the signed value and ``uint8 / -3`` divides by -3.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..core.c10.user_frames import user_stacklevel
from ..core.c10 import dtype as D
from ..core.c10.device import CPU
from ..core.tensor import Tensor
from ..kernels import elementwise as K
from ..kernels import parallel as P
from ..kernels.array_api import HALF_TYPES
from . import common as C

_ndarray = np.ndarray
_F32_F64 = (np.dtype(np.float32), np.dtype(np.float64))
FROM_NP = C.FROM_NP
_make = C.make
_F32 = np.dtype(np.float32)
_BOOL = np.dtype(np.bool_)
_NP_COMPLEX = (np.complex64, np.complex128, np.clongdouble)


# --- dtypes, devices and operands ----------------------------------------------------------------

def _scalar_result(np_dt, v):
    """Result dtype of (tensor of np_dt) op (Python number v)."""
    k = np_dt.kind
    if k == "c":
        return FROM_NP[np_dt]
    if v.__class__ is complex or v.__class__ in _NP_COMPLEX:   # a real tensor's parts keep their precision
        dt = FROM_NP[np_dt]
        return dt.to_complex() if dt.is_floating_point else D.default_complex_dtype()
    if k == "f" or np_dt == C.BFLOAT16:
        return FROM_NP[np_dt]
    if isinstance(v, (bool, np.bool_)):
        return FROM_NP[np_dt]
    if isinstance(v, (int, np.integer)):
        if k == "b" and v >= 2 ** 63:   # torch's number is uint64 there, which promotes with nothing
            raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                               "Bool and UInt64")
        return D.int64 if k == "b" else FROM_NP[np_dt]
    if isinstance(v, (float, np.floating)):
        return D.get_default_dtype()
    raise TypeError(f"expected a Tensor or a Python number, got {type(v).__name__}")


def _result_dt(x, y):
    if isinstance(x, Tensor):
        if isinstance(y, Tensor):
            return C.result_type(x, y)
        return _scalar_result(x._a.dtype, y)
    if isinstance(y, Tensor):
        return _scalar_result(y._a.dtype, x)
    return C.result_type(x, y)


def _dtype_of(x):
    return FROM_NP[x._a.dtype] if isinstance(x, Tensor) else C._scalar_dtype(x)


def _device(x, y):
    """The device x op y runs on; a 0-dim cpu tensor may join another device's op."""
    if isinstance(x, Tensor):
        dev = x._device
        if isinstance(y, Tensor) and y._device is not dev:
            if y._device is CPU and y._a.ndim == 0:
                pass
            elif dev is CPU and x._a.ndim == 0:
                dev = y._device
            else:
                C.raise_device_mismatch(dev, y._device)
        return dev
    return y._device if isinstance(y, Tensor) else CPU


def _convert(x, np_dt, dev):
    if isinstance(x, Tensor):
        return C.array_operand(x, np_dt, dev)
    return C.scalar_operand(x, np_dt)


def _prepare(x, y, cd):
    dev = _device(x, y)
    if not isinstance(x, Tensor) and not isinstance(y, Tensor):
        return np.asarray(x, cd.np), np.asarray(y, cd.np), cd, dev
    return _convert(x, cd.np, dev), _convert(y, cd.np, dev), cd, dev


def operands(x, y):
    """(a, b, common dtype, device) for x op y, each a Tensor or a Python number."""
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        a, b = x._a, y._a
        if a.dtype == b.dtype and x._device is y._device:
            return a, b, FROM_NP[a.dtype], x._device
    return _prepare(x, y, _result_dt(x, y))


def _float_operands(x, y):
    """Operands of an op whose integral inputs compute in the default float dtype (div, atan2)."""
    cd = _result_dt(x, y)
    if not (cd.is_floating_point or cd.is_complex):
        cd = D.get_default_dtype()
    return _prepare(x, y, cd)


def _scalar_like(y):
    return not isinstance(y, Tensor) or y._a.ndim == 0


def _opmath_operands(x, y, cd, dev):
    """float32 operands for torch's mul/div kernels on 16-bit floats with a scalar second operand:
    the scalar is read at float32 precision from its original value, not rounded to 16 bits."""
    a = _to_f32(_convert(x, cd.np, dev))
    if not isinstance(y, Tensor):
        return a, np.float32(y)
    b = y._a.astype(_F32)
    return a, (b if y._device is dev else b[()])  # a 0-dim cpu operand joins as a scalar


def _to_f32(x):
    return x.astype(_F32) if hasattr(x, "astype") else np.float32(x)


def _call(fn, a, b, out=None):
    try:
        return P.binary(fn, a, b, out)  # large operands: split over the intra-op threads
    except ValueError as e:
        _broadcast_error(e, a, b)
        raise


def _broadcast_error(e, a, b):
    """torch's error where a ufunc refused operands ``a`` and ``b`` (``e``) for not broadcasting; else nothing."""
    if "broadcast" in str(e):
        C.shape_error(a, b)


def _array(r):
    return r if r.__class__ is _ndarray else C.as_array(r)


def _check_inplace(self, other, cd, *more):
    """torch's in-place checks: broadcast shape equals self's, result castable to self's dtype."""
    shape = self._a.shape
    shapes = [x._a.shape for x in (other, *more) if isinstance(x, Tensor)]
    if any(s != shape for s in shapes):
        C.check_inplace(self, cd, C.broadcast_shapes(shape, *shapes))
    elif cd.np != self._a.dtype:
        C.check_inplace(self, cd, shape)


def _write_inplace(self, r):
    """Store a computed result into ``self`` (already checked)."""
    return C.write_out(self, r)


def _check_out(out, dt, *operands):
    """torch checks an ``out=`` tensor's dtype (after broadcasting the inputs) before computing."""
    if isinstance(out, Tensor) and not D.can_cast(dt, FROM_NP[out._a.dtype]):
        C.broadcast_shapes(*[x._a.shape for x in operands if isinstance(x, Tensor)])
        raise RuntimeError(f"result type {C.TORCH_NAME[dt]} can't be cast to the desired output type "
                           f"{C.tname(out._a.dtype)}")


def _not_implemented(kernel, cd, *operands):
    C.broadcast_shapes(*[np.shape(x) for x in operands])
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{C.TORCH_NAME[cd]}'")


# --- add / sub / rsub ---------------------------------------------------------------------------

def _alpha_check(cd, alpha):
    if isinstance(alpha, (bool, np.bool_)) and cd is not D.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not (cd.is_floating_point or cd.is_complex) and isinstance(alpha, (float, np.floating)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if not cd.is_complex and isinstance(alpha, (complex, np.complexfloating)):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")


def _axpy(a, b, alpha, cd, sign=1):
    """a + sign * alpha * b in dtype ``cd`` (16-bit floats in float32, rounded once, as torch)."""
    if cd is D.bool:
        return np.logical_or(a, np.logical_and(b, bool(alpha)))
    if cd.np in HALF_TYPES:
        # torch rounds alpha to the 16-bit type, then computes in float32
        alpha = np.float32(cd.np.type(sign * alpha))
        return _array(_call(np.add, _to_f32(a), _to_f32(b) * alpha)).astype(cd.np)
    if hasattr(b, "shape"):
        scale = C.scalar_operand(sign * alpha, cd.np)
        r = K.scaled_sum(a, b, scale)    # large arrays of one shape: both passes per cache-sized piece
        if r is not None:
            return r
        # the scaled operand lands in the offered out= array when it has the result's shape; the sum then goes in
        # place on it (same ufuncs and operand order), both passes over the intra-op threads
        b = P.binary(np.multiply, b, scale)
        if b.__class__ is _ndarray and b.dtype == cd.np and _holds_sum(np.shape(a), b.shape):
            return _call(np.add, a, b, b)
    else:
        b = C.scalar_operand(b * sign * alpha, cd.np)
    return _call(np.add, a, b)


def _holds_sum(a_shape, b_shape) -> bool:
    """Whether an array of ``b_shape`` is the broadcast result's shape (False too when they do not broadcast)."""
    try:
        return np.broadcast_shapes(a_shape, b_shape) == b_shape
    except ValueError:
        return False   # the add raises torch's error


def _is_one(alpha):
    return alpha.__class__ is int and alpha == 1


def add(self, other, alpha=1):
    if alpha.__class__ is int and alpha == 1 and (self.__class__ is Tensor or isinstance(self, Tensor)) and \
            (other.__class__ is Tensor or isinstance(other, Tensor)):
        # two tensors of one dtype on one device, alpha 1: the add every model runs, with the fewest frames
        a, b = self._a, other._a
        if a.dtype == b.dtype and self._device is other._device:
            try:
                r = P.binary(np.add, a, b)
            except ValueError as e:
                _broadcast_error(e, a, b)
                raise
            return _make(r if r.__class__ is _ndarray else C.as_array(r), self._device)
    a, b, cd, dev = operands(self, other)
    if _is_one(alpha):
        r = _call(np.add, a, b)
    else:
        _alpha_check(cd, alpha)
        r = _axpy(a, b, alpha, cd)
    return _make(_array(r), dev)


def add_out(self, other, alpha=1, out=None):
    r = add(self, other, alpha)
    return C.finish_out(out, r._a, r.dtype, r._device)


def add_(self, other, alpha=1):
    if (other.__class__ is Tensor or isinstance(other, Tensor)) and self._device is other._device and \
            (alpha.__class__ is int or alpha.__class__ is float):
        a, b = self._a, other._a
        dt = a.dtype
        if b.dtype == dt and b.shape == a.shape and dt.kind == "f" and dt not in HALF_TYPES:
            # self += alpha * other, one float dtype and shape (every optimizer's update): written in place with the
            # arithmetic add's own path does (other * alpha rounded, then the sum), without its temporary and copy
            if _is_one(alpha):
                _ufunc_inplace(self, np.add, b)
            elif not _scaled_sum_into(self, b, alpha):
                _ufunc_inplace(self, np.add, np.multiply(b, alpha))
            return self
    cd = _result_dt(self, other)
    _check_inplace(self, other, cd)
    if _is_one(alpha) and cd.np == self._a.dtype:
        a, b, cd, dev = operands(self, other)
        _ufunc_inplace(self, np.add, b)
        return self
    return _write_inplace(self, add(self, other, alpha)._a)


def _ufunc_inplace(self, ufunc, b):
    C.check_writable(self)
    P.binary(ufunc, self._a, b, self._a)
    self._bump_version()


def _writable_array(self):
    """``self``'s array when it is a NumPy array that may be written (C.check_writable would pass), else None."""
    a = self._a
    return a if a.__class__ is _ndarray and a.flags.writeable else None


def _scaled_sum_into(self, b, scale) -> bool:
    """self += b * scale per cache-sized piece, straight into self's array (K.scaled_sum with the functional op's
    ufuncs and operand order); False (nothing written) when the arrays do not fit the blocks."""
    a = _writable_array(self)
    if a is None or K.scaled_sum(a, b, scale, into=a) is None:
        return False
    self._bump_version()
    return True


def _check_sub(x, y):
    xb, yb = _dtype_of(x) is D.bool, _dtype_of(y) is D.bool
    if xb and yb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
                           "or `logical_xor()` operator instead.")
    if xb or yb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


def sub(self, other, alpha=1):
    if alpha.__class__ is int and alpha == 1 and (self.__class__ is Tensor or isinstance(self, Tensor)) and \
            (other.__class__ is Tensor or isinstance(other, Tensor)):
        # as in add: two non-bool tensors of one dtype on one device, inline
        a, b = self._a, other._a
        if a.dtype == b.dtype and self._device is other._device and a.dtype != _BOOL:
            try:
                r = P.binary(np.subtract, a, b)
            except ValueError as e:
                _broadcast_error(e, a, b)
                raise
            return _make(r if r.__class__ is _ndarray else C.as_array(r), self._device)
    _check_sub(self, other)
    a, b, cd, dev = operands(self, other)
    if _is_one(alpha):
        r = _call(np.subtract, a, b)
    else:
        _alpha_check(cd, alpha)
        r = _axpy(a, b, alpha, cd, -1)
    return _make(_array(r), dev)


def sub_out(self, other, alpha=1, out=None):
    r = sub(self, other, alpha)
    return C.finish_out(out, r._a, r.dtype, r._device)


def sub_(self, other, alpha=1):
    _check_sub(self, other)
    cd = _result_dt(self, other)
    _check_inplace(self, other, cd)
    if _is_one(alpha) and cd.np == self._a.dtype:
        a, b, cd, dev = operands(self, other)
        _ufunc_inplace(self, np.subtract, b)
        return self
    if (alpha.__class__ is int or alpha.__class__ is float) and isinstance(other, Tensor) and \
            other._device is self._device and other._a.dtype == self._a.dtype == cd.np:
        # self - alpha * other as sub's own scaled sum (the scalar -alpha), written straight into self
        _alpha_check(cd, alpha)
        if _scaled_sum_into(self, other._a, C.scalar_operand(-alpha, cd.np)):
            return self
    return _write_inplace(self, sub(self, other, alpha)._a)


def rsub(self, other, alpha=1):
    """other - alpha * self."""
    _check_sub(self, other)
    a, b, cd, dev = operands(self, other)
    if _is_one(alpha):
        r = _call(np.subtract, b, a)
    else:
        _alpha_check(cd, alpha)
        r = _axpy(b, a, alpha, cd, -1)
    return C.wrap(r, dev)


# --- mul / div --------------------------------------------------------------------------------------

def _mul_compute(self, other):
    a, b, cd, dev = operands(self, other)
    if cd.np in HALF_TYPES and _scalar_like(other) and isinstance(self, Tensor):
        af, bf = _opmath_operands(self, other, cd, dev)
        return _array(_call(np.multiply, af, bf)).astype(cd.np), cd, dev
    return _array(_call(np.multiply, a, b)), cd, dev


def mul(self, other):
    if (other.__class__ is Tensor or isinstance(other, Tensor)) and (self.__class__ is Tensor or
                                                                     isinstance(self, Tensor)):
        a, b = self._a, other._a
        if a.dtype == b.dtype and self._device is other._device and a.dtype not in HALF_TYPES:
            try:
                r = P.binary(np.multiply, a, b)
            except ValueError as e:
                _broadcast_error(e, a, b)
                raise
            return _make(r if r.__class__ is _ndarray else C.as_array(r), self._device)
    elif (other.__class__ is float or other.__class__ is int) and (self.__class__ is Tensor or
                                                                   isinstance(self, Tensor)):
        a = self._a
        if a.dtype.kind == "f" and a.dtype not in HALF_TYPES:
            # a float tensor times a Python number, which joins as it is (scalar_operand's answer for floats)
            r = P.binary(np.multiply, a, other)
            return _make(r if r.__class__ is _ndarray else C.as_array(r), self._device)
    r, cd, dev = _mul_compute(self, other)
    return _make(r, dev)


def mul_out(self, other, out=None):
    _check_out(out, _result_dt(self, other), self, other)
    r, cd, dev = _mul_compute(self, other)
    return C.finish_out(out, r, cd, dev)


def mul_(self, other):
    cd = _result_dt(self, other)
    _check_inplace(self, other, cd)
    if cd.np == self._a.dtype and not (cd.np in HALF_TYPES and _scalar_like(other)):
        a, b, cd, dev = operands(self, other)
        _ufunc_inplace(self, np.multiply, b)
        return self
    r, cd, dev = _mul_compute(self, other)
    return _write_inplace(self, r)


def _rounding(mode):
    if mode is None:
        return None
    if mode == "trunc":
        return "trunc"
    if mode == "floor":
        return "floor"
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{mode}'")


def _true_div(self, other):
    a, b, cd, dev = _float_operands(self, other)
    if cd.np in HALF_TYPES and _scalar_like(other) and isinstance(self, Tensor):
        af, bf = _opmath_operands(self, other, cd, dev)
        return _array(_call(np.true_divide, af, bf)).astype(cd.np), cd, dev
    return _array(_call(np.true_divide, a, b)), cd, dev


_ROUNDED = {"trunc": (K.div_trunc, "div_trunc_cpu"), "floor": (K.div_floor, "div_floor_cpu")}


def _rounded_div(self, other, mode):
    fn, kernel = _ROUNDED[mode]
    a, b, cd, dev = operands(self, other)
    if cd is D.bool:
        _not_implemented(kernel, cd, a, b)
    if cd.np in HALF_TYPES and _scalar_like(other) and isinstance(self, Tensor):
        af, bf = _opmath_operands(self, other, cd, dev)
        return _array(_call(fn, af, bf)).astype(cd.np), cd, dev
    return _array(_call(fn, a, b)), cd, dev


def _div_compute(self, other, rounding_mode):
    mode = _rounding(rounding_mode)
    if mode is None:
        return _true_div(self, other)
    return _rounded_div(self, other, mode)


def div(self, other, rounding_mode=None):
    if rounding_mode is None and (other.__class__ is float or other.__class__ is int) and \
            (self.__class__ is Tensor or isinstance(self, Tensor)):
        a = self._a
        if a.dtype.kind == "f" and a.dtype not in HALF_TYPES:
            # as in mul: a float tensor over a Python number, which joins as it is
            r = P.binary(np.true_divide, a, other)
            return _make(r if r.__class__ is _ndarray else C.as_array(r), self._device)
    r, cd, dev = _div_compute(self, other, rounding_mode)
    return _make(r, dev)


def div_out(self, other, rounding_mode=None, out=None):
    cd = _result_dt(self, other)
    _check_out(out, cd if _rounding(rounding_mode) or cd.is_floating_point or cd.is_complex
               else D.get_default_dtype(), self, other)
    r, cd, dev = _div_compute(self, other, rounding_mode)
    return C.finish_out(out, r, cd, dev)


def div_(self, other, rounding_mode=None):
    mode = _rounding(rounding_mode)
    cd = _result_dt(self, other)
    if mode is None and not (cd.is_floating_point or cd.is_complex):
        cd = D.get_default_dtype()
    _check_inplace(self, other, cd)
    if mode is None and cd.np == self._a.dtype and not (cd.np in HALF_TYPES and _scalar_like(other)):
        # as mul_: true division's own operands and ufunc, computed in place
        a, b, cd, dev = _float_operands(self, other)
        _ufunc_inplace(self, np.true_divide, b)
        return self
    r, cd, dev = _div_compute(self, other, rounding_mode)
    return _write_inplace(self, r)


def floor_divide(self, other):
    r, cd, dev = _rounded_div(self, other, "floor")
    return _make(r, dev)


def floor_divide_out(self, other, out=None):
    _check_out(out, _result_dt(self, other), self, other)
    r, cd, dev = _rounded_div(self, other, "floor")
    return C.finish_out(out, r, cd, dev)


def floor_divide_(self, other):
    _check_inplace(self, other, _result_dt(self, other))
    r, cd, dev = _rounded_div(self, other, "floor")
    return _write_inplace(self, r)


# --- families with one computation ------------------------------------------------------------

def _family(compute):
    """functional / out= / in-place kernels around ``compute(self, other) -> (array, dtype, device)``
    and ``result(self, other) -> dtype`` (checked before an in-place write)."""
    def functional(self, other):
        r, cd, dev = compute(self, other)
        return _make(r, dev)

    def out_(self, other, out=None):
        _check_out(out, compute.result(self, other), self, other)
        r, cd, dev = compute(self, other)
        return C.finish_out(out, r, cd, dev)

    def inplace(self, other):
        _check_inplace(self, other, compute.result(self, other))
        r, cd, dev = compute(self, other)
        return _write_inplace(self, r)

    return functional, out_, inplace


def _same_compute(fn, bool_kernel=None, float_kernel=None):
    """An op computed and returned in the promoted dtype (remainder, maximum, bitwise_and...)."""
    def compute(self, other):
        a, b, cd, dev = operands(self, other)
        if bool_kernel is not None and cd is D.bool:
            _not_implemented(bool_kernel, cd, a, b)
        if float_kernel is not None and cd.is_floating_point:
            _not_implemented(float_kernel, cd, a, b)
        return _array(_call(fn, a, b)), cd, dev
    compute.result = _result_dt
    return compute


def _float_compute(fn):
    """An op whose integral inputs compute in the default float dtype (atan2)."""
    def compute(self, other):
        a, b, cd, dev = _float_operands(self, other)
        if cd.np in HALF_TYPES:
            with np.errstate(over="ignore"):   # a number is first a 16-bit scalar tensor (inf past its range)
                a, b = (x if hasattr(x, "shape") else cd.np.type(x) for x in (a, b))
            return _array(_call(fn, _to_f32(a), _to_f32(b))).astype(cd.np), cd, dev
        return _array(_call(fn, a, b)), cd, dev

    def result(self, other):
        cd = _result_dt(self, other)
        return cd if cd.is_floating_point else D.get_default_dtype()
    compute.result = result
    return compute


def _bool_compute(fn, promote=True):
    """Comparison / logical ops: computed in the promoted dtype (or on truth values), returned as bool."""
    def compute(self, other):
        if promote:
            a, b, cd, dev = operands(self, other)
        else:
            dev = _device(self, other)
            a, b = _truth(self, dev), _truth(other, dev)
        return _array(_call(fn, a, b)), D.bool, dev
    compute.result = lambda self, other: D.bool
    return compute


def _truth(x, dev):
    if isinstance(x, Tensor):
        return C.array_operand(x, x._a.dtype, dev)
    return x


remainder, remainder_out, remainder_ = _family(_same_compute(K.remainder, "remainder_cpu"))
fmod, fmod_out, fmod_ = _family(_same_compute(K.fmod, "fmod_cpu"))
maximum, maximum_out, _ = _family(_same_compute(np.maximum))
minimum, minimum_out, _ = _family(_same_compute(np.minimum))
atan2, atan2_out, atan2_ = _family(_float_compute(np.arctan2))
bitwise_and, bitwise_and_out, bitwise_and_ = _family(
    _same_compute(np.bitwise_and, float_kernel="bitwise_and_cpu"))
bitwise_or, bitwise_or_out, bitwise_or_ = _family(_same_compute(np.bitwise_or, float_kernel="bitwise_or_cpu"))
bitwise_xor, bitwise_xor_out, bitwise_xor_ = _family(
    _same_compute(np.bitwise_xor, float_kernel="bitwise_xor_cpu"))

COMPARISONS = {}
for _name, _fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)):
    COMPARISONS[_name] = _family(_bool_compute(_fn))
LOGICAL = {}
for _name, _fn in (("logical_and", np.logical_and), ("logical_or", np.logical_or),
                   ("logical_xor", np.logical_xor)):
    LOGICAL[_name] = _family(_bool_compute(_fn, promote=False))


# --- pow --------------------------------------------------------------------------------------------

def _check_int64_exponent(self, exponent):
    """torch reads an integral base's number exponent as an int64 first: past it, its overflow error."""
    if exponent.__class__ is int and exponent >= 2 ** 63 and not self.is_floating_point():
        C.checked_scalar(exponent, np.dtype(np.int64))


def _pow_compute(self, exponent):
    """pow.Tensor_Tensor, pow.Tensor_Scalar (a number exponent) and pow.Scalar (a number base)."""
    _check_int64_exponent(self, exponent)
    a, b, cd, dev = operands(self, exponent)
    if cd.is_complex:   # NumPy's complex power (0 ** 0 is 1, as torch's)
        return _array(_call(np.power, a, b)), cd, dev
    if not isinstance(exponent, Tensor):
        if cd.np in HALF_TYPES or not (cd.is_floating_point or cd is D.bool):
            C.checked_scalar(exponent, cd.np)   # torch's kernel converts the exponent to these dtypes, checked
        # Tensor_Scalar: bool ** bool stays bool; integral bases refuse negative integral exponents
        if cd is D.bool:
            return (a | (not exponent)) if hasattr(a, "shape") else a, cd, dev
        if not cd.is_floating_point and exponent < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if hasattr(a, "shape") and K.pow_is_products(cd.np, exponent):
            return _array(K.power_by_products(a, float(exponent))), cd, dev
        if cd.np in HALF_TYPES:
            return _array(np.power(a.astype(_F32), exponent)).astype(cd.np), cd, dev
        return _array(_call(np.power, a, b)), cd, dev   # split when large, into the offered out= array
    if cd is D.bool:
        _not_implemented("pow", cd, a, b)
    if cd.np in HALF_TYPES:
        af = a.astype(_F32) if hasattr(a, "astype") else np.float32(a)
        return _array(_call(np.power, af, b.astype(_F32))).astype(cd.np), cd, dev
    if not cd.is_floating_point:
        # a number base becomes a 0-d array on b's device (a host array there would mix memories)
        base = a if hasattr(a, "shape") else C.namespace_of(b).full((), a, cd.np)
        return _array(_call(K.int_power, base, b)), cd, dev
    return _array(_call(np.power, a, b)), cd, dev


_pow_compute.result = _result_dt
pow_, pow_out, _pow_inplace = _family(_pow_compute)


def pow_inplace(self, exponent):
    _check_int64_exponent(self, exponent)
    if not isinstance(exponent, Tensor) and not self.is_floating_point() and \
            not isinstance(exponent, (float, np.floating)) and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return _pow_inplace(self, exponent)
pow_scalar_base, pow_scalar_base_out, _ = _family(_pow_compute)


# --- lerp -------------------------------------------------------------------------------------------

def _lerp_compute(self, end, weight):
    w_tensor = isinstance(weight, Tensor)
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not {type(end).__name__}")
    if self._a.dtype != end._a.dtype:
        raise RuntimeError(f"expected dtype {C.CPP_NAME[self.dtype.name]} for `end` but got dtype "
                           f"{C.CPP_NAME[end.dtype.name]}")
    if w_tensor and weight._a.ndim and weight._a.dtype != self._a.dtype:
        raise RuntimeError(f"expected dtype {C.CPP_NAME[self.dtype.name]} for `weight` but got dtype "
                           f"{C.CPP_NAME[weight.dtype.name]}")
    cd = C.result_type(self, end, weight) if w_tensor else FROM_NP[self._a.dtype]
    if not cd.is_floating_point:
        _not_implemented("lerp_kernel_tensor" if w_tensor else "lerp_kernel_scalar", cd)
    dev = C.common_device(self, end, weight)
    C.check_devices(dev, self, end, weight)
    work = _F32 if cd.np in HALF_TYPES else cd.np
    a = C.array_operand(self, cd.np, dev).astype(work, copy=False)
    e = C.array_operand(end, cd.np, dev).astype(work, copy=False)
    if w_tensor:
        w = C.array_operand(weight, cd.np, dev).astype(work, copy=False)
    else:
        w = float(weight)
    try:
        r = K.lerp(a, e, w)
    except ValueError:
        C.shape_error(a, e, *([w] if w_tensor else []))
    return _array(r).astype(cd.np, copy=False), cd, dev


def lerp(self, end, weight):
    r, cd, dev = _lerp_compute(self, end, weight)
    return _make(r, dev)


def lerp_out(self, end, weight, out=None):
    r, cd, dev = _lerp_compute(self, end, weight)
    return C.finish_out(out, r, cd, dev)


def lerp_(self, end, weight):
    if (weight.__class__ is float or weight.__class__ is int) and isinstance(end, Tensor) and \
            end._device is self._device and end._a.dtype == self._a.dtype:
        # float32/float64 arrays of one shape: lerp's blocks computed straight into self's array
        a = _writable_array(self)
        if a is not None and K.lerp_blocks(a, end._a, float(weight), into=a) is not None:
            self._bump_version()
            return self
    r, cd, dev = _lerp_compute(self, end, weight)
    C.check_inplace(self, cd, r.shape)
    return _write_inplace(self, r)


# --- where ------------------------------------------------------------------------------------------

def _where_operand(x, np_dt, dev):
    if isinstance(x, Tensor):
        return C.array_operand(x, np_dt, dev)
    return C.checked_scalar(x, np_dt)


def where(condition, self, other):
    if not isinstance(condition, Tensor) or condition._a.dtype not in (_BOOL, np.dtype(np.uint8)):
        got = C.tname(condition._a.dtype) if isinstance(condition, Tensor) else type(condition).__name__
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {got}")
    if condition._a.dtype != _BOOL:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed "
                      "in a future version of PyTorch. Use a boolean condition instead.", UserWarning,
                      stacklevel=user_stacklevel())
    cd = C.result_type(self, other)
    dev = C.common_device(condition, self, other)
    C.check_devices(dev, condition, self, other)
    c = C.array_operand(condition, _BOOL, dev)
    a, b = _where_operand(self, cd.np, dev), _where_operand(other, cd.np, dev)
    try:
        r = K.where(c, a, b)
    except ValueError:
        C.broadcast_shapes(*[np.shape(x) for x in (c, a, b)])  # raises torch's message
        raise
    if r.dtype != cd.np:
        r = r.astype(cd.np)
    return C.wrap(r, dev)


def where_out(condition, self, other, out=None):
    r = where(condition, self, other)
    if isinstance(out, Tensor) and out._a.dtype != r._a.dtype:
        raise RuntimeError(f"Expected out type to be {C.TORCH_NAME[r.dtype]} but got {C.tname(out._a.dtype)}")
    return C.finish_out(out, r._a, r.dtype, r._device)


# --- clamp ------------------------------------------------------------------------------------------

def _clamp_compute(self, lo, hi):
    if lo is None and hi is None:
        raise RuntimeError("npusim.clamp: At least one of 'min' or 'max' must not be None")
    tensors = isinstance(lo, Tensor) or isinstance(hi, Tensor)
    cd = C.result_type(self, lo, hi)
    if cd is D.bool:
        if not tensors:
            _not_implemented("clamp_scalar_cpu" if lo is not None and hi is not None else
                             "clamp_min_scalar_cpu" if lo is not None else "clamp_max_scalar_cpu", cd)
        if lo is not None and hi is not None:
            _not_implemented("clamp_cpu", cd)
    dev = C.common_device(self, lo, hi)
    C.check_devices(dev, self, lo, hi)
    a = C.array_operand(self, cd.np, dev)

    def bound(v):
        if v is None:
            return None
        if isinstance(v, Tensor):
            return C.array_operand(v, cd.np, dev)
        return C.checked_scalar(v, cd.np)
    lo_a, hi_a = bound(lo), bound(hi)
    if tensors:
        C.broadcast_shapes(*[np.shape(x) for x in (a, lo_a, hi_a) if x is not None])
    return _array(K.clamp(a, lo_a, hi_a)), cd, dev


def clamp(self, min=None, max=None):  # noqa: A002 - torch's argument names
    r, cd, dev = _clamp_compute(self, min, max)
    return _make(r, dev)


def clamp_out(self, min=None, max=None, out=None):  # noqa: A002
    r, cd, dev = _clamp_compute(self, min, max)
    if isinstance(out, Tensor) and out._a.dtype != cd.np and not isinstance(min, Tensor) and \
            not isinstance(max, Tensor):
        # the scalar overloads want exactly the result dtype; the tensor overloads cast
        raise RuntimeError(f"Found dtype {C.tname(out._a.dtype)} but expected {C.TORCH_NAME[cd]}")
    return C.finish_out(out, r, cd, dev)


def clamp_(self, min=None, max=None):  # noqa: A002
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    if not tensors:
        # the scalar overloads check the result type before converting the bounds to it
        cd = C.result_type(self, min, max)
        _check_clamp_cast(self, cd, tensors)
        a = self._a
        if (min is not None or max is not None) and cd.np == a.dtype and a.dtype in _F32_F64 and \
                a.__class__ is _ndarray and a.flags.writeable:
            # number bounds of a float32/float64 tensor: clamp's blocks computed straight into self's array
            lo, hi = (None if v is None else C.checked_scalar(v, cd.np) for v in (min, max))
            return C.write_out(self, _array(K.clamp(a, lo, hi, into=a)))
    r, cd, dev = _clamp_compute(self, min, max)
    if r.shape != self._a.shape:
        C.check_inplace(self, cd, r.shape)
    _check_clamp_cast(self, cd, tensors)
    return _write_inplace(self, r)


def _check_clamp_cast(self, cd, tensors):
    if not D.can_cast(cd, self.dtype):
        # the scalar overloads name the C++ type, the tensor overloads the ScalarType
        name = C.TORCH_NAME[self.dtype] if tensors else C.CPP_NAME[self.dtype.name]
        raise RuntimeError(f"result type {C.TORCH_NAME[cd]} can't be cast to the desired output type {name}")


def clamp_min(self, min):  # noqa: A002
    return clamp(self, min, None)


def clamp_max(self, max):  # noqa: A002
    return clamp(self, None, max)


def clamp_min_(self, min):  # noqa: A002
    return clamp_(self, min, None)


def clamp_max_(self, max):  # noqa: A002
    return clamp_(self, None, max)
