"""torch.nn.functional's distances: ``cosine_similarity``, ``pairwise_distance`` and ``pdist`` (torch.pdist)."""
from __future__ import annotations

from ...api.misc import pdist
from ...core.dispatch.ops_namespace import aten
from .arguments import _check_tensor

__all__ = [
    "cosine_similarity", "pairwise_distance", "pdist",
]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    _check_tensor(x1, "cosine_similarity", "x1", 1)
    _check_tensor(x2, "cosine_similarity", "x2", 2)
    return aten.cosine_similarity.default(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of ``x1 - x2 + eps`` over the last dim (aten's definition; inputs broadcast)."""
    _check_tensor(x1, "pairwise_distance", "x1", 1)
    _check_tensor(x2, "pairwise_distance", "x2", 2)
    dim = max(x1.dim(), x2.dim()) - 1
    diff = (x1 - x2) + eps
    return aten.linalg_vector_norm.default(diff, p, [dim], keepdim)
