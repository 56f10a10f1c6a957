"""Dtypes, the default dtype, and PyTorch's type-promotion rules.

Each ``dtype`` wraps the NumPy dtype that stores it (bfloat16 comes from
ml_dtypes); kernels work on NumPy dtypes and never see these objects.
"""
from __future__ import annotations

import math
import threading

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16",
    "bfloat16", "float32", "float64", "half", "float", "double", "short", "int",
    "long", "get_default_dtype", "set_default_dtype", "promote_types",
    "can_cast", "finfo", "iinfo",
    "complex32", "complex64", "complex128", "chalf", "cfloat", "cdouble",
]

_builtin_bool, _builtin_int, _builtin_float = bool, int, float

# Promotion categories, lowest first: bool < integral < floating < complex.
_BOOL, _INT, _FLOAT = 0, 1, 2
_COMPLEX = 3


class dtype:
    """A tensor element type, named and behaving like ``torch.dtype``."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed",
                 "is_complex", "_category", "_rank")

    def __init__(self, name, np_dtype, category, rank):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == _FLOAT
        self.is_complex = category == _COMPLEX
        self.is_signed = category >= _FLOAT or (category == _INT and self.np.kind == "i")
        self._category = category
        self._rank = rank

    def __repr__(self):
        return "npusim." + self.name

    __str__ = __repr__

    def __reduce__(self):
        # Dtypes are singletons: unpickling must give back the same object.
        return (_dtype_by_name, (self.name,))

    def to_real(self):
        """The real dtype of this dtype's parts (complex64 -> float32); a real dtype gives itself."""
        return _REAL_OF.get(self, self)

    def to_complex(self):
        """The complex dtype with this dtype's parts (float32 -> complex64, bfloat16 -> complex64, as torch)."""
        found = _COMPLEX_OF.get(self)
        if found is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {SCALAR_TYPE_NAME[self]}")
        return found


bool = dtype("bool", np.bool_, _BOOL, 0)
uint8 = dtype("uint8", np.uint8, _INT, 1)
int8 = dtype("int8", np.int8, _INT, 2)
int16 = dtype("int16", np.int16, _INT, 3)
int32 = dtype("int32", np.int32, _INT, 4)
int64 = dtype("int64", np.int64, _INT, 5)
float16 = dtype("float16", np.float16, _FLOAT, 6)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT, 7)
float32 = dtype("float32", np.float32, _FLOAT, 8)
float64 = dtype("float64", np.float64, _FLOAT, 9)

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64

# Complex dtypes. NumPy has no complex32: it is stored as a pair of float16 (a structured dtype whose fields
# are the real and imaginary parts), so ``x.real`` of a complex32 array is still a strided view.
COMPLEX32_NP = np.dtype([("real", np.float16), ("imag", np.float16)])
complex32 = dtype("complex32", COMPLEX32_NP, _COMPLEX, 10)
complex64 = dtype("complex64", np.complex64, _COMPLEX, 11)
complex128 = dtype("complex128", np.complex128, _COMPLEX, 12)
chalf = complex32
cfloat = complex64
cdouble = complex128
COMPLEX_DTYPES = (complex32, complex64, complex128)
_REAL_OF = {complex32: float16, complex64: float32, complex128: float64}
_COMPLEX_OF = {float16: complex32, bfloat16: complex64, float32: complex64, float64: complex128,
               **{c: c for c in COMPLEX_DTYPES}}

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
ALL_DTYPES = ALL_DTYPES + COMPLEX_DTYPES
_BY_NAME = {d.name: d for d in ALL_DTYPES}
# torch's ScalarType names: its error messages print these ("Float", "Long", ...)
SCALAR_TYPE_NAME = {bool: "Bool", uint8: "Byte", int8: "Char", int16: "Short", int32: "Int", int64: "Long",
                    float16: "Half", bfloat16: "BFloat16", float32: "Float", float64: "Double"}
SCALAR_TYPE_NAME.update({complex32: "ComplexHalf", complex64: "ComplexFloat", complex128: "ComplexDouble"})
# NumPy dtype -> npusim dtype; hashing an np.dtype is cheap and exact.
FROM_NUMPY = {d.np: d for d in ALL_DTYPES}


def _dtype_by_name(name):
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    try:
        return FROM_NUMPY[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types are: "
            "float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, int8, uint8, and bool."
        ) from None


# --- promotion table (PyTorch's promoteTypes for these dtypes) --------------

def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a._category == _COMPLEX or b._category == _COMPLEX:
        # a complex dtype wins over bool and integral ones; with a floating or complex one, the parts promote
        if a._category < _FLOAT or b._category < _FLOAT:
            return a if a._category == _COMPLEX else b
        return _promote_pair(a.to_real(), b.to_real()).to_complex()
    if a._category != b._category:
        return a if a._category > b._category else b
    if a._category == _FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    if a._category == _INT:
        if uint8 in (a, b):
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    return a


