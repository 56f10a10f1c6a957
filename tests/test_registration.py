"""Plugging a backend in through PrivateUse1: ``_register_device_module``,
``generate_methods_for_privateuse1_backend``, kernels and a boxed fallback for the
PrivateUse1 key, and ``python -m npusim info``.

Each scenario runs in a fresh interpreter (the rename is once per process) with the
npu backend left out, and registers a small fake backend named ``foo`` of its own.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NO_BACKEND = "import sys, types\nsys.modules['npusim.backend'] = types.ModuleType('npusim.backend')\n"


def run_fresh(code: str, *args: str, module: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "npusim", *args] if module else [sys.executable, "-c", code, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def output_of(code: str, *args: str) -> str:
    r = run_fresh(code, *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


# A backend made of Python pieces only: device hooks, the native kernel table for the
# PrivateUse1 key, a cross-device copy, a device module and the generated methods.
FAKE_BACKEND = NO_BACKEND + textwrap.dedent("""
    import types
    import numpy as np
    import npusim
    from npusim.core.c10.device_hooks import DeviceHooks, register_device_hooks
    from npusim.library import Library
    from npusim.native.registration import register_kernels

    npusim.utils.rename_privateuse1_backend("foo")

    class FooHooks(DeviceHooks):
        def is_available(self):
            return True

        def device_count(self):
            return 2

    register_device_hooks("foo", FooHooks())

    def copy_(self, src, non_blocking=False):
        np.copyto(self._a, src._a, casting="unsafe")
        self._bump_version()
        return self

    aten_foo = Library("aten", "IMPL")
    register_kernels(aten_foo, "PrivateUse1", exclude=("copy_", "sort"))
    aten_foo.impl("copy_", copy_, "PrivateUse1")

    foo_module = types.ModuleType("foo_module")
    foo_module.device_count = lambda: 2
    foo_module.current_device = lambda: 0
    foo_module.get_device_name = lambda device=None: "Fake Foo Accelerator"
    foo_module.runtime_mode = lambda: "pretend"
    npusim._register_device_module("foo", foo_module)
    npusim.utils.generate_methods_for_privateuse1_backend(for_storage=True)
""")


def test_a_python_backend_plugs_in_through_privateuse1():
    out = output_of(FAKE_BACKEND + textwrap.dedent("""
        x = npusim.tensor([[1.0, 2.0], [3.0, 4.0]])
        y = x.foo()
        print(y.device, y.is_foo, x.is_foo, y.untyped_storage().is_foo, x.untyped_storage().is_foo)
        print((y + y).device, (y + y).cpu().tolist())
        print(x.foo(1).device, x.foo("foo:1").device, npusim.ones(2, device="foo:1").device)
        print(npusim.foo is foo_module, sys.modules["npusim.foo"] is foo_module)
        try:
            x.foo("cpu")
        except RuntimeError as e:
            print(e)
        try:
            y + x
        except RuntimeError as e:
            print(type(e).__name__)
    """))
    assert out.splitlines() == [
        "foo:0 True False True False",
        "foo:0 [[2.0, 4.0], [6.0, 8.0]]",
        "foo:1 foo:1 foo:1",
        "True True",
        "Invalid device, must be foo device",
        "RuntimeError",
    ]


def test_privateuse1_kernels_fallback_and_missing_kernel_message():
    out = output_of(FAKE_BACKEND + textwrap.dedent("""
        defs = Library("myops", "DEF")
        defs.define("scale(Tensor x, float k) -> Tensor")
        defs.define("shift(Tensor x, float k) -> Tensor")
        defs.impl("scale", lambda x, k: x * k, "CPU")
        defs.impl("scale", lambda x, k: x * (10 * k), "PrivateUse1")
        defs.impl("shift", lambda x, k: x + k, "CPU")
        y = npusim.tensor([1.0, 2.0]).foo()
        print(npusim.ops.myops.scale(y, 2.0).cpu().tolist())
        try:
            npusim.ops.myops.shift(y, 1.0)
        except NotImplementedError as e:
            print(str(e).split(". This")[0])

        # a boxed CPU fallback: copy to the cpu, run there, copy back
        def move(value, how):
            if isinstance(value, npusim.Tensor):
                return how(value)
            if isinstance(value, (list, tuple)):
                return type(value)(move(v, how) for v in value)
            return value

        def to_cpu_and_back(op, *args, **kwargs):
            out = op(*move(args, npusim.Tensor.cpu), **{k: move(v, npusim.Tensor.cpu) for k, v in kwargs.items()})
            return move(out, npusim.Tensor.foo)

        fallback = Library("_", "IMPL")
        fallback.fallback(to_cpu_and_back, "PrivateUse1")
        r = npusim.ops.myops.shift(y, 1.0)
        print(r.device, r.cpu().tolist())
        s = npusim.sort(npusim.tensor([3.0, 1.0, 2.0]).foo()).values  # left out of the kernel table
        print(s.device, s.cpu().tolist())
        fallback._destroy()
        try:
            npusim.ops.myops.shift(y, 1.0)
        except NotImplementedError as e:
            print("gone with its library")
    """))
    assert out.splitlines() == [
        "[20.0, 40.0]",
        "Could not run 'myops::shift' with arguments from the 'foo' backend",
        "foo:0 [2.0, 3.0]",
        "foo:0 [1.0, 2.0, 3.0]",
        "gone with its library",
    ]


# --- _register_device_module and generate_methods_for_privateuse1_backend --------------------------------

REGISTRATION_SCRIPT = textwrap.dedent("""
    import sys, types
    if sys.argv[1] == "torch":
        import torch as m
        from torch.utils import generate_methods_for_privateuse1_backend as generate
        from torch.utils import rename_privateuse1_backend as rename
        for_module = True
    else:
        import npusim as m
        from npusim.utils import generate_methods_for_privateuse1_backend as generate
        from npusim.utils import rename_privateuse1_backend as rename
        for_module = hasattr(getattr(m, "nn", None), "Module")

    def show(label, f):
        try:
            print(label, "OK", repr(f()))
        except Exception as e:
            print(label, type(e).__name__, str(e).replace("torch", "npusim"))

    module = types.ModuleType("foo_runtime")
    show("register before rename", lambda: m._register_device_module("foo", module))
    rename("foo")
    show("register unknown type", lambda: m._register_device_module("bar", module))
    show("register", lambda: m._register_device_module("foo", module))
    show("attribute", lambda: getattr(m, "foo") is module and sys.modules[m.__name__ + ".foo"] is module)
    show("register twice", lambda: m._register_device_module("foo", types.ModuleType("again")))
    show("register by PrivateUse1 name", lambda: m._register_device_module("privateuseone", module))
    show("generate", lambda: generate(for_tensor=True, for_module=for_module, for_storage=True,
                                      for_packed_sequence=False))
    x = m.ones(2)
    show("is_foo", lambda: (x.is_foo, type(m.Tensor.__dict__["is_foo"]).__name__, m.Tensor.foo.__name__))
    show("storage is_foo", lambda: x.untyped_storage().is_foo)
    show("wrong device", lambda: x.foo("cpu"))
    show("generate twice", lambda: generate(for_tensor=True, for_module=False, for_storage=False,
                                            for_packed_sequence=False))
    show("generate storage twice", lambda: generate(for_tensor=False, for_module=False, for_storage=True,
                                                    for_packed_sequence=False))
