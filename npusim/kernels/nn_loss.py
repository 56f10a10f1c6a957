"""Array kernels of the loss functions, over NumPy or CuPy arrays.

``reduction`` is torch's enum: 0 none, 1 mean, 2 sum. 16-bit floats compute in
float32 and round once. The log-likelihood kernels take class scores laid out
as (N, C) (the caller flattens other layouts) and check the targets, which only
the data can do.
"""
from __future__ import annotations

import numpy as np

from . import device_checks as DC
from .nn_activation import stable_softplus
from .array_api import HALF_TYPES, as_array, namespace_of

_F32 = np.dtype(np.float32)
NONE, MEAN, SUM = 0, 1, 2


def _opmath(a):
    return a.astype(_F32) if a.dtype in HALF_TYPES else a


def reduce(loss, reduction, dtype):
    """Apply a reduction to per-element losses and give the result ``dtype``."""
    if reduction == SUM:
        r = loss.sum()
    elif reduction == MEAN:
        r = loss.sum() / loss.dtype.type(loss.size)   # an empty input gives nan (0 / 0), as torch
    else:
        r = loss
    r = as_array(r)
    return r if r.dtype == dtype else r.astype(dtype)


# --- negative log-likelihood ------------------------------------------------------------------------

def _picked(logp, target, weight, ignore_index):
    """For each row: the score of its target and that class's weight (0 where the target is ignored)."""
    xp = namespace_of(logp)
    n_classes = logp.shape[1]
    valid = target != ignore_index
    if n_classes and DC.deferred(target):   # checked on the device, reported later (device_checks)
        clipped = xp.clip(target, 0, n_classes - 1)
        DC.record((valid & (clipped != target)).any(), DC.NLL_TARGET)
        safe = xp.where(valid, clipped, 0)
    else:
        bad = valid & ((target < 0) | (target >= n_classes))
        if bool(bad.any()):
            raise IndexError(f"Target {int(target[bad][0])} is out of bounds.")
        safe = xp.where(valid, target, 0)
    picked = logp[xp.arange(logp.shape[0]), safe]
    w = valid.astype(logp.dtype) if weight is None else xp.where(valid, weight[safe], 0).astype(logp.dtype)
    return picked, w


def nll_loss_forward(logp, target, weight, reduction, ignore_index):
    """(loss, total_weight) of 2-D scores ``logp`` (N, C) and class indices ``target`` (N,)."""
    dtype = logp.dtype
    x = _opmath(logp)
    w_arr = None if weight is None else _opmath(weight)
    picked, w = _picked(x, target, w_arr, ignore_index)
    losses = -picked * w
    if reduction == NONE:
        return as_array(losses).astype(dtype, copy=False), as_array(w.sum()).astype(dtype)
    total = w.sum()
    out = losses.sum()
    if reduction == MEAN:
        out = out / total
    return as_array(out).astype(dtype), as_array(total).astype(dtype)


def nll_loss_backward(grad, logp, target, weight, reduction, ignore_index, total_weight):
    """The gradient of :func:`nll_loss_forward` with respect to ``logp`` (zero except at the targets)."""
    xp = namespace_of(logp)
    x = _opmath(logp)
    w_arr = None if weight is None else _opmath(weight)
    valid = target != ignore_index
    if x.shape[1] and DC.deferred(target):   # the forward recorded bad targets; write in bounds
        target = xp.clip(target, 0, x.shape[1] - 1)
    safe = xp.where(valid, target, 0)
    w = valid.astype(x.dtype) if w_arr is None else xp.where(valid, w_arr[safe], 0).astype(x.dtype)
    g = _opmath(grad).astype(x.dtype, copy=False)
    if reduction == MEAN:
        g = g / _opmath(total_weight).astype(x.dtype, copy=False)
    coeff = xp.where(valid, -w * g, 0).astype(x.dtype, copy=False)
    out = xp.zeros(x.shape, dtype=x.dtype)
    out[xp.arange(x.shape[0]), safe] = coeff
    return out.astype(logp.dtype, copy=False)


# --- regression losses -----------------------------------------------------------------------------------

def mse(x, t):
    d = _opmath(x) - _opmath(t)
    return d * d


def mse_backward(g, x, t, reduction):
    """The gradient of mse_loss in ``x``: torch's arithmetic, ``alpha * (x - t) * g`` in the operands' dtype with
    alpha = 2 (2 / numel for the mean) rounded to that dtype; ``g`` is the reduced loss's gradient (0-d) or, for
    no reduction, one per element."""
    xp = namespace_of(x if getattr(x, "ndim", 0) else t)
    d = as_array(xp.subtract(x, t))
    n = d.size
    alpha = d.dtype.type(2.0 / n if reduction == MEAN and n else 2.0)
    xp.multiply(d, alpha, out=d)
    if xp.ndim(g) <= d.ndim and all(a == b or b == 1 for a, b in zip(d.shape[::-1], xp.shape(g)[::-1])):
        xp.multiply(d, g, out=d)     # g fits in d's shape: no temporary
        return d
    return as_array(d * g)


def l1(x, t):
    return namespace_of(x).abs(_opmath(x) - _opmath(t))


def smooth_l1(x, t, beta):
    """0.5 z^2 / beta below beta, z - 0.5 beta above (z = |x - t|); plain l1 for beta 0."""
    xp = namespace_of(x)
    z = xp.abs(_opmath(x) - _opmath(t))
    if beta == 0:
        return z
    return xp.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)


def huber(x, t, delta):
    """0.5 z^2 below delta, delta (z - 0.5 delta) above (z = |x - t|)."""
    xp = namespace_of(x)
    z = xp.abs(_opmath(x) - _opmath(t))
    return xp.where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta))


# --- binary cross-entropy -------------------------------------------------------------------------------

def binary_cross_entropy(x, t, weight):
    """-(t log x + (1 - t) log(1 - x)), each log clamped at -100 as torch does."""
    xp = namespace_of(x)
    p = _opmath(x)
    y = _opmath(t)
    outside = (p < 0) | (p > 1) | xp.isnan(p)
    if DC.deferred(p):   # checked on the device, reported later (device_checks)
        DC.record(outside.any(), DC.BCE_INPUT)
    elif bool(outside.any()):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = (y - 1) * xp.maximum(xp.log1p(-p), -100) - y * xp.maximum(xp.log(p), -100)
    return loss if weight is None else loss * _opmath(weight)


def binary_cross_entropy_with_logits(x, t, weight, pos_weight):
    """(1 - t) x + (1 + (pos_weight - 1) t) softplus(-x), without overflow for large |x|."""
    xp = namespace_of(x)
    z = _opmath(x)
    y = _opmath(t)
    log_weight = 1 if pos_weight is None else (_opmath(pos_weight) - 1) * y + 1
    loss = (1 - y) * z + log_weight * stable_softplus(xp, -z)
    return loss if weight is None else loss * _opmath(weight)