class _PromotionTable(dict):
    """The promotion pairs; a pair of dtypes not in it is one torch refuses to promote (the limited dtypes:
    core/c10/limited_dtypes.py), with torch's error."""

    __slots__ = ()

    def __missing__(self, key):
        a, b = key
        if a.__class__ is dtype and b.__class__ is dtype:
            from .limited_dtypes import promotion_error
            raise promotion_error(a, b)
        raise KeyError(key)


_PROMOTE = _PromotionTable({(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES})
# the Python types torch's argument parser reads as dtypes
_PY_TYPES = {_builtin_float: float64, _builtin_int: int64, _builtin_bool: bool}


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both ``type1`` and ``type2`` can be cast to safely."""
    try:
        return _PROMOTE[type1, type2]
    except (KeyError, TypeError):
        type1, type2 = _check_dtype_arg("promote_types", (("type1", type1), ("type2", type2)))
        return _PROMOTE[type1, type2]


def can_cast(from_: dtype, to: dtype) -> _builtin_bool:
    """PyTorch's same-kind rule: no float->integral, no non-bool->bool."""
    from_, to = _check_dtype_arg("can_cast", (("from_", from_), ("to", to)))
    return from_._category <= to._category


def as_dtype(value):
    """``value`` with the Python types torch's parser takes for a dtype mapped to theirs (``float`` is
    float64, ``int`` int64, ``bool`` bool); anything else comes back unchanged, for the caller's check."""
    if value.__class__ is type:
        found = _PY_TYPES.get(value)
        if found is not None:
            return found
        if value is complex:
            return complex128
    return value


def _check_dtype_arg(fname, named):
    """torch's argument-parser error for the first argument that is not a dtype; returns the dtypes, with
    Python types (``float``, ``int``, ``bool``) taken as torch takes them."""
    out = []
    for pos, (name, value) in enumerate(named, 1):
        value = as_dtype(value)
        if not isinstance(value, dtype):
            raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be npusim.dtype, not "
                            f"{type(value).__name__}")
        out.append(value)
    return out


# --- the default dtype -------------------------------------------------------

_default = float32
_lock = threading.Lock()


def get_default_dtype() -> dtype:
    return _default


def set_default_dtype(d: dtype) -> None:
    """Set the dtype of new floating tensors (float16/bfloat16/float32/float64)."""
    global _default
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    with _lock:
        _default = d


def scalar_dtype(value) -> dtype:
    """The dtype a Python scalar takes when it becomes a tensor on its own."""
    if isinstance(value, _builtin_bool) or isinstance(value, np.bool_):
        return bool
    if isinstance(value, (_builtin_int, np.integer)):
        return int64
    if isinstance(value, (_builtin_float, np.floating)):
        return _default
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex_dtype()
    raise TypeError(f"expected a Python number, got {type(value).__name__}")


def default_complex_dtype() -> dtype:
    """The dtype of new complex tensors: the default float dtype's complex counterpart, as in torch."""
    return _COMPLEX_OF[_default]


# --- finfo / iinfo -----------------------------------------------------------

class finfo:
    """Machine limits of a floating dtype (``torch.finfo``)."""

    def __init__(self, type: dtype | None = None):  # noqa: A002 - torch's parameter name
        type = _default if type is None else type
        type, = _check_dtype_arg("finfo", (("type", type),))
        type = type.to_real()     # torch describes a complex dtype by its parts' dtype
        if not type.is_floating_point:
            raise TypeError("npusim.finfo() requires a floating point input type. Use npusim.iinfo to handle "
                            "'npusim.finfo'")
        if type.np.names is not None:   # float4_e2m1fn_x2: bytes holding two values, as torch's (no finfo)
            raise TypeError("bad argument type for built-in operation")
        info = ml_dtypes.finfo(type.np)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.eps = _builtin_float(info.eps)
        if type.name == "float8_e5m2fnuz":
            self.eps = 0.125   # torch's (c10's numeric_limits) where ml_dtypes has 2 ** -2
        self.max = _builtin_float(info.max)
        self.min = _builtin_float(info.min)
        self.tiny = self.smallest_normal = _builtin_float(info.tiny)
        # torch's resolution: 10 ** -(decimal digits of precision)
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integral dtype (``torch.iinfo``)."""

    def __init__(self, type: dtype):  # noqa: A002
        type, = _check_dtype_arg("iinfo", (("type", type),))
        # the sub-byte integers (limited_dtypes, stored structured) have no iinfo in torch either
        if type.is_floating_point or type.is_complex or type.np.names is not None:
            raise TypeError("npusim.iinfo() requires an integer input type. Use npusim.finfo to handle "
                            "'npusim.iinfo'")
        if type is bool:
            raise TypeError("npusim.bool is not supported by npusim.iinfo")
        info = np.iinfo(type.np)
        self.bits, self.min, self.max = info.bits, _builtin_int(info.min), _builtin_int(info.max)
        self.dtype = type.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


# torch's dtypes with limited support register themselves in the tables above (and are names of this module too,
# as every dtype is: archives name a dtype by its module's attribute)
from . import limited_dtypes as _limited_dtypes  # noqa: E402,F401
from .limited_dtypes import *  # noqa: E402,F401,F403
