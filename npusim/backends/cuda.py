"""torch.backends.cuda: the matmul precision switches and the scaled-dot-product-attention backend choice.

All are stored and read back. npusim's attention has one implementation (the math one), whichever backends
are enabled; its GPU matmuls use cuBLAS's defaults (no TF32 unless CuPy is told so with CUPY_TF32=1).
``is_built()`` is true when a device map makes "cuda" mean an npusim device
(``python -m npusim run --device-map cuda=npu``).
"""
from __future__ import annotations

import contextlib
import warnings

_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}
_LINALG_LIBRARIES = ("default", "cusolver", "magma")
_BLAS_LIBRARIES = ("cublas", "cublaslt", "ck")
_preferred = {"linalg": "default", "blas": "cublas"}


def is_built() -> bool:
    """Whether "cuda" devices exist here: only when a device map makes them mean an npusim device."""
    from ..core.c10.device import mapped_device_types
    return "cuda" in mapped_device_types()


class _Matmul:
    """torch.backends.cuda.matmul: precision switches for float32/float16/bfloat16 matmuls (stored)."""

    _NAMES = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
              "allow_fp16_accumulation", "fp32_precision")

    def __init__(self):
        object.__setattr__(self, "_values", {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                                             "allow_bf16_reduced_precision_reduction": True,
                                             "allow_fp16_accumulation": False, "fp32_precision": "none"})

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name, value):
        if name not in self._NAMES:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = _Matmul()


def _switch(name):
    def enabled() -> bool:
        return _SDP[name]

    def enable(enabled: bool) -> None:
        _SDP[name] = bool(enabled)
    enabled.__name__, enable.__name__ = f"{name}_sdp_enabled", f"enable_{name}_sdp"
    enabled.__doc__ = f"Whether the {name} attention backend is enabled (stored; npusim has only the math one)."
    enable.__doc__ = f"Enable or disable the {name} attention backend (stored; npusim has only the math one)."
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _switch("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _switch("mem_efficient")
math_sdp_enabled, enable_math_sdp = _switch("math")
cudnn_sdp_enabled, enable_cudnn_sdp = _switch("cudnn")


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True, enable_mem_efficient: bool = True,
               enable_cudnn: bool = True):
    """Deprecated in torch for ``torch.nn.attention.sdpa_kernel``; sets the stored switches for a block."""
    warnings.warn("`torch.backends.cuda.sdp_kernel()` is deprecated. In the future, this context manager will "
                  "be removed. Please see `torch.nn.attention.sdpa_kernel()` for the new context manager, with "
                  "updated signature.", FutureWarning, stacklevel=3)
    old = dict(_SDP)
    _SDP.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient),
                cudnn=bool(enable_cudnn))
    try:
        yield {}
    finally:
        _SDP.update(old)


def _prefer(kind: str, choices: tuple, backend):
    if backend is not None:
        if not isinstance(backend, str) or backend.lower() not in choices:
            raise RuntimeError(f"Unknown input value. Choose from: {', '.join(choices)}.")
        _preferred[kind] = backend.lower()
    return _preferred[kind]


def preferred_linalg_library(backend=None) -> str:
    """The linear-algebra library to prefer ("default", "cusolver", "magma"): stored and returned."""
    return _prefer("linalg", _LINALG_LIBRARIES, backend)


def preferred_blas_library(backend=None) -> str:
    """The BLAS library to prefer ("cublas", "cublaslt", "ck"): stored and returned."""
    return _prefer("blas", _BLAS_LIBRARIES, backend)


# attention-backend questions and BLAS/FFT workspaces (modules of their own; they read the switches above)
from .cuda_attention import (  # noqa: E402,F401
    SDPAParams, SDPBackend, allow_fp16_bf16_reduction_math_sdp, can_use_cudnn_attention, can_use_efficient_attention,
    can_use_flash_attention, fp16_bf16_reduction_math_sdp_allowed, is_flash_attention_available,
)
from .cuda_workspace import (  # noqa: E402,F401
    blas_workspace_size, cublas_workspace_size, cublaslt_workspace_size, cufft_plan_cache,
)
