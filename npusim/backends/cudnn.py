"""torch.backends.cudnn: stored switches; npusim has no cuDNN, so none of them changes a result or a speed."""
from __future__ import annotations

import sys

from ._flags import switched

enabled = True
benchmark = False
benchmark_limit = None   # torch without cuDNN reads None
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: npusim does not use cuDNN."""
    return False


def version():
    """None: no cuDNN library is loaded."""
    return None


def is_acceptable(tensor) -> bool:
    """False: no tensor goes through cuDNN here."""
    return False


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the switches for a ``with`` block, as torch.backends.cudnn.flags does."""
    return switched(sys.modules[__name__], enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                    deterministic=deterministic, allow_tf32=allow_tf32)
