"""``ContinuousBernoulli(probs=None, logits=None, lims=(0.499, 0.501))``: the normalised Bernoulli density on
``[0, 1]`` (Loaiza-Ganem and Cunningham, 2019), sampled by inversion of a uniform. Near ``probs = 0.5`` (inside
``lims``) Taylor expansions replace the closed forms, which lose precision there."""
from __future__ import annotations

import math
from numbers import Number

import npusim
from npusim.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .exp_family import ExponentialFamily
from .utils import _EMPTY_SIZE, broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """Continuous Bernoulli distribution on ``[0, 1]``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}  # noqa: RUF012 - torch's
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            is_scalar = isinstance(probs, Number)
            (self.probs,) = broadcast_all(probs)
            # validated here, before clamping hides values outside [0, 1]
            if validate_args is not None and not self.arg_constraints["probs"].check(self.probs).all():
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            is_scalar = isinstance(logits, Number)
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        batch_shape = npusim.Size() if is_scalar else self._param.size()
        self._lims = lims
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = npusim.Size(batch_shape)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        super(ContinuousBernoulli, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        return npusim.max(npusim.le(self.probs, self._lims[0]), npusim.gt(self.probs, self._lims[1]))

    def _cut_probs(self):
        return npusim.where(self._outside_unstable_region(), self.probs, self._lims[0] * npusim.ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """The log normalising constant, with a Taylor expansion around 0.5."""
        cut_probs = self._cut_probs()
        cut_probs_below_half = npusim.where(npusim.le(cut_probs, 0.5), cut_probs, npusim.zeros_like(cut_probs))
        cut_probs_above_half = npusim.where(npusim.ge(cut_probs, 0.5), cut_probs, npusim.ones_like(cut_probs))
        log_norm = npusim.log(npusim.abs(npusim.log1p(-cut_probs) - npusim.log(cut_probs))) - npusim.where(
            npusim.le(cut_probs, 0.5), npusim.log1p(-2.0 * cut_probs_below_half),
            npusim.log(2.0 * cut_probs_above_half - 1.0))
        x = npusim.pow(self.probs - 0.5, 2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return npusim.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut_probs = self._cut_probs()
        mus = cut_probs / (2.0 * cut_probs - 1.0) + 1.0 / (npusim.log1p(-cut_probs) - npusim.log(cut_probs))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * npusim.pow(x, 2)) * x
        return npusim.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return npusim.sqrt(self.variance)

    @property
    def variance(self):
        cut_probs = self._cut_probs()
        variances = (cut_probs * (cut_probs - 1.0) / npusim.pow(1.0 - 2.0 * cut_probs, 2)
                     + 1.0 / npusim.pow(npusim.log1p(-cut_probs) - npusim.log(cut_probs), 2))
        x = npusim.pow(self.probs - 0.5, 2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return npusim.where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        u = npusim.rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device)
        with npusim.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        u = npusim.rand(tuple(shape), dtype=self.probs.dtype, device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut_probs = self._cut_probs()
        cdfs = ((npusim.pow(cut_probs, value) * npusim.pow(1.0 - cut_probs, 1.0 - value) + cut_probs - 1.0)
                / (2.0 * cut_probs - 1.0))
        unbounded_cdfs = npusim.where(self._outside_unstable_region(), cdfs, value)
        return npusim.where(npusim.le(value, 0.0), npusim.zeros_like(value),
                            npusim.where(npusim.ge(value, 1.0), npusim.ones_like(value), unbounded_cdfs))

    def icdf(self, value):
        cut_probs = self._cut_probs()
        return npusim.where(
            self._outside_unstable_region(),
            (npusim.log1p(-cut_probs + value * (2.0 * cut_probs - 1.0)) - npusim.log1p(-cut_probs))
            / (npusim.log(cut_probs) - npusim.log1p(-cut_probs)),
            value)

    def entropy(self):
        log_probs0 = npusim.log1p(-self.probs)
        log_probs1 = npusim.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normaliser in the natural parameter, with a Taylor expansion around 0."""
        out_unst_reg = npusim.max(npusim.le(x, self._lims[0] - 0.5), npusim.gt(x, self._lims[1] - 0.5))
        cut_nat_params = npusim.where(out_unst_reg, x, (self._lims[0] - 0.5) * npusim.ones_like(x))
        log_norm = npusim.log(npusim.abs(npusim.special.expm1(cut_nat_params))) - npusim.log(npusim.abs(cut_nat_params))
        taylor = 0.5 * x + npusim.pow(x, 2) / 24.0 - npusim.pow(x, 4) / 2880.0
        return npusim.where(out_unst_reg, log_norm, taylor)
