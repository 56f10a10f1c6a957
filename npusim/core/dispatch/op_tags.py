"""``npusim.Tag``: the tags an operator can carry, torch's members with torch's values.

An operator gets them where it is defined, ``Library.define(schema, tags=(Tag.pointwise,))``, and lists them as
``npusim.ops.<ns>.<op>.<overload>.tags`` (npusim's own aten schemas carry none: the tags of torch's
native_functions.yaml mark ops for compilers and graph passes, which npusim does not have).
"""
from __future__ import annotations

import enum


class Tag(enum.IntEnum):
    """A tag of an operator (torch's ``torch.Tag``)."""

    core = 0
    cudagraph_unsafe = 1
    data_dependent_output = 2
    dynamic_output_shape = 3
    flexible_layout = 4
    generated = 5
    inplace = 6
    inplace_view = 7
    maybe_aliasing_or_mutating = 8
    needs_contiguous_strides = 9
    needs_exact_strides = 10
    needs_fixed_stride_order = 11
    nondeterministic_bitwise = 12
    nondeterministic_seeded = 13
    out = 14
    out_variant = 15
    pointwise = 16
    pt2_compliant_tag = 17
    reduction = 18
    view_copy = 19

    def __str__(self):
        return f"Tag.{self.name}"


Tag.__module__ = "npusim"
