"""npusim.futures.Future, collect_all / wait_all, and npusim.jit.fork / wait with thread-local state."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import threading
import traceback
from pathlib import Path

import numpy as np
import pytest
from conftest import host

import npusim
from npusim.futures import Future, collect_all, wait_all
from npusim.profiler import DebugInfoGuard, DebugInfoKind, ThreadLocalDebugInfo

REPO = Path(__file__).resolve().parents[1]
ALREADY = "Attempting to mark a completed Future as complete again"


# --- Future ---------------------------------------------------------------------------------------------

def test_future_completes_once_with_a_value():
    f = Future()
    assert not f.done()
    f.set_result(3)
    assert f.done() and f.wait() == 3 and f.value() == 3
    with pytest.raises(RuntimeError, match=ALREADY):
        f.set_result(4)
    with pytest.raises(RuntimeError, match=ALREADY):
        f.set_exception(ValueError("late"))
    assert f.wait() == 3


def test_value_before_completion_is_refused():
    with pytest.raises(RuntimeError, match=r"Future.value\(\) was called before the Future completed"):
        Future().value()


def test_set_exception_makes_wait_and_value_raise_it():
    f = Future()
    err = KeyError("k")
    f.set_exception(err)
    assert f.done()
    with pytest.raises(KeyError) as info:
        f.wait()
    assert info.value is err
    with pytest.raises(KeyError):
        f.value()


def test_set_exception_refuses_a_non_exception():
    with pytest.raises(AssertionError, match="notexc is of type <class 'str'>, not an Exception."):
        Future().set_exception("notexc")


def test_wait_blocks_until_another_thread_sets_the_result():
    f = Future()
    timer = threading.Timer(0.05, f.set_result, args=("late",))
    timer.start()
    assert f.wait() == "late"
    timer.join()


def test_then_chains_and_runs_after_completion():
    f = Future()
    doubled = f.then(lambda fut: fut.wait() * 2)
    plus_one = doubled.then(lambda fut: fut.value() + 1)
    assert isinstance(doubled, Future) and not plus_one.done()
    f.set_result(5)
    assert doubled.wait() == 10 and plus_one.wait() == 11
    # on a completed future the callback runs at once
    assert f.then(lambda fut: fut.value() - 1).wait() == 4


def test_then_callback_error_completes_the_child_with_a_runtime_error():
    f = Future()
    child = f.then(lambda fut: 1 / 0)
    f.set_result(1)
    with pytest.raises(RuntimeError, match="Got the following error when running the callback: "
                                           "ZeroDivisionError: division by zero") as info:
        child.wait()
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    # an error of the parent reaches a callback that waits on it
    g = Future()
    chained = g.then(lambda fut: fut.wait())
    g.set_exception(KeyError("k"))
    with pytest.raises(RuntimeError, match="KeyError: 'k'"):
        chained.wait()


def test_add_done_callback_runs_in_order_and_logs_errors(caplog):
    f = Future()
    seen = []
    f.add_done_callback(lambda fut: seen.append(("first", fut.value())))
    f.add_done_callback(lambda fut: 1 / 0)
    f.add_done_callback(lambda fut: seen.append(("third", fut.value())))
    with caplog.at_level(logging.ERROR, logger="npusim.futures"):
        f.set_result(7)
    assert seen == [("first", 7), ("third", 7)]
    assert "ZeroDivisionError: division by zero" in caplog.text
    f.add_done_callback(lambda fut: seen.append("after"))   # already complete: runs now
    assert seen[-1] == "after"


def test_callbacks_must_be_callable():
    with pytest.raises(TypeError, match=r"then\(\): argument 'callback' must be callable, not int"):
        Future().then(3)
    with pytest.raises(TypeError, match=r"add_done_callback\(\): argument 'callback' must be callable, not str"):
        Future().add_done_callback("cb")


def test_future_is_generic_in_annotations():
    assert Future[int] is not None and npusim.jit.Future is Future


# --- collect_all / wait_all -------------------------------------------------------------------------------

def test_collect_all_completes_when_every_future_has():
    a, b = Future(), Future()
    both = collect_all([a, b])
    a.set_result(1)
    assert not both.done()
    b.set_result(2)
    assert both.done() and [f.value() for f in both.wait()] == [1, 2]
    assert collect_all([]).wait() == []


def test_collect_all_and_wait_all_raise_the_first_error():
    a, b = Future(), Future()
    both = collect_all([a, b])
    b.set_exception(ValueError("e"))
    assert both.done()   # an error completes the combined future at once
    with pytest.raises(ValueError, match="^e$"):
        both.wait()
    a.set_result(1)
    with pytest.raises(ValueError, match="^e$"):
        wait_all([a, b])
    assert wait_all([a]) == [1]


def test_collect_all_refuses_non_futures():
    with pytest.raises(TypeError, match=r"collect_all\(\): argument 'futures' must be a list of "
                                        r"npusim.futures.Future, but found an element of type int"):
        collect_all([1])
    with pytest.raises(TypeError, match=r"collect_all\(\): argument 'futures' must be a list of "
                                        r"npusim.futures.Future, not int"):
        collect_all(3)
    with pytest.raises(TypeError, match=r"wait_all\(\): argument 'futures' must be a list"):
        wait_all([Future(), "x"])


@pytest.mark.oracle
def test_future_messages_match_torch(torch):
    for make in (lambda F: F().set_exception("notexc"),):
        with pytest.raises(AssertionError) as ours:
            make(Future)
        with pytest.raises(AssertionError) as theirs:
            make(torch.futures.Future)
        assert str(ours.value) == str(theirs.value)
    ours, theirs = Future(), torch.futures.Future()
    ours.set_result(1)
    theirs.set_result(1)
    with pytest.raises(RuntimeError) as e1:
        ours.set_result(2)
    with pytest.raises(RuntimeError) as e2:
        theirs.set_result(2)
    assert str(e1.value) == str(e2.value)
    a, b = torch.futures.Future(), torch.futures.Future()
    a.set_result(1)
    b.set_exception(ValueError("e"))
    with pytest.raises(ValueError):
        torch.futures.wait_all([a, b])


# --- fork / wait --------------------------------------------------------------------------------------------

def test_fork_runs_the_seed_example(device):
    gen = npusim.Generator().manual_seed(0)
    x = npusim.randn(64, 32, generator=gen).to(device)
    w_y = npusim.randn(32, 16, generator=gen).to(device)
    w_z = npusim.randn(32, 16, generator=gen).to(device)

    def compute_z(x):
        return npusim.mm(x, w_z)

    def forward(x):
        fut = npusim.jit._fork(compute_z, x)   # launch compute_z asynchronously
        y = npusim.mm(x, w_y)                   # runs in parallel with compute_z
        z = npusim.jit._wait(fut)
        return y + z

    out = forward(x)
    assert out.device.type == device
    np.testing.assert_allclose(host(out), host(x) @ host(w_y) + host(x) @ host(w_z), rtol=1e-5, atol=1e-5)


def test_fork_passes_args_and_kwargs_and_returns_a_future():
    fut = npusim.jit.fork(lambda a, b=0, *, c: (a, b, c), 1, b=2, c=3)
    assert isinstance(fut, npusim.futures.Future)
    assert npusim.jit.wait(fut) == (1, 2, 3) and fut.done()


def test_forked_task_runs_on_another_thread_at_the_same_time():
    barrier = threading.Barrier(2, timeout=10)

    def task():
        barrier.wait()   # only passes if the caller reaches the barrier too, while this runs
        return threading.current_thread().name

    fut = npusim.jit.fork(task)
    barrier.wait()
    assert npusim.jit.wait(fut).startswith("npusim-interop")


def test_exception_in_a_task_surfaces_at_wait_with_its_traceback():
    def failing_task(v):
        raise ValueError(f"bad value {v}")

    fut = npusim.jit.fork(failing_task, 3)
    with pytest.raises(ValueError, match="bad value 3") as info:
        npusim.jit.wait(fut)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "failing_task" in frames
    assert fut.done()
    with pytest.raises(ValueError, match="bad value 3"):
        fut.value()


def test_fork_and_wait_refuse_bad_arguments():
    with pytest.raises(TypeError, match="Object of type 'int' is not an instance of 'function'"):
        npusim.jit.fork(3)
    with pytest.raises(TypeError, match=r"wait\(\): argument 'future' must be npusim.futures.Future, not int"):
        npusim.jit.wait(3)


def test_then_and_wait_all_on_forked_futures():
    futs = [npusim.jit.fork(lambda i: npusim.full((3,), float(i)).sum().item(), i) for i in range(6)]
    assert wait_all(futs) == [3.0 * i for i in range(6)]
    doubled = npusim.jit.fork(lambda: 21).then(lambda f: f.value() * 2)
    assert doubled.wait() == 42


def test_nested_forks_deep_in_a_tree_complete():
    def fib(n):
        if n < 2:
            return n
        a = npusim.jit.fork(fib, n - 1)
        b = npusim.jit.fork(fib, n - 2)
        return npusim.jit.wait(a) + npusim.jit.wait(b)

    assert npusim.jit.wait(npusim.jit.fork(fib, 10)) == 55


def test_nested_forks_do_not_deadlock_a_one_thread_pool():
    script = textwrap.dedent("""
        import npusim
        npusim.set_num_interop_threads(1)

        def fib(n):
            if n < 2:
                return n
            a = npusim.jit.fork(fib, n - 1)
            b = npusim.jit.fork(fib, n - 2)
            return npusim.jit.wait(a) + npusim.jit.wait(b)

        futs = [npusim.jit.fork(fib, 9) for _ in range(3)]
        print(npusim.futures.wait_all(futs), npusim.get_num_interop_threads())
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                       cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[34,", "34,", "34]", "1"]


