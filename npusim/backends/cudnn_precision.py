"""torch.backends.cudnn's precision and kernel switches: ``fp32_precision``, ``conv.fp32_precision``,
``depthwise_kernel``, ``set_flags``, and ``CUDNN_TENSOR_DTYPES``.

Stored and read back like the other cuDNN switches (npusim runs no cuDNN), with torch's defaults and torch's
checks on the values: an assignment of an unknown precision or kernel mode raises as in torch.
"""
from __future__ import annotations

import types

from ..core.c10 import dtype as D

CUDNN_TENSOR_DTYPES = {D.float16, D.float32, D.float64}
_PRECISIONS = ("ieee", "tf32", "none")
_DEPTHWISE_KERNELS = ("auto", "cudnn", "native")


def _check_precision(value) -> str:
    if value == "bf16":
        raise RuntimeError("backend 'cuda' does not support precision 'bf16'")
    if value not in _PRECISIONS:
        raise RuntimeError(f"Unknown precision: {value}")
    return value


def _check_depthwise_kernel(value) -> str:
    if value not in _DEPTHWISE_KERNELS:
        raise RuntimeError(f"Unknown cuDNN depthwise kernel mode: {value}. Expected one of: "
                           f"{', '.join(_DEPTHWISE_KERNELS)}")
    return value


class _FP32Precision:
    """``cudnn.conv``: the float32 precision of one kind of cuDNN op (``.fp32_precision``)."""

    def __init__(self, backend: str, op: str, value: str):
        object.__setattr__(self, "backend", backend)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "_value", value)

    def __setattr__(self, name, value):
        if name == "fp32_precision":
            object.__setattr__(self, "_value", _check_precision(value))
        elif name in ("backend", "op"):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError("Unknown attribute " + name)

    def __getattr__(self, name):
        if name == "fp32_precision":
            return object.__getattribute__(self, "_value")
        raise AttributeError("Unknown attribute " + name)


conv = _FP32Precision("cuda", "conv", "tf32")


class _CudnnModule(types.ModuleType):
    """The cudnn module's class: its checked switches are properties, the rest plain attributes."""

    @property
    def fp32_precision(self) -> str:
        return self.__dict__["_fp32_precision"]

    @fp32_precision.setter
    def fp32_precision(self, value):
        self.__dict__["_fp32_precision"] = _check_precision(value)

    @property
    def depthwise_kernel(self) -> str:
        return self.__dict__["_depthwise_kernel"]

    @depthwise_kernel.setter
    def depthwise_kernel(self, value):
        self.__dict__["_depthwise_kernel"] = _check_depthwise_kernel(value)


def install_checked_switches(module) -> None:
    """Give the cudnn module its checked switches, at torch's defaults."""
    module.__class__ = _CudnnModule
    module.__dict__["_fp32_precision"] = "none"
    module.__dict__["_depthwise_kernel"] = "auto"


def set_flags(_enabled=None, _benchmark=None, _benchmark_limit=None, _deterministic=None, _allow_tf32=None,
              _fp32_precision="none", _depthwise_kernel=None):
    """Set the given switches now (``None`` leaves one as it is); returns the old values, in this order."""
    from . import cudnn
    orig_flags = (cudnn.enabled, cudnn.benchmark, None if not cudnn.is_available() else cudnn.benchmark_limit,
                  cudnn.deterministic, cudnn.allow_tf32, cudnn.fp32_precision, cudnn.depthwise_kernel)
    if _enabled is not None:
        cudnn.enabled = _enabled
    if _benchmark is not None:
        cudnn.benchmark = _benchmark
    if _benchmark_limit is not None and cudnn.is_available():
        cudnn.benchmark_limit = _benchmark_limit
    if _deterministic is not None:
        cudnn.deterministic = _deterministic
    if _allow_tf32 is not None:
        cudnn.allow_tf32 = _allow_tf32
    if _fp32_precision is not None:
        cudnn.fp32_precision = _fp32_precision
    if _depthwise_kernel is not None:
        cudnn.depthwise_kernel = _depthwise_kernel
    return orig_flags


__all__ = ["CUDNN_TENSOR_DTYPES", "conv", "set_flags"]
