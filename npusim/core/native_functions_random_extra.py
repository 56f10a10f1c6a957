"""Schemas of the rejection / inversion samplers (PyTorch 2.13's, so names and arguments match
``torch.ops.aten``): gamma, Dirichlet, Poisson and binomial draws."""

SCHEMAS = """
_standard_gamma(Tensor self, Generator? generator=None) -> Tensor
_sample_dirichlet(Tensor self, Generator? generator=None) -> Tensor
poisson(Tensor self, Generator? generator=None) -> Tensor
binomial(Tensor count, Tensor prob, Generator? generator=None) -> Tensor
"""
