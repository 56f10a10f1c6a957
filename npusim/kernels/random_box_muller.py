"""Box-Muller into float32 on the host, fast and bit for bit the values of ``random.box_muller``.

``box_muller`` rounds ``r cos t`` and ``r sin t`` (float64, then ``* std + mean``) once to float32; nearly
all of its time goes to NumPy's float64 ``cos`` and ``sin``, which call the C library one value at a time.
Here both come from a table and two short polynomials over whole arrays instead, accurate to about 2e-15
(the C library's to about 1e-16), and only the float32 results are kept:

- the angle ``t = 2 pi u`` is split exactly on ``u``: ``N u = k + f`` with ``k = round(N u)`` and ``f`` in
  ``[-1/2, 1/2]`` (``N = 2048``, a power of two, so both are exact); ``(cos, sin)(2 pi k / N)`` is a table entry
  (within 3e-16), ``(cos, sin)(2 pi f / N)`` are Taylor polynomials in ``f`` (the angle is at most ``pi / N``:
  the first terms left out are below 1e-16), and one complex multiplication rotates the one by the other;
- every value is computed twice more, from ``r cos t`` / ``r sin t`` moved down and up by ``2 R _BOUND``,
  ``R = 8.6`` above every radius there is (``_BOUND`` is at least 20 times the largest error of the
  approximate ``cos`` / ``sin``, reduction and roundings included): each step after it (``* std``, ``+ mean``,
  the rounding to float32) is monotone, so the library's value lies between the two; where both round to the
  same float32 (and it is not zero, whose sign the interval cannot tell), that float32 is the library's result;
- the rest (a value close to a float32 rounding boundary, or where ``cos`` / ``sin`` is close to zero: about
  four in 10^4) is computed as ``box_muller`` computes it, with the library's ``cos`` / ``sin``.

The work runs in blocks of ``_BLOCK`` pairs on per-thread scratch arrays, about 22 NumPy calls a block, none
of them broadcasting along the short (pairs, 2) axis; ``fill_float32`` also draws each block's uniforms from
the generator into the scratch, so a draw writes no array but its output. The result is the one ``box_muller``
gives, bit for bit.
"""
from __future__ import annotations

import math
import threading

import numpy as np

_BOUND = 1e-13        # >= 20x the bound on |approximate - C library| of cos / sin, 5e-15 (measured: 1.2e-15)
_TWO_PI = 2.0 * math.pi
_BLOCK = 32768        # pairs per pass: fewer NumPy calls per value (measured: 8192 pairs take 1.3x as long)
# every radius sqrt(-2 log(1 - u)) is below this: 1 - u >= 2**-53 gives at most sqrt(106 log 2) = 8.57
_RADIUS_LIMIT = 8.6
MIN_PAIRS = 4096      # below this the plain formula is cheaper than the extra passes

# The angle table: (cos, sin)(2 pi k / N) for k = 0..N, each from the library's cos / sin of an angle in
# [-pi/4, pi/4] (reduced exactly by quarter turns, then rotated: swaps and negations are exact)
_TABLE_BITS = 11
_N = 1 << _TABLE_BITS


