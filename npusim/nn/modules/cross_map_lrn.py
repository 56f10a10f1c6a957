"""``CrossMapLRN2d``: the legacy (Lua Torch) local response normalisation across channels of 4-d input, with its
own backward (``_functions.CrossMapLRN2d``), as ``torch.nn.CrossMapLRN2d``."""
from __future__ import annotations

from . import _functions
from .module import Module

__all__ = ["CrossMapLRN2d"]


class CrossMapLRN2d(Module):
    """Local response normalisation across ``size`` neighbouring channels of (N, C, H, W) input, the legacy
    Lua Torch form: x / (k + alpha / size * sum of squares) ** beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return _functions.CrossMapLRN2d.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)
