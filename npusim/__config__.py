"""``npusim.__config__``: how this process runs ops (``parallel_info``) and what it is built on (``show``)."""
from __future__ import annotations

import os
import platform
import sys

from .core.runtime import parallel_config
from .privateuse1.hooks import build_info

__all__ = ["parallel_info", "show"]


def _blas_libraries() -> list:
    """The BLAS libraries loaded in this process, as threadpoolctl reports them."""
    try:
        from threadpoolctl import threadpool_info
        return [info for info in threadpool_info() if info.get("user_api") == "blas"]
    except Exception:  # noqa: BLE001 - threadpoolctl missing or unable to inspect a library
        return []


def _blas_name(info) -> str:
    names = {"openblas": "OpenBLAS", "mkl": "Intel(R) oneAPI Math Kernel Library", "blis": "BLIS",
             "flexiblas": "FlexiBLAS"}
    api = info.get("internal_api", "?")
    details = ", ".join(f"{k}: {info[k]}" for k in ("threading_layer", "architecture") if info.get(k))
    return f"{names.get(api, api)} {info.get('version') or ''}".rstrip() + (f" ({details})" if details else "")


def parallel_info() -> str:
    """The thread settings, as torch.__config__.parallel_info() reports them."""
    lines = [
        "ATen/Parallel:",
        f"\tat::get_num_threads() : {parallel_config.get_num_threads()}",
        f"\tat::get_num_interop_threads() : {parallel_config.get_num_interop_threads()}",
    ]
    for info in _blas_libraries():
        lines.append(_blas_name(info))
        lines.append(f"\t{info.get('internal_api', 'blas')}_get_num_threads() : {info.get('num_threads')}")
    lines.append(f"os.cpu_count() : {os.cpu_count()}")
    lines.append(f"usable cores (CPU affinity) : {parallel_config.usable_cores()}")
    lines.append("Environment variables:")
    for name in parallel_config.ENV_VARS[::-1]:   # torch lists OMP first
        lines.append(f"\t{name} : {os.environ.get(name, '[not set]')}")
    lines.append("ATen parallel backend: native thread pool")
    return "\n".join(lines) + "\n"


def _version(dist: str) -> str | None:
    import importlib.metadata   # here, not at the top: it costs milliseconds of every import of npusim
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def show() -> str:
    """A human-readable description of npusim's configuration (as torch.__config__.show(): returned, not printed)."""
    from . import __version__
    import numpy
    lines = ["npusim built with:",
             f"  - npusim {__version__}",
             f"  - Python {platform.python_version()} ({platform.python_implementation()}, {sys.platform})",
             f"  - NumPy {numpy.__version__}"]
    for dist in ("ml_dtypes", "threadpoolctl"):
        v = _version(dist)
        lines.append(f"  - {dist} {v}" if v else f"  - {dist}: not installed")
    for info in _blas_libraries():
        lines.append(f"  - BLAS: {_blas_name(info)}")
    backend_lines, backend_settings = build_info()   # what the registered backends are built on
    lines.extend(backend_lines)
    lines.append("  - Parallel backend: native thread pool (intra-op and inter-op pools in Python threads; NumPy "
                 "releases the GIL in its loops)")
    settings = {"USE_CUDA": "OFF", **backend_settings, "USE_OPENMP": "OFF", "USE_TBB": "OFF",
                "GRAIN_SIZE": parallel_config.GRAIN_SIZE}
    lines.append("  - Build settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))
    return "\n".join(lines) + "\n"
