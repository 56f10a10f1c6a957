"""Structure kernels: joins (concatenate, stack) and shape building (flip, roll, triangular masks, repeat and
repeat_interleave).

Every result is a fresh array. Layouts follow torch: flip keeps the input's
memory order (as ``empty_like``), the others are C-contiguous.
"""
from __future__ import annotations

import itertools

import numpy as np

from .array_api import namespace_of


def flip(a, axes):
    """A copy of ``a`` reversed along ``axes`` (a tuple), in ``a``'s memory order."""
    xp = namespace_of(a)
    return (xp.flip(a, axes) if axes else a).copy(order="K")


def roll(a, shifts, axes):
    """``a`` rolled by ``shifts[i]`` along ``axes[i]``; repeated axes add up, as in torch."""
    xp = namespace_of(a)
    total = {}
    for s, ax in zip(shifts, axes):
        total[ax] = total.get(ax, 0) + s
    pieces = [((slice(None), slice(None)),)] * a.ndim
    for ax, s in total.items():
        n = a.shape[ax]
        s = s % n if n else 0
        if s:
            # (source, destination) slice pairs: the tail moves to the front
            pieces[ax] = ((slice(None, -s), slice(s, None)), (slice(-s, None), slice(None, s)))
    out = xp.empty(a.shape, a.dtype)
    for combo in itertools.product(*pieces):
        src = tuple(c[0] for c in combo)
        dst = tuple(c[1] for c in combo)
        out[dst] = a[src]
    return out


def roll_flat(a, shift):
    """torch.roll without dims: roll the flattened array and restore the shape."""
    xp = namespace_of(a)
    flat = a.reshape(-1)
    n = flat.size
    s = shift % n if n else 0
    if not s:
        return a.copy()
    return xp.concatenate((flat[-s:], flat[:-s])).reshape(a.shape)


def tri_mask(xp, rows, cols, diagonal, lower):
    """Boolean (rows, cols) mask of the entries tril (``lower``) or triu keeps."""
    if lower:
        return xp.tri(rows, cols, diagonal, dtype=bool)
    return ~xp.tri(rows, cols, diagonal - 1, dtype=bool)


def triangle(a, diagonal, lower):
    """tril / triu of the last two axes of ``a`` (batched over the rest), C-contiguous."""
    xp = namespace_of(a)
    out = xp.zeros(a.shape, a.dtype)
    xp.copyto(out, a, where=tri_mask(xp, a.shape[-2], a.shape[-1], diagonal, lower))
    return out


def triangle_(a, diagonal, lower):
    """In-place tril / triu: zero what the triangle drops."""
    xp = namespace_of(a)
    drop = ~tri_mask(xp, a.shape[-2], a.shape[-1], diagonal, lower)
    xp.copyto(a, xp.zeros((), a.dtype), where=drop)
    return a


def repeat(a, reps):
    """torch's Tensor.repeat: ``len(reps) >= a.ndim``; leading new axes are prepended.

    One pass: view ``a`` as (1, s0, 1, s1, ...), broadcast to (r0, s0, r1, s1, ...)
    and let the reshape copy it out.
    """
    if not reps:
        return a.copy()
    xp = namespace_of(a)
    shape = (1,) * (len(reps) - a.ndim) + tuple(a.shape)
    target = tuple(r * s for r, s in zip(reps, shape))
    if 0 in target:   # nothing to copy (a repeat of -1 along an empty dim included, as torch allows)
        return xp.empty(target, a.dtype)
    spread = a.reshape(tuple(x for s in shape for x in (1, s)))
    grown = xp.broadcast_to(spread, tuple(x for r, s in zip(reps, shape) for x in (r, s)))
    return grown.copy().reshape(target)


def repeat_interleave(a, repeats, axis):
    """Each slice of ``a`` along ``axis`` repeated ``repeats`` times (an int or a 1-d array)."""
    xp = namespace_of(a)
    return xp.repeat(a, repeats, axis=axis)


def repeat_index(repeats):
    """torch.repeat_interleave(repeats): i repeated repeats[i] times, in repeats' dtype."""
    xp = namespace_of(repeats)
    return xp.repeat(xp.arange(repeats.shape[0], dtype=repeats.dtype), repeats.astype(np.int64))


def concatenate(arrays, axis, dtype, out=None):
    """Join arrays along an existing axis, casting to ``dtype`` on the way (no extra copy).

    The result is C-contiguous whatever the inputs' layout (NumPy alone would pick
    Fortran order for Fortran-ordered inputs; torch's result is contiguous).
    """
    xp = namespace_of(arrays[0])
    if out is None:
        shape = list(arrays[0].shape)
        shape[axis] = sum(a.shape[axis] for a in arrays)
        out = xp.empty(tuple(shape), dtype)
    return xp.concatenate(arrays, axis=axis, out=out, casting="unsafe")


def stack(arrays, axis, dtype, out=None):
    """Join arrays along a new axis (views with a size-1 axis, then one concatenate)."""
    shape = arrays[0].shape
    shape = shape[:axis] + (1,) + shape[axis:]
    return concatenate([a.reshape(shape) for a in arrays], axis, dtype, out)
