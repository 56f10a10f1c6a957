"""nn.AdaptiveLogSoftmaxWithLoss: structure, (output, loss), log_prob and predict by hand and against PyTorch with
the same weights."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
import npusim.nn as nn
from conftest import host


def _module(device, seed=0, **kwargs):
    npusim.manual_seed(seed)
    return nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], **kwargs).to(device)


def test_structure_and_state_dict():
    m = nn.AdaptiveLogSoftmaxWithLoss(16, 100, (10, 40), div_value=2.0, head_bias=True)
    assert m.cutoffs == [10, 40, 100] and m.shortlist_size == 10 and m.n_clusters == 2 and m.head_size == 12
    assert list(m.state_dict()) == ["head.weight", "head.bias", "tail.0.0.weight", "tail.0.1.weight",
                                    "tail.1.0.weight", "tail.1.1.weight"]
    assert m.tail[0][0].weight.shape == (8, 16) and m.tail[1][1].weight.shape == (60, 4)
    for bad in ([], [10, 5], [0, 5], [5, 100], [5, 5], [2.5]):
        with pytest.raises(ValueError):
            nn.AdaptiveLogSoftmaxWithLoss(16, 100, bad)


def test_log_prob_is_a_distribution_and_forward_picks_from_it(device):
    m = _module(device)
    x = npusim.randn(6, 8, device=device)
    target = npusim.tensor([0, 3, 4, 9, 10, 19], device=device)
    lp = m.log_prob(x)
    np.testing.assert_allclose(host(lp.exp().sum(1)), np.ones(6), rtol=1e-5)
    out, loss = m(x, target)
    expect = host(lp)[np.arange(6), host(target)]
    np.testing.assert_allclose(host(out), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.item(), -expect.mean(), rtol=1e-5)
    result = m(x, target)
    assert type(result).__name__ == "_ASMoutput" and result._fields == ("output", "loss")
    np.testing.assert_array_equal(host(m.predict(x)), host(lp.argmax(1)))
    single = m(x[1], target[1])
    assert single.output.dim() == 0
    result.loss.backward()
    assert m.head.weight.grad is not None and m.tail[1][1].weight.grad is not None


def test_errors(device):
    m = _module(device)
    x = npusim.randn(3, 8, device=device)
    with pytest.raises(RuntimeError, match="Target values should be in \\[0, 19\\]"):
        m(x, npusim.tensor([0, 1, 25], device=device))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        m(x, npusim.tensor([0, 1], device=device))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(x, npusim.zeros(3, 2, dtype=npusim.int64, device=device))


@pytest.mark.oracle
@pytest.mark.parametrize("head_bias", [False, True])
def test_matches_torch(torch, device, head_bias):
    m = _module(device, head_bias=head_bias)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10], head_bias=head_bias)
    tm.load_state_dict({k: torch.tensor(host(v)) for k, v in m.state_dict().items()})
    assert repr(m) == repr(tm) and list(m.state_dict()) == list(tm.state_dict())
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    target = rng.integers(0, 20, 16)
    a = npusim.tensor(x, device=device, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    out, loss = m(a, npusim.tensor(target, device=device))
    tout, tloss = tm(t, torch.tensor(target))
    np.testing.assert_allclose(host(out), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5)
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(host(a.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)
    for (name, p), tp in zip(m.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(host(p.grad), tp.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_allclose(host(m.log_prob(a)), tm.log_prob(t).detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(host(m.predict(a)), tm.predict(t).numpy())
