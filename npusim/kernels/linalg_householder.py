"""geqrf's array kernel: Householder QR in LAPACK's layout (R on and above the diagonal, the reflectors'
tails below it, and their scalars tau), from NumPy's (or CuPy's) ``qr(mode="raw")``, which returns LAPACK's
geqrf output transposed."""
from __future__ import annotations

from .array_api import namespace_of


def geqrf(a):
    """(a, tau) of every matrix of ``a`` (..., m, n): LAPACK's geqrf."""
    xp = namespace_of(a)
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if a.size == 0:
        return xp.array(a, copy=True), xp.zeros(batch + (k,), a.dtype)
    h, tau = xp.linalg.qr(a, mode="raw")
    h = xp.ascontiguousarray(xp.swapaxes(h, -1, -2)).astype(a.dtype, copy=False)
    return h, xp.ascontiguousarray(tau).astype(a.dtype, copy=False)
