"""What every check is told: how big to make its work and whether it runs on the CuPy stand-in."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Context:
    quick: bool
    standin: bool
    budget_s: float
    # speed checks run on the stand-in too (tiny sizes, torch on the cpu): tests their code, the figures mean nothing
    time_standin: bool = False

    def pick(self, full, quick):
        """``quick`` under --quick, ``full`` otherwise."""
        return quick if self.quick else full

    def size(self, full, quick, standin):
        """A work size: ``standin`` when timing the stand-in, else as ``pick``."""
        return standin if self.standin else self.pick(full, quick)
