"""Sorting, top-k and uniqueness kernels with torch's ordering rules, over NumPy or CuPy arrays.

torch's CPU sort is stable and orders NaN after every number in ascending order
and before every number in descending order; ties keep their original order both
ways. NumPy's stable sort already puts NaN last, so a descending sort is the
ascending sort of the reversed axis, read backwards. Index results are int64.
"""
from __future__ import annotations

import numpy as np

from .array_api import BFLOAT16, namespace_of

_INT64 = np.dtype(np.int64)


def sort_key(a):
    """An array that sorts and compares like ``a``: bfloat16 goes through float32 (exact),
    because NumPy cannot sort the extension dtype."""
    return a.astype(np.float32) if a.dtype == BFLOAT16 else a


def dense_axes(a):
    """The axis order, outermost first, in which ``a`` lies in memory; None when it is C order.

    torch gives sort results the (dense) layout of the input, so a kernel computes on
    the input transposed to C order and transposes its results back.
    """
    if a.ndim < 2 or a.flags.c_contiguous:
        return None
    strides = a.strides
    perm = sorted(range(a.ndim), key=lambda i: -abs(strides[i]))
    return None if perm == list(range(a.ndim)) else perm


def _inverse(perm):
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return inv


def _reversed(a, axis):
    return a[(slice(None),) * axis + (slice(None, None, -1),)]


def take_along(a, idx, axis):
    """NumPy's take_along_axis without its per-call overhead (which dominates on small tensors)."""
    if a.ndim == 1:
        return a[idx]
    xp = namespace_of(a)
    index = []
    for i, n in enumerate(idx.shape):
        if i == axis:
            index.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[i] = n
            index.append(xp.arange(n).reshape(shape))
    return a[tuple(index)]


def _argsort(key, axis, descending):
    if not descending:
        return key.argsort(axis=axis, kind="stable")
    n = key.shape[axis]
    order = _reversed(key, axis).argsort(axis=axis, kind="stable")
    return (n - 1) - _reversed(order, axis)


def sort_indices(a, axis, descending=False):
    """Stable sort order of ``a`` along ``axis`` (int64, same shape as ``a``)."""
    xp = namespace_of(a)
    if a.ndim == 0:
        return xp.zeros((), _INT64)
    perm = dense_axes(a)
    if perm is not None:
        idx = sort_indices(a.transpose(perm), perm.index(axis), descending)
        return idx.transpose(_inverse(perm))
    idx = _argsort(sort_key(a), axis, descending)
    return idx if idx.dtype == _INT64 else idx.astype(_INT64)


def sort(a, axis, descending=False):
    """(values, indices) of a stable sort along ``axis``."""
    xp = namespace_of(a)
    if a.ndim == 0:
        return a.copy(), xp.zeros((), _INT64)
    perm = dense_axes(a)
    if perm is not None:
        inv = _inverse(perm)
        values, idx = sort(a.transpose(perm), perm.index(axis), descending)
        return values.transpose(inv), idx.transpose(inv)
    idx = sort_indices(a, axis, descending)
    return take_along(a, idx, axis), idx


def topk(a, k, axis, largest=True, sorted_=True):
    """(values, indices) of the ``k`` largest (or smallest) entries along ``axis``.

    NaN counts as the largest value. With ``sorted_`` the results are ordered (ties by
    index); without it the order is whatever the selection produced.
    """
    xp = namespace_of(a)
    if a.ndim == 0:
        return a.copy(), xp.zeros((), _INT64)
    n = a.shape[axis]
    out_shape = a.shape[:axis] + (k,) + a.shape[axis + 1:]
    if 0 in out_shape:
        return xp.empty(out_shape, a.dtype), xp.empty(out_shape, _INT64)
    key = sort_key(a)
    lead = (slice(None),) * axis
    if 2 * k >= n:
        idx = _argsort(key, axis, largest)[lead + (slice(0, k),)]
    else:
        # partial selection: O(n) to find the k, then only those k get sorted
        part = xp.argpartition(key, n - k if largest else k - 1, axis=axis)
        idx = part[lead + ((slice(n - k, None) if largest else slice(0, k)),)]
        if sorted_:
            idx = xp.sort(idx, axis=axis)  # ties then come out in index order
            idx = take_along(idx, _argsort(take_along(key, idx, axis), axis, largest), axis)
    idx = xp.ascontiguousarray(idx if idx.dtype == _INT64 else idx.astype(_INT64))
    return take_along(a, idx, axis), idx


