"""Defines the aten operators (schemas only) at import, through the Library API."""
from __future__ import annotations

from .library import _INTERNAL, Library
from .native_functions import schema_lines

_lib = Library("aten", "DEF", _owner=_INTERNAL)
for _line in schema_lines():
    _lib.define(_line)
