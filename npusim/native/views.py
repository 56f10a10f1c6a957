"""View ops: results share memory and the version counter with their input.

NumPy views carry the strides; ``make_view`` records the base tensor so
storage, ``_base`` and ``_version`` behave as in torch. Errors use torch's words.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from ..core.tensor import Size, _wrap_dim, make_alias, make_view
from ..kernels.array_api import namespace_of
from . import common as C

_ndarray = np.ndarray


def _ints(size, what="size"):
    cls = size.__class__
    if cls is tuple or cls is Size or cls is list:
        for s in size:   # the common case: plain ints need no conversion
            if s.__class__ is not int:
                break
        else:
            return size if cls is tuple else tuple(size)
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        return (int(size),)
    try:
        return tuple(int(s) if not isinstance(s, bool) else _bad_int(s, what) for s in size)
    except TypeError:
        raise TypeError(f"{what} must be tuple of ints, but found element of type "
                        f"{type(size).__name__}") from None


def _bad_int(v, what):
    raise TypeError(f"{what} must be tuple of ints, but found element of type {type(v).__name__}")


def infer_size(shape, numel):
    """Resolve a single -1 and check the element count (torch's infer_size)."""
    if (not shape or min(shape) >= 0) and math.prod(shape) == numel:   # nothing to infer, nothing wrong
        return shape if shape.__class__ is tuple else tuple(shape)
    shape = list(shape)
    neg = None
    prod = 1
    for i, s in enumerate(shape):
        if s == -1:
            if neg is not None:
                raise RuntimeError("only one dimension can be inferred")
            neg = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {shape}")
        else:
            prod *= s
    if neg is not None:
        if prod == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {shape} because the unspecified "
                               f"dimension size -1 can be any value and is ambiguous")
        if prod == 0 or numel % prod:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
        shape[neg] = numel // prod
    elif prod != numel:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
    return tuple(shape)


def _reshape_view(a, shape):
    """A view of ``a`` with ``shape``, or None when the strides make a copy necessary."""
    if a.__class__ is _ndarray:
        try:
            return np.reshape(a, shape, copy=False)
        except ValueError:
            return None
    r = a.reshape(shape)
    if getattr(r, "base", None) is None or r.data.ptr != a.data.ptr:
        return None if a.size else r
    return r


def view(self, size):
    a = self._a
    shape = infer_size(_ints(size), a.size)
    # a contiguous array always reshapes without a copy (and ndarray.reshape is much cheaper than np.reshape)
    r = a.reshape(shape) if a.flags.c_contiguous else _reshape_view(a, shape)
    if r is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return make_view(r, self)


def view_dtype(self, dtype):
    """The same bytes read as ``dtype``; torch reports it as an alias, not a view (``_base`` is None)."""
    a = self._a
    new = dtype.np
    old_sz, new_sz = a.itemsize, new.itemsize
    if old_sz != new_sz:
        what = f"{C.tname(a.dtype)} as {C.TORCH_NAME[dtype]} (different element sizes)"
        if a.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 to view {what}")
        stride = self.stride()
        if stride[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {what}, but got {stride[-1]}")
        if new_sz > old_sz:
            ratio = new_sz // old_sz
            if a.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {what}, but got "
                                   f"{a.shape[-1]}")
            offset = self.storage_offset()
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to view {what}, but got "
                                   f"{offset}")
            for i, st in enumerate(stride[:-1]):
                if st % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} to view {what}, but got "
                                       f"{st}")
    try:
        r = a.view(new)
    except ValueError:
        r = _reinterpret(self, new)
    return make_alias(r, self)


