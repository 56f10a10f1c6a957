"""``Binomial(total_count=1, probs=None, logits=None)``, sampled through ``npusim.binomial``."""
from __future__ import annotations

import npusim

from . import constraints
from .trials import TrialsDistribution
from .utils import _EMPTY_SIZE

__all__ = ["Binomial"]


def _clamp_by_zero(x):
    # clamp(min=0) with gradient 1/2 at 0, as torch's
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(TrialsDistribution):
    """Binomial distribution of ``total_count`` trials with success probability ``probs`` (or ``logits``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,  # noqa: RUF012 - torch's class attribute
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        super().__init__(total_count, probs=probs, logits=logits, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_trials(Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=_EMPTY_SIZE):
        shape = self._extended_shape(sample_shape)
        with npusim.no_grad():
            return npusim.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = npusim.lgamma(self.total_count + 1)
        log_factorial_k = npusim.lgamma(value + 1)
        log_factorial_nmk = npusim.lgamma(self.total_count - value + 1)
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * npusim.log1p(npusim.exp(-npusim.abs(self.logits))) - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(npusim.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = npusim.arange(1 + total_count, dtype=self._param.dtype, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
