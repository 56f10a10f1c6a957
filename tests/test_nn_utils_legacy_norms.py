"""The legacy hook-based ``nn.utils.weight_norm`` / ``spectral_norm`` and their ``remove_*``: parameters, buffers,
forward values, gradients, power-iteration state and errors as torch's from the same weights."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.nn.utils import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm

CASES = [("Linear", (4, 3), (2, 4)), ("Conv2d", (2, 3, 3), (1, 2, 5, 5)),
         ("ConvTranspose2d", (2, 3, 3), (1, 2, 4, 4))]


def _n(t, device):
    return npusim.tensor(t.detach().numpy()).to(device)


def _pair(torch, device, ctor, args):
    t = getattr(torch.nn, ctor)(*args)
    n = getattr(nn, ctor)(*args).to(device)
    n.load_state_dict({k: _n(v, device) for k, v in t.state_dict().items()})
    return t, n


def _forward_backward_same(torch, t_mod, n_mod, device, x_shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(x_shape).astype(np.float32)
    t_out, n_out = t_mod(torch.tensor(x)), n_mod(npusim.tensor(x, device=device))
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-5, atol=1e-5)
    t_out.square().sum().backward()
    n_out.square().sum().backward()
    t_params, n_params = dict(t_mod.named_parameters()), dict(n_mod.named_parameters())
    assert list(n_params) == list(t_params)
    for k, tp in t_params.items():
        np.testing.assert_allclose(host(n_params[k].grad), tp.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.oracle
@pytest.mark.parametrize("ctor,args,x_shape", CASES)
@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_weight_norm_matches_torch(torch, device, ctor, args, x_shape, dim):
    t, n = _pair(torch, device, ctor, args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        torch.nn.utils.weight_norm(t, dim=dim)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        assert weight_norm(n, dim=dim) is n
    assert list(n.state_dict()) == list(t.state_dict())
    assert n.weight_g.shape == t.weight_g.shape and n.weight_v.shape == t.weight_v.shape
    np.testing.assert_allclose(host(n.weight_g), t.weight_g.detach().numpy(), rtol=1e-6)
    _forward_backward_same(torch, t, n, device, x_shape)
    torch.nn.utils.remove_weight_norm(t)
    assert remove_weight_norm(n) is n
    assert list(n.state_dict()) == list(t.state_dict()) and isinstance(n.weight, nn.Parameter)
    np.testing.assert_allclose(host(n.weight), t.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not n._forward_pre_hooks


def _spectral_pair(torch, device, ctor, args, **kw):
    t, n = _pair(torch, device, ctor, args)
    torch.nn.utils.spectral_norm(t, **kw)
    spectral_norm(n, **kw)
    # u, v are drawn at random: take torch's so the power iterations agree
    n.load_state_dict({k: _n(v, device) for k, v in t.state_dict().items()})
    return t, n


@pytest.mark.oracle
@pytest.mark.parametrize("ctor,args,x_shape", CASES)
def test_spectral_norm_matches_torch_over_training_and_eval_steps(torch, device, ctor, args, x_shape):
    t, n = _spectral_pair(torch, device, ctor, args, n_power_iterations=2)
    assert list(n.state_dict()) == list(t.state_dict())
    assert n.state_dict()._metadata[""]["spectral_norm"] == t.state_dict()._metadata[""]["spectral_norm"]
    assert [k for k, _ in n.named_buffers()] == [k for k, _ in t.named_buffers()] == ["weight_u", "weight_v"]
    for step in range(3):
        if step == 2:
            t.eval()
            n.eval()
        _forward_backward_same(torch, t, n, device, x_shape, seed=step)
        for b in ("weight_u", "weight_v"):
            np.testing.assert_allclose(host(getattr(n, b)), getattr(t, b).numpy(), rtol=1e-5, atol=1e-6)
    torch.nn.utils.remove_spectral_norm(t)
    assert remove_spectral_norm(n) is n
    assert list(n.state_dict()) == list(t.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(host(n.weight), t.weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_spectral_norm_weight_has_top_singular_value_one(device):
    m = spectral_norm(nn.Linear(6, 5).to(device), n_power_iterations=30)
    m(npusim.ones(1, 6, device=device))
    assert abs(np.linalg.svd(host(m.weight), compute_uv=False)[0] - 1) < 1e-4


def test_state_dict_loads_after_remove_spectral_norm(device):
    m = spectral_norm(nn.Linear(3, 2).to(device))
    remove_spectral_norm(m)
    assert not m._load_state_dict_pre_hooks and not m._state_dict_hooks
    fresh = nn.Linear(3, 2).to(device)
    m.load_state_dict(fresh.state_dict())
    np.testing.assert_array_equal(host(m.weight), host(fresh.weight))


@pytest.mark.oracle
def test_old_version_spectral_norm_state_dict_is_upgraded_as_torch(torch, device):
    # W^T W must be invertible (4 x 3 weight): torch's float32 pinverse of a singular one keeps noise
    torch.manual_seed(0)
    t, n = _spectral_pair(torch, device, "Linear", (3, 4))
    t(torch.ones(1, 3))
    sd = t.state_dict()
    old = {k: v for k, v in sd.items() if k != "weight_v"}
    old["weight"] = t.weight.detach()
    t2 = torch.nn.utils.spectral_norm(torch.nn.Linear(3, 4))
    n2 = spectral_norm(nn.Linear(3, 4).to(device))
    t2.load_state_dict(old)
    n2.load_state_dict({k: _n(v, device) for k, v in old.items()})
    # both solve W^T W v = W^T u in float32 by different routes: the error is float32's eps times the system's
    # condition number (a few units of it)
    w = old["weight"].double().numpy()
    tol = 8 * np.finfo(np.float32).eps * np.linalg.cond(w.T @ w)
    np.testing.assert_allclose(host(n2.weight_v), t2.weight_v.numpy(), rtol=tol, atol=tol)


@pytest.mark.oracle
def test_errors_as_torch(torch):
    for lib in (torch, npusim):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            m = lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))
            with pytest.raises(RuntimeError, match="^Cannot register two weight_norm hooks on the same parameter "
                                                   "weight$"):
                lib.nn.utils.weight_norm(m)
        with pytest.raises(ValueError, match="^weight_norm of 'bias' not found in Linear"):
            lib.nn.utils.remove_weight_norm(m, "bias")
        m = lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2))
        with pytest.raises(RuntimeError, match="^Cannot register two spectral_norm hooks on the same parameter "
                                               "weight$"):
            lib.nn.utils.spectral_norm(m)
        with pytest.raises(ValueError, match="^spectral_norm of 'bias' not found in Linear"):
            lib.nn.utils.remove_spectral_norm(m, "bias")
        with pytest.raises(ValueError, match="^Expected n_power_iterations to be positive, but got "
                                             "n_power_iterations=0$"):
            lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0)
        with pytest.raises(ValueError, match="^`SpectralNorm` cannot be applied as parameter `bias` is None$"):
            lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2, bias=False), name="bias")
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError):
        spectral_norm(m, n_power_iterations=0)
    assert list(m.state_dict()) == ["weight", "bias"] and not m._forward_pre_hooks


@pytest.mark.oracle
@pytest.mark.parametrize("dim", [2, -3])
def test_weight_norm_dim_out_of_range_raises_as_torch_and_leaves_the_module(torch, dim):
    msgs = []
    for lib in (torch, npusim):
        for apply in (lib.nn.utils.weight_norm, lib.nn.utils.parametrizations.weight_norm):
            with warnings.catch_warnings(), pytest.raises(IndexError) as info:
                warnings.simplefilter("ignore", FutureWarning)
                apply(lib.nn.Linear(3, 2), dim=dim)
            msgs.append(str(info.value))
    assert set(msgs) == {f"Dimension out of range (expected to be in range of [-2, 1], but got {dim})"}
    m = nn.Linear(3, 2)
    with warnings.catch_warnings(), pytest.raises(IndexError):
        warnings.simplefilter("ignore", FutureWarning)
        weight_norm(m, dim=dim)
    # torch's legacy weight_norm has already removed the weight by then; here the module is untouched
    assert list(m.state_dict()) == ["weight", "bias"] and not m._forward_pre_hooks
