"""Installs the dtype guard (complex_support.guard) in the dispatcher.

It must come before the first dispatch function is generated (the api modules generate theirs at import):
each guarded op's dispatch function is generated with the guard's conditions inline, so that arguments of the
common dtypes call the kernel without the guard's wrapper.
"""
from __future__ import annotations

from ..core.dispatch.dispatcher import set_kernel_wrapper
from . import complex_support

# aten kernels not known to handle complex refuse it with torch's error (arguments of common dtypes skip the check)
set_kernel_wrapper(complex_support.guard, complex_support.dispatch_conditions)