def _reinterpret(self, new):
    """``self``'s bytes as dtype ``new`` built from the storage (cases NumPy's view refuses)."""
    a = self._a
    ratio_num, ratio_den = a.itemsize, new.itemsize
    shape = a.shape[:-1] + (a.shape[-1] * ratio_num // ratio_den,)
    strides = a.strides[:-1] + (new.itemsize,)
    raw = self._st_of()._bytes()
    start = self.storage_offset() * a.itemsize
    usable = (raw.size - start) // new.itemsize * new.itemsize
    return strided_view(raw[start:start + usable].view(new), shape, strides)


def reshape(self, shape):
    a = self._a
    shape = infer_size(_ints(shape, "shape"), a.size)
    r = _reshape_view(a, shape)
    if r is not None:
        return make_view(r, self)
    C.check_capacity(a.size * a.itemsize, self._device)     # the copy of an expanded view holds every element
    return C.make(a.reshape(shape), self._device)


def permute(self, dims):
    a = self._a
    dims = _ints(dims, "dims")
    if len(dims) != a.ndim:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           "length of the desired ordering of dimensions i.e. input.dim() = "
                           f"{a.ndim} is not equal to len(dims) = {len(dims)}")
    axes = []
    for d in dims:   # in order, as torch: a repeat is reported before a later dim out of range
        axes.append(_wrap_dim(d, a.ndim))
        if axes[-1] in axes[:-1]:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
    return make_view(a.transpose(tuple(axes)), self)


def transpose(self, dim0, dim1):
    a = self._a
    d0, d1 = _wrap_dim(dim0, a.ndim), _wrap_dim(dim1, a.ndim)
    if a.ndim < 2:
        return make_view(a.view(), self)
    return make_view(a.swapaxes(d0, d1), self)


def t(self):
    a = self._a
    if a.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {a.ndim}D")
    return make_view(a.T if a.ndim == 2 else a.view(), self)


def expand(self, size, implicit=False):
    a = self._a
    size = _ints(size)
    if len(size) < a.ndim:
        raise RuntimeError(f"expand(npusim.{C.tname(a.dtype)}Tensor{{{list(a.shape)}}}, size={list(size)}): the "
                           f"number of sizes provided ({len(size)}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({a.ndim})")
    lead = len(size) - a.ndim
    if size[lead:] == a.shape and (not lead or min(size[:lead]) >= 0):
        target = size   # the common case (sum's backward): nothing to resolve or refuse
    else:
        target = _expanded_shape(a, size, lead)
    strides, broadcast = _expanded_strides(a, target, lead)
    r = strided_view(a, target, strides)
    if broadcast and r.__class__ is _ndarray:
        r.flags.writeable = False   # elements share memory: in-place writes must refuse (torch's overlap check)
    return make_view(r, self)


def _expanded_strides(a, target, lead):
    """torch's byte strides of ``a`` expanded to ``target``, and whether any elements now share memory.

    A dim that keeps its size keeps its stride (size-1 dims included); a dim that grows reads with stride
    0; a new leading dim of size 1 strides over the dim after it, as torch's inferExpandGeometry does.
    """
    shape, st = a.shape, a.strides
    strides = [0] * len(target)
    broadcast = False
    after = 0   # size * stride of the dim to the right (0 past the last, as for a 0-dim tensor)
    for i in range(len(target) - 1, -1, -1):
        n = target[i]
        if i >= lead and shape[i - lead] == n:
            s = st[i - lead]
        elif i < lead and n == 1:
            s = after
        else:
            s = 0
            broadcast = broadcast or n > 1
        strides[i] = s
        after = n * s
    return tuple(strides), broadcast


def _expanded_shape(a, size, lead):
    """expand's target shape: -1 keeps a dimension; torch's errors for sizes it refuses."""
    target = []
    for i, s in enumerate(size):
        if i < lead:
            if s < 0:
                raise RuntimeError(f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            target.append(s)
            continue
        cur = a.shape[i - lead]
        if s == -1:
            s = cur
        elif cur != s and cur != 1:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                               f"non-singleton dimension {i}.  Target sizes: {list(size)}.  Tensor sizes: "
                               f"{list(a.shape)}")
        target.append(s)
    return tuple(target)


