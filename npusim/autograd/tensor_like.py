"""``npusim.autograd.is_tensor_like`` (torch.overrides.is_tensor_like)."""
from __future__ import annotations

from ..core.tensor import Tensor


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a Tensor-like: a tensor (or a Tensor subclass's instance), or an object whose type has a
    ``__torch_function__``."""
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


__all__ = ["is_tensor_like"]
