"""torch.profiler's and torch.autograd's smaller names: tensorboard_trace_handler, KinetoStepTracker, kineto and
fbcode flags, the optimizer hook, the engine switches and is_tensor_like."""
from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

import npusim
from npusim.profiler import KinetoStepTracker, ProfilerActivity, profile, schedule, tensorboard_trace_handler


def _run_steps(prof, device, n):
    x = npusim.ones(8, device=device)
    for _ in range(n):
        (x * 2).sum()
        prof.step()


def test_tensorboard_trace_handler_writes_one_trace_per_cycle(tmp_path, device):
    out = tmp_path / "logs" / "run"
    handler = tensorboard_trace_handler(str(out), worker_name="w0")
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2), on_trace_ready=handler) as prof:
        _run_steps(prof, device, 4)
    names = sorted(os.listdir(out))
    assert len(names) == 2 and all(n.startswith("w0.") and n.endswith(".pt.trace.json") for n in names)
    trace = json.loads((out / names[0]).read_text())
    assert any(e.get("name") == "aten::mul" for e in trace["traceEvents"])


def test_tensorboard_trace_handler_gzip_and_default_worker_name(tmp_path):
    handler = tensorboard_trace_handler(str(tmp_path), use_gzip=True)
    with profile(on_trace_ready=handler):
        npusim.ones(2) + 1
    (name,) = os.listdir(tmp_path)
    assert name.startswith(f"{os.uname().nodename}_{os.getpid()}.") and name.endswith(".pt.trace.json.gz")
    with gzip.open(tmp_path / name, "rt") as f:
        assert "traceEvents" in json.load(f)


def test_tensorboard_trace_handler_cannot_make_its_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RuntimeError, match="Can't create directory"):
        with profile(on_trace_ready=tensorboard_trace_handler(str(blocker / "sub"))):
            npusim.ones(1)


@pytest.fixture
def fresh_tracker(monkeypatch):
    from collections import defaultdict
    monkeypatch.setattr(KinetoStepTracker, "_current_step", 0)
    monkeypatch.setattr(KinetoStepTracker, "_step_dict", defaultdict(int))


def test_kineto_step_tracker_counts_the_max_over_requesters(fresh_tracker):
    KinetoStepTracker.init_step_count("ProfilerStep")
    KinetoStepTracker.init_step_count("Optimizer")
    assert KinetoStepTracker.increment_step("ProfilerStep") == 1
    assert KinetoStepTracker.increment_step("Optimizer") == 1        # the same step, marked twice
    assert KinetoStepTracker.increment_step("Optimizer") == 2 and KinetoStepTracker.current_step() == 2
    assert KinetoStepTracker.erase_step_count("Optimizer") and not KinetoStepTracker.erase_step_count("Optimizer")
    KinetoStepTracker._step_dict["Other"] = 5
    with pytest.warns(UserWarning, match="increased more than 1"):
        assert KinetoStepTracker.increment_step("Other") == 6


def test_flags_and_reexports():
    assert npusim.profiler.kineto_available() is False and npusim.profiler.is_fbcode() is False
    assert npusim.autograd.kineto_available() is False
    assert npusim.profiler.Optimizer is npusim.optim.Optimizer
    assert npusim.profiler.register_optimizer_step_post_hook is npusim.optim.optimizer.register_optimizer_step_post_hook
    assert npusim.autograd.DeviceType is npusim.profiler.DeviceType
    assert npusim.autograd.ProfilerActivity is ProfilerActivity


def test_optimizer_post_hook_through_the_profiler_name(device):
    seen = []
    handle = npusim.profiler.register_optimizer_step_post_hook(lambda opt, args, kwargs: seen.append(type(opt)))
    try:
        p = npusim.nn.Parameter(npusim.ones(2, device=device))
        p.grad = npusim.ones(2, device=device)
        npusim.optim.SGD([p], lr=0.1).step()
    finally:
        handle.remove()
    assert seen == [npusim.optim.SGD]


