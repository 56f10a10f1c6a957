"""svd_lowrank, pca_lowrank and lobpcg: against exact decompositions (NumPy) on cpu and npu, and torch as
oracle on what does not depend on the random draws (npusim's generators are not torch's).

Tolerances: for A of rank r <= q the randomized range finder captures range(A) exactly, so the computed
singular values are within c * eps * |A|_2 of the exact ones (backward-stable QR and SVD), c taken as
100 * max(m, n). LOBPCG stops when each Ritz pair's relative residual is below tol: its eigenvalues are then
within about tol^2 * |A| (Rayleigh quotient) and its eigenvectors within tol * |A| / gap of the exact ones.
"""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


def _low_rank(m, n, r, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, r)) @ np.diag(np.linspace(5.0, 1.0, r)) @ rng.standard_normal((r, n))


def _spd(m, seed=0, top=(30.0, 20.0, 12.0)):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((m, m)))
    ev = np.linspace(1.0, 5.0, m)
    ev[-len(top):] = sorted(top)
    a = q @ np.diag(ev) @ q.T
    return (a + a.T) / 2, ev


def _bound(a):
    m, n = a.shape[-2:]
    return 100 * max(m, n) * np.finfo(a.dtype).eps * np.linalg.norm(a, 2)


@pytest.mark.parametrize("shape", [(30, 12), (12, 30)])
def test_svd_lowrank_exact_for_low_rank(device, shape):
    a = _low_rank(*shape, r=4)
    npusim.manual_seed(0)
    u, s, v = npusim.svd_lowrank(npusim.tensor(a, device=device), q=6)
    assert u.shape == (shape[0], 6) and s.shape == (6,) and v.shape == (shape[1], 6)
    exact = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(host(s)[:4], exact[:4], atol=_bound(a))
    np.testing.assert_allclose(host(u)[:, :4] * host(s)[:4] @ host(v)[:, :4].T, a, atol=_bound(a))
    np.testing.assert_allclose(host(u).T @ host(u), np.eye(6), atol=1e-12)


def test_svd_lowrank_with_m_and_batches(device):
    a = _low_rank(20, 15, r=3, seed=1)
    mean = np.random.default_rng(2).standard_normal((1, 15))
    u, s, v = npusim.svd_lowrank(npusim.tensor(a + mean, device=device), q=5,
                                 M=npusim.tensor(mean, device=device))
    np.testing.assert_allclose(host(s)[:3], np.linalg.svd(a, compute_uv=False)[:3], atol=_bound(a))
    batch = np.stack([_low_rank(10, 8, 2, seed=i) for i in range(3)])
    u, s, v = npusim.svd_lowrank(npusim.tensor(batch, device=device), q=3, niter=1)
    assert u.shape == (3, 10, 3) and s.shape == (3, 3) and v.shape == (3, 8, 3)
    np.testing.assert_allclose(host(s)[:, :2], np.linalg.svd(batch, compute_uv=False)[:, :2], atol=1e-10)


def test_pca_lowrank(device):
    a = _low_rank(40, 10, r=3, seed=3) + 7.0        # a common offset: centring removes it
    centred = a - a.mean(axis=0, keepdims=True)
    u, s, v = npusim.pca_lowrank(npusim.tensor(a, device=device))
    assert u.shape == (40, 6) and s.shape == (6,) and v.shape == (10, 6)
    np.testing.assert_allclose(host(s)[:3], np.linalg.svd(centred, compute_uv=False)[:3], atol=_bound(centred))
    u, s, v = npusim.pca_lowrank(npusim.tensor(a, device=device), q=2, center=False)
    assert s.shape == (2,)
    with pytest.raises(ValueError, match=r"q\(=11\) must be non-negative integer and not greater than min\(m, n\)=10"):
        npusim.pca_lowrank(npusim.tensor(a, device=device), q=11)
    with pytest.raises(ValueError, match=r"niter\(=-1\) must be non-negative integer"):
        npusim.pca_lowrank(npusim.tensor(a, device=device), niter=-1)


