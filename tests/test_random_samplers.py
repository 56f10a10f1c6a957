"""Gamma, Dirichlet, Poisson and binomial samplers: the laws they draw from (fixed seeds), special parameters,
reproducibility on cpu and npu, the stream they consume, generator=, dtypes and torch's errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import available_devices, host

import npusim
from npusim.kernels import random_samplers as RR

F64 = npusim.float64
_KS_LIMIT = 1.95   # sqrt(n) * D at the 0.1% level: one failure in 1000 seeds, and the seeds are fixed


def _gen(device, seed):
    return npusim.Generator(device).manual_seed(seed)


def _full(n, v, device="cpu", dtype=F64):
    return npusim.full((n,), v, dtype=dtype, device=device)


def _gamma_cdf(alpha, x):
    """The regularised lower incomplete gamma P(alpha, x), elementwise (Numerical Recipes' series below
    alpha + 1, Lentz's continued fraction above): the reference CDF, with no dependency beyond NumPy."""
    out = np.empty_like(x, dtype=np.float64)
    log_norm = -math.lgamma(alpha)
    for i, v in enumerate(x):
        if v <= 0:
            out[i] = 0.0
        elif v < alpha + 1:
            term = total = 1.0 / alpha
            a = alpha
            while abs(term) > abs(total) * 1e-16:
                a += 1
                term *= v / a
                total += term
            out[i] = total * math.exp(-v + alpha * math.log(v) + log_norm)
        else:
            tiny = 1e-300
            b = v + 1 - alpha
            c, d = 1 / tiny, 1 / b
            h = d
            for k in range(1, 500):
                an = -k * (k - alpha)
                b += 2
                d = an * d + b
                d = tiny if abs(d) < tiny else d
                c = b + an / c
                c = tiny if abs(c) < tiny else c
                d = 1 / d
                delta = d * c
                h *= delta
                if abs(delta - 1) < 1e-16:
                    break
            out[i] = 1 - math.exp(-v + alpha * math.log(v) + log_norm) * h
    return out


def _ks_gamma(x, alpha):
    """sqrt(n) * KS distance of x from Gamma(alpha, 1)."""
    x = np.sort(x)
    f = _gamma_cdf(alpha, x)
    n = x.size
    return math.sqrt(n) * max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def _check_moments(x, mean, var, fourth_central=None):
    # the sample mean within 5 standard errors; the variance within 5 of its own standard errors
    n = x.size
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / n), (x.mean(), mean)
    if fourth_central is not None:
        se_var = math.sqrt((fourth_central - var * var * (n - 3) / (n - 1)) / n)
        assert abs(x.var(ddof=1) - var) < 5 * se_var, (x.var(ddof=1), var)


def _chi_square_discrete(x, pmf):
    """Chi-square statistic and degrees of freedom over the values with expected count >= 5 (the tail pooled)."""
    n = x.size
    ks = np.arange(int(x.max()) + 1)
    expected = n * np.array([pmf(int(k)) for k in ks])
    observed = np.bincount(x.astype(np.int64), minlength=ks.size).astype(float)
    keep = expected >= 5
    e = np.append(expected[keep], n - expected[keep].sum())
    o = np.append(observed[keep], n - observed[keep].sum())
    return float(((o - e) ** 2 / e).sum()), keep.sum()


def _chi2_limit(df):
    # Wilson-Hilferty 0.1% critical value of a chi-square with df degrees of freedom
    z = 3.09
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


# --- laws ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 3.7, 1e4])
def test_gamma_law(alpha):
    x = host(npusim._standard_gamma(_full(40000, alpha), generator=_gen("cpu", 1)))
    # Gamma(alpha): mean = var = alpha, fourth central moment 3 alpha^2 + 6 alpha
    _check_moments(x, alpha, alpha, 3 * alpha ** 2 + 6 * alpha)
    assert _ks_gamma(x, alpha) < _KS_LIMIT


