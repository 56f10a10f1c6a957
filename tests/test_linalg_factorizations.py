"""Matrix decompositions and solvers: det, slogdet, inv, solve, cholesky, qr, eigh, svd, pinv, matrix_rank,
matrix_power, lstsq, multi_dot, the 2-norms, and the older top-level names (npusim.det, npusim.svd...).

Values and invariants by hand and against NumPy, float64 gradchecks of every derivative, and
the same cases, errors included, against torch (``oracle``).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import npusim
from conftest import host
from npusim.autograd import gradcheck

LA = npusim.linalg
RNG = np.random.default_rng(7)
SQ = RNG.standard_normal((2, 3, 3))
TALL = RNG.standard_normal((2, 4, 3))
RHS = RNG.standard_normal((2, 3, 2))
SPD = SQ @ SQ.transpose(0, 2, 1) + 3 * np.eye(3)


def _t(a, device, dtype=npusim.float64, requires_grad=False):
    return npusim.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


# --- values ------------------------------------------------------------------------------------------------------

def test_det_inv_solve_match_numpy(device):
    A, B = _t(SQ, device), _t(RHS, device)
    np.testing.assert_allclose(host(LA.det(A)), np.linalg.det(SQ))
    np.testing.assert_allclose(host(npusim.det(A)), np.linalg.det(SQ))
    np.testing.assert_allclose(host(LA.inv(A)), np.linalg.inv(SQ))
    np.testing.assert_allclose(host(A.inverse()), np.linalg.inv(SQ))
    np.testing.assert_allclose(host(LA.solve(A, B)), np.linalg.solve(SQ, RHS))
    # a batch of vectors, and X A = B
    np.testing.assert_allclose(host(LA.solve(A, B[..., 0])), np.linalg.solve(SQ, RHS[..., :1])[..., 0])
    np.testing.assert_allclose(host(LA.solve(A, B.mT, left=False) @ A), RHS.transpose(0, 2, 1), atol=1e-12)
    sign, logabs = LA.slogdet(A)
    np.testing.assert_allclose(host(sign) * np.exp(host(logabs)), np.linalg.det(SQ))
    assert LA.det(A).device.type == device


def test_hand_checked_values(device):
    A = _t([[4., 7.], [2., 6.]], device, npusim.float32)
    d = LA.det(A)
    assert d.dtype is npusim.float32 and abs(d.item() - 10.0) < 1e-5
    np.testing.assert_allclose(host(LA.inv(A)), [[0.6, -0.7], [-0.2, 0.4]], rtol=1e-5)
    np.testing.assert_allclose(host(LA.cholesky(_t([[4., 2.], [2., 5.]], device))), [[2., 0.], [1., 2.]])
    np.testing.assert_allclose(host(LA.eigvalsh(_t([[2., 1.], [1., 2.]], device))), [1., 3.])
    np.testing.assert_allclose(host(LA.svdvals(_t([[3., 0.], [0., -4.]], device))), [4., 3.])
    assert LA.matrix_rank(_t(np.ones((3, 3)), device)).item() == 1
    assert LA.matrix_rank(_t(np.ones((3, 3)), device)).dtype is npusim.int64
    assert math.isnan(npusim.logdet(_t(-np.eye(3), device)).item())
    assert npusim.logdet(_t(np.zeros((2, 2)), device)).item() == -math.inf
    np.testing.assert_allclose(host(LA.matrix_power(_t([[1., 1.], [0., 1.]], device), 5)), [[1., 5.], [0., 1.]])
    np.testing.assert_allclose(host(LA.matrix_power(_t(2 * np.eye(2), device), -2)), 0.25 * np.eye(2))
    ints = npusim.ones(2, 2, dtype=npusim.int64, device=device)
    assert host(LA.matrix_power(ints, 3)).tolist() == [[4, 4], [4, 4]]
    np.testing.assert_allclose(host(LA.matrix_norm(_t([[3., 0.], [0., -4.]], device), 2)), 4.)
    np.testing.assert_allclose(host(LA.matrix_norm(_t([[3., 0.], [0., -4.]], device), "nuc")), 7.)
    np.testing.assert_allclose(host(LA.norm(_t([[3., 0.], [0., -4.]], device), -2)), 3.)


def test_factorizations_reconstruct(device):
    A = _t(TALL, device)
    q, r = LA.qr(A)
    assert q.shape == (2, 4, 3) and r.shape == (2, 3, 3)
    np.testing.assert_allclose(host(q @ r), TALL, atol=1e-12)
    np.testing.assert_allclose(np.triu(host(r)), host(r))
    qc, rc = LA.qr(A, mode="complete")
    assert qc.shape == (2, 4, 4) and rc.shape == (2, 4, 3)
    qr_, r_only = LA.qr(A, mode="r")
    assert qr_.shape == (0,) and np.allclose(np.abs(host(r_only)), np.abs(host(r)))
    q2, _ = npusim.qr(A, some=False)
    assert q2.shape == (2, 4, 4)
    u, s, vh = LA.svd(A, full_matrices=False)
    np.testing.assert_allclose(host(u * s.unsqueeze(-2) @ vh), TALL, atol=1e-12)
    assert LA.svd(A).U.shape == (2, 4, 4)
    U, S, V = npusim.svd(A)
    np.testing.assert_allclose(host(U * S.unsqueeze(-2) @ V.mT), TALL, atol=1e-12)
    w, v = LA.eigh(_t(SPD, device))
    np.testing.assert_allclose(host(v * w.unsqueeze(-2) @ v.mT), SPD, atol=1e-12)
    assert (np.diff(host(w), axis=-1) > 0).all()
    low = LA.cholesky(_t(SPD, device))
    np.testing.assert_allclose(host(low @ low.mT), SPD, atol=1e-12)
    up = npusim.cholesky(_t(SPD, device), upper=True)
    np.testing.assert_allclose(host(up.mT @ up), SPD, atol=1e-12)
    np.testing.assert_allclose(host(npusim.cholesky_solve(_t(RHS, device), low)), np.linalg.solve(SPD, RHS))
    np.testing.assert_allclose(host(npusim.cholesky_inverse(up, upper=True)), np.linalg.inv(SPD))


def test_pinv_lstsq_multi_dot(device):
    A = _t(TALL, device)
    np.testing.assert_allclose(host(LA.pinv(A)), np.linalg.pinv(TALL), atol=1e-12)
    np.testing.assert_allclose(host(npusim.pinverse(A)), np.linalg.pinv(TALL), atol=1e-12)
    np.testing.assert_allclose(host(LA.pinv(_t(SPD, device), hermitian=True)), np.linalg.inv(SPD), atol=1e-12)
    b = RNG.standard_normal((4, 2))
    res = LA.lstsq(A[0], _t(b, device))
    np.testing.assert_allclose(host(res.solution), np.linalg.lstsq(TALL[0], b, rcond=None)[0])
    assert res.rank.item() == 3 and res.residuals.shape == (0,)
    v = _t([1., 2.], device)
    M = _t([[1., 0., 2.], [0., 1., 0.]], device)
    assert host(LA.multi_dot([v, M, _t([1., 1., 1.], device)])).item() == 5.


def test_inv_ex_and_cholesky_ex_report_info(device):
    A = _t(np.stack([np.eye(2), [[1., 2.], [2., 4.]]]), device)
    assert host(LA.inv_ex(A).info).tolist() == [0, 2]
    assert LA.inv_ex(A).info.dtype is npusim.int32
    assert host(LA.cholesky_ex(A).info).tolist() == [0, 2]
    assert host(LA.solve_ex(A, A).info).tolist() == [0, 2]


# --- gradients ----------------------------------------------------------------------------------------------------

def _sym(a):
    return a + a.mT


def _svd_sign_free(a):
    u, s, vh = LA.svd(a, full_matrices=False)
    return u @ vh, s


GRAD_CASES = {
    "det": (lambda a: LA.det(a), [SQ]),
    "slogdet": (lambda a: LA.slogdet(a).logabsdet, [SQ]),
    "logdet": (lambda a: npusim.logdet(a), [SPD]),
    "inv": (lambda a: LA.inv(a), [SQ]),
    "solve": (lambda a, b: LA.solve(a, b), [SQ, RHS]),
    "solve_vector_broadcast": (lambda a, b: LA.solve(a, b), [SQ, RHS[0, :, 0]]),
    "solve_right": (lambda a, b: LA.solve(a, b.mT, left=False), [SQ, RHS]),
    "cholesky": (lambda a: LA.cholesky(a @ a.mT + 3 * npusim.eye(3, dtype=a.dtype, device=a.device)), [SQ]),
    "cholesky_upper": (lambda a: LA.cholesky(a @ a.mT + 3 * npusim.eye(3, dtype=a.dtype, device=a.device),
                                             upper=True), [SQ]),
    "qr_tall": (lambda a: tuple(LA.qr(a)), [TALL]),
    "qr_wide": (lambda a: tuple(LA.qr(a)), [TALL.transpose(0, 2, 1).copy()]),
    "qr_only_r": (lambda a: LA.qr(a).R, [SQ]),
    "eigh": (lambda a: tuple(LA.eigh(_sym(a))), [SQ]),
    "eigvalsh": (lambda a: LA.eigvalsh(_sym(a)), [SQ]),
    # U and V are defined up to sign: differentiate what is not
    "svd_tall": (lambda a: _svd_sign_free(a), [TALL]),
    "svd_wide": (lambda a: _svd_sign_free(a), [TALL.transpose(0, 2, 1).copy()]),
    "svdvals": (lambda a: LA.svdvals(a), [TALL]),
    "pinv": (lambda a: LA.pinv(a), [TALL]),
    "matrix_power": (lambda a: LA.matrix_power(a, -3), [SQ]),
    "lstsq": (lambda a, b: LA.lstsq(a, b).solution, [TALL, RNG.standard_normal((2, 4, 2))]),
    "matrix_norm_2": (lambda a: LA.matrix_norm(a, 2), [TALL]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(device, name):
    fn, arrays = GRAD_CASES[name]
    assert gradcheck(fn, tuple(_t(a, device, requires_grad=True) for a in arrays))


def test_det_gradient_by_hand(device):
    A = _t([[2., 1.], [1., 3.]], device, requires_grad=True)
    LA.det(A).backward()
    # d det / dA is the cofactor matrix
    np.testing.assert_allclose(host(A.grad), [[3., -1.], [-1., 2.]])


def test_eigvalsh_of_a_constant_does_not_require_grad():
    A = _t(np.eye(2), "cpu")
    w = LA.eigvalsh(A)
    assert not w.requires_grad


# --- errors -------------------------------------------------------------------------------------------------------

def test_errors(device):
    singular = _t([[1., 2.], [2., 4.]], device)
    with pytest.raises(LA.LinAlgError, match=r"linalg.inv: The diagonal element 2 is zero, the inversion could "
                                              r"not be completed because the input matrix is singular."):
        LA.inv(singular)
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): The solver failed"):
        LA.solve(npusim.stack([npusim.eye(2, dtype=npusim.float64, device=device), singular]),
                 npusim.ones(2, 2, dtype=npusim.float64, device=device))
    with pytest.raises(RuntimeError, match="the leading minor of order 1 is not positive-definite"):
        LA.cholesky(-npusim.eye(3, device=device))
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        LA.det(npusim.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        LA.inv(npusim.ones(2, 2, dtype=npusim.int64, device=device))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        LA.qr(npusim.ones(3, device=device))
    with pytest.raises(RuntimeError, match="qr received unrecognized mode 'foo'"):
        LA.qr(npusim.eye(2, device=device), mode="foo")


# --- against torch ------------------------------------------------------------------------------------------------

ORACLE_CASES = {
    "det": lambda L, A: L.linalg.det(A),
    "slogdet": lambda L, A: tuple(L.linalg.slogdet(A)),
    "inv": lambda L, A: L.linalg.inv(A),
    "solve": lambda L, A: L.linalg.solve(A, A[..., :2]),
    "solve_vector": lambda L, A: L.linalg.solve(A, A[0, 0]),
    "cholesky": lambda L, A: L.linalg.cholesky(A @ A.mT + L.eye(3, dtype=A.dtype, device=A.device)),
    "qr_R_abs": lambda L, A: L.linalg.qr(A).R.abs(),
    "eigvalsh": lambda L, A: L.linalg.eigvalsh(A + A.mT),
    "svdvals": lambda L, A: L.linalg.svdvals(A),
    "pinv": lambda L, A: L.linalg.pinv(A[..., :2]),
    "pinv_hermitian": lambda L, A: L.linalg.pinv(A @ A.mT, hermitian=True),
    "matrix_rank": lambda L, A: L.linalg.matrix_rank(A[..., :1] @ A[..., :1].mT),
    "matrix_power": lambda L, A: L.linalg.matrix_power(A, -2),
    "lstsq": lambda L, A: L.linalg.lstsq(A[0], A[0, :, :2]).solution,
    "logdet": lambda L, A: L.logdet(A),
    "pinverse": lambda L, A: L.pinverse(A),
    "cholesky_inverse": lambda L, A: L.cholesky_inverse(L.linalg.cholesky(A @ A.mT + L.eye(3, dtype=A.dtype, device=A.device))),
    "multi_dot": lambda L, A: L.linalg.multi_dot([A[0], A[1], A[0, 0]]),
    "matrix_norm_nuc": lambda L, A: L.linalg.matrix_norm(A, "nuc", keepdim=True),
    "norm_-2_dims": lambda L, A: L.linalg.norm(A, -2, dim=(0, 2)),
    # errors
    "singular_inv": lambda L, A: L.linalg.inv(L.ones(3, 3, dtype=A.dtype)),
    "not_pd": lambda L, A: L.linalg.cholesky(L.stack([L.eye(2, dtype=A.dtype), -L.eye(2, dtype=A.dtype)])),
    "non_square": lambda L, A: L.linalg.slogdet(A[..., :2]),
    "int_input": lambda L, A: L.linalg.det(L.ones(2, 2, dtype=L.int32)),
    "eigh_uplo": lambda L, A: L.linalg.eigh(A, UPLO="X"),
    "solve_shapes": lambda L, A: L.linalg.solve(A, L.ones(4, dtype=A.dtype, device=A.device)),
    "solve_dtypes": lambda L, A: L.linalg.solve(A, A.float()),
    "lstsq_rows": lambda L, A: L.linalg.lstsq(A, L.ones(2, 4, 1, dtype=A.dtype)),
    "multi_dot_one": lambda L, A: L.linalg.multi_dot([A[0]]),
}


def _outcome(L, fn, A):
    try:
        r = fn(L, A)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__.lstrip("_"), str(e)   # torch's class is torch._C._LinAlgError
    rs = r if isinstance(r, tuple) else (r,)
    return [(np.asarray(x.detach().cpu().numpy()), str(x.dtype).split(".")[-1]) for x in rs]


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(ORACLE_CASES))
def test_against_torch(torch, device, name):
    fn = ORACLE_CASES[name]
    got = _outcome(npusim, fn, _t(SQ, device))
    want = _outcome(torch, fn, torch.tensor(SQ, dtype=torch.float64))
    if isinstance(want, tuple):
        assert got == want
        return
    assert len(got) == len(want)
    for (g, gd), (w, wd) in zip(got, want):
        assert gd == wd and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["det", "slogdet", "inv", "solve", "cholesky", "eigh", "svd", "qr", "pinv"])
def test_gradients_against_torch(torch, device, name):
    fns = {
        "det": lambda L, a: L.linalg.det(a),
        "slogdet": lambda L, a: L.linalg.slogdet(a).logabsdet,
        "inv": lambda L, a: L.linalg.inv(a),
        "solve": lambda L, a: L.linalg.solve(a, a[..., 0]),
        "cholesky": lambda L, a: L.linalg.cholesky(a @ a.mT + L.eye(3, dtype=a.dtype, device=a.device)),
        "eigh": lambda L, a: L.linalg.eigh(a + a.mT).eigenvalues,
        "svd": lambda L, a: L.linalg.svdvals(a),
        "qr": lambda L, a: L.linalg.qr(a).R.abs(),
        "pinv": lambda L, a: L.linalg.pinv(a[..., :2]),
    }
    weights = RNG.standard_normal(64)
    grads = []
    for L, x in ((npusim, _t(SQ, device, requires_grad=True)),
                 (torch, torch.tensor(SQ, dtype=torch.float64, requires_grad=True))):
        out = fns[name](L, x)
        w = L.tensor(weights[:out.numel()].reshape(tuple(out.shape)), dtype=out.dtype)
        if L is npusim:
            w = w.to(device)
        (out * w).sum().backward()
        grads.append(np.asarray(x.grad.detach().cpu().numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-8, atol=1e-10)


def test_float32_results_stay_float32(device):
    A = _t(SPD, device, npusim.float32)
    for r in (LA.det(A), LA.inv(A), LA.cholesky(A), LA.eigh(A).eigenvalues, LA.svd(A).S, LA.qr(A).Q, LA.pinv(A)):
        assert r.dtype is npusim.float32
