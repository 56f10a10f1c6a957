"""NVML (nvidia-ml-py) queries for the npu in cuda mode: a device's name, memory and utilisation.

NVML numbers every GPU of the machine; CUDA numbers only the GPUs ``CUDA_VISIBLE_DEVICES``
shows it, in that order. npu ``i`` is therefore the NVML device named by entry ``i`` of
``CUDA_VISIBLE_DEVICES``, parsed as torch.cuda parses it (``_parse_visible_devices``: ordinals
read like ``strtoul``, or ``GPU-``/``MIG-`` UUID prefixes; a negative or unknown entry ends the
list; a repeated one empties it).
"""
from __future__ import annotations

import os
import threading


class NvmlUnavailable(RuntimeError):
    """NVML cannot answer for this device: nvidia-ml-py or the driver's NVML library is missing, or the
    device cannot be found among NVML's."""


def _ordinal(entry: str) -> int:
    """The number an entry of CUDA_VISIBLE_DEVICES starts with, as strtoul reads it (``"1gpu"`` is 1); -1: none."""
    entry = entry.strip()
    end = 1 if entry[:1] in ("+", "-") else 0
    while end < len(entry) and entry[end].isdigit():
        end += 1
    try:
        return int(entry[:end])
    except ValueError:
        return -1


def visible_devices(value: str | None) -> list:
    """The devices CUDA sees, in its order: NVML ordinals (ints) or UUID prefixes (strs); all when unset."""
    if value is None:
        return list(range(64))
    for prefix in ("GPU-", "MIG-"):
        if value.startswith(prefix):
            uuids: list[str] = []
            for entry in value.split(","):
                if entry in uuids:
                    return []
                if not entry.startswith(prefix):
                    break
                uuids.append(entry)
            return uuids
    ordinals: list[int] = []
    for entry in value.split(","):
        n = _ordinal(entry)
        if n in ordinals:
            return []
        if n < 0:
            break
        ordinals.append(n)
    return ordinals


def _ordinals_of_uuids(prefixes: list, uuids: list) -> list:
    """NVML ordinals of UUID prefixes: an ambiguous or unknown prefix ends the list, a repeated device empties it."""
    ordinals: list[int] = []
    for prefix in prefixes:
        matches = [i for i, uuid in enumerate(uuids) if uuid.startswith(prefix)]
        if len(matches) != 1:
            break
        if matches[0] in ordinals:
            return []
        ordinals.append(matches[0])
    return ordinals


_init_lock = threading.Lock()
_initialised = False


def _pynvml():
    """The pynvml module, initialised once per process."""
    global _initialised
    try:
        import pynvml
    except ImportError as e:
        raise NvmlUnavailable("nvidia-ml-py (pynvml) is not installed") from e
    with _init_lock:
        if not _initialised:
            try:
                pynvml.nvmlInit()
            except pynvml.NVMLError as e:
                raise NvmlUnavailable(f"NVML cannot start: {e}") from e
            _initialised = True
    return pynvml


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value    # older nvidia-ml-py returns bytes


def nvml_index(index: int) -> int:
    """NVML's ordinal of npu ``index`` (CUDA's ``index``) under the CUDA_VISIBLE_DEVICES of this process."""
    visible = visible_devices(os.environ.get("CUDA_VISIBLE_DEVICES"))
    if visible and isinstance(visible[0], str):
        nvml = _pynvml()
        try:
            uuids = [_text(nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(i)))
                     for i in range(nvml.nvmlDeviceGetCount())]
        except nvml.NVMLError as e:
            raise NvmlUnavailable(f"NVML cannot list the devices' UUIDs: {e}") from e
        visible = _ordinals_of_uuids(visible, uuids)
    if not 0 <= index < len(visible):
        raise NvmlUnavailable(f"npu {index} is not visible to NVML "
                              f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')})")
    return visible[index]


def _query(index: int, what):
    """``what(pynvml, handle)`` for npu ``index``; NVML's own errors become NvmlUnavailable."""
    nvml = _pynvml()
    ordinal = nvml_index(index)
    try:
        return what(nvml, nvml.nvmlDeviceGetHandleByIndex(ordinal))
    except nvml.NVMLError as e:
        raise NvmlUnavailable(f"NVML device {ordinal}: {e}") from e


def device_name(index: int) -> str:
    return _query(index, lambda nvml, h: _text(nvml.nvmlDeviceGetName(h)))


def memory_info(index: int) -> tuple[int, int]:
    """(free, total) bytes of the whole device, every process's allocations counted."""
    def ask(nvml, h):
        info = nvml.nvmlDeviceGetMemoryInfo(h)
        return int(info.free), int(info.total)
    return _query(index, ask)


def utilization(index: int) -> int:
    """Percent of the last sample period in which a kernel ran on the device."""
    return _query(index, lambda nvml, h: int(nvml.nvmlDeviceGetUtilizationRates(h).gpu))


def memory_utilization(index: int) -> int:
    """Percent of the last sample period in which device memory was read or written."""
    return _query(index, lambda nvml, h: int(nvml.nvmlDeviceGetUtilizationRates(h).memory))


def memory_used(index: int) -> int:
    """Bytes of device memory in use, every process's allocations counted."""
    return _query(index, lambda nvml, h: int(nvml.nvmlDeviceGetMemoryInfo(h).used))


def temperature(index: int) -> int:
    """The GPU's temperature in degrees Celsius."""
    return _query(index, lambda nvml, h: int(nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU)))


def power_draw(index: int) -> int:
    """The GPU's power draw in milliwatts."""
    return _query(index, lambda nvml, h: int(nvml.nvmlDeviceGetPowerUsage(h)))


def clock_rate(index: int) -> int:
    """The SM clock in MHz."""
    return _query(index, lambda nvml, h: int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)))


def processes(index: int) -> list:
    """(pid, bytes) of each process computing on the device."""
    return _query(index, lambda nvml, h: [(int(p.pid), int(p.usedGpuMemory or 0))
                                          for p in nvml.nvmlDeviceGetComputeRunningProcesses(h)])