def test_gamma_special_shapes():
    a = npusim.tensor([0.0, 1e-30, -2.0, math.nan, 1e12], dtype=F64)
    x = host(npusim._standard_gamma(a, generator=_gen("cpu", 2)))
    tiny = np.finfo(np.float64).tiny
    # alpha <= 0 and an underflowing alpha < 1 boost give the smallest normal number, as torch's clamp
    assert x[0] == tiny and x[1] == tiny and x[2] == tiny and np.isnan(x[3])
    assert abs(x[4] / 1e12 - 1) < 5e-6   # 5 sd: Gamma(a) / a has sd a^-1/2 = 1e-6


@pytest.mark.parametrize("rate", [0.3, 4.0, 9.99, 10.0, 37.5, 1e6])
def test_poisson_law(rate):
    x = host(npusim.poisson(_full(40000, rate), generator=_gen("cpu", 3)))
    assert np.all(x == np.floor(x)) and x.min() >= 0
    _check_moments(x, rate, rate, rate * (1 + 3 * rate))
    log_pmf = lambda k: math.exp(k * math.log(rate) - rate - math.lgamma(k + 1))  # noqa: E731
    stat, df = _chi_square_discrete(x, log_pmf)
    assert stat < _chi2_limit(df)


def test_poisson_rate_zero_and_huge():
    x = host(npusim.poisson(npusim.tensor([0.0, 0.0, 1e15, math.inf], dtype=F64), generator=_gen("cpu", 4)))
    assert x[0] == 0 and x[1] == 0 and abs(x[2] - 1e15) < 5 * math.sqrt(1e15) and x[3] == math.inf


@pytest.mark.parametrize(("n", "p"), [(20, 0.1), (7, 0.85), (1000, 0.3), (50, 0.97), (10 ** 6, 0.5)])
def test_binomial_law(n, p):
    x = host(npusim.binomial(_full(40000, float(n)), _full(40000, p), generator=_gen("cpu", 5)))
    assert x.min() >= 0 and x.max() <= n and np.all(x == np.floor(x))
    var = n * p * (1 - p)
    _check_moments(x, n * p, var, 3 * var ** 2 + var * (1 - 6 * p * (1 - p)))
    pmf = lambda k: math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)  # noqa: E731
                             + k * math.log(p) + (n - k) * math.log1p(-p))
    if n <= 1000:   # the chi-square bins: binomial with a million trials is covered by the moments
        stat, df = _chi_square_discrete(x, pmf)
        assert stat < _chi2_limit(df)


def test_binomial_special_parameters():
    count = npusim.tensor([0.0, 5.0, 5.0, -3.0, 12.0, 3.0], dtype=F64)
    prob = npusim.tensor([0.4, 0.0, 1.0, 0.5, 1.5, -0.2], dtype=F64)
    # count 0 and p 0 give 0, p 1 gives count; outside the domain torch's values: negative count 0, p > 1 count
    assert host(npusim.binomial(count, prob, generator=_gen("cpu", 6))).tolist() == [0, 0, 5, 0, 12, 0]


def test_dirichlet_law_and_simplex():
    alpha = [0.3, 1.0, 4.0]
    a = npusim.tensor([alpha] * 20000, dtype=F64)
    x = host(npusim._sample_dirichlet(a, generator=_gen("cpu", 7)))
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    a0 = sum(alpha)
    for j, aj in enumerate(alpha):
        m = aj / a0
        _check_moments(x[:, j], m, m * (1 - m) / (a0 + 1))
    # a marginal of a Dirichlet is Beta(alpha_j, a0 - alpha_j): compare the mean of log x_j (digamma difference)
    t = host(npusim.digamma(npusim.tensor([alpha[2], a0], dtype=F64)))
    log_x = np.log(x[:, 2])
    assert abs(log_x.mean() - (t[0] - t[1])) < 5 * log_x.std() / math.sqrt(log_x.size)


