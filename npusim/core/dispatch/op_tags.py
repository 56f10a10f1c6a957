"""``npusim.Tag``: the tags an operator can carry, torch's members with torch's values.

An operator gets them where it is defined, ``Library.define(schema, tags=(Tag.pointwise,))``, and lists them as
``npusim.ops.<ns>.<op>.<overload>.tags``. The aten operators carry torch's own (native_functions.yaml's, from the
table ``op_tags_table``), given by ``tag_aten_ops`` once the schema table is defined: ``Tag.pointwise in
npusim.ops.aten.add.Tensor.tags``.
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


def tag_aten_ops() -> None:
    """Give every aten operator defined so far (and not tagged at its definition) torch's tags, in Tag order."""
    from . import dispatcher
    from .op_tags_table import EVERY_OP, TAGGED
    tags_of = {name: names for names, ops in TAGGED.items() for name in ops}
    for qual, op in list(dispatcher._OPS.items()):
        if not qual.startswith("aten::") or op.tags:
            continue
        names = tags_of.get(qual[len("aten::"):])
        if names is not None:
            op.tags = tuple(sorted((Tag[n] for n in (*names, EVERY_OP)), key=int))
