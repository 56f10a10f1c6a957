"""The GPU proof (``bench/gpu_proof.py``) rehearsed on the CuPy stand-in, so it is known to work before a GPU runs it.

Against the stand-in every device check runs for real; only the speed figures are
skipped (no GPU to time) and the test suites are left out (``--skip-suites``).
Without the stand-in and without a GPU the proof refuses to run (exit status 2).
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
STANDIN = ROOT / "tests" / "cupy_standin"
PROOF = ROOT / "bench" / "gpu_proof.py"

DEVICE_CHECKS = ["nvml", "dlpack", "events", "oom_recovery", "nccl_single_rank", "rng_parity"]
SPEED_CHECKS = ["speed_elementwise_bandwidth", "speed_matmul", "speed_small_latency", "speed_demo_step"]
SUITE_CHECKS = ["gpu_tests", "npu_suite_cuda"]
STANDIN_NOTE = "stand-in: no GPU timing"

pytestmark = pytest.mark.slow


def run_proof(args, pythonpath, **env):
    environ = {k: v for k, v in os.environ.items() if k != "NPUSIM_BACKEND"}
    environ.update(PYTHONPATH=os.pathsep.join(map(str, pythonpath)), **env)
    return subprocess.run([sys.executable, str(PROOF), *args], capture_output=True, text=True, cwd=ROOT,
                          env=environ, timeout=300)


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_proof") / "proof.json"
    run = run_proof(["--quick", "--skip-suites", "--json", str(out)], [STANDIN, ROOT])
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
    return run, report


def checks_of(report) -> dict:
    return {c["name"]: c for c in report["checks"]}


def test_the_rehearsal_exits_0_and_writes_its_json(rehearsal):
    run, report = rehearsal
    assert run.returncode == 0, run.stdout + run.stderr
    assert report is not None and report["platform"] == "standin" and report["passed"] is True


def test_every_check_is_in_the_json_and_the_table(rehearsal):
    run, report = rehearsal
    assert list(checks_of(report)) == DEVICE_CHECKS + SPEED_CHECKS + SUITE_CHECKS
    for name in DEVICE_CHECKS + SPEED_CHECKS + SUITE_CHECKS:
        assert name in run.stdout


def test_nothing_fails(rehearsal):
    _, report = rehearsal
    failed = {c["name"]: (c["note"], c["traceback"]) for c in report["checks"] if c["status"] == "fail"}
    assert failed == {}


def test_the_device_checks_run_for_real(rehearsal):
    checks = checks_of(rehearsal[1])
    for name in ("nvml", "dlpack", "events", "oom_recovery", "rng_parity"):
        assert checks[name]["status"] == "pass", checks[name]
    # the stand-in has no NCCL: the check says why it skips
    assert checks["nccl_single_rank"]["status"] in ("pass", "skip")
    if checks["nccl_single_rank"]["status"] == "skip":
        assert "nccl" in checks["nccl_single_rank"]["note"].lower()
    assert checks["oom_recovery"]["details"]["num_ooms_counted"] >= 2
    assert checks["events"]["details"]["elapsed_ms"] > 0


def test_speed_rows_skip_with_the_standin_note(rehearsal):
    checks = checks_of(rehearsal[1])
    for name in SPEED_CHECKS:
        assert checks[name]["status"] == "skip" and checks[name]["note"] == STANDIN_NOTE


def test_suites_are_skipped_on_request(rehearsal):
    checks = checks_of(rehearsal[1])
    for name in SUITE_CHECKS:
        assert checks[name]["status"] == "skip" and checks[name]["note"] == "--skip-suites"


def test_rng_parity_compared_every_draw(rehearsal):
    details = checks_of(rehearsal[1])["rng_parity"]["details"]
    assert details["compared_draws"] > 0 and details["compared_values"] > 0
    assert details["compared_draws"] == len(details["draws"])
    assert all(row["ok"] and row["compared"] > 0 for row in details["draws"].values())


def test_without_a_gpu_or_the_standin_it_exits_2_and_says_why(tmp_path):
    out = tmp_path / "proof.json"
    run = run_proof(["--quick", "--json", str(out)], [ROOT], CUDA_VISIBLE_DEVICES="")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "no GPU here" in run.stderr and "PYTHONPATH=tests/cupy_standin:." in run.stderr
    assert not out.exists()


# --- the proof's own arithmetic ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_proof():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        yield lambda name: importlib.import_module(f"gpu_proof.{name}")
    finally:
        sys.path.remove(str(ROOT / "bench"))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_ulp_distance_counts_representable_floats(gpu_proof, dtype):
    ulp_distance = gpu_proof("rng_compare").ulp_distance
    x = np.array([1.0, -2.5, 0.0, 3.0, np.nan, np.inf], dtype=dtype)
    up = np.nextafter(x, np.array(np.inf, dtype=dtype))
    assert ulp_distance(x, x).tolist() == [0] * 6
    assert ulp_distance(x[:4], up[:4]).tolist() == [1, 1, 1, 1]
    assert ulp_distance(np.nextafter(up[:4], np.array(np.inf, dtype=dtype)), x[:4]).tolist() == [2, 2, 2, 2]
    tiny = np.array([np.finfo(dtype).smallest_subnormal], dtype=dtype)
    assert ulp_distance(tiny, -tiny).tolist() == [2]      # across zero: +tiny, +0 / -0, -tiny
    assert ulp_distance(np.array([np.nan], dtype=dtype), np.array([1.0], dtype=dtype))[0] > 10 ** 6


def test_pytest_output_gives_counts_and_failures(gpu_proof):
    parse = gpu_proof("pytest_output")
    text = "\n".join([
        "tests/test_a.py::test_x[npu] PASSED [ 1%]",
        "tests/test_a.py::test_y[npu-add (no policy)] FAILED [ 2%]",
        "=========================== short test summary info ============================",
        "FAILED tests/test_a.py::test_y[npu-add (no policy)] - AssertionError: assert 1 == 2",
        "ERROR tests/test_b.py - ImportError: no module named x",
        "= 1 failed, 1 passed, 4850 deselected, 1 error in 12.34s ="])
    counts = parse.summary_counts(text)
    assert (counts["passed"], counts["failed"], counts["errors"], counts["deselected"]) == (1, 1, 1, 4850)
    assert parse.failures(text, 50) == [
        {"id": "tests/test_a.py::test_y[npu-add (no policy)]", "reason": "AssertionError: assert 1 == 2"},
        {"id": "tests/test_b.py", "reason": "ImportError: no module named x"}]
    cut_short = "tests/test_a.py::test_x[npu] PASSED [ 1%]\ntests/test_a.py::test_z[npu] "
    assert parse.summary_counts(cut_short) is None
    assert parse.verbose_counts(cut_short)["passed"] == 1
    assert parse.last_started_test(cut_short) == "tests/test_a.py::test_z[npu]"


def test_rng_comparison_bounds_follow_the_docs(gpu_proof):
    compare = gpu_proof("rng_compare").compare
    kinds = gpu_proof("rng_catalogue")
    x = np.linspace(0.5, 2.0, 100, dtype=np.float32)
    one_ulp, two_ulps = x.copy(), x.copy()
    one_ulp[3] = np.nextafter(x[3], np.float32(9))
    two_ulps[3] = np.nextafter(one_ulp[3], np.float32(9))

    def draw(values, state=b"s"):
        return {"values": values, "state": state}
    assert compare(kinds.BITWISE, draw(x), draw(x.copy()))["ok"]
    assert not compare(kinds.BITWISE, draw(x), draw(one_ulp))["ok"]
    assert not compare(kinds.BITWISE, draw(np.zeros(2)), draw(-np.zeros(2)))["ok"]     # -0.0 has other bits
    assert compare(kinds.ULPS, draw(x), draw(one_ulp))["ok"]
    assert not compare(kinds.ULPS, draw(x), draw(two_ulps))["ok"]
    assert not compare(kinds.ULPS, draw(x), draw(x, state=b"other"))["ok"]       # the offset moved differently
    assert compare(kinds.SAMPLER, draw(x), draw(two_ulps, state=b"other"))["ok"]
    assert not compare(kinds.BITWISE, {"error": "TypeError: no"}, draw(x))["ok"]
