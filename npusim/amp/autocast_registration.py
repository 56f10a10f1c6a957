"""Register the npu's autocast kernels, as the PrivateUse1 tutorial does in C++::

    TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) { KERNEL_PRIVATEUSEONE(<op>, <policy>) ... }
    TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

through the public ``Library`` API. The policy kernels come from core's autocast
engine (torch's ATen/autocast_mode.h); the lists from ``policy.py``.
"""
from __future__ import annotations

from ..core.autocast.state import register_autocast_policies
from ..library import Library, fallthrough_kernel
from .policy import NPU_AUTOCAST_POLICIES

_kernels = Library("aten", "IMPL")
# Overloads of the table that npusim does not define yet (they run untouched under autocast).
MISSING_OPS = tuple(register_autocast_policies(_kernels, "AutocastPrivateUse1", NPU_AUTOCAST_POLICIES))

_fallthrough = Library("_", "IMPL")
_fallthrough.fallback(fallthrough_kernel, "AutocastPrivateUse1")


def missing_ops() -> tuple:
    """The policy-table overloads that have no autocast kernel because npusim lacks the operator."""
    return MISSING_OPS
