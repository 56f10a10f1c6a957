"""addcmul / addcdiv: ``self + value * tensor1 (* or /) tensor2`` in one pass, with torch's promotion."""
from __future__ import annotations

import numpy as np

from ..core.c10 import dtype as D
from ..core.tensor import Tensor
from ..kernels import elementwise as K
from ..kernels import parallel as P
from . import common as C


_ADDCDIV_INTEGER = (
    "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true "
    "division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * "
    "npusim.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
    "for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / "
    "tensor2), for all dtypes.")


def _addc(self, tensor1, tensor2, value, divide):
    """(result array, result dtype, device) of self + value * tensor1 (* or /) tensor2."""
    if divide and not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError(_ADDCDIV_INTEGER)
    dev = C.common_device(self, tensor1, tensor2)
    C.check_devices(dev, self, tensor1, tensor2)
    dt = C.result_type(self, tensor1, tensor2)
    C.broadcast_shapes(self._a.shape, tensor1._a.shape, tensor2._a.shape)
    cd = D.float32 if dt in (D.float16, D.bfloat16) else dt   # 16-bit floats compute in float32
    v = C.checked_scalar(value, cd.np)
    a, b, c = (C.array_operand(t, cd.np, dev) for t in (self, tensor1, tensor2))
    r = K.addc(a, b, c, v, divide)   # large arrays of one shape: the three passes per cache-sized piece
    if r is not None:
        return (r if cd is dt else r.astype(dt.np)), dt, dev
    # the product (into the offered out= array when it has the result's shape), then the scaling and the sum
    # in place: no temporaries, each pass split over the intra-op threads; the same ufuncs and operand order
    r = P.binary(np.true_divide if divide else np.multiply, b, c)
    own = r.__class__ is np.ndarray and r.dtype == cd.np and r.shape == np.broadcast_shapes(a.shape, r.shape)
    if v != 1:
        r = P.binary(np.multiply, r, v, r) if own else np.multiply(r, v)
    r = P.binary(np.add, a, r, r) if own else np.add(a, r)
    return (r if cd is dt else r.astype(dt.np)), dt, dev


def addcmul(self, tensor1, tensor2, *, value=1):
    r, _, dev = _addc(self, tensor1, tensor2, value, False)
    return C.wrap(r, dev)


def _addc_into_self(self, tensor1, tensor2, value, divide) -> bool:
    """The in-place op's blocks computed straight into self's array (K.addc with the functional op's ufuncs and
    operand order) for float32/float64 tensors of one dtype, shape and device; False when they do not fit."""
    a = self._a
    if not (a.__class__ is np.ndarray and a.flags.writeable and isinstance(tensor1, Tensor)
            and isinstance(tensor2, Tensor) and tensor1._device is self._device and tensor2._device is self._device
            and tensor1._a.dtype == a.dtype and tensor2._a.dtype == a.dtype):
        return False
    if K.addc(a, tensor1._a, tensor2._a, C.checked_scalar(value, a.dtype), divide, into=a) is None:
        return False
    self._bump_version()
    return True


def addcmul_(self, tensor1, tensor2, *, value=1):
    if _addc_into_self(self, tensor1, tensor2, value, False):
        return self
    r, dt, _ = _addc(self, tensor1, tensor2, value, False)
    return C.finish_inplace(self, r, dt)


def addcmul_out(self, tensor1, tensor2, *, value=1, out=None):
    r, dt, dev = _addc(self, tensor1, tensor2, value, False)
    return C.finish_out(out, r, dt, dev)


def addcdiv(self, tensor1, tensor2, *, value=1):
    r, _, dev = _addc(self, tensor1, tensor2, value, True)
    return C.wrap(r, dev)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    if _addc_into_self(self, tensor1, tensor2, value, True):
        return self
    r, dt, _ = _addc(self, tensor1, tensor2, value, True)
    return C.finish_inplace(self, r, dt)


def addcdiv_out(self, tensor1, tensor2, *, value=1, out=None):
    r, dt, dev = _addc(self, tensor1, tensor2, value, True)
    return C.finish_out(out, r, dt, dev)


KERNELS = {"addcmul": addcmul, "addcmul_": addcmul_, "addcmul.out": addcmul_out, "addcdiv": addcdiv,
           "addcdiv_": addcdiv_, "addcdiv.out": addcdiv_out}
