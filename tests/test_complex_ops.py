"""The ops that take complex tensors: values against NumPy's complex computation (cpu and npu), against torch
(oracle), and gradients against torch and finite differences, with torch's conjugate Wirtinger convention."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import npusim

RNG = np.random.default_rng(3)
A = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
B = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
S = (RNG.standard_normal((4, 4)) + 1j * RNG.standard_normal((4, 4))).astype(np.complex64)
R = RNG.standard_normal((3, 4)).astype(np.float32)


def _np(t):
    return t.detach().cpu()._a.copy()


# op, its NumPy counterpart on (a, b, s, r): each gives the same values in the same dtype
UNARY = {
    "neg": (lambda x: -x, np.negative), "exp": (npusim.exp, np.exp), "log": (npusim.log, np.log),
    "sqrt": (npusim.sqrt, np.sqrt), "sin": (npusim.sin, np.sin), "cos": (npusim.cos, np.cos),
    "tan": (npusim.tan, np.tan), "sinh": (npusim.sinh, np.sinh), "cosh": (npusim.cosh, np.cosh),
    "tanh": (npusim.tanh, np.tanh), "reciprocal": (npusim.reciprocal, np.reciprocal),
    "sigmoid": (npusim.sigmoid, lambda z: 1 / (1 + np.exp(-z))), "rsqrt": (npusim.rsqrt, lambda z: 1 / np.sqrt(z)),
    "square": (npusim.square, np.square), "log2": (npusim.log2, np.log2), "log10": (npusim.log10, np.log10),
    "log1p": (npusim.log1p, np.log1p), "expm1": (npusim.expm1, np.expm1), "asin": (npusim.asin, np.arcsin),
    "acos": (npusim.acos, np.arccos), "atan": (npusim.atan, np.arctan), "asinh": (npusim.asinh, np.arcsinh),
    "acosh": (npusim.acosh, np.arccosh), "atanh": (npusim.atanh, np.arctanh),
    "sgn": (npusim.sgn, lambda z: z / np.abs(z)), "abs": (npusim.abs, np.abs), "angle": (npusim.angle, np.angle),
    "isnan": (npusim.isnan, np.isnan), "isinf": (npusim.isinf, np.isinf), "isfinite": (npusim.isfinite, np.isfinite),
}
BINARY = {
    "add": (lambda x, y: x + y, np.add), "sub": (lambda x, y: x - y, np.subtract),
    "mul": (lambda x, y: x * y, np.multiply), "div": (lambda x, y: x / y, np.divide),
    "pow": (lambda x, y: x ** y, np.power), "eq": (lambda x, y: x == y, np.equal),
    "ne": (lambda x, y: x != y, np.not_equal), "add_alpha": (lambda x, y: npusim.add(x, y, alpha=2 - 1j),
                                                               lambda x, y: x + (2 - 1j) * y),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_match_numpy(device, name):
    ours, ref = UNARY[name]
    got = ours(npusim.tensor(A, device=device))
    want = ref(A)
    assert _np(got).dtype == want.dtype
    np.testing.assert_allclose(_np(got), want, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_match_numpy(device, name):
    ours, ref = BINARY[name]
    got = ours(npusim.tensor(A, device=device), npusim.tensor(B, device=device))
    want = ref(A, B)
    assert _np(got).dtype == want.dtype
    np.testing.assert_allclose(_np(got), want, rtol=2e-5, atol=1e-6)


def test_python_complex_numbers_promote(device):
    x = npusim.tensor(R, device=device)
    for got, want in ((x * 1j, R * np.complex64(1j)), (1j + x, R + np.complex64(1j)), (x / (1 + 1j), R / np.complex64(1 + 1j)),
                      (2j ** npusim.tensor(A, device=device), np.complex64(2j) ** A)):
        assert got.dtype is npusim.complex64
        np.testing.assert_allclose(_np(got), want, rtol=2e-5, atol=1e-6)
    assert (npusim.tensor([1], device=device) * 1j).dtype is npusim.complex64
    assert (npusim.tensor([1.0], dtype=npusim.float64, device=device) * 1j).dtype is npusim.complex128
    z = npusim.tensor(A, device=device)
    assert (z == 1j).dtype is npusim.bool and (z != 1j).all()


def test_inplace_arithmetic(device):
    z = npusim.tensor(A, device=device)
    z.mul_(2j).add_(npusim.tensor(B, device=device), alpha=3).div_(1 - 1j)
    np.testing.assert_allclose(_np(z), (A * 2j + 3 * B) / (1 - 1j), rtol=2e-5, atol=1e-6)
    r = npusim.tensor(R, device=device)
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast to the desired output type Float"):
        r.add_(z)


def test_reductions(device):
    z = npusim.tensor(A, device=device)
    for got, want in ((z.sum(), A.sum()), (z.sum(1), A.sum(1)), (z.mean(), A.mean()), (z.mean(0), A.mean(0)),
                      (z.prod(1), A.prod(1)), (z.cumsum(1), A.cumsum(1)), (z.cumprod(0), A.cumprod(0))):
        np.testing.assert_allclose(_np(got), want, rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(_np(z.var()), A.var(ddof=1), rtol=1e-5)
    assert z.var().dtype is npusim.float32 and z.std(0).dtype is npusim.float32
    np.testing.assert_allclose(_np(z.std(0)), A.std(0, ddof=1), rtol=1e-5)
    for ord_ in (2, 1, float("inf"), 3):
        got = npusim.linalg.vector_norm(z, ord_)
        assert got.dtype is npusim.float32
        np.testing.assert_allclose(_np(got), np.linalg.norm(A.reshape(-1), ord_), rtol=1e-5)
    np.testing.assert_allclose(_np(z.norm()), np.linalg.norm(A), rtol=1e-5)
    assert npusim.allclose(z, z + 1e-9) and not npusim.allclose(z, z + 1j)
    assert npusim.isclose(z, z.conj()).tolist() == np.isclose(A, A.conj()).tolist()


def test_products(device):
    z, w, s = (npusim.tensor(v, device=device) for v in (A, B, S))
    np.testing.assert_allclose(_np(z @ s), A @ S, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(npusim.mm(z, s)), A @ S, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(npusim.bmm(z[None], s[None])), (A @ S)[None], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(npusim.einsum("ij,kj->ik", z, w)), A @ B.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(npusim.dot(z[0], w[0])), np.dot(A[0], B[0]), rtol=1e-5)
    np.testing.assert_allclose(_np(npusim.vdot(z[0], w[0])), np.vdot(A[0], B[0]), rtol=1e-5)
    np.testing.assert_allclose(_np(npusim.mv(s, z[0])), S @ A[0], rtol=1e-5, atol=1e-5)


def test_joins_indexing_and_selection(device):
    z, w = npusim.tensor(A, device=device), npusim.tensor(B, device=device)
    assert _np(npusim.cat([z, w])).tolist() == np.concatenate([A, B]).tolist()
    assert _np(npusim.stack([z, w], 1)).tolist() == np.stack([A, B], 1).tolist()
    assert _np(z[npusim.tensor([2, 0], device=device)]).tolist() == A[[2, 0]].tolist()
    mask = npusim.tensor(R > 0, device=device)
    assert _np(z[mask]).tolist() == A[R > 0].tolist()
    assert _np(npusim.where(mask, z, w)).tolist() == np.where(R > 0, A, B).tolist()
    assert _np(z.masked_fill(mask, 1j)).tolist() == np.where(R > 0, np.complex64(1j), A).tolist()
    y = z.clone()
    y[0] = 2 - 1j
    y[1, 1:3] = w[1, :2]
    y[npusim.tensor([2], device=device)] = w[2:]
    want = A.copy()
    want[0] = 2 - 1j
    want[1, 1:3] = B[1, :2]
    want[2] = B[2]
    assert _np(y).tolist() == want.tolist()
    assert _np(npusim.zeros_like(z)).tolist() == np.zeros_like(A).tolist() and z.clone().fill_(1j).tolist()[0][0] == 1j


def test_backward_of_a_complex_output_needs_a_gradient():
    z = npusim.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for real scalar outputs but got "
                                           "npusim.complex64$"):
        (z * z).sum().backward()
    with pytest.raises(RuntimeError, match="^For complex Tensors, both grad_output and output are required to have "
                                           "the same dtype"):
        (z * z).backward(npusim.ones(3, 4))


def test_ops_without_complex_derivatives_refuse_to_record():
    z = npusim.tensor(A, requires_grad=True)
    with pytest.raises(NotImplementedError, match="no derivative of 'sgn' for complex tensors"):
        z.sgn()
    with npusim.no_grad():
        assert z.sgn().dtype is npusim.complex64


# --- gradients -------------------------------------------------------------------------------------------------

def _loss(L, out, weights):
    """A real loss of ``out``: sum((re(w * out))^2 + (im(w * out))^2), or sum(w.real * out) for a real out."""
    w = L.tensor(weights)
    if out.is_complex():
        return (L.view_as_real(out * w) ** 2).sum()
    return (out * w.real).sum()


GRAD_CASES = {
    "mul": lambda L, a, b, r: a * b, "div": lambda L, a, b, r: a / b, "mul_real": lambda L, a, b, r: a * r,
    "real_times_c": lambda L, a, b, r: r * (2 - 1j), "exp": lambda L, a, b, r: a.exp(), "log": lambda L, a, b, r: a.log(),
    "sqrt": lambda L, a, b, r: a.sqrt(), "sin": lambda L, a, b, r: a.sin(), "tanh": lambda L, a, b, r: a.tanh(),
    "sigmoid": lambda L, a, b, r: a.sigmoid(), "reciprocal": lambda L, a, b, r: a.reciprocal(),
    "pow": lambda L, a, b, r: a ** (0.5 + 1j), "abs": lambda L, a, b, r: a.abs(), "angle": lambda L, a, b, r: a.angle(),
    "real_imag": lambda L, a, b, r: a.real * a.imag, "view_as_real": lambda L, a, b, r: L.view_as_real(a).sum(-1),
    "complex": lambda L, a, b, r: L.complex(r, r * r), "polar": lambda L, a, b, r: L.polar(r.abs() + 0.5, r),
    "sum_mean": lambda L, a, b, r: a.sum(0) + a.mean(), "matmul": lambda L, a, b, r: a @ b.t(),
    "vdot": lambda L, a, b, r: L.vdot(a[0], b[1]), "conj": lambda L, a, b, r: a.conj() * b,
    "to_complex": lambda L, a, b, r: r.to(a.dtype) * a, "index_cat": lambda L, a, b, r: L.cat([a[1:], b[:1]]),
    "var_std": lambda L, a, b, r: a.var() + a.std(0).sum(), "norm2": lambda L, a, b, r: L.linalg.vector_norm(a),
    "norm1_3": lambda L, a, b, r: L.linalg.vector_norm(a, 1, dim=0) + L.linalg.vector_norm(a, 3),
    "prod": lambda L, a, b, r: a.prod(1) + a.prod(), "cumprod": lambda L, a, b, r: a.cumprod(1),
    "logsumexp": lambda L, a, b, r: a.logsumexp(1), "addcmul": lambda L, a, b, r: L.addcmul(a, a, b, value=2 - 1j),
    "moving": lambda L, a, b, r: a.flip(0).roll(1, 1).tril() * b + a.index_put((L.tensor([0, 2]),), b[:2]),
}


def _grads(L, f, data):
    a, b, r = (L.tensor(v, requires_grad=True) for v in data)
    out = f(L, a, b, r)
    weights = np.random.default_rng(7).standard_normal(tuple(out.shape) + (2,))
    _loss(L, out, weights[..., 0] + 1j * weights[..., 1]).backward()
    return [None if t.grad is None else (t.grad.resolve_conj().numpy() if L is not npusim else _np(t.grad))
            for t in (a, b, r)], weights


DATA64 = (A.astype(np.complex128), B.astype(np.complex128), R.astype(np.float64))


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_gradients_match_torch(torch, name):
    f = GRAD_CASES[name]
    want, _ = _grads(torch, f, DATA64)
    got, _ = _grads(npusim, f, DATA64)
    for w, g in zip(want, got):
        assert (w is None) == (g is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["mul", "exp", "div", "abs", "angle", "matmul", "vdot", "pow", "complex", "var_std",
                                  "norm1_3"])
def test_gradients_match_finite_differences(name):
    """dL/d(re z) + i dL/d(im z), by central differences of the real loss."""
    f = GRAD_CASES[name]
    got, weights = _grads(npusim, f, DATA64)
    w = weights[..., 0] + 1j * weights[..., 1]

    def loss_at(data):
        with npusim.no_grad():
            return _loss(npusim, f(npusim, *(npusim.tensor(v) for v in data)), w).item()

    eps = 1e-6
    for k, g in enumerate(got):
        if g is None:
            continue
        numeric = np.zeros(DATA64[k].shape, dtype=DATA64[k].dtype)
        for idx in np.ndindex(DATA64[k].shape):
            for step in ((1.0, 1j) if np.iscomplexobj(DATA64[k]) else (1.0,)):
                plus = [v.copy() for v in DATA64]
                minus = [v.copy() for v in DATA64]
                plus[k][idx] += eps * step
                minus[k][idx] -= eps * step
                numeric[idx] += step * (loss_at(plus) - loss_at(minus)) / (2 * eps)
        np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)


# --- torch as the oracle for values ---------------------------------------------------------------------

@pytest.mark.oracle
def test_values_match_torch(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (ours, _) in sorted(UNARY.items()):
            want = getattr(torch, name)(torch.tensor(A)) if name != "neg" else -torch.tensor(A)
            got = ours(npusim.tensor(A))
            assert got.dtype.name == str(want.dtype).split(".")[1], name
            np.testing.assert_allclose(_np(got), want.numpy(), rtol=2e-5, atol=1e-6, err_msg=name)
        for name, (ours, _) in sorted(BINARY.items()):
            fn = {"add_alpha": lambda x, y: torch.add(x, y, alpha=2 - 1j)}.get(name, ours)
            want = fn(torch.tensor(A), torch.tensor(B))
            got = ours(npusim.tensor(A), npusim.tensor(B))
            np.testing.assert_allclose(_np(got), want.numpy(), rtol=2e-5, atol=1e-6, err_msg=name)
        z, t = npusim.tensor(A), torch.tensor(A)
        for fn in (lambda L, x: x.var(), lambda L, x: x.std(1), lambda L, x: L.linalg.vector_norm(x, 3),
                   lambda L, x: L.linalg.norm(x), lambda L, x: x.prod(0), lambda L, x: L.vdot(x[0], x[1]),
                   lambda L, x: x.logsumexp(1), lambda L, x: L.isclose(x, x * (1 + 1e-6))):
            want, got = fn(torch, t), fn(npusim, z)
            assert got.dtype.name == str(want.dtype).split(".")[1]
            np.testing.assert_allclose(_np(got), want.numpy(), rtol=2e-5, atol=1e-6)


MOVING_AND_MORE = {
    "gather": lambda L, x: x.gather(1, L.tensor([[0], [3], [1]])), "flip": lambda L, x: x.flip(0),
    "roll": lambda L, x: x.roll(1, 1), "tril": lambda L, x: x.tril(), "triu": lambda L, x: x.triu(1),
    "diag": lambda L, x: L.diag(x[:, :3]), "trace": lambda L, x: L.trace(x[:, :3]), "kron": lambda L, x: L.kron(x, x),
    "take": lambda L, x: x.take(L.tensor([0, 5])), "index_select": lambda L, x: x.index_select(1, L.tensor([3, 0])),
    "masked_select": lambda L, x: x.masked_select(x.real > 0), "nonzero": lambda L, x: L.nonzero(x * (x.real > 0)),
    "repeat": lambda L, x: x.repeat(2, 1), "logsumexp": lambda L, x: x.logsumexp(1),
    "count_nonzero": lambda L, x: L.count_nonzero(x * (x.real > 0)), "cumprod": lambda L, x: x.cumprod(1),
    "addcmul": lambda L, x: L.addcmul(x, x, x.conj(), value=2), "outer": lambda L, x: L.outer(x[0], x[1]),
    "addmm": lambda L, x: L.addmm(x[:, :3], x, x.t(), beta=0.5, alpha=2 - 1j), "linear": lambda L, x: L.nn.functional.linear(x, x),
    "any_all": lambda L, x: L.stack([x.any(), x.all()]), "var_mean": lambda L, x: L.stack(L.var_mean(x, 1)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(MOVING_AND_MORE))
def test_more_ops_match_torch(torch, name):
    fn = MOVING_AND_MORE[name]
    want, got = fn(torch, torch.tensor(A)), fn(npusim, npusim.tensor(A))
    assert got.dtype.name == str(want.dtype).split(".")[1] and got.shape == tuple(want.shape)
    np.testing.assert_allclose(_np(got), want.numpy(), rtol=2e-5, atol=1e-5)
