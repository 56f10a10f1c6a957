"""Runs pytest in child processes with a timeout each, several at once, and sums up what they report."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from . import pytest_output
from .environment import REPO

# Failure ids kept in the JSON: enough to see the pattern, short enough to read.
MAX_FAILURES = 50
COMMON_ARGS = ["-p", "no:cacheprovider", "-vv", "-rfE", "--color=no"]


@dataclass
class PytestRun:
    label: str
    text: str
    returncode: int | None
    timed_out: bool
    seconds: float


def _start(args, env, log):
    env = dict(env, COLUMNS="400")     # the short summary's reasons are cut at the terminal width
    return subprocess.Popen([sys.executable, "-m", "pytest", *COMMON_ARGS, *args], cwd=REPO, env=env,
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc) -> None:
    """End the run and every process it started (tests start children of their own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_parallel(jobs: dict, env: dict, timeout_s: float) -> list:
    """Run ``{label: pytest args}`` at the same time, each stopped after ``timeout_s``; one PytestRun each."""
    with tempfile.TemporaryDirectory(prefix="gpu_proof_pytest_") as tmp:
        started = {}
        for i, (label, args) in enumerate(jobs.items()):
            log = open(os.path.join(tmp, f"{i}.log"), "w+", encoding="utf-8", errors="replace")
            started[label] = (_start(args, env, log), log, time.perf_counter())
        deadline = time.perf_counter() + timeout_s
        runs = []
        for label, (proc, log, start) in started.items():
            try:
                proc.wait(timeout=max(deadline - time.perf_counter(), 0.1))
                timed_out = False
            except subprocess.TimeoutExpired:
                _stop(proc)
                timed_out = True
            log.seek(0)
            runs.append(PytestRun(label, log.read(), proc.returncode, timed_out,
                                  round(time.perf_counter() - start, 1)))
            log.close()
    return runs


def summarise(runs: list) -> dict:
    """Summed counts, the first failures with their reasons, and the runs that timed out or crashed."""
    totals = dict.fromkeys(pytest_output.OUTCOMES, 0)
    failures, problems = [], []
    for run in runs:
        counts = pytest_output.summary_counts(run.text)
        if counts is None:
            counts = pytest_output.verbose_counts(run.text)
            where = pytest_output.last_started_test(run.text)
            why = f"timed out after {run.seconds:.0f} s" if run.timed_out else f"exited {run.returncode} early"
            problems.append(f"{run.label}: {why}" + (f" (last test started: {where})" if where else "")
                            + ("" if run.timed_out else f": {run.text.strip().splitlines()[-1:]}"))
        for k in totals:
            totals[k] += counts[k]
        failures += pytest_output.failures(run.text, MAX_FAILURES)
    return {"counts": totals, "failures": failures[:MAX_FAILURES], "incomplete_runs": problems,
            "runs": [{"label": r.label, "seconds": r.seconds, "returncode": r.returncode, "timed_out": r.timed_out}
                     for r in runs]}
