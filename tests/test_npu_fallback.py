"""The npu's boxed CPU fallback: ops without an npu kernel run on the cpu and come back.

The ops the npu leaves out on purpose (sort, argsort, topk, unique, nonzero, masked_select)
must give the cpu's results on the input's npu device, keep in-place and ``out=``
semantics, warn once per op per process at the user's line, count their calls, and obey
NPUSIM_FALLBACK. Ops a copy would change the meaning of (views, factories, random ops) refuse.
The warn-once behaviour is per process, so it is checked in fresh interpreters.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import npusim
from conftest import host
from npusim.library import Library

ROOT = Path(__file__).resolve().parents[1]
npu = npusim.npu


def run_fresh(code: str, env=None) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    full.update(env or {})
    full["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=full)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(autouse=True)
def no_fallback_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Operator '.*' is not currently supported on the npu backend")
        yield


def pair(values, dtype=np.float32):
    a = np.asarray(values, dtype=dtype)
    return npusim.from_numpy(a.copy()), npusim.from_numpy(a.copy()).to("npu:1")


# --- results equal the cpu's and stay on the input's device -----------------------------------------------------

DATA = [[3.0, -1.0, 2.0, 2.0], [0.0, 5.0, -4.0, 1.0]]

CASES = {
    "sort": lambda t: npusim.sort(t, dim=1, descending=True),
    "sort stable": lambda t: npusim.sort(t, stable=True),
    "argsort": lambda t: npusim.argsort(t, dim=0),
    "topk": lambda t: npusim.topk(t, 2),
    "unique": lambda t: npusim.unique(t, return_inverse=True, return_counts=True),
    "unique dim": lambda t: npusim.unique(t, dim=1),
    "unique_consecutive": lambda t: npusim.unique_consecutive(t.flatten(), return_counts=True),
    "nonzero": lambda t: npusim.nonzero(t),
    "nonzero tuple": lambda t: npusim.nonzero(t, as_tuple=True),
    "masked_select": lambda t: npusim.masked_select(t, t > 0),
    "method": lambda t: t.sort().values,
}


def _flat(result):
    if isinstance(result, npusim.Tensor):
        return [result]
    return [r for part in result for r in _flat(part)]


@pytest.mark.parametrize("name", list(CASES))
def test_fallback_results_equal_the_cpu_and_stay_on_the_input_device(name):
    cpu, dev = pair(DATA)
    expected, got = _flat(CASES[name](cpu)), _flat(CASES[name](dev))
    assert len(expected) == len(got)
    for e, g in zip(expected, got):
        assert g.device == npusim.device("npu:1")
        assert g.dtype is e.dtype and g.shape == e.shape
        np.testing.assert_array_equal(host(g), host(e))


def test_fallback_results_are_npu_tensors_that_keep_working():
    _, dev = pair(DATA)
    values, indices = npusim.sort(dev)
    assert (values + 1).device == dev.device
    assert host(dev.gather(1, indices)).tolist() == host(values).tolist()


def test_fallback_keeps_out_arguments():
    cpu, dev = pair(DATA)
    values = npusim.empty(2, 4, device="npu:1")
    indices = npusim.empty(2, 4, dtype=npusim.int64, device="npu:1")
    r = npusim.sort(dev, out=(values, indices))
    assert r[0] is values and r[1] is indices
    assert values.device == dev.device and host(values).tolist() == host(npusim.sort(cpu).values).tolist()
    out = npusim.empty(0, dtype=npusim.int64, device="npu:1")    # resized, as the cpu kernel would
    assert npusim.nonzero(dev, out=out) is out
    assert out.shape == (7, 2) and out.device == dev.device
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long int, but got float instead"):
        npusim.sort(dev, out=(npusim.empty(2, 4, device="npu:1"), npusim.empty(2, 4, device="npu:1")))


@pytest.fixture(scope="module")
def test_ops():
    """Ops with a cpu kernel only, to drive the fallback through each kind of schema."""
    lib = Library("npu_fallback_test", "DEF")
    lib.define("inc_(Tensor(a!) self) -> Tensor(a!)")
    lib.define("doubled(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
    lib.define("first_row(Tensor(a) self) -> Tensor(a)")
    lib.define("noisy(Tensor self, *, Generator? generator=None) -> Tensor")
    lib.define("make_thing(int n, *, Device? device=None) -> Tensor")

    def inc_(self):
        return self.add_(1)

    def doubled(x, *, out):
        out.resize_(2 * x.shape[0])
        return out.copy_(npusim.cat([x, x]))

    lib.impl("inc_", inc_, "CPU")
    lib.impl("doubled", doubled, "CPU")
    lib.impl("first_row", lambda self: self[0], "CPU")
    lib.impl("noisy", lambda self, generator=None: self + 1, "CPU")
    lib.impl("make_thing", lambda n, device=None: npusim.zeros(n), "CPU")
    yield npusim.ops.npu_fallback_test
    lib._destroy()


def test_fallback_writes_in_place_results_back(test_ops):
    x = npusim.ones(3, device="npu:1")
    view = x[1:]
    version = x._version
    r = test_ops.inc_(view)
    assert r is view and r.device == npusim.device("npu:1")
    assert host(x).tolist() == [1.0, 2.0, 2.0]      # through the view, into the base
    assert x._version > version


def test_fallback_resizes_out_arguments_on_the_device(test_ops):
    x = npusim.tensor([1.0, 2.0]).npu()
    out = npusim.empty(0, device="npu")
    assert test_ops.doubled(x, out=out) is out
    assert out.device == x.device and host(out).tolist() == [1.0, 2.0, 1.0, 2.0]


@pytest.mark.parametrize("op, args, kwargs, reason", [
    ("first_row", lambda: (npusim.ones(2, 2, device="npu"),), {},
     "returns a view of its input, which a copy to the CPU cannot preserve"),
    ("noisy", lambda: (npusim.ones(2, device="npu"),), {},
     "draws random numbers, which must come from the npu's own generator"),
    ("make_thing", lambda: (3,), {"device": "npu"}, "creates tensors \\(a factory\\) and has no input to copy"),
])
def test_views_random_ops_and_factories_never_fall_back(test_ops, op, args, kwargs, reason):
    before = npu.fallback_stats()
    with pytest.raises(NotImplementedError, match=f"^Operator 'npu_fallback_test::{op}' has no npu kernel and "
                                                  f"cannot fall back to the CPU: it {reason}. Register an npu kernel "
                                                  f"for it.$"):
        getattr(test_ops, op)(*args(), **kwargs)
    assert npu.fallback_stats() == before


def test_fallback_refuses_mixed_devices_like_a_kernel():
    x = npusim.tensor([1.0, -2.0, 3.0]).npu()
    with pytest.raises(RuntimeError, match=r"^Expected all tensors to be on the same device, but found at least two "
                                           r"devices, npu:0 and cpu!$"):
        npusim.masked_select(x, npusim.tensor([True, False, True]))
    with pytest.raises(RuntimeError, match="found at least two devices, npu:0 and npu:1!"):
        npusim.masked_select(x, npusim.tensor([True, False, True]).to("npu:1"))
    # a 0-dim cpu tensor may join, as in torch
    r = npusim.masked_select(x, npusim.tensor(True))
    assert r.device == x.device and host(r).tolist() == [1.0, -2.0, 3.0]


def test_gradients_flow_through_the_fallback():
    a = np.array([3.0, 1.0, 2.0], dtype=np.float32)
    grads = []
    for device in ("cpu", "npu"):
        x = npusim.tensor(a, device=device, requires_grad=True)
        values, _ = npusim.sort(x)
        (values * npusim.tensor([1.0, 10.0, 100.0], device=device)).sum().backward()
        assert x.grad.device == x.device
        grads.append(host(x.grad))
    np.testing.assert_array_equal(grads[0], grads[1])
    np.testing.assert_array_equal(grads[1], [100.0, 1.0, 10.0])


# --- statistics and modes -----------------------------------------------------------------------------------

def test_fallback_stats_count_calls_per_op():
    npu.reset_fallback_stats()
    x = npusim.tensor([2.0, 1.0]).npu()
    for _ in range(3):
        npusim.sort(x)
    x.topk(1)
    npusim.argsort(x, stable=True)
    assert npu.fallback_stats() == {"aten::sort": 3, "aten::topk": 1, "aten::argsort": 1}
    npusim.sort(npusim.tensor([2.0, 1.0]))      # the cpu has its kernel: no fallback
    assert npu.fallback_stats()["aten::sort"] == 3
    npu.reset_fallback_stats()
    assert npu.fallback_stats() == {}


def test_error_mode_refuses_and_none_restores():
    x = npusim.tensor([2.0, 1.0]).npu()
    npu.set_fallback_mode("error")
    try:
        with pytest.raises(NotImplementedError, match=r"^Operator 'aten::sort' is not currently supported on the npu "
                                                      r"backend, and the CPU fallback is disabled \(fallback mode "
                                                      r"'error', set by NPUSIM_FALLBACK or "
                                                      r"npusim.npu.set_fallback_mode\).$"):
            npusim.sort(x)
    finally:
        npu.set_fallback_mode(None)
    assert host(npusim.sort(x).values).tolist() == [1.0, 2.0]


def test_bad_fallback_mode():
    with pytest.raises(ValueError, match="^fallback mode must be 'warn', 'silent' or 'error', got 'loud'$"):
        npu.set_fallback_mode("loud")


# --- the warning: once per op per process, at the user's line (fresh interpreters) ------------------------------

WARN_SCRIPT = """
    import warnings
    import npusim
    from npusim.core.dispatch.record_function import RecordFunctionCallback, add_global_callback

    x = npusim.tensor([3.0, 1.0, 2.0]).npu()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        npusim.sort(x)                                   # line 9
        npusim.sort(x)
        x.sort(descending=True)
        y = x.clone().requires_grad_()
        y.topk(2)                                        # line 13: through the autograd key
        add_global_callback(RecordFunctionCallback(lambda fn: None, lambda fn, ctx: None))
        npusim.argsort(x)                                # line 15: with a profiling callback active
        with npusim.profiler.profile():
            npusim.nonzero(x)                            # line 17: under the profiler
    for w in caught:
        print(w.category.__name__, w.filename, w.lineno, w.message)
    print(npusim.npu.fallback_stats())
