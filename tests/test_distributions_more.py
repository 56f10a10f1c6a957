"""The distributions, transforms, constraints and KL pairs added to npusim.distributions after the first 25:
values against torch.distributions (``oracle``), and torch-free checks of closed forms, shapes, seeded
reproducibility across devices and sample moments."""
from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import available_devices, host

import npusim
import npusim.distributions as D
from npusim.distributions import constraints, transforms
from npusim.distributions.relaxed_categorical import ExpRelaxedCategorical

F64 = "float64"
F32 = "float32"
PROBS = [[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]]
LOC = [[0.3, -1.2, 2.0], [0.0, 0.5, -0.7]]
SCALE = [[0.5, 1.5, 2.0], [1.0, 0.3, 0.8]]
COV = [[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]]
W = [[1.0, 0.5], [0.2, 0.3], [-0.4, 1.0]]


def mk(lib, values, dev="cpu", dtype=F64):
    """A tensor of ``lib`` (npusim or torch); torch always on cpu."""
    kw = {"dtype": getattr(lib, dtype)}
    if lib is npusim:
        kw["device"] = dev
    return lib.tensor(values, **kw)


def dists(lib):
    return lib.distributions


def _corr_cholesky_value(L, d):
    # a fixed valid LKJ value: the transform of a fixed vector (both libraries compute it the same way)
    return dists(L).transforms.CorrCholeskyTransform()(mk(L, [0.3, -0.5, 0.8], d))


# name -> (builder(lib, dev), value to score, properties both libraries define, has cdf, has icdf)
CASES = {
    "multinomial": (lambda L, d: dists(L).Multinomial(10, probs=mk(L, PROBS, d)), [[3.0, 3.0, 4.0], [0.0, 2.0, 8.0]],
                    ("mean", "variance"), False, False),
    "multinomial_logits": (lambda L, d: dists(L).Multinomial(4, logits=mk(L, LOC, d)), [[1.0, 1.0, 2.0]],
                           ("mean", "variance"), False, False),
    "mixture_normal": (lambda L, d: dists(L).MixtureSameFamily(
        dists(L).Categorical(probs=mk(L, PROBS, d)), dists(L).Normal(mk(L, LOC, d), mk(L, SCALE, d))),
        [0.3, -1.0], ("mean", "variance"), True, False),
    "mixture_mvn": (lambda L, d: dists(L).MixtureSameFamily(
        dists(L).Categorical(probs=mk(L, PROBS[0], d)),
        dists(L).Independent(dists(L).Normal(mk(L, [LOC[0], LOC[1], SCALE[0]], d), mk(L, [SCALE[0]] * 3, d)), 1)),
        [[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]], ("mean", "variance"), False, False),
    "lowrank_mvn": (lambda L, d: dists(L).LowRankMultivariateNormal(mk(L, LOC, d), mk(L, W, d),
                                                                     mk(L, [0.5, 1.0, 2.0], d)),
                    [[0.3, -1.0, 4.0]], ("mean", "mode", "variance", "scale_tril", "covariance_matrix",
                                          "precision_matrix"), False, False),
    "relaxed_bernoulli": (lambda L, d: dists(L).RelaxedBernoulli(mk(L, 0.7, d), probs=mk(L, PROBS, d)),
                          [[0.3, 0.99, 0.5]], (), False, False),
    "relaxed_bernoulli_logits": (lambda L, d: dists(L).RelaxedBernoulli(mk(L, 2.0, d), logits=mk(L, LOC, d)),
                                 [[0.01, 0.4, 0.5]], (), False, False),
    "relaxed_one_hot": (lambda L, d: dists(L).RelaxedOneHotCategorical(mk(L, 0.5, d), probs=mk(L, PROBS, d)),
                        [[0.3, 0.6, 0.1]], (), False, False),
    "exp_relaxed_categorical": (lambda L, d: L.distributions.relaxed_categorical.ExpRelaxedCategorical(
        mk(L, 0.5, d), logits=mk(L, LOC, d)), [[-1.2, -0.5, -2.0]], (), False, False),
    "cauchy": (lambda L, d: dists(L).Cauchy(mk(L, LOC, d), mk(L, SCALE, d)), [[0.1, 2.0, -1.0]],
               ("mean", "variance", "mode"), True, True),
    "half_normal": (lambda L, d: dists(L).HalfNormal(mk(L, SCALE, d)), [[0.1, 2.0, 1.0]],
                    ("mean", "variance", "mode"), True, True),
    "half_cauchy": (lambda L, d: dists(L).HalfCauchy(mk(L, SCALE, d)), [[0.1, 2.0, 1.0]],
                    ("mean", "variance", "mode"), True, True),
    "weibull": (lambda L, d: dists(L).Weibull(mk(L, SCALE, d), mk(L, [[0.7, 1.0, 2.5]], d)), [[0.1, 2.0, 1.0]],
                ("mean", "variance", "mode"), True, True),
    "pareto": (lambda L, d: dists(L).Pareto(mk(L, SCALE, d), mk(L, [[0.8, 2.5, 3.0]], d)), [[2.1, 2.0, 3.0]],
               ("mean", "variance", "mode"), True, True),
    "von_mises": (lambda L, d: dists(L).VonMises(mk(L, LOC, d), mk(L, [[0.5, 2.0, 5.0], [0.1, 3.74, 3.76]], d)),
                  [[0.1, 2.0, -1.0]], ("mean", "variance", "mode"), False, False),
    "geometric": (lambda L, d: dists(L).Geometric(probs=mk(L, [[0.2, 0.5, 1.0]], d)), [[0.0, 3.0, 0.0]],
                  ("mean", "variance", "mode"), False, False),
    "geometric_logits": (lambda L, d: dists(L).Geometric(logits=mk(L, LOC, d)), [[0.0, 3.0, 7.0]],
                         ("mean", "variance", "mode"), False, False),
    "negative_binomial": (lambda L, d: dists(L).NegativeBinomial(mk(L, [[3.0, 0.5, 10.0]], d), probs=mk(L, PROBS, d)),
                          [[0.0, 3.0, 7.0]], ("mean", "variance", "mode"), False, False),
    "negative_binomial_logits": (lambda L, d: dists(L).NegativeBinomial(mk(L, 4.0, d), logits=mk(L, LOC, d)),
                                 [[0.0, 3.0, 7.0]], ("mean", "variance", "mode"), False, False),
    "continuous_bernoulli": (lambda L, d: dists(L).ContinuousBernoulli(probs=mk(L, [[0.2, 0.4995, 0.9]], d)),
                             [[0.1, 0.7, 0.99]], ("mean", "variance", "stddev"), True, True),
    "continuous_bernoulli_logits": (lambda L, d: dists(L).ContinuousBernoulli(logits=mk(L, LOC, d)),
                                    [[0.1, 0.7, 0.99]], ("mean", "variance"), True, True),
    "fisher_snedecor": (lambda L, d: dists(L).FisherSnedecor(mk(L, [[1.0, 3.0, 6.0]], d), mk(L, [[2.0, 4.5, 9.0]], d)),
                        [[0.5, 1.0, 2.0]], ("mean", "variance", "mode"), False, False),
    "kumaraswamy": (lambda L, d: dists(L).Kumaraswamy(mk(L, [[0.5, 2.0, 3.0]], d), mk(L, [[2.0, 0.7, 4.0]], d)),
                    [[0.1, 0.5, 0.9]], ("mean", "variance", "mode"), False, False),
    "logistic_normal": (lambda L, d: dists(L).LogisticNormal(mk(L, LOC[0][:2], d), mk(L, SCALE[0][:2], d)),
                        [[0.2, 0.5, 0.3]], (), False, False),
    "inverse_gamma": (lambda L, d: dists(L).InverseGamma(mk(L, [[0.5, 1.5, 3.0]], d), mk(L, SCALE, d)),
                      [[0.1, 2.0, 1.0]], ("mean", "variance", "mode"), False, False),
    # float32: torch 2.13's GeneralizedPareto compares the concentration with a float32 zero and fails in float64
    "generalized_pareto": (lambda L, d: dists(L).GeneralizedPareto(mk(L, LOC, d, F32), mk(L, SCALE, d, F32),
                                                                      mk(L, [[0.0, 0.3, -0.2]], d, F32)),
                           [[2.0, 0.6, 2.5]], ("mean", "variance", "mode"), True, True),
    "lkj_cholesky": (lambda L, d: dists(L).LKJCholesky(3, mk(L, [0.5, 1.0, 2.5], d)), _corr_cholesky_value,
                     (), False, False),
    "wishart": (lambda L, d: dists(L).Wishart(mk(L, [4.0, 6.5], d), covariance_matrix=mk(L, COV, d)),
                lambda L, d: mk(L, COV, d) * 3 + mk(L, np.eye(3).tolist(), d),
                ("mean", "variance", "mode", "covariance_matrix", "precision_matrix", "scale_tril"), False, False),
    "one_hot_straight_through": (lambda L, d: dists(L).OneHotCategoricalStraightThrough(probs=mk(L, PROBS, d)),
                                 [[0.0, 1.0, 0.0]], ("mean", "variance", "mode"), False, False),
}
NO_ENTROPY = {"negative_binomial", "negative_binomial_logits", "relaxed_bernoulli", "relaxed_bernoulli_logits",
              "relaxed_one_hot", "exp_relaxed_categorical", "von_mises", "mixture_normal", "mixture_mvn",
              "logistic_normal", "fisher_snedecor", "lkj_cholesky"}   # torch defines no entropy for these


