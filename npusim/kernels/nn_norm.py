"""Array kernels of the normalisation layers (layer, batch and group norm), over NumPy or CuPy arrays.

Each normalises ``x`` by the mean and variance of some of its elements, then scales
and shifts by optional per-feature ``weight`` and ``bias``. Statistics are two-pass
(mean, then the mean of squared deviations) in float32 for 16-bit inputs, float64
for float64 ones; the result is rounded once to the input's dtype. The kernels
return the statistics backward needs, as torch's native_* ops do: the mean and
the reciprocal standard deviation ``rstd = 1 / sqrt(var + eps)``.
"""
from __future__ import annotations

import math

import numpy as np

from . import parallel as P
from .array_api import HALF_TYPES, namespace_of

_F32 = np.dtype(np.float32)


def _opmath(dt):
    return _F32 if dt in HALF_TYPES else dt


def _cast(a, dt):
    return a if a.dtype == dt else a.astype(dt)


def _moments(xf, axes):
    """Mean and biased variance over ``axes`` (kept as size-1 dims)."""
    xp = namespace_of(xf)
    mean = xf.mean(axis=axes, keepdims=True)
    d = xf - mean
    var = xp.multiply(d, d, out=d).mean(axis=axes, keepdims=True)
    return mean, var


def _rstd(var, eps):
    xp = namespace_of(var)
    return 1 / xp.sqrt(var + var.dtype.type(eps))


def _affine(y, weight, bias, shape):
    """y * weight + bias with the parameters reshaped to broadcast as ``shape``."""
    if weight is not None:
        y *= weight.reshape(shape).astype(y.dtype, copy=False)
    if bias is not None:
        y += bias.reshape(shape).astype(y.dtype, copy=False)
    return y


def _work_like(y, spare):
    """An array of ``y``'s shape and C layout for a temporary: ``spare`` (an array of ours no longer needed), or a
    reused per-thread NumPy work array (a fresh one of this size would take fresh pages on every call); None (a
    fresh array) when ``y`` is not a C-contiguous NumPy array, so the temporary keeps NumPy's own layout."""
    if y.__class__ is not np.ndarray or not y.flags.c_contiguous:
        return None
    if spare is not None and spare.__class__ is np.ndarray and spare.flags.c_contiguous and \
            spare.shape == y.shape and spare.dtype == y.dtype:
        return spare
    return P.scratch("nn_norm.work", y.size, y.dtype).reshape(y.shape)


def layer_norm(x, n_normalized, weight, bias, eps, stat_dtype):
    """Normalise over the last ``n_normalized`` dims; returns (y, mean, rstd), the statistics shaped
    ``x.shape[:-n] + (1,) * n`` in ``stat_dtype``."""
    acc = _opmath(x.dtype)
    axes = tuple(range(x.ndim - n_normalized, x.ndim))
    xf = _cast(x, acc)
    if xf.size == 0:
        stats_shape = x.shape[:x.ndim - n_normalized] + (1,) * n_normalized
        xp = namespace_of(x)
        nan = xp.full(stats_shape, np.nan, stat_dtype)
        return xp.empty(x.shape, x.dtype), nan, nan.copy()
    xp = namespace_of(xf)
    mean = xf.mean(axis=axes, keepdims=True)
    y = xf - mean   # the centred input is kept: it is the variance's deviations and the output's numerator
    work = _work_like(y, xf if xf is not x else None)
    var = (y * y if work is None else xp.multiply(y, y, out=work)).mean(axis=axes, keepdims=True)
    rstd = _rstd(var, eps)
    y = _affine(xp.multiply(y, rstd, out=y), weight, bias, x.shape[x.ndim - n_normalized:])
    return _cast(y, x.dtype), _cast(mean, stat_dtype), _cast(rstd, stat_dtype)


