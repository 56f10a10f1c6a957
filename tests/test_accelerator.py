"""``npusim.accelerator`` (torch.accelerator's names) answering for the npu, and for no accelerator
at all in an interpreter where the npu backend is left out (compared with torch on a cpu-only
machine, which has none either).
"""
from __future__ import annotations

import gc
import inspect
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path

import pytest

import npusim

ROOT = Path(__file__).resolve().parents[1]
acc = npusim.accelerator
npu = npusim.npu
NO_BACKEND = "import sys, types\nsys.modules['npusim.backend'] = types.ModuleType('npusim.backend')\n"

TORCH_NAMES = ("is_available", "current_accelerator", "device_count", "current_device_index", "current_device_idx",
               "set_device_index", "set_device_idx", "device_index", "synchronize", "memory_allocated",
               "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats", "empty_cache",
               "empty_host_cache", "reset_peak_memory_stats", "reset_accumulated_memory_stats", "get_memory_info",
               "get_device_capability", "current_stream", "set_stream")


def test_has_torch_accelerator_names():
    assert [n for n in TORCH_NAMES if not hasattr(acc, n)] == []


@pytest.mark.oracle
def test_names_exist_in_torch_accelerator(torch):
    assert [n for n in TORCH_NAMES if not hasattr(torch.accelerator, n)] == []


def test_the_accelerator_is_the_npu():
    assert acc.is_available()
    assert acc.current_accelerator() == npusim.device("npu")
    assert acc.current_accelerator(check_available=True) == npusim.device("npu")
    assert acc.device_count() == npu.device_count() == 2
    assert acc.current_device_index() == acc.current_device_idx() == npu.current_device()


def test_set_device_index_and_the_context_manager():
    assert acc.current_device_index() == 0
    try:
        acc.set_device_index("npu:1")
        assert npu.current_device() == 1
        acc.set_device_index(npusim.device("npu", 0))
        assert npu.current_device() == 0
        acc.set_device_idx(1)
        assert acc.current_device_index() == 1
        acc.set_device_index(-1)           # negative: a no-op, as in torch
        assert acc.current_device_index() == 1
    finally:
        npu.set_device(0)
    with acc.device_index(1):
        assert npu.current_device() == 1 and npusim.empty(1, device="npu").device.index == 1
    assert npu.current_device() == 0
    with acc.device_index(None):
        assert npu.current_device() == 0


@pytest.mark.parametrize("bad, err, message", [
    ("cpu", ValueError, r"^cpu doesn't match the current accelerator npu.$"),
    (npusim.device("cuda", 0), ValueError, r"^cuda doesn't match the current accelerator npu.$"),
    (None, ValueError, r"^Expected a npusim.device with a specified index or an integer, but got:None$"),
    ("npu", ValueError, r"^Expected a npusim.device with a specified index or an integer, but got:npu$"),
    (5, RuntimeError, r"^Invalid device index 5"),
])
def test_set_device_index_bad_arguments(bad, err, message):
    with pytest.raises(err, match=message):
        acc.set_device_index(bad)
    assert npu.current_device() == 0


@pytest.mark.oracle
def test_device_type_mismatch_message_matches_torch(torch):
    # torch checks the type against its own accelerator; on a cpu-only machine it has none. The statistics
    # check the device only once the allocator exists (see the test below), so initialise it here
    npu.init()
    ours = pytest.raises(ValueError, acc.memory_allocated, "cpu").value
    assert str(ours) == "cpu doesn't match the current accelerator npu."
    with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is available.$"):
        torch.accelerator.memory_allocated("cpu")


MEMORY_FUNCTIONS = ("memory_stats", "memory_allocated", "max_memory_allocated", "memory_reserved",
                    "max_memory_reserved", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
                    "get_memory_info")


def _memory_outcomes(lib, initialise):
    """Each memory function's answer to devices of other types, before and after the allocator starts."""
    out = []
    for initialised in (False, True):
        if initialised:
            initialise()
        for name in MEMORY_FUNCTIONS:
            for arg in ("cpu", "cuda:0", lib.device("cuda", 0)):
                try:
                    out.append(f"{initialised} {name} {arg}: OK {type(getattr(lib.accelerator, name)(arg)).__name__}")
                except Exception as e:
                    out.append(f"{initialised} {name} {arg}: {type(e).__name__}: {e}")
    return out


# torch's memory functions on a machine whose accelerator is an npu: its Python layer over stand-ins for the
# hooks a backend provides (the allocator is initialised or not, with empty statistics)
_TORCH_WITH_AN_NPU = """
import torch
torch.utils.rename_privateuse1_backend("npu")
state = {"initialised": False}
torch.accelerator.current_accelerator = lambda check_available=False: torch.device("npu")
torch.accelerator.current_device_index = lambda: 0
torch._C._accelerator_isAllocatorInitialized = lambda: state["initialised"]
torch._C._accelerator_getDeviceStats = lambda index: {}
torch._C._accelerator_resetPeakStats = torch._C._accelerator_resetAccumulatedStats = lambda index: None
torch._C._accelerator_getMemoryInfo = lambda index: (0, 0)
"""


