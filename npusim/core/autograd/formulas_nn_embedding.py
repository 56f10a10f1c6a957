"""Backward formulas of the embedding lookup and of its backward (for double backward)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative


@derivative("embedding", inputs=("weight",), save=("weight", "indices", "padding_idx", "scale_grad_by_freq"))
def embedding_backward(ctx, g):
    return aten.embedding_dense_backward.default(g, ctx.indices, ctx.weight.shape[0], ctx.padding_idx,
                                                 ctx.scale_grad_by_freq)


@derivative("embedding_dense_backward", inputs=("grad_output",),
            save=("indices", "num_weights", "padding_idx", "scale_grad_by_freq"))
def embedding_double_backward(ctx, gg):
    idx = ctx.indices
    r = aten.embedding.default(gg, idx)
    if ctx.scale_grad_by_freq:
        ones = aten.ones.default(list(idx.shape) + [1], dtype=gg.dtype, device=gg.device)
        counts = aten.embedding_dense_backward.default(ones, idx, ctx.num_weights, -1, False)
        r = aten.div.Tensor(r, aten.embedding.default(counts, idx))
    if ctx.padding_idx >= 0:
        r = aten.masked_fill.Scalar(r, aten.unsqueeze.default(aten.eq.Scalar(idx, ctx.padding_idx), -1), 0.0)
    return r
