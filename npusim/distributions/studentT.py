"""``StudentT(df, loc=0, scale=1)``: a normal over the square root of a scaled Chi2 draw (as torch)."""
from __future__ import annotations

import math

import npusim

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _EMPTY_SIZE, _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,  # noqa: RUF012
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    @property
    def mean(self):
        return npusim.where(self.df <= 1, math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        m = npusim.where(self.df > 2, finite, self.df)
        m = npusim.where((self.df <= 2) & (self.df > 1), math.inf, m)
        return npusim.where(self.df <= 1, math.nan, m)

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        batch_shape = self.df.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(StudentT, batch_shape, ("df", "loc", "scale", "_chi2"), _instance)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        y = x * npusim.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + npusim.lgamma(0.5 * self.df)
             - npusim.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * npusim.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = npusim.lgamma(0.5 * self.df) + math.lgamma(0.5) - npusim.lgamma(0.5 * (self.df + 1))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (npusim.digamma(0.5 * (self.df + 1)) - npusim.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
