"""Why a torch name is missing from npusim: deliberately out of scope, or not there yet.

``npusim.<name>`` for a name torch has and npusim does not raises ``AttributeError``, and an import of such a
``torch.<name>`` module under ``python -m npusim run`` raises ``ModuleNotFoundError``; both say which of the
two it is, from the tables below.
"""
from __future__ import annotations

# Left out on purpose: npusim runs programs eagerly, dense and strided.
OUT_OF_SCOPE = {
    "fx": "graph capture (torch.fx)",
    "export": "graph capture (torch.export)",
    "_dynamo": "graph capture and compilation (TorchDynamo)",
    "_inductor": "compilation (TorchInductor)",
    "compiler": "compilation (torch.compiler)",
    "cond": "control flow captured into graphs",
    "package": "packaging of traced programs (torch.package)",
    "ao": "quantization",
    "quantization": "quantization",
    "quantize_per_tensor": "quantization",
    "quantize_per_channel": "quantization",
    "sparse": "sparse tensors",
    "sparse_coo_tensor": "sparse tensors",
    "sparse_csr_tensor": "sparse tensors",
    "nested": "nested tensors",
    "xpu": "other vendors' devices (Intel XPU)",
    "mps": "other vendors' devices (Apple MPS)",
    "mtia": "other vendors' devices (MTIA)",
    "hub": "downloading models (no network access is assumed)",
}

# Not in npusim yet; planned.
PLANNED = {"masked", "signal", "overrides", "cpu"}


def explain(name: str) -> str:
    """A sentence on why torch's ``name`` is missing here, or "" when npusim says nothing about it."""
    if name in OUT_OF_SCOPE:
        return f"torch.{name} is deliberately out of scope for npusim ({OUT_OF_SCOPE[name]})"
    if name in PLANNED:
        return f"torch.{name} is not in npusim yet (planned)"
    return ""
