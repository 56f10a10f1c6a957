"""hash_tensor: the XOR of a tensor's elements widened to 64 bits, as uint64 (ATen's xor_sum, its only mode)."""
from __future__ import annotations

from ..core.c10 import dtype as D
from ..core.c10 import limited_dtypes as L
from ..kernels import hash_tensor as H
from . import common as C
from .reductions import _amax_like


# the dtypes ATen's xor_sum kernel has: bool, the signed integers and uint8, the four floating dtypes
_HASHABLE = frozenset(d.np for d in (D.bool, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.bfloat16,
                                     D.float32, D.float64))


def _hashed(self, dim, keepdim, mode):
    if self._a.dtype not in _HASHABLE:
        raise NotImplementedError(f"\"xor_sum_{self._device.type}\" not implemented for '{C.tname(self._a.dtype)}'")
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    # amax's checks of the dims (empty input, repeated or out-of-range dims: torch's messages), then the XOR
    return _amax_like(self, dim, keepdim, "hash_tensor", _xor_hash)


def _xor_hash(a, axes, keepdim):
    axes = tuple(range(a.ndim)) if axes is None else tuple(sorted(axes))
    return H.xor_reduce(H.widened_bits(a), axes, keepdim)


def hash_tensor(self, dim=(), *, keepdim=False, mode=0):
    return C.wrap(_hashed(self, dim, keepdim, mode), self._device)


def hash_tensor_out(self, dim=(), *, keepdim=False, mode=0, out=None):
    r = _hashed(self, dim, keepdim, mode)
    C.prepare_out(out, r.shape, L.uint64, self._device)
    return C.write_out(out, r)


KERNELS = {"hash_tensor": hash_tensor, "hash_tensor.out": hash_tensor_out}
