"""Array kernels of nn.functional's activations, over NumPy or CuPy arrays.

Activations take a floating array and return one of the same dtype; 16-bit
floats are computed in float32 and rounded once (torch's opmath). Formulas
that can overflow are written in their stable forms (softplus, log_sigmoid,
mish).
"""
from __future__ import annotations

import math

from .array_api import as_array, cast_like, namespace_of, opmath
from .elementwise import erf, sigmoid

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_BETA = math.sqrt(2.0 / math.pi)   # gelu's tanh approximation: tanh(beta * (x + kappa * x^3))
_TANH_KAPPA = 0.044715


def stable_softplus(xp, z):
    """log(1 + exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|))."""
    return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


# --- activations ------------------------------------------------------------------------------------

def gelu(a, approximate="none"):
    xp = namespace_of(a)
    x = opmath(a)
    if approximate == "tanh":
        inner = _TANH_BETA * (x + _TANH_KAPPA * x * x * x)
        return cast_like(0.5 * x * (1 + xp.tanh(inner)), a)
    return cast_like(0.5 * x * (1 + erf(x * _SQRT1_2)), a)


def gelu_backward(g, a, approximate="none"):
    """d gelu(x) / dx times ``g``, in one pass over the arrays."""
    xp = namespace_of(a)
    x = opmath(a)
    go = opmath(g)
    if approximate == "tanh":
        x_sq = x * x
        t = xp.tanh(_TANH_BETA * (x + _TANH_KAPPA * x_sq * x))
        left = 0.5 * (1 + t)
        right = 0.5 * x * (1 - t * t) * (_TANH_BETA * (1 + 3 * _TANH_KAPPA * x_sq))
        return cast_like(go * (left + right), a)
    cdf = 0.5 * (1 + erf(x * _SQRT1_2))
    pdf = xp.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return cast_like(go * (cdf + x * pdf), a)


def silu(a):
    x = opmath(a)
    return cast_like(x * sigmoid(x), a)


def elu(a, alpha=1.0, scale=1.0, input_scale=1.0):
    """alpha * scale * (exp(x * input_scale) - 1) for x <= 0, x * scale elsewhere."""
    xp = namespace_of(a)
    x = opmath(a)
    neg = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
    return cast_like(xp.where(x <= 0, neg, x * scale), a)


def selu(a):
    return elu(a, SELU_ALPHA, SELU_SCALE, 1.0)


def selu_backward(g, a):
    """d selu(x) / dx times ``g``, in one pass."""
    xp = namespace_of(a)
    x = opmath(a)
    go = opmath(g)
    # torch takes the negative branch at 0
    slope = xp.where(x <= 0, xp.exp(xp.minimum(x, 0)) * (SELU_ALPHA * SELU_SCALE), SELU_SCALE)
    return cast_like(go * slope, a)


def leaky_relu(a, negative_slope=0.01):
    xp = namespace_of(a)
    x = opmath(a)
    return cast_like(xp.where(x > 0, x, x * negative_slope), a)


def softplus(a, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    xp = namespace_of(a)
    x = opmath(a)
    z = x * beta
    return cast_like(xp.where(z > threshold, x, stable_softplus(xp, z) / beta), a)


def hardtanh(a, min_val, max_val):
    """clamp(x, min_val, max_val); integral arrays stay integral."""
    xp = namespace_of(a)
    return as_array(xp.minimum(xp.maximum(a, min_val), max_val))


def hardsigmoid(a):
    xp = namespace_of(a)
    x = opmath(a)
    return cast_like(xp.minimum(xp.maximum(x + 3, 0), 6) / 6, a)


def hardswish(a):
    xp = namespace_of(a)
    x = opmath(a)
    return cast_like(x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6, a)


def mish(a):
    xp = namespace_of(a)
    x = opmath(a)
    return cast_like(x * xp.tanh(stable_softplus(xp, x)), a)


def log_sigmoid(a):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), exact for large |x|."""
    xp = namespace_of(a)
    x = opmath(a)
    return cast_like(xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x))), a)


def logit(a, eps=None):
    """log(x / (1 - x)), with x clamped to [eps, 1 - eps] first when eps is given (and not negative)."""
    xp = namespace_of(a)
    x = opmath(a)
    if eps is not None and eps >= 0:
        x = xp.minimum(xp.maximum(x, eps), 1 - eps)
    return cast_like(xp.log(x / (1 - x)), a)


def threshold(a, threshold_, value):
    """``value`` where x <= threshold, x elsewhere (NaN stays NaN)."""
    xp = namespace_of(a)
    return as_array(xp.where(a <= threshold_, a.dtype.type(value), a))


def prelu(a, weight):
    """x for x > 0, weight * x elsewhere (``weight`` already shaped to broadcast)."""
    xp = namespace_of(a)
    x = opmath(a)
    return cast_like(xp.where(x > 0, x, opmath(weight) * x), a)
