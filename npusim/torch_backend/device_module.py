"""``torch.npu``: the torch.cuda-style device module, served by npusim's npu runtime.

Device facts, memory statistics and capacity come from npusim's allocator accounting (every torch npu tensor's
memory is an npusim npu allocation), random numbers from npusim's Philox generator (``torch.manual_seed`` seeds
it through ``manual_seed_all``). What torch's Python hooks cannot reach (a second device, generator objects,
streams and events) raises a RuntimeError naming the limit.
"""
from __future__ import annotations

import torch

import npusim

from . import fallback
from .errors import refuse

_npu = npusim.npu

#: ``torch.npu.OutOfMemoryError`` is torch's (what an npu op that does not fit raises)
OutOfMemoryError = torch.OutOfMemoryError


def _check_index(device=None) -> int:
    if device is None:
        return 0
    if isinstance(device, int):
        idx = device
    else:
        d = torch.device(device)
        if d.type != "npu":
            raise ValueError(f"Expected an npu device, got {d}")
        idx = 0 if d.index is None else d.index
    if idx != 0:
        refuse(f"npu device {idx}", "torch's Python hooks serve one device, npu:0 (device_count() is 1)")
    return 0


def is_available() -> bool:
    return _npu.is_available()


def is_initialized() -> bool:
    return True


def init() -> None:
    _npu.init()


def _is_in_bad_fork() -> bool:
    return _npu._is_in_bad_fork()


def device_count() -> int:
    return 1


def current_device() -> int:
    return 0


def set_device(device) -> None:
    _check_index(device)


class device:
    """Context manager selecting an npu (only npu:0 exists here)."""

    def __init__(self, device):
        self.idx = _check_index(device)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def synchronize(device=None) -> None:
    _check_index(device)
    _npu.synchronize()


def get_device_name(device=None) -> str:
    _check_index(device)
    return _npu.get_device_name(0)


def get_device_properties(device=None):
    _check_index(device)
    return _npu.get_device_properties(0)


def get_device_capability(device=None) -> tuple:
    _check_index(device)
    return _npu.get_device_capability(0)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def get_amp_supported_dtype() -> list:
    return [torch.float16, torch.bfloat16]


# --- memory: npusim's allocator accounting ------------------------------------------------------------------

def memory_allocated(device=None) -> int:
    return _npu.memory_allocated(_check_index(device))


def max_memory_allocated(device=None) -> int:
    return _npu.max_memory_allocated(_check_index(device))


def memory_reserved(device=None) -> int:
    return _npu.memory_reserved(_check_index(device))


def max_memory_reserved(device=None) -> int:
    return _npu.max_memory_reserved(_check_index(device))


def memory_stats(device=None) -> dict:
    return _npu.memory_stats(_check_index(device))


def memory_summary(device=None, abbreviated: bool = False) -> str:
    return _npu.memory_summary(_check_index(device), abbreviated)


def mem_get_info(device=None) -> tuple:
    return _npu.mem_get_info(_check_index(device))


def reset_peak_memory_stats(device=None) -> None:
    _npu.reset_peak_memory_stats(_check_index(device))


def reset_accumulated_memory_stats(device=None) -> None:
    _npu.reset_accumulated_memory_stats(_check_index(device))


def empty_cache() -> None:
    _npu.empty_cache()


def set_per_process_memory_fraction(fraction, device=None) -> None:
    _npu.set_per_process_memory_fraction(fraction, _check_index(device))


# --- random numbers: npusim's Philox generator ---------------------------------------------------------------

def manual_seed(seed) -> None:
    _npu.manual_seed(int(seed))


def manual_seed_all(seed) -> None:
    _npu.manual_seed_all(int(seed))


def seed() -> None:
    _npu.seed()


def seed_all() -> None:
    _npu.seed_all()


def initial_seed() -> int:
    return _npu.initial_seed()


def get_rng_state(device="npu") -> torch.Tensor:
    _check_index(device)
    return torch.from_numpy(_npu.get_rng_state().numpy().copy())


def set_rng_state(new_state, device="npu") -> None:
    _check_index(device)
    _npu.set_rng_state(npusim.from_numpy(new_state.detach().cpu().numpy().copy()))


def get_rng_state_all() -> list:
    return [get_rng_state()]


def set_rng_state_all(new_states) -> None:
    (state,) = new_states
    set_rng_state(state)


# --- the CPU fallback ------------------------------------------------------------------------------------------

def fallback_stats() -> dict:
    """Calls per op that ran on the CPU in this process, e.g. {'aten::kthvalue': 2}."""
    return fallback.stats()


def reset_fallback_stats() -> None:
    fallback.reset_stats()


def set_fallback_mode(mode) -> None:
    """'warn', 'silent' or 'error' for ops without an npu kernel (None: back to NPUSIM_FALLBACK)."""
    fallback.set_mode(mode)


# --- what torch's Python hooks cannot do ---------------------------------------------------------------------

class Stream:
    def __init__(self, *args, **kwargs):
        refuse("torch.npu.Stream", "streams need a C++ DeviceGuardImpl; npu work runs in order on one stream")


class Event:
    def __init__(self, *args, **kwargs):
        refuse("torch.npu.Event", "events need a C++ DeviceGuardImpl; npu work runs in order on one stream")


def current_stream(device=None):
    refuse("torch.npu.current_stream", "streams need a C++ DeviceGuardImpl")


def default_stream(device=None):
    refuse("torch.npu.default_stream", "streams need a C++ DeviceGuardImpl")


def stream(s):
    refuse("torch.npu.stream", "streams need a C++ DeviceGuardImpl")
