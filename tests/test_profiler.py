"""The profiler (torch.profiler.profile on the op callbacks): events, the key_averages table, the Chrome
trace with a host lane and an npu lane, memory per op, schedules and steps.
"""
from __future__ import annotations

import gzip
import json
import threading

import numpy as np
import pytest

import npusim
from npusim.profiler import (
    DeviceType, ProfilerAction, ProfilerActivity, clear_callbacks, has_callbacks, profile, record_function,
    schedule, supported_activities,
)
from conftest import host

CPU, NPU = ProfilerActivity.CPU, ProfilerActivity.NPU


@pytest.fixture(autouse=True)
def no_callbacks_left():
    clear_callbacks()
    yield
    assert not has_callbacks()   # the profiler removes its callback when it stops


def small_training_step(device):
    x = npusim.ones(8, 4, device=device, requires_grad=True)
    w = npusim.ones(4, 3, device=device)
    with record_function("forward"):
        loss = (x @ w).relu().sum()
    loss.backward()
    return x


def by_name(events):
    out = {}
    for e in events:
        out.setdefault(e.name, []).append(e)
    return out


# --- events and the table -------------------------------------------------------------------------------------

def test_events_nest_and_times_add_up(device):
    with profile(activities=[CPU, NPU]) as prof:
        x = small_training_step(device)
    np.testing.assert_array_equal(host(x.grad), np.full((8, 4), 3.0, np.float32))
    ev = by_name(e for e in prof.events() if e.device_type is DeviceType.CPU)
    fwd = ev["forward"][0]
    assert fwd.is_user_annotation
    assert {c.name for c in fwd.cpu_children} == {"aten::matmul", "aten::relu", "aten::sum"}
    for e in prof.events():
        assert e.end_us >= e.start_us
        assert e.self_cpu_time_total <= e.cpu_time_total + 1e-6
        for c in e.cpu_children:
            assert e.start_us <= c.start_us and c.end_us <= e.end_us and c.cpu_parent is e
    assert {"SumBackward0", "ReluBackward0"} <= set(ev)
    # each backward node carries the sequence number of the forward op that made it
    assert ev["ReluBackward0"][0].sequence_nr == ev["aten::relu"][0].sequence_nr >= 0


def test_npu_kernels_are_events_of_their_own_and_count_as_npu_time():
    with profile(activities=[CPU, NPU]) as prof:
        x = npusim.ones(16, 16, device="npu")
        (x * 2).sum()
    kernels = [e for e in prof.events() if e.device_type is DeviceType.NPU]
    assert {k.name for k in kernels} == {"npu::ones", "npu::mul", "npu::sum"}
    mul = by_name(prof.events())["aten::mul"][0]
    assert mul.kernels and mul.kernels[0].op is mul and mul.device_time_total > 0
    cpu_only = [e for e in prof.events() if e.name == "aten::mul"]
    assert len(cpu_only) == 1
    with profile(activities=[CPU]) as cpu_prof:
        (x * 2).sum()
    assert all(e.device_type is DeviceType.CPU for e in cpu_prof.events())
    with profile(activities=[NPU]) as npu_prof:
        (x * 2).sum()
    assert {e.name for e in npu_prof.events()} == {"npu::mul", "npu::sum"}


def test_cpu_ops_have_no_npu_time():
    with profile() as prof:
        (npusim.ones(4) * 2).sum()
    assert all(e.device_time_total == 0 for e in prof.events())
    assert "NPU" not in prof.key_averages().table()


def test_key_averages_table():
    with profile(activities=[CPU, NPU]) as prof:
        x = npusim.ones(4, 4, device="npu")
        for _ in range(3):
            x = x * 1.5
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
    lines = table.splitlines()
    header = lines[1]
    for column in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "Self NPU",
                   "NPU total", "# of Calls"):
        assert column in header
    row = next(line for line in lines if line.strip().startswith("aten::mul"))
    assert row.split()[-1] == "3"
    assert lines[-2].startswith("Self CPU time total: ") and lines[-1].startswith("Self NPU time total: ")
    averages = prof.key_averages()
    mul = next(a for a in averages if a.key == "aten::mul")
    assert mul.count == 3 and mul.cpu_time == pytest.approx(mul.cpu_time_total / 3)
    rows = [line for line in prof.key_averages().table(row_limit=1).splitlines() if line.strip()
            and not line.startswith("-") and not line.startswith("Self")]
    assert len(rows) == 2   # header and one row
    self_times = [a.self_cpu_time_total for a in averages]
    sorted_rows = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=-1)
    first = sorted_rows.splitlines()[3].split()[0]
    assert next(a for a in averages if a.key == first).self_cpu_time_total == max(self_times)
    with pytest.raises(AttributeError, match="no attribute 'not_a_column'"):
        prof.key_averages().table(sort_by="not_a_column")


