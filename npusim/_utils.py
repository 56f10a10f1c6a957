"""Helpers torch keeps in ``torch._utils``: a tensor's serialized backend metadata.

``get_tensor_metadata(t)`` is the ``str -> value`` map that ``npusim.save``
stores with ``t`` (filled by the serializer its backend registered with
``npusim.serialization.register_backend_meta_serialization``);
``set_tensor_metadata(t, m)`` hands such a map to the backend's deserializer.
"""
from __future__ import annotations

from .core.tensor import Tensor

__all__ = ["get_tensor_metadata", "set_tensor_metadata"]


def get_tensor_metadata(tensor) -> dict:
    if not isinstance(tensor, Tensor):
        raise AssertionError(f"expected npusim.Tensor, got {type(tensor).__name__}")
    from .serialization.backend_meta import get_tensor_metadata as _get
    return _get(tensor)


def set_tensor_metadata(tensor, metadata) -> None:
    if not isinstance(metadata, dict):
        raise AssertionError(f"expected dict, got {type(metadata).__name__}")
    if not isinstance(tensor, Tensor):
        raise AssertionError(f"expected npusim.Tensor, got {type(tensor).__name__}")
    from .serialization.backend_meta import set_tensor_metadata as _set
    _set(tensor, metadata)
