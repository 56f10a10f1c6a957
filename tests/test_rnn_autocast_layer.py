"""nn.LSTM / nn.GRU on the npu under autocast: the whole layer runs as one ``mkldnn_rnn_layer`` with 16-bit input and
weights and float32 states, and its outputs and states are the step-by-step autocast layer's bit for bit; its
gradients are the float32 backward's (within float16 rounding of the step-by-step graph's, which rounds each op)."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host, op_names_seen

import npusim
import npusim.nn as nn
import npusim.nn.modules.rnn as rnn_module
from npusim.kernels import nn_rnn as K

pytestmark = pytest.mark.skipif(not npusim.npu.is_available(), reason="no npu")

CASES = [dict(), dict(batch_first=False), dict(bias=False), dict(num_layers=2), dict(bidirectional=True),
         dict(steps=12, hidden=16, features=8)]


def run(mode, whole_layer, monkeypatch, steps=7, batch=3, features=4, hidden=5, batch_first=True, **kwargs):
    npusim.manual_seed(0)
    layer = getattr(nn, mode)(features, hidden, batch_first=batch_first, **kwargs).to("npu")
    shape = (batch, steps, features) if batch_first else (steps, batch, features)
    x = npusim.randn(*shape, device="npu").requires_grad_()
    with monkeypatch.context() as m:
        if not whole_layer:
            m.setattr(rnn_module, "_LAYER_MODES", {})
        seen = []

        def forward():
            with npusim.autocast("npu", dtype=npusim.float16):
                seen.append(layer(x))
        names = op_names_seen(forward)
    out, state = seen[0]
    states = state if isinstance(state, tuple) else (state,)
    loss = (out ** 2).sum() + sum((s ** 2).sum() for s in states)
    loss.backward()
    return names, [out, *states], [x.grad] + [p.grad for p in layer.parameters()]


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_layer_op_computes_the_autocast_steps(mode, case, monkeypatch):
    names, results, grads = run(mode, True, monkeypatch, **case)
    step_names, step_results, step_grads = run(mode, False, monkeypatch, **case)
    layers = case.get("num_layers", 1) * (2 if case.get("bidirectional") else 1)
    assert names.count("aten::mkldnn_rnn_layer") == layers and "aten::sigmoid" not in names
    assert "aten::sigmoid" in step_names
    for r, s in zip(results, step_results):
        assert r.dtype is s.dtype is npusim.float32      # the states stay float32, as the steps' promotion has it
        np.testing.assert_array_equal(host(r), host(s))
    for g, s in zip(grads, step_grads):
        assert g.dtype is s.dtype
        np.testing.assert_allclose(host(g), host(s), rtol=0, atol=5e-3 * np.abs(host(s)).max())


def test_16_bit_states_and_the_cpu_keep_the_steps(monkeypatch):
    layer = nn.LSTM(4, 5).to("npu")
    x = npusim.randn(3, 2, 4, device="npu")
    state = (npusim.zeros(1, 2, 5, device="npu").half(), npusim.zeros(1, 2, 5, device="npu").half())
    with npusim.autocast("npu", dtype=npusim.float16):
        names = op_names_seen(lambda: layer(x, state))
    assert "aten::mkldnn_rnn_layer" not in names
    with npusim.autocast("cpu", dtype=npusim.bfloat16):
        names = op_names_seen(lambda: nn.GRU(4, 5)(npusim.randn(3, 2, 4)))
    assert "aten::mkldnn_rnn_layer" not in names


def test_round_to_float16_is_the_cast():
    special = np.array([0.0, -0.0, 2.0 ** -25, -2.0 ** -25, 2.0 ** -24 * 1.5, 2.0 ** -24 * 2.5, 2.0 ** -14,
                        2.0 ** -14 * (1 - 2.0 ** -12), 1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 65504, 65519.99,
                        65520, -65520, 1e9, np.inf, -np.inf, np.nan, 1e-40, -1e-45], np.float32)
    rng = np.random.default_rng(0)
    for x in (special, (rng.standard_normal(5000) * 10.0 ** rng.integers(-9, 5, 5000)).astype(np.float32)):
        want = x.astype(np.float16).astype(np.float32)
        got = K.round_to(x.copy(), np.dtype(np.float16))
        np.testing.assert_array_equal(got.view(np.int32)[~np.isnan(want)], want.view(np.int32)[~np.isnan(want)])
        assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_double_backward_replays_the_steps(mode, monkeypatch):
    def second_order(whole_layer):
        npusim.manual_seed(0)
        layer = getattr(nn, mode)(3, 4, batch_first=True).to("npu")
        x = npusim.randn(2, 5, 3, device="npu").requires_grad_()
        with monkeypatch.context() as m:
            if not whole_layer:
                m.setattr(rnn_module, "_LAYER_MODES", {})
            with npusim.autocast("npu", dtype=npusim.float16):
                out = layer(x)[0]
        params = list(layer.parameters())
        grads = npusim.autograd.grad((out ** 2).sum(), [x] + params, create_graph=True)
        sum((g ** 2).sum() for g in grads).backward()
        return [host(p.grad) for p in params] + [host(x.grad)]
    for got, want in zip(second_order(True), second_order(False)):
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-2 * np.abs(want).max())


def test_bounded_rounding_keeps_infinities_and_nans():
    rounding = K._Rounding(np, np.dtype(np.float16))
    x = np.array([np.inf, -np.inf, np.nan, 0.3, -65504.0, 1.0 - 2.0 ** -12, -0.0], np.float32)
    got = rounding(x.copy(), bounded=True)
    want = x.astype(np.float16).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(want)].view(np.int32), want[~np.isnan(want)].view(np.int32))


def test_infinite_and_nan_inputs_propagate_as_the_steps_do(monkeypatch):
    for value in (np.inf, np.nan, 70000.0):
        results = []
        for whole_layer in (True, False):
            npusim.manual_seed(0)
            layer = nn.GRU(3, 4).to("npu")
            x = npusim.randn(5, 2, 3, device="npu")
            x[2, 1, 0] = value
            with monkeypatch.context() as m:
                if not whole_layer:
                    m.setattr(rnn_module, "_LAYER_MODES", {})
                with npusim.autocast("npu", dtype=npusim.float16):
                    results.append(host(layer(x)[0]))
        np.testing.assert_array_equal(*results)


def test_the_npu_autocast_leaves_the_layer_op_alone():
    # torch's CUDA autocast lists do not name mkldnn_rnn_layer (only its cpu list does), so the float32 states the
    # layers hand in reach the kernel uncast
    op = npusim.ops.aten.mkldnn_rnn_layer.default
    assert not op.has_kernel_for_dispatch_key("AutocastPrivateUse1")
    assert op.has_kernel_for_dispatch_key("AutocastCPU")
