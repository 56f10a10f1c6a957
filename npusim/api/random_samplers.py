"""Public samplers ``npusim._standard_gamma``, ``_sample_dirichlet``, ``poisson`` and ``binomial`` (torch's), and
the derivative torch gives ``poisson`` (zero: the samples are piecewise constant in the rate)."""
from __future__ import annotations

from ..core.autograd.derivatives import derivative
from ..core.dispatch.ops_namespace import aten

__all__ = ["poisson", "binomial"]   # torch exports the underscored samplers without listing them


def _standard_gamma(input, generator=None):
    return aten._standard_gamma.default(input, generator=generator)


def _sample_dirichlet(input, generator=None):
    return aten._sample_dirichlet.default(input, generator=generator)


def poisson(input, generator=None):
    return aten.poisson.default(input, generator=generator)


def binomial(count, prob, generator=None):
    return aten.binomial.default(count, prob, generator=generator)


@derivative("poisson")
def _poisson_backward(ctx, g):
    return aten.zeros_like.default(g)
