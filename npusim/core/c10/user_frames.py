"""Finding the user's frames: the first frame outside npusim, for warnings and profiler stacks.

A frame is npusim's own when its module is ``npusim`` or below it, when its file lies in the package
(``python -m npusim`` runs ``__main__`` from there), or when it runs generated code (dispatch functions,
device guards, capacity checks: their file names carry ``codegen.GENERATED_PREFIXES``).
The depth between a user's call and the code that warns varies (Autograd/Autocast keys, profiling
callbacks, Tensor methods, composite ops), so it is walked, never assumed.
"""
from __future__ import annotations

import os
import sys

from .codegen import GENERATED_PREFIXES

__all__ = ["is_internal", "user_stacklevel", "user_frames", "PACKAGE_DIR"]

# .../npusim/ (this file is npusim/core/c10/user_frames.py)
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def is_internal(frame) -> bool:
    """Whether ``frame`` runs npusim's code (its modules, its package files or its generated code)."""
    name = frame.f_globals.get("__name__") or ""
    if name == "npusim" or name.startswith("npusim."):
        return True
    filename = frame.f_code.co_filename
    return filename.startswith(GENERATED_PREFIXES) or filename.startswith(PACKAGE_DIR)


def user_stacklevel(skip: int = 0) -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called by this function's caller, name the first
    frame outside npusim (the user's line).

    ``skip`` frames above the caller are known to be npusim's and are not looked at. Without any user
    frame (npusim called from nowhere else) the answer is ``skip + 2``.
    """
    frame = sys._getframe(2 + skip)   # 1: the caller (stacklevel 1), 2: its caller (stacklevel 2)
    level = 2 + skip
    while frame is not None and is_internal(frame):
        frame = frame.f_back
        level += 1
    return level if frame is not None else skip + 2


def user_frames(limit: int | None = None, skip: int = 0) -> list:
    """The frames outside npusim from the caller's caller outwards, innermost first (at most ``limit``).

    User frames between npusim frames (a module's ``forward`` under ``Module.__call__``) are all kept.
    ``skip`` drops that many more frames first.
    """
    out = []
    frame = sys._getframe(2 + skip)
    while frame is not None and (limit is None or len(out) < limit):
        if not is_internal(frame):
            out.append(frame)
        frame = frame.f_back
    return out
