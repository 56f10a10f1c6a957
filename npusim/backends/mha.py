"""torch.backends.mha: whether ``nn.MultiheadAttention`` and ``nn.TransformerEncoder`` may take torch's fused
inference fast path. npusim's modules always run the composed (math) path, whose results the fast path matches, so
the switch is stored and read back."""
from __future__ import annotations

_is_fastpath_enabled: bool = True


def get_fastpath_enabled() -> bool:
    """Whether the fast path for TransformerEncoder and MultiheadAttention is enabled (True unless switched off)."""
    return _is_fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    """Enable or disable the fast path (stored)."""
    global _is_fastpath_enabled
    _is_fastpath_enabled = value
