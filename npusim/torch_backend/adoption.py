"""torch tensors on the npu over npusim's memory, zero-copy both ways.

An npu tensor's storage is a real PrivateUse1 storage over the NumPy (or CuPy) buffer of an npusim npu tensor:
``torch._C._construct_storage_from_data_pointer`` makes it, and the storage's Python object keeps the npusim
tensor (so the buffer, and npusim's allocator accounting of it, live exactly as long as the storage). A tensor
is put on it with the CPU kernel of ``aten::set_`` (metadata only), so sizes, strides, offsets, views, ``_base``
and version counters are torch's own; npusim's kernels see every npu tensor as an array view with its strides.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np
import torch

import npusim
from npusim.privateuse1 import array_of, from_array, get_device_hooks, view_of_array

from .dtypes import NPUSIM, NUMPY, TORCH_OF_NUMPY

DEVICE = torch.device("npu", 0)
NPUSIM_DEVICE = npusim.device("npu", 0)
NPUSIM_CPU = npusim.device("cpu")
CPU_KEYS = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)

_set_storage = torch._C._dispatch_get_computed_kernel_for_dispatch_key(
    "aten::set_.source_Storage_storage_offset", "CPU").call_boxed
_storage_at = torch._C._construct_storage_from_data_pointer
_empty_shell = torch._C._acc.create_empty_tensor
_ndarray = np.ndarray
_hooks = get_device_hooks("npu")
_emulated = _hooks.array_namespace(NPUSIM_DEVICE) is np


class NotAdoptable(Exception):
    """A tensor npusim cannot see as an npu array (a dtype npusim lacks, memory npusim did not make)."""


_char_at = ctypes.c_char.from_buffer
_addressof = ctypes.addressof


def _address(a) -> int:
    if a.__class__ is _ndarray:
        if a.flags.writeable and a.size:
            try:
                return _addressof(_char_at(a))      # a quarter of a.ctypes.data's cost
            except (ValueError, TypeError):     # a dtype the buffer protocol cannot name (bfloat16)
                pass
        return a.ctypes.data
    return a.data.ptr      # CuPy


def _root(a):
    while isinstance(a.base, a.__class__):
        a = a.base
    return a


def _flat_bytes(root):
    """An array over all of ``root``'s bytes usable as a buffer (C-contiguous), or None when it has gaps."""
    if root.flags.c_contiguous:
        return root
    if root.flags.f_contiguous:
        return root.reshape(-1, order="A")
    return None


def storage_of(nt):
    """A torch PrivateUse1 storage over the memory of npusim npu tensor ``nt``, and that memory as a buffer."""
    flat = _flat_bytes(_root(array_of(nt)))
    address = _address(flat)
    st = _storage_at(address, DEVICE, flat.nbytes)
    _remember(address, nt)
    # (npusim tensor, buffer, whole): keeps the buffer and its accounting alive as long as the storage
    st._npusim = (nt, flat, None)
    return st, flat


def adopt(nt, dtype=None):
    """A torch npu tensor over npusim npu tensor ``nt``'s memory (no copy when torch can describe it)."""
    a = array_of(nt)
    if dtype is None:
        dtype = TORCH_OF_NUMPY[a.dtype]
    t = _empty_shell((0,), dtype)
    if a.base is None and a.flags.c_contiguous:     # a fresh result: the common case, its own root
        if _emulated:
            try:
                address = _addressof(_char_at(a))      # _address's fast case, without its checks
            except (ValueError, TypeError):     # empty, read-only, or a dtype the buffer protocol cannot name
                address = a.ctypes.data
        else:
            address = a.data.ptr
        st = _storage_at(address, DEVICE, a.nbytes)
        if not _emulated:
            _remember(address, nt)
        st._npusim = (nt, a, (a.shape, dtype))     # whole: array_view gives ``a`` back for a tensor of all of it
        _set_storage(CPU_KEYS, t, st, 0, a.shape)      # strides left out: torch's contiguous ones, as C order's
        return t
    set_onto(t, nt)
    return t


