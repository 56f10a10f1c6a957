"""Array kernels for indexing: gather/scatter along a dim, index_select, masks,
nonzero, and advanced indexing (torch's ``index`` / ``index_put``).

Inputs arrive checked for dtype and shape by the caller; these functions check
what only the data can tell (index values in range) and raise torch's errors.
Everything is written against ``xp`` (NumPy or CuPy); writes with duplicate
targets go through ``ufunc.at``, which applies them one after another as
torch's CPU kernels do.
"""
from __future__ import annotations

import math

import numpy as np

from . import device_checks as DC
from .array_api import is_float, namespace_of

_INT64 = np.dtype(np.int64)
_UINT8 = np.dtype(np.uint8)
_UNSIGNED = {np.dtype(np.int64): np.dtype(np.uint64), np.dtype(np.int32): np.dtype(np.uint32)}


# --- index values ------------------------------------------------------------------

def first_out_of_range(idx, size, allow_negative=True):
    """The first value of ``idx`` outside [-size, size) (or [0, size)), or None when all fit."""
    if idx.size == 0:
        return None
    if allow_negative:
        if idx.min() >= -size and idx.max() < size:
            return None
        low = -size
    else:
        # seen as unsigned, negatives are huge: one reduction checks both ends
        if idx.view(_UNSIGNED[idx.dtype]).max() < size:
            return None
        low = 0
    xp = namespace_of(idx)
    flat = idx.reshape(-1)
    bad = (flat < low) | (flat >= size)
    return int(flat[int(xp.argmax(bad))])


def _check_dim_range(idx, size, dim, check):
    """gather/scatter refuse negative indices, with a RuntimeError; returns the indices to use.

    On a GPU the check is recorded on the device and the indices clamped (``device_checks``).
    """
    if DC.deferred(idx):
        return DC.clamp(idx, 0, size, check, RuntimeError(f"index is out of bounds for dimension {dim} with size 0"))
    bad = first_out_of_range(idx, size, allow_negative=False)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
    return idx


def _along_axis(xp, idx, dim):
    """Fancy index addressing ``idx[i...]`` along ``dim`` and ``i`` elsewhere (broadcast, not materialised)."""
    nd = idx.ndim
    parts = []
    for d, n in enumerate(idx.shape):
        if d == dim:
            parts.append(idx)
        else:
            shape = [1] * nd
            shape[d] = n
            parts.append(xp.arange(n).reshape(shape))
    return tuple(parts)


def _at_least_1d(a):
    return a.reshape(1) if a.ndim == 0 else a


# --- gather / scatter -------------------------------------------------------------------

def gather(a, dim, idx):
    """out[i][j] = a[idx[i][j]][j] (for dim 0); the result has idx's shape."""
    shape = idx.shape
    if idx.size == 0:
        return namespace_of(a).empty(shape, a.dtype)
    a, idx = _at_least_1d(a), _at_least_1d(idx)
    idx = _check_dim_range(idx, a.shape[dim], dim, DC.GATHER)
    # the other dims address only their leading idx.shape[d] entries, as torch reads them
    r = a[_along_axis(namespace_of(a), idx, dim)]
    return r if r.shape == shape else r.reshape(shape)


def scatter_(a, dim, idx, src, reduce=None):
    """Write ``src`` (an array shaped at least like idx, or a scalar) into ``a`` at idx along dim.

    ``reduce`` is None (last write wins), "add" or "multiply" (duplicates combine in order).
    """
    if idx.size == 0:
        return a
    xp = namespace_of(a)
    a, idx = _at_least_1d(a), _at_least_1d(idx)
    idx = _check_dim_range(idx, a.shape[dim], dim, DC.SCATTER)
    if not isinstance(src, (np.generic, int, float, bool)):
        src = _at_least_1d(src)[tuple(slice(0, n) for n in idx.shape)]
    target = _along_axis(xp, idx, dim)
    if reduce is None:
        a[target] = src
    else:
        ufunc_at(xp.add if reduce == "add" else xp.multiply, a, target, src)
    return a


def ufunc_at(ufunc, a, target, values):
    """``ufunc.at``: apply every (target, value) pair in order, duplicates included."""
    xp = namespace_of(a)
    if xp is np:
        ufunc.at(a, target, values)
    elif ufunc is xp.add:
        add_at(a, target, values)
    else:
        ufunc_at_in_rounds(ufunc, a, target, values)


# CuPy's scatter-add (``cupy.add.at``) has atomics for these dtypes only
_DEVICE_SCATTER_ADD = frozenset(np.dtype(c) for c in "iILQefd")


