"""torch.backends.cuda's cuBLAS workspace sizes and cuFFT plan caches.

The sizes are stored and read back with torch's defaults (``CUBLAS_WORKSPACE_CONFIG`` and
``CUBLASLT_WORKSPACE_SIZE`` read as torch reads them): on a GPU npusim's matmuls are CuPy's, whose cuBLAS handles
keep their own workspace. npusim's FFTs run through numpy.fft, or cupy.fft on a GPU, which keeps its own plan
cache; npusim makes no plans itself, so every device's plan cache here holds 0 plans; its ``max_size`` (torch's
default 4096) is kept per device.
"""
from __future__ import annotations

import os
import re

from . import cuda as _cuda

_DEFAULT_CUBLAS_CONFIG = ":4096:2:16:8"        # torch's default before Hopper: 2 x 4 MiB + 8 x 16 KiB
_DEFAULT_CUBLASLT_KIB = 1024
_CUFFT_DEFAULT_MAX_SIZE = 4096
_sizes: dict = {}


def _parse_cublas_config(text: str) -> int:
    pairs = re.findall(r":(\d+):(\d+)", text or "")
    return sum(int(size) * 1024 * int(count) for size, count in pairs)


def _size(kind: str) -> int:
    if kind not in _sizes:
        if kind == "cublas":
            _sizes[kind] = _parse_cublas_config(os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")) or \
                _parse_cublas_config(_DEFAULT_CUBLAS_CONFIG)
        else:
            kib = os.environ.get("CUBLASLT_WORKSPACE_SIZE", "")
            _sizes[kind] = (int(kib) if kib.isdigit() else _DEFAULT_CUBLASLT_KIB) * 1024
    return _sizes[kind]


def _set_size(kind: str, size) -> None:
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"workspace size must be an int, not {type(size).__name__}")
    if size < 0:
        raise RuntimeError(f"workspace size must be non-negative, but got {size}")
    _sizes[kind] = size


def cublas_workspace_size(size: None | int = None) -> int:
    """Query or set the cuBLAS workspace size in bytes (stored; returns the current or new size)."""
    if size is not None:
        _set_size("cublas", size)
    return _size("cublas")


def cublaslt_workspace_size(size: None | int = None) -> int:
    """Query or set the cuBLASLt workspace size in bytes (stored; returns the current or new size)."""
    if size is not None:
        _set_size("cublaslt", size)
    return _size("cublaslt")


_BLAS_BACKENDS = {"default": "cublas", "cublas": "cublas", "hipblas": "cublas", "cublaslt": "cublaslt",
                  "hipblaslt": "cublaslt", "ck": "ck"}


def blas_workspace_size(size: None | int = None, backend: None | str = None) -> int:
    """Query or set the workspace size of a BLAS backend (default: the preferred one, ``preferred_blas_library``)."""
    if backend is None:
        resolved = _BLAS_BACKENDS[_cuda.preferred_blas_library()]
    elif isinstance(backend, str):
        if backend not in _BLAS_BACKENDS:
            raise RuntimeError(f"Unknown backend string. Choose from: {', '.join(_BLAS_BACKENDS)}.")
        resolved = _BLAS_BACKENDS[backend]
    else:
        raise RuntimeError("Unknown backend type.")
    if resolved == "ck":
        raise RuntimeError("CK backend does not use a workspace.")
    return cublaslt_workspace_size(size) if resolved == "cublaslt" else cublas_workspace_size(size)


class cuFFTPlanCache:  # noqa: N801 - torch's name
    """One device's FFT plan cache: ``size`` (plans held, read-only), ``max_size`` and ``clear()``."""

    def __init__(self, device_index: int):
        self.device_index = device_index
        self._max_size = _CUFFT_DEFAULT_MAX_SIZE

    @property
    def size(self) -> int:
        return 0

    @size.setter
    def size(self, value):
        raise RuntimeError(".size is a read-only property showing the number of plans currently in the cache. To "
                           "change the cache capacity, set cufft_plan_cache.max_size.")

    @property
    def max_size(self) -> int:
        return self._max_size

    @max_size.setter
    def max_size(self, value):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"max_size must be an int, not {type(value).__name__}")
        if value < 0:
            raise RuntimeError(f"cuFFT plan cache size must be non-negative, but got {value}")
        self._max_size = value

    def clear(self) -> None:
        """Drop every cached plan (there are none)."""


class cuFFTPlanCacheManager:  # noqa: N801 - torch's name
    """Every npu's plan cache: ``cufft_plan_cache[i]``; used directly, the current device's."""

    __initialized = False

    def __init__(self):
        self.caches = []
        self.__initialized = True

    def __getitem__(self, device):
        import npusim
        count = npusim.npu.device_count()
        index = device if isinstance(device, int) else npusim.device(device).index
        index = npusim.npu.current_device() if index is None else index
        if index < 0 or index >= count:
            raise RuntimeError(f"cufft_plan_cache: expected 0 <= device index < {count}, but got device with "
                               f"index {index}")
        if not self.caches:
            self.caches.extend(cuFFTPlanCache(i) for i in range(count))
        return self.caches[index]

    def __getattr__(self, name):
        import npusim
        return getattr(self[npusim.npu.current_device()], name)

    def __setattr__(self, name, value):
        if self.__initialized:
            import npusim
            return setattr(self[npusim.npu.current_device()], name, value)
        return super().__setattr__(name, value)


cufft_plan_cache = cuFFTPlanCacheManager()

__all__ = ["cublas_workspace_size", "cublaslt_workspace_size", "blas_workspace_size", "cufft_plan_cache"]
