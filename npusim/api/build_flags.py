"""What this build of npusim has, with torch's names: ``has_lapack`` & co., ``set_flush_denormal``,
``init_num_threads``.

Each flag answers for npusim itself: linear algebra runs on NumPy's LAPACK (so ``has_lapack``), no MKL or OpenMP
is linked (as ``npusim.backends.mkl`` / ``openmp`` say), and ``has_spectral`` tells whether ``npusim.fft`` exists.
"""
from __future__ import annotations

import builtins
import importlib.util

from ..backends import mkl as _mkl, openmp as _openmp
from ..core.runtime import parallel_config as _parallel_config

has_lapack = True                                   # numpy.linalg is LAPACK's (lapack_lite or the BLAS vendor's)
has_mkl = _mkl.is_available()
has_openmp = _openmp.is_available()
has_spectral = importlib.util.find_spec(__name__.rpartition(".api")[0] + ".fft") is not None


def set_flush_denormal(mode) -> builtins.bool:
    """Ask for denormal floats to be flushed to zero on the CPU; returns whether that mode could be configured.

    npusim's CPU kernels are NumPy's, which offers no switch for the floating-point unit's flush-to-zero mode, so
    this returns ``False`` (torch's answer on a CPU without the feature) and nothing changes.
    """
    if mode.__class__ is not builtins.bool:
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def init_num_threads() -> None:
    """Make the calling thread's ops use the intra-op thread count (``set_num_threads``).

    torch propagates its OpenMP setting to a new thread here; npusim's count is process-wide, so this only makes
    sure it is resolved (reading ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` once, as the first op would).
    """
    _parallel_config.get_num_threads()


__all__ = ["has_lapack", "has_mkl", "has_openmp", "has_spectral", "set_flush_denormal", "init_num_threads"]
