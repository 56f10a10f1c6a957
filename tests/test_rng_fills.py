"""In-place random fills cauchy_, log_normal_ and geometric_: the same bits on cpu and npu, the device
(CuPy) formulas against the host bits, the laws they draw from, generator=, and torch's errors."""
from __future__ import annotations

import math
import types

import numpy as np
import pytest
from conftest import host

import npusim
from npusim.kernels import random as KR

FILLS = {
    "cauchy": lambda t, g: t.cauchy_(1.5, 0.5, generator=g),
    "log_normal": lambda t, g: t.log_normal_(0.3, 0.7, generator=g),
    "geometric": lambda t, g: t.geometric_(0.3, generator=g),
}
_KS_LIMIT = 1.63   # the 1% critical value of sqrt(n) * D


def _generator(device, seed):
    return npusim.Generator(device).manual_seed(seed)


def _draw(device, name, n=20000, dtype=npusim.float64, seed=5):
    return host(FILLS[name](npusim.empty(n, dtype=dtype, device=device), _generator(device, seed)))


def _ks(sample, cdf):
    x = np.sort(np.asarray(sample, dtype=np.float64))
    f = cdf(x)
    n = x.size
    return math.sqrt(n) * max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


_NORMAL_CDF = np.vectorize(lambda v: 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))))


# --- reproducibility ---------------------------------------------------------------------------------------

_NEEDS_NPU = pytest.mark.skipif(not npusim.npu.is_available(), reason="no npu")


@_NEEDS_NPU
@pytest.mark.parametrize("name", sorted(FILLS))
@pytest.mark.parametrize("dtype", [npusim.float32, npusim.float64])
def test_same_seed_gives_the_same_bits_on_cpu_and_npu(name, dtype):
    a, b = _draw("cpu", name, 101, dtype), _draw("npu", name, 101, dtype)
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@_NEEDS_NPU
def test_geometric_into_integers_is_the_same_on_cpu_and_npu():
    a = host(npusim.empty(64, dtype=npusim.int64).geometric_(0.2, generator=_generator("cpu", 9)))
    b = host(npusim.empty(64, dtype=npusim.int64, device="npu").geometric_(0.2, generator=_generator("npu", 9)))
    assert a.dtype == np.int64 and np.array_equal(a, b) and a.min() >= 1


@pytest.mark.parametrize("name", sorted(FILLS))
def test_generator_is_honoured_and_advances(device, name):
    g = _generator(device, 11)
    first = host(FILLS[name](npusim.empty(9, device=device), g))
    second = host(FILLS[name](npusim.empty(9, device=device), g))
    assert not np.array_equal(first, second)          # the offset moved on
    replay = host(FILLS[name](npusim.empty(9, device=device), _generator(device, 11)))
    assert np.array_equal(first, replay)
    # an explicit generator leaves the default one alone; without one, the seeded default is used
    seed_default = npusim.manual_seed if device == "cpu" else npusim.npu.manual_seed
    get_state = npusim.get_rng_state if device == "cpu" else npusim.npu.get_rng_state
    seed_default(11)
    state = host(get_state())
    FILLS[name](npusim.empty(9, device=device), _generator(device, 3))
    assert np.array_equal(host(get_state()), state)
    assert np.array_equal(host(FILLS[name](npusim.empty(9, device=device), None)), first)


def test_fills_write_in_place_through_views(device):
    base = npusim.zeros(4, 6, device=device)
    view = base[:, ::2]
    out = view.cauchy_(generator=_generator(device, 2))
    assert out is view
    assert np.all(host(base)[:, 1::2] == 0) and np.all(host(base)[:, ::2] != 0)


def test_device_formulas_match_the_host_bits(monkeypatch):
    """The cuda-mode path (run here on NumPy under another name, fed the reference Philox) gives the host bits."""
    fake = types.SimpleNamespace(**{n: getattr(np, n) for n in (
        "stack", "floor", "sqrt", "log", "log1p", "cos", "sin", "empty", "subtract", "multiply", "tan", "ceil",
        "maximum", "clip", "exp")})
    original = KR.raw_uint64
    monkeypatch.setattr(KR, "raw_uint64", lambda xp, key, counter, n: KR.raw_uint64_reference(key, counter, n)
                        if xp is fake else original(xp, key, counter, n))
    for n in (1, 5, 8, 33):
        for case in (lambda x, n=n: KR.cauchy(x, 4, 11, (n,), np.float32, 0.5, 2.0),
                     lambda x, n=n: KR.log_normal(x, 4, 11, (n,), np.float64, 1.0, 0.5),
                     lambda x, n=n: KR.geometric(x, 4, 11, (n,), np.int32, 0.05),
                     lambda x, n=n: KR.geometric(x, 4, 11, (n,), np.float16, 0.5)):
            (h, hb), (d, db) = case(np), case(fake)
            assert hb == db and h.dtype == d.dtype and h.tobytes() == d.tobytes()


# --- the laws -----------------------------------------------------------------------------------------

def test_cauchy_follows_its_law(device):
    x = _draw(device, "cauchy")
    assert _ks(x, lambda v: 0.5 + np.arctan((v - 1.5) / 0.5) / math.pi) < _KS_LIMIT
    # quartiles at median -+ sigma; the sample quartile's standard error is about 0.011 here
    q1, q2, q3 = np.quantile(x, [0.25, 0.5, 0.75])
    assert abs(q2 - 1.5) < 0.04 and abs(q1 - 1.0) < 0.05 and abs(q3 - 2.0) < 0.05