def value_of(lib, name, dev):
    v = CASES[name][1]
    return v(lib, dev) if callable(v) else mk(lib, v, dev, F32 if name == "generalized_pareto" else F64)


def close(ours, theirs, rtol=1e-9, atol=1e-12):
    # float64 and the same formulas as torch's: agreement to rounding (~1e-14 relative), with margin for
    # lgamma/digamma/erf implementations that differ in the last bits. float32: a dozen roundings of 6e-8 each
    if theirs.dtype == theirs.new_zeros(()).float().dtype:
        rtol, atol = max(rtol, 2e-5), max(atol, 1e-6)
    np.testing.assert_allclose(host(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_torch(torch, device, name):
    build, _, attrs, has_cdf, has_icdf = CASES[name]
    ours, theirs = build(npusim, device), build(torch, "cpu")
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    assert ours.has_rsample == theirs.has_rsample and type(ours.support).__name__ == type(theirs.support).__name__
    close(ours.log_prob(value_of(npusim, name, device)), theirs.log_prob(value_of(torch, name, "cpu")))
    for attr in attrs:
        close(getattr(ours, attr), getattr(theirs, attr))
    if name.startswith("multinomial"):
        # torch takes lgamma(total_count + 1) in float32 (from an integer tensor); npusim in double: |error| of
        # float32 rounding of lgamma(11) = 15.1 is below 15.1 * 2**-24 ~ 1e-6
        close(ours.entropy(), theirs.entropy(), atol=2e-6)
    elif name not in NO_ENTROPY:
        close(ours.entropy(), theirs.entropy())
    if has_cdf:
        close(ours.cdf(value_of(npusim, name, device)), theirs.cdf(value_of(torch, name, "cpu")))
    if has_icdf:
        u = [[0.1, 0.5, 0.93]]
        close(ours.icdf(mk(npusim, u, device)), theirs.icdf(mk(torch, u)), rtol=1e-8)


@pytest.mark.oracle
@pytest.mark.parametrize("name", ["cauchy", "half_normal", "weibull", "pareto", "lowrank_mvn", "von_mises",
                                  "continuous_bernoulli", "kumaraswamy", "inverse_gamma", "wishart",
                                  "negative_binomial", "geometric_logits", "mixture_normal", "relaxed_one_hot"])
def test_log_prob_gradients_match_torch(torch, device, name):
    build = CASES[name][0]
    leaves = {}

    def leafy(lib):
        # every float tensor the builder makes becomes a gradient leaf, recorded in order
        made = leaves.setdefault(lib.__name__, [])
        real_tensor = lib.tensor

        def tensor(values, **kw):
            t = real_tensor(values, **kw).requires_grad_()
            made.append(t)
            return t
        return tensor, real_tensor, made

    grads = []
    for lib, dev in ((npusim, device), (torch, "cpu")):
        tensor, real_tensor, made = leafy(lib)
        lib.tensor = tensor
        try:
            d = build(lib, dev)
        finally:
            lib.tensor = real_tensor
        value = value_of(lib, name, dev).detach()
        g = lib.autograd.grad(d.log_prob(value).sum(), made, allow_unused=True)
        grads.append(g)
    assert len(grads[0]) == len(grads[1])
    for ours, theirs in zip(*grads):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            close(ours, theirs, rtol=1e-8, atol=1e-11)


# ---- torch-free: shapes, seeds, moments, closed forms ---------------------------------------------------

SAMPLED = sorted(CASES)


@pytest.mark.parametrize("name", SAMPLED)
def test_shapes(device, name):
    d = CASES[name][0](npusim, device)
    x = d.sample((4, 2))
    shape = (4, 2) + tuple(d.batch_shape) + tuple(d.event_shape)
    assert tuple(x.shape) == shape and x.device.type == device
    assert tuple(d.sample().shape) == tuple(d.batch_shape) + tuple(d.event_shape)
    assert tuple(d.log_prob(x).shape) == (4, 2) + tuple(d.batch_shape)
    if d.has_rsample:
        assert tuple(d.rsample((3,)).shape) == (3,) + tuple(d.batch_shape) + tuple(d.event_shape)
    e = d.expand((5,) + tuple(d.batch_shape))
    assert tuple(e.batch_shape) == (5,) + tuple(d.batch_shape) and e.event_shape == d.event_shape
    v = d.sample()
    np.testing.assert_allclose(host(e.log_prob(v)),
                               np.broadcast_to(host(d.log_prob(v)), (5,) + tuple(d.batch_shape)), rtol=1e-12)
    if not isinstance(d, ExpRelaxedCategorical):   # its support is all of R^K, checked by nothing useful
        assert bool(d.support.check(x).all())


@pytest.mark.parametrize("name", SAMPLED)
def test_same_seed_same_samples_on_every_device(name):
    outs = []
    for dev in available_devices():
        for _ in range(2):
            npusim.manual_seed(99)
            outs.append(host(CASES[name][0](npusim, dev).sample((3,))))
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])   # bitwise: one Philox stream on every device
    npusim.manual_seed(100)
    assert not np.array_equal(host(CASES[name][0](npusim, "cpu").sample((3,))), outs[0])   # the seed matters


