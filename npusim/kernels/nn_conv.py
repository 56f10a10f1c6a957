"""Array kernels of convolution: im2col forward, and the input, weight and bias gradients.

Any number of spatial dims (conv1d / conv2d / conv3d share the code). The input is
padded once and viewed as windows through its strides (no copy); a chunk of the
batch at a time is gathered into channel-major columns ``(C * K, n * L)``, one copy,
so that one matmul per group covers the whole chunk (few BLAS calls: each one
syncs BLAS's threads); the forward adds the bias chunk by chunk, in cache. The
input gradient at stride 1 lays the output gradient into the padded input's grid,
where each kernel tap is a flat shift: one matmul and one contiguous shifted add
per tap; at other strides it scatters the columns back (col2im) with one strided
add per tap. Chunks keep the columns small enough to stay in cache and bound the
memory a large convolution needs.

A transposed convolution is the input gradient of a convolution, so the same
three kernels also serve ``conv_transpose``: its forward is ``backward_input``,
its input gradient ``forward``, its weight gradient ``backward_weight`` with the
roles of input and output swapped.

Shapes: input ``(N, C, *S)``, weight ``(O, C // groups, *K)``, output ``(N, O, *L)``.
16-bit floats are computed in float32 and rounded once, as torch's CPU kernels do.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from . import parallel as P
from .array_api import HALF_TYPES, namespace_of

_F32 = np.dtype(np.float32)
_CHUNK_BYTES = 4 << 20   # columns gathered at a time: a few MB stays in cache
_WEIGHT_GRAD_CHUNK_BYTES = 2 << 20   # the weight gradient's matmul runs fastest on smaller pieces


def _over_rows(rows, row_elems, fn):
    """``fn(r0, r1)`` over blocks of ``rows`` rows of ``row_elems`` elements each, split over the intra-op threads
    when the pass is large by ``for_ranges``' rule (NumPy only: the caller runs CuPy's passes whole). Counting a
    strided pass as two copies per element, so that the convnet's ~1M-element chunk passes split too, measured
    slower in its 2-thread step on a busy 2-core machine: each split hands work to a pool thread that must wait
    for a core while BLAS's spinning worker holds one."""
    unit = max(1, row_elems)
    P.for_ranges(rows * unit, unit, lambda start, stop: fn(start // unit, stop // unit))


def output_sizes(in_sizes, kernel, stride, padding, dilation):
    """Spatial output sizes of a convolution (may be < 1 when the kernel does not fit)."""
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(in_sizes, kernel, stride, padding, dilation))


def transposed_output_sizes(in_sizes, kernel, stride, padding, dilation, output_padding):
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for n, k, s, p, d, op in zip(in_sizes, kernel, stride, padding, dilation, output_padding))


def _compute_dtype(dt):
    return _F32 if dt in HALF_TYPES else dt


def _pad(x, padding, dtype):
    """``x`` cast to ``dtype`` and zero-padded on both sides of each spatial dim."""
    xp = namespace_of(x)
    if not any(padding):
        return x if x.dtype == dtype else x.astype(dtype)
    spatial = x.shape[2:]
    out = xp.zeros(x.shape[:2] + tuple(n + 2 * p for n, p in zip(spatial, padding)), dtype)
    out[(slice(None), slice(None)) + tuple(slice(p, p + n) for n, p in zip(spatial, padding))] = x
    return out


