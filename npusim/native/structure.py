"""Joining tensors: cat (along an existing dimension) and stack (along a new one).

The result dtype promotes across all inputs. ``cat`` keeps torch's legacy rule
that 1-D empty tensors (shape ``[0]``) are skipped whatever the other shapes
are, and checks the rest in torch's order, with its words. The join itself is
one ``concatenate`` that casts on the way, written straight into ``out=`` when
given.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import linalg_products as K
from ..kernels.array_api import namespace_of
from . import common as C

FROM_NP = C.FROM_NP


def _arrays(tensors):
    """The arrays, their common device and whether they all share one dtype."""
    t0 = tensors[0]
    dev, dt = t0._device, t0._a.dtype
    arrays, same = [], True
    for t in tensors:
        a = t._a
        if t._device is not dev:
            C.raise_device_mismatch(dev, t._device)
        if a.dtype != dt:
            same = False
        arrays.append(a)
    return arrays, dev, same


def _result_dtype(tensors, arrays, same):
    return FROM_NP[arrays[0].dtype] if same else C.result_type(*tensors)


def _dim_arg(dim, op):
    if dim.__class__ is int:
        return dim
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return int(dim)
    raise TypeError(f"{op}(): argument 'dim' (position 2) must be int, not {type(dim).__name__}")


def _check_cast(dt, out):
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    if not D.can_cast(dt, FROM_NP[out._a.dtype]):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{C.tname(out._a.dtype)}")


def _cat_shape(arrays, dim):
    """The result shape; torch's checks of every kept tensor against the first kept one."""
    ref = None
    total = 0
    for i, a in enumerate(arrays):
        if a.ndim == 1 and not a.shape[0]:
            continue
        if ref is None:
            ref = a
        elif a.shape != ref.shape:
            if a.ndim != ref.ndim:
                raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and {a.ndim}")
            for d, (n, m) in enumerate(zip(ref.shape, a.shape)):
                if d != dim and n != m:
                    raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. Expected size {n} "
                                       f"but got size {m} for tensor number {i} in the list.")
        total += a.shape[dim]
    return ref.shape[:dim] + (total,) + ref.shape[dim + 1:]


def _dense(a) -> bool:
    """torch's is_non_overlapping_and_dense: some ordering of the dims is contiguous."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    expected = a.itemsize
    for stride, n in sorted((s, n) for s, n in zip(a.strides, a.shape) if n != 1):
        if stride != expected:
            return False
        expected *= n
    return True


def _overlapping(out_a, arrays) -> bool:
    """True when an input may share memory with ``out`` (torch refuses when it can tell for sure)."""
    xp = namespace_of(out_a)
    shared = False
    for a in arrays:
        if xp.may_share_memory(out_a, a):
            if _dense(out_a) and _dense(a):
                raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to "
                                   "tensor refer to a single memory location. Please clone() the tensor before "
                                   "performing the operation.")
            shared = True
    return shared


def _write_join(out, join, arrays, dim, dt):
    """Run ``join`` into ``out`` (validated and sized), through a temporary when memory may be shared."""
    o = out._a
    if _overlapping(o, arrays):
        C.write_out(out, join(arrays, dim, dt.np))
    else:
        join(arrays, dim, None, out=o)
        out._bump_version()
    return out


def _cat(tensors, dim, out):
    dim = _dim_arg(dim, "cat")
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    arrays, dev, same = _arrays(tensors)
    kept = []
    for i, a in enumerate(arrays):
        if a.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if a.ndim != 1 or a.shape[0]:  # torch still skips 1-D empty tensors, whatever the other shapes
            kept.append(a)
    if kept:
        dim = _wrap_dim(dim, kept[0].ndim)
    dt = _result_dtype(tensors, arrays, same)
    if out is not None:
        _check_cast(dt, out)
    if not kept:
        shape = (0,)
    elif len(kept) == 1:
        shape = kept[0].shape
    else:
        shape = _cat_shape(arrays, dim)
    if out is None:
        if not kept:
            return C.make(namespace_of(arrays[0]).empty((0,), dt.np), dev)
        return C.make(K.concatenate(kept, dim, dt.np), dev)
    C.prepare_out(out, shape, dt, dev, check_cast=False)
    if not kept:
        return out
    return _write_join(out, K.concatenate, kept, dim, dt)


def cat(tensors, dim=0):
    return _cat(tensors, dim, None)


def cat_out(tensors, dim=0, *, out=None):
    return _cat(tensors, dim, out)


def _stack(tensors, dim, out):
    dim = _dim_arg(dim, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0]._a.shape
    dim = _wrap_dim(dim, len(first) + 1)
    for i, t in enumerate(tensors):
        if t._a.shape != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 and "
                               f"{list(t._a.shape)} at entry {i}")
    arrays, dev, same = _arrays(tensors)
    dt = _result_dtype(tensors, arrays, same)
    if out is None:
        return C.make(K.stack(arrays, dim, dt.np), dev)
    _check_cast(dt, out)
    C.prepare_out(out, first[:dim] + (len(arrays),) + first[dim:], dt, dev, check_cast=False)
    return _write_join(out, K.stack, arrays, dim, dt)


def stack(tensors, dim=0):
    return _stack(tensors, dim, None)


def stack_out(tensors, dim=0, *, out=None):
    return _stack(tensors, dim, out)


KERNELS = {
    "cat": cat, "cat.out": cat_out,
    "stack": stack, "stack.out": stack_out,
}
