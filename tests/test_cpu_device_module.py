"""npusim.cpu: torch.cpu's device module, for code written against ``get_device_module(device)``."""
import warnings

import pytest

import npusim


def test_get_device_module_of_the_cpu_is_npusim_cpu():
    assert npusim.get_device_module("cpu") is npusim.cpu
    assert npusim.get_device_module(npusim.device("cpu")) is npusim.cpu


def test_the_cpu_is_one_ready_device():
    cpu = npusim.cpu
    assert cpu.is_available() and cpu.is_initialized()
    assert (cpu.device_count(), cpu.current_device()) == (1, "cpu")
    assert cpu.set_device("cpu") is None and cpu.synchronize() is None
    e = cpu.Event()
    e.record()
    assert e.query() and e.synchronize() is None


def test_stream_blocks_select_and_restore_the_current_stream():
    cpu = npusim.cpu
    default = cpu.current_stream()
    s = cpu.Stream()
    with cpu.stream(s):
        assert cpu.current_stream() is s
        with cpu.stream(None):      # None selects nothing
            assert cpu.current_stream() is s
    assert cpu.current_stream() is default
    s.wait_stream(default)
    s.wait_event(cpu.Event())


def test_capabilities_are_a_read_only_mapping_of_the_machine():
    caps = npusim.cpu.get_capabilities()
    assert caps is npusim.cpu.get_capabilities()
    with pytest.raises(TypeError):
        caps["avx2"] = False
    assert caps["num_logical_cores"] >= 1 and isinstance(caps["architecture"], str)
    if caps["architecture"] == "x86_64":
        assert caps["sse2"] is True       # every x86-64 CPU has it
        assert not caps["avx512_f"] or caps["avx2"]


def test_deprecated_amp_spellings_warn_and_autocast_the_cpu():
    x = npusim.ones(2, 2)
    with pytest.warns(FutureWarning, match=r"npusim.amp.autocast\('cpu', args...\)"):
        ctx = npusim.cpu.amp.autocast()
    with ctx:
        assert (x @ x).dtype == npusim.bfloat16
    with pytest.warns(FutureWarning, match=r"GradScaler\('cpu', args...\)"):
        scaler = npusim.cpu.amp.GradScaler(init_scale=8.0)
    assert scaler.get_scale() == 8.0


@pytest.mark.oracle
def test_same_names_and_capabilities_as_torch_cpu():
    torch = pytest.importorskip("torch")
    assert npusim.cpu.__all__ == torch.cpu.__all__
    ours, theirs = npusim.cpu.get_capabilities(), torch.cpu.get_capabilities()
    for name, value in ours.items():
        if name == "num_logical_cores":
            continue        # torch counts cores it may not be allowed to run on; os.cpu_count is ours
        assert theirs[name] == value, name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert torch.cpu.amp.autocast().fast_dtype == torch.bfloat16
