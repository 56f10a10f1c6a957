"""The one error for what torch's Python PrivateUse1 hooks cannot do, naming the limit."""
from __future__ import annotations


def refuse(what: str, why: str = "") -> None:
    raise RuntimeError(f"npusim.torch_backend: {what} is not supported: "
                       f"{why or 'torch 2.13 offers no Python hook for it (a C++ backend would be needed)'}")
