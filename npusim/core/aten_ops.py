"""Defines the aten operators (schemas only) at import, through the Library API."""
from __future__ import annotations

from .library import _INTERNAL, Library
from . import native_functions, native_functions_linalg, native_functions_math, native_functions_misc
from . import native_functions_nn, native_functions_pool3d, native_functions_reductions_structure
from . import native_functions_linalg_lu, native_functions_special
from . import native_functions_random_extra

_lib = Library("aten", "DEF", _owner=_INTERNAL)
for _module in (native_functions, native_functions_nn, native_functions_reductions_structure, native_functions_linalg,
                native_functions_math, native_functions_misc, native_functions_pool3d,
                native_functions_special, native_functions_linalg_lu, native_functions_random_extra):
    for _line in _module.SCHEMAS.strip().splitlines():
        if _line.strip():
            _lib.define(_line.strip())
