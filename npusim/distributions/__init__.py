"""Probability distributions (a subset of ``torch.distributions``), built from npusim tensor ops so that
``log_prob`` and ``rsample`` are differentiable, and sampled from npusim's Philox streams so that a seed
gives the same samples on every device.

Not available: ``Poisson.sample`` (npusim has no Poisson sampler); transforms beyond ``ExpTransform``,
``AffineTransform`` and their compositions/inverses."""
from __future__ import annotations

from . import constraints, transforms
from .bernoulli import Bernoulli
from .categorical import Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gumbel import Gumbel
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ComposeTransform, ExpTransform, Transform
from .uniform import Uniform

__all__ = [
    "AffineTransform", "Bernoulli", "Categorical", "ComposeTransform", "Distribution", "ExpTransform", "Exponential",
    "ExponentialFamily", "Gumbel", "Independent", "Laplace", "LogNormal", "MultivariateNormal", "Normal",
    "OneHotCategorical", "Poisson", "Transform", "TransformedDistribution", "Uniform", "constraints",
    "kl_divergence", "register_kl", "transforms",
]
