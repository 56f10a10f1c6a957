"""torch.nn.functional's ``pad``."""
from __future__ import annotations

from ...core.dispatch.ops_namespace import aten
from ...core.tensor import Tensor
from .arguments import _check_tensor

__all__ = [
    "pad",
]


def pad(input, pad, mode="constant", value=None):
    """Pad the trailing dims: ``pad`` lists (before, after) amounts from the last dim backwards."""
    _check_tensor(input, "pad")
    amounts = []
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, int):
            if isinstance(p, Tensor) and p.dim() == 0 and not p.is_floating_point():
                p = int(p.item())
            else:
                raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of "
                                f"type {type(p).__name__} at pos {i}")
        amounts.append(int(p))
    return aten.pad.default(input, amounts, mode, None if value is None else float(value))
