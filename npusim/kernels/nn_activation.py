"""Array kernels of nn.functional's activations and lookup layers, over NumPy or CuPy arrays.

Activations take a floating array and return one of the same dtype; 16-bit
floats are computed in float32 and rounded once (torch's opmath). Formulas
that can overflow are written in their stable forms (softplus, log_sigmoid,
mish). Also here: one-hot encoding, embedding lookups and their gradient, and
the index maps of the reflect / replicate / circular paddings.
"""
from __future__ import annotations

import math

import numpy as np

from .array_api import HALF_TYPES, as_array, namespace_of
from .elementwise import erf, sigmoid

_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_BETA = math.sqrt(2.0 / math.pi)   # gelu's tanh approximation: tanh(beta * (x + kappa * x^3))
_TANH_KAPPA = 0.044715


def _opmath(a):
    """The array to compute on: 16-bit floats widen to float32."""
    return a.astype(_F32) if a.dtype in HALF_TYPES else a


def _back(r, like):
    r = as_array(r)
    return r if r.dtype == like.dtype else r.astype(like.dtype)


def stable_softplus(xp, z):
    """log(1 + exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|))."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


# --- activations ------------------------------------------------------------------------------------

def gelu(a, approximate="none"):
    xp = namespace_of(a)
    x = _opmath(a)
    if approximate == "tanh":
        inner = _TANH_BETA * (x + _TANH_KAPPA * x * x * x)
        return _back(0.5 * x * (1 + xp.tanh(inner)), a)
    return _back(0.5 * x * (1 + erf(x * _SQRT1_2)), a)


def gelu_backward(g, a, approximate="none"):
    """d gelu(x) / dx times ``g``, in one pass over the arrays."""
    xp = namespace_of(a)
    x = _opmath(a)
    go = _opmath(g)
    if approximate == "tanh":
        x_sq = x * x
        t = xp.tanh(_TANH_BETA * (x + _TANH_KAPPA * x_sq * x))
        left = 0.5 * (1 + t)
        right = 0.5 * x * (1 - t * t) * (_TANH_BETA * (1 + 3 * _TANH_KAPPA * x_sq))
        return _back(go * (left + right), a)
    cdf = 0.5 * (1 + erf(x * _SQRT1_2))
    pdf = xp.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return _back(go * (cdf + x * pdf), a)


def silu(a):
    x = _opmath(a)
    return _back(x * sigmoid(x), a)


def elu(a, alpha=1.0, scale=1.0, input_scale=1.0):
    """alpha * scale * (exp(x * input_scale) - 1) for x <= 0, x * scale elsewhere."""
    xp = namespace_of(a)
    x = _opmath(a)
    neg = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
    return _back(xp.where(x <= 0, neg, x * scale), a)


def selu(a):
    return elu(a, SELU_ALPHA, SELU_SCALE, 1.0)


def selu_backward(g, a):
    """d selu(x) / dx times ``g``, in one pass."""
    xp = namespace_of(a)
    x = _opmath(a)
    go = _opmath(g)
    # torch takes the negative branch at 0
    slope = xp.where(x <= 0, xp.exp(xp.minimum(x, 0)) * (SELU_ALPHA * SELU_SCALE), SELU_SCALE)
    return _back(go * slope, a)


def leaky_relu(a, negative_slope=0.01):
    xp = namespace_of(a)
    x = _opmath(a)
    return _back(xp.where(x > 0, x, x * negative_slope), a)


def softplus(a, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    xp = namespace_of(a)
    x = _opmath(a)
    z = x * beta
    return _back(xp.where(z > threshold, x, stable_softplus(xp, z) / beta), a)


def hardtanh(a, min_val, max_val):
    """clamp(x, min_val, max_val); integral arrays stay integral."""
    xp = namespace_of(a)
    return as_array(xp.minimum(xp.maximum(a, min_val), max_val))


def hardsigmoid(a):
    xp = namespace_of(a)
    x = _opmath(a)
    return _back(xp.minimum(xp.maximum(x + 3, 0), 6) / 6, a)


def hardswish(a):
    xp = namespace_of(a)
    x = _opmath(a)
    return _back(x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6, a)


def mish(a):
    xp = namespace_of(a)
    x = _opmath(a)
    return _back(x * xp.tanh(stable_softplus(xp, x)), a)


def log_sigmoid(a):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), exact for large |x|."""
    xp = namespace_of(a)
    x = _opmath(a)
    return _back(xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))), a)


