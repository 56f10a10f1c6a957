"""Array kernels of one-hot encoding and embedding lookups (forward, gradient, renorm), over NumPy or CuPy arrays."""
from __future__ import annotations

import math

import numpy as np

from .array_api import cast_like, namespace_of, opmath

_I64 = np.dtype(np.int64)


def one_hot(idx, num_classes):
    """int64 array of shape idx.shape + (num_classes,) with a 1 at each index."""
    xp = namespace_of(idx)
    return (idx[..., None] == xp.arange(num_classes, dtype=idx.dtype)).astype(_I64)


def embedding(weight, idx):
    """Rows of ``weight`` picked by ``idx`` (already range-checked)."""
    return weight[idx]


def embedding_backward(grad, idx, num_weights, padding_idx, scale_grad_by_freq):
    """The dense gradient of ``weight[idx]``: each row sums the gradients of its lookups.

    The ``padding_idx`` row gets nothing; with ``scale_grad_by_freq`` each
    lookup's gradient is divided by how often its index occurs in the batch.
    """
    xp = namespace_of(grad)
    flat = idx.reshape(-1)
    dim = grad.shape[-1]
    g = opmath(grad).reshape(-1, dim)
    if scale_grad_by_freq:
        if xp is np:
            counts = xp.bincount(flat, minlength=num_weights)
        else:   # CuPy's bincount reads the largest index back; a scatter-add does not
            counts = xp.zeros(num_weights, np.int32)
            xp.add.at(counts, flat, 1)
        g = g / counts[flat][:, None].astype(g.dtype)
    if 0 <= padding_idx < num_weights:
        keep = flat != padding_idx
        if xp is np:
            flat, g = flat[keep], g[keep]
        else:   # a boolean mask would read its count back: zero the padding rows' gradients instead
            g = xp.where(keep[:, None], g, 0).astype(g.dtype, copy=False)
    if xp is np:
        # one flat scatter-add of elements: NumPy's 1-D ufunc.at path, ~5x faster than adding whole rows at the
        # 2-D fallback path, with each row still summed in lookup order (the same arithmetic as torch's index_add)
        out = np.zeros(num_weights * dim, dtype=g.dtype)
        np.add.at(out, (flat.astype(_I64, copy=False)[:, None] * dim + np.arange(dim)).reshape(-1), g.reshape(-1))
        return cast_like(out.reshape(num_weights, dim), grad)
    out = xp.zeros((num_weights, dim), dtype=g.dtype)
    xp.add.at(out, flat, g)
    return cast_like(out, grad)


def embedding_renorm_(weight, idx, max_norm, norm_type):
    """Scale, in place, each looked-up row whose ``norm_type``-norm exceeds ``max_norm`` down to it."""
    xp = namespace_of(weight)
    rows = xp.unique(idx.reshape(-1))
    picked = opmath(weight[rows])
    if norm_type == math.inf:
        norms = xp.abs(picked).max(axis=1)
    elif norm_type == 0:
        norms = (picked != 0).sum(axis=1).astype(picked.dtype)
    else:
        norms = (xp.abs(picked) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(picked.dtype)
    weight[rows] = (picked * scale[:, None]).astype(weight.dtype)
    return weight
