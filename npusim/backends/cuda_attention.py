"""torch.backends.cuda's attention-backend questions: ``SDPAParams``, ``SDPBackend``, ``can_use_*_attention``,
``is_flash_attention_available`` and the fp16/bf16-reduction switch of the math backend.

npusim's ``scaled_dot_product_attention`` has one implementation, the math one, on every device: so no params can
use flash, memory-efficient or cuDNN attention, and with ``debug=True`` each ``can_use_*`` warns why, as torch's
does. The fp16/bf16-reduction switch is stored and read back, as the backend switches beside it are.
"""
from __future__ import annotations

import builtins
import enum
import warnings

from ..core.tensor import Tensor
from . import cuda as _cuda

_state = {"fp16_bf16_reduction": False}


class SDPBackend(enum.IntEnum):
    """The implementations of scaled_dot_product_attention, with torch's values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


class SDPAParams:
    """The arguments of one scaled_dot_product_attention call, for the ``can_use_*`` questions."""

    __slots__ = ("query", "key", "value", "attn_mask", "dropout", "is_causal", "enable_gqa")

    def __init__(self, *args):
        ok = len(args) == 7
        query, key, value, attn_mask, dropout, is_causal, enable_gqa = args if ok else (None,) * 7
        ok = ok and all(isinstance(t, Tensor) for t in (query, key, value)) and \
            (attn_mask is None or isinstance(attn_mask, Tensor)) and \
            isinstance(dropout, (builtins.int, builtins.float)) and not isinstance(dropout, builtins.bool) and \
            isinstance(is_causal, builtins.bool) and isinstance(enable_gqa, builtins.bool)
        if not ok:
            raise TypeError("__init__(): incompatible constructor arguments. The following argument types are "
                            "supported:\n    1. SDPAParams(query: Tensor, key: Tensor, value: Tensor, attn_mask: "
                            "Tensor | None, dropout: float, is_causal: bool, enable_gqa: bool)")
        self.query, self.key, self.value, self.attn_mask = query, key, value, attn_mask
        self.dropout, self.is_causal, self.enable_gqa = builtins.float(dropout), is_causal, enable_gqa

    def __repr__(self):
        return (f"SDPAParams(query={tuple(self.query.shape)}, key={tuple(self.key.shape)}, "
                f"value={tuple(self.value.shape)}, attn_mask={self.attn_mask is not None}, dropout={self.dropout}, "
                f"is_causal={self.is_causal}, enable_gqa={self.enable_gqa})")


def allow_fp16_bf16_reduction_math_sdp(enabled: bool) -> None:
    """Allow (or not) the math attention to reduce in float16/bfloat16 (stored; npusim's math attention computes
    in its inputs' dtype either way)."""
    _state["fp16_bf16_reduction"] = builtins.bool(enabled)


def fp16_bf16_reduction_math_sdp_allowed() -> bool:
    """Whether the math attention may reduce in float16/bfloat16 (False unless allowed)."""
    return _state["fp16_bf16_reduction"]


def is_flash_attention_available() -> bool:
    """False: npusim has no FlashAttention kernel."""
    return False


def _can_use(params, debug, enabled, label):
    if not isinstance(params, SDPAParams):
        raise TypeError(f"can_use_{label}(): incompatible function arguments: params must be SDPAParams, not "
                        f"{type(params).__name__}")
    if debug:
        reason = (f"{label.replace('_', ' ').capitalize()} has been runtime disabled." if not enabled else
                  f"npusim's scaled_dot_product_attention has no {label.replace('_', ' ')} kernel: only the math "
                  f"implementation runs, on {params.query.device}.")
        warnings.warn(reason, UserWarning, stacklevel=3)
    return False


def can_use_flash_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether flash attention can run these params: never here (with ``debug``, a warning says why)."""
    return _can_use(params, debug, _cuda.flash_sdp_enabled(), "flash_attention")


def can_use_efficient_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether memory-efficient attention can run these params: never here (with ``debug``, a warning says why)."""
    return _can_use(params, debug, _cuda.mem_efficient_sdp_enabled(), "efficient_attention")


def can_use_cudnn_attention(params: SDPAParams, debug: bool = False) -> bool:
    """Whether cuDNN attention can run these params: never here (with ``debug``, a warning says why)."""
    return _can_use(params, debug, _cuda.cudnn_sdp_enabled(), "cudnn_attention")


__all__ = ["SDPBackend", "SDPAParams", "allow_fp16_bf16_reduction_math_sdp", "fp16_bf16_reduction_math_sdp_allowed",
           "is_flash_attention_available", "can_use_flash_attention", "can_use_efficient_attention",
           "can_use_cudnn_attention"]
