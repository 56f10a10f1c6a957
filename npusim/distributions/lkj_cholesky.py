"""``LKJCholesky(dim, concentration=1.0)``: the LKJ distribution over Cholesky factors of correlation matrices,
sampled by the onion method (Ghosh and Henderson, 2003): a Beta draw per row for its squared off-diagonal
norm and a direction uniform on the sphere from normals."""
from __future__ import annotations

import math

import npusim

from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import _EMPTY_SIZE, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution of lower Cholesky factors ``L`` of ``dim x dim`` correlation matrices, with density
    proportional to ``det(L L^T) ** (concentration - 1)``."""

    arg_constraints = {"concentration": constraints.positive}  # noqa: RUF012 - torch's class attribute
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = npusim.Size((dim, dim))
        # the Beta parameters of the onion method, one row at a time
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = npusim.arange(self.dim - 1, dtype=self.concentration.dtype, device=self.concentration.device)
        offset = npusim.cat([offset.new_zeros((1,)), offset])
        beta_conc1 = offset + 0.5
        beta_conc0 = marginal_conc.unsqueeze(-1) - 0.5 * offset
        self._beta = Beta(beta_conc1, beta_conc0)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = npusim.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        super(LKJCholesky, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=_EMPTY_SIZE):
        with npusim.no_grad():
            # the first row is (1, 0, ...): its Beta draw is discarded, as torch's (which keeps the stream aligned)
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u_normal = npusim.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype, device=y.device).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            first_row = npusim.arange(self.dim, device=y.device) == 0
            u_hypersphere = npusim.where(first_row.unsqueeze(-1), 0.0, u_hypersphere)  # row 0 of 0/0 is NaN
            w = npusim.sqrt(y) * u_hypersphere
            # the diagonal completes each row to unit norm
            eps = npusim.finfo(w.dtype).tiny
            diag_elems = npusim.clamp(1 - npusim.sum(w ** 2, dim=-1), min=eps).sqrt()
            return w + npusim.diag_embed(diag_elems)

    def log_prob(self, value):
        # the density of L (not of L L^T): prod_i L_ii ** (2 (concentration - 1) + dim - i) for i = 2..dim,
        # over the normaliser of Lewandowski, Kurowicka and Joe (2009)
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = npusim.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = npusim.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = npusim.lgamma(alpha) * dm1
        numerator = npusim.special.multigammaln(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        normalize_term = pi_constant + numerator - denominator
        return unnormalized_log_pdf - normalize_term
