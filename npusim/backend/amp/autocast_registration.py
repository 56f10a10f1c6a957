"""Register the npu's autocast kernels, as the PrivateUse1 tutorial does in C++::

    TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) { KERNEL_PRIVATEUSEONE(<op>, <policy>) ... }
    TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

through the public ``Library`` API. The policy kernels come from the framework's autocast
engine (``npusim.privateuse1.register_autocast_policies``, torch's ATen/autocast_mode.h); each op's
category from the npu's op table (``op_table.py``), torch's CUDA lists.
"""
from __future__ import annotations

from ...library import Library, fallthrough_kernel
from ...privateuse1 import register_autocast_policies

from ..op_table import autocast_policies

# Overloads of the table that npusim does not define yet (they run untouched under autocast).
MISSING_OPS: tuple = ()
_libraries: list = []   # the Library objects stay alive as long as their registrations


def register() -> None:
    """Register the policy kernels and the fallthrough fallback (once, when the backend is registered)."""
    global MISSING_OPS
    kernels = Library("aten", "IMPL")
    MISSING_OPS = tuple(register_autocast_policies(kernels, "AutocastPrivateUse1", autocast_policies()))
    fallthrough = Library("_", "IMPL")
    fallthrough.fallback(fallthrough_kernel, "AutocastPrivateUse1")
    _libraries.extend((kernels, fallthrough))


def missing_ops() -> tuple:
    """The policy-table overloads that have no autocast kernel because npusim lacks the operator."""
    return MISSING_OPS
