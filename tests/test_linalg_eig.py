"""npusim.linalg.eig / eigvals on cpu and npu: A V = V diag(L) with unit-norm eigenvectors, complex results for
real inputs, torch's checks and out= rule, gradients against finite differences (of losses that do not depend on
the eigenvectors' phases, the only well-defined ones), and the same against torch (``oracle``: both run LAPACK's
geev, so values agree to rounding in the same order).
"""
from __future__ import annotations

import numpy as np
import pytest

import npusim

pytestmark = pytest.mark.skipif(not hasattr(npusim, "complex64"), reason="needs npusim's complex dtypes")

RNG = np.random.default_rng(8)
A = RNG.standard_normal((2, 4, 4))
C = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
LA = npusim.linalg


def _np(t):
    return t.detach().cpu().resolve_conj().numpy()


def _t(a, device, dtype=None, requires_grad=False):
    return npusim.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


@pytest.mark.parametrize("a", [A, C, A[0].astype(np.float32)], ids=["float64", "complex128", "float32"])
def test_eigenpairs(device, a):
    L, V = LA.eig(_t(a, device))
    want = {np.dtype(np.float32): npusim.complex64}.get(a.dtype, npusim.complex128)
    assert L.dtype is want and V.dtype is want and L.device.type == device
    lv, vv = _np(L), _np(V)
    tol = 1e-4 if a.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(a @ vv, vv * lv[..., None, :], atol=tol)
    np.testing.assert_allclose(np.linalg.norm(vv, axis=-2), 1, atol=tol)
    np.testing.assert_allclose(np.sort_complex(lv.reshape(-1)), np.sort_complex(np.linalg.eigvals(a).reshape(-1)),
                               atol=tol)
    np.testing.assert_allclose(_np(LA.eigvals(_t(a, device))), lv, atol=tol)


def test_hand_checked_rotation(device):
    L = LA.eigvals(_t([[0.0, -1.0], [1.0, 0.0]], device))   # a quarter turn: +-i
    np.testing.assert_allclose(np.sort_complex(_np(L)), [-1j, 1j], atol=1e-7)
    assert L.dtype is npusim.complex64
    empty = LA.eig(_t(np.zeros((2, 0, 0)), device))
    assert empty.eigenvalues.shape == (2, 0) and empty.eigenvectors.shape == (2, 0, 0)


@pytest.mark.parametrize("call,exc,message", [
    (lambda d: LA.eig(_t(np.ones((2, 3)), d)), RuntimeError,
     "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda d: LA.eigvals(_t(np.ones(3), d)), RuntimeError,
     "linalg.eigvals: The input tensor A must have at least 2 dimensions."),
    (lambda d: LA.eig(_t(np.ones((2, 2)), d, npusim.int64)), RuntimeError, "Unknown Complex ScalarType for Long"),
    (lambda d: LA.eig(_t(np.ones((2, 2)), d, npusim.float16)), NotImplementedError,
     "\"linalg_eig_out_cpu\" not implemented for 'Half'"),
    (lambda d: LA.eig(_t(np.full((2, 2), np.nan), d)), RuntimeError,
     "torch.linalg.eig: input tensor should not contain infs or NaNs."),
    (lambda d: LA.eigvals(_t(np.ones((2, 2)), d), out=npusim.empty(2, device=d)), RuntimeError,
     "torch.linalg.eigvals: Expected eigenvalues to be safely castable from ComplexDouble dtype, but got "
     "eigenvalues with dtype Float"),
])
def test_errors_are_torchs(device, call, exc, message):
    with pytest.raises(exc, match=message):
        call(device)


def test_out_and_named_tuple(device):
    values = npusim.empty(0, dtype=npusim.complex128, device=device)
    vectors = npusim.empty(0, dtype=npusim.complex128, device=device)
    r = LA.eig(_t(A, device), out=(values, vectors))
    assert r.eigenvalues is values and r.eigenvectors is vectors and vectors.shape == (2, 4, 4)
    assert "linalg_eig" in repr(r)
    out = npusim.empty(8, dtype=npusim.complex128, device=device)
    assert LA.eigvals(_t(A, device), out=out) is out and out.shape == (2, 4)


def _phase_free_loss(values, vectors, wl, wv):
    """Weighted eigenvalues and |V|^2: invariant under V -> V e^{i phi}."""
    s = (npusim.view_as_real(values) * wl).sum()
    if vectors is not None:
        s = s + (npusim.view_as_real(vectors).pow(2).sum(-1) * wv).sum()
    return s