def add_at(a, target, values):
    """``a[target] += values`` with duplicate targets summed (``np.add.at``), for every dtype and array module.

    On CuPy, dtypes without an atomic add take exact routes instead: bfloat16 accumulates in float32 and
    rounds once (as torch's opmath does); integers and bool sum each run of equal targets with a cumulative
    sum in int64 (whose wrap-around is the narrower dtype's wrap-around, mod 2^bits) and every duplicate
    writes the same total, so the result does not depend on which write lands last. No host sync.
    """
    xp = namespace_of(a)
    if xp is np or a.dtype in _DEVICE_SCATTER_ADD:
        xp.add.at(a, target, values)
        return
    if is_float(a.dtype):
        acc = a.astype(np.float32)
        xp.add.at(acc, target, values.astype(np.float32) if hasattr(values, "astype") else values)
        a[...] = acc.astype(a.dtype)
        return
    positions = xp.arange(a.size, dtype=_INT64).reshape(a.shape)[target]
    vals = xp.asarray(values)
    vals = (vals != 0) if a.dtype == np.bool_ else vals
    vals = xp.broadcast_to(vals.astype(_INT64), positions.shape).reshape(-1)
    positions = positions.reshape(-1)
    if positions.size == 0:
        return
    order = xp.argsort(positions, kind="stable")
    pos, v = positions[order], vals[order]
    running = xp.cumsum(v)
    first = xp.searchsorted(pos, pos, side="left")
    last = xp.searchsorted(pos, pos, side="right") - 1
    total = running[last] - running[first] + v[first]
    where = _unravel(pos, a.shape)
    if a.dtype == np.bool_:
        a[where] = a[where] | (total != 0)
    else:
        a[where] = (a[where].astype(_INT64) + total).astype(a.dtype)


def _unravel(flat, shape):
    """C-order coordinates of flat positions (CuPy's unravel_index reads the data back to check it)."""
    coords = []
    for n in reversed(shape):
        coords.append(flat % n)
        flat = flat // n
    return tuple(reversed(coords))


def ufunc_at_in_rounds(ufunc, a, target, values):
    """``ufunc.at`` for array modules without it (CuPy's multiply): duplicates are applied in
    rounds, each round touching a target at most once, so fancy assignment is exact.

    How many rounds depends on the data: that count is the one read from the device. Within a
    round, the pairs of other rounds write to a scratch slot past the end instead of being
    selected with a mask, which would read each round's size back.
    """
    xp = namespace_of(a)
    full = xp.broadcast_arrays(*target)
    coords_shape = full[0].shape
    n = math.prod(coords_shape)
    if n == 0:
        return
    vals = xp.broadcast_to(xp.asarray(values), coords_shape).reshape(-1)
    flat = xp.zeros(n, _INT64)
    stride = 1
    for c, size in zip(reversed(full), reversed(a.shape)):
        flat += (c.reshape(-1) % size) * stride   # negative indices count from the end
        stride *= size
    order = xp.argsort(flat, kind="stable")
    ordered = flat[order]
    # rank of each pair among the pairs with the same target, in index order
    rank = xp.empty(n, _INT64)
    rank[order] = xp.arange(n) - xp.searchsorted(ordered, ordered, side="left")
    work = xp.empty(a.size + 1, a.dtype)
    work[:-1] = a.reshape(-1)
    for r in range(int(rank.max()) + 1):
        t = xp.where(rank == r, flat, a.size)
        work[t] = ufunc(work[t], vals)
    a[...] = work[:-1].reshape(a.shape)


# --- index_select / masked_select / nonzero ---------------------------------------------------

def index_select(a, dim, idx):
    """Entries of ``a`` along ``dim`` at the positions of the 1-D (or 0-dim) ``idx``."""
    xp = namespace_of(a)
    idx = idx.reshape(-1)
    size = a.shape[dim] if a.ndim else 1
    if DC.deferred(idx):   # checked on the device, reported later (device_checks)
        idx = DC.clamp(idx, 0, size, DC.INDEX_SELECT, IndexError("index out of range in self"))
    else:
        bad = first_out_of_range(idx, size, allow_negative=False)
        if bad is not None and a.ndim > 1 and (dim == 1 or a.size == 0):
            # torch's CPU kernel for dim 1 (and its check of an empty self) says so with a RuntimeError
            raise RuntimeError(f"INDICES element is out of DATA bounds, id={int(bad)} axis_dim={size}")
        if bad is not None:
            raise IndexError("index out of range in self")
    if a.ndim == 0:
        return a.copy()
    return xp.take(a, idx, axis=dim)


