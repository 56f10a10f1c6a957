"""What a pytest run printed, read back: outcome counts, failed test ids with their one-line reasons.

The run uses verbose output (one line per test), so a run cut short by its
timeout still tells how far it got; the final summary line, when there is one,
gives the authoritative counts.
"""
from __future__ import annotations

import re

OUTCOMES = ("passed", "failed", "skipped", "errors", "xfailed", "xpassed", "deselected")
_SUMMARY_WORD = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected|warnings?)")
_SUMMARY_LINE = re.compile(r"^=*\s*(\d+ \w+.*)? in [0-9.]+s")
_VERBOSE = re.compile(r"^(\S+::.+?) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)\b")
_SHORT = re.compile(r"^(FAILED|ERROR) (\S+(?:::[^ ]+(?: [^-][^ ]*)*)?)(?: - (.*))?$")
_VERBOSE_TO_OUTCOME = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped", "ERROR": "errors",
                       "XFAIL": "xfailed", "XPASS": "xpassed"}


def summary_counts(text: str) -> dict | None:
    """Counts from pytest's last summary line (``3 failed, 120 passed, 5 skipped in 12.3s``), or None."""
    for line in reversed(text.splitlines()):
        if _SUMMARY_LINE.match(line.strip()) or line.strip().startswith("no tests ran"):
            counts = dict.fromkeys(OUTCOMES, 0)
            for n, word in _SUMMARY_WORD.findall(line):
                key = "errors" if word.startswith("error") else word
                if key in counts:
                    counts[key] = int(n)
            return counts
    return None


def verbose_counts(text: str) -> dict:
    """Counts from the per-test lines of a verbose run (for a run that never printed its summary)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for line in text.splitlines():
        m = _VERBOSE.match(line)
        if m:
            counts[_VERBOSE_TO_OUTCOME[m.group(2)]] += 1
    return counts


def failures(text: str, limit: int) -> list:
    """[{"id", "reason"}] of failed and erroring tests: from the short summary (``-rfE``), else the verbose lines."""
    found, seen = [], set()
    for line in text.splitlines():
        m = _SHORT.match(line)
        if m and m.group(2) not in seen:
            seen.add(m.group(2))
            found.append({"id": m.group(2), "reason": (m.group(3) or m.group(1)).strip()})
    if not found:
        for line in text.splitlines():
            m = _VERBOSE.match(line)
            if m and m.group(2) in ("FAILED", "ERROR") and m.group(1) not in seen:
                seen.add(m.group(1))
                found.append({"id": m.group(1), "reason": "(no summary: the run was cut short)"})
    return found[:limit]


def last_started_test(text: str) -> str:
    """The test a verbose run printed last: the one running when a timed-out run was stopped."""
    for line in reversed(text.splitlines()):
        if "::" in line:
            m = _VERBOSE.match(line)
            return m.group(1) if m else line.strip()     # no outcome yet: the line is the test's id
    return ""
