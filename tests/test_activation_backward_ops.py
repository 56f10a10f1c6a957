"""The gradients of silu, hardswish, hardsigmoid, hardtanh (relu6) and leaky_relu are torch's backward ops
(``aten::silu_backward`` and the rest): one dispatched op with torch's arithmetic, per cache-sized block for large
float32 arrays; under ``create_graph`` the differentiable composition, as torch's own silu does."""
import math

import numpy as np
import pytest

import npusim
from conftest import host, op_names_seen
from npusim.kernels import nn_activation as K
from npusim.kernels import parallel

aten = npusim.ops.aten
F = npusim.nn.functional
INF, NAN = math.inf, math.nan
N = 3 * parallel.BLOCK + 37
SPECIAL = [-4.0, -3.0, -1.0, -0.0, 0.0, 0.5, 1.0, 3.0, 4.0, 6.0, NAN, INF, -INF, 1e-40]


def _data(dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(N) * 4).astype(dtype)
    x[:len(SPECIAL)] = SPECIAL
    g = rng.standard_normal(N).astype(dtype)
    g[len(SPECIAL):len(SPECIAL) + 4] = [INF, -INF, NAN, -0.0]
    return x, g


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


KERNELS = {
    "silu_backward": lambda g, x: K.silu_backward(g, x),
    "hardswish_backward": lambda g, x: K.hardswish_backward(g, x),
    "hardsigmoid_backward": lambda g, x: K.hardsigmoid_backward(g, x),
    "hardtanh_backward": lambda g, x: K.hardtanh_backward(g, x, -1.0, 1.0),
    "relu6 (hardtanh_backward)": lambda g, x: K.hardtanh_backward(g, x, 0.0, 6.0),
    "leaky_relu_backward": lambda g, x: K.leaky_relu_backward(g, x, 0.01),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_blocks_give_the_whole_array_forms_bits(intra_op_threads, name):
    x, g = _data(np.float32, 1)
    with np.errstate(all="ignore"):
        dense = KERNELS[name](g, x)
        whole = KERNELS[name](g[::1].copy()[None, :], x[None, :])[0]    # 2-d: not blockwise, whole-array form
        _same_bits(dense, np.ascontiguousarray(whole))


def test_torchs_arithmetic_and_edges(device):
    x = npusim.tensor([-4.0, -3.0, -1.0, 0.0, 3.0, 4.0, NAN, 6.0, -0.0], device=device)
    g = npusim.full((9,), 2.0, device=device)
    third = 2.0 * (-1.0 / 3 + 0.5)
    assert host(aten.hardswish_backward(g, x)).tolist()[:6] == pytest.approx([0.0, 0.0, third, 1.0, 2.0, 2.0])
    # a NaN input: torch's vectorised kernels (all but a tensor's last few elements) give NaN and 0
    assert math.isnan(host(aten.hardswish_backward(g, x))[6])
    np.testing.assert_array_equal(host(aten.hardtanh_backward(g, x, -3.0, 3.0)), [0, 0, 2, 2, 0, 0, 0, 0, 2])
    np.testing.assert_array_equal(host(aten.leaky_relu_backward(g, x, 0.1, False)),
                                  np.float32([0.2, 0.2, 0.2, 0.2, 2, 2, 0.2, 2, 0.2]))
    sixth = np.float32(2.0) * np.float32(1.0 / 6.0)                 # torch multiplies by float's 1/6
    np.testing.assert_array_equal(host(aten.hardsigmoid_backward(g, x)), [0, 0, sixth, sixth, 0, 0, 0, 0, sixth])
    g64, x64 = g.double(), npusim.tensor([0.5, 1.5], dtype=npusim.float64, device=device)
    assert host(aten.hardsigmoid_backward(g64[:2], x64)).tolist() == [2.0 * float(np.float32(1.0 / 6.0))] * 2


@pytest.mark.parametrize("dtype", [npusim.float32, npusim.float64, npusim.float16, npusim.bfloat16])
def test_autograd_runs_the_one_backward_op(device, dtype):
    cases = [(F.silu, "aten::silu_backward"), (F.hardswish, "aten::hardswish_backward"),
             (F.hardsigmoid, "aten::hardsigmoid_backward"), (F.hardtanh, "aten::hardtanh_backward"),
             (F.relu6, "aten::hardtanh_backward"), (F.leaky_relu, "aten::leaky_relu_backward")]
    data = np.linspace(-5, 5, 41)
    for fn, op in cases:
        x = npusim.tensor(data, dtype=dtype, device=device, requires_grad=True)
        y = fn(x)
        g = npusim.ones_like(y)
        seen = op_names_seen(lambda: y.backward(g))
        assert op in seen and "aten::mul" not in seen and "aten::where" not in seen, (fn, seen)
        assert x.grad.dtype == dtype
        # the same values as the composition create_graph builds
        x2 = npusim.tensor(data, dtype=dtype, device=device, requires_grad=True)
        (g2,) = npusim.autograd.grad(fn(x2), x2, npusim.ones_like(y), create_graph=True)
        tol = 1e-6 if dtype in (npusim.float32, npusim.float64) else 1e-2
        np.testing.assert_allclose(host(x.grad.float()), host(g2.detach().float()), rtol=tol, atol=tol)


def test_create_graph_keeps_second_derivatives(device):
    x = npusim.tensor([-1.0, 0.5, 2.0], device=device, requires_grad=True)
    (g,) = npusim.autograd.grad(F.hardswish(x).sum(), x, create_graph=True)
    (gg,) = npusim.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(host(gg), [1 / 3] * 3, rtol=1e-6)
    (g,) = npusim.autograd.grad(F.silu(x).sum(), x, create_graph=True)
    (gg,) = npusim.autograd.grad(g.sum(), x)
    s = 1 / (1 + np.exp(-np.array([-1.0, 0.5, 2.0])))
    np.testing.assert_allclose(host(gg), s * (1 - s) * (2 + np.array([-1.0, 0.5, 2.0]) * (1 - 2 * s)), rtol=1e-5)


def test_the_ops_own_gradients(device):
    x = npusim.tensor([0.5, -4.0, 2.0], device=device, requires_grad=True)
    g = npusim.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    gg, gx = npusim.autograd.grad(aten.hardswish_backward(g, x).sum(), (g, x))
    np.testing.assert_allclose(host(gg), [0.5 / 3 + 0.5, 0.0, 2 / 3 + 0.5], rtol=1e-6)
    np.testing.assert_allclose(host(gx), [1 / 3, 0.0, 1.0], rtol=1e-6)
    gg, gx = npusim.autograd.grad(aten.hardtanh_backward(g, x, -1.0, 1.0).sum(), (g, x))
    assert host(gg).tolist() == [1.0, 0.0, 0.0] and host(gx).tolist() == [0.0, 0.0, 0.0]
    gg, gx = npusim.autograd.grad(aten.leaky_relu_backward(g, x, 0.1, False).sum(), (g, x))
    np.testing.assert_allclose(host(gg), [1.0, 0.1, 1.0], rtol=1e-6)
    assert host(gx).tolist() == [0.0, 0.0, 0.0]


def test_dtypes_shapes_and_errors(device):
    ones = npusim.ones
    mixed = aten.silu_backward(ones(2, dtype=npusim.float16, device=device), ones(2, device=device))
    assert mixed.dtype == npusim.float32
    assert aten.hardswish_backward(ones(2, 3, device=device), ones(3, device=device)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="must match the size"):
        aten.hardswish_backward(ones(3, device=device), ones(2, device=device))
    long = ones(2, dtype=npusim.long, device=device)
    for call, kernel in ((lambda: aten.silu_backward(long, long), "silu_backward_cpu"),
                         (lambda: aten.hardswish_backward(long, long), "hardswish_backward_cpu"),
                         (lambda: aten.hardsigmoid_backward(long, long), "hardsigmoid_backward"),
                         (lambda: aten.hardtanh_backward(long, long, -1, 1), "hardshrink_backward_cpu"),
                         (lambda: aten.leaky_relu_backward(long, long, 0.1, False), "leaky_relu_backward_cpu")):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Long\''):
            call()
    with pytest.raises(RuntimeError, match="In-place leakyReLu backward calculation is triggered with a negative"):
        aten.leaky_relu_backward(ones(2, device=device), ones(2, device=device), -0.1, True)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_torch(dtype):
    torch = pytest.importorskip("torch")
    x, g = _data(dtype, 2)
    tx, tg = torch.from_numpy(x), torch.from_numpy(g)
    nx, ng = npusim.from_numpy(x), npusim.from_numpy(g)
    exact = [("hardswish_backward", ()), ("hardsigmoid_backward", ()), ("hardtanh_backward", (-1.0, 1.0)),
             ("hardtanh_backward", (0.0, 6.0)), ("leaky_relu_backward", (0.01, False))]
    with np.errstate(all="ignore"):
        for name, extra in exact:
            ours = getattr(aten, name)(ng, nx, *extra).numpy()
            theirs = getattr(torch.ops.aten, name)(tg, tx, *extra).numpy()
            np.testing.assert_array_equal(ours, theirs)
            np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
        # silu: sigmoid's own rounding differs (torch: 1 / (1 + exp(-x))). Each factor of dy * s * (1 + x * (1 - s))
        # is then a few ulps apart, and 1 + x * (1 - s) cancels near x = -1.28: the bound is ulps of the terms,
        # |dy| * (1 + |x|), not of the result
        ours, theirs = aten.silu_backward(ng, nx).numpy(), torch.ops.aten.silu_backward(tg, tx).numpy()
        finite = np.isfinite(x) & np.isfinite(g)
        np.testing.assert_array_equal(np.isnan(ours[finite]), np.isnan(theirs[finite]))
        bound = 16 * np.finfo(dtype).eps * np.abs(g[finite]) * (1 + np.abs(x[finite]))
        assert np.all(np.abs(ours[finite] - theirs[finite]) <= bound)


