"""RNG parity: every random op drawn in cuda mode here and in an emulation child with the same seeds.

The catalogue (``rng_catalogue``) says which draws must be bitwise equal and which
may differ by the ulps docs/random.md documents; the generator's state after each
draw is compared too (the offset must advance the same way).
"""
from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

from .cuda_mode import load_npusim
from .environment import REPO, child_env
from .results import FAIL, PASS, Result, expect
from .rng_catalogue import BITWISE, catalogue
from .rng_compare import compare
from .rng_draws import draw_all


def _emulated_draws(timeout_s: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpu_proof_rng_") as tmp:
        out = Path(tmp) / "draws.pickle"
        proc = subprocess.run([sys.executable, "-m", "gpu_proof.rng_draws", str(out)], cwd=REPO,
                              env=child_env("emulation"), capture_output=True, text=True, timeout=timeout_s)
        expect(out.exists(), f"the emulation child exited with code {proc.returncode}: "
                             f"{(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
        with open(out, "rb") as f:
            return pickle.load(f)


def run(ctx) -> Result:
    npusim = load_npusim()
    npusim.npu.set_fallback_mode("silent")
    npusim.npu.reset_fallback_stats()
    cuda = draw_all(npusim)
    fallbacks = npusim.npu.fallback_stats()     # ops that ran on the host instead of the GPU
    emulated = _emulated_draws(max(ctx.budget_s - 20, 30))
    expect(emulated["mode"] == "emulation", f"the emulation child ran in {emulated['mode']} mode")
    kinds = {d.name: d.kind for d in catalogue(npusim)}
    rows = {name: compare(kinds[name], emulated["draws"][name], cuda["draws"][name]) for name in kinds}
    failed = [name for name, row in rows.items() if not row["ok"]]
    bitwise = sum(1 for name, row in rows.items() if kinds[name] == BITWISE and row["ok"])
    values = sum(row["compared"] for row in rows.values())
    details = {"compared_draws": sum(1 for row in rows.values() if row["compared"] > 0), "compared_values": values,
               "cuda_mode_cpu_fallbacks": fallbacks, "draws": rows}
    figure = f"{len(rows) - len(failed)}/{len(rows)} ops ({bitwise} bitwise), {values:,} values"
    if failed:
        notes = [f"{name}: {rows[name].get('why', '')}" for name in failed]
        return Result("rng_parity", FAIL, figure=figure, note="; ".join(notes), details=details)
    return Result("rng_parity", PASS, figure=figure, note="cuda mode vs emulation, same seeds", details=details)
