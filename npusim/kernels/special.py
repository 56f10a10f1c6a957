"""Special functions over NumPy or CuPy arrays: erfc, erfinv, lgamma, digamma, polygamma, i0, i1, and
torch.special's ndtr, log_ndtr, ndtri, erfcx, i0e, i1e, entr, xlog1py and the Hurwitz zeta function.

NumPy has none of these and scipy is not a dependency, so each is a known
numerically sound formula written against ``xp``. Inputs of any float dtype are
evaluated in float64 and rounded once to the input dtype (torch evaluates
16-bit floats in float32; float64 is at least as accurate).
"""
from __future__ import annotations

import math

import numpy as np

from . import elementwise as E
from .array_api import as_array, namespace_of

_F64 = np.dtype(np.float64)


def _finish(r, dt, out):
    r = r.astype(dt, copy=False)
    if out is not None:
        out[...] = r
        return out
    return as_array(r)


def _f64(a):
    return a.astype(_F64, copy=False)


# --- erfc: W. J. Cody's rational approximations, the complement computed directly (no cancellation) ----

def _cody_scaled_erfc(xp, y):
    """exp(y^2) erfc(y) for y = |x| > 0.46875: Cody's rational forms without their exp(-y^2) factor
    (the caller silences floating-point warnings)."""
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
    return xp.where(y <= 4.0, mid, big)


def erfc(a, out=None):
    xp = namespace_of(a)
    x = _f64(a)
    y = xp.abs(x)
    with np.errstate(all="ignore"):
        tail = _cody_scaled_erfc(xp, y) * E._exp_neg_square(xp, y)
    tail = xp.where(y >= 26.543, 0.0, tail)       # erfc(|x|) for |x| > 0.46875
    large = xp.where(x < 0, 2.0 - tail, tail)
    r = xp.where(y <= 0.46875, 1.0 - E.erf(x), large)
    r = xp.where(xp.isnan(x), x, r)
    return _finish(r, a.dtype, out)


# --- erfinv: a rational first guess refined by two Newton steps (the algorithm torch uses) ------------

_EI_A = (0.886226899, -1.645349621, 0.914624893, -0.140543331)
_EI_B = (-2.118377725, 1.442710462, -0.329097515, 0.012229801)
_EI_C = (-1.970840454, -1.624906493, 3.429567803, 1.641345311)
_EI_D = (3.543889200, 1.637067800)


def erfinv(a, out=None):
    xp = namespace_of(a)
    y = _f64(a)
    ya = xp.abs(y)
    with np.errstate(all="ignore"):
        z = y * y
        num = ((_EI_A[3] * z + _EI_A[2]) * z + _EI_A[1]) * z + _EI_A[0]
        den = (((_EI_B[3] * z + _EI_B[2]) * z + _EI_B[1]) * z + _EI_B[0]) * z + 1.0
        central = y * num / den
        z = xp.sqrt(-xp.log((1.0 - ya) / 2.0))
        num = ((_EI_C[3] * z + _EI_C[2]) * z + _EI_C[1]) * z + _EI_C[0]
        den = (_EI_D[1] * z + _EI_D[0]) * z + 1.0
        tail = xp.copysign(num, y) / den
        x = xp.where(ya <= 0.7, central, tail)
        x = xp.where(ya < 1.0, x, 0.0)     # keep the Newton steps finite; the ends are set below
        two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
        for _ in range(2):
            x = x - (E.erf(x) - y) / (two_over_sqrt_pi * xp.exp(-x * x))
    x = xp.where(ya == 1.0, xp.copysign(np.inf, y), x)
    x = xp.where((ya > 1.0) | xp.isnan(y), np.nan, x)
    return _finish(x, a.dtype, out)


# --- lgamma: Lanczos (g=7, n=9) for x >= 0.5, the reflection formula below ----------------------------

_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def _lgamma_right(xp, x):
    """log|Gamma(x)| for x >= 0.5."""
    x = x - 1.0
    s = xp.full_like(x, _LANCZOS[0])
    for i in range(1, 9):
        s = s + _LANCZOS[i] / (x + i)
    t = x + 7.5
    return _HALF_LOG_2PI + (x + 0.5) * xp.log(t) - t + xp.log(s)