def layer_norm_backward(dy, x, n_normalized, mean, rstd, weight, output_mask):
    """torch's CPU layer-norm backward over the last ``n_normalized`` dims: (dx, dgamma, dbeta), each None where
    ``output_mask`` is false. Per row, with g = dy * gamma, ds = sum(g * x), db = sum(g) and N elements:
    dx = rstd * g + b * x + c, b = (db * mean - ds) * rstd^3 / N, c = -b * mean - db * rstd / N;
    dgamma = sum over rows of dy * (x - mean) * rstd, dbeta = sum of dy. dx is in x's dtype, the parameters'
    gradients in the computation dtype (float32 for 16-bit inputs)."""
    xp = namespace_of(x)
    acc = _opmath(x.dtype)
    norm_shape = x.shape[x.ndim - n_normalized:]
    n = math.prod(norm_shape)
    m = x.size // n if n else 0
    if x.size == 0:
        zeros = xp.zeros(norm_shape, acc)
        return (xp.empty(x.shape, x.dtype) if output_mask[0] else None,
                zeros if output_mask[1] else None, zeros.copy() if output_mask[2] else None)
    xf = _cast(x, acc).reshape(m, n)
    g = _cast(dy, acc).reshape(m, n)
    mean = _cast(mean, acc).reshape(m, 1)
    rstd = _cast(rstd, acc).reshape(m, 1)
    dx = dgamma = dbeta = None
    scratch = None   # a row-sized array of ours that dx no longer needs (the weighted gradient's)
    if output_mask[0]:
        if weight is None:
            gg = g
        else:
            w_row, work = _cast(weight, acc).reshape(1, n), _work_like(g, None)
            gg = g * w_row if work is None else xp.multiply(g, w_row, out=work)
        # the row sums as a product and a matrix-vector product (BLAS): short rows reduce slowly one by one
        ds = xp.einsum("ij,ij->i", gg, xf).reshape(m, 1)
        db = (gg @ xp.ones(n, acc)).reshape(m, 1)
        scale = acc.type(1 / n)
        b = (db * mean - ds) * rstd * rstd * rstd * scale
        c = -b * mean - db * rstd * scale
        dx = xp.multiply(gg, rstd)
        dx += xp.multiply(xf, b, out=gg if gg is not g else None)
        dx += c
        # (only where x - mean would be laid out as it: the column sums below run over its layout)
        scratch = gg if gg is not g and gg.flags.c_contiguous and xf.flags.c_contiguous else None
        dx = _cast(dx, x.dtype).reshape(x.shape)
    ones_m = xp.ones(m, acc) if output_mask[1] or output_mask[2] else None
    if output_mask[1]:
        xhat = xf - mean if scratch is None else xp.subtract(xf, mean, out=scratch)
        xhat *= rstd
        xhat *= g
        dgamma = (ones_m @ xhat).reshape(norm_shape)     # column sums through BLAS
    if output_mask[2]:
        dbeta = (ones_m @ g).reshape(norm_shape)
    return dx, dgamma, dbeta


def batch_norm_train(x, weight, bias, eps):
    """Normalise each channel (dim 1) by its batch statistics.

    Returns (y, mean, rstd, unbiased variance), the statistics per channel in the
    computation dtype (the caller rounds them; the unbiased variance feeds the running average).
    """
    acc = _opmath(x.dtype)
    axes = (0,) + tuple(range(2, x.ndim))
    xf = _cast(x, acc)
    mean, var = _moments(xf, axes)
    rstd = _rstd(var, eps)
    c = x.shape[1]
    y = _affine((xf - mean) * rstd, weight, bias, (1, c) + (1,) * (x.ndim - 2))
    n = x.size // max(c, 1)
    unbiased = var * acc.type(n / (n - 1)) if n > 1 else var / acc.type(0)
    return _cast(y, x.dtype), mean.reshape(c), rstd.reshape(c), unbiased.reshape(c)


def batch_norm_eval(x, weight, bias, running_mean, running_var, eps):
    """Normalise each channel by the running statistics."""
    xp = namespace_of(x)
    acc = _opmath(x.dtype)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    mean = _cast(running_mean, acc).reshape(shape)
    rstd = 1 / xp.sqrt(_cast(running_var, acc).reshape(shape) + acc.type(eps))
    y = _affine((_cast(x, acc) - mean) * rstd, weight, bias, shape)
    return _cast(y, x.dtype)


def running_update(running, batch_stat, momentum):
    """(1 - momentum) * running + momentum * batch_stat, in the running tensor's dtype."""
    acc = _opmath(running.dtype)
    r = _cast(running, acc) * acc.type(1 - momentum) + _cast(batch_stat, acc) * acc.type(momentum)
    return _cast(r, running.dtype)


def group_norm(x, groups, weight, bias, eps, stat_dtype):
    """Normalise each group of ``C // groups`` channels of each sample; returns (y, mean, rstd) with the
    statistics shaped (N, groups)."""
    acc = _opmath(x.dtype)
    n, c = x.shape[:2]
    per_group = c // groups * math.prod(x.shape[2:])
    xf = _cast(x, acc).reshape(n, groups, per_group)
    if xf.size == 0:
        xp = namespace_of(x)
        nan = xp.full((n, groups), np.nan, stat_dtype)
        return xp.empty(x.shape, x.dtype), nan, nan.copy()
    mean, var = _moments(xf, (2,))
    rstd = _rstd(var, eps)
    y = ((xf - mean) * rstd).reshape(x.shape)
    y = _affine(y, weight, bias, (1, c) + (1,) * (x.ndim - 2))
    return _cast(y, x.dtype), _cast(mean.reshape(n, groups), stat_dtype), _cast(rstd.reshape(n, groups), stat_dtype)

