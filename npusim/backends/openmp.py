"""torch.backends.openmp: npusim's intra-op threads are its own pool, not OpenMP's."""
from __future__ import annotations


def is_available() -> bool:
    """False: npusim does not use OpenMP."""
    return False
