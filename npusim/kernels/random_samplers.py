"""Gamma, Poisson and binomial samplers over the Philox stream (rejection in vectorised rounds, inversion).

Every sampler reads float64 uniforms ``u = (word >> 11) * 2**-53`` from the stream of
``random.raw_uint64`` and computes in float64, rounded once to the output dtype. The
stream is consumed in *stages*; each stage starts on a fresh counter block right after
the previous one, and the draw advances the generator by the blocks of all stages:

- an *inversion* stage draws one uniform per element (all ``n`` elements, flat order);
- a *rejection round* draws ``w * k`` uniforms for the ``k`` elements still rejected
  (flat order): the element at position ``i`` of the round takes uniforms ``i``,
  ``k + i``, ..., ``(w - 1) * k + i``. Rounds repeat until every element is accepted.

So the values and the offset advance are deterministic functions of (seed, offset,
parameters), identical for the host and the CuPy path, which share this code.
"""
from __future__ import annotations

import math

import numpy as np

from . import random as KR
from .special import lgamma

_MAX_ROUNDS = 10000   # every sampler here accepts with probability > 1/2 per round: never reached


def _units(xp, key, counter, n):
    """``n`` float64 uniforms in [0, 1) starting at counter block ``counter``, and the blocks they use."""
    if n == 0:
        return xp.empty(0, dtype=np.float64), 0
    return KR.unit_float64_from_raw(KR.raw_uint64(xp, key, counter, n)), KR._blocks(n)


def _rejection_rounds(xp, key, counter, active, out, words, step):
    """Run rounds over the flat indices ``active`` until ``step(u, idx) -> (accepted, values)`` accepts all.

    ``u`` has shape (words, k). Returns the blocks used."""
    used = 0
    rounds = 0
    while active.size:
        rounds += 1
        if rounds > _MAX_ROUNDS:
            raise RuntimeError("random sampler: rejection did not terminate (invalid parameters?)")
        k = int(active.size)
        u, blocks = _units(xp, key, counter + used, words * k)
        used += blocks
        ok, values = step(u.reshape(words, k), active)
        out[active[ok]] = values[ok]
        active = active[~ok]
    return used


# --- gamma: Marsaglia-Tsang, with the alpha < 1 boost ---------------------------------------------------

def standard_gamma_f64(xp, key, counter, alpha, tiny):
    """Gamma(alpha, 1) samples of a float64 array, at least ``tiny``; returns (array, blocks).

    Stages: one boost uniform per element (always), then rounds of 3 uniforms per element still
    rejected (two make a Box-Muller normal ``sqrt(-2 log(1 - u0)) cos(2 pi u1)``, ``u2`` decides).
    Elements with alpha <= 0 give ``tiny`` (as torch's clamp) and NaN alpha gives NaN, without rounds."""
    a = xp.ascontiguousarray(alpha, dtype=np.float64).reshape(-1)
    n = a.size
    boost_u, used = _units(xp, key, counter, n)
    with np.errstate(all="ignore"):
        shifted = xp.where(a < 1.0, a + 1.0, a)
        d = shifted - 1.0 / 3.0
        c = 1.0 / xp.sqrt(9.0 * d)
    out = xp.zeros(n, dtype=np.float64)
    active = xp.nonzero(a > 0)[0]

    def step(u, idx):
        with np.errstate(all="ignore"):
            x = xp.sqrt(-2.0 * xp.log1p(-u[0])) * xp.cos(KR._TWO_PI * u[1])
            di, ci = d[idx], c[idx]
            v = 1.0 + ci * x
            v = v * v * v
            x2 = x * x
            ok = (v > 0) & ((u[2] < 1.0 - 0.0331 * x2 * x2)
                            | (xp.log(u[2]) < 0.5 * x2 + di * (1.0 - v + xp.log(v))))
        return ok, di * v

    used += _rejection_rounds(xp, key, counter + used, active, out, 3, step)
    with np.errstate(all="ignore"):
        small = a < 1.0
        # the boost: Gamma(alpha) = Gamma(alpha + 1) * U ** (1 / alpha), with U = 1 - u in (0, 1]
        boost = xp.where(small, xp.exp(xp.log1p(-boost_u) / xp.where(small, a, 1.0)), 1.0)
        out = xp.where(a > 0, out * boost, 0.0)
    out = xp.maximum(out, tiny)
    out = xp.where(xp.isnan(a), np.nan, out)
    return out.reshape(alpha.shape), used


