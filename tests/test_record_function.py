"""Operator callbacks (torch::addGlobalCallback / RecordFunction): what a callback sees, sampling,
thread-local and global callbacks, removal, debug info, failing callbacks and registration from threads.
"""
from __future__ import annotations

import sys
import threading
import warnings

import numpy as np
import pytest

import npusim
from npusim.library import DispatchKey, _ExcludeDispatchKeyGuard
from npusim.profiler import (
    DebugInfoGuard, DebugInfoKind, RecordFunctionCallback, RecordScope, ThreadLocalDebugInfo,
    ThreadLocalStateGuard, add_global_callback, add_thread_local_callback, capture_thread_local_state,
    clear_callbacks, enable_record_function, has_callbacks, is_record_function_enabled, record_function,
    remove_callback,
)
from conftest import host


@pytest.fixture(autouse=True)
def no_callbacks_left():
    """Every test starts and ends with no callback registered, and callbacks enabled in this thread."""
    clear_callbacks()
    yield
    clear_callbacks()
    enable_record_function(True)


class Recorder:
    """Collects (phase, name, scope) of every callback call, and the RecordFunctions seen."""

    def __init__(self):
        self.calls = []
        self.records = []

    def enter(self, fn):
        self.calls.append(("enter", fn.name, fn.scope))
        self.records.append(fn)
        return ("ctx", fn.name)

    def exit(self, fn, ctx):
        self.calls.append(("exit", fn.name, fn.scope, ctx))

    def names(self, phase="enter"):
        return [c[1] for c in self.calls if c[0] == phase]


def register(rec=None, *, is_global=True, **opts):
    rec = rec or Recorder()
    cb = RecordFunctionCallback(rec.enter, rec.exit)
    for k, v in opts.items():
        getattr(cb, k)(v)
    handle = (add_global_callback if is_global else add_thread_local_callback)(cb)
    return rec, handle


# --- what a callback sees -------------------------------------------------------------------------------------

def test_enter_and_exit_wrap_each_op_in_order_with_the_context_handed_over():
    x = npusim.ones(2, 2)
    rec, h = register()
    y = x + x
    z = y * 3
    remove_callback(h)
    assert rec.calls == [
        ("enter", "aten::add", RecordScope.FUNCTION), ("exit", "aten::add", RecordScope.FUNCTION, ("ctx", "aten::add")),
        ("enter", "aten::mul", RecordScope.FUNCTION), ("exit", "aten::mul", RecordScope.FUNCTION, ("ctx", "aten::mul")),
    ]
    np.testing.assert_array_equal(host(z), np.full((2, 2), 6.0, np.float32))


def test_nested_ops_of_a_composite_op_are_reported_inside_it():
    a, w, b = npusim.ones(3, 4), npusim.ones(2, 4), npusim.ones(2)
    rec, h = register()
    npusim.nn.functional.linear(a, w, b)
    remove_callback(h)
    names = rec.names()
    assert names[0] == "aten::linear" and len(names) > 1
    assert rec.names("exit")[-1] == "aten::linear"   # the children close before their parent


def test_inputs_only_when_asked_and_outputs_on_exit_when_asked():
    x = npusim.arange(4.0)
    plain, h1 = register()
    x.add(1, alpha=2)
    remove_callback(h1)
    assert plain.records[0].inputs is None and plain.records[0].outputs is None

    seen = {}

    def on_exit(fn, ctx):
        seen["outputs"] = fn.outputs

    cb = RecordFunctionCallback(lambda fn: seen.setdefault("inputs", fn.inputs), on_exit)
    h2 = add_global_callback(cb.needs_inputs(True).needs_outputs(True))
    out = x.add(1, alpha=2)
    remove_callback(h2)
    inputs = seen["inputs"]
    assert inputs[0] is x and inputs[1] == 1 and inputs[2] == 2   # schema order, keyword-only last
    assert seen["outputs"][0] is out


def test_record_function_fields():
    x = npusim.ones(2)
    rec, h = register()
    x + x
    x + x
    remove_callback(h)
    a, b = rec.records
    assert a.handle != b.handle
    assert a.thread_id == b.thread_id
    assert a.overload_name == "Tensor" and a.op is npusim.ops.aten.add.Tensor
    assert 0 < a.start_time_ns <= b.start_time_ns
    assert a.seq_nr == -1   # no autograd node for an op that needs no grad


