"""Structure ops that decompose into other dispatched ops.

The *_scatter ops write a view of a clone; diagonals, diff, rot90, kron and inner are views,
products and joins; the splits and unfold are views. As torch's CompositeImplicitAutograd kernels,
autograd differentiates the parts.
"""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.dispatch.ops_namespace import aten
from ..core.tensor import _wrap_dim
from . import common as C


# --- diagonals and friends -----------------------------------------------------------------------------

def _scatter_into_view(self, src, view_of):
    out = aten.clone.default(self)
    view = view_of(out)
    if list(view.shape) != list(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(view.shape)}")
    aten.copy_.default(view, src)
    return out


def select_scatter(self, src, dim, index):
    return _scatter_into_view(self, src, lambda t: aten.select.int(t, dim, index))


def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
    return _scatter_into_view(self, src, lambda t: aten.slice.Tensor(t, dim, start, end, step))


def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
    return _scatter_into_view(self, src, lambda t: aten.diagonal.default(t, offset, dim1, dim2))


def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    nd = self.dim() + 1
    d1, d2 = _wrap_dim(dim1, nd), _wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (self.shape[-1] if self.dim() else 1) + abs(offset)
    shape = list(self.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    zeros = aten.zeros.default(shape, dtype=self.dtype, device=self.device)
    return diagonal_scatter(zeros, self, offset, d1, d2)


def diag(self, diagonal=0):
    if self.dim() == 1:
        n = self.shape[0] + abs(diagonal)
        zeros = aten.zeros.default([n, n], dtype=self.dtype, device=self.device)
        return diagonal_scatter(zeros, self, diagonal)
    if self.dim() == 2:
        return aten.clone.default(aten.diagonal.default(self, diagonal))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.dim()}D")


def diagflat(self, offset=0):
    return diag(aten.reshape.default(self, [-1]), offset)


def trace(self):
    if self.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
    return aten.sum.default(aten.diagonal.default(self))


def diff(self, n=1, dim=-1, prepend=None, append=None):
    if self.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _wrap_dim(dim, self.dim())
    parts = [t if t.dim() else aten.expand.default(t, [1 if i == d else s for i, s in enumerate(self.shape)])
             for t in (prepend, self, append) if t is not None]
    x = aten.cat.default(parts, d) if len(parts) > 1 else self
    for _ in range(n):
        size = x.shape[d]
        if size == 0:
            break
        later, earlier = aten.narrow.default(x, d, 1, size - 1), aten.narrow.default(x, d, 0, size - 1)
        x = aten.logical_xor.default(later, earlier) if x.dtype == D.bool else aten.sub.Tensor(later, earlier)
    return x


def rot90(self, k=1, dims=(0, 1)):
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.dim()}")
    d0, d1 = _wrap_dim(dims[0], self.dim()), _wrap_dim(dims[1], self.dim())
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return aten.transpose.int(aten.flip.default(self, [d1]), d0, d1)
    if k == 2:
        return aten.flip.default(self, [d0, d1])
    if k == 3:
        return aten.transpose.int(aten.flip.default(self, [d0]), d0, d1)
    return aten.clone.default(self)


def kron(self, other):
    nd = max(self.dim(), other.dim())
    a_shape = [1] * (nd - self.dim()) + list(self.shape)
    b_shape = [1] * (nd - other.dim()) + list(other.shape)
    a = aten.reshape.default(self, [s for n in a_shape for s in (n, 1)])
    b = aten.reshape.default(other, [s for n in b_shape for s in (1, n)])
    return aten.reshape.default(aten.mul.Tensor(a, b), [x * y for x, y in zip(a_shape, b_shape)])


def inner(self, other):
    if self.dim() == 0 or other.dim() == 0:
        return aten.mul.Tensor(self, other)
    if self.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(self.shape)} and {list(other.shape)}")
    return aten.tensordot.default(self, other, [self.dim() - 1], [other.dim() - 1])


def ger(self, vec2):
    return aten.outer.default(self, vec2)


def sum_to_size(self, size):
    size = list(size)
    lead = self.dim() - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, self.shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(self.shape)}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and self.shape[lead + i] != 1]
    if not dims:
        return self
    r = aten.sum.dim_IntList(self, dims, True)
    return aten.reshape.default(r, size) if lead else r


# --- splits and strided views ---------------------------------------------------------------------------