def set_onto(t, nt) -> None:
    """Point torch npu tensor ``t`` at npusim tensor ``nt``'s memory (metadata only, torch's CPU ``set_``)."""
    a = array_of(nt)
    flat = _flat_bytes(_root(a))
    if flat is None or any(s < 0 for s in a.strides):    # torch cannot describe it: a dense copy
        xp = _hooks.array_namespace(NPUSIM_DEVICE)
        nt = from_array(xp.ascontiguousarray(a), NPUSIM_DEVICE)
        a = flat = array_of(nt)
    address = _address(flat)
    st = _storage_at(address, DEVICE, flat.nbytes)
    _remember(address, nt)
    st._npusim = (nt, flat, None)
    item = a.itemsize
    offset = (_address(a) - _address(flat)) // item if a.size and a is not flat else 0
    _set_storage(CPU_KEYS, t, st, offset, a.shape, [s // item for s in a.strides])


# On a GPU, address -> weak reference to the npusim tensor whose memory starts there: how a storage torch's C++
# wraps anew around npu memory (legacy pickling) finds that memory (emulation reads it through its address).
_gpu_owners: dict = {}


def _remember(address, nt) -> None:
    if not _emulated:
        _gpu_owners[address] = weakref.ref(nt)


def _borrowed(st):
    """The memory of an npu storage torch's C++ wrapped anew (legacy pickling wraps the same memory in a new
    storage object, without this package's attributes): a uint8 array over it, valid while the caller holds
    the storage, and an npusim tensor standing for it."""
    import ctypes
    n = st.nbytes()
    if not n or st.device.type != "npu":
        return None
    if not _emulated:
        ref = _gpu_owners.get(st.data_ptr())
        nt = ref() if ref is not None else None
        return None if nt is None else _flat_bytes(_root(array_of(nt)))
    flat = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(st.data_ptr()))
    return flat


def array_view(t):
    """The NumPy (CuPy) array of torch npu tensor ``t``'s elements, a view with its strides."""
    st = t.untyped_storage()
    try:
        _, root, whole = st._npusim
    except AttributeError:
        whole = None
        root = _borrowed(st)
        if root is not None:
            pass
        elif t.numel() == 0:
            return _hooks.array_namespace(NPUSIM_DEVICE).empty(tuple(t.shape), NUMPY[t.dtype])
        else:
            raise NotAdoptable("an npu tensor whose storage npusim did not make") from None
    if whole is not None and whole[0] == t.shape and whole[1] is t.dtype and not t.storage_offset() \
            and t.is_contiguous():
        return root
    item = t.element_size()
    if root.__class__ is _ndarray:
        return _ndarray(t.shape, NUMPY[t.dtype], buffer=root, offset=t.storage_offset() * item,
                        strides=[s * item for s in t.stride()])
    return _cupy_view(root, t, item)


def _cupy_view(root, t, item):
    """A CuPy view with torch's strides (CuPy arrays are views of a root; no raw pointer is needed)."""
    as_strided = _hooks.array_namespace(NPUSIM_DEVICE).lib.stride_tricks.as_strided
    flat = root.reshape(-1).view("uint8")[t.storage_offset() * item:]
    flat = flat[:flat.size // item * item].view(NUMPY[t.dtype])
    return as_strided(flat, tuple(t.shape), tuple(s * item for s in t.stride()))


def npusim_view(t):
    """An npusim npu tensor viewing torch npu tensor ``t``'s memory (no copy, no new accounting)."""
    st = t.untyped_storage()
    try:
        base = st._npusim[0]
    except AttributeError:
        if _borrowed(st) is not None and t.dtype in NPUSIM:      # a copy npusim accounts while it lives
            return from_array(array_view(t).copy(), NPUSIM_DEVICE)
        elif t.numel() == 0 and t.dtype in NPUSIM:
            return npusim.empty(tuple(t.shape), dtype=NPUSIM[t.dtype], device=NPUSIM_DEVICE)
        else:
            raise NotAdoptable("an npu tensor whose storage npusim did not make") from None
    if t.dtype not in NPUSIM:
        raise NotAdoptable(f"npusim has no {t.dtype}")
    return view_of_array(array_view(t), base)


def cpu_alias(t):
    """A torch CPU tensor aliasing torch npu tensor ``t``'s memory (emulation only: the memory is the host's)."""
    a = array_view(t)
    if a.__class__ is not _ndarray:
        raise NotAdoptable("the npu is a GPU here: its memory has no CPU alias")
    if t.dtype is torch.bfloat16:
        return torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def npu_from_host(cpu_tensor):
    """A new torch npu tensor holding a copy of a torch CPU tensor (contiguous)."""
    c = cpu_tensor.detach().contiguous()
    dtype = c.dtype
    if dtype is torch.bfloat16:
        host = c.view(torch.uint16).numpy().view(NUMPY[dtype])
    else:
        host = c.numpy()
    xp = _hooks.array_namespace(NPUSIM_DEVICE)
    return adopt(from_array(xp.array(host, copy=True), NPUSIM_DEVICE), dtype)


_OOM = npusim.npu.OutOfMemoryError


def new_npu(shape, dtype, strides=None):
    """A new, uninitialised torch npu tensor from npusim's allocator (capacity checked, accounted); a request
    beyond npusim's capacity raises torch.OutOfMemoryError."""
    try:
        return _new_npu(shape, dtype, strides)
    except _OOM as e:
        raise torch.OutOfMemoryError(str(e)) from None


def _new_npu(shape, dtype, strides=None):
    ndt = NPUSIM.get(dtype)
    if strides is None or list(strides) == _contiguous_strides(shape):
        # contiguous (``.to("npu")`` asks empty_strided for torch's contiguous strides): a typed array, which
        # array_view hands back as it is, with no view to build per op
        if ndt is not None:
            return adopt(npusim.empty(tuple(shape), dtype=ndt, device=NPUSIM_DEVICE), dtype)
        strides = _contiguous_strides(shape)
    # empty_strided, or a dtype npusim lacks: a byte buffer big enough, then torch's own metadata over it
    item = NUMPY[dtype].itemsize
    n = 0 if any(s == 0 for s in shape) else 1 + sum((s - 1) * st for s, st in zip(shape, strides))
    nt = npusim.empty(n * item, dtype=npusim.uint8, device=NPUSIM_DEVICE)
    st, _ = storage_of(nt)
    t = _empty_shell((0,), dtype)
    _set_storage(CPU_KEYS, t, st, 0, list(shape), list(strides))
    return t


def _contiguous_strides(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= max(n, 1)
    return out[::-1]


__all__ = ["adopt", "array_view", "npusim_view", "cpu_alias", "npu_from_host", "new_npu", "set_onto",
           "storage_of", "NotAdoptable", "DEVICE", "NPUSIM_DEVICE", "NPUSIM_CPU", "CPU_KEYS"]
