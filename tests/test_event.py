"""Events: ``npusim.npu.Event`` and ``npusim.Event`` record on streams, order work between streams, report
completion, and time real work; torch's errors for timing without ``enable_timing``, unrecorded events and
recording on another device."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import npusim
from npusim.backend import streams as npu_streams

ROOT = Path(__file__).resolve().parents[1]
npu = npusim.npu


@pytest.fixture(autouse=True)
def _default_device_and_streams():
    npu.set_device(0)
    yield
    for i in range(npu.device_count()):
        npu_streams.make_current(i, 0)
    npu.set_device(0)


def test_unrecorded_event():
    e = npu.Event()
    assert e.query() is True and e.event_id == 0 and e.npu_event == 0
    e.synchronize()
    e.wait()                           # nothing recorded: nothing to wait for
    assert e.device == npusim.device("npu") and repr(e) == "<npusim.npu.Event uninitialized>"


def test_record_on_the_current_stream_fixes_the_device():
    with npu.device(1):
        e = npu.Event()
        e.record()
    assert e.device == npusim.device("npu:1") and e.event_id != 0
    assert e.query() is True
    e.synchronize()
    assert repr(e).startswith("<npusim.npu.Event 0x")


def test_stream_record_event_gives_distinct_events():
    s = npu.Stream(1)
    e1, e2 = s.record_event(), s.record_event()
    assert isinstance(e1, npu.Event) and e1.event_id != e2.event_id and e1.device == npusim.device("npu:1")
    generic = npusim.Stream("npu:1").record_event()
    assert type(generic) is npusim.Event and generic.device == npusim.device("npu:1") and generic.event_id != 0
    own = npu.Event()
    assert s.record_event(own) is own


def test_elapsed_time_measures_the_work_between_two_records():
    start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
    x = npusim.randn(200, 200, device="npu")
    t0 = time.perf_counter()
    start.record()
    for _ in range(3):
        x = (x @ x).tanh()
    time.sleep(0.03)
    end.record()
    outside_ms = (time.perf_counter() - t0) * 1e3
    end.synchronize()
    ms = start.elapsed_time(end)
    assert 30.0 <= ms <= outside_ms


def test_generic_events_time_the_same_way():
    s = npusim.Stream("npu:1")
    e1 = npusim.Event("npu:1", enable_timing=True)
    e1.record(s)
    time.sleep(0.01)
    e2 = npusim.Event(device="npu:1", enable_timing=True)
    e2.record(s)
    e2.synchronize()
    assert e2.query() and e1.elapsed_time(e2) >= 10.0


def test_waits_between_streams():
    s1, s2 = npu.Stream(0), npu.Stream(1)
    e = s1.record_event()
    s2.wait_event(e)
    e.wait(s2)
    e.wait()
    s2.wait_stream(s1)
    generic = npusim.Stream("npu:0").record_event()
    generic.wait(npusim.Stream("npu:1"))


def test_elapsed_time_errors_are_torchs():
    untimed1, untimed2 = npu.Event(), npu.Event()
    untimed1.record(), untimed2.record()
    with pytest.raises(ValueError, match=r"Both events must be created with argument 'enable_timing=True'\."):
        untimed1.elapsed_time(untimed2)
    timed1, timed2 = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
    with pytest.raises(ValueError, match=r"Both events must be recorded before calculating elapsed time\."):
        timed1.elapsed_time(timed2)
    timed1.record()
    with pytest.raises(ValueError, match=r"Both events must be recorded before calculating elapsed time\."):
        timed1.elapsed_time(timed2)
    timed2.record(npu.Stream(1))
    with pytest.raises(RuntimeError, match="Event device index 0 does not match other's device index 1."):
        timed1.elapsed_time(timed2)
    with pytest.raises(RuntimeError, match="Event device type NPU does not match other's device type CPU."):
        timed1.elapsed_time(npusim.Event("cpu", enable_timing=True))


def test_recording_on_another_devices_stream_is_an_error():
    e = npu.Event()
    e.record(npu.Stream(0))
    e.record(npu.Stream(0))
    with pytest.raises(RuntimeError, match="Event device index 0 does not match recording stream's device index 1."):
        e.record(npu.Stream(1))
    g = npusim.Event("npu")
    g.record(npusim.Stream("npu:1"))
    with pytest.raises(RuntimeError, match="Event device index 1 does not match recording stream's device index 0."):
        g.record(npusim.Stream("npu:0"))


def test_device_type_mismatches():
    e = npu.Event()
    with pytest.raises(RuntimeError, match="Event device type NPU does not match recording stream's device type CPU."):
        e.record(npusim.Stream("cpu"))
    e.record()
    with pytest.raises(RuntimeError, match="Event device type NPU does not match blocking stream's device type CPU."):
        e.wait(npusim.Stream("cpu"))


def test_cpu_events_like_torch():
    e = npusim.Event("cpu")
    assert e.query() is True and e.device == npusim.device("cpu") and e.event_id == 0
    with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
        e.record()
    assert repr(e) == "npusim.Event device_type=cpu, device_index=-1, event_flag=0, event_id=0"


@pytest.mark.oracle
def test_generic_event_errors_match_torch(torch):
    def outcome(m, timing):
        a, b = m.Event("cpu", enable_timing=timing), m.Event("cpu", enable_timing=timing)
        try:
            a.elapsed_time(b)
        except Exception as err:  # noqa: BLE001 - comparing the error is the point
            return type(err).__name__, str(err)
    for timing in (False, True):
        assert outcome(npusim, timing) == outcome(torch, timing)
    with pytest.raises(RuntimeError) as theirs:
        torch.Event("cpu").record()
    with pytest.raises(RuntimeError) as ours:
        npusim.Event("cpu").record()
    assert str(ours.value) == str(theirs.value)
    assert repr(npusim.Event("cpu", enable_timing=True)) == repr(torch.Event("cpu", enable_timing=True)).replace(
        "torch", "npusim")


_CUDA_SCRIPT = """
import npusim
npu = npusim.npu
start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
x = npusim.randn(2048, 2048, device='npu')
start.record()
y = x @ x
end.record()
end.synchronize()
assert end.query() and start.elapsed_time(end) > 0
e = npu.Event()
s = npu.Stream()
with npu.stream(s):
    z = y + 1
    e.record()
npu.current_stream().wait_event(e)
npu.synchronize()
assert e.query()
print('ok')
"""


@pytest.mark.gpu
def test_cuda_mode_events_are_cupy_events():
    env = dict(os.environ, NPUSIM_BACKEND="cuda", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", _CUDA_SCRIPT], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
