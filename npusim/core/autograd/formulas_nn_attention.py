"""Backward formulas of attention: ``_safe_softmax`` (softmax's own: a zeroed row's result is 0, so it sends
nothing back, as torch's derivative of that op), torch's ``_softmax_backward_data`` and the math attention op
``_scaled_dot_product_attention_math``.

Attention's gradient is the one its composition of ops (q and k scaled, their product, the mask, the safe
softmax, the product with v) would send back, op for op, so the values are the same; it runs as one node. Under
``create_graph`` every step is a differentiable op; otherwise softmax's gradient is the one fused op and the
masked scores' gradient is zeroed in place.
"""
from __future__ import annotations

import math

from ..c10 import dtype as D
from ..dispatch.ops_namespace import aten
from . import grad_mode
from .derivatives import derivative
from .formulas_elementwise import sum_to
from .formulas_reductions import row_sums as _row_sums
from .formulas_reductions import softmax_backward, softmax_input_grad as _softmax_input_grad

_mul, _sub, _add = aten.mul.Tensor, aten.sub.Tensor, aten.add.Tensor


def _mT(t):
    return aten.transpose.int(t, -2, -1)


@derivative("_safe_softmax", save=("dim", "self_meta"), save_result=True, name="SafeSoftmaxBackward0")
def safe_softmax_backward(ctx, g):
    return softmax_backward(ctx, g)


@derivative("_softmax_backward_data", inputs=("grad_output", "output"), save=("grad_output", "output", "dim"),
            name="SoftmaxBackwardDataBackward0")
def softmax_backward_data_backward(ctx, g):
    """y = go * o - o * S with S the row sums of go * o: d/dgo is softmax's gradient of g itself;
    d/do = g * go - g * S - go * (row sums of g * o)."""
    go, o, dim = ctx.grad_output, ctx.output, ctx.dim
    n = ctx.needs_input_grad
    g_go = g_o = None
    if n[0]:
        gr = _mul(g, o)
        g_go = _sub(gr, _mul(o, _row_sums(gr, dim)))
    if n[1]:
        s = _row_sums(_mul(go, o), dim)
        g_o = _sub(_sub(_mul(g, go), _mul(g, s)), _mul(go, _row_sums(_mul(g, o), dim)))
    return g_go, g_o


def _causal_masked_out(ctx, like):
    """The scores the forward set to -inf (above the diagonal), as a bool tensor; None when not causal."""
    if not ctx.is_causal:
        return None
    ones = aten.ones.default([ctx.query.shape[-2], ctx.key.shape[-2]], dtype=D.bool, device=like.device)
    return aten.triu.default(ones, 1)


@derivative("_scaled_dot_product_attention_math", inputs=("query", "key", "value", "attn_mask"),
            save=("query", "key", "value", "attn_mask", "is_causal", "scale"), save_result=True,
            nondiff_outputs=(), name="ScaledDotProductAttentionMathBackward0")
def scaled_dot_product_attention_math_backward(ctx, g=None, g_weights=None):
    q, k, v, mask = ctx.query, ctx.key, ctx.value, ctx.attn_mask
    weights = ctx._saved["result"][1].unpack(ctx)   # the output itself is not needed (it may be changed in place)
    n = ctx.needs_input_grad
    create = grad_mode.tls.enabled
    gq = gk = gv = g_mask = None
    g_scores_needed = n[0] or n[1] or n[3]
    gw = None
    if g is not None:
        # weights @ v: matmul's two gradients
        if g_scores_needed:
            gw = aten.matmul.default(g, _mT(v))
        if n[2]:
            gv = sum_to(aten.matmul.default(_mT(weights), g), v.shape)
    if g_weights is not None and g_scores_needed:
        gw = g_weights if gw is None else _add(gw, g_weights)
    if gw is None:
        return gq, gk, gv, g_mask
    gs = _softmax_input_grad(gw, weights, -1, weights.dtype)
    masked_out = _causal_masked_out(ctx, gs)
    if masked_out is not None:
        gs = aten.masked_fill.Scalar(gs, masked_out, 0) if create else aten.masked_fill_.Scalar(gs, masked_out, 0)
    if n[3]:   # the added mask's gradient (a bool mask has none)
        g_mask = sum_to(gs, mask.shape)
    # (q * root) @ (k * root)^T: matmul's gradients, then the scalings'
    scale = 1.0 / math.sqrt(q.shape[-1]) if ctx.scale is None else ctx.scale
    root = math.sqrt(scale)
    if n[0]:
        ks = aten.mul.Scalar(k, root)
        gq = _mul(sum_to(aten.matmul.default(gs, ks), q.shape), root)
    if n[1]:
        qs = aten.mul.Scalar(q, root)
        gk = _mul(_mT(sum_to(aten.matmul.default(_mT(qs), gs), list(k.shape[:-2]) + [k.shape[-1], k.shape[-2]])),
                  root)
    return gq, gk, gv, g_mask
