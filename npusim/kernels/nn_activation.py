"""Array kernels of nn.functional's activations, over NumPy or CuPy arrays.

Activations take a floating array and return one of the same dtype; 16-bit
floats are computed in float32 and rounded once (torch's opmath). Formulas
that can overflow are written in their stable forms (softplus, log_sigmoid,
mish).
"""
from __future__ import annotations

import math

import numpy as np

from .array_api import as_array, cast_like, namespace_of, opmath
from . import parallel
from .elementwise import _erf_into, _sigmoid_block, clamp, erf, select_into, sigmoid

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
    if _blockwise(x):
        return cast_like(_by_blocks(_gelu_tanh_block if approximate == "tanh" else _gelu_erf_block, 4, x), a)
    if approximate == "tanh":
        inner = _TANH_BETA * (x + _TANH_KAPPA * x * x * x)
        return cast_like(0.5 * x * (1 + xp.tanh(inner)), a)
    return cast_like(0.5 * x * (1 + erf(x * _SQRT1_2)), a)


def gelu_backward(g, a, approximate="none"):
    """d gelu(x) / dx times ``g``, in one pass over the arrays."""
    xp = namespace_of(a)
    x = opmath(a)
    go = opmath(g)
    if _blockwise(x) and go.__class__ is _ndarray and go.dtype is _F32 and go.shape == x.shape:
        block = _gelu_tanh_backward_block if approximate == "tanh" else _gelu_erf_backward_block
        return cast_like(_by_blocks(block, 5, x, go), a)
    if approximate == "tanh":
        x_sq = x * x
        t = xp.tanh(_TANH_BETA * (x + _TANH_KAPPA * x_sq * x))
        left = 0.5 * (1 + t)
        right = 0.5 * x * (1 - t * t) * (_TANH_BETA * (1 + 3 * _TANH_KAPPA * x_sq))
        return cast_like(go * (left + right), a)
    cdf = 0.5 * (1 + erf(x * _SQRT1_2))
    pdf = xp.exp(-0.5 * x * x) * _INV_SQRT_2PI
    return cast_like(go * (cdf + x * pdf), a)


# --- gelu over float32 NumPy arrays in cache-sized blocks -----------------------------------------------------
# The same operations in the same order as the whole-array expressions above (bit-identical results), computed
# block by block into a few small work arrays: one result array is allocated instead of a dozen temporaries the
# size of the input, and every pass over a block runs in cache.

_BLOCK = parallel.BLOCK
_F32 = np.dtype(np.float32)
_ndarray = np.ndarray


def _blockwise(x) -> bool:
    """float32 NumPy arrays laid out C-contiguously and large enough for blocks to pay."""
    return x.__class__ is _ndarray and x.dtype is _F32 and x.size >= 2 * _BLOCK and x.flags.c_contiguous


def _by_blocks(block, n_work, *arrays):
    """``block(out, work, *array_blocks)`` over consecutive flat blocks (parallel.for_blocks), ``work`` this
    thread's ``n_work`` block-sized scratch arrays; the result has the first array's shape."""
    flat = [a.reshape(-1) for a in arrays]
    out = np.empty(flat[0].shape, _F32)

    def piece(start, stop):
        m = stop - start
        work = parallel.scratch("gelu.work", n_work * _BLOCK, _F32)
        block(out[start:stop], [work[i * _BLOCK:i * _BLOCK + m] for i in range(n_work)],
              *(f[start:stop] for f in flat))
    parallel.for_blocks(out.shape[0], _BLOCK, piece)
    return out.reshape(arrays[0].shape)


def _gelu_erf_block(out, work, x):
    """0.5 * x * (1 + erf(x / sqrt(2)))."""
    np.multiply(x, _SQRT1_2, out=out)
    _erf_into(out, work[:3])
    np.add(out, 1, out=out)
    half = np.multiply(x, 0.5, out=work[3])
    np.multiply(half, out, out=out)


def _gelu_tanh_block(out, work, x):
    """0.5 * x * (1 + tanh(beta * (x + kappa * x^3)))."""
    mul = np.multiply
    t = mul(x, _TANH_KAPPA, out=work[0])
    mul(t, x, out=t)
    mul(t, x, out=t)
    np.add(x, t, out=t)
    mul(t, _TANH_BETA, out=t)
    np.tanh(t, out=t)
    np.add(t, 1, out=t)
    mul(x, 0.5, out=out)
    mul(out, t, out=out)