def test_multithreading_switch_is_per_thread_and_scoped():
    import threading
    ag = npusim.autograd
    assert ag.is_multithreading_enabled()
    with ag.set_multithreading_enabled(False):
        assert not ag.is_multithreading_enabled()
        other = []
        t = threading.Thread(target=lambda: other.append(ag.is_multithreading_enabled()))
        t.start()
        t.join()
        assert other == [True]
    assert ag.is_multithreading_enabled()

    @ag.set_multithreading_enabled(False)
    def inner():
        return ag.is_multithreading_enabled()
    assert ag.is_multithreading_enabled() is False    # the decorator's construction sets it, as torch's
    ag.set_multithreading_enabled(True)
    assert inner() is False and ag.is_multithreading_enabled()


def test_backward_runs_with_multithreading_off(device):
    x = npusim.ones(3, device=device, requires_grad=True)
    with npusim.autograd.set_multithreading_enabled(False):
        (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


class _Sub(npusim.Tensor):
    pass


class _Like:
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return -1


def test_is_tensor_like(device):
    ag = npusim.autograd
    assert ag.is_tensor_like(npusim.ones(1, device=device))
    assert ag.is_tensor_like(npusim.ones(1, device=device).as_subclass(_Sub))
    assert ag.is_tensor_like(npusim.nn.Parameter(npusim.ones(1, device=device)))
    assert not ag.is_tensor_like(6) and not ag.is_tensor_like(None) and not ag.is_tensor_like(object())
    assert ag.is_tensor_like(_Like()) and not ag.is_tensor_like(_Like)
    assert ag.is_view_replay_enabled() is False


@pytest.mark.oracle
def test_as_torch(torch, tmp_path):
    ag, tag = npusim.autograd, torch.autograd
    assert ag.is_multithreading_enabled() == tag.is_multithreading_enabled()
    assert ag.is_view_replay_enabled() == tag.is_view_replay_enabled()
    for value in (6, None, _Like(), object()):
        assert ag.is_tensor_like(value) == tag.is_tensor_like(value)
    assert ag.is_tensor_like(npusim.ones(1)) == tag.is_tensor_like(torch.ones(1))
    assert npusim.profiler.is_fbcode() == torch.profiler.is_fbcode()
    import inspect
    assert str(inspect.signature(tensorboard_trace_handler)) == \
        str(inspect.signature(torch.profiler.tensorboard_trace_handler))
    names = {}
    for mod in (npusim, torch):
        d = tmp_path / mod.__name__
        with mod.profiler.profile(on_trace_ready=mod.profiler.tensorboard_trace_handler(str(d), "w")):
            mod.ones(2) * 2
        (names[mod.__name__],) = os.listdir(d)
    assert [n.split(".", 2)[::2] for n in names.values()] == [["w", "pt.trace.json"]] * 2


# --- ExecutionTraceObserver -----------------------------------------------------------------------------------
def _trace(mod, path, device="cpu"):
    et = mod.profiler.ExecutionTraceObserver().register_callback(str(path))
    assert et.is_registered and not et.is_running() and et.get_output_file_path() == str(path)
    mod.ones(1)                                   # not recorded: before start()
    et.start()
    assert et.is_running()
    a = mod.ones(2, 3, device=device, requires_grad=True)
    b = (a * a).sum()
    b.backward()
    et.stop()
    mod.ones(1)                                   # not recorded: after stop()
    et.unregister_callback()
    assert not et.is_registered
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def _attrs(node):
    return {a["name"]: a["value"] for a in node["attrs"]}


def test_execution_trace_records_ops_with_their_tensors(tmp_path, device):
    trace = _trace(npusim, tmp_path / "et.json", device)
    assert trace["schema"] == "1.1.1-chakra.0.0.4" and trace["pid"] == os.getpid()
    nodes = {n["id"]: n for n in trace["nodes"]}
    names = [n["name"] for n in trace["nodes"]]
    assert names[0] == "[pytorch|profiler|execution_trace|thread]"
    assert names[-1] == "[pytorch|profiler|execution_trace|process]" and trace["nodes"][-1]["id"] == 1
    assert names.count("aten::ones") == 1 and "MulBackward0" in names and "SumBackward0" in names
    mul = next(n for n in trace["nodes"] if n["name"] == "aten::mul")
    assert mul["inputs"]["types"] == ["Tensor(float)", "Tensor(float)"] and mul["inputs"]["shapes"] == [[2, 3]] * 2
    x = mul["inputs"]["values"][0]
    assert x == mul["inputs"]["values"][1] and x[2:] == [0, 6, 4, str(npusim.ones(1, device=device).device)]
    ones = next(n for n in trace["nodes"] if n["name"] == "aten::ones")
    assert ones["outputs"]["values"][0][0] == x[0]              # the same tensor, the same id
    assert mul["outputs"]["strides"] == [[3, 1]] and _attrs(mul)["op_schema"].startswith("aten::mul.Tensor(")
    assert _attrs(mul)["seq_id"] >= 0 and _attrs(mul)["scope"] == 0
    backward = next(n for n in trace["nodes"] if n["name"] == "MulBackward0")
    assert _attrs(backward)["scope"] == 1 and _attrs(backward)["seq_id"] == _attrs(mul)["seq_id"]
    inner = [n for n in trace["nodes"] if n["ctrl_deps"] == backward["id"]]
    assert inner and all(n["name"].startswith("aten::") for n in inner)
    root = trace["nodes"][0]["id"]
    assert mul["ctrl_deps"] == root and all(n["ctrl_deps"] in nodes for n in trace["nodes"])


def test_execution_trace_gzip_and_env(tmp_path, monkeypatch):
    trace = _trace(npusim, tmp_path / "et.json.gz")
    assert any(n["name"] == "aten::sum" for n in trace["nodes"])
    ET = npusim.profiler.ExecutionTraceObserver
    monkeypatch.delenv("ENABLE_PYTORCH_EXECUTION_TRACE", raising=False)
    assert ET.build_execution_trace_obs_from_env() is None
    monkeypatch.setenv("ENABLE_PYTORCH_EXECUTION_TRACE", "1")
    et = ET.build_execution_trace_obs_from_env()
    try:
        assert et.is_registered and et.get_output_file_path().endswith(".et.json")
        assert et.get_resources_dir() is None
    finally:
        et.cleanup()
        os.remove(et.get_output_file_path())
    assert ET.get_resources_dir_for_et_path(str(tmp_path / "t.json")) is None
    made = ET.get_resources_dir_for_et_path(str(tmp_path / "t.json"), create_dir=True)
    assert made == str(tmp_path / "t_resources") and os.path.isdir(made)


@pytest.mark.oracle
def test_execution_trace_as_torch(torch, tmp_path):
    ours, theirs = _trace(npusim, tmp_path / "n.json"), _trace(torch, tmp_path / "t.json")
    assert ours["schema"] == theirs["schema"]
    assert set(ours) == set(theirs)
    for trace in (ours, theirs):
        assert trace["nodes"][-1]["name"] == "[pytorch|profiler|execution_trace|process]"
    node_keys = {tuple(n) for t in (ours, theirs) for n in t["nodes"]}
    assert len(node_keys) == 1
    assert [a["name"] for a in ours["nodes"][1]["attrs"]] == [a["name"] for a in theirs["nodes"][1]["attrs"]]
    mul_ours = next(n for n in ours["nodes"] if n["name"] == "aten::mul")
    mul_theirs = next(n for n in theirs["nodes"] if n["name"] == "aten::mul")
    for key in ("shapes", "types", "strides"):
        assert mul_ours["inputs"][key] == mul_theirs["inputs"][key]
        assert mul_ours["outputs"][key] == mul_theirs["outputs"][key]
    assert _attrs(mul_ours)["op_schema"] == _attrs(mul_theirs)["op_schema"]
    assert len(mul_ours["inputs"]["values"][0]) == len(mul_theirs["inputs"]["values"][0])
    assert {"MulBackward0", "SumBackward0"} <= {n["name"] for n in theirs["nodes"]} & {n["name"] for n in ours["nodes"]}


# --- enforce_grad_layout_policy -------------------------------------------------------------------------------
def _layout_strides(mod, device="cpu"):
    """Gradient strides of permuted/transposed leaves under each policy (what torch documents and does)."""
    out = []
    p = mod.empty(2, 3, 4, device=device).permute(2, 0, 1).requires_grad_()
    (p * 2).sum().backward()
    out.append(p.grad.stride())                                   # enforced: the leaf's layout
    p.grad = None
    with mod.autograd.enforce_grad_layout_policy(False):
        (p * 2).sum().backward()
        out.append(p.grad.stride())                               # relaxed: kept as it came (contiguous)
        p.grad = None
        p.exp().sum().backward()
        incoming = (mod.ones(1, device=device).expand(p.shape) * p.detach().exp()).stride()
        out.append(p.grad.stride() == incoming)                   # kept in the layout the kernel gave it
        keep = []
        r = mod.empty(4, 3, device=device).t().requires_grad_()
        r.register_hook(keep.append)
        (r.contiguous() * 3).sum().backward()
        out.append((r.grad.stride(), r.grad.data_ptr() == keep[0].data_ptr()))   # seen elsewhere: copied
    q = mod.empty(4, 3, device=device).t().requires_grad_()
    (q.contiguous() * 3).sum().backward()
    out.append(q.grad.stride())
    return out


def test_grad_layout_policy(device):
    assert _layout_strides(npusim, device) == [(1, 12, 4), (6, 3, 1), True, ((1, 3), False), (1, 3)]
    ag = npusim.autograd
    assert npusim.core.autograd.layout_policy.tls.enforced

    @ag.enforce_grad_layout_policy(False)
    def relaxed():
        return npusim.core.autograd.layout_policy.tls.enforced
    assert npusim.core.autograd.layout_policy.tls.enforced and relaxed() is False
    ag.enforce_grad_layout_policy(False)                          # as a function: from now on
    try:
        assert not npusim.core.autograd.layout_policy.tls.enforced
    finally:
        ag.enforce_grad_layout_policy(True)


@pytest.mark.oracle
def test_grad_layout_policy_as_torch(torch):
    assert _layout_strides(npusim) == _layout_strides(torch)


# --- SavedTensor ------------------------------------------------------------------------------------------------
def _saved_tensor_story(mod, device="cpu"):
    out = []
    x = mod.ones(2, device=device, requires_grad=True)
    y = x.exp()
    s = y.grad_fn._raw_saved_result
    out.append(isinstance(s, mod.autograd.SavedTensor))
    out.append([round(v, 5) for v in y.grad_fn._saved_result.tolist()])
    calls = []
    s.register_hooks(lambda t: (calls.append("pack"), t * 1)[1], lambda t: (calls.append("unpack"), t)[1])
    for bad in ((lambda t: t, lambda t: t), (1, lambda t: t)):
        try:
            s.register_hooks(*bad)
        except (RuntimeError, TypeError) as e:
            out.append((type(e).__name__, str(e).splitlines()[0]))
    y.sum().backward()
    out.append((calls, [round(v, 5) for v in x.grad.tolist()]))
    w = x.sin()
    w.grad_fn._raw_saved_self.register_hooks(lambda t: 5, lambda p: mod.zeros(2, device=device) + p)
    x.grad = None
    w.sum().backward()
    out.append([round(v, 5) for v in x.grad.tolist()])            # cos(5): the unpacked value was used
    m = x * x
    out.append(sorted(a for a in ("_saved_self", "_saved_other", "_raw_saved_self", "_raw_saved_x")
                      if hasattr(m.grad_fn, a)))
    return out


def test_saved_tensor_hooks_on_one_saved_tensor(device):
    story = _saved_tensor_story(npusim, device)
    assert story[0] is True and story[3][0] == "TypeError" and "already been set" in story[2][1]
    assert story[4][0] == ["pack", "unpack"] and story[5] == [round(np.cos(5.0), 5)] * 2


@pytest.mark.oracle
def test_saved_tensor_as_torch(torch):
    assert _saved_tensor_story(npusim) == _saved_tensor_story(torch)


# --- autograd.profiler, ProfilerState, ProfilerConfig -----------------------------------------------------------
def test_autograd_profiler_profile(device, tmp_path):
    aprof = npusim.autograd.profiler
    with aprof.profile(record_shapes=True, use_device="npu" if device == "npu" else None) as prof:
        x = npusim.ones(3, device=device) * 2
        with aprof.record_function("block"):
            x.exp()
    names = {e.name for e in prof.function_events}
    assert {"aten::mul", "aten::exp", "block"} <= names
    assert ("npu::exp" in names) == (device == "npu")
    assert "aten::mul" in prof.key_averages().table(row_limit=10) and prof.self_cpu_time_total > 0
    assert prof.total_average().count >= len(prof.function_events) - 1
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    assert "traceEvents" in json.loads((tmp_path / "t.json").read_text())
    assert prof.profiler_kind is (npusim.autograd.ProfilerState.PRIVATEUSE1 if device == "npu" else
                                  npusim.autograd.ProfilerState.CPU)
    assert isinstance(prof.config(), npusim.autograd.ProfilerConfig)
    with pytest.raises(RuntimeError, match="not reentrant"):
        with prof:
            pass
    fresh = aprof.profile()
    assert list(fresh.key_averages()) == [] and fresh.self_cpu_time_total == 0 and str(fresh) == ""
    with aprof.profile(enabled=False) as off:
        assert off is None
    with pytest.warns(UserWarning, match="The gpu is not a valid device option"):
        aprof.profile(use_device="gpu")
    with pytest.raises(AssertionError, match="Device-only events supported only with Kineto"):
        aprof.profile(use_cpu=False)


def test_profiler_config_checks_its_arguments():
    state = npusim.autograd.ProfilerState
    assert str(state.KINETO) == "ProfilerState.KINETO" and int(state.PRIVATEUSE1) == 5
    npusim.autograd.ProfilerConfig(state.CPU, False, False, False, False, False, None, "id")
    with pytest.raises(TypeError, match="incompatible constructor arguments"):
        npusim.autograd.ProfilerConfig(1, False, False, False, False, False, None)


@pytest.mark.oracle
def test_autograd_profiler_as_torch(torch):
    assert {k: int(v) for k, v in torch.autograd.ProfilerState.__members__.items()} == \
        {s.name: int(s) for s in npusim.autograd.ProfilerState}
    assert str(npusim.autograd.ProfilerState.CPU) == str(torch.autograd.ProfilerState.CPU)
    import inspect
    for name in ("__init__", "key_averages", "table"):
        ours = inspect.signature(getattr(npusim.autograd.profiler.profile, name))
        theirs = inspect.signature(getattr(torch.autograd.profiler.profile, name))
        assert list(ours.parameters) == list(theirs.parameters), name
    errors = []
    for mod in (npusim, torch):
        with pytest.raises(Exception) as info:
            mod.autograd.profiler.profile(use_cpu=False)
        errors.append((type(info.value).__name__, str(info.value)))
    assert errors[0] == errors[1]
    for mod in (npusim, torch):
        fresh = mod.autograd.profiler.profile()
        assert (list(fresh.key_averages()), fresh.self_cpu_time_total, str(fresh)) == ([], 0, "")
