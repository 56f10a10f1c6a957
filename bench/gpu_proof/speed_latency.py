"""Small-op latency on the npu against torch on CUDA: a 2x2 add, and forward+backward of a small MLP.

These sizes measure the framework's overhead per op (dispatch, checks, the kernel
launch), not the GPU. Figures are microseconds per call; the ratio is npusim's time
over torch's (lower is better). There is no pass bar: the row fails only if the work fails.
"""
from __future__ import annotations

from .results import PASS, SKIP, Result
from .speed_common import batch_s, prepare, rounds
from .timing import median_seconds_per_call

HIDDEN, BATCH = 64, 16


def _mlp_step(lib, device, generator_seed=0):
    """forward + backward of Linear-ReLU-Linear on a fixed batch, as a closure (the same for npusim and torch)."""
    lib.manual_seed(generator_seed)
    model = lib.nn.Sequential(lib.nn.Linear(HIDDEN, HIDDEN), lib.nn.ReLU(), lib.nn.Linear(HIDDEN, 1)).to(device)
    x = lib.randn(BATCH, HIDDEN).to(device)

    def step():
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()
    return step


def run(ctx) -> Result:
    s = prepare(ctx)
    npusim, torch = s.npusim, s.torch
    x, y = npusim.ones(2, 2, device="npu"), npusim.ones(2, 2, device="npu")
    add = {"npusim": (lambda: x + y, s.npu_sync)}
    mlp = {"npusim": (_mlp_step(npusim, "npu"), s.npu_sync)}
    if torch is not None:
        tx, ty = torch.ones(2, 2, device=s.torch_device), torch.ones(2, 2, device=s.torch_device)
        add["torch"] = (lambda: tx + ty, s.torch_sync)
        mlp["torch"] = (_mlp_step(torch, s.torch_device), s.torch_sync)
    details = {}
    for label, contenders in (("add 2x2", add), ("mlp forward+backward", mlp)):
        seconds = median_seconds_per_call(contenders, rounds(ctx), batch_s(ctx))
        row = {"us_per_call": {k: t * 1e6 for k, t in seconds.items()}}
        if "torch" in seconds:
            row["npusim_over_torch"] = seconds["npusim"] / seconds["torch"]
        details[label] = row
    figure = ", ".join(f"{label} {row['us_per_call']['npusim']:.0f} us" for label, row in details.items())
    if torch is None:
        return Result("speed_small_latency", SKIP, figure=figure, note=f"no torch reference: {s.why_no_torch}",
                      details=details)
    note = ", ".join(f"{label} {row['npusim_over_torch']:.1f}x torch ({row['us_per_call']['torch']:.0f} us)"
                     for label, row in details.items())
    return Result("speed_small_latency", PASS, figure=figure, note=note, details=details)