def test_an_on_exit_that_takes_only_the_record_is_called_with_it():
    got = []
    h = add_global_callback(RecordFunctionCallback(None, lambda fn: got.append(fn.name)))
    npusim.ones(1) + 1
    remove_callback(h)
    assert got == ["aten::ones", "aten::add"]


def test_scopes_filter_what_a_callback_sees():
    x = npusim.ones(2, requires_grad=True)
    rec, h = register(scopes={RecordScope.BACKWARD_FUNCTION})
    (x * 2).sum().backward()
    with record_function("block"):
        x + 1
    remove_callback(h)
    assert set(rec.names()) == {"SumBackward0", "MulBackward0"}
    assert all(c[2] is RecordScope.BACKWARD_FUNCTION for c in rec.calls)


def test_seq_nr_pairs_each_forward_op_with_its_backward_node():
    x = npusim.ones(3, requires_grad=True)
    rec, h = register()
    y = (x * 2).exp().sum()
    y.backward()
    remove_callback(h)
    fwd = {r.seq_nr: r.name for r in rec.records if r.scope is RecordScope.FUNCTION and r.seq_nr >= 0}
    bwd = {r.seq_nr: r.name for r in rec.records if r.scope is RecordScope.BACKWARD_FUNCTION}
    assert sorted(bwd.values()) == ["ExpBackward0", "MulBackward0", "SumBackward0"]
    for seq, node_name in bwd.items():
        assert fwd[seq] == "aten::" + node_name[:-len("Backward0")].lower()
    assert y.grad_fn._sequence_nr() == next(s for s, n in bwd.items() if n == "SumBackward0")
    np.testing.assert_allclose(host(x.grad), 2 * np.exp(2.0) * np.ones(3), rtol=1e-6)


def test_backward_callbacks_see_the_incoming_gradients_when_asked():
    x = npusim.ones(2, requires_grad=True)
    grads = []
    cb = RecordFunctionCallback(lambda fn: grads.append(fn.inputs)).needs_inputs(True)
    h = add_global_callback(cb.scopes({RecordScope.BACKWARD_FUNCTION}))
    (x * 3).sum().backward()
    remove_callback(h)
    assert len(grads) == 2 and all(isinstance(g, tuple) for g in grads)
    np.testing.assert_array_equal(host(grads[1][0]), np.ones(2, np.float32))   # MulBackward0 gets d(sum)


def test_npu_ops_and_cpu_fallback_ops_fire_callbacks(device):
    x = npusim.tensor([3.0, 1.0, 2.0], device=device)
    rec, h = register()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the fallback's one-time warning
        values, _ = npusim.sort(x)
    remove_callback(h)
    assert "aten::sort" in rec.names()
    np.testing.assert_array_equal(host(values), [1.0, 2.0, 3.0])


def test_user_scope_as_context_manager_and_decorator():
    rec, h = register()
    with record_function("my_block") as scope:
        npusim.ones(1)

    @record_function("decorated")
    def f(n):
        return npusim.zeros(n)

    out = f(2)
    remove_callback(h)
    assert rec.names() == ["my_block", "aten::ones", "decorated", "aten::zeros"]
    assert [c[2] for c in rec.calls if c[1] == "my_block"] == [RecordScope.USER_SCOPE, RecordScope.USER_SCOPE]
    assert scope.name == "my_block" and out.shape == (2,) and f.__name__ == "f"


@pytest.mark.oracle
def test_record_function_rejects_a_non_string_name_like_torch(torch):
    for bad, kwargs in ((1, {}), ("ok", {"args": 3})):
        with pytest.raises(RuntimeError) as ours:
            with record_function(bad, **kwargs):
                pass
        with pytest.raises(RuntimeError) as theirs:
            with torch.profiler.record_function(bad, **kwargs):
                pass
        assert str(ours.value).splitlines()[0] == str(theirs.value).splitlines()[0]


