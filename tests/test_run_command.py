"""``python -m npusim run``: unmodified PyTorch programs (tests/torch_programs) run with torch resolved to npusim.

Each program is ordinary PyTorch code, run in a child process as a user would run it. Their losses on the npu
equal those on the cpu, and (oracle) equal torch's when both start from the weights and data torch saved.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "torch_programs"
TRAINING = ["regression", "convnet", "char_lstm", "transformer_lm", "gpt", "dcgan", "sequence_prediction"]
STEPS = {"sequence_prediction": 2}   # LBFGS: each step evaluates the model up to twenty times


def _env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPUSIM_") or k == "NPUSIM_BACKEND"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


def run(args, cwd=None, check=True):
    r = subprocess.run([sys.executable] + args, capture_output=True, text=True, timeout=300,
                       cwd=cwd or ROOT, env=_env())
    if check:
        assert r.returncode == 0, r.stderr[-4000:]
    return r


def records(stdout: str) -> list:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def losses(stdout: str) -> list:
    return [r["loss"] for r in records(stdout) if "loss" in r]


def npusim_run(program, *args, device_map=None):
    pre = ["-m", "npusim", "run"] + (["--device-map", device_map] if device_map else [])
    return run(pre + [str(PROGRAMS / f"{program}.py"), *args])


# --- programs of each shape run, and train --------------------------------------------------------------------

def _has_torch() -> bool:
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def assert_trains(program, device, got, steps):
    assert len(got) == steps and all(np.isfinite(got)), got
    if program != "dcgan":   # a generator's loss rises while its discriminator learns
        assert got[-1] < got[0], f"{program} did not learn on {device}: {got}"


@pytest.mark.parametrize("program", TRAINING + ["vae"])
def test_programs_run_unmodified_and_train(program, device):
    if program != "vae" and _has_torch():
        pytest.skip("the oracle test runs this program and checks it against torch")
    steps = STEPS.get(program, 4)
    assert_trains(program, device, losses(npusim_run(program, "--device", device, "--steps", str(steps)).stdout),
                  steps)


@pytest.mark.parametrize("program", TRAINING)
def test_npu_losses_equal_cpu_losses(program):
    import npusim
    if not npusim.npu.is_available():
        pytest.skip("no npu")
    if _has_torch():
        pytest.skip("the oracle test holds each device's losses to torch's")
    steps = str(STEPS.get(program, 3))
    cpu = losses(npusim_run(program, "--device", "cpu", "--steps", steps).stdout)
    npu = losses(npusim_run(program, "--device", "npu", "--steps", steps).stdout)
    # the same kernels over the same float32 data; in cuda mode CuPy's reductions may sum in another order:
    # float32's eps (1.2e-7) times the ~100 terms a loss accumulates
    np.testing.assert_allclose(npu, cpu, rtol=1e-5)


_TORCH_RUNS: dict = {}


@pytest.mark.oracle
@pytest.mark.parametrize("program", TRAINING)
def test_losses_equal_torchs_from_the_same_weights(torch, program, device, tmp_path_factory):
    steps = str(STEPS.get(program, 4))
    if program not in _TORCH_RUNS:   # one torch run per program serves both devices
        init = tmp_path_factory.mktemp(program) / "init.pt"
        out = run([str(PROGRAMS / f"{program}.py"), "--save-init", str(init), "--steps", steps]).stdout
        _TORCH_RUNS[program] = (init, losses(out))
    init, theirs = _TORCH_RUNS[program]
    ours = losses(npusim_run(program, "--init", str(init), "--device", device, "--steps", steps).stdout)
    assert_trains(program, device, ours, int(steps))
    # float32 training from equal weights and data: the kernels sum in other orders than torch's (whose own
    # order depends on the CPU's vector width), so each loss may differ by float32's eps (1.2e-7) times the
    # ~100 terms it accumulates; seen: at most 3e-7 over four steps
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)


# --- a program written for CUDA ------------------------------------------------------------------------------

def test_device_map_runs_a_cuda_program_on_the_npu():
    import npusim
    if not npusim.npu.is_available():
        pytest.skip("no npu")
    got = records(npusim_run("cuda_style", device_map="cuda=npu").stdout)
    assert len(got) == 3 and all(r["cuda"] for r in got)
    assert {r["device"] for r in got} == {"npu:0"}
    assert {r["logits_dtype"] for r in got} == {"npusim.float16"}    # torch.cuda.amp.autocast ran on the npu
    assert got[0]["device_name"] == npusim.npu.get_device_name()
    assert got[-1]["loss"] < got[0]["loss"]


def test_without_a_device_map_a_cuda_program_takes_its_cpu_path():
    got = records(npusim_run("cuda_style").stdout)
    assert [r["device"] for r in got] == ["cpu"] * 3 and not any(r["cuda"] for r in got)
    assert {r["logits_dtype"] for r in got} == {"npusim.float32"}


def test_cuda_without_a_device_map_says_how_to_get_one(tmp_path):
    script = tmp_path / "needs_cuda.py"
    script.write_text("import torch\ntorch.ones(2).cuda()\n")
    r = run(["-m", "npusim", "run", str(script)], check=False)
    assert r.returncode == 1
    assert "AssertionError: Torch not compiled with CUDA enabled" in r.stderr
    assert "--device-map cuda=npu" in r.stderr


# --- as `python SCRIPT` and `python -m MODULE` ------------------------------------------------------------------

def test_the_program_sees_main_argv_and_path_as_python_gives_them(tmp_path):
    (tmp_path / "helper_mod.py").write_text("VALUE = 7\n")
    script = tmp_path / "show.py"
    script.write_text("import json, sys, torch, torch.nn.functional, torch.utils.data\n"
                      "import helper_mod\n"
                      "print(json.dumps({'name': __name__, 'argv': sys.argv, 'path0': sys.path[0],\n"
                      "                  'torch': torch.__name__, 'F': torch.nn.functional.relu.__module__,\n"
                      "                  'value': helper_mod.VALUE}))\n")
    got = records(run(["-m", "npusim", "run", str(script), "a", "--flag"], cwd=tmp_path.parent).stdout)[0]
    assert got["name"] == "__main__" and got["argv"] == [str(script), "a", "--flag"]
    assert got["path0"] == str(tmp_path) and got["value"] == 7
    assert got["torch"] == "torch" and got["F"].startswith("npusim.")


def test_dash_m_runs_a_module_with_the_current_directory_on_the_path(tmp_path):
    pkg = tmp_path / "trainer"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import json, sys, torch\n"
                                     "print(json.dumps({'name': __name__, 'argv': sys.argv[1:],\n"
                                     "                  'sum': torch.ones(3).sum().item()}))\n")
    got = records(run(["-m", "npusim", "run", "-m", "trainer", "x"], cwd=tmp_path).stdout)[0]
    assert got == {"name": "__main__", "argv": ["x"], "sum": 3.0}


def test_exit_codes_and_exceptions_pass_through(tmp_path):
    (tmp_path / "exits.py").write_text("raise SystemExit(3)\n")
    (tmp_path / "fails.py").write_text("import torch\nraise KeyError('boom')\n")
    assert run(["-m", "npusim", "run", str(tmp_path / "exits.py")], check=False).returncode == 3
    r = run(["-m", "npusim", "run", str(tmp_path / "fails.py")], check=False)
    assert r.returncode == 1 and r.stderr.rstrip().endswith("KeyError: 'boom'")


def test_a_torch_module_npusim_lacks_is_a_missing_module(tmp_path):
    script = tmp_path / "lacks.py"
    script.write_text("try:\n    import torch.nonexistent_part\nexcept ModuleNotFoundError as e:\n"
                      "    print(e.name, '|', e)\n")
    out = run(["-m", "npusim", "run", str(script)]).stdout
    assert out.startswith("torch.nonexistent_part | No module named 'torch.nonexistent_part'")
    assert "npusim.nonexistent_part" in out
    script.write_text("try:\n    import torch.fx\nexcept ModuleNotFoundError as e:\n    print(e)\n")
    assert "(torch.fx is deliberately out of scope for npusim" in run(["-m", "npusim", "run", str(script)]).stdout


def test_bad_invocations_say_what_is_wrong(tmp_path):
    r = run(["-m", "npusim", "run"], check=False)
    assert r.returncode == 2 and "a SCRIPT or -m MODULE to run is required" in r.stderr
    r = run(["-m", "npusim", "run", "--device-map", "cuda", "x.py"], check=False)
    assert r.returncode == 2 and "'cuda' is not TYPE=TYPE" in r.stderr
    r = run(["-m", "npusim", "run", "--device-map", "cuda=tpu", "x.py"], check=False)
    assert r.returncode == 2 and "Expected one of" in r.stderr
    r = run(["-m", "npusim", "run", str(tmp_path / "missing.py")], check=False)
    assert r.returncode == 2 and "can't open file" in r.stderr
    help_text = run(["-m", "npusim", "run", "--help"]).stdout
    assert "--device-map" in help_text and "NPUSIM_DEVICE_MEMORY" in help_text


# --- the device-type map itself (in this process) ----------------------------------------------------------------

def test_map_device_type_makes_cuda_mean_the_npu():
    import npusim
    from npusim.core.c10.device import map_device_type, mapped_device_types
    if not npusim.npu.is_available():
        pytest.skip("no npu")
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        npusim.ones(2).cuda()
    map_device_type("cuda", "npu")
    try:
        assert mapped_device_types() == {"cuda": "npu"}
        assert npusim.device("cuda:1") is npusim.device("npu:1")
        assert npusim.ones(2).cuda().device == npusim.device("npu:0")
        assert npusim.nn.Linear(2, 2).cuda(1).weight.device == npusim.device("npu:1")
        with npusim.autocast("cuda"):
            assert npusim.mm(npusim.ones(2, 2, device="cuda"), npusim.ones(2, 2, device="cuda")).dtype \
                == npusim.float16
    finally:
        map_device_type("cuda", None)
    with pytest.raises(RuntimeError, match="no backend for the 'cuda' device type.*--device-map cuda=npu"):
        npusim.zeros(1, device="cuda")
    with pytest.raises(ValueError, match="cannot map the device type 'npu'"):
        map_device_type("npu", "cpu")


def test_the_modules_programs_import_at_the_top_resolve(tmp_path):
    pytest.importorskip("tensorboardX")
    script = tmp_path / "top.py"
    script.write_text("import json, torch, torch.backends.cudnn as cudnn, torch.onnx\n"
                      "from torch.utils.tensorboard import SummaryWriter\n"
                      "cudnn.benchmark = True\n"
                      "torch.backends.cuda.matmul.allow_tf32 = True\n"
                      "with SummaryWriter(%r) as w:\n"
                      "    w.add_scalar('x', torch.tensor(1.0), 0)\n"
                      "print(json.dumps({'benchmark': torch.backends.cudnn.benchmark,\n"
                      "                  'built': torch.backends.cuda.is_built(),\n"
                      "                  'exporting': torch.onnx.is_in_onnx_export()}))\n" % str(tmp_path / "runs"))
    plain = records(run(["-m", "npusim", "run", str(script)]).stdout)[0]
    mapped = records(run(["-m", "npusim", "run", "--device-map", "cuda=npu", str(script)]).stdout)[0]
    assert plain == {"benchmark": True, "built": False, "exporting": False}
    assert mapped["built"] is True
    assert list((tmp_path / "runs").glob("events.out.tfevents.*"))

