"""torch.nn.functional's attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``
with its mask helpers.

The packed ``in_proj_weight`` (3E, E) / ``in_proj_bias`` (3E) layout and the
separate ``q/k/v_proj_weight`` layout (when kdim or vdim differ) are torch's.
"""
from __future__ import annotations

import math
import warnings

from ...api.factories import zeros, zeros_like
from ...api.operators import baddbmm, bmm, cat
from ...core.c10 import dtype as D
from ...core.dispatch.ops_namespace import aten
from ...core.tensor import Tensor
from .activation import softmax
from .arguments import _check_tensor
from .dropouts import dropout
from .linear_layers import linear
from .padding import pad

__all__ = [
    "scaled_dot_product_attention", "multi_head_attention_forward",
]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value (scale defaults to 1 / sqrt(E)).

    A bool ``attn_mask`` says which positions take part, a float one is added to
    the scores; ``is_causal`` masks the upper triangle; ``enable_gqa`` shares each
    key/value head among a group of query heads.
    """
    _check_tensor(query, "scaled_dot_product_attention", "query", 1)
    _check_tensor(key, "scaled_dot_product_attention", "key", 2)
    _check_tensor(value, "scaled_dot_product_attention", "value", 3)
    return aten.scaled_dot_product_attention.default(query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
                                                     enable_gqa=enable_gqa)


# --- masks ----------------------------------------------------------------------------------------------------------

def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out) becomes an additive float mask of 0 / -inf."""
    if mask is None:
        return None
    mask_is_float = mask.is_floating_point()
    if mask.dtype != D.bool and not mask_is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      f"instead.", stacklevel=2)
    if not mask_is_float:
        mask = zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            if attn_mask.dim() == 3:
                expected_shape = (num_heads, query.shape[0], key.shape[0])
                if attn_mask.shape != expected_shape:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected_shape} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         f"tensor")


# --- projections ----------------------------------------------------------------------------------------------------

def _in_projection_packed(q, k, v, w, b=None):
    """q, k, v projected with the packed (3E, E) weight; self-attention does it in one matmul."""
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        kv_proj = linear(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return linear(q, w_q, b_q), kv_proj[0], kv_proj[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    Eq, Ek, Ev = q.size(-1), k.size(-1), v.size(-1)
    for what, w, shape in (("query", w_q, (Eq, Eq)), ("key", w_k, (Eq, Ek)), ("value", w_v, (Eq, Ev))):
        if w.shape != shape:
            raise AssertionError(f"expecting {what} weights shape of {shape}, but got {w.shape}")
    for what, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and b.shape != (Eq,):
            raise AssertionError(f"expecting {what} bias shape of {(Eq,)}, but got {b.shape}")
    return linear(q, w_q, b_q), linear(k, w_k, b_k), linear(v, w_v, b_v)


# --- the attention --------------------------------------------------------------------------------------------------

def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention over sequence-first (L, N, E) or unbatched (L, E) inputs, as torch computes it."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask",
                                       query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # The causal hint alone drives scaled_dot_product_attention.
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for name, w in (("q_proj_weight", q_proj_weight), ("k_proj_weight", k_proj_weight),
                        ("v_proj_weight", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name} is None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            correct_2d_size = (tgt_len, src_len)
            if attn_mask.shape != correct_2d_size:
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{correct_2d_size}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            correct_3d_size = (bsz * num_heads, tgt_len, src_len)
            if attn_mask.shape != correct_3d_size:
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{correct_3d_size}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # Heads become part of the batch: (bsz * num_heads, len, head_dim).
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "static_k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "static_v")

    if add_zero_attn:
        zero_attn_shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(zero_attn_shape, dtype=k.dtype, device=k.device)], dim=1)
        v = cat([v, zeros(zero_attn_shape, dtype=v.dtype, device=v.device)], dim=1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    src_len = k.size(1)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        E = q.shape[-1]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if attn_mask is not None:
            attn_output_weights = baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            attn_output_weights = bmm(q_scaled, k.transpose(-2, -1))
        attn_output_weights = softmax(attn_output_weights, dim=-1)
        if dropout_p > 0.0:
            attn_output_weights = dropout(attn_output_weights, p=dropout_p)
        attn_output = bmm(attn_output_weights, v)
        attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        attn_output_weights = attn_output_weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_output_weights = attn_output_weights.mean(dim=1)
        if not is_batched:
            attn_output = attn_output.squeeze(1)
            attn_output_weights = attn_output_weights.squeeze(0)
        return attn_output, attn_output_weights

    if attn_mask is not None:
        if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    attn_output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    attn_output = attn_output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    attn_output = linear(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
    if not is_batched:
        attn_output = attn_output.squeeze(1)
    return attn_output, None


def _heads(x, static, bsz, num_heads, head_dim, static_name):
    """(len, bsz, E) -> (bsz * num_heads, len, head_dim), or the caller's precomputed ``static`` one."""
    if static is None:
        return x.view(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.size(0) != bsz * num_heads:
        raise AssertionError(f"expecting {static_name}.size(0) of {bsz * num_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {static_name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static
