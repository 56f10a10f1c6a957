"""Array kernels of padding, over NumPy or CuPy arrays: the index maps of the reflect / replicate / circular
modes (gather forward, scatter-add backward) and constant padding."""
from __future__ import annotations

import numpy as np

from .array_api import as_array, cast_like, namespace_of, opmath

_I64 = np.dtype(np.int64)


def pad_source_index(xp, size, before, after, mode):
    """For each position of a padded dim, the input position it copies (negative pads crop)."""
    src = xp.arange(-before, size + after, dtype=_I64)
    if mode == "reflect":
        src = xp.abs(src)
        return xp.where(src >= size, 2 * (size - 1) - src, src)
    if mode == "replicate":
        return xp.clip(src, 0, size - 1)
    return src % size  # circular


def pad_gather(a, pads, mode):
    """Pad the trailing dims of ``a``; ``pads`` is ((before, after) of the last dim, of the one before, ...)."""
    xp = namespace_of(a)
    for k, (before, after) in enumerate(pads):
        axis = a.ndim - 1 - k
        a = xp.take(a, pad_source_index(xp, a.shape[axis], before, after, mode), axis=axis)
    return as_array(a)


def pad_scatter(grad, input_shape, pads, mode):
    """The gradient of :func:`pad_gather`: each input position sums the outputs that copied it."""
    xp = namespace_of(grad)
    g = opmath(grad)
    for k in reversed(range(len(pads))):
        before, after = pads[k]
        axis = g.ndim - 1 - k
        size = input_shape[axis]
        src = pad_source_index(xp, size, before, after, mode)
        moved = xp.moveaxis(g, axis, 0)
        out = xp.zeros((size,) + moved.shape[1:], dtype=g.dtype)
        xp.add.at(out, src, moved)
        g = xp.moveaxis(out, 0, axis)
    return cast_like(xp.ascontiguousarray(g), grad)


def constant_pad(a, pads, value):
    """Pad the trailing dims with ``value`` (pads are non-negative here; cropping happened before)."""
    xp = namespace_of(a)
    shape = list(a.shape)
    index = [slice(None)] * a.ndim
    for k, (before, after) in enumerate(pads):
        axis = a.ndim - 1 - k
        index[axis] = slice(before, before + shape[axis])
        shape[axis] += before + after
    out = xp.full(shape, value, dtype=a.dtype)
    out[tuple(index)] = a
    return out
