"""optim.Adafactor, optim.Muon and optim.swap_in_optimizer_params_and_state: the update rules by hand, state and
state_dict layout, argument checks, and the parameter trajectory against PyTorch 2.13's."""
from __future__ import annotations

import math

import numpy as np
import pytest

import npusim
from conftest import host

SHAPES = ((5, 4), (3,), (2, 3, 4))


def _params(device, shapes=SHAPES, seed=0):
    rng = np.random.default_rng(seed)
    return [npusim.tensor(rng.standard_normal(s).astype(np.float32), device=device, requires_grad=True)
            for s in shapes]


def _grads(shapes, steps, seed=1):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(np.float32) for s in shapes] for _ in range(steps)]


def test_adafactor_vector_step_by_hand(device):
    w0 = np.array([0.5, -1.0, 2.0])
    g = np.array([0.1, -0.2, 0.3])
    p = npusim.tensor(w0, device=device, requires_grad=True)
    opt = npusim.optim.Adafactor([p], lr=0.01, weight_decay=0.1)
    p.grad = npusim.tensor(g, device=device)
    opt.step()
    # t = 1: 1 - beta2 = 1, so the variance is g^2 and the update g / |g| before clipping to RMS <= 1
    rho = min(0.01, 1.0)
    alpha = max(1e-3, np.linalg.norm(w0) / math.sqrt(3)) * rho
    u = g / np.abs(g)
    u = u / max(1.0, np.linalg.norm(u) / math.sqrt(3))
    expect = w0 * (1 - 0.01 * 0.1) - alpha * u
    np.testing.assert_allclose(host(p), expect, rtol=1e-12)
    assert list(opt.state[p]) == ["step", "variance"] and opt.state[p]["step"].item() == 1.0


def test_adafactor_factors_matrices(device):
    p = _params(device, ((3, 4),))[0]
    opt = npusim.optim.Adafactor([p])
    p.grad = npusim.ones(3, 4, device=device)
    opt.step()
    state = opt.state[p]
    assert list(state) == ["step", "row_var", "col_var"]
    assert state["row_var"].shape == (3, 1) and state["col_var"].shape == (1, 4)
    np.testing.assert_allclose(host(state["row_var"]), np.ones((3, 1)), rtol=1e-6)


def test_adafactor_and_muon_checks():
    p = npusim.zeros(2, 2, requires_grad=True)
    for kwargs, message in [(dict(lr=-1.0), "Learning rate should be >= 0"), (dict(beta2_decay=0.5), "beta2_decay"),
                            (dict(eps=(-1.0, 1e-3)), "epsilon1"), (dict(d=0.5), "Clipping threshold"),
                            (dict(weight_decay=-1.0), "weight_decay")]:
        with pytest.raises(ValueError, match=message):
            npusim.optim.Adafactor([p], **kwargs)
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        npusim.optim.Muon([npusim.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Adjust learning rate function nope is not supported"):
        npusim.optim.Muon([p], adjust_lr_fn="nope")
    with pytest.raises(RuntimeError, match="Foreach is not supported for Muon yet"):
        npusim.optim.muon.muon([], [], [], foreach=True, lr=0.1, weight_decay=0, momentum=0.9, nesterov=True,
                               ns_coefficients=(1, 1, 1), ns_steps=1, eps=1e-7, adjust_lr_fn=None, has_complex=False)


def test_muon_update_is_nearly_orthogonal(device):
    p = _params(device, ((6, 4),))[0]
    w0 = host(p).copy()
    opt = npusim.optim.Muon([p], lr=0.1, weight_decay=0.0)
    p.grad = npusim.tensor(np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32), device=device)
    opt.step()
    update = (w0 - host(p)) / (0.1 * math.sqrt(6 / 4))
    singular = np.linalg.svd(update, compute_uv=False)
    assert np.all((singular > 0.5) & (singular < 1.5))   # Newton-Schulz's S' ~ U(0.5, 1.5), not exactly 1
    assert list(opt.state[p]) == ["momentum_buffer"]


def test_swap_in_params_and_state(device):
    params = _params(device, ((3, 2), (2,)))
    opt = npusim.optim.Adafactor(params)
    for p in params:
        p.grad = npusim.ones_like(p)
    opt.step()
    saved = opt.state_dict()
    before = [host(p).copy() for p in params]
    others = {"a": params[0].detach().clone(), "b": params[1].detach().clone()}
    swap_state = {"state": {k: {n: v.clone() for n, v in s.items()} for k, s in saved["state"].items()},
                  "param_groups": [dict(g, lr=0.5) for g in saved["param_groups"]]}
    with npusim.optim.swap_in_optimizer_params_and_state(opt, others, swap_state):
        assert opt.param_groups[0]["lr"] == 0.5 and opt.param_groups[0]["params"][0] is others["a"]
        for t in others.values():
            t.grad = npusim.ones_like(t)
        opt.step()
    assert opt.param_groups[0]["lr"] == 0.01 and opt.param_groups[0]["params"][0] is params[0]
    for p, b in zip(params, before):
        np.testing.assert_array_equal(host(p), b)   # the live parameters are untouched
    assert swap_state["state"][0]["step"].item() == 2.0 and opt.state[params[0]]["step"].item() == 1.0
    assert not np.array_equal(host(others["a"]), before[0])
    with pytest.raises(RuntimeError, match="different number of parameter groups"):
        with npusim.optim.swap_in_optimizer_params_and_state(opt, others, {"state": {}, "param_groups": []}):
            pass
    with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
        with npusim.optim.swap_in_optimizer_params_and_state(npusim.optim.Muon([params[0]]), others, swap_state):
            pass


def _trajectory(lib, device, cls, kwargs, shapes, steps=5):
    grads = _grads(shapes, steps)
    rng = np.random.default_rng(0)
    inits = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if lib is npusim:
        ps = [npusim.tensor(w, device=device, requires_grad=True) for w in inits]
    else:
        ps = [lib.tensor(w, requires_grad=True) for w in inits]
    opt = getattr(lib.optim, cls)(ps, **kwargs)
    for g in grads:
        for p, gg in zip(ps, g):
            p.grad = npusim.tensor(gg, device=device) if lib is npusim else lib.tensor(gg)
        opt.step()
    return [p.detach().cpu().float().numpy() for p in ps], opt


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [{}, dict(foreach=True, weight_decay=0.1, maximize=True),
                                    dict(lr=0.05, eps=(1e-30, 1e-3), d=2.0, beta2_decay=-0.5)])
