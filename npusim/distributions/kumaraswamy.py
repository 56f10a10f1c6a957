"""``Kumaraswamy(concentration1, concentration0)``: ``(1 - U ** (1 / b)) ** (1 / a)`` for ``U`` uniform."""
from __future__ import annotations

import math

import npusim

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform
from .uniform import Uniform
from .utils import broadcast_all, euler_constant

__all__ = ["Kumaraswamy"]


def _moments(a, b, n):
    """The ``n``-th moment ``b * B(1 + n / a, b)``."""
    arg1 = 1 + n / a
    log_value = npusim.lgamma(arg1) + npusim.lgamma(b) - npusim.lgamma(arg1 + b)
    return b * npusim.exp(log_value)


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution on ``(0, 1)`` (a Beta-like density with a closed-form cdf)."""

    arg_constraints = {"concentration1": constraints.positive,  # noqa: RUF012 - torch's class attribute
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(npusim.full_like(self.concentration0, 0), npusim.full_like(self.concentration0, 1),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _moments(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # log of ((a - 1) / (a b - 1)) ** (1 / a), written with log1p as torch; undefined when a or b < 1
        log_mode = (self.concentration0.reciprocal() * (-self.concentration0).log1p()
                    - (-self.concentration0 * self.concentration1).log1p())
        log_mode = npusim.where((self.concentration0 < 1) | (self.concentration1 < 1), math.nan, log_mode)
        return log_mode.exp()

    @property
    def variance(self):
        return _moments(self.concentration1, self.concentration0, 2) - npusim.pow(self.mean, 2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        H0 = npusim.digamma(self.concentration0 + 1) + euler_constant
        return t0 + t1 * H0 - npusim.log(self.concentration1) - npusim.log(self.concentration0)
