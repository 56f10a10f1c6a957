"""``npusim.futures``: Future, collect_all and wait_all (torch.futures)."""
from __future__ import annotations

from .core.runtime.futures import Future, collect_all, wait_all

__all__ = ["Future", "collect_all", "wait_all"]