def _gelu_erf_backward_block(out, work, x, go):
    """go * (cdf + x * pdf): cdf = 0.5 * (1 + erf(x / sqrt(2))), pdf = exp(-x^2 / 2) / sqrt(2 pi)."""
    mul = np.multiply
    cdf = mul(x, _SQRT1_2, out=work[3])
    _erf_into(cdf, work[:3])
    np.add(cdf, 1, out=cdf)
    mul(cdf, 0.5, out=cdf)
    pdf = mul(x, -0.5, out=work[4])
    mul(pdf, x, out=pdf)
    np.exp(pdf, out=pdf)
    mul(pdf, _INV_SQRT_2PI, out=pdf)
    mul(x, pdf, out=pdf)
    np.add(cdf, pdf, out=cdf)
    mul(go, cdf, out=out)


def _gelu_tanh_backward_block(out, work, x, go):
    """go * (left + right), the derivative of the tanh approximation."""
    mul, add = np.multiply, np.add
    x_sq = mul(x, x, out=work[0])
    t = mul(x_sq, _TANH_KAPPA, out=work[1])
    mul(t, x, out=t)
    add(x, t, out=t)
    mul(t, _TANH_BETA, out=t)
    np.tanh(t, out=t)
    left = add(t, 1, out=work[2])
    mul(left, 0.5, out=left)
    right = mul(x, 0.5, out=work[3])
    sq = mul(t, t, out=t)
    np.subtract(1, sq, out=sq)
    mul(right, sq, out=right)
    slope = mul(x_sq, _3_KAPPA, out=x_sq)
    add(slope, 1, out=slope)
    mul(slope, _TANH_BETA, out=slope)
    mul(right, slope, out=right)
    add(left, right, out=left)
    mul(go, left, out=out)


_3_KAPPA = 3 * _TANH_KAPPA
_F32_F64 = (np.dtype(np.float32), np.dtype(np.float64))
_ZEROS = np.zeros(_BLOCK, _F32)
_SIXES = np.full(_BLOCK, 6, _F32)


def _mask(n):
    return parallel.scratch("activation.mask", n, np.bool_)


def _zeros(n):
    return _ZEROS[:n]


def _sixes(n):
    return _SIXES[:n]


def silu(a):
    x = opmath(a)
    if _blockwise(x):
        return _by_blocks(_silu_block, 1, x)
    return cast_like(x * sigmoid(x), a)


def _silu_block(out, work, x):
    """x * sigmoid(x): the blocked sigmoid's arithmetic into a work block, then the product."""
    _sigmoid_block(work[0], x)
    np.multiply(x, work[0], out=out)


def elu(a, alpha=1.0, scale=1.0, input_scale=1.0):
    """alpha * scale * (exp(x * input_scale) - 1) for x <= 0, x * scale elsewhere."""
    xp = namespace_of(a)
    x = opmath(a)
    if _blockwise(x):
        return _by_blocks(lambda out, work, xb: _elu_block(out, work, xb, alpha * scale, scale, input_scale), 2, x)
    neg = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
    return cast_like(xp.where(x <= 0, neg, x * scale), a)


def _elu_block(out, work, x, alpha_scale, scale, input_scale):
    """where(x <= 0, expm1(min(x, 0) * input_scale) * alpha_scale, x * scale), the same passes per block."""
    neg = np.minimum(x, _zeros(x.shape[0]), out=work[0])
    np.multiply(neg, input_scale, out=neg)
    np.expm1(neg, out=neg)
    np.multiply(neg, alpha_scale, out=neg)
    pos = np.multiply(x, scale, out=work[1])
    select_into(out, np.less_equal(x, 0, out=_mask(x.shape[0])), neg, pos)


def selu(a):
    return elu(a, SELU_ALPHA, SELU_SCALE, 1.0)


def selu_backward(g, a):
    """d selu(x) / dx times ``g``: torch's, elu_backward with selu's constants (the negative branch at 0)."""
    return elu_backward(g, a, SELU_ALPHA, SELU_SCALE, 1.0, False)


