"""Elementwise kernels with PyTorch's semantics, over NumPy or CuPy arrays.

Callers hand in operands already converted to the op's computation dtype (the
type promotion is decided above this layer). Where NumPy's ufunc already does
what torch does, the kernel is the ufunc; the functions here cover the rest:
integer division by zero, rounding modes, torch's pow for negative integer
exponents, a numerically stable sigmoid, erf, lerp and friends.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

from . import complex as KX
from . import out_destination as _od
from . import parallel as P
from .array_api import HALF_TYPES, as_array, compute_dtype, is_integral, namespace_of


def _int_zero_check(xp, b, a=None):
    """torch raises on integer division by zero instead of returning garbage (with no element, nothing divides)."""
    if getattr(a, "size", 1) == 0 or getattr(b, "size", 1) == 0:
        return
    if isinstance(b, (int, np.integer)):
        zero = b == 0
    else:
        zero = bool((b == 0).any())
    if zero:
        raise RuntimeError("ZeroDivisionError")


def _xp(a, b=None):
    """The array module of the operands: a device array wins over a host 0-d array or a number."""
    xa = namespace_of(a) if hasattr(a, "shape") else None
    if xa is not None and xa is not np:
        return xa
    if b is not None and hasattr(b, "shape"):
        xb = namespace_of(b)
        if xb is not np:
            return xb
    return xa or np


def _dtype(a, b):
    """The computation dtype: the array operand's (callers hand in operands already promoted)."""
    return a.dtype if hasattr(a, "dtype") else b.dtype


