"""Public factory functions with torch's signatures (``npusim.zeros(2, 3, device="npu")``).

Arguments are checked here the way torch's Python argument parser checks them
(same exception types and words), then the aten overload is dispatched on the
target device.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..core.c10 import dtype as D
from ..core.factories import parse_size
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor

__all__ = ["empty", "zeros", "ones", "full", "arange", "linspace", "eye", "empty_like", "zeros_like",
           "ones_like", "full_like", "empty_strided", "scalar_tensor"]

_copy_ = aten.copy_.default.fn
_TAIL = ("*, Tensor out = None, npusim.dtype dtype = None, npusim.layout layout = None, npusim.device device = "
         "None, bool pin_memory = False, bool requires_grad = False")
_SIGNATURES = {
    "arange": [f"(Number end, {_TAIL})",
               "(Number start, Number end, *, npusim.dtype dtype = None, npusim.layout layout = None, "
               "npusim.device device = None, bool pin_memory = False, bool requires_grad = False)",
               f"(Number start, Number end, Number step = 1, {_TAIL})"],
    "linspace": [f"(Tensor start, Tensor end, int steps, {_TAIL})", f"(Number start, Tensor end, int steps, {_TAIL})",
                 f"(Tensor start, Number end, int steps, {_TAIL})", f"(Number start, Number end, int steps, {_TAIL})"],
    "eye": [f"(int n, {_TAIL})", f"(int n, int m, {_TAIL})"],
}


def _arg_type(v) -> str:
    return "npusim.dtype" if isinstance(v, D.dtype) else type(v).__name__


def _invalid_combination(name, args, kwargs):
    got = [_arg_type(a) for a in args] + [f"{k}={_arg_type(v)}" for k, v in kwargs.items()]
    lines = "\n".join(f" * {sig}" for sig in _SIGNATURES[name])
    raise TypeError(f"{name}() received an invalid combination of arguments - got ({', '.join(got)}), but "
                    f"expected one of:\n{lines}\n")


def _is_number(v) -> bool:
    return isinstance(v, numbers.Number) or isinstance(v, Tensor) and v._a.ndim == 0


def _check_dtype(name, dtype):
    """``dtype`` as a dtype (torch's parser takes ``float``, ``int`` and ``bool`` too), or torch's error."""
    dtype = D.as_dtype(dtype)
    if dtype is not None and not isinstance(dtype, D.dtype):
        raise TypeError(f"{name}(): argument 'dtype' must be npusim.dtype, not {type(dtype).__name__}")
    return dtype


def _check_requires_grad(dtype, requires_grad, name=None):
    if name is not None and requires_grad is not None and not isinstance(requires_grad, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument 'requires_grad' must be bool, not {type(requires_grad).__name__}")
    if requires_grad and dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def _check_out(out, dtype):
    """An explicit dtype must agree with ``out``'s; without one the result takes ``out``'s dtype."""
    if out is None:
        return dtype
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"dtype {D.SCALAR_TYPE_NAME[dtype]} does not match dtype of out parameter "
                           f"({D.SCALAR_TYPE_NAME[out.dtype]})")
    return out.dtype


def _finish(t, requires_grad, out, pin_memory=False):
    if pin_memory:
        if t.device.type != "cpu":
            raise RuntimeError("Only dense CPU tensors can be pinned")
        t = t.pin_memory()
    if out is not None:
        if out.shape != t.shape:
            aten.resize_.default.fn(out, t.shape)
        _copy_(out, t)
        t = out
    if requires_grad:
        t.requires_grad_(True)
    return t


NO_SIZE = object()


def size_arguments(name, sizes, size=NO_SIZE):
    """The sizes of ``name(*sizes)`` or of ``name(size=...)``: torch takes either form, not both."""
    if size is NO_SIZE:
        if not sizes:
            raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
        return sizes
    if sizes:
        got = ", ".join(type(s).__name__ for s in sizes)
        raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}, size="
                        f"{type(size).__name__}): the size is given either by position or by keyword")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return (size,)


def _sized(op, name):
    def factory(*sizes, size=NO_SIZE, out=None, dtype=None, layout=None, device=None, requires_grad=False,
                pin_memory=False, memory_format=None):
        shape = parse_size(size_arguments(name, sizes, size), name)
        dtype = _check_dtype(name, dtype)
        _check_requires_grad(None, requires_grad, name)   # torch parses every argument first
        dtype = _check_out(out, dtype)
        if name == "zeros" and any(s < 0 for s in shape):
            raise RuntimeError("zeros: Dimension size must be non-negative.")
        fmt = {}
        if memory_format is not None and name == "empty":   # only empty lays out its memory as asked
            if out is not None:
                raise RuntimeError("'memory_format' argument is incompatible with 'out' tensor argument")
            fmt = {"memory_format": memory_format}
        t = op(shape, dtype=dtype, layout=layout, device=device if device is not None or out is None else out.device,
               pin_memory=pin_memory, **fmt)
        _check_requires_grad(t.dtype, requires_grad, name)
        return _finish(t, requires_grad, out, pin_memory)
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"{name}(*size, *, out=None, dtype=None, layout=None, device=None, requires_grad=False)"
    return factory


empty = _sized(aten.empty.memory_format.fn, "empty")
zeros = _sized(aten.zeros.default.fn, "zeros")
ones = _sized(aten.ones.default.fn, "ones")


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value`` (its dtype by default: bool, int64 or the default float)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    shape = parse_size((size,), "full")
    if not _is_number(fill_value):
        raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not {type(fill_value).__name__}")
    dtype = _check_dtype("full", dtype)
    _check_requires_grad(None, requires_grad, "full")   # torch parses every argument first
    dtype = _check_out(out, dtype)
    t = aten.full.default.fn(shape, fill_value, dtype=dtype, layout=layout,
                             device=device if device is not None or out is None else out.device,
                             pin_memory=pin_memory)
    _check_requires_grad(t.dtype, requires_grad, "full")
    return _finish(t, requires_grad, out, pin_memory)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    for name, pos, v in (("size", 1, size), ("stride", 2, stride)):
        if not isinstance(v, (tuple, list)):
            raise TypeError(f"empty_strided(): argument '{name}' (position {pos}) must be tuple of ints, not "
                            f"{type(v).__name__}")
    size = parse_size((size,), "empty_strided")
    stride = parse_size((stride,), "empty_strided", "stride", 2)
    dtype = _check_dtype("empty_strided", dtype)
    _check_requires_grad(None, requires_grad, "empty_strided")   # torch parses every argument first
    t = aten.empty_strided.default.fn(list(size), list(stride), dtype=dtype, layout=layout, device=device)
    _check_requires_grad(t.dtype, requires_grad, "empty_strided")
    return _finish(t, requires_grad, None, pin_memory)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    if not _is_number(s):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not {type(s).__name__}")
    dtype = _check_dtype("scalar_tensor", dtype)
    _check_requires_grad(None, requires_grad, "scalar_tensor")   # torch parses every argument first
    t = aten.scalar_tensor.default.fn(s, dtype=dtype, layout=layout, device=device)
    _check_requires_grad(t.dtype, requires_grad, "scalar_tensor")
    return _finish(t, requires_grad, None, pin_memory)


_NO_END = object()


def arange(start=0, end=_NO_END, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``; int64 unless an argument is a float."""
    dtype = D.as_dtype(dtype)
    _check_requires_grad(None, requires_grad, "arange")
    if end is None:   # given as None: torch has no such overload
        _invalid_combination("arange", (start, end) if step == 1 else (start, end, step),
                             {} if dtype is None else {"dtype": dtype})
    if end is _NO_END:
        if not _is_number(start):
            raise TypeError(f"arange(): argument 'end' (position 1) must be Number, not {type(start).__name__}")
        start, end = 0, start
    elif not all(_is_number(v) for v in (start, end, step)) or \
            (dtype is not None and not isinstance(dtype, D.dtype)):
        args = (start, end) if step == 1 else (start, end, step)
        _invalid_combination("arange", args, {} if dtype is None else {"dtype": dtype})
    dtype = _check_dtype("arange", dtype)
    _check_requires_grad(None, requires_grad, "arange")   # torch parses every argument first
    for v in (start, end, step):   # torch parses a number as int64 or uint64, then needs an int64
        if v.__class__ is int and not -2 ** 63 <= v < 2 ** 64:
            raise OverflowError("int too big to convert" if v > 0 else "can't convert negative int to unsigned")
    int64 = dtype is D.int64 or dtype is None and not any(isinstance(v, float) for v in (start, end, step))
    for v in (start, end, step):   # an int64 result reads its numbers as int64; others as doubles
        if int64 and v.__class__ is int and v >= 2 ** 63:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
    if dtype is D.bool:   # torch's kernel has no bool: refused before any value is checked
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if step != step:   # NaN
        raise RuntimeError("step must be nonzero")
    dtype = _check_out(out, dtype)
    t = aten.arange.start_step.fn(start, end, step, dtype=dtype, layout=layout,
                                  device=device if device is not None or out is None else out.device)
    _check_requires_grad(t.dtype, requires_grad, "arange")
    return _finish(t, requires_grad, out, pin_memory)


def linspace(start, end, steps=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` (both included)."""
    dtype = D.as_dtype(dtype)
    _check_requires_grad(None, requires_grad, "linspace")
    if not isinstance(steps, int) or isinstance(steps, bool) or not _is_number(start) or not _is_number(end) or \
            (dtype is not None and not isinstance(dtype, D.dtype)):
        kwargs = {} if dtype is None else {"dtype": dtype}
        if steps is None:
            _invalid_combination("linspace", (start, end), kwargs)
        _invalid_combination("linspace", (start, end, steps), kwargs)
    dtype = _check_out(out, dtype)
    t = aten.linspace.default.fn(start, end, steps, dtype=dtype, layout=layout,
                                 device=device if device is not None or out is None else out.device)
    _check_requires_grad(t.dtype, requires_grad, "linspace")
    return _finish(t, requires_grad, out, pin_memory)


_NO_M = object()


def eye(n, m=_NO_M, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A 2-D tensor with ones on the diagonal."""
    dtype = D.as_dtype(dtype)
    _check_requires_grad(None, requires_grad, "eye")
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"eye(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if m is not _NO_M and (not isinstance(m, int) or isinstance(m, bool)) or \
            (dtype is not None and not isinstance(dtype, D.dtype)):
        _invalid_combination("eye", (n,) if m is _NO_M else (n, m), {} if dtype is None else {"dtype": dtype})
    m = None if m is _NO_M else m
    dtype = _check_out(out, dtype)
    dev = device if device is not None or out is None else out.device
    if m is None:
        t = aten.eye.default.fn(n, dtype=dtype, layout=layout, device=dev)
    else:
        t = aten.eye.m.fn(n, m, dtype=dtype, layout=layout, device=dev)
    _check_requires_grad(t.dtype, requires_grad, "eye")
    return _finish(t, requires_grad, out, pin_memory)


def _like(op, name):
    def factory(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        dtype = _check_dtype(name, dtype)
        _check_requires_grad(None, requires_grad, name)   # torch parses every argument first
        _check_requires_grad(dtype or input.dtype, requires_grad, name)
        return _finish(op(input, dtype=dtype, layout=layout, device=device, memory_format=memory_format),
                       requires_grad, None)
    factory.__name__ = factory.__qualname__ = name
    return factory


empty_like = _like(aten.empty_like.default.fn, "empty_like")
zeros_like = _like(aten.zeros_like.default.fn, "zeros_like")
ones_like = _like(aten.ones_like.default.fn, "ones_like")


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"full_like(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not _is_number(fill_value):
        raise TypeError(f"full_like(): argument 'fill_value' (position 2) must be Number, not "
                        f"{type(fill_value).__name__}")
    dtype = _check_dtype("full_like", dtype)
    _check_requires_grad(None, requires_grad, "full_like")   # torch parses every argument first
    if fill_value.__class__ is int and not -2 ** 63 <= fill_value < 2 ** 64:   # then reads the values
        raise OverflowError("can't convert negative int to unsigned" if fill_value < 0 else "int too big to convert")
    _check_requires_grad(dtype or input.dtype, requires_grad, "full_like")
    t = aten.full_like.default.fn(input, fill_value, dtype=dtype, layout=layout, device=device,
                                  memory_format=memory_format)
    return _finish(t, requires_grad, None)
