"""Every random op of npusim as a draw with a fixed seed, and how closely cuda mode must match emulation.

The kinds follow docs/random.md ("What is reproducible"):

- BITWISE: uniform, integer, permutation and Bernoulli draws (dropout masks, nn.init on
  uniform draws): the same bits, and the generator's offset advanced the same way;
- ULPS: draws through log/sqrt/sin/cos/tan/log1p in float64, rounded once: float64
  within 8 ulp, float32/float16/bfloat16 within 1 ulp, integers equal;
- LOG_NORMAL: as ULPS, but exp() scales a float64 error by about |ln value|;
- RARE: integer results of a float comparison (multinomial, geometric_): equal except
  in rare near-ties, at most 0.1% of the values;
- SAMPLER: rejection/inversion samplers (docs: a flipped accept decision changes the
  later rounds): at least 90% of the values within the ULPS tolerance, offsets may differ.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

BITWISE, ULPS, LOG_NORMAL, RARE, SAMPLER = "bitwise", "ulps", "log_normal", "rare", "sampler"
N = 1001        # odd: the last counter block of a draw is partly used


@dataclass(frozen=True)
class Draw:
    name: str
    kind: str
    make: Callable      # make(npusim, generator) -> npu tensor; seeded default generators where it takes none
    default_generator: bool = False


def _lin(npusim, lo, hi, n=N, dtype=None):
    return npusim.linspace(lo, hi, n, dtype=dtype or npusim.float32, device="npu")


def _empty(npusim, *shape, dtype=None):
    return npusim.empty(*shape, dtype=dtype or npusim.float32, device="npu")


def _factories(m):
    F = m.nn.functional
    return [
        # uniform draws
        Draw("rand float32", BITWISE, lambda m, g: m.rand(N, device="npu", generator=g)),
        Draw("rand float16", BITWISE, lambda m, g: m.rand(N, dtype=m.float16, device="npu", generator=g)),
        Draw("rand bfloat16", BITWISE, lambda m, g: m.rand(N, dtype=m.bfloat16, device="npu", generator=g)),
        Draw("rand float64", BITWISE, lambda m, g: m.rand(N, dtype=m.float64, device="npu", generator=g)),
        Draw("rand 37x29", BITWISE, lambda m, g: m.rand(37, 29, device="npu", generator=g)),
        Draw("rand 1M", BITWISE, lambda m, g: m.rand(1_000_003, device="npu", generator=g)),
        Draw("rand_like", BITWISE, lambda m, g: m.rand_like(_empty(m, N), generator=g)),
        Draw("uniform_ float32", BITWISE, lambda m, g: _empty(m, N).uniform_(-3.0, 5.0, generator=g)),
        Draw("uniform_ float64", BITWISE,
             lambda m, g: _empty(m, N, dtype=m.float64).uniform_(-3.0, 5.0, generator=g)),
        Draw("uniform_ bfloat16", BITWISE,
             lambda m, g: _empty(m, N, dtype=m.bfloat16).uniform_(-3.0, 5.0, generator=g)),
        Draw("rand default generator", BITWISE, lambda m, g: m.rand(N, device="npu"), default_generator=True),
        # integer draws
        Draw("randint int64", BITWISE, lambda m, g: m.randint(-9, 10 ** 9, (N,), device="npu", generator=g)),
        Draw("randint int32", BITWISE,
             lambda m, g: m.randint(0, 1000, (N,), dtype=m.int32, device="npu", generator=g)),
        Draw("randint_like", BITWISE,
             lambda m, g: m.randint_like(_empty(m, N, dtype=m.int64), 5, 17, generator=g)),
        Draw("random_ int64", BITWISE, lambda m, g: _empty(m, N, dtype=m.int64).random_(generator=g)),
        Draw("random_ uint8", BITWISE, lambda m, g: _empty(m, N, dtype=m.uint8).random_(generator=g)),
        Draw("random_(from, to) float32", BITWISE, lambda m, g: _empty(m, N).random_(-50, 50, generator=g)),
        # permutations
        Draw("randperm 1001", BITWISE, lambda m, g: m.randperm(N, device="npu", generator=g)),
        Draw("randperm 10", BITWISE, lambda m, g: m.randperm(10, device="npu", generator=g)),
        Draw("randperm 70000 int32", BITWISE,
             lambda m, g: m.randperm(70_000, dtype=m.int32, device="npu", generator=g)),
        # Bernoulli draws and dropout masks
        Draw("bernoulli(p tensor)", BITWISE, lambda m, g: m.bernoulli(_lin(m, 0.0, 1.0), generator=g)),
        Draw("bernoulli float64 p", BITWISE,
             lambda m, g: m.bernoulli(m.full((N,), 0.3, dtype=m.float64, device="npu"), generator=g)),
        Draw("bernoulli_(0.7)", BITWISE, lambda m, g: _empty(m, N).bernoulli_(0.7, generator=g)),
        Draw("bernoulli_(p tensor)", BITWISE,
             lambda m, g: _empty(m, N).bernoulli_(_lin(m, 0.0, 1.0), generator=g)),
        Draw("dropout", BITWISE, lambda m, g: F.dropout(m.ones(N, device="npu"), p=0.3, training=True),
             default_generator=True),
        Draw("dropout2d", BITWISE,
             lambda m, g: F.dropout2d(m.ones(4, 8, 5, 5, device="npu"), p=0.4, training=True),
             default_generator=True),
        Draw("nn.Dropout", BITWISE, lambda m, g: m.nn.Dropout(0.5).train()(_lin(m, -1.0, 1.0)),
             default_generator=True),
        Draw("rrelu training", BITWISE, lambda m, g: F.rrelu(_lin(m, -1.0, 1.0), training=True),
             default_generator=True),
        # the affine part of alpha dropout may be fused into one multiply-add on a GPU
        Draw("alpha_dropout", ULPS, lambda m, g: F.alpha_dropout(_lin(m, -2.0, 2.0), p=0.2, training=True),
             default_generator=True),
        Draw("feature_alpha_dropout", ULPS,
             lambda m, g: F.feature_alpha_dropout(_lin(m, -2.0, 2.0, 4 * 8 * 9).view(4, 8, 9), p=0.2,
                                                  training=True), default_generator=True),
        # normal and transcendental draws
        Draw("randn float32", ULPS, lambda m, g: m.randn(N, device="npu", generator=g)),
        Draw("randn float64", ULPS, lambda m, g: m.randn(N, dtype=m.float64, device="npu", generator=g)),
        Draw("randn float16", ULPS, lambda m, g: m.randn(N, dtype=m.float16, device="npu", generator=g)),
        Draw("randn bfloat16", ULPS, lambda m, g: m.randn(N, dtype=m.bfloat16, device="npu", generator=g)),
        Draw("randn_like", ULPS, lambda m, g: m.randn_like(_empty(m, N, dtype=m.float64), generator=g)),
        Draw("randn default generator", ULPS, lambda m, g: m.randn(N, device="npu"), default_generator=True),
        Draw("normal_ float32", ULPS, lambda m, g: _empty(m, N).normal_(2.0, 3.0, generator=g)),
        Draw("normal_ float64", ULPS, lambda m, g: _empty(m, N, dtype=m.float64).normal_(2.0, 3.0, generator=g)),
        Draw("normal(Tensor, Tensor)", ULPS,
             lambda m, g: m.normal(_lin(m, -1.0, 1.0), _lin(m, 0.1, 2.0), generator=g)),
        Draw("normal(float, Tensor)", ULPS, lambda m, g: m.normal(0.5, _lin(m, 0.1, 2.0), generator=g)),
        Draw("normal(Tensor, float)", ULPS, lambda m, g: m.normal(_lin(m, -1.0, 1.0), 2.0, generator=g)),
        Draw("normal(float, float, size)", ULPS,
             lambda m, g: m.normal(2.0, 3.0, size=(N,), device="npu", generator=g)),
        Draw("exponential_ float32", ULPS, lambda m, g: _empty(m, N).exponential_(1.5, generator=g)),
        Draw("exponential_ float64", ULPS,
             lambda m, g: _empty(m, N, dtype=m.float64).exponential_(1.5, generator=g)),
        Draw("cauchy_ float32", ULPS, lambda m, g: _empty(m, N).cauchy_(generator=g)),
        Draw("cauchy_ float64", ULPS, lambda m, g: _empty(m, N, dtype=m.float64).cauchy_(generator=g)),
        Draw("log_normal_ float32", ULPS, lambda m, g: _empty(m, N).log_normal_(generator=g)),
        Draw("log_normal_ float64", LOG_NORMAL,
             lambda m, g: _empty(m, N, dtype=m.float64).log_normal_(generator=g)),
        Draw("geometric_ float32", RARE, lambda m, g: _empty(m, N).geometric_(0.2, generator=g)),
        Draw("geometric_ int64", RARE,
             lambda m, g: _empty(m, N, dtype=m.int64).geometric_(0.05, generator=g)),
        Draw("multinomial with replacement", RARE,
             lambda m, g: m.multinomial(_lin(m, 0.1, 5.0, 50), 400, replacement=True, generator=g)),
        Draw("multinomial without replacement", RARE,
             lambda m, g: m.multinomial(_lin(m, 0.1, 5.0, 100).view(2, 50), 20, generator=g)),
        # rejection and inversion samplers
        Draw("_standard_gamma", SAMPLER,
             lambda m, g: m._standard_gamma(_lin(m, 0.05, 8.0, dtype=m.float64), generator=g)),
        Draw("_sample_dirichlet", SAMPLER,
             lambda m, g: m._sample_dirichlet(_lin(m, 0.3, 4.0, 500, dtype=m.float64).view(100, 5),
                                              generator=g)),
        Draw("poisson", SAMPLER, lambda m, g: m.poisson(_lin(m, 0.0, 40.0, dtype=m.float64), generator=g)),
        Draw("binomial", SAMPLER,
             lambda m, g: m.binomial(_lin(m, 0.0, 200.0, dtype=m.float64).floor(),
                                     _lin(m, 0.01, 0.99, dtype=m.float64), generator=g)),
    ]


def _init(m):
    init = m.nn.init

    def weight(*shape):
        return _empty(m, *shape)
    return [
        Draw("init.uniform_", BITWISE, lambda m, g: init.uniform_(weight(31, 33), -0.2, 0.7, generator=g)),
        Draw("init.xavier_uniform_", BITWISE, lambda m, g: init.xavier_uniform_(weight(31, 33), generator=g)),
        Draw("init.kaiming_uniform_", BITWISE,
             lambda m, g: init.kaiming_uniform_(weight(31, 33), a=5 ** 0.5, generator=g)),
        Draw("init.normal_", ULPS, lambda m, g: init.normal_(weight(31, 33), 0.1, 0.02, generator=g)),
        Draw("init.xavier_normal_", ULPS, lambda m, g: init.xavier_normal_(weight(31, 33), generator=g)),
        Draw("init.kaiming_normal_", ULPS, lambda m, g: init.kaiming_normal_(weight(31, 33), generator=g)),
        Draw("init.trunc_normal_", ULPS, lambda m, g: init.trunc_normal_(weight(31, 33), generator=g)),
        Draw("init.orthogonal_", ULPS, lambda m, g: init.orthogonal_(weight(31, 33), generator=g)),
        Draw("init.sparse_", ULPS, lambda m, g: init.sparse_(weight(31, 33), 0.5, generator=g)),
    ]


def catalogue(npusim) -> list:
    return _factories(npusim) + _init(npusim)