def squeeze(self, dim=None):
    a = self._a
    if dim is None:
        axes = tuple(i for i, s in enumerate(a.shape) if s == 1)
    else:
        dims = dim if isinstance(dim, (list, tuple)) else (dim,)
        wrapped = [_wrap_dim(d, a.ndim) for d in dims]
        for i, d in enumerate(wrapped):
            if d in wrapped[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        axes = tuple(sorted(set(wrapped)))
        axes = tuple(d for d in axes if a.ndim and a.shape[d] == 1)
    return make_view(a.squeeze(axes) if axes else a.view(), self)


def unsqueeze(self, dim):
    a = self._a
    d = _wrap_dim(dim, a.ndim + 1)
    shape, st = a.shape, a.strides
    # torch's stride for the new dim is the size times stride of the dim it lands before (one element at the
    # end), and the other strides stay: NumPy's reshape / expand_dims would re-derive those of size-1 dims
    new = shape[d] * st[d] if d < a.ndim else a.itemsize
    return make_view(strided_view(a, shape[:d] + (1,) + shape[d:], st[:d] + (new,) + st[d:]), self)


def flatten(self, start_dim=0, end_dim=-1):
    a = self._a
    s, e = _wrap_dim(start_dim, a.ndim), _wrap_dim(end_dim, a.ndim)   # a 0-d tensor takes dims -1 and 0
    if a.ndim == 0:
        return reshape(self, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self  # nothing to merge: torch hands back the input itself
    shape = a.shape[:s] + (math.prod(a.shape[s:e + 1]),) + a.shape[e + 1:]
    return reshape(self, shape)


def unflatten(self, dim, sizes):
    a = self._a
    d = _wrap_dim(dim, a.ndim)
    sizes = _ints(sizes, "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if a.ndim == 0:   # torch's later dim wrap refuses a 0-d tensor
        raise RuntimeError("unflatten got an unexpected error:\nDimension specified as 0 but tensor has no "
                           "dimensions")
    known = [s for s in sizes if s != -1]
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    if (-1 not in sizes and math.prod(sizes) != a.shape[d]) or \
            (-1 in sizes and (math.prod(known) == 0 or a.shape[d] % math.prod(known))):
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                           f"({a.shape[d]}) in the input tensor")
    sizes = infer_size(sizes, a.shape[d])
    return view(self, a.shape[:d] + sizes + a.shape[d + 1:])


def narrow(self, dim, start, length):
    a = self._a
    if a.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:   # torch checks the length first
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, a.ndim)
    n = a.shape[d]
    start = int(start)
    if not (-n <= start <= n):
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    idx = (slice(None),) * d + (slice(start, start + length),)
    return make_view(a[idx], self)


def select(self, dim, index):
    a = self._a
    if a.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, a.ndim)
    n = a.shape[d]
    index = int(index)
    if not (-n <= index < n):
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(a.shape)} at "
                         f"dimension {d}")
    # the trailing Ellipsis keeps NumPy from turning a 0-d result into a scalar copy
    return make_view(a[(slice(None),) * d + (index, Ellipsis)], self)


def slice_(self, dim=0, start=None, end=None, step=1):
    a = self._a
    if a.ndim == 0:
        raise RuntimeError("slice() cannot be applied to a 0-dim tensor.")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = _wrap_dim(dim, a.ndim)
    return make_view(a[(slice(None),) * d + (slice(start, end, step),)], self)


