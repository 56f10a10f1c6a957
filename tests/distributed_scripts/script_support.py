"""What the rank scripts share: one result line per check, so the test that launched them can parse it."""
from __future__ import annotations

import re
import sys
import traceback

RANK = "?"


def say(line: str) -> None:
    """One write per line, so the lines of several ranks never interleave mid-line."""
    sys.stdout.write(f"[{RANK}] {line}\n")
    sys.stdout.flush()


def set_rank(rank) -> None:
    global RANK
    RANK = rank


def report(device: str, name: str, fn, *args) -> None:
    """Run ``fn(*args)`` and print ``[rank] PASS device name`` or ``[rank] FAIL device name: why``."""
    try:
        fn(*args)
    except Exception:
        reason = traceback.format_exc().strip().replace("\n", " | ")
        say(f"FAIL {device} {name}: {reason}")
    else:
        say(f"PASS {device} {name}")


def expect_error(error_type, pattern: str, fn, *args, **kwargs):
    """``fn`` must raise ``error_type`` with a message matching ``pattern``; returns the exception."""
    try:
        fn(*args, **kwargs)
    except error_type as e:
        if not re.search(pattern, str(e)):
            raise AssertionError(f"{error_type.__name__} message {str(e)!r} does not match {pattern!r}") from e
        return e
    raise AssertionError(f"expected {error_type.__name__} matching {pattern!r}, nothing was raised")


def done() -> None:
    say("DONE")