N = 20000


def _within_standard_errors(x, mean, var, k=5):
    """|sample mean - mean| < k standard errors, with the standard error sqrt(var / n) of a mean of n iid draws:
    a wrong location fails, chance fails with probability < 1e-6 per entry at k = 5 (and the seed is fixed)."""
    se = np.sqrt(var / x.shape[0])
    assert np.all(np.abs(x.mean(0) - mean) <= k * se), (x.mean(0), mean, se)   # <=: a certain outcome has se 0


MOMENT_CASES = ["multinomial", "mixture_normal", "mixture_mvn", "lowrank_mvn", "half_normal", "weibull", "pareto",
                "geometric", "negative_binomial", "continuous_bernoulli", "fisher_snedecor", "kumaraswamy",
                "inverse_gamma", "generalized_pareto", "wishart", "one_hot_straight_through"]


@pytest.mark.parametrize("name", MOMENT_CASES)
def test_sample_means(name):
    npusim.manual_seed(2024)
    d = CASES[name][0](npusim, "cpu")
    x = host(d.sample((N,)))
    mean, var = host(d.mean), host(d.variance)
    finite = np.isfinite(mean) & np.isfinite(var)   # Pareto, F, inverse gamma: some entries have no variance
    assert finite.any()
    _within_standard_errors(x[:, finite], mean[finite], var[finite])


@pytest.mark.parametrize("name", ["cauchy", "half_cauchy"])
def test_heavy_tailed_sample_medians(name):
    # no mean: the sample median's standard error is 1 / (2 f(m) sqrt(n)), f the density at the median m;
    # Cauchy: m = loc, f(m) = 1 / (pi scale); HalfCauchy: m = scale, f(m) = 2 / (pi scale (1 + 1)) = 1 / (pi scale)
    npusim.manual_seed(5)
    d = CASES[name][0](npusim, "cpu")
    x = host(d.sample((N,)))
    scale = host(d.scale)
    median = host(d.loc) if name == "cauchy" else scale
    se = math.pi * scale / (2 * math.sqrt(N))
    assert np.all(np.abs(np.median(x, 0) - median) < 5 * se)


