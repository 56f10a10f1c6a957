"""Probability distributions (a subset of ``torch.distributions``), built from npusim tensor ops so that
``log_prob`` and ``rsample`` are differentiable, and sampled from npusim's Philox streams so that a seed
gives the same samples on every device.

Gamma-based samples (``Gamma``, ``Chi2``, ``Beta``, ``Dirichlet``, ``StudentT``) have no gradient with respect to
the concentration (torch's implicit reparameterisation is not implemented); ``Gamma.cdf`` is not available.
Not available: transforms beyond ``ExpTransform``, ``AffineTransform`` and their compositions/inverses."""
from __future__ import annotations

from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .chi2 import Chi2
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .poisson import Poisson
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ComposeTransform, ExpTransform, Transform
from .uniform import Uniform

__all__ = [
    "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Chi2", "ComposeTransform", "Dirichlet",
    "Distribution", "ExpTransform", "Exponential", "ExponentialFamily", "Gamma", "Gumbel", "Independent", "Laplace", "LogNormal", "MultivariateNormal", "Normal",
    "OneHotCategorical", "Poisson", "StudentT", "Transform", "TransformedDistribution", "Uniform", "constraints",
    "kl_divergence", "register_kl", "transforms",
]
