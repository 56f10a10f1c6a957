"""Backward formulas of indexing, scattering, sorting and rearranging ops.

As everywhere, the formulas are written with dispatched ops so that they can be
differentiated again (gather's backward is a scatter_add, whose backward is a
gather, and so on).
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import sum_to

_add = aten.add.Tensor


def _zeros(meta, g):
    """Zeros with the shape of a saved TensorMeta, in the gradient's dtype and device."""
    return aten.zeros.default(list(meta.shape), dtype=g.dtype, device=g.device)


def _wrap(dim, ndim):
    n = max(ndim, 1)
    return dim % n


def _pad_to(g, meta):
    """``g`` placed at the start of zeros of ``meta``'s shape (a src larger than its index)."""
    if tuple(g.shape) == tuple(meta.shape):
        return g
    z = _zeros(meta, g)
    region = z
    for d, n in enumerate(g.shape):
        region = aten.narrow.default(region, d, 0, n)
    aten.copy_.default(region, g)
    return z


def _along(dim, index):
    """An index list that picks ``index`` along ``dim`` (the dims before it taken whole)."""
    return [None] * dim + [aten.reshape.default(index, [-1])]


# --- gather / scatter ------------------------------------------------------------------------------------

@derivative("gather", save=("self_meta", "dim", "index"))
def gather_backward(ctx, g):
    return aten.scatter_add.default(_zeros(ctx.self_meta, g), ctx.dim, ctx.index, g)


@derivative("scatter.src", "scatter_.src", inputs=("self", "src"), save=("dim", "index", "src_meta"))
def scatter_src_backward(ctx, g):
    n = ctx.needs_input_grad
    return (aten.scatter.value(g, ctx.dim, ctx.index, 0) if n[0] else None,
            _pad_to(aten.gather.default(g, ctx.dim, ctx.index), ctx.src_meta) if n[1] else None)


@derivative("scatter.value", "scatter_.value", save=("dim", "index"))
def scatter_value_backward(ctx, g):
    return aten.scatter.value(g, ctx.dim, ctx.index, 0)


@derivative("scatter_add", "scatter_add_", inputs=("self", "src"), save=("dim", "index", "src_meta"))
def scatter_add_backward(ctx, g):
    n = ctx.needs_input_grad
    return (g if n[0] else None,
            _pad_to(aten.gather.default(g, ctx.dim, ctx.index), ctx.src_meta) if n[1] else None)


# --- index_select / masked_select / advanced indexing -------------------------------------------------------

@derivative("index_select", save=("self_meta", "dim", "index"))
def index_select_backward(ctx, g):
    meta = ctx.self_meta
    if meta.dim() == 0:
        return aten.reshape.default(aten.sum.default(g), [])
    dim = _wrap(ctx.dim, meta.dim())
    return aten.index_put.default(_zeros(meta, g), _along(dim, ctx.index), g, True)


@derivative("masked_select", save=("self_meta", "mask"))
def masked_select_backward(ctx, g):
    meta, mask = ctx.self_meta, ctx.mask
    shape = _broadcast(meta.shape, mask.shape)
    z = aten.zeros.default(list(shape), dtype=g.dtype, device=g.device)
    r = aten.index_put.default(z, [aten.expand.default(mask, list(shape))], g, False)
    return sum_to(r, meta.shape)


