"""Where the proof runs: a real GPU through CuPy, the test-only CuPy stand-in, or neither; and the
environment its child processes get."""
from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"

GPU, STANDIN, NONE = "gpu", "standin", "none"


@dataclass
class Platform:
    kind: str
    reason: str = ""
    info: dict = field(default_factory=dict)


def detect() -> Platform:
    """Probe CuPy as npusim's runtime does (import, then one device-count query)."""
    info = {"python": platform.python_version(), "executable": sys.executable}
    try:
        import cupy
    except ImportError as e:
        return Platform(NONE, f"CuPy cannot be imported ({e})", info)
    info["cupy"] = getattr(cupy, "__version__", "?")
    if getattr(cupy, "_NPUSIM_STANDIN", False):
        info["cupy"] += " (npusim's test-only stand-in)"
        return Platform(STANDIN, "", info)
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:      # CuPy without a driver or a visible GPU raises from the query
        return Platform(NONE, f"CuPy cannot reach a GPU ({type(e).__name__}: {e})", info)
    if count == 0:
        return Platform(NONE, "CuPy reports 0 GPUs", info)
    info["gpus"] = count
    return Platform(GPU, "", info)


def _absolute_path_entries(value: str) -> list:
    # children run in the repository root: relative entries must keep pointing where they pointed here
    return [str(Path(p).resolve()) for p in value.split(os.pathsep) if p]


def child_env(backend: str | None = "cuda", extra_path=()) -> dict:
    """This process's environment, with npusim and the proof's package importable and the npu mode forced."""
    env = dict(os.environ)
    entries = _absolute_path_entries(env.get("PYTHONPATH", ""))
    for p in [*map(str, extra_path), str(BENCH), str(REPO)]:
        if p not in entries:
            entries.append(p)      # after the existing ones: a stand-in put first stays first
    env["PYTHONPATH"] = os.pathsep.join(entries)
    if backend is None:
        env.pop("NPUSIM_BACKEND", None)
    else:
        env["NPUSIM_BACKEND"] = backend
    return env
