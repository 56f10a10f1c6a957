"""``HalfCauchy(scale)``: ``|X|`` for ``X ~ Cauchy(0, scale)``."""
from __future__ import annotations

import math

import npusim

from .cauchy import Cauchy
from . import constraints
from .folded import FoldedAtZero

__all__ = ["HalfCauchy"]


class HalfCauchy(FoldedAtZero):
    """The absolute value of a centred Cauchy."""

    arg_constraints = {"scale": constraints.positive}  # noqa: RUF012 - torch's class attribute
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return npusim.full(self._extended_shape(), math.inf, dtype=self.scale.dtype, device=self.scale.device)

    @property
    def variance(self):
        return self.base_dist.variance

    def _value(self, value):
        return npusim.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
