"""(to be filled) Tensor-level kernels: reductions."""
from __future__ import annotations

KERNELS: dict = {}
