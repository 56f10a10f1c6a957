"""The npu device: registration at import, the ``npusim.npu`` device functions, the runtime probe
and its environment settings, cross-device rules, and lazy initialisation with CUDA's fork rules.

Settings read once per process (mode, device count, capacity) and fork behaviour are checked in
fresh interpreters. Tests marked ``gpu`` run the cuda mode and skip without a usable GPU.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import npusim
from conftest import host

ROOT = Path(__file__).resolve().parents[1]
NPU_ENV = ("NPUSIM_BACKEND", "NPUSIM_DEVICE_COUNT", "NPUSIM_DEVICE_MEMORY", "NPUSIM_FALLBACK", "NPUSIM_ALLOW_FORK")


def run_fresh(code: str, env=None, pythonpath=()) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter with the given NPUSIM_* settings (the others unset)."""
    full = {k: v for k, v in os.environ.items() if k not in NPU_ENV}
    full.update(env or {})
    full["PYTHONPATH"] = os.pathsep.join([*map(str, pythonpath), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=full)


def output_of(code: str, env=None, pythonpath=()) -> str:
    r = run_fresh(code, env, pythonpath)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture
def on_device_1():
    """Make npu:1 current for the test, then restore the previous device."""
    prev = npusim.npu.current_device()
    npusim.npu.set_device(1)
    yield
    npusim.npu.set_device(prev)


# --- registration: what `import npusim` gives --------------------------------------------------------------

def test_tensors_move_between_cpu_and_npu():
    x = npusim.randn(2, 2, device="npu:0")
    assert x.device == npusim.device("npu", 0) and x.is_npu and not x.is_cpu
    c = npusim.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert not c.is_npu
    assert c.npu().device == npusim.device("npu:0")
    assert c.npu(1).device == npusim.device("npu:1")
    assert c.to("npu").device == npusim.device("npu:0")
    assert c.to("npu:1").is_npu
    back = c.npu(1).cpu()
    assert back.device == npusim.device("cpu") and back.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert npusim.zeros(3, device=npusim.device("npu", 1)).device == npusim.device("npu:1")
    assert npusim.npu.current_device() == 0


def test_storages_move_and_report_their_device():
    c = npusim.tensor([1.0, 2.0])
    s = c.untyped_storage().npu()
    assert s.is_npu and s.device == npusim.device("npu:0")
    assert not c.untyped_storage().is_npu
    assert s.cpu().tolist() == c.untyped_storage().tolist()


def test_npu_copies_are_independent_of_the_cpu_tensor():
    c = npusim.tensor([1.0, 2.0])
    n = c.npu()
    c[0] = 5.0
    assert host(n).tolist() == [1.0, 2.0]
    n[1] = 7.0
    assert c.tolist() == [5.0, 2.0]


def test_get_device_gives_the_index():
    assert npusim.ones(1, device="npu:1").get_device() == 1
    assert npusim.ones(1).get_device() == -1


# --- npusim.npu: torch.cuda's names ------------------------------------------------------------------------

CUDA_NAMES = ("is_available", "device_count", "current_device", "set_device", "device", "device_of", "synchronize",
              "init", "is_initialized", "get_device_name", "get_device_properties", "get_device_capability",
              "mem_get_info", "utilization", "is_bf16_supported", "memory_allocated", "max_memory_allocated",
              "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
              "reset_accumulated_memory_stats", "empty_cache", "memory_stats", "memory_summary",
              "set_per_process_memory_fraction", "OutOfMemoryError")


def test_device_module_has_torch_cuda_names():
    missing = [n for n in CUDA_NAMES if not hasattr(npusim.npu, n)]
    assert missing == []
    assert issubclass(npusim.npu.OutOfMemoryError, RuntimeError)


@pytest.mark.oracle
def test_device_module_names_exist_in_torch_cuda(torch):
    assert [n for n in CUDA_NAMES if not hasattr(torch.cuda, n)] == []


def test_availability_and_count():
    assert npusim.npu.is_available()
    assert npusim.npu.device_count() == 2
    assert npusim.npu.is_initialized()   # other tests made npu tensors already
    assert npusim.npu.runtime_mode() in ("emulation", "cuda")


def test_set_device_changes_where_unindexed_tensors_go(on_device_1):
    assert npusim.npu.current_device() == 1
    assert npusim.ones(1, device="npu").device == npusim.device("npu:1")
    assert npusim.tensor([1.0]).npu().device == npusim.device("npu:1")
    assert npusim.ones(1, device="npu:0").device == npusim.device("npu:0")


def test_set_device_accepts_index_string_and_device():
    prev = npusim.npu.current_device()
    try:
        for arg, want in ((1, 1), ("npu:0", 0), (npusim.device("npu", 1), 1)):
            npusim.npu.set_device(arg)
            assert npusim.npu.current_device() == want
    finally:
        npusim.npu.set_device(prev)


def test_device_context_manager_restores_and_nests():
    assert npusim.npu.current_device() == 0
    with npusim.npu.device(1):
        assert npusim.npu.current_device() == 1
        assert npusim.empty(2, device="npu").device.index == 1
        with npusim.npu.device("npu:0"):
            assert npusim.npu.current_device() == 0
        assert npusim.npu.current_device() == 1
    assert npusim.npu.current_device() == 0
    with npusim.npu.device(None):
        assert npusim.npu.current_device() == 0


def test_device_context_restores_after_an_error():
    with pytest.raises(ZeroDivisionError):
        with npusim.npu.device(1):
            1 / 0
    assert npusim.npu.current_device() == 0


def test_device_of_follows_the_tensor():
    x = npusim.ones(1, device="npu:1")
    with npusim.npu.device_of(x):
        assert npusim.npu.current_device() == 1
    with npusim.npu.device_of(npusim.ones(1)):   # a cpu tensor: no change
        assert npusim.npu.current_device() == 0
    assert npusim.npu.current_device() == 0


def test_current_device_is_per_thread():
    import threading
    seen = {}
    with npusim.npu.device(1):
        t = threading.Thread(target=lambda: seen.setdefault("other", npusim.npu.current_device()))
        t.start()
        t.join()
        assert npusim.npu.current_device() == 1
    assert seen == {"other": 0}


def test_synchronize_accepts_the_device_forms():
    for arg in (None, 0, 1, "npu:1", npusim.device("npu", 0)):
        assert npusim.npu.synchronize(arg) is None


@pytest.mark.parametrize("bad, err, message", [
    ("cpu", ValueError, "Expected a npu device, but got: cpu"),
    (npusim.device("cpu"), ValueError, "Expected a npu device, but got: cpu"),
    (5, RuntimeError, r"Invalid device index 5: the npu backend has 2 devices \(valid indices 0..1\)"),
    ("npu:7", RuntimeError, "Invalid device index 7"),
    (-2, ValueError, "Expected a non-negative device index, but got -2"),
    (1.5, TypeError, "Expected an npu device"),
])
def test_bad_device_arguments(bad, err, message):
    for fn in (npusim.npu.set_device, npusim.npu.synchronize, npusim.npu.memory_allocated,
               npusim.npu.get_device_properties):
        with pytest.raises(err, match=message):
            fn(bad)


@pytest.mark.oracle
def test_wrong_device_type_message_matches_torch_cuda(torch):
    with pytest.raises(ValueError) as theirs:
        torch.cuda.set_device("cpu")
    with pytest.raises(ValueError) as ours:
        npusim.npu.set_device("cpu")
    assert str(ours.value) == str(theirs.value).replace("cuda", "npu")


def test_device_properties_and_name():
    p = npusim.npu.get_device_properties(0)
    if npusim.npu.runtime_mode() == "cuda":     # the GPU's own figure
        import cupy
        expected = cupy.cuda.runtime.getDeviceProperties(0)["totalGlobalMem"]
    else:                                       # the emulation's default capacity
        expected = 16 * 1024 ** 3
    assert p.total_memory == expected
    assert p.name == npusim.npu.get_device_name() == npusim.npu.get_device_name(1)
    assert npusim.npu.get_device_capability() == (p.major, p.minor)
    assert f"total_memory={expected // 1024 ** 2}MB" in repr(p)
    free, total = npusim.npu.mem_get_info()
    assert total == p.total_memory and 0 < free <= total


@pytest.mark.real_gpu
def test_utilization_is_a_percentage():
    npusim.ones(256, 256, device="npu").sum()
    u = npusim.npu.utilization()
    assert isinstance(u, int) and 0 <= u <= 100


def test_bf16_is_supported_on_the_emulated_npu():
    assert npusim.npu.is_bf16_supported()
    x = npusim.ones(2, dtype=npusim.bfloat16, device="npu")
    assert (x + x).dtype is npusim.bfloat16


# --- cross-device rules (torch's) ---------------------------------------------------------------------------

def test_npu_and_cpu_tensors_do_not_mix():
    x = npusim.ones(2, device="npu:0")
    with pytest.raises(RuntimeError, match=r"^Expected all tensors to be on the same device, but found at least two "
                                           r"devices, npu:0 and cpu!$"):
        x + npusim.ones(2)
    with pytest.raises(RuntimeError, match="found at least two devices, npu:0 and npu:1!"):
        x * npusim.ones(2, device="npu:1")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        npusim.ones(2, 2, device="npu") @ npusim.ones(2, 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        npusim.cat([x, npusim.ones(2)])


def test_cpu_scalar_tensors_mix_with_npu_tensors_as_in_torch():
    x = npusim.tensor([1.0, 2.0]).npu()
    y = x + npusim.tensor(3.0)
    assert y.device == x.device and host(y).tolist() == [4.0, 5.0]
    assert (npusim.tensor(2.0) * x).device == x.device
    x.add_(npusim.tensor(1.0))
    assert host(x).tolist() == [2.0, 3.0]
    assert npusim.where(x > 2, x, npusim.tensor(0.0)).device == x.device
    with pytest.raises(RuntimeError, match="npu:0 and cpu"):
        x + npusim.tensor([3.0])          # one element, but not 0-dim: refused as in torch


def test_numpy_on_an_npu_tensor_is_refused_like_torch():
    x = npusim.ones(2, device="npu")
    with pytest.raises(TypeError, match=r"^can't convert npu:0 device type tensor to numpy. Use Tensor.cpu\(\) to "
                                        r"copy the tensor to host memory first.$"):
        x.numpy()
    np.testing.assert_array_equal(x.cpu().numpy(), [1.0, 1.0])


def test_an_index_beyond_the_device_count_is_refused():
    with pytest.raises(RuntimeError, match=r"^Invalid device npu:5: the npu backend has 2 devices "
                                           r"\(valid indices 0..1\)$"):
        npusim.ones(2, device="npu:5")
    with pytest.raises(RuntimeError, match="Invalid device npu:2"):
        npusim.ones(2).to("npu:2")
    with pytest.raises(RuntimeError, match="Invalid device"):
        npusim.ones(2).npu(2)


def test_copy_between_devices():
    x = npusim.zeros(3, device="npu:1")
    x.copy_(npusim.tensor([1.0, 2.0, 3.0]))
    assert host(x).tolist() == [1.0, 2.0, 3.0]
    y = npusim.zeros(3, device="npu:0").copy_(x)
    assert y.device.index == 0 and host(y).tolist() == [1.0, 2.0, 3.0]
    c = npusim.zeros(3, dtype=npusim.int64).copy_(y)    # with a dtype conversion
    assert c.tolist() == [1, 2, 3]
    b = npusim.zeros(2, 3, device="npu").copy_(npusim.tensor([1.0, 2.0, 3.0]))   # broadcast
    assert host(b).tolist() == [[1.0, 2.0, 3.0]] * 2
    with pytest.raises(RuntimeError, match="must match the size"):
        npusim.zeros(2, device="npu").copy_(npusim.ones(3))


# --- the runtime probe and its settings (fresh interpreters) -------------------------------------------------

def test_import_does_not_probe_and_emulation_needs_no_cupy():
    out = output_of("""
        import sys, npusim
        from npusim.backend.runtime import runtime
        print(runtime.mode, npusim.npu.is_initialized())
        x = npusim.ones(1, device="npu")
        print(runtime.mode, npusim.npu.is_initialized(), "cupy" in sys.modules)
    """, {"NPUSIM_BACKEND": "emulation"})
    assert out.split() == ["None", "False", "emulation", "True", "False"]


@pytest.mark.emulation_only
def test_device_count_and_capacity_settings():
    out = output_of("""
        import npusim
        print(npusim.npu.device_count(), npusim.ones(1, device="npu:2").device)
        print(npusim.npu.get_device_properties(2).total_memory, npusim.npu.mem_get_info(1)[1])
        try:
            npusim.ones(1, device="npu:3")
        except RuntimeError as e:
            print(e)
    """, {"NPUSIM_DEVICE_COUNT": "3", "NPUSIM_DEVICE_MEMORY": "512MiB"})
    assert out.splitlines() == ["3 npu:2", "536870912 536870912",
                                "Invalid device npu:3: the npu backend has 3 devices (valid indices 0..2)"]


@pytest.mark.parametrize("text, nbytes", [("512MiB", 512 * 2 ** 20), ("16GiB", 16 * 2 ** 30), ("1000", 1000),
                                          ("2GB", 2 * 10 ** 9), ("1.5 KiB", 1536), ("64mib", 64 * 2 ** 20)])
def test_memory_sizes_parse_with_units(text, nbytes):
    from npusim.backend.config import parse_bytes
    assert parse_bytes(text) == nbytes


@pytest.mark.parametrize("env, message", [
    ({"NPUSIM_DEVICE_MEMORY": "lots"}, "NPUSIM_DEVICE_MEMORY='lots' is not a size: use bytes or a number with a unit "
                                       "such as 512MiB or 16GiB"),
    ({"NPUSIM_DEVICE_MEMORY": "0"}, "NPUSIM_DEVICE_MEMORY='0' must be a positive size"),
    ({"NPUSIM_DEVICE_COUNT": "two"}, "NPUSIM_DEVICE_COUNT='two' is not an integer"),
    ({"NPUSIM_DEVICE_COUNT": "0"}, "NPUSIM_DEVICE_COUNT='0' must be at least 1"),
    ({"NPUSIM_BACKEND": "tpu"}, "NPUSIM_BACKEND='tpu' is not one of auto, emulation, cuda"),
    ({"NPUSIM_FALLBACK": "loud"}, "NPUSIM_FALLBACK='loud' is not one of warn, silent, error"),
])
def test_bad_settings_raise_a_clear_error_on_first_use(env, message):
    r = run_fresh("""
        import npusim
        try:
            npusim.ones(1, device="npu")
        except ValueError as e:
            print("ValueError:", e)
    """, env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ValueError: {message}"


def _gpu_usable() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def test_forcing_cuda_without_a_gpu_is_a_clear_error():
    if _gpu_usable():
        pytest.skip("a usable GPU is present: forcing cuda succeeds here")
    out = output_of("""
        import npusim
        print(npusim.npu.is_available(), npusim.npu.device_count())
        for _ in range(2):  # the failed probe is remembered, and says the same again
            try:
                npusim.ones(1, device="npu")
            except RuntimeError as e:
                print(f"{type(e).__name__}: {e}")
    """, {"NPUSIM_BACKEND": "cuda"})
    lines = out.splitlines()
    assert lines[0] == "False 0"
    assert lines[1] == lines[2]
    assert lines[1].startswith("NpuRuntimeError: NPUSIM_BACKEND=cuda, but no usable NVIDIA GPU was found through "
                               "CuPy (")
    assert "or set it to 'emulation'" in lines[1]


FAKE_CUPY = {
    "cupy/__init__.py": "from . import cuda\n",
    "cupy/cuda/__init__.py": "from . import runtime\n",
    "cupy/cuda/runtime.py": ("class CUDARuntimeError(RuntimeError):\n    pass\n\n\n"
                             "def getDeviceCount():\n"
                             "    raise CUDARuntimeError('cudaErrorNoDevice: no CUDA-capable device is detected')\n"),
}


@pytest.fixture
def fake_cupy(tmp_path):
    """A ``cupy`` package whose device query fails, as CuPy does on a machine without a GPU."""
    for rel, text in FAKE_CUPY.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path


def test_cupy_without_a_gpu_means_emulation(fake_cupy):
    out = output_of("""
        import npusim
        x = npusim.ones(2, device="npu") * 3
        print(npusim.npu.runtime_mode(), npusim.npu.device_count(), x.device, x.cpu().tolist())
    """, pythonpath=[fake_cupy])
    assert out.split() == ["emulation", "2", "npu:0", "[3.0,", "3.0]"]


def test_cupy_without_a_gpu_and_forced_cuda_says_why(fake_cupy):
    r = run_fresh("import npusim; npusim.npu.init()", {"NPUSIM_BACKEND": "cuda"}, pythonpath=[fake_cupy])
    assert r.returncode == 1
    assert ("NPUSIM_BACKEND=cuda, but no usable NVIDIA GPU was found through CuPy (CuPy cannot reach a GPU: "
            "CUDARuntimeError: cudaErrorNoDevice: no CUDA-capable device is detected)") in r.stderr


def test_info_shows_the_mode():
    env = {k: v for k, v in os.environ.items() if k not in NPU_ENV}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-m", "npusim", "info"], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=dict(env, NPUSIM_BACKEND="emulation", NPUSIM_DEVICE_COUNT="3"))
    assert r.returncode == 0, r.stderr
    assert "  npu (PrivateUse1): 3 devices, mode: emulation" in r.stdout.splitlines()
    assert "    npu:2  npusim emulated NPU" in r.stdout.splitlines()


# --- lazy initialisation and fork ----------------------------------------------------------------------------

FORK_SCRIPT = """
    import os, npusim
    if {init_parent}:
        npusim.ones(1, device="npu")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        lines = [f"initialized {{npusim.npu.is_initialized()}}"]
        for name, f in [("ones", lambda: npusim.ones(1, device="npu").device),
                        ("to", lambda: npusim.ones(1).to("npu:1").device),
                        ("current_device", npusim.npu.current_device),
                        ("memory_allocated", npusim.npu.memory_allocated),
                        ("cpu", lambda: (npusim.ones(2) + 1).tolist()),
                        ("device_count", npusim.npu.device_count)]:
            try:
                lines.append(f"{{name}}: {{f()}}")
            except Exception as e:
                lines.append(f"{{name}}: {{type(e).__name__}}: {{e}}")
        os.write(w, "\\n".join(lines).encode())
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    print(os.read(r, 1 << 16).decode())
    print("parent still works:", npusim.ones(1, device="npu").device)
"""
BAD_FORK = ("Cannot re-initialize npu in forked subprocess. To use npu with multiprocessing, you must use the "
            "'spawn' start method")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_after_init_cannot_use_the_npu():
    out = output_of(FORK_SCRIPT.format(init_parent=True), {"NPUSIM_BACKEND": "emulation"})
    lines = out.splitlines()
    assert lines[0] == "initialized False"
    for name in ("ones", "to", "current_device"):
        assert f"{name}: NpuRuntimeError: {BAD_FORK}" in lines
    # as torch.cuda's: statistics of a device this process has not initialised are empty
    assert "memory_allocated: 0" in lines
    assert "cpu: [2.0, 2.0]" in lines and "device_count: 2" in lines
    assert lines[-1] == "parent still works: npu:0"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_before_init_initialises_its_own_npu():
    out = output_of(FORK_SCRIPT.format(init_parent=False), {"NPUSIM_BACKEND": "emulation"})
    lines = out.splitlines()
    assert lines[:5] == ["initialized False", "ones: npu:0", "to: npu:1", "current_device: 0",
                         "memory_allocated: 0"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_allow_fork_lifts_the_rule_on_the_emulation():
    out = output_of(FORK_SCRIPT.format(init_parent=True), {"NPUSIM_BACKEND": "emulation", "NPUSIM_ALLOW_FORK": "1"})
    lines = out.splitlines()
    assert lines[:5] == ["initialized True", "ones: npu:0", "to: npu:1", "current_device: 0",
                         "memory_allocated: 0"]


def test_spawned_workers_can_use_the_npu(tmp_path):
    script = tmp_path / "spawn_npu.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing as mp
        import npusim

        def work(n):
            return float(npusim.ones(n, device="npu").sum().cpu())

        if __name__ == "__main__":
            npusim.ones(1, device="npu")   # the parent initialised the npu: spawned children still may
            with mp.get_context("spawn").Pool(1) as pool:
                print(pool.map(work, [3]))
    """))
    env = {k: v for k, v in os.environ.items() if k not in NPU_ENV}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[3.0]"


# --- cuda mode (needs a GPU) -----------------------------------------------------------------------------------

@pytest.mark.gpu
def test_cuda_mode_runs_on_the_gpu():
    out = output_of("""
        import npusim, cupy
        x = npusim.arange(6, dtype=npusim.float32, device="npu").reshape(2, 3)
        print(npusim.npu.runtime_mode(), type(x._a).__module__.split(".")[0], (x * 2).sum().item())
        print(npusim.npu.device_count() == cupy.cuda.runtime.getDeviceCount())
        print(npusim.npu.get_device_name() == cupy.cuda.runtime.getDeviceProperties(0)["name"].decode())
        free, total = npusim.npu.mem_get_info()
        print(0 < free <= total)
    """, {"NPUSIM_BACKEND": "cuda"})
    assert out.split() == ["cuda", "cupy", "30.0", "True", "True", "True"]


@pytest.mark.gpu
def test_cuda_mode_memory_statistics_follow_cupy_pool():
    out = output_of("""
        import npusim
        base = npusim.npu.memory_allocated()
        x = npusim.empty(1 << 20, dtype=npusim.float32, device="npu")
        grown = npusim.npu.memory_allocated() - base
        del x
        print(grown >= 4 << 20, npusim.npu.memory_allocated() == base, npusim.npu.max_memory_allocated() >= grown)
    """, {"NPUSIM_BACKEND": "cuda"})
    assert out.split() == ["True", "True", "True"]


@pytest.mark.gpu
@pytest.mark.real_gpu
def test_cuda_mode_honours_cuda_visible_devices():
    out = output_of("""
        import npusim, pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else name
        print(npusim.npu.device_count(), npusim.npu.get_device_name(0) == name)
    """, {"NPUSIM_BACKEND": "cuda", "CUDA_VISIBLE_DEVICES": "0"})
    assert out.split() == ["1", "True"]


@pytest.mark.gpu
def test_cuda_mode_ignores_allow_fork():
    out = output_of(FORK_SCRIPT.format(init_parent=True), {"NPUSIM_BACKEND": "cuda", "NPUSIM_ALLOW_FORK": "1"})
    assert f"ones: NpuRuntimeError: {BAD_FORK}" in out.splitlines()
