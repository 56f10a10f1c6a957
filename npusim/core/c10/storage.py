"""``UntypedStorage``: the bytes behind one or more tensors.

A storage wraps the root array of an allocation (NumPy on the cpu and the
emulated npu, CuPy on a GPU). Views share it; ``data_ptr`` is the address of its
first byte. Backends may subclass it to account for device memory.

Host memory comes in kinds torch's has too: shared (``share_memory_``, an anonymous ``MAP_SHARED`` mapping a
forked child writes through), file-backed (``from_file``, ``mmap`` of a file), and pinned (``pin_memory``, page-locked
through the accelerator's hooks; a recorded property where the accelerator is emulated).
"""
from __future__ import annotations

import ctypes
import mmap
import os
import sys

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


class StorageBase:
    """The base class of UntypedStorage (``torch.StorageBase``); not constructible itself."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        if cls is StorageBase:
            raise RuntimeError("Cannot directly construct StorageBase; subclass it and then construct that")
        return object.__new__(cls)


class UntypedStorage(StorageBase):
    """Raw bytes on a device (``torch.UntypedStorage``)."""

    __slots__ = ("_root", "_device", "__weakref__", "__dict__")

    # kinds of host memory (instance attributes override these defaults)
    _shared = False        # in shared memory: share_memory_() or from_file()
    _pinned = False        # page-locked host memory: pin_memory()
    _filename = None       # the file a shared from_file() mapping writes to
    _resizable = True      # from_file() mappings have a fixed size
    # a backend's storage classes that may trade memory and accounting (``_adopt``): classes of one family have one
    # layout, and the class goes with the accounting (a backend may keep per-size classes)
    _accounting_family = None

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

    def type(self, dtype=None, non_blocking=False):
        if dtype is None:
            return "npusim.UntypedStorage"
        return _type_conversion(self, dtype, non_blocking)

    def untyped(self):
        return self

    def new(self):
        """An empty storage on the same device."""
        return UntypedStorage(0, device=self._device)

    # --- kinds of memory ---------------------------------------------------------------------------------------
    @property
    def filename(self):
        """The file this storage maps when it was made by ``from_file(..., shared=True)``, else None."""
        return self._filename

    def resizable(self) -> bool:
        return self._resizable

    def is_shared(self) -> bool:
        # as torch's: every device storage counts as shared (CUDA's IPC); host memory when it is a shared mapping
        return self._shared or self._device is not CPU

    def share_memory_(self):
        """Move the bytes into shared memory (a no-op on a device, or when already shared); returns self.

        The storage (and the tensor ``Tensor.share_memory_`` is called on) now reads the shared copy; other
        tensors made over the old memory before the move keep reading the old memory (docs/storage.md).
        """
        if self._device is CPU and not self._shared:
            n = self.nbytes()
            shared = _shared_bytes(n)
            shared[:] = self._bytes()
            self._root = shared
            self._shared = True
        return self

    @classmethod
    def _new_shared(cls, size, *, device="cpu"):
        """A new storage of ``size`` bytes in shared memory (on a device: an ordinary one)."""
        dev = _device(device)
        if dev is not CPU:
            return cls(size, device=dev)
        s = UntypedStorage._wrap(_shared_bytes(size), CPU)
        s._shared = True
        return s

    def is_pinned(self, device=None) -> bool:
        if device is not None:
            _pinning_hooks(device)
        return self._pinned

    def pin_memory(self, device=None):
        """A copy of this cpu storage in page-locked host memory (self when it already is)."""
        if self._device is not CPU:
            raise TypeError(f"cannot pin '{self.type()}' only CPU memory can be pinned")
        hooks = _pinning_hooks(device)
        if self._pinned:
            return self
        n = self.nbytes()
        arr = hooks.pinned_host_bytes(n)
        if arr is None:     # an emulated accelerator: ordinary memory, pinned as a recorded property
            arr = np.empty(n, np.uint8)
        arr[:] = self._bytes()
        s = UntypedStorage._wrap(arr, CPU)
        s._pinned = True
        return s

    def resize_(self, size):
        """Resize to ``size`` bytes in place: the first bytes are kept, new ones are zero.

        Tensors made over the storage before the resize keep reading its old memory (torch's would read freed
        memory); the storage itself, and tensors made over it afterwards, see the new bytes.
        """
        if not isinstance(size, int) or isinstance(size, bool):
            raise RuntimeError(f"resize_ expects an int, but got {type(size).__name__}")
        if not self._resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        if size < 0:
            raise RuntimeError(f"[enforce fail at alloc_cpu.cpp:98] ((ptrdiff_t)nbytes) >= 0. alloc_cpu() seems to "
                               f"have been called with negative number: {size + (1 << 64)}")
        old = self.nbytes()
        keep = min(old, size)
        if self._device is CPU:
            new = _shared_bytes(size) if self._shared else np.zeros(size, np.uint8)
            new[:keep] = self._bytes()[:keep]
            self._root = new
            self._pinned = False
            return self
        grown = self._as_tensor().new_zeros(size)        # device memory, accounted by the backend's storage
        grown[:keep] = self._as_tensor()[:keep]
        self._adopt(grown.untyped_storage())
        return self

    def _adopt(self, other) -> None:
        """Take ``other``'s memory (and, for a backend's storage of the same class, its accounting, handing it
        this storage's old memory and accounting to release when it dies)."""
        family = self._accounting_family
        if type(other) is type(self) or family is not None and other._accounting_family is family:
            if type(other) is not type(self):
                self.__class__, other.__class__ = type(other), type(self)
            for cls in type(self).__mro__:
                for slot in cls.__dict__.get("__slots__", ()):
                    if slot in ("__weakref__", "__dict__") or not hasattr(other, slot):
                        continue
                    mine = getattr(self, slot, None)
                    setattr(self, slot, getattr(other, slot))
                    setattr(other, slot, mine)
        else:
            self._root, self._device = other._root, other._device
            self._keep = other

    def byteswap(self, dtype):
        """Swap the bytes of each element of ``dtype`` in place (complex: each of its two parts)."""
        size = dtype.itemsize // 2 if getattr(dtype, "is_complex", False) else dtype.itemsize
        if size > 1:
            b = self._as_tensor()
            n = b.numel() // size * size
            if n:
                b[:n].copy_(b[:n].view(-1, size).flip(1).reshape(-1))
        return None

    # --- storages made from host bytes ---------------------------------------------------------------------------
    @classmethod
    def from_buffer(cls, buffer, byte_order=None, count=-1, offset=0, *, dtype=None):
        """A cpu storage holding a copy of ``buffer``'s bytes read as ``dtype`` elements in ``byte_order``."""
        if dtype is None:
            raise RuntimeError("argument 'dtype' cannot be None")
        view = memoryview(buffer).cast("B")
        itemsize = dtype.itemsize
        if byte_order is None and itemsize > 1:
            raise RuntimeError("function missing required argument 'byte_order' (pos 2)")
        if byte_order is not None and byte_order not in ("big", "little", "native"):
            raise ValueError(f"invalid byte_order '{byte_order}' (expected 'big', 'little', or 'native')")
        n = len(view)
        if offset < 0 or offset > n:
            raise ValueError(f"offset must be non-negative and no greater than buffer length ({n}) , but got "
                             f"{offset}")
        if count < 0:
            if (n - offset) % itemsize != 0:
                raise ValueError(f"buffer size ({n - offset}) must be a multiple of element size ({itemsize})")
            count = (n - offset) // itemsize
        if offset + count * itemsize > n:
            raise ValueError(f"buffer has only {n - offset} elements after offset {offset}, but specified a size of "
                             f"{count}")
        data = np.frombuffer(view, np.uint8, count * itemsize, offset).copy()
        if itemsize > 1 and byte_order not in ("native", sys.byteorder):
            size = itemsize // 2 if getattr(dtype, "is_complex", False) else itemsize
            data = data.reshape(-1, size)[:, ::-1].reshape(-1).copy()
        return UntypedStorage._wrap(data, CPU)

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """A cpu storage of ``nbytes`` mapped from ``filename``.

        ``shared=True`` maps it shared (writes reach the file; a missing file is made and a short one grown to
        ``nbytes``); otherwise privately (writes stay in memory) and the file must hold ``nbytes`` bytes.
        Nothing is created or changed when the mapping cannot be made.
        """
        if not isinstance(filename, str):
            raise TypeError(f"from_file(): argument 'filename' (position 1) must be str, not "
                            f"{type(filename).__name__}")
        shared = bool(shared)
        nbytes = 0 if nbytes is None else nbytes
        if not isinstance(nbytes, int) or isinstance(nbytes, bool):
            raise TypeError(f"from_file(): argument 'nbytes' must be int, not {type(nbytes).__name__}")
        mode = "read-write" if shared else "read-only"
        created = False
        try:
            if shared:
                created = not os.path.exists(filename)
                fd = os.open(filename, os.O_RDWR | os.O_CREAT, 0o600)
            else:
                fd = os.open(filename, os.O_RDONLY)
        except OSError as e:
            raise RuntimeError(f"unable to open file <{filename}> in {mode} mode: {e.strerror} ({e.errno})") from None
        try:
            if nbytes < 0:
                raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: Cannot allocate memory "
                                   f"(12)")
            have = os.fstat(fd).st_size
            if have < nbytes and not shared:
                raise RuntimeError(f"file <{filename}> size <{have}> is smaller than the required mapping size "
                                   f"<{nbytes}>")
            if nbytes == 0:
                data = np.zeros(0, np.uint8)
            else:
                try:
                    if have < nbytes:
                        os.ftruncate(fd, nbytes)
                    mapping = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE,
                                        prot=mmap.PROT_READ | mmap.PROT_WRITE)
                except (OSError, ValueError, OverflowError) as e:
                    if created:
                        os.unlink(filename)
                    elif shared and have < nbytes:
                        os.ftruncate(fd, have)
                    errno = getattr(e, "errno", None) or 12
                    why = getattr(e, "strerror", None) or os.strerror(errno)
                    raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{filename}>: {why} ({errno})") \
                        from None
                data = np.frombuffer(mapping, np.uint8)
        finally:
            os.close(fd)
        s = UntypedStorage._wrap(data, CPU)
        s._shared = True
        s._resizable = False
        if shared:
            s._filename = filename
        return s

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

    def __iter__(self):
        return iter(self.tolist())

    def __hash__(self):
        return id(self)


def _shared_bytes(n: int):
    """``n`` zero bytes in an anonymous shared mapping (a forked child writes to the same memory)."""
    if n == 0:
        return np.zeros(0, np.uint8)
    return np.frombuffer(mmap.mmap(-1, n, flags=mmap.MAP_SHARED), np.uint8)


def _pinning_hooks(device):
    """The hooks of the accelerator that pins host memory (``device``: None for the current accelerator)."""
    from .device import privateuse1_backend_name
    from .device_hooks import get_device_hooks
    if device is not None:
        dev = _device(device)
        if dev.type == "cpu":
            raise RuntimeError("CPU device type not an accelerator.")
    hooks = get_device_hooks(privateuse1_backend_name() if device is None else _device(device).type)
    if hooks is None or not hooks.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return hooks


def _type_conversion(storage, dtype, non_blocking):
    """torch's ``_type`` for storages: a storage class (or its name) made of this storage's size, copied into."""
    if isinstance(dtype, str):
        import importlib
        module, _, name = dtype.rpartition(".")
        dtype = getattr(importlib.import_module(module), name)
    if type(storage) is dtype:
        return storage
    return dtype(storage.size()).copy_(storage, non_blocking)
