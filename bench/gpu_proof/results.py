"""The outcome of one check: a table row (name, status, figure, note) plus details for the JSON."""
from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass, field

PASS, FAIL, SKIP = "pass", "fail", "skip"
STANDIN_NOTE = "stand-in: no GPU timing"


@dataclass
class Result:
    name: str
    status: str
    figure: str = ""
    note: str = ""
    details: dict = field(default_factory=dict)
    seconds: float = 0.0
    traceback: list = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Result":
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


class Skip(Exception):
    """Raised inside a check that cannot run here (the reason is its message)."""


class CheckFailed(AssertionError):
    """Raised inside a check whose expectation is not met (the message becomes the note, ``details`` go along)."""

    def __init__(self, message: str, details: dict | None = None):
        super().__init__(message)
        self.details = details or {}


def expect(condition, message: str, details: dict | None = None) -> None:
    if not condition:
        raise CheckFailed(message, details)


def traceback_tail(exc: BaseException, lines: int = 8) -> list:
    """The last lines of an exception's traceback: enough to find the failing line, short enough for a report."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return text.rstrip().splitlines()[-lines:]
