"""torch.backends.mkl: npusim calls no MKL of its own (NumPy's BLAS may be any)."""
from __future__ import annotations


def is_available() -> bool:
    """False: npusim does not link MKL."""
    return False


VERBOSE_OFF = 0
VERBOSE_ON = 1


class verbose:  # noqa: N801 - torch's name
    """``with verbose(VERBOSE_ON):`` asks MKL to log each kernel it runs in the block. Without MKL (npusim links
    none) turning it on fails with torch's AssertionError; ``VERBOSE_OFF`` is a block that does nothing."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return None
        if not is_available():
            raise AssertionError("Failed to set MKL into verbose mode. Please consider to disable this verbose "
                                 "scope.")
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False
