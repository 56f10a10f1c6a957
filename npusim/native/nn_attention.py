"""scaled_dot_product_attention with torch's math-backend semantics.

Causal attention (no other mask, no dropout, heads not shared) is torch's math op
``_scaled_dot_product_attention_math``: one kernel returning the output and the weights, with the composition's
values, whose gradient is a short composition of dispatched ops (autograd/formulas_nn_attention.py). Any other
call is the composition of dispatched ops.
"""
from __future__ import annotations

import math

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor, _wrap_dim
from ..kernels import nn_attention as KA
from ..kernels import reductions as R
from . import common as C


def _cpp_name(dt) -> str:
    return C.CPP_NAME[dt.name]


def _check_attention(query, key, value, attn_mask, is_causal):
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{_cpp_name(query.dtype)} key.dtype: {_cpp_name(key.dtype)} and value.dtype: "
                           f"{_cpp_name(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype is not D.bool and attn_mask.dtype is not query.dtype:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {_cpp_name(attn_mask.dtype)} and  query.dtype: "
                           f"{_cpp_name(query.dtype)} instead.")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not query.is_floating_point():
        raise RuntimeError(f"expected scalar type Float but found {C.tname(query._a.dtype)}")


def _repeat_heads(t, groups):
    """(..., H, S, E) -> (..., H * groups, S, E), each head repeated ``groups`` times in a row."""
    shape = list(t.shape)
    expanded = shape[:-2] + [groups] + shape[-2:]
    t = aten.expand.default(aten.unsqueeze.default(t, -3), expanded)
    return aten.reshape.default(t, shape[:-3] + [shape[-3] * groups] + shape[-2:])


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v, with torch's math-backend semantics."""
    _check_attention(query, key, value, attn_mask, is_causal)
    if enable_gqa and query.dim() >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        if hk != hq:
            key = _repeat_heads(key, hq // hk)
        if hv != hq:
            value = _repeat_heads(value, hq // hv)
    length, source = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if _one_kernel(query, key, value, attn_mask, dropout_p, is_causal):
        return aten._scaled_dot_product_attention_math.default(query, key, value, attn_mask, 0.0, is_causal,
                                                                scale=scale)[0]
    # torch scales both operands by sqrt(scale) for range, then adds the mask
    root = math.sqrt(scale)
    scores = aten.matmul.default(aten.mul.Scalar(query, root), aten.transpose.int(aten.mul.Scalar(key, root), -2, -1))
    if is_causal:
        attn_mask = aten.tril.default(aten.ones.default([length, source], dtype=D.bool, device=query.device))
    if attn_mask is not None:
        if attn_mask.dtype is D.bool:
            scores = aten.masked_fill.Scalar(scores, aten.logical_not.default(attn_mask), -math.inf)
        else:
            scores = aten.add.Tensor(scores, attn_mask)
    # rows with every position masked attend to nothing (torch's safe softmax), not to NaN
    weights = aten.softmax.int(scores, -1) if attn_mask is None else aten._safe_softmax.default(scores, -1)
    if dropout_p > 0:
        weights = aten.dropout.default(weights, dropout_p, True)
    return aten.matmul.default(weights, value)


def _one_kernel(query, key, value, attn_mask, dropout_p, is_causal) -> bool:
    """Whether the math op computes this call: causal (the mask it sets is the composition's), float32 / float64,
    no dropout, q, k and v with one batch shape, plain tensors (vmap's batched ones run the composition, whose
    ops have batching rules)."""
    if query.__class__ is not Tensor or key.__class__ is not Tensor or value.__class__ is not Tensor:
        return False
    dt = query.dtype
    if not is_causal or attn_mask is not None or dropout_p > 0 or (dt is not D.float32 and dt is not D.float64):
        return False
    batch = query.shape[:-2]
    return query.dim() >= 2 and key.dim() == value.dim() == query.dim() and key.shape[:-2] == batch and \
        value.shape[:-2] == batch


def scaled_dot_product_attention_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                      dropout_mask=None, *, scale=None, enable_gqa=False):
    """torch's math attention op: (softmax(q k^T * scale + attn_mask) v, the softmax), in one kernel, the softmax
    a safe one. As torch's op it adds ``attn_mask``, a bool one as 0 / 1 (scaled_dot_product_attention turns a bool
    mask into -inf first); ``is_causal`` sets the scores above the diagonal to -inf, as npusim's composition does
    (torch's op adds -inf, which differs only for an infinite or NaN score there). npusim's op computes no
    dropout (scaled_dot_product_attention applies it with the composition) and shares no heads."""
    _check_attention(query, key, value, attn_mask, is_causal)
    dev = C.same_device(query, key, value, attn_mask)
    if dropout_p > 0 or dropout_mask is not None:
        raise NotImplementedError("npusim's _scaled_dot_product_attention_math computes no dropout: "
                                  "scaled_dot_product_attention applies it")
    if query.dim() >= 3 and (key.shape[-3] != query.shape[-3] or value.shape[-3] != query.shape[-3]):
        raise NotImplementedError("npusim's _scaled_dot_product_attention_math shares no heads: "
                                  "scaled_dot_product_attention(enable_gqa=True) repeats them")
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    q = query._a
    masked_out = KA.above_diagonal(q, query.shape[-2], key.shape[-2]) if is_causal else None
    bias = None if attn_mask is None else attn_mask._a
    out, weights = KA.attention_math(q, key._a, value._a, masked_out, bias, scale)
    return C.make(out, dev), C.make(weights, dev)


def _safe_softmax(self, dim, dtype=None):
    """softmax over ``dim``, with zeros (not NaN) in the rows whose every entry is -inf: one pass over the scores
    where masking them out took four ops (torch's op of this name, which its math attention uses)."""
    dt = self.dtype if dtype is None else dtype
    if not self.dtype.is_floating_point or not dt.is_floating_point:
        raise NotImplementedError(f"\"softmax_lastdim_kernel_impl\" not implemented for '{C.tname(dt)}'")
    a = self._a
    if a.size == 0:
        return C.make(a.astype(dt.np), self._device)
    d = _wrap_dim(dim, a.ndim) if a.ndim else None
    return C.make(R.softmax(a, d, dt.np, safe=True), self._device)


KERNELS = {"_safe_softmax": _safe_softmax,
           "_scaled_dot_product_attention_math": scaled_dot_product_attention_math}

# Ops that decompose into other ops (CompositeImplicitAutograd): autograd comes from the parts.
COMPOSITE_IMPLICIT = {"scaled_dot_product_attention": scaled_dot_product_attention}
