"""What ``npusim.__config__.show()`` says about the npu's build: the CuPy it would run on, and USE_CUDA."""
from __future__ import annotations

import importlib.util


def _version(dist: str) -> str | None:
    import importlib.metadata   # here, not at the top: it costs milliseconds of every import of npusim
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def build_info() -> tuple[list, dict]:
    """``(lines, settings)`` for ``npusim.privateuse1.register_build_info``."""
    if importlib.util.find_spec("cupy") is None:
        return ["  - CuPy: not installed (the npu runs as a NumPy emulation)"], {"USE_CUDA": "OFF"}
    version = _version("cupy") or _version("cupy-cuda13x") or _version("cupy-cuda12x") or ""
    return [f"  - CuPy {version}".rstrip()], {"USE_CUDA": "ON"}
