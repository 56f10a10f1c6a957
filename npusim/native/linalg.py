"""(to be filled) Tensor-level kernels: linalg."""
from __future__ import annotations

KERNELS: dict = {}
