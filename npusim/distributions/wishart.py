"""``Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None)``, sampled by Bartlett's
decomposition (chi-square diagonal, standard normal lower triangle).

Deviation from torch: torch 2.13's ``rsample`` tests its samples for singularity with the sign reversed, so it
warns "Singular sample detected" and redraws every valid sample once; npusim redraws only singular samples
(so its stream advances less). Differentiable in the scale only (the chi-square draws come from gammas)."""
from __future__ import annotations

import math
import warnings
from numbers import Number

import npusim

from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import _EMPTY_SIZE, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_log_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma ``sum_i digamma(x - i / 2)``, i < p."""
    if not x.gt((p - 1) / 2).all():
        raise AssertionError("Wrong domain for multivariate digamma function.")
    return npusim.digamma(x.unsqueeze(-1) - npusim.arange(p, dtype=x.dtype, device=x.device).div(2).expand(
        x.shape + (-1,))).sum(-1)


def _clamp_above_eps(x):
    return x.clamp(min=npusim.finfo(x.dtype).eps)


class Wishart(ExponentialFamily):
    """Wishart distribution over positive-definite matrices, parameterised by ``df`` and exactly one of
    covariance, precision or scale_tril."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = npusim.Size(param.shape[:-2])
            self.df = npusim.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = npusim.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        event_shape = param.shape[-2:]
        if self.df.le(event_shape[-1] - 1).any():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {event_shape[-1] - 1}.")
        if scale_tril is not None:
            self.scale_tril = param.expand(batch_shape + (-1, -1))
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(batch_shape + (-1, -1))
        elif precision_matrix is not None:
            self.precision_matrix = param.expand(batch_shape + (-1, -1))
        if self.df.lt(event_shape[-1]).any():
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for "
                          "ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = npusim.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2(self.df, batch_shape)

    def _bartlett_chi2(self, df, batch_shape):
        # the i-th diagonal entry of Bartlett's factor is sqrt(chi2(df - i))
        tril = self._unbroadcasted_scale_tril
        return Chi2(df=df.unsqueeze(-1) - npusim.arange(self._event_shape[-1], dtype=tril.dtype, device=tril.device)
                    .expand(batch_shape + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = npusim.Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        if "covariance_matrix" in self.__dict__:
            new.covariance_matrix = self.covariance_matrix.expand(cov_shape)
        if "scale_tril" in self.__dict__:
            new.scale_tril = self.scale_tril.expand(cov_shape)
        if "precision_matrix" in self.__dict__:
            new.precision_matrix = self.precision_matrix.expand(cov_shape)
        new._event_shape = self._event_shape
        new._dist_chi2 = new._bartlett_chi2(new.df, batch_shape)
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        return (self._unbroadcasted_scale_tril @ self._unbroadcasted_scale_tril.transpose(-2, -1)).expand(
            self._batch_shape + self._event_shape)

    @lazy_property
    def precision_matrix(self):
        tril = self._unbroadcasted_scale_tril
        identity = npusim.eye(self._event_shape[-1], device=tril.device, dtype=tril.dtype)
        return npusim.cholesky_solve(identity, tril).expand(self._batch_shape + self._event_shape)

    @property
    def mean(self):
        return self.df.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = npusim.where(factor <= 0, math.nan, factor)  # no mode for df <= p + 1
        return factor.view(self._batch_shape + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self.df.view(self._batch_shape + (1, 1)) * (V.pow(2) + npusim.einsum("...i,...j->...ij", diag_V, diag_V))

    def _bartlett_sampling(self, sample_shape=_EMPTY_SIZE):
        p = self._event_shape[-1]
        # the chi-square diagonal is drawn first, then the normals below it (torch's order on the stream)
        diag = _clamp_above_eps(self._dist_chi2.rsample(sample_shape).sqrt())
        below = npusim.randn(tuple(npusim.Size(sample_shape) + self._batch_shape) + (p * (p - 1) // 2,),
                             dtype=diag.dtype, device=diag.device)
        noise = diag.diag_embed(dim1=-2, dim2=-1) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=_EMPTY_SIZE, max_try_correction=None):
        """Bartlett samples; singular ones (possible when ``df < p``) are redrawn up to ``max_try_correction``
        (10) times."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = npusim.Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if self._batch_shape:
            is_singular = is_singular.amax(self._batch_dims)
        if is_singular.any():
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                sample_new = self._bartlett_sampling(is_singular[is_singular].shape)
                sample[is_singular] = sample_new
                is_singular_new = ~self.support.check(sample_new)
                if self._batch_shape:
                    is_singular_new = is_singular_new.amax(self._batch_dims)
                is_singular[is_singular.clone()] = is_singular_new
                if not is_singular.any():
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        tril = self._unbroadcasted_scale_tril
        return (-nu * (p * _log_2 / 2 + tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - npusim.special.multigammaln(nu / 2, p=p)
                + (nu - p - 1) / 2 * npusim.linalg.slogdet(value).logabsdet
                - npusim.cholesky_solve(value, tril).diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        tril = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _log_2 / 2 + tril.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + npusim.special.multigammaln(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-npusim.linalg.slogdet(-2 * x).logabsdet + _log_2 * p)
                + npusim.special.multigammaln(y + (p + 1) / 2, p=p))
