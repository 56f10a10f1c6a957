"""(to be filled) Tensor-level kernels: sorting."""
from __future__ import annotations

KERNELS: dict = {}
