"""Tensor-level kernels: sorting, top-k, uniqueness and shape-building ops.

sort / argsort / topk / unique*, then flip, roll, tril / triu, repeat, tile and
repeat_interleave. Argument checks and error messages follow torch; the array
work lives in ``npusim.kernels.sorting`` and ``npusim.kernels.structure``.
"""
from __future__ import annotations

import numpy as np

from ..core.c10.device import CPU
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import structure as KS
from ..kernels import sorting as KO
from ..kernels.array_api import namespace_of
from . import common as C

_INT64 = np.dtype(np.int64)
_INDEX_DTYPES = (np.dtype(np.int32), _INT64)

# torch's structured out= checks name dtypes by their C++ types
_CPP_NAME = {np.dtype(np.bool_): "bool", np.dtype(np.uint8): "unsigned char", np.dtype(np.int8): "signed char",
             np.dtype(np.int16): "short int", np.dtype(np.int32): "int", _INT64: "long int",
             np.dtype(np.float16): "c10::Half", C.BFLOAT16: "c10::BFloat16", np.dtype(np.float32): "float",
             np.dtype(np.float64): "double"}


# --- argument checks ---------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _int(v, op, name, pos):
    """An int argument, as torch's argument parser takes it (a 1-element integral tensor too)."""
    if _is_int(v):
        return int(v)
    if isinstance(v, Tensor) and v.numel() == 1 and not v.is_floating_point() and v.dtype.np != np.bool_:
        return int(v.item())
    raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be int, not {type(v).__name__}")


def _int_list(v, op, name, pos, single_ok=False):
    """An int[] argument; ``single_ok`` for int[1] slots, which also take a bare int."""
    if isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            if not _is_int(x):
                raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of ints, but found "
                                f"element of type {type(x).__name__} at pos {i}")
        return [int(x) for x in v]
    if single_ok and _is_int(v):
        return [int(v)]
    raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be tuple of ints, not {type(v).__name__}")


def _sized_dim(dim, ndim):
    """A dim whose size the op reads: torch refuses any dim of a 0-dim tensor here."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def _exact_out(out, shape, np_dt, dev):
    """torch's structured out= rules: same dtype exactly, same device, then resize."""
    if isinstance(out, Tensor) and out._a.dtype != np_dt:
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP_NAME[np_dt]}, but got "
                           f"{_CPP_NAME[out._a.dtype]} instead")
    return C.prepare_out(out, shape, None, dev, check_cast=False)


def _write_pair(values, indices, v, i, dev):
    _exact_out(values, v.shape, v.dtype, dev)
    _exact_out(indices, i.shape, _INT64, dev)
    C.write_out(values, v)
    C.write_out(indices, i)
    return values, indices


# --- sort, argsort, topk ---------------------------------------------------------------------------------

def _sort_arrays(self, dim, descending):
    a = self._a
    return KO.sort(a, _wrap_dim(dim, a.ndim), bool(descending))


def sort(self, dim=-1, descending=False):
    v, i = _sort_arrays(self, dim, descending)
    dev = self._device
    return C.make(v, dev), C.make(i, dev)


def sort_stable(self, *, stable=None, dim=-1, descending=False):
    # torch's CPU sort is always stable, so ``stable`` changes nothing
    return sort(self, dim, descending)


def sort_values(self, dim=-1, descending=False, *, values, indices):
    v, i = _sort_arrays(self, dim, descending)
    return _write_pair(values, indices, v, i, self._device)


def sort_values_stable(self, *, stable=None, dim=-1, descending=False, values, indices):
    return sort_values(self, dim, descending, values=values, indices=indices)


def argsort(self, dim=-1, descending=False):
    a = self._a
    return C.make(KO.sort_indices(a, _wrap_dim(dim, a.ndim), bool(descending)), self._device)


def argsort_stable(self, *, stable, dim=-1, descending=False):
    return argsort(self, dim, descending)


