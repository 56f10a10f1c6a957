"""Array kernels of searchsorted / bucketize and isin, over NumPy or CuPy arrays.

Comparisons run on a common dtype the caller chose; bfloat16 goes through float32 (exact),
because NumPy cannot sort or search the extension dtype.
"""
from __future__ import annotations

import numpy as np

from .array_api import BFLOAT16, as_array, namespace_of


def _searchable(a):
    return a.astype(np.float32) if a.dtype == BFLOAT16 else a


def searchsorted(boundaries, values, *, right, sorter=None, out_dtype=np.int64):
    """Insertion indices of ``values`` in ``boundaries`` (sorted along its last axis, or through ``sorter``).

    A 1-D ``boundaries`` serves every value; an N-D one has one row per leading index of ``values``.
    """
    xp = namespace_of(boundaries)
    b = _searchable(boundaries)
    v = _searchable(values)
    side = "right" if right else "left"
    if sorter is not None:
        b = xp.take_along_axis(b, sorter, axis=-1)
    if b.ndim == 1:
        r = xp.searchsorted(b, v, side=side)
    else:
        rows_b = b.reshape(-1, b.shape[-1])
        rows_v = v.reshape(rows_b.shape[0], -1)
        n_rows, width = rows_b.shape
        if xp is not np and n_rows > 5 * width.bit_length():
            # on a GPU, one search per row costs a launch per row; all rows at once cost ~10 per halving
            r = _search_rows(xp, rows_b, rows_v, right)
        else:
            r = xp.empty(rows_v.shape, np.int64)
            for i in range(n_rows):
                r[i] = xp.searchsorted(rows_b[i], rows_v[i], side=side)
        r = r.reshape(v.shape)
    return as_array(r).astype(out_dtype, copy=False)


def _before(xp, x, y):
    """x < y in sort order: NaN after everything, as NumPy sorts and searches."""
    lt = x < y
    if x.dtype.kind == "f":
        lt |= xp.isnan(y) & ~xp.isnan(x)
    return lt


def _search_rows(xp, rows_b, rows_v, right):
    """searchsorted of each row of ``rows_v`` in the same row of ``rows_b``: a binary search of every value at
    once, one halving of all the intervals per step."""
    width = rows_b.shape[1]
    lo = xp.zeros(rows_v.shape, np.int64)
    hi = xp.full(rows_v.shape, width, np.int64)
    for _ in range(width.bit_length()):
        mid = (lo + hi) // 2
        at = xp.take_along_axis(rows_b, xp.minimum(mid, width - 1), axis=1)
        # left: go right while b[mid] < v; right: while not v < b[mid]
        go_right = ~_before(xp, rows_v, at) if right else _before(xp, at, rows_v)
        active = lo < hi
        lo = xp.where(active & go_right, mid + 1, lo)
        hi = xp.where(active & ~go_right, mid, hi)
    return lo


def isin(elements, test_elements, *, invert):
    """Whether each element occurs among ``test_elements`` (NaN matches nothing, as torch)."""
    xp = namespace_of(elements)
    r = xp.isin(_searchable(elements), _searchable(test_elements).ravel(), invert=invert)
    return as_array(r)
