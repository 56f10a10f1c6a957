"""The npu runtime's probe: where CuPy cannot reach a GPU for want of the CUDA driver, the emulation starts without
importing CuPy (its import takes a large part of a second); a stand-in ``cupy`` (pure Python) is still asked."""
from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

R = importlib.import_module("npusim.backend.runtime")    # the package's ``runtime`` is the Runtime object

ROOT = Path(__file__).resolve().parents[1]


def _fresh(code: str, **env) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_") and k != "PYTHONPATH"}
    full.update(env, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=full)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_without_the_driver_the_emulation_starts_without_importing_cupy():
    spec = importlib.util.find_spec("cupy")
    if spec is None or not R._compiled_cupy(spec) or R._driver_loads():
        pytest.skip("needs CuPy itself installed and no loadable CUDA driver")
    out = _fresh("import sys, npusim; x = npusim.ones(2, device='npu') + 1; "
                 "print(npusim.npu.runtime_mode(), 'cupy' in sys.modules, x.cpu().tolist())")
    assert out == "emulation False [2.0, 2.0]"


def test_a_pure_python_cupy_is_not_taken_for_compiled_cupy(tmp_path):
    (tmp_path / "cupy" / "_core").mkdir(parents=True)
    (tmp_path / "cupy" / "__init__.py").write_text("")
    spec = importlib.util.spec_from_file_location("cupy", tmp_path / "cupy" / "__init__.py",
                                                  submodule_search_locations=[str(tmp_path / "cupy")])
    assert not R._compiled_cupy(spec)
    (tmp_path / "cupy" / "_core" / "core.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    assert R._compiled_cupy(spec)
