"""Randomized low-rank SVD and PCA (``npusim.svd_lowrank``, ``npusim.pca_lowrank``): torch's torch/_lowrank.py
algorithms (Halko, Martinsson and Tropp 2009, algorithms 4.4 and 5.1) over npusim's public functions.

The random test matrix comes from ``npusim.randn`` on the input's device, as torch draws it from
``torch.randn``: the same seed gives the same draw sequence within npusim, but npusim's generators are not
torch's, so the basis differs from torch's run by run. What is compared with torch, and with exact
decompositions, is therefore what does not depend on the draw:

* when A has rank r <= q, the range of A R is the range of A (almost surely), so the first r singular values
  are A's own up to the rounding of the QR and SVD steps: both are backward stable, so each value is within
  c * eps * ||A||_2 of the exact one, c a small multiple of max(m, n) (the tests take 100 * max(m, n));
* the singular vectors of well-separated values agree up to sign within c * eps * ||A||_2 / gap.
"""
from __future__ import annotations

import npusim

from ._lobpcg import _floating_dtype  # torch._linalg_utils.get_floating_dtype

__all__ = ["svd_lowrank", "pca_lowrank"]


def get_approximate_basis(A, q, niter=2, M=None):  # noqa: N803
    """An (m, q) matrix Q with orthonormal columns whose range approximates A's (of A - M when M is given):
    a Gaussian sketch refined by ``niter`` subspace iterations, re-orthonormalised by QR at each step."""
    niter = 2 if niter is None else niter
    dtype = _floating_dtype(A)
    R = npusim.randn(A.shape[-1], q, dtype=dtype, device=A.device)  # noqa: N806
    X = npusim.matmul(A, R)  # noqa: N806
    if M is not None:
        X = X - npusim.matmul(M, R)  # noqa: N806
    Q = npusim.linalg.qr(X).Q  # noqa: N806
    for _ in range(niter):
        X = npusim.matmul(A.mH, Q)  # noqa: N806
        if M is not None:
            X = X - npusim.matmul(M.mH, Q)  # noqa: N806
        Q = npusim.linalg.qr(X).Q  # noqa: N806
        X = npusim.matmul(A, Q)  # noqa: N806
        if M is not None:
            X = X - npusim.matmul(M, Q)  # noqa: N806
        Q = npusim.linalg.qr(X).Q  # noqa: N806
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):  # noqa: N803
    r"""svd_lowrank(A, q=6, niter=2, M=None) -> (Tensor, Tensor, Tensor): an approximate truncated SVD
    (U, S, V) of A (of A - M when M is given) with A ~ U diag(S) V^H, from a rank-``q`` randomized range
    finder with ``niter`` subspace iterations (Halko et al., 2009). Batched inputs are supported."""
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.size())  # noqa: N806
    if m < n:   # work with the tall one: the basis is then the smaller side
        A = A.mH  # noqa: N806
        if M is not None:
            M = M.mH  # noqa: N806
    Q = get_approximate_basis(A, q, niter=niter, M=M)  # noqa: N806
    B = npusim.matmul(Q.mH, A)  # noqa: N806
    if M is not None:
        B = B - npusim.matmul(Q.mH, M)  # noqa: N806
    U, S, Vh = npusim.linalg.svd(B, full_matrices=False)  # noqa: N806
    V = Vh.mH  # noqa: N806
    U = Q.matmul(U)  # noqa: N806
    if m < n:
        U, V = V, U  # noqa: N806
    return U, S, V


def pca_lowrank(A, q=None, center=True, niter=2):  # noqa: N803
    r"""pca_lowrank(A, q=None, center=True, niter=2) -> (Tensor, Tensor, Tensor): the principal components of the
    rows of A: ``svd_lowrank`` of A with its column means subtracted (when ``center``), ``q`` defaulting to
    min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (q >= 0 and q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not (niter >= 0):
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter, M=None)
    C = A.mean(dim=(-2,), keepdim=True)  # noqa: N806
    return svd_lowrank(A - C, q, niter=niter, M=None)