def div_trunc(a, b, out=None):
    xp = _xp(a, b)
    dt = _dtype(a, b)
    if is_integral(dt):
        _int_zero_check(xp, b, a)
        q = xp.floor_divide(a, b)
        fix = (xp.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        r = xp.add(q, fix.astype(q.dtype), out=out)
        return as_array(r)
    return as_array(xp.trunc(xp.true_divide(a, b), out=out))


def div_floor(a, b, out=None):
    xp = _xp(a, b)
    dt = _dtype(a, b)
    if is_integral(dt):
        _int_zero_check(xp, b, a)
    return as_array(xp.floor_divide(a, b, out=out))


def remainder(a, b, out=None):
    xp = _xp(a, b)
    dt = _dtype(a, b)
    if is_integral(dt):
        _int_zero_check(xp, b, a)
        return as_array(xp.remainder(a, b, out=out))
    r = as_array(xp.remainder(a, b, out=out))
    # torch's remainder is fmod(a, b) moved into b's sign when nonzero, so a zero keeps a's sign where NumPy's
    # takes b's: remainder(-4., 2.) is -0. in torch
    xp.copyto(r, xp.copysign(r, a), where=(r == 0))
    return r


def fmod(a, b, out=None):
    xp = _xp(a, b)
    dt = _dtype(a, b)
    if is_integral(dt):
        _int_zero_check(xp, b, a)
    return as_array(xp.fmod(a, b, out=out))


def int_power(a, b, out=None):
    """torch.pow on integral arrays: a negative exponent gives 1 for base 1, +-1 for base -1, else 0."""
    xp = _xp(a, b)
    neg = b < 0
    if xp is np and not neg.any():   # on a device the general path costs less than a host sync
        return as_array(xp.power(a, b, out=out))
    r = xp.power(a, xp.where(neg, 0, b).astype(b.dtype, copy=False))
    odd = xp.remainder(b, 2) != 0
    special = xp.where(a == 1, 1, xp.where(a == -1, xp.where(odd, -1, 1), 0)).astype(r.dtype)
    r = xp.where(neg, special, r)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


def sigmoid(a, out=None):
    """1 / (1 + exp(-x)) without overflow for large |x|: 1 / (1 + e) for x >= 0, else e / (1 + e), e = exp(-|x|).
    The numerator is max(e, x >= 0) (e <= 1; a NaN stays NaN), so one division serves both branches: the same
    values in fewer passes and temporaries than a where() over two quotients. NumPy arrays are computed into
    ``out`` or the offered out= array, in cache-sized blocks split over the intra-op threads."""
    if a.dtype.kind == "c":
        return KX.sigmoid(a, out)
    xp = namespace_of(a)
    if xp is np and (a.dtype.kind == "f" or a.dtype in HALF_TYPES):
        dest = out if out is not None else (_od.take(a.shape, a.dtype) if _od.offered() else None)
        if dest is None or dest.shape != a.shape or dest.dtype != a.dtype or not _blockable(a, dest):
            dest = np.empty_like(a)     # a channels_last input keeps its layout
        if not _in_blocks(dest, _sigmoid_block, a):
            _sigmoid_float(a, dest)
        if out is not None and dest is not out:
            out[...] = dest
            return out
        return dest
    src = a.astype(np.float32) if a.dtype in HALF_TYPES else a
    if src.dtype.kind == "f":
        e = xp.empty_like(src)
        xp.abs(src, out=e)
        xp.negative(e, out=e)
        xp.exp(e, out=e)
        r = xp.empty_like(src)
        xp.maximum(e, src >= 0, out=r)
        xp.divide(r, xp.add(e, 1, out=e), out=r)
    else:
        e = xp.exp(-xp.abs(src))
        r = xp.where(src >= 0, 1 / (1 + e), e / (1 + e))
    r = r.astype(a.dtype, copy=False)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


_BLOCK = P.BLOCK
_F32_F64 = (np.dtype(np.float32), np.dtype(np.float64))
_SIGN_BIT = {4: (np.int32, np.int32(-2 ** 31)), 8: (np.int64, np.int64(-2 ** 63))}   # (view, sign bit)


def _blockable(a, dest) -> bool:
    """``dest`` may be written block by block while ``a`` is read: no shared memory (or exactly the same array)."""
    return dest is a or not np.may_share_memory(a, dest) or (
        a.shape == dest.shape and a.strides == dest.strides
        and a.__array_interface__["data"][0] == dest.__array_interface__["data"][0])


def _blocks_fit(first, *others) -> bool:
    """NumPy arrays of one shape, C-contiguous and large enough for ``_in_blocks`` to pay."""
    if not (first.__class__ is np.ndarray and first.flags.c_contiguous and first.size > _BLOCK):
        return False
    return all(a.__class__ is np.ndarray and a.shape == first.shape and a.flags.c_contiguous for a in others)


def _block_dest(shape, dtype):
    """Where a blocked kernel writes: the offered out= array when it is C-contiguous, else a new array."""
    dest = _od.take(shape, dtype, contiguous=True) if _od.offered() else None
    return np.empty(shape, dtype) if dest is None else dest


def _in_blocks(dest, passes, *arrays) -> bool:
    """``passes(dest_piece, *array_pieces)`` over cache-sized pieces of C-contiguous NumPy ``arrays`` of ``dest``'s
    shape (parallel.for_blocks: split over the intra-op threads), so a multi-pass kernel reads and writes memory
    about once; False (nothing done) when the layouts do not allow it or the arrays are too small to pay."""
    if not (dest.__class__ is np.ndarray and dest.flags.c_contiguous and dest.size > _BLOCK):
        return False
    for a in arrays:
        if not (a.__class__ is np.ndarray and a.shape == dest.shape and a.flags.c_contiguous
                and _blockable(a, dest)):
            return False
    d_flat, flats = dest.reshape(-1), [a.reshape(-1) for a in arrays]
    P.for_blocks(dest.size, _BLOCK, lambda s, e: passes(d_flat[s:e], *[f[s:e] for f in flats]))
    return True


def _sigmoid_block(dest, src):
    """sigmoid of a 1-d block into ``dest``: ``sigmoid_into`` with this thread's scratch arrays."""
    if src.dtype in HALF_TYPES:
        src = src.astype(np.float32)
    if src.itemsize not in _SIGN_BIT:
        _sigmoid_float(src, dest)
        return
    n = src.size
    r = dest if dest.dtype == src.dtype else P.scratch("sigmoid.r", n, src.dtype)
    sigmoid_into(src, r, P.scratch("sigmoid.e", n, src.dtype), P.scratch("sigmoid.mask", n, np.bool_))
    if r is not dest:
        dest[...] = r


def sigmoid_into(x, out, e, mask):
    """``_sigmoid_float``'s arithmetic for float32/float64 ``x`` (NumPy or CuPy) written into ``out``, with ``e``
    (x's shape, C-contiguous) and a boolean ``mask`` as scratch: -|x| set by one OR of the sign bit (the bits
    abs-then-negative gives, NaNs included). Returns ``out``."""
    xp = namespace_of(x)
    bits, sign = _SIGN_BIT[x.dtype.itemsize]
    xp.bitwise_or(x.view(bits), sign, out=e.view(bits))
    xp.exp(e, out=e)
    xp.maximum(e, xp.greater_equal(x, 0, out=mask), out=out)
    return xp.divide(out, xp.add(e, 1, out=e), out=out)


def _sigmoid_float(src, dest):
    """sigmoid's float arithmetic on NumPy arrays (16-bit floats in float32, rounded once into ``dest``)."""
    if src.dtype in HALF_TYPES:
        src = src.astype(np.float32)
    r = dest if dest.dtype == src.dtype else np.empty(src.shape, src.dtype)
    e = np.empty(src.shape, src.dtype)
    np.abs(src, out=e)
    np.negative(e, out=e)
    np.exp(e, out=e)
    np.maximum(e, src >= 0, out=r)
    np.divide(r, np.add(e, 1, out=e), out=r)
    if r is not dest:
        dest[...] = r


def rsqrt(a, out=None):
    xp = namespace_of(a)
    if xp is np and a.dtype.kind == "f" and (out is None or out.dtype == a.dtype and out.shape == a.shape):
        dest = out if out is not None else (_od.take(a.shape, a.dtype) if _od.offered() else None)
        dest = np.empty(a.shape, a.dtype) if dest is None else dest
        # 1 / sqrt per cache-sized piece; the division by the number 1 is reciprocal's correctly rounded quotient
        # (the same bits, NaN payloads too) in NumPy's vectorised division loop, ~2x faster than its reciprocal loop
        if _in_blocks(dest, lambda d, s: np.divide(1, np.sqrt(s, out=d), out=d), a):
            return dest
        r = P.unary(np.sqrt, a, dest)
        return P.unary(np.reciprocal, r, r) if r.__class__ is np.ndarray else as_array(np.reciprocal(r))
    if xp is np and (out is None or out.dtype == a.dtype and out.shape == a.shape):
        r = P.unary(np.sqrt, a, out)    # into out or the offered out= array, split when large
        return P.unary(np.reciprocal, r, r) if r.__class__ is np.ndarray else as_array(np.reciprocal(r))
    r = xp.reciprocal(xp.sqrt(a))
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


# torch's CPU pow by a number computes these exponents with multiplications and divisions (PowKernel.cpp), so
# its results are those roundings on every CPU; other exponents go to the library's pow, as NumPy's do.
_POWER_BY_PRODUCTS = {
    2.0: lambda d, s: np.multiply(s, s, out=d),                                    # x * x
    3.0: lambda d, s: np.multiply(np.multiply(s, s, out=d), s, out=d),             # (x * x) * x
    -2.0: lambda d, s: np.divide(1, np.multiply(s, s, out=d), out=d),              # 1 / (x * x)
    -0.5: lambda d, s: np.divide(1, np.sqrt(s, out=d), out=d),                     # 1 / sqrt(x)
}


_BFLOAT16 = np.dtype(ml_dtypes.bfloat16)


def pow_is_products(dtype, exponent) -> bool:
    """Whether torch computes ``pow`` of a ``dtype`` tensor by the number ``exponent`` with ``_POWER_BY_PRODUCTS``
    (float16 widens to float32 pow instead; bfloat16 rounds each product, but its 1 / sqrt is not that one)."""
    if dtype in _F32_F64:
        return exponent in _POWER_BY_PRODUCTS
    return dtype == _BFLOAT16 and exponent in (3.0, -2.0)


def power_by_products(a, exponent: float):
    """torch's ``pow(a, exponent)`` where ``pow_is_products``: each product rounded in ``a``'s dtype, as torch's
    kernel rounds it (into the offered out= array, per cache-sized block)."""
    passes = _POWER_BY_PRODUCTS[exponent]
    xp = namespace_of(a)
    if xp is not np:    # CuPy: one kernel per product, so each is rounded as on the host
        if exponent == 2.0:
            return a * a
        if exponent == 3.0:
            return (a * a) * a
        return 1 / (a * a) if exponent == -2.0 else 1 / xp.sqrt(a)
    dest = _block_dest(a.shape, a.dtype)
    if np.may_share_memory(a, dest):
        a = a.copy()    # the first pass writes dest before the second reads the base again
    if dest.size and not _in_blocks(dest, passes, a):
        passes(dest, a)
    return dest


def sign(a, out=None):
    """torch.sign: -1, 0 or 1 in the input dtype; sign(nan) and sign(-0.0) are 0 (sgn of complex: z / |z|)."""
    if a.dtype.kind == "c":
        return KX.sgn(a, out)
    if out is None and a.__class__ is np.ndarray and a.dtype in _F32_F64 and _blocks_fit(a):
        # the same comparisons, their 0 / 1 written as floats, and the difference, per cache-sized block
        dest = _block_dest(a.shape, a.dtype)
        if _in_blocks(dest, _sign_block, a):
            return dest
    if a.dtype == np.bool_:
        r = a.copy()
    elif a.dtype.kind == "u":
        r = (a > 0).astype(a.dtype)
    else:
        r = (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


def _sign_block(d, x):
    positive = np.greater(x, 0, out=P.scratch("sign.positive", x.shape[0], x.dtype))
    np.subtract(positive, np.less(x, 0, out=d), out=d)


def reciprocal(a, out=None):
    xp = namespace_of(a)
    if xp is np and a.dtype in _F32_F64:
        # the number 1 divided by a: reciprocal's correctly rounded quotient (the same bits, NaN payloads too) in
        # NumPy's vectorised division loop, ~2x faster than its reciprocal loop
        return as_array(P.binary(np.divide, 1, a, out))
    if xp is np:
        return as_array(P.unary(np.reciprocal, a, out))
    return as_array(xp.reciprocal(a, out=out))


def round_half_even(a, out=None):
    """Round to the nearest integer, ties to even (integral arrays are copied)."""
    xp = namespace_of(a)
    if is_integral(a.dtype):
        r = a.copy()
        if out is not None:
            out[...] = r
            return out
        return r
    return as_array(xp.rint(a, out=out))


def round_decimals(a, decimals, out=None):
    """torch's round(decimals=d): nearbyint(x * 10**d) / 10**d, computed in float32 for 16-bit floats."""
    xp = namespace_of(a)
    work = compute_dtype(a.dtype)
    x = a.astype(work, copy=False)
    scale = work.type(10.0 ** abs(decimals))
    r = xp.rint(x / scale) * scale if decimals < 0 else xp.rint(x * scale) / scale
    r = r.astype(a.dtype, copy=False)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


def lerp(start, end, weight, out=None):
    """torch's lerp: two formulas so that weight 0 and 1 hit the ends exactly."""
    xp = namespace_of(start)
    w = weight
    if xp is np and out is None and isinstance(w, (int, float)):
        r = lerp_blocks(start, end, w)
        if r is not None:
            return r
    if xp is np and out is None and isinstance(w, (int, float)) and start.__class__ is np.ndarray:
        # end - start into the offered out= array (when it has the result's shape), then the rest in place on it,
        # each pass over the intra-op threads: the same ufuncs, operand order and weak number as the expressions
        diff = P.binary(np.subtract, end, start)
        if diff.__class__ is np.ndarray and diff.dtype == start.dtype and diff.shape == np.broadcast_shapes(
                start.shape, diff.shape):
            if abs(w) < 0.5:
                return P.binary(np.add, start, P.binary(np.multiply, w, diff, diff), diff)
            return P.binary(np.subtract, end, P.binary(np.multiply, diff, 1 - w, diff), diff)
    else:
        diff = end - start
    if isinstance(w, (int, float)):
        r = (start + w * diff) if abs(w) < 0.5 else (end - diff * (1 - w))
    else:
        r = xp.where(xp.abs(w) < 0.5, start + w * diff, end - diff * (1 - w))
    r = r.astype(start.dtype, copy=False)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


def clamp(a, lo, hi, out=None, into=None):
    """min(max(a, lo), hi), keeping ``a`` where it equals a bound (relu(-0.0) is -0.0), as torch's kernels do; NaN in
    ``a`` or in a bound propagates. ``into`` (only ``a`` itself: the in-place op) is where large arrays with number
    bounds are computed; others come back in a new array."""
    xp = namespace_of(a)
    mx, mn = _keeping_second(a.dtype)
    if lo is None and hi is None:
        r = a.copy()
    elif xp is np and out is None and _blocks_fit(a) and _number_of(lo, a.dtype) and _number_of(hi, a.dtype):
        # bounds that are numbers of a's dtype: max and/or min per cache-sized piece, into the offered out= array;
        # each bound a block-sized array (NumPy's array-with-number loop is ~5x slower, its values the same)
        dest = _block_dest(a.shape, a.dtype) if into is None else into
        lo_block = None if lo is None else np.full(_BLOCK, lo, a.dtype)
        hi_block = None if hi is None else np.full(_BLOCK, hi, a.dtype)

        def passes(d, s):
            if lo_block is not None:
                s = mx(lo_block[:s.size], s, d)
            if hi_block is not None:
                mn(hi_block[:s.size], s, d)
        if not _in_blocks(dest, passes, a):
            r = a if lo is None else mx(lo, a, dest)
            if hi is not None:
                mn(hi, r, dest)
        return dest
    elif xp is np and out is None:
        # into the offered out= array (or a new one), split when large; the second bound applied in place
        r = mx(lo, a, None, P.binary) if lo is not None else mn(hi, a, None, P.binary)
        if lo is not None and hi is not None:
            in_place = r.__class__ is np.ndarray and getattr(hi, "dtype", None) == r.dtype and \
                np.broadcast_shapes(r.shape, np.shape(hi)) == r.shape
            r = mn(hi, r, r if in_place else None, P.binary if in_place else _ufunc_call)
        return as_array(r)
    elif hi is None:
        r = mx(lo, a, None, _ufunc_call)
    elif lo is None:
        r = mn(hi, a, None, _ufunc_call)
    else:
        r = mn(hi, mx(lo, a, None, _ufunc_call), None, _ufunc_call)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


def _ufunc_call(ufunc, x, y, out=None):
    return ufunc(x, y) if out is None else ufunc(x, y, out=out)


def _keeping_second(dtype):
    """(mx, mn): ``mx(bound, x, out, call=_ufunc_call)`` the maximum of a bound and ``x`` that is ``x`` where the two
    are equal (so -0.0 stays -0.0 against a bound 0.0), ``mn`` the minimum alike. Which operand NumPy's maximum and
    minimum return between equal values depends on the dtype's loop: the second for float32, float64 and bfloat16
    (as the x86 max/min instructions do), the first for float16 and longdouble; CuPy arrays take the same order."""
    return _X_FIRST if dtype in _FIRST_ON_TIES else _X_SECOND


def _bound_op(name, x_first):
    """``op(bound, x, out, call=_ufunc_call)``: NumPy's (or x's namespace's) ufunc ``name`` of a bound and ``x``,
    ``x`` as its first operand or its second."""
    def op(bound, x, out, call=_ufunc_call):
        ufunc = getattr(np if x.__class__ is np.ndarray else namespace_of(x), name)
        return call(ufunc, x, bound, out) if x_first else call(ufunc, bound, x, out)
    return op


_X_SECOND = (_bound_op("maximum", False), _bound_op("minimum", False))
_X_FIRST = (_bound_op("maximum", True), _bound_op("minimum", True))
_FIRST_ON_TIES = (np.dtype(np.float16), np.dtype(np.longdouble))


def _number_of(bound, dtype) -> bool:
    """A clamp bound that is absent or a 0-d value of ``dtype``."""
    return bound is None or (np.ndim(bound) == 0 and getattr(bound, "dtype", None) == dtype)


def where(cond, a, b):
    """``np.where(cond, a, b)``. For a bool ``cond`` and NumPy arrays ``a`` and ``b`` of its shape and one
    1/2/4/8-byte dtype, C-contiguous and large, the same bits come from a branch-free select on integer views, per
    cache-sized piece into the offered out= array: b ^ ((a ^ b) & -cond). np.where branches per element (~10 ns
    each on a random mask)."""
    if cond.__class__ is np.ndarray and cond.dtype == np.bool_ and a.__class__ is np.ndarray and \
            b.__class__ is np.ndarray and a.dtype == b.dtype and a.dtype.itemsize in _INT_OF_SIZE and \
            a.dtype.kind != "O" and _blocks_fit(cond, a, b):
        dest = _block_dest(a.shape, a.dtype)
        if _in_blocks(dest, select_into, cond, a, b):
            return dest
    return np.where(cond, a, b)


def select_into(d, c, x, y):
    """``d[...] = np.where(c, x, y)`` for 1-d blocks of one 1/2/4/8-byte dtype (``c`` bool; ``d`` may be ``x`` but
    not ``y``), branch-free on integer views: y ^ ((x ^ y) & -c)."""
    bits = _INT_OF_SIZE[d.dtype.itemsize]
    d, y = d.view(bits), y.view(bits)
    mask = np.negative(c.view(np.int8), out=P.scratch("where.mask", c.size, bits))   # 0 or all ones
    np.bitwise_xor(x.view(bits), y, out=d)
    np.bitwise_and(d, mask, out=d)
    np.bitwise_xor(d, y, out=d)


_INT_OF_SIZE = {n: np.dtype(f"i{n}") for n in (1, 2, 4, 8)}


# The blocked kernels below compute each piece's intermediate in the destination piece itself, or, when the
# destination is one of the inputs (an in-place op passes ``into=`` its own array), in a per-thread scratch array,
# writing the destination piece last: the functional op's ufuncs and operand order either way, so the same bits.
# (The scratch array costs a fifth block in cache, ~15% on addcmul: only in-place calls take it.)

def _temp_for(into):
    """``temp(d)``: where a piece's intermediate goes: ``d`` itself, or scratch when writing ``into`` an input."""
    return _in_scratch if into is not None else _itself


def _in_scratch(d):
    return P.scratch("elementwise.temp", d.shape[0], d.dtype)


def _itself(d):
    return d


def lerp_blocks(start, end, w, into=None):
    """``lerp`` by the number ``w`` for NumPy arrays of one float dtype and shape, per cache-sized piece into
    ``into`` (start's own array for lerp_) or the offered out= array: end - start, then the formula for ``w``'s
    side of 0.5; None when the arrays do not fit the blocks."""
    if not (start.__class__ is np.ndarray and start.dtype in _F32_F64 and end.__class__ is np.ndarray
            and end.dtype == start.dtype and _blocks_fit(start, end)):
        return None
    dest = _block_dest(start.shape, start.dtype) if into is None else into
    temp = _temp_for(into)
    if abs(w) < 0.5:
        def passes(d, s, e):
            t = np.subtract(e, s, out=temp(d))
            np.add(s, np.multiply(w, t, out=t), out=d)
    else:
        def passes(d, s, e):
            t = np.subtract(e, s, out=temp(d))
            np.subtract(e, np.multiply(t, 1 - w, out=t), out=d)
    return dest if _in_blocks(dest, passes, start, end) else None


def scaled_sum(a, b, scale, into=None):
    """``a + b * scale`` for NumPy arrays of one float dtype and shape (add/sub with alpha), per cache-sized piece
    into ``into`` (a's own array for add_/sub_) or the offered out= array: the same ufuncs and operand order as the
    two whole-array passes; None when the arrays do not fit the blocks."""
    if not (a.__class__ is np.ndarray and a.dtype in _F32_F64 and b.__class__ is np.ndarray
            and b.dtype == a.dtype and _blocks_fit(a, b)):
        return None
    dest = _block_dest(a.shape, a.dtype) if into is None else into
    temp = _temp_for(into)

    def passes(d, x, y):
        np.add(x, np.multiply(y, scale, out=temp(d)), out=d)
    return dest if _in_blocks(dest, passes, a, b) else None


def addc(a, b, c, value, divide, into=None):
    """``a + value * (b * c)`` (or ``b / c``) for NumPy arrays of one float dtype and shape (addcmul, addcdiv), per
    cache-sized piece into ``into`` (a's own array for the in-place ops) or the offered out= array: the product, the
    scaling (skipped for 1) and the sum, the same ufuncs and operand order as three whole-array passes; None when
    the arrays do not fit the blocks."""
    if not (a.__class__ is np.ndarray and a.dtype in _F32_F64 and b.__class__ is np.ndarray
            and c.__class__ is np.ndarray and b.dtype == c.dtype == a.dtype and _blocks_fit(a, b, c)):
        return None
    dest = _block_dest(a.shape, a.dtype) if into is None else into
    product = np.true_divide if divide else np.multiply
    temp = _temp_for(into)

    def passes(d, x, y, z):
        t = product(y, z, out=temp(d))
        if value != 1:
            np.multiply(t, value, out=t)
        np.add(x, t, out=d)
    return dest if _in_blocks(dest, passes, a, b, c) else None


def nan_to_num(a, nan=None, posinf=None, neginf=None, out=None):
    xp = namespace_of(a)
    if is_integral(a.dtype):
        if out is not None:
            out[...] = a
            return out
        return a.copy()
    fi = ml_dtypes.finfo(a.dtype)
    # the masks come from the input: a replacement that overflows to inf stays inf
    r = xp.where(xp.isnan(a), 0.0 if nan is None else nan, a).astype(a.dtype, copy=False)
    r = xp.where(xp.isposinf(a), fi.max if posinf is None else posinf, r).astype(a.dtype, copy=False)
    r = xp.where(xp.isneginf(a), fi.min if neginf is None else neginf, r)
    r = r.astype(a.dtype, copy=False)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


# --- erf: W. J. Cody's rational Chebyshev approximations (netlib specfun) ----------
_ERF_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
          3.20937758913846947e03, 1.85777706184603153e-1)
_ERF_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
          2.84423683343917062e03)
