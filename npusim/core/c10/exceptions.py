"""The device errors torch defines in c10 and exposes at its top level (``torch.AcceleratorError``,
``torch.OutOfMemoryError``): one class each, shared by every device module (``torch.OutOfMemoryError is
torch.cuda.OutOfMemoryError``), so ``except npusim.OutOfMemoryError`` catches an npu allocation that does not fit."""
from __future__ import annotations

__all__ = ["AcceleratorError", "OutOfMemoryError"]


class AcceleratorError(RuntimeError):
    """Exception raised while executing on device"""


class OutOfMemoryError(RuntimeError):
    """Exception raised when device is out of memory"""


AcceleratorError.__module__ = OutOfMemoryError.__module__ = "npusim"
