"""Margin, embedding and likelihood losses (functional and module forms).

Hand-computed values and float64 gradcheck prove the formulas without PyTorch; oracle tests
compare values and gradients for each reduction and option, and every bad input's error, with PyTorch.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck

RNG = np.random.default_rng(0)


def r(*shape):
    return RNG.standard_normal(shape)


def pm(n):
    return np.where(RNG.random(n) > 0.5, 1.0, -1.0)


def _detached(fn):
    """The loss with its target argument (index 1) taken as a constant (soft margin has no target gradient)."""
    return lambda a, b, **k: fn(a, b.detach(), **k)


# name, functional name, arrays, indices of differentiable arrays, kwargs
CASES = [
    ("cosine_embedding", "cosine_embedding_loss", lambda: [r(5, 4), r(5, 4), pm(5)], (0, 1), dict(margin=0.2)),
    ("cosine_embedding_0d", "cosine_embedding_loss", lambda: [r(4), r(4), np.array(-1.0)], (0, 1),
     dict(margin=-0.5)),
    ("margin_ranking", "margin_ranking_loss", lambda: [r(6), r(6), pm(6)], (0, 1, 2), dict(margin=0.3)),
    ("hinge_embedding", "hinge_embedding_loss", lambda: [r(3, 4), pm(12).reshape(3, 4)], (0,), dict(margin=0.7)),
    ("soft_margin", "soft_margin_loss", lambda: [r(3, 4), pm(12).reshape(3, 4)], (0,), {}),
    ("triplet_p1_swap", "triplet_margin_loss", lambda: [r(5, 4), r(5, 4), r(5, 4)], (0, 1, 2),
     dict(p=1, swap=True, margin=0.5)),
    ("triplet_p3", "triplet_margin_loss", lambda: [r(5, 4), r(5, 4), r(5, 4)], (0, 1, 2), dict(p=3)),
    ("triplet_distance", "triplet_margin_with_distance_loss", lambda: [r(5, 4), r(5, 4), r(5, 4)], (0, 1, 2),
     dict(swap=True)),
    ("poisson_full", "poisson_nll_loss", lambda: [r(3, 4), RNG.poisson(2, (3, 4)).astype(float)], (0,),
     dict(full=True)),
    ("poisson_rate", "poisson_nll_loss", lambda: [np.abs(r(3, 4)), RNG.poisson(2, (3, 4)).astype(float)], (0,),
     dict(log_input=False)),
    ("gaussian_full", "gaussian_nll_loss", lambda: [r(3, 4), r(3, 4), np.abs(r(3, 4))], (0, 1, 2), dict(full=True)),
    ("gaussian_homoscedastic", "gaussian_nll_loss", lambda: [r(3, 4), r(3, 4), np.abs(r(3))], (0, 2), {}),
    ("gaussian_clamped", "gaussian_nll_loss", lambda: [r(3, 4), r(3, 4), np.array([[0.5], [1e-9], [2.0]])],
     (0, 2), {}),
    ("multilabel_soft", "multilabel_soft_margin_loss",
     lambda: [r(3, 4), (RNG.random((3, 4)) > 0.5).astype(float), np.abs(r(4))], (0,), {}),
    ("multi_margin_p1", "multi_margin_loss", lambda: [r(5, 4), RNG.integers(0, 4, 5)], (0,), dict(margin=0.8)),
    ("multi_margin_p2", "multi_margin_loss", lambda: [r(5, 4), RNG.integers(0, 4, 5)], (0,), dict(p=2)),
    ("multi_margin_1d", "multi_margin_loss", lambda: [r(4), np.array(2)], (0,), {}),
    ("multilabel_margin", "multilabel_margin_loss",
     lambda: [r(3, 4), np.array([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 0, 0, 0]])], (0,), {}),
    ("multilabel_margin_1d", "multilabel_margin_loss", lambda: [r(4), np.array([3, 0, -1, 1])], (0,), {}),
]


@pytest.mark.oracle
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,fname,make,diff,kw", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(torch, device, reduction, name, fname, make, diff, kw):
    arrays = make()
    ours = [npusim.tensor(a, device=device, requires_grad=i in diff) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
    fn, tfn = getattr(F, fname), getattr(torch.nn.functional, fname)
    if fname == "soft_margin_loss":
        fn, tfn = _detached(fn), _detached(tfn)
    if fname == "multilabel_soft_margin_loss":   # the third array is the class weight
        kw = dict(kw, weight=ours.pop()), dict(kw, weight=theirs.pop())
    else:
        kw = kw, kw
    out, expected = fn(*ours, reduction=reduction, **kw[0]), tfn(*theirs, reduction=reduction, **kw[1])
    assert tuple(out.shape) == tuple(expected.shape)
    np.testing.assert_allclose(host(out), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    g = RNG.standard_normal(tuple(expected.shape))
    out.backward(npusim.tensor(g, device=device))
    expected.backward(torch.tensor(g))
    for a, b in zip(ours, theirs):
        if b.requires_grad:
            np.testing.assert_allclose(host(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.oracle
def test_multi_margin_weight_matches_torch(torch, device):
    x, t, w = r(5, 4), RNG.integers(0, 4, 5), np.abs(r(4))
    ours = npusim.tensor(x, device=device, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    out = F.multi_margin_loss(ours, npusim.tensor(t, device=device), p=2, weight=npusim.tensor(w, device=device))
    expected = torch.nn.functional.multi_margin_loss(theirs, torch.tensor(t), p=2, weight=torch.tensor(w))
    out.backward()
    expected.backward()
    np.testing.assert_allclose(host(out), expected.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(host(ours.grad), theirs.grad.numpy(), rtol=1e-9)


# --- without the oracle: hand-computed values and finite differences ------------------------------------------

def test_hand_computed_values(device):
    def t(v):
        return npusim.tensor(v, device=device, dtype=npusim.float64)
    # margin ranking: max(0, -y (x1 - x2) + m)
    assert F.margin_ranking_loss(t([1.0, 2.0]), t([2.0, 0.0]), t([1.0, 1.0]), margin=0.5,
                                 reduction="sum").item() == pytest.approx(1.5)
    # hinge embedding: x for y = 1, max(0, m - x) for y = -1
    assert host(F.hinge_embedding_loss(t([0.3, 0.4]), t([1.0, -1.0]), reduction="none")).tolist() == \
        pytest.approx([0.3, 0.6])
    # soft margin: log(1 + exp(-y x))
    assert F.soft_margin_loss(t([0.0]), t([1.0])).item() == pytest.approx(math.log(2))
    # cosine embedding: parallel vectors with y = 1 cost 0, with y = -1 cost cos - margin
    x = t([[1.0, 0.0], [1.0, 1.0]])
    assert host(F.cosine_embedding_loss(x, x, t([1.0, -1.0]), margin=0.25, reduction="none")).tolist() == \
        pytest.approx([0.0, 0.75], abs=1e-9)   # the 1e-12 guard on the magnitudes shows
    # multilabel margin: targets {3, 0} against classes {1, 2} (the -1 ends the list), / 4 classes
    x = t([[0.1, 0.2, 0.4, 0.8]])
    assert F.multilabel_margin_loss(x, npusim.tensor([[3, 0, -1, 1]], device=device)).item() == \
        pytest.approx(0.85)
    assert F.multilabel_margin_loss(x, npusim.tensor([[3, 3, -1, 1]], device=device)).item() == \
        pytest.approx(0.65)   # a repeated target counts twice
    # multi margin: sum over j != y of max(0, 1 - x[y] + x[j]) / C
    assert F.multi_margin_loss(t([[0.1, 0.2, 0.4, 0.8]]), npusim.tensor([3], device=device)).item() == \
        pytest.approx((0.3 + 0.4 + 0.6) / 4)
    # poisson with log input: exp(x) - y x
    assert F.poisson_nll_loss(t([0.0]), t([2.0])).item() == pytest.approx(1.0)
    # gaussian: 0.5 (log var + (x - y)^2 / var)
    assert F.gaussian_nll_loss(t([1.0]), t([0.0]), t([2.0])).item() == pytest.approx(0.5 * (math.log(2) + 0.5))
    # triplet: max(0, d(a, p) - d(a, n) + m), d with eps = 0
    assert F.triplet_margin_loss(t([[0.0, 0.0]]), t([[3.0, 4.0]]), t([[1.0, 0.0]]), eps=0.0).item() == \
        pytest.approx(5.0)


def test_gradcheck(device):
    def f64(*shape):
        return npusim.tensor(r(*shape), device=device, requires_grad=True)

    y = npusim.tensor(pm(4), device=device)
    assert gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, y, margin=-0.3), (f64(4, 3), f64(4, 3)))
    assert gradcheck(lambda a, p, n: F.triplet_margin_loss(a, p, n, swap=True), (f64(4, 3), f64(4, 3), f64(4, 3)))
    assert gradcheck(lambda x: F.soft_margin_loss(x, y), (f64(4),))
    assert gradcheck(lambda x: F.multilabel_soft_margin_loss(x, (y > 0).double().expand(3, 4)), (f64(3, 4),))
    var = npusim.tensor(np.abs(r(4)) + 0.5, device=device, requires_grad=True)
    assert gradcheck(lambda x, v: F.gaussian_nll_loss(x, y, v, full=True), (f64(4), var))
    assert gradcheck(lambda x: F.poisson_nll_loss(x, y.abs(), full=True), (f64(4),))
    assert gradcheck(lambda x: F.multi_margin_loss(x, npusim.tensor([0, 2, 1], device=device), p=2), (f64(3, 4),))


def test_reductions_agree(device):
    x, t = npusim.tensor(r(5, 4), device=device), npusim.tensor(RNG.integers(0, 4, 5), device=device)
    none = F.multi_margin_loss(x, t, reduction="none")
    assert none.shape == (5,)
    assert F.multi_margin_loss(x, t, reduction="sum").item() == pytest.approx(none.sum().item())
    assert F.multi_margin_loss(x, t).item() == pytest.approx(none.mean().item())


def test_modules_call_their_functional_forms(device):
    x, y = npusim.tensor(r(3, 4), device=device), npusim.tensor(pm(12).reshape(3, 4), device=device)
    assert nn.SoftMarginLoss(reduction="sum")(x, y).item() == pytest.approx(
        F.soft_margin_loss(x, y, reduction="sum").item())
    assert nn.HingeEmbeddingLoss(margin=2.0)(x, y).item() == pytest.approx(
        F.hinge_embedding_loss(x, y, margin=2.0).item())
    t = npusim.tensor([0, 3, 1], device=device)
    w = npusim.tensor([1.0, 2.0, 3.0, 4.0], device=device)
    assert nn.MultiMarginLoss(p=2, margin=0.5, weight=w)(x, t).item() == pytest.approx(
        F.multi_margin_loss(x, t, p=2, margin=0.5, weight=w).item())
    assert nn.GaussianNLLLoss(full=True)(x, x * 0, x.abs() + 1).item() == pytest.approx(
        F.gaussian_nll_loss(x, x * 0, x.abs() + 1, full=True).item())
    loss = nn.TripletMarginWithDistanceLoss(distance_function=lambda a, b: (a - b).abs().sum(-1), margin=0.5)
    assert loss(x, x, x).item() == pytest.approx(0.5)


def test_deprecated_flags_set_the_reduction():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MarginRankingLoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.PoissonNLLLoss(reduce=False).reduction == "none"


REPRS = [
    (lambda m: m.MarginRankingLoss(), "MarginRankingLoss()"),
    (lambda m: m.TripletMarginWithDistanceLoss(),
     "TripletMarginWithDistanceLoss(\n  (distance_function): PairwiseDistance()\n)"),
    (lambda m: m.MultiMarginLoss(), "MultiMarginLoss()"),
    (lambda m: m.GaussianNLLLoss(), "GaussianNLLLoss()"),
]


@pytest.mark.parametrize("build,expected", REPRS)
def test_repr(build, expected):
    assert repr(build(nn)) == expected


@pytest.mark.oracle
@pytest.mark.parametrize("build,expected", REPRS)
def test_repr_matches_torch(torch, build, expected):
    assert repr(build(torch.nn)) == expected


# --- errors -------------------------------------------------------------------------------------------------------

def _errors(lib, device):
    """Bad calls against npusim or torch: (label, thunk)."""
    f = lib.nn.functional

    def t(v, **kw):
        return lib.tensor(v, **kw) if lib is not npusim else lib.tensor(v, device=device, **kw)

    x = t(r(3, 4))
    tgt = t([1.0, -1.0, 1.0])
    return [
        ("cel 2d target", lambda: f.cosine_embedding_loss(x, x, t(np.ones((3, 1))))),
        ("cel 1d inputs", lambda: f.cosine_embedding_loss(t(r(4)), t(r(4)), tgt)),
        ("cel 0d target", lambda: f.cosine_embedding_loss(x, x, t(1.0))),
        ("cel reduction", lambda: f.cosine_embedding_loss(x, x, tgt, reduction="foo")),
        ("mrl dims", lambda: f.margin_ranking_loss(t(r(3)), t(r(3, 1)), t(r(3)))),
        ("tml margin", lambda: f.triplet_margin_loss(x, x, x, margin=0)),
        ("tml dims", lambda: f.triplet_margin_loss(x, x, t(r(4)))),
        ("tmwd dims", lambda: f.triplet_margin_with_distance_loss(x, x, t(r(4)))),
        ("tmwd reduction", lambda: f.triplet_margin_with_distance_loss(x, x, x, reduction="x")),
        ("pnll reduction", lambda: f.poisson_nll_loss(x, x, reduction="x")),
        ("gnll negative", lambda: f.gaussian_nll_loss(x, x, t(np.full((3, 4), -1.0)))),
        ("gnll negative float", lambda: f.gaussian_nll_loss(x, x, -1.0)),
        ("gnll size", lambda: f.gaussian_nll_loss(x, x, t(np.ones(2)))),
        ("gnll reduction", lambda: f.gaussian_nll_loss(x, x, t(np.ones((3, 4))), reduction="x")),
        ("mlsml reduction", lambda: f.multilabel_soft_margin_loss(x, x, reduction="x")),
        ("sml target grad", lambda: f.soft_margin_loss(x, t(r(3, 4), requires_grad=True))),
        ("mml p", lambda: f.multi_margin_loss(x, t([0, 1, 2]), p=3)),
        ("mml weight dim", lambda: f.multi_margin_loss(x, t([0, 1, 2]), weight=t(np.ones((2, 2))))),
        ("mml range", lambda: f.multi_margin_loss(x, t([0, 1, 4]))),
        ("mml negative", lambda: f.multi_margin_loss(x, t([0, 1, -1]))),
        ("mml target shape", lambda: f.multi_margin_loss(x, t([0, 1]))),
        ("mml 3d", lambda: f.multi_margin_loss(t(r(2, 3, 4)), t([0, 1]))),
        ("mml float target", lambda: f.multi_margin_loss(x, t([0.0, 1.0, 2.0]))),
        ("mml weight size", lambda: f.multi_margin_loss(x, t([0, 1, 2]), weight=t(np.ones(3)))),
        ("mlml target shape", lambda: f.multilabel_margin_loss(x, t(np.zeros((3, 3), dtype=np.int64)))),
        ("mlml float", lambda: f.multilabel_margin_loss(x, t(np.zeros((3, 4))))),
        ("mlml range", lambda: f.multilabel_margin_loss(x, t(np.full((3, 4), 5)))),
        ("mlml 1d target", lambda: f.multilabel_margin_loss(t(r(4)), t([3, 0, -1]))),
        ("mm module weight", lambda: lib.nn.MultiMarginLoss(weight=t(np.ones((2, 2))))),
        ("tml module margin", lambda: lib.nn.TripletMarginLoss(margin=0)),
    ]


def _raised(thunk):
    with pytest.raises(Exception) as info:
        thunk()
    # sizes print as the package's own Size type
    return type(info.value), str(info.value).replace("npusim.Size", "torch.Size")


def test_bad_inputs_raise(device):
    for label, thunk in _errors(npusim, device):
        kind, message = _raised(thunk)
        assert kind in (RuntimeError, ValueError, TypeError), label
        assert message, label


@pytest.mark.oracle
def test_bad_input_errors_match_torch(torch, device):
    theirs = dict(_errors(torch, "cpu"))
    mismatched = [(label, _raised(thunk), _raised(theirs[label])) for label, thunk in _errors(npusim, device)
                  if _raised(thunk) != _raised(theirs[label])]
    assert not mismatched
