"""The npu runtime: which mode it runs in, its devices, the current device, lazy init.

The mode is probed once per process at first use, cheaply: without CuPy on the
path there is no import at all, nor with CuPy where the CUDA driver library does
not load (CuPy reaches no GPU without it); otherwise one device-count query decides.
``NPUSIM_BACKEND`` forces a mode. Like CUDA, the runtime initialises lazily and
a child forked after its parent initialised it refuses to use it.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import threading

from ..privateuse1 import PRIVATEUSE1, log_api_usage_once, refresh_storage_factories, refuse_device_type
from .config import Config, read_config


class NpuRuntimeError(RuntimeError):
    pass


def _driver_loads() -> bool:
    """Whether the CUDA driver library loads (CuPy reaches a GPU through it)."""
    import ctypes
    for name in ("nvcuda.dll",) if os.name == "nt" else ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def _compiled_cupy(spec) -> bool:
    """Whether the ``cupy`` found is CuPy itself (compiled extension modules, which need the driver), not a
    pure-Python stand-in."""
    for root in spec.submodule_search_locations or ():
        try:
            return any(name.endswith((".so", ".pyd")) for name in os.listdir(os.path.join(root, "_core")))
        except OSError:
            pass
    return False


def _cuda_device_count(look_before_import: bool = False) -> tuple[int, str]:
    """Usable CUDA devices through CuPy and, when there are none, why (CuPy absent, no driver, no GPU).

    ``look_before_import``: CuPy itself without a loadable driver reaches no GPU, so it is not imported (its import
    takes a large part of a second): the emulation starts without it."""
    spec = importlib.util.find_spec("cupy")
    if spec is None:
        return 0, "CuPy is not installed"
    if look_before_import and _compiled_cupy(spec) and not _driver_loads():
        return 0, "CuPy cannot reach a GPU: the CUDA driver library does not load"
    try:
        import cupy
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:  # CuPy without a driver or a GPU raises from the query: that means emulation
        return 0, f"CuPy cannot reach a GPU: {type(e).__name__}: {e}"
    return n, "" if n > 0 else "CuPy reports 0 GPUs"


class _ThreadState(threading.local):
    device = 0


class Runtime:
    def __init__(self):
        self._lock = threading.RLock()
        self.mode: str | None = None
        self.initialized = False
        self.in_bad_fork = False
        self._tls = _ThreadState()
        self._init_hooks = []
        self._pending = []      # one-shot work queued before init (seeds)
        self._cuda_count = None
        self._probe_error = ""   # why a forced-cuda probe failed: later calls fail the same way, without probing

    # --- configuration and mode -------------------------------------------------------------
    @functools.cached_property
    def config(self) -> Config:
        """The settings, read at first use (then a plain attribute: the CPU fallback reads it on every call)."""
        return read_config()

    def probe(self) -> str:
        """Decide the mode once: ``cuda`` (CuPy + a GPU) or ``emulation``."""
        if self.mode is not None:
            return self.mode
        with self._lock:
            if self._probe_error:
                raise NpuRuntimeError(self._probe_error)
            if self.mode is None:
                wanted = self.config.backend
                if wanted == "emulation":
                    self.mode = "emulation"
                else:
                    # forced cuda asks CuPy itself, so a failure says CuPy's own reason
                    n, why = _cuda_device_count(look_before_import=wanted != "cuda")
                    if n == 0 and wanted == "cuda":
                        self._probe_error = (
                            f"NPUSIM_BACKEND=cuda, but no usable NVIDIA GPU was found through CuPy ({why}). Install "
                            "cupy for this CUDA version and make a GPU visible, or unset NPUSIM_BACKEND (or set it "
                            "to 'emulation') to run on the emulated npu.")
                        raise NpuRuntimeError(self._probe_error)
                    self._cuda_count = n
                    self.mode = "cuda" if n > 0 else "emulation"
        return self.mode

    def device_count(self) -> int:
        mode = self.probe()
        return self._cuda_count if mode == "cuda" else self.config.device_count

    # --- initialisation and fork ------------------------------------------------------------------
    def on_init(self, fn, *, once=False) -> None:
        """Run ``fn(runtime)`` when the runtime initialises (``once``: at the next initialisation only)."""
        if once:
            self._pending.append(fn)
            return
        self._init_hooks.append(fn)
        if self.initialized:
            fn(self)

    def check_fork(self) -> None:
        if self.in_bad_fork:
            raise NpuRuntimeError("Cannot re-initialize npu in forked subprocess. To use npu with "
                                  "multiprocessing, you must use the 'spawn' start method")

    def lazy_init(self) -> None:
        if self.initialized:
            return
        self.check_fork()
        with self._lock:
            if self.initialized:
                return
            self.probe()
            for fn in self._init_hooks:
                fn(self)
            pending, self._pending = self._pending, []
            for fn in pending:
                fn(self)
            self.initialized = True
        log_api_usage_once("npusim.npu.init")

    def _after_fork_in_child(self) -> None:
        if self.initialized and not (self.mode == "emulation" and self.config.allow_fork):
            self.in_bad_fork = True
            self.initialized = False
            # the parent's npu tensors are off limits too: every op on them and every read of them raises
            refuse_device_type(PRIVATEUSE1, self.check_fork)
            refresh_storage_factories()     # the storage makers refuse too (storage.storage_maker)
        self._lock = threading.RLock()

    # --- current device (per thread, as CUDA's) ------------------------------------------------------
    def current_device(self) -> int:
        return self._tls.device

    def check_index(self, index: int) -> int:
        n = self.device_count()
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"device index must be an int, got {type(index).__name__}")
        if not 0 <= index < n:
            raise RuntimeError(f"Invalid device index {index}: the npu backend has {n} device"
                               f"{'s' if n != 1 else ''} (valid indices 0..{n - 1})")
        return index

    def set_device(self, index: int) -> None:
        self.lazy_init()
        self._tls.device = self.check_index(index)
        if self.mode == "cuda":
            import cupy
            cupy.cuda.Device(index).use()


runtime = Runtime()
os.register_at_fork(after_in_child=runtime._after_fork_in_child)
