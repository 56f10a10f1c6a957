"""``npusim.from_file``: a cpu tensor over a memory-mapped file (torch.from_file)."""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.c10.device import CPU, device as _device
from ..core.c10.storage import UntypedStorage
from .factories import _check_dtype, _check_requires_grad


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False):
    """from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False)

    A 1-D cpu tensor of ``size`` elements over a memory-mapped file. With ``shared=True`` changes are written to the
    file (which is made, or grown, to hold ``size`` elements); otherwise they stay in memory and the file must hold
    at least ``size * dtype.itemsize`` bytes. A file that cannot be mapped raises torch's RuntimeError and is left
    as it was.
    """
    if not isinstance(filename, str):
        raise TypeError(f"from_file(): argument 'filename' (position 1) must be str, not {type(filename).__name__}")
    if shared is not None and not isinstance(shared, bool):
        raise TypeError(f"from_file(): argument 'shared' (position 2) must be bool, not {type(shared).__name__}")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool)):
        raise TypeError(f"from_file(): argument 'size' (position 3) must be int, not {type(size).__name__}")
    dtype = _check_dtype("from_file", dtype)
    _check_requires_grad(None, requires_grad, "from_file")
    dtype = D.get_default_dtype() if dtype is None else dtype
    if device is not None and _device(device) is not CPU:
        raise RuntimeError(f"from_file: only cpu tensors can be mapped from a file, got device {_device(device)}")
    _check_requires_grad(dtype, requires_grad)
    n = 0 if size is None else size
    st = UntypedStorage.from_file(filename, bool(shared), n * dtype.itemsize)
    import npusim
    t = npusim.empty(0, dtype=dtype).set_(st)
    if pin_memory:
        t = t.pin_memory()
    if requires_grad:
        t.requires_grad_(True)
    return t
