"""``npusim.cpu``: torch.cpu's device module, the cpu's counterpart of ``npusim.npu`` for device-agnostic code.

The cpu runs every op before it returns, so there is one device, one stream and nothing to wait for: the stream,
event and synchronize names exist so code written against a device module (``npusim.get_device_module(dev)``)
runs unchanged on the cpu, as torch.cpu's do. ``get_capabilities()`` reports the instruction sets the machine has.
"""
from __future__ import annotations

import functools
import os
import platform
from contextlib import AbstractContextManager
from types import MappingProxyType

from . import amp  # noqa: F401  (npusim.cpu.amp, torch.cpu.amp's deprecated spellings)

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "current_stream", "stream",
           "set_device", "device_count", "Stream", "StreamContext", "Event", "get_capabilities"]

# torch's capability names for the x86 features NumPy's runtime dispatch detects
_X86_FEATURES = {
    "sse": "SSE", "sse2": "SSE2", "sse3": "SSE3", "ssse3": "SSSE3", "sse4_1": "SSE41", "sse4_2": "SSE42",
    "popcnt": "POPCNT", "avx": "AVX", "f16c": "F16C", "fma3": "FMA3", "fma4": "FMA4", "avx2": "AVX2",
    "bmi": "BMI", "bmi2": "BMI2", "lzcnt": "LZCNT", "avx512_f": "AVX512F", "avx512_cd": "AVX512CD",
    "avx512_dq": "AVX512DQ", "avx512_bw": "AVX512BW", "avx512_vl": "AVX512VL", "avx512_ifma": "AVX512IFMA",
    "avx512_vbmi": "AVX512VBMI", "avx512_vbmi2": "AVX512VBMI2", "avx512_bitalg": "AVX512BITALG",
    "avx512_vpopcntdq": "AVX512VPOPCNTDQ", "avx512_vnni": "AVX512VNNI", "avx512_bf16": "AVX512BF16",
    "avx512_fp16": "AVX512FP16", "avx512_4vnniw": "AVX5124VNNIW", "avx512_4fmaps": "AVX5124FMAPS",
}
_ARM_FEATURES = {"neon": "NEON", "fp16_arith": "ASIMDHP", "dot": "ASIMDDP", "fhm": "ASIMDFHM", "sve": "SVE"}


def _numpy_cpu_features() -> dict:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:     # NumPy 1.x
        from numpy.core._multiarray_umath import __cpu_features__
    return dict(__cpu_features__)


@functools.lru_cache(None)
def get_capabilities():
    """An immutable mapping of the cpu's capabilities: torch's names (``"avx2"``, ``"avx512_f"``, ``"neon"``...)
    to booleans for the instruction sets detected at run time, ``"architecture"`` and ``"num_logical_cores"``."""
    found = _numpy_cpu_features()
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "aarch64": "arm64"}.get(machine, machine)
    table = _ARM_FEATURES if arch == "arm64" else _X86_FEATURES if arch in ("x86_64", "x86", "i686") else {}
    caps = {name: bool(found.get(feature, False)) for name, feature in table.items()}
    caps["architecture"] = arch
    caps["num_logical_cores"] = os.cpu_count() or 1
    return MappingProxyType(caps)


def is_available() -> bool:
    """True: the cpu is always there (for device-agnostic code)."""
    return True


def is_initialized() -> bool:
    """True: the cpu needs no initialisation."""
    return True


def synchronize(device=None) -> None:
    """Nothing to wait for: every cpu op has finished when it returns (``device`` is ignored)."""


def device_count() -> int:
    """1: the cpu is one device, whatever its cores."""
    return 1


def current_device() -> str:
    """``"cpu"``."""
    return "cpu"


def set_device(device) -> None:
    """Nothing to select: there is one cpu device."""


class Stream:
    """The cpu's stream: work is done in order as it is issued, so waiting on it is immediate."""

    def __init__(self, priority: int = -1) -> None:
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass


class Event:
    """The cpu's event: always complete."""

    def query(self) -> bool:
        return True

    def record(self, stream=None) -> None:
        pass

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass


_default_stream = Stream()
_current_stream = _default_stream


def current_stream(device=None) -> Stream:
    """The stream selected by the innermost ``stream(...)`` block (the default stream outside any)."""
    return _current_stream


class StreamContext(AbstractContextManager):
    """Selects ``stream`` as the current one inside the block (None selects nothing)."""

    def __init__(self, stream):
        self.stream = stream
        self.prev_stream = _default_stream

    def __enter__(self):
        global _current_stream
        if self.stream is None:
            return
        self.prev_stream = _current_stream
        _current_stream = self.stream

    def __exit__(self, *exc) -> None:
        global _current_stream
        if self.stream is None:
            return
        _current_stream = self.prev_stream


def stream(stream) -> AbstractContextManager:   # noqa: F811 - torch's argument name
    """A block in which ``stream`` is the current one."""
    return StreamContext(stream)