# --- thread-local state in forked tasks -------------------------------------------------------------------

def _in_task(fn):
    return npusim.jit.wait(npusim.jit.fork(fn))


def test_grad_mode_is_carried_into_the_task_and_not_left_behind():
    x = npusim.ones(3, requires_grad=True)
    with npusim.no_grad():
        inside = _in_task(lambda: (npusim.is_grad_enabled(), (x * 2).requires_grad))
    assert inside == (False, False)
    assert _in_task(lambda: (npusim.is_grad_enabled(), (x * 2).requires_grad)) == (True, True)
    with npusim.inference_mode():
        assert _in_task(npusim.is_inference_mode_enabled) is True
    assert _in_task(npusim.is_inference_mode_enabled) is False


def test_autocast_state_is_carried_into_the_task(device):
    a = npusim.randn(8, 8, device=device)

    def task():
        return npusim.is_autocast_enabled(device), npusim.get_autocast_dtype(device), npusim.mm(a, a).dtype

    with npusim.autocast(device, dtype=npusim.bfloat16):
        enabled, dtype, result_dtype = _in_task(task)
    assert (enabled, dtype, result_dtype) == (True, npusim.bfloat16, npusim.bfloat16)
    enabled, _, result_dtype = _in_task(task)
    assert (enabled, result_dtype) == (False, npusim.float32)


