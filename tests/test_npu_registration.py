"""How the npu plugs in: each PrivateUse1 registration step ``import npusim`` performs, checked
from the outside, and the once-per-process rules a third party meets in a fresh interpreter
(the name is set once, the generated methods and the device module exist once).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import npusim
from conftest import host
from npusim.core.c10.device import privateuse1_backend_name

ROOT = Path(__file__).resolve().parents[1]
aten = npusim.ops.aten


def output_of(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env["PYTHONPATH"] = str(ROOT)
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_privateuse1_is_named_npu():
    assert privateuse1_backend_name() == "npu"
    assert npusim.device("privateuseone:1") is npusim.device("npu:1")


def test_device_module_is_registered_as_npusim_npu():
    assert sys.modules["npusim.npu"] is npusim.npu
    assert npusim.npu.__name__ == "npusim.backend.device_module"


def test_methods_are_generated_for_tensor_storage_and_module():
    assert isinstance(npusim.Tensor.__dict__["is_npu"], property)
    assert callable(npusim.Tensor.npu)
    assert isinstance(npusim.UntypedStorage.__dict__["is_npu"], property)
    lin = npusim.nn.Linear(2, 3).npu(1)
    assert lin.weight.device == npusim.device("npu:1") and lin.bias.is_npu
    assert isinstance(lin.weight, npusim.nn.Parameter)


def test_generated_tensor_npu_refuses_other_device_types():
    with pytest.raises(RuntimeError, match="^Invalid device, must be npu device$"):
        npusim.ones(1).npu("cpu")


# --- kernels: OpenReg's minimal set, the common ops, and the ones left to the fallback -------------------

OPENREG_MINIMAL = [aten.empty.memory_format, aten.empty_strided.default, aten.as_strided.default, aten.view.default,
                   aten.resize_.default, aten.copy_.default, aten._local_scalar_dense.default]
COMMON = [aten.add.Tensor, aten.mul.Tensor, aten.mm.default, aten.sum.dim_IntList, aten.index.Tensor,
          aten.cat.default, aten.convolution.default, aten.native_layer_norm.default, aten.gelu.default,
          aten.sigmoid.default, aten.linalg_vector_norm.default]
LEFT_TO_FALLBACK = [aten.sort.stable, aten.argsort.stable, aten.topk.default, aten._unique2.default,
                    aten.nonzero.default, aten.masked_select.default]


@pytest.mark.parametrize("op", OPENREG_MINIMAL + COMMON, ids=lambda op: op.name())
def test_npu_kernels_are_registered_for_privateuse1(op):
    assert op.has_kernel_for_dispatch_key("PrivateUse1")


@pytest.mark.parametrize("op", LEFT_TO_FALLBACK, ids=lambda op: op.name())
def test_some_ops_are_left_to_the_fallback(op):
    assert not op.has_kernel_for_dispatch_key("PrivateUse1")
    assert op.has_kernel_for_dispatch_key("CPU")


def test_the_minimal_kernels_work_on_the_npu():
    e = npusim.empty(2, 3, device="npu")
    assert e.shape == (2, 3) and e.is_npu
    s = npusim.empty_strided((2, 3), (1, 2), device="npu")
    assert s.stride() == (1, 2)
    x = npusim.arange(6.0).npu()
    assert host(x.as_strided((2, 2), (1, 2))).tolist() == [[0.0, 2.0], [1.0, 3.0]]
    assert host(x.view(3, 2)).tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    x.resize_(2, 2)
    assert x.shape == (2, 2) and x.is_npu
    x.copy_(npusim.ones(2, 2))
    assert x.sum().item() == 4.0 and isinstance(x[0, 0].item(), float)


# --- a third party in a fresh interpreter --------------------------------------------------------------------

def test_registration_happens_once_per_process():
    out = output_of("""
        import types
        import npusim
        from npusim.utils import generate_methods_for_privateuse1_backend, rename_privateuse1_backend

        def show(label, f):
            try:
                print(label, "OK", f())
            except Exception as e:
                print(label, type(e).__name__, e)

        show("rename again, same name", lambda: rename_privateuse1_backend("npu"))
        show("rename to another name", lambda: rename_privateuse1_backend("xpu2"))
        show("generate again", generate_methods_for_privateuse1_backend)
        show("generate module methods again", lambda: generate_methods_for_privateuse1_backend(
            for_tensor=False, for_module=True, for_storage=False))
        show("register the device module again", lambda: npusim._register_device_module(
            "npu", types.ModuleType("other")))
        show("still works", lambda: npusim.ones(2).npu().device)
    """).splitlines()
    assert out[0] == "rename again, same name OK None"
    assert out[1] == ("rename to another name RuntimeError torch.register_privateuse1_backend() has already been "
                      "set! Current backend: npu")
    assert out[2] == ("generate again RuntimeError The custom device module of <class 'npusim.core.tensor.Tensor'> "
                      "has already been registered with is_npu")
    assert out[3] == ("generate module methods again RuntimeError The custom device module of "
                      "<class 'npusim.nn.modules.module.Module'> has already been registered with npu")
    assert out[4].startswith("register the device module again RuntimeError The runtime module of 'npu' has "
                             "already been registered with '<module 'npusim.backend.device_module'")
    assert out[5] == "still works OK npu:0"


@pytest.mark.oracle
def test_registration_errors_match_torch(torch):
    script = """
        import types, sys
        if sys.argv[1] == "torch":
            import torch as m
            from torch.utils import generate_methods_for_privateuse1_backend as generate
            from torch.utils import rename_privateuse1_backend as rename
            rename("npu")
            m._register_device_module("npu", types.ModuleType("npu_runtime"))
            generate()
        else:
            import npusim as m
            from npusim.utils import generate_methods_for_privateuse1_backend as generate
            from npusim.utils import rename_privateuse1_backend as rename
        for label, f in [("same", lambda: rename("npu")), ("other", lambda: rename("xpu2")),
                         ("generate", lambda: generate(for_tensor=True, for_module=False, for_storage=False))]:
            try:
                print(label, "OK", f())
            except Exception as e:
                print(label, type(e).__name__, str(e).replace("npusim.core.tensor.Tensor", "torch.Tensor"))
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_")}
    env["PYTHONPATH"] = str(ROOT)

    def run(which):
        r = subprocess.run([sys.executable, "-c", textwrap.dedent(script), which], capture_output=True, text=True,
                           timeout=120, cwd=ROOT, env=env)
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert run("npusim") == run("torch")


def test_a_fresh_import_registers_everything_without_touching_the_device():
    out = output_of("""
        import npusim
        from npusim.core.c10.device_hooks import get_device_hooks
        print(npusim.npu.is_initialized(), get_device_hooks("npu") is not None)
        print(npusim.ones(1).npu().is_npu, npusim.npu.is_initialized())
    """)
    assert out.split() == ["False", "True", "True", "True"]