def _topk_arrays(self, k, dim, largest, sorted_):
    a = self._a
    k = _int(k, "topk", "k", 2)
    axis = _wrap_dim(dim, a.ndim)
    if not 0 <= k <= (a.shape[axis] if a.ndim else 1):
        raise RuntimeError("selected index k out of range")
    if a.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    return KO.topk(a, k, axis, bool(largest), bool(sorted_))


def topk(self, k, dim=-1, largest=True, sorted=True):  # noqa: A002 - the schema's name
    v, i = _topk_arrays(self, k, dim, largest, sorted)
    dev = self._device
    return C.make(v, dev), C.make(i, dev)


def topk_values(self, k, dim=-1, largest=True, sorted=True, *, values, indices):  # noqa: A002
    v, i = _topk_arrays(self, k, dim, largest, sorted)
    return _write_pair(values, indices, v, i, self._device)


# --- unique ----------------------------------------------------------------------------------------------

def _empty_index(a):
    return namespace_of(a).empty((0,), _INT64)


def _unique2(self, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    # torch's CPU kernel sorts whatever ``sorted`` says
    a = self._a
    v, inv, cnt = KO.unique(a, bool(return_inverse), bool(return_counts))
    dev = self._device
    return (C.make(v, dev), C.make(inv if inv is not None else _empty_index(a), dev),
            C.make(cnt if cnt is not None else _empty_index(a), dev))


def _unique_dim_check(a, dim):
    axis = _sized_dim(dim, a.ndim)
    if a.size == 0:
        if a.shape[axis] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        if a.shape.count(0) > 1:
            raise RuntimeError("Number of zero sized dimensions is more than one, so unique cannot be applied ")
    return axis


def _along(self, dim, consecutive):
    # inverse and counts are always computed along a dim, as torch does
    a = self._a
    v, inv, cnt = KO.unique_along(a, _unique_dim_check(a, dim), consecutive)
    dev = self._device
    return C.make(v, dev), C.make(inv, dev), C.make(cnt, dev)


def unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False):  # noqa: A002
    return _along(self, dim, False)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    a = self._a
    if dim is not None and not (a.ndim == 1 and dim == 0):  # torch takes the flat path for dim 0 of 1-d
        return _along(self, dim, True)
    v, inv, cnt = KO.unique_consecutive(a)
    dev = self._device
    return (C.make(v, dev), C.make(inv if return_inverse else _empty_index(a), dev),
            C.make(cnt if return_counts else _empty_index(a), dev))


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
    if not dims:
        return C.make(KS.roll_flat(a, shifts[0]), self._device)
    axes = [_sized_dim(d, a.ndim) for d in dims]
    return C.make(KS.roll(a, shifts, axes), self._device)


# --- tril, triu ----------------------------------------------------------------------------------------------

def _triangle_args(self, diagonal, name, pos):
    diagonal = _int(diagonal, name, "diagonal", pos)
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
        _exact_out(out, a.shape, a.dtype, self._device)
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
    return _int(output_size, "repeat_interleave", "output_size", 2)


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
        axis, label = _sized_dim(dim, a.ndim), dim
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
    if not _is_int(repeats):
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
    "sort": sort, "sort.stable": sort_stable, "sort.values": sort_values,
    "sort.values_stable": sort_values_stable, "argsort": argsort, "argsort.stable": argsort_stable,
    "topk": topk, "topk.values": topk_values,
    "_unique2": _unique2, "unique_dim": unique_dim, "unique_consecutive": unique_consecutive,
    "flip": flip, "roll": roll,
    "tril": tril, "tril.out": tril_out, "tril_": tril_,
    "triu": triu, "triu.out": triu_out, "triu_": triu_,
    "repeat": repeat, "tile": tile,
    "repeat_interleave.Tensor": repeat_interleave_Tensor,
    "repeat_interleave.self_int": repeat_interleave_self_int,
    "repeat_interleave.self_Tensor": repeat_interleave_self_Tensor,
}
