"""Counter-based random numbers (Philox4x64-10), identical on every array module.

A draw is a function of (key, counter): raw 64-bit word ``j`` of a draw that
starts at counter block ``c`` is word ``j % 4`` of ``philox(c + 1 + j // 4, key)``,
exactly the stream NumPy's C ``Philox`` bit generator produces after its
counter is set to ``c``. On the host NumPy's C generator makes the words (in
parallel chunks for large draws: any block can be computed on its own); on a
GPU a CuPy kernel evaluates the same formula per element.

Every distribution turns the words into values with a fixed consumption:

- uniform, integer, permutation and Bernoulli draws use exact integer
  arithmetic or exactly rounded IEEE operations: bitwise equal everywhere;
- normal and exponential draws go through float64 ``log``/``sqrt``/``sin``/``cos``,
  rounded once to the output dtype: equal up to the few ulps in which the math
  libraries differ (docs/random.md gives the measured bound).

Each distribution returns ``(array, blocks)``: ``blocks`` is how many counter
blocks the draw used, by which the caller advances the generator's offset.
The ``*_from_raw`` functions are the device formulas over raw words; the host
path must agree with them bit for bit (the tests check it).
"""
from __future__ import annotations

import math
import threading

import numpy as np

from . import parallel
from . import random_box_muller
from .array_api import BFLOAT16

_U64 = np.uint64
_MASK32 = np.uint64(0xFFFFFFFF)
_MASK64 = 0xFFFFFFFFFFFFFFFF
_WORDS_PER_BLOCK = 4
_TWO_PI = 2.0 * math.pi
_MANTISSA_BITS = {np.dtype(np.float16): 11, BFLOAT16: 8}


