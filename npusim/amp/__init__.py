"""``npusim.amp``: automatic mixed precision (torch.amp) and the npu's autocast support.

Importing this package registers the npu's ``AutocastPrivateUse1`` policy kernels and
its fallthrough fallback (``autocast_registration``), and installs ``npusim.npu.amp`` on the
device module the backend registered (none without a backend).
The npu's AMP backend functions (``get_amp_supported_dtype``, ``is_autocast_enabled``,
``set_autocast_enabled``, ``get_autocast_dtype``, ``set_autocast_dtype``) live in the
device module ``npusim.npu`` itself, where the PrivateUse1 tutorial puts them.
"""
from __future__ import annotations

from ..core.autocast.state import autocast, is_autocast_available
from . import autocast_registration  # noqa: F401  (AutocastPrivateUse1 kernels and fallthrough)
from . import npu_amp as _npu_amp
from .custom_fwd import custom_bwd, custom_fwd
from .grad_scaler import GradScaler, OptState  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]

_npu_amp.install()
