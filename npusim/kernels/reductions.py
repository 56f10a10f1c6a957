"""Reduction and scan kernels with PyTorch's numerics, over NumPy or CuPy arrays.

Callers decide the result dtype and validate dims; ``axes`` is a tuple of
non-negative axes, ``None`` for all of them. Each reduction is one array call
(or a few for the two-pass statistics); the array methods (``a.sum``) serve
NumPy and CuPy alike and skip ``np.sum``'s dispatch overhead. 16-bit floats
accumulate in float32 and round once at the end, as torch's CPU kernels do.
Large sums, products, means, maxima and minima run in chunks on the intra-op
threads (``parallel.reduce``).
"""
from __future__ import annotations

import math

import numpy as np

from . import parallel as P
from .array_api import HALF_TYPES, as_array, namespace_of

_F16, _F32 = np.dtype(np.float16), np.dtype(np.float32)
_I64 = np.dtype(np.int64)


def _finish(r, dtype):
    r = as_array(r)
    return r if r.dtype == dtype else r.astype(dtype)


def _half_operand(a, dtype):
    """For 16-bit results or inputs: the input rounded to ``dtype`` first, accumulated in float32."""
    return a if a.dtype == dtype else a.astype(dtype)


def sum_(a, axes, keepdims, dtype):
    """Sum in ``dtype``: the input is cast to ``dtype`` first (torch's ``dtype=``)."""
    if dtype in HALF_TYPES or a.dtype in HALF_TYPES:
        a = _half_operand(a, dtype)
        if axes is not None and a.ndim - 1 not in axes and a.__class__ is np.ndarray and a.flags.c_contiguous \
                and a.dtype == _F16:
            # the last axis kept (a bias gradient's sum over rows): each result accumulates its column in order,
            # so one whole-array float16 -> float32 conversion (half_casts', split over the intra-op threads
            # when large) gives the bits of NumPy's per-element cast
            a = P.astype(a, _F32)
        return _finish(P.reduce(np.add, "sum", a, axes, keepdims, _F32), dtype)
    return _finish(P.reduce(np.add, "sum", a, axes, keepdims, dtype), dtype)


def prod(a, axes, keepdims, dtype):
    if dtype in HALF_TYPES or a.dtype in HALF_TYPES:
        return _finish(P.reduce(np.multiply, "prod", _half_operand(a, dtype), axes, keepdims, _F32), dtype)
    return _finish(P.reduce(np.multiply, "prod", a, axes, keepdims, dtype), dtype)


def reduced_count(shape, axes) -> int:
    if axes is None:
        return math.prod(shape)
    return math.prod(shape[i] for i in axes)


def mean(a, axes, keepdims, dtype):
    """Float ``dtype``; an empty reduction gives nan (0 / 0), as in torch."""
    acc = _F32 if dtype in HALF_TYPES else dtype
    if a.dtype != dtype and dtype in HALF_TYPES:
        a = a.astype(dtype)
    s = as_array(P.reduce(np.add, "sum", a, axes, keepdims, acc))
    return _finish(s / acc.type(reduced_count(a.shape, axes)), dtype)


def amax(a, axes, keepdims):
    """Max over ``axes``; NaN propagates. Zero-size reductions are refused by the caller."""
    return as_array(P.reduce(np.maximum, "max", a, axes, keepdims))


def amin(a, axes, keepdims):
    return as_array(P.reduce(np.minimum, "min", a, axes, keepdims))


def argmax(a, axis, keepdims):
    """Index of the first maximum (the first NaN wins), int64; ``axis=None`` indexes the flattened array."""
    return _index_result(a, a.argmax(axis=axis), axis, keepdims)


def argmin(a, axis, keepdims):
    return _index_result(a, a.argmin(axis=axis), axis, keepdims)


def _index_result(a, r, axis, keepdims):
    r = as_array(r)
    if keepdims:
        r = namespace_of(a).expand_dims(r, axis) if axis is not None else r.reshape((1,) * a.ndim)
    return _finish(r, _I64)


def max_with_indices(a, axis, keepdims, *, largest=True):
    """(values, int64 indices) along one axis: values are read at the arg-max/min positions."""
    xp = namespace_of(a)
    idx = xp.expand_dims(a.argmax(axis=axis) if largest else a.argmin(axis=axis), axis)
    values = xp.take_along_axis(a, idx, axis=axis)
    if not keepdims:
        values = xp.squeeze(values, axis=axis)
        idx = xp.squeeze(idx, axis=axis)
    return as_array(values), _finish(idx, _I64)