def lgamma(a, out=None):
    xp = namespace_of(a)
    x = _f64(a)
    with np.errstate(all="ignore"):
        left = x < 0.5
        right = _lgamma_right(xp, xp.where(left, 1.0 - x, x))
        # |sin(pi x)| from x's distance to the nearest integer: exact where pi * x would round
        sin_pix = xp.abs(xp.sin(math.pi * (x - xp.rint(x))))
        reflected = math.log(math.pi) - xp.log(sin_pix) - right
        r = xp.where(left, reflected, right)
    r = xp.where((x == 1.0) | (x == 2.0), 0.0, r)   # the exact zeros, which the series misses by an ulp
    pole = (x <= 0) & (x == xp.floor(x))
    r = xp.where(pole | xp.isinf(x), np.inf, r)
    r = xp.where(xp.isnan(x), x, r)
    return _finish(r, a.dtype, out)


# --- digamma: recurrence up to x >= 10, then the asymptotic series (Cephes, as torch) -----------------

_PSI_A = (8.33333333333333333333e-2, -2.10927960927960927961e-2, 7.57575757575757575758e-3,
          -4.16666666666666666667e-3, 3.96825396825396825397e-3, -8.33333333333333333333e-3,
          8.33333333333333333333e-2)


def _polevl(xp, z, coeffs):
    r = xp.full_like(z, coeffs[0])
    for c in coeffs[1:]:
        r = r * z + c
    return r


def _digamma_positive(xp, x):
    """digamma(x) for x > 0."""
    acc = xp.zeros_like(x)
    for _ in range(10):
        small = x < 10.0
        acc = acc - xp.where(small, 1.0 / x, 0.0)
        x = xp.where(small, x + 1.0, x)
    z = 1.0 / (x * x)
    series = xp.where(x < 1e17, z * _polevl(xp, z, _PSI_A), 0.0)
    return acc + xp.log(x) - 0.5 / x - series


def digamma(a, out=None):
    xp = namespace_of(a)
    x = _f64(a)
    with np.errstate(all="ignore"):
        neg = x < 0
        r = _digamma_positive(xp, xp.where(neg, 1.0 - x, xp.where(x == 0, 1.0, x)))
        frac = x - xp.trunc(x)   # tan(pi * frac) is exact where tan(pi * x) would not be
        r = xp.where(neg, r - math.pi / xp.tan(math.pi * frac), r)
    r = xp.where(x == 0, xp.copysign(np.inf, -x), r)
    r = xp.where(neg & (x == xp.trunc(x)), np.nan, r)   # negative integers and -inf
    r = xp.where(xp.isnan(x), x, r)
    return _finish(r, a.dtype, out)


# --- polygamma: trigamma by recurrence + asymptotics, higher orders through Hurwitz zeta ----------------

