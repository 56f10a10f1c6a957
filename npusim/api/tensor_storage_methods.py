"""Tensor methods about storage and host memory: ``storage``, ``storage_type``, ``is_shared``, ``share_memory_``,
``pin_memory``, ``is_pinned``, ``record_stream`` and ``is_set_to``, as torch 2.13's."""
from __future__ import annotations

import numpy as np

from ..core.c10.device import CPU
from ..core.c10.device_hooks import get_device_hooks
from ..core.c10.stream import Stream
from ..core.tensor import Tensor
from .typed_storage import TypedStorage, _warn_typed_storage_removal


def _method(fn):
    setattr(Tensor, fn.__name__, fn)
    return fn


@_method
def storage(self):
    """The tensor's memory as a TypedStorage of its dtype (deprecated in torch: prefer ``untyped_storage()``)."""
    _warn_typed_storage_removal(stacklevel=2)
    return self._typed_storage()


@_method
def _typed_storage(self):
    return TypedStorage(wrap_storage=self.untyped_storage(), dtype=self.dtype, _internal=True)


@_method
def storage_type(self):
    """The legacy storage class of this tensor's dtype and device type (``npusim.FloatStorage``...), or None."""
    return self._typed_storage()._get_legacy_storage_class()


@_method
def is_shared(self):
    """Whether the tensor's memory is shared between processes (always for a device tensor, as CUDA's)."""
    return self._typed_storage()._is_shared()


@_method
def share_memory_(self):
    """Move the tensor's memory into shared memory (a no-op when already there or on a device); returns self.

    The tensor (and the tensor it views, if any) reads the shared memory afterwards; other tensors made over the
    old memory keep reading it (docs/storage.md)."""
    st = self.untyped_storage()
    if st.device is CPU and not st._shared:
        start = st.data_ptr()
        followers = [self] + [b for b in (self._base,) if b is not None and b.untyped_storage() is st]
        offsets = [t.data_ptr() - start for t in followers]
        st.share_memory_()
        for t, offset in zip(followers, offsets):
            a = t._a
            t._a = np.ndarray(a.shape, a.dtype, buffer=st._root, offset=offset, strides=a.strides)
    return self


@_method
def is_pinned(self, device=None):
    """Whether the tensor is in page-locked host memory (see ``pin_memory``)."""
    return self.untyped_storage().is_pinned(device) if self.device is CPU else False


@_method
def pin_memory(self, device=None):
    """A copy of this cpu tensor in page-locked host memory (self when it already is): host-to-device copies from
    it can be asynchronous. Pinned through CuPy on a GPU; a recorded property of the memory in emulation."""
    if self.device is not CPU:
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    st = self.untyped_storage()
    if st._pinned and device is None:
        return self
    pinned = st.pin_memory(device)
    if pinned is st:
        return self
    import npusim
    if self.requires_grad and npusim.is_grad_enabled():     # differentiable, as torch's _pin_memory
        return _PinMemory.apply(self, pinned)
    return _pinned_like(self, pinned)


def _pinned_like(t, pinned):
    import npusim
    return npusim.empty(0, dtype=t.dtype).set_(pinned, t.storage_offset(), t.shape, t.stride())


class _PinMemoryFunction:
    """The autograd function of ``pin_memory``: the gradient passes through unchanged."""

    _cls = None

    @classmethod
    def apply(cls, t, pinned):
        if cls._cls is None:
            from ..autograd import Function

            class PinMemory(Function):
                @staticmethod
                def forward(ctx, x, storage):
                    return _pinned_like(x, storage)

                @staticmethod
                def backward(ctx, grad):
                    return grad, None

            cls._cls = PinMemory
        return cls._cls.apply(t, pinned)


_PinMemory = _PinMemoryFunction


@_method
def record_stream(self, stream):
    """Mark the tensor's memory as in use by ``stream``: the allocator will not hand it out again until the
    work queued on ``stream`` by the time the tensor is freed is done."""
    if not isinstance(stream, Stream):
        raise RuntimeError("unknown parameter type")
    if self.device is CPU:
        raise NotImplementedError(
            "Could not run 'aten::record_stream' with arguments from the 'CPU' backend. This could be because the "
            "operator doesn't exist for this backend. 'aten::record_stream' is only available for these backends: "
            "[PrivateUse1].")
    get_device_hooks(self.device.type).record_stream(self.untyped_storage(), stream)


@_method
def is_set_to(self, tensor):
    """True when both tensors look at the same storage with the same offset, sizes and strides."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    if self.untyped_storage()._root is not tensor.untyped_storage()._root:
        return False
    if self.storage_offset() != tensor.storage_offset() or self.dim() != tensor.dim():
        return False
    return tuple(self.shape) == tuple(tensor.shape) and self.stride() == tensor.stride()
