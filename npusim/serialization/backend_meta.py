"""Serialization of backend metadata: PyTorch's ``TensorBackendMetaRegistry``.

A backend keeps per-tensor metadata (``c10::BackendMeta``; here the dict in
``tensor._backend_meta``) and registers one pair of functions for its device
type: ``serialize_fn(tensor, m)`` writes what must survive a save into the
``str -> value`` map ``m``; ``deserialize_fn(tensor, m)`` restores it on a
tensor of that device type. Archives store the map as the last argument of
``_rebuild_tensor_v2``, as torch does, so use bool or int values to keep them
readable by ``torch.load`` (torch's map is ``str -> bool``).
"""
from __future__ import annotations

import threading

from ..core.c10.device import PRIVATEUSE1, device as _device

_PAIRS: dict = {}  # canonical device type -> (serialize_fn, deserialize_fn)
_lock = threading.Lock()
# keys torch itself puts in the map (the conj and neg bits); backends must not use them
RESERVED_KEYS = ("conj", "neg")


def register_backend_meta_serialization(device_type, serialize_fn, deserialize_fn) -> None:
    """Register how tensors of ``device_type`` carry their backend metadata through save and load.

    Only the PrivateUse1 device type (the renamed backend, e.g. ``"npu"``) may
    register, once: a second registration raises RuntimeError.
    """
    dev = _device(device_type) if not isinstance(device_type, _device) else device_type
    if dev._type != PRIVATEUSE1:
        raise RuntimeError("It is not allowed to register the serialization method of backendMeta data for "
                           f"{dev.type}: only the PrivateUse1 backend may. If you have related serialization "
                           "requirements, please expand the allowlist")
    if not callable(serialize_fn) or not callable(deserialize_fn):
        raise TypeError("register_backend_meta_serialization expects two callables (serialize_fn, deserialize_fn)")
    with _lock:
        if dev._type in _PAIRS:
            raise RuntimeError(f"The tensor BackendMeta serialization function pointer for {dev.type} has been "
                               "registered.")
        _PAIRS[dev._type] = (serialize_fn, deserialize_fn)


def _unregister_backend_meta_serialization(device_type):
    """Remove a registration (for tests that install their own pair); returns the old pair or None."""
    dev = _device(device_type) if not isinstance(device_type, _device) else device_type
    with _lock:
        return _PAIRS.pop(dev._type, None)


def get_tensor_metadata(tensor) -> dict:
    """The metadata map saved with ``tensor`` (empty when its backend registered nothing or has nothing)."""
    pair = _PAIRS.get(tensor._device._type)
    if pair is None:
        return {}
    m = {}
    pair[0](tensor, m)
    if not isinstance(m, dict):
        raise TypeError(f"the {tensor.device.type} backend-meta serializer must fill a dict")
    return m


def set_tensor_metadata(tensor, metadata: dict) -> None:
    """Restore ``metadata`` (a map made by ``get_tensor_metadata``) on ``tensor``.

    The keys a backend does not know are left to it: a tensor whose device type
    registered no pair (e.g. a cpu tensor loaded with ``map_location="cpu"``)
    ignores the map, as in torch.
    """
    pair = _PAIRS.get(tensor._device._type)
    if pair is None:
        return
    m = {k: v for k, v in metadata.items() if k not in RESERVED_KEYS}
    if m:
        pair[1](tensor, m)
