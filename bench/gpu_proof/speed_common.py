"""What every speed check shares: no timing on the stand-in, torch on CUDA as the reference."""
from __future__ import annotations

from dataclasses import dataclass

from .cuda_mode import load_npusim, torch_cuda
from .results import STANDIN_NOTE, Skip


@dataclass
class Sides:
    npusim: object
    npu_sync: object
    torch: object           # None when there is no torch reference
    torch_device: str
    torch_sync: object
    why_no_torch: str


def prepare(ctx) -> Sides:
    """npusim and the torch reference; raises Skip on the stand-in unless asked to time it."""
    if ctx.standin and not ctx.time_standin:
        raise Skip(STANDIN_NOTE)
    npusim = load_npusim()
    npusim.npu.set_fallback_mode("silent")
    if ctx.standin:     # exercising the code only: torch on the cpu stands in for torch on CUDA
        try:
            import torch
        except ImportError as e:
            return Sides(npusim, npusim.npu.synchronize, None, "", None, f"torch cannot be imported ({e})")
        return Sides(npusim, npusim.npu.synchronize, torch, "cpu", lambda: None, "")
    torch, why = torch_cuda()
    if torch is None:
        return Sides(npusim, npusim.npu.synchronize, None, "", None, why)
    return Sides(npusim, npusim.npu.synchronize, torch, "cuda", torch.cuda.synchronize, "")


def rounds(ctx) -> int:
    return ctx.size(7, 3, 2)


def batch_s(ctx) -> float:
    return ctx.size(0.25, 0.1, 0.01)