def _numeric_grad(f, x, eps=1e-6):
    grad = np.zeros(x.shape, dtype=x.dtype)
    steps = (1.0, 1j) if np.iscomplexobj(x) else (1.0,)
    for idx in np.ndindex(x.shape):
        for step in steps:
            e = np.zeros(x.shape, dtype=x.dtype)
            e[idx] = eps * step
            grad[idx] += step * (f(x + e) - f(x - e)) / (2 * eps)
    return grad


@pytest.mark.parametrize("a", [A[0], C], ids=["real", "complex"])
@pytest.mark.parametrize("vectors", [True, False])
def test_gradients_match_finite_differences(device, a, vectors):
    wl = RNG.standard_normal(a.shape[:-1] + (2,))
    wv = RNG.standard_normal(a.shape)

    def loss(x, dev="cpu", grad=False):
        t = _t(x, dev, requires_grad=grad)
        if vectors:
            L, V = LA.eig(t)
        else:
            L, V = LA.eigvals(t), None
        return t, _phase_free_loss(L, V, _t(wl, dev), _t(wv, dev))
    t, value = loss(a, device, grad=True)
    value.backward()
    assert t.grad.dtype is t.dtype
    np.testing.assert_allclose(_np(t.grad), _numeric_grad(lambda x: float(loss(x)[1].item()), a), atol=1e-6)


def test_phase_dependent_losses_are_refused(device):
    a = _t(A[0], device, requires_grad=True)
    with pytest.raises(RuntimeError, match="linalg_eig_backward: The eigenvectors in the complex case are specified "
                                           "up to multiplication by e\\^{i phi}"):
        npusim.real(LA.eig(a).eigenvectors).sum().backward()


@pytest.mark.oracle
def test_values_errors_and_gradients_match_torch(torch, device):
    for a in (A, C, A[0].astype(np.float32)):
        Lt, Vt = torch.linalg.eig(torch.from_numpy(a))
        L, V = LA.eig(_t(a, device))
        tol = 1e-4 if a.dtype == np.float32 else 1e-10
        np.testing.assert_allclose(_np(L), Lt.numpy(), atol=tol)
        # each eigenvector is defined up to a unit phase: LAPACK's float32 and float64 drivers may pick opposite
        # signs, so align the phases before comparing
        v, vt = _np(V), Vt.numpy()
        phase = np.sum(np.conj(v) * vt, axis=-2, keepdims=True)
        np.testing.assert_allclose(v * phase / np.abs(phase), vt, atol=tol)
        assert str(L.dtype).split(".")[1] == str(Lt.dtype).split(".")[1]
    for bad in (np.ones((2, 3)), np.ones(3), np.ones((2, 2), np.int64), np.ones((2, 2), bool),
                np.full((2, 2), np.inf)):
        with pytest.raises(RuntimeError) as want:
            torch.linalg.eig(torch.from_numpy(bad))
        with pytest.raises(RuntimeError) as got:
            LA.eig(_t(bad, device))
        assert str(got.value) == str(want.value)
    for a in (A, C):
        wl = RNG.standard_normal(a.shape[:-1] + (2,))
        wv = RNG.standard_normal(a.shape)
        at = torch.from_numpy(a).requires_grad_()
        Lt, Vt = torch.linalg.eig(at)
        ((torch.view_as_real(Lt) * torch.from_numpy(wl)).sum()
         + (torch.view_as_real(Vt).pow(2).sum(-1) * torch.from_numpy(wv)).sum()).backward()
        an = _t(a, device, requires_grad=True)
        L, V = LA.eig(an)
        _phase_free_loss(L, V, _t(wl, device), _t(wv, device)).backward()
        np.testing.assert_allclose(_np(an.grad), at.grad.resolve_conj().numpy(), atol=1e-10)


@pytest.mark.oracle
def test_double_backward_matches_torch(torch, device):
    grads = []
    for lib, make in ((torch, torch.from_numpy), (npusim, lambda a: _t(a, device))):
        a = make(A[0]).requires_grad_()
        values = lib.linalg.eigvals(a)
        g, = lib.autograd.grad((lib.view_as_real(values) ** 2).sum(), a, create_graph=True)
        (g * g).sum().backward()
        grads.append(a.grad)
    np.testing.assert_allclose(_np(grads[1]), grads[0].numpy(), atol=1e-9)
