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


def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True,
          fp32_precision="none", depthwise_kernel="auto"):
    """Set the switches for a ``with`` block, as torch.backends.cudnn.flags does."""
    return switched(sys.modules[__name__], enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                    deterministic=deterministic, allow_tf32=allow_tf32, fp32_precision=fp32_precision,
                    depthwise_kernel=depthwise_kernel)


# torch's newer switches: the float32 precision (all cuDNN ops, and convolutions alone) and the depthwise kernel
# choice, checked as torch checks them; the dtypes cuDNN takes
from .cudnn_precision import CUDNN_TENSOR_DTYPES, conv, install_checked_switches, set_flags  # noqa: E402,F401

install_checked_switches(sys.modules[__name__])
