"""The gradient scaler's array kernels, torch's AmpGradScalerKernels over NumPy or CuPy arrays.

``non_finite_check_and_unscale_`` multiplies gradients by ``inv_scale`` in place (16-bit floats in float32,
rounded once; the gradients are left as they are when ``inv_scale`` is 1) and sets ``found_inf`` to 1 when any
value was an inf or a NaN before the multiplication. ``update_scale_`` is ``_amp_update_scale_``: back off after
an inf, grow after ``growth_interval`` clean steps in a row, in double precision rounded to float32 as torch's
kernel computes ``scale * factor``.

On NumPy arrays the check (isfinite into a block-sized mask) and the multiplication run block by block, so each
gradient is read and written once, split over the intra-op threads when large. CuPy arrays take whole-array
device operations, with no read back to the host.
"""
from __future__ import annotations

import math

import numpy as np

from . import half_casts, parallel
from .array_api import BFLOAT16, namespace_of

_ndarray = np.ndarray
_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_HALF = (_F16, BFLOAT16)
_BLOCK = 1 << 18      # elements of a piece: the piece, its mask and its float32 widening stay in the CPU caches


def non_finite_check_and_unscale_(grads, found_inf, inv_scale) -> None:
    """Unscale the arrays of ``grads`` in place; ``found_inf`` (one float32) becomes 1 if any held an inf/NaN."""
    if not grads:
        return
    if found_inf.__class__ is _ndarray and inv_scale.__class__ is _ndarray:
        inv = inv_scale.reshape(-1)[0]
        bad = False
        for g in grads:
            bad = _host_unscale(g, inv) or bad
        if bad:
            found_inf.reshape(-1)[0] = 1.0
        return
    _device_unscale(grads, found_inf, inv_scale)


def _host_unscale(g, inv) -> bool:
    """One NumPy gradient: whether it held an inf or NaN; multiplied by ``inv`` in place unless that is 1."""
    dt = g.dtype
    scale = None if inv == 1 else (float(inv) if dt.itemsize == 8 else inv)   # float32 meets float32, f64 f64
    if not (g.flags.c_contiguous or g.flags.f_contiguous):
        return _strided_unscale(g, scale)
    flat = g.reshape(-1, order="A")     # a view: C- or F-ordered memory, element by element
    half = dt in _HALF
    found = []

    def work(start, stop):
        size = min(_BLOCK, stop - start)
        wide = np.empty(size, _F32) if half else None
        finite = np.empty(size, np.bool_)
        with np.errstate(all="ignore"):
            for lo in range(start, stop, _BLOCK):
                piece = flat[lo:min(lo + _BLOCK, stop)]
                x = piece
                if half:
                    x = wide[:piece.shape[0]]
                    if not (dt == _F16 and half_casts.copyto(x, piece, "unsafe")):
                        np.copyto(x, piece, casting="unsafe")
                if not found:
                    f = finite[:piece.shape[0]]
                    np.isfinite(x, out=f)
                    if not f.all():
                        found.append(True)
                if scale is not None:
                    np.multiply(x, scale, out=x)
                    if half and not (dt == _F16 and half_casts.copyto(piece, x, "unsafe")):
                        np.copyto(piece, x, casting="unsafe")
    parallel.for_ranges(flat.shape[0], _BLOCK, work)
    return bool(found)


def _strided_unscale(g, scale) -> bool:
    with np.errstate(all="ignore"):
        x = g.astype(_F32) if g.dtype in _HALF else g
        bad = not bool(np.isfinite(x).all())
        if scale is not None:
            if x is g:
                np.multiply(g, scale, out=g)
            else:
                np.copyto(g, np.multiply(x, scale), casting="unsafe")
    return bad


def _device_unscale(grads, found_inf, inv_scale) -> None:
    xp = namespace_of(found_inf)
    inv = inv_scale.reshape(())
    one = inv == 1
    bad = None
    for g in grads:
        half = g.dtype in _HALF
        x = g.astype(_F32) if half else g
        b = xp.logical_not(xp.isfinite(x).all())
        bad = b if bad is None else xp.logical_or(bad, b)
        r = xp.where(one, x, x * inv.astype(x.dtype))
        g[...] = r.astype(g.dtype) if half else r
    found_inf[...] = xp.where(bad, xp.ones((), found_inf.dtype), found_inf)


def update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval) -> None:
    """torch's _amp_update_scale_ on one-element arrays: float32 ``scale``, int32 ``growth_tracker``."""
    if scale.__class__ is _ndarray and growth_tracker.__class__ is _ndarray and found_inf.__class__ is _ndarray:
        s = scale.reshape(-1)
        t = growth_tracker.reshape(-1)
        with np.errstate(all="ignore"):
            if found_inf.reshape(-1)[0]:         # any nonzero flag, NaN included, as C++'s test
                s[0] = float(s[0]) * backoff_factor
                t[0] = 0
                return
            successful = int(t[0]) + 1
            if successful == growth_interval:
                grown = np.float32(float(s[0]) * growth_factor)
                if math.isfinite(grown):          # never grow past float32's range to inf
                    s[0] = grown
                t[0] = 0
            else:
                t[0] = (successful + 2 ** 31) % 2 ** 32 - 2 ** 31     # int32 arithmetic
        return
    xp = namespace_of(scale)
    s, t = scale.reshape(()), growth_tracker.reshape(())
    inf = found_inf.reshape(()) != 0
    wide = s.astype(np.float64)
    backed_off = (wide * backoff_factor).astype(_F32)
    grown = (wide * growth_factor).astype(_F32)
    successful = t + 1
    due = successful == growth_interval
    new_scale = xp.where(inf, backed_off, xp.where(xp.logical_and(due, xp.isfinite(grown)), grown, s))
    new_tracker = xp.where(xp.logical_or(inf, due), xp.zeros((), t.dtype), successful)
    scale[...] = new_scale.astype(scale.dtype)
    growth_tracker[...] = new_tracker.astype(growth_tracker.dtype)