def var_mean(a, axes, correction, keepdims, *, want_std=False):
    """(variance or standard deviation, mean) with ``correction`` subtracted from the count.

    Two passes in the accumulation dtype; a count at or below ``correction``
    divides by zero and gives inf (or nan when every deviation is zero).
    """
    xp = namespace_of(a)
    out_dt = a.dtype
    if out_dt in HALF_TYPES:
        a = a.astype(_F32)
    n = reduced_count(a.shape, axes)
    m = xp.true_divide(a.sum(axis=axes, keepdims=True), a.dtype.type(n))
    d = as_array(a - m)
    if d.dtype.kind == "c":   # |z - mean|^2: a complex variance is real
        v_dt = np.dtype(out_dt.char.lower())
        ssq = (d.real * d.real + d.imag * d.imag).sum(axis=axes, keepdims=keepdims)
        v_out = _finish(_var_from(xp, ssq, n, correction, want_std), v_dt)
        return v_out, _finish(m if keepdims else m.reshape(v_out.shape), out_dt)
    ssq = xp.multiply(d, d, out=d).sum(axis=axes, keepdims=keepdims)
    dof = max(0, n - correction)
    if dof > 0:
        v = xp.true_divide(ssq, a.dtype.type(dof))
    else:
        with np.errstate(divide="ignore", invalid="ignore"):  # inf / nan are the answer here
            v = xp.true_divide(ssq, a.dtype.type(0))
    if want_std:
        v = xp.sqrt(v)
    if not keepdims:
        m = m.reshape(v.shape)
    return _finish(v, out_dt), _finish(m, out_dt)


def _var_from(xp, ssq, n, correction, want_std):
    dof = max(0, n - correction)
    with np.errstate(divide="ignore", invalid="ignore"):  # no degrees of freedom: inf / nan are the answer
        v = xp.true_divide(ssq, ssq.dtype.type(dof))
    return xp.sqrt(v) if want_std else v


def vector_norm(a, p, axes, keepdims, dtype):
    """torch's vector p-norm in float ``dtype`` (the input is cast to it first); a complex vector's norm is its
    moduli's, in the real dtype of its parts."""
    xp = namespace_of(a)
    if a.dtype.kind == "c":
        a = as_array(xp.abs(a))
        if dtype.kind == "c":
            dtype = np.dtype(dtype.char.lower())    # complex64 -> float32, complex128 -> float64
    if a.dtype != dtype:
        a = a.astype(dtype)
    if dtype in HALF_TYPES:
        a = a.astype(_F32)
    if p == 2:
        r = xp.sqrt(xp.sum(a * a, axis=axes, keepdims=keepdims))
    elif p == 1:
        r = xp.sum(xp.abs(a), axis=axes, keepdims=keepdims)
    elif p == math.inf:
        r = xp.max(xp.abs(a), axis=axes, keepdims=keepdims)
    elif p == -math.inf:
        r = xp.min(xp.abs(a), axis=axes, keepdims=keepdims)
    elif p == 0:
        r = xp.sum(a != 0, axis=axes, dtype=a.dtype, keepdims=keepdims)
    else:
        r = xp.power(xp.sum(xp.power(xp.abs(a), a.dtype.type(p)), axis=axes, keepdims=keepdims),
                     a.dtype.type(1.0 / p))
    return _finish(r, dtype)


def all_(a, axes, keepdims):
    """Logical and; an empty tuple of axes reduces nothing (torch's ``all.dims`` with ``[]``)."""
    return as_array(a.all(axis=axes, keepdims=keepdims))


def any_(a, axes, keepdims):
    return as_array(a.any(axis=axes, keepdims=keepdims))


