"""as_strided_ (in place), as_strided_scatter, slice_inverse and unsafe_split_with_sizes.

as_strided_ gives the tensor the geometry of its own as_strided view (``views_inplace``'s rule);
as_strided_scatter is torch's composite: a clone whose as_strided window takes ``src`` (so autograd sees the
clone, the view and the copy); slice_inverse views the slice's memory with the geometry of the tensor it was
sliced from; the unsafe split's pieces are the split's without view tracking.
"""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from . import views as V
from .views_inplace import _inplace_view, _unaliased

as_strided_ = _inplace_view(aten.as_strided.default)


def as_strided_scatter(self, src, size, stride, storage_offset=None):
    out = aten.clone.default(self)
    window = aten.as_strided.default(out, list(size), list(stride), storage_offset)
    if tuple(window.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(window.shape)}")
    aten.copy_.default(window, src)
    return out


def slice_inverse(self, src, dim=0, start=None, end=None, step=1):
    """``src`` is the tensor the slice ``self`` was taken from: a view of ``self``'s memory shaped as ``src``."""
    return aten.as_strided.default(self, list(src.shape), list(src.stride()), src.storage_offset())


def unsafe_split_with_sizes(self, split_sizes, dim=0):
    return _unaliased(V.split_with_sizes(self, split_sizes, dim), self)


COMPOSITE_IMPLICIT = {
    "as_strided_": as_strided_, "as_strided_scatter": as_strided_scatter, "slice_inverse": slice_inverse,
}
KERNELS = {"unsafe_split_with_sizes": unsafe_split_with_sizes}
