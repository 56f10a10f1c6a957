"""The two test-suite checks: the ``gpu``-marked tests, and the npu tests with the npu in cuda mode.

Both run pytest in child processes. The npu suite skips the tests parametrized for
the cpu device (``npu_test_selection``), the ``gpu`` tests (the other check runs
them) and, once the marker exists, the ``emulation_only`` tests. Test files that
read device-wide figures (free memory, utilisation, OOM) run first and alone; the
rest run in parallel shards that share the remaining time.
"""
from __future__ import annotations

import importlib.util
import re
import time

from .environment import REPO, child_env
from .pytest_runs import run_parallel, summarise
from .results import FAIL, PASS, SKIP, Result

TESTS = REPO / "tests"
# The proof's own rehearsal is no npu test: it runs the proof against the stand-in.
NOT_NPU_TESTS = {"test_gpu_proof_rehearsal.py"}
# Figures that other processes on the device change: tests reading them must not share the GPU.
DEVICE_WIDE = re.compile(r"mem_get_info|OutOfMemoryError|set_per_process_memory_fraction|utilization\(")
DEVICE_WIDE_SHARE = 0.35      # of the suite's time, at most, for the files that run alone


def marker_registered(name: str) -> bool:
    """Whether pyproject.toml registers the pytest marker ``name``."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
        markers = tomllib.loads(text)["tool"]["pytest"]["ini_options"].get("markers", [])
        return any(m.split(":")[0].strip() == name for m in markers)
    except ImportError:     # Python 3.10: no tomllib
        return re.search(rf'^\s*"{re.escape(name)}\s*:', text, re.MULTILINE) is not None


def _result(name: str, summary: dict, seconds: float, extra_note: str = "", require_passes=False) -> Result:
    c = summary["counts"]
    figure = f"{c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"
    if c["errors"]:
        figure += f", {c['errors']} errors"
    problems = summary["incomplete_runs"]
    notes = []
    if summary["failures"]:
        notes.append("first failures: " + "; ".join(f["id"] for f in summary["failures"][:3]))
    notes += problems
    if require_passes and c["passed"] == 0:
        notes.append("no test passed")
    bad = c["failed"] or c["errors"] or problems or (require_passes and c["passed"] == 0)
    if extra_note:
        notes.append(extra_note)
    return Result(name, FAIL if bad else PASS, figure=figure, note="; ".join(notes), details=summary,
                  seconds=round(seconds, 1))


def _without_pytest(name: str) -> Result | None:
    if importlib.util.find_spec("pytest") is None:
        return Result(name, SKIP, note="pytest is not installed")
    return None


def gpu_tests(ctx, budget_s: float) -> Result:
    """``python -m pytest -m gpu`` as a user runs it (the npu mode probed, not forced)."""
    missing = _without_pytest("gpu_tests")
    if missing:
        return missing
    start = time.perf_counter()
    runs = run_parallel({"gpu tests": ["-m", "gpu"]}, child_env(None), budget_s)
    summary = summarise(runs)
    summary["command"] = "python -m pytest -m gpu"
    return _result("gpu_tests", summary, time.perf_counter() - start, require_passes=not ctx.standin)


def _npu_test_files() -> tuple[list, list]:
    """(files reading device-wide figures, the others), largest first."""
    files = sorted((p for p in TESTS.glob("test_*.py") if p.name not in NOT_NPU_TESTS),
                   key=lambda p: p.stat().st_size, reverse=True)
    device_wide = [p for p in files if DEVICE_WIDE.search(p.read_text(encoding="utf-8", errors="replace"))]
    return device_wide, [p for p in files if p not in device_wide]


def _shards(files: list, count: int) -> list:
    """Files dealt into ``count`` shards of similar size (largest first, each to the lightest shard)."""
    shards = [[] for _ in range(max(1, min(count, len(files))))]
    weights = [0] * len(shards)
    for p in files:
        i = weights.index(min(weights))
        shards[i].append(p)
        weights[i] += p.stat().st_size
    return [s for s in shards if s]


def _relative(files: list) -> list:
    return [str(p.relative_to(REPO)) for p in files]


def npu_suite(ctx, budget_s: float, jobs: int) -> Result:
    missing = _without_pytest("npu_suite_cuda")
    if missing:
        return missing
    start = time.perf_counter()
    marker = "not gpu"
    if marker_registered("emulation_only"):
        marker += " and not emulation_only"
    common = ["-p", "gpu_proof.npu_test_selection", "-m", marker]
    env = child_env("cuda")
    device_wide, others = _npu_test_files()
    runs = []
    if device_wide:
        runs += run_parallel({"device-wide files": common + _relative(device_wide)}, env,
                             budget_s * DEVICE_WIDE_SHARE)
    left = budget_s - (time.perf_counter() - start)
    shard_files = _shards(others, jobs)
    shards = {f"shard {i + 1}/{len(shard_files)}": common + _relative(files) for i, files in enumerate(shard_files)}
    runs += run_parallel(shards, env, max(left, 10))
    summary = summarise(runs)
    summary.update(command=f"NPUSIM_BACKEND=cuda python -m pytest {' '.join(common[:3])} '{marker}' FILES...",
                   marker_expression=marker, deselected_cpu_parametrized="device parameter == 'cpu'",
                   device_wide_files=[p.name for p in device_wide], shards=len(shards))
    return _result("npu_suite_cuda", summary, time.perf_counter() - start,
                   extra_note=f"NPUSIM_BACKEND=cuda, -m '{marker}', cpu-parametrized tests deselected",
                   require_passes=True)
