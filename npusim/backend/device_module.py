"""``npusim.npu``: the npu's runtime module, with torch.cuda's names.

Registered with ``npusim._register_device_module("npu", ...)``. Functions that
take ``device`` accept an index, ``"npu:1"``, an ``npusim.device`` or None (the
current device).
"""
from __future__ import annotations

import collections
import contextlib
import os
import threading
import time
import traceback
from dataclasses import dataclass

import npusim as _npusim   # the public names (dtypes, autocast state): bound before the backend registers
from .. import device as _device
from ..privateuse1 import PRIVATEUSE1, legacy_tensor_types, privateuse1_backend_name, seed_value
from ..privateuse1 import legacy_storage_types
from . import fallback as _fallback
from . import nvml as _nvml
from .generator import defaults as _generators
from .events import Event
from .guard import impl as _guard
from .streams import Stream, StreamContext, current_stream, default_stream, set_stream, stream
from .allocator import OutOfMemoryError, format_size
from .memory import memory as _memory
from .runtime import runtime
from . import sync_debug as _sync_debug
from . import graphs as _graphs
from .graphs import CUDAGraph, graph, graph_pool_handle
from .graphed_callables import make_graphed_callables
from . import host_memory as _host_memory
from . import mem_pool as _mem_pool
from .mem_pool import MemPool, memory_snapshot, use_mem_pool

AcceleratorError = _npusim.AcceleratorError     # torch.cuda.AcceleratorError is torch.AcceleratorError


class DeferredCudaCallError(Exception):
    """A call queued before the npu initialised (a seed) failed when initialisation ran it."""

__all__ = [
    "is_available", "device_count", "current_device", "set_device", "device", "device_of", "synchronize", "init",
    "is_initialized", "get_device_name", "get_device_properties", "get_device_capability", "mem_get_info",
    "utilization", "is_bf16_supported", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "reset_accumulated_memory_stats", "empty_cache",
    "memory_stats", "memory_summary", "set_per_process_memory_fraction", "OutOfMemoryError", "fallback_stats",
    "reset_fallback_stats", "set_fallback_mode", "runtime_mode", "manual_seed", "manual_seed_all", "seed",
    "seed_all", "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
    "default_generators", "get_amp_supported_dtype", "is_autocast_enabled", "set_autocast_enabled",
    "get_autocast_dtype", "set_autocast_dtype", "Stream", "Event", "StreamContext", "stream", "set_stream",
    "current_stream", "default_stream", "memory_cached", "max_memory_cached", "reset_max_memory_cached",
    "memory_stats_as_nested_dict", "get_per_process_memory_fraction", "caching_allocator_alloc",
    "caching_allocator_delete", "device_memory_used", "list_gpu_processes", "memory_usage", "temperature",
    "power_draw", "clock_rate", "can_device_access_peer", "get_arch_list", "get_gencode_flags", "is_tf32_supported",
    "ipc_collect", "is_current_stream_capturing",
]
__all__ += ["get_sync_debug_mode", "set_sync_debug_mode", "AcceleratorError", "DeferredCudaCallError",
            "CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables", "MemPool", "use_mem_pool",
            "memory_snapshot", "caching_allocator_enable", "caching_allocator_disabled", "get_allocator_backend",
            "change_current_allocator", "host_memory_stats", "host_memory_stats_as_nested_dict",
            "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats"]


# torch.cuda.FloatTensor & co.: the legacy constructors of this device's tensors
_LEGACY_TYPES = legacy_tensor_types(PRIVATEUSE1, __name__)
globals().update(_LEGACY_TYPES)
__all__ += list(_LEGACY_TYPES)

# torch.cuda.FloatStorage & co.: the legacy storage classes of this device
_LEGACY_STORAGES = legacy_storage_types(PRIVATEUSE1, __name__)
globals().update(_LEGACY_STORAGES)
__all__ += list(_LEGACY_STORAGES)


# --- devices -----------------------------------------------------------------------------------

def is_available() -> bool:
    """True when the npu can be used: always in emulation, with a GPU in cuda mode."""
    try:
        return runtime.device_count() > 0
    except RuntimeError:
        return False