def test_debug_info_and_profiling_callbacks_are_carried_into_the_task():
    with DebugInfoGuard(DebugInfoKind.TEST_INFO, "model-7"):
        assert _in_task(lambda: ThreadLocalDebugInfo.get(DebugInfoKind.TEST_INFO)) == "model-7"
    assert _in_task(lambda: ThreadLocalDebugInfo.get(DebugInfoKind.TEST_INFO)) is None
    with npusim.profiler.profile() as prof:
        _in_task(lambda: npusim.ones(4) + 1)
    names = {e.name for e in prof.events()}
    assert "aten::add" in names


def test_dispatch_key_sets_are_carried_into_the_task():
    from npusim.library import _dispatch_tls_local_exclude_set, _ExcludeDispatchKeyGuard
    with _ExcludeDispatchKeyGuard("AutocastCPU"):
        inside = _in_task(lambda: _dispatch_tls_local_exclude_set())
        assert inside == _dispatch_tls_local_exclude_set()
        assert inside.has("AutocastCPU")
    assert not _in_task(lambda: _dispatch_tls_local_exclude_set()).has("AutocastCPU")


def test_current_npu_device_is_carried_into_the_task():
    if npusim.npu.device_count() < 2:
        pytest.skip("needs two npu devices")
    npusim.npu.set_device(1)
    try:
        assert _in_task(npusim.npu.current_device) == 1
        assert _in_task(lambda: npusim.zeros(1, device="npu").device.index) == 1
    finally:
        npusim.npu.set_device(0)
    assert _in_task(npusim.npu.current_device) == 0
