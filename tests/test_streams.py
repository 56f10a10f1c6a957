"""Streams: ``npusim.Stream`` / ``npusim.npu.Stream``, the per-thread current stream of each device, stream
contexts (which switch the device, as torch's do), ``npusim.accelerator`` streams and synchronisation."""
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

ROOT = Path(__file__).resolve().parents[1]
npu = npusim.npu


@pytest.fixture(autouse=True)
def _default_device_and_streams():
    """Each test starts and ends on npu:0 with every device on its default stream."""
    npu.set_device(0)
    yield
    for i in range(npu.device_count()):
        npu_streams.make_current(i, 0)
    npu.set_device(0)


def test_stream_creation():
    s = npusim.Stream(device="npu")
    assert s.device_index == npu.current_device() and s.device == npusim.device("npu:0")
    s1 = npusim.Stream(device="npu:1")
    assert s1.device.type == "npu" and s1.device_index == 1 and s1.device_type == 20
    assert npusim.Stream(1).device_index == 1
    same = npusim.Stream(stream_id=s1.stream_id, device_type=s1.device_type, device_index=s1.device_index)
    assert same == s1 and hash(same) == hash(s1)
    assert npusim.Stream("npu:0") != npusim.Stream("npu:0")
    assert "npusim.Stream device_type=npu, device_index=1" in repr(s1)


def test_default_stream_argument_is_the_current_accelerator_device():
    with npu.device(1):
        assert npusim.Stream().device == npusim.device("npu:1")
        assert npu.Stream().device_index == 1
        assert npu.Stream(-1).device_index == 1


def test_npu_stream_is_a_stream_with_priority():
    s = npu.Stream()
    assert isinstance(s, npusim.Stream) and s.priority == 0 and s.device == npusim.device("npu:0")
    assert npu.Stream(priority=-7).priority == -1
    assert npu.Stream(priority=5).priority == 0
    assert npu.Stream("npu:1", priority=-1).device_index == 1
    assert repr(s).startswith("<npusim.npu.Stream device=npu:0 npu_stream=0x")


def test_new_streams_come_round_robin_from_a_pool_of_32():
    first = npu.Stream("npu:1")
    others = [npu.Stream("npu:1") for _ in range(31)]
    assert first not in others and len(set(others)) == 31
    assert npu.Stream("npu:1") == first
    high = npu.Stream("npu:1", priority=-1)
    assert high.stream_id > 32 and high != first


def test_current_and_default_streams():
    assert npu.current_stream() == npu.default_stream() and npu.default_stream().stream_id == 0
    assert npu.current_stream(1) == npu.default_stream("npu:1") != npu.default_stream(0)
    assert npusim.accelerator.current_stream() == npu.default_stream()
    assert npusim.accelerator.current_stream(1) == npu.default_stream(1)


def test_set_stream_switches_to_the_streams_device():
    s0, s1 = npu.Stream(0), npu.Stream(1)
    npu.set_stream(s0)
    assert npu.current_stream() == s0
    npu.set_stream(s1)       # torch.cuda.set_stream: the stream's device becomes current
    assert npu.current_device() == 1 and npu.current_stream() == s1 and npu.current_stream(0) == s0
    npu.set_stream(None)
    assert npu.current_stream() == s1


def test_accelerator_set_stream():
    s0, s1 = npusim.Stream("npu:0"), npusim.Stream("npu:1")
    npusim.accelerator.set_stream(s0)
    assert npusim.accelerator.current_stream() == s0
    npusim.accelerator.set_stream(s1)
    assert npusim.accelerator.current_device_index() == 1 and npusim.accelerator.current_stream() == s1
    npusim.accelerator.set_device_index(0)
    assert npusim.accelerator.current_stream() == s0


def test_stream_context_switches_device_and_stream_and_restores_both():
    s1 = npu.Stream(1)
    before = npu.current_stream(1)
    with npu.stream(s1):
        assert npu.current_device() == 1 and npu.current_stream() == s1
    assert npu.current_device() == 0 and npu.current_stream(1) == before
    with npu.stream(None):
        assert npu.current_stream() == npu.default_stream()
    ctx = npu.StreamContext(s1)
    with ctx as entered:
        assert entered is s1 and npu.current_stream() == s1


def test_stream_with_statement_and_nesting():
    a, b = npusim.Stream("npu:0"), npusim.Stream("npu:0")
    with a:
        assert npusim.accelerator.current_stream() == a
        with b:
            assert npusim.accelerator.current_stream() == b
            with a:
                assert npusim.accelerator.current_stream() == a
            assert npusim.accelerator.current_stream() == b
        assert npusim.accelerator.current_stream() == a
    assert npusim.accelerator.current_stream() == npu.default_stream()
    with npusim.Stream(device="npu:1") as s:
        assert npusim.accelerator.current_stream() == s and npu.current_device() == 1
    assert npu.current_device() == 0


@pytest.mark.parametrize("enter", ["with_stream", "stream_context"])
def test_exceptions_restore_the_stream_and_device(enter):
    prev = npusim.accelerator.current_stream()
    inner = npu.Stream("npu:1")
    with pytest.raises(KeyError):
        with (inner if enter == "with_stream" else npu.stream(inner)):
            assert npusim.accelerator.current_stream() == inner
            raise KeyError("forced")
    assert npusim.accelerator.current_stream() == prev and npu.current_device() == 0
    assert npu.current_stream(1) == npu.default_stream(1)


