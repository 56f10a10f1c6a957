"""LDL^T factorization with Bunch-Kaufman pivoting, and its solve: LAPACK's sytf2 / sytrs (lower), over NumPy.

``ldl_factor`` follows the reference sytf2 step by step, so its pivots are LAPACK's: a 1-based int32 ``k`` for
a 1x1 block whose row and column k were swapped in, ``-p`` twice for a 2x2 block whose second row and column
were swapped with p. Only the lower triangle of the input is read. ``LD`` holds L's multipliers below the
diagonal and D's blocks on (and, for a 2x2 block, just below) it; its strict upper triangle is zero, as
torch returns it. ``info`` is the first (1-based) column whose pivot block is exactly zero, 0 when none.

The loops run over columns on the host (each step a vectorised rank-1 or rank-2 update): a CuPy input is
copied to the host and its results back, as the pivot search reads every column's values anyway.
"""
from __future__ import annotations

import numpy as np

from .array_api import namespace_of, to_host

# Bunch-Kaufman's threshold: (1 + sqrt(17)) / 8 balances the growth of 1x1 and 2x2 pivots
_ALPHA = (1.0 + np.sqrt(17.0)) / 8.0


def _iamax(v):
    """BLAS's i?amax: the first index of the largest magnitude (0 for an empty vector)."""
    return int(np.argmax(np.abs(v))) if v.size else 0


def _sytf2_lower(a):
    """Factor one symmetric matrix (lower triangle) in place; return (pivots, info)."""
    n = a.shape[0]
    ipiv = np.zeros(n, np.int32)
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(a[k, k])
        if k < n - 1:
            imax = k + 1 + _iamax(a[k + 1:, k])
            colmax = abs(a[imax, k])
        else:
            imax, colmax = k, 0.0
        if max(absakk, colmax) == 0.0 or np.isnan(absakk):
            if info == 0:
                info = k + 1
            kp = k
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                # the largest off-diagonal magnitude in row / column imax
                jmax = k + _iamax(a[imax, k:imax])
                rowmax = abs(a[imax, jmax])
                if imax < n - 1:
                    jmax = imax + 1 + _iamax(a[imax + 1:, imax])
                    rowmax = max(rowmax, abs(a[jmax, imax]))
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(a[imax, imax]) >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp, kstep = imax, 2
            kk = k + kstep - 1
            if kp != kk:
                # swap rows and columns kk and kp of the trailing lower triangle
                if kp < n - 1:
                    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
                seg = slice(kk + 1, kp)
                tmp = a[seg, kk].copy()
                a[seg, kk] = a[kp, seg]
                a[kp, seg] = tmp
                a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
                if kstep == 2:
                    a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / a[k, k]
                    x = a[k + 1:, k].copy()
                    a[k + 1:, k + 1:] -= d11 * np.outer(x, x)
                    a[k + 1:, k] *= d11
            elif k < n - 2:
                d21 = a[k + 1, k]
                d11 = a[k + 1, k + 1] / d21
                d22 = a[k, k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                ck, ck1 = a[k + 2:, k].copy(), a[k + 2:, k + 1].copy()
                wk = d21 * (d11 * ck - ck1)
                wkp1 = d21 * (d22 * ck1 - ck)
                a[k + 2:, k + 2:] -= np.outer(ck, wk) + np.outer(ck1, wkp1)
                a[k + 2:, k] = wk
                a[k + 2:, k + 1] = wkp1
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = ipiv[k + 1] = -(kp + 1)
        k += kstep
    return ipiv, info


def ldl_factor(a):
    """(LD, pivots, info) of every matrix of ``a`` (..., n, n), float32 or float64, as LAPACK's sytrf('L')."""
    xp, a = namespace_of(a), to_host(a)
    batch, n = a.shape[:-2], a.shape[-1]
    work = np.array(a, dtype=a.dtype, copy=True).reshape((-1, n, n))
    pivots = np.zeros((work.shape[0], n), np.int32)
    infos = np.zeros(work.shape[0], np.int32)
    with np.errstate(all="ignore"):
        for b in range(work.shape[0]):
            m = np.tril(work[b])           # the upper triangle is never read, and zero in the result
            pivots[b], infos[b] = _sytf2_lower(m)
            work[b] = np.tril(m)
    return (xp.asarray(work.reshape(batch + (n, n))), xp.asarray(pivots.reshape(batch + (n,))),
            xp.asarray(infos.reshape(batch)))


def _sytrs_lower(ld, ipiv, b):
    """Solve A X = B in place of ``b`` (n, nrhs) from one matrix's factors."""
    n = ld.shape[0]
    k = 0
    while k < n:                                 # L D Y = B, forwards
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            if k < n - 1:
                b[k + 1:] -= np.outer(ld[k + 1:, k], b[k])
            b[k] /= ld[k, k]
            k += 1
        else:
            kp = -ipiv[k] - 1
            if kp != k + 1:
                b[[k + 1, kp]] = b[[kp, k + 1]]
            if k < n - 2:
                b[k + 2:] -= np.outer(ld[k + 2:, k], b[k]) + np.outer(ld[k + 2:, k + 1], b[k + 1])
            akm1k = ld[k + 1, k]
            akm1 = ld[k, k] / akm1k
            ak = ld[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k] = (ak * bkm1 - bk) / denom
            b[k + 1] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:                                # L^T X = Y, backwards
        if ipiv[k] > 0:
            if k < n - 1:
                b[k] -= ld[k + 1:, k] @ b[k + 1:]
            kp = ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            if k < n - 1:
                b[k] -= ld[k + 1:, k] @ b[k + 1:]
                b[k - 1] -= ld[k + 1:, k - 1] @ b[k + 1:]
            kp = -ipiv[k] - 1
            if kp != k:
                b[[k, kp]] = b[[kp, k]]
            k -= 2
    return b


def ldl_solve(ld, pivots, b):
    """X with A X = B for the factors (``ld``, ``pivots``) of A; batch dims broadcast."""
    xp = namespace_of(b)
    ld, pivots, b = to_host(ld), to_host(pivots), to_host(b)
    n = ld.shape[-1]
    batch = np.broadcast_shapes(ld.shape[:-2], pivots.shape[:-1], b.shape[:-2])
    lds = np.broadcast_to(ld, batch + (n, n)).reshape((-1, n, n))
    pivs = np.broadcast_to(pivots, batch + (n,)).reshape((-1, n)).astype(np.int64)
    x = np.array(np.broadcast_to(b, batch + b.shape[-2:]), dtype=b.dtype, copy=True).reshape((-1,) + b.shape[-2:])
    with np.errstate(all="ignore"):
        for i in range(x.shape[0]):
            _sytrs_lower(lds[i], pivs[i], x[i])
    return xp.asarray(x.reshape(batch + b.shape[-2:]))