def _trigamma(xp, x):
    with np.errstate(all="ignore"):
        left = x < 0.5
        sin_pix = xp.sin(math.pi * x)
        acc = xp.where(left, -(math.pi * math.pi) / (sin_pix * sin_pix), 0.0)
        x = xp.where(left, 1.0 - x, x)
        for _ in range(6):
            acc = acc + 1.0 / (x * x)
            x = x + 1.0
        ixx = 1.0 / (x * x)
        acc = acc + (1.0 + 1.0 / (2.0 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x
        return xp.where(left, -acc, acc)


_ZETA_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
           -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
           1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16


def _zeta(xp, s, q):
    """Hurwitz zeta(s, q) for a number s > 1 (Cephes' Euler-Maclaurin summation, vectorised)."""
    with np.errstate(all="ignore"):
        total = q ** -s
        a = q.copy()
        b = xp.zeros_like(q)
        done = xp.zeros(q.shape, dtype=bool)
        i = 0
        while True:
            need = ~done & ((i < 9) | (a <= 9.0))
            if not bool(need.any()):
                break
            i += 1
            a = xp.where(need, a + 1.0, a)
            b = xp.where(need, a ** -s, b)
            total = xp.where(need, total + b, total)
            done = done | (need & (xp.abs(b) < _MACHEP * xp.abs(total)))
        w = a
        total = xp.where(done, total, total + b * w / (s - 1.0) - 0.5 * b)
        fa, k = 1.0, 0.0
        for c in _ZETA_A:
            fa *= s + k
            b = b / w
            t = fa * b / c
            total = xp.where(done, total, total + t)
            done = done | (xp.abs(t / total) < _MACHEP)
            k += 1.0
            fa *= s + k
            b = b / w
            k += 1.0
        integral = q == xp.floor(q)
        total = xp.where((q <= 0) & integral, np.inf, total)
        return total


def polygamma(n, a, out=None):
    """The n-th derivative of digamma (n >= 0)."""
    if n == 0:
        return digamma(a, out)
    xp = namespace_of(a)
    x = _f64(a)
    if n == 1:
        r = _trigamma(xp, x)
    else:
        sign = 1.0 if n % 2 else -1.0
        r = sign * math.exp(math.lgamma(n + 1.0)) * _zeta(xp, float(n + 1), x)
    r = xp.where(xp.isnan(x), x, r)
    return _finish(r, a.dtype, out)


# --- i0 / i1: Cephes' Chebyshev expansions on [0, 8] and (8, inf) ----------------------------------------

_I0_A = (-4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
         1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
         -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
         9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
         -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
         1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
         -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
         1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
         -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
         1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0_B = (-7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
         3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
         1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
         -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
         7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
         -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
         3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
         2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
         8.04490411014108831608e-1)
_I1_A = (2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
         -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
         3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
         -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
         9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7,
         -8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5,
         4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4,
         -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
         2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1,
         -1.76416518357834055153e-1, 2.52587186443633654823e-1)
_I1_B = (7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
         -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
         -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
         4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
         -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
         3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
         -3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7,
         -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
         7.78576235018280120474e-1)


def _chbevl(xp, x, coeffs):
    b0 = xp.full_like(x, coeffs[0])
    b1 = xp.zeros_like(x)
    b2 = b1
    for c in coeffs[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def _bessel(a, coeff_small, coeff_large, odd, out):
    xp = namespace_of(a)
    x = _f64(a)
    y = xp.abs(x)
    with np.errstate(all="ignore"):
        small = xp.exp(y) * _chbevl(xp, y / 2.0 - 2.0, coeff_small)
        if odd:
            small = small * y
        large = xp.exp(y) * _chbevl(xp, 32.0 / y - 2.0, coeff_large) / xp.sqrt(y)
        r = xp.where(y <= 8.0, small, large)
    if odd:
        r = xp.where(x < 0, -r, r)
    return _finish(r, a.dtype, out)


def i0(a, out=None):
    """The modified Bessel function of the first kind, order 0."""
    return _bessel(a, _I0_A, _I0_B, False, out)


def i1(a, out=None):
    """The modified Bessel function of the first kind, order 1."""
    return _bessel(a, _I1_A, _I1_B, True, out)


# --- torch.special's primitives ---------------------------------------------------------------------------

_SQRT1_2 = math.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)


# --- erfcx(x) = exp(x^2) erfc(x): Cody's rational forms without their exp(-x^2) factor ------------------

def _erfcx64(xp, x):
    y = xp.abs(x)
    with np.errstate(all="ignore"):
        pos = _cody_scaled_erfc(xp, y)                     # erfcx(|x|) for |x| > 0.46875
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
    return 0.5 * erfc(-x * _SQRT1_2)


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
        x = xp.where(mid, math.sqrt(2.0) * erfinv(xp.where(mid, 2.0 * p - 1.0, 0.0)), x)
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
        small = _chbevl(xp, y / 2.0 - 2.0, coeff_small)
        if odd:
            small = small * y
        large = _chbevl(xp, 32.0 / y - 2.0, coeff_large) / xp.sqrt(y)
        r = xp.where(y <= 8.0, small, large)
    if odd:
        r = xp.where(x < 0, -r, r)
    r = xp.where(xp.isnan(x), x, r)
    return _finish(r, a.dtype, out)


def i0e(a, out=None):
    """exp(-|x|) i0(x)."""
    return _bessel_scaled(a, _I0_A, _I0_B, False, out)


def i1e(a, out=None):
    """exp(-|x|) i1(x)."""
    return _bessel_scaled(a, _I1_A, _I1_B, True, out)


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
        r = _zeta(xp, xp.where(special, 2.0, s), xp.where(special, 1.0, v))
        if bool(((v < 0) & (s == xp.floor(s)) & (v != xp.floor(v)) & (s > 1)).any()):
            # a negative non-integral q with an integral x: the sum is real (slow: the recurrence walks up to q > 9)
            neg = (v < 0) & (s == xp.floor(s)) & (v != xp.floor(v)) & (s > 1)
            r = xp.where(neg, _zeta(xp, xp.where(neg, s, 2.0), xp.where(neg, v, 1.0)), r)
    # torch's order of special cases, the last applied here taking precedence
    r = xp.where(xp.isnan(s) | xp.isnan(v) | (v == np.inf), np.nan, r)   # the series gives inf * 0 at q = inf
    r = xp.where((v < 0) & (v != xp.floor(v)) & (s != xp.floor(s)), np.nan, r)
    r = xp.where((v <= 0) & (v == xp.floor(v)), np.inf, r)
    r = xp.where(s < 1, np.nan, r)
    r = xp.where(s == 1, np.inf, r)
    return _finish(r, dt, out)
