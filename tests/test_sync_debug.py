"""``npusim.npu.set_sync_debug_mode``: operations that make the host wait for the npu warn or raise, as
torch.cuda's do; the device errors and ``get_device_module`` / ``get_device`` at npusim's top level."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import warnings

import pytest

import npusim

npu = npusim.npu
needs_npu = pytest.mark.skipif(not npu.is_available(), reason="needs the npu")
MSG = "called a synchronizing npu operation"


@pytest.fixture
def sync_mode():
    yield npu.set_sync_debug_mode
    npu.set_sync_debug_mode(0)


def _sync_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if str(w.message) == MSG]


@needs_npu
@pytest.mark.parametrize("read", [
    lambda x: x.sum().item(), lambda x: x.cpu(), lambda x: x.tolist(), lambda x: repr(x),
    lambda x: x.to("cpu"), lambda x: npusim.npu.current_stream().synchronize(),
], ids=["item", "cpu", "tolist", "repr", "to_cpu", "stream_synchronize"])
def test_synchronizing_operations_warn_and_raise(sync_mode, read):
    x = npusim.arange(4.0, device="npu")
    sync_mode("warn")
    assert npu.get_sync_debug_mode() == 1
    assert _sync_warnings(lambda: read(x)) == [MSG]
    sync_mode(2)
    with pytest.raises(RuntimeError, match=MSG):
        read(x)
    sync_mode("default")
    assert _sync_warnings(lambda: read(x)) == []


@needs_npu
def test_data_dependent_ops_synchronize_and_device_work_does_not(sync_mode):
    x = npusim.tensor([0.0, 1.0, 2.0], device="npu")
    sync_mode("error")
    y = npusim.relu(x * 2 + 1).sum()          # device work: no host wait
    idx = npusim.tensor([2, 0], device="npu")
    assert x[idx].shape == (2,)
    with pytest.raises(RuntimeError, match=MSG):
        x.nonzero()
    npusim.npu.synchronize()                  # an explicit device synchronize is not reported, as in torch
    sync_mode(0)
    assert y.item() == 9.0


@needs_npu
def test_the_warning_points_at_the_callers_line(sync_mode):
    x = npusim.ones(2, device="npu")
    sync_mode(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x.cpu()
    assert caught[0].filename == __file__


def test_bad_modes_are_refused(sync_mode):
    with pytest.raises(RuntimeError, match="invalid value of debug_mode, expected one of `default`, `warn`, `error`"):
        npu.set_sync_debug_mode("loud")
    with pytest.raises(TypeError):
        npu.set_sync_debug_mode(1.5)


def test_cpu_tensors_never_report(sync_mode, device):
    x = npusim.ones(2, device=device)
    sync_mode("error")
    if device == "cpu":
        assert x.sum().item() == 2.0
    else:
        with pytest.raises(RuntimeError, match=MSG):
            x.sum().item()


# --- errors, get_device_module, get_device ------------------------------------------------------------------

def test_error_classes_are_shared():
    assert npusim.OutOfMemoryError is npu.OutOfMemoryError
    assert npusim.AcceleratorError is npu.AcceleratorError
    assert issubclass(npusim.OutOfMemoryError, RuntimeError) and issubclass(npusim.AcceleratorError, RuntimeError)
    assert npu.DeferredCudaCallError.__mro__[1] is Exception


def test_out_of_memory_is_npusim_out_of_memory_error():
    code = ("import npusim\ntry:\n    npusim.empty(1 << 30, device='npu')\nexcept npusim.OutOfMemoryError as e:\n"
            "    print('caught', type(e).__name__)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env.update(NPUSIM_DEVICE_MEMORY="64MiB", NPUSIM_BACKEND="emulation")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "caught OutOfMemoryError"


def test_deferred_call_error_reports_where_the_call_was_made():
    code = ("import npusim\nfrom npusim.backend import device_module as m\n"
            "def fail(rt):\n    raise ValueError('bad seed')\n"
            "m._when_initialised('manual_seed', fail)\n"
            "try:\n    npusim.ones(1, device='npu')\nexcept npusim.npu.DeferredCudaCallError as e:\n"
            "    print(type(e.__cause__).__name__, 'bad seed' in str(e), '<string>' in str(e))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env["NPUSIM_BACKEND"] = "emulation"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["ValueError", "True", "True"]


def test_get_device_module_and_get_device(device):
    assert npusim.get_device_module("npu") is npu
    assert npusim.get_device_module(npusim.device("npu", 0)) is npu
    assert npusim.get_device_module() is npu         # the current accelerator's
    assert npusim.get_device_module("cuda") is npusim.cuda
    with pytest.raises(RuntimeError, match="Invalid value of device '3', expect npusim.device, str, or None"):
        npusim.get_device_module(3)
    with pytest.raises(RuntimeError, match="Device 'meta' does not have a corresponding module registered as "
                                           "'npusim.meta'."):
        npusim.get_device_module("meta")
    x = npusim.ones(2, device=device)
    assert npusim.get_device(x) == (-1 if device == "cpu" else 0)
    with pytest.raises(TypeError, match=r"get_device\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        npusim.get_device(3)


@pytest.mark.oracle
def test_against_torch(torch):
    assert torch.OutOfMemoryError is torch.cuda.OutOfMemoryError
    assert torch.AcceleratorError is torch.cuda.AcceleratorError
    for a, b in ((npusim.OutOfMemoryError, torch.OutOfMemoryError), (npusim.AcceleratorError, torch.AcceleratorError),
                 (npu.DeferredCudaCallError, torch.cuda.DeferredCudaCallError)):
        assert [c.__name__ for c in a.__mro__] == [c.__name__ for c in b.__mro__]
    assert torch.get_device(torch.ones(1)) == npusim.get_device(npusim.ones(1)) == -1
    assert str(inspect.signature(npusim.get_device_module)) == "(device=None)"
    assert list(inspect.signature(torch.get_device_module).parameters) == ["device"]
    for name in ("set_sync_debug_mode", "get_sync_debug_mode"):
        assert (list(inspect.signature(getattr(npu, name)).parameters)
                == list(inspect.signature(getattr(torch.cuda, name)).parameters))
    with pytest.raises(RuntimeError) as theirs:
        torch.cuda.set_sync_debug_mode("loud") if torch.cuda.is_available() else (_ for _ in ()).throw(
            RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`"))
    with pytest.raises(RuntimeError) as ours:
        npu.set_sync_debug_mode("loud")
    assert str(ours.value) == str(theirs.value)