def test_builder_validation():
    with pytest.raises(RuntimeError, match="^Invalid sampling probability$"):
        RecordFunctionCallback(lambda fn: None).sampling_prob(1.5)
    with pytest.raises(RuntimeError, match="^Invalid sampling probability$"):
        RecordFunctionCallback(lambda fn: None).sampling_prob(-0.1)
    with pytest.raises(TypeError, match="start callback must be callable"):
        RecordFunctionCallback(3)
    with pytest.raises(TypeError, match="expected RecordScope members, got str"):
        RecordFunctionCallback(lambda fn: None).scopes({"FUNCTION"})
    with pytest.raises(TypeError, match="expected a npusim.profiler.RecordFunctionCallback, got function"):
        add_global_callback(lambda fn: None)


# --- sampling -------------------------------------------------------------------------------------------------

def _count_sampled(probs, calls):
    x = npusim.ones(1)
    add = npusim.ops.aten.add.Tensor
    counts = [0] * len(probs)
    handles = []
    for i, p in enumerate(probs):
        def bump(fn, i=i):
            counts[i] += 1
        handles.append(add_global_callback(RecordFunctionCallback(bump).sampling_prob(p)))
    for _ in range(calls):
        add(x, x)
    for h in handles:
        remove_callback(h)
    return counts


def test_a_one_percent_callback_fires_for_about_one_percent_of_ops():
    n = 100_000
    (count,) = _count_sampled([0.01], n)
    sd = (n * 0.01 * 0.99) ** 0.5
    assert abs(count - n * 0.01) < 5 * sd, count


def test_each_callback_is_sampled_with_its_own_probability():
    n = 60_000
    counts = _count_sampled([0.02, 0.2, 1.0, 0.0], n)
    for c, p in zip(counts[:2], (0.02, 0.2)):
        assert abs(c - n * p) < 5 * (n * p * (1 - p)) ** 0.5, counts
    assert counts[2] == n and counts[3] == 0


def test_sampled_ops_compute_correctly():
    h = add_global_callback(RecordFunctionCallback(lambda fn: None).sampling_prob(0.3))
    x = npusim.arange(5.0)
    results = [host(x * k) for k in range(200)]
    remove_callback(h)
    for k, r in enumerate(results):
        np.testing.assert_array_equal(r, np.arange(5.0, dtype=np.float32) * k)


def test_thread_local_dispatch_state_is_honoured_while_sampling():
    # A sampled callback lets most ops skip the slow path; a key guard must still apply to every op.
    h = add_global_callback(RecordFunctionCallback(lambda fn: None).sampling_prob(0.001))
    x = npusim.ones(2, requires_grad=True)
    with _ExcludeDispatchKeyGuard(DispatchKey.AutogradCPU):
        outs = [x * 2 for _ in range(300)]
    after = x * 2
    remove_callback(h)
    assert not any(o.requires_grad for o in outs)
    assert after.requires_grad


def test_autocast_is_honoured_while_sampling():
    autocast_state = pytest.importorskip("npusim.core.autocast.state")
    h = add_global_callback(RecordFunctionCallback(lambda fn: None).sampling_prob(0.001))
    a = npusim.ones(4, 4)
    with autocast_state.autocast("cpu", dtype=npusim.bfloat16):
        dtypes = {(a @ a).dtype for _ in range(300)}
    remove_callback(h)
    assert dtypes == {npusim.bfloat16}


# --- thread-local and global callbacks, enabling, removal ---------------------------------------------------------

def _in_thread(fn):
    out = {}

    def run():
        out["value"] = fn()
    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out.get("value")


def test_thread_local_callbacks_see_only_their_thread_and_global_ones_see_all():
    local, hl = register(is_global=False)
    glob, hg = register()
    _in_thread(lambda: npusim.zeros(1))
    npusim.ones(1)
    remove_callback(hl)
    remove_callback(hg)
    assert local.names() == ["aten::ones"]
    assert glob.names() == ["aten::zeros", "aten::ones"]
    assert len({r.thread_id for r in glob.records}) == 2


def test_enable_record_function_is_per_thread():
    rec, h = register()
    enable_record_function(False)
    npusim.ones(1)
    assert not is_record_function_enabled()
    assert _in_thread(is_record_function_enabled) is True   # on by default in every thread
    _in_thread(lambda: npusim.zeros(1))
    enable_record_function(True)
    npusim.empty(1)
    remove_callback(h)
    assert rec.names() == ["aten::zeros", "aten::empty"]


