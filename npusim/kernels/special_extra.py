"""More special functions over NumPy or CuPy arrays: ndtr, log_ndtr, ndtri, erfcx, i0e, i1e, entr,
xlog1py and the Hurwitz zeta function.

As in ``special``: every input is evaluated in float64 and rounded once to its own dtype, so float32
results are correctly rounded up to the float64 formula's error.
"""
from __future__ import annotations

import math

import numpy as np

from . import elementwise as E
from . import special as S
from .array_api import namespace_of

_f64, _finish = S._f64, S._finish
_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


# --- erfcx(x) = exp(x^2) erfc(x): Cody's rational forms without their exp(-x^2) factor ------------------

def _erfcx64(xp, x):
    y = xp.abs(x)
    with np.errstate(all="ignore"):
        num = E._ERF_C[8] * y
        den = y
        for i in range(7):
            num = (num + E._ERF_C[i]) * y
            den = (den + E._ERF_D[i]) * y
        mid = (num + E._ERF_C[7]) / (den + E._ERF_D[7])
        inv = 1.0 / (y * y)
        num = E._ERF_P[5] * inv
        den = inv
        for i in range(4):
            num = (num + E._ERF_P[i]) * inv
            den = (den + E._ERF_Q[i]) * inv
        big = (E._SQRPI - inv * (num + E._ERF_P[4]) / (den + E._ERF_Q[4])) / y
        pos = xp.where(y <= 4.0, mid, big)                 # erfcx(|x|) for |x| > 0.46875
        small = xp.exp(y * y) * (1.0 - E.erf(y))           # no cancellation: erf(|x|) < 0.5 here
        pos = xp.where(y <= 0.46875, small, pos)
        # erfcx(-y) = 2 exp(y^2) - erfcx(y); overflows to inf as torch's does
        r = xp.where(x < 0, 2.0 * xp.exp(y * y) - pos, pos)
    r = xp.where(x == np.inf, 0.0, r)
    return xp.where(xp.isnan(x), x, r)


def erfcx(a, out=None):
    xp = namespace_of(a)
    return _finish(_erfcx64(xp, _f64(a)), a.dtype, out)


# --- ndtr and log_ndtr --------------------------------------------------------------------------------------

def _ndtr64(xp, x):
    return 0.5 * S.erfc(-x * _SQRT1_2)


def ndtr(a, out=None):
    xp = namespace_of(a)
    return _finish(_ndtr64(xp, _f64(a)), a.dtype, out)


def _log_ndtr64(xp, x):
    with np.errstate(all="ignore"):
        # the lower tail through erfcx: log(erfc(t) / 2) = log(erfcx(t) / 2) - t^2, t = -x / sqrt(2)
        t = -x * _SQRT1_2
        lower = xp.log(0.5 * _erfcx64(xp, t)) - 0.5 * x * x
        # the upper tail: log(1 - q) with q = ndtr(-x) small
        upper = xp.log1p(-_ndtr64(xp, -x))
        r = xp.where(x < -1.0, lower, upper)
    r = xp.where(x == -np.inf, -np.inf, r)
    return xp.where(xp.isnan(x), x, r)


def log_ndtr(a, out=None):
    xp = namespace_of(a)
    return _finish(_log_ndtr64(xp, _f64(a)), a.dtype, out)


# --- ndtri: Acklam's rational first guess, then Newton steps on log_ndtr (relative accuracy in both tails) --

_AK_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
         -3.066479806614716e+01, 2.506628277459239e+00)
_AK_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
         -1.328068155288572e+01)
_AK_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
         4.374664141464968e+00, 2.938163982698783e+00)
_AK_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)


def _horner(xp, z, coeffs):
    r = xp.full_like(z, coeffs[0])
    for c in coeffs[1:]:
        r = r * z + c
    return r


def ndtri(a, out=None):
    xp = namespace_of(a)
    p = _f64(a)
    with np.errstate(all="ignore"):
        upper = p > 0.5
        lo = xp.where(upper, 1.0 - p, p)            # exact for p in [0.5, 1]
        lo = xp.where((lo > 0) & (lo <= 0.5), lo, 0.25)   # a harmless stand-in where the ends are set below
        q = lo - 0.5
        r = q * q
        central = q * _horner(xp, r, _AK_A) / (_horner(xp, r, _AK_B) * r + 1.0)
        s = xp.sqrt(-2.0 * xp.log(lo))
        tail = _horner(xp, s, _AK_C) / (_horner(xp, s, _AK_D) * s + 1.0)
        x = xp.where(lo < 0.02425, tail, central)
        log_lo = xp.log(lo)
        for _ in range(3):
            ln = _log_ndtr64(xp, x)
            # d/dx log ndtr(x) = pdf(x) / ndtr(x) = exp(-x^2/2 - log ndtr(x)) / sqrt(2 pi)
            x = x - (ln - log_lo) * _SQRT_2PI * xp.exp(ln + 0.5 * x * x)
        x = xp.where(upper, -x, x)
        # near p = 1/2 the log-domain steps lose relative accuracy; 2p - 1 is exact on [1/4, 3/4]
        mid = (p >= 0.25) & (p <= 0.75)
        x = xp.where(mid, math.sqrt(2.0) * S.erfinv(xp.where(mid, 2.0 * p - 1.0, 0.0)), x)
    x = xp.where(p == 0.0, -np.inf, x)
    x = xp.where(p == 1.0, np.inf, x)
    x = xp.where(p == 0.5, 0.0, x)
    x = xp.where((p < 0) | (p > 1) | xp.isnan(p), np.nan, x)
    return _finish(x, a.dtype, out)


