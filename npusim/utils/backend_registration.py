"""``rename_privateuse1_backend`` and ``generate_methods_for_privateuse1_backend`` as torch defines them.

After the rename, the generated methods are the conveniences torch gives a
renamed backend: ``Tensor.npu()``, ``Tensor.is_npu``, ``Storage.npu()``,
``Storage.is_npu`` and ``Module.npu()``.
"""
from __future__ import annotations

import sys

from ..core.c10.device import device as _device
from ..core.c10.device import privateuse1_backend_name, rename_privateuse1_backend  # noqa: F401
from ..core.c10.storage import UntypedStorage
from ..core.tensor import Tensor

__all__ = ["rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]


def _check_register_once(cls, attr):
    if hasattr(cls, attr):
        raise RuntimeError(f"The custom device module of {cls} has already been registered with {attr}")


def _normalize_device(name, dev):
    def current():
        top = sys.modules["npusim"]
        mod = getattr(top, name, None)
        return mod.current_device() if mod is not None and hasattr(mod, "current_device") else 0

    if dev is None:
        return current()
    if isinstance(dev, str):
        dev = _device(dev)
    if isinstance(dev, _device):
        if dev.type != name:
            raise RuntimeError(f"Invalid device, must be {name} device")
        return current() if dev.index is None else dev.index
    return dev


def _generate_tensor_methods(name):
    def is_backend(self):
        return self._device.type == name

    _check_register_once(Tensor, f"is_{name}")
    is_backend.__name__ = f"is_{name}"
    setattr(Tensor, f"is_{name}", property(is_backend))

    def to_backend(self, device=None, non_blocking=False, **kwargs):
        idx = _normalize_device(name, device)
        return self.to(device=_device(name, idx), non_blocking=non_blocking, **kwargs)

    _check_register_once(Tensor, name)
    to_backend.__name__ = name
    setattr(Tensor, name, to_backend)


def _generate_module_methods(name):
    from .. import nn
    if not hasattr(Tensor, name):
        raise RuntimeError(f"Can not automatically generate {name}() method for npusim.nn.Module.Because "
                           f"npusim.Tensor doesn't has the method {name}().For this error, you can try setting "
                           f"for_tensor=True.")

    def module_to(self, device=None):
        return self._apply(lambda t: getattr(t, name)(device))

    _check_register_once(nn.Module, name)
    setattr(nn.Module, name, module_to)


def _generate_packed_sequence_methods(name):
    """``PackedSequence.<name>()`` and ``is_<name>``: built on the tensor methods, which must exist first."""
    from ..nn.utils.rnn import PackedSequence
    if not hasattr(Tensor, f"is_{name}") or not hasattr(Tensor, name):
        raise RuntimeError(f"Can not automatically generate is_{name}() or {name}() method for "
                           f"npusim.nn.utils.rnn.PackedSequence.Because npusim.Tensor doesn't has the method "
                           f"is_{name}() or {name}().For this error, you can try setting for_tensor=True.")

    def is_backend(self):
        return self.data.device.type == name

    _check_register_once(PackedSequence, f"is_{name}")
    setattr(PackedSequence, f"is_{name}", property(is_backend))

    def packed_sequence_to(self, *args, **kwargs):
        return self._to_device_type(name, args, kwargs)

    _check_register_once(PackedSequence, name)
    setattr(PackedSequence, name, packed_sequence_to)


def _generate_storage_methods(name, unsupported_dtype):
    def is_backend(self):
        return self.device.type == name

    _check_register_once(UntypedStorage, f"is_{name}")
    setattr(UntypedStorage, f"is_{name}", property(is_backend))

    def storage_to(self, device=None, non_blocking=False):
        idx = _normalize_device(name, device)
        if getattr(self, f"is_{name}") and self.get_device() == idx:
            return self
        return self.to(device=_device(name, idx), non_blocking=non_blocking)

    _check_register_once(UntypedStorage, name)
    setattr(UntypedStorage, name, storage_to)

    # and TypedStorage's, as torch's: the same over its untyped storage, rewrapped in its dtype
    from ..api.typed_storage import TypedStorage, _warn_typed_storage_removal

    def typed_is_backend(self):
        _warn_typed_storage_removal()
        return self._untyped_storage.device.type == name

    def typed_storage_to(self, device=None, non_blocking=False):
        _warn_typed_storage_removal()
        return self._new_wrapped_storage(storage_to(self._untyped_storage, device, non_blocking))

    _check_register_once(TypedStorage, f"is_{name}")
    setattr(TypedStorage, f"is_{name}", property(typed_is_backend))
    _check_register_once(TypedStorage, name)
    setattr(TypedStorage, name, typed_storage_to)


def generate_methods_for_privateuse1_backend(for_tensor: bool = True, for_module: bool = True,
                                             for_packed_sequence: bool = True, for_storage: bool = False,
                                             unsupported_dtype=None) -> None:
    """Generate ``Tensor.<name>()``/``is_<name>``, ``Module.<name>()``, ``Storage.<name>()``/``is_<name>``."""
    name = privateuse1_backend_name()
    if for_tensor:
        _generate_tensor_methods(name)
    if for_module:
        _generate_module_methods(name)
    if for_storage:
        _generate_storage_methods(name, unsupported_dtype)
    if for_packed_sequence:
        _generate_packed_sequence_methods(name)

