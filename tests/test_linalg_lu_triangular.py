"""Triangular solves, LU (factor, unpack, solve, the legacy names), Householder products, the matrix
exponential and the small torch.linalg helpers (diagonal, vander, tensorinv, tensorsolve, cond).

Values against NumPy and reconstruction identities, float64 gradchecks, torch's errors, and values,
pivots and gradients against torch (``oracle``).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import npusim
from conftest import checked_on_device, host, reported_later
from npusim.kernels import device_checks as DC
from npusim.autograd import gradcheck

LA = npusim.linalg
RNG = np.random.default_rng(11)
SQ = RNG.standard_normal((2, 4, 4))
RHS = RNG.standard_normal((2, 4, 3))
# well conditioned triangles: a dominant diagonal keeps the gradchecks' finite differences accurate
TRI = SQ + 4 * np.eye(4)
WIDE = RNG.standard_normal((3, 5))
TALL = RNG.standard_normal((5, 3))


def _t(a, device, dtype=npusim.float64, requires_grad=False):
    return npusim.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


def _np_lu_perm(a):
    """The row order of a textbook partial-pivoting LU (first largest magnitude), for the pivots check."""
    a = a.copy()
    m, n = a.shape
    piv = []
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(a[j:, j])))
        piv.append(p + 1)
        a[[j, p]] = a[[p, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
            a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    return piv


# --- values ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [True, False])
def test_solve_triangular_matches_dense_solve(device, upper, left, unit):
    tri = np.triu(TRI) if upper else np.tril(TRI)
    # the other triangle (and, for unit triangles, the diagonal) is garbage the solver must not read
    noisy = tri + (np.tril(SQ, -1) if upper else np.triu(SQ, 1))
    if unit:
        tri = tri * (1 - np.eye(4)) + np.eye(4)
    b = RHS if left else RHS.transpose(0, 2, 1)
    x = LA.solve_triangular(_t(noisy, device), _t(b, device), upper=upper, left=left, unitriangular=unit)
    want = np.linalg.solve(tri, b) if left else np.linalg.solve(tri.transpose(0, 2, 1), RHS).transpose(0, 2, 1)
    np.testing.assert_allclose(host(x), want, rtol=1e-10, atol=1e-12)


def test_solve_triangular_broadcasts_and_float32(device):
    a = _t(np.triu(TRI[0]), device, npusim.float32)
    x = LA.solve_triangular(a, _t(RHS, device, npusim.float32), upper=True)
    assert x.dtype is npusim.float32 and x.shape == (2, 4, 3)
    np.testing.assert_allclose(host(a @ x), RHS, rtol=1e-4, atol=1e-4)
    big = np.tril(RNG.standard_normal((70, 70))) + 20 * np.eye(70)   # more than one block of rows
    b = RNG.standard_normal((70, 2))
    np.testing.assert_allclose(host(LA.solve_triangular(_t(big, device), _t(b, device), upper=False)),
                               np.linalg.solve(big, b), rtol=1e-10)


def test_legacy_triangular_solve(device):
    A, B = _t(np.triu(TRI), device), _t(RHS, device)
    sol, coef = npusim.triangular_solve(B, A)
    np.testing.assert_allclose(host(sol), np.linalg.solve(np.triu(TRI), RHS), rtol=1e-10)
    np.testing.assert_array_equal(host(coef), np.triu(TRI))
    assert coef.data_ptr() != A.data_ptr()   # a copy, not A itself
    low = _t(np.tril(TRI), device)
    sol_t = B.triangular_solve(low, upper=False, transpose=True).solution
    np.testing.assert_allclose(host(sol_t), np.linalg.solve(np.tril(TRI).transpose(0, 2, 1), RHS), rtol=1e-10)


@pytest.mark.parametrize("shape", [(2, 4, 4), (3, 5), (5, 3)])
def test_lu_reconstructs_and_pivots_follow_lapack(device, shape):
    a = RNG.standard_normal(shape)
    P, L, U = LA.lu(_t(a, device))
    k = min(shape[-2:])
    assert L.shape == shape[:-1] + (k,) and U.shape == shape[:-2] + (k, shape[-1])
    np.testing.assert_allclose(host(P @ L @ U), a, atol=1e-12)
    np.testing.assert_array_equal(np.diagonal(host(L), axis1=-2, axis2=-1), 1.0)
    np.testing.assert_array_equal(host(U), np.triu(host(U)))
    LU, piv = LA.lu_factor(_t(a, device))
    assert piv.dtype is npusim.int32 and piv.shape == shape[:-2] + (k,)
    flat = a.reshape((-1,) + shape[-2:])
    np.testing.assert_array_equal(host(piv).reshape(len(flat), k), [_np_lu_perm(m) for m in flat])
    P2, L2, U2 = npusim.lu_unpack(LU, piv)
    np.testing.assert_array_equal(host(P2), host(P))
    np.testing.assert_allclose(host(L2), host(L))
    np.testing.assert_allclose(host(U2), host(U))
    legacy = npusim.lu(_t(a, device))
    np.testing.assert_allclose(host(legacy[0]), host(LU))
    assert len(_t(a, device).lu(get_infos=True)) == 3


def test_cuda_mode_takes_the_vendor_libraries_without_reading_back(monkeypatch):
    # on a GPU the solves and square LU are one cuBLAS/cuSOLVER call each, not a launch per row or column
    import sys
    from npusim.backend.runtime import runtime
    from npusim.kernels import linalg_triangular
    if not npusim.npu.is_available() or runtime.probe() != "cuda":
        pytest.skip("the npu is not in cuda mode")

    def per_row_loop(*args):
        raise AssertionError("the array code's loop ran")
    monkeypatch.setattr(linalg_triangular, "_lower_solve", per_row_loop)
    a = RNG.standard_normal((3, 6, 6)) + 6 * np.eye(6)
    b = RNG.standard_normal((3, 6, 2))
    A, B = _t(a, "npu"), _t(b, "npu")
    standin = getattr(sys.modules.get("cupy"), "_standin_reset_counts", None)
    if standin:
        standin()
    x_up = LA.solve_triangular(A, B, upper=True)
    x_low = LA.solve_triangular(A[0].float(), B[0].float(), upper=False, unitriangular=True)
    LU, piv, info = LA.lu_factor_ex(A)
    if standin:
        assert sys.modules["cupy"]._standin_counts()["host_syncs"] == 0
    np.testing.assert_allclose(host(x_up), np.linalg.solve(np.triu(a), b), rtol=1e-10)
    unit_lower = np.tril(a[0], -1) + np.eye(6)
    np.testing.assert_allclose(host(x_low), np.linalg.solve(unit_lower, b[0]), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(host(piv), [_np_lu_perm(m) for m in a])
    assert host(info).tolist() == [0, 0, 0]
    P, L, U = npusim.lu_unpack(LU, piv)
    np.testing.assert_allclose(host(P @ L @ U), a, atol=1e-12)


def test_lu_factor_ex_reports_zero_pivots(device):
    A = _t(np.stack([[[1., 2.], [2., 4.]], np.zeros((2, 2)), np.eye(2)]), device)
    LU, piv, info = LA.lu_factor_ex(A)
    assert host(info).tolist() == [2, 1, 0] and info.dtype is npusim.int32
    # LAPACK swaps in the first row of the largest magnitude, and keeps the zero column as it is
    assert host(piv).tolist() == [[2, 2], [1, 2], [1, 2]]
    np.testing.assert_allclose(host(LU[0]), [[2., 4.], [0.5, 0.]])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve(device, left, adjoint):
    LU, piv = LA.lu_factor(_t(SQ, device))
    b = RHS if left else RHS.transpose(0, 2, 1)
    x = host(LA.lu_solve(LU, piv, _t(b, device), left=left, adjoint=adjoint))
    a = SQ.transpose(0, 2, 1) if adjoint else SQ
    np.testing.assert_allclose(a @ x if left else x @ a, b, atol=1e-10)
    if left and not adjoint:   # the legacy name takes B first
        np.testing.assert_allclose(host(npusim.lu_solve(_t(b, device), LU, piv)), x)
        np.testing.assert_allclose(host(_t(b, device).lu_solve(LU, piv)), x)


def test_householder_product_rebuilds_q(device):
    # reflectors by hand: v_i = e_i + the entries below i of column i
    a, tau = RNG.standard_normal((5, 3)), RNG.standard_normal(2)
    q = np.eye(5)
    for i in range(2):
        v = np.zeros(5)
        v[i] = 1
        v[i + 1:] = a[i + 1:, i]
        q = q @ (np.eye(5) - tau[i] * np.outer(v, v))
    got = LA.householder_product(_t(a, device), _t(tau, device))
    np.testing.assert_allclose(host(got), q[:, :3], atol=1e-12)
    np.testing.assert_allclose(host(npusim.orgqr(_t(a, device), _t(tau, device))), q[:, :3], atol=1e-12)


def test_matrix_exp(device):
    # exp of a rotation generator is the rotation; of a nilpotent matrix, I + N
    theta = 0.7
    rot = LA.matrix_exp(_t([[0., -theta], [theta, 0.]], device))
    np.testing.assert_allclose(host(rot), [[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]],
                               atol=1e-14)
    np.testing.assert_allclose(host(_t([[0., 2.], [0., 0.]], device).matrix_exp()), [[1., 2.], [0., 1.]])
    w, v = np.linalg.eigh(SQ + SQ.transpose(0, 2, 1))
    want = (v * np.exp(w)[:, None, :]) @ v.transpose(0, 2, 1)   # a large norm: scaling and squaring at work
    np.testing.assert_allclose(host(npusim.matrix_exp(_t(SQ + SQ.transpose(0, 2, 1), device))), want, rtol=1e-11)
    f32 = LA.matrix_exp(_t(SQ, device, npusim.float32))
    assert f32.dtype is npusim.float32


def test_small_helpers(device):
    x = _t([1., 2., 3.], device)
    np.testing.assert_array_equal(host(LA.vander(x)), np.vander([1., 2., 3.], increasing=True))
    np.testing.assert_array_equal(host(LA.vander(x, N=2)), [[1., 1.], [1., 2.], [1., 3.]])
    ints = LA.vander(npusim.tensor([2, 3], device=device), N=4)
    assert ints.dtype is npusim.int64 and host(ints).tolist() == [[1, 2, 4, 8], [1, 3, 9, 27]]
    np.testing.assert_array_equal(host(LA.diagonal(_t(SQ, device), offset=1)), np.diagonal(SQ, 1, -2, -1))
    t = RNG.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(host(LA.tensorinv(_t(t, device))),
                               np.linalg.tensorinv(t, ind=2), atol=1e-10)
    b = RNG.standard_normal((4, 6))
    np.testing.assert_allclose(host(LA.tensorsolve(_t(t, device), _t(b, device))), np.linalg.tensorsolve(t, b),
                               atol=1e-10)
    for p in (None, 2, -2, 1, -1, math.inf, -math.inf, "fro", "nuc"):
        np.testing.assert_allclose(host(LA.cond(_t(SQ, device), p)), np.linalg.cond(SQ, p), rtol=1e-10)
    assert host(LA.cond(_t(np.zeros((3, 3)), device), 1)).item() == math.inf
    np.testing.assert_allclose(host(LA.vecdot(_t(SQ, device), _t(SQ, device))), (SQ * SQ).sum(-1))


# --- gradients ----------------------------------------------------------------------------------------------------

def _tri_input(a):
    return a + 4 * npusim.eye(a.shape[-1], dtype=a.dtype, device=a.device)


GRAD_CASES = {
    "solve_triangular_upper": (lambda a, b: LA.solve_triangular(_tri_input(a), b, upper=True), [SQ, RHS]),
    "solve_triangular_lower_right_unit": (
        lambda a, b: LA.solve_triangular(a, b.mT, upper=False, left=False, unitriangular=True), [SQ, RHS]),
    "solve_triangular_upper_unit": (lambda a, b: LA.solve_triangular(a, b, upper=True, unitriangular=True),
                                    [SQ, RHS]),
    "solve_triangular_broadcast": (lambda a, b: LA.solve_triangular(_tri_input(a), b, upper=False),
                                   [SQ[0], RHS]),
    "triangular_solve": (lambda b, a: npusim.triangular_solve(b, _tri_input(a), transpose=True).solution,
                         [RHS, SQ]),
    "lu_square": (lambda a: tuple(LA.lu(a))[1:], [SQ]),
    "lu_wide": (lambda a: tuple(LA.lu(a))[1:], [WIDE]),
    "lu_tall": (lambda a: tuple(LA.lu(a))[1:], [TALL]),
    "lu_factor": (lambda a: LA.lu_factor(a).LU, [SQ]),
    "lu_factor_wide": (lambda a: LA.lu_factor(a).LU, [WIDE]),
    "lu_solve": (lambda a, b: LA.lu_solve(*LA.lu_factor(a), b), [SQ, RHS]),
    "lu_solve_adjoint_right": (lambda a, b: LA.lu_solve(*LA.lu_factor(a), b.mT, left=False, adjoint=True),
                               [SQ, RHS]),
    "householder_product": (lambda a, t: LA.householder_product(a, t), [TALL, RNG.standard_normal(2)]),
    "matrix_exp": (lambda a: LA.matrix_exp(a), [SQ]),
    "tensorinv": (lambda a: LA.tensorinv(a, ind=1), [SQ[0].reshape(4, 2, 2) + np.eye(4).reshape(4, 2, 2)]),
    "cond_1": (lambda a: LA.cond(a, 1), [SQ]),
    "vander": (lambda x: LA.vander(x, N=4), [RNG.standard_normal(3)]),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradcheck(device, name):
    fn, arrays = GRAD_CASES[name]
    assert gradcheck(fn, tuple(_t(a, device, requires_grad=True) for a in arrays))


def test_matrix_exp_double_backward(device):
    a = _t(SQ[0] * 0.5, device, requires_grad=True)
    assert npusim.autograd.gradgradcheck(lambda x: LA.matrix_exp(x), (a,))


# --- errors -------------------------------------------------------------------------------------------------------

def test_errors(device):
    A, B = _t(TRI[0], device), _t(RHS[0], device)
    with pytest.raises(RuntimeError, match="linalg.solve_triangular: The input tensor B must have at least 2 "
                                           "dimensions."):
        LA.solve_triangular(A, B[:, 0], upper=True)
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation XA = B \(4x4 and 4x3\)"):
        LA.solve_triangular(A, B, upper=True, left=False)
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 3 by 5 matrices"):
        LA.solve_triangular(_t(WIDE, device), B, upper=True)
    with pytest.raises(RuntimeError, match="Expected A and B to have the same dtype, but found A of type Double and "
                                           "B of type Float instead"):
        LA.solve_triangular(A, B.float(), upper=True)
    with pytest.raises(NotImplementedError, match="\"triangular_solve_cpu\" not implemented for 'Long'"):
        LA.solve_triangular(A.long(), B.long(), upper=True)
    with pytest.raises(RuntimeError, match="Expected b to have at least 2 dimensions, but it has 1 dimensions"):
        npusim.triangular_solve(B[:, 0], A)
    with pytest.raises(RuntimeError, match="each A matrix is 4 by 4 but each b matrix is 3 by 4"):
        npusim.triangular_solve(B.mT, A)
    singular = _t(np.stack([np.eye(2), [[1., 2.], [2., 4.]]]), device)
    with pytest.raises(LA.LinAlgError, match=r"torch.linalg.lu_factor: \(Batch element 1\): U\[2,2\] is zero and "
                                              r"using it on lu_solve would result in a division by zero"):
        LA.lu_factor(singular)
    with pytest.raises(RuntimeError, match=r"U\[1,1\] is zero"):
        LA.lu_factor_ex(_t(np.zeros((2, 2)), device), check_errors=True)
    assert host(LA.lu(singular).U[1]).tolist() == [[2., 4.], [0., 0.]]   # linalg.lu does not raise
    with pytest.raises(RuntimeError, match=r"Expected tensor with 2 or more dimensions. Got size: \[3\] instead"):
        LA.lu_factor(_t([1., 2., 3.], device))
    with pytest.raises(NotImplementedError, match="\"lu_cpu\" not implemented for 'Long'"):
        LA.lu_factor(A.long())
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        LA.lu_factor(A, pivot=False)
    LU, piv = LA.lu_factor(A)
    with pytest.raises(RuntimeError, match="linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32"):
        LA.lu_solve(LU, piv.long(), B)
    with pytest.raises(RuntimeError, match="Number of pivots per batch should be same as the dimension"):
        LA.lu_solve(LU, piv[:2], B)
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(4x4 and 3x4\)"):
        LA.lu_solve(LU, piv, B.mT)
    if checked_on_device(device):
        with reported_later(DC.LU_PIVOTS):   # checked on the device, as torch's CUDA kernel does
            npusim.lu_unpack(LU, piv * 0)
    else:
        with pytest.raises(RuntimeError, match="pivots passed to lu_unpack must be between 1 and LU.size"):
            npusim.lu_unpack(LU, piv * 0)
    with pytest.raises(RuntimeError, match="LU_pivots is expected to be a contiguous tensor of torch.int32 dtype"):
        npusim.lu_unpack(LU, piv.long())
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] must be greater than or equal to input.shape\[-1\]"):
        LA.householder_product(_t(WIDE, device), _t([1., 1.], device))
    with pytest.raises(RuntimeError, match="tau dtype Float does not match input dtype Double"):
        LA.householder_product(_t(TALL, device), _t([1., 1.], device, npusim.float32))
    with pytest.raises(RuntimeError, match="linalg.matrix_exp: A must be batches of square matrices, but they are 3 "
                                           "by 5 matrices"):
        LA.matrix_exp(_t(WIDE, device))
    with pytest.raises(RuntimeError, match="linalg.cond got an invalid norm type: 3"):
        LA.cond(A, 3)
    with pytest.raises(RuntimeError, match=r"linalg.cond\(ord=1\): A must be batches of square matrices"):
        LA.cond(_t(WIDE, device), 1)
    with pytest.raises(RuntimeError, match="N must be greater than 1."):
        LA.vander(_t([1., 2.], device), N=1)
    with pytest.raises(RuntimeError, match="Expected a strictly positive integer for 'ind', but got 0"):
        LA.tensorinv(A, ind=0)


# --- against torch ------------------------------------------------------------------------------------------------

def _both(torch, a, requires_grad=False):
    return (npusim.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad))


@pytest.mark.oracle
def test_values_and_pivots_match_torch(torch):
    for shape in [(2, 4, 4), (3, 5), (5, 3)]:
        a = RNG.standard_normal(shape)
        ours, theirs = LA.lu_factor(npusim.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
        np.testing.assert_array_equal(host(ours.pivots), theirs.pivots.numpy())
        np.testing.assert_allclose(host(ours.LU), theirs.LU.numpy(), atol=1e-12)
        for o, t in zip(LA.lu(npusim.tensor(a)), torch.linalg.lu(torch.tensor(a))):
            np.testing.assert_allclose(host(o), t.numpy(), atol=1e-12)
    sing = np.array([[[1., 2.], [2., 4.]], np.zeros((2, 2))])
    o, t = LA.lu_factor_ex(npusim.tensor(sing)), torch.linalg.lu_factor_ex(torch.tensor(sing))
    for x, y in zip(o, t):
        np.testing.assert_array_equal(host(x), y.numpy())
    a, ta = npusim.tensor(SQ), torch.tensor(SQ)
    np.testing.assert_allclose(host(LA.matrix_exp(a)), torch.linalg.matrix_exp(ta).numpy(), rtol=1e-12)
    q, tau = torch.geqrf(torch.tensor(TALL))
    np.testing.assert_allclose(host(LA.householder_product(npusim.tensor(q.numpy()), npusim.tensor(tau.numpy()))),
                               torch.linalg.householder_product(q, tau).numpy(), atol=1e-12)
    for p in (None, 1, "fro", -math.inf):
        np.testing.assert_allclose(host(LA.cond(a, p)), torch.linalg.cond(ta, p).numpy(), rtol=1e-10)


@pytest.mark.oracle
def test_gradients_match_torch(torch):
    cases = [
        (lambda L, a, b: L.solve_triangular(a, b, upper=True, left=True), [TRI, RHS]),
        (lambda L, a, b: L.solve_triangular(a, b.mT, upper=False, left=False, unitriangular=True), [TRI, RHS]),
        (lambda L, a: L.lu(a).L.sum() + (L.lu(a).U ** 2).sum(), [SQ]),
        (lambda L, a: L.lu(a).L.sum() + (L.lu(a).U ** 2).sum(), [WIDE]),
        (lambda L, a: L.lu(a).L.sum() + (L.lu(a).U ** 2).sum(), [TALL]),
        (lambda L, a, b: L.lu_solve(*L.lu_factor(a), b, adjoint=True), [SQ, RHS]),
        (lambda L, a: L.matrix_exp(a), [SQ]),
        (lambda L, a, t: L.householder_product(a, t), [TALL, np.array([0.5, -1.2])]),
    ]
    for fn, arrays in cases:
        ours = [npusim.tensor(a, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        fn(LA, *ours).sum().backward()
        fn(torch.linalg, *theirs).sum().backward()
        for o, t in zip(ours, theirs):
            np.testing.assert_allclose(host(o.grad), t.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.oracle
def test_error_messages_match_torch(torch):
    cases = [
        lambda m, L: L.solve_triangular(m.ones(3, 3), m.ones(4, 2), upper=True),
        lambda m, L: L.lu_factor(m.zeros(2, 3, 3)),
        lambda m, L: L.lu_factor(m.ones(3)),
        lambda m, L: L.lu_solve(m.eye(3), m.ones(3, dtype=m.int32), m.ones(2, 4), left=False),
        lambda m, L: L.lu_solve(m.ones(3, 4), m.ones(3, dtype=m.int32), m.ones(3, 2)),
        lambda m, L: L.householder_product(m.ones(3, 2), m.ones(2, 1)),
        lambda m, L: L.householder_product(m.ones(3, 2), m.ones(3)),
        lambda m, L: L.matrix_exp(m.ones(3)),
        lambda m, L: L.tensorsolve(m.ones(6, 2, 3), m.ones(5)),
        lambda m, L: m.triangular_solve(m.ones(3, 2), m.ones(3, 4)),
    ]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(torch, torch.linalg)
        with pytest.raises(type(theirs.value), match=None) as ours:
            case(npusim, LA)
        assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]
