"""Backward formulas of sort, topk and the other ops that pick values with their indices."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_indexing import wrap_dim, zeros_of

# --- sorting ----------------------------------------------------------------------------------------------

def _values_backward(ctx, g, indices, dim):
    """Gradient of values picked by ``indices`` along ``dim`` (sort, topk): scattered back to their places."""
    meta = ctx.self_meta
    if meta.dim() == 0:
        return aten.reshape.default(g, [])
    return aten.scatter.src(zeros_of(meta, g), wrap_dim(dim, meta.dim()), indices, g)


@derivative("sort", "sort.stable", save=("self_meta", "dim"), save_result=True, nondiff_outputs=(1,))
def sort_backward(ctx, g, g_indices=None):
    return _values_backward(ctx, g, ctx.result[1], ctx.dim)


@derivative("topk", save=("self_meta", "dim"), save_result=True, nondiff_outputs=(1,))
def topk_backward(ctx, g, g_indices=None):
    return _values_backward(ctx, g, ctx.result[1], ctx.dim)


@derivative("_unique2", "unique_dim", "unique_consecutive", nondiff_outputs=(1, 2))
def unique_backward(ctx, *grads):
    raise NotImplementedError(f"the derivative for '{type(ctx)._op_name}' is not implemented.")
