"""``npusim.nn.utils``: gradient clipping with torch's semantics and errors, and parameters as one vector."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.nn.utils import (
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters,
)

@pytest.mark.oracle
@pytest.mark.parametrize("name", npusim.nn.utils.__all__)
def test_signatures_match_torch(torch, name):
    assert _signature(getattr(npusim.nn.utils, name)) == _signature(getattr(torch.nn.utils, name))


def _signature(fn):
    """Parameter names, kinds and defaults (callable defaults by name, the rest by repr)."""
    import inspect
    out = []
    for p in inspect.signature(fn).parameters.values():
        d = p.default
        d = getattr(d, "__name__", d) if callable(d) else (d if d is inspect.Parameter.empty else repr(d))
        out.append((p.name, p.kind, d))
    return out


GRADS = [np.random.default_rng(i).standard_normal(shape).astype(np.float32) * (i + 1)
         for i, shape in enumerate([(3, 4), (5,), (2, 2, 2)])]


def _params(lib, device=None, grads=GRADS):
    params = []
    for g in grads:
        kw = {} if device is None else {"device": device}
        p = lib.nn.Parameter(lib.zeros(g.shape, **kw))
        p.grad = lib.tensor(g, **kw)
        params.append(p)
    return params


@pytest.mark.oracle
@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(torch, device, norm_type, max_norm):
    t_params, n_params = _params(torch), _params(npusim, device)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, max_norm, norm_type)
    n_total = clip_grad_norm_(iter(n_params), max_norm, norm_type)
    assert n_total.shape == () and n_total.device.type == device
    np.testing.assert_allclose(host(n_total), t_total.numpy(), rtol=1e-5)
    for t, n in zip(t_params, n_params):
        np.testing.assert_allclose(host(n.grad), t.grad.numpy(), rtol=1e-5, atol=1e-7)
    if max_norm > 1e5:  # nothing to clip: gradients untouched
        for n, g in zip(n_params, GRADS):
            np.testing.assert_allclose(host(n.grad), g, rtol=1e-6)


def test_clip_grad_norm_bounds_the_norm_and_skips_missing_grads(device):
    params = _params(npusim, device)
    params.append(nn.Parameter(npusim.zeros(3, device=device)))  # no grad: ignored
    total = clip_grad_norm_(params, max_norm=1.0)
    assert total.item() > 1.0
    new_norm = math.sqrt(sum(float((host(p.grad).astype(np.float64) ** 2).sum()) for p in params[:3]))
    assert new_norm == pytest.approx(1.0, rel=1e-5)
    assert params[3].grad is None


def test_clip_grad_norm_single_tensor_and_module_parameters():
    lin = nn.Linear(3, 2)
    lin(npusim.ones(4, 3) * 10).sum().backward()
    total = clip_grad_norm_(lin.parameters(), 0.1)
    assert total.item() > 0.1
    p = _params(npusim)[0]
    clip_grad_norm_(p, 2.0)
    assert np.sqrt((host(p.grad) ** 2).sum()) == pytest.approx(2.0, rel=1e-5)


@pytest.mark.oracle
def test_clip_grad_norm_edge_cases_match_torch(torch):
    total = clip_grad_norm_([], 1.0)
    assert total.item() == torch.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0
    with pytest.warns(UserWarning, match="^`parameters` is an empty generator, no gradient clipping will occur.$"):
        clip_grad_norm_((p for p in []), 1.0)
    no_grads = [nn.Parameter(npusim.ones(2))]
    assert clip_grad_norm_(no_grads, 1.0).item() == 0.0 and no_grads[0].grad is None


@pytest.mark.oracle
@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_clip_grad_norm_nonfinite(torch, bad):
    grads = [np.array([1.0, bad], np.float32)]
    with pytest.raises(RuntimeError) as t_err:
        torch.nn.utils.clip_grad_norm_(_params(torch, grads=grads), 1.0, error_if_nonfinite=True)
    with pytest.raises(RuntimeError, match=f"^{_escape(str(t_err.value))}$"):
        clip_grad_norm_(_params(npusim, grads=grads), 1.0, error_if_nonfinite=True)
    # Without the flag the gradients are scaled by the non-finite norm, as torch does.
    t_params, n_params = _params(torch, grads=grads), _params(npusim, grads=grads)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 1.0)
    n_total = clip_grad_norm_(n_params, 1.0)
    np.testing.assert_array_equal(host(n_total), t_total.numpy())
    np.testing.assert_array_equal(host(n_params[0].grad), t_params[0].grad.numpy())


def _escape(text):
    import re
    return re.escape(text)


@pytest.mark.oracle
@pytest.mark.parametrize("foreach", [None, False, True])
def test_foreach_flag_gives_the_same_result(torch, device, foreach):
    t_params, n_params = _params(torch), _params(npusim, device)
    t_total = torch.nn.utils.clip_grad_norm_(t_params, 1.0, foreach=foreach)
    np.testing.assert_allclose(host(clip_grad_norm_(n_params, 1.0, foreach=foreach)), t_total.numpy(), rtol=1e-5)
    torch.nn.utils.clip_grad_value_(t_params, 0.2, foreach=foreach)
    clip_grad_value_(n_params, 0.2, foreach=foreach)
    for t, n in zip(t_params, n_params):
        np.testing.assert_allclose(host(n.grad), t.grad.numpy(), rtol=1e-5)


def test_deprecated_clip_grad_norm_warns():
    with pytest.warns(FutureWarning, match=r"^`npusim.nn.utils.clip_grad_norm` is now deprecated in favor of "
                                           r"`npusim.nn.utils.clip_grad_norm_`.$"):
        total = clip_grad_norm(_params(npusim), 1.0)
    assert total.item() > 1.0


@pytest.mark.oracle
@pytest.mark.parametrize("clip", [0.5, 3])
def test_clip_grad_value_matches_torch(torch, device, clip):
    t_params, n_params = _params(torch), _params(npusim, device)
    assert torch.nn.utils.clip_grad_value_(t_params, clip) is None
    assert clip_grad_value_(n_params, clip) is None
    for t, n in zip(t_params, n_params):
        np.testing.assert_array_equal(host(n.grad), t.grad.numpy())
        assert np.abs(host(n.grad)).max() <= clip
    single = _params(npusim, device)[1]
    clip_grad_value_(single, 0.1)
    assert np.abs(host(single.grad)).max() == pytest.approx(0.1)


def test_clipping_is_not_recorded_by_autograd():
    p = _params(npusim)[0]
    p.grad.requires_grad_(True)
    clip_grad_norm_([p], 0.1)
    clip_grad_value_([p], 0.01)
    assert p.grad.grad_fn is None


# --- parameters <-> vector ------------------------------------------------------------------------------------

def test_parameters_to_vector_and_back(device):
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).to(device)
    vec = parameters_to_vector(net.parameters())
    assert vec.shape == (3 * 4 + 4 + 4 * 2 + 2,) and vec.device.type == device
    expected = np.concatenate([host(p).ravel() for p in net.parameters()])
    np.testing.assert_array_equal(host(vec), expected)
    weight = net[0].weight
    vector_to_parameters(npusim.arange(vec.numel(), dtype=npusim.float32, device=device), net.parameters())
    assert net[0].weight is weight and weight.requires_grad
    assert host(weight).ravel().tolist() == list(range(12))
    assert host(net[2].bias).tolist() == [vec.numel() - 2, vec.numel() - 1]


def test_vector_follows_gradients():
    lin = nn.Linear(2, 1)
    vec = parameters_to_vector(lin.parameters())
    assert vec.requires_grad
    vec.sum().backward()
    assert host(lin.weight.grad).tolist() == [[1.0, 1.0]]


@pytest.mark.oracle
def test_conversion_errors_match_torch(torch):
    with pytest.raises(TypeError) as t_err:
        torch.nn.utils.vector_to_parameters([1.0], [torch.nn.Parameter(torch.ones(1))])
    with pytest.raises(TypeError, match=f"^{_escape(str(t_err.value).replace('torch', 'npusim'))}$"):
        vector_to_parameters([1.0], [nn.Parameter(npusim.ones(1))])
    with pytest.raises(TypeError, match="^Found two parameters on different devices, this is currently not "
                                        "supported.$"):
        parameters_to_vector([nn.Parameter(npusim.ones(1)), nn.Parameter(npusim.ones(1, device="npu"))])
    with pytest.raises(TypeError, match="^Found two parameters on different devices"):
        parameters_to_vector([nn.Parameter(npusim.ones(1, device="npu")), nn.Parameter(npusim.ones(1))])
