"""The whole-layer recurrence op (aten::mkldnn_rnn_layer and its backward) that nn.LSTM / nn.GRU run over an
unpacked sequence: the per-step fused cells' results and gradients bit for bit (W_hh's gradient, one product over
all steps where the steps added one product each, within rounding), the differentiable backward under
create_graph, kernels on both devices, and its argument checks."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host, node_names

import npusim
import npusim.nn as nn
import npusim.nn.modules.rnn as rnn_module

aten = npusim.ops.aten

CONFIGS = [{}, {"batch_first": True}, {"bidirectional": True}, {"bias": False},
           {"num_layers": 2, "bidirectional": True, "batch_first": True}]


def _run(layer, mode, x, state, loss_on):
    for p in layer.parameters():
        p.grad = None
    leaves = [x] + ([] if state is None else list(state))
    for t in leaves:
        t.grad = None
    out, final = layer(x, None if state is None else (tuple(state) if mode == "LSTM" else state[0]))
    finals = list(final) if mode == "LSTM" else [final]
    loss = (out * out).sum() if loss_on != "final" else 0
    if loss_on != "output":
        loss = loss + sum((f ** 3).sum() for f in finals)
    loss.backward()
    named = [("output", out)] + [("final", f) for f in finals]
    named += [(name, p.grad) for name, p in layer.named_parameters()] + [("leaf", t.grad) for t in leaves]
    return [(name, host(t)) for name, t in named]


def _step_by_step(fn):
    """fn() with the layers stepping through the fused cells (the path the layer op replaces)."""
    saved = dict(rnn_module._LAYER_MODES)
    rnn_module._LAYER_MODES.clear()
    try:
        return fn()
    finally:
        rnn_module._LAYER_MODES.update(saved)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("dtype", [npusim.float32, npusim.float64])
def test_the_layer_op_equals_the_steps_bit_for_bit(device, mode, config, dtype):
    npusim.manual_seed(0)
    layer = getattr(nn, mode)(4, 5, **config).to(device=device, dtype=dtype)
    shape = (3, 6, 4) if config.get("batch_first") else (6, 3, 4)
    x = npusim.randn(*shape, device=device, dtype=dtype, requires_grad=True)
    states = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    for with_state in (False, True):
        state = None
        if with_state:
            state = [npusim.randn(states, 3, 5, device=device, dtype=dtype, requires_grad=True)
                     for _ in range(2 if mode == "LSTM" else 1)]
        for loss_on in ("output", "both", "final"):
            fused = _run(layer, mode, x, state, loss_on)
            stepped = _step_by_step(lambda: _run(layer, mode, x, state, loss_on))
            for (name, a), (_, b) in zip(fused, stepped):
                if name.startswith("weight_hh"):
                    tol = 1e-5 if dtype is npusim.float32 else 1e-13
                    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
                else:
                    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_one_op_and_one_node_per_layer(device, mode):
    layer = getattr(nn, mode)(4, 5, num_layers=2).to(device)
    out, _ = layer(npusim.randn(6, 3, 4, device=device))
    names = node_names(out.grad_fn)
    assert names.count("MkldnnRnnLayerBackward0") == 2
    assert not any(n.startswith("ThnnFused") for n in names)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_create_graph_runs_the_differentiable_backward(device, mode):
    npusim.manual_seed(0)
    layer = getattr(nn, mode)(3, 4, bidirectional=True).to(device=device, dtype=npusim.float64)
    x = npusim.randn(5, 2, 3, device=device, dtype=npusim.float64, requires_grad=True)
    params = list(layer.parameters())

    def second_order():
        out, _ = layer(x)
        grads = npusim.autograd.grad((out * out).sum(), [x] + params, create_graph=True)
        return [host(g) for g in npusim.autograd.grad(sum((g * g).sum() for g in grads), [x] + params)]

    for a, b in zip(second_order(), _step_by_step(second_order)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_gradgradcheck_through_the_layer_op(device):
    npusim.manual_seed(0)
    layer = nn.LSTM(2, 3).to(device=device, dtype=npusim.float64)
    x = npusim.randn(3, 2, 2, device=device, dtype=npusim.float64, requires_grad=True)
    h0 = npusim.randn(1, 2, 3, device=device, dtype=npusim.float64, requires_grad=True)
    c0 = npusim.randn(1, 2, 3, device=device, dtype=npusim.float64, requires_grad=True)

    def fn(x, h0, c0):
        out, (hn, cn) = layer(x, (h0, c0))
        return out, hn, cn

    assert npusim.autograd.gradcheck(fn, (x, h0, c0))
    assert npusim.autograd.gradgradcheck(fn, (x, h0, c0))


def test_kernels_on_both_devices():
    for name in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward"):
        op = getattr(aten, name).default
        assert op.has_kernel_for_dispatch_key("CPU")
        if npusim.npu.is_available():
            assert op.has_kernel_for_dispatch_key("PrivateUse1")


def test_argument_checks(device):
    x, w_ih, w_hh = (npusim.randn(*s, device=device) for s in ((4, 2, 3), (20, 3), (20, 5)))
    b, h = npusim.randn(20, device=device), npusim.randn(2, 5, device=device)
    layer = aten.mkldnn_rnn_layer.default
    args = [x, w_ih, w_hh, b, b, h, h, False, [], 2, 5, 1, True, False, False, True]
    out, hy, cy, _ = layer(*args)
    assert out.shape == (4, 2, 5) and hy.shape == cy.shape == (2, 5)
    for index, value in ((9, 0), (8, [2, 2]), (10, 6)):
        bad = list(args)
        bad[index] = value
        with pytest.raises(RuntimeError):
            layer(*bad)
