"""torch.backends.mkldnn (oneDNN): stored switches; npusim's CPU kernels are NumPy's, not oneDNN's."""
from __future__ import annotations

import sys

from ._flags import switched

enabled = True
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: npusim does not use oneDNN."""
    return False


def flags(enabled=False, deterministic=False, allow_tf32=True):
    """Set the switches for a ``with`` block, as torch.backends.mkldnn.flags does."""
    return switched(sys.modules[__name__], enabled=enabled, deterministic=deterministic, allow_tf32=allow_tf32)
