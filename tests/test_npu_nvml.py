"""NVML in cuda mode: which NVML device each npu is (CUDA_VISIBLE_DEVICES, parsed as torch.cuda parses it),
and the device name, free memory and utilisation read through it, with the CUDA runtime as fallback.

A fake ``pynvml`` (and, for the fallback, a fake ``cupy``) stands in for the driver, so the mapping is
checked on every machine; the tests marked ``gpu`` check the real thing.
"""
from __future__ import annotations

import contextlib
import sys
import types

import pytest

import npusim
from npusim.backend import nvml
from npusim.backend.runtime import runtime

UUIDS = ["GPU-aaaa-0000", "GPU-bbbb-1111", "GPU-abcd-2222", "GPU-cccc-3333"]


class FakeNVMLError(Exception):
    pass


def make_fake_pynvml(working=True):
    """Four GPUs named "GPU k" with k GiB free of 80 GiB and 10k percent busy; or, not ``working``, no driver."""
    m = types.ModuleType("pynvml")
    m.NVMLError = FakeNVMLError
    m.init_calls = 0

    def nvmlInit():
        m.init_calls += 1
        if not working:
            raise FakeNVMLError("NVML Shared Library Not Found")

    def handle(i):
        if not 0 <= i < len(UUIDS):
            raise FakeNVMLError("Invalid Argument")
        return ("handle", i)

    m.nvmlInit = nvmlInit
    m.nvmlDeviceGetCount = lambda: len(UUIDS)
    m.nvmlDeviceGetHandleByIndex = handle
    m.nvmlDeviceGetUUID = lambda h: UUIDS[h[1]].encode()      # bytes, as older nvidia-ml-py returns
    m.nvmlDeviceGetName = lambda h: f"GPU {h[1]}"
    m.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(free=h[1] << 30, total=80 << 30,
                                                                 used=(80 - h[1]) << 30)
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=10 * h[1], memory=h[1])
    m.NVML_TEMPERATURE_GPU, m.NVML_CLOCK_SM = 0, 1
    m.nvmlDeviceGetTemperature = lambda h, sensor: 40 + h[1] if sensor == 0 else -1
    m.nvmlDeviceGetPowerUsage = lambda h: 100_000 + h[1]
    m.nvmlDeviceGetClockInfo = lambda h, clock: 1980 if clock == 1 else -1
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [types.SimpleNamespace(pid=4242, usedGpuMemory=3 << 20)]
    return m


@pytest.fixture
def fake_nvml(monkeypatch):
    """Install a fake pynvml (returned) that NVML's module initialises afresh."""
    def install(working=True):
        m = make_fake_pynvml(working)
        monkeypatch.setitem(sys.modules, "pynvml", m)
        monkeypatch.setattr(nvml, "_initialised", False)
        return m
    return install


@pytest.fixture
def visible(monkeypatch):
    def set_to(value):
        if value is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    return set_to


# --- CUDA_VISIBLE_DEVICES, as CUDA (and torch.cuda) reads it -------------------------------------------------

PARSES = [("0", [0]), ("1,0", [1, 0]), ("2, 3", [2, 3]), (" 3", [3]), ("+1", [1]), ("1gpu2,2ampere", [1, 2]),
          ("0,-1,2", [0]), ("1,1", []), ("", []), ("a", []),
          ("GPU-ab,GPU-cd", ["GPU-ab", "GPU-cd"]), ("GPU-ab,1", ["GPU-ab"]), ("GPU-ab,GPU-ab", []),
          ("MIG-x,MIG-y", ["MIG-x", "MIG-y"])]


@pytest.mark.parametrize("value, devices", PARSES)
def test_visible_devices_parse_as_cuda_reads_them(value, devices):
    assert nvml.visible_devices(value) == devices


def test_unset_visible_devices_show_every_device():
    assert nvml.visible_devices(None)[:4] == [0, 1, 2, 3]


@pytest.mark.oracle
@pytest.mark.parametrize("value", [v for v, _ in PARSES] + [None])
def test_visible_devices_parse_as_torch_cuda(torch, value, visible):
    visible(value)
    assert nvml.visible_devices(value) == torch.cuda._parse_visible_devices()


def test_a_lone_sign_is_no_device():
    assert nvml.visible_devices("-") == [] and nvml.visible_devices("1,+") == [1]


@pytest.mark.parametrize("value, ordinals", [(None, [0, 1, 2, 3]), ("2,0", [2, 0]), ("3", [3]),
                                             ("GPU-bbbb,GPU-aaaa-0000", [1, 0]), ("GPU-c", [3]),
                                             ("GPU-bbbb,GPU-a,GPU-cccc", [1])])   # "GPU-a" is ambiguous: the list ends
