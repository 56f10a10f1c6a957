"""Array kernels of spatial pooling and resampling, over NumPy or CuPy arrays.

Inputs are ``(..., *S)``: any leading dims (batch, channels), the pooled dims last.

- Max and average pooling walk the kernel taps: one vectorised step per tap over
  a strided slice of the padded input (no copy of the windows), with torch's
  rules for ties (the first maximum wins), NaN (it wins), ``ceil_mode`` windows
  and the average's divisor. Max pooling returns torch's indices: the flat
  position of the maximum in each input plane (``h * W + w``). The common 2x2
  window with stride 2 copies its four taps contiguous once and picks pairwise
  by bits (the same winners, no branches), in cache-sized blocks of planes over the intra-op threads.
- Adaptive max pooling walks the taps of the widest window, masking the taps
  past each window's end; ties and NaN as in max pooling.
- Adaptive average pooling and resampling (nearest, bilinear) are separable
  linear maps: one small matrix per spatial dim, applied with one matmul per
  dim; the gradient applies the transposed matrices.

16-bit floats are computed in float32 and rounded once (torch's opmath).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from . import parallel
from .array_api import HALF_TYPES, namespace_of

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_F32_F64 = (_F32, _F64)
# input bytes of a block of planes in the 2x2 max-pool: its taps and picks stay in a core's cache, and the
# ~20 NumPy calls per block stay few (smaller blocks measured slower, larger ones spill)
_POOL_BLOCK_BYTES = 1 << 20


def _opmath(dt):
    return _F32 if dt in HALF_TYPES else dt


def _back(r, dt):
    return r if r.dtype == dt else r.astype(dt)


def output_size(n, k, s, p, d, ceil_mode):
    """torch's pooling_output_shape: windows that would start in the right padding are dropped."""
    out = (n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def _padded(x, padding, need, value, dtype):
    """``x`` in ``dtype``, padded with ``value``: ``padding`` before each pooled dim, enough after
    for the last window (``need`` = its end in padded coordinates)."""
    xp = namespace_of(x)
    nd = len(padding)
    spatial = x.shape[x.ndim - nd:]
    after = [max(p, e - n - p) for n, p, e in zip(spatial, padding, need)]
    if not any(padding) and not any(after):
        return x if x.dtype == dtype else x.astype(dtype)
    shape = x.shape[:x.ndim - nd] + tuple(n + p + a for n, p, a in zip(spatial, padding, after))
    out = xp.full(shape, value, dtype)
    out[(Ellipsis,) + tuple(slice(p, p + n) for n, p in zip(spatial, padding))] = x
    return out


def _tap_slices(kernel, stride, dilation, out_sizes):
    """(tap, index) pairs: the strided slice of the padded input that tap ``tap`` reads."""
    for tap in itertools.product(*(range(k) for k in kernel)):
        yield tap, (Ellipsis,) + tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                                       for t, d, o, s in zip(tap, dilation, out_sizes, stride))


def _lowest(dt):
    return -np.inf if dt.kind == "f" or dt in HALF_TYPES else np.iinfo(dt).min


# --- max pooling --------------------------------------------------------------------------------------------------