def logsumexp(a, axes, keepdims, out_dtype=None):
    """log(sum(exp(a))) shifted by the finite max: -inf rows stay -inf, +inf gives inf, NaN propagates.

    With ``out_dtype`` (torch's ``out=``) the exponentials are summed and the log taken in that dtype.
    """
    xp = namespace_of(a)
    out_dt = a.dtype if out_dtype is None else out_dtype
    acc = _F32 if out_dt in HALF_TYPES else out_dt
    if a.dtype in HALF_TYPES:
        a = a.astype(_F32)
    if a.size == 0:  # a zero-size reduction sums nothing: log(0) = -inf
        return _finish(xp.log(xp.sum(xp.exp(a), axis=axes, dtype=acc, keepdims=keepdims)), out_dt)
    m = a.max(axis=axes, keepdims=True)
    m = xp.where(xp.isinf(m), a.dtype.type(0), m)
    shifted = as_array(a - m)
    s = xp.exp(shifted, out=shifted).sum(axis=axes, dtype=acc, keepdims=keepdims)
    if not keepdims:
        m = m.reshape(s.shape)
    return _finish(xp.log(s) + m.astype(acc), out_dt)


def cumsum(a, axis, dtype):
    """Running sum along ``axis`` in ``dtype`` (the input cast first); a 0-dim input is its own sum."""
    if a.ndim == 0:
        return a.astype(dtype)
    if dtype in HALF_TYPES or a.dtype in HALF_TYPES:
        return _finish(_half_operand(a, dtype).cumsum(axis=axis, dtype=_F32), dtype)
    return _finish(a.cumsum(axis=axis, dtype=dtype), dtype)


def cumprod(a, axis, dtype):
    if a.ndim == 0:
        return a.astype(dtype)
    if dtype in HALF_TYPES or a.dtype in HALF_TYPES:
        return _finish(_half_operand(a, dtype).cumprod(axis=axis, dtype=_F32), dtype)
    return _finish(a.cumprod(axis=axis, dtype=dtype), dtype)


def softmax(a, axis, dtype, *, log=False, safe=False, overwrite=False):
    """Softmax (or log-softmax) of ``a`` cast to float ``dtype``, shifted by the max for stability.

    ``safe``: rows whose every entry is -inf give zeros rather than NaN (torch's ``_safe_softmax``).
    ``overwrite``: ``a`` is the caller's scratch array (attention's scores), computed into when it has ``dtype``:
    the same values without a second array of its size.
    """
    xp = namespace_of(a)
    if a.dtype != dtype:
        a = a.astype(dtype)
        overwrite = True
    if a.size == 0:
        return a.copy()
    if a.ndim == 0:
        a = a.reshape(1)
        axis = 0
        scalar = True
    else:
        scalar = False
    if dtype in HALF_TYPES:
        a = a.astype(_F32)
    top = a.max(axis=axis, keepdims=True)
    dead = None
    if safe:
        dead = top == -np.inf   # a row's max is -inf only when every entry is (a NaN makes it NaN)
        if xp is np and not dead.any():
            dead = None
    if dead is not None:
        with np.errstate(invalid="ignore"):    # the dead rows' -inf - -inf, zeroed below
            r = softmax(a, axis, a.dtype, overwrite=overwrite)
        xp.copyto(r, 0, where=dead)
        if scalar:
            r = r.reshape(())
        return _finish(r, dtype)
    # the one full-size temporary, reused (``a`` itself when it is scratch of the result's dtype)
    shifted = xp.subtract(a, top, out=a) if overwrite and a.dtype == dtype else as_array(a - top)
    if log:
        r = xp.subtract(shifted, xp.log(xp.exp(shifted).sum(axis=axis, keepdims=True)), out=shifted)
    else:
        e = xp.exp(shifted, out=shifted)
        r = xp.true_divide(e, e.sum(axis=axis, keepdims=True), out=e)
    if scalar:
        r = r.reshape(())
    return _finish(r, dtype)


def softmax_backward(grad, out, axis, dtype):
    """torch's ``_softmax_backward_data``: the gradient of softmax's input from ``grad`` and the softmax ``out``,
    as npusim's softmax formula computes it (``grad * out - out * sum(grad * out)``, each step rounded as the
    separate ops round it), with one temporary besides the result; cast to ``dtype`` (the input's)."""
    xp = namespace_of(out)
    if xp is np:   # large arrays split over the intra-op threads, as the separate ops split them
        gr = as_array(P.binary(np.multiply, grad, out))
        rows = sum_(gr, (axis,), True, gr.dtype)
        P.binary(np.subtract, gr, P.binary(np.multiply, out, rows), out=gr)
        return _finish(gr, dtype)
    gr = xp.multiply(grad, out)
    xp.subtract(gr, xp.multiply(out, sum_(gr, (axis,), True, gr.dtype)), out=gr)
    return _finish(gr, dtype)