# --- the stream -------------------------------------------------------------------------------------------------

def _blocks(n):
    return -(-n // 4)


def test_consumption_is_deterministic_and_documented():
    # poisson of rates below 10 uses exactly one inversion stage: ceil(n / 4) blocks
    g = _gen("cpu", 8)
    npusim.poisson(_full(10, 3.0), generator=g)
    assert g.get_offset() == _blocks(10)
    # binomial in the inversion range: the same
    g = _gen("cpu", 8)
    npusim.binomial(_full(9, 10.0), _full(9, 0.2), generator=g)
    assert g.get_offset() == _blocks(9)
    # the gamma draw: the boost stage, then rounds; the offset is a function of seed and parameters
    offsets = []
    for _ in range(2):
        g = _gen("cpu", 8)
        npusim._standard_gamma(_full(1000, 2.5), generator=g)
        offsets.append(g.get_offset())
    assert offsets[0] == offsets[1] and offsets[0] >= _blocks(1000) + _blocks(3 * 1000)


def test_rounds_replay_through_the_kernel():
    # the kernel on NumPy with a given (key, counter) gives the op's values and its offset advance
    g = _gen("cpu", 21)
    ours = host(npusim.poisson(npusim.tensor([0.5, 12.0, 300.0, 2e5], dtype=F64), generator=g))
    values, blocks = RR.poisson(np, 21, 0, np.array([0.5, 12.0, 300.0, 2e5]), np.float64)
    assert np.array_equal(ours, values) and g.get_offset() == blocks


@pytest.mark.skipif(len(available_devices()) < 2, reason="no npu")
@pytest.mark.parametrize("which", ["gamma", "poisson", "binomial", "dirichlet"])
def test_same_seed_same_bits_on_cpu_and_npu(which):
    def draw(dev):
        g = _gen(dev, 31)
        rates = npusim.tensor([0.0, 0.2, 3.0, 10.0, 77.0, 5e5] * 5, dtype=npusim.float32, device=dev)
        if which == "gamma":
            out = [npusim._standard_gamma(rates + 0.1, generator=g) for _ in range(2)]
        elif which == "poisson":
            out = [npusim.poisson(rates, generator=g) for _ in range(2)]
        elif which == "binomial":
            count = npusim.full((30,), 200.0, device=dev)
            out = [npusim.binomial(count, rates / 6e5 + 0.3, generator=g) for _ in range(2)]
        else:
            out = [npusim._sample_dirichlet(rates.reshape(5, 6) + 0.1, generator=g) for _ in range(2)]
        return [host(o) for o in out], g.get_offset()

    (cpu, off_c), (npu, off_n) = draw("cpu"), draw("npu")
    assert off_c == off_n
    for a, b in zip(cpu, npu):
        assert a.dtype == b.dtype == np.float32 and a.tobytes() == b.tobytes()
    assert not np.array_equal(cpu[0], cpu[1])   # the second call moved on


SAMPLERS = {
    "gamma": lambda x, g: npusim._standard_gamma(x, generator=g),
    "poisson": lambda x, g: npusim.poisson(x, generator=g),
    "binomial": lambda x, g: npusim.binomial(x * 10, x * 0 + 0.3, generator=g),
    "dirichlet": lambda x, g: npusim._sample_dirichlet(x, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_generator_honoured_and_default_untouched(device, name):
    x = npusim.tensor([[0.5, 2.0, 15.0], [4.0, 30.0, 1.0]], device=device)
    first = host(SAMPLERS[name](x, _gen(device, 41)))
    assert np.array_equal(first, host(SAMPLERS[name](x, _gen(device, 41))))
    seed_default = npusim.manual_seed if device == "cpu" else npusim.npu.manual_seed
    get_state = npusim.get_rng_state if device == "cpu" else npusim.npu.get_rng_state
    seed_default(41)
    state = host(get_state())
    SAMPLERS[name](x, _gen(device, 3))
    assert np.array_equal(host(get_state()), state)       # an explicit generator leaves the default alone
    assert np.array_equal(host(SAMPLERS[name](x, None)), first)   # the seeded default gives the same draw
    assert not np.array_equal(host(get_state()), state)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("dtype", [npusim.float32, npusim.float64])
def test_dtype_shape_device(device, name, dtype):
    x = npusim.ones(2, 3, 4, dtype=dtype, device=device) * 2
    y = SAMPLERS[name](x, None)
    assert y.dtype is dtype and tuple(y.shape) == (2, 3, 4) and y.device.type == device
    e = SAMPLERS[name](npusim.ones(0, 3, dtype=dtype, device=device), None)
    assert tuple(e.shape) == (0, 3)


def test_poisson_has_torchs_zero_gradient():
    r = npusim.tensor([2.0, 5.0], requires_grad=True)
    npusim.poisson(r).sum().backward()
    assert host(r.grad).tolist() == [0.0, 0.0]


# --- torch's errors ---------------------------------------------------------------------------------------------

def _same_error(torch, ours, theirs):
    with pytest.raises(Exception) as t_info:
        theirs()
    with pytest.raises(type(t_info.value)) as o_info:
        ours()
    assert str(o_info.value) == str(t_info.value)


@pytest.mark.oracle
@pytest.mark.parametrize("case", ["neg_rate", "nan_rate", "poisson_long", "gamma_long", "gamma_half",
                                  "dirichlet_long", "binomial_long_count", "binomial_long_prob",
                                  "binomial_dtypes", "binomial_half"])
def test_errors_match_torch(torch, case):
    def build(lib):
        f32, f64, i64, f16 = lib.float32, lib.float64, lib.int64, lib.float16
        return {
            "neg_rate": lambda: lib.poisson(lib.tensor([1.0, -0.5])),
            "nan_rate": lambda: lib.poisson(lib.tensor([math.nan])),
            "poisson_long": lambda: lib.poisson(lib.tensor([1, 2])),
            "gamma_long": lambda: lib._standard_gamma(lib.tensor([1, 2], dtype=i64)),
            "gamma_half": lambda: lib._standard_gamma(lib.tensor([1.0], dtype=f16)),
            "dirichlet_long": lambda: lib._sample_dirichlet(lib.tensor([1, 2])),
            "binomial_long_count": lambda: lib.binomial(lib.tensor([3]), lib.tensor([0.5])),
            "binomial_long_prob": lambda: lib.binomial(lib.tensor([3.0]), lib.tensor([1])),
            "binomial_dtypes": lambda: lib.binomial(lib.tensor([3.0], dtype=f32), lib.tensor([0.5], dtype=f64)),
            "binomial_half": lambda: lib.binomial(lib.tensor([3.0], dtype=f16), lib.tensor([0.5], dtype=f16)),
        }[case]
    _same_error(torch, build(npusim), build(torch))


@pytest.mark.oracle
def test_special_values_match_torch(torch):
    # deterministic outputs: clamped gammas, rate 0, the trivial binomials (torch's values outside the domain too)
    a = [0.0, -1.0, 1e-30]
    assert host(npusim._standard_gamma(npusim.tensor(a))).tolist() == torch._standard_gamma(torch.tensor(a)).tolist()
    assert host(npusim.poisson(npusim.zeros(3))).tolist() == torch.poisson(torch.zeros(3)).tolist()
    c, p = [0.0, 5.0, 5.0, -3.0, 12.0], [0.4, 0.0, 1.0, 0.5, 1.5]
    assert (host(npusim.binomial(npusim.tensor(c), npusim.tensor(p))).tolist()
            == torch.binomial(torch.tensor(c), torch.tensor(p)).tolist())
    assert npusim.poisson(npusim.ones(2, dtype=npusim.bfloat16)).dtype is npusim.bfloat16
