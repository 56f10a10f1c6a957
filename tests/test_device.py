"""``npusim.device``: parsing, errors, interning, equality, pickling, and the PrivateUse1 rename.

Renaming PrivateUse1 happens once per process, so those tests run in a fresh
interpreter where the npu backend is left out (its package is replaced by an empty
module), and compare what they print with the same script run against torch.
"""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import npusim
from npusim.core.c10.device import privateuse1_backend_name

ROOT = Path(__file__).resolve().parents[1]
# Leaves the npu backend out of a fresh process, so PrivateUse1 is still unnamed there.
NO_BACKEND = "import sys, types\nsys.modules['npusim.backend'] = types.ModuleType('npusim.backend')\n"


def run_fresh(code: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                       cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


# --- parsing -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,typ,index", [
    ("cpu", "cpu", None), ("cpu:0", "cpu", 0), ("cpu:1", "cpu", 1), ("cuda", "cuda", None), ("cuda:7", "cuda", 7),
    ("meta", "meta", None), ("mps:0", "mps", 0), ("xla", "xla", None), ("cuda:32767", "cuda", 32767),
])
def test_valid_strings(text, typ, index):
    d = npusim.device(text)
    assert (d.type, d.index) == (typ, index)
    assert str(d) == text
    assert repr(d) == (f"device(type='{typ}')" if index is None else f"device(type='{typ}', index={index})")


# torch's list, with the backend's own name after privateuseone once PrivateUse1 is renamed (npu)
TORCH_ONE_OF = ("Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, "
                "lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of device string: ")
_BACKEND = privateuse1_backend_name()
EXPECTED_ONE_OF = TORCH_ONE_OF if _BACKEND == "privateuseone" else \
    TORCH_ONE_OF.replace("privateuseone device", f"privateuseone, {_BACKEND} device")


@pytest.mark.parametrize("text,message", [
    ("", "Device string must not be empty"),
    ("CPU", EXPECTED_ONE_OF + "CPU"), ("foo:0", EXPECTED_ONE_OF + "foo"), ("_", EXPECTED_ONE_OF + "_"),
    ("cpu:", "Invalid device string: 'cpu:'"), ("cpu:-1", "Invalid device string: 'cpu:-1'"),
    ("cpu:01", "Invalid device string: 'cpu:01'"), ("cpu: 0", "Invalid device string: 'cpu: 0'"),
    (" cpu", "Invalid device string: ' cpu'"), ("cpu ", "Invalid device string: 'cpu '"),
    ("cpu:0:0", "Invalid device string: 'cpu:0:0'"), ("cpu:a", "Invalid device string: 'cpu:a'"),
    ("cuda:1a", "Invalid device string: 'cuda:1a'"), (":0", "Invalid device string: ':0'"),
    ("0", "Invalid device string: '0'"), ("1cuda", "Invalid device string: '1cuda'"),
    # torch wraps such indices around silently; npusim refuses them
    ("cuda:32768", "Could not parse device index '32768' in device string 'cuda:32768'"),
    ("cuda:100000", "Could not parse device index '100000' in device string 'cuda:100000'"),
])
def test_invalid_strings(text, message):
    with pytest.raises(RuntimeError) as info:
        npusim.device(text)
    assert str(info.value) == message


ORACLE_STRINGS = ["cpu", "cpu:0", "cpu:1", "cuda", "cuda:0", "cuda:12", "meta", "mps:0", "xla", "hpu:3", "mtia",
                  "ipu", "xpu:2", "lazy", "vulkan", "fpga", "ve", "hip", "ideep", "opencl", "opengl", "maia",
                  "CPU", "Cpu", "cpu:", "cpu:-1", "cpu:01", "cpu:00", "cpu: 0", " cpu", "cpu ", "cpu:0:0", "cpu:a",
                  "cpu:1.5", ":0", "0", "", "foo", "foo:0", "cu_da", "cuda0", "cpu::0", "cpu,0", "cuda:1a",
                  "1cuda", "_", "cpu-0", "npu:0x"]


def _outcome(fn):
    try:
        return "OK " + repr(fn())
    except Exception as e:
        # npusim also lists its backend's name among the valid types (torch lists only privateuseone)
        return f"{type(e).__name__}: {e}".replace("torch.device", "npusim.device").replace(
            f"privateuseone, {_BACKEND} device type", "privateuseone device type")


@pytest.mark.oracle
def test_strings_parse_like_torch(torch):
    for text in ORACLE_STRINGS:
        assert _outcome(lambda: npusim.device(text)) == _outcome(lambda: torch.device(text)), text


