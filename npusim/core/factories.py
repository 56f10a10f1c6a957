"""Tensor creation: from Python data and NumPy, and the public factory functions.

Data is parsed on the host with NumPy (torch's dtype inference: bools -> bool,
ints -> int64, floats -> the default dtype), then moved to the target device with
``_to_copy``. Sized factories dispatch ``aten::empty``/``zeros``/... on the device.
"""
from __future__ import annotations

import warnings

import numpy as np

from .c10 import dtype as D
from .c10.float8_rounding import to_float8
from .c10.limited_dtypes import FLOAT8_NP
from .c10.device import CPU
from .dispatch.ops_namespace import aten
from .c10.storage import UntypedStorage
from .c10.device_hooks import resolve_target_device
from .tensor import Size, Tensor, make

_to_copy = aten._to_copy.default.fn


def parse_size(size, fname="size", argname="size", position=1):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(Size)`` -> tuple of ints, with torch's argument errors.

    ``size`` is the tuple of positional arguments; 0-dim integral tensors count as ints.
    """
    for s in size:   # the common call, f(2, 3): plain ints need no conversion
        if s.__class__ is not int:
            break
    else:
        return size if size.__class__ is tuple else tuple(size)
    if len(size) == 1:
        first = size[0]
        if isinstance(first, (tuple, list, Size)):
            size = first
        elif not _is_int(first):
            raise TypeError(f"{fname}(): argument '{argname}' (position {position}) must be tuple of ints, not "
                            f"{type(first).__name__}")
    out = []
    for i, s in enumerate(size):
        if not _is_int(s):
            if i == 0:  # torch's parser only accepts the sequence once its first element is an int
                raise TypeError(f"{fname}(): argument '{argname}' (position {position}) must be tuple of ints, but "
                                f"found element of type {type(s).__name__} at pos 0")
            raise TypeError(f"{fname}(): argument '{argname}' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {type(s).__name__}\"")
        out.append(int(s))
    return tuple(out)


def _is_int(v) -> bool:
    if isinstance(v, (int, np.integer)):
        return not isinstance(v, (bool, np.bool_))
    return isinstance(v, Tensor) and v._a.ndim == 0 and v._a.dtype.kind in "iu"


# --- data -> array --------------------------------------------------------------------
#
# torch.tensor(data) reads nested sequences the way torch's C++ does: the dtype is the
# promotion of every leaf's dtype, the shape follows the first element at each level,
# and each leaf is converted with Python's number protocols (so the error for a bad
# leaf depends on the target dtype).

_SEQUENCES = (list, tuple, range, np.ndarray)
_PY_NUMBERS = (bool, int, float)


def _type_name(x) -> str:
    cls = type(x)
    return f"numpy.{cls.__name__}" if cls.__module__ == "numpy" else cls.__name__


def _compute_sizes(data):
    sizes = []
    seq = data
    while isinstance(seq, _SEQUENCES):
        n = len(seq)
        sizes.append(n)
        if n == 0:
            break
        seq = seq[0]
        if isinstance(seq, (str, bytes)):
            raise ValueError(f"too many dimensions '{'str' if isinstance(seq, str) else 'bytes'}'")
    return sizes


def _leaf_dtype(x):
    if isinstance(x, Tensor):
        return x.dtype
    if isinstance(x, np.generic):
        return D.from_numpy_dtype(x.dtype)
    if isinstance(x, bool):
        return D.bool
    if isinstance(x, int):
        return D.int64
    if isinstance(x, float):
        return D.get_default_dtype()
    if isinstance(x, complex):
        return D.default_complex_dtype()
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def infer_dtype(data):
    """torch's dtype inference: the promotion of all leaves (an empty sequence: the default dtype)."""
    if isinstance(data, np.ndarray):
        return D.from_numpy_dtype(data.dtype)
    if not isinstance(data, (list, tuple, range)):
        return _leaf_dtype(data)
    result = None
    stack = [data]
    while stack:
        seq = stack.pop()
        if len(seq) == 0:
            d = D.get_default_dtype()  # an empty sequence counts as the default dtype
            result = d if result is None else D.promote_types(result, d)
        for x in seq:
            if isinstance(x, (list, tuple, range)):
                stack.append(x)
                continue
            d = D.from_numpy_dtype(x.dtype) if isinstance(x, np.ndarray) else _leaf_dtype(x)
            result = d if result is None else D.promote_types(result, d)
    return result


def _flatten(seq, sizes, dim, out):
    """Append the leaves of ``seq`` (checked against ``sizes``) to ``out``."""
    if not isinstance(seq, _SEQUENCES):
        raise TypeError("not a sequence")
    n = len(seq)
    if n != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {n})")
    if dim == len(sizes) - 1:
        out.extend(seq.tolist() if isinstance(seq, np.ndarray) else seq)
    else:
        for x in seq:
            _flatten(x, sizes, dim + 1, out)


