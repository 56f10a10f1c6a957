"""``nn.utils.parametrize`` and ``nn.utils.parametrizations``: values, gradients, state_dict keys and errors
as torch's after loading the same weights."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.nn.utils import parametrizations, parametrize


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


def _pair(torch, device, ctor="Linear", args=(4, 3)):
    t = getattr(torch.nn, ctor)(*args)
    n = getattr(nn, ctor)(*args).to(device)
    n.load_state_dict({k: npusim.tensor(v.detach().numpy()).to(device) for k, v in t.state_dict().items()})
    return t, n


def _check_same(t_mod, n_mod, device, x_shape=(2, 4)):
    assert list(n_mod.state_dict()) == list(t_mod.state_dict())
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    t_out, n_out = t_mod(__import__("torch").tensor(x)), n_mod(npusim.tensor(x, device=device))
    np.testing.assert_allclose(host(n_out), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    t_out.square().sum().backward()
    n_out.square().sum().backward()
    for (k, tp), (k2, np_) in zip(t_mod.named_parameters(), n_mod.named_parameters()):
        assert k == k2
        np.testing.assert_allclose(host(np_.grad), tp.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.oracle
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(torch, device, dim):
    t, n = _pair(torch, device)
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    parametrizations.weight_norm(n, dim=dim)
    assert type(n).__name__ == "ParametrizedLinear" and parametrize.is_parametrized(n, "weight")
    _check_same(t, n, device)


@pytest.mark.oracle
def test_spectral_norm_matches_torch_after_loading_state(torch, device):
    t, n = _pair(torch, device, "Conv2d", (2, 3, 3))
    torch.nn.utils.parametrizations.spectral_norm(t)
    parametrizations.spectral_norm(n)
    # u, v come from different generators: load torch's so the power iteration agrees
    n.load_state_dict({k: npusim.tensor(v.detach().numpy()).to(device) for k, v in t.state_dict().items()})
    assert "parametrizations.weight.original" in n.state_dict() and "parametrizations.weight.0._u" in n.state_dict()
    _check_same(t, n, device, (1, 2, 5, 5))
    np.testing.assert_allclose(host(n.parametrizations.weight[0]._u), t.parametrizations.weight[0]._u.numpy(),
                               rtol=1e-5, atol=1e-6)


def test_spectral_norm_makes_top_singular_value_one(device):
    npusim.manual_seed(0)
    n = parametrizations.spectral_norm(nn.Linear(6, 5).to(device), n_power_iterations=30)
    s = np.linalg.svd(host(n.weight), compute_uv=False)
    assert abs(s[0] - 1) < 1e-3


def test_register_remove_and_cached(device):
    n = nn.Linear(3, 3).to(device)
    assert not parametrize.is_parametrized(n)
    parametrize.register_parametrization(n, "weight", Symmetric())
    w = host(n.weight)
    np.testing.assert_array_equal(w, w.T)
    with parametrize.cached():
        assert n.weight is n.weight               # computed once inside cached()
    assert n.weight is not n.weight
    original = n.parametrizations.weight.original
    parametrize.remove_parametrizations(n, "weight")
    # a plain parameter again, same object (optimizers keep tracking it), holding the parametrized value
    assert type(n) is nn.Linear and not parametrize.is_parametrized(n)
    assert isinstance(n.weight, nn.Parameter) and n.weight is original
    np.testing.assert_array_equal(host(n.weight), w)
    assert list(n.state_dict()) == ["bias", "weight"]   # re-registered last, as in torch


@pytest.mark.oracle
def test_errors_as_torch(torch):
    for lib, P in ((torch, torch.nn.utils.parametrize), (npusim, parametrize)):
        m = lib.nn.Linear(3, 3)
        with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element "
                                             "with name 'nope'"):
            P.register_parametrization(m, "nope", lib.nn.Identity())
        with pytest.raises(ValueError, match="does not have a parametrization on weight"):
            P.remove_parametrizations(m, "weight")
        with pytest.raises(ValueError, match="may not change the shape"):
            P.register_parametrization(m, "weight", lib.nn.Flatten(0))
        lib.nn.utils.parametrizations.weight_norm(m)
        with pytest.raises(ValueError, match="leave_parametrized=False"):
            P.remove_parametrizations(m, "weight", leave_parametrized=False)
        with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
            lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0)
