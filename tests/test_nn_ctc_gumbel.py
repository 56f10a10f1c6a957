"""``F.ctc_loss`` / ``nn.CTCLoss`` and ``F.gumbel_softmax``, on cpu and npu.

CTC is checked without torch against a brute-force sum over every alignment, by hand for the smallest cases, and
by gradcheck through a log_softmax; gumbel_softmax by its reproducibility under ``manual_seed``, its rows and its
straight-through gradient. Oracle tests compare values and gradients with torch (for CTC also the gradient with
respect to the log-probabilities themselves, where aten's kernel adds ``exp(log_probs)``).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import npusim
import npusim.nn as nn
import npusim.nn.functional as F
from conftest import host
from npusim.autograd import gradcheck

RNG = np.random.default_rng(0)


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _brute_force_nll(log_probs, target, blank=0):
    """-log of the summed probability of every frame labelling that collapses (merge repeats, drop blanks) to
    ``target``."""
    steps, classes = log_probs.shape
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or path[i - 1] != c)]
        if collapsed == list(target):
            total += math.exp(sum(log_probs[t, c] for t, c in enumerate(path)))
    return -math.log(total) if total else math.inf


def test_ctc_matches_the_sum_over_alignments(device):
    steps, classes = 5, 3
    lp = _log_softmax(RNG.standard_normal((steps, 3, classes)))
    targets = np.array([[1, 2, 0], [1, 1, 0], [2, 0, 0]])
    target_lengths, input_lengths = [2, 2, 1], [5, 4, 3]
    out = F.ctc_loss(npusim.tensor(lp, device=device), npusim.tensor(targets, device=device),
                     input_lengths, target_lengths, reduction="none")
    expected = [_brute_force_nll(lp[:input_lengths[n], n], targets[n, :target_lengths[n]]) for n in range(3)]
    assert out.device.type == device
    np.testing.assert_allclose(host(out), expected, rtol=1e-12)   # float64 sums of a few hundred terms


def test_ctc_by_hand_and_an_impossible_alignment(device):
    p = np.array([[0.2, 0.8], [0.6, 0.4]])     # two frames, blank and one label
    lp = npusim.tensor(np.log(p)[:, None, :], device=device)
    loss = F.ctc_loss(lp, npusim.tensor([[1]], device=device), [2], [1], reduction="sum")
    # paths 11, b1, 1b
    assert host(loss).item() == pytest.approx(-math.log(0.8 * 0.4 + 0.2 * 0.4 + 0.8 * 0.6), rel=1e-12)
    # [1, 1] needs a blank between the two 1s: three frames, here two
    impossible = F.ctc_loss(lp, npusim.tensor([[1, 1]], device=device), [2], [2], reduction="none")
    assert math.isinf(host(impossible).item())
    zeroed = F.ctc_loss(lp.requires_grad_(), npusim.tensor([[1, 1]], device=device), [2], [2], zero_infinity=True)
    assert host(zeroed).item() == 0.0
    zeroed.backward()
    assert np.all(host(lp.grad) == 0)


def test_ctc_reductions_concatenated_targets_and_module(device):
    lp = npusim.tensor(_log_softmax(RNG.standard_normal((6, 2, 4))), device=device)
    padded = npusim.tensor([[1, 3, 2], [2, 2, 0]], device=device)
    concatenated = npusim.tensor([1, 3, 2, 2, 2], device=device)
    lengths_in, lengths_target = npusim.tensor([6, 5]), npusim.tensor([3, 2])
    none = F.ctc_loss(lp, padded, lengths_in, lengths_target, reduction="none")
    same = F.ctc_loss(lp, concatenated, lengths_in, lengths_target, reduction="none")
    np.testing.assert_array_equal(host(none), host(same))
    mean = F.ctc_loss(lp, padded, lengths_in, lengths_target)
    assert host(mean).item() == pytest.approx(float(np.mean(host(none) / np.array([3, 2]))), rel=1e-6)
    total = nn.CTCLoss(reduction="sum")(lp, padded, lengths_in, lengths_target)
    assert host(total).item() == pytest.approx(float(host(none).sum()), rel=1e-6)
    # blank other than 0: relabel so the old blank 0 becomes 3 and vice versa
    swapped = lp[:, :, [3, 1, 2, 0]]
    relabeled = npusim.tensor([[1, 0, 2], [2, 2, 0]], device=device)
    other = F.ctc_loss(swapped, relabeled, lengths_in, lengths_target, blank=3, reduction="none")
    np.testing.assert_allclose(host(other), host(none), rtol=1e-6)


def test_ctc_unbatched(device):
    lp = _log_softmax(RNG.standard_normal((5, 3)))
    out = F.ctc_loss(npusim.tensor(lp, device=device), npusim.tensor([1, 2], device=device), [5], [2],
                     reduction="none")
    assert out.dim() == 0
    assert host(out).item() == pytest.approx(_brute_force_nll(lp, [1, 2]), rel=1e-12)


def test_ctc_gradcheck_through_log_softmax(device):
    logits = npusim.tensor(RNG.standard_normal((5, 2, 4)), device=device, requires_grad=True)
    targets = npusim.tensor([[1, 1], [3, 2]], device=device)
    assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), targets, [5, 4], [2, 2], reduction="sum"), (logits,))


def test_ctc_bad_arguments():
    lp = npusim.zeros(4, 2, 3)
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, npusim.ones(2, 1, dtype=npusim.int64), [4, 4], [1, 1], blank=3)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, npusim.ones(2, 1, dtype=npusim.int64), [4], [1, 1])
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.ctc_loss(lp, npusim.ones(2, 1, dtype=npusim.int64), [4, 4], [1, 1], reduction="max")


def test_gumbel_softmax_is_reproducible_and_a_distribution(device):
    logits = npusim.tensor(RNG.standard_normal((4, 5)), device=device)
    npusim.manual_seed(7)
    a = F.gumbel_softmax(logits, tau=0.5)
    npusim.manual_seed(7)
    b = F.gumbel_softmax(logits, tau=0.5)
    assert a.device.type == device
    np.testing.assert_array_equal(host(a), host(b))
    np.testing.assert_allclose(host(a).sum(-1), 1.0, rtol=1e-12)
    c = F.gumbel_softmax(logits, tau=0.5)
    assert not np.array_equal(host(a), host(c))
    cols = F.gumbel_softmax(logits, dim=0)
    np.testing.assert_allclose(host(cols).sum(0), 1.0, rtol=1e-12)


def test_gumbel_softmax_hard_is_one_hot_with_the_soft_gradient(device):
    logits = npusim.tensor(RNG.standard_normal((3, 6)), device=device, requires_grad=True)
    w = npusim.tensor(RNG.standard_normal((3, 6)), device=device)
    npusim.manual_seed(1)
    hard = F.gumbel_softmax(logits, hard=True)
    (hard * w).sum().backward()
    grad_hard = host(logits.grad).copy()
    logits.grad = None
    npusim.manual_seed(1)
    soft = F.gumbel_softmax(logits)
    (soft * w).sum().backward()
    values = host(hard)
    assert np.all(values.sum(-1) == 1.0) and set(np.unique(values)) <= {0.0, 1.0}
    np.testing.assert_array_equal(values.argmax(-1), host(soft).argmax(-1))
    np.testing.assert_allclose(grad_hard, host(logits.grad), rtol=1e-12, atol=1e-15)


# --- oracle ---------------------------------------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("concatenated", [False, True])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_matches_torch(torch, device, reduction, concatenated, zero_infinity):
    steps, batch, classes, longest = 12, 4, 6, 5
    x = RNG.standard_normal((steps, batch, classes))
    target_lengths = np.array([5, 3, 0, 4])
    input_lengths = np.array([12, 10, 6, 2 if zero_infinity else 12])   # 4 labels in 2 frames: impossible
    padded = RNG.integers(1, classes, (batch, longest))
    padded[0, 1] = padded[0, 2]                                           # a repeat needs a blank between
    targets = (np.concatenate([padded[n, :target_lengths[n]] for n in range(batch)]) if concatenated else padded)
    w = RNG.standard_normal(() if reduction != "none" else (batch,))
    tx = torch.tensor(x, requires_grad=True)
    nx = npusim.tensor(x, device=device, requires_grad=True)
    t_lp, n_lp = tx.log_softmax(2), nx.log_softmax(2)
    t_lp.retain_grad()
    n_lp.retain_grad()
    t_loss = torch.nn.functional.ctc_loss(t_lp, torch.tensor(targets), torch.tensor(input_lengths),
                                          torch.tensor(target_lengths), reduction=reduction,
                                          zero_infinity=zero_infinity)
    n_loss = nn.CTCLoss(reduction=reduction, zero_infinity=zero_infinity)(
        n_lp, npusim.tensor(targets, device=device), npusim.tensor(input_lengths), npusim.tensor(target_lengths))
    (t_loss * torch.tensor(w)).sum().backward()
    (n_loss * npusim.tensor(w, device=device)).sum().backward()
    # float64 log-space recursions over 12 frames: each step's logsumexp rounds to a few ulps of values of order 10
    np.testing.assert_allclose(host(n_loss), t_loss.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(host(n_lp.grad), t_lp.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(host(nx.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.oracle
def test_ctc_float32_matches_torch(torch, device):
    x = RNG.standard_normal((20, 3, 8)).astype(np.float32)
    targets = RNG.integers(1, 8, (3, 6))
    lengths_in, lengths_target = [20, 18, 15], [6, 4, 5]
    t_loss = torch.nn.functional.ctc_loss(torch.tensor(x).log_softmax(2), torch.tensor(targets),
                                          lengths_in, lengths_target, reduction="none")
    n_loss = F.ctc_loss(npusim.tensor(x, device=device).log_softmax(2), npusim.tensor(targets, device=device),
                        lengths_in, lengths_target, reduction="none")
    # float32 over 20 frames of logsumexp: ~20 roundings of 6e-8 relative on losses of order 40
    np.testing.assert_allclose(host(n_loss), t_loss.numpy(), rtol=2e-5)


@pytest.mark.oracle
@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("tau,dim", [(1.0, -1), (0.3, 0)])
def test_gumbel_softmax_matches_torch_given_the_same_noise(torch, device, monkeypatch, hard, tau, dim):
    """torch's own gumbel_softmax, fed the exponential draws npusim's generator makes for the same seed."""
    logits = RNG.standard_normal((4, 5))
    npusim.manual_seed(11)
    draws = host(npusim.empty(4, 5, dtype=npusim.float64, device=device).exponential_())
    monkeypatch.setattr(torch.Tensor, "exponential_", lambda self, *a, **k: self.copy_(torch.tensor(draws)))
    tl = torch.tensor(logits, requires_grad=True)
    nl = npusim.tensor(logits, device=device, requires_grad=True)
    t_out = torch.nn.functional.gumbel_softmax(tl, tau=tau, hard=hard, dim=dim)
    npusim.manual_seed(11)
    n_out = F.gumbel_softmax(nl, tau=tau, hard=hard, dim=dim)
    w = RNG.standard_normal((4, 5))
    (t_out * torch.tensor(w)).sum().backward()
    (n_out * npusim.tensor(w, device=device)).sum().backward()
    # float64 softmax of 5 terms: a few ulps
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(host(nl.grad), tl.grad.numpy(), rtol=1e-12, atol=1e-14)
