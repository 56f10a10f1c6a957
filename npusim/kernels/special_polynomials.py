"""Orthogonal polynomials of torch.special over NumPy or CuPy arrays: Chebyshev T/U/V/W and their shifted
forms, Hermite H and He, Laguerre L and Legendre P, each ``f(x, n)`` with x and n arrays (or numbers).

torch's definitions: n is truncated to an integer (a non-finite n reads as negative), a negative n gives
0, the ends of the interval and large n inside it have closed forms, and otherwise the three-term
recurrence runs up to n, stopping where the value turns NaN. The recurrence runs only on the elements
that need it, fewer at every step. Evaluated in the operands' dtype as torch's (float32 overflows, and
then turns NaN, where float64 would not).
"""
from __future__ import annotations

import numpy as np

from .array_api import namespace_of
from .special import _finish

_F64 = np.dtype(np.float64)


def _operands(x, n):
    """(namespace, dtype, x in that dtype, n as int64 with non-finite n as -1), broadcast."""
    arr = x if hasattr(x, "dtype") and not isinstance(x, np.generic) else n
    xp = namespace_of(arr)
    xs = xp.asarray(x, dtype=arr.dtype)
    nf = xp.asarray(n, dtype=arr.dtype)
    xs, nf = xp.broadcast_arrays(xs, nf)
    with np.errstate(invalid="ignore"):
        ok = xp.isfinite(nf) & (xp.abs(nf) < 9.2e18)
    ni = xp.where(ok, xp.trunc(xp.where(ok, nf, -1.0)), -1.0).astype(np.int64)
    return xp, arr.dtype, xs.copy(), ni


def _recurrence(xp, x, n, p, q, step, first, last_of, stop_at_nan=True):
    """q after r = step(x, k, q, p); p, q = q, r for k = first .. last_of(n), per element of the masked
    arrays (the elements given are those that need at least one step)."""
    idx = xp.arange(x.size)
    xs, ns, ps, qs = x.ravel(), n.ravel(), p.ravel(), q.ravel()
    result = qs.copy()
    last = last_of(ns)
    k = first
    live = k <= last
    if stop_at_nan:
        live = live & ~xp.isnan(qs)
    while True:
        if not bool(live.all()):
            result[idx[~live]] = qs[~live]
            idx, xs, ns, ps, qs, last = idx[live], xs[live], ns[live], ps[live], qs[live], last[live]
        if idx.size == 0:
            break
        r = step(xs, k, qs, ps)
        ps, qs = qs, r
        k += 1
        live = k <= last
        if stop_at_nan:
            live = live & ~xp.isnan(qs)
    return result.reshape(x.shape)


def _run(xp, x, n, need, q0, step, first, last_of, stop_at_nan=True):
    """The recurrence's value where ``need`` (0 elsewhere), started from p = 1 and q = q0."""
    out = xp.zeros(x.size, dtype=x.dtype)
    if bool(need.any()):
        sel = xp.nonzero(need.ravel())[0]
        xs, ns, q = x.ravel()[sel], n.ravel()[sel], q0.ravel()[sel]
        out[sel] = _recurrence(xp, xs, ns, xp.ones_like(xs), q, step, first, last_of, stop_at_nan)
    return out.reshape(x.shape)


def _chebyshev_step(xs, k, q, p):
    return (xs + xs) * q - p


def _inclusive(ns):
    return ns


# --- Chebyshev polynomials of the first to fourth kind on [-1, 1] -------------------------------------------

def _chebyshev(x, n, kind, out):
    xp, dt, x, n = _operands(x, n)
    even = n % 2 == 0
    nf = n.astype(x.dtype)
    ax = xp.abs(x)
    inside = ax < 1.0
    with np.errstate(all="ignore"):
        theta = xp.arccos(xp.where(inside, x, 0.0))
        if kind == "t":
            big, closed = n > 6, xp.cos(nf * theta)
            at_one = xp.where((x > 0) | even, 1.0, -1.0)
            q1 = x
        elif kind == "u":
            s = xp.sin(theta)
            big = n > 8
            closed = xp.where(s != 0, xp.sin((nf + 1) * theta) / s, (nf + 1) * xp.cos((nf + 1) * theta) / x)
            at_one = xp.where((x > 0) | even, nf + 1, -(nf + 1))
            q1 = x + x
        elif kind == "v":
            big = n > 8
            odd_end = xp.where(even, nf + nf + 1, -(nf + nf + 1))
            closed = xp.where(xp.sin(theta / 2.0) != 1.0, xp.cos((nf + 0.5) * theta) / xp.cos(theta / 2.0),
                              odd_end)
            at_one = xp.where(x > 0, 1.0, odd_end)
            q1 = x + x - 1.0
        else:
            big = n > 8
            end = xp.where(x > 0, nf + nf + 1, xp.where(even, 1.0, -1.0))
            closed = xp.where(xp.cos(theta / 2.0) != 1.0, xp.sin((nf + 0.5) * theta) / xp.sin(theta / 2.0), end)
            at_one = end
            q1 = x + x + 1.0
        use_closed = big & inside
        need = (n >= 2) & ~use_closed & (ax != 1.0)
        r = _run(xp, x, n, need, q1, _chebyshev_step, 2, _inclusive)
    r = xp.where(n == 1, q1, r)
    r = xp.where(n == 0, 1.0, r)
    r = xp.where(use_closed, closed, r)
    r = xp.where(ax == 1.0, at_one, r)
    r = xp.where(n < 0, 0.0, r)
    return _finish(r, dt, out)


def chebyshev_polynomial_t(x, n, out=None):
    return _chebyshev(x, n, "t", out)


def chebyshev_polynomial_u(x, n, out=None):
    return _chebyshev(x, n, "u", out)