def test_von_mises_circular_moments():
    # E[cos(X - loc)] = I1(k) / I0(k) = 1 - variance, E[sin(X - loc)] = 0; both have |.| <= 1 so variance <= 1
    npusim.manual_seed(11)
    d = CASES["von_mises"][0](npusim, "cpu")
    x = host(d.sample((N,)))
    loc, circ_var = host(d.loc), host(d.variance)
    assert np.all((x >= -math.pi) & (x < math.pi))
    _within_standard_errors(np.cos(x - loc), 1 - circ_var, np.ones_like(loc))
    _within_standard_errors(np.sin(x - loc), np.zeros_like(loc), np.ones_like(loc))


def test_relaxed_distributions_sample_frequencies():
    # P(RelaxedBernoulli > 1/2) = P(logit(u) + logits > 0) = probs exactly; the argmax of a relaxed one-hot
    # sample is Categorical(probs) exactly (the Gumbel-max trick): frequencies within 5 binomial standard errors
    npusim.manual_seed(3)
    p = np.array(PROBS)
    x = host(D.RelaxedBernoulli(mk(npusim, 0.3), probs=mk(npusim, PROBS)).sample((N,)))
    _within_standard_errors((x > 0.5).astype(float), p, p * (1 - p))
    y = host(D.RelaxedOneHotCategorical(mk(npusim, 0.3), probs=mk(npusim, PROBS)).sample((N,)))
    hits = np.eye(3)[y.argmax(-1)]
    _within_standard_errors(hits, p, p * (1 - p))


def test_logistic_normal_samples_are_stick_broken_normals():
    npusim.manual_seed(4)
    d = CASES["logistic_normal"][0](npusim, "cpu")
    x = d.sample((N,))
    np.testing.assert_allclose(host(x.sum(-1)), 1.0, rtol=1e-12)
    z = host(transforms.StickBreakingTransform().inv(x))
    _within_standard_errors(z, np.array(LOC[0][:2]), np.array(SCALE[0][:2]) ** 2)


def test_lkj_samples_are_correlation_factors_with_zero_mean_correlations():
    npusim.manual_seed(6)
    d = CASES["lkj_cholesky"][0](npusim, "cpu")
    L = d.sample((N,))
    C = host(L @ L.mT)
    np.testing.assert_allclose(np.diagonal(C, axis1=-2, axis2=-1), 1.0, rtol=1e-12)
    # off-diagonal correlations are symmetric about 0 and bounded by 1 (variance <= 1)
    _within_standard_errors(C[..., 1, 0], np.zeros(3), np.ones(3))
    _within_standard_errors(C[..., 2, 1], np.zeros(3), np.ones(3))
    # the marginal of a correlation is Beta(eta - 1 + d/2, same) on [-1, 1]: variance 1 / (2 eta + d - 1); the
    # squares lie in [0, 1] (variance <= 1). Only the first correlation: torch 2.13's onion sampler, which npusim
    # follows draw for draw, spreads the rows below the second wider than this marginal (its Beta parameters)
    eta = np.array([0.5, 1.0, 2.5])
    _within_standard_errors(C[..., 1, 0] ** 2, 1 / (2 * eta + 2), np.ones(3))


def test_closed_forms(device):
    t = lambda v: mk(npusim, v, device)   # noqa: E731
    # Cauchy at its location: 1 / (pi scale)
    np.testing.assert_allclose(host(D.Cauchy(t([1.0]), t([2.0])).log_prob(t([1.0]))), -math.log(2 * math.pi))
    # HalfNormal: twice the normal density on x >= 0, none below
    hn = D.HalfNormal(t([2.0]), validate_args=False)
    np.testing.assert_allclose(host(hn.log_prob(t([1.0]))),
                               math.log(2 / (2 * math.sqrt(2 * math.pi))) - 1 / 8, rtol=1e-12)
    assert host(hn.log_prob(t([-1.0])))[0] == -math.inf
    # Geometric: P(k) = (1 - p)^k p
    np.testing.assert_allclose(host(D.Geometric(t([0.3])).log_prob(t([4.0]))).item(), math.log(0.7 ** 4 * 0.3))
    # NegativeBinomial(r, p): P(k) = C(k + r - 1, k) p^k (1 - p)^r
    nb = D.NegativeBinomial(t([3.0]), probs=t([0.4])).log_prob(t([2.0]))
    np.testing.assert_allclose(host(nb).item(), math.log(math.comb(4, 2) * 0.4 ** 2 * 0.6 ** 3))
    # Multinomial: n! / prod(k_i!) prod p_i^k_i
    mn = D.Multinomial(4, probs=t([0.2, 0.3, 0.5])).log_prob(t([1.0, 1.0, 2.0]))
    np.testing.assert_allclose(host(mn).item(), math.log(12 * 0.2 * 0.3 * 0.25))
    # Weibull with concentration 1 is Exponential(1 / scale); Pareto cdf 1 - (scale / x)^alpha
    np.testing.assert_allclose(host(D.Weibull(t([2.0]), t([1.0])).log_prob(t([3.0]))).item(), math.log(0.5) - 1.5)
    np.testing.assert_allclose(host(D.Pareto(t([2.0]), t([3.0])).cdf(t([4.0]))).item(), 1 - 0.125)
    # Kumaraswamy cdf 1 - (1 - x^a)^b via its transforms; GeneralizedPareto(concentration 0) is exponential
    np.testing.assert_allclose(host(D.Kumaraswamy(t([2.0]), t([3.0])).cdf(t([0.5]))).item(), 1 - 0.75 ** 3)
    gp = D.GeneralizedPareto(t([1.0]), t([2.0]), t([0.0]))
    np.testing.assert_allclose(host(gp.log_prob(t([3.0]))).item(), math.log(0.5) - 1.0)
    # InverseGamma(a, b): b^a / Gamma(a) x^(-a-1) exp(-b / x)
    ig = D.InverseGamma(t([3.0]), t([2.0])).log_prob(t([0.5]))
    np.testing.assert_allclose(host(ig).item(), math.log(8 / 2 * 0.5 ** -4 * math.exp(-4)), rtol=1e-12)
    # LowRankMultivariateNormal equals the full MultivariateNormal with covariance W W^T + D
    w, dg, loc = t(W), t([0.5, 1.0, 2.0]), t([0.1, 0.2, 0.3])
    lr = D.LowRankMultivariateNormal(loc, w, dg)
    full = D.MultivariateNormal(loc, covariance_matrix=w @ w.mT + npusim.diag(dg))
    x = t([[0.0, 1.0, -1.0], [2.0, 0.5, 0.1]])
    np.testing.assert_allclose(host(lr.log_prob(x)), host(full.log_prob(x)), rtol=1e-12)
    np.testing.assert_allclose(host(lr.entropy()), host(full.entropy()), rtol=1e-12)
    # MixtureSameFamily: log sum_k w_k N(x; mu_k, s_k)
    mix = D.MixtureSameFamily(D.Categorical(probs=t([0.25, 0.75])), D.Normal(t([0.0, 2.0]), t([1.0, 0.5])))
    dens = 0.25 * math.exp(-0.5) / math.sqrt(2 * math.pi) + 0.75 * math.exp(-2) / (0.5 * math.sqrt(2 * math.pi))
    np.testing.assert_allclose(host(mix.log_prob(t(1.0))).item(), math.log(dens), rtol=1e-12)


