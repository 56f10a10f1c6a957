"""Packed sequences: packing, padding and unpadding give torch's values, batch sizes, indices and gradients on
every device; the recurrent layers take a PackedSequence and give torch's packed output, final states (each
sequence's, at its own last step, in the caller's order) and gradients; bad inputs fail as torch's do."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import host

import npusim
from npusim import nn
from npusim.nn.utils import rnn as R

INPUT_SIZE, HIDDEN_SIZE = 3, 4
SORTED_LENGTHS = [5, 3, 3, 1]
UNSORTED_LENGTHS = [3, 5, 1, 3]


# the oracle on one thread (see conftest)
pytestmark = pytest.mark.usefixtures("torch_on_one_thread")


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def leaf(lib, array, device=None):
    if lib.__name__ == "torch":
        return lib.tensor(array, requires_grad=True)
    return npusim.tensor(array, device=device, requires_grad=True)


def padded_batch(lengths, batch_first, features=INPUT_SIZE, seed=0):
    """A padded batch whose padding holds values (not zeros), so leaking padding would show."""
    steps = max(lengths)
    return randn(len(lengths), steps, features, seed=seed) if batch_first else randn(steps, len(lengths), features,
                                                                                      seed=seed)


def weighted_sum(lib, tensors, device=None):
    """sum_i (t_i * w_i).sum() with fixed random weights, so every element's gradient differs."""
    total = 0
    for i, t in enumerate(tensors):
        w = randn(*t.shape, seed=100 + i)
        total = total + (t * (lib.tensor(w) if lib.__name__ == "torch" else npusim.tensor(w, device=device))).sum()
    return total


def assert_close(n, t, **kwargs):
    np.testing.assert_allclose(host(n), t.detach().numpy(), rtol=1e-5, atol=1e-6, **kwargs)


def assert_same_packed(n, t):
    assert isinstance(n, R.PackedSequence)
    assert_close(n.data, t.data)
    assert n.batch_sizes.device.type == "cpu" and n.batch_sizes.dtype is npusim.int64
    assert n.batch_sizes.tolist() == t.batch_sizes.tolist()
    for name in ("sorted_indices", "unsorted_indices"):
        n_idx, t_idx = getattr(n, name), getattr(t, name)
        assert (n_idx is None) == (t_idx is None), name
        if n_idx is not None:
            assert n_idx.device == n.data.device and n_idx.dtype is npusim.int64
            assert n_idx.tolist() == t_idx.tolist(), name


# --- pack / pad against torch ----------------------------------------------------------------------------------

PACK_CASES = list(itertools.product([False, True], [True, False], ["list", "tensor"]))


@pytest.mark.oracle
@pytest.mark.parametrize("batch_first,enforce_sorted,lengths_as", PACK_CASES,
                         ids=[f"bf{a}-sorted{b}-{c}" for a, b, c in PACK_CASES])
def test_pack_pad_round_trip_matches_torch(torch, device, batch_first, enforce_sorted, lengths_as):
    lengths = SORTED_LENGTHS if enforce_sorted else UNSORTED_LENGTHS
    x = padded_batch(lengths, batch_first)
    results = {}
    for lib, utils in ((torch, torch.nn.utils.rnn), (npusim, R)):
        inp = leaf(lib, x, device)
        lens = lengths if lengths_as == "list" else lib.tensor(lengths)
        packed = utils.pack_padded_sequence(inp, lens, batch_first=batch_first, enforce_sorted=enforce_sorted)
        padded, out_lengths = utils.pad_packed_sequence(packed, batch_first=batch_first, padding_value=-2.5,
                                                        total_length=7)
        weighted_sum(lib, [packed.data, padded], device).backward()
        results[lib.__name__] = packed, padded, out_lengths, inp.grad
    (n_packed, n_padded, n_lengths, n_grad), (t_packed, t_padded, t_lengths, t_grad) = \
        results["npusim"], results["torch"]
    assert n_packed.data.device.type == device
    assert_same_packed(n_packed, t_packed)
    assert tuple(n_padded.shape) == tuple(t_padded.shape)
    assert n_padded.device.type == device
    assert_close(n_padded, t_padded)
    assert n_lengths.device.type == "cpu" and n_lengths.dtype is npusim.int64
    assert n_lengths.tolist() == t_lengths.tolist() == lengths
    assert_close(n_grad, t_grad)
    # padding positions get no gradient from the packed data and only the padded output's
    assert np.count_nonzero(host(n_grad)) > 0