ELU_ARGS = [(1.0, 1.0, 1.0, False), (0.5, 2.0, 1.5, False), (1.6732632423543772, 1.0507009873554805, 1.0, False),
            (1.0, 1.0, 1.0, True)]


def test_elu_and_softplus_backward_blocks_and_autograd(device, intra_op_threads):
    x, g = _data(np.float32, 3)
    with np.errstate(all="ignore"):
        for args in ELU_ARGS:
            _same_bits(K.elu_backward(g, x, *args), np.ascontiguousarray(K.elu_backward(g[None], x[None], *args)[0]))
        for beta, thr in ((1.0, 20.0), (2.0, 1.0)):
            _same_bits(K.softplus_backward(g, x, beta, thr),
                       np.ascontiguousarray(K.softplus_backward(g[None], x[None], beta, thr)[0]))
    for fn, op in ((F.elu, "aten::elu_backward"), (F.selu, None), (lambda t: F.celu(t, 2.0), "aten::elu_backward"),
                   (F.softplus, "aten::softplus_backward")):
        xs = npusim.tensor(np.linspace(-5, 25, 31), device=device, requires_grad=True)
        y = fn(xs)
        seen = op_names_seen(lambda: y.backward(npusim.ones_like(y)))
        if op is not None:
            assert op in seen and "aten::exp" not in seen, seen
        x2 = npusim.tensor(np.linspace(-5, 25, 31), device=device, requires_grad=True)
        (g2,) = npusim.autograd.grad(fn(x2), x2, npusim.ones_like(y), create_graph=True)
        np.testing.assert_allclose(host(xs.grad), host(g2.detach()), rtol=1e-6, atol=1e-7)
    # a NaN input takes the exp side, as torch's vectorised kernels do
    nan = npusim.tensor([NAN], device=device)
    assert math.isnan(aten.elu_backward(npusim.ones(1, device=device), 1.0, 1.0, 1.0, False, nan).item())
    with pytest.raises(RuntimeError, match="In-place elu backward calculation is triggered with a negative slope"):
        aten.elu_backward(npusim.ones(1, device=device), -1.0, 1.0, 1.0, True, nan)
    long = npusim.ones(2, dtype=npusim.long, device=device)
    with pytest.raises(NotImplementedError, match="\"softplus_backward_cpu\" not implemented for 'Long'"):
        aten.softplus_backward(long, long, 1.0, 20.0)