def test_removal_and_has_callbacks():
    assert not has_callbacks()
    rec, h = register()
    assert has_callbacks()
    remove_callback(h)
    assert not has_callbacks()
    npusim.ones(1)
    assert rec.calls == []
    _, hl = register(is_global=False)
    assert has_callbacks() and _in_thread(has_callbacks) is False
    remove_callback(hl)
    assert not has_callbacks()
    with pytest.warns(UserWarning, match="^Requested callback is not found$"):
        remove_callback(h)


def test_a_thread_local_callback_can_be_removed_from_another_thread():
    rec, h = register(is_global=False)
    _in_thread(lambda: remove_callback(h))
    npusim.ones(1)
    assert rec.calls == [] and not has_callbacks()


def test_ops_called_by_a_callback_are_not_recorded():
    seen = []

    def on_enter(fn):
        seen.append(fn.name)
        if fn.inputs and isinstance(fn.inputs[0], npusim.Tensor):
            fn.inputs[0].sum()   # an op inside a callback

    x = npusim.ones(3)
    h = add_global_callback(RecordFunctionCallback(on_enter).needs_inputs(True))
    x * 2
    remove_callback(h)
    assert seen == ["aten::mul"]


# --- debug info -----------------------------------------------------------------------------------------------

def test_debug_info_reaches_op_callbacks_and_nests():
    seen = []
    h = add_global_callback(RecordFunctionCallback(
        lambda fn: seen.append((fn.name, ThreadLocalDebugInfo.get(DebugInfoKind.INFERENCE_CONTEXT)))))
    npusim.ones(1)
    with DebugInfoGuard(DebugInfoKind.INFERENCE_CONTEXT, {"model_id": 7}):
        npusim.zeros(1)
        with DebugInfoGuard(DebugInfoKind.INFERENCE_CONTEXT, {"model_id": 8}):
            npusim.empty(1)
        with DebugInfoGuard(DebugInfoKind.TEST_INFO, "other kind"):
            npusim.ones(2)
    remove_callback(h)
    assert seen == [("aten::ones", None), ("aten::zeros", {"model_id": 7}), ("aten::empty", {"model_id": 8}),
                    ("aten::ones", {"model_id": 7})]
    assert ThreadLocalDebugInfo.get(DebugInfoKind.TEST_INFO) is None


def test_debug_info_reaches_the_backward_pass():
    x = npusim.ones(2, requires_grad=True)
    seen = []
    h = add_global_callback(RecordFunctionCallback(
        lambda fn: seen.append((fn.scope, ThreadLocalDebugInfo.get(DebugInfoKind.PRODUCER_INFO)))))
    with DebugInfoGuard(DebugInfoKind.PRODUCER_INFO, "serving-layer"):
        (x * x).sum().backward()
    remove_callback(h)
    backward = [info for scope, info in seen if scope is RecordScope.BACKWARD_FUNCTION]
    assert len(backward) == 2 and set(backward) == {"serving-layer"}
    assert all(info == "serving-layer" for _, info in seen)


def test_debug_info_guard_validation_and_none():
    with pytest.raises(TypeError, match="debug info kind must be a npusim.profiler.DebugInfoKind, not int"):
        DebugInfoGuard(3, "x")
    with pytest.raises(TypeError, match="must be a npusim.profiler.DebugInfoKind, not str"):
        ThreadLocalDebugInfo.get("TEST_INFO")
    with DebugInfoGuard(DebugInfoKind.TEST_INFO, "outer"):
        with DebugInfoGuard(DebugInfoKind.TEST_INFO, None):   # None changes nothing, as in c10
            assert ThreadLocalDebugInfo.get(DebugInfoKind.TEST_INFO) == "outer"
    assert ThreadLocalDebugInfo.get(DebugInfoKind.TEST_INFO) is None


