"""``npusim.hash_tensor`` and ``Tensor.hash_tensor``: torch's XOR hash of a tensor's elements, as uint64."""
from __future__ import annotations

from ..core.dispatch.ops_namespace import aten
from ..core.tensor import Tensor
from .operators import _check_input

__all__ = ["hash_tensor"]

_hash, _hash_out = aten.hash_tensor.default, aten.hash_tensor.out


def hash_tensor(input, dim=(), *, keepdim=False, mode=0, out=None):
    """The hash of ``input``'s elements (of each row along ``dim``, reduced over every dim in a list), as uint64.

    mode 0, the only one torch has, upcasts the elements to float64 (floating dtypes) or int64 (bool and
    integers), reads their bits as uint64 and reduces them by XOR: equal tensors of one dtype hash equally and the
    values equal torch's."""
    _check_input(input, "hash_tensor")
    if dim.__class__ is int and not -2 ** 63 <= dim < 2 ** 63:   # torch's parser reads one int as int64
        raise ValueError("Overflow when unpacking long long")
    dims = [] if dim is None else (list(dim) if isinstance(dim, (list, tuple)) else [dim])
    if out is None:
        return _hash(input, dims, keepdim=keepdim, mode=mode)
    return _hash_out(input, dims, keepdim=keepdim, mode=mode, out=out)


def _hash_tensor_method(self, dim=(), *, keepdim=False, mode=0):
    return hash_tensor(self, dim, keepdim=keepdim, mode=mode)


_hash_tensor_method.__name__ = _hash_tensor_method.__qualname__ = "hash_tensor"
_hash_tensor_method.__doc__ = "See :func:`npusim.hash_tensor`."
Tensor.hash_tensor = _hash_tensor_method
