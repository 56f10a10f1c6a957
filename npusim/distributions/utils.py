"""Helpers shared by the distributions (as ``torch.distributions.utils``)."""
from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import numpy as np

import npusim
import npusim.nn.functional as F

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs", "probs_to_logits", "tril_matrix_to_vec",
           "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant
_EMPTY_SIZE = npusim.Size()  # the default sample_shape (immutable, so a safe default)


def broadcast_all(*values):
    """Broadcasts tensors and numbers together; numbers become tensors of the first tensor's dtype/device."""
    if not all(isinstance(v, (npusim.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, npusim.Tensor) for v in values):
        options = {"dtype": npusim.get_default_dtype()}
        for value in values:
            if isinstance(value, npusim.Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = [v if isinstance(v, npusim.Tensor) else npusim.tensor(v, **options) for v in values]
    return npusim.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    # npusim's randn: the same Philox stream on every device
    return npusim.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim):
    """Sums out ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return npusim.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamps probabilities to ``[eps, 1 - eps]`` of their dtype."""
    eps = npusim.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return npusim.log(ps_clamped) - npusim.log1p(-ps_clamped)
    return npusim.log(ps_clamped)


def _tril_flat_positions(n, diag):
    """Flat positions (row-major) of the entries of an ``n x n`` matrix on or below diagonal ``diag``."""
    rows, cols = np.nonzero(np.arange(n) < np.arange(n).reshape(-1, 1) + (diag + 1))
    return rows * n + cols


def tril_matrix_to_vec(mat, diag=0):
    """The entries on or below diagonal ``diag`` of (a batch of) square matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    index = npusim.tensor(_tril_flat_positions(n, diag), dtype=npusim.long, device=mat.device)
    return mat.reshape(mat.shape[:-2] + (n * n,)).index_select(-1, index)


def vec_to_tril_matrix(vec, diag=0):
    """(A batch of) ``D x D`` lower-triangular matrices filled in row order from vectors; a gather from the
    vector with a zero appended (instead of torch's masked assignment), so autograd needs no in-place op."""
    # +ve root of D**2 + (1+2*diag)*D - |diag| * (diag+1) - 2*vec.shape[-1] = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = npusim.finfo(vec.dtype).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         + "the lower triangular part of a square D x D matrix.")
    n = round(n)
    source = np.full(n * n, vec.shape[-1])  # the appended zero
    source[_tril_flat_positions(n, diag)] = np.arange(vec.shape[-1])
    padded = npusim.cat([vec, vec.new_zeros(vec.shape[:-1] + (1,))], dim=-1)
    index = npusim.tensor(source, dtype=npusim.long, device=vec.device)
    return padded.index_select(-1, index).reshape(vec.shape[:-1] + (n, n))


class lazy_property:
    """A non-data descriptor computing the value on first access, then caching it on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with npusim.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)