def leaky_relu(a, negative_slope=0.01):
    xp = namespace_of(a)
    x = opmath(a)
    if _blockwise(x):
        return _by_blocks(lambda out, work, xb: _leaky_relu_block(out, work, xb, negative_slope), 1, x)
    return cast_like(xp.where(x > 0, x, x * negative_slope), a)


def _leaky_relu_block(out, work, x, negative_slope):
    """where(x > 0, x, x * negative_slope) per block: the product, then x copied where positive."""
    scaled = np.multiply(x, negative_slope, out=work[0])
    select_into(out, np.greater(x, 0, out=_mask(x.shape[0])), x, scaled)


def softplus(a, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    xp = namespace_of(a)
    x = opmath(a)
    z = x * beta
    return cast_like(xp.where(z > threshold, x, stable_softplus(xp, z) / beta), a)


def hardtanh(a, min_val, max_val):
    """clamp(x, min_val, max_val); integral arrays stay integral."""
    xp = namespace_of(a)
    if xp is np and a.dtype in _F32_F64:
        # clamp's blocks (the same max then min; a number bound joins a float array at its dtype, as here)
        return clamp(a, a.dtype.type(min_val), a.dtype.type(max_val))
    return as_array(xp.minimum(xp.maximum(a, min_val), max_val))


def hardsigmoid(a):
    xp = namespace_of(a)
    x = opmath(a)
    if _blockwise(x):
        return _by_blocks(lambda out, work, xb: np.divide(_relu6_of_x_plus_3(out, xb), 6, out=out), 0, x)
    return cast_like(xp.minimum(xp.maximum(x + 3, 0), 6) / 6, a)


def _relu6_of_x_plus_3(out, x):
    """min(max(x + 3, 0), 6) into ``out``, the bounds as blocks (NumPy's array-with-number loop is slower, its
    values the same)."""
    np.add(x, 3, out=out)
    np.maximum(out, _zeros(x.shape[0]), out=out)
    return np.minimum(out, _sixes(x.shape[0]), out=out)


def hardswish(a):
    xp = namespace_of(a)
    x = opmath(a)
    if _blockwise(x):
        return _by_blocks(_hardswish_block, 0, x)
    return cast_like(x * xp.minimum(xp.maximum(x + 3, 0), 6) / 6, a)


def _hardswish_block(out, work, x):
    """x * min(max(x + 3, 0), 6) / 6, left to right."""
    np.multiply(x, _relu6_of_x_plus_3(out, x), out=out)
    np.divide(out, 6, out=out)


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


def threshold_backward(g, a, threshold_):
    """The gradient of threshold / relu: ``g`` where x > threshold, 0 where x <= threshold (a NaN x passes ``g``),
    torch's arithmetic (a masked copy, not a product: an inf or NaN gradient under the mask gives 0)."""
    xp = namespace_of(a if getattr(a, "ndim", 0) else g)     # a 0-d cpu operand arrives as a NumPy scalar
    if xp is np and g.shape == a.shape and g.flags.c_contiguous and a.flags.c_contiguous and g.size >= _BLOCK \
            and g.dtype.kind != "c" and g.dtype.itemsize in (1, 2, 4, 8):
        # a masked copy (copyto's where=) branches per element, ~15 ns each on a random mask; the same bits come
        # from integer views without a branch: (x <= t) - 1 is 0 or all ones, and'ed with g's bits (+0 or g)
        out = np.empty_like(g)
        bits = np.dtype(f"i{g.itemsize}")
        g_bits, a_flat, out_bits = g.reshape(-1).view(bits), a.reshape(-1), out.reshape(-1).view(bits)
        if a.dtype == np.float16 and _exact_in_half(threshold_):
            # NumPy compares float16 one element at a time; float32 holds both sides exactly (half_casts widens
            # without a branch), so the comparison is the same
            a_flat, threshold_ = parallel.astype(a_flat, np.float32), np.float32(threshold_)   # split when large

        def piece(s, e):   # cache-sized pieces: the three passes touch memory once
            o = out_bits[s:e]
            np.less_equal(a_flat[s:e], threshold_, out=o, casting="unsafe")
            np.subtract(o, 1, out=o)
            np.bitwise_and(g_bits[s:e], o, out=o)
        parallel.for_blocks(g.size, _BLOCK, piece)
        return out
    return as_array(xp.where(a <= threshold_, xp.zeros((), g.dtype), g))


def _exact_in_half(v) -> bool:
    """Whether ``v`` (a Python number or a float16 scalar) is a float16 value exactly, as compared with one."""
    if v.__class__ is np.float16:
        return True
    if v.__class__ is not int and v.__class__ is not float:
        return False
    with np.errstate(over="ignore"):
        return float(np.float16(v)) == v


def prelu(a, weight):
    """x for x > 0, weight * x elsewhere (``weight`` already shaped to broadcast)."""
    xp = namespace_of(a)
    x = opmath(a)
    return cast_like(xp.where(x > 0, x, opmath(weight) * x), a)


# --- activations' backward ops, with torch's CPU arithmetic (its Activation.cpp kernels) ----------------------
# ``g`` and ``a`` come in one dtype (the op's promoted one); 16-bit floats compute in float32 and round once.
# Large float32 arrays of one shape run per cache-sized block, the same ufuncs in the same order.

_ONE_SIXTH = np.float32(1.0 / 6.0)   # torch's one_sixth(1.0f / 6.0f): float's 1/6, in float64 too


def _pair_blockwise(x, go) -> bool:
    return _blockwise(x) and go.__class__ is _ndarray and go.dtype is _F32 and go.shape == x.shape and \
        go.flags.c_contiguous


def _zero_of(r):
    return r.dtype.type(0)


def silu_backward(g, a):
    """dy * s * (1 + x * (1 - s)), s = sigmoid(x), left to right."""
    x, go = opmath(a), opmath(g)
    if _pair_blockwise(x, go):
        return _by_blocks(_silu_backward_block, 2, x, go)
    s = sigmoid(x)
    return cast_like(go * s * (1 + x * (1 - s)), a)


def _silu_backward_block(out, work, x, go):
    s = work[0]
    _sigmoid_block(s, x)
    t = np.subtract(1, s, out=work[1])
    np.multiply(x, t, out=t)
    np.add(1, t, out=t)
    np.multiply(go, s, out=out)
    np.multiply(out, t, out=out)


def hardswish_backward(g, a):
    """0 for x <= -3, dy from 3 on, dy * (x / 3 + 0.5) between (and for NaN, as torch's vectorised kernel: its
    scalar one, which serves the last few elements of a tensor, passes dy there)."""
    xp = namespace_of(a)
    x, go = opmath(a), opmath(g)
    if _pair_blockwise(x, go):
        return _by_blocks(_hardswish_backward_block, 2, x, go)
    r = xp.where(x >= 3, go, go * (x / 3 + 0.5))
    return cast_like(xp.where(x <= -3, _zero_of(r), r), a)


def _hardswish_backward_block(out, work, x, go):
    n = x.shape[0]
    middle = np.divide(x, 3, out=work[0])
    np.add(middle, 0.5, out=middle)
    np.multiply(go, middle, out=middle)
    inner = work[1]
    select_into(inner, np.greater_equal(x, 3, out=_mask(n)), go, middle)
    select_into(out, np.less_equal(x, -3, out=_mask(n)), _zeros(n), inner)


def hardsigmoid_backward(g, a):
    """dy * (1/6 as a float) strictly inside (-3, 3), else 0."""
    xp = namespace_of(a)
    x, go = opmath(a), opmath(g)
    sixth = x.dtype.type(_ONE_SIXTH)
    if _pair_blockwise(x, go):
        return _by_blocks(lambda out, work, xb, gb: _hardsigmoid_backward_block(out, work, xb, gb, sixth), 1, x, go)
    r = go * sixth
    return cast_like(xp.where((x > -3) & (x < 3), r, _zero_of(r)), a)


def _hardsigmoid_backward_block(out, work, x, go, sixth):
    scaled = np.multiply(go, sixth, out=work[0])
    select_into(out, _strictly_inside(x, -3, 3), scaled, _zeros(x.shape[0]))


def _strictly_inside(x, lo, hi):
    """The block mask lo < x < hi (False for NaN), in this thread's mask scratch."""
    inside = np.greater(x, lo, out=_mask(x.shape[0]))
    return np.logical_and(inside, np.less(x, hi, out=parallel.scratch("activation.mask2", x.shape[0], np.bool_)),
                          out=inside)


def hardtanh_backward(g, a, min_val, max_val):
    """dy strictly between the bounds (in x's dtype), else 0 (NaN too, as torch's vectorised kernel: its scalar
    one, which serves the last few elements of a tensor, passes dy there)."""
    xp = namespace_of(a)
    lo, hi = a.dtype.type(min_val), a.dtype.type(max_val)
    if _pair_blockwise(a, g):
        return _by_blocks(lambda out, work, xb, gb: _hardtanh_backward_block(out, xb, gb, lo, hi), 0, a, g)
    return as_array(xp.where((a > lo) & (a < hi), g, _zero_of(g)))


def _hardtanh_backward_block(out, x, go, lo, hi):
    select_into(out, _strictly_inside(x, lo, hi), go, _zeros(x.shape[0]))


def leaky_relu_backward(g, a, negative_slope):
    """dy where x > 0, else dy * negative_slope."""
    xp = namespace_of(a)
    x, go = opmath(a), opmath(g)
    if _pair_blockwise(x, go):
        return _by_blocks(lambda out, work, xb, gb: _leaky_relu_backward_block(out, work, xb, gb, negative_slope),
                          1, x, go)
    return cast_like(xp.where(x > 0, go, go * negative_slope), a)


def _leaky_relu_backward_block(out, work, x, go, negative_slope):
    scaled = np.multiply(go, negative_slope, out=work[0])
    select_into(out, np.greater(x, 0, out=_mask(x.shape[0])), go, scaled)


def elu_backward(g, a, alpha, scale, input_scale, is_result):
    """torch's: dy * scale where x > 0; elsewhere (NaN too, as torch's vectorised kernel) dy * input_scale *
    (alpha * scale) * exp(x * input_scale), or from an in-place elu's result y, dy * input_scale * (y + alpha *
    scale). The coefficients are in the computation dtype (alpha * scale rounded there), products left to right."""
    xp = namespace_of(a)
    x, go = opmath(a), opmath(g)
    t = x.dtype.type
    neg_coef, pos_coef, in_coef = t(alpha) * t(scale), t(scale), t(input_scale)
    if _pair_blockwise(x, go):
        return _by_blocks(lambda out, work, xb, gb: _elu_backward_block(out, work, xb, gb, neg_coef, pos_coef,
                                                                        in_coef, is_result), 2, x, go)
    if is_result:
        negative = go * in_coef * (x + neg_coef)
    else:
        negative = go * in_coef * neg_coef * xp.exp(x * in_coef)
    return cast_like(xp.where(x > 0, go * pos_coef, negative), a)


def _elu_backward_block(out, work, x, go, neg_coef, pos_coef, in_coef, is_result):
    neg, scaled = work
    if is_result:
        np.add(x, neg_coef, out=neg)
    else:
        np.multiply(x, in_coef, out=neg)
        np.exp(neg, out=neg)
    np.multiply(go, in_coef, out=scaled)
    if not is_result:
        np.multiply(scaled, neg_coef, out=scaled)
    np.multiply(scaled, neg, out=neg)
    np.multiply(go, pos_coef, out=scaled)
    select_into(out, np.greater(x, 0, out=_mask(x.shape[0])), scaled, neg)


def softplus_backward(g, a, beta, threshold):
    """torch's: dy where x * beta > threshold, else dy * z / (z + 1) with z = exp(x * beta), left to right."""
    xp = namespace_of(a)
    x, go = opmath(a), opmath(g)
    b, thr = x.dtype.type(beta), x.dtype.type(threshold)
    if _pair_blockwise(x, go):
        return _by_blocks(lambda out, work, xb, gb: _softplus_backward_block(out, work, xb, gb, b, thr), 2, x, go)
    z = x * b
    above = z > thr
    e = xp.exp(z)
    return cast_like(xp.where(above, go, go * e / (e + 1)), a)


def _softplus_backward_block(out, work, x, go, b, thr):
    z, num = work
    np.multiply(x, b, out=z)
    above = np.greater(z, thr, out=_mask(x.shape[0]))
    np.exp(z, out=z)
    np.multiply(go, z, out=num)
    np.add(z, 1, out=z)
    np.divide(num, z, out=num)
    select_into(out, above, go, num)