# --- i0e, i1e: Cephes' Chebyshev expansions without the exp(|x|) factor ----------------------------------

def _bessel_scaled(a, coeff_small, coeff_large, odd, out):
    xp = namespace_of(a)
    x = _f64(a)
    y = xp.abs(x)
    with np.errstate(all="ignore"):
        small = S._chbevl(xp, y / 2.0 - 2.0, coeff_small)
        if odd:
            small = small * y
        large = S._chbevl(xp, 32.0 / y - 2.0, coeff_large) / xp.sqrt(y)
        r = xp.where(y <= 8.0, small, large)
    if odd:
        r = xp.where(x < 0, -r, r)
    r = xp.where(xp.isnan(x), x, r)
    return _finish(r, a.dtype, out)


def i0e(a, out=None):
    """exp(-|x|) i0(x)."""
    return _bessel_scaled(a, S._I0_A, S._I0_B, False, out)


def i1e(a, out=None):
    """exp(-|x|) i1(x)."""
    return _bessel_scaled(a, S._I1_A, S._I1_B, True, out)


def _pair(x, y):
    """(namespace, result dtype, x, y as float64 arrays): either operand may be a Python number."""
    # a NumPy scalar or number never decides the namespace: the array operand does
    arr = x if hasattr(x, "dtype") and not isinstance(x, np.generic) else y
    xp = namespace_of(arr)
    return xp, arr.dtype, xp.asarray(x, dtype=np.float64), xp.asarray(y, dtype=np.float64)


# --- entr, xlog1py ----------------------------------------------------------------------------------------

def entr(a, out=None):
    """-x log(x) for x > 0, 0 at 0, -inf for x < 0."""
    xp = namespace_of(a)
    x = _f64(a)
    with np.errstate(all="ignore"):
        r = xp.where(x > 0, -x * xp.log(xp.where(x > 0, x, 1.0)), -np.inf)
    r = xp.where(x == 0, 0.0, r)
    r = xp.where(xp.isnan(x), x, r)
    return _finish(r, a.dtype, out)


def xlog1py(x, y, out=None):
    """x * log1p(y), 0 where x == 0, NaN where y is NaN (arrays of one float dtype)."""
    xp, dt, a, b = _pair(x, y)
    with np.errstate(all="ignore"):
        r = xp.where(a == 0, 0.0, a * xp.log1p(b))
    r = xp.where(xp.isnan(b), b, r)
    return _finish(r, dt, out)


# --- Hurwitz zeta(x, q) --------------------------------------------------------------------------------

def zeta(x, q, out=None):
    """sum over k >= 0 of (k + q)^-x, with the special cases of torch's (Cephes') zeta."""
    xp, dt, s, v = _pair(x, q)
    s, v = xp.broadcast_arrays(s, v)
    s, v = s.copy(), v.copy()
    with np.errstate(all="ignore"):
        # the summation runs on a sane stand-in wherever a special case decides the result
        special = (s <= 1) | xp.isnan(s) | xp.isnan(v) | xp.isinf(v) | (v <= 0)
        r = S._zeta(xp, xp.where(special, 2.0, s), xp.where(special, 1.0, v))
        if bool(((v < 0) & (s == xp.floor(s)) & (v != xp.floor(v)) & (s > 1)).any()):
            # a negative non-integral q with an integral x: the sum is real (slow: the recurrence walks up to q > 9)
            neg = (v < 0) & (s == xp.floor(s)) & (v != xp.floor(v)) & (s > 1)
            r = xp.where(neg, S._zeta(xp, xp.where(neg, s, 2.0), xp.where(neg, v, 1.0)), r)
    # torch's order of special cases, the last applied here taking precedence
    r = xp.where(xp.isnan(s) | xp.isnan(v) | (v == np.inf), np.nan, r)   # the series gives inf * 0 at q = inf
    r = xp.where((v < 0) & (v != xp.floor(v)) & (s != xp.floor(s)), np.nan, r)
    r = xp.where((v <= 0) & (v == xp.floor(v)), np.inf, r)
    r = xp.where(s < 1, np.nan, r)
    r = xp.where(s == 1, np.inf, r)
    return _finish(r, dt, out)