def logit(a, eps=None):
    """log(x / (1 - x)), with x clamped to [eps, 1 - eps] first when eps is given (and not negative)."""
    xp = namespace_of(a)
    x = _opmath(a)
    if eps is not None and eps >= 0:
        x = xp.minimum(xp.maximum(x, eps), 1 - eps)
    return _back(xp.log(x / (1 - x)), a)


def threshold(a, threshold_, value):
    """``value`` where x <= threshold, x elsewhere (NaN stays NaN)."""
    xp = namespace_of(a)
    return as_array(xp.where(a <= threshold_, a.dtype.type(value), a))


def prelu(a, weight):
    """x for x > 0, weight * x elsewhere (``weight`` already shaped to broadcast)."""
    xp = namespace_of(a)
    x = _opmath(a)
    return _back(xp.where(x > 0, x, _opmath(weight) * x), a)


# --- one-hot and embeddings ---------------------------------------------------------------------------

def one_hot(idx, num_classes):
    """int64 array of shape idx.shape + (num_classes,) with a 1 at each index."""
    xp = namespace_of(idx)
    return (idx[..., None] == xp.arange(num_classes, dtype=idx.dtype)).astype(_I64)


def embedding(weight, idx):
    """Rows of ``weight`` picked by ``idx`` (already range-checked)."""
    return weight[idx]


def embedding_backward(grad, idx, num_weights, padding_idx, scale_grad_by_freq):
    """The dense gradient of ``weight[idx]``: each row sums the gradients of its lookups.

    The ``padding_idx`` row gets nothing; with ``scale_grad_by_freq`` each
    lookup's gradient is divided by how often its index occurs in the batch.
    """
    xp = namespace_of(grad)
    flat = idx.reshape(-1)
    dim = grad.shape[-1]
    g = _opmath(grad).reshape(-1, dim)
    if scale_grad_by_freq:
        if xp is np:
            counts = xp.bincount(flat, minlength=num_weights)
        else:   # CuPy's bincount reads the largest index back; a scatter-add does not
            counts = xp.zeros(num_weights, np.int32)
            xp.add.at(counts, flat, 1)
        g = g / counts[flat][:, None].astype(g.dtype)
    if 0 <= padding_idx < num_weights:
        keep = flat != padding_idx
        if xp is np:
            flat, g = flat[keep], g[keep]
        else:   # a boolean mask would read its count back: zero the padding rows' gradients instead
            g = xp.where(keep[:, None], g, 0).astype(g.dtype, copy=False)
    out = xp.zeros((num_weights, dim), dtype=g.dtype)
    xp.add.at(out, flat, g)
    return _back(out, grad)


def embedding_renorm_(weight, idx, max_norm, norm_type):
    """Scale, in place, each looked-up row whose ``norm_type``-norm exceeds ``max_norm`` down to it."""
    xp = namespace_of(weight)
    rows = xp.unique(idx.reshape(-1))
    picked = _opmath(weight[rows])
    if norm_type == math.inf:
        norms = xp.abs(picked).max(axis=1)
    elif norm_type == 0:
        norms = (picked != 0).sum(axis=1).astype(picked.dtype)
    else:
        norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(picked.dtype)
    weight[rows] = (picked * scale[:, None]).astype(weight.dtype)
    return weight


# --- paddings ----------------------------------------------------------------------------------------

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
    g = _opmath(grad)
    for k in reversed(range(len(pads))):
        before, after = pads[k]
        axis = g.ndim - 1 - k
        size = input_shape[axis]
        src = pad_source_index(xp, size, before, after, mode)
        moved = xp.moveaxis(g, axis, 0)
        out = xp.zeros((size,) + moved.shape[1:], dtype=g.dtype)
        xp.add.at(out, src, moved)
        g = xp.moveaxis(out, 0, axis)
    return _back(xp.ascontiguousarray(g), grad)


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
