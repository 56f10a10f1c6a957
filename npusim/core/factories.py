"""Tensor creation: from Python data and NumPy, and the public factory functions.

Data is parsed on the host with NumPy (torch's dtype inference: bools -> bool,
ints -> int64, floats -> the default dtype), then moved to the target device with
``_to_copy``. Sized factories dispatch ``aten::empty``/``zeros``/... on the device.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from . import dtype as D
from .device import CPU
from .ops_namespace import aten
from .tensor import Size, Tensor, make, resolve_target_device

_to_copy = aten._to_copy.default.fn


def parse_size(size, fname="size"):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])`` or ``f(Size)`` -> tuple of ints."""
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    out = []
    for s in size:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)):
            if isinstance(s, Tensor) and s.numel() == 1 and not s.is_floating_point():
                s = int(s.item())
            else:
                raise TypeError(f"{fname}(): argument 'size' must be tuple of ints, but found element of type "
                                f"{type(s).__name__} at pos {len(out)}")
        out.append(int(s))
    return tuple(out)


# --- data -> array --------------------------------------------------------------------

def _infer_np_dtype(data):
    """The dtype torch infers for nested Python data (None: let NumPy decide)."""
    kinds = set()

    def walk(x, depth=0):
        if isinstance(x, Tensor):
            kinds.add(("t", x.dtype))
        elif isinstance(x, np.ndarray):
            kinds.add(("t", D.from_numpy_dtype(x.dtype)))
        elif isinstance(x, (bool, np.bool_)):
            kinds.add("b")
        elif isinstance(x, (numbers.Integral,)):
            kinds.add("i")
        elif isinstance(x, numbers.Real):
            kinds.add("f" if not isinstance(x, np.floating) else ("t", D.FROM_NUMPY.get(np.dtype(type(x)),
                                                                                       D.float64)))
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y, depth + 1)
        elif isinstance(x, numbers.Complex):
            raise TypeError("npusim has no complex dtypes")
        else:
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")

    walk(data)
    result = None
    for k in kinds:
        if k == "b":
            d = D.bool
        elif k == "i":
            d = D.int64
        elif k == "f":
            d = D.get_default_dtype()
        else:
            d = k[1]
        if result is None:
            result = d
        elif result._category != d._category:
            result = result if result._category > d._category else d
        else:
            result = D.promote_types(result, d) if k[0] == "t" else result
    return result


def _host_value(x):
    if isinstance(x, Tensor):
        if x._a.dtype == D.bfloat16.np:
            return x.detach().cpu()._a.astype(np.float32)
        return x.detach().cpu()._a
    if isinstance(x, (list, tuple)):
        return [_host_value(y) for y in x]
    return x


def _check_ragged(data, depth=0, dims=None):
    if dims is None:
        dims = []
    if isinstance(data, (list, tuple)):
        n = len(data)
        if len(dims) <= depth:
            dims.append(n)
        elif dims[depth] != n:
            raise ValueError(f"expected sequence of length {dims[depth]} at dim {depth} (got {n})")
        for x in data:
            _check_ragged(x, depth + 1, dims)
    return dims


def data_to_array(data, dtype=None) -> np.ndarray:
    """Host array for ``data`` with torch's inferred (or the requested) dtype."""
    if isinstance(data, str) or isinstance(data, bytes):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    if isinstance(data, np.ndarray):
        src = data
        inferred = D.from_numpy_dtype(src.dtype) if dtype is None else dtype
    else:
        inferred = _infer_np_dtype(data) if dtype is None else dtype
        if isinstance(data, (list, tuple)):
            _check_ragged(data)
        try:
            src = np.array(_host_value(data))
        except OverflowError:
            raise RuntimeError("Overflow when unpacking long") from None
        except ValueError as e:
            raise ValueError(f"could not convert data to a tensor: {e}") from None
        if inferred is None:
            inferred = D.get_default_dtype() if src.dtype.kind == "f" else D.from_numpy_dtype(src.dtype)
    if src.dtype.kind == "O":
        raise TypeError("can't convert np.ndarray of type numpy.object_.")
    try:
        return np.array(src, dtype=inferred.np, copy=True) if src.dtype != inferred.np else src.copy()
    except (OverflowError, ValueError):
        return src.astype(inferred.np)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data``."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() or "
                      "sourceTensor.clone().detach().requires_grad_(True), rather than "
                      "npusim.tensor(sourceTensor).", UserWarning, stacklevel=2)
        t = data.detach().clone()
        t = t.to(device=device if device is not None else t.device, dtype=dtype if dtype is not None else t.dtype)
        if t is data or t._a is data._a:
            t = t.clone()
    else:
        if dtype is not None and not isinstance(dtype, D.dtype):
            raise TypeError(f"tensor(): argument 'dtype' must be npusim.dtype, not {type(dtype).__name__}")
        t = make(data_to_array(data, dtype), CPU)
        dev = resolve_target_device(device)
        if dev is not CPU:
            t = _to_copy(t, device=dev)
    if requires_grad:
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
        t = as_tensor(obj, dtype=dtype, device=device)
        if copy is False and isinstance(obj, (Tensor, np.ndarray)) and t.data_ptr() != _ptr(obj):
            raise ValueError("can't alias tensor from a different dtype or device without a copy")
    if requires_grad:
        t.requires_grad_(True)
    return t


def _ptr(obj):
    return obj.data_ptr() if isinstance(obj, Tensor) else obj.__array_interface__["data"][0]


def from_numpy(ndarray) -> Tensor:
    """A cpu tensor sharing memory with ``ndarray``."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    D.from_numpy_dtype(ndarray.dtype)
    if any(s < 0 for s in ndarray.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making a "
                         "copy of your array  with array.copy().) ")
    if not ndarray.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    if not ndarray.flags.writeable:
        warnings.warn("The given NumPy array is not writable, and PyTorch does not support non-writable tensors. "
                      "This means writing to this tensor will result in undefined behavior.", UserWarning,
                      stacklevel=2)
    return make(ndarray, CPU)


def legacy_tensor_new(cls, args, device):
    """``npusim.Tensor(data)`` / ``npusim.Tensor(*sizes)``: float32 tensors, as torch's legacy constructor."""
    if len(args) == 1 and not isinstance(args[0], (int, np.integer)) and not isinstance(args[0], Size):
        data = args[0]
        if isinstance(data, Tensor):
            return data
        t = tensor(data, dtype=D.float32, device=device)
    else:
        t = aten.empty.memory_format.fn(parse_size(args, "Tensor"), dtype=D.float32, device=device)
    if cls is not Tensor:
        t.__class__ = cls
    return t