def device_count() -> int:
    try:
        return runtime.device_count()
    except RuntimeError:
        return 0


def runtime_mode() -> str:
    """``"cuda"`` (CuPy on a GPU) or ``"emulation"`` (NumPy)."""
    return runtime.probe()


def init() -> None:
    """Initialise the npu now instead of on first use."""
    runtime.lazy_init()


def is_initialized() -> bool:
    return runtime.initialized and not runtime.in_bad_fork


def _is_in_bad_fork() -> bool:
    return runtime.in_bad_fork


def _index(dev=None, optional=True) -> int:
    """Normalise a device argument to an npu index (torch's _get_device_index)."""
    if dev is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{dev}")
        return runtime.current_device()
    if isinstance(dev, str):
        dev = _device(dev)
    if isinstance(dev, _device):
        name = privateuse1_backend_name()
        if dev.type != name:
            raise ValueError(f"Expected a {name} device, but got: {dev}")
        return runtime.current_device() if dev.index is None else runtime.check_index(dev.index)
    if isinstance(dev, int) and not isinstance(dev, bool):
        if dev < 0:
            raise ValueError(f"Expected a non-negative device index, but got {dev}")
        return runtime.check_index(dev)
    raise TypeError(f"Expected an npu device (int, str or npusim.device), got {type(dev).__name__}")


def current_device() -> int:
    runtime.lazy_init()
    return runtime.current_device()


def _set_index(idx: int) -> None:
    _guard.set_device(_device(privateuse1_backend_name(), idx))


def set_device(device) -> None:
    idx = _index(device)
    _set_index(idx)


class device:
    """Context manager that changes the current npu device (``torch.cuda.device``)."""

    def __init__(self, device):
        self.idx = -1 if device is None else _index(device)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx == -1:
            return self
        runtime.lazy_init()
        self.prev_idx = runtime.current_device()
        if self.prev_idx != self.idx:
            _set_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx != -1 and self.prev_idx != self.idx:
            _set_index(self.prev_idx)
        return False


class device_of(device):
    """``with npusim.npu.device_of(t):`` runs on ``t``'s npu (no-op for cpu tensors)."""

    def __init__(self, obj):
        d = obj.device
        super().__init__(d.index if d.type == privateuse1_backend_name() else None)


def synchronize(device=None) -> None:
    """Wait for all work on every stream of ``device``. Emulated work is already complete when an op returns."""
    runtime.lazy_init()
    _guard.synchronize_device(_index(device))


@dataclass(frozen=True)
class _NpuDeviceProperties:
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    is_integrated: bool = False
    uuid: str = ""

    def __repr__(self):
        return (f"_NpuDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1024 * 1024)}MB, "
                f"multi_processor_count={self.multi_processor_count}, uuid={self.uuid})")


_EMULATED_NAME = "npusim emulated NPU"


def get_device_properties(device=None) -> _NpuDeviceProperties:
    idx = _index(device)
    runtime.lazy_init()
    if runtime.mode == "cuda":
        import cupy
        p = cupy.cuda.runtime.getDeviceProperties(idx)
        name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
        uuid = p.get("uuid", b"")
        uuid = uuid.hex() if isinstance(uuid, bytes) else str(uuid)
        return _NpuDeviceProperties(name, p["major"], p["minor"], p["totalGlobalMem"], p["multiProcessorCount"],
                                    bool(p.get("integrated", 0)), uuid)
    return _NpuDeviceProperties(_EMULATED_NAME, 1, 0, runtime.config.device_memory, os.cpu_count() or 1,
                                True, f"emulated-npu-{idx}")


