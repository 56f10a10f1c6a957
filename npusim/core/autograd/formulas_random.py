"""Backward formulas of the random draws: zero everywhere (a draw does not depend on its input's values),
with the parameters' shapes for the draws that take tensors (bernoulli's p, normal's mean and std)."""
from __future__ import annotations

from ..dispatch.ops_namespace import aten
from .derivatives import derivative


def _zeros(g):
    return aten.zeros_like.default(g)


@derivative("uniform_", "normal_", "random_", "random_.from", "random_.to", "exponential_", "bernoulli_.float",
            "cauchy_", "log_normal_", "geometric_")
def random_fill_backward(ctx, g):
    return _zeros(g)


@derivative("bernoulli_.Tensor", inputs=("self", "p"), save=("p_meta",))
def bernoulli_tensor_inplace_backward(ctx, g):
    n = ctx.needs_input_grad
    meta = ctx.p_meta
    return (_zeros(g) if n[0] else None,
            aten.zeros.default(list(meta.shape), dtype=meta.dtype, device=meta.device) if n[1] else None)


@derivative("bernoulli", inputs=("self",))
def bernoulli_backward(ctx, g):
    return _zeros(g)


@derivative("normal.Tensor_float", inputs=("mean",))
def normal_mean_backward(ctx, g):
    return _zeros(g)


@derivative("normal.float_Tensor", inputs=("std",))
def normal_std_backward(ctx, g):
    return _zeros(g)


@derivative("normal.Tensor_Tensor", inputs=("mean", "std"), save=("mean_meta", "std_meta"))
def normal_tensors_backward(ctx, g):
    n = ctx.needs_input_grad
    return tuple(aten.zeros.default(list(m.shape), dtype=g.dtype, device=g.device) if need else None
                 for m, need in zip((ctx.mean_meta, ctx.std_meta), n))


@derivative("native_dropout", inputs=("input",), save=("p", "train"), save_result=True, nondiff_outputs=(1,),
            name="NativeDropoutBackward0")
def native_dropout_backward(ctx, g=None, g_mask=None):
    # torch's formula: the mask times 1 / (1 - p) when train is True, times 1 when train is None or False
    mask = ctx._saved["result"][1].unpack(ctx)
    p = ctx.p
    scale = (0.0 if p == 1 else 1.0 / (1.0 - p)) if ctx.train else 1.0
    return aten.mul.Tensor(aten.mul.Tensor(g, mask), scale)