@pytest.mark.oracle
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence_matches_torch(torch, device, batch_first, padding_side):
    arrays = [randn(3, 2, seed=1), randn(5, 2, seed=2), randn(1, 2, seed=3)]
    outs = {}
    for lib, utils in ((torch, torch.nn.utils.rnn), (npusim, R)):
        seqs = [leaf(lib, a, device) for a in arrays]
        out = utils.pad_sequence(seqs, batch_first=batch_first, padding_value=7.0, padding_side=padding_side)
        weighted_sum(lib, [out], device).backward()
        outs[lib.__name__] = out, [s.grad for s in seqs]
    (n_out, n_grads), (t_out, t_grads) = outs["npusim"], outs["torch"]
    assert n_out.device.type == device
    assert tuple(n_out.shape) == tuple(t_out.shape)
    assert_close(n_out, t_out)
    for n, t in zip(n_grads, t_grads):
        assert_close(n, t)


@pytest.mark.oracle
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_unpack_and_unpad_sequence_match_torch(torch, device, enforce_sorted):
    lengths = [4, 2, 2, 1] if enforce_sorted else [2, 4, 1, 2]
    arrays = [randn(n, 2, seed=i) for i, n in enumerate(lengths)]
    outs = {}
    for lib, utils in ((torch, torch.nn.utils.rnn), (npusim, R)):
        seqs = [leaf(lib, a, device) for a in arrays]
        packed = utils.pack_sequence(seqs, enforce_sorted=enforce_sorted)
        unpacked = utils.unpack_sequence(packed)
        padded = utils.pad_sequence(seqs, batch_first=False)
        unpadded = utils.unpad_sequence(padded, lib.tensor(lengths), batch_first=False)
        weighted_sum(lib, unpacked + unpadded, device).backward()
        outs[lib.__name__] = packed, unpacked, unpadded, [s.grad for s in seqs]
    (n_packed, n_unpacked, n_unpadded, n_grads), (t_packed, t_unpacked, t_unpadded, t_grads) = \
        outs["npusim"], outs["torch"]
    assert_same_packed(n_packed, t_packed)
    for n_list, t_list in ((n_unpacked, t_unpacked), (n_unpadded, t_unpadded)):
        assert [tuple(t.shape) for t in n_list] == [tuple(t.shape) for t in t_list]
        for n, t in zip(n_list, t_list):
            assert n.device.type == device
            assert_close(n, t)
    for n, t in zip(n_grads, t_grads):
        assert_close(n, t)


def test_unpack_sequence_returns_the_sequences(device):
    arrays = [randn(n, 3, seed=n) for n in (2, 5, 1)]
    seqs = [npusim.tensor(a, device=device) for a in arrays]
    for out in (R.unpack_sequence(R.pack_sequence(seqs, enforce_sorted=False)),
                R.unpad_sequence(R.pad_sequence(seqs, batch_first=True), npusim.tensor([2, 5, 1]), batch_first=True)):
        assert len(out) == 3
        for got, want in zip(out, arrays):
            np.testing.assert_array_equal(host(got), want)


def test_packed_layout_by_hand(device):
    # sequences "abc" and "x" pack as "axbc" with batch sizes [2, 1, 1]
    a = npusim.tensor([[1.0], [2.0], [3.0]], device=device)
    x = npusim.tensor([[9.0]], device=device)
    packed = R.pack_sequence([x, a], enforce_sorted=False)
    assert host(packed.data).ravel().tolist() == [1.0, 9.0, 2.0, 3.0]
    assert packed.batch_sizes.tolist() == [2, 1, 1]
    assert packed.sorted_indices.tolist() == [1, 0] and packed.unsorted_indices.tolist() == [1, 0]
    padded, lengths = R.pad_packed_sequence(packed, batch_first=True, padding_value=-1)
    assert host(padded)[..., 0].tolist() == [[9.0, -1.0, -1.0], [1.0, 2.0, 3.0]]
    assert lengths.tolist() == [1, 3]


# --- PackedSequence itself --------------------------------------------------------------------------------------