def standard_gamma(xp, key, counter, alpha, dtype):
    dtype = np.dtype(dtype)
    g, blocks = standard_gamma_f64(xp, key, counter, alpha, float(np.finfo(dtype).tiny))
    return g.astype(dtype), blocks


def dirichlet(xp, key, counter, alpha, dtype):
    """Gammas of ``alpha`` (the stream of ``standard_gamma``) normalised along the last dimension."""
    dtype = np.dtype(dtype)
    tiny = float(np.finfo(dtype).tiny)
    g, blocks = standard_gamma_f64(xp, key, counter, alpha, tiny)
    with np.errstate(all="ignore"):
        r = g / g.sum(axis=-1, keepdims=True)
    return xp.maximum(r, tiny).astype(dtype), blocks


# --- Poisson: inversion below rate 10, PTRS (Hoermann 1993) from 10 ----------------------------------------

_PTRS_FROM = 10.0


def _inversion(xp, u, log_p0, ratio, limit):
    """The smallest k with u < F(k) for pmf(0) = exp(log_p0), pmf(k + 1) = pmf(k) * ratio(k, idx).

    Sequential search over the elements still searching; stops at ``limit`` (the largest value) or
    where the pmf underflows past the mode (the CDF cannot grow any more)."""
    n = u.size
    k = xp.zeros(n, dtype=np.float64)
    p = xp.exp(log_p0)
    cdf = p.copy()
    active = xp.nonzero(~(u < cdf) & (k < limit))[0]
    step = 0
    while active.size:
        step += 1
        ka = k[active] + 1.0
        pa = p[active] * ratio(ka - 1.0, active)
        ca = cdf[active] + pa
        k[active], p[active], cdf[active] = ka, pa, ca
        done = (u[active] < ca) | (ka >= limit[active]) | ((pa == 0) & (step > 1))
        active = active[~done]
    return k


def poisson_f64(xp, key, counter, rate):
    """Poisson(rate) samples of a float64 array; returns (array, blocks).

    Stages: one inversion uniform per element (always), then PTRS rounds of 2 uniforms per element with
    rate >= 10 still rejected. Rate 0 gives 0; an infinite rate gives inf."""
    lam = xp.ascontiguousarray(rate, dtype=np.float64).reshape(-1)
    n = lam.size
    u, used = _units(xp, key, counter, n)
    small = lam < _PTRS_FROM
    lam_small = xp.where(small, lam, 0.0)
    with np.errstate(all="ignore"):
        out = _inversion(xp, u, -lam_small, lambda k, idx: lam_small[idx] / (k + 1.0),
                         xp.where(small, np.inf, 0.0))
        big = ~small & xp.isfinite(lam)
        lam_big = xp.where(big, lam, _PTRS_FROM)
        slam = xp.sqrt(lam_big)
        loglam = xp.log(lam_big)
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2.0)

    def step(uv, idx):
        with np.errstate(all="ignore"):
            uu = uv[0] - 0.5
            v = uv[1]
            us = 0.5 - xp.abs(uu)
            ai, bi, li = a[idx], b[idx], lam_big[idx]
            k = xp.floor((2.0 * ai / us + bi) * uu + li + 0.43)
            fast = (us >= 0.07) & (v <= v_r[idx])
            reject = (k < 0) | ((us < 0.013) & (v > us))
            lhs = xp.log(v) + xp.log(inv_alpha[idx]) - xp.log(ai / (us * us) + bi)
            rhs = -li + k * loglam[idx] - lgamma(xp.maximum(k, 0.0) + 1.0)
            ok = fast | (~reject & (lhs <= rhs))
        return ok, k

    used += _rejection_rounds(xp, key, counter + used, xp.nonzero(big)[0], out, 2, step)
    out = xp.where(xp.isinf(lam), np.inf, out)
    return out.reshape(rate.shape), used


def poisson(xp, key, counter, rate, dtype):
    r, blocks = poisson_f64(xp, key, counter, rate)
    return r.astype(np.dtype(dtype)), blocks


# --- binomial: inversion for count * min(p, 1 - p) < 10, BTRS (Hoermann 1993) otherwise --------------------

_BTRS_FROM = 10.0
# the Stirling remainder lgamma(k + 1) - ((k + 1/2) log(k + 1) - (k + 1) + log(2 pi) / 2), exact for k < 10
_TAIL = tuple(math.lgamma(k + 1.0) - ((k + 0.5) * math.log(k + 1.0) - (k + 1.0) + 0.5 * math.log(2 * math.pi))
              for k in range(10))


