"""``GeneralizedPareto(loc, scale, concentration)``, sampled by inversion of a uniform."""
from __future__ import annotations

import math
from numbers import Number, Real

import npusim

from . import constraints
from .distribution import Distribution
from .utils import _EMPTY_SIZE, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Generalized Pareto distribution; ``concentration`` 0 is the exponential limit."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,  # noqa: RUF012 - torch's
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if isinstance(loc, Number) and isinstance(scale, Number) and isinstance(concentration, Number):
            batch_shape = npusim.Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, ("loc", "scale", "concentration"), _instance)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        u = npusim.rand(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _safe_concentration(self):
        """(concentration == 0 within isclose's tolerance, the concentration with 1 there) for the two branches."""
        eq_zero = npusim.isclose(self.concentration, npusim.zeros_like(self.concentration))
        return eq_zero, npusim.where(eq_zero, npusim.ones_like(self.concentration), self.concentration)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + npusim.ones_like(z)
        where_nonzero = npusim.where(y == 0, y, y * npusim.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - npusim.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -npusim.log1p(safe_conc * z) / safe_conc
        return npusim.where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return npusim.log1p(-npusim.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return npusim.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = npusim.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * npusim.expm1(-safe_conc * logu)
        where_zero = self.loc - self.scale * logu
        return npusim.where(eq_zero, where_zero, where_nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = npusim.where(valid, self.concentration, 0.5)
        result = self.loc + self.scale / (1 - safe_conc)
        return npusim.where(valid, result, math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = npusim.where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return npusim.where(valid, result, math.nan)

    def entropy(self):
        ans = npusim.log(self.scale) + self.concentration + 1
        return npusim.broadcast_to(ans, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = npusim.where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