""")


def _normalise(text: str) -> str:
    """Class paths differ between the two libraries; the rest of each line must not."""
    for old, new in (("<class 'npusim.core.tensor.Tensor'>", "<Tensor>"), ("<class 'npusim.Tensor'>", "<Tensor>"),
                     ("<class 'npusim.core.c10.storage.UntypedStorage'>", "<Storage>"),
                     ("<class 'npusim.storage._StorageBase'>", "<Storage>"),
                     # npusim lists the renamed backend among the valid device types too (torch: privateuseone only)
                     ("privateuseone, foo device type", "privateuseone device type")):
        text = text.replace(old, new)
    return text


def test_register_device_module_and_generated_methods():
    out = output_of(NO_BACKEND + REGISTRATION_SCRIPT, "npusim")
    assert "register before rename RuntimeError Expected one of" in out
    assert "register unknown type RuntimeError Expected one of" in out
    assert "register OK None" in out and "attribute OK True" in out
    assert "register twice RuntimeError The runtime module of 'foo' has already been registered with " \
           "'<module 'foo_runtime'>'" in out
    assert "register by PrivateUse1 name RuntimeError The runtime module of 'foo' has already been registered" in out
    assert "generate OK None" in out
    assert "is_foo OK (False, 'property', 'foo')" in out
    assert "storage is_foo OK False" in out
    assert "wrong device RuntimeError Invalid device, must be foo device" in out
    assert "generate twice RuntimeError The custom device module of <class 'npusim.core.tensor.Tensor'> has " \
           "already been registered with is_foo" in out
    assert "generate storage twice RuntimeError The custom device module of " \
           "<class 'npusim.core.c10.storage.UntypedStorage'> has already been registered with is_foo" in out


@pytest.mark.oracle
def test_register_device_module_and_generated_methods_match_torch(torch):
    ours = _normalise(output_of(NO_BACKEND + REGISTRATION_SCRIPT, "npusim")).splitlines()
    theirs = _normalise(output_of(REGISTRATION_SCRIPT, "torch")).splitlines()
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a == b


# --- python -m npusim -------------------------------------------------------------------------------------

def test_info_reports_versions_devices_and_threads():
    import ml_dtypes
    import numpy

    import npusim
    r = run_fresh("", "info", module=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith(f"npusim {npusim.__version__}\n")
    assert f"Python {sys.version.split()[0]}" in out
    assert f"NumPy {numpy.__version__}" in out and f"ml_dtypes {ml_dtypes.__version__}" in out
    assert "\nDevices:\n  cpu\n" in out
    assert f"os.cpu_count(): {os.cpu_count()}" in out
    assert "NumPy BLAS threads:" in out


def test_info_asks_the_registered_backend_module():
    out = output_of(FAKE_BACKEND + "from npusim.__main__ import main\nmain(['info'])\n")
    assert "  foo (PrivateUse1): 2 devices, mode: pretend\n    foo:0  Fake Foo Accelerator\n" \
           "    foo:1  Fake Foo Accelerator\n" in out


def test_info_without_any_backend():
    out = output_of(NO_BACKEND + "from npusim.__main__ import main\nmain(['info'])\n")
    assert "Devices:\n  cpu\n  PrivateUse1: no backend registered\n" in out


def test_help_lists_subcommands_and_unknown_ones_exit_2():
    r = run_fresh("", "--help", module=True)
    assert r.returncode == 0 and "info" in r.stdout and "usage: python -m npusim" in r.stdout
    r = run_fresh("", "bogus", module=True)
    assert r.returncode == 2
    assert "invalid choice: 'bogus'" in r.stderr