def _blocks(n_words: int) -> int:
    return -(-n_words // _WORDS_PER_BLOCK)


def _size(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# --- the raw stream on the host -------------------------------------------------------------------

class _HostGenerators(threading.local):
    """One NumPy Philox per thread, repositioned for each draw (building one costs ~20 us)."""

    def __init__(self):
        self.bit_generator = np.random.Philox(key=np.zeros(2, dtype=np.uint64))
        self.generator = np.random.Generator(self.bit_generator)
        self.key = np.zeros(2, dtype=np.uint64)
        self.counter = np.zeros(4, dtype=np.uint64)
        self.state = {"bit_generator": "Philox", "state": {"counter": self.counter, "key": self.key},
                      "buffer": np.zeros(4, dtype=np.uint64), "buffer_pos": 4, "has_uint32": 0, "uinteger": 0}


_host = _HostGenerators()


def _host_generator(key: int, counter: int) -> np.random.Generator:
    """This thread's NumPy generator, positioned at counter block ``counter`` of stream ``key``."""
    h = _host
    h.key[0] = key & _MASK64
    h.counter[0] = counter & _MASK64
    h.bit_generator.state = h.state
    return h.generator


# Large draws run on the framework's intra-op threads (``kernels.parallel``), in pieces that start on a
# counter block; each thread works through its piece in cache-sized chunks (NumPy's generators and
# ufuncs release the GIL, so the pieces run at the same time).
_CHUNK = 1 << 18


def _chunked(n: int, per_block: int, work) -> None:
    """Run ``work(start, stop, block)`` over [0, n) in chunks aligned to counter blocks.

    ``per_block`` is how many values one counter block feeds; chunk ``start`` values
    begin at block ``start // per_block``, so the chunks together give exactly the
    values of one sequential draw.
    """
    step = _CHUNK - _CHUNK % per_block

    def piece(start, stop):
        for s in range(start, stop, step):
            work(s, min(s + step, stop), s // per_block)
    parallel.for_ranges(n, per_block, piece)


# Within a chunk, a thread draws and transforms in pieces of this many words, reading the generator on from
# piece to piece: the temporaries stay in the core's cache and below the allocator's mmap threshold (a fresh
# 2 MB temporary per chunk costs a page fault every 4 kB)
_PIECE = 1 << 15


def _pieces(s: int, e: int):
    return [(p, min(p + _PIECE, e)) for p in range(s, e, _PIECE)]


def _host_out(out, n: int, dtype):
    """The flat array a host draw writes: a new one, or the caller's C-contiguous ``out`` seen flat."""
    if out is None:
        return np.empty(n, dtype=dtype)
    if not (out.flags.c_contiguous and out.size == n and out.dtype == dtype):
        raise ValueError("a draw's out= must be a C-contiguous array of its size and dtype")
    return out.reshape(-1)


def raw_uint64(xp, key: int, counter: int, n: int):
    """``n`` raw 64-bit words of the stream starting at ``counter`` (uint64 array)."""
    if xp is np:
        out = np.empty(n, dtype=np.uint64)

        def work(s, e, b):
            bits = _host_generator(key, counter + b).bit_generator
            for p, q in _pieces(s, e):
                out[p:q] = bits.random_raw(q - p)
        _chunked(n, _WORDS_PER_BLOCK, work)
        return out
    from .random_cuda import philox_raw
    return philox_raw(key, counter, n)


# --- the specification, in NumPy (checked against NumPy's C generator in the tests) -----------------

def philox4x64_reference(key: int, counters: np.ndarray, carries=None) -> np.ndarray:
    """Philox4x64-10 of each counter with key (key, 0): shape (n, 4).

    ``counters`` are the low counter words; ``carries`` (0 or 1 each, default 0) the second word, which
    is 1 where the low word wrapped. Pure NumPy, element-parallel: the formula the GPU kernel evaluates.
    """
    m0, m1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157
    w0, w1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
    c0 = counters.astype(np.uint64)
    c1 = np.zeros_like(c0) if carries is None else np.asarray(carries, dtype=np.uint64)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = key & _MASK64, 0

    def mulhilo(a: int, b: np.ndarray):
        a_lo, a_hi = np.uint64(a & 0xFFFFFFFF), np.uint64(a >> 32)
        b_lo, b_hi = b & _MASK32, b >> np.uint64(32)
        lo_lo = a_lo * b_lo
        hi_lo = a_hi * b_lo
        lo_hi = a_lo * b_hi
        hi_hi = a_hi * b_hi
        cross = (lo_lo >> np.uint64(32)) + (hi_lo & _MASK32) + lo_hi
        hi = hi_hi + (hi_lo >> np.uint64(32)) + (cross >> np.uint64(32))
        lo = (cross << np.uint64(32)) | (lo_lo & _MASK32)
        return hi, lo

    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                k0 = (k0 + w0) & _MASK64
                k1 = (k1 + w1) & _MASK64
            hi0, lo0 = mulhilo(m0, c0)
            hi1, lo1 = mulhilo(m1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
    return np.stack([c0, c1, c2, c3], axis=-1)


def raw_uint64_reference(key: int, counter: int, n: int) -> np.ndarray:
    """``raw_uint64`` in pure NumPy; block counters past 2^64 - 1 carry into the second word, as NumPy's do."""
    first = (counter & _MASK64) + 1
    base = np.uint64(first & _MASK64)
    with np.errstate(over="ignore"):
        blocks = np.arange(_blocks(n), dtype=np.uint64) + base
    carries = (blocks < base).astype(np.uint64) + np.uint64(first >> 64)
    return philox4x64_reference(key, blocks, carries).reshape(-1)[:n]


# --- device formulas: raw words -> values ------------------------------------------------------------

def unit_float64_from_raw(raw):
    """[0, 1) doubles with 53 random bits: NumPy's ``random()``."""
    return (raw >> _U64(11)).astype(np.float64) * (2.0 ** -53)


def unit_float32_from_raw(xp, raw, n):
    """[0, 1) floats with 24 random bits from 32-bit halves (low half first): NumPy's ``random(dtype=float32)``."""
    words = xp.stack([raw & _MASK32, raw >> _U64(32)], axis=-1).reshape(-1)[:n]
    return (words >> _U64(8)).astype(np.float32) * np.float32(2.0 ** -24)


def integers_from_raw(raw, low: int, span: int):
    """``low + word % span`` with wrap-around uint64 arithmetic, as int64 (span up to 2**64)."""
    r = raw if span >= 1 << 64 else raw % _U64(span)
    if low:
        r += _U64(low & _MASK64)   # raw words are a scratch array: update in place
    return r.view(np.int64)


def permutation_from_raw(xp, raw, n: int):
    """Sort random keys whose low bits are replaced by the position: keys are distinct, so any sort
    (NumPy's or CuPy's) gives the same permutation; the low bits of the sorted keys are it."""
    bits = max(1, (n - 1).bit_length())
    mask = _U64((1 << bits) - 1)
    keys = (raw & ~mask) | xp.arange(n, dtype=np.uint64)
    return xp.sort(keys) & mask


def box_muller(xp, u, out, mean, std):
    """Fill ``out`` with normal values from pairs of [0, 1) doubles ``u``: (r cos t, r sin t).

    Computed in float64 and rounded once into ``out``'s dtype; ``u`` holds at
    least ``2 * ceil(len(out) / 2)`` values.
    """
    n = out.shape[0]
    radius = xp.subtract(1.0, u[0::2])       # (0, 1]: the log is finite
    xp.log(radius, out=radius)
    radius *= -2.0
    xp.sqrt(radius, out=radius)
    theta = xp.multiply(u[1::2], _TWO_PI)
    first = xp.cos(theta)
    second = xp.sin(theta, out=theta)
    first *= radius
    second *= radius
    if mean != 0.0 or std != 1.0:
        first *= std
        first += mean
        second *= std
        second += mean
    out[0::2] = first[:(n + 1) // 2]
    out[1::2] = second[:n // 2]
    return out


def exponential_from_unit(xp, u, lambd):
    return -xp.log1p(-u) / lambd


def _round_to_half(xp, u32, dtype):
    """A [0, 1) float32 with 24 random bits cut to the mantissa of float16 / bfloat16 (exactly representable)."""
    bits = _MANTISSA_BITS[dtype]
    return xp.floor(u32 * np.float32(2 ** bits)) * np.float32(2.0 ** -bits)


def _scale(u, low, high):
    """``u * (high - low) + low`` in u's precision (two rounded IEEE operations on every device)."""
    if low == 0.0 and high == 1.0:
        return u
    work = u.dtype.type
    u *= work(high - low)
    u += work(low)
    return u


# --- distributions -------------------------------------------------------------------------------------

def uniform(xp, key, counter, shape, dtype, low=0.0, high=1.0, out=None):
    """Uniform [low, high) values; the unit draw is exact (53, 24, 11 or 8 random mantissa bits).

    ``out`` (host only, like every ``out=`` below): a C-contiguous array of ``shape`` and ``dtype`` to draw
    straight into, instead of a new one."""
    dtype = np.dtype(dtype)
    n = _size(shape)
    double = dtype == np.float64
    blocks = _blocks(n if double else -(-n // 2))
    if xp is not np:
        raw = raw_uint64(xp, key, counter, n if double else -(-n // 2))
        u = unit_float64_from_raw(raw) if double else unit_float32_from_raw(xp, raw, n)
        if dtype in _MANTISSA_BITS:
            u = _round_to_half(xp, u, dtype)
        return _scale(u, low, high).astype(dtype, copy=False).reshape(shape), blocks
    out = _host_out(out, n, dtype)
    per_block = 4 if double else 8
    work_dtype = np.float64 if double else np.float32

    def work(s, e, b):
        g = _host_generator(key, counter + b)
        if dtype == work_dtype:
            seg = g.random(e - s, dtype=work_dtype, out=out[s:e])
        else:
            seg = g.random(e - s, dtype=work_dtype)
            if dtype in _MANTISSA_BITS:
                seg = _round_to_half(np, seg, dtype)
        seg = _scale(seg, low, high)
        if seg.dtype != dtype:
            out[s:e] = seg
    _chunked(n, per_block, work)
    return out.reshape(shape), blocks


def normal(xp, key, counter, shape, dtype, mean=0.0, std=1.0, out=None):
    """Box-Muller in float64 from pairs of uniform draws, rounded once to ``dtype``."""
    dtype = np.dtype(dtype)
    n = _size(shape)
    n_units = 2 * (-(-n // 2))
    blocks = _blocks(n_units)
    if xp is not np:
        u = unit_float64_from_raw(raw_uint64(xp, key, counter, n_units))
        return box_muller(xp, u, xp.empty(n, dtype=dtype), mean, std).reshape(shape), blocks
    out = _host_out(out, n, dtype)
    # float32: the same values from a vectorised cos / sin, the uniforms drawn block by block into cache-sized
    # scratch (random_box_muller.py); others: the formula itself
    fast = random_box_muller.usable(dtype, mean, std)

    def work(s, e, b):
        generator = _host_generator(key, counter + b)
        if fast and e - s >= 2 * random_box_muller.MIN_PAIRS:
            random_box_muller.fill_float32(generator, out[s:e], mean, std)
        else:
            box_muller(np, generator.random(2 * (-(-(e - s) // 2))), out[s:e], mean, std)
    _chunked(n, _WORDS_PER_BLOCK, work)
    return out.reshape(shape), blocks


def integers(xp, key, counter, shape, low, high, dtype, out=None):
    """Integers in [low, high): low + (word mod range), as torch's random_from_to (tiny modulo bias)."""
    n = _size(shape)
    low, span = int(low), int(high) - int(low)
    dtype = np.dtype(dtype)
    if xp is not np:
        return integers_from_raw(raw_uint64(xp, key, counter, n), low, span).astype(dtype).reshape(shape), _blocks(n)
    out = _host_out(out, n, dtype)
    direct = dtype == np.int64

    def work(s, e, b):
        bits = _host_generator(key, counter + b).bit_generator
        quotient = np.empty(min(_PIECE, e - s), dtype=np.uint64)
        for p, q in _pieces(s, e):
            raw = bits.random_raw(q - p)
            _integers_in_place(raw, low, span, quotient[:q - p], out[p:q].view(np.uint64) if direct else raw)
            if not direct:
                out[p:q] = raw.view(np.int64)
    _chunked(n, _WORDS_PER_BLOCK, work)
    return out.reshape(shape), _blocks(n)


def _integers_in_place(raw, low: int, span: int, quotient, target) -> None:
    """``integers_from_raw`` into ``target`` (uint64, may be ``raw``), without temporaries: ``word % span`` as
    ``word - (word // span) * span`` (NumPy divides by a scalar with SIMD, its ``%`` by a loop of divisions)."""
    if span >= 1 << 64:
        if target is not raw:
            np.copyto(target, raw)
    elif span & (span - 1) == 0:
        np.bitwise_and(raw, _U64(span - 1), out=target)
    else:
        np.floor_divide(raw, _U64(span), out=quotient)
        quotient *= _U64(span)
        np.subtract(raw, quotient, out=target)
    if low:
        target += _U64(low & _MASK64)


def bernoulli(xp, key, counter, p, shape, dtype, out=None):
    """1 where a float64 uniform draw is below p (p: number or array broadcastable to shape)."""
    n = _size(shape)
    dtype = np.dtype(dtype)
    if xp is not np:
        u = unit_float64_from_raw(raw_uint64(xp, key, counter, n)).reshape(shape)
        return (u < p).astype(dtype), _blocks(n)
    out = _host_out(out, n, dtype)
    if isinstance(p, np.ndarray) and p.ndim:
        p = np.broadcast_to(p, shape).reshape(-1)

    per_value = isinstance(p, np.ndarray) and p.ndim

    def work(s, e, b):
        g = _host_generator(key, counter + b)
        u = np.empty(min(_PIECE, e - s))
        for a, z in _pieces(s, e):
            out[a:z] = g.random(z - a, out=u[:z - a]) < (p[a:z] if per_value else p)
    _chunked(n, _WORDS_PER_BLOCK, work)
    return out.reshape(shape), _blocks(n)


def exponential(xp, key, counter, shape, dtype, lambd=1.0, out=None):
    """-log(1 - u) / lambd in float64 from [0, 1) doubles, rounded once to ``dtype``."""
    n = _size(shape)
    dtype = np.dtype(dtype)
    if xp is not np:
        u = unit_float64_from_raw(raw_uint64(xp, key, counter, n))
        return exponential_from_unit(xp, u, lambd).astype(dtype, copy=False).reshape(shape), _blocks(n)
    out = _host_out(out, n, dtype)

    def work(s, e, b):
        g = _host_generator(key, counter + b)
        u = np.empty(min(_PIECE, e - s))
        for a, z in _pieces(s, e):
            out[a:z] = exponential_from_unit(np, g.random(z - a, out=u[:z - a]), lambd)
    _chunked(n, _WORDS_PER_BLOCK, work)
    return out.reshape(shape), _blocks(n)


def permutation(xp, key, counter, n, dtype):
    """A random permutation of range(n)."""
    raw = raw_uint64(xp, key, counter, n)
    if xp is not np:
        return permutation_from_raw(xp, raw, n).astype(dtype, copy=False), _blocks(n)
    # permutation_from_raw in place, the sort split over the intra-op threads: each sorts its piece of the
    # keys, then a stable sort (a merge of the sorted runs) orders the whole; the keys are distinct, so the
    # result is the one sort's
    mask = _U64((1 << max(1, (n - 1).bit_length())) - 1)
    raw &= ~mask
    raw |= np.arange(n, dtype=np.uint64)
    runs = []

    def work(s, e):
        raw[s:e].sort()
        runs.append(s)
    parallel.for_ranges(n, 1, work)
    keys = np.sort(raw, kind="stable") if len(runs) > 1 else raw
    keys &= mask
    return keys.astype(dtype, copy=False), _blocks(n)


# --- distributions from one float64 uniform per value ---------------------------------------------------

def cauchy_from_unit(xp, u, median, sigma):
    """torch's transformation::cauchy: median + sigma * tan(pi * (u - 0.5))."""
    return median + sigma * xp.tan(math.pi * (u - 0.5))


def geometric_from_unit(xp, u, p):
    """The number of Bernoulli(p) trials up to the first success: ceil(log(1 - u) / log(1 - p)), at least 1
    (u in [0, p] gives 1, as the inverse CDF does; torch's formula uses log(u), the same law)."""
    return xp.maximum(xp.ceil(xp.log1p(-u) / math.log1p(-p)), 1.0)


def _cast(xp, v, dtype):
    """Round float64 values once to ``dtype``; integer dtypes saturate at their range (no wrap-around)."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        v = xp.clip(v, float(info.min), float(info.max))
    return v.astype(dtype, copy=False)


def _from_unit(xp, key, counter, shape, dtype, transform):
    """``transform(xp, u)`` of one float64 [0, 1) uniform per value (the ``exponential`` stream), rounded once."""
    n = _size(shape)
    dtype = np.dtype(dtype)
    if xp is not np:
        u = unit_float64_from_raw(raw_uint64(xp, key, counter, n))
        return _cast(xp, transform(xp, u), dtype).reshape(shape), _blocks(n)
    out = np.empty(n, dtype=dtype)

    def work(s, e, b):
        g = _host_generator(key, counter + b)
        u = np.empty(min(_PIECE, e - s))
        for a, z in _pieces(s, e):
            out[a:z] = _cast(np, transform(np, g.random(z - a, out=u[:z - a])), dtype)
    _chunked(n, _WORDS_PER_BLOCK, work)
    return out.reshape(shape), _blocks(n)


def cauchy(xp, key, counter, shape, dtype, median=0.0, sigma=1.0):
    return _from_unit(xp, key, counter, shape, dtype, lambda m, u: cauchy_from_unit(m, u, median, sigma))


def geometric(xp, key, counter, shape, dtype, p):
    return _from_unit(xp, key, counter, shape, dtype, lambda m, u: geometric_from_unit(m, u, p))


def log_normal(xp, key, counter, shape, dtype, mean=1.0, std=2.0):
    """exp(normal(mean, std)): the ``normal`` draw in float64, then exp, rounded once to ``dtype``."""
    z, blocks = normal(xp, key, counter, shape, np.float64, mean, std)
    return xp.exp(z).astype(np.dtype(dtype), copy=False), blocks
