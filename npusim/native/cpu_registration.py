"""Registers the native kernels for the cpu device (dispatch key CPU)."""
from __future__ import annotations

from ..core.library import Library
from .registration import COMPOSITE, register_kernels

_cpu = Library("aten", "IMPL")
register_kernels(_cpu, "CPU")

_composite = Library("aten", "IMPL")
for _name, _fn in COMPOSITE.items():
    _composite.impl(_name, _fn, "CompositeExplicitAutograd")
