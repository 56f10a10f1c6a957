"""Layouts and memory formats (``npusim.strided``, ``npusim.channels_last``...).

They are strings underneath, so kernels compare them by name.
"""
from __future__ import annotations


class layout(str):
    def __repr__(self):
        return f"npusim.{str.__str__(self)}"

    __str__ = __repr__


class memory_format(str):
    def __repr__(self):
        return f"npusim.{str.__str__(self)}"

    __str__ = __repr__


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_PERM = {"channels_last": (4, (0, 2, 3, 1)), "channels_last_3d": (5, (0, 2, 3, 4, 1))}


def is_contiguous_in(t, fmt) -> bool:
    """Whether ``t``'s strides are those of ``fmt`` (size-1 dims are ignored, as in torch)."""
    if fmt in (None, "contiguous_format"):
        return t.is_contiguous()
    if fmt == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    ndim, perm = _PERM[str.__str__(fmt)]
    if t.dim() != ndim:
        return False
    expected = 1
    for d in reversed(perm):
        n = t.shape[d]
        if n != 1 and t.stride(d) != expected:
            return False
        expected *= n
    return True


def to_memory_format(t, fmt):
    """A copy of ``t`` laid out in ``fmt`` (or ``t`` itself if it already is)."""
    if is_contiguous_in(t, fmt):
        return t
    from ..dispatch.ops_namespace import aten
    ndim, _ = _PERM.get(str.__str__(fmt), (None, None))
    if ndim is not None and t.dim() != ndim:
        raise RuntimeError(f"required rank {ndim} tensor to use {fmt} format")
    out = aten.empty_like.default(t, memory_format=fmt)
    return aten.copy_.default(out, t)