def test_adafactor_matches_torch(torch, device, kwargs):
    ours, opt = _trajectory(npusim, device, "Adafactor", kwargs, SHAPES)
    theirs, topt = _trajectory(torch, device, "Adafactor", kwargs, SHAPES)
    # each step computes norms and means (float32 sums in another order) and an rsqrt: a few float32 ulps of
    # the update, whose size is at most lr * RMS(param) ~ 0.05; over 5 steps well under 1e-6 on |param| ~ 1
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert [list(s) for s in sd["state"].values()] == [list(s) for s in tsd["state"].values()]
    assert sd["param_groups"] == tsd["param_groups"] and repr(opt) == repr(topt)
    for s, ts in zip(sd["state"].values(), tsd["state"].values()):
        for k in s:
            np.testing.assert_allclose(host(s[k]), ts[k].numpy(), rtol=1e-5, atol=1e-7)
            assert s[k].dtype.is_floating_point and tuple(s[k].shape) == tuple(ts[k].shape)


@pytest.mark.oracle
@pytest.mark.parametrize("kwargs", [{}, dict(nesterov=False, adjust_lr_fn="match_rms_adamw", lr=0.02),
                                    dict(momentum=0.5, weight_decay=0.0, ns_steps=3, adjust_lr_fn="original")])
def test_muon_matches_torch(torch, device, kwargs):
    shapes = ((5, 4), (3, 7))
    ours, opt = _trajectory(npusim, device, "Muon", kwargs, shapes)
    theirs, topt = _trajectory(torch, device, "Muon", kwargs, shapes)
    # Newton-Schulz runs in bfloat16: an element of the update may round one bf16 ulp (2**-8 relative, |O| <= ~1.5)
    # apart when float32 accumulation orders differ, scaled by lr * sqrt(ratio) <= 0.02 * 1.5 per step, 5 steps
    lr = kwargs.get("lr", 1e-3)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=5 * lr * 1.5 * 1.5 * 2 ** -8 + 1e-6)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"] and repr(opt) == repr(topt)
    assert [list(s) for s in sd["state"].values()] == [list(s) for s in tsd["state"].values()]


@pytest.mark.oracle
def test_swap_in_checks_match_torch(torch):
    def attempt(lib, make_state):
        p = lib.zeros(2, 2, requires_grad=True)
        opt = lib.optim.Adafactor([p])
        p.grad = lib.ones(2, 2)
        opt.step()
        with pytest.raises(RuntimeError) as info:
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"p": p.detach()}, make_state(opt.state_dict())):
                pass
        return str(info.value)
    for make in [lambda sd: [], lambda sd: {"state": [], "param_groups": sd["param_groups"]},
                 lambda sd: {"state": sd["state"], "param_groups": [dict(g, extra=1) for g in sd["param_groups"]]},
                 lambda sd: {"state": {**sd["state"], 5: {}}, "param_groups": sd["param_groups"]},
                 lambda sd: {"state": sd["state"], "param_groups": [dict(g, params=[0, 1]) for g in
                                                                    sd["param_groups"]]}]:
        assert attempt(npusim, make) == attempt(torch, make)
