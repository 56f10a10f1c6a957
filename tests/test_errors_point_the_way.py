"""Errors that tell a user what to do: an unknown device type lists npu among the valid ones, and the npu's
out-of-memory error names NPUSIM_DEVICE_MEMORY, the variable that sets an emulated npu's capacity."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import npusim

TORCH_TYPES = ("cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, vulkan, mps, "
               "meta, hpu, mtia, privateuseone")


@pytest.mark.parametrize("text", ["gpu", "NPU", "Npu:0", "tpu:1"])
def test_unknown_device_type_lists_npu(text):
    with pytest.raises(RuntimeError) as info:
        npusim.zeros(2, device=text)
    head = text.split(":")[0]
    assert str(info.value) == (f"Expected one of {TORCH_TYPES}, npu device type at start of device string: {head}")
    with pytest.raises(RuntimeError, match=f"privateuseone, npu device type at start of device string: {head}$"):
        npusim.device(text)
    with pytest.raises(RuntimeError, match="privateuseone, npu device type"):
        npusim.ones(2).to(text)


@pytest.mark.oracle
def test_unknown_device_type_is_torchs_message_plus_npu(torch):
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(2, device="gpu")
    with pytest.raises(RuntimeError) as ours:
        npusim.zeros(2, device="gpu")
    assert str(ours.value) == str(theirs.value).replace("privateuseone device", "privateuseone, npu device")


@pytest.mark.emulation_only
def test_out_of_memory_names_npusim_device_memory():
    code = ("import npusim\n"
            "try:\n"
            "    npusim.empty(300 * 2 ** 20, dtype=npusim.uint8, device='npu')\n"
            "except npusim.npu.OutOfMemoryError as e:\n"
            "    print(e)\n")
    env = dict(os.environ, NPUSIM_DEVICE_MEMORY="256MiB")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    message = out.stdout.strip()
    assert message.startswith("npu out of memory. Tried to allocate 300.00 MiB. npu 0 has a total capacity of "
                              "256.00 MiB")
    assert message.endswith("The NPUSIM_DEVICE_MEMORY environment variable sets an emulated npu's capacity (16GiB "
                            "by default): run with NPUSIM_DEVICE_MEMORY=512MiB (say) to try a larger device; on a "
                            "GPU the npu has the GPU's own memory.")
