"""Kernels of ``_standard_gamma``, ``_sample_dirichlet``, ``poisson`` and ``binomial``: torch's dtype rules and
errors, the generator choice, then the array samplers of ``npusim.kernels.random_samplers``."""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.c10.generator import generator_for
from ..kernels import random_samplers as RR
from ..kernels.array_api import namespace_of
from . import common as C

_GAMMA_DTYPES = (D.float32, D.float64)


def _require(t, allowed, kernel):
    if t.dtype not in allowed:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{C.TORCH_NAME[t.dtype]}'")


def _draw(t, generator, sample):
    """``sample(xp, key, counter) -> (array, blocks)`` on ``t``'s device with its generator."""
    xp = namespace_of(t._a)
    g = generator_for(generator, t._device)
    return C.make(g.draw(lambda key, c: sample(xp, key, c)), t._device)


def standard_gamma(self, generator=None):
    _require(self, _GAMMA_DTYPES, "gamma_cpu")
    a = self._a
    return _draw(self, generator, lambda xp, key, c: RR.standard_gamma(xp, key, c, a, a.dtype))


def sample_dirichlet(self, generator=None):
    _require(self, _GAMMA_DTYPES, "dirichlet")
    a = self._a
    return _draw(self, generator, lambda xp, key, c: RR.dirichlet(xp, key, c, a, a.dtype))


def poisson(self, generator=None):
    _require(self, (D.float16, D.bfloat16, D.float32, D.float64), "poisson_cpu")
    a = self._a
    xp = namespace_of(a)
    if a.size and bool(xp.any(~(a.astype(np.float64) >= 0))):   # NaN fails the check too, as in torch
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    return _draw(self, generator, lambda xp, key, c: RR.poisson(xp, key, c, a, a.dtype))


def binomial(count, prob, generator=None):
    for t, name in ((count, "count"), (prob, "prob")):
        if not t.dtype.is_floating_point:
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: "
                             f"{C.TORCH_NAME[t.dtype]}")
    if prob.dtype is not count.dtype:
        raise RuntimeError(f"Found dtype {C.TORCH_NAME[prob.dtype]} but expected {C.TORCH_NAME[count.dtype]}")
    _require(count, _GAMMA_DTYPES, "binomial_cpu")
    dev = C.same_device(count, prob)
    shape = C.broadcast_shapes(tuple(count._a.shape), tuple(prob._a.shape))
    n, p = count._a, prob._a
    xp = namespace_of(n)
    g = generator_for(generator, dev)
    out = g.draw(lambda key, c: RR.binomial(xp, key, c, n, p, n.dtype))
    return C.make(out.reshape(shape), dev)


KERNELS = {
    "_standard_gamma": standard_gamma, "_sample_dirichlet": sample_dirichlet, "poisson": poisson,
    "binomial": binomial,
}