def _group_starts(xp, s):
    """True where a run of equal values starts in the 1-d ``s`` (NaN never equals NaN)."""
    starts = xp.empty(s.shape, dtype=bool)
    starts[:1] = True
    xp.not_equal(s[1:], s[:-1], out=starts[1:])
    return starts


def _counts(xp, starts, n):
    first = xp.flatnonzero(starts)
    return xp.diff(xp.concatenate((first, xp.asarray([n], dtype=first.dtype)))).astype(_INT64)


def unique(a, return_inverse=False, return_counts=False):
    """Sorted distinct values of ``a`` (flattened); inverse has ``a``'s shape. Missing parts are None.

    Each NaN is distinct, as in torch; of equal values the first in sorted order is kept.
    """
    xp = namespace_of(a)
    flat = a.reshape(-1)
    n = flat.size
    if n == 0:
        empty = xp.empty((0,), _INT64)
        return flat.copy(), (empty.reshape(a.shape) if return_inverse else None), \
            (empty if return_counts else None)
    key = sort_key(flat)
    if return_inverse:
        perm = xp.argsort(key, kind="stable")
        s = key[perm]
    else:
        s = xp.sort(key, kind="stable")
    starts = _group_starts(xp, s)
    values = s[starts]
    if values.dtype != a.dtype:
        values = values.astype(a.dtype)
    inverse = counts = None
    if return_inverse:
        inverse = xp.empty(n, _INT64)
        inverse[perm] = xp.cumsum(starts, dtype=_INT64) - 1
        inverse = inverse.reshape(a.shape)
    if return_counts:
        counts = _counts(xp, starts, n)
    return values, inverse, counts


def unique_consecutive(a):
    """Collapse runs of equal values of ``a`` (flattened): (values, inverse shaped like ``a``, counts)."""
    xp = namespace_of(a)
    flat = a.reshape(-1)
    n = flat.size
    if n == 0:
        empty = xp.empty((0,), _INT64)
        return flat.copy(), empty.reshape(a.shape), empty
    starts = _group_starts(xp, sort_key(flat))
    inverse = (xp.cumsum(starts, dtype=_INT64) - 1).reshape(a.shape)
    return flat[starts], inverse, _counts(xp, starts, n)


def _slices_differ(rows):
    """For rows[i] (2-d: slice i flattened), whether it differs from rows[i - 1]."""
    xp = namespace_of(rows)
    differ = xp.empty(rows.shape[0], dtype=bool)
    differ[:1] = True
    if rows.shape[1] == 0:
        differ[1:] = False
    else:
        xp.any(rows[1:] != rows[:-1], axis=1, out=differ[1:])
    return differ


def unique_along(a, axis, consecutive=False):
    """Distinct slices of ``a`` along ``axis``, lexicographically sorted unless ``consecutive``.

    Returns (values, inverse, counts); inverse has one entry per slice. As in torch, the
    work happens with ``axis`` moved to the front and the result is a moved view of it.
    """
    xp = namespace_of(a)
    moved = xp.moveaxis(a, axis, 0)
    n = moved.shape[0]
    if n == 0:
        empty = xp.empty((0,), _INT64)
        return xp.moveaxis(moved.copy(), 0, axis), empty, empty
    rows = sort_key(moved.reshape(n, -1))
    if consecutive:
        perm = None
        ordered = rows
    else:
        # lexsort's last key is the primary one: the first element of each slice
        perm = xp.lexsort(rows.T[::-1]) if rows.shape[1] else xp.arange(n)
        ordered = rows[perm]
    starts = _slices_differ(ordered)
    group = xp.cumsum(starts, dtype=_INT64) - 1
    if perm is None:
        inverse = group
        first = xp.flatnonzero(starts)
    else:
        inverse = xp.empty(n, _INT64)
        inverse[perm] = group
        first = perm[starts]
    values = xp.ascontiguousarray(moved[first])
    return xp.moveaxis(values, 0, axis), inverse, _counts(xp, starts, n)
