"""Tensor-level kernels of the structure ops: joining (cat, stack) and building a new layout from a tensor
(flip, roll, tril / triu, repeat, tile, repeat_interleave).

Joins promote the result dtype across all inputs. ``cat`` keeps torch's legacy rule
that 1-D empty tensors (shape ``[0]``) are skipped whatever the other shapes
are, and checks the rest in torch's order, with its words. The join itself is
one ``concatenate`` that casts on the way, written straight into ``out=`` when
given. The layout builders' array work lives in ``npusim.kernels.structure``.
"""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.c10.device import CPU
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import structure as KS
from ..kernels.array_api import namespace_of
from . import common as C

FROM_NP = C.FROM_NP
_INT64 = np.dtype(np.int64)
_INDEX_DTYPES = (np.dtype(np.int32), _INT64)


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
        return C.make(KS.concatenate(kept, dim, dt.np), dev)
    C.prepare_out(out, shape, dt, dev, check_cast=False)
    if not kept:
        return out
    return _write_join(out, KS.concatenate, kept, dim, dt)


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
        return C.make(KS.stack(arrays, dim, dt.np), dev)
    _check_cast(dt, out)
    C.prepare_out(out, first[:dim] + (len(arrays),) + first[dim:], dt, dev, check_cast=False)
    return _write_join(out, KS.stack, arrays, dim, dt)


def stack(tensors, dim=0):
    return _stack(tensors, dim, None)


def stack_out(tensors, dim=0, *, out=None):
    return _stack(tensors, dim, out)


# --- layout builders' arguments ------------------------------------------------------------------------------------

def _int_list(v, op, name, pos, single_ok=False):
    """An int[] argument; ``single_ok`` for int[1] slots, which also take a bare int."""
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            if not C.is_int(x):
                raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of ints, but found "
                                f"element of type {type(x).__name__} at pos {i}")
        return [int(x) for x in v]
    if single_ok and C.is_int(v):
        return [int(v)]
    raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of ints, not {type(v).__name__}")


# --- flip, roll ----------------------------------------------------------------------------------------------

def flip(self, dims):
    dims = _int_list(dims, "flip", "dims", 2)
    a = self._a
    axes = C.dims_arg(dims, a.ndim) if dims else ()
    return C.make(KS.flip(a, axes if a.ndim else ()), self._device)


def roll(self, shifts, dims=()):
    shifts = _int_list(shifts, "roll", "shifts", 2, single_ok=True)
    dims = _int_list(dims, "roll", "dims", 3, single_ok=True)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if len(shifts) != len(dims) and (dims or len(shifts) != 1):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    a = self._a
    if a.size == 0:   # torch returns a copy before it looks at the dims
        return C.make(a.copy(), self._device)
    if not dims:
        return C.make(KS.roll_flat(a, shifts[0]), self._device)
    axes = [C.sized_dim(d, a.ndim) for d in dims]
    return C.make(KS.roll(a, shifts, axes), self._device)


# --- tril, triu ----------------------------------------------------------------------------------------------

def _triangle_args(self, diagonal, name, pos):
    diagonal = C.int_arg(diagonal, name, "diagonal", pos)
    if self._a.ndim < 2:
        raise RuntimeError(f"{name.rstrip('_')}: input tensor must have at least 2 dimensions")
    return diagonal


def _make_triangle(name, lower):
    def functional(self, diagonal=0):
        d = _triangle_args(self, diagonal, name, 2)
        return C.make(KS.triangle(self._a, d, lower), self._device)

    def out_(self, diagonal=0, *, out):
        d = _triangle_args(self, diagonal, name, 2)
        a = self._a
        C.exact_out(out, a.shape, a.dtype, self._device)
        return C.write_out(out, KS.triangle(a, d, lower))

    def inplace(self, diagonal=0):
        d = _triangle_args(self, diagonal, name + "_", 1)
        KS.triangle_(self._a, d, lower)
        self._bump_version()
        return self

    functional.__name__, out_.__name__, inplace.__name__ = name, name + "_out", name + "_"
    return functional, out_, inplace


tril, tril_out, tril_ = _make_triangle("tril", True)
triu, triu_out, triu_ = _make_triangle("triu", False)


# --- repeat, tile ------------------------------------------------------------------------------------------------

def _repeat_array(a, reps):
    if len(reps) < a.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           "of tensor")
    shape = (1,) * (len(reps) - a.ndim) + a.shape
    target = [r * s for r, s in zip(reps, shape)]
    for n in target:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {target}")
    return KS.repeat(a, reps)


