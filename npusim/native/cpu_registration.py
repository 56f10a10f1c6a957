"""Registers the native kernels for the cpu device (key CPU) and the device-independent compositions."""
from __future__ import annotations

from ..core.dispatch.library import Library
from .registration import COMPOSITE, COMPOSITE_IMPLICIT, register_kernels

_cpu = Library("aten", "IMPL")
register_kernels(_cpu, "CPU")

_composite = Library("aten", "IMPL")
for _name, _fn in COMPOSITE.items():
    _composite.impl(_name, _fn, "CompositeExplicitAutograd")
for _name, _fn in COMPOSITE_IMPLICIT.items():
    _composite.impl(_name, _fn, "CompositeImplicitAutograd")