def _integral(f, lo, hi, n=200001):
    xs = np.linspace(lo, hi, n)
    trapezoid = np.trapezoid if hasattr(np, "trapezoid") else np.trapz
    return trapezoid(f(xs), xs, axis=0)


def test_densities_integrate_to_one():
    # trapezoid rule on a fine grid of smooth densities: error far below the 1e-6 asked
    vm = D.VonMises(mk(npusim, [0.5]), mk(npusim, [2.0]))
    assert abs(_integral(lambda x: np.exp(host(vm.log_prob(mk(npusim, x[:, None]))))[:, 0], -math.pi, math.pi)
               - 1) < 1e-5   # A&S's Bessel polynomial approximation is good to ~1e-7 relative
    cb = D.ContinuousBernoulli(probs=mk(npusim, [0.2, 0.4995]))
    got = _integral(lambda x: np.exp(host(cb.log_prob(mk(npusim, x[:, None])))), 0.0, 1.0)
    np.testing.assert_allclose(got, 1.0, atol=1e-6)


def test_rsample_gradients(device):
    loc, scale = mk(npusim, [1.0], device).requires_grad_(), mk(npusim, [2.0], device).requires_grad_()
    npusim.manual_seed(0)
    x = D.Cauchy(loc, scale).rsample()
    g_loc, g_scale = npusim.autograd.grad(x.sum(), (loc, scale))
    np.testing.assert_allclose(host(g_loc), 1.0)
    np.testing.assert_allclose(host(g_scale), (host(x.detach()) - 1.0) / 2.0, rtol=1e-12)   # dx/dscale = eps
    probs = mk(npusim, PROBS, device).requires_grad_()
    y = D.OneHotCategoricalStraightThrough(probs=probs).rsample()
    (g,) = npusim.autograd.grad((y * mk(npusim, [1.0, 2.0, 3.0], device)).sum(), probs)
    # straight-through: the gradient of the normalised probs, as if the sample were the probs
    p = np.array(PROBS)
    c, total = np.array([1.0, 2.0, 3.0]), p.sum(-1, keepdims=True)
    expected = c / total - (p * c).sum(-1, keepdims=True) / total ** 2
    np.testing.assert_allclose(host(g), expected, rtol=1e-12)
    temp = mk(npusim, 0.5, device)
    logits = mk(npusim, LOC, device).requires_grad_()
    z = D.RelaxedOneHotCategorical(temp, logits=logits).rsample((2,))
    (g,) = npusim.autograd.grad((z[..., 0]).sum(), logits)
    assert np.all(np.isfinite(host(g))) and np.any(host(g) != 0)


def test_wishart_rsample_is_positive_definite_and_reproducible(device):
    d = CASES["wishart"][0](npusim, device)
    npusim.manual_seed(1)
    a = d.rsample((5,))
    npusim.manual_seed(1)
    b = d.rsample((5,))
    np.testing.assert_array_equal(host(a), host(b))
    assert bool(constraints.positive_definite.check(a).all())


def test_errors_and_validation():
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        D.Multinomial(npusim.tensor(3), probs=mk(npusim, [0.5, 0.5]))
    with pytest.raises(ValueError, match="Expected parameter probs"):
        D.Geometric(probs=mk(npusim, [0.0, 0.5]), validate_args=True)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Cauchy(0.0, mk(npusim, [-1.0]), validate_args=True)
    with pytest.raises(ValueError, match="dim to be an integer greater than or equal to 2"):
        D.LKJCholesky(1)
    with pytest.raises(ValueError, match="does not equal"):
        D.MixtureSameFamily(D.Categorical(probs=mk(npusim, [0.5, 0.5])), D.Normal(mk(npusim, [0.0] * 3), 1.0))
    with pytest.raises(ValueError, match="within the support"):
        D.Pareto(mk(npusim, [2.0]), mk(npusim, [1.0]), validate_args=True).log_prob(mk(npusim, [1.0]))


