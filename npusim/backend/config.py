"""Every environment setting of the npu backend, read in one place.

NPUSIM_BACKEND         emulation | cuda | auto (default): which runtime the npu uses
NPUSIM_DEVICE_COUNT    number of simulated devices in emulation (default 2)
NPUSIM_DEVICE_MEMORY   capacity per simulated device: bytes or with a unit, "512MiB", "16GiB" (default 16GiB)
NPUSIM_FALLBACK        warn (default) | silent | error: ops without an npu kernel
NPUSIM_ALLOW_FORK      1 lets a forked child use the emulated npu its parent initialised
NPUSIM_LAUNCH_BLOCKING 1 makes every op synchronous in cuda mode
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000 ** 2, "mb": 1000 ** 2, "mib": 1024 ** 2,
          "g": 1000 ** 3, "gb": 1000 ** 3, "gib": 1024 ** 3, "t": 1000 ** 4, "tb": 1000 ** 4, "tib": 1024 ** 4}


def parse_bytes(text: str, name: str = "NPUSIM_DEVICE_MEMORY") -> int:
    """``"512MiB"`` -> 536870912; a clear ValueError for anything else."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
    if m is None or m.group(2).lower() not in _UNITS:
        raise ValueError(f"{name}={text!r} is not a size: use bytes or a number with a unit such as 512MiB or 16GiB")
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value <= 0:
        raise ValueError(f"{name}={text!r} must be a positive size")
    return value


def _choice(name, allowed, default):
    value = os.environ.get(name, default).strip().lower() or default
    if value not in allowed:
        raise ValueError(f"{name}={os.environ.get(name)!r} is not one of {', '.join(allowed)}")
    return value


def _count(name, default):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if n < 1:
        raise ValueError(f"{name}={raw!r} must be at least 1")
    return n


@dataclass(frozen=True)
class Config:
    backend: str
    device_count: int
    device_memory: int
    fallback: str
    allow_fork: bool
    launch_blocking: bool


def read_config() -> Config:
    return Config(
        backend=_choice("NPUSIM_BACKEND", ("auto", "emulation", "cuda"), "auto"),
        device_count=_count("NPUSIM_DEVICE_COUNT", 2),
        device_memory=parse_bytes(os.environ.get("NPUSIM_DEVICE_MEMORY", "16GiB")),
        fallback=_choice("NPUSIM_FALLBACK", ("warn", "silent", "error"), "warn"),
        allow_fork=os.environ.get("NPUSIM_ALLOW_FORK", "0").strip() in ("1", "true", "yes"),
        launch_blocking=os.environ.get("NPUSIM_LAUNCH_BLOCKING", "0").strip() in ("1", "true", "yes"),
    )