@pytest.mark.oracle
@pytest.mark.parametrize("args", [("cpu", 0), ("cuda", 1), ("cuda", -1), ("cuda:0", 1), ("cuda", "1"),
                                  ("cuda", 1.0), ("cuda", True), ("cpu", None), (-1,), (1.5,), (None,), (True,),
                                  (), ("cuda", 1, 2)])
def test_type_and_index_arguments_like_torch(torch, args):
    assert _outcome(lambda: npusim.device(*args)) == _outcome(lambda: torch.device(*args))


@pytest.mark.oracle
def test_device_arguments_like_torch(torch):
    assert _outcome(lambda: npusim.device(npusim.device("cuda:1"))) == \
        _outcome(lambda: torch.device(torch.device("cuda:1")))
    assert _outcome(lambda: npusim.device(npusim.device("cuda:1"), 2)) == \
        _outcome(lambda: torch.device(torch.device("cuda:1"), 2))
    assert _outcome(lambda: npusim.device(type="cuda", index=1)) == \
        _outcome(lambda: torch.device(type="cuda", index=1))


def test_index_validation():
    assert npusim.device("cuda", 3) is npusim.device("cuda:3")
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        npusim.device("cuda", -1)
    with pytest.raises(RuntimeError, match="^Device index must not be negative$"):
        npusim.device(-1)
    with pytest.raises(TypeError, match=r"^device\(\): argument 'index' \(position 2\) must be int, not str$"):
        npusim.device("cuda", "1")
    with pytest.raises(TypeError, match=r"^device\(\): argument 'index' \(position 2\) must be int, not bool$"):
        npusim.device("cuda", True)
    with pytest.raises(RuntimeError, match="^type \\(string\\) must not include an index because index was passed "
                                           "explicitly: cuda:0$"):
        npusim.device("cuda:0", 1)
    with pytest.raises(RuntimeError, match="^Device index 32768 is out of range$"):
        npusim.device("cuda", 2 ** 15)


def test_invalid_argument_combinations():
    with pytest.raises(TypeError, match=r"^device\(\) received an invalid combination of arguments - got \(\), "):
        npusim.device()
    with pytest.raises(TypeError, match=r"got \(float\), but expected one of:\n \* \(npusim.device device\)\n"
                                        r"      didn't match because some of the arguments have invalid types: "
                                        r"\(!float!\)\n \* \(str type, int index = -1\)\n$"):
        npusim.device(1.5)
    with pytest.raises(TypeError, match=r"got \(str, int, int\)"):
        npusim.device("cuda", 1, 2)
    with pytest.raises(TypeError, match=r"^device\(\): argument 'type' \(position 1\) must be str, not "
                                        r"npusim.device$"):
        npusim.device(npusim.device("cpu"), 0)


# --- identity, equality, hashing, pickling --------------------------------------------------------------

def test_devices_are_interned():
    assert npusim.device("cuda", 0) is npusim.device("cuda:0") is npusim.device(npusim.device("cuda:0"))
    assert npusim.device("cpu") is npusim.device("cpu")
    assert npusim.device("cpu") is not npusim.device("cpu:0")


def test_equality_and_hash():
    assert npusim.device("cuda:0") == npusim.device("cuda", 0)
    assert npusim.device("cpu") != npusim.device("cpu:0")
    assert npusim.device("cpu") != "cpu"
    assert len({npusim.device("cuda:0"), npusim.device("cuda", 0), npusim.device("cuda")}) == 2
    assert hash(npusim.device("cuda:1")) == hash(npusim.device("cuda", 1))


def test_pickle_and_copy_keep_the_interned_object():
    for d in (npusim.device("cpu"), npusim.device("cuda:3"), npusim.device("meta")):
        assert pickle.loads(pickle.dumps(d)) is d
        assert copy.copy(d) is d and copy.deepcopy(d) is d


@pytest.mark.oracle
def test_pickled_form_matches_torch(torch):
    ours, theirs = npusim.device("cuda:3").__reduce__(), torch.device("cuda:3").__reduce__()
    assert ours[1] == theirs[1] == ("cuda", 3)
    assert npusim.device("cpu").__reduce__()[1] == torch.device("cpu").__reduce__()[1]


def test_devices_are_immutable():
    d = npusim.device("cuda:1")
    with pytest.raises(AttributeError, match="^attribute 'index' of 'npusim.device' objects is not writable$"):
        d.index = 3
    with pytest.raises(AttributeError, match="^attribute 'type' of 'npusim.device' objects is not writable$"):
        d.type = "cpu"
    with pytest.raises(AttributeError, match="^'npusim.device' object has no attribute 'foo'$"):
        d.foo = 1
    assert npusim.device("cuda:1").index == 1


