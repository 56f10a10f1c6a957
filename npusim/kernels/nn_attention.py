"""Attention's math backend over NumPy or CuPy arrays: ``softmax(q k^T * scale, masked) v`` in one kernel.

The values are those of npusim's composition of dispatched ops (``native/nn_attention.py``), step by step:
q and k each scaled by sqrt(scale), their product, the masked scores set to -inf, the softmax of each row, its
product with v. The kernel only saves arrays: the scores are computed into once and become the weights.
"""
from __future__ import annotations

import math

import numpy as np

from . import linalg_products as LP
from . import parallel as P
from . import reductions as R
from .array_api import namespace_of


def scaled_operands(q, k, scale):
    """q and k each times sqrt(scale) (torch scales both operands, for range)."""
    xp = namespace_of(q)
    root = math.sqrt(scale)
    if xp is np:   # large arrays split over the intra-op threads, as the separate ops split them
        return P.binary(np.multiply, q, root), P.binary(np.multiply, k, root)
    return xp.multiply(q, root), xp.multiply(k, root)


def above_diagonal(like, length, source):
    """The causal mask's masked-out part: True above the diagonal of a (length, source) array."""
    xp = namespace_of(like)
    return xp.triu(xp.ones((length, source), dtype=bool), 1)


def attention_math(q, k, v, masked_out, bias, scale):
    """(output, weights) of attention, the weights a safe softmax (a row with every score -inf weighs nothing).
    ``masked_out``: a bool array broadcastable to the scores, True where a score is set to -inf (None: none);
    ``bias``: an array added to the scores (None: none)."""
    xp = namespace_of(q)
    qs, ks = scaled_operands(q, k, scale)
    scores = LP.matmul(qs, xp.swapaxes(ks, -2, -1))
    for extra in (masked_out, bias):
        if extra is not None and np.broadcast_shapes(extra.shape, scores.shape) != scores.shape:
            shape = np.broadcast_shapes(extra.shape, scores.shape)
            scores = xp.array(xp.broadcast_to(scores, shape), copy=True)
    if masked_out is not None:
        xp.copyto(scores, -math.inf, where=masked_out)
    if bias is not None:
        xp.add(scores, bias, out=scores, casting="unsafe")
    weights = R.softmax(scores, scores.ndim - 1, scores.dtype, safe=True, overwrite=True)
    return LP.matmul(weights, v), weights
