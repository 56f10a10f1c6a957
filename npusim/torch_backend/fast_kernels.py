"""The hottest elementwise ops straight on the arrays, with npusim's array kernels (``npusim.kernels.parallel``:
NumPy's ufunc, split over the intra-op threads when large; CuPy's on a GPU), skipping npusim's dispatcher.

``add``/``sub``/``mul``/``div`` and their in-place forms take this path when both operands are npu tensors of one
floating dtype (or the second is a Python number torch wrapped as a CPU scalar) and ``alpha`` is 1: NumPy's
broadcasting, type rules for such operands and results are torch's. Anything else goes to the general adapter.
"""
from __future__ import annotations

import torch

import npusim
from npusim.kernels import parallel
from npusim.privateuse1 import from_array, get_device_hooks

from .adoption import NPUSIM_DEVICE, adopt, array_view
from .dtypes import NUMPY as _NUMPY

_xp = get_device_hooks("npu").array_namespace(NPUSIM_DEVICE)
_from_array = from_array
_array = _xp.ndarray
_Tensor = torch.Tensor
_FLOATS = frozenset({torch.float32, torch.float64, torch.float16, torch.bfloat16})
_SINGLE_OR_DOUBLE = frozenset({torch.float32, torch.float64})
_binary = parallel.binary if _xp.__name__ == "numpy" else (lambda uf, a, b, out=None: uf(a, b, out=out))


def _operand(other, dtype):
    """The array (or Python number) standing for ``other``, or None when the fast path does not apply."""
    if isinstance(other, _Tensor):
        if not other.is_cpu:    # an npu tensor (is_cpu is a C getter; .device builds an object)
            return array_view(other) if other.dtype is dtype else None
        if other.dim() == 0 and (other.dtype.is_floating_point or other.dtype in (torch.int64, torch.int32)):
            other = other.item()    # a number torch wrapped as a CPU scalar
        else:
            return None
    if (other.__class__ is float or other.__class__ is int) and dtype in _SINGLE_OR_DOUBLE:
        # torch computes float32/float64 with the number in the tensor's type; half types compute in float32
        return _xp.asarray(other, _NUMPY[dtype])
    return None


_hooks = get_device_hooks("npu")
_EARLY = 1 << 20    # results below this many bytes are not worth checking against the capacity first
_OOM = npusim.npu.OutOfMemoryError


def _check_capacity(a, b) -> None:
    """npusim's capacity check, before the array is made (as npusim's dispatcher checks its ops)."""
    if a.shape == b.shape or not b.ndim:
        nbytes = a.nbytes
    else:
        n = 1
        for d in _xp.broadcast_shapes(a.shape, b.shape):
            n *= d
        nbytes = n * a.itemsize
    if nbytes > _EARLY:
        try:
            _hooks.check_allocation(nbytes, NPUSIM_DEVICE)
        except _OOM as e:
            raise torch.OutOfMemoryError(str(e)) from None


def _fast(name, ufunc, general):
    def kernel(self, other, **kwargs):
        dtype = self.dtype
        if not kwargs and other.__class__ is _Tensor and other.dtype is dtype and dtype in _FLOATS \
                and not other.is_cpu and not self.is_cpu:
            # the common case, two npu tensors of one floating dtype: as below, with the fewest checks
            a, b = array_view(self), array_view(other)
            if a.shape != b.shape or a.nbytes > _EARLY:
                _check_capacity(a, b)
            try:
                r = _binary(ufunc, a, b)
            except MemoryError as e:
                raise torch.OutOfMemoryError(str(e)) from None
            if r.__class__ is not _array:
                r = _xp.asarray(r)
            return adopt(_from_array(r, NPUSIM_DEVICE), dtype)
        if dtype in _FLOATS and kwargs.get("alpha", 1) == 1 and not kwargs.get("rounding_mode") and not self.is_cpu:
            if other.__class__ is _Tensor and other.dtype is dtype and not other.is_cpu:
                b = array_view(other)     # the common case, inline
            else:
                b = _operand(other, dtype)
            if b is not None:
                a = array_view(self)
                if a.shape != b.shape or a.nbytes > _EARLY:
                    _check_capacity(a, b)
                try:
                    r = _binary(ufunc, a, b)
                except MemoryError as e:    # on a GPU the allocation itself fails (CuPy's OutOfMemoryError)
                    raise torch.OutOfMemoryError(str(e)) from None
                if r.__class__ is not _array:
                    r = _xp.asarray(r)      # NumPy gives a scalar for 0-d operands
                return adopt(from_array(r, NPUSIM_DEVICE), dtype)
        return general(self, other, **kwargs)
    kernel.__name__ = f"npu_fast_{name}"
    return kernel


def _fast_inplace(name, ufunc, general):
    def kernel(self, other, **kwargs):
        dtype = self.dtype
        if dtype in _FLOATS and kwargs.get("alpha", 1) == 1 and not kwargs.get("rounding_mode") and not self.is_cpu:
            b = _operand(other, dtype)
            if b is not None:
                a = array_view(self)
                if b.shape != a.shape and b.ndim and _xp.broadcast_shapes(a.shape, b.shape) != a.shape:
                    return general(self, other, **kwargs)    # torch's shape error
                _binary(ufunc, a, b, out=a)
                return self
        return general(self, other, **kwargs)
    kernel.__name__ = f"npu_fast_{name}_"
    return kernel


OPS = {"add.Tensor": "add", "sub.Tensor": "subtract", "mul.Tensor": "multiply", "div.Tensor": "divide"}


def kernels(general_kernels: dict) -> dict:
    """The fast kernels by op name; ``general_kernels``: the adapters they hand what they do not take."""
    out = {}
    for qual, ufunc_name in OPS.items():
        name, _, overload = qual.partition(".")
        ufunc = getattr(_xp, ufunc_name)
        if qual in general_kernels:
            out[qual] = _fast(name, ufunc, general_kernels[qual])
        inplace = f"{name}_.{overload}"
        if inplace in general_kernels:
            out[inplace] = _fast_inplace(name, ufunc, general_kernels[inplace])
    return out
