"""torch.backends.mps: Apple's Metal backend, which npusim does not have."""
from __future__ import annotations


def is_available() -> bool:
    """False: npusim has no MPS device."""
    return False


def is_built() -> bool:
    """False: npusim has no MPS device."""
    return False