_INT_NAME = {D.uint8: "uint8", D.int8: "int8", D.int16: "int16", D.int32: "int32", D.int64: "int64"}


def _overflow(dt):
    raise RuntimeError(f"value cannot be converted to type {_INT_NAME[dt]} without overflow")


def _leaf_to_number(x, dt):
    """One leaf as a Python number for dtype ``dt``, with the error torch's unpacking gives."""
    integral = not dt.is_floating_point
    if isinstance(x, Tensor):
        if x.numel() != 1 or integral and x.is_floating_point():
            if integral:
                raise TypeError("only integer tensors of a single element can be converted to an index")
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x.item()
    if isinstance(x, _PY_NUMBERS) or dt is D.bool and isinstance(x, complex):
        return x
    if isinstance(x, np.generic) and (x.dtype.kind in "biuf" or x.dtype == D.bfloat16.np):
        # NumPy floats (and NumPy bools, for integers) are refused by the integer unpacking
        if integral and (x.dtype.kind not in "iub" or x.dtype.kind == "b" and dt is not D.bool):
            raise TypeError(f"'{_type_name(x)}' object cannot be interpreted as an integer")
        return x.item()
    if integral:
        raise TypeError(f"'{_type_name(x)}' object cannot be interpreted as an integer")
    raise TypeError(f"must be real number, not {_type_name(x)}")


def _complex_leaves_to_array(leaves, dt):
    values = []
    for x in leaves:
        if isinstance(x, Tensor):
            if x.numel() != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            x = x.item()
        elif isinstance(x, np.generic):
            x = x.item()
        if not isinstance(x, (bool, int, float, complex)):
            raise TypeError(f"must be real number, not {_type_name(x)}")
        values.append(complex(x))
    a = np.array(values, dtype=np.complex128)
    if dt.np.names is None:
        return a.astype(dt.np)
    r = np.empty(a.shape, dt.np)     # complex32: the float16 pair, part by part
    r["real"], r["imag"] = a.real, a.imag
    return r


def _uint64_leaves(leaves):
    """Python ints for a uint64 tensor, some past int64: torch's parser reads them as uint64, so none may be
    negative (nor past uint64)."""
    if any(x >= 2 ** 64 for x in leaves):
        raise OverflowError("int too big to convert")
    if any(x < 0 for x in leaves):
        raise OverflowError("can't convert negative int to unsigned")
    return np.array(leaves, dtype=np.uint64)


def _leaves_to_array(leaves, dt):
    if dt.is_complex:
        return _complex_leaves_to_array(leaves, dt)
    if dt.np.names is not None and leaves:   # the sub-byte integers and float4_e2m1fn_x2 (limited_dtypes)
        raise RuntimeError("store_scalar: invalid type")
    if not all(type(x) in _PY_NUMBERS for x in leaves):
        leaves = [_leaf_to_number(x, dt) for x in leaves]
    if dt is D.bool:
        return np.array([bool(x) for x in leaves], dtype=np.bool_)
    if dt.is_floating_point:
        with np.errstate(over="ignore"):  # values past the dtype's range become inf, silently as in torch
            try:
                if dt.np in FLOAT8_NP:
                    return to_float8(np.array(leaves, dtype=np.float64), dt.np)   # torch's rounding
                return np.array(leaves, dtype=np.float64).astype(dt.np)
            except OverflowError:
                return np.array([float(x) for x in leaves], dtype=np.float64).astype(dt.np)
    if all(type(x) is not float for x in leaves):
        try:
            vals = np.array(leaves, dtype=np.int64)
        except OverflowError:
            if dt.np == np.uint64:
                return _uint64_leaves(leaves)
            raise ValueError("Overflow when unpacking long long") from None
    else:
        f = np.array(leaves, dtype=np.float64)
        if not np.isfinite(f).all() or (f.size and (f.min() <= -2.0 ** 63 or f.max() >= 2.0 ** 63)):
            _overflow(dt)
        vals = f.astype(np.int64)
    if dt is not D.int64 and vals.size:
        info = np.iinfo(dt.np)
        low = -int(info.max) if info.min == 0 else info.min  # negatives may wrap into unsigned types
        if vals.min() < low or vals.max() > info.max:
            _overflow(dt)
    return vals.astype(dt.np)


def _from_numpy_array(a, dtype):
    check_numpy_array(a)
    src_dt = D.from_numpy_dtype(a.dtype)
    dt = src_dt if dtype is None else dtype
    return np.array(a, dtype=dt.np, copy=True)


