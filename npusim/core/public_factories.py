"""Public factory functions with torch's signatures (``npusim.zeros(2, 3, device="npu")``)."""
from __future__ import annotations

from .factories import parse_size
from .ops_namespace import aten
from .tensor import Tensor

__all__ = ["empty", "zeros", "ones", "full", "arange", "linspace", "eye", "empty_like", "zeros_like",
           "ones_like", "full_like", "empty_strided", "scalar_tensor"]

_copy_ = aten.copy_.default.fn


def _finish(t, requires_grad, out):
    if out is not None:
        if not isinstance(out, Tensor):
            raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
        if out.shape != t.shape:
            aten.resize_.default.fn(out, t.shape)
        _copy_(out, t)
        t = out
    if requires_grad:
        t.requires_grad_(True)
    return t


def _sized(op, name):
    def factory(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
                memory_format=None):
        shape = parse_size(size, name)
        if out is not None and dtype is None:
            dtype = out.dtype
        t = op(shape, dtype=dtype, layout=layout, device=device if device is not None or out is None else out.device,
               pin_memory=pin_memory)
        return _finish(t, requires_grad, out)
    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"{name}(*size, *, out=None, dtype=None, layout=None, device=None, requires_grad=False)"
    return factory


empty = _sized(aten.empty.memory_format.fn, "empty")
zeros = _sized(aten.zeros.default.fn, "zeros")
ones = _sized(aten.ones.default.fn, "ones")


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False):
    t = aten.full.default.fn(parse_size((size,) if not isinstance(size, int) else (size,), "full"), fill_value,
                             dtype=dtype, layout=layout, device=device, pin_memory=pin_memory)
    return _finish(t, requires_grad, out)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    t = aten.empty_strided.default.fn(list(size), list(stride), dtype=dtype, layout=layout, device=device)
    return _finish(t, requires_grad, None)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    return _finish(aten.scalar_tensor.default.fn(s, dtype=dtype, layout=layout, device=device), requires_grad, None)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False):
    if end is None:
        start, end = 0, start
    if out is not None and dtype is None:
        dtype = out.dtype
    t = aten.arange.start_step.fn(start, end, step, dtype=dtype, layout=layout,
                                  device=device if device is not None or out is None else out.device)
    return _finish(t, requires_grad, out)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False):
    if not isinstance(steps, int) or isinstance(steps, bool):
        raise TypeError(f"linspace(): argument 'steps' must be int, not {type(steps).__name__}")
    t = aten.linspace.default.fn(start, end, steps, dtype=dtype, layout=layout, device=device)
    return _finish(t, requires_grad, out)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    if m is None:
        t = aten.eye.default.fn(n, dtype=dtype, layout=layout, device=device)
    else:
        t = aten.eye.m.fn(n, m, dtype=dtype, layout=layout, device=device)
    return _finish(t, requires_grad, out)


def _like(op, name):
    def factory(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
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
    t = aten.full_like.default.fn(input, fill_value, dtype=dtype, layout=layout, device=device,
                                  memory_format=memory_format)
    return _finish(t, requires_grad, None)