def get_device_name(device=None) -> str:
    """The device's name: NVML's in cuda mode (the CUDA runtime's where NVML cannot answer)."""
    if runtime.probe() == "cuda":
        idx = _index(device)
        runtime.lazy_init()     # as get_device_properties: a forked child refuses
        try:
            return _nvml.device_name(idx)
        except _nvml.NvmlUnavailable:
            pass
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple:
    p = get_device_properties(device)
    return (p.major, p.minor)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bfloat16 works on the emulated npu; on a GPU it needs compute capability 8.0+."""
    if runtime.probe() == "emulation":
        return True
    return get_device_capability()[0] >= 8 or including_emulation


# --- automatic mixed precision (the AMP functions the PrivateUse1 tutorial asks of a backend module) ------------

def get_amp_supported_dtype() -> list:
    """The dtypes npu autocast can run in: float16, and bfloat16 where the device has it."""
    if is_bf16_supported(including_emulation=False):
        return [_npusim.float16, _npusim.bfloat16]
    return [_npusim.float16]


def is_autocast_enabled() -> bool:
    """Whether npu autocast is on in this thread."""
    return _npusim.is_autocast_enabled(privateuse1_backend_name())


def set_autocast_enabled(enable: bool) -> None:
    _npusim.set_autocast_enabled(privateuse1_backend_name(), enable)


def get_autocast_dtype():
    """The dtype npu autocast runs lower-precision ops in (float16 unless set)."""
    return _npusim.get_autocast_dtype(privateuse1_backend_name())


def set_autocast_dtype(dtype) -> None:
    """Set the npu autocast dtype; it must be one of ``get_amp_supported_dtype()``."""
    if not isinstance(dtype, _npusim.dtype):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 1) must be npusim.dtype, not "
                        f"{type(dtype).__name__}")
    supported = get_amp_supported_dtype()
    if dtype not in supported:
        name = privateuse1_backend_name()
        raise RuntimeError(f"{name} Autocast only supports dtypes of {', '.join(map(str, supported))} currently, "
                           f"but got {dtype}.")
    _npusim.set_autocast_dtype(privateuse1_backend_name(), dtype)


# --- utilisation and free memory ------------------------------------------------------------------

_util_lock = threading.Lock()
_util_last = {}


def utilization(device=None) -> int:
    """Percent of the last sample period the device was busy.

    cuda mode: NVML's GPU utilisation. Emulation: the emulated device computes on
    host cores, so this is the process's CPU time over wall time since the last
    call (first call: since the runtime started), capped at 100.
    """
    idx = _index(device)
    runtime.lazy_init()
    if runtime.mode == "cuda":
        return _nvml.utilization(idx)
    now, cpu = time.perf_counter(), time.process_time()
    with _util_lock:
        last = _util_last.get(idx, (_START_WALL, _START_CPU))
        _util_last[idx] = (now, cpu)
    wall = now - last[0]
    if wall <= 0:
        return 0
    return int(min(100.0, 100.0 * (cpu - last[1]) / wall))


_START_WALL, _START_CPU = time.perf_counter(), time.process_time()


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the device: NVML's figures in cuda mode (the CUDA runtime's where NVML cannot answer)."""
    idx = _index(device)
    runtime.lazy_init()
    if runtime.mode == "cuda":
        try:
            return _nvml.memory_info(idx)
        except _nvml.NvmlUnavailable:
            pass
        import cupy
        with cupy.cuda.Device(idx):
            free, total = cupy.cuda.runtime.memGetInfo()
        return int(free), int(total)
    a = _memory.allocator(idx)
    return max(a.limit - a.reserved, 0), a.capacity


# --- memory statistics -------------------------------------------------------------------------------
# One caching allocator per device in both modes (backend/allocator.py): in cuda mode its segments are CuPy's
# memory, so the statistics, empty_cache and the per-process limit read and act the same.

def memory_stats(device=None) -> dict:
    if not is_initialized():    # as torch.cuda: reading statistics never initialises the device
        return {}
    return _memory.allocator(_index(device)).memory_stats()


def memory_allocated(device=None) -> int:
    """Bytes occupied by tensors on the device."""
    return memory_stats(device).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device=None) -> int:
    return memory_stats(device).get("allocated_bytes.all.peak", 0)


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator (tensors plus cached free blocks)."""
    return memory_stats(device).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device=None) -> int:
    return memory_stats(device).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device=None) -> None:
    idx = _index(device)
    runtime.lazy_init()
    _memory.allocator(idx).reset_peak()


def reset_accumulated_memory_stats(device=None) -> None:
    idx = _index(device)
    runtime.lazy_init()
    _memory.allocator(idx).reset_accumulated()


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Release cached, unused blocks on every device (tensors keep their memory)."""
    if not runtime.initialized:
        return
    for a in _memory.allocators or ():
        a.empty_cache()


