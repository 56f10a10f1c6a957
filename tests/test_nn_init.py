"""``npusim.nn.init``: torch's gains, fans, distributions and errors; in place, without autograd, reproducible
from ``npusim.manual_seed`` or a ``generator``; and each layer's default initialisation follows torch's recipe."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import host

import npusim
import npusim.nn as nn
from npusim.nn import init


# the oracle on one thread (see conftest)
pytestmark = pytest.mark.usefixtures("torch_on_one_thread")

@pytest.mark.oracle
@pytest.mark.parametrize("name", init.__all__)
def test_signatures_match_torch(torch, name):
    assert _signature(getattr(init, name)) == _signature(getattr(torch.nn.init, name))


def _signature(fn):
    """Parameter names, kinds and defaults (callable defaults by name, the rest by repr)."""
    import inspect
    out = []
    for p in inspect.signature(fn).parameters.values():
        d = p.default
        d = getattr(d, "__name__", d) if callable(d) else (d if d is inspect.Parameter.empty else repr(d))
        out.append((p.name, p.kind, d))
    return out


GAIN_CASES = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None), ("conv_transpose1d", None),
              ("conv_transpose2d", None), ("conv_transpose3d", None), ("sigmoid", None), ("tanh", None),
              ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 3), ("selu", None)]


@pytest.mark.oracle
@pytest.mark.parametrize("nonlinearity,param", GAIN_CASES)
def test_calculate_gain_matches_torch(torch, nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(nonlinearity, param)


@pytest.mark.oracle
def test_errors_match_torch(torch):
    cases = [
        (ValueError, lambda I, T: I.calculate_gain("softmax")),
        (ValueError, lambda I, T: I.calculate_gain("leaky_relu", True)),
        (ValueError, lambda I, T: I.calculate_gain("leaky_relu", "0.1")),
        (ValueError, lambda I, T: I.xavier_uniform_(T.empty(5))),
        (ValueError, lambda I, T: I.kaiming_normal_(T.empty(3, 4), mode="fan_avg")),
        (ValueError, lambda I, T: I.eye_(T.empty(2, 2, 2))),
        (ValueError, lambda I, T: I.dirac_(T.empty(2, 2))),
        (ValueError, lambda I, T: I.dirac_(T.empty(3, 2, 3), groups=2)),
        (ValueError, lambda I, T: I.orthogonal_(T.empty(3))),
        (ValueError, lambda I, T: I.sparse_(T.empty(3), 0.5)),
    ]
    for exc, fn in cases:
        with pytest.raises(exc) as t_err:
            fn(torch.nn.init, torch)
        with pytest.raises(exc, match=f"^{_escape(str(t_err.value))}$"):
            fn(init, npusim)


def _escape(text):
    import re
    return re.escape(text)


@pytest.mark.oracle
@pytest.mark.parametrize("shape", [(7, 3), (4, 6, 5), (8, 2, 3, 3)])
def test_fans_match_torch(torch, shape):
    assert init._calculate_fan_in_and_fan_out(npusim.empty(shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    for mode in ("fan_in", "FAN_OUT"):
        assert init._calculate_correct_fan(npusim.empty(shape), mode) == \
            torch.nn.init._calculate_correct_fan(torch.empty(shape), mode)


# --- distributions -------------------------------------------------------------------------------------------

def _sample(fn, shape=(400, 250), device="cpu", **kwargs):
    t = npusim.empty(shape, device=device)
    assert fn(t, **kwargs) is t
    return host(t).astype(np.float64)


@pytest.mark.parametrize("fn,kwargs,lo,hi,std", [
    (init.uniform_, {"a": -2.0, "b": 3.0}, -2.0, 3.0, 5 / math.sqrt(12)),
    (init.xavier_uniform_, {"gain": 2.0}, -2 * math.sqrt(6 / 650), 2 * math.sqrt(6 / 650), 2 * math.sqrt(2 / 650)),
    (init.kaiming_uniform_, {}, -math.sqrt(6 / 250), math.sqrt(6 / 250), math.sqrt(2 / 250)),
    (init.kaiming_uniform_, {"a": math.sqrt(5)}, -1 / math.sqrt(250), 1 / math.sqrt(250), 1 / math.sqrt(750)),
    (init.kaiming_uniform_, {"mode": "fan_out", "nonlinearity": "relu"}, -math.sqrt(6 / 400), math.sqrt(6 / 400),
     math.sqrt(2 / 400)),
])
def test_uniform_schemes(device, fn, kwargs, lo, hi, std):
    v = _sample(fn, device=device, **kwargs)
    assert v.min() >= lo and v.max() <= hi
    assert v.min() < lo + 0.01 * (hi - lo) and v.max() > hi - 0.01 * (hi - lo)
    assert abs(v.std() - std) < 0.02 * std and abs(v.mean() - (lo + hi) / 2) < 0.02 * (hi - lo)


@pytest.mark.parametrize("fn,kwargs,mean,std", [
    (init.normal_, {"mean": 1.5, "std": 0.5}, 1.5, 0.5),
    (init.xavier_normal_, {}, 0.0, math.sqrt(2 / 650)),
    (init.kaiming_normal_, {"nonlinearity": "tanh"}, 0.0, 5 / 3 / math.sqrt(250)),
    (init.kaiming_normal_, {"a": 0.3, "mode": "fan_out"}, 0.0, math.sqrt(2 / 1.09) / math.sqrt(400)),
])
def test_normal_schemes(device, fn, kwargs, mean, std):
    v = _sample(fn, device=device, **kwargs)
    assert abs(v.mean() - mean) < 0.02 * std + 1e-3 and abs(v.std() - std) < 0.02 * std


@pytest.mark.oracle
@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.5, 2.0, -1.0, 1.0), (0.0, 1.0, 0.5, 0.6),
                                          (3.0, 0.2, 2.5, 3.1)])
def test_trunc_normal_stays_in_bounds_with_torchs_distribution(torch, device, mean, std, a, b):
    v = _sample(init.trunc_normal_, shape=(200, 200), device=device, mean=mean, std=std, a=a, b=b)
    assert v.min() >= a and v.max() <= b
    torch.manual_seed(0)
    ref = torch.nn.init.trunc_normal_(torch.empty(200, 200, dtype=torch.float64), mean, std, a, b).numpy()
    assert abs(v.mean() - ref.mean()) < 0.03 * (b - a) and abs(v.std() - ref.std()) < 0.05 * ref.std()


def test_trunc_normal_warns_when_mean_is_far_outside():
    with pytest.warns(UserWarning, match=r"^mean is more than 2 std from \[a, b\] in nn.init.trunc_normal_. The "
                                         r"distribution of values may be incorrect.$"):
        t = init.trunc_normal_(npusim.empty(100), mean=10.0, std=1.0, a=-1.0, b=1.0)
    assert host(t).min() >= -1 and host(t).max() <= 1


def test_constant_ones_zeros_eye(device):
    t = npusim.empty(3, 4, device=device)
    assert host(init.constant_(t, 2.5)).tolist() == [[2.5] * 4] * 3
    assert host(init.ones_(t)).sum() == 12 and host(init.zeros_(t)).sum() == 0
    np.testing.assert_array_equal(host(init.eye_(t)), np.eye(3, 4))


def test_dirac_makes_convolution_the_identity(device):
    w = init.dirac_(npusim.empty(4, 4, 3, 3, device=device))
    x = npusim.randn(2, 4, 5, 5, device=device)
    np.testing.assert_allclose(host(nn.functional.conv2d(x, w, padding=1)), host(x), rtol=1e-6)
    grouped = host(init.dirac_(npusim.empty(6, 2, 3), groups=3))
    assert grouped.sum() == 6 and grouped[2, 0, 1] == 1 and grouped[3, 1, 1] == 1


@pytest.mark.parametrize("shape", [(5, 9), (9, 5), (4, 2, 3)])
def test_orthogonal_rows_or_columns(device, shape):
    w = host(init.orthogonal_(npusim.empty(shape, device=device), gain=2.0)).reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w @ w.T if rows <= cols else w.T @ w
    np.testing.assert_allclose(gram, 4 * np.eye(min(rows, cols)), atol=1e-5)


def test_sparse_zeroes_a_fraction_of_each_column(device):
    w = host(init.sparse_(npusim.empty(10, 30, device=device), sparsity=0.3, std=0.5))
    assert ((w == 0).sum(0) == 3).all()
    assert 0.3 < w[w != 0].std() < 0.7


def test_zero_element_tensors_warn_and_stay_empty():
    with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
        init.kaiming_uniform_(npusim.empty(0, 3))
    with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
        init.kaiming_normal_(npusim.empty(3, 0))


def test_deprecated_names_warn():
    with pytest.warns(FutureWarning, match=r"^`nn.init.xavier_uniform` is now deprecated in favor of "
                                           r"`nn.init.xavier_uniform_`.$"):
        init.xavier_uniform(npusim.empty(3, 3))


# --- in place, no autograd, reproducible --------------------------------------------------------------------

def test_init_is_in_place_and_outside_autograd(device):
    p = nn.Parameter(npusim.empty(4, 5, device=device))
    version = p._version
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.trunc_normal_,
               init.orthogonal_, init.ones_, init.zeros_, init.eye_, lambda t: init.constant_(t, 3.0)):
        out = fn(p)
        assert out is p and p.grad_fn is None and p.is_leaf and p.requires_grad
    assert p._version > version


def test_manual_seed_makes_initialisation_reproducible(device):
    def draw():
        t = npusim.empty(6, 7, device=device)
        init.kaiming_uniform_(t, a=1.0)
        init.trunc_normal_(t[:2], std=0.1)
        return host(t)

    npusim.manual_seed(11)
    first = draw()
    npusim.manual_seed(11)
    np.testing.assert_array_equal(draw(), first)
    npusim.manual_seed(12)
    assert not np.array_equal(draw(), first)


def test_generator_argument_is_used_instead_of_the_default(device):
    def draw(seed):
        g = npusim.Generator(device=device)
        g.manual_seed(seed)
        t = npusim.empty(50, device=device)
        return host(init.normal_(t, generator=g)), host(init.xavier_uniform_(npusim.empty(5, 5, device=device),
                                                                            generator=g))

    npusim.manual_seed(0)
    a = draw(3)
    npusim.manual_seed(99)  # the default generator's state does not matter
    b = draw(3)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(draw(4)[0], a[0])


def test_same_seed_gives_same_model_on_cpu_and_npu():
    npusim.manual_seed(5)
    cpu = nn.Linear(8, 4)
    npusim.manual_seed(5)
    npu = nn.Linear(8, 4, device="npu")
    np.testing.assert_array_equal(host(npu.weight), host(cpu.weight))
    np.testing.assert_array_equal(host(npu.bias), host(cpu.bias))


# --- the layers' default initialisation -------------------------------------------------------------------------

def _bounded_uniform(t, bound):
    v = host(t).astype(np.float64).ravel()
    assert np.abs(v).max() <= bound
    assert abs(v.std() - bound / math.sqrt(3)) < 0.08 * bound


@pytest.mark.parametrize("device_kw", [{}, {"device": "npu"}])
def test_default_layer_initialisation_follows_torch(device_kw):
    npusim.manual_seed(0)
    lin = nn.Linear(100, 300, **device_kw)
    _bounded_uniform(lin.weight, 1 / math.sqrt(100))
    _bounded_uniform(lin.bias, 1 / math.sqrt(100))
    conv = nn.Conv2d(6, 200, 3, **device_kw)
    _bounded_uniform(conv.weight, 1 / math.sqrt(54))
    _bounded_uniform(conv.bias, 1 / math.sqrt(54))
    conv_t = nn.ConvTranspose2d(60, 8, 2, groups=2, **device_kw)
    _bounded_uniform(conv_t.weight, 1 / math.sqrt(4 * 4))  # fan_in of the (in, out/groups, k, k) weight
    bil = nn.Bilinear(20, 10, 50, **device_kw)
    _bounded_uniform(bil.weight, 1 / math.sqrt(20))
    _bounded_uniform(bil.bias, 1 / math.sqrt(20))
    emb = nn.Embedding(300, 50, padding_idx=3, **device_kw)
    w = host(emb.weight)
    assert abs(w.std() - 1) < 0.05 and not w[3].any()
    mha = nn.MultiheadAttention(32, 4, add_bias_kv=True, **device_kw)
    _bounded_uniform(mha.in_proj_weight, math.sqrt(6 / (32 + 96)))
    assert not host(mha.in_proj_bias).any() and not host(mha.out_proj.bias).any()
    _bounded_uniform(mha.out_proj.weight, 1 / math.sqrt(32))
    assert host(mha.bias_k).std() > 0
    for norm in (nn.LayerNorm(7, **device_kw), nn.GroupNorm(1, 7, **device_kw), nn.BatchNorm1d(7, **device_kw)):
        assert host(norm.weight).tolist() == [1.0] * 7 and host(norm.bias).tolist() == [0.0] * 7
    assert host(nn.RMSNorm(3, **device_kw).weight).tolist() == [1.0] * 3
    assert host(nn.PReLU(2, init=0.3, **device_kw).weight).tolist() == pytest.approx([0.3, 0.3])
    enc = nn.Transformer(16, 2, 1, 1, 32, batch_first=True, **device_kw)
    for name, p in enc.named_parameters():
        if p.dim() > 1:  # Transformer re-initialises every matrix with xavier_uniform_
            fan_out, fan_in = p.shape[0], p.shape[1]
            assert np.abs(host(p)).max() <= math.sqrt(6 / (fan_in + fan_out)) + 1e-7, name


def test_reset_parameters_redraws():
    npusim.manual_seed(0)
    lin = nn.Linear(4, 4)
    before = host(lin.weight).copy()
    lin.reset_parameters()
    assert not np.array_equal(host(lin.weight), before)
