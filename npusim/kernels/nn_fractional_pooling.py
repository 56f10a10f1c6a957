"""Array kernels of fractional max pooling (Graham's pseudo-random pooling regions), as ATen's CPU kernels.

Each (batch, plane) has one sample u in [0, 1) per pooled dim; the window starts along a dim of input size n,
output size o and pool size k are ATen's ``generate_intervals``: with alpha = (n - k) / (o - 1),
start[i] = int((i + u) * alpha) - int(u * alpha) for i < o - 1, and start[o - 1] = n - k, computed in the input's
dtype (a 16-bit float rounds after each operation, as c10::Half and c10::BFloat16 arithmetic does).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .array_api import HALF_TYPES, namespace_of

_I64 = np.dtype(np.int64)
_F32 = np.dtype(np.float32)


def intervals(u, n, o, k):
    """Window starts (int64, shape u.shape + (o,)) for samples ``u`` along a dim of size n, output o, pool k."""
    xp = namespace_of(u)
    dt = u.dtype
    half = dt in HALF_TYPES
    cd = _F32 if half else dt

    def rnd(v):   # each operation of a 16-bit float type rounds to that type
        return v.astype(dt).astype(cd) if half else v

    starts = xp.empty(u.shape + (o,), _I64)
    if o > 1:
        alpha = rnd(xp.asarray(n - k, dtype=cd)) / rnd(xp.asarray(o - 1, dtype=cd))
        alpha = rnd(alpha)
        uc = rnd(u.astype(cd))[..., None]
        i = rnd(xp.arange(o - 1, dtype=cd))
        first = rnd(rnd(i + uc) * alpha).astype(_I64)   # static_cast<int>: truncation toward zero
        starts[..., :o - 1] = first - rnd(uc * alpha).astype(_I64)
    if o > 0:
        starts[..., o - 1] = n - k
    return starts


def fractional_max_pool(x, samples, kernel, out_sizes):
    """Max over the pseudo-random windows of the last ``len(kernel)`` dims of (N, C, *spatial) ``x`` and the flat
    index of each maximum in its input plane. ``samples`` is (>= N, C, nd): for 2-d, column 0 drives the width and
    column 1 the height; for 3-d, columns 0, 1, 2 drive time, height and width (ATen's assignment)."""
    xp = namespace_of(x)
    nd = len(kernel)
    n_batch, planes = x.shape[0], x.shape[1]
    spatial = x.shape[2:]
    out_sizes = tuple(out_sizes)
    best = xp.full((n_batch, planes) + out_sizes, -np.inf, x.dtype)
    flat = xp.zeros((n_batch, planes) + out_sizes, _I64)
    if best.size == 0:
        return best, flat
    u = samples[:n_batch]
    columns = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [intervals(u[:, :, c], n, o, k) for c, n, o, k in zip(columns, spatial, out_sizes, kernel)]
    strides = [math.prod(spatial[i + 1:]) for i in range(nd)]

    def along(i, v):   # (N, C, o_i) shaped to broadcast over the output's dim i
        return v.reshape(v.shape[:2] + (1,) * i + (v.shape[2],) + (1,) * (nd - 1 - i))

    base = 0
    for i, s in enumerate(starts):
        base = base + along(i, s * strides[i])
    flat[...] = base   # ATen starts each window's index at its first element: an all -inf window points there
    planar = x.reshape(n_batch, planes, -1)
    for tap in itertools.product(*(range(k) for k in kernel)):
        offset = sum(t * st for t, st in zip(tap, strides))
        pos = base + offset
        v = xp.take_along_axis(planar, pos.reshape(n_batch, planes, -1), axis=-1).reshape(pos.shape)
        better = (v > best) | xp.isnan(v)   # NaN propagates; the last NaN of a window wins, as in ATen
        xp.copyto(best, v, where=better)
        xp.copyto(flat, pos, where=better)
    return best, flat
