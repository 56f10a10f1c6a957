"""(to be filled) Tensor-level kernels: indexing_ops."""
from __future__ import annotations

KERNELS: dict = {}