def repeat(self, repeats):
    reps = _int_list(repeats, "repeat", "repeats", 1)
    return C.make(_repeat_array(self._a, reps), self._device)


def tile(self, dims):
    reps = _int_list(dims, "tile", "dims", 2)
    a = self._a
    reps = [1] * (a.ndim - len(reps)) + reps  # fewer reps than dims: pad with ones in front
    return C.make(_repeat_array(a, reps), self._device)


# --- repeat_interleave ----------------------------------------------------------------------------------------

def _repeats_array(repeats):
    """(array, device) of a repeats argument; a Python number acts as a 0-dim cpu tensor."""
    if isinstance(repeats, Tensor):
        return repeats._a, repeats._device
    return np.asarray(repeats), CPU


def _check_index_dtype(r):
    if r.dtype not in _INDEX_DTYPES:
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{C.tname(r.dtype)}'")


def _check_counts(r, output_size):
    """Validate 1-d repeats against output_size as torch does (size first, sign second)."""
    if not r.size:
        return
    if output_size is not None:
        if int(r.sum(dtype=_INT64)) != output_size:
            raise RuntimeError("allocated size does not match required size")
    if bool((r < 0).any()):
        raise RuntimeError("repeats can not be negative")


def _output_size(output_size):
    if output_size is None:
        return None
    return C.int_arg(output_size, "repeat_interleave", "output_size", 2)


def repeat_interleave_Tensor(repeats, *, output_size=None):  # noqa: N802 - overload name
    r, dev = _repeats_array(repeats)
    _check_index_dtype(r)
    if r.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    output_size = _output_size(output_size)
    if output_size is not None and output_size < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {output_size}: [{output_size}]")
    _check_counts(r, output_size)
    return C.make(KS.repeat_index(r), dev)


def repeat_interleave_self_Tensor(self, repeats, dim=None, *, output_size=None):  # noqa: N802
    r, rdev = _repeats_array(repeats)
    dev = self._device
    C.check_devices(dev, repeats)
    if r.ndim > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    a = self._a
    if dim is None:
        a, axis, label = a.reshape(-1), 0, 0
    else:
        axis, label = C.sized_dim(dim, a.ndim), dim
    n = a.shape[axis]
    if r.ndim == 0 or r.shape[0] == 1:
        r = namespace_of(r).broadcast_to(r.reshape(1), (n,))
    elif r.shape[0] != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{r.shape[0]} and input.size({label}) = {n}")
    _check_index_dtype(r)
    _check_counts(r, _output_size(output_size))
    if rdev is not dev:  # a 0-dim cpu tensor (or number) joining another device's op
        r = namespace_of(a).asarray(r)
    return C.make(KS.repeat_interleave(a, r, axis), dev)


def repeat_interleave_self_int(self, repeats, dim=None, *, output_size=None):
    if not C.is_int(repeats):
        if isinstance(repeats, Tensor):
            return repeat_interleave_self_Tensor(self, repeats, dim, output_size=output_size)
        raise TypeError(f"repeat_interleave() received an invalid combination of arguments - got "
                        f"(Tensor, {type(repeats).__name__}), but expected one of:\n"
                        " * (Tensor input, Tensor repeats, int dim = None, *, int output_size = None)\n"
                        " * (Tensor repeats, *, int output_size = None)\n"
                        " * (Tensor input, int repeats, int dim = None, *, int output_size = None)\n")
    repeats = int(repeats)
    a = self._a
    if dim is None:
        a, axis = a.reshape(-1), 0
    else:
        axis = _wrap_dim(dim, a.ndim)
        if a.ndim == 0:
            _wrap_dim(axis + 1, 0)  # torch unsqueezes after the dim: a 0-dim input fails there
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    output_size = _output_size(output_size)
    expected = a.shape[axis] * repeats
    if output_size is not None and output_size != expected:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {expected} but got {output_size}")
    return C.make(KS.repeat_interleave(a, repeats, axis), self._device)


KERNELS = {
    "cat": cat, "cat.out": cat_out,
    "stack": stack, "stack.out": stack_out,
    "flip": flip, "roll": roll,
    "tril": tril, "tril.out": tril_out, "tril_": tril_,
    "triu": triu, "triu.out": triu_out, "triu_": triu_,
    "repeat": repeat, "tile": tile,
    "repeat_interleave.Tensor": repeat_interleave_Tensor,
    "repeat_interleave.self_int": repeat_interleave_self_int,
    "repeat_interleave.self_Tensor": repeat_interleave_self_Tensor,
}
