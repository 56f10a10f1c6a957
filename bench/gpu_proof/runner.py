"""Runs a device check in a child process within its time budget and reads back its Result."""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .checks import Check
from .context import Context
from .environment import REPO, child_env
from .results import FAIL, Result

OUTPUT_TAIL_LINES = 8


def _tail(text: str | bytes | None) -> list:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return (text or "").rstrip().splitlines()[-OUTPUT_TAIL_LINES:]


def run_device_check(check: Check, ctx: Context, budget_s: float) -> Result:
    with tempfile.TemporaryDirectory(prefix="gpu_proof_") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, "-m", "gpu_proof.child", check.name, str(out), "--budget-s", str(budget_s)]
        cmd += ["--quick"] * ctx.quick + ["--standin"] * ctx.standin + ["--time-standin"] * ctx.time_standin
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=REPO, env=child_env("cuda"), capture_output=True, text=True,
                                  timeout=budget_s)
        except subprocess.TimeoutExpired as e:
            return Result(check.name, FAIL, note=f"did not finish within its budget of {budget_s:.0f} s",
                          seconds=round(time.perf_counter() - start, 2), traceback=_tail(e.stderr))
        if out.exists():
            return Result.from_json(json.loads(out.read_text(encoding="utf-8")))
        # the child died before writing its result (a crash in native code, an exit from a library)
        return Result(check.name, FAIL, note=f"its process exited with code {proc.returncode} and no result",
                      seconds=round(time.perf_counter() - start, 2), traceback=_tail(proc.stderr or proc.stdout))
