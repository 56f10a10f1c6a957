"""``ExponentialFamily``: distributions whose entropy follows from the log normalizer (Bregman divergence)."""
from __future__ import annotations

import npusim

from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base for exponential-family distributions ``p(x; theta) = exp(<t(x), theta> - F(theta) + k(x))``."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        # H = F(theta) - <theta, grad F(theta)> - E[k(x)]
        result = -self._mean_carrier_measure
        nparams = [p.detach().requires_grad_() for p in self._natural_params]
        lg_normal = self._log_normalizer(*nparams)
        gradients = npusim.autograd.grad(lg_normal.sum(), nparams, create_graph=True)
        result += lg_normal
        for np_, g in zip(nparams, gradients):
            result -= (np_ * g).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