def max_pool(x, kernel, stride, padding, dilation, out_sizes):
    """Max over each window and the flat index of the maximum in its input plane (int64)."""
    xp = namespace_of(x)
    if _is_plain_2x2(x, kernel, stride, padding, dilation, out_sizes):
        return _max_pool_2x2(x, out_sizes)
    nd = len(kernel)
    dt = x.dtype
    lead = x.shape[:x.ndim - nd]
    spatial = x.shape[x.ndim - nd:]
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out_sizes, stride, kernel, dilation)]
    lowest = _lowest(dt)
    xpad = _padded(x, padding, need, lowest, dt)
    best = xp.full(lead + tuple(out_sizes), lowest, dt)
    # torch starts each window at its first tap inside the input, so all-lowest windows point there
    first = [xp.maximum(0, -((xp.arange(o) * s - p) // d)) for o, s, p, d in zip(out_sizes, stride, padding, dilation)]
    tap_ids = first[0]
    for f, k in zip(first[1:], kernel[1:]):
        tap_ids = tap_ids[..., None] * k + f
    arg = xp.broadcast_to(tap_ids.astype(np.int32), best.shape).copy()
    is_float = dt.kind == "f" or dt in HALF_TYPES
    for flat, (tap, where) in enumerate(_tap_slices(kernel, stride, dilation, out_sizes)):
        v = xpad[where]
        better = v > best
        if is_float:
            better |= xp.isnan(v)   # NaN propagates; the last NaN of a window wins, as in torch
        xp.copyto(best, v, where=better)
        xp.copyto(arg, flat, where=better)
    return best, _flat_indices(arg, kernel, stride, padding, dilation, out_sizes, spatial)


def _is_plain_2x2(x, kernel, stride, padding, dilation, out_sizes):
    """The common 2x2 window, stride 2, no padding or dilation, every window inside the input (no ``ceil_mode``
    overhang), over a NumPy dtype with a same-sized integer view."""
    return (tuple(kernel) == (2, 2) and tuple(stride) == (2, 2) and not any(padding) and tuple(dilation) == (1, 1)
            and x.dtype.kind in "fiu" and x.dtype.itemsize in (1, 2, 4, 8) and x.ndim >= 3
            and all(2 * o <= n for o, n in zip(out_sizes, x.shape[-2:])))


def _max_pool_2x2(x, out_sizes):
    """``max_pool`` of 2x2 windows with stride 2: the four taps made contiguous in one copy, then two rounds of
    pairwise picks with torch's rule (the later tap wins when greater or NaN) - the same winner as torch's walk
    over the taps: the first maximum, or the last NaN. The picks select bits (no branches), so the values and
    their signs of zero are the winner's own. Planes go in cache-sized blocks (each block's passes touch memory about
    once), the blocks split over the intra-op threads."""
    xp = namespace_of(x)
    lead = x.shape[:-2]
    h, w = x.shape[-2:]
    oh, ow = out_sizes
    planes = math.prod(lead)
    best = xp.empty((planes, oh, ow), x.dtype)
    flat = xp.empty((planes, oh, ow), _I64)
    if best.size:
        src = x.reshape((planes, h, w))[:, :2 * oh, :2 * ow].reshape(planes, oh, 2, ow, 2)
        base = (xp.arange(oh, dtype=_I64) * (2 * w))[:, None] + xp.arange(ow, dtype=_I64) * 2
        bits = np.dtype(f"i{x.dtype.itemsize}")
        is_float = x.dtype.kind == "f"

        def chunk(start, stop):
            p0, p1 = start // (h * w), stop // (h * w)
            if xp is np:   # this thread's kept buffer: a fresh one of a block's size would page-fault every call
                taps = parallel.scratch("max_pool_2x2.taps", 4 * (p1 - p0) * oh * ow, x.dtype)
                taps = taps.reshape(2, 2, p1 - p0, oh, ow)
            else:
                taps = xp.empty((2, 2, p1 - p0, oh, ow), x.dtype)
            taps[...] = src[p0:p1].transpose(2, 4, 0, 1, 3)
            (t0, t1), (t2, t3) = taps

            def later_wins(later, earlier):
                m = later > earlier
                if is_float:
                    m |= xp.isnan(later)
                return m

            def pick(m, later, earlier, out=None):   # later where m, else earlier: by bits
                mask = xp.subtract(0, m, dtype=bits)
                e = earlier.view(bits)
                r = xp.bitwise_xor(e, later.view(bits), out=out)
                r &= mask
                r ^= e
                return r.view(x.dtype)

            right_top, right_bottom = later_wins(t1, t0), later_wins(t3, t2)
            top, bottom = pick(right_top, t1, t0), pick(right_bottom, t3, t2)
            lower = later_wins(bottom, top)
            pick(lower, bottom, top, out=best[p0:p1].view(bits))
            right = (lower & right_bottom) | (right_top & ~lower)
            out = flat[p0:p1]
            xp.multiply(lower, w, out=out, dtype=_I64)
            out += right
            out += base
        if xp is np:   # blocks of planes whose taps and picks stay in cache, the blocks over the intra-op threads
            parallel.for_blocks(planes * h * w, max(1, _POOL_BLOCK_BYTES // (h * w * x.itemsize)) * h * w, chunk)
        else:
            chunk(0, planes * h * w)
    return best.reshape(lead + (oh, ow)), flat.reshape(lead + (oh, ow))


def _flat_indices(arg, kernel, stride, padding, dilation, out_sizes, spatial):
    """Tap numbers of each window -> flat input positions ``h * W + w``."""
    xp = namespace_of(arg)
    arg = arg.astype(_I64)
    flat = xp.zeros(arg.shape, _I64)
    rest = arg
    nd = len(kernel)
    for i in reversed(range(nd)):
        t = rest % kernel[i]
        rest = rest // kernel[i]
        pos = xp.arange(out_sizes[i], dtype=_I64) * stride[i] - padding[i]
        coord = pos.reshape((-1,) + (1,) * (nd - 1 - i)) + t * dilation[i]
        flat += coord * math.prod(spatial[i + 1:])
    return flat


def max_pool_backward(g, indices, in_sizes):
    """Gradient of ``max_pool``: each output gradient added at its recorded input position."""
    xp = namespace_of(g)
    nd = len(in_sizes)
    lead = g.shape[:g.ndim - nd]
    planes = math.prod(lead)
    plane = math.prod(in_sizes)
    if planes * plane == 0:
        return xp.zeros(lead + tuple(in_sizes), g.dtype)
    offsets = (xp.arange(planes, dtype=_I64) * plane).reshape(lead + (1,) * nd)
    if xp is np and indices.dtype == _I64 and indices.shape == g.shape:
        # flat positions in this thread's kept buffer: a fresh array this large costs its page faults every call
        target = parallel.scratch("max_pool_backward.target", indices.size, _I64)
        np.add(indices, offsets, out=target.reshape(indices.shape))
    else:
        target = (indices + offsets).ravel()
    if g.dtype in _F32_F64:
        # added in the gradient's dtype, output position by output position: torch's arithmetic (a position
        # that is the maximum of several windows sums them in that order); NumPy's add.at is one fast loop
        gx = xp.zeros(planes * plane, g.dtype)
        xp.add.at(gx, target, g.ravel())
        return gx.reshape(lead + tuple(in_sizes))
    if xp is np:
        gx = xp.bincount(target, weights=g.ravel().astype(_F64), minlength=planes * plane)
    else:   # CuPy's bincount reads its largest index back from the device; a scatter-add does not
        gx = xp.zeros(planes * plane, _F64)
        xp.add.at(gx, target, g.ravel().astype(_F64))
    return _back(gx.reshape(lead + tuple(in_sizes)), g.dtype)


# --- adaptive max pooling -----------------------------------------------------------------------------------------

def _adaptive_bounds(n, out, xp=np):
    """Start and end of the adaptive windows [floor(i n / out), ceil((i + 1) n / out))."""
    i = xp.arange(out)
    return (i * n) // out, ((i + 1) * n + out - 1) // out


def _adaptive_widest(n, out):
    """The widest adaptive window, from the sizes alone (on the host: no device array is read)."""
    b, e = _adaptive_bounds(n, out)
    return int((e - b).max())


def adaptive_max_pool(x, out_sizes):
    """Max over adaptive windows and the flat index of each maximum in its input plane (int64)."""
    xp = namespace_of(x)
    nd = len(out_sizes)
    dt = x.dtype
    lead = x.shape[:x.ndim - nd]
    spatial = x.shape[x.ndim - nd:]
    out_sizes = tuple(out_sizes)
    best = xp.full(lead + out_sizes, _lowest(dt), dt)
    flat = xp.zeros(lead + out_sizes, _I64)
    if best.size == 0:
        return best, flat
    # the window tables are built where the data lives (a host table would be copied up at every call)
    bounds = [_adaptive_bounds(n, o, xp) for n, o in zip(spatial, out_sizes)]
    widest = [_adaptive_widest(n, o) for n, o in zip(spatial, out_sizes)]

    def along(i, v):   # a per-dim vector shaped to broadcast over the output's dim i
        return v.reshape((-1,) + (1,) * (nd - 1 - i))

    # torch starts each window's index at its first element, so an all -inf window points there
    for i, (b, _) in enumerate(bounds):
        flat += along(i, b * math.prod(spatial[i + 1:]))
    for tap in itertools.product(*(range(w) for w in widest)):
        idx, valid, pos = [], None, 0
        for i, (t, (b, e), n) in enumerate(zip(tap, bounds, spatial)):
            where = xp.minimum(b + t, n - 1)
            idx.append(along(i, where))
            ok = along(i, b + t < e)
            valid = ok if valid is None else valid & ok
            pos = pos + along(i, where * math.prod(spatial[i + 1:]))
        v = x[(Ellipsis,) + tuple(idx)]
        better = (v > best) | xp.isnan(v)   # NaN propagates; the last NaN of a window wins, as in torch
        better &= valid
        xp.copyto(best, v, where=better)
        xp.copyto(flat, pos, where=better)
    return best, flat


# --- average pooling ----------------------------------------------------------------------------------------------

def _avg_divisor(xp, spatial, kernel, stride, padding, out_sizes, count_include_pad, divisor_override, dt):
    """Each window's divisor, as a product of one factor per pooled dim (1 for windows wholly in padding)."""
    if divisor_override is not None:
        return None
    factors = []
    for i, (n, k, s, p, o) in enumerate(zip(spatial, kernel, stride, padding, out_sizes)):
        start = xp.arange(o) * s - p   # built where the data lives: no copy from the host per call
        end = xp.minimum(start + k, n + p)
        size = end - start
        inside = xp.minimum(end, n) - xp.maximum(start, 0)
        f = size if count_include_pad else inside
        f = xp.where(inside > 0, f, 1)
        factors.append(f.reshape((-1,) + (1,) * (len(spatial) - 1 - i)))
    div = factors[0]
    for f in factors[1:]:
        div = div * f
    return div.astype(dt)


def _divide(total, div, divisor_override, dt):
    """total / divisor; integer pooling truncates toward zero, as C++ integer division does."""
    xp = namespace_of(total)
    d = divisor_override if div is None else div
    if dt.kind in "iu":
        q = xp.abs(total) // d
        return xp.where(total < 0, -q, q)
    return total / d


def avg_pool(x, kernel, stride, padding, out_sizes, count_include_pad, divisor_override):
    xp = namespace_of(x)
    nd = len(kernel)
    dt = x.dtype
    acc = _opmath(dt)
    spatial = x.shape[x.ndim - nd:]
    need = [(o - 1) * s + k for o, s, k in zip(out_sizes, stride, kernel)]
    xpad = _padded(x, padding, need, 0, acc)
    total = xp.zeros(x.shape[:x.ndim - nd] + tuple(out_sizes), acc)
    for _, where in _tap_slices(kernel, stride, (1,) * nd, out_sizes):
        total += xpad[where]
    div = _avg_divisor(xp, spatial, kernel, stride, padding, out_sizes, count_include_pad, divisor_override, acc)
    return _back(_divide(total, div, divisor_override, acc), dt)


def avg_pool_backward(g, in_sizes, kernel, stride, padding, count_include_pad, divisor_override):
    xp = namespace_of(g)
    nd = len(kernel)
    dt = g.dtype
    acc = _opmath(dt)
    out_sizes = g.shape[g.ndim - nd:]
    div = _avg_divisor(xp, in_sizes, kernel, stride, padding, out_sizes, count_include_pad, divisor_override, acc)
    share = g.astype(acc) / (divisor_override if div is None else div)
    padded = [max(n + 2 * p, (o - 1) * s + k) for n, p, o, s, k in zip(in_sizes, padding, out_sizes, stride, kernel)]
    gx = xp.zeros(g.shape[:g.ndim - nd] + tuple(padded), acc)
    for _, where in _tap_slices(kernel, stride, (1,) * nd, out_sizes):
        gx[where] += share
    gx = gx[(Ellipsis,) + tuple(slice(p, p + n) for n, p in zip(in_sizes, padding))]
    return _back(xp.ascontiguousarray(gx), dt)


# --- separable linear maps: adaptive pooling and resampling -------------------------------------------------------

# The matrices below are built with ``xp`` where the data lives (NumPy, or CuPy on a GPU: no copy per call).

def adaptive_avg_matrix(n, out, dtype, xp=np):
    """(out, n) matrix averaging the adaptive windows [floor(i n / out), ceil((i + 1) n / out))."""
    start, end = _adaptive_bounds(n, out, xp)
    cols = xp.arange(n)
    inside = (cols >= start[:, None]) & (cols < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


def _scale(n_in, n_out, scale, dtype):
    """torch's compute_scales_value in ``dtype``: 1 / scale when given and positive, else the size ratio."""
    if scale is not None and scale > 0:
        return dtype.type(1.0 / scale)
    return dtype.type(n_in) / dtype.type(n_out)


def nearest_indices(n_in, n_out, scale, xp=np):
    """Source index of each output position: min(floor(i * scale), n_in - 1) in float32, as torch computes it."""
    s = _scale(n_in, n_out, scale, _F32)
    dst = xp.arange(n_out).astype(_F32)
    return xp.minimum(xp.floor(dst * s).astype(np.int64), n_in - 1)


def nearest_matrix(n_in, n_out, scale, dtype, xp=np):
    m = xp.zeros((n_out, n_in), dtype)
    m[xp.arange(n_out), nearest_indices(n_in, n_out, scale, xp)] = 1
    return m


def linear_matrix(n_in, n_out, align_corners, scale, dtype, xp=np):
    """(n_out, n_in) matrix of linear interpolation weights (torch's area_pixel_compute_source_index).

    Weights are computed in ``dtype`` (float32 for float32 / 16-bit inputs, as torch's opmath).
    """
    dtype = np.dtype(dtype)
    dst = xp.arange(n_out).astype(dtype)
    if align_corners:
        ratio = dtype.type(n_in - 1) / dtype.type(n_out - 1) if n_out > 1 else dtype.type(0)
        src = ratio * dst
    else:
        ratio = _scale(n_in, n_out, scale, dtype)
        src = xp.maximum(ratio * (dst + dtype.type(0.5)) - dtype.type(0.5), dtype.type(0))
    i0 = xp.minimum(src.astype(np.int64), n_in - 1)
    lam = xp.clip(src - i0.astype(dtype), 0, 1).astype(dtype)
    i1 = xp.minimum(i0 + 1, n_in - 1)
    if xp is np:
        m = np.zeros((n_out, n_in), dtype)
        rows = np.arange(n_out)
        np.add.at(m, (rows, i0), 1 - lam)
        np.add.at(m, (rows, i1), lam)
        return m
    # on a GPU, the same sums without a scatter: 1 - lam at column i0 plus lam at column i1
    cols = xp.arange(n_in)
    m = xp.where(cols == i0[:, None], (1 - lam)[:, None], dtype.type(0)).astype(dtype)
    m += xp.where(cols == i1[:, None], lam[:, None], dtype.type(0)).astype(dtype)
    return m


def separable_2d(x, mh, mw):
    """y[..., i, j] = sum_hw mh[i, h] x[..., h, w] mw[j, w], with two matmuls (numpy matrices are moved to
    ``x``'s array module)."""
    xp = namespace_of(x)
    mh, mw = xp.asarray(mh), xp.asarray(mw)
    lead = x.shape[:-2]
    h, w = x.shape[-2:]
    oh, ow = mh.shape[0], mw.shape[0]
    b = math.prod(lead)
    if b == 0 or h == 0 or w == 0:
        return xp.zeros(lead + (oh, ow), x.dtype)
    t = x.reshape(b * h, w) @ mw.T                                  # (b h, ow)
    t = xp.ascontiguousarray(t.reshape(b, h, ow).transpose(0, 2, 1)).reshape(b * ow, h)
    y = (t @ mh.T).reshape(b, ow, oh).transpose(0, 2, 1)            # (b, oh, ow)
    return xp.ascontiguousarray(y).reshape(lead + (oh, ow))


def _apply_along(x, m, axis):
    """``m`` (out, n) applied along ``axis`` of ``x``: one matmul over the other axes."""
    xp = namespace_of(x)
    moved = xp.moveaxis(x, axis, -1)
    return xp.moveaxis(moved @ m.T, -1, axis)


def separable(x, *mats):
    """The separable map of one matrix per trailing dim (two dims: ``separable_2d``'s two matmuls)."""
    if len(mats) == 2:
        return separable_2d(x, *mats)
    xp = namespace_of(x)
    nd = len(mats)
    lead = x.shape[:x.ndim - nd]
    out_sizes = tuple(m.shape[0] for m in mats)
    if x.size == 0:
        return xp.zeros(lead + out_sizes, x.dtype)
    for i, m in enumerate(mats):
        x = _apply_along(x, xp.asarray(m), x.ndim - nd + i)
    return xp.ascontiguousarray(x)


def resample(x, *mats):
    """``separable`` in the input's opmath dtype, rounded back once."""
    acc = _opmath(x.dtype)
    return _back(separable(x.astype(acc, copy=False), *(m.astype(acc) for m in mats)), x.dtype)


def nearest_2d(x, hi, wi):
    """x[..., hi[:, None], wi]: a gather, exact for every dtype."""
    xp = namespace_of(x)
    return x[..., xp.asarray(hi)[:, None], xp.asarray(wi)[None, :]]