def test_captured_state_carries_debug_info_and_callbacks_into_another_thread():
    rec, h = register(is_global=False)
    with DebugInfoGuard(DebugInfoKind.TEST_INFO, 42):
        state = capture_thread_local_state()

    def task():
        with ThreadLocalStateGuard(state):
            npusim.zeros(1)
            info = ThreadLocalDebugInfo.get(DebugInfoKind.TEST_INFO)
        npusim.ones(1)   # the thread's own state is back: not recorded
        return info, ThreadLocalDebugInfo.get(DebugInfoKind.TEST_INFO)

    assert _in_thread(task) == (42, None)
    remove_callback(h)
    assert rec.names() == ["aten::zeros"]
    with pytest.raises(TypeError, match="expected a ThreadLocalState"):
        with ThreadLocalStateGuard("state"):
            pass


def test_debug_info_propagates_into_forked_tasks():
    jit = getattr(npusim, "jit", None)
    if jit is None or not hasattr(jit, "fork"):
        pytest.skip("npusim.jit.fork does not exist yet (threading work); propagation through "
                    "capture_thread_local_state is tested above")
    seen = []
    h = add_global_callback(RecordFunctionCallback(
        lambda fn: seen.append(ThreadLocalDebugInfo.get(DebugInfoKind.INFERENCE_CONTEXT))))
    with DebugInfoGuard(DebugInfoKind.INFERENCE_CONTEXT, "model-3"):
        fut = jit.fork(lambda: npusim.ones(1) + 1)
        jit.wait(fut)
    remove_callback(h)
    assert seen and set(seen) == {"model-3"}


# --- failing callbacks ------------------------------------------------------------------------------------------

def test_a_raising_callback_warns_once_and_leaves_the_op_alone():
    def bad_enter(fn):
        raise ValueError("boom")

    x = npusim.arange(3.0)
    h = add_global_callback(RecordFunctionCallback(bad_enter))
    with pytest.warns(RuntimeWarning, match="raised ValueError: boom") as record:
        results = [host(x + k) for k in range(3)]
    remove_callback(h)
    assert len([w for w in record if "boom" in str(w.message)]) == 1
    for k, r in enumerate(results):
        np.testing.assert_array_equal(r, np.arange(3.0, dtype=np.float32) + k)
    assert not has_callbacks()
    np.testing.assert_array_equal(host(x * 2), [0.0, 2.0, 4.0])


def test_a_raising_exit_callback_does_not_stop_the_others():
    rec, h1 = register()
    h2 = add_global_callback(RecordFunctionCallback(None, lambda fn, ctx: 1 / 0))
    with pytest.warns(RuntimeWarning, match="ZeroDivisionError"):
        npusim.ones(1)
    remove_callback(h1)
    remove_callback(h2)
    assert rec.names("exit") == ["aten::ones"]


def test_an_op_that_raises_still_closes_its_record():
    rec, h = register()
    with pytest.raises(RuntimeError, match="must match the size"):
        npusim.ones(2) + npusim.ones(3)
    remove_callback(h)
    assert rec.names("enter") == rec.names("exit") == ["aten::ones", "aten::ones", "aten::add"]


# --- registration from threads --------------------------------------------------------------------------------

def test_registration_while_ops_run_in_other_threads():
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)   # threads take turns often: more interleavings, less waiting
    try:
        _registration_race()
    finally:
        sys.setswitchinterval(old_interval)


def _registration_race():
    stop = threading.Event()
    errors = []
    x = npusim.arange(4.0)
    expected = np.arange(4.0, dtype=np.float32) * 3

    def worker():
        try:
            while not stop.is_set():
                np.testing.assert_array_equal(host(x * 3), expected)
        except Exception as exc:   # noqa: BLE001 - reported below
            errors.append(exc)

    def registrar(prob, local):
        try:
            for _ in range(40):
                cb = RecordFunctionCallback(lambda fn: None, lambda fn, c: None).sampling_prob(prob)
                h = (add_thread_local_callback if local else add_global_callback)(cb)
                npusim.ones(1)
                remove_callback(h)
        except Exception as exc:   # noqa: BLE001
            errors.append(exc)

    workers = [threading.Thread(target=worker) for _ in range(2)]
    registrars = [threading.Thread(target=registrar, args=a) for a in ((0.5, False), (1.0, False), (1.0, True))]
    for t in workers + registrars:
        t.start()
    for t in registrars:
        t.join()
    stop.set()
    for t in workers:
        t.join()
    assert errors == []
    assert not has_callbacks()
    rec, h = register()
    npusim.ones(1)
    remove_callback(h)
    assert rec.names() == ["aten::ones"]
