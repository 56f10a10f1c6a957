"""npusim.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against torch.autograd.functional."""
from __future__ import annotations

import numpy as np
import pytest

import npusim
from npusim.autograd import functional as AF
from conftest import host

pytestmark = pytest.mark.oracle

RNG = np.random.default_rng(0)
X34 = RNG.standard_normal((3, 4))
X4 = RNG.standard_normal(4)
Y4 = RNG.standard_normal(4)
W43 = RNG.standard_normal((4, 3))


def both(torch, device, *arrays):
    """The arrays as float64 npusim tensors on ``device`` and as torch tensors."""
    return (tuple(npusim.tensor(a, dtype=npusim.float64, device=device) for a in arrays),
            tuple(torch.tensor(a, dtype=torch.float64) for a in arrays))


def same(ours, theirs, torch):
    """Same nesting (tuples), shapes and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, npusim.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_allclose(host(ours), theirs.detach().numpy(), rtol=1e-7, atol=1e-9)
        return
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        same(a, b, torch)


def same_error(torch, ours, theirs):
    """Both calls raise the same exception type with the same message (torch's names read as npusim's)."""
    with pytest.raises(Exception) as want:
        theirs()
    with pytest.raises(type(want.value)) as got:
        ours()
    assert str(got.value) == str(want.value).replace("torch.", "npusim."), (str(got.value), str(want.value))


def exp_reducer(x):
    return x.exp().sum(dim=1)


def adder(x, y):
    return 2 * x + 3 * y


def two_outputs(x, y):
    return (x * y).sin(), (x.unsqueeze(0) * y.unsqueeze(1)).tanh().sum(0)


def pow_reducer(x):
    return x.pow(3).sum()


def mlp_loss(x, w):
    return ((x @ w).tanh() ** 2).mean()


def test_vjp(torch, device):
    (x, v), (tx, tv) = both(torch, device, X34, RNG.standard_normal(3))
    same(AF.vjp(exp_reducer, x, v), torch.autograd.functional.vjp(exp_reducer, tx, tv), torch)
    (a, b, v2), (ta, tb, tv2) = both(torch, device, X4, Y4, np.ones(4))
    same(AF.vjp(adder, (a, b), v2), torch.autograd.functional.vjp(adder, (ta, tb), tv2), torch)
    # v may be left out for a single-element output
    same(AF.vjp(pow_reducer, a), torch.autograd.functional.vjp(pow_reducer, ta), torch)


def test_vjp_create_graph_is_differentiable(torch, device):
    (x, v), (tx, tv) = both(torch, device, X34, np.ones(3))
    x.requires_grad_()
    tx.requires_grad_()
    out, g = AF.vjp(exp_reducer, x, v, create_graph=True)
    tout, tg = torch.autograd.functional.vjp(exp_reducer, tx, tv, create_graph=True)
    assert out.requires_grad and g.requires_grad
    (g ** 2).sum().backward()
    (tg ** 2).sum().backward()
    same(x.grad, tx.grad, torch)


def test_results_are_detached_without_create_graph(device):
    x = npusim.ones(3, dtype=npusim.float64, device=device, requires_grad=True)
    out, g = AF.vjp(lambda a: (a ** 2).sum(), x)
    assert not out.requires_grad and not g.requires_grad
    assert x.grad is None


def test_jvp(torch, device):
    (x, v), (tx, tv) = both(torch, device, X34, np.ones((3, 4)))
    same(AF.jvp(exp_reducer, x, v), torch.autograd.functional.jvp(exp_reducer, tx, tv), torch)
    (a, b, va, vb), (ta, tb, tva, tvb) = both(torch, device, X4, Y4, np.ones(4), X4)
    same(AF.jvp(adder, (a, b), (va, vb)), torch.autograd.functional.jvp(adder, (ta, tb), (tva, tvb)), torch)
    same(AF.jvp(two_outputs, (a, b), (va, vb)), torch.autograd.functional.jvp(two_outputs, (ta, tb), (tva, tvb)),
         torch)


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian(torch, device, vectorize):
    tf = torch.autograd.functional
    (x, a, b, w), (tx, ta, tb, tw) = both(torch, device, X34, X4, Y4, W43)
    same(AF.jacobian(exp_reducer, x, vectorize=vectorize), tf.jacobian(exp_reducer, tx, vectorize=vectorize), torch)
    same(AF.jacobian(adder, (a, b), vectorize=vectorize), tf.jacobian(adder, (ta, tb), vectorize=vectorize), torch)
    same(AF.jacobian(two_outputs, (a, b), vectorize=vectorize),
         tf.jacobian(two_outputs, (ta, tb), vectorize=vectorize), torch)
    same(AF.jacobian(mlp_loss, (x, w), vectorize=vectorize), tf.jacobian(mlp_loss, (tx, tw), vectorize=vectorize),
         torch)
    # an input the output does not depend on has a zero block
    same(AF.jacobian(lambda p, q: p.sin(), (a, b), vectorize=vectorize),
         tf.jacobian(lambda p, q: p.sin(), (ta, tb), vectorize=vectorize), torch)


def test_jacobian_forward_mode(torch, device):
    (a, b), (ta, tb) = both(torch, device, X4, Y4)
    same(AF.jacobian(two_outputs, (a, b), vectorize=True, strategy="forward-mode"),
         torch.autograd.functional.jacobian(two_outputs, (ta, tb), vectorize=True, strategy="forward-mode"), torch)


def test_jacobian_create_graph(torch, device):
    (a,), (ta,) = both(torch, device, X4)
    a.requires_grad_()
    ta.requires_grad_()
    j = AF.jacobian(lambda p: p ** 3, a, create_graph=True)
    tj = torch.autograd.functional.jacobian(lambda p: p ** 3, ta, create_graph=True)
    assert j.requires_grad
    j.sum().backward()
    tj.sum().backward()
    same(a.grad, ta.grad, torch)


def test_hessian(torch, device):
    tf = torch.autograd.functional
    (x, a, b, w), (tx, ta, tb, tw) = both(torch, device, X34, X4, Y4, W43)
    same(AF.hessian(pow_reducer, a), tf.hessian(pow_reducer, ta), torch)
    same(AF.hessian(mlp_loss, (x, w)), tf.hessian(mlp_loss, (tx, tw)), torch)
    same(AF.hessian(lambda p, q: (p * q.exp()).sum(), (a, b)), tf.hessian(lambda p, q: (p * q.exp()).sum(), (ta, tb)),
         torch)


def test_hvp_and_vhp(torch, device):
    tf = torch.autograd.functional
    (x, w, vx, vw), (tx, tw, tvx, tvw) = both(torch, device, X34, W43, np.ones((3, 4)), W43)
    same(AF.hvp(mlp_loss, (x, w), (vx, vw)), tf.hvp(mlp_loss, (tx, tw), (tvx, tvw)), torch)
    same(AF.vhp(mlp_loss, (x, w), (vx, vw)), tf.vhp(mlp_loss, (tx, tw), (tvx, tvw)), torch)
    (a, v), (ta, tv) = both(torch, device, X4, Y4)
    same(AF.hvp(pow_reducer, a, v), tf.hvp(pow_reducer, ta, tv), torch)
    same(AF.vhp(pow_reducer, a, v), tf.vhp(pow_reducer, ta, tv), torch)


def test_zeros_for_independent_inputs(torch, device):
    tf = torch.autograd.functional
    (a, b, v), (ta, tb, tv) = both(torch, device, X4, Y4, np.ones(4))
    same(AF.vjp(lambda p, q: p * 2, (a, b), v), tf.vjp(lambda p, q: p * 2, (ta, tb), tv), torch)
    same(AF.vhp(lambda p: p.sum(), a, v), tf.vhp(lambda p: p.sum(), ta, tv), torch)
    same(AF.hvp(lambda p: p.sum(), a, v), tf.hvp(lambda p: p.sum(), ta, tv), torch)


def test_errors_match_torch(torch, device):
    tf = torch.autograd.functional
    (x, a, b, v3, v2), (tx, ta, tb, tv3, tv2) = both(torch, device, X34, X4, Y4, np.ones(3), np.ones(2))
    cases = [
        (lambda: AF.vjp(exp_reducer, 3), lambda: tf.vjp(exp_reducer, 3)),
        (lambda: AF.jacobian(adder, (a, 3)), lambda: tf.jacobian(adder, (ta, 3))),
        (lambda: AF.vjp(exp_reducer, x), lambda: tf.vjp(exp_reducer, tx)),
        (lambda: AF.vjp(exp_reducer, x, v2), lambda: tf.vjp(exp_reducer, tx, tv2)),
        (lambda: AF.vjp(adder, (a, b), (v3, v3)), lambda: tf.vjp(adder, (ta, tb), (tv3, tv3))),
        (lambda: AF.jvp(adder, (a, b), (a, v3)), lambda: tf.jvp(adder, (ta, tb), (ta, tv3))),
        (lambda: AF.jvp(exp_reducer, x), lambda: tf.jvp(exp_reducer, tx)),
        (lambda: AF.vjp(lambda p: 1.0, a), lambda: tf.vjp(lambda p: 1.0, ta)),
        # strict mode: an output independent of an input, an output that does not require grad
        (lambda: AF.vjp(lambda p, q: p * 2, (a, b), a, strict=True),
         lambda: tf.vjp(lambda p, q: p * 2, (ta, tb), ta, strict=True)),
        (lambda: AF.jacobian(lambda p: p.detach(), a, strict=True),
         lambda: tf.jacobian(lambda p: p.detach(), ta, strict=True)),
        (lambda: AF.jacobian(lambda p, q: p * 2, (a, b), strict=True),
         lambda: tf.jacobian(lambda p, q: p * 2, (ta, tb), strict=True)),
        (lambda: AF.hessian(lambda p: p * 2, a), lambda: tf.hessian(lambda p: p * 2, ta)),
        (lambda: AF.hessian(lambda p: (p.sum(), p.sum()), a), lambda: tf.hessian(lambda p: (p.sum(), p.sum()), ta)),
        (lambda: AF.hessian(lambda p: p.sum() * 2, a, strict=True),
         lambda: tf.hessian(lambda p: p.sum() * 2, ta, strict=True)),
        (lambda: AF.hvp(lambda p: p * 2, a, a), lambda: tf.hvp(lambda p: p * 2, ta, ta)),
        (lambda: AF.vhp(pow_reducer, a), lambda: tf.vhp(pow_reducer, ta)),
        (lambda: AF.jacobian(adder, (a, b), strategy="sideways"), lambda: tf.jacobian(adder, (ta, tb),
                                                                                      strategy="sideways")),
        (lambda: AF.jacobian(adder, (a, b), strategy="forward-mode"),
         lambda: tf.jacobian(adder, (ta, tb), strategy="forward-mode")),
        (lambda: AF.jacobian(adder, (a, b), strategy="forward-mode", vectorize=True, create_graph=True),
         lambda: tf.jacobian(adder, (ta, tb), strategy="forward-mode", vectorize=True, create_graph=True)),
        (lambda: AF.jacobian(adder, (a, b), vectorize=True, strict=True),
         lambda: tf.jacobian(adder, (ta, tb), vectorize=True, strict=True)),
    ]
    for ours, theirs in cases:
        same_error(torch, ours, theirs)
