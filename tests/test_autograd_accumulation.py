"""The engine adds a tensor's incoming gradients in place when nothing else can see the running sum: the same
bits as adding out of place, and a gradient someone kept (a hook, .grad, a saved reference) is never written."""
from __future__ import annotations

import numpy as np

import npusim
from npusim.core.autograd import engine
from conftest import host


def _recurrence(w, h0, steps=6):
    h = h0
    for _ in range(steps):
        h = npusim.tanh(h @ w)
    return h.sum()


def test_a_weight_used_at_every_step_gets_the_out_of_place_sum(device, monkeypatch):
    npusim.manual_seed(0)
    w = npusim.randn(5, 5, device=device, requires_grad=True)
    h0 = npusim.randn(3, 5, device=device)
    _recurrence(w, h0).backward()
    in_place = host(w.grad).copy()
    calls = []
    monkeypatch.setattr(engine, "_add_", lambda a, b: calls.append(1))   # the in-place path would record here
    monkeypatch.setattr(engine, "_may_add_into", lambda old, g: False)
    w.grad = None
    _recurrence(w, h0).backward()
    assert not calls
    np.testing.assert_array_equal(in_place, host(w.grad))   # bit for bit


def test_the_in_place_path_is_taken_for_a_recurrent_weight(device, monkeypatch):
    adds = []
    real = engine._add_
    monkeypatch.setattr(engine, "_add_", lambda a, b: adds.append(1) or real(a, b))
    w = npusim.randn(4, 4, device=device, requires_grad=True)
    _recurrence(w, npusim.randn(2, 4, device=device), steps=5).backward()
    assert len(adds) >= 3      # five contributions into w's gradient: most sums reuse one array


class _PassThrough(npusim.autograd.Function):
    """The identity, whose backward hands its incoming gradient on as the very same tensor."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        return g


def test_a_gradient_a_hook_kept_is_not_written_by_later_sums(device):
    x = npusim.ones(3, device=device, requires_grad=True)
    others = (x * 3).sum() + (x * 4).sum()
    seen = []
    y = _PassThrough.apply(x)    # made last, so its backward runs first: x's sum starts as the hook's tensor
    y.register_hook(lambda g: seen.append(g))
    ((y * 2).sum() + others).backward()
    np.testing.assert_array_equal(host(seen[0]), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(host(x.grad), [9.0, 9.0, 9.0])


def test_a_gradient_the_caller_passed_in_is_not_written(device):
    x = npusim.ones(3, device=device, requires_grad=True)
    given = npusim.ones(3, device=device)
    others = [(x * 3).sum(), (x * 4).sum()]
    npusim.autograd.backward([*others, _PassThrough.apply(x)], [None, None, given])   # `given` reaches x first
    np.testing.assert_array_equal(host(given), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(host(x.grad), [8.0, 8.0, 8.0])


def test_retained_and_accumulated_grads_stay_their_own(device):
    x = npusim.ones(2, device=device, requires_grad=True)
    y = x * 1
    y.retain_grad()
    (y.sum() + (y * 2).sum()).backward()
    first = y.grad
    kept = host(first).copy()
    (x * 5).sum().backward()          # a second backward accumulates into x.grad, not into y's gradient
    np.testing.assert_array_equal(host(first), kept)
    np.testing.assert_array_equal(host(x.grad), [8.0, 8.0])


def test_double_backward_through_summed_gradients_is_unchanged(device):
    x = npusim.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = (x ** 3).sum() + (x ** 2).sum()
    (g,) = npusim.autograd.grad(y, x, create_graph=True)
    g.sum().backward()
    np.testing.assert_allclose(host(x.grad), 6 * np.array([1.0, 2.0]) + 2)