_ERF_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
          2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
          2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_ERF_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
          1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
          3.43936767414372164e03, 1.23033935480374942e03)
_ERF_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
          1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_ERF_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
          6.05183413124413191e-2, 2.33520497626869185e-3)
_SQRPI = 5.6418958354775628695e-1


def _exp_neg_square(xp, y):
    """exp(-y*y) with y*y split in two so the exponent stays exact (Cody's trick)."""
    head = xp.trunc(y * 16.0) / 16.0
    delta = (y - head) * (y + head)
    return xp.exp(-head * head) * xp.exp(-delta)


# erf for 32-bit and smaller floats: x * P(x^2) / Q(x^2) on [-4, 4] (the rational fit Eigen uses for
# float), within a few float32 ulps, in float32 arithmetic: ~4x fewer passes than the float64 path.
_ERF32_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
            -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF32_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
            -1.42647390514189e-02)


_ERF32_P_F32 = [np.float32(c) for c in _ERF32_P]
_ERF32_Q_F32 = [np.float32(c) for c in _ERF32_Q]
_ERF32_LIMIT = (np.float32(-4.0), np.float32(4.0))


def _erf_into(y, work):
    """erf(y) into float32 NumPy ``y`` with three work arrays of its shape: the rational fit step by step in place
    (NaN kept)."""
    nan = np.isnan(y)
    kept = y[nan] if nan.any() else None
    _erf_fit_into(y, work)
    if kept is not None:
        y[nan] = kept