def masked_select(a, mask, shape):
    """The entries of ``a`` where ``mask`` is True, both broadcast to ``shape``, as a 1-D array."""
    xp = namespace_of(a)
    return xp.broadcast_to(a, shape)[xp.broadcast_to(mask, shape)]


def nonzero(a):
    """Coordinates of the non-zero entries, shape (n, a.ndim), int64."""
    xp = namespace_of(a)
    return xp.argwhere(a).astype(_INT64, copy=False)


def masked_fill_(a, mask, value):
    """a[mask] = value, with ``mask`` broadcast to ``a``'s shape."""
    namespace_of(a).copyto(a, value, where=mask)
    return a


# --- advanced indexing (aten::index / aten::index_put_) ----------------------------------------

def is_mask(idx) -> bool:
    return idx.dtype.kind == "b" or idx.dtype == _UINT8


def expand_indices(a, indices):
    """torch's expandTensors: each k-dim mask becomes the k coordinate arrays of its True entries.

    ``indices`` holds None (a whole dim) or integer / mask arrays, one per leading dim of ``a``.
    A 0-dim mask adds a dim of size 1 to ``a`` and keeps it (True) or empties it (False), as a
    Python bool index does. Returns (a, entries) with entries None or integer arrays.
    """
    xp = namespace_of(a)
    entries = []
    for idx in indices:
        if idx is None or not is_mask(idx):
            entries.append(idx)
            continue
        pos = len(entries)
        ip = namespace_of(idx)   # a mask from the host gives host coordinates (no read from the device)
        if idx.ndim == 0:
            a = xp.expand_dims(a, pos)
            entries.append(ip.arange(1 if bool(idx) else 0))
            continue
        check_mask_shape(a, idx, pos)
        entries.extend(ip.nonzero(idx))
    return a, entries


def check_mask_shape(a, mask, pos=0):
    """A mask addresses dims pos.. of ``a`` and must match their sizes."""
    if pos + mask.ndim > a.ndim:
        raise IndexError(f"too many indices for tensor of dimension {a.ndim} (got {pos + mask.ndim})")
    for j, n in enumerate(mask.shape):
        if n != a.shape[pos + j]:
            raise IndexError(f"The shape of the mask {list(mask.shape)} at index {j} does not match the shape "
                             f"of the indexed tensor {list(a.shape)} at index {pos + j}")


def take_mask(a, mask):
    """a[mask] for a bool mask over the leading dims of ``a`` (the common x[x > 0])."""
    check_mask_shape(a, mask)
    return a[mask]


def index_plan(shape, entries):
    """(fancy index, result shape) for ``entries``; raises torch's error when they do not broadcast."""
    arrays = [e for e in entries if e is not None]
    if len(arrays) == 1:
        bshape = arrays[0].shape
    else:
        try:
            bshape = np.broadcast_shapes(*(e.shape for e in arrays))
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(str(list(e.shape)) for e in arrays)) from None
    positions = [i for i, e in enumerate(entries) if e is not None]
    if not positions:
        return None, tuple(shape)
    if 0 not in bshape and any(shape[i] == 0 for i in positions):
        raise IndexError("index is out of bounds for dimension with size 0")  # no index fits an empty dim
    first, last = positions[0], positions[-1]
    if last - first + 1 == len(positions):  # adjacent: the indexed dims are replaced in place
        rshape = tuple(shape[:first]) + bshape + tuple(shape[last + 1:])
    else:  # separated: the indexed dims go first
        rshape = bshape + tuple(n for i, n in enumerate(shape) if i not in positions)
    while entries and entries[-1] is None:
        entries = entries[:-1]
    return tuple(slice(None) if e is None else e for e in entries), rshape


def _check_index_ranges(shape, target, host_only=False):
    """Raise torch's IndexError for the first result element (C order) with an index out of range;
    "dimension k" names the k-th index array. ``host_only``: check only the NumPy arrays among them."""
    arrays = [(shape[d], e) for d, e in enumerate(target) if e.__class__ is not slice]
    bad = [k for k, (size, e) in enumerate(arrays)
           if (not host_only or e.__class__ is np.ndarray) and first_out_of_range(e, size) is not None]
    if not bad:
        return
    k, value = bad[0], first_out_of_range(arrays[bad[0]][1], arrays[bad[0]][0])
    if len(bad) > 1:
        xp = namespace_of(arrays[bad[0]][1])
        bshape = np.broadcast_shapes(*(e.shape for _, e in arrays))
        full = {j: xp.broadcast_to(arrays[j][1], bshape) for j in bad}
        outside = [(full[j] < -arrays[j][0]) | (full[j] >= arrays[j][0]) for j in bad]
        pos = int(xp.argmax(xp.logical_or.reduce(outside).reshape(-1)))
        k = next(j for j, o in zip(bad, outside) if bool(o.reshape(-1)[pos]))
        value = int(full[k].reshape(-1)[pos])
    size = arrays[k][0]
    if size == 0:
        raise IndexError("index is out of bounds for dimension with size 0")
    raise IndexError(f"index {value} is out of bounds for dimension {k} with size {size}")


