"""``npusim.utils.checkpoint``: recomputed gradients equal plain ones, activations are freed, torch's errors."""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.utils.checkpoint import checkpoint, checkpoint_sequential


def _seed(s):
    npusim.manual_seed(s)
    npusim.npu.manual_seed_all(s)


def _model(device):
    _seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Tanh(), nn.Linear(8, 3)).to(device)


def _grads(model, x, run):
    model.zero_grad()
    x.grad = None
    _seed(1)
    out = run(model, x)
    out.sum().backward()
    return host(out), [host(p.grad) for p in model.parameters()] + [host(x.grad)]


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_grads_equal_plain_with_dropout(device, use_reentrant):
    m = _model(device)
    x = npusim.randn(5, 4, device=device, requires_grad=True)
    ref_out, ref = _grads(m, x, lambda m, x: m(x))
    out, got = _grads(m, x, lambda m, x: checkpoint(m, x, use_reentrant=use_reentrant))
    np.testing.assert_array_equal(out, ref_out)
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_without_rng_preservation_the_mask_changes(device, use_reentrant):
    # the recomputation draws a fresh dropout mask: gradients differ from the plain run
    m = _model(device)
    x = npusim.randn(5, 4, device=device, requires_grad=True)
    _, ref = _grads(m, x, lambda m, x: m(x))
    _, got = _grads(m, x, lambda m, x: checkpoint(m, x, use_reentrant=use_reentrant, preserve_rng_state=False))
    assert not np.allclose(got[0], ref[0])


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_intermediates_are_not_kept(device, use_reentrant):
    refs = []

    def f(x):
        h = x * 3.0
        refs.append(weakref.ref(h))
        return (h * h).sum()

    x = npusim.randn(6, device=device, requires_grad=True)
    plain = f(x)                     # mul saves h for backward: kept alive by the graph
    gc.collect()
    assert refs[0]() is not None
    out = checkpoint(f, x, use_reentrant=use_reentrant)
    gc.collect()
    assert refs[1]() is None
    out.backward()
    np.testing.assert_allclose(host(x.grad), 18 * host(x), rtol=1e-6)
    del plain


def test_non_reentrant_reaches_params_without_input_grad_and_supports_grad(device):
    m = _model(device).eval()
    x = npusim.randn(5, 4, device=device)          # no input requires grad
    w = m[0].weight
    ref = npusim.autograd.grad(m(x).sum(), w)[0]
    got = npusim.autograd.grad(checkpoint(m, x, use_reentrant=False).sum(), w)[0]
    np.testing.assert_allclose(host(got), host(ref), rtol=1e-6, atol=1e-7)
    assert w.grad is None                           # grad() accumulates nothing


def test_reentrant_without_input_grad_warns_and_gives_no_grad(device):
    m = _model(device).eval()
    x = npusim.randn(5, 4, device=device)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(m, x, use_reentrant=True)
    assert not out.requires_grad


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_nested_and_sequential(device, use_reentrant):
    m = _model(device)
    x = npusim.randn(5, 4, device=device, requires_grad=True)
    _, ref = _grads(m, x, lambda m, x: m(x))

    def nested(m, x):
        inner = lambda h: checkpoint(m[1:3], h, use_reentrant=use_reentrant)  # noqa: E731
        return checkpoint(lambda h: m[3](inner(m[0](h))), x, use_reentrant=use_reentrant)

    for run in (nested, lambda m, x: checkpoint_sequential(m, 2, x, use_reentrant=use_reentrant)):
        _, got = _grads(m, x, run)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_non_reentrant_kwargs_and_nested_outputs(device):
    x = npusim.randn(3, device=device, requires_grad=True)
    out = checkpoint(lambda a, *, k: {"y": (a * k, a.sum())}, x, k=2.0, use_reentrant=False)
    (out["y"][0].sum() + out["y"][1]).backward()
    np.testing.assert_allclose(host(x.grad), np.full(3, 3.0), rtol=1e-6)


@pytest.mark.oracle
def test_warnings_and_errors_as_torch(torch):
    for lib in (torch, npusim):
        ck = lib.utils.checkpoint
        x = lib.ones(2, requires_grad=True)
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
            ck.checkpoint(lambda a: a * 2, x)
        with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
            ck.checkpoint_sequential([lambda a: a * 2, lambda a: a + 1], 2, x)
        with pytest.raises(ValueError, match="^Unexpected keyword arguments: foo$"):
            ck.checkpoint(lambda a: a, x, use_reentrant=True, foo=1)
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            ck.checkpoint(lambda a: a, x, use_reentrant=True, debug=True)
        with pytest.raises(RuntimeError, match="none of output has requires_grad=True"):
            ck.checkpoint(lambda a: a.detach(), x, use_reentrant=True).sum().backward()


@pytest.mark.oracle
def test_signatures_match_torch(torch):
    import inspect
    for name in ("checkpoint", "checkpoint_sequential"):
        n = inspect.signature(getattr(npusim.utils.checkpoint, name)).parameters
        t = inspect.signature(getattr(torch.utils.checkpoint, name)).parameters
        assert [(p.name, p.kind) for p in n.values()] == [(p.name, p.kind) for p in t.values()]