def _erf_fit_into(y, work):
    """The rational fit of ``_erf_into`` without the NaN step. NumPy ufuncs with out=, so CuPy arrays take the
    same steps."""
    mul, add = np.multiply, np.add
    x2, p, q = work
    np.clip(y, *_ERF32_LIMIT, out=y)
    mul(y, y, out=x2)
    for acc, coef in ((p, _ERF32_P_F32), (q, _ERF32_Q_F32)):
        mul(x2, coef[0], out=acc)
        add(acc, coef[1], out=acc)
        for c in coef[2:]:
            mul(acc, x2, out=acc)
            add(acc, c, out=acc)
    mul(p, y, out=p)
    np.divide(p, q, out=y)


def _erf_float32(xp, a):
    """erf of ``a`` as a new float32 array: ``_erf_into`` per cache-sized block over the intra-op threads (NumPy,
    C-contiguous), else over the whole array."""
    y = a.astype(np.float32)
    if xp is np and y.flags.c_contiguous and y.size > _BLOCK:
        flat = y.reshape(-1)

        def piece(s, e):
            m = e - s
            work = P.scratch("erf.work", 3 * _BLOCK, np.float32)
            _erf_into(flat[s:e], (work[:m], work[_BLOCK:_BLOCK + m], work[2 * _BLOCK:2 * _BLOCK + m]))
        P.for_blocks(y.size, _BLOCK, piece)
    elif xp is np:
        _erf_into(y, [np.empty_like(y) for _ in range(3)])
    else:   # CuPy: NaN kept by a select on the device (asking whether there is any would read back to the host)
        saved = y.copy()
        _erf_fit_into(y, [xp.empty_like(y) for _ in range(3)])
        y = xp.where(xp.isnan(saved), saved, y)
    return y


