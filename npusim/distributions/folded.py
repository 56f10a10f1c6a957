"""``|X|`` for a centred ``X`` with a ``scale``: what HalfNormal and HalfCauchy share."""
from __future__ import annotations

import math

import npusim

from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class FoldedAtZero(TransformedDistribution):
    """The absolute value of ``base_dist``, symmetric about 0: both halves fold onto the positive one.
    Subclasses declare their class attributes themselves, as torch's do."""

    def __init__(self, base_dist, validate_args=None):
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return npusim.zeros_like(self.scale)

    def _value(self, value):
        """The value log_prob reads (HalfCauchy takes numbers as tensors of the scale's dtype, as torch's)."""
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = self._value(value)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return npusim.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
