"""The check torch.func's transforms make on what the transformed function returned."""
from __future__ import annotations

from ..core.tensor import Tensor


def check_tensor_outputs(flat_out, api: str) -> None:
    """``flat_out`` (a flattened output) is non-empty and only tensors, or torch's RuntimeError naming ``api``."""
    if (len(flat_out) == 1 and flat_out[0] is None) or not flat_out:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = "
                           f"{flat_out})")
    for o in flat_out:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                               f"{type(o)}")