# ---- KL divergences -------------------------------------------------------------------------------------

def _lowrank(L, d, shift=0.0):
    return dists(L).LowRankMultivariateNormal(mk(L, LOC, d) + shift, mk(L, W, d) * (1 + shift),
                                              mk(L, [0.5, 1.0, 2.0], d))


KL_PAIRS = {
    "cauchy": lambda L, d: (
        dists(L).Cauchy(mk(L, LOC, d), mk(L, SCALE, d)),
        dists(L).Cauchy(0.5, mk(L, SCALE[::-1], d))),
    "half_normal": lambda L, d: (dists(L).HalfNormal(mk(L, SCALE, d)), dists(L).HalfNormal(mk(L, SCALE[::-1], d))),
    "geometric": lambda L, d: (dists(L).Geometric(mk(L, PROBS, d)), dists(L).Geometric(logits=mk(L, LOC, d))),
    "pareto": lambda L, d: (dists(L).Pareto(mk(L, SCALE, d), mk(L, [[3.0, 2.0, 1.0]], d)),
                            dists(L).Pareto(mk(L, SCALE[::-1], d), 2.0)),
    "continuous_bernoulli": lambda L, d: (dists(L).ContinuousBernoulli(mk(L, [[0.2, 0.4995, 0.9]], d)),
                                          dists(L).ContinuousBernoulli(logits=mk(L, LOC, d))),
    "lowrank_lowrank": lambda L, d: (_lowrank(L, d), _lowrank(L, d, 0.5)),
    "mvn_lowrank": lambda L, d: (dists(L).MultivariateNormal(mk(L, LOC, d), covariance_matrix=mk(L, COV, d)),
                                 _lowrank(L, d, 0.5)),
    "lowrank_mvn": lambda L, d: (_lowrank(L, d), dists(L).MultivariateNormal(mk(L, LOC[0], d),
                                                                            covariance_matrix=mk(L, COV, d))),
    "wishart_expfamily": lambda L, d: (
        dists(L).Wishart(mk(L, [4.0, 6.5], d), covariance_matrix=mk(L, COV, d)),
        dists(L).Wishart(mk(L, 5.0, d), scale_tril=mk(L, np.diag([1.0, 2.0, 0.5]).tolist(), d))),
    "beta_normal": lambda L, d: (
        dists(L).Beta(mk(L, SCALE, d), mk(L, SCALE[::-1], d)),
        dists(L).Normal(mk(L, LOC, d), 2.0)),
    "beta_continuous_bernoulli": lambda L, d: (
        dists(L).Beta(mk(L, SCALE, d), 1.5),
        dists(L).ContinuousBernoulli(mk(L, PROBS, d))),
    # Uniform and Pareto parameters of the batch's full shape: torch assigns infinities through a mask of it
    "beta_uniform": lambda L, d: (
        dists(L).Beta(mk(L, SCALE, d), 1.5),
        dists(L).Uniform(mk(L, [[-0.1, 0.0, 0.2]] * 2, d), 1.0)),
    "continuous_bernoulli_normal": lambda L, d: (dists(L).ContinuousBernoulli(mk(L, PROBS, d)),
                                                 dists(L).Normal(mk(L, LOC, d), mk(L, SCALE, d))),
    "continuous_bernoulli_uniform": lambda L, d: (
        dists(L).ContinuousBernoulli(mk(L, PROBS[0], d)),
        dists(L).Uniform(mk(L, [-0.1, 0.0, 0.2], d), mk(L, [1.0, 1.5, 1.0], d))),
    "exponential_gamma": lambda L, d: (
        dists(L).Exponential(mk(L, SCALE, d)),
        dists(L).Gamma(mk(L, SCALE[::-1], d), 2.0)),
    "exponential_normal": lambda L, d: (dists(L).Exponential(mk(L, SCALE, d)), dists(L).Normal(mk(L, LOC, d), 1.5)),
    "exponential_gumbel": lambda L, d: (dists(L).Exponential(mk(L, SCALE, d)), dists(L).Gumbel(mk(L, LOC, d), 1.5)),
    "gamma_normal": lambda L, d: (dists(L).Gamma(mk(L, SCALE, d), 2.0), dists(L).Normal(mk(L, LOC, d), 1.5)),
    "gamma_gumbel": lambda L, d: (dists(L).Gamma(mk(L, SCALE, d), 2.0), dists(L).Gumbel(mk(L, LOC, d), 1.5)),
    "gamma_exponential": lambda L, d: (
        dists(L).Gamma(mk(L, SCALE, d), 2.0),
        dists(L).Exponential(mk(L, SCALE[::-1], d))),
    "gumbel_normal": lambda L, d: (
        dists(L).Gumbel(mk(L, LOC, d), mk(L, SCALE, d)),
        dists(L).Normal(0.5, mk(L, SCALE[::-1], d))),
    "laplace_normal": lambda L, d: (
        dists(L).Laplace(mk(L, LOC, d), mk(L, SCALE, d)),
        dists(L).Normal(0.5, mk(L, SCALE[::-1], d))),
    "normal_gumbel": lambda L, d: (
        dists(L).Normal(mk(L, LOC, d), mk(L, SCALE, d)),
        dists(L).Gumbel(0.5, mk(L, SCALE[::-1], d))),
    "normal_laplace": lambda L, d: (
        dists(L).Normal(mk(L, LOC, d), mk(L, SCALE, d)),
        dists(L).Laplace(0.5, mk(L, SCALE[::-1], d))),
    "normal_pareto": lambda L, d: (
        dists(L).Normal(mk(L, LOC, d), mk(L, SCALE, d)),
        dists(L).Pareto(1.0, mk(L, SCALE, d))),
    "pareto_exponential": lambda L, d: (dists(L).Pareto(mk(L, SCALE, d), mk(L, [[0.8, 2.5, 3.0]], d)),
                                        dists(L).Exponential(mk(L, SCALE[::-1], d))),
    "pareto_gamma": lambda L, d: (
        dists(L).Pareto(mk(L, SCALE, d), mk(L, [[0.8, 2.5, 3.0]], d)),
        dists(L).Gamma(2.0, mk(L, SCALE, d))),
    "pareto_normal": lambda L, d: (
        dists(L).Pareto(mk(L, SCALE, d), mk(L, [[1.8, 2.5, 3.0]], d)),
        dists(L).Normal(mk(L, LOC, d), 1.5)),
    "uniform_beta": lambda L, d: (dists(L).Uniform(mk(L, [[0.0, 0.2, -0.1]] * 2, d), mk(L, [[1.0, 0.7, 0.5]] * 2, d)),
                                  dists(L).Beta(mk(L, SCALE, d), 2.0)),
    "uniform_continuous_bernoulli": lambda L, d: (
        dists(L).Uniform(mk(L, [[0.1, 0.2, -0.1]], d), mk(L, [[0.9, 1.0, 0.5]], d)),
        dists(L).ContinuousBernoulli(mk(L, PROBS, d))),
    "uniform_exponential": lambda L, d: (
        dists(L).Uniform(mk(L, [[0.0, 0.2, -0.1]] * 2, d), 1.5),
        dists(L).Exponential(mk(L, SCALE, d))),
    "uniform_gamma": lambda L, d: (
        dists(L).Uniform(mk(L, [[0.0, 0.2, -0.1]] * 2, d), 1.5),
        dists(L).Gamma(2.0, mk(L, SCALE, d))),
    "uniform_gumbel": lambda L, d: (
        dists(L).Uniform(mk(L, [[0.0, 0.2, -0.1]], d), 1.5),
        dists(L).Gumbel(mk(L, LOC, d), 2.0)),
    "uniform_normal": lambda L, d: (
        dists(L).Uniform(mk(L, [[0.0, 0.2, -0.1]], d), 1.5),
        dists(L).Normal(mk(L, LOC, d), 2.0)),
    "uniform_pareto": lambda L, d: (
        dists(L).Uniform(mk(L, [[1.0, 0.2, 2.1]] * 2, d), 3.0),
        dists(L).Pareto(mk(L, [[0.5, 1.0, 2.0]], d), 2.0)),
    "bernoulli_poisson": lambda L, d: (dists(L).Bernoulli(mk(L, PROBS, d)), dists(L).Poisson(mk(L, SCALE, d))),
    "infinite_pairs": lambda L, d: (dists(L).Normal(mk(L, LOC, d), 1.0), dists(L).Exponential(mk(L, SCALE, d))),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_matches_torch(torch, device, name):
    ours = D.kl_divergence(*KL_PAIRS[name](npusim, device))
    theirs = torch.distributions.kl_divergence(*KL_PAIRS[name](torch, "cpu"))
    close(ours, theirs, rtol=1e-8)   # float64 and torch's formulas; Wishart's goes through autograd of slogdet


def test_kl_closed_forms(device):
    # KL(Cauchy(0, 1) || Cauchy(0, 2)) = log(9 / 8); KL of a distribution to itself is 0
    c = D.kl_divergence(D.Cauchy(mk(npusim, [0.0], device), 1.0), D.Cauchy(mk(npusim, [0.0], device), 2.0))
    np.testing.assert_allclose(host(c), [math.log(9 / 8)], rtol=1e-12)
    lr = _lowrank(npusim, device)
    np.testing.assert_allclose(host(D.kl_divergence(lr, lr)), 0.0, atol=1e-12)
    g = D.Geometric(mk(npusim, [0.3], device))
    np.testing.assert_allclose(host(D.kl_divergence(g, g)), 0.0, atol=1e-12)
    assert host(D.kl_divergence(D.Normal(mk(npusim, [0.0], device), 1.0), D.Pareto(1.0, 2.0)))[0] == math.inf


# ---- class-level parity with torch ---------------------------------------------------------------------

@pytest.mark.oracle
def test_every_torch_distribution_exists_with_torchs_class_attributes(torch):
    import inspect
    assert sorted(set(torch.distributions.__all__) - set(D.__all__)) == []
    for name in torch.distributions.__all__:
        theirs, ours = getattr(torch.distributions, name), getattr(D, name)
        if not (inspect.isclass(theirs) and issubclass(theirs, torch.distributions.Distribution)):
            continue
        assert issubclass(ours, D.Distribution), name
        for attr in ("has_rsample", "has_enumerate_support"):
            if isinstance(getattr(theirs, attr), bool):
                assert getattr(ours, attr) == getattr(theirs, attr), (name, attr)
        expected = theirs.__dict__.get("arg_constraints")
        if isinstance(expected, dict):   # class-level (not a property of the instance)
            got = ours.__dict__["arg_constraints"]
            assert {k: repr(v) for k, v in got.items()} == {k: repr(v) for k, v in expected.items()}, name
        support = theirs.__dict__.get("support")
        if isinstance(support, torch.distributions.constraints.Constraint) and not isinstance(support, property):
            assert repr(ours.__dict__["support"]) == repr(support), name


INVALID = {
    "Cauchy": lambda L: dists(L).Cauchy(mk(L, [0.0]), mk(L, [-1.0]), validate_args=True),
    "HalfNormal": lambda L: dists(L).HalfNormal(mk(L, [0.0]), validate_args=True),
    "Weibull": lambda L: dists(L).Weibull(mk(L, [1.0]), mk(L, [-2.0]), validate_args=True),
    "Pareto": lambda L: dists(L).Pareto(mk(L, [-1.0]), mk(L, [2.0]), validate_args=True),
    "VonMises": lambda L: dists(L).VonMises(mk(L, [0.0]), mk(L, [0.0]), validate_args=True),
    "Geometric": lambda L: dists(L).Geometric(mk(L, [1.5]), validate_args=True),
    "NegativeBinomial": lambda L: dists(L).NegativeBinomial(mk(L, [2.0]), mk(L, [1.0]), validate_args=True),
    "Multinomial": lambda L: dists(L).Multinomial(3, mk(L, [-0.5, 1.5]), validate_args=True),
    "LowRankMultivariateNormal": lambda L: dists(L).LowRankMultivariateNormal(
        mk(L, [0.0, 0.0]), mk(L, [[0.1], [0.1]]), mk(L, [1.0, -1.0]), validate_args=True),
    "RelaxedBernoulli": lambda L: dists(L).RelaxedBernoulli(mk(L, 1.0), mk(L, [1.5]), validate_args=True),
    "Kumaraswamy": lambda L: dists(L).Kumaraswamy(mk(L, [1.0]), mk(L, [0.0]), validate_args=True),
    "InverseGamma": lambda L: dists(L).InverseGamma(mk(L, [-1.0]), mk(L, [1.0]), validate_args=True),
    "FisherSnedecor": lambda L: dists(L).FisherSnedecor(mk(L, [1.0]), mk(L, [-1.0]), validate_args=True),
    "LKJCholesky": lambda L: dists(L).LKJCholesky(3, mk(L, [-1.0]), validate_args=True),
    "GeneralizedPareto": lambda L: dists(L).GeneralizedPareto(mk(L, [0.0]), mk(L, [-1.0]), mk(L, [0.1]),
                                                              validate_args=True),
    "ContinuousBernoulli": lambda L: dists(L).ContinuousBernoulli(mk(L, [1.5]), validate_args=True),
    "Wishart": lambda L: dists(L).Wishart(mk(L, 3.0), covariance_matrix=mk(L, [[1.0, 2.0], [2.0, 1.0]]),
                                          validate_args=True),
}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_parameters_raise_as_torch(torch, name):
    with pytest.raises(ValueError) as theirs:
        INVALID[name](torch)
    with pytest.raises(ValueError) as ours:
        INVALID[name](npusim)
    # the same message up to the library's names and tensor printing
    assert str(ours.value).split("(")[0] == str(theirs.value).split("(")[0], (str(ours.value), str(theirs.value))


# ---- reparameterised samples: autograd against finite differences of the seeded sampler -------------------

class _TensorFactoryPatch:
    """Replaces ``npusim.tensor`` while a builder runs: the i-th tensor made is a gradient leaf (recorded) or is
    shifted by ``shifts[i]``."""

    def __init__(self, leaves=None, shifts=None):
        self.leaves, self.shifts, self.count = leaves, shifts or {}, 0

    def __enter__(self):
        self.real = npusim.tensor

        def tensor(values, **kw):
            t = self.real(values, **kw)
            i, self.count = self.count, self.count + 1
            if self.leaves is not None:
                t.requires_grad_()
                self.leaves.append(t)
            elif i in self.shifts:
                t = t + self.shifts[i]
            return t
        npusim.tensor = tensor
        return self

    def __exit__(self, *exc):
        npusim.tensor = self.real


REPARAMETERISED = ["cauchy", "half_normal", "half_cauchy", "weibull", "pareto", "lowrank_mvn", "relaxed_bernoulli",
                   "relaxed_bernoulli_logits", "relaxed_one_hot", "exp_relaxed_categorical", "continuous_bernoulli",
                   "continuous_bernoulli_logits", "kumaraswamy", "logistic_normal"]


@pytest.mark.parametrize("name", REPARAMETERISED)
def test_rsample_derivatives_match_finite_differences(device, name):
    # a seeded rsample is a deterministic, smooth function of the parameters (the draws do not depend on them):
    # its autograd derivative must equal a central difference. h = 1e-6 in float64: truncation ~h^2, rounding
    # ~1e-16 / h = 1e-10 relative, so 1e-5 leaves a wide margin
    def f(**patch):
        with _TensorFactoryPatch(**patch):
            d = CASES[name][0](npusim, device)
        npusim.manual_seed(17)
        x = d.rsample((3,))
        return (x * npusim.linspace(0.5, 1.5, x.shape[-1], dtype=x.dtype, device=x.device)).sum()

    leaves = []
    value = f(leaves=leaves)
    grads = npusim.autograd.grad(value, leaves, allow_unused=True)
    h = 1e-6
    for i, (leaf, g) in enumerate(zip(leaves, grads)):
        g = np.zeros(tuple(leaf.shape)) if g is None else host(g)
        for j in range(leaf.numel()):
            e = npusim.zeros(leaf.numel(), dtype=leaf.dtype, device=leaf.device)
            e[j] = h
            e = e.reshape(leaf.shape)
            numeric = (host(f(shifts={i: e})) - host(f(shifts={i: -e}))) / (2 * h)
            np.testing.assert_allclose(g.reshape(-1)[j], numeric, rtol=1e-5, atol=1e-7, err_msg=f"leaf {i}[{j}]")
