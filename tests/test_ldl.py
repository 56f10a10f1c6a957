"""linalg.ldl_factor / ldl_factor_ex / ldl_solve (Bunch-Kaufman, LAPACK's sytrf pivots) and geqrf / ormqr:
reconstruction and solves on cpu and npu; pivots, factors and errors against torch."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from conftest import host


def _sym(n, seed=0, batch=()):
    a = np.random.default_rng(seed).standard_normal(batch + (n, n))
    return a + np.swapaxes(a, -1, -2)


def _reconstruct(ld, piv):
    """P L D L^T P^T from LAPACK's lower-triangle storage (sytrf's pivots applied in order)."""
    n = ld.shape[0]
    a = np.zeros((n, n))
    blocks = []
    k = 0
    while k < n:
        blocks.append((k, 1 if piv[k] > 0 else 2))
        k += blocks[-1][1]
    # A = P_1 L_1 P_2 L_2 ... D ... L_2^T P_2^T L_1^T P_1^T, each step's block of D added as it is reached
    for k, s in reversed(blocks):
        d = np.zeros((n, n))
        d[k:k + s, k:k + s] = ld[k:k + s, k:k + s]
        if s == 2:
            d[k, k + 1] = d[k + 1, k] = ld[k + 1, k]
        low = np.eye(n)
        low[k + s:, k:k + s] = ld[k + s:, k:k + s]
        if s == 2:
            low[k + 1, k] = 0.0
        a = low @ (a + d) @ low.T
        p = abs(piv[k]) - 1
        kk = k + s - 1
        perm = np.arange(n)
        perm[[kk, p]] = perm[[p, kk]]
        a = a[perm][:, perm]
    return a


def test_factor_reconstructs_and_solves(device):
    for n, seed in ((1, 0), (4, 1), (7, 2), (12, 3)):
        a = _sym(n, seed)
        if n > 1:
            np.fill_diagonal(a, 0.0)          # zeros on the diagonal call for 2x2 blocks
        t = npusim.tensor(a, device=device)
        ld, piv, info = npusim.linalg.ldl_factor_ex(t)
        assert piv.dtype is npusim.int32 and info.item() == 0 and ld.shape == (n, n)
        ld_h, piv_h = host(ld), host(piv)
        assert np.all(np.triu(ld_h, 1) == 0.0)
        np.testing.assert_allclose(_reconstruct(ld_h, piv_h), a, atol=1e-10)
        b = np.random.default_rng(seed).standard_normal((n, 3))
        x = npusim.linalg.ldl_solve(ld, piv, npusim.tensor(b, device=device))
        np.testing.assert_allclose(host(x), np.linalg.solve(a, b), rtol=1e-8, atol=1e-10)


def test_batched_and_broadcast_solve(device):
    a = _sym(5, 4, batch=(3,))
    ld, piv = npusim.linalg.ldl_factor(npusim.tensor(a, device=device), hermitian=True)
    assert ld.shape == (3, 5, 5) and piv.shape == (3, 5) and type(npusim.linalg.ldl_factor(ld)).__name__ \
        == "linalg_ldl_factor"
    b = np.random.default_rng(5).standard_normal((2, 1, 5, 2))
    x = npusim.linalg.ldl_solve(ld, piv, npusim.tensor(b, device=device))
    assert x.shape == (2, 3, 5, 2)
    np.testing.assert_allclose(host(x), np.linalg.solve(a[None], b), rtol=1e-8, atol=1e-10)


def test_only_the_lower_triangle_is_read(device):
    a = _sym(6, 6)
    junk = a + np.triu(np.random.default_rng(7).standard_normal((6, 6)), 1)
    one = npusim.linalg.ldl_factor(npusim.tensor(a, device=device))
    two = npusim.linalg.ldl_factor(npusim.tensor(junk, device=device))
    assert host(one.LD).tolist() == host(two.LD).tolist() and host(one.pivots).tolist() == host(two.pivots).tolist()


def test_singular_and_errors(device):
    ld, piv, info = npusim.linalg.ldl_factor_ex(npusim.zeros(3, 3, device=device))
    assert info.item() == 1 and host(piv).tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="zero pivot block"):
        npusim.linalg.ldl_factor(npusim.zeros(3, 3, device=device))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 3 by 2"):
        npusim.linalg.ldl_factor(npusim.zeros(3, 2, device=device))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        npusim.linalg.ldl_factor(npusim.zeros(3, device=device))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        npusim.linalg.ldl_factor(npusim.zeros(3, 3, dtype=npusim.int64, device=device))
    with pytest.raises(NotImplementedError, match="ldl_factor_kernel_cpu"):
        npusim.linalg.ldl_factor(npusim.zeros(3, 3, dtype=npusim.float16, device=device))
    ld, piv = npusim.linalg.ldl_factor(npusim.tensor(_sym(4), device=device))
    with pytest.raises(RuntimeError, match="each A matrix is 4 by 4 but each b matrix is 3 by 2"):
        npusim.linalg.ldl_solve(ld, piv, npusim.zeros(3, 2, dtype=npusim.float64, device=device))
    with pytest.raises(IndexError):
        npusim.linalg.ldl_solve(ld, piv, npusim.zeros(4, dtype=npusim.float64, device=device))
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype"):
        npusim.linalg.ldl_solve(ld, piv, npusim.zeros(4, 2, device=device))
    with pytest.raises(RuntimeError, match=r"Expected LD.shape\[:-1\] and pivots.shape to be the same"):
        npusim.linalg.ldl_solve(ld, piv[:3], npusim.zeros(4, 2, dtype=npusim.float64, device=device))


def test_geqrf_and_ormqr(device):
    rng = np.random.default_rng(8)
    for m, n in ((5, 3), (4, 4), (3, 5)):
        a = rng.standard_normal((2, m, n))
        h, tau = npusim.geqrf(npusim.tensor(a, device=device))
        assert h.shape == (2, m, n) and tau.shape == (2, min(m, n))
        q = npusim.linalg.householder_product(h, tau) if m >= n else None
        r = np.triu(host(h))
        if q is not None:
            np.testing.assert_allclose(host(q) @ r[..., :n, :], a, atol=1e-12)
        if m >= n:
            c = rng.standard_normal((2, m, 2))
            qc = npusim.ormqr(h, tau, npusim.tensor(c, device=device))
            full_q = host(npusim.ormqr(h, tau, npusim.eye(m, dtype=npusim.float64, device=device).expand(2, m, m)))
            np.testing.assert_allclose(full_q[..., :n], host(q), atol=1e-12)
            np.testing.assert_allclose(np.swapaxes(full_q, -1, -2) @ full_q, np.broadcast_to(np.eye(m), (2, m, m)),
                                       atol=1e-12)
            np.testing.assert_allclose(host(qc), full_q @ c, atol=1e-12)
            back = npusim.ormqr(h, tau, qc, transpose=True)
            np.testing.assert_allclose(host(back), c, atol=1e-12)
            ct = rng.standard_normal((2, 3, m))
            right = h.ormqr(tau, npusim.tensor(ct, device=device), left=False)
            np.testing.assert_allclose(host(npusim.ormqr(h, tau, right, left=False, transpose=True)), ct, atol=1e-12)
    assert npusim.geqrf(npusim.zeros(0, 3, device=device)).tau.shape == (0,)
    with pytest.raises(RuntimeError, match="geqrf: input must have at least 2 dimensions"):
        npusim.geqrf(npusim.zeros(3, device=device))
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        npusim.geqrf(npusim.randn(3, 3, device=device, requires_grad=True))[0].sum().backward()


def test_ormqr_errors(device):
    h, tau = npusim.geqrf(npusim.randn(5, 3, device=device))
    c = npusim.randn(5, 2, device=device)
    for call, msg in ((lambda: npusim.ormqr(h, tau, npusim.randn(4, 2, device=device)), r"other.shape\[-2\] must be"),
                      (lambda: npusim.ormqr(h, tau, npusim.randn(2, 4, device=device), left=False),
                       r"other.shape\[-1\] must be equal to input.shape\[-2\]"),
                      (lambda: npusim.ormqr(h, tau[:2], c), r"tau.shape\[-1\] must be equal to min"),
                      (lambda: npusim.ormqr(h, tau.double(), c), "Expected input and tau to have the same dtype"),
                      (lambda: npusim.ormqr(h, tau, npusim.randn(5, device=device)), "other must have at least 2")):
        with pytest.raises(RuntimeError, match=msg):
            call()


@pytest.mark.oracle
def test_against_torch(device, torch):
    rng = np.random.default_rng(9)
    for n in (1, 3, 8, 30, 70):
        for kind in range(3):
            a = rng.standard_normal((n, n))
            if kind == 1:
                a = a + a.T
            if kind == 2:
                a = (a + a.T) * (rng.random((n, n)) < 0.3)
            for dt in (np.float64, np.float32):
                ours = npusim.linalg.ldl_factor_ex(npusim.tensor(a.astype(dt), device=device))
                theirs = torch.linalg.ldl_factor_ex(torch.tensor(a.astype(dt)))
                assert host(ours.pivots).tolist() == theirs.pivots.tolist()
                assert ours.info.item() == theirs.info.item()
                tol = 1e-9 if dt == np.float64 else 2e-3
                scale = max(1.0, np.abs(theirs.LD.numpy()).max())
                np.testing.assert_allclose(host(ours.LD) / scale, theirs.LD.numpy() / scale, atol=tol)
                if theirs.info.item() == 0:
                    b = rng.standard_normal((n, 2)).astype(dt)
                    x = npusim.linalg.ldl_solve(ours.LD, ours.pivots, npusim.tensor(b, device=device))
                    y = torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(b))
                    # both solves are backward stable: their relative residuals |Ax - b| / (|A| |x|) are a few eps
                    # (their solutions may differ by about eps * cond(A) * growth, large in float32)
                    a32 = a.astype(dt).astype(np.float64)

                    def residual(sol):
                        sol = sol.astype(np.float64)
                        return np.abs(a32 @ sol - b).max() / (np.abs(a32).max() * n * np.abs(sol).max())
                    assert residual(host(x)) <= 10 * residual(y.numpy()) + 100 * np.finfo(dt).eps
    for m, n in ((6, 4), (4, 6), (5, 5)):
        a = rng.standard_normal((2, m, n))
        h, tau = npusim.geqrf(npusim.tensor(a, device=device))
        th, ttau = torch.geqrf(torch.tensor(a))
        np.testing.assert_allclose(host(h), th.numpy(), atol=1e-12)
        np.testing.assert_allclose(host(tau), ttau.numpy(), atol=1e-12)
        if m < n:
            continue
        for left in (True, False):
            for transpose in (True, False):
                c = rng.standard_normal((2, m, 3) if left else (2, 3, m))
                hh = npusim.tensor(host(h), device=device, requires_grad=True)
                tt = npusim.tensor(host(tau), device=device, requires_grad=True)
                r = npusim.ormqr(hh, tt, npusim.tensor(c, device=device), left, transpose)
                th2, tt2 = th.clone().requires_grad_(), ttau.clone().requires_grad_()
                w = torch.ormqr(th2, tt2, torch.tensor(c), left, transpose)
                np.testing.assert_allclose(host(r), w.detach().numpy(), atol=1e-12)
                g = rng.standard_normal(w.shape)
                (r * npusim.tensor(g, device=device)).sum().backward()
                (w * torch.tensor(g)).sum().backward()
                np.testing.assert_allclose(host(hh.grad), th2.grad.numpy(), atol=1e-10)
                np.testing.assert_allclose(host(tt.grad), tt2.grad.numpy(), atol=1e-10)
