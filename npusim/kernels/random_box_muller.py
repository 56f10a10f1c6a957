"""Box-Muller into float32 on the host, fast and bit for bit the values of ``random.box_muller``.

``box_muller`` rounds ``r cos t`` and ``r sin t`` (float64, then ``* std + mean``) once to float32; nearly
all of its time goes to NumPy's float64 ``cos`` and ``sin``, which call the C library one value at a time.
Here both come from one short polynomial evaluation over whole arrays instead, accurate to a few 1e-15
(the C library's to about 1e-16), and only the float32 results are kept:

- the angle ``t = 2 pi u`` is reduced exactly on ``u``: ``t = q pi + 2h`` with ``q = round(2u)`` and
  ``h = (2u - q) pi / 2`` in ``[-pi/4, pi/4]``; ``sin h`` is its Taylor polynomial to degree 15, and
  ``cos 2h = 1 - 2 sin^2 h``, ``sin 2h = 2 sin h sqrt(1 - sin^2 h)``, times ``(-1)**q``;
- every value is computed twice more, from ``r cos t`` / ``r sin t`` moved down and up by ``2 r _BOUND``
  (``_BOUND`` is at least 20 times the largest error of the approximate ``cos`` / ``sin``, reduction and
  roundings included): each step after it (``* std``, ``+ mean``, the rounding to float32) is monotone, so
  the library's value lies between the two; where both round to the same float32 (and it is not zero, whose
  sign the interval cannot tell), that float32 is the library's result;
- the rest (a value close to a float32 rounding boundary, or where ``cos`` / ``sin`` is close to zero: about
  two in 10^5) is computed as ``box_muller`` computes it, with the library's ``cos`` / ``sin``.

So the result is the one ``box_muller`` gives, bit for bit, in under half its time.
"""
from __future__ import annotations

import math

import numpy as np

_BOUND = 1e-13        # >= 20x the bound on |approximate - C library| of cos / sin, 5e-15 (measured: 1.2e-15)
_HALF_PI = math.pi / 2
_TWO_PI = 2.0 * math.pi
_DEGREE = 7           # in z = h**2: sin to h**15 (the next term is below 4.6e-17 for |h| <= pi/4)
# Horner coefficients of sin(h) / h in z = h**2, highest power first
_SIN_COEFFICIENTS = [(-1) ** k / math.factorial(2 * k + 1) for k in range(_DEGREE, 0, -1)]
_BLOCK = 8192         # pairs per pass: the temporaries stay in the core's cache
MIN_PAIRS = 4096      # below this the plain formula is cheaper than the extra passes


def usable(dtype, mean, std) -> bool:
    """Whether ``box_muller_float32`` applies: float32 output and finite ``mean`` and ``std``."""
    return np.dtype(dtype) == np.float32 and math.isfinite(mean) and math.isfinite(std)


def box_muller_float32(u, out, mean, std):
    """``random.box_muller(np, u, out, mean, std)`` for a float32 ``out``, the same bits."""
    n = out.shape[0]
    pairs = (n + 1) // 2
    whole = n == 2 * pairs
    target = out.reshape(pairs, 2) if whole else np.empty((pairs, 2), np.float32)
    for s in range(0, pairs, _BLOCK):
        e = min(s + _BLOCK, pairs)
        _block(u[2 * s:2 * e], target[s:e], mean, std)
    if not whole:
        out[:] = target.reshape(-1)[:n]
    return out


def cos_sin(u_angle):
    """``(values, sign)``: ``sign * values`` approximates (cos, sin) of ``t = fl(2 pi u)`` to a few 1e-15.

    ``values`` is (2, n) (row 0 the cos values, row 1 the sin values), ``sign`` is +1 or -1 per pair.
    """
    # t = q pi + 2h with q = round(2u) and h = (2u - q) pi / 2 in [-pi/4, pi/4] (2u - q is exact); h is off
    # by a rounding (1e-16) and t from 2 pi u by one (4.4e-16): an error of at most 1e-15 in cos t and sin t
    double = np.multiply(u_angle, 2.0)
    q = np.rint(double)
    h = np.subtract(double, q, out=double)
    h *= _HALF_PI
    z = np.multiply(h, h)
    sin_h = np.multiply(z, _SIN_COEFFICIENTS[0])     # Taylor series of sin(h) / h to h**14: error below 5e-17
    for c in _SIN_COEFFICIENTS[1:]:
        sin_h += c
        sin_h *= z
    sin_h += 1.0
    sin_h *= h
    # cos 2h = 1 - 2 sin^2 h and sin 2h = 2 sin h cos h with cos h = sqrt(1 - sin^2 h) (>= 0.7 here): each off
    # by at most 4x sin h's error plus roundings
    values = np.empty((2, h.shape[0]))
    square = np.multiply(sin_h, sin_h, out=z)
    np.multiply(square, -2.0, out=values[0])
    values[0] += 1.0
    np.subtract(1.0, square, out=square)
    cos_h = np.sqrt(square, out=square)
    sin_h *= 2.0
    np.multiply(sin_h, cos_h, out=values[1])
    # (cos t, sin t) = (-1)**q (cos 2h, sin 2h)
    sign = np.subtract(q, 1.0, out=q)
    sign *= sign
    sign *= 2.0
    sign -= 1.0                                       # 2 (q - 1)**2 - 1: +1 for q = 0 or 2, -1 for q = 1
    return values, sign


def _block(u, target, mean, std):
    """One block of pairs: values near a float32 rounding boundary go to ``_exact``."""
    u_radius, u_angle = u[0::2], u[1::2]
    # the radius exactly as box_muller computes it (the same ufuncs on the same contiguous arrays)
    radius = np.subtract(1.0, u_radius)
    np.log(radius, out=radius)
    radius *= -2.0
    np.sqrt(radius, out=radius)
    values, sign = cos_sin(u_angle)
    sign *= radius                                    # exact
    values *= sign                                    # the approximate r cos t, r sin t
    margin = np.multiply(radius, 2.0 * _BOUND)
    low = np.subtract(values, margin)
    high = np.add(values, margin, out=values)
    if mean != 0.0 or std != 1.0:
        for v in (low, high):
            v *= std
            v += mean
    low32 = low.astype(np.float32)
    high32 = high.astype(np.float32)
    unsure = low32.view(np.int32) != high32.view(np.int32)
    unsure |= low32 == 0.0
    target[:, 0] = low32[0]
    target[:, 1] = low32[1]
    listed = np.flatnonzero(unsure)                   # (a 2-d nonzero() costs 15x as much)
    if listed.size:
        _exact(u_angle, radius, target, listed, mean, std)


def _exact(u_angle, radius, target, listed, mean, std):
    """box_muller's own arithmetic for the listed values (flat indices into the (2, pairs) layout)."""
    which, pairs = np.divmod(listed, radius.shape[0])
    theta = np.multiply(u_angle[pairs], _TWO_PI)
    v = np.where(which == 0, np.cos(theta), np.sin(theta))
    v *= radius[pairs]
    if mean != 0.0 or std != 1.0:
        v *= std
        v += mean
    target[pairs, which] = v