def _stirling_tail(xp, k):
    kp1sq = (k + 1.0) * (k + 1.0)
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1.0)
    table = xp.asarray(np.array(_TAIL))
    small = k <= 9
    return xp.where(small, table[xp.where(small, k, 0).astype(np.int64)], series)


def binomial_f64(xp, key, counter, count, prob):
    """Binomial(count, prob) samples of broadcast float64 arrays; returns (array, blocks).

    ``count`` is truncated to an integer; count <= 0 or prob <= 0 gives 0, prob >= 1 gives count, NaN
    gives NaN. Draws with q = min(p, 1 - p) and reflects (count - k) where p > 1/2. Stages: one inversion
    uniform per element (always), then BTRS rounds of 2 uniforms per element with count * q >= 10 still
    rejected."""
    shape = np.broadcast_shapes(count.shape, prob.shape)
    nn = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(count, dtype=np.float64), shape)).reshape(-1)
    pp = xp.ascontiguousarray(xp.broadcast_to(xp.asarray(prob, dtype=np.float64), shape)).reshape(-1)
    size = nn.size
    u, used = _units(xp, key, counter, size)
    with np.errstate(all="ignore"):
        nn = xp.where(nn > 0, xp.floor(nn), 0.0)
        flip = pp > 0.5
        q = xp.clip(xp.where(flip, 1.0 - pp, pp), 0.0, 0.5)
        trivial = (nn == 0) | (q == 0) | xp.isnan(pp) | xp.isinf(nn)
        small = ~trivial & (nn * q < _BTRS_FROM)
        big = ~trivial & ~small
        # inversion: pmf(0) = (1 - q) ** n, pmf(k + 1) = pmf(k) * (n - k) / (k + 1) * q / (1 - q)
        qs = xp.where(small, q, 0.25)
        ns = xp.where(small, nn, 0.0)
        odds = qs / (1.0 - qs)
        out = _inversion(xp, u, ns * xp.log1p(-qs), lambda k, idx: (ns[idx] - k) / (k + 1.0) * odds[idx], ns)
        # BTRS constants (from a safe placeholder where the element is not BTRS's)
        nb = xp.where(big, nn, 40.0)
        qb = xp.where(big, q, 0.5)
        m = xp.floor((nb + 1.0) * qb)
        r = qb / (1.0 - qb)
        npq = nb * qb * (1.0 - qb)
        b = 1.15 + 2.53 * xp.sqrt(npq)
        a = -0.0873 + 0.0248 * b + 0.01 * qb
        c = nb * qb + 0.5
        v_r = 0.92 - 4.2 / b
        alpha = (2.83 + 5.1 / b) * xp.sqrt(npq)
        base = ((m + 0.5) * xp.log((m + 1.0) / (r * (nb - m + 1.0))) + _stirling_tail(xp, m)
                + _stirling_tail(xp, nb - m))

    def step(uv, idx):
        with np.errstate(all="ignore"):
            uu = uv[0] - 0.5
            v = uv[1]
            us = 0.5 - xp.abs(uu)
            ai, bi, ni, ri = a[idx], b[idx], nb[idx], r[idx]
            k = xp.floor((2.0 * ai / us + bi) * uu + c[idx])
            inside = (k >= 0) & (k <= ni)
            fast = inside & (us >= 0.07) & (v <= v_r[idx])
            kk = xp.clip(k, 0.0, ni)
            lv = xp.log(v * alpha[idx] / (ai / (us * us) + bi))
            bound = (base[idx] + (ni + 1.0) * xp.log((ni - m[idx] + 1.0) / (ni - kk + 1.0))
                     + (kk + 0.5) * xp.log(ri * (ni - kk + 1.0) / (kk + 1.0))
                     - _stirling_tail(xp, kk) - _stirling_tail(xp, ni - kk))
            ok = fast | (inside & (lv <= bound))
        return ok, k

    used += _rejection_rounds(xp, key, counter + used, xp.nonzero(big)[0], out, 2, step)
    with np.errstate(all="ignore"):
        out = xp.where(trivial, 0.0, out)
        out = xp.where(flip, nn - out, out)
        out = xp.where(xp.isnan(pp) | xp.isnan(xp.broadcast_to(xp.asarray(count, dtype=np.float64), shape)
                                                  ).reshape(-1), np.nan, out)
    return out.reshape(shape), used


def binomial(xp, key, counter, count, prob, dtype):
    r, blocks = binomial_f64(xp, key, counter, count, prob)
    return r.astype(np.dtype(dtype)), blocks