def test_record_shapes_groups_by_input_shape():
    a, b = npusim.ones(2, 3), npusim.ones(5, 3)
    with profile(record_shapes=True) as prof:
        a + a
        b + b
        b + b
    groups = [g for g in prof.key_averages(group_by_input_shape=True) if g.key == "aten::add"]
    assert sorted((g.input_shapes, g.count) for g in groups) == [([[2, 3], [2, 3], []], 1),
                                                                  ([[5, 3], [5, 3], []], 2)]
    assert "Input Shapes" in prof.key_averages(group_by_input_shape=True).table()
    with profile() as plain:
        a + a
    assert plain.events()[0].input_shapes == []


def test_with_stack_points_at_the_calling_line():
    with profile(with_stack=True) as prof:
        npusim.ones(2)
    stack = prof.events()[0].stack
    assert stack and "test_profiler.py" in stack[0] and "test_with_stack_points_at_the_calling_line" in stack[0]
    assert not any("/npusim/" in entry for entry in stack)


def test_profile_memory_attributes_npu_allocations_to_ops():
    with profile(profile_memory=True) as prof:
        a = npusim.empty(1024, device="npu")          # 4096 bytes
        b = a * 2                                     # another 4096
        del b                                         # freed outside any op
        with record_function("scope"):
            c = npusim.empty(100, device="npu")        # 400 bytes, rounded to 512
    ev = by_name(prof.events())
    assert ev["aten::empty"][0].self_device_memory_usage == 4096
    assert ev["aten::mul"][0].self_device_memory_usage == 4096
    scope = ev["scope"][0]
    assert scope.self_device_memory_usage == 0 and scope.device_memory_usage == 512
    table = prof.key_averages().table()
    assert "NPU Mem" in table and "Self NPU Mem" in table and "4.00 KB" in table
    del a, c


# --- the Chrome trace -----------------------------------------------------------------------------------------

def test_chrome_trace_has_a_host_lane_and_an_npu_lane(tmp_path):
    with profile(activities=[CPU, NPU]) as prof:
        small_training_step("npu")
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    meta = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    names = {e["pid"]: e["args"]["name"] for e in meta}
    host_pid = next(pid for pid, name in names.items() if name == "python")
    assert names[0] == "npu 0"
    spans = [e for e in events if e["ph"] == "X"]
    for e in spans:
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and isinstance(e["name"], str)
    host_ops = {e["name"] for e in spans if e["pid"] == host_pid}
    kernels = [e for e in spans if e["pid"] == 0]
    assert {"forward", "aten::matmul", "aten::relu", "MatmulBackward0"} <= host_ops
    assert kernels and all(e["cat"] == "kernel" for e in kernels)
    assert {"npu::matmul", "npu::relu"} <= {k["name"] for k in kernels}
    # each kernel has an arrow from the op that launched it
    starts = {e["id"]: e for e in events if e["ph"] == "s" and e["cat"] == "ac2g"}
    ends = {e["id"]: e for e in events if e["ph"] == "f" and e["cat"] == "ac2g"}
    for k in kernels:
        corr = k["args"]["correlation"]
        assert starts[corr]["pid"] == host_pid and ends[corr]["pid"] == 0
    # forward op -> backward node arrows
    fwdbwd = [e for e in events if e.get("cat") == "fwdbwd"]
    assert {e["ph"] for e in fwdbwd} == {"s", "f"}
    assert {e["cat"] for e in spans if e["pid"] == host_pid} == {"cpu_op", "user_annotation"}


def test_chrome_trace_gzip(tmp_path):
    with profile() as prof:
        npusim.ones(3) + 1
    path = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(path))
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    assert any(e.get("name") == "aten::add" for e in trace["traceEvents"])