def _run(code):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


@pytest.mark.oracle
def test_memory_functions_check_the_device_type_as_torch_does(torch):
    # before the allocator exists torch answers the statistics (0, {}, None) without looking at the device;
    # get_memory_info always checks it. A fresh interpreter each: the npu must start uninitialised
    probe = (f"MEMORY_FUNCTIONS = {MEMORY_FUNCTIONS!r}\n" + inspect.getsource(_memory_outcomes)
             + "print('\\n'.join(_memory_outcomes(lib, initialise)))\n")
    ours = _run("import npusim as lib\ninitialise = lib.npu.init\n" + probe)
    theirs = _run(_TORCH_WITH_AN_NPU + "lib = torch\ninitialise = lambda: state.update(initialised=True)\n" + probe)
    assert ours == theirs
    assert "False memory_allocated cpu: OK int" in ours
    assert "True memory_allocated cpu: ValueError: cpu doesn't match the current accelerator npu." in ours
    assert "False get_memory_info cuda:0: ValueError: cuda doesn't match the current accelerator npu." in ours


def test_synchronize_and_capability():
    assert acc.synchronize() is None and acc.synchronize(1) is None and acc.synchronize("npu:0") is None
    caps = acc.get_device_capability()
    assert set(caps) == {"supported_dtypes"}
    assert {npusim.float32, npusim.float16, npusim.int64, npusim.bool} <= caps["supported_dtypes"]


def test_memory_functions_answer_for_the_npu():
    npu.init()
    gc.collect()
    x = npusim.empty(1024, device="npu:1")
    assert acc.memory_allocated(1) == npu.memory_allocated(1)
    assert acc.memory_allocated("npu:1") == npu.memory_allocated(1)
    assert acc.max_memory_allocated(1) == npu.max_memory_allocated(1)
    assert acc.memory_reserved() == npu.memory_reserved() and acc.max_memory_reserved() == npu.max_memory_reserved()
    stats = acc.memory_stats(1)
    assert isinstance(stats, OrderedDict) and list(stats) == sorted(stats)
    assert stats["allocated_bytes.all.current"] == npu.memory_allocated(1)
    assert acc.get_memory_info(1) == npu.mem_get_info(1)
    acc.reset_peak_memory_stats(1)
    assert acc.max_memory_allocated(1) == acc.memory_allocated(1)
    acc.reset_accumulated_memory_stats(1)
    assert acc.memory_stats(1)["allocation.all.allocated"] == 0
    reserved = acc.memory_reserved(1)
    del x
    acc.empty_cache()     # the freed block's segment goes back to the device
    assert acc.memory_reserved(1) == npu.memory_reserved(1) <= reserved - 4096
    assert acc.empty_host_cache() is None


def test_device_agnostic_code_runs_on_the_accelerator():
    dev = acc.current_accelerator() if acc.is_available() else npusim.device("cpu")
    model = npusim.nn.Linear(4, 2).to(dev)
    y = model(npusim.ones(3, 4, device=dev))
    y.sum().backward()
    assert y.device.type == "npu" and model.weight.grad.device.type == "npu"


def _outcomes(lib):
    a = lib.accelerator
    out = []
    for label, f in [("is_available", a.is_available), ("current_accelerator", a.current_accelerator),
                     ("device_count", a.device_count), ("current_device_index", a.current_device_index),
                     ("set_device_index", lambda: a.set_device_index(0)),
                     ("set_device_index -1", lambda: a.set_device_index(-1)),
                     ("synchronize", a.synchronize), ("memory_allocated", a.memory_allocated),
                     ("empty_cache", a.empty_cache), ("get_memory_info", a.get_memory_info),
                     ("device_index None", lambda: a.device_index(None).__enter__()),
                     ("device_index 0", lambda: a.device_index(0).__enter__())]:
        try:
            out.append(f"{label}: OK {f()!r}")
        except Exception as e:
            out.append(f"{label}: {type(e).__name__}: {e}")
    return out


_NONE = "RuntimeError: Cannot access accelerator device when none is available."
WITHOUT_ACCELERATOR = [
    "is_available: OK False", "current_accelerator: OK None", "device_count: OK 0",
    f"current_device_index: {_NONE}", f"set_device_index: {_NONE}", "set_device_index -1: OK None",
    f"synchronize: {_NONE}", f"memory_allocated: {_NONE}", f"empty_cache: {_NONE}", f"get_memory_info: {_NONE}",
    "device_index None: OK None", f"device_index 0: {_NONE}",
]


def test_without_an_accelerator():
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env["PYTHONPATH"] = str(ROOT)
    code = NO_BACKEND + "import npusim\n" + inspect.getsource(_outcomes) + "print('\\n'.join(_outcomes(npusim)))\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == WITHOUT_ACCELERATOR


@pytest.mark.oracle
def test_without_an_accelerator_matches_torch(torch):
    assert _outcomes(torch) == WITHOUT_ACCELERATOR
