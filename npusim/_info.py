"""What ``python -m npusim info`` reports: versions, devices and threads.

Devices are found generically: the cpu, plus whatever backend owns PrivateUse1,
asked through its registered device module (``npusim.<name>``) for
``device_count()``, ``get_device_name(i)`` and, if it has one, ``runtime_mode()``.
"""
from __future__ import annotations

import os
import platform
import sys


def _version_of(module_name: str) -> str:
    try:
        module = __import__(module_name)
    except Exception as e:  # an optional package that is absent or broken
        return f"not available ({type(e).__name__})"
    return getattr(module, "__version__", "unknown")


def _backend_lines(npusim) -> list[str]:
    from .core.c10.device import PRIVATEUSE1, privateuse1_backend_name

    name = privateuse1_backend_name()
    module = getattr(npusim, name, None)
    if module is None or not hasattr(module, "device_count"):
        if name == PRIVATEUSE1:
            return ["  PrivateUse1: no backend registered"]
        return [f"  {name} (PrivateUse1): renamed, but no device module is registered as npusim.{name}"]
    lines = []
    try:
        count = int(module.device_count())
    except Exception as e:
        return [f"  {name} (PrivateUse1): device_count() failed: {type(e).__name__}: {e}"]
    mode = ""
    if hasattr(module, "runtime_mode"):
        try:
            mode = f", mode: {module.runtime_mode()}"
        except Exception as e:
            mode = f", mode: unknown ({type(e).__name__}: {e})"
    lines.append(f"  {name} (PrivateUse1): {count} device{'s' if count != 1 else ''}{mode}")
    for i in range(count):
        try:
            label = module.get_device_name(i) if hasattr(module, "get_device_name") else ""
        except Exception as e:
            label = f"name unavailable ({type(e).__name__})"
        lines.append(f"    {name}:{i}" + (f"  {label}" if label else ""))
    return lines


def _blas_lines() -> list[str]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["  NumPy BLAS threads: unknown (threadpoolctl is not installed)"]
    pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
    if not pools:
        return ["  NumPy BLAS threads: no BLAS thread pool found"]
    return [f"  NumPy BLAS threads: {p.get('num_threads')} ({p.get('internal_api')}, "
            f"{os.path.basename(p.get('filepath') or '?')})" for p in pools]


def info_text() -> str:
    """The report as one string."""
    import numpy

    import npusim

    lines = [
        f"npusim {npusim.__version__}",
        f"Python {platform.python_version()} ({sys.executable})",
        f"NumPy {numpy.__version__}",
        f"ml_dtypes {_version_of('ml_dtypes')}",
        "",
        "Devices:",
        "  cpu",
    ]
    lines += _backend_lines(npusim)
    lines += ["", "Threads:", f"  os.cpu_count(): {os.cpu_count()}"]
    lines += _blas_lines()
    return "\n".join(lines)
