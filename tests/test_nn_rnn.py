"""Recurrent layers and cells: torch's weights load into them and give torch's outputs, final states and
gradients on every device; parameter layout, repr, initialisation and errors are torch's; they train."""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn

SEQ_LEN, BATCH, INPUT_SIZE, HIDDEN_SIZE = 3, 2, 3, 4


# the oracle on one thread (see conftest)
pytestmark = pytest.mark.usefixtures("torch_on_one_thread")


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _states(out):
    """A layer's or cell's result as a flat list of tensors: (output, h_n), (output, (h_n, c_n)), h or (h, c)."""
    if not isinstance(out, tuple):
        return [out]
    flat = []
    for item in out:
        flat.extend(item if isinstance(item, tuple) else [item])
    return flat


def _as_args(arrays, lib, device=None):
    """Turn nested input arrays (None, an array, or a tuple of arrays) into leaf tensors that require grad."""
    def leaf(a):
        if lib.__name__ == "torch":
            return lib.tensor(a, requires_grad=True)
        return npusim.tensor(a, device=device, requires_grad=True)
    args = []
    for a in arrays:
        args.append(None if a is None else tuple(leaf(x) for x in a) if isinstance(a, tuple) else leaf(a))
    return args


def _leaves(args):
    return [t for a in args if a is not None for t in (a if isinstance(a, tuple) else (a,))]


