"""Runs one device check in this process and writes its Result as JSON.

    python -m gpu_proof.child NAME OUT.json [--quick] [--standin] [--budget-s S]

The parent (``runner``) starts one such process per check: an exception here
becomes a failed row with its traceback's last lines, never a lost run.
"""
from __future__ import annotations

import argparse
import importlib
import json
import time

from .checks import by_name
from .context import Context
from .results import FAIL, SKIP, CheckFailed, Result, Skip, traceback_tail

NOTE_CHARS = 300


def run_check(name: str, ctx: Context) -> Result:
    check = by_name(name)
    start = time.perf_counter()
    try:
        result = importlib.import_module(f"gpu_proof.{check.module}").run(ctx)
    except Skip as e:
        result = Result(name, SKIP, note=str(e))
    except CheckFailed as e:
        result = Result(name, FAIL, note=str(e), details=e.details, traceback=traceback_tail(e))
    except BaseException as e:      # anything else is a failure of this check alone
        result = Result(name, FAIL, note=f"{type(e).__name__}: {e}", traceback=traceback_tail(e))
    result.name = name
    result.note = " ".join(result.note.split())[:NOTE_CHARS]
    result.seconds = round(time.perf_counter() - start, 2)
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("name")
    p.add_argument("out")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--standin", action="store_true")
    p.add_argument("--budget-s", type=float, default=60.0)
    p.add_argument("--time-standin", action="store_true")
    args = p.parse_args(argv)
    ctx = Context(quick=args.quick, standin=args.standin, budget_s=args.budget_s, time_standin=args.time_standin)
    result = run_check(args.name, ctx)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(result.to_json(), f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
