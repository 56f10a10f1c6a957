"""The torch this package plugs into: 2.13.x, whose Python PrivateUse1 entry points it was built against."""
from __future__ import annotations

SUPPORTED = (2, 13)


def require_torch():
    """``torch`` when it is 2.13.x; ImportError with what to install otherwise."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError("npusim.torch_backend needs PyTorch 2.13 (pip install -e '.[torch]'); torch is not "
                          "importable") from exc
    release = torch.__version__.split("+")[0].split(".")
    try:
        found = (int(release[0]), int(release[1]))
    except (IndexError, ValueError):
        found = None
    if found != SUPPORTED:
        raise ImportError(f"npusim.torch_backend supports torch 2.13.x only (its Python PrivateUse1 hooks, "
                          f"torch._C._acc, are experimental and change between releases); found torch "
                          f"{torch.__version__}. Install the extra: pip install -e '.[torch]'")
    for name in ("_acc", "_construct_storage_from_data_pointer"):
        if not hasattr(torch._C, name):
            raise ImportError(f"npusim.torch_backend: this torch {torch.__version__} build lacks torch._C.{name}")
    return torch