def compare_with_torch(torch, build, arrays, device, *, rtol=1e-4, atol=1e-5):
    """Build in both libraries, load torch's state dict into npusim's, then compare every returned tensor and
    the gradients of the inputs, the initial states and every parameter; returns npusim's module."""
    torch.manual_seed(0)
    tm = build(torch.nn)
    nm = build(nn)
    nm.load_state_dict({k: npusim.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    nm.to(device)
    t_args, n_args = _as_args(arrays, torch), _as_args(arrays, npusim, device)
    t_outs, n_outs = _states(tm(*t_args)), _states(nm(*n_args))
    assert len(n_outs) == len(t_outs)
    t_loss, n_loss = 0, 0
    for i, (t, n) in enumerate(zip(t_outs, n_outs)):
        assert n.device.type == device
        assert tuple(n.shape) == tuple(t.shape), i
        np.testing.assert_allclose(host(n), t.detach().numpy(), rtol=rtol, atol=atol, err_msg=f"result {i}")
        weights = randn(*t.shape, seed=i + 1)
        t_loss = t_loss + (t * torch.tensor(weights)).sum()
        n_loss = n_loss + (n * npusim.tensor(weights, device=device)).sum()
    t_loss.backward()
    n_loss.backward()
    for i, (t, n) in enumerate(zip(_leaves(t_args), _leaves(n_args))):
        np.testing.assert_allclose(host(n.grad), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"input {i}")
    t_params = dict(tm.named_parameters())
    assert [name for name, _ in nm.named_parameters()] == list(t_params)
    for name, p in nm.named_parameters():
        assert p.grad.device.type == device
        np.testing.assert_allclose(host(p.grad), t_params[name].grad.numpy(), rtol=rtol, atol=atol, err_msg=name)
    return nm


def _initial_states(mode, num_layers, directions, batch, hidden_size, proj_size=0, unbatched=False):
    def state(size, seed):
        shape = (num_layers * directions, size) if unbatched else (num_layers * directions, batch, size)
        return randn(*shape, seed=seed)
    if mode == "LSTM":
        return state(proj_size or hidden_size, 11), state(hidden_size, 12)
    return state(hidden_size, 11)


# --- layers against torch ------------------------------------------------------------------------------------------

LAYER_CASES = list(itertools.product(["RNN", "LSTM", "GRU"], [1, 2], [False, True], [False, True], [False, True]))


@pytest.mark.oracle
@pytest.mark.parametrize("mode,num_layers,bidirectional,batch_first,with_h0", LAYER_CASES,
                         ids=["-".join(str(v) for v in case) for case in LAYER_CASES])
def test_layer_matches_torch(torch, device, mode, num_layers, bidirectional, batch_first, with_h0):
    def build(nn):
        return getattr(nn, mode)(INPUT_SIZE, HIDDEN_SIZE, num_layers=num_layers, bidirectional=bidirectional,
                                 batch_first=batch_first)
    x = randn(BATCH, SEQ_LEN, INPUT_SIZE) if batch_first else randn(SEQ_LEN, BATCH, INPUT_SIZE)
    directions = 2 if bidirectional else 1
    h0 = _initial_states(mode, num_layers, directions, BATCH, HIDDEN_SIZE) if with_h0 else None
    nm = compare_with_torch(torch, build, [x, h0], device)
    output, _ = nm(npusim.tensor(x, device=device))
    assert tuple(output.shape)[-1] == HIDDEN_SIZE * directions


PROJ_CASES = [(1, False, False), (2, True, False), (2, True, True), (2, False, True)]


@pytest.mark.oracle
@pytest.mark.parametrize("num_layers,bidirectional,with_h0", PROJ_CASES)
def test_lstm_with_projection_matches_torch(torch, device, num_layers, bidirectional, with_h0):
    def build(nn):
        return nn.LSTM(INPUT_SIZE, HIDDEN_SIZE, num_layers=num_layers, bidirectional=bidirectional, proj_size=2)
    directions = 2 if bidirectional else 1
    h0 = _initial_states("LSTM", num_layers, directions, BATCH, HIDDEN_SIZE, proj_size=2) if with_h0 else None
    compare_with_torch(torch, build, [randn(SEQ_LEN, BATCH, INPUT_SIZE), h0], device)


@pytest.mark.oracle
@pytest.mark.parametrize("build", [
    lambda nn: nn.RNN(INPUT_SIZE, HIDDEN_SIZE, 2, "relu", bidirectional=True),
    lambda nn: nn.RNN(INPUT_SIZE, HIDDEN_SIZE, nonlinearity="relu", bias=False, batch_first=True),
    lambda nn: nn.LSTM(INPUT_SIZE, HIDDEN_SIZE, 2, bias=False, proj_size=3),
    lambda nn: nn.GRU(INPUT_SIZE, HIDDEN_SIZE, bias=False, bidirectional=True),
], ids=["rnn-relu-positional", "rnn-relu-nobias", "lstm-nobias-proj", "gru-nobias"])
def test_layer_variants_match_torch(torch, device, build):
    batch_first = build(nn).batch_first
    x = randn(BATCH, SEQ_LEN, INPUT_SIZE) if batch_first else randn(SEQ_LEN, BATCH, INPUT_SIZE)
    compare_with_torch(torch, build, [x, None], device)


@pytest.mark.oracle
@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_h0", [False, True])
def test_unbatched_input_matches_torch(torch, device, mode, batch_first, with_h0):
    def build(nn):
        return getattr(nn, mode)(INPUT_SIZE, HIDDEN_SIZE, num_layers=2, bidirectional=True, batch_first=batch_first)
    h0 = _initial_states(mode, 2, 2, None, HIDDEN_SIZE, unbatched=True) if with_h0 else None
    nm = compare_with_torch(torch, build, [randn(SEQ_LEN, INPUT_SIZE), h0], device)
    output, _ = nm(npusim.tensor(randn(SEQ_LEN, INPUT_SIZE), device=device))
    assert tuple(output.shape) == (SEQ_LEN, 2 * HIDDEN_SIZE)


@pytest.mark.oracle
def test_zero_batch_gives_empty_outputs_like_torch(torch, device):
    for mode in ("RNN", "LSTM", "GRU"):
        torch_out = _states(getattr(torch.nn, mode)(INPUT_SIZE, HIDDEN_SIZE)(torch.zeros(SEQ_LEN, 0, INPUT_SIZE)))
        ours = _states(getattr(nn, mode)(INPUT_SIZE, HIDDEN_SIZE, device=device)(
            npusim.zeros(SEQ_LEN, 0, INPUT_SIZE, device=device)))
        assert [tuple(t.shape) for t in ours] == [tuple(t.shape) for t in torch_out]


# --- cells against torch -------------------------------------------------------------------------------------------

CELL_CASES = [
    ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("RNNCell", {"bias": False}),
    ("LSTMCell", {}), ("LSTMCell", {"bias": False}), ("GRUCell", {}), ("GRUCell", {"bias": False}),
]


@pytest.mark.oracle
@pytest.mark.parametrize("name,kwargs", CELL_CASES, ids=[f"{n}-{'-'.join(k) or 'default'}" for n, k in CELL_CASES])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [True, False])
def test_cell_matches_torch(torch, device, name, kwargs, batched, with_hx):
    def build(nn):
        return getattr(nn, name)(INPUT_SIZE, HIDDEN_SIZE, **kwargs)
    lead = (BATCH,) if batched else ()
    hx = None
    if with_hx:
        hx = randn(*lead, HIDDEN_SIZE, seed=3)
        if name == "LSTMCell":
            hx = (hx, randn(*lead, HIDDEN_SIZE, seed=4))
    compare_with_torch(torch, build, [randn(*lead, INPUT_SIZE), hx], device)


# --- gradients by finite differences -------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_float64_gradcheck_of_inputs_states_and_parameters(mode):
    npusim.manual_seed(0)
    layer = getattr(nn, mode)(2, 2, num_layers=2, bidirectional=True, dtype=npusim.float64)
    names = [name for name, _ in layer.named_parameters()]
    params = [p.detach().clone().requires_grad_(True) for p in layer.parameters()]
    for name in names:
        # Plain tensors in place of the parameters: the layer reads its weights by name on every call.
        delattr(layer, name)
    x = npusim.randn(2, 2, 2, dtype=npusim.float64, requires_grad=True)
    h0 = npusim.randn(4, 2, 2, dtype=npusim.float64, requires_grad=True)
    c0 = npusim.randn(4, 2, 2, dtype=npusim.float64, requires_grad=True)

    def run(x, h0, c0, *weights):
        for name, w in zip(names, weights):
            setattr(layer, name, w)
        if mode == "LSTM":
            output, (h_n, c_n) = layer(x, (h0, c0))
            return output, h_n, c_n
        output, h_n = layer(x, h0)
        return output, h_n, c0 * 1

    assert npusim.autograd.gradcheck(run, (x, h0, c0, *params))


# --- parameters, repr, initialisation -------------------------------------------------------------------------------

def test_parameter_names_and_shapes():
    lstm = nn.LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
    expected = {}
    for layer, suffix in itertools.product(range(2), ["", "_reverse"]):
        in_size = 3 if layer == 0 else 4
        expected.update({f"weight_ih_l{layer}{suffix}": (20, in_size), f"weight_hh_l{layer}{suffix}": (20, 2),
                         f"bias_ih_l{layer}{suffix}": (20,), f"bias_hh_l{layer}{suffix}": (20,),
                         f"weight_hr_l{layer}{suffix}": (2, 5)})
    assert {n: tuple(p.shape) for n, p in lstm.named_parameters()} == expected
    assert list(dict(lstm.named_parameters())) == list(expected)
    assert [[tuple(p.shape) for p in ps] for ps in lstm.all_weights][1] == [(20, 3), (20, 2), (20,), (20,), (2, 5)]
    assert lstm.all_weights[3][0] is lstm.weight_ih_l1_reverse
    gru = nn.GRU(3, 5, bias=False)
    assert {n: tuple(p.shape) for n, p in gru.named_parameters()} == {"weight_ih_l0": (15, 3),
                                                                       "weight_hh_l0": (15, 5)}
    cell = nn.LSTMCell(3, 5, bias=False)
    assert {n: tuple(p.shape) for n, p in cell.named_parameters()} == {"weight_ih": (20, 3), "weight_hh": (20, 5)}
    assert cell.bias_ih is None and cell.bias_hh is None


REPR_BUILDS = [
    lambda nn: nn.RNN(3, 4),
    lambda nn: nn.RNN(3, 4, nonlinearity="relu", num_layers=2),
    lambda nn: nn.LSTM(3, 4, 2, False, True, 0.5, True, proj_size=2),
    lambda nn: nn.GRU(3, 4, bidirectional=True, dropout=0.25, num_layers=3),
    lambda nn: nn.RNNCell(3, 4, False, "relu"),
    lambda nn: nn.LSTMCell(3, 4),
    lambda nn: nn.GRUCell(3, 4, bias=False),
]


@pytest.mark.oracle
@pytest.mark.parametrize("index", range(len(REPR_BUILDS)))
def test_parameter_layout_and_repr_match_torch(torch, index):
    tm, nm = REPR_BUILDS[index](torch.nn), REPR_BUILDS[index](nn)
    assert repr(nm) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in nm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    if isinstance(tm, torch.nn.RNNBase):
        assert nm._flat_weights_names == tm._flat_weights_names
        assert [[tuple(p.shape) for p in ps] for ps in nm.all_weights] == \
            [[tuple(p.shape) for p in ps] for ps in tm.all_weights]
        assert nm.flatten_parameters() is None


def test_default_init_is_uniform_within_one_over_sqrt_hidden_and_seeded(device):
    def build():
        return nn.GRU(8, 16, num_layers=2, device=device), nn.LSTMCell(8, 16, device=device)
    npusim.manual_seed(3)
    first = [host(p) for m in build() for p in m.parameters()]
    npusim.manual_seed(3)
    second = [host(p) for m in build() for p in m.parameters()]
    bound = 1 / math.sqrt(16)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
        assert np.abs(a).max() <= bound
        assert np.abs(a).max() > 0.8 * bound and a.std() > 0.4 * bound  # spread over the range, not constant
    assert not np.array_equal(first[0][:16], first[0][16:32])


def test_factory_kwargs_place_parameters(device):
    for m in (nn.LSTM(3, 4, 2, bidirectional=True, proj_size=2, device=device, dtype=npusim.float64),
              nn.RNN(3, 4, device=device, dtype=npusim.float64), nn.GRUCell(3, 4, device=device,
                                                                           dtype=npusim.float64)):
        for name, p in m.named_parameters():
            assert p.device.type == device and p.dtype is npusim.float64, name
    out, (h, c) = nn.LSTM(3, 4, device=device, dtype=npusim.float64)(
        npusim.zeros(2, 1, 3, device=device, dtype=npusim.float64))
    assert out.dtype is h.dtype is c.dtype is npusim.float64
    assert out.device.type == device


def test_moved_layer_uses_its_moved_weights(device):
    gru = nn.GRU(3, 4)
    x = npusim.tensor(randn(SEQ_LEN, BATCH, 3))
    expected = host(gru(x)[0])
    gru.to(device)
    np.testing.assert_allclose(host(gru(x.to(device))[0]), expected, rtol=1e-5, atol=1e-6)


# --- dropout between layers -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_dropout_acts_between_layers_in_training_only(device, mode):
    npusim.manual_seed(0)
    with_dropout = getattr(nn, mode)(4, 8, num_layers=2, dropout=0.5, device=device)
    without = getattr(nn, mode)(4, 8, num_layers=2, device=device)
    without.load_state_dict(with_dropout.state_dict())
    x = npusim.tensor(randn(5, 3, 4), device=device)
    with_dropout.eval()
    np.testing.assert_allclose(host(with_dropout(x)[0]), host(without(x)[0]), rtol=1e-6, atol=1e-7)
    with_dropout.train()
    trained = [host(with_dropout(x)[0]) for _ in range(2)]
    assert not np.allclose(trained[0], host(without(x)[0]), atol=1e-3)
    assert not np.allclose(trained[0], trained[1], atol=1e-3)  # a fresh mask each call

    # Nothing follows the last layer, so a one-layer model is not dropped out even in training.
    one_layer = getattr(nn, mode)(4, 8, device=device)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        one_layer_dropout = getattr(nn, mode)(4, 8, dropout=0.5, device=device)
    one_layer_dropout.load_state_dict(one_layer.state_dict())
    one_layer_dropout.train()
    np.testing.assert_allclose(host(one_layer_dropout(x)[0]), host(one_layer(x)[0]), rtol=1e-6, atol=1e-7)


@pytest.mark.oracle
def test_dropout_with_one_layer_warns_like_torch(torch):
    with pytest.warns(UserWarning) as t_warn:
        torch.nn.LSTM(3, 4, dropout=0.5)
    with pytest.warns(UserWarning) as n_warn:
        nn.LSTM(3, 4, dropout=0.5)
    assert [str(w.message) for w in n_warn] == [str(w.message) for w in t_warn]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.LSTM(3, 4, num_layers=2, dropout=0.5)


# --- training -------------------------------------------------------------------------------------------------------

def test_lstm_learns_to_sum_a_sequence(device):
    """A user-visible property: a few Adam steps on a small sequence-regression task reduce the loss."""
    npusim.manual_seed(0)
    lstm = nn.LSTM(1, 8, batch_first=True, device=device)
    head = nn.Linear(8, 1, device=device)
    params = list(lstm.parameters()) + list(head.parameters())
    optimizer = npusim.optim.Adam(params, lr=0.05)
    x = npusim.tensor(randn(16, 5, 1, seed=7), device=device)
    target = x.sum(1)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        _, (h_n, _) = lstm(x)
        loss = nn.functional.mse_loss(head(h_n[-1]), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]


# --- errors ---------------------------------------------------------------------------------------------------------

CONSTRUCTOR_ERRORS = [
    (ValueError, lambda nn: nn.LSTM(3, 4, dropout=1.5)),
    (ValueError, lambda nn: nn.LSTM(3, 4, dropout=-0.1)),
    (ValueError, lambda nn: nn.GRU(3, 4, dropout=True)),
    (ValueError, lambda nn: nn.GRU(3, 4, dropout="high")),
    (TypeError, lambda nn: nn.RNN(3, 4, dropout=None)),
    (ValueError, lambda nn: nn.RNN(3, 4, nonlinearity="sigmoid")),
    (ValueError, lambda nn: nn.RNN(3, 4, 1, "gelu")),
    (ValueError, lambda nn: nn.LSTM(3, 4, proj_size=4)),
    (ValueError, lambda nn: nn.LSTM(3, 4, proj_size=-1)),
    (ValueError, lambda nn: nn.GRU(3, 4, proj_size=2)),
    (ValueError, lambda nn: nn.RNN(3, 4, proj_size=2)),
    (TypeError, lambda nn: nn.GRU(3, 4, bias=1)),
    (TypeError, lambda nn: nn.GRU(3, 4, batch_first=1)),
    (TypeError, lambda nn: nn.LSTM(3.0, 4)),
    (ValueError, lambda nn: nn.LSTM(0, 4)),
    (TypeError, lambda nn: nn.LSTM(3, 4.0)),
    (ValueError, lambda nn: nn.LSTM(3, 0)),
    (ValueError, lambda nn: nn.LSTM(3, 4, 0)),
    (TypeError, lambda nn: nn.LSTM(3, 4, 1.5)),
]


@pytest.mark.oracle
@pytest.mark.parametrize("index", range(len(CONSTRUCTOR_ERRORS)))
def test_constructor_errors_match_torch(torch, index):
    exc, build = CONSTRUCTOR_ERRORS[index]
    with pytest.raises(exc) as t_err:
        build(torch.nn)
    with pytest.raises(exc) as n_err:
        build(nn)
    assert str(n_err.value) == str(t_err.value)


def _layer_forward_errors():
    cases = []
    for mode in ("RNN", "LSTM", "GRU"):
        def state(T, *shape, mode=mode):
            return (T.zeros(*shape), T.zeros(*shape)) if mode == "LSTM" else T.zeros(*shape)

        def layer(nn, mode=mode, **kwargs):
            return getattr(nn, mode)(3, 4, **kwargs)
        cases += [
            (ValueError, lambda T, nn, layer=layer: layer(nn)(T.zeros(3))),
            (ValueError, lambda T, nn, layer=layer: layer(nn)(T.zeros(1, 2, 3, 3))),
            (RuntimeError, lambda T, nn, layer=layer: layer(nn)(T.zeros(5, 2, 2))),
            (RuntimeError, lambda T, nn, layer=layer: layer(nn, batch_first=True)(T.zeros(2, 5, 4))),
            (ValueError, lambda T, nn, layer=layer: layer(nn)(T.zeros(5, 2, 3, dtype=T.float64))),
            (RuntimeError, lambda T, nn, layer=layer, s=state: layer(nn)(T.zeros(5, 2, 3), s(T, 1, 3, 4))),
            (RuntimeError, lambda T, nn, layer=layer, s=state: layer(nn)(T.zeros(5, 2, 3), s(T, 1, 2, 5))),
            (RuntimeError, lambda T, nn, layer=layer, s=state: layer(nn, num_layers=2)(T.zeros(5, 2, 3),
                                                                                      s(T, 1, 2, 4))),
            (RuntimeError, lambda T, nn, layer=layer, s=state: layer(nn)(T.zeros(5, 2, 3), s(T, 2, 4))),
            (RuntimeError, lambda T, nn, layer=layer, s=state: layer(nn)(T.zeros(5, 3), s(T, 1, 1, 4))),
            (RuntimeError, lambda T, nn, layer=layer, s=state: layer(nn)(T.zeros(5, 3), s(T, 2, 4))),
            (RuntimeError, lambda T, nn, layer=layer: layer(nn)(T.zeros(0, 2, 3))),
        ]
    cases += [
        (RuntimeError, lambda T, nn: nn.LSTM(3, 4)(T.zeros(5, 2, 3), (T.zeros(1, 2, 4), T.zeros(1, 2, 5)))),
        (RuntimeError, lambda T, nn: nn.LSTM(3, 4, proj_size=2)(T.zeros(5, 2, 3),
                                                                 (T.zeros(1, 2, 4), T.zeros(1, 2, 4)))),
    ]
    return cases


def _cell_forward_errors():
    cases = []
    for name in ("RNNCell", "LSTMCell", "GRUCell"):
        def state(T, *shape, name=name, dtype=None):
            if name == "LSTMCell":
                return T.zeros(*shape, dtype=dtype), T.zeros(*shape)
            return T.zeros(*shape, dtype=dtype)

        def cell(nn, name=name, **kwargs):
            return getattr(nn, name)(3, 4, **kwargs)
        cases += [
            (ValueError, lambda T, nn, cell=cell: cell(nn)(T.zeros(()))),
            (ValueError, lambda T, nn, cell=cell: cell(nn)(T.zeros(1, 2, 3))),
            (RuntimeError, lambda T, nn, cell=cell: cell(nn)(T.zeros(2, 5))),
            (RuntimeError, lambda T, nn, cell=cell: cell(nn)(T.zeros(5))),
            (ValueError, lambda T, nn, cell=cell, s=state: cell(nn)(T.zeros(2, 3), s(T, 1, 2, 4))),
            (RuntimeError, lambda T, nn, cell=cell, s=state: cell(nn)(T.zeros(2, 3), s(T, 3, 4))),
            (RuntimeError, lambda T, nn, cell=cell, s=state: cell(nn)(T.zeros(2, 3), s(T, 2, 5))),
            (RuntimeError, lambda T, nn, cell=cell, s=state: cell(nn)(T.zeros(2, 3), s(T, 4))),
            (RuntimeError, lambda T, nn, cell=cell, s=state: cell(nn)(T.zeros(3), s(T, 1, 4))),
            (RuntimeError, lambda T, nn, cell=cell: cell(nn)(T.zeros(2, 3, dtype=T.float64))),
            (RuntimeError, lambda T, nn, cell=cell, s=state: cell(nn)(T.zeros(2, 3), s(T, 2, 4, dtype=T.float64))),
            (RuntimeError, lambda T, nn, cell=cell: cell(nn, bias=False)(T.zeros(2, 3, dtype=T.float64))),
        ]
    cases += [
        (RuntimeError, lambda T, nn: nn.RNNCell(3, 4, nonlinearity="gelu")(T.zeros(2, 3))),
        (RuntimeError, lambda T, nn: nn.LSTMCell(3, 4)(T.zeros(2, 3), (T.zeros(2, 4), T.zeros(2, 5)))),
        (RuntimeError, lambda T, nn: nn.LSTMCell(3, 4)(T.zeros(2, 3), (T.zeros(2, 4), T.zeros(3, 4)))),
        (ValueError, lambda T, nn: nn.LSTMCell(3, 4)(T.zeros(2, 3), (T.zeros(2, 4), T.zeros(1, 2, 4)))),
    ]
    return cases


FORWARD_ERRORS = _layer_forward_errors() + _cell_forward_errors()


@pytest.mark.oracle
def test_forward_errors_match_torch(torch):
    for index, (exc, fn) in enumerate(FORWARD_ERRORS):
        with pytest.raises(exc) as t_err:
            fn(torch, torch.nn)
        with pytest.raises(exc) as n_err:
            fn(npusim, nn)
        assert str(n_err.value) == str(t_err.value).replace("torch.", "npusim."), index
