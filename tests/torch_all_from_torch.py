"""Write ``npusim/_torch_all.py``: torch 2.13's top-level ``__all__``, the names ``from torch import *`` brings
(read from the installed torch, the one place they are listed).

npusim's ``__all__`` is built from it: every name of torch's that npusim has, in torch's order, then npusim's
own. Run ``python tests/torch_all_from_torch.py`` after a torch upgrade; ``tests/test_star_import.py`` checks the
table against torch.
"""
from __future__ import annotations

import os
import textwrap

TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "npusim", "_torch_all.py")


def render(names) -> str:
    body = textwrap.fill(", ".join(f"\"{n}\"" for n in names), width=116, initial_indent="    ",
                         subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
    return ('"""torch 2.13\'s top-level ``__all__`` in its order: npusim\'s ``__all__`` lists those of them it has.\n'
            'Written by ``tests/torch_all_from_torch.py``; do not edit by hand.\n"""\n\n'
            f"TORCH_ALL = (\n{body},\n)\n")


def main() -> None:
    import torch
    with open(TARGET, "w") as f:
        f.write(render(torch.__all__))


if __name__ == "__main__":
    main()
