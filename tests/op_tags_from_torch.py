"""Write ``npusim/core/dispatch/op_tags_table.py``: the tags torch 2.13's native_functions.yaml gives each aten
operator npusim defines (read from the installed torch, the one place they are known).

Run ``python tests/op_tags_from_torch.py`` after adding aten schemas; ``tests/test_misc_names.py`` checks the table
against torch.
"""
from __future__ import annotations

import os
import sys
import textwrap

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "npusim", "core", "dispatch",
                      "op_tags_table.py")
EVERY_OP = "pt2_compliant_tag"     # torch puts it on every aten operator


def torch_tags() -> dict:
    """``{"add.Tensor": ("core", "pointwise"), ...}`` for npusim's aten overloads that torch has, less EVERY_OP."""
    import torch

    import npusim  # noqa: F401  (defines the aten operators)
    from npusim.core.dispatch import dispatcher
    table = {}
    for qual in dispatcher._OPS:
        if not qual.startswith("aten::"):
            continue
        name = qual[len("aten::"):]
        base, _, overload = name.partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        table[name] = tuple(t.name for t in op.tags if t.name != EVERY_OP)
    return table


def render(table: dict) -> str:
    groups = {}
    for name, tags in sorted(table.items()):
        groups.setdefault(tags, []).append(name)
    lines = ['"""The tags torch 2.13 gives each aten operator npusim defines (native_functions.yaml\'s ``tags:`` and the',
             "ones torch derives: inplace, out, ...), grouped by tag set; every aten operator also carries",
             f"``{EVERY_OP}``. Written by ``tests/op_tags_from_torch.py``; do not edit by hand.", '"""', "",
             f'EVERY_OP = "{EVERY_OP}"', "", "# (tag names) -> the overloads (name.overload) that carry exactly them",
             "TAGGED = {"]
    for tags, names in sorted(groups.items()):
        lines.append(f"    {tags!r}: (")
        body = " ".join(f'"{n}",' for n in names)
        lines.extend(textwrap.wrap(body, 114, initial_indent="        ", subsequent_indent="        ",
                                   break_on_hyphens=False))
        lines.append("    ),")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = render(torch_tags())     # before opening the table: importing npusim reads it
    with open(TARGET, "w") as f:
        f.write(text)
    print(f"wrote {os.path.normpath(TARGET)}")