"""


def test_the_warning_is_issued_once_per_op_at_the_users_line():
    out = run_fresh(WARN_SCRIPT).splitlines()
    message = ("is not currently supported on the npu backend and will fall back to run on the CPU. This may have "
               "performance implications.")
    assert out[:-1] == [
        f"UserWarning <string> 9 Operator 'aten::sort' {message}",
        f"UserWarning <string> 13 Operator 'aten::topk' {message}",
        f"UserWarning <string> 15 Operator 'aten::argsort' {message}",
        f"UserWarning <string> 17 Operator 'aten::nonzero' {message}",
    ]
    assert out[-1] == "{'aten::sort': 3, 'aten::topk': 1, 'aten::argsort': 1, 'aten::nonzero': 1}"


@pytest.mark.parametrize("mode, expected", [
    ("silent", ["sorted [1.0, 2.0, 3.0]", "warnings 0"]),
    ("warn", ["sorted [1.0, 2.0, 3.0]", "warnings 1"]),
    ("error", ["NotImplementedError", "warnings 0"]),
])
def test_npusim_fallback_setting(mode, expected):
    out = run_fresh("""
        import warnings
        import npusim
        x = npusim.tensor([3.0, 1.0, 2.0]).npu()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                print("sorted", npusim.sort(x).values.cpu().tolist())
            except NotImplementedError:
                print("NotImplementedError")
        print("warnings", len(caught))
    """, {"NPUSIM_FALLBACK": mode})
    assert out.splitlines() == expected


def test_the_fallback_registers_through_the_public_library_api():
    import npusim.backend as backend
    assert "sort" in backend.FALLBACK_OPS and "masked_select" in backend.FALLBACK_OPS
    assert backend._fallback_lib.kind == "IMPL" and backend._fallback_lib.ns == "_"