def _split_at(self, bounds, d):
    return [aten.slice.Tensor(self, d, start, end) for start, end in zip([0] + bounds, bounds + [self.shape[d]])]


def _tensor_split_dim(self, dim):
    if self.dim() == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    return _wrap_dim(dim, self.dim())


def tensor_split_sections(self, sections, dim=0):
    d = _tensor_split_dim(self, dim)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    size = self.shape[d]
    base, extra = divmod(size, sections)
    bounds, at = [], 0
    for i in range(sections - 1):
        at += base + (1 if i < extra else 0)
        bounds.append(at)
    return _split_at(self, bounds, d)


def tensor_split_indices(self, indices, dim=0):
    d = _tensor_split_dim(self, dim)
    size = self.shape[d]
    bounds = [min(max(int(i) + (size if i < 0 else 0), 0), size) for i in indices]
    return [aten.slice.Tensor(self, d, start, max(start, end))
            for start, end in zip([0] + bounds, bounds + [size])]


def tensor_split_tensor(self, tensor_indices_or_sections, dim=0):
    t = tensor_indices_or_sections
    if t.device.type != "cpu":
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be on cpu, but it's on "
                           f"{t.device}")
    if t.dtype != D.int64:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                           f"{C.tname(t.dtype)}")
    if t.dim() > 1:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                           f"one-dimensional tensor, but got a tensor with {t.dim()} dims")
    if t.dim() == 0:
        return tensor_split_sections(self, int(t.item()), dim)
    return tensor_split_indices(self, t.tolist(), dim)


def _directional_split(name, min_dims, dim_of):
    def by_sections(self, sections):
        d = _directional_checks(self, name, min_dims, dim_of)
        if sections != 0 and self.shape[d] % sections == 0:
            return tensor_split_sections(self, sections, d)
        raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the dimension "
                           f"{self.shape[d]} is not divisible by the split_size {sections}!")

    def by_indices(self, indices):
        return tensor_split_indices(self, list(indices), _directional_checks(self, name, min_dims, dim_of))

    return by_sections, by_indices


def _directional_checks(self, name, min_dims, dim_of):
    if self.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {self.dim()} dimensions!")
    return dim_of(self)


hsplit_int, hsplit_array = _directional_split("hsplit", 1, lambda t: 1 if t.dim() > 1 else 0)
vsplit_int, vsplit_array = _directional_split("vsplit", 2, lambda t: 0)
dsplit_int, dsplit_array = _directional_split("dsplit", 3, lambda t: 2)


def unfold(self, dimension, size, step):
    nd = self.dim()
    d = _wrap_dim(dimension, nd)
    length = self.shape[d] if nd else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    sizes, strides = list(self.shape), list(self.stride())
    if nd == 0:
        return aten.as_strided.default(self, [size], [1], self.storage_offset())
    sizes[d] = (length - size) // step + 1
    strides[d] = strides[d] * step
    return aten.as_strided.default(self, sizes + [size], strides + [self.stride(d)], self.storage_offset())


def broadcast_to(self, size):
    return aten.expand.default(self, list(size))


def ravel(self):
    return aten.reshape.default(self, [-1])


def is_nonzero(self):
    n = self.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def is_same_size(self, other):
    return tuple(self.shape) == tuple(other.shape)


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.empty_strided.default(list(size), list(stride), dtype=dtype if dtype is not None else self.dtype,
                                      device=device if device is not None else self.device)


COMPOSITE_IMPLICIT = {
    "select_scatter": select_scatter, "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
    "diag_embed": diag_embed, "diag": diag, "diagflat": diagflat, "trace": trace, "diff": diff, "rot90": rot90,
    "kron": kron, "inner": inner, "ger": ger, "sum_to_size": sum_to_size,
    "tensor_split.sections": tensor_split_sections, "tensor_split.indices": tensor_split_indices,
    "tensor_split.tensor_indices_or_sections": tensor_split_tensor,
    "hsplit.int": hsplit_int, "hsplit.array": hsplit_array, "vsplit.int": vsplit_int,
    "vsplit.array": vsplit_array, "dsplit.int": dsplit_int, "dsplit.array": dsplit_array,
    "unfold": unfold, "broadcast_to": broadcast_to, "ravel": ravel, "is_nonzero": is_nonzero,
    "is_same_size": is_same_size, "new_empty_strided": new_empty_strided,
}