def test_packed_sequence_conversions(device):
    packed = R.pack_sequence([npusim.randn(3, 2), npusim.randn(1, 2)], enforce_sorted=False)
    assert isinstance(packed, tuple) and packed._fields == ("data", "batch_sizes", "sorted_indices",
                                                            "unsorted_indices")
    assert packed.to("cpu") is packed and packed.cpu() is packed and packed.to(npusim.float32) is packed
    moved = packed.to(device)
    assert moved.data.device.type == device
    assert moved.sorted_indices.device.type == device and moved.unsorted_indices.device.type == device
    assert moved.batch_sizes is packed.batch_sizes
    back = moved.cpu()
    assert back.data.device.type == "cpu" and back.sorted_indices.device.type == "cpu"
    np.testing.assert_array_equal(host(back.data), host(packed.data))
    assert moved.double().data.dtype is npusim.float64 and moved.double().data.device.type == device
    assert packed.half().data.dtype is npusim.float16 and packed.long().data.dtype is npusim.int64
    assert packed.int().data.dtype is npusim.int32 and packed.byte().data.dtype is npusim.uint8
    assert not moved.is_cuda
    if device == "npu":
        assert packed.npu().data.device.type == "npu" and packed.npu().is_npu and not packed.is_npu
    with pytest.raises(AttributeError):
        packed.no_such_attribute  # noqa: B018


def test_packed_sequence_construction_and_invert_permutation():
    data, batch_sizes = npusim.randn(3), npusim.tensor([2, 1])
    from_tuple = R.PackedSequence((data, batch_sizes))
    assert from_tuple.data is data and from_tuple.batch_sizes is batch_sizes and from_tuple.unsorted_indices is None
    permuted = R.PackedSequence(data, batch_sizes, npusim.tensor([1, 0]))
    assert permuted.unsorted_indices.tolist() == [1, 0]
    assert R.invert_permutation(npusim.tensor([2, 0, 3, 1])).tolist() == [1, 3, 0, 2]
    assert R.invert_permutation(None) is None


# --- recurrent layers on packed input ------------------------------------------------------------------------

LAYER_CASES = list(itertools.product(["RNN", "LSTM", "GRU"], [1, 2], [False, True]))


def _build(lib_nn, mode, num_layers, bidirectional, **kwargs):
    return getattr(lib_nn, mode)(INPUT_SIZE, HIDDEN_SIZE, num_layers=num_layers, bidirectional=bidirectional,
                                 **kwargs)


def _flat(out):
    output, state = out
    return [output.data] + (list(state) if isinstance(state, tuple) else [state])


@pytest.mark.oracle
@pytest.mark.parametrize("mode,num_layers,bidirectional", LAYER_CASES,
                         ids=["-".join(str(v) for v in case) for case in LAYER_CASES])
