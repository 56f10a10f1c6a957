"""``npusim.backends``: torch.backends' switches, with torch's names and defaults.

npusim runs no cuDNN, oneDNN, MPS or cuBLAS-TF32 choice of its own, so most switches here are stored and
read back (a program that sets ``torch.backends.cudnn.benchmark = True`` runs unchanged) and change nothing;
each module says which. ``is_available()`` answers for npusim: no cuDNN, MPS, oneDNN or MKL here.
"""
from __future__ import annotations

from . import cpu, cuda, cudnn, mha, mkl, mkldnn, mps, openmp, opt_einsum  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mha", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
