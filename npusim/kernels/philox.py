"""Counter-based random numbers (Philox4x64-10), identical on every array module.

A draw is a function of (key, counter): value ``j`` of a draw that starts at
counter block ``c`` is word ``j % 4`` of ``philox(c + 1 + j // 4, key)``,
exactly the stream NumPy's C ``Philox`` bit generator produces after its
counter is set to ``c``. On the host NumPy's C generator makes it; on a GPU a
CuPy kernel evaluates the same formula per element. Every distribution here
turns that stream into values with fixed consumption and exact integer
arithmetic (uniform, integer, permutation, Bernoulli: bitwise equal
everywhere), or with float64 transcendental math rounded once to the output
dtype (normal, exponential: equal up to the ulps where math libraries differ).

Each function returns ``(array, blocks)``: ``blocks`` is how many counter
blocks the draw used, by which the caller advances the generator's offset.
"""
from __future__ import annotations

import numpy as np

from .array_api import BFLOAT16

_U64 = np.uint64
_MASK32 = np.uint64(0xFFFFFFFF)


def _blocks(n_u64: int) -> int:
    return -(-n_u64 // 4)


# --- the raw stream -----------------------------------------------------------------------------

def _np_generator(key: int, counter: int) -> np.random.Generator:
    bg = np.random.Philox(key=np.array([key & 0xFFFFFFFFFFFFFFFF, 0], dtype=np.uint64),
                          counter=np.array([counter & 0xFFFFFFFFFFFFFFFF, 0, 0, 0], dtype=np.uint64))
    return np.random.Generator(bg)


def raw_uint64(xp, key: int, counter: int, n: int):
    """``n`` raw 64-bit words of the stream starting at ``counter`` (uint64 array)."""
    if xp is np:
        return _np_generator(key, counter).integers(0, 2 ** 64 - 1, size=n, endpoint=True, dtype=np.uint64)
    from .cupy_philox import philox_raw
    return philox_raw(key, counter, n)


def philox4x64_reference(key: int, counters: np.ndarray) -> np.ndarray:
    """Philox4x64-10 of each counter (low word only, other words 0) with key (key, 0): shape (n, 4).

    Pure NumPy, element-parallel: the specification the GPU kernel follows,
    checked in the tests against NumPy's C generator.
    """
    m0, m1 = 0xD2E7470EE14C6C93, 0xCA5A826395121157
    w0, w1 = 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B
    c0 = counters.astype(np.uint64)
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = key & 0xFFFFFFFFFFFFFFFF, 0

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
                k0 = (k0 + w0) & 0xFFFFFFFFFFFFFFFF
                k1 = (k1 + w1) & 0xFFFFFFFFFFFFFFFF
            hi0, lo0 = mulhilo(m0, c0)
            hi1, lo1 = mulhilo(m1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint64(k0), lo1, hi0 ^ c3 ^ np.uint64(k1), lo0
    return np.stack([c0, c1, c2, c3], axis=-1)


def raw_uint64_reference(key: int, counter: int, n: int) -> np.ndarray:
    blocks = np.arange(counter + 1, counter + 1 + _blocks(n), dtype=np.uint64)
    return philox4x64_reference(key, blocks).reshape(-1)[:n]


# --- distributions ----------------------------------------------------------------------------------

def _shape_size(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _uint32_words(raw, n):
    """The 32-bit words NumPy's next_uint32 hands out: low half of each word, then high half."""
    xp = np if raw.__class__ is np.ndarray else _xp_of(raw)
    words = xp.stack([raw & _MASK32, raw >> _U64(32)], axis=-1).reshape(-1)[:n]
    return words


def _xp_of(a):
    from .array_api import namespace_of
    return namespace_of(a)


def uniform(xp, key, counter, shape, dtype, low=0.0, high=1.0):
    """Uniform [low, high) values; the unit draw is exact (24, 53, 11 or 8 random mantissa bits)."""
    dtype = np.dtype(dtype)
    n = _shape_size(shape)
    if dtype == np.float64:
        if xp is np:
            u = _np_generator(key, counter).random(n)
        else:
            u = (raw_uint64(xp, key, counter, n) >> _U64(11)).astype(np.float64) * 2.0 ** -53
        blocks = _blocks(n)
    else:
        # 32-bit words, two per 64-bit word; the top 24 bits give an exact float32 in [0, 1).
        if xp is np:
            u = _np_generator(key, counter).random(n, dtype=np.float32)
        else:
            words = _uint32_words(raw_uint64(xp, key, counter, -(-n // 2)), n)
            u = (words >> _U64(8)).astype(np.float32) * np.float32(2.0 ** -24)
        blocks = _blocks(-(-n // 2))
        if dtype == np.float16:
            u = xp.floor(u * np.float32(2 ** 11)) * np.float32(2.0 ** -11)
        elif dtype == BFLOAT16:
            u = xp.floor(u * np.float32(2 ** 8)) * np.float32(2.0 ** -8)
    u = u.reshape(shape)
    if low != 0.0 or high != 1.0:
        work = np.float64 if dtype == np.float64 else np.float32
        u = u.astype(work, copy=False) * work(high - low) + work(low)
    return u.astype(dtype, copy=False), blocks


def normal(xp, key, counter, shape, dtype, mean=0.0, std=1.0):
    """Box-Muller in float64 from pairs of uniform draws, rounded once to ``dtype``."""
    n = _shape_size(shape)
    pairs = -(-n // 2)
    if xp is np:
        u = _np_generator(key, counter).random(2 * pairs)
    else:
        u = (raw_uint64(xp, key, counter, 2 * pairs) >> _U64(11)).astype(np.float64) * 2.0 ** -53
    u1 = 1.0 - u[0::2]          # (0, 1]: log is finite
    u2 = u[1::2]
    radius = xp.sqrt(-2.0 * xp.log(u1))
    theta = 2.0 * np.pi * u2
    z = xp.stack([radius * xp.cos(theta), radius * xp.sin(theta)], axis=-1).reshape(-1)[:n]
    if mean != 0.0 or std != 1.0:
        z = z * std + mean
    return z.reshape(shape).astype(dtype), _blocks(2 * pairs)


def integers(xp, key, counter, shape, low, high, dtype):
    """Integers in [low, high): low + (word mod range), as torch's random_from_to (tiny modulo bias)."""
    n = _shape_size(shape)
    span = int(high) - int(low)
    raw = raw_uint64(xp, key, counter, n)
    r = (raw % _U64(span)).astype(np.int64) if span < 2 ** 63 else raw.view(np.int64)
    out = (r + np.int64(low)).reshape(shape).astype(dtype, copy=False)
    return out, _blocks(n)


def bernoulli(xp, key, counter, p, shape, dtype):
    """1 where a float64 uniform draw is below p (p: number or array broadcastable to shape)."""
    n = _shape_size(shape)
    if xp is np:
        u = _np_generator(key, counter).random(n)
    else:
        u = (raw_uint64(xp, key, counter, n) >> _U64(11)).astype(np.float64) * 2.0 ** -53
    return (u.reshape(shape) < p).astype(dtype), _blocks(n)


def exponential(xp, key, counter, shape, dtype, lambd=1.0):
    u, blocks = uniform(xp, key, counter, shape, np.float64)
    return (-xp.log1p(-u) / lambd).astype(dtype), blocks


def permutation(xp, key, counter, n, dtype):
    """A random permutation: stable argsort of random 64-bit keys."""
    raw = raw_uint64(xp, key, counter, n)
    return xp.argsort(raw, kind="stable").astype(dtype, copy=False), _blocks(n)
