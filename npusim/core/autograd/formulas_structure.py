"""Backward formulas of the structure ops: joins (cat, stack) and layout builders (flip, roll, tril / triu,
repeat, tile, repeat_interleave).

As everywhere, the formulas are written with dispatched ops so that they can be differentiated again.
"""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative
from .formulas_elementwise import as_input
from .formulas_indexing import index_along, wrap_dim, zeros_of

# --- joining ---------------------------------------------------------------------------------------------------

@derivative("cat", inputs=("tensors",), save=("tensors_meta", "dim"))
def cat_backward(ctx, g):
    ts = ctx.tensors_meta
    dim = ctx.dim
    out, start = [], 0
    # torch skips 1-D empty tensors in cat, whatever their dims
    ref = next((t for t in ts if t.dim() > 0 and not (t.dim() == 1 and t.shape[0] == 0)), ts[0])
    d = dim % max(ref.dim(), 1)
    for t, need in zip(ts, ctx.needs_input_grad[0]):
        if t.dim() == 1 and t.shape[0] == 0 and ref.dim() != 1:
            out.append(aten.zeros.default([0], dtype=t.dtype, device=t.device) if need else None)
            continue
        size = t.shape[d]
        out.append(as_input(aten.narrow.default(g, d, start, size), t) if need else None)
        start += size
    return (out,)


@derivative("stack", inputs=("tensors",), save=("tensors_meta", "dim"))
def stack_backward(ctx, g):
    ts = ctx.tensors_meta
    dim = ctx.dim % (ts[0].dim() + 1)
    return ([as_input(aten.select.int(g, dim, i), t) if need else None
             for i, (t, need) in enumerate(zip(ts, ctx.needs_input_grad[0]))],)


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
    d = wrap_dim(ctx.dim, len(shape))
    split = shape[:d] + [shape[d], r] + shape[d + 1:]
    return aten.sum.dim_IntList(aten.reshape.default(g, split), [d + 1], False)


@derivative("repeat_interleave.self_Tensor", save=("self_meta", "repeats", "dim"))
def repeat_interleave_tensor_backward(ctx, g):
    meta, repeats = ctx.self_meta, ctx.repeats
    shape = list(meta.shape)
    numel = meta.numel() if ctx.dim is None else (shape[wrap_dim(ctx.dim, len(shape))] if shape else 1)
    if repeats.numel() == 1 and numel != 1:
        repeats = aten.expand.default(aten.reshape.default(repeats, [1]), [numel])
    # position i of the input was copied repeats[i] times: gather its copies back with an index_put
    source = aten.repeat_interleave.Tensor(aten.reshape.default(repeats, [-1]))
    if ctx.dim is None or not shape:
        flat = aten.index_put.default(aten.zeros.default([max(numel, 1) if not shape else numel], dtype=g.dtype,
                                                         device=g.device), [source], g, True)
        return aten.reshape.default(flat, shape)
    d = wrap_dim(ctx.dim, len(shape))
    return aten.index_put.default(zeros_of(meta, g), index_along(d, source), g, True)
