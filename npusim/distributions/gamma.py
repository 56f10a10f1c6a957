"""``Gamma(concentration, rate)``, sampled through ``npusim._standard_gamma`` (Marsaglia-Tsang on the Philox stream).

Deviation from torch: ``rsample`` is differentiable in ``rate`` only; a gradient with respect to
``concentration`` (torch's implicit reparameterisation, ``_standard_gamma_grad``) is not implemented and fails
at backward. ``cdf`` is not available (npusim has no ``special.gammainc``)."""
from __future__ import annotations

from numbers import Number

import npusim

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _EMPTY_SIZE, broadcast_all

__all__ = ["Gamma"]


class Gamma(ExponentialFamily):
    """Gamma distribution parameterised by shape ``concentration`` and ``rate`` (1 / scale)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}  # noqa: RUF012
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = npusim.Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, ("concentration", "rate"), _instance)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        value = npusim._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        value.detach().clamp_(min=npusim.finfo(value.dtype).tiny)  # not recorded in the autograd graph
        return value

    def log_prob(self, value):
        value = npusim.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (npusim.xlogy(self.concentration, self.rate) + npusim.xlogy(self.concentration - 1, value)
                - self.rate * value - npusim.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - npusim.log(self.rate) + npusim.lgamma(self.concentration)
                + (1.0 - self.concentration) * npusim.digamma(self.concentration))

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return npusim.lgamma(x + 1) + (x + 1) * npusim.log(-y.reciprocal())