# --- schedules, steps, lifetime -------------------------------------------------------------------------------

def test_schedule_records_only_the_active_steps_and_hands_each_cycle_over():
    cycles = []

    def ready(prof):
        cycles.append(sorted({e.name for e in prof.events() if e.name.startswith(("ProfilerStep", "step"))}))

    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=2), on_trace_ready=ready) as prof:
        for i in range(10):
            with record_function(f"step{i}"):
                npusim.ones(1)
            prof.step()
    assert cycles == [["ProfilerStep#2", "ProfilerStep#3", "step2", "step3"],
                      ["ProfilerStep#6", "ProfilerStep#7", "step6", "step7"]]


@pytest.mark.oracle
def test_schedule_matches_torch(torch):
    import warnings
    for kwargs in ({"wait": 1, "warmup": 1, "active": 2}, {"wait": 0, "warmup": 2, "active": 3, "repeat": 2},
                   {"wait": 2, "warmup": 1, "active": 1, "skip_first": 3, "skip_first_wait": 1}):
        ours, theirs = schedule(**kwargs), torch.profiler.schedule(**kwargs)
        assert [ours(i).name for i in range(30)] == [theirs(i).name for i in range(30)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        schedule(wait=1, warmup=0, active=1)
    assert [str(w.message) for w in caught] == ["Profiler won't be using warmup, this can skew profiler results"]
    for bad in ({"wait": -1, "warmup": 1, "active": 1}, {"wait": 1, "warmup": 1, "active": 0}):
        with pytest.raises(AssertionError) as ours:
            schedule(**bad)
        with pytest.raises(AssertionError) as theirs:
            torch.profiler.schedule(**bad)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.oracle
def test_profile_argument_errors_match_torch(torch):
    with pytest.raises(AssertionError, match="^No valid profiler activities found$"):
        profile(activities=[])
    with pytest.raises(AssertionError, match="^No valid profiler activities found$"):
        torch.profiler.profile(activities=[])
    assert {a.name for a in supported_activities()} == {"CPU", "NPU"}
    assert [a.name for a in ProfilerAction] == [a.name for a in torch.profiler.ProfilerAction][:4]


def test_results_need_a_finished_recording():
    prof = profile()
    with pytest.raises(AssertionError, match="^Profiler must be initialized before accessing events$"):
        prof.events()
    with pytest.raises(AssertionError, match="before getting key averages"):
        prof.key_averages()
    with pytest.raises(AssertionError, match="before exporting chrome trace"):
        prof.export_chrome_trace("unused.json")
    with pytest.raises(TypeError, match="schedule must be callable"):
        profile(schedule=3)


def test_start_and_stop_without_a_with_block():
    prof = profile()
    prof.start()
    npusim.ones(2) * 2
    prof.stop()
    assert [e.name for e in prof.events()] == ["aten::ones", "aten::mul"]
    npusim.ones(1)   # after stop: not recorded
    assert len(prof.events()) == 2


def test_the_profiler_sees_the_thread_that_started_it():
    def other():
        npusim.zeros(5)
    with profile() as prof:
        t = threading.Thread(target=other)
        t.start()
        t.join()
        npusim.ones(1)
    assert [e.name for e in prof.events()] == ["aten::ones"]


def test_two_profilers_at_once():
    with profile() as outer:
        npusim.ones(1)
        with profile() as inner:
            npusim.zeros(1)
    assert [e.name for e in outer.events()] == ["aten::ones", "aten::zeros"]
    assert [e.name for e in inner.events()] == ["aten::zeros"]


@pytest.mark.gpu
def test_npu_kernel_times_come_from_cuda_events_on_a_gpu():
    x = npusim.ones(2048, 2048, device="npu")
    with profile(activities=[CPU, NPU]) as prof:
        y = x @ x
        npusim.npu.synchronize()
    kernel = next(e for e in prof.events() if e.device_type is DeviceType.NPU and e.name == "npu::matmul")
    op = kernel.op
    assert kernel.duration_us > 0
    assert kernel.start_us >= op.start_us - 1.0   # placed on the host clock
    assert host(y[0, :2]).tolist() == [2048.0, 2048.0]