def _typed_storage_array(self):
    """The whole storage as a 1-D array of ``self``'s dtype, plus the element offset of ``self``."""
    st = self._st_of()
    raw = st._bytes()
    isz = self._a.itemsize
    usable = raw[: (raw.size // isz) * isz]
    return usable.view(self._a.dtype), st


def as_strided(self, size, stride, storage_offset=None):
    size, stride = _ints(size), _ints(stride, "stride")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    base, st = _typed_storage_array(self)
    off = self.storage_offset() if storage_offset is None else int(storage_offset)
    if off < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {off}")
    isz = self._a.itemsize
    need = 0 if 0 in size else (off + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * isz
    if need > st.nbytes():
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, and "
                           f"itemsize {isz} requiring a storage size of {need} are out of bounds for storage of "
                           f"size {st.nbytes()}")
    r = strided_view(base[off:], size, tuple(s * isz for s in stride))
    return make_view(r, self)


def alias(self):
    return make_view(self._a.view(), self)


def detach(self):
    return make_alias(self._a.view(), self)


def contiguous(self, memory_format="contiguous_format"):
    if memory_format not in ("contiguous_format", 0, None, "preserve_format"):
        from ..core.c10.memory_format import to_memory_format
        return to_memory_format(self, memory_format)
    a = self._a
    if a.flags.c_contiguous:
        return self
    xp = namespace_of(a)
    return C.make(xp.ascontiguousarray(a), self._device)


def clone(self, memory_format=None):
    """A copy; preserve_format keeps the stride order of dense tensors, others become contiguous."""
    a = self._a
    xp = namespace_of(a)
    if memory_format in (None, "preserve_format"):
        if a.flags.c_contiguous:
            return C.make(a.copy(), self._device)
        perm = dense_permutation(a)
        if perm is None:   # not dense: the stride order torch's infer_dense_strides gives
            from ..core.c10.memory_format import dense_order
            perm = dense_order(a.shape, a.strides)
        r = a.transpose(perm).copy(order="C").transpose(tuple(int(i) for i in np.argsort(perm)))
        return C.make(r, self._device)
    if memory_format in ("contiguous_format", 0):
        return C.make(a.copy() if a.flags.c_contiguous else xp.ascontiguousarray(a), self._device)
    from ..core.c10.memory_format import is_contiguous_in, to_memory_format
    if is_contiguous_in(self, memory_format):
        return C.make(a.copy(order="K"), self._device)
    return to_memory_format(self, memory_format)


def diagonal(self, offset=0, dim1=0, dim2=1):
    a = self._a
    d1, d2 = _wrap_dim(dim1, a.ndim), _wrap_dim(dim2, a.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = a.shape[d1], a.shape[d2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        start = (0, offset)
    else:
        length = max(min(n1 + offset, n2), 0)
        start = (-offset, 0)
    rest = [i for i in range(a.ndim) if i not in (d1, d2)]
    shape = tuple(a.shape[i] for i in rest) + (length,)
    strides = tuple(a.strides[i] for i in rest) + (a.strides[d1] + a.strides[d2],)
    idx = [slice(None)] * a.ndim
    if length > 0:
        idx[d1] = slice(start[0], None)
        idx[d2] = slice(start[1], None)
    # np.diagonal is read-only; torch's diagonal is a writable view.
    return make_view(strided_view(a[tuple(idx)], shape, strides), self)


def dense_permutation(a):
    """The dimension order that makes ``a`` C-contiguous, if it is a permuted dense array."""
    if a.ndim < 2:
        return None
    order = sorted(range(a.ndim), key=lambda i: (-a.strides[i], -a.shape[i]))
    expected = a.itemsize
    for i in reversed(order):
        if a.shape[i] != 1 and a.strides[i] != expected:
            return None
        expected *= a.shape[i]
    return tuple(order)


def strided_view(a, shape, byte_strides):
    """A view of ``a``'s memory with ``shape`` and ``byte_strides`` (in bytes, from ``a``'s first element)."""
    if a.__class__ is _ndarray:
        if a.flags.c_contiguous:
            # the ndarray constructor over a's buffer is several times cheaper than as_strided; it refuses
            # strides that leave the buffer, which as_strided below allows
            try:
                return _ndarray(shape, a.dtype, a, 0, byte_strides)
            except (ValueError, TypeError):
                pass
        return _np_as_strided(a, shape=shape, strides=byte_strides)
    return namespace_of(a).lib.stride_tricks.as_strided(a, shape=shape, strides=byte_strides)


def unbind(self, dim=0):
    a = self._a
    if a.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, a.ndim)
    pre = (slice(None),) * d
    return [make_view(a[pre + (i, Ellipsis)], self) for i in range(a.shape[d])]


def split(self, split_size, dim=0):
    a = self._a
    if a.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    split_size = int(split_size)
    if split_size < 0:   # checked before the dim, as torch's
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    d = _wrap_dim(dim, a.ndim)
    n = a.shape[d]
    if split_size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    pre = (slice(None),) * d
    if n == 0:
        return [make_view(a, self)]
    return [make_view(a[pre + (slice(i, min(i + split_size, n)),)], self) for i in range(0, n, split_size)]


def split_with_sizes(self, split_sizes, dim=0):
    a = self._a
    if a.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _wrap_dim(dim, a.ndim)
    sizes = _ints(split_sizes, "split_sizes")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={list(sizes)}")
    if sum(sizes) != a.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {a.shape[d]} (input tensor's "
                           f"size at dimension {d}), but got split_sizes={list(sizes)}")
    pre = (slice(None),) * d
    out, i = [], 0
    for s in sizes:
        out.append(make_view(a[pre + (slice(i, i + s),)], self))
        i += s
    return out


def chunk(self, chunks, dim=0):
    a = self._a
    if a.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, a.ndim)
    n = a.shape[d]
    size = (n + chunks - 1) // chunks
    if size == 0:   # an empty dim: torch gives `chunks` empty views
        return [make_view(a, self) for _ in range(chunks)] if n == 0 else []
    return split(self, size, d)
