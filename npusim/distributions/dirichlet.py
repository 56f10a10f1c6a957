"""``Dirichlet(concentration)``, sampled through ``npusim._sample_dirichlet`` (normalised gammas).

Deviation from torch: ``rsample`` has no gradient with respect to ``concentration`` (torch's
``_dirichlet_grad`` is not implemented); backward through a sample fails."""
from __future__ import annotations

import npusim

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _EMPTY_SIZE

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution parameterised by ``concentration`` (last dimension: the categories)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}  # noqa: RUF012
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = npusim.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        return npusim._sample_dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (npusim.xlogy(self.concentration - 1.0, value).sum(-1) + npusim.lgamma(self.concentration.sum(-1))
                - npusim.lgamma(self.concentration).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        # all concentrations below 1: the mode is the corner of the largest
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        corner = npusim.nn.functional.one_hot(mode.argmax(dim=-1), concentrationm1.shape[-1]).to(mode.dtype)
        return npusim.where(mask, corner, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (npusim.lgamma(self.concentration).sum(-1) - npusim.lgamma(a0) - (k - a0) * npusim.digamma(a0)
                - ((self.concentration - 1.0) * npusim.digamma(self.concentration)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - npusim.lgamma(x.sum(-1))