@pytest.mark.oracle
def test_immutability_messages_match_torch(torch):
    for attr in ("index", "type", "foo"):
        ours = _outcome(lambda: setattr(npusim.device("cuda:1"), attr, 3))
        theirs = _outcome(lambda: setattr(torch.device("cuda:1"), attr, 3))
        assert ours.replace("npusim.device", "torch.device") == theirs.replace("npusim.device", "torch.device")


def test_device_as_default_device_context():
    with npusim.device("cpu"):
        assert npusim.ones(1).device is npusim.device("cpu")


def test_current_backend_name_is_a_device_type():
    name = privateuse1_backend_name()
    assert npusim.device("privateuseone").type == name
    assert npusim.device(f"{name}:0") is npusim.device("privateuseone", 0)


# --- renaming PrivateUse1 (once per process) -------------------------------------------------------------

RENAME_SCRIPT = textwrap.dedent("""
    import pickle, sys
    if sys.argv[1] == "torch":
        import torch as m
        from torch.utils import rename_privateuse1_backend as rename
    else:
        import npusim as m
        from npusim.utils import rename_privateuse1_backend as rename

    def show(label, f):
        try:
            print(label, "OK", repr(f()))
        except Exception as e:
            print(label, type(e).__name__, str(e).replace("torch.device", "npusim.device"))

    show("foo before rename", lambda: m.device("foo:0"))
    show("accelerator before rename", lambda: m.device(0))
    show("rename non-str", lambda: rename(3))
    show("rename in-tree", lambda: rename("cuda"))
    show("rename cpu", lambda: rename("cpu"))
    show("rename", lambda: rename("foo"))
    show("rename same", lambda: rename("foo"))
    show("rename other", lambda: rename("bar"))
    show("rename privateuseone", lambda: rename("privateuseone"))
    show("rename in-tree after", lambda: rename("cuda"))
    show("privateuseone:1", lambda: m.device("privateuseone:1"))
    show("foo:1", lambda: m.device("foo:1"))
    show("foo", lambda: m.device("foo"))
    show("equal", lambda: m.device("privateuseone:1") == m.device("foo:1"))
    show("type and str", lambda: (m.device("privateuseone", 1).type, str(m.device("privateuseone", 1))))
    show("accelerator", lambda: m.device(1))
    show("pickle", lambda: pickle.loads(pickle.dumps(m.device("foo:2"))))
    show("bar", lambda: m.device("bar:0"))
""")


def test_rename_privateuse1_backend_once_per_process():
    text = run_fresh(NO_BACKEND + RENAME_SCRIPT, "npusim")
    assert "rename OK None" in text and "rename same OK None" in text
    assert "rename other RuntimeError torch.register_privateuse1_backend() has already been set! Current " \
           "backend: foo" in text
    assert "rename in-tree RuntimeError Cannot register privateuse1 backend with in-tree device name: cuda" in text
    assert "rename non-str RuntimeError _rename_privateuse1_backend expects a str, but got int" in text
    assert "privateuseone:1 OK device(type='foo', index=1)" in text
    assert "foo:1 OK device(type='foo', index=1)" in text
    assert "equal OK True" in text and "accelerator OK device(type='foo', index=1)" in text
    assert "pickle OK device(type='foo', index=2)" in text
    assert "accelerator before rename RuntimeError Cannot access accelerator device when none is available." in text


@pytest.mark.oracle
def test_rename_privateuse1_backend_matches_torch(torch):
    ours = run_fresh(NO_BACKEND + RENAME_SCRIPT, "npusim")
    theirs = run_fresh(RENAME_SCRIPT, "torch")
    # once renamed, npusim lists the backend's name among the valid device types too (torch: privateuseone only)
    assert ours == theirs.replace("privateuseone device type at start of device string: bar",
                                  "privateuseone, foo device type at start of device string: bar")


def test_rename_refuses_names_a_device_string_cannot_hold():
    out = run_fresh(NO_BACKEND + textwrap.dedent("""
        from npusim.utils import rename_privateuse1_backend
        for bad in ("my npu", "npu2", ""):
            try:
                rename_privateuse1_backend(bad)
            except RuntimeError as e:
                print(e)
    """))
    assert out.splitlines() == [
        f"Invalid privateuse1 backend name '{bad}': a device type name is made of letters and '_' only"
        for bad in ("my npu", "npu2", "")]