def test_lobpcg_largest_smallest_generalised(device):
    a, ev = _spd(40)
    t = npusim.tensor(a, device=device)
    tol = 1e-6
    e, x = npusim.lobpcg(t, k=3, tol=tol)
    np.testing.assert_allclose(host(e), [30.0, 20.0, 12.0], atol=30 * tol)
    exact_vecs = np.linalg.eigh(a)[1][:, ::-1][:, :3]
    np.testing.assert_allclose(np.abs(host(x).T @ exact_vecs), np.eye(3), atol=30 * tol)
    e, x = npusim.lobpcg(t, k=2, largest=False, method="basic", tol=tol)
    np.testing.assert_allclose(host(e), np.sort(ev)[:2], atol=30 * tol)
    b = np.diag(np.linspace(1.0, 2.0, 40))
    e, x = npusim.lobpcg(t, k=2, B=npusim.tensor(b, device=device), tol=tol)
    from_eig = np.sort(np.linalg.eigvals(np.linalg.solve(b, a)).real)[::-1][:2]
    np.testing.assert_allclose(host(e), from_eig, rtol=30 * tol)
    x0 = npusim.randn(40, 3, dtype=npusim.float64, device=device)
    e, x = npusim.lobpcg(npusim.stack([t, t]), X=npusim.stack([x0, x0]), tol=tol)
    assert e.shape == (2, 3) and x.shape == (2, 40, 3)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        npusim.lobpcg(t, k=14)


def test_lobpcg_tracker_and_backward(device):
    a, _ = _spd(30, seed=4)
    seen = []
    npusim.lobpcg(npusim.tensor(a, device=device), k=2, tracker=lambda worker: seen.append(worker.ivars["istep"]))
    assert seen and seen == sorted(seen)
    t = npusim.tensor(a, device=device, requires_grad=True)
    e, x = npusim.lobpcg(t, k=1, tol=1e-10)
    e.sum().backward()
    v = np.linalg.eigh(a)[1][:, -1]
    np.testing.assert_allclose(host(t.grad), np.outer(v, v), atol=1e-6)     # d lambda_max / dA = v v^T


@pytest.mark.oracle
def test_against_torch(device, torch):
    a = _low_rank(25, 14, r=4, seed=5)
    s1 = npusim.svd_lowrank(npusim.tensor(a, device=device), q=6)[1]
    s2 = torch.svd_lowrank(torch.tensor(a), q=6)[1]
    np.testing.assert_allclose(host(s1)[:4], s2.numpy()[:4], atol=2 * _bound(a))
    p1 = npusim.pca_lowrank(npusim.tensor(a, device=device), q=4)[1]
    p2 = torch.pca_lowrank(torch.tensor(a), q=4)[1]
    np.testing.assert_allclose(host(p1)[:3], p2.numpy()[:3], atol=2 * _bound(a))
    spd, _ = _spd(36, seed=6)
    tol = 1e-7
    for largest in (True, False):
        e1, x1 = npusim.lobpcg(npusim.tensor(spd, device=device), k=3, largest=largest, tol=tol)
        e2, x2 = torch.lobpcg(torch.tensor(spd), k=3, largest=largest, tol=tol)
        np.testing.assert_allclose(host(e1), e2.numpy(), atol=50 * tol)
        np.testing.assert_allclose(np.abs(host(x1).T @ x2.numpy()), np.eye(3), atol=50 * tol)
    # the gradients of a sign-invariant loss of the eigenpairs (the partial-eigenspace backward)
    w = np.random.default_rng(7).standard_normal((36, 2))
    t1 = npusim.tensor(spd, device=device, requires_grad=True)
    t2 = torch.tensor(spd, requires_grad=True)
    e1, x1 = npusim.lobpcg(t1, k=2, tol=1e-10)
    e2, x2 = torch.lobpcg(t2, k=2, tol=1e-10)
    (e1.sum() + (x1 ** 2 * npusim.tensor(w, device=device)).sum()).backward()
    (e2.sum() + (x2 ** 2 * torch.tensor(w)).sum()).backward()
    np.testing.assert_allclose(host(t1.grad), t2.grad.numpy(), atol=1e-5)
