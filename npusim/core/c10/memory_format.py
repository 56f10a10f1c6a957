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
_INVERSE = {"channels_last": (0, 3, 1, 2), "channels_last_3d": (0, 4, 1, 2, 3)}
# the order torch's is_channels_last_strides_2d / _3d read the dims in: channels first, batch last
_STRIDE_ORDER = {4: ((1, 3, 2, 0), "channels_last"), 5: ((1, 4, 3, 2, 0), "channels_last_3d")}


def check_rank(ndim, fmt) -> None:
    """torch's refusal of channels_last (3d) for a tensor of another rank."""
    need = _PERM.get(str.__str__(fmt))
    if need is not None and need[0] != ndim:
        raise RuntimeError(f"required rank {need[0]} tensor to use {str.__str__(fmt)} format")


def suggest_memory_format(shape, strides) -> str:
    """torch's ``suggest_memory_format``: "channels_last" (or "_3d") when the strides look like it, else
    "contiguous_format". ``strides`` may be in bytes or elements: only their order matters. As torch, an
    ambiguous tensor (size-1 dims, a trivial channel stride) counts as contiguous."""
    found = _STRIDE_ORDER.get(len(shape))
    if found is None:
        return "contiguous_format"
    order, fmt = found
    if strides[1] == 0:
        return "contiguous_format"
    least = 0
    for d in order:
        n, st = shape[d], strides[d]
        if n == 0 or st < least or (d == 0 and least == strides[1]):
            return "contiguous_format"
        least = st * n if n > 1 else st
    return fmt


def dense_order(shape, strides):
    """torch's infer_dense_strides order: the dims of a (possibly non-dense) tensor from outermost to innermost
    by stride, a stride of 0 keeping its place, equal strides putting the larger size outside."""
    perm = list(range(len(shape) - 1, -1, -1))   # innermost first, as torch builds it

    def should_swap(d0, d1):
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, len(perm)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


def array_format(a) -> str:
    """``suggest_memory_format`` of an array (a tensor's ``_a``)."""
    nd = a.ndim
    return suggest_memory_format(a.shape, a.strides) if nd == 4 or nd == 5 else "contiguous_format"


def array_in_format(a, fmt):
    """Array ``a`` laid out as ``fmt`` (a copy, unless it already is): channels_last strides are those of a
    C-contiguous (N, H, W, C) array seen as (N, C, H, W), which is what torch's empty gives."""
    perm = _PERM.get(str.__str__(fmt))
    if perm is None or a.ndim != perm[0]:
        return a
    moved = a.transpose(perm[1])
    if not moved.flags.c_contiguous or moved.strides != _c_strides(moved.shape, a.itemsize):
        moved = moved.copy()   # a fresh C-contiguous array: exact strides on size-1 dims too
    return moved.transpose(_INVERSE[str.__str__(fmt)])


def array_in_format_of(a, like):
    """Array ``a`` in the memory format the array ``like`` suggests (``a`` itself when that is contiguous): how
    torch's kernels that keep their input's layout (normalisation, pooling, convolution) lay out results."""
    fmt = array_format(like)
    return a if fmt == "contiguous_format" else array_in_format(a, fmt)


def _c_strides(shape, itemsize):
    if 0 in shape:
        return (0,) * len(shape)   # NumPy's strides for a fresh empty array
    out, step = [], itemsize
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


def is_contiguous_in(t, fmt) -> bool:
    """Whether ``t``'s strides are those of ``fmt`` (size-1 dims are ignored, as in torch)."""
    if fmt in (None, "contiguous_format", "preserve_format"):   # torch reads any other format as the default
        return t.is_contiguous()
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
    check_rank(t.dim(), fmt)
    out = aten.empty_like.default(t, memory_format=fmt)
    return aten.copy_.default(out, t)
