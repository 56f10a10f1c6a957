"""The main job, ``python -m npusim demo``, run as a user runs it (a few steps: the full run's quality bar
is checked by the demo itself, and takes about 40 s)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_demo(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    return subprocess.run([sys.executable, "-m", "npusim", "demo", "--quiet", *args], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=300)


def test_a_short_run_reports_everything_and_leaves_the_bar_to_the_full_run():
    r = run_demo("--steps", "3")
    out = r.stdout
    assert "| device npu:0 (emulation) |" in out or "| device npu:0 (cuda) |" in out, out + r.stderr
    m = re.search(r"validation loss ([0-9.]+) \(the bar, < 2\.0, applies to the default 250 steps: not judged "
                  r"after 3\)", out)
    assert m, out + r.stderr
    # three steps cannot reach the bar: the demo says the bar is not for them, and the user's run succeeds
    assert float(m.group(1)) > 2.0 and "FAIL" not in out
    assert r.returncode == 0, out + r.stderr
    assert re.search(r"npu memory: allocated [0-9.]+ MiB, peak [0-9.]+ MiB", out)
    assert "aten::matmul" in out   # the profile's table
    assert "identical to the model's after the profiled steps" in out


def test_the_same_seed_prints_the_same_losses_and_another_seed_does_not():
    def losses(seed):
        out = run_demo("--steps", "2", "--seed", str(seed)).stdout
        return re.findall(r"validation loss ([0-9.]+)", out)

    first = losses(1)
    assert len(first) == 2
    assert losses(1) == first
    assert losses(2) != first


def test_a_bad_step_count_is_refused():
    r = run_demo("--steps", "0")
    assert r.returncode != 0
    assert "--steps must be at least 1" in r.stderr


def test_help_documents_every_option_in_plain_text():
    r = subprocess.run([sys.executable, "-m", "npusim", "demo", "--help"], capture_output=True, text=True,
                       cwd=str(ROOT), timeout=120)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    for option in ("--steps", "--device", "--seed", "--batch-size", "--lr", "--no-amp", "--profile", "--quiet"):
        at = next(i for i, l in enumerate(lines) if l.strip().startswith(option))
        # the help follows the option and its metavar on the same line, or on the next when they are long
        text = lines[at].strip()[len(option):].split("  ", 1)[1:] or [lines[at + 1]]
        assert text[0].strip(), lines[at]
    assert "``" not in r.stdout and "quality bar" in r.stdout and "default 250 steps" in r.stdout
