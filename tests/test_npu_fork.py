"""A child forked after its parent initialised the npu may not touch the parent's npu tensors, as with CUDA.

Every op on them and every read of them (item, tolist, printing, in-place writes,
transfers) raises the fork error, on every device; views, which touch no memory,
still work, as torch's do. NPUSIM_ALLOW_FORK=1 lifts the rule on the emulation.
Each test runs a fresh interpreter that forks: the child reports through a pipe.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

ROOT = Path(__file__).resolve().parents[1]
NPU_ENV = ("NPUSIM_BACKEND", "NPUSIM_DEVICE_COUNT", "NPUSIM_DEVICE_MEMORY", "NPUSIM_FALLBACK", "NPUSIM_ALLOW_FORK")
BAD_FORK = ("Cannot re-initialize npu in forked subprocess. To use npu with multiprocessing, you must use the "
            "'spawn' start method")

FORK_SCRIPT = """
    import copy, io, json, os, pickle, sys, npusim
    dev = sys.argv[1]
    x = npusim.arange(4, dtype=npusim.float32, device=dev)
    s = npusim.full((), 2.0, device=dev)
    model = npusim.nn.Linear(3, 2).to(dev)
    opt = npusim.optim.Adam(model.parameters(), lr=0.1)
    model(npusim.ones(2, 3, device=dev)).sum().backward()
    opt.step()
    paths = {
        "item": lambda: s.item(),
        "tolist": lambda: x.tolist(),
        "repr": lambda: repr(x),
        "str": lambda: str(x),
        "float": lambda: float(s),
        "int": lambda: int(s),
        "bool": lambda: bool(s),
        "format": lambda: f"{s:.1f}",
        "add_": lambda: x.add_(1).device.type,
        "zero_": lambda: x.zero_().device.type,
        "fill_": lambda: x.fill_(3).device.type,
        "setitem": lambda: x.__setitem__(0, 5),
        "mul_": lambda: x.mul_(2).device.type,
        "add": lambda: (x + 1).device.type,
        "sum": lambda: x.sum().device.type,
        "cpu": lambda: x.cpu().tolist(),
        "clone": lambda: x.clone().device.type,
        "to_cpu": lambda: x.to("cpu").tolist(),
        "copy_from_cpu": lambda: x.copy_(npusim.ones(4)).device.type,
        "contains": lambda: 1.0 in x,
        "storage_tolist": lambda: x.untyped_storage().tolist()[:1],
        "print": lambda: print(x, file=io.StringIO()),
        "save": lambda: npusim.save(x, io.BytesIO()),
        "pickle": lambda: len(pickle.dumps(x)),
        "deepcopy": lambda: copy.deepcopy(x).device.type,
        "numpy_force": lambda: x.numpy(force=True).tolist(),
        "adam_step": lambda: opt.step(),    # Adam's fused update reads the arrays past the dispatcher
        # views touch no memory: they still work, as torch's do
        "view": lambda: list(x.view(2, 2).shape),
        "getitem": lambda: list(x[1:].shape),
        "unbind": lambda: len(list(x)),
    }
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        out = {}
        for name, f in paths.items():
            try:
                out[name] = ["ok", repr(f())]
            except Exception as e:
                out[name] = [type(e).__name__, str(e), isinstance(e, RuntimeError)]
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.waitpid(pid, 0)
    print(data.decode())
    # the parent is untouched, and its npu still works
    print(json.dumps([x.tolist(), (x + s).tolist(), repr(s)]))
"""

REFUSED = ("item", "tolist", "repr", "str", "float", "int", "bool", "format", "add_", "zero_", "fill_", "setitem",
           "mul_", "add", "sum", "cpu", "clone", "to_cpu", "copy_from_cpu", "contains", "storage_tolist", "print",
           "save", "pickle", "deepcopy", "numpy_force", "adam_step")


def fork_results(dev: str, env: dict):
    full = {k: v for k, v in os.environ.items() if k not in NPU_ENV}
    full.update(env)
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(FORK_SCRIPT), dev], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env=full)
    assert r.returncode == 0, r.stderr
    child, parent = r.stdout.splitlines()
    return json.loads(child), json.loads(parent)


@pytest.mark.parametrize("dev", ["npu:0", "npu:1"])
def test_a_forked_child_cannot_touch_its_parents_npu_tensors(dev):
    # no NPUSIM_BACKEND: the emulation here, cuda mode on the cuda-mode pass (fork is refused in both)
    child, parent = fork_results(dev, {})
    for name in REFUSED:
        assert child[name] == ["NpuRuntimeError", BAD_FORK, True], name
    assert child["view"] == ["ok", "[2, 2]"]
    assert child["getitem"] == ["ok", "[3]"]
    assert child["unbind"] == ["ok", "4"]
    assert parent == [[0.0, 1.0, 2.0, 3.0], [2.0, 3.0, 4.0, 5.0], f"tensor(2., device='{dev}')"]


@pytest.mark.parametrize("dev", ["npu:0", "npu:1"])
def test_allow_fork_lets_a_forked_child_use_the_emulated_npu(dev):
    child, parent = fork_results(dev, {"NPUSIM_BACKEND": "emulation", "NPUSIM_ALLOW_FORK": "1"})
    assert child["item"] == ["ok", "2.0"]
    assert child["tolist"] == ["ok", "[0.0, 1.0, 2.0, 3.0]"]
    assert child["repr"] == ["ok", repr(f"tensor([0., 1., 2., 3.], device='{dev}')")]
    assert child["bool"] == ["ok", "True"]
    assert child["add_"] == ["ok", "'npu'"]
    assert child["cpu"] == ["ok", "[10.0, 6.0, 6.0, 6.0]"]   # after its own fill_(3), x[0] = 5, mul_(2)
    assert child["mul_"] == ["ok", "'npu'"]
    assert all(child[name][0] == "ok" for name in REFUSED), child
    # the child wrote its own copy of the memory: the parent's tensors are unchanged
    assert parent[0] == [0.0, 1.0, 2.0, 3.0]
