"""The GPU proof: one command that shows npusim's cuda mode working on a real NVIDIA GPU.

    PYTHONPATH=. python bench/gpu_proof.py [--json PATH] [--quick] [--skip-suites]

On one H100/H200 it finishes within 8 minutes. It prints one row per check (name,
pass/fail/skip, a figure, a note) and writes the details as JSON: the ``gpu``-marked
tests, the npu tests in cuda mode, RNG parity with the emulation, OOM recovery,
event timing, NVML figures, DLPack with CuPy and torch, NCCL with one rank, and the
speed of bandwidth-bound, compute-bound and overhead-bound work against torch.
docs/gpu_proof.md says what each check does and what the JSON holds.

Exit status: 0 when no check failed, 1 when one did, 2 when there is neither a GPU
nor the test-only CuPy stand-in (``PYTHONPATH=tests/cupy_standin:.`` rehearses the
proof without a GPU; speed figures are skipped there).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

# this file's folder holds the gpu_proof package (a package wins over this module of the same name)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gpu_proof.checks import ALL_NAMES, DEVICE_CHECKS, GPU_TESTS, NPU_SUITE  # noqa: E402
from gpu_proof.context import Context  # noqa: E402
from gpu_proof.environment import NONE, STANDIN, detect  # noqa: E402
from gpu_proof.report import table, write_json  # noqa: E402
from gpu_proof.results import FAIL, SKIP, STANDIN_NOTE, Result, traceback_tail  # noqa: E402
from gpu_proof.runner import run_device_check  # noqa: E402
from gpu_proof.suites import gpu_tests, npu_suite  # noqa: E402

TOTAL_BUDGET_S = 470            # the whole run stays under 8 minutes
SUITE_MINIMUM_S = 150           # kept for the test suites while the device checks run
GPU_TESTS_MAX_S = 150
MIN_CHECK_S = 10                # below this a check is skipped rather than started


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python bench/gpu_proof.py", description=__doc__.split("\n")[0])
    default_json = os.path.join(tempfile.gettempdir(), "gpu_proof.json")
    p.add_argument("--json", metavar="PATH", default=default_json,
                   help=f"where to write the results (default {default_json})")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    p.add_argument("--skip-suites", action="store_true", help="do not run the two test-suite checks")
    p.add_argument("--only", metavar="NAMES", help=f"comma-separated checks to run, of: {', '.join(ALL_NAMES)}")
    p.add_argument("--budget-s", type=float, default=TOTAL_BUDGET_S,
                   help=f"time for the whole run, in seconds (default {TOTAL_BUDGET_S})")
    p.add_argument("--suite-jobs", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)),
                   help="npu-suite shards run at the same time (default: half the CPU cores, at most 8)")
    p.add_argument("--time-standin", action="store_true",
                   help="run the speed checks on the stand-in too (tests their code; the figures mean nothing)")
    args = p.parse_args(argv)
    args.only = None if args.only is None else {n.strip() for n in args.only.split(",") if n.strip()}
    unknown = (args.only or set()) - set(ALL_NAMES)
    if unknown:
        p.error(f"unknown check(s): {', '.join(sorted(unknown))}")
    return args


def _wanted(args, name: str) -> bool:
    return args.only is None or name in args.only


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_checks(args, ctx: Context, deadline: float) -> list:
    results = []
    suites_wanted = not args.skip_suites and (_wanted(args, GPU_TESTS) or _wanted(args, NPU_SUITE))
    reserve = SUITE_MINIMUM_S if suites_wanted else 0
    for check in DEVICE_CHECKS:
        if not _wanted(args, check.name):
            continue
        if check.speed and ctx.standin and not ctx.time_standin:
            results.append(Result(check.name, SKIP, note=STANDIN_NOTE))
            continue
        budget = min(check.budget_s, deadline - time.perf_counter() - reserve)
        if budget < MIN_CHECK_S:
            results.append(Result(check.name, SKIP, note="no time left in the run's budget"))
            continue
        _progress(f"gpu_proof: {check.name} (up to {budget:.0f} s)")
        results.append(run_device_check(check, ctx, budget))
    for name in (GPU_TESTS, NPU_SUITE):
        if not _wanted(args, name):
            continue
        if args.skip_suites:
            results.append(Result(name, SKIP, note="--skip-suites"))
            continue
        left = deadline - time.perf_counter()
        budget = min(GPU_TESTS_MAX_S, 0.4 * left) if name == GPU_TESTS and _wanted(args, NPU_SUITE) else left
        if budget < MIN_CHECK_S:
            results.append(Result(name, SKIP, note="no time left in the run's budget"))
            continue
        _progress(f"gpu_proof: {name} (up to {budget:.0f} s)")
        try:
            results.append(gpu_tests(ctx, budget) if name == GPU_TESTS else npu_suite(ctx, budget, args.suite_jobs))
        except Exception as e:      # a broken suite run is that check's failure, not the proof's end
            results.append(Result(name, FAIL, note=f"{type(e).__name__}: {e}", traceback=traceback_tail(e)))
    return results


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    platform = detect()
    if platform.kind == NONE:
        print(f"gpu_proof: no GPU here: {platform.reason}, and the CuPy stand-in is not on PYTHONPATH.\n"
              "The proof needs an NVIDIA GPU with CuPy. To rehearse it without one:\n"
              "    PYTHONPATH=tests/cupy_standin:. python bench/gpu_proof.py --quick --skip-suites", file=sys.stderr)
        return 2
    ctx = Context(quick=args.quick, standin=platform.kind == STANDIN, budget_s=args.budget_s,
                  time_standin=args.time_standin)
    _progress(f"gpu_proof: running on {'the CuPy stand-in (no GPU)' if ctx.standin else 'a GPU'}"
              f"{', quick' if args.quick else ''}")
    results = run_checks(args, ctx, started + args.budget_s)
    print(table(results))
    failed = [r.name for r in results if r.status == FAIL]
    seconds = round(time.perf_counter() - started, 1)
    print(f"\n{len(results)} checks in {seconds:.0f} s: {sum(r.status == 'pass' for r in results)} passed, "
          f"{len(failed)} failed, {sum(r.status == SKIP for r in results)} skipped"
          + (f" ({'; '.join(failed)} failed)" if failed else ""))
    write_json(args.json, {"platform": platform.kind, "environment": platform.info, "quick": args.quick,
                           "skip_suites": args.skip_suites, "seconds": seconds,
                           "passed": not failed, "checks": [r.to_json() for r in results]})
    print(f"details: {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
