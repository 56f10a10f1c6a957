"""Python entry points that would reach what a Python PrivateUse1 backend lacks in torch 2.13 (a C++ allocator,
generator or host-allocator hook), served from npusim's memory where possible and refused by name otherwise.

- ``torch.UntypedStorage(n, device="npu")`` (and so ``storage.clone()``, ``copy.deepcopy`` of a storage, typed
  storages) would call the missing PrivateUse1 allocator and crash: it takes npusim memory instead.
- ``UntypedStorage.resize_`` on the npu, ``Tensor.pin_memory()`` and ``torch.Generator(device="npu")`` raise a
  RuntimeError naming the limit.
"""
from __future__ import annotations

import torch

from .errors import refuse

_storage_new = torch.storage.UntypedStorage.__new__
_storage_resize = torch.storage.UntypedStorage.resize_
_pin_memory = torch.Tensor.pin_memory
_Generator = torch._C.Generator


def _is_npu(device) -> bool:
    if device is None:
        return False
    return (device if isinstance(device, torch.device) else torch.device(device)).type == "npu"


def _untyped_storage_new(cls, *args, device=None, **kwargs):
    if _is_npu(device):
        from .adoption import new_npu
        d = torch.device(device)
        if d.index not in (None, 0):
            refuse(f"a storage on {d}", "torch's Python hooks serve one device, npu:0")
        if len(args) == 1 and isinstance(args[0], int) and not kwargs:
            return new_npu([args[0]], torch.uint8).untyped_storage()
        if len(args) == 1 and isinstance(args[0], (list, tuple, bytes, bytearray)) and not kwargs:
            return torch.tensor(list(args[0]), dtype=torch.uint8).to("npu").untyped_storage()
        if not args and not kwargs:
            return new_npu([0], torch.uint8).untyped_storage()
        refuse(f"UntypedStorage{args} on the npu")
    return _storage_new(cls, *args, device=device, **kwargs)


def _untyped_storage_resize(self, size):
    if self.device.type == "npu":
        refuse("resizing an npu storage", "its memory is npusim's and torch has no PrivateUse1 allocator to grow it "
               "from Python; resize the tensor instead (Tensor.resize_ works)")
    return _storage_resize(self, size)


def _tensor_pin_memory(self, *args, **kwargs):
    refuse("pinned memory for the npu", "pinning needs a C++ host-allocator hook (PrivateUse1HooksInterface)")


class _GeneratorMeta(type(_Generator)):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _Generator)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, _Generator)


class Generator(_Generator, metaclass=_GeneratorMeta):
    """torch.Generator, refusing ``device="npu"``: generator objects need a C++ hook (npu random numbers come
    from npusim's generator, seeded by torch.manual_seed / torch.npu.manual_seed)."""

    def __new__(cls, device="cpu"):
        if _is_npu(device):
            refuse("torch.Generator(device='npu')", "generators need the C++ getDefaultGenerator hook; npu random "
                   "numbers come from npusim's Philox generator, seeded by torch.manual_seed and "
                   "torch.npu.manual_seed / set_rng_state")
        return _Generator(device)


def install() -> None:
    torch.storage.UntypedStorage.__new__ = _untyped_storage_new
    torch.storage.UntypedStorage.resize_ = _untyped_storage_resize
    torch.Tensor.pin_memory = _tensor_pin_memory_or_cpu
    torch.Generator = Generator


def _tensor_pin_memory_or_cpu(self, *args, **kwargs):
    """CPU tensors pin as before when an accelerator that can pin is given; the npu cannot."""
    device = args[0] if args else kwargs.get("device")
    if device is not None and not _is_npu(device):
        return _pin_memory(self, *args, **kwargs)
    return _tensor_pin_memory(self)
