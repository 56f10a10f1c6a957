"""layer_norm's gradient is torch's ``native_layer_norm_backward`` op: one dispatched op (torch's formulas) when
no graph of the gradient is recorded; under create_graph the differentiable composition runs."""
import numpy as np
import pytest
import torch

import npusim
from conftest import host
from npusim.profiler import RecordFunctionCallback, add_global_callback, clear_callbacks

aten = npusim.ops.aten


def _grads(lib, x, shape, w, b, g, dtype):
    X = lib.tensor(x, dtype=dtype, requires_grad=True)
    params = [None if p is None else lib.tensor(p, dtype=dtype, requires_grad=True) for p in (w, b)]
    lib.nn.functional.layer_norm(X, shape, *params).backward(lib.tensor(g, dtype=dtype))
    return [None if t is None else t.grad.numpy() for t in [X] + params]


@pytest.mark.oracle
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("name,tol", [("float32", 2e-5), ("float64", 1e-12)])
def test_gradients_match_torch(affine, name, tol):
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((3, 5, 4, 6)) * 3 + 1, rng.standard_normal((3, 5, 4, 6))
    w, b = (rng.standard_normal((4, 6)), rng.standard_normal((4, 6))) if affine else (None, None)
    got = _grads(npusim, x, [4, 6], w, b, g, getattr(npusim, name))
    want = _grads(torch, x, [4, 6], w, b, g, getattr(torch, name))
    for a, t in zip(got, want):
        assert (a is None) == (t is None)
        if a is not None:
            np.testing.assert_allclose(a, t, rtol=tol, atol=tol)


def test_the_op_and_its_mask(device):
    rng = np.random.default_rng(1)
    x = npusim.tensor(rng.standard_normal((8, 16)), dtype=npusim.float32, device=device)
    w, b = npusim.ones(16, device=device) * 2, npusim.zeros(16, device=device)
    _, mean, rstd = aten.native_layer_norm(x, [16], w, b, 1e-5)
    g = npusim.tensor(rng.standard_normal((8, 16)), dtype=npusim.float32, device=device)
    gi, gw, gb = aten.native_layer_norm_backward(g, x, [16], mean, rstd, w, b, [True, True, True])
    assert gi.shape == x.shape and gw.shape == (16,) and gb.shape == (16,)
    np.testing.assert_allclose(host(gb), host(g).sum(0), rtol=1e-5, atol=1e-5)
    xhat = (host(x) - host(mean)) * host(rstd)
    np.testing.assert_allclose(host(gw), (host(g) * xhat).sum(0), rtol=1e-5, atol=1e-5)
    only = aten.native_layer_norm_backward(g, x, [16], mean, rstd, w, b, [False, True, False])
    assert only[0] is None and only[2] is None
    np.testing.assert_array_equal(host(only[1]), host(gw))


def test_half_input_gradients_in_float32_then_rounded(device):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 32)).astype(np.float16)
    X = npusim.tensor(x, device=device, requires_grad=True)
    W = npusim.ones(32, device=device, requires_grad=True)
    npusim.nn.functional.layer_norm(X, [32], W).sum().backward()
    assert X.grad.dtype == npusim.float16 and W.grad.dtype == npusim.float32
    TX, TW = torch.tensor(x, requires_grad=True), torch.ones(32, requires_grad=True)
    torch.nn.functional.layer_norm(TX, [32], TW).sum().backward()
    np.testing.assert_allclose(host(X.grad).astype(np.float32), TX.grad.float().numpy(), atol=2e-3)
    np.testing.assert_allclose(host(W.grad), TW.grad.numpy(), rtol=1e-3, atol=1e-3)


def test_backward_is_one_dispatched_op_and_create_graph_still_differentiates(device):
    x = npusim.randn(4, 8, device=device, requires_grad=True)
    ln = npusim.nn.LayerNorm(8).to(device)
    seen = []
    add_global_callback(RecordFunctionCallback(lambda fn: seen.append(fn.name)))
    try:
        ln(x).pow(2).sum().backward()
    finally:
        clear_callbacks()
    assert "aten::native_layer_norm_backward" in seen
    assert not {"aten::mean", "aten::sub"} & set(seen[seen.index("aten::native_layer_norm_backward"):])
    x.grad = None
    (gx,) = npusim.autograd.grad(ln(x).pow(3).sum(), x, create_graph=True)
    gx.sum().backward()                      # the composition under create_graph is differentiable again
    assert x.grad is not None and x.grad.shape == x.shape


def test_empty_input(device):
    x = npusim.empty(0, 5, device=device, requires_grad=True)
    ln = npusim.nn.LayerNorm(5).to(device)
    ln(x).sum().backward()
    assert x.grad.shape == (0, 5) and host(ln.weight.grad).tolist() == [0.0] * 5


def _double_backward(lib, x, go, w, b, outer, which):
    """The gradients of native_layer_norm_backward's outputs (weighted by ``outer``, None entries skipped) with
    respect to grad_out, input and weight, called directly on tensors that need them."""
    X, GO = lib.from_numpy(x.copy()), lib.from_numpy(go.copy())
    W = None if w is None else lib.from_numpy(w.copy())
    B = None if b is None else lib.from_numpy(b.copy())
    _, mean, rstd = lib.ops.aten.native_layer_norm(X, list(x.shape[-1:]), W, B, 1e-5)
    leaves = [t.requires_grad_() for t in (GO, X, W) if t is not None]
    mask = [True, W is not None, B is not None]
    outs = lib.ops.aten.native_layer_norm_backward(GO, X, list(x.shape[-1:]), mean, rstd, W, B, mask)
    picked = [(o, lib.from_numpy(g)) for o, g, use in zip(outs, outer, which) if use and o is not None]
    grads = lib.autograd.grad([o for o, _ in picked], leaves, [g for _, g in picked], allow_unused=True)
    return [None if t is None else t.detach().numpy() for t in grads]


@pytest.mark.oracle
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("which", [(True, True, True), (True, False, False), (False, True, False),
                                   (False, False, True), (False, True, True)])
def test_double_backward_of_the_op_is_torchs(affine, which):
    rng = np.random.default_rng(6)
    x, go = rng.standard_normal((3, 2, 5)) * 2 + 1, rng.standard_normal((3, 2, 5))
    w, b = (rng.standard_normal(5), rng.standard_normal(5)) if affine else (None, None)
    if not affine and not which[0]:
        pytest.skip("without weight and bias only grad_input depends on the inputs")
    outer = [rng.standard_normal((3, 2, 5)), rng.standard_normal(5), rng.standard_normal(5)]
    got = _double_backward(npusim, x, go, w, b, outer, which)
    want = _double_backward(torch, x, go, w, b, outer, which)
    assert len(got) == len(want)
    for a, t in zip(got, want):
        assert (a is None) == (t is None)
        if a is not None:
            np.testing.assert_allclose(a, t, rtol=1e-10, atol=1e-12)
