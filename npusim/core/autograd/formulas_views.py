"""Backward formulas of the view ops (view, reshape, permute, select, slice, diagonal, as_strided, the splits...)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import sum_to


# --- views and shape -------------------------------------------------------------------------------------------

@derivative("view", "squeeze", "squeeze.dim", "squeeze.dims", save=("self_meta",))
def reshape_backward(ctx, g):
    return aten.reshape.default(g, list(ctx.self_meta.shape))


# torch's reshape, flatten and unflatten are views recorded as ViewBackward0
derivative("reshape", "flatten.using_ints", "unflatten.int", save=("self_meta",), name="ViewBackward0")(
    reshape_backward)


@derivative("view.dtype", save=("self_meta",))
def view_dtype_backward(ctx, g):
    return aten.view.dtype(g, ctx.self_meta.dtype)


@derivative("unsqueeze", save=("dim",))
def unsqueeze_backward(ctx, g):
    return aten.squeeze.dim(g, ctx.dim)


@derivative("permute", save=("dims",))
def permute_backward(ctx, g):
    dims = [d % g.dim() for d in ctx.dims]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return aten.permute.default(g, inverse)


@derivative("transpose.int", save=("dim0", "dim1"))
def transpose_backward(ctx, g):
    return aten.transpose.int(g, ctx.dim0, ctx.dim1)


@derivative("t")
def t_backward(ctx, g):
    return aten.t.default(g)


@derivative("expand", save=("self_meta",))
def expand_backward(ctx, g):
    return sum_to(g, ctx.self_meta.shape)


@derivative("alias", "contiguous")
def identity_backward(ctx, g):
    return g


def _embed(g, meta, place):
    """Gradient of a view: zeros of the input's shape with ``place(zeros)`` (a view) holding g.

    The copy into the view is an in-place op on a view, so with create_graph it is recorded
    (CopySlices) and the result is differentiable again.
    """
    z = aten.zeros.default(list(meta.shape), dtype=g.dtype, device=g.device)
    aten.copy_.default(place(z), g)
    return z


@derivative("select.int", save=("self_meta", "dim", "index"))
def select_backward(ctx, g):
    return _embed(g, ctx.self_meta, lambda z: aten.select.int(z, ctx.dim, ctx.index))


@derivative("slice.Tensor", save=("self_meta", "dim", "start", "end", "step"))
def slice_backward(ctx, g):
    return _embed(g, ctx.self_meta, lambda z: aten.slice.Tensor(z, ctx.dim, ctx.start, ctx.end, ctx.step))


@derivative("narrow", save=("self_meta", "dim", "start", "length"))
def narrow_backward(ctx, g):
    return _embed(g, ctx.self_meta, lambda z: aten.narrow.default(z, ctx.dim, ctx.start, ctx.length))


@derivative("diagonal", save=("self_meta", "offset", "dim1", "dim2"))
def diagonal_backward(ctx, g):
    return _embed(g, ctx.self_meta, lambda z: aten.diagonal.default(z, ctx.offset, ctx.dim1, ctx.dim2))


@derivative("as_strided", save=("self_geometry", "size", "stride", "storage_offset"))
def as_strided_backward(ctx, g):
    x = ctx.self_geometry
    base_offset = x.storage_offset
    offset = ctx.storage_offset if ctx.storage_offset is not None else base_offset
    n = x.storage_numel
    # storage positions read by the output and by the input: the gradient goes storage-wise between them
    positions = aten.arange.default(n, device=g.device)
    out_pos = aten.reshape.default(aten.as_strided.default(positions, list(ctx.size), list(ctx.stride), offset),
                                   [-1])
    in_pos = aten.as_strided.default(positions, list(x.shape), list(x.strides), base_offset)
    z = aten.zeros.default([n], dtype=g.dtype, device=g.device)
    per_storage = aten.index_put.default(z, [out_pos], aten.reshape.default(g, [-1]), True)
    return aten.index.Tensor(per_storage, [in_pos])


def _cat_grads(grads, pieces, dim):
    return [aten.zeros_like.default(p) if gr is None else gr for gr, p in zip(grads, pieces)]


@derivative("unbind.int", save=("self_meta", "dim"))
def unbind_backward(ctx, *grads):
    x = ctx.self_meta
    dim = ctx.dim % max(x.dim(), 1)
    n = x.shape[dim] if x.dim() else 1
    part = list(x.shape[:dim]) + list(x.shape[dim + 1:])
    ref = next(gr for gr in grads if gr is not None)
    grads = list(grads) + [None] * (n - len(grads))
    parts = [aten.zeros.default(part, dtype=ref.dtype, device=ref.device) if gr is None else gr for gr in grads]
    return aten.stack.default(parts, dim)


@derivative("split.Tensor", "split_with_sizes", save=("self_meta", "dim"), save_result=True)
def split_backward(ctx, *grads):
    x = ctx.self_meta
    dim = ctx.dim % max(x.dim(), 1)
    pieces = ctx.result
    grads = list(grads) + [None] * (len(pieces) - len(grads))
    return aten.cat.default(_cat_grads(grads, pieces, dim), dim)


@derivative("clone")
def clone_backward(ctx, g):
    return g


# torch's chunk is a split: its outputs are SplitBackward0's
derivative("chunk", save=("self_meta", "dim"), save_result=True, name="SplitBackward0")(split_backward)

# the unsafe splits are splits without view tracking: their outputs are UnsafeSplitBackward0's
derivative("unsafe_split.Tensor", save=("self_meta", "dim"), save_result=True,
           name="UnsafeSplitBackward0")(split_backward)
derivative("unsafe_chunk", save=("self_meta", "dim"), save_result=True, name="UnsafeSplitBackward0")(split_backward)