def _turn_table(n: int) -> np.ndarray:
    k = np.arange(n + 1)
    quarter = (k + n // 8) // (n // 4)                # the nearest quarter turn
    angle = (k - quarter * (n // 4)) * (_TWO_PI / n)  # in [-pi/4, pi/4]; |error| <= 2e-16
    c, s = np.cos(angle), np.sin(angle)
    turns = quarter % 4
    cos_t = np.choose(turns, [c, -s, -c, s])
    sin_t = np.choose(turns, [s, c, -s, -c])
    return cos_t + 1j * sin_t


_TABLE = _turn_table(_N)
# cos(a f) ~ 1 + C2 f^2 + C4 f^4 and sin(a f) ~ f (S1 + S3 f^2) with a = 2 pi / N, |f| <= 1/2: the next terms,
# (a/2)^6 / 720 and (a/2)^5 / 120, are below 2e-20 and 7.1e-17
_A = _TWO_PI / _N
_C2, _C4 = -_A ** 2 / 2, _A ** 4 / 24
_S1, _S3 = _A, -_A ** 3 / 6


class _Scratch(threading.local):
    """Per-thread block arrays (a draw on the intra-op threads runs one block loop per thread)."""

    def __init__(self):
        b = _BLOCK
        self.u = np.empty(2 * b)
        self.radius = np.empty(b)
        self.turn = np.empty(b)
        self.square = np.empty(b)
        self.poly = np.empty(b)
        self.index = np.empty(b, dtype=np.intp)
        self.rotation = np.empty(b, dtype=np.complex128)
        self.values = np.empty(b, dtype=np.complex128)
        self.low = np.empty((b, 2))
        self.high32 = np.empty((b, 2), dtype=np.float32)
        self.tail = np.empty((b, 2), dtype=np.float32)
        self.unsure = np.empty((b, 2), dtype=bool)
        self.zero = np.empty((b, 2), dtype=bool)


_scratch = _Scratch()


def usable(dtype, mean, std) -> bool:
    """Whether ``box_muller_float32`` applies: float32 output and finite ``mean`` and ``std``."""
    return np.dtype(dtype) == np.float32 and math.isfinite(mean) and math.isfinite(std)


def box_muller_float32(u, out, mean, std):
    """``random.box_muller(np, u, out, mean, std)`` for a float32 ``out``, the same bits."""
    return _fill(lambda s, e, scratch: u[2 * s:2 * e], out, mean, std)


def fill_float32(generator, out, mean, std):
    """``box_muller_float32(generator.random(2 * ceil(len(out) / 2)), out, mean, std)``, the uniforms drawn
    block by block into the scratch (the same values: the generator's stream is consumed in order)."""
    def draw(s, e, scratch):
        return generator.random(2 * (e - s), out=scratch.u[:2 * (e - s)])
    return _fill(draw, out, mean, std)


def _fill(uniforms, out, mean, std):
    n = out.shape[0]
    if not out.flags.c_contiguous:                    # the blocks are written through (pairs, 2) views
        out[...] = _fill(uniforms, np.empty(n, np.float32), mean, std)
        return out
    pairs = (n + 1) // 2
    scratch = _scratch
    for s in range(0, pairs, _BLOCK):
        e = min(s + _BLOCK, pairs)
        u = uniforms(s, e, scratch)
        if 2 * e <= n:
            _block(u, out[2 * s:2 * e].reshape(e - s, 2), mean, std, scratch)
        else:                                         # the odd last value: its pair's second value is dropped
            target = scratch.tail[:e - s]
            _block(u, target, mean, std, scratch)
            out[2 * s:] = target.reshape(-1)[:n - 2 * s]
    return out


def cos_sin(u_angle, radius=None, scratch=None):
    """``radius`` (default 1) times (cos, sin) of ``t = fl(2 pi u)``, to about 2e-15 of ``radius``, as a (n, 2)
    float64 view of a complex array: row i is ``radius[i] * (cos t_i, sin t_i)``."""
    scratch = scratch if scratch is not None else _Scratch()
    n = u_angle.shape[0]
    if n > _BLOCK:
        return np.concatenate([cos_sin(u_angle[s:s + _BLOCK], None if radius is None else radius[s:s + _BLOCK],
                                       scratch).copy() for s in range(0, n, _BLOCK)])
    # N u = k + f exactly (N a power of two, k = round(N u)); t = 2 pi k / N + a f with a = 2 pi / N
    turn = np.multiply(u_angle, _N, out=scratch.turn[:n])
    nearest = np.rint(turn, out=scratch.square[:n])
    index = scratch.index[:n]
    np.copyto(index, nearest, casting="unsafe")
    f = np.subtract(turn, nearest, out=turn)
    square = np.multiply(f, f, out=scratch.square[:n])
    rotation = scratch.rotation[:n]
    parts = rotation.view(np.float64).reshape(n, 2)
    poly = scratch.poly[:n]
    # r cos(a f) = r + r f^2 (C2 + C4 f^2): error below 2e-16 r
    np.multiply(square, _C4, out=poly)
    poly += _C2
    poly *= square
    if radius is None:
        np.add(poly, 1.0, out=parts[:, 0])
    else:
        poly *= radius
        np.add(poly, radius, out=parts[:, 0])
        f *= radius
    # r sin(a f) = r f (S1 + S3 f^2): error below 1e-16 r
    np.multiply(square, _S3, out=poly)
    poly += _S1
    np.multiply(poly, f, out=parts[:, 1])
    values = np.take(_TABLE, index, out=scratch.values[:n], mode="clip")
    values *= rotation                                # (cos, sin)(2 pi k / N) rotated by a f, scaled by r
    return values.view(np.float64).reshape(n, 2)


def _block(u, target, mean, std, scratch):
    """One block of pairs into ``target`` ((pairs, 2) float32): values near a float32 rounding boundary go to
    ``_exact``."""
    pairs = target.shape[0]
    u_radius, u_angle = u[0::2], u[1::2]
    # the radius exactly as box_muller computes it (the same ufuncs on the same values)
    radius = np.subtract(1.0, u_radius, out=scratch.radius[:pairs])
    np.log(radius, out=radius)
    radius *= -2.0
    np.sqrt(radius, out=radius)
    values = cos_sin(u_angle, radius, scratch)        # the approximate r cos t, r sin t
    margin = 2.0 * _BOUND * _RADIUS_LIMIT             # at least 2 r _BOUND for every radius
    high32 = scratch.high32[:pairs]
    unsure = scratch.unsure[:pairs]
    if mean == 0.0 and std == 1.0:
        # low and high rounded straight into the output; they lie at least 2 * margin apart, so they never
        # both round to zero
        np.subtract(values, margin, out=target, casting="same_kind")
        np.add(values, margin, out=high32, casting="same_kind")
        np.not_equal(target.view(np.int32), high32.view(np.int32), out=unsure)
    else:
        low = np.subtract(values, margin, out=scratch.low[:pairs])
        high = np.add(values, margin, out=values)
        for v, v32 in ((low, target), (high, high32)):
            v *= std
            np.add(v, mean, out=v32, casting="same_kind")
        np.not_equal(target.view(np.int32), high32.view(np.int32), out=unsure)
        unsure |= np.equal(target, 0.0, out=scratch.zero[:pairs])
    listed = np.flatnonzero(unsure)                   # (a 2-d nonzero() costs 15x as much)
    if listed.size:
        _exact(u_angle, radius, target, listed, mean, std)


def _exact(u_angle, radius, target, listed, mean, std):
    """box_muller's own arithmetic for the listed values (flat indices into the (pairs, 2) layout)."""
    pairs = listed >> 1
    theta = np.multiply(u_angle[pairs], _TWO_PI)
    v = np.where(listed & 1, np.sin(theta), np.cos(theta))
    v *= radius[pairs]
    if mean != 0.0 or std != 1.0:
        v *= std
        v += mean
    target.reshape(-1)[listed] = v
