"""What torch's C++ side asks a PrivateUse1 backend from Python: availability, and the device guard."""
from __future__ import annotations

import torch

import npusim


class NpuHooks(torch._C._acc.PrivateUse1Hooks):
    def is_available(self) -> bool:
        return npusim.npu.is_available()

    def has_primary_context(self, dev_id) -> bool:
        return True

    def is_built(self) -> bool:
        return True


class NpuDeviceGuard(torch._C._acc.DeviceGuard):
    """torch 2.13's Python guard is fixed to device index 0: the one device this backend serves."""

    def type_(self):
        return torch._C._autograd.DeviceType.PrivateUse1