def set_per_process_memory_fraction(fraction, device=None) -> None:
    """Limit this process to ``fraction`` of the device's memory; beyond it allocations raise OOM."""
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    idx = _index(device)
    runtime.lazy_init()
    a = _memory.allocator(idx)
    a.limit = int(a.capacity * fraction)


def _fmt_size(sz, pref):
    prefixes = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"]
    prefix = prefixes[0]
    for new in prefixes[1:]:
        if pref < 768 * 1024:
            break
        prefix = new
        sz //= 1024
        pref /= 1024
    return f"{sz:6d} {prefix}"


def _fmt_count(cnt, pref):
    prefixes = [" ", "K", "M"]
    prefix = prefixes[0]
    for new in prefixes[1:]:
        if pref < 750 * 1000:
            break
        prefix = new
        cnt //= 1000
        pref /= 1000
    return f"{cnt:7d} {prefix} "


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A human-readable table of the allocator statistics (torch.cuda.memory_summary's layout)."""
    idx = _index(device)
    stats = memory_stats(idx)
    title = f"npusim npu memory summary, device ID {idx}"
    counts = (f"npu OOMs: {stats.get('num_ooms', 0):<8d} | allocation retries: "
              f"{stats.get('num_alloc_retries', 0):<8d}")
    lines = ["=" * 75, f"{title:^75}", "-" * 75, f"{counts:^75}", "=" * 75,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    metrics = [("allocated_bytes", "Allocated memory", _fmt_size), ("active_bytes", "Active memory", _fmt_size),
               ("requested_bytes", "Requested memory", _fmt_size),
               ("reserved_bytes", "npu reserved memory", _fmt_size), ("allocation", "Allocations", _fmt_count),
               ("active", "Active allocs", _fmt_count), ("segment", "npu reserved segments", _fmt_count)]
    for key, label, fmt in metrics:
        if f"{key}.all.current" not in stats:
            continue
        lines.append("-" * 75)
        subs = [("all", label)] + ([] if abbreviated else [("large_pool", "      from large pool"),
                                                           ("small_pool", "      from small pool")])
        pref = None
        for sub, name in subs:
            vals = [stats.get(f"{key}.{sub}.{f}", 0) for f in ("current", "peak", "allocated", "freed")]
            if pref is None:
                pref = vals
            lines.append(f" {name:<21} | " + " | ".join(fmt(v, p) for v, p in zip(vals, pref)) + " ")
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"


# --- the CPU fallback ------------------------------------------------------------------------------------

def fallback_stats() -> dict:
    """How many times each op ran through the CPU fallback in this process, e.g. {'aten::sort': 3}."""
    return _fallback.stats()


def reset_fallback_stats() -> None:
    _fallback.reset_stats()


def set_fallback_mode(mode) -> None:
    """'warn', 'silent' or 'error' for ops without an npu kernel (None: back to NPUSIM_FALLBACK)."""
    _fallback.set_mode(mode)


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` with its dotted keys as nested dicts (``{"allocated_bytes": {"all": {...}}}``)."""
    nested: dict = {}
    for key, value in memory_stats(device).items():
        *path, last = key.split(".")
        d = nested
        for part in path:
            d = d.setdefault(part, {})
        d[last] = value
    return nested


def get_per_process_memory_fraction(device=None) -> float:
    """The fraction of the device's memory this process may use (``set_per_process_memory_fraction``)."""
    idx = _index(device)
    runtime.lazy_init()
    a = _memory.allocator(idx)
    return a.limit / a.capacity if a.capacity else 1.0


def _renamed(old: str, new):
    def alias(device=None):
        import warnings
        warnings.warn(f"{privateuse1_backend_name()}.{old} has been renamed to "
                      f"{privateuse1_backend_name()}.{new.__name__}", FutureWarning, stacklevel=2)
        return new(device)
    alias.__name__ = old
    alias.__doc__ = f"Deprecated: ``{new.__name__}``."
    return alias


memory_cached = _renamed("memory_cached", memory_reserved)
max_memory_cached = _renamed("max_memory_cached", max_memory_reserved)
reset_max_memory_cached = _renamed("reset_max_memory_cached", reset_peak_memory_stats)

# caching_allocator_alloc's blocks, by address, until caching_allocator_delete
_raw_blocks: dict = {}
_raw_lock = threading.Lock()


def caching_allocator_alloc(size, device=None, stream=None) -> int:
    """``size`` bytes from the device's caching allocator; returns the address (free it with
    ``caching_allocator_delete``). The block counts in the memory statistics like a tensor's."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise TypeError(f"caching_allocator_alloc(): size must be a non-negative int, got {size!r}")
    idx = _index(device)
    block = _npusim.empty(size, dtype=_npusim.uint8, device=_npusim.device(privateuse1_backend_name(), idx))
    ptr = block.data_ptr()
    with _raw_lock:
        _raw_blocks[ptr] = block
    return ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    """Give back a block of ``caching_allocator_alloc``."""
    with _raw_lock:
        block = _raw_blocks.pop(mem_ptr, None)
    if block is None:
        raise RuntimeError(f"caching_allocator_delete: {mem_ptr:#x} was not allocated by caching_allocator_alloc")


def format_bytes(n: int) -> str:
    return format_size(n)


# --- what NVML reports of a GPU ---------------------------------------------------------------------------
# The emulated device computes in this process's memory on host cores: its memory in use is this process's
# reservation, and it has no sensors, so asking for a temperature, power or clock there is an error.

def _sensor(what: str, query, device):
    idx = _index(device)
    runtime.lazy_init()
    if runtime.mode != "cuda":
        raise RuntimeError(f"{privateuse1_backend_name()}.{what}: the emulated {privateuse1_backend_name()} has "
                           f"no such sensor; NVML reports it for a GPU in cuda mode")
    return query(idx)


def device_memory_used(device=None) -> int:
    """Bytes of device memory in use by every process (NVML's figure; emulation: this process's reserve)."""
    idx = _index(device)
    runtime.lazy_init()
    if runtime.mode == "cuda":
        return _nvml.memory_used(idx)
    return _memory.allocator(idx).reserved


def list_gpu_processes(device=None) -> str:
    """The processes using the device and their memory, as ``torch.cuda.list_gpu_processes`` prints them."""
    idx = _index(device)
    runtime.lazy_init()
    if runtime.mode == "cuda":
        procs = _nvml.processes(idx)
    else:
        procs = [(os.getpid(), _memory.allocator(idx).reserved)]
    lines = [f"GPU:{idx}"]
    if not procs:
        lines.append("no processes are running")
    for pid, used in procs:
        lines.append(f"process {pid:>10d} uses {used / (1024 * 1024):12.3f} MB GPU memory")
    return "\n".join(lines)


def memory_usage(device=None) -> int:
    """Percent of the last sample period device memory was read or written (NVML)."""
    return _sensor("memory_usage", _nvml.memory_utilization, device)


def temperature(device=None) -> int:
    """The GPU's temperature in degrees Celsius (NVML)."""
    return _sensor("temperature", _nvml.temperature, device)


def power_draw(device=None) -> int:
    """The GPU's power draw in milliwatts (NVML)."""
    return _sensor("power_draw", _nvml.power_draw, device)


def clock_rate(device=None) -> int:
    """The GPU's SM clock in MHz (NVML)."""
    return _sensor("clock_rate", _nvml.clock_rate, device)


# --- capabilities ------------------------------------------------------------------------------------------

def can_device_access_peer(device, peer_device) -> bool:
    """Whether ``device`` can read ``peer_device``'s memory directly (emulation: every npu shares host memory)."""
    idx, peer = _index(device, optional=False), _index(peer_device, optional=False)
    runtime.lazy_init()
    if runtime.mode == "cuda":
        import cupy
        return idx == peer or bool(cupy.cuda.runtime.deviceCanAccessPeer(idx, peer))
    return True


def get_arch_list() -> list:
    """The GPU architectures npusim's CUDA kernels are compiled for (empty when no GPU runs them)."""
    if not is_available() or runtime_mode() != "cuda":
        return []
    major, minor = get_device_capability()
    return [f"sm_{major}{minor}"]      # NVRTC compiles each kernel for the device it runs on


def get_gencode_flags() -> str:
    """``get_arch_list`` as nvcc's ``-gencode`` flags."""
    return " ".join(f"-gencode compute=compute_{a[3:]},code={a}" for a in get_arch_list())


def is_tf32_supported() -> bool:
    """TF32 matmuls need an Ampere or newer GPU; the emulation computes float32 in float32."""
    return is_available() and runtime_mode() == "cuda" and get_device_capability()[0] >= 8


def ipc_collect() -> None:
    """Free memory held for tensors shared with other processes: npusim shares none, so there is none."""


def is_current_stream_capturing() -> bool:
    """Whether a graph capture is underway on the current stream of the current npu (never initialises it)."""
    return _graphs.is_current_stream_capturing()


# --- random number generators ------------------------------------------------------------------------

def __getattr__(name):
    if name == "default_generators":
        runtime.lazy_init()
        return _generators.generators
    raise AttributeError(f"module 'npusim.npu' has no attribute '{name}'")


# Seeds given before the npu initialises are kept (the last of each kind, in call order) and applied when it
# does, as torch's lazy seeding: seeding must not start the device.
_lazy_seeds: dict = {}
_lazy_seeds_lock = threading.Lock()


def _apply_lazy_seeds(rt) -> None:
    with _lazy_seeds_lock:
        calls = list(_lazy_seeds.values())
        _lazy_seeds.clear()
    for fn, stack in calls:
        try:
            fn(rt)
        except Exception as e:  # torch's _lazy_init: the call's failure, with where it was made
            name = privateuse1_backend_name()
            raise DeferredCudaCallError(f"{name} call failed lazily at initialization with error: {e}\n\n"
                                        f"{name} call was originally invoked at:\n\n{''.join(stack)}") from e


def _when_initialised(kind, fn) -> None:
    """Run ``fn(runtime)`` now if the npu is up, else when it initialises (the last call of each ``kind``)."""
    if runtime.in_bad_fork:
        import warnings
        warnings.warn(f"npusim.npu.{kind} does not take effect: this process was forked after its parent "
                      f"initialised the npu, so it cannot use the npu (use the 'spawn' start method)",
                      UserWarning, stacklevel=3)
        return
    if runtime.initialized:
        fn(runtime)
        return
    with _lazy_seeds_lock:
        first = not _lazy_seeds
        _lazy_seeds.pop(kind, None)
        _lazy_seeds[kind] = (fn, traceback.format_stack()[:-1])
    if first:
        runtime.on_init(_apply_lazy_seeds, once=True)
    if runtime.initialized:   # it initialised while the seed was being queued
        _apply_lazy_seeds(runtime)


def manual_seed(seed) -> None:
    """Seed the current npu's default generator (applied when the npu initialises, if it has not yet)."""
    s = seed_value(int(seed))
    _when_initialised("manual_seed", lambda rt: _generators.get(rt.current_device()).manual_seed(s))


def manual_seed_all(seed) -> None:
    """Seed the default generator of every npu."""
    s = seed_value(int(seed))

    def apply(rt):
        for g in _generators.generators:
            g.manual_seed(s)
    _when_initialised("manual_seed_all", apply)


def seed() -> None:
    """Seed the current npu's default generator non-deterministically."""
    _when_initialised("seed", lambda rt: _generators.get(rt.current_device()).seed())


def seed_all() -> None:
    """Seed every npu's default generator with one non-deterministic seed."""
    def apply(rt):
        gens = _generators.generators
        s = gens[0].seed()
        for g in gens[1:]:
            g.manual_seed(s)
    _when_initialised("seed_all", apply)


def initial_seed() -> int:
    """The seed of the current npu's default generator (initialises the npu)."""
    runtime.lazy_init()
    return _generators.get(runtime.current_device()).initial_seed()


def get_rng_state(device="npu"):
    """The RNG state of one npu as a uint8 cpu tensor (initialises the npu)."""
    runtime.lazy_init()
    return _generators.get(_index(device)).get_state()


def set_rng_state(new_state, device="npu") -> None:
    """Set one npu's RNG state from a uint8 cpu tensor made by ``get_rng_state``."""
    runtime.lazy_init()
    _generators.get(_index(device)).set_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# --- synchronizing operations -------------------------------------------------------------------------------

def set_sync_debug_mode(debug_mode) -> None:
    """Warn (``"warn"`` or 1) or raise (``"error"`` or 2) on operations that make the host wait for the npu
    (``item()``, ``.cpu()``, ``nonzero``, ``Stream.synchronize``...); ``"default"`` or 0 turns it off."""
    runtime.lazy_init()
    _sync_debug.set_mode(debug_mode)


def get_sync_debug_mode() -> int:
    """The sync debug mode: 0 (off), 1 (warn) or 2 (error)."""
    runtime.lazy_init()
    return _sync_debug.get_mode()


# --- the allocator: its kind, its cache, pluggable allocators ------------------------------------------------

def get_allocator_backend() -> str:
    """``"native"``: npu memory comes from npusim's own caching allocator, in emulation and in cuda mode (where it
    caches segments of CuPy's memory), as torch's native caching allocator does."""
    return "native"


def caching_allocator_enable(value: bool = True) -> None:
    """Turn the npu allocator's cache of freed segments on or off (takes effect once the npu is initialised)."""
    if is_initialized():
        _mem_pool.caching_allocator_enable(value)


@contextlib.contextmanager
def caching_allocator_disabled():
    """Context manager that turns the npu allocator's cache off for its block."""
    prev = _mem_pool.caching_allocator_is_enabled()
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(prev)


class _NpuAllocator:
    """The allocator in use (torch.cuda.memory._CUDAAllocator's shape: ``allocator()`` gives its handle)."""

    def __init__(self, handle):
        self._allocator = handle

    def allocator(self):
        return self._allocator


_NATIVE_ALLOCATOR = object()    # the handle of npusim's caching allocator


def _get_current_allocator() -> _NpuAllocator:
    return _NpuAllocator(_NATIVE_ALLOCATOR)


def change_current_allocator(allocator) -> None:
    """Swap the allocator npu memory comes from; as torch, only before the allocator is in use. npusim's npu has
    one allocator, its own caching allocator (``_get_current_allocator()``)."""
    handle = allocator.allocator()
    if runtime.initialized:
        raise RuntimeError("Can't swap an already initialized allocator")
    if handle is not _NATIVE_ALLOCATOR:
        raise RuntimeError(f"{privateuse1_backend_name()}: npusim's caching allocator is the only allocator of "
                           f"npu memory; a pluggable allocator is not supported")


# --- pinned host memory ---------------------------------------------------------------------------------------

def host_memory_stats_as_nested_dict() -> dict:
    """``host_memory_stats`` as nested dicts; empty before the npu initialises."""
    if not is_initialized():
        return {}
    return _host_memory.nested_stats()


def host_memory_stats() -> dict:
    """The pinned host allocator's statistics, torch's dotted keys in order (``"allocated_bytes.current"``...)."""
    result = []

    def flatten(prefix, obj):
        if isinstance(obj, dict):
            prefix = prefix + "." if prefix else prefix
            for k, v in obj.items():
                flatten(prefix + k, v)
        else:
            result.append((prefix, obj))
    flatten("", host_memory_stats_as_nested_dict())
    result.sort()
    return collections.OrderedDict(result)


def reset_accumulated_host_memory_stats() -> None:
    """Reset the ``allocated`` and ``freed`` counters (and the timings) of ``host_memory_stats``."""
    _host_memory.reset_accumulated()


def reset_peak_host_memory_stats() -> None:
    """Reset the ``peak`` counters of ``host_memory_stats`` to their current values."""
    _host_memory.reset_peak()
