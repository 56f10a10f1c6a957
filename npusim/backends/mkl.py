"""torch.backends.mkl: npusim calls no MKL of its own (NumPy's BLAS may be any)."""
from __future__ import annotations


def is_available() -> bool:
    """False: npusim does not link MKL."""
    return False