def erf(a, out=None):
    """The error function: float64 inputs to float64 rounding (Cody), narrower floats through float32."""
    xp = namespace_of(a)
    if a.dtype != np.float64 and (a.dtype.kind == "f" or a.dtype in HALF_TYPES):
        r = _erf_float32(xp, a).astype(a.dtype, copy=False)
        if out is not None:
            out[...] = r
            return out
        return as_array(r)
    x = a.astype(np.float64)
    y = xp.abs(x)
    # |x| <= 0.46875: erf directly
    ysq = xp.where(y > 1.11e-16, y * y, 0.0)
    num = _ERF_A[4] * ysq
    den = ysq
    for i in range(3):
        num = (num + _ERF_A[i]) * ysq
        den = (den + _ERF_B[i]) * ysq
    small = x * (num + _ERF_A[3]) / (den + _ERF_B[3])
    # 0.46875 < |x| <= 4: erfc by the second rational function
    num = _ERF_C[8] * y
    den = y
    for i in range(7):
        num = (num + _ERF_C[i]) * y
        den = (den + _ERF_D[i]) * y
    mid = (num + _ERF_C[7]) / (den + _ERF_D[7])
    # |x| > 4: erfc by the asymptotic rational function in 1/x^2
    with np.errstate(all="ignore"):
        inv = 1.0 / (y * y)
        num = _ERF_P[5] * inv
        den = inv
        for i in range(4):
            num = (num + _ERF_P[i]) * inv
            den = (den + _ERF_Q[i]) * inv
        big = (_SQRPI - inv * (num + _ERF_P[4]) / (den + _ERF_Q[4])) / y
    with np.errstate(all="ignore"):
        tail = xp.where(y <= 4.0, mid, big) * _exp_neg_square(xp, y)
    tail = xp.where(y >= 26.543, 0.0, tail)
    large = xp.where(x < 0, -((0.5 - tail) + 0.5), (0.5 - tail) + 0.5)
    r = xp.where(y <= 0.46875, small, large)
    r = xp.where(xp.isnan(x), x, r)
    r = r.astype(a.dtype if a.dtype.kind == "f" or a.dtype in HALF_TYPES else np.float64, copy=False)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)
