"""Shrink activations, RReLU, Unfold/Fold, EmbeddingBag, LocalResponseNorm, LPPool, MaxUnpool, ChannelShuffle,
PairwiseDistance/CosineSimilarity and InstanceNorm3d.

Hand-computed values, identities (fold of unfold counts the blocks covering each pixel) and float64
gradcheck prove the layers without PyTorch; oracle tests compare values, gradients, reprs and errors.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck

RNG = np.random.default_rng(1)


def r(*shape):
    return RNG.standard_normal(shape)


_W = r(6, 3)
_POOLED = {}


def _pooled(kind):
    """Values and indices of a max pool (made once with the oracle, shared by the unpool cases)."""
    import torch
    if kind not in _POOLED:
        x = torch.tensor(r(2, 3, 6, 6) if kind == 2 else r(2, 3, 9))
        pool = torch.nn.functional.max_pool2d if kind == 2 else torch.nn.functional.max_pool1d
        v, i = pool(x, 2 if kind == 2 else 3, None if kind == 2 else 2, return_indices=True)
        _POOLED[kind] = [v.numpy(), i.numpy()]
    return _POOLED[kind]


# name, call(F, *tensors), arrays, differentiable indices, rtol of the gradients
CASES = [
    ("hardshrink", lambda f, x: f.hardshrink(x, 0.4), lambda: [r(3, 5)], (0,), 1e-9),
    ("softshrink", lambda f, x: f.softshrink(x, 0.4), lambda: [r(3, 5)], (0,), 1e-9),
    ("rrelu_eval", lambda f, x: f.rrelu(x, 0.1, 0.3), lambda: [r(3, 5)], (0,), 1e-9),
    ("unfold", lambda f, x: f.unfold(x, (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 1)),
     lambda: [r(2, 3, 6, 7)], (0,), 1e-9),
    ("unfold_unbatched", lambda f, x: f.unfold(x, 2), lambda: [r(3, 5, 4)], (0,), 1e-9),
    ("unfold_strided", lambda f, x: f.unfold(x, (3, 2), dilation=(1, 2), padding=(0, 1), stride=(2, 3)),
     lambda: [r(2, 2, 9, 11)], (0,), 1e-9),
    ("fold", lambda f, x: f.fold(x, (6, 7), (2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 1)),
     lambda: [r(2, 18, 27)], (0,), 1e-9),
    ("fold_unbatched", lambda f, x: f.fold(x, (4, 5), 2), lambda: [r(8, 12)], (0,), 1e-9),
    ("fold_strided", lambda f, x: f.fold(x, (9, 11), (3, 2), dilation=(1, 2), padding=(0, 1), stride=(2, 3)),
     lambda: [r(2, 12, 16)], (0,), 1e-9),
    ("bag_sum_offsets", lambda f, w, i, o: f.embedding_bag(i, w, o, mode="sum"),
     lambda: [_W, np.array([0, 2, 2, 5, 1, 3, 2]), np.array([0, 0, 3, 5])], (0,), 1e-9),
    ("bag_mean_padding", lambda f, w, i, o: f.embedding_bag(i, w, o, padding_idx=2),
     lambda: [_W, np.array([0, 2, 2, 5, 1, 3, 2]), np.array([0, 0, 3, 5])], (0,), 1e-9),
    ("bag_max_padding", lambda f, w, i, o: f.embedding_bag(i, w, o, mode="max", padding_idx=2),
     lambda: [_W, np.array([0, 2, 2, 5, 1, 3, 2]), np.array([0, 0, 3, 5])], (0,), 1e-9),
    ("bag_max_2d", lambda f, w, i: f.embedding_bag(i, w, mode="max"), lambda: [_W, np.array([[0, 2, 2], [5, 1, 3]])],
     (0,), 1e-9),
    ("bag_last_offset", lambda f, w, i, o: f.embedding_bag(i, w, o, mode="mean", include_last_offset=True),
     lambda: [_W, np.array([0, 2, 2, 5, 1, 3, 2]), np.array([0, 0, 3, 7])], (0,), 1e-9),
    ("bag_per_sample_weights", lambda f, w, i, o, p: f.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
     lambda: [_W, np.array([0, 2, 2, 5, 1]), np.array([0, 3]), r(5)], (0, 3), 1e-9),
    # the gradient tolerances below allow for the pow backward's precision on fractional exponents
    ("lrn_3d", lambda f, x: f.local_response_norm(x, 3), lambda: [r(2, 5, 4)], (0,), 1e-6),
    ("lrn_5d", lambda f, x: f.local_response_norm(x, 2, alpha=0.1, beta=0.6, k=2.0), lambda: [r(2, 5, 4, 3, 2)],
     (0,), 1e-6),
    ("lp_pool1d", lambda f, x: f.lp_pool1d(x, 2, 3, 2), lambda: [r(2, 3, 8)], (0,), 1e-6),
    ("lp_pool1d_inf", lambda f, x: f.lp_pool1d(x, float("inf"), 3), lambda: [r(2, 3, 8)], (0,), 1e-9),
    ("lp_pool2d", lambda f, x: f.lp_pool2d(x, 3, (2, 3), ceil_mode=True), lambda: [np.abs(r(2, 3, 7, 8))], (0,),
     1e-6),
    ("max_unpool2d", lambda f, v, i: f.max_unpool2d(v, i, 2), lambda: _pooled(2), (0,), 1e-9),
    ("max_unpool2d_size", lambda f, v, i: f.max_unpool2d(v, i, 2, output_size=(7, 7)), lambda: _pooled(2), (0,),
     1e-9),
    ("max_unpool1d", lambda f, v, i: f.max_unpool1d(v, i, 3, 2), lambda: _pooled(1), (0,), 1e-9),
    ("channel_shuffle", lambda f, x: f.channel_shuffle(x, 3), lambda: [r(2, 6, 2, 3)], (0,), 1e-9),
    ("pairwise_distance", lambda f, a, b: f.pairwise_distance(a, b, p=1.5, keepdim=True), lambda: [r(3, 4), r(4)],
     (0, 1), 1e-9),
    ("cosine_similarity", lambda f, a, b: f.cosine_similarity(a, b, dim=0), lambda: [r(3, 4), r(3, 4)], (0, 1),
     1e-9),
]


@pytest.mark.oracle
@pytest.mark.parametrize("name,call,make,diff,rtol", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(torch, device, name, call, make, diff, rtol):
    arrays = make()
    ours = [npusim.tensor(a, device=device, requires_grad=i in diff) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    out, expected = call(F, *ours), call(torch.nn.functional, *theirs)
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(host(out), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(tuple(expected.shape))
    out.backward(npusim.tensor(g, device=device))
    expected.backward(torch.tensor(g))
    for i in diff:
        np.testing.assert_allclose(host(ours[i].grad), theirs[i].grad.numpy(), rtol=rtol, atol=rtol * 1e-3)


# --- without the oracle --------------------------------------------------------------------------------------------

def test_shrink_values(device):
    x = npusim.tensor([-1.0, -0.5, -0.2, 0.0, 0.3, 0.5, 2.0, float("nan")], device=device)
    np.testing.assert_array_equal(host(F.hardshrink(x)), [-1.0, 0, 0, 0, 0, 0, 2.0, np.nan])
    np.testing.assert_allclose(host(F.softshrink(x)), [-0.5, 0, 0, 0, 0, 0, 1.5, np.nan])


def test_rrelu_training_draws_slopes_in_range(device):
    x = npusim.tensor(-np.ones(2000), device=device)
    npusim.manual_seed(0)
    y = host(F.rrelu(x, 0.1, 0.3, training=True))
    assert ((-y >= 0.1) & (-y <= 0.3)).all() and y.std() > 0.03
    npusim.manual_seed(0)
    np.testing.assert_array_equal(host(nn.RReLU(0.1, 0.3).train()(x)), y)   # the default generator decides
    assert host(nn.RReLU(0.1, 0.3).eval()(x)) == pytest.approx(-0.2 * np.ones(2000))
    pos = npusim.tensor([1.0, 2.0], device=device)
    assert host(F.rrelu(pos, training=True)).tolist() == [1.0, 2.0]
    z = x.clone()
    assert F.rrelu_(z, 0.1, 0.3, training=True) is z and host(z).max() < 0


def test_fold_of_unfold_counts_the_covering_blocks(device):
    ones = npusim.ones(1, 1, 4, 4, device=device, dtype=npusim.float64)
    cover = host(F.fold(F.unfold(ones, 2), (4, 4), 2))[0, 0]
    np.testing.assert_array_equal(cover, [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]])
    x = npusim.arange(16.0, device=device).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(host(F.unfold(x, 2, stride=2))[0, :, 0], [0, 1, 4, 5])


def test_unfold_of_a_large_input_takes_no_per_block_python_work(device):
    # 252,004 blocks of a 12x12 kernel: 36 million index entries, built by array ops (a Python list of them took
    # 13 s and a 1000x1000 input ran the host out of memory; torch takes 0.1 s)
    x = npusim.arange(250_000.0, device=device).reshape(1, 1, 500, 500)
    F.unfold(x[..., :20, :20], 12)     # first-call costs do not count
    lines = 0

    def count(frame, event, arg):      # Python lines run, which no machine load changes (wall time would)
        nonlocal lines
        if event == "line":
            lines += 1
        return count
    sys.settrace(count)
    try:
        cols = F.unfold(x, 12)
    finally:
        sys.settrace(None)
    assert cols.shape == (1, 144, 489 * 489)
    # column (a, b) holds the block at row a, column b; row i * 12 + j its element (i, j)
    assert host(cols[0, :, 489 * 7 + 5]).tolist() == [(7 + i) * 500 + 5 + j for i in range(12) for j in range(12)]
    assert lines < 20_000, lines       # a Python step per block would be 252,004 at least


def test_embedding_bag_values(device):
    w = npusim.arange(15.0, device=device).reshape(5, 3)
    i = npusim.tensor([0, 1, 2, 3], device=device)
    o = npusim.tensor([0, 0, 2], device=device)
    np.testing.assert_array_equal(host(F.embedding_bag(i, w, o, mode="sum")), [[0, 0, 0], [3, 5, 7], [15, 17, 19]])
    np.testing.assert_array_equal(host(F.embedding_bag(i, w, o, mode="max")), [[0, 0, 0], [3, 4, 5], [9, 10, 11]])
    np.testing.assert_array_equal(host(F.embedding_bag(i, w, o, padding_idx=1)),
                                  [[0, 0, 0], [0, 1, 2], [7.5, 8.5, 9.5]])
    bag = nn.EmbeddingBag.from_pretrained(w, mode="sum")
    np.testing.assert_array_equal(host(bag(i.reshape(2, 2))), [[3, 5, 7], [15, 17, 19]])


def test_max_unpool_inverts_max_pool(device):
    x = npusim.tensor(r(1, 2, 4, 4), device=device)
    v, i = F.max_pool2d(x, 2, return_indices=True)
    back = nn.MaxUnpool2d(2)(v, i)
    kept = host(back) != 0
    assert kept.sum() == 8
    np.testing.assert_array_equal(host(back)[kept], host(x)[kept])


def test_channel_shuffle_order(device):
    x = npusim.arange(6.0, device=device).reshape(1, 6, 1)
    assert host(nn.ChannelShuffle(2)(x)).ravel().tolist() == [0, 3, 1, 4, 2, 5]


def test_lrn_lppool_distance_values(device):
    x = npusim.tensor([[[1.0], [2.0]]], device=device, dtype=npusim.float64)
    # size 1: x / (1 + alpha x^2)^beta
    assert host(F.local_response_norm(x, 1, alpha=1.0, beta=1.0)).ravel() == pytest.approx([0.5, 0.4])
    y = npusim.tensor([[3.0, 4.0]], device=device, dtype=npusim.float64)
    assert host(nn.LPPool1d(2, 2)(y)).item() == pytest.approx(5.0)
    assert nn.PairwiseDistance(eps=0)(y, y * 0).item() == pytest.approx(5.0)
    assert nn.CosineSimilarity(dim=1)(y, 2 * y).item() == pytest.approx(1.0)


def test_instance_norm_3d(device):
    x = npusim.tensor(r(2, 3, 2, 3, 2), device=device)
    out = host(nn.InstanceNorm3d(3)(x))
    assert np.abs(out.reshape(2, 3, -1).mean(-1)).max() < 1e-6
    np.testing.assert_allclose(host(nn.InstanceNorm3d(3)(x[0])), out[0], atol=1e-6)
    with pytest.raises(ValueError, match="expected 4D or 5D input"):
        nn.InstanceNorm3d(3)(x[0, 0])


def test_gradcheck(device):
    def f64(*shape):
        return npusim.tensor(r(*shape), device=device, requires_grad=True)

    assert gradcheck(lambda x: F.unfold(x, 2, padding=1, stride=2), (f64(1, 2, 3, 4),))
    assert gradcheck(lambda x: F.fold(x, (3, 4), 2, padding=1, stride=2), (f64(1, 8, 6),))
    i, o = npusim.tensor([0, 2, 2, 1], device=device), npusim.tensor([0, 1], device=device)
    for mode in ("sum", "mean", "max"):
        assert gradcheck(lambda w: F.embedding_bag(i, w, o, mode=mode), (f64(3, 2),))
    assert gradcheck(lambda x: F.local_response_norm(x, 3), (f64(1, 4, 3),))
    assert gradcheck(lambda x: F.softshrink(x, 0.1) + F.hardshrink(x, 0.1), (f64(5),))


REPRS = [
    (lambda m: m.EmbeddingBag(5, 3, padding_idx=-1), "EmbeddingBag(5, 3, mode='mean', padding_idx=4)"),
    (lambda m: m.Fold((4, 5), 2, stride=2),
     "Fold(output_size=(4, 5), kernel_size=2, dilation=1, padding=0, stride=2)"),
    (lambda m: m.Unfold(2), "Unfold(kernel_size=2, dilation=1, padding=0, stride=1)"),
    (lambda m: m.LocalResponseNorm(3), "LocalResponseNorm(3, alpha=0.0001, beta=0.75, k=1.0)"),
    (lambda m: m.LPPool2d(2.0, 3, stride=2, ceil_mode=True),
     "LPPool2d(norm_type=2.0, kernel_size=3, stride=2, ceil_mode=True)"),
    (lambda m: m.MaxUnpool1d(2), "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"),
    (lambda m: m.MaxUnpool2d(2, stride=1, padding=1), "MaxUnpool2d(kernel_size=(2, 2), stride=(1, 1), padding=(1, 1))"),
    (lambda m: m.ChannelShuffle(3), "ChannelShuffle(groups=3)"),
    (lambda m: m.RReLU(0.1, 0.3, inplace=True), "RReLU(lower=0.1, upper=0.3, inplace=True)"),
    (lambda m: m.Softshrink(0.3), "Softshrink(0.3)"),
    (lambda m: m.PairwiseDistance(keepdim=True), "PairwiseDistance()"),
    (lambda m: m.InstanceNorm3d(3),
     "InstanceNorm3d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"),
]


@pytest.mark.parametrize("build,expected", REPRS)
def test_repr(build, expected):
    assert repr(build(nn)) == expected


@pytest.mark.oracle
@pytest.mark.parametrize("build,expected", REPRS)
def test_repr_matches_torch(torch, build, expected):
    assert repr(build(torch.nn)) == expected


def _errors(lib, device):
    f = lib.nn.functional

    def t(v, **kw):
        return lib.tensor(v, **kw) if lib is not npusim else lib.tensor(v, device=device, **kw)

    x = t(r(2, 3, 5, 5))
    c = t(r(2, 12, 4))
    w = t(r(5, 3))
    v, i = t(r(1, 1, 2, 2)), t(np.array([0, 3, 4, 8]).reshape(1, 1, 2, 2))
    return [
        ("softshrink negative", lambda: f.softshrink(x, -1)),
        ("softshrink int", lambda: f.softshrink(t([1, 2]))),
        ("rrelu bounds", lambda: f.rrelu(x, 0.5, 0.1, training=True)),
        ("unfold 5d", lambda: f.unfold(t(r(1, 1, 1, 5, 5)), 2)),
        ("unfold kernel", lambda: f.unfold(x, 0)),
        ("unfold stride", lambda: f.unfold(x, 2, stride=0)),
        ("unfold dilation", lambda: f.unfold(x, 2, dilation=0)),
        ("unfold padding", lambda: f.unfold(x, 2, padding=-1)),
        ("unfold too big", lambda: f.unfold(x, 6)),
        ("unfold kernel len", lambda: f.unfold(x, (2, 2, 2))),
        ("fold 4d", lambda: f.fold(t(r(1, 2, 12, 4)), (3, 3), 2)),
        ("fold channels", lambda: f.fold(t(r(2, 10, 4)), (3, 3), 2)),
        ("fold blocks", lambda: f.fold(t(r(2, 12, 5)), (3, 3), 2)),
        ("fold output len", lambda: f.fold(c, (3, 3, 3), 2)),
        ("shuffle 2d", lambda: f.channel_shuffle(t(r(4, 4)), 2)),
        ("shuffle groups", lambda: f.channel_shuffle(x, 0)),
        ("shuffle divisible", lambda: f.channel_shuffle(x, 2)),
        ("shuffle float", lambda: f.channel_shuffle(x, 1.5)),
        ("lrn 2d", lambda: f.local_response_norm(t(r(3, 4)), 2)),
        ("unpool index", lambda: f.max_unpool2d(v, t(np.array([0, 3, 4, 16]).reshape(1, 1, 2, 2)), 2)),
        ("unpool shape", lambda: f.max_unpool2d(v, i.reshape(1, 1, 4, 1), 2)),
        ("unpool float index", lambda: f.max_unpool2d(v, i.double(), 2)),
        ("unpool output size", lambda: f.max_unpool2d(v, i, 2, output_size=(7, 7))),
        ("unpool output len", lambda: f.max_unpool2d(v, i, 2, output_size=(4,))),
        ("unpool 2d input", lambda: f.max_unpool2d(v[0, 0], i[0, 0], 2)),
        ("bag 3d", lambda: f.embedding_bag(t(np.zeros((2, 2, 2), dtype=np.int64)), w)),
        ("bag 2d offsets", lambda: f.embedding_bag(t(np.zeros((2, 2), dtype=np.int64)), w, t([0, 1]))),
        ("bag no offsets", lambda: f.embedding_bag(t([0, 1]), w)),
        ("bag weight 1d", lambda: f.embedding_bag(t([0, 1]), t(r(5)), t([0]))),
        ("bag mode", lambda: f.embedding_bag(t([0, 1]), w, t([0]), mode="min")),
        ("bag weights mode", lambda: f.embedding_bag(t([0, 1]), w, t([0]), per_sample_weights=t(r(2)))),
        ("bag weights shape", lambda: f.embedding_bag(t([0, 1]), w, t([0]), mode="sum", per_sample_weights=t(r(3)))),
        ("bag index range", lambda: f.embedding_bag(t([0, 7]), w.float(), t([0]))),
        ("bag first offset", lambda: f.embedding_bag(t([0, 1, 2]), w, t([1, 2]))),
        ("bag last offset", lambda: f.embedding_bag(t([0, 1, 2]), w, t([0, 5]))),
        ("bag padding", lambda: f.embedding_bag(t([0, 1]), w, t([0]), padding_idx=5)),
        ("bag include last", lambda: f.embedding_bag(t([0, 1]), w, t(np.zeros(0, dtype=np.int64)),
                                                    include_last_offset=True)),
    ]


def _raised(thunk):
    with pytest.raises(Exception) as info:
        thunk()
    # sizes and tensors print as the package's own types
    message = str(info.value).replace("npusim.Size", "torch.Size")
    message = message.replace("torch.npu.", "torch.")   # legacy tensor type names carry the device
    return type(info.value), message.replace("npusim.core.tensor.Tensor", "torch.Tensor")


def test_bad_inputs_raise(device):
    for label, thunk in _errors(npusim, device):
        kind, message = _raised(thunk)
        assert kind in (RuntimeError, ValueError, TypeError, NotImplementedError), label
        assert message, label


@pytest.mark.oracle
def test_bad_input_errors_match_torch(torch, device):
    theirs = dict(_errors(torch, "cpu"))
    mismatched = [(label, _raised(thunk), _raised(theirs[label])) for label, thunk in _errors(npusim, device)
                  if _raised(thunk) != _raised(theirs[label])]
    assert not mismatched