def chebyshev_polynomial_v(x, n, out=None):
    return _chebyshev(x, n, "v", out)


def chebyshev_polynomial_w(x, n, out=None):
    return _chebyshev(x, n, "w", out)


# --- shifted Chebyshev polynomials: the same of 2x - 1, on [0, 1] ------------------------------------------

def _shifted_chebyshev(x, n, kind, out):
    xp, dt, x, n = _operands(x, n)
    even = n % 2 == 0
    nf = n.astype(x.dtype)
    y = x + x - 1.0
    inside = xp.abs(y) < 1.0
    with np.errstate(all="ignore"):
        theta = xp.arccos(xp.where(inside, y, 0.0))
        if kind == "t":
            big, closed = n > 6, xp.cos(nf * theta)
            at_one, at_zero = xp.ones_like(x), xp.where(even, 1.0, -1.0)
            q1 = y
        elif kind == "u":
            s = xp.sin(theta)
            big = n > 6
            closed = xp.where(s != 0, xp.sin((nf + 1) * theta) / s, (nf + 1) * xp.cos((nf + 1) * theta) / y)
            at_one, at_zero = nf + 1, xp.where(even, nf + 1, -(nf + 1))
            q1 = y + y
        elif kind == "v":
            big = n > 6
            at_zero = xp.where(even, nf + nf + 1, -(nf + nf + 1))
            closed = xp.where(xp.sin(theta / 2.0) != 1.0, xp.cos((nf + 0.5) * theta) / xp.cos(theta / 2.0),
                              at_zero)
            at_one = xp.ones_like(x)
            q1 = y + y - 1.0
        else:
            big = n > 4
            at_zero = xp.where(even, 1.0, -1.0)
            closed = xp.where(xp.cos(theta / 2.0) != 1.0, xp.sin((nf + 0.5) * theta) / xp.sin(theta / 2.0),
                              at_zero)
            at_one = nf + nf + 1
            q1 = y + y + 1.0
        use_closed = big & inside
        need = (n >= 2) & ~use_closed & (x != 1.0) & (x != 0.0)
        r = _run(xp, y, n, need, q1, _chebyshev_step, 2, _inclusive)
    r = xp.where(n == 1, q1, r)
    r = xp.where(n == 0, 1.0, r)
    r = xp.where(use_closed, closed, r)
    r = xp.where(x == 0.0, at_zero, r)
    r = xp.where(x == 1.0, at_one, r)
    r = xp.where(n < 0, 0.0, r)
    return _finish(r, dt, out)


def shifted_chebyshev_polynomial_t(x, n, out=None):
    return _shifted_chebyshev(x, n, "t", out)


def shifted_chebyshev_polynomial_u(x, n, out=None):
    return _shifted_chebyshev(x, n, "u", out)


def shifted_chebyshev_polynomial_v(x, n, out=None):
    return _shifted_chebyshev(x, n, "v", out)


def shifted_chebyshev_polynomial_w(x, n, out=None):
    return _shifted_chebyshev(x, n, "w", out)


# --- Hermite polynomials (physicists' H and probabilists' He) ----------------------------------------------

def _hermite_limit(dt):
    """torch gives NaN past this degree (the recurrence would overflow anyway): 128 in float32, 512 in float64."""
    return 512 if dt == np.float64 else 128


def _hermite(x, n, physicists, out):
    xp, dt, x, n = _operands(x, n)
    q1 = x + x if physicists else x
    if physicists:
        def step(xs, j, q, p):
            return (xs + xs) * q - (2 * j) * p
    else:
        def step(xs, k, q, p):
            return xs * q - k * p
    limit = _hermite_limit(dt)
    with np.errstate(all="ignore"):
        need = (n >= 2) & (n <= limit)
        r = _run(xp, x, n, need, q1, step, 1, lambda ns: ns - 1, stop_at_nan=False)
    r = xp.where(n > limit, np.nan, r)
    r = xp.where(n == 1, q1, r)
    r = xp.where(n == 0, 1.0, r)
    r = xp.where(n < 0, 0.0, r)
    return _finish(r, dt, out)


def hermite_polynomial_h(x, n, out=None):
    return _hermite(x, n, True, out)


def hermite_polynomial_he(x, n, out=None):
    return _hermite(x, n, False, out)


# --- Laguerre and Legendre polynomials -----------------------------------------------------------------------

def _laguerre_step(xs, k, q, p):
    return (((k + k) + (1.0 - xs)) * q - k * p) / (k + 1)


def _legendre_step(xs, k, q, p):
    return ((k + k + 1) * xs * q - k * p) / (k + 1)


def laguerre_polynomial_l(x, n, out=None):
    xp, dt, x, n = _operands(x, n)
    q1 = 1.0 - x
    with np.errstate(all="ignore"):
        need = (n >= 2) & (x != 0.0)
        r = _run(xp, x, n, need, q1, _laguerre_step, 1, lambda ns: ns - 1)
    r = xp.where(n == 1, q1, r)
    r = xp.where((n == 0) | (x == 0.0), 1.0, r)
    r = xp.where(n < 0, 0.0, r)
    return _finish(r, dt, out)


def legendre_polynomial_p(x, n, out=None):
    xp, dt, x, n = _operands(x, n)
    even = n % 2 == 0
    ax = xp.abs(x)
    with np.errstate(all="ignore"):
        need = (n >= 2) & (ax != 1.0)
        r = _run(xp, x, n, need, x, _legendre_step, 1, lambda ns: ns - 1)
    r = xp.where(n == 1, x, r)
    r = xp.where(n == 0, 1.0, r)
    r = xp.where(ax == 1.0, xp.where((x > 0) | even, 1.0, -1.0), r)
    r = xp.where(n < 0, 0.0, r)
    return _finish(r, dt, out)
