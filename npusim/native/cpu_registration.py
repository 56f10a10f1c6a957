"""Registers the native kernels for the cpu device (key CPU) and the device-independent compositions."""
from __future__ import annotations

from ..core.dispatch.dispatcher import set_out_destination
from ..core.autograd.derivatives import set_complex_forward_ops
from ..core.dispatch.library import Library
from ..kernels import out_destination
from . import complex_support
from .registration import COMPOSITE, COMPOSITE_IMPLICIT, register_kernels

_cpu = Library("aten", "IMPL")
register_kernels(_cpu, "CPU")
set_out_destination(out_destination.offer, out_destination.withdraw)   # out= kernels compute into out
set_complex_forward_ops(complex_support.COMPLEX_OPS)   # of those that take it, autograd checks the formulas

_composite = Library("aten", "IMPL")
for _name, _fn in COMPOSITE.items():
    _composite.impl(_name, _fn, "CompositeExplicitAutograd")
for _name, _fn in COMPOSITE_IMPLICIT.items():
    _composite.impl(_name, _fn, "CompositeImplicitAutograd")
