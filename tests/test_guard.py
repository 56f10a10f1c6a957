"""The device guard: DeviceGuardImplInterface and its registry, DeviceGuard / OptionalDeviceGuard / StreamGuard,
and the dispatcher running each npu kernel with its inputs' device current (and restoring the caller's
device and stream afterwards, also when the kernel raises)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import host

import npusim
from npusim.backend import streams as npu_streams
from npusim.backend.guard import NpuGuardImpl
from npusim.core.dispatch import dispatcher
from npusim.core.c10.device_guard import (
    DeviceGuard, DeviceGuardImplInterface, OptionalDeviceGuard, OptionalStreamGuard, StreamGuard, get_guard_impl,
    has_guard_impl, register_guard_impl,
)
from npusim.library import Library

ROOT = Path(__file__).resolve().parents[1]
npu = npusim.npu


@pytest.fixture(autouse=True)
def _default_device_and_streams():
    npu.set_device(0)
    yield
    for i in range(npu.device_count()):
        npu_streams.make_current(i, 0)
    npu.set_device(0)


@pytest.fixture(scope="module")
def probe_ops():
    """Operators whose npu kernels record the current device (and stream) they run under."""
    lib = Library("guard_probe", "DEF")
    seen = []
    lib.define("probe(Tensor x) -> Tensor")
    lib.define("probe_list(Tensor[] xs) -> Tensor")
    lib.define("probe_factory(int n, *, Device? device=None) -> Tensor")
    lib.define("fail(Tensor x) -> Tensor")
    lib.define("nested(Tensor x, Tensor other) -> Tensor")
    lib.define("cpu_only(Tensor x) -> Tensor")
    lib.define("probe_pair(Tensor x, Tensor y) -> Tensor")

    def probe(x):
        seen.append((npu.current_device(), npu.current_stream()))
        return x

    def probe_list(xs):
        seen.append((npu.current_device(), None))
        return xs[0]

    def probe_factory(n, device=None):
        seen.append((npu.current_device(), None))
        return npusim.zeros(n, device=device)

    def fail(x):
        seen.append((npu.current_device(), None))
        raise ValueError("kernel failed")

    def nested(x, other):
        seen.append((npu.current_device(), None))
        npusim.ops.guard_probe.probe(other)
        seen.append((npu.current_device(), None))
        return x

    def cpu_only(x):
        seen.append((npu.current_device(), None))
        return x + 1

    def probe_pair(x, y):
        seen.append((npu.current_device(), None))
        return y

    for name, fn in (("probe", probe), ("probe_list", probe_list), ("probe_factory", probe_factory),
                     ("fail", fail), ("nested", nested), ("probe_pair", probe_pair)):
        lib.impl(name, fn, "PrivateUse1")
    lib.impl("cpu_only", cpu_only, "CPU")     # runs on the npu through the CPU fallback
    yield npusim.ops.guard_probe, seen
    lib._destroy()


# --- the registry and the interface ---------------------------------------------------------------------------

def test_the_npu_registered_its_guard():
    impl = get_guard_impl("npu")
    assert isinstance(impl, NpuGuardImpl) and impl.type() == "npu"
    assert has_guard_impl("npu") and has_guard_impl(npusim.device("npu:1")) and has_guard_impl("cpu")
    assert not has_guard_impl("cuda")
    assert impl.device_count() == npu.device_count()
    assert impl.get_device() == npusim.device("npu:0")


def test_registry_errors():
    with pytest.raises(RuntimeError, match="npusim is not linked with support for cuda devices"):
        get_guard_impl("cuda")
    with pytest.raises(RuntimeError, match="A device guard implementation is already registered for device type "
                                           "'npu'"):
        register_guard_impl("npu", NpuGuardImpl())
    with pytest.raises(TypeError, match="register_guard_impl expects a DeviceGuardImplInterface, got object"):
        register_guard_impl("cuda", object())


@pytest.mark.parametrize("method, args, message", [
    ("get_default_stream", (None,), "Backend doesn't support acquiring a default stream."),
    ("get_stream_from_global_pool", (None,), "Backend doesn't support acquiring a stream from pool."),
    ("get_new_stream", (None,), "Backend doesn't support create a new Stream."),
    ("record_event", (None, None, -1, False), "Backend doesn't support events."),
    ("block", (None, None), "Backend doesn't support events."),
    ("query_event", (None,), "Backend doesn't support events."),
    ("query_stream", (None,), "Backend doesn't support querying streams."),
    ("synchronize_stream", (None,), "Backend doesn't support synchronizing streams."),
    ("synchronize_event", (None,), "Backend doesn't support synchronizing events."),
    ("synchronize_device", (0,), "Backend doesn't support synchronizing all streams on device."),
    ("elapsed_time", (None, None, 0), "Backend doesn't support elapsedTime."),
])
def test_interface_defaults_are_torchs_errors(method, args, message):
    with pytest.raises(RuntimeError, match=message):
        getattr(DeviceGuardImplInterface(), method)(*args)


def test_interface_methods_of_the_npu():
    impl = get_guard_impl("npu")
    assert impl.exchange_device(npusim.device("npu:1")) == npusim.device("npu:0")
    assert npu.current_device() == 1 and impl.current_index() == 1
    impl.unchecked_set_device(npusim.device("npu:0"))
    assert npu.current_device() == 0
    s = impl.get_new_stream(npusim.device("npu:1"), -3)
    assert s.device_index == 1 and s.priority == -1
    assert impl.get_default_stream(npusim.device("npu:1")).stream_id == 0
    pooled = impl.get_stream_from_global_pool(npusim.device("npu:0"), True)
    assert pooled.stream_id > 32 and pooled.device_index == 0
    old = impl.exchange_stream(s)       # the stream's device's current stream; the current device stays
    assert old == npu.default_stream(1) and impl.get_stream(npusim.device("npu:1")) == s
    assert npu.current_device() == 0
    assert impl.query_stream(s) and impl.synchronize_stream(s) is None and impl.synchronize_device(1) is None
    e1 = impl.record_event(None, s, -1, True)
    e2 = impl.record_event(None, s, -1, True)
    impl.block(e1, npu.default_stream(0))
    assert impl.query_event(e1) and impl.elapsed_time(e1, e2, 1) >= 0
    impl.synchronize_event(e2)
    with pytest.raises(RuntimeError, match="Invalid device index 4"):
        impl.set_device(npusim.device("npu:4"))
    with pytest.raises(RuntimeError, match="Expected a npu device, but got cpu"):
        impl.set_device(npusim.device("cpu"))


# --- guards ---------------------------------------------------------------------------------------------------

def test_device_guard_switches_and_restores():
    with DeviceGuard("npu:1") as g:
        assert npu.current_device() == 1
        assert g.original_device() == npusim.device("npu:0") and g.current_device() == npusim.device("npu:1")
        with DeviceGuard(npusim.device("npu:0")):
            assert npu.current_device() == 0
        assert npu.current_device() == 1
        g.set_index(0)
        assert npu.current_device() == 0 and g.current_device() == npusim.device("npu:0")
    assert npu.current_device() == 0
    with DeviceGuard("npu"):       # no index: the current device
        assert npu.current_device() == 0


def test_device_guard_restores_after_an_exception():
    npu.set_device(1)
    with pytest.raises(ZeroDivisionError):
        with DeviceGuard("npu:0"):
            assert npu.current_device() == 0
            1 / 0
    assert npu.current_device() == 1


def test_device_guard_errors():
    with pytest.raises(RuntimeError, match="Invalid device index 3"):
        with DeviceGuard("npu:3"):
            pass
    assert npu.current_device() == 0
    with pytest.raises(RuntimeError, match="DeviceGuard can only switch between devices of type npu, got cpu"):
        with DeviceGuard("npu:1") as g:
            g.set_device("cpu")
    assert npu.current_device() == 0
    with pytest.raises(RuntimeError, match="npusim is not linked with support for cuda devices"):
        DeviceGuard("cuda:0")


def test_optional_device_guard():
    with OptionalDeviceGuard() as g:
        assert g.original_device() is None and npu.current_device() == 0
        g.reset_device("npu:1")
        assert npu.current_device() == 1 and g.original_device() == npusim.device("npu:0")
        g.reset_device("npu:0")
        assert g.current_device() == npusim.device("npu:0")
    assert npu.current_device() == 0
    with OptionalDeviceGuard(npusim.device("npu:1")):
        assert npu.current_device() == 1
    assert npu.current_device() == 0


def test_stream_guard_switches_device_and_stream():
    s = npu.Stream(1)
    with StreamGuard(s) as g:
        assert npu.current_device() == 1 and npu.current_stream() == s
        assert g.original_stream() == npu.default_stream(1) and g.original_device() == npusim.device("npu:0")
        other = npu.Stream(0)
        g.reset_stream(other)
        assert npu.current_device() == 0 and npu.current_stream() == other and g.current_stream() == other
    assert npu.current_device() == 0
    assert npu.current_stream(0) == npu.default_stream(0) and npu.current_stream(1) == npu.default_stream(1)
    with pytest.raises(KeyError):
        with StreamGuard(s):
            raise KeyError("x")
    assert npu.current_device() == 0 and npu.current_stream(1) == npu.default_stream(1)
    with OptionalStreamGuard(None) as og:
        assert og.current_stream() is None
    with OptionalStreamGuard(s) as og:
        assert og.current_stream() == s and npu.current_stream() == s
    assert npu.current_stream(1) == npu.default_stream(1)


# --- the dispatcher runs kernels on their inputs' device -------------------------------------------------------

def test_kernels_run_on_their_inputs_device(probe_ops):
    ops, seen = probe_ops
    seen.clear()
    x1 = npusim.ones(2, device="npu:1")
    assert ops.probe(x1) is x1
    ops.probe(npusim.ones(2, device="npu:0"))
    ops.probe_list([x1, x1])
    assert [d for d, _ in seen] == [1, 0, 1]
    assert npu.current_device() == 0


def test_a_cpu_scalar_first_defers_to_the_npu_tensor(probe_ops):
    ops, seen = probe_ops
    seen.clear()
    ops.probe_pair(npusim.tensor(2.0), npusim.ones(2, device="npu:1"))
    ops.probe_pair(npusim.ones(2, device="npu:1"), npusim.ones(2, device="npu:0"))
    assert [d for d, _ in seen] == [1, 1] and npu.current_device() == 0


def test_factories_run_on_the_requested_device(probe_ops):
    ops, seen = probe_ops
    seen.clear()
    t = ops.probe_factory(3, device="npu:1")
    assert t.device == npusim.device("npu:1")
    with npu.device(1):
        t = ops.probe_factory(3, device="npu")
    assert t.device == npusim.device("npu:1")
    assert [d for d, _ in seen] == [1, 1] and npu.current_device() == 0


def test_a_raising_kernel_restores_the_device(probe_ops):
    ops, seen = probe_ops
    seen.clear()
    with pytest.raises(ValueError, match="kernel failed"):
        ops.fail(npusim.ones(1, device="npu:1"))
    assert seen == [(1, None)] and npu.current_device() == 0


def test_nested_ops_switch_and_switch_back(probe_ops):
    ops, seen = probe_ops
    seen.clear()
    ops.nested(npusim.ones(1, device="npu:1"), npusim.ones(1, device="npu:0"))
    assert [d for d, _ in seen] == [1, 0, 1] and npu.current_device() == 0


def test_the_cpu_fallback_runs_on_the_inputs_device(probe_ops):
    ops, seen = probe_ops
    seen.clear()
    with pytest.warns(UserWarning, match="fall back to run on the CPU"):
        y = ops.cpu_only(npusim.ones(2, device="npu:1"))
    assert y.device == npusim.device("npu:1") and np.array_equal(host(y), [2.0, 2.0])
    assert seen == [(1, None)] and npu.current_device() == 0


def test_kernels_see_the_stream_context(probe_ops):
    ops, seen = probe_ops
    seen.clear()
    s = npu.Stream(1)
    with npu.stream(s):
        ops.probe(npusim.ones(1, device="npu:1"))
        ops.probe(npusim.ones(1, device="npu:0"))
    assert seen == [(1, s), (0, npu.default_stream(0))]


def test_device_context_places_new_tensors():
    with npu.device(1):
        assert npusim.ones(2, device="npu").device == npusim.device("npu:1")
        assert npusim.randn(2, device="npu").device == npusim.device("npu:1")
        with npu.device(0):
            assert npusim.zeros(1, device="npu").device == npusim.device("npu:0")
        assert npu.current_device() == 1
    assert npu.current_device() == 0


def test_current_device_is_per_thread(probe_ops):
    ops, seen = probe_ops
    npu.set_device(1)
    result = []

    def worker():
        result.append(npu.current_device())
        ops.probe(npusim.ones(1, device="npu:1"))
        result.append(npu.current_device())
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert result == [0, 0] and npu.current_device() == 1


@pytest.mark.emulation_only
def test_npu_kernels_skip_the_guard_in_emulation():
    a = npusim.ones(2, device="npu:1")
    a + a
    # the npu's own kernels read the device from their inputs: served as they are, no wrapper, no cost
    assert not _guarded(npusim.ops.aten.add.Tensor._memo[a._ks])
    cpu = npusim.ones(2)
    cpu + cpu
    assert not _guarded(npusim.ops.aten.add.Tensor._memo[cpu._ks])


def _guarded(kernel) -> bool:
    """Whether the dispatcher serves ``kernel`` through the device-guard wrapper."""
    return getattr(kernel, "__name__", "").endswith("_device_guard")


@pytest.fixture
def every_kernel_guarded(monkeypatch):
    """What cuda mode does: every npu kernel runs under the device guard."""
    monkeypatch.setattr(NpuGuardImpl, "kernel_needs_guard", lambda self, kernel: True)
    dispatcher._invalidate_all()
    yield
    monkeypatch.undo()
    dispatcher._invalidate_all()


def test_guarded_builtin_kernels_compute_the_same(every_kernel_guarded):
    x = npusim.randn(3, 4, device="npu:1", requires_grad=True)
    y = npusim.cat([x, x * 2]).sum(0)
    y.sum().backward()
    assert x.grad.device == npusim.device("npu:1") and np.allclose(host(x.grad), 3.0)
    assert _guarded(npusim.ops.aten.mul.Tensor._memo[x.detach()._ks])
    z = npusim.ops.aten.arange.start_step(0, 5, 1, device="npu:1")
    assert z.device == npusim.device("npu:1") and npu.current_device() == 0
    w = npusim.where(x > 0, x, 0.0)
    assert w.device == npusim.device("npu:1") and npu.current_device() == 0


def test_launch_blocking_synchronizes_the_ops_device_stream(every_kernel_guarded, monkeypatch):
    synced = []
    monkeypatch.setattr(NpuGuardImpl, "launch_blocking", lambda self: True)
    monkeypatch.setattr(NpuGuardImpl, "synchronize_stream", lambda self, s: synced.append(s))
    dispatcher._invalidate_all()
    x = npusim.ones(3, device="npu:1")
    synced.clear()
    y = x * 2 + 1
    assert synced == [npu.default_stream(1)] * 2     # after mul, after add: each on the op's device
    assert np.array_equal(host(y), [3.0, 3.0, 3.0])


_CUDA_SCRIPT = """
import cupy, npusim
npu = npusim.npu
last = npu.device_count() - 1
x = npusim.randn(100, 100, device=f'npu:{last}')
y = (x @ x + 1).relu()
assert y._a.device.id == last and cupy.cuda.Device().id == 0
assert npusim.allclose(y.cpu(), (x.cpu() @ x.cpu() + 1).relu(), atol=1e-3)
with npu.device(last):
    z = npusim.ones(3, device='npu')
assert z._a.device.id == last
print('ok')
"""


@pytest.mark.gpu
@pytest.mark.parametrize("blocking", ["0", "1"])
def test_cuda_mode_ops_run_on_their_device(blocking):
    env = dict(os.environ, NPUSIM_BACKEND="cuda", NPUSIM_LAUNCH_BLOCKING=blocking,
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _CUDA_SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
