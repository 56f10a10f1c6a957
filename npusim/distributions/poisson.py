"""``Poisson(rate)``, sampled through ``npusim.poisson`` (inversion below rate 10, PTRS above)."""
from __future__ import annotations

from numbers import Number

import npusim

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _EMPTY_SIZE, broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """Poisson distribution parameterised by ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}  # noqa: RUF012 - torch's class attribute
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = npusim.Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, ("rate",), _instance)

    def sample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        with npusim.no_grad():
            return npusim.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (npusim.log(self.rate),)

    def _log_normalizer(self, x):
        return npusim.exp(x)
