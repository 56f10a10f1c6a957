"""``NegativeBinomial(total_count, probs=None, logits=None)``: sampled as a gamma-Poisson mixture."""
from __future__ import annotations

import npusim
import npusim.nn.functional as F

from . import constraints
from .trials import TrialsDistribution
from .gamma import Gamma
from .utils import _EMPTY_SIZE, lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(TrialsDistribution):
    """Number of successes before ``total_count`` failures in Bernoulli(``probs``) trials."""

    arg_constraints = {  # noqa: RUF012 - torch's class attribute
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        super().__init__(total_count, probs=probs, logits=logits, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_trials(NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self):
        return self.total_count * npusim.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / npusim.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        # the Poisson rate of a negative binomial draw is Gamma(total_count, scale = p / (1 - p))
        return Gamma(concentration=self.total_count, rate=npusim.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=_EMPTY_SIZE):
        with npusim.no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return npusim.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = self.total_count * F.logsigmoid(-self.logits) + value * F.logsigmoid(self.logits)
        log_normalization = (-npusim.lgamma(self.total_count + value) + npusim.lgamma(1.0 + value)
                             + npusim.lgamma(self.total_count))
        # total_count + value == 0 is the certain outcome 0 of a zero-count distribution
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