@pytest.mark.oracle
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_elu_and_softplus_backward_match_torch(dtype):
    """torch's vectorised exp is not NumPy's: the results are a few ulps of their terms apart."""
    torch = pytest.importorskip("torch")
    x, g = _data(dtype, 4)
    x = np.clip(x, -30, 30)      # exp's range: the terms stay finite
    eps = np.finfo(dtype).eps
    with np.errstate(all="ignore"):
        for args in ELU_ARGS:
            ours = aten.elu_backward(npusim.from_numpy(g), *args, npusim.from_numpy(x)).numpy()
            theirs = torch.ops.aten.elu_backward(torch.from_numpy(g), *args, torch.from_numpy(x)).numpy()
            np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
            ok = ~np.isnan(ours)
            np.testing.assert_allclose(ours[ok], theirs[ok], rtol=8 * eps, atol=0)
        for beta, thr in ((1.0, 20.0), (2.0, 1.0)):
            ours = aten.softplus_backward(npusim.from_numpy(g), npusim.from_numpy(x), beta, thr).numpy()
            theirs = torch.ops.aten.softplus_backward(torch.from_numpy(g), torch.from_numpy(x), beta, thr).numpy()
            np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
            ok = ~np.isnan(ours)
            np.testing.assert_allclose(ours[ok], theirs[ok], rtol=8 * eps, atol=8 * np.finfo(dtype).tiny)