def _broadcast(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(y if x == 1 else x for x, y in zip(a, b))


@derivative("index.Tensor", save=("self_meta", "indices"))
def index_backward(ctx, g):
    return aten.index_put.default(_zeros(ctx.self_meta, g), ctx.indices, g, True)


@derivative("index_put", "index_put_", inputs=("self", "values"), save=("indices", "values_meta", "accumulate"))
def index_put_backward(ctx, g):
    n = ctx.needs_input_grad
    gs = gv = None
    if n[0]:
        if ctx.accumulate:
            gs = g
        else:   # the overwritten places take no gradient back to self
            gs = aten.index_put.default(g, ctx.indices, aten.zeros.default([], dtype=g.dtype, device=g.device),
                                        False)
    if n[1]:
        gv = sum_to(aten.index.Tensor(g, ctx.indices), ctx.values_meta.shape)
    return gs, gv


# --- sorting ----------------------------------------------------------------------------------------------

def _values_backward(ctx, g, indices, dim):
    """Gradient of values picked by ``indices`` along ``dim`` (sort, topk): scattered back to their places."""
    meta = ctx.self_meta
    if meta.dim() == 0:
        return aten.reshape.default(g, [])
    return aten.scatter.src(_zeros(meta, g), _wrap(dim, meta.dim()), indices, g)


@derivative("sort", "sort.stable", save=("self_meta", "dim"), save_result=True, nondiff_outputs=(1,))
def sort_backward(ctx, g, g_indices=None):
    return _values_backward(ctx, g, ctx.result[1], ctx.dim)


@derivative("topk", save=("self_meta", "dim"), save_result=True, nondiff_outputs=(1,))
def topk_backward(ctx, g, g_indices=None):
    return _values_backward(ctx, g, ctx.result[1], ctx.dim)


@derivative("_unique2", "unique_dim", "unique_consecutive", nondiff_outputs=(1, 2))
def unique_backward(ctx, *grads):
    raise NotImplementedError(f"the derivative for '{type(ctx)._op_name}' is not implemented.")


# --- rearranging --------------------------------------------------------------------------------------------

@derivative("flip", save=("dims",))
def flip_backward(ctx, g):
    return aten.flip.default(g, ctx.dims)


@derivative("roll", save=("shifts", "dims"))
def roll_backward(ctx, g):
    shifts = ctx.shifts
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = ctx.dims
    dims = [dims] if isinstance(dims, int) else list(dims)
    return aten.roll.default(g, [-s for s in shifts], dims)


@derivative("tril", "tril_", save=("diagonal",))
def tril_backward(ctx, g):
    return aten.tril.default(g, ctx.diagonal)


@derivative("triu", "triu_", save=("diagonal",))
def triu_backward(ctx, g):
    return aten.triu.default(g, ctx.diagonal)


def _repeat_backward(g, shape, repeats):
    """Sum the tiles of a repeated tensor back onto one tile of ``shape``."""
    repeats = list(repeats)
    padded = [1] * (len(repeats) - len(shape)) + list(shape)
    interleaved = []
    for r, s in zip(repeats, padded):
        interleaved += [r, s]
    if not interleaved:
        return g
    tiles = aten.reshape.default(g, interleaved)
    summed = aten.sum.dim_IntList(tiles, list(range(0, len(interleaved), 2)), False)
    return aten.reshape.default(summed, list(shape))


@derivative("repeat", save=("self_meta", "repeats"))
def repeat_backward(ctx, g):
    return _repeat_backward(g, ctx.self_meta.shape, ctx.repeats)


@derivative("tile", save=("self_meta", "dims"))
def tile_backward(ctx, g):
    shape = ctx.self_meta.shape
    dims = list(ctx.dims)
    reps = [1] * (len(shape) - len(dims)) + dims
    return _repeat_backward(g, shape, reps)


@derivative("repeat_interleave.self_int", save=("self_meta", "repeats", "dim"))
def repeat_interleave_int_backward(ctx, g):
    meta, r = ctx.self_meta, ctx.repeats
    shape = list(meta.shape)
    if ctx.dim is None:
        return aten.reshape.default(aten.sum.dim_IntList(aten.reshape.default(g, [meta.numel(), r]), [1], False),
                                    shape)
    if not shape:
        return aten.reshape.default(aten.sum.default(g), [])
    d = _wrap(ctx.dim, len(shape))
    split = shape[:d] + [shape[d], r] + shape[d + 1:]
    return aten.sum.dim_IntList(aten.reshape.default(g, split), [d + 1], False)


@derivative("repeat_interleave.self_Tensor", save=("self_meta", "repeats", "dim"))
def repeat_interleave_tensor_backward(ctx, g):
    meta, repeats = ctx.self_meta, ctx.repeats
    shape = list(meta.shape)
    numel = meta.numel() if ctx.dim is None else (shape[_wrap(ctx.dim, len(shape))] if shape else 1)
    if repeats.numel() == 1 and numel != 1:
        repeats = aten.expand.default(aten.reshape.default(repeats, [1]), [numel])
    # position i of the input was copied repeats[i] times: gather its copies back with an index_put
    source = aten.repeat_interleave.Tensor(aten.reshape.default(repeats, [-1]))
    if ctx.dim is None or not shape:
        flat = aten.index_put.default(aten.zeros.default([max(numel, 1) if not shape else numel], dtype=g.dtype,
                                                         device=g.device), [source], g, True)
        return aten.reshape.default(flat, shape)
    d = _wrap(ctx.dim, len(shape))
    return aten.index_put.default(_zeros(meta, g), _along(d, source), g, True)