def test_log_normal_follows_its_law(device):
    x = _draw(device, "log_normal")
    assert x.min() > 0
    z = (np.log(x) - 0.3) / 0.7
    assert _ks(z, _NORMAL_CDF) < _KS_LIMIT
    # mean exp(mu + s^2/2); its standard error sqrt((e^{s^2}-1) e^{2mu+s^2} / n) is about 0.0097
    assert abs(x.mean() - math.exp(0.3 + 0.49 / 2)) < 0.05


def test_geometric_follows_its_law(device):
    x = _draw(device, "geometric")
    assert x.min() >= 1 and np.all(x == np.floor(x))
    p, n = 0.3, x.size
    # mean 1/p, standard error sqrt((1-p)/p^2/n) ~ 0.0198: 5 standard errors
    assert abs(x.mean() - 1 / p) < 0.1
    for k in range(1, 6):      # each pmf value within 5 standard errors
        pk = (1 - p) ** (k - 1) * p
        assert abs(np.mean(x == k) - pk) < 5 * math.sqrt(pk * (1 - pk) / n)


def test_geometric_integer_dtypes_and_defaults(device):
    t = npusim.empty(1000, dtype=npusim.int8, device=device).geometric_(0.01, generator=_generator(device, 4))
    assert t.dtype is npusim.int8 and host(t).min() >= 1
    t = npusim.empty(1000, device=device).log_normal_(generator=_generator(device, 4))   # mean=1, std=2
    z = (np.log(host(t).astype(np.float64)) - 1.0) / 2.0
    assert _ks(z, _NORMAL_CDF) < _KS_LIMIT
    t = npusim.empty(1000, device=device).cauchy_(generator=_generator(device, 4))       # median 0, sigma 1
    assert abs(np.median(host(t))) < 0.15


# --- errors, as torch's ------------------------------------------------------------------------------

_BAD = [
    ("float32", lambda t: t.geometric_(0)), ("float32", lambda t: t.geometric_(1)),
    ("float32", lambda t: t.geometric_(1.5)), ("float32", lambda t: t.geometric_(float("nan"))),
    ("float32", lambda t: t.cauchy_(0, 0)), ("float32", lambda t: t.cauchy_(0, -1.5)),
    ("float32", lambda t: t.log_normal_(1, 0)), ("float32", lambda t: t.log_normal_(1, -1)),
    ("int64", lambda t: t.cauchy_()), ("int8", lambda t: t.cauchy_()), ("int64", lambda t: t.log_normal_()),
    ("bool", lambda t: t.geometric_(0.5)),
]


@pytest.mark.oracle
@pytest.mark.parametrize("dtype, call", _BAD)
def test_bad_parameters_raise_torchs_errors(device, torch, dtype, call):
    with pytest.raises(Exception) as expected:
        call(torch.empty(3, dtype=getattr(torch, dtype)))
    with pytest.raises(type(expected.value)) as got:
        call(npusim.empty(3, dtype=getattr(npusim, dtype), device=device))
    assert str(got.value) == str(expected.value)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["cauchy_", "log_normal_", "geometric_"])
def test_schemas_are_torchs(torch, name):
    assert "aten::" + str(getattr(npusim.ops.aten, name).default._schema) == \
        str(getattr(torch.ops.aten, name).default._schema)


def test_method_defaults():
    g = lambda: _generator("cpu", 8)
    assert np.array_equal(host(npusim.empty(50).cauchy_(generator=g())),
                          host(npusim.empty(50).cauchy_(0.0, 1.0, generator=g())))
    assert np.array_equal(host(npusim.empty(50).log_normal_(generator=g())),
                          host(npusim.empty(50).log_normal_(1.0, 2.0, generator=g())))
    with pytest.raises(TypeError):
        npusim.empty(3).geometric_()


_DIRECT_FILLS = {
    "uniform_": lambda t, g: t.uniform_(-1, 2, generator=g),
    "normal_": lambda t, g: t.normal_(0.5, 2, generator=g),
    "normal_standard": lambda t, g: t.normal_(generator=g),
    "exponential_": lambda t, g: t.exponential_(2, generator=g),
    "bernoulli_": lambda t, g: t.bernoulli_(0.3, generator=g),
    "random_": lambda t, g: t.random_(-5, 50, generator=g),
}


@pytest.mark.parametrize("name, dtype", [(name, dtype) for name in sorted(_DIRECT_FILLS)
                                         for dtype in (npusim.float32, npusim.float64, npusim.float16)]
                         + [("random_", npusim.int32), ("random_", npusim.int64)])
def test_fills_drawn_straight_into_the_tensor_give_the_drawn_bits(monkeypatch, name, dtype):
    # a C-contiguous host tensor is filled in place by the draw; the bits are those of a draw copied in
    from npusim.native import random as NR
    fill, n = _DIRECT_FILLS[name], 3 * (1 << 15) + 5
    direct = host(fill(npusim.empty(n, dtype=dtype), _generator("cpu", 4)))
    strided = npusim.zeros(2 * n, dtype=dtype)
    fill(strided[::2], _generator("cpu", 4))           # not contiguous: drawn, then copied in
    original = NR._fill
    monkeypatch.setattr(NR, "_fill", lambda self, g, draw, into=False: original(self, g, draw))
    copied = host(fill(npusim.empty(n, dtype=dtype), _generator("cpu", 4)))
    assert direct.tobytes() == copied.tobytes() == host(strided[::2]).tobytes()
    assert not host(strided[1::2]).any()