def _chunks(n, bytes_per_item, budget=_CHUNK_BYTES):
    step = max(1, budget // max(1, bytes_per_item))
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _columns(xpad, n0, n1, kernel, stride, dilation, out_sizes, groups):
    """Columns of batch items n0:n1 in one copy, channel-major: ``(groups, C // groups * prod(K), n * prod(L))``.

    A strided view of the padded input walks (C, *K, n, *L): tap offsets step by the dilation,
    output positions by the stride.
    """
    xp = namespace_of(xpad)
    st = xpad.strides
    spatial = st[2:]
    shape = (xpad.shape[1],) + tuple(kernel) + (n1 - n0,) + tuple(out_sizes)
    strides = (st[1],) + tuple(s * d for s, d in zip(spatial, dilation)) + (st[0],) + \
        tuple(s * t for s, t in zip(spatial, stride))
    win = xp.lib.stride_tricks.as_strided(xpad[n0:n1], shape, strides)
    c = xpad.shape[1]
    cols = xp.empty(shape, xpad.dtype)
    if xp is np:   # the gather over the intra-op threads, a block of input channels each (a copy: same bits)
        def gather(c0, c1):
            np.copyto(cols[c0:c1], win[c0:c1])
        _over_rows(c, cols.size // c, gather)
    else:
        xp.copyto(cols, win)
    return cols.reshape(groups, c // groups * math.prod(kernel), -1)


def _grad_columns(g, n0, n1, groups):
    """Output-gradient rows of batch items n0:n1, channel-major: ``(groups, O // groups, n * prod(L))``."""
    xp = namespace_of(g)
    o = g.shape[1]
    return xp.ascontiguousarray(g[n0:n1].swapaxes(0, 1)).reshape(groups, o // groups, -1)


def forward(x, w, bias, stride, padding, dilation, groups):
    """Cross-correlation of ``x`` with ``w`` (torch's convolution), plus ``bias`` when given."""
    xp = namespace_of(x)
    out_dt = x.dtype
    dt = _compute_dtype(out_dt)
    n, c = x.shape[:2]
    o = w.shape[0]
    kernel = w.shape[2:]
    out_sizes = output_sizes(x.shape[2:], kernel, stride, padding, dilation)
    length = math.prod(out_sizes)
    ck = c // groups * math.prod(kernel)
    if n * o * length and ck:
        out = xp.empty((n, o, length), dt)
        xpad = _pad(x, padding, dt)
        wg = w.astype(dt, copy=False).reshape(groups, o // groups, ck)
        b = None if bias is None else bias.astype(dt, copy=False).reshape(1, o, 1)
        for n0, n1 in _chunks(n, c * math.prod(kernel) * length * dt.itemsize):
            # one matmul per chunk (not per item: each BLAS call syncs its threads)
            cols = _columns(xpad, n0, n1, kernel, stride, dilation, out_sizes, groups)
            out[n0:n1] = xp.matmul(wg, cols).reshape(o, n1 - n0, length).swapaxes(0, 1)
            if b is not None:   # while the chunk is in cache
                out[n0:n1] += b
    else:
        out = xp.zeros((n, o, length), dt)
        if bias is not None:
            out += bias.astype(dt, copy=False).reshape(1, o, 1)
    out = out.reshape((n, o) + out_sizes)
    return out if out.dtype == out_dt else out.astype(out_dt)


def backward_input(g, w, in_sizes, stride, padding, dilation, groups):
    """Gradient of ``forward`` with respect to an input of spatial size ``in_sizes`` (col2im).

    Also the forward of a transposed convolution (``g`` its input, ``in_sizes`` its output size).
    """
    xp = namespace_of(g)
    out_dt = g.dtype
    dt = _compute_dtype(out_dt)
    n, o = g.shape[:2]
    out_sizes = g.shape[2:]
    kernel = w.shape[2:]
    cg = w.shape[1]
    c = cg * groups
    length = math.prod(out_sizes)
    padded = tuple(s + 2 * p for s, p in zip(in_sizes, padding))
    if all(st == 1 for st in stride) and n * c * length * o and all(p >= l for p, l in zip(padded, out_sizes)):
        dx = _backward_input_unit_stride(g.astype(dt, copy=False), w.astype(dt, copy=False), in_sizes, padding,
                                         dilation, groups)
        return dx if dx.dtype == out_dt else dx.astype(out_dt)
    # (a transposed convolution's output padding lies past the last window: it gets no gradient)
    covered = tuple(max(p, (l - 1) * st + (k - 1) * d + 1)
                    for p, l, st, k, d in zip(padded, out_sizes, stride, kernel, dilation))
    dx = xp.zeros((c, n) + covered, dt)   # channel-major, like the columns
    if dx.size and length and o:
        w_t = w.astype(dt, copy=False).reshape(groups, o // groups, cg * math.prod(kernel)).swapaxes(1, 2)
        g = g.astype(dt, copy=False)
        taps = list(itertools.product(*(range(k) for k in kernel)))
        for n0, n1 in _chunks(n, c * math.prod(kernel) * length * dt.itemsize):
            cols = xp.matmul(w_t, _grad_columns(g, n0, n1, groups))
            cols = cols.reshape((c,) + tuple(kernel) + (n1 - n0,) + tuple(out_sizes))
            target = dx[:, n0:n1]
            for tap in taps:
                where = (slice(None), slice(None)) + tuple(
                    slice(t * d, t * d + (l - 1) * st + 1, st)
                    for t, d, l, st in zip(tap, dilation, out_sizes, stride))
                target[where] += cols[(slice(None),) + tap]
    crop = (slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, in_sizes))
    dx = xp.ascontiguousarray(dx[crop].swapaxes(0, 1))
    return dx if dx.dtype == out_dt else dx.astype(out_dt)


def _backward_input_unit_stride(g, w, in_sizes, padding, dilation, groups):
    """``backward_input`` for stride 1 on the padded input's grid, without col2im's strided scatter.

    The output gradient is laid into that grid (zeros past the last output position of each dim), so a kernel
    tap's contribution to the flat input position ``q`` is the tap's matmul result at ``q - shift(tap)``: one
    matmul per chunk gives every tap's rows, and each tap is added with one contiguous shifted add. The same
    products summed in the same tap order as the col2im walk.
    """
    xp = namespace_of(g)
    dt = g.dtype
    n, o = g.shape[:2]
    out_sizes = g.shape[2:]
    kernel = w.shape[2:]
    taps = math.prod(kernel)
    cg = w.shape[1]
    c, og = cg * groups, o // groups
    padded = tuple(s + 2 * p for s, p in zip(in_sizes, padding))
    plane = math.prod(padded)
    # rows (group, tap, input channel of the group), columns the group's output channels
    w_rows = w.reshape((groups, og, cg, taps)).transpose(0, 3, 2, 1).reshape(groups, taps * cg, og)
    shifts = [sum(t * d * math.prod(padded[i + 1:]) for i, (t, d) in enumerate(zip(tap, dilation)))
              for tap in itertools.product(*(range(k) for k in kernel))]
    valid = tuple(slice(0, l) for l in out_sizes)
    crop = tuple(slice(p, p + s) for p, s in zip(padding, in_sizes))
    dx = xp.empty((n, c) + tuple(in_sizes), dt)
    grids = {}
    for n0, n1 in _chunks(n, c * taps * plane * dt.itemsize):
        m = n1 - n0
        grid = grids.get(m)
        if grid is None:   # zeros outside the output positions, written once per chunk size
            grid = grids[m] = xp.zeros((o, m) + padded, dt)
        grid[(slice(None), slice(None)) + valid] = g[n0:n1].swapaxes(0, 1)
        rows = xp.matmul(w_rows, grid.reshape(groups, og, m * plane)).reshape(groups, taps, cg, m * plane)
        acc = xp.empty((groups, cg, m * plane), dt)   # the first tap (shift 0) sets every element
        target = dx[n0:n1]

        def add_taps(c0, c1):
            _add_taps(acc, rows, shifts, target, padded, crop, c0, c1)
        if xp is np:   # input channels over the intra-op threads: each one's taps added in the same order
            _over_rows(c, taps * m * plane, add_taps)
        else:
            add_taps(0, c)
    return dx


def _add_taps(acc, rows, shifts, dx, padded, crop, c0, c1):
    """Input channels c0:c1 (over the groups) of the unit-stride input gradient: every tap's rows added at its
    shift, tap by tap, then the padded grid cropped into ``dx`` (batch-major)."""
    xp = namespace_of(acc)
    groups, cg, length = acc.shape
    m = dx.shape[0]
    for gi in range(c0 // cg, (c1 - 1) // cg + 1):
        a, b = max(c0 - gi * cg, 0), min(c1 - gi * cg, cg)
        block = acc[gi, a:b]
        xp.add(rows[gi, 0, a:b], 0.0, out=block)   # 0 + the first tap, as the zeroed sum began (-0.0 -> +0.0)
        for tap, shift in enumerate(shifts[1:], 1):
            block[:, shift:] += rows[gi, tap, a:b, :length - shift]
        grid = block.reshape((b - a, m) + padded)
        dx[:, gi * cg + a:gi * cg + b] = grid[(slice(None), slice(None)) + crop].swapaxes(0, 1)


def backward_weight(g, x, kernel, stride, padding, dilation, groups):
    """Gradient of ``forward`` with respect to a weight of spatial size ``kernel``."""
    xp = namespace_of(g)
    out_dt = x.dtype
    dt = _compute_dtype(out_dt)
    n, c = x.shape[:2]
    o = g.shape[1]
    out_sizes = g.shape[2:]
    length = math.prod(out_sizes)
    ck = c // groups * math.prod(kernel)
    gw_t = xp.zeros((groups, ck, o // groups), dt)   # transposed: the faster matmul shape (long rows first)
    if n and length and ck and o:
        xpad = _pad(x, padding, dt)
        g = g.astype(dt, copy=False)
        item_elems = c * math.prod(kernel) * length
        pieces = _chunks(n, item_elems * dt.itemsize, _WEIGHT_GRAD_CHUNK_BYTES)
        per_gather = max(1, _CHUNK_BYTES // _WEIGHT_GRAD_CHUNK_BYTES)
        for i in range(0, len(pieces), per_gather):
            # a few pieces' columns gathered at once, a piece per thread (one piece alone is too small to split),
            # then one matmul per piece as before: the same products summed in the same pieces and order
            group = pieces[i:i + per_gather]
            cols = [None] * len(group)

            def gather(j0, j1, group=group, cols=cols):
                if j1 - j0 == len(group):   # not split: each later piece is gathered right before its matmul
                    j1 = j0 + 1
                for j in range(j0, j1):
                    cols[j] = _columns(xpad, *group[j], kernel, stride, dilation, out_sizes, groups)
            if xp is np:
                _over_rows(len(group), (group[0][1] - group[0][0]) * item_elems, gather)
            for (n0, n1), piece in zip(group, cols):
                if piece is None:
                    piece = _columns(xpad, n0, n1, kernel, stride, dilation, out_sizes, groups)
                gw_t += xp.matmul(piece, _grad_columns(g, n0, n1, groups).swapaxes(1, 2))
    gw = xp.ascontiguousarray(gw_t.swapaxes(1, 2)).reshape((o, c // groups) + tuple(kernel))
    return gw if gw.dtype == out_dt else gw.astype(out_dt)


def backward_bias(g):
    """Gradient of the bias: the output gradient summed over the batch and the spatial dims."""
    out_dt = g.dtype
    axes = (0,) + tuple(range(2, g.ndim))
    r = g.sum(axis=axes, dtype=_compute_dtype(out_dt))
    return r if r.dtype == out_dt else r.astype(out_dt)
