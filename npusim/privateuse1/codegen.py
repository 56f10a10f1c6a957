"""Generated wrappers for a backend's kernels, built by the framework's one code generator.

A backend that wraps many kernels (the npu's capacity checks) generates each wrapper
from the kernel's signature rather than forwarding ``*args, **kwargs``: the wrapper
then costs one call. The generated source gets a file name that tracebacks, debuggers
and ``source_of`` can show (``<capacity check add.Tensor>``), and frames running it
count as npusim's own when warnings look for the user's line (``user_stacklevel``).
"""
from __future__ import annotations

from ..core.c10.codegen import CAPACITY_CHECK, Signature, compile_function, indent, name_function, source_of
from ..core.c10.user_frames import user_stacklevel

__all__ = ["CAPACITY_CHECK", "Signature", "compile_function", "indent", "name_function", "source_of",
           "user_stacklevel"]