def test_current_streams_are_per_thread():
    s = npu.Stream(1)
    npu.set_stream(s)
    seen = []

    def worker():
        seen.append((npu.current_device(), npu.current_stream(1)))
        npu.set_stream(npu.Stream(0))
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen == [(0, npu.default_stream(1))]
    assert npu.current_device() == 1 and npu.current_stream() == s


def test_emulated_streams_are_always_idle():
    s = npu.Stream(1)
    with s:
        x = npusim.randn(64, 64, device="npu:1")
        y = x @ x
    assert s.query() is True
    s.synchronize()
    s.wait_stream(npu.Stream(0))
    assert np.allclose(host(y), host(x) @ host(x), rtol=1e-4, atol=1e-4)


def test_work_ordered_across_streams_with_events():
    producer, consumers = npu.Stream(0), [npu.Stream(0) for _ in range(3)]
    x = npusim.randn(16, 16, device="npu")
    with producer:
        z = x @ x
        done = producer.record_event()
    results = []
    for c in consumers:
        c.wait_event(done)
        with c:
            results.append(z.sum())
    aggregator = npu.Stream(0)
    for c in consumers:
        aggregator.wait_stream(c)
    with aggregator:
        total = results[0] + results[1] + results[2]
    aggregator.synchronize()
    assert done.query()
    assert np.isclose(float(total), 3 * float(host(x @ x).sum()), rtol=1e-4)


def test_device_synchronize():
    npu.synchronize()
    npu.synchronize(1)
    npu.synchronize("npu:1")
    npusim.accelerator.synchronize()
    with pytest.raises(RuntimeError, match="Invalid device index 5"):
        npu.synchronize(5)


def test_cpu_streams_like_torch():
    s = npusim.Stream("cpu")
    assert (s.stream_id, s.device_index, s.device_type, str(s.device)) == (0, -1, 0, "cpu")
    assert s.query() is True
    s.synchronize()
    with s as entered:
        assert entered is s
    assert s == npusim.Stream("cpu")
    with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
        s.record_event()


@pytest.mark.oracle
def test_cpu_stream_matches_torch(torch):
    ours, theirs = npusim.Stream("cpu"), torch.Stream("cpu")
    assert (ours.stream_id, ours.device_index, ours.device_type) == (
        theirs.stream_id, theirs.device_index, theirs.device_type)
    assert repr(ours) == repr(theirs).replace("torch", "npusim")
    with pytest.raises(TypeError):
        torch.Stream("cpu", 0)
    with pytest.raises(TypeError):
        npusim.Stream("cpu", 0)


def test_stream_errors():
    with pytest.raises(RuntimeError, match="Invalid device index 5"):
        npu.Stream("npu:5")
    with pytest.raises(RuntimeError, match="Invalid device index 5"):
        npusim.Stream("npu:5")
    with pytest.raises(ValueError, match="Expected a npu device, but got: cpu"):
        npu.current_stream("cpu")
    with pytest.raises(RuntimeError, match="Invalid device index 9"):
        npu.set_stream(npusim.Stream(stream_id=0, device_index=9, device_type=20))
    with pytest.raises(RuntimeError, match="Invalid stream id 99 for npu:0"):
        npu.set_stream(npusim.Stream(stream_id=99, device_index=0, device_type=20))
    with pytest.raises(RuntimeError, match="stream's device type cpu doesn't match the current accelerator npu"):
        npusim.accelerator.set_stream(npusim.Stream("cpu"))
    with pytest.raises(RuntimeError, match="npusim is not linked with support for cuda devices"):
        npusim.Stream("cuda")
    with pytest.raises(TypeError, match="stream_id, device_index and device_type must be given together"):
        npusim.Stream(stream_id=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        npu.Stream(stream_id=1, device_index=0, device_type=20, bogus=1)


def test_launch_blocking_is_read_from_the_environment():
    code = ("import npusim\n"
            "from npusim.backend.guard import impl\n"
            "from npusim.backend.runtime import runtime\n"
            "print(runtime.config.launch_blocking, impl.launch_blocking())\n")
    env = dict(os.environ, NPUSIM_LAUNCH_BLOCKING="1", NPUSIM_BACKEND="emulation",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    # emulated ops are synchronous already: launch blocking only changes cuda mode
    assert r.stdout.split() == ["True", "False"]


_CUDA_SCRIPT = """
import cupy, npusim
npu = npusim.npu
last = npu.device_count() - 1          # the other GPU when there are two
s = npu.Stream(last)
with npu.stream(s):
    assert cupy.cuda.Device().id == last
    assert cupy.cuda.get_current_stream().ptr == s.npu_stream
    x = npusim.randn(256, 256, device=f'npu:{last}')
    y = (x @ x).sum()
s.synchronize()
assert s.query()
assert cupy.cuda.Device().id == 0
assert cupy.cuda.get_current_stream().ptr == npu.default_stream().npu_stream
print('ok')
"""


@pytest.mark.gpu
def test_cuda_mode_streams_are_cupy_streams():
    env = dict(os.environ, NPUSIM_BACKEND="cuda", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _CUDA_SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
