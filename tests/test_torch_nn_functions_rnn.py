"""torch.lstm / gru / rnn_tanh / rnn_relu (both overloads) and the *_cell functions: they equal the nn modules with
the same weights on every device, take torch's arguments and refuse what torch refuses; against torch, values and
gradients agree."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.nn.utils.rnn import pack_padded_sequence

pytestmark = pytest.mark.usefixtures("torch_on_one_thread")

T, B, I, H = 5, 3, 3, 4
LAYER_FUNCTIONS = {"LSTM": "lstm", "GRU": "gru", "RNN_TANH": "rnn_tanh", "RNN_RELU": "rnn_relu"}


def randn(*shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _module(mode, device, **kwargs):
    npusim.manual_seed(0)
    if mode == "LSTM":
        return nn.LSTM(I, H, **kwargs).to(device)
    if mode == "GRU":
        return nn.GRU(I, H, **kwargs).to(device)
    return nn.RNN(I, H, nonlinearity="tanh" if mode == "RNN_TANH" else "relu", **kwargs).to(device)


def _states(mode, layers, batch, device, seed=1, proj=0):
    h = npusim.tensor(randn(layers, batch, proj or H, seed=seed), device=device)
    if mode != "LSTM":
        return h
    return h, npusim.tensor(randn(layers, batch, H, seed=seed + 1), device=device)


def _flat(out):
    flat = []
    for item in out:
        flat.extend(item if isinstance(item, tuple) else [item])
    return flat


def _same(a, b, tol=0.0):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        np.testing.assert_allclose(host(x), host(y), rtol=tol, atol=tol)


# --- the layer functions equal the modules -------------------------------------------------------------------

@pytest.mark.parametrize("mode", list(LAYER_FUNCTIONS))
@pytest.mark.parametrize("bidirectional, layers, batch_first", [(False, 1, False), (True, 2, True)])
def test_layer_function_equals_module(device, mode, bidirectional, layers, batch_first):
    m = _module(mode, device, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first)
    x = npusim.tensor(randn(B, T, I) if batch_first else randn(T, B, I), device=device)
    hx = _states(mode, layers * (2 if bidirectional else 1), B, device)
    fn = getattr(npusim, LAYER_FUNCTIONS[mode])
    got = fn(x, hx, m._flat_weights, True, layers, 0.0, False, bidirectional, batch_first)
    assert isinstance(got, tuple) and len(got) == (3 if mode == "LSTM" else 2)
    # the same ops in the same order as the module's forward: bit-identical
    _same(got, _flat(m(x, hx)))


@pytest.mark.parametrize("mode", list(LAYER_FUNCTIONS))
def test_packed_overload_equals_module_on_a_packed_sequence(device, mode):
    m = _module(mode, device, bidirectional=True)
    x = npusim.tensor(randn(T, B, I), device=device)
    packed = pack_padded_sequence(x, [5, 3, 2])
    hx = _states(mode, 2, B, device)
    fn = getattr(npusim, LAYER_FUNCTIONS[mode])
    got = fn(packed.data, packed.batch_sizes, hx, m._flat_weights, True, 1, 0.0, False, True)
    out, state = m(packed, hx)
    _same(got, [out.data] + _flat((state,)))


def test_keyword_arguments_and_no_biases(device):
    m = _module("GRU", device, bias=False)
    x = npusim.tensor(randn(T, B, I), device=device)
    hx = _states("GRU", 1, B, device)
    got = npusim.gru(input=x, hx=hx, params=m._flat_weights, has_biases=False, num_layers=1, dropout=0.0,
                     train=False, bidirectional=False, batch_first=False)
    _same(got, _flat(m(x, hx)))


def test_lstm_with_projections(device):
    npusim.manual_seed(0)
    m = nn.LSTM(I, H, proj_size=2).to(device)
    x = npusim.tensor(randn(T, B, I), device=device)
    hx = _states("LSTM", 1, B, device, proj=2)
    out, h, c = npusim.lstm(x, hx, m._flat_weights, True, 1, 0.0, False, False, False)
    assert out.shape == (T, B, 2) and h.shape == (1, B, 2) and c.shape == (1, B, H)
    _same((out, h, c), _flat(m(x, hx)))


def test_dropout_between_layers_only_in_training(device):
    m = _module("RNN_TANH", device, num_layers=2)
    x = npusim.tensor(randn(T, B, I), device=device)
    hx = _states("RNN_TANH", 2, B, device)
    eval_out = npusim.rnn_tanh(x, hx, m._flat_weights, True, 2, 0.5, False, False, False)
    _same(eval_out, npusim.rnn_tanh(x, hx, m._flat_weights, True, 2, 0.0, True, False, False))
    npusim.manual_seed(3)
    a = npusim.rnn_tanh(x, hx, m._flat_weights, True, 2, 0.5, True, False, False)
    npusim.manual_seed(3)
    b = npusim.rnn_tanh(x, hx, m._flat_weights, True, 2, 0.5, True, False, False)
    _same(a, b)
    assert not np.allclose(host(a[0]), host(eval_out[0]))


def test_layer_functions_are_differentiable(device):
    m = _module("LSTM", device)
    x = npusim.tensor(randn(T, B, I), device=device, requires_grad=True)
    out, h, c = npusim.lstm(x, _states("LSTM", 1, B, device), m._flat_weights, True, 1, 0.0, False, False, False)
    (out.sum() + c.sum()).backward()
    assert x.grad is not None and m.weight_hh_l0.grad is not None
    assert np.isfinite(host(x.grad)).all()


def test_layer_function_errors(device):
    m = _module("LSTM", device)
    x = npusim.tensor(randn(T, B, I), device=device)
    h, c = _states("LSTM", 1, B, device)
    with pytest.raises(RuntimeError, match="lstm expects two hidden states"):
        npusim.lstm(x, [h], m._flat_weights, True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="not divisible by stride 4"):
        npusim.lstm(x, (h, c), m._flat_weights[:-1], True, 1, 0.0, False, False, False)
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        npusim.lstm(x[:0], (h, c), m._flat_weights, True, 1, 0.0, False, False, False)
    with pytest.raises(IndexError, match="Dimension out of range"):
        npusim.lstm(x[:, 0], (h, c), m._flat_weights, True, 1, 0.0, False, False, False)
    with pytest.raises(TypeError, match="lstm\\(\\) received an invalid combination of arguments"):
        npusim.lstm(x, (h, c), m._flat_weights, True, 1, 0.0, False, False)


# --- cells -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cell, fn", [("LSTMCell", "lstm_cell"), ("GRUCell", "gru_cell"),
                                      ("RNNCell", "rnn_tanh_cell"), ("RNNCell-relu", "rnn_relu_cell")])
def test_cell_function_equals_cell_module(device, cell, fn):
    npusim.manual_seed(0)
    module = nn.RNNCell(I, H, nonlinearity="relu") if cell == "RNNCell-relu" else getattr(nn, cell)(I, H)
    module.to(device)
    x = npusim.tensor(randn(B, I), device=device)
    h = npusim.tensor(randn(B, H, seed=1), device=device)
    hx = (h, npusim.tensor(randn(B, H, seed=2), device=device)) if fn == "lstm_cell" else h
    got = getattr(npusim, fn)(x, hx, module.weight_ih, module.weight_hh, module.bias_ih, module.bias_hh)
    want = module(x, hx)
    _same(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,))


def test_cell_without_biases_and_errors(device):
    x = npusim.tensor(randn(B, I), device=device)
    h = npusim.tensor(randn(B, H, seed=1), device=device)
    w_ih = npusim.tensor(randn(H, I, seed=3), device=device)
    w_hh = npusim.tensor(randn(H, H, seed=4), device=device)
    want = (x @ w_ih.t() + h @ w_hh.t()).tanh()
    np.testing.assert_allclose(host(npusim.rnn_tanh_cell(x, h, w_ih, w_hh)), host(want), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="lstm_cell expects two hidden states"):
        npusim.lstm_cell(x, (h,), w_ih, w_hh)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 3 expected 2"):
        npusim.rnn_tanh_cell(x, h, w_ih[:, :2], w_hh)
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size"):
        npusim.gru_cell(x, h[:, :3], npusim.tensor(randn(12, I), device=device), npusim.tensor(randn(12, H),
                                                                                             device=device))


# --- against torch ---------------------------------------------------------------------------------------------

def _leaves(torch, arrays, device):
    t = [torch.tensor(a, requires_grad=True) for a in arrays]
    n = [npusim.tensor(a, device=device, requires_grad=True) for a in arrays]
    return t, n


@pytest.mark.oracle
@pytest.mark.parametrize("mode", list(LAYER_FUNCTIONS))
@pytest.mark.parametrize("packed", [False, True])
def test_layer_functions_match_torch(torch, device, mode, packed):
    # float64 throughout: a few dozen matmul/activation steps, each within ~1e-16 relative, so 1e-10 holds with margin
    bidirectional, layers = True, 2
    dirs = 2
    params = []
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1) * H
    for layer in range(layers):
        in_size = I if layer == 0 else H * dirs
        for d in range(dirs):
            s = 10 * layer + 2 * d
            params += [randn(gates, in_size, seed=s, dtype=np.float64), randn(gates, H, seed=s + 100,
                                                                          dtype=np.float64),
                       randn(gates, seed=s + 200, dtype=np.float64), randn(gates, seed=s + 300, dtype=np.float64)]
    states = [randn(layers * dirs, B, H, seed=7, dtype=np.float64)]
    if mode == "LSTM":
        states.append(randn(layers * dirs, B, H, seed=8, dtype=np.float64))
    x = randn(T, B, I, seed=9, dtype=np.float64)
    tt, nt = _leaves(torch, [x] + states + params, device)
    results = []
    for lib, leaves in ((torch, tt), (npusim, nt)):
        xin, st, ps = leaves[0], leaves[1:1 + len(states)], leaves[1 + len(states):]
        hx = tuple(st) if mode == "LSTM" else st[0]
        fn = getattr(lib, LAYER_FUNCTIONS[mode])
        if packed:
            lengths = [5, 4, 2]
            if lib is torch:
                p = torch.nn.utils.rnn.pack_padded_sequence(xin, lengths)
            else:
                p = pack_padded_sequence(xin, lengths)
            out = fn(p.data, p.batch_sizes, hx, ps, True, layers, 0.0, False, bidirectional)
        else:
            out = fn(xin, hx, ps, True, layers, 0.0, False, bidirectional, False)
        sum(o.sum() * (k + 1) for k, o in enumerate(out)).backward()
        results.append((out, leaves))
    (t_out, t_leaves), (n_out, n_leaves) = results
    for a, b in zip(t_out, n_out):
        np.testing.assert_allclose(host(b), a.detach().numpy(), rtol=1e-10, atol=1e-10)
    for a, b in zip(t_leaves, n_leaves):
        np.testing.assert_allclose(host(b.grad), a.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.oracle
@pytest.mark.parametrize("fn", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
def test_cell_functions_match_torch(torch, device, fn):
    # float64: one step of a few matmuls and activations; 1e-10 is far above the rounding of either library
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(fn, 1) * H
    arrays = [randn(B, I, seed=1, dtype=np.float64), randn(B, H, seed=2, dtype=np.float64)]
    if fn == "lstm_cell":
        arrays.append(randn(B, H, seed=3, dtype=np.float64))
    arrays += [randn(gates, I, seed=4, dtype=np.float64), randn(gates, H, seed=5, dtype=np.float64),
               randn(gates, seed=6, dtype=np.float64), randn(gates, seed=7, dtype=np.float64)]
    tt, nt = _leaves(torch, arrays, device)
    outs = []
    for lib, leaves in ((torch, tt), (npusim, nt)):
        if fn == "lstm_cell":
            out = getattr(lib, fn)(leaves[0], (leaves[1], leaves[2]), *leaves[3:])
        else:
            out = (getattr(lib, fn)(*leaves),)
        sum(o.sum() * (k + 1) for k, o in enumerate(out)).backward()
        outs.append(out)
    for a, b in zip(*outs):
        np.testing.assert_allclose(host(b), a.detach().numpy(), rtol=1e-10, atol=1e-10)
    for a, b in zip(tt, nt):
        np.testing.assert_allclose(host(b.grad), a.grad.numpy(), rtol=1e-10, atol=1e-10)