def test_npu_indices_map_to_nvml_ordinals(fake_nvml, visible, value, ordinals):
    fake_nvml()
    visible(value)
    assert [nvml.nvml_index(i) for i in range(len(ordinals))] == ordinals
    if value is None:
        return      # unset: CUDA sees every device, and NVML's own lookup says which exist
    with pytest.raises(nvml.NvmlUnavailable, match=f"npu {len(ordinals)} is not visible to NVML"):
        nvml.nvml_index(len(ordinals))


def test_queries_read_the_mapped_device_and_initialise_nvml_once(fake_nvml, visible):
    m = fake_nvml()
    visible("3,1")
    assert nvml.device_name(0) == "GPU 3" and nvml.device_name(1) == "GPU 1"
    assert nvml.memory_info(0) == (3 << 30, 80 << 30)
    assert nvml.utilization(1) == 10
    assert m.init_calls == 1


def test_nvml_errors_become_unavailable(fake_nvml, visible):
    visible("7")     # a device NVML does not have
    fake_nvml()
    with pytest.raises(nvml.NvmlUnavailable, match="NVML device 7: Invalid Argument"):
        nvml.device_name(0)
    fake_nvml(working=False)
    with pytest.raises(nvml.NvmlUnavailable, match="NVML cannot start: NVML Shared Library Not Found"):
        nvml.memory_info(0)


def test_without_nvidia_ml_py_nvml_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)    # import fails
    monkeypatch.setattr(nvml, "_initialised", False)
    with pytest.raises(nvml.NvmlUnavailable, match="nvidia-ml-py"):
        nvml.utilization(0)


# --- npusim.npu in cuda mode, with NVML and with the CUDA runtime as fallback ----------------------------------

@pytest.fixture
def fake_cuda_mode(monkeypatch):
    """The npu's runtime in cuda mode with two GPUs, over a fake cupy whose runtime names each "CUDA GPU k"."""
    npusim.npu.init()
    cupy = types.SimpleNamespace(cuda=types.SimpleNamespace(
        Device=lambda i: contextlib.nullcontext(),
        runtime=types.SimpleNamespace(
            memGetInfo=lambda: (5, 6),
            getDeviceProperties=lambda i: {"name": f"CUDA GPU {i}".encode(), "major": 9, "minor": 0,
                                           "totalGlobalMem": 6, "multiProcessorCount": 132})))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(runtime, "mode", "cuda")
    monkeypatch.setattr(runtime, "_cuda_count", 2)


def test_cuda_mode_name_and_memory_come_from_nvml(fake_cuda_mode, fake_nvml, visible):
    fake_nvml()
    visible("2,3")
    assert npusim.npu.get_device_name(1) == "GPU 3"
    assert npusim.npu.mem_get_info(0) == (2 << 30, 80 << 30)
    assert npusim.npu.utilization("npu:1") == 30


def test_cuda_mode_sensors_and_processes_come_from_nvml(fake_cuda_mode, fake_nvml, visible):
    fake_nvml()
    visible("2,3")
    n = npusim.npu
    assert (n.temperature(1), n.power_draw(1), n.clock_rate(0), n.memory_usage(1)) == (43, 100_003, 1980, 3)
    assert n.device_memory_used(0) == 78 << 30
    assert n.list_gpu_processes(1) == "GPU:1\nprocess       4242 uses        3.000 MB GPU memory"


def test_cuda_mode_falls_back_to_the_cuda_runtime_without_nvml(fake_cuda_mode, fake_nvml, visible):
    fake_nvml(working=False)
    visible(None)
    assert npusim.npu.get_device_name(1) == "CUDA GPU 1"
    assert npusim.npu.mem_get_info(0) == (5, 6)
    with pytest.raises(nvml.NvmlUnavailable, match="NVML cannot start"):
        npusim.npu.utilization()     # no other source of it: torch.cuda.utilization raises as well


# --- on a real GPU ----------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.real_gpu
def test_nvml_and_the_cuda_runtime_agree_on_a_gpu():
    from test_npu_device import output_of
    out = output_of("""
        import cupy, npusim
        from npusim.backend import nvml
        props = cupy.cuda.runtime.getDeviceProperties(0)
        free, total = npusim.npu.mem_get_info(0)
        print(nvml.device_name(0) == npusim.npu.get_device_name(0) == props["name"].decode())
        print(0 < free <= total, 0 <= npusim.npu.utilization(0) <= 100)
    """, {"NPUSIM_BACKEND": "cuda"})
    assert out.split() == ["True"] * 3
