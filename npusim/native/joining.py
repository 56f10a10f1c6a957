"""(to be filled) Tensor-level kernels: joining."""
from __future__ import annotations

KERNELS: dict = {}
