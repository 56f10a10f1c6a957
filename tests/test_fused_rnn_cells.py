"""The fused recurrent cells (aten::_thnn_fused_lstm_cell / _thnn_fused_gru_cell and their backward ops): the
composed cell's results and gradients bit for bit, torch's cell math, torch's workspace layouts, gradients by
finite differences (twice), dispatcher visibility (operator callbacks, autocast, no CPU fallback), and the layers
stepping through them."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host, node_names, op_names_seen

import npusim
import npusim.nn as nn

aten = npusim.ops.aten
BATCH, HIDDEN = 3, 5
FLOATS = [npusim.float32, npusim.float64]


def tensor(shape, device, dtype=npusim.float32, seed=0, requires_grad=True):
    a = np.random.default_rng(seed).standard_normal(shape)
    return npusim.tensor(a, dtype=dtype, device=device, requires_grad=requires_grad)


def lstm_inputs(device, dtype=npusim.float32, bias=False):
    gates = 4 * HIDDEN
    ts = [tensor((BATCH, gates), device, dtype, 1), tensor((BATCH, gates), device, dtype, 2),
          tensor((BATCH, HIDDEN), device, dtype, 3)]
    return ts + ([tensor((gates,), device, dtype, 4), tensor((gates,), device, dtype, 5)] if bias else [])


def gru_inputs(device, dtype=npusim.float32, bias=False):
    gates = 3 * HIDDEN
    ts = [tensor((BATCH, gates), device, dtype, 1), tensor((BATCH, gates), device, dtype, 2),
          tensor((BATCH, HIDDEN), device, dtype, 3)]
    return ts + ([tensor((gates,), device, dtype, 4), tensor((gates,), device, dtype, 5)] if bias else [])


# --- the composed cells, single ops (what nn.LSTM / nn.GRU computed before the fused ops) -------------------------

def composed_lstm(input_gates, hidden_gates, cx, input_bias=None, hidden_bias=None):
    gates = input_gates + hidden_gates
    if input_bias is not None:
        gates = gates + input_bias + hidden_bias
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def composed_gru(input_gates, hidden_gates, hx, input_bias=None, hidden_bias=None):
    if input_bias is not None:
        input_gates, hidden_gates = input_gates + input_bias, hidden_gates + hidden_bias
    ir, iz, i_n = input_gates.chunk(3, 1)
    hr, hz, hn = hidden_gates.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (i_n + r * hn).tanh()
    return n + z * (hx - n)


def assert_same(a, b):
    """Bit for bit; in cuda mode within a few ulps (the composed sigmoid there is the npu's own CuPy kernel on
    contiguous inputs, whose exp rounds differently from the one the fused kernel calls)."""
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is None:
            continue
        if x.device.type == "npu" and npusim.npu.runtime_mode() == "cuda":
            np.testing.assert_allclose(host(x), host(y), rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_array_equal(host(x), host(y))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
def test_lstm_cell_gives_the_composed_cell_bit_for_bit(device, dtype, bias):
    args = lstm_inputs(device, dtype, bias)
    hy, cy, workspace = aten._thnn_fused_lstm_cell.default(*args)
    ref_hy, ref_cy = composed_lstm(*args)
    assert_same((hy, cy), (ref_hy, ref_cy))
    grads = (tensor((BATCH, HIDDEN), device, dtype, 6, False), tensor((BATCH, HIDDEN), device, dtype, 7, False))
    assert_same(npusim.autograd.grad((hy, cy), args, grads), npusim.autograd.grad((ref_hy, ref_cy), args, grads))
    assert workspace.shape == (BATCH, 4 * HIDDEN) and not workspace.requires_grad


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
def test_gru_cell_gives_the_composed_cell_bit_for_bit(device, dtype, bias):
    args = gru_inputs(device, dtype, bias)
    hy, workspace = aten._thnn_fused_gru_cell.default(*args)
    ref = composed_gru(*args)
    assert_same((hy,), (ref,))
    grad = tensor((BATCH, HIDDEN), device, dtype, 6, False)
    assert_same(npusim.autograd.grad(hy, args, grad), npusim.autograd.grad(ref, args, grad))
    assert workspace.shape == (BATCH, 5 * HIDDEN) and not workspace.requires_grad


def test_workspaces_have_torch_cuda_layouts(device):
    ig, hg, cx, b_ih, b_hh = lstm_inputs(device, bias=True)
    _, _, workspace = aten._thnn_fused_lstm_cell.default(ig, hg, cx, b_ih, b_hh)
    i, f, g, o = (ig + hg + b_ih + b_hh).chunk(4, 1)
    expected = npusim.cat([i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()], 1)
    np.testing.assert_allclose(host(workspace), host(expected), rtol=1e-6, atol=1e-7)
    ig, hg, hx, b_ih, b_hh = gru_inputs(device, bias=True)
    hy, workspace = aten._thnn_fused_gru_cell.default(ig, hg, hx, b_ih, b_hh)
    ir, iz, i_n = (ig + b_ih).chunk(3, 1)
    hr, hz, hn = (hg + b_hh).chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    expected = npusim.cat([r, z, (i_n + r * hn).tanh(), hn, hx], 1)
    np.testing.assert_allclose(host(workspace), host(expected), rtol=1e-6, atol=1e-7)


def test_backward_ops_called_directly(device):
    ig, hg, cx = (t.detach() for t in lstm_inputs(device))
    hy, cy, workspace = aten._thnn_fused_lstm_cell.default(ig, hg, cx)
    grad = tensor((BATCH, HIDDEN), device, seed=8, requires_grad=False)
    assert aten._thnn_fused_lstm_cell_backward_impl.default(None, None, cx, cy, workspace, True) == (None, None, None)
    grad_gates, grad_cx, grad_bias = aten._thnn_fused_lstm_cell_backward_impl.default(grad, None, cx, cy, workspace,
                                                                                      True)
    np.testing.assert_allclose(host(grad_bias), host(grad_gates).sum(0), rtol=1e-6)
    # only the cell's gradient: the output gate gets none
    grad_gates, grad_cx, grad_bias = aten._thnn_fused_lstm_cell_backward_impl.default(None, grad, cx, cy, workspace,
                                                                                      False)
    assert grad_bias is None and not host(grad_gates)[:, 3 * HIDDEN:].any()
    np.testing.assert_allclose(host(grad_cx), host(grad) * host(workspace)[:, HIDDEN:2 * HIDDEN], rtol=1e-6)
    five = aten._thnn_fused_lstm_cell_backward.default(grad, grad, cx, cy, workspace, True)
    assert len(five) == 5 and five[0] is five[1] and five[3] is five[4]

    ig, hg, hx = (t.detach() for t in gru_inputs(device))
    _, workspace = aten._thnn_fused_gru_cell.default(ig, hg, hx)
    grads = aten._thnn_fused_gru_cell_backward.default(grad, workspace, False)
    assert grads[3] is None and grads[4] is None
    with_bias = aten._thnn_fused_gru_cell_backward.default(grad, workspace, True)
    np.testing.assert_allclose(host(with_bias[3]), host(grads[0]).sum(0), rtol=1e-6)
    np.testing.assert_allclose(host(with_bias[4]), host(grads[1]).sum(0), rtol=1e-6)


def test_half_inputs_are_computed_in_float32_and_rounded_once(device):
    args = lstm_inputs(device, bias=True)
    half = [t.detach().half() for t in args]
    hy, cy, _ = aten._thnn_fused_lstm_cell.default(*half)
    ref_hy, ref_cy, _ = aten._thnn_fused_lstm_cell.default(*[t.float() for t in half])
    assert hy.dtype is npusim.float16
    assert_same((hy, cy), (ref_hy.half(), ref_cy.half()))
    args = gru_inputs(device, bias=True)
    half = [t.detach().half() for t in args]
    assert_same(aten._thnn_fused_gru_cell.default(*half)[:1],
                (aten._thnn_fused_gru_cell.default(*[t.float() for t in half])[0].half(),))


def test_argument_checks(device):
    ig, hg, cx = lstm_inputs(device)
    with pytest.raises(RuntimeError, match="'hidden_gates' to have the same size"):
        aten._thnn_fused_lstm_cell.default(ig, hg[:, :8], cx)
    with pytest.raises(RuntimeError, match="'prev_hidden' to have size"):
        aten._thnn_fused_lstm_cell.default(ig, hg, cx[:, :2])
    with pytest.raises(RuntimeError, match="Expected 2-dimensional tensor"):
        aten._thnn_fused_lstm_cell.default(ig[0], hg[0], cx)
    with pytest.raises(RuntimeError, match="'input_bias' to have size"):
        aten._thnn_fused_lstm_cell.default(ig, hg, cx, ig[0, :3], hg[0])
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        aten._thnn_fused_gru_cell.default(*gru_inputs(device)[:2], gru_inputs(device, npusim.float64)[2])


# --- gradients by finite differences, and under create_graph ------------------------------------------------------

@pytest.mark.parametrize("bias", [False, True], ids=["no_bias", "bias"])
def test_float64_gradcheck_and_gradgradcheck(device, bias):
    lstm = lstm_inputs(device, npusim.float64, bias)
    gru = gru_inputs(device, npusim.float64, bias)

    def lstm_cell(*args):
        return aten._thnn_fused_lstm_cell.default(*args)[:2]

    def gru_cell(*args):
        return aten._thnn_fused_gru_cell.default(*args)[0]

    for fn, args in ((lstm_cell, lstm), (gru_cell, gru)):
        assert npusim.autograd.gradcheck(fn, tuple(args))
        assert npusim.autograd.gradgradcheck(fn, tuple(args))


def test_create_graph_runs_the_differentiable_composition(device):
    args = lstm_inputs(device, npusim.float64, bias=True)
    hy, cy, _ = aten._thnn_fused_lstm_cell.default(*args)
    plain = npusim.autograd.grad((hy * hy).sum() + cy.sum(), args, retain_graph=True)
    twice = npusim.autograd.grad((hy * hy).sum() + cy.sum(), args, create_graph=True)
    for a, b in zip(plain, twice):
        np.testing.assert_allclose(host(a), host(b), rtol=1e-12, atol=1e-14)
    assert twice[0].requires_grad


# --- torch as the oracle (its CPU build has no fused kernels: its cells' composed math) --------------------------

@pytest.mark.oracle
def test_lstm_and_gru_cells_match_torch_cells(torch, device):
    lstm = [t.detach() for t in lstm_inputs(device, bias=True)]
    t_lstm = [torch.tensor(host(t), requires_grad=True) for t in lstm]
    n_lstm = [t.clone().requires_grad_() for t in lstm]
    hy, cy, _ = aten._thnn_fused_lstm_cell.default(*n_lstm)
    gates = t_lstm[0] + t_lstm[1] + t_lstm[3] + t_lstm[4]
    i, f, g, o = gates.chunk(4, 1)
    t_cy = torch.sigmoid(f) * t_lstm[2] + torch.sigmoid(i) * torch.tanh(g)
    t_hy = torch.sigmoid(o) * torch.tanh(t_cy)
    np.testing.assert_allclose(host(hy), t_hy.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(cy), t_cy.detach().numpy(), rtol=1e-5, atol=1e-6)
    ((hy * 2).sum() + (cy * cy).sum()).backward()
    ((t_hy * 2).sum() + (t_cy * t_cy).sum()).backward()
    for n, t in zip(n_lstm, t_lstm):
        np.testing.assert_allclose(host(n.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)

    gru = [t.detach() for t in gru_inputs(device, bias=True)]
    t_gru = [torch.tensor(host(t), requires_grad=True) for t in gru]
    n_gru = [t.clone().requires_grad_() for t in gru]
    hy, _ = aten._thnn_fused_gru_cell.default(*n_gru)
    # torch.nn.GRUCell's recurrence on the same projections
    cell = torch.nn.GRUCell(1, HIDDEN)
    ig, hg = t_gru[0] + t_gru[3], t_gru[1] + t_gru[4]
    ir, iz, i_n = ig.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = torch.sigmoid(ir + hr), torch.sigmoid(iz + hz)
    n = torch.tanh(i_n + r * hn)
    t_hy = (1 - z) * n + z * t_gru[2]
    with torch.no_grad():   # the same formula as torch's own cell, checked through its weights
        cell.weight_ih.zero_()
        cell.bias_ih.copy_(ig[0])
        cell.weight_hh.zero_()
        cell.bias_hh.copy_(hg[0])
        np.testing.assert_allclose(cell(torch.zeros(1, 1), t_gru[2][:1]).numpy(), t_hy[:1].numpy(), rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(host(hy), t_hy.detach().numpy(), rtol=1e-5, atol=1e-6)
    (hy * hy).sum().backward()
    (t_hy * t_hy).sum().backward()
    for n_, t in zip(n_gru, t_gru):
        np.testing.assert_allclose(host(n_.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)


# --- through the dispatcher ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_layers_run_the_whole_layer_op_which_callbacks_see(device, mode):
    npusim.manual_seed(0)
    layer = getattr(nn, mode)(4, HIDDEN).to(device)
    x = npusim.randn(6, 2, 4, device=device)
    result = {}
    seen = op_names_seen(lambda: result.setdefault("out", layer(x)[0]))
    assert seen.count("aten::mkldnn_rnn_layer") == 1 and "aten::sigmoid" not in seen
    assert not any(n.startswith("aten::_thnn_fused") for n in seen)
    out = result["out"]
    assert node_names(out.grad_fn).count("MkldnnRnnLayerBackward0") == 1
    seen = op_names_seen(lambda: out.sum().backward())
    assert seen.count("aten::mkldnn_rnn_layer_backward") == 1


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_packed_layers_step_through_the_fused_op_which_callbacks_see(device, mode):
    npusim.manual_seed(0)
    layer = getattr(nn, mode)(4, HIDDEN).to(device)
    packed = nn.utils.rnn.pack_padded_sequence(npusim.randn(6, 2, 4, device=device), [6, 6])
    name = "aten::_thnn_fused_lstm_cell" if mode == "LSTM" else "aten::_thnn_fused_gru_cell"
    backward_name = ("aten::_thnn_fused_lstm_cell_backward_impl" if mode == "LSTM" else
                     "aten::_thnn_fused_gru_cell_backward")
    result = {}
    seen = op_names_seen(lambda: result.setdefault("out", layer(packed)[0].data))
    assert seen.count(name) == 6 and "aten::sigmoid" not in seen
    out = result["out"]
    assert node_names(out.grad_fn).count(f"ThnnFused{mode.capitalize()}CellBackward0") == 6
    seen = op_names_seen(lambda: out.sum().backward())
    assert seen.count(backward_name) == 6


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_16_bit_layers_keep_the_composed_step(device, mode):
    layer = getattr(nn, mode)(4, HIDDEN).to(device).half()
    x = npusim.randn(3, 2, 4, device=device).half()
    seen = op_names_seen(lambda: layer(x))
    assert not any(n.startswith("aten::_thnn_fused") for n in seen) and "aten::sigmoid" in seen


def test_the_npu_runs_its_own_kernels_and_autocast_casts_the_fused_cells():
    if not npusim.npu.is_available():
        pytest.skip("no npu")
    for name in ("_thnn_fused_lstm_cell", "_thnn_fused_gru_cell", "_thnn_fused_lstm_cell_backward_impl",
                 "_thnn_fused_gru_cell_backward"):
        op = getattr(aten, name).default
        assert op.has_kernel_for_dispatch_key("PrivateUse1") and op.has_kernel_for_dispatch_key("CPU")
    before = npusim.npu.fallback_stats()
    layer = nn.LSTM(4, HIDDEN).npu()
    layer(npusim.randn(3, 2, 4, device="npu"))[0].sum().backward()
    assert npusim.npu.fallback_stats() == before
    ig, hg, cx = (t.detach() for t in lstm_inputs("npu"))
    with npusim.autocast("npu", dtype=npusim.float16):
        hy, cy, workspace = aten._thnn_fused_lstm_cell.default(ig, hg, cx)
        gru_hy, _ = aten._thnn_fused_gru_cell.default(*(t.detach() for t in gru_inputs("npu")))
    assert hy.dtype is cy.dtype is workspace.dtype is gru_hy.dtype is npusim.float16


def test_layers_under_autocast_keep_their_results(device):
    npusim.manual_seed(0)
    layer = nn.LSTM(4, HIDDEN).to(device)
    x = npusim.randn(3, 2, 4, device=device)
    with npusim.autocast(device, dtype=npusim.bfloat16 if device == "cpu" else npusim.float16):
        out, (h, c) = layer(x)
    # the state stays in float32 (the composed step's promotion), as before the fused ops
    assert c.dtype is npusim.float32


# --- vmap ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_vmap_folds_the_batch_into_the_cells_rows(device, mode, monkeypatch):
    import warnings

    import npusim.nn.modules.rnn as rnn_module
    from npusim.func import functional_call, grad, vmap
    from npusim.func.batched_fallback import STATS
    # under vmap the layers step through the cells; so does the per-sample loop compared with it here
    monkeypatch.setattr(rnn_module, "_LAYER_MODES", {})
    npusim.manual_seed(0)
    layer = getattr(nn, mode)(2, 3).to(device)
    xs = npusim.randn(4, 5, 2, 2, device=device)
    params = {k: v.detach() for k, v in layer.named_parameters()}

    def loss(p, x):
        return (functional_call(layer, p, (x,))[0] ** 2).sum()

    before = sum(STATS["per_sample"].values())
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # no per-sample fallback warning
        out = vmap(lambda x: layer(x)[0])(xs)
        grads = vmap(grad(loss), in_dims=(None, 0))(params, xs)
    assert sum(STATS["per_sample"].values()) == before
    assert_same((out,), (npusim.stack([layer(x)[0] for x in xs]),))
    for k in params:
        assert_same((grads[k],), (npusim.stack([grad(loss)(params, x)[k] for x in xs]),))


def test_vmap_with_a_batched_bias_runs_per_sample(device):
    import warnings

    from npusim.func import vmap
    gates, bias = npusim.randn(4, 3, 12, device=device), npusim.randn(4, 12, device=device)

    def cell(g, b):
        return aten._thnn_fused_lstm_cell.default(g, g, g[:, :3], b, b)[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = vmap(cell)(gates, bias)
    assert_same((out,), (npusim.stack([cell(g, b) for g, b in zip(gates, bias)]),))
