"""Every kernel npusim compiles from CUDA source, declared in one place.

A module that hands CuPy CUDA source declares each kernel at import time with
``elementwise``, ``reduction`` or ``raw`` and builds it with ``build``; nothing
else in npusim constructs a CuPy kernel (a test scans the package for that).
Besides the source, a declaration records what a compile check needs to stand
in for a GPU: the dtypes the kernel's type placeholders take at run time and,
for each distinct call, the kinds of the arguments its caller passes. With
those the check runs CuPy's own type resolution and code generation and
compiles the result with NVRTC, on a machine without a GPU.

Argument kinds (one string per argument, in call order):

- ``ARRAY``: an ndarray of the dtype the kernel runs with (one of ``dtypes``);
- ``array_of("uint64")``: an ndarray of that fixed dtype;
- ``numpy_scalar("float64")``: a NumPy scalar of that type;
- ``PY_FLOAT``, ``PY_INT``, ``PY_BOOL``: a Python scalar.

CuPy binds a type placeholder (``T``) only from ndarray arguments: a
placeholder that only a scalar argument carries fails at the first call
(CuPy issue 2091), which is why the kinds are part of the declaration.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ARRAY = "array"
PY_FLOAT, PY_INT, PY_BOOL = "float", "int", "bool"

KINDS = ("elementwise", "reduction", "raw")


def array_of(dtype: str) -> str:
    return f"array[{np.dtype(dtype).name}]"


def numpy_scalar(dtype: str) -> str:
    return f"numpy.{np.dtype(dtype).name}"


@dataclass(frozen=True)
class CudaKernel:
    """One CUDA-source kernel: what CuPy's constructor takes, and how npusim calls it."""

    kind: str                   # "elementwise", "reduction" or "raw": which CuPy class compiles it
    name: str                   # the kernel's entry point in the CUDA source
    in_params: str = ""         # CuPy parameter lists ("T x, float64 alpha"); empty for raw kernels
    out_params: str = ""
    operation: str = ""         # elementwise: the loop body
    map_expr: str = ""          # reduction: map, reduce and post-map expressions and the identity
    reduce_expr: str = ""
    post_map_expr: str = ""
    identity: str = ""
    reduce_type: str | None = None
    code: str = ""              # raw: the whole CUDA source
    preamble: str = ""
    options: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()                # the dtypes ``ARRAY`` arguments take at run time
    calls: tuple[tuple[str, ...], ...] = ()     # the argument kinds of each distinct call

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kernel kind {self.kind!r}")
        if not self.calls:
            raise ValueError(f"{self.name}: declare the argument kinds of at least one call")
        for call in self.calls:
            for kind in call:
                _check_kind(self.name, kind)
            if ARRAY in call and not self.dtypes:
                raise ValueError(f"{self.name}: an {ARRAY!r} argument needs the kernel's dtypes")


def _check_kind(name: str, kind: str) -> None:
    if kind in (ARRAY, PY_FLOAT, PY_INT, PY_BOOL):
        return
    if kind.startswith("array[") and kind.endswith("]"):
        np.dtype(kind[6:-1])
        return
    if kind.startswith("numpy."):
        np.dtype(kind[6:])
        return
    raise ValueError(f"{name}: unknown argument kind {kind!r}")


KERNELS: dict[str, CudaKernel] = {}


def _declare(kernel: CudaKernel) -> CudaKernel:
    known = KERNELS.setdefault(kernel.name, kernel)
    if known != kernel:     # a reload declares the same kernel again; a second kernel may not take its name
        raise ValueError(f"two different CUDA kernels are declared as {kernel.name!r}")
    return kernel


def _calls(calls) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(call) for call in calls)


def elementwise(name: str, in_params: str, out_params: str, operation: str, *, preamble: str = "",
                options=(), dtypes, calls) -> CudaKernel:
    """A ``cupy.ElementwiseKernel``."""
    return _declare(CudaKernel("elementwise", name, in_params, out_params, operation=operation, preamble=preamble,
                               options=tuple(options), dtypes=tuple(dtypes), calls=_calls(calls)))


def reduction(name: str, in_params: str, out_params: str, map_expr: str, reduce_expr: str, post_map_expr: str,
              identity: str, *, reduce_type: str | None = None, preamble: str = "", options=(), dtypes,
              calls) -> CudaKernel:
    """A ``cupy.ReductionKernel``."""
    return _declare(CudaKernel("reduction", name, in_params, out_params, map_expr=map_expr, reduce_expr=reduce_expr,
                               post_map_expr=post_map_expr, identity=identity, reduce_type=reduce_type,
                               preamble=preamble, options=tuple(options), dtypes=tuple(dtypes),
                               calls=_calls(calls)))


def raw(name: str, code: str, *, options=(), calls) -> CudaKernel:
    """A ``cupy.RawKernel``: ``name`` is an ``extern "C" __global__`` function of ``code``."""
    return _declare(CudaKernel("raw", name, code=code, options=tuple(options), calls=_calls(calls)))


def _set(**kwargs) -> dict:
    # only what a declaration sets: CuPy's defaults stay CuPy's
    return {k: v for k, v in kwargs.items() if v}


def build(kernel: CudaKernel, cupy):
    """The CuPy kernel object of ``kernel`` (CuPy compiles it at its first call)."""
    if kernel.kind == "elementwise":
        return cupy.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation, kernel.name,
                                      **_set(preamble=kernel.preamble, options=kernel.options))
    if kernel.kind == "reduction":
        return cupy.ReductionKernel(kernel.in_params, kernel.out_params, kernel.map_expr, kernel.reduce_expr,
                                    kernel.post_map_expr, kernel.identity, kernel.name,
                                    **_set(reduce_type=kernel.reduce_type, preamble=kernel.preamble,
                                           options=kernel.options))
    return cupy.RawKernel(kernel.code, kernel.name, **_set(options=kernel.options))
