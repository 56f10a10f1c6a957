"""Padding layers: constant/zero, reflection, replication and circular, over ``F.pad``."""
from __future__ import annotations

from .. import functional as F
from .module import Module
from .utils import _ntuple, _pair, _quadruple

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]

_sextuple = _ntuple(6, "_sextuple")


class _PadNd(Module):
    """``F.pad`` in ``_mode``; ``_expand`` turns an int ``padding`` into one amount per side of each padded dim."""

    __constants__ = ["padding"]
    _mode = "constant"
    _expand = staticmethod(_pair)

    def __init__(self, padding):
        super().__init__()
        self.padding = self._expand(padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _CircularPadNd(_PadNd):
    _mode = "circular"
    _dims = (2, 3)

    def forward(self, input):
        if input.dim() not in self._dims:
            raise ValueError(f"expected {self._dims[0]}D or {self._dims[1]}D input (got {input.dim()}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    _dims = (2, 3)


class CircularPad2d(_CircularPadNd):
    _expand = staticmethod(_quadruple)
    _dims = (3, 4)


class CircularPad3d(_CircularPadNd):
    _expand = staticmethod(_sextuple)
    _dims = (4, 5)


class _ConstantPadNd(_PadNd):
    __constants__ = ["padding", "value"]

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    pass


class ConstantPad2d(_ConstantPadNd):
    _expand = staticmethod(_quadruple)


class ConstantPad3d(_ConstantPadNd):
    _expand = staticmethod(_sextuple)


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class ReflectionPad1d(_ReflectionPadNd):
    pass


class ReflectionPad2d(_ReflectionPadNd):
    _expand = staticmethod(_quadruple)


class ReflectionPad3d(_ReflectionPadNd):
    _expand = staticmethod(_sextuple)


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class ReplicationPad1d(_ReplicationPadNd):
    pass


class ReplicationPad2d(_ReplicationPadNd):
    _expand = staticmethod(_quadruple)


class ReplicationPad3d(_ReplicationPadNd):
    _expand = staticmethod(_sextuple)


class ZeroPad1d(ConstantPad1d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"
