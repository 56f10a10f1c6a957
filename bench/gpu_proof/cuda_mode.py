"""npusim, imported and confirmed to run its npu in cuda mode (CuPy on a GPU or on the stand-in)."""
from __future__ import annotations

from .results import expect


def load_npusim():
    import npusim
    mode = npusim.npu.runtime_mode()
    expect(mode == "cuda", f"npusim runs the npu in {mode} mode here, not cuda")
    npusim.npu.init()
    return npusim


def torch_cuda():
    """torch when it is importable and has a usable CUDA device, else (None, why not)."""
    try:
        import torch
    except ImportError as e:
        return None, f"torch cannot be imported ({e})"
    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} has no usable CUDA device"
    return torch, ""
