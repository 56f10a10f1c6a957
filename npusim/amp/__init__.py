"""``npusim.amp``: automatic mixed precision (torch.amp), for every device type.

``autocast``, ``GradScaler``, ``custom_fwd`` and ``custom_bwd`` take the device type
as an argument. A backend brings its own autocast policies (``AutocastPrivateUse1``
kernels) and its device module's ``amp`` namespace: the npu's live in
``npusim/backend/amp`` and are registered when the backend is.
"""
from __future__ import annotations

from ..core.autocast.state import autocast, is_autocast_available
from .custom_fwd import custom_bwd, custom_fwd
from .grad_scaler import GradScaler, OptState  # noqa: F401

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
