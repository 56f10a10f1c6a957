"""CuPy specialisations of a few hot npu ops, used only when the npu runs on a GPU.

The generic kernels (written once against the array namespace) already run on
CuPy arrays; these replace a handful where one fused GPU pass beats a chain of
array calls: ``add`` with ``alpha`` (x + alpha*y without a temporary),
``sigmoid``, ``gelu`` (exact and tanh) and the 2-norm of a whole tensor (one
reduction of squares). Each kernel is declared in a few lines through
``npusim.kernels.cuda_registry`` (which the compile check walks), built once
when the runtime starts in cuda mode (CuPy compiles on first use and caches
the binary), and takes only the plain case: float16/32/64 C-contiguous inputs
on one device; anything else goes to the generic kernel, which owns type
promotion and errors.

``HotKernels`` registers the generic kernels of these overloads on a library
of their own at import, and swaps in the CuPy versions when the runtime
initialises in cuda mode; in emulation nothing changes and nothing is paid.
"""
from __future__ import annotations

import math

from .. import Tensor
from ..kernels import cuda_registry as cuda
from ..library import Library
from ..privateuse1 import array_of, device_of, from_array
from . import op_table

# the overloads with a CuPy specialisation, as the op table declares them: add.Tensor, sigmoid, gelu,
# linalg_vector_norm
HOT_OPS = op_table.HOT_OPS

# float16 and float32 compute in float, float64 in double (torch's opmath types)
_PREAMBLE = """
template <typename T> struct npusim_opmath { typedef float type; };
template <> struct npusim_opmath<double> { typedef double type; };
"""
_FLOATS = ("float16", "float32", "float64")
# alpha has a fixed type: CuPy binds a placeholder only from array arguments. It travels as a double and the
# kernel narrows it to the opmath type, as torch converts alpha to opmath_t.
_ALPHA = cuda.numpy_scalar("float64")

ADD_ALPHA = cuda.elementwise(
    "npusim_add_alpha", "T x, T y, float64 alpha", "T z",
    "typedef typename npusim_opmath<T>::type A; z = (T)((A)x + (A)alpha * (A)y);",
    preamble=_PREAMBLE, dtypes=_FLOATS, calls=[(cuda.ARRAY, cuda.ARRAY, _ALPHA)])
SIGMOID = cuda.elementwise(
    "npusim_sigmoid", "T x", "T y",
    "typedef typename npusim_opmath<T>::type A; y = (T)(A(1) / (A(1) + exp(-(A)x)));",
    preamble=_PREAMBLE, dtypes=_FLOATS, calls=[(cuda.ARRAY,)])
GELU = cuda.elementwise(
    "npusim_gelu", "T x", "T y",
    "typedef typename npusim_opmath<T>::type A; A v = (A)x; "
    f"y = (T)(A(0.5) * v * (A(1) + erf(v * A({math.sqrt(0.5)!r}))));",
    preamble=_PREAMBLE, dtypes=_FLOATS, calls=[(cuda.ARRAY,)])
GELU_TANH = cuda.elementwise(
    "npusim_gelu_tanh", "T x", "T y",
    "typedef typename npusim_opmath<T>::type A; A v = (A)x; "
    f"A inner = A({math.sqrt(2.0 / math.pi)!r}) * (v + A(0.044715) * v * v * v); "
    "y = (T)(A(0.5) * v * (A(1) + tanh(inner)));",
    preamble=_PREAMBLE, dtypes=_FLOATS, calls=[(cuda.ARRAY,)])
# float32/float64 only: CuPy accumulates in the input type
L2NORM = cuda.reduction("npusim_l2norm", "T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                        dtypes=("float32", "float64"), calls=[(cuda.ARRAY,)])


def _plain(a) -> bool:
    return a.dtype.name in _FLOATS and a.flags.c_contiguous


class _Built:
    """The CuPy kernels of the declarations above."""

    def __init__(self, cupy):
        self.add_alpha = cuda.build(ADD_ALPHA, cupy)
        self.sigmoid = cuda.build(SIGMOID, cupy)
        self.gelu = cuda.build(GELU, cupy)
        self.gelu_tanh = cuda.build(GELU_TANH, cupy)
        self.l2norm = cuda.build(L2NORM, cupy)


def specialised(generic: dict, cupy) -> dict:
    """CuPy versions of HOT_OPS that fall back to ``generic[name]`` outside their plain case."""
    k = _Built(cupy)
    g_add, g_sigmoid = generic["add.Tensor"], generic["sigmoid"]
    g_gelu, g_norm = generic["gelu"], generic["linalg_vector_norm"]

    def add(self, other, alpha=1):
        if (alpha.__class__ in (int, float) and alpha != 1 and self.__class__ is Tensor
                and other.__class__ is Tensor and (dev := device_of(self)) is device_of(other)):
            a, b = array_of(self), array_of(other)
            if a.dtype == b.dtype and _plain(a) and _plain(b) and a.shape == b.shape:
                return from_array(k.add_alpha(a, b, cupy.float64(alpha)), dev)
        return g_add(self, other, alpha)

    def sigmoid(self):
        a = array_of(self)
        if _plain(a):
            return from_array(k.sigmoid(a), device_of(self))
        return g_sigmoid(self)

    def gelu(self, *, approximate="none"):
        a = array_of(self)
        if _plain(a) and approximate in ("none", "tanh"):
            fn = k.gelu if approximate == "none" else k.gelu_tanh
            return from_array(fn(a), device_of(self))
        return g_gelu(self, approximate=approximate)

    def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None):
        a = array_of(self)
        if (ord.__class__ in (int, float) and ord == 2 and dim is None and not keepdim and dtype is None
                and a.dtype.name in ("float32", "float64") and a.flags.c_contiguous and a.size):
            return from_array(k.l2norm(a), device_of(self))
        return g_norm(self, ord, dim, keepdim, dtype=dtype)

    return {"add.Tensor": add, "sigmoid": sigmoid, "gelu": gelu, "linalg_vector_norm": linalg_vector_norm}


class HotKernels:
    """The npu kernels of HOT_OPS: generic ones at import, CuPy ones once the runtime starts on a GPU."""

    def __init__(self, generic: dict):
        self.generic = {name: generic[name] for name in HOT_OPS}
        self.active = self.generic
        self._lib = self._register(self.generic)

    @staticmethod
    def _register(kernels: dict) -> Library:
        lib = Library("aten", "IMPL")
        for name, fn in kernels.items():
            lib.impl(name, fn, "PrivateUse1")
        return lib

    def on_runtime_init(self, runtime) -> None:
        if runtime.mode != "cuda" or self.active is not self.generic:
            return
        import cupy
        kernels = specialised(self.generic, cupy)
        self._lib._destroy()    # no override warning: the generic registrations are gone first
        self._lib = self._register(kernels)
        self.active = kernels