def test_layer_on_packed_input_matches_torch(torch, device, mode, num_layers, bidirectional):
    with_h0 = num_layers == 2  # both with and without initial states across the cases
    enforce_sorted = bidirectional  # both orders too
    lengths = SORTED_LENGTHS if enforce_sorted else UNSORTED_LENGTHS
    x = padded_batch(lengths, batch_first=True)
    states = None
    if with_h0:
        shape = (num_layers * (2 if bidirectional else 1), len(lengths), HIDDEN_SIZE)
        states = [randn(*shape, seed=11)] + ([randn(*shape, seed=12)] if mode == "LSTM" else [])
    torch.manual_seed(0)
    tm = _build(torch.nn, mode, num_layers, bidirectional, batch_first=True)
    nm = _build(nn, mode, num_layers, bidirectional, batch_first=True)
    nm.load_state_dict({k: npusim.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    nm.to(device)
    results = {}
    for lib, utils, module in ((torch, torch.nn.utils.rnn, tm), (npusim, R, nm)):
        inp = leaf(lib, x, device)
        packed = utils.pack_padded_sequence(inp, lengths, batch_first=True, enforce_sorted=enforce_sorted)
        hx = None
        if states is not None:
            hx = [leaf(lib, s, device) for s in states]
        out = module(packed, None if hx is None else (tuple(hx) if mode == "LSTM" else hx[0]))
        weighted_sum(lib, _flat(out), device).backward()
        results[lib.__name__] = out, inp.grad, [h.grad for h in hx or []]
    (n_out, n_grad, n_hgrads), (t_out, t_grad, t_hgrads) = results["npusim"], results["torch"]
    assert_same_packed(n_out[0], t_out[0])
    for i, (n, t) in enumerate(zip(_flat(n_out)[1:], _flat(t_out)[1:])):
        assert n.device.type == device and tuple(n.shape) == tuple(t.shape)
        assert_close(n, t, err_msg=f"state {i}")
    assert_close(n_grad, t_grad, err_msg="input grad")
    for n, t in zip(n_hgrads, t_hgrads):
        assert_close(n, t, err_msg="initial state grad")
    t_params = dict(tm.named_parameters())
    for name, p in nm.named_parameters():
        assert p.grad.device.type == device
        np.testing.assert_allclose(host(p.grad), t_params[name].grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.oracle
def test_lstm_with_projection_on_packed_input_matches_torch(torch, device):
    lengths = UNSORTED_LENGTHS
    x = padded_batch(lengths, batch_first=False)
    torch.manual_seed(0)
    tm = torch.nn.LSTM(INPUT_SIZE, HIDDEN_SIZE, proj_size=2, bidirectional=True, num_layers=2)
    nm = nn.LSTM(INPUT_SIZE, HIDDEN_SIZE, proj_size=2, bidirectional=True, num_layers=2)
    nm.load_state_dict({k: npusim.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    nm.to(device)
    t_out = tm(torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), lengths, enforce_sorted=False))
    n_out = nm(R.pack_padded_sequence(npusim.tensor(x, device=device), lengths, enforce_sorted=False))
    assert_same_packed(n_out[0], t_out[0])
    for n, t in zip(_flat(n_out)[1:], _flat(t_out)[1:]):
        assert tuple(n.shape) == tuple(t.shape)
        assert_close(n, t)


@pytest.mark.parametrize("mode,bidirectional", [("RNN", True), ("LSTM", True), ("GRU", False)])
def test_packed_run_equals_each_sequence_run_alone(device, mode, bidirectional):
    npusim.manual_seed(0)
    layer = _build(nn, mode, 2, bidirectional).to(device)
    lengths = UNSORTED_LENGTHS
    arrays = [randn(n, INPUT_SIZE, seed=i) for i, n in enumerate(lengths)]
    directions = 2 if bidirectional else 1
    h0 = randn(2 * directions, len(lengths), HIDDEN_SIZE, seed=7)
    c0 = randn(2 * directions, len(lengths), HIDDEN_SIZE, seed=8)

    def initial(batch):
        h = npusim.tensor(h0[:, batch], device=device)
        return (h, npusim.tensor(c0[:, batch], device=device)) if mode == "LSTM" else h

    packed = R.pack_sequence([npusim.tensor(a, device=device) for a in arrays], enforce_sorted=False)
    output, state = layer(packed, initial(slice(None)))
    states = list(state) if mode == "LSTM" else [state]
    outputs = R.unpack_sequence(output)
    for b, a in enumerate(arrays):
        alone_output, alone_state = layer(npusim.tensor(a, device=device), initial(b))
        alone_states = list(alone_state) if mode == "LSTM" else [alone_state]
        np.testing.assert_allclose(host(outputs[b]), host(alone_output), rtol=1e-5, atol=1e-6)
        for s, alone in zip(states, alone_states):
            np.testing.assert_allclose(host(s[:, b]), host(alone), rtol=1e-5, atol=1e-6)


def test_packed_dropout_applies_between_layers_in_training_only(device):
    layer = nn.GRU(INPUT_SIZE, HIDDEN_SIZE, num_layers=2, dropout=0.9).to(device)
    packed = R.pack_sequence([npusim.randn(4, INPUT_SIZE, device=device), npusim.randn(2, INPUT_SIZE, device=device)])
    layer.eval()
    np.testing.assert_array_equal(host(layer(packed)[0].data), host(layer(packed)[0].data))
    layer.train()
    npusim.manual_seed(1)
    first = host(layer(packed)[0].data)
    npusim.manual_seed(2)
    assert not np.allclose(first, host(layer(packed)[0].data))


# --- errors, as torch's ------------------------------------------------------------------------------------------

def _x(lib):
    return lib.tensor(randn(4, 3, 2))


ERROR_CASES = {
    "unsorted lengths": lambda lib, U: U.pack_padded_sequence(_x(lib), [2, 3, 1]),
    "zero length": lambda lib, U: U.pack_padded_sequence(_x(lib), [3, 2, 0]),
    "zero length unsorted": lambda lib, U: U.pack_padded_sequence(_x(lib), [3, 0, 2], enforce_sorted=False),
    "negative length": lambda lib, U: U.pack_padded_sequence(_x(lib), [-1, -2, -3]),
    "too few lengths": lambda lib, U: U.pack_padded_sequence(_x(lib), [3, 2]),
    "too many lengths": lambda lib, U: U.pack_padded_sequence(_x(lib), lib.tensor([3, 2, 1, 1])),
    "2-D lengths": lambda lib, U: U.pack_padded_sequence(_x(lib), [[3, 2, 1]]),
    "0-D lengths": lambda lib, U: U.pack_padded_sequence(_x(lib), lib.tensor(3)),
    "empty input": lambda lib, U: U.pack_padded_sequence(lib.zeros(0, 3, 2), [1, 1, 1]),
    "1-D input": lambda lib, U: U.pack_padded_sequence(lib.zeros(4), [3]),
    "total_length too small": lambda lib, U: U.pad_packed_sequence(U.pack_padded_sequence(_x(lib), [3, 2, 1]),
                                                                   total_length=2),
    "int32 batch_sizes": lambda lib, U: U.pad_packed_sequence(
        U.PackedSequence(lib.ones(3), lib.tensor([2, 1], dtype=lib.int32))),
    "not iterable": lambda lib, U: U.pad_sequence(5),
    "no sequences": lambda lib, U: U.pad_sequence([]),
    "no sequences to pack": lambda lib, U: U.pack_sequence([]),
    "bad padding_side": lambda lib, U: U.pad_sequence([lib.ones(2, 3)], padding_side="middle"),
    "mismatched trailing": lambda lib, U: U.pad_sequence([lib.ones(2, 3), lib.ones(3, 2)]),
    "0-D first sequence": lambda lib, U: U.pad_sequence([lib.tensor(1.0), lib.ones(2)]),
    "0-D later sequence": lambda lib, U: U.pad_sequence([lib.ones(2), lib.tensor(1.0)]),
    "non-tensor sequence": lambda lib, U: U.pad_sequence([lib.ones(2), 3]),
    "padding_value None": lambda lib, U: U.pad_sequence([lib.ones(2)], padding_value=None),
    "batch_first int": lambda lib, U: U.pad_sequence([lib.ones(2)], batch_first=1),
    "padding_side int": lambda lib, U: U.pad_sequence([lib.ones(2)], padding_side=1),
    "unsorted pack_sequence": lambda lib, U: U.pack_sequence([lib.ones(2), lib.ones(3)]),
    "lengths list to unpad": lambda lib, U: U.unpad_sequence(lib.ones(3, 2), [3, 2]),
    "unpad lengths too long": lambda lib, U: U.unpad_sequence(lib.ones(3, 2), lib.tensor([3, 2, 1])),
    "no batch_sizes": lambda lib, U: U.PackedSequence(lib.ones(3)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_errors_match_torch(torch, case):
    fn = ERROR_CASES[case]
    with pytest.raises(Exception) as t_err:
        fn(torch, torch.nn.utils.rnn)
    with pytest.raises(Exception) as n_err:
        fn(npusim, R)
    assert n_err.type is t_err.type
    assert str(n_err.value) == str(t_err.value)


def _packed(lib, U, features=2, dtype=None, lengths=(4, 2, 1), enforce_sorted=True):
    x = lib.tensor(randn(4, 3, features))
    if dtype is not None:
        x = x.to(dtype)
    return U.pack_padded_sequence(x, list(lengths), enforce_sorted=enforce_sorted)


LAYER_ERROR_CASES = {
    "RNN hx batch": lambda lib, U: lib.nn.RNN(2, 5)(_packed(lib, U), lib.zeros(1, 2, 5)),
    "GRU hx size": lambda lib, U: lib.nn.GRU(2, 5)(_packed(lib, U), lib.zeros(1, 3, 4)),
    "GRU 2-D hx": lambda lib, U: lib.nn.GRU(2, 5)(_packed(lib, U), lib.zeros(3, 5)),
    "RNN input size": lambda lib, U: lib.nn.RNN(2, 5)(_packed(lib, U, features=3)),
    "GRU dtype": lambda lib, U: lib.nn.GRU(2, 5)(_packed(lib, U, dtype=lib.float64)),
    "RNN 3-D data": lambda lib, U: lib.nn.RNN(2, 5)(U.PackedSequence(lib.ones(7, 1, 2), lib.tensor([3, 2, 1, 1]))),
    "LSTM input size": lambda lib, U: lib.nn.LSTM(2, 5)(_packed(lib, U, features=3)),
    "LSTM dtype": lambda lib, U: lib.nn.LSTM(2, 5)(_packed(lib, U, dtype=lib.float64)),
    "LSTM dtype no bias": lambda lib, U: lib.nn.LSTM(2, 5, bias=False)(_packed(lib, U, dtype=lib.float64)),
}


@pytest.mark.oracle
@pytest.mark.parametrize("case", list(LAYER_ERROR_CASES))
def test_layer_errors_on_packed_input_match_torch(torch, case):
    fn = LAYER_ERROR_CASES[case]
    with pytest.raises(Exception) as t_err:
        fn(torch, torch.nn.utils.rnn)
    with pytest.raises(Exception) as n_err:
        fn(npusim, R)
    assert n_err.type is t_err.type
    assert str(n_err.value) == str(t_err.value).replace("torch.", "npusim.")


def test_lstm_hx_size_errors_on_packed_input():
    packed = _packed(npusim, R)
    layer = nn.LSTM(2, 5)
    with pytest.raises(RuntimeError, match=r"Expected hidden\[0\] size \(1, 3, 5\), got \[1, 2, 5\]"):
        layer(packed, (npusim.zeros(1, 2, 5), npusim.zeros(1, 2, 5)))
    with pytest.raises(RuntimeError, match=r"Expected hidden\[1\] size \(1, 3, 5\), got \[1, 3, 4\]"):
        layer(packed, (npusim.zeros(1, 3, 5), npusim.zeros(1, 3, 4)))


def test_lengths_on_a_non_cpu_device_fail(device):
    x = npusim.tensor(randn(4, 3, 2), device=device)
    lengths = npusim.tensor([3, 2, 1], device=device)
    if device == "cpu":
        assert R.pack_padded_sequence(x, lengths).batch_sizes.tolist() == [3, 2, 1]
        return
    message = f"'lengths' argument should be a 1D CPU int64 tensor, but got 1D {lengths.device} Long tensor"
    for enforce_sorted in (True, False):
        with pytest.raises(RuntimeError) as err:
            R.pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
        assert str(err.value) == message
    with pytest.raises(ValueError, match="batch_sizes should always be on CPU"):
        R.PackedSequence(x, npusim.tensor([3, 1], device=device))


def test_float_lengths_are_truncated_like_torch():
    x = npusim.tensor(randn(4, 3, 2))
    assert R.pack_padded_sequence(x, [3.0, 2.0, 1.0]).batch_sizes.tolist() == [3, 2, 1]
    assert R.pack_padded_sequence(x, npusim.tensor([3.0, 2.5, 1.0])).batch_sizes.tolist() == [3, 2, 1]
    assert R.pack_padded_sequence(x, npusim.tensor([3, 2, 1], dtype=npusim.int32)).batch_sizes.dtype is npusim.int64


def test_the_backend_generates_npu_and_is_npu_for_packed_sequences():
    from npusim.nn.utils.rnn import PackedSequence, pack_sequence
    # generated on the class by the backend's registration, as torch's generate_methods_for_privateuse1_backend does
    assert "npu" in vars(PackedSequence) and isinstance(vars(PackedSequence)["is_npu"], property)
    packed = pack_sequence([npusim.arange(6.0).view(3, 2), npusim.ones(2, 2)])
    moved = packed.npu()
    assert moved.is_npu and not packed.is_npu
    assert moved.data.device == npusim.device("npu", 0) and moved.batch_sizes.device.type == "cpu"
    assert moved.batch_sizes.tolist() == [2, 2, 1]
    assert moved.npu() is moved     # already there: nothing to move
    assert moved.cpu().data.tolist() == packed.data.tolist()