def data_to_array(data, dtype=None) -> np.ndarray:
    """Host array for ``data`` with torch's inferred (or the requested) dtype."""
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if isinstance(data, np.ndarray):
        return _from_numpy_array(data, dtype)
    sizes = _compute_sizes(data)
    dt = infer_dtype(data) if dtype is None else dtype
    if not sizes:
        return _leaves_to_array([data], dt).reshape(())
    leaves = []
    if 0 not in sizes:
        _flatten(data, sizes, 0, leaves)
    return _leaves_to_array(leaves, dt).reshape(sizes)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data``."""
    if not isinstance(requires_grad, (bool, np.bool_)):
        raise TypeError(f"tensor(): argument 'requires_grad' must be bool, not {type(requires_grad).__name__}")
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "npusim.tensor(sourceTensor).", UserWarning, stacklevel=2)
        t = data.detach().clone()
        t = t.to(device=device if device is not None else t.device, dtype=dtype if dtype is not None else t.dtype)
        if t is data or t._a is data._a:
            t = t.clone()
    else:
        dtype = D.as_dtype(dtype)
        if dtype is not None and not isinstance(dtype, D.dtype):
            raise TypeError(f"tensor(): argument 'dtype' must be npusim.dtype, not {type(dtype).__name__}")
        t = make(data_to_array(data, dtype), CPU)
        dev = resolve_target_device(device)
        if dev is not CPU:
            t = _to_copy(t, device=dev)
    if pin_memory:
        if t.device.type != "cpu":
            raise RuntimeError("Only dense CPU tensors can be pinned")
        t = t.pin_memory()
    if requires_grad:
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t.requires_grad_(True)
    return t


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Share memory with ``data`` where it already has the right dtype and device."""
    if isinstance(data, Tensor):
        return data.to(device=device if device is not None else data.device,
                       dtype=dtype if dtype is not None else data.dtype)
    if isinstance(data, np.ndarray) and (dtype is None or dtype.np == data.dtype):
        t = from_numpy(data)
        dev = resolve_target_device(device)
        return t if dev is CPU else _to_copy(t, device=dev)
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    if copy:
        t = tensor(obj, dtype=dtype, device=device) if not isinstance(obj, Tensor) else \
            obj.detach().clone().to(device=device or obj.device, dtype=dtype or obj.dtype)
    else:
        if copy is False and isinstance(obj, (Tensor, np.ndarray)):
            src = obj.dtype if isinstance(obj, Tensor) else D.from_numpy_dtype(obj.dtype)
            if dtype is not None and dtype is not src:
                raise ValueError(f"can't alias tensor with dtype '{D.SCALAR_TYPE_NAME[src]}' into dtype "
                                 f"'{D.SCALAR_TYPE_NAME[dtype]}'.")
        t = as_tensor(obj, dtype=dtype, device=device)
        if copy is False and isinstance(obj, (Tensor, np.ndarray)) and t.data_ptr() != _ptr(obj):
            raise ValueError("can't alias tensor from a different device without a copy")
    if requires_grad:
        t.requires_grad_(True)
    return t


def _ptr(obj):
    return obj.data_ptr() if isinstance(obj, Tensor) else obj.__array_interface__["data"][0]


def check_numpy_array(a):
    """torch's checks on an ndarray before sharing its memory."""
    if a.dtype not in D.FROM_NUMPY:
        raise TypeError(f"can't convert np.ndarray of type numpy.{a.dtype.type.__name__}. The only supported "
                        "types are: float64, float32, float16, bfloat16, complex64, complex128, int64, int32, int16, "
                        "int8, uint8, and bool.")
    if any(s < 0 for s in a.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if not a.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")


def from_numpy(ndarray) -> Tensor:
    """A cpu tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    check_numpy_array(ndarray)
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                      "This means writing to this tensor will result in undefined behavior. You may want to copy "
                      "the array to protect its data or make it writable before converting it to a tensor. This "
                      "type of warning will be suppressed for the rest of this program.", UserWarning, stacklevel=2)
    t = make(ndarray, CPU)
    t._st = UntypedStorage._wrap(ndarray, CPU)  # the storage starts at the array's first element, as in torch
    return t


def legacy_tensor_new(cls, args, device):
    """``npusim.Tensor(data)`` / ``npusim.Tensor(*sizes)``: float32 tensors, as torch's legacy constructor."""
    if len(args) == 1 and not _is_int(args[0]) and not isinstance(args[0], Size):
        data = args[0]
        if isinstance(data, Tensor):
            return data
        if isinstance(data, (bool, float, complex, np.bool_, np.floating)):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        t = tensor(data, dtype=D.float32, device=device)
    else:
        t = aten.empty.memory_format.fn(parse_size(args, "new") if args else (0,), dtype=D.float32, device=device)
    if cls is not Tensor:
        t.__class__ = cls
    return t
