"""``UntypedStorage``: the bytes behind one or more tensors.

A storage wraps the root array of an allocation (NumPy on the cpu and the
emulated npu, CuPy on a GPU). Views share it; ``data_ptr`` is the address of its
first byte. Backends may subclass it to account for device memory.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .device import CPU, device as _device


def array_address(a) -> int:
    """Address of an array's first element (NumPy or any CUDA-array-interface array)."""
    ai = getattr(a, "__array_interface__", None)
    if ai is not None:
        return ai["data"][0]
    return a.__cuda_array_interface__["data"][0]


def array_root(a):
    """The array that owns ``a``'s memory (walks ``.base`` while it is an array)."""
    cls = a.__class__
    while isinstance(getattr(a, "base", None), cls):
        a = a.base
    return a


def _is_dense(a) -> bool:
    return a.flags.c_contiguous or a.flags.f_contiguous


def _byte_view(a):
    """A 1-D uint8 view of a dense array's bytes in memory order."""
    return a.reshape(-1, order="A").view(np.uint8) if a.ndim != 1 or a.dtype != np.uint8 else a


class UntypedStorage:
    """Raw bytes on a device (``torch.UntypedStorage``)."""

    __slots__ = ("_root", "_device", "__weakref__", "__dict__")

    def __init__(self, *args, device=None):
        dev = CPU if device is None else _device(device)
        if len(args) == 1 and isinstance(args[0], int) and not isinstance(args[0], bool):
            if args[0] < 0:
                raise RuntimeError(f"Storage size must be non-negative, got {args[0]}")
            data = np.zeros(args[0], np.uint8)
        elif len(args) == 1 and isinstance(args[0], (list, tuple, bytes, bytearray)):
            data = np.array(list(args[0]), dtype=np.uint8)
        elif not args:
            data = np.zeros(0, np.uint8)
        else:
            raise TypeError("UntypedStorage(): expected (int size) or (sequence of bytes)")
        src = UntypedStorage._wrap(data, CPU)
        if dev is not CPU:
            src = src.to(device=dev)
        # adopt the (possibly device-accounted) storage's state
        self._root, self._device = src._root, src._device
        if type(src) is not UntypedStorage:
            self._keep = src  # a backend's storage subclass owns the accounting: keep it alive

    @classmethod
    def _wrap(cls, root, device):
        s = object.__new__(cls)
        s._root = root
        s._device = device
        return s

    # --- facts -------------------------------------------------------------
    @property
    def device(self):
        return self._device

    def nbytes(self) -> int:
        return int(self._root.nbytes) if _is_dense(self._root) else self._span()[1]

    def size(self) -> int:
        return self.nbytes()

    __len__ = size

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        return self._span()[0]

    def _span(self):
        """(lowest address, byte length) of the memory the root array covers."""
        r = self._root
        if _is_dense(r):
            return array_address(r), int(r.nbytes)
        lo = array_address(r)
        hi = lo + r.itemsize
        for n, st in zip(r.shape, r.strides):
            if n == 0:
                return lo, 0
            if st < 0:
                lo += st * (n - 1)
            else:
                hi += st * (n - 1)
        return lo, hi - lo

    @property
    def is_cpu(self) -> bool:
        return self._device is CPU

    is_sparse = False

    def get_device(self) -> int:
        return -1 if self._device is CPU else self._device.index

    def type(self):
        return "npusim.UntypedStorage"

    # --- bytes ---------------------------------------------------------------
    def _bytes(self):
        """A uint8 array aliasing the storage (same device)."""
        r = self._root
        if _is_dense(r):
            return _byte_view(r)
        lo, n = self._span()
        if self._device is not CPU:
            raise RuntimeError("non-dense device storage cannot be viewed as bytes")
        buf = (ctypes.c_ubyte * n).from_address(lo)
        out = np.frombuffer(buf, dtype=np.uint8)
        return out

    def _as_tensor(self):
        """A 1-D uint8 tensor aliasing these bytes, on the storage's device."""
        from ..tensor import tensor_over_storage
        return tensor_over_storage(self)

    def tolist(self):
        return self.cpu()._bytes().tolist()

    def __getitem__(self, idx):
        b = self._bytes()
        if isinstance(idx, slice):
            return UntypedStorage._wrap(b[idx], self._device)
        if self._device is not CPU:
            return int(self._as_tensor()[idx].item())
        return int(b[idx])

    def __setitem__(self, idx, value):
        self._as_tensor()[idx] = value

    def fill_(self, value):
        self._as_tensor().fill_(value)
        return self

    def copy_(self, src, non_blocking=False):
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch: copying a storage of {src.nbytes()} bytes into one of "
                               f"{self.nbytes()} bytes")
        self._as_tensor().copy_(src._as_tensor())
        return self

    def clone(self):
        return self._as_tensor().clone().untyped_storage()

    # As torch's: a copy of a storage is new memory holding the same bytes, shallow or deep (for a device
    # storage, new memory accounted on its own).
    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return self.clone()

    def cpu(self):
        if self._device is CPU:
            return self
        return self._as_tensor().cpu().untyped_storage()

    def to(self, *, device=None, non_blocking=False):
        dev = CPU if device is None else _device(device)
        if dev is self._device:
            return self
        return self._as_tensor().to(dev).untyped_storage()

    def __repr__(self):
        vals = self.tolist()
        body = "\n".join(f" {v}" for v in vals)
        return f"{body}\n[npusim.storage.UntypedStorage(device={self._device}) of size {len(vals)}]"

    def __eq__(self, other):
        return self is other

    def __hash__(self):
        return id(self)