def _device_target(xp, shape, target, check):
    """``target`` for a CuPy array: index arrays from the host are checked there (torch's errors, no read from
    the device) and copied up; device ones are checked on the device and clamped (``device_checks``), as CuPy
    would otherwise wrap out-of-range indices silently."""
    if not DC.EAGER:
        _check_index_ranges(shape, target, host_only=True)
    out = []
    for d, e in enumerate(target):
        if e.__class__ is np.ndarray:
            e = xp.asarray(e)
        elif e.__class__ is not slice and not DC.EAGER:
            e = DC.clamp(e, -shape[d], shape[d], check)
        out.append(e)
    if DC.EAGER:
        _check_index_ranges(shape, out)
    return tuple(out)


def take_index(a, target, rshape):
    """a[target] as a fresh array (``target`` and ``rshape`` from index_plan; None copies ``a``)."""
    if target is None:
        return a.copy()
    xp = namespace_of(a)
    if 0 in rshape:  # nothing is read, so nothing is checked (as in torch)
        return xp.empty(rshape, a.dtype)
    if xp is not np:
        target = _device_target(xp, a.shape, target, DC.INDEX)
    arrays = [e for e in target if e.__class__ is not slice]
    try:
        if len(arrays) == 1 and arrays[0].ndim:
            # a single index array: take is the fast gather and places the result dims the same way
            return xp.take(a, arrays[0], axis=len(target) - 1)
        r = a[target]
    except IndexError:
        _check_index_ranges(a.shape, target)  # NumPy refused an index: raise torch's message
        raise
    if not any(e.ndim for e in arrays):  # 0-dim arrays index like ints: NumPy hands back a view or a scalar
        r = xp.array(r, copy=True)
    return r


def put_index(a, target, rshape, values, accumulate):
    """a[target] = values (last write wins) or += values (duplicates accumulate), in place."""
    if target is None:
        if accumulate:
            a += values
        else:
            a[...] = values
        return a
    if 0 in rshape:
        return a
    xp = namespace_of(a)
    if xp is not np:
        target = _device_target(xp, a.shape, target, DC.INDEX_PUT)
    try:
        if accumulate:
            ufunc_at(xp.add, a, target, values)
        else:
            a[target] = values
    except IndexError:
        _check_index_ranges(a.shape, target)
        raise
    return a


def is_expandable_to(shape, target) -> bool:
    """torch's is_expandable_to: ``shape`` broadcasts to ``target`` without growing ``target``."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            return False
    return True


_IDENTITY_REDUCE = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def scatter_reduce(a, dim, idx, src, reduce, include_self):
    """torch's scatter_reduce on a copy of ``a``; ``idx`` and ``src`` already checked against ``a``."""
    xp = namespace_of(a)
    out = a.copy()
    if idx.size == 0:
        return out
    flat = _at_least_1d(out)
    idx1 = _at_least_1d(idx)
    idx1 = _check_dim_range(idx1, flat.shape[dim], dim, DC.SCATTER)
    src1 = _at_least_1d(src)[tuple(slice(0, n) for n in idx1.shape)]
    target = _along_axis(xp, idx1, dim)
    if not include_self:
        # the scattered-to positions start from the first value scattered there
        identity = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if identity is None:
            scatter_(flat, dim, idx1, src1)
        else:
            flat[target] = identity
    ufunc_at(getattr(xp, _IDENTITY_REDUCE[reduce] if reduce != "mean" else "add"), flat, target, src1)
    if reduce == "mean":
        counts = xp.zeros(flat.shape, _INT64) if not include_self else xp.ones(flat.shape, _INT64)
        ufunc_at(xp.add, counts, target, xp.ones(src1.shape, _INT64))
        counts = xp.maximum(counts, 1)
        if flat.dtype.kind in "iu":
            flat[...] = xp.floor_divide(flat, counts.astype(flat.dtype))
        else:
            flat[...] = flat / counts.astype(flat.dtype)
    return out
