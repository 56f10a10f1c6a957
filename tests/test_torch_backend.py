"""Runs tests/test_torch_backend_cases.py in a process of its own: ``import npusim.torch_backend`` registers
npusim's npu into torch process-wide, which the other oracle tests (torch on the CPU) must not see."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

CASES = Path(__file__).with_name("test_torch_backend_cases.py")


@pytest.mark.oracle
@pytest.mark.slow
def test_torch_backend_cases_pass_in_their_own_process():
    env = dict(os.environ, NPUSIM_TORCH_BACKEND_PROCESS="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(CASES)], env=env, capture_output=True, text=True, timeout=1200)
    if "no tests ran" in proc.stdout or proc.returncode == 5:
        pytest.skip("torch_backend cases skipped (torch is not 2.13)")
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


@pytest.mark.oracle
def test_import_registers_without_warnings():
    code = "import warnings; warnings.simplefilter('error'); import npusim.torch_backend"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    if "supports torch 2.13.x only" in proc.stderr:
        pytest.skip("torch is not 2.13")
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.oracle
@pytest.mark.emulation_only
def test_npusim_device_memory_is_the_npus_capacity():
    code = ("import torch, npusim.torch_backend\n"
            "assert torch.npu.mem_get_info()[1] == 8 << 20\n"
            "x = torch.empty(1 << 20, device='npu')\n"                      # 4 MiB fits
            "try:\n"
            "    torch.empty(2 << 20, device='npu')\n"                      # 8 MiB more does not
            "except torch.OutOfMemoryError as e:\n"
            "    print('refused', e)\n")
    env = dict(os.environ, NPUSIM_DEVICE_MEMORY="8MiB")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    if "supports torch 2.13.x only" in proc.stderr:
        pytest.skip("torch is not 2.13")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "refused npu out of memory" in proc.stdout
